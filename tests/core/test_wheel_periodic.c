/* SPDX-License-Identifier: MIT */
/*
 * test_wheel_periodic.c - unit tests of the core wheel (rota.h) on a fake
 * clock: periodic timers: no drift, the missed-tick policies (SKIP,
 * BURST, DELAY) by lateness and on boundaries, the end of the schedule
 * at ROTA_MAX_DEADLINE, the longest period, re-arm and touch keeping the
 * period.
 * Shared fixture: wheel_fixture.h.  rota_wheel_check() runs after the
 * operations.  Nothing sleeps: time is whatever the test passes in.
 */
#include "wheel_fixture.h"

/* ------------------------------- periodic timers, bug class periodic-drift */

TEST(periodic_no_drift)
{
    struct tn a;
    uint64_t now = 0;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &a.per, 10, 7, ROTA_MISSED_SKIP),
                 0);
    log_reset();
    /* Steps of 3 never land on most deadlines; each fire must still be on
     * the schedule 10 + 7k, late by less than a step. */
    while (now < 70000) {
        now += 3;
        rota_wheel_advance(&wheel, now);
    }
    CHECK_EQ_U64(nent, (70000 - 10) / 7 + 1);
    for (size_t e = 0; e < nent; e++) {
        uint64_t fired_deadline = ent[e].now - ent[e].late;
        CHECK_EQ_U64(fired_deadline, 10 + 7 * e);
        CHECK(ent[e].late < 3);
        CHECK_EQ_U64(ent[e].deadline, fired_deadline + 7); /* next, inside */
        CHECK(ent[e].pending);
        if (h_failed > 5)
            break;
    }
    CHECK(rota_timer_pending(&a.per.timer));
    CHECK_WHEEL(&wheel);
}

static void periodic_case(enum rota_missed policy, const uint64_t *lates,
                          size_t nlates, uint64_t next)
{
    struct tn a;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &a.per, 10, 10, policy), 0);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 55), (int)nlates);
    CHECK_EQ_U64(nent, nlates);
    for (size_t e = 0; e < nent && e < nlates; e++)
        CHECK_EQ_U64(ent[e].late, lates[e]);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), next);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), next);
    CHECK_WHEEL(&wheel);
    /* Then back on time: exactly at next, late 0. */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, next - 1), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, next), 1);
    CHECK_EQ_U64(ent[nent - 1].late, 0);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), next + 10);
}

TEST(periodic_missed_skip)
{
    static const uint64_t lates[] = {45};
    periodic_case(ROTA_MISSED_SKIP, lates, 1, 60);
}

TEST(periodic_missed_burst)
{
    static const uint64_t lates[] = {45, 35, 25, 15, 5};
    periodic_case(ROTA_MISSED_BURST, lates, 5, 60);
}

TEST(periodic_missed_delay)
{
    static const uint64_t lates[] = {45};
    periodic_case(ROTA_MISSED_DELAY, lates, 1, 65);
}

/* The table of rota.h (enum rota_missed): first 10, period 10, advanced
 * once to `to`.  Late by less than a period nothing is missed and every
 * policy stays on the schedule; exactly one period late the next point is
 * due too, so BURST fires it in the same call and SKIP and DELAY go on at
 * 30 (= now + period); later than that DELAY leaves the schedule. */
TEST(periodic_policies_by_lateness)
{
    static const struct {
        uint64_t to;
        enum rota_missed policy;
        size_t fires;
        uint64_t next;
    } cases[] = {
        {15, ROTA_MISSED_SKIP, 1, 20},  {15, ROTA_MISSED_BURST, 1, 20},
        {15, ROTA_MISSED_DELAY, 1, 20}, {19, ROTA_MISSED_DELAY, 1, 20},
        {20, ROTA_MISSED_SKIP, 1, 30},  {20, ROTA_MISSED_BURST, 2, 30},
        {20, ROTA_MISSED_DELAY, 1, 30}, {25, ROTA_MISSED_SKIP, 1, 30},
        {25, ROTA_MISSED_BURST, 2, 30}, {25, ROTA_MISSED_DELAY, 1, 35},
        {55, ROTA_MISSED_SKIP, 1, 60},  {55, ROTA_MISSED_BURST, 5, 60},
        {55, ROTA_MISSED_DELAY, 1, 65},
    };
    struct tn a;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        new_wheel(&wheel, 0);
        tn_init(&a, 0);
        CHECK_EQ_INT(
            rota_periodic_arm_at(&wheel, &a.per, 10, 10, cases[i].policy), 0);
        log_reset();
        bool ok = CHECK_EQ_INT(rota_wheel_advance(&wheel, cases[i].to),
                               (int)cases[i].fires);
        ok &= CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), cases[i].next);
        if (!ok)
            fprintf(stderr, "    policy %d advanced to %" PRIu64 "\n",
                    (int)cases[i].policy, cases[i].to);
        CHECK_EQ_U64(ent[0].late, cases[i].to - 10);
        CHECK_WHEEL(&wheel);
    }
}

