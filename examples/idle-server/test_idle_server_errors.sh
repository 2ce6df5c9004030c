#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_idle_server_errors.sh - bad input gets a clear error, and running out
# of descriptors is survived.
#
#   test_idle_server_errors.sh SERVER LOADGEN
#
#   - an unknown flag, a bad duration: exit status 2 and a message naming it;
#   - a port in use: exit status 1 and "already in use";
#   - a non-loopback target for the load generator: refused;
#   - EMFILE: a server limited to 48 descriptors is sent 120 connections; it
#     refuses the extra ones (accept-and-close with its spare descriptor),
#     logs the refusal, keeps echoing on the connections it holds, and stops
#     cleanly on SIGTERM.
# Loopback only; every wait is bounded.
set -u

server=$1 loadgen=$2
name="rota-idle-server errors"
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do
        kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
    done
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

# start_server NAME ARGS...: start in the background, wait for its port.
start_server() {
    local tag=$1
    shift
    "$server" --port-file "$tmp/$tag.port" --duration 30s "$@" \
        >"$tmp/$tag.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        [ -s "$tmp/$tag.port" ] && return 0
        sleep 0.05
    done
    return 1
}

# stop_server PID LOG: SIGTERM, bounded wait, status 0 and a summary.
stop_server() {
    local pid=$1 log=$2
    kill -TERM "$pid"
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
    wait "$pid" && grep -q "stopped (SIGTERM)" "$log"
}

# 1. Unknown flag and bad values.
"$server" --frobnicate >"$tmp/out" 2>&1
check "unknown flag exits 2" test $? -eq 2
check "unknown flag is named" grep -q "unknown option '--frobnicate'" "$tmp/out"
"$server" --idle-timeout soon >"$tmp/out" 2>&1
check "bad duration exits 2" test $? -eq 2
check "bad duration is explained" grep -q "is not a duration" "$tmp/out"
"$server" --timer kqueue >"$tmp/out" 2>&1
check "bad timer mode exits 2" test $? -eq 2
"$server" --loop kqueue >"$tmp/out" 2>&1
check "bad loop exits 2" test $? -eq 2
check "bad loop is named" grep -q "'kqueue' is not a loop" "$tmp/out"
"$server" --loop uring --timer timerfd >"$tmp/out" 2>&1
check "--timer timerfd with --loop uring exits 2" test $? -eq 2
"$loadgen" --port 9 --host 10.1.2.3 >"$tmp/out" 2>&1
check "load generator refuses a non-loopback host" test $? -eq 2
check "... and says why" grep -q "not a loopback address" "$tmp/out"
"$server" --help >"$tmp/out" 2>&1
check "--help exits 0" test $? -eq 0

# 2. Port in use.
check "first server starts" start_server a --port 0 --threads 1 --quiet
port=$(cat "$tmp/a.port")
"$server" --port "$port" --threads 1 --duration 5s >"$tmp/b.log" 2>&1
check "second server on the same port exits 1" test $? -eq 1
check "... saying the port is in use" grep -q "already in use" "$tmp/b.log"
check "first server stops cleanly" stop_server "${pids[0]}" "$tmp/a.log"

# 3. Out of descriptors: 48 in all (the server cannot raise it), so about
# 30 connections fit; --max-conns is set high so EMFILE is what stops it.
(
    ulimit -n 48
    exec "$server" --port 0 --port-file "$tmp/c.port" --threads 2 \
        --max-conns 100000 --idle-timeout 30s --duration 30s \
        >"$tmp/c.log" 2>&1
) &
pids+=($!)
cpid=$!
for _ in $(seq 100); do
    [ -s "$tmp/c.port" ] && break
    sleep 0.05
done
check "descriptor-starved server starts" test -s "$tmp/c.port"
timeout 20 "$loadgen" --port "$(cat "$tmp/c.port")" --connections 120 \
    --chatty 1 --interval 100ms --duration 2s --concurrency 16 --quiet \
    >"$tmp/lg.log" 2>&1
cat "$tmp/lg.log"
sleep 1.2 # let the statistics line report the refusals
check "server survived EMFILE" kill -0 "$cpid"
check "refusals were logged" grep -q "out of file descriptors (EMFILE)" "$tmp/c.log"
closed=$(sed -n 's/.*chatty closed by the server: \([0-9]*\).*/\1/p' "$tmp/lg.log")
echoed=$(sed -n 's/.*echoed=\([0-9]*\).*/\1/p' "$tmp/lg.log")
check "some connections were refused" test "${closed:-0}" -gt 0
check "the others were served (echoed bytes)" test "${echoed:-0}" -gt 100
check "not all were refused" test "${closed:-120}" -lt 120
check "descriptor-starved server stops cleanly" stop_server "$cpid" "$tmp/c.log"
grep -E "refused|stopped" "$tmp/c.log" | tail -3

if [ "$failures" -ne 0 ]; then
    echo "--- server logs"
    tail -n 5 "$tmp"/*.log
    echo "$name: $failures check(s) failed"
    exit 1
fi
echo "$name: PASS"
