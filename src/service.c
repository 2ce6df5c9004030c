/*
 * service.c - rota/service.h: a thread-safe timer service on the core wheel.
 * This file: the design, and the submission side (shards, slab, arm,
 * touch, cancel).  service_internal.h lists the other files.
 *
 * THE WORKLOAD
 *   Many threads arm, touch and cancel timers at a high rate (request
 *   timeouts: almost all are cancelled), a few fire, and some are periodic
 *   tasks every few milliseconds.  Producers must not serialise on one
 *   lock; the thread that fires timers must sleep exactly until the next
 *   deadline; cancel must be exact across threads (no callback after a
 *   synchronous cancel returns, none of a cancelled timer queued for a
 *   worker: apollo#15810); stale handles must never reach a newer timer.
 *
 * THE STRUCTURE
 *   Shards.  The service keeps S wheels (default: twice the CPUs, at least
 *   4), each behind its own lock with its own list of free records.  A
 *   thread arms on its home shard (threads are spread over the shards
 *   round-robin), so producers on different threads never share a lock or
 *   a cache line; touch and cancel take the lock of the timer's own shard
 *   and do their O(1) wheel work at once.  The service thread visits the
 *   shards to fire what is due and to find the earliest deadline; no
 *   callback ever runs under a shard lock.  On Linux the lock is a futex
 *   word that spins briefly before it sleeps (service_internal.h): the
 *   holds are short, and an uncontended lock + unlock costs a few
 *   instructions where glibc's mutex costs ~57 (S1: ~130 fewer
 *   instructions per pair).  The spin also lets the service thread catch
 *   the lock between the holds of a producer arming in a tight loop,
 *   where a sleeping waiter would lose every race to it.
 *
 *   Records.  Each timer is a record in a slab of chunks that never move
 *   (chunk c holds base << c records, so index -> chunk is one clz).  A
 *   record carries a 64-bit state word, changed only by compare-and-swap:
 *
 *       generation:32 | owed:16 | spare:8 | flags:8
 *
 *     LIVE     the timer is pending (armed, not ended).  Clearing it is the
 *              linearisation point of a cancel, of a one-shot callback's
 *              start, and of stop's hand-back: exactly one of them wins.
 *     QUEUED   the record sits on a dispatch list or the worker queue: a
 *              fire is owed and its callback has not started.
 *     RUNNING  its callback is running.
 *     WAITER   a cancel_sync() sleeps until RUNNING clears.
 *     PERIODIC set at arm for periodic timers.
 *     FREE     the record is on its shard's free list.
 *     owed     fires due whose callbacks have not started.
 *
 *   QUEUED and RUNNING are "holds".  A LIVE record is in its shard's wheel
 *   or held; whoever clears LIVE of a filed record unfiles it in the same
 *   critical section.  A record is freed - its generation bumped and its
 *   flags set to FREE in one CAS - by whichever thread drops the last hold
 *   of a record that is not LIVE, so it is freed exactly once, never while
 *   anyone may still use it, and every handle of the old generation fails
 *   its generation check from then on (checked again under the shard lock
 *   before any wheel work).
 *
 *   Firing.  Under a shard's lock the service thread advances its wheel to
 *   the clock's tick, up to FIRE_BATCH fires at a time; for each fire one
 *   CAS adds one to `owed` and, if the record is neither QUEUED nor
 *   RUNNING, sets QUEUED and appends it to a dispatch list.  After the lock
 *   is dropped the list is run on the service thread (no workers) or
 *   handed to the workers' FIFO.  Either way a run starts with one CAS that
 *   takes an owed fire only if LIVE is still set (and clears LIVE for a
 *   one-shot timer): a cancel between due and start wins, and the record
 *   is dropped without running - the Apollo fix.  A record is queued at
 *   most once and the thread that finishes a run takes the next owed fire
 *   itself, so a periodic callback never runs concurrently with itself.
 *   `due` holds the deadline of the first owed fire: the service thread
 *   writes it only while owed is 0, a runner only while owed stays above 0
 *   after its own decrement, so they never race.  BURST fires of one timer
 *   are consecutive periods (due + k * period); other fires that come while
 *   one is owed are folded into it (stats.merged).
 *
 *   Staging.  A wheel moves a high-level slot's timers down all at once
 *   when the slot comes due (a cascade), and its exact next deadline scans
 *   the earliest slot.  When one thread arms 1e5 timers over a second,
 *   each slot at level 3 (2^18 ticks, 262 ms of 1 us ticks) holds ~26000
 *   of them: the scan and the cascade each held the shard's lock and the
 *   service thread for ~4 ms at every such boundary, and the timers due
 *   then fired up to 8 ms late (S2: p99 3 ms).  So a timer due more than a
 *   band (STAGE_SHIFT: 2048 ticks) ahead does not go to the wheel at
 *   once: it waits on its shard's list for its band (O(1), FIFO), and the
 *   service thread moves each band into the wheel when the band before it
 *   starts, STAGE_BATCH per lock hold, before it advances the wheel.  A
 *   timer thus enters the wheel at most two bands before its deadline,
 *   where it is filed low and cascades in small groups, and the service
 *   thread's work is spread evenly over time.  Bands beyond STAGE_BANDS
 *   go to the wheel directly.  The rule depends only on the deadline and
 *   on the shard's band cursor (stage_next), under the shard lock, so
 *   timers with equal deadlines armed by one thread still enter the wheel
 *   in arm order.  A staged timer is LIVE and not in the wheel; cancel,
 *   touch and stop take it off its list.  Before it sleeps, the service
 *   thread moves early any band whose move would come before the wheel's
 *   next deadline, so it still sleeps exactly until the next deadline and
 *   never wakes only to move a band.
 *
 *   Far staging.  Most request timeouts are seconds away and cancelled
 *   long before they come due (S1: 1..60 s).  Filed in the wheel or on a
 *   band list, such a timer is a node of a long doubly linked list: its
 *   cancel writes both neighbours and its arm the old tail, three records
 *   at random, and each store miss is waited for at the next locked
 *   instruction (the unlock, the next lock).  So a timer due in the
 *   FAR_BANDS bands from far_from on (past the band lists, 134 s) is
 *   appended to the shard's far vector instead, entries of {record, band}
 *   in arm order; the record keeps its entry's position, and a cancel or
 *   touch sets the entry's bit in a hole bitmap of one bit per entry, small
 *   enough to stay in cache.  A pair then costs the misses on its own
 *   record only (S1: ~25% less CPU per pair than on the lists).  When the
 *   band lists' cursor comes within half their horizon of far_from, the
 *   service thread scans the vector (STAGE_BATCH entries per lock hold, in
 *   order): entries due before the lists' end go onto the band lists, the
 *   rest close up over the holes, then far_from moves to the lists' end.
 *   A full vector closes its holes if they are half of it, else
 *   doubles; if it cannot grow it closes what holes it has, and without
 *   any the timer is filed as if there were no far vector.  Arm order
 *   holds: a timer goes to the far vector only while its band is at or
 *   after far_from, the scan moves entries in vector order, and a timer
 *   armed during a scan for a band the scan will move is appended behind
 *   the entries it will move first.  The scan's time joins the band moves in
 *   the sleep rule above, so the thread never wakes only to scan.
 *
 *   Sleeping.  The service thread publishes "about to sleep" (sleep_until
 *   = UINT64_MAX), then reads each shard's exact next deadline under its
 *   lock, then publishes that tick and sleeps until it.  A producer arms
 *   under its shard's lock, then reads sleep_until and wakes the clock if
 *   its deadline is earlier.  The shard lock orders the producer against
 *   the service thread's look at that shard: either the look saw the new
 *   timer, or the producer sees the published value (seq_cst) and wakes
 *   it; the clock's wake is sticky, so a wake just before the sleep is not
 *   lost.  Cancels and later deadlines never wake it: no ticks while idle.
 *
 *   Stop.  It sets the stop flag, joins the threads, takes and drops every
 *   shard's lock once, and only then reads how many records exist and
 *   hands back every LIVE one, clearing LIVE under its shard's lock.  An
 *   arm checks the flag under its shard lock: its critical section either
 *   precedes stop's pass over that shard (so its record, even one from a
 *   chunk it just added, is in the range stop scans) or follows it and
 *   sees the flag.
 *
 * THE GUARANTEES AND WHY THEY HOLD
 *   - Never early: deadlines round up to ticks, "now" rounds down, and the
 *     wheel fires only at or after the deadline tick.
 *   - Exactly one end per timer: LIVE is cleared once (see above); fired +
 *     cancelled + handed back == armed.
 *   - P12: cancel_sync clears LIVE (no future start), then waits for
 *     RUNNING to clear; callbacks start only through a CAS that needs LIVE.
 *   - Memory: a cancelled timer's record is unfiled and freed by the
 *     cancel itself (no cancelled timer lingers: netty PR#2561).
 *
 * ALTERNATIVES REJECTED (measured on this project's 2-vCPU VM, S1 of
 * bench/service_bench.c: arm + cancel pairs with 1e5 live timers)
 *   - A lock-free MPSC queue drained by the service thread (Netty; the
 *     first version of this file): each record's state word decided the
 *     operation with a CAS and the record was queued once for the service
 *     thread to file or unfile.  Correct, but every pair cost the producer
 *     ~530 ns of CPU - its atomics missed on lines the service thread had
 *     just written - plus ~320 ns on the service thread, against ~450 ns
 *     for the whole pair done inline on a shard, and the mutex heap ran
 *     ~1.4x faster than it.  A queue only pays when the consumer's work is
 *     cheaper than the handoff; here it is not.
 *   - One mutex around one wheel or heap (bench/service_heap.c): producers
 *     serialise and the structure's cache lines bounce between them.
 *   - Lazy cancel (leave cancelled timers in the wheel until their slot
 *     comes due, netty before PR#2561): memory held for the full delay.
 *     The far vector's holes are lazy only in a bit each: the record is
 *     freed at once and the holes are closed by the next scan (~1 s) or
 *     when they are half of a full vector.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads */
