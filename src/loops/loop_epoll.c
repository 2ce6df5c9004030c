/* SPDX-License-Identifier: MIT */
/*
 * loop_epoll.c - rota/epoll.h: the epoll_wait() timeout and the timerfd.
 *
 * Both follow the one-OS-timer rule of the header.  struct rota_epoll
 * remembers the deadline it wakes at (`armed_`), which is never later than
 * the wheel's earliest deadline: it is set from rota_wheel_next_deadline()
 * after each wake-up and lowered when a timer is armed earlier.  So touching
 * or cancelling never changes it, and a turn of the loop with nothing due
 * costs a counter comparison and a clock read, whatever the wheel holds.
 *
 * How a new earlier timer is noticed without asking the wheel on every turn:
 * the wheel's stats.armed counter (rota.h) grows with every arm, periodic
 * arm and touch to an earlier deadline - exactly the operations that can
 * make a timer earlier than `armed_`.  Cancels and later touches leave it
 * alone.  When it has not moved since the last sync, nothing can be earlier
 * than `armed_` and the wheel is not asked.
 *
 * Deadlines are ticks; the kernel wants nanoseconds.  A deadline so far away
 * that ticks * tick_ns overflows is saturated: the timerfd is then armed
 * centuries ahead, which is "never" for any process, and the wheel still
 * knows the true deadline.
 */
#define _GNU_SOURCE /* timerfd, CLOCK_MONOTONIC, CLOCK_BOOTTIME under -std=c11 */
#include "loop_common.h"
#include "rota/catchup.h"
#include "rota/epoll.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* Milliseconds from now_ns until at_ns, rounded up: a wait that ends short
 * of the deadline would wake the loop for nothing, and one of 0 ms would
 * make it spin until the deadline. */
