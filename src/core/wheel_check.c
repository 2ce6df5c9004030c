/* SPDX-License-Identifier: MIT */
/*
 * wheel_check.c - reading a wheel from outside its algorithm: the
 * invariant checker, rota_wheel_check(), which the tests call after every
 * step, and introspection, rota_timer_remaining() and rota_wheel_foreach().
 * Nothing here files, moves or fires a timer (a foreach visitor may cancel
 * one, through the usual call).  The invariants checked are the ones
 * wheel.c's design essay states and the algorithm relies on; the essay
 * says why each holds.  The helpers that read lists, slots and marks are
 * wheel.c's too (wheel_internal.h).
 */
#include "rota.h"
#include "wheel_internal.h"

#include <stddef.h>
#include <stdint.h>

/* --------------------------------------------------------- invariants */

#define FAIL(text)                                                             \
    do {                                                                       \
        if (why != NULL)                                                       \
            *why = (text);                                                     \
        return ROTA_ECORRUPT;                                                  \
    } while (0)

/*
 * Walk one list: links consistent, every timer pending on this wheel, and
 * its deadline folded into *earliest.  The checker must survive a corrupted
 * wheel (a pending timer passed to rota_timer_init(), freed or overwritten),
 * so a link is checked before it is followed and the walk stops after
 * *budget timers in all lists (more than the pending count means a cycle).
 * `floor` is the earliest deadline a timer on this list may have.
 */
static int check_list(const struct rota_wheel *w, const struct rota_link *head,
                      uint64_t floor, const struct rota_link *mark,
                      uint64_t *count, uint64_t *budget, uint64_t *earliest,
                      const char **why)
{
    if (head->next == NULL || head->prev == NULL)
        FAIL("a list head has a NULL link");
    for (const struct rota_link *n = head->next; n != head; n = n->next) {
        const struct rota_timer *t =
            rota_container_of(n, const struct rota_timer, link_);
        if ((*budget)-- == 0)
            FAIL("the lists hold more timers than are pending (a cycle?)");
        if (n->next == NULL || n->prev == NULL)
            FAIL("a timer on a list has a NULL link (re-initialised or "
                 "overwritten while pending?)");
        if (n->next->prev != n || n->prev->next != n)
            FAIL("broken list links");
        if (is_mark(w, n)) {
            if (n != mark)
                FAIL("a cascade mark in a list that is not its target");
            mark = NULL; /* once */
            (*budget)++;
            continue;
        }
        if (!timer_pending(t))
            FAIL("timer on a list is not pending (freed and initialised "
                 "again without rota_timer_cancel()?)");
#ifdef ROTA_DEBUG
        if (!debug_sealed(t))
            FAIL("timer on a list fails its seal (freed, overwritten or "
                 "moved while pending)");
#endif
        if (t->deadline_ < floor)
            FAIL("timer filed after its deadline");
        if (t->deadline_ < *earliest)
            *earliest = t->deadline_;
        (*count)++;
    }
    return 0;
}

