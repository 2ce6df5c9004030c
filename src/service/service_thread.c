/* SPDX-License-Identifier: MIT */
/*
 * service_thread.c - rota/service.h: the service thread and the workers.
 * The service thread fires each shard's due timers under its lock, then
 * runs them (no workers) or queues them for the workers, and sleeps until
 * the earliest deadline; see the essay at the top of service.c.
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include <pthread.h>

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "service_internal.h"

#define SHARD_BATCHES 64 /* most batches per shard per pass: see fire_shard */

static unsigned late_bucket(uint64_t late_ns)
{
    uint64_t us = late_ns / 1000u;
    if (us == 0)
        return 0;
    unsigned b = 64u - (unsigned)__builtin_clzll(us);
    return b >= ROTA_SERVICE_LATE_BUCKETS ? ROTA_SERVICE_LATE_BUCKETS - 1 : b;
}

static void invoke(struct rota_service *svc, struct rec *r, uint32_t gen,
                   uint64_t deadline, struct tstats *ts)
{
    struct rota_service_event ev;
    ev.timer = (struct rota_service_handle){r->index, gen, svc->id};
    ev.arg = r->arg;
    ev.deadline_ns = ticks_to_ns(svc, deadline);
    uint64_t now = now_ns(svc);
    ev.late_ns = now > ev.deadline_ns ? now - ev.deadline_ns : 0;
    bump(&ts->fired, 1);
    if (!rec_periodic(r))
        bump(&ts->expired, 1);
    bump(&ts->late[late_bucket(ev.late_ns)], 1);
    rota__service_tl_cb.svc = svc;
    rota__service_tl_cb.index = r->index;
    rota__service_tl_cb.gen = gen;
    r->fn(svc, &ev);
    if (forked(svc)) /* the callback forked, and returned in the child */
        rota__service_forked_callback_returned();
    rota__service_tl_cb.svc = NULL;
}

/*
 * The wheel's callback, under the shard's lock: count the fire as owed and
 * put the record on the dispatch list if it is idle.  Nothing else runs
 * here (no user code under a lock).
 */
void rota__service_on_fire(struct rota_wheel *wheel, struct rota_timer *timer,
                           uint64_t late)
{
    struct shard *sh = rota_container_of(wheel, struct shard, wheel);
    struct rota_service *svc = sh->svc;
    struct rec *r = rota_container_of(timer, struct rec, pt.timer);
    uint64_t deadline = rota_wheel_now(wheel) - late;
    uint64_t w = atomic_load_explicit(&r->word, memory_order_acquire);
    uint64_t nw;
    bool enqueue;

    do {
        if (!(w & F_LIVE))
            return; /* cannot happen: LIVE is cleared and unfiled together */
        unsigned owed = owed_of(w);
        /* A runner gives owed fires the deadlines due + k * period, so only
         * a BURST fire that follows on from the last one can be added;
         * others (SKIP, DELAY, or the first boundary after a touch) are
         * folded into the fire already waiting. */
        if (owed != 0 &&
            (rota__sched_missed(r->pt.sched_) != ROTA_MISSED_BURST ||
             owed == OWED_MAX ||
             deadline != r->last_fire + rota__sched_period(r->pt.sched_))) {
            bump(&svc->ts[0].merged, 1);
            return;
        }
        if (owed == 0) /* no reader of `due` while owed is 0 */
            atomic_store_explicit(&r->due, deadline, memory_order_relaxed);
        enqueue = !(w & (F_QUEUED | F_RUNNING));
        nw = (w + OWED_ONE) | (enqueue ? F_QUEUED : 0u);
    } while (!atomic_compare_exchange_weak_explicit(
        &r->word, &w, nw, memory_order_acq_rel, memory_order_acquire));
    r->last_fire = deadline;
    if (!enqueue)
        return;
    r->wnext = NIL;
    if (svc->db_first == NIL)
        svc->db_first = r->index;
    else
        rec_at(svc, svc->db_last)->wnext = r->index;
    svc->db_last = r->index;
    svc->db_count++;
}

