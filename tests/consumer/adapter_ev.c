/* SPDX-License-Identifier: MIT */
/* A program that knows rota's libev adapter only through an install: built
 * with `pkg-config --cflags --libs rota-ev` under -std=c11 -Werror and with
 * find_package(rota COMPONENTS ev).  A 2 ms timer must fire once, from
 * ev_run(), and not before its deadline. */
#include <rota/ev.h>

#include <stdio.h>

static int fired;

static void on_timer(struct rota_wheel *wheel, struct rota_timer *timer,
                     uint64_t late)
{
    (void)wheel;
    (void)timer;
    (void)late;
    fired++;
}

static int fail(const char *what)
{
    fprintf(stderr, "consumer_ev: %s\n", what);
    return 1;
}

int main(void)
{
    static struct rota_wheel wheel;
    static struct rota_ev rw;
    struct rota_clock clock;
    struct rota_timer timer;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    uint64_t deadline;

    if (loop == NULL)
        return fail("ev_loop_new failed");
    if (rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000) != 0 ||
        rota_wheel_init(&wheel, rota_clock_now(&clock)) != 0)
        return fail("rota_clock_init or rota_wheel_init failed");
    if (rota_ev_init(&rw, loop, &wheel, &clock) != 0)
        return fail("rota_ev_init failed");
    rota_timer_init(&timer, on_timer);
    deadline = rota_ev_deadline_in(&rw, 2000000);
    if (rota_timer_arm_at(&wheel, &timer, deadline) != 0)
        return fail("rota_timer_arm_at failed");
    /* Armed outside the loop: no sync needed with ev_run(). */
    ev_run(loop, 0);
    if (fired != 1)
        return fail("the timer did not fire once");
    if (rota_ev_now(&rw) < deadline)
        return fail("the timer fired early");
    rota_ev_close(&rw);
    ev_loop_destroy(loop);
    printf("rota %s + libev %d.%d: timer fired once\n", rota_version(),
           ev_version_major(), ev_version_minor());
    return 0;
}
