/* SPDX-License-Identifier: MIT */
/*
 * test_loop_epoll.c - rota/epoll.h: the timeout's rounding as a pure
 * function, the bookkeeping of struct rota_epoll (when it re-arms and when
 * it must not), a coarse clock with a timerfd, and the shared real-loop
 * scenarios (test_loop_common.h) on a minimal epoll loop driven both ways:
 * by the epoll_wait() timeout and by a timerfd.
 */
#define _GNU_SOURCE
#include <rota/epoll.h>

#include <limits.h>
#include <poll.h>
#include <sys/epoll.h>

#include "test_loop_common.h"

static struct rota_loop_stats stats_of(const struct rota_epoll *x)
{
    struct rota_loop_stats st;
    rota_epoll_stats(x, &st);
    return st;
}

/* ------------------------------------------------- pure: the timeout */

/* The timeouts, which must come with status 0. */
static int timeout_from(struct rota_wheel *w, uint64_t now_ns, uint64_t tick_ns)
{
    int ms = 12345;
    CHECK_EQ_INT(rota_epoll_timeout_from(w, now_ns, tick_ns, &ms), 0);
    return ms;
}

static int wait_ms(struct rota_epoll *et)
{
    int ms = 12345;
    CHECK_EQ_INT(rota_epoll_wait_ms(et, &ms), 0);
    return ms;
}

TEST(epoll_timeout_rounding)
{
    struct rota_wheel w;
    struct rota_timer t;
    const uint64_t ms = 1000000u;

    rota_wheel_init(&w, 0);
    rota_timer_init(&t, NULL);
    /* Errors store 0, never -1: epoll_wait() would wait forever. */
    int out = -1;
    CHECK(rota_epoll_timeout_from(NULL, 0, ms, &out) == ROTA_EINVAL);
    CHECK_EQ_INT(out, 0);
    out = -1;
    CHECK(rota_epoll_timeout_from(&w, 0, 0, &out) == ROTA_EINVAL);
    CHECK_EQ_INT(out, 0);
    out = -1;
    CHECK(rota_epoll_timeout(NULL, NULL, &out) == ROTA_EINVAL);
    CHECK_EQ_INT(out, 0);
    CHECK(rota_epoll_timeout_from(&w, 0, ms, NULL) == ROTA_EINVAL);
    CHECK(timeout_from(&w, 0, ms) == -1); /* empty: forever */

    /* 1 ms ticks, deadline 5 ms. */
    CHECK(rota_timer_arm_at(&w, &t, 5) == 0);
    CHECK(timeout_from(&w, 0, ms) == 5);
    CHECK(timeout_from(&w, 4200000u, ms) == 1); /* 0.8 -> 1 */
    CHECK(timeout_from(&w, 4999999u, ms) == 1); /* never 0 early */
    CHECK(timeout_from(&w, 5000000u, ms) == 0); /* due */
    CHECK(timeout_from(&w, 9000000u, ms) == 0); /* overdue */

    /* 100 ms ticks: deadline 3 = 300 ms; rounded from ns, not ticks. */
    CHECK(timeout_from(&w, 0, 100 * ms) == 500);
    rota_timer_arm_at(&w, &t, 3);
    CHECK(timeout_from(&w, 250000100u, 100 * ms) == 50);
    CHECK(timeout_from(&w, 299999999u, 100 * ms) == 1);

    /* 1 s ticks: deadline 2 s, half a second left. */
    rota_timer_arm_at(&w, &t, 2);
    CHECK(timeout_from(&w, 1500000000u, 1000 * ms) == 500);

    /* Far deadlines clamp; ticks * tick_ns overflowing saturates. */
    rota_timer_arm_at(&w, &t, ROTA_MAX_DEADLINE);
    CHECK(timeout_from(&w, 0, ms) == INT_MAX);
    CHECK(timeout_from(&w, 0, 1) == INT_MAX);
    rota_timer_arm_at(&w, &t, (uint64_t)INT_MAX + 10);
    CHECK(timeout_from(&w, 0, ms) == INT_MAX);

    /* Touch later: the timeout follows (it is recomputed every turn). */
    rota_timer_arm_at(&w, &t, 10);
    CHECK(rota_timer_touch_at(&w, &t, 40) == 0);
    CHECK(timeout_from(&w, 0, ms) == 40);
    rota_timer_cancel(&w, &t);
    CHECK(timeout_from(&w, 0, ms) == -1);
}

/* ------------------------------------- struct rota_epoll: bookkeeping */

