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
 * wheel timer that re-arms itself with delay 0 cannot starve the loop, and
 * timers the budget left due wait for that next iteration too.
 */
#define _GNU_SOURCE /* loop_engine.h: CLOCK_MONOTONIC_COARSE */
#include "loop_engine.h"
#include "rota/ev.h"

#include <stddef.h>

uint64_t rota_ev_now(const struct rota_ev *rw)
{
    return rota__loop_now(rw == NULL ? NULL : &rw->engine_);
}

uint64_t rota_ev_deadline_in(const struct rota_ev *rw, uint64_t delay_ns)
{
    return rota__loop_deadline_in(rw == NULL ? NULL : &rw->engine_, delay_ns);
}

static void arm_at(struct rota_ev *rw, uint64_t deadline)
{
    const struct rota_clock *clock = &rw->engine_.clock_;
    uint64_t at_ns = loop_ticks_to_ns(deadline, rota_clock_ns(clock, 1));
    uint64_t now_ns = rota_clock_now_ns(clock);
    double after = at_ns > now_ns ? (double)(at_ns - now_ns) / 1e9 : 0.0;

    ev_now_update(rw->loop_); /* after our reading: see the top */
    ev_timer_stop(rw->loop_, &rw->timer_);
    ev_timer_set(&rw->timer_, after, 0.);
    ev_timer_start(rw->loop_, &rw->timer_);
    rota__loop_armed(&rw->engine_, deadline);
}

int rota_ev_sync(struct rota_ev *rw)
{
    if (rw == NULL || !rw->started_)
        return ROTA_EINVAL;
    uint64_t next = rota__loop_earlier(&rw->engine_);
    if (next == ROTA_NEVER)
        return 0;
    arm_at(rw, next);
    return 1;
}

static void on_ev_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct rota_ev *rw = rota_container_of(w, struct rota_ev, timer_);
    struct rota_loop_engine *e = &rw->engine_;

    (void)loop;
    (void)revents;
    uint64_t now = rota__loop_wake(e, e->armed_, ROTA_NEVER);
    e->armed_ = ROTA_NEVER; /* libev stopped the one-shot timer */
    int more = rota__loop_advance(e, now, NULL);
    if (!rw->started_)
        return; /* closed from a callback, against the header's advice */
    uint64_t next = rota__loop_next(e, more > 0);
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
    rota__loop_reset(&rw->engine_);
    rw->started_ = 0;
    if (loop == NULL || rota__loop_bind(&rw->engine_, wheel, clock) != 0)
        return ROTA_EINVAL;
    rw->loop_ = loop;
    ev_timer_init(&rw->timer_, on_ev_timer, 0., 0.);
    ev_prepare_init(&rw->prepare_, on_ev_prepare);
    ev_prepare_start(loop, &rw->prepare_);
    ev_unref(loop); /* the prepare watcher alone keeps nothing alive */
    rw->started_ = 1;
    rota__loop_publish(&rw->engine_);
    rota_ev_sync(rw); /* timers the wheel already holds */
    return 0;
}

void rota_ev_set_budget(struct rota_ev *rw, size_t max_fires)
{
    if (rw != NULL)
        rw->engine_.budget_ = max_fires;
}

void rota_ev_stats(const struct rota_ev *rw, struct rota_loop_stats *out)
{
    if (out != NULL)
        rota__loop_stats(rw == NULL ? NULL : &rw->engine_, out);
}

int rota_ev_close(struct rota_ev *rw)
{
    if (rw == NULL)
        return ROTA_EINVAL;
    if (!rw->started_)
        return 0;
    ev_timer_stop(rw->loop_, &rw->timer_);
    ev_ref(rw->loop_); /* undo the unref before stopping the watcher */
    ev_prepare_stop(rw->loop_, &rw->prepare_);
    rw->started_ = 0;
    rota__loop_unbind(&rw->engine_);
    return 0;
}
