/* SPDX-License-Identifier: MIT */
/*
 * loop_epoll.c - rota/epoll.h: the epoll_wait() timeout and the timerfd.
 *
 * Both follow the one-OS-timer rule of the adapter engine (loop_engine.c):
 * a turn of the loop with nothing due costs a counter comparison and a
 * clock read, whatever the wheel holds.  What is epoll's own: the timeout
 * in milliseconds rounded up, the timerfd on the clock's time line, and the
 * catch-up policy (rota/catchup.h), which only this adapter offers.
 *
 * Deadlines are ticks; the kernel wants nanoseconds.  A deadline so far away
 * that ticks * tick_ns overflows is saturated: the timerfd is then armed
 * centuries ahead, which is "never" for any process, and the wheel still
 * knows the true deadline.
 */
#define _GNU_SOURCE /* timerfd, CLOCK_MONOTONIC, CLOCK_BOOTTIME under -std=c11 */
#include "loop_engine.h"
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

int rota_epoll_timeout_from(struct rota_wheel *wheel, uint64_t now_ns,
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
    return rota_epoll_timeout_from(wheel, rota_clock_now_ns(clock),
                                   rota_clock_ns(clock, 1), timeout_ms);
}

/* ------------------------------------------------------ one timer per wheel */

/* Wake at `deadline` (ticks). */
static int arm_at(struct rota_epoll *et, uint64_t deadline)
{
    struct rota_loop_engine *e = &et->engine_;
    if (et->tfd_ >= 0) {
        uint64_t ns = loop_ticks_to_ns(deadline, rota_clock_ns(&e->clock_, 1));
        struct itimerspec its = {{0, 0}, {0, 0}};
        /* An all-zero it_value disarms: a deadline at instant 0 (already
         * past) becomes 1 ns, which fires at once as it should. */
        if (ns == 0)
            ns = 1;
        its.it_value.tv_sec = (time_t)(ns / 1000000000u);
        its.it_value.tv_nsec = (long)(ns % 1000000000u);
        if (timerfd_settime(et->tfd_, TFD_TIMER_ABSTIME, &its, NULL) != 0) {
            e->rearms_++;
            rota__loop_retry(e);
            return ROTA_ESYS;
        }
    }
    rota__loop_armed(e, deadline);
    return 1;
}

/* After a wake-up (or at init): wake next at `next`, or stay quiet (a spent
 * timerfd stays quiet; at init it was never armed). */
static int rearm(struct rota_epoll *et, uint64_t next)
{
    if (next == ROTA_NEVER) {
        et->engine_.armed_ = ROTA_NEVER;
        return 0;
    }
    return arm_at(et, next);
}

int rota_epoll_init(struct rota_epoll *et, struct rota_wheel *wheel,
                    const struct rota_clock *clock, unsigned flags)
{
    if (et == NULL)
        return ROTA_EINVAL;
    rota__loop_reset(&et->engine_);
    et->tfd_ = -1;
    et->catchup_ = NULL;
    if ((flags & ~ROTA_EPOLL_TIMERFD) != 0 ||
        rota__loop_bind(&et->engine_, wheel, clock) != 0)
        return ROTA_EINVAL;
    if (flags & ROTA_EPOLL_TIMERFD) {
        /* The clock's own time line: CLOCK_BOOTTIME for a boottime clock,
         * so that the timerfd counts suspend as the wheel's ticks do (a
         * monotonic timerfd would wake a resumed machine late by the
         * length of the suspend); CLOCK_MONOTONIC otherwise (the coarse
         * clock is the same time line, and timerfd does not accept it). */
        clockid_t id = (clockid_t)clock->id_ == CLOCK_BOOTTIME
                           ? CLOCK_BOOTTIME
                           : CLOCK_MONOTONIC;
        et->tfd_ = timerfd_create(id, TFD_NONBLOCK | TFD_CLOEXEC);
        if (et->tfd_ < 0) {
            rota__loop_unbind(&et->engine_);
            return ROTA_ESYS;
        }
    }
    int rc = rearm(et, rota__loop_next(&et->engine_, false));
    if (rc < 0) {
        rota_epoll_close(et);
        return rc;
    }
    rota__loop_publish(&et->engine_);
    return 0;
}

