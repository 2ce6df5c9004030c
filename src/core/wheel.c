/* SPDX-License-Identifier: MIT */
/*
 * wheel.c - rota's hierarchical timing wheel: the algorithm (filing,
 * cascades, the passes that fire) and the calls that arm, touch and cancel
 * timers.  The invariant checker and introspection, which walk the wheel
 * and file nothing, are in wheel_check.c; the helpers both files read it
 * with are in wheel_internal.h, and a debug build's checks in
 * wheel_debug.h.
 *
 * THE WORKLOAD
 *   A server holds up to millions of timers: request timeouts and idle kicks
 *   that are armed, pushed later and cancelled far more often than they fire.
 *   Arm, cancel and touch must cost O(1) and few cache misses; firing must be
 *   exact (never early, never late by a rotation); idle time must cost
 *   nothing; and the caller must be able to ask for the exact next deadline
 *   to sleep on.
 *
 * THE STRUCTURE
 *   Time is a 64-bit tick count read as eight 8-bit digits.  Level L has
 *   256 slots, one per value of digit L; each slot is a circular doubly
 *   linked list of timers (FIFO: ties keep arm order) and each level has a
 *   256-bit occupancy bitmap, summarised by one word with a bit per bitmap
 *   word.  The wheel files every list against one time, `cur`:
 *
 *       a timer with deadline D > cur sits at the level of the highest digit
 *       in which D and cur differ, in the slot of D's digit at that level;
 *       a timer with D <= cur sits on the `due` list.
 *
 *   So a level-L timer shares all digits above L with cur and its digit L is
 *   strictly greater than cur's.  Two consequences carry the design:
 *     - Levels are ordered: every level-L timer is later than every timer of
 *       a lower level.  The next slot that can hold anything due is the first
 *       occupied slot of the lowest non-empty level: the first set bit of
 *       the summary, then of that bitmap word.  Two ctz, whatever the
 *       distance in ticks.
 *     - A level-0 slot holds a single deadline, so firing from it is exact.
 *   Advancing steps `cur` from one occupied slot start to the next, never
 *   tick by tick.  At a level-0 slot's start the whole list becomes the due
 *   list, in O(1).  At a higher slot's start every timer in it is filed
 *   again against the new cur: it drops to a lower level (a cascade) or onto
 *   the due list.  A timer is cascaded at most once per level, and only when
 *   it is within that level's span of its deadline.
 *
 *     level  ticks per slot  span (ticks)  with 1 ms ticks, a slot / the span
 *       0           1              256        1 ms / 256 ms
 *       1         256            65536      256 ms / 65.5 s
 *       2       65536             2^24       65.5 s / 4.7 h
 *       3        2^24             2^32       4.7 h  / 49.7 days
 *       4        2^32             2^40      49.7 d  / 34.8 years
 *       5..7  2^40..2^56     2^48..2^64      ...: the rest of uint64_t
 *
 *   Why 8-bit digits: every cascade is a walk of a linked list, one cache
 *   miss per timer that depends on the one before.  With 8 bits a timeout
 *   of up to a minute (1 ms ticks) is filed at level 0 or 1 and cascades
 *   at most once before it fires; with 6 bits (Linux, wahern) such a timer
 *   cascades twice and a level-0 slot was walked once more.  The price is a
 *   33 KiB wheel instead of 11.5 KiB (37 KiB with the cascade marks).  A
 *   cascade walks its list from both ends at once (run_cascade()), and a
 *   due list is loaded from both ends before it is fired (preload()): two
 *   chains of misses side by side, which halves the walk's time (when more
 *   timers are pending than stay cached).  The preload also prefetches each
 *   timer's last bytes, where a periodic timer keeps its schedule and
 *   callback: in an array of 48-byte periodic timers every other one
 *   straddles two cache lines, and the second line would otherwise be a
 *   miss at its fire.
 *
 * THE GUARANTEES AND WHY THEY HOLD
 *   - Never early and exact: a timer reaches the due list only when cur
 *     reaches its deadline exactly (a level-0 slot start is its deadline),
 *     and cur only moves to slot starts or to `now`.  No deadline is rounded.
 *   - Order: `cur` visits slot starts in increasing order; the due list is
 *     filled with one deadline at a time; lists are FIFO and a cascade walks
 *     a slot front to back, so equal deadlines keep arm order (a timer armed
 *     later with the same deadline is filed against a later cur, hence into
 *     the same slot as, or a lower one than, the earlier timer by the time
 *     both are due - always behind it).
 *   - Re-entrancy: callbacks run one at a time from the head of the due
 *     list; the pass re-reads the head after every callback, so a callback
 *     may cancel or re-arm anything.  A timer armed in a callback with a
 *     deadline <= now goes to the `deferred` list, joined to the wheel when
 *     the pass ends: it fires in the next call, never in this one.
 *   - Idle cost: `next_step` caches a lower bound of the next slot start; an
 *     advance below it is two compares and two stores.  Otherwise one step
 *     costs two ctz plus the timers it moves.
 *   - Touch: a later deadline is a store into the timer.  The timer stays in
 *     its (now early) slot and is filed again when that slot comes due or
 *     the due list reaches it: it is checked, not fired.  Its place among
 *     timers with the same new deadline is not specified.  Cancel and touch do
 *     not update `next_step`: an emptied slot only makes the bound lower than
 *     needed, which costs one extra step, never a late fire.
 *   - The exact next deadline: the due list, else the first occupied slot of
 *     the lowest level.  Its earliest deadline is found by one pass over that
 *     slot (touched timers met on the way are filed where they belong) and
 *     cached until a timer with that deadline fires, moves or is cancelled.
 *     rota_timer_touch_at_unchecked() moves a deadline without telling the
 *     wheel, so the cache may then be early, never late: a call that
 *     reaches it takes the full path and forgets it (settle_earliest()).
 *
 * A LIMIT BOUNDS THE WHOLE CALL
 *   A cascade files a whole slot again, and a slot can hold most of the
 *   wheel: a million idle connections with a 30 s timeout all sit in the
 *   one slot beyond the next 65,536-tick boundary, and refiling them takes
 *   tens of milliseconds.  So advance_max() and expire() count the timers
 *   they fire (or hand out) and the timers they file again, each against
 *   the caller's limit, and stop when either is spent.  A slot that
 *   comes due is not refiled at once: its list becomes the cascade list,
 *   which peek_due() works through from both ends, within the budget, after
 *   the due list and before the next slot; cur stays at the slot's start,
 *   and next_step at cur, until it is done.  Two rules keep the guarantees
 *   across calls: the due list is fired before the rest of the cascade (its
 *   timers are no later, and came earlier in the same list), and a timer
 *   armed meanwhile with a deadline inside that slot (cascade_end) is filed
 *   behind the older timers of its deadline: at its target's tail, behind
 *   the mark (see "cascades" below), or at the back of the cascade list.
 *   A call that stops says so (returns 1) from what it can see in O(1), so
 *   "1" may mean only touched timers are left to file.
 *
 * WHAT AN OPERATION COSTS
 *   At a million timers an arm or cancel is bound by cache misses (the
 *   timer, and the two list neighbours cancel writes), and how many ops'
 *   misses overlap is bounded by the loads and stores each op makes (the
 *   CPU's queues of memory operations in flight) more than by its
 *   instructions: fifteen NOPs in wheel-bare's cancel + arm leave its time
 *   as it was, while the two counter adds of rota's take about a sixth
 *   of its time at a million timers on an AMD EPYC (docs/BENCH.md, "what
 *   rota's cancel + arm does beyond wheel-bare's").
 *   `make bench-counts` counts both per operation, against wheel-bare
 *   (lists and nothing else).  The rules the fast paths keep:
 *   - A timer is 32 bytes: two links, a deadline and a callback.  Its
 *     state is its prev link (ROTA__IDLE while idle), so neither arm nor
 *     cancel writes a tag, and a million timers fit a 32 MiB last-level
 *     cache where 48-byte ones missed it on every operation.  The period
 *     lives in the struct rota_periodic around a periodic timer, found
 *     through its callback only when it fires.
 *   - A check reads what the operation reads anyway: cancel compares the
 *     prev link it is about to follow with one wheel field (pending_above_,
 *     which a debug build sets so that no timer passes).  Arm reads one
 *     wheel field for all it must know of the wheel, arm_min_: a deadline
 *     at or above it is not due, is not inside a slot being cascaded, and
 *     is not below the earliest deadline, so the inline arm files it and
 *     updates nothing else.  It finds the slot against arm_min_ - 1, which
 *     it has in a register, instead of loading cur_: the library keeps
 *     arm_min_ - 1 at the end of a slot of the level where it and cur_
 *     differ, raising arm_min_ to the next slot start where it must
 *     (arm_min_for()), so that both give every deadline >= arm_min_ the
 *     same slot; the deadlines it raises arm_min_ over go to the library.
 *     One compare, deadline + 1 > arm_min_, also keeps out the one
 *     deadline past ROTA_MAX_DEADLINE (UINT64_MAX wraps to 0).  The
 *     library keeps arm_min_ above now_ and next_step_ (so the inline
 *     advance never makes such a deadline due) and at or above the
 *     earliest deadline, setting it again where one of them goes up
 *     (set_arm_min()); UINT64_MAX while a slot is half cascaded and always
 *     in a debug build.  A cancel, touch or move of a timer whose
 *     deadline is <= arm_min_ forgets the earliest deadline: the compare
 *     the cache needed anyway, against the same field.  What the timer
 *     cannot record (its wheel, garbage that is not zeroes) is the debug
 *     build's to check.
 *   - No load waits on a store that cannot be forwarded: a field is read
 *     with the width it was written with.
 *   - The inline arm files every timer it takes, into an empty list as
 *     into a busy one: the append is the same four stores.  The occupancy
 *     bits change only when a slot goes from empty to not empty, which
 *     arm sees in the tail pointer it loads anyway; then a call made last
 *     sets them (rota__arm_finish()), so the common case saves no
 *     registers.  next_step needs nothing: a deadline at or above arm_min_
 *     has a slot that starts at or above arm_min_ (arm_min_ - 1 ends a
 *     slot of its level, or is at level 0), so at or above next_step_;
 *     and a callback runs while next_step_ is at or below cur_, below
 *     every slot's start.  The call is the inline arm's only one: every
 *     other case makes the same call with no slot, for
 *     rota_timer_arm_at_noinline().  A caller's function with two calls
 *     in different branches gets a stack frame on every path (gcc 12 does
 *     not shrink-wrap it), its fast one included; with one it gets none.
 *   - The slot comes from its level's first bit, in unsigned arithmetic,
 *     and its head from a byte offset (rota__slot_for(), rota__slot_head()):
 *     level-first arithmetic makes gcc divide and multiply back, a size_t
 *     mix makes it sign-extend, and indexing builds the head's address
 *     twice.  The call for an empty slot takes the head, not the slot's
 *     number, so the number need not live beside it.
 *   - The inline arm writes the timer's links in one 16-byte store (it
 *     has both in registers).
 *   - The inline advance, once it has found the idle path closed, calls
 *     rota__advance_busy(), which goes to the pass without testing that
 *     path again.
 *   The fire loop (advance_pass()) keeps to these:
 *   - What no callback can change lives in registers for the whole pass:
 *     the fire budget, the deadline of the lateness run and how late that
 *     run fires (now_ minus its deadline, the `late` every callback of the
 *     run is given).  A callback cannot advance or expire the wheel, so
 *     only the loop moves cur_ and now_; the budget goes back to memory
 *     before renew() reads it, and find_due() is given it (its preload's
 *     bound) as an argument.
 *   - A fire unlinks the due list's first timer: its prev link is the
 *     list's head, not loaded.
 *   - A fire whose deadline is the run's is due without a look at cur_
 *     (the run's deadline is one that was due), and costs the histogram
 *     nothing: the count of fires counts it for the open bucket ("the lateness
 *     histogram by runs").  Nor does it test for the end of the due list: the
 *     list's head is the link of a timer that is never armed (due_), whose
 *     deadline, ROTA_NEVER, is no run's, so the compare with the run's
 *     deadline ends the run there too.  A run's fires are a loop of their own,
 *     inside the one that begins runs.  The fired count the call returns is the
 *     fire budget it spent (fires_granted), which is in memory across the
 *     callbacks anyway: no count of its own holds a register there.
 *   - A fire calls its timer's callback without testing it: a timer
 *     given no callback (NULL) holds an empty one (fire_nothing()).
 *   - A fire adds to one counter: a last fire to stats_.fired, a periodic
 *     fire that files its timer again to refired_.  The pending count
 *     needs only the first, and rota_wheel_stats() reports their sum.
 *   - The earliest-deadline cache costs a fire nothing: a pass that
 *     fires forgets it once, at its start (whatever fires is due, and the
 *     earliest deadline is no later), and no call inside the pass caches
 *     a deadline that is due, so no fire can be the cached one.
 *   - A periodic re-arm on time is the inline arm: its next deadline,
 *     fired + period, passes the inline arm's one compare (next + 1 >
 *     arm_min_) and is filed with no due test, no cascade test, no
 *     earliest update.  The same compare sends the slow way what the sum
 *     gets wrong: period 0 (the sum is `fired`, below arm_min_), a sum
 *     that wraps (below `fired`) and one past ROTA_MAX_DEADLINE.  It is
 *     filed against the run's deadline, which the loop has in a register:
 *     on time that is cur_ (fired <= cur_ <= now_ = fired), not loaded.
 *   - A release build leaves an idle timer's next link as it was: nothing
 *     reads it.
 *   - find_due() and step() are inlined into the loop, so that the two
 *     looks per pass (the slot that comes due, then the one that does not)
 *     save no registers; the due list's preload tests for a list of
 *     one timer inline and walks a longer one out of line
 *     (preload_ends()), so that its loop takes none of the pass's
 *     registers.  A look tells an open cascade by cascade_end_ alone: the
 *     cascade list holds timers only while one is open.
 *   - A look finds a level-0 slot's start, nearly every look's, as cur's
 *     block of 256 ticks or'ed with the slot's number (look_start());
 *     a higher slot's from cur shifted down to the slot's level, its
 *     digit there replaced by the slot's index and shifted back
 *     (slot_start()): no shift reaches 64, so the top level needs no
 *     test.  The slot it takes becomes the due or cascade list with four
 *     stores (list_take_all()): a look runs only when both are empty.
 *   Cascades and filing keep to these:
 *   - A cascade of a call without a limit (quick_walk()) costs about what
 *     wheel-bare's does per timer, plus the back walk's load and test: the
 *     budget is counted once per stretch, not tested per timer; the back
 *     walk only loads and files nothing, so the front walk files every
 *     timer and needs no marks; the front walk does not unlink what it
 *     files (its next link is read before filing overwrites it, and the
 *     list's head is emptied once, at the end), since nothing reads the
 *     cascade list while it runs; nearly every timer goes to
 *     the level just below the slot's, which a subtraction and a compare
 *     tell, and its slot is its digit there, with cur, the level's shift
 *     and its slots in registers (for a level-1 slot, which nearly every
 *     timer cascades from, the deadline's lowest byte).
 *   - Filing sees an empty slot in the tail it loads to append, and keeps
 *     nothing alive for that rare case (slot_filled_for() finds the slot
 *     again).  It writes a node's links with two plain stores: a 16-byte
 *     store costs four instructions where the links are not yet in one
 *     register.
 *   What is left beyond wheel-bare's work: the argument and state checks,
 *   the statistics counters (one add each on arm, cancel and fire, which
 *   the O(1) count is derived from) and the earliest-deadline cache (a
 *   compare in cancel, none in the inline arm or a fire, which keeps
 *   rota_wheel_next_deadline() exact).  Its price is paid per pass, not
 *   per arm or fire: a pass that fires forgets the earliest deadline once
 *   (a store only when one is cached) and sets arm_min_ twice, with the
 *   test that keeps arm_min_ - 1 at a slot's end.  A pass that ends caught
 *   up with now_, as nearly every one does, sets it from what it knows
 *   (cur_ is now_, no cascade is open, nothing is due: settle_caught_up()).
 *
 * ALTERNATIVES REJECTED
 *   - One wheel with a rounds counter (Netty, go-zero): every tick visits a
 *     slot and every timer in it, so idle time and long delays cost O(ticks);
 *     rounds make "exact" depend on visiting every slot.
 *   - A binary or 4-ary heap (libuv, libev, the JDK): O(log n) sift per arm
 *     and cancel, each level a likely cache miss at a million timers.
 *   - Linux's non-cascading wheel: cheaper arms but up to 12.5% late by
 *     design; rota promises exact.
 *   - Hand-driven wheels that tick every slot (pulsar, go-zero): CPU while
 *     idle.  Here empty stretches are skipped through the bitmaps.
 *   - Arrays per slot instead of lists: cascades stream better, but growing
 *     an array allocates (the core never does) and a swap-remove cancel
 *     touches a second timer.
 *   - Late unlinking: cancel queues the two neighbour writes, prefetches
 *     the neighbours and applies the writes a few ops later, when their
 *     lines have come.  But every later unlink must first ask whether its
 *     timer is one of the queued neighbours, and that answer waits for the
 *     misses that fill the queue; a prototype made W1 slower, not faster.
 *   - Keeping the slot a pass's last look finds, for the next pass's
 *     first look, which would find it again: valid while it is occupied
 *     (whatever lowers next_step_ forgets it), it spares that look's two
 *     ctz and the start's arithmetic, but costs a store at each look and
 *     a test at the look after the fires.  Counted, 2.8 instructions
 *     fewer and 3.4 data references more per fire at 1e4 timers, where a
 *     pass fires about one: no gain.
 *   - The inline arm setting an empty slot's occupancy bits itself, from
 *     the head's byte offset, instead of calling the library for them:
 *     ten instructions where the call costs twenty, so 35.4 instructions
 *     per arm instead of 37.5 in a storm of 1e3 timers (a fifth of its
 *     arms find an empty slot).  But the branch's code and registers stay
 *     in every caller: gcc spills three values of a loop of cancels and
 *     arms to the stack, which then costs 39 instructions and 14 data
 *     references a pair instead of 35 and 13.
 *   - No preload of the due list: 4.8 instructions fewer per fire at a
 *     million timers spread over 60,000 ticks (17 to a slot), no faster
 *     there, but a storm's expiry at ten million (167 to a slot) ran
 *     about 1.2x slower (bench/ab, Intel Xeon): a long due list is walked
 *     one miss after the other without it.
 */
