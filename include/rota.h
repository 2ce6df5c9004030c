/* SPDX-License-Identifier: MIT */
/*
 * rota.h - the core timing wheel: the reference manual.
 *
 * rota keeps any number of timers in a hierarchical timing wheel.  Every
 * operation is O(1), the wheel never allocates, never reads a clock, never
 * sleeps and starts no thread: the caller owns the memory of every timer and
 * passes time in.
 *
 * TIME
 *   Time is a uint64_t count of ticks chosen by the caller (1 ms, 100 ms,
 *   whatever suits; rota/clock.h turns CLOCK_MONOTONIC into ticks).  The
 *   wheel remembers the latest `now` it was given.  A deadline is absolute;
 *   a delay is relative to the wheel's `now`.  Every deadline up to
 *   ROTA_MAX_DEADLINE (UINT64_MAX - 1) works; larger ones and sums that
 *   overflow saturate to it, so a delay never wraps into the past.  A
 *   deadline at or before the wheel's `now` is clamped to `now`: the timer is
 *   due at once and fires in the next advance() or expire().  If the caller
 *   passes an earlier `now` than before, the wheel keeps its own time, counts
 *   the event in rota_stats.clock_backwards and fires nothing.  A `now` above
 *   ROTA_MAX_DEADLINE is read as ROTA_MAX_DEADLINE (UINT64_MAX means "never").
 *
 * NAMES FOR TIME (one rule for every rota component)
 *   A function that is given a point in time for a timer says in its name
 *   which kind: `_at` takes absolute deadlines, `_in` a delay counted from
 *   the component's now.  Here: rota_timer_arm_at(), rota_timer_touch_at(),
 *   rota_timer_arm_range_at() and rota_timer_touch_range_at() (a window of
 *   two deadlines), rota_periodic_arm_at() (its first deadline), and
 *   rota_timer_arm_in() (from the wheel's `now`).  In
 *   rota/service.h arm, periodic arm and touch come in both kinds
 *   (rota_service_arm_at(), rota_service_arm_in(), ...; `_in` counts from
 *   the service clock's time when the call reads it), in rota/keyed.h set
 *   and move do (rota_keyed_set_in() counts from the map's now).  No arm,
 *   touch, set or move function takes a time without the suffix, so code
 *   written for another convention fails to build (an undeclared function,
 *   then an undefined symbol) instead of arming at the wrong time.
 *   Functions given the current time are named for what they do with it
 *   and take it as `now` (rota_wheel_init(), rota_wheel_advance(),
 *   rota_keyed_advance()); the adapters' *_deadline_in(delay) compute a
 *   deadline to pass to an `_at` function.  Periods are always relative
 *   (`period`).
 *
 * GUARANTEES
 *   - Never early: a timer fires only in an advance() or expire() call whose
 *     `now` is at or after its deadline.
 *   - Exact: it fires in the first such call (unless that call stopped at the
 *     limit the caller gave it; the next call resumes).  No timer is a
 *     rotation late and none loses precision to a level's granularity.
 *   - Order: one call fires its timers in deadline order; equal deadlines
 *     fire in the order they were armed.  (A timer pushed later by
 *     rota_timer_touch_at() is re-filed when its old slot comes due or reaches
 *     the head of the due list; among equal deadlines its place is not
 *     specified.)
 *   - No idle cost: advancing across any stretch with nothing due costs
 *     O(levels), whatever the number of ticks.
 *   - Each armed timer ends exactly once: it fires, is cancelled, or is
 *     handed to rota_wheel_drain().  A periodic timer is re-armed by the
 *     wheel after each fire until it is cancelled.
 *
 * OWNERSHIP
 *   struct rota_timer is embedded in the caller's own object; recover the
 *   object with rota_container_of().  While a timer is pending the wheel
 *   links it into its lists, so its memory must stay valid and must not be
 *   moved.  Once rota_timer_cancel() has returned, or its callback has
 *   started (one-shot timers), or rota_wheel_drain() has handed it back, the
 *   wheel holds no reference and the memory may be freed.  The wheel itself
 *   holds nothing that needs releasing: when it is no longer needed, drain it
 *   if timers are still pending, then drop it.
 *
 * CALLBACK CONTEXT
 *   Callbacks run inside rota_wheel_advance().  A callback may arm, re-arm,
 *   touch or cancel any timer of any wheel (itself included), free any timer
 *   it has cancelled and free its own container (a periodic timer must be
 *   cancelled first).  A timer armed during a pass with a deadline at or
 *   before that pass's `now` fires in the next call, never in the same pass,
 *   so a callback that re-arms itself with delay 0 cannot loop forever.
 *   Such a timer joins the wheel when the pass ends and counts as armed at
 *   that moment: if a limit stopped the pass early, it fires after the other
 *   timers of its tick (including periodic timers the pass rescheduled).
 *   Calling rota_wheel_advance(), rota_wheel_expire() or rota_wheel_drain()
 *   on the wheel that is running the callback returns ROTA_EBUSY.
 *
 * THREAD SAFETY
 *   None inside a wheel: a wheel and its timers belong to one thread at a
 *   time.  Different wheels are independent.  rota/service.h provides a
 *   thread-safe service built on this core.
 *
 * THE WHEEL'S RULES
 *   A wheel links its pending timers, and they link it back, by address.
 *   So:
 *   - One thread at a time: every call on a wheel or on its timers, from
 *     one thread, or from several with a lock or a queue between their
 *     calls (a hand-over).  Two threads in calls on one wheel at once
 *     corrupt its lists.
 *   - No copy: use a wheel at the address rota_wheel_init() was given.  A
 *     struct copy (assignment, memcpy, a struct returned by value) shares
 *     the original's lists and breaks both.  Nor is it moved.
 *   - No rota_wheel_init() while timers are pending: drain it first
 *     (rota_wheel_drain()).  Initialising it again orphans them: they still
 *     link the wheel's list heads, which no longer link them.
 *   - A pending timer's memory stays valid until the timer is cancelled,
 *     fires (one-shot) or is drained (OWNERSHIP): freeing its object
 *     without rota_timer_cancel() leaves the wheel linking whatever takes
 *     that memory next.
 *   What breaking them does: in every build, a walk of the wheel that
 *   meets a list corrupted so that it would never end (a list that loops,
 *   timers filed again ahead of the walk) is stopped within a bounded
 *   amount of work and reported: the misuse handler (rota_debug_set_handler())
 *   is given "the wheel's lists are corrupt: ..." (the message names the
 *   three misuses above) and the wheel's address, then the default message
 *   goes to stderr and the process abort()s.  No misuse makes a call loop
 *   for ever; one may still crash on a wild pointer, or lose or misfire
 *   timers, before a walk sees it.  A debug build (next) names each
 *   misuse where it happens.
 *
 * ERRORS
 *   Functions that can fail return 0 (or a documented non-negative value) on
 *   success and a negative ROTA_E* code on failure; rota_strerror() gives the
 *   message.  What every build reports: NULL pointers, a timer in zeroed
 *   memory that was never passed to rota_timer_init() (ROTA_EUNINIT: static
 *   and calloc()ed objects, `= {0}`), re-entering the wheel from its own
 *   callback, and, in the calls that are not inline, a copy of a pending
 *   timer (its list does not point to it: ROTA_EUNINIT).  A timer is 32
 *   bytes and records nothing but its links, deadline and callback, so the
 *   rest is the caller's word in a normal build, and a debug build (next)
 *   checks it: that a pending timer is pending on the wheel passed
 *   (ROTA_EOTHERWHEEL), memory never initialised that holds other bytes
 *   than zeroes (a normal build may take it for a pending timer and follow
 *   its bytes as links), a timer's memory reused or copied without
 *   rota_timer_init() (accepted with its old callback), and
 *   rota_timer_init() of a pending timer, or a pending timer freed or moved
 *   without rota_timer_cancel() or rota_timer_relocate() (which corrupt the
 *   wheel's lists).  Run your tests against a debug build.
 *
 * DEBUG BUILDS
 *   A library built with ROTA_DEBUG checks every timer it is given or finds
 *   in its lists, and reports each misuse by name, with the timer's
 *   address.  Every install has one beside librota: librota_debug (shared
 *   and static), linked with -lrota_debug, `pkg-config rota-debug` or the
 *   CMake target rota::rota_debug (rota::rota_debug_static), in place of
 *   librota; a program already built against librota.so runs on it with
 *   LD_PRELOAD=librota_debug.so.  (Also: cmake -DROTA_DEBUG=ON or `make
 *   debug`, whose librota is itself the debug build, and -DROTA_DEBUG when
 *   compiling the single-file rota.c.)  The reports:
 *     "rota_timer_init() of a pending timer"
 *         the timer is still linked in a wheel: cancel it first (or its
 *         memory was freed while pending and is being reused).  The call
 *         does nothing, so the wheel stays intact.
 *     "timer memory overwritten or reused without rota_timer_init()"
 *         arm, touch, cancel or relocate of memory that is not the timer
 *         the library last left at that address: written over by a pool's
 *         free list or another object, or an idle timer copied by
 *         assignment.  The call returns ROTA_EUNINIT.
 *     "pending timer moved or copied without rota_timer_relocate()"
 *         a call on the copy of a pending timer: ROTA_EUNINIT.
 *     "pending timer freed or overwritten without rota_timer_cancel()"
 *         its memory was reused while the wheel still links it: found
 *         when the wheel walks its list (a fire, a cascade,
 *         rota_wheel_next_deadline(), rota_wheel_drain()), links a timer
 *         next to it, or is called on a neighbour of it (which returns
 *         ROTA_ECORRUPT, having written nothing).  The address is the
 *         freed timer's.
 *     "a neighbour of this pending timer was freed, moved or overwritten
 *     without rota_timer_cancel() or rota_timer_relocate()"
 *         the same when the culprit cannot be told: the neighbour that
 *         does not point back still looks like a valid timer.
 *     ROTA_EOTHERWHEEL, without a report
 *         a pending timer passed with another wheel than its own, found
 *         by following its list to the list's head (within 32 timers of
 *         either end; further in, the call is taken at its word).
 *   and the wheel's rules (THE WHEEL'S RULES), with the wheel's address:
 *     "wheel used from two threads at once: a wheel and its timers belong
 *     to one thread at a time"
 *         a call of one thread while another thread's advance(),
 *         advance_max(), expire(), drain(), next_deadline() or foreach()
 *         runs on the same wheel: the later call returns ROTA_EBUSY,
 *         having changed nothing (an advance() that is idle inline, and
 *         two threads arming at once with no pass running, are not seen).
 *         The check is not a lock: two calls that both began before either
 *         could see the other may damage the wheel first, and the damage
 *         is then reported as the misuse it resembles (a freed neighbour,
 *         a copied or re-initialised wheel).  A wheel handed from one
 *         thread to another is never reported.
 *     "rota_wheel_init() of a wheel with pending timers: drain it first,
 *     or it was copied"
 *         a timer that was pending when its wheel was initialised again
 *         (or that belongs to a copy) used in a call: its list leads to one
 *         of the wheel's list heads, which does not lead back.  The call
 *         returns ROTA_ECORRUPT.  A wheel abandoned together with its
 *         timers, their memory gone too, may be initialised again: only a
 *         timer of the old wheel that is used again is reported.
 *     "wheel moved or copied after rota_wheel_init() (or never
 *     initialised): use it at the address it was initialised at"
 *         a call on a copy of a wheel (or on memory never initialised as
 *         one): ROTA_ECORRUPT (0 from rota_wheel_next_deadline()), having
 *         changed nothing.
 *   A timer freed while pending is found when its memory is reused, wherever
 *   the timer sits in its object: a new timer initialised at its address is
 *   "rota_timer_init() of a pending timer"; its bytes written over, or a new
 *   timer at another offset of the block, break its seal or its neighbours'
 *   links ("pending timer freed ...", "a neighbour ...").  Memory freed and
 *   left as it was still holds a valid-looking timer, and nothing in the
 *   library can tell: run ASan or valgrind, which report the wheel's first
 *   read of it.  How: a timer carries a 16-bit seal of its address, callback,
 *   state and (while idle) deadline, kept in the callback pointer's top 16
 *   bits on a 64-bit target (user-space code addresses leave them 0; a
 *   callback above 2^48 is refused with a report) and in a field of its own on
 *   a 32-bit one, so a debug build's timer is the size of a normal one.  The
 *   library renews the seal at each change and checks it at each call and on
 *   each timer it walks; a link is checked against its neighbour's before it
 *   is followed or written, and list walks do not read ahead.  Not caught:
 *   memory that still holds, unchanged, the idle timer the library left at
 *   that address (a pool that keeps objects intact hands back a valid timer,
 *   old callback and all: nothing tells the two apart), an overwrite that
 *   happens to give a valid seal (1 in 65,536; a copy less than 256 KiB away
 *   never does), and rota_timer_touch_at_unchecked(), which calls
 *   nothing.  Memory truly returned to malloc is read by the checks like any
 *   other; run ASan or valgrind to catch those reads themselves.
 *
 *   A report calls the handler given to rota_debug_set_handler(); the
 *   default writes "rota: MISUSE (timer 0xADDRESS)" to stderr and calls
 *   abort(), as a C library's debug checks do.  A handler may log and
 *   return: a call that found the misuse on its own argument then returns
 *   as said above, having changed nothing; a misuse found inside a walk
 *   aborts all the same, since the wheel cannot go on.  It may also
 *   longjmp() out; the wheel must not be used afterwards.
 *
 *   Your own code needs no flag and no rebuild: a debug build's wheels
 *   turn rota.h's inline paths off, so that code, compiled in your
 *   program, hands every call to the library.  The cost is
 *   that call, the checks, and no read-ahead in list walks (an arm and a
 *   cancel run about 7 times the instructions of a normal build's), for
 *   tests and debugging.  What a debug build holds you to: drain a wheel
 *   that still has timers before dropping it (OWNERSHIP), or their memory,
 *   initialised again while the dropped wheel's memory is intact, is taken
 *   for timers still pending; a rota_timer_touch_at_unchecked() of an idle
 *   timer shows as an overwrite at its next call.  rota_timer_init() reads
 *   the memory it is given, which valgrind is told is meant when its
 *   header was found at build time.  A normal build (ROTA_DEBUG off) has
 *   none of this: its code is the same as if the option did not exist.
 *
 * SIZES (64-bit; on i386 24 bytes, 36 and about 19 KiB)
 *   sizeof(struct rota_timer) == 32 bytes (links, deadline, callback): a
 *   million timers in 32 MiB; sizeof(struct rota_periodic) == 48;
 *   sizeof(struct rota_wheel) is about 37 KiB (8 levels x 256 slot heads,
 *   256 cascade marks, bitmaps and counters).
 */
