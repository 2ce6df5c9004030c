/* SPDX-License-Identifier: MIT */
/* A program that knows rota's sd-event adapter only through an install:
 * built with `pkg-config --cflags --libs rota-sdevent` under -std=c11
 * -Werror and with find_package(rota COMPONENTS sdevent).  A 2 ms timer must
 * fire once, from sd_event_run(), and not before its deadline. */
#include <rota/sdevent.h>

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
    fprintf(stderr, "consumer_sdevent: %s\n", what);
    return 1;
}

int main(void)
{
    static struct rota_wheel wheel;
    static struct rota_sdevent rs;
    struct rota_clock clock;
    struct rota_timer timer;
    sd_event *event = NULL;
    uint64_t deadline;
    int turns = 0;

    if (sd_event_new(&event) < 0)
        return fail("sd_event_new failed");
    if (rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000) != 0)
        return fail("rota_clock_init failed");
    rota_wheel_init(&wheel, rota_clock_now(&clock));
    if (rota_sdevent_init(&rs, event, &wheel, &clock) != 0)
        return fail("rota_sdevent_init failed");
    rota_timer_init(&timer, on_timer);
    deadline = rota_sdevent_deadline_in(&rs, 2000000);
    if (rota_timer_arm_at(&wheel, &timer, deadline) != 0)
        return fail("rota_timer_arm_at failed");
    if (rota_sdevent_sync(&rs) != 1) /* so that stats.armed is current */
        return fail("rota_sdevent_sync did not set the source");
    /* An sd-event loop never ends by itself: run until the wheel's source
     * is set to nothing (bounded, in case it never is). */
    struct rota_loop_stats st;
    while ((rota_sdevent_stats(&rs, &st), st.armed != ROTA_NEVER) &&
           turns++ < 100)
        if (sd_event_run(event, 1000000) < 0)
            return fail("sd_event_run failed");
    if (fired != 1)
        return fail("the timer did not fire once");
    if (rota_sdevent_now(&rs) < deadline)
        return fail("the timer fired early");
    rota_sdevent_close(&rs);
    sd_event_unref(event);
    printf("rota %s + sd-event: timer fired once\n", rota_version());
    return 0;
}
