/* SPDX-License-Identifier: MIT */
/*
 * loop_event.c - rota/event.h: a rota wheel driven by one libevent evtimer.
 *
 * event_add() takes a relative timeout that libevent adds to its cached
 * monotonic time, which may be a whole loop iteration old when the caller
 * syncs from an I/O callback; the timer would then expire before the
 * wheel's deadline.  So arm_at() reads our clock first and refreshes
 * libevent's cache afterwards (event_base_update_cache_time()), making the
 * evtimer expire at or after the deadline.  (libevent may use
 * CLOCK_MONOTONIC_COARSE when its resolution is 1 ms or better; a wake-up
 * that comes a little early finds nothing due and re-adds the evtimer: the
 * rule makes that harmless.)
 *
 * libevent activates expired timers and runs their callbacks afterwards, so
 * an evtimer re-added with a zero timeout from its own callback runs in the
 * next iteration, after a poll: a wheel timer that re-arms itself with delay
 * 0 cannot starve the loop.
 */
#define _GNU_SOURCE /* loop_common.h: CLOCK_MONOTONIC_COARSE */
#include "loop_common.h"
#include "rota/event.h"

#include <stddef.h>
#include <string.h>
#include <sys/time.h>

uint64_t rota_event_now(const struct rota_event *rw)
{
    return rw == NULL ? 0 : rota_clock_now(&rw->clock_);
}

uint64_t rota_event_deadline_after(const struct rota_event *rw,
                                   uint64_t delay_ns)
{
    return rw == NULL ? ROTA_MAX_DEADLINE
                      : rota_clock_deadline_after(&rw->clock_, delay_ns);
}

static int arm_at(struct rota_event *rw, uint64_t deadline)
{
    uint64_t at_ns = loop_ticks_to_ns(deadline, rota_clock_ns(&rw->clock_, 1));
    uint64_t now_ns = rota_clock_now_ns(&rw->clock_);
    uint64_t wait_ns = at_ns > now_ns ? at_ns - now_ns : 0;
    /* libevent adds the timeout to its time as a timeval; keep the seconds
     * well inside what it can add without overflowing (~68 years). */
    uint64_t sec = wait_ns / 1000000000u;
    if (sec > (uint64_t)1 << 31)
        sec = (uint64_t)1 << 31;
    /* Round the microseconds up: a timeval truncated to whole microseconds
     * could expire just before the deadline. */
    uint64_t usec = (wait_ns % 1000000000u + 999u) / 1000u;
    struct timeval tv = {(time_t)sec, (suseconds_t)usec};
    if (usec >= 1000000u) {
        tv.tv_sec += 1;
        tv.tv_usec = 0;
    }

    event_base_update_cache_time(rw->base_); /* after our reading */
    rw->rearms_++;
    if (event_add(rw->timer_, &tv) != 0) {
        rw->seen_armed_ = UINT64_MAX; /* the next sync tries again */
        return ROTA_ESYS;
    }
    rw->armed_ = deadline;
    return 1;
}

int rota_event_sync(struct rota_event *rw)
{
    if (rw == NULL || rw->timer_ == NULL)
        return ROTA_EINVAL;
    uint64_t next =
        loop_earlier_deadline(rw->wheel_, &rw->seen_armed_, rw->armed_);
    if (next == ROTA_NEVER)
        return 0;
    return arm_at(rw, next);
}

static void on_evtimer(evutil_socket_t fd, short what, void *arg)
{
    struct rota_event *rw = arg;

    (void)fd;
    (void)what;
    rw->wakeups_++;
    loop_count_wake(rw->late_ns_, &rw->clock_, rw->armed_);
    rw->armed_ = ROTA_NEVER; /* a non-persistent event is deleted once run */
    rota_wheel_advance(rw->wheel_, rota_clock_now(&rw->clock_));
    rw->seen_armed_ = loop_armed_count(rw->wheel_);
    uint64_t next = rota_wheel_next_deadline(rw->wheel_);
    if (next != ROTA_NEVER)
        arm_at(rw, next); /* on failure the next sync tries again */
}

int rota_event_init(struct rota_event *rw, struct event_base *base,
                    struct rota_wheel *wheel, const struct rota_clock *clock)
{
    if (rw == NULL)
        return ROTA_EINVAL;
    rw->timer_ = NULL;
    if (base == NULL || !loop_can_bind(wheel, clock))
        return ROTA_EINVAL;
    rw->clock_ = *clock;
    rw->base_ = base;
    rw->wheel_ = wheel;
    rw->armed_ = ROTA_NEVER;
    rw->seen_armed_ = 0; /* so the sync below looks at the wheel */
    rw->rearms_ = 0;
    rw->wakeups_ = 0;
    memset(rw->late_ns_, 0, sizeof rw->late_ns_);
    rw->timer_ = evtimer_new(base, on_evtimer, rw);
    if (rw->timer_ == NULL)
        return ROTA_ENOMEM;
    int rc = rota_event_sync(rw); /* timers the wheel already holds */
    if (rc < 0) {
        rota_event_close(rw);
        return rc;
    }
    loop_give_time_source(wheel, &rw->clock_); /* loop_common.h: why */
    return 0;
}

uint64_t rota_event_rearms(const struct rota_event *rw)
{
    return rw == NULL ? 0 : rw->rearms_;
}

uint64_t rota_event_wakeups(const struct rota_event *rw)
{
    return rw == NULL ? 0 : rw->wakeups_;
}

void rota_event_lateness(const struct rota_event *rw, struct rota_lateness *out)
{
    loop_copy_lateness(rw == NULL ? NULL : rw->late_ns_, out);
}

void rota_event_close(struct rota_event *rw)
{
    if (rw == NULL || rw->timer_ == NULL)
        return;
    event_free(rw->timer_); /* deletes it first if it is pending */
    rw->timer_ = NULL;
    rw->armed_ = ROTA_NEVER;
    loop_take_time_source(rw->wheel_, &rw->clock_);
}
