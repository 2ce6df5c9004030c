/* SPDX-License-Identifier: MIT */
/*
 * keyspace.c - the commands on keys: strings, counters, expiry, SCAN.
 *
 * Each answers as redis-server 7.0 does, byte for byte, with Redis's order
 * of checks (option syntax before numbers, numbers before the key lookup
 * where Redis does it that way) and its error texts; the differential test
 * (diff_redis.py) holds them to that against a real redis-server.
 *
 * Values are strings only, so no command meets a key of another type.
 * Time is the unix clock in milliseconds (S.now_ms), read once before each
 * command, so one command sees one instant, as in Redis.
 *
 * Range checks of expiry times are Redis's, without its signed overflow:
 * a relative time must be positive and, in seconds, at most LLONG_MAX /
 * 1000; the absolute expiry (now + ttl) must fit in a long long.  EXPIRE
 * and friends accept negative and past times (the key is deleted at once)
 * but reject what overflows.  A key that lives always has a positive TTL
 * (or none): nothing can wrap to a negative one.
 */
#define _GNU_SOURCE /* strnlen */
#include "cache.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- expiry times */

/* Option flags of SET and GETEX (Redis's OBJ_* flags). */
enum {
    SET_NX = 1 << 0,
    SET_XX = 1 << 1,
    SET_GET = 1 << 2,
    SET_KEEPTTL = 1 << 3,
    SET_PERSIST = 1 << 4,
    SET_EX = 1 << 5,
    SET_PX = 1 << 6,
    SET_EXAT = 1 << 7,
    SET_PXAT = 1 << 8,
};
#define ANY_EXPIRY (SET_EX | SET_PX | SET_EXAT | SET_PXAT)

/*
 * Redis's parseExtendedStringArgumentsOrReply(): SET's options from a[3]
 * (is_set) or GETEX's from a[2].  Each of EX, PX, EXAT, PXAT excludes the
 * others and KEEPTTL/PERSIST, but may repeat (the last one counts); NX and
 * XX exclude each other.  Anything else is a syntax error.
 */
static bool parse_set_options(struct client *c, struct arg *a, size_t argc,
                              bool is_set, unsigned *flags,
                              const struct arg **expire)
{
    for (size_t j = is_set ? 3 : 2; j < argc; j++) {
        bool next = j + 1 < argc;
        unsigned f = *flags;
        if (is_set && opt_is(&a[j], "NX") && !(f & SET_XX)) {
            *flags |= SET_NX;
        } else if (is_set && opt_is(&a[j], "XX") && !(f & SET_NX)) {
            *flags |= SET_XX;
        } else if (is_set && opt_is(&a[j], "GET")) {
            *flags |= SET_GET;
        } else if (is_set && opt_is(&a[j], "KEEPTTL") &&
                   !(f & (SET_PERSIST | ANY_EXPIRY))) {
            *flags |= SET_KEEPTTL;
        } else if (!is_set && opt_is(&a[j], "PERSIST") &&
                   !(f & (SET_KEEPTTL | ANY_EXPIRY))) {
            *flags |= SET_PERSIST;
        } else if (next && (opt_is(&a[j], "EX") || opt_is(&a[j], "PX") ||
                            opt_is(&a[j], "EXAT") || opt_is(&a[j], "PXAT"))) {
            unsigned self = opt_is(&a[j], "EX")     ? SET_EX
                            : opt_is(&a[j], "PX")   ? SET_PX
                            : opt_is(&a[j], "EXAT") ? SET_EXAT
                                                    : SET_PXAT;
            if (f & (SET_KEEPTTL | SET_PERSIST | (ANY_EXPIRY & ~self))) {
                out_error(c, syntax_error);
                return false;
            }
            *flags |= self;
            *expire = &a[++j];
        } else {
            out_error(c, syntax_error);
            return false;
        }
    }
    return true;
}

/* Redis's getExpireMillisecondsOrReply(): the absolute expiry in unix ms
 * for SET/GETEX/SETEX's argument, or an error reply. */
static bool expire_ms(struct client *c, const struct arg *e, unsigned flags,
                      const char *cmd, long long *when)
{
    long long ms;
    if (!arg_ll(c, e, &ms))
        return false;
    bool seconds = flags & (SET_EX | SET_EXAT);
    if (ms <= 0 || (seconds && ms > LLONG_MAX / 1000))
        goto bad;
    if (seconds)
        ms *= 1000;
    if (flags & (SET_EX | SET_PX)) {
        if (ms > LLONG_MAX - S.now_ms)
            goto bad;
        ms += S.now_ms;
    }
    *when = ms;
    return true;
bad:
    out_errorf(c, "ERR invalid expire time in '%s' command", cmd);
    return false;
}