#include "rota.h"
#include "wheel_internal.h" /* shared with wheel_check.c */

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>

/*
 * A timer is its links, its deadline and its callback (rota.h): its state
 * is its prev link, so arm and cancel write no tag of their own, no tag
 * says which wheel or list holds a timer (an emptied list is known by its
 * head: rota__list_emptied()), the pending count is derived from counters
 * kept anyway (pending_count()), and a periodic timer's schedule lives in
 * the struct rota_periodic around it, found through its callback
 * (rota__periodic_fire), which a one-shot never reads.
 */
_Static_assert(sizeof(struct rota_timer) ==
                   (sizeof(void *) == 8 ? 32 : 2 * sizeof(void *) + 8 + 8),
               "a timer is two links, a deadline and a callback");

/* rota_timer_arm_at() tests deadline >= arm_min_ and deadline <=
 * ROTA_MAX_DEADLINE as deadline + 1 > arm_min_. */
_Static_assert(ROTA_MAX_DEADLINE == UINT64_MAX - 1,
               "the inline arm's one compare needs this");

/* A timer the library just linked into one of the wheel's lists. */
static inline void set_pending(struct rota_timer *t)
{
#ifdef ROTA_DEBUG
    debug_seal(t);
#else
    (void)t;
#endif
}

/* Mark a timer idle. */
static inline void set_idle(struct rota_timer *t)
{
    mark_idle(t);
#ifdef ROTA_DEBUG
    debug_seal(t);
#endif
}

/* ---------------------------------------------------------- occupancy */

/* (The bitmaps' layout, and reading them: wheel_internal.h.) */

/* A slot's list goes from empty to not empty: its occupancy bits. */
static inline void slot_occupy(struct rota_wheel *w, size_t slot)
{
    w->occupied_[slot / 64] |= (uint64_t)1 << (slot % 64);
    w->occupied_words_ |= 1u << (slot / 64);
}

#ifndef NDEBUG
/* The start of slot number `slot`, which holds `deadline` (for an
 * assert). */
static inline uint64_t slot_start_of(size_t slot, uint64_t deadline)
{
    unsigned shift = level_of((unsigned)slot) * ROTA_WHEEL_BITS;
    return deadline >> shift << shift;
}
#endif

/* A slot's list is about to go from empty to not empty: its occupancy
 * bits, and the bound on the next slot start (an occupied slot already
 * bounds it, so a busy slot needs neither). */
static void slot_filled(struct rota_wheel *w, size_t slot, uint64_t start)
{
    slot_occupy(w, slot);
    if (start < w->next_step_)
        w->next_step_ = start;
}

static void mark_empty(struct rota_wheel *w, unsigned slot)
{
    uint64_t bits = w->occupied_[slot / 64] & ~((uint64_t)1 << (slot % 64));
    w->occupied_[slot / 64] = bits;
    if (bits == 0)
        w->occupied_words_ &= ~(1u << (slot / 64));
}

/*
 * The lowest deadline the inline arm may file (rota.h: arm_min_), set
 * again wherever one of its terms goes up: now_ (a pass begins),
 * next_step_ (a pass moves to the next slot), earliest_ (found again), a
 * cascade closing; and after a library arm, so that the inline arm takes
 * the next one; raised where it must be so that the inline arm's slot
 * against arm_min_ - 1 is the one cur_ gives (arm_min_for()).  A term
 * that goes down leaves it safe, and so does cur_ going up: an arm_min_
 * too high only sends more arms to the library, and makes the inline
 * cancel forget the earliest deadline more often than it must.
 */