#ifndef ROTA_H
#define ROTA_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rota/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) || defined(__CYGWIN__)
#define ROTA_API
#elif defined(__GNUC__)
#define ROTA_API __attribute__((visibility("default")))
#else
#define ROTA_API
#endif

/* ------------------------------------------------------------------ errors */

/* X(name, value, message): one list makes the enum and rota_strerror(). */
#define ROTA_ERRORS(X)                                                         \
    X(ROTA_EINVAL, -1,                                                         \
      "invalid argument (NULL pointer or value out of range)")                 \
    X(ROTA_EUNINIT, -2, "timer was never initialised with rota_timer_init()")  \
    X(ROTA_EOTHERWHEEL, -3, "timer is pending on another wheel")               \
    X(ROTA_EBUSY, -4,                                                          \
      "operation not allowed from inside this wheel's callback")               \
    X(ROTA_ENOENT, -5, "no such pending timer")                                \
    X(ROTA_EAGAIN, -6, "limit reached, try again later")                       \
    X(ROTA_ESHUTDOWN, -7, "service is stopped")                                \
    X(ROTA_EDEADLK, -8, "would wait for the calling callback itself")          \
    X(ROTA_ENOMEM, -9, "out of memory")                                        \
    X(ROTA_ECORRUPT, -10, "internal invariant violated")                       \
    X(ROTA_ESYS, -11, "system call failed (see errno)")                        \
    X(ROTA_ENOTSUP, -12, "not supported on this system")                       \
    X(ROTA_EFORK, -13, "service belongs to the parent process (fork)")

