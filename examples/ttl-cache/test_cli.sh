#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_cli.sh - rota-ttl-cache's command line and password, as an operator
# and redis-cli see them.
#
#   test_cli.sh PATH/TO/rota-ttl-cache
#
# --help on stdout with status 0; every bad flag named with its value, on
# stderr, status 2; a listen error naming the address and port (a port in
# use, an address not on this machine), status 1; the warning at start
# when listening beyond loopback without a password; the --requirepass
# value wiped from the command line ps shows, and the password from the
# environment; redis-cli with -a, --user/--pass, REDISCLI_AUTH and HELLO.
# The redis-cli part is skipped when redis-cli is missing.  Ends with
# "N passed, N failed".
set -u

server=${1:?usage: test_cli.sh PATH/TO/rota-ttl-cache}
tmp=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT

passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }
check() { # check "what" condition...
    local what=$1
    shift
    if "$@"; then ok; else bad "$what"; fi
}

# ------------------------------------------------------------- --help
"$server" --help >"$tmp/out" 2>"$tmp/err"
rc=$?
check "--help exits 0 (got $rc)" [ "$rc" -eq 0 ]
check "--help writes the usage to stdout" grep -q '^usage: rota-ttl-cache' "$tmp/out"
check "--help writes nothing to stderr" [ ! -s "$tmp/err" ]
for flag in --bind --port --requirepass --protected-mode --max-clients \
    --proto-max-bulk-len --client-query-buffer-limit --maxmemory \
    --maxmemory-policy --maxmemory-samples ROTA_TTL_CACHE_REQUIREPASS; do
    check "--help mentions $flag" grep -q -- "$flag" "$tmp/out"
done

# ------------------------------------------------- bad flags and values
# bad "expected stderr" args...: status 2, the message on stderr, nothing
# on stdout
bad_flag() {
    local want=$1
    shift
    timeout 5 "$server" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    local got
    got=$(cat "$tmp/err")
    if [ "$rc" -eq 2 ] && [ "$got" = "rota-ttl-cache: $want (try --help)" ] &&
        [ ! -s "$tmp/out" ]; then
        ok
    else
        bad "'$*': status $rc, stderr '$got', want 2 and 'rota-ttl-cache: $want (try --help)'"
    fi
}
bad_flag "unknown option '--bogus'" --bogus
bad_flag "unknown option '--port=6380'" --port=6380
bad_flag "unexpected argument 'extra'" extra
bad_flag "option --port needs a value" --port
bad_flag "--port: 'abc' is not a number" --port abc
bad_flag "--port: 65536 is out of range [0, 65535]" --port 65536
bad_flag "--bind: '1.2.3' is not an IPv4 address" --bind 1.2.3
bad_flag "--bind: 'localhost' is not an IPv4 address" --bind localhost
bad_flag "--protected-mode: 'maybe' is not yes or no" --protected-mode maybe
bad_flag "--max-clients: 0 is out of range [1, 1000000]" --max-clients 0
bad_flag "--maxmemory: '10q' is not a size (examples: 100, 10kb, 5mb, 1gb)" --maxmemory 10q
bad_flag "--proto-max-bulk-len: '10' is below the least allowed, 1024" --proto-max-bulk-len 10
bad_flag "--client-query-buffer-limit: '1kb' is below the least allowed, 1048576" --client-query-buffer-limit 1kb
bad_flag "--maxmemory-policy: 'lru' is not a policy (noeviction, allkeys-lru, allkeys-random, volatile-lru, volatile-random, volatile-ttl)" --maxmemory-policy lru
bad_flag "--maxmemory-samples: 65 is out of range [1, 64]" --maxmemory-samples 65
bad_flag "option --requirepass needs a value" --port 0 --requirepass

# ------------------------------------------------------ starting up
# start NAME args...: the server in the background, its port in $port
start() {
    local name=$1
    shift
    "$server" --port 0 "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
    pids+=($!)
    port=
    for _ in $(seq 50); do
        port=$(sed -n 's/.*listening on [0-9.]*:\([0-9][0-9]*\).*/\1/p' "$tmp/$name.out")
        [ -n "$port" ] && return 0
        sleep 0.1
    done
    return 1
}

