#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_idle_server_shrink.sh - the idle server's --idle-min on loopback:
# idle timeouts that shrink as connections approach --max-conns.
#
#   test_idle_server_shrink.sh SERVER LOADGEN [SHRINK]
#
# Starts SERVER (2 workers, tick 100 ms, --idle-timeout 4s, --max-conns
# 1000, and --idle-min 1s unless SHRINK is "off"), opens 950 connections
# with LOADGEN, 90% of them writing every 0.5 s and the rest silent after
# their first byte, for 6 s.  With 855 to 950 connections open the idle
# timeout is between 1.87 s and 1.3 s (it falls in a straight line from 4 s
# at 500 connections to 1 s at 1000), so the load generator must see:
#   - every silent connection closed between 1 s (the floor: never sooner)
#     and 2.6 s after its last byte, long before the 4 s idle timeout;
#   - no chatty connection ever closed.
# With SHRINK "off" (the planted fault) the silent connections live 4 s and
# the load generator must report them closed later than 2.6 s.
set -u

server=$1 loadgen=$2 shrink=${3:-on}
name="rota-idle-server(--idle-min, shrink $shrink)"
min_args="--idle-min 1s"
[ "$shrink" = off ] && min_args=""

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 2100 ]; then
    echo "$name: descriptor limit $(ulimit -n) is too low for 950 connections"
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

# shellcheck disable=SC2086
"$server" --port 0 --port-file "$tmp/port" --threads 2 --tick 100ms \
    --idle-timeout 4s $min_args --max-conns 1000 --duration 40s \
    >"$tmp/server.log" 2>&1 &
spid=$!
for _ in $(seq 100); do
    [ -s "$tmp/port" ] && break
    kill -0 "$spid" 2>/dev/null || fail "the server exited at start"
    sleep 0.05
done
[ -s "$tmp/port" ] || fail "the server did not start listening within 5 s"
port=$(cat "$tmp/port")

timeout 30 "$loadgen" --port "$port" --connections 950 --chatty 0.9 \
    --interval 500ms --duration 6s --idle-timeout 4s \
    --expect-min 1000ms --expect-max 2600ms --quiet >"$tmp/loadgen.log" 2>&1
lg=$?
cat "$tmp/loadgen.log"
kill -TERM "$spid"
wait "$spid"
st=$?
spid=
grep "kicks run after" "$tmp/server.log"
[ "$lg" -eq 0 ] || fail "the load generator reported a failure (status $lg)"
[ "$st" -eq 0 ] || fail "the server exited with status $st"
echo "$name: PASS"
