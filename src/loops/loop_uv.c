/* SPDX-License-Identifier: MIT */
/*
 * loop_uv.c - rota/uv.h: a rota wheel driven by one uv_timer_t.
 *
 * The uv timer is armed at the wheel's next deadline, converted to the
 * loop's milliseconds and rounded up, so uv runs it once uv_now() has
 * reached the deadline and the advance that follows fires at least that
 timer.  The engine (loop_engine.c) remembers the arming; the prepare
 * handle syncs before every poll and starts the uv timer again only when the
 * wheel has become earlier.  Touches and cancels only ever make the wheel
 * later, so they never cause a start.
 *
 * Why the timer callback does not re-arm a timer that is due at once:
 * libuv 1.44 runs, in the same pass of its timer heap, any timer started
 * from a timer callback with a timeout of 0.  A wheel timer whose callback
 * re-arms itself with delay 0 (legal: it fires in the next advance) would
 * then spin inside uv__run_timers() forever.  The timer callback leaves that
 * case (and timers the budget left due) to the prepare handle, which runs after the timers of the turn; it is
 * ref'ed meanwhile so that a loop with nothing else alive still gets there.
 *
 * Why the prepare handle is ref'ed from init until its first run: uv_run()
 * returns at once, without running prepare handles, when no ref'ed handle is
 * active.  Timers armed between init and the first uv_run() have not been
 * seen by the adapter, so the uv timer may not be armed for them; the ref'ed
 * prepare makes uv_run() do one turn, whose prepare arms the uv timer (or,
 * with an empty wheel, unrefs itself so that the turn does not block and
 * the loop ends).  Ref'ing it for good would keep a loop with an empty
 * wheel blocked forever.
 */
#define _GNU_SOURCE /* uv.h needs pthread types under -std=c11 */
#include "loop_engine.h"
#include "rota/uv.h"

#include <stddef.h>

static uint64_t loop_ticks(const struct rota_uv *rw)
{
    /* uv_now() is in ms; a loop older than 584 years is not a concern. */
    return uv_now(rw->loop_) * 1000000u / rw->tick_ns_;
}

uint64_t rota_uv_now(const struct rota_uv *rw)
{
    return rw == NULL || rw->loop_ == NULL ? 0 : loop_ticks(rw);
}

uint64_t rota_uv_deadline_in(const struct rota_uv *rw, uint64_t delay_ns)
{
    return rota__loop_deadline_in(rw == NULL ? NULL : &rw->engine_, delay_ns);
}

static void on_uv_timer(uv_timer_t *handle);
static void on_closed(uv_handle_t *handle);

/* Whether the prepare handle keeps the loop alive (see the top). */
static void prepare_ref(struct rota_uv *rw, bool ref)
{
    if (ref == (rw->prepare_ref_ != 0))
        return;
    rw->prepare_ref_ = ref;
    if (ref)
        uv_ref((uv_handle_t *)&rw->prepare_);
    else
        uv_unref((uv_handle_t *)&rw->prepare_);
}

/* Start the uv timer so that it runs once uv_now() >= deadline (ticks). */
static void arm_at(struct rota_uv *rw, uint64_t deadline)
{
    uint64_t at_ns = loop_ticks_to_ns(deadline, rw->tick_ns_);
    uint64_t at_ms = at_ns / 1000000u + (at_ns % 1000000u != 0);
    uint64_t now_ms = uv_now(rw->loop_);

    /* uv adds the timeout to uv_now() (saturating), giving at_ms exactly. */
    uv_timer_start(&rw->timer_, on_uv_timer,
                   at_ms > now_ms ? at_ms - now_ms : 0, 0);
    rota__loop_armed(&rw->engine_, deadline);
}

int rota_uv_sync(struct rota_uv *rw)
{
    if (rw == NULL || !rw->bound_)
        return ROTA_EINVAL;
    uint64_t next = rota__loop_earlier(&rw->engine_);
    if (next == ROTA_NEVER)
        return 0;
    arm_at(rw, next);
    return 1;
}

