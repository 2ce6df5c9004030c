/* SPDX-License-Identifier: MIT */
/*
 * test_late.c - how late timers fire, and what a jump of time costs, on a
 * fake clock.
 *
 *   lateness_histogram_counts_each_fire   rota_wheel_lateness(): one count
 *       per fire in the log2 bucket of its `late`, from advance() and
 *       expire(), bucket edges (0, 1, 2..3, 4..7, 2^63 and more) exact;
 *   lateness_histogram_sums_to_fired      the histogram's total equals
 *       stats.fired over a random run;
 *   periodic_jump_of_1e12_periods_is_o1   SKIP and DELAY timers fire once,
 *       with the right next deadline, when the clock jumps 10^12 periods:
 *       their catch-up is a division, not a loop over missed periods (a
 *       loop would run for hours; the bound on the call's time is four
 *       orders of magnitude above what it takes);
 *   periodic_burst_fires_each_missed_point  BURST, by contrast, fires once
 *       per missed point, as rota.h says.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <rota.h>

#include <time.h>

#include "harness.h"

static struct rota_wheel wheel;

static void nop(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
}

static uint64_t total(const struct rota_lateness *h)
{
    uint64_t sum = 0;
    for (unsigned k = 0; k < ROTA_LATE_BUCKETS; k++)
        sum += h->count[k];
    return sum;
}

TEST(lateness_histogram_counts_each_fire)
{
    static struct rota_timer t[8];
    struct rota_lateness h;

    rota_wheel_init(&wheel, 100);
    rota_wheel_lateness(&wheel, &h);
    CHECK_EQ_U64(total(&h), 0);
    /* Late by 0, 1, 2, 3, 4, 7, 8 and 1000 ticks. */
    static const uint64_t late[8] = {0, 1, 2, 3, 4, 7, 8, 1000};
    for (int i = 0; i < 8; i++) {
        rota_timer_init(&t[i], nop);
        rota_timer_arm_at(&wheel, &t[i], 2000 - late[i]);
    }
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 2000), 8);
    rota_wheel_lateness(&wheel, &h);
    CHECK_EQ_U64(h.count[0], 1);  /* 0 */
    CHECK_EQ_U64(h.count[1], 1);  /* 1 */
    CHECK_EQ_U64(h.count[2], 2);  /* 2, 3 */
    CHECK_EQ_U64(h.count[3], 2);  /* 4, 7 */
    CHECK_EQ_U64(h.count[4], 1);  /* 8 */
    CHECK_EQ_U64(h.count[10], 1); /* 1000: 512..1023 */
    CHECK_EQ_U64(total(&h), 8);

    /* expire() counts too. */
    struct rota_timer *out[2];
    size_t n = 0;
    rota_timer_arm_at(&wheel, &t[0], 2010);
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 2015, out, 2, &n), 0);
    CHECK_EQ_U64(n, 1);
    rota_wheel_lateness(&wheel, &h);
    CHECK_EQ_U64(h.count[3], 3); /* 5 */

    /* The top bucket: late by 2^63 or more. */
    rota_timer_arm_at(&wheel, &t[1], 3000);
    rota_wheel_advance(&wheel, ROTA_MAX_DEADLINE);
    rota_wheel_lateness(&wheel, &h);
    CHECK_EQ_U64(h.count[64], 1);
    CHECK_EQ_U64(total(&h), 10);

    /* NULL is ignored. */
    rota_wheel_lateness(NULL, &h);
    rota_wheel_lateness(&wheel, NULL);
    CHECK_EQ_U64(total(&h), 10);
}