#define _DEFAULT_SOURCE         /* syscall() for the shard lock */
#include <string.h>

#include "service_internal.h"

_Thread_local struct rota__service_cb rota__service_tl_cb;
_Thread_local const struct rota_service *rota__service_tl_svc;

/* Each thread gets a number on first use: its home shard follows. */
static _Thread_local unsigned tl_id = UINT_MAX;
static atomic_uint next_id;

static unsigned my_id(void)
{
    if (tl_id == UINT_MAX)
        tl_id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    return tl_id;
}

/* The record a handle names, or NULL when the handle is another service's
 * or its index was never allocated. */
static struct rec *rec_of(struct rota_service *svc,
                          struct rota_service_handle h)
{
    if (h.service != svc->id || h.generation == 0 ||
        h.index >= atomic_load_explicit(&svc->nrecords, memory_order_acquire))
        return NULL;
    return rec_at(svc, h.index);
}

static uint64_t ns_to_ticks_ceil(const struct rota_service *svc, uint64_t ns)
{
    uint64_t t = ns / svc->tick_ns + (ns % svc->tick_ns != 0);
    return t > ROTA_MAX_DEADLINE ? ROTA_MAX_DEADLINE : t;
}

static uint64_t deadline_after(struct rota_service *svc, uint64_t delay_ns)
{
    uint64_t now = now_ns(svc);
    uint64_t at = now > UINT64_MAX - delay_ns ? UINT64_MAX : now + delay_ns;
    return ns_to_ticks_ceil(svc, at);
}

