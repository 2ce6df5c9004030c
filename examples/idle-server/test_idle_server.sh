#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_idle_server.sh - the idle server on loopback, end to end.
#
#   test_idle_server.sh SERVER LOADGEN TICK_MS IDLE_MS TIMER [CONNECTIONS]
#                       [SERVER_IDLE_MS]
#
# TIMER is the server's --timer (epoll, timerfd), or uring for its io_uring
# loop (--loop uring; the test exits 77, skipped, where the kernel refuses
# io_uring).  SERVER_IDLE_MS (default IDLE_MS) is the server's idle timeout
# when it must differ from what the load generator expects: the planted
# fault that proves the load generator's check catches early kicks.
#
# Starts SERVER on 127.0.0.1 (a free port), opens CONNECTIONS (default 2000)
# connections with LOADGEN, half of them writing a byte every 0.5 s and half
# silent after their first byte, for a 6 s run, and checks:
#   - every silent connection is closed by the server between IDLE and
#     IDLE + TICK + 300 ms after its last byte (the load generator checks,
#     timing the close from the moment epoll_wait returned with it);
#   - no chatty connection is ever closed by the server;
#   - afterwards the server's descriptor count is back to its baseline;
#   - the server stops cleanly on SIGTERM.
# It prints the load generator's figures and the server's own kick
# lateness (from each timer's deadline to its kick).
# Loopback only; every wait is bounded; the server also stops by itself
# (--duration) should this script die.
set -u

server=$1 loadgen=$2 tick_ms=$3 idle_ms=$4 timer=$5 conns=${6:-2000}
server_idle_ms=${7:-$idle_ms}
if [ "$timer" = uring ]; then
    loop_args="--loop uring"
else
    loop_args="--timer $timer"
fi
max_ms=$((idle_ms + tick_ms + 300))
name="rota-idle-server(tick ${tick_ms}ms, idle ${idle_ms}ms, $timer)"

# The test raises its own descriptor limit, within the hard limit.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((conns + 64)) ]; then
    echo "$name: descriptor limit $(ulimit -n) is too low for $conns connections"
    exit 1
fi

tmp=$(mktemp -d)
spid=
cleanup() {
    if [ -n "$spid" ] && kill -0 "$spid" 2>/dev/null; then
        kill -KILL "$spid" 2>/dev/null
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
    echo "$name: FAIL: $*"
    echo "--- server output"
    cat "$tmp/server.log" 2>/dev/null
    exit 1
}

"$server" --port 0 --port-file "$tmp/port" --threads 2 \
    --idle-timeout "${server_idle_ms}ms" --tick "${tick_ms}ms" $loop_args \
    --duration 40s >"$tmp/server.log" 2>&1 &
spid=$!

for _ in $(seq 100); do
    [ -s "$tmp/port" ] && break
    if ! kill -0 "$spid" 2>/dev/null; then
        if grep -q "io_uring_queue_init" "$tmp/server.log"; then
            echo "$name: SKIP: the kernel refuses io_uring here:"
            cat "$tmp/server.log"
            exit 77
        fi
        fail "the server exited at start"
    fi
    sleep 0.05
done
[ -s "$tmp/port" ] || fail "the server did not start listening within 5 s"
port=$(cat "$tmp/port")
baseline=$(ls "/proc/$spid/fd" | wc -l)

timeout 30 "$loadgen" --port "$port" --connections "$conns" --chatty 0.5 \
    --interval 500ms --duration 6s --idle-timeout "${idle_ms}ms" \
    --expect-min "${idle_ms}ms" --expect-max "${max_ms}ms" --quiet \
    >"$tmp/loadgen.log" 2>&1
lg=$?
cat "$tmp/loadgen.log"
[ "$lg" -eq 0 ] || fail "the load generator reported a failure (status $lg)"

# The chatty connections were closed by the load generator at its end: the
# server must notice and give every descriptor back.
now=-1
for _ in $(seq 60); do
    now=$(ls "/proc/$spid/fd" | wc -l)
    [ "$now" -eq "$baseline" ] && break
    sleep 0.05
done
[ "$now" -eq "$baseline" ] ||
    fail "the server holds $now descriptors, $baseline before the run"

kill -TERM "$spid"
for _ in $(seq 100); do
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
done
kill -0 "$spid" 2>/dev/null && fail "the server did not stop within 5 s of SIGTERM"
wait "$spid"
st=$?
spid=
[ "$st" -eq 0 ] || fail "the server exited with status $st"
grep -q "stopped (SIGTERM)" "$tmp/server.log" || fail "no clean-stop summary"
grep "stopped" "$tmp/server.log"
grep "kicks run after" "$tmp/server.log"
echo "$name: descriptors back to $baseline"
echo "$name: PASS"
