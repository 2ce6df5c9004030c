/* SPDX-License-Identifier: MIT */
/*
 * loop_uring.c - rota/uring.h: a rota wheel driven by one IORING_OP_TIMEOUT.
 *
 * The workload is rota/epoll.h's, on a ring: many timers, most of them
 * touched to a later deadline long before they are due, and a loop whose
 * every SQE is a cost (a slot in the submission queue, a completion to
 * reap).  So the adapter keeps one absolute timeout in flight, never later
 * than the wheel's earliest deadline, and spends SQEs in two cases only:
 * after the timeout fired (a new one at the new next deadline), and when a
 * timer was armed earlier than it (a move).  A touch never moves it: the
 * timeout then fires early, the wheel files the touched timer where it now
 * belongs, and the new timeout goes to the wheel's new next deadline.
 *
 * Noticing an earlier arm costs a counter comparison (the adapter engine,
 * loop_engine.c): the wheel counts every arm and earlier touch in
 * stats.armed, and only when that moved since the last sync is the wheel
 * asked for its next deadline.
 *
 * THE COMPLETIONS
 *   Two user_data values are the adapter's: the struct's address for
 *   timeouts, and the address + 1 for the remove/update operations.  The
 *   counters below say what is in flight:
 *     timeouts_  timeout SQEs without their completion yet.  Normally 1 or
 *                0; 2 for a moment after a remove + add, until the removed
 *                one reports -ECANCELED (or -ETIME if it fired first: then
 *                the remove reports -ENOENT and both wake-ups are harmless).
 *     inflight_  every SQE without its completion yet (close() reports it).
 *   A timeout completing with -ETIME is a wake-up.  The deadline that fired
 *   is not known exactly when two were in flight, but it is at least low_,
 *   the lowest deadline asked of any timeout in flight: CLOCK_MONOTONIC has
 *   passed it, so the wheel may be advanced to it even if a coarse clock
 *   lags (never early, and no arming in the past over and over).
 *
 * MOVING
 *   IORING_TIMEOUT_UPDATE changes the armed timeout in place (1 SQE).  It
 *   came in Linux 5.11 together with IORING_FEAT_EXT_ARG, which the ring
 *   reports; without that feature, or after the kernel answers an update
 *   with -EINVAL (a backport that has one and not the other), the timeout is
 *   removed and a new one added (2 SQEs, ordered: the kernel issues a
 *   submission's SQEs in order, so the remove cannot hit the new timeout).
 *   An update that finds nothing (-ENOENT) raced with the timeout firing:
 *   that completion is a wake-up, which arms again anyway.
 *
 * WHY NOT a timeout per timer, or IORING_OP_LINK_TIMEOUT per read: an SQE
 * (and a completion) for every touch is exactly the cost a wheel exists to
 * avoid, and the kernel's timeout list is a sorted list: O(n) per insert.
 *
 * Deadlines are ticks; the kernel wants nanoseconds.  A deadline whose
 * nanoseconds overflow is saturated: centuries ahead, "never" for a
 * process, while the wheel keeps the true deadline.
 */
#define _GNU_SOURCE /* CLOCK_MONOTONIC_COARSE under -std=c11 */
#include "loop_engine.h"
#include "rota/uring.h"

#include <errno.h>
#include <liburing.h>
#include <limits.h>
#include <string.h>
#include <time.h>

static uint64_t tag_timeout(const struct rota_uring *ut)
{
    return (uint64_t)(uintptr_t)ut;
}

static uint64_t tag_ctl(const struct rota_uring *ut)
{
    return (uint64_t)(uintptr_t)ut + 1;
}

static struct __kernel_timespec *timespec_of(struct rota_uring *ut)
{
    return &ut->ts_;
}

static void set_timespec(struct rota_uring *ut, uint64_t deadline)
{
    uint64_t ns =
        loop_ticks_to_ns(deadline, rota_clock_ns(&ut->engine_.clock_, 1));
    /* tv_sec is signed: keep it positive (centuries ahead is "never"). */
    if (ns > (uint64_t)INT64_MAX)
        ns = (uint64_t)INT64_MAX;
    ut->ts_.tv_sec = (long long)(ns / 1000000000u);
    ut->ts_.tv_nsec = (long long)(ns % 1000000000u);
}