/* Wake the service thread if it sleeps (or is about to) past `deadline`.
 * Called after the shard lock is dropped (see "Sleeping"). */
static void maybe_wake(struct rota_service *svc, uint64_t deadline)
{
    uint64_t until =
        atomic_load_explicit(&svc->sleep_until, memory_order_seq_cst);
    if (until != 0 && deadline < until)
        svc->clock.wake(svc->clock.ctx);
}

/* ------------------------------------------------------------ the slab */

void *rota__service_alloc(struct rota_service *svc, size_t size)
{
    void *p = svc->alloc.alloc(svc->alloc.ctx, size);
    if (p != NULL)
        add(&svc->bytes, size);
    return p;
}

void rota__service_free(struct rota_service *svc, void *p, size_t size)
{
    if (p == NULL)
        return;
    atomic_fetch_sub_explicit(&svc->bytes, size, memory_order_relaxed);
    svc->alloc.free(svc->alloc.ctx, p, size);
}

/*
 * Add chunk number svc->nchunks to the depot, as chains of MAG records.
 * The caller holds grow_mu (lock order: a shard's lock, then grow_mu).
 */
int rota__service_add_chunk(struct rota_service *svc)
{
    unsigned c = svc->nchunks;
    uint64_t first = (((uint64_t)1 << c) - 1u) << svc->base_shift;
    uint64_t n = (uint64_t)1 << (svc->base_shift + c); /* a multiple of MAG */
    if (c >= CHUNKS || first + n > NIL || /* indices stay below NIL */
        n > (SIZE_MAX - 64) / sizeof(struct rec))
        return ROTA_ENOMEM;
    size_t bytes = (size_t)n * sizeof(struct rec) + 64;
    void *raw = rota__service_alloc(svc, bytes);
    if (raw == NULL)
        return ROTA_ENOMEM;
    struct rec *recs = (void *)(((uintptr_t)raw + 63u) & ~(uintptr_t)63u);
    for (uint64_t i = 0; i < n; i++) {
        struct rec *r = &recs[i];
        memset(r, 0, sizeof *r);
        atomic_init(&r->word, (uint64_t)1 << 32 | F_FREE);
        atomic_init(&r->due, 0);
        atomic_init(&r->shard, 0);
        r->index = (uint32_t)(first + i);
        r->free_next = (i + 1) % MAG != 0 ? r->index + 1 : NIL;
        r->wnext = NIL;
        r->sband = STAGE_NONE;
        rota_timer_init(&r->timer, rota__service_on_fire);
    }
    svc->chunk_raw[c] = raw;
    svc->chunk_bytes[c] = bytes;
    atomic_store_explicit(&svc->chunks[c], recs, memory_order_release);
    atomic_store_explicit(&svc->nrecords, (uint32_t)(first + n),
                          memory_order_release);
    svc->nchunks = c + 1;
    for (uint64_t i = n; i >= MAG; i -= MAG) { /* chains pop in index order */
        struct rec *head = &recs[i - MAG];
        head->wnext = svc->depot;
        svc->depot = head->index;
        svc->depot_n++;
    }
    return 0;
}

/* Give the shard a full chain from the depot (growing the slab if the
 * depot is empty).  The caller holds the shard's lock. */
static int refill(struct rota_service *svc, struct shard *sh)
{
    int rc = 0;
    pthread_mutex_lock(&svc->grow_mu);
    if (svc->depot == NIL)
        rc = rota__service_add_chunk(svc);
    if (rc == 0) {
        struct rec *head = rec_at(svc, svc->depot);
        svc->depot = head->wnext;
        svc->depot_n--;
        head->wnext = NIL;
        sh->hot = head->index;
        sh->hot_n = MAG;
    }
    pthread_mutex_unlock(&svc->grow_mu);
    return rc;
}

