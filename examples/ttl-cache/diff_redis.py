#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""diff_redis.py - rota-ttl-cache against a real redis-server, byte for byte.

    diff_redis.py PATH/TO/rota-ttl-cache [--plant-fault NAME]

Starts redis-server (no persistence, one database: --databases 1) and the
cache on loopback ports, sends both the same commands over RESP and
compares the replies byte for byte:
  1. scripted cases: malformed and cut requests on fresh connections (the
     whole exchange, up to the server closing), half-close, expiry
     boundaries on the real clock, every command of the subset with edge
     arguments, EXEC's frozen clock, FLUSHALL ASYNC;
  1b. a second pair of servers at maxmemory 4mb (noeviction), filled past
     it by another client: a transaction queued before (EXECABORT naming
     the OOM error), commands in MULTI once over the bound;
  2. a seeded random stream (ROTA_SEED=n repeats one; the seed is printed)
     of every command of the subset over a pool of awkward keys (empty,
     binary, CR LF, 300 bytes) and values (integer edges, non-integers),
     with valid and invalid options, relative and absolute expiry times,
     wrong arities, unknown commands, mixed-case names and inline requests
     with Redis's quoting.  ROTA_TEST_SCALE=small runs fewer steps;
  3. the connection's commands (HELLO, AUTH without a password, CLIENT
     SETNAME/GETNAME/ID/INFO/LIST, RESET, COMMAND COUNT, QUIT) with their
     edges and inside MULTI, and EXEC refused (EXECABORT);
  4. a second pair started with the same password (redis-server
     --requirepass, the cache through ROTA_TTL_CACHE_REQUIREPASS): every
     command before authentication, right and wrong passwords in every
     form (AUTH pw, AUTH default pw, HELLO 2 AUTH, a prefix, a longer
     one, another case, a NUL byte, another user), RESET, and Redis's
     bounds for a client not yet authenticated (10 elements, 16 KiB
     bulks, replies left unread);
  5. protected mode, from a non-loopback address of this machine to a
     pair bound to it (skipped, with the reason, when the machine has no
     such address): no password (the DENIED error, then the close),
     --protected-mode no (served), a password (NOAUTH, then served), and
     a loopback client of a server bound to 0.0.0.0 (served).

Exits 77 (CTest: skipped) when redis-server is not installed.  With
--plant-fault the cache is started with a deliberate bug and the test
passes only if the comparison catches it (the self-check proving that a
difference cannot slip through).

