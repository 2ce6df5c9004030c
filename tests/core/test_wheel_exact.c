/* SPDX-License-Identifier: MIT */
/*
 * test_wheel_exact.c - unit tests of the core wheel (rota.h) on a fake
 * clock: exactness and far deadlines: never early, never a rotation late
 * (the target slot under the hand, exact multiples of a level's span,
 * level boundaries, tick by tick), and huge delays that saturate.
 * Shared fixture: wheel_fixture.h.  rota_wheel_check() runs after the
 * operations.  Nothing sleeps: time is whatever the test passes in.
 */
#include "wheel_fixture.h"

/* ----------------------------------- bug classes early-fire, rotation-late */

static uint64_t armed_delay;
static struct tn *armed_target;

static void arm_target_in(struct rota_wheel *w, struct tn *self)
{
    (void)self;
    rota_timer_arm_in(w, &armed_target->per.timer, armed_delay);
    armed_deadline = rota_timer_deadline(&armed_target->per.timer);
}

TEST(target_slot_under_the_hand)
{
#define S ROTA_WHEEL_SLOTS
    static const uint64_t bases[] = {0,
                                     5,
                                     S - 1,
                                     S * 7 + 9,
                                     S * S * 3 + S * 5 + 2,
                                     ((uint64_t)1 << 40) + 123};
#undef S
    struct tn a, b;

    for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++) {
        for (unsigned k = 0; k + 1 < ROTA_WHEEL_LEVELS; k++) {
            /* deadline and now share every digit at and below level k: the
             * target slot at level k is the one under the hand. */
            uint64_t d = bases[i] + span(k + 1);
            new_wheel(&wheel, bases[i]);
            tn_init(&a, 0);
            rota_timer_arm_at(&wheel, &a.per.timer, d);
            if (!expect_exact(&wheel, &a, d))
                fprintf(stderr, "    (level %u, base %" PRIu64 ")\n", k,
                        bases[i]);
            /* The same from inside a callback, while the wheel's hand sits
             * exactly on the slot being processed. */
            new_wheel(&wheel, 0);
            tn_init(&a, 0);
            tn_init(&b, 1);
            a.act = arm_target_in;
            armed_target = &b;
            armed_delay = span(k + 1);
            rota_timer_arm_at(&wheel, &a.per.timer, bases[i] + 1);
            log_reset();
            CHECK_EQ_INT(rota_wheel_advance(&wheel, bases[i] + 1), 1);
            CHECK_EQ_U64(armed_deadline, bases[i] + 1 + span(k + 1));
            expect_exact(&wheel, &b, armed_deadline);
        }
    }
}

TEST(delay_exact_multiple_of_level_span)
{
    static const uint64_t nows[] = {
        0,
        1,
        ROTA_WHEEL_SLOTS - 1,
        ROTA_WHEEL_SLOTS,
        ROTA_WHEEL_SLOTS * ROTA_WHEEL_SLOTS - 1,
        ROTA_WHEEL_SLOTS * ROTA_WHEEL_SLOTS * ROTA_WHEEL_SLOTS + 17,
        (uint64_t)1 << 40,
        ((uint64_t)1 << 40) + 12345,
        (uint64_t)1 << 62,
        UINT64_MAX - ((uint64_t)1 << 61)};
    struct tn a;

    for (size_t i = 0; i < sizeof nows / sizeof nows[0]; i++) {
        for (unsigned k = 1; k < ROTA_WHEEL_LEVELS; k++) {
            for (int j = -1; j <= 1; j++) {
                uint64_t delay = span(k) + (uint64_t)(int64_t)j;
                uint64_t exp = nows[i] > ROTA_MAX_DEADLINE - delay
                                   ? ROTA_MAX_DEADLINE
                                   : nows[i] + delay;
                new_wheel(&wheel, nows[i]);
                tn_init(&a, 0);
                CHECK_EQ_INT(rota_timer_arm_in(&wheel, &a.per.timer, delay), 0);
                CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), exp);
                if (!expect_exact(&wheel, &a, exp))
                    fprintf(stderr, "    (slots^%u%+d from %" PRIu64 ")\n", k,
                            j, nows[i]);
                /* And the largest multiple: slots - 1 spans. */
                {
                    new_wheel(&wheel, nows[i]);
                    tn_init(&a, 0);
                    uint64_t d2 = nows[i] + (ROTA_WHEEL_SLOTS - 1) * span(k) +
                                  (uint64_t)(int64_t)j;
                    if (d2 > nows[i] && d2 <= ROTA_MAX_DEADLINE) {
                        rota_timer_arm_at(&wheel, &a.per.timer, d2);
                        expect_exact(&wheel, &a, d2);
                    }
                }
            }
        }
    }
}

