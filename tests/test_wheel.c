/* SPDX-License-Identifier: MIT */
/*
 * test_wheel.c - unit tests of the core wheel (rota.h) on a fake clock.
 *
 * Every function and every error path of the header, then one named test
 * per recurring bug class of timer libraries (docs/DESIGN.md): the target
 * slot under the hand, delays that are exact multiples of a level's span,
 * level boundaries, delay-0 re-arms from a callback, callbacks that cancel
 * or free timers of the same pass, huge delays and saturation, clocks going
 * backwards, lingering cancelled timers, periodic drift and the missed-tick
 * policies, ordering, budgets, caps, the exact next deadline, the epoll
 * timeout, drain and the counters.  rota_wheel_check() runs after the
 * operations.  Nothing sleeps: time is whatever the test passes in.
 */
#include <rota.h>

#include <limits.h>

#include "harness.h"
#include "wide.h" /* exact references */

/* ------------------------------------------------------------ fixture */

#define LOG_MAX 16384

struct entry {
    int id;
    uint64_t late;
    uint64_t now;      /* rota_wheel_now() inside the callback */
    uint64_t deadline; /* rota_timer_deadline() inside the callback */
    bool pending;      /* rota_timer_pending() inside the callback */
};

static struct entry ent[LOG_MAX];
static size_t nent;

struct tn;
typedef void action_fn(struct rota_wheel *w, struct tn *self);

/* Every test timer is a periodic one (rota.h, struct rota_periodic), so
 * that any may be armed periodic; until it is, it fires once. */
struct tn {
    struct rota_periodic per;
    int id;
    action_fn *act; /* run inside the callback, after recording */
    void *arg;
};

static void rec(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    struct tn *n = rota_container_of(t, struct tn, per.timer);
    if (nent < LOG_MAX) {
        ent[nent].id = n->id;
        ent[nent].late = late;
        ent[nent].now = rota_wheel_now(w);
        ent[nent].deadline = rota_timer_deadline(t);
        ent[nent].pending = rota_timer_pending(t);
        nent++;
    }
    if (n->act != NULL)
        n->act(w, n); /* may free n */
}

static void tn_init(struct tn *n, int id)
{
    memset(n, 0, sizeof *n);
    rota_periodic_init(&n->per, rec);
    n->id = id;
}

static void tn_init_all(struct tn *n, size_t count)
{
    for (size_t i = 0; i < count; i++)
        tn_init(&n[i], (int)i);
}

static void log_reset(void)
{
    nent = 0;
}

static struct rota_wheel wheel, wheel2; /* ~37 KiB each */

/* A new wheel in `w`'s memory.  The wheel a test before left may still
 * link that test's timers, gone with its stack frame: it is dropped with
 * them (rota.h, OWNERSHIP) by clearing its memory, and not initialised
 * again, which rota.h forbids while timers are pending (a debug build
 * reports it). */
static void new_wheel(struct rota_wheel *w, uint64_t now)
{
    memset(w, 0, sizeof *w);
    rota_wheel_init(w, now);
}

/* rota_wheel_timeout_ms()'s timeout, which must come with status 0. */
static int tmo(struct rota_wheel *w, uint64_t now, uint64_t tick_ns)
{
    int ms = 12345;
    CHECK_EQ_INT(rota_wheel_timeout_ms(w, now, tick_ns, &ms), 0);
    return ms;
}

static uint64_t span(unsigned level)
{
    if (level >= ROTA_WHEEL_LEVELS)
        abort(); /* 256^8 is past uint64_t */
    return (uint64_t)1 << (ROTA_WHEEL_BITS * level);
}

/* The timer `n`, the only one pending, must fire exactly at `deadline`:
 * not in any advance before it (taken in a few steps that cross level
 * boundaries), and in the advance that reaches it, with lateness 0. */
static bool expect_exact(struct rota_wheel *w, struct tn *n, uint64_t deadline)
{
    uint64_t now = rota_wheel_now(w);
    uint64_t points[5];
    size_t np = 0;
    bool ok = true;

    if (deadline > now) {
        points[np++] = now + (deadline - now) / 2;
        if (deadline - now > 64)
            points[np++] = deadline - 64;
        if (deadline - now > 2)
            points[np++] = deadline - 2;
        points[np++] = deadline - 1;
    }
    log_reset();
    for (size_t i = 0; i < np; i++) {
        if (points[i] < rota_wheel_now(w))
            continue;
        ok &= CHECK_EQ_INT(rota_wheel_advance(w, points[i]), 0);
        if (!ok) {
            fprintf(stderr,
                    "    early: deadline %" PRIu64 ", advanced to %" PRIu64
                    "\n",
                    deadline, points[i]);
            return false;
        }
    }
    ok &= CHECK(rota_timer_pending(&n->per.timer));
    ok &= CHECK_EQ_U64(rota_wheel_next_deadline(w), deadline);
    ok &= CHECK_EQ_INT(rota_wheel_advance(w, deadline), 1);
    ok &= CHECK_EQ_U64(nent, 1);
    if (nent == 1) {
        ok &= CHECK_EQ_INT(ent[0].id, n->id);
        ok &= CHECK_EQ_U64(ent[0].late, 0);
    }
    if (!ok)
        fprintf(stderr, "    deadline %" PRIu64 " from now %" PRIu64 "\n",
                deadline, now);
    CHECK_WHEEL(w);
    return ok;
}

