/* SPDX-License-Identifier: MIT */
/*
 * test_wheel_callbacks.c - unit tests of the core wheel (rota.h) on a fake
 * clock: what a callback may do: re-arm with delay 0, cancel or free
 * timers of the same pass and its own container, use another wheel,
 * arm at or before now; cancelled timers do not linger.
 * Shared fixture: wheel_fixture.h.  rota_wheel_check() runs after the
 * operations.  Nothing sleeps: time is whatever the test passes in.
 */
#include "wheel_fixture.h"

/* ---------------------------------------------------- bug class reentrancy */

static void rearm_zero(struct rota_wheel *w, struct tn *self)
{
    CHECK_EQ_INT(rota_timer_arm_in(w, &self->per.timer, 0), 0);
}

TEST(rearm_delay_zero_in_callback_fires_next_call)
{
    struct tn a, b;
    size_t fired = 0;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    tn_init(&b, 1);
    a.act = rearm_zero;
    rota_timer_arm_at(&wheel, &a.per.timer, 10);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 10), 1); /* once, not forever */
    CHECK(rota_timer_pending(&a.per.timer));
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 10);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 10);
    CHECK_EQ_INT(tmo(&wheel, 10, 1000000), 0);
    CHECK_WHEEL(&wheel);
    /* The next call fires it again, once, even without moving time. */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 10), 1);
    CHECK_EQ_U64(ent[1].late, 0);
    /* advance_max says "due timers remain" after such a pass. */
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 12, 100, &fired), 1);
    CHECK_EQ_U64(fired, 1);
    CHECK_EQ_U64(ent[2].late, 2);
    /* An arm at a past deadline from a callback behaves the same. */
    a.act = NULL;
    rota_timer_cancel(&wheel, &a.per.timer);
    b.act = rearm_zero;
    rota_timer_arm_at(&wheel, &b.per.timer, 12);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 20), 1);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 25), 1);
    CHECK_EQ_U64(ent[4].late, 5); /* re-armed at 20 (clamped), fired at 25 */
    b.act = NULL;
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 25), 1);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 25), 0);
    CHECK_WHEEL(&wheel);
}

static int cancel_rc[4];

static void cancel_victims(struct rota_wheel *w, struct tn *self)
{
    (void)self;
    for (int i = 0; i < 4 && victims[i] != NULL; i++)
        cancel_rc[i] = rota_timer_cancel(w, &victims[i]->per.timer);
}

TEST(callback_cancels_next_due_timer)
{
    struct tn t[5];

    /* t0 and t1 share a deadline; t2 is later in the same pass; t0's
     * callback cancels both. */
    new_wheel(&wheel, 0);
    tn_init_all(t, 5);
    rota_timer_arm_at(&wheel, &t[0].per.timer, 100);
    rota_timer_arm_at(&wheel, &t[1].per.timer, 100);
    rota_timer_arm_at(&wheel, &t[2].per.timer, 150);
    rota_timer_arm_at(&wheel, &t[3].per.timer, 150);
    rota_timer_arm_at(&wheel, &t[4].per.timer, 5000);
    t[0].act = cancel_victims;
    victims[0] = &t[1];
    victims[1] = &t[2];
    victims[2] = &t[4];
    victims[3] = NULL;
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 200), 2);
    CHECK_EQ_U64(nent, 2);
    CHECK_EQ_INT(ent[0].id, 0);
    CHECK_EQ_INT(ent[1].id, 3);
    CHECK_EQ_INT(cancel_rc[0], 1);
    CHECK_EQ_INT(cancel_rc[1], 1);
    CHECK_EQ_INT(cancel_rc[2], 1);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), ROTA_NEVER);
    CHECK_WHEEL(&wheel);
}

static void cancel_and_free_victim(struct rota_wheel *w, struct tn *self)
{
    (void)self;
    CHECK_EQ_INT(rota_timer_cancel(w, &victims[0]->per.timer), 1);
    free(victims[0]);
}

TEST(callback_cancels_and_frees_timer_due_in_same_pass)
{
    struct tn a, c;
    struct tn *b = malloc(sizeof *b);

    if (!CHECK(b != NULL))
        return;
    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    tn_init(b, 1);
    tn_init(&c, 2);
    a.act = cancel_and_free_victim;
    victims[0] = b;
    rota_timer_arm_at(&wheel, &a.per.timer, 64);
    rota_timer_arm_at(&wheel, &b->per.timer, 64); /* the next one due */
    rota_timer_arm_at(&wheel, &c.per.timer, 64);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 64), 2);
    CHECK_EQ_INT(ent[0].id, 0);
    CHECK_EQ_INT(ent[1].id, 2);
    CHECK_WHEEL(&wheel);
}

static void free_self(struct rota_wheel *w, struct tn *self)
{
    (void)w;
    free(self);
}

