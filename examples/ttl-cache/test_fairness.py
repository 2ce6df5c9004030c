#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_fairness.py - one busy client or a mass expiry must not stall others.

    test_fairness.py PATH/TO/rota-ttl-cache pipeline [SECONDS]
    test_fairness.py PATH/TO/rota-ttl-cache expiry [KEYS]
    test_fairness.py PATH/TO/rota-ttl-cache auth [SECONDS]
    test_fairness.py redis-server pipeline|expiry|auth ...   (of Redis)

pipeline: a second process pipelines SETs without pause for SECONDS (4),
reading its replies as they come, while this one PINGs on a schedule.
Claims: PING p99 under P99_MS (10) ms; every SET sent got its +OK (nothing
lost) and the last one is readable.

auth: the server has a password; a second process sends wrong passwords
(AUTH guess) for SECONDS (4) as fast as the server answers them, 200 in
flight (a client that leaves more replies unread before it has
authenticated is closed, as Redis closes it), a brute-force attack,
while this one, authenticated, PINGs on a schedule.  Claims: PING p99
under P99_MS ms; every guess got Redis's WRONGPASS error (none passed,
none was dropped).

expiry: KEYS (1,000,000) keys are set with one PXAT deadline; from half a
second before it to 2.5 s after, this process PINGs on a schedule while a
second one GETs random keys in pipelined batches.  Claims: PING p99 under
P99_MS ms; no GET sent after the deadline (by the unix clock the server
reads) returned a value, no GET answered before it returned nil (nothing
expires early); afterwards DBSIZE is 0 and INFO's expired_keys grew by
KEYS.

Latency is what a client on a fixed schedule sees: a PING is due every
5 ms (longer than a round trip on a loaded 2-core machine, so the schedule
does not fall behind on its own), and its latency runs from its due time
to its reply.  A stall of T ms thus counts in every PING that fell due
during it (about T / 5 samples), not in one sample only.

On the 2-core VM this was written on (shared with other jobs), the bounded
loop gave a pipeline p99 of 1.3 to 6 ms and an expiry p99 of 2.1 to 2.5
ms; while other jobs were compiling, one pipeline round in about a dozen
measured 36 ms (hence the repeats, see ROUNDS).  Before the bounds they
were 2,900 to 4,100 ms and 490 to 920 ms.  Every run prints its figures.  ROTA_FAIR_P99_MS overrides the limit.  Standard
library only; ends with "N passed, N failed".
"""
import json
import math
import os
import random
import select
import socket
import subprocess
import sys
import threading
import time

from cachetest import Server, Tally, decode, encode

P99_MS = float(os.environ.get("ROTA_FAIR_P99_MS", "10"))
# "report": print the latencies but do not judge them (CMake sets it for
# sanitizer and ROTA_DEBUG builds, whose allocators and checks stall on
# their own); every other claim is checked as always.
JUDGE_TIMING = os.environ.get("ROTA_FAIR_TIMING", "judge") != "report"
# Other jobs on a shared machine can take the CPU from the server for a
# while: a measurement that misses the limit is made again, ROUNDS in all,
# and the test fails only when every one misses.  Stalls of the server's
# own (seconds behind a pipelining client, half a second in a mass expiry
# before the loop was bounded) miss it every time.
ROUNDS = 3
PING = b"*1\r\n$4\r\nPING\r\n"
PONG = b"+PONG\r\n"


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), 10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


PASSWORD = "fair-secret"
GUESSES_IN_FLIGHT = 200  # 13,000 bytes of replies
WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"


def ping_schedule(port, seconds, start=None, interval=0.005, password=None):
    """PINGs on a fixed schedule from `start` (monotonic) for `seconds`;
    the latencies in ms, each from the PING's due time to its reply."""
    s = connect(port)
    if password is not None:
        s.sendall(encode("AUTH", password))
        if s.recv(64) != b"+OK\r\n":
            raise ValueError("AUTH refused")
    due = time.monotonic() if start is None else start
    end = due + seconds
    lat = []
    while due < end:
        now = time.monotonic()
        if now < due:
            time.sleep(due - now)
        s.sendall(PING)
        got = b""
        while len(got) < len(PONG):
            d = s.recv(64)
            if not d:
                raise EOFError("the server closed the PING connection")
            got += d
        if got != PONG:
            raise ValueError("PING answered %r" % got)
        lat.append((time.monotonic() - due) * 1000)
        due += interval
    s.close()
    return lat


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(p / 100 * len(xs))) - 1)]


