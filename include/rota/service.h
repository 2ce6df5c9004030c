/* SPDX-License-Identifier: MIT */
/*
 * rota/service.h - a thread-safe timer service: arm from any thread, fire
 * on the service thread or a worker pool, cancel safely.
 *
 * A service owns rota wheels (rota.h, one per shard), one service thread
 * that drives them and, optionally, N worker threads that run callbacks.  It is the shared
 * timer of a whole process (Netty's HashedWheelTimer) or the periodic-task
 * engine of a robotics runtime (Apollo Cyber RT's 2 ms timer), without the
 * bugs those are known for:
 *   - the service thread sleeps until the next deadline, never once per
 *     tick: no wake-up while nothing is due (Netty, go-zero tick while
 *     idle).  A submission with an earlier deadline wakes it;
 *   - submission takes no global lock: timers live on several wheels,
 *     each behind its own lock, and a thread arms on its own one (see
 *     SUBMISSION), so producer threads do not serialise (tokio#6504);
 *   - timers are named by {index, generation} handles into a slab the
 *     service owns, so a stale handle is rejected with ROTA_ENOENT and can
 *     never reach a newer timer (Agrona, arduino-timer#76);
 *   - a cancelled timer whose callback was already queued for a worker does
 *     not run (the use-after-free of apollo#15810), and cancel_sync() waits
 *     for a running callback (the Linux timer_delete_sync() contract);
 *   - with workers, one slow callback does not delay every other timer
 *     (netty#11724);
 *   - periodic timers follow the core's drift-free schedule and missed-tick
 *     policies, and each callback learns its lateness.
 *
 * TIME
 *   Public times are nanoseconds of the service's clock (CLOCK_MONOTONIC
 *   unless the config gives another: CLOCK_BOOTTIME, which counts suspend,
 *   or a clock of your own).  The wheel runs on ticks of
 *   `tick_ns` (default 1 us): a deadline is rounded up to a whole tick, so a
 *   timer never fires before the clock has reached the time asked for, and
 *   fires at most one tick plus scheduling delay after it.  Names follow
 *   rota.h's rule (NAMES FOR TIME): the `_in` functions take a delay,
 *   counted from the clock's time when the call reads it; the `_at`
 *   functions take an absolute deadline (rota_service_now() gives the
 *   clock's time).  Sums saturate: a huge delay means "practically never",
 *   it never wraps into the past.  A period is rounded up to whole ticks:
 *   choose a tick_ns that divides your periods for an exact schedule.
 *
 * HANDLES
 *   Arming returns a struct rota_service_handle, a value to copy freely.  It
 *   names one timer from arm until the timer ends: a one-shot timer ends
 *   when its callback returns, or when it is cancelled or handed back by
 *   rota_service_stop(); a periodic timer ends when it is cancelled or
 *   handed back (and its running callback, if any, has returned).  After
 *   that the handle is stale: every call given it reports "not pending"
 *   and never affects another timer, even one that reuses the same slot
 *   (each reuse bumps a 32-bit generation; a stale handle could only alias
 *   after 2^32 reuses of one slot).  A handle also names its service: any
 *   other service given it reports "not pending" and leaves its own timers
 *   alone.  The zero handle is never valid.
 *
 * THE CANCEL CONTRACT
 *   A callback has "started" once the service has decided to run it; from
 *   then until it returns it is "running".  The service decides atomically,
 *   so every cancel either happens before the start (the callback does not
 *   run) or after it.
 *
 *   rota_service_try_cancel() never waits for a callback (it may take the
 *   timer's shard lock for O(1) work) and returns one of:
 *     ROTA_SERVICE_CANCELLED    the timer was pending; its callback will not
 *                               start (again).  This includes a timer that
 *                               had come due and whose callback was queued
 *                               for a worker but had not started: it will
 *                               never run.
 *     ROTA_SERVICE_NOT_PENDING  nothing to cancel: the timer fired and its
 *                               callback has returned, or it was cancelled or
 *                               handed back already, or the handle is stale.
 *     ROTA_SERVICE_RUNNING      its callback is running right now (possibly
 *                               on the calling thread, from inside it).  It
 *                               will not start again: a periodic timer that
 *                               was still pending is cancelled by this call.
 *                               The running invocation may still be using
 *                               whatever it uses: wait with
 *                               rota_service_cancel_sync() before freeing.
 *
 *   rota_service_cancel_sync() cancels as try_cancel() does and then, if the
 *   callback is running, waits until it has returned.  When it returns 0 or
 *   1 the callback is not running and will never run again, so the caller
 *   may free what the callback uses.  Called from the timer's own callback
 *   it would wait for itself: it returns ROTA_EDEADLK and changes nothing
 *   (use try_cancel() there).  It must not be called while holding a lock
 *   the callback takes, nor from a callback whose timer another callback may
 *   be cancel_sync()-ing at the same time (each would wait for the other),
 *   exactly as with timer_delete_sync().
 *
 * THREAD SAFETY
 *   Every function may be called from any thread at any time, including
 *   from callbacks, with these exceptions: rota_service_destroy() must be
 *   the last call on a service, made when no other thread is using it (it
 *   returns ROTA_EDEADLK from the service's own threads); rota_service_sync(),
 *   rota_service_stop() and rota_service_check() return ROTA_EDEADLK from
 *   the service's threads (a callback or stop's hand-back function).
 *   No global lock: arm, touch, try_cancel and the cancelling half of
 *   cancel_sync() take the lock of one shard for O(1) work (see
 *   SUBMISSION), never held while user code runs; try_cancel() and
 *   cancel_sync() of a timer that has ended take no lock at all.  An arm or
 *   touch that moves the earliest deadline wakes the service thread through
 *   the clock's wake function.  A callback of one timer never runs
 *   concurrently with itself; callbacks of different timers run
 *   concurrently when there are workers.  Everything a
 *   thread did before arming a timer (or touching it) happens-before that
 *   timer's callback; everything a callback did happens-before the return
 *   of a cancel_sync() that waited for it and of a rota_service_sync().
 *
 * CALLBACK CONTEXT
 *   A callback runs on the service thread (workers = 0) or on a worker.  It
 *   may arm, touch and cancel any timer, its own included (try_cancel() on
 *   itself returns ROTA_SERVICE_RUNNING and stops a periodic timer), and
 *   cancel_sync() other timers.  With workers = 0 every callback delays the
 *   ones after it; keep them short or use workers.
 *
 * SUBMISSION (how it works; the details and the measurements behind the
 * choice are in the design essay of the service's source)
 *   The service keeps `shards` wheels, each behind its own mutex with its
 *   own free records.  Each thread has a home shard (threads are spread
 *   round-robin), where its arms go; touch and cancel lock the timer's own
 *   shard.  Every operation does its wheel work at once, in O(1), and
 *   decides with one compare-and-swap on the timer's state word, so
 *   threads arming and cancelling their own timers never share a lock or a
 *   cache line, and nothing is queued per operation (nor allocated, but
 *   for the amortised growth of a far vector: see MEMORY).  The
 *   service thread takes each shard's lock briefly to fire what is due
 *   (at most 256 timers per hold) and to read its next deadline.  Equal
 *   deadlines fire in arm order among timers armed by one thread.
 *
 * MEMORY
 *   Timer records (128 bytes each on x86-64, two cache lines: the first
 *   holds all that arm and cancel touch until the timer enters its wheel,
 *   a band or two before its deadline) live in a slab that starts with
 *   `initial_capacity` records and grows in chunks, each twice the previous one, when every
 *   record is in use; records never move and are reused, and chunks are
 *   freed only by rota_service_destroy().  A record is in use from arm until
 *   its timer has ended: a cancel unfiles and frees it at once (nothing
 *   lingers in the wheel), a fired one-shot timer's record is freed when
 *   its callback returns.  Free records circulate in chains of 64 between
 *   the shards and a common depot (a magazine allocator), so a shard whose
 *   timers other threads cancel does not hoard records; the slab grows
 *   only when the depot is empty.  Timers due more than ~2 s ahead
 *   (and at most ~134 s) also take an 8-byte entry in their shard's far
 *   vector, which doubles when full (so arm may allocate, rarely; if it
 *   cannot, the timer is filed nearer the wheel and arm still succeeds,
 *   though equal deadlines may then fire out of arm order); a
 *   cancelled timer's entry is a hole until the service thread's next
 *   pass over the vector (about once a second) or until holes are half of
 *   a full vector.  All memory comes from the allocator in the
 *   config (malloc/free when NULL).
 *
 * SHUTDOWN
 *   rota_service_stop() stops the service thread and the workers (a running
 *   callback is allowed to return), then hands every pending timer back
 *   through a function, each counted as cancelled; arm and touch return
 *   ROTA_ESHUTDOWN afterwards; try_cancel() and cancel_sync() report
 *   ROTA_SERVICE_NOT_PENDING.  An arm racing with stop either fails with
 *   ROTA_ESHUTDOWN or succeeds and is handed back: no timer is lost.
 *   rota_service_destroy() stops the service if needed (handing nothing to
 *   anyone) and frees everything; it accepts NULL.
 *
 * FORK
 *   fork() is safe at any time, from any thread, a callback included, and
 *   the parent's services carry on untouched.  A child gets a frozen copy
 *   of each service: its threads are not copied (fork never copies
 *   threads), its timers never fire there, and it may only be released:
 *     - arm, touch, try_cancel, cancel_sync and sync return ROTA_EFORK:
 *       the service belongs to the parent process;
 *     - rota_service_stop() hands every timer pending at the fork back to
 *       the calling thread, without running it, so that the child can
 *       free its copy of what the timers' args point to (a timer whose
 *       callback was running at the fork is handed back if periodic; a
 *       one-shot one had fired);
 *     - rota_service_destroy() frees the copy's memory (it joins nothing
 *       and never blocks); rota_service_check() checks the copy on the
 *       calling thread (not holding against it a record or a count that a
 *       thread of the parent's was handing over outside a lock at the
 *       fork: such a record is lost to the copy, never given out twice);
 *       rota_service_now() and rota_service_stats() work (the counters
 *       may lag by the fires in flight at the fork).
 *   A pre-forked worker that needs timers releases the copy (stop, to
 *   free the args it owns, then destroy) and creates a service of its
 *   own.  That starts threads, which glibc supports in a child; POSIX
 *   promises only async-signal-safe calls in the child of a threaded
 *   process, and ThreadSanitizer enforces that (a child that starts a
 *   thread dies): where that matters, fork before the first create.  Why
 *   the copy does not simply carry on in the child: each pending timer
 *   would fire in both processes (an idle timeout closing the connection
 *   twice, a periodic job run twice), and a callback running at the fork
 *   would be half done in the child's copy of its state.
 *   How: handlers installed with pthread_atfork() when the first service
 *   is created hold every service's shard, slab and queue locks across
 *   the fork (arms and cancels on other threads wait for the length of
 *   the fork() call; callbacks hold none of them), so the copy is
 *   consistent whatever the other threads were doing; the child's
 *   handler marks each copy, and every call tests that mark (one load,
 *   no system call).  A callback that forks runs on in the child's only
 *   thread: it must exec or _exit; if it returns, the child ends with
 *   _exit(127).  A stop in progress on another thread at the fork
 *   belongs to the parent: timers it had already taken are not handed
 *   back in the child.  An allocator in the config with fork handlers of
 *   its own must install them before the first service is created (the
 *   service's run first, while the allocator is still usable).
 *
 * ERRORS
 *   Negative ROTA_E* codes from rota.h: ROTA_EINVAL (NULL service or
 *   function, bad config, period 0 or over ROTA_MAX_PERIOD ticks, bad
 *   policy), ROTA_ENOENT (touch of a timer that is not pending),
 *   ROTA_EAGAIN (max_pending reached),
 *   ROTA_ESHUTDOWN (after stop), ROTA_EDEADLK (see above), ROTA_ENOMEM,
 *   ROTA_ESYS (a thread or clock could not be set up), ROTA_ENOTSUP (a
 *   clock this system lacks), ROTA_EFORK (a child's copy, see FORK),
 *   ROTA_ECORRUPT (rota_service_check()).
 */
