/* SPDX-License-Identifier: MIT */
/*
 * test_wheel_arm.c - unit tests of the core wheel (rota.h) on a fake
 * clock: arm, touch, cancel and drain: the basic contract of each call, the
 * sizes and version the header documents, the ranged arm and touch.
 * Shared fixture: wheel_fixture.h.  rota_wheel_check() runs after the
 * operations.  Nothing sleeps: time is whatever the test passes in.
 */
#include "wheel_fixture.h"

/* ------------------------------------------------------ the basic calls */

TEST(wheel_init_empty)
{
    struct rota_stats s;

    CHECK_EQ_INT(rota_wheel_init(NULL, 0), ROTA_EINVAL);
    CHECK_EQ_INT(rota_wheel_init(&wheel, 0), 0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), 0);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), ROTA_NEVER);
    CHECK_EQ_INT(tmo(&wheel, 0, 1000000), -1);
    memset(&s, 0xff, sizeof s);
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.armed + s.fired + s.cancelled + s.touched + s.refiled +
                     s.drained + s.clock_backwards + s.pending,
                 0);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1000), 0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), 1000);

    /* A `now` above ROTA_MAX_DEADLINE is read as ROTA_MAX_DEADLINE. */
    CHECK_EQ_INT(rota_wheel_init(&wheel, UINT64_MAX), 0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), ROTA_MAX_DEADLINE);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_INT(rota_wheel_init(&wheel, ROTA_MAX_DEADLINE), 0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), ROTA_MAX_DEADLINE);
}

TEST(version_matches_header)
{
    char buf[64];

    CHECK_EQ_STR(rota_version(), ROTA_VERSION_STRING);
    snprintf(buf, sizeof buf, "%d.%d.%d", ROTA_VERSION_MAJOR,
             ROTA_VERSION_MINOR, ROTA_VERSION_PATCH);
    CHECK_EQ_STR(rota_version(), buf);
}

TEST(sizes_as_documented)
{
#if UINTPTR_MAX > 0xffffffffu
    CHECK_EQ_U64(sizeof(struct rota_timer), 32);
    CHECK_EQ_U64(sizeof(struct rota_periodic), 48);
#else
    CHECK(sizeof(struct rota_timer) <= 24);
    /* 36 where a uint64_t is aligned to 4 bytes (i386), 40 where it is
     * aligned to 8 (32-bit Arm, MIPS, PowerPC): the period's word. */
    CHECK(sizeof(struct rota_periodic) <= 40);
#if defined(__i386__)
    CHECK_EQ_U64(sizeof(struct rota_periodic), 36);
#endif
#endif
    /* The slot heads and the cascade marks are most of it: 2,048 + 256
     * links (37 KiB in all on a 64-bit target, about 19 KiB on a 32-bit
     * one), plus about 1 KiB of bitmaps, counters and the lateness
     * histogram. */
    size_t heads =
        (ROTA_WHEEL_LEVELS + 1) * ROTA_WHEEL_SLOTS * sizeof(struct rota_link);
    CHECK(sizeof(struct rota_wheel) >= heads);
    CHECK(sizeof(struct rota_wheel) <= heads + 1536);
#if defined(__x86_64__)
    CHECK(sizeof(struct rota_wheel) >= 36 * 1024);
    CHECK(sizeof(struct rota_wheel) <= 38 * 1024);
#endif
    CHECK_EQ_U64(ROTA_WHEEL_LEVELS, 8);
    CHECK_EQ_U64(ROTA_WHEEL_SLOTS, 256);
    CHECK_EQ_U64(ROTA_MAX_DEADLINE, UINT64_MAX - 1);
    CHECK_EQ_U64(ROTA_NEVER, UINT64_MAX);
}

