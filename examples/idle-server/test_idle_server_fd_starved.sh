#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_idle_server_fd_starved.sh - out of descriptors, the server neither
# spins nor stays deaf.
#
#   test_idle_server_fd_starved.sh SERVER LOADGEN [LOOP]
#
# LOOP is the server's --loop (epoll by default, or uring; then the test
# exits 77, skipped, where the kernel refuses io_uring).
#
# The server runs under `ulimit -n 64` with --max-conns far above that, so
# accept() fails with EMFILE once about 45 connections are open.  A
# level-triggered listener whose backlog is never drained would then wake
# epoll_wait() at once, forever: a core at 100%.  So:
#   1. 150 chatty clients for 3 s: the server keeps the ones it can hold,
#      refuses the others, and its CPU time over those 3 s stays small
#      (well under a second: a spinning worker burns about 3 s);
#   2. once they are gone, 20 new clients are all served (echoed, none
#      closed by the server): the server did not stop listening;
#   3. it stops cleanly on SIGTERM and logged the refusals.
# Loopback only; every wait is bounded.
set -u

server=$1 loadgen=$2 loop=${3:-epoll}
name="rota-idle-server out of descriptors ($loop)"
tmp=$(mktemp -d)
spid=
cleanup() {
    [ -n "$spid" ] && kill -0 "$spid" 2>/dev/null && kill -KILL "$spid"
    rm -rf "$tmp"
}
trap cleanup EXIT
failures=0
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then
        echo "ok: $what"
    else
        echo "FAIL: $what"
        failures=$((failures + 1))
    fi
}

# cpu_ms PID: user + system time of the process so far, in milliseconds.
cpu_ms() {
    local hz fields
    hz=$(getconf CLK_TCK)
    # Fields 14 and 15 of /proc/PID/stat, after the ")" that ends the name.
    fields=$(sed 's/.*) //' "/proc/$1/stat") || return 1
    set -- $fields
    echo $(((${12} + ${13}) * 1000 / hz))
}

(
    ulimit -n 64
    exec "$server" --port 0 --port-file "$tmp/port" --threads 2 \
        --max-conns 100000 --idle-timeout 30s --duration 40s --loop "$loop" \
        >"$tmp/server.log" 2>&1
) &
spid=$!
for _ in $(seq 100); do
    [ -s "$tmp/port" ] && break
    if [ "$loop" = uring ] && ! kill -0 "$spid" 2>/dev/null &&
        grep -q "io_uring_queue_init" "$tmp/server.log"; then
        echo "$name: SKIP: the kernel refuses io_uring here:"
        cat "$tmp/server.log"
        exit 77
    fi
    sleep 0.05
done
check "descriptor-starved server starts" test -s "$tmp/port"
port=$(cat "$tmp/port")

# 1. More clients than descriptors.
before=$(cpu_ms "$spid")
timeout 20 "$loadgen" --port "$port" --connections 150 --chatty 1 \
    --interval 100ms --duration 3s --concurrency 16 --quiet \
    >"$tmp/a.log" 2>&1
after=$(cpu_ms "$spid")
cat "$tmp/a.log"
spent=$((${after:-999999} - ${before:-0})) # unreadable: a failure
echo "$name: server CPU while starved: ${spent} ms (for about 3 s)"
closed=$(sed -n 's/.*chatty closed by the server: \([0-9]*\).*/\1/p' "$tmp/a.log")
check "some of the 150 were refused" test "${closed:-0}" -gt 0
check "the server did not spin (CPU ${spent} ms < 800 ms)" test "$spent" -lt 800

# 2. Descriptors are free again: new clients are all served.
sleep 0.5
timeout 20 "$loadgen" --port "$port" --connections 20 --chatty 1 \
    --interval 50ms --duration 1s --concurrency 8 --quiet \
    >"$tmp/b.log" 2>&1
cat "$tmp/b.log"
closed=$(sed -n 's/.*chatty closed by the server: \([0-9]*\).*/\1/p' "$tmp/b.log")
echoed=$(sed -n 's/.*echoed=\([0-9]*\).*/\1/p' "$tmp/b.log")
check "later clients are not refused" test "${closed:-1}" -eq 0
check "later clients are served (echoed bytes)" test "${echoed:-0}" -gt 100

# 3. A clean stop, with the refusals in the log.
sleep 1.2 # the statistics line reports refusals once a second
kill -TERM "$spid"
for _ in $(seq 100); do
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
done
wait "$spid"
check "server stops cleanly" grep -q "stopped (SIGTERM)" "$tmp/server.log"
check "refusals were logged" grep -q "out of file descriptors" "$tmp/server.log"
spid=
grep -E "refused|stopped" "$tmp/server.log" | tail -3

if [ "$failures" -ne 0 ]; then
    echo "--- server log"
    tail -n 5 "$tmp/server.log"
    echo "$name: $failures check(s) failed"
    exit 1
fi
echo "$name: PASS"