def summary(lat):
    return "%d PINGs, p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.1f ms" % (
        len(lat), percentile(lat, 50), percentile(lat, 99),
        percentile(lat, 99.9), max(lat))


def judge_p99(t, lat, where):
    what = "PING p99 %.2f ms %s (limit %g ms)" % (percentile(lat, 99), where,
                                                  P99_MS)
    if JUDGE_TIMING:
        t.check(percentile(lat, 99) < P99_MS, what)
    else:
        print("not judged (ROTA_FAIR_TIMING=report):", what, flush=True)


# --------------------------------------------------------- child roles

def flood(port, seconds):
    """Pipeline SETs without pause for `seconds`, reading every reply; print
    what was sent and received as JSON.  One thread (non-blocking socket,
    select()), so that the busy client takes one core at most."""
    s = connect(port)
    s.setblocking(False)
    keys = 100000
    block = b"".join(encode("SET", "flood:%d" % i, "v%08d" % i)
                     for i in range(keys))
    sent, got, bad = 0, 0, 0
    view, off, last = memoryview(block), 0, None
    buf = bytearray(1 << 20)
    t0 = time.monotonic()
    end = t0 + seconds
    while last is None or off < len(last) or got < 5 * sent:
        want_write = last is None or off < len(last)
        r, w, _ = select.select([s], [s] if want_write else [], [], 10)
        if not r and not w:
            raise TimeoutError("the server stopped answering the flood")
        if w:
            if last is None and off == len(view):
                sent += keys
                off = 0
                if time.monotonic() >= end:
                    # the last SET names the count, to read back afterwards
                    last = memoryview(encode("SET", "flood:last", str(sent)))
                    view = last
                    sent += 1
            try:
                off += s.send(view[off:])
            except BlockingIOError:
                pass
        if r:
            n = s.recv_into(buf)
            if n == 0:
                break
            got += n
            # every reply is +OK\r\n: no other byte may appear
            bad += len(bytes(buf[:n]).translate(None, b"+OK\r\n"))
    print(json.dumps({"sent": sent, "reply_bytes": got, "bad_bytes": bad,
                      "seconds": time.monotonic() - t0}), flush=True)


def guess(port, seconds):
    """Send wrong passwords for `seconds` as fast as the server answers:
    GUESSES_IN_FLIGHT at a time (an unauthenticated client that leaves
    more than 17 KiB of replies unread is closed, as by Redis), the next
    batch as soon as one is answered.  Prints JSON as flood() does."""
    s = connect(port)
    batch = b"".join(encode("AUTH", "guess%04d" % i)
                     for i in range(GUESSES_IN_FLIGHT))
    want = WRONGPASS * GUESSES_IN_FLIGHT
    sent, got, bad = 0, 0, 0
    t0 = time.monotonic()
    while time.monotonic() < t0 + seconds:
        s.sendall(batch)
        sent += GUESSES_IN_FLIGHT
        rep = b""
        while len(rep) < len(want):
            d = s.recv(len(want) - len(rep))
            if not d:
                raise EOFError("the server closed the guessing client")
            rep += d
        got += len(rep)
        bad += 0 if rep == want else sum(a != b for a, b in zip(rep, want))
    print(json.dumps({"sent": sent, "reply_bytes": got, "bad_bytes": bad,
                      "seconds": time.monotonic() - t0}), flush=True)


def get_check(port, keys, deadline_ms, until_ms):
    """GET random keys in batches of 50 until the unix time `until_ms`;
    count GETs that saw a value after the deadline or nil before it, and
    note when DBSIZE first reads 0.  Prints JSON."""
    s = socket.create_connection(("127.0.0.1", port), 30)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn_buf = b""
    r = {"before": 0, "after": 0, "late": 0, "early": 0, "empty_at_ms": None}

    def replies(n):
        nonlocal conn_buf
        out = []
        while len(out) < n:
            i = conn_buf.find(b"\r\n")
            if i < 0 or (conn_buf[:1] == b"$" and conn_buf[1:2] != b"-" and
                         len(conn_buf) < i + 2 + int(conn_buf[1:i]) + 2):
                conn_buf += s.recv(1 << 16)
                continue
            if conn_buf[:1] == b"$" and conn_buf[1:2] != b"-":
                end = i + 2 + int(conn_buf[1:i]) + 2
            else:
                end = i + 2
            out.append(conn_buf[:end])
            conn_buf = conn_buf[end:]
        return out

    rng = random.Random(1)
    while time.time() * 1000 < until_ms:
        batch = [rng.randrange(keys) for _ in range(50)]
        sent_ms = math.floor(time.time() * 1000)
        s.sendall(b"".join(encode("GET", "exp:%d" % k) for k in batch) +
                  encode("DBSIZE"))
        rep = replies(51)
        recv_ms = math.floor(time.time() * 1000)
        for x in rep[:50]:
            value = not x.startswith(b"$-1")
            if sent_ms > deadline_ms:
                r["after"] += 1
                r["late"] += value
            elif recv_ms < deadline_ms:
                r["before"] += 1
                r["early"] += not value
        if (r["empty_at_ms"] is None and sent_ms > deadline_ms and
                rep[50] == b":0\r\n"):
            r["empty_at_ms"] = recv_ms - deadline_ms
    print(json.dumps(r), flush=True)


