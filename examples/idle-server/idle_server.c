/* SPDX-License-Identifier: MIT */
/*
 * rota-idle-server: a multi-threaded epoll TCP echo server that kicks idle
 * connections with rota.
 *
 * THE WORKLOAD
 *   Tens of thousands of connections, most of them silent.  Every read
 *   refreshes the connection's idle timer; a connection silent for longer
 *   than --idle-timeout is closed.  Refreshes outnumber kicks by orders of
 *   magnitude, so a refresh must cost next to nothing: here it is a clock
 *   read (vDSO, no system call) and rota_timer_touch_at(), a store.
 *
 * THE STRUCTURE
 *   N worker threads, each with its own epoll set, its own wheel and its own
 *   listening socket bound to the same port with SO_REUSEPORT: the kernel
 *   spreads new connections over the workers, and no lock is shared
 *   between them (the only shared word is the open-connection count that
 *   --max-conns checks on accept).  The main thread only prints statistics
 *   once a second (from counters the workers publish with relaxed atomic
 *   stores) and waits for SIGINT/SIGTERM.
 *
 *   Each wheel has one OS timer, armed at its next deadline (struct
 *   rota_epoll, rota/epoll.h):
 *     --timer epoll    the epoll_wait() timeout (no system call at all for
 *                      timers);
 *     --timer timerfd  one timerfd per worker.
 *   Either is re-armed only after it fires or when a new connection's timer
 *   is the earliest.  (--loop uring runs the same server on an io_uring per
 *   worker instead, with one ring timeout per wheel: idle_uring.c.)  Touches never re-arm anything and never even ask the
 *   wheel for its next deadline (test_idle_server_syscalls.sh proves
 *   the first with strace).
 *
 * RUNNING OUT OF DESCRIPTORS
 *   Each worker keeps one spare descriptor (/dev/null).  When accept() fails
 *   with EMFILE or ENFILE the worker closes the spare, accepts the waiting
 *   connection, closes it at once (the client sees its connection refused
 *   rather than hanging in the backlog) and reopens the spare.  If even that
 *   fails the listener is taken out of the epoll set until one of the
 *   worker's connections closes, or for 100 ms at most (a rota timer puts
 *   it back), so a level-triggered listener cannot spin the loop
 *   (test_idle_server_fd_starved.sh measures its CPU time).
 *   Refusals are counted and logged once a second; the open connections are
 *   served as before.
 *
 * Only the public API of rota is used.
 */
#define _GNU_SOURCE
#include <rota.h>
#include <rota/clock.h>
#include <rota/epoll.h>
#include <rota/lanes.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli.h"
#include "server.h"

#define ACCEPT_BATCH 64 /* accepts per listener event: fairness */
#define READ_BUF 65536

struct config cfg;
atomic_bool stopping;
atomic_long open_total; /* for --max-conns */

/* ------------------------------------------------------------ connections */

enum kind { KIND_CONN, KIND_LISTEN, KIND_WAKE, KIND_TIMERFD };

/* Echo bytes the peer has not taken yet (rare: the kernel's send buffer is
 * normally far larger than one read). */
struct outbuf {
    size_t len, off;
    char data[];
};

/* 64 bytes: the timer is 32 of them (a lane timer, 24). */
struct conn {
    union {
        struct rota_timer idle;       /* on the wheel: --idle-min unset */
        struct rota_lane_timer lidle; /* in the worker's lane: --idle-min */
    };
    int fd;
    uint8_t kind;
    uint8_t blocked; /* waiting for EPOLLOUT to flush `out` */
    union {
        struct outbuf *out;
        struct conn *next_free;
    } u;
};

struct chunk {
    struct chunk *next;
    struct conn conns[CONNS_PER_CHUNK];
};

struct worker {
    struct rota_wheel wheel; /* first: recovered from the wheel pointer */
    struct rota_clock clock;
    struct rota_epoll et;       /* the wheel's one OS timer */
    struct rota_timer resume;   /* puts a paused listener back */
    struct rota_lane idle_lane; /* --idle-min: every idle timer, rescaled */
    uint32_t idle_scale;        /* the lane's scale now */
    int id;
    int ep;
    int listen_fd;
    int wake_fd;
    int reserve_fd;    /* spare descriptor for EMFILE */
    bool listening;    /* listener is in the epoll set */
    bool warned_timer; /* said once that the timerfd could not be armed */
    struct conn listen_tag, wake_tag, tfd_tag;
    struct conn *free_list;
    struct chunk *chunks;
    struct wstats st;
    char buf[READ_BUF];
};