THE ALLOW-LIST: the only differences accepted, each for a stated reason.
  - EXPIRETIME of a key expiring within 500 ms of LLONG_MAX ms: Redis's
    rounding, (ms + 500) / 1000, overflows and answers a negative time;
    the cache answers the rounded positive one (9223372036854776).
  - TTL and EXPIRETIME may differ by 1, PTTL and PEXPIRETIME by 500 ms:
    the two servers read their clocks at different instants (the command
    reaches one before the other), and TTL rounds to whole seconds.
  - SCAN: cursors and the order and grouping of keys are each server's
    own (both are valid SCAN answers); a whole iteration must return the
    same set of keys.  KEYS: the same keys in any order.
  - INFO: only the db0 line's keys= and expires= are compared; avg_ttl is
    an estimate in Redis, and the other fields describe each process.
  - A bulk whose data is longer than its announced length: Redis skips the
    two bytes after the data unread and goes on with whatever follows; the
    cache refuses with "-ERR Protocol error: expected CRLF after bulk" and
    closes (running misframed bytes is how injection starts).
  - Not compared at all, because the cache does not pretend to be
    the rest of Redis: CONFIG GET (the cache answers for its own few
    parameters), COMMAND and COMMAND INFO/DOCS (the cache has no command
    documentation), memory figures.  COMMAND COUNT is an integer in
    both (each server's own number of commands).
  - Client ids: each server numbers its connections from its own start
    (CLIENT ID, HELLO's id, CLIENT INFO's id=); they are compared as
    positive integers, and the cache's are checked on their own: one
    connection's id is the same in all three, and a later connection's
    is larger.
  - CLIENT INFO and LIST: the same fields in the same order; equal values
    for name, flags, db, sub, psub, ssub, multi, oll, events, cmd, user,
    redir, resp and the hosts of addr and laddr; integers for the rest
    (descriptors, ports, ages, buffer sizes are each process's own).
  - HELLO 3: RESP3 is not implemented; the cache answers "-NOPROTO
    unsupported protocol version", as Redis does for a version it lacks
    (Redis answers a RESP3 map, or NOAUTH before authentication).  Sent
    on a connection of its own, closed after it.
  - Keys whose expiry passed but that Redis has not reclaimed yet still
    count in Redis's DBSIZE, SCAN and KEYS until something touches them
    (Redis 7.0 stores SET ... EXAT <past> and reclaims it lazily); the
    cache removes them by its next loop turn.  Before DBSIZE, SCAN, KEYS
    and INFO the test touches every key of the pool on both servers
    (EXISTS, compared too) and runs a whole SCAN (compared as a set),
    after which both must agree exactly.  A key can still expire between
    that touch and DBSIZE or INFO (the cache drops it within a turn, Redis
    counts it): such a count is settled and asked again, up to three
    times, before a difference fails.
"""
import os
import random
import re
import socket
import sys
import time

from cachetest import (SKIP, Server, Tally, decode, encode,
                       non_loopback_address, raw_exchange)

LLONG_MAX = 2**63 - 1
LLONG_MIN = -2**63


def main():
    binary = sys.argv[1]
    fault = None
    if len(sys.argv) == 4 and sys.argv[2] == "--plant-fault":
        fault = sys.argv[3]
    redis = Server.redis("--databases", "1")
    if redis is None:
        print("SKIP: redis-server not found (Debian: apt-get install "
              "redis-server); the differential test needs a real one")
        sys.exit(SKIP)
    flags = ["--plant-fault", fault] if fault else []
    cache = Server.cache(binary, *flags)
    seed = int(os.environ.get("ROTA_SEED", random.randrange(1 << 32)))
    small = os.environ.get("ROTA_TEST_SCALE") == "small"
    steps = 3000 if small else 20000
    print("seed %d (ROTA_SEED=%d to repeat), %d random steps, redis-server "
          "on port %d, cache on port %d" % (seed, seed, steps, redis.port,
                                             cache.port), flush=True)
    d = Diff(redis, cache, stop_at_first=fault is not None)
    try:
        if fault == "auth":  # a password check: caught by the auth part
            with_password(d.t, binary, fault)
        elif fault == "protected":  # no protected mode
            if not protected_mode(d.t, binary, fault):
                sys.exit(SKIP)  # (the servers stop below)
        elif fault is not None:  # caught by the random part, not the script
            randomized(d, random.Random(seed), steps)
        else:
            scripted(d)
            randomized(d, random.Random(seed), steps)
            sessions(d)
            with_password(d.t, binary, None)
            protected_mode(d.t, binary)
    except Mismatch:
        pass
    finally:
        status = cache.stop()
        redis.stop()
    if fault is None:
        try:
            d.compared += over_the_bound(binary, d.t)
        except Mismatch:
            pass
    if fault is not None:
        caught = d.t.failed > 0
        print("planted fault %r %s" % (fault, "caught: the comparison can fail"
                                       if caught else "NOT caught"))
        sys.exit(0 if caught else 1)
    d.t.equal(status, 0, "cache exit status after SIGTERM")
    print("%d commands compared" % d.compared)
    d.t.finish()


class Mismatch(Exception):
    pass


class Diff:
    def __init__(self, redis, cache, stop_at_first, tally=None, connect=True):
        self.redis, self.cache = redis, cache
        if connect:  # the connection cmd() uses
            self.r, self.c = redis.connect(), cache.connect()
        self.t = tally or Tally()
        self.stop_at_first = stop_at_first
        self.compared = 0

    def fail(self, what, want, got):
        self.t.check(False, "%s\n  redis-server: %r\n  rota-ttl-cache: %r"
                     % (what, want[:300], got[:300]))
        if self.stop_at_first or self.t.failed >= 10:
            raise Mismatch()

    def both(self, data):
        """Send raw request bytes to both; the replies (one each)."""
        self.r.send(data)
        self.c.send(data)
        replies = []
        for name, conn in (("redis-server", self.r), ("rota-ttl-cache", self.c)):
            try:
                replies.append(conn.reply())
            except (EOFError, OSError) as e:
                self.t.check(False, "%s closed the connection (%s) on %r"
                             % (name, e, data[:200]))
                raise Mismatch()
        return replies[0], replies[1]

    def cmd(self, *args, compare=None):
        """One command to both servers; compared exactly unless the
        allow-list gives a comparator.  Returns redis-server's reply."""
        want, got = self.both(encode(*args))
        self.compared += 1
        ok = compare(want, got) if compare else want == got
        if ok:
            self.t.passed += 1
        else:
            self.fail("%r" % (args,), want, got)
        return want

    def raw(self, data, what, half_close=False, source=None, compare=None):
        """A whole exchange on fresh connections, up to the close."""
        want = raw_exchange(self.redis.port, data, 0.5, half_close,
                            self.redis.host, source)
        got = raw_exchange(self.cache.port, data, 0.5, half_close,
                           self.cache.host, source)
        self.compared += 1
        if compare(want, got) if compare else want == got:
            self.t.passed += 1
        else:
            self.fail(what, want, got)

    def reconnect(self):
        self.r.close()
        self.c.close()
        self.r, self.c = self.redis.connect(), self.cache.connect()

    def settle(self, keys):
        """Touch every key so Redis reclaims what has expired: the pool's
        keys, and with a whole SCAN (which reclaims as it goes; KEYS does
        not) any other name, such as one an inline command split off."""
        for k in keys:
            self.cmd("EXISTS", k)
        self.scan_all()

    def settled(self, keys, *args, compare=None):
        """A count that includes Redis's unreclaimed keys (DBSIZE, INFO),
        compared after settle().  A key whose expiry falls between the
        settle and the count is gone from the cache within a turn but still
        counted by Redis, so a mismatch is settled and asked again (up to
        three times) before it counts: a real difference persists."""
        for attempt in range(3):
            self.settle(keys)
            want, got = self.both(encode(*args))
            if compare(want, got) if compare else want == got:
                break
        self.compared += 1
        if compare(want, got) if compare else want == got:
            self.t.passed += 1
        else:
            self.fail("%r" % (args,), want, got)

    def scan_all(self, *opts):
        """Compare the keys of whole SCAN iterations as sets."""
        sets = []
        for conn in (self.r, self.c):
            cursor, keys, calls = b"0", [], 0
            while True:
                conn.send(encode("SCAN", cursor, *opts))
                rep = decode(conn.reply())
                if isinstance(rep, Exception):
                    keys = rep
                    break
                cursor, batch = rep
                keys += batch
                calls += 1
                if cursor == b"0" or calls > 100000:
                    break
            sets.append(keys if isinstance(keys, Exception) else sorted(set(keys)))
        self.compared += 1
        same = (str(sets[0]) == str(sets[1]) if isinstance(sets[0], Exception)
                else sets[0] == sets[1])
        if same:
            self.t.passed += 1
        else:
            self.fail("SCAN %r (whole iteration)" % (opts,), sets[0], sets[1])


# ---------------------------------------------------------- comparators
def within(tolerance):
    def compare(want, got):
        if want == got:
            return True
        a, b = decode(want), decode(got)
        return (isinstance(a, int) and isinstance(b, int) and a >= 0 and
                b >= 0 and abs(a - b) <= tolerance)
    return compare


def same_set(want, got):
    a, b = decode(want), decode(got)
    return (isinstance(a, list) and isinstance(b, list) and
            sorted(a) == sorted(b)) or want == got


def keyspace_counts(want, got):
    def counts(rep):
        for line in decode(rep).split(b"\r\n"):
            if line.startswith(b"db0:"):
                f = dict(x.split(b"=") for x in line[4:].split(b","))
                return f[b"keys"], f[b"expires"]
        return None
    return counts(want) == counts(got)


def expiretime(want, got):
    """Redis rounds EXPIRETIME as (ms + 500) / 1000, which overflows to a
    negative number for an expiry within 500 ms of LLONG_MAX (PEXPIREAT k
    9223372036854775807); the cache answers the rounded value."""
    if decode(want) == (LLONG_MAX + 500 - 2**64) // 1000 + 1 and \
            decode(got) == LLONG_MAX // 1000 + 1:
        return True
    return within(1)(want, got)


def integer(want, got):
    """Both integers (COMMAND COUNT: each server's own number)."""
    a, b = decode(want), decode(got)
    return type(a) is int and type(b) is int and a > 0 and b > 0


def hello(want, got):
    """HELLO's map, the same apart from the client id's value."""
    a, b = decode(want), decode(got)
    if not (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
            and b"id" in a):
        return want == got
    i = a.index(b"id") + 1
    return (a[:i] == b[:i] and a[i + 1:] == b[i + 1:] and
            type(b[i]) is int and b[i] > 0)


def hello3(want, got):
    """HELLO 3 (allow-listed): the cache's NOPROTO for Redis's NOAUTH."""
    return (want.startswith(b"-NOAUTH HELLO must be called") and
            got == b"-NOPROTO unsupported protocol version\r\n")


INFO_EXACT = {"name", "flags", "db", "sub", "psub", "ssub", "multi", "oll",
              "events", "cmd", "user", "redir", "resp"}


def client_fields(line):
    return [tuple(f.split("=", 1) + [""])[:2] for f in line.split(" ")
            if line]


def client_lines(want, got):
    """CLIENT INFO and LIST: the fields of the allow-list."""
    a, b = decode(want), decode(got)
    if not (isinstance(a, bytes) and isinstance(b, bytes)):
        return want == got
    return same_client_text(a, b)


def exec_client_info(want, got):
    """EXEC of [a command, CLIENT INFO]."""
    a, b = decode(want), decode(got)
    return (isinstance(a, list) and isinstance(b, list) and len(a) == 2 and
            len(b) == 2 and a[0] == b[0] and isinstance(a[1], bytes) and
            isinstance(b[1], bytes) and same_client_text(a[1], b[1]))


def same_client_text(a, b):
    la, lb = a.decode("latin1").split("\n"), b.decode("latin1").split("\n")
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        fx, fy = client_fields(x), client_fields(y)
        if [k for k, _ in fx] != [k for k, _ in fy]:
            return False
        for (k, v), (_, w) in zip(fx, fy):
            if k in INFO_EXACT:
                if v != w:
                    return False
            elif k in ("addr", "laddr"):
                if v.rsplit(":", 1)[0] != w.rsplit(":", 1)[0] or \
                        not w.rsplit(":", 1)[1].isdigit():
                    return False
            elif k and not re.fullmatch(r"-?\d+", w):
                return False
    return True


TIMED = {"TTL": within(1), "EXPIRETIME": expiretime, "PTTL": within(500),
         "PEXPIRETIME": within(500)}


# ---------------------------------------------------------- scripted part
def scripted(d):
    PE = b"-ERR Protocol error: "
    for data, what in [
            (b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$abc\r\nFLUSHALL\r\n", "bad bulk, FLUSHALL"),
            (b"*2\r\n$4\r\nECHO\r\n#SET injected 1\r\nSET injected 1\r\n", "'#' for '$'"),
            (b"*abc\r\nPING\r\n", "*abc"), (b"*1\r\n$-1\r\nPING\r\n", "$-1"),
            (b"*2\r\n$x\r\nPING\r\n", "$x"), (b"* 1\r\nPING\r\n", "* 1"),
            (b"*" + b"9" * 100 + b"\r\nPING\r\n", "100 digits"),
            (b"*01\r\n$4\r\nPING\r\n", "*01"), (b"*1\r\n$+4\r\nPING\r\n", "$+4"),
            (b"*1\r\n$04\r\nPING\r\n", "$04"), (b"*1\r\n:4\r\nPING\r\n", "':'"),
            (b"*-1\r\nPING\r\n", "*-1"), (b"*0\r\nPING\r\n", "*0"),
            (b"*1\nPING\r\n", "LF-only header"),
            (b"*1\rX$4\r\nPING\r\n", "CR then any byte"),
            (b"*2147483648\r\n", "INT_MAX + 1 elements"),
            (b"*1\r\n$536870913\r\n", "bulk of 512 MB + 1"),
            (b"x" * 70000, "70,000-byte inline line"),
            (b"*" + b"1" * 70000, "70,000-byte array header"),
            (b"*1\r\n$" + b"1" * 70000, "70,000-byte bulk header"),
            (b"\"PING\r\nPING\r\n", "unbalanced quotes"),
            (b"ECHO \"a\"b\r\n", "closing quote then a letter"),
            (b"ECHO 'a'b\r\n", "closing single quote then a letter"),
            (b"ECHO \"\\x41\\x4\\n\\q\" 'it\\'s' \"\"\r\n", "inline escapes"),
            (b"  PING  \r\n\r\n \r\nPING\n", "blank lines and LF"),
            (b"PING\r\nPING\r\nQUIT\r\nPING\r\n", "QUIT"),
    ]:
        d.raw(data, what)
    d.cmd("GET", "injected")
    d.raw(b"PING\r\n" * 50, "50 PINGs then SHUT_WR", half_close=True)
    d.raw(encode("SET", "hc", "1") + encode("GET", "hc") + b"*2\r\n$3\r\nGET",
          "a cut request after SHUT_WR", half_close=True)

    # Expiry on the real clock: short times, then wait them out.
    d.cmd("SET", "short", "v", "PX", 100)
    d.cmd("SET", "short2", "v")
    d.cmd("PEXPIRE", "short2", 150)
    d.cmd("SET", "short3", "v", "PXAT", int(time.time() * 1000) + 200)
    d.cmd("PTTL", "short", compare=TIMED["PTTL"])
    time.sleep(0.4)
    for k in ("short", "short2", "short3"):
        d.cmd("GET", k)
        d.cmd("TTL", k)
    d.cmd("SET", "sec", "v", "EX", 2)
    d.cmd("TTL", "sec", compare=TIMED["TTL"])
    d.cmd("PTTL", "sec", compare=TIMED["PTTL"])
    d.cmd("EXPIRETIME", "sec", compare=TIMED["EXPIRETIME"])
    d.cmd("DBSIZE")

    # Every command with its edges, in an order that builds on itself.
    script = [
        ("SET", "a", "1"), ("SET", "a", "2", "GET"), ("SET", "n", "x", "GET"),
        ("SET", "a", "3", "NX", "GET"), ("SET", "b", "3", "XX", "GET"),
        ("SET", "a", "4", "NX", "XX"), ("SET", "a", "4", "XX", "NX"),
        ("SET", "a", "4", "EX", "10", "EX", "20"), ("TTL", "a"),
        ("SET", "a", "4", "EX", "10", "PX", "20"),
        ("SET", "a", "4", "EX", "10", "KEEPTTL"), ("SET", "a", "4", "KEEPTTL"),
        ("TTL", "a"), ("SET", "a", "5", "KEEPTTL", "EX", "1"),
        ("SET", "a", "5", "EX"), ("SET", "a", "5", "EX", "abc", "BOGUS"),
        ("SET", "a", "5", "PERSIST"), ("SET", "a", "5", "nx\x00junk"),
        ("SET", "a", "6", "EXAT", int(time.time()) + 100), ("TTL", "a"),
        ("SET", "a", "6", "PXAT", int(time.time() * 1000) + 100000),
        ("SET", "p", "v", "EXAT", 1), ("EXISTS", "p"), ("DBSIZE",),
        ("SET", "p", "v", "PXAT", 0), ("SET", "p", "v", "EXAT", -1),
        ("SETEX", "s", 100, "v"), ("SETEX", "s", 0, "v"), ("SETEX", "s", "x", "v"),
        ("PSETEX", "s", 100000, "v"), ("PSETEX", "s", -1, "v"), ("TTL", "s"),
        ("SETNX", "s", "w"), ("SETNX", "s2", "w"), ("GETSET", "s", "z"),
        ("TTL", "s"), ("GETEX", "s"), ("GETEX", "s", "EX", 50), ("TTL", "s"),
        ("GETEX", "s", "PERSIST"), ("TTL", "s"), ("GETEX", "s", "PERSIST", "EX", 5),
        ("GETEX", "s", "EX", 5, "PERSIST"), ("GETEX", "s", "NX"),
        ("GETEX", "nope", "EX", "abc"), ("GETEX", "s", "EX", "abc"),
        ("GETEX", "s", "EXAT", 1), ("GET", "s"), ("GETEX", "s", "KEEPTTL"),
        ("GETDEL", "s2"), ("GETDEL", "s2"),
        ("INCR", "i"), ("INCRBY", "i", 41), ("DECR", "i"), ("DECRBY", "i", -10),
        ("INCRBY", "i", "1.5"), ("INCRBY", "i", LLONG_MAX),
        ("SET", "i", LLONG_MAX), ("INCR", "i"), ("SET", "i", LLONG_MIN),
        ("DECR", "i"), ("DECRBY", "i", LLONG_MIN), ("SET", "i", "007"),
        ("INCR", "i"), ("SET", "i", " 1"), ("INCR", "i"), ("SET", "i", "-0"),
        ("INCR", "i"), ("SET", "i", "1" * 20), ("INCR", "i"),
        ("SET", "t", "5", "EX", 100), ("INCR", "t"), ("TTL", "t"),
        ("MSET", "m1", "a", "m2", "b"), ("MSET", "m1", "a", "m2"),
        ("MGET", "m1", "nope", "m2", "m1"), ("MSET", "t", "x"), ("TTL", "t"),
        ("APPEND", "m1", "bc"), ("STRLEN", "m1"), ("STRLEN", "nope"),
        ("APPEND", "new", ""), ("EXISTS", "new"),
        ("TYPE", "m1"), ("TYPE", "nope"), ("DEL", "m1", "m1", "nope"),
        ("EXISTS", "m2", "m2", "nope"), ("UNLINK", "m2"),
        ("SET", "e", "v"), ("EXPIRE", "e", 100, "XX"), ("EXPIRE", "e", 100, "NX"),
        ("EXPIRE", "e", 50, "NX"), ("EXPIRE", "e", 200, "GT"),
        ("EXPIRE", "e", 20, "GT"), ("EXPIRE", "e", 20, "LT"),
        ("EXPIRE", "e", 300, "LT"), ("EXPIRE", "e", 10, "NX", "XX"),
        ("EXPIRE", "e", 10, "GT", "LT"), ("EXPIRE", "e", 10, "NX", "GT"),
        ("EXPIRE", "e", 10, "XX", "GT"), ("EXPIRE", "e", 10, "BOGUS"),
        ("EXPIRE", "e", "abc", "BOGUS"), ("EXPIRE", "e", "abc"),
        ("EXPIRE", "e", 10, "x\r\ny"), ("PERSIST", "e"),
        ("EXPIRE", "e", 100, "LT"), ("EXPIRE", "e", 150, "GT"), ("TTL", "e"),
        ("PEXPIRE", "e", 500000), ("PTTL", "e"),
        ("EXPIREAT", "e", int(time.time()) + 1000), ("EXPIRETIME", "e"),
        ("PEXPIREAT", "e", int(time.time() * 1000) + 100000),
        ("PEXPIRETIME", "e"), ("EXPIRETIME", "nope"), ("EXPIRETIME", "m2"),
        ("SET", "e2", "v"), ("EXPIRETIME", "e2"), ("PEXPIRETIME", "e2"),
        ("EXPIREAT", "e", 1), ("EXISTS", "e"), ("SET", "e", "v"),
        ("PEXPIREAT", "e", -1), ("EXISTS", "e"), ("SET", "e", "v"),
        ("EXPIRE", "e", 0), ("EXISTS", "e"), ("EXPIRE", "nope", 10),
        ("EXPIRE", "nope", 10, "BOGUS"),
        ("EXPIRE", "e2", LLONG_MAX // 1000), ("EXPIREAT", "e2", LLONG_MAX // 1000),
        ("TTL", "e2"), ("PEXPIREAT", "e2", LLONG_MAX), ("PTTL", "e2"),
        ("PEXPIRETIME", "e2"), ("EXPIRETIME", "e2"),
        ("SET", "h", "v", "EX", 20000000000), ("TTL", "h"),
        ("PING",), ("PING", "hi"), ("PING", "a", "b"), ("ECHO", "x\r\ny"),
        ("ECHO",), ("GET",), ("GET", "a", "b"), ("SET", "a"), ("DBSIZE", "x"),
        ("TTL",), ("MGET",), ("SCAN",), ("TYPE", "a", "b"),
        ("FLUSHDB", "BOGUS"), ("FLUSHDB", "ASYNC", "x"), ("FLUSHALL", "SYNCX"),
        ("SELECT", 0), ("SELECT", "abc"), ("SELECT", "-1"), ("SELECT", 1),
        ("SELECT", 15), ("SELECT", "00"), ("SELECT", 2**31), ("SELECT", -2**31),
        ("SELECT", 99999999999), ("SELECT", "9" * 30), ("SELECT", 0, 1),
        ("CONFIG",), ("CONFIG", "BOGUS"), ("CONFIG", "GET"),
        ("FOO",), ("FOO", "a", "b"), ("foo", "x" * 200), ("F\x00OO", "a\x00b"),
        ("x" * 300,), ("", ""), ("FOO", *["arg%d" % i for i in range(50)]),
        ("CONFIGX",),
        ("SCAN", "abc"), ("SCAN", " 1"), ("SCAN", "1 "), ("SCAN", "0", "COUNT", 0),
        ("SCAN", "0", "COUNT", "x"), ("SCAN", "0", "COUNT"),
        ("SCAN", "0", "BOGUS", "1"), ("SCAN", "99999999999999999999"),
    ]
    script += [
        ("EXEC",), ("DISCARD",), ("MULTI",), ("SET", "tx", "1"), ("INCR", "tx"),
        ("MULTI",), ("GET", "tx"), ("EXEC",), ("MULTI",), ("SET", "tx", "2"),
        ("DISCARD",), ("GET", "tx"), ("MULTI",), ("EXEC",), ("MULTI",),
        ("SET", "tx", "3"), ("FOO",), ("EXEC",), ("GET", "tx"), ("MULTI",),
        ("GET",), ("INCR", "tx"), ("EXEC",), ("MULTI",), ("SET", "tx", "x"),
        ("INCR", "tx"), ("GET", "tx"), ("EXEC",), ("EXEC", "x"), ("MULTI",),
        ("EXEC", "x"), ("EXEC",), ("MULTI",), ("SET", "tx", "y"),
        ("DISCARD", "x"), ("MULTI", "x"), ("EXEC", "x"), ("GET", "tx")]
    for args in script:
        name = args[0].upper() if isinstance(args[0], str) else ""
        d.cmd(*args, compare=TIMED.get(name))
    keys = ["a", "b", "n", "p", "s", "s2", "i", "t", "m1", "m2", "new", "e",
            "e2", "h", "hc", "sec", "tx"]
    d.settle(keys)
    for opts in [(), ("MATCH", "*"), ("MATCH", "s*"), ("MATCH", "[a-e]*"),
                 ("MATCH", "?"), ("COUNT", 1), ("TYPE", "string"),
                 ("TYPE", "list"), ("MATCH", "e*", "COUNT", 3)]:
        d.scan_all(*opts)
    d.cmd("KEYS", "*", compare=same_set)
    d.cmd("KEYS", "[^e]*", compare=same_set)
    d.cmd("INFO", "keyspace", compare=keyspace_counts)
    d.cmd("DBSIZE")
    d.cmd("FLUSHALL")
    d.cmd("DBSIZE")
    d.cmd("INFO", "keyspace")
    # EXEC with arguments discards the transaction; the clock stands still
    # inside EXEC (a key set with PX 1 is still there for the next command
    # of the same EXEC, however long the queue takes).
    for args in [("EXEC", "x"), ("MULTI",), ("SET", "tx", "1"), ("EXEC", "x"),
                 ("GET", "tx"), ("EXEC",), ("MULTI",),
                 ("SET", "px", "v", "PX", "1"),
                 *[("SET", "pad%d" % i, "v" * 1000000) for i in range(10)],
                 ("GET", "px"), ("EXEC",), ("SET", "px", "kept")]:
        d.cmd(*args)
    # FLUSHALL ASYNC and FLUSHDB ASYNC empty the keyspace for the next
    # command, however many keys they free.
    for args in [("MSET", *["f%d" % i for i in range(2000)]), ("DBSIZE",),
                 ("FLUSHALL", "ASYNC"), ("DBSIZE",), ("GET", "f0"),
                 ("SET", "f0", "1"), ("FLUSHDB", "ASYNC"), ("FLUSHALL", "ASYNC"),
                 ("DBSIZE",), ("EXISTS", "f0")]:
        d.cmd(*args)


def over_the_bound(binary, t):
    """Both servers at --maxmemory 4mb, noeviction: a transaction queued
    under the bound and run after another client filled memory past it
    (EXECABORT naming the OOM error; nothing of it runs), and commands in
    MULTI once over the bound."""
    redis = Server.redis()
    c = redis.connect()
    c.call("CONFIG", "SET", "maxmemory", "4mb")
    c.close()
    cache = Server.cache(binary, "--maxmemory", "4mb")
    d = Diff(redis, cache, stop_at_first=False)
    d.t = t
    for args in [("SET", "before", "1"), ("MULTI",), ("SET", "tx", "1"),
                 ("INCR", "before")]:
        d.cmd(*args)
    fillers = []
    for srv in (redis, cache):  # another client fills memory
        f, i, full = srv.connect(), 0, False
        while not full and i < 100000:
            f.send(b"".join(encode("SET", "fill%d" % (i + j), "v" * 1000)
                            for j in range(100)))
            full = [f.reply() for _ in range(100)][-1].startswith(b"-OOM")
            i += 100
        fillers.append(f)
    # Redis counts the request it is running (the refused SET's value),
    # so it was over the bound by a hair only while running it: lower its
    # bound well below its data (the cache counts no buffers; it stays
    # over).
    fillers[0].call("CONFIG", "SET", "maxmemory", "2mb")
    for args in [("EXEC",), ("GET", "tx"), ("GET", "before"), ("MULTI",),
                 ("GET", "before"), ("PING",), ("EXEC",), ("EXEC",),
                 ("MULTI",), ("DISCARD",), ("MULTI",), ("EXEC",),
                 ("MULTI",), ("DEL", "before"), ("EXEC",), ("SET", "x", "1"),
                 ("FLUSHALL", "ASYNC"), ("DBSIZE",)]:
        d.cmd(*args)
    for f in fillers:
        f.close()
    cache.stop()
    redis.stop()
    return d.compared


# ---------------------------------------------------------- random part
KEYS = ["k0", "k1", "k2", "k3", "k4", "n0", "n1", "", "sp ace", "bin\x00ary",
        "cr\r\nlf", "\xff\xfe", "L" * 300, "k*", "K0"]
VALUES = ["v", "", "0", "1", "-1", "42", "-0", "007", "+5", " 5", "abc",
          str(LLONG_MAX), str(LLONG_MIN), str(LLONG_MAX - 1),
          str(LLONG_MIN + 1), "9" * 20, "1e3", "x\x00y", "\r\n", "V" * 1000]
BAD_TIMES = ["0", "-1", "-100", str(LLONG_MAX), str(LLONG_MIN),
             str(LLONG_MAX // 1000), str(LLONG_MAX // 1000 + 1), "abc", "+5",
             "007", "", "1.5", " 5", "9" * 25]
INCRS = ["1", "-1", "0", "100", "-100", str(LLONG_MAX), str(LLONG_MIN),
         "abc", "1.0", "+1", "007"]
PATTERNS = ["*", "k*", "k?", "k[0-2]", "*a*", "[^k]*", "\\*", "n*", "K*",
            "[a-", "L*"]


class Gen:
    """Random commands whose relative expiry times are all different by at
    least 10 s (so GT/LT never compare two expiries set by the same value
    a few ms apart, which would race in either server)."""

    def __init__(self, rnd):
        self.rnd = rnd
        self.n = 0

    def secs(self):
        self.n += 1
        return 1000 + 10 * self.n

    def time(self, unit):
        r, now = self.rnd, time.time()
        x = r.random()
        if x < 0.15:
            return r.choice(BAD_TIMES)
        if unit == "s":
            return str(self.secs())
        if unit == "ms":
            return str(self.secs() * 1000 + 500)
        if x < 0.3:  # in the past: deleted, or expired at once
            return r.choice(["1", "0", "-5", str(int(now) - 100)]) \
                if unit == "at" else r.choice(["1", str(int(now * 1000) - 5)])
        if unit == "at":
            return str(int(now) + 1000000 + 10 * self.secs() + 5)
        return str(int(now * 1000) + (1000000 + 10 * self.secs()) * 1000 + 5500)

    def key(self):
        return self.rnd.choice(KEYS)

    def name(self, s):
        r = self.rnd.random()
        return s.lower() if r < 0.2 else s.capitalize() if r < 0.3 else s

    def set_options(self, getex):
        r, opts = self.rnd, []
        for _ in range(r.choice([0, 0, 1, 1, 2, 3])):
            o = r.choice(["EX", "PX", "EXAT", "PXAT", "KEEPTTL", "PERSIST",
                          "NX", "XX", "GET", "BOGUS"] if not getex else
                         ["EX", "PX", "EXAT", "PXAT", "PERSIST", "KEEPTTL",
                          "NX", "BOGUS"])
            unit = {"EX": "s", "PX": "ms", "EXAT": "at", "PXAT": "pat"}.get(o)
            opts.append(o if r.random() < 0.8 else o.lower())
            if unit and r.random() < 0.97:
                opts.append(self.time(unit))
        return opts

    def command(self):
        r, k = self.rnd, self.key()
        c = r.choice([
            "SET", "SET", "SET", "GET", "GET", "SETNX", "SETEX", "PSETEX",
            "GETSET", "GETEX", "GETDEL", "MGET", "MSET", "INCR", "DECR",
            "INCRBY", "DECRBY", "APPEND", "STRLEN", "DEL", "UNLINK", "EXISTS",
            "TYPE", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "EXPIRE",
            "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST", "ECHO", "PING",
            "UNKNOWN", "ARITY"])
        if c == "SET":
            return ["SET", k, r.choice(VALUES)] + self.set_options(False)
        if c in ("GET", "GETDEL", "STRLEN", "TYPE", "PERSIST", "INCR", "DECR",
                 "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"):
            return [c, k]
        if c == "SETNX" or c == "GETSET" or c == "APPEND":
            return [c, k, r.choice(VALUES)]
        if c == "SETEX":
            return [c, k, self.time("s"), r.choice(VALUES)]
        if c == "PSETEX":
            return [c, k, self.time("ms"), r.choice(VALUES)]
        if c == "GETEX":
            return [c, k] + self.set_options(True)
        if c == "MGET" or c == "DEL" or c == "UNLINK" or c == "EXISTS":
            return [c] + [self.key() for _ in range(r.randint(1, 4))]
        if c == "MSET":
            args = [c]
            for _ in range(r.randint(1, 3)):
                args += [self.key(), r.choice(VALUES)]
            return args if r.random() < 0.9 else args[:-1]
        if c in ("INCRBY", "DECRBY"):
            return [c, k, r.choice(INCRS)]
        if c in ("EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"):
            unit = {"EXPIRE": "s", "PEXPIRE": "ms", "EXPIREAT": "at",
                    "PEXPIREAT": "pat"}[c]
            flags = [r.choice(["NX", "XX", "GT", "LT", "gt", "BOGUS"])
                     for _ in range(r.choice([0, 0, 1, 1, 2]))]
            return [c, k, self.time(unit)] + flags
        if c == "ECHO":
            return [c, r.choice(VALUES)]
        if c == "PING":
            return [c] + [r.choice(VALUES) for _ in range(r.choice([0, 1, 2]))]
        if c == "UNKNOWN":
            return [r.choice(["FOO", "GETT", "SE", "x" * 60, "SETT", "EXPIR"])] + \
                [r.choice(VALUES + KEYS) for _ in range(r.randint(0, 3))]
        base = self.command()  # ARITY: drop or add an argument
        return base[:-1] if r.random() < 0.5 and len(base) > 1 else base + ["extra"]


def inline_word(rnd, w):
    """w quoted as an inline request may quote it."""
    if w and all(ch.isalnum() for ch in w) and rnd.random() < 0.5:
        return w.encode("latin1")
    if rnd.random() < 0.5 or any(ord(ch) < 32 for ch in w):
        out = b'"'
        for ch in w.encode("latin1"):
            if ch in b'"\\' or ch < 32 or ch > 126 or rnd.random() < 0.1:
                out += b"\\x%02x" % ch
            else:
                out += bytes([ch])
        return out + b'"'
    return b"'" + w.encode("latin1").replace(b"\\", b"\\\\").replace(
        b"'", b"\\'") + b"'"


def randomized(d, rnd, steps):
    g = Gen(rnd)
    for step in range(steps):
        args = g.command()
        args[0] = g.name(args[0])
        if args and rnd.random() < 0.1 and all("\x00" not in a for a in args):
            line = b" ".join(inline_word(rnd, a) for a in args) + b"\r\n"
            want, got = d.both(line)
            d.compared += 1
            name = args[0].upper()
            cmp = TIMED.get(name)
            if (cmp(want, got) if cmp else want == got):
                d.t.passed += 1
            else:
                d.fail("step %d inline %r" % (step, line), want, got)
            if want.startswith(b"-ERR Protocol error"):
                d.reconnect()  # both closed the connection
        else:
            d.cmd(*args, compare=TIMED.get(args[0].upper()))
        if step % 500 == 499:
            d.settled(KEYS, "DBSIZE")
            d.scan_all("MATCH", rnd.choice(PATTERNS),
                       "COUNT", rnd.choice([1, 3, 10, 100]))
            d.cmd("KEYS", rnd.choice(PATTERNS), compare=same_set)
            d.settled(KEYS, "INFO", "keyspace", compare=keyspace_counts)
        if step % 5000 == 4999:
            d.cmd(rnd.choice(["FLUSHDB", "FLUSHALL"]),
                  *rnd.choice([[], ["SYNC"], ["ASYNC"], ["BOGUS"]]))



# ------------------------------------------------------ connection part
def check_ids(t, cache):
    """The cache's client ids (not compared with Redis's): one connection
    has one id in CLIENT ID, HELLO and CLIENT INFO; a later one a larger
    id; CLIENT LIST ID finds it."""
    a, b = cache.connect(), cache.connect()
    ida, idb = decode(a.call("CLIENT", "ID")), decode(b.call("CLIENT", "ID"))
    t.check(type(ida) is int and type(idb) is int and 0 < ida < idb,
            "client ids grow: %r then %r" % (ida, idb))
    h = decode(a.call("HELLO", "2"))
    t.equal(h[h.index(b"id") + 1], ida, "HELLO's id is CLIENT ID's")
    info = decode(a.call("CLIENT", "INFO")).decode()
    t.check(info.startswith("id=%d " % ida), "CLIENT INFO's id: %r" % info)
    lst = decode(a.call("CLIENT", "LIST", "ID", idb, ida)).decode()
    t.check(lst.startswith("id=%d " % idb) and "\nid=%d " % ida in lst,
            "CLIENT LIST ID lists both, in the order asked: %r" % lst)
    a.close()
    b.close()


def sessions(d):
    """The connection's commands, without a password."""
    d.reconnect()
    for args in [
            ("HELLO",), ("HELLO", 2), ("hello", "2", "setname", "app"),
            ("CLIENT", "GETNAME"), ("HELLO", "4"), ("HELLO", "1"),
            ("HELLO", "abc"), ("HELLO", "02"), ("HELLO", "2", "SETNAME"),
            ("HELLO", "2", "AUTH", "default"), ("HELLO", "2", "FOO"),
            ("HELLO", "2", "AUTH", "default", "anything"),
            ("HELLO", "2", "AUTH", "bob", "x"), ("HELLO", "2", "x\r\ny"),
            ("HELLO", "2", "F" * 2000), ("HELLO", "2", "SETNAME", "a b"),
            ("HELLO", "2", "SETNAME", "ok", "BOGUS"), ("CLIENT", "GETNAME"),
            ("AUTH",), ("AUTH", "x"), ("AUTH", "default", "x"),
            ("AUTH", "Default", "x"), ("AUTH", "", ""), ("AUTH", "a", "b", "c"),
            ("CLIENT",), ("CLIENT", "FOO"), ("client", "bar\x00baz"),
            ("CLIENT", "F" * 300), ("CLIENT", "SETNAME"),
            ("CLIENT", "SETNAME", "a", "b"), ("CLIENT", "SETNAME", "a b"),
            ("CLIENT", "SETNAME", "a\nb"), ("CLIENT", "SETNAME", "\xe9"),
            ("CLIENT", "SETNAME", "x\x00"), ("CLIENT", "SETNAME", "~!"),
            ("CLIENT", "GETNAME"), ("CLIENT", "SETNAME", ""),
            ("CLIENT", "GETNAME"), ("CLIENT", "GETNAME", "x"),
            ("CLIENT", "ID", "x"), ("CLIENT", "INFO", "x"),
            ("CLIENT", "SETNAME", "worker-1"), ("CLIENT", "LIST", "TYPE", "master"),
            ("CLIENT", "LIST", "TYPE", "replica"), ("CLIENT", "LIST", "TYPE", "slave"),
            ("CLIENT", "LIST", "TYPE", "pubsub"), ("CLIENT", "LIST", "TYPE", "bogus"),
            ("CLIENT", "LIST", "TYPE", "x\r\ny"), ("CLIENT", "LIST", "TYPE"),
            ("CLIENT", "LIST", "TYPE", "normal", "x"), ("CLIENT", "LIST", "ID"),
            ("CLIENT", "LIST", "ID", "x"), ("CLIENT", "LIST", "ID", "1", "x"),
            ("CLIENT", "LIST", "ID", 0), ("CLIENT", "LIST", "ID", -5),
            ("CLIENT", "LIST", "ID", 99999), ("CLIENT", "LIST", "BOGUS"),
            ("COMMAND", "FOO"), ("COMMAND", "COUNT", "x"), ("RESET", "x"),
            ("SELECT", 0), ("SELECT", 1)]:
        d.cmd(*args, compare=hello if args[0].upper() == "HELLO" else None)
    d.cmd("COMMAND", "COUNT", compare=integer)
    d.cmd("CLIENT", "ID", compare=integer)
    for args in [("CLIENT", "INFO"), ("CLIENT", "LIST"),
                 ("CLIENT", "LIST", "TYPE", "normal"),
                 ("CLIENT", "LIST", "TYPE", "NORMAL")]:
        d.cmd(*args, compare=client_lines)
    # RESET: the name goes, a transaction is discarded
    d.cmd("MULTI")
    d.cmd("SET", "rk", "1")
    d.cmd("CLIENT", "SETNAME", "inmulti")
    d.cmd("CLIENT", "INFO")  # queued
    d.cmd("RESET")
    d.cmd("EXEC")
    d.cmd("GET", "rk")
    d.cmd("CLIENT", "GETNAME")
    d.cmd("CLIENT", "INFO", compare=client_lines)
    # inside MULTI: queued and run by EXEC (HELLO, AUTH, CLIENT)
    for args in [("MULTI",), ("CLIENT", "SETNAME", "tx"), ("HELLO", "2"),
                 ("AUTH", "x"), ("AUTH", "default", "x"), ("CLIENT", "GETNAME"),
                 ("COMMAND", "FOO"), ("EXEC",), ("MULTI",),
                 ("CLIENT", "SETNAME", "tx2"), ("CLIENT", "GETNAME"),
                 ("EXEC",), ("MULTI",), ("SET", "q", "1"), ("CLIENT", "INFO")]:
        d.cmd(*args, compare=hello if args[0] == "EXEC" else None)
    d.cmd("EXEC", compare=exec_client_info)
    d.cmd("CLIENT", "GETNAME")
    d.raw(b"MULTI\r\nSET q 2\r\nQUIT\r\nPING\r\n", "QUIT inside MULTI")
    d.cmd("GET", "q")
    # HELLO 3 (allow-listed): a connection of its own, as Redis's answer
    # switches that connection to RESP3
    c = d.cache.connect()
    d.t.equal(c.call("HELLO", "3"), b"-NOPROTO unsupported protocol "
              b"version\r\n", "HELLO 3 (RESP3 is not implemented)")
    d.t.equal(c.call("PING"), b"+PONG\r\n", "RESP2 after HELLO 3")
    c.close()
    check_ids(d.t, d.cache)


PASSWORD = "pa ss:word\xe9-42"  # a space, a colon, a UTF-8 letter


def noauth_commands():
    """Every command of the cache's subset with a valid arity."""
    return [("GET", "k"), ("SET", "k", "v"), ("SETNX", "k", "v"),
            ("SETEX", "k", 10, "v"), ("PSETEX", "k", 10, "v"),
            ("GETSET", "k", "v"), ("GETEX", "k"), ("GETDEL", "k"),
            ("MGET", "k"), ("MSET", "k", "v"), ("APPEND", "k", "v"),
            ("STRLEN", "k"), ("INCR", "k"), ("DECR", "k"), ("INCRBY", "k", 1),
            ("DECRBY", "k", 1), ("DEL", "k"), ("UNLINK", "k"), ("EXISTS", "k"),
            ("TYPE", "k"), ("TTL", "k"), ("PTTL", "k"), ("EXPIRETIME", "k"),
            ("PEXPIRETIME", "k"), ("EXPIRE", "k", 10), ("PEXPIRE", "k", 10),
            ("EXPIREAT", "k", 10), ("PEXPIREAT", "k", 10), ("PERSIST", "k"),
            ("SCAN", 0), ("KEYS", "*"), ("DBSIZE",), ("FLUSHDB",),
            ("FLUSHALL",), ("PING",), ("PING", "x"), ("ECHO", "x"), ("INFO",),
            ("SELECT", 0), ("SELECT", 1), ("CONFIG", "GET", "*"), ("COMMAND",),
            ("COMMAND", "COUNT"), ("COMMAND", "DOCS"), ("MULTI",), ("EXEC",),
            ("DISCARD",), ("CLIENT", "ID"), ("CLIENT", "SETNAME", "x"),
            ("CLIENT", "GETNAME"), ("CLIENT", "INFO"), ("CLIENT", "LIST"),
            ("HELLO",), ("HELLO", 2), ("HELLO", 2, "SETNAME", "x")]


def password_script(pw):
    wrong = [pw[:-1], pw[:1], "", pw + "x", pw.upper(), pw[:-1] + "3",
             "x" + pw[1:], pw + "\x00", "\x00" + pw, "s3cret"]
    script = [("AUTH",), ("GET",), ("FOO", "x"), ("CLIENT", "FOO"),
              ("CLIENT", "SETNAME"), ("COMMAND", "FOO"), ("CONFIG", "FOO")]
    script += noauth_commands()
    script += [("EXEC", "x"), ("MULTI", "x"), ("RESET",)]
    for w in wrong:
        script += [("AUTH", w), ("AUTH", "default", w),
                   ("HELLO", 2, "AUTH", "default", w), ("PING",)]
    script += [("AUTH", "bob", pw), ("AUTH", "DEFAULT", pw), ("AUTH", "", pw),
               ("HELLO", 2, "AUTH", "bob", pw), ("AUTH", pw, "x"),
               ("AUTH", "a", "b", "c"), ("HELLO", "3"),
               ("HELLO", 2, "SETNAME", "early"), ("HELLO", 2, "AUTH", "default"),
               ("HELLO", 2, "SETNAME", "a b", "AUTH", "default", pw), ("PING",),
               ("HELLO", 2, "AUTH", "default", pw, "BOGUS"), ("PING",),
               ("HELLO", 2, "AUTH", "default", pw, "SETNAME", "a b"),
               ("PING",), ("CLIENT", "GETNAME"), ("RESET",), ("PING",),
               ("AUTH", pw), ("PING",), ("AUTH", "wrong"), ("PING",),
               ("AUTH", "default", pw), ("SET", "k", "v"), ("GET", "k"),
               ("RESET",), ("GET", "k"), ("AUTH", "default", pw),
               ("MULTI",), ("AUTH", "wrong"), ("RESET",), ("EXEC",), ("GET", "k"),
               ("HELLO", 2, "AUTH", "default", pw, "SETNAME", "app"),
               ("CLIENT", "GETNAME"), ("RESET",), ("CLIENT", "GETNAME"),
               ("QUIT",)]
    return script


def with_password(t, binary, fault):
    """Part 4: a pair that requires the same password."""
    pw = PASSWORD
    redis = Server.redis("--databases", "1", "--requirepass", pw)
    flags = ["--plant-fault", fault] if fault else []
    cache = Server.cache(binary, *flags,
                         env={"ROTA_TTL_CACHE_REQUIREPASS": pw})
    d = Diff(redis, cache, fault is not None, t)
    try:
        for args in password_script(pw):
            if args[0] == "QUIT":
                d.reconnect()
                continue
            d.cmd(*args, compare=hello3 if args[:2] == ("HELLO", "3") else
                  hello if args[0] == "HELLO" else None)
        # inline AUTH, and a whole unauthenticated exchange up to QUIT
        d.raw(b'AUTH "' + pw.encode() + b'"\r\nGET k\r\nQUIT\r\n',
              "inline AUTH")
        d.raw(b"GET k\r\nAUTH x\r\nQUIT\r\n", "NOAUTH then QUIT")
        # Redis's bounds for a client not yet authenticated
        d.raw(encode("DEL", *["k"] * 9), "unauthenticated: 10 elements")
        d.raw(encode("DEL", *["k"] * 10), "unauthenticated: 11 elements")
        d.raw(encode("ECHO", "e" * 16384), "unauthenticated: a 16 KiB bulk")
        d.raw(b"*2\r\n$4\r\nECHO\r\n$16385\r\n" + b"e" * 16385 + b"\r\n",
              "unauthenticated: a 16 KiB + 1 bulk")
        d.raw(encode("AUTH", pw) + encode("DEL", *["k"] * 100) +
              encode("ECHO", "e" * 100000), "authenticated: no such bounds")
        d.raw(encode("PING") * 1000, "unauthenticated: 34 KB of replies "
              "left unread (closed; what was sent first may differ)",
              compare=lambda w, g: not w.endswith(b"<open>") and
              not g.endswith(b"<open>"))
    finally:
        status = cache.stop()
        redis.stop()
    if fault is None:
        t.equal(status, 0, "password cache's exit status after SIGTERM")


def protected_mode(t, binary, fault=None):
    """Part 5: protected mode, from a non-loopback address.  (A refused
    client is sent nothing: the server closes with its input unread,
    which resets the connection, and a reset can overtake the DENIED
    text; Redis and the cache alike.)"""
    addr = non_loopback_address()
    if addr is None:
        print("protected mode part skipped: this machine has no IPv4 "
              "address off loopback to connect from (hostname -I)")
        return False
    print("protected mode: clients from %s" % addr, flush=True)
    flags = ("--plant-fault", fault) if fault else ()
    pw = "pm-secret"
    pairs = [
        ("no password", ("--databases", "1"), (), {}, addr),
        ("protected-mode no", ("--databases", "1", "--protected-mode", "no"),
         ("--protected-mode", "no"), {}, addr),
        ("a password", ("--databases", "1", "--requirepass", pw),
         ("--requirepass", pw), {}, addr),
        ("bound to 0.0.0.0, loopback client", ("--databases", "1"), (), {},
         "0.0.0.0"),
    ]
    for what, rflags, cflags, env, bind in pairs:
        redis = Server.redis(*rflags, bind=bind)
        cache = Server.cache(binary, "--bind", bind, *cflags, *flags,
                             env=env)
        src = addr if bind != "0.0.0.0" else "127.0.0.1"
        d = Diff(redis, cache, False, t, connect=False)
        try:
            if what == "no password":
                d.raw(b"", "%s: connect and say nothing" % what, source=src)
            else:
                d.raw(encode("PING") + encode("AUTH", pw) + encode("PING") +
                      encode("SET", "k", "v") + encode("GET", "k") +
                      encode("QUIT"), "%s: PING, AUTH, PING, SET, GET" % what,
                      source=src)
        except Mismatch:
            pass
        if what == "no password":
            warn = cache.stderr()
            t.check("warning" in warn and "without a password" in warn and
                    "protected mode refuses" in warn,
                    "a warning at start: %r" % warn)
        if what == "protected-mode no":
            t.check("anyone who can reach" in cache.stderr(),
                    "a warning at start without protected mode")
        t.equal(cache.stop(), 0, "%s: cache's exit status" % what)
        redis.stop()
    return True


if __name__ == "__main__":
    main()