int rota_wheel_check(const struct rota_wheel *w, const char **why)
{
    uint64_t count = 0, earliest = ROTA_NEVER;

    if (w == NULL) {
        if (why != NULL)
            *why = "NULL wheel";
        return ROTA_EINVAL; /* a bad argument, not a corrupt wheel */
    }
    uint64_t budget = pending_count(w) + 1;
    if (w->cur_ > w->now_)
        FAIL("cur is after now");
    /* The fire loop takes a head whose deadline is the run's for a due
     * timer (wheel.c, advance_pass()): the list's own head must have
     * none that a run can have. */
    if (w->due_.deadline_ != ROTA_NEVER)
        FAIL("the due list's head has a deadline a run of fires can have");
    if (!w->in_pass_ && !list_empty(&w->deferred_))
        FAIL("deferred timers outside a pass");
    if (check_list(w, &w->due_.link_, 0, NULL, &count, &budget, &earliest,
                   why) ||
        check_list(w, &w->deferred_, 0, NULL, &count, &budget, &earliest,
                   why) ||
        check_list(w, &w->cascade_, w->cur_, NULL, &count, &budget, &earliest,
                   why))
        return ROTA_ECORRUPT;
    if (!list_empty(&w->cascade_) &&
        (w->cascade_end_ <= w->cur_ || w->next_step_ > w->cur_))
        FAIL("a cascade is pending but the wheel does not know it");
#ifdef ROTA_DEBUG
    if (w->arm_min_ != UINT64_MAX)
        FAIL("the inline arm is on in a debug build");
#endif
    if (w->cascade_end_ != 0 && w->arm_min_ != UINT64_MAX)
        FAIL("the inline arm is on during a cascade");
    if (w->arm_min_ <= w->now_)
        FAIL("the inline arm may file a deadline that is due");
    /* Inside a pass next_step_ moves up alone: the inline advance, which
     * needs arm_min_ above it, cannot run there. */
    if (!w->in_pass_ && w->arm_min_ < w->next_step_)
        FAIL("the inline arm may file a deadline that an advance makes due");
    if (w->earliest_ != 0 && w->arm_min_ < w->earliest_)
        FAIL("the inline arm may file a deadline below the earliest");
    if (w->arm_min_ != arm_min_for(w->arm_min_, w->cur_))
        FAIL("the inline arm may find a slot other than cur gives");
    if (w->pending_above_ != PENDING_ABOVE)
        FAIL("the inline cancel and touch take the wrong timers");
    if (w->cascade_end_ != 0
            ? w->cascade_mid_ <= w->cur_ || w->cascade_mid_ > w->cascade_end_
            : w->cascade_mid_ != 0)
        FAIL("the cascade's bounds are out of order");
    /* A mark is in a list exactly when its bit is set, and only while a
     * cascade is open; the slot walk below finds each in its target. */
    unsigned marks = 0;
    for (unsigned index = 0; index < ROTA_WHEEL_SLOTS; index++) {
        if (marked(w, index) != (w->marks_[index].next != NULL))
            FAIL("a cascade mark and its bit disagree");
        marks += marked(w, index);
    }
    if (marks != 0 && w->cascade_end_ == 0)
        FAIL("a cascade mark is left with no cascade open");
    unsigned target_level = 0;
    if (marks != 0) { /* a cascade is open: cascade_mid_ > cur_ (above) */
        size_t shift;
        target_level =
            (unsigned)(rota__slot_for(w->cascade_mid_, w->cur_, &shift) /
                       ROTA_WHEEL_SLOTS);
    }
    uint64_t first_start = ROTA_NEVER;
    for (unsigned level = 0; level < ROTA_WHEEL_LEVELS; level++) {
        unsigned cur_digit = digit_at(w->cur_, level);
        for (unsigned index = 0; index < ROTA_WHEEL_SLOTS; index++) {
            unsigned slot = level * ROTA_WHEEL_SLOTS + index;
            const struct rota_link *head = &w->slot_[slot];
            bool bit = slot_occupied(w, slot);
            if (head->next == NULL)
                FAIL("a slot's list head has a NULL link");
            if (bit != !list_empty(head))
                FAIL("occupancy bit disagrees with the slot's list");
            if (list_empty(head))
                continue;
            if (index <= cur_digit)
                FAIL("occupied slot at or behind the hand");
            uint64_t start = slot_start(w->cur_, level, index);
            if (start < first_start)
                first_start = start;
            const struct rota_link *mark = NULL;
            if (marks != 0 && level == target_level && marked(w, index))
                mark = &w->marks_[index];
            if (check_list(w, head, start, mark, &count, &budget, &earliest,
                           why))
                return ROTA_ECORRUPT;
            if (mark != NULL &&
                (mark->next->prev != mark || mark->prev->next != mark))
                FAIL("a cascade mark is not in its target");
            marks -= mark != NULL;
        }
    }
    if (marks != 0)
        FAIL("a cascade mark is not in its target");
    for (unsigned word = 0; word < SLOT_COUNT / 64; word++)
        if ((w->occupied_[word] != 0) != ((w->occupied_words_ >> word) & 1u))
            FAIL("summary bit disagrees with its bitmap word");
    if (count != pending_count(w))
        FAIL("pending count disagrees with the lists");
    if (w->next_step_ > first_start)
        FAIL("next_step is later than the first occupied slot");
    /* Outside a pass the idle path relies on these two. */
    if (!w->in_pass_ && !list_empty(&w->due_.link_) && w->next_step_ > w->cur_)
        FAIL("next_step is later than a due timer");
    if (!w->in_pass_ && w->earliest_ != 0 && w->next_step_ > w->earliest_)
        FAIL("next_step is later than the cached earliest deadline");
    /* Early is allowed: after rota_timer_touch_at_unchecked() the cache may
     * hold an old deadline (rota.h); later than a pending deadline never. */
    if (w->earliest_ != 0 && w->earliest_ > earliest)
        FAIL("cached earliest deadline is later than a pending one");
    /* A pass fires without comparing deadlines with the cache: it holds
     * none that could fire (wheel.c, begin_pass()). */
    if (w->in_pass_ && w->earliest_ != 0 && w->earliest_ <= w->now_)
        FAIL("the cached earliest deadline is due inside a pass");
    if (why != NULL)
        *why = NULL;
    return 0;
}