int rota_epoll_fd(const struct rota_epoll *et)
{
    return et == NULL ? -1 : et->tfd_;
}

uint64_t rota_epoll_now(const struct rota_epoll *et)
{
    return rota__loop_now(et == NULL ? NULL : &et->engine_);
}

uint64_t rota_epoll_deadline_in(const struct rota_epoll *et, uint64_t delay_ns)
{
    return rota__loop_deadline_in(et == NULL ? NULL : &et->engine_, delay_ns);
}

void rota_epoll_set_budget(struct rota_epoll *et, size_t max_fires)
{
    if (et != NULL)
        et->engine_.budget_ = max_fires;
}

int rota_epoll_set_catchup(struct rota_epoll *et, struct rota_catchup *c)
{
    if (et == NULL)
        return ROTA_EINVAL;
    et->catchup_ = c;
    return 0;
}

void rota_epoll_stats(const struct rota_epoll *et, struct rota_loop_stats *out)
{
    if (out != NULL)
        rota__loop_stats(et == NULL ? NULL : &et->engine_, out);
}

int rota_epoll_sync(struct rota_epoll *et)
{
    if (!rota__loop_bound(et == NULL ? NULL : &et->engine_))
        return ROTA_EINVAL;
    uint64_t next = rota__loop_earlier(&et->engine_);
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
    if (et == NULL || timeout_ms == NULL)
        return ROTA_EINVAL;
    int rc = rota_epoll_sync(et);
    if (rc < 0)
        return rc; /* the timerfd could not be armed: poll, never hang */
    const struct rota_loop_engine *e = &et->engine_;
    if (et->tfd_ >= 0 || e->armed_ == ROTA_NEVER)
        *timeout_ms = -1;
    else
        *timeout_ms =
            ms_until(loop_ticks_to_ns(e->armed_, rota_clock_ns(&e->clock_, 1)),
                     rota_clock_now_ns(&e->clock_));
    return 0;
}

int rota_epoll_dispatch(struct rota_epoll *et)
{
    if (!rota__loop_bound(et == NULL ? NULL : &et->engine_))
        return ROTA_EINVAL;
    struct rota_loop_engine *e = &et->engine_;
    bool expired = false;
    if (et->tfd_ >= 0) {
        uint64_t expirations;
        ssize_t got = read(et->tfd_, &expirations, sizeof expirations);
        if (got == (ssize_t)sizeof expirations)
            expired = true;
        else if (got < 0 && errno != EAGAIN && errno != EINTR)
            return ROTA_ESYS;
    }
    if (e->armed_ == ROTA_NEVER)
        return 0;
    /* An expired timerfd: CLOCK_MONOTONIC has reached the armed deadline,
     * which a coarse clock may not show yet. */
    if (!expired && rota_clock_now(&e->clock_) < e->armed_)
        return 0; /* not yet: the common case in timeout mode */
    uint64_t now = rota__loop_wake(e, e->armed_, expired ? e->armed_ : 0);
    if (et->catchup_ != NULL) {
        int fired = rota_catchup_advance(et->catchup_, e->wheel_, now);
        if (fired < 0)
            return fired;
        int rc;
        if (rota_catchup_active(et->catchup_)) {
            /* Held back: wake at the policy's next turn, not at once. */
            rota__loop_next(e, true);
            rc = arm_at(et, rota_catchup_next_wake(et->catchup_, e->wheel_));
        } else {
            rc = rearm(et, rota__loop_next(e, false));
        }
        return rc < 0 ? rc : fired;
    }
    size_t fired = 0;
    int more = rota__loop_advance(e, now, &fired);
    if (more < 0)
        return more;
    /* Timers left due by the budget: wake again at once, after the poll. */
    int rc = rearm(et, rota__loop_next(e, more > 0));
    if (rc < 0)
        return rc;
    return fired > INT_MAX ? INT_MAX : (int)fired;
}

int rota_epoll_close(struct rota_epoll *et)
{
    if (et == NULL)
        return ROTA_EINVAL;
    if (et->tfd_ >= 0)
        close(et->tfd_);
    et->tfd_ = -1;
    rota__loop_unbind(&et->engine_);
    return 0;
}
