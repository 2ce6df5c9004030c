/* SPDX-License-Identifier: MIT */
/*
 * ttl_cache.c - a small in-memory key-value server that speaks a subset of
 * the Redis protocol on loopback, with expiry driven by rota/keyed.h.
 *
 *   rota-ttl-cache [--port N] [--max-request BYTES] [--max-clients N]
 *
 * Commands: SET key value [EX s | PX ms] [NX | XX] [KEEPTTL], GET, DEL,
 * EXISTS, TTL, PTTL, EXPIRE, PEXPIRE, PERSIST, DBSIZE, FLUSHDB, FLUSHALL,
 * PING, ECHO, INFO, QUIT, SELECT 0, and the CONFIG GET and COMMAND replies
 * redis-cli and redis-benchmark ask for.  Both the RESP array form and
 * inline commands are understood, so redis-cli, redis-benchmark and a
 * plain `nc` all work.
 *
 * HOW EXPIRY WORKS
 *   One keyed map holds every key, with a deadline (in 1 ms ticks of
 *   CLOCK_MONOTONIC) or without one.  The epoll loop sleeps until the
 *   wheel's next deadline (rota_wheel_timeout_ms(): rounded up, so it never
 *   wakes early and spins) and advances the map whenever it wakes and
 *   before it serves each client's input, so a key is gone from the first
 *   command read after its deadline: Redis's lazy expiry, without a check
 *   on every lookup.  The expire callback frees the value; nothing scans
 *   for expired keys (Redis samples them; the wheel knows exactly).
 *   Deadlines are made with rota_clock_deadline_after(), rounded up, so a
 *   key never expires before its full TTL has passed.
 *
 * LIMITS
 *   A request (one command with its arguments) may be at most
 *   --max-request bytes (1 MiB by default); a longer one, or a bulk length
 *   announcing one, gets an error reply and the connection is closed after
 *   it, so a client cannot make the server buffer without bound.  Malformed
 *   framing gets an error reply, the offending line is skipped and the
 *   connection goes on.  A client whose replies pile up (it pipelines and
 *   does not read) is not read from until they drain below 16 MiB.
 *
 * Loopback only: it binds 127.0.0.1.  One thread; SIGINT or SIGTERM frees
 * everything (drain, then destroy) and exits 0.
 */
#define _GNU_SOURCE /* accept4 */
#include <rota.h>
#include <rota/clock.h>
#include <rota/keyed.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define TICK_NS 1000000u       /* 1 ms ticks */
#define MAX_ARGS 1024          /* arguments in one request */
#define MAX_OUTPUT (16u << 20) /* pending reply bytes before pausing */
#define READ_CHUNK 16384

struct value {
    size_t len;
    char data[];
};

struct client {
    struct client *prev, *next; /* every open client, for shutdown */
    int fd;
    bool closing;    /* close once the output is flushed */
    bool want_write; /* EPOLLOUT registered */
    char *in;
    size_t in_len, in_cap;
    size_t need; /* don't parse again before in_len reaches this */
    char *out;
    size_t out_len, out_off, out_cap;
};

static struct {
    struct rota_keyed *map;
    struct rota_clock clock;
    int epfd, listen_fd;
    size_t max_request;
    unsigned max_clients, clients;
    struct client *all;
    uint64_t commands, expired, refused;
    volatile sig_atomic_t stop;
} S;

/* ------------------------------------------------------------- values */

static void free_value_cb(struct rota_keyed *map, const void *key, size_t len,
                          void *value, void *arg)
{
    (void)map, (void)key, (void)len, (void)arg;
    free(value);
}

static void on_expire(struct rota_keyed *map, const void *key, size_t len,
                      void *value, void *arg)
{
    S.expired++;
    free_value_cb(map, key, len, value, arg);
}

static uint64_t now_ticks(void)
{
    return rota_clock_now(&S.clock);
}

