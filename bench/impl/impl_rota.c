/* SPDX-License-Identifier: MIT */
/*
 * impl_rota.c - rota through its public API only (rota.h), linked from the
 * real library (rota_static).
 *
 * Mapping: one struct rota_wheel (allocated here, so MEM counts it) driven
 * with the simulated tick as its time; one node per timer = a bare struct
 * rota_timer in one array, its id being its index there (as a server's
 * array of connections would use it: the callback finds the array from the
 * wheel with rota_container_of, so no id field is stored).  arm =
 * rota_timer_arm_at, cancel = rota_timer_cancel, advance =
 * rota_wheel_advance, periodic = rota_periodic_arm_at (ROTA_MISSED_SKIP;
 * never late here anyway) on an array of struct rota_periodic made at the
 * first periodic arm, as a user who needs periodic timers embeds those.
 * Three variants differ only in W2's re-arm:
 *   "rota"        uses rota_timer_touch_at, the refresh rota.h tells users to
 *                 write (checks the timer, then a later deadline is a
 *                 store; the timer is re-filed when its old slot comes due);
 *                 W7 refreshes the same way and advances with
 *                 rota_wheel_advance_max();
 *   "rota-arm"    re-arms with rota_timer_arm_at (moves the timer at once),
 *                 in W2 and in W8 (whose rota moves by touch: a later
 *                 deadline is a store, an earlier one a move);
 *   "rota-store"  uses rota_timer_touch_at_unchecked, the one-store touch,
 *                 whose preconditions W2 keeps as a server would: every
 *                 timer stays pending (an expiry re-arms it, with
 *                 rota_timer_arm_at since a one-shot is idle in its callback:
 *                 the adapter knows when it is inside one) and each new
 *                 deadline, now + 30000, is at least the old one.
 *   "rota-slack"  W7 with timer slack: an idle timeout of 30 s +- 1 s.
 *                 Every deadline d the workload asks for becomes the window
 *                 [d - 1000, d + 1000]: rota_timer_touch_range_at() to refresh
 *                 (nothing is stored while the deadline is inside the new
 *                 window), rota_timer_arm_range_at() to arm.  Its kicks fire
 *                 at other ticks than the exact implementations', so it is
 *                 not cross-checked with them; instead every pick is
 *                 checked to lie in its window, and every fire to come in
 *                 the first advance at or after the pick.
 * rota-arm runs W2 and W8, rota-store W2, rota-slack W7: elsewhere they
 * would repeat rota.
 * Nothing is driven dishonestly: the wheel takes time from its caller.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <rota.h>
#include <stdlib.h>
#include <string.h>

struct rota_impl {
    struct rota_wheel wheel;
    struct rota_timer *nodes;
    struct rota_periodic *periodic; /* W5's timers, NULL until then */
    uint32_t n;
    bool in_callback;
};

static void on_fire_periodic(struct rota_wheel *wheel, struct rota_timer *timer,
                             uint64_t late)
{
    struct rota_impl *r = rota_container_of(wheel, struct rota_impl, wheel);
    struct rota_periodic *p =
        rota_container_of(timer, struct rota_periodic, timer);

    (void)late;
    bench_fired((uint32_t)(p - r->periodic));
}

static void on_fire(struct rota_wheel *wheel, struct rota_timer *timer,
                    uint64_t late)
{
    struct rota_impl *r = rota_container_of(wheel, struct rota_impl, wheel);

    (void)late;
    bench_fired((uint32_t)(timer - r->nodes));
}

/* rota-store's: its re-arm must know whether it runs inside a callback
 * (touch_unchecked()), which the other variants need not pay for. */
static void on_fire_store(struct rota_wheel *wheel, struct rota_timer *timer,
                          uint64_t late)
{
    struct rota_impl *r = rota_container_of(wheel, struct rota_impl, wheel);

    r->in_callback = true;
    on_fire(wheel, timer, late);
    r->in_callback = false;
}

static void *create(uint32_t n, uint64_t now)
{
    struct rota_impl *r = malloc(sizeof *r);
    if (!r)
        bench_die("rota: out of memory");
    r->in_callback = false;
    r->periodic = NULL;
    r->n = n;
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
    free(r->periodic);
    free(r);
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct rota_impl *r = impl;
    int rc = rota_timer_arm_at(&r->wheel, &r->nodes[id], deadline);
    if (rc != 0)
        bench_die("rota_timer_arm_at: %s", rota_strerror(rc));
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
    int rc = rota_timer_touch_at(&r->wheel, &r->nodes[id], deadline);
    if (rc == ROTA_ENOENT) /* it just fired: touch-or-arm, as a user would */
        rc = rota_timer_arm_at(&r->wheel, &r->nodes[id], deadline);
    if (rc != 0)
        bench_die("rota_timer_touch_at: %s", rota_strerror(rc));
}

static void touch_unchecked(void *impl, uint32_t id, uint64_t deadline)
{
    struct rota_impl *r = impl;
    if (r->in_callback) /* the timer firing now is idle: arm it again */
        arm(impl, id, deadline);
    else
        rota_timer_touch_at_unchecked(&r->wheel, &r->nodes[id], deadline);
}

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct rota_impl *r = impl;
    if (r->periodic == NULL) {
        r->periodic = malloc((size_t)r->n * sizeof *r->periodic);
        if (!r->periodic)
            bench_die("rota: out of memory for %u periodic timers", r->n);
        for (uint32_t i = 0; i < r->n; i++)
            rota_periodic_init(&r->periodic[i], on_fire_periodic);
    }
    int rc = rota_periodic_arm_at(&r->wheel, &r->periodic[id], first, period,
                                  ROTA_MISSED_SKIP);
    if (rc != 0)
        bench_die("rota_periodic_arm_at: %s", rota_strerror(rc));
}

