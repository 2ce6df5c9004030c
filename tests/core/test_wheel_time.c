/* SPDX-License-Identifier: MIT */
/*
 * test_wheel_time.c - unit tests of the core wheel (rota.h) on a fake
 * clock: the time the caller passes in: a time source counting delays
 * from the present, clocks going backwards, advances by 0 and by 2^40,
 * a wheel started near the top of uint64_t.
 * Shared fixture: wheel_fixture.h.  rota_wheel_check() runs after the
 * operations.  Nothing sleeps: time is whatever the test passes in.
 */
#include "wheel_fixture.h"

/* ------------------------------------------------------- the time source */

/* A fake present for rota_wheel_set_time_source(), and how often the wheel
 * asked it. */
static uint64_t fake_present;
static unsigned present_reads;

static uint64_t read_fake_present(void *arg)
{
    CHECK(arg == &fake_present);
    present_reads++;
    return *(const uint64_t *)arg;
}

/* Inside a callback: a delay of 10 counted from the source's present. */
static void arm_in_10(struct rota_wheel *w, struct tn *self)
{
    CHECK_EQ_INT(rota_timer_arm_in(w, &self->per.timer, 10), 0);
}

/* With a source, delays count from the later of the wheel's time and the
 * source's present, in arm_in(), in rota_wheel_now() + d and from a
 * callback; the wheel's own time moves only by advance; the inline arm_at,
 * touch_at and cancel never ask the source; removing it, or a new init,
 * brings back the wheel's time alone. */
TEST(time_source_counts_delays_from_the_present)
{
    struct tn t[4];
    tn_init_all(t, 4);
    present_reads = 0;
    new_wheel(&wheel, 1000);
    CHECK_EQ_INT(rota_wheel_set_time_source(NULL, read_fake_present, NULL),
                 ROTA_EINVAL);
    CHECK_EQ_U64(rota_wheel_now(&wheel), 1000); /* none yet */

    fake_present = 1500; /* the program's present; the wheel lags */
    CHECK_EQ_INT(
        rota_wheel_set_time_source(&wheel, read_fake_present, &fake_present),
        0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), 1500);
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, &t[0].per.timer, 100), 0);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[1].per.timer,
                                   rota_wheel_now(&wheel) + 100),
                 0);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[2].per.timer, 5000), 0);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &t[2].per.timer,
                                     rota_wheel_now(&wheel) + 100),
                 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_U64(rota_timer_deadline(&t[i].per.timer), 1600);
    unsigned reads = present_reads;
    CHECK_EQ_U64(reads, 4); /* rota_wheel_now() three times, arm_in() once */

    /* The inline paths and advance never ask it. */
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[3].per.timer, 1700), 0);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &t[3].per.timer, 1800), 0);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[3].per.timer), 1);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1599), 0); /* not early */
    CHECK_EQ_U64(present_reads, reads);
    /* The source behind the wheel: the wheel's time wins. */
    CHECK_EQ_U64(rota_wheel_now(&wheel), 1599);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1600), 3);
    CHECK_EQ_U64(nent, 3);
    for (size_t e = 0; e < nent; e++)
        CHECK_EQ_U64(ent[e].late, 0);

    /* From a callback: the pass's now is 1700, the present 2000. */
    t[0].act = arm_in_10;
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[0].per.timer, 1700), 0);
    fake_present = 2000;
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1700), 1);
    CHECK(rota_timer_pending(&t[0].per.timer));
    CHECK_EQ_U64(rota_timer_deadline(&t[0].per.timer), 2010);
    t[0].act = NULL;
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 2009), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 2010), 1);
    CHECK_WHEEL(&wheel);

    /* A present past the last deadline saturates, as the delay does. */
    fake_present = UINT64_MAX;
    CHECK_EQ_U64(rota_wheel_now(&wheel), ROTA_MAX_DEADLINE);
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, &t[1].per.timer, 5), 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[1].per.timer), ROTA_MAX_DEADLINE);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[1].per.timer), 1);

    /* Removed (arg ignored): the wheel's time alone, the source unread. */
    CHECK_EQ_INT(rota_wheel_set_time_source(&wheel, NULL, &fake_present), 0);
    reads = present_reads;
    CHECK_EQ_U64(rota_wheel_now(&wheel), 2010);
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, &t[1].per.timer, 5), 0);
    CHECK_EQ_U64(rota_timer_deadline(&t[1].per.timer), 2015);
    CHECK_EQ_U64(present_reads, reads);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[1].per.timer), 1);

    /* rota_wheel_init() starts without one. */
    CHECK_EQ_INT(
        rota_wheel_set_time_source(&wheel, read_fake_present, &fake_present),
        0);
    new_wheel(&wheel, 3000);
    CHECK_EQ_U64(rota_wheel_now(&wheel), 3000);
    CHECK_EQ_U64(present_reads, reads);
    CHECK_WHEEL(&wheel);
}

/* ----------------------------------------------- bug class clock-backwards */

TEST(clock_backwards_counted_fires_nothing)
{
    struct tn a, b;
    struct rota_stats s;
    struct rota_timer *out[2];
    size_t n = 99;

    new_wheel(&wheel, 100);
    tn_init(&a, 0);
    tn_init(&b, 1);
    rota_timer_arm_at(&wheel, &a.per.timer, 100); /* due now */
    rota_timer_arm_at(&wheel, &b.per.timer, 150);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 50), 0);
    CHECK_EQ_U64(nent, 0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), 100);
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 99, 10, &n), 1); /* a due */
    CHECK_EQ_U64(n, 0);
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 0, out, 2, &n), 1);
    CHECK_EQ_U64(n, 0);
    CHECK_EQ_U64(nent, 0);
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.clock_backwards, 3);
    CHECK_EQ_U64(s.fired, 0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), 100);
    /* Arms are still relative to the wheel's time. */
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, &b.per.timer, 20), 0);
    CHECK_EQ_U64(rota_timer_deadline(&b.per.timer), 120);
    CHECK_WHEEL(&wheel);
    /* Same time again is not backwards. */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 100), 1);
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.clock_backwards, 3);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 120), 1);
    CHECK_EQ_U64(ent[1].late, 0);
    CHECK_WHEEL(&wheel);
}

