/* SPDX-License-Identifier: MIT */
/*
 * test_clock.c - rota/clock.h: argument checks, conversions, rounding
 * (now rounds down, deadlines round up) and saturation.  The few tests
 * that read the real clock check only what holds on any machine, however
 * loaded: monotonic readings and brackets taken around each call, with
 * generous slack; never how long anything took.
 */
#include <rota/clock.h>

#include "harness.h"

#include "wide.h" /* exact references */

static uint64_t ceil_div(struct wide ns, uint64_t tick)
{
    return w_min64(w_div_ceil(ns, tick), ROTA_MAX_DEADLINE);
}

/* before + delay, exactly. */
static struct wide sum(uint64_t before, uint64_t delay)
{
    return w_add(w_of(before), w_of(delay));
}

TEST(clock_init_errors)
{
    struct rota_clock c;

    CHECK_EQ_INT(rota_clock_init(NULL, ROTA_CLOCK_MONOTONIC, 1000000),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 0), ROTA_EINVAL);
    CHECK_EQ_INT(rota_clock_init(&c, (enum rota_clock_source)3, 1000000),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_clock_init(&c, (enum rota_clock_source) - 1, 1000000),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1000000), 0);
    CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1), 0);
    CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, UINT64_MAX), 0);
#ifdef __linux__
    CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_MONOTONIC_COARSE, 1000000), 0);
    CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_BOOTTIME, 1000000), 0);
#else
    int rc = rota_clock_init(&c, ROTA_CLOCK_MONOTONIC_COARSE, 1000000);
    CHECK(rc == 0 || rc == ROTA_ENOTSUP);
    /* Only Linux's CLOCK_BOOTTIME is known to count suspend. */
    CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_BOOTTIME, 1000000),
                 ROTA_ENOTSUP);
#endif
}

TEST(ticks_to_ns_saturates)
{
    struct rota_clock c;

    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1000000);
    CHECK_EQ_U64(rota_clock_ns(&c, 0), 0);
    CHECK_EQ_U64(rota_clock_ns(&c, 1), 1000000);
    CHECK_EQ_U64(rota_clock_ns(&c, 12345), 12345000000u);
    CHECK_EQ_U64(rota_clock_ns(&c, UINT64_MAX / 1000000),
                 UINT64_MAX / 1000000 * 1000000);
    CHECK_EQ_U64(rota_clock_ns(&c, UINT64_MAX / 1000000 + 1), UINT64_MAX);
    CHECK_EQ_U64(rota_clock_ns(&c, UINT64_MAX), UINT64_MAX);
    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1);
    CHECK_EQ_U64(rota_clock_ns(&c, UINT64_MAX), UINT64_MAX);
    CHECK_EQ_U64(rota_clock_ns(&c, 77), 77);
    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, UINT64_MAX);
    CHECK_EQ_U64(rota_clock_ns(&c, 0), 0);
    CHECK_EQ_U64(rota_clock_ns(&c, 1), UINT64_MAX);
    CHECK_EQ_U64(rota_clock_ns(&c, 2), UINT64_MAX);
}

TEST(ns_to_ticks_rounds_up_and_saturates)
{
    struct rota_clock c;
    uint64_t seed = h_seed();

    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1000000);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, 0), 0);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, 1), 1);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, 999999), 1);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, 1000000), 1);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, 1000001), 2);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, UINT64_MAX), 18446744073710u);
    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, 5), 5);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, ROTA_MAX_DEADLINE),
                 ROTA_MAX_DEADLINE);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, UINT64_MAX), ROTA_MAX_DEADLINE);
    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 3);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, 7), 3);
    CHECK_EQ_U64(rota_clock_ticks_ceil(&c, UINT64_MAX), UINT64_MAX / 3);
    /* Against 128-bit arithmetic. */
    for (int i = 0; i < 100000; i++) {
        uint64_t tick = h_rand(&seed) >> (h_rand(&seed) % 64);
        uint64_t ns = h_rand(&seed) >> (h_rand(&seed) % 64);
        if (tick == 0)
            tick = 1;
        rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, tick);
        if (!CHECK_EQ_U64(rota_clock_ticks_ceil(&c, ns),
                          ceil_div(w_of(ns), tick))) {
            fprintf(stderr, "    ns %" PRIu64 ", tick %" PRIu64 "\n", ns, tick);
            break;
        }
        uint64_t exp = w_min64(w_mul(ns, tick), UINT64_MAX);
        if (!CHECK_EQ_U64(rota_clock_ns(&c, ns), exp))
            break;
    }
}