TEST(lateness_histogram_sums_to_fired)
{
    static struct rota_timer t[512];
    uint64_t state = h_seed();
    uint64_t now = 0;

    rota_wheel_init(&wheel, 0);
    for (int i = 0; i < 512; i++)
        rota_timer_init(&t[i], nop);
    for (int step = 0; step < 20000; step++) {
        struct rota_timer *x = &t[h_rand(&state) % 512];
        if (h_rand(&state) % 3 != 0)
            rota_timer_arm_at(&wheel, x, now + h_rand(&state) % 5000);
        else
            now += h_rand(&state) % 300;
        if (step % 7 == 0)
            rota_wheel_advance(&wheel, now);
    }
    struct rota_stats st;
    struct rota_lateness h;
    rota_wheel_stats(&wheel, &st);
    rota_wheel_lateness(&wheel, &h);
    printf("  %" PRIu64 " fires; on time %" PRIu64 ", late 1 %" PRIu64
           ", 2-3 %" PRIu64 ", 4-7 %" PRIu64 ", 128-255 %" PRIu64 "\n",
           st.fired, h.count[0], h.count[1], h.count[2], h.count[3],
           h.count[8]);
    CHECK_CMPU(st.fired, >, 1000);
    CHECK_EQ_U64(total(&h), st.fired);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fires;
static uint64_t last_late;
static void count_fire(struct rota_wheel *w, struct rota_timer *t,
                       uint64_t late)
{
    (void)w;
    (void)t;
    fires++;
    last_late = late;
}

TEST(periodic_jump_of_1e12_periods_is_o1)
{
    static struct rota_periodic skip, delay;
    const uint64_t period = 7, jump = 1000000000000u * period;

    rota_wheel_init(&wheel, 0);
    rota_periodic_init(&skip, count_fire);
    rota_periodic_init(&delay, count_fire);
    CHECK_EQ_INT(
        rota_periodic_arm_at(&wheel, &skip, 10, period, ROTA_MISSED_SKIP), 0);
    CHECK_EQ_INT(
        rota_periodic_arm_at(&wheel, &delay, 10, period, ROTA_MISSED_DELAY), 0);
    fires = 0;
    uint64_t t0 = now_ns();
    int fired = rota_wheel_advance(&wheel, 10 + jump + 3);
    uint64_t took = now_ns() - t0;
    printf("  a jump of 1e12 periods: %d fires in %" PRIu64 " ns\n", fired,
           took);
    CHECK_EQ_INT(fired, 2);
    CHECK_EQ_INT(fires, 2);
    CHECK_EQ_U64(last_late, jump + 3);
    /* SKIP: the first point of the schedule after now; DELAY: now + period. */
    CHECK_EQ_U64(rota_timer_deadline(&skip.timer), 10 + jump + period);
    CHECK_EQ_U64(rota_timer_deadline(&delay.timer), 10 + jump + 3 + period);
    /* A loop over 1e12 missed points takes hours; this is a division. */
    CHECK_CMPU(took, <, 100000000u);
    /* And on schedule afterwards: one fire each. */
    fires = 0;
    rota_wheel_advance(&wheel, 10 + jump + 3 + period);
    CHECK_EQ_INT(fires, 2);
    CHECK_WHEEL(&wheel);
    rota_timer_cancel(&wheel, &skip.timer);
    rota_timer_cancel(&wheel, &delay.timer);
}

TEST(periodic_burst_fires_each_missed_point)
{
    static struct rota_periodic burst;

    rota_wheel_init(&wheel, 0);
    rota_periodic_init(&burst, count_fire);
    rota_periodic_arm_at(&wheel, &burst, 10, 10, ROTA_MISSED_BURST);
    fires = 0;
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1005), 100); /* 10 .. 1000 */
    CHECK_EQ_U64(last_late, 5);
    CHECK_EQ_U64(rota_timer_deadline(&burst.timer), 1010);
    rota_timer_cancel(&wheel, &burst.timer);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(lateness_histogram_counts_each_fire),
        H_TEST(lateness_histogram_sums_to_fired),
        H_TEST(periodic_jump_of_1e12_periods_is_o1),
        H_TEST(periodic_burst_fires_each_missed_point),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
