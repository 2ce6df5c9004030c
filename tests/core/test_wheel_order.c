/* SPDX-License-Identifier: MIT */
/*
 * test_wheel_order.c - unit tests of the core wheel (rota.h) on a fake
 * clock: firing order and cascades: deadline then arm order, budgets
 * (advance_max, limits) that resume in order, ties kept across half-done
 * cascades, relocation, small expire caps that never drop a timer.
 * Shared fixture: wheel_fixture.h.  rota_wheel_check() runs after the
 * operations.  Nothing sleeps: time is whatever the test passes in.
 */
#include "wheel_fixture.h"

/* --------------------------------------------------------------- order */

TEST(order_deadline_then_arm_order)
{
    enum { N = 500 };
    static struct tn t[N];
    static uint64_t dl[N];
    uint64_t seed = 2024;

    new_wheel(&wheel, 1000);
    tn_init_all(t, N);
    /* Few distinct deadlines, so many ties, armed in a random order and
     * at different times (so ties sit at different levels when armed). */
    for (int i = 0; i < N; i++) {
        dl[i] = 5000 + (h_rand(&seed) % 8) * 1000 + (h_rand(&seed) % 2) * 64;
        rota_timer_arm_at(&wheel, &t[i].per.timer, dl[i]);
        if (i % 50 == 49)
            rota_wheel_advance(&wheel, rota_wheel_now(&wheel) + 90);
    }
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 20000), N);
    for (size_t e = 1; e < nent; e++) {
        int p = ent[e - 1].id, q = ent[e].id;
        CHECK(dl[p] < dl[q] || (dl[p] == dl[q] && p < q));
        if (h_failed > 3)
            break;
    }
    /* Re-arming moves a timer behind the others with its deadline. */
    new_wheel(&wheel, 0);
    for (int i = 0; i < 4; i++)
        rota_timer_arm_at(&wheel, &t[i].per.timer, 300);
    rota_timer_arm_at(&wheel, &t[1].per.timer, 300);
    rota_timer_arm_at(&wheel, &t[0].per.timer, 300);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 300), 4);
    CHECK_EQ_INT(ent[0].id, 2);
    CHECK_EQ_INT(ent[1].id, 3);
    CHECK_EQ_INT(ent[2].id, 1);
    CHECK_EQ_INT(ent[3].id, 0);
    /* Timers armed at different times for 4096 (the first from farther
     * away, at a higher level): the first armed fires first. */
    new_wheel(&wheel, 0);
    rota_timer_arm_at(&wheel, &t[0].per.timer, 4096);
    rota_wheel_advance(&wheel, 4000);
    rota_timer_arm_at(&wheel, &t[1].per.timer, 4096);
    rota_wheel_advance(&wheel, 4095);
    rota_timer_arm_at(&wheel, &t[2].per.timer, 4096);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 4096), 3);
    CHECK_EQ_INT(ent[0].id, 0);
    CHECK_EQ_INT(ent[1].id, 1);
    CHECK_EQ_INT(ent[2].id, 2);
    CHECK_WHEEL(&wheel);
}

/* One advance_max() call; checks that it fires and files again at most
 * `max` timers each, and returns what the call returned. */
static int advance_max_within(uint64_t now, size_t max, size_t *fired)
{
    struct rota_stats before, after;
    rota_wheel_stats(&wheel, &before);
    int rc = rota_wheel_advance_max(&wheel, now, max, fired);
    rota_wheel_stats(&wheel, &after);
    CHECK(*fired <= max);
    CHECK(after.refiled - before.refiled <= max);
    return rc;
}

