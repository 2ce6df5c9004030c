/* SPDX-License-Identifier: MIT */
/*
 * rota/catchup.h - calm after a stall: overdue timers fire at a bounded
 * rate instead of in one burst.
 *
 * When a process is stopped for seconds, or a machine resumes from suspend
 * on a clock that counts it (ROTA_CLOCK_BOOTTIME), every timer that came
 * due meanwhile is overdue at the first wake-up, and a plain advance fires
 * them all in one call: thousands of reconnects, retries and kicks at the
 * same instant.  A catch-up policy watches each advance of a wheel and,
 * when the wheel is advanced later than its next deadline by at least a
 * stall threshold, lets due timers out at most `burst` per call, calls at
 * least `spacing` ticks apart, until nothing due is left; then the wheel
 * is exact again.
 *
 * GUARANTEES
 *   - Never early: the policy only holds fires back; a timer fires in an
 *     advance whose `now` is at or after its deadline, as rota.h says.
 *   - Order: due timers fire in deadline order, ties in arm order, across
 *     the whole catch-up (rota_wheel_advance_max() resumes where it
 *     stopped).  A timer that comes due during a catch-up waits behind the
 *     overdue ones: it may fire later than the first advance that reaches
 *     its deadline, by up to the time the catch-up has left.
 *   - Rate: during a catch-up a call fires at most `burst` timers, and
 *     calls that fire are `spacing` ticks apart or more.
 *   - Outside a catch-up an advance is rota_wheel_advance(), plus one
 *     rota_wheel_next_deadline() (cached by the wheel in the usual case).
 *
 * TIME
 *   In the wheel's ticks, passed in by the caller.  The policy reads no
 *   clock and allocates nothing; struct rota_catchup is the caller's.
 *
 * THREAD SAFETY
 *   None: the policy belongs to its wheel's thread.
 *
 * ERRORS
 *   ROTA_EINVAL (NULL, burst or spacing 0, stall 0), and the errors of
 *   rota_wheel_advance_max().
 */
#ifndef ROTA_CATCHUP_H
#define ROTA_CATCHUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rota.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a catch-up policy saw (rota_catchup_stats()). */
struct rota_catchup_stats {
    uint64_t stalls;       /* advances that started a catch-up */
    uint64_t last_stall;   /* ticks the wheel was late when the last began */
    uint64_t max_stall;    /* the longest such lateness */
    uint64_t overdue;      /* timers fired by catch-ups, all of them */
    uint64_t last_overdue; /* timers fired by the last (or current) one */
    uint64_t held;         /* calls that fired nothing for the spacing */
};

/* All fields are private. */
struct rota_catchup {
    /* private */
    uint64_t stall_;
    uint64_t spacing_;
    size_t burst_;
    uint64_t next_; /* during a catch-up: the earliest call that may fire */
    bool active_;
    struct rota_catchup_stats stats_;
};

/*
 * Prepare a policy: a stall is an advance whose `now` is `stall` ticks or
 * more after the wheel's next deadline; a catch-up then fires at most
 * `burst` timers per call, with calls `spacing` ticks apart (a rate of
 * burst / spacing per tick).  0 or ROTA_EINVAL.
 */
ROTA_API int rota_catchup_init(struct rota_catchup *c, uint64_t stall,
                               size_t burst, uint64_t spacing);

/*
 * Advance `wheel` to `now` under the policy (use it instead of
 * rota_wheel_advance()).  Returns the number of callbacks run, or a
 * negative error (those of rota_wheel_advance_max()).  After it, the next
 * time to advance is rota_catchup_next_wake().
 */
ROTA_API int rota_catchup_advance(struct rota_catchup *c,
                                  struct rota_wheel *wheel, uint64_t now);

/* Whether a catch-up is under way (timers due are being held back). */
ROTA_API bool rota_catchup_active(const struct rota_catchup *c);

/*
 * When to advance next, in ticks: during a catch-up the earliest call that
 * may fire again; otherwise rota_wheel_next_deadline() (ROTA_NEVER when no
 * timer is pending).  An event loop sleeps until then.
 */
ROTA_API uint64_t rota_catchup_next_wake(const struct rota_catchup *c,
                                         struct rota_wheel *wheel);

/* Copy the counters into *out (nothing when either is NULL). */
ROTA_API void rota_catchup_stats(const struct rota_catchup *c,
                                 struct rota_catchup_stats *out);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_CATCHUP_H */
