/* SPDX-License-Identifier: MIT */
/*
 * loop_common.h - what every event-loop adapter (loop_*.c) shares.  Internal:
 * not installed.
 */
#ifndef ROTA_LOOP_COMMON_H
#define ROTA_LOOP_COMMON_H

#include "rota.h"
#include "rota/clock.h"

#include <stdint.h>

/* ticks * tick_ns, saturating: a deadline far away stays far away. */
static inline uint64_t loop_ticks_to_ns(uint64_t ticks, uint64_t tick_ns)
{
    if (ticks != 0 && tick_ns > UINT64_MAX / ticks)
        return UINT64_MAX;
    return ticks * tick_ns;
}

/*
 * What every adapter's init accepts: a wheel that went through
 * rota_wheel_init() (the caller owns the wheel and its time) and an
 * initialised clock (a tick of 0 ns means rota_clock_init() never ran).
 * A zeroed wheel, such as a static one nobody initialised, is refused
 * rather than used: once initialised, the wheel's due list head points at
 * itself when empty, never at NULL (a private field, read here so that the
 * check costs one load; rota_wheel_check() would walk every timer).
 */
static inline bool loop_can_bind(const struct rota_wheel *wheel,
                                 const struct rota_clock *clock)
{
    return wheel != NULL && clock != NULL && wheel->due_.next != NULL &&
           rota_clock_ns(clock, 1) != 0;
}

/* The wheel's count of arms and earlier touches (rota_stats.armed): when it
 * has not moved since the last sync, no timer can have become earlier than
 * the OS timer's arming, and the wheel need not be asked for its next
 * deadline (which costs a pass over a slot after the earliest timer was
 * touched). */
static inline uint64_t loop_armed_count(const struct rota_wheel *wheel)
{
    struct rota_stats st;
    rota_wheel_stats(wheel, &st);
    return st.armed;
}

/*
 * The rule every adapter follows on sync: the OS timer, armed at `armed`,
 * moves only when a timer has become earlier than it.  Returns the deadline
 * to arm it at, or ROTA_NEVER when it stays: nothing was armed since
 * *seen_armed (which is brought up to date), or nothing is earlier.
 */
static inline uint64_t loop_earlier_deadline(struct rota_wheel *wheel,
                                             uint64_t *seen_armed,
                                             uint64_t armed)
{
    uint64_t count = loop_armed_count(wheel);
    if (count == *seen_armed)
        return ROTA_NEVER; /* nothing armed: nothing can be earlier */
    *seen_armed = count;
    uint64_t next = rota_wheel_next_deadline(wheel);
    return next < armed ? next : ROTA_NEVER;
}

#endif
