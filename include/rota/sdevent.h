/* SPDX-License-Identifier: MIT */
/*
 * rota/sdevent.h - drive a rota wheel from a systemd sd-event loop (library
 * rota_sdevent).
 *
 * One time event source per wheel (sd_event_add_time(), CLOCK_MONOTONIC),
 * set to the wheel's next deadline.  Its prepare callback, which sd-event
 * runs before every poll, moves it only when a timer armed during the
 * iteration is earlier than the current setting; after each wake-up it is set
 * to the new next deadline.  Touches and cancels never move it: a connection
 * touched on every read costs a store into its timer, not a call into
 * sd-event.
 *
 *     sd_event *event;
 *     struct rota_clock clock;
 *     struct rota_wheel wheel;
 *     struct rota_sdevent rs;
 *     sd_event_default(&event);
 *     rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000);  // 1 ms ticks
 *     rota_wheel_init(&wheel, rota_clock_now(&clock));
 *     rota_sdevent_init(&rs, event, &wheel, &clock);
 *     rota_timer_init(&c->idle, on_idle);
 *     uint64_t idle_ns = 30ull * 1000000000;                   // 30 s
 *     rota_timer_arm_at(&wheel, &c->idle,
 *                       rota_sdevent_deadline_in(&rs, idle_ns));
 *     ... in the I/O callback:
 *     rota_timer_touch_at(&wheel, &c->idle,
 *                         rota_sdevent_deadline_in(&rs, idle_ns));
 *     sd_event_loop(event);        // until sd_event_exit()
 *     rota_sdevent_close(&rs);
 *     sd_event_unref(event);
 *
 * TIME
 *   The wheel's ticks are those of the struct rota_clock passed in
 *   (rota/clock.h), initialised by the caller at that clock's time.  The
 *   source is on the clock's time line: CLOCK_MONOTONIC for
 *   ROTA_CLOCK_MONOTONIC and ROTA_CLOCK_MONOTONIC_COARSE (the same line;
 *   sd-event has no coarse time sources).  A wake-up advances the wheel to a
 *   fresh reading of the clock, never less than the deadline the source was
 *   set to (it fired, so CLOCK_MONOTONIC is past it, even if a coarse clock
 *   has not caught up).  Deadlines should come from
 *   rota_sdevent_deadline_in(): a fresh reading, rounded up, so a timer
 *   never fires early.
 *
 * DELAYS FROM NOW: NEVER EARLY
 *   While bound, the adapter gives the wheel a time source
 *   (rota_wheel_set_time_source() in rota.h): its clock read afresh and
 *   rounded up.  So a delay counted from the wheel's now -
 *   rota_timer_arm_in(&wheel, t, d), or rota_timer_arm_at() and
 *   rota_timer_touch_at() with rota_wheel_now(&wheel) + d - starts at the
 *   call, and the timer fires no earlier than d ticks after it, wherever the
 *   call is made: in an I/O source's handler (sd-event dispatches one
 *   source per iteration, so the adapter's own event source, which advances
 *   the wheel, may come after it), in a wheel callback after others that ran
 *   long, or outside sd_event_run().  sd_event_now() would not do: it is the
 *   time of the iteration's wake-up.
 *   Without the source it would count from the adapter's last wake-up, which
 *   after an idle stretch can be seconds old, and fire at once.
 *
 *   The wheel's own time (what advance() was last given, the `late` of
 *   callbacks, rota_timer_remaining()) still moves only when the adapter
 *   wakes.  Each such call reads the clock once (tens of nanoseconds);
 *   deadlines from rota_sdevent_deadline_in() cost what they did, and
 *   arm_at(), touch_at() and cancel() never read it.  With a coarse clock the
 *   source reads CLOCK_MONOTONIC, which the coarse clock trails: a delay is
 *   never cut short by its lag.  rota_sdevent_close() removes the source
 *   (unless the wheel has been given another since); while bound the wheel
 *   points at the struct, which must not move.
 *
 * ACCURACY
 *   The source is added with an accuracy of 1 us, not sd-event's default of
 *   250 ms: the wheel already groups its timers into ticks, so one wake-up
 *   serves every timer of a tick, and a wider window would only make every
 *   timer up to 250 ms later than the other rota adapters fire it.  A timer
 *   fires at or after its deadline and, on an idle machine, within one tick
 *   of it.  To let sd-event coalesce this wheel's wake-ups with other
 *   sources', choose longer ticks.
 *
 * WHEN TO CALL rota_sdevent_sync()
 *   Arms made inside the loop's callbacks (I/O, other sources, the wheel's
 *   own timers) need nothing: the prepare callback runs before the loop
 *   polls.  Arms made outside the loop need nothing either: the first
 *   iteration of sd_event_run() or sd_event_loop() prepares before it waits.
 *   rota_sdevent_sync() is for a caller that wants the setting current now:
 *   one that reads rota_sdevent_stats() (armed) before running the loop, or
 *   drives the loop's steps (sd_event_prepare(), _wait(), _dispatch()) itself
 *   and arms between its prepare and its wait.
 *
 * LIFETIME, AND WHAT KEEPS THE LOOP RUNNING
 *   An sd-event loop never ends because it has nothing to do: sd_event_loop()
 *   returns when sd_event_exit() is called, whatever its sources.  So the
 *   adapter's source stays enabled from init to close, set to infinity
 *   (USEC_INFINITY) while the wheel is empty, and the wheel neither keeps the
 *   loop alive nor ends it.  A program that wants to stop when its last
 *   timer has fired calls sd_event_exit() from that timer's callback, or
 *   calls sd_event_run() while the wheel holds timers (rota_wheel_count()).
 *   When the last timer is cancelled the source stays set (cancel never
 *   moves it): it wakes once more, finds nothing, and is set to infinity.
 *
 *   The source holds a reference to the loop until rota_sdevent_close(),
 *   which disables and releases it; then the struct may be freed.  The wheel
 *   is the caller's: cancel or drain its timers.  After fork() the child may
 *   not use the parent's sd-event loop (sd-event's rule): calls that touch
 *   the source return ROTA_ESYS with errno ECHILD there.
 *
 * BUDGET
 *   rota_sdevent_set_budget() bounds the callbacks of one wake-up.  When it
 *   stops with work left, the source is left at its past time: it is still
 *   due, and sd-event dispatches it again in its next iteration, after one
 *   poll for I/O (without blocking), so a storm of expiries cannot hold the
 *   loop's I/O for longer than one budget.
 *
 * CALLBACK CONTEXT
 *   Timer callbacks run from the source's callback, inside
 *   rota_wheel_advance() (see rota.h): they may use the loop and the wheel
 *   freely (arm, touch, cancel, sd_event_exit()), but must not call
 *   rota_sdevent_close() on this adapter: call sd_event_exit() there and
 *   close after sd_event_loop() has returned.
 *
 * THREAD SAFETY
 *   As sd-event: the adapter, the loop and the wheel belong to one thread.
 */
