/* SPDX-License-Identifier: MIT */
/*
 * service_life.c - rota/service.h: create, stop, destroy, sync, check and
 * the counters.  See the essay at the top of service.c.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads, sysconf */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service_internal.h"

static void *default_alloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}

static void default_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size;
    free(ptr);
}

static void *align64(void *p)
{
    return (void *)(((uintptr_t)p + 63u) & ~(uintptr_t)63u);
}

/* The service's own mutexes and condition variables, in init order. */
static pthread_mutex_t *mutex_of(struct rota_service *svc, int i)
{
    pthread_mutex_t *m[] = {&svc->grow_mu, &svc->wmu, &svc->smu, &svc->done_mu,
                            &svc->stop_mu};
    return i < 5 ? m[i] : NULL;
}

static pthread_cond_t *cond_of(struct rota_service *svc, int i)
{
    pthread_cond_t *c[] = {&svc->wcv, &svc->idle_cv, &svc->scv, &svc->done_cv};
    return i < 4 ? c[i] : NULL;
}

/* Free what create set up: `mutexes` and `conds` say how many of each.
 * A child's copy of a forked service destroys no synchronisation object
 * (see service_fork.c): it only frees memory and closes descriptors. */
static void teardown(struct rota_service *svc, int mutexes, int conds)
{
    bool copy = forked(svc);
    for (int i = 0; i < conds && !copy; i++)
        pthread_cond_destroy(cond_of(svc, i));
    for (int i = 0; i < mutexes && !copy; i++)
        pthread_mutex_destroy(mutex_of(svc, i));
    for (unsigned i = 0; i < svc->shards_ready; i++) {
        if (!copy)
            rota__lock_destroy(&svc->shards[i].mu);
        rota__service_stage_fini(&svc->shards[i]);
    }
    if (svc->sysclock_used)
        rota__sysclock_fini(&svc->sysclock, copy);
    for (unsigned c = 0; c < CHUNKS; c++)
        rota__service_free(svc, svc->chunk_raw[c], svc->chunk_bytes[c]);
    rota__service_free(svc, svc->workers, svc->workers_bytes);
    rota__service_free(svc, svc->shards_raw, svc->shards_bytes);
    rota__service_free(svc, svc->ts_raw, svc->ts_bytes);
    struct rota_allocator alloc = svc->alloc;
    alloc.free(alloc.ctx, svc->raw, sizeof *svc + 64);
}

/* Join the threads create started (all of them, after a stop). */
static void join_threads(struct rota_service *svc)
{
    atomic_store_explicit(&svc->stopping, 1, memory_order_seq_cst);
    if (svc->ticker_started) {
        svc->clock.wake(svc->clock.ctx);
        pthread_join(svc->ticker, NULL);
        svc->ticker_started = false;
    }
    pthread_mutex_lock(&svc->smu);
    svc->dead = true; /* sync() and check() waiters give up */
    pthread_cond_broadcast(&svc->scv);
    pthread_mutex_unlock(&svc->smu);
    pthread_mutex_lock(&svc->wmu);
    atomic_store_explicit(&svc->wexit, true, memory_order_relaxed);
    pthread_cond_broadcast(&svc->wcv);
    unsigned n = svc->workers_started;
    pthread_mutex_unlock(&svc->wmu);
    for (unsigned i = 0; i < n; i++)
        pthread_join(svc->workers[i], NULL);
}

static unsigned default_shards(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned n = cpus > 0 ? 2u * (unsigned)cpus : 4u;
    if (n < 4)
        n = 4;
    return n > ROTA_SERVICE_MAX_SHARDS ? ROTA_SERVICE_MAX_SHARDS : n;
}