static void on_uv_timer(uv_timer_t *handle)
{
    struct rota_uv *rw = rota_container_of(handle, struct rota_uv, timer_);
    struct rota_loop_engine *e = &rw->engine_;

    uint64_t now = rota__loop_wake(e, e->armed_, loop_ticks(rw));
    e->armed_ = ROTA_NEVER; /* a one-shot uv timer is stopped when it runs */
    int more = rota__loop_advance(e, now, NULL);
    if (!rw->bound_)
        return; /* closed from a callback, against the header's advice */

    uint64_t next = rota__loop_next(e, more > 0);
    if (next == ROTA_NEVER)
        return;
    if (next > now) {
        /* Strictly in the future, so uv will not run it in this pass. */
        arm_at(rw, next);
    } else {
        rw->deferred_ = 1;
        prepare_ref(rw, true);
    }
}

static void on_uv_prepare(uv_prepare_t *handle)
{
    struct rota_uv *rw = rota_container_of(handle, struct rota_uv, prepare_);
    struct rota_loop_engine *e = &rw->engine_;

    if (rw->deferred_) {
        /* Due at once (see the top): the turn's timers have run, so a
         * timeout of 0 runs in the next turn, after a poll. */
        rw->deferred_ = 0;
        uint64_t next = rota__loop_next(e, false);
        if (next != ROTA_NEVER && next < e->armed_)
            arm_at(rw, next);
    } else {
        rota_uv_sync(rw);
    }
    prepare_ref(rw, false); /* the uv timer, if armed, keeps the loop */
}

int rota_uv_init(struct rota_uv *rw, uv_loop_t *loop, struct rota_wheel *wheel,
                 const struct rota_clock *clock)
{
    if (rw == NULL)
        return ROTA_EINVAL;
    rota__loop_reset(&rw->engine_);
    rw->bound_ = 0; /* rota_uv_close() after a failure: a no-op */
    rw->open_handles_ = 0;
    rw->loop_ = NULL;
    if (loop == NULL || rota__loop_bind(&rw->engine_, wheel, clock) != 0)
        return ROTA_EINVAL;
    rw->loop_ = loop;
    rw->tick_ns_ = rota_clock_ns(clock, 1);
    rw->deferred_ = 0;
    if (uv_timer_init(loop, &rw->timer_) != 0) {
        rota__loop_unbind(&rw->engine_);
        return ROTA_ESYS;
    }
    rw->open_handles_++;
    if (uv_prepare_init(loop, &rw->prepare_) != 0 ||
        uv_prepare_start(&rw->prepare_, on_uv_prepare) != 0) {
        rota__loop_unbind(&rw->engine_);
        rw->timer_.data = rw;
        uv_close((uv_handle_t *)&rw->timer_, on_closed); /* in flight */
        return ROTA_ESYS;
    }
    rw->open_handles_++;
    rw->bound_ = 1;
    rw->prepare_ref_ = 1; /* until its first run: see the top */
    rota__loop_publish(&rw->engine_);
    rota_uv_sync(rw); /* timers the wheel already holds */
    return 0;
}

void rota_uv_set_budget(struct rota_uv *rw, size_t max_fires)
{
    if (rw != NULL)
        rw->engine_.budget_ = max_fires;
}

void rota_uv_stats(const struct rota_uv *rw, struct rota_loop_stats *out)
{
    if (out == NULL)
        return;
    rota__loop_stats(rw == NULL ? NULL : &rw->engine_, out);
    if (rw != NULL)
        out->in_flight = (uint64_t)rw->open_handles_ - (rw->bound_ ? 2 : 0);
}

static void on_closed(uv_handle_t *handle)
{
    struct rota_uv *rw = handle->data;

    rw->open_handles_--;
}

int rota_uv_close(struct rota_uv *rw)
{
    if (rw == NULL)
        return ROTA_EINVAL;
    if (!rw->bound_)
        return rw->open_handles_; /* init failed, or closed already */
    rw->bound_ = 0;
    rota__loop_unbind(&rw->engine_);
    rw->timer_.data = rw;
    rw->prepare_.data = rw;
    uv_close((uv_handle_t *)&rw->timer_, on_closed);
    uv_close((uv_handle_t *)&rw->prepare_, on_closed);
    return rw->open_handles_;
}
