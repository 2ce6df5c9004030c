#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# lanes.sh - timeout lanes against the wheel and hashed-rounds
# (bench/lanes/bench_lanes.c): nanoseconds per operation, then instructions and
# data references per operation counted under callgrind.
#
#   bash bench/lanes/lanes.sh PATH/TO/rota_bench_lanes [N ...]   (default 10000 1000000)
set -euo pipefail
prog=$1
shift
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(10000 1000000)
impls=(lane wheel hashed-rounds)

echo "ns per operation (CPU: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p'))"
for n in "${sizes[@]}"; do
    for impl in "${impls[@]}"; do
        "$prog" "$impl" "$n"
    done
done
command -v valgrind >/dev/null || { echo "lanes.sh: no valgrind: no counts"; exit 0; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo
echo "counts per operation (callgrind): impl N phase Ir refs"
for n in "${sizes[@]}"; do
    for impl in "${impls[@]}"; do
        valgrind --tool=callgrind --cache-sim=yes --callgrind-out-file="$dir/cg.$impl.$n" \
            "$prog" "$impl" "$n" >"$dir/ops.$impl.$n" 2>/dev/null
        for f in "$dir"/cg."$impl"."$n".*; do
            awk -v impl="$impl" -v n="$n" -v ops="$dir/ops.$impl.$n" '
                /^desc: Trigger: Client Request: / { phase = $5 }
                /^totals: / { ir = $2; refs = $3 + $4 }
                END {
                    while ((getline line < ops) > 0) {
                        split(line, f, " ")
                        if (f[3] == phase) count = f[4]
                    }
                    printf "%s %s %s %.1f %.1f\n", impl, n, phase, ir / count, refs / count
                }' "$f"
        done
    done
done
