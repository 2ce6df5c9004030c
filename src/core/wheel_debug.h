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
 * THE ROUTE
 *   A debug build's wheels set arm_min_ to UINT64_MAX and
 *   pending_above_ to UINTPTR_MAX, so rota.h's inline arm, cancel and touch
 *   never take a timer of theirs: in a program linked with a debug build
 *   they always hand the call to the library, whether or not the program
 *   was compiled with ROTA_DEBUG.  No check is skipped by code inlined in
 *   the caller, and the caller needs no rebuild.  The library itself drops
 *   ROTA__INLINE_PATHS.
 *
 * THE SEAL
 *   16 bits that hash what only the library writes: the timer's address (a
 *   copy elsewhere fails), its callback, its state (idle or pending), and
 *   while it is idle its deadline (a pool's free-list pointer written over
 *   an idle timer fails; a copy less than 256 KiB away always fails, see
 *   debug_seal_of()), and its next link must be NULL (a free-list pointer
 *   in an idle timer's first word fails).  On a 64-bit target it lives in the top 16 bits of
 *   fn_, which user-space code addresses leave 0 (rota_timer_init()
 *   refuses a callback above 2^48 in a debug build); on a 32-bit one, in
 *   seal_.  So a debug build's timer is the size of a normal one.  Left
 *   out: a pending timer's deadline, which rota_timer_touch_at_unchecked()
 *   writes without a call, and the links, which a neighbour's unlink
 *   writes.  The library renews the seal wherever it changes a sealed
 *   field (set_idle(), set_pending(), relocate) and checks it on every
 *   call and on every timer it walks.  Rejected: a registry of live
 *   timers, as libevent's debug mode keeps in a hash table.  The core
 *   never allocates, and a registry cannot see memory overwritten in
 *   place, which a seal does.
 *
 * THE WHEEL
 *   A timer records no wheel.  Which wheel a pending timer is on is found
 *   by walking its list forward to the list's head, which lies inside its
 *   wheel: a call given another wheel returns ROTA_EOTHERWHEEL.  Bounded:
 *   a timer further than DEBUG_WHEEL_BOUND timers from both ends of its
 *   list is given the benefit of the doubt, so that a check costs a few
 *   dozen steps even in a list of a million.
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

/* Included after rota.h and by wheel_internal.h after its timer states
 * (not from here: the single-file rota.c inlines this file, and holds
 * rota.h's text only once). */

/* Hand a misuse to the handler (rota_debug_set_handler()); returns when the
 * handler does.  Debug builds only. */
void rota__debug_report(const char *misuse, const struct rota_timer *timer);
/* The same for a misuse of a wheel: the handler is given the wheel's
 * address (rota.h, rota_misuse_fn). */
void rota__debug_report_wheel(const char *misuse,
                              const struct rota_wheel *wheel);
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

/* Whether `size` bytes at `p` can be read, asked without reading them
 * (error.c); true where that cannot be told. */
bool rota__debug_readable(const void *p, size_t size);

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
#define MISUSE_HIGH_CALLBACK                                                   \
    "callback address above 2^48: a debug build cannot seal this timer"
#define MISUSE_THREADS                                                         \
    "wheel used from two threads at once: a wheel and its timers belong to "   \
    "one thread at a time"
#define MISUSE_WHEEL_REINIT                                                    \
    "rota_wheel_init() of a wheel with pending timers: drain it first, or "    \
    "it was copied"
#define MISUSE_WHEEL_COPIED                                                    \
    "wheel moved or copied after rota_wheel_init() (or never initialised): "   \
    "use it at the address it was initialised at"

static inline bool timer_idle(const struct rota_timer *t)
{
    return t->link_.prev == ROTA__IDLE;
}

/* ------------------------------------------------ where the seal lives */

_Static_assert(sizeof(rota_timer_fn *) == sizeof(uintptr_t),
               "a callback pointer is a uintptr_t wide");

static inline uintptr_t debug_fn_bits(const struct rota_timer *t)
{
    uintptr_t bits;
    memcpy(&bits, &t->fn_, sizeof bits);
    return bits;
}

#if UINTPTR_MAX > 0xffffffffu
#define DEBUG_FN_MASK ((UINT64_C(1) << 48) - 1)

/* The callback, without the seal. */
static inline rota_timer_fn *debug_fn(const struct rota_timer *t)
{
    uintptr_t bits = debug_fn_bits(t) & DEBUG_FN_MASK;
    rota_timer_fn *fn;
    memcpy(&fn, &bits, sizeof fn);
    return fn;
}

static inline uint16_t debug_seal_stored(const struct rota_timer *t)
{
    return (uint16_t)(debug_fn_bits(t) >> 48);
}

static inline void debug_seal_store(struct rota_timer *t, uint16_t seal)
{
    uintptr_t bits = (debug_fn_bits(t) & DEBUG_FN_MASK) | (uintptr_t)seal << 48;
    memcpy(&t->fn_, &bits, sizeof bits);
}

/* Whether a callback leaves the seal's bits free. */
static inline bool debug_fn_sealable(rota_timer_fn *fn)
{
    uintptr_t bits;
    memcpy(&bits, &fn, sizeof bits);
    return (bits & ~DEBUG_FN_MASK) == 0;
}
#else
static inline rota_timer_fn *debug_fn(const struct rota_timer *t)
{
    return t->fn_;
}

static inline uint16_t debug_seal_stored(const struct rota_timer *t)
{
    return (uint16_t)t->seal_;
}

static inline void debug_seal_store(struct rota_timer *t, uint16_t seal)
{
    t->seal_ = seal;
}

static inline bool debug_fn_sealable(rota_timer_fn *fn)
{
    (void)fn;
    return true;
}
#endif

/* ------------------------------------------------------------ the seal */

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
    rota_timer_fn *fn = debug_fn(t);
    uint64_t fn_bits = 0, h;

    memcpy(&fn_bits, &fn, sizeof fn);
    /* The address enters twice: its high bits through the hash, its low
     * ones (4-byte steps: a timer is at least 4-aligned) as they are, so
     * a copy less than 256 KiB away always fails, not 1 - 2^-16 of the
     * time. */
    uintptr_t at = (uintptr_t)t;
    h = debug_mix((uint64_t)(at >> 18) ^ fn_bits);
    h = debug_mix(h ^ (timer_idle(t) ? 0x1d1eu : 0x9e4du));
    if (timer_idle(t))
        h = debug_mix(h ^ t->deadline_);
    return (uint16_t)((uint16_t)(h >> 48) ^ (uint16_t)(at >> 2));
}

