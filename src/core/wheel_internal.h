/* SPDX-License-Identifier: MIT */
/*
 * wheel_internal.h - how to read a wheel, shared by wheel.c and
 * wheel_check.c: its constants and tag words, the circular lists, the
 * geometry of levels and slots, the occupancy bitmaps, the cascade marks,
 * and the checks every call given a timer makes first.  What the
 * structure is, and why, is wheel.c's design essay; what changes it
 * (filing, cascades, passes) is wheel.c too.
 *
 * Everything is static inline, as it was static in wheel.c: a few
 * instructions each, which every file inlines where it uses them.
 * Included after rota.h, not from here: the single-file rota.c inlines
 * this file and holds rota.h's text only once.
 */
#ifndef ROTA_WHEEL_INTERNAL_H
#define ROTA_WHEEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEVEL_MASK (ROTA_WHEEL_SLOTS - 1)
#define SLOT_COUNT (ROTA_WHEEL_LEVELS * ROTA_WHEEL_SLOTS)

_Static_assert(64 % ROTA_WHEEL_BITS == 0 &&
                   64 / ROTA_WHEEL_BITS == ROTA_WHEEL_LEVELS,
               "the levels cover uint64_t exactly");
_Static_assert(SLOT_COUNT / 64 <= 32, "occupied_words_ has a bit per word");
/* ------------------------------------------------------- timer states */

/* A timer's state is its prev link (rota.h, struct rota_timer): ROTA__IDLE
 * while idle, a pointer while pending, and anything else (NULL, in zeroed
 * memory) in memory that rota_timer_init() never prepared. */
static inline bool timer_pending(const struct rota_timer *t)
{
    return (uintptr_t)t->link_.prev > (uintptr_t)ROTA__IDLE;
}

static inline bool timer_initialised(const struct rota_timer *t)
{
    return (uintptr_t)t->link_.prev >= (uintptr_t)ROTA__IDLE;
}

/* The wheel's pending_above_ (rota.h, struct rota_wheel): a debug
 * build's turns rota.h's inline cancel and touch off, as its arm_min_
 * (always UINT64_MAX there) turns the inline arm off, so that every call
 * reaches the library's checks. */
#ifdef ROTA_DEBUG
#define PENDING_ABOVE UINTPTR_MAX
#else
#define PENDING_ABOVE ((uintptr_t)ROTA__IDLE)
#endif

/* Mark a timer idle: the one place that says what idle is.  An idle
 * timer's next link means nothing (rota.h), and no release build reads
 * it, so only a debug build stores NULL there, and checks it; the inline
 * cancel and a fire leave it stale. */
static inline void mark_idle(struct rota_timer *t)
{
    t->link_.prev = ROTA__IDLE;
#ifdef ROTA_DEBUG
    t->link_.next = NULL;
#endif
}

/* The periodic timer's callback (wheel.c): a timer whose fn_ is this is
 * the first member of a struct rota_periodic. */
void rota__periodic_fire(struct rota_wheel *w, struct rota_timer *t,
                         uint64_t late);

static inline struct rota_periodic *periodic_of(struct rota_timer *t)
{
    return rota_container_of(t, struct rota_periodic, timer);
}

/*
 * The inline arm finds a deadline's slot against arm_min_ - 1, which it
 * has in a register, not against cur_ (rota.h's rota__file_fast()): the
 * same slot for every deadline >= arm_min_ exactly when arm_min_ - 1 is
 * the last time of its slot at the level of the highest digit in which it
 * and cur_ differ (a deadline past that slot differs from both in the
 * same digit; one inside it would be filed a level too low).  This is the
 * lowest arm_min_ at or above `min` (> cur) that keeps the rule: `min`
 * itself, or the start of the next slot of that level; UINT64_MAX (the
 * inline arm off) past the last.  cur_ only moves up towards arm_min_ - 1
 * (it stays <= now_ < arm_min_), which keeps the rule: the digit in which
 * they differ can only go down.
 */
static inline uint64_t arm_min_for(uint64_t min, uint64_t cur)
{
    uint64_t last = min - 1, differ = last ^ cur;
    if (differ < ROTA_WHEEL_SLOTS) /* level 0: any time ends its slot */
        return min;
    unsigned first =
        (63u ^ (unsigned)__builtin_clzll(differ)) & ~(ROTA_WHEEL_BITS - 1u);
    last |= ((uint64_t)1 << first) - 1;
    return last == UINT64_MAX ? UINT64_MAX : last + 1;
}

