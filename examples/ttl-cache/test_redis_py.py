#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_redis_py.py - rota-ttl-cache through redis-py, as an application.

    test_redis_py.py PATH/TO/rota-ttl-cache

Uses the redis package (Debian: python3-redis) the way an application
does: plain and transactional pipelines, a fixed-window rate limiter built
on INCR + EXPIRE NX, SET with GET/EXAT/PXAT, GETEX/GETDEL, INFO parsed by
the client, errors raised as exceptions, and SCAN iteration over 100,000
keys while keys are added and deleted; then a server with a password
(ROTA_TTL_CACHE_REQUIREPASS) as an application connects to it: password=,
username= and client_name= on every pooled connection, CLIENT ID / INFO
/ LIST / GETNAME parsed by the client, COMMAND COUNT, db=0 accepted and
db=1 refused with Redis's error, a wrong or missing password raised as
against redis-server (WRONGPASS a ResponseError, NOAUTH an
AuthenticationError).  Exits 77 (skipped) when the redis
package is not installed.  Ends with "N passed, N failed".
"""
import os
import sys

try:
    import redis
except ImportError:
    # A python3 of its own (pyenv, a venv) may not see Debian's package.
    if os.path.exists("/usr/bin/python3") and \
            not os.environ.get("ROTA_REEXEC") and \
            os.path.realpath(sys.executable) != "/usr/bin/python3":
        os.environ["ROTA_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("SKIP: the redis Python package is not installed "
          "(Debian: apt-get install python3-redis)")
    sys.exit(77)

import time

from cachetest import Server, Tally

t = Tally()
srv = Server.cache(sys.argv[1])
r = redis.Redis(host="127.0.0.1", port=srv.port, decode_responses=True)

# ------------------------------------------------------------- pipelines
p = r.pipeline(transaction=False)
for i in range(1000):
    p.set("p:%d" % i, i)
for i in range(1000):
    p.get("p:%d" % i)
res = p.execute()
t.equal(res[:1000], [True] * 1000, "pipeline: 1,000 SETs")
t.equal(res[1000:], [str(i) for i in range(1000)], "pipeline: 1,000 GETs")
with r.pipeline() as tx:  # MULTI ... EXEC, redis-py's default
    tx.incr("tx").incr("tx").expire("tx", 100).ttl("tx")
    t.equal(tx.execute(), [1, 2, True, 100], "transactional pipeline")
try:
    with r.pipeline() as tx:
        tx.set("tx", "x").incr("tx").get("tx")
        tx.execute()
    t.check(False, "a failing command in a transaction raises")
except redis.ResponseError as e:
    t.check("not an integer" in str(e), "the transaction's error: %s" % e)
t.equal(r.get("tx"), "x", "the other commands of the transaction ran")

# ---------------------------------------------------------- rate limiter
# At most 10 requests per user per window; the window's counter expires by
# itself (EXPIRE NX: set once, when the window opens, never extended).
def allowed(user, limit=10, window_s=1):
    key = "rl:%s:%d" % (user, int(time.time() // window_s))
    with r.pipeline() as p:
        count, _ = p.incr(key).expire(key, window_s + 1, nx=True).execute()
    return count <= limit, key

# Start just after a window opens, so 15 calls fall in one window.
time.sleep(1 - time.time() % 1 + 0.01)
verdicts = [allowed("alice")]
key = verdicts[0][1]
first_expiry = r.execute_command("PEXPIRETIME", key)
time.sleep(0.05)
verdicts += [allowed("alice") for _ in range(14)]
t.equal([v for v, _ in verdicts], [True] * 10 + [False] * 5,
        "rate limiter: 10 allowed, 5 refused")
t.equal(r.get(key), "15", "rate limiter: the counter")
t.equal(r.execute_command("PEXPIRETIME", key), first_expiry,
        "rate limiter: the expiry set once, never extended")
t.equal(allowed("bob")[0], True, "rate limiter: another user has own window")
time.sleep(2.2)
t.equal(r.exists(key), 0, "rate limiter: the window's key expired")
t.equal(allowed("alice")[0], True, "rate limiter: allowed again")

# -------------------------------------------------- SET GET / EXAT / PXAT
now = int(time.time())
t.equal(r.set("s", "v1"), True, "SET")
t.equal(r.set("s", "v2", get=True, exat=now + 100), "v1", "SET GET EXAT")
t.check(99 <= r.ttl("s") <= 100, "TTL after EXAT: %d" % r.ttl("s"))
t.equal(r.execute_command("EXPIRETIME", "s"), now + 100, "EXPIRETIME")
t.equal(r.set("s", "v3", get=True, pxat=(now + 200) * 1000, xx=True), "v2",
        "SET GET PXAT XX")
t.equal(r.set("s", "v4", nx=True, get=True), "v3", "SET NX GET on a key")
t.equal(r.set("s", "v5", keepttl=True), True, "SET KEEPTTL")
t.check(199 <= r.ttl("s") <= 200, "TTL kept: %d" % r.ttl("s"))
t.equal(r.set("gone", "v", exat=now - 10), True, "SET EXAT in the past")
t.equal(r.get("gone"), None, "... expired at once")
t.equal(r.getex("s", persist=True), "v5", "GETEX PERSIST")
t.equal(r.ttl("s"), -1, "... no TTL")
t.equal(r.getdel("s"), "v5", "GETDEL")
t.equal(r.exists("s"), 0, "... gone")
t.equal(r.mset({"a": 1, "b": 2}), True, "MSET")
t.equal(r.mget("a", "nope", "b"), ["1", None, "2"], "MGET")
t.equal(r.type("a"), "string", "TYPE")
t.equal(r.incrby("a", 41), 42, "INCRBY")
try:
    r.incr("p:zz") and r.set("p:zz", "x") and r.incr("p:zz")
    t.check(False, "INCR of a non-integer raises")
except redis.ResponseError as e:
    t.check("not an integer" in str(e), "INCR error: %s" % e)
t.check(isinstance(r.info("memory")["used_memory"], int), "INFO memory")

# ---------------------------------------------------------------- SCAN
r.flushdb()
n = 100000
p = r.pipeline(transaction=False)
for i in range(0, n, 1000):
    p.mset({"key:%d" % j: j for j in range(i, i + 1000)})
p.execute()
t.equal(r.dbsize(), n, "100,000 keys")
t.equal(r.info("keyspace")["db0"]["keys"], n, "INFO keyspace, parsed")
seen = set(r.scan_iter(match="key:*", count=1000))
t.equal(len(seen), n, "scan_iter: every key once at least")
t.equal(seen, {"key:%d" % i for i in range(n)}, "scan_iter: the right keys")
t.equal(len(set(r.scan_iter(match="key:1?", count=500))), 10,
        "scan_iter MATCH key:1?")
# Keys present for the whole iteration are returned even while others
# are deleted and added (the SCAN guarantee).
seen, cursor, step = set(), 0, 0
while True:
    cursor, keys = r.scan(cursor, match="key:*", count=2000)
    seen.update(keys)
    r.delete(*["key:%d" % (step * 50 + j) for j in range(50)])  # low ones
    r.mset({"new:%d:%d" % (step, j): 1 for j in range(50)})
    step += 1
    if cursor == 0:
        break
stable = {"key:%d" % i for i in range(step * 50, n)}
t.check(stable <= seen, "SCAN under churn: %d of %d stable keys seen"
        % (len(stable & seen), len(stable)))
r.close()
t.equal(srv.stop(), 0, "exit status 0")

# ------------------------------------------- a password and client names
pw = "app-secret"
srv = Server.cache(sys.argv[1], env={"ROTA_TTL_CACHE_REQUIREPASS": pw})
r = redis.Redis(host="127.0.0.1", port=srv.port, password=pw,
                client_name="app", db=0, decode_responses=True)
t.equal(r.ping(), True, "password= and client_name=: PING")
t.equal(r.client_getname(), "app", "CLIENT GETNAME: the client_name")
cid = r.client_id()
t.check(isinstance(cid, int) and cid > 0, "CLIENT ID: %r" % cid)
info = r.client_info()
t.equal((info["id"], info["name"], info["db"], info["cmd"]),
        (cid, "app", 0, "client|info"), "CLIENT INFO parsed")
# a thread pool's connections each authenticate and get the name
conns = [r.connection_pool.get_connection("PING") for _ in range(3)]
for c in conns:
    c.send_command("CLIENT", "GETNAME")
t.equal([c.read_response() for c in conns], ["app"] * 3,
        "every pooled connection named")
for c in conns:
    r.connection_pool.release(c)
listed = r.client_list()
t.check(len(listed) >= 3 and all(x["name"] == "app" for x in listed),
        "CLIENT LIST parsed: %d clients named app" % len(listed))
t.check(r.command_count() > 20, "COMMAND COUNT: %r" % r.command_count())
t.equal(r.set("pw:k", "v"), True, "SET after AUTH")
t.equal(r.execute_command("HELLO", "2")[1], "redis", "HELLO 2 after AUTH")
with redis.Redis(host="127.0.0.1", port=srv.port, username="default",
                 password=pw, decode_responses=True) as u:
    t.equal(u.get("pw:k"), "v", "username='default', password=")
# As against redis-server 7.0.15: redis-py 4.3 raises WRONGPASS as a
# ResponseError, NOAUTH as an AuthenticationError.
for kwargs, what, cls, text in (
        ({"password": "wrong"}, "a wrong password", redis.ResponseError,
         "WRONGPASS invalid username-password pair or user is disabled."),
        ({"username": "bob", "password": pw}, "another user",
         redis.ResponseError,
         "WRONGPASS invalid username-password pair or user is disabled."),
        ({}, "no password", redis.AuthenticationError,
         "Authentication required.")):
    try:
        with redis.Redis(host="127.0.0.1", port=srv.port, **kwargs) as x:
            x.get("pw:k")
        t.check(False, "%s raises" % what)
    except redis.RedisError as e:
        t.equal((type(e), str(e)), (cls, text), what)
try:
    with redis.Redis(host="127.0.0.1", port=srv.port, password=pw,
                     db=1) as x:
        x.ping()
    t.check(False, "db=1 raises")
except redis.ResponseError as e:
    t.equal(str(e), "DB index is out of range", "db=1: Redis's error")
r.close()
t.equal(srv.stop(), 0, "exit status 0")
t.finish()
