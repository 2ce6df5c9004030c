/* SPDX-License-Identifier: MIT */
/*
 * rota/epoll.h - drive a rota wheel from an epoll loop (Linux).
 *
 * THE RULE
 *   One OS timer per wheel, armed at the wheel's next deadline.  It is
 *   re-armed after each wake-up and when a timer becomes earlier than the
 *   current arming; never on touch or cancel.  A wake-up that finds nothing
 *   due is harmless: the wheel files the touched timers where they now
 *   belong and the OS timer is armed again at the new next deadline.  So an
 *   idle-connection server that touches a timer on every read makes no
 *   system call and no wheel query for it: the touch is a store.
 *
 * THE ONE-TIMER OBJECT (struct rota_epoll), two ways to carry the deadline
 *   - the epoll_wait() timeout (the default: no descriptor, no system call):
 *
 *         rota_epoll_init(&et, &wheel, &clock, 0);
 *         for (;;) {
 *             int ms;
 *             rota_epoll_wait_ms(&et, &ms);   // 0 on an error: see below
 *             int n = epoll_wait(ep, evs, 64, ms);
 *             ... handle the n events; rota_timer_touch_at() on every read ...
 *             rota_epoll_dispatch(&et);        // after every epoll_wait
 *         }
 *
 *   - a timerfd (ROTA_EPOLL_TIMERFD: absolute, on CLOCK_MONOTONIC, or on
 *     CLOCK_BOOTTIME for a ROTA_CLOCK_BOOTTIME clock), for loops that wait
 *     on descriptors only, or share an epoll set between wheels:
 *
 *         rota_epoll_init(&et, &wheel, &clock, ROTA_EPOLL_TIMERFD);
 *         add rota_epoll_fd(&et) to the epoll set for EPOLLIN;
 *         for (;;) {
 *             int ms;
 *             rota_epoll_wait_ms(&et, &ms);
 *             int n = epoll_wait(ep, evs, 64, ms);
 *             ... handle the events; when rota_epoll_fd() is readable:
 *             rota_epoll_dispatch(&et);
 *         }
 *
 *   rota_epoll_wait_ms() first re-arms if a timer armed since the last call
 *   is earlier than the arming (the timerfd mode calls timerfd_settime()
 *   only then), so arms made anywhere in the loop are covered.  It costs
 *   O(1) when nothing was armed: it reads the wheel's `armed` counter
 *   (rota_stats), which counts every arm and every touch to an earlier
 *   deadline; only when that moved does it ask the wheel for its next
 *   deadline.  That matters: after the earliest timer is touched, the wheel
 *   answers rota_wheel_next_deadline() with a pass over that timer's slot,
 *   and with connections touched round-robin the earliest timer is always
 *   the one just touched.
 *
 * THE STATELESS HELPERS
 *   rota_epoll_timeout() computes the timeout from the wheel's next deadline
 *   on every call: simplest, right for small wheels and for loops that do
 *   not touch; it pays rota_wheel_next_deadline() on every turn.
 *
 * ROUNDING
 *   A wait ends at or after the deadline, never before: milliseconds are
 *   rounded up from the clock's nanoseconds (not from whole ticks, so a 1 s
 *   tick does not add a second of lateness), and a timeout is 0 only when a
 *   timer is due already, so a loop never spins on epoll_wait(0) while
 *   waiting for a deadline a fraction of a millisecond away (redis#8764).
 *
 * ERRORS NEVER WAIT FOREVER
 *   epoll_wait() and poll() wait forever for any negative timeout, so the
 *   timeout never shares the return value with an error code: the functions
 *   below return 0 or a negative ROTA_E* code and store the timeout through
 *   a pointer; -1 there means "no timer pending" and nothing else.  On an
 *   error the stored timeout is 0, so a loop that ignores the error polls
 *   (and shows up in top) instead of sleeping through every deadline.
 *
 * THE WHEEL IS THE CALLER'S
 *   As with every rota adapter, rota_epoll_init() binds a wheel the caller
 *   has already initialised (rota_wheel_init(&wheel, rota_clock_now(&clock)))
 *   and arms for the timers it already holds; rota_epoll_close() is the
 *   teardown and leaves the wheel and its timers alone.
 *
 * CLOCKS
 *   The wheel's ticks are those of the struct rota_clock passed in
 *   (rota/clock.h).  CLOCK_MONOTONIC_COARSE is the same time line as
 *   CLOCK_MONOTONIC with a lower resolution: both work.  When a timerfd
 *   fires, CLOCK_MONOTONIC has reached the armed deadline even if the coarse
 *   clock has not caught up yet, so the dispatch advances the wheel to the
 *   armed deadline at least (never early, and no spinning until the coarse
 *   clock ticks).
 *
 *   ROTA_CLOCK_BOOTTIME (time that counts suspend, rota/clock.h) gets a
 *   CLOCK_BOOTTIME timerfd: a deadline that passes while the machine is
 *   suspended wakes the loop as soon as it resumes.  In timeout mode it
 *   works too, and is never early, but epoll_wait()'s timeout does not
 *   count suspend: a wait that spans one ends late by up to the time spent
 *   suspended.  Use ROTA_EPOLL_TIMERFD with a boottime clock.
 *
 * DELAYS FROM NOW: NEVER EARLY
 *   While bound, the adapter gives the wheel a time source
 *   (rota_wheel_set_time_source() in rota.h): its clock read afresh and
 *   rounded up.  So a delay counted from the wheel's now -
 *   rota_timer_arm_in(&wheel, t, d), or rota_timer_arm_at() and
 *   rota_timer_touch_at() with rota_wheel_now(&wheel) + d - starts at the
 *   call, and the timer fires no earlier than d ticks after it, wherever the
 *   call is made: while handling the events epoll_wait() returned (before
 *   rota_epoll_dispatch(), which in any case advances the wheel only once the
 *   armed deadline has come), in a wheel callback after others that ran long,
 *   or anywhere else in the program between two waits.  Without the source it
 *   would count from the adapter's last wake-up, which after an idle stretch
 *   can be seconds old, and fire at once.
 *
 *   The wheel's own time (what advance() was last given, the `late` of
 *   callbacks, rota_timer_remaining()) still moves only when the adapter
 *   wakes.  Each such call reads the clock once (tens of nanoseconds);
 *   deadlines from rota_clock_deadline_after() cost what they did, and
 *   arm_at(), touch_at() and cancel() never read it.  With a coarse clock the
 *   source reads CLOCK_MONOTONIC, which the coarse clock trails: a delay is
 *   never cut short by its lag.  rota_epoll_close() removes the source (unless
 *   the wheel has been given another since); while bound the wheel points at
 *   the struct, which must not move.
 *
 *   The stateless helpers bind nothing and set no source: a loop built on them
 *   advances the wheel itself, and counts delays from the time it last gave
 *   the wheel (or gives the wheel a source of its own).
 *
 * CALLBACK CONTEXT
 *   Timer callbacks run inside rota_epoll_dispatch() (inside
 *   rota_wheel_advance()): they may arm, touch and cancel timers freely;
 *   timers they arm are covered by the re-arm that ends the dispatch.  They
 *   must not call rota_epoll_dispatch() or rota_epoll_close().
 *
 * THREAD SAFETY
 *   As the wheel: a struct rota_epoll belongs to the thread that owns its
 *   wheel.  One per wheel.
 */