/* ------------------------------------------------- API and error paths */

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

static void drain_count(struct rota_timer *t, void *arg)
{
    (void)t;
    (*(int *)arg)++;
}

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

static unsigned misuses;

static void count_misuse(const char *misuse, const struct rota_timer *t,
                         void *arg)
{
    (void)misuse;
    (void)t;
    (void)arg;
    misuses++;
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
    CHECK_EQ_U64(sizeof(struct rota_periodic), 56);
#else
    CHECK(sizeof(struct rota_timer) <= 24);
    CHECK(sizeof(struct rota_periodic) <= 40);
#endif
    /* The slot heads and the cascade marks are most of it: 2,048 + 256
     * links (37 KiB in all on a 64-bit target, about 18 KiB on a 32-bit
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

/* ----------------------------------- bug classes early-fire, rotation-late */

static uint64_t armed_deadline;
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

static struct tn *victims[4];
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

/* ------------------------------- periodic timers, bug class periodic-drift */

TEST(periodic_no_drift)
{
    struct tn a;
    uint64_t now = 0;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &a.per, 10, 7, ROTA_MISSED_SKIP),
                 0);
    log_reset();
    /* Steps of 3 never land on most deadlines; each fire must still be on
     * the schedule 10 + 7k, late by less than a step. */
    while (now < 70000) {
        now += 3;
        rota_wheel_advance(&wheel, now);
    }
    CHECK_EQ_U64(nent, (70000 - 10) / 7 + 1);
    for (size_t e = 0; e < nent; e++) {
        uint64_t fired_deadline = ent[e].now - ent[e].late;
        CHECK_EQ_U64(fired_deadline, 10 + 7 * e);
        CHECK(ent[e].late < 3);
        CHECK_EQ_U64(ent[e].deadline, fired_deadline + 7); /* next, inside */
        CHECK(ent[e].pending);
        if (h_failed > 5)
            break;
    }
    CHECK(rota_timer_pending(&a.per.timer));
    CHECK_WHEEL(&wheel);
}

static void periodic_case(enum rota_missed policy, const uint64_t *lates,
                          size_t nlates, uint64_t next)
{
    struct tn a;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    CHECK_EQ_INT(rota_periodic_arm_at(&wheel, &a.per, 10, 10, policy), 0);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 55), (int)nlates);
    CHECK_EQ_U64(nent, nlates);
    for (size_t e = 0; e < nent && e < nlates; e++)
        CHECK_EQ_U64(ent[e].late, lates[e]);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), next);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), next);
    CHECK_WHEEL(&wheel);
    /* Then back on time: exactly at next, late 0. */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, next - 1), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, next), 1);
    CHECK_EQ_U64(ent[nent - 1].late, 0);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), next + 10);
}

TEST(periodic_missed_skip)
{
    static const uint64_t lates[] = {45};
    periodic_case(ROTA_MISSED_SKIP, lates, 1, 60);
}

TEST(periodic_missed_burst)
{
    static const uint64_t lates[] = {45, 35, 25, 15, 5};
    periodic_case(ROTA_MISSED_BURST, lates, 5, 60);
}

TEST(periodic_missed_delay)
{
    static const uint64_t lates[] = {45};
    periodic_case(ROTA_MISSED_DELAY, lates, 1, 65);
}

/* The table of rota.h (enum rota_missed): first 10, period 10, advanced
 * once to `to`.  Late by less than a period nothing is missed and every
 * policy stays on the schedule; exactly one period late the next point is
 * due too, so BURST fires it in the same call and SKIP and DELAY go on at
 * 30 (= now + period); later than that DELAY leaves the schedule. */
