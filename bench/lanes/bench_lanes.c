/* SPDX-License-Identifier: MIT */
/*
 * bench_lanes.c - rota_bench_lanes: timeout lanes (rota/lanes.h) against
 * the wheel's own paths and hashed-rounds, on the workload lanes are for:
 * every timer has the same duration.
 *
 *   rota_bench_lanes IMPL N      IMPL: lane, wheel or hashed-rounds
 *
 * One process runs one implementation at one N through three phases on a
 * simulated clock (1 tick = 1 ms, duration 30,000 ticks), and prints a
 * line per phase: "IMPL N PHASE OPS NS_PER_OP".
 *   arm     N arms, the clock moving a tick every N / 1000 arms;
 *   touch   N touches of random pending timers (rota: the lane's touch, or
 *           rota_timer_touch_at(now + duration); hashed-rounds: its
 *           re-arm), the clock moving a tick every N / 1000 touches;
 *   expiry  advance a tick at a time until every timer has fired; per fire.
 * Under valgrind's callgrind each phase is dumped under its name
 * (CALLGRIND_DUMP_STATS_AT), so instructions and data references per
 * operation come from the same run (bench/lanes/lanes.sh does both).
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include "callgrind.h"
#include "splitmix.h"

#include <rota.h>
#include <rota/lanes.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DURATION 30000u

extern const struct bench_impl impl_hashed_rounds;

static uint64_t fires;

__attribute__((noinline)) void bench_fired(uint32_t id)
{
    (void)id;
    fires++;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------ the two rotas */

struct lnode {
    struct rota_lane_timer t;
    uint32_t id;
};

struct wnode {
    struct rota_timer t;
    uint32_t id;
};

static struct rota_wheel wheel;
static struct rota_lane lane;
static struct lnode *lnodes;
static struct wnode *wnodes;

static void lane_fire(struct rota_lane *l, struct rota_lane_timer *t,
                      uint64_t late)
{
    (void)l;
    (void)late;
    bench_fired(rota_container_of(t, struct lnode, t)->id);
}

static void wheel_fire(struct rota_wheel *w, struct rota_timer *t,
                       uint64_t late)
{
    (void)w;
    (void)late;
    bench_fired(rota_container_of(t, struct wnode, t)->id);
}

enum impl { LANE, WHEEL, ROUNDS };

static void *rounds;
static uint64_t now;

static void arm(enum impl which, uint32_t id)
{
    switch (which) {
    case LANE:
        rota_lane_arm(&lane, &lnodes[id].t);
        break;
    case WHEEL:
        rota_timer_arm_at(&wheel, &wnodes[id].t, now + DURATION);
        break;
    case ROUNDS:
        impl_hashed_rounds.arm(rounds, id, now + DURATION);
        break;
    }
}

static void touch(enum impl which, uint32_t id)
{
    switch (which) {
    case LANE:
        rota_lane_touch(&lane, &lnodes[id].t);
        break;
    case WHEEL:
        rota_timer_touch_at(&wheel, &wnodes[id].t, now + DURATION);
        break;
    case ROUNDS:
        impl_hashed_rounds.rearm(rounds, id, now + DURATION);
        break;
    }
}

static void advance(enum impl which)
{
    if (which == ROUNDS)
        impl_hashed_rounds.advance(rounds, now);
    else
        rota_wheel_advance(&wheel, now);
}

static void report(const char *impl, uint32_t n, const char *phase,
                   uint64_t ops, uint64_t ns)
{
    printf("%s %u %s %llu %.1f\n", impl, n, phase, (unsigned long long)ops,
           ops ? (double)ns / (double)ops : 0.0);
}

int main(int argc, char **argv)
{
    bench_program = "rota_bench_lanes";
    if (argc != 3) {
        fprintf(stderr, "usage: rota_bench_lanes lane|wheel|hashed-rounds N\n");
        return 2;
    }
    enum impl which;
    if (strcmp(argv[1], "lane") == 0)
        which = LANE;
    else if (strcmp(argv[1], "wheel") == 0)
        which = WHEEL;
    else if (strcmp(argv[1], "hashed-rounds") == 0)
        which = ROUNDS;
    else {
        fprintf(stderr, "rota_bench_lanes: unknown implementation '%s'\n",
                argv[1]);
        return 2;
    }
    uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
    if (n < 1000) {
        fprintf(stderr, "rota_bench_lanes: N must be at least 1000\n");
        return 2;
    }
    uint32_t per_tick = n / 1000;
    now = 1000;
    rota_wheel_init(&wheel, now);
    rota_lane_init(&lane, &wheel, DURATION, lane_fire);
    lnodes = calloc(n, sizeof *lnodes);
    wnodes = calloc(n, sizeof *wnodes);
    uint32_t *order = malloc((size_t)n * sizeof *order);
    if (lnodes == NULL || wnodes == NULL || order == NULL)
        bench_die("out of memory");
    rounds = impl_hashed_rounds.create(n, now);
    for (uint32_t i = 0; i < n; i++) {
        lnodes[i].id = wnodes[i].id = i;
        rota_lane_timer_init(&lnodes[i].t);
        rota_timer_init(&wnodes[i].t, wheel_fire);
    }
    /* Random touch targets, drawn before the phases. */
    uint64_t seed = 0x5eed1a4e5u;
    for (uint32_t i = 0; i < n; i++)
        order[i] = (uint32_t)(splitmix(&seed) % n);

    CALLGRIND_ZERO_STATS;
    uint64_t t0 = mono_ns();
    for (uint32_t i = 0; i < n; i++) {
        arm(which, i);
        if ((i + 1) % per_tick == 0) {
            now++;
            advance(which);
        }
    }
    uint64_t t1 = mono_ns();
    CALLGRIND_DUMP_STATS_AT("arm");
    report(argv[1], n, "arm", n, t1 - t0);

    CALLGRIND_ZERO_STATS;
    t0 = mono_ns();
    for (uint32_t i = 0; i < n; i++) {
        touch(which, order[i]);
        if ((i + 1) % per_tick == 0) {
            now++;
            advance(which);
        }
    }
    t1 = mono_ns();
    CALLGRIND_DUMP_STATS_AT("touch");
    report(argv[1], n, "touch", n, t1 - t0);

    CALLGRIND_ZERO_STATS;
    fires = 0;
    t0 = mono_ns();
    while (fires < n) {
        now++;
        advance(which);
    }
    t1 = mono_ns();
    CALLGRIND_DUMP_STATS_AT("expiry");
    report(argv[1], n, "expiry", fires, t1 - t0);

    impl_hashed_rounds.destroy(rounds);
    free(lnodes);
    free(wnodes);
    free(order);
    return 0;
}