/* Bring expiry up to date before serving a command. */
static void advance(void)
{
    (void)rota_keyed_advance(S.map, now_ticks());
}

/* ------------------------------------------------------------- output */

static bool out_reserve(struct client *c, size_t more)
{
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (c->out_len + more <= c->out_cap)
        return true;
    if (c->out_off > 0) { /* compact before growing */
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
        if (c->out_len + more <= c->out_cap)
            return true;
    }
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + more)
        cap *= 2;
    char *p = realloc(c->out, cap);
    if (p == NULL)
        return false;
    c->out = p;
    c->out_cap = cap;
    return true;
}

static void out_add(struct client *c, const void *data, size_t len)
{
    if (!out_reserve(c, len)) {
        c->closing = true; /* cannot reply: drop the client */
        return;
    }
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
}

static void out_str(struct client *c, const char *s)
{
    out_add(c, s, strlen(s));
}

static void out_fmt(struct client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void out_fmt(struct client *c, const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > 0)
        out_add(c, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void out_int(struct client *c, long long v)
{
    out_fmt(c, ":%lld\r\n", v);
}

static void out_bulk(struct client *c, const void *data, size_t len)
{
    out_fmt(c, "$%zu\r\n", len);
    out_add(c, data, len);
    out_str(c, "\r\n");
}

static void out_error(struct client *c, const char *msg)
{
    out_str(c, "-");
    out_str(c, msg);
    out_str(c, "\r\n");
}

/* ----------------------------------------------------------- commands */

struct arg {
    const char *p;
    size_t len;
};

static bool arg_is(const struct arg *a, const char *word)
{
    size_t n = strlen(word);
    return a->len == n && strncasecmp(a->p, word, n) == 0;
}

/* A whole decimal long long, as Redis parses them. */
static bool arg_ll(const struct arg *a, long long *out)
{
    char buf[32];
    if (a->len == 0 || a->len >= sizeof buf)
        return false;
    memcpy(buf, a->p, a->len);
    buf[a->len] = '\0';
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno != 0 || *end != '\0' || isspace((unsigned char)buf[0]))
        return false;
    *out = v;
    return true;
}

/* The deadline `ms` milliseconds from now, rounded up (never early). */
static uint64_t deadline_after_ms(long long ms)
{
    if ((uint64_t)ms > UINT64_MAX / 1000000u)
        return ROTA_MAX_DEADLINE;
    return rota_clock_deadline_after(&S.clock, (uint64_t)ms * 1000000u);
}

static void reply_wrong_args(struct client *c, const struct arg *cmd)
{
    char name[16];
    size_t n = cmd->len < sizeof name ? cmd->len : sizeof name - 1;
    for (size_t i = 0; i < n; i++) /* Redis names it in lower case */
        name[i] = (char)tolower((unsigned char)cmd->p[i]);
    out_fmt(c, "-ERR wrong number of arguments for '%.*s' command\r\n", (int)n,
            name);
}

static void cmd_set(struct client *c, struct arg *a, int argc)
{
    uint64_t deadline = ROTA_NEVER;
    bool nx = false, xx = false, keepttl = false, has_expiry = false;

    for (int i = 3; i < argc; i++) {
        long long n;
        bool ex = arg_is(&a[i], "EX"), px = arg_is(&a[i], "PX");
        if ((ex || px) && i + 1 < argc && !has_expiry && !keepttl) {
            if (!arg_ll(&a[++i], &n)) {
                out_error(c, "ERR value is not an integer or out of range");
                return;
            }
            if (n <= 0 || (ex && n > LLONG_MAX / 1000)) {
                out_error(c, "ERR invalid expire time in 'set' command");
                return;
            }
            deadline = deadline_after_ms(ex ? n * 1000 : n);
            has_expiry = true;
        } else if (arg_is(&a[i], "NX") && !xx) {
            nx = true;
        } else if (arg_is(&a[i], "XX") && !nx) {
            xx = true;
        } else if (arg_is(&a[i], "KEEPTTL") && !has_expiry) {
            keepttl = true;
        } else {
            out_error(c, "ERR syntax error");
            return;
        }
    }
    uint64_t old_deadline = ROTA_NEVER;
    bool exists =
        rota_keyed_get(S.map, a[1].p, a[1].len, NULL, &old_deadline) == 1;
    if ((nx && exists) || (xx && !exists)) {
        out_str(c, "$-1\r\n");
        return;
    }
    if (keepttl)
        deadline = old_deadline;
    struct value *v = malloc(sizeof *v + a[2].len);
    if (v == NULL) {
        out_error(c, "OOM out of memory");
        return;
    }
    v->len = a[2].len;
    memcpy(v->data, a[2].p, a[2].len);
    void *old = NULL;
    int rc = rota_keyed_set_at(S.map, a[1].p, a[1].len, v, deadline, &old);
    if (rc < 0) {
        free(v);
        out_error(c,
                  rc == ROTA_ENOMEM ? "OOM out of memory" : "ERR invalid key");
        return;
    }
    if (rc == 1)
        free(old);
    out_str(c, "+OK\r\n");
}

/* Milliseconds left, or -1 (no expiry) / -2 (no key), as PTTL. */
static long long pttl_of(const struct arg *key)
{
    uint64_t deadline;
    if (rota_keyed_get(S.map, key->p, key->len, NULL, &deadline) != 1)
        return -2;
    if (deadline == ROTA_NEVER)
        return -1;
    uint64_t now = now_ticks();
    return deadline > now ? (long long)(deadline - now) : 0;
}

static void cmd_expire(struct client *c, struct arg *a, bool seconds)
{
    long long n;
    if (!arg_ll(&a[2], &n)) {
        out_error(c, "ERR value is not an integer or out of range");
        return;
    }
    if (!rota_keyed_contains(S.map, a[1].p, a[1].len)) {
        out_int(c, 0);
        return;
    }
    if (n <= 0) { /* Redis deletes at once */
        void *v = NULL;
        if (rota_keyed_remove(S.map, a[1].p, a[1].len, &v) == 1)
            free(v);
        out_int(c, 1);
        return;
    }
    if (seconds && n > LLONG_MAX / 1000) {
        out_error(c, "ERR invalid expire time in 'expire' command");
        return;
    }
    rota_keyed_move_at(S.map, a[1].p, a[1].len,
                       deadline_after_ms(seconds ? n * 1000 : n));
    out_int(c, 1);
}

static void cmd_info(struct client *c)
{
    struct rota_keyed_stats st;
    char buf[512];
    rota_keyed_stats(S.map, &st);
    int n = snprintf(buf, sizeof buf,
                     "# Server\r\nserver:rota-ttl-cache\r\nrota_version:%s\r\n"
                     "# Clients\r\nconnected_clients:%u\r\n"
                     "# Stats\r\ntotal_commands_processed:%" PRIu64 "\r\n"
                     "expired_keys:%" PRIu64 "\r\nrefused_requests:%" PRIu64
                     "\r\n# Keyspace\r\nkeys:%zu\r\nexpires:%zu\r\n"
                     "map_bytes:%zu\r\n",
                     rota_version(), S.clients, S.commands, S.expired,
                     S.refused, st.count, st.expiring, st.bytes);
    out_bulk(c, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

static void execute(struct client *c, struct arg *a, int argc)
{
    const struct arg *cmd = &a[0];
#define ARITY(ok)                                                              \
    do {                                                                       \
        if (!(ok)) {                                                           \
            reply_wrong_args(c, cmd);                                          \
            return;                                                            \
        }                                                                      \
    } while (0)

    S.commands++;
    if (arg_is(cmd, "GET")) {
        ARITY(argc == 2);
        void *v;
        if (rota_keyed_get(S.map, a[1].p, a[1].len, &v, NULL) == 1) {
            const struct value *val = v;
            out_bulk(c, val->data, val->len);
        } else {
            out_str(c, "$-1\r\n");
        }
    } else if (arg_is(cmd, "SET")) {
        ARITY(argc >= 3);
        cmd_set(c, a, argc);
    } else if (arg_is(cmd, "DEL") || arg_is(cmd, "EXISTS")) {
        ARITY(argc >= 2);
        bool del = arg_is(cmd, "DEL");
        long long n = 0;
        for (int i = 1; i < argc; i++) {
            void *v = NULL;
            if (!del) {
                n += rota_keyed_contains(S.map, a[i].p, a[i].len);
            } else if (rota_keyed_remove(S.map, a[i].p, a[i].len, &v) == 1) {
                free(v);
                n++;
            }
        }
        out_int(c, n);
    } else if (arg_is(cmd, "TTL") || arg_is(cmd, "PTTL")) {
        ARITY(argc == 2);
        long long ms = pttl_of(&a[1]);
        if (ms >= 0 && arg_is(cmd, "TTL"))
            ms = (ms + 500) / 1000; /* Redis rounds */
        out_int(c, ms);
    } else if (arg_is(cmd, "EXPIRE") || arg_is(cmd, "PEXPIRE")) {
        ARITY(argc == 3);
        cmd_expire(c, a, arg_is(cmd, "EXPIRE"));
    } else if (arg_is(cmd, "PERSIST")) {
        ARITY(argc == 2);
        uint64_t deadline;
        int had =
            rota_keyed_get(S.map, a[1].p, a[1].len, NULL, &deadline) == 1 &&
            deadline != ROTA_NEVER;
        if (had)
            rota_keyed_move_at(S.map, a[1].p, a[1].len, ROTA_NEVER);
        out_int(c, had);
    } else if (arg_is(cmd, "DBSIZE")) {
        ARITY(argc == 1);
        out_int(c, (long long)rota_keyed_count(S.map));
    } else if (arg_is(cmd, "FLUSHDB") || arg_is(cmd, "FLUSHALL")) {
        rota_keyed_drain(S.map, free_value_cb, NULL);
        out_str(c, "+OK\r\n");
    } else if (arg_is(cmd, "PING")) {
        ARITY(argc <= 2);
        if (argc == 2)
            out_bulk(c, a[1].p, a[1].len);
        else
            out_str(c, "+PONG\r\n");
    } else if (arg_is(cmd, "ECHO")) {
        ARITY(argc == 2);
        out_bulk(c, a[1].p, a[1].len);
    } else if (arg_is(cmd, "INFO")) {
        cmd_info(c);
    } else if (arg_is(cmd, "SELECT")) {
        ARITY(argc == 2);
        if (a[1].len == 1 && a[1].p[0] == '0')
            out_str(c, "+OK\r\n");
        else
            out_error(c, "ERR DB index is out of range");
    } else if (arg_is(cmd, "CONFIG") && argc == 3 && arg_is(&a[1], "GET")) {
        /* What redis-benchmark asks for; nothing is persisted. */
        const char *val = arg_is(&a[2], "appendonly") ? "no" : "";
        out_str(c, "*2\r\n");
        out_bulk(c, a[2].p, a[2].len);
        out_bulk(c, val, strlen(val));
    } else if (arg_is(cmd, "COMMAND")) {
        out_str(c, "*0\r\n");
    } else if (arg_is(cmd, "QUIT")) {
        out_str(c, "+OK\r\n");
        c->closing = true;
    } else {
        out_fmt(c, "-ERR unknown command '%.*s'\r\n",
                (int)(cmd->len > 64 ? 64 : cmd->len), cmd->p);
    }
#undef ARITY
}

/* ------------------------------------------------------------ parsing */

/* DONE: a request; MORE: wait for input; BAD: reply an error, skip the
 * line, go on; FATAL: reply an error and close (framing lost or a request
 * over the limit). */
enum parse { PARSE_DONE, PARSE_MORE, PARSE_BAD, PARSE_FATAL };

/* Lines longer than this cannot be a multibulk or bulk header. */
#define MAX_HEADER 64

/* A line starting at p: its length without CR LF (or LF), or -1 when its
 * end has not arrived; *size gets its size with the terminator. */
static long line_at(const char *p, const char *end, size_t *size)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL)
        return -1;
    *size = (size_t)(nl - p) + 1;
    return (long)(nl - p) - (nl > p && nl[-1] == '\r');
}

/* A whole decimal number from a header line after its type byte. */
static bool header_num(const char *p, long len, long long *out)
{
    struct arg a = {p + 1, (size_t)(len - 1)};
    return len > 1 && arg_ll(&a, out);
}

/*
 * Parse one request at the start of `in`.  PARSE_DONE fills args/argc and
 * *used; PARSE_BAD sets *used to the bytes to skip (the offending line) and
 * *why; PARSE_MORE sets *need to the buffer length worth waiting for.
 */
static enum parse parse(struct client *c, struct arg *args, int *argc,
                        size_t *used, const char **why)
{
    const char *p = c->in, *end = c->in + c->in_len;
    size_t size = 0;
    long len = line_at(p, end, &size);

    *argc = 0;
    if (p[0] != '*') { /* an inline command: words split by blanks */
        if (len < 0)
            return c->in_len > S.max_request ? PARSE_FATAL : PARSE_MORE;
        const char *q = p, *stop = p + len;
        while (q < stop) {
            while (q < stop && (*q == ' ' || *q == '\t'))
                q++;
            const char *w = q;
            while (q < stop && *q != ' ' && *q != '\t')
                q++;
            if (q > w) {
                if (*argc == MAX_ARGS) {
                    *used = size;
                    *why = "ERR Protocol error: too many arguments";
                    return PARSE_BAD;
                }
                args[(*argc)++] = (struct arg){w, (size_t)(q - w)};
            }
        }
        *used = size;
        return PARSE_DONE;
    }
    if (len < 0) {
        if (c->in_len <= MAX_HEADER)
            return PARSE_MORE;
        *why = "ERR Protocol error: multibulk header too long";
        return PARSE_FATAL;
    }
    long long count, bulk;
    *used = size;
    if (!header_num(p, len, &count)) {
        *why = "ERR Protocol error: invalid multibulk length";
        return PARSE_BAD;
    }
    if (count > MAX_ARGS) {
        *why = "ERR Protocol error: too many arguments";
        return PARSE_FATAL;
    }
    const char *q = p + size;
    size_t total = 0;
    for (long long i = 0; i < count; i++) {
        if (q >= end)
            return PARSE_MORE;
        len = line_at(q, end, &size);
        if (len < 0) {
            if ((size_t)(end - q) <= MAX_HEADER)
                return PARSE_MORE;
            *why = "ERR Protocol error: bulk header too long";
            return PARSE_FATAL;
        }
        if (q[0] != '$' || !header_num(q, len, &bulk) || bulk < 0) {
            /* Skip through the offending line; parse anew after it. */
            *used = (size_t)(q - p) + size;
            *why = q[0] != '$' ? "ERR Protocol error: expected '$'"
                               : "ERR Protocol error: invalid bulk length";
            return PARSE_BAD;
        }
        total += (size_t)bulk;
        if ((unsigned long long)bulk > S.max_request || total > S.max_request) {
            *why = "ERR Protocol error: request too large";
            return PARSE_FATAL;
        }
        q += size;
        if ((size_t)(end - q) < (size_t)bulk + 2) {
            c->need = (size_t)(q - p) + (size_t)bulk + 2;
            return PARSE_MORE;
        }
        if (q[bulk] != '\r' || q[bulk + 1] != '\n') {
            *used = (size_t)(q - p);
            *why = "ERR Protocol error: bulk not followed by CRLF";
            return PARSE_BAD;
        }
        args[(*argc)++] = (struct arg){q, (size_t)bulk};
        q += bulk + 2;
    }
    *used = (size_t)(q - p);
    return PARSE_DONE;
}

/* Run every complete request in the input buffer. */
static void process_input(struct client *c)
{
    static struct arg args[MAX_ARGS];
    size_t off = 0;

    advance(); /* keys whose time has come are gone before we serve */
    while (!c->closing && off < c->in_len &&
           c->out_len - c->out_off < MAX_OUTPUT) {
        int argc = 0;
        size_t used = 0;
        const char *why = "ERR Protocol error";
        /* Parse from the unconsumed part. */
        char *save_in = c->in;
        size_t save_len = c->in_len;
        c->in += off;
        c->in_len -= off;
        c->need = 0;
        enum parse r = parse(c, args, &argc, &used, &why);
        c->in = save_in;
        c->in_len = save_len;
        if (r == PARSE_MORE) {
            if (c->need != 0)
                c->need += off;
            break;
        }
        if (r == PARSE_FATAL) {
            S.refused++;
            out_error(c, why);
            c->closing = true;
            break;
        }
        off += used;
        if (r == PARSE_BAD)
            out_error(c, why);
        else if (argc > 0)
            execute(c, args, argc);
    }
    if (off > 0) {
        memmove(c->in, c->in + off, c->in_len - off);
        c->in_len -= off;
        if (c->need >= off)
            c->need -= off;
    }
}

/* --------------------------------------------------------- connections */

static void client_close(struct client *c)
{
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        S.all = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    epoll_ctl(S.epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c);
    S.clients--;
}

static void update_events(struct client *c)
{
    bool pending = c->out_len > c->out_off;
    bool paused = c->out_len - c->out_off >= MAX_OUTPUT;
    struct epoll_event ev = {.data.ptr = c};
    ev.events =
        (paused || c->closing ? 0u : EPOLLIN) | (pending ? EPOLLOUT : 0u);
    epoll_ctl(S.epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->want_write = pending;
}

/* Write what we can; false when the client is gone. */
static bool flush_output(struct client *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0)
            return false;
        c->out_off += (size_t)n;
    }
    if (c->out_off == c->out_len) {
        c->out_off = c->out_len = 0;
        if (c->closing)
            return false;
    }
    return true;
}