/* ------------------------------------------------------------ strings */

static void reply_value(struct client *c, const struct value *v)
{
    if (v == NULL) {
        S.keyspace_misses++;
        out_null(c);
    } else {
        S.keyspace_hits++;
        out_bulk(c, value_bytes(v), v->len);
    }
}

static void oom(struct client *c)
{
    out_error(c, "OOM out of memory");
}

static void cmd_get(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    reply_value(c, store_lookup(a[1].p, a[1].len));
}

/* SET and its short forms (Redis's setGenericCommand()). */
static void set_generic(struct client *c, const struct arg *key,
                        const struct arg *val, unsigned flags,
                        const struct arg *expire, const char *cmd,
                        bool nx_reply_int)
{
    long long when = NO_EXPIRE;
    if (expire != NULL && !expire_ms(c, expire, flags, cmd, &when))
        return;
    /* A plain SET needs no lookup: store_set() is one map call. */
    struct value *old = NULL;
    if (flags & (SET_GET | SET_NX | SET_XX))
        old = store_lookup(key->p, key->len);
    if (flags & SET_GET)
        reply_value(c, old);
    if (((flags & SET_NX) && old != NULL) ||
        ((flags & SET_XX) && old == NULL)) {
        if (nx_reply_int)
            out_int(c, 0);
        else if (!(flags & SET_GET))
            out_null(c);
        return;
    }
    if (store_set(key->p, key->len, val->p, val->len, when,
                  flags & SET_KEEPTTL) == NULL) {
        if (!(flags & SET_GET))
            oom(c);
        return;
    }
    if (nx_reply_int)
        out_int(c, 1);
    else if (!(flags & SET_GET))
        out_ok(c);
}

static void cmd_set(struct client *c, struct arg *a, size_t argc)
{
    unsigned flags = 0;
    const struct arg *expire = NULL;
    if (parse_set_options(c, a, argc, true, &flags, &expire))
        set_generic(c, &a[1], &a[2], flags, expire, "set", false);
}

static void cmd_setnx(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    set_generic(c, &a[1], &a[2], SET_NX, NULL, "setnx", true);
}

static void cmd_setex(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    set_generic(c, &a[1], &a[3], SET_EX, &a[2], "setex", false);
}

static void cmd_psetex(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    set_generic(c, &a[1], &a[3], SET_PX, &a[2], "psetex", false);
}

static void cmd_getset(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    set_generic(c, &a[1], &a[2], SET_GET, NULL, "getset", false);
}

static void cmd_getex(struct client *c, struct arg *a, size_t argc)
{
    unsigned flags = 0;
    const struct arg *expire = NULL;
    long long when = 0;
    if (!parse_set_options(c, a, argc, false, &flags, &expire))
        return;
    struct value *v = store_lookup(a[1].p, a[1].len);
    if (v == NULL) {
        reply_value(c, NULL);
        return;
    }
    if (expire != NULL && !expire_ms(c, expire, flags, "getex", &when))
        return;
    reply_value(c, v);
    if ((flags & (SET_EXAT | SET_PXAT)) && when <= S.now_ms)
        store_delete(a[1].p, a[1].len); /* the time has passed already */
    else if (expire != NULL)
        store_set_expire(v, when);
    else if ((flags & SET_PERSIST) && v->when != NO_EXPIRE)
        store_set_expire(v, NO_EXPIRE);
}

static void cmd_getdel(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    struct value *v = store_lookup(a[1].p, a[1].len);
    reply_value(c, v);
    if (v != NULL)
        store_delete(a[1].p, a[1].len);
}

static void cmd_mget(struct client *c, struct arg *a, size_t argc)
{
    out_array(c, (long long)argc - 1);
    for (size_t i = 1; i < argc; i++)
        reply_value(c, store_lookup(a[i].p, a[i].len));
}

static void cmd_mset(struct client *c, struct arg *a, size_t argc)
{
    if (argc % 2 == 0) {
        reply_arity(c, "mset");
        return;
    }
    for (size_t i = 1; i < argc; i += 2)
        if (store_set(a[i].p, a[i].len, a[i + 1].p, a[i + 1].len, NO_EXPIRE,
                      false) == NULL) {
            oom(c);
            return;
        }
    out_ok(c);
}

static void cmd_strlen(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    const struct value *v = store_lookup(a[1].p, a[1].len);
    out_int(c, v ? (long long)v->len : 0);
}

