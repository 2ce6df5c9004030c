/* SPDX-License-Identifier: MIT */
/*
 * rota/ev.h - drive a rota wheel from a libev loop (library rota_ev).
 *
 * One ev_timer per wheel, armed at the wheel's next deadline, and one
 * ev_prepare that runs before every poll and re-arms the ev_timer only if a
 * timer armed during the loop iteration is earlier than the current arming.
 * Touches and cancels never re-arm it: a connection touched on every read
 * costs a store into its timer.
 *
 *     struct rota_clock clock;
 *     struct rota_wheel wheel;
 *     struct rota_ev rw;
 *     rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000); // 1 ms ticks
 *     rota_wheel_init(&wheel, rota_clock_now(&clock));
 *     rota_ev_init(&rw, EV_DEFAULT, &wheel, &clock);
 *     rota_timer_init(&c->idle, on_idle);
 *     uint64_t idle_ns = 30ull * 1000000000;                // 30 s
 *     rota_timer_arm_at(&wheel, &c->idle,
 *                       rota_ev_deadline_in(&rw, idle_ns));
 *     ... in the read callback:
 *     rota_timer_touch_at(&wheel, &c->idle,
 *                         rota_ev_deadline_in(&rw, idle_ns));
 *     ev_run(EV_DEFAULT, 0);
 *
 * DELAYS FROM NOW: NEVER EARLY
 *   While bound, the adapter gives the wheel a time source
 *   (rota_wheel_set_time_source() in rota.h): its clock read afresh and
 *   rounded up.  So a delay counted from the wheel's now -
 *   rota_timer_arm_in(&wheel, t, d), or rota_timer_arm_at() and
 *   rota_timer_touch_at() with rota_wheel_now(&wheel) + d - starts at the
 *   call, and the timer fires no earlier than d ticks after it, wherever the
 *   call is made: in an I/O watcher's callback (libev runs them after its
 *   poll, before any wake-up of the adapter's ev_timer has advanced the
 *   wheel), in a wheel callback after others that ran long, or between two
 *   ev_run() calls.  Without the source it would count from the adapter's last
 *   wake-up, which after an idle stretch can be seconds old, and fire at once.
 *
 *   The wheel's own time (what advance() was last given, the `late` of
 *   callbacks, rota_timer_remaining()) still moves only when the adapter
 *   wakes.  Each such call reads the clock once (tens of nanoseconds);
 *   deadlines from rota_ev_deadline_in() cost what they did, and arm_at(),
 *   touch_at() and cancel() never read it.  With a coarse clock the source
 *   reads CLOCK_MONOTONIC, which the coarse clock trails: a delay is never cut
 *   short by its lag.  rota_ev_close() removes the source (unless the wheel
 *   has been given another since); while bound the wheel points at the struct,
 *   which must not move.
 *
 * THE WHEEL IS THE CALLER'S
 *   As with every rota adapter, rota_ev_init() binds a wheel the caller has
 *   already initialised, in ticks of the clock it is given (CLOCK_MONOTONIC
 *   or its coarse twin: one time line), and arms the ev_timer for the
 *   timers it already holds.  The adapter never initialises, drains or
 *   frees the wheel: after rota_ev_close(), cancel or drain its timers, or
 *   bind it to another loop.
 *
 * TIME, AND WHY NOT ev_now()
 *   The wheel's ticks are those of the clock passed to rota_ev_init().
 *   libev's cached time ev_now() is the wall clock (libev's monotonic time
 *   plus an offset it re-reads when it notices the wall clock jump), and
 *   libev's monotonic time is not public: a wheel running on ev_now() would
 *   see every deadline move when the system clock is stepped, and kick
 *   every idle connection at once after a forward step.  So the adapter
 *   reads its clock once per wake-up to advance the wheel (CLOCK_MONOTONIC:
 *   about 20-40 ns, no system call), the time line of libev's own ev_timer.
 *   Deadlines come from rota_ev_deadline_in(): a fresh reading, rounded
 *   up, so a timer never fires early.
 *
 * PENDING TIMERS KEEP THE LOOP ALIVE: NO SYNC NEEDED
 *   The adapter looks for new timers before the loop blocks (an ev_prepare)
 *   and arms the ev_timer, which keeps the loop alive as an ev_timer does.
 *   ev_run() runs the prepare watchers at the start of every iteration,
 *   the first included, even when no watcher keeps the loop alive (libev's
 *   documented order: prepare watchers, then the blocking decision, then
 *   "loop while watchers are active").  So timers armed anywhere, inside
 *   the loop's callbacks or outside before any ev_run() call, keep the loop
 *   running until they fire, with no rota_ev_sync().  rota_ev_sync() arms
 *   the ev_timer at once, for a program that waits for its loop by other
 *   means than ev_run().
 *
 * LIFETIME
 *   The prepare watcher does not keep the loop alive (it is unref'ed).  When
 *   the last timer is cancelled the ev_timer stays armed (cancel never
 *   re-arms): it wakes once more, finds nothing, and stops.  rota_ev_close()
 *   is the teardown: it stops both watchers, then the struct may be freed.
 *
 * CALLBACK CONTEXT
 *   Timer callbacks run from the ev_timer's callback, inside
 *   rota_wheel_advance(): they may use the loop and the wheel freely, except
 *   rota_ev_close() on this adapter.
 *
 * THREAD SAFETY
 *   As libev: the adapter, the loop and the wheel belong to one thread.
 */
