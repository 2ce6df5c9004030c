/* SPDX-License-Identifier: MIT */
/*
 * rota/loop.h - what the six event-loop adapters share: their statistics
 * and the engine each adapter's struct embeds.
 *
 * Every adapter (rota/epoll.h, uv.h, ev.h, event.h, sdevent.h, uring.h)
 * keeps one OS timer per wheel, armed at the wheel's next deadline, and
 * offers the same calls, X being the adapter's name:
 *
 *   rota_X_init(struct rota_X *, <the loop>, wheel, clock[, flags])
 *   int  rota_X_close(struct rota_X *)      0, or what is still in flight
 *   int  rota_X_sync(struct rota_X *)       re-arm if a timer became earlier
 *   void rota_X_set_budget(struct rota_X *, size_t max_fires)
 *   void rota_X_stats(const struct rota_X *, struct rota_loop_stats *)
 *   uint64_t rota_X_now(const struct rota_X *)
 *   uint64_t rota_X_deadline_in(const struct rota_X *, uint64_t delay_ns)
 *
 * Names follow rota.h's rule: a call ending in _at takes an absolute
 * deadline, one ending in _in a delay from now.
 *
 * rota_X_close() returns 0 when the struct may be freed at once; a positive
 * count when the loop still owes it completions (libuv closes its handles
 * from the loop, io_uring reports the removal of its timeout): the struct
 * may be freed once rota_X_stats() reports in_flight 0, after the loop has
 * run; a negative ROTA_E* code when nothing was closed.  A second close, or
 * a close after a failed init, does nothing and returns the same way.
 */
#ifndef ROTA_LOOP_H
#define ROTA_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "../rota.h"
#include "clock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an adapter did so far (rota_X_stats()). */
struct rota_loop_stats {
    uint64_t armed;     /* the deadline (ticks) the OS timer is armed at;
                         ROTA_NEVER when none */
    uint64_t rearms;    /* arming changes: the loop library's timer calls */
    uint64_t wakeups;   /* wake-ups at (or after) the armed deadline */
    uint64_t in_flight; /* operations the loop owes the adapter (libuv
                           handles closing, io_uring SQEs); 0 elsewhere */
    /* How late the OS timer woke the wheel, in nanoseconds from the armed
     * deadline to the clock's reading when the adapter ran, one count per
     * wake-up (rota.h's log2 buckets).  rota_wheel_lateness() counts per
     * timer, in ticks. */
    struct rota_lateness lateness;
    /* io_uring only (0 for the others): SQEs queued, of which moves made
     * with IORING_TIMEOUT_UPDATE and by remove + add, and whether the
     * adapter moves with the update (1) or by remove + add (0). */
    uint64_t sqes;
    uint64_t updates;
    uint64_t removes;
    unsigned update;
};

/* The bookkeeping every adapter embeds: the bound wheel and clock, the
 * armed deadline, the budget and the counters.  All fields are private. */
struct rota_loop_engine {
    /* private */
    struct rota_wheel *wheel_; /* NULL: not bound (failed init, closed) */
    struct rota_clock clock_;
    uint64_t armed_;      /* deadline (ticks) the OS timer is armed at */
    uint64_t seen_armed_; /* the wheel's stats.armed at the last sync */
    uint64_t rearms_;
    uint64_t wakeups_;
    uint64_t late_ns_[ROTA_LATE_BUCKETS];
    size_t budget_; /* callbacks per wake-up, 0: no limit */
};

#ifdef __cplusplus
}
#endif

#endif /* ROTA_LOOP_H */