int rota_service_create(struct rota_service **out,
                        const struct rota_service_config *config)
{
    struct rota_service_config cfg = {0};
    struct rota_allocator alloc = {default_alloc, default_free, NULL};

    if (out == NULL)
        return ROTA_EINVAL;
    *out = NULL;
    /* Every field's rule, and the text naming it: service_config.c. */
    int bad = rota_service_config_check(config, NULL);
    if (bad != 0)
        return bad;
    if (config != NULL)
        cfg = *config;
    if (cfg.allocator != NULL)
        alloc = *cfg.allocator;
    size_t cap = cfg.initial_capacity == 0 ? 1024 : cfg.initial_capacity;
    unsigned shift = 6;
    while (((size_t)1 << shift) < cap)
        shift++;

    void *raw = alloc.alloc(alloc.ctx, sizeof(struct rota_service) + 64);
    if (raw == NULL)
        return ROTA_ENOMEM;
    struct rota_service *svc = align64(raw);
    memset(svc, 0, sizeof *svc);
    svc->raw = raw;
    /* 64 bits: a process would need centuries of creates to wrap. */
    static _Atomic uint64_t last_id;
    svc->id = atomic_fetch_add_explicit(&last_id, 1, memory_order_relaxed) + 1;
    svc->alloc = alloc;
    atomic_init(&svc->bytes, sizeof *svc + 64);
    svc->tick_ns = cfg.tick_ns == 0 ? 1000 : cfg.tick_ns;
    svc->max_pending = cfg.max_pending;
    svc->nworkers = cfg.workers;
    svc->nshards = cfg.shards == 0 ? default_shards() : cfg.shards;
    svc->base_shift = shift;
    svc->stage_slice = STAGE_SLICE;
    svc->db_first = svc->db_last = NIL;
    svc->whead = svc->wtail = NIL;
    svc->depot = NIL;

    int mutexes = 0, conds = 0, rc = ROTA_ESYS;
    while (mutex_of(svc, mutexes) != NULL &&
           pthread_mutex_init(mutex_of(svc, mutexes), NULL) == 0)
        mutexes++;
    while (mutex_of(svc, mutexes) == NULL && cond_of(svc, conds) != NULL &&
           pthread_cond_init(cond_of(svc, conds), NULL) == 0)
        conds++;
    if (mutex_of(svc, mutexes) != NULL || cond_of(svc, conds) != NULL)
        goto fail;
    if (cfg.clock != NULL) {
        svc->clock = *cfg.clock;
    } else {
        rc = rota__sysclock_init(&svc->sysclock, cfg.clock_source, &svc->clock);
        if (rc != 0)
            goto fail;
        svc->sysclock_used = true;
    }
    rc = ROTA_ENOMEM;
    svc->ts_bytes = (1 + (size_t)svc->nworkers) * sizeof(struct tstats) + 64;
    svc->ts_raw = rota__service_alloc(svc, svc->ts_bytes);
    if (svc->ts_raw == NULL)
        goto fail;
    svc->ts = align64(svc->ts_raw);
    memset(svc->ts, 0, (1 + (size_t)svc->nworkers) * sizeof(struct tstats));
    svc->shards_bytes = svc->nshards * sizeof(struct shard) + 64;
    svc->shards_raw = rota__service_alloc(svc, svc->shards_bytes);
    if (svc->shards_raw == NULL)
        goto fail;
    svc->shards = align64(svc->shards_raw);
    uint64_t now = now_ns(svc) / svc->tick_ns;
    for (unsigned i = 0; i < svc->nshards; i++) {
        struct shard *sh = &svc->shards[i];
        memset(sh, 0, sizeof *sh);
        sh->svc = svc;
        sh->hot = sh->spare = NIL;
        rota_wheel_init(&sh->wheel, now);
        rota__service_stage_init(sh, now);
        if (rota__lock_init(&sh->mu) != 0) {
            rc = ROTA_ESYS;
            goto fail;
        }
        svc->shards_ready++;
    }
    if (svc->nworkers != 0) {
        svc->workers_bytes = svc->nworkers * sizeof(pthread_t);
        svc->workers = rota__service_alloc(svc, svc->workers_bytes);
        if (svc->workers == NULL)
            goto fail;
    }
    if (rota__service_add_chunk(svc) != 0) /* no other thread yet */
        goto fail;

    rc = ROTA_ESYS;
    if (pthread_create(&svc->ticker, NULL, rota__service_ticker_main, svc) != 0)
        goto fail;
    svc->ticker_started = true;
    for (unsigned i = 0; i < svc->nworkers; i++) {
        if (pthread_create(&svc->workers[i], NULL, rota__service_worker_main,
                           svc) != 0)
            goto fail_threads;
        /* A worker takes its stats slot by order of arrival; wait for it so
         * that workers_started counts the threads to join. */
        pthread_mutex_lock(&svc->wmu);
        while (svc->workers_started != i + 1)
            pthread_cond_wait(&svc->idle_cv, &svc->wmu);
        pthread_mutex_unlock(&svc->wmu);
    }
    if (rota__service_register(svc) != 0)
        goto fail_threads;
    *out = svc;
    return 0;

fail_threads:
    join_threads(svc);
fail:
    teardown(svc, mutexes, conds);
    return rc;
}