#ifndef ROTA_SERVICE_H
#define ROTA_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../rota.h"
#include "clock.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rota_service;

/* Names one timer of one service (see HANDLES).  Copy it by value; the zero
 * handle is never valid.  Two handles name the same timer when all three
 * fields are equal. */
struct rota_service_handle {
    uint32_t index;      /* the timer's record in its service */
    uint32_t generation; /* which use of that record */
    uint64_t service;    /* the service that armed it: never 0 */
};

/* What a callback is told about the fire. */
struct rota_service_event {
    struct rota_service_handle timer; /* the timer that fired */
    void *arg;                        /* the arg given when it was armed */
    uint64_t deadline_ns; /* the deadline that came due (for a periodic
                             timer, this fire's point on its schedule) */
    uint64_t late_ns;     /* clock time at the callback's start minus
                             deadline_ns; never negative */
};

typedef void rota_service_fn(struct rota_service *svc,
                             const struct rota_service_event *event);

/* Called by rota_service_stop() for each timer it hands back: the handle
 * and the arg it was armed with.  Runs on the thread that called stop. */
typedef void rota_service_handback_fn(struct rota_service *svc,
                                      struct rota_service_handle timer,
                                      void *timer_arg, void *stop_arg);

/* ------------------------------------------------------------------ clocks */

