/* SPDX-License-Identifier: MIT */
/*
 * rota/wheel-inl.h - the private part of rota.h: the wheel's fields and the
 * inline paths of arm, cancel, touch and advance.  rota.h includes it at
 * its end; include rota.h, never this file.  Nothing here is API: names
 * with a trailing underscore or a rota__ prefix change without notice.
 */
#ifndef ROTA_WHEEL_INL_H
#define ROTA_WHEEL_INL_H

#ifndef ROTA_H
#error "include rota.h, not rota/wheel-inl.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The wheel.  Embed or allocate it yourself; all fields are private. */
struct rota_wheel {
    /* private.  The first 64 bytes hold what the inline arm, cancel and
     * touch read. */
    uint64_t now_;       /* latest time the caller gave */
    uint64_t cur_;       /* time the lists are filed against (<= now_) */
    uint64_t next_step_; /* lower bound of the next slot that comes due */
    uint64_t earliest_;  /* exact earliest deadline, 0 when not known */
    /* The one wheel field the inline arm reads to file a deadline: it
     * files deadlines >= arm_min_ and leaves the rest to the library.
     * arm_min_ is above now_ and at or above next_step_ (so a deadline it
     * takes is not due, and stays so through the inline advance), and at
     * or above earliest_ (so the inline arm never lowers the earliest
     * deadline), and where every deadline >= it has the same slot against
     * arm_min_ - 1 as against cur_ (so the inline arm need not read cur_:
     * wheel_internal.h, arm_min_for()); UINT64_MAX while a slot is half
     * cascaded, and always in a debug build.  A deadline <= arm_min_
     * that leaves (cancel, touch, move) may be the earliest: the inline
     * paths then forget earliest_.
     * The inline cancel and touch take a timer whose link_.prev is above
     * pending_above_ for pending: ROTA__IDLE's value, or UINTPTR_MAX in a
     * debug build. */
    uint64_t arm_min_;
    uintptr_t pending_above_;
    uint32_t occupied_words_; /* bit i: occupied_[i] != 0 */
    uint8_t in_pass_;
    uint8_t late_run_; /* the lateness bucket of the open run (wheel.c) */
    uint8_t reserved_[2];
    uint64_t cascade_end_; /* end of the slot in cascade_, 0 when none */
    uint64_t rearmed_;     /* arms of pending timers: see pending_count() */
    uint64_t refired_;     /* fires after which a periodic timer stayed */
    uint64_t cascade_mid_; /* deadlines in [mid, end) of the cascaded slot go
                              to the level below, behind its marks_ */
    struct rota_stats stats_;
    /* Timers due at cur_, in firing order, in the list whose head is
     * due_.link_: due_ is a timer never armed, its deadline ROTA_NEVER
     * (no run of fires has it), so the fire loop reads the deadline of
     * the head's next without testing for the head first. */
    struct rota_timer due_;
    struct rota_link deferred_; /* armed during a pass, due at once */
    struct rota_link cascade_;  /* a slot being filed again, front first */
    /* Slot number level * ROTA_WHEEL_SLOTS + index: its list and its bit. */
    uint64_t occupied_[ROTA_WHEEL_LEVELS * ROTA_WHEEL_SLOTS / 64];
    uint64_t marked_[ROTA_WHEEL_SLOTS / 64]; /* which marks_ are in a list */
    struct rota_link slot_[ROTA_WHEEL_LEVELS * ROTA_WHEEL_SLOTS];
    /* While a slot is cascaded: in the slot of index i of the level below,
     * marks_[i] separates the timers filed from the cascade's front (before
     * it) from those filed from its back (after it). */
    struct rota_link marks_[ROTA_WHEEL_SLOTS];
    /* rota_wheel_set_time_source(): read by rota_wheel_now() and
     * rota_timer_arm_in() only; NULL when none is set. */
    uint64_t (*time_fn_)(void *arg);
    void *time_arg_;
    /* rota_wheel_lateness(): counted by runs of one bucket (wheel.c). */
    uint64_t late_[ROTA_LATE_BUCKETS];
};

/* link_.prev of an idle timer: not the address of any link (odd, and in
 * the first page, which no C object occupies).  Private. */
