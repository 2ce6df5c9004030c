/* SPDX-License-Identifier: MIT */
/*
 * connection.c - what a connection says about itself: AUTH, HELLO, CLIENT,
 * RESET; the password check and protected mode.
 *
 * THE PASSWORD
 *   There is one user, "default", as in a Redis without ACL rules.  With
 *   --requirepass set, a new connection is not authenticated and every
 *   command but AUTH, HELLO, QUIT and RESET gets "-NOAUTH Authentication
 *   required." (after the unknown-command and arity checks, which come
 *   first in Redis too).  AUTH password, AUTH default password and HELLO
 *   2 AUTH default password authenticate it; a wrong password or another
 *   user name gets Redis's WRONGPASS error and changes nothing (a client
 *   already authenticated stays so).  Without a password every connection
 *   is authenticated, AUTH default <anything> answers OK and AUTH
 *   <password> gets Redis's "called without any password configured"
 *   error.  RESET returns a connection to its state at accept: not
 *   authenticated when a password is set, no name, no transaction.
 *
 *   The comparison takes a time that depends on the configured password's
 *   length only, never on the bytes a client sends: every byte of the
 *   password is compared (against the given byte at that position, or
 *   the first when the given one is shorter), the differences are OR-ed
 *   together and tested once at the end.  A wrong password costs what a
 *   right one does, a few nanoseconds, and there is no delay after a
 *   failure: the client's turn is bounded like any other (server.c), so a
 *   client sending wrong passwords as fast as it can slows nobody else.
 *   The password is never printed, and the flag's copy in argv is wiped
 *   at startup (server.c).
 *
 *   Until it authenticates, a client is held to Redis 7.0's bounds for
 *   unauthenticated clients (cache.h): an array of more than 10 elements
 *   or a bulk over 16 KiB is a protocol error ("unauthenticated multibulk
 *   length", "... bulk length") that closes it, and a client that lets
 *   more than 17 KiB of replies pile up unread is closed without them.  A
 *   stranger can thus make the server hold little for it, and a guesser
 *   must read its answers.
 *
 * PROTECTED MODE
 *   As Redis defines it: while protected mode is on (the default) and no
 *   password is set, a connection whose peer is not on loopback
 *   (127.0.0.0/8) gets Redis's DENIED error at once, before it sends
 *   anything, and is closed.  --protected-mode no turns it off; setting a
 *   password makes it moot.  The DENIED text is Redis's own, word for
 *   word (clients match on it); of the remedies it lists, the cache has
 *   --protected-mode no and --requirepass.
 *
 * HELLO
 *   HELLO [2 [AUTH user pass] [SETNAME name]] answers Redis's RESP2 map
 *   (server, version, proto 2, id, mode, role, modules) and runs its
 *   options in order, as Redis 7.0 does (an AUTH that passed stays passed
 *   when a later SETNAME fails).  RESP3 is not implemented: HELLO 3 gets
 *   the "-NOPROTO unsupported protocol version" that Redis gives any
 *   version it lacks, so a client falls back to RESP2 (and to AUTH).
 *
 * CLIENT
 *   SETNAME (Redis's rule: ASCII '!' to '~', empty clears), GETNAME, ID
 *   (1, 2, ... in order of accept), INFO and LIST [TYPE t] [ID id ...] in
 *   Redis 7.0's line format, every field from the connection's own state:
 *   addresses, descriptor, age and idle seconds, flags (x in MULTI, else
 *   N), queued commands, buffer sizes, events, the last command.  Fields
 *   of features the cache lacks keep Redis's idle values (db=0, sub=0,
 *   user=default, redir=-1, resp=2).
 */
#define _GNU_SOURCE /* strnlen */
#include "cache.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

static const char wrongpass[] =
    "WRONGPASS invalid username-password pair or user is disabled.";