/*
 * Where the service gets its time and how its thread sleeps.  One clock
 * instance serves one service (the wake state is the clock's).
 *   now_ns  the time in nanoseconds, never decreasing.  Any thread.
 *   wait    block until now_ns() >= deadline_ns, or until wake() has been
 *           called since the previous wait() returned; may return early.
 *           deadline_ns UINT64_MAX means no deadline.  Called only by the
 *           service thread.
 *   wake    make the current or the next wait() return.  Any thread.
 * The service copies this struct; ctx must outlive the service.
 */
struct rota_service_clock {
    uint64_t (*now_ns)(void *ctx);
    void (*wait)(void *ctx, uint64_t deadline_ns);
    void (*wake)(void *ctx);
    void *ctx;
};

/*
 * A manual clock for deterministic tests: time moves only when the test
 * sets it, and the service thread's sleeps end when it does.  Thread-safe.
 */
struct rota_manual_clock;

/* A manual clock at `start_ns`.  0, ROTA_EINVAL, ROTA_ENOMEM, ROTA_ESYS. */
ROTA_API int rota_manual_clock_create(struct rota_manual_clock **out,
                                      uint64_t start_ns);
/* Free it (NULL is fine).  The service using it must be destroyed first.
 * In a child of fork(), only destroy a manual clock the parent created:
 * its other functions may wait for a lock a thread of the parent held. */