TEST(arm_fire_cancel_basics)
{
    struct tn a, b;

    new_wheel(&wheel, 1000);
    tn_init(&a, 0);
    tn_init(&b, 1);
    CHECK(!rota_timer_pending(&a.per.timer));
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &a.per.timer), 0); /* never armed */
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 1500), 0);
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, &b.per.timer, 700), 0);
    CHECK(rota_timer_pending(&a.per.timer));
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 1500);
    CHECK_EQ_U64(rota_timer_deadline(&b.per.timer), 1700);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 2);
    CHECK_WHEEL(&wheel);
    /* A deadline in the past is clamped to now: due at once. */
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 3), 0);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 1000);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 1000);
    CHECK_EQ_INT(tmo(&wheel, 1000, 1000000), 0);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1000), 1);
    CHECK_EQ_INT(ent[0].id, 0);
    CHECK_EQ_U64(ent[0].late, 0);
    CHECK(!ent[0].pending); /* a one-shot is idle inside its callback */
    CHECK_EQ_U64(ent[0].deadline, 1000);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &a.per.timer), 0); /* fired */
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &b.per.timer), 1);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &b.per.timer), 0); /* again */
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 5000), 0);
    CHECK_WHEEL(&wheel);
}

TEST(timer_init_again_changes_callback)
{
    struct tn a;
    int drained = 0;

    new_wheel(&wheel, 0);
    tn_init(&a, 7);
    rota_timer_arm_at(&wheel, &a.per.timer, 5);
    log_reset();
    rota_wheel_advance(&wheel, 5);
    CHECK_EQ_U64(nent, 1);
    /* Idle now: init again with no callback, then collect with expire. */
    rota_timer_init(&a.per.timer, NULL);
    rota_timer_arm_at(&wheel, &a.per.timer, 9);
    struct rota_timer *out[1];
    size_t n = 0;
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 9, out, 1, &n), 0);
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_PTR(out[0], &a.per.timer);
    CHECK_EQ_U64(nent, 1); /* no callback */
    CHECK_EQ_INT(rota_wheel_drain(&wheel, drain_count, &drained), 0);
    CHECK_EQ_INT(drained, 0);
}

/* --------------------------------------------------------------- drain */

struct drain_ctx {
    int count;
    int pending_inside;
    int freed;
};

static void drain_free(struct rota_timer *t, void *arg)
{
    struct drain_ctx *c = arg;
    c->count++;
    c->pending_inside += rota_timer_pending(t);
    free(rota_container_of(t, struct tn, per.timer));
    c->freed++;
}

TEST(drain_hands_back_everything)
{
    enum { N = 300 };
    struct drain_ctx c = {0};
    struct rota_stats s;
    struct tn keep;
    uint64_t seed = 3;

    new_wheel(&wheel, 500);
    for (int i = 0; i < N; i++) {
        struct tn *n = malloc(sizeof *n);
        if (!CHECK(n != NULL))
            return;
        tn_init(n, i);
        if (i % 3 == 0)
            rota_timer_arm_at(&wheel, &n->per.timer, 500); /* due now */
        else if (i % 3 == 1)
            rota_timer_arm_at(&wheel, &n->per.timer,
                              500 + h_rand(&seed) % 1000000000);
        else
            rota_periodic_arm_at(&wheel, &n->per, 600, 1 + (uint64_t)i,
                                 (enum rota_missed)(i % 3));
    }
    /* Some timers already due and partly expired: the due list too. */
    struct rota_timer *out[2];
    size_t n = 0;
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 500, out, 2, &n), 1);
    for (size_t i = 0; i < n; i++)
        free(rota_container_of(out[i], struct tn, per.timer));
    CHECK_EQ_INT(rota_wheel_drain(&wheel, drain_free, &c), 0);
    CHECK_EQ_INT(c.count, N - 2);
    CHECK_EQ_INT(c.pending_inside, 0);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), ROTA_NEVER);
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.drained, N - 2);
    CHECK_EQ_U64(s.pending, 0);
    CHECK_WHEEL(&wheel);
    /* Empty wheel: fn is not called. */
    c.count = 0;
    CHECK_EQ_INT(rota_wheel_drain(&wheel, drain_free, &c), 0);
    CHECK_EQ_INT(c.count, 0);
    /* Still usable. */
    tn_init(&keep, 1);
    rota_timer_arm_at(&wheel, &keep.per.timer, 700);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 2000000000), 1);
    CHECK_EQ_U64(ent[0].late, 2000000000 - 700);
    CHECK_WHEEL(&wheel);
}

/* --------------------------------------------------------------- touch */

/* The one-store touch: the same firing as rota_timer_touch_at(), not counted,
 * and a cached earliest deadline that may be early only until an advance
 * reaches it (timeout_ms must not keep answering 0). */
