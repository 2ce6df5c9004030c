/* SPDX-License-Identifier: MIT */
/*
 * server.c - rota-ttl-cache: options, the event loop, clients.
 *
 *   rota-ttl-cache [--bind ADDR] [--port N] [--requirepass PASSWORD]
 *                  [--protected-mode yes|no] [--max-clients N]
 *                  [--proto-max-bulk-len BYTES]
 *                  [--client-query-buffer-limit BYTES]
 *                  [--maxmemory BYTES] [--maxmemory-policy NAME]
 *                  [--maxmemory-samples N] [--help]
 *
 * A small in-memory key-value server speaking the Redis protocol on one
 * IPv4 address (127.0.0.1 unless --bind says otherwise), its keys' expiry
 * driven by rota/keyed.h (store.c).  BYTES take Redis's units: 100, 10k
 * (10,000), 10kb (10,240), 5mb, 1gb.  A bad flag or value is named in a
 * one-line error and exits 2; a listen error names the address and port
 * and exits 1.
 *
 * THE LOOP
 *   One thread, one level-triggered epoll set.  Each turn of the loop reads
 *   the clocks, expires keys for about a millisecond at most
 *   (store_expire()), then gives each client with something to do one
 *   turn of bounded work (see CLIENTS).  The loop sleeps until the wheel's
 *   next deadline (rota_wheel_timeout_ms(): rounded up, so it never wakes
 *   early and spins) or until a socket is ready, and does not sleep at all
 *   while expiry work or a client's work is left over from the last turn.
 *   Commands read the clocks again (store_tick()) but do not expire: a key
 *   whose time has passed and that no turn has reclaimed yet is still in
 *   the map, and every read checks its expiry (store_lookup()), so it is
 *   never served.
 *
 *   Why bounded: one pipelining client used to be served until its socket
 *   was empty, and a million keys sharing a deadline were expired in one
 *   call; either way every other client waited (seconds, or half a second).
 *   Redis reads 16 KiB from a client per turn and expires in time-limited
 *   cycles; so does this loop, with a bound on commands too.
 *
 * CLIENTS
 *   Each client has an input buffer (requests parsed in place, resp.c) and
 *   an output buffer.  A client's turn: run the requests left from its last
 *   turn, read once (at most READ_CHUNK bytes, more only to finish a bulk
 *   already announced, and only when no complete request is waiting), run
 *   what arrived, at most CMDS_PER_TURN commands in all, then write the
 *   replies.  A client that hit a bound with complete requests still in its
 *   buffer, or whose read filled the space asked for (its socket may hold
 *   more), joins the ready list and gets another turn in the next loop turn
 *   without waiting for an epoll event: level-triggered epoll reports a
 *   socket that still holds data, but not input already read and not yet
 *   run.  A client whose replies pile up past 16 MiB (it pipelines and
 *   does not read) is not read from or run until they drain.  When the
 *   peer shuts down its sending side (read() returns 0, as `printf ... |
 *   nc` does), the requests already received are still run and every reply
 *   is written before the connection is closed: nothing the client asked
 *   for is dropped.  After a protocol error or QUIT the reply is written,
 *   nothing more is read or run, and the connection is closed.  A client
 *   whose unparsed input exceeds --client-query-buffer-limit is closed
 *   without a reply, as Redis does.
 *
 * DESCRIPTORS
 *   As Redis does, the server makes room for --max-clients connections at
 *   startup: it raises its descriptor limit if it can, and otherwise
 *   lowers --max-clients to the limit minus 32 and says so on stderr.  A
 *   client over --max-clients gets "-ERR max number of clients reached"
 *   and is closed.  If accept() still runs out of descriptors (EMFILE,
 *   ENFILE: something else used them), one spare descriptor held for this
 *   purpose is closed to accept the waiting client, refuse it with the same
 *   error, and taken again.  If even that fails, the listener is parked
 *   (out of the epoll set) until a client closes or a back-off of 100 ms,
 *   doubling to 1 s, has passed: a level-triggered listener that cannot
 *   accept would otherwise wake the loop at once, forever, and burn a core.
 *
 * ACCESS
 *   --requirepass (or, kept out of `ps`, the environment variable
 *   ROTA_TTL_CACHE_REQUIREPASS) sets the password clients must give with
 *   AUTH or HELLO (connection.c).  The flag's value is wiped from argv as
 *   soon as it is read, but it is visible until then: the environment is
 *   the safe way.  Protected mode (on unless --protected-mode no) refuses
 *   clients not on loopback while no password is set; listening beyond
 *   loopback without a password prints a warning at start.
 *
 * SIGINT or SIGTERM frees everything and exits 0.
 */