/*
 * After the threads are joined, the caller is the service thread: it may
 * read and link records' wnext.  Every record on the worker queue is
 * dropped (its callback never started); then every LIVE record is handed
 * back (clearing LIVE and unfiling it under its shard's lock, as a cancel
 * would, so that concurrent cancels see one or the other).
 */
int rota_service_stop(struct rota_service *svc, rota_service_handback_fn *fn,
                      void *arg)
{
    if (svc == NULL)
        return ROTA_EINVAL;
    if (rota__service_tl_svc == svc)
        return ROTA_EDEADLK;
    pthread_mutex_lock(&svc->stop_mu);
    if (svc->stopped) {
        pthread_mutex_unlock(&svc->stop_mu);
        return 0;
    }
    if (forked(svc)) /* the threads are the parent's (service_fork.c) */
        atomic_store_explicit(&svc->stopping, 1, memory_order_seq_cst);
    else
        join_threads(svc);
    rota__service_tl_svc = svc;

    for (uint32_t i = svc->whead; i != NIL;) {
        struct rec *r = rec_at(svc, i);
        i = r->wnext;
        rota__service_release(svc, r, F_QUEUED | OWED_MASK);
    }
    svc->whead = svc->wtail = NIL;
    svc->inflight = 0;

    /* Pass through every shard's lock once: an arm's critical section
     * either came before (its record, even in a chunk it just added, is
     * below the nrecords read next) or comes after and sees the flag. */
    for (unsigned i = 0; i < svc->nshards; i++) {
        rota__lock(&svc->shards[i].mu);
        rota__unlock(&svc->shards[i].mu);
    }
    uint64_t handed = 0;
    uint32_t back = NIL, back_last = NIL; /* the handed-back, in order */
    uint32_t n = atomic_load_explicit(&svc->nrecords, memory_order_acquire);
    for (uint32_t i = 0; i < n; i++) {
        struct rec *r = rec_at(svc, i);
        uint64_t w = atomic_load_explicit(&r->word, memory_order_acquire);
        if (!(w & F_LIVE))
            continue;
        struct shard *sh = shard_of(svc, r);
        rota__lock(&sh->mu);
        w = atomic_load_explicit(&r->word, memory_order_acquire);
        bool mine = false;
        while ((w & F_LIVE) &&
               !(mine = atomic_compare_exchange_weak_explicit(
                     &r->word, &w, w & ~(uint64_t)F_LIVE, memory_order_acq_rel,
                     memory_order_acquire)))
            ;
        if (mine && r->sband != STAGE_NONE)
            rota__service_unstage(sh, r);
        else if (mine && rota_timer_pending(&r->pt.timer))
            rota_timer_cancel(&sh->wheel, &r->pt.timer);
        rota__unlock(&sh->mu);
        if (!mine)
            continue;
        r->wnext = NIL;
        if (back == NIL)
            back = i;
        else
            rec_at(svc, back_last)->wnext = i;
        back_last = i;
        handed++;
        rota__service_live_gone(svc);
    }
    /* No lock is held while the user's function runs. */
    for (uint32_t i = back; i != NIL;) {
        struct rec *r = rec_at(svc, i);
        i = r->wnext;
        if (fn != NULL) {
            uint32_t gen =
                gen_of(atomic_load_explicit(&r->word, memory_order_relaxed));
            fn(svc, (struct rota_service_handle){r->index, gen, svc->id},
               r->arg, arg);
        }
        rota__service_release(svc, r, 0); /* frees it */
    }
    rota__service_tl_svc = NULL;
    add(&svc->handed_back, handed);
    svc->stopped = true;
    pthread_mutex_unlock(&svc->stop_mu);
    return handed > INT_MAX ? INT_MAX : (int)handed;
}

int rota_service_destroy(struct rota_service *svc)
{
    if (svc == NULL)
        return 0;
    if (rota__service_tl_svc == svc)
        return ROTA_EDEADLK;
    rota__service_unregister(svc);
    rota_service_stop(svc, NULL, NULL);
    teardown(svc, 5, 4);
    return 0;
}

