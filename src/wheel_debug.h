/* SPDX-License-Identifier: MIT */
/*
 * wheel_debug.h - the checks of a debug build (ROTA_DEBUG), for wheel.c
 * and wheel_check.c.
 *
 * rota.h (DEBUG BUILDS) says what a debug build catches and how it reports
 * it; this says how it finds it.  Nothing here exists in a normal build but
 * the two report functions' declarations (error.c defines them in a debug
 * build only), so a normal build's code is what it would be without this
 * file.
 *
 * THE MARKER
 *   A debug build's timers carry ROTA__TIMER_MAGIC_DEBUG.  rota.h's inline
 *   arm, cancel and touch accept only the normal marker, so in a program
 *   linked with a debug build they always hand the call to the library,
 *   whether or not the program was compiled with ROTA_DEBUG: no check is
 *   skipped by code inlined in the caller, and the caller needs no
 *   rebuild.  The library itself drops ROTA__INLINE_PATHS (which write the
 *   normal marker) and writes a timer's fields one at a time.
 *
 * THE SEAL
 *   16 bits in spare_ (always 0 in a normal build; the inline paths never
 *   read it) hash what only the library writes: the timer's address (a
 *   copy elsewhere fails), its callback, period and tags, and while it is
 *   idle its deadline (a pool's free-list pointer written over an idle
 *   timer's first word fails; a copy less than 256 KiB away always
 *   fails, see debug_seal_of()).  Left out: a pending timer's deadline,
 *   which rota_timer_touch_at_unchecked() writes without a call, and the
 *   links, which a neighbour's unlink writes.  The library renews the
 *   seal wherever it writes those fields (write_head(), set_idle(),
 *   relocate) and checks it on every call and on every timer it walks.
 *   Rejected: a registry of live timers, as libevent's debug mode keeps
 *   in a hash table.  The core never allocates, and a registry cannot see
 *   memory overwritten in place, which a seal does.
 *
 * THE LINKS
 *   A link is checked against its neighbour's back link before the wheel
 *   follows or writes it, and a timer met on a list is checked (marker,
 *   seal, pending) before any other field of it is read: a freed or
 *   overwritten timer is named before its garbage is used.  preload()
 *   reads ahead along links nobody has checked, so it is off.
 */
#ifndef ROTA_WHEEL_DEBUG_H
#define ROTA_WHEEL_DEBUG_H

/* Included after rota.h (not from here: the single-file rota.c inlines
 * this file, and holds rota.h's text only once). */

/* Hand a misuse to the handler (rota_debug_set_handler()); returns when the
 * handler does.  Debug builds only. */
void rota__debug_report(const char *misuse, const struct rota_timer *timer);
/* The same for a misuse found where the wheel cannot go on: never returns
 * (aborts after the handler, if the handler returns). */
_Noreturn void rota__debug_fatal(const char *misuse,
                                 const struct rota_timer *timer);

#ifdef ROTA_DEBUG
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#undef ROTA__INLINE_PATHS
#define TIMER_MAGIC ROTA__TIMER_MAGIC_DEBUG

/* rota_timer_init() must read memory that is usually fresh, to see whether
 * it holds a pending timer; valgrind reports decisions made on such
 * memory, so the check tells it that those reads are meant (the call then
 * writes every byte anyway).  The macro does nothing outside valgrind;
 * without its header, run valgrind on a normal build. */
#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define DEBUG_READ_FRESH(p, n) VALGRIND_MAKE_MEM_DEFINED((p), (n))
#endif
#endif
#ifndef DEBUG_READ_FRESH
#define DEBUG_READ_FRESH(p, n) ((void)0)
#endif

/* The names rota.h lists (DEBUG BUILDS). */
#define MISUSE_INIT_PENDING "rota_timer_init() of a pending timer"
#define MISUSE_OVERWRITTEN                                                     \
    "timer memory overwritten or reused without rota_timer_init()"
#define MISUSE_MOVED                                                           \
    "pending timer moved or copied without rota_timer_relocate()"