#define _GNU_SOURCE /* accept4 */
#include "cache.h"
#include "cli.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* A client's turn reads at most READ_CHUNK bytes (Redis's PROTO_IOBUF_LEN)
 * and runs at most CMDS_PER_TURN commands; a turn of the loop spends about
 * EXPIRE_NS_PER_TURN expiring keys at most (Redis's fast expire cycle is
 * 1 ms too). */
#define READ_CHUNK 16384
#define CMDS_PER_TURN 1000u
#define EXPIRE_NS_PER_TURN 1000000u
#define RESERVED_FDS 32 /* descriptors kept for all but clients (Redis's) */

struct server S;

static bool paused(const struct client *c)
{
    return c->out_len - c->out_off >= MAX_OUTPUT;
}

/* ---------------------------------------------------------- listener */

static void listener_events(uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = NULL};
    epoll_ctl(S.epfd, EPOLL_CTL_MOD, S.listen_fd, &ev);
}

static void park_listener(void)
{
    listener_events(0);
    S.accept_parked = true;
    S.accept_backoff = S.accept_backoff ? S.accept_backoff * 2 : 100;
    if (S.accept_backoff > 1000)
        S.accept_backoff = 1000;
    S.accept_retry_tick = S.now_tick + S.accept_backoff;
}

static void unpark_listener(void)
{
    if (!S.accept_parked)
        return;
    S.accept_parked = false;
    listener_events(EPOLLIN);
}

/* ------------------------------------------------------------ clients */

/* The ready list: clients with work left from their last turn. */
static void ready_add(struct client *c)
{
    if (c->ready)
        return;
    c->ready = true;
    c->rprev = NULL;
    c->rnext = S.ready_list;
    if (S.ready_list != NULL)
        S.ready_list->rprev = c;
    S.ready_list = c;
}

static void ready_del(struct client *c)
{
    if (!c->ready)
        return;
    c->ready = false;
    if (c->rprev != NULL)
        c->rprev->rnext = c->rnext;
    else
        S.ready_list = c->rnext;
    if (c->rnext != NULL)
        c->rnext->rprev = c->rprev;
}

static void client_close(struct client *c)
{
    ready_del(c);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        S.clients_list = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    epoll_ctl(S.epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c->out);
    free(c->argv);
    free(c->inline_buf);
    free(c->name);
    multi_reset(c);
    free(c);
    S.clients--;
    unpark_listener(); /* a descriptor is free again */
}

static void update_events(struct client *c)
{
    uint32_t events = (c->closing || c->eof || paused(c) ? 0u : EPOLLIN) |
                      (c->out_len > c->out_off ? EPOLLOUT : 0u);
    if (events == c->events)
        return; /* the common case: no system call */
    struct epoll_event ev = {.events = events, .data.ptr = c};
    epoll_ctl(S.epfd, EPOLL_CTL_MOD, c->fd, &ev);
    c->events = events;
}

/* Run the complete requests in the input, at most *budget of them (each
 * one run takes one from it).  Sets c->backlog when it stopped with input
 * left unrun because of the budget or the output bound. */