int rota_service_sync(struct rota_service *svc)
{
    if (svc == NULL)
        return ROTA_EINVAL;
    if (rota__service_tl_svc == svc)
        return ROTA_EDEADLK;
    if (forked(svc))
        return ROTA_EFORK;
    pthread_mutex_lock(&svc->smu);
    if (svc->dead ||
        atomic_load_explicit(&svc->stopping, memory_order_acquire)) {
        pthread_mutex_unlock(&svc->smu);
        return ROTA_ESHUTDOWN;
    }
    uint64_t ticket =
        atomic_fetch_add_explicit(&svc->sync_req, 1, memory_order_acq_rel) + 1;
    pthread_mutex_unlock(&svc->smu);
    svc->clock.wake(svc->clock.ctx);
    pthread_mutex_lock(&svc->smu);
    while (svc->sync_done < ticket && !svc->dead)
        pthread_cond_wait(&svc->scv, &svc->smu);
    int rc = svc->sync_done >= ticket ? 0 : ROTA_ESHUTDOWN;
    pthread_mutex_unlock(&svc->smu);
    return rc;
}

#define BAD(text)                                                              \
    do {                                                                       \
        *why = (text);                                                         \
        return ROTA_ECORRUPT;                                                  \
    } while (0)

/* Walk a chain of free records: each free, `expect` long (any length for
 * expect UINT32_MAX), no cycle. */
static int check_chain(struct rota_service *svc, uint32_t i, uint32_t expect,
                       uint32_t n, uint64_t *total, const char **why)
{
    uint64_t len = 0;
    for (; i != NIL; i = rec_at(svc, i)->free_next) {
        if (i >= n)
            BAD("free chain index out of range");
        if (++len > MAG)
            BAD("free chain longer than a magazine");
        if (!is_free(atomic_load_explicit(&rec_at(svc, i)->word,
                                          memory_order_relaxed)))
            BAD("record on a free chain is in use");
    }
    if (expect != UINT32_MAX && len != expect)
        BAD("free chain length disagrees with its count");
    *total += len;
    return 0;
}

/* Called on the service thread (quiet), or after stop under stop_mu. */
int rota__service_check_all(struct rota_service *svc, const char **why)
{
    uint64_t nfree = 0, nlive = 0, nfiled = 0, listed = 0, wheeled = 0;
    uint32_t n = atomic_load_explicit(&svc->nrecords, memory_order_acquire);
    int rc = 0;

    for (unsigned s = 0; s < svc->nshards && rc == 0; s++) {
        struct shard *sh = &svc->shards[s];
        rota__lock(&sh->mu);
        rc = rota_wheel_check(&sh->wheel, why);
        if (rc == 0)
            rc = check_chain(svc, sh->hot_n != 0 ? sh->hot : NIL, sh->hot_n, n,
                             &listed, why);
        if (rc == 0 && sh->spare != NIL)
            rc = check_chain(svc, sh->spare, MAG, n, &listed, why);
        wheeled += rota_wheel_count(&sh->wheel);
        if (rc == 0)
            rc = rota__service_stage_check(svc, sh, n, why);
        wheeled += sh->staged + sh->far_live;
        rota__unlock(&sh->mu);
    }
    pthread_mutex_lock(&svc->grow_mu);
    uint64_t batches = 0;
    for (uint32_t i = svc->depot; i != NIL && rc == 0;
         i = rec_at(svc, i)->wnext) {
        rc = check_chain(svc, i, MAG, n, &listed, why);
        if (++batches > svc->depot_n)
            *why = "depot holds more chains than it counts", rc = ROTA_ECORRUPT;
    }
    if (rc == 0 && batches != svc->depot_n)
        *why = "depot holds fewer chains than it counts", rc = ROTA_ECORRUPT;
    pthread_mutex_unlock(&svc->grow_mu);
    if (rc != 0)
        return ROTA_ECORRUPT;
    for (uint32_t i = 0; i < n; i++) {
        struct rec *r = rec_at(svc, i);
        struct shard *sh = shard_of(svc, r);
        rota__lock(&sh->mu);
        uint64_t w = atomic_load_explicit(&r->word, memory_order_acquire);
        bool staged = r->sband != STAGE_NONE;
        bool wheeled_here = rota_timer_pending(&r->pt.timer);
        bool filed = wheeled_here || staged;
        /* A one-shot arm leaves the period in pt.sched_ to the wheel's
         * filing (struct rec): in the wheel, a one-shot record with a
         * period would be fired again by the core. */
        bool period_left = wheeled_here && !(w & F_PERIODIC) &&
                           rota__sched_period(r->pt.sched_) != 0;
        rota__unlock(&sh->mu);
        if (period_left)
            BAD("one-shot timer in the wheel with a period");
        if (staged && rota_timer_pending(&r->pt.timer))
            BAD("staged record also filed in the wheel");
        if (r->index != i)
            BAD("record index does not match its place in the slab");
        if (gen_of(w) == 0)
            BAD("record has generation 0");
        nfiled += filed;
        if (is_free(w)) {
            nfree++;
            if (filed)
                BAD("free record still filed in the wheel");
            continue;
        }
        if (w & F_FREE)
            BAD("record marked free has other flags");
        if (w & F_LIVE) {
            nlive++;
            if (!filed && !(w & (F_QUEUED | F_RUNNING | F_PERIODIC)))
                BAD("pending timer neither filed, due nor running");
            continue;
        }
        if (filed)
            BAD("ended timer still filed in the wheel");
        if (!(w & HOLDS))
            BAD("ended timer's record was never freed");
    }
    if (nfiled != wheeled)
        BAD("the wheels hold timers that are not the service's");
    /* A child's copy of a forked service (service_fork.c) may hold what a
     * thread of the parent's was handing over outside any lock: a record
     * freed but not yet back on a chain, a fire whose counter was not yet
     * bumped.  Such a record is lost to the copy, never given out twice;
     * the rest must hold exactly. */
    bool copy = forked(svc);
    if (copy ? listed > nfree : listed != nfree)
        BAD("free records missing from the free chains");
    struct rota_service_stats st;
    rota_service_stats(svc, &st);
    if (copy)
        ; /* the counters may lag the records, as above */
    else if (st.pending != nlive)
        BAD("pending counter disagrees with the records");
    else if (svc->max_pending != 0 &&
             atomic_load_explicit(&svc->live, memory_order_relaxed) !=
                 (int64_t)nlive)
        BAD("max_pending counter disagrees with the records");
    *why = NULL;
    return 0;
}