const char denied_error[] =
    "-DENIED Redis is running in protected mode because protected mode is "
    "enabled and no password is set for the default user. In this mode "
    "connections are only accepted from the loopback interface. If you want "
    "to connect from external computers to Redis you may adopt one of the "
    "following solutions: 1) Just disable protected mode sending the "
    "command 'CONFIG SET protected-mode no' from the loopback interface by "
    "connecting to Redis from the same host the server is running, however "
    "MAKE SURE Redis is not publicly accessible from internet if you do so. "
    "Use CONFIG REWRITE to make this change permanent. 2) Alternatively you "
    "can just disable the protected mode by editing the Redis configuration "
    "file, and setting the protected mode option to 'no', and then "
    "restarting the server. 3) If you started the server manually just for "
    "testing, restart it with the '--protected-mode no' option. 4) Setup a "
    "an authentication password for the default user. NOTE: You only need "
    "to do one of the above things in order for the server to start "
    "accepting connections from the outside.\r\n";

bool protected_refuses(const struct sockaddr_in *peer)
{
    if (S.fault != NULL && strcmp(S.fault, "protected") == 0)
        return false; /* the planted fault of the self-check */
    return S.protected_mode && S.requirepass == NULL &&
           (ntohl(peer->sin_addr.s_addr) >> 24) != 127;
}

void client_auth_reset(struct client *c)
{
    c->authenticated = S.requirepass == NULL;
}

/* See THE PASSWORD: time set by the password's length alone. */
static bool password_matches(const char *given, size_t len)
{
    const unsigned char *want = (const unsigned char *)S.requirepass;
    const unsigned char *got = (const unsigned char *)given;
    size_t n = S.requirepass_len;
    unsigned diff = len != n;

    /* The planted fault of the self-check: compare only as many bytes as
     * were given, so a prefix of the password passes. */
    if (S.fault != NULL && strcmp(S.fault, "auth") == 0 && len < n)
        n = len, diff = 0;
    for (size_t i = 0; i < n; i++) {
        size_t in = (size_t)0 - (size_t)(i < len); /* all ones: i < len */
        unsigned char g = len > 0 ? got[i & in] : 0;
        diff |= (unsigned)(want[i] ^ g);
    }
    return diff == 0;
}

/* Redis's ACLAuthenticateUser() for its one user; true when it passed
 * (the client is then authenticated). */
static bool authenticate(struct client *c, const struct arg *user,
                         const struct arg *pass)
{
    bool matches =
        S.requirepass == NULL || password_matches(pass->p, pass->len);
    if (user->len != 7 || memcmp(user->p, "default", 7) != 0 || !matches)
        return false;
    c->authenticated = true;
    return true;
}

/* An error whose text includes a client's argument, as Redis's
 * addReplyErrorFormat() with "%s" writes it: up to its first NUL byte,
 * CR and LF blanked, any length. */
static void error_with_arg(struct client *c, const char *before,
                           const struct arg *a, const char *after)
{
    size_t len = strnlen(a->p, a->len);
    out_add(c, "-", 1);
    out_str(c, before);
    if (!out_reserve(c, len))
        return;
    for (size_t i = 0; i < len; i++) {
        char ch = a->p[i] == '\r' || a->p[i] == '\n' ? ' ' : a->p[i];
        out_add(c, &ch, 1);
    }
    out_str(c, after);
    out_add(c, "\r\n", 2);
}

static void cmd_auth(struct client *c, struct arg *a, size_t argc)
{
    static const struct arg default_user = {"default", 7, 0};
    if (argc > 3) {
        out_error(c, syntax_error);
        return;
    }
    if (argc == 2 && S.requirepass == NULL) {
        out_error(c, "ERR AUTH <password> called without any password "
                     "configured for the default user. Are you sure your "
                     "configuration is correct?");
        return;
    }
    if (authenticate(c, argc == 2 ? &default_user : &a[1], &a[argc - 1]))
        out_ok(c);
    else
        out_error(c, wrongpass);
}

/* CLIENT SETNAME's rule; false (and Redis's error) for a bad name. */
static bool set_name(struct client *c, const struct arg *name)
{
    for (size_t i = 0; i < name->len; i++)
        if (name->p[i] < '!' || name->p[i] > '~') {
            out_error(c, "ERR Client names cannot contain spaces, newlines "
                         "or special characters.");
            return false;
        }
    char *copy = NULL;
    if (name->len > 0) {
        copy = malloc(name->len + 1);
        if (copy == NULL) {
            out_error(c, "ERR out of memory");
            return false;
        }
        memcpy(copy, name->p, name->len);
        copy[name->len] = '\0';
    }
    free(c->name);
    c->name = copy;
    return true;
}