static void prep_add(struct rota_uring *ut, struct io_uring_sqe *sqe)
{
    io_uring_prep_timeout(sqe, timespec_of(ut), 0, IORING_TIMEOUT_ABS);
    io_uring_sqe_set_data64(sqe, tag_timeout(ut));
    ut->timeouts_++;
}

/* Queue the SQEs that make the timeout fire at `deadline` (ticks): a new
 * timeout when none is in flight, else a move.  1, or ROTA_EAGAIN when the
 * submission queue has no room (the next sync tries again). */
static int arm_at(struct rota_uring *ut, uint64_t deadline)
{
    unsigned need = ut->timeouts_ == 0 || ut->can_update_ ? 1 : 2;
    if (io_uring_sq_space_left(ut->ring_) < need) {
        rota__loop_retry(&ut->engine_); /* the next sync asks again */
        return ROTA_EAGAIN;
    }
    set_timespec(ut, deadline);
    if (ut->timeouts_ == 0) {
        ut->low_ = deadline;
        prep_add(ut, io_uring_get_sqe(ut->ring_));
    } else if (ut->can_update_) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(ut->ring_);
        io_uring_prep_timeout_update(sqe, timespec_of(ut), tag_timeout(ut),
                                     IORING_TIMEOUT_ABS);
        io_uring_sqe_set_data64(sqe, tag_ctl(ut));
        ut->updates_++;
    } else {
        struct io_uring_sqe *sqe = io_uring_get_sqe(ut->ring_);
        io_uring_prep_timeout_remove(sqe, tag_timeout(ut), 0);
        io_uring_sqe_set_data64(sqe, tag_ctl(ut));
        prep_add(ut, io_uring_get_sqe(ut->ring_));
        ut->removes_++;
    }
    if (deadline < ut->low_)
        ut->low_ = deadline;
    ut->sqes_ += need;
    ut->inflight_ += need;
    rota__loop_armed(&ut->engine_, deadline);
    return 1;
}

int rota_uring_init(struct rota_uring *ut, struct io_uring *ring,
                    struct rota_wheel *wheel, const struct rota_clock *clock,
                    unsigned flags)
{
    if (ut == NULL)
        return ROTA_EINVAL;
    memset(ut, 0, sizeof *ut);
    rota__loop_reset(&ut->engine_);
    ut->low_ = ROTA_NEVER;
    ut->closed_ = 1; /* until bound: sync and close do nothing */
    if (ring == NULL || clock == NULL || (flags & ~ROTA_URING_NO_UPDATE) != 0 ||
        (ring->flags & IORING_SETUP_SQPOLL) != 0)
        return ROTA_EINVAL;
    /* The timeout runs on CLOCK_MONOTONIC: the clock must share its line. */
    if (clock->id_ != CLOCK_MONOTONIC && clock->id_ != CLOCK_MONOTONIC_COARSE)
        return ROTA_EINVAL;
    if (rota__loop_bind(&ut->engine_, wheel, clock) != 0)
        return ROTA_EINVAL;
    ut->ring_ = ring;
    ut->can_update_ = !(flags & ROTA_URING_NO_UPDATE) &&
                      (ring->features & IORING_FEAT_EXT_ARG) != 0;
    ut->closed_ = 0;
    rota__loop_publish(&ut->engine_);
    /* Ask the wheel now, to arm at once for the timers already pending. */
    uint64_t next = rota__loop_next(&ut->engine_, false);
    if (next == ROTA_NEVER)
        return 0;
    int rc = arm_at(ut, next);
    return rc < 0 ? rc : 0;
}

int rota_uring_sync(struct rota_uring *ut)
{
    if (ut == NULL)
        return ROTA_EINVAL;
    if (ut->closed_)
        return 0;
    /* armed_ is ROTA_NEVER when no timeout is in flight, so any deadline
     * is "earlier" then. */
    uint64_t next = rota__loop_earlier(&ut->engine_);
    if (next == ROTA_NEVER)
        return 0;
    return arm_at(ut, next);
}

/* After a wake-up: the timeout goes to the wheel's next deadline, or to now
 * when the budget left timers due. */
static int rearm(struct rota_uring *ut, bool more)
{
    struct rota_loop_engine *e = &ut->engine_;
    uint64_t next = rota__loop_next(e, more);
    if (ut->timeouts_ == 0)
        e->armed_ = ROTA_NEVER;
    /* A stale timeout still in flight at a later deadline costs one harmless
     * wake-up; it is moved only when the wheel needs it earlier. */
    if (next == ROTA_NEVER || next >= e->armed_)
        return 0;
    int rc = arm_at(ut, next);
    return rc < 0 ? rc : 0;
}