#define ROTA__IDLE ((struct rota_link *)(uintptr_t)5u)

/* Private: struct rota_periodic's schedule word, sched_: the period (at
 * most ROTA_MAX_PERIOD) above two bits that hold the policy.  The period
 * is read on every fire, the policy only by a late one. */
#define ROTA__MISSED_BITS 2u
static inline uint64_t rota__sched(uint64_t period, enum rota_missed missed)
{
    return period << ROTA__MISSED_BITS | (uint64_t)missed;
}
static inline uint64_t rota__sched_period(uint64_t sched)
{
    return sched >> ROTA__MISSED_BITS;
}
static inline enum rota_missed rota__sched_missed(uint64_t sched)
{
    return (enum rota_missed)(sched & ((1u << ROTA__MISSED_BITS) - 1u));
}

/* Private, for the inline functions: a list the caller just emptied by
 * unlinking its last timer; clears the slot's occupancy bit if `head` is a
 * slot's list. */
ROTA_API void rota__list_emptied(struct rota_wheel *wheel,
                                 struct rota_link *head);

#if defined(__GNUC__)
/* Private: the number (level * ROTA_WHEEL_SLOTS + digit) of the slot a
 * deadline later than `cur` is filed in, and in *shift its level's first
 * bit: the slot starts at deadline >> *shift << *shift.  The level is that
 * of the highest bit in which the two differ (63 ^ clz is that bit).  The
 * one spelling of the slot geometry, for the inline arm and the library's
 * own filing; written from the level's first bit, because computing the
 * level first makes compilers divide and multiply back, and each term in
 * unsigned, widened alone: a 32-bit result is widened for free where it is
 * computed, but a 32-bit sum widened after the add costs a move (and a
 * signed or size_t mix sign-extends). */
static inline size_t rota__slot_for(uint64_t deadline, uint64_t cur,
                                    size_t *shift)
{
    unsigned top = 63u ^ (unsigned)__builtin_clzll(deadline ^ cur);
    unsigned first = top & ~(ROTA_WHEEL_BITS - 1u); /* BITS: a power of 2 */
    *shift = first;
    return (size_t)(first * (ROTA_WHEEL_SLOTS / ROTA_WHEEL_BITS)) +
           (size_t)((unsigned)(deadline >> first) & (ROTA_WHEEL_SLOTS - 1));
}
#endif

/* Private: slot `slot`'s list head, &wheel->slot_[slot], from a byte offset
 * (one instruction fewer than indexing the array). */
static inline struct rota_link *rota__slot_head(struct rota_wheel *wheel,
                                                size_t slot)
{
    return (struct rota_link *)(void *)((char *)wheel->slot_ +
                                        slot * sizeof(struct rota_link));
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) &&                            \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ROTA__INLINE_PATHS 1
/* Private: a timer's two links in one 16-byte store. */
static inline void rota__write_links(struct rota_timer *timer,
                                     struct rota_link *next,
                                     struct rota_link *prev)
{
    typedef uintptr_t rota__two_links
        __attribute__((vector_size(2 * sizeof(uintptr_t))));
    rota__two_links links = {(uintptr_t)next, (uintptr_t)prev};
    __builtin_memcpy(&timer->link_, &links, sizeof links);
}

/* Private: the one call of the inline arm, for all it does not finish.
 * `head`: the inline arm has just filed the timer (the only one there)
 * into that slot's list, which was empty: the library sets the slot's
 * occupancy bits.  Nothing else changes: the slot starts at or above
 * arm_min_, hence at or above the bound on the next slot start (in a
 * callback, above cur_, where a pass keeps that bound: wheel.c, "what an
 * operation costs"), and the deadline is not below the earliest one.
 * NULL: everything else, as
 * rota_timer_arm_at_noinline().  One call site for every case, so that a
 * caller's fast path needs no stack frame (compilers set one up for the
 * whole function when two calls are reached from different branches). */
ROTA_API int rota__arm_finish(struct rota_wheel *wheel,
                              struct rota_timer *timer, uint64_t deadline,
                              struct rota_link *head);

