#!/bin/sh
# SPDX-License-Identifier: MIT
# consumer_install: install the build tree into a scratch prefix, then build
# and run tests/consumer/main.c, and adapter_<c>.c for each event-loop
# adapter the build has, against that install, the two ways a user would:
#   1. a CMake project: find_package(rota CONFIG REQUIRED COMPONENTS uv ...)
#      + rota::rota and rota::uv, ... (and the _static targets when the
#      install has them);
#   2. a plain compiler line: cc main.c $(pkg-config --cflags --libs rota),
#      cc adapter_uv.c $(pkg-config --cflags --libs rota-uv), ...
# Only the install is visible to either, so a header missing from install(),
# a wrong include path in the exported targets or a broken .pc file fails
# here instead of on a user's machine.  With ROTA_CONSUMER_DEBUG=ON in the
# environment it does the same for the debug library (debug_main.c against
# rota::rota_debug, rota::rota_debug_static and rota-debug.pc), which must
# report a misuse.  Then it asks the package for a
# component it does not have and for one removed from the install, and
# checks both fail with a message that says why.
#
# Usage (CTest passes these): run.sh CMAKE BUILD_DIR CONFIG CC [INSTRUMENTED]
# INSTRUMENTED, when given, names the sanitizer/fuzzer option of the build:
# such libraries need their runtime linked into every consumer, so the test
# exits 77, which CTest reports as skipped.  ROTA_ADAPTERS in the
# environment lists the adapter components built ("uv ev event uring sdevent");
# ROTA_CONSUMER_CFLAGS (the build's CMAKE_C_FLAGS, say -m32) is passed to
# every consumer build: a library links only into code of the same ABI.
set -eu

cmake=$1
build=$2
config=${3-}
cc=${4:-cc}
instrumented=${5-}
adapters=${ROTA_ADAPTERS-}
cflags=${ROTA_CONSUMER_CFLAGS-}
here=$(cd "$(dirname "$0")" && pwd)

if [ -n "$instrumented" ]; then
    echo "consumer_install: skipped: instrumented build ($instrumented)"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rota-consumer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
prefix=$tmp/prefix

echo "consumer_install: installing $build into $prefix"
if [ -n "$config" ]; then
    "$cmake" --install "$build" --prefix "$prefix" --config "$config" >"$tmp/install.log"
else
    "$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log"
fi

# --- 1. CMake package --------------------------------------------------------
# The package registry is off so nothing but CMAKE_PREFIX_PATH can supply
# rota; rota_DIR is checked afterwards to be sure the scratch install was used.
echo "consumer_install: find_package(rota) build"
"$cmake" -S "$here" -B "$tmp/cmake-build" \
    -DCMAKE_C_COMPILER="$cc" \
    -DCMAKE_C_FLAGS="$cflags" \
    -DCMAKE_BUILD_TYPE="${config:-Release}" \
    -DCMAKE_PREFIX_PATH="$prefix" \
    -DROTA_CONSUMER_COMPONENTS="$(echo $adapters | tr ' ' ';')" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$tmp/configure.log" ||
    { cat "$tmp/configure.log"; exit 1; }
