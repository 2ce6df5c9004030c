#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test_descriptors.sh - rota-ttl-cache out of descriptors, without spinning.
#
#   test_descriptors.sh PATH/TO/rota-ttl-cache
#
# The server is started under `ulimit -n 64`.  Claims:
#   1. it lowers --max-clients to fit (64 - 32 = 32, as Redis does) and
#      says so; the 33rd client on gets "-ERR max number of clients
#      reached" and is closed;
#   2. when accept() runs out of descriptors anyway (the soft limit
#      lowered under the running server with prlimit), waiting clients are
#      refused with the same error through the spare descriptor;
#   3. when even that cannot free one, the listener is parked: with
#      clients waiting in the backlog the server uses almost no CPU
#      (a level-triggered listener that cannot accept would spin a core),
#      and serves them once the limit allows again (the back-off retries
#      at most a second apart; a closing client retries at once).
# CPU time is read from /proc/PID/stat; each claim holds its state for a
# second and allows 0.25 s of CPU.  Ends with "N passed, N failed".
set -u

server=${1:?usage: test_descriptors.sh PATH/TO/rota-ttl-cache}
here=$(cd "$(dirname "$0")" && pwd)
python=$(command -v python3) || { echo "SKIP: python3 not found"; exit 77; }
if ! command -v prlimit >/dev/null 2>&1; then
    echo "SKIP: prlimit not found (util-linux)"
    exit 77
fi

tmp=$(mktemp -d)
pid=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# The low limit applies to the server only (a subshell), not to the test.
(
    ulimit -n 64 || exit 1
    exec "$server" --port 0 >"$tmp/out" 2>"$tmp/err"
) &
pid=$!
port=
for _ in $(seq 50); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$tmp/out")
    [ -n "$port" ] && break
    sleep 0.1
done
if [ -z "$port" ]; then
    echo "FAIL: the server did not start"; cat "$tmp/err"
    echo "0 passed, 1 failed"
    exit 1
fi
echo "server pid $pid on 127.0.0.1:$port, ulimit -n 64"

PYTHONPATH=$here "$python" - "$pid" "$port" "$tmp/err" <<'EOF'
import os, socket, subprocess, sys, time
from cachetest import Tally, encode

pid, port, errfile = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
t = Tally()
MAXC = b"-ERR max number of clients reached\r\n"

def cpu():
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

def connect():
    s = socket.create_connection(("127.0.0.1", port), 5)
    s.settimeout(3)
    return s

def ask(s):
    """PING; the reply, b'' if closed without one."""
    try:
        s.sendall(encode("PING"))
    except OSError:
        pass
    buf = b""
    try:
        while not buf.endswith(b"\r\n"):
            d = s.recv(100)
            if not d:
                break
            buf += d
    except (socket.timeout, ConnectionResetError):
        pass
    return buf

def nofile(soft):
    subprocess.run(["prlimit", "--pid", str(pid),
                    "--nofile=%d:%d" % (soft, 64)], check=True)

def open_fds():
    return len(os.listdir("/proc/%d/fd" % pid))

# 1. max-clients lowered to 32 at startup.
with open(errfile) as f:
    err = f.read()
t.check("max-clients lowered to 32" in err, "startup message: %r" % err)
clients = [connect() for _ in range(40)]
replies = [ask(s) for s in clients]
t.equal(replies.count(b"+PONG\r\n"), 32, "32 clients served")
t.equal(replies.count(MAXC), 8, "8 refused with Redis's error")
c0 = cpu()
time.sleep(1)
t.check(cpu() - c0 < 0.25, "idle at max-clients: %.2f s CPU" % (cpu() - c0))
for s in clients:
    s.close()
time.sleep(0.3)

# 2. accept() out of descriptors: refused through the spare one.
base = open_fds()
nofile(base + 10)
clients = [connect() for _ in range(20)]
replies = [ask(s) for s in clients]
served = replies.count(b"+PONG\r\n")
t.check(8 <= served <= 12, "EMFILE: %d clients served below the limit" % served)
t.equal(replies.count(MAXC), 20 - served, "the others refused with the error")
c0 = cpu()
time.sleep(1)
t.check(cpu() - c0 < 0.25, "after EMFILE: %.2f s CPU" % (cpu() - c0))

# 3. Not even the spare helps: the listener parks, nothing spins.
nofile(3)  # below the spare descriptor's number: it cannot help
waiting = [socket.create_connection(("127.0.0.1", port), 5) for _ in range(5)]
c0 = cpu()
time.sleep(1.5)
used = cpu() - c0
t.check(used < 0.25, "5 clients waiting, no descriptor: %.2f s CPU" % used)
nofile(64)  # room again: the back-off (at most 1 s) retries the listener
for s in waiting:
    s.settimeout(5)
replies = [ask(s) for s in waiting]
t.equal(replies, [b"+PONG\r\n"] * 5, "the waiting clients are served after")
for s in clients + waiting:
    s.close()
t.finish()
EOF
status=$?
kill -TERM "$pid"
wait "$pid"
exit_status=$?
pid=
if [ "$exit_status" -ne 0 ]; then
    echo "FAIL: server exit status $exit_status after SIGTERM"
    status=1
fi
exit "$status"
