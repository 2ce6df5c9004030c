/* SPDX-License-Identifier: MIT */
/*
 * test_wheel_errors.c - unit tests of the core wheel (rota.h) on a fake
 * clock: every error path of rota.h: null pointers, uninitialised and
 * foreign timers, re-entry, touch of an idle timer, bad periods, and
 * rota_strerror() for every code.
 * Shared fixture: wheel_fixture.h.  rota_wheel_check() runs after the
 * operations.  Nothing sleeps: time is whatever the test passes in.
 */
#include "wheel_fixture.h"

TEST(null_pointers_einval)
{
    struct tn a;
    struct rota_timer *out[2];
    size_t n = 99;
    const char *why = NULL;

    tn_init(&a, 0);
    new_wheel(&wheel, 10);
    CHECK_EQ_INT(rota_timer_arm_at(NULL, &a.per.timer, 20), ROTA_EINVAL);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, NULL, 20), ROTA_EINVAL);
    CHECK_EQ_INT(rota_timer_arm_in(NULL, &a.per.timer, 5), ROTA_EINVAL);
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, NULL, 5), ROTA_EINVAL);
    CHECK_EQ_INT(rota_periodic_arm_at(NULL, &a.per, 20, 5, ROTA_MISSED_SKIP),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_periodic_arm_at(&wheel, NULL, 20, 5, ROTA_MISSED_SKIP),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_timer_touch_at(NULL, &a.per.timer, 20), ROTA_EINVAL);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, NULL, 20), ROTA_EINVAL);
    CHECK_EQ_INT(rota_timer_cancel(NULL, &a.per.timer), ROTA_EINVAL);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_wheel_advance(NULL, 20), ROTA_EINVAL);
    CHECK_EQ_INT(rota_wheel_advance_max(NULL, 20, 5, &n), ROTA_EINVAL);
    CHECK_EQ_INT(rota_wheel_expire(NULL, 20, out, 2, &n), ROTA_EINVAL);
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 20, NULL, 2, &n), ROTA_EINVAL);
    int ms = -1;
    CHECK_EQ_INT(rota_wheel_timeout_ms(NULL, 20, 1000000, &ms), ROTA_EINVAL);
    CHECK_EQ_INT(ms, 0);
    ms = -1;
    CHECK_EQ_INT(rota_wheel_timeout_ms(&wheel, 20, 0, &ms), ROTA_EINVAL);
    CHECK_EQ_INT(ms, 0);
    CHECK_EQ_INT(rota_wheel_timeout_ms(&wheel, 20, 1000000, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_wheel_drain(NULL, drain_count, &n), ROTA_EINVAL);
    CHECK_EQ_INT(rota_wheel_drain(&wheel, NULL, NULL), ROTA_EINVAL);
    why = NULL;
    CHECK_EQ_INT(rota_wheel_check(NULL, &why), ROTA_EINVAL);
    CHECK(why != NULL);
    CHECK_EQ_INT(rota_wheel_check(NULL, NULL), ROTA_EINVAL);
    /* Nothing was changed by the refused calls (the EINVAL expire above
     * did not move the wheel's time either). */
    CHECK(!rota_timer_pending(&a.per.timer));
    CHECK_EQ_U64(rota_wheel_now(&wheel), 10);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    /* Functions that cannot report an error still must not crash; these
     * are the only sensible answers. */
    CHECK(!rota_timer_pending(NULL));
    CHECK_EQ_U64(rota_wheel_count(NULL), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(NULL), ROTA_NEVER);
    rota_timer_init(NULL, rec);
    rota_wheel_stats(NULL, NULL);
    rota_wheel_stats(&wheel, NULL);
    (void)rota_wheel_now(NULL);
    (void)rota_timer_deadline(NULL);
    /* expire with cap 0 may pass out == NULL. */
    CHECK_EQ_INT(rota_wheel_expire(&wheel, 11, NULL, 0, &n), 0);
    CHECK_EQ_U64(n, 0);
    CHECK_WHEEL(&wheel);
}

static void uninit_case(int fill)
{
    struct rota_timer t;
    struct rota_periodic pt;

    memset(&t, fill, sizeof t);
    memset(&pt, fill, sizeof pt);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t, 20), ROTA_EUNINIT);
    CHECK_EQ_INT(rota_timer_arm_in(&wheel, &t, 5), ROTA_EUNINIT);
    CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &pt, 20, 5, ROTA_MISSED_SKIP),
                 ROTA_EUNINIT);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &t, 20), ROTA_EUNINIT);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t), ROTA_EUNINIT);
    CHECK(!rota_timer_pending(&t));
    CHECK_EQ_U64(rota_wheel_count(&wheel), 1);
    CHECK_WHEEL(&wheel);
}