/* Take a free record from the shard; the caller holds its lock. */
static int take_record(struct rota_service *svc, struct shard *sh,
                       uint32_t *out)
{
    if (sh->hot_n == 0) {
        if (sh->spare != NIL) {
            sh->hot = sh->spare;
            sh->hot_n = MAG;
            sh->spare = NIL;
        } else {
            int rc = refill(svc, sh);
            if (rc != 0)
                return rc;
        }
    }
    struct rec *r = rec_at(svc, sh->hot);
    *out = sh->hot;
    sh->hot = r->free_next;
    sh->hot_n--;
    return 0;
}

/* Put a freed record on its shard's chain; a full chain becomes the
 * spare, and the previous spare goes to the depot.  The caller holds the
 * shard's lock. */
void rota__service_free_locked(struct rota_service *svc, struct shard *sh,
                               struct rec *r, uint32_t index)
{
    r->free_next = sh->hot_n != 0 ? sh->hot : NIL;
    sh->hot = index;
    if (++sh->hot_n < MAG)
        return;
    if (sh->spare != NIL) {
        struct rec *head = rec_at(svc, sh->spare);
        pthread_mutex_lock(&svc->grow_mu);
        head->wnext = svc->depot;
        svc->depot = head->index;
        svc->depot_n++;
        pthread_mutex_unlock(&svc->grow_mu);
    }
    sh->spare = sh->hot;
    sh->hot = NIL;
    sh->hot_n = 0;
}

void rota__service_notify_waiters(struct rota_service *svc)
{
    pthread_mutex_lock(&svc->done_mu);
    pthread_cond_broadcast(&svc->done_cv);
    pthread_mutex_unlock(&svc->done_mu);
}

/* Clear `bits` (holds, WAITER, owed) of the word; free the record if that
 * was its last hold.  Wakes cancel_sync() sleepers when RUNNING goes. */
void rota__service_release(struct rota_service *svc, struct rec *r,
                           uint64_t bits)
{
    uint64_t w = atomic_load_explicit(&r->word, memory_order_relaxed);
    uint64_t nw;
    bool freed;
    do {
        nw = settle(w & ~bits, &freed);
    } while (!atomic_compare_exchange_weak_explicit(
        &r->word, &w, nw, memory_order_acq_rel, memory_order_relaxed));
    if ((w & F_WAITER) && !(nw & F_RUNNING))
        rota__service_notify_waiters(svc);
    if (freed) {
        struct shard *sh = shard_of(svc, r);
        rota__lock(&sh->mu);
        rota__service_free_locked(svc, sh, r, r->index);
        rota__unlock(&sh->mu);
    }
}

void rota__service_live_gone(struct rota_service *svc)
{
    if (svc->max_pending != 0)
        atomic_fetch_sub_explicit(&svc->live, 1, memory_order_relaxed);
}

/* ------------------------------------------------------------ staging */

void rota__service_stage_init(struct shard *sh, uint64_t now)
{
    /* Bands up to now's next one go to the wheel directly. */
    sh->stage_next = (now >> STAGE_SHIFT) + 2;
    sh->staged = 0;
    memset(sh->stage_occ, 0, sizeof sh->stage_occ);
    sh->far = NULL;
    sh->far_dead = NULL;
    sh->far_len = sh->far_cap = sh->far_live = 0;
    sh->far_scanning = false;
    sh->far_from = sh->stage_next + STAGE_BANDS;
}

/* The far vector and its hole bitmap, in one block. */
static size_t far_bytes(uint32_t cap)
{
    return (size_t)cap * sizeof(struct far_ent) + cap / 8;
}

static bool far_hole(const struct shard *sh, uint32_t k)
{
    return (sh->far_dead[k / 64] >> (k % 64)) & 1u;
}

static void far_set_hole(struct shard *sh, uint32_t k, bool hole)
{
    uint64_t bit = (uint64_t)1 << (k % 64);
    if (hole)
        sh->far_dead[k / 64] |= bit;
    else
        sh->far_dead[k / 64] &= ~bit;
}

void rota__service_stage_fini(struct shard *sh)
{
    rota__service_free(sh->svc, sh->far, far_bytes(sh->far_cap));
    sh->far = NULL;
    sh->far_dead = NULL;
    sh->far_cap = 0;
}

/* The band of a far entry: at or after far_from, less than 2^32 on. */
static uint64_t far_band(const struct shard *sh, const struct far_ent *e)
{
    return sh->far_from + (uint32_t)(e->band - (uint32_t)sh->far_from);
}

/* Squeeze the holes out of the far vector, keeping the order; no scan
 * runs.  Each moved record learns its new place (independent misses). */
static void far_compact(struct shard *sh)
{
    uint32_t wr = 0;
    for (uint32_t rd = 0; rd < sh->far_len; rd++) {
        if (far_hole(sh, rd))
            continue;
        if (wr != rd) {
            struct far_ent e = sh->far[rd];
            sh->far[wr] = e;
            far_set_hole(sh, wr, false);
            rec_at(sh->svc, e.index)->snext = wr;
        }
        wr++;
    }
    sh->far_len = wr;
}