#ifndef ROTA_EPOLL_H
#define ROTA_EPOLL_H

#include <stdint.h>

#include "../rota.h"
#include "clock.h"
#include "loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- stateless */

/*
 * The timeout for epoll_wait() on `clock`'s reading now, stored in
 * *timeout_ms: milliseconds until the wheel's next deadline, rounded up; 0
 * when a timer is due; -1 when no timer is pending (wait forever); at most
 * INT_MAX.  Returns 0, or ROTA_EINVAL for a NULL argument (and stores 0).
 */
ROTA_API int rota_epoll_timeout(struct rota_wheel *wheel,
                                const struct rota_clock *clock,
                                int *timeout_ms);

/* As rota_epoll_timeout() at the instant `now_ns` (nanoseconds on the
 * clock's time line) for ticks of `tick_ns` nanoseconds: the pure function,
 * for callers with their own time source and for tests.  ROTA_EINVAL also
 * for tick_ns 0. */
ROTA_API int rota_epoll_timeout_from(struct rota_wheel *wheel, uint64_t now_ns,
                                     uint64_t tick_ns, int *timeout_ms);

/* ---------------------------------------------------- one timer per wheel */

/* rota_epoll_init() flag: carry the deadline in a timerfd. */
#define ROTA_EPOLL_TIMERFD 1u

/* All fields are private. */
struct rota_epoll {
    /* private */
    struct rota_loop_engine engine_; /* rota/loop.h */
    int tfd_; /* the timerfd, or -1 (timeout mode, or closed) */
    struct rota_catchup *catchup_; /* rota_epoll_set_catchup(), or NULL */
};

