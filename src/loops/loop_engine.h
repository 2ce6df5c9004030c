/* SPDX-License-Identifier: MIT */
/*
 * loop_engine.h - the adapter engine (loop_engine.c): what every event-loop
 * adapter (loop_*.c) shares.  Internal: not installed.  The struct it works
 * on, struct rota_loop_engine, is in rota/loop.h because each adapter's
 * public struct embeds it.
 */
#ifndef ROTA_LOOP_ENGINE_H
#define ROTA_LOOP_ENGINE_H

#include "rota.h"
#include "rota/clock.h"
#include "rota/loop.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ticks * tick_ns, saturating: a deadline far away stays far away. */
static inline uint64_t loop_ticks_to_ns(uint64_t ticks, uint64_t tick_ns)
{
    if (ticks != 0 && tick_ns > UINT64_MAX / ticks)
        return UINT64_MAX;
    return ticks * tick_ns;
}

/* Unbound, nothing armed, counters and budget 0: what every init does
 * first, so that a close after a failed init is a no-op. */
ROTA_API void rota__loop_reset(struct rota_loop_engine *e);

/* Bind `wheel` and a copy of `clock`.  ROTA_EINVAL, leaving e unbound, for
 * a NULL argument, a wheel that never went through rota_wheel_init() (a
 * zeroed one) or a clock that never went through rota_clock_init(). */
ROTA_API int rota__loop_bind(struct rota_loop_engine *e,
                             struct rota_wheel *wheel,
                             const struct rota_clock *clock);

/* Once the adapter is ready: delays on the wheel count from the present on
 * the engine's clock (the essay in loop_engine.c). */
ROTA_API void rota__loop_publish(struct rota_loop_engine *e);

/* Unbind: take the time source back if it is still the engine's, forget
 * the arming.  Idempotent. */
ROTA_API void rota__loop_unbind(struct rota_loop_engine *e);

static inline bool rota__loop_bound(const struct rota_loop_engine *e)
{
    return e != NULL && e->wheel_ != NULL;
}

/* The sync rule: the deadline to arm the OS timer at, or ROTA_NEVER when it
 * stays (nothing armed since the last look, or nothing earlier). */
ROTA_API uint64_t rota__loop_earlier(struct rota_loop_engine *e);

/* After a wake-up (or at init): where the OS timer goes next.  `more`: the
 * budget left timers due, so at once (the wheel's time); else the wheel's
 * next deadline (ROTA_NEVER when empty). */
ROTA_API uint64_t rota__loop_next(struct rota_loop_engine *e, bool more);

/* The OS timer now wakes at `deadline`: one more rearm. */
static inline void rota__loop_armed(struct rota_loop_engine *e,
                                    uint64_t deadline)
{
    e->armed_ = deadline;
    e->rearms_++;
}

/* Arming failed (or was lost): the next sync asks the wheel again. */
static inline void rota__loop_retry(struct rota_loop_engine *e)
{
    e->seen_armed_ = UINT64_MAX;
}

/* A wake-up for the OS timer armed at `due`: count it and its lateness,
 * and return the time to advance the wheel to: the clock, but no earlier
 * than `floor` (a deadline the OS timer's own clock has passed, which a
 * coarse clock may not show yet) nor than the wheel's own time. */
ROTA_API uint64_t rota__loop_wake(struct rota_loop_engine *e, uint64_t due,
                                  uint64_t floor);

/* Advance the wheel to `now` within the budget: < 0 a ROTA_E* code, 0 when
 * nothing is left due, 1 when the budget left timers due.  *fired (may be
 * NULL) gets the number of callbacks run. */
ROTA_API int rota__loop_advance(struct rota_loop_engine *e, uint64_t now,
                                size_t *fired);

/* The shared part of rota_X_stats(): every field filled, the io_uring ones
 * 0.  All zero (armed ROTA_NEVER) for a NULL engine. */
ROTA_API void rota__loop_stats(const struct rota_loop_engine *e,
                               struct rota_loop_stats *out);

/* rota_X_deadline_in() and rota_X_now() on the engine's clock. */
ROTA_API uint64_t rota__loop_deadline_in(const struct rota_loop_engine *e,
                                         uint64_t delay_ns);
ROTA_API uint64_t rota__loop_now(const struct rota_loop_engine *e);

#endif