TEST(advance_max_resumes_in_order)
{
    struct tn t[10];
    size_t fired = 99;

    new_wheel(&wheel, 0);
    tn_init_all(t, 10);
    /* Five pairs of equal deadlines, 10 .. 410: three pairs at level 0,
     * two in a level-1 slot that must be cascaded before it fires. */
    for (int i = 0; i < 10; i++)
        rota_timer_arm_at(&wheel, &t[i].per.timer,
                          10 + (uint64_t)(i / 2) * 100);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 1000, 0, &fired), 1);
    CHECK_EQ_U64(fired, 0);
    CHECK_EQ_U64(rota_wheel_now(&wheel), 1000);
    CHECK_EQ_INT(advance_max_within(1000, 3, &fired), 1);
    CHECK_EQ_U64(fired, 3);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 110);
    CHECK_EQ_INT(advance_max_within(1000, 3, &fired), 1);
    CHECK_EQ_U64(fired, 3);
    CHECK_WHEEL(&wheel);
    /* The rest later, three a call: the level-1 slot's cascade (4 timers)
     * takes two calls, so some calls fire fewer than three. */
    int calls = 0, rc;
    do {
        rc = advance_max_within(1500, 3, &fired);
        CHECK_WHEEL(&wheel);
        CHECK(++calls <= 4);
    } while (rc == 1);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_U64(nent, 10);
    for (size_t e = 0; e < nent; e++) {
        CHECK_EQ_INT(ent[e].id, (int)e);
        uint64_t now = e < 6 ? 1000 : 1500;
        CHECK_EQ_U64(ent[e].late, now - (10 + (e / 2) * 100));
    }
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 1500, 3, &fired), 0);
    CHECK_EQ_U64(fired, 0);
    CHECK_WHEEL(&wheel);
}

/* A million idle connections put everything in one slot; a limited call
 * must stay within its limit however big that slot is, and still fire
 * every timer in the first step that reaches it, in deadline order. */
TEST(limit_bounds_cascades_and_refiles)
{
    enum { COUNT = 4000, LIMIT = 64, STEP = 100 };
    static struct tn t[COUNT];
    size_t fired, calls = 0;

    /* Just below a level-2 boundary, so most deadlines lie beyond it in one
     * level-2 slot, cascaded all at once when the boundary comes. */
    uint64_t start = 16 * span(2) - 20000;
    new_wheel(&wheel, start);
    tn_init_all(t, COUNT);
    for (int i = 0; i < COUNT; i++)
        rota_timer_arm_at(&wheel, &t[i].per.timer, start + 1 + (uint64_t)i * 7);
    for (int i = 0; i < COUNT; i += 3) /* touched: filed again later */
        rota_timer_touch_at(&wheel, &t[i].per.timer,
                            start + 5000 + (uint64_t)i * 9);
    log_reset();
    for (uint64_t now = start + STEP; now < start + 45000; now += STEP) {
        int rc;
        do {
            rc = advance_max_within(now, LIMIT, &fired);
            CHECK(rc == 0 || rc == 1);
            if (++calls % 64 == 0)
                CHECK_WHEEL(&wheel);
        } while (rc == 1);
        CHECK_EQ_U64(rota_wheel_count(&wheel), COUNT - nent); /* nothing lost */
    }
    CHECK_EQ_U64(nent, COUNT);
    for (size_t e = 0; e < nent; e++) {
        /* Never early, and in the first step that reached the deadline. */
        CHECK(ent[e].now >= ent[e].now - ent[e].late);
        CHECK(ent[e].late < STEP);
        if (e > 0)
            CHECK(ent[e].now - ent[e].late >= ent[e - 1].now - ent[e - 1].late);
    }
    CHECK_WHEEL(&wheel);
}

/* A timer armed while a limited call has left a slot half cascaded, with
 * the same deadline as timers still waiting in that cascade, fires after
 * them: ties keep arm order across calls. */
TEST(arm_during_half_done_cascade_keeps_tie_order)
{
    struct tn t[3];
    size_t fired;

    new_wheel(&wheel, 0);
    tn_init_all(t, 3);
    rota_timer_arm_at(&wheel, &t[0].per.timer, 300); /* a level-1 slot */
    rota_timer_arm_at(&wheel, &t[1].per.timer, 300);
    log_reset();
    /* Limit 1: the slot's cascade starts, t0 is filed again, t1 waits. */
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 290, 1, &fired), 1);
    CHECK_EQ_U64(fired, 0);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[2].per.timer, 300), 0);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 290), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 300), 3);
    CHECK_EQ_U64(nent, 3);
    for (size_t e = 0; e < 3; e++)
        CHECK_EQ_INT(ent[e].id, (int)e);
    CHECK_WHEEL(&wheel);
}

