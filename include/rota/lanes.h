/* SPDX-License-Identifier: MIT */
/*
 * rota/lanes.h - timeout lanes: many timers that share one duration, which
 * the program can change (rescale) for all of them at once.
 *
 * Most of a server's timers share a handful of durations: an idle timeout
 * of 30 s, a request timeout of 5 s.  A lane is one such duration.  A timer
 * armed in a lane is due `duration` ticks after it was armed (or last
 * touched), so the timers of a lane come due in the order they were armed:
 * the lane keeps them in a FIFO list, and arming or touching one is an
 * append at the tail, with no slot to compute and nothing to cascade.  Only
 * the lane's earliest timer is known to the wheel: the lane embeds one
 * struct rota_timer, pending at its head timer's deadline.
 *
 * Because every timer of a lane records when it was armed, not when it is
 * due, a lane's duration can change at any moment: each timer's deadline
 * becomes its arm time plus the new duration, at once, in O(1) whatever the
 * number of timers (one re-arm of the lane's wheel timer).  This is what an
 * overloaded server wants: shrink every idle timeout as memory or
 * connection slots run short, grow them back when the pressure goes.
 *
 * TIME
 *   As rota.h: ticks chosen by the caller, passed in.  A lane reads the
 *   time it arms a timer at from its wheel: rota_wheel_now() (the wheel's
 *   `now`, or the present when the wheel has a time source, as every
 *   event-loop adapter sets).  The arm time of a timer is never earlier
 *   than that of the timer armed before it in the same lane (it is raised
 *   to it if the wheel's time ever says otherwise), which keeps the FIFO in
 *   deadline order.  A timer's deadline is its arm time plus the lane's
 *   duration, saturated to ROTA_MAX_DEADLINE; it is computed, never stored.
 *
 * GUARANTEES
 *   - Never early: a lane's timer fires only in a rota_wheel_advance() (or
 *     advance_max()) of the lane's wheel whose `now` is at or after its
 *     deadline under the lane's duration at that moment.
 *   - Exact: it fires in the first such call, as rota.h's timers do; after
 *     a rescale, in the first call that reaches its new deadline (a timer
 *     that the new duration makes already due fires in the next call).
 *   - Order: one lane fires its due timers in deadline order (arm order).
 *     They fire together, when the lane's wheel timer fires: so within one
 *     advance the timers of different lanes, and plain timers, are not
 *     interleaved by deadline (each still fires in the right call, with
 *     its own `late`).  rota_wheel_advance_max() counts a lane's batch as
 *     one fire of its limit: a lane is for timers whose callbacks are
 *     short (a close, a flag).
 *   - Each armed timer ends exactly once: it fires, is cancelled, or is
 *     handed back by rota_lane_drain().
 *
 * COST
 *   Arm, touch and cancel: O(1), a list append and/or unlink, plus at most
 *   one store into the lane's wheel timer (rota_timer_touch_at()) when the
 *   lane's head changes, and a wheel arm when the lane was empty.  Expiry:
 *   O(1) per timer fired, plus one wheel fire and re-arm per lane per
 *   advance.  Rescale: O(1), one re-arm.  A lane timer is 24 bytes on
 *   64-bit targets (two links and the arm time); the callback is the
 *   lane's.
 *
 * OWNERSHIP
 *   struct rota_lane and struct rota_lane_timer are embedded in the
 *   caller's objects (recover yours with rota_container_of()).  While a
 *   timer is pending the lane links it into its list: its memory must stay
 *   valid and must not move.  Once rota_lane_cancel() has returned, its
 *   callback has started, or rota_lane_drain() has handed it back, the
 *   lane holds no reference to it.  A lane's wheel timer is pending on the
 *   wheel while the lane holds a timer: drain the lane (rota_lane_drain())
 *   before dropping the lane or the wheel, and before rota_wheel_drain() on
 *   that wheel (which would hand out the lane's own timer).
 *
 * CALLBACK CONTEXT
 *   A lane's callback runs inside rota_wheel_advance() of its wheel, with
 *   the timer already removed from the lane.  It may do what a wheel
 *   callback may (rota.h): arm, touch or cancel any lane timer (itself
 *   included) or wheel timer, change this or any lane's duration, and free
 *   the timer's container (not the lane: it is in use until the callback
 *   returns).  A timer armed or touched in a callback counts
 *   from the wheel's `now`; with a duration of 0 it is due at once and
 *   fires in the next advance, never in the same one (one exception: armed
 *   from a callback of another lane whose wheel timer has not fired yet in
 *   that advance, it may fire with that lane's batch; no lane fires twice
 *   in one advance, so nothing can loop).  rota_lane_drain() of the lane
 *   whose callback is running returns ROTA_EBUSY.
 *
 * THREAD SAFETY
 *   None: a lane belongs to its wheel's thread.
 *
 * ERRORS
 *   0 (or a documented count) on success, a negative ROTA_E* code from
 *   rota.h on failure: ROTA_EINVAL (a NULL pointer, a NULL callback, a
 *   lane never initialised), ROTA_EUNINIT (a lane timer in memory never
 *   passed to rota_lane_timer_init()), ROTA_EBUSY (above), and the errors of
 *   rota_timer_arm_at() on the lane's wheel.  That a pending timer belongs
 *   to the lane passed is the caller's word.
 */