/* Double the far vector; false if the allocator says no. */
static bool far_grow(struct shard *sh)
{
    uint32_t cap = sh->far_cap != 0 ? 2 * sh->far_cap : FAR_MIN_CAP;
    if (cap <= sh->far_cap || cap > UINT32_MAX / 2)
        return false;
    struct far_ent *v = rota__service_alloc(sh->svc, far_bytes(cap));
    if (v == NULL)
        return false;
    uint64_t *dead = (uint64_t *)(void *)(v + cap);
    memset(dead, 0, cap / 8);
    if (sh->far_len != 0) {
        memcpy(v, sh->far, sh->far_len * sizeof *v);
        memcpy(dead, sh->far_dead, sh->far_cap / 8);
    }
    rota__service_free(sh->svc, sh->far, far_bytes(sh->far_cap));
    sh->far = v;
    sh->far_dead = dead;
    sh->far_cap = cap;
    return true;
}

/* Append the record to the far vector; false if it is full and can
 * neither close holes (none, or a scan runs) nor grow: the caller files
 * the record on a band list or in the wheel instead. */
static bool far_push(struct shard *sh, struct rec *r, uint64_t band,
                     uint64_t deadline)
{
    if (sh->far_len == sh->far_cap) {
        uint32_t holes = sh->far_len - sh->far_live;
        bool can_compact = !sh->far_scanning && holes != 0;
        if (can_compact && holes >= sh->far_len / 2)
            far_compact(sh);
        else if (!far_grow(sh)) {
            if (!can_compact)
                return false;
            far_compact(sh);
        }
    }
    r->sband = STAGE_FAR;
    r->soff = (uint16_t)(deadline & ((1u << STAGE_SHIFT) - 1u));
    r->snext = sh->far_len;
    far_set_hole(sh, sh->far_len, false);
    sh->far[sh->far_len++] = (struct far_ent){r->index, (uint32_t)band};
    sh->far_live++;
    return true;
}

/* Take a staged record off its band list or the far vector.  The shard's
 * lock is held. */
void rota__service_unstage(struct shard *sh, struct rec *r)
{
    if (r->sband == STAGE_FAR) {
        /* A bit in a small bitmap, not the entry: no line of the vector
         * or of a neighbouring record is touched (a miss each). */
        far_set_hole(sh, r->snext, true);
        sh->far_live--;
        r->sband = STAGE_NONE;
        return;
    }
    unsigned b = r->sband;
    if (r->sprev != NIL)
        rec_at(sh->svc, r->sprev)->snext = r->snext;
    else
        sh->stage_head[b] = r->snext;
    if (r->snext != NIL)
        rec_at(sh->svc, r->snext)->sprev = r->sprev;
    else
        sh->stage_tail[b] = r->sprev;
    if (sh->stage_head[b] == NIL)
        sh->stage_occ[b / 64] &= ~((uint64_t)1 << (b % 64));
    r->sband = STAGE_NONE;
    sh->staged--;
}

/* The band number of list `b`, which holds a band in [stage_next,
 * stage_next + STAGE_BANDS). */
static uint64_t band_of_list(const struct shard *sh, unsigned b)
{
    uint64_t first = sh->stage_next;
    uint64_t k = (b - (first % STAGE_BANDS)) % STAGE_BANDS;
    return first + k;
}

/* Put the record in the wheel at `deadline`, or on its band's list when
 * that band is staged.  The shard's lock is held and the record is in
 * neither.  The caller wakes the service thread by the deadline, not by the
 * band's move: before it sleeps the thread moves every band whose move
 * comes before its wheel's next deadline (next_deadline()), so a staged
 * timer due after that sleep ends is moved in time without a wake-up. */
static void file_rec(struct shard *sh, struct rec *r, uint64_t deadline,
                     bool far_ok)
{
    uint64_t band = deadline >> STAGE_SHIFT;
    if (far_ok && band >= sh->far_from && band - sh->far_from < FAR_BANDS &&
        far_push(sh, r, band, deadline))
        return;
    if (band >= sh->stage_next && band - sh->stage_next < STAGE_BANDS) {
        unsigned b = (unsigned)(band % STAGE_BANDS);
        uint64_t bit = (uint64_t)1 << (b % 64);
        r->sband = (uint16_t)b;
        r->soff = (uint16_t)(deadline & ((1u << STAGE_SHIFT) - 1u));
        r->snext = NIL;
        if (sh->stage_occ[b / 64] & bit) {
            r->sprev = sh->stage_tail[b];
            rec_at(sh->svc, r->sprev)->snext = r->index;
        } else {
            r->sprev = NIL;
            sh->stage_head[b] = r->index;
            sh->stage_occ[b / 64] |= bit;
        }
        sh->stage_tail[b] = r->index;
        sh->staged++;
        return;
    }
    r->sband = STAGE_NONE;
    if (r->period != 0)
        rota_timer_arm_periodic(&sh->wheel, &r->timer, deadline, r->period,
                                (enum rota_missed)r->policy);
    else
        rota_timer_arm(&sh->wheel, &r->timer, deadline);
}