TEST(uninitialised_timer_euninit)
{
    struct tn other;

    new_wheel(&wheel, 10);
    tn_init(&other, 1);
    rota_timer_arm_at(&wheel, &other.per.timer,
                      30); /* the wheel is not empty */
    uninit_case(0);
    /* Other garbage looks pending to a release build, which takes the
     * caller's word (rota.h, ERRORS); a debug build's seal catches it and
     * reports each call (here to a handler that returns). */
    if (rota_debug_enabled()) {
        rota_debug_set_handler(count_misuse, NULL);
        uninit_case(0xab);
        uninit_case(0xff);
        rota_debug_set_handler(NULL, NULL);
        CHECK(misuses >= 10);
    }
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 30), 1);
    CHECK_EQ_INT(ent[0].id, 1);
}

TEST(pending_on_other_wheel_eotherwheel)
{
    struct tn a;

    new_wheel(&wheel, 0);
    rota_wheel_init(&wheel2, 0);
    tn_init(&a, 0);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 100), 0);
    /* A timer records no wheel: a release build takes the caller's word
     * that a pending timer is this wheel's (rota.h, ERRORS), and a debug
     * build finds its wheel by walking its list. */
    if (rota_debug_enabled()) {
        CHECK_EQ_INT(rota_timer_arm_at(&wheel2, &a.per.timer, 50),
                     ROTA_EOTHERWHEEL);
        CHECK_EQ_INT(rota_timer_arm_in(&wheel2, &a.per.timer, 5),
                     ROTA_EOTHERWHEEL);
        CHECK_EQ_INT(
            rota_periodic_arm_at(&wheel2, &a.per, 5, 5, ROTA_MISSED_BURST),
            ROTA_EOTHERWHEEL);
        CHECK_EQ_INT(rota_timer_touch_at(&wheel2, &a.per.timer, 500),
                     ROTA_EOTHERWHEEL);
        CHECK_EQ_INT(rota_timer_cancel(&wheel2, &a.per.timer),
                     ROTA_EOTHERWHEEL);
    }
    /* Still pending on the first wheel, unchanged. */
    CHECK(rota_timer_pending(&a.per.timer));
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 100);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 1);
    CHECK_EQ_U64(rota_wheel_count(&wheel2), 0);
    CHECK_WHEEL(&wheel);
    CHECK_WHEEL(&wheel2);
    /* Once idle it may move to the other wheel. */
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &a.per.timer), 1);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel2, &a.per.timer, 50), 0);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 1000), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel2, 50), 1);
    CHECK_EQ_U64(nent, 1);
    CHECK_WHEEL(&wheel2);
}

static int busy_rc[8];

static void reenter(struct rota_wheel *w, struct tn *self)
{
    struct rota_timer *out[2];
    size_t n;
    int calls = 0;

    (void)self;
    busy_rc[0] = rota_wheel_advance(w, rota_wheel_now(w) + 10);
    busy_rc[1] = rota_wheel_advance_max(w, rota_wheel_now(w), 5, &n);
    busy_rc[2] = rota_wheel_expire(w, rota_wheel_now(w), out, 2, &n);
    busy_rc[3] = rota_wheel_drain(w, drain_count, &calls);
    busy_rc[4] = calls;
    /* Another wheel is not busy. */
    busy_rc[5] = rota_wheel_advance(&wheel2, rota_wheel_now(&wheel2) + 1);
}

TEST(reentry_from_callback_ebusy)
{
    struct tn a, b;

    new_wheel(&wheel, 0);
    rota_wheel_init(&wheel2, 0);
    tn_init(&a, 0);
    tn_init(&b, 1);
    a.act = reenter;
    rota_timer_arm_at(&wheel, &a.per.timer, 5);
    rota_timer_arm_at(&wheel, &b.per.timer, 15);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 5), 1);
    CHECK_EQ_INT(busy_rc[0], ROTA_EBUSY);
    CHECK_EQ_INT(busy_rc[1], ROTA_EBUSY);
    CHECK_EQ_INT(busy_rc[2], ROTA_EBUSY);
    CHECK_EQ_INT(busy_rc[3], ROTA_EBUSY);
    CHECK_EQ_INT(busy_rc[4], 0);
    CHECK_EQ_INT(busy_rc[5], 0);
    /* The refused calls changed nothing: b is still pending at 15, the
     * time is 5. */
    CHECK_EQ_U64(rota_wheel_now(&wheel), 5);
    CHECK(rota_timer_pending(&b.per.timer));
    CHECK_EQ_U64(rota_wheel_count(&wheel), 1);
    CHECK_WHEEL(&wheel);
    /* After the pass the wheel is usable again. */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 15), 1);
    CHECK_EQ_U64(nent, 2);
}