int rota_service_check(struct rota_service *svc, const char **why)
{
    const char *text = NULL;
    int rc;

    if (why != NULL)
        *why = svc == NULL ? "NULL service" : NULL;
    if (svc == NULL)
        return ROTA_EINVAL;
    if (rota__service_tl_svc == svc)
        return ROTA_EDEADLK;
    if (forked(svc))
        goto here; /* no service thread in the child: check the copy here */
    pthread_mutex_lock(&svc->smu);
    if (!svc->dead &&
        !atomic_load_explicit(&svc->stopping, memory_order_acquire)) {
        uint64_t ticket = atomic_fetch_add_explicit(&svc->check_req, 1,
                                                    memory_order_acq_rel) +
                          1;
        pthread_mutex_unlock(&svc->smu);
        svc->clock.wake(svc->clock.ctx);
        pthread_mutex_lock(&svc->smu);
        while (svc->check_done < ticket && !svc->dead)
            pthread_cond_wait(&svc->scv, &svc->smu);
        if (svc->check_done >= ticket) {
            rc = svc->check_rc;
            text = svc->check_why;
            pthread_mutex_unlock(&svc->smu);
            goto out;
        }
    }
    pthread_mutex_unlock(&svc->smu);
here:
    /* Stopped (or stopping: stop_mu waits for it): check here. */
    pthread_mutex_lock(&svc->stop_mu);
    rc = rota__service_check_all(svc, &text);
    pthread_mutex_unlock(&svc->stop_mu);
out:
    if (why != NULL)
        *why = text;
    return rc;
}

uint64_t rota_service_now(struct rota_service *svc)
{
    return svc == NULL ? 0 : now_ns(svc);
}

static uint64_t load(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

void rota_service_stats(struct rota_service *svc,
                        struct rota_service_stats *out)
{
    if (out == NULL)
        return;
    memset(out, 0, sizeof *out);
    if (svc == NULL)
        return;
    out->handed_back = load(&svc->handed_back);
    out->cancelled = out->handed_back;
    for (unsigned i = 0; i < svc->nshards; i++) {
        struct shard *sh = &svc->shards[i];
        out->armed += load(&sh->armed);
        out->cancelled += load(&sh->cancelled);
        out->touched += load(&sh->touched);
    }
    for (unsigned i = 0; i <= svc->nworkers; i++) {
        struct tstats *t = &svc->ts[i];
        out->fired += load(&t->fired);
        out->expired += load(&t->expired);
        out->merged += load(&t->merged);
        out->wakeups += load(&t->wakeups);
        for (unsigned b = 0; b < ROTA_SERVICE_LATE_BUCKETS; b++)
            out->late[b] += load(&t->late[b]);
    }
    uint64_t ended = out->expired + out->cancelled;
    out->pending = out->armed > ended ? out->armed - ended : 0;
    out->queue_high = load(&svc->queue_high);
    out->records = atomic_load_explicit(&svc->nrecords, memory_order_relaxed);
    out->bytes = load(&svc->bytes);
}
