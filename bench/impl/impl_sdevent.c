/* SPDX-License-Identifier: MIT */
/*
 * impl_sdevent.c - systemd's sd-event (Debian's libsystemd0), one time event
 * source per timer on a private sd_event loop: the timer a systemd-based
 * service would use without rota.  sd-event keeps its time sources in two
 * priority queues per clock (by earliest and by latest allowed time: each
 * source has an accuracy window, here 1 us, so both orders agree), binary
 * heaps of pointers to the sources; a disabled source stays in both, sorted
 * last.  A source fires once the loop's timestamp has reached its time
 * (exact, in microseconds).  sd-event dispatches ONE pending source per
 * loop iteration: the others wait, marked pending, for the next iterations.
 *
 * How the simulated clock is driven.  sd-event reads every clock through
 * clock_gettime() (its shared object calls it through the PLT; checked with
 * `nm -D`) and takes no time from its caller, so, as for libuv, libev and
 * libevent, the clock is simulated (fakeclock.c; 1 tick = 1 ms = 1000 us of
 * sd-event time) and sd-event runs unmodified in simulated time.  Its loop
 * iteration also re-arms the clock's timerfd (timerfd_settime) whenever its
 * earliest source may have moved; that would arm a real kernel timer at a
 * simulated instant, so while the fake clock is on it is answered without
 * a system call and counted, like the zero-timeout epoll_wait (see
 * fakeclock.c): the figures are sd-event's user-space cost.
 *
 *   arm(id, D)      sd_event_source_set_time(s, D * 1000) +
 *                   sd_event_source_set_enabled(s, SD_EVENT_ONESHOT): the
 *                   sources are made once, in create(), as a service would
 *                   keep one per connection; ONESHOT: sd-event disables the
 *                   source before running its callback;
 *   cancel          sd_event_source_set_enabled(s, SD_EVENT_OFF);
 *   rearm (W2, W7)  the same two calls as arm (set_enabled of a source that
 *                   is already ONESHOT returns at once);
 *   periodic (W5)   sd-event has no periodic timers: the source is
 *                   SD_EVENT_ON and its callback moves it to the time it
 *                   fired for + period (no drift), before reporting the fire;
 *   advance(now)    set the fake clock, then sd_event_run(e, 0) until an
 *                   iteration dispatches nothing: one iteration per fire
 *                   (each: prepare, a zero-timeout epoll_wait answered
 *                   without the kernel, the timestamps, the scan of the time
 *                   queues, one dispatch), plus the one that finds nothing -
 *                   what a service pays per wake-up and per fire;
 *   advance_max     (W7) at most `limit` iterations, i.e. fires, per call.
 * Node = {sd_event_source *, id, period}, 16 bytes; the source itself is
 * allocated by sd-event (opaque, a few hundred bytes), so MEM, which counts
 * every allocation, is the figure to read for its footprint.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>
#include <time.h>

#define US_PER_TICK 1000u

struct sd_node {
    sd_event_source *src;
    uint32_t id;
    uint32_t period; /* ticks; 0: one-shot */
};

struct sd_impl {
    sd_event *e;
    struct sd_node *nodes;
    uint32_t n;
};

static void check(int r, const char *what)
{
    if (r < 0)
        bench_die("sd-event: %s: %s", what, strerror(-r));
}

static int on_time(sd_event_source *s, uint64_t usec, void *userdata)
{
    struct sd_node *node = userdata;
    if (node->period != 0)
        check(sd_event_source_set_time(s, usec + (uint64_t)node->period *
                                                     US_PER_TICK),
              "sd_event_source_set_time");
    bench_fired(node->id);
    return 0;
}

static void *create(uint32_t n, uint64_t now)
{
    struct sd_impl *d = malloc(sizeof *d);
    if (!d)
        bench_die("sd-event: out of memory");
    bench_fakeclock_set(now);
    bench_fakeclock_enable(true);
    check(sd_event_new(&d->e), "sd_event_new");
    d->nodes = malloc((size_t)n * sizeof *d->nodes);
    if (!d->nodes)
        bench_die("sd-event: out of memory for %u timers", n);
    d->n = n;
    for (uint32_t i = 0; i < n; i++) {
        struct sd_node *node = &d->nodes[i];
        node->id = i;
        node->period = 0;
        check(sd_event_add_time(d->e, &node->src, CLOCK_MONOTONIC, UINT64_MAX,
                                1, on_time, node),
              "sd_event_add_time");
        check(sd_event_source_set_enabled(node->src, SD_EVENT_OFF),
              "sd_event_source_set_enabled");
    }
    /* One iteration (nothing is due) takes the loop's timestamp: it must
     * be the simulated tick, or the fake clock does not reach sd-event. */
    check(sd_event_run(d->e, 0), "sd_event_run");
    uint64_t usec = 0;
    check(sd_event_now(d->e, CLOCK_MONOTONIC, &usec), "sd_event_now");
    if (usec != now * US_PER_TICK)
        bench_die("sd-event: loop time %llu us, simulated %llu ms: the fake "
                  "clock does not reach sd-event",
                  (unsigned long long)usec, (unsigned long long)now);
    return d;
}

/* Teardown only (never measured). */
static void destroy(void *impl)
{
    struct sd_impl *d = impl;
    for (uint32_t i = 0; i < d->n; i++)
        sd_event_source_disable_unref(d->nodes[i].src);
    sd_event_unref(d->e);
    bench_fakeclock_enable(false);
    free(d->nodes);
    free(d);
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct sd_impl *d = impl;
    struct sd_node *node = &d->nodes[id];
    node->period = 0;
    check(sd_event_source_set_time(node->src, deadline * US_PER_TICK),
          "sd_event_source_set_time");
    check(sd_event_source_set_enabled(node->src, SD_EVENT_ONESHOT),
          "sd_event_source_set_enabled");
}

static void cancel(void *impl, uint32_t id)
{
    struct sd_impl *d = impl;
    check(sd_event_source_set_enabled(d->nodes[id].src, SD_EVENT_OFF),
          "sd_event_source_set_enabled");
}

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct sd_impl *d = impl;
    struct sd_node *node = &d->nodes[id];
    node->period = (uint32_t)period;
    check(sd_event_source_set_time(node->src, first * US_PER_TICK),
          "sd_event_source_set_time");
    check(sd_event_source_set_enabled(node->src, SD_EVENT_ON),
          "sd_event_source_set_enabled");
}

static void advance(void *impl, uint64_t now)
{
    struct sd_impl *d = impl;
    int r;
    bench_fakeclock_set(now);
    while ((r = sd_event_run(d->e, 0)) > 0)
        ;
    check(r, "sd_event_run");
}

static bool advance_max(void *impl, uint64_t now, size_t limit)
{
    struct sd_impl *d = impl;
    bench_fakeclock_set(now);
    for (size_t i = 0; i < limit; i++) {
        int r = sd_event_run(d->e, 0);
        check(r, "sd_event_run");
        if (r == 0)
            return false;
    }
    return true; /* perhaps more: the loop calls again */
}

static const char *version(void)
{
    /* libsystemd has no run-time version call; the build's is the one the
     * Debian package pins (libsystemd-dev = libsystemd0). */
#ifdef BENCH_SDEVENT_VERSION
    return BENCH_SDEVENT_VERSION;
#else
    return "unknown";
#endif
}

const struct bench_impl impl_sdevent = {
    .name = "sd-event",
    .node_size = sizeof(struct sd_node),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = arm,
    .arm_periodic = arm_periodic,
    .advance = advance,
    .advance_max = advance_max,
    .version = version,
};
