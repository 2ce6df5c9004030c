#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_eviction.py - the memory bound as the key table grows.

    test_eviction.py PATH/TO/rota-ttl-cache curve|noeviction

Small keys and values (12-byte keys, 20-byte values, a TTL), the case in
which the key table is most of the memory, sent in batches of 100 SETs,
each followed by INFO.  The table grows by half at 3/4 load, and the new table
is allocated beside the old one: memory that a cache must have counted
before it comes, or one command pays for all of it.

  curve       --maxmemory 16mb, allkeys-lru, 300,000 SETs: no batch of
              100 SETs evicts more than MAX_PER_BATCH keys (a cliff
              evicts a fifth or more of the keys in one command), and
              the cache still holds a fair number of keys.
  noeviction  --maxmemory 16mb, noeviction, SETs until Redis's OOM
              error: used_memory never passes the bound by more than
              one SET's own bytes (a growth of the table would pass it
              by megabytes).

When redis-server is installed the same stream is sent to it too
(CONFIG SET maxmemory) and its figures printed beside the cache's, not
judged.  Standard library only; ends with "N passed, N failed".
"""
import sys

from cachetest import Server, Tally, decode, encode

BOUND = 16 << 20
BATCH = 100
MAX_PER_BATCH = 1000  # 10 keys per SET: a small bounded number
VALUE = b"x" * 20
OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"


def info(conn, section):
    text = decode(conn.call("INFO", section)).decode()
    return dict(line.split(":", 1) for line in text.split("\r\n")
                if ":" in line)


def stream(conn, first, batches, section):
    """Send `batches` batches of BATCH SETs, each followed by INFO
    `section`, ten batches per write; yield (replies, info) per batch."""
    n = first
    for group in range(0, batches, 10):
        data = []
        for _ in range(min(10, batches - group)):
            data += [encode("SET", "key:%08d" % (n + i), VALUE, "EX", 3600)
                     for i in range(BATCH)]
            data.append(encode("INFO", section))
            n += BATCH
        conn.send(b"".join(data))
        for _ in range(min(10, batches - group)):
            replies = [conn.reply() for _ in range(BATCH)]
            text = decode(conn.reply()).decode()
            yield replies, dict(line.split(":", 1)
                                for line in text.split("\r\n") if ":" in line)


def curve(srv, batches):
    """Largest eviction in one batch, keys held at the end."""
    c = srv.connect(timeout=60)
    worst, last = 0, 0
    for _, st in stream(c, 0, batches, "stats"):
        evicted = int(st["evicted_keys"])
        worst = max(worst, evicted - last)
        last = evicted
    keys = int(decode(c.call("DBSIZE")))
    c.close()
    return worst, last, keys


def noeviction(srv):
    """Most used_memory seen after a batch, SETs accepted."""
    c = srv.connect(timeout=60)
    most, accepted, n = 0, 0, 0
    while True:
        full = False
        for replies, mem in stream(c, n, 10, "memory"):
            n += BATCH
            accepted += replies.count(b"+OK\r\n")
            most = max(most, int(mem["used_memory"]))
            full = full or replies[-1] == OOM
        if full or n > 2000000:
            break
    c.close()
    return most, accepted


def redis_beside(mode, policy):
    redis = Server.redis()
    if redis is None:
        return None
    c = redis.connect()
    c.call("CONFIG", "SET", "maxmemory-policy", policy)
    c.call("CONFIG", "SET", "maxmemory", str(BOUND))
    c.close()
    out = curve(redis, 3000) if mode == "curve" else noeviction(redis)
    redis.stop()
    return out


def main():
    binary, mode = sys.argv[1], sys.argv[2]
    t = Tally()
    if mode == "curve":
        srv = Server.cache(binary, "--maxmemory", "16mb",
                           "--maxmemory-policy", "allkeys-lru")
        worst, evicted, keys = curve(srv, 3000)
        print("cache: largest eviction in one batch of %d SETs: %d keys; "
              "%d evicted, %d held" % (BATCH, worst, evicted, keys))
        theirs = redis_beside(mode, "allkeys-lru")
        if theirs:
            print("redis-server: largest %d, %d evicted, %d held" % theirs)
        t.check(evicted > 0, "the bound was reached (%d evicted)" % evicted)
        t.check(worst <= MAX_PER_BATCH,
                "no cliff: at most %d keys evicted by %d SETs (largest %d)"
                % (MAX_PER_BATCH, BATCH, worst))
        t.check(keys >= 40000, "%d keys held in 16 MB" % keys)
    else:
        srv = Server.cache(binary, "--maxmemory", "16mb",
                           "--maxmemory-policy", "noeviction")
        most, accepted = noeviction(srv)
        print("cache: %d SETs accepted, used_memory at most %d (bound %d)"
              % (accepted, most, BOUND))
        theirs = redis_beside(mode, "noeviction")
        if theirs:
            print("redis-server: %d SETs accepted, used_memory at most %d"
                  % (theirs[1], theirs[0]))
        t.check(accepted >= 40000, "%d SETs accepted" % accepted)
        t.check(most <= BOUND + 1024,
                "used_memory %d never past the bound %d by more than one "
                "SET" % (most, BOUND))
    t.equal(srv.stop(), 0, "exit status 0")
    t.finish()


main()