static inline uint64_t arm_min_from(const struct rota_wheel *w, uint64_t cur)
{
#ifdef ROTA_DEBUG
    (void)w;
    (void)cur;
    return UINT64_MAX;
#else
    uint64_t min = w->now_ + 1; /* now_ <= ROTA_MAX_DEADLINE < UINT64_MAX */
    if (w->next_step_ > min)
        min = w->next_step_;
    if (w->earliest_ > min)
        min = w->earliest_;
    return arm_min_for(min, cur);
#endif
}

/* arm_min_ from its terms: arm_min_from() when no cascade is open (cur is
 * cur_), which a caller that knows both calls itself. */
static void set_arm_min(struct rota_wheel *w)
{
    w->arm_min_ = w->cascade_end_ != 0 ? UINT64_MAX : arm_min_from(w, w->cur_);
}

/* ------------------------------------------------------------- filing */

/* Append `link` to slot `slot`, whose start is `start`; a slot going from
 * empty to not empty gets its occupancy bits and bound (a busy slot's are
 * set already).  Empty is seen in the tail the append loads anyway. */
static inline __attribute__((always_inline)) void
slot_append(struct rota_wheel *w, size_t slot, uint64_t start,
            struct rota_link *link)
{
    struct rota_link *head = rota__slot_head(w, slot), *tail = head->prev;
    if (tail == head)
        slot_filled(w, slot, start);
    list_append_after(head, tail, link);
}

/* The slot a deadline later than `cur` files into is about to go from
 * empty to not empty: slot_filled() for it, found again here, out of the
 * way, so that the common case keeps no slot number for it. */
static void __attribute__((noinline))
slot_filled_for(struct rota_wheel *w, uint64_t deadline, uint64_t cur)
{
    size_t shift, slot = rota__slot_for(deadline, cur, &shift);
    slot_filled(w, slot, deadline >> shift << shift);
}

/* Put a timer whose deadline is later than `cur` (cur_) in its slot. */
static inline __attribute__((always_inline)) void
place_later(struct rota_wheel *w, struct rota_timer *t, uint64_t deadline,
            uint64_t cur)
{
    size_t shift, slot = rota__slot_for(deadline, cur, &shift);
    struct rota_link *head = rota__slot_head(w, slot), *tail = head->prev;
    if (tail == head)
        slot_filled_for(w, deadline, cur);
    list_append_after(head, tail, &t->link_);
}

/* Put a timer in the list its deadline implies relative to `cur`, which is
 * cur_: a walk passes it in a register, since list stores may alias the
 * wheel and the compiler would load cur_ again for every timer.  Inline
 * everywhere: it is most of a cascade's and a periodic fire's work. */
static inline __attribute__((always_inline)) void place_at(struct rota_wheel *w,
                                                           struct rota_timer *t,
                                                           uint64_t deadline,
                                                           uint64_t cur)
{
    if (deadline <= cur) {
        list_append(&w->due_.link_, &t->link_);
        if (deadline < w->next_step_) /* so the idle path sees it */
            w->next_step_ = deadline;
        return;
    }
    place_later(w, t, deadline, cur);
}

static inline __attribute__((always_inline)) void
place_timer(struct rota_wheel *w, struct rota_timer *t, uint64_t deadline)
{
    place_at(w, t, deadline, w->cur_);
}

void rota__list_emptied(struct rota_wheel *w, struct rota_link *head)
{
    /* Compared as integers: `head` may be the due, deferred or cascade
     * list's head, outside slot_. */
    uintptr_t offset = (uintptr_t)head - (uintptr_t)w->slot_;
    if (offset < sizeof w->slot_)
        mark_empty(w, (unsigned)(offset / sizeof w->slot_[0]));
}

/* ----------------------------------------------------------- cascades */

/*
 * A slot of level L being cascaded (its timers filed again against its
 * start, which is cur) is "open" from cascade_open() to cascade_close().
 * Its deadlines run from cur to cascade_end_; those from cascade_mid_ on
 * go to the slots of level L - 1 (the targets), the rest to lower levels or
 * the due list.  run_cascade() walks the cascade list from both ends, and
 * ties must keep arm order in every target, so a target the back walk has
 * filed into holds its mark, marks_[index]:
 *
 *     target:  [timers from the front walk] mark [from the back walk, and
 *              timers armed since the cascade began]
 *
 * The front walk files into a marked target just before the mark, the back
 * walk (which meets timers newest first) just after it, and an arm inside
 * the slot at the target's tail; so when the cascade is done and the marks
 * are taken out, every target reads in arm order.  No mark is ever in a
 * list that is walked in order (the due list, a slot that steps), since
 * nothing steps while a cascade is open.  A deadline below cascade_mid_
 * armed meanwhile joins the back of the cascade list instead: the front
 * walk files it after the older timers of its deadline.  The inline arm
 * knows nothing of this, so it is off (arm_min_ is UINT64_MAX).
 */
static void cascade_open(struct rota_wheel *w, uint64_t start, unsigned level)
{
    w->cascade_end_ = slot_end(start, level);
#ifdef ROTA_DEBUG
    /* No marks: the checks would take them for timers.  The back walk is
     * off too (run_cascade()). */
    w->cascade_mid_ = w->cascade_end_;
#else
    w->cascade_mid_ = start + ((uint64_t)1 << ((level - 1) * ROTA_WHEEL_BITS));
#endif
    w->arm_min_ = UINT64_MAX; /* the inline arm files nothing */
}

/* The cascade is done (or emptied by cancels, or drained): marks out. */
static void cascade_close(struct rota_wheel *w)
{
    for (unsigned word = 0; word < ROTA_WHEEL_SLOTS / 64; word++) {
        for (uint64_t bits = w->marked_[word]; bits != 0; bits &= bits - 1) {
            struct rota_link *mark =
                &w->marks_[word * 64 + (unsigned)__builtin_ctzll(bits)];
            struct rota_link *prev = mark->prev, *next = mark->next;
            prev->next = next;
            next->prev = prev;
            mark->next = mark->prev = NULL;
            if (prev == next) /* the mark was all the target held */
                rota__list_emptied(w, prev);
        }
        w->marked_[word] = 0;
    }
    w->cascade_end_ = 0;
    w->cascade_mid_ = 0;
    set_arm_min(w);
}

/* Who files a timer while a cascade is open. */
enum filer {
    FRONT, /* the cascade's front walk: in order, so before a mark */
    BACK,  /* its back walk, which meets timers newest first: after it */
    ARM,   /* an arm or a re-file: newer than all, so at the tail */
};

/* The open cascade's bounds, read once: list stores may alias the wheel,
 * so the compiler would read them again after every one. */
struct span {
    uint64_t cur, mid, end;
};

static struct span cascade_span(const struct rota_wheel *w)
{
    return (struct span){w->cur_, w->cascade_mid_, w->cascade_end_};
}

/* File a timer of the open cascade's slot (deadline before cascade_end_),
 * or touched past it (FRONT and BACK only), as `filer` must. */
static inline __attribute__((always_inline)) void
file_in_cascade(struct rota_wheel *w, struct span c, struct rota_timer *t,
                enum filer filer)
{
    uint64_t deadline = t->deadline_;

    if (deadline <= c.cur) { /* due: only the front walk meets these */
        place_at(w, t, deadline, c.cur);
        return;
    }
    size_t shift, slot = rota__slot_for(deadline, c.cur, &shift);
    unsigned index = (unsigned)slot & LEVEL_MASK;
    uint64_t start = deadline >> shift << shift;
    struct rota_link *mark = &w->marks_[index];

    if (deadline >= c.mid && deadline < c.end) {
        if (marked(w, index)) {
            struct rota_link *head = &w->slot_[slot];
            if (filer == FRONT)
                head = mark; /* appending to it puts t just before it */
            else if (filer == BACK)
                head = mark->next; /* just after it */
            list_append(head, &t->link_);
            return;
        }
        if (filer != FRONT) { /* the mark first, at the tail, then t */
            slot_append(w, slot, start, mark);
            w->marked_[index / 64] |= (uint64_t)1 << (index % 64);
        }
    }
    slot_append(w, slot, start, &t->link_);
}

/* File a timer by its deadline_, minding an open cascade (see above). */
static inline __attribute__((always_inline)) void
file_timer(struct rota_wheel *w, struct rota_timer *t)
{
    if (t->deadline_ >= w->cascade_end_)
        place_timer(w, t, t->deadline_);
    else if (t->deadline_ >= w->cascade_mid_)
        file_in_cascade(w, cascade_span(w), t, ARM);
    else
        list_append(&w->cascade_, &t->link_);
}

/* Take a timer out of whichever list holds it. */
static void unfile_timer(struct rota_wheel *w, struct rota_timer *t)
{
    struct rota_link *prev = t->link_.prev, *next = t->link_.next;

    prev->next = next;
    next->prev = prev;
    /* prev == next only when both are the list's head: the list is empty,
     * and if it is a slot's, so is the slot. */
    if (prev == next)
        rota__list_emptied(w, prev);
}

/* A timer enters the set of pending deadlines (arm, or periodic re-arm).
 * earliest_ is 0 when unknown, and no deadline is below 0. */
static void note_new_deadline(struct rota_wheel *w, uint64_t deadline)
{
    if (deadline < w->earliest_)
        w->earliest_ = deadline;
}

/* A deadline leaves the set (fire, cancel, move): the cache may be stale. */
static void note_gone_deadline(struct rota_wheel *w, uint64_t deadline)
{
    if (deadline == w->earliest_)
        w->earliest_ = 0;
}

/* -------------------------------------------------------------- steps */

/*
 * Bring a list into the cache before it is walked in order.  Each step of a
 * walk is a cache miss that depends on the one before, one memory latency
 * per timer; loading from both ends at once, with nothing else to do, runs
 * two such chains side by side and halves that, and the walk that follows
 * (a cascade, or firing, which must go front to back for ties) finds the
 * timers in the cache.  At most `pairs` steps from each end (and at most
 * PRELOAD_PAIRS, 512 KiB of timers, so that what is loaded is still cached
 * when the walk gets there).  Only while no callback can run: every node
 * stays valid.  Each timer's line at PRELOAD_TAIL is prefetched as well
 * (no load: a prefetch cannot fault and nothing waits on it): a periodic
 * timer's schedule and callback, which the fire reads, often lie on the
 * line after its links; for a one-shot timer it is at worst a neighbour's
 * line fetched early.  No preload while at most PRELOAD_MIN_PENDING timers
 * are pending (512 KiB of one-shot timers, a core's second-level cache on
 * the smaller of the machines measured): they stay cached between passes,
 * so there are no misses to overlap and the preload's loads are pure cost
 * (at 1e4 periodic timers, 4.4 instructions and 0.9 data references per
 * fire, and about 0.9x the time per fire without it, bench/ab).
 */
#define PRELOAD_PAIRS 4096
#define PRELOAD_MIN_PENDING 16384u
#define PRELOAD_TAIL (sizeof(struct rota_periodic) - 1)

/* preload() of a list of two timers or more, from its ends.  Out of
 * line: the pass that inlines preload() keeps the registers the loop
 * would take, and a sparse wheel's slots of one timer never come here. */
