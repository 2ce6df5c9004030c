#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_maxmemory.py - rota-ttl-cache filled past --maxmemory.

    test_maxmemory.py PATH/TO/rota-ttl-cache

For each policy the cache is started with a 4 MB bound and filled with
1,000-byte values well past it.  Claims:
  - noeviction: commands that add data get Redis's -OOM error once the
    bound is passed, reads, deletes and EXPIRE still work, and deleting
    makes room again;
  - volatile-ttl: only keys with a TTL are evicted, those nearest to
    expiry first; once none is left, writes get -OOM;
  - volatile-lru and volatile-random, with keys with a TTL a few percent
    of all keys: each SET with a TTL evicts one of them, never another;
  - allkeys-lru: keys read recently survive, keys never read go;
  - every policy: after any command, INFO memory's used_memory is within
    maxmemory, and INFO reports the bound, the policy and evicted_keys.
Standard library only; ends with "N passed, N failed".
"""
import sys

from cachetest import Server, Tally, decode, encode

BOUND = 4 << 20
VALUE = b"v" * 1000
OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"

t = Tally()
binary = sys.argv[1]


def pipeline(conn, commands):
    conn.send(b"".join(encode(*c) for c in commands))
    return [conn.reply() for _ in commands]


def info(conn, section):
    text = decode(conn.call("INFO", section)).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n")
                if ":" in line)


def within_bound(conn, what, slack=0):
    """used_memory within the bound; with `slack` when nothing can be
    evicted: the last command let in may have grown the index or the
    map's table past it (Redis too checks before a command, not after)."""
    conn.call("PING")  # eviction runs before each command
    used = int(info(conn, "memory")["used_memory"])
    t.check(0 < used <= BOUND + slack, "%s: used_memory %d within %d + %d"
            % (what, used, BOUND, slack))


def start(policy):
    return Server.cache(binary, "--maxmemory", "4mb", "--maxmemory-policy",
                        policy)


# ------------------------------------------------------------ noeviction
srv = start("noeviction")
c = srv.connect()
replies = pipeline(c, [("SET", "k%d" % i, VALUE) for i in range(8000)])
ok = replies.count(b"+OK\r\n")
t.check(1000 < ok < 8000, "noeviction: %d of 8,000 SETs before the bound" % ok)
t.equal(replies[-1], OOM, "noeviction: then Redis's OOM error")
t.check(all(r == OOM for r in replies[ok:]), "noeviction: every SET after it")
for cmd in (("INCR", "counter"), ("MSET", "a", "1"), ("SETEX", "a", 10, "x"),
            ("APPEND", "k0", "x"), ("SETNX", "new", "1")):
    t.equal(c.call(*cmd), OOM, "noeviction: %s refused" % cmd[0])
t.equal(c.call("GET", "k0"), b"$1000\r\n" + VALUE + b"\r\n", "GET still works")
t.equal(c.call("EXPIRE", "k1", 1000), b":1\r\n", "EXPIRE still works")
t.equal(c.call("DBSIZE"), b":%d\r\n" % ok, "nothing was evicted")
within_bound(c, "noeviction", 256 << 10)
t.equal(c.call("DEL", *["k%d" % i for i in range(100)]), b":100\r\n", "DEL")
t.equal(c.call("SET", "again", VALUE), b"+OK\r\n", "room again after DEL")
m = info(c, "memory")
t.equal((m["maxmemory"], m["maxmemory_policy"]), (str(BOUND), "noeviction"),
        "INFO memory reports the bound and the policy")
t.equal(info(c, "stats")["evicted_keys"], "0", "evicted_keys 0")
c.close()
t.equal(srv.stop(), 0, "exit status 0")

# ---------------------------------------------------------- volatile-ttl
# TTLs fall as keys are added: the newest keys are nearest to expiry, so
# volatile-ttl must evict mostly new keys (LRU or FIFO would evict old).
srv = start("volatile-ttl")
c = srv.connect()
pipeline(c, [("SET", "p%d" % i, VALUE) for i in range(500)])
n = 6000
replies = pipeline(c, [("SET", "v%d" % i, VALUE, "EX", 100000 - 10 * i)
                       for i in range(n)])