/* The workers of either loop, as main() sees them. */
static void *workers[MAX_THREADS];
static struct wstats *stats_of[MAX_THREADS];
static int wake_fd_of[MAX_THREADS];
static pthread_t thread_of[MAX_THREADS];

static struct worker *worker_of(struct rota_wheel *wheel)
{
    return rota_container_of(wheel, struct worker, wheel);
}

/* Every epoll_ctl() goes through here to be counted: the syscall test
 * checks that touches cause none. */
static int ctl(struct worker *w, int op, int fd, struct epoll_event *ev)
{
    w->st.c.epoll_ctls++;
    return epoll_ctl(w->ep, op, fd, ev);
}

static struct conn *conn_alloc(struct worker *w)
{
    if (w->free_list == NULL) {
        struct chunk *ch = malloc(sizeof *ch);
        if (ch == NULL)
            return NULL;
        ch->next = w->chunks;
        w->chunks = ch;
        for (size_t i = CONNS_PER_CHUNK; i-- > 0;) {
            ch->conns[i].u.next_free = w->free_list;
            w->free_list = &ch->conns[i];
        }
    }
    struct conn *c = w->free_list;
    w->free_list = c->u.next_free;
    c->u.out = NULL;
    c->blocked = 0;
    c->kind = KIND_CONN;
    return c;
}

static void resume_listening(struct worker *w);
static void on_idle(struct rota_wheel *wheel, struct rota_timer *timer,
                    uint64_t late);

/* The idle timer's three operations, on the wheel or in the lane. */
static void idle_arm(struct worker *w, struct conn *c)
{
    if (cfg.idle_min_ns != 0) {
        rota_lane_timer_init(&c->lidle);
        rota_lane_arm(&w->idle_lane, &c->lidle);
        return;
    }
    policy_idle_arm(&w->wheel, &w->clock, &c->idle, on_idle);
}

static void idle_touch(struct worker *w, struct conn *c)
{
    if (cfg.idle_min_ns != 0) {
        /* An append at the lane's tail: no slot, no deadline to compute. */
        rota_lane_touch(&w->idle_lane, &c->lidle);
        return;
    }
    policy_idle_touch(&w->wheel, &w->clock, &c->idle);
}

static int idle_cancel(struct worker *w, struct conn *c)
{
    if (cfg.idle_min_ns != 0)
        return rota_lane_cancel(&w->idle_lane, &c->lidle);
    return rota_timer_cancel(&w->wheel, &c->idle);
}

static void conn_close(struct worker *w, struct conn *c)
{
    /* A no-op when the timer has just fired (its callback closes). */
    if (idle_cancel(w, c) == 1)
        w->st.c.timer_ops++;
    close(c->fd); /* also leaves the epoll set: the fd is never dup'ed */
    free(c->u.out);
    c->fd = -1;
    c->u.next_free = w->free_list;
    w->free_list = c;
    if (policy_closed(&w->wheel, &w->resume, &w->st))
        resume_listening(w);
}

/* The idle timer fired: the connection has been silent for idle_ns. */
static void on_idle(struct rota_wheel *wheel, struct rota_timer *timer,
                    uint64_t late)
{
    struct worker *w = worker_of(wheel);
    struct conn *c = rota_container_of(timer, struct conn, idle);

    (void)late;
    /* The deadline is still readable inside the callback. */
    policy_kicked(&w->st, &w->clock, rota_timer_deadline(timer));
    conn_close(w, c);
}

/* The same for a connection in the idle lane (--idle-min). */
static void on_lane_idle(struct rota_lane *lane, struct rota_lane_timer *timer,
                         uint64_t late)
{
    struct worker *w = rota_container_of(lane, struct worker, idle_lane);
    struct conn *c = rota_container_of(timer, struct conn, lidle);

    (void)late;
    policy_kicked(&w->st, &w->clock, rota_lane_deadline(lane, timer));
    conn_close(w, c);
}

/*
 * --idle-min: the idle timeout shrinks as the open connections approach
 * --max-conns.  Up to half of it, the full --idle-timeout; from there it
 * falls in a straight line to --idle-min at --max-conns.  Once per loop
 * turn, and only when the scale changes: rota_lane_set_scale() re-times
 * every connection of the worker at once, without visiting them.
 */
