/* SPDX-License-Identifier: MIT */
/*
 * loop_engine.c - the adapter engine: the bookkeeping of the six event-loop
 * adapters (loop_*.c), each of which is only the glue to its loop library.
 *
 * THE WORKLOAD
 *   Many timers, most touched to a later deadline long before they are due
 *   (an idle-connection server touches one on every read), and a loop
 *   library whose timer calls cost: a system call (timerfd_settime(), an
 *   io_uring SQE), a heap operation (libuv, libev, libevent, sd-event).
 *
 * THE RULE
 *   One OS timer per wheel, armed at `armed_`, never later than the wheel's
 *   earliest deadline.  It moves after each wake-up (to the wheel's next
 *   deadline, or at once when the budget left timers due) and when a timer
 *   has become earlier than it; never on a touch to a later deadline or a
 *   cancel.  A wake-up that finds nothing due is harmless: the wheel files
 *   the touched timers where they now belong and the OS timer goes to the
 *   new next deadline.
 *
 * NOTICING AN EARLIER TIMER IN O(1)
 *   The wheel counts in stats.armed every arm, periodic arm and touch to an
 *   earlier deadline: exactly the operations that can make a timer earlier
 *   than `armed_`.  The engine remembers the count at its last look
 *   (`seen_armed_`); when it has not moved, nothing can be earlier and the
 *   wheel is not asked for its next deadline, which after the earliest
 *   timer was touched costs a pass over that timer's slot.  A failed arming
 *   sets `seen_armed_` to a count the wheel never reaches, so the next sync
 *   asks again.
 *
 * THE WAKE-UP
 *   rota__loop_wake() counts it, and its lateness from the armed deadline to
 *   a fresh clock reading (one clock read per wake-up, never per timer), and
 *   picks the time to advance to: never before the wheel's own time, and
 *   never before a deadline the OS timer's clock has passed when the
 *   adapter's clock is a coarse one that lags it (else the OS timer would be
 *   armed in the past again and again until the coarse clock caught up).
 *   rota__loop_advance() then spends the budget (rota_wheel_advance_max()),
 *   or runs everything due when there is none.
 *
 * What stays in each adapter: how its loop library is told the deadline
 * (units, rounding up, the library's cached time), when its callbacks run
 * (a timer due at once must not spin inside the library's timer pass), and
 * what it owes at close.
 */
#define _GNU_SOURCE /* CLOCK_MONOTONIC_COARSE under -std=c11 */
#include "loop_engine.h"

#include <string.h>
#include <time.h>

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
 * afresh, rounded up, exactly as rota_X_deadline_in(0) does.  So the delay
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
 * never read it, and deadlines from rota_X_deadline_in() cost what they did.
 *
 * A coarse clock lags the real time by up to a jiffy, which would make a
 * delay short by as much; the source reads CLOCK_MONOTONIC instead (the
 * same time line, so the wheel's advances, which follow the coarse clock,
 * only come later).  BOOTTIME is read as it is.
 *
 * The source's argument is the engine's copy of the clock, so the
 * adapter's struct must stay where it is while bound (each header says so);
 * closing the adapter removes the source, unless the wheel has since been
 * given another one.
 */
static uint64_t loop_present(void *arg)
{
    struct rota_clock fine = *(const struct rota_clock *)arg;
#ifdef CLOCK_MONOTONIC_COARSE
    if ((clockid_t)fine.id_ == CLOCK_MONOTONIC_COARSE)
        fine.id_ = CLOCK_MONOTONIC;
#endif
    return rota_clock_deadline_after(&fine, 0);
}

/* The wheel's count of arms and earlier touches (rota_stats.armed). */
static uint64_t armed_count(const struct rota_wheel *wheel)
{
    struct rota_stats st;
    rota_wheel_stats(wheel, &st);
    return st.armed;
}

void rota__loop_reset(struct rota_loop_engine *e)
{
    memset(e, 0, sizeof *e);
    e->armed_ = ROTA_NEVER;
}

/*
 * A zeroed wheel, such as a static one nobody initialised, is refused
 * rather than used: once initialised, the wheel's due list head points at
 * itself when empty, never at NULL (a private field, read here so that the
 * check costs one load; rota_wheel_check() would walk every timer).  A
 * clock whose tick is 0 ns never went through rota_clock_init().
 */
