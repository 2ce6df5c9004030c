#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""mem_per_key.py - memory per key of rota-ttl-cache and redis-server.

    mem_per_key.py PATH/TO/rota-ttl-cache [N]

Sets N keys (default 1,000,000; "key:%08d", 12 bytes) to 20-byte values
with a one-hour TTL on each server, pipelined, and prints the growth of
INFO memory's used_memory and of the process's RSS divided by N.  Then
times FLUSHALL ASYNC on the loaded server and a PING sent right after it.
A measurement, not a test: both servers run in this one process's run,
so their figures can be compared.
"""
import sys
import time

from cachetest import Server, decode, encode


def used(conn):
    text = decode(conn.call("INFO", "memory")).decode()
    return int(dict(line.split(":", 1) for line in text.split("\r\n")
                    if ":" in line)["used_memory"])


def measure(name, srv, n):
    c = srv.connect(timeout=120)
    mem0, rss0 = used(c), srv.rss_kb()
    batch = 10000
    for first in range(0, n, batch):
        c.send(b"".join(encode("SET", "key:%08d" % i, "v" * 20, "EX", 3600)
                        for i in range(first, min(n, first + batch))))
        for _ in range(first, min(n, first + batch)):
            c.reply()
    mem1, rss1 = used(c), srv.rss_kb()
    print("%-16s %9d keys: used_memory %6.1f bytes a key (%d MB), RSS %6.1f "
          "bytes a key" % (name, n, (mem1 - mem0) / n, mem1 >> 20,
                           (rss1 - rss0) * 1024 / n), flush=True)
    t0 = time.perf_counter()
    c.call("FLUSHALL", "ASYNC")
    t1 = time.perf_counter()
    c.call("PING")
    t2 = time.perf_counter()
    print("%-16s FLUSHALL ASYNC answered in %.1f ms, the next PING in %.1f ms"
          % (name, (t1 - t0) * 1e3, (t2 - t1) * 1e3))
    c.close()
    srv.stop()


def main():
    n = int(float(sys.argv[2])) if len(sys.argv) > 2 else 1000000
    measure("rota-ttl-cache", Server.cache(sys.argv[1]), n)
    redis = Server.redis()
    if redis is not None:
        measure("redis-server", redis, n)


main()