enum rota_error {
#define ROTA_ENUM_ENTRY(name, value, message) name = (value),
    ROTA_ERRORS(ROTA_ENUM_ENTRY)
#undef ROTA_ENUM_ENTRY
};

/* A static message for any value: "success" for 0; for a positive value
 * (the count or flag some calls return on success) a text that says it is
 * no error; for a negative code that is not rota's, a generic text. */
ROTA_API const char *rota_strerror(int error);

/* "MAJOR.MINOR.PATCH" of the library actually linked. */
ROTA_API const char *rota_version(void);

/* --------------------------------------------------------------- allocator */

/*
 * Where a component that allocates (rota/keyed.h, rota/service.h) gets its
 * memory; the core wheel never allocates.  alloc returns a block of `size`
 * bytes aligned for any object, or NULL; free releases a block alloc
 * returned, with the size that was asked for.  Both receive `ctx`.  A
 * component copies this struct when it is created.
 */
struct rota_allocator {
    void *(*alloc)(void *ctx, size_t size);
    void (*free)(void *ctx, void *ptr, size_t size);
    void *ctx;
};

/* -------------------------------------------------------------------- time */

/* The latest deadline a timer can have; later ones saturate to it. */
#define ROTA_MAX_DEADLINE (UINT64_MAX - 1)
/* The longest period a periodic timer can have, 2^62 - 1 ticks (146 years
 * of nanosecond ticks): a longer one is ROTA_EINVAL. */
#define ROTA_MAX_PERIOD (UINT64_MAX >> 2)
/* Returned by rota_wheel_next_deadline() when no timer is pending. */
#define ROTA_NEVER UINT64_MAX

/* ------------------------------------------------------------------ timers */

