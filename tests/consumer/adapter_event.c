/* SPDX-License-Identifier: MIT */
/* A program that knows rota's libevent adapter only through an install:
 * built with `pkg-config --cflags --libs rota-event` under -std=c11 -Werror
 * and with find_package(rota COMPONENTS event).  A 2 ms timer must fire
 * once, from event_base_dispatch(), and not before its deadline. */
#include <rota/event.h>

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
    fprintf(stderr, "consumer_event: %s\n", what);
    return 1;
}

int main(void)
{
    static struct rota_wheel wheel;
    static struct rota_event rw;
    struct rota_clock clock;
    struct rota_timer timer;
    struct event_base *base = event_base_new();
    uint64_t deadline;

    if (base == NULL)
        return fail("event_base_new failed");
    if (rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000) != 0 ||
        rota_wheel_init(&wheel, rota_clock_now(&clock)) != 0)
        return fail("rota_clock_init or rota_wheel_init failed");
    if (rota_event_init(&rw, base, &wheel, &clock) != 0)
        return fail("rota_event_init failed");
    rota_timer_init(&timer, on_timer);
    deadline = rota_event_deadline_in(&rw, 2000000);
    if (rota_timer_arm_at(&wheel, &timer, deadline) != 0)
        return fail("rota_timer_arm_at failed");
    rota_event_sync(&rw); /* after an arm */
    event_base_dispatch(base);
    if (fired != 1)
        return fail("the timer did not fire once");
    if (rota_event_now(&rw) < deadline)
        return fail("the timer fired early");
    rota_event_close(&rw);
    event_base_free(base);
    printf("rota %s + libevent %s: timer fired once\n", rota_version(),
           event_get_version());
    return 0;
}