/*
 * Bind to `wheel` (already initialised with rota_wheel_init(), in ticks of
 * `clock`; the clock is copied) and arm at its next deadline.  `flags`: 0
 * or ROTA_EPOLL_TIMERFD.  0, ROTA_EINVAL (a NULL argument, a wheel never
 * initialised: zeroed, a clock never initialised, an unknown flag), or
 * ROTA_ESYS (timerfd_create() failed: errno says why).  After a failure
 * rota_epoll_close() is a harmless no-op.
 */
ROTA_API int rota_epoll_init(struct rota_epoll *et, struct rota_wheel *wheel,
                             const struct rota_clock *clock, unsigned flags);

/* The timerfd to watch for EPOLLIN, or -1 in timeout mode. */
ROTA_API int rota_epoll_fd(const struct rota_epoll *et);

/*
 * Call right before epoll_wait() and pass *timeout_ms as its timeout.
 * Re-arms first if a timer armed since the last call is earlier than the
 * arming.  Timeout mode: milliseconds until the armed deadline, rounded up;
 * 0 when it has passed; -1 when nothing is armed.  Timerfd mode: -1 (the
 * timerfd wakes the loop).  Returns 0, ROTA_EINVAL (a NULL argument) or
 * ROTA_ESYS (timerfd_settime() failed, errno says why); on an error
 * *timeout_ms is 0, so the loop polls instead of hanging.
 */
ROTA_API int rota_epoll_wait_ms(struct rota_epoll *et, int *timeout_ms);

/*
 * Re-arm if a timer armed since the last sync is earlier than the arming.
 * rota_epoll_wait_ms() does this; call it yourself only if you wait by
 * other means.  Returns 1 if the arming changed, 0 if not, ROTA_EINVAL,
 * ROTA_ESYS.
 */
ROTA_API int rota_epoll_sync(struct rota_epoll *et);

/*
 * Timeout mode: call after every epoll_wait(); O(1) unless the armed
 * deadline has passed.  Timerfd mode: call when the timerfd is readable.
 * When the armed deadline has been reached: advances the wheel to the
 * clock's time (running the callbacks of the due timers) and arms at the
 * new next deadline.  Returns the number of callbacks run, or ROTA_EINVAL,
 * ROTA_EBUSY (called from a callback of this wheel), ROTA_ESYS.
 */
ROTA_API int rota_epoll_dispatch(struct rota_epoll *et);

/*
 * Run at most `max_fires` callbacks per dispatch, and file at most as many
 * timers again (0, the default: no limit; rota_wheel_advance_max()).  The
 * rest stay due: the next rota_epoll_wait_ms() stores 0 (in timerfd mode
 * the timerfd is armed in the past) and the next dispatch resumes in
 * order, so neither a storm of expiries nor a slot of a million timers
 * that comes due can stall the loop's I/O for longer than one budget.
 */
ROTA_API void rota_epoll_set_budget(struct rota_epoll *et, size_t max_fires);

struct rota_catchup;

/*
 * Calm after a stall: advance the wheel through `c` (rota/catchup.h,
 * initialised by the caller, who keeps it valid while it is set), so that
 * after a stall overdue timers fire at the policy's rate, the OS timer
 * waking the loop again at rota_catchup_next_wake(); NULL removes it.
 * Takes the place of the budget while set.  0 or ROTA_EINVAL (et NULL).
 */
ROTA_API int rota_epoll_set_catchup(struct rota_epoll *et,
                                    struct rota_catchup *c);

/* The clock's time now, in ticks; 0 when et is NULL or never bound. */
ROTA_API uint64_t rota_epoll_now(const struct rota_epoll *et);

/* The deadline `delay_ns` nanoseconds from now on the adapter's clock,
 * rounded up to a tick (rota_clock_deadline_after()); ROTA_MAX_DEADLINE
 * when et is NULL or never bound. */
ROTA_API uint64_t rota_epoll_deadline_in(const struct rota_epoll *et,
                                         uint64_t delay_ns);

/* What the adapter did so far (rota/loop.h): the armed deadline, arming
 * changes (in timerfd mode, timerfd_settime() calls), wake-ups at the armed
 * deadline and their lateness.  Lets a test prove that touches and cancels
 * cost none.  All zero (armed ROTA_NEVER) when et is NULL. */
ROTA_API void rota_epoll_stats(const struct rota_epoll *et,
                               struct rota_loop_stats *out);

/* The teardown: close the timerfd, if any (idempotent; the wheel and its
 * timers are untouched).  Returns 0, then the struct may be freed, or
 * ROTA_EINVAL for a NULL et.  Not from the wheel's callbacks. */
ROTA_API int rota_epoll_close(struct rota_epoll *et);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_EPOLL_H */