struct rota_wheel;
struct rota_timer;

/*
 * Called when a timer fires.  `late` is how many ticks after its deadline the
 * timer fired (the pass's `now` minus the deadline that came due; for a
 * periodic timer, rota_timer_deadline() already gives the next one).
 */
typedef void rota_timer_fn(struct rota_wheel *wheel, struct rota_timer *timer,
                           uint64_t late);

/*
 * What a periodic timer does when it has missed a tick: when a call fires it
 * one period or more after its deadline, so that the next point of its
 * schedule is already due too (the process was stopped, a callback ran long,
 * advance() was called rarely).  The three are tokio's MissedTickBehavior.
 * A fire late by less than a period has missed nothing: under every policy
 * the next deadline is deadline + period, on the schedule.  (tokio treats a
 * tick more than 5 ms late as missed; a wheel fires whole ticks when it is
 * advanced, so lateness below a period is the caller's granularity, not a
 * missed tick.)  For first 10, period 10:
 *
 *     advance to   SKIP               BURST                  DELAY
 *     15           fire; next 20      fire; next 20          fire; next 20
 *     20           fire; next 30      fire twice; next 30    fire; next 30
 *     25           fire; next 30      fire twice; next 30    fire; next 35
 *     55           fire; next 60      fire 5 times; next 60  fire; next 65
 */
enum rota_missed {
    /* Fire once, then continue at the first point of the original schedule
     * after `now` (the default; tokio's Skip). */
    ROTA_MISSED_SKIP = 0,
    /* Fire once for every missed point, all in the same call, each with its
     * own lateness; the schedule is kept (tokio's Burst). */
    ROTA_MISSED_BURST = 1,
    /* Fire once, then restart the schedule from `now`: next = now + period
     * (tokio's Delay). */
    ROTA_MISSED_DELAY = 2,
};

/* Link fields shared by timers and the wheel's list heads. Private. */
struct rota_link {
    struct rota_link *next;
    struct rota_link *prev;
};

/*
 * Embed in your own object.  All fields are private: use the functions.
 * 32 bytes on 64-bit targets, 24 on 32-bit ones: a million timers fill
 * 32 MiB, what a server CPU's last-level cache holds.
 */
struct rota_timer {
    /* private.  While the timer is pending, link_ holds it in one of the
     * wheel's lists.  While it is idle, link_.prev is ROTA__IDLE (a value
     * no pointer to a link can have) and link_.next means nothing; memory
     * never given to rota_timer_init(), zeroed memory included, is neither
     * idle nor pending, and the calls that check see it (ERRORS). */
    struct rota_link link_;
    uint64_t deadline_; /* current deadline; may be later than the slot's */
    rota_timer_fn *fn_; /* the callback; a periodic timer's is
                           rota__periodic_fire (a debug build keeps its
                           seal in the top bits of a 64-bit pointer) */
#if UINTPTR_MAX <= 0xffffffffu
    uint32_t seal_; /* 32-bit targets: a debug build's seal; otherwise 0 */
#endif
};

/*
 * A periodic timer: a timer and its schedule.  Embed it in your own object
 * and pass &periodic->timer to every call that takes a timer (cancel,
 * touch, rota_timer_deadline(), ...); its callback receives that same
 * pointer, and rota_container_of(timer, struct rota_periodic, timer) gives
 * the struct back.  Kept apart from struct rota_timer so that the timers
 * of the common case, one-shots, carry no period.
 */
struct rota_periodic {
    struct rota_timer timer;
    /* private.  48 bytes on 64-bit targets: a fire reads the timer and
     * these two words, and a 56-byte struct put most of an array's
     * elements across two cache lines. */
    uint64_t sched_;    /* period << 2 | enum rota_missed (rota__sched()) */
    rota_timer_fn *fn_; /* the caller's callback */
};

/* Recover the object that embeds `ptr` as its `member`. */
/* clang-format off: version 14 reads "(ptr) - x" as a cast of "-x" */
#define rota_container_of(ptr, type, member)                                   \
    ((type *)(void *)((char *)(ptr)-offsetof(type, member)))
/* clang-format on */

/* Prepare a timer for use.  Must be called once before any other call on it;
 * may be called again on an idle timer to change its callback.  `fn` may be
 * NULL for timers only ever collected with rota_wheel_expire(). */
ROTA_API void rota_timer_init(struct rota_timer *timer, rota_timer_fn *fn);

/* Arm at an absolute deadline (saturated to ROTA_MAX_DEADLINE, clamped to the
 * wheel's `now`).  Arming a pending timer re-arms it: it moves (a periodic
 * timer keeps its period, continuing from the new deadline).  O(1).  0 or
 * ROTA_EINVAL, ROTA_EUNINIT, ROTA_EOTHERWHEEL.
 *
 * Defined inline (rota/wheel-inl.h): a future deadline for an idle timer,
 * or for a pending one that shares its slot with others (the common
 * cases), is filed in the caller without a call; every other case goes to
 * rota_timer_arm_at_noinline(), which has the same contract and is the
 * symbol for bindings that cannot use inline functions.  To move a pending
 * timer later (an activity timeout), rota_timer_touch_at() is much cheaper. */
static inline int rota_timer_arm_at(struct rota_wheel *wheel,
                                    struct rota_timer *timer,
                                    uint64_t deadline);
ROTA_API int rota_timer_arm_at_noinline(struct rota_wheel *wheel,
                                        struct rota_timer *timer,
                                        uint64_t deadline);

/* Arm at rota_wheel_now() + `delay` (saturating): the wheel's `now`, or the
 * present when a time source is set (rota_wheel_set_time_source()).  As
 * rota_timer_arm_at(). */
static inline int rota_timer_arm_in(struct rota_wheel *wheel,
                                    struct rota_timer *timer, uint64_t delay);

/*
 * Prepare a periodic timer, as rota_timer_init() prepares a timer: `fn`
 * runs at each fire, with &periodic->timer.  The timer stays periodic
 * until rota_timer_init() is called on periodic->timer.
 */