static void cancel_free_self(struct rota_wheel *w, struct tn *self)
{
    CHECK_EQ_INT(rota_timer_cancel(w, &self->per.timer), 1); /* periodic */
    free(self);
}

TEST(callback_frees_own_container)
{
    /* Run under ASan or valgrind, a wheel that touched a timer after its
     * callback returned would be caught here. */
    struct tn *n[6];
    struct tn keep;

    new_wheel(&wheel, 0);
    tn_init(&keep, 99);
    for (int i = 0; i < 6; i++) {
        n[i] = malloc(sizeof *n[i]);
        if (!CHECK(n[i] != NULL))
            return;
        tn_init(n[i], i);
    }
    for (int i = 0; i < 4; i++) {
        n[i]->act = free_self;
        rota_timer_arm_at(&wheel, &n[i]->per.timer,
                          100 + (uint64_t)(i / 2) * 4096);
    }
    for (int i = 4; i < 6; i++) {
        n[i]->act = cancel_free_self;
        rota_periodic_arm_at(&wheel, &n[i]->per, 100, 7,
                             (enum rota_missed)(i - 4 + 1));
    }
    rota_timer_arm_at(&wheel, &keep.per.timer, 100);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 100), 5);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 10000), 2);
    CHECK_EQ_U64(nent, 7);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_WHEEL(&wheel);
}

/* ---------------------------------- bug class lingering-cancel (ends-once) */

TEST(cancelled_timers_do_not_linger)
{
    enum { N = 1000 };
    struct tn **t = malloc(N * sizeof *t);
    struct rota_stats s;
    uint64_t seed = 7;

    if (!CHECK(t != NULL))
        return;
    new_wheel(&wheel, 0);
    for (int i = 0; i < N; i++) {
        t[i] = malloc(sizeof **t);
        if (!CHECK(t[i] != NULL))
            return;
        tn_init(t[i], i);
        rota_timer_arm_at(&wheel, &t[i]->per.timer,
                          1 + h_rand(&seed) % 100000000);
    }
    CHECK_EQ_U64(rota_wheel_count(&wheel), N);
    for (int i = 0; i < N; i++) {
        CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[i]->per.timer), 1);
        CHECK_EQ_U64(rota_wheel_count(&wheel), (uint64_t)(N - 1 - i));
        free(t[i]); /* the wheel holds no reference once cancel returned */
    }
    free(t);
    rota_wheel_stats(&wheel, &s);
    CHECK_EQ_U64(s.pending, 0);
    CHECK_EQ_U64(s.cancelled, N);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), ROTA_NEVER);
    CHECK_WHEEL(&wheel);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 200000000), 0);
    CHECK_EQ_U64(nent, 0);
    CHECK_WHEEL(&wheel);
}

/* --------------------------------------------------------- callbacks */

static void arm_on_other_wheel(struct rota_wheel *w, struct tn *self)
{
    (void)w;
    CHECK_EQ_INT(rota_timer_arm_at(&wheel2, &victims[0]->per.timer, 3), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel2, 3), 1);
    if (rota_debug_enabled()) /* a release build takes the caller's word */
        CHECK_EQ_INT(rota_timer_arm_at(&wheel2, &self->per.timer, 5),
                     ROTA_EOTHERWHEEL);
}

TEST(callback_uses_another_wheel)
{
    struct tn a, b;

    new_wheel(&wheel, 0);
    rota_wheel_init(&wheel2, 0);
    tn_init(&a, 0);
    tn_init(&b, 1);
    a.act = arm_on_other_wheel;
    victims[0] = &b;
    /* a is periodic, so it is still pending on `wheel` in its callback. */
    rota_periodic_arm_at(&wheel, &a.per, 2, 100, ROTA_MISSED_SKIP);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 2), 1);
    CHECK_EQ_U64(nent, 2);
    CHECK_EQ_INT(ent[1].id, 1);
    CHECK_WHEEL(&wheel);
    CHECK_WHEEL(&wheel2);
}

static void arm_past_from_callback(struct rota_wheel *w, struct tn *self)
{
    (void)self;
    /* Deadlines at or before now, from a callback: the next call. */
    CHECK_EQ_INT(rota_timer_arm_at(w, &victims[0]->per.timer, 0), 0);
    CHECK_EQ_INT(
        rota_periodic_arm_at(w, &victims[1]->per, 1, 1000, ROTA_MISSED_BURST),
        0);
    CHECK_EQ_INT(rota_timer_touch_at(w, &victims[2]->per.timer, 0),
                 0); /* earlier */
    CHECK_EQ_U64(rota_wheel_count(w), 3);
    CHECK_EQ_U64(rota_wheel_next_deadline(w), rota_wheel_now(w));
}

