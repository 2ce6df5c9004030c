#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench-results-md.sh - bench/common/results-md.py turns a results file into the
# page it should, and refuses a broken one.
#
#   bench-results-md.sh [PYTHON]
#
# good.json holds rota and heap2 at two sizes: the page must name the run
# (commit, CPU, a full run) and show each heap2 cell with its ratio to
# rota's in rows ordered by N under the title the file gives W1, and
# list the skipped job.  bad.json has a
# result without its metric: the script must fail and name the field.
set -uo pipefail

python=${1:-python3}
here=$(cd "$(dirname "$0")" && pwd)
script=$here/../../bench/common/results-md.py
fixtures=$here/bench-results
ok=1

expect()
{
    if ! grep -qF -- "$1" <<<"$page"; then
        echo "bench-results-md: the page lacks: $1"
        ok=0
    fi
}

page=$("$python" "$script" --note "A fixture." "$fixtures/good.json") || {
    echo "bench-results-md: results-md.py failed on good.json"
    exit 1
}
printf '%s\n' "$page"
expect 'a full run, commit `abc1234`, on 2026-01-01T00:00:00Z, Test CPU (2 CPUs online)'
expect 'A fixture.'
# The title comes from the file's meta.workloads, not from the script.
expect '## W1 as the file names it: `ns_per_op`'
expect '| N | rota | heap2 |'
expect '| 1e3 | 10.0 | 25.0 (2.50x) |'
expect '| 1e6 | 80.0 | 200 (2.50x) |'
expect '- heap2, W1 at N = 1e7: too slow'
# Rows in order of N: 1e3 before 1e6.
if (($(grep -n '^| 1e3 ' <<<"$page" | cut -d: -f1) > $(grep -n '^| 1e6 ' <<<"$page" | cut -d: -f1))); then
    echo "bench-results-md: rows are not in order of N"
    ok=0
fi

if out=$("$python" "$script" "$fixtures/bad.json" 2>&1); then
    echo "bench-results-md: results-md.py accepted bad.json"
    ok=0
elif ! grep -q 'result 0 has no "metric"' <<<"$out"; then
    echo "bench-results-md: the error does not name the missing field: $out"
    ok=0
fi

if ((ok)); then
    echo "bench-results-md: ok"
    exit 0
fi
exit 1