static void process_input(struct client *c, unsigned *budget)
{
    c->backlog = false;
    while (!c->closing && c->qpos < c->in_len && c->in_len >= c->need) {
        if (*budget == 0 || paused(c)) {
            c->backlog = true;
            break;
        }
        c->need = 0;
        enum parse r = parse_request(c);
        if (r != PARSE_DONE)
            break;
        if (c->argc > 0)
            execute(c, c->argv, c->argc);
        request_done(c);
        (*budget)--;
        if (!c->authenticated && c->out_len - c->out_off > UNAUTH_MAX_OUTPUT) {
            /* It sends without reading, and has not authenticated: drop
             * it and its replies, as Redis does. */
            c->out_len = c->out_off = 0;
            c->closing = true;
        }
    }
    if (c->qpos > 0) { /* drop what has been served */
        memmove(c->in, c->in + c->qpos, c->in_len - c->qpos);
        c->in_len -= c->qpos;
        c->ppos -= c->qpos;
        c->need = c->need > c->qpos ? c->need - c->qpos : 0;
        c->qpos = 0;
    }
    if (c->in_len == 0 && c->in_cap > 16 * READ_CHUNK) {
        free(c->in); /* a big request is over: give its buffer back */
        c->in = NULL;
        c->in_cap = 0;
    }
}

/* Write what we can; false when the connection failed. */
static bool flush_output(struct client *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (n <= 0)
            return false;
        c->out_off += (size_t)n;
    }
    c->out_off = c->out_len = 0;
    if (c->out_cap > 16 * READ_CHUNK) {
        free(c->out);
        c->out = NULL;
        c->out_cap = 0;
    }
    return true;
}

/* Room to read another chunk.  The buffer doubles as a request grows, so
 * a big bulk costs a logarithmic number of copies; it never grows ahead of
 * the data, so announcing a 512 MB bulk and sending nothing costs nothing. */
static bool in_reserve(struct client *c)
{
    if (c->in_cap - c->in_len >= READ_CHUNK)
        return true;
    size_t cap = c->in_cap ? c->in_cap : READ_CHUNK;
    while (cap - c->in_len < READ_CHUNK)
        cap *= 2;
    char *p = realloc(c->in, cap);
    if (p == NULL)
        return false;
    c->in = p;
    c->in_cap = cap;
    return true;
}

/* One read(): READ_CHUNK bytes at most, or what is still missing of a
 * bulk being received when that is more (its bytes are only copied, and
 * reading a big value 16 KiB a turn would take thousands of turns).
 * Sets c->more_in when the read filled what it asked for: the socket may
 * hold more.  False when the client was closed. */
static bool read_once(struct client *c)
{
    c->more_in = false;
    if (!in_reserve(c)) {
        c->closing = true; /* out of memory: drop the client */
        return true;
    }
    size_t want = READ_CHUNK;
    if (c->need > c->in_len + want)
        want = c->need - c->in_len;
    if (want > c->in_cap - c->in_len)
        want = c->in_cap - c->in_len;
    ssize_t n;
    do
        n = read(c->fd, c->in + c->in_len, want);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return true;
    if (n < 0) { /* reset: no one to answer */
        client_close(c);
        return false;
    }
    if (n == 0) {
        c->eof = true;
        return true;
    }
    c->in_len += (size_t)n;
    c->more_in = (size_t)n == want;
    c->active_tick = S.now_tick;
    return true;
}

/* The request not yet run: its bytes and its parsed arguments (a million
 * empty bulks are 6 MB of input but 24 MB of arguments).  False when the
 * client was closed for passing the limit. */
static bool within_query_limit(struct client *c)
{
    if (c->in_len - c->qpos + c->argc * sizeof(struct arg) <=
        S.query_buffer_limit)
        return true;
    fprintf(stderr, "rota-ttl-cache: closing a client whose query "
                    "buffer passed client-query-buffer-limit\n");
    client_close(c);
    return false;
}

/*
 * One turn of a client (see CLIENTS in the header): write what is pending,
 * run the requests left from the last turn, read once if none is left and
 * the socket is readable (or may still hold data), run what arrived, write
 * the replies; then close it when it is done, or keep it on the ready list
 * when it has work left.  At most CMDS_PER_TURN commands and one read.
 */
