/* SPDX-License-Identifier: MIT */
/*
 * impl_libuv.c - the real libuv (Debian's libuv1), uv_timer_t on a private
 * uv_loop_t.  libuv keeps timers in a binary min-heap of pointers to the
 * handles (a node comparison dereferences both handles), ties broken by a
 * start id; a timer fires when its timeout <= loop->time (exact, never
 * early, in ms).
 *
 * How the simulated clock is driven.  libuv has no way to inject time:
 * uv_update_time() and every uv_run() re-read the system clock
 * (uv__hrtime -> clock_gettime), and writing loop->time by hand is undone by
 * the next uv_run().  So the clock itself is simulated (fakeclock.c: the
 * executable interposes clock_gettime, which libuv.so calls through its
 * PLT), and libuv runs unmodified in simulated time:
 *   arm(id, D)      uv_timer_start(h, cb, D - uv_now(loop), 0): relative to
 *                   the loop's cached time, which always equals the
 *                   simulated tick (set by the last advance or create);
 *   cancel          uv_timer_stop;
 *   rearm (W2)      uv_timer_start on the active handle: libuv's own re-arm
 *                   (it stops and starts; uv_timer_again is the same with a
 *                   repeat);
 *   periodic (W5)   uv_timer_start(h, cb, first - now, period): libuv
 *                   re-arms a repeating timer at loop->time + repeat when it
 *                   runs it, which equals deadline + period here because
 *                   the loop is advanced tick by tick (it would drift if a
 *                   fire were late - libuv#2259 - but none is);
 *   advance(now)    set the fake clock to now, uv_run(UV_RUN_NOWAIT): one
 *                   loop iteration (update time, run due timers, idle,
 *                   prepare, poll, check, close).  With no descriptor
 *                   watched, uv__io_poll returns without a syscall, so the
 *                   figure is libuv's user-space cost.
 * Node = uv_timer_t (the id travels in handle->data), 152 bytes on x86-64.
 * Every workload W1-W5 runs honestly this way; W4's "advance" is one
 * non-blocking loop iteration (what a libuv program pays per wake-up).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stddef.h>
#include <stdlib.h>
#include <uv.h>

struct uv_impl {
    uv_loop_t loop;
    uv_timer_t *timers;
    uint32_t n;
};

static void on_timer(uv_timer_t *t)
{
    bench_fired((uint32_t)(uintptr_t)t->data);
}

static void *create(uint32_t n, uint64_t now)
{
    struct uv_impl *u = malloc(sizeof *u);
    if (!u)
        bench_die("libuv: out of memory");
    bench_fakeclock_set(now);
    bench_fakeclock_enable(true);
    int rc = uv_loop_init(&u->loop);
    if (rc != 0)
        bench_die("uv_loop_init: %s", uv_strerror(rc));
    u->timers = malloc((size_t)n * sizeof *u->timers);
    if (!u->timers)
        bench_die("libuv: out of memory for %u timers", n);
    u->n = n;
    for (uint32_t i = 0; i < n; i++) {
        uv_timer_init(&u->loop, &u->timers[i]);
        u->timers[i].data = (void *)(uintptr_t)i;
    }
    uv_update_time(&u->loop);
    if (uv_now(&u->loop) != now)
        bench_die("libuv: loop time %llu, simulated %llu: the fake clock "
                  "does not reach libuv",
                  (unsigned long long)uv_now(&u->loop),
                  (unsigned long long)now);
    return u;
}

/* Teardown only (never measured): stop every pending timer in reverse
 * breadth-first order of libuv's heap tree, so each uv_timer_stop removes
 * the last node and sifts nothing.  Stopping 1e7 timers in id order costs a
 * sift each, ~15 s, which the budget cannot afford.  This reads two private
 * fields of the installed headers (loop->timer_heap, handle->heap_node) to
 * find the order; the stops themselves are the public uv_timer_stop. */
static void stop_all(struct uv_impl *u)
{
    size_t count = u->loop.timer_heap.nelts, head = 0, tail = 0;
    void ***queue = malloc((count + 1) * sizeof *queue);
    if (!queue)
        bench_die("libuv: out of memory for teardown");
    if (u->loop.timer_heap.min)
        queue[tail++] = u->loop.timer_heap.min;
    while (head < tail && tail <= count) {
        void **node = queue[head++]; /* {left, right, parent} */
        if (node[0])
            queue[tail++] = node[0];
        if (node[1])
            queue[tail++] = node[1];
    }
    while (tail > 0) {
        char *node = (char *)queue[--tail];
        uv_timer_stop(
            (uv_timer_t *)(void *)(node - offsetof(uv_timer_t, heap_node)));
    }
    free(queue);
}

static void destroy(void *impl)
{
    struct uv_impl *u = impl;
    stop_all(u);
    for (uint32_t i = 0; i < u->n; i++)
        uv_close((uv_handle_t *)&u->timers[i], NULL);
    uv_run(&u->loop, UV_RUN_NOWAIT); /* runs the close queue */
    int rc = uv_loop_close(&u->loop);
    if (rc != 0)
        bench_die("uv_loop_close: %s", uv_strerror(rc));
    bench_fakeclock_enable(false);
    free(u->timers);
    free(u);
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct uv_impl *u = impl;
    uv_timer_start(&u->timers[id], on_timer, deadline - uv_now(&u->loop), 0);
}

static void cancel(void *impl, uint32_t id)
{
    struct uv_impl *u = impl;
    uv_timer_stop(&u->timers[id]);
}

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct uv_impl *u = impl;
    uv_timer_start(&u->timers[id], on_timer, first - uv_now(&u->loop), period);
}

static void advance(void *impl, uint64_t now)
{
    struct uv_impl *u = impl;
    bench_fakeclock_set(now);
    uv_run(&u->loop, UV_RUN_NOWAIT);
}

const struct bench_impl impl_libuv = {
    .name = "libuv",
    .node_size = sizeof(uv_timer_t),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = arm,
    .arm_periodic = arm_periodic,
    .advance = advance,
    .version = uv_version_string,
};