ROTA_API void rota_manual_clock_destroy(struct rota_manual_clock *clock);
/* Fill *out with the function table that reads this clock. */
ROTA_API void rota_manual_clock_bind(struct rota_manual_clock *clock,
                                     struct rota_service_clock *out);
/* Set the time (an earlier value than the current one is ignored) and end
 * every sleep whose deadline it reaches. */
ROTA_API void rota_manual_clock_set(struct rota_manual_clock *clock,
                                    uint64_t now_ns);
/* Move the time forward by `delta_ns` (saturating). */
ROTA_API void rota_manual_clock_advance(struct rota_manual_clock *clock,
                                        uint64_t delta_ns);
/* The clock's time. */
ROTA_API uint64_t rota_manual_clock_now(struct rota_manual_clock *clock);
/* Whether a thread is sleeping in wait() right now, and until when (in
 * *deadline_ns if not NULL; UINT64_MAX for no deadline).  For tests. */
ROTA_API bool rota_manual_clock_sleeping(struct rota_manual_clock *clock,
                                         uint64_t *deadline_ns);
/* How many times wait() has been called: the service thread's sleeps. */
ROTA_API uint64_t rota_manual_clock_waits(struct rota_manual_clock *clock);

/* ----------------------------------------------------------------- service */

/* Most worker threads a service may have. */
#define ROTA_SERVICE_MAX_WORKERS 256

/* Most shards a service may have. */
#define ROTA_SERVICE_MAX_SHARDS 64