static void client_turn(struct client *c, bool readable)
{
    unsigned budget = CMDS_PER_TURN;

    c->turn = S.turn;
    if (!flush_output(c)) {
        client_close(c);
        return;
    }
    process_input(c, &budget);
    if ((readable || c->more_in) && !c->backlog && !c->closing && !c->eof &&
        !paused(c)) {
        if (!read_once(c))
            return;
        process_input(c, &budget);
        if (!within_query_limit(c))
            return;
    } else if (c->eof || c->closing) {
        c->more_in = false;
    }
    if (!flush_output(c)) {
        client_close(c);
        return;
    }
    bool flushed = c->out_len == c->out_off;
    if (flushed && (c->closing || (c->eof && !c->backlog))) {
        client_close(c); /* every request answered and written */
        return;
    }
    if (!c->closing && !paused(c) && (c->backlog || c->more_in))
        ready_add(c);
    else
        ready_del(c);
    update_events(c);
}

/* Tell a client why it is refused and close it (a new socket's buffer
 * takes the whole text). */
static void refuse_with(int fd, const char *msg)
{
    ssize_t ignored = write(fd, msg, strlen(msg));
    (void)ignored;
    close(fd);
    S.rejected++;
}

static void refuse(int fd)
{
    refuse_with(fd, "-ERR max number of clients reached\r\n");
}

/* accept() is out of descriptors: refuse the waiting client with the
 * spare one, or park the listener.  True to go on accepting. */
static bool out_of_descriptors(void)
{
    if (S.reserve_fd >= 0) {
        close(S.reserve_fd);
        int fd = accept4(S.listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0)
            refuse(fd);
        S.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && S.reserve_fd >= 0)
            return true;
    }
    park_listener();
    return false;
}

static void accept_clients(void)
{
    if (S.reserve_fd < 0) /* lost when descriptors ran out: take it back */
        S.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (int i = 0; i < 1000; i++) { /* then let the clients run */
        struct sockaddr_in peer = {0}, local = {0};
        socklen_t plen = sizeof peer, llen = sizeof local;
        int fd = accept4(S.listen_fd, (struct sockaddr *)&peer, &plen,
                         SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                errno == ENOMEM) {
                if (out_of_descriptors())
                    continue;
            }
            return; /* EAGAIN, or the client gave up (ECONNABORTED) */
        }
        S.connections++;
        S.accept_backoff = 0;
        if (S.clients >= S.max_clients) {
            refuse(fd);
            continue;
        }
        if (protected_refuses(&peer)) { /* Redis's order: after maxclients */
            refuse_with(fd, denied_error);
            continue;
        }
        getsockname(fd, (struct sockaddr *)&local, &llen);
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
        c->id = ++S.next_client_id;
        c->peer = peer;
        c->local = local;
        c->created_tick = c->active_tick = S.now_tick;
        client_auth_reset(c);
        c->bulk_len = -1;
        c->events = EPOLLIN;
        c->next = S.clients_list;
        if (S.clients_list != NULL)
            S.clients_list->prev = c;
        S.clients_list = c;
        S.clients++;
    }
}

/* ------------------------------------------------------------ startup */

static void on_signal(int sig)
{
    (void)sig;
    S.stop = 1;
}

static bool on_loopback(struct in_addr a)
{
    return (ntohl(a.s_addr) >> 24) == 127;
}

/* Listen on --bind and --port, or exit with the reason, the address and
 * the port. */