/* A fixed scenario relative to `start`: the wheel must behave the same
 * wherever its time begins. */
static void scenario_from(uint64_t start)
{
    static const uint64_t delays[] = {
        0,    1,      2,      63,   64,    65,     100,      4095,   4096,
        4097, 262143, 262144, 1000, 77777, 999999, 16777216, 1 << 20};
    enum { N = sizeof delays / sizeof delays[0] };
    struct tn t[N];
    uint64_t now = start;

    new_wheel(&wheel, start);
    tn_init_all(t, N);
    for (int i = 0; i < N; i++)
        CHECK_EQ_INT(rota_timer_arm_in(&wheel, &t[i].per.timer, delays[i]), 0);
    CHECK_EQ_U64(rota_wheel_count(&wheel), N);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), start);
    CHECK_WHEEL(&wheel);
    log_reset();
    /* Steps of 0, then 1, 3, 60, 4000, 250000, ... */
    static const uint64_t steps[] = {0,      0, 1,      1,        3,
                                     60,     1, 4000,   30,       1,
                                     250000, 1, 800000, 16000000, 1 << 21};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        size_t before = nent;
        now += steps[s];
        rota_wheel_advance(&wheel, now);
        for (size_t e = before; e < nent; e++) {
            uint64_t d = start + delays[ent[e].id];
            CHECK(d <= now);
            /* exact: it was not due at the previous now */
            CHECK(d > now - steps[s] || (d == start && e == 0));
            CHECK_EQ_U64(ent[e].late, now - d);
        }
        CHECK_WHEEL(&wheel);
    }
    CHECK_EQ_U64(nent, N);
    for (size_t e = 1; e < nent; e++) /* deadline order */
        CHECK(delays[ent[e - 1].id] <= delays[ent[e].id]);
}

TEST(advance_by_zero_and_by_2_pow_40)
{
    struct tn t[64];
    uint64_t seed = 99;

    /* Advancing by 0 fires nothing and changes nothing. */
    new_wheel(&wheel, 5000);
    tn_init_all(t, 64);
    rota_timer_arm_at(&wheel, &t[0].per.timer, 5001);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 5000), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 5000), 0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), 5000);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 5001);
    rota_timer_cancel(&wheel, &t[0].per.timer);

    /* One jump of 2^40 over timers spread across levels 0..6. */
    uint64_t base = 5000, jump = (uint64_t)1 << 40;
    uint64_t dl[64];
    for (int i = 0; i < 64; i++) {
        dl[i] = base + 1 + (h_rand(&seed) % ((uint64_t)1 << (1 + i % 40)));
        rota_timer_arm_at(&wheel, &t[i].per.timer, dl[i]);
    }
    CHECK_EQ_INT(rota_wheel_advance(&wheel, base + jump), 64);
    for (size_t e = 0; e < nent; e++) {
        CHECK_EQ_U64(ent[e].late, base + jump - dl[ent[e].id]);
        if (e > 0)
            CHECK(dl[ent[e - 1].id] <= dl[ent[e].id]);
    }
    CHECK_EQ_U64(rota_wheel_now(&wheel), base + jump);
    CHECK_WHEEL(&wheel);

    /* The same scenario from several starting times. */
    scenario_from(0);
    scenario_from(1000000);
    scenario_from((uint64_t)1 << 40);
    scenario_from(((uint64_t)1 << 40) - 1);
    scenario_from(UINT64_MAX - ((uint64_t)1 << 30));
}

TEST(wheel_started_near_the_top)
{
    struct tn t[8];
    uint64_t start = UINT64_MAX - ((uint64_t)1 << 20);

    new_wheel(&wheel, start);
    tn_init_all(t, 8);
    /* Delays 1, 8, 64, ..., 2^21: the last one saturates. */
    for (int i = 0; i < 8; i++)
        rota_timer_arm_in(&wheel, &t[i].per.timer, (uint64_t)1 << (i * 3));
    CHECK_EQ_U64(rota_timer_deadline(&t[7].per.timer), ROTA_MAX_DEADLINE);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, start + 1), 1);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, start + 64), 2);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, start + 4095), 1);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, start + 4096), 1);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, ROTA_MAX_DEADLINE - 1), 2);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX), 1);
    CHECK_EQ_U64(nent, 8);
    for (size_t e = 0; e < nent; e++)
        CHECK_EQ_INT(ent[e].id, (int)e);
    CHECK_EQ_U64(ent[4].late, 0);
    CHECK_EQ_U64(ent[5].late, ROTA_MAX_DEADLINE - 1 - (start + 32768));
    CHECK_EQ_U64(ent[7].late, 0);
    CHECK_EQ_U64(ent[7].deadline, ROTA_MAX_DEADLINE);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_WHEEL(&wheel);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(time_source_counts_delays_from_the_present),
        H_TEST(clock_backwards_counted_fires_nothing),
        H_TEST(advance_by_zero_and_by_2_pow_40),
        H_TEST(wheel_started_near_the_top),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