TEST(arms_at_or_before_now_in_callback_wait_for_next_call)
{
    struct tn t[4];

    new_wheel(&wheel, 0);
    tn_init_all(t, 4);
    t[0].act = arm_past_from_callback;
    victims[0] = &t[1];
    victims[1] = &t[2];
    victims[2] = &t[3];
    rota_timer_arm_at(&wheel, &t[3].per.timer, 5000);
    rota_timer_arm_at(&wheel, &t[0].per.timer, 100);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 200), 1);
    CHECK_WHEEL(&wheel);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 200);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 200), 3);
    /* In arm order, each 0 late at the next call's time. */
    CHECK_EQ_INT(ent[1].id, 1);
    CHECK_EQ_INT(ent[2].id, 2);
    CHECK_EQ_INT(ent[3].id, 3);
    CHECK_EQ_U64(ent[1].late, 0);
    CHECK(rota_timer_pending(&t[2].per.timer));
    CHECK_EQ_U64(rota_timer_deadline(&t[2].per.timer), 1200);
    CHECK_WHEEL(&wheel);
}

/* rota_wheel_next_deadline() from a callback, by the callback's id. */
static uint64_t seen_next[4];

static void note_next(struct rota_wheel *w, struct tn *self)
{
    seen_next[self->id] = rota_wheel_next_deadline(w);
    CHECK_WHEEL(w);
}

static void note_next_arm_now(struct rota_wheel *w, struct tn *self)
{
    struct tn *late = self->arg;
    /* Nothing else is due: this one is cached (t[2]'s next, 35). */
    CHECK_EQ_U64(rota_wheel_next_deadline(w), 35);
    CHECK_EQ_INT(rota_timer_arm_in(w, &late->per.timer, 0), 0);
    note_next(w, self);
}

/* The pass fires without looking at the cached earliest deadline, so a
 * deadline a callback asks for while timers are still due must not stay
 * cached: the next callback would see a deadline that has fired. */
TEST(next_deadline_in_callback_stays_exact)
{
    struct tn t[4];

    new_wheel(&wheel, 0);
    tn_init_all(t, 4);
    for (unsigned i = 0; i < 3; i++)
        t[i].act = note_next;
    t[2].act = note_next_arm_now;
    t[2].arg = &t[3];
    rota_timer_arm_at(&wheel, &t[0].per.timer, 10);
    rota_timer_arm_at(&wheel, &t[1].per.timer, 10);
    CHECK_EQ_INT(
        rota_periodic_arm_at(&wheel, &t[2].per, 20, 15, ROTA_MISSED_SKIP), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 10);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 10), 2);
    CHECK_EQ_U64(seen_next[0], 10); /* t[1] is still due */
    CHECK_EQ_U64(seen_next[1], 20); /* not t[0]'s 10, which fired */
    CHECK_WHEEL(&wheel);
    /* A periodic timer filed again, then a timer armed at now (deferred)
     * from its callback: both are seen. */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 20), 1);
    CHECK_EQ_U64(seen_next[2], 20); /* t[3], armed at now */
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 20);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 20), 1);
    CHECK_EQ_INT(ent[nent - 1].id, 3);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 35); /* t[2]'s next */
    rota_timer_cancel(&wheel, &t[2].per.timer);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), ROTA_NEVER);
    CHECK_WHEEL(&wheel);
}

/* A pass that fires and finds nothing more due by now sets arm_min_ from
 * what it knows; a deadline cached by a callback is one of its terms, so
 * the inline arm files nothing below it without telling the wheel. */
TEST(deadline_cached_in_callback_bounds_the_inline_arm)
{
    struct tn t[3];

    new_wheel(&wheel, 0);
    tn_init_all(t, 3);
    t[0].act = note_next;
    rota_timer_arm_at(&wheel, &t[0].per.timer, 10);
    rota_timer_arm_at(&wheel, &t[1].per.timer, 1000); /* slot from 768 */
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 10), 1);
    CHECK_EQ_U64(seen_next[0], 1000);
    CHECK_WHEEL(&wheel);
    /* Between the next slot's start and the cached deadline. */
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[2].per.timer, 800), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 800);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1000), 2);
    CHECK_EQ_INT(ent[1].id, 2);
    CHECK_EQ_INT(ent[2].id, 1);
    CHECK_WHEEL(&wheel);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(rearm_delay_zero_in_callback_fires_next_call),
        H_TEST(callback_cancels_next_due_timer),
        H_TEST(callback_cancels_and_frees_timer_due_in_same_pass),
        H_TEST(callback_frees_own_container),
        H_TEST(cancelled_timers_do_not_linger),
        H_TEST(callback_uses_another_wheel),
        H_TEST(arms_at_or_before_now_in_callback_wait_for_next_call),
        H_TEST(next_deadline_in_callback_stays_exact),
        H_TEST(deadline_cached_in_callback_bounds_the_inline_arm),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