ROTA_API void rota_periodic_init(struct rota_periodic *periodic,
                                 rota_timer_fn *fn);

/*
 * Arm (or re-arm) a periodic timer: first at `first_deadline`, then every
 * `period` ticks on the schedule first_deadline + k * period, so it does
 * not drift: a fire late by less than a period is followed by the next
 * point of the schedule, whatever the policy.  `missed` says what to do
 * when a call finds it one period or more behind (enum rota_missed; only
 * ROTA_MISSED_DELAY then moves the schedule, to now + k * period).  The
 * timer stays pending after each fire until cancelled (a schedule that
 * would pass ROTA_MAX_DEADLINE ends after its last fire).
 * rota_timer_arm_at() and rota_timer_touch_at() of periodic->timer move
 * its next fire and keep the period and policy: the schedule continues from
 * the new deadline.  0, or ROTA_EINVAL (period 0 or above ROTA_MAX_PERIOD,
 * bad policy, or memory that rota_periodic_init() did not prepare) and the
 * errors of rota_timer_arm_at().
 *
 * Catching up costs O(1) per fire, however many points were missed: after a
 * jump of time (a process stopped, a suspend, a clock stepped forward by
 * 10^12 periods) a SKIP timer finds the first point after `now` with one
 * division and a DELAY timer restarts from `now`; each fires once, in
 * constant time, and the wheel moves on.  Only BURST does work per missed
 * point, since it fires once for each, by request.
 */
ROTA_API int rota_periodic_arm_at(struct rota_wheel *wheel,
                                  struct rota_periodic *periodic,
                                  uint64_t first_deadline, uint64_t period,
                                  enum rota_missed missed);

/*
 * Move a pending timer's deadline.  The idle-connection refresh path: when
 * the new deadline is later (the usual case) this is a plain store and the
 * timer is re-filed only when the slot it sits in comes due.  An earlier
 * deadline re-files at once.  A periodic timer keeps its period, continuing
 * from the new deadline.  0, or ROTA_ENOENT if the timer is not pending on
 * this wheel (it fired, was cancelled, or never armed), ROTA_EINVAL,
 * ROTA_EUNINIT, ROTA_EOTHERWHEEL.
 *
 * Defined inline (rota/wheel-inl.h) so that the later-deadline case costs a
 * dozen instructions in the caller, with no call, and an earlier one after
 * now is moved there as rota_timer_arm_at() moves it; every other case goes
 * to rota_timer_touch_at_noinline(), which has the same contract and is the
 * symbol for bindings that cannot use inline functions.
 */
static inline int rota_timer_touch_at(struct rota_wheel *wheel,
                                      struct rota_timer *timer,
                                      uint64_t deadline);
ROTA_API int rota_timer_touch_at_noinline(struct rota_wheel *wheel,
                                          struct rota_timer *timer,
                                          uint64_t deadline);

/*
 * Timer slack: arm with a window instead of a deadline.  The timer fires in
 * the first advance whose `now` is at or after a deadline the wheel picks in
 * [earliest, latest] (both saturated to ROTA_MAX_DEADLINE and clamped to the
 * wheel's `now`, as rota_timer_arm_at() does): never before `earliest`, and no
 * later than the first advance at or after `latest`.  The pick is the
 * instant of the window with the most trailing zero bits, that is the start
 * of the coarsest slot that begins inside it, and depends on nothing else:
 *   - timers whose windows overlap tend to get the same deadline, so they
 *     fire in the same call (one wake-up instead of several: systemd's
 *     accuracy, Linux's timer slack);
 *   - a deadline that starts a slot of level k (a multiple of 256^k ticks)
 *     is never filed again into a lower level: when its slot comes due it
 *     is due.  A window of at least 256^k ticks always holds such an
 *     instant (at least 256 ticks for level 1, which covers delays of 256
 *     to 65,535 ticks; 65,536 for level 2), so a timeout with that much
 *     slack is moved once, from its slot to the due list, however long.
 * rota_timer_deadline() shows the pick.  Otherwise as rota_timer_arm_at() (the
 * timer becomes one-shot), plus ROTA_EINVAL when earliest > latest.  O(1).
 */
ROTA_API int rota_timer_arm_range_at(struct rota_wheel *wheel,
                                     struct rota_timer *timer,
                                     uint64_t earliest, uint64_t latest);

/*
 * The touch with slack, for idle timeouts: when the pending timer's deadline
 * already lies in [earliest, latest] (after the same clamping), nothing
 * changes, not even a store; otherwise it is touched to the deadline
 * rota_timer_arm_range_at() would pick.  So a connection refreshed every few
 * milliseconds with a window of a second keeps its deadline for most
 * refreshes.  The errors of rota_timer_touch_at(), plus ROTA_EINVAL when
 * earliest > latest.  Inline: the case where the deadline is already inside
 * is a load and compares in the caller; rota_timer_touch_range_at_noinline()
 * is the same function out of line.
 */
static inline int rota_timer_touch_range_at(struct rota_wheel *wheel,
                                            struct rota_timer *timer,
                                            uint64_t earliest, uint64_t latest);
ROTA_API int rota_timer_touch_range_at_noinline(struct rota_wheel *wheel,
                                                struct rota_timer *timer,
                                                uint64_t earliest,
                                                uint64_t latest);

/*
 * Cancel.  Returns 1 if the timer was pending, 0 if it was not (idle, fired
 * or already cancelled: a safe no-op), or ROTA_EINVAL, ROTA_EUNINIT,
 * ROTA_EOTHERWHEEL.  Once it returns the wheel holds no reference to the
 * timer.  O(1).  Inline (the pending case is unlinked in the caller);
 * rota_timer_cancel_noinline() is the same function out of line.
 */
static inline int rota_timer_cancel(struct rota_wheel *wheel,
                                    struct rota_timer *timer);
ROTA_API int rota_timer_cancel_noinline(struct rota_wheel *wheel,
                                        struct rota_timer *timer);