#ifndef ROTA_SDEVENT_H
#define ROTA_SDEVENT_H

#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-event.h>

#include "../rota.h"
#include "clock.h"
#include "loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* All fields are private. */
struct rota_sdevent {
    /* private */
    struct rota_loop_engine engine_; /* rota/loop.h */
    sd_event_source *source_; /* the time source; NULL: not started/closed */
};

/*
 * Bind to `wheel` (already initialised, in ticks of `clock`; the clock is
 * copied) and add the time source to `event`, set to the wheel's next
 * deadline.  0, ROTA_EINVAL (a NULL argument, a wheel or a clock never
 * initialised: zeroed, or a clock sd-event has no time sources for), or
 * ROTA_ESYS (sd-event refused: errno says why, ENOMEM, or ECHILD for a loop
 * of the parent process).  After a failure
 * rota_sdevent_close() is a harmless no-op.
 */
ROTA_API int rota_sdevent_init(struct rota_sdevent *rs, sd_event *event,
                               struct rota_wheel *wheel,
                               const struct rota_clock *clock);

/* The deadline for an event `delay_ns` nanoseconds from now, in ticks,
 * rounded up from a fresh clock reading (rota_clock_deadline_after()). */
ROTA_API uint64_t rota_sdevent_deadline_in(const struct rota_sdevent *rs,
                                           uint64_t delay_ns);

/* The clock's time in ticks, rounded down. */
ROTA_API uint64_t rota_sdevent_now(const struct rota_sdevent *rs);

/*
 * Move the source if a timer armed since the last sync is earlier than its
 * setting.  O(1) when nothing was armed (see rota/epoll.h on the wheel's
 * `armed` counter).  The prepare callback does this before every poll.
 * Returns 1 if it moved the source, 0 if not needed, ROTA_EINVAL (NULL, or
 * not initialised), ROTA_ESYS (sd-event refused: errno says why).
 */
ROTA_API int rota_sdevent_sync(struct rota_sdevent *rs);

/*
 * Run at most `max_fires` callbacks per wake-up, and file at most as many
 * timers again (0, the default: no limit; rota_wheel_advance_max()).  The
 * rest stay due and run in the next iterations, in order, after the loop
 * has polled for I/O.
 */
ROTA_API void rota_sdevent_set_budget(struct rota_sdevent *rs,
                                      size_t max_fires);

/*
 * The sd-event priority of the wheel's source (sd-event's default:
 * SD_EVENT_PRIORITY_NORMAL, 0; lower values are dispatched first when
 * several sources are pending).  0, ROTA_EINVAL, ROTA_ESYS.
 */
ROTA_API int rota_sdevent_set_priority(struct rota_sdevent *rs,
                                       int64_t priority);

/* What the adapter did so far (rota/loop.h): the deadline (ticks) the
 * source is set to, settings of the source to a deadline
 * (sd_event_source_set_time() calls; setting it to infinity when the wheel
 * empties is not counted, as a stopped ev_timer or uv_timer_t is not),
 * wake-ups and their lateness: lets a test prove that touches and cancels
 * cost none.  All zero (armed ROTA_NEVER) when rs is NULL. */
ROTA_API void rota_sdevent_stats(const struct rota_sdevent *rs,
                                 struct rota_loop_stats *out);

/* Disable and release the source (idempotent), dropping its reference to the
 * loop.  The wheel and its timers are untouched.  Returns 0: the struct may
 * be freed; ROTA_EINVAL for a NULL rs. */
ROTA_API int rota_sdevent_close(struct rota_sdevent *rs);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_SDEVENT_H */
