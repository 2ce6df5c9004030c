/* SPDX-License-Identifier: MIT */
/*
 * loop_uv.c - rota/uv.h: a rota wheel driven by one uv_timer_t.
 *
 * The uv timer is armed at the wheel's next deadline, converted to the
 * loop's milliseconds and rounded up, so uv runs it once uv_now() has
 * reached the deadline and the advance that follows fires at least that
 * timer.  `armed_` remembers the arming; the prepare handle compares the
 * wheel's next deadline (cached in the wheel: O(levels)) with it before
 * every poll and starts the uv timer again only when the wheel has become
 * earlier.  Touches and cancels only ever make the wheel later, so they
 * never cause a start.
 *
 * Why the timer callback does not re-arm a timer that is due at once:
 * libuv 1.44 runs, in the same pass of its timer heap, any timer started
 * from a timer callback with a timeout of 0.  A wheel timer whose callback
 * re-arms itself with delay 0 (legal: it fires in the next advance) would
 * then spin inside uv__run_timers() forever.  The timer callback leaves that
 * case to the prepare handle, which runs after the timers of the turn; it is
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
#include "loop_common.h"
#include "rota/uv.h"

#include <stddef.h>
#include <string.h>

static uint64_t loop_ticks(const struct rota_uv *rw)
{
    /* uv_now() is in ms; a loop older than 584 years is not a concern. */
    return uv_now(rw->loop_) * 1000000u / rw->tick_ns_;
}

uint64_t rota_uv_now(const struct rota_uv *rw)
{
    return rw == NULL ? 0 : loop_ticks(rw);
}

uint64_t rota_uv_deadline_after(const struct rota_uv *rw, uint64_t delay_ns)
{
    return rw == NULL ? ROTA_MAX_DEADLINE
                      : rota_clock_deadline_after(&rw->clock_, delay_ns);
}

static void on_uv_timer(uv_timer_t *handle);

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
    rw->armed_ = deadline;
    rw->rearms_++;
}

int rota_uv_sync(struct rota_uv *rw)
{
    if (rw == NULL || !rw->bound_)
        return ROTA_EINVAL;
    uint64_t next =
        loop_earlier_deadline(rw->wheel_, &rw->seen_armed_, rw->armed_);
    if (next == ROTA_NEVER)
        return 0;
    arm_at(rw, next);
    return 1;
}

/* The wheel's next deadline, accounting for every arm so far. */
static uint64_t next_deadline(struct rota_uv *rw)
{
    rw->seen_armed_ = loop_armed_count(rw->wheel_);
    return rota_wheel_next_deadline(rw->wheel_);
}

static void on_uv_timer(uv_timer_t *handle)
{
    struct rota_uv *rw = rota_container_of(handle, struct rota_uv, timer_);
    uint64_t now = loop_ticks(rw);

    rw->wakeups_++;
    loop_count_wake(rw->late_ns_, &rw->clock_, rw->armed_);
    rw->armed_ = ROTA_NEVER; /* a one-shot uv timer is stopped when it runs */
    rota_wheel_advance(rw->wheel_, now);

    uint64_t next = next_deadline(rw);
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

    if (rw->deferred_) {
        /* Due at once (see the top): the turn's timers have run, so a
         * timeout of 0 runs in the next turn, after a poll. */
        rw->deferred_ = 0;
        uint64_t next = next_deadline(rw);
        if (next != ROTA_NEVER && next < rw->armed_)
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
    rw->bound_ = 0; /* rota_uv_close() after a failure: a no-op */
    rw->open_handles_ = 0;
    if (loop == NULL || !loop_can_bind(wheel, clock))
        return ROTA_EINVAL;
    rw->loop_ = loop;
    rw->wheel_ = wheel;
    rw->clock_ = *clock;
    rw->tick_ns_ = rota_clock_ns(clock, 1);
    rw->armed_ = ROTA_NEVER;
    rw->seen_armed_ = 0; /* so the sync below looks at the wheel */
    rw->rearms_ = 0;
    rw->wakeups_ = 0;
    memset(rw->late_ns_, 0, sizeof rw->late_ns_);
    rw->close_cb_ = NULL;
    rw->deferred_ = 0;
    if (uv_timer_init(loop, &rw->timer_) != 0)
        return ROTA_ESYS;
    rw->open_handles_++;
    if (uv_prepare_init(loop, &rw->prepare_) != 0 ||
        uv_prepare_start(&rw->prepare_, on_uv_prepare) != 0) {
        uv_close((uv_handle_t *)&rw->timer_, NULL);
        return ROTA_ESYS;
    }
    rw->open_handles_++;
    rw->bound_ = 1;
    rw->prepare_ref_ = 1; /* until its first run: see the top */
    loop_give_time_source(wheel, &rw->clock_); /* loop_common.h: why */
    rota_uv_sync(rw); /* timers the wheel already holds */
    return 0;
}

uint64_t rota_uv_rearms(const struct rota_uv *rw)
{
    return rw == NULL ? 0 : rw->rearms_;
}

uint64_t rota_uv_wakeups(const struct rota_uv *rw)
{
    return rw == NULL ? 0 : rw->wakeups_;
}

void rota_uv_lateness(const struct rota_uv *rw, struct rota_lateness *out)
{
    loop_copy_lateness(rw == NULL ? NULL : rw->late_ns_, out);
}

static void on_closed(uv_handle_t *handle)
{
    struct rota_uv *rw = handle->data;

    if (--rw->open_handles_ == 0 && rw->close_cb_ != NULL)
        rw->close_cb_(rw);
}

void rota_uv_close(struct rota_uv *rw, void (*cb)(struct rota_uv *rw))
{
    if (rw == NULL || !rw->bound_)
        return; /* init failed, or closed already */
    rw->bound_ = 0;
    loop_take_time_source(rw->wheel_, &rw->clock_);
    rw->close_cb_ = cb;
    rw->armed_ = ROTA_NEVER;
    rw->timer_.data = rw;
    rw->prepare_.data = rw;
    uv_close((uv_handle_t *)&rw->timer_, on_closed);
    uv_close((uv_handle_t *)&rw->prepare_, on_closed);
}
