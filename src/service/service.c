/* SPDX-License-Identifier: MIT */
/*
 * service.c - rota/service.h: a thread-safe timer service on the core wheel.
 * This file: the design, and the API's submission side (arm, touch,
 * cancel).  service_internal.h lists the other files.
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
 *   Staging.  Timers due more than a band (2048 ticks) ahead wait on their
 *   shard's band lists, and those due minutes ahead on its far vector,
 *   before they enter the wheel: so no cascade or exact-deadline scan holds
 *   a shard's lock and the service thread for milliseconds.  The design is
 *   in service_stage.c; a staged timer is LIVE and not in the wheel, and
 *   cancel, touch and stop take it off its list or vector.  The service
 *   thread moves a band after it has fired what is due, ahead of time and
 *   in slices, and stops to fire whatever comes due meanwhile (see what
 *   the pass costs, below).
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
 *   - sync-cancel (docs/DESIGN.md): cancel_sync clears LIVE (no future start), then waits for
 *     RUNNING to clear; callbacks start only through a CAS that needs LIVE.
 *   - Memory: a cancelled timer's record is unfiled and freed by the
 *     cancel itself (no cancelled timer lingers: netty PR#2561).
 *
 * WHAT AN OPERATION COSTS
 *   Submission is the service's cost: in S1 (one producer, 1e5 live
 *   timers) the producer spends ~98% of the process's CPU time and the
 *   service thread ~5-10 ns per pair (it wakes once per fire, ~1,500
 *   times per 2e6 pairs); in S3 (a request timeout armed and cancelled
 *   by one thread, 1% fire) the service thread's share is its wake per
 *   fire.  bench/counts/service_counts.c counts one thread's pairs under
 *   callgrind (--cache-sim=yes, 2e5 pairs); per arm + cancel pair, with
 *   the loop's own ~68 (S1) and ~78 (S3: two splitmix calls each):
 *
 *                            S1 Ir  refs  D1 misses    S3 Ir  refs
 *       rota-service           394   154       2.9       421   149
 *       mutex-heap2            336   132       8.0       304   124
 *
 *   (rota's S1 row moves by ~10 instructions between runs of one
 *   binary: under valgrind the service thread's progress through the
 *   staging, which the producer's cancels meet, follows the wall clock.)
 *
 *   An S1 pair is ~190 instructions of arm (~45 appending to the far
 *   vector, ~10 for the clock call, ~8 for the lock and unlock, the rest
 *   the checks, the record's take and fill and the handle) and ~130 of
 *   cancel (~15 punching the far entry's hole, ~8 for the lock); an S3
 *   pair files on a band list (~50) and unlinks from it (~30).  The rest
 *   is spread thin: no step of either path costs more than ~15
 *   instructions, so trimming has little left to give.  The heap
 *   executes fewer instructions but misses almost three times as often
 *   (a sift walks random nodes); a pair of rota's misses once, on its
 *   record's first line (see struct rec), plus the far vector's hole bit
 *   and the caller's handle.  Its locked instructions per pair are two,
 *   the compare-and-swap of each lock: the unlock is a release store
 *   (service_lock.h), where the heap's mutexes spend four (a CAS and an
 *   exchange per hold).  A locked instruction waits for the stores before
 *   it, among them the cancel's store to its record, which missed; the
 *   release store lets that miss drain while the next call runs, which
 *   shows in S3 (at T = 1 a median arm + cancel of ~110 ns and ~100 ns
 *   of CPU per request, ~15% below an exchange's) more than in S1.
 *   Futex calls are rare on both sides: ~1.4 per 1,000 S1 pairs (the
 *   service thread meeting the producer's lock), the heap's ~2.9.
 *
 *   Reading S1 with one producer: its pairs per second are the share of
 *   a CPU the producer gets, so on a shared 2-vCPU machine they move by
 *   2x between runs of one build, for both services alike, while CPU per
 *   pair moves by ~15%.  The heap's CPU per pair swings the most (~190 ns
 *   with a core to itself, ~300 ns beside other tenants): its extra L1
 *   misses hit the core's L2 only while nobody else uses it.  A ratio of
 *   pairs per second is therefore only as good as the two runs it comes
 *   from (one build gave 0.46x to 1.16x in five runs); CPU per pair and
 *   the counts are the figures to compare.
 *
 *   A per-thread owner path would remove those two locked instructions
 *   and nothing else: with one producer its home shard is already
 *   private in all but the lock word, which the service thread takes
 *   ~once per fire.  The owner cannot hand its timers over, since a
 *   producer may block for minutes (in epoll_wait, say) with timers due,
 *   so the path is an asymmetric lock: the owner enters with a store of
 *   its own flag and a load of the word, and every other thread takes
 *   the word by compare-and-swap, then forces a barrier on every thread
 *   of the process (membarrier(2), PRIVATE_EXPEDITED) before it reads
 *   the flag.  It is not built: measured on builds kept outside the
 *   library, on the same 2-vCPU VM, it buys too little.
 *   - Counts.  With the lock's take and drop a plain load and store, an
 *     S1 pair executes 394 instructions and 156 data references against
 *     394 and 154, with the same 2.9 D1 misses (S3: 421 instructions and
 *     151 references against 421 and 149).  A locked instruction costs
 *     time, not instructions.
 *   - Time.  That plain lock is no lock: the service thread, entering
 *     with the producer, crashes S1 in its first repetition and loses an
 *     S3 wake.  The asymmetric lock completes and passes the checks.
 *     Over six alternating pairs of processes S1's CPU per pair is 324
 *     ns against 322, 0.84x the heap's in the same processes against
 *     0.95x: within the noise.  In the quieter half of them S3's median
 *     arm + cancel at T = 1 is 107 ns against 110 (the heap 115, the
 *     floor 77); at T = 2 and 4 the service thread's barriers, ~1.3 per
 *     fire, interrupt the running owners, and S3's CPU per request rises
 *     (3.8x the floor at T = 2, against 2.1x).
 *   - The barrier.  A membarrier costs its caller ~0.3 us when no other
 *     thread of the process is running, and ~2.6 us when it must
 *     interrupt one, which loses ~1.5 us.  One per pass adds that to
 *     every fire's lateness, against S2's p50 of ~4 us.  ThreadSanitizer
 *     does not model it, so the tests would check another path than the
 *     one that runs.
 *   So the lock is not what separates S1 from half the heap's CPU, nor
 *   S3 from twice the floor.  Past the loop's 68 instructions an S1 pair
 *   spends ~70 on staging (the far vector's append, hole bit and
 *   compaction), ~55 on the record (index to chunk, free chain,
 *   generation), ~50 on checks (fork, stop, handle, generation twice),
 *   ~35 on the clock (the call and the ticks), ~33 on two calls'
 *   prologues and epilogues and ~16 on the two holds, the rest on the
 *   handle, the counters and the wake test.  Its time goes to misses:
 *   ~300 ns of CPU for ~400 instructions, the handle and the record
 *   behind it two random lines of arrays larger than L2, where the heap
 *   touches one, the caller's node.  What would remove that is another
 *   structure, not a lighter lock: timers embedded in the caller's
 *   objects (no handle, no record, no generation) on a wheel the owning
 *   thread advances itself.  That is the floor, ~35-50 ns of CPU per
 *   request, and it gives up arming from any thread and firing while
 *   the owner blocks.
 *
 *   The service thread's pass sets how late a timer fires.  In S2 (1e5
 *   timers over a second, one due every ~10 us on one shard, each
 *   callback timed against its deadline) a fire's lateness is made of:
 *   the deadline rounded up to a tick (< 1 us); the sleep's own latency,
 *   from the time asked to the thread running again - a condition
 *   variable's timed wait on CLOCK_MONOTONIC with 1 ns of timer slack,
 *   ~3.7 us at the median in a trace of every pass, as the heap's thread
 *   sleeps (S2's p50 is ~4 us for both); then the pass, ~0.9 us at the
 *   median to fire a shard's due timers; and the staging done ahead.  A
 *   band's move costs ~200 ns a record in misses, ~45 us for S2's ~200
 *   records every 2 ms, which would hold ~1% of S2's fires for up to
 *   ~45 us if it ran in front of them.  So
 *   the work ahead waits until every shard has fired and goes in slices
 *   of STAGE_SLICE records with a clock read (~20 ns) between them; the
 *   thread leaves it to fire what has come due, so a fire waits at most
 *   a slice (~1.5 us) behind it.  A pass that finds no work ahead takes
 *   each shard's lock once.  S2's p99 is then the heap's (12.9 us
 *   against 13.8 with 0 workers, 51.2 against 56.0 with 2, in one run
 *   on this project's 2-vCPU Xeon VM; under SCHED_FIFO, which keeps the
 *   other tenants out of the tail, 7.6 against 6.9-8.1 and 28.5 against
 *   27.9-29.3).
 *
 *   The max is the VM's, not the design's (it moves by 5x between runs
 *   of either).  Without SCHED_FIFO on a loaded machine the tail is the
 *   scheduler's: of the passes with a fire more than 15 us late, 586 of
 *   634 had woken more than that after the time they asked for.
 *
 *   In S3 the service thread does not set the arm + cancel tail: with
 *   no timer left to fire (no fires, no moves with records in them) the
 *   p99 at T = 1 is the same (201 ns against 212, the floor's 90), so
 *   the distance from the floor is the submission path's (p50 130 ns
 *   against 83: its misses, above).
 *
 *   The rules the paths keep:
 *   - A pair touches its own record and shard: the record's first line
 *     (the word, the staging fields, fn and arg; the second, the wheel's,
 *     only once the record enters the wheel), and the shard's lock, free
 *     chain and staging arrays, written by one thread in the common case
 *     (a thread arms on its home shard).
 *   - No divide per operation: the default tick divides by a constant,
 *     the home shard is cached per thread (the modulo runs once), and
 *     rec_at() is a shift, a bit scan and a biased chunk address.
 *   - The system clock is read in place (clock_gettime()), once per
 *     arm_in or touch_in; arm_at and the cancels read no clock.
 *   - arm() and cancel() are inlined into the API functions, and the
 *     slab's take and free are inline with out-of-line slow paths, so the
 *     common path saves registers once.
 *   - A cancel of a pending timer that is neither queued nor running
 *     decides with a plain store under the shard lock: no other thread
 *     writes such a word then (the fire path sets QUEUED under the lock,
 *     and only the holder of a hold clears it), so the compare-and-swap
 *     is kept for words that carry a hold.
 *   - The service thread reads the clock once per pass over the shards
 *     and once per slice of staging done ahead, and is woken only by an
 *     arm or touch whose deadline is earlier than the one it sleeps
 *     until.
 *
 * ALTERNATIVES REJECTED (measured on this project's 2-vCPU VM, S1 of
 * bench/service/service_bench.c: arm + cancel pairs with 1e5 live timers)
 *   - A lock-free MPSC queue drained by the service thread (Netty; the
 *     first version of this file): each record's state word decided the
 *     operation with a CAS and the record was queued once for the service
 *     thread to file or unfile.  Correct, but every pair cost the producer
 *     ~530 ns of CPU - its atomics missed on lines the service thread had
 *     just written - plus ~320 ns on the service thread, against ~450 ns
 *     for the whole pair done inline on a shard, and the mutex heap ran
 *     ~1.4x faster than it.  A queue only pays when the consumer's work is
 *     cheaper than the handoff; here it is not.
 *   - One mutex around one wheel or heap (bench/service/service_heap.c): producers
 *     serialise and the structure's cache lines bounce between them.
 *   - Lazy cancel (leave cancelled timers in the wheel until their slot
 *     comes due, netty before PR#2561): memory held for the full delay.
 *     The far vector's holes are lazy only in a bit each: the record is
 *     freed at once and the holes are closed by the next scan (~1 s) or
 *     when they are half of a full vector.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads */

#include "service_internal.h"

_Thread_local struct rota__service_cb rota__service_tl_cb;
_Thread_local const struct rota_service *rota__service_tl_svc;

/* Each thread gets a number on first use: its home shard follows. */
static _Thread_local unsigned tl_id = UINT_MAX;
static atomic_uint next_id;

/* The home shard of the last service this thread armed on: the modulo
 * is a divide, paid once per thread and service instead of per arm. */
static _Thread_local uint64_t tl_home_svc; /* service ids start at 1 */
static _Thread_local unsigned tl_home;

static unsigned home_shard(const struct rota_service *svc)
{
    if (tl_home_svc == svc->id)
        return tl_home;
    if (tl_id == UINT_MAX)
        tl_id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
    tl_home = tl_id % svc->nshards;
    tl_home_svc = svc->id;
    return tl_home;
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
    /* The default tick divides by a constant: a multiply, where a divide
     * by a variable costs ~40 cycles on every arm. */
    uint64_t t = svc->tick_ns == 1000
                     ? ns / 1000u + (ns % 1000u != 0)
                     : ns / svc->tick_ns + (ns % svc->tick_ns != 0);
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

/* ------------------------------------------------------------ arming */

/* Inlined into each arm call: one prologue instead of two, and the
 * constant arguments fold (S1, S3: ~20 instructions per arm). */
static inline __attribute__((always_inline)) int
arm(struct rota_service *svc, uint64_t deadline, uint64_t period,
    enum rota_missed missed, rota_service_fn *fn, void *arg,
    struct rota_service_handle *out)
{
    if (forked(svc))
        return ROTA_EFORK;
    if (atomic_load_explicit(&svc->stopping, memory_order_relaxed))
        return ROTA_ESHUTDOWN;
    if (svc->max_pending != 0 &&
        atomic_fetch_add_explicit(&svc->live, 1, memory_order_relaxed) >=
            (int64_t)svc->max_pending) {
        rota__service_live_gone(svc);
        return ROTA_EAGAIN;
    }
    unsigned home = home_shard(svc);
    struct shard *sh = &svc->shards[home];
    int rc = 0;

    struct rec *r = NULL;
    rota__lock(&sh->mu);
    /* Under the lock: stop looks at this shard after setting the flag. */
    if (atomic_load_explicit(&svc->stopping, memory_order_relaxed))
        rc = ROTA_ESHUTDOWN;
    else
        r = rota__service_take_record(svc, sh, &rc);
    if (r == NULL) {
        rota__unlock(&sh->mu);
        rota__service_live_gone(svc);
        return rc;
    }
    uint32_t index = r->index;
    uint32_t gen = gen_of(atomic_load_explicit(&r->word, memory_order_relaxed));
    r->fn = fn;
    r->arg = arg;
    if (period != 0) { /* a one-shot arm leaves the second line alone */
        r->pt.sched_ = rota__sched(period, missed);
    }
    atomic_store_explicit(&r->shard, home, memory_order_relaxed);
    atomic_store_explicit(&r->word,
                          (uint64_t)gen << 32 | F_LIVE |
                              (period != 0 ? F_PERIODIC : 0u),
                          memory_order_release);
    rota__service_file(sh, r, deadline, true);
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

int rota_service_arm_in(struct rota_service *svc, uint64_t delay_ns,
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
    uint64_t period = ns_to_ticks_ceil(svc, period_ns);
    if (period > ROTA_MAX_PERIOD) /* the core's limit */
        return ROTA_EINVAL;
    return arm(svc, ns_to_ticks_ceil(svc, first_deadline_ns), period, missed,
               fn, arg, out);
}

int rota_service_arm_periodic_in(struct rota_service *svc,
                                 uint64_t first_delay_ns, uint64_t period_ns,
                                 enum rota_missed missed, rota_service_fn *fn,
                                 void *arg, struct rota_service_handle *out)
{
    if (svc == NULL || fn == NULL || period_ns == 0 ||
        (unsigned)missed > ROTA_MISSED_DELAY)
        return ROTA_EINVAL;
    uint64_t period = ns_to_ticks_ceil(svc, period_ns);
    if (period > ROTA_MAX_PERIOD) /* the core's limit */
        return ROTA_EINVAL;
    return arm(svc, deadline_after(svc, first_delay_ns), period, missed, fn,
               arg, out);
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
    if (forked(svc))
        return ROTA_EFORK;
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
        rota__service_file(sh, r, deadline, true);
        rc = 0;
    } else if ((w & F_LIVE) && rota_timer_pending(&r->pt.timer)) {
        rc = rota_timer_touch_at(&sh->wheel, &r->pt.timer, deadline);
    }
    if (rc == 0)
        bump(&sh->touched, 1);
    rota__unlock(&sh->mu);
    if (rc != 0)
        return rc;
    maybe_wake(svc, deadline);
    return 0;
}

int rota_service_touch_in(struct rota_service *svc,
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

/* The outcome; *cleared tells whether this call cleared LIVE.  Inlined
 * into try_cancel() and cancel_sync(), as arm() is. */
static inline __attribute__((always_inline)) int
cancel(struct rota_service *svc, struct rota_service_handle h, bool *cleared)
{
    *cleared = false;
    struct rec *r = rec_of(svc, h);
    if (r == NULL)
        return ROTA_SERVICE_NOT_PENDING;
    uint64_t w = atomic_load_explicit(&r->word, memory_order_acquire);
    if (gen_of(w) == h.generation && !(w & F_LIVE)) /* no lock needed */
        return (w & F_RUNNING) ? ROTA_SERVICE_RUNNING
                               : ROTA_SERVICE_NOT_PENDING;
    struct shard *sh = lock_timer(svc, r, h, &w);
    if (sh == NULL)
        return ROTA_SERVICE_NOT_PENDING;
    uint64_t nw;
    bool freed;
    if ((w & (F_LIVE | HOLDS)) == F_LIVE) {
        /* Pending and neither queued nor running: under its shard's lock
         * no other thread writes such a word (the holds' owners write it
         * only while they hold it, the fire path only under this lock),
         * so a store decides, without a locked instruction. */
        nw = settle(w & ~(uint64_t)F_LIVE, &freed);
        atomic_store_explicit(&r->word, nw, memory_order_release);
    } else {
        do {
            if (!(w & F_LIVE)) {
                rota__unlock(&sh->mu);
                return (w & F_RUNNING) ? ROTA_SERVICE_RUNNING
                                       : ROTA_SERVICE_NOT_PENDING;
            }
            nw = settle(w & ~(uint64_t)F_LIVE, &freed);
        } while (!atomic_compare_exchange_weak_explicit(
            &r->word, &w, nw, memory_order_acq_rel, memory_order_acquire));
    }
    /* Still under the lock: the service thread cannot fire it meanwhile. */
    if (r->sband != STAGE_NONE)
        rota__service_unstage(sh, r);
    else if (rota_timer_pending(&r->pt.timer))
        rota_timer_cancel(&sh->wheel, &r->pt.timer);
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
    if (forked(svc))
        return ROTA_EFORK;
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
    if (forked(svc))
        return ROTA_EFORK;
    if (rota__service_tl_cb.svc == svc && timer.service == svc->id &&
        rota__service_tl_cb.index == timer.index &&
        rota__service_tl_cb.gen == timer.generation)
        return ROTA_EDEADLK;
    int rc = cancel(svc, timer, &cleared);
    if (rc == ROTA_SERVICE_RUNNING)
        wait_not_running(svc, timer);
    return cleared ? ROTA_SERVICE_CANCELLED : ROTA_SERVICE_NOT_PENDING;
}