static void cmd_hello(struct client *c, struct arg *a, size_t argc)
{
    size_t j = 1;
    if (argc >= 2) {
        long long ver;
        if (!string_to_ll(a[1].p, a[1].len, &ver)) {
            out_error(c, "ERR Protocol version is not an integer or out of "
                         "range");
            return;
        }
        if (ver != 2) { /* RESP3 is not implemented (see HELLO) */
            out_error(c, "NOPROTO unsupported protocol version");
            return;
        }
        j = 2;
    }
    for (; j < argc; j++) {
        size_t more = argc - 1 - j;
        if (opt_is(&a[j], "AUTH") && more >= 2) {
            if (!authenticate(c, &a[j + 1], &a[j + 2])) {
                out_error(c, wrongpass);
                return;
            }
            j += 2;
        } else if (opt_is(&a[j], "SETNAME") && more >= 1) {
            if (!set_name(c, &a[j + 1]))
                return;
            j++;
        } else {
            error_with_arg(c, "ERR Syntax error in HELLO option '", &a[j], "'");
            return;
        }
    }
    if (!c->authenticated) {
        out_error(c, "NOAUTH HELLO must be called with the client already "
                     "authenticated, otherwise the HELLO AUTH <user> <pass> "
                     "option can be used to authenticate the client and "
                     "select the RESP protocol version at the same time");
        return;
    }
    out_array(c, 14);
    out_bulk_str(c, "server");
    out_bulk_str(c, "redis");
    out_bulk_str(c, "version");
    out_bulk_str(c, "7.0.15");
    out_bulk_str(c, "proto");
    out_int(c, 2);
    out_bulk_str(c, "id");
    out_int(c, (long long)c->id);
    out_bulk_str(c, "mode");
    out_bulk_str(c, "standalone");
    out_bulk_str(c, "role");
    out_bulk_str(c, "master");
    out_bulk_str(c, "modules");
    out_array(c, 0);
}

static void cmd_reset(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    multi_reset(c);
    free(c->name);
    c->name = NULL;
    client_auth_reset(c);
    out_str(c, "+RESET\r\n");
}

/* ------------------------------------------------------------- CLIENT */

static void cmd_client_id(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    out_int(c, (long long)c->id);
}

static void cmd_client_getname(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    if (c->name == NULL)
        out_null(c);
    else
        out_bulk_str(c, c->name);
}

static void cmd_client_setname(struct client *c, struct arg *a, size_t argc)
{
    (void)argc;
    if (set_name(c, &a[2]))
        out_ok(c);
}

static void format_addr(char *buf, size_t size, const struct sockaddr_in *sa)
{
    char ip[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof ip) == NULL)
        snprintf(ip, sizeof ip, "?");
    snprintf(buf, size, "%s:%u", ip, (unsigned)ntohs(sa->sin_port));
}

/* One client's line of CLIENT INFO and LIST (Redis 7.0's fields, in its
 * order), "\n" included; its length (truncated to `size`). */
static size_t client_line(char *buf, size_t size, const struct client *x)
{
    char addr[32], laddr[32];
    format_addr(addr, sizeof addr, &x->peer);
    format_addr(laddr, sizeof laddr, &x->local);
    size_t argv_mem = 0;
    for (size_t i = 0; i < x->argc; i++)
        argv_mem += x->argv[i].len;
    size_t tot = sizeof *x + x->in_cap + x->out_cap +
                 x->argv_cap * sizeof(struct arg) + x->queue_bytes;
    const char *cmd = x->last ? x->last->name : "NULL";
    char events[3] = {0};
    size_t ne = 0;
    if (x->events & EPOLLIN)
        events[ne++] = 'r';
    if (x->events & EPOLLOUT)
        events[ne++] = 'w';
    int n = snprintf(
        buf, size,
        "id=%llu addr=%s laddr=%s fd=%d name=%s age=%llu idle=%llu "
        "flags=%s db=0 sub=0 psub=0 ssub=0 multi=%lld qbuf=%zu qbuf-free=%zu "
        "argv-mem=%zu multi-mem=%zu rbs=%zu rbp=%zu obl=%zu oll=0 omem=0 "
        "tot-mem=%zu events=%s cmd=%s user=default redir=-1 resp=2\n",
        (unsigned long long)x->id, addr, laddr, x->fd, x->name ? x->name : "",
        (unsigned long long)(S.now_tick - x->created_tick) / 1000,
        (unsigned long long)(S.now_tick - x->active_tick) / 1000,
        x->multi ? "x" : "N", x->multi ? (long long)x->queued : -1LL,
        x->in_len - x->qpos, x->in_cap - x->in_len, argv_mem, x->queue_bytes,
        x->in_cap, x->in_cap, x->out_len - x->out_off, tot, events, cmd);
    if (n < 0)
        return 0;
    return (size_t)n < size ? (size_t)n : size - 1;
}