/* A limited cascade walks its slot from both ends: the back files only
 * timers a touch moved beyond the slot, and passes over the others, so
 * ties inside the slot still fire in arm order, and the limit still
 * counts every timer filed, from either end. */
TEST(cascade_from_both_ends_keeps_tie_order)
{
    enum { COUNT = 12, LIMIT = 4 };
    struct tn t[COUNT];
    struct rota_stats st;
    size_t fired;

    new_wheel(&wheel, 0);
    tn_init_all(t, COUNT);
    for (int i = 0; i < COUNT; i++) /* one level-1 slot: [256, 512) */
        rota_timer_arm_at(&wheel, &t[i].per.timer, 300);
    for (int i = 1; i < COUNT; i += 2) /* odd ones: beyond the slot */
        rota_timer_touch_at(&wheel, &t[i].per.timer, 1000);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 290, LIMIT, &fired), 1);
    CHECK_EQ_U64(fired, 0);
    rota_wheel_stats(&wheel, &st);
    CHECK_EQ_U64(st.refiled, LIMIT);
    CHECK_WHEEL(&wheel);
    do
        CHECK_WHEEL(&wheel);
    while (rota_wheel_advance_max(&wheel, 300, LIMIT, &fired) == 1);
    CHECK_EQ_U64(nent, COUNT / 2);
    for (size_t e = 0; e < nent; e++)
        CHECK_EQ_INT(ent[e].id, (int)(2 * e));
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1000), COUNT / 2);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_WHEEL(&wheel);
}

/* A long cascade: the back walk files timers bound for the level below
 * behind a mark in each target, the front walk before it, and arms made
 * between limited calls at the target's tail; once the cascade is done,
 * every deadline's timers fire in arm order, whichever walk filed them. */
TEST(cascade_marks_keep_arm_order)
{
    enum { OLD = 600, NEW = 60, LIMIT = 16 };
    static struct tn t[OLD + NEW];
    static const uint64_t offset[] = {0, 5, 300, 301, 700, 65535};
    enum { NOFF = sizeof offset / sizeof offset[0] };
    uint64_t boundary = 5 * span(2), start = boundary - 100;
    size_t fired, calls = 0, armed = OLD;
    int rc;

    new_wheel(&wheel, start);
    tn_init_all(t, OLD + NEW);
    /* Everything in the level-2 slot that starts at the boundary; one in
     * ten touched past it (its place among ties is free). */
    for (int i = 0; i < OLD; i++) {
        rota_timer_arm_at(&wheel, &t[i].per.timer, boundary + offset[i % NOFF]);
        if (i % 10 == 9)
            rota_timer_touch_at(&wheel, &t[i].per.timer, 2 * boundary + i);
    }
    log_reset();
    /* The boundary's timers fire in the first calls; the cascade goes on
     * across calls, and new timers with the same deadlines join between
     * them. */
    do {
        rc = advance_max_within(boundary, LIMIT, &fired);
        CHECK_WHEEL(&wheel);
        if (armed < OLD + NEW) {
            CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[armed].per.timer,
                                           boundary + offset[armed % NOFF]),
                         0);
            armed++;
        }
        CHECK(++calls < 1000);
    } while (rc == 1 || armed < OLD + NEW);
    CHECK(rota_wheel_advance(&wheel, boundary + 65535) > 0);
    /* Expected: by deadline, then arm order (ids are arm order). */
    size_t e = 0;
    for (int k = 0; k < NOFF; k++)
        for (int i = 0; i < OLD + NEW; i++) {
            if (i < OLD && i % 10 == 9)
                continue;
            if (i % NOFF != k)
                continue;
            if (!CHECK(e < nent) || !CHECK_EQ_INT(ent[e].id, i))
                return;
            CHECK_EQ_U64(ent[e].now - ent[e].late, boundary + offset[k]);
            e++;
        }
    CHECK_EQ_U64(e, nent);
    CHECK_EQ_U64(rota_wheel_count(&wheel), OLD / 10);
    CHECK_WHEEL(&wheel);
}