/* After the library wrote a sealed field. */
static inline void debug_seal(struct rota_timer *t)
{
    debug_seal_store(t, debug_seal_of(t));
}

/* The timer the library last left at this address. */
static inline bool debug_sealed(const struct rota_timer *t)
{
    /* An idle timer's next link is NULL: a pool's free-list pointer in
     * the first word of an idle timer is caught here. */
    return timer_initialised(t) && (!timer_idle(t) || t->link_.next == NULL) &&
           debug_seal_stored(t) == debug_seal_of(t);
}

/* ----------------------------------------------------------- the links */

/* Whether a link may be followed: a pending timer's links are addresses
 * of links, so they are aligned and, on a 64-bit target, in the 48-bit
 * range user space has.  Garbage in memory never initialised mostly is
 * not.  What still passes is followed: by rota_timer_init()'s walk only
 * after the kernel says it can be read (debug_head_of()); by the checks of
 * the other calls as it is, since the timer a caller passes there is one
 * it initialised, and its links are the library's. */
static inline bool debug_plausible(const struct rota_link *link)
{
    uintptr_t at = (uintptr_t)link;
    if (at < 4096 || at % _Alignof(struct rota_link) != 0)
        return false;
#if UINTPTR_MAX > 0xffffffffu
    if (at >> 48 != 0)
        return false;
#endif
    return true;
}

/* Both neighbours of `link` point back to it. */
static inline bool debug_linked(const struct rota_link *link)
{
    return debug_plausible(link->next) && debug_plausible(link->prev) &&
           link->next->prev == link && link->prev->next == link;
}

static inline const struct rota_timer *debug_timer_of(const struct rota_link *l)
{
    return rota_container_of(l, const struct rota_timer, link_);
}