def child(role, *args):
    """This script in another process (its own interpreter: no lock shared
    with the PINGs), at a lower priority: on two cores the server, the
    busy client and the PINGs compete for the CPU, and what is measured
    is how the server shares its time, not how the kernel shares ours."""
    return subprocess.Popen([sys.executable, os.path.abspath(__file__),
                             "--" + role] + [str(a) for a in args],
                            stdout=subprocess.PIPE, text=True,
                            preexec_fn=lambda: os.nice(10))


# -------------------------------------------------------------- tests

def pipeline_round(t, srv, seconds):
    """One measurement beside a pipelining client; its PING latencies."""
    f = child("flood", srv.port, seconds)
    time.sleep(0.3)  # the flood under way
    lat = ping_schedule(srv.port, seconds - 0.6)
    print("beside the pipelining client:", summary(lat), flush=True)
    out, _ = f.communicate(timeout=120)
    r = json.loads(out)
    print("pipelining client: %d SETs in %.2f s (%.0f a second)" %
          (r["sent"], r["seconds"], r["sent"] / r["seconds"]), flush=True)
    t.equal(r["reply_bytes"], 5 * r["sent"], "reply bytes: +OK for every SET")
    t.equal(r["bad_bytes"], 0, "bytes that are not part of +OK replies")
    c = srv.connect()
    t.equal(c.call("GET", "flood:last"), b"$%d\r\n%d\r\n" % (
        len(str(r["sent"] - 1)), r["sent"] - 1), "the last SET is there")
    c.close()
    return lat


def auth_round(t, srv, seconds):
    """One measurement beside a client guessing passwords."""
    f = child("guess", srv.port, seconds)
    time.sleep(0.3)
    lat = ping_schedule(srv.port, seconds - 0.6, password=PASSWORD)
    print("beside the guessing client:", summary(lat), flush=True)
    out, _ = f.communicate(timeout=120)
    r = json.loads(out)
    print("guessing client: %d wrong passwords in %.2f s (%.0f a second)" %
          (r["sent"], r["seconds"], r["sent"] / r["seconds"]), flush=True)
    t.equal(r["reply_bytes"], len(WRONGPASS) * r["sent"],
            "reply bytes: WRONGPASS for every guess")
    t.equal(r["bad_bytes"], 0, "bytes that are not part of WRONGPASS")
    return lat


def load(c, keys, margin_ms):
    """SET exp:0 .. exp:keys-1 with one PXAT `margin_ms` ahead; the
    deadline, the reply bytes and when the last reply came (unix ms)."""
    deadline = math.floor(time.time() * 1000) + margin_ms
    pxat = b"%d" % deadline
    blob = b"".join(b"*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n$4\r\nPXAT"
                    b"\r\n$%d\r\n%s\r\n" % (len(k), k, len(pxat), pxat)
                    for k in (b"exp:%d" % i for i in range(keys)))
    sender = threading.Thread(target=c.sock.sendall, args=(blob,))
    sender.start()
    got = 0
    while got < 5 * keys:
        d = c.sock.recv(1 << 20)
        if not d:
            break
        got += len(d)
    sender.join()
    return deadline, got, math.floor(time.time() * 1000)


def expired_keys(c):
    info = decode(c.call("INFO", "stats")).decode()
    return int(info.split("expired_keys:")[1].split("\r\n")[0])


