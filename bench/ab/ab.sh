#!/bin/sh
# SPDX-License-Identifier: MIT
# ab.sh - is build B of rota faster than build A?  Interleaved in one process.
#
#   bench/ab/ab.sh [-w churn,refresh,storm,periodic] [-n N] [-s SEGMENTS]
#                  [-o OPS] A B
#
# A and B are each a git revision of this repository (HEAD, b1831b7, ...) or
# a directory holding a rota source tree (`.` is the working tree, with its
# uncommitted changes).  Each is built in Release mode into a scratch
# directory; the two static libraries get their global symbols prefixed
# (objcopy --redefine-syms), so side.c can be linked twice, once against
# each, into one harness that alternates segments of the workload between
# them (harness.c).  It prints both sides' median ns per operation and the
# median of B/A over segments with its quartiles: below 1 means B is faster.
# Compare A with itself first to see how wide the quartiles are here.
#
# Workloads (bench/ab/side.c): churn = W1 (cancel + arm a random timer),
# refresh = W2 with the checked touch, storm = W3 (arm N, fire them all),
# periodic = W5 (N periodic timers, periods uniform in [10, 1000], advanced
# tick by tick; ns per fire); -w takes a comma-separated list.  Defaults:
# churn, N = 1000000, 30 segments of 300000 operations (a storm segment is
# one arm-and-fire of N; a periodic one, the ticks that fire about OPS).
# Needs cmake, a C compiler, nm and objcopy (binutils).
set -eu

workload=churn n=1000000 segments=30 ops=300000
while getopts w:n:s:o: opt; do
    case $opt in
    w) workload=$OPTARG ;;
    n) n=$OPTARG ;;
    s) segments=$OPTARG ;;
    o) ops=$OPTARG ;;
    *) sed -n '3,24p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { sed -n '3,24p' "$0" >&2; exit 2; }

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cc=${CC:-cc}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rota-ab.XXXXXX")
worktrees=""
cleanup() {
    for w in $worktrees; do git -C "$repo" worktree remove --force "$w" || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# build SIDE SPEC: a prefixed librota and side.o for one side.
build() {
    side=$1 spec=$2
    if [ -d "$spec" ]; then
        src=$(cd "$spec" && pwd)
    else
        src=$tmp/src_$side
        git -C "$repo" worktree add --detach "$src" "$spec" >/dev/null 2>&1 ||
            { echo "ab: '$spec' is neither a directory nor a revision" >&2; exit 2; }
        worktrees="$worktrees $src"
    fi
    echo "ab: building $side from $spec" >&2
    cmake -S "$src" -B "$tmp/build_$side" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_C_COMPILER="$cc" -DROTA_BUILD_TESTS=OFF -DROTA_BUILD_BENCH=OFF \
        -DROTA_BUILD_EXAMPLES=OFF -DROTA_BUILD_SHARED=OFF >"$tmp/cmake_$side.log" ||
        { cat "$tmp/cmake_$side.log" >&2; exit 1; }
    cmake --build "$tmp/build_$side" --target rota_static >"$tmp/make_$side.log" 2>&1 ||
        { cat "$tmp/make_$side.log" >&2; exit 1; }
    lib=$(find "$tmp/build_$side" -name 'librota*.a' | head -n 1)
    # Revisions before 0.2's rename lack the _at suffix on the absolute
    # arm and touch: side.c maps its names onto theirs (AB_OLD_NAMES).
    names=
    grep -q 'rota_timer_arm_at' "$src/include/rota.h" || names=-DAB_OLD_NAMES
    "$cc" -O3 -DNDEBUG $names -I"$src/include" -I"$tmp/build_$side/include" \
        -I"$here" -c "$here/side.c" -o "$tmp/side_$side.o"
    # Every global the library or side.o defines gets the prefix, in both,
    # so side.o's calls reach its own library.
    nm -g --defined-only "$lib" "$tmp/side_$side.o" |
        awk -v p="${side}_" 'NF == 3 { print $3, p $3 }' | sort -u >"$tmp/syms_$side"
    objcopy --redefine-syms="$tmp/syms_$side" "$lib" "$tmp/lib_$side.a"
    objcopy --redefine-syms="$tmp/syms_$side" "$tmp/side_$side.o" "$tmp/side_${side}p.o"
}

build a "$1"
build b "$2"
"$cc" -O2 -I"$here" "$here/harness.c" "$tmp/side_ap.o" "$tmp/side_bp.o" \
    "$tmp/lib_a.a" "$tmp/lib_b.a" -lpthread -o "$tmp/ab_harness"
echo "ab: A = $1, B = $2, N = $n" >&2
for w in $(echo "$workload" | tr , ' '); do
    "$tmp/ab_harness" "$w" "$n" "$segments" "$ops"
done