static void idle_rescale(struct worker *w)
{
    if (cfg.idle_min_ns == 0)
        return;
    long open = atomic_load_explicit(&open_total, memory_order_relaxed);
    long from = cfg.max_conns / 2, span = cfg.max_conns - from;
    uint64_t one = ROTA_LANE_SCALE_ONE;
    uint64_t floor = cfg.idle_min_ns * one / cfg.idle_ns; /* < one */
    uint64_t scale = one;
    if (open > from && span > 0) {
        uint64_t over = (uint64_t)(open > cfg.max_conns ? span : open - from);
        scale = one - (one - floor) * over / (uint64_t)span;
    }
    if (scale != w->idle_scale) {
        w->idle_scale = (uint32_t)scale;
        rota_lane_set_scale(&w->idle_lane, (uint32_t)scale);
    }
}

static void set_events(struct worker *w, struct conn *c, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    ctl(w, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Queue what send() did not take and wait for EPOLLOUT; stop reading
 * meanwhile, so a peer that never reads cannot make us buffer without
 * bound. */
static bool queue_rest(struct worker *w, struct conn *c, const char *p,
                       size_t n)
{
    struct outbuf *ob = malloc(sizeof *ob + n);
    if (ob == NULL)
        return false;
    ob->len = n;
    ob->off = 0;
    memcpy(ob->data, p, n);
    c->u.out = ob;
    c->blocked = 1;
    set_events(w, c, EPOLLOUT | EPOLLRDHUP);
    return true;
}

static void on_readable(struct worker *w, struct conn *c)
{
    ssize_t n = read(c->fd, w->buf, sizeof w->buf);
    if (n > 0) {
        idle_touch(w, c); /* the refresh */
        w->st.c.reads++;
        w->st.c.timer_ops++;
        w->st.c.bytes += (uint64_t)n;
        ssize_t sent = send(c->fd, w->buf, (size_t)n, MSG_NOSIGNAL);
        if (sent == n)
            return;
        if (sent < 0 && errno != EAGAIN && errno != EINTR) {
            w->st.c.peer_closed++;
            conn_close(w, c);
            return;
        }
        size_t done = sent < 0 ? 0 : (size_t)sent;
        if (!queue_rest(w, c, w->buf + done, (size_t)n - done)) {
            w->st.c.refused_mem++;
            conn_close(w, c);
        }
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    w->st.c.peer_closed++; /* EOF, or an error such as ECONNRESET */
    conn_close(w, c);
}

static void on_writable(struct worker *w, struct conn *c)
{
    struct outbuf *ob = c->u.out;
    ssize_t sent =
        send(c->fd, ob->data + ob->off, ob->len - ob->off, MSG_NOSIGNAL);
    if (sent < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return;
        w->st.c.peer_closed++;
        conn_close(w, c);
        return;
    }
    ob->off += (size_t)sent;
    if (ob->off < ob->len)
        return;
    free(ob);
    c->u.out = NULL;
    c->blocked = 0;
    set_events(w, c, EPOLLIN | EPOLLRDHUP);
}

/* ---------------------------------------------------------------- accept */

static void listener_watch(struct worker *w, bool on)
{
    if (w->listening == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &w->listen_tag};
    ctl(w, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w->listen_fd, &ev);
    w->listening = on;
}

static void resume_listening(struct worker *w)
{
    policy_reserve(&w->reserve_fd);
    listener_watch(w, true);
}

static void on_resume(struct rota_wheel *wheel, struct rota_timer *timer,
                      uint64_t late)
{
    struct worker *w = worker_of(wheel);

    (void)timer;
    (void)late;
    w->st.c.timer_ops++;
    resume_listening(w);
}

/* accept() failed with EMFILE/ENFILE: refuse the connection at the head of
 * the backlog, or stop watching the listener for a moment (policy.c).
 * Returns whether to go on accepting. */
static bool refuse_one(struct worker *w)
{
    switch (policy_refuse(w->listen_fd, &w->reserve_fd, &w->st)) {
    case REFUSE_AGAIN:
        return true;
    case REFUSE_EMPTY:
        return false;
    case REFUSE_PAUSE:
        break;
    }
    listener_watch(w, false);
    policy_pause(&w->wheel, &w->clock, &w->resume, &w->st);
    return false;
}

static void on_acceptable(struct worker *w)
{
    for (int i = 0; i < ACCEPT_BATCH && w->listening; i++) {
        int fd =
            accept4(w->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                if (refuse_one(w))
                    continue;
                return;
            }
            if (errno == ENOBUFS || errno == ENOMEM) {
                w->st.c.refused_mem++;
                return;
            }
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO ||
                errno == EPERM)
                continue;
            return; /* EAGAIN: the backlog is empty */
        }
        if (!conn_admit(&w->st)) {
            close(fd);
            continue;
        }
        struct conn *c = conn_alloc(w);
        if (c == NULL) {
            conn_leave();
            w->st.c.refused_mem++;
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->fd = fd;
        idle_arm(w, c);
        w->st.c.timer_ops++;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        w->st.c.open++;
        if (ctl(w, EPOLL_CTL_ADD, fd, &ev) != 0) {
            w->st.c.refused_mem++;
            conn_close(w, c);
            continue;
        }
        w->st.c.accepted++;
    }
}

/* ----------------------------------------------------------------- worker */

static void publish(struct worker *w)
{
    if (cfg.use_timerfd) {
        struct rota_loop_stats ls;
        rota_epoll_stats(&w->et, &ls);
        w->st.c.settime = ls.rearms;
    }
    wstats_publish(&w->st);
}

static void close_at_exit(struct rota_timer *timer, void *arg)
{
    struct worker *w = arg;
    if (timer != &w->resume)
        conn_close(w, rota_container_of(timer, struct conn, idle));
}

static void close_lane_at_exit(struct rota_lane_timer *timer, void *arg)
{
    conn_close(arg, rota_container_of(timer, struct conn, lidle));
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event evs[256];

    while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
        /* Re-arms only if this turn's accepts armed an earlier timer. */
        int timeout;
        if (rota_epoll_wait_ms(&w->et, &timeout) < 0 && !w->warned_timer) {
            /* timeout is 0 then: the loop polls, and says so once. */
            fprintf(stderr,
                    "rota-idle-server: worker %d: cannot arm the timer: %s\n",
                    w->id, strerror(errno));
            w->warned_timer = true;
        }
        int n = epoll_wait(w->ep, evs, 256, timeout);
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "rota-idle-server: worker %d: epoll_wait: %s\n",
                    w->id, strerror(errno));
            break;
        }
        bool timer_due = false;
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            switch (c->kind) {
            case KIND_CONN:
                if (c->blocked)
                    on_writable(w, c);
                else
                    on_readable(w, c);
                break;
            case KIND_LISTEN:
                on_acceptable(w);
                break;
            case KIND_TIMERFD:
                timer_due = true; /* after the reads: see below */
                break;
            default:
                break; /* the wake eventfd: the loop condition checks */
            }
        }
        /* Timers last, so a connection whose bytes arrived in this batch is
         * refreshed before its timer is looked at.  In timeout mode this is
         * a comparison with the armed deadline unless it has passed. */
        idle_rescale(w); /* may move the lane's timer earlier */
        if (!cfg.use_timerfd || timer_due)
            rota_epoll_dispatch(&w->et);
        publish(w);
    }

    /* Close everything, cleanly: the lane first (its own timer is on the
     * wheel). */
    rota_lane_drain(&w->idle_lane, close_lane_at_exit, w);
    rota_wheel_drain(&w->wheel, close_at_exit, w);
    listener_watch(w, false);
    publish(w);
    return NULL;
}

