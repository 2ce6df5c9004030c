#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_ttl_cache.sh - drive the ttl-cache example with redis-cli on loopback
# and check Redis's TTL semantics on the real clock, with generous slack.
#
#   test_ttl_cache.sh PATH/TO/rota-ttl-cache
#
# Exits 77 (CTest: skipped) when redis-cli is not installed (Debian package
# redis-tools).  Talks only to 127.0.0.1; the whole run takes a few seconds
# and every wait is bounded.  Ends with "N passed, N failed".
set -u

server=${1:?usage: test_ttl_cache.sh PATH/TO/rota-ttl-cache}
if ! command -v redis-cli >/dev/null 2>&1; then
    echo "SKIP: redis-cli not found (apt-get install redis-tools)"
    exit 77
fi

tmp=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

"$server" --port 0 --proto-max-bulk-len 1mb >"$tmp/out" 2>"$tmp/err" &
pid=$!
port=
for _ in $(seq 50); do # up to 5 s for the "listening on" line
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$tmp/out")
    [ -n "$port" ] && break
    sleep 0.1
done
if [ -z "$port" ]; then
    echo "FAIL: the server did not start"; cat "$tmp/err"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "server pid $pid on 127.0.0.1:$port"

passed=0 failed=0
cli() { timeout 5 redis-cli -h 127.0.0.1 -p "$port" "$@" 2>&1; }
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
# expect "description" "expected output" command...
expect() {
    local what=$1 want=$2
    shift 2
    local got
    got=$(cli "$@")
    if [ "$got" = "$want" ]; then ok; else bad "$what: '$*' gave '$got', want '$want'"; fi
}
# between "description" low high command...: an integer reply in [low, high]
between() {
    local what=$1 lo=$2 hi=$3
    shift 3
    local got
    got=$(cli "$@")
    if [[ "$got" =~ ^-?[0-9]+$ ]] && [ "$got" -ge "$lo" ] && [ "$got" -le "$hi" ]; then
        ok
    else
        bad "$what: '$*' gave '$got', want $lo..$hi"
    fi
}
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$pid/status"; }

# --- basics
expect "ping" "PONG" PING
expect "set" "OK" SET greeting hello
expect "get" "hello" GET greeting
expect "missing key" "" GET nobody
expect "dbsize" "1" DBSIZE
expect "del" "OK" SET d2 x
expect "del counts" "1" DEL greeting nobody
expect "binary-safe values" "OK" SET sp "a b  c"
expect "binary-safe get" "a b  c" GET sp

# --- keys vanish on time
expect "set px" "OK" SET short v PX 600
between "pttl after set" 1 600 PTTL short
expect "present before its time" "v" GET short
sleep 1.0
expect "gone after its time" "" GET short
expect "exists after expiry" "0" EXISTS short
expect "ttl of an expired key" "-2" TTL short

# --- TTL counts down
expect "set ex" "OK" SET countdown v EX 3
expect "ttl right after set" "3" TTL countdown
sleep 1.2
between "ttl a second later" 1 2 TTL countdown
between "pttl a second later" 1 1850 PTTL countdown

# --- PERSIST stops expiry
expect "set px for persist" "OK" SET kept v PX 300
expect "persist" "1" PERSIST kept
expect "ttl after persist" "-1" TTL kept
expect "persist without ttl" "0" PERSIST kept
expect "persist missing" "0" PERSIST nobody
sleep 0.6
expect "persisted key survives" "v" GET kept

# --- SET without EX clears the TTL (as Redis)
expect "set with ttl" "OK" SET over v1 EX 100
expect "ttl before overwrite" "100" TTL over
expect "overwrite without ex" "OK" SET over v2
expect "ttl cleared" "-1" TTL over
expect "new value" "v2" GET over
expect "keepttl keeps it" "OK" SET over v3 EX 50
expect "keepttl" "OK" SET over v4 KEEPTTL
expect "ttl kept" "50" TTL over

# --- EXPIRE / PEXPIRE
expect "expire missing" "0" EXPIRE nobody 10
expect "expire" "1" EXPIRE kept 100
expect "ttl after expire" "100" TTL kept
expect "pexpire" "1" PEXPIRE kept 200
sleep 0.5
expect "pexpire'd key gone" "" GET kept
expect "set for expire 0" "OK" SET zero v
expect "expire 0 deletes" "1" EXPIRE zero 0
expect "deleted by expire 0" "0" EXISTS zero
expect "nx on existing" "" SET over x NX
expect "xx on missing" "" SET nobody x XX

# --- many keys expire through the wheel
cli FLUSHALL >/dev/null
for i in $(seq 1 500); do
    printf 'SET k:%d v PX 1000\r\n' "$i"
done >"$tmp/cmds"
for i in $(seq 1 20); do
    printf 'SET p:%d v\r\n' "$i"
done >>"$tmp/cmds"
timeout 5 redis-cli -h 127.0.0.1 -p "$port" --pipe <"$tmp/cmds" >"$tmp/pipe" 2>&1
expect "500 expiring + 20 persistent keys" "520" DBSIZE
sleep 1.5
expect "the 500 expired, the 20 stayed" "20" DBSIZE

# --- command errors get a reply and the connection stays usable; a protocol
# error gets a reply and closes it
expect "unknown command" "ERR unknown command 'FOO', with args beginning with: " FOO
expect "wrong arity" "ERR wrong number of arguments for 'get' command" GET
expect "bad expire" "ERR invalid expire time in 'set' command" SET x v EX 0
expect "not a number" "ERR value is not an integer or out of range" SET x v EX abc
expect "syntax" "ERR syntax error" SET x v BOGUS
# A protocol error is answered, then the connection is closed: the PING
# after it never runs (test_protocol.py covers every malformed case).
raw=$(
    exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
    printf '*abc\r\nPING\r\n' >&3
    timeout 2 cat <&3
)
want=$'-ERR Protocol error: invalid multibulk length\r'
if [ "$raw" = "$want" ]; then ok; else bad "malformed input: got $(printf %q "$raw")"; fi

# --- an oversized request is refused without unbounded memory growth
rss0=$(rss_kb)
raw=$(
    exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
    printf '*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$999999999\r\n' >&3
    timeout 2 cat <&3
)
if [ "$raw" = $'-ERR Protocol error: invalid bulk length\r' ]; then ok; else bad "oversized bulk: $(printf %q "$raw")"; fi
# 20 MB on one line with no end: refused after 64 KiB, connection closed.
( head -c 20000000 /dev/zero | tr '\0' x >"/dev/tcp/127.0.0.1/$port" ) 2>/dev/null
rss1=$(rss_kb)
if [ $((rss1 - rss0)) -lt 8192 ]; then ok; else bad "RSS grew from $rss0 to $rss1 kB"; fi
expect "server still serves" "PONG" PING
# A large value within the limit works.
head -c 500000 /dev/zero | tr '\0' a >"$tmp/big"
got=$(timeout 5 redis-cli -h 127.0.0.1 -p "$port" -x SET bigval <"$tmp/big" 2>&1)
[ "$got" = "OK" ] && ok || bad "500 kB value: $got"
got=$(cli GET bigval | wc -c)
[ "$got" -eq 500001 ] && ok || bad "500 kB value read back as $got bytes"

# --- graceful stop frees everything and exits 0
kill -TERM "$pid"
status=0
for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
done
wait "$pid" || status=$?
pid=
[ "$status" -eq 0 ] && ok || bad "server exit status $status after SIGTERM"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
