/* SPDX-License-Identifier: MIT */
/*
 * wheel_fixture.h - what the core wheel's unit tests (test_wheel_*.c)
 * share, header-only: test timers that log each fire (id, lateness, the
 * wheel's time, the deadline, whether still pending) and may run an
 * action inside the callback, two wheels, and expect_exact(), which proves
 * a timer fires exactly at its deadline and not one tick before.
 */
#ifndef ROTA_TEST_WHEEL_FIXTURE_H
#define ROTA_TEST_WHEEL_FIXTURE_H

#include <rota.h>

#include <limits.h>

#include "harness.h"
#include "wide.h" /* exact references */

/* Not every test file uses every part of the fixture. */
#if defined(__GNUC__)
#define WF_UNUSED __attribute__((unused))
#else
#define WF_UNUSED
#endif

#define LOG_MAX 16384

struct entry {
    int id;
    uint64_t late;
    uint64_t now;      /* rota_wheel_now() inside the callback */
    uint64_t deadline; /* rota_timer_deadline() inside the callback */
    bool pending;      /* rota_timer_pending() inside the callback */
};

WF_UNUSED static struct entry ent[LOG_MAX];
WF_UNUSED static size_t nent;

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

static inline void rec(struct rota_wheel *w, struct rota_timer *t,
                       uint64_t late)
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

static inline void tn_init(struct tn *n, int id)
{
    memset(n, 0, sizeof *n);
    rota_periodic_init(&n->per, rec);
    n->id = id;
}

static inline void tn_init_all(struct tn *n, size_t count)
{
    for (size_t i = 0; i < count; i++)
        tn_init(&n[i], (int)i);
}

static inline void log_reset(void)
{
    nent = 0;
}

WF_UNUSED static struct rota_wheel wheel, wheel2; /* ~37 KiB each */

/* A new wheel in `w`'s memory.  The wheel a test before left may still
 * link that test's timers, gone with its stack frame: it is dropped with
 * them (rota.h, OWNERSHIP) by clearing its memory, and not initialised
 * again, which rota.h forbids while timers are pending (a debug build
 * reports it). */
static inline void new_wheel(struct rota_wheel *w, uint64_t now)
{
    memset(w, 0, sizeof *w);
    rota_wheel_init(w, now);
}

/* rota_wheel_timeout_ms()'s timeout, which must come with status 0. */
static inline int tmo(struct rota_wheel *w, uint64_t now, uint64_t tick_ns)
{
    int ms = 12345;
    CHECK_EQ_INT(rota_wheel_timeout_ms(w, now, tick_ns, &ms), 0);
    return ms;
}

static inline uint64_t span(unsigned level)
{
    if (level >= ROTA_WHEEL_LEVELS)
        abort(); /* 256^8 is past uint64_t */
    return (uint64_t)1 << (ROTA_WHEEL_BITS * level);
}

/* The timer `n`, the only one pending, must fire exactly at `deadline`:
 * not in any advance before it (taken in a few steps that cross level
 * boundaries), and in the advance that reaches it, with lateness 0. */
static inline bool expect_exact(struct rota_wheel *w, struct tn *n,
                                uint64_t deadline)
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

/* State the callbacks of several tests share: timers a callback acts on,
 * a deadline it saw, a drain and a misuse counter. */
WF_UNUSED static struct tn *victims[4];
WF_UNUSED static uint64_t armed_deadline;
WF_UNUSED static unsigned misuses;

static inline void drain_count(struct rota_timer *t, void *arg)
{
    (void)t;
    (*(int *)arg)++;
}

static inline void count_misuse(const char *misuse, const struct rota_timer *t,
                                void *arg)
{
    (void)misuse;
    (void)t;
    (void)arg;
    misuses++;
}

#endif /* ROTA_TEST_WHEEL_FIXTURE_H */