/* Private: file a timer that is in no list at a deadline >= min, the
 * wheel's arm_min_ (so not due, not inside a slot being cascaded, and not
 * below the earliest deadline: the library files the other cases).  The
 * append is the same into an empty list (whose tail is its head) as into
 * a busy one.  Returns NULL, or the head of the slot when it was empty:
 * its occupancy bits are rota__arm_finish()'s to set.  The slot is found
 * against min - 1, not cur_: the library keeps arm_min_ where every
 * deadline >= it has the same slot against either (set_arm_min()), and
 * the inline arm has min in a register already.  A busy slot's occupancy
 * bits are already right. */
static inline struct rota_link *rota__file_fast(struct rota_wheel *wheel,
                                                struct rota_timer *timer,
                                                uint64_t deadline, uint64_t min)
{
    size_t shift, slot = rota__slot_for(deadline, min - 1, &shift);
    struct rota_link *head = rota__slot_head(wheel, slot), *tail = head->prev;

    rota__write_links(timer, head, tail);
    timer->deadline_ = deadline;
    tail->next = &timer->link_;
    head->prev = &timer->link_;
    wheel->stats_.armed++;
    return tail == head ? head : NULL;
}

/* Private: take a pending timer out of its list for a move to a deadline
 * >= min, in the common case: it is not alone in its list.  It leaves as
 * rota_timer_cancel() takes it (the list stays busy, so no occupancy bit
 * changes and nothing is called before the filing) and is then filed as
 * an idle one; counted as an arm of a pending timer (rearmed_), as the
 * library counts it.  False, with nothing changed, when it is alone: the
 * library's call moves it. */
static inline bool rota__unlink_moved(struct rota_wheel *wheel,
                                      struct rota_timer *timer, uint64_t min)
{
    struct rota_link *prev = timer->link_.prev, *next = timer->link_.next;
    if (prev == next)
        return false;
    prev->next = next;
    next->prev = prev;
    wheel->rearmed_++;
    if (timer->deadline_ <= min)
        wheel->earliest_ = 0; /* the cached earliest may be gone */
    return true;
}

#endif

/* Private, for a layer that keeps its timers in memory it moves itself
 * (rota/keyed.h): whether the two calls below may stand in for the
 * library's on this wheel.  False where the library is a debug build
 * (pending_above_ says so), which seals each timer it leaves and must see
 * every init and move. */
static inline bool rota__plain_wheel(const struct rota_wheel *wheel)
{
    return wheel->pending_above_ == (uintptr_t)ROTA__IDLE;
}

/* Private: rota_timer_init(timer, fn) inline, fn not NULL, for a timer of
 * a rota__plain_wheel(). */
static inline void rota__timer_init_plain(struct rota_timer *timer,
                                          rota_timer_fn *fn)
{
    timer->link_.prev = ROTA__IDLE;
    timer->link_.next = NULL;
    timer->deadline_ = 0;
    timer->fn_ = fn;
#if UINTPTR_MAX <= 0xffffffffu
    timer->seal_ = 0;
#endif
}

/* Private: rota_timer_relocate(from, to) inline, for a timer of a
 * rota__plain_wheel() whose bytes the caller has just copied from `from`
 * to `to` (a periodic timer's schedule with them): its list neighbours are
 * pointed at `to`.  `from` keeps its bytes, a pending-looking copy the
 * caller must not use as a timer again before rota_timer_init(). */
static inline void rota__timer_copied(struct rota_timer *to)
{
    struct rota_link *prev = to->link_.prev;
    if ((uintptr_t)prev > (uintptr_t)ROTA__IDLE) {
        prev->next = &to->link_;
        to->link_.next->prev = &to->link_;
    }
}

static inline int rota_timer_arm_at(struct rota_wheel *wheel,
                                    struct rota_timer *timer, uint64_t deadline)
{
#ifdef ROTA__INLINE_PATHS
    /* A deadline at or above arm_min_ (not due, no cascade open, not the
     * new earliest) and nothing to clamp: an idle timer is filed, a
     * pending one moved (the pending test as in rota_timer_cancel()).
     * One compare tests both: ROTA_MAX_DEADLINE is UINT64_MAX - 1, so
     * deadline + 1 wraps to 0 exactly for a deadline past it, and no
     * deadline passes while arm_min_ is UINT64_MAX. */
    struct rota_link *filled = NULL;
    uint64_t min;
    if (wheel != NULL && timer != NULL &&
        deadline + 1 > (min = wheel->arm_min_)) {
        struct rota_link *prev = timer->link_.prev;
        if ((prev == ROTA__IDLE || ((uintptr_t)prev > wheel->pending_above_ &&
                                    rota__unlink_moved(wheel, timer, min))) &&
            (filled = rota__file_fast(wheel, timer, deadline, min)) == NULL)
            return 0;
    }
    return rota__arm_finish(wheel, timer, deadline, filled);
#else
    return rota_timer_arm_at_noinline(wheel, timer, deadline);
#endif
}

