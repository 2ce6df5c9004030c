/* SPDX-License-Identifier: MIT */
/*
 * service_internal.h - internal: the structures shared by the files of
 * rota/service.h.  The design essay is at the top of service.c.
 *
 *   service.c         the essay; the API's arm, touch, cancel
 *   service_slab.c    the records' slab: chunks, free chains, the depot
 *   service_stage.c   staging (band lists, the far vector) and its check
 *   service_thread.c  the service thread and the workers: fire, run
 *   service_life.c    create, stop, destroy, sync, check, stats
 *   service_clock.c   the default and the manual clock
 *   service_fork.c    what a child of fork() may do with the copy
 *   service_lock.h    the shard lock (service_lock.c: its slow path)
 */
#ifndef ROTA_SERVICE_INTERNAL_H
#define ROTA_SERVICE_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "rota/service.h"
#include "service_clock.h"
#include "service_lock.h"

/* ------------------------------------------------------------- the word */

/* generation:32 | owed:16 | spare:8 | flags:8 (see service.c) */
#define F_LIVE 0x01u
#define F_QUEUED 0x04u
#define F_RUNNING 0x08u
#define F_WAITER 0x10u
#define F_PERIODIC 0x20u
#define F_FREE 0x40u
#define OWED_ONE ((uint64_t)1 << 16)
#define OWED_MASK ((uint64_t)0xffff << 16)
#define OWED_MAX 0xffffu
#define HOLDS ((uint64_t)(F_QUEUED | F_RUNNING))

#define NIL UINT32_MAX
#define CHUNKS 32      /* chunk c holds base << c records */
#define FIRE_BATCH 256 /* fires taken from a shard per lock hold */
#define MAG 64         /* free records moved between a shard and the depot */
#define MAX_SHARDS 64
/* Staging (see service_stage.c): timers due in band b, the ticks
 * [b << STAGE_SHIFT, (b + 1) << STAGE_SHIFT), wait on the shard's list for
 * band b until the service thread moves them into the wheel, one band
 * ahead of time; bands further than STAGE_BANDS ahead go to the wheel. */
#define STAGE_SHIFT 11   /* a band is 2048 ticks (2 ms of 1 us ticks) */
#define STAGE_BANDS 1024 /* a power of two: the staged horizon, in bands */
#define STAGE_NONE 0xffffu
#define STAGE_FAR 0xfffeu /* sband of a record on the far vector */
#define STAGE_BATCH 256   /* records moved into the wheel per lock hold */
/* Records (or far entries) moved ahead of time between two looks at the
 * clock: ~1.5 us of work at the ~200 ns a move's misses cost (S2). */
#define STAGE_SLICE 8
/* Far staging: bands [far_from, far_from + FAR_BANDS) beyond the band
 * lists wait on a vector of entries, in arm order (see service_stage.c). */
#define FAR_BANDS ((uint64_t)1 << 16) /* 134 s of 1 us ticks */
#define FAR_MIN_CAP 256u

static inline uint32_t gen_of(uint64_t w)
{
    return (uint32_t)(w >> 32);
}

static inline unsigned owed_of(uint64_t w)
{
    return (unsigned)((w & OWED_MASK) >> 16);
}

/* A word that is not LIVE and holds nothing becomes the free word of the
 * next generation (0 is skipped: the zero handle is never valid).  A word
 * that is free already stays as it is, so freeing twice is impossible. */
static inline uint64_t settle(uint64_t w, bool *freed)
{
    *freed = false;
    if ((w & (F_LIVE | F_FREE)) || (w & HOLDS))
        return w;
    uint32_t gen = gen_of(w) + 1;
    *freed = true;
    return (uint64_t)(gen == 0 ? 1 : gen) << 32 | F_FREE;
}

static inline bool is_free(uint64_t w)
{
    return (uint32_t)w == F_FREE;
}

/* --------------------------------------------------------- structures */