TEST(deadlines_on_level_boundaries)
{
    struct tn t[3 * 10];
    uint64_t start = 100;

    /* Deadlines 3 * 256^k - 1, 3 * 256^k, 3 * 256^k + 1 for every level; all
     * armed at once, then reached by jumps straight onto each deadline and
     * by single ticks around it. */
    new_wheel(&wheel, start);
    tn_init_all(t, 30);
    for (unsigned k = 1; k < ROTA_WHEEL_LEVELS; k++)
        for (int j = -1; j <= 1; j++)
            rota_timer_arm_at(&wheel,
                              &t[(k - 1) * 3 + (unsigned)(j + 1)].per.timer,
                              3 * span(k) + (uint64_t)(int64_t)j);
    CHECK_WHEEL(&wheel);
    log_reset();
    for (unsigned k = 1; k < ROTA_WHEEL_LEVELS; k++) {
        uint64_t b = 3 * span(k);
        size_t before = nent;
        CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), b - 1);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, b - 2), 0);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, b - 1), 1);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, b - 1), 0);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, b), 1);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, b + 1), 1);
        CHECK_EQ_U64(nent - before, 3);
        for (size_t e = before; e < nent; e++)
            CHECK_EQ_U64(ent[e].late, 0);
        CHECK_WHEEL(&wheel);
    }
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);

    /* One jump over many boundaries: every timer once, in order, with its
     * exact lateness. */
    new_wheel(&wheel, 0);
    for (unsigned k = 1; k <= 6; k++)
        for (int j = -1; j <= 1; j++)
            rota_timer_arm_at(&wheel,
                              &t[(k - 1) * 3 + (unsigned)(j + 1)].per.timer,
                              span(k) + (uint64_t)(int64_t)j);
    log_reset();
    uint64_t to = span(6) + 5;
    CHECK_EQ_INT(rota_wheel_advance(&wheel, to), 18);
    for (size_t e = 0; e < nent && e < 18; e++) {
        uint64_t d = span(1 + e / 3) + e % 3 - 1;
        CHECK_EQ_INT(ent[e].id, (int)e);
        CHECK_EQ_U64(ent[e].late, to - d);
    }
    CHECK_WHEEL(&wheel);
}

TEST(never_early_tick_by_tick)
{
    struct tn t[200];
    uint64_t seed = 12345, now = 1000000;

    new_wheel(&wheel, now);
    tn_init_all(t, 200);
    for (int i = 0; i < 200; i++)
        rota_timer_arm_at(&wheel, &t[i].per.timer,
                          now + 1 + h_rand(&seed) % 5000);
    log_reset();
    while (rota_wheel_count(&wheel) > 0 && now < 1000000 + 6000) {
        now++;
        size_t before = nent;
        rota_wheel_advance(&wheel, now);
        for (size_t e = before; e < nent; e++) {
            CHECK_EQ_U64(ent[e].late, 0);
            CHECK_EQ_U64(ent[e].deadline, now);
        }
    }
    CHECK_EQ_U64(nent, 200);
    CHECK_WHEEL(&wheel);
}

/* --------------------------------------- bug class huge-delay (saturation) */

