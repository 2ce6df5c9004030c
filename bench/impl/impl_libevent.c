/* SPDX-License-Identifier: MIT */
/*
 * impl_libevent.c - the real libevent 2.1 (Debian's libevent-core), timer
 * events (evtimer) on a private event_base.  libevent keeps timeouts in a
 * binary min-heap of struct event pointers (a comparison dereferences both
 * events; no tie-break), plus optional "common timeout" queues: one FIFO
 * list per distinct duration, O(1) to append, represented in the heap by a
 * single internal event.  A timeout fires when its time <= the base's now
 * (exact).
 *
 * How the simulated clock is driven.  libevent caches time only while it is
 * inside event_base_loop() and otherwise reads the monotonic clock
 * (evutil_gettime_monotonic_ -> clock_gettime); nothing injects time.  As
 * for libuv and libev, the clock is simulated (fakeclock.c interposes
 * clock_gettime) and libevent runs unmodified in simulated time:
 *   arm(id, D)      evtimer_add(ev, D - now ms), relative to the clock,
 *                   which reads the simulated tick;
 *   cancel          evtimer_del;
 *   rearm (W2)      "libevent": evtimer_add on the pending event (libevent
 *                   adjusts the heap entry in place); "libevent-common":
 *                   evtimer_add with the 30 s common timeout made by
 *                   event_base_init_common_timeout(), libevent's own tool
 *                   for many timeouts of one duration (an O(1) list move);
 *                   the initial spread deadlines of W2's setup use the heap;
 *   periodic (W5)   event_assign(EV_PERSIST) + event_add(period): libevent
 *                   re-arms at the previous deadline + period (no drift), so
 *                   the first deadline must be now + period, which is how
 *                   the driver arms W5;
 *   advance(now)    set the fake clock, event_base_loop(EVLOOP_NONBLOCK):
 *                   one loop iteration; its zero-timeout epoll_wait is
 *                   answered without entering the kernel (no descriptor is
 *                   registered; see fakeclock.c).
 * Node = struct event (the id travels in the callback argument); libevent
 * has no intrusive timer, so the struct is allocated by us in one array, as
 * event_assign() allows.  W1-W5 run honestly; libevent-common runs W2 only.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <dlfcn.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define W2_TIMEOUT 30000u

struct evt_impl {
    struct event_base *base;
    struct event *events;
    const struct timeval *common; /* W2 common timeout, or NULL */
    uint32_t n;
};

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    bench_fired((uint32_t)(uintptr_t)arg);
}

static struct timeval ms_to_tv(uint64_t ms)
{
    struct timeval tv;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    return tv;
}

/* libev.so exports an emulation of libevent's API under the same names; if
 * the link order let it win, we would be measuring libev twice. */
static void check_binding(void)
{
    Dl_info info;
    int (*fn)(struct event *, const struct timeval *) = event_add;
    void *p;
    memcpy(&p, &fn, sizeof p);
    if (!dladdr(p, &info) || !info.dli_fname ||
        !strstr(info.dli_fname, "libevent"))
        bench_die("libevent: event_add resolves to %s, not libevent (link "
                  "libevent before libev)",
                  info.dli_fname ? info.dli_fname : "?");
}

static void *create_base(uint32_t n, uint64_t now, bool common)
{
    check_binding();
    struct evt_impl *e = malloc(sizeof *e);
    if (!e)
        bench_die("libevent: out of memory");
    bench_fakeclock_set(now);
    bench_fakeclock_enable(true);
    struct event_config *cfg = event_config_new();
    if (!cfg || event_config_require_features(cfg, 0) != 0)
        bench_die("libevent: event_config_new failed");
    /* epoll, as on any Linux: its zero-timeout wait is elided. */
    event_config_avoid_method(cfg, "poll");
    event_config_avoid_method(cfg, "select");
    e->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (!e->base)
        bench_die("libevent: event_base_new_with_config failed");
    e->events = malloc((size_t)n * sizeof *e->events);
    if (!e->events)
        bench_die("libevent: out of memory for %u events", n);
    e->n = n;
    e->common = NULL;
    if (common) {
        struct timeval tv = ms_to_tv(W2_TIMEOUT);
        e->common = event_base_init_common_timeout(e->base, &tv);
        if (!e->common)
            bench_die("libevent: event_base_init_common_timeout failed");
    }
    for (uint32_t i = 0; i < n; i++)
        evtimer_assign(&e->events[i], e->base, on_timer, (void *)(uintptr_t)i);
    return e;
}