static void client_readable(struct client *c)
{
    for (;;) {
        /* Room for one more chunk, the buffer never beyond the limit plus
         * one chunk: a request that does not fit is refused. */
        if (c->in_cap - c->in_len < READ_CHUNK) {
            size_t cap = c->in_cap ? c->in_cap * 2 : READ_CHUNK * 2;
            if (cap > S.max_request + 2 * READ_CHUNK)
                cap = S.max_request + 2 * READ_CHUNK;
            if (cap - c->in_len < READ_CHUNK) {
                /* Full and still no complete request: too large. */
                S.refused++;
                out_error(c, "ERR Protocol error: request too large");
                c->closing = true;
                break;
            }
            char *p = realloc(c->in, cap);
            if (p == NULL) {
                c->closing = true;
                break;
            }
            c->in = p;
            c->in_cap = cap;
        }
        ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            client_close(c);
            return;
        }
        c->in_len += (size_t)n;
        if (c->in_len >= c->need)
            process_input(c);
        if (c->closing || c->out_len - c->out_off >= MAX_OUTPUT)
            break;
    }
    if (!flush_output(c)) {
        client_close(c);
        return;
    }
    update_events(c);
}

static void client_writable(struct client *c)
{
    if (!flush_output(c)) {
        client_close(c);
        return;
    }
    /* Output drained: serve requests that waited for room. */
    if (c->in_len > 0 && c->out_len - c->out_off < MAX_OUTPUT) {
        process_input(c);
        if (!flush_output(c)) {
            client_close(c);
            return;
        }
    }
    update_events(c);
}

