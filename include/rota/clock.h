/* SPDX-License-Identifier: MIT */
/*
 * rota/clock.h - turn the system's monotonic clock into wheel ticks.
 *
 * The core wheel (rota.h) never reads a clock: the caller passes ticks in.
 * This helper, outside the core, reads CLOCK_MONOTONIC (or the cheaper and
 * coarser CLOCK_MONOTONIC_COARSE, or CLOCK_BOOTTIME, which counts suspend)
 * and converts between nanoseconds and ticks of a length the caller
 * chooses.
 *
 * SUSPEND: MONOTONIC OR BOOTTIME
 *   CLOCK_MONOTONIC stops while the machine is suspended: a timer due in
 *   30 minutes on a laptop that sleeps for an hour in between fires 30
 *   minutes after the resume, 90 minutes after it was armed.  That is
 *   right for "30 minutes of this program's running time" and wrong for
 *   anything measured against the outside world: a lease, a token's
 *   expiry, a peer's keepalive, a retry a user waits for.  CLOCK_BOOTTIME
 *   (Linux) is the same clock plus the time spent suspended, so such a
 *   timer is due at once on resume.  Neither clock is ever set back (NTP
 *   only slews them); CLOCK_REALTIME, which can jump, is not offered.
 *
 * ROUNDING, AND WHY
 *   "Now" is rounded down: the tick we are in.  A deadline is rounded up: the
 *   first tick that starts at or after the real instant.  Because a wheel
 *   fires a timer only once `now` reaches its deadline tick, a deadline made
 *   with rota_clock_deadline_after() never fires before the real time has
 *   passed.  (Adding a rounded-up delay to a rounded-down now could be early
 *   by up to one tick: the classic libuv#4773 bug.)
 *
 * THREAD SAFETY
 *   A struct rota_clock is read-only after rota_clock_init(): share it.
 */
#ifndef ROTA_CLOCK_H
#define ROTA_CLOCK_H

#include <stdint.h>

#include "../rota.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which system clock to read.  COARSE costs about a fifth of MONOTONIC
 * (no system call, no TSC read) but only advances every few milliseconds:
 * fine for a 100 ms or 1 s idle wheel, too coarse for a 2 ms one.
 * BOOTTIME costs what MONOTONIC costs and counts suspend (see SUSPEND). */
enum rota_clock_source {
    ROTA_CLOCK_MONOTONIC = 0,        /* CLOCK_MONOTONIC */
    ROTA_CLOCK_MONOTONIC_COARSE = 1, /* CLOCK_MONOTONIC_COARSE (Linux) */
    ROTA_CLOCK_BOOTTIME = 2,         /* CLOCK_BOOTTIME (Linux 2.6.39+) */
};

struct rota_clock {
    /* private */
    int id_; /* the clockid_t */
    uint64_t tick_ns_;
};

/* Read `source` with ticks of `tick_ns` nanoseconds.  0, or ROTA_EINVAL for
 * a NULL clock, tick_ns 0 or an unknown source, ROTA_ENOTSUP when the
 * system has no such clock (ROTA_CLOCK_BOOTTIME outside Linux, or on a
 * kernel older than 2.6.39; MONOTONIC_COARSE outside Linux), or ROTA_ESYS
 * when reading it failed otherwise. */
ROTA_API int rota_clock_init(struct rota_clock *clock,
                             enum rota_clock_source source, uint64_t tick_ns);

/* The clock's time in nanoseconds. */
ROTA_API uint64_t rota_clock_now_ns(const struct rota_clock *clock);

/* The clock's time in ticks, rounded down: the value to pass to
 * rota_wheel_advance(). */
ROTA_API uint64_t rota_clock_now(const struct rota_clock *clock);

/* The deadline, in ticks, for an event `delay_ns` from now: the first tick
 * at or after now + delay_ns (saturating at ROTA_MAX_DEADLINE). */
ROTA_API uint64_t rota_clock_deadline_after(const struct rota_clock *clock,
                                            uint64_t delay_ns);

/* A duration in nanoseconds as ticks, rounded up (saturating). */
ROTA_API uint64_t rota_clock_ticks_ceil(const struct rota_clock *clock,
                                        uint64_t ns);

/* A number of ticks as nanoseconds (saturating at UINT64_MAX). */
ROTA_API uint64_t rota_clock_ns(const struct rota_clock *clock, uint64_t ticks);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_CLOCK_H */