/* Put a record freed outside its shard's lock on that shard's free list. */
static void free_unlocked(struct rota_service *svc, struct rec *r)
{
    struct shard *sh = shard_of(svc, r);
    rota__lock(&sh->mu);
    rota__service_free_locked(svc, sh, r, r->index);
    rota__unlock(&sh->mu);
}

/* A runner's turn with a queued record (on a worker, or on the service
 * thread without workers): run every owed fire while the timer stays LIVE,
 * then let go of it. */
static void work(struct rota_service *svc, struct rec *r, struct tstats *ts)
{
    uint64_t w = atomic_load_explicit(&r->word, memory_order_acquire);
    uint64_t nw, deadline = 0;
    bool freed;
    do {
        freed = false;
        if (!(w & F_LIVE) || owed_of(w) == 0) {
            /* Cancelled after it came due: it never runs (apollo#15810). */
            nw = settle(w & ~(OWED_MASK | F_QUEUED), &freed);
            continue;
        }
        deadline = atomic_load_explicit(&r->due, memory_order_relaxed);
        nw = ((w & ~(uint64_t)F_QUEUED) | F_RUNNING) - OWED_ONE;
        if (!(w & F_PERIODIC))
            nw &= ~(uint64_t)F_LIVE;
    } while (!atomic_compare_exchange_weak_explicit(
        &r->word, &w, nw, memory_order_acq_rel, memory_order_acquire));
    if (!(nw & F_RUNNING)) {
        if (freed)
            free_unlocked(svc, r);
        return;
    }
    if (!(w & F_PERIODIC))
        rota__service_live_gone(svc);
    uint32_t gen = gen_of(w);
    for (;;) {
        if (owed_of(nw) != 0) /* BURST: the next owed fire is a period on */
            atomic_store_explicit(&r->due,
                                  deadline + rota__sched_period(r->pt.sched_),
                                  memory_order_relaxed);
        invoke(svc, r, gen, deadline, ts);
        /* Take the next owed fire, or stop running. */
        w = atomic_load_explicit(&r->word, memory_order_acquire);
        do {
            freed = false;
            if ((w & F_LIVE) && owed_of(w) != 0 &&
                !atomic_load_explicit(&svc->wexit, memory_order_relaxed)) {
                deadline = atomic_load_explicit(&r->due, memory_order_relaxed);
                nw = w - OWED_ONE;
            } else {
                nw = settle(w & ~(OWED_MASK | F_RUNNING | F_WAITER), &freed);
            }
        } while (!atomic_compare_exchange_weak_explicit(
            &r->word, &w, nw, memory_order_acq_rel, memory_order_acquire));
        if (!(nw & F_RUNNING))
            break;
    }
    if (w & F_WAITER)
        rota__service_notify_waiters(svc);
    if (freed)
        free_unlocked(svc, r);
}

/* Run the dispatch list here (no workers) or hand it to the workers. */
static void run_dispatch(struct rota_service *svc)
{
    if (svc->db_count == 0)
        return;
    uint32_t first = svc->db_first;
    uint64_t count = svc->db_count;
    svc->db_first = svc->db_last = NIL;
    svc->db_count = 0;
    if (svc->nworkers == 0) {
        for (uint32_t i = first; i != NIL;) {
            struct rec *r = rec_at(svc, i);
            i = r->wnext; /* read first: the run may queue it again */
            work(svc, r, &svc->ts[0]);
        }
        return;
    }
    uint32_t last = first;
    while (rec_at(svc, last)->wnext != NIL)
        last = rec_at(svc, last)->wnext;
    pthread_mutex_lock(&svc->wmu);
    if (svc->whead == NIL)
        svc->whead = first;
    else
        rec_at(svc, svc->wtail)->wnext = first;
    svc->wtail = last;
    svc->inflight += count;
    if (svc->inflight >
        atomic_load_explicit(&svc->queue_high, memory_order_relaxed))
        atomic_store_explicit(&svc->queue_high, svc->inflight,
                              memory_order_relaxed);
    if (count >= svc->nworkers)
        pthread_cond_broadcast(&svc->wcv);
    else
        for (uint64_t k = 0; k < count; k++)
            pthread_cond_signal(&svc->wcv);
    pthread_mutex_unlock(&svc->wmu);
}