t.check(all(r == b"+OK\r\n" for r in replies), "volatile-ttl: every SET ran")
within_bound(c, "volatile-ttl")
alive = [r == b":1\r\n" for r in
         pipeline(c, [("EXISTS", "v%d" % i) for i in range(n)])]
old, new = sum(alive[:n // 5]), sum(alive[-n // 5:])
t.check(sum(alive) < n * 0.8, "volatile-ttl: %d of %d evicted" % (n - sum(alive), n))
# Sampling finds the nearest expiries approximately, as in Redis: with this
# fill redis-server 7.0 keeps all of the first fifth and 44% of the last.
t.check(old >= 0.95 * n / 5 and new <= 0.7 * n / 5,
        "volatile-ttl: the longest TTLs survive (%d of the first fifth, "
        "%d of the last)" % (old, new))
persistent = pipeline(c, [("EXISTS", "p%d" % i) for i in range(500)])
t.check(all(r == b":1\r\n" for r in persistent),
        "volatile-ttl: no key without a TTL evicted")
t.check(int(info(c, "stats")["evicted_keys"]) > 0, "evicted_keys counted")
# Only persistent keys left to fill with: the policy cannot make room.
replies = pipeline(c, [("SET", "q%d" % i, VALUE) for i in range(8000)])
t.equal(replies[-1], OOM, "volatile-ttl: OOM once no key has a TTL")
t.equal(c.call("DBSIZE")[:1], b":", "DBSIZE answers")
t.check(all(r == b":1\r\n" for r in
            pipeline(c, [("EXISTS", "p%d" % i) for i in range(500)])),
        "volatile-ttl: the persistent keys are all still there")
within_bound(c, "volatile-ttl after OOM", 256 << 10)
c.close()
t.equal(srv.stop(), 0, "exit status 0")

# ------------------------------------ volatile-*, keys with a TTL rare
# The keys with a TTL are a few percent of the keys, so random draws
# from all keys often find none and the cache walks to one: every SET
# with a TTL must still evict one of them, never a persistent key.
for policy in ("volatile-lru", "volatile-random"):
    srv = start(policy)
    c = srv.connect()
    pipeline(c, [("SET", "p%d" % i, VALUE) for i in range(3400)])
    replies = pipeline(c, [("SET", "v%d" % i, VALUE, "EX", 100000)
                           for i in range(3000)])
    t.check(all(r == b"+OK\r\n" for r in replies),
            "%s, rare TTLs: every SET with a TTL ran" % policy)
    within_bound(c, policy + ", rare TTLs")
    persistent = pipeline(c, [("EXISTS", "p%d" % i) for i in range(3400)])
    t.check(all(r == b":1\r\n" for r in persistent),
            "%s, rare TTLs: no key without a TTL evicted" % policy)
    alive = sum(r == b":1\r\n" for r in
                pipeline(c, [("EXISTS", "v%d" % i) for i in range(3000)]))
    t.check(0 < alive < 3000 * 0.1,
            "%s, rare TTLs: %d keys with a TTL held" % (policy, alive))
    c.close()
    t.equal(srv.stop(), 0, "exit status 0")

# ----------------------------------------------------------- allkeys-lru
srv = start("allkeys-lru")
c = srv.connect()
hot = ["hot%d" % i for i in range(200)]
pipeline(c, [("SET", k, VALUE) for k in hot])
for batch in range(40):
    pipeline(c, [("SET", "cold%d" % (batch * 250 + i), VALUE)
                 for i in range(250)])
    pipeline(c, [("GET", k) for k in hot])  # keep them recently used
hot_alive = sum(r == b":1\r\n" for r in
                pipeline(c, [("EXISTS", k) for k in hot]))
cold = pipeline(c, [("EXISTS", "cold%d" % i) for i in range(10000)])
cold_alive = sum(r == b":1\r\n" for r in cold)
t.check(hot_alive >= 190, "allkeys-lru: %d of 200 hot keys survive" % hot_alive)
t.check(cold_alive < 4000, "allkeys-lru: %d of 10,000 cold keys survive"
        % cold_alive)
within_bound(c, "allkeys-lru")
t.equal(info(c, "memory")["maxmemory_policy"], "allkeys-lru", "policy shown")
c.close()
t.equal(srv.stop(), 0, "exit status 0")
t.finish()
