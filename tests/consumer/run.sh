#!/bin/sh
# consumer_install: install the build tree into a scratch prefix, then build
# and run tests/consumer/main.c against that install twice, the two ways a
# user would:
#   1. a CMake project: find_package(rota CONFIG REQUIRED) + rota::rota
#      (and rota::rota_static when the install has it);
#   2. a plain compiler line: cc main.c $(pkg-config --cflags --libs rota).
# Only the install is visible to either, so a header missing from install(),
# a wrong include path in the exported targets or a broken rota.pc fails
# here instead of on a user's machine.
#
# Usage (CTest passes these): run.sh CMAKE BUILD_DIR CONFIG CC [INSTRUMENTED]
# INSTRUMENTED, when given, names the sanitizer/fuzzer option of the build:
# such libraries need their runtime linked into every consumer, so the test
# exits 77, which CTest reports as skipped.  ROTA_CONSUMER_CFLAGS in the
# environment (the build's CMAKE_C_FLAGS, say -m32) is passed to both
# consumer builds: a library links only into code of the same ABI.
set -eu

cmake=$1
build=$2
config=${3-}
cc=${4:-cc}
instrumented=${5-}
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
for exe in consumer consumer_static; do
    # Multi-config generators put the binary in a per-config folder.
    path=$(find "$tmp/cmake-build" -type f -name "$exe" | head -n 1)
    if [ -z "$path" ]; then
        [ "$exe" = consumer_static ] && continue
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

echo "consumer_install: ok"