TEST(huge_delays_saturate)
{
    struct tn a, b, c, d;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    tn_init(&b, 1);
    tn_init(&c, 2);
    tn_init(&d, 3);
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, &a.per.timer, UINT64_MAX), 0);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), ROTA_MAX_DEADLINE);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &b.per.timer, UINT64_MAX), 0);
    CHECK_EQ_U64(rota_timer_deadline(&b.per.timer), ROTA_MAX_DEADLINE);
    CHECK_EQ_INT(
        rota_periodic_arm_at(&wheel, &c.per, UINT64_MAX, 10, ROTA_MISSED_SKIP),
        0);
    CHECK_EQ_U64(rota_timer_deadline(&c.per.timer), ROTA_MAX_DEADLINE);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), ROTA_MAX_DEADLINE);
    CHECK_WHEEL(&wheel);

    /* From a large now, a huge delay saturates instead of wrapping. */
    new_wheel(&wheel, (uint64_t)1 << 63);
    tn_init(&a, 0);
    tn_init(&b, 1);
    tn_init(&c, 2);
    CHECK_EQ_INT(
        rota_timer_arm_in(&wheel, &a.per.timer, ((uint64_t)1 << 63) + 5), 0);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), ROTA_MAX_DEADLINE);
    CHECK_EQ_INT(
        rota_timer_arm_in(&wheel, &b.per.timer, ((uint64_t)1 << 63) - 2), 0);
    CHECK_EQ_U64(rota_timer_deadline(&b.per.timer), ROTA_MAX_DEADLINE);
    CHECK_EQ_INT(
        rota_timer_arm_in(&wheel, &c.per.timer, ((uint64_t)1 << 63) - 3), 0);
    CHECK_EQ_U64(rota_timer_deadline(&c.per.timer), ROTA_MAX_DEADLINE - 1);
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, &d.per.timer, 1000), 0);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX - 1000), 1);
    CHECK_EQ_INT(ent[0].id, 3);
    /* ROTA_MAX_DEADLINE - 1 (UINT64_MAX - 2) fires there, not before... */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX - 3), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX - 2), 1);
    CHECK_EQ_INT(ent[1].id, 2);
    /* ...and UINT64_MAX - 1 fires at UINT64_MAX - 1, not at - 2. */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX - 2), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), UINT64_MAX - 1);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX - 1), 2);
    CHECK_EQ_INT(ent[2].id, 0);
    CHECK_EQ_INT(ent[3].id, 1);
    CHECK_EQ_U64(ent[3].late, 0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), ROTA_MAX_DEADLINE);
    CHECK_WHEEL(&wheel);

    /* advance(UINT64_MAX) is read as ROTA_MAX_DEADLINE: a timer there
     * fires, and the time is not UINT64_MAX ("never"). */
    new_wheel(&wheel, UINT64_MAX - 100);
    rota_timer_arm_at(&wheel, &a.per.timer, UINT64_MAX);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX), 1);
    CHECK_EQ_U64(rota_wheel_now(&wheel), ROTA_MAX_DEADLINE);
    /* At the end of time everything armed is due at once. */
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, &a.per.timer, 12345), 0);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), ROTA_MAX_DEADLINE);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX), 1);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX), 0);
    CHECK_WHEEL(&wheel);
}

static size_t big_fires;

static void count_fire(struct rota_wheel *w, struct rota_timer *t,
                       uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
    big_fires++;
}

/* A call without a limit spends its fire budget in chunks (65536 fires);
 * the count it returns spans them all. */
TEST(fired_count_spans_budget_chunks)
{
    enum { N = 3 * 65536 + 5 };
    static struct rota_timer t[N];
    size_t fired = 0;

    new_wheel(&wheel, 0);
    for (size_t i = 0; i < N; i++) {
        rota_timer_init(&t[i], count_fire);
        /* Two thirds at 100, the rest at 200. */
        CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[i], i % 3 ? 100 : 200), 0);
    }
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 100), (int)(N - (N + 2) / 3));
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 300, SIZE_MAX, &fired), 0);
    CHECK_EQ_U64(fired, (N + 2) / 3);
    CHECK_EQ_U64(big_fires, N);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_WHEEL(&wheel);
}

