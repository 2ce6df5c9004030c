/* SPDX-License-Identifier: MIT */
/*
 * cache.h - the TTL cache example's internal interfaces (not installed).
 *
 * The server is five parts, one file each:
 *   resp.c      the Redis protocol: request parsing (RESP arrays and inline
 *               commands, with Redis's limits and error texts), reply
 *               encoding, and the string helpers Redis's commands share
 *               (strict integers, glob patterns);
 *   store.c     the keyspace: one rota keyed map holding every key, the
 *               Redis expiry rules on top of it, the index used by SCAN and
 *               eviction sampling, memory accounting and eviction;
 *   keyspace.c  the commands on keys (strings, counters, expiry, SCAN);
 *   commands.c  dispatch, MULTI/EXEC and the server commands;
 *   connection.c  the connection's own commands (AUTH, HELLO, CLIENT,
 *               RESET), the password check and protected mode;
 *   server.c    options, the epoll loop, clients and their buffers.
 * Everything runs on one thread; the state lives in the global `S`.
 */
#ifndef TTL_CACHE_H
#define TTL_CACHE_H

#include <rota.h>
#include <rota/clock.h>
#include <rota/keyed.h>

#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------- limits */

/* Redis's defaults (redis.conf 7.0), each lowered by a flag. */
#define DEFAULT_PROTO_MAX_BULK_LEN (512ull << 20) /* proto-max-bulk-len */
#define DEFAULT_QUERY_BUFFER_LIMIT (1ull << 30) /* client-query-buffer-limit */
#define DEFAULT_MAX_CLIENTS 10000u              /* maxclients */
#define INLINE_MAX_SIZE (64u * 1024)            /* PROTO_INLINE_MAX_SIZE */
#define TICK_NS 1000000u                        /* the map's tick: 1 ms */
#define MAX_OUTPUT (16u << 20) /* pending reply bytes before reading pauses */
/* What a client not yet authenticated may send and leave unread, as Redis
 * 7.0 bounds it (connection.c, THE PASSWORD): arrays of 10 elements, bulks
 * of 16 KiB, replies pending past 16 KiB + 1 KiB (Redis's reply buffer
 * and its unauthenticated output limit). */
#define UNAUTH_MAX_ARGS 10
#define UNAUTH_MAX_BULK 16384
#define UNAUTH_MAX_OUTPUT (16384u + 1024u)

/* ------------------------------------------------------------- values */

/* No expiry, as Redis's getExpire() says. */
#define NO_EXPIRE (-1LL)

/* No position in the index (a bound on struct value's all_idx). */
#define NO_INDEX UINT32_MAX

/*
 * One key's value, owned by the store: one block holding the key and the
 * value bytes.  The map borrows the key from here (rota_keyed_config's
 * borrow_keys), so each key is stored once; SCAN and eviction find it
 * through the index.  The header is 36 bytes: with a 12-byte key and a
 * 20-byte value the block is 80 bytes as glibc malloc rounds it.
 */
struct value {
    long long when;   /* expiry, unix time in ms, or NO_EXPIRE */
    size_t len;       /* value bytes at data[key_len] */
    uint32_t all_idx; /* position in the index of all keys */
    uint32_t lru;     /* S.now_tick (monotonic ms) of the last access, mod
                         2^32: idle times are exact up to 49 days */
    uint32_t key_len; /* key bytes at data[0] */
    uint32_t spare;   /* room after the value, for APPEND (store_append) */
    char data[];
};

static inline const char *value_bytes(const struct value *v)
{
    return v->data + v->key_len;
}

/* ---------------------------------------------------------- arguments */

struct arg {
    const char *p;
    size_t len;
    size_t off; /* while parsing: offset from the request's first byte */
};

/* ------------------------------------------------------------ clients */

struct client {
    struct client *prev, *next; /* every open client, oldest at the tail */
    int fd;
    uint64_t id;                /* CLIENT ID: 1, 2, ... in order of accept */
    struct sockaddr_in peer;    /* CLIENT INFO's addr= */
    struct sockaddr_in local;   /* and laddr= */
    uint64_t created_tick;      /* S.now_tick at accept (age=) */
    uint64_t active_tick;       /* and at its last read (idle=) */
    bool authenticated;         /* AUTH or HELLO AUTH passed, or no password */
    char *name;                 /* CLIENT SETNAME; NULL: none */
    const struct command *last; /* its last command (cmd=); NULL: none */
    bool closing;    /* close once the output is flushed; read no more */
    bool eof;        /* the peer shut down its side: serve, flush, close */
    uint32_t events; /* what the epoll set waits for */