def expiry_round(t, srv, keys):
    """One mass expiry of `keys` keys; the PING latencies around it."""
    c = srv.connect(timeout=120)
    expired_before = expired_keys(c)
    # One deadline for all, far enough ahead for the load to finish; on a
    # slow machine (a sanitizer build) try again with twice the time.
    margin_ms = 1500 + keys // 300
    for attempt in range(3):
        t0 = time.time()
        deadline, got, loaded_ms = load(c, keys, margin_ms)
        print("%d keys set with PXAT %d in %.2f s, %d ms before it" %
              (keys, deadline, time.time() - t0, deadline - loaded_ms),
              flush=True)
        if loaded_ms < deadline - 300:
            break
        c.call("FLUSHALL")
        expired_before = expired_keys(c)
        margin_ms *= 2
    t.equal(got, 5 * keys, "reply bytes: +OK for every SET")
    if not t.check(loaded_ms < deadline - 300,
                   "the keys were loaded before their deadline"):
        return []
    t.equal(c.call("DBSIZE"), b":%d\r\n" % keys, "every key is there")

    until = deadline + 2500
    g = child("getcheck", srv.port, keys, deadline, until)
    # PINGs from half a second before the deadline to 2.5 s after
    start = time.monotonic() + (deadline - 500 - time.time() * 1000) / 1000
    lat = ping_schedule(srv.port, 3.0, start=start)
    print("around the deadline:", summary(lat), flush=True)
    out, _ = g.communicate(timeout=120)
    r = json.loads(out)
    print("GETs answered before the deadline: %d (nil: %d); sent after it: "
          "%d (with a value: %d); DBSIZE first 0 at deadline + %s ms" %
          (r["before"], r["early"], r["after"], r["late"], r["empty_at_ms"]),
          flush=True)
    t.check(r["before"] > 0 and r["after"] > 0,
            "GETs were checked on both sides of the deadline")
    t.equal(r["late"], 0, "GETs sent after the deadline that got a value")
    t.equal(r["early"], 0, "GETs answered before the deadline that got nil")
    for _ in range(100):  # reclaiming may still be under way
        if c.call("DBSIZE") == b":0\r\n":
            break
        time.sleep(0.1)
    t.equal(c.call("DBSIZE"), b":0\r\n", "every key is gone")
    t.equal(expired_keys(c) - expired_before, keys,
            "keys counted by INFO's expired_keys")
    c.close()
    return lat


def measure(t, where, one_round):
    """Up to ROUNDS measurements, until one's p99 is under the limit."""
    for n in range(1, ROUNDS + 1):
        lat = one_round()
        if not lat:
            return
        p99 = percentile(lat, 99)
        if p99 < P99_MS or not JUDGE_TIMING or n == ROUNDS:
            break
        print("p99 %.2f ms: measuring again (%d of %d)" % (p99, n + 1,
                                                           ROUNDS), flush=True)
    judge_p99(t, lat, where)


def main():
    if sys.argv[1] == "--flood":
        return flood(int(sys.argv[2]), float(sys.argv[3]))
    if sys.argv[1] == "--guess":
        return guess(int(sys.argv[2]), float(sys.argv[3]))
    if sys.argv[1] == "--getcheck":
        return get_check(*(int(a) for a in sys.argv[2:6]))
    binary, mode = sys.argv[1], sys.argv[2]
    t = Tally()
    # "redis-server" instead of the cache's path: the same measurement of
    # a real Redis, for comparison (not run by the suite)
    if mode == "auth":
        srv = Server.redis("--requirepass", PASSWORD) \
            if binary == "redis-server" else \
            Server.cache(binary, env={"ROTA_TTL_CACHE_REQUIREPASS": PASSWORD})
    else:
        srv = Server.redis() if binary == "redis-server" else \
            Server.cache(binary)
    if mode == "auth":
        seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 4
        measure(t, "beside a client guessing passwords",
                lambda: auth_round(t, srv, seconds))
    elif mode == "pipeline":
        seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 4
        print("idle:", summary(ping_schedule(srv.port, 0.3)), flush=True)
        measure(t, "beside a pipelining client",
                lambda: pipeline_round(t, srv, seconds))
    elif mode == "expiry":
        keys = int(sys.argv[3]) if len(sys.argv) > 3 else 1000000
        measure(t, "around a mass expiry", lambda: expiry_round(t, srv, keys))
    else:
        sys.exit("unknown mode %r" % mode)
    t.equal(srv.stop(), 0, "the server stops cleanly")
    t.finish()


if __name__ == "__main__":
    main()