#ifndef ROTA_LANES_H
#define ROTA_LANES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rota.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rota_lane;
struct rota_lane_timer;

/* Called when a lane's timer fires.  `late` is how many ticks after its
 * deadline (under the lane's duration at the fire) it fired. */
typedef void rota_lane_fn(struct rota_lane *lane, struct rota_lane_timer *timer,
                          uint64_t late);

/* Embed in your own object.  All fields are private: use the functions. */
struct rota_lane_timer {
    /* private: links in the lane's FIFO while pending; link_.prev is
     * ROTA__IDLE while idle, NULL in memory never initialised. */
    struct rota_link link_;
    uint64_t armed_at_; /* the time it was armed or last touched */
};

/* The scale that leaves a lane's duration as given (rota_lane_set_scale()). */
#define ROTA_LANE_SCALE_ONE 65536u

/* A lane.  Embed or allocate it yourself; all fields are private. */
struct rota_lane {
    /* private */
    struct rota_timer timer_; /* on the wheel at the head's deadline */
    struct rota_link fifo_;   /* pending timers, oldest arm time first */
    struct rota_link mark_;   /* in fifo_ while firing: the pass's end */
    struct rota_wheel *wheel_;
    rota_lane_fn *fn_;
    uint64_t base_;     /* the duration given */
    uint64_t duration_; /* base_ scaled: what deadlines use */
    uint64_t last_arm_; /* the latest arm time given to a timer */
    size_t count_;      /* pending timers */
    uint32_t scale_;    /* in 1/ROTA_LANE_SCALE_ONE of base_ */
    uint8_t firing_;
    uint8_t ready_; /* set by rota_lane_init() */
};

/*
 * Prepare a lane of `duration` ticks on `wheel`, whose timers call `fn`.
 * The lane starts empty, with scale ROTA_LANE_SCALE_ONE.  0, or
 * ROTA_EINVAL (lane, wheel or fn NULL).  A lane must not be initialised
 * again while it holds timers (drain it first).
 */
ROTA_API int rota_lane_init(struct rota_lane *lane, struct rota_wheel *wheel,
                            uint64_t duration, rota_lane_fn *fn);

/* Prepare a lane timer; call once before any other call on it (again only
 * while it is idle). */
ROTA_API void rota_lane_timer_init(struct rota_lane_timer *timer);

/*
 * Arm the timer in the lane, counting from the wheel's time
 * (rota_wheel_now()): due `duration` ticks later.  A timer pending in this
 * lane is moved, as rota_lane_touch() does.  O(1).  0, or ROTA_EINVAL,
 * ROTA_EUNINIT, or an error of arming the lane's wheel timer (the timer is
 * then not armed).
 */