/*
 * Move a timer to new memory: afterwards `to` is the timer, in the same
 * place among the wheel's timers (same deadline, same order among equal
 * deadlines, still pending or not), and `from` is plain memory the wheel no
 * longer references.  For containers that move their elements, such as an
 * open-addressing hash table that stores timers inline.  The two must not
 * overlap; `to` needs no rota_timer_init().  O(1): the timer's two list
 * neighbours are updated.  May be called from a callback, on any timer
 * (the firing one included).  Returns 0, or ROTA_EINVAL, ROTA_EUNINIT (for
 * `from`), ROTA_EOTHERWHEEL.
 */
ROTA_API int rota_timer_relocate(struct rota_wheel *wheel,
                                 struct rota_timer *from,
                                 struct rota_timer *to);

/* Whether the timer is pending on some wheel. */
ROTA_API bool rota_timer_pending(const struct rota_timer *timer);

/* The timer's current deadline (meaningful while it is pending, and inside
 * its callback, where a periodic timer shows its next deadline). */
ROTA_API uint64_t rota_timer_deadline(const struct rota_timer *timer);

/* ------------------------------------------------------------------- wheel */

#define ROTA_WHEEL_BITS 8 /* slots per level: 256 */
#define ROTA_WHEEL_SLOTS (1u << ROTA_WHEEL_BITS)
#define ROTA_WHEEL_LEVELS (64 / ROTA_WHEEL_BITS) /* 8 */

/* Counters since rota_wheel_init(); read them with rota_wheel_stats(). */
struct rota_stats {
    uint64_t armed;     /* arm_at, arm_in, periodic_arm_at, earlier touches */
    uint64_t fired;     /* callbacks run plus timers handed to expire() */
    uint64_t cancelled; /* cancels that found the timer pending */
    uint64_t touched;   /* touches that moved a deadline later */
    uint64_t refiled;   /* timers moved between slots (cascades) */
    uint64_t drained;   /* timers handed back by rota_wheel_drain() */
    uint64_t clock_backwards; /* calls whose `now` was earlier than before */
    uint64_t pending;         /* timers pending right now */
};

/* The buckets of a lateness histogram: 0, then one per power of two. */
#define ROTA_LATE_BUCKETS 65

/*
 * How late timers fired, in ticks, as a log2 histogram: count[0] is the
 * number of fires exactly at their deadline, count[k] (k >= 1) the fires
 * late by 2^(k-1) to 2^k - 1 ticks.  Read it with rota_wheel_lateness().
 */
struct rota_lateness {
    uint64_t count[ROTA_LATE_BUCKETS];
};

/* The wheel: embed or allocate it yourself.  Its fields are private; it is
 * defined, with the inline paths of the calls above, in rota/wheel-inl.h,
 * which this header includes at its end. */
struct rota_wheel;

/*
 * The touch that is one store: give a later deadline to a timer the caller
 * knows is pending on this wheel, checking nothing.  Preconditions, the
 * caller's to keep (builds without NDEBUG assert what they can): the timer
 * is pending on `wheel`, and current deadline <= `deadline` <=
 * ROTA_MAX_DEADLINE.  The intended caller is an idle-connection refresh:
 * now + a fixed timeout, with a clock that does not go back, on a timer
 * that stays pending until it fires and its connection closes.
 *
 * Why it is worth having: rota_timer_touch_at() must read the timer before it
 * may write it, and on a timer that is not in the cache that read holds up
 * the CPU; a store alone does not (at a million timers, about 3x faster).
 * It writes nothing else, not even the wheel: every extra store waits in
 * the CPU's store buffer behind the one that misses.
 *
 * What it gives up: the call is not counted in stats.touched, and
 * rota_wheel_next_deadline() may still return the old deadline (earlier
 * than the truth, never later) until an advance reaches that time, which
 * costs one early wake-up.  Breaking a precondition corrupts no memory: an
 * earlier deadline fires when the timer's old slot comes due (late), and a
 * store into an idle timer is lost (the timer stays idle).
 */
static inline void rota_timer_touch_at_unchecked(struct rota_wheel *wheel,
                                                 struct rota_timer *timer,
                                                 uint64_t deadline);

/* Prepare an empty wheel whose time starts at `now`.  0 or ROTA_EINVAL.
 * Not on a wheel with pending timers, and the wheel is used at this address
 * only (THE WHEEL'S RULES). */
ROTA_API int rota_wheel_init(struct rota_wheel *wheel, uint64_t now);

/*
 * Set the wheel's time to `now` and run the callback of every timer whose
 * deadline is at or before it, in deadline order, ties in arm order (see
 * CALLBACK CONTEXT).  Returns the number of callbacks run (saturated to
 * INT_MAX), or ROTA_EINVAL, ROTA_EBUSY.  An earlier `now` than before fires
 * nothing and returns 0.  Cost: O(levels) plus O(1) per timer fired or
 * cascaded, with no bound on how many that is (a slot may hold a million
 * timers): an event loop that must not stall uses
 * rota_wheel_advance_max().  Inline: when nothing can be due yet (the usual
 * wake-up of a loop) it is a few compares and two stores in the caller; every
 * other case calls the library, which does not test that case
 * again.  rota_wheel_advance_noinline() has the same contract (the symbol for
 * bindings that cannot use inline functions).
 */
ROTA_API int rota_wheel_advance_noinline(struct rota_wheel *wheel,
                                         uint64_t now);

static inline int rota_wheel_advance(struct rota_wheel *wheel, uint64_t now);

/*
 * As rota_wheel_advance(), but the call runs at most `max_fires` callbacks
 * and files at most `max_fires` timers again, then stops; the next call
 * (with the same or a later `now`) resumes where this one stopped, in
 * order, so no due timer is skipped and none fires early.  Filing again is
 * the wheel's own work: moving the timers of a higher-level slot that comes
 * due (a cascade) or a touched timer whose old slot or the due list
 * reaches it.  So one call costs at most max_fires x (a callback + a cache
 * miss) + O(levels), however many timers a slot holds; a cascade files
 * from both ends of its slot at once, so its misses come two at a time and
 * a call of max_fires moves takes about max_fires / 2 memory latencies.
 * Stores the number of callbacks run in *fired (if not NULL).  Returns 1
 * if it stopped at a limit with work left (due timers, or timers to file
 * again: call again soon, before sleeping), 0 if nothing due remains, or a
 * negative error.  While a cascade is left half done, rota_timer_arm_at()
 * takes the out-of-line path (a deadline inside that slot is filed behind
 * the older timers of that deadline, to keep tie order).
 */