TEST(periodic_policies_by_lateness)
{
    static const struct {
        uint64_t to;
        enum rota_missed policy;
        size_t fires;
        uint64_t next;
    } cases[] = {
        {15, ROTA_MISSED_SKIP, 1, 20},  {15, ROTA_MISSED_BURST, 1, 20},
        {15, ROTA_MISSED_DELAY, 1, 20}, {19, ROTA_MISSED_DELAY, 1, 20},
        {20, ROTA_MISSED_SKIP, 1, 30},  {20, ROTA_MISSED_BURST, 2, 30},
        {20, ROTA_MISSED_DELAY, 1, 30}, {25, ROTA_MISSED_SKIP, 1, 30},
        {25, ROTA_MISSED_BURST, 2, 30}, {25, ROTA_MISSED_DELAY, 1, 35},
        {55, ROTA_MISSED_SKIP, 1, 60},  {55, ROTA_MISSED_BURST, 5, 60},
        {55, ROTA_MISSED_DELAY, 1, 65},
    };
    struct tn a;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        new_wheel(&wheel, 0);
        tn_init(&a, 0);
        CHECK_EQ_INT(
            rota_periodic_arm_at(&wheel, &a.per, 10, 10, cases[i].policy), 0);
        log_reset();
        bool ok = CHECK_EQ_INT(rota_wheel_advance(&wheel, cases[i].to),
                               (int)cases[i].fires);
        ok &= CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), cases[i].next);
        if (!ok)
            fprintf(stderr, "    policy %d advanced to %" PRIu64 "\n",
                    (int)cases[i].policy, cases[i].to);
        CHECK_EQ_U64(ent[0].late, cases[i].to - 10);
        CHECK_WHEEL(&wheel);
    }
}

TEST(periodic_skip_on_boundary)
{
    /* Exactly on a later boundary: SKIP goes to the one strictly after. */
    struct tn a;
    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    rota_periodic_arm_at(&wheel, &a.per, 10, 10, ROTA_MISSED_SKIP);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 50), 1);
    CHECK_EQ_U64(ent[0].late, 40);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 60);
    /* BURST exactly on a boundary fires that boundary too. */
    rota_periodic_arm_at(&wheel, &a.per, 60, 10, ROTA_MISSED_BURST);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 80), 3);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 90);
}

TEST(periodic_schedule_ends_at_max_deadline)
{
    struct tn a;

    for (int policy = 0; policy < 3; policy++) {
        new_wheel(&wheel, ROTA_MAX_DEADLINE - 25);
        tn_init(&a, 0);
        rota_periodic_arm_at(&wheel, &a.per, ROTA_MAX_DEADLINE - 20, 10,
                             (enum rota_missed)policy);
        log_reset();
        CHECK_EQ_INT(rota_wheel_advance(&wheel, ROTA_MAX_DEADLINE - 20), 1);
        CHECK(ent[0].pending);
        CHECK_EQ_U64(ent[0].deadline, ROTA_MAX_DEADLINE - 10);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, ROTA_MAX_DEADLINE - 10), 1);
        CHECK(ent[1].pending); /* MAX itself is a valid deadline */
        CHECK_EQ_U64(ent[1].deadline, ROTA_MAX_DEADLINE);
        CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX), 1);
        CHECK(!ent[2].pending); /* the next would pass MAX: ended */
        CHECK(!rota_timer_pending(&a.per.timer));
        CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
        CHECK_WHEEL(&wheel);
    }
    /* A period so large that the first fire is the last. */
    new_wheel(&wheel, 0);
    rota_periodic_arm_at(&wheel, &a.per, 5, UINT64_MAX, ROTA_MISSED_BURST);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 5), 1);
    CHECK(!ent[0].pending);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    /* BURST that reaches the end inside one call. */
    new_wheel(&wheel, ROTA_MAX_DEADLINE - 100);
    rota_periodic_arm_at(&wheel, &a.per, ROTA_MAX_DEADLINE - 100, 40,
                         ROTA_MISSED_BURST);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX), 3); /* -100 -60 -20 */
    CHECK_EQ_U64(ent[2].late, 20);
    CHECK(!rota_timer_pending(&a.per.timer));
    CHECK_WHEEL(&wheel);
}