static void cmd_append(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    struct value *v = store_lookup(a[1].p, a[1].len);
    size_t old = v ? v->len : 0;
    if (old + a[2].len > S.proto_max_bulk_len) {
        out_error(
            c, "ERR string exceeds maximum allowed size (proto-max-bulk-len)");
        return;
    }
    if (v == NULL)
        v = store_set(a[1].p, a[1].len, a[2].p, a[2].len, NO_EXPIRE, false);
    else
        v = store_append(v, a[2].p, a[2].len);
    if (v == NULL)
        oom(c);
    else
        out_int(c, (long long)v->len);
}

/* INCR, DECR, INCRBY, DECRBY (Redis's incrDecrCommand()). */
static void incr_by(struct client *c, const struct arg *key, long long incr)
{
    struct value *v = store_lookup(key->p, key->len);
    long long value = 0;
    if (v != NULL && !string_to_ll(value_bytes(v), v->len, &value)) {
        out_error(c, not_integer);
        return;
    }
    long long old = value;
    if ((incr < 0 && old < 0 && incr < LLONG_MIN - old) ||
        (incr > 0 && old > 0 && incr > LLONG_MAX - old)) {
        out_error(c, "ERR increment or decrement would overflow");
        return;
    }
    value += incr;
    char buf[24];
    size_t n = ll_to_string(buf, value);
    if (store_set(key->p, key->len, buf, n, NO_EXPIRE, true) == NULL) {
        oom(c);
        return;
    }
    /* The planted fault of the differential test's self-check: a
     * decrement reports the value it started from. */
    if (S.fault != NULL && strcmp(S.fault, "decr") == 0 && incr < 0)
        value = old;
    out_int(c, value);
}

static void cmd_incr(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    incr_by(c, &a[1], 1);
}

static void cmd_decr(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    incr_by(c, &a[1], -1);
}

static void cmd_incrby(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    long long n;
    if (arg_ll(c, &a[2], &n))
        incr_by(c, &a[1], n);
}

static void cmd_decrby(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    long long n;
    if (!arg_ll(c, &a[2], &n))
        return;
    if (n == LLONG_MIN) {
        out_error(c, "ERR decrement would overflow");
        return;
    }
    incr_by(c, &a[1], -n);
}

/* --------------------------------------------------------------- keys */

static void cmd_del(struct client *c, struct arg *a, size_t argc)
{
    long long n = 0;
    for (size_t i = 1; i < argc; i++)
        n += store_delete(a[i].p, a[i].len);
    out_int(c, n);
}

static void cmd_exists(struct client *c, struct arg *a, size_t argc)
{
    long long n = 0;
    for (size_t i = 1; i < argc; i++)
        n += store_lookup(a[i].p, a[i].len) != NULL;
    out_int(c, n);
}

static void cmd_type(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    out_str(c, store_lookup(a[1].p, a[1].len) ? "+string\r\n" : "+none\r\n");
}

/* TTL, PTTL, EXPIRETIME, PEXPIRETIME (Redis's ttlGenericCommand()). */
static void ttl_generic(struct client *c, const struct arg *key, bool ms,
                        bool absolute)
{
    const struct value *v = store_lookup(key->p, key->len);
    if (v == NULL) {
        out_int(c, -2);
        return;
    }
    if (v->when == NO_EXPIRE) {
        out_int(c, -1);
        return;
    }
    long long t = absolute ? v->when : v->when - S.now_ms;
    if (t < 0)
        t = 0;
    /* Rounded to the nearest second as Redis's (t + 500) / 1000, which
     * overflows to a negative EXPIRETIME within 500 ms of LLONG_MAX. */
    out_int(c, ms ? t : t / 1000 + (t % 1000 >= 500));
}

static void cmd_ttl(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    ttl_generic(c, &a[1], false, false);
}

static void cmd_pttl(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    ttl_generic(c, &a[1], true, false);
}

static void cmd_expiretime(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    ttl_generic(c, &a[1], false, true);
}

static void cmd_pexpiretime(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    ttl_generic(c, &a[1], true, true);
}

/* EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (Redis's expireGenericCommand()). */
static void expire_generic(struct client *c, struct arg *a, size_t argc,
                           long long base, bool seconds, const char *cmd)
{
    enum { NX = 1, XX = 2, GT = 4, LT = 8 };
    unsigned f = 0;
    for (size_t j = 3; j < argc; j++) {
        if (opt_is(&a[j], "NX"))
            f |= NX;
        else if (opt_is(&a[j], "XX"))
            f |= XX;
        else if (opt_is(&a[j], "GT"))
            f |= GT;
        else if (opt_is(&a[j], "LT"))
            f |= LT;
        else {
            out_errorf(c, "ERR Unsupported option %.*s",
                       (int)strnlen(a[j].p, a[j].len), a[j].p);
            return;
        }
    }
    if ((f & NX) && (f & (XX | GT | LT))) {
        out_error(c, "ERR NX and XX, GT or LT options at the same time are not "
                     "compatible");
        return;
    }
    if ((f & GT) && (f & LT)) {
        out_error(c,
                  "ERR GT and LT options at the same time are not compatible");
        return;
    }
    long long when;
    if (!arg_ll(c, &a[2], &when))
        return;
    if (seconds) {
        if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)
            goto bad;
        when *= 1000;
    }
    if (when > LLONG_MAX - base)
        goto bad;
    when += base;

    struct value *v = store_lookup(a[1].p, a[1].len);
    if (v == NULL) {
        out_int(c, 0);
        return;
    }
    long long cur = v->when;
    if (((f & NX) && cur != NO_EXPIRE) || ((f & XX) && cur == NO_EXPIRE) ||
        ((f & GT) && (cur == NO_EXPIRE || when <= cur)) ||
        ((f & LT) && cur != NO_EXPIRE && when >= cur)) {
        out_int(c, 0);
        return;
    }
    if (when <= S.now_ms)
        store_delete(a[1].p, a[1].len);
    else
        store_set_expire(v, when);
    out_int(c, 1);
    return;
bad:
    out_errorf(c, "ERR invalid expire time in '%s' command", cmd);
}

static void cmd_expire(struct client *c, struct arg *a, size_t argc)
{
    expire_generic(c, a, argc, S.now_ms, true, "expire");
}

static void cmd_pexpire(struct client *c, struct arg *a, size_t argc)
{
    expire_generic(c, a, argc, S.now_ms, false, "pexpire");
}

static void cmd_expireat(struct client *c, struct arg *a, size_t argc)
{
    expire_generic(c, a, argc, 0, true, "expireat");
}

static void cmd_pexpireat(struct client *c, struct arg *a, size_t argc)
{
    expire_generic(c, a, argc, 0, false, "pexpireat");
}

static void cmd_persist(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    struct value *v = store_lookup(a[1].p, a[1].len);
    bool had = v != NULL && v->when != NO_EXPIRE;
    if (had)
        store_set_expire(v, NO_EXPIRE);
    out_int(c, had);
}

static void cmd_dbsize(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    out_int(c, (long long)store_count());
}

static void cmd_flushdb(struct client *c, struct arg *a, size_t argc)
{
    if (argc > 2 ||
        (argc == 2 && !opt_is(&a[1], "SYNC") && !opt_is(&a[1], "ASYNC"))) {
        out_error(c, syntax_error);
        return;
    }
    if (argc == 2 && opt_is(&a[1], "ASYNC"))
        store_flush_async();
    else
        store_flush();
    out_ok(c);
}

struct scan_state {
    struct client *c;
    const struct arg *pattern; /* NULL: every key */
    bool none;                 /* TYPE other than string */
    char **keys;
    size_t n, cap;
    bool oom;
};

static void scan_collect(struct value *v, void *arg)
{
    struct scan_state *st = arg;
    if (st->none || st->oom ||
        (st->pattern != NULL && !glob_match(st->pattern->p, st->pattern->len,
                                            v->data, v->key_len, false)))
        return;
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        char **p = realloc(st->keys, cap * sizeof *p);
        if (p == NULL) {
            st->oom = true;
            return;
        }
        st->keys = p;
        st->cap = cap;
    }
    st->keys[st->n++] = (char *)v;
}

/* Reply the collected keys as an array of bulks. */
static void reply_keys(struct client *c, struct scan_state *st)
{
    out_array(c, (long long)st->n);
    for (size_t i = 0; i < st->n; i++) {
        const struct value *v = (const struct value *)st->keys[i];
        out_bulk(c, v->data, v->key_len);
    }
    free(st->keys);
}

