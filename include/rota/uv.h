/* SPDX-License-Identifier: MIT */
/*
 * rota/uv.h - drive a rota wheel from a libuv loop (library rota_uv).
 *
 * One uv_timer_t per wheel, armed at the wheel's next deadline, and one
 * uv_prepare_t that runs before every poll and re-arms the uv timer only if
 * a timer armed during the loop turn is earlier than the current arming.  So
 * the uv timer heap sees one start per wake-up at most, never one per arm,
 * touch or cancel: a connection touched on every read costs a store.
 *
 *     struct rota_clock clock;
 *     struct rota_wheel wheel;
 *     struct rota_uv rw;
 *     rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000); // 1 ms ticks
 *     rota_wheel_init(&wheel, rota_clock_now(&clock));
 *     rota_uv_init(&rw, loop, &wheel, &clock);
 *     rota_timer_init(&c->idle, on_idle);
 *     uint64_t idle_ns = 30ull * 1000000000;                // 30 s
 *     rota_timer_arm_at(&wheel, &c->idle,
 *                       rota_uv_deadline_in(&rw, idle_ns));
 *     ... in the read callback:
 *     rota_timer_touch_at(&wheel, &c->idle,
 *                         rota_uv_deadline_in(&rw, idle_ns));
 *     uv_run(loop, UV_RUN_DEFAULT);
 *
 * THE WHEEL IS THE CALLER'S
 *   As with every rota adapter, rota_uv_init() binds a wheel the caller has
 *   already initialised, on the clock's time line (CLOCK_MONOTONIC, which is
 *   also libuv's; the coarse clock is the same line) and in its ticks, and
 *   arms the uv timer for the timers it already holds.  The adapter never
 *   initialises, drains or frees the wheel: after rota_uv_close(), cancel or
 *   drain its timers, or bind it to another loop.
 *
 * TIME
 *   The wheel's `now` is the loop's cached time, uv_now(), converted to
 *   ticks of the clock (rounded down).  Deadlines should come from
 *   rota_uv_deadline_in(), which reads the clock afresh (the time line
 *   of uv_now()) and rounds up: the cached time can be a whole loop turn old
 *   and is truncated to milliseconds, so adding a delay to it can fire
 *   early - libuv's own uv_timer_t does exactly that (libuv#4773).  A timer
 *   fires when uv_now() has reached its deadline: never early.
 *
 * DELAYS FROM NOW: NEVER EARLY
 *   While bound, the adapter gives the wheel a time source
 *   (rota_wheel_set_time_source() in rota.h): its clock read afresh and
 *   rounded up.  So a delay counted from the wheel's now -
 *   rota_timer_arm_in(&wheel, t, d), or rota_timer_arm_at() and
 *   rota_timer_touch_at() with rota_wheel_now(&wheel) + d - starts at the
 *   call, and the timer fires no earlier than d ticks after it, wherever the
 *   call is made: in an I/O callback (libuv runs them right after its poll,
 *   before the adapter's uv timer has advanced the wheel), in a wheel callback
 *   after others that ran long, or between two uv_run() calls.  uv_now() would
 *   not do: it is as old as the loop turn and truncated to milliseconds.
 *   Without the source it would count from the adapter's last wake-up, which
 *   after an idle stretch can be seconds old, and fire at once.
 *
 *   The wheel's own time (what advance() was last given, the `late` of
 *   callbacks, rota_timer_remaining()) still moves only when the adapter
 *   wakes.  Each such call reads the clock once (tens of nanoseconds);
 *   deadlines from rota_uv_deadline_in() cost what they did, and arm_at(),
 *   touch_at() and cancel() never read it.  With a coarse clock the source
 *   reads CLOCK_MONOTONIC, which the coarse clock trails: a delay is never cut
 *   short by its lag.  rota_uv_close() removes the source (unless the wheel
 *   has been given another since); while bound the wheel points at the struct,
 *   which must not move.
 *
 * PENDING TIMERS KEEP THE LOOP ALIVE, AND WHEN TO CALL rota_uv_sync()
 *   The adapter learns of new timers before the loop next blocks (from a
 *   uv_prepare_t), and the uv timer it then arms keeps uv_run() running, as
 *   a uv_timer_t does.  So no sync is needed for timers armed
 *     - inside loop callbacks (I/O, timers, the wheel's own callbacks);
 *     - before rota_uv_init(), or between it and the first uv_run(): the
 *       adapter keeps the loop alive for one turn to look at the wheel.
 *   One case needs rota_uv_sync() before uv_run() is called again: timers
 *   armed outside the loop after uv_run() returned because nothing kept the
 *   loop alive (the wheel was empty then).  libuv runs no prepare handle in
 *   a loop with nothing alive: without the sync, uv_run() returns at once
 *   and the timers wait for the loop's next run.  A loop with other live
 *   handles (a listening socket) runs its prepare handles and needs no
 *   sync.  rota_uv_sync() is cheap: when unsure, call it after arming
 *   outside the loop.
 *
 * LIFETIME
 *   The prepare handle does not keep the loop alive (except for that first
 *   turn).  When the last timer is cancelled the uv timer stays armed
 *   (cancel never re-arms): it wakes once more, finds nothing, and stops;
 *   the loop can end then.  rota_uv_close() is the teardown, as for every
 *   adapter (rota/loop.h); because libuv closes handles from the loop, it
 *   returns the two handles still closing, and the struct may be freed only
 *   once the loop has run again and rota_uv_stats() reports in_flight 0.
 *
 * CALLBACK CONTEXT
 *   Timer callbacks run from the uv timer's callback, inside
 *   rota_wheel_advance() (see rota.h): they may use the loop and the wheel
 *   freely, except rota_uv_close() on this adapter.  A timer that re-arms
 *   itself with delay 0 fires on the next loop turn, after the loop has
 *   polled for I/O, not in the same turn.
 *
 * THREAD SAFETY
 *   As libuv: the adapter, the loop and the wheel belong to one thread.
 */