/* -------------------------------------------------------------- listening */

static void die_listen(int err)
{
    cli_listen_die(&cfg.addr, err);
}

/* SO_REUSEPORT lets any other SO_REUSEPORT socket of the same user join the
 * port silently, which would split our traffic with a stranger instead of
 * reporting "port in use".  So first try to bind a socket without it. */
static void check_port_free(void)
{
    if (cfg.addr.sin_port == 0)
        return;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        die_listen(errno);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(s, (struct sockaddr *)&cfg.addr, sizeof cfg.addr) != 0)
        die_listen(errno);
    close(s);
}

static int open_listener(void)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0)
        die_listen(errno);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
        die_listen(errno);
    if (bind(s, (struct sockaddr *)&cfg.addr, sizeof cfg.addr) != 0)
        die_listen(errno);
    if (listen(s, SOMAXCONN) != 0)
        die_listen(errno);
    if (cfg.addr.sin_port == 0) { /* --port 0: the others join this port */
        struct sockaddr_in got;
        socklen_t len = sizeof got;
        getsockname(s, (struct sockaddr *)&got, &len);
        cfg.addr.sin_port = got.sin_port;
    }
    return s;
}

void die_sys(const char *what)
{
    fprintf(stderr, "rota-idle-server: %s: %s\n", what, strerror(errno));
    exit(1);
}