static int listen_on(void)
{
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t)S.port),
                               .sin_addr = S.bind_addr};
    socklen_t alen = sizeof addr;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    if (fd < 0)
        cli_listen_die(&addr, errno);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(fd, 511) != 0)
        cli_listen_die(&addr, errno);
    if (getsockname(fd, (struct sockaddr *)&addr, &alen) != 0)
        cli_listen_die(&addr, errno);
    S.port = ntohs(addr.sin_port);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &S.bind_addr, ip, sizeof ip);
    printf("rota-ttl-cache listening on %s:%d\n", ip, S.port);
    fflush(stdout);
    if (!on_loopback(S.bind_addr) && S.requirepass == NULL)
        fprintf(stderr,
                S.protected_mode
                    ? "rota-ttl-cache: warning: listening on %s:%d without a "
                      "password: protected mode refuses every client not on "
                      "loopback (set a password with "
                      "ROTA_TTL_CACHE_REQUIREPASS or --requirepass to serve "
                      "them)\n"
                    : "rota-ttl-cache: warning: listening on %s:%d without a "
                      "password and with protected mode off: anyone who can "
                      "reach this port can read, change and delete every "
                      "key\n",
                ip, S.port);
    return fd;
}

/* Room for max_clients descriptors, as Redis's adjustOpenFilesLimit(). */
static bool fit_descriptor_limit(void)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)S.max_clients + RESERVED_FDS;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return true;
    rlim_t target = want;
    if (rl.rlim_max != RLIM_INFINITY && target > rl.rlim_max)
        target = rl.rlim_max;
    if (target > rl.rlim_cur) {
        struct rlimit nl = {target, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &nl) == 0)
            rl.rlim_cur = target;
    }
    if (rl.rlim_cur >= want)
        return true;
    if (rl.rlim_cur <= RESERVED_FDS) {
        fprintf(stderr,
                "rota-ttl-cache: the descriptor limit (%llu) leaves no room "
                "for clients; raise ulimit -n above %d\n",
                (unsigned long long)rl.rlim_cur, RESERVED_FDS);
        return false;
    }
    fprintf(stderr,
            "rota-ttl-cache: --max-clients %u needs %llu descriptors but the "
            "limit is %llu: max-clients lowered to %llu\n",
            S.max_clients, (unsigned long long)want,
            (unsigned long long)rl.rlim_cur,
            (unsigned long long)(rl.rlim_cur - RESERVED_FDS));
    S.max_clients = (unsigned)(rl.rlim_cur - RESERVED_FDS);
    return true;
}

static void usage(FILE *to)
{
    fprintf(
        to,
        "usage: rota-ttl-cache [options]\n"
        "A Redis-protocol TTL cache on rota's keyed timers.\n"
        "\n"
        "  --bind ADDR             IPv4 address to listen on (default "
        "127.0.0.1;\n"
        "                          0.0.0.0: every interface)\n"
        "  --port N                TCP port (default 6380; 0: any free port,\n"
        "                          printed on the first line of output)\n"
        "  --requirepass PASSWORD  clients must AUTH with it (default: none);"
        "\n"
        "                          visible in ps until read: prefer the\n"
        "                          environment variable "
        "ROTA_TTL_CACHE_REQUIREPASS\n"
        "  --protected-mode yes|no without a password, refuse clients not on"
        "\n"
        "                          loopback (default yes)\n"
        "  --max-clients N         refuse clients beyond N (default 10000)\n"
        "  --proto-max-bulk-len BYTES       largest bulk string (512mb)\n"
        "  --client-query-buffer-limit BYTES  a client's unparsed input (1gb)"
        "\n"
        "  --maxmemory BYTES       memory bound (default 0: none)\n"
        "  --maxmemory-policy P    noeviction (default), allkeys-lru,\n"
        "                          allkeys-random, volatile-lru,\n"
        "                          volatile-random or volatile-ttl\n"
        "  --maxmemory-samples N   keys sampled per eviction (default 5)\n"
        "  --help                  this text\n"
        "\n"
        "BYTES: 100, 10k, 10kb, 5mb, 1gb (k = 1000, kb = 1024).\n");
}

