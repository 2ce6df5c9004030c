/* SPDX-License-Identifier: MIT */
/*
 * rota/event.h - drive a rota wheel from a libevent 2.1 event_base (library
 * rota_event).
 *
 * One evtimer per wheel, re-added with the relative time to the wheel's
 * next deadline: after each wake-up, and when a timer becomes earlier than
 * the current arming.  Touches and cancels never re-add it.  This is how Tor
 * drives its timing wheel from libevent.
 *
 *     struct rota_wheel wheel;
 *     struct rota_event rw;
 *     rota_event_init(&rw, base, &wheel, 1000000);      // 1 ms ticks
 *     rota_timer_init(&c->idle, on_idle);
 *     uint64_t idle_ns = 30ull * 1000000000;            // 30 s
 *     uint64_t d = rota_event_deadline_after(&rw, idle_ns);
 *     rota_timer_arm_at(&wheel, &c->idle, d);
 *     rota_event_sync(&rw);                             // after arming
 *     ... in the read callback (a touch needs no sync):
 *     d = rota_event_deadline_after(&rw, idle_ns);      // a fresh reading
 *     rota_timer_touch_at(&wheel, &c->idle, d);
 *     event_base_dispatch(base);
 *
 * WHEN TO CALL rota_event_sync()
 *   libevent 2.1 has no hook that runs before the loop blocks (libuv's
 *   prepare, libev's ev_prepare), so the adapter cannot see arms made in the
 *   caller's callbacks.  Call rota_event_sync() after arming a timer (or
 *   touching one to an earlier deadline) anywhere except inside the wheel's
 *   own callbacks, which the adapter covers.  It costs a comparison with the
 *   wheel's `armed` counter (and, when it moved, with the wheel's next
 *   deadline) and calls event_add() only when the new timer is the
 *   earliest.  Forgetting it never makes a timer early, but
 *   makes it late: it fires at the adapter's next wake-up, if there is one.
 *
 * TIME
 *   The wheel's ticks are CLOCK_MONOTONIC in units of `tick_ns`, read once
 *   per wake-up.  libevent's cached time (event_base_gettimeofday_cached())
 *   is the wall clock, which may be stepped; its monotonic time is private.
 *   Deadlines come from rota_event_deadline_after(): a fresh reading, rounded
 *   up, so a timer never fires early.
 *
 * PRECISION
 *   By default libevent runs its timers on CLOCK_MONOTONIC_COARSE, which
 *   lags the real clock by up to a jiffy (4 ms at HZ=250): the evtimer then
 *   wakes up to several ms after the deadline (measured here: a few ms at
 *   1 ms ticks).  Timers are never early either way.  For millisecond
 *   precision create the base with EVENT_BASE_FLAG_PRECISE_TIMER; an idle
 *   wheel with 100 ms or 1 s ticks does not need it.
 *
 * LIFETIME
 *   The evtimer, while added, keeps event_base_dispatch() running as any
 *   pending event does.  When the last timer is cancelled it stays added
 *   (cancel never re-arms): it wakes once more, finds nothing, and is not
 *   added again.  rota_event_close() deletes and frees it.  The wheel is the
 *   caller's.
 *
 * CALLBACK CONTEXT
 *   Timer callbacks run from the evtimer's callback, inside
 *   rota_wheel_advance(): they may use the base and the wheel freely, except
 *   rota_event_close() on this adapter.
 *
 * THREAD SAFETY
 *   As an event_base without locking: one thread.
 */
#ifndef ROTA_EVENT_H
#define ROTA_EVENT_H

#include <stdint.h>

#include <event2/event.h>

#include "../rota.h"
#include "clock.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rota_event {
    /* private */
    struct event *timer_;
    struct event_base *base_;
    struct rota_wheel *wheel_;
    struct rota_clock clock_;
    uint64_t armed_;      /* deadline (ticks) the evtimer is added for */
    uint64_t seen_armed_; /* the wheel's stats.armed at the last sync */
    uint64_t rearms_;     /* event_add() calls */
    uint64_t wakeups_;    /* evtimer callbacks */
};

/*
 * Initialise `wheel` (rota_wheel_init() at the current CLOCK_MONOTONIC time
 * in ticks of `tick_ns` ns) and create the evtimer on `base`.  0,
 * ROTA_EINVAL (NULL, tick_ns 0), ROTA_ENOMEM (event_new() failed),
 * ROTA_ESYS (no CLOCK_MONOTONIC).
 */
ROTA_API int rota_event_init(struct rota_event *rw, struct event_base *base,
                             struct rota_wheel *wheel, uint64_t tick_ns);

/* The deadline for an event `delay_ns` nanoseconds from now, in ticks,
 * rounded up from a fresh clock reading. */
ROTA_API uint64_t rota_event_deadline_after(const struct rota_event *rw,
                                            uint64_t delay_ns);

/* The current CLOCK_MONOTONIC time in ticks, rounded down. */
ROTA_API uint64_t rota_event_now(const struct rota_event *rw);

/* Re-add the evtimer if a timer armed since the last sync is earlier than
 * its arming.  O(1) when nothing was armed (see rota/epoll.h on the wheel's
 * `armed` counter).  Returns 1 if it did, 0 if not needed, ROTA_EINVAL,
 * ROTA_ESYS (event_add() failed). */
ROTA_API int rota_event_sync(struct rota_event *rw);

/* event_add() calls and evtimer wake-ups so far. */
ROTA_API uint64_t rota_event_rearms(const struct rota_event *rw);
ROTA_API uint64_t rota_event_wakeups(const struct rota_event *rw);

/* Delete and free the evtimer (the wheel is left alone).  Idempotent. */
ROTA_API void rota_event_close(struct rota_event *rw);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_EVENT_H */
