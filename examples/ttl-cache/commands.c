/* SPDX-License-Identifier: MIT */
/*
 * commands.c - dispatch, transactions and the server commands.
 *
 * execute() runs one request as Redis's processCommand() does: look the
 * name up (unknown: Redis's reply naming the first arguments), check the
 * arity (a positive arity is exact, a negative one a minimum), refuse a
 * command that adds data when memory is over --maxmemory and nothing can
 * be evicted, queue it when the client is in MULTI, else run it.  The
 * commands on keys are in keyspace.c, the connection's own (AUTH, HELLO,
 * CLIENT, RESET) in connection.c; here are PING, ECHO, SELECT, QUIT,
 * INFO, CONFIG GET, COMMAND and MULTI/EXEC/DISCARD.
 */
#define _GNU_SOURCE /* strnlen */
#include "cache.h"

#include <ctype.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const not_integer = "ERR value is not an integer or out of range";
const char *const syntax_error = "ERR syntax error";

void reply_arity(struct client *c, const char *name)
{
    out_errorf(c, "ERR wrong number of arguments for '%s' command", name);
}

bool arg_ll(struct client *c, const struct arg *a, long long *v)
{
    if (string_to_ll(a->p, a->len, v))
        return true;
    out_error(c, not_integer);
    return false;
}

/* ------------------------------------------------------------- server */

static void cmd_ping(struct client *c, struct arg *a, size_t argc)
{
    if (argc > 2)
        reply_arity(c, "ping");
    else if (argc == 2)
        out_bulk(c, a[1].p, a[1].len);
    else
        out_str(c, "+PONG\r\n");
}

static void cmd_echo(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    out_bulk(c, a[1].p, a[1].len);
}

static void cmd_select(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    long long id;
    if (!arg_ll(c, &a[1], &id))
        return;
    if (id < INT_MIN || id > INT_MAX)
        out_error(c, "ERR value is out of range, value must between "
                     "-2147483648 and 2147483647");
    else if (id != 0)
        out_error(c, "ERR DB index is out of range");
    else
        out_ok(c);
}

static void cmd_quit(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    out_ok(c);
    c->closing = true;
}

static void human_bytes(char *buf, size_t size, unsigned long long n)
{
    static const char units[] = "BKMGTP";
    double d = (double)n;
    int u = 0;
    while (d >= 1024 && u < 5)
        d /= 1024, u++;
    if (u == 0)
        snprintf(buf, size, "%lluB", n);
    else
        snprintf(buf, size, "%.2f%c", d, units[u]);
}

struct text {
    char buf[2048];
    size_t n;
};