/*
 * One step of a far scan, at most *budget entries: every entry due before
 * the target goes to the band lists (or the wheel), in vector order, the
 * rest close up behind them.  Returns true once the scan has ended.
 */
static bool far_scan(struct shard *sh, unsigned *budget)
{
    if (!sh->far_scanning) {
        sh->far_target = sh->stage_next + STAGE_BANDS;
        if (sh->far_live == 0) { /* nothing to move: drop the holes */
            sh->far_len = 0;
            sh->far_from = sh->far_target;
            return true;
        }
        sh->far_scanning = true;
        sh->far_rd = sh->far_wr = 0;
    }
    while (sh->far_rd < sh->far_len) {
        if (*budget == 0)
            return false;
        (*budget)--;
        uint32_t k = sh->far_rd++;
        if (far_hole(sh, k))
            continue;
        struct far_ent e = sh->far[k];
        struct rec *r = rec_at(sh->svc, e.index);
        uint64_t band = far_band(sh, &e);
        if (band < sh->far_target) {
            sh->far_live--;
            file_rec(sh, r, band << STAGE_SHIFT | r->soff, false);
            continue;
        }
        if (sh->far_wr != k) {
            sh->far[sh->far_wr] = e;
            far_set_hole(sh, sh->far_wr, false);
            r->snext = sh->far_wr;
        }
        sh->far_wr++;
    }
    sh->far_len = sh->far_wr;
    sh->far_from = sh->far_target;
    sh->far_scanning = false;
    return true;
}

/*
 * Move the bands that start at most one band after `now` into the wheel,
 * at most STAGE_BATCH records; the shard's lock is held.  Before the band
 * lists' cursor comes within half a horizon of far_from, a far scan moves
 * the far timers due within the horizon onto the lists.  Returns true if
 * work remains (call again before advancing the wheel).
 */
bool rota__service_stage_pump(struct shard *sh, uint64_t now)
{
    uint64_t last = (now >> STAGE_SHIFT) + 1;
    unsigned budget = STAGE_BATCH;
    for (;;) {
        if (sh->far_scanning ||
            sh->far_from <= sh->stage_next + STAGE_BANDS / 2) {
            if (!far_scan(sh, &budget))
                return true;
            continue;
        }
        if (sh->stage_next > last)
            return false;
        if (sh->staged == 0) { /* skip ahead, but not past a far scan */
            uint64_t cap = sh->far_from - STAGE_BANDS / 2;
            sh->stage_next = last + 1 < cap ? last + 1 : cap;
            continue;
        }
        unsigned b = (unsigned)(sh->stage_next % STAGE_BANDS);
        uint64_t bit = (uint64_t)1 << (b % 64);
        uint64_t base = sh->stage_next << STAGE_SHIFT;
        while (sh->stage_occ[b / 64] & bit) { /* in arm order */
            if (budget == 0)
                return true;
            budget--;
            struct rec *r = rec_at(sh->svc, sh->stage_head[b]);
            rota__service_unstage(sh, r);
            uint64_t deadline = base | r->soff;
            if (r->period != 0)
                rota_timer_arm_periodic(&sh->wheel, &r->timer, deadline,
                                        r->period, (enum rota_missed)r->policy);
            else
                rota_timer_arm(&sh->wheel, &r->timer, deadline);
        }
        sh->stage_next++;
    }
}

/* The tick at which the service thread must next move a band of the shard
 * or scan its far vector (ROTA_NEVER if nothing is staged); the shard's
 * lock is held. */
uint64_t rota__service_stage_next(const struct shard *sh)
{
    uint64_t far = ROTA_NEVER;
    if (sh->far_scanning)
        return 0;
    /* A pump at `now` brings stage_next to (now >> STAGE_SHIFT) + 2, and
     * scans when that is within half a horizon of far_from. */
    if (sh->far_live != 0)
        far = (sh->far_from - STAGE_BANDS / 2 - 2) << STAGE_SHIFT;
    if (sh->staged == 0)
        return far;
    unsigned start = (unsigned)(sh->stage_next % STAGE_BANDS);
    for (unsigned k = 0; k <= STAGE_BANDS / 64; k++) {
        unsigned word = (start / 64 + k) % (STAGE_BANDS / 64);
        uint64_t bits = sh->stage_occ[word];
        if (k == 0) /* the lists before start come last, not first */
            bits &= ~(uint64_t)0 << (start % 64);
        else if (k == STAGE_BANDS / 64)
            bits &= ~(~(uint64_t)0 << (start % 64));
        if (bits == 0)
            continue;
        unsigned b = word * 64 + (unsigned)__builtin_ctzll(bits);
        uint64_t band = band_of_list(sh, b);
        uint64_t move = (band - 1) << STAGE_SHIFT;
        return move < far ? move : far;
    }
    return far; /* not reached: staged != 0 */
}

/* ------------------------------------------------------------ arming */

