/* SPDX-License-Identifier: MIT */
/*
 * test_diff.c - the wheel against the reference model (model/) under
 * random operation streams, on a fake clock.
 *
 * The stream (model/driver.c) mixes every operation of rota.h, with
 * deadlines and clock steps chosen to hit the geometry of the wheel that
 * ships (rota.h's ROTA_WHEEL_BITS and ROTA_WHEEL_LEVELS): ties, level spans
 * 2^(8k) = 256, 65536, 2^24 ... 2^56 and their neighbours, level boundaries
 * (multiples of those spans, +-1), huge delays, saturation, backwards
 * clocks; callbacks act on other timers during a pass.  Runs cover five
 * starting times (0; 65536 - 37 and 2^40 - 97, just below a level boundary;
 * 1e6 and UINT64_MAX - 2^30, different bits in every level) and pools of
 * 64, 300 and 2000 timers; about 1.2 million operations in all
 * (ROTA_TEST_SCALE=small: ~50,000; a sanitizer build: ~300,000).  The run
 * prints, for each level, how many delays were within a tick of its span,
 * how many deadlines and clock steps landed within a tick of one of its
 * boundaries and how many steps crossed one, and fails if any level was
 * never aimed at: a generator that drifts from the wheel's
 * geometry cannot pass unnoticed.  The same goes for periodic timers: each
 * missed-tick policy must have fired late by less than a period, by exactly
 * one period and by more.
 *
 * First the comparison proves it can fail: each planted fault (a fired timer
 * dropped from the record, two fires swapped, the model asked one tick
 * late so a timer looks early) must be reported at the operation that
 * planted it.  So must a walk with rota_wheel_foreach() that hides one
 * visit, and a rota_timer_remaining() a tick off.
 *
 * Environment: ROTA_SEED repeats a run; ROTA_DIFF_RUN=i runs only run i;
 * ROTA_TRACE=n prints every operation from number n on (stderr).
 */
#include <rota.h>

#include "harness.h"
#include "model/driver.h"

/* Sanitizer builds (Debug, ASan + UBSan) run ~15x slower: a quarter of
 * the operations there keeps that stage near half a minute. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DIFF_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DIFF_SANITIZED 1
#endif
#endif
#ifndef DIFF_SANITIZED
#define DIFF_SANITIZED 0
#endif

static uint64_t prng_next(void *ctx, uint64_t bound)
{
    uint64_t x = h_rand(ctx);
    return bound == 0 ? x : x % bound;
}

static uint64_t master_seed;

/* Summed over the runs: index = level. */
static struct drv_geometry geometry[ROTA_WHEEL_LEVELS];
/* Periodic fires by policy and lateness (driver.h). */
static uint64_t periodic[3][3];

struct run {
    uint64_t start;
    size_t pool;
    uint64_t ops;
};

/* Runs one stream; returns the number of operations done (0 on failure). */
static uint64_t run_one(unsigned index, const struct run *r, uint64_t seed,
                        bool *ok)
{
    uint64_t state = seed;
    struct drv_src src = {prng_next, NULL, &state};
    struct drv_config cfg = {0};
    uint64_t ops = 0;

    cfg.pool = r->pool;
    cfg.start = r->start;
    cfg.fault = DRV_FAULT_NONE;
    cfg.trace_from = h_env("ROTA_TRACE", UINT64_MAX);
    cfg.full_every = r->pool <= 300 ? 1 : 16;
    struct drv *d = drv_new(&cfg, src);
    if (!CHECK(d != NULL))
        return 0;
    int rc = 0;
    while (ops < r->ops && (rc = drv_step(d)) == 0)
        ops++;
    for (unsigned k = 1; k < ROTA_WHEEL_LEVELS; k++) {
        struct drv_geometry g;
        drv_geometry(d, k, &g);
        geometry[k].span = g.span;
        geometry[k].span_delays += g.span_delays;
        geometry[k].near_deadlines += g.near_deadlines;
        geometry[k].near_steps += g.near_steps;
        geometry[k].crossings += g.crossings;
    }
    for (int p = 0; p < 3; p++)
        for (int l = 0; l < 3; l++)
            periodic[p][l] += drv_periodic_fires(d, p, l);
    uint64_t fires = drv_fires(d), actions = drv_actions(d);
    uint64_t restarts = drv_restarts(d);
    double pending = drv_avg_pending(d);
    if (!CHECK_EQ_INT(rc, 0)) {
        fprintf(stderr,
                "run %u (start %" PRIu64 ", %zu timers, run seed %" PRIu64
                "): %s\n"
                "reproduce: ROTA_SEED=%" PRIu64 " ROTA_DIFF_RUN=%u "
                "ROTA_TRACE=%" PRIu64 " %s\n",
                index, r->start, r->pool, seed, drv_error(d), master_seed,
                index, ops > 30 ? ops - 30 : 0, "test_diff diff_random");
        *ok = false;
    }
    if (!CHECK_EQ_INT(drv_finish(d), rc == 0 ? 0 : -1))
        *ok = false;
    printf("  run %2u: start %-20" PRIu64 " %4zu timers: %7" PRIu64
           " ops, %7" PRIu64 " fires, %6" PRIu64
           " callback ops, %.0f pending on average, %" PRIu64 " restarts%s\n",
           index, r->start, r->pool, ops, fires, actions, pending, restarts,
           rc == 0 ? "" : "  FAILED");
    fflush(stdout);
    return ops;
}

