/* SPDX-License-Identifier: MIT */
/*
 * test_catchup.c - calm after a stall (rota/catchup.h).
 *
 * On a fake clock:
 *   catchup_spreads_overdue_timers   100 timers overdue after a stall of
 *       ~900 ticks fire 10 per call, calls 5 ticks apart, in deadline
 *       order, never early; the stats say one stall, its length and 100
 *       overdue; afterwards the wheel is exact again;
 *   catchup_no_stall_is_plain_advance  lateness below the threshold fires
 *       everything in one call;
 *   catchup_check_catches_a_burst    the planted fault: the same stall
 *       advanced with rota_wheel_advance() fires all 100 in one call, and
 *       the rate check must fail.
 * On a real epoll loop (rota/epoll.h, rota_epoll_set_catchup()):
 *   catchup_real_loop_after_simulated_stall  200 timers due in 20 ms, then
 *       the process sleeps 300 ms (the stall) before it runs the loop: the
 *       timers fire at most 10 per call, calls 5 ms apart, spread over at least 95 ms, none
 *       early by CLOCK_MONOTONIC, and the stats count the stall.
 */
#define _POSIX_C_SOURCE 200809L
#include <rota.h>
#include <rota/catchup.h>
#include <rota/clock.h>
#include <rota/epoll.h>

#include <sys/epoll.h>
#include <time.h>

#include "harness.h"

static struct rota_wheel wheel;

/* Fires recorded: the deadline that came due and the `now` it fired at. */
#define MAXF 512
static uint64_t fire_deadline[MAXF], fire_now[MAXF];
static int nfires;

static void record(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    if (nfires < MAXF) {
        fire_deadline[nfires] = rota_timer_deadline(t);
        fire_now[nfires] = rota_timer_deadline(t) + late;
        nfires++;
    }
}

/* Checks the fires of one catch-up: never early, in deadline order, at
 * most `burst` per distinct `now`, distinct nows `spacing` apart.  Returns
 * whether the rate held. */
static bool rate_held(size_t burst, uint64_t spacing)
{
    bool ok = true;
    int in_call = 0;
    for (int i = 0; i < nfires; i++) {
        CHECK_CMPU(fire_now[i], >=, fire_deadline[i]);
        if (i > 0)
            CHECK_CMPU(fire_deadline[i], >=, fire_deadline[i - 1]);
        if (i > 0 && fire_now[i] == fire_now[i - 1]) {
            in_call++;
        } else {
            if (i > 0 && fire_now[i] - fire_now[i - 1] < spacing)
                ok = false;
            in_call = 1;
        }
        if ((size_t)in_call > burst)
            ok = false;
    }
    return ok;
}

static void arm_overdue(struct rota_timer *t, int n)
{
    rota_wheel_init(&wheel, 0);
    for (int i = 0; i < n; i++) {
        rota_timer_init(&t[i], record);
        rota_timer_arm_at(&wheel, &t[i], 10 + (uint64_t)i);
    }
    nfires = 0;
}

TEST(catchup_spreads_overdue_timers)
{
    static struct rota_timer t[100];
    struct rota_catchup c;
    struct rota_catchup_stats st;

    CHECK_EQ_INT(rota_catchup_init(&c, 0, 10, 5), ROTA_EINVAL);
    CHECK_EQ_INT(rota_catchup_init(&c, 100, 10, 5), 0);
    arm_overdue(t, 100);
    /* The stall: the first advance comes at 1000, 990 ticks late. */
    uint64_t now = 1000;
    CHECK_EQ_INT(rota_catchup_advance(&c, &wheel, now), 10);
    CHECK(rota_catchup_active(&c));
    CHECK_EQ_U64(rota_catchup_next_wake(&c, &wheel), 1005);
    CHECK_EQ_INT(rota_catchup_advance(&c, &wheel, 1003), 0); /* held */
    int calls = 1;
    while (rota_catchup_active(&c) && calls < 100) {
        now = rota_catchup_next_wake(&c, &wheel);
        rota_catchup_advance(&c, &wheel, now);
        calls++;
    }
    CHECK_EQ_INT(calls, 10);
    CHECK_EQ_INT(nfires, 100);
    CHECK(rate_held(10, 5));
    rota_catchup_stats(&c, &st);
    CHECK_EQ_U64(st.stalls, 1);
    CHECK_EQ_U64(st.last_stall, 990);
    CHECK_EQ_U64(st.overdue, 100);
    CHECK_EQ_U64(st.last_overdue, 100);
    CHECK_EQ_U64(st.held, 1);
    /* Exact again: a timer due later fires in the first advance at it. */
    rota_timer_arm_at(&wheel, &t[0], now + 50);
    CHECK_EQ_U64(rota_catchup_next_wake(&c, &wheel), now + 50);
    CHECK_EQ_INT(rota_catchup_advance(&c, &wheel, now + 49), 0);
    CHECK_EQ_INT(rota_catchup_advance(&c, &wheel, now + 50), 1);
    CHECK_WHEEL(&wheel);
}

