/* SPDX-License-Identifier: MIT */
/*
 * loop_common.h - what every event-loop adapter (loop_*.c) shares.  Internal:
 * not installed.
 */
#ifndef ROTA_LOOP_COMMON_H
#define ROTA_LOOP_COMMON_H

#ifndef _GNU_SOURCE
#error "loop_*.c: define _GNU_SOURCE first (CLOCK_MONOTONIC_COARSE below)"
#endif

#include "rota.h"
#include "rota/clock.h"

#include <stdint.h>
#include <time.h>

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

/*
 * NEVER EARLY FOR DELAYS: THE TIME SOURCE EVERY ADAPTER GIVES ITS WHEEL
 *
 * An adapter advances the wheel only when its OS timer wakes it, so the
 * wheel's `now` is the time of the last wake-up: after a quiet stretch it
 * is as old as the stretch.  A delay counted from it (rota_timer_arm_in(),
 * rota_wheel_now() + d) would then fire early, by up to the whole delay:
 * the loop's I/O callbacks run right after the poll returns, before any
 * hook of the adapter, and code between two runs of the loop sees the
 * wheel as the last run left it.
 *
 * The remedy chosen: each adapter, once bound, gives the wheel a time
 * source (rota_wheel_set_time_source()) that reads the adapter's clock
 * afresh, rounded up, exactly as *_deadline_after(0) does.  So the delay
 * starts at the instant of the call, wherever the call is made: in an I/O
 * callback, in a timer callback after others that ran long, in the
 * program between loop turns.  The alternatives fall short:
 *   - moving the wheel's time forward (an advance that fires nothing) at
 *     each point the adapter controls leaves the I/O callbacks of libuv,
 *     libev, libevent and sd-event with the old time (they run before any
 *     such point), and no loop gives a hook between a long callback and
 *     the next;
 *   - the loops' own cached times (uv_now(), ev_now(), libevent's cache,
 *     sd_event_now()) are fresh only at the start of a turn, libuv's is
 *     truncated to milliseconds, and each would need its own code.
 * The cost is one clock read (vDSO, tens of nanoseconds) per arm_in() or
 * rota_wheel_now() on a bound wheel; arm_at(), touch_at() and cancel()
 * never read it, and deadlines from *_deadline_after() cost what they did.
 *
 * A coarse clock lags the real time by up to a jiffy, which would make a
 * delay short by as much; the source reads CLOCK_MONOTONIC instead (the
 * same time line, so the wheel's advances, which follow the coarse clock,
 * only come later).  BOOTTIME is read as it is.
 *
 * The source's argument is the adapter's copy of the clock, so the
 * adapter's struct must stay where it is while bound (each header says so);
 * closing the adapter removes the source, unless the wheel has since been
 * given another one.
 */
static inline uint64_t loop_present(void *arg)
{
    struct rota_clock fine = *(const struct rota_clock *)arg;
#ifdef CLOCK_MONOTONIC_COARSE
    if ((clockid_t)fine.id_ == CLOCK_MONOTONIC_COARSE)
        fine.id_ = CLOCK_MONOTONIC;
#endif
    return rota_clock_deadline_after(&fine, 0);
}

/* Once bound: delays on `wheel` count from the present on `clock`. */
static inline void loop_give_time_source(struct rota_wheel *wheel,
                                         const struct rota_clock *clock)
{
    rota_wheel_set_time_source(wheel, loop_present, (void *)clock);
}

/* At close: take the source back if it is still this adapter's. */
static inline void loop_take_time_source(struct rota_wheel *wheel,
                                         const struct rota_clock *clock)
{
    if (wheel != NULL && wheel->time_fn_ == loop_present &&
        wheel->time_arg_ == (const void *)clock)
        rota_wheel_set_time_source(wheel, NULL, NULL);
}

/* The wheel's own time, the latest `now` it was advanced to (a private
 * field): what an adapter must compare its clock with.  rota_wheel_now()
 * reads the time source, which rounds up: advancing to it could fire a
 * timer up to a tick early. */
static inline uint64_t loop_wheel_time(const struct rota_wheel *wheel)
{
    return wheel->now_;
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

/*
 * A wake-up for the OS timer armed at `deadline` (ticks of `clock`):
 * count how late it came, in nanoseconds from the deadline's start to a
 * fresh clock reading, in `hist`'s log2 bucket (struct rota_lateness: 0 on
 * time, k for 2^(k-1)..2^k - 1 ns).  One clock read per wake-up, never per
 * timer.  What the adapters' *_lateness() calls copy out.
 */
static inline void loop_count_wake(uint64_t hist[ROTA_LATE_BUCKETS],
                                   const struct rota_clock *clock,
                                   uint64_t deadline)
{
    if (deadline == ROTA_NEVER)
        return;
    uint64_t due = loop_ticks_to_ns(deadline, rota_clock_ns(clock, 1));
    uint64_t now = rota_clock_now_ns(clock);
    uint64_t late = now > due ? now - due : 0;
    hist[late == 0 ? 0 : 64 - __builtin_clzll(late)]++;
}

/* Copy a wake-up histogram out (the adapters' *_lateness()). */
static inline void loop_copy_lateness(const uint64_t hist[ROTA_LATE_BUCKETS],
                                      struct rota_lateness *out)
{
    if (out == NULL)
        return;
    for (unsigned k = 0; k < ROTA_LATE_BUCKETS; k++)
        out->count[k] = hist == NULL ? 0 : hist[k];
}

#endif
