#!/bin/sh
# SPDX-License-Identifier: MIT
# single_file_*: copy the generated single-file rota.h and rota.c, main.c
# and the tests' harness.h (standard C only) into an empty directory and
# build and run the program from those files alone, as a project that
# vendors rota would:
#
#   run.sh CC DIR MODE     DIR holds the generated rota.h and rota.c
#     native    cc -std=c11 -Wall -Wextra -Werror (and -Wpedantic)
#     m32       the same with -m32 (exit 77, skipped, when CC cannot link
#               32-bit programs: Debian's gcc-multilib provides that)
#     planted   rota_version() made to lie in the copy of rota.c: the
#               program must notice and fail, proving it checks what it runs
set -eu

cc=$1
dir=$2
mode=$3
here=$(cd "$(dirname "$0")" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rota-single.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
cp "$dir/rota.h" "$dir/rota.c" "$here/main.c" "$here/../common/harness.h" "$tmp/"
cd "$tmp"

flags="-std=c11 -Wall -Wextra -Wpedantic -Werror"
case $mode in
native) ;;
m32)
    printf 'int main(void) { return 0; }\n' >probe.c
    if ! "$cc" -m32 probe.c -o probe >/dev/null 2>&1; then
        echo "single_file_m32: skipped: $cc cannot link -m32 programs (apt-get install gcc-multilib)"
        exit 77
    fi
    rm -f probe.c probe
    flags="$flags -m32"
    ;;
planted)
    sed 's/return ROTA_VERSION_STRING;/return "0.0.0-planted";/' rota.c >rota.c.new
    if cmp -s rota.c rota.c.new; then
        echo "single_file: could not plant the fault (rota_version() changed?)"
        exit 1
    fi
    mv rota.c.new rota.c
    ;;
*)
    echo "usage: run.sh CC DIR native|m32|planted" >&2
    exit 2
    ;;
esac

ls
echo "$cc $flags main.c rota.c -o prog"
# shellcheck disable=SC2086 # $flags must split into words
"$cc" $flags main.c rota.c -o prog
if [ "$mode" = planted ]; then
    if ./prog; then
        echo "single_file: the program passed with a planted fault"
        exit 1
    fi
    echo "single_file: the planted fault was caught"
    exit 0
fi
./prog