#ifndef ROTA_EV_H
#define ROTA_EV_H

#include <stdint.h>

#include <ev.h>

#include "../rota.h"
#include "clock.h"
#include "loop.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rota_ev {
    /* private */
    struct rota_loop_engine engine_; /* rota/loop.h */
    ev_timer timer_;
    ev_prepare prepare_;
    struct ev_loop *loop_;
    uint8_t started_;
};

/*
 * Bind `wheel` (already initialised with rota_wheel_init(), in ticks of
 * `clock`, which is copied) to `loop`: start the prepare watcher and arm
 * the ev_timer at the wheel's next deadline if a timer is pending.  0, or
 * ROTA_EINVAL (a NULL argument, a wheel never initialised: zeroed, a clock
 * never initialised).  After a failure rota_ev_close() is a no-op.
 */
ROTA_API int rota_ev_init(struct rota_ev *rw, struct ev_loop *loop,
                          struct rota_wheel *wheel,
                          const struct rota_clock *clock);

/* The deadline for an event `delay_ns` nanoseconds from now, in ticks,
 * rounded up from a fresh clock reading. */
ROTA_API uint64_t rota_ev_deadline_in(const struct rota_ev *rw,
                                      uint64_t delay_ns);

/* The clock's time in ticks, rounded down: what the adapter advances the
 * wheel to when it wakes up. */
ROTA_API uint64_t rota_ev_now(const struct rota_ev *rw);

/* Re-arm the ev_timer if a timer armed since the last sync is earlier than
 * its arming; ev_run() does it before every block, so this is only for a
 * program that waits by other means (see PENDING TIMERS...).  O(1) when
 * nothing was armed (see rota/epoll.h on the wheel's `armed` counter).
 * Returns 1 if it did, 0 if not needed, ROTA_EINVAL (NULL, not bound, or
 * closed). */
ROTA_API int rota_ev_sync(struct rota_ev *rw);

/*
 * Run at most `max_fires` callbacks per wake-up, and file at most as many
 * timers again (0, the default: no limit; rota_wheel_advance_max()).  The
 * rest stay due and run in the next iteration of the loop, after a poll, so
 * a storm of expiries cannot stall the loop's I/O for longer than one
 * budget.
 */
ROTA_API void rota_ev_set_budget(struct rota_ev *rw, size_t max_fires);

/* What the adapter did so far (rota/loop.h): the armed deadline,
 * ev_timer_start() calls, ev_timer wake-ups and their lateness.
 * All zero (armed ROTA_NEVER) when rw is NULL. */
ROTA_API void rota_ev_stats(const struct rota_ev *rw,
                            struct rota_loop_stats *out);

/* The teardown: stop both watchers (the wheel and its timers are left
 * alone).  Returns 0: the struct may be freed; ROTA_EINVAL for a NULL rw.
 * Not from the wheel's callbacks.  A no-op after a failed init or a
 * previous close. */
ROTA_API int rota_ev_close(struct rota_ev *rw);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_EV_H */
