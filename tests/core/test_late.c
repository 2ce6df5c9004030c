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

#include <string.h>
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

/* ------------------------------------------- exact in every callback */

#define EX_ONESHOT 96
#define EX_PERIODIC 16

static struct {
    struct rota_timer one[EX_ONESHOT];
    struct rota_periodic per[EX_PERIODIC];
    uint64_t deadline[EX_ONESHOT + EX_PERIODIC]; /* as last armed or fired */
    uint64_t period[EX_ONESHOT + EX_PERIODIC];
    uint64_t model[ROTA_LATE_BUCKETS];
    uint64_t state;
    uint64_t fires;       /* every fire and hand-out so far */
    uint64_t plant_at;    /* plant the fault at the first check from this
                            fire on, or 0 for none */
    uint64_t planted;     /* the fire whose check it was planted in, or 0 */
    uint64_t planted_run; /* the run it left out */
    uint64_t failed_at;   /* the first fire whose check failed, or 0 */
    unsigned run_bucket;  /* the bucket of the last fire */
    uint64_t run_len;     /* fires in a row in that bucket */
} ex;

static unsigned bucket_of(uint64_t late)
{
    return late == 0 ? 0 : 64u - (unsigned)__builtin_clzll(late);
}

static size_t ex_index(const struct rota_timer *t)
{
    if (t >= ex.one && t < ex.one + EX_ONESHOT)
        return (size_t)(t - ex.one);
    for (size_t i = 0; i < EX_PERIODIC; i++)
        if (t == &ex.per[i].timer)
            return EX_ONESHOT + i;
    return SIZE_MAX;
}

static struct rota_timer *ex_timer(size_t i)
{
    return i < EX_ONESHOT ? &ex.one[i] : &ex.per[i - EX_ONESHOT].timer;
}

/* The wheel's histogram against the test's, now; false on a difference.
 * The planted fault expects what a reader that left out the open run
 * would report. */
static bool ex_compare(const struct rota_wheel *w)
{
    struct rota_lateness h;
    uint64_t want[ROTA_LATE_BUCKETS];

    memcpy(want, ex.model, sizeof want);
    if (ex.plant_at != 0 && ex.planted == 0 && ex.fires >= ex.plant_at) {
        want[ex.run_bucket] -= ex.run_len;
        ex.planted = ex.fires;
        ex.planted_run = ex.run_len;
    }
    rota_wheel_lateness(w, &h);
    if (memcmp(want, h.count, sizeof want) == 0)
        return true;
    if (ex.failed_at == 0) {
        ex.failed_at = ex.fires == 0 ? UINT64_MAX : ex.fires;
        for (unsigned k = 0; k < ROTA_LATE_BUCKETS; k++)
            if (want[k] != h.count[k])
                printf("  at fire %" PRIu64
                       ", bucket %u: the wheel counts %" PRIu64
                       ", the test %" PRIu64 "\n",
                       ex.fires, k, h.count[k], want[k]);
    }
    return false;
}

/* One fire `late` ticks late, in the test's histogram. */
static void ex_count(uint64_t late)
{
    unsigned k = bucket_of(late);
    ex.model[k]++;
    ex.run_len = k == ex.run_bucket ? ex.run_len + 1 : 1;
    ex.run_bucket = k;
    ex.fires++;
}

/* Arm timer i at now + delay (a periodic one with a period of 1..64). */
static void ex_arm(struct rota_wheel *w, size_t i, uint64_t delay)
{
    uint64_t at = rota_wheel_now(w) + delay;
    if (i < EX_ONESHOT) {
        rota_timer_arm_at(w, &ex.one[i], at);
    } else {
        static const enum rota_missed policy[3] = {
            ROTA_MISSED_SKIP, ROTA_MISSED_BURST, ROTA_MISSED_DELAY};
        ex.period[i] = 1 + h_rand(&ex.state) % 64;
        rota_periodic_arm_at(w, &ex.per[i - EX_ONESHOT], at, ex.period[i],
                             policy[i % 3]);
    }
    ex.deadline[i] = rota_timer_deadline(ex_timer(i));
}

/* Whether out[from..n) hands out t again: a BURST timer fires once per
 * missed point, each a period after the one before. */
static bool ex_again(struct rota_timer *const *out, size_t from, size_t n)
{
    for (size_t k = from; k < n; k++)
        if (out[k] == out[from - 1])
            return true;
    return false;
}