static void epoll_object(unsigned flags)
{
    struct rota_clock clk;
    struct rota_wheel w;
    struct rota_epoll et;
    struct rota_timer t[3];
    bool tfd = flags & ROTA_EPOLL_TIMERFD;

    CHECK(rota_epoll_init(NULL, NULL, NULL, 0) == ROTA_EINVAL);
    CHECK(rota_epoll_init(&et, NULL, NULL, flags) == ROTA_EINVAL);
    CHECK(rota_epoll_fd(&et) == -1);
    rota_epoll_close(&et); /* a no-op after a failed init */
    int out = -1;
    CHECK(rota_epoll_wait_ms(NULL, &out) == ROTA_EINVAL);
    CHECK_EQ_INT(out, 0);
    CHECK(rota_epoll_dispatch(NULL) == ROTA_EINVAL);

    CHECK(rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    static struct rota_wheel zeroed; /* never initialised */
    struct rota_clock no_clock = {0};
    CHECK(rota_epoll_init(&et, &zeroed, &clk, flags) == ROTA_EINVAL);
    rota_wheel_init(&w, rota_clock_now(&clk));
    CHECK(rota_epoll_init(&et, &w, &no_clock, flags) == ROTA_EINVAL);
    CHECK(rota_epoll_init(&et, &w, &clk, 99) == ROTA_EINVAL);
    CHECK(rota_epoll_init(&et, &w, &clk, flags) == 0);
    CHECK(tfd ? rota_epoll_fd(&et) >= 0 : rota_epoll_fd(&et) == -1);
    CHECK(stats_of(&et).armed == ROTA_NEVER);
    CHECK(rota_epoll_wait_ms(&et, NULL) == ROTA_EINVAL);
    CHECK(wait_ms(&et) == -1); /* empty: wait forever */
    CHECK(rota_epoll_dispatch(&et) == 0);
    CHECK_CMPU(stats_of(&et).rearms, ==, 0);

    /* An arm is noticed by the next wait; later arms, touches and cancels
     * change nothing; an earlier arm re-arms once. */
    for (int i = 0; i < 3; i++)
        rota_timer_init(&t[i], NULL);
    uint64_t d = rota_clock_deadline_after(&clk, 60000 * LT_MS);
    CHECK(rota_timer_arm_at(&w, &t[0], d) == 0);
    int ms = wait_ms(&et);
    CHECK(tfd ? ms == -1 : (ms > 59000 && ms <= 60001));
    CHECK(stats_of(&et).armed == d);
    CHECK_CMPU(stats_of(&et).rearms, ==, 1);
    CHECK(rota_timer_arm_at(&w, &t[1], d + 5000) == 0);
    CHECK(rota_timer_touch_at(&w, &t[0], d + 9000) == 0);
    CHECK(rota_epoll_sync(&et) == 0);
    wait_ms(&et);
    CHECK(rota_timer_cancel(&w, &t[1]) == 1);
    wait_ms(&et);
    CHECK_CMPU(stats_of(&et).rearms, ==, 1);
    CHECK(stats_of(&et).armed == d); /* stale but harmless: early */
    CHECK(rota_timer_arm_at(&w, &t[2], d - 30000) == 0);
    CHECK(rota_epoll_sync(&et) == 1);
    CHECK(rota_epoll_sync(&et) == 0);
    CHECK(stats_of(&et).armed == d - 30000);
    CHECK_CMPU(stats_of(&et).rearms, ==, 2);
    /* A dispatch before the armed deadline is a no-op. */
    CHECK(rota_epoll_dispatch(&et) == 0);
    CHECK_CMPU(stats_of(&et).wakeups, ==, 0);
    rota_timer_cancel(&w, &t[0]);
    rota_timer_cancel(&w, &t[2]);

    rota_epoll_close(&et);
    CHECK(rota_epoll_fd(&et) == -1);
    rota_epoll_close(&et); /* twice is fine */
}

/* With CLOCK_MONOTONIC_COARSE the clock may not have reached the deadline
 * when the timerfd fires; dispatch must still fire the timer (no spinning
 * until the coarse clock catches up).  Repeated to catch the lag. */
static int coarse_fired;

static void on_coarse(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
    coarse_fired++;
}

TEST(epoll_object_timeout)
{
    epoll_object(0);
}

TEST(epoll_object_timerfd)
{
    epoll_object(ROTA_EPOLL_TIMERFD);
}

TEST(epoll_timerfd_coarse_clock_fires_once)
{
    struct rota_clock clk;
    struct rota_wheel w;
    struct rota_epoll et;
    struct rota_timer t;

    if (rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC_COARSE, LT_MS / 10) != 0)
        SKIP("no CLOCK_MONOTONIC_COARSE on this system");
    rota_wheel_init(&w, rota_clock_now(&clk));
    CHECK(rota_epoll_init(&et, &w, &clk, ROTA_EPOLL_TIMERFD) == 0);
    rota_timer_init(&t, on_coarse);
    coarse_fired = 0;
    int dispatches = 0;
    for (int round = 0; round < 20; round++) {
        /* A coarse clock's "now" lags the real one: judge by its own. */
        uint64_t due = rota_clock_now_ns(&clk) + 3 * LT_MS;
        CHECK(rota_timer_arm_at(
                  &w, &t, rota_clock_deadline_after(&clk, 3 * LT_MS)) == 0);
        CHECK(wait_ms(&et) == -1);
        struct pollfd pf = {.fd = rota_epoll_fd(&et), .events = POLLIN};
        int before = coarse_fired;
        while (coarse_fired == before && dispatches < 1000) {
            CHECK(poll(&pf, 1, 1000) == 1);
            CHECK(rota_epoll_dispatch(&et) >= 0);
            dispatches++;
        }
        CHECK_CMPU(lt_mono_ns(), >=, due);
    }
    CHECK(coarse_fired == 20);
    CHECK_CMPU(dispatches, ==, 20); /* one wake-up each, no spinning */
    rota_epoll_close(&et);
}

