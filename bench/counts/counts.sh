#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# counts.sh - instructions and data references per timer operation, counted
# under valgrind's callgrind: the figures no machine changes (`make
# bench-counts`; docs/BENCH.md, "Counts").
#
#   bash bench/counts/counts.sh [-o FILE] [-c] PATH/TO/rota_counts [N ...]
#
# Runs rota_counts (bench/counts/counts.c) once per implementation and N (default
# N: 10000 and 1000000) under callgrind with a cache model stated in the
# output, two processes at a time, and prints per operation, net of the
# harness (the implementation "none": the loop, the call through the
# operations table, the hook per fire):
#   Ir    instructions executed
#   Dr    data reads, Dw data writes, refs = Dr + Dw
#   D1    first-level data cache misses (reads + writes) in the model
#   LL    last-level misses (reads + writes) in the model
# then rota's cancel + arm called inline ("direct", net of its own loop:
# the figure a caller's loop pays, without the adapter every
# implementation shares), rota against wheel-bare, and the count targets
# with "met" or "MISSED" (cancel + arm's on the direct row).  The same rows
# go to FILE (tab-separated) when -o is given.
# -c counts cancel + arm alone (quick enough under valgrind at N = 1e7).
# The counts are the same from run to run for the same binary.
set -euo pipefail

out="" only=""
while [[ ${1:-} == -* ]]; do
    case $1 in
    -o) out=$2; shift 2 ;;
    -c) only=cancel+arm; shift ;;
    *) break ;;
    esac