static void cmd_scan(struct client *c, struct arg *a, size_t argc)
{
    /* The cursor as Redis reads it: strtoul() over the C string, no
     * leading blank, nothing left over, no overflow. */
    char buf[128];
    size_t clen = strnlen(a[1].p, a[1].len);
    char *end;
    unsigned long cursor = 0;
    errno = 0;
    if (clen < sizeof buf) {
        memcpy(buf, a[1].p, clen);
        buf[clen] = '\0';
        cursor = strtoul(buf, &end, 10);
    }
    if (clen >= sizeof buf || isspace((unsigned char)buf[0]) || *end != '\0' ||
        errno == ERANGE) {
        out_error(c, "ERR invalid cursor");
        return;
    }
    struct scan_state st = {.c = c};
    long long count = 10;
    for (size_t i = 2; i < argc;) {
        bool two = argc - i >= 2;
        if (opt_is(&a[i], "COUNT") && two) {
            if (!arg_ll(c, &a[i + 1], &count))
                return;
            if (count < 1) {
                out_error(c, syntax_error);
                return;
            }
        } else if (opt_is(&a[i], "MATCH") && two) {
            st.pattern =
                a[i + 1].len == 1 && a[i + 1].p[0] == '*' ? NULL : &a[i + 1];
        } else if (opt_is(&a[i], "TYPE") && two) {
            st.none = !opt_is(&a[i + 1], "string");
        } else {
            out_error(c, syntax_error);
            return;
        }
        i += 2;
    }
    unsigned long long next = store_scan(
        cursor, count > LONG_MAX ? LONG_MAX : (long)count, scan_collect, &st);
    if (st.oom) {
        free(st.keys);
        oom(c);
        return;
    }
    char num[24];
    size_t n = ll_to_string(num, (long long)next);
    out_array(c, 2);
    out_bulk(c, num, n);
    reply_keys(c, &st);
}

static void cmd_keys(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    struct scan_state st = {.c = c};
    if (!(a[1].len == 1 && a[1].p[0] == '*'))
        st.pattern = &a[1];
    unsigned long long cursor = 0;
    do
        cursor = store_scan(cursor, 1024, scan_collect, &st);
    while (cursor != 0 && !st.oom);
    if (st.oom) {
        free(st.keys);
        oom(c);
        return;
    }
    reply_keys(c, &st);
}

/* Most used first: the lookup is a scan. */
const struct command keyspace_commands[] = {
    {"get", 2, 0, cmd_get, NULL},
    {"set", -3, CMD_DENYOOM, cmd_set, NULL},
    {"incr", 2, CMD_DENYOOM, cmd_incr, NULL},
    {"mset", -3, CMD_DENYOOM, cmd_mset, NULL},
    {"mget", -2, 0, cmd_mget, NULL},
    {"del", -2, 0, cmd_del, NULL},
    {"expire", -3, 0, cmd_expire, NULL},
    {"ttl", 2, 0, cmd_ttl, NULL},
    {"pttl", 2, 0, cmd_pttl, NULL},
    {"exists", -2, 0, cmd_exists, NULL},
    {"incrby", 3, CMD_DENYOOM, cmd_incrby, NULL},
    {"decr", 2, CMD_DENYOOM, cmd_decr, NULL},
    {"decrby", 3, CMD_DENYOOM, cmd_decrby, NULL},
    {"setex", 4, CMD_DENYOOM, cmd_setex, NULL},
    {"psetex", 4, CMD_DENYOOM, cmd_psetex, NULL},
    {"setnx", 3, CMD_DENYOOM, cmd_setnx, NULL},
    {"getset", 3, CMD_DENYOOM, cmd_getset, NULL},
    {"getex", -2, 0, cmd_getex, NULL},
    {"getdel", 2, 0, cmd_getdel, NULL},
    {"append", 3, CMD_DENYOOM, cmd_append, NULL},
    {"strlen", 2, 0, cmd_strlen, NULL},
    {"unlink", -2, 0, cmd_del, NULL},
    {"type", 2, 0, cmd_type, NULL},
    {"pexpire", -3, 0, cmd_pexpire, NULL},
    {"expireat", -3, 0, cmd_expireat, NULL},
    {"pexpireat", -3, 0, cmd_pexpireat, NULL},
    {"expiretime", 2, 0, cmd_expiretime, NULL},
    {"pexpiretime", 2, 0, cmd_pexpiretime, NULL},
    {"persist", 2, 0, cmd_persist, NULL},
    {"scan", -2, 0, cmd_scan, NULL},
    {"keys", 2, 0, cmd_keys, NULL},
    {"dbsize", 1, 0, cmd_dbsize, NULL},
    {"flushdb", -1, 0, cmd_flushdb, NULL},
    {"flushall", -1, 0, cmd_flushdb, NULL},
};
const size_t keyspace_ncommands =
    sizeof keyspace_commands / sizeof *keyspace_commands;