TEST(diff_random)
{
    static const uint64_t starts[] = {
        0, ((uint64_t)1 << (2 * ROTA_WHEEL_BITS)) - 37, 1000000,
        ((uint64_t)1 << (5 * ROTA_WHEEL_BITS)) - 97,
        UINT64_MAX - ((uint64_t)1 << 30)};
    static const size_t pools[] = {64, 300, 2000};
    static const uint64_t ops_normal[] = {120000, 80000, 40000};
    bool small = h_small();
    uint64_t only = h_env("ROTA_DIFF_RUN", UINT64_MAX);
    uint64_t seeds = master_seed, total = 0;
    unsigned index = 0;
    bool ok = true;
    struct timespec t0, t1;

    timespec_get(&t0, TIME_UTC);
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++) {
        for (size_t p = 0; p < sizeof pools / sizeof pools[0]; p++, index++) {
            struct run r = {starts[s], pools[p],
                            small            ? ops_normal[p] / 24
                            : DIFF_SANITIZED ? ops_normal[p] / 4
                                             : ops_normal[p]};
            uint64_t seed = h_rand(&seeds);
            if (only != UINT64_MAX && only != index)
                continue;
            total += run_one(index, &r, seed, &ok);
        }
    }
    timespec_get(&t1, TIME_UTC);
    double secs = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("  %" PRIu64 " operations in %.1f s\n", total, secs);
    CHECK(ok);
    if (only != UINT64_MAX)
        return;
    CHECK(total >= (small ? 45000u : DIFF_SANITIZED ? 250000u : 1000000u));
    printf("  level  span                  span delays  near deadlines  "
           "near steps  crossings\n");
    for (unsigned k = 1; k < ROTA_WHEEL_LEVELS; k++) {
        const struct drv_geometry *g = &geometry[k];
        printf("  %5u  %-20" PRIu64 "  %11" PRIu64 "  %14" PRIu64 "  %10" PRIu64
               "  %9" PRIu64 "\n",
               k, g->span, g->span_delays, g->near_deadlines, g->near_steps,
               g->crossings);
        CHECK_EQ_U64(g->span, (uint64_t)1 << (ROTA_WHEEL_BITS * k));
        /* Every level's boundaries were aimed at, by deadlines and by the
         * clock, and the clock crossed them (a small run, ~50,000
         * operations, lands on the top levels' boundaries only by luck:
         * there only deadlines and the three low levels must be hit). */
        CHECK(g->span_delays > 0);
        CHECK(g->near_deadlines > 0);
        if (!small || k <= 3) {
            CHECK(g->near_steps > 0);
            CHECK(g->crossings > 0);
        }
    }
    /* Every missed-tick policy fired late by less than a period (all keep
     * the schedule), by exactly one (the next point is due too) and by
     * more, each compared with the model. */
    static const char *const policy[] = {"SKIP", "BURST", "DELAY"};
    printf("  periodic fires  late < period  late == period  late > period\n");
    for (int p = 0; p < 3; p++) {
        printf("  %-14s  %13" PRIu64 "  %14" PRIu64 "  %13" PRIu64 "\n",
               policy[p], periodic[p][0], periodic[p][1], periodic[p][2]);
        for (int l = 0; l < 3; l++)
            CHECK(periodic[p][l] > 0);
    }
}

/* The comparison must catch a planted fault, at the operation that
 * planted it. */
static void selftest(int fault, const char *name)
{
    uint64_t state = master_seed ^ (uint64_t)fault * 0x5851f42d4c957f2du;
    struct drv_src src = {prng_next, NULL, &state};
    struct drv_config cfg = {0};
    uint64_t at = 0;
    int rc = 0;

    cfg.pool = 64;
    cfg.start = 1000000;
    cfg.fault = fault;
    cfg.trace_from = UINT64_MAX;
    cfg.full_every = 1;
    struct drv *d = drv_new(&cfg, src);
    if (!CHECK(d != NULL))
        return;
    for (uint64_t i = 0; i < 200000 && (rc = drv_step(d)) == 0; i++)
        ;
    CHECK_EQ_INT(rc, -1);
    if (CHECK(drv_fault_applied(d, &at))) {
        CHECK_EQ_U64(drv_ops(d), at + 1); /* failed at the planting op */
        printf("  planted fault \"%s\" at op %" PRIu64 " was caught: %s\n",
               name, at, drv_error(d) ? drv_error(d) : "(no error!)");
    } else {
        printf("  planted fault \"%s\" was never planted; the run ended "
               "with: %s\n",
               name, drv_error(d) ? drv_error(d) : "(no error)");
    }
    drv_finish(d);
}

TEST(diff_catches_dropped_fire)
{
    selftest(DRV_FAULT_DROP, "a fired timer dropped from the record");
}

TEST(diff_catches_swapped_fires)
{
    selftest(DRV_FAULT_SWAP, "two fires with different deadlines swapped");
}

TEST(diff_catches_early_fire)
{
    selftest(DRV_FAULT_EARLY, "model asked with now + 1");
}

TEST(diff_catches_missed_visit)
{
    selftest(DRV_FAULT_WALK, "a timer rota_wheel_foreach() visited hidden");
}

TEST(diff_catches_wrong_remaining)
{
    selftest(DRV_FAULT_REMAINING, "the model's remaining() one tick more");
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(diff_catches_dropped_fire),
        H_TEST(diff_catches_swapped_fires),
        H_TEST(diff_catches_early_fire),
        H_TEST(diff_catches_missed_visit),
        H_TEST(diff_catches_wrong_remaining),
        H_TEST(diff_random),
    };
    master_seed = h_seed();
    return h_main(argc, argv, tests, H_COUNT(tests));
}
