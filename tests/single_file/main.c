/* SPDX-License-Identifier: MIT */
/*
 * A program built from the single-file rota.h and rota.c alone (copied into
 * an empty directory with this file and harness.h), the way a project
 * vendors rota.  It
 * exercises what the two files promise: the core wheel (one-shot, periodic,
 * cancel, touch through the inline function, exact next deadline, order,
 * never early), the version macros against rota_version(), error messages
 * and the clock helper.  Exit 0 only if everything holds.
 */
#include "rota.h"

#include <stdio.h>
#include <string.h>

#include "harness.h"

struct job {
    int runs;
    uint64_t fired_at;
    int order;
    struct rota_periodic per; /* a periodic timer; p uses its schedule */
};

static int fire_count;

static void on_fire(struct rota_wheel *wheel, struct rota_timer *timer,
                    uint64_t late)
{
    struct job *job = rota_container_of(timer, struct job, per.timer);
    (void)late;
    job->runs++;
    job->fired_at = rota_wheel_now(wheel);
    job->order = ++fire_count;
}

/* One-shot, periodic, touch, cancel: deadline order within a call, never
 * early, a periodic schedule without drift, exact next deadlines. */
TEST(wheel_fires_every_timer_at_its_deadline_in_order)
{
    static struct rota_wheel wheel;
    struct job a = {0}, b = {0}, p = {0}, c = {0};

    CHECK(rota_wheel_init(&wheel, 1000) == 0);
    rota_timer_init(&a.per.timer, on_fire);
    rota_timer_init(&b.per.timer, on_fire);
    rota_periodic_init(&p.per, on_fire);
    rota_timer_init(&c.per.timer, on_fire);

    CHECK(rota_timer_arm_at(&wheel, &a.per.timer, 1300) == 0);
    CHECK(rota_timer_arm_in(&wheel, &b.per.timer, 100) == 0); /* 1100 */
    CHECK(rota_periodic_arm_at(&wheel, &p.per, 1250, 250, ROTA_MISSED_BURST) ==
          0);
    CHECK(rota_timer_arm_in(&wheel, &c.per.timer, 70000) == 0); /* far level */
    CHECK(rota_wheel_count(&wheel) == 4);
    CHECK(rota_wheel_next_deadline(&wheel) == 1100);

    CHECK(rota_timer_touch_at(&wheel, &b.per.timer, 1400) == 0); /* later */
    CHECK(rota_wheel_next_deadline(&wheel) == 1250);

    CHECK(rota_wheel_advance(&wheel, 1249) == 0); /* never early */
    CHECK(p.runs == 0);
    CHECK(rota_wheel_advance(&wheel, 1250) == 1 && p.runs == 1);
    CHECK(rota_wheel_advance(&wheel, 1299) == 0 && a.runs == 0);
    CHECK(rota_wheel_advance(&wheel, 1400) == 2); /* a at 1300, b at 1400 */
    CHECK(a.runs == 1 && a.fired_at == 1400 && b.runs == 1);
    CHECK(a.order < b.order); /* deadline order within one call */
    CHECK(rota_timer_cancel(&wheel, &c.per.timer) == 1); /* was pending */
    CHECK(!rota_timer_pending(&c.per.timer));
    CHECK(rota_wheel_advance(&wheel, 80000) >= 1 && c.runs == 0);
    CHECK(p.runs == 1 + (80000 - 1250) / 250); /* no drift, no loss */
    CHECK(rota_timer_cancel(&wheel, &p.per.timer) == 1);
    CHECK(rota_wheel_count(&wheel) == 0);
    CHECK(rota_wheel_next_deadline(&wheel) == ROTA_NEVER);
    CHECK(rota_wheel_check(&wheel, NULL) == 0);
}

TEST(errors_have_codes_and_messages)
{
    struct job a = {0};

    rota_timer_init(&a.per.timer, on_fire);
    CHECK(rota_timer_arm_at(NULL, &a.per.timer, 1) == ROTA_EINVAL);
    CHECK(strcmp(rota_strerror(ROTA_EINVAL), "success") != 0);
}

/* The run.sh "planted" mode makes rota_version() lie: this must fail. */
TEST(version_macros_match_rota_version)
{
    char version[32];

    snprintf(version, sizeof version, "%d.%d.%d", ROTA_VERSION_MAJOR,
             ROTA_VERSION_MINOR, ROTA_VERSION_PATCH);
    CHECK(strcmp(version, ROTA_VERSION_STRING) == 0);
    CHECK(strcmp(rota_version(), ROTA_VERSION_STRING) == 0);
}

TEST(clock_helper_rounds_deadlines_up)
{
    struct rota_clock clock;

    CHECK(rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000) == 0);
    CHECK(rota_clock_deadline_after(&clock, 5000000) >=
          rota_clock_now(&clock) + 5);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(wheel_fires_every_timer_at_its_deadline_in_order),
        H_TEST(errors_have_codes_and_messages),
        H_TEST(version_macros_match_rota_version),
        H_TEST(clock_helper_rounds_deadlines_up),
    };
    int rc = h_main(argc, argv, tests, H_COUNT(tests));
    if (rc == 0)
        printf("single-file rota %s (%u-bit): ok\n", rota_version(),
               (unsigned)(sizeof(void *) * 8));
    return rc;
}