/* A count or size with Redis's units (memtoull()). */
static bool parse_size(const char *s, unsigned long long *out)
{
    static const struct {
        const char *unit;
        unsigned long long mul;
    } units[] = {{"", 1},           {"b", 1},          {"k", 1000},
                 {"kb", 1024},      {"m", 1000000},    {"mb", 1 << 20},
                 {"g", 1000000000}, {"gb", 1ull << 30}};
    char *end;
    errno = 0;
    if (*s < '0' || *s > '9')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return false;
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (strcasecmp(end, units[i].unit) == 0) {
            if (v > ULLONG_MAX / units[i].mul)
                return false;
            *out = v * units[i].mul;
            return true;
        }
    return false;
}

/* A BYTES value of option `opt`, at least `min`. */
static unsigned long long size_arg(const char *opt, const char *val,
                                   unsigned long long min)
{
    unsigned long long v;
    if (!parse_size(val, &v))
        cli_die("%s: '%s' is not a size (examples: 100, 10kb, 5mb, 1gb)", opt,
                val);
    if (v < min)
        cli_die("%s: '%s' is below the least allowed, %llu", opt, val, min);
    return v;
}

static void set_password(const char *p)
{
    free(S.requirepass);
    S.requirepass = NULL;
    S.requirepass_len = strlen(p);
    if (S.requirepass_len == 0) /* as Redis's requirepass "": none */
        return;
    S.requirepass = strdup(p);
    if (S.requirepass == NULL) {
        fprintf(stderr, "rota-ttl-cache: out of memory\n");
        exit(1);
    }
}

static void parse_options(int argc, char **argv)
{
    const char *bind_addr = "127.0.0.1";
    const char *env = getenv("ROTA_TTL_CACHE_REQUIREPASS");

    if (env != NULL)
        set_password(env);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--bind") == 0) {
            bind_addr = cli_value(argc, argv, &i);
        } else if (strcmp(a, "--port") == 0) {
            S.port = (int)cli_long(a, cli_value(argc, argv, &i), 0, 65535);
        } else if (strcmp(a, "--requirepass") == 0) {
            char *v = (char *)cli_value(argc, argv, &i);
            set_password(v);         /* the flag wins over the environment */
            memset(v, 0, strlen(v)); /* out of ps from now on */
        } else if (strcmp(a, "--protected-mode") == 0) {
            const char *v = cli_value(argc, argv, &i);
            if (strcasecmp(v, "yes") == 0)
                S.protected_mode = true;
            else if (strcasecmp(v, "no") == 0)
                S.protected_mode = false;
            else
                cli_die("--protected-mode: '%s' is not yes or no", v);
        } else if (strcmp(a, "--max-clients") == 0) {
            S.max_clients =
                (unsigned)cli_long(a, cli_value(argc, argv, &i), 1, 1000000);
        } else if (strcmp(a, "--proto-max-bulk-len") == 0) {
            S.proto_max_bulk_len = size_arg(a, cli_value(argc, argv, &i), 1024);
        } else if (strcmp(a, "--client-query-buffer-limit") == 0) {
            S.query_buffer_limit =
                size_arg(a, cli_value(argc, argv, &i), 1024 * 1024);
        } else if (strcmp(a, "--maxmemory") == 0) {
            S.maxmemory = size_arg(a, cli_value(argc, argv, &i), 0);
        } else if (strcmp(a, "--maxmemory-policy") == 0) {
            const char *v = cli_value(argc, argv, &i);
            if (!policy_parse(v, &S.policy))
                cli_die("--maxmemory-policy: '%s' is not a policy "
                        "(noeviction, allkeys-lru, allkeys-random, "
                        "volatile-lru, volatile-random, volatile-ttl)",
                        v);
        } else if (strcmp(a, "--maxmemory-samples") == 0) {
            S.maxmemory_samples =
                (unsigned)cli_long(a, cli_value(argc, argv, &i), 1, 64);
        } else if (strcmp(a, "--plant-fault") == 0) {
            S.fault = cli_value(argc, argv, &i); /* the tests' self-check */
        } else if (a[0] == '-') {
            cli_die("unknown option '%s'", a);
        } else {
            cli_die("unexpected argument '%s'", a);
        }
    }
    if (inet_pton(AF_INET, bind_addr, &S.bind_addr) != 1)
        cli_die("--bind: '%s' is not an IPv4 address", bind_addr);
}