TEST(touch_unchecked_moves_later_and_heals_the_cache)
{
    struct tn a, b;
    struct rota_stats s;

    new_wheel(&wheel, 1000);
    tn_init(&a, 0);
    tn_init(&b, 1);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 1100), 0);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &b.per.timer, 1200), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 1100);
    rota_timer_touch_at_unchecked(&wheel, &a.per.timer, 1300);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 1300);
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.touched, 0);
    CHECK_WHEEL(&wheel);
    /* Early (the old deadline) or exact, never later than the truth. */
    uint64_t next = rota_wheel_next_deadline(&wheel);
    CHECK(next == 1100 || next == 1200);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1100), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 1200);
    CHECK_EQ_INT(tmo(&wheel, 1100, 1000000), 100);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1200), 1);
    CHECK_EQ_INT(ent[0].id, 1);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1299), 0);
    CHECK(rota_timer_pending(&a.per.timer));
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1300), 1);
    CHECK_EQ_INT(ent[1].id, 0);
    CHECK_EQ_U64(ent[1].late, 0);
    CHECK_WHEEL(&wheel);

    /* The stale value must not survive a quiet advance either: a timer due
     * now, moved by an unchecked touch, then re-armed elsewhere. */
    new_wheel(&wheel, 5000);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 5000), 0);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &b.per.timer, 9000), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 5000);
    rota_timer_touch_at_unchecked(&wheel, &a.per.timer, 6000);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 7000), 0);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 5000), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 7000);
    CHECK_EQ_INT(tmo(&wheel, 5000, 1000000), 2000);
    CHECK_WHEEL(&wheel);
}

/* Slack: the pick is the window's instant with the most trailing zero bits;
 * timers with overlapping windows share it; a level-2 timeout with a window
 * of 65,536 ticks is moved once (slot to due list), one without slack
 * twice; bad windows are refused and change nothing. */
TEST(arm_range_picks_the_coarsest_instant)
{
    struct tn t[6];
    struct rota_stats st;

    new_wheel(&wheel, 1000);
    tn_init_all(t, 6);
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &t[0].per.timer, 5000, 5000),
                 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[0].per.timer), 5000);
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &t[0].per.timer, 1005, 1007),
                 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[0].per.timer), 1006);
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &t[1].per.timer, 1100, 1300),
                 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[1].per.timer), 1280); /* 5 * 256 */
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &t[2].per.timer, 1025, 1600),
                 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[2].per.timer), 1536); /* 3 * 512 */
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &t[3].per.timer, 1200, 1290),
                 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[3].per.timer), 1280); /* shared */
    /* A window in the past clamps to now: due at once. */
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &t[4].per.timer, 10, 20), 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[4].per.timer), 1000);
    /* A window ending at ROTA_NEVER saturates: 2^63 is inside. */
    CHECK_EQ_INT(
        rota_timer_arm_range_at(&wheel, &t[5].per.timer, 2000, UINT64_MAX), 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[5].per.timer), (uint64_t)1 << 63);
    /* earliest > latest: refused, the timer keeps its state. */
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &t[5].per.timer, 3000, 2999),
                 ROTA_EINVAL);
    CHECK_EQ_U64(rota_timer_deadline(&t[5].per.timer), (uint64_t)1 << 63);
    CHECK_EQ_INT(rota_timer_arm_range_at(NULL, &t[5].per.timer, 1, 2),
                 ROTA_EINVAL);
    CHECK_WHEEL(&wheel);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1000), 1); /* t4 */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1279), 1); /* t0 at 1006 */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1280), 2); /* t1, t3 together */
    CHECK_EQ_INT(ent[2].id, 1);
    CHECK_EQ_INT(ent[3].id, 3);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1536), 1);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[5].per.timer), 1);

    /* Moves: a deadline 200,000 ticks out sits at level 2; exact, it is
     * filed again at level 1 and then at level 0 (two moves); picked from
     * a 65,536-tick window it starts its level-2 slot: one move, to the
     * due list. */
    new_wheel(&wheel, 0);
    tn_init_all(t, 2);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[0].per.timer, 200001), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 200001), 1);
    rota_wheel_stats(&wheel, &st);
    CHECK_EQ_U64(st.refiled, 2);
    new_wheel(&wheel, 0);
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &t[1].per.timer, 200001,
                                         200001 + 65535),
                 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[1].per.timer), 262144); /* 4 * 65536 */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 262143), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 262144), 1);
    rota_wheel_stats(&wheel, &st);
    CHECK_EQ_U64(st.refiled, 1);
    CHECK_WHEEL(&wheel);
}