ROTA_API int rota_lane_arm(struct rota_lane *lane,
                           struct rota_lane_timer *timer);

/*
 * Restart a pending timer's duration from the wheel's time (activity on an
 * idle connection): it moves to the tail of the lane.  O(1), an unlink and
 * an append; when it was the lane's earliest, one store into the lane's
 * wheel timer.  0, ROTA_ENOENT (not pending), ROTA_EINVAL, ROTA_EUNINIT.
 */
ROTA_API int rota_lane_touch(struct rota_lane *lane,
                             struct rota_lane_timer *timer);

/*
 * Cancel.  1 if the timer was pending, 0 if it was not (a safe no-op), or
 * ROTA_EINVAL, ROTA_EUNINIT.  When it leaves the lane empty, the lane's
 * wheel timer is cancelled too.  O(1).
 */
ROTA_API int rota_lane_cancel(struct rota_lane *lane,
                              struct rota_lane_timer *timer);

/*
 * Set the lane's duration (before scaling) to `duration` ticks: every
 * pending timer's deadline becomes its arm time plus the new (scaled)
 * duration at once.  Shrinking makes overdue timers due: they fire in the
 * next advance.  O(1).  0, ROTA_EINVAL, or an error of re-arming the
 * lane's wheel timer.
 */
ROTA_API int rota_lane_set_duration(struct rota_lane *lane, uint64_t duration);

/*
 * Scale the lane's duration by `scale` / ROTA_LANE_SCALE_ONE (65536 is 1.0,
 * 32768 halves it, 0 makes every timer due; above 65536 lengthens): the
 * duration deadlines use becomes ceil(duration * scale / 65536), saturated
 * to ROTA_MAX_DEADLINE, until the next call of this or
 * rota_lane_set_duration() (which keeps the scale).  Every pending timer
 * is re-timed at once, as rota_lane_set_duration() does.  O(1).  The
 * errors of rota_lane_set_duration().
 */
ROTA_API int rota_lane_set_scale(struct rota_lane *lane, uint32_t scale);

/* The duration the lane's deadlines use now (scaled), in ticks. */
ROTA_API uint64_t rota_lane_duration(const struct rota_lane *lane);

/* The number of timers pending in the lane.  O(1). */
ROTA_API size_t rota_lane_count(const struct rota_lane *lane);

/* A timer's deadline: its arm time plus the lane's duration now
 * (saturated).  Meaningful while it is pending, and inside its callback,
 * where it is the deadline that came due.  ROTA_NEVER for a timer never
 * armed. */
ROTA_API uint64_t rota_lane_deadline(const struct rota_lane *lane,
                                     const struct rota_lane_timer *timer);

/* Whether the timer is pending in some lane. */
ROTA_API bool rota_lane_timer_pending(const struct rota_lane_timer *timer);

/*
 * Remove every pending timer, oldest first, and hand each to fn(timer,
 * arg) (which may free it); cancel the lane's wheel timer.  The lane is
 * empty afterwards and stays usable; fn may arm timers in it again.  0,
 * ROTA_EINVAL (lane or fn NULL), ROTA_EBUSY (from this lane's callback).
 */
ROTA_API int rota_lane_drain(struct rota_lane *lane,
                             void (*fn)(struct rota_lane_timer *timer,
                                        void *arg),
                             void *arg);

/*
 * Check the lane's invariants: the list is linked both ways and holds
 * count timers, arm times never decrease along it, the wheel timer is
 * pending exactly when the lane holds timers, and never later than the
 * head's deadline.  O(timers).  For tests.  0, ROTA_EINVAL, or
 * ROTA_ECORRUPT with a static description in *why (when not NULL).
 */
ROTA_API int rota_lane_check(const struct rota_lane *lane, const char **why);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_LANES_H */