/* ------------------------------------------------------ introspection */

int rota_timer_remaining(const struct rota_wheel *w, const struct rota_timer *t,
                         uint64_t *ticks)
{
    if (ticks != NULL)
        *ticks = 0;
    if (ticks == NULL)
        return ROTA_EINVAL;
    int rc = check_timer(w, t);
    if (rc != 0)
        return rc;
    if (!timer_pending(t))
        return 0;
    /* A deadline at or before now is due (clamped on arm; or left by a
     * limited call, or a deferred timer of the current pass). */
    *ticks = t->deadline_ > w->now_ ? t->deadline_ - w->now_ : 0;
    return 1;
}

/*
 * in_pass_ is non-zero while a pass runs callbacks; a walk sets a bit of
 * its own, so that advance(), advance_max(), expire() and drain() - which
 * already refuse to run inside a pass - refuse inside a visitor too, at no
 * cost to anyone: no new check on any path but foreach's own.
 */
#define IN_FOREACH 0x2u

/* Visit one list's timers.  The next link is read before the visitor
 * runs, so that it may cancel (unlink) the timer it is given.  Returns the
 * visitor's nonzero answer, or 0. */
static int visit_list(struct rota_wheel *w, struct rota_link *head,
                      rota_visit_fn *visit, void *arg, uint64_t *steps)
{
    for (struct rota_link *n = head->next, *next; n != head; n = next) {
        /* A list that loops (wheel.c, "walks that end"). */
        if ((*steps)-- == 0)
            rota__wheel_corrupt(w, NULL);
        next = n->next;
        if (!is_mark(w, n) && visit(w, timer_of(n), arg) != 0)
            return 1;
    }
    return 0;
}

static int walk(struct rota_wheel *w, rota_visit_fn *visit, void *arg)
{
    /* Every pending timer and every cascade mark once, at most: the
     * visitor may cancel, never arm. */
    uint64_t pending = pending_count(w), steps = pending + ROTA_WHEEL_SLOTS;
    if (pending > SIZE_MAX / sizeof(struct rota_timer))
        rota__wheel_corrupt(w, NULL);
    if (visit_list(w, &w->due_.link_, visit, arg, &steps) ||
        visit_list(w, &w->cascade_, visit, arg, &steps) ||
        visit_list(w, &w->deferred_, visit, arg, &steps))
        return 1;
    /* The occupied slots through the bitmaps.  A word is copied before its
     * slots are visited: a cancel that empties a slot clears its bit in
     * the wheel, not in the copy, and changes no other slot. */
    for (unsigned word = 0; word < SLOT_COUNT / 64; word++) {
        if (!((w->occupied_words_ >> word) & 1u))
            continue;
        for (uint64_t bits = w->occupied_[word]; bits != 0; bits &= bits - 1) {
            unsigned slot = word * 64 + (unsigned)__builtin_ctzll(bits);
            if (visit_list(w, &w->slot_[slot], visit, arg, &steps))
                return 1;
        }
    }
    return 0;
}

int rota_wheel_foreach(struct rota_wheel *w, rota_visit_fn *visit, void *arg)
{
    if (w == NULL || visit == NULL)
        return ROTA_EINVAL;
    if (w->in_pass_ & IN_FOREACH)
        return ROTA_EBUSY;
#ifdef ROTA_DEBUG
    bool entered;
    int rc = debug_pass_begin(w, &entered);
    if (rc != 0)
        return rc;
#endif
    uint8_t was = w->in_pass_;
    w->in_pass_ = (uint8_t)(was | IN_FOREACH);
    int walked = walk(w, visit, arg);
    w->in_pass_ = was;
#ifdef ROTA_DEBUG
    debug_pass_end(w, entered);
#endif
    return walked;
}
