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
 * 0 cannot starve the loop, and timers the budget left due wait for that
 * next iteration too.
 */
#define _GNU_SOURCE /* loop_engine.h: CLOCK_MONOTONIC_COARSE */
#include "loop_engine.h"
#include "rota/event.h"

#include <stddef.h>
#include <sys/time.h>

uint64_t rota_event_now(const struct rota_event *rw)
{
    return rota__loop_now(rw == NULL ? NULL : &rw->engine_);
}

uint64_t rota_event_deadline_in(const struct rota_event *rw, uint64_t delay_ns)
{
    return rota__loop_deadline_in(rw == NULL ? NULL : &rw->engine_, delay_ns);
}

static int arm_at(struct rota_event *rw, uint64_t deadline)
{
    const struct rota_clock *clock = &rw->engine_.clock_;
    uint64_t at_ns = loop_ticks_to_ns(deadline, rota_clock_ns(clock, 1));
    uint64_t now_ns = rota_clock_now_ns(clock);
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
    if (event_add(rw->timer_, &tv) != 0) {
        rw->engine_.rearms_++;
        rota__loop_retry(&rw->engine_); /* the next sync tries again */
        return ROTA_ESYS;
    }
    rota__loop_armed(&rw->engine_, deadline);
    return 1;
}

int rota_event_sync(struct rota_event *rw)
{
    if (rw == NULL || rw->timer_ == NULL)
        return ROTA_EINVAL;
    uint64_t next = rota__loop_earlier(&rw->engine_);
    if (next == ROTA_NEVER)
        return 0;
    return arm_at(rw, next);
}

static void on_evtimer(evutil_socket_t fd, short what, void *arg)
{
    struct rota_event *rw = arg;
    struct rota_loop_engine *e = &rw->engine_;

    (void)fd;
    (void)what;
    uint64_t now = rota__loop_wake(e, e->armed_, ROTA_NEVER);
    e->armed_ = ROTA_NEVER; /* a non-persistent event is deleted once run */
    int more = rota__loop_advance(e, now, NULL);
    if (rw->timer_ == NULL)
        return; /* closed from a callback, against the header's advice */
    uint64_t next = rota__loop_next(e, more > 0);
    if (next != ROTA_NEVER)
        arm_at(rw, next); /* on failure the next sync tries again */
}

int rota_event_init(struct rota_event *rw, struct event_base *base,
                    struct rota_wheel *wheel, const struct rota_clock *clock)
{
    if (rw == NULL)
        return ROTA_EINVAL;
    rota__loop_reset(&rw->engine_);
    rw->timer_ = NULL;
    if (base == NULL || rota__loop_bind(&rw->engine_, wheel, clock) != 0)
        return ROTA_EINVAL;
    rw->base_ = base;
    rw->timer_ = evtimer_new(base, on_evtimer, rw);
    if (rw->timer_ == NULL) {
        rota__loop_unbind(&rw->engine_);
        return ROTA_ENOMEM;
    }
    int rc = rota_event_sync(rw); /* timers the wheel already holds */
    if (rc < 0) {
        rota_event_close(rw);
        return rc;
    }
    rota__loop_publish(&rw->engine_);
    return 0;
}

void rota_event_set_budget(struct rota_event *rw, size_t max_fires)
{
    if (rw != NULL)
        rw->engine_.budget_ = max_fires;
}

void rota_event_stats(const struct rota_event *rw, struct rota_loop_stats *out)
{
    if (out != NULL)
        rota__loop_stats(rw == NULL ? NULL : &rw->engine_, out);
}

int rota_event_close(struct rota_event *rw)
{
    if (rw == NULL)
        return ROTA_EINVAL;
    if (rw->timer_ == NULL)
        return 0;
    event_free(rw->timer_); /* deletes it first if it is pending */
    rw->timer_ = NULL;
    rota__loop_unbind(&rw->engine_);
    return 0;
}