/* Zero-initialise, then set what you need. */
struct rota_service_config {
    /* Worker threads that run callbacks; 0 runs them on the service
     * thread.  At most ROTA_SERVICE_MAX_WORKERS. */
    unsigned workers;
    /* Wheels, each behind its own lock (see SUBMISSION); 0 means twice the
     * online CPUs, at least 4.  At most ROTA_SERVICE_MAX_SHARDS. */
    unsigned shards;
    /* The wheel's tick in nanoseconds; 0 means 1000 (1 us). */
    uint64_t tick_ns;
    /* Most timers pending at once (arm returns ROTA_EAGAIN beyond it, as
     * Netty's maxPendingTimeouts); 0 means no limit. */
    size_t max_pending;
    /* Timer records allocated by create (rounded up to a power of two,
     * at least 64); 0 means 1024.  The slab grows beyond it on demand. */
    size_t initial_capacity;
    /* NULL: the system clock `clock_source` names (CLOCK_MONOTONIC by
     * default), with the service thread's timer slack set to 1 ns on Linux
     * so that sleeps end on time. */
    const struct rota_service_clock *clock;
    /* NULL: malloc and free. */
    const struct rota_allocator *allocator;
    /* The system clock read when `clock` is NULL: ROTA_CLOCK_MONOTONIC
     * (0, the default) or ROTA_CLOCK_BOOTTIME, time that counts suspend
     * (rota/clock.h, SUSPEND): a timer whose deadline passes while the
     * machine sleeps fires as soon as it resumes, and the service thread
     * sleeps on a CLOCK_BOOTTIME timerfd.  BOOTTIME is Linux's: create
     * returns ROTA_ENOTSUP elsewhere.  ROTA_CLOCK_MONOTONIC_COARSE is
     * refused (ROTA_EINVAL): the service thread would wake before the
     * coarse clock reached the deadline and spin until it did.  Must be
     * 0 when `clock` is set (ROTA_EINVAL otherwise). */
    enum rota_clock_source clock_source;
};

/* Number of buckets in the lateness histogram. */
#define ROTA_SERVICE_LATE_BUCKETS 32

/*
 * Counters, readable at any time from any thread.  Each is exact once the
 * service is quiet (rota_service_sync(), or after stop); while threads are
 * working they may lag each other by the work in flight.  At a quiet moment
 * armed == expired + cancelled + pending.
 */
struct rota_service_stats {
    uint64_t armed;       /* successful arm calls (one-shot and periodic) */
    uint64_t fired;       /* callbacks started: each run of a periodic
                             timer counts */
    uint64_t expired;     /* one-shot timers that ended by firing */
    uint64_t cancelled;   /* timers ended by a cancel or by stop before their
                             callback started (a periodic timer: when it is
                             cancelled); includes handed_back */
    uint64_t handed_back; /* timers handed back by rota_service_stop() */
    uint64_t pending;     /* timers armed and not ended */
    uint64_t touched;     /* accepted touch calls */
    uint64_t merged;      /* fires of periodic timers folded into one still
                             waiting for a worker (see
                             rota_service_arm_periodic_in()) */
    uint64_t queue_high;  /* most fires waiting for a worker at once */
    uint64_t wakeups;     /* times the service thread woke up */
    uint64_t records;     /* timer records in the slab */
    uint64_t bytes;       /* memory held from the allocator */
    /* Firing lateness (event.late_ns) of every callback started: bucket 0
     * counts lateness below 1 us, bucket i (1..30) [2^(i-1), 2^i) us, and
     * the last bucket everything from 2^30 us on. */
    uint64_t late[ROTA_SERVICE_LATE_BUCKETS];
};

/*
 * Create a service and start its threads (config NULL: all defaults).
 * 0 and *out set, or ROTA_EINVAL (out NULL, or a configuration that
 * rota_service_config_check() refuses: it says which field),
 * ROTA_ENOTSUP (clock_source BOOTTIME where there is none), ROTA_ENOMEM,
 * ROTA_ESYS.
 */
ROTA_API int rota_service_create(struct rota_service **out,
                                 const struct rota_service_config *config);

