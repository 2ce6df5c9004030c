/* SPDX-License-Identifier: MIT */
/*
 * loop_ev.c - rota/ev.h: a rota wheel driven by one ev_timer.
 *
 * ev_timer takes a relative `after` that libev adds to its cached monotonic
 * time.  That cached time may be a whole loop iteration old when the
 * prepare watcher re-arms, and the timer would then expire before the
 * wheel's deadline: a wake-up for nothing.  So arm_at() reads our clock
 * first and then refreshes libev's (ev_now_update()): libev's base is then
 * at or after the instant `after` was measured from, and the ev_timer
 * expires at or after the deadline.  That costs two clock reads per re-arm,
 * and re-arms happen once per wake-up at most.
 *
 * libev queues the callbacks of expired timers and runs them after it has
 * processed its timer heap, so an ev_timer started again from its own
 * callback with after = 0 runs in the next iteration, after a poll: a
 * wheel timer that re-arms itself with delay 0 cannot starve the loop.
 */
#define _GNU_SOURCE /* loop_common.h: CLOCK_MONOTONIC_COARSE */
#include "loop_common.h"
#include "rota/ev.h"

#include <stddef.h>
#include <string.h>

uint64_t rota_ev_now(const struct rota_ev *rw)
{
    return rw == NULL ? 0 : rota_clock_now(&rw->clock_);
}

uint64_t rota_ev_deadline_after(const struct rota_ev *rw, uint64_t delay_ns)
{
    return rw == NULL ? ROTA_MAX_DEADLINE
                      : rota_clock_deadline_after(&rw->clock_, delay_ns);
}

static void arm_at(struct rota_ev *rw, uint64_t deadline)
{
    uint64_t at_ns = loop_ticks_to_ns(deadline, rota_clock_ns(&rw->clock_, 1));
    uint64_t now_ns = rota_clock_now_ns(&rw->clock_);
    double after = at_ns > now_ns ? (double)(at_ns - now_ns) / 1e9 : 0.0;

    ev_now_update(rw->loop_); /* after our reading: see the top */
    ev_timer_stop(rw->loop_, &rw->timer_);
    ev_timer_set(&rw->timer_, after, 0.);
    ev_timer_start(rw->loop_, &rw->timer_);
    rw->armed_ = deadline;
    rw->rearms_++;
}

int rota_ev_sync(struct rota_ev *rw)
{
    if (rw == NULL || !rw->started_)
        return ROTA_EINVAL;
    uint64_t next =
        loop_earlier_deadline(rw->wheel_, &rw->seen_armed_, rw->armed_);
    if (next == ROTA_NEVER)
        return 0;
    arm_at(rw, next);
    return 1;
}

static void on_ev_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct rota_ev *rw = rota_container_of(w, struct rota_ev, timer_);

    (void)loop;
    (void)revents;
    rw->wakeups_++;
    loop_count_wake(rw->late_ns_, &rw->clock_, rw->armed_);
    rw->armed_ = ROTA_NEVER; /* libev stopped the one-shot timer */
    rota_wheel_advance(rw->wheel_, rota_clock_now(&rw->clock_));
    rw->seen_armed_ = loop_armed_count(rw->wheel_);
    uint64_t next = rota_wheel_next_deadline(rw->wheel_);
    if (next != ROTA_NEVER)
        arm_at(rw, next);
}

static void on_ev_prepare(struct ev_loop *loop, ev_prepare *w, int revents)
{
    (void)loop;
    (void)revents;
    rota_ev_sync(rota_container_of(w, struct rota_ev, prepare_));
}

int rota_ev_init(struct rota_ev *rw, struct ev_loop *loop,
                 struct rota_wheel *wheel, const struct rota_clock *clock)
{
    if (rw == NULL)
        return ROTA_EINVAL;
    rw->started_ = 0;
    if (loop == NULL || !loop_can_bind(wheel, clock))
        return ROTA_EINVAL;
    rw->clock_ = *clock;
    rw->loop_ = loop;
    rw->wheel_ = wheel;
    rw->armed_ = ROTA_NEVER;
    rw->seen_armed_ = 0; /* so the sync below looks at the wheel */
    rw->rearms_ = 0;
    rw->wakeups_ = 0;
    memset(rw->late_ns_, 0, sizeof rw->late_ns_);
    ev_timer_init(&rw->timer_, on_ev_timer, 0., 0.);
    ev_prepare_init(&rw->prepare_, on_ev_prepare);
    ev_prepare_start(loop, &rw->prepare_);
    ev_unref(loop); /* the prepare watcher alone keeps nothing alive */
    rw->started_ = 1;
    loop_give_time_source(wheel, &rw->clock_); /* loop_common.h: why */
    rota_ev_sync(rw); /* timers the wheel already holds */
    return 0;
}

uint64_t rota_ev_rearms(const struct rota_ev *rw)
{
    return rw == NULL ? 0 : rw->rearms_;
}

uint64_t rota_ev_wakeups(const struct rota_ev *rw)
{
    return rw == NULL ? 0 : rw->wakeups_;
}

void rota_ev_lateness(const struct rota_ev *rw, struct rota_lateness *out)
{
    loop_copy_lateness(rw == NULL ? NULL : rw->late_ns_, out);
}

void rota_ev_close(struct rota_ev *rw)
{
    if (rw == NULL || !rw->started_)
        return;
    ev_timer_stop(rw->loop_, &rw->timer_);
    ev_ref(rw->loop_); /* undo the unref before stopping the watcher */
    ev_prepare_stop(rw->loop_, &rw->prepare_);
    rw->started_ = 0;
    rw->armed_ = ROTA_NEVER;
    loop_take_time_source(rw->wheel_, &rw->clock_);
}