rota_dir=$(sed -n 's/^rota_DIR:[A-Z]*=//p' "$tmp/cmake-build/CMakeCache.txt")
case $rota_dir in
"$prefix"/*) ;;
*)
    echo "consumer_install: found rota in '$rota_dir', not in the scratch prefix"
    exit 1
    ;;
esac
"$cmake" --build "$tmp/cmake-build" ${config:+--config "$config"} >"$tmp/build.log" ||
    { cat "$tmp/build.log"; exit 1; }
exes="consumer consumer_static"
# The debug library (ROTA_CONSUMER_DEBUG=ON: the build has it), shared and
# static: a program linked to it reports a misuse (debug_main.c).
if [ "${ROTA_CONSUMER_DEBUG-OFF}" = ON ]; then
    exes="$exes consumer_debug consumer_debug_static"
fi
for comp in $adapters; do
    exes="$exes consumer_$comp consumer_${comp}_static"
done
for exe in $exes; do
    # Multi-config generators put the binary in a per-config folder.
    path=$(find "$tmp/cmake-build" -type f -name "$exe" | head -n 1)
    if [ -z "$path" ]; then
        case $exe in *_static) continue ;; esac
        echo "consumer_install: $exe was not built"
        exit 1
    fi
    # No LD_LIBRARY_PATH: CMake's build RPATH must find librota.so by itself.
    "$path"
done

# --- 2. pkg-config -----------------------------------------------------------
if ! command -v pkg-config >/dev/null 2>&1; then
    echo "consumer_install: skipped the pkg-config half: no pkg-config"
    exit 77
fi
pcfile=$(find "$prefix" -name rota.pc | head -n 1)
if [ -z "$pcfile" ]; then
    echo "consumer_install: rota.pc was not installed"
    exit 1
fi
PKG_CONFIG_PATH=$(dirname "$pcfile")
export PKG_CONFIG_PATH
echo "consumer_install: pkg-config build ($(pkg-config --modversion rota))"
flags=$(pkg-config --cflags --libs rota)
# Strict flags, so the installed headers are shown to compile cleanly as
# ISO C11 with every warning a careful user might enable.
# shellcheck disable=SC2086 # $cflags and $flags must split into words
"$cc" $cflags -std=c11 -Wall -Wextra -Wpedantic -Werror "$here/main.c" $flags \
    -o "$tmp/consumer_pc"
libdir=$(pkg-config --variable=libdir rota)
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/consumer_pc"
# The debug library through rota-debug.pc, the program's code the same.
if [ "${ROTA_CONSUMER_DEBUG-OFF}" = ON ]; then
    echo "consumer_install: pkg-config build of rota-debug"
    flags=$(pkg-config --cflags --libs rota-debug) || {
        echo "consumer_install: pkg-config cannot resolve rota-debug"
        exit 1
    }
    # shellcheck disable=SC2086 # $cflags and $flags must split into words
    "$cc" $cflags -std=c11 -Wall -Wextra -Wpedantic -Werror \
        "$here/debug_main.c" $flags -o "$tmp/consumer_debug_pc"
    LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        "$tmp/consumer_debug_pc"
    # The same program on the normal library must fail: the check can.
    # (Not in a ROTA_DEBUG=ON build, whose librota is itself the debug
    # build: ROTA_CONSUMER_LIB_DEBUG=ON.)
    # shellcheck disable=SC2046,SC2086 # the flags must split into words
    "$cc" $cflags -std=c11 "$here/debug_main.c" \
        $(pkg-config --cflags --libs rota) -o "$tmp/consumer_debug_on_plain"
    if [ "${ROTA_CONSUMER_LIB_DEBUG:-OFF}" != ON ] &&
        LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
            "$tmp/consumer_debug_on_plain" 2>/dev/null; then
        echo "consumer_install: debug_main.c passed on the normal library"
        exit 1
    fi
    # rota.h: a program built against librota.so runs on the debug
    # library with LD_PRELOAD.
    if [ -f "$libdir/librota_debug.so" ]; then
        LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
            LD_PRELOAD=$libdir/librota_debug.so "$tmp/consumer_debug_on_plain"
    fi
    # And statically, as a program that wants no shared library would.
    if [ -f "$libdir/librota_debug.a" ]; then
        # shellcheck disable=SC2046,SC2086 # the flags must split into words
        "$cc" $cflags -std=c11 "$here/debug_main.c" \
            $(pkg-config --cflags rota-debug) "$libdir/librota_debug.a" \
            $(pkg-config --libs-only-other --static rota-debug) \
            -o "$tmp/consumer_debug_pc_static"
        "$tmp/consumer_debug_pc_static"
    fi
fi
# Each adapter through its own .pc file (Requires: rota and the loop), its
# header first with no feature-test macro of the program's own.
for comp in $adapters; do
    echo "consumer_install: pkg-config build of rota-$comp"
    flags=$(pkg-config --cflags --libs "rota-$comp") || {
        echo "consumer_install: pkg-config cannot resolve rota-$comp"
        exit 1
    }
    # shellcheck disable=SC2086 # $cflags and $flags must split into words
    "$cc" $cflags -std=c11 -Wall -Wextra -Werror "$here/adapter_$comp.c" $flags \
        -o "$tmp/consumer_${comp}_pc"
    LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        "$tmp/consumer_${comp}_pc"
done

# --- 3. components that cannot be found --------------------------------------
# find_package must fail with a message naming the problem: an unknown
# component, and (when the build has adapters) one whose files were removed
# from the install, as when a packager leaves an adapter out.
# expect_missing COMPONENT PATTERN
expect_missing()
{
    mkdir -p "$tmp/missing-$1"
    printf 'cmake_minimum_required(VERSION 3.16)\nproject(m C)\nfind_package(rota CONFIG REQUIRED COMPONENTS %s)\n' \
        "$1" >"$tmp/missing-$1/CMakeLists.txt"
    if "$cmake" -S "$tmp/missing-$1" -B "$tmp/missing-$1/build" \
        -DCMAKE_C_FLAGS="$cflags" \
        -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
        >"$tmp/missing-$1.log" 2>&1; then
        echo "consumer_install: find_package(rota COMPONENTS $1) succeeded"
        exit 1
    fi
    if ! grep -q "$2" "$tmp/missing-$1.log"; then
        echo "consumer_install: find_package(rota COMPONENTS $1) failed without saying '$2':"
        cat "$tmp/missing-$1.log"
        exit 1
    fi
    echo "consumer_install: COMPONENTS $1 fails with: $2"
}
expect_missing nosuch "rota has no component 'nosuch'"
for comp in $adapters; do
    rm -f "$rota_dir/rota-$comp-targets"*.cmake
    expect_missing "$comp" "the component '$comp' is not in this install"
    break
done

echo "consumer_install: ok"
