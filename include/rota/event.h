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
 *     struct rota_clock clock;
 *     struct rota_wheel wheel;
 *     struct rota_event rw;
 *     rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000); // 1 ms ticks
 *     rota_wheel_init(&wheel, rota_clock_now(&clock));
 *     rota_event_init(&rw, base, &wheel, &clock);
 *     rota_timer_init(&c->idle, on_idle);
 *     uint64_t idle_ns = 30ull * 1000000000;                // 30 s
 *     uint64_t d = rota_event_deadline_in(&rw, idle_ns);
 *     rota_timer_arm_at(&wheel, &c->idle, d);
 *     rota_event_sync(&rw);                                 // after arming
 *     ... in the read callback (a touch needs no sync):
 *     d = rota_event_deadline_in(&rw, idle_ns);          // fresh
 *     rota_timer_touch_at(&wheel, &c->idle, d);
 *     event_base_dispatch(base);
 *
 * DELAYS FROM NOW: NEVER EARLY
 *   While bound, the adapter gives the wheel a time source
 *   (rota_wheel_set_time_source() in rota.h): its clock read afresh and
 *   rounded up.  So a delay counted from the wheel's now -
 *   rota_timer_arm_in(&wheel, t, d), or rota_timer_arm_at() and
 *   rota_timer_touch_at() with rota_wheel_now(&wheel) + d - starts at the
 *   call, and the timer fires no earlier than d ticks after it, wherever the
 *   call is made: in an I/O event's callback (libevent runs them after its
 *   poll, before the adapter's evtimer has advanced the wheel), in a wheel
 *   callback after others that ran long, or between two event_base_dispatch()
 *   calls.  libevent's cached time would not do: it is as old as the loop
 *   turn, and the wall clock.  Without the source it would count from the
 *   adapter's last wake-up, which after an idle stretch can be seconds old,
 *   and fire at once.
 *
 *   The wheel's own time (what advance() was last given, the `late` of
 *   callbacks, rota_timer_remaining()) still moves only when the adapter
 *   wakes.  Each such call reads the clock once (tens of nanoseconds);
 *   deadlines from rota_event_deadline_in() cost what they did, and
 *   arm_at(), touch_at() and cancel() never read it.  With a coarse clock the
 *   source reads CLOCK_MONOTONIC, which the coarse clock trails: a delay is
 *   never cut short by its lag.  rota_event_close() removes the source (unless
 *   the wheel has been given another since); while bound the wheel points at
 *   the struct, which must not move.
 *
 * THE WHEEL IS THE CALLER'S
 *   As with every rota adapter, rota_event_init() binds a wheel the caller
 *   has already initialised, in ticks of the clock it is given
 *   (CLOCK_MONOTONIC or its coarse twin: one time line), and adds the
 *   evtimer for the timers it already holds.  The adapter never
 *   initialises, drains or frees the wheel: after rota_event_close(),
 *   cancel or drain its timers, or bind it to another base.
 *
 * WHEN TO CALL rota_event_sync()
 *   libevent 2.1 has no hook that runs before the loop blocks (libuv's
 *   prepare, libev's ev_prepare), so the adapter cannot see arms made in the
 *   caller's callbacks.  Call rota_event_sync() after arming a timer (or
 *   touching one to an earlier deadline) anywhere except inside the wheel's
 *   own callbacks, which the adapter covers, and before rota_event_init(),
 *   which looks at the wheel.  It costs a comparison with the
 *   wheel's `armed` counter (and, when it moved, with the wheel's next
 *   deadline) and calls event_add() only when the new timer is the
 *   earliest.  Forgetting it never makes a timer early, but
 *   makes it late: it fires at the adapter's next wake-up, if there is one,
 *   and a timer that nothing else keeps alive lets event_base_dispatch()
 *   return (no event pending) with the timer still pending.
 *
 * TIME
 *   The wheel's ticks are those of the clock passed to rota_event_init(),
 *   read once per wake-up.  libevent's cached time
 *   (event_base_gettimeofday_cached()) is the wall clock, which may be
 *   stepped; its monotonic time is private.  Deadlines come from
 *   rota_event_deadline_in(): a fresh reading, rounded up, so a timer
 *   never fires early.
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
 *   added again.  rota_event_close() is the teardown: it deletes and frees
 *   the evtimer; then the struct may be freed.
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
#include "loop.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rota_event {
    /* private */
    struct rota_loop_engine engine_; /* rota/loop.h */
    struct event *timer_;
    struct event_base *base_;
};

/*
 * Bind `wheel` (already initialised with rota_wheel_init(), in ticks of
 * `clock`, which is copied) to `base`: create the evtimer and add it for
 * the wheel's next deadline if a timer is pending.  0, ROTA_EINVAL (a NULL
 * argument, a wheel never initialised: zeroed, a clock never initialised),
 * ROTA_ENOMEM (event_new() failed), ROTA_ESYS (event_add() failed).  After
 * a failure rota_event_close() is a no-op.
 */
ROTA_API int rota_event_init(struct rota_event *rw, struct event_base *base,
                             struct rota_wheel *wheel,
                             const struct rota_clock *clock);

/* The deadline for an event `delay_ns` nanoseconds from now, in ticks,
 * rounded up from a fresh clock reading. */
ROTA_API uint64_t rota_event_deadline_in(const struct rota_event *rw,
                                         uint64_t delay_ns);

/* The current CLOCK_MONOTONIC time in ticks, rounded down. */
ROTA_API uint64_t rota_event_now(const struct rota_event *rw);

/* Re-add the evtimer if a timer armed since the last sync is earlier than
 * its arming.  O(1) when nothing was armed (see rota/epoll.h on the wheel's
 * `armed` counter).  Returns 1 if it did, 0 if not needed, ROTA_EINVAL,
 * ROTA_ESYS (event_add() failed). */
ROTA_API int rota_event_sync(struct rota_event *rw);

/*
 * Run at most `max_fires` callbacks per wake-up, and file at most as many
 * timers again (0, the default: no limit; rota_wheel_advance_max()).  The
 * rest stay due and run in the next iteration of the loop, after a poll, so
 * a storm of expiries cannot stall the loop's I/O for longer than one
 * budget.
 */
ROTA_API void rota_event_set_budget(struct rota_event *rw, size_t max_fires);

/* What the adapter did so far (rota/loop.h): the armed deadline,
 * event_add() calls, evtimer wake-ups and their lateness.
 * All zero (armed ROTA_NEVER) when rw is NULL. */
ROTA_API void rota_event_stats(const struct rota_event *rw,
                               struct rota_loop_stats *out);

/* The teardown: delete and free the evtimer (the wheel and its timers are
 * left alone).  Returns 0: the struct may be freed; ROTA_EINVAL for a NULL
 * rw.  Not from the wheel's callbacks.  A no-op after a failed init or a
 * previous close. */
ROTA_API int rota_event_close(struct rota_event *rw);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_EVENT_H */