/* Two cache lines.  The first holds all that arming and cancelling a
 * staged timer touch - and a timer is staged from its arm until a band or
 * two before its deadline, so almost every cancel finds it staged: a
 * cancel of a random timer among many costs one miss, on this line (a
 * band list's neighbours are written on their first lines too).  The
 * second line is the wheel's: the timer, which a record enters shortly
 * before it fires, and `due`.  The timer is a periodic one (rota.h,
 * struct rota_periodic); only a periodic record's pt.sched_ means
 * anything (its period in ticks and its policy: rota__sched()), set at
 * arm: a one-shot arm writes nothing on the second line, and whether a
 * record is periodic is read from F_PERIODIC in its word. */
struct rec {
    alignas(64) _Atomic uint64_t word;
    _Atomic uint32_t shard; /* the shard it is armed on */
    uint32_t free_next;     /* free chain link */
    rota_service_fn *fn;
    void *arg;
    uint32_t index;
    uint32_t wnext; /* dispatch / worker queue link; for a free
                       record heading a depot batch, the next batch */
    /* Staging, under the shard's lock: the band list the record waits on
     * (STAGE_NONE when it is not staged, STAGE_FAR on the far vector),
     * its deadline's offset in that band, and the list links (on the far
     * vector, snext is its entry's position). */
    uint16_t sband;
    uint16_t soff;
    uint32_t snext, sprev;
    uint64_t last_fire; /* deadline of the last fire owed */

    struct rota_periodic pt; /* under the shard's lock */
    _Atomic uint64_t due;    /* deadline of the first owed fire */
};

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(struct rec) == 128, "a record is two cache lines");
_Static_assert(offsetof(struct rec, pt) == 64,
               "what arm and cancel of a staged timer touch fits in the "
               "first line");
#endif

/* Whether the record's timer is periodic (constant for a generation). */
static inline bool rec_periodic(struct rec *r)
{
    return atomic_load_explicit(&r->word, memory_order_relaxed) & F_PERIODIC;
}

/* A far-staged timer: its record and the low bits of its band. */
struct far_ent {
    uint32_t index;
    uint32_t band;
};

/* A wheel with its lock and its free records: a chain of up to MAG that
 * arms pop from and frees push onto, and one full chain of MAG in reserve
 * (a magazine allocator, as Bonwick's). */
struct shard {
    alignas(64) struct rota__lock mu;
    struct rota_service *svc; /* for the wheel's callback */
    uint32_t hot, hot_n;
    uint32_t spare; /* NIL, or a chain of exactly MAG */
    /* Counters written under the lock (one writer at a time: plain
     * stores, no locked instruction), read by stats at any time. */
    _Atomic uint64_t armed, cancelled, touched;
    struct rota_wheel wheel;
    /* Staging (see service.c): bands below stage_next are in the wheel;
     * band b in [stage_next, stage_next + STAGE_BANDS) is the list
     * b % STAGE_BANDS, valid while its bit in stage_occ is set. */
    uint64_t stage_next;
    uint64_t staged; /* records on the band lists */
    uint64_t stage_occ[STAGE_BANDS / 64];
    uint32_t stage_head[STAGE_BANDS];
    uint32_t stage_tail[STAGE_BANDS];
    /* Far staging (see service.c): entries [0, far_len) of `far`, of
     * which far_live are not holes (set bits of far_dead); while a scan
     * runs, [far_wr, far_rd) is garbage. */
    struct far_ent *far;
    uint64_t *far_dead; /* far_cap bits, after the entries */
    uint32_t far_len, far_cap, far_live;
    uint32_t far_rd, far_wr;
    bool far_scanning;
    uint64_t far_from;   /* the first band that goes to the far vector */
    uint64_t far_target; /* far_from once the running scan ends */
};

/* Counters of one service thread (the ticker or a worker): one writer. */
struct tstats {
    alignas(64) _Atomic uint64_t fired;
    _Atomic uint64_t expired;
    _Atomic uint64_t merged;
    _Atomic uint64_t wakeups;
    _Atomic uint64_t late[ROTA_SERVICE_LATE_BUCKETS];
};