static void *create(uint32_t n, uint64_t now)
{
    return create_base(n, now, false);
}

static void *create_common(uint32_t n, uint64_t now)
{
    return create_base(n, now, true);
}

/* A common timeout's tv_usec carries this tag (libevent's
 * COMMON_TIMEOUT_MAGIC under COMMON_TIMEOUT_MASK). */
static bool is_common(const struct event *ev)
{
    return ((uint32_t)ev->ev_timeout.tv_usec & 0xf0000000u) == 0x50000000u;
}

/* Teardown only (never measured): delete heap timers in descending heap
 * position (the private ev_timeout_pos.min_heap_idx), so each delete
 * removes the heap's last entry; in id order each delete sifts, which at
 * 1e7 timers costs seconds the budget cannot afford.  Common-timeout
 * events sit in O(1) lists and are deleted directly. */
static void destroy(void *impl)
{
    struct evt_impl *e = impl;
    struct event **by_pos = calloc((size_t)e->n + 1, sizeof *by_pos);
    if (!by_pos)
        bench_die("libevent: out of memory for teardown");
    for (uint32_t i = 0; i < e->n; i++) {
        struct event *ev = &e->events[i];
        if (!evtimer_pending(ev, NULL) || (e->common && is_common(ev)))
            continue;
        int pos = ev->ev_timeout_pos.min_heap_idx;
        if (pos >= 0 && (uint32_t)pos < e->n)
            by_pos[pos] = ev;
    }
    for (size_t pos = (size_t)e->n + 1; pos-- > 0;)
        if (by_pos[pos])
            event_del(by_pos[pos]);
    free(by_pos);
    for (uint32_t i = 0; i < e->n; i++) /* the rest: plain deletes */
        event_del(&e->events[i]);
    event_base_free(e->base);
    bench_fakeclock_enable(false);
    free(e->events);
    free(e);
}

static uint64_t sim_now(void)
{
    return (uint64_t)bench_fakeclock_now();
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct evt_impl *e = impl;
    struct timeval tv = ms_to_tv(deadline - sim_now());
    if (evtimer_add(&e->events[id], &tv) != 0)
        bench_die("libevent: evtimer_add failed");
}

static void cancel(void *impl, uint32_t id)
{
    struct evt_impl *e = impl;
    if (evtimer_del(&e->events[id]) != 0)
        bench_die("libevent: evtimer_del failed");
}

static void rearm(void *impl, uint32_t id, uint64_t deadline)
{
    struct evt_impl *e = impl;
    if (e->common && deadline - sim_now() == W2_TIMEOUT) {
        if (evtimer_add(&e->events[id], e->common) != 0)
            bench_die("libevent: evtimer_add (common) failed");
        return;
    }
    arm(impl, id, deadline);
}

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct evt_impl *e = impl;
    struct event *ev = &e->events[id];
    if (first - sim_now() != period)
        bench_die("libevent: a persistent timer's first deadline must be "
                  "now + period");
    event_assign(ev, e->base, -1, EV_PERSIST, on_timer, (void *)(uintptr_t)id);
    struct timeval tv = ms_to_tv(period);
    if (event_add(ev, &tv) != 0)
        bench_die("libevent: event_add (persist) failed");
}

static void advance(void *impl, uint64_t now)
{
    struct evt_impl *e = impl;
    bench_fakeclock_set(now);
    if (event_base_loop(e->base, EVLOOP_NONBLOCK) < 0)
        bench_die("libevent: event_base_loop failed");
}

static const char *skip_common(const char *wl)
{
    if (!strcmp(wl, "W2"))
        return NULL;
    return "common timeouts serve one duration: W2 only";
}

const struct bench_impl impl_libevent = {
    .name = "libevent",
    .node_size = sizeof(struct event),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = rearm,
    .arm_periodic = arm_periodic,
    .advance = advance,
    .version = event_get_version,
};

const struct bench_impl impl_libevent_common = {
    .name = "libevent-common",
    .skip = skip_common,
    .node_size = sizeof(struct event),
    .create = create_common,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = rearm,
    .arm_periodic = arm_periodic,
    .advance = advance,
    .version = event_get_version,
};