TEST(now_rounds_down)
{
    static const uint64_t ticks[] = {1, 7, 1000, 1000000, 1000000000};
    struct rota_clock c;

    for (size_t k = 0; k < sizeof ticks / sizeof ticks[0]; k++) {
        rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, ticks[k]);
        for (int i = 0; i < 1000; i++) {
            uint64_t before = rota_clock_now_ns(&c);
            uint64_t now = rota_clock_now(&c);
            uint64_t after = rota_clock_now_ns(&c);
            /* floor(t / tick) for some t in [before, after] */
            if (!CHECK(before / ticks[k] <= now && now <= after / ticks[k]))
                break;
        }
    }
}

TEST(deadline_after_rounds_up_never_early)
{
    static const uint64_t ticks[] = {1, 7, 1000, 1000000, 1000000000};
    static const uint64_t delays[] = {0,       1,       999999,    1000000,
                                      1000001, 2500000, 1000000000};
    struct rota_clock c;

    for (size_t k = 0; k < sizeof ticks / sizeof ticks[0]; k++) {
        uint64_t tick = ticks[k];
        rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, tick);
        for (size_t j = 0; j < sizeof delays / sizeof delays[0]; j++) {
            uint64_t before = rota_clock_now_ns(&c);
            uint64_t d = rota_clock_deadline_after(&c, delays[j]);
            uint64_t after = rota_clock_now_ns(&c);
            /* The first tick at or after some t + delay, t in the bracket:
             * so never before the real instant. */
            CHECK(d >= ceil_div(sum(before, delays[j]), tick));
            CHECK(d <= ceil_div(sum(after, delays[j]), tick));
            CHECK(w_cmp(w_mul(d, tick), sum(before, delays[j])) >= 0);
            /* A deadline is never before now (ticks). */
            CHECK(d >= before / tick);
        }
    }
    /* The classic early-by-one: now (rounded down) + ticks_ceil(delay) can
     * be a tick early; deadline_after never is.  With 1 s ticks, half a
     * second: deadline_after is the next whole second after the instant. */
    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1000000000);
    uint64_t before = rota_clock_now_ns(&c);
    uint64_t d = rota_clock_deadline_after(&c, 500000000);
    CHECK(w_cmp(w_mul(d, 1000000000u), sum(before, 500000000u)) >= 0);
}

TEST(deadline_after_saturates)
{
    struct rota_clock c;

    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1);
    CHECK_EQ_U64(rota_clock_deadline_after(&c, UINT64_MAX), ROTA_MAX_DEADLINE);
    CHECK_EQ_U64(rota_clock_deadline_after(&c, UINT64_MAX - 1),
                 ROTA_MAX_DEADLINE);
    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1000000);
    uint64_t before = rota_clock_now_ns(&c);
    uint64_t d = rota_clock_deadline_after(&c, UINT64_MAX);
    /* Never early, and never past ROTA_MAX_DEADLINE (whether an overflow
     * of the nanosecond sum gives the exact tick or ROTA_MAX_DEADLINE is
     * the implementation's choice; both are at or after the instant). */
    CHECK(d >= ceil_div(sum(before, UINT64_MAX), 1000000));
    CHECK(d <= ROTA_MAX_DEADLINE);
}

