#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_cache.sh - redis-benchmark against rota-ttl-cache and redis-server.
#
#   bench_cache.sh PATH/TO/rota-ttl-cache      (make bench-cache runs it)
#
# Starts both servers on free loopback ports (redis-server without
# persistence, in a temporary directory), then runs
#   redis-benchmark -t set,get,incr,mset -n 200000 -c 50 -P 16 -q
# against each, ROUNDS times (default 1) alternating, and prints requests
# per second for each test and server, then the median of the rounds.  A benchmark, not a test: it needs a
# quiet machine and is not part of `make test`.
set -euo pipefail

cache=${1:?usage: bench_cache.sh PATH/TO/rota-ttl-cache}
rounds=${ROUNDS:-1}
for tool in redis-server redis-benchmark; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "bench_cache.sh: $tool not found (Debian: redis-server, redis-tools)" >&2
        exit 1
    fi
done

tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

"$cache" --port 0 >"$tmp/cache.out" 2>&1 &
pids+=($!)
cport=
for _ in $(seq 50); do
    cport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$tmp/cache.out")
    [ -n "$cport" ] && break
    sleep 0.1
done
rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$tmp" --logfile "$tmp/redis.log" &
pids+=($!)
for _ in $(seq 50); do
    redis-cli -p "$rport" PING >/dev/null 2>&1 && break
    sleep 0.1
done
[ -n "$cport" ] || { echo "rota-ttl-cache did not start" >&2; exit 1; }

echo "$(redis-server --version)"
echo "$(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "redis-benchmark -t set,get,incr,mset -n 200000 -c 50 -P 16, $rounds round(s)"
for round in $(seq "$rounds"); do
    for server in rota-ttl-cache redis-server; do
        port=$cport
        [ "$server" = redis-server ] && port=$rport
        redis-cli -p "$port" FLUSHALL >/dev/null
        redis-benchmark -h 127.0.0.1 -p "$port" -t set,get,incr,mset \
            -n 200000 -c 50 -P 16 -q 2>/dev/null | tr '\r' '\n' |
            sed -n 's/^\([A-Z]*\)[^:]*: \([0-9.]*\) requests per second.*/\1 \2/p' |
            while read -r test rps; do
                printf 'round %d  %-15s %-5s %12s req/s\n' "$round" "$server" "$test" "$rps"
            done
    done
done | tee "$tmp/rounds"
echo "median of $rounds round(s), requests per second:"
awk '{ v[$3 " " $4] = v[$3 " " $4] " " $5 }
     END { for (k in v) print k, v[k] }' "$tmp/rounds" | sort |
    while read -r server test values; do
        median=$(printf '%s\n' $values | sort -g | awk '{ a[NR] = $1 }
            END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
        printf '  %-15s %-5s %12.0f\n' "$server" "$test" "$median"
    done