/* A timer of the long-cascade test: it checks, as it fires, that the
 * fires so far run by deadline, then arm order (ids are arm order). */
struct ordered_timer {
    struct rota_timer timer;
    uint32_t id;
    uint64_t want; /* its deadline */
};

static struct {
    uint64_t deadline; /* of the last fire */
    uint32_t id;
    size_t fired, out_of_order, wrong_time;
} fires;

static void check_order(struct rota_wheel *w, struct rota_timer *t,
                        uint64_t late)
{
    struct ordered_timer *o = rota_container_of(t, struct ordered_timer, timer);
    uint64_t deadline = rota_wheel_now(w) - late;

    if (deadline != o->want || late != 0)
        fires.wrong_time++;
    if (fires.fired > 0 && (deadline < fires.deadline ||
                            (deadline == fires.deadline && o->id <= fires.id)))
        fires.out_of_order++;
    fires.deadline = deadline;
    fires.id = o->id;
    fires.fired++;
}

/* A cascade without a limit walks its slot from both ends in stretches
 * (the budget's chunk of 65536, which both walks cross when the slot holds
 * more than twice that; the meeting of the walks, which falls between two
 * timers or on one as the length is even or odd): at every length, from
 * level 1 and from level 2 (whose timers cascade twice), every timer fires
 * at its deadline, those inside the slot by deadline then arm order, those
 * touched past it later. */
TEST(quick_cascade_keeps_order_at_every_length)
{
    enum { MAX = 140001 }; /* the walks meet past the chunk of 65536 */
    static struct ordered_timer t[MAX];
    static const size_t lengths[] = {1,    2,    3,     4,    5,    6,
                                     7,    31,   8190,  8191, 8192, 8193,
                                     8194, 9001, 70001, MAX};
    enum { NLEN = sizeof lengths / sizeof lengths[0] };

    for (unsigned level = 1; level <= 2; level++) {
        uint64_t width = span(level), boundary = 3 * width;
        /* Distinct deadlines: few, so many ties; the slot's start (due at
         * once), and for level 2 deadlines bound for levels 1 and 0. */
        uint64_t offsets[] = {0, 1, 7, 255, width / 2, width - 1};
        if (level == 2) {
            offsets[1] = 256;
            offsets[2] = 300;
            offsets[3] = 65535 - 256;
        }
        for (size_t l = 0; l < NLEN; l++) {
            size_t count = lengths[l], inside = 0;
            if (count >= 70001 && (level == 2 || h_small()))
                continue;
            uint64_t seed = 77 + count;
            new_wheel(&wheel, boundary - 1);
            for (size_t i = 0; i < count; i++) {
                rota_timer_init(&t[i].timer, check_order);
                t[i].id = (uint32_t)i;
                uint64_t d = boundary + offsets[h_rand(&seed) % 6];
                CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[i].timer, d), 0);
                if (i % 7 == 3) { /* past the slot: fires later */
                    d = boundary + width + i - 3; /* 3: the end */
                    rota_timer_touch_at(&wheel, &t[i].timer, d);
                } else {
                    inside++;
                }
                t[i].want = d;
            }
            memset(&fires, 0, sizeof fires);
            /* The call that reaches the slot cascades it, without a limit;
             * then one tick a call, so that every fire must be on time. */
            for (uint64_t now = boundary; now < boundary + width; now++)
                rota_wheel_advance(&wheel, now);
            CHECK_EQ_U64(fires.fired, inside);
            CHECK_WHEEL(&wheel);
            CHECK_EQ_U64(rota_wheel_count(&wheel), count - inside);
            for (uint64_t i = 0; i < count; i++)
                rota_wheel_advance(&wheel, boundary + width + i);
            CHECK_EQ_U64(fires.fired, count);
            CHECK_EQ_U64(fires.out_of_order, 0);
            CHECK_EQ_U64(fires.wrong_time, 0);
            CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
            if (h_failed > 0) {
                fprintf(stderr, "    level %u, %zu timers\n", level, count);
                return;
            }
        }
    }
}