static void ex_fire(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    size_t i = ex_index(t);
    ex_count(late);
    if (i >= EX_ONESHOT) /* its next deadline, if it goes on */
        ex.deadline[i] = rota_timer_deadline(t);
    ex_compare(w);
    /* Stir: cancel or re-arm some timer, often one due right now. */
    uint64_t r = h_rand(&ex.state);
    size_t j = (size_t)(r >> 8) % (EX_ONESHOT + EX_PERIODIC);
    if (r % 8 == 0)
        rota_timer_cancel(w, ex_timer(j));
    else if (r % 8 == 1)
        ex_arm(w, j, (r >> 20) % 4);
}

static void ex_run(uint64_t seed, unsigned ops, uint64_t plant_at)
{
    uint64_t now = 1000;

    memset(&ex, 0, sizeof ex);
    ex.state = seed;
    ex.plant_at = plant_at;
    rota_wheel_init(&wheel, now);
    for (size_t i = 0; i < EX_ONESHOT; i++)
        rota_timer_init(&ex.one[i], ex_fire);
    for (size_t i = 0; i < EX_PERIODIC; i++)
        rota_periodic_init(&ex.per[i], ex_fire);
    for (unsigned op = 0; op < ops; op++) {
        uint64_t r = h_rand(&ex.state);
        size_t i = (size_t)(r >> 8) % (EX_ONESHOT + EX_PERIODIC);
        switch (r % 6) {
        case 0:
        case 1:
            ex_arm(&wheel, i, (r >> 24) % 600);
            break;
        case 2: /* a jump: fires late by up to a few hundred ticks */
            now += (r >> 24) % 300;
            rota_wheel_advance(&wheel, now);
            break;
        case 3: /* tick by tick: fires on time */
            rota_wheel_advance(&wheel, ++now);
            break;
        case 4: { /* expire: the test counts what it is handed */
            struct rota_timer *out[8];
            size_t n = 0;
            now += (r >> 24) % 40;
            rota_wheel_expire(&wheel, now, out, 1 + (r >> 40) % 8, &n);
            for (size_t k = 0; k < n; k++) {
                size_t x = ex_index(out[k]);
                ex_count(now - ex.deadline[x]);
                if (x >= EX_ONESHOT)
                    ex.deadline[x] = ex_again(out, k + 1, n)
                                         ? ex.deadline[x] + ex.period[x]
                                         : rota_timer_deadline(out[k]);
            }
            break;
        }
        default:
            rota_timer_cancel(&wheel, ex_timer(i));
            break;
        }
        ex_compare(&wheel);
    }
    for (size_t i = 0; i < EX_ONESHOT + EX_PERIODIC; i++)
        rota_timer_cancel(&wheel, ex_timer(i));
}

TEST(lateness_exact_in_every_callback)
{
    uint64_t seed = h_seed();
    unsigned ops = h_small() ? 3000 : 30000;

    ex_run(seed, ops, 0);
    printf("  %" PRIu64 " fires checked; on time %" PRIu64 ", 1 %" PRIu64
           ", 2-3 %" PRIu64 ", 64-127 %" PRIu64 "\n",
           ex.fires, ex.model[0], ex.model[1], ex.model[2], ex.model[7]);
    CHECK_CMPU(ex.fires, >, ops / 4);
    CHECK_CMPU(ex.model[0], >, 0);
    CHECK_CMPU(ex.model[7], >, 0);
    CHECK_EQ_U64(ex.failed_at, 0);
    struct rota_stats st;
    rota_wheel_stats(&wheel, &st);
    CHECK_EQ_U64(st.fired, ex.fires);
}

TEST(lateness_check_catches_planted_open_run)
{
    uint64_t seed = h_seed();
    unsigned ops = h_small() ? 3000 : 30000;

    ex_run(seed, ops, 0);
    uint64_t at = ex.fires / 2;
    CHECK_CMPU(at, >, 0);
    ex_run(seed, ops, at);
    printf("  planted at fire %" PRIu64 " (a run of %" PRIu64
           " left out); first difference at fire %" PRIu64 "\n",
           ex.planted, ex.planted_run, ex.failed_at);
    CHECK_CMPU(ex.planted, >=, at);
    CHECK_EQ_U64(ex.failed_at, ex.planted);
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
        H_TEST(lateness_exact_in_every_callback),
        H_TEST(lateness_check_catches_planted_open_run),
        H_TEST(periodic_jump_of_1e12_periods_is_o1),
        H_TEST(periodic_burst_fires_each_missed_point),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
