/*
 * impl_rota.c - rota through its public API only (rota.h), linked from the
 * real library (rota_static).
 *
 * Mapping: one struct rota_wheel (allocated here, so MEM counts it) driven
 * with the simulated tick as its time; one node per timer = a bare struct
 * rota_timer in one array, its id being its index there (as a server's
 * array of connections would use it: the callback finds the array from the
 * wheel with rota_container_of, so no id field is stored).  arm = rota_timer_arm, cancel =
 * rota_timer_cancel, advance = rota_wheel_advance, periodic =
 * rota_timer_arm_periodic (ROTA_MISSED_SKIP; never late here anyway).
 * Two variants differ only in W2's re-arm:
 *   "rota"        re-arms with rota_timer_arm (moves the timer at once);
 *   "rota-touch"  uses rota_timer_touch (a later deadline is a store; the
 *                 timer is re-filed when its old slot comes due).
 * rota-touch runs W2 only: everywhere else it would repeat rota's numbers.
 * Nothing is driven dishonestly: the wheel takes time from its caller.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <rota.h>
#include <stdlib.h>

struct rota_impl {
    struct rota_wheel wheel;
    struct rota_timer *nodes;
};

static void on_fire(struct rota_wheel *wheel, struct rota_timer *timer,
                    uint64_t late)
{
    struct rota_impl *r = rota_container_of(wheel, struct rota_impl, wheel);

    (void)late;
    bench_fired((uint32_t)(timer - r->nodes));
}

static void *create(uint32_t n, uint64_t now)
{
    struct rota_impl *r = malloc(sizeof *r);
    if (!r)
        bench_die("rota: out of memory");
    r->nodes = malloc((size_t)n * sizeof *r->nodes);
    if (!r->nodes)
        bench_die("rota: out of memory for %u nodes", n);
    if (rota_wheel_init(&r->wheel, now) != 0)
        bench_die("rota_wheel_init failed");
    for (uint32_t i = 0; i < n; i++)
        rota_timer_init(&r->nodes[i], on_fire);
    return r;
}

/* The wheel holds nothing outside this allocation and the timers, and both
 * go together, so there is nothing to drain first (rota.h, OWNERSHIP).
 * Draining 1e7 timers would walk every list: seconds of teardown. */
static void destroy(void *impl)
{
    struct rota_impl *r = impl;
    free(r->nodes);
    free(r);
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct rota_impl *r = impl;
    int rc = rota_timer_arm(&r->wheel, &r->nodes[id], deadline);
    if (rc != 0)
        bench_die("rota_timer_arm: %s", rota_strerror(rc));
}

static void cancel(void *impl, uint32_t id)
{
    struct rota_impl *r = impl;
    int rc = rota_timer_cancel(&r->wheel, &r->nodes[id]);
    if (rc != 1)
        bench_die("rota_timer_cancel returned %d for a pending timer", rc);
}

static void touch(void *impl, uint32_t id, uint64_t deadline)
{
    struct rota_impl *r = impl;
    int rc = rota_timer_touch(&r->wheel, &r->nodes[id], deadline);
    if (rc == ROTA_ENOENT) /* it just fired: touch-or-arm, as a user would */
        rc = rota_timer_arm(&r->wheel, &r->nodes[id], deadline);
    if (rc != 0)
        bench_die("rota_timer_touch: %s", rota_strerror(rc));
}

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct rota_impl *r = impl;
    int rc = rota_timer_arm_periodic(&r->wheel, &r->nodes[id], first, period,
                                     ROTA_MISSED_SKIP);
    if (rc != 0)
        bench_die("rota_timer_arm_periodic: %s", rota_strerror(rc));
}

static void advance(void *impl, uint64_t now)
{
    struct rota_impl *r = impl;
    int rc = rota_wheel_advance(&r->wheel, now);
    if (rc < 0)
        bench_die("rota_wheel_advance: %s", rota_strerror(rc));
}

static const char *touch_skip(enum bench_workload wl)
{
    if (wl == WL_W2)
        return NULL;
    return "rota-touch differs from rota only in W2's re-arm";
}

static const char *rota_skip(enum bench_workload wl)
{
    if (wl == WL_W6)
        return "W6 runs in bench_keyed (rota/keyed.h), not in rota_bench";
    return NULL;
}

const struct bench_impl impl_rota = {
    .name = "rota",
    .skip = rota_skip,
    .node_size = sizeof(struct rota_timer),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = arm,
    .arm_periodic = arm_periodic,
    .advance = advance,
    .version = rota_version,
};

const struct bench_impl impl_rota_touch = {
    .name = "rota-touch",
    .skip = touch_skip,
    .node_size = sizeof(struct rota_timer),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = touch,
    .arm_periodic = arm_periodic,
    .advance = advance,
    .version = rota_version,
};