static void monotonic_case(struct rota_clock *c)
{
    uint64_t last_ns = 0, last = 0;

    for (int i = 0; i < 20000; i++) {
        uint64_t ns = rota_clock_now_ns(c), t = rota_clock_now(c);
        if (!CHECK(ns >= last_ns && t >= last))
            break;
        last_ns = ns;
        last = t;
    }
}

TEST(clock_is_monotonic)
{
    struct rota_clock c;

    if (CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1000000), 0))
        monotonic_case(&c);
}

/* ROTA_CLOCK_MONOTONIC_COARSE is Linux's: elsewhere init refuses it, and
 * the coarse tests skip. */
TEST(coarse_clock_is_monotonic)
{
    struct rota_clock c;

    if (rota_clock_init(&c, ROTA_CLOCK_MONOTONIC_COARSE, 1000000) != 0)
        SKIP("no CLOCK_MONOTONIC_COARSE on this system");
    monotonic_case(&c);
}

TEST(coarse_clock_tracks_monotonic)
{
    struct rota_clock fine, coarse;

    if (rota_clock_init(&coarse, ROTA_CLOCK_MONOTONIC_COARSE, 1000000) != 0)
        SKIP("no CLOCK_MONOTONIC_COARSE on this system");
    rota_clock_init(&fine, ROTA_CLOCK_MONOTONIC, 1000000);
    /* Same time base, coarser steps.  A coarse reading is the fine clock
     * at its last update, so it may lag a fine reading taken after it by
     * its resolution (a few ms) - allow a generous second, for a thread
     * descheduled between the two reads - and never runs ahead of it by
     * more than that resolution (allow 100 ms). */
    for (int i = 0; i < 100; i++) {
        uint64_t c0 = rota_clock_now_ns(&coarse);
        uint64_t f = rota_clock_now_ns(&fine);
        CHECK(c0 <= f + 100000000u);
        CHECK(f <= c0 + 1000000000u);
        /* The present first: read after the deadline, it could be a
         * tick later (the order of a comparison's operands is not
         * fixed), which is the clock moving, not an early deadline. */
        uint64_t now = rota_clock_now(&coarse);
        CHECK(rota_clock_deadline_after(&coarse, 5000000) >= now + 5);
    }
}

TEST(clock_drives_a_wheel)
{
    /* The intended use, with no timing assertion: a timer armed with
     * deadline_after() is not due at the now() read right after. */
    struct rota_clock c;
    struct rota_wheel w;
    struct rota_timer t;
    struct rota_timer *out[1];
    size_t n = 0;

    rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1000000);
    rota_wheel_init(&w, rota_clock_now(&c));
    rota_timer_init(&t, NULL);
    uint64_t before = rota_clock_now_ns(&c);
    rota_timer_arm_at(&w, &t,
                      rota_clock_deadline_after(&c, 50000000)); /* 50 ms */
    uint64_t now = rota_clock_now(&c);
    uint64_t after = rota_clock_now_ns(&c);
    uint64_t deadline = rota_timer_deadline(&t);
    CHECK(w_cmp(w_mul(deadline, 1000000u), sum(before, 50000000u)) >= 0);
    CHECK_EQ_INT(rota_wheel_expire(&w, now, out, 1, &n), 0);
    size_t first = n;
    if (after - before < 50000000u) /* unless this thread slept 50 ms */
        CHECK_EQ_U64(first, 0);
    CHECK_EQ_INT(rota_wheel_expire(&w, deadline, out, 1, &n), 0);
    CHECK_EQ_U64(first + n, 1); /* due exactly at its deadline */
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(clock_init_errors),
        H_TEST(ticks_to_ns_saturates),
        H_TEST(ns_to_ticks_rounds_up_and_saturates),
        H_TEST(now_rounds_down),
        H_TEST(deadline_after_rounds_up_never_early),
        H_TEST(deadline_after_saturates),
        H_TEST(clock_is_monotonic),
        H_TEST(coarse_clock_is_monotonic),
        H_TEST(coarse_clock_tracks_monotonic),
        H_TEST(clock_drives_a_wheel),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
