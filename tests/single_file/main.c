/* SPDX-License-Identifier: MIT */
/*
 * A program built from the single-file rota.h and rota.c alone (copied into
 * an empty directory with this file), the way a project vendors rota.  It
 * exercises what the two files promise: the core wheel (one-shot, periodic,
 * cancel, touch through the inline function, exact next deadline, order,
 * never early), the version macros against rota_version(), error messages
 * and the clock helper.  Exit 0 only if everything holds.
 */
#include "rota.h"

#include <stdio.h>
#include <string.h>

static int failures;

#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "single-file test: %s:%d: %s\n", __FILE__,         \
                    __LINE__, #cond);                                          \
            failures++;                                                        \
        }                                                                      \
    } while (0)

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

int main(void)
{
    static struct rota_wheel wheel;
    struct job a = {0}, b = {0}, p = {0}, c = {0};
    struct rota_clock clock;
    char version[32];

    EXPECT(rota_wheel_init(&wheel, 1000) == 0);
    rota_timer_init(&a.per.timer, on_fire);
    rota_timer_init(&b.per.timer, on_fire);
    rota_periodic_init(&p.per, on_fire);
    rota_timer_init(&c.per.timer, on_fire);

    EXPECT(rota_timer_arm_at(&wheel, &a.per.timer, 1300) == 0);
    EXPECT(rota_timer_arm_in(&wheel, &b.per.timer, 100) == 0); /* 1100 */
    EXPECT(rota_periodic_arm_at(&wheel, &p.per, 1250, 250, ROTA_MISSED_BURST) ==
           0);
    EXPECT(rota_timer_arm_in(&wheel, &c.per.timer, 70000) == 0); /* far level */
    EXPECT(rota_wheel_count(&wheel) == 4);
    EXPECT(rota_wheel_next_deadline(&wheel) == 1100);

    EXPECT(rota_timer_touch_at(&wheel, &b.per.timer, 1400) == 0); /* later */
    EXPECT(rota_wheel_next_deadline(&wheel) == 1250);

    EXPECT(rota_wheel_advance(&wheel, 1249) == 0); /* never early */
    EXPECT(p.runs == 0);
    EXPECT(rota_wheel_advance(&wheel, 1250) == 1 && p.runs == 1);
    EXPECT(rota_wheel_advance(&wheel, 1299) == 0 && a.runs == 0);
    EXPECT(rota_wheel_advance(&wheel, 1400) == 2); /* a at 1300, b at 1400 */
    EXPECT(a.runs == 1 && a.fired_at == 1400 && b.runs == 1);
    EXPECT(a.order < b.order); /* deadline order within one call */
    EXPECT(rota_timer_cancel(&wheel, &c.per.timer) == 1); /* was pending */
    EXPECT(!rota_timer_pending(&c.per.timer));
    EXPECT(rota_wheel_advance(&wheel, 80000) >= 1 && c.runs == 0);
    EXPECT(p.runs == 1 + (80000 - 1250) / 250); /* no drift, no loss */
    EXPECT(rota_timer_cancel(&wheel, &p.per.timer) == 1);
    EXPECT(rota_wheel_count(&wheel) == 0);
    EXPECT(rota_wheel_next_deadline(&wheel) == ROTA_NEVER);
    EXPECT(rota_wheel_check(&wheel, NULL) == 0);

    EXPECT(rota_timer_arm_at(NULL, &a.per.timer, 1) == ROTA_EINVAL);
    EXPECT(strcmp(rota_strerror(ROTA_EINVAL), "success") != 0);

    snprintf(version, sizeof version, "%d.%d.%d", ROTA_VERSION_MAJOR,
             ROTA_VERSION_MINOR, ROTA_VERSION_PATCH);
    EXPECT(strcmp(version, ROTA_VERSION_STRING) == 0);
    EXPECT(strcmp(rota_version(), ROTA_VERSION_STRING) == 0);

    EXPECT(rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000) == 0);
    EXPECT(rota_clock_deadline_after(&clock, 5000000) >=
           rota_clock_now(&clock) + 5);

    if (failures != 0)
        return 1;
    printf("single-file rota %s (%u-bit): ok\n", rota_version(),
           (unsigned)(sizeof(void *) * 8));
    return 0;
}