static void __attribute__((noinline))
preload_ends(const struct rota_link *front, const struct rota_link *back,
             size_t pairs)
{
    if (pairs > PRELOAD_PAIRS)
        pairs = PRELOAD_PAIRS;
    /* The ends are tested before each pair of steps: a loop that steps,
     * then tests after each step (one load a link, one test fewer a pair)
     * runs a storm's expiry 7% slower at a million timers (bench/ab),
     * though it executes fewer instructions.  Two pairs a round, the
     * bound tested once a round (so one pair more than `pairs` may be
     * loaded): the count costs two instructions a round, not a pair. */
    for (size_t n = (pairs + 1) / 2; n != 0; n--) {
        if (front == back || front->next == back)
            break;
        front = front->next;
        back = back->prev;
        __builtin_prefetch((const char *)front + PRELOAD_TAIL);
        __builtin_prefetch((const char *)back + PRELOAD_TAIL);
        if (front == back || front->next == back)
            break;
        front = front->next;
        back = back->prev;
        __builtin_prefetch((const char *)front + PRELOAD_TAIL);
        __builtin_prefetch((const char *)back + PRELOAD_TAIL);
        /* The loads are the point: keep the compiler from dropping them. */
        __asm__ volatile("" : : "r"(front), "r"(back));
    }
}

static inline void preload(const struct rota_wheel *w,
                           const struct rota_link *head, size_t pairs)
{
    const struct rota_link *front = head->next, *back = head->prev;

#ifdef ROTA_DEBUG
    return; /* it follows links before the checks have seen them */
#endif
    if (front == back)
        return; /* one timer, the usual slot of a sparse wheel */
    if (pending_count(w) <= PRELOAD_MIN_PENDING)
        return; /* few enough to stay cached: nothing to overlap */
    preload_ends(front, back, pairs);
}

/*
 * What one call may still do (rota.h, rota_wheel_advance_max): fire (or
 * hand out) `fires` timers and file `moves` timers again, each starting at
 * the caller's limit.  `stopped` says that some work could not be done for
 * want of one or the other.  A call without a limit gets OPEN_CHUNK of
 * each, renewed by renew() whenever it is spent (see "walks that end").
 */
struct budget {
    size_t fires;
    size_t moves;
    size_t fires_granted; /* fires the call was given so far: fires taken
                             is this minus `fires` */
    bool limited; /* the caller gave a limit: the call must stay short */
    bool stopped;
    uint8_t noted; /* which of renew()'s marks are set: NOTED_* */
    /* renew()'s marks: the wheel's counters when it last started a
     * stretch of fires, and of moves without a fire. */
    uint64_t fire_pending, fire_last; /* fire_last: stats_.fired then */
    uint64_t move_pending, move_fired, move_refiled;
};

/*
 * WALKS THAT END
 *   Every walk follows `next` links, and a list that a misuse corrupted
 *   (rota.h, THE WHEEL'S RULES: a pending timer freed and its memory
 *   reused, two threads, a wheel initialised again or copied) may never
 *   lead back to its head: a timer filed again can land ahead of the walk,
 *   round and round.  So no walk is unbounded, and the bound costs the hot
 *   paths nothing:
 *   - A call without a limit spends its budget as a limited call does (the
 *     decrement is there anyway), in chunks of OPEN_CHUNK.  When a chunk is
 *     spent, renew() checks the work since it last looked against what the
 *     wheel's counters allow, and renews the chunk or reports the wheel
 *     corrupt.  What is allowed: a pass fires only timers that were pending
 *     when it looked, or periodic timers it filed again since (a timer armed
 *     inside a pass fires in a later call: rota.h, CALLBACK CONTEXT); and
 *     with no fire in between (so no callback: nothing armed, touched or
 *     cancelled), a pending timer is filed again at most once per level on
 *     its way down plus once up after a touch, so at most (levels + 2) x
 *     pending moves.  A looping list breaks one or the other within two
 *     chunks plus that much work.
 *   - Walks outside a pass (find_earliest(), drain, the deferred list,
 *     foreach) stop after more steps than timers are pending.
 *   A corrupt wheel is reported by rota__wheel_corrupt(), in every build:
 *   the message names the misuses, then abort().  (A debug build usually
 *   names the culprit before that, from the seals and links it checks.)
 */
#define OPEN_CHUNK 65536u
#define NOTED_FIRES 1u
#define NOTED_MOVES 2u

/* The pending count, where a call that loops trusts it: a count beyond
 * what memory can hold is itself the sign of a corrupt wheel (counters
 * raced by two threads). */
static uint64_t trusted_pending(const struct rota_wheel *w)
{
    uint64_t pending = pending_count(w);
    if (pending > SIZE_MAX / sizeof(struct rota_timer))
        rota__wheel_corrupt(w, NULL);
    return pending;
}

/* A budget of `chunk` of each, limited or open.  renew()'s marks are left
 * unset, and are read only once `noted` says renew() set them: a pass
 * starts with the stores it made before the marks existed. */
static inline void budget_start(struct budget *b, size_t chunk, bool limited)
{
    b->fires = b->moves = b->fires_granted = chunk;
    b->limited = limited;
    b->stopped = false;
    b->noted = 0;
}

/* The budget for a call whose limit is `limit`, SIZE_MAX for none. */
static inline void budget_for(struct budget *b, size_t limit)
{
    if (limit == SIZE_MAX)
        budget_start(b, OPEN_CHUNK, false);
    else
        budget_start(b, limit, true);
}

/* An open budget's chunk of `*left` is spent: check, renew (see above). */
static void __attribute__((noinline, cold))
renew(const struct rota_wheel *w, struct budget *b, size_t *left)
{
    const struct rota_stats *s = &w->stats_;

    if (left == &b->fires) {
        b->fires_granted += OPEN_CHUNK;
        if (!(b->noted & NOTED_FIRES)) {
            b->noted |= NOTED_FIRES;
            b->fire_pending = trusted_pending(w);
            b->fire_last = s->fired;
        } else if (s->fired - b->fire_last > b->fire_pending) {
            /* The fires beyond the periodic timers filed again (refired_,
             * not in stats_.fired) left their timers idle: at most one
             * per timer that was pending. */
            rota__wheel_corrupt(w, NULL);
        }
    } else if (!(b->noted & NOTED_MOVES) || fires_total(w) != b->move_fired) {
        b->noted |= NOTED_MOVES;
        b->move_pending = trusted_pending(w);
        b->move_fired = fires_total(w);
        b->move_refiled = s->refiled;
    } else if (s->refiled - b->move_refiled >
               (ROTA_WHEEL_LEVELS + 2) * (b->move_pending + 1)) {
        rota__wheel_corrupt(w, NULL);
    }
    *left = OPEN_CHUNK;
}

/* Take one unit of `*left`; an open budget is renewed when spent. */
static inline bool spend(const struct rota_wheel *w, struct budget *b,
                         size_t *left)
{
    if (*left == 0) {
        if (b->limited) {
            b->stopped = true;
            return false;
        }
        renew(w, b, left);
    }
    --*left;
    return true;
}

/* File again every timer of `batch` (a slot whose start cur has reached),
 * front to back as ties need, all at once. */
static void refile_batch(struct rota_wheel *w, struct rota_link *batch,
                         struct budget *b)
{
    const uint64_t cur = w->cur_;

    preload(w, batch, PRELOAD_PAIRS);
    while (!list_empty(batch) && spend(w, b, &b->moves)) {
        struct rota_link *first = batch->next;
        struct rota_timer *t = timer_of(first);
        list_unlink_first(batch, first, first->next);
        place_at(w, t, t->deadline_, cur);
        w->stats_.refiled++;
    }
}

/*
 * File again the timers of the slot being cascaded, as far as the budget
 * goes.  Returns true when the cascade is done.
 *
 * The list is walked from both ends at once, so that two chains of misses
 * run side by side instead of one: each step of a walk is a miss that
 * depends on the one before.  The front walk files every timer it meets;
 * what the back walk does depends on the call:
 *   - a call with a limit must stay short, so the back walk files timers
 *     too (ordered_walk()): those touched past the slot (their place among
 *     equal deadlines is free), and those bound for the level just below,
 *     through the marks, so that ties keep arm order.  It passes over those
 *     bound lower (the front walk files them later, in order), but never
 *     over one bound for the level below (the front walk would file it
 *     before the mark, ahead of older timers): where it cannot file one, it
 *     waits.  It waits so for the front walk's first BACK_WARMUP steps of
 *     each call, since a short list is cheap to walk and marks cost
 *     instructions.  Then a limited call costs about limit / 2 misses end
 *     to end;
 *   - a call without one (and while no mark is set, which a limited call
 *     or an arm may have left) only needs the whole walk to be quick
 *     (quick_walk()): the back walk files nothing and tests nothing but
 *     where it is; it only loads, one step per front step, and the front
 *     walk finds the back half in the cache.  No marks, the fewest
 *     instructions, and the same two chains.
 * Each timer filed costs one unit of the budget, whichever end filed it,
 * and the back walk takes at most one step per front step.  (At most
 * PRELOAD_PAIRS back steps a call: for what it passes over to be still
 * cached when the front walk gets there.)
 */
#define BACK_WARMUP 16

static bool ordered_walk(struct rota_wheel *w, struct budget *b)
{
    struct rota_link *head = &w->cascade_, *back = head->prev;
    size_t back_steps = PRELOAD_PAIRS, front_steps = 0;
    const struct span c = cascade_span(w);

#ifdef ROTA_DEBUG
    back_steps = 0; /* it would read timers before the checks see them */
#endif
    /* The budget and the refiled count live in registers for the walk
     * (filing stores through `w`, which would otherwise make the compiler
     * reload and store both per timer); they go back to memory when the
     * walk ends or its budget is spent, before renew() reads them. */
    size_t left = b->moves, moved = 0;
    /* The back walk goes on while back_steps > 0: it stops at its cap or
     * where it meets the front walk (it cannot pass the front timer, so it
     * never reaches the head). */
    while (!list_empty(head)) {
        if (left == 0) {
            b->moves = 0;
            w->stats_.refiled += moved;
            moved = 0;
            if (!spend(w, b, &b->moves))
                return false;
            left = b->moves;
        } else {
            left--;
        }
        struct rota_timer *t = timer_of(head->next);
        if (back_steps > 0 && back != &t->link_) {
            struct rota_timer *u = timer_of(back);
            uint64_t deadline = u->deadline_;
            if (deadline < c.mid) { /* the front walk files it */
                back = back->prev;
                back_steps--;
            } else if (left > 0 &&
                       (deadline >= c.end || front_steps >= BACK_WARMUP)) {
                struct rota_link *prev = back->prev;
                back_steps--;
                left--;
                list_unlink(&u->link_);
                file_in_cascade(w, c, u, BACK);
                moved++;
                back = prev;
            }
        }
        if (back == &t->link_)
            back_steps = 0; /* the walks met */
        list_unlink(&t->link_);
        file_in_cascade(w, c, t, FRONT);
        moved++;
        front_steps++;
    }
    b->moves = left;
    w->stats_.refiled += moved;
    cascade_close(w);
    return true;
}

/*
 * What quick_walk() files a timer with: cur, and the level just below the
 * slot's, where every deadline in [mid, end) goes, to the slot of its digit
 * at that level.  That is nearly every timer of a cascade (all but those
 * due at the slot's start, from level 1), so the walk tests for it first
 * and finds the slot from the digit: a subtraction, a compare and a shift
 * against place_at()'s general search for the level.
 */