/* The touch with slack stores nothing while the deadline is inside the
 * window, and otherwise touches to the window's pick. */
TEST(touch_range_keeps_a_deadline_inside_the_window)
{
    struct tn t[2];
    struct rota_stats st;

    new_wheel(&wheel, 0);
    tn_init_all(t, 2);
    CHECK_EQ_INT(rota_timer_touch_range_at(&wheel, &t[0].per.timer, 10, 20),
                 ROTA_ENOENT);
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &t[0].per.timer, 29000, 31000),
                 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[0].per.timer), 30720); /* 15 * 2048 */
    /* Refreshed every 100 ticks with a +-1000 window: the deadline holds
     * until now + 29000 passes it. */
    unsigned stores = 0;
    uint64_t last = rota_timer_deadline(&t[0].per.timer);
    for (uint64_t now = 100; now <= 5000; now += 100) {
        CHECK_EQ_INT(rota_wheel_advance(&wheel, now), 0);
        CHECK_EQ_INT(rota_timer_touch_range_at(&wheel, &t[0].per.timer,
                                               now + 29000, now + 31000),
                     0);
        uint64_t d = rota_timer_deadline(&t[0].per.timer);
        CHECK(d >= now + 29000 && d <= now + 31000);
        if (d != last)
            stores++;
        last = d;
    }
    CHECK(stores <= 4); /* 50 refreshes, a handful of moves */
    rota_wheel_stats(&wheel, &st);
    CHECK_EQ_U64(st.touched, stores);
    /* An earlier window moves it earlier at once. */
    CHECK_EQ_INT(rota_timer_touch_range_at(&wheel, &t[0].per.timer, 5100, 5200),
                 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[0].per.timer), 5120);
    CHECK_EQ_INT(rota_timer_touch_range_at(&wheel, &t[0].per.timer, 9, 8),
                 ROTA_EINVAL);
    CHECK_EQ_U64(rota_timer_deadline(&t[0].per.timer), 5120);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 5119), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 5120), 1);
    CHECK_WHEEL(&wheel);
}

TEST(touch_later_fires_at_new_deadline)
{
    struct tn t[4];

    new_wheel(&wheel, 0);
    tn_init_all(t, 4);
    rota_timer_arm_at(&wheel, &t[0].per.timer, 100);
    rota_timer_arm_at(&wheel, &t[1].per.timer, 100);
    /* Across levels: from level 1 to level 3. */
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &t[0].per.timer, 300000), 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[0].per.timer), 300000);
    CHECK(rota_timer_pending(&t[0].per.timer));
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 100), 1);
    CHECK_EQ_INT(ent[0].id, 1);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 299999), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 300000), 1);
    CHECK_EQ_U64(ent[1].late, 0);
    /* Many small touches of one timer, the refresh path. */
    rota_timer_arm_at(&wheel, &t[2].per.timer, 300050);
    for (uint64_t now = 300000; now < 310000; now += 10) {
        CHECK_EQ_INT(rota_wheel_advance(&wheel, now), 0);
        CHECK_EQ_INT(rota_timer_touch_at(&wheel, &t[2].per.timer, now + 50), 0);
        if (h_failed)
            break;
    }
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 310039), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 310040), 1);
    /* Touch into the past clamps to now: due at once. */
    rota_timer_arm_at(&wheel, &t[3].per.timer, 320000);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &t[3].per.timer, 5), 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[3].per.timer), 310040);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 310040), 1);
    CHECK_WHEEL(&wheel);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(wheel_init_empty),
        H_TEST(version_matches_header),
        H_TEST(sizes_as_documented),
        H_TEST(arm_fire_cancel_basics),
        H_TEST(timer_init_again_changes_callback),
        H_TEST(drain_hands_back_everything),
        H_TEST(touch_unchecked_moves_later_and_heals_the_cache),
        H_TEST(arm_range_picks_the_coarsest_instant),
        H_TEST(touch_range_keeps_a_deadline_inside_the_window),
        H_TEST(touch_later_fires_at_new_deadline),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
