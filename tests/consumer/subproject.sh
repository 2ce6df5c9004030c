#!/bin/sh
# SPDX-License-Identifier: MIT
# subproject_install: a parent project that vendors rota with
# add_subdirectory() builds and links rota::rota, and `cmake --install` of
# the parent lays down nothing of rota's (ROTA_INSTALL defaults to OFF below
# a parent).  The same parent with -DROTA_INSTALL=ON must install rota.h:
# that proves the check looks where rota would install.
#
# Usage (CTest passes these): subproject.sh CMAKE SOURCE_DIR CC
set -eu

cmake=$1
src=$2
cc=${3:-cc}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rota-subproject.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

mkdir -p "$tmp/parent"
cat >"$tmp/parent/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.16)
project(parent LANGUAGES C)
add_subdirectory("$src" rota)
add_executable(app app.c)
target_link_libraries(app PRIVATE rota::rota_static)
CMAKE
cat >"$tmp/parent/app.c" <<'C'
#include <rota.h>
int main(void)
{
    static struct rota_wheel wheel;
    return rota_wheel_init(&wheel, 0) == 0 && rota_version()[0] != '\0' ? 0 : 1;
}
C

# build_and_install NAME CMAKE-ARGS...: configure, build and install the
# parent into $tmp/NAME-prefix.
build_and_install()
{
    name=$1
    shift
    "$cmake" -S "$tmp/parent" -B "$tmp/$name" -DCMAKE_C_COMPILER="$cc" \
        -DROTA_BUILD_SHARED=OFF "$@" >"$tmp/$name.log" 2>&1 &&
        "$cmake" --build "$tmp/$name" -j 2 >>"$tmp/$name.log" 2>&1 &&
        "$tmp/$name/app" &&
        "$cmake" --install "$tmp/$name" --prefix "$tmp/$name-prefix" \
            >>"$tmp/$name.log" 2>&1 || {
        cat "$tmp/$name.log"
        echo "subproject_install: the $name parent failed to build, run or install"
        exit 1
    }
}

build_and_install default
if [ -d "$tmp/default-prefix" ] && [ -n "$(find "$tmp/default-prefix" -type f)" ]; then
    echo "subproject_install: add_subdirectory(rota) installed files nobody asked for:"
    find "$tmp/default-prefix" -type f
    exit 1
fi
echo "subproject_install: add_subdirectory(rota) installs nothing by default"

build_and_install asked -DROTA_INSTALL=ON
if [ -z "$(find "$tmp/asked-prefix" -name rota.h)" ]; then
    echo "subproject_install: with ROTA_INSTALL=ON rota.h was not installed"
    exit 1
fi
echo "subproject_install: with ROTA_INSTALL=ON it installs rota"