TEST(touch_not_pending_enoent)
{
    struct tn a;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &a.per.timer, 10), ROTA_ENOENT);
    rota_timer_arm_at(&wheel, &a.per.timer, 10);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &a.per.timer), 1);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &a.per.timer, 20), ROTA_ENOENT);
    rota_timer_arm_at(&wheel, &a.per.timer, 10);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 10), 1);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &a.per.timer, 20), ROTA_ENOENT);
    CHECK(!rota_timer_pending(&a.per.timer));
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK_WHEEL(&wheel);
}

TEST(strerror_every_code)
{
    struct code {
        int value;
        const char *message;
    };
    static const struct code codes[] = {
#define ROTA_TEST_CODE(name, value, message) {name, message},
        ROTA_ERRORS(ROTA_TEST_CODE)
#undef ROTA_TEST_CODE
    };
    size_t n = sizeof codes / sizeof codes[0];
    const char *unknown = rota_strerror(-14);
    const char *positive = rota_strerror(1);

    CHECK_EQ_U64(n, 13);
    CHECK_EQ_STR(rota_strerror(0), "success");
    for (size_t i = 0; i < n; i++) {
        CHECK(codes[i].value < 0);
        CHECK_EQ_STR(rota_strerror(codes[i].value), codes[i].message);
        for (size_t j = 0; j < i; j++)
            CHECK(codes[i].value != codes[j].value &&
                  strcmp(codes[i].message, codes[j].message) != 0);
    }
    CHECK_EQ_STR(rota_strerror(ROTA_EINVAL),
                 "invalid argument (NULL pointer or value out of range)");
    CHECK_EQ_STR(rota_strerror(ROTA_ESYS), "system call failed (see errno)");
    /* Codes that are not rota's get one generic text. */
    CHECK(unknown != NULL && *unknown != '\0');
    CHECK(strcmp(unknown, "success") != 0);
    for (size_t i = 0; i < n; i++)
        CHECK(strcmp(unknown, codes[i].message) != 0);
    CHECK_EQ_STR(rota_strerror(-1000), unknown);
    CHECK_EQ_STR(rota_strerror(INT_MIN), unknown);
    CHECK(strstr(unknown, "unknown") != NULL);
    /* A positive value is what a successful call may return (a count, a
     * flag): its text says it is no error. */
    CHECK(strcmp(positive, unknown) != 0);
    CHECK(strcmp(positive, "success") != 0);
    CHECK(strstr(positive, "not an error") != NULL);
    CHECK_EQ_STR(rota_strerror(12345), positive);
    CHECK_EQ_STR(rota_strerror(INT_MAX), positive);
}

TEST(arm_periodic_einval)
{
    struct tn a;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &a.per, 10, 0, ROTA_MISSED_SKIP),
                 ROTA_EINVAL);
    CHECK_EQ_INT(
        rota_periodic_arm_at(&wheel, &a.per, 10, 5, (enum rota_missed)3),
        ROTA_EINVAL);
    CHECK_EQ_INT(
        rota_periodic_arm_at(&wheel, &a.per, 10, 5, (enum rota_missed) - 1),
        ROTA_EINVAL);
    CHECK(!rota_timer_pending(&a.per.timer));
    /* A refused re-arm leaves a pending timer as it was. */
    rota_timer_arm_at(&wheel, &a.per.timer, 20);
    CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &a.per, 10, 0, ROTA_MISSED_BURST),
                 ROTA_EINVAL);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 20);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 100), 1);
    CHECK(!ent[0].pending); /* still one-shot */
    CHECK_WHEEL(&wheel);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(null_pointers_einval),
        H_TEST(uninitialised_timer_euninit),
        H_TEST(pending_on_other_wheel_eotherwheel),
        H_TEST(reentry_from_callback_ebusy),
        H_TEST(touch_not_pending_enoent),
        H_TEST(strerror_every_code),
        H_TEST(arm_periodic_einval),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
