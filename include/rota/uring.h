/* SPDX-License-Identifier: MIT */
/*
 * rota/uring.h - drive a rota wheel from an io_uring loop (library
 * rota_uring, Linux, liburing).
 *
 * THE RULE
 *   One IORING_OP_TIMEOUT per wheel (absolute, CLOCK_MONOTONIC), armed at
 *   the wheel's next deadline.  It is moved only when a timer becomes
 *   earlier than the current arming, and armed anew after it fires; never on
 *   touch or cancel.  So an idle-connection server that touches a timer on
 *   every read takes no submission queue entry (SQE) for it: the touch is a
 *   store in the timer, and the timeout that wakes up early for a touched
 *   timer finds it filed later and arms at the new next deadline.
 *
 * THE RING IS YOURS
 *   You create the ring, submit, and reap completions; the adapter only
 *   takes SQEs from it and asks to see the completions it caused:
 *
 *     rota_uring_init(&ut, &ring, &wheel, &clock, 0);
 *     for (;;) {
 *         rota_uring_sync(&ut);              // may queue an SQE or two
 *         io_uring_submit_and_wait(&ring, 1);
 *         io_uring_for_each_cqe(&ring, head, cqe) {
 *             n++;
 *             if (rota_uring_handle(&ut, cqe) != 0)
 *                 continue;                   // the adapter's: done
 *             ... your completion; rota_timer_touch_at() on every read ...
 *         }
 *         io_uring_cq_advance(&ring, n);
 *     }
 *
 *   rota_uring_handle() runs the due timers' callbacks when the timeout
 *   fires (inside the for_each loop: the callbacks may queue SQEs, not
 *   wait for completions).  Call rota_uring_sync() right before every
 *   submit: it moves the timeout if a timer armed since the last call is
 *   earlier, and costs O(1) when nothing was armed (it compares the wheel's
 *   `armed` counter, rota_stats, with the one it saw last, as rota/epoll.h
 *   does).  Timers armed from I/O completions or callbacks are covered by
 *   the next sync, so handle completions, sync, submit: in that order.
 *
 * USER_DATA
 *   The adapter's SQEs carry the user_data values (uintptr_t)ut and
 *   (uintptr_t)ut + 1, where ut is the address of the struct rota_uring:
 *   no object of yours can have those addresses, so a loop whose user_data
 *   are pointers to its own objects never confuses the two.  Other numbering
 *   schemes must avoid those two values.
 *
 * MOVING THE TIMEOUT
 *   Where the kernel has IORING_TIMEOUT_UPDATE (Linux 5.11: rings with
 *   IORING_FEAT_EXT_ARG, added in the same release), the armed timeout is
 *   updated in place: one SQE.  Elsewhere, or with ROTA_URING_NO_UPDATE, it
 *   is removed and a new one added: two SQEs.  The choice is made once, at
 *   init, and undone once if the kernel answers the first update with
 *   -EINVAL; rota_uring_stats() counts the moves made each way.
 *
 * ROUNDING AND CLOCKS
 *   A deadline d (ticks) is the instant d * tick_ns on CLOCK_MONOTONIC, so
 *   the timeout never fires before it.  The clock's source must be
 *   ROTA_CLOCK_MONOTONIC or ROTA_CLOCK_MONOTONIC_COARSE (the same time line;
 *   when the timeout fires the coarse clock may lag, and the wheel is then
 *   advanced to the armed deadline at least: never early, no spinning).
 *
 * DELAYS FROM NOW: NEVER EARLY
 *   While bound, the adapter gives the wheel a time source
 *   (rota_wheel_set_time_source() in rota.h): its clock read afresh and
 *   rounded up.  So a delay counted from the wheel's now -
 *   rota_timer_arm_in(&wheel, t, d), or rota_timer_arm_at() and
 *   rota_timer_touch_at() with rota_wheel_now(&wheel) + d - starts at the
 *   call, and the timer fires no earlier than d ticks after it, wherever the
 *   call is made: while handling your completions (the adapter's timeout
 *   completion may come later in the same batch, or not at all when nothing is
 *   due), in a wheel callback after others that ran long, or anywhere else
 *   between two submits.  Without the source it would count from the adapter's
 *   last wake-up, which after an idle stretch can be seconds old, and fire at
 *   once.
 *
 *   The wheel's own time (what advance() was last given, the `late` of
 *   callbacks, rota_timer_remaining()) still moves only when the adapter
 *   wakes.  Each such call reads the clock once (tens of nanoseconds);
 *   deadlines from rota_clock_deadline_after() cost what they did, and
 *   arm_at(), touch_at() and cancel() never read it.  With a coarse clock the
 *   source reads CLOCK_MONOTONIC, which the coarse clock trails: a delay is
 *   never cut short by its lag.  rota_uring_close() removes the source (unless
 *   the wheel has been given another since); while bound the wheel points at
 *   the struct, which must not move.
 *
 * BUDGET
 *   rota_uring_set_budget() bounds the callbacks (and the timers filed
 *   again) per wake-up; the rest stay due, the timeout is armed in the past,
 *   and they run at its next completion, after the I/O completions already
 *   waiting.
 *
 * TEARDOWN
 *   rota_uring_close() stops arming and cancels the timeout in flight (one
 *   SQE).  Until every completion the adapter caused has been handed to
 *   rota_uring_handle() (rota_uring_stats() reports in_flight 0), keep the
 *   struct where it is: the kernel returns its address in user_data.  Or destroy the ring
 *   (io_uring_queue_exit()): nothing more arrives then.  The wheel and its
 *   timers are untouched.
 *
 * CALLBACK CONTEXT
 *   Timer callbacks run inside rota_uring_handle() (inside
 *   rota_wheel_advance()): they may arm, touch and cancel timers and queue
 *   SQEs; they must not call rota_uring_handle() or rota_uring_close().
 *
 * THREAD SAFETY
 *   As the wheel and the ring: one thread.  One struct rota_uring per wheel;
 *   a ring may serve several.  Rings set up with IORING_SETUP_SQPOLL are
 *   refused: their kernel thread reads SQEs at a time the adapter cannot
 *   know, and an SQE points at a timespec inside the struct until then.
 */