TEST(more_due_reported_on_every_path)
{
    /* The "more due" result must hold whichever path a call takes: the
     * idle fast path (nothing due: 0), a pass cut by the budget (1), a
     * clock that went backwards after such a cut (1, firing nothing), and
     * expire() in the same states. */
    struct tn t[4];
    struct rota_timer *out[4];
    size_t fired = 99, n = 99;

    new_wheel(&wheel, 100);
    tn_init_all(t, 4);
    for (int i = 0; i < 4; i++)
        rota_timer_arm_at(&wheel, &t[i].per.timer, 200);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 150, 8, &fired), 0);
    CHECK_EQ_U64(fired, 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 199), 0);
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 300, 1, &fired), 1);
    CHECK_EQ_U64(fired, 1);
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 250, 8, &fired), 1);
    CHECK_EQ_U64(fired, 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 250), 0);
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 250, out, 4, &n), 1);
    CHECK_EQ_U64(n, 0);
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 300, out, 1, &n), 1);
    CHECK_EQ_U64(n, 1);
    CHECK(out[0] == &t[1].per.timer);
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 300, out, 2, &n), 0);
    CHECK_EQ_U64(n, 2);
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 301, out, 2, &n), 0);
    CHECK_EQ_U64(n, 0);
    CHECK_EQ_U64(nent, 1);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_WHEEL(&wheel);
}

/* Relocating copies the whole container here (the id travels with it), as
 * a table that moves its elements would. */
static void relocate_tn(struct rota_wheel *w, struct tn *from, struct tn *to)
{
    struct tn saved = *from;
    CHECK_EQ_INT(rota_timer_relocate(w, &from->per.timer, &to->per.timer), 0);
    /* What relocate leaves is plain memory: no timer at all. */
    CHECK_EQ_INT(rota_timer_cancel(w, &from->per.timer), ROTA_EUNINIT);
    CHECK(!rota_timer_pending(&from->per.timer));
    to->id = saved.id;
    to->act = saved.act;
    to->arg = saved.arg;
    memset(from, 0xdd, sizeof *from); /* the wheel must not look here again */
}

static struct tn *relocate_target;

static void relocate_self(struct rota_wheel *w, struct tn *self)
{
    relocate_tn(w, self, relocate_target);
}