/* Declared again for rota_timer_arm_in(), which asks it when the wheel has
 * a time source (see below). */
ROTA_API uint64_t rota_wheel_now(const struct rota_wheel *wheel);

static inline int rota_timer_arm_in(struct rota_wheel *wheel,
                                    struct rota_timer *timer, uint64_t delay)
{
    if (wheel == NULL)
        return ROTA_EINVAL;
    uint64_t now =
        wheel->time_fn_ == NULL ? wheel->now_ : rota_wheel_now(wheel);
    uint64_t deadline =
        delay > ROTA_MAX_DEADLINE - now ? ROTA_MAX_DEADLINE : now + delay;
    return rota_timer_arm_at(wheel, timer, deadline);
}

static inline int rota_timer_cancel(struct rota_wheel *wheel,
                                    struct rota_timer *timer)
{
#ifdef ROTA__INLINE_PATHS
    /* A pending timer: its prev link is a pointer, not ROTA__IDLE and not
     * the NULL of memory never initialised (both at most pending_above_).
     * That it is pending on this wheel is the caller's word here; a debug
     * build checks it (every call goes to the library there). */
    if (wheel != NULL && timer != NULL &&
        (uintptr_t)timer->link_.prev > wheel->pending_above_) {
        struct rota_link *prev = timer->link_.prev, *next = timer->link_.next;
        prev->next = next;
        next->prev = prev;
        timer->link_.prev = ROTA__IDLE;
        wheel->stats_.cancelled++;
        if (timer->deadline_ <= wheel->arm_min_)
            wheel->earliest_ = 0; /* the cached earliest may be gone */
        if (prev == next) /* both are the list's head: it is empty now */
            rota__list_emptied(wheel, prev);
        return 1;
    }
#endif
    return rota_timer_cancel_noinline(wheel, timer);
}

/* Private: rota_timer_touch_at()'s inline part, for a timer the caller
 * found pending as rota_timer_cancel() tests it: 0 when done, else the
 * call that finishes it: ROTA__TOUCH_FILE, rota__arm_finish(wheel,
 * timer, deadline, *filled) (*filled: the head of the empty slot the
 * timer was just filed into; NULL: the timer is alone in its list, to be
 * moved by the library); ROTA__TOUCH_LIBRARY,
 * rota_timer_touch_at_noinline() (nothing done).  A caller that must return something else after the
 * call (rota/keyed.h) makes it in a tail call of its own. */
#define ROTA__TOUCH_FILE 1
#define ROTA__TOUCH_LIBRARY 2
static inline int rota__touch_pending(struct rota_wheel *wheel,
                                      struct rota_timer *timer,
                                      uint64_t deadline,
                                      struct rota_link **filled)
{
    /* The common cases only, for a deadline the inline arm would file (at
     * or above arm_min_: after now, so no clamping): moved to a later
     * deadline (a store: the timer stays where it is filed, and the wheel
     * checks it when its slot comes due), to the deadline it has
     * (nothing), or to an earlier one (moved at once, as the library's
     * touch re-arms it).  This mirrors rota_timer_touch_at_noinline(). */
    uint64_t min;
    *filled = NULL;
    if (deadline >= (min = wheel->arm_min_) && deadline <= ROTA_MAX_DEADLINE) {
        uint64_t old = timer->deadline_;
        if (deadline > old) {
            timer->deadline_ = deadline;
            wheel->stats_.touched++;
            if (old <= min) /* the cached earliest may be gone */
                wheel->earliest_ = 0;
            return 0;
        }
        if (deadline == old)
            return 0;
#ifdef ROTA__INLINE_PATHS
        /* Earlier: out of its list (unless alone there) and filed. */
        if (rota__unlink_moved(wheel, timer, min) &&
            (*filled = rota__file_fast(wheel, timer, deadline, min)) == NULL)
            return 0;
        return ROTA__TOUCH_FILE;
#endif
    }
    return ROTA__TOUCH_LIBRARY;
}