struct below {
    uint64_t cur;
    uint64_t mid;   /* the first deadline of the level below: cur + a slot */
    uint64_t width; /* end - mid: the deadlines that go there */
    size_t shift;   /* that level's first bit */
    struct rota_link *slots; /* its slots */
};

static struct below below_span(struct rota_wheel *w)
{
    struct below q;
    /* end - 1 is the slot's last deadline, so its level is the one below. */
    uint64_t end = w->cascade_end_;
    size_t slot = rota__slot_for(end - 1, w->cur_, &q.shift);
    q.cur = w->cur_;
    q.mid = q.cur + ((uint64_t)1 << q.shift);
    q.width = end - q.mid;
    q.slots = rota__slot_head(w, slot & ~(size_t)LEVEL_MASK);
    return q;
}

/* File a timer of quick_walk()'s.  `low`: the slot is of level 1, so the
 * level below is 0, the digit the deadline's lowest byte and the slots
 * the wheel's first: a constant shift and base, out of the registers a
 * walk needs. */
static inline __attribute__((always_inline)) void
quick_file(struct rota_wheel *w, struct rota_timer *t, const struct below *q,
           const bool low)
{
    uint64_t deadline = t->deadline_;
    size_t shift = low ? 0 : q->shift;

    if (deadline - q->mid < q->width) {
        struct rota_link *head =
            (low ? w->slot_ : q->slots) + ((deadline >> shift) & LEVEL_MASK);
        struct rota_link *tail = head->prev;
        if (tail == head)
            slot_filled(w, (size_t)(head - w->slot_),
                        deadline >> shift << shift);
        list_append_after(head, tail, &t->link_);
        return;
    }
    place_at(w, t, deadline, q->cur); /* due, lower, or touched past */
}

/* The front timer `t` of the list at `head`, whose next link is `next`,
 * is about to be filed elsewhere by quick_walk(): a release build leaves
 * the list as it is (see below), a debug build unlinks it. */
static inline void walk_take(struct rota_link *head, struct rota_link *t,
                             struct rota_link *next)
{
#ifdef ROTA_DEBUG
    list_unlink_first(head, t, next);
#else
    (void)head;
    (void)t;
    (void)next;
#endif
}

/*
 * The walk of a call without a limit, while no mark is set (see above).
 * It goes in stretches of at most the budget left, so that the budget is
 * one count per stretch, not a test per timer; a stretch of both walks
 * also ends where the walks meet, and the front walk goes on alone.
 * Inside a stretch the front timer is `t`, and the back walk at `back`,
 * at or after it: `back` steps to its prev link,
 * which is a timer of the list while back != t; when that is t itself,
 * which the front walk files now, the walks have met, and back is set to
 * the next front timer, where the stretch stops.
 *
 * The back walk has no cap, unlike preload(): however long the list, the
 * timers it loads last, next to where the walks meet, are the ones the
 * front walk reads next, still cached.  Capped at PRELOAD_PAIRS it loaded
 * the list's last timers only, which the front walk reached after all the
 * others, evicted by then, and walked the rest as one chain of misses: at
 * N = 1e5 periodic timers a level-1 slot holds about 60,000, and W5
 * there runs in 0.87x the time without the cap (bench/ab, Intel Xeon).
 *
 * The walk does not unlink what it files: nothing reads the cascade list
 * while it runs (no callback, and filing appends to other lists), so the
 * front timer's next link, read before filing overwrites it, is all the
 * walk needs, and the list's head is made empty once, at the end.  (A
 * debug build unlinks each timer all the same: its checks read a timer's
 * neighbours.)
 */
static inline __attribute__((always_inline)) void
quick_walk(struct rota_wheel *w, struct budget *b, const struct below *q,
           const bool low)
{
    struct rota_link *head = &w->cascade_, *t = head->next, *back = head->prev;
    size_t left = b->moves;
    bool both = true; /* the back walk runs until the walks meet */

#ifdef ROTA_DEBUG
    both = false; /* it would read timers before the checks see them */
#endif
    while (t != head) {
        if (left == 0) { /* an open budget: renew() checks, renews */
            b->moves = 0;
            renew(w, b, &b->moves);
            left = b->moves;
        }
        size_t n = left, k;
        if (both && back != t) {
            k = n;
            do {
                struct rota_timer *ft = timer_of(t);
                struct rota_link *next = t->next, *prev = back->prev;
                walk_take(head, t, next);
                quick_file(w, ft, q, low);
                back = prev == t ? next : prev;
                t = next;
            } while (--k != 0 && t != back);
            if (t == back)
                both = false; /* the walks met */
        } else {
            k = n;
            do {
                struct rota_timer *ft = timer_of(t);
                struct rota_link *next = t->next;
                walk_take(head, t, next);
                quick_file(w, ft, q, low);
                t = next;
            } while (--k != 0 && t != head);
        }
        left -= n - k;
        w->stats_.refiled += n - k;
    }
    list_init(head); /* every timer is filed elsewhere now */
    b->moves = left;
}

static bool run_cascade(struct rota_wheel *w, struct budget *b)
{
    if (b->limited || any_marked(w))
        return ordered_walk(w, b);
    struct below q = below_span(w);
    if (q.shift == 0)
        quick_walk(w, b, &q, true);
    else
        quick_walk(w, b, &q, false);
    cascade_close(w);
    return true;
}

/*
 * Move cur to the start of the next occupied slot if that is <= limit.  A
 * level-0 slot becomes the due list, preloaded as far as `fires`, the fire
 * budget left, can reach; a higher one becomes the cascade list, filed
 * again by run_cascade().  Returns false, with next_step_ set, when
 * nothing comes due by `limit`.  Only while both lists are empty (an
 * occupied slot's list is not).
 */
static inline __attribute__((always_inline)) bool
step(struct rota_wheel *w, uint64_t limit, size_t fires)
{
    unsigned slot;

    if (!first_occupied(w, &slot)) {
        w->next_step_ = ROTA_NEVER;
        return false;
    }
    uint64_t start = look_start(w->cur_, slot);
    w->next_step_ = start;
    if (start > limit)
        return false;
    struct rota_link *head = &w->slot_[slot];
    mark_empty(w, slot);
    w->cur_ = start;
    if (level_of(slot) == 0) {
        /* One deadline, `start`, for all but touched timers: the whole
         * list becomes the due list (empty here), in order, without a
         * walk.  peek_due() files a touched one again when it reaches the
         * head, against this same cur. */
        list_take_all(&w->due_.link_, head);
        preload(w, &w->due_.link_, fires / 2);
        return true;
    }
    /* next_step_ stays at cur while the cascade lasts: no idle path. */
    list_take_all(&w->cascade_, head);
    cascade_open(w, start, level_of(slot));
    return true;
}

/*
 * The next timer due at or before now_, left at the head of the due list, or
 * NULL: nothing is due by now_, or (b->stopped) the budget ran out
 * first.  `fires` is b->fires, which the fire loop keeps in a register (nothing
 * here reads it from b, so the loop need not store it first).  Touched timers
 * met at the head are filed again, not returned.  Order: the due list first
 * (its timers are no later than any in the cascade, and came before them in
 * it), then the cascade, then the next slot.
 */
static inline __attribute__((always_inline)) struct rota_timer *
find_due(struct rota_wheel *w, struct budget *b, size_t fires)
{
    for (;;) {
        while (!list_empty(&w->due_.link_)) {
            struct rota_timer *t = timer_of(w->due_.link_.next);
            if (t->deadline_ <= w->cur_)
                return t;
            if (!spend(w, b, &b->moves))
                return NULL;
            list_unlink(&t->link_);
            file_timer(w, t);
            w->stats_.refiled++;
        }
        /* A timer is on the cascade list only while a cascade is open:
         * one load tells there is neither. */
        if (w->cascade_end_ != 0) {
            if (!list_empty(&w->cascade_)) {
                if (!run_cascade(w, b))
                    return NULL;
                continue;
            }
            cascade_close(w); /* emptied by cancels meanwhile */
        }
        if (!step(w, w->now_, fires)) {
            /* Nothing comes due by now_: every list is also correctly filed
             * against now_, so the wheel can jump there. */
            w->cur_ = w->now_;
            return NULL;
        }
    }
}

/* find_due() for the calls outside advance()'s fire loop, which inlines
 * it: there a call would save and restore six registers twice a pass. */
static struct rota_timer *__attribute__((noinline))
peek_due(struct rota_wheel *w, struct budget *b)
{
    return find_due(w, b, b->fires);
}

/* Whether a call that stopped at its limit left work: a due or touched
 * timer on the due list, a cascade, or a slot that starts by now_.  Cheap,
 * and never false when a due timer remains. */
static bool work_left(const struct rota_wheel *w)
{
    unsigned slot;

    if (!list_empty(&w->due_.link_) || !list_empty(&w->cascade_))
        return true;
    return first_occupied(w, &slot) &&
           slot_start(w->cur_, level_of(slot), index_of(slot)) <= w->now_;
}

/* ck = a + b, false when it would pass ROTA_MAX_DEADLINE. */
static bool add_deadline(uint64_t a, uint64_t b, uint64_t *sum)
{
    if (a > ROTA_MAX_DEADLINE || b > ROTA_MAX_DEADLINE - a)
        return false;
    *sum = a + b;
    return true;
}

/*
 * The deadline after `fired` for a periodic timer, per its policy (rota.h,
 * enum rota_missed).  A tick is missed when the schedule's next point,
 * fired + period, is already due (<= now): only then do the policies
 * differ.  A fire late by less than a period keeps the schedule under every
 * policy; BURST keeps it always (each missed point fires in this call);
 * SKIP moves to the first point strictly after now; DELAY restarts the
 * schedule at now + period.  False when the next deadline would pass
 * ROTA_MAX_DEADLINE: the schedule ends.
 */
static bool next_period(const struct rota_wheel *w,
                        const struct rota_periodic *p, uint64_t fired,
                        uint64_t *next)
{
    uint64_t period = rota__sched_period(p->sched_);
    enum rota_missed missed = rota__sched_missed(p->sched_);
    uint64_t late = w->now_ - fired; /* fired <= now: it came due */

    if (late < period || missed == ROTA_MISSED_BURST)
        return add_deadline(fired, period, next);
    if (missed == ROTA_MISSED_DELAY)
        return add_deadline(w->now_, period, next);
    /* ROTA_MISSED_SKIP: fired + k * period, k = late / period + 1 >= 2. */
    uint64_t k = late / period + 1;
    if (k > UINT64_MAX / period)
        return false;
    return add_deadline(fired, k * period, next);
}

/* Remove `t`, the due list's first timer, whose deadline is `fired` (the
 * caller has read it) and which fires `late` ticks late (now_ - fired:
 * the caller has it for the whole run, and no callback moves now_), and
 * account for its firing; a periodic timer is filed again first, so its
 * callback may cancel or re-arm it.  *fn is the callback to run. */