static void cancel_periodic(void *impl, uint32_t id)
{
    struct rota_impl *r = impl;
    int rc = rota_timer_cancel(&r->wheel, &r->periodic[id].timer);
    if (rc != 1)
        bench_die("rota_timer_cancel returned %d for a pending periodic timer",
                  rc);
}

static void advance(void *impl, uint64_t now)
{
    struct rota_impl *r = impl;
    int rc = rota_wheel_advance(&r->wheel, now);
    if (rc < 0)
        bench_die("rota_wheel_advance: %s", rota_strerror(rc));
}

static bool advance_max(void *impl, uint64_t now, size_t limit)
{
    struct rota_impl *r = impl;
    int rc = rota_wheel_advance_max(&r->wheel, now, limit, NULL);
    if (rc < 0)
        bench_die("rota_wheel_advance_max: %s", rota_strerror(rc));
    return rc == 1;
}

static const char *arm_skip(const char *wl)
{
    if (!strcmp(wl, "W2") || !strcmp(wl, "W8"))
        return NULL;
    return "rota-arm differs from rota only in W2's and W8's re-arm";
}

static const char *store_skip(const char *wl)
{
    if (!strcmp(wl, "W2"))
        return NULL;
    return "rota-store differs from rota only in W2's re-arm";
}

static void *store_create(uint32_t n, uint64_t now)
{
    struct rota_impl *r = create(n, now);
    for (uint32_t i = 0; i < n; i++)
        rota_timer_init(&r->nodes[i], on_fire_store);
    return r;
}

/* ---------------------------------------------------------- rota-slack */

#define SLACK 1000u     /* ticks (ms) either side of the asked-for deadline */
#define W7_TICK_MS 100u /* the loop's tick (workloads.c): the latest fire */

/* Fired in the first advance at or after its picked deadline (the pick was
 * checked against the window when it was made). */
static void on_fire_slack(struct rota_wheel *wheel, struct rota_timer *timer,
                          uint64_t late)
{
    uint64_t now = rota_wheel_now(wheel), d = rota_timer_deadline(timer);

    if (now < d || now - d >= W7_TICK_MS || late != now - d)
        bench_die("rota-slack: a timer picked for %llu fired at %llu",
                  (unsigned long long)d, (unsigned long long)now);
    on_fire(wheel, timer, late);
}

static void *slack_create(uint32_t n, uint64_t now)
{
    struct rota_impl *r = create(n, now);
    for (uint32_t i = 0; i < n; i++)
        rota_timer_init(&r->nodes[i], on_fire_slack);
    return r;
}

/* The pick must lie in the window (a load of the line just written). */
static void check_pick(const struct rota_timer *t, uint64_t lo, uint64_t hi)
{
    uint64_t d = rota_timer_deadline(t);
    if (d < lo || d > hi)
        bench_die("rota-slack: deadline %llu outside the window [%llu, %llu]",
                  (unsigned long long)d, (unsigned long long)lo,
                  (unsigned long long)hi);
}

static void slack_arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct rota_impl *r = impl;
    uint64_t lo = deadline - SLACK, hi = deadline + SLACK; /* no wrap here */
    int rc = rota_timer_arm_range_at(&r->wheel, &r->nodes[id], lo, hi);
    if (rc != 0)
        bench_die("rota_timer_arm_range_at: %s", rota_strerror(rc));
    check_pick(&r->nodes[id], lo, hi);
}

static void slack_touch(void *impl, uint32_t id, uint64_t deadline)
{
    struct rota_impl *r = impl;
    uint64_t lo = deadline - SLACK, hi = deadline + SLACK;
    int rc = rota_timer_touch_range_at(&r->wheel, &r->nodes[id], lo, hi);
    if (rc == ROTA_ENOENT) /* it was kicked: arm it again */
        rc = rota_timer_arm_range_at(&r->wheel, &r->nodes[id], lo, hi);
    if (rc != 0)
        bench_die("rota_timer_touch_range_at: %s", rota_strerror(rc));
    check_pick(&r->nodes[id], lo, hi);
}

static const char *slack_skip(const char *wl)
{
    if (!strcmp(wl, "W7"))
        return NULL;
    return "rota-slack differs from rota only in W7's timeouts (with slack)";
}

const struct bench_impl impl_rota_slack = {
    .name = "rota-slack",
    .skip = slack_skip,
    .node_size = sizeof(struct rota_timer),
    .create = slack_create,
    .destroy = destroy,
    .arm = slack_arm,
    .cancel = cancel,
    .rearm = slack_touch,
    .arm_periodic = arm_periodic,
    .cancel_periodic = cancel_periodic,
    .advance = advance,
    .advance_max = advance_max,
    .version = rota_version,
    .inexact =
        "fires within +-1 s of the exact tick; each pick and fire is checked",
};

const struct bench_impl impl_rota = {
    .name = "rota",
    .node_size = sizeof(struct rota_timer),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = touch,
    .arm_periodic = arm_periodic,
    .cancel_periodic = cancel_periodic,
    .advance = advance,
    .advance_max = advance_max,
    .version = rota_version,
};

const struct bench_impl impl_rota_arm = {
    .name = "rota-arm",
    .skip = arm_skip,
    .node_size = sizeof(struct rota_timer),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = arm,
    .arm_periodic = arm_periodic,
    .cancel_periodic = cancel_periodic,
    .advance = advance,
    .version = rota_version,
};

const struct bench_impl impl_rota_store = {
    .name = "rota-store",
    .skip = store_skip,
    .node_size = sizeof(struct rota_timer),
    .create = store_create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = touch_unchecked,
    .arm_periodic = arm_periodic,
    .cancel_periodic = cancel_periodic,
    .advance = advance,
    .version = rota_version,
};
