/* SPDX-License-Identifier: MIT */
/*
 * test_wheel_query.c - unit tests of the core wheel (rota.h) on a fake
 * clock: introspection: the exact next deadline, the epoll timeout
 * (rounding, errors that never wait forever) and the counters.
 * Shared fixture: wheel_fixture.h.  rota_wheel_check() runs after the
 * operations.  Nothing sleeps: time is whatever the test passes in.
 */
#include "wheel_fixture.h"

/* ------------------------------------------------------- next deadline */

static void touch_deferred_then_ask(struct rota_wheel *w, struct tn *self)
{
    (void)self;
    rota_timer_arm_in(w, &victims[0]->per.timer, 0);     /* deferred: due now */
    rota_timer_touch_at(w, &victims[0]->per.timer, 100); /* pushed to 100 */
    armed_deadline = rota_wheel_next_deadline(w);
}

TEST(next_deadline_exact)
{
    struct tn t[6];

    new_wheel(&wheel, 0);
    tn_init_all(t, 6);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), ROTA_NEVER);
    /* Far away at a high level: the exact deadline, not its slot start. */
    uint64_t far = ((uint64_t)1 << 50) + 123456789;
    rota_timer_arm_at(&wheel, &t[0].per.timer, far);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), far);
    rota_timer_arm_at(&wheel, &t[1].per.timer, far + 1000); /* same top slot */
    rota_timer_arm_at(&wheel, &t[2].per.timer, far - 7);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), far - 7);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[2].per.timer), 1);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), far);
    /* Touch the earliest later: the next one becomes the earliest. */
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &t[0].per.timer, far + 5000), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), far + 1000);
    /* Touch earlier. */
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &t[1].per.timer, 777), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 777);
    /* A nearer one armed. */
    rota_timer_arm_at(&wheel, &t[3].per.timer, 70);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 70);
    CHECK_WHEEL(&wheel);
    /* After firing the earliest. */
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 70), 1);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 777);
    /* Touched later twice, all in one slot. */
    rota_timer_touch_at(&wheel, &t[1].per.timer, 800);
    rota_timer_touch_at(&wheel, &t[1].per.timer, 900);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 900);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 899), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 900), 1);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), far + 5000);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, far + 4999), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, far + 5000), 1);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), ROTA_NEVER);
    CHECK_WHEEL(&wheel);
}

TEST(next_deadline_after_touching_deferred_timer)
{
    /* In a callback at now 10: arm b with delay 0 (deferred to the next
     * call), then touch it to 100.  The earliest pending deadline is 100,
     * inside the callback and after the pass; a stale 10 would make an
     * event loop spin on timeout 0. */
    struct tn a, b;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    tn_init(&b, 1);
    a.act = touch_deferred_then_ask;
    victims[0] = &b;
    rota_timer_arm_at(&wheel, &a.per.timer, 10);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 10), 1);
    CHECK_EQ_U64(armed_deadline, 100);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 100);
    CHECK_EQ_INT(tmo(&wheel, 10, 1000000), 90);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 99), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 100), 1);
}