#define MISUSE_FREED                                                           \
    "pending timer freed or overwritten without rota_timer_cancel()"
#define MISUSE_NEIGHBOUR                                                       \
    "a neighbour of this pending timer was freed, moved or overwritten "       \
    "without rota_timer_cancel() or rota_timer_relocate()"

static inline uint64_t debug_mix(uint64_t x) /* splitmix64's finaliser */
{
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static inline uint16_t debug_seal_of(const struct rota_timer *t)
{
    rota_timer_fn *fn = t->fn_;
    uint64_t fn_bits = 0, h;

    _Static_assert(sizeof fn <= sizeof fn_bits, "a function pointer fits");
    memcpy(&fn_bits, &fn, sizeof fn);
    /* The address enters twice: its high bits through the hash, its low
     * ones (4-byte steps: a timer is at least 4-aligned) as they are, so
     * a copy less than 256 KiB away always fails, not 1 - 2^-16 of the
     * time. */
    uintptr_t at = (uintptr_t)t;
    h = debug_mix((uint64_t)(at >> 18) ^ fn_bits);
    h = debug_mix(h ^ t->period_);
    h = debug_mix(h ^ ((uint64_t)t->wheel_id_ << 16 |
                       (uint64_t)t->policy_ << 8 | t->magic_));
    if (t->wheel_id_ == 0)
        h = debug_mix(h ^ t->deadline_);
    return (uint16_t)((uint16_t)(h >> 48) ^ (uint16_t)(at >> 2));
}

/* After the library wrote a sealed field. */
static inline void debug_seal(struct rota_timer *t)
{
    t->spare_ = debug_seal_of(t);
}

/* The timer the library last left at this address. */
static inline bool debug_sealed(const struct rota_timer *t)
{
    return t->magic_ == TIMER_MAGIC && t->spare_ == debug_seal_of(t);
}

/* Both neighbours of `link` point back to it. */
static inline bool debug_linked(const struct rota_link *link)
{
    return link->next != NULL && link->prev != NULL &&
           link->next->prev == link && link->prev->next == link;
}

static inline const struct rota_timer *debug_timer_of(const struct rota_link *l)
{
    return rota_container_of(l, const struct rota_timer, link_);
}

/* A sealed timer whose neighbours do not both point back to it: blame a
 * neighbour that is no sealed pending timer (it was freed or overwritten:
 * name it, not its victim), else the timer itself.  (A neighbour that is
 * a list head fails the seal too, but a head is only blamed when its own
 * link is wrong, which is corruption of the wheel anyway.) */
static inline void debug_blame(const struct rota_link *link,
                               const char **misuse,
                               const struct rota_timer **who)
{
    const struct rota_link *next = link->next, *prev = link->prev;

    *misuse = MISUSE_FREED;
    if (next != NULL && next->prev != link) {
        *who = debug_timer_of(next);
        if (!debug_sealed(*who) || (*who)->wheel_id_ == 0)
            return;
    }
    if (prev != NULL && prev->next != link) {
        *who = debug_timer_of(prev);
        if (!debug_sealed(*who) || (*who)->wheel_id_ == 0)
            return;
    }
    *misuse = MISUSE_NEIGHBOUR;
    *who = debug_timer_of(link);
}

/* A timer met on one of the wheel's lists, before it is used. */
static inline void debug_walked(const struct rota_link *link)
{
    const struct rota_timer *t = debug_timer_of(link);
    if (!debug_sealed(t) || t->wheel_id_ == 0)
        rota__debug_fatal(MISUSE_FREED, t);
    if (!debug_linked(link)) {
        const char *misuse;
        debug_blame(link, &misuse, &t);
        rota__debug_fatal(misuse, t);
    }
}

/* A list about to be appended to or spliced: its first and last timers. */
static inline void debug_list_ends(const struct rota_link *head)
{
    if (head->next != head) {
        debug_walked(head->next);
        debug_walked(head->prev);
    }
}

/* check_timer()'s part, once the marker matched: 0, or the error the call
 * returns after the report. */
static inline int debug_check_timer(const struct rota_wheel *w,
                                    const struct rota_timer *t)
{
    if (t->spare_ != debug_seal_of(t)) {
        /* This wheel's pending timer, but its list does not lead here: a
         * copy.  (Links are followed only when the tags say so.) */
        bool copy = t->wheel_id_ == (uint32_t)w->pending_tags_ &&
                    t->link_.prev != NULL && t->link_.prev->next != &t->link_;
        rota__debug_report(copy ? MISUSE_MOVED : MISUSE_OVERWRITTEN, t);
        return ROTA_EUNINIT;
    }
    if (t->wheel_id_ == (uint32_t)w->pending_tags_ &&
        !debug_linked(&t->link_)) {
        const char *misuse;
        const struct rota_timer *who;
        debug_blame(&t->link_, &misuse, &who);
        rota__debug_report(misuse, who);
        return ROTA_ECORRUPT;
    }
    return 0;
}

/*
 * Whether a sealed timer that says it is pending is in a live list of its
 * wheel.  A pending timer's memory can outlive its wheel: a wheel may be
 * dropped with timers pending when their memory goes with it (rota/keyed.h
 * does), and that memory, handed out again, still looks pending and linked
 * to stale neighbours, which may in turn be anything.  So the wheel itself
 * is found, by its id: rota_wheel_init() notes each wheel's address under
 * its id (a table indexed by id, newest wins; no allocation), and the timer
 * counts as linked only if that wheel still has the id and the links from
 * the timer forward reach one of that wheel's list heads, each pointing
 * back.  Bounded: past DEBUG_WALK_BOUND timers, or a wheel whose entry a
 * newer wheel took, the timer is given the benefit of the doubt (no
 * report).  What it cannot tell from a live wheel is a dropped one whose
 * memory is still intact; rota.h asks for a drain before a wheel with
 * pending timers is dropped, and a debug build takes that at its word.
 */
#define DEBUG_WALK_BOUND 1024
#define DEBUG_WHEELS 4096

extern _Atomic(uintptr_t) rota__debug_wheels[DEBUG_WHEELS];

static inline void debug_wheel_born(const struct rota_wheel *w)
{
    atomic_store_explicit(
        &rota__debug_wheels[(uint32_t)w->pending_tags_ % DEBUG_WHEELS],
        (uintptr_t)w, memory_order_relaxed);
}

static inline bool debug_in_live_list(const struct rota_timer *t)
{
    uintptr_t base = atomic_load_explicit(
        &rota__debug_wheels[t->wheel_id_ % DEBUG_WHEELS], memory_order_relaxed);
    const struct rota_wheel *w = (const struct rota_wheel *)base;
    if (w == NULL || (uint32_t)w->pending_tags_ != t->wheel_id_)
        return false; /* its wheel is gone (or unknown) */
    const struct rota_link *at = &t->link_;
    for (unsigned step = 0; step < DEBUG_WALK_BOUND; step++) {
        if (!debug_linked(at))
            return false;
        uintptr_t next = (uintptr_t)at->next;
        if (next >= base && next < base + sizeof *w)
            return true; /* one of the wheel's heads, pointing back */
        const struct rota_timer *nt = debug_timer_of(at->next);
        if (!debug_sealed(nt) || nt->wheel_id_ != t->wheel_id_)
            return false;
        at = at->next;
    }
    return false;
}

/* rota_timer_init() of a timer a wheel still links: true after the report
 * (the call then does nothing).  Fresh memory that happens to carry the
 * marker fails the seal; a copy fails it too, and may be initialised. */
static inline bool debug_init_of_pending(const struct rota_timer *t)
{
    DEBUG_READ_FRESH(t, sizeof *t);
    if (!debug_sealed(t) || t->wheel_id_ == 0 || !debug_in_live_list(t))
        return false;
    rota__debug_report(MISUSE_INIT_PENDING, t);
    return true;
}
#endif /* ROTA_DEBUG */

#endif /* ROTA_WHEEL_DEBUG_H */