/* A sealed pending timer at `link`. */
static inline bool debug_sealed_pending(const struct rota_link *link)
{
    const struct rota_timer *t = debug_timer_of(link);
    return debug_sealed(t) && timer_pending(t);
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
    if (!debug_plausible(next) || !debug_plausible(prev)) {
        *who = debug_timer_of(link); /* its own links are garbage */
        return;
    }
    if (next->prev != link) {
        *who = debug_timer_of(next);
        if (!debug_sealed_pending(next))
            return;
    }
    if (prev->next != link) {
        *who = debug_timer_of(prev);
        if (!debug_sealed_pending(prev))
            return;
    }
    *misuse = MISUSE_NEIGHBOUR;
    *who = debug_timer_of(link);
}

/* A timer met on one of the wheel's lists, before it is used. */
static inline void debug_walked(const struct rota_link *link)
{
    const struct rota_timer *t = debug_timer_of(link);
    if (!debug_sealed_pending(link))
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

/* ----------------------------------------------------------- the wheel */

/* How far a call's check looks for its timer's wheel (each way: the
 * timers a call touches most are near their list's ends), and how far
 * rota_timer_init() looks for a live list. */
#define DEBUG_WHEEL_BOUND 32
#define DEBUG_WALK_BOUND 1024
#define DEBUG_WHEELS 4096

/* Every wheel a debug build initialised, at a place its address picks
 * (newest wins; no allocation). */
extern _Atomic(uintptr_t) rota__debug_wheels[DEBUG_WHEELS];

static inline size_t debug_wheel_index(const struct rota_wheel *w)
{
    return (size_t)(debug_mix((uint64_t)(uintptr_t)w) % DEBUG_WHEELS);
}

static inline void debug_wheel_born(const struct rota_wheel *w)
{
    atomic_store_explicit(&rota__debug_wheels[debug_wheel_index(w)],
                          (uintptr_t)w, memory_order_relaxed);
}

static inline bool debug_inside(const struct rota_wheel *w,
                                const struct rota_link *link)
{
    return (uintptr_t)link - (uintptr_t)w < sizeof *w;
}

/* Whether a pending timer's list, followed within `bound` sealed pending
 * timers either way, ends at one of w's list heads that does not lead back:
 * the list of a wheel initialised again (or copied) while it was pending. */
static inline bool debug_orphaned(const struct rota_wheel *w,
                                  const struct rota_timer *t, unsigned bound)
{
    for (int back = 0; back < 2; back++) {
        const struct rota_link *at = &t->link_;
        for (unsigned step = 0; step < bound; step++) {
            const struct rota_link *n = back ? at->prev : at->next;
            if (!debug_plausible(n))
                break;
            if (!debug_sealed_pending(n)) {
                if (debug_inside(w, n) && (back ? n->next : n->prev) != at)
                    return true;
                break;
            }
            at = n;
        }
    }
    return false;
}

/* Whether the walk from memory of unknown origin may read the timer (or
 * list head) that `link` points to: asked of the kernel before the read,
 * so that garbage which passes debug_plausible() ends the walk instead of
 * faulting. */
static inline bool debug_readable_at(const struct rota_link *link)
{
    return debug_plausible(link) &&
           rota__debug_readable(debug_timer_of(link),
                                sizeof(struct rota_timer));
}

/* The head of a pending timer's list, found within `bound` sealed pending
 * timers of it going forward, then going back; NULL when it is further,
 * or a link on the way does not point back.  With `probe`, each link is
 * tried before it is followed: the walk of rota_timer_init(), whose timer
 * may be fresh memory whose leftover bytes pass the seal by chance (1 in
 * 2^16), and whose links are then garbage. */
static inline const struct rota_link *debug_head_of(const struct rota_timer *t,
                                                    unsigned bound, bool probe)
{
    for (int back = 0; back < 2; back++) {
        const struct rota_link *at = &t->link_;
        for (unsigned step = 0; step < bound; step++) {
            if (probe &&
                !(debug_readable_at(at->next) && debug_readable_at(at->prev)))
                return NULL;
            if (!debug_linked(at))
                return NULL;
            const struct rota_link *n = back ? at->prev : at->next;
            if (!debug_sealed_pending(n))
                return n; /* no timer: a head */
            at = n;
        }
    }
    return NULL;
}

/*
 * Whether a sealed timer that says it is pending is in a live list of a
 * wheel.  A pending timer's memory can outlive its wheel: a wheel may be
 * dropped with timers pending when their memory goes with it (rota/keyed.h
 * does), and that memory, handed out again, still looks pending and linked
 * to stale neighbours, which may in turn be anything.  So the timer counts
 * as linked only if its list leads to a head inside a wheel that a debug
 * build initialised and that is still there at that address.  What it
 * cannot tell from a live wheel is a dropped one whose memory is still
 * intact; rota.h asks for a drain before a wheel with pending timers is
 * dropped, and a debug build takes that at its word.
 */
static inline bool debug_in_live_list(const struct rota_timer *t)
{
    const struct rota_link *head = debug_head_of(t, DEBUG_WALK_BOUND, true);
    if (head == NULL)
        return false;
    for (size_t i = 0; i < DEBUG_WHEELS; i++) {
        uintptr_t base =
            atomic_load_explicit(&rota__debug_wheels[i], memory_order_relaxed);
        const struct rota_wheel *w = (const struct rota_wheel *)base;
        if (w != NULL && debug_inside(w, head))
            return w->pending_above_ == PENDING_ABOVE &&
                   w->arm_min_ == UINT64_MAX;
    }
    return false;
}

/* ---------------------------------------------- the wheel's own misuses */

/*
 * THE WHEEL'S RULES (rota.h): no copy, no rota_wheel_init() with timers
 * pending, one thread at a time.
 *   - A copy: an initialised wheel's due list head is its own (empty, it
 *     points to itself; not, its first timer points back to it).  A copy's
 *     points into the original, whatever the original holds.  Checked at
 *     every call given a wheel (passes, and every timer call, which all
 *     reach the library in a debug build).
 *   - rota_wheel_init() of a wheel with pending timers: memory that this
 *     build initialised as a wheel at this address (the registry), whose
 *     deferred list head is still its own and whose counters say timers
 *     are pending.  Read without following any link: a wheel dropped with
 *     its timers' memory (rota/keyed.h does, after a drain in a debug
 *     build) has nothing left to follow.
 *   - Two threads: a pass (advance, expire, drain, next_deadline,
 *     foreach) marks its wheel's registry entry with a token of its thread
 *     (the address of a thread-local byte) while it runs; a pass that finds
 *     another thread's token, and a timer call made while another thread's
 *     pass runs, are reported.  Overlap is what corrupts a wheel, and what
 *     is seen: a wheel handed from one thread to another (with a lock or a
 *     queue between) is never reported.  Two threads arming at once with
 *     no pass running are not seen.
 */
extern _Atomic(uintptr_t) rota__debug_busy[DEBUG_WHEELS];
extern _Thread_local char rota__debug_thread;

static inline uintptr_t debug_me(void)
{
    return (uintptr_t)&rota__debug_thread;
}

/* Whether this build initialised a wheel at `w` (and none has taken its
 * registry entry since). */
static inline bool debug_registered(const struct rota_wheel *w)
{
    return atomic_load_explicit(&rota__debug_wheels[debug_wheel_index(w)],
                                memory_order_relaxed) == (uintptr_t)w;
}

/* A wheel used where it was not initialised: 0, or ROTA_ECORRUPT after the
 * report. */
static inline int debug_check_wheel(const struct rota_wheel *w)
{
    const struct rota_link *first = w->due_.link_.next;
    if (debug_plausible(first) && first->prev == &w->due_.link_)
        return 0;
    rota__debug_report_wheel(MISUSE_WHEEL_COPIED, w);
    return ROTA_ECORRUPT;
}

/* Another thread's pass runs on `w`: ROTA_EBUSY after the report, or 0. */
static inline int debug_check_thread(const struct rota_wheel *w)
{
    uintptr_t busy = atomic_load_explicit(
        &rota__debug_busy[debug_wheel_index(w)], memory_order_acquire);
    if (busy == 0 || busy == debug_me() || !debug_registered(w))
        return 0;
    rota__debug_report_wheel(MISUSE_THREADS, w);
    return ROTA_EBUSY;
}

/* A pass begins: 0 and *entered (whether this call marked the wheel, to
 * unmark it in debug_pass_end()), or the error to return after a report. */
static inline int debug_pass_begin(const struct rota_wheel *w, bool *entered)
{
    *entered = false;
    int rc = debug_check_wheel(w);
    if (rc != 0 || !debug_registered(w))
        return rc;
    uintptr_t expected = 0;
    if (atomic_compare_exchange_strong_explicit(
            &rota__debug_busy[debug_wheel_index(w)], &expected, debug_me(),
            memory_order_acq_rel, memory_order_acquire)) {
        *entered = true;
        return 0;
    }
    if (expected == debug_me())
        return 0; /* a pass of this thread's, from a callback or visitor */
    rota__debug_report_wheel(MISUSE_THREADS, w);
    return ROTA_EBUSY;
}

static inline void debug_pass_end(const struct rota_wheel *w, bool entered)
{
    if (entered)
        atomic_store_explicit(&rota__debug_busy[debug_wheel_index(w)], 0,
                              memory_order_release);
}

/* check_timer()'s part in a debug build, once the memory looks
 * initialised: 0, or the error the call returns (after the report, for a
 * misuse). */
static inline int debug_check_timer(const struct rota_wheel *w,
                                    const struct rota_timer *t)
{
    int rc = debug_check_wheel(w);
    if (rc == 0)
        rc = debug_check_thread(w);
    if (rc != 0)
        return rc;
    if (!debug_sealed(t)) {
        /* A pending timer whose list does not lead here: a copy. */
        bool copy = timer_pending(t) && debug_plausible(t->link_.prev) &&
                    t->link_.prev->next != &t->link_;
        rota__debug_report(copy ? MISUSE_MOVED : MISUSE_OVERWRITTEN, t);
        return ROTA_EUNINIT;
    }
    if (!timer_pending(t))
        return 0;
    if (!debug_linked(&t->link_)) {
        const struct rota_link *prev = t->link_.prev, *next = t->link_.next;
        /* A neighbour that is one of this wheel's list heads and does not
         * lead back: the wheel was initialised again (or is a copy) while
         * the timer was pending.  Reported here, when such a timer is
         * used, not at rota_wheel_init(): a wheel abandoned with its
         * timers, their memory gone too, may be initialised again. */
        if ((debug_inside(w, prev) && prev->next != &t->link_) ||
            (debug_inside(w, next) && next->prev != &t->link_)) {
            rota__debug_report_wheel(MISUSE_WHEEL_REINIT, w);
            return ROTA_ECORRUPT;
        }
        const char *misuse;
        const struct rota_timer *who;
        debug_blame(&t->link_, &misuse, &who);
        rota__debug_report(misuse, who);
        return ROTA_ECORRUPT;
    }
    const struct rota_link *head = debug_head_of(t, DEBUG_WHEEL_BOUND, false);
    if (head != NULL && !debug_inside(w, head))
        return ROTA_EOTHERWHEEL;
    if (head == NULL && debug_orphaned(w, t, DEBUG_WHEEL_BOUND)) {
        rota__debug_report_wheel(MISUSE_WHEEL_REINIT, w);
        return ROTA_ECORRUPT;
    }
    return 0;
}

/* rota_timer_init() of a timer a wheel still links: true after the report
 * (the call then does nothing).  Fresh memory that happens to look pending
 * fails the seal but for 1 time in 2^16; then its links are garbage, and
 * the walk tries each before it follows it.  A copy fails the seal too,
 * and may be initialised. */
static inline bool debug_init_of_pending(const struct rota_timer *t)
{
    DEBUG_READ_FRESH(t, sizeof *t);
    if (!debug_sealed(t) || !timer_pending(t) || !debug_in_live_list(t))
        return false;
    rota__debug_report(MISUSE_INIT_PENDING, t);
    return true;
}
#endif /* ROTA_DEBUG */

#endif /* ROTA_WHEEL_DEBUG_H */