    /* Fairness (server.c, CLIENTS): a turn does bounded work; a client
     * with work left waits on the ready list for its next turn. */
    bool backlog;                 /* complete requests left unrun */
    bool more_in;                 /* the last read filled its space */
    bool ready;                   /* on the ready list */
    struct client *rprev, *rnext; /* the ready list */
    uint64_t turn;                /* the loop turn that last served it */

    /* Input: bytes [0, in_len) of `in`; the current request starts at
     * qpos and is parsed up to ppos. */
    char *in;
    size_t in_len, in_cap, qpos, ppos;
    size_t need; /* don't parse again before in_len reaches this */
    bool inline_req;
    long long mb_left;  /* bulks still to read of the current array */
    long long bulk_len; /* announced length of the next bulk, or -1 */
    struct arg *argv;
    size_t argc, argv_cap;
    char *inline_buf; /* an inline request's unquoted words */

    char *out;
    size_t out_len, out_off, out_cap;

    /* MULTI: the commands queued for EXEC, each one block (its struct
     * arg array followed by the argument bytes). */
    bool multi, multi_dirty;
    struct queued {
        struct arg *argv;
        size_t argc;
    } * queue;
    size_t queued, queue_cap, queue_bytes;
};

/* ----------------------------------------------------------- policies */

enum policy {
    POLICY_NOEVICTION,
    POLICY_ALLKEYS_LRU,
    POLICY_ALLKEYS_RANDOM,
    POLICY_VOLATILE_LRU,
    POLICY_VOLATILE_RANDOM,
    POLICY_VOLATILE_TTL,
};

/* ------------------------------------------------------------- server */

struct server {
    struct rota_keyed *map;
    struct rota_clock clock;
    uint64_t now_tick;  /* monotonic ms, refreshed before each command */
    long long now_ms;   /* unix time in ms, refreshed with now_tick */
    struct value **all; /* every key (SCAN, eviction) */
    size_t all_len, all_cap;
    size_t vol_len;     /* keys with a TTL (volatile-* eviction samples
                           them from `all`) */
    size_t value_bytes; /* memory held by values, as allocated */
    uint64_t rng;

    unsigned long long proto_max_bulk_len, query_buffer_limit;
    unsigned long long maxmemory;
    enum policy policy;
    unsigned maxmemory_samples;
    unsigned max_clients, clients;
    int port;
    struct in_addr bind_addr; /* --bind (127.0.0.1) */
    char *requirepass;        /* --requirepass; NULL: none */
    size_t requirepass_len;
    bool protected_mode; /* --protected-mode (yes) */
    uint64_t next_client_id;
    const char *fault; /* a planted fault, for the tests (see server.c) */

    int epfd, listen_fd, reserve_fd;
    bool accept_parked;
    uint64_t accept_retry_tick, accept_backoff;
    struct client *clients_list;
    struct client *ready_list; /* clients with work left (server.c) */
    uint64_t turn;             /* loop turns, to serve a client once each */

    size_t peak_memory;
    uint64_t commands, connections, expired, evicted, rejected, keyspace_hits,
        keyspace_misses;
    volatile sig_atomic_t stop;
};

extern struct server S;

/* ------------------------------------------------------------- resp.c */

enum parse {
    PARSE_MORE,  /* wait for more input */
    PARSE_DONE,  /* a request is in c->argv[0, argc) (argc may be 0) */
    PARSE_ERROR, /* a protocol error reply is queued: close after it */
};
enum parse parse_request(struct client *c);
void request_done(struct client *c);

