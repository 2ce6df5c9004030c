/* SPDX-License-Identifier: MIT */
/*
 * bench.h - what the driver (main.c, workloads.c, report.c) and the
 * adapters (impl_*.c) share: the operations table every implementation
 * fills in, the fire hook every adapter calls, and a few helpers.
 *
 * The contract of an adapter, whatever it wraps:
 *   - Timers are named by a dense id in [0, n).  The adapter allocates, in
 *     create(), everything a user of that library would allocate for n
 *     timers (the node that embeds the library's timer plus the id), so
 *     that MEM measures the per-timer cost a user really pays.
 *   - arm() is only called on an idle timer; cancel() only on a pending
 *     one; rearm() on a pending timer (the cheapest "move my deadline" the
 *     library offers), or from the fire hook on the timer that just fired
 *     (W2's expiries re-arm with the same call as its ops).  Deadlines are
 *     absolute ticks of the simulated clock (1 tick = 1 ms) and always
 *     later than the adapter's current time.
 *   - advance(now) moves the implementation's time to `now` and, for every
 *     timer whose deadline is <= now, calls bench_fired(id) exactly once,
 *     on that very call (never early, never a tick late).  A one-shot
 *     timer is idle again when bench_fired() runs, so the hook may arm it;
 *     a periodic timer is still pending (next deadline = deadline + period,
 *     never now + period).
 *   - destroy() releases everything, pending timers included.
 *   - An approximate implementation (max_late != NULL) may fire a timer
 *     late, by at most max_late(delay) ticks, where delay is its deadline
 *     minus the implementation's time when it was filed (arm, rearm, or
 *     the fire that re-files a periodic timer): bench_fired() then runs in
 *     the first advance() whose `now` reaches the tick the implementation
 *     chose, which is in [deadline, deadline + max_late(delay)].  Never
 *     early all the same.  The driver checks every fire against that
 *     window instead of comparing with the exact implementations.
 */
#ifndef ROTA_BENCH_H
#define ROTA_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "benchutil.h" /* bench_die(): a library call failed */

struct bench_impl {
    const char *name;
    /* NULL when the implementation runs workload `wl` (its name: "W2")
     * honestly, otherwise the reason it does not (goes to meta.skipped).
     * May be NULL itself: every workload runs. */
    const char *(*skip)(const char *wl);
    /* Bytes the user allocates per timer (the node: library timer + id). */
    size_t node_size;
    void *(*create)(uint32_t n, uint64_t now);
    void (*destroy)(void *impl);
    void (*arm)(void *impl, uint32_t id, uint64_t deadline);
    void (*cancel)(void *impl, uint32_t id);
    void (*rearm)(void *impl, uint32_t id, uint64_t deadline);
    void (*arm_periodic)(void *impl, uint32_t id, uint64_t first,
                         uint64_t period);
    /* Optional: cancel a timer armed by arm_periodic(), for a library
     * whose periodic timers are another type than its one-shots (rota's
     * struct rota_periodic); NULL: cancel() does. */
    void (*cancel_periodic)(void *impl, uint32_t id);
    void (*advance)(void *impl, uint64_t now);
    /* W7 only, optional: advance with a limit on the call's work (the
     * library's own unit); returns true when work is left, and the loop
     * calls again at the same `now`.  NULL: advance() fires everything. */
    bool (*advance_max)(void *impl, uint64_t now, size_t limit);
    /* The library version actually linked, or NULL (in-tree baselines). */
    const char *(*version)(void);
    /* NULL for an exact implementation.  Otherwise it fires within a window
     * of its own (timer slack) and checks that bound itself; this says how,
     * and the cross-check against exact implementations skips it. */
    const char *inexact;
    /* NULL for an exact implementation; otherwise the most ticks late it
     * may fire a timer filed `delay` ticks ahead (see the contract), and
     * the driver checks every fire against that window (workloads.c) in a
     * run of its own before the timed one.  Such an implementation is
     * inexact too: it sets `inexact` to say so. */
    uint64_t (*max_late)(uint64_t delay);
};

/* Called by every adapter, from inside advance(), once per fire. */
void bench_fired(uint32_t id);

/* The fake clock the real peers read (fakeclock.c).  While enabled,
 * clock_gettime() returns the simulated tick `ms` for every clock id,
 * epoll_wait()/epoll_pwait() with a zero timeout return 0 at once, and
 * timerfd_settime() succeeds at once (sd-event's timerfd); _elided() and
 * _settime_elided() count those two. */
void bench_fakeclock_enable(bool on);
void bench_fakeclock_set(uint64_t ms);
uint64_t bench_fakeclock_now(void);
uint64_t bench_fakeclock_elided(void);
uint64_t bench_fakeclock_settime_elided(void);

/* Wall time for measurements: the real CLOCK_MONOTONIC, never faked. */
double bench_wall(void);

extern const struct bench_impl impl_rota, impl_rota_arm, impl_rota_store,
    impl_rota_slack, impl_heap2, impl_heap4, impl_hashed_rounds,
    impl_wheel_bare, impl_wheel_approx;
/* wheel-approx's bound (impl_wheel_approx.c): 8/63 of the delay. */
uint64_t wheel_approx_max_late(uint64_t delay);
#ifdef BENCH_HAVE_LIBUV
extern const struct bench_impl impl_libuv;
#endif
#ifdef BENCH_HAVE_LIBEV
extern const struct bench_impl impl_libev;
#endif
#ifdef BENCH_HAVE_LIBEVENT
extern const struct bench_impl impl_libevent, impl_libevent_common;
#endif
#ifdef BENCH_HAVE_SDEVENT
extern const struct bench_impl impl_sdevent;
#endif

#endif /* ROTA_BENCH_H */
