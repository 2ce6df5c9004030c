/* SPDX-License-Identifier: MIT */
/*
 * rota/ev.h - drive a rota wheel from a libev loop (library rota_ev).
 *
 * One ev_timer per wheel, armed at the wheel's next deadline, and one
 * ev_prepare that runs before every poll and re-arms the ev_timer only if a
 * timer armed during the loop iteration is earlier than the current arming.
 * Touches and cancels never re-arm it: a connection touched on every read
 * costs a store into its timer.
 *
 *     struct rota_wheel wheel;
 *     struct rota_ev rw;
 *     rota_ev_init(&rw, EV_DEFAULT, &wheel, 1000000);   // 1 ms ticks
 *     rota_timer_init(&c->idle, on_idle);
 *     uint64_t idle_ns = 30ull * 1000000000;            // 30 s
 *     rota_timer_arm_at(&wheel, &c->idle, rota_ev_deadline_after(&rw, idle_ns));
 *     ... in the read callback:
 *     rota_timer_touch_at(&wheel, &c->idle, rota_ev_deadline_after(&rw, idle_ns));
 *     ev_run(EV_DEFAULT, 0);
 *
 * TIME, AND WHY NOT ev_now()
 *   The wheel's ticks are CLOCK_MONOTONIC in units of `tick_ns`.  libev's
 *   cached time ev_now() is the wall clock (libev's monotonic time plus an
 *   offset it re-reads when it notices the wall clock jump), and libev's
 *   monotonic time is not public: a wheel running on ev_now() would see
 *   every deadline move when the system clock is stepped, and kick every idle
 *   connection at once after a forward step.  So the adapter reads
 *   CLOCK_MONOTONIC once per wake-up to advance the wheel (about 20-40 ns,
 *   no system call), which is also the time line of libev's own ev_timer.
 *   Deadlines come from rota_ev_deadline_after(): a fresh reading, rounded
 *   up, so a timer never fires early.
 *
 * WHEN TO CALL rota_ev_sync()
 *   Arms made inside loop callbacks need nothing: the prepare watcher runs
 *   before the loop blocks.  Arms made outside the loop (before ev_run())
 *   need one rota_ev_sync() before the loop runs, because ev_run() returns
 *   at once when no referencing watcher is active.
 *
 * LIFETIME
 *   While the ev_timer is armed it keeps the loop alive, as an ev_timer does;
 *   the prepare watcher does not (it is unref'ed).  When the last timer is
 *   cancelled the ev_timer stays armed (cancel never re-arms): it wakes once
 *   more, finds nothing, and stops.  rota_ev_close() stops both watchers;
 *   then the struct may be freed.  The wheel is the caller's.
 *
 * CALLBACK CONTEXT
 *   Timer callbacks run from the ev_timer's callback, inside
 *   rota_wheel_advance(): they may use the loop and the wheel freely, except
 *   rota_ev_close() on this adapter.
 *
 * THREAD SAFETY
 *   As libev: the adapter, the loop and the wheel belong to one thread.
 */
#ifndef ROTA_EV_H
#define ROTA_EV_H

#include <stdint.h>

#include <ev.h>

#include "../rota.h"
#include "clock.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rota_ev {
    /* private */
    ev_timer timer_;
    ev_prepare prepare_;
    struct ev_loop *loop_;
    struct rota_wheel *wheel_;
    struct rota_clock clock_;
    uint64_t armed_;      /* deadline (ticks) the ev_timer is armed at */
    uint64_t seen_armed_; /* the wheel's stats.armed at the last sync */
    uint64_t rearms_;     /* ev_timer_start() calls */
    uint64_t wakeups_;    /* ev_timer callbacks */
    uint8_t started_;
};

/*
 * Initialise `wheel` (rota_wheel_init() at the current CLOCK_MONOTONIC time
 * in ticks of `tick_ns` ns) and start the prepare watcher on `loop`.  0,
 * ROTA_EINVAL (NULL, tick_ns 0), ROTA_ESYS (no CLOCK_MONOTONIC).
 */
ROTA_API int rota_ev_init(struct rota_ev *rw, struct ev_loop *loop,
                          struct rota_wheel *wheel, uint64_t tick_ns);

/* The deadline for an event `delay_ns` nanoseconds from now, in ticks,
 * rounded up from a fresh clock reading. */
ROTA_API uint64_t rota_ev_deadline_after(const struct rota_ev *rw,
                                         uint64_t delay_ns);

/* The current CLOCK_MONOTONIC time in ticks, rounded down. */
ROTA_API uint64_t rota_ev_now(const struct rota_ev *rw);

/* Re-arm the ev_timer if a timer armed since the last sync is earlier than
 * its arming.  O(1) when nothing was armed (see rota/epoll.h on the wheel's
 * `armed` counter).  Returns 1 if it did, 0 if not needed, ROTA_EINVAL. */
ROTA_API int rota_ev_sync(struct rota_ev *rw);

/* ev_timer_start() calls and ev_timer wake-ups so far. */
ROTA_API uint64_t rota_ev_rearms(const struct rota_ev *rw);
ROTA_API uint64_t rota_ev_wakeups(const struct rota_ev *rw);

/* Stop both watchers (the wheel and its timers are left alone).  The struct
 * may be freed afterwards. */
ROTA_API void rota_ev_close(struct rota_ev *rw);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_EV_H */
