#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# counts.sh - W6's instructions and data references per operation, counted
# under valgrind's callgrind: what src/keyed/keyed.c (INSTRUCTIONS COUNT
# TOO) and docs/keyed.md quote.
#
#   bash bench/keyed/counts.sh [-s K] [-o OPS] PATH/TO/bench_keyed [N ...]
#
# Runs `bench_keyed --n N --ops OPS --map-seed K` (default N 1000, OPS
# 200000, K 1) under callgrind, two processes at a time, collecting inside
# run_ops() only (the operations; the setup's inserts are not counted), and
# prints per implementation and N each kind's cost per call of its adapter
# function, everything it calls included: set, move, remove, their mean
# ("op": W6's mix of 70/20/10), and the clock's advance with its expiries,
# spread over all operations ("advance/op").  Ir: instructions; refs: data
# reads and writes.  rota's map hashes under a seed derived from K, so the
# counts repeat exactly for one binary; another K moves them by about 2%.
set -euo pipefail

seed=1 ops=200000
while [[ ${1:-} == -* ]]; do
    case $1 in
    -s) seed=$2; shift 2 ;;
    -o) ops=$2; shift 2 ;;
    *) break ;;
    esac
done
if [[ $# -lt 1 || ! -x $1 ]]; then
    echo "usage: bash bench/keyed/counts.sh [-s K] [-o OPS] PATH/TO/bench_keyed [N ...]" >&2
    exit 2
fi
prog=$1
shift
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(1000)
command -v valgrind >/dev/null ||
    { echo "counts.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

export KC_DIR=$dir KC_PROG=$prog KC_SEED=$seed KC_OPS=$ops
printf '%s\n' "${sizes[@]}" | xargs -P 2 -L 1 sh -c '
    n=$1 dir=$KC_DIR
    valgrind --tool=callgrind --cache-sim=yes --dump-instr=no \
        --toggle-collect=run_ops --callgrind-out-file="$dir/cg.$n" \
        "$KC_PROG" --n "$n" --ops "$KC_OPS" --map-seed "$KC_SEED" \
        --json /dev/null >"$dir/out.$n" 2>"$dir/log.$n" ||
        { echo "counts.sh: N = $n failed:" >&2; tail -n 5 "$dir/log.$n" >&2; exit 1; }
' sh || { echo "counts.sh: a run failed" >&2; exit 1; }

printf "W6 counted under callgrind: %s ops x 3 repetitions, map seed %s;\n" "$ops" "$seed"
printf "per call of each adapter function, its callees included.\n\n"
printf "%-8s %-14s %-11s %9s %8s %8s\n" "N" "impl" "kind" "calls" "Ir" "refs"
for n in "${sizes[@]}"; do
    # The call arcs out of run_ops(): callee, calls, inclusive costs.  Names
    # are compressed ("(id) name" the first time, "(id)" after), the
    # fn/cfn/cfi/cfl lines name the caller and callee, "calls=" starts an
    # arc and the next line holds its inclusive cost.
    awk -v n="$n" '
        /^events: / { for (i = 2; i <= NF; i++) ev[$i] = i }
        function name(s,    id) {
            id = s; sub(/\).*/, "", id); sub(/^\(/, "", id)
            if (s ~ /\) /) { sub(/^\([0-9]+\) /, "", s); names[id] = s }
            return names[id]
        }
        /^fn=/ { s = $0; sub(/^fn=/, "", s); fn = name(s); next }
        /^cfn=/ { s = $0; sub(/^cfn=/, "", s); cfn = name(s); next }
        /^calls=/ { split($0, c, /[= ]/); ncalls = c[2]; arc = 1; next }
        arc {
            arc = 0
            if (fn != "run_ops") next
            calls[cfn] += ncalls
            ir[cfn] += $(ev["Ir"]); refs[cfn] += $(ev["Dr"]) + $(ev["Dw"])
        }
        function row(impl, kind, f) {
            printf "%-8d %-14s %-11s %9d %8.1f %8.1f\n", n, impl, kind, \
                calls[f], ir[f] / calls[f], refs[f] / calls[f]
        }
        END {
            split("rota hashed-rounds", im, " "); split("rota rounds", pre, " ")
            split("set move remove", kinds, " ")
            for (i = 1; i <= 2; i++) {
                tc = ti = tr = 0
                for (k = 1; k <= 3; k++) {
                    f = pre[i] "_" kinds[k]
                    if (!(f in calls)) { printf "counts.sh: no calls of %s\n", f; exit 1 }
                    row(im[i], kinds[k], f)
                    tc += calls[f]; ti += ir[f]; tr += refs[f]
                }
                printf "%-8d %-14s %-11s %9d %8.1f %8.1f\n", n, im[i], "op", tc, \
                    ti / tc, tr / tc
                f = pre[i] "_advance"
                printf "%-8d %-14s %-11s %9d %8.1f %8.1f\n", n, im[i], "advance/op", \
                    calls[f], ir[f] / tc, (refs[f]) / tc
            }
        }
    ' "$dir/cg.$n"
done
