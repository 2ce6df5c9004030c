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
 *     struct rota_wheel wheel;
 *     struct rota_uv rw;
 *     rota_uv_init(&rw, loop, &wheel, 1000000);      // 1 ms ticks
 *     rota_timer_init(&c->idle, on_idle);
 *     uint64_t idle_ns = 30ull * 1000000000;            // 30 s
 *     rota_timer_arm_at(&wheel, &c->idle, rota_uv_deadline_after(&rw, idle_ns));
 *     ... in the read callback:
 *     rota_timer_touch_at(&wheel, &c->idle, rota_uv_deadline_after(&rw, idle_ns));
 *     uv_run(loop, UV_RUN_DEFAULT);
 *
 * TIME
 *   The wheel's `now` is the loop's cached time, uv_now(), converted to
 *   ticks of `tick_ns` nanoseconds (rounded down).  Deadlines should come
 *   from rota_uv_deadline_after(), which reads the clock afresh (uv_hrtime(),
 *   the same CLOCK_MONOTONIC time line) and rounds up: the cached time can be
 *   a whole loop turn old and is truncated to milliseconds, so adding a delay
 *   to it can fire early - libuv's own uv_timer_t does exactly that
 *   (libuv#4773).  A timer fires when uv_now() has reached its deadline:
 *   never early.
 *
 * WHEN TO CALL rota_uv_sync()
 *   Arms made inside loop callbacks (I/O, timers, the wheel's own callbacks)
 *   need nothing: the prepare handle runs before the loop blocks.  Arms made
 *   outside the loop (before uv_run(), or after it returned) need one
 *   rota_uv_sync() before the loop runs again, because a loop with nothing
 *   else to do does not run its prepare handles.
 *
 * LIFETIME
 *   While the uv timer is armed it keeps the loop alive, as uv_timer_t
 *   does; the prepare handle does not.  It is armed for timers armed inside
 *   the loop and by rota_uv_sync(): timers armed outside the loop with no
 *   sync afterwards do not keep uv_run() from returning.  When the
 *   last timer is cancelled the uv timer stays armed (cancel never re-arms):
 *   it wakes once more, finds nothing, and stops.  rota_uv_close() closes the
 *   two handles; the struct may be freed when its callback has run.  The
 *   wheel is the caller's: cancel or drain its timers.
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

#ifdef __cplusplus
extern "C" {
#endif

struct rota_uv {
    /* private */
    uv_timer_t timer_;
    uv_prepare_t prepare_;
    uv_loop_t *loop_;
    struct rota_wheel *wheel_;
    struct rota_clock clock_;
    uint64_t tick_ns_;
    uint64_t armed_;      /* deadline (ticks) the uv timer is armed at */
    uint64_t seen_armed_; /* the wheel's stats.armed at the last sync */
    uint64_t rearms_;     /* uv_timer_start() calls */
    uint64_t wakeups_;    /* uv timer callbacks */
    void (*close_cb_)(struct rota_uv *rw);
    int open_handles_;
    uint8_t deferred_; /* a timer is due at once: the prepare arms it */
};

/*
 * Initialise `wheel` (rota_wheel_init() at the loop's current time) and the
 * two handles on `loop`, for ticks of `tick_ns` nanoseconds.  0, ROTA_EINVAL
 * (NULL, tick_ns 0), ROTA_ESYS (a libuv call failed).
 */
ROTA_API int rota_uv_init(struct rota_uv *rw, uv_loop_t *loop,
                          struct rota_wheel *wheel, uint64_t tick_ns);

/* The deadline for an event `delay_ns` nanoseconds from now, in ticks,
 * rounded up from a fresh clock reading: pass it to rota_timer_arm_at() or
 * rota_timer_touch_at(). */
ROTA_API uint64_t rota_uv_deadline_after(const struct rota_uv *rw,
                                         uint64_t delay_ns);

/* The loop's cached time, uv_now(), in ticks: the wheel's clock. */
ROTA_API uint64_t rota_uv_now(const struct rota_uv *rw);

/* Re-arm the uv timer if a timer armed since the last sync is earlier than
 * its arming.  O(1) when nothing was armed (see rota/epoll.h on the wheel's
 * `armed` counter).  Returns 1 if it did, 0 if not needed, ROTA_EINVAL. */
ROTA_API int rota_uv_sync(struct rota_uv *rw);

/* uv_timer_start() calls and uv timer wake-ups so far. */
ROTA_API uint64_t rota_uv_rearms(const struct rota_uv *rw);
ROTA_API uint64_t rota_uv_wakeups(const struct rota_uv *rw);

/* Close both handles; `cb` (may be NULL) runs from the loop once they are
 * closed, after which `rw` may be freed. */
ROTA_API void rota_uv_close(struct rota_uv *rw, void (*cb)(struct rota_uv *rw));

#ifdef __cplusplus
}
#endif

#endif /* ROTA_UV_H */