TEST(periodic_skip_on_boundary)
{
    /* Exactly on a later boundary: SKIP goes to the one strictly after. */
    struct tn a;
    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    rota_periodic_arm_at(&wheel, &a.per, 10, 10, ROTA_MISSED_SKIP);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 50), 1);
    CHECK_EQ_U64(ent[0].late, 40);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 60);
    /* BURST exactly on a boundary fires that boundary too. */
    rota_periodic_arm_at(&wheel, &a.per, 60, 10, ROTA_MISSED_BURST);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 80), 3);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 90);
}

TEST(periodic_schedule_ends_at_max_deadline)
{
    struct tn a;

    for (int policy = 0; policy < 3; policy++) {
        new_wheel(&wheel, ROTA_MAX_DEADLINE - 25);
        tn_init(&a, 0);
        rota_periodic_arm_at(&wheel, &a.per, ROTA_MAX_DEADLINE - 20, 10,
                             (enum rota_missed)policy);
        log_reset();
        CHECK_EQ_INT(rota_wheel_advance(&wheel, ROTA_MAX_DEADLINE - 20), 1);
        CHECK(ent[0].pending);
        CHECK_EQ_U64(ent[0].deadline, ROTA_MAX_DEADLINE - 10);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, ROTA_MAX_DEADLINE - 10), 1);
        CHECK(ent[1].pending); /* MAX itself is a valid deadline */
        CHECK_EQ_U64(ent[1].deadline, ROTA_MAX_DEADLINE);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX), 1);
        CHECK(!ent[2].pending); /* the next would pass MAX: ended */
        CHECK(!rota_timer_pending(&a.per.timer));
        CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
        CHECK_WHEEL(&wheel);
    }
    /* A period so large that the first fire is the last. */
    uint64_t last = ROTA_MAX_DEADLINE - ROTA_MAX_PERIOD + 1;
    new_wheel(&wheel, 0);
    CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &a.per, last, ROTA_MAX_PERIOD,
                                      ROTA_MISSED_BURST),
                 0);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, last), 1);
    CHECK(!ent[0].pending);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    /* BURST that reaches the end inside one call. */
    new_wheel(&wheel, ROTA_MAX_DEADLINE - 100);
    rota_periodic_arm_at(&wheel, &a.per, ROTA_MAX_DEADLINE - 100, 40,
                         ROTA_MISSED_BURST);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX), 3); /* -100 -60 -20 */
    CHECK_EQ_U64(ent[2].late, 20);
    CHECK(!rota_timer_pending(&a.per.timer));
    CHECK_WHEEL(&wheel);
}

/* A fire on time files fired + period the way the inline arm files
 * (wheel.c): that sum at ROTA_MAX_DEADLINE goes on, one tick past it
 * (UINT64_MAX, ROTA_NEVER) ends the schedule, and period 0 fires once,
 * under every policy. */
TEST(periodic_on_time_sum_edges)
{
    struct tn a;

    for (int policy = 0; policy < 3; policy++) {
        for (uint64_t period = 20; period <= 21; period++) {
            new_wheel(&wheel, ROTA_MAX_DEADLINE - 30);
            tn_init(&a, 0);
            CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &a.per,
                                              ROTA_MAX_DEADLINE - 20, period,
                                              (enum rota_missed)policy),
                         0);
            log_reset();
            CHECK_EQ_INT(rota_wheel_advance(&wheel, ROTA_MAX_DEADLINE - 20), 1);
            CHECK_EQ_U64(ent[0].late, 0);
            CHECK_EQ_INT(ent[0].pending, period == 20);
            CHECK_EQ_U64(rota_wheel_count(&wheel), period == 20 ? 1 : 0);
            if (period == 20)
                CHECK_EQ_U64(ent[0].deadline, ROTA_MAX_DEADLINE);
            CHECK_WHEEL(&wheel);
        }
        /* Period 0: rota_timer_arm_at() alone, fired on time. */
        new_wheel(&wheel, 0);
        tn_init(&a, 0);
        CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 5), 0);
        log_reset();
        CHECK_EQ_INT(rota_wheel_advance(&wheel, 5), 1);
        CHECK_EQ_U64(ent[0].late, 0);
        CHECK(!ent[0].pending);
        CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, 1000), 0);
        CHECK_WHEEL(&wheel);
    }
}