/* The timeout fired: advance the wheel and arm again.  Callbacks run. */
static int wake(struct rota_uring *ut, uint64_t fired_at_least)
{
    /* A coarse clock lags CLOCK_MONOTONIC, which passed fired_at_least. */
    uint64_t now =
        rota__loop_wake(&ut->engine_, fired_at_least, fired_at_least);
    ut->in_handle_ = 1;
    int more = rota__loop_advance(&ut->engine_, now, NULL);
    ut->in_handle_ = 0;
    if (more < 0)
        return more;
    if (ut->closed_)
        return 1;
    int rc = rearm(ut, more > 0);
    return rc < 0 ? rc : 1;
}
int rota_uring_handle(struct rota_uring *ut, const struct io_uring_cqe *cqe)
{
    if (ut == NULL || cqe == NULL)
        return ROTA_EINVAL;
    if (cqe->user_data == tag_ctl(ut)) {
        ut->inflight_--;
        if (cqe->res == -EINVAL && ut->can_update_) {
            /* The kernel has no IORING_TIMEOUT_UPDATE after all: the timeout
             * stayed where it was.  Move it the other way at the next
             * sync. */
            ut->can_update_ = 0;
            ut->engine_.armed_ = ROTA_NEVER;
            rota__loop_retry(&ut->engine_);
        }
        /* 0: moved or removed.  -ENOENT, -EALREADY: the timeout fired first;
         * its own completion is the wake-up. */
        return 1;
    }
    if (cqe->user_data != tag_timeout(ut))
        return 0;
    if (ut->in_handle_)
        return ROTA_EBUSY;
    ut->inflight_--;
    ut->timeouts_--;
    uint64_t low = ut->low_;
    if (ut->timeouts_ == 0)
        ut->low_ = ROTA_NEVER;
    if (cqe->res == -ETIME)
        return ut->closed_ ? 1 : wake(ut, low);
    if (ut->timeouts_ == 0 && !ut->closed_) {
        /* Removed by someone else, or refused: nothing wakes the loop now.
         * The next sync arms again. */
        ut->engine_.armed_ = ROTA_NEVER;
        rota__loop_retry(&ut->engine_);
    }
    if (cqe->res == -ECANCELED || cqe->res == 0)
        return 1;
    errno = -cqe->res;
    return ROTA_ESYS;
}

bool rota_uring_owns(const struct rota_uring *ut,
                     const struct io_uring_cqe *cqe)
{
    return ut != NULL && cqe != NULL &&
           (cqe->user_data == tag_timeout(ut) || cqe->user_data == tag_ctl(ut));
}

void rota_uring_set_budget(struct rota_uring *ut, size_t max_fires)
{
    if (ut != NULL)
        ut->engine_.budget_ = max_fires;
}

uint64_t rota_uring_now(const struct rota_uring *ut)
{
    return rota__loop_now(ut == NULL ? NULL : &ut->engine_);
}

uint64_t rota_uring_deadline_in(const struct rota_uring *ut, uint64_t delay_ns)
{
    return rota__loop_deadline_in(ut == NULL ? NULL : &ut->engine_, delay_ns);
}

void rota_uring_stats(const struct rota_uring *ut, struct rota_loop_stats *out)
{
    if (out == NULL)
        return;
    rota__loop_stats(ut == NULL ? NULL : &ut->engine_, out);
    if (ut == NULL)
        return;
    out->in_flight = ut->inflight_;
    out->sqes = ut->sqes_;
    out->updates = ut->updates_;
    out->removes = ut->removes_;
    out->update = ut->can_update_;
}

int rota_uring_close(struct rota_uring *ut)
{
    if (ut == NULL)
        return ROTA_EINVAL;
    if (!ut->closed_ && ut->timeouts_ > 0) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(ut->ring_);
        if (sqe == NULL)
            return ROTA_EAGAIN;
        io_uring_prep_timeout_remove(sqe, tag_timeout(ut), 0);
        io_uring_sqe_set_data64(sqe, tag_ctl(ut));
        ut->sqes_++;
        ut->inflight_++;
    }
    ut->closed_ = 1;
    rota__loop_unbind(&ut->engine_);
    return ut->inflight_ > INT_MAX ? INT_MAX : (int)ut->inflight_;
}