/*
 * Which field of a configuration rota_service_create() refuses, without
 * creating anything: 0 when create accepts it (NULL: every default), or
 * ROTA_EINVAL, and then, when `why` is not NULL, *why is a static text that
 * starts with the field's name and a colon, then the rule it breaks:
 *   "workers: ...", "shards: ...", "initial_capacity: ...", "clock: ..."
 *   (a function of the table is NULL), "clock_source: ..." (a value that
 *   is not a source, or one set together with `clock`), "allocator: ..."
 *   (a function of the table is NULL).
 * Create returns ROTA_EINVAL for exactly these configurations, so a
 * program that gets it from create calls this to say why:
 *
 *     const char *why;
 *     if (rc == ROTA_EINVAL && rota_service_config_check(&cfg, &why) != 0)
 *         fprintf(stderr, "service config: %s\n", why);
 *
 * What the configuration alone cannot tell is create's to report: a
 * BOOTTIME clock on a system without one (ROTA_ENOTSUP), memory, threads.
 * Thread-safe, O(1).
 */
ROTA_API int rota_service_config_check(const struct rota_service_config *config,
                                       const char **why);

/*
 * Stop the service if it is running (handing nothing back), join its
 * threads and free it.  0 (also for NULL), or ROTA_EDEADLK from one of the
 * service's own threads (nothing is done).  See THREAD SAFETY.
 */
ROTA_API int rota_service_destroy(struct rota_service *svc);

/*
 * Arm a one-shot timer `delay_ns` from now: fn(svc, event) runs once, no
 * earlier than that, unless it is cancelled first.  The handle goes to *out
 * when it is not NULL.  0, or ROTA_EINVAL (svc or fn NULL), ROTA_EAGAIN,
 * ROTA_ESHUTDOWN, ROTA_ENOMEM, ROTA_EFORK (in a child of fork(), as every
 * call that arms, touches, cancels or syncs: see FORK).
 */
ROTA_API int rota_service_arm_in(struct rota_service *svc, uint64_t delay_ns,
                                 rota_service_fn *fn, void *arg,
                                 struct rota_service_handle *out);

/* As rota_service_arm_in(), at an absolute deadline on the service's clock (a
 * deadline in the past fires at once). */
ROTA_API int rota_service_arm_at(struct rota_service *svc, uint64_t deadline_ns,
                                 rota_service_fn *fn, void *arg,
                                 struct rota_service_handle *out);

/*
 * Arm a periodic timer: first at now + first_delay_ns, then every period_ns
 * on the schedule first + k * period (drift-free: a late fire does not
 * shift the ones after it).  `missed` says what happens when the service
 * finds the timer one period or more behind (rota.h): BURST runs the
 * callback once for every missed boundary, SKIP once and resumes at the
 * next boundary, DELAY once and restarts the schedule from then.  With
 * workers, while one run of the callback is still queued or running, later
 * boundaries are kept for it (BURST, up to 65535) or folded into the one
 * already waiting (SKIP, DELAY; counted in stats.merged).  A touch moves
 * the schedule: under BURST, boundaries of the new schedule that come due
 * while runs of the old one still wait are folded too, so every run is told
 * a deadline that really came due.  0, or
 * ROTA_EINVAL (period 0 or over ROTA_MAX_PERIOD ticks, bad policy), and the
 * errors of rota_service_arm_in().
 */
ROTA_API int rota_service_arm_periodic_in(struct rota_service *svc,
                                          uint64_t first_delay_ns,
                                          uint64_t period_ns,
                                          enum rota_missed missed,
                                          rota_service_fn *fn, void *arg,
                                          struct rota_service_handle *out);

/* As rota_service_arm_periodic_in(), with an absolute first deadline. */
ROTA_API int rota_service_arm_periodic_at(struct rota_service *svc,
                                          uint64_t first_deadline_ns,
                                          uint64_t period_ns,
                                          enum rota_missed missed,
                                          rota_service_fn *fn, void *arg,
                                          struct rota_service_handle *out);