struct rota_service {
    /* Read-only after create. */
    struct rota_service_clock clock;
    struct rota_allocator alloc;
    uint64_t tick_ns;
    size_t max_pending;
    unsigned nworkers;
    unsigned nshards;
    unsigned base_shift; /* log2 of chunk 0's size */
    /* Staging work done ahead of time per look at the clock: STAGE_SLICE
     * (a test plants a fault by making it unbounded). */
    unsigned stage_slice;
    bool sysclock_used;
    /* Set in a child of fork() (service_fork.c): the copy is frozen. */
    atomic_bool forked;
    uint64_t id; /* in every handle it gives out: unique in the process */
    void *raw;   /* what alloc returned for this struct */
    struct shard *shards;
    void *shards_raw;
    size_t shards_bytes;
    unsigned shards_ready; /* shard mutexes initialised */
    struct tstats *ts;     /* [0] the ticker, [1 + i] worker i */
    void *ts_raw;
    size_t ts_bytes;

    /* The slab. */
    /* Chunk c's address minus its first index's records, as an integer
     * (wrapping): record i of chunk c is at chunk_at[c] + i * sizeof rec,
     * with no subtraction per lookup. */
    _Atomic uintptr_t chunk_at[CHUNKS];
    void *chunk_raw[CHUNKS];
    size_t chunk_bytes[CHUNKS];
    _Atomic uint32_t nrecords;
    unsigned nchunks; /* under grow_mu */
    uint32_t depot;   /* full chains of MAG free records, under grow_mu */
    uint64_t depot_n; /* chains in the depot */
    _Atomic uint64_t bytes;
    pthread_mutex_t grow_mu;

    alignas(64) _Atomic uint64_t sleep_until; /* tick; 0 while awake */
    atomic_int stopping;
    _Atomic int64_t live; /* pending timers, kept only with max_pending */
    _Atomic uint64_t queue_high;

    _Atomic uint64_t handed_back; /* by stop; counted as cancelled too */

    /* The service thread's own state (stop's, once it is joined). */
    alignas(64) pthread_t ticker;
    uint32_t db_first, db_last; /* records due, to run or queue */
    uint64_t db_count;

    /* Workers. */
    pthread_t *workers;
    size_t workers_bytes;
    unsigned workers_started; /* under wmu */
    pthread_mutex_t wmu;
    pthread_cond_t wcv;
    pthread_cond_t idle_cv;
    uint32_t whead, wtail; /* under wmu */
    uint64_t inflight;     /* queued or being run, under wmu */
    atomic_bool wexit;     /* set under wmu: workers stop taking work */
    unsigned idle_waiters; /* under wmu */

    /* sync() and check() requests. */
    pthread_mutex_t smu;
    pthread_cond_t scv;
    _Atomic uint64_t sync_req;
    uint64_t sync_done; /* under smu */
    _Atomic uint64_t check_req;
    uint64_t check_done; /* under smu */
    int check_rc;        /* under smu */
    const char *check_why;
    bool dead; /* under smu: the ticker has exited */

    /* cancel_sync() sleepers. */
    pthread_mutex_t done_mu;
    pthread_cond_t done_cv;

    pthread_mutex_t stop_mu;
    bool stopped; /* under stop_mu */
    bool ticker_started;

    struct rota__sysclock sysclock;

    /* The live services, for the fork handlers (service_fork.c). */
    struct rota_service *reg_prev, *reg_next;
};

/* The callback this thread is running, for cancel_sync()'s EDEADLK. */
struct rota__service_cb {
    const struct rota_service *svc;
    uint32_t index, gen;
};
extern _Thread_local struct rota__service_cb rota__service_tl_cb;
/* The service whose thread this is (ticker, worker, stop's hand-back). */
extern _Thread_local const struct rota_service *rota__service_tl_svc;

/* ------------------------------------------------------------ helpers */

