#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_protocol.py - rota-ttl-cache on malformed, cut and oversized input.

    test_protocol.py PATH/TO/rota-ttl-cache

Each expected reply is what redis-server 7.0 answers (diff_redis.py checks
the same cases against a real one).  Claims:
  - every protocol error is answered with Redis's text and closes the
    connection, and nothing sent after the error runs (no injection);
  - a client that shuts down its sending side gets every reply;
  - a client reset in the middle of a command changes nothing;
  - Redis's default limits (512 MB bulks, INT_MAX arguments, 64 KiB inline
    lines and headers), and the flags that lower them;
  - expiry arithmetic never overflows: Redis's range checks, no negative
    TTL for a live key;
  - APPEND grows a value in amortised O(1): 100 one-byte appends to a
    32 MB value take well under a second (4.8 s when each copied the
    value; Redis 0.01 s), a run of 20,000 appends gives the right bytes
    (reading the 32 MB value back here would cost more than the test),
    and the room kept for growth stays within an eighth of the value.
Standard library only; ends with "N passed, N failed".
"""
import socket
import struct
import sys
import time

from cachetest import Server, Tally, encode, raw_exchange

LLONG_MAX = 2**63 - 1
LLONG_MIN = -2**63

t = Tally()
binary = sys.argv[1]
srv = Server.cache(binary)
port = srv.port
c = srv.connect()

# ----------------------------------------------------------- injection
PE = b"-ERR Protocol error: "
cases = [
    ("a bad bulk length inside SET, then FLUSHALL",
     b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$abc\r\nFLUSHALL\r\n",
     PE + b"invalid bulk length\r\n"),
    ("an inline command where a bulk belongs",
     b"*2\r\n$4\r\nECHO\r\n#SET injected 1\r\nSET injected 1\r\n",
     PE + b"expected '$', got '#'\r\n"),
    ("*abc", b"*abc\r\nSET injected 1\r\n", PE + b"invalid multibulk length\r\n"),
    ("$-1 as a request bulk", b"*1\r\n$-1\r\nSET injected 1\r\n",
     PE + b"invalid bulk length\r\n"),
    ("$x", b"*2\r\n$x\r\nSET injected 1\r\n", PE + b"invalid bulk length\r\n"),
    ("a '+' where a bulk belongs", b"*1\r\n+PING\r\nSET injected 1\r\n",
     PE + b"expected '$', got '+'\r\n"),
    ("* 1", b"* 1\r\nSET injected 1\r\n", PE + b"invalid multibulk length\r\n"),
    ("a 100-digit array length", b"*" + b"9" * 100 + b"\r\nSET injected 1\r\n",
     PE + b"invalid multibulk length\r\n"),
    ("a 100-digit bulk length",
     b"*1\r\n$" + b"1" * 100 + b"\r\nSET injected 1\r\n",
     PE + b"invalid bulk length\r\n"),
    ("*01", b"*01\r\n$4\r\nPING\r\nSET injected 1\r\n",
     PE + b"invalid multibulk length\r\n"),
    ("$+4", b"*1\r\n$+4\r\nPING\r\nSET injected 1\r\n",
     PE + b"invalid bulk length\r\n"),
    ("an array length above INT_MAX", b"*2147483648\r\nSET injected 1\r\n",
     PE + b"invalid multibulk length\r\n"),
    ("unbalanced quotes inline", b"SET \"injected 1\r\nSET injected 1\r\n",
     PE + b"unbalanced quotes in request\r\n"),
    ("a closing quote not followed by a blank",
     b"SET \"a\"b 1\r\nSET injected 1\r\n",
     PE + b"unbalanced quotes in request\r\n"),
    ("bulk data longer than announced",
     b"*2\r\n$4\r\nECHO\r\n$1\r\nabc\r\nSET injected 1\r\n",
     PE + b"expected CRLF after bulk\r\n"),
]
c.call("SET", "keep", "1")
for what, data, want in cases:
    got = raw_exchange(port, b"*1\r\n$4\r\nPING\r\n" + data)
    t.equal(got, b"+PONG\r\n" + want, what + ": reply, then closed")
    t.equal(c.call("GET", "injected"), b"$-1\r\n", what + ": nothing injected")
t.equal(c.call("GET", "keep"), b"$1\r\n1\r\n", "FLUSHALL after the error never ran")

# A request split at every byte still parses.
req = encode("SET", "split", "a\r\nb") + encode("GET", "split")
s = socket.create_connection(("127.0.0.1", port))
for i in range(len(req)):
    s.sendall(req[i:i + 1])
    time.sleep(0.001)
s.shutdown(socket.SHUT_WR)
buf = b""
while True:
    d = s.recv(4096)
    if not d:
        break
    buf += d
s.close()
t.equal(buf, b"+OK\r\n$4\r\na\r\nb\r\n", "a request sent a byte at a time")

# ------------------------------------------------------------ half-close
got = raw_exchange(port, b"PING\r\n" * 50, half_close=True)
t.equal(got, b"+PONG\r\n" * 50, "50 PINGs then SHUT_WR: 50 replies")
big = b"x" * (1 << 20)
c.call("SET", "big", big)
got = raw_exchange(port, encode("GET", "big") * 40, timeout=10, half_close=True)
t.equal(len(got), 40 * (len(big) + 12), "40 MiB of replies after SHUT_WR")
got = raw_exchange(port, encode("SET", "hc", "1") + b"*2\r\n$3\r\nGET\r\n$2\r\nh",
                   half_close=True)
t.equal(got, b"+OK\r\n", "a cut request after SHUT_WR: the whole ones answered")

# ------------------------------------------------------ reset mid-command
for cut in (b"*3\r\n$3\r\nSET\r\n$5\r\nreset\r\n$10\r\nabc",
            b"*3\r\n$3\r\nSET\r\n$5\r\nreset\r\n$1000000\r\n" + b"z" * 50000):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(cut)
    time.sleep(0.05)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # RST
    time.sleep(0.05)
    t.equal(c.call("EXISTS", "reset"), b":0\r\n", "reset mid-command: no key")
t.equal(c.call("PING"), b"+PONG\r\n", "server alive after resets")

# ----------------------------------------------------------- Redis limits
keys = ["k%d" % i for i in range(2000)]
t.equal(c.call("DEL", *keys), b":0\r\n", "DEL of 2,000 keys")
t.equal(c.call("MSET", *[x for k in keys for x in (k, "v")]), b"+OK\r\n",
        "MSET of 2,000 pairs (4,001 arguments)")
t.equal(c.call("DEL", *keys), b":2000\r\n", "and DEL of them")
t.equal(c.call("SET", "mib", big), b"+OK\r\n", "a 1 MiB value")
t.equal(c.call("STRLEN", "mib"), b":1048576\r\n", "stored whole")
t.equal(raw_exchange(port, b"*1\r\n$536870913\r\n"),
        PE + b"invalid bulk length\r\n", "a bulk of 512 MB + 1 is refused")
t.equal(raw_exchange(port, b"*1\r\n$536870912\r\nabc", timeout=0.3),
        b"<open>", "a bulk of 512 MB is accepted (the server waits for it)")
# Announcing big bulks reserves nothing ahead of the data.
vm0 = srv.rss_kb("VmSize")
held = [srv.connect() for _ in range(10)]
for h in held:
    h.send(b"*1\r\n$536870912\r\n" + b"d" * 100000)
time.sleep(0.3)
vm1 = srv.rss_kb("VmSize")
t.check(vm1 - vm0 < 64 * 1024, "10 clients announcing 512 MB bulks: "
        "virtual size %d -> %d kB" % (vm0, vm1))
for h in held:
    h.close()
t.equal(raw_exchange(port, b"*2147483647\r\n", timeout=0.3), b"<open>",
        "an array of INT_MAX elements is accepted (and waited for)")
t.equal(raw_exchange(port, b"x" * 70000), PE + b"too big inline request\r\n",
        "an inline line of 70,000 bytes without its end")
t.equal(raw_exchange(port, b"*" + b"1" * 70000),
        PE + b"too big mbulk count string\r\n", "a 70,000-byte array header")
t.equal(raw_exchange(port, b"*1\r\n$" + b"1" * 70000),
        PE + b"too big bulk count string\r\n", "a 70,000-byte bulk header")
rss0 = srv.rss_kb()
for _ in range(3):
    raw_exchange(port, b"y" * 20000000, timeout=2)
t.check(srv.rss_kb() - rss0 < 8192,
        "RSS flat after 60 MB of unterminated garbage (%d -> %d kB)"
        % (rss0, srv.rss_kb()))

# ------------------------------------------------------------ arithmetic
t.equal(c.call("SET", "h", "v", "EX", "20000000000"), b"+OK\r\n", "EX 2e10")
t.equal(c.call("TTL", "h"), b":20000000000\r\n", "TTL of EX 2e10")
ttl_err = "-ERR invalid expire time in '%s' command\r\n"
for args, cmd in [
        (("SET", "k", "v", "PX", LLONG_MAX), "set"),
        (("SET", "k", "v", "EX", LLONG_MAX // 1000 + 1), "set"),
        (("SET", "k", "v", "EX", LLONG_MAX // 1000), "set"),
        (("SET", "k", "v", "EX", 0), "set"),
        (("SET", "k", "v", "PX", -1), "set"),
        (("SET", "k", "v", "EXAT", LLONG_MAX // 1000 + 1), "set"),
        (("SETEX", "k", -5, "v"), "setex"),
        (("PSETEX", "k", 0, "v"), "psetex"),
        (("GETEX", "h", "PX", LLONG_MAX), "getex")]:
    t.equal(c.call(*args), (ttl_err % cmd).encode(), " ".join(map(str, args)))
c.call("SET", "k", "v")
for args, cmd in [
        (("PEXPIRE", "k", LLONG_MAX), "pexpire"),
        (("EXPIRE", "k", LLONG_MIN), "expire"),
        (("EXPIRE", "k", LLONG_MAX // 1000 + 1), "expire"),
        (("EXPIRE", "k", LLONG_MAX // 1000), "expire"),
        (("EXPIREAT", "k", LLONG_MIN // 1000 - 1), "expireat")]:
    t.equal(c.call(*args), (ttl_err % cmd).encode(), " ".join(map(str, args)))
t.equal(c.call("TTL", "k"), b":-1\r\n", "rejected expiries left the key alone")
t.equal(c.call("PEXPIREAT", "k", LLONG_MAX), b":1\r\n", "PEXPIREAT LLONG_MAX")
t.equal(c.call("PEXPIRETIME", "k"), b":%d\r\n" % LLONG_MAX, "kept exactly")
pttl = int(c.call("PTTL", "k")[1:-2])
t.check(pttl > 2**62, "PTTL of a far expiry is positive (%d)" % pttl)
t.equal(c.call("EXPIREAT", "k", LLONG_MAX // 1000), b":1\r\n",
        "EXPIREAT LLONG_MAX/1000")
t.check(int(c.call("TTL", "k")[1:-2]) > 0, "its TTL is positive")
t.equal(c.call("EXPIRE", "k", -100), b":1\r\n", "EXPIRE -100 deletes")
t.equal(c.call("EXISTS", "k"), b":0\r\n", "gone")
for v in ("+5", "007", "5 ", " 5", "5.0", "0x5", ""):
    t.equal(c.call("SET", "k", "v", "EX", v),
            b"-ERR value is not an integer or out of range\r\n", "EX %r" % v)
t.equal(c.call("FLUSHDB", "BOGUS"), b"-ERR syntax error\r\n", "FLUSHDB BOGUS")

# --------------------------------------------------------------- APPEND
def used_memory():
    info = c.call("INFO", "memory").decode()
    return int(info.split("used_memory:")[1].split("\r\n")[0])


big = 32 << 20
c.sock.settimeout(60)
t.equal(c.call("SET", "big", "x" * big), b"+OK\r\n", "a 32 MB value")
c.call("EXPIRE", "big", 1000)
before = used_memory()
t0 = time.monotonic()
c.send(b"".join(encode("APPEND", "big", "y") for _ in range(100)))
replies = [c.reply() for _ in range(100)]
took = time.monotonic() - t0
print("100 one-byte APPENDs to a 32 MB value: %.3f s" % took, flush=True)
t.equal(replies[-1], b":%d\r\n" % (big + 100), "APPEND's lengths")
t.check(took < 1.0, "100 one-byte APPENDs to 32 MB in %.3f s (< 1 s)" % took)
grown = used_memory() - before
t.check(0 <= grown <= big // 8 + 4096,
        "room kept for growth: %d bytes (at most an eighth of 32 MB)" % grown)
t.equal(c.call("STRLEN", "big"), b":%d\r\n" % (big + 100), "STRLEN")
t.check(0 < int(c.call("TTL", "big")[1:-2]) <= 1000, "APPEND keeps the TTL")
c.call("DEL", "big")
c.send(b"".join(encode("APPEND", "run", "%d," % i) for i in range(20000)))
for _ in range(20000):
    last = c.reply()
want = "".join("%d," % i for i in range(20000)).encode()
t.equal(last, b":%d\r\n" % len(want), "20,000 appends: the length")
t.equal(c.call("GET", "run"), b"$%d\r\n%s\r\n" % (len(want), want),
        "20,000 appends: the bytes")
t.equal(c.call("SET", "run", "new"), b"+OK\r\n", "SET over an appended key")
t.equal(c.call("APPEND", "run", "er"), b":5\r\n", "APPEND after SET")
t.equal(c.call("GET", "run"), b"$5\r\nnewer\r\n", "its bytes")
c.call("DEL", "run")
c.close()
t.equal(srv.stop(), 0, "exit status 0 after SIGTERM")

# --------------------------------------------------------- lowered limits
srv = Server.cache(binary, "--proto-max-bulk-len", "1kb",
                   "--client-query-buffer-limit", "1mb")
t.equal(raw_exchange(srv.port, b"*1\r\n$1025\r\n"),
        PE + b"invalid bulk length\r\n", "--proto-max-bulk-len 1kb: 1025 refused")
t.equal(raw_exchange(srv.port, encode("ECHO", "e" * 1024)),
        b"$1024\r\n" + b"e" * 1024 + b"\r\n<open>", "and 1024 accepted")
many = b"*3000\r\n" + b"$1000\r\n" + b"q" * 1000 + b"\r\n"
# Closed without a reply: a FIN, or a reset when the server closed with
# the client's bytes unread.
closed = (b"", b"<reset>")
t.check(raw_exchange(srv.port, many + (b"$1000\r\n" + b"q" * 1000 + b"\r\n")
                     * 1500, timeout=3) in closed,
        "--client-query-buffer-limit 1mb: closed without a reply")
t.check(raw_exchange(srv.port, b"*1000000\r\n" + b"$0\r\n\r\n" * 100000,
                     timeout=3) in closed,
        "the limit counts parsed arguments too (100,000 empty bulks)")
t.equal(srv.connect().call("PING"), b"+PONG\r\n", "the server goes on")
t.equal(srv.stop(), 0, "exit status 0")
t.finish()