#ifndef ROTA_URING_H
#define ROTA_URING_H

/*
 * STRICT ISO C
 *   <liburing.h> defines _XOPEN_SOURCE (and _GNU_SOURCE) itself to see
 *   sigset_t and AT_FDCWD, which works only before the first system header
 *   fixes glibc's choice.  This header includes it first, so
 *   `#include <rota/uring.h>` compiles under -std=c11 on its own and gives
 *   the program liburing too.  Under -std=c11 a system header included
 *   before this one has already fixed that choice without POSIX: the #error
 *   below says so instead of a page of errors from liburing (include
 *   rota/uring.h first, or define _GNU_SOURCE yourself).
 */
#if defined(__STRICT_ANSI__) && defined(__GLIBC__) &&                          \
    !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) &&                    \
    !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE) &&                      \
    !defined(LIB_URING_H)
#error                                                                         \
    "rota/uring.h: under strict ISO C, include it before any system header, or define _GNU_SOURCE first (liburing.h needs POSIX types)"
#endif

#include <liburing.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../rota.h"
#include "clock.h"
#include "loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* rota_uring_init() flag: move the timeout with remove + add even where
 * the kernel could update it in place (for tests, or a kernel that
 * misreports its features). */
#define ROTA_URING_NO_UPDATE 1u

/* All fields are private. */
struct rota_uring {
    /* private */
    struct rota_loop_engine engine_; /* rota/loop.h; armed_: the deadline
                                        last asked for */
    struct io_uring *ring_;
    struct __kernel_timespec ts_; /* what the SQEs point at */
    uint64_t low_; /* lowest deadline of the timeouts in flight */
    uint64_t sqes_, updates_, removes_;
    uint32_t timeouts_;  /* timeout SQEs whose completion has not come */
    uint32_t inflight_;  /* all SQEs whose completion has not come */
    uint8_t can_update_; /* move with IORING_TIMEOUT_UPDATE */
    uint8_t closed_;
    uint8_t in_handle_;
};

/*
 * Bind to `ring` and `wheel` (already initialised, in ticks of `clock`; the
 * clock is copied) and queue a timeout at the wheel's next deadline, if it
 * has one.  `flags`: 0 or ROTA_URING_NO_UPDATE.  0, ROTA_EINVAL (NULL, an
 * unknown flag, a clock that is not monotonic, an SQPOLL ring) or
 * ROTA_EAGAIN (the submission queue is full: submit, then rota_uring_sync()
 * queues it).  After ROTA_EINVAL rota_uring_close() is a harmless no-op.
 */