TEST(relocate_keeps_place_and_order)
{
    /* Four timers due at 100 in arm order 0..3 (one slot), one at 5000 (a
     * higher level), one on the due list: moving each to new memory keeps
     * every deadline and the tie order, and the old memory is dead. */
    struct tn a[6], b[6];

    new_wheel(&wheel, 0);
    tn_init_all(a, 6);
    for (int i = 0; i < 4; i++)
        rota_timer_arm_at(&wheel, &a[i].per.timer, 100);
    rota_timer_arm_at(&wheel, &a[4].per.timer, 5000);
    relocate_tn(&wheel, &a[1], &b[1]); /* middle of a list */
    relocate_tn(&wheel, &a[0], &b[0]); /* its head */
    relocate_tn(&wheel, &a[3], &b[3]); /* its tail */
    relocate_tn(&wheel, &a[4], &b[4]); /* alone in its slot */
    relocate_tn(&wheel, &a[5], &b[5]); /* idle */
    CHECK(!rota_timer_pending(&b[5].per.timer));
    if (rota_debug_enabled()) { /* garbage: only a debug build tells */
        misuses = 0;
        rota_debug_set_handler(count_misuse, NULL);
        CHECK_EQ_INT(rota_timer_cancel(&wheel, &a[0].per.timer), ROTA_EUNINIT);
        rota_debug_set_handler(NULL, NULL);
        CHECK_EQ_INT(misuses, 1);
    }
    CHECK_EQ_INT(rota_timer_relocate(&wheel, &b[0].per.timer, NULL),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_timer_relocate(NULL, &b[0].per.timer, &a[0].per.timer),
                 ROTA_EINVAL);
    CHECK_EQ_U64(rota_timer_deadline(&b[4].per.timer), 5000);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 5);
    CHECK_WHEEL(&wheel);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 100), 4);
    CHECK_EQ_U64(nent, 4);
    for (size_t e = 0; e < nent; e++)
        CHECK_EQ_INT(ent[e].id, (int)e);
    /* On the due list (a budget of 0 leaves it there), then fired. */
    rota_timer_arm_at(&wheel, &a[2].per.timer, 4000);
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 4000, 0, NULL), 1);
    relocate_tn(&wheel, &a[2], &b[2]);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 5000), 2);
    CHECK_EQ_INT(ent[4].id, 2);
    CHECK_EQ_INT(ent[5].id, 4);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_WHEEL(&wheel);
}

TEST(relocate_from_own_callback)
{
    /* A periodic timer moves itself from its callback: it keeps firing from
     * its new memory, and a one-shot timer that does the same is idle. */
    struct tn a[2], b[2];

    new_wheel(&wheel, 0);
    tn_init_all(a, 2);
    rota_periodic_arm_at(&wheel, &a[0].per, 10, 10, ROTA_MISSED_SKIP);
    rota_timer_arm_at(&wheel, &a[1].per.timer, 20);
    a[0].act = relocate_self;
    relocate_target = &b[0];
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 10), 1);
    CHECK(rota_timer_pending(&b[0].per.timer));
    CHECK_EQ_U64(rota_timer_deadline(&b[0].per.timer), 20);
    CHECK_WHEEL(&wheel);
    b[0].act = NULL;
    a[1].act = relocate_self;
    relocate_target = &b[1];
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 20), 2);
    CHECK(!rota_timer_pending(&b[1].per.timer));
    CHECK_EQ_INT(ent[1].id, 1);
    CHECK_EQ_INT(ent[2].id, 0);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &b[0].per.timer), 1);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_WHEEL(&wheel);
}

static void arm_victim_now(struct rota_wheel *w, struct tn *self)
{
    (void)self;
    CHECK_EQ_INT(rota_timer_arm_in(w, &victims[0]->per.timer, 0), 0);
}

TEST(advance_max_budget_deferred_timers_join_at_pass_end)
{
    /* At 10, a budget of 2 stops the pass after A@9 (whose callback arms B
     * with delay 0: due at 10, deferred to the next call) and P@9, a BURST
     * timer the wheel re-arms at 10 when it fires.  B joins the wheel when
     * the pass ends, so it counts as armed then (rota.h, CALLBACK CONTEXT):
     * the next call fires P, then B. */
    struct tn a, b, p;
    size_t fired = 0;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    tn_init(&b, 1);
    tn_init(&p, 2);
    a.act = arm_victim_now;
    victims[0] = &b;
    rota_timer_arm_at(&wheel, &a.per.timer, 9);
    rota_periodic_arm_at(&wheel, &p.per, 9, 1, ROTA_MISSED_BURST);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 10, 2, &fired), 1);
    CHECK_EQ_U64(fired, 2);
    CHECK_EQ_INT(ent[0].id, 0);
    CHECK_EQ_INT(ent[1].id, 2);
    CHECK_EQ_U64(rota_timer_deadline(&b.per.timer), 10);
    CHECK_EQ_U64(rota_timer_deadline(&p.per.timer), 10);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 10), 2);
    CHECK_EQ_U64(nent, 4);
    CHECK_EQ_INT(ent[2].id, 2); /* P */
    CHECK_EQ_INT(ent[3].id, 1); /* B */
    CHECK_WHEEL(&wheel);
}