/* Single-writer counters: a relaxed load and store, no locked RMW. */
static inline void bump(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline void add(_Atomic uint64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

static inline struct rec *rec_at(struct rota_service *svc, uint32_t index)
{
    uint32_t q = (index >> svc->base_shift) + 1;
    unsigned c = 31u - (unsigned)__builtin_clz(q);
    uintptr_t at =
        atomic_load_explicit(&svc->chunk_at[c], memory_order_acquire);
    return (struct rec *)(at + (uintptr_t)index * sizeof(struct rec));
}

static inline struct shard *shard_of(struct rota_service *svc, struct rec *r)
{
    return &svc->shards[atomic_load_explicit(&r->shard, memory_order_relaxed)];
}

static inline uint64_t ticks_to_ns(const struct rota_service *svc, uint64_t t)
{
    if (t != 0 && svc->tick_ns > UINT64_MAX / t)
        return UINT64_MAX;
    return t * svc->tick_ns;
}

/* The clock's time.  The system clock is read here, without the two calls
 * through the clock table (sys_now(), rota_clock_now_ns()): it is read
 * once per arm_in and touch_in. */
static inline uint64_t now_ns(struct rota_service *svc)
{
    if (svc->sysclock_used) {
        struct timespec ts;
        clock_gettime((clockid_t)svc->sysclock.clock.id_, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    }
    return svc->clock.now_ns(svc->clock.ctx);
}

/* ------------------------------------------- across the service files */

/* A pending timer has ended: one fewer against max_pending. */
static inline void rota__service_live_gone(struct rota_service *svc)
{
    if (svc->max_pending != 0)
        atomic_fetch_sub_explicit(&svc->live, 1, memory_order_relaxed);
}

/* service_slab.c: the slow paths of the two below. */
int rota__service_take_slow(struct rota_service *svc, struct shard *sh);
void rota__service_free_slow(struct rota_service *svc, struct shard *sh);

/* Pop a free record off the shard's hot chain (refilled from its spare
 * chain or the depot when empty); the shard's lock is held.  The record,
 * or NULL with *rc set (ROTA_ENOMEM).  Inline: an arm pays no call. */
static inline struct rec *rota__service_take_record(struct rota_service *svc,
                                                    struct shard *sh, int *rc)
{
    if (sh->hot_n == 0 && (*rc = rota__service_take_slow(svc, sh)) != 0)
        return NULL;
    struct rec *r = rec_at(svc, sh->hot);
    sh->hot = r->free_next;
    sh->hot_n--;
    return r;
}

/* Push a record that was just freed onto its shard's hot chain; the
 * shard's lock is held.  A full chain becomes the spare (the old spare
 * goes to the depot). */
static inline void rota__service_free_locked(struct rota_service *svc,
                                             struct shard *sh, struct rec *r,
                                             uint32_t index)
{
    r->free_next = sh->hot_n != 0 ? sh->hot : NIL;
    sh->hot = index;
    if (++sh->hot_n == MAG)
        rota__service_free_slow(svc, sh);
}

/* service_slab.c (and the two inline functions above) */
void *rota__service_alloc(struct rota_service *svc, size_t size);
void rota__service_free(struct rota_service *svc, void *p, size_t size);
int rota__service_add_chunk(struct rota_service *svc);
void rota__service_release(struct rota_service *svc, struct rec *r,
                           uint64_t bits);
void rota__service_notify_waiters(struct rota_service *svc);

/* service_stage.c */
void rota__service_stage_init(struct shard *sh, uint64_t now);
void rota__service_file(struct shard *sh, struct rec *r, uint64_t deadline,
                        bool far_ok);
void rota__service_unstage(struct shard *sh, struct rec *r);
bool rota__service_stage_pump(struct shard *sh, uint64_t now, bool ahead,
                              unsigned budget);
uint64_t rota__service_stage_next(const struct shard *sh);
void rota__service_stage_fini(struct shard *sh);
int rota__service_stage_check(struct rota_service *svc, struct shard *sh,
                              uint32_t n, const char **why);

/* service_thread.c */
void rota__service_on_fire(struct rota_wheel *wheel, struct rota_timer *timer,
                           uint64_t late);
void *rota__service_ticker_main(void *arg);
void *rota__service_worker_main(void *arg);

/* service_life.c */
int rota__service_check_all(struct rota_service *svc, const char **why);

/* service_fork.c */
int rota__service_register(struct rota_service *svc);
void rota__service_unregister(struct rota_service *svc);
_Noreturn void rota__service_forked_callback_returned(void);

/* Whether this is a child's copy of a parent's service (see
 * service_fork.c): every call but stop, destroy, check, now and stats
 * then returns ROTA_EFORK. */
static inline bool forked(const struct rota_service *svc)
{
    return atomic_load_explicit(&svc->forked, memory_order_relaxed);
}

#endif /* ROTA_SERVICE_INTERNAL_H */
