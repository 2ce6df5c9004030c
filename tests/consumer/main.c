/* SPDX-License-Identifier: MIT */
/* A program that knows rota only through an install: its headers, librota
 * and either rota.pc or the CMake package.  It checks that a timer fires at
 * its deadline and not before, that the headers and the linked library agree
 * on the version, and that the clock helper (outside the core) is in the
 * library too. */
#include <rota.h>
#include <rota/clock.h>

#include <stdio.h>
#include <string.h>

struct job {
    int runs;
    struct rota_timer timer;
};

static void on_timer(struct rota_wheel *wheel, struct rota_timer *timer,
                     uint64_t late)
{
    (void)wheel;
    (void)late;
    rota_container_of(timer, struct job, timer)->runs++;
}

static int fail(const char *what)
{
    fprintf(stderr, "consumer: %s\n", what);
    return 1;
}

int main(void)
{
    static struct rota_wheel wheel; /* ~11 KiB: keep it off the stack */
    struct job job = {0};
    struct rota_clock clock;

    if (rota_wheel_init(&wheel, 0) != 0)
        return fail("rota_wheel_init failed");
    rota_timer_init(&job.timer, on_timer);
    if (rota_timer_arm_in(&wheel, &job.timer, 5) != 0)
        return fail("rota_timer_arm_in failed");
    if (rota_wheel_advance(&wheel, 4) != 0 || job.runs != 0)
        return fail("timer fired early");
    if (rota_wheel_advance(&wheel, 5) != 1 || job.runs != 1)
        return fail("timer did not fire at its deadline");
    if (strcmp(rota_version(), ROTA_VERSION_STRING) != 0)
        return fail("header and library versions differ");
    if (rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000) != 0)
        return fail("rota_clock_init failed");
    printf("rota %s: timer fired once at tick %llu\n", rota_version(),
           (unsigned long long)rota_wheel_now(&wheel));
    return 0;
}