ROTA_API int rota_wheel_advance_max(struct rota_wheel *wheel, uint64_t now,
                                    size_t max_fires, size_t *fired);

/*
 * The pull model: set the wheel's time to `now` and write up to `cap` due
 * timers into out[], in firing order, calling nothing.  Each timer handed
 * back is no longer pending, except a periodic timer, which the wheel has
 * already re-armed (and which may appear more than once under
 * ROTA_MISSED_BURST).  `cap` also bounds the timers the call files again,
 * as the limit of rota_wheel_advance_max() does.  Stores the count in *n
 * (if not NULL); returns 1 if it stopped at `cap` with work left (call
 * again: nothing due is ever dropped), 0 if nothing due remains, or
 * ROTA_EINVAL, ROTA_EBUSY.
 */
ROTA_API int rota_wheel_expire(struct rota_wheel *wheel, uint64_t now,
                               struct rota_timer **out, size_t cap, size_t *n);

/*
 * The exact earliest deadline of all pending timers, or ROTA_NEVER when none
 * is pending.  Never later than the true earliest deadline (and earlier only
 * after rota_timer_touch_at_unchecked() moved the earliest timer, until an
 * advance reaches the old deadline).  O(levels) when
 * the answer is cached or the earliest slot holds one deadline; otherwise one
 * pass over the timers of the earliest occupied slot (after finishing a
 * cascade that a limited call left half done), whose result is cached
 * until the earliest timer fires, is cancelled or moved.  May re-file touched
 * timers, hence the non-const wheel.
 */
ROTA_API uint64_t rota_wheel_next_deadline(struct rota_wheel *wheel);

/*
 * A timeout for epoll_wait()/poll(), stored in *timeout_ms: milliseconds from
 * `now` (in ticks of `tick_ns` nanoseconds) until the earliest deadline,
 * rounded up; 0 only when a timer is already due at `now`; -1 (wait forever)
 * when no timer is pending; at most INT_MAX.  Returns 0, or ROTA_EINVAL
 * (wheel or timeout_ms NULL, tick_ns 0).  On an error *timeout_ms is 0 (when
 * not NULL): a loop that ignores the error polls, it never waits forever.
 *
 *     int ms;
 *     rota_wheel_timeout_ms(&wheel, now, tick_ns, &ms);
 *     int n = epoll_wait(ep, evs, 64, ms);
 */
ROTA_API int rota_wheel_timeout_ms(struct rota_wheel *wheel, uint64_t now,
                                   uint64_t tick_ns, int *timeout_ms);

/*
 * The wheel's time: the latest `now` it was given; with a time source set
 * (below), the source's reading when that is later (saturated to
 * ROTA_MAX_DEADLINE).  So rota_wheel_now() + delay, like
 * rota_timer_arm_in(), counts from the present on a wheel whose source
 * says what the present is.
 */
ROTA_API uint64_t rota_wheel_now(const struct rota_wheel *wheel);

/*
 * A time source: the present in the wheel's ticks, rounded UP (the first
 * tick that starts at or after this instant), from whatever clock the
 * wheel's advances follow.  `arg` is the one given with it.
 */
typedef uint64_t rota_time_fn(void *arg);

/*
 * Give the wheel a source of the present, or remove it (fn NULL; arg is
 * then ignored).  Why: a delay is counted from the wheel's `now`, the
 * latest time it was advanced to, and whoever drives the wheel from an
 * event loop advances it only when a timer is due, so that `now` can be
 * seconds behind the present when the program arms "in 1 s" from an I/O
 * callback: the timer would fire at once.  With a source, rota_wheel_now()
 * and rota_timer_arm_in() take the later of `now` and the source's
 * reading, which the source rounds up, and since an advance fires a timer
 * only once its `now` has reached the deadline, a delay so counted is
 * never short.  Nothing else changes: the wheel's own time still moves
 * only through advance() and expire() (the source never fires anything),
 * rota_timer_remaining() and callbacks' `late` still count from it, and
 * the inline arm, touch and cancel never look at the source.  The core
 * still reads no clock: the source is the caller's code.  Every event-loop
 * adapter (rota/uv.h, ...) sets one on the wheel it binds and removes it
 * when closed; rota_wheel_init() starts with none.  `fn` runs on the
 * thread that calls rota_wheel_now() or rota_timer_arm_in(), from the
 * wheel's callbacks too; it must not call into this wheel.  0, or
 * ROTA_EINVAL (wheel NULL).
 */
ROTA_API int rota_wheel_set_time_source(struct rota_wheel *wheel,
                                        rota_time_fn *fn, void *arg);

/* The number of pending timers, O(1). */
ROTA_API size_t rota_wheel_count(const struct rota_wheel *wheel);

/* Copy the counters into *out. */
ROTA_API void rota_wheel_stats(const struct rota_wheel *wheel,
                               struct rota_stats *out);

/*
 * Copy into *out the histogram of how late the wheel's timers fired since
 * rota_wheel_init(): one count per callback run by an advance (and per
 * timer handed out by rota_wheel_expire()), by its `late`, the pass's
 * `now` minus the deadline that came due.  Lateness here is the caller's:
 * the wheel fires every timer in the first call that reaches its deadline,
 * so a timer is late by how long after its deadline that call came (a loop
 * that woke late, a long callback, a limit that left timers for the next
 * call).  Counting costs the fire path one increment; reading is
 * O(ROTA_LATE_BUCKETS), at any time, from a callback too.  Nothing if wheel
 * or out is NULL.
 */
ROTA_API void rota_wheel_lateness(const struct rota_wheel *wheel,
                                  struct rota_lateness *out);

