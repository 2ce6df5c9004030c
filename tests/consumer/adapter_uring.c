/* SPDX-License-Identifier: MIT */
/* A program that knows rota's io_uring adapter only through an install:
 * built with `pkg-config --cflags --libs rota-uring` under -std=c11 -Werror
 * and with find_package(rota COMPONENTS uring).  A 2 ms timer must fire
 * once, from the ring's timeout, and not before its deadline.  Where the
 * kernel refuses io_uring the program says so and succeeds: what it proves
 * then is that it built and linked. */
#include <rota/uring.h>

#include <liburing.h>
#include <stdio.h>
#include <string.h>

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
    fprintf(stderr, "consumer_uring: %s\n", what);
    return 1;
}

int main(void)
{
    static struct rota_wheel wheel;
    static struct rota_uring ut;
    struct rota_clock clock;
    struct rota_timer timer;
    struct io_uring ring;
    uint64_t deadline;
    int rc = io_uring_queue_init(8, &ring, 0);

    if (rc < 0) {
        printf("rota %s + liburing: built; not run (io_uring_queue_init: "
               "%s)\n",
               rota_version(), strerror(-rc));
        return 0;
    }
    if (rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, 1000000) != 0)
        return fail("rota_clock_init failed");
    rota_wheel_init(&wheel, rota_clock_now(&clock));
    if (rota_uring_init(&ut, &ring, &wheel, &clock, 0) != 0)
        return fail("rota_uring_init failed");
    rota_timer_init(&timer, on_timer);
    deadline = rota_clock_deadline_after(&clock, 2000000);
    if (rota_timer_arm_at(&wheel, &timer, deadline) != 0)
        return fail("rota_timer_arm_at failed");
    while (fired == 0) {
        struct io_uring_cqe *cqe;
        if (rota_uring_sync(&ut) < 0)
            return fail("rota_uring_sync failed");
        if (io_uring_submit_and_wait(&ring, 1) < 0 ||
            io_uring_peek_cqe(&ring, &cqe) != 0)
            return fail("io_uring_submit_and_wait failed");
        if (rota_uring_handle(&ut, cqe) != 1)
            return fail("a completion that is not the adapter's");
        io_uring_cqe_seen(&ring, cqe);
    }
    if (fired != 1)
        return fail("the timer did not fire once");
    if (rota_clock_now(&clock) < deadline)
        return fail("the timer fired early");
    rota_uring_close(&ut);
    io_uring_queue_exit(&ring);
    printf("rota %s + liburing: timer fired once\n", rota_version());
    return 0;
}