static int ms_until(uint64_t at_ns, uint64_t now_ns)
{
    if (at_ns <= now_ns)
        return 0;
    uint64_t wait_ns = at_ns - now_ns;
    uint64_t ms = wait_ns / 1000000u + (wait_ns % 1000000u != 0);
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

int rota_epoll_timeout_at(struct rota_wheel *wheel, uint64_t now_ns,
                          uint64_t tick_ns, int *timeout_ms)
{
    if (timeout_ms != NULL)
        *timeout_ms = 0; /* an error never reads as "wait forever" */
    if (wheel == NULL || tick_ns == 0 || timeout_ms == NULL)
        return ROTA_EINVAL;
    uint64_t next = rota_wheel_next_deadline(wheel);
    *timeout_ms = next == ROTA_NEVER
                      ? -1
                      : ms_until(loop_ticks_to_ns(next, tick_ns), now_ns);
    return 0;
}

int rota_epoll_timeout(struct rota_wheel *wheel, const struct rota_clock *clock,
                       int *timeout_ms)
{
    if (timeout_ms != NULL)
        *timeout_ms = 0;
    if (wheel == NULL || clock == NULL || timeout_ms == NULL)
        return ROTA_EINVAL;
    if (rota_wheel_count(wheel) == 0) {
        *timeout_ms = -1; /* skip the clock read */
        return 0;
    }
    return rota_epoll_timeout_at(wheel, rota_clock_now_ns(clock),
                                 rota_clock_ns(clock, 1), timeout_ms);
}

/* ------------------------------------------------------ one timer per wheel */

/* Wake at `deadline` (ticks). */
static int arm_at(struct rota_epoll *et, uint64_t deadline)
{
    et->rearms_++;
    if (et->tfd_ >= 0) {
        uint64_t ns = loop_ticks_to_ns(deadline, rota_clock_ns(&et->clock_, 1));
        struct itimerspec its = {{0, 0}, {0, 0}};
        /* An all-zero it_value disarms: a deadline at instant 0 (already
         * past) becomes 1 ns, which fires at once as it should. */
        if (ns == 0)
            ns = 1;
        its.it_value.tv_sec = (time_t)(ns / 1000000000u);
        its.it_value.tv_nsec = (long)(ns % 1000000000u);
        if (timerfd_settime(et->tfd_, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
            et->seen_armed_ = UINT64_MAX; /* the next sync tries again */
            return ROTA_ESYS;
        }
    }
    et->armed_ = deadline;
    return 1;
}

/* After a wake-up (or at init): wake next at the wheel's next deadline. */
static int rearm(struct rota_epoll *et)
{
    et->seen_armed_ = loop_armed_count(et->wheel_);
    uint64_t next = rota_wheel_next_deadline(et->wheel_);
    if (next == ROTA_NEVER) {
        /* A spent timerfd stays quiet; a live one (init) is disarmed by
         * nothing: it was never armed. */
        et->armed_ = ROTA_NEVER;
        return 0;
    }
    return arm_at(et, next);
}

int rota_epoll_init(struct rota_epoll *et, struct rota_wheel *wheel,
                    const struct rota_clock *clock, unsigned flags)
{
    if (et == NULL)
        return ROTA_EINVAL;
    et->tfd_ = -1;
    et->armed_ = ROTA_NEVER;
    et->seen_armed_ = 0;
    et->rearms_ = 0;
    et->wakeups_ = 0;
    memset(et->late_ns_, 0, sizeof et->late_ns_);
    et->budget_ = 0;
    et->catchup_ = NULL;
    /* No wheel until it is checked: close after a failed init must not
     * read one that was never initialised. */
    et->wheel_ = NULL;
    if (!loop_can_bind(wheel, clock) || (flags & ~ROTA_EPOLL_TIMERFD) != 0)
        return ROTA_EINVAL;
    et->wheel_ = wheel;
    et->clock_ = *clock;
    if (flags & ROTA_EPOLL_TIMERFD) {
        /* The clock's own time line: CLOCK_BOOTTIME for a boottime clock,
         * so that the timerfd counts suspend as the wheel's ticks do (a
         * monotonic timerfd would wake a resumed machine late by the
         * length of the suspend); CLOCK_MONOTONIC otherwise (the coarse
         * clock is the same time line, and timerfd does not accept it). */
        clockid_t id = (clockid_t)et->clock_.id_ == CLOCK_BOOTTIME
                           ? CLOCK_BOOTTIME
                           : CLOCK_MONOTONIC;
        et->tfd_ = timerfd_create(id, TFD_NONBLOCK | TFD_CLOEXEC);
        if (et->tfd_ < 0)
            return ROTA_ESYS;
    }
    int rc = rearm(et);
    if (rc < 0)
        return rc;
    loop_give_time_source(wheel, &et->clock_); /* loop_common.h: why */
    return 0;
}

int rota_epoll_fd(const struct rota_epoll *et)
{
    return et == NULL ? -1 : et->tfd_;
}

uint64_t rota_epoll_armed(const struct rota_epoll *et)
{
    return et == NULL ? ROTA_NEVER : et->armed_;
}

void rota_epoll_set_budget(struct rota_epoll *et, size_t max_fires)
{
    if (et != NULL)
        et->budget_ = max_fires;
}

int rota_epoll_set_catchup(struct rota_epoll *et, struct rota_catchup *c)
{
    if (et == NULL)
        return ROTA_EINVAL;
    et->catchup_ = c;
    return 0;
}

uint64_t rota_epoll_rearms(const struct rota_epoll *et)
{
    return et == NULL ? 0 : et->rearms_;
}

uint64_t rota_epoll_wakeups(const struct rota_epoll *et)
{
    return et == NULL ? 0 : et->wakeups_;
}

void rota_epoll_lateness(const struct rota_epoll *et, struct rota_lateness *out)
{
    loop_copy_lateness(et == NULL ? NULL : et->late_ns_, out);
}

int rota_epoll_sync(struct rota_epoll *et)
{
    if (et == NULL || et->wheel_ == NULL)
        return ROTA_EINVAL;
    uint64_t next =
        loop_earlier_deadline(et->wheel_, &et->seen_armed_, et->armed_);
    if (next == ROTA_NEVER)
        return 0;
    /* During a catch-up a new timer waits its turn like the overdue ones:
     * waking for it would only be held back. */
    if (et->catchup_ != NULL && rota_catchup_active(et->catchup_))
        return 0;
    return arm_at(et, next);
}

int rota_epoll_wait_ms(struct rota_epoll *et, int *timeout_ms)
{
    if (timeout_ms != NULL)
        *timeout_ms = 0; /* an error never reads as "wait forever" */
    if (et == NULL || et->wheel_ == NULL || timeout_ms == NULL)
        return ROTA_EINVAL;
    int rc = rota_epoll_sync(et);
    if (rc < 0)
        return rc; /* the timerfd could not be armed: poll, never hang */
    if (et->tfd_ >= 0 || et->armed_ == ROTA_NEVER)
        *timeout_ms = -1;
    else
        *timeout_ms = ms_until(
            loop_ticks_to_ns(et->armed_, rota_clock_ns(&et->clock_, 1)),
            rota_clock_now_ns(&et->clock_));
    return 0;
}

int rota_epoll_dispatch(struct rota_epoll *et)
{
    if (et == NULL || et->wheel_ == NULL)
        return ROTA_EINVAL;
    bool expired = false;
    if (et->tfd_ >= 0) {
        uint64_t expirations;
        ssize_t got = read(et->tfd_, &expirations, sizeof expirations);
        if (got == (ssize_t)sizeof expirations)
            expired = true;
        else if (got < 0 && errno != EAGAIN && errno != EINTR)
            return ROTA_ESYS;
    }
    if (et->armed_ == ROTA_NEVER)
        return 0;
    uint64_t now = rota_clock_now(&et->clock_);
    if (expired && now < et->armed_) {
        /* CLOCK_MONOTONIC has reached the armed deadline; a coarse clock may
         * lag it by a few ms, and waiting for it would mean re-arming at a
         * past deadline, over and over, until it catches up. */
        now = et->armed_;
    }
    if (now < et->armed_)
        return 0; /* not yet: the common case in timeout mode */
    if (now < loop_wheel_time(et->wheel_))
        now = loop_wheel_time(et->wheel_); /* not a clock step back: above */
    et->wakeups_++;
    loop_count_wake(et->late_ns_, &et->clock_, et->armed_);
    if (et->catchup_ != NULL) {
        int fired = rota_catchup_advance(et->catchup_, et->wheel_, now);
        if (fired < 0)
            return fired;
        int rc;
        if (rota_catchup_active(et->catchup_)) {
            /* Held back: wake at the policy's next turn, not at once. */
            et->seen_armed_ = loop_armed_count(et->wheel_);
            rc = arm_at(et, rota_catchup_next_wake(et->catchup_, et->wheel_));
        } else {
            rc = rearm(et);
        }
        return rc < 0 ? rc : fired;
    }
    if (et->budget_ == 0) {
        int fired = rota_wheel_advance(et->wheel_, now);
        if (fired < 0)
            return fired;
        int rc = rearm(et);
        return rc < 0 ? rc : fired;
    }
    size_t fired = 0;
    int more = rota_wheel_advance_max(et->wheel_, now, et->budget_, &fired);
    if (more < 0)
        return more;
    int rc;
    if (more) {
        /* Timers remain due: wake again at once, after the loop polled. */
        et->seen_armed_ = loop_armed_count(et->wheel_);
        rc = arm_at(et, loop_wheel_time(et->wheel_));
    } else {
        rc = rearm(et);
    }
    if (rc < 0)
        return rc;
    return fired > INT_MAX ? INT_MAX : (int)fired;
}

void rota_epoll_close(struct rota_epoll *et)
{
    if (et == NULL)
        return;
    if (et->tfd_ >= 0)
        close(et->tfd_);
    et->tfd_ = -1;
    et->armed_ = ROTA_NEVER;
    loop_take_time_source(et->wheel_, &et->clock_);
}