static int arm(struct rota_service *svc, uint64_t deadline, uint64_t period,
               enum rota_missed missed, rota_service_fn *fn, void *arg,
               struct rota_service_handle *out)
{
    if (atomic_load_explicit(&svc->stopping, memory_order_relaxed))
        return ROTA_ESHUTDOWN;
    if (svc->max_pending != 0 &&
        atomic_fetch_add_explicit(&svc->live, 1, memory_order_relaxed) >=
            (int64_t)svc->max_pending) {
        rota__service_live_gone(svc);
        return ROTA_EAGAIN;
    }
    unsigned home = my_id() % svc->nshards;
    struct shard *sh = &svc->shards[home];
    int rc = 0;

    uint32_t index = NIL;
    rota__lock(&sh->mu);
    /* Under the lock: stop looks at this shard after setting the flag. */
    if (atomic_load_explicit(&svc->stopping, memory_order_relaxed))
        rc = ROTA_ESHUTDOWN;
    else
        rc = take_record(svc, sh, &index);
    if (rc != 0) {
        rota__unlock(&sh->mu);
        rota__service_live_gone(svc);
        return rc;
    }
    struct rec *r = rec_at(svc, index);
    uint32_t gen = gen_of(atomic_load_explicit(&r->word, memory_order_relaxed));
    r->fn = fn;
    r->arg = arg;
    r->period = period;
    r->policy = (uint8_t)missed;
    atomic_store_explicit(&r->shard, home, memory_order_relaxed);
    atomic_store_explicit(&r->word,
                          (uint64_t)gen << 32 | F_LIVE |
                              (period != 0 ? F_PERIODIC : 0u),
                          memory_order_release);
    file_rec(sh, r, deadline, true);
    bump(&sh->armed, 1);
    rota__unlock(&sh->mu);

    maybe_wake(svc, deadline);
    if (out != NULL)
        *out = (struct rota_service_handle){index, gen, svc->id};
    return 0;
}

int rota_service_arm_at(struct rota_service *svc, uint64_t deadline_ns,
                        rota_service_fn *fn, void *arg,
                        struct rota_service_handle *out)
{
    if (svc == NULL || fn == NULL)
        return ROTA_EINVAL;
    return arm(svc, ns_to_ticks_ceil(svc, deadline_ns), 0, ROTA_MISSED_SKIP, fn,
               arg, out);
}

int rota_service_arm(struct rota_service *svc, uint64_t delay_ns,
                     rota_service_fn *fn, void *arg,
                     struct rota_service_handle *out)
{
    if (svc == NULL || fn == NULL)
        return ROTA_EINVAL;
    return arm(svc, deadline_after(svc, delay_ns), 0, ROTA_MISSED_SKIP, fn, arg,
               out);
}

int rota_service_arm_periodic_at(struct rota_service *svc,
                                 uint64_t first_deadline_ns, uint64_t period_ns,
                                 enum rota_missed missed, rota_service_fn *fn,
                                 void *arg, struct rota_service_handle *out)
{
    if (svc == NULL || fn == NULL || period_ns == 0 ||
        (unsigned)missed > ROTA_MISSED_DELAY)
        return ROTA_EINVAL;
    return arm(svc, ns_to_ticks_ceil(svc, first_deadline_ns),
               ns_to_ticks_ceil(svc, period_ns), missed, fn, arg, out);
}

int rota_service_arm_periodic(struct rota_service *svc, uint64_t first_delay_ns,
                              uint64_t period_ns, enum rota_missed missed,
                              rota_service_fn *fn, void *arg,
                              struct rota_service_handle *out)
{
    if (svc == NULL || fn == NULL || period_ns == 0 ||
        (unsigned)missed > ROTA_MISSED_DELAY)
        return ROTA_EINVAL;
    return arm(svc, deadline_after(svc, first_delay_ns),
               ns_to_ticks_ceil(svc, period_ns), missed, fn, arg, out);
}

/* -------------------------------------------------------- touch, cancel */

/*
 * Lock the shard of the timer `h` names, if it is still that timer: the
 * word's generation is read first (a stale handle needs no lock), then
 * checked again under the lock, where the record cannot change shards.
 * Returns the shard locked and the word in *w, or NULL.
 */
static struct shard *lock_timer(struct rota_service *svc, struct rec *r,
                                struct rota_service_handle h, uint64_t *w)
{
    *w = atomic_load_explicit(&r->word, memory_order_acquire);
    if (gen_of(*w) != h.generation)
        return NULL;
    struct shard *sh = shard_of(svc, r);
    rota__lock(&sh->mu);
    *w = atomic_load_explicit(&r->word, memory_order_acquire);
    if (gen_of(*w) != h.generation) {
        rota__unlock(&sh->mu);
        return NULL;
    }
    return sh;
}

static int touch(struct rota_service *svc, struct rota_service_handle h,
                 uint64_t deadline)
{
    if (atomic_load_explicit(&svc->stopping, memory_order_relaxed))
        return ROTA_ESHUTDOWN;
    struct rec *r = rec_of(svc, h);
    uint64_t w;
    struct shard *sh = r != NULL ? lock_timer(svc, r, h, &w) : NULL;
    if (sh == NULL)
        return ROTA_ENOENT;
    /* Neither staged nor in the wheel: ended, or a one-shot timer already
     * due.  A staged timer is filed again by its new deadline. */
    int rc = ROTA_ENOENT;
    if ((w & F_LIVE) && r->sband != STAGE_NONE) {
        rota__service_unstage(sh, r);
        file_rec(sh, r, deadline, true);
        rc = 0;
    } else if ((w & F_LIVE) && rota_timer_pending(&r->timer)) {
        rc = rota_timer_touch(&sh->wheel, &r->timer, deadline);
    }
    if (rc == 0)
        bump(&sh->touched, 1);
    rota__unlock(&sh->mu);
    if (rc != 0)
        return rc;
    maybe_wake(svc, deadline);
    return 0;
}