/*
 * Remove every pending timer and hand each to fn(timer, arg), so the owner
 * can free it (fn may free the timer's memory).  Timers become idle before
 * fn runs.  The wheel is empty afterwards and stays usable.  0, ROTA_EINVAL
 * (wheel or fn NULL), ROTA_EBUSY (called from this wheel's callback).
 */
ROTA_API int rota_wheel_drain(struct rota_wheel *wheel,
                              void (*fn)(struct rota_timer *timer, void *arg),
                              void *arg);

/*
 * Check every internal invariant (each timer sits in the slot its deadline
 * implies, bitmaps agree with lists, counts agree).  O(timers).  For tests
 * and debugging.  0, ROTA_EINVAL (wheel NULL) or ROTA_ECORRUPT; on an
 * error, when `why` is not NULL it receives a static description (of the
 * first violation found, for ROTA_ECORRUPT).
 */
ROTA_API int rota_wheel_check(const struct rota_wheel *wheel, const char **why);

/* ------------------------------------------------------------ introspection */

/*
 * How long until a timer fires, in ticks from the wheel's `now`, stored in
 * *ticks.  Returns:
 *   1  the timer is pending on this wheel; *ticks is its deadline minus
 *      the wheel's `now`, or 0 when it is already due (a deadline at or
 *      before `now` that the next advance() will fire: armed for `now`, or
 *      left by a call that stopped at its limit).  A periodic timer counts
 *      to its next fire; a timer moved by a touch, to its new deadline; a
 *      timer armed with a window (rota_timer_arm_range_at()), to the deadline
 *      the wheel picked in it.
 *   0  the timer is not pending (never armed, fired, cancelled, drained; a
 *      one-shot inside its own callback); *ticks is 0.
 *   ROTA_EINVAL (wheel, timer or ticks NULL), ROTA_EUNINIT, or
 *      ROTA_EOTHERWHEEL (pending on another wheel, whose `now` this wheel
 *      does not know); *ticks is 0 when ticks is not NULL.
 * So a timer that is due and one that is not pending both give 0 ticks; the
 * return value tells them apart.  O(1), changes nothing; may be called
 * from callbacks and from a rota_wheel_foreach() visitor.  (libuv's
 * uv_timer_get_due_in(), libev's ev_timer_remaining().)
 */
ROTA_API int rota_timer_remaining(const struct rota_wheel *wheel,
                                  const struct rota_timer *timer,
                                  uint64_t *ticks);

/* Called by rota_wheel_foreach() once per pending timer: return 0 to go on,
 * anything else to stop the walk. */
typedef int rota_visit_fn(struct rota_wheel *wheel, struct rota_timer *timer,
                          void *arg);

/*
 * Visit every pending timer once, without removing or moving it: calls
 * visit(wheel, timer, arg) for each until one returns nonzero.  For
 * debugging, metrics and shutdown reports ("what is still armed?");
 * rota_wheel_drain() is the call that removes them.
 *
 * Order: none is promised.  (Today timers due at `now` come first, then
 * the wheel's slots, which is roughly but not exactly deadline order: one
 * slot of a higher level holds many deadlines, and a touched timer stays
 * in its old slot until that slot comes due.)
 *
 * Cost: O(pending timers + 32): the occupancy bitmaps lead the walk to the
 * non-empty slots only, so the wheel's 2,048 slots are not each visited.
 * Nothing is allocated and nothing is filed again.  Every timer is
 * visited, wherever the wheel holds it: due, armed by a callback during the
 * current pass, in a slot, or in a slot a limited advance left half
 * cascaded.
 *
 * What the visitor may do: read anything (rota_timer_deadline(),
 * rota_timer_remaining(), rota_timer_pending(), the object that embeds the
 * timer, rota_wheel_now(), rota_wheel_count(), rota_wheel_stats(),
 * rota_wheel_check()), and cancel the timer it is visiting with
 * rota_timer_cancel() (and then free it).  Nothing else may change this wheel
 * until the walk returns: no arm, touch, relocate or cancel of another of
 * its timers, no rota_wheel_next_deadline() or rota_wheel_timeout_ms()
 * (they may file timers again).  The walk would miss timers, visit some
 * twice or follow a link into freed memory.  Of these calls, advance(),
 * advance_max(), expire(), drain() and a nested foreach() on this wheel
 * return ROTA_EBUSY; arm, touch and cancel are inline and are not
 * checked (a check would cost every call of every user), so keeping to
 * this rule is the caller's part.  Other wheels may be used freely.
 *
 * May be called from a callback of this wheel.  Returns 0 when every
 * pending timer was visited, 1 when the visitor stopped the walk, or
 * ROTA_EINVAL (wheel or visit NULL), ROTA_EBUSY (called from a visitor of
 * this wheel).  (libevent's event_base_foreach_event().)
 */
ROTA_API int rota_wheel_foreach(struct rota_wheel *wheel, rota_visit_fn *visit,
                                void *arg);

/* ------------------------------------------------------------------- debug */

/*
 * Receives the misuses a debug build finds (see DEBUG BUILDS), and in every
 * build a corrupt wheel found by a walk (THE WHEEL'S RULES): `misuse` is
 * one of the static messages listed there, `timer` the address concerned
 * (for a misuse of a wheel, the wheel's address, cast; NULL when a walk
 * cannot tell).  Called on the thread that made the call, possibly inside
 * rota_wheel_advance(); it must not call into the wheel concerned.  After
 * a corrupt-wheel report the process aborts when the handler returns.
 */
typedef void rota_misuse_fn(const char *misuse, const struct rota_timer *timer,
                            void *arg);

/* Set the handler of misuse reports; NULL restores the default (message to
 * stderr, then abort()).  Process-wide: set it before threads use rota.
 * Accepted by every build; a normal build calls it only for a corrupt
 * wheel (THE WHEEL'S RULES). */
ROTA_API void rota_debug_set_handler(rota_misuse_fn *fn, void *arg);

/* Whether the library linked was built with ROTA_DEBUG. */
ROTA_API bool rota_debug_enabled(void);

/* The private part: the wheel's fields and the inline paths. */
#include "rota/wheel-inl.h"

#ifdef __cplusplus
}
#endif

#endif /* ROTA_H */