check "a server starts" start plain
plain_port=$port
timeout 5 "$server" --port "$plain_port" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "port in use: status 1 (got $rc)" [ "$rc" -eq 1 ]
check "port in use: the address, the port and why ($(cat "$tmp/err"))" \
    grep -qx "rota-ttl-cache: cannot listen on 127.0.0.1:$plain_port: the port is already in use (choose another with --port)" "$tmp/err"
timeout 5 "$server" --bind 203.0.113.7 --port 0 >"$tmp/out" 2>"$tmp/err"
rc=$?
check "an address not on this machine: status 1 and why ($(cat "$tmp/err"))" \
    test "$rc" -eq 1 -a "$(cat "$tmp/err")" = "rota-ttl-cache: cannot listen on 203.0.113.7:0: no such local address (see --bind)"
check "no warning on loopback" [ ! -s "$tmp/plain.err" ]

check "a server on 0.0.0.0 starts" start any --bind 0.0.0.0
check "its warning: no password, protected mode ($(cat "$tmp/any.err"))" \
    grep -q "warning: listening on 0.0.0.0:$port without a password: protected mode refuses every client not on loopback" "$tmp/any.err"
check "a server on 0.0.0.0 without protected mode starts" \
    start open --bind 0.0.0.0 --protected-mode no
check "its warning: anyone can reach it ($(cat "$tmp/open.err"))" \
    grep -q "warning: listening on 0.0.0.0:$port without a password and with protected mode off: anyone who can reach this port" "$tmp/open.err"
check "a server on 0.0.0.0 with a password starts" \
    start guarded --bind 0.0.0.0 --requirepass 'hunter2 pass'
check "no warning with a password" [ ! -s "$tmp/guarded.err" ]
guarded_pid=${pids[-1]}
guarded_port=$port
cmdline=$(tr '\0' ' ' </proc/"$guarded_pid"/cmdline)
check "--requirepass's value is gone from ps ($cmdline)" \
    eval '! grep -q hunter2 /proc/$guarded_pid/cmdline'
check "the password is in no output" eval '! grep -rq hunter2 "$tmp"'

ROTA_TTL_CACHE_REQUIREPASS='env pass' start envpw
env_port=$port

if ! command -v redis-cli >/dev/null 2>&1; then
    echo "SKIP (part): redis-cli not found (apt-get install redis-tools)"
else
    cli() { timeout 5 redis-cli --no-auth-warning -h 127.0.0.1 "$@" 2>&1; }
    expect() {
        local what=$1 want=$2
        shift 2
        local got
        got=$(cli "$@")
        if [ "$got" = "$want" ]; then ok; else bad "$what: '$*' gave '$got', want '$want'"; fi
    }
    expect "no password: NOAUTH" "NOAUTH Authentication required." -p "$guarded_port" PING
    expect "-a" PONG -p "$guarded_port" -a 'hunter2 pass' PING
    wrong="$(printf 'AUTH failed: WRONGPASS invalid username-password pair or user is disabled.\nNOAUTH Authentication required.')"
    expect "-a wrong" "$wrong" -p "$guarded_port" -a wrong PING
    expect "--user default --pass" PONG -p "$guarded_port" --user default --pass 'hunter2 pass' PING
    expect "--user bob" "$wrong" -p "$guarded_port" --user bob --pass 'hunter2 pass' PING
    got=$(REDISCLI_AUTH='hunter2 pass' cli -p "$guarded_port" SET k v)
    check "REDISCLI_AUTH ($got)" [ "$got" = OK ]
    got=$(cli -p "$guarded_port" HELLO 2 AUTH default 'hunter2 pass' SETNAME cli | sed -n 2p)
    check "HELLO 2 AUTH ... SETNAME ($got)" [ "$got" = redis ]
    got=$(cli -3 -p "$guarded_port" -a 'hunter2 pass' PING)
    check "redis-cli -3: NOPROTO, then served in RESP2 ($got)" \
        [ "$got" = "$(printf 'HELLO 3 failed: NOPROTO unsupported protocol version\nPONG')" ]
    expect "the environment's password" PONG -p "$env_port" -a 'env pass' PING
    expect "the environment's password, wrong" "$wrong" -p "$env_port" -a 'hunter2 pass' PING
    expect "CLIENT SETNAME / GETNAME in one connection" "$(printf 'OK\nops')" \
        -p "$plain_port" <<<"$(printf 'CLIENT SETNAME ops\nCLIENT GETNAME\n')"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