#ifndef ROTA_UV_H
#define ROTA_UV_H

/*
 * STRICT ISO C
 *   libuv's <uv.h> uses POSIX types (pthread_rwlock_t, ...) that glibc hides
 *   under -std=c11 unless a feature-test macro asks for them.  So when the
 *   compiler is in strict mode and nothing has asked yet, this header asks
 *   for POSIX.1-2008 (_POSIX_C_SOURCE 200809L) before any system header:
 *   `#include <rota/uv.h>` compiles under -std=c11 on its own, and the rest
 *   of the file sees POSIX too.  In the compilers' default gnu modes, or
 *   when the program defines a feature-test macro itself, nothing is
 *   defined.  Under -std=c11 a system header included before this one has
 *   already fixed glibc's choice without POSIX, and <uv.h> cannot compile:
 *   the #error below says so (include rota/uv.h first, or define
 *   _POSIX_C_SOURCE yourself).
 */
#if defined(__STRICT_ANSI__) && !defined(_POSIX_C_SOURCE) &&                   \
    !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) &&                        \
    !defined(_DEFAULT_SOURCE)
#if defined(__GLIBC__)
#error                                                                         \
    "rota/uv.h: under strict ISO C, include it before any system header, or define _POSIX_C_SOURCE 200809L first (libuv's uv.h needs POSIX types)"
#else
#define _POSIX_C_SOURCE 200809L
#endif
#endif

#include <stdint.h>

#include <uv.h>

#include "../rota.h"
#include "clock.h"
#include "loop.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rota_uv {
    /* private */
    struct rota_loop_engine engine_; /* rota/loop.h */
    uv_timer_t timer_;
    uv_prepare_t prepare_;
    uv_loop_t *loop_;
    uint64_t tick_ns_;
    int open_handles_;
    uint8_t bound_;       /* init succeeded and no close since */
    uint8_t prepare_ref_; /* the prepare handle keeps the loop alive */
    uint8_t deferred_;    /* a timer is due at once: the prepare arms it */
};

/*
 * Bind `wheel` (already initialised with rota_wheel_init(), in ticks of
 * `clock`, which is copied) to `loop`: initialise the two handles and arm
 * the uv timer at the wheel's next deadline if a timer is pending.  0,
 * ROTA_EINVAL (a NULL argument, a wheel never initialised: zeroed, a clock
 * never initialised), ROTA_ESYS (a libuv call failed).  After a failure
 * rota_uv_close() is a no-op.
 */
ROTA_API int rota_uv_init(struct rota_uv *rw, uv_loop_t *loop,
                          struct rota_wheel *wheel,
                          const struct rota_clock *clock);

/* The deadline for an event `delay_ns` nanoseconds from now, in ticks,
 * rounded up from a fresh clock reading: pass it to rota_timer_arm_at() or
 * rota_timer_touch_at(). */
ROTA_API uint64_t rota_uv_deadline_in(const struct rota_uv *rw,
                                      uint64_t delay_ns);

/* The loop's cached time, uv_now(), in ticks: the wheel's clock. */
ROTA_API uint64_t rota_uv_now(const struct rota_uv *rw);

/* Re-arm the uv timer if a timer armed since the last sync is earlier than
 * its arming (see PENDING TIMERS KEEP THE LOOP ALIVE for when to call it).
 * O(1) when nothing was armed (see rota/epoll.h on the wheel's `armed`
 * counter).  Returns 1 if it did, 0 if not needed, ROTA_EINVAL (NULL, not
 * bound, or closed). */
ROTA_API int rota_uv_sync(struct rota_uv *rw);

/*
 * Run at most `max_fires` callbacks per wake-up, and file at most as many
 * timers again (0, the default: no limit; rota_wheel_advance_max()).  The
 * rest stay due and run in the next turn of the loop, after a poll, so a
 * storm of expiries cannot stall the loop's I/O for longer than one budget.
 */
ROTA_API void rota_uv_set_budget(struct rota_uv *rw, size_t max_fires);

/* What the adapter did so far (rota/loop.h): the armed deadline,
 * uv_timer_start() calls, uv timer wake-ups and their lateness, and
 * in_flight, the handles libuv has still to close after rota_uv_close().
 * All zero (armed ROTA_NEVER) when rw is NULL. */
ROTA_API void rota_uv_stats(const struct rota_uv *rw,
                            struct rota_loop_stats *out);

/* The teardown: close both handles (the wheel and its timers are left
 * alone).  libuv closes handles from the loop: the count returned (2, or
 * after a failed init 0 or 1) is what remains to close, and `rw` may be
 * freed once rota_uv_stats() reports in_flight 0, after uv_run() has run
 * again.  Not from the wheel's callbacks.  A second call only returns the
 * count again.  ROTA_EINVAL for a NULL rw. */
ROTA_API int rota_uv_close(struct rota_uv *rw);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_UV_H */