int rota_service_touch(struct rota_service *svc,
                       struct rota_service_handle timer, uint64_t delay_ns)
{
    if (svc == NULL)
        return ROTA_EINVAL;
    return touch(svc, timer, deadline_after(svc, delay_ns));
}

int rota_service_touch_at(struct rota_service *svc,
                          struct rota_service_handle timer,
                          uint64_t deadline_ns)
{
    if (svc == NULL)
        return ROTA_EINVAL;
    return touch(svc, timer, ns_to_ticks_ceil(svc, deadline_ns));
}

/* The outcome; *cleared tells whether this call cleared LIVE. */
static int cancel(struct rota_service *svc, struct rota_service_handle h,
                  bool *cleared)
{
    *cleared = false;
    struct rec *r = rec_of(svc, h);
    if (r == NULL)
        return ROTA_SERVICE_NOT_PENDING;
    /* The staging fields are on the second line (and, free chains being
     * LIFO, the next arm on this shard writes it): start both misses at
     * once. */
    __builtin_prefetch(&r->due, 1);
    uint64_t w = atomic_load_explicit(&r->word, memory_order_acquire);
    if (gen_of(w) == h.generation && !(w & F_LIVE)) /* no lock needed */
        return (w & F_RUNNING) ? ROTA_SERVICE_RUNNING
                               : ROTA_SERVICE_NOT_PENDING;
    struct shard *sh = lock_timer(svc, r, h, &w);
    if (sh == NULL)
        return ROTA_SERVICE_NOT_PENDING;
    uint64_t nw;
    bool freed;
    do {
        if (!(w & F_LIVE)) {
            rota__unlock(&sh->mu);
            return (w & F_RUNNING) ? ROTA_SERVICE_RUNNING
                                   : ROTA_SERVICE_NOT_PENDING;
        }
        nw = settle(w & ~(uint64_t)F_LIVE, &freed);
    } while (!atomic_compare_exchange_weak_explicit(
        &r->word, &w, nw, memory_order_acq_rel, memory_order_acquire));
    /* Still under the lock: the service thread cannot fire it meanwhile. */
    if (r->sband != STAGE_NONE)
        rota__service_unstage(sh, r);
    else if (rota_timer_pending(&r->timer))
        rota_timer_cancel(&sh->wheel, &r->timer);
    if (freed) {
        rota__service_free_locked(svc, sh, r, h.index);
    }
    bump(&sh->cancelled, 1);
    rota__unlock(&sh->mu);
    *cleared = true;
    rota__service_live_gone(svc);
    return (w & F_RUNNING) ? ROTA_SERVICE_RUNNING : ROTA_SERVICE_CANCELLED;
}

int rota_service_try_cancel(struct rota_service *svc,
                            struct rota_service_handle timer)
{
    bool cleared;
    if (svc == NULL)
        return ROTA_EINVAL;
    return cancel(svc, timer, &cleared);
}

/* Sleep until the record is no longer running this generation. */
static void wait_not_running(struct rota_service *svc,
                             struct rota_service_handle h)
{
    struct rec *r = rec_at(svc, h.index);
    uint64_t w = atomic_load_explicit(&r->word, memory_order_acquire);
    for (;;) {
        if (gen_of(w) != h.generation || !(w & F_RUNNING))
            return;
        if (w & F_WAITER)
            break;
        if (atomic_compare_exchange_weak_explicit(&r->word, &w, w | F_WAITER,
                                                  memory_order_acquire,
                                                  memory_order_acquire))
            break;
    }
    pthread_mutex_lock(&svc->done_mu);
    for (;;) {
        w = atomic_load_explicit(&r->word, memory_order_acquire);
        if (gen_of(w) != h.generation || !(w & F_RUNNING))
            break;
        pthread_cond_wait(&svc->done_cv, &svc->done_mu);
    }
    pthread_mutex_unlock(&svc->done_mu);
}

int rota_service_cancel_sync(struct rota_service *svc,
                             struct rota_service_handle timer)
{
    bool cleared;
    if (svc == NULL)
        return ROTA_EINVAL;
    if (rota__service_tl_cb.svc == svc && timer.service == svc->id &&
        rota__service_tl_cb.index == timer.index &&
        rota__service_tl_cb.gen == timer.generation)
        return ROTA_EDEADLK;
    int rc = cancel(svc, timer, &cleared);
    if (rc == ROTA_SERVICE_RUNNING)
        wait_not_running(svc, timer);
    return cleared ? ROTA_SERVICE_CANCELLED : ROTA_SERVICE_NOT_PENDING;
}