/* Every arm of an idle timer adds one; cancel, a last fire and drain take
 * one away (wheel.c: write_head() says why there is no pending_ to
 * store).  stats_.fired counts the last fires only (after which the timer
 * is idle), refired_ the fires after which a periodic timer stays: each
 * fire adds to one of them, and the fired count users see is their sum
 * (fires_total()). */
static inline uint64_t pending_count(const struct rota_wheel *w)
{
    const struct rota_stats *s = &w->stats_;
    return s->armed - w->rearmed_ - s->cancelled - s->fired - s->drained;
}

/* Every fire since rota_wheel_init(): rota_stats.fired. */
static inline uint64_t fires_total(const struct rota_wheel *w)
{
    return w->stats_.fired + w->refired_;
}

/* What every build reports when a walk finds the wheel's lists looping
 * (wheel.c, "walks that end"; rota.h, THE WHEEL'S RULES), naming the
 * misuses that do it. */
#define MISUSE_CORRUPT                                                         \
    "the wheel's lists are corrupt: a pending timer freed or initialised "     \
    "again without rota_timer_cancel(), the wheel used from two threads, "     \
    "or the wheel initialised again or copied while timers were pending"

/* Report a corrupt wheel (error.c): the misuse handler, then a message on
 * stderr and abort().  Never returns. */
_Noreturn void rota__wheel_corrupt(const struct rota_wheel *wheel,
                                   const struct rota_timer *timer);

/* A debug build's checks (rota.h, DEBUG BUILDS), which read the states. */
#include "wheel_debug.h"

/* The callback of a timer as the library reads it (a debug build keeps
 * its seal in the pointer's top bits). */
static inline rota_timer_fn *timer_fn(const struct rota_timer *t)
{
#ifdef ROTA_DEBUG
    return debug_fn(t);
#else
    return t->fn_;
#endif
}

/* ---------------------------------------------------------------- lists */

static inline void list_init(struct rota_link *head)
{
    head->next = head;
    head->prev = head;
}

static inline bool list_empty(const struct rota_link *head)
{
    return head->next == head;
}

/* list_append() when the caller has loaded the tail, head->prev, already
 * (to see whether the list was empty). */
static inline void list_append_after(struct rota_link *head,
                                     struct rota_link *tail,
                                     struct rota_link *node)
{
#ifdef ROTA_DEBUG
    debug_list_ends(head);
#endif
    /* Two plain stores into the node: in this order gcc does not pair them
     * into one vector store, which takes four instructions to build. */
    node->next = head;
    tail->next = node;
    node->prev = tail;
    head->prev = node;
}

static inline void list_append(struct rota_link *head, struct rota_link *node)
{
    list_append_after(head, head->prev, node);
}

static inline void list_unlink(struct rota_link *node)
{
#ifdef ROTA_DEBUG
    debug_walked(node);
#endif
    node->prev->next = node->next;
    node->next->prev = node->prev;
}

/* Unlink the first node of a list: `node` is head->next and `next` its
 * next link, both in registers, so nothing is loaded again. */
static inline void list_unlink_first(struct rota_link *head,
                                     struct rota_link *node,
                                     struct rota_link *next)
{
#ifdef ROTA_DEBUG
    debug_walked(node);
#else
    (void)node;
#endif
    head->next = next;
    next->prev = head;
}

/* Move every node of `from`, which holds some, to `to`, which is empty,
 * leaving `from` empty: list_move_all() without its two tests and the
 * load of `to`'s tail. */
static inline void list_take_all(struct rota_link *to, struct rota_link *from)
{
#ifdef ROTA_DEBUG
    debug_list_ends(from);
#endif
    struct rota_link *first = from->next, *last = from->prev;
    first->prev = to;
    last->next = to;
    to->next = first;
    to->prev = last;
    list_init(from);
}

/* Move every node of `from` to the end of `to`, leaving `from` empty. */
static inline void list_move_all(struct rota_link *to, struct rota_link *from)
{
    if (list_empty(from))
        return;
#ifdef ROTA_DEBUG
    debug_list_ends(from);
    debug_list_ends(to);
#endif
    struct rota_link *first = from->next, *last = from->prev;
    first->prev = to->prev;
    to->prev->next = first;
    last->next = to;
    to->prev = last;
    list_init(from);
}

static inline struct rota_timer *timer_of(struct rota_link *link)
{
#ifdef ROTA_DEBUG
    debug_walked(link);
#endif
    return rota_container_of(link, struct rota_timer, link_);
}

/* ----------------------------------------------------------- geometry */

static inline unsigned digit_at(uint64_t time, unsigned level)
{
    return (unsigned)(time >> (level * ROTA_WHEEL_BITS)) & LEVEL_MASK;
}