static inline __attribute__((always_inline)) void
take_due(struct rota_wheel *w, struct rota_timer *t, uint64_t fired,
         uint64_t late, rota_timer_fn **fn)
{
    uint64_t next;

    /* No note_gone_deadline(): earliest_ is 0 in a pass that fires
     * (begin_pass()).  The first timer's prev link is the due list's
     * head: not loaded. */
    list_unlink_first(&w->due_.link_, &t->link_, t->link_.next);
    *fn = timer_fn(t);
    if (__builtin_expect(*fn != rota__periodic_fire, 1)) {
        w->stats_.fired++; /* a last fire: see pending_count() */
        set_idle(t);
        return;
    }
    struct rota_periodic *p = periodic_of(t);
    uint64_t period = rota__sched_period(p->sched_);
    *fn = p->fn_;
    /* Fired on time, every policy continues the schedule at fired +
     * period: no division.  That sum is filed as the inline arm files
     * when it passes the inline arm's one compare, next + 1 > arm_min_
     * (see "what an operation costs"), which also sends the slow way the
     * sums that are wrong: period 0 (armed by rota_timer_arm_at() alone:
     * it fires once; the sum is fired, below arm_min_), a sum that wraps
     * (below fired) and the one past ROTA_MAX_DEADLINE (UINT64_MAX). */
    next = fired + period;
    if (__builtin_expect(late == 0 && next + 1 > w->arm_min_, 1)) {
        /* On time, fired is cur_: fired <= cur_ <= now_ = fired. */
        t->deadline_ = next;
        place_later(w, t, next, fired);
    } else {
        /* On time with a sum that is right, `next` stands; else the
         * policy decides, or the schedule ends. */
        bool on_time = late == 0 && period - 1 < ROTA_MAX_DEADLINE - fired;
        uint64_t later = next; /* its own: `next` stays in a register */
        if (!on_time && (period == 0 || !next_period(w, p, fired, &later))) {
            w->stats_.fired++; /* the schedule ends: a last fire */
            set_idle(t);
            return;
        }
        t->deadline_ = later;
        if (later >= w->arm_min_) /* not due, not in a cascade: as above */
            place_later(w, t, later, w->cur_);
        else
            file_timer(w, t);
    }
    set_pending(t);
    /* No note_new_deadline(): earliest_ is 0 in a pass that fires. */
    w->refired_++;
}

/*
 * THE LATENESS HISTOGRAM BY RUNS
 *   rota_wheel_lateness() counts every fire in the log2 bucket of its
 *   `late`, and may be read at any time, from a callback too.  Fires come
 *   in runs of one deadline (a due list is one deadline but for stragglers),
 *   and within one call a run's fires are equally late, so the fire loops
 *   count runs, not fires.  late_run_ names the open bucket; while it is
 *   open, late_[late_run_] holds its count minus the fires so far
 *   (fires_total()) at its opening, and that count goes up as its fires
 *   happen: count[k] is late_[k] plus, for k == late_run_, fires_total(),
 *   exact at every moment.
 *   A loop keeps the deadline of the run it is in, and a fire of another
 *   deadline first opens that fire's bucket (late_open()), unless it is the
 *   open one.  Nothing else changes the open bucket; it stays open across
 *   calls.
 */

/* The log2 bucket of `late`: 0 on time, k for 2^(k-1) <= late < 2^k. */
static inline unsigned late_bucket(uint64_t late)
{
    return late == 0 ? 0 : 64u - (unsigned)__builtin_clzll(late);
}

/* The next fire, not yet counted in fires_total(), is `late` ticks late and
 * starts a run: make its bucket the open one. */
static void __attribute__((noinline))
late_open(struct rota_wheel *w, uint64_t late)
{
    unsigned bucket = late_bucket(late);

    if (bucket != w->late_run_) {
        uint64_t fired = fires_total(w);
        w->late_[w->late_run_] += fired;
        w->late_[bucket] -= fired;
        w->late_run_ = (uint8_t)bucket;
    }
}

/* What begin_pass() found. */
enum pass_start {
    PASS_RUN,       /* something may be due: run the pass */
    PASS_IDLE,      /* nothing can be due yet: the cheap idle path */
    PASS_BACKWARDS, /* the clock went backwards: counted, time kept */
};

/* Start a call that may fire timers.  `idle_tested`: the caller found the
 * idle path closed for `now` (unclamped; clamped, it would be open only
 * for now == UINT64_MAX with nothing pending, where the pass finds nothing
 * and ends as the idle path would). */
static enum pass_start begin_pass(struct rota_wheel *w, uint64_t now,
                                  bool idle_tested)
{
    if (now > ROTA_MAX_DEADLINE) /* UINT64_MAX is ROTA_NEVER, not a time */
        now = ROTA_MAX_DEADLINE;
    if (now < w->now_) {
        w->stats_.clock_backwards++;
        return PASS_BACKWARDS;
    }
    if (!idle_tested && rota__advance_idle(w, now))
        return PASS_IDLE;
    w->now_ = now;
    /* A callback's inline arm must not file a time that is due; the end
     * of the pass sets arm_min_ afresh (settle_earliest()). */
    if (w->arm_min_ <= now)
        w->arm_min_ = arm_min_for(now + 1, w->cur_);
    /* Whatever fires has a deadline <= now, and the earliest deadline is
     * no later than it: forgotten here, once, instead of compared at
     * every fire.  It stays 0 until the pass ends: nothing in a pass
     * caches a deadline <= now_ (rota_wheel_next_deadline()), and
     * note_new_deadline() only lowers a known one.  One forgotten already
     * (0) is not stored again: 0 - 1 is above every time. */
    if (w->earliest_ - 1 < now)
        w->earliest_ = 0;
    return PASS_RUN;
}

/*
 * The end of a call that ran peek_due() (`more`: timers are still due).
 * rota_timer_touch_at_unchecked() moves deadlines without telling the wheel,
 * so the cached earliest deadline E may be stale: earlier than the truth.
 * It must not stay at or before now, or timeout_ms() would answer 0
 * forever; so a pass that leaves nothing due forgets such an E, and
 * next_step_ is kept at or below E, so that the call whose `now` reaches E
 * does not take the idle path.  (An exact E never needs the second: its
 * timer is due, or sits in a slot that starts no later than E.)
 */
static inline void settle_cache(struct rota_wheel *w, bool more)
{
    if (w->earliest_ != 0) {
        if (!more && w->earliest_ <= w->now_)
            w->earliest_ = 0;
        else if (w->earliest_ < w->next_step_)
            w->next_step_ = w->earliest_;
    }
}

static void settle_earliest(struct rota_wheel *w, bool more)
{
    settle_cache(w, more);
    set_arm_min(w); /* the pass may have moved next_step_ up */
}

/* settle_earliest() at the usual end of a pass: find_due() found nothing
 * due by now_ (so cur_ is now_, no cascade is open and the due list is
 * empty) and no timer joined the due list since; what settle_earliest()
 * would load to learn that is known. */
static void settle_caught_up(struct rota_wheel *w)
{
    settle_cache(w, false);
    w->arm_min_ = arm_min_from(w, w->now_);
}

/* Timers armed by callbacks with a deadline <= now join the wheel. */
static void __attribute__((noinline)) join_deferred(struct rota_wheel *w)
{
    for (uint64_t steps = 0; !list_empty(&w->deferred_); steps++) {
        /* Filing never adds to this list: more steps than pending
         * timers means it loops (see "walks that end"). */
        if (steps >= OPEN_CHUNK && steps > trusted_pending(w))
            rota__wheel_corrupt(w, NULL);
        struct rota_timer *t = timer_of(w->deferred_.next);
        list_unlink(&t->link_);
        file_timer(w, t);
    }
}

/* The pass is over: deferred timers join the wheel.  Whether any did. */
static inline bool end_pass(struct rota_wheel *w)
{
    w->in_pass_ = 0;
    if (list_empty(&w->deferred_))
        return false;
    join_deferred(w);
    return true;
}

/* ------------------------------------------------------- public: wheel */

#ifdef ROTA_DEBUG
_Atomic(uintptr_t) rota__debug_wheels[DEBUG_WHEELS];
_Atomic(uintptr_t) rota__debug_busy[DEBUG_WHEELS];
_Thread_local char rota__debug_thread;

/* Run `call` (an int-returning expression) as a pass of a debug build: the
 * wheel's own checks first (wheel_debug.h), its mark while it runs. */
#define DEBUG_PASS(w, call)                                                    \
    do {                                                                       \
        bool entered_ = false;                                                 \
        int rc_ = (w) == NULL ? 0 : debug_pass_begin((w), &entered_);          \
        if (rc_ == 0) {                                                        \
            rc_ = (call);                                                      \
            debug_pass_end((w), entered_);                                     \
        }                                                                      \
        return rc_;                                                            \
    } while (0)
#else
#define DEBUG_PASS(w, call) return (call)
#endif

int rota_wheel_init(struct rota_wheel *w, uint64_t now)
{
    if (w == NULL)
        return ROTA_EINVAL;
    if (now > ROTA_MAX_DEADLINE)
        now = ROTA_MAX_DEADLINE;
    *w = (struct rota_wheel){0};
    w->pending_above_ = PENDING_ABOVE;
    w->now_ = now;
    w->cur_ = now;
    w->next_step_ = ROTA_NEVER;
    w->earliest_ = ROTA_NEVER;
    set_arm_min(w); /* UINT64_MAX: the first arm sets the earliest */
    list_init(&w->due_.link_);
    w->due_.deadline_ = ROTA_NEVER; /* the fire loop's end (advance_pass()) */
    list_init(&w->deferred_);
    list_init(&w->cascade_);
    for (unsigned slot = 0; slot < SLOT_COUNT; slot++)
        list_init(&w->slot_[slot]);
#ifdef ROTA_DEBUG
    debug_wheel_born(w);
#endif
    return 0;
}

/* What advance_pass() returns, in two registers. */
struct pass {
    int more;     /* timers are still due */
    size_t fired; /* callbacks run */
};

/* The pass of an advance.  Its fires are counted by the fire budget it
 * spends anyway (one unit a fire), which lives in memory across the
 * callbacks: a count of its own would hold a register there. */