int main(int argc, char **argv)
{
    S.port = 6380;
    S.max_clients = DEFAULT_MAX_CLIENTS;
    S.proto_max_bulk_len = DEFAULT_PROTO_MAX_BULK_LEN;
    S.query_buffer_limit = DEFAULT_QUERY_BUFFER_LIMIT;
    S.maxmemory_samples = 5;
    S.policy = POLICY_NOEVICTION;
    S.protected_mode = true;
    cli_prog = "rota-ttl-cache";
    parse_options(argc, argv);
#ifdef M_MXFAST
    /* No glibc fastbins.  Freed small blocks (a value is one) wait there
     * unmerged until a large allocation or free merges them all at once:
     * after a mass expiry had freed a few hundred thousand values over
     * many turns, that one merge took 30 ms.  Without fastbins each free
     * merges its own block (the thread cache still serves the hot sizes). */
    mallopt(M_MXFAST, 0);
#endif
    if (!fit_descriptor_limit())
        return 1;

    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    int rc = store_init();
    if (rc != 0) {
        fprintf(stderr, "rota-ttl-cache: %s\n", rota_strerror(rc));
        return 1;
    }
    S.listen_fd = listen_on();
    S.epfd = epoll_create1(EPOLL_CLOEXEC);
    S.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
    if (S.epfd < 0 ||
        epoll_ctl(S.epfd, EPOLL_CTL_ADD, S.listen_fd, &lev) != 0) {
        perror("rota-ttl-cache: epoll");
        return 1;
    }

    struct epoll_event events[128];
    bool expiring = false; /* expiry work left from the last turn */
    while (!S.stop) {
        uint64_t now = rota_clock_now(&S.clock);
        int timeout = 0;
        /* Work left over: poll, don't sleep.  (Nor ask the wheel for its
         * next deadline then: that would finish at once a cascade the
         * bounded advance left half done.) */
        if (!expiring && S.ready_list == NULL) {
            rota_wheel_timeout_ms(rota_keyed_wheel(S.map), now, TICK_NS,
                                  &timeout);
            if (S.accept_parked) {
                uint64_t wait =
                    S.accept_retry_tick > now ? S.accept_retry_tick - now : 0;
                if (timeout < 0 || wait < (uint64_t)timeout)
                    timeout = (int)wait;
            }
        }
        int n = epoll_wait(S.epfd, events, 128, timeout);
        if (n < 0 && errno != EINTR) {
            perror("rota-ttl-cache: epoll_wait");
            break;
        }
        S.turn++;
        store_tick();
        expiring = store_expire(EXPIRE_NS_PER_TURN);
        if (S.accept_parked && S.now_tick >= S.accept_retry_tick)
            unpark_listener();
        for (int i = 0; i < n; i++) {
            struct client *c = events[i].data.ptr;
            if (c == NULL)
                accept_clients();
            else
                client_turn(c, (events[i].events &
                                (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0);
        }
        /* Then the clients with work left and no event this turn.  A turn
         * changes only its own client's place in the list (it may leave
         * it, stay, or be closed), and a client added during this walk is
         * added at the head, behind us: `next` stays valid. */
        for (struct client *c = S.ready_list, *next; c != NULL; c = next) {
            next = c->rnext;
            if (c->turn != S.turn)
                client_turn(c, false);
        }
    }
    /* Graceful stop: the clients, the values (ours to free), the map. */
    while (S.clients_list != NULL)
        client_close(S.clients_list);
    store_destroy();
    close(S.listen_fd);
    close(S.epfd);
    if (S.reserve_fd >= 0)
        close(S.reserve_fd);
    if (S.requirepass != NULL)
        explicit_bzero(S.requirepass, S.requirepass_len);
    free(S.requirepass);
    return 0;
}
