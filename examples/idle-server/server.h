/* SPDX-License-Identifier: MIT */
/*
 * server.h - what the idle server's two event loops share: the
 * configuration, the counters a worker publishes, the kick-lateness
 * histogram, the connection policy (policy.c) and the io_uring worker's
 * interface (idle_uring.c).  The epoll worker and main() live in
 * idle_server.c.
 */
#ifndef IDLE_SERVER_H
#define IDLE_SERVER_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define MAX_THREADS 64
#define FIRE_BUDGET 1024 /* kicks per loop turn before polling again */
#define CONNS_PER_CHUNK 1024
#define PAUSE_NS 100000000u /* listener pause when out of descriptors */
#define LATE_BUCKETS 4096   /* kick lateness histogram: 1 ms buckets */

/* ----------------------------------------------------------- configuration */

enum loop_kind {
    LOOP_EPOLL, /* epoll_wait() and a struct rota_epoll (idle_server.c) */
    LOOP_URING  /* an io_uring and a struct rota_uring (idle_uring.c) */
};

struct config {
    struct sockaddr_in addr;
    int threads;
    uint64_t idle_ns;
    uint64_t tick_ns;
    enum loop_kind loop;
    bool use_timerfd;
    long max_conns;
    uint64_t idle_min_ns; /* --idle-min; 0: a fixed idle timeout */
    uint64_t duration_ns; /* 0: until a signal */
    const char *port_file;
    bool quiet;
};

extern struct config cfg;
extern atomic_bool stopping;
extern atomic_long open_total; /* for --max-conns */

/* Print "rota-idle-server: WHAT: strerror(errno)" and exit 1. */
void die_sys(const char *what) __attribute__((noreturn));

/* ------------------------------------------------------------- statistics */

/* Counters a worker keeps in plain memory and publishes once per loop turn.
 * Field order is the X-list's. */
#define COUNTERS(X)                                                            \
    X(open)          /* connections open now */                                \
    X(accepted)      /* connections accepted and served */                     \
    X(kicked)        /* closed for being idle */                               \
    X(peer_closed)   /* closed by the peer (EOF or reset) */                   \
    X(reads)         /* reads that returned data (each one a touch) */         \
    X(bytes)         /* bytes echoed */                                        \
    X(timer_ops)     /* arm + touch + cancel + fire on the wheel */            \
    X(refused_fd)    /* refused: out of descriptors (EMFILE/ENFILE) */         \
    X(refused_limit) /* refused: --max-conns reached */                        \
    X(refused_mem)   /* refused: out of memory */                              \
    X(paused)        /* listener pauses for lack of descriptors */             \
    X(settime)       /* timerfd_settime() calls */                             \
    X(epoll_ctls)    /* epoll_ctl() calls */                                   \
    X(timer_sqes)    /* SQEs the wheel's io_uring timeout took */

struct counters {
#define FIELD(name) uint64_t name;
    COUNTERS(FIELD)
#undef FIELD
};

struct published {
#define FIELD(name) _Atomic uint64_t name;
    COUNTERS(FIELD)
#undef FIELD
};

/* A worker's statistics: kept by its thread, published with relaxed
 * atomic stores once per loop turn; the histogram is read after the join. */
struct wstats {
    struct counters c;
    uint32_t late_ms[LATE_BUCKETS]; /* how long after its deadline a kick ran */
    uint64_t late_max_ns;
    _Alignas(64) struct published pub;
};

/* A kick whose timer was due at due_ns ran at now_ns. */
static inline void wstats_kick(struct wstats *s, uint64_t due_ns,
                               uint64_t now_ns)
{
    uint64_t late_ns = now_ns > due_ns ? now_ns - due_ns : 0;
    uint64_t bucket = late_ns / 1000000u;
    s->late_ms[bucket < LATE_BUCKETS ? bucket : LATE_BUCKETS - 1]++;
    if (late_ns > s->late_max_ns)
        s->late_max_ns = late_ns;
    s->c.kicked++;
}

static inline void wstats_publish(struct wstats *s)
{
#define STORE(name)                                                            \
    atomic_store_explicit(&s->pub.name, s->c.name, memory_order_relaxed);
    COUNTERS(STORE)
#undef STORE
}

/* Take a place under --max-conns; false (and counted) when there is none. */
static inline bool conn_admit(struct wstats *s)
{
    long open_now =
        atomic_fetch_add_explicit(&open_total, 1, memory_order_relaxed);
    if (open_now < cfg.max_conns)
        return true;
    atomic_fetch_sub_explicit(&open_total, 1, memory_order_relaxed);
    s->c.refused_limit++;
    return false;
}

static inline void conn_leave(void)
{
    atomic_fetch_sub_explicit(&open_total, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------ the policy */

/* policy.c: what both workers do with a connection's idle timer and with
 * the listener (the rules are at the top of policy.c). */
struct rota_wheel;
struct rota_clock;
struct rota_timer;

/* Arms `idle` --idle-timeout from now, calling on_idle when it fires. */
void policy_idle_arm(struct rota_wheel *wheel, struct rota_clock *clock,
                     struct rota_timer *idle,
                     void (*on_idle)(struct rota_wheel *, struct rota_timer *,
                                     uint64_t));
/* Data arrived: the idle timeout starts again from now. */
void policy_idle_touch(struct rota_wheel *wheel, struct rota_clock *clock,
                       struct rota_timer *idle);
/* A kick of a timer that was due at `deadline` (ticks) runs now. */
void policy_kicked(struct wstats *st, struct rota_clock *clock,
                   uint64_t deadline);
/* A connection closed (its own timer already cancelled by the driver):
 * true when the listener paused for lack of descriptors should resume. */
bool policy_closed(struct rota_wheel *wheel, struct rota_timer *resume,
                   struct wstats *st);
/* Reopen the spare descriptor if it is closed. */
void policy_reserve(int *reserve_fd);

/* accept() failed with EMFILE or ENFILE: what policy_refuse() did. */
enum refusal {
    REFUSE_AGAIN, /* refused the head of the backlog: accept again */
    REFUSE_EMPTY, /* the backlog was empty: wait until it is not */
    REFUSE_PAUSE  /* no descriptor even for that: pause the listener */
};
enum refusal policy_refuse(int listen_fd, int *reserve_fd, struct wstats *st);
/* Pause the listener: `resume` fires after PAUSE_NS at most. */
void policy_pause(struct rota_wheel *wheel, struct rota_clock *clock,
                  struct rota_timer *resume, struct wstats *st);

/* ---------------------------------------------------- the io_uring worker */

/* Defined in idle_uring.c when the server is built with liburing
 * (IDLE_HAVE_URING); each exits with a message on failure. */
struct uworker;
struct uworker *uworker_new(int id, int listen_fd);
void *uworker_main(void *arg);
struct wstats *uworker_stats(struct uworker *w);
int uworker_wake_fd(const struct uworker *w);
void uworker_free(struct uworker *w);

#endif /* IDLE_SERVER_H */