static struct pass __attribute__((noinline))
advance_pass(struct rota_wheel *w, uint64_t now, size_t chunk, bool limited)
{
    struct budget b;
    int more = 0;

    budget_start(&b, chunk, limited);
    /* Both callers took the idle path when it was open. */
    switch (begin_pass(w, now, true)) {
    case PASS_IDLE:
        break;
    case PASS_BACKWARDS: /* an earlier limit may have left timers due */
        more = peek_due(w, &b) != NULL || b.stopped;
        settle_earliest(w, more); /* peek_due() may have moved next_step_ */
        break;
    case PASS_RUN: {
        /* The loop keeps in registers what no callback can change: the
         * fire budget (renew() reads it from b, where it is put back before it
         * runs; find_due() is given it), the deadline of the run it is in (see
         * "the lateness histogram by runs") and how late the run fires, now_
         * minus that deadline (a callback cannot advance or expire this wheel,
         * so now_ stays).  Stores through the lists would
         * otherwise make the compiler reload them all. */
        uint64_t run, late;
        size_t fires;
        w->in_pass_ = 1;
    fire:
        fires = b.fires;
        for (;;) {
            /* A run begins: the first fire of the pass, or the head is
             * not of the run's deadline, or the budget is spent.  The
             * head is due if it is a timer (not the list's own head,
             * due_, which the test of its deadline would also catch, but
             * compilers make the three tests one without jumps, which
             * costs more) and its deadline is <= cur_: not a touched
             * timer; one armed by a callback with a deadline <= now_
             * waits on the deferred list. */
            struct rota_link *head = w->due_.link_.next;
            struct rota_timer *t =
                rota_container_of(head, struct rota_timer, link_);
            if (head == &w->due_.link_ || t->deadline_ > w->cur_ ||
                fires == 0) {
                t = find_due(w, &b, fires);
                if (t == NULL)
                    break;
                if (fires == 0) {
                    b.stopped = true;
                    break;
                }
                head = &t->link_;
            }
            /* On time in the open bucket 0 is the usual case, and costs
             * nothing more. */
            run = t->deadline_;
            late = w->now_ - run;
            if (late != 0 || w->late_run_ != 0)
                late_open(w, late);
            /* The run's fires: the head's deadline is the run's, which is
             * <= cur_ and nothing but due, so no other test; due_'s own,
             * ROTA_NEVER, is no run's. */
            do {
                fires--;
                /* The next due timer's miss overlaps with this callback. */
                __builtin_prefetch(head->next);
                rota_timer_fn *fn;
                take_due(w, t, run, late, &fn);
                fn(w, t, late); /* may free t: not touched afterwards */
                head = w->due_.link_.next;
                t = rota_container_of(head, struct rota_timer, link_);
            } while (t->deadline_ == run && fires != 0);
        }
        /* Unless the limit stopped the loop, it saw no due timer left;
         * then only deferred timers can be due, and end_pass() puts them
         * on the due list. */
        b.fires = fires;
        if (b.stopped && !b.limited) {
            /* Out of the loop, so that the loop makes no call of its
             * own but the callback's (see "walks that end"). */
            renew(w, &b, &b.fires);
            b.stopped = false;
            goto fire;
        }
        if (end_pass(w) || b.stopped) {
            more = b.stopped ? work_left(w) : !list_empty(&w->due_.link_);
            settle_earliest(w, more);
        } else {
            settle_caught_up(w);
        }
        break;
    }
    }
    return (struct pass){more, b.fires_granted - b.fires};
}

static int advance_max_call(struct rota_wheel *w, uint64_t now,
                            size_t max_fires, size_t *fired)
{
    size_t count = 0;
    int more = 0;

    if (w == NULL)
        return ROTA_EINVAL;
    if (w->in_pass_)
        return ROTA_EBUSY;
    if (!rota__advance_idle(w, now)) {
        struct pass p = max_fires == SIZE_MAX
                            ? advance_pass(w, now, OPEN_CHUNK, false)
                            : advance_pass(w, now, max_fires, true);
        more = p.more;
        count = p.fired;
    }
    if (fired != NULL)
        *fired = count;
    return more;
}

int rota_wheel_advance_max(struct rota_wheel *w, uint64_t now, size_t max_fires,
                           size_t *fired)
{
    DEBUG_PASS(w, advance_max_call(w, now, max_fires, fired));
}

/* `idle_tested`: the caller found the idle path closed (if w is not NULL
 * and not in a pass), as rota_wheel_advance() does inline. */
static int advance_call(struct rota_wheel *w, uint64_t now, bool idle_tested)
{
    if (w == NULL)
        return ROTA_EINVAL;
    if (w->in_pass_)
        return ROTA_EBUSY;
    if (!idle_tested && rota__advance_idle(w, now))
        return 0;
    size_t fired = advance_pass(w, now, OPEN_CHUNK, false).fired;
    return fired > INT_MAX ? INT_MAX : (int)fired;
}

int rota_wheel_advance_noinline(struct rota_wheel *w, uint64_t now)
{
    DEBUG_PASS(w, advance_call(w, now, false));
}

int rota__advance_busy(struct rota_wheel *w, uint64_t now)
{
    DEBUG_PASS(w, advance_call(w, now, true));
}

static int expire_call(struct rota_wheel *w, uint64_t now,
                       struct rota_timer **out, size_t cap, size_t *n)
{
    struct budget b;
    size_t count = 0;
    int more = 0;

    if (w == NULL || (out == NULL && cap != 0))
        return ROTA_EINVAL;
    if (w->in_pass_)
        return ROTA_EBUSY;
    budget_for(&b, cap);
    switch (begin_pass(w, now, false)) {
    case PASS_IDLE:
        break;
    case PASS_BACKWARDS:
        more = peek_due(w, &b) != NULL || b.stopped;
        settle_earliest(w, more);
        break;
    case PASS_RUN: {
        uint64_t run = ROTA_NEVER; /* the lateness run (see above) */
        struct rota_timer *t;
        while ((t = peek_due(w, &b)) != NULL && spend(w, &b, &b.fires)) {
            rota_timer_fn *fn;
            if (t->deadline_ != run) {
                run = t->deadline_;
                late_open(w, w->now_ - run);
            }
            take_due(w, t, run, w->now_ - run, &fn);
            out[count++] = t;
        }
        more = b.stopped && work_left(w);
        settle_earliest(w, more);
        break;
    }
    }
    if (n != NULL)
        *n = count;
    return more;
}

int rota_wheel_expire(struct rota_wheel *w, uint64_t now,
                      struct rota_timer **out, size_t cap, size_t *n)
{
    DEBUG_PASS(w, expire_call(w, now, out, cap, n));
}

/* The exact earliest deadline, computed (see the essay). */
static uint64_t find_earliest(struct rota_wheel *w)
{
    struct budget all;

    budget_start(&all, OPEN_CHUNK, false);

    /* Untouched timers on the due list are due at cur, earlier than any
     * slot; touched ones at its head are filed where they belong.  A
     * cascade a limited call left half done is finished first (it may add
     * to the due list). */
    for (;;) {
        while (!list_empty(&w->due_.link_)) {
            struct rota_timer *t = timer_of(w->due_.link_.next);
            if (t->deadline_ <= w->cur_)
                return t->deadline_;
            spend(w, &all, &all.moves);
            list_unlink(&t->link_);
            file_timer(w, t);
            w->stats_.refiled++;
        }
        if (list_empty(&w->cascade_))
            break;
        run_cascade(w, &all);
    }
    cascade_close(w);
    /* Inside a pass, timers armed by callbacks wait on the deferred list
     * (a later touch may have moved them past now_). */
    uint64_t best = ROTA_NEVER, steps = trusted_pending(w) + 1;
    for (struct rota_link *n = w->deferred_.next; n != &w->deferred_;
         n = n->next) {
        if (steps-- == 0)
            rota__wheel_corrupt(w, NULL);
        if (timer_of(n)->deadline_ < best)
            best = timer_of(n)->deadline_;
    }

    unsigned slot;
    while (first_occupied(w, &slot)) {
        uint64_t start = slot_start(w->cur_, level_of(slot), index_of(slot));
        uint64_t end = slot_end(start, level_of(slot));
        struct rota_link *head = &w->slot_[slot];
        uint64_t in_slot = ROTA_NEVER;
        steps = trusted_pending(w) + 1;

        for (struct rota_link *n = head->next; n != head; n = n->next) {
            if (steps-- == 0)
                rota__wheel_corrupt(w, NULL);
            uint64_t d = timer_of(n)->deadline_;
            if (d < in_slot)
                in_slot = d;
            if (d == start)
                break; /* nothing in this slot can be earlier */
        }
        if (in_slot < end)
            return in_slot < best ? in_slot : best;
        /* Every timer here was touched past the slot: file them where they
         * belong and look again. */
        struct rota_link batch;
        list_init(&batch);
        list_move_all(&batch, head);
        mark_empty(w, slot);
        refile_batch(w, &batch, &all);
    }
    return best;
}

uint64_t rota_wheel_next_deadline(struct rota_wheel *w)
{
    if (w == NULL)
        return ROTA_NEVER;
    if (w->earliest_ != 0)
        return w->earliest_;
        /* 0 means "unknown", so a true earliest deadline of 0 is not cached. */
#ifdef ROTA_DEBUG
    bool entered;
    if (debug_pass_begin(w, &entered) != 0)
        return 0; /* reported; an early wake-up is harmless */
    uint64_t earliest = find_earliest(w);
    debug_pass_end(w, entered);
#else
    uint64_t earliest = find_earliest(w);
#endif
    /* From a callback, a deadline <= now_ (a timer still due) is not
     * cached: the pass fires timers without looking at the cache, which
     * it keeps at 0 (begin_pass()). */
    if (w->in_pass_ && earliest <= w->now_)
        return earliest;
    w->earliest_ = earliest;
    set_arm_min(w); /* no inline arm below it from now on */
    return earliest;
}

int rota_wheel_timeout_ms(struct rota_wheel *w, uint64_t now, uint64_t tick_ns,
                          int *timeout_ms)
{
    /* First, so that no error leaves the caller's variable at -1 (or
     * unset): passed to epoll_wait(), any negative value waits forever. */
    if (timeout_ms != NULL)
        *timeout_ms = 0;
    if (w == NULL || tick_ns == 0 || timeout_ms == NULL)
        return ROTA_EINVAL;
    uint64_t next = rota_wheel_next_deadline(w);
    if (next == ROTA_NEVER) {
        *timeout_ms = -1;
        return 0;
    }
    if (next <= now)
        return 0;
    uint64_t ticks = next - now;
    /* ceil(ticks * tick_ns / 1e6) without overflow: beyond INT_MAX ms is
     * clamped anyway. */
    if (ticks > (uint64_t)INT_MAX * 1000000u / tick_ns + 1) {
        *timeout_ms = INT_MAX;
        return 0;
    }
    uint64_t ns = ticks * tick_ns;
    uint64_t ms = ns / 1000000u + (ns % 1000000u != 0);
    *timeout_ms = ms > INT_MAX ? INT_MAX : (int)ms;
    return 0;
}

uint64_t rota_wheel_now(const struct rota_wheel *w)
{
    if (w == NULL)
        return 0;
    if (w->time_fn_ != NULL) {
        /* The present, when the wheel's time lags it (rota.h: why). */
        uint64_t present = w->time_fn_(w->time_arg_);
        if (present > w->now_)
            return present > ROTA_MAX_DEADLINE ? ROTA_MAX_DEADLINE : present;
    }
    return w->now_;
}

int rota_wheel_set_time_source(struct rota_wheel *w, rota_time_fn *fn,
                               void *arg)
{
    if (w == NULL)
        return ROTA_EINVAL;
    w->time_fn_ = fn;
    w->time_arg_ = fn == NULL ? NULL : arg;
    return 0;
}

size_t rota_wheel_count(const struct rota_wheel *w)
{
    return w == NULL ? 0 : (size_t)pending_count(w);
}

void rota_wheel_stats(const struct rota_wheel *w, struct rota_stats *out)
{
    if (w == NULL || out == NULL)
        return;
    *out = w->stats_;
    out->fired = fires_total(w);
    out->pending = pending_count(w);
}