bool out_reserve(struct client *c, size_t more);
void out_add(struct client *c, const void *data, size_t len);
void out_str(struct client *c, const char *s);
void out_fmt(struct client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void out_int(struct client *c, long long v);
void out_bulk(struct client *c, const void *data, size_t len);
void out_bulk_str(struct client *c, const char *s);
void out_null(struct client *c);
void out_ok(struct client *c);
void out_array(struct client *c, long long n);
/* "-ERR ..." with `msg` as given (it includes the ERR, OOM... prefix). */
void out_error(struct client *c, const char *msg);
/* An error formatted as Redis's addReplyErrorFormat(): CR and LF in the
 * text become spaces, so a client-supplied string cannot break framing. */
void out_errorf(struct client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

bool string_to_ll(const char *s, size_t len, long long *out);
size_t ll_to_string(char *buf, long long v);
bool glob_match(const char *pat, size_t plen, const char *s, size_t slen,
                bool nocase);
/* Case-insensitive comparison of a C string option, as Redis compares
 * argv[i]->ptr (the argument ends at its first NUL byte). */
bool opt_is(const struct arg *a, const char *word);

/* ------------------------------------------------------------ store.c */

int store_init(void);
void store_destroy(void);
/* Refresh S.now_tick and S.now_ms (before each command and loop turn). */
void store_tick(void);
/* Expire the keys that are due for about `budget_ns` at most (in steps of
 * rota_keyed_advance_max()), and unmap a slice of a table the map freed;
 * true when work of either kind is left: call again soon, without
 * sleeping.  Keys due and not yet expired are still in the map but never
 * served (store_lookup() checks their time). */
bool store_expire(uint64_t budget_ns);
/* The live value of a key (an expired one is deleted and not found). */
struct value *store_lookup(const char *key, size_t len);
/* Set key to value bytes.  when: NO_EXPIRE or unix ms; keepttl keeps the
 * old expiry.  NULL when out of memory (the store is unchanged). */
struct value *store_set(const char *key, size_t klen, const void *val,
                        size_t vlen, long long when, bool keepttl);
void store_set_expire(struct value *v, long long when);
/* Append n bytes to v's value, in place when its spare room holds them;
 * else the value is reallocated with room to grow (geometric: a run of
 * appends costs amortised O(1) per byte).  The value (moved, maybe), or
 * NULL when out of memory (v unchanged). */
struct value *store_append(struct value *v, const void *p, size_t n);
bool store_delete(const char *key, size_t len);
void store_flush(void);
/* Empty the store at once; the old keys are freed over later loop turns
 * (store_expire()). */
void store_flush_async(void);
size_t store_count(void);
size_t store_used_memory(void);
/* Evict until used memory is within maxmemory; false when it cannot. */
bool store_evict(void);
/* One SCAN step from `cursor`; calls fn for each key visited. */
unsigned long long store_scan(unsigned long long cursor, long count,
                              void (*fn)(struct value *v, void *arg),
                              void *arg);
long long store_avg_ttl(void);
const char *policy_name(enum policy p);
bool policy_parse(const char *s, enum policy *out);

/* ------------------------------------------- commands.c, keyspace.c */

#define CMD_DENYOOM 1u /* refused when memory cannot be freed */
#define CMD_NOAUTH 2u  /* runs before the client has authenticated */
#define CMD_NOQUEUE 4u /* runs at once inside MULTI */

typedef void command_fn(struct client *c, struct arg *a, size_t argc);

/* A command, or a container (CLIENT, COMMAND, CONFIG) whose second word
 * picks one of `subs`: a subcommand is named "container|sub" (Redis's
 * full name, used in its errors) and its arity counts the container. */
struct command {
    const char *name; /* lower case, as Redis names it in errors */
    int arity;        /* > 0: exactly; < 0: at least -arity arguments */
    unsigned flags;
    command_fn *fn;
    const struct command *subs; /* NULL-terminated by name, or NULL */
};

extern const struct command keyspace_commands[];
extern const size_t keyspace_ncommands;
extern const char *const not_integer, *const syntax_error;
void reply_arity(struct client *c, const char *name);
/* A strict integer argument, or Redis's "not an integer" reply. */
bool arg_ll(struct client *c, const struct arg *a, long long *v);

extern const struct command connection_commands[];
extern const size_t connection_ncommands;
/* How many commands (containers counted once) COMMAND COUNT reports. */
size_t command_count(void);

/* Protected mode (connection.c): a connection from `peer` is refused with
 * Redis's DENIED error when protected mode is on, no password is set and
 * the peer is not on loopback (127.0.0.0/8). */
bool protected_refuses(const struct sockaddr_in *peer);
extern const char denied_error[];
/* A new client's authentication state: authenticated unless a password
 * is set (also at RESET). */
void client_auth_reset(struct client *c);

void execute(struct client *c, struct arg *argv, size_t argc);
/* Free a client's MULTI queue (at DISCARD, EXEC and close). */
void multi_reset(struct client *c);

#endif /* TTL_CACHE_H */
