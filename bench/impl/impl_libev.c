/* SPDX-License-Identifier: MIT */
/*
 * impl_libev.c - the real libev (Debian's libev4), ev_timer watchers on a
 * private loop (ev_loop_new(EVBACKEND_EPOLL): no default-loop child
 * watcher, hence no descriptor at all).  libev keeps timers in a 4-ary heap
 * of {at, watcher *} entries (cache-aligned, like heap4) and stores time as
 * a double in seconds.
 *
 * How the simulated clock is driven.  libev cannot take time from its
 * caller either: ev_now_update() and ev_run() re-read the monotonic clock
 * (get_clock -> clock_gettime), and the Debian build cannot be recompiled
 * with another ev_time.  So, as for libuv, the clock is simulated
 * (fakeclock.c interposes clock_gettime; 1 tick = 1 ms = 0.001 s of libev
 * time) and libev runs unmodified in simulated time.  advance(now) = set the
 * fake clock, ev_run(EVRUN_NOWAIT): one loop iteration; its zero-timeout
 * epoll_wait is answered without entering the kernel (no descriptor is
 * registered, so the answer is 0 events; see fakeclock.c).
 *
 * The documented one-tick shift, and what we do about it.  libev fires a
 * timer when its `at` is strictly before the loop's now (timers_reify: `at <
 * mn_now`).  With a real, continuous clock that costs a few nanoseconds;
 * with a clock that moves in whole ticks it makes every timer fire one full
 * tick late.  A one-tick shift cannot simply be tolerated by the
 * cross-check: in W1 a timer that the others fired (and re-armed) at tick T
 * is still pending in libev until T + 1, and a cancel in between changes
 * what fires, so the runs diverge.  So the adapter arms every watcher half
 * a tick early: `after` = (deadline - now - 0.5) ms.  Then `at` = deadline -
 * 0.5 ms, which is < the tick `deadline` and > the tick before it, by a
 * margin (0.5 ms) that dwarfs the double's rounding (~1e-13 s at these
 * magnitudes).  libev does exactly the work it always does; it fires on
 * the deadline tick, as it would a few ns after the deadline in real time.
 *   arm(id, D)      ev_timer_set(w, (D - now - 0.5) / 1000, 0); ev_timer_start
 *   cancel          ev_timer_stop
 *   rearm (W2)      ev_timer_again with repeat = 29.9995 s: libev's own
 *                   idiom for idle timeouts (one heap adjust, no stop +
 *                   start); W2's re-arm is always now + 30000;
 *   periodic (W5)   repeat = period / 1000: libev re-arms at at + repeat
 *                   (no drift), so each fire stays half a tick before its
 *                   tick.
 * Node = ev_timer (the id travels in w->data).  W1-W5 all run honestly.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <ev.h>
#include <stdio.h>
#include <stdlib.h>

#define W2_TIMEOUT 30000u

struct ev_impl {
    struct ev_loop *loop;
    ev_timer *timers;
    uint32_t n;
    uint64_t now;
};

static void on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    bench_fired((uint32_t)(uintptr_t)w->data);
}

static void *create(uint32_t n, uint64_t now)
{
    struct ev_impl *e = malloc(sizeof *e);
    if (!e)
        bench_die("libev: out of memory");
    /* Start 100 ticks early to check below that libev sees the clock. */
    bench_fakeclock_set(now - 100);
    bench_fakeclock_enable(true);
    e->loop = ev_loop_new(EVBACKEND_EPOLL);
    if (!e->loop)
        bench_die("libev: ev_loop_new(EVBACKEND_EPOLL) failed");
    e->timers = malloc((size_t)n * sizeof *e->timers);
    if (!e->timers)
        bench_die("libev: out of memory for %u timers", n);
    e->n = n;
    e->now = now;
    for (uint32_t i = 0; i < n; i++) {
        ev_init(&e->timers[i], on_timer);
        e->timers[i].data = (void *)(uintptr_t)i;
    }
    /* ev_now() is wall-clock time (monotonic + an offset libev re-reads
     * from gettimeofday now and then), so check the step, not the value. */
    ev_now_update(e->loop);
    double before = ev_now(e->loop);
    bench_fakeclock_set(now);
    ev_now_update(e->loop);
    double step = ev_now(e->loop) - before;
    if (step < 0.1 - 1e-6 || step > 0.1 + 1e-6)
        bench_die("libev: 100 simulated ms moved the loop's time by %.6f s: "
                  "the fake clock does not reach libev",
                  step);
    return e;
}

/* Teardown only (never measured): stop timers in descending heap position
 * (the private `active` field of a started ev_timer), so each stop removes
 * the heap's last entry; in id order each stop sifts, which at 1e7 timers
 * costs seconds the budget cannot afford. */
static void destroy(void *impl)
{
    struct ev_impl *e = impl;
    size_t size = (size_t)e->n + 8;
    ev_timer **by_pos = calloc(size, sizeof *by_pos);
    if (!by_pos)
        bench_die("libev: out of memory for teardown");
    for (uint32_t i = 0; i < e->n; i++) {
        int pos = ev_is_active(&e->timers[i]);
        if (pos > 0 && (size_t)pos < size)
            by_pos[pos] = &e->timers[i];
    }
    for (size_t pos = size; pos-- > 0;)
        if (by_pos[pos])
            ev_timer_stop(e->loop, by_pos[pos]);
    free(by_pos);
    for (uint32_t i = 0; i < e->n; i++) /* anything left: plain stops */
        ev_timer_stop(e->loop, &e->timers[i]);
    ev_loop_destroy(e->loop);
    bench_fakeclock_enable(false);
    free(e->timers);
    free(e);
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct ev_impl *e = impl;
    ev_timer *w = &e->timers[id];
    ev_timer_set(w, ((double)(deadline - e->now) - 0.5) / 1000.0, 0.);
    ev_timer_start(e->loop, w);
}

static void cancel(void *impl, uint32_t id)
{
    struct ev_impl *e = impl;
    ev_timer_stop(e->loop, &e->timers[id]);
}

static void rearm(void *impl, uint32_t id, uint64_t deadline)
{
    struct ev_impl *e = impl;
    ev_timer *w = &e->timers[id];
    if (deadline - e->now != W2_TIMEOUT) {
        ev_timer_stop(e->loop, w);
        arm(impl, id, deadline);
        return;
    }
    w->repeat = ((double)W2_TIMEOUT - 0.5) / 1000.0;
    ev_timer_again(e->loop, w);
}

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct ev_impl *e = impl;
    ev_timer *w = &e->timers[id];
    ev_timer_set(w, ((double)(first - e->now) - 0.5) / 1000.0,
                 (double)period / 1000.0);
    ev_timer_start(e->loop, w);
}

static void advance(void *impl, uint64_t now)
{
    struct ev_impl *e = impl;
    e->now = now;
    bench_fakeclock_set(now);
    ev_run(e->loop, EVRUN_NOWAIT);
}

static const char *version(void)
{
    static char buf[32];
    snprintf(buf, sizeof buf, "%d.%d", ev_version_major(), ev_version_minor());
    return buf;
}

const struct bench_impl impl_libev = {
    .name = "libev",
    .node_size = sizeof(ev_timer),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = rearm,
    .arm_periodic = arm_periodic,
    .advance = advance,
    .version = version,
};