TEST(catchup_no_stall_is_plain_advance)
{
    static struct rota_timer t[100];
    struct rota_catchup c;
    struct rota_catchup_stats st;

    rota_catchup_init(&c, 200, 10, 5);
    arm_overdue(t, 100);
    /* 190 ticks late: below the threshold. */
    CHECK_EQ_INT(rota_catchup_advance(&c, &wheel, 200), 100);
    CHECK(!rota_catchup_active(&c));
    rota_catchup_stats(&c, &st);
    CHECK_EQ_U64(st.stalls, 0);
    CHECK_EQ_U64(rota_catchup_next_wake(&c, &wheel), ROTA_NEVER);
}

TEST(catchup_check_catches_a_burst)
{
    static struct rota_timer t[100];

    arm_overdue(t, 100);
    rota_wheel_advance(&wheel, 1000); /* no policy: one burst */
    unsigned long mark = h_expect_begin();
    CHECK(rate_held(10, 5));
    CHECK(h_expect_end(mark) > 0);
}

/* ------------------------------------------------------ on a real loop */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct rota_clock clk;
static uint64_t real_due_ns[MAXF], real_fired_ns[MAXF];
static int nreal;

/* When the dispatch that fires a timer began: the catch-up spaces its
 * calls, and a slow callback (valgrind) must not look like a burst. */
static uint64_t real_call_ns[MAXF], call_ns;

static void real_fire(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    (void)late;
    if (nreal < MAXF) {
        real_due_ns[nreal] = rota_clock_ns(&clk, rota_timer_deadline(t));
        real_fired_ns[nreal] = mono_ns();
        real_call_ns[nreal] = call_ns;
        nreal++;
    }
}

TEST(catchup_real_loop_after_simulated_stall)
{
    static struct rota_timer t[200];
    struct rota_epoll et;
    struct rota_catchup c;
    struct rota_catchup_stats st;
    const uint64_t ms = 1000000u;

    CHECK_EQ_INT(rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC, ms), 0);
    rota_wheel_init(&wheel, rota_clock_now(&clk));
    CHECK_EQ_INT(rota_epoll_init(&et, &wheel, &clk, 0), 0);
    rota_catchup_init(&c, 100, 10, 5); /* stall: 100 ms; 10 per 5 ms */
    CHECK_EQ_INT(rota_epoll_set_catchup(&et, &c), 0);
    int ep = epoll_create1(0);
    if (!CHECK(ep >= 0))
        return;
    for (int i = 0; i < 200; i++) {
        rota_timer_init(&t[i], real_fire);
        rota_timer_arm_at(&wheel, &t[i],
                          rota_clock_deadline_after(&clk, 20 * ms));
    }
    nreal = 0;
    /* The stall: the process does not run its loop for 300 ms. */
    struct timespec stall = {0, 300000000};
    nanosleep(&stall, NULL);
    uint64_t t0 = mono_ns();
    while (nreal < 200 && mono_ns() - t0 < 5000 * ms) {
        int timeout;
        struct epoll_event ev;
        rota_epoll_wait_ms(&et, &timeout);
        epoll_wait(ep, &ev, 1, timeout);
        call_ns = mono_ns();
        rota_epoll_dispatch(&et);
    }
    CHECK_EQ_INT(nreal, 200);
    int early = 0, max_in_window = 0;
    for (int i = 0; i < nreal; i++) {
        if (real_fired_ns[i] < real_due_ns[i])
            early++;
        /* Fires whose dispatch began within 3 ms before this one's: calls
         * are 5 ticks apart, more than 4 ms whichever way the clock rounds
         * to ticks, and the clock is read a little after call_ns. */
        int in_window = 0;
        for (int j = 0; j <= i; j++)
            if (real_call_ns[i] - real_call_ns[j] < 3 * ms)
                in_window++;
        if (in_window > max_in_window)
            max_in_window = in_window;
    }
    uint64_t spread = real_fired_ns[nreal - 1] - real_fired_ns[0];
    rota_catchup_stats(&c, &st);
    printf("  200 overdue timers after a %.0f ms stall: spread over %.1f ms, "
           "at most %d from calls within 3 ms; stats: %" PRIu64
           " stall of %" PRIu64 " ticks, %" PRIu64 " overdue\n",
           300.0, (double)spread / 1e6, max_in_window, st.stalls, st.last_stall,
           st.overdue);
    CHECK_EQ_INT(early, 0);
    CHECK_CMP(max_in_window, <=, 10);
    CHECK_CMPU(spread, >=, 95 * ms); /* 20 calls, 5 ms apart at least */
    CHECK_EQ_U64(st.stalls, 1);
    CHECK_CMPU(st.last_stall, >=, 250);
    CHECK_EQ_U64(st.overdue, 200);
    rota_epoll_close(&et);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(catchup_spreads_overdue_timers),
        H_TEST(catchup_no_stall_is_plain_advance),
        H_TEST(catchup_check_catches_a_burst),
        H_TEST(catchup_real_loop_after_simulated_stall),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