/*
 * Fire what is due on one shard, FIRE_BATCH at a time so that the lock is
 * held briefly and arms and cancels on the shard interleave with a storm.
 * At most SHARD_BATCHES batches per pass: callbacks that keep arming
 * timers due at once cannot hold the service thread on one shard.
 */
static void fire_shard(struct rota_service *svc, struct shard *sh, uint64_t now)
{
    /* First move into the wheel the bands that may hold timers due now
     * (see "Staging" in service.c): none, unless the thread overslept a
     * band's move.  A batch per lock hold.  The moves that are not due
     * yet wait for next_deadline(), after every shard has fired. */
    bool more_staged;
    do {
        rota__lock(&sh->mu);
        more_staged = rota__service_stage_pump(sh, now, false, STAGE_BATCH);
        rota__unlock(&sh->mu);
    } while (more_staged);
    for (int batch = 0; batch < SHARD_BATCHES; batch++) {
        size_t fired;
        rota__lock(&sh->mu);
        int more = rota_wheel_advance_max(&sh->wheel, now, FIRE_BATCH, &fired);
        rota__unlock(&sh->mu);
        run_dispatch(svc);
        if (more <= 0)
            break;
    }
}

static void wait_workers_idle(struct rota_service *svc)
{
    if (svc->nworkers == 0)
        return;
    pthread_mutex_lock(&svc->wmu);
    svc->idle_waiters++;
    while (svc->inflight != 0)
        pthread_cond_wait(&svc->idle_cv, &svc->wmu);
    svc->idle_waiters--;
    pthread_mutex_unlock(&svc->wmu);
}

/*
 * The earliest deadline of all shards (see "Sleeping" in service.c).  A
 * staged band whose move, or a far scan whose turn, would come before its
 * shard's next deadline is done first (see "Staging"), so that the thread
 * sleeps exactly until the next deadline and never wakes only to stage.
 * That work is not due yet, and a band's move costs ~200 ns a record in
 * cache misses (S2: ~200 records, ~45 us), so it goes in slices of
 * stage_slice with a look at the clock between them: once the earliest
 * deadline has come, it returns that deadline with *now brought up to
 * date, the pass fires it, and the next look here takes up the rest.
 */
static uint64_t next_deadline(struct rota_service *svc, uint64_t *now)
{
    uint64_t next = ROTA_NEVER;
    bool ahead = false;
    /* The wheels' deadlines first: the clock is compared with the
     * earliest of all shards, not only of those staged so far.  Most
     * passes find no work ahead and end here, one lock hold per shard. */
    for (unsigned i = 0; i < svc->nshards; i++) {
        struct shard *sh = &svc->shards[i];
        rota__lock(&sh->mu);
        uint64_t d = rota_wheel_next_deadline(&sh->wheel);
        if (rota__service_stage_next(sh) < d)
            ahead = true;
        rota__unlock(&sh->mu);
        if (d < next)
            next = d;
    }
    for (unsigned i = 0; ahead && i < svc->nshards; i++) {
        struct shard *sh = &svc->shards[i];
        rota__lock(&sh->mu);
        for (;;) {
            /* A band just moved may hold the shard's next deadline. */
            uint64_t d = rota_wheel_next_deadline(&sh->wheel);
            if (d < next)
                next = d;
            uint64_t move = rota__service_stage_next(sh);
            if (move >= d)
                break;
            rota__service_stage_pump(sh, move, true, svc->stage_slice);
            rota__unlock(&sh->mu);
            uint64_t t = now_ns(svc) / svc->tick_ns;
            if (t > *now)
                *now = t;
            if (next <= *now)
                return next; /* due: fire first, stage after */
            rota__lock(&sh->mu);
        }
        rota__unlock(&sh->mu);
    }
    return next;
}