static void accept_clients(void)
{
    for (;;) {
        int fd = accept4(S.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: try on the next event */
        if (S.clients >= S.max_clients) {
            static const char msg[] = "-ERR max number of clients reached\r\n";
            ssize_t ignored = write(fd, msg, sizeof msg - 1);
            (void)ignored;
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct client *c = calloc(1, sizeof *c);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (c == NULL || epoll_ctl(S.epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            free(c);
            close(fd);
            continue;
        }
        c->fd = fd;
        c->next = S.all;
        if (S.all != NULL)
            S.all->prev = c;
        S.all = c;
        S.clients++;
    }
}

/* ----------------------------------------------------------------- main */

static void on_signal(int sig)
{
    (void)sig;
    S.stop = 1;
}

static int listen_loopback(int port)
{
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(fd, 511) != 0 ||
        getsockname(fd, (struct sockaddr *)&addr, &alen) != 0) {
        close(fd);
        return -1;
    }
    printf("rota-ttl-cache listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
    fflush(stdout);
    return fd;
}

static void usage(void)
{
    fprintf(stderr, "usage: rota-ttl-cache [--port N (0: any free port)] "
                    "[--max-request BYTES] [--max-clients N]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long port = 6380;
    S.max_request = 1u << 20;
    S.max_clients = 1024;
    for (int i = 1; i < argc; i += 2) { /* --option value pairs */
        char *end;
        if (i + 1 >= argc)
            usage();
        long long v = strtoll(argv[i + 1], &end, 10);
        if (*end != '\0' || v < 0)
            usage();
        if (strcmp(argv[i], "--port") == 0 && v <= 65535)
            port = (long)v;
        else if (strcmp(argv[i], "--max-request") == 0 && v >= 64)
            S.max_request = (size_t)v;
        else if (strcmp(argv[i], "--max-clients") == 0 && v >= 1 && v <= 100000)
            S.max_clients = (unsigned)v;
        else
            usage();
    }

    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    if (rota_clock_init(&S.clock, ROTA_CLOCK_MONOTONIC, TICK_NS) != 0) {
        fprintf(stderr, "rota-ttl-cache: cannot read CLOCK_MONOTONIC\n");
        return 1;
    }
    struct rota_keyed_config cfg = {.now = now_ticks(), .expire = on_expire};
    int rc = rota_keyed_create(&S.map, &cfg);
    if (rc != 0) {
        fprintf(stderr, "rota-ttl-cache: %s\n", rota_strerror(rc));
        return 1;
    }
    S.listen_fd = listen_loopback((int)port);
    S.epfd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (S.listen_fd < 0 || S.epfd < 0 ||
        epoll_ctl(S.epfd, EPOLL_CTL_ADD, S.listen_fd, &lev) != 0) {
        perror("rota-ttl-cache: listen on 127.0.0.1");
        return 1;
    }

    struct epoll_event events[128];
    while (!S.stop) {
        struct rota_wheel *wheel = rota_keyed_wheel(S.map);
        int timeout = rota_wheel_timeout_ms(wheel, now_ticks(), TICK_NS);
        int n = epoll_wait(S.epfd, events, 128, timeout);
        if (n < 0 && errno != EINTR) {
            perror("rota-ttl-cache: epoll_wait");
            break;
        }
        advance();
        for (int i = 0; i < n; i++) {
            struct client *c = events[i].data.ptr;
            if (c == NULL)
                accept_clients();
            else if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
                client_readable(c);
            else if (events[i].events & EPOLLOUT)
                client_writable(c);
        }
    }
    /* Graceful stop: the clients, the values (ours to free), the map. */
    while (S.all != NULL)
        client_close(S.all);
    rota_keyed_drain(S.map, free_value_cb, NULL);
    rota_keyed_destroy(S.map);
    close(S.listen_fd);
    close(S.epfd);
    return 0;
}
