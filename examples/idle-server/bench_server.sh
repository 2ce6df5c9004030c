#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_server.sh - the idle server's figures (a benchmark, not a test).
#
#   bench_server.sh SERVER LOADGEN
#
# Environment (defaults in brackets):
#   CONNECTIONS [18000]  held by one server process (the descriptor limit
#                        here is 20,000 per process)
#   PROCESSES [4]        load generator processes
#   SOURCES [4]          source addresses 127.0.0.1..
#   CHATTY [0.1]         fraction of chatty connections
#   INTERVAL [100ms]     chatty write interval
#   IDLE [10s]           the server's --idle-timeout
#   TICK [100ms]         the server's --tick
#   TIMER [epoll]        the server's --timer (epoll or timerfd)
#   LOOP [epoll]         the server's --loop (epoll or uring; TIMER applies
#                        to epoll only)
#   THREADS [2]          server worker threads
#   RATE []              cap on connects per second (default: as fast as the
#                        server accepts; the silent connections are then
#                        all kicked within a few seconds: a kick storm)
#
# Reports, from the server's once-a-second statistics and the load
# generator's summary:
#   - server CPU time per touch: CPU / reads over the seconds when every
#     connection is up and nothing is kicked (it includes the read, the echo
#     write and the epoll_wait: everything a touch costs the server);
#   - server CPU time per kick: over the seconds with kicks, CPU minus the
#     touches' share (at the rate above), divided by the kicks (includes the
#     close());
#   - resident memory per connection: RSS with every connection open minus
#     RSS before the first one, divided by the connections;
#   - kick lateness (close seen by the client minus last write minus the idle
#     timeout): p50, p99, max.
# Loopback only; every wait is bounded; the server stops by itself.
set -u

server=$1 loadgen=$2
conns=${CONNECTIONS:-18000}
procs=${PROCESSES:-4}
sources=${SOURCES:-4}
chatty=${CHATTY:-0.1}
interval=${INTERVAL:-100ms}
idle=${IDLE:-10s}
tick=${TICK:-100ms}
timer=${TIMER:-epoll}
loop=${LOOP:-epoll}
if [ "$loop" = uring ]; then
    loop_args="--loop uring"
    timer=uring
else
    loop_args="--timer $timer"
fi
threads=${THREADS:-2}
rate=${RATE:-}

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
tmp=$(mktemp -d)
spid=
cleanup() {
    if [ -n "$spid" ] && kill -0 "$spid" 2>/dev/null; then
        kill -KILL "$spid" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

idle_s=$(awk -v d="$idle" 'BEGIN { v = d + 0; if (d ~ /ms$/) v /= 1000; else if (d ~ /m$/) v *= 60; print v }')
run_s=$(awk -v i="$idle_s" 'BEGIN { printf "%d", i + 8 }')
# The server stops by itself: after the connects, the run and a margin.
srv_s=$(awk -v s="$run_s" -v n="$conns" -v r="${rate:-0}" \
    'BEGIN { printf "%d", s + 40 + (r > 0 ? n / r : 0) }')

"$server" --port 0 --port-file "$tmp/port" --threads "$threads" \
    --idle-timeout "$idle" --tick "$tick" $loop_args \
    --duration "${srv_s}s" >"$tmp/server.log" 2>&1 &
spid=$!
for _ in $(seq 100); do
    [ -s "$tmp/port" ] && break
    sleep 0.05
done
[ -s "$tmp/port" ] || { echo "bench-server: the server did not start"; cat "$tmp/server.log"; exit 1; }
sleep 1.5 # one statistics line before any connection: the RSS baseline

echo "bench-server: $conns connections ($chatty chatty, one byte every $interval)," \
    "$procs load generator processes, $sources source addresses," \
    "connects per second: ${rate:-no cap};" \
    "server: $threads workers, idle timeout $idle, tick $tick, timer=$timer"
timeout $((run_s + 60)) "$loadgen" --port "$(cat "$tmp/port")" \
    --connections "$conns" --chatty "$chatty" --interval "$interval" \
    --duration "${run_s}s" --idle-timeout "$idle" --processes "$procs" \
    --sources "$sources" --concurrency 128 ${rate:+--rate "$rate"} \
    >"$tmp/loadgen.log" 2>&1
lg=$?
sleep 1.2
kill -TERM "$spid"
for _ in $(seq 100); do
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.1
done
wait "$spid"
spid=
cat "$tmp/loadgen.log"
[ "$lg" -eq 0 ] || echo "bench-server: the load generator exited with status $lg"
grep -E "^rota-idle-server: (listening|stopped)" "$tmp/server.log"

# One line per second: t= open= kicked= reads= cpu= rss=
awk -v conns="$conns" '
/^rota-idle-server: t=/ {
    for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    sub(/s$/, "", v["cpu"]); sub(/s$/, "", v["user"])
    rss = v["rss"]; sub(/KiB$/, "", rss)
    n++; open[n] = v["open"]; kick[n] = v["kicked"]; rd[n] = v["reads"]
    cpu[n] = v["cpu"]; usr[n] = v["user"]; mem[n] = rss
}
END {
    # RSS: before the first connection, and on the line with the most open.
    base = -1; peak = -1; most = 0
    for (i = 1; i <= n; i++) {
        if (open[i] == 0 && base < 0 && mem[i] != "?") base = mem[i]
        if (open[i] + 0 > most && mem[i] != "?") { most = open[i] + 0; peak = mem[i] }
    }
    # Touch-only seconds: all connections up at both ends, no kick between.
    tc = 0; tu = 0; tr = 0
    for (i = 2; i <= n; i++)
        if (open[i-1] == conns && open[i] == conns && kick[i] == kick[i-1]) {
            tc += cpu[i] - cpu[i-1]; tu += usr[i] - usr[i-1]; tr += rd[i] - rd[i-1]
        }
    per_touch = tr > 0 ? tc / tr : 0
    kc = 0; kk = 0; kr = 0
    for (i = 2; i <= n; i++)
        if (kick[i] > kick[i-1]) {
            kc += cpu[i] - cpu[i-1]; kk += kick[i] - kick[i-1]; kr += rd[i] - rd[i-1]
        }
    if (tr > 0)
        printf "bench-server: CPU per touch: %.2f us, of which %.2f us in user space (%d touches in %.3f s of CPU)\n", per_touch * 1e6, tu / tr * 1e6, tr, tc
    else
        print "bench-server: CPU per touch: no touch-only second measured"
    if (kk > 0 && tr == 0)
        print "bench-server: CPU per kick: not separable from the touches in this run"
    if (kk > 0 && tr > 0)
        printf "bench-server: CPU per kick: %.2f us (%d kicks; %.3f s of CPU, %.3f s of it for the %d touches meanwhile)\n", (kc - kr * per_touch) / kk * 1e6, kk, kc, kr * per_touch, kr
    if (base >= 0 && most > 0)
        printf "bench-server: RSS per connection: %.0f bytes (%d KiB with %d open, %d KiB before)\n", (peak - base) * 1024 / most, peak, most, base
}' "$tmp/server.log"
sed -n 's/^rota-idle-server: kicks run after/bench-server: server side, kicks run after/p' "$tmp/server.log"
sed -n 's/^rota-idle-loadgen: kick lateness beyond the idle timeout (ms): /bench-server: kick lateness (ms): /p' "$tmp/loadgen.log"