static void fail_if_called(struct rota_wheel *w, struct rota_timer *t,
                           uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
    CHECK(!"expire() ran a callback");
}

TEST(expire_small_caps_never_drop)
{
    enum { N = 40 };
    struct rota_timer t[N], *out[5];
    struct rota_periodic per;
    size_t n, total = 0;
    int more;

    for (size_t cap = 1; cap <= 5; cap++) {
        new_wheel(&wheel, 0);
        for (int i = 0; i < N; i++) {
            rota_timer_init(&t[i], fail_if_called);
            rota_timer_arm_at(&wheel, &t[i], 1 + (uint64_t)(N - 1 - i) / 3);
        }
        rota_periodic_init(&per, fail_if_called);
        rota_periodic_arm_at(&wheel, &per, 5, 2, ROTA_MISSED_BURST);
        /* Due by 20: all N, and per at 5, 7, ..., 19 (8 times). */
        struct rota_timer *seen[N + 8];
        total = 0;
        do {
            n = 99;
            more = rota_wheel_expire(&wheel, 20, out, cap, &n);
            CHECK(more == 0 || more == 1);
            CHECK(n <= cap);
            CHECK(more == 0 || n == cap);
            for (size_t i = 0; i < n && total < N + 8; i++)
                seen[total++] = out[i];
            CHECK_WHEEL(&wheel);
        } while (more == 1 && total < N + 8);
        CHECK_EQ_U64(total, N + 8);
        /* Exactly the firing order: by deadline, ties in arm order, the
         * periodic timer (re-armed at each fire) after the others. */
        size_t k = 0;
        int per_count = 0;
        for (uint64_t d = 1; d <= 20 && k < total; d++) {
            for (int id = 0; id < N; id++) {
                if (1 + (uint64_t)(N - 1 - id) / 3 != d)
                    continue;
                if (k < total && !CHECK_EQ_PTR(seen[k], &t[id]))
                    fprintf(stderr, "    cap %zu, position %zu\n", cap, k);
                if (k < total)
                    CHECK(!rota_timer_pending(seen[k]));
                k++;
            }
            if (d >= 5 && d % 2 == 1) {
                if (k < total && CHECK_EQ_PTR(seen[k], &per.timer))
                    per_count++;
                k++;
            }
        }
        CHECK_EQ_INT(per_count, 8);
        CHECK(rota_timer_pending(&per.timer)); /* re-armed by the wheel */
        CHECK_EQ_U64(rota_timer_deadline(&per.timer), 21);
        CHECK_EQ_U64(rota_wheel_count(&wheel), 1);
        /* Nothing more due: 0, and n is 0. */
        CHECK_EQ_INT(rota_wheel_expire(&wheel, 20, out, cap, &n), 0);
        CHECK_EQ_U64(n, 0);
        /* cap 0 with out NULL reports "more" without taking anything. */
        CHECK_EQ_INT(rota_wheel_expire(&wheel, 21, NULL, 0, &n), 1);
        CHECK_EQ_U64(n, 0);
        CHECK_EQ_INT(rota_wheel_expire(&wheel, 21, out, cap, NULL), 0);
        CHECK_WHEEL(&wheel);
    }
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(order_deadline_then_arm_order),
        H_TEST(advance_max_resumes_in_order),
        H_TEST(limit_bounds_cascades_and_refiles),
        H_TEST(arm_during_half_done_cascade_keeps_tie_order),
        H_TEST(cascade_from_both_ends_keeps_tie_order),
        H_TEST(cascade_marks_keep_arm_order),
        H_TEST(quick_cascade_keeps_order_at_every_length),
        H_TEST(more_due_reported_on_every_path),
        H_TEST(relocate_keeps_place_and_order),
        H_TEST(relocate_from_own_callback),
        H_TEST(advance_max_budget_deferred_timers_join_at_pass_end),
        H_TEST(expire_small_caps_never_drop),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
