/* SPDX-License-Identifier: MIT */
/* A program that knows rota's libuv adapter only through an install: built
 * with `pkg-config --cflags --libs rota-uv` under -std=c11 -Wpedantic
 * -Werror (rota/uv.h first, with no feature-test macro of ours) and with
 * find_package(rota COMPONENTS uv).  A 2 ms timer must fire once, from
 * uv_run(), and not before its deadline. */
#include <rota/uv.h>

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
    fprintf(stderr, "consumer_uv: %s\n", what);
    return 1;
}

int main(void)
{
    static struct rota_wheel wheel;
    static struct rota_uv rw;
    struct rota_clock clock;
    struct rota_timer timer;
    uv_loop_t loop;
    uint64_t deadline;

    if (uv_loop_init(&loop) != 0)
        return fail("uv_loop_init failed");
    if (rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000) != 0 ||
        rota_wheel_init(&wheel, rota_clock_now(&clock)) != 0)
        return fail("rota_clock_init or rota_wheel_init failed");
    if (rota_uv_init(&rw, &loop, &wheel, &clock) != 0)
        return fail("rota_uv_init failed");
    rota_timer_init(&timer, on_timer);
    deadline = rota_uv_deadline_in(&rw, 2000000);
    if (rota_timer_arm_at(&wheel, &timer, deadline) != 0)
        return fail("rota_timer_arm_at failed");
    /* Armed outside the loop, before its first run: no sync needed. */
    uv_run(&loop, UV_RUN_DEFAULT);
    if (fired != 1)
        return fail("the timer did not fire once");
    if (rota_uv_now(&rw) < deadline)
        return fail("the timer fired early");
    if (rota_uv_close(&rw) != 2)
        return fail("rota_uv_close did not report its two handles");
    uv_run(&loop, UV_RUN_DEFAULT);
    struct rota_loop_stats st;
    rota_uv_stats(&rw, &st);
    if (st.in_flight != 0)
        return fail("rota_uv_stats reports handles still closing");
    if (uv_loop_close(&loop) != 0)
        return fail("a handle is still open after rota_uv_close");
    printf("rota %s + libuv %s: timer fired once\n", rota_version(),
           uv_version_string());
    return 0;
}