static void add(struct text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(t->buf + t->n, sizeof t->buf - t->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        t->n += (size_t)k < sizeof t->buf - t->n ? (size_t)k
                                                 : sizeof t->buf - t->n - 1;
}

/* INFO [section ...]: Redis's layout ("# Title", field:value lines, a
 * blank line between sections) and field names, for the sections a cache
 * has: server, clients, memory, stats, keyspace. */
static void cmd_info(struct client *c, struct arg *a, size_t argc)
{
    static const char *const names[] = {"server", "clients", "memory", "stats",
                                        "keyspace"};
    static const char *const titles[] = {"Server", "Clients", "Memory", "Stats",
                                         "Keyspace"};
    unsigned want = argc == 1 ? ~0u : 0;
    for (size_t i = 1; i < argc; i++) {
        if (opt_is(&a[i], "all") || opt_is(&a[i], "default") ||
            opt_is(&a[i], "everything"))
            want = ~0u;
        for (unsigned s = 0; s < 5; s++)
            if (opt_is(&a[i], names[s]))
                want |= 1u << s;
    }
    struct text t = {.n = 0};
    char h1[32], h2[32], h3[32];
    for (unsigned s = 0; s < 5; s++) {
        if (!(want & (1u << s)))
            continue;
        add(&t, "%s# %s\r\n", t.n > 0 ? "\r\n" : "", titles[s]);
        if (s == 0) {
            add(&t,
                "redis_version:7.0.15\r\nserver_name:rota-ttl-cache\r\n"
                "rota_version:%s\r\nredis_mode:standalone\r\n"
                "tcp_port:%d\r\n",
                rota_version(), S.port);
        } else if (s == 1) {
            add(&t, "connected_clients:%u\r\nmaxclients:%u\r\n", S.clients,
                S.max_clients);
        } else if (s == 2) {
            size_t used = store_used_memory();
            human_bytes(h1, sizeof h1, used);
            human_bytes(h2, sizeof h2, S.peak_memory);
            human_bytes(h3, sizeof h3, S.maxmemory);
            add(&t,
                "used_memory:%zu\r\nused_memory_human:%s\r\n"
                "used_memory_peak:%zu\r\nused_memory_peak_human:%s\r\n"
                "used_memory_dataset:%zu\r\nmaxmemory:%llu\r\n"
                "maxmemory_human:%s\r\nmaxmemory_policy:%s\r\n"
                "maxmemory_samples:%u\r\nmem_allocator:libc\r\n",
                used, h1, S.peak_memory, h2, used, S.maxmemory, h3,
                policy_name(S.policy), S.maxmemory_samples);
        } else if (s == 3) {
            add(&t,
                "total_connections_received:%" PRIu64 "\r\n"
                "total_commands_processed:%" PRIu64 "\r\n"
                "rejected_connections:%" PRIu64 "\r\n"
                "expired_keys:%" PRIu64 "\r\nevicted_keys:%" PRIu64 "\r\n"
                "keyspace_hits:%" PRIu64 "\r\n"
                "keyspace_misses:%" PRIu64 "\r\n",
                S.connections, S.commands, S.rejected, S.expired, S.evicted,
                S.keyspace_hits, S.keyspace_misses);
        } else if (store_count() > 0) {
            add(&t, "db0:keys=%zu,expires=%zu,avg_ttl=%lld\r\n", store_count(),
                S.vol_len, store_avg_ttl());
        }
    }
    out_bulk(c, t.buf, t.n);
}

/* CONFIG GET: the few parameters clients ask about. */
static void cmd_config_get(struct client *c, struct arg *a, size_t argc)
{
    char v[8][32];
    snprintf(v[0], sizeof v[0], "%llu", S.maxmemory);
    snprintf(v[1], sizeof v[1], "%s", policy_name(S.policy));
    snprintf(v[2], sizeof v[2], "%u", S.maxmemory_samples);
    snprintf(v[3], sizeof v[3], "%u", S.max_clients);
    snprintf(v[4], sizeof v[4], "%llu", S.proto_max_bulk_len);
    snprintf(v[5], sizeof v[5], "%llu", S.query_buffer_limit);
    const char *params[][2] = {
        {"maxmemory", v[0]},
        {"maxmemory-policy", v[1]},
        {"maxmemory-samples", v[2]},
        {"maxclients", v[3]},
        {"proto-max-bulk-len", v[4]},
        {"client-query-buffer-limit", v[5]},
        {"appendonly", "no"},
        {"save", ""},
        {"databases", "1"},
        {"protected-mode", S.protected_mode ? "yes" : "no"},
    };
    size_t np = sizeof params / sizeof *params;
    bool hit[sizeof params / sizeof *params] = {false};
    long long n = 0;
    for (size_t i = 2; i < argc; i++)
        for (size_t j = 0; j < np; j++)
            if (!hit[j] && glob_match(a[i].p, a[i].len, params[j][0],
                                      strlen(params[j][0]), true))
                hit[j] = true, n++;
    out_array(c, 2 * n);
    for (size_t j = 0; j < np; j++)
        if (hit[j]) {
            out_bulk_str(c, params[j][0]);
            out_bulk_str(c, params[j][1]);
        }
}

/* COMMAND: no command documentation (an empty list, which redis-cli and
 * redis-benchmark accept), but COMMAND COUNT is an integer, as clients
 * expect: the number of commands this server has. */
static void cmd_command(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    out_array(c, 0);
}

static void cmd_command_count(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    out_int(c, (long long)command_count());
}

/* COMMAND DOCS: an empty map; COMMAND INFO: nil (undocumented) for each
 * name asked about. */
static void cmd_command_info(struct client *c, struct arg *a, size_t argc)
{
    (void)a;
    out_array(c, (long long)argc - 2);
    for (size_t i = 2; i < argc; i++)
        out_str(c, "*-1\r\n");
}

/* ------------------------------------------------------- transactions */

/*
 * MULTI / EXEC / DISCARD, as Redis runs them for a client library's
 * transactional pipeline: after MULTI each command is checked (unknown,
 * arity, memory) and queued ("+QUEUED"), or refused, which dooms the
 * transaction (EXEC answers EXECABORT).  EXEC runs the queue with nothing
 * in between (the server has one thread), at one instant of the clock,
 * and answers an array of the replies.  Over --maxmemory, an EXEC whose
 * queue adds data is refused as a whole and the transaction discarded
 * (EXECABORT naming the OOM error), as is an EXEC with arguments.  WATCH is not supported (it is an unknown command).  The queue
 * is bounded by --client-query-buffer-limit, like the input it came from.
 */
void multi_reset(struct client *c)
{
    for (size_t i = 0; i < c->queued; i++)
        free(c->queue[i].argv);
    free(c->queue);
    c->queue = NULL;
    c->queued = c->queue_cap = c->queue_bytes = 0;
    c->multi = c->multi_dirty = false;
}

static bool multi_queue(struct client *c, const struct arg *a, size_t argc)
{
    size_t bytes = argc * sizeof(struct arg);
    for (size_t i = 0; i < argc; i++)
        bytes += a[i].len;
    if (c->queue_bytes + bytes > S.query_buffer_limit)
        return false;
    if (c->queued == c->queue_cap) {
        size_t cap = c->queue_cap ? c->queue_cap * 2 : 8;
        struct queued *q = realloc(c->queue, cap * sizeof *q);
        if (q == NULL)
            return false;
        c->queue = q;
        c->queue_cap = cap;
    }
    struct arg *copy = malloc(bytes > 0 ? bytes : 1);
    if (copy == NULL)
        return false;
    char *p = (char *)(copy + argc);
    for (size_t i = 0; i < argc; i++) {
        memcpy(p, a[i].p, a[i].len);
        copy[i] = (struct arg){p, a[i].len, 0};
        p += a[i].len;
    }
    c->queue[c->queued++] = (struct queued){copy, argc};
    c->queue_bytes += bytes;
    return true;
}

static void cmd_multi(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    if (c->multi) {
        out_error(c, "ERR MULTI calls can not be nested");
        return;
    }
    c->multi = true;
    out_ok(c);
}

static void cmd_discard(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    if (!c->multi) {
        out_error(c, "ERR DISCARD without MULTI");
        return;
    }
    multi_reset(c);
    out_ok(c);
}

static const struct command *resolve(const struct arg *a, size_t argc);

static void cmd_exec(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    if (!c->multi) {
        out_error(c, "ERR EXEC without MULTI");
        return;
    }
    if (c->multi_dirty) {
        out_error(c, "EXECABORT Transaction discarded because of previous "
                     "errors.");
        multi_reset(c);
        return;
    }
    out_array(c, (long long)c->queued);
    for (size_t i = 0; i < c->queued; i++) {
        struct queued *q = &c->queue[i];
        S.commands++; /* the clock stays at EXEC's instant, as in Redis */
        resolve(q->argv, q->argc)->fn(c, q->argv, q->argc);
    }
    multi_reset(c);
}

/* ----------------------------------------------------------- dispatch */

static const struct command command_subs[] = {
    {"command|count", 2, 0, cmd_command_count, NULL},
    {"command|docs", -2, 0, cmd_command, NULL},
    {"command|info", -2, 0, cmd_command_info, NULL},
    {NULL, 0, 0, NULL, NULL},
};

static const struct command config_subs[] = {
    {"config|get", -3, 0, cmd_config_get, NULL},
    {NULL, 0, 0, NULL, NULL},
};

static const struct command server_commands[] = {
    {"ping", -1, 0, cmd_ping, NULL},
    {"echo", 2, 0, cmd_echo, NULL},
    {"info", -1, 0, cmd_info, NULL},
    {"select", 2, 0, cmd_select, NULL},
    {"quit", -1, CMD_NOAUTH | CMD_NOQUEUE, cmd_quit, NULL},
    {"config", -2, 0, NULL, config_subs},
    {"command", -1, 0, cmd_command, command_subs},
    {"multi", 1, CMD_NOQUEUE, cmd_multi, NULL},
    {"exec", 1, CMD_NOQUEUE, cmd_exec, NULL},
    {"discard", 1, CMD_NOQUEUE, cmd_discard, NULL},
};
#define N_SERVER_COMMANDS (sizeof server_commands / sizeof *server_commands)

/* `name` is `word` (any case, the same length: a NUL byte does not end
 * it, as Redis's command table compares whole names).  The first letter
 * is compared first, inline: names are lower-case letters, `| 0x20`
 * lowers only A-Z onto them, and most names of the tables differ there,
 * so a lookup scans the tables for about a third of what strlen() and
 * strncasecmp() on every entry cost. */
static bool name_is(const char *name, const struct arg *word)
{
    if (word->len == 0 || name[0] != (char)(word->p[0] | 0x20))
        return false;
    return strlen(name) == word->len &&
           strncasecmp(name, word->p, word->len) == 0;
}

static const struct command *lookup_in(const struct command *t, size_t n,
                                       const struct arg *name)
{
    for (size_t i = 0; i < n; i++)
        if (name_is(t[i].name, name))
            return &t[i];
    return NULL;
}

static const struct command *lookup(const struct arg *name)
{
    const struct command *c =
        lookup_in(keyspace_commands, keyspace_ncommands, name);
    if (c == NULL)
        c = lookup_in(connection_commands, connection_ncommands, name);
    return c ? c : lookup_in(server_commands, N_SERVER_COMMANDS, name);
}

/* The subcommand of container `cmd` named by `word`, or NULL. */
static const struct command *lookup_sub(const struct command *cmd,
                                        const struct arg *word)
{
    for (const struct command *s = cmd->subs; s->name != NULL; s++)
        if (name_is(strchr(s->name, '|') + 1, word))
            return s;
    return NULL;
}

/* The command a checked request runs (a container's subcommand when it
 * has one). */
static const struct command *resolve(const struct arg *a, size_t argc)
{
    const struct command *cmd = lookup(&a[0]);
    if (cmd->subs != NULL && argc >= 2)
        cmd = lookup_sub(cmd, &a[1]);
    return cmd;
}

size_t command_count(void)
{
    return keyspace_ncommands + connection_ncommands + N_SERVER_COMMANDS;
}

/* Redis's unknown-command reply: the name and the first arguments (each
 * quoted, 128 bytes in all), as C strings (they end at a NUL byte). */
static void reply_unknown(struct client *c, struct arg *a, size_t argc)
{
    char args[512];
    size_t n = 0;
    args[0] = '\0';
    for (size_t i = 1; i < argc && n < 128; i++) {
        int room = 128 - (int)n;
        int len = (int)strnlen(a[i].p, a[i].len);
        int k = snprintf(args + n, sizeof args - n, "'%.*s' ",
                         len < room ? len : room, a[i].p);
        if (k > 0)
            n += (size_t)k;
    }
    out_errorf(c, "ERR unknown command '%.128s', with args beginning with: %s",
               a[0].p, args);
}

/* Redis's reply to an unknown subcommand of a container it knows. */
static void reply_unknown_sub(struct client *c, const struct command *cmd,
                              const struct arg *sub)
{
    char upper[16];
    size_t i = 0;
    for (; cmd->name[i] != '\0' && i < sizeof upper - 1; i++)
        upper[i] = (char)toupper((unsigned char)cmd->name[i]);
    upper[i] = '\0';
    size_t len = strnlen(sub->p, sub->len);
    out_errorf(c, "ERR unknown subcommand '%.*s'. Try %s HELP.",
               (int)(len < 128 ? len : 128), sub->p, upper);
}

/*
 * Refuse a command as Redis's rejectCommand() does: a transaction in
 * progress is doomed, and a refused EXEC discards it at once, answering
 * EXECABORT with the reason (without its ERR prefix).
 */
static void reject(struct client *c, const struct command *cmd, const char *msg)
{
    c->multi_dirty = c->multi;
    if (cmd == NULL || cmd->fn != cmd_exec) {
        out_error(c, msg);
        return;
    }
    multi_reset(c);
    if (strncmp(msg, "ERR ", 4) == 0)
        msg += 4;
    out_errorf(c, "EXECABORT Transaction discarded because of: %s", msg);
}

/* Whether the command is refused while memory is over the bound: one that
 * adds data, anything but EXEC and DISCARD once in MULTI (the queue
 * grows), and EXEC when it would run one that adds data. */
static bool refused_when_full(const struct client *c, const struct command *cmd)
{
    if (cmd->flags & CMD_DENYOOM)
        return true;
    if (!c->multi || cmd->fn == cmd_discard || cmd->fn == cmd_quit)
        return false;
    if (cmd->fn != cmd_exec)
        return true;
    for (size_t i = 0; i < c->queued; i++)
        if (resolve(c->queue[i].argv, c->queue[i].argc)->flags & CMD_DENYOOM)
            return true;
    return false;
}

/*
 * The checks run in Redis's order, each refusal marking a MULTI block as
 * doomed (see reject()): the name (unknown command or subcommand), the arity, then
 * authentication (only AUTH, HELLO, QUIT and RESET run before it), then
 * memory; a client in MULTI then queues all but the commands that end or
 * leave the transaction.
 */
void execute(struct client *c, struct arg *a, size_t argc)
{
    const struct command *cmd = lookup(&a[0]);
    store_tick(); /* one instant per command (expiry runs per loop turn) */
    S.commands++;
    c->last = NULL;
    if (cmd == NULL) {
        /* Redis reads the name as a C string: stop it at the request's
         * end (args point into a larger buffer). */
        char name[129];
        size_t len = strnlen(a[0].p, a[0].len < 128 ? a[0].len : 128);
        memcpy(name, a[0].p, len);
        name[len] = '\0';
        struct arg copy = a[0];
        a[0].p = name;
        reply_unknown(c, a, argc);
        a[0] = copy;
        c->multi_dirty = c->multi;
        return;
    }
    if (cmd->subs != NULL && argc >= 2) {
        const struct command *sub = lookup_sub(cmd, &a[1]);
        if (sub == NULL) {
            reply_unknown_sub(c, cmd, &a[1]);
            c->multi_dirty = c->multi;
            return;
        }
        cmd = sub;
    }
    c->last = cmd;
    if ((cmd->arity > 0 && (size_t)cmd->arity != argc) ||
        argc < (size_t)(cmd->arity < 0 ? -cmd->arity : 0)) {
        char msg[128];
        snprintf(msg, sizeof msg,
                 "ERR wrong number of arguments for '%s' command", cmd->name);
        reject(c, cmd, msg);
        return;
    }
    if (!c->authenticated && !(cmd->flags & CMD_NOAUTH)) {
        reject(c, cmd, "NOAUTH Authentication required.");
        return;
    }
    if (S.maxmemory > 0 && !store_evict() && refused_when_full(c, cmd)) {
        reject(c, cmd,
               "OOM command not allowed when used memory > 'maxmemory'.");
        return;
    }
    if (c->multi && !(cmd->flags & CMD_NOQUEUE)) {
        if (!multi_queue(c, a, argc)) {
            c->closing = true; /* past the query buffer limit */
            return;
        }
        out_str(c, "+QUEUED\r\n");
        return;
    }
    cmd->fn(c, a, argc);
}