ROTA_API int rota_uring_init(struct rota_uring *ut, struct io_uring *ring,
                             struct rota_wheel *wheel,
                             const struct rota_clock *clock, unsigned flags);

/*
 * Call right before submitting.  Queues the SQEs that arm or move the
 * timeout if a timer armed since the last call is earlier than the arming
 * (or if nothing is armed and the wheel has a deadline).  Returns 1 if it
 * queued any, 0 if not, ROTA_EINVAL, or ROTA_EAGAIN when the submission
 * queue is full (submit and call again: the move is remembered).
 */
ROTA_API int rota_uring_sync(struct rota_uring *ut);

/*
 * Hand every completion to this first.  Returns 0 when it is not the
 * adapter's (yours to handle), and nonzero when it is (skip it): 1, or a
 * negative code - ROTA_ESYS when the kernel failed the timeout (errno is
 * set from cqe->res; the next sync arms it again), ROTA_EAGAIN when the
 * re-arm after a wake-up found the submission queue full (the next sync
 * retries), ROTA_EBUSY when called from a callback of this wheel.  When
 * the completion is the timeout firing, advances the wheel to the clock's
 * time first, running the due timers' callbacks (at most the budget), and
 * queues the timeout at the wheel's new next deadline.  ROTA_EINVAL for a
 * NULL argument.
 */
ROTA_API int rota_uring_handle(struct rota_uring *ut,
                               const struct io_uring_cqe *cqe);

/*
 * Whether `cqe` is one of the adapter's completions (its user_data is one of
 * the adapter's two values), without handling it.  For loops that want the
 * timers after the I/O of a batch: handle your completions first, then the
 * adapter's, so that a connection whose bytes arrived in the batch is
 * touched before its idle timer is looked at.
 */
ROTA_API bool rota_uring_owns(const struct rota_uring *ut,
                              const struct io_uring_cqe *cqe);

/*
 * Run at most `max_fires` callbacks per wake-up, and file at most as many
 * timers again (0, the default: no limit; rota_wheel_advance_max()).  The
 * rest stay due and the timeout is armed in the past, so they run at its
 * next completion, after the completions already waiting.
 */
ROTA_API void rota_uring_set_budget(struct rota_uring *ut, size_t max_fires);

/* The clock's time now, in ticks; 0 when ut is NULL or never bound. */
ROTA_API uint64_t rota_uring_now(const struct rota_uring *ut);

/* The deadline `delay_ns` nanoseconds from now on the adapter's clock,
 * rounded up to a tick (rota_clock_deadline_after()); ROTA_MAX_DEADLINE
 * when ut is NULL or never bound. */
ROTA_API uint64_t rota_uring_deadline_in(const struct rota_uring *ut,
                                         uint64_t delay_ns);

/* What the adapter did so far (rota/loop.h), for tests and monitoring: a
 * loop that only touches shows no SQE for it.  armed: the deadline the
 * timeout was last asked to fire at; rearms: timeouts armed or moved;
 * wakeups: timeout completions that advanced the wheel; in_flight: SQEs
 * whose completion has not been handed to rota_uring_handle() yet (queued
 * but unsubmitted ones included); sqes: SQEs taken from the ring, all
 * kinds; updates and removes: moves made with IORING_TIMEOUT_UPDATE (1 SQE)
 * and with TIMEOUT_REMOVE + TIMEOUT (2 SQEs); update: 1 when moves use
 * IORING_TIMEOUT_UPDATE.  All zero (armed ROTA_NEVER) when ut is NULL. */
ROTA_API void rota_uring_stats(const struct rota_uring *ut,
                               struct rota_loop_stats *out);

/*
 * Stop arming and cancel the timeout in flight, if any (queues one SQE;
 * submit it).  Returns the number of completions still to come (keep
 * handing them to rota_uring_handle(), which returns 1 for each, until
 * rota_uring_stats() reports in_flight 0, or destroy the ring), or
 * ROTA_EAGAIN when the submission queue is full (submit and call again),
 * ROTA_EINVAL for a NULL ut.  Idempotent.
 */
ROTA_API int rota_uring_close(struct rota_uring *ut);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_URING_H */