int rota__loop_bind(struct rota_loop_engine *e, struct rota_wheel *wheel,
                    const struct rota_clock *clock)
{
    if (wheel == NULL || clock == NULL || wheel->due_.link_.next == NULL ||
        rota_clock_ns(clock, 1) == 0)
        return ROTA_EINVAL;
    e->wheel_ = wheel;
    e->clock_ = *clock;
    e->armed_ = ROTA_NEVER;
    e->seen_armed_ = UINT64_MAX; /* the first sync asks the wheel */
    return 0;
}

void rota__loop_publish(struct rota_loop_engine *e)
{
    rota_wheel_set_time_source(e->wheel_, loop_present, &e->clock_);
}

void rota__loop_unbind(struct rota_loop_engine *e)
{
    struct rota_wheel *wheel = e->wheel_;
    if (wheel != NULL && wheel->time_fn_ == loop_present &&
        wheel->time_arg_ == (const void *)&e->clock_)
        rota_wheel_set_time_source(wheel, NULL, NULL);
    e->wheel_ = NULL;
    e->armed_ = ROTA_NEVER;
}

uint64_t rota__loop_earlier(struct rota_loop_engine *e)
{
    uint64_t count = armed_count(e->wheel_);
    if (count == e->seen_armed_)
        return ROTA_NEVER; /* nothing armed: nothing can be earlier */
    e->seen_armed_ = count;
    uint64_t next = rota_wheel_next_deadline(e->wheel_);
    return next < e->armed_ ? next : ROTA_NEVER;
}

uint64_t rota__loop_next(struct rota_loop_engine *e, bool more)
{
    e->seen_armed_ = armed_count(e->wheel_);
    /* The wheel's own time, the latest `now` it was advanced to (a private
     * field): rota_wheel_now() reads the time source, which rounds up. */
    return more ? e->wheel_->now_ : rota_wheel_next_deadline(e->wheel_);
}

uint64_t rota__loop_wake(struct rota_loop_engine *e, uint64_t due,
                         uint64_t floor)
{
    e->wakeups_++;
    uint64_t now_ns = rota_clock_now_ns(&e->clock_);
    if (due != ROTA_NEVER) {
        uint64_t due_ns = loop_ticks_to_ns(due, rota_clock_ns(&e->clock_, 1));
        uint64_t late = now_ns > due_ns ? now_ns - due_ns : 0;
        e->late_ns_[late == 0 ? 0 : 64 - __builtin_clzll(late)]++;
    }
    uint64_t now = rota_clock_now(&e->clock_);
    if (floor != ROTA_NEVER && now < floor)
        now = floor;
    if (now < e->wheel_->now_)
        now = e->wheel_->now_; /* not a clock step back: the floor above */
    return now;
}

int rota__loop_advance(struct rota_loop_engine *e, uint64_t now, size_t *fired)
{
    size_t n = 0;
    int more = 0;
    if (e->budget_ == 0) {
        int rc = rota_wheel_advance(e->wheel_, now);
        if (rc < 0)
            more = rc;
        else
            n = (size_t)rc;
    } else {
        more = rota_wheel_advance_max(e->wheel_, now, e->budget_, &n);
    }
    if (fired != NULL)
        *fired = n;
    return more;
}

void rota__loop_stats(const struct rota_loop_engine *e,
                      struct rota_loop_stats *out)
{
    memset(out, 0, sizeof *out);
    out->armed = ROTA_NEVER;
    if (e == NULL)
        return;
    out->armed = e->armed_;
    out->rearms = e->rearms_;
    out->wakeups = e->wakeups_;
    memcpy(out->lateness.count, e->late_ns_, sizeof e->late_ns_);
}

uint64_t rota__loop_deadline_in(const struct rota_loop_engine *e,
                                uint64_t delay_ns)
{
    /* The clock stays after a close; a tick of 0 ns: never initialised. */
    return e == NULL || rota_clock_ns(&e->clock_, 1) == 0
               ? ROTA_MAX_DEADLINE
               : rota_clock_deadline_after(&e->clock_, delay_ns);
}

uint64_t rota__loop_now(const struct rota_loop_engine *e)
{
    return e == NULL || rota_clock_ns(&e->clock_, 1) == 0
               ? 0
               : rota_clock_now(&e->clock_);
}