void rota_wheel_lateness(const struct rota_wheel *w, struct rota_lateness *out)
{
    if (w == NULL || out == NULL)
        return;
    for (unsigned k = 0; k < ROTA_LATE_BUCKETS; k++)
        out->count[k] = w->late_[k];
    out->count[w->late_run_] += fires_total(w); /* the open run */
}

static int drain_call(struct rota_wheel *w,
                      void (*fn)(struct rota_timer *timer, void *arg),
                      void *arg)
{
    struct rota_link batch;

    if (w == NULL || fn == NULL)
        return ROTA_EINVAL;
    if (w->in_pass_)
        return ROTA_EBUSY;
    /* Gather everything first, so that timers fn arms stay armed and a
     * timer fn cancels leaves the batch like any other list. */
    list_init(&batch);
    list_move_all(&batch, &w->due_.link_);
    list_move_all(&batch, &w->deferred_);
    list_move_all(&batch, &w->cascade_);
    cascade_close(w);
    unsigned slot;
    while (first_occupied(w, &slot)) {
        mark_empty(w, slot);
        list_move_all(&batch, &w->slot_[slot]);
    }
    /* fn may cancel timers of the batch, never add to it. */
    for (uint64_t steps = trusted_pending(w); !list_empty(&batch); steps--) {
        if (steps == 0)
            rota__wheel_corrupt(w, NULL); /* more timers than pending */
        struct rota_timer *t = timer_of(batch.next);
        list_unlink(&t->link_);
        set_idle(t);
        w->stats_.drained++;
        fn(t, arg);
    }
    w->earliest_ = 0;
    set_arm_min(w);
    return 0;
}

int rota_wheel_drain(struct rota_wheel *w,
                     void (*fn)(struct rota_timer *timer, void *arg), void *arg)
{
    DEBUG_PASS(w, drain_call(w, fn, arg));
}

/* ------------------------------------------------------- public: timers */

/* The callback of a timer given none (rota_timer_init() and
 * rota_periodic_init() take NULL): a fire calls every timer's callback
 * without a test. */
static void fire_nothing(struct rota_wheel *w, struct rota_timer *t,
                         uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
}

void rota_timer_init(struct rota_timer *t, rota_timer_fn *fn)
{
    if (t == NULL)
        return;
    if (fn == NULL)
        fn = fire_nothing;
#ifdef ROTA_DEBUG
    if (debug_init_of_pending(t))
        return;
    if (!debug_fn_sealable(fn)) {
        rota__debug_report(MISUSE_HIGH_CALLBACK, t);
        return;
    }
#endif
    *t = (struct rota_timer){.fn_ = fn};
    set_idle(t);
}

void rota_periodic_init(struct rota_periodic *p, rota_timer_fn *fn)
{
    if (p == NULL)
        return;
    rota_timer_init(&p->timer, rota__periodic_fire);
    if (timer_fn(&p->timer) != rota__periodic_fire)
        return; /* a debug build refused: p->timer is left as it was */
    p->sched_ = rota__sched(0, ROTA_MISSED_SKIP);
    p->fn_ = fn != NULL ? fn : fire_nothing;
}

/* Where a periodic timer's callback goes: the wheel calls the caller's own
 * directly (take_due()); this is for a caller that runs fn_ itself. */
void rota__periodic_fire(struct rota_wheel *w, struct rota_timer *t,
                         uint64_t late)
{
    rota_timer_fn *fn = periodic_of(t)->fn_;
    if (fn != NULL)
        fn(w, t, late);
}

/* Saturate at the largest deadline and clamp to the wheel's now. */
static uint64_t clamp_deadline(const struct rota_wheel *w, uint64_t deadline)
{
    if (deadline > ROTA_MAX_DEADLINE)
        deadline = ROTA_MAX_DEADLINE;
    return deadline < w->now_ ? w->now_ : deadline;
}

/* (Re-)arm a checked timer at a clamped deadline. */
static void arm_at(struct rota_wheel *w, struct rota_timer *t,
                   uint64_t deadline)
{
    if (timer_pending(t)) {
        unfile_timer(w, t);
        note_gone_deadline(w, t->deadline_);
        w->rearmed_++;
    }
    w->stats_.armed++;
    t->deadline_ = deadline;
    if (w->in_pass_ && deadline <= w->now_) {
        /* Forgotten, not lowered: a pass keeps no earliest deadline that
         * is due (begin_pass()). */
        w->earliest_ = 0;
        list_append(&w->deferred_, &t->link_);
    } else {
        note_new_deadline(w, deadline);
        file_timer(w, t);
    }
    set_pending(t);
    set_arm_min(w); /* lower again, if the earliest went down */
}

int rota__arm_finish(struct rota_wheel *w, struct rota_timer *t,
                     uint64_t deadline, struct rota_link *head)
{
    if (head == NULL)
        return rota_timer_arm_at_noinline(w, t, deadline);
    /* The inline arm filed t alone into this slot; the slot starts at or
     * above arm_min_, hence at or above next_step_ (arm_min_for()), or,
     * in a callback, above cur_, where a pass keeps next_step_: the
     * bound stays.  deadline >= arm_min_ >= earliest_: the earliest
     * stays. */
    size_t slot = (size_t)(head - w->slot_);
    assert(head->next == &t->link_ && head->prev == &t->link_ &&
           slot_start_of(slot, deadline) >= w->next_step_);
    slot_occupy(w, slot);
    set_pending(t);
    return 0;
}

/* Every case rota_timer_arm_at() does not file inline: a pending timer, a
 * deadline at or before now or inside a half-cascaded slot, bad input. */
int rota_timer_arm_at_noinline(struct rota_wheel *w, struct rota_timer *t,
                               uint64_t deadline)
{
    int rc = check_timer(w, t);
    if (rc != 0)
        return rc;
    arm_at(w, t, clamp_deadline(w, deadline));
    return 0;
}

int rota_periodic_arm_at(struct rota_wheel *w, struct rota_periodic *p,
                         uint64_t first_deadline, uint64_t period,
                         enum rota_missed missed)
{
    if (p == NULL)
        return ROTA_EINVAL;
    int rc = check_timer(w, &p->timer);
    if (rc != 0)
        return rc;
    if (period == 0 || period > ROTA_MAX_PERIOD ||
        (unsigned)missed > ROTA_MISSED_DELAY ||
        timer_fn(&p->timer) != rota__periodic_fire)
        return ROTA_EINVAL;
    p->sched_ = rota__sched(period, missed);
    arm_at(w, &p->timer, clamp_deadline(w, first_deadline));
    return 0;
}

/*
 * The instant of [lo, hi] (lo <= hi) with the most trailing zero bits: take
 * the highest bit in which lo - 1 and hi differ; hi with every bit below it
 * cleared is the one multiple of that power of two in the window (two
 * multiples would put a multiple of the next power between them).
 */
static uint64_t coarsest_in(uint64_t lo, uint64_t hi)
{
    if (lo == 0) /* 0 itself has every trailing bit clear */
        return 0;
    uint64_t differ = (lo - 1) ^ hi; /* != 0: lo - 1 < hi */
    unsigned bit = 63u - (unsigned)__builtin_clzll(differ);
    return hi & ~(((uint64_t)1 << bit) - 1);
}

/* Check a window and clamp it as a deadline is clamped. */
static int clamp_window(const struct rota_wheel *w, uint64_t *earliest,
                        uint64_t *latest)
{
    if (*earliest > *latest)
        return ROTA_EINVAL;
    *earliest = clamp_deadline(w, *earliest);
    *latest = clamp_deadline(w, *latest);
    return 0;
}

int rota_timer_arm_range_at(struct rota_wheel *w, struct rota_timer *t,
                            uint64_t earliest, uint64_t latest)
{
    int rc = check_timer(w, t);
    if (rc != 0)
        return rc;
    if ((rc = clamp_window(w, &earliest, &latest)) != 0)
        return rc;
    arm_at(w, t, coarsest_in(earliest, latest));
    return 0;
}

int rota_timer_touch_range_at_noinline(struct rota_wheel *w,
                                       struct rota_timer *t, uint64_t earliest,
                                       uint64_t latest)
{
    int rc = check_timer(w, t);
    if (rc != 0)
        return rc;
    if ((rc = clamp_window(w, &earliest, &latest)) != 0)
        return rc;
    if (!timer_pending(t))
        return ROTA_ENOENT;
    if (t->deadline_ >= earliest && t->deadline_ <= latest)
        return 0;
    return rota_timer_touch_at_noinline(w, t, coarsest_in(earliest, latest));
}

int rota_timer_touch_at_noinline(struct rota_wheel *w, struct rota_timer *t,
                                 uint64_t deadline)
{
    int rc = check_timer(w, t);
    if (rc != 0)
        return rc;
    if (!timer_pending(t))
        return ROTA_ENOENT;
    deadline = clamp_deadline(w, deadline);
    uint64_t old = t->deadline_;
    if (deadline < old) {
        arm_at(w, t, deadline);
        return 0;
    }
    /* The hot path: a store.  The timer is filed again when its slot or the
     * due list reaches it. */
    if (deadline != old) {
        t->deadline_ = deadline;
        w->stats_.touched++;
        note_gone_deadline(w, old);
    }
    return 0;
}

int rota_timer_cancel_noinline(struct rota_wheel *w, struct rota_timer *t)
{
    int rc = check_timer(w, t);
    if (rc != 0)
        return rc;
    if (!timer_pending(t))
        return 0;
    unfile_timer(w, t);
    note_gone_deadline(w, t->deadline_);
    set_idle(t);
    w->stats_.cancelled++;
    return 1;
}

int rota_timer_relocate(struct rota_wheel *w, struct rota_timer *from,
                        struct rota_timer *to)
{
    int rc = check_timer(w, from);
    if (rc != 0)
        return rc;
    if (to == NULL)
        return ROTA_EINVAL;
    *to = *from;
    if (timer_fn(from) == rota__periodic_fire) { /* its schedule too */
        struct rota_periodic *pf = periodic_of(from), *pt = periodic_of(to);
        pt->sched_ = pf->sched_;
        pt->fn_ = pf->fn_;
    }
    if (timer_pending(to)) {
        /* Every list is circular with a head, so both neighbours exist
         * (they are the same head when the timer is alone in its list). */
        to->link_.prev->next = &to->link_;
        to->link_.next->prev = &to->link_;
    }
#ifdef ROTA_DEBUG
    debug_seal(to);
#endif
    /* Plain memory again: neither idle nor pending. */
    from->link_.prev = NULL;
    from->link_.next = NULL;
#ifdef ROTA_DEBUG
    /* And a seal that fails: its memory, freed, may have its links
     * overwritten by an allocator's free list with words that look like a
     * pending timer's, and the seal does not cover the links. */
    debug_seal_store(from, (uint16_t)~debug_seal_of(from));
#endif
    return 0;
}

bool rota_timer_pending(const struct rota_timer *t)
{
#ifdef ROTA_DEBUG
    if (t != NULL && !debug_sealed(t))
        return false; /* not a timer the library left here */
#endif
    return t != NULL && timer_pending(t);
}

uint64_t rota_timer_deadline(const struct rota_timer *t)
{
    return t == NULL ? 0 : t->deadline_;
}