TEST(timeout_ms_rounding)
{
    struct tn a;
    const uint64_t ms = 1000000;

    new_wheel(&wheel, 1000);
    tn_init(&a, 0);
    CHECK_EQ_INT(tmo(&wheel, 1000, ms), -1);
    rota_timer_arm_at(&wheel, &a.per.timer, 1001);
    CHECK_EQ_INT(tmo(&wheel, 1000, ms), 1);
    CHECK_EQ_INT(tmo(&wheel, 1001, ms), 0); /* due */
    CHECK_EQ_INT(tmo(&wheel, 5000, ms), 0);
    CHECK_EQ_INT(tmo(&wheel, 990, ms), 11); /* caller's now */
    /* Rounded up, never to 0 while not due. */
    CHECK_EQ_INT(tmo(&wheel, 1000, 1), 1);       /* 1 ns */
    CHECK_EQ_INT(tmo(&wheel, 1000, 1500000), 2); /* 1.5 ms */
    CHECK_EQ_INT(tmo(&wheel, 1000, 999999), 1);
    CHECK_EQ_INT(tmo(&wheel, 1000, 1000001), 2);
    rota_timer_arm_at(&wheel, &a.per.timer, 1000 + 1000000);
    CHECK_EQ_INT(tmo(&wheel, 1000, 1), 1); /* 1e6 ns */
    rota_timer_arm_at(&wheel, &a.per.timer, 1000 + 1000001);
    CHECK_EQ_INT(tmo(&wheel, 1000, 1), 2);
    rota_timer_arm_at(&wheel, &a.per.timer, 1000 + 3000);
    CHECK_EQ_INT(tmo(&wheel, 1000, 1000), 3); /* us ticks */
    /* Clamped at INT_MAX. */
    rota_timer_arm_at(&wheel, &a.per.timer, 1000 + (uint64_t)INT_MAX);
    CHECK_EQ_INT(tmo(&wheel, 1000, ms), INT_MAX);
    rota_timer_arm_at(&wheel, &a.per.timer, 1000 + (uint64_t)INT_MAX - 1);
    CHECK_EQ_INT(tmo(&wheel, 1000, ms), INT_MAX - 1);
    rota_timer_arm_at(&wheel, &a.per.timer, ROTA_MAX_DEADLINE);
    CHECK_EQ_INT(tmo(&wheel, 1000, ms), INT_MAX);
    CHECK_EQ_INT(tmo(&wheel, 1000, UINT64_MAX), INT_MAX);
    CHECK_EQ_INT(tmo(&wheel, 0, 1), INT_MAX);
    rota_timer_arm_at(&wheel, &a.per.timer, 1001);
    CHECK_EQ_INT(tmo(&wheel, 1000, UINT64_MAX), INT_MAX);
    CHECK_EQ_INT(tmo(&wheel, 1000, (uint64_t)INT_MAX * ms), INT_MAX);
    CHECK_EQ_INT(tmo(&wheel, 1000, (uint64_t)INT_MAX * ms - 1), INT_MAX);
    CHECK_EQ_INT(tmo(&wheel, 1000, (uint64_t)(INT_MAX - 1) * ms + 1), INT_MAX);
    CHECK_EQ_INT(tmo(&wheel, 1000, (uint64_t)(INT_MAX - 1) * ms), INT_MAX - 1);
    /* Against 128-bit arithmetic over many values. */
    uint64_t seed = 5;
    for (int i = 0; i < 20000; i++) {
        uint64_t r = h_rand(&seed) >> (h_rand(&seed) % 64);
        uint64_t d =
            r > ROTA_MAX_DEADLINE - 1001 ? ROTA_MAX_DEADLINE : 1001 + r;
        uint64_t tick = h_rand(&seed) >> (h_rand(&seed) % 64);
        if (tick == 0)
            tick = 1;
        rota_timer_arm_at(&wheel, &a.per.timer, d);
        int e = (int)w_min64(w_div_ceil(w_mul(d - 1000, tick), ms), INT_MAX);
        if (!CHECK_EQ_INT(tmo(&wheel, 1000, tick), e)) {
            fprintf(stderr, "    deadline %" PRIu64 ", tick %" PRIu64 "\n", d,
                    tick);
            break;
        }
    }
    CHECK_WHEEL(&wheel);
}

/* epoll_wait() and poll() wait forever for any negative timeout: an error
 * must leave 0 (poll), never -1, and differ from "no timer" (rc 0, -1). */
TEST(timeout_ms_errors_never_wait_forever)
{
    int ms;

    new_wheel(&wheel, 0);
    ms = 12345;
    CHECK_EQ_INT(rota_wheel_timeout_ms(&wheel, 0, 1000000, &ms), 0);
    CHECK_EQ_INT(ms, -1); /* no timer: wait forever */
    ms = -1;
    CHECK_EQ_INT(rota_wheel_timeout_ms(NULL, 0, 1000000, &ms), ROTA_EINVAL);
    CHECK_EQ_INT(ms, 0);
    ms = -1;
    CHECK_EQ_INT(rota_wheel_timeout_ms(&wheel, 1000, 0, &ms), ROTA_EINVAL);
    CHECK_EQ_INT(ms, 0);
    CHECK_EQ_INT(rota_wheel_timeout_ms(&wheel, 0, 1000000, NULL), ROTA_EINVAL);
    CHECK(ROTA_EINVAL != 0); /* an error is never read as success */
}