/* The longest period, ROTA_MAX_PERIOD, is kept exactly beside each
 * policy (struct rota_periodic holds both in one word); one tick longer
 * is refused.  First 10, period P: on time the next is 10 + P; then
 * advanced to 10 + 2P + 5, P + 5 late, SKIP goes on at 10 + 3P, BURST
 * fires twice and goes on there too, DELAY restarts at now + P. */
TEST(periodic_longest_period_and_policy_kept)
{
    const uint64_t p = ROTA_MAX_PERIOD, now = 10 + 2 * p + 5;
    static const struct {
        enum rota_missed policy;
        int fires;
    } cases[] = {
        {ROTA_MISSED_SKIP, 1}, {ROTA_MISSED_BURST, 2}, {ROTA_MISSED_DELAY, 1}};
    struct tn a;

    CHECK_EQ_U64(ROTA_MAX_PERIOD, (UINT64_C(1) << 62) - 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        new_wheel(&wheel, 0);
        tn_init(&a, 0);
        CHECK_EQ_INT(
            rota_periodic_arm_at(&wheel, &a.per, 10, p + 1, cases[i].policy),
            ROTA_EINVAL);
        CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &a.per, 10, UINT64_MAX,
                                          cases[i].policy),
                     ROTA_EINVAL);
        CHECK(!rota_timer_pending(&a.per.timer));
        CHECK_EQ_INT(
            rota_periodic_arm_at(&wheel, &a.per, 10, p, cases[i].policy), 0);
        log_reset();
        CHECK_EQ_INT(rota_wheel_advance(&wheel, 10), 1);
        CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 10 + p);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, now), cases[i].fires);
        CHECK_EQ_U64(rota_timer_deadline(&a.per.timer),
                     cases[i].policy == ROTA_MISSED_DELAY ? now + p
                                                          : 10 + 3 * p);
        CHECK_WHEEL(&wheel);
    }
}

TEST(periodic_rearm_and_touch_keep_period)
{
    struct tn a;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    /* Before rota_periodic_arm_at() gives it a period, it fires once. */
    rota_timer_arm_at(&wheel, &a.per.timer, 5);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 9), 1);
    CHECK(!rota_timer_pending(&a.per.timer));

    /* rota_timer_arm_at() moves the next fire; the schedule goes on from
     * there, every 10. */
    rota_periodic_arm_at(&wheel, &a.per, 10, 10, ROTA_MISSED_SKIP);
    rota_timer_arm_at(&wheel, &a.per.timer, 15);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 14), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 15), 1);
    CHECK(rota_timer_pending(&a.per.timer));
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 25);
    /* Cancelled and armed again: still periodic. */
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &a.per.timer), 1);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 40), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 40), 1);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 50);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &a.per.timer), 1);
    /* rota_timer_init() makes it a plain timer again: once. */
    rota_timer_init(&a.per.timer, rec);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 60), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 100), 1);
    CHECK(!rota_timer_pending(&a.per.timer));
    CHECK_EQ_INT(
        rota_periodic_arm_at(&wheel, &a.per, 110, 10, ROTA_MISSED_SKIP),
        ROTA_EINVAL);
    tn_init(&a, 0);

    /* Touch: the period continues from the new deadline. */
    rota_periodic_arm_at(&wheel, &a.per, 110, 10, ROTA_MISSED_SKIP);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &a.per.timer, 115), 0); /* later */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 114), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 115), 1);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 125);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &a.per.timer, 121),
                 0); /* earlier */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 121), 1);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 131);
    CHECK_WHEEL(&wheel);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(periodic_no_drift),
        H_TEST(periodic_missed_skip),
        H_TEST(periodic_missed_burst),
        H_TEST(periodic_missed_delay),
        H_TEST(periodic_policies_by_lateness),
        H_TEST(periodic_skip_on_boundary),
        H_TEST(periodic_schedule_ends_at_max_deadline),
        H_TEST(periodic_on_time_sum_edges),
        H_TEST(periodic_longest_period_and_policy_kept),
        H_TEST(periodic_rearm_and_touch_keep_period),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