/*
 * Move a pending timer's deadline to now + delay_ns (later or earlier): the
 * re-arm.  A periodic timer keeps its period and continues from the new
 * deadline.  O(1); a later deadline is a store (the wheel's touch).  0, or
 * ROTA_ENOENT (not pending: fired, cancelled, stale handle, or a one-shot
 * timer that has come due and whose callback has not finished: a touch
 * never un-fires a timer), ROTA_EINVAL, ROTA_ESHUTDOWN.
 */
ROTA_API int rota_service_touch_in(struct rota_service *svc,
                                   struct rota_service_handle timer,
                                   uint64_t delay_ns);

/* As rota_service_touch_in(), with an absolute deadline. */
ROTA_API int rota_service_touch_at(struct rota_service *svc,
                                   struct rota_service_handle timer,
                                   uint64_t deadline_ns);

/* The outcomes of a cancel (see THE CANCEL CONTRACT). */
enum rota_service_cancel {
    ROTA_SERVICE_NOT_PENDING = 0,
    ROTA_SERVICE_CANCELLED = 1,
    ROTA_SERVICE_RUNNING = 2,
};

/* Cancel without waiting: an enum rota_service_cancel value (see THE CANCEL
 * CONTRACT), or ROTA_EINVAL for a NULL service. */
ROTA_API int rota_service_try_cancel(struct rota_service *svc,
                                     struct rota_service_handle timer);

/*
 * Cancel and wait until the callback is not running (see THE CANCEL
 * CONTRACT).  Returns ROTA_SERVICE_CANCELLED (1) if this call kept the
 * callback from starting (a pending one-shot timer, or the next runs of a
 * periodic timer, whose current run it then waited for), 0 if the timer was
 * not pending (it may have waited for the callback of a one-shot timer that
 * had already started), or ROTA_EDEADLK (called from this timer's own
 * callback: nothing done), ROTA_EINVAL.
 */
ROTA_API int rota_service_cancel_sync(struct rota_service *svc,
                                      struct rota_service_handle timer);

/*
 * Wait until the service thread has run every callback due at the clock's
 * time when it looked, after this call (and, with workers, until those
 * callbacks have returned).  Timers that
 * those callbacks arm may need another sync.  For tests on a manual clock:
 * set the time, sync, observe.  0, or ROTA_ESHUTDOWN (stopped: nothing to
 * wait for), ROTA_EDEADLK (from a service thread), ROTA_EINVAL, ROTA_EFORK.
 */
ROTA_API int rota_service_sync(struct rota_service *svc);

/*
 * Stop: later arms and touches fail with ROTA_ESHUTDOWN; the service thread
 * and the workers are joined (running callbacks return first; queued ones
 * do not run); then every pending timer is handed to fn(svc, handle,
 * timer_arg, arg) on this thread (fn may be NULL), counted in cancelled and
 * handed_back.  Returns the number handed back (saturated to INT_MAX); 0 if
 * the service was already stopped; ROTA_EDEADLK from a service thread
 * (nothing done), ROTA_EINVAL.  Concurrent calls: one stops, the others
 * wait for it and return 0.
 */
ROTA_API int rota_service_stop(struct rota_service *svc,
                               rota_service_handback_fn *fn, void *arg);

/* The service clock's time in nanoseconds (0 for NULL). */
ROTA_API uint64_t rota_service_now(struct rota_service *svc);

/* Copy the counters into *out (zeros for a NULL service). */
ROTA_API void rota_service_stats(struct rota_service *svc,
                                 struct rota_service_stats *out);

/*
 * Check every invariant: each wheel's (rota_wheel_check()), every record
 * either free (and on its shard's free list exactly once) or held by a
 * pending timer, a running or queued callback, no ended timer left in a
 * wheel; the number of pending records agrees with the counters and with
 * the wheels.  Run by the service thread, or by the caller once the
 * service is stopped.  Requires a quiet service: no other thread calling
 * in, no callback running.  O(records).  For tests and debugging.  0 or
 * ROTA_ECORRUPT (with a static description in *why when not NULL),
 * ROTA_EDEADLK, ROTA_EINVAL (svc NULL; *why says so).
 */
ROTA_API int rota_service_check(struct rota_service *svc, const char **why);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_SERVICE_H */