static void cmd_client_info(struct client *c, struct arg *a, size_t argc)
{
    (void)a, (void)argc;
    char line[1024];
    out_bulk(c, line, client_line(line, sizeof line, c));
}

/* The oldest client: CLIENT LIST goes in order of accept, as Redis's. */
static struct client *oldest(void)
{
    struct client *x = S.clients_list;
    while (x != NULL && x->next != NULL)
        x = x->next;
    return x;
}

static struct client *by_id(uint64_t id)
{
    for (struct client *x = S.clients_list; x != NULL; x = x->next)
        if (x->id == id)
            return x;
    return NULL;
}

/* CLIENT LIST [TYPE normal|master|replica|slave|pubsub] [ID id ...]:
 * every client is a normal one. */
static void cmd_client_list(struct client *c, struct arg *a, size_t argc)
{
    bool all = true, ids = false;
    if (argc == 4 && opt_is(&a[2], "TYPE")) {
        if (opt_is(&a[3], "normal"))
            all = true;
        else if (opt_is(&a[3], "master") || opt_is(&a[3], "replica") ||
                 opt_is(&a[3], "slave") || opt_is(&a[3], "pubsub"))
            all = false;
        else {
            error_with_arg(c, "ERR Unknown client type '", &a[3], "'");
            return;
        }
    } else if (argc > 3 && opt_is(&a[2], "ID")) {
        ids = true;
        for (size_t i = 3; i < argc; i++) {
            long long id;
            if (!string_to_ll(a[i].p, a[i].len, &id)) {
                out_error(c, "ERR Invalid client ID");
                return;
            }
        }
    } else if (argc != 2) {
        out_error(c, syntax_error);
        return;
    }
    /* Lines go to a buffer first: the reply is one bulk of their total
     * length. */
    size_t len = 0, cap = 0;
    char *text = NULL, line[1024];
    size_t nsel = ids ? argc - 3 : 0;
    struct client *x = ids ? NULL : all ? oldest() : NULL;
    for (size_t i = 0; ids ? i < nsel : x != NULL; i++) {
        const struct client *one = x;
        if (ids) {
            long long id;
            string_to_ll(a[3 + i].p, a[3 + i].len, &id);
            one = id > 0 ? by_id((uint64_t)id) : NULL;
        } else {
            x = x->prev;
        }
        if (one == NULL)
            continue;
        size_t n = client_line(line, sizeof line, one);
        if (len + n > cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            while (ncap < len + n)
                ncap *= 2;
            char *p = realloc(text, ncap);
            if (p == NULL) {
                free(text);
                out_error(c, "ERR out of memory");
                return;
            }
            text = p;
            cap = ncap;
        }
        memcpy(text + len, line, n);
        len += n;
    }
    out_bulk(c, text != NULL ? text : "", len);
    free(text);
}

/* ----------------------------------------------------------- dispatch */

static const struct command client_subs[] = {
    {"client|id", 2, 0, cmd_client_id, NULL},
    {"client|getname", 2, 0, cmd_client_getname, NULL},
    {"client|setname", 3, 0, cmd_client_setname, NULL},
    {"client|info", 2, 0, cmd_client_info, NULL},
    {"client|list", -2, 0, cmd_client_list, NULL},
    {NULL, 0, 0, NULL, NULL},
};

const struct command connection_commands[] = {
    {"auth", -2, CMD_NOAUTH, cmd_auth, NULL},
    {"hello", -1, CMD_NOAUTH, cmd_hello, NULL},
    {"reset", 1, CMD_NOAUTH | CMD_NOQUEUE, cmd_reset, NULL},
    {"client", -2, 0, NULL, client_subs},
};
const size_t connection_ncommands =
    sizeof connection_commands / sizeof *connection_commands;