done
if [[ $# -lt 1 || ! -x $1 ]]; then
    echo "usage: bash bench/counts/counts.sh [-o FILE] [-c] PATH/TO/rota_counts [N ...]" >&2
    exit 2
fi
prog=$1
shift
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(10000 1000000)
command -v valgrind >/dev/null ||
    { echo "counts.sh: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }

# The cache model: a 48 KiB 12-way L1d and a 32 MiB 16-way last level, the
# sizes of the machines the project is measured on (64-byte lines).
model=(--I1=32768,8,64 --D1=49152,12,64 --LL=33554432,16,64)
impls=(none rota wheel-bare hashed-rounds)
# rota-arm differs from rota only in its re-arm (the touch phase): a
# rota_timer_arm_at() that moves a pending timer, the "re-arm" row.
[[ -n $only ]] || impls+=(rota-arm)

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

jobs=()
for n in "${sizes[@]}"; do
    for impl in "${impls[@]}"; do
        jobs+=("$impl $n")
    done
done
# Each job: its phases' op counts on stdout, one callgrind dump per phase.
export COUNTS_DIR=$dir COUNTS_PROG=$prog COUNTS_MODEL="${model[*]}" COUNTS_ONLY=$only
printf '%s\n' "${jobs[@]}" | xargs -P 2 -L 1 sh -c '
    impl=$1 n=$2 dir=$COUNTS_DIR
    valgrind --tool=callgrind --cache-sim=yes $COUNTS_MODEL --dump-instr=no \
        --callgrind-out-file="$dir/cg.$impl.$n" "$COUNTS_PROG" "$impl" "$n" $COUNTS_ONLY \
        >"$dir/ops.$impl.$n" 2>"$dir/log.$impl.$n" ||
        { echo "counts.sh: $impl at $n failed:" >&2; tail -n 5 "$dir/log.$impl.$n" >&2; exit 1; }
' sh || { echo "counts.sh: a run failed" >&2; exit 1; }

# One line per (impl, n, phase): ops ticks Ir Dr Dw D1mr D1mw DLmr DLmw.
for n in "${sizes[@]}"; do
    for impl in "${impls[@]}"; do
        for f in "$dir"/cg."$impl"."$n".*; do
            awk -v impl="$impl" -v n="$n" '
                /^desc: Trigger: Client Request: / { phase = $5 }
                /^totals: / { print impl, n, phase, $2, $3, $4, $6, $7, $9, $10 }
            ' "$f"
        done
    done
done >"$dir/totals"

awk -v out="$out" '
    FILENAME ~ /ops\./ {
        f = FILENAME; sub(/.*\//, "", f); split(f, parts, "."); impl = parts[2]; n = parts[3]
        ops[impl, n, $2] = $3; ticks[impl, n, $2] = $4
        next
    }
    {
        k = $1 SUBSEP $2 SUBSEP $3
        ir[k] = $4; dr[k] = $5; dw[k] = $6; d1[k] = $7 + $8; ll[k] = $9 + $10
        if (!($2 in seen)) { seen[$2] = 1; ns[++nn] = $2 }
    }
    function net(impl, n, ph, v,    z, c, per) {
        z = "none" SUBSEP n SUBSEP ph
        c = ops[impl, n, ph]
        if (c == 0) return -1
        if (ph == "expiry" || ph == "periodic") {
            # the ticks loop as "none" ran it, and the hook once per fire
            h = "none" SUBSEP n SUBSEP "hook"
            per = (v[impl, n, ph] - v[z] - c * v[h] / ops["none", n, "hook"]) / c
        } else
            per = (v[impl, n, ph] - v[z]) / c
        return per
    }
    END {
        split("cancel+arm touch arm expiry periodic", phs, " ")
        split("rota wheel-bare hashed-rounds", ims, " ")
        printf "Counts per operation, net of the harness (callgrind; model: I1 32 KiB,\n"
        printf "D1 48 KiB 12-way, LL 32 MiB 16-way, 64-byte lines).\n\n"
        printf "%-11s %9s %-14s %8s %7s %7s %7s %7s %7s\n", \
            "op", "N", "impl", "Ir", "Dr", "Dw", "refs", "D1miss", "LLmiss"
        nph = ("none" SUBSEP ns[1] SUBSEP "touch") in ops ? 5 : 1
        for (j = 1; j <= nn; j++) for (p = 1; p <= nph; p++) for (m = 1; m <= 3; m++) {
            n = ns[j]; ph = phs[p]; im = ims[m]
            a = net(im, n, ph, ir); b = net(im, n, ph, dr); c = net(im, n, ph, dw)
            d = net(im, n, ph, d1); e = net(im, n, ph, ll)
            R[im, n, ph, "ir"] = a; R[im, n, ph, "refs"] = b + c
            printf "%-11s %9d %-14s %8.1f %7.1f %7.1f %7.1f %7.2f %7.2f\n", \
                ph, n, im, a, b, c, b + c, d, e
            if (out != "")
                printf "%s\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\n", \
                    ph, n, im, a, b, c, b + c, d, e > out
            if (ph == "touch" && m == 3 && ("rota-arm" SUBSEP n SUBSEP "touch") in ops) {
                im = "rota-arm"
                a = net(im, n, ph, ir); b = net(im, n, ph, dr); c = net(im, n, ph, dw)
                d = net(im, n, ph, d1); e = net(im, n, ph, ll)
                printf "%-11s %9d %-14s %8.1f %7.1f %7.1f %7.1f %7.2f %7.2f\n", \
                    "re-arm", n, "rota", a, b, c, b + c, d, e
                if (out != "")
                    printf "%s\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\n", \
                        "re-arm", n, "rota", a, b, c, b + c, d, e > out
            }
        }
        printf "\nHarness subtracted per operation (\"none\"):"
        for (p = 1; p <= (nph < 3 ? nph : 3); p++)
            printf " %s %.1f Ir %.1f refs;", phs[p], \
                ir["none", ns[1], phs[p]] / ops["none", ns[1], phs[p]], \
                (dr["none", ns[1], phs[p]] + dw["none", ns[1], phs[p]]) / ops["none", ns[1], phs[p]]
        h = "none" SUBSEP ns[1] SUBSEP "hook"
        if (nph == 5)
            printf " per fire %.1f Ir %.1f refs (the hook), plus the advance() loop", \
                ir[h] / ops["none", ns[1], "hook"], (dr[h] + dw[h]) / ops["none", ns[1], "hook"]
        printf "\n"

        printf "\ncancel+arm called inline (\"direct\": the same pairs in a loop of their\n"
        printf "own, no adapter; its harness, subtracted, calls two empty functions):\n"
        for (j = 1; j <= nn; j++) {
            n = ns[j]; im = "rota"
            if (!((im SUBSEP n SUBSEP "direct") in ops)) continue
            a = net(im, n, "direct", ir); b = net(im, n, "direct", dr); c = net(im, n, "direct", dw)
            d = net(im, n, "direct", d1); e = net(im, n, "direct", ll)
            R[im, n, "direct", "ir"] = a; R[im, n, "direct", "refs"] = b + c
            printf "%-11s %9d %-14s %8.1f %7.1f %7.1f %7.1f %7.2f %7.2f\n", \
                "direct", n, im, a, b, c, b + c, d, e
            if (out != "")
                printf "%s\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\n", \
                    "direct", n, im, a, b, c, b + c, d, e > out
            printf "  (the adapter adds %.1f Ir and %.1f refs per pair to the cancel+arm row)\n", \
                R[im, n, "cancel+arm", "ir"] - a, R[im, n, "cancel+arm", "refs"] - (b + c)
        }

        printf "\nrota / wheel-bare:\n"
        for (j = 1; j <= nn; j++) for (p = 1; p <= nph; p++) {
            n = ns[j]; ph = phs[p]
            printf "  %-11s %9d  Ir %5.2f  refs %5.2f\n", ph, n, \
                R["rota", n, ph, "ir"] / R["wheel-bare", n, ph, "ir"], \
                R["rota", n, ph, "refs"] / R["wheel-bare", n, ph, "refs"]
        }
        printf "\nTargets (rota):\n"
        for (j = 1; j <= nn; j++) {
            n = ns[j]
            target(R["rota", n, "direct", "ir"] <= 45, \
                sprintf("cancel+arm called inline at %d: %.1f instructions <= 45", n, R["rota", n, "direct", "ir"]))
            target(R["rota", n, "direct", "refs"] <= 16, \
                sprintf("cancel+arm called inline at %d: %.1f data references <= 16", n, R["rota", n, "direct", "refs"]))
            for (p = 2; p <= nph; p++) {
                ph = phs[p]
                for (q = 1; q <= 2; q++) {
                    w = q == 1 ? "ir" : "refs"
                    r = R["rota", n, ph, w] / R["wheel-bare", n, ph, w]
                    target(r <= 1.2, sprintf("%s at %d: %s %.2fx wheel-bare <= 1.2x", \
                        ph, n, w == "ir" ? "instructions" : "references", r))
                }
            }
        }
        printf "%d met, %d missed\n", met, missed
    }
    function target(ok, what) {
        printf "  %-6s %s\n", ok ? "met" : "MISSED", what
        if (ok) met++; else missed++
    }
' "$dir"/ops.* "$dir/totals"
