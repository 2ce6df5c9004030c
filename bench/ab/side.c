/* SPDX-License-Identifier: MIT */
/*
 * side.c - one side of an A/B comparison (ab.sh): the same workload code,
 * compiled once against each build of rota.  ab.sh renames every global
 * symbol of this object and of its library with the side's prefix, so two
 * builds of rota live in one process.  Public API only.
 *
 * Each function runs one segment of a workload on this side's own wheel and
 * timers and returns ns per operation; harness.c alternates the sides
 * segment by segment, so both see the same moments of a noisy machine.
 */
#include <rota.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "ab.h"

/* The same file builds against revisions before and after 0.2's rename of
 * the absolute arm and touch (they gained an _at suffix: 0.1's names are
 * rota_timer_ followed by arm or touch).  ab.sh defines AB_OLD_NAMES when
 * the side's rota.h declares no rota_timer_arm_at; the old names are
 * pasted from pieces so that a rename over this file leaves them alone. */
#ifdef AB_OLD_NAMES
#define AB_OLD_NAME(verb) rota_timer_##verb
#define rota_timer_arm_at AB_OLD_NAME(arm)
#define rota_timer_touch_at AB_OLD_NAME(touch)
#endif

#define REARM_DELAY 30000u /* W2's timeout; also W1's re-arm on expiry */

static struct rota_wheel wheel;
static struct rota_timer *timers;
static struct rota_periodic *periodics;
static uint32_t timer_count;
static uint64_t now;
static uint64_t fires; /* periodic fires, counted by on_tick() */

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* An expiry re-arms its timer, as in W1 and W2: the set stays at N. */
static void on_fire(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)late;
    rota_timer_arm_at(w, t, rota_wheel_now(w) + REARM_DELAY);
}

int ab_setup(uint32_t n, const uint32_t *delays, int rearm)
{
    timers = malloc((size_t)n * sizeof *timers);
    if (timers == NULL)
        return -1;
    timer_count = n;
    now = AB_START_TICK;
    rota_wheel_init(&wheel, now);
    for (uint32_t i = 0; i < n; i++) {
        rota_timer_init(&timers[i], rearm ? on_fire : NULL);
        if (delays != NULL &&
            rota_timer_arm_at(&wheel, &timers[i], now + delays[i]) != 0)
            return -1;
    }
    return 0;
}

/* W1: cancel + arm a random timer; one tick per 1000 ops. */
double ab_churn(const uint32_t *ids, const uint32_t *delays, uint32_t ops)
{
    double t0 = seconds();
    for (uint32_t i = 0, k = 0; i < ops; i++) {
        struct rota_timer *t = &timers[ids[i]];
        if (rota_timer_cancel(&wheel, t) != 1 ||
            rota_timer_arm_at(&wheel, t, now + delays[i]) != 0)
            return -1;
        if (++k == AB_OPS_PER_TICK) {
            k = 0;
            rota_wheel_advance(&wheel, ++now);
        }
    }
    return (seconds() - t0) * 1e9 / ops;
}

/* W2: the checked touch of a random timer to now + 30000; one tick per
 * N / 1000 ops. */
double ab_refresh(const uint32_t *ids, uint32_t ops)
{
    uint32_t per_tick = timer_count / 1000 ? timer_count / 1000 : 1;
    double t0 = seconds();
    for (uint32_t i = 0, k = 0; i < ops; i++) {
        struct rota_timer *t = &timers[ids[i]];
        int rc = rota_timer_touch_at(&wheel, t, now + REARM_DELAY);
        if (rc == ROTA_ENOENT) /* it fired: touch-or-arm */
            rc = rota_timer_arm_at(&wheel, t, now + REARM_DELAY);
        if (rc != 0)
            return -1;
        if (++k == per_tick) {
            k = 0;
            rota_wheel_advance(&wheel, ++now);
        }
    }
    return (seconds() - t0) * 1e9 / ops;
}

/* W3: arm every timer (idle, set up without delays), then advance tick by
 * tick until all have fired.  ns per arm and per expiry. */
int ab_storm(const uint32_t *delays, uint32_t span, double *arm_ns,
             double *expiry_ns)
{
    double t0 = seconds();
    for (uint32_t i = 0; i < timer_count; i++)
        if (rota_timer_arm_at(&wheel, &timers[i], now + delays[i]) != 0)
            return -1;
    double t1 = seconds();
    for (uint32_t i = 0; i < span; i++)
        rota_wheel_advance(&wheel, ++now);
    double t2 = seconds();
    if (rota_wheel_count(&wheel) != 0)
        return -1;
    *arm_ns = (t1 - t0) * 1e9 / timer_count;
    *expiry_ns = (t2 - t1) * 1e9 / timer_count;
    return 0;
}

static void on_tick(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
    fires++;
}

/* W5's set: n periodic timers, the i-th with period periods[i], each first
 * due one period ahead. */
int ab_periodic_setup(uint32_t n, const uint32_t *periods)
{
    periodics = malloc((size_t)n * sizeof *periodics);
    if (periodics == NULL)
        return -1;
    timer_count = n;
    now = AB_START_TICK;
    rota_wheel_init(&wheel, now);
    for (uint32_t i = 0; i < n; i++) {
        rota_periodic_init(&periodics[i], on_tick);
        if (rota_periodic_arm_at(&wheel, &periodics[i], now + periods[i],
                                 periods[i], ROTA_MISSED_SKIP) != 0)
            return -1;
    }
    return 0;
}

/* W5: advance `ticks` ticks one at a time; ns per fire. */
double ab_periodic(uint32_t ticks)
{
    uint64_t before = fires;
    double t0 = seconds();
    for (uint32_t i = 0; i < ticks; i++)
        rota_wheel_advance(&wheel, ++now);
    double t1 = seconds();
    if (fires == before || rota_wheel_count(&wheel) != timer_count)
        return -1;
    return (t1 - t0) * 1e9 / (double)(fires - before);
}