/* --------------------------------------------------------------- stats */

TEST(stats_counters)
{
    struct tn t[6];
    struct rota_stats s;
    struct rota_timer *out[4];
    size_t n;
    int drained = 0;

    new_wheel(&wheel, 0);
    tn_init_all(t, 6);
    rota_timer_arm_at(&wheel, &t[0].per.timer, 10); /* armed 1 */
    rota_timer_arm_in(&wheel, &t[1].per.timer, 20); /* 2 */
    rota_periodic_arm_at(&wheel, &t[2].per, 5, 5, ROTA_MISSED_BURST); /* 3 */
    rota_timer_arm_at(&wheel, &t[3].per.timer, 1000);                 /* 4 */
    rota_timer_arm_at(&wheel, &t[3].per.timer, 2000);   /* 5: re-arm */
    rota_timer_touch_at(&wheel, &t[3].per.timer, 3000); /* touched 1 */
    rota_timer_touch_at(&wheel, &t[3].per.timer, 2500); /* armed 6 */
    rota_timer_arm_at(&wheel, &t[4].per.timer, 50);     /* 7 */
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[4].per.timer),
                 1); /* cancelled 1 */
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[4].per.timer),
                 0);                /* not counted */
    rota_wheel_advance(&wheel, 15); /* t2 at 5, 10, 15; t0 at 10: fired 4 */
    rota_wheel_advance(&wheel, 3);  /* backwards 1 */
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 20, out, 4, &n), 0); /* t1, t2@20 */
    CHECK_EQ_U64(n, 2);                                         /* fired 6 */
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.armed, 7);
    CHECK_EQ_U64(s.fired, 6);
    CHECK_EQ_U64(s.cancelled, 1);
    CHECK_EQ_U64(s.touched, 1);
    CHECK_EQ_U64(s.drained, 0);
    CHECK_EQ_U64(s.clock_backwards, 1);
    CHECK_EQ_U64(s.pending, 2); /* t2 (periodic), t3 */
    CHECK_EQ_U64(s.pending, rota_wheel_count(&wheel));
    CHECK_EQ_INT(rota_wheel_drain(&wheel, drain_count, &drained), 0);
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.drained, 2);
    CHECK_EQ_U64(s.pending, 0);
    CHECK_EQ_INT(drained, 2);
    /* refiled counts cascades: a timer above level 0 must move down before
     * it fires, so at least once. */
    rota_timer_arm_at(&wheel, &t[5].per.timer, 20 + 4096 * 3);
    rota_wheel_advance(&wheel, 20 + 4096 * 3);
    rota_wheel_stats(&wheel, &s);
    CHECK(s.refiled >= 1);
    CHECK_WHEEL(&wheel);
}

TEST(stats_touch_to_same_deadline_is_not_counted)
{
    /* "touched: touches that moved a deadline later": a touch to the same
     * deadline (or one that saturates or clamps to it) moves nothing. */
    struct tn a, b;
    struct rota_stats s;

    new_wheel(&wheel, 100);
    tn_init(&a, 0);
    tn_init(&b, 1);
    rota_timer_arm_at(&wheel, &a.per.timer, 500);
    rota_timer_arm_at(&wheel, &b.per.timer, UINT64_MAX);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &a.per.timer, 500), 0);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &b.per.timer, UINT64_MAX), 0);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &b.per.timer, ROTA_MAX_DEADLINE),
                 0);
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.touched, 0);
    CHECK_EQ_U64(s.armed, 2);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &a.per.timer, 501), 0);
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.touched, 1);
    CHECK_WHEEL(&wheel);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(next_deadline_exact),
        H_TEST(next_deadline_after_touching_deferred_timer),
        H_TEST(timeout_ms_rounding),
        H_TEST(timeout_ms_errors_never_wait_forever),
        H_TEST(stats_counters),
        H_TEST(stats_touch_to_same_deadline_is_not_counted),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