/* The first tick of slot `index` of `level`, in the block of time that
 * shares cur's digits above that level. */
static inline uint64_t slot_start(uint64_t cur, unsigned level, unsigned index)
{
    /* cur's digits from `level` up, that level's replaced by `index`, put
     * back in place: no shift reaches 64, so the top level needs no test
     * of its own. */
    unsigned shift = level * ROTA_WHEEL_BITS;
    uint64_t digits = (cur >> shift) & ~(uint64_t)LEVEL_MASK;
    return (digits | index) << shift;
}

/* The start of slot number `slot` (see "occupancy" below) as a look finds
 * it: a level-0 slot, which nearly every look finds, starts at cur's
 * block of 256 ticks or'ed with its number (three instructions, where
 * slot_start() takes eleven); a higher one as slot_start() says. */
static inline uint64_t look_start(uint64_t cur, unsigned slot)
{
    if (slot < ROTA_WHEEL_SLOTS)
        return (cur & ~(uint64_t)LEVEL_MASK) | slot;
    return slot_start(cur, slot / ROTA_WHEEL_SLOTS, slot % ROTA_WHEEL_SLOTS);
}

/* One past the last tick of that slot, saturating at UINT64_MAX. */
static inline uint64_t slot_end(uint64_t start, unsigned level)
{
    uint64_t width = (uint64_t)1 << (level * ROTA_WHEEL_BITS);
    return start > UINT64_MAX - width ? UINT64_MAX : start + width;
}

/* ---------------------------------------------------------- occupancy */

/*
 * A slot's number is level * ROTA_WHEEL_SLOTS + index: its place in slot_
 * and its bit in occupied_, one bitmap for all levels in which levels,
 * then slots, are in due order (see wheel.c's essay).  occupied_words_ has
 * a bit per word of it.  So the next slot to come due is the first set bit
 * of the summary, then of that word: two ctz.  (Setting and clearing the
 * bits is filing's work, in wheel.c.)
 */

/* The next occupied slot's number, false when every slot is empty. */
static inline bool first_occupied(const struct rota_wheel *w, unsigned *slot)
{
    if (w->occupied_words_ == 0)
        return false;
    unsigned word = (unsigned)__builtin_ctz(w->occupied_words_);
    *slot = word * 64 + (unsigned)__builtin_ctzll(w->occupied_[word]);
    return true;
}

static inline bool slot_occupied(const struct rota_wheel *w, unsigned slot)
{
    return (w->occupied_[slot / 64] >> (slot % 64)) & 1u;
}

static inline unsigned level_of(unsigned slot)
{
    return slot / ROTA_WHEEL_SLOTS;
}

static inline unsigned index_of(unsigned slot)
{
    return slot % ROTA_WHEEL_SLOTS;
}

/* ------------------------------------------------------ cascade marks */

/* The marks of an open cascade (wheel.c, "cascades"): whether a link is a
 * mark rather than a timer, whether target `index` holds its mark, and
 * whether any does. */
static inline bool is_mark(const struct rota_wheel *w,
                           const struct rota_link *link)
{
    return (uintptr_t)link - (uintptr_t)w->marks_ < sizeof w->marks_;
}

static inline bool marked(const struct rota_wheel *w, unsigned index)
{
    return (w->marked_[index / 64] >> (index % 64)) & 1u;
}

_Static_assert(ROTA_WHEEL_SLOTS / 64 == 4, "marked_ is four words");

static inline bool any_marked(const struct rota_wheel *w)
{
    return (w->marked_[0] | w->marked_[1] | w->marked_[2] | w->marked_[3]) != 0;
}

/* ---------------------------------------------------- timer arguments */

/* What every call of the library given a timer checks first: both
 * pointers, that rota_timer_init() prepared the memory, that a pending
 * timer's neighbours point back to it (a copy of a pending timer, or
 * memory written over, is not the timer its list holds), and a debug
 * build's seal and wheel.  0, or the error to return.  (The inline paths of
 * rota.h check only the state; the library is where the rest is cheap.) */
static inline int check_timer(const struct rota_wheel *w,
                              const struct rota_timer *t)
{
    if (w == NULL || t == NULL)
        return ROTA_EINVAL;
    if (!timer_initialised(t))
        return ROTA_EUNINIT;
#ifdef ROTA_DEBUG
    return debug_check_timer(w, t);
#else
    if (timer_pending(t) &&
        (t->link_.prev->next != &t->link_ || t->link_.next->prev != &t->link_))
        return ROTA_EUNINIT; /* a copy, or memory written over */
    return 0;
#endif
}

#endif /* ROTA_WHEEL_INTERNAL_H */