TEST(periodic_rearm_and_touch_keep_period)
{
    struct tn a;

    new_wheel(&wheel, 0);
    tn_init(&a, 0);
    /* Before rota_periodic_arm_at() gives it a period, it fires once. */
    rota_timer_arm_at(&wheel, &a.per.timer, 5);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 9), 1);
    CHECK(!rota_timer_pending(&a.per.timer));

    /* rota_timer_arm_at() moves the next fire; the schedule goes on from
     * there, every 10. */
    rota_periodic_arm_at(&wheel, &a.per, 10, 10, ROTA_MISSED_SKIP);
    rota_timer_arm_at(&wheel, &a.per.timer, 15);
    log_reset();
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 14), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 15), 1);
    CHECK(rota_timer_pending(&a.per.timer));
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 25);
    /* Cancelled and armed again: still periodic. */
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &a.per.timer), 1);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 40), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 40), 1);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 50);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &a.per.timer), 1);
    /* rota_timer_init() makes it a plain timer again: once. */
    rota_timer_init(&a.per.timer, rec);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &a.per.timer, 60), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 100), 1);
    CHECK(!rota_timer_pending(&a.per.timer));
    CHECK_EQ_INT(
        rota_periodic_arm_at(&wheel, &a.per, 110, 10, ROTA_MISSED_SKIP),
        ROTA_EINVAL);
    tn_init(&a, 0);

    /* Touch: the period continues from the new deadline. */
    rota_periodic_arm_at(&wheel, &a.per, 110, 10, ROTA_MISSED_SKIP);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &a.per.timer, 115), 0); /* later */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 114), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 115), 1);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 125);
    CHECK_EQ_INT(rota_timer_touch_at(&wheel, &a.per.timer, 121),
                 0); /* earlier */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 121), 1);
    CHECK_EQ_U64(rota_timer_deadline(&a.per.timer), 131);
    CHECK_WHEEL(&wheel);
}

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

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(wheel_init_empty),
        H_TEST(null_pointers_einval),
        H_TEST(uninitialised_timer_euninit),
        H_TEST(pending_on_other_wheel_eotherwheel),
        H_TEST(reentry_from_callback_ebusy),
        H_TEST(touch_not_pending_enoent),
        H_TEST(strerror_every_code),
        H_TEST(version_matches_header),
        H_TEST(sizes_as_documented),
        H_TEST(arm_fire_cancel_basics),
        H_TEST(timer_init_again_changes_callback),
        H_TEST(arm_periodic_einval),
        H_TEST(target_slot_under_the_hand),
        H_TEST(delay_exact_multiple_of_level_span),
        H_TEST(deadlines_on_level_boundaries),
        H_TEST(never_early_tick_by_tick),
        H_TEST(time_source_counts_delays_from_the_present),
        H_TEST(rearm_delay_zero_in_callback_fires_next_call),
        H_TEST(callback_cancels_next_due_timer),
        H_TEST(callback_cancels_and_frees_timer_due_in_same_pass),
        H_TEST(callback_frees_own_container),
        H_TEST(huge_delays_saturate),
        H_TEST(clock_backwards_counted_fires_nothing),
        H_TEST(advance_by_zero_and_by_2_pow_40),
        H_TEST(wheel_started_near_the_top),
        H_TEST(cancelled_timers_do_not_linger),
        H_TEST(periodic_no_drift),
        H_TEST(periodic_missed_skip),
        H_TEST(periodic_missed_burst),
        H_TEST(periodic_missed_delay),
        H_TEST(periodic_policies_by_lateness),
        H_TEST(periodic_skip_on_boundary),
        H_TEST(periodic_schedule_ends_at_max_deadline),
        H_TEST(periodic_rearm_and_touch_keep_period),
        H_TEST(order_deadline_then_arm_order),
        H_TEST(advance_max_resumes_in_order),
        H_TEST(limit_bounds_cascades_and_refiles),
        H_TEST(arm_during_half_done_cascade_keeps_tie_order),
        H_TEST(cascade_from_both_ends_keeps_tie_order),
        H_TEST(cascade_marks_keep_arm_order),
        H_TEST(more_due_reported_on_every_path),
        H_TEST(relocate_keeps_place_and_order),
        H_TEST(relocate_from_own_callback),
        H_TEST(advance_max_budget_deferred_timers_join_at_pass_end),
        H_TEST(expire_small_caps_never_drop),
        H_TEST(next_deadline_exact),
        H_TEST(next_deadline_after_touching_deferred_timer),
        H_TEST(timeout_ms_rounding),
        H_TEST(timeout_ms_errors_never_wait_forever),
        H_TEST(drain_hands_back_everything),
        H_TEST(stats_counters),
        H_TEST(stats_touch_to_same_deadline_is_not_counted),
        H_TEST(touch_later_fires_at_new_deadline),
        H_TEST(arm_range_picks_the_coarsest_instant),
        H_TEST(touch_range_keeps_a_deadline_inside_the_window),
        H_TEST(touch_unchecked_moves_later_and_heals_the_cache),
        H_TEST(callback_uses_another_wheel),
        H_TEST(arms_at_or_before_now_in_callback_wait_for_next_call),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