static void publish(struct rota_service *svc, uint64_t *done, uint64_t ticket,
                    int rc, const char *why)
{
    pthread_mutex_lock(&svc->smu);
    if (done == &svc->check_done) {
        svc->check_rc = rc;
        svc->check_why = why;
    }
    *done = ticket;
    pthread_cond_broadcast(&svc->scv);
    pthread_mutex_unlock(&svc->smu);
}

void *rota__service_ticker_main(void *arg)
{
    struct rota_service *svc = arg;
    uint64_t synced = 0, checked = 0;

    rota__service_tl_svc = svc;
#ifdef __linux__
    /* The default 50 us of timer slack would be most of our lateness. */
    if (svc->sysclock_used)
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    pthread_setname_np(pthread_self(), "rota-service");
#endif
    for (;;) {
        uint64_t sync_ticket =
            atomic_load_explicit(&svc->sync_req, memory_order_acquire);
        uint64_t check_ticket =
            atomic_load_explicit(&svc->check_req, memory_order_acquire);
        if (atomic_load_explicit(&svc->stopping, memory_order_acquire))
            break;
        if (check_ticket != checked) {
            const char *why = NULL;
            wait_workers_idle(svc);
            int rc = rota__service_check_all(svc, &why);
            publish(svc, &svc->check_done, check_ticket, rc, why);
            checked = check_ticket;
        }
        uint64_t now = now_ns(svc) / svc->tick_ns;
        for (unsigned i = 0; i < svc->nshards; i++)
            fire_shard(svc, &svc->shards[i], now);
        if (sync_ticket != synced) {
            wait_workers_idle(svc);
            publish(svc, &svc->sync_done, sync_ticket, 0, NULL);
            synced = sync_ticket;
        }
        atomic_store_explicit(&svc->sleep_until, UINT64_MAX,
                              memory_order_seq_cst);
        uint64_t next = next_deadline(svc, &now);
        if (next <= now) { /* due already (armed by a callback, or while
                              staging) */
            atomic_store_explicit(&svc->sleep_until, 0, memory_order_seq_cst);
            continue;
        }
        atomic_store_explicit(&svc->sleep_until, next, memory_order_seq_cst);
        if (atomic_load_explicit(&svc->sync_req, memory_order_acquire) !=
                sync_ticket ||
            atomic_load_explicit(&svc->check_req, memory_order_acquire) !=
                check_ticket ||
            atomic_load_explicit(&svc->stopping, memory_order_acquire)) {
            atomic_store_explicit(&svc->sleep_until, 0, memory_order_seq_cst);
            continue;
        }
        svc->clock.wait(svc->clock.ctx, next == ROTA_NEVER
                                            ? UINT64_MAX
                                            : ticks_to_ns(svc, next));
        atomic_store_explicit(&svc->sleep_until, 0, memory_order_seq_cst);
        bump(&svc->ts[0].wakeups, 1);
    }
    return NULL;
}

/* ------------------------------------------------------------ workers */

void *rota__service_worker_main(void *arg)
{
    struct rota_service *svc = arg;

    rota__service_tl_svc = svc;
#ifdef __linux__
    pthread_setname_np(pthread_self(), "rota-worker");
#endif
    pthread_mutex_lock(&svc->wmu);
    struct tstats *ts = &svc->ts[1 + svc->workers_started++];
    pthread_cond_broadcast(&svc->idle_cv); /* create waits for the count */
    for (;;) {
        while (!atomic_load_explicit(&svc->wexit, memory_order_relaxed) &&
               svc->whead == NIL)
            pthread_cond_wait(&svc->wcv, &svc->wmu);
        if (atomic_load_explicit(&svc->wexit, memory_order_relaxed))
            break;
        struct rec *r = rec_at(svc, svc->whead);
        svc->whead = r->wnext;
        if (svc->whead == NIL)
            svc->wtail = NIL;
        pthread_mutex_unlock(&svc->wmu);
        work(svc, r, ts);
        pthread_mutex_lock(&svc->wmu);
        if (--svc->inflight == 0 && svc->idle_waiters != 0)
            pthread_cond_broadcast(&svc->idle_cv);
    }
    pthread_mutex_unlock(&svc->wmu);
    return NULL;
}