/* -------------------------------------------- a minimal epoll loop */

#define MAX_FD 1024

static int ep = -1;
static unsigned et_flags;
static struct rota_clock clk;
static struct rota_epoll et;
static int nwatched;

static struct {
    lt_io_fn *fn;
    void *arg;
} watches[MAX_FD];

static void e_init(struct rota_wheel *wheel, const struct rota_clock *clock)
{
    ep = epoll_create1(EPOLL_CLOEXEC);
    CHECK(ep >= 0);
    clk = *clock;
    nwatched = 0;
    CHECK(rota_epoll_init(&et, wheel, &clk, et_flags) == 0);
    if (rota_epoll_fd(&et) >= 0) {
        struct epoll_event ev = {.events = EPOLLIN,
                                 .data.fd = rota_epoll_fd(&et)};
        CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, rota_epoll_fd(&et), &ev) == 0);
    }
}

static uint64_t e_deadline_in(uint64_t delay_ns)
{
    return rota_clock_deadline_after(&clk, delay_ns);
}

static void e_sync(void)
{
    CHECK(rota_epoll_sync(&et) >= 0);
}

static void e_watch(int fd, lt_io_fn *fn, void *arg)
{
    CHECK(fd >= 0 && fd < MAX_FD);
    watches[fd].fn = fn;
    watches[fd].arg = arg;
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == 0);
    nwatched++;
}

static void e_unwatch(int fd)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
    watches[fd].fn = NULL;
    nwatched--;
}

/* The loop of the header's example: runs while anything is watched or the
 * wheel will wake it; bounded in time. */
static void e_run(void)
{
    struct epoll_event evs[64];
    uint64_t give_up = lt_mono_ns() + 10000 * LT_MS;
    bool tfd = rota_epoll_fd(&et) >= 0;

    for (;;) {
        int timeout = wait_ms(&et);
        if ((nwatched == 0 && stats_of(&et).armed == ROTA_NEVER) ||
            lt_mono_ns() >= give_up)
            break;
        if (timeout < 0 || timeout > 1000)
            timeout = 1000; /* the time bound above */
        int n = epoll_wait(ep, evs, 64, timeout);
        bool timer_ready = false;
        for (int i = 0; i < n; i++) {
            int fd = evs[i].data.fd;
            if (tfd && fd == rota_epoll_fd(&et))
                timer_ready = true; /* after the I/O: see the server */
            else if (watches[fd].fn != NULL)
                watches[fd].fn(fd, watches[fd].arg);
        }
        if (!tfd || timer_ready)
            CHECK(rota_epoll_dispatch(&et) >= 0);
    }
    CHECK(lt_mono_ns() < give_up);
}

static void e_fini(void)
{
    rota_epoll_close(&et);
    close(ep);
}

static void e_stats(struct rota_loop_stats *out)
{
    rota_epoll_stats(&et, out);
}

static void e_set_budget(size_t max_fires)
{
    rota_epoll_set_budget(&et, max_fires);
}

static void select_timeout(void)
{
    et_flags = 0;
}

static void select_timerfd(void)
{
    et_flags = ROTA_EPOLL_TIMERFD;
}

#define EPOLL_OPS                                                              \
    .init = e_init, .deadline_in = e_deadline_in, .sync = e_sync,              \
    .watch = e_watch, .unwatch = e_unwatch, .run = e_run, .fini = e_fini,      \
    .stats = e_stats, .set_budget = e_set_budget, .sync_in_callbacks = false,  \
    .counts_rearms = true

/* Driven by the epoll_wait() timeout, then by a timerfd. */
static const struct lt_ops timeout_ops = {
    .name = "epoll-timeout", .select = select_timeout, EPOLL_OPS};
static const struct lt_ops timerfd_ops = {
    .name = "epoll-timerfd", .select = select_timerfd, EPOLL_OPS};

LT_TESTS(epoll_timeout, timeout_ops)
LT_TESTS(epoll_timerfd, timerfd_ops)
LT_PLANTED_TESTS(epoll_timerfd, timerfd_ops)

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(epoll_timeout_rounding),
        H_TEST(epoll_object_timeout),
        H_TEST(epoll_object_timerfd),
        H_TEST(epoll_timerfd_coarse_clock_fires_once),
        LT_TEST_LIST(epoll_timeout),
        LT_TEST_LIST(epoll_timerfd),
        LT_PLANTED_TEST_LIST(epoll_timerfd),
    };
    return lt_main(argc, argv, tests, H_COUNT(tests));
}