static struct worker *worker_new(int id, int listen_fd)
{
    struct worker *w = aligned_alloc(64, (sizeof *w + 63) / 64 * 64);
    if (w == NULL)
        die_sys("allocating a worker");
    memset(w, 0, sizeof *w);
    w->id = id;
    w->listen_fd = listen_fd;
    w->listen_tag.kind = KIND_LISTEN;
    w->wake_tag.kind = KIND_WAKE;
    w->tfd_tag.kind = KIND_TIMERFD;
    if (rota_clock_init(&w->clock, ROTA_CLOCK_MONOTONIC, cfg.tick_ns) != 0)
        die_sys("CLOCK_MONOTONIC");
    rota_wheel_init(&w->wheel, rota_clock_now(&w->clock));
    rota_timer_init(&w->resume, on_resume);
    /* --idle-min's lane: the idle timeout in ticks, rounded up. */
    rota_lane_init(&w->idle_lane, &w->wheel,
                   cfg.idle_ns / cfg.tick_ns + (cfg.idle_ns % cfg.tick_ns != 0),
                   on_lane_idle);
    w->idle_scale = ROTA_LANE_SCALE_ONE;
    if (rota_epoll_init(&w->et, &w->wheel, &w->clock,
                        cfg.use_timerfd ? ROTA_EPOLL_TIMERFD : 0) != 0)
        die_sys("timerfd_create");
    /* A storm of kicks gives way to reads every FIRE_BUDGET closes. */
    rota_epoll_set_budget(&w->et, FIRE_BUDGET);
    if ((w->ep = epoll_create1(EPOLL_CLOEXEC)) < 0)
        die_sys("epoll_create1");
    if ((w->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        die_sys("eventfd");
    if ((w->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        die_sys("/dev/null");
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &w->wake_tag};
    if (ctl(w, EPOLL_CTL_ADD, w->wake_fd, &ev) != 0)
        die_sys("epoll_ctl");
    if (cfg.use_timerfd) {
        ev.data.ptr = &w->tfd_tag;
        if (ctl(w, EPOLL_CTL_ADD, rota_epoll_fd(&w->et), &ev))
            die_sys("epoll_ctl");
    }
    listener_watch(w, true);
    return w;
}

static void worker_free(struct worker *w)
{
    while (w->chunks != NULL) {
        struct chunk *next = w->chunks->next;
        free(w->chunks);
        w->chunks = next;
    }
    rota_epoll_close(&w->et);
    close(w->listen_fd);
    close(w->wake_fd);
    close(w->ep);
    if (w->reserve_fd >= 0)
        close(w->reserve_fd);
    free(w);
}

/* ------------------------------------------------------------------- main */

/* A worker of the loop --loop chose, on `listen_fd`. */
static void start_worker(int i, int listen_fd)
{
#ifdef IDLE_HAVE_URING
    if (cfg.loop == LOOP_URING) {
        struct uworker *u = uworker_new(i, listen_fd);
        workers[i] = u;
        stats_of[i] = uworker_stats(u);
        wake_fd_of[i] = uworker_wake_fd(u);
        return;
    }
#endif
    struct worker *w = worker_new(i, listen_fd);
    workers[i] = w;
    stats_of[i] = &w->st;
    wake_fd_of[i] = w->wake_fd;
}

static void stop_worker(int i)
{
#ifdef IDLE_HAVE_URING
    if (cfg.loop == LOOP_URING) {
        uworker_free(workers[i]);
        return;
    }
#endif
    worker_free(workers[i]);
}

static void *run_uworker(void *arg)
{
#ifdef IDLE_HAVE_URING
    return uworker_main(arg);
#else
    return arg; /* not reached: --loop uring is refused at parse time */
#endif
}

static void sum_counters(struct counters *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < cfg.threads; i++) {
#define ADD(name)                                                              \
    out->name +=                                                               \
        atomic_load_explicit(&stats_of[i]->pub.name, memory_order_relaxed);
        COUNTERS(ADD)
#undef ADD
    }
}

static double cpu_user_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The server side of kick lateness: from the deadline (a tick boundary at
 * or after last read + idle timeout) to the close. */
static void print_kick_lateness(void)
{
    uint64_t total = 0, max_ns = 0;
    static uint64_t hist[LATE_BUCKETS];
    for (int i = 0; i < cfg.threads; i++) {
        for (int b = 0; b < LATE_BUCKETS; b++) {
            hist[b] += stats_of[i]->late_ms[b];
            total += stats_of[i]->late_ms[b];
        }
        if (stats_of[i]->late_max_ns > max_ns)
            max_ns = stats_of[i]->late_max_ns;
    }
    if (total == 0)
        return;
    uint64_t p50 = 0, p99 = 0, seen = 0;
    bool got50 = false, got99 = false;
    for (int b = 0; b < LATE_BUCKETS; b++) {
        seen += hist[b];
        if (!got50 && seen * 2 >= total) {
            p50 = (uint64_t)b;
            got50 = true;
        }
        if (!got99 && seen * 100 >= total * 99) {
            p99 = (uint64_t)b;
            got99 = true;
        }
    }
    printf("rota-idle-server: kicks run after their deadline tick: p50 <%llums "
           "p99 <%llums max %.1fms (%llu kicks)\n",
           (unsigned long long)p50 + 1, (unsigned long long)p99 + 1,
           (double)max_ns / 1e6, (unsigned long long)total);
}

/* Resident set in KiB, or -1 (for instance when out of descriptors). */
static long rss_kib(void)
{
    long pages = -1;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%*s %ld", &pages) != 1)
        pages = -1;
    fclose(f);
    return pages < 0 ? -1 : pages * (sysconf(_SC_PAGESIZE) / 1024);
}

static void print_stats(double t, const struct counters *now,
                        const struct counters *prev, double dt)
{
    char rss[32] = "?"; /* unknown when out of descriptors */
    long kib = rss_kib();
    if (kib >= 0)
        snprintf(rss, sizeof rss, "%ldKiB", kib);
    printf("rota-idle-server: t=%.0fs open=%llu kicked=%llu reads/s=%.0f "
           "timer-ops/s=%.0f refused=%llu reads=%llu cpu=%.3fs user=%.3fs "
           "rss=%s\n",
           t, (unsigned long long)now->open, (unsigned long long)now->kicked,
           (double)(now->reads - prev->reads) / dt,
           (double)(now->timer_ops - prev->timer_ops) / dt,
           (unsigned long long)(now->refused_fd + now->refused_limit +
                                now->refused_mem),
           (unsigned long long)now->reads, cpu_seconds(), cpu_user_seconds(),
           rss);
    fflush(stdout);
}

/* Refusals are logged from here, once a second at most, whatever --quiet. */
static void log_refusals(const struct counters *now,
                         const struct counters *prev)
{
    uint64_t fd = now->refused_fd - prev->refused_fd;
    uint64_t lim = now->refused_limit - prev->refused_limit;
    uint64_t mem = now->refused_mem - prev->refused_mem;
    if (fd != 0)
        fprintf(stderr,
                "rota-idle-server: refused %llu connection(s): out of file "
                "descriptors (EMFILE); still serving the %llu open ones\n",
                (unsigned long long)fd, (unsigned long long)now->open);
    if (lim != 0)
        fprintf(stderr,
                "rota-idle-server: refused %llu connection(s): --max-conns %ld "
                "reached\n",
                (unsigned long long)lim, cfg.max_conns);
    if (mem != 0)
        fprintf(
            stderr,
            "rota-idle-server: refused or dropped %llu connection(s): out of "
            "memory or buffers\n",
            (unsigned long long)mem);
}

static void usage(FILE *to)
{
    fprintf(
        to,
        "usage: rota-idle-server [options]\n"
        "A multi-threaded epoll echo server that closes idle connections.\n"
        "\n"
        "  --bind ADDR         IPv4 address to listen on (default "
        "127.0.0.1)\n"
        "  --port N            TCP port (default 7000; 0 picks one, see "
        "--port-file)\n"
        "  --threads N         worker threads (default: online CPUs)\n"
        "  --idle-timeout T    close connections silent for longer than T"
        " (default 30s)\n"
        "  --tick T            timer granularity (default 100ms)\n"
        "  --timer MODE        epoll: the epoll_wait timeout (default);\n"
        "                      timerfd: one timerfd per worker\n"
        "  --loop LOOP         epoll (default), or uring: accepts, reads\n"
        "                      and echoes through an io_uring per worker,\n"
        "                      its wheel on one ring timeout\n"
        "  --max-conns N       refuse connections beyond N (default: the"
        " descriptor limit)\n"
        "  --idle-min T        shrink the idle timeout as connections pass\n"
        "                      half of --max-conns, down to T at\n"
        "                      --max-conns (idle timers in a rota lane)\n"
        "  --duration T        stop by itself after T (default: run until"
        " SIGINT/SIGTERM)\n"
        "  --port-file PATH    write the port there once listening\n"
        "  --quiet             no statistics every second\n"
        "  --help              this text\n"
        "\n"
        "Durations take a unit: ns, us, ms, s (the default) or m.\n");
}

static void parse_args(int argc, char **argv)
{
    long port = 7000;
    const char *bind_addr = "127.0.0.1";

    cfg.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cfg.threads < 1)
        cfg.threads = 1;
    if (cfg.threads > MAX_THREADS)
        cfg.threads = MAX_THREADS;
    cfg.idle_ns = 30000000000u;
    cfg.tick_ns = 100000000u;
    cfg.max_conns = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(a, "--bind") == 0) {
            bind_addr = cli_value(argc, argv, &i);
        } else if (strcmp(a, "--port") == 0) {
            port = cli_long(a, cli_value(argc, argv, &i), 0, 65535);
        } else if (strcmp(a, "--threads") == 0) {
            cfg.threads =
                (int)cli_long(a, cli_value(argc, argv, &i), 1, MAX_THREADS);
        } else if (strcmp(a, "--idle-timeout") == 0) {
            cfg.idle_ns = cli_duration_ns(a, cli_value(argc, argv, &i));
        } else if (strcmp(a, "--tick") == 0) {
            cfg.tick_ns = cli_duration_ns(a, cli_value(argc, argv, &i));
            if (cfg.tick_ns < 1000000u)
                cli_die("--tick: must be at least 1ms");
        } else if (strcmp(a, "--timer") == 0) {
            const char *m = cli_value(argc, argv, &i);
            if (strcmp(m, "timerfd") == 0)
                cfg.use_timerfd = true;
            else if (strcmp(m, "epoll") != 0)
                cli_die("--timer: '%s' is not a mode (epoll or timerfd)", m);
        } else if (strcmp(a, "--loop") == 0) {
            const char *m = cli_value(argc, argv, &i);
            if (strcmp(m, "uring") == 0) {
#ifndef IDLE_HAVE_URING
                cli_die("--loop uring: this rota-idle-server was built without "
                        "liburing");
#endif
                cfg.loop = LOOP_URING;
            } else if (strcmp(m, "epoll") == 0) {
                cfg.loop = LOOP_EPOLL;
            } else {
                cli_die("--loop: '%s' is not a loop (epoll or uring)", m);
            }
        } else if (strcmp(a, "--max-conns") == 0) {
            cfg.max_conns = cli_long(a, cli_value(argc, argv, &i), 1, 1L << 30);
        } else if (strcmp(a, "--idle-min") == 0) {
            cfg.idle_min_ns = cli_duration_ns(a, cli_value(argc, argv, &i));
            if (cfg.idle_min_ns == 0)
                cli_die("--idle-min: must be more than 0");
        } else if (strcmp(a, "--duration") == 0) {
            cfg.duration_ns = cli_duration_ns(a, cli_value(argc, argv, &i));
        } else if (strcmp(a, "--port-file") == 0) {
            cfg.port_file = cli_value(argc, argv, &i);
        } else if (strcmp(a, "--quiet") == 0) {
            cfg.quiet = true;
        } else if (a[0] == '-') {
            cli_die("unknown option '%s'", a);
        } else {
            cli_die("unexpected argument '%s'", a);
        }
    }
    if (cfg.idle_ns == 0)
        cli_die("--idle-timeout: must be more than 0");
    if (cfg.idle_min_ns > cfg.idle_ns)
        cli_die("--idle-min: must not exceed --idle-timeout");
    if (cfg.idle_min_ns != 0 && cfg.loop == LOOP_URING)
        cli_die("--idle-min: only with --loop epoll");
    if (cfg.loop == LOOP_URING && cfg.use_timerfd)
        cli_die("--timer timerfd: only with --loop epoll (the ring has its "
                "own timeout)");
    cfg.addr.sin_family = AF_INET;
    cfg.addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, bind_addr, &cfg.addr.sin_addr) != 1)
        cli_die("--bind: '%s' is not an IPv4 address", bind_addr);
}