static inline int rota_timer_touch_at(struct rota_wheel *wheel,
                                      struct rota_timer *timer,
                                      uint64_t deadline)
{
    struct rota_link *filled;
    if (wheel != NULL && timer != NULL &&
        (uintptr_t)timer->link_.prev > wheel->pending_above_) {
        int then = rota__touch_pending(wheel, timer, deadline, &filled);
        if (then == 0)
            return 0;
#ifdef ROTA__INLINE_PATHS
        if (then == ROTA__TOUCH_FILE)
            return rota__arm_finish(wheel, timer, deadline, filled);
#endif
    }
    return rota_timer_touch_at_noinline(wheel, timer, deadline);
}

static inline int rota_timer_touch_range_at(struct rota_wheel *wheel,
                                            struct rota_timer *timer,
                                            uint64_t earliest, uint64_t latest)
{
    /* The common cases only: pending and a window the inline arm would
     * file (from arm_min_ on: no clamping); the deadline already inside it
     * (nothing to do, not even a store) or before it (a touch to the
     * window's pick: a store, as rota_timer_touch_at() does).  Everything
     * else goes to rota_timer_touch_range_at_noinline(), which has the same
     * contract. */
    uint64_t min;
    if (wheel != NULL && timer != NULL &&
        (uintptr_t)timer->link_.prev > wheel->pending_above_ &&
        earliest >= (min = wheel->arm_min_) && earliest <= latest &&
        latest <= ROTA_MAX_DEADLINE) {
        uint64_t old = timer->deadline_;
        if (old >= earliest && old <= latest)
            return 0;
#ifdef ROTA__INLINE_PATHS
        if (old < earliest) { /* the window's coarsest time (earliest > 0) */
            unsigned bit =
                63u - (unsigned)__builtin_clzll((earliest - 1) ^ latest);
            timer->deadline_ = latest & ~(((uint64_t)1 << bit) - 1);
            wheel->stats_.touched++;
            if (old <= min) /* the cached earliest may be gone */
                wheel->earliest_ = 0;
            return 0;
        }
#endif
    }
    return rota_timer_touch_range_at_noinline(wheel, timer, earliest, latest);
}

static inline void rota_timer_touch_at_unchecked(struct rota_wheel *wheel,
                                                 struct rota_timer *timer,
                                                 uint64_t deadline)
{
    assert(wheel != NULL && timer != NULL && timer->link_.prev != NULL &&
           timer->link_.prev != ROTA__IDLE && deadline >= timer->deadline_ &&
           deadline <= ROTA_MAX_DEADLINE);
    (void)wheel;
    timer->deadline_ = deadline;
}

/* Private: the idle path of every advance, inline here and in the
 * library.  Nothing can be due before next_step_: it is at most the first
 * occupied slot's start, a due timer's deadline and the cached earliest
 * deadline (and <= ROTA_NEVER, so a `now` below it is a valid time).  Sets
 * the wheel's time and returns true when nothing can be due. */
static inline bool rota__advance_idle(struct rota_wheel *wheel, uint64_t now)
{
    if (now < wheel->now_ || now >= wheel->next_step_)
        return false;
    wheel->now_ = now;
    wheel->cur_ = now;
    return true;
}

/* Private: rota_wheel_advance_noinline() for rota_wheel_advance(), which
 * has found the idle path closed when the wheel is not NULL and not in a
 * pass: the library does not test it again. */
ROTA_API int rota__advance_busy(struct rota_wheel *wheel, uint64_t now);

static inline int rota_wheel_advance(struct rota_wheel *wheel, uint64_t now)
{
    if (wheel != NULL && !wheel->in_pass_ && rota__advance_idle(wheel, now))
        return 0;
    return rota__advance_busy(wheel, now);
}

#ifdef __cplusplus
}
#endif

#endif /* ROTA_WHEEL_INL_H */