/* The inline arm files a deadline at or above arm_min_ into an empty slot
 * and leaves next_step_ alone: such a slot starts at or above arm_min_,
 * which the library keeps at or above next_step_.  Here next_step_ is as
 * high as it gets: a pass found the only occupied slot (b's) beyond now
 * and jumped to it, and the earliest deadline is unknown, so arm_min_ is
 * that slot's start.  A deadline below it, in an empty slot that starts
 * earlier, is the library's to file; one at it goes inline into b's slot,
 * emptied by a cancel, which starts at next_step_ exactly; and a callback
 * arms inline into an empty slot while its pass has next_step_ at cur.
 * Each fires exactly.  Per level, in units of u = 256^(level - 1) (level
 * 0 in ticks). */
TEST(inline_arm_into_an_empty_slot_fires_exactly)
{
    struct tn a, b, c;

    for (unsigned level = 0; level < 4; level++) {
        uint64_t u = level == 0 ? 1 : span(level - 1);
        /* now, a, b (b's slot starts at b_start), a deadline below it */
        uint64_t now = 100 * u, at = level == 0 ? 150 : 300 * u;
        uint64_t bt = level == 0 ? 200 : 5000 * u;
        uint64_t b_start = level == 0 ? 200 : 4864 * u;
        uint64_t below = level == 0 ? 170 : 1000 * u;

        for (int at_start = 0; at_start < 2; at_start++) {
            new_wheel(&wheel, now);
            tn_init(&a, 0);
            tn_init(&b, 1);
            tn_init(&c, 2);
            CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, at), 0);
            CHECK_EQ_INT(rota_timer_arm_at(&wheel, &b.per.timer, bt), 0);
            CHECK_EQ_INT(rota_timer_cancel(&wheel, &a.per.timer), 1);
            CHECK_EQ_INT(rota_wheel_advance(&wheel, at), 0);
            CHECK_WHEEL(&wheel);
            uint64_t d = at_start ? b_start : below;
            if (at_start)
                CHECK_EQ_INT(rota_timer_cancel(&wheel, &b.per.timer), 1);
            CHECK_EQ_INT(rota_timer_arm_at(&wheel, &c.per.timer, d), 0);
            CHECK_WHEEL(&wheel);
            if (!at_start) {
                CHECK_EQ_INT(rota_timer_cancel(&wheel, &b.per.timer), 1);
                CHECK_WHEEL(&wheel);
            }
            if (!expect_exact(&wheel, &c, d))
                fprintf(stderr, "    (level %u, deadline %" PRIu64 ")\n", level,
                        d);
        }

        /* From a callback: a fires at `at` and arms b `at - now` later. */
        new_wheel(&wheel, now);
        tn_init(&a, 0);
        tn_init(&b, 1);
        a.act = arm_target_in;
        armed_target = &b;
        armed_delay = at - now;
        CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, at), 0);
        log_reset();
        CHECK_EQ_INT(rota_wheel_advance(&wheel, at), 1);
        CHECK_EQ_U64(armed_deadline, 2 * at - now);
        CHECK_WHEEL(&wheel);
        if (!expect_exact(&wheel, &b, armed_deadline))
            fprintf(stderr, "    (level %u, from a callback)\n", level);
    }
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(target_slot_under_the_hand),
        H_TEST(delay_exact_multiple_of_level_span),
        H_TEST(deadlines_on_level_boundaries),
        H_TEST(never_early_tick_by_tick),
        H_TEST(huge_delays_saturate),
        H_TEST(fired_count_spans_budget_chunks),
        H_TEST(inline_arm_into_an_empty_slot_fires_exactly),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