static void write_port_file(void)
{
    char tmp[4096];
    if (cfg.port_file == NULL)
        return;
    snprintf(tmp, sizeof tmp, "%s.tmp", cfg.port_file);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%u\n", ntohs(cfg.addr.sin_port)) < 0 ||
        fclose(f) != 0 || rename(tmp, cfg.port_file) != 0)
        die_sys(cfg.port_file);
}

static uint64_t ns_since(uint64_t t0)
{
    return cli_mono_ns() - t0;
}

int main(int argc, char **argv)
{
    cli_prog = "rota-idle-server";
    parse_args(argc, argv);

    long nofile = cli_raise_nofile();
    /* Per worker: listener, epoll, eventfd, spare, maybe a timerfd; plus
     * stdio and a margin for /proc reads. */
    long overhead = 16 + 5L * cfg.threads;
    if (cfg.max_conns < 0)
        cfg.max_conns = nofile > overhead ? nofile - overhead : 1;

    /* Signals go to the main thread only: block them before the workers
     * start (they inherit the mask) and wait for them with sigtimedwait(). */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    check_port_free();
    for (int i = 0; i < cfg.threads; i++)
        start_worker(i, open_listener());
    write_port_file();

    char a[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &cfg.addr.sin_addr, a, sizeof a);
    char idle[32], tick[32];
    printf(
        "rota-idle-server: listening on %s:%u with %d worker(s), idle timeout "
        "%s, tick %s, timer=%s, max %ld connections (descriptor limit "
        "%ld)\n",
        a, ntohs(cfg.addr.sin_port), cfg.threads,
        cli_fmt_duration(cfg.idle_ns, idle, sizeof idle),
        cli_fmt_duration(cfg.tick_ns, tick, sizeof tick),
        cfg.loop == LOOP_URING ? "uring"
        : cfg.use_timerfd      ? "timerfd"
                               : "epoll",
        cfg.max_conns, nofile);
    fflush(stdout);

    for (int i = 0; i < cfg.threads; i++) {
        int rc = pthread_create(
            &thread_of[i], NULL,
            cfg.loop == LOOP_URING ? run_uworker : worker_main, workers[i]);
        if (rc != 0) {
            errno = rc;
            die_sys("pthread_create");
        }
    }

    uint64_t t0 = cli_mono_ns();
    uint64_t next_report = 1000000000u;
    struct counters prev, now;
    memset(&prev, 0, sizeof prev);
    int signo = 0;
    for (;;) {
        uint64_t el = ns_since(t0);
        if (cfg.duration_ns != 0 && el >= cfg.duration_ns)
            break;
        uint64_t until = next_report;
        if (cfg.duration_ns != 0 && cfg.duration_ns < until)
            until = cfg.duration_ns;
        uint64_t wait = until > el ? until - el : 0;
        struct timespec ts = {(time_t)(wait / 1000000000u),
                              (long)(wait % 1000000000u)};
        signo = sigtimedwait(&sigs, NULL, &ts);
        if (signo > 0)
            break;
        el = ns_since(t0);
        if (el >= next_report) {
            sum_counters(&now);
            log_refusals(&now, &prev);
            if (!cfg.quiet)
                print_stats((double)el / 1e9, &now, &prev, 1.0);
            prev = now;
            next_report = (el / 1000000000u + 1) * 1000000000u;
        }
    }

    atomic_store(&stopping, true);
    for (int i = 0; i < cfg.threads; i++) {
        uint64_t one = 1;
        if (write(wake_fd_of[i], &one, sizeof one) < 0)
            fprintf(stderr, "rota-idle-server: waking worker %d: %s\n", i,
                    strerror(errno));
    }
    for (int i = 0; i < cfg.threads; i++)
        pthread_join(thread_of[i], NULL);

    sum_counters(&now);
    log_refusals(&now, &prev);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf(
        "rota-idle-server: stopped (%s) after %.1fs: accepted=%llu kicked=%llu "
        "peer-closed=%llu reads=%llu timer-ops=%llu refused-fd=%llu "
        "refused-limit=%llu timerfd-settime=%llu epoll-ctl=%llu "
        "timer-sqes=%llu cpu=%.3fs maxrss=%ldKiB\n",
        signo == SIGINT    ? "SIGINT"
        : signo == SIGTERM ? "SIGTERM"
                           : "duration reached",
        (double)ns_since(t0) / 1e9, (unsigned long long)now.accepted,
        (unsigned long long)now.kicked, (unsigned long long)now.peer_closed,
        (unsigned long long)now.reads, (unsigned long long)now.timer_ops,
        (unsigned long long)now.refused_fd,
        (unsigned long long)now.refused_limit, (unsigned long long)now.settime,
        (unsigned long long)now.epoll_ctls, (unsigned long long)now.timer_sqes,
        cpu_seconds(), ru.ru_maxrss);
    print_kick_lateness();
    for (int i = 0; i < cfg.threads; i++)
        stop_worker(i);
    if (cfg.port_file != NULL)
        unlink(cfg.port_file);
    return 0;
}
