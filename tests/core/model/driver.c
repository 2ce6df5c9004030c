/* SPDX-License-Identifier: MIT */
/*
 * driver.c - a wheel and the model in lockstep; see driver.h.
 *
 * A call that can run callbacks (advance, advance_max) runs on the wheel
 * first.  Its callbacks record what fired (id, lateness, and what the timer
 * and the wheel looked like from inside) and perform their random actions on
 * the wheel, recording each with its result.  Then the model runs the same
 * call; after its k-th fire it replays the actions of the wheel's k-th
 * callback and compares their results.  Last, the two fired sequences are
 * compared.  Values are drawn from the wheel's state (the model is only
 * consulted between calls), so the stream is the same whatever the model
 * says, and a fuzzer's bytes replay exactly.
 */
#include "driver.h"

#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rota.h>

#include "model.h"

/* A burst of more fires than this in one call would only slow the run: the
 * BURST timers that would cause it are cancelled first (on both sides). */
#define BURST_CAP 4000u

/* Even ids are periodic timers (struct rota_periodic), odd ids plain
 * ones; every node has room for either. */
struct node {
    struct rota_periodic per;
    uint32_t id;
    struct drv *d;
};

enum act_kind {
    A_ARM,
    A_ARM_IN,
    A_PERIODIC,
    A_TOUCH,
    A_CANCEL,
    A_CANCEL_FREE,
    A_NEXT,
    A_COUNT,
    A_WALK, /* rota_wheel_foreach() + remaining(): result is walk_sum() */
};

struct act {
    int kind;
    uint32_t id;
    uint64_t a, b; /* deadline or delay; period */
    int policy;
    int64_t rc;        /* the wheel's result */
    uint64_t result;   /* A_NEXT, A_COUNT */
    bool may_be_early; /* A_NEXT after an unchecked touch (rota.h) */
};

struct got {
    struct model_fire f; /* id, late, next and pending_after seen inside */
    uint64_t now_seen;
    size_t count_seen;
    size_t act_begin, act_end;
    bool freed; /* the callback freed its own timer after its actions */
};

struct drv {
    struct drv_config cfg;
    struct drv_src src;
    struct rota_wheel *w;
    /* unchecked touches since next_deadline() last matched the model */
    uint64_t unchecked_touches;
    struct model m;
    struct node **nodes;

    /* The call in progress. */
    bool in_call;
    struct got *got;
    size_t ngot, got_cap;
    struct act *acts;
    size_t nacts, acts_cap;
    struct model_fire *exp;
    size_t exp_cap;
    uint32_t *ids; /* hint ids; drain results */
    size_t ids_cap;
    uint32_t *drained;
    size_t ndrained, drained_cap;
    bool *drained_freed; /* drained[i]'s memory was replaced */
    size_t drained_freed_cap;
    unsigned char *seen; /* visits per timer in a walk (pool entries) */

    bool failed;
    bool replay_failed;
    char err[2048];
    char replay_err[512];
    char op[256]; /* the current operation, for messages */

    uint64_t ops, fires, actions, restarts;
    uint64_t pending_sum; /* sum over ops of the pending count */
    /* By level (index 1 .. TOP_LEVEL): deadlines drawn and clock steps that
     * landed within a tick of a boundary of that level; steps that crossed
     * one. */
    uint64_t near_deadlines[ROTA_WHEEL_LEVELS];
    uint64_t span_delays[ROTA_WHEEL_LEVELS]; /* delays of span(k) +-1 */
    uint64_t near_steps[ROTA_WHEEL_LEVELS];
    uint64_t crossings[ROTA_WHEEL_LEVELS];
    /* Periodic fires by [policy][lateness: < period, == period, more]. */
    uint64_t periodic[3][3];
    bool fault_applied;
    uint64_t fault_op;
};

/* ------------------------------------------------------------- helpers */

static uint64_t rnd(struct drv *d, uint64_t bound)
{
    return d->src.next(d->src.ctx, bound);
}

static bool chance(struct drv *d, unsigned percent)
{
    return rnd(d, 100) < percent;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t sub_floor(uint64_t a, uint64_t b)
{
    return a < b ? 0 : a - b;
}

static bool tracing(const struct drv *d)
{
    return d->ops >= d->cfg.trace_from;
}

static void trace(const struct drv *d, const char *fmt, ...)
{
    va_list ap;
    if (!tracing(d))
        return;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

static void fail(struct drv *d, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (d->failed)
        return;
    d->failed = true;
    n = snprintf(d->err, sizeof d->err,
                 "op %" PRIu64 " (%s, wheel now %" PRIu64 "): ", d->ops, d->op,
                 rota_wheel_now(d->w));
    if (n < 0 || (size_t)n >= sizeof d->err)
        n = 0;
    va_start(ap, fmt);
    vsnprintf(d->err + n, sizeof d->err - (size_t)n, fmt, ap);
    va_end(ap);
}

static void replay_fail(struct drv *d, const char *fmt, ...)
{
    va_list ap;
    if (d->replay_failed)
        return;
    d->replay_failed = true;
    va_start(ap, fmt);
    vsnprintf(d->replay_err, sizeof d->replay_err, fmt, ap);
    va_end(ap);
}

static struct rota_timer *T(struct drv *d, uint32_t id)
{
    return &d->nodes[id]->per.timer;
}

static struct rota_periodic *P(struct drv *d, uint32_t id)
{
    return &d->nodes[id]->per;
}

/* The periodic timer nearest id. */
static uint32_t periodic_id(uint32_t id)
{
    return id & ~1u;
}

static void on_fire(struct rota_wheel *w, struct rota_timer *t, uint64_t late);

static struct node *new_node(struct drv *d, uint32_t id)
{
    struct node *n = malloc(sizeof *n);
    if (n == NULL) {
        fprintf(stderr, "driver: out of memory\n");
        abort();
    }
    if (id % 2 == 0)
        rota_periodic_init(&n->per, on_fire);
    else
        rota_timer_init(&n->per.timer, on_fire);
    n->id = id;
    n->d = d;
    return n;
}

/* The timer's memory goes back to the allocator: a wheel that still holds
 * it is caught by ASan or valgrind.  The fresh memory has no schedule: the
 * caller tells the model (model_renew()) where the model's timeline
 * reaches that point. */
static void replace_node(struct drv *d, uint32_t id)
{
    free(d->nodes[id]);
    d->nodes[id] = new_node(d, id);
}

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    p = realloc(p, n * size);
    if (p == NULL) {
        fprintf(stderr, "driver: out of memory\n");
        abort();
    }
    *cap = n;
    return p;
}

/* A pending timer (by the wheel's word), or any timer when none is. */
static uint32_t pick_pending(struct drv *d)
{
    uint32_t start = (uint32_t)rnd(d, d->cfg.pool);
    for (size_t k = 0; k < d->cfg.pool; k++) {
        uint32_t id = (uint32_t)((start + k) % d->cfg.pool);
        if (rota_timer_pending(T(d, id)))
            return id;
    }
    return start;
}

/* ----------------------------------------------------- value generators */

/*
 * The wheel's geometry, from rota.h: level k has ROTA_WHEEL_SLOTS slots of
 * span(k) = 2^(ROTA_WHEEL_BITS * k) ticks, so the interesting instants are
 * the multiples of span(1) .. span(ROTA_WHEEL_LEVELS - 1) (256, 65536, 2^24
 * ... for 8-bit digits) and their neighbours: a deadline there sits in the
 * last slot of one level or the first of the next, and a clock step onto or
 * across one cascades.  Levels are drawn as 1 + rnd(TOP_LEVEL) or from the
 * low levels (LOW_LEVELS), where a run's clock spends most of its time.
 */
#define TOP_LEVEL (ROTA_WHEEL_LEVELS - 1) /* the highest level with a span */
#define LOW_LEVELS 3                      /* 256, 65536, 2^24 */

static uint64_t span(unsigned level)
{
    return level >= ROTA_WHEEL_LEVELS
               ? UINT64_MAX
               : (uint64_t)1 << (ROTA_WHEEL_BITS * level);
}

static unsigned any_level(struct drv *d)
{
    return 1 + (unsigned)rnd(d, TOP_LEVEL);
}

static unsigned low_level(struct drv *d)
{
    return 1 + (unsigned)rnd(d, LOW_LEVELS);
}

/* The start of the next block of span(level) ticks after `now`. */
static uint64_t next_boundary(uint64_t now, unsigned level)
{
    unsigned shift = ROTA_WHEEL_BITS * level;
    if (shift >= 64)
        return UINT64_MAX;
    uint64_t block = now >> shift;
    if (block + 1 > (UINT64_MAX >> shift))
        return UINT64_MAX;
    return (block + 1) << shift;
}

/* The highest level with a boundary (a non-zero multiple of its span)
 * within one tick of x; 0 when there is none. */
static unsigned boundary_level(uint64_t x)
{
    for (unsigned k = TOP_LEVEL; k >= 1; k--) {
        uint64_t mask = span(k) - 1;
        if ((x != 0 && (x & mask) == 0) ||
            (x != UINT64_MAX && ((x + 1) & mask) == 0) ||
            (x > 1 && ((x - 1) & mask) == 0))
            return k;
    }
    return 0;
}

/* -1, 0 or +1 around x, saturating both ways. */
static uint64_t jitter(struct drv *d, uint64_t x)
{
    switch (rnd(d, 3)) {
    case 0:
        return x == 0 ? 0 : x - 1;
    case 1:
        return x;
    default:
        return add_sat(x, 1);
    }
}

static uint64_t draw_delta(struct drv *d)
{
    switch (rnd(d, 14)) {
    case 12:
    case 13: /* log-uniform up to 2^40 */
        return rnd(d, (uint64_t)2 << rnd(d, 40));
    case 0:
        return rnd(d, 4);
    case 1:
    case 2:
        return rnd(d, 201);
    case 3:
        return jitter(d, span(low_level(d)));
    case 4:
        return jitter(d, span(any_level(d)));
    case 5:
        return rnd(d, (uint64_t)1 << 40);
    case 6:
        return rnd(d, 4096);
    case 7:
        return rnd(d, 64);
    case 8:
        return jitter(d, rnd(d, 4) * span(low_level(d)));
    default:
        return rnd(d, 1000);
    }
}

/* A delay; those within a tick of one level's span (a timer filed in the
 * last slot of a level, or just past it) are counted. */
static uint64_t gen_delta(struct drv *d)
{
    uint64_t x = draw_delta(d);
    for (unsigned k = 1; k <= TOP_LEVEL; k++)
        if (x + 1 >= span(k) && x <= span(k) + 1)
            d->span_delays[k]++;
    return x;
}

static uint64_t draw_deadline(struct drv *d, uint64_t now)
{
    uint64_t r = rnd(d, 40);

    if (r < 7) { /* a tie with a pending timer */
        uint32_t id = pick_pending(d);
        uint64_t x =
            rota_timer_pending(T(d, id)) ? rota_timer_deadline(T(d, id)) : now;
        return chance(d, 70) ? x : jitter(d, x);
    }
    if (r < 11)
        return jitter(
            d, next_boundary(now, chance(d, 70) ? low_level(d) : any_level(d)));
    if (r < 14)
        return sub_floor(now, rnd(d, 100)); /* the past: clamped */
    if (r == 14) {
        switch (rnd(d, 4)) {
        case 0:
            return ROTA_MAX_DEADLINE;
        case 1:
            return UINT64_MAX;
        case 2:
            return ROTA_MAX_DEADLINE - 1;
        default:
            return UINT64_MAX - rnd(d, 1000);
        }
    }
    if (r == 15)
        return rnd(d, 0);
    return add_sat(now, gen_delta(d));
}

static uint64_t gen_deadline(struct drv *d, uint64_t now)
{
    uint64_t x = draw_deadline(d, now);
    d->near_deadlines[boundary_level(x)]++;
    return x;
}

static uint64_t gen_period(struct drv *d)
{
    switch (rnd(d, 10)) {
    case 0:
        return 1;
    case 1:
        return 2 + rnd(d, 9);
    case 2: {
        uint64_t p = jitter(d, span(low_level(d)));
        return p ? p : 1;
    }
    case 3:
        return 1 + rnd(d, 1000);
    case 4:
        return 1 + rnd(d, (uint64_t)1 << 40);
    case 5:
        switch (rnd(d, 6)) { /* schedules that end, and periods refused */
        case 0:
            return UINT64_MAX;
        case 1:
            return ROTA_MAX_PERIOD + 1;
        case 2:
            return ROTA_MAX_PERIOD;
        case 3:
            return ROTA_MAX_PERIOD - rnd(d, 1000);
        case 4:
            return (uint64_t)1 << 61;
        default:
            return (uint64_t)1 << 63;
        }
    default:
        return 1 + rnd(d, 300);
    }
}

/* A step that finds a pending periodic timer late by less than a period,
 * by exactly one, or by more (where the policies differ); `now` + 1 when
 * none is pending with a period small enough to step over. */
static uint64_t periodic_step(struct drv *d, uint64_t now)
{
    uint32_t start = (uint32_t)rnd(d, d->cfg.pool);
    for (size_t k = 0; k < d->cfg.pool; k++) {
        const struct model_timer *t = &d->m.t[(start + k) % d->cfg.pool];
        if (!t->pending || t->period == 0 || t->period > ((uint64_t)1 << 32) ||
            t->deadline < now)
            continue;
        switch (rnd(d, 3)) {
        case 0:
            return add_sat(t->deadline, rnd(d, t->period));
        case 1:
            return add_sat(t->deadline, t->period);
        default:
            return add_sat(t->deadline,
                           add_sat(t->period, 1 + rnd(d, 3 * t->period)));
        }
    }
    return add_sat(now, 1);
}

static uint64_t gen_now(struct drv *d)
{
    uint64_t now = rota_wheel_now(d->w);
    uint64_t next = model_next_deadline(&d->m);
    /* Jumping to the next deadline is only interesting when it is near:
     * a timer at ROTA_MAX_DEADLINE would end the run's time. */
    bool near = next != ROTA_NEVER &&
                next - (next < now ? next : now) <= ((uint64_t)1 << 32);

    switch (rnd(d, 50)) {
    case 0:
    case 1:
        return now;
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
    case 7:
        return add_sat(now, 1 + rnd(d, 3));
    case 8:
    case 9:
    case 10:
    case 11:
    case 12:
    case 13:
        return add_sat(now, rnd(d, 201));
    case 14:
    case 15:
    case 16:
    case 17:
        return add_sat(now, jitter(d, span(low_level(d))));
    case 18:
        return add_sat(now, rnd(d, (uint64_t)1 << 40));
    case 19:
    case 20: /* backwards */
        return now == 0 ? 0 : now - 1 - rnd(d, now < 1000 ? now : 1000);
    case 21:
    case 22:
    case 23:
    case 24:
    case 25:
        return near ? next : add_sat(now, 1);
    case 26:
    case 27:
    case 28:
        return !near || next == 0 || next - 1 < now ? now : next - 1;
    case 29:
    case 30:
    case 31:
        return jitter(d, next_boundary(now, low_level(d)));
    case 32:
        return jitter(d, next_boundary(now, any_level(d)));
    case 33:
    case 34:
    case 35:
    case 36:
        return add_sat(now, rnd(d, 64));
    case 37:
        if (rnd(d, 16) == 0)
            return UINT64_MAX;
        return add_sat(now, rnd(d, (uint64_t)1 << 20));
    case 38:
    case 39:
        return add_sat(now, rnd(d, (uint64_t)1 << 26));
    case 40:
    case 41:
    case 42:
        return periodic_step(d, now);
    default:
        return add_sat(now, rnd(d, 4096));
    }
}

/* ------------------------------------------------------------ checking */

static void check_stats(struct drv *d)
{
    struct rota_stats s;
    const struct model_stats *e = &d->m.stats;

    rota_wheel_stats(d->w, &s);
#define CMP(field)                                                             \
    if (s.field != e->field)                                                   \
        fail(d, "stats." #field " is %" PRIu64 ", model says %" PRIu64,        \
             s.field, e->field);
    CMP(armed)
    CMP(fired)
    CMP(cancelled)
    CMP(touched)
    CMP(drained)
    CMP(clock_backwards)
#undef CMP
    if (s.pending != d->m.pending)
        fail(d, "stats.pending is %" PRIu64 ", model says %zu", s.pending,
             d->m.pending);
}

static void check_timer(struct drv *d, uint32_t id)
{
    const struct model_timer *e = &d->m.t[id];
    struct rota_timer *t = T(d, id);

    if (rota_timer_pending(t) != e->pending)
        fail(d, "timer %u: pending is %d, model says %d", id,
             rota_timer_pending(t), e->pending);
    else if (e->pending && rota_timer_deadline(t) != e->deadline)
        fail(d, "timer %u: deadline %" PRIu64 ", model says %" PRIu64, id,
             rota_timer_deadline(t), e->deadline);
}

/* One visited timer's share of a walk's sum: order-independent, and a
 * timer missed, visited twice or with the wrong remaining() changes it. */
static uint64_t walk_term(uint32_t id, uint64_t remaining)
{
    uint64_t x = ((uint64_t)id << 40) ^ remaining ^ 0x2545f4914f6cdd1du;
    x *= 0x9e3779b97f4a7c15u;
    return x ^ (x >> 31);
}

struct walk {
    struct drv *d;
    uint64_t sum;
    size_t visits;
    bool bad; /* a visited timer was not pending, or remaining() failed */
};

static int on_visit(struct rota_wheel *w, struct rota_timer *t, void *arg)
{
    struct walk *k = arg;
    struct node *n = rota_container_of(t, struct node, per.timer);
    uint64_t ticks = 0;

    if (n->id < k->d->cfg.pool && k->d->seen[n->id] < UCHAR_MAX)
        k->d->seen[n->id]++;
    if (rota_timer_remaining(w, t, &ticks) != 1 || !rota_timer_pending(t))
        k->bad = true;
    k->sum += walk_term(n->id, ticks);
    k->visits++;
    return 0;
}

/* The model's answer to a walk (struct walk.sum). */
static uint64_t model_walk_sum(const struct model *m)
{
    uint64_t sum = 0, ticks;
    for (uint32_t id = 0; id < m->n; id++)
        if (model_remaining(m, id, &ticks) == 1)
            sum += walk_term(id, ticks);
    return sum;
}

/* rota_wheel_foreach() visits each pending timer once and no other, and
 * rota_timer_remaining() agrees with the model for every timer. */
static void check_walk(struct drv *d)
{
    struct walk k = {d, 0, 0, false};
    uint64_t got, exp;
    int rc, mrc;

    memset(d->seen, 0, d->cfg.pool);
    rc = rota_wheel_foreach(d->w, on_visit, &k);
    if (rc != 0)
        fail(d, "rota_wheel_foreach() returned %d", rc);
    if (k.bad)
        fail(d, "rota_wheel_foreach() visited a timer that is not pending, "
                "or remaining() refused it");
    if (d->cfg.fault == DRV_FAULT_WALK && k.visits > 0) {
        for (uint32_t id = 0; id < d->cfg.pool; id++)
            if (d->seen[id] != 0) {
                d->seen[id] = 0; /* hide one visit */
                break;
            }
        d->cfg.fault = DRV_FAULT_NONE;
    }
    for (uint32_t id = 0; id < d->cfg.pool; id++) {
        unsigned want = d->m.t[id].pending ? 1 : 0;
        if (d->seen[id] != want) {
            fail(d,
                 "rota_wheel_foreach() visited timer %u %u times, model "
                 "says it is %spending",
                 id, d->seen[id], want ? "" : "not ");
            break;
        }
    }
    for (uint32_t id = 0; id < d->cfg.pool; id++) {
        got = 12345;
        rc = rota_timer_remaining(d->w, T(d, id), &got);
        mrc = model_remaining(&d->m, id, &exp);
        if (d->cfg.fault == DRV_FAULT_REMAINING && mrc == 1) {
            exp++;
            d->cfg.fault = DRV_FAULT_NONE;
        }
        if (rc != mrc || got != exp) {
            fail(d,
                 "rota_timer_remaining(t%u) is %d / %" PRIu64
                 ", model says %d / %" PRIu64,
                 id, rc, got, mrc, exp);
            break;
        }
    }
}

static void check_state(struct drv *d, bool full, bool wheel)
{
    const char *why = NULL;

    if (wheel && rota_wheel_check(d->w, &why) != 0)
        fail(d, "rota_wheel_check: %s", why ? why : "(no reason)");
    if (rota_wheel_now(d->w) != d->m.now)
        fail(d, "rota_wheel_now() is %" PRIu64 ", model says %" PRIu64,
             rota_wheel_now(d->w), d->m.now);
    if (rota_wheel_count(d->w) != d->m.pending)
        fail(d, "rota_wheel_count() is %zu, model says %zu",
             rota_wheel_count(d->w), d->m.pending);
    check_stats(d);
    if (full) {
        for (uint32_t id = 0; id < d->cfg.pool; id++)
            check_timer(d, id);
        check_walk(d);
    }
}

/* ---------------------------------------------------------- callbacks */

/*
 * What a callback does to the wheel, one action at a time: each sets
 * a->kind and what the model needs to replay it (a->id starts as the
 * drawn target: the callback's own timer 25% of the time, else any).
 */
static void act_arm(struct drv *d, struct node *self, uint64_t now,
                    struct act *a)
{
    (void)self;
    a->kind = A_ARM;
    a->a = gen_deadline(d, now);
    a->rc = rota_timer_arm_at(d->w, T(d, a->id), a->a);
}

static void act_arm_in(struct drv *d, struct node *self, uint64_t now,
                       struct act *a)
{
    (void)self;
    (void)now;
    a->kind = A_ARM_IN;
    a->a = chance(d, 50) ? 0 : gen_delta(d);
    a->rc = rota_timer_arm_in(d->w, T(d, a->id), a->a);
}

/* The classic: re-arm itself with delay 0. */
static void act_rearm_self_now(struct drv *d, struct node *self, uint64_t now,
                               struct act *a)
{
    (void)now;
    a->kind = A_ARM_IN;
    a->id = self->id;
    a->a = 0;
    a->rc = rota_timer_arm_in(d->w, &self->per.timer, 0);
}

static void act_arm_periodic(struct drv *d, struct node *self, uint64_t now,
                             struct act *a)
{
    (void)self;
    a->kind = A_PERIODIC;
    a->a = gen_deadline(d, now);
    a->b = gen_period(d);
    a->policy = (int)rnd(d, 3);
    a->id = periodic_id(a->id);
    a->rc = rota_periodic_arm_at(d->w, P(d, a->id), a->a, a->b,
                                 (enum rota_missed)a->policy);
}

static void act_touch_later(struct drv *d, struct node *self, uint64_t now,
                            struct act *a)
{
    (void)self;
    (void)now;
    a->kind = A_TOUCH;
    a->id = pick_pending(d);
    a->a = add_sat(rota_timer_deadline(T(d, a->id)), gen_delta(d));
    a->rc = rota_timer_touch_at(d->w, T(d, a->id), a->a);
}

/* Earlier, or anywhere; a pending timer 70% of the time. */
static void act_touch_other(struct drv *d, struct node *self, uint64_t now,
                            struct act *a)
{
    (void)self;
    a->kind = A_TOUCH;
    if (chance(d, 70))
        a->id = pick_pending(d);
    a->a = chance(d, 50)
               ? sub_floor(rota_timer_deadline(T(d, a->id)), gen_delta(d))
               : gen_deadline(d, now);
    a->rc = rota_timer_touch_at(d->w, T(d, a->id), a->a);
}

static void act_cancel(struct drv *d, struct node *self, uint64_t now,
                       struct act *a)
{
    (void)self;
    (void)now;
    a->kind = A_CANCEL;
    if (chance(d, 50))
        a->id = pick_pending(d);
    a->rc = rota_timer_cancel(d->w, T(d, a->id));
}

/* Cancel another timer and free its memory (it may be due later in this
 * very pass). */
static void act_cancel_free(struct drv *d, struct node *self, uint64_t now,
                            struct act *a)
{
    (void)now;
    a->kind = A_CANCEL_FREE;
    a->id = pick_pending(d);
    if (a->id == self->id)
        a->id = (a->id + 1) % (uint32_t)d->cfg.pool;
    if (a->id == self->id) { /* a pool of one */
        a->kind = A_COUNT;
        a->result = rota_wheel_count(d->w);
        return;
    }
    a->rc = rota_timer_cancel(d->w, T(d, a->id));
    replace_node(d, a->id);
}

static void act_next_deadline(struct drv *d, struct node *self, uint64_t now,
                              struct act *a)
{
    (void)self;
    (void)now;
    a->kind = A_NEXT;
    a->result = rota_wheel_next_deadline(d->w);
    a->may_be_early = d->unchecked_touches > 0;
}

static void act_count(struct drv *d, struct node *self, uint64_t now,
                      struct act *a)
{
    (void)self;
    (void)now;
    a->kind = A_COUNT;
    a->result = rota_wheel_count(d->w);
}

static void record_act(struct drv *d, const struct act *a)
{
    d->acts = grow(d->acts, &d->acts_cap, d->nacts + 1, sizeof *d->acts);
    d->acts[d->nacts++] = *a;
    d->actions++;
}

/* Re-entering the wheel is refused and the wheel stays sound (recorded as
 * a count); then a walk mid-pass: the rest of the due list, timers armed
 * by callbacks (deferred), a half-done cascade, the slots. */
static void act_reenter_and_walk(struct drv *d, struct node *self, uint64_t now,
                                 struct act *a)
{
    struct rota_wheel *w = d->w;
    struct rota_timer *out[2];
    size_t n = 0;
    const char *why = NULL;
    int rc;

    (void)self;
    a->kind = A_COUNT;
    a->result = rota_wheel_count(w);
    if ((rc = rota_wheel_advance(w, now + 1)) != ROTA_EBUSY)
        fail(d, "advance() in a callback returned %d, not EBUSY", rc);
    if ((rc = rota_wheel_advance_max(w, now, 1, &n)) != ROTA_EBUSY)
        fail(d, "advance_max() in a callback returned %d, not EBUSY", rc);
    if ((rc = rota_wheel_expire(w, now, out, 2, &n)) != ROTA_EBUSY)
        fail(d, "expire() in a callback returned %d, not EBUSY", rc);
    if ((rc = rota_wheel_drain(w, NULL, NULL)) != ROTA_EINVAL &&
        rc != ROTA_EBUSY)
        fail(d, "drain(NULL fn) in a callback returned %d", rc);
    if (rota_wheel_check(w, &why) != 0)
        fail(d, "rota_wheel_check in a callback: %s", why ? why : "?");
    if (rota_wheel_now(w) != now)
        fail(d, "a refused call moved the wheel's time");
    record_act(d, a);
    struct walk k = {d, 0, 0, false};
    memset(d->seen, 0, d->cfg.pool);
    a->kind = A_WALK;
    a->rc = rota_wheel_foreach(w, on_visit, &k);
    a->result = k.sum;
    a->a = k.visits;
    if (k.bad)
        fail(d, "rota_wheel_foreach() in a callback visited a timer "
                "that is not pending");
}

/* The callbacks' actions and their weights (out of their sum). */
static const struct act_row {
    unsigned weight;
    void (*run)(struct drv *d, struct node *self, uint64_t now, struct act *a);
} act_table[] = {
    {2, act_arm},              /* arm_at, any deadline */
    {1, act_arm_in},           /* arm_in, 0 half the time */
    {1, act_rearm_self_now},   /* itself, delay 0 */
    {1, act_arm_periodic},     /* every policy */
    {2, act_touch_later},      /* a pending timer */
    {1, act_touch_other},      /* earlier, or anywhere */
    {2, act_cancel},           /* pending half the time */
    {1, act_cancel_free},      /* another timer, freed */
    {1, act_next_deadline},    /* may be early after touch_unchecked */
    {1, act_count},            /* rota_wheel_count() */
    {2, act_reenter_and_walk}, /* EBUSY, then foreach mid-pass */
};

static void cb_action(struct drv *d, struct node *self)
{
    uint64_t now = rota_wheel_now(d->w);
    uint32_t target = chance(d, 25) ? self->id : (uint32_t)rnd(d, d->cfg.pool);
    struct act a = {0};
    unsigned total = 0;
    size_t i = 0;

    for (size_t k = 0; k < sizeof act_table / sizeof act_table[0]; k++)
        total += act_table[k].weight;
    a.id = target;
    for (uint64_t pick = rnd(d, total); pick >= act_table[i].weight; i++)
        pick -= act_table[i].weight;
    act_table[i].run(d, self, now, &a);
    record_act(d, &a);
    if (tracing(d)) {
        /* In enum act_kind order. */
        static const char *const names[] = {
            "arm",         "arm_in",        "arm_periodic", "touch", "cancel",
            "cancel+free", "next_deadline", "count",        "walk"};
        trace(d,
              "    in callback: %s(t%u, %" PRIu64 ", %" PRIu64
              ", %d) -> %" PRId64 " / %" PRIu64 "\n",
              names[a.kind], a.id, a.a, a.b, a.policy, a.rc, a.result);
    }
}

static void on_fire(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    struct node *self = rota_container_of(t, struct node, per.timer);
    struct drv *d = self->d;
    struct got g = {0};

    if (!d->in_call || w != d->w) {
        fail(d, "callback of timer %u outside a call", self->id);
        return;
    }
    const struct model_timer *mt = &d->m.t[self->id];
    if (mt->pending && mt->period != 0 && mt->policy >= 0 && mt->policy < 3)
        d->periodic[mt->policy][late < mt->period    ? 0
                                : late == mt->period ? 1
                                                     : 2]++;
    g.f.id = self->id;
    g.f.late = late;
    g.f.has_late = true;
    g.f.next = rota_timer_deadline(t);
    g.f.pending_after = rota_timer_pending(t);
    g.now_seen = rota_wheel_now(w);
    g.count_seen = rota_wheel_count(w);
    g.act_begin = d->nacts;
    trace(d, "  fire t%u late %" PRIu64 " (deadline now %" PRIu64 ", %s)\n",
          self->id, late, g.f.next, g.f.pending_after ? "pending" : "idle");
    if (chance(d, 30)) {
        unsigned n = 1 + (unsigned)rnd(d, 3);
        for (unsigned k = 0; k < n; k++)
            cb_action(d, self);
    }
    g.act_end = d->nacts;
    d->got = grow(d->got, &d->got_cap, d->ngot + 1, sizeof *d->got);
    d->got[d->ngot++] = g;
    /* A one-shot callback may free its own container. */
    if (!rota_timer_pending(t) && chance(d, 10)) {
        uint32_t id = self->id;
        trace(d, "    in callback: free t%u\n", id);
        replace_node(d, id); /* self is gone now */
        d->got[d->ngot - 1].freed = true;
    }
}

/* The model's hook: after its k-th fire, check what the wheel's k-th
 * callback saw and replay what it did. */
static void replay(struct model *m, size_t k, const struct model_fire *f,
                   void *arg)
{
    struct drv *d = arg;

    if (k >= d->ngot)
        return;
    const struct got *g = &d->got[k];
    if (g->f.id == f->id) {
        if (g->f.next != f->next)
            replay_fail(d,
                        "fire %zu (timer %u): rota_timer_deadline() in the "
                        "callback is %" PRIu64 ", model says %" PRIu64,
                        k, f->id, g->f.next, f->next);
        if (g->f.pending_after != f->pending_after)
            replay_fail(d,
                        "fire %zu (timer %u): pending in its callback is %d, "
                        "model says %d",
                        k, f->id, g->f.pending_after, f->pending_after);
        if (g->now_seen != m->now)
            replay_fail(d,
                        "fire %zu: rota_wheel_now() in a callback is %" PRIu64,
                        k, g->now_seen);
        if (g->count_seen != m->pending)
            replay_fail(d,
                        "fire %zu (timer %u): count in the callback is %zu, "
                        "model says %zu",
                        k, f->id, g->count_seen, m->pending);
    }
    for (size_t i = g->act_begin; i < g->act_end; i++) {
        const struct act *a = &d->acts[i];
        int64_t rc = 0;
        uint64_t result = 0;
        switch (a->kind) {
        case A_ARM:
            rc = model_arm(m, a->id, a->a);
            break;
        case A_ARM_IN:
            rc = model_arm_in(m, a->id, a->a);
            break;
        case A_PERIODIC:
            rc = model_arm_periodic(m, a->id, a->a, a->b, a->policy);
            break;
        case A_TOUCH:
            rc = model_touch(m, a->id, a->a);
            break;
        case A_CANCEL:
            rc = model_cancel(m, a->id);
            break;
        case A_CANCEL_FREE:
            rc = model_cancel(m, a->id);
            model_renew(m, a->id);
            break;
        case A_NEXT:
            result = model_next_deadline(m);
            break;
        case A_COUNT:
            result = m->pending;
            break;
        case A_WALK:
            result = model_walk_sum(m);
            break;
        }
        bool early_ok = a->kind == A_NEXT && a->may_be_early && rc == a->rc &&
                        a->result < result;
        if ((rc != a->rc || result != a->result) && !early_ok)
            replay_fail(d,
                        "in the callback of fire %zu (timer %u), action %zu "
                        "(kind %d on timer %u, %" PRIu64
                        "): the wheel gave %" PRId64 " / %" PRIu64
                        ", the model %" PRId64 " / %" PRIu64,
                        k, g->f.id, i - g->act_begin, a->kind, a->id, a->a,
                        a->rc, a->result, rc, result);
    }
    if (g->freed)
        model_renew(m, g->f.id);
}

/* ------------------------------------------------------- calls that fire */

enum call { C_ADVANCE, C_ADVANCE_MAX, C_EXPIRE };

static void print_fires(char *buf, size_t len, const char *what,
                        const struct model_fire *f, size_t n, size_t stride)
{
    size_t used = strlen(buf);
    int k = snprintf(buf + used, len - used, "\n  %s (%zu):", what, n);
    if (k < 0)
        return;
    used += (size_t)k;
    for (size_t i = 0; i < n && i < 24 && used < len; i++) {
        const struct model_fire *x =
            (const struct model_fire *)((const char *)f + i * stride);
        k = snprintf(buf + used, len - used, " t%u", x->id);
        if (k < 0)
            return;
        used += (size_t)k;
        if (x->has_late && used < len) {
            k = snprintf(buf + used, len - used, "@-%" PRIu64, x->late);
            if (k > 0)
                used += (size_t)k;
        }
    }
    if (n > 24 && used < len)
        snprintf(buf + used, len - used, " ...");
}

/* BURST timers that would fire more than BURST_CAP times by `now` are
 * cancelled on both sides first, so a run never spins for minutes. */
static void limit_bursts(struct drv *d, uint64_t now)
{
    uint64_t total = 0;

    if (now > ROTA_MAX_DEADLINE)
        now = ROTA_MAX_DEADLINE;
    for (uint32_t id = 0; id < d->cfg.pool; id++) {
        const struct model_timer *t = &d->m.t[id];
        if (t->pending && t->period != 0 && t->policy == ROTA_MISSED_BURST &&
            t->deadline <= now)
            total = add_sat(total, (now - t->deadline) / t->period + 1);
    }
    if (total <= BURST_CAP)
        return;
    for (uint32_t id = 0; id < d->cfg.pool; id++) {
        const struct model_timer *t = &d->m.t[id];
        if (t->pending && t->period != 0 && t->policy == ROTA_MISSED_BURST &&
            t->deadline <= now && (now - t->deadline) / t->period >= 64) {
            int rc = rota_timer_cancel(d->w, T(d, id));
            trace(d, "  (burst limit) cancel(t%u) -> %d\n", id, rc);
            if (rc != model_cancel(&d->m, id))
                fail(d, "cancel of BURST timer %u returned %d", id, rc);
        }
    }
}

static void do_call(struct drv *d, enum call kind, uint64_t now, size_t max)
{
    struct rota_timer *out[8];
    size_t fired = 0, mfired = 0;
    int rc = 0, mrc;
    uint64_t mnow = now;
    bool callbacks = kind != C_EXPIRE;

    limit_bursts(d, now);
    struct rota_stats before;
    rota_wheel_stats(d->w, &before);
    uint64_t was = rota_wheel_now(d->w);
    uint64_t to = now > ROTA_MAX_DEADLINE ? ROTA_MAX_DEADLINE : now;
    if (to > was) {
        d->near_steps[boundary_level(to)]++;
        for (unsigned k = 1; k <= TOP_LEVEL; k++)
            if (to >> (ROTA_WHEEL_BITS * k) != was >> (ROTA_WHEEL_BITS * k))
                d->crossings[k]++;
    }
    d->ngot = 0;
    d->nacts = 0;
    d->replay_failed = false;
    d->in_call = true;
    switch (kind) {
    case C_ADVANCE:
        snprintf(d->op, sizeof d->op, "advance(%" PRIu64 ")", now);
        trace(d, "op %" PRIu64 ": %s\n", d->ops, d->op);
        rc = rota_wheel_advance(d->w, now);
        fired = rc < 0 ? 0 : (size_t)rc;
        break;
    case C_ADVANCE_MAX:
        snprintf(d->op, sizeof d->op, "advance_max(%" PRIu64 ", %zu)", now,
                 max);
        trace(d, "op %" PRIu64 ": %s\n", d->ops, d->op);
        fired = (size_t)-1;
        rc = rota_wheel_advance_max(d->w, now, max, &fired);
        break;
    case C_EXPIRE:
        snprintf(d->op, sizeof d->op, "expire(%" PRIu64 ", cap %zu)", now, max);
        trace(d, "op %" PRIu64 ": %s\n", d->ops, d->op);
        fired = (size_t)-1;
        rc = rota_wheel_expire(d->w, now, max ? out : NULL, max, &fired);
        if (rc >= 0 && fired <= max) {
            d->got = grow(d->got, &d->got_cap, fired, sizeof *d->got);
            for (size_t i = 0; i < fired; i++) {
                struct node *n =
                    rota_container_of(out[i], struct node, per.timer);
                memset(&d->got[i], 0, sizeof d->got[i]);
                d->got[i].f.id = n->id;
                trace(d, "  expired t%u\n", n->id);
            }
            d->ngot = fired;
        }
        break;
    }
    d->in_call = false;
    if (rc < 0) {
        fail(d, "returned %d (%s)", rc, rota_strerror(rc));
        return;
    }
    if (kind != C_EXPIRE && fired != d->ngot)
        fail(d, "reported %zu fires but ran %zu callbacks", fired, d->ngot);

    /* A limited call also stops when it has filed `max` timers again
     * (rota.h, rota_wheel_advance_max): then it may have fired fewer than
     * `max`, always the first ones due.  The model fires as many; the
     * sequences must still agree.  The re-files never exceed the limit,
     * checked when no callback ran code that may re-file timers itself. */
    size_t model_max = kind == C_ADVANCE ? SIZE_MAX : max;
    size_t moves = 0;
    if (kind != C_ADVANCE) {
        struct rota_stats after;
        rota_wheel_stats(d->w, &after);
        moves = (size_t)(after.refiled - before.refiled);
        if (rc == 1 && fired < max)
            model_max = fired;
        if (d->nacts == 0 && moves > max)
            fail(d, "filed %zu timers again, limit %zu", moves, max);
    }

    /* A planted fault, once. */
    if (d->cfg.fault == DRV_FAULT_DROP && d->ngot >= 1) {
        d->ngot--;
        fired--;
        d->cfg.fault = DRV_FAULT_NONE;
    } else if (d->cfg.fault == DRV_FAULT_SWAP && kind != C_EXPIRE) {
        for (size_t k = 0; k + 1 < d->ngot; k++) {
            if (d->got[k].f.late != d->got[k + 1].f.late) {
                struct got tmp = d->got[k];
                d->got[k] = d->got[k + 1];
                d->got[k + 1] = tmp;
                d->cfg.fault = DRV_FAULT_NONE;
                break;
            }
        }
    } else if (d->cfg.fault == DRV_FAULT_EARLY) {
        uint64_t eff = now > ROTA_MAX_DEADLINE ? ROTA_MAX_DEADLINE : now;
        if (eff >= d->m.now && eff < ROTA_MAX_DEADLINE)
            for (uint32_t id = 0; id < d->cfg.pool; id++)
                if (d->m.t[id].pending && d->m.t[id].deadline == eff + 1) {
                    mnow = eff + 1;
                    d->cfg.fault = DRV_FAULT_NONE;
                    break;
                }
    }
    d->ids = grow(d->ids, &d->ids_cap, d->ngot + 1, sizeof *d->ids);
    for (size_t i = 0; i < d->ngot; i++)
        d->ids[i] = d->got[i].f.id;
    d->exp = grow(d->exp, &d->exp_cap, d->ngot + d->cfg.pool + BURST_CAP + 8,
                  sizeof *d->exp);
    mrc = model_pass(&d->m, mnow, model_max, callbacks, d->ids, d->ngot,
                     callbacks ? replay : NULL, d, d->exp, d->exp_cap, &mfired);

    /* The sequences first: a wrong fire explains everything after it. */
    struct model_fire *gotf = malloc((d->ngot + 1) * sizeof *gotf);
    if (gotf == NULL)
        abort();
    for (size_t i = 0; i < d->ngot; i++)
        gotf[i] = d->got[i].f;
    char msg[512];
    size_t nexp = mfired < d->exp_cap ? mfired : d->exp_cap;
    if (model_compare(d->exp, nexp, gotf, d->ngot, msg, sizeof msg) != 0) {
        fail(d, "%s", msg);
        print_fires(d->err, sizeof d->err, "wheel", gotf, d->ngot,
                    sizeof *gotf);
        print_fires(d->err, sizeof d->err, "model", d->exp, nexp,
                    sizeof *d->exp);
    } else if (d->replay_failed) {
        fail(d, "%s", d->replay_err);
    }
    free(gotf);
    d->fires += d->ngot;

    switch (kind) {
    case C_ADVANCE:
        if ((size_t)rc != mfired)
            fail(d, "returned %d, model fired %zu", rc, mfired);
        /* Liveness: after a full advance the next deadline is in the
         * future unless a timer really is due (armed by a callback), even
         * when unchecked touches left the cached answer early.  (A `now`
         * earlier than the wheel's runs no pass.) */
        uint64_t next = rota_wheel_next_deadline(d->w);
        uint64_t asked = now > ROTA_MAX_DEADLINE ? ROTA_MAX_DEADLINE : now;
        if (asked == rota_wheel_now(d->w) && next <= asked &&
            model_next_deadline(&d->m) > rota_wheel_now(d->w))
            fail(d,
                 "next_deadline() is %" PRIu64
                 " after a full advance to %" PRIu64 " with nothing due",
                 next, rota_wheel_now(d->w));
        break;
    case C_ADVANCE_MAX:
    case C_EXPIRE:
        /* 1 may be said for work left that turns out to fire nothing
         * (touched timers to file again), but only by a call that used its
         * whole limit; 0 must be exact. */
        if (rc != mrc &&
            !(rc == 1 && (d->nacts != 0 || moves == max || fired == max)))
            fail(d, "returned %d (more due?), model says %d", rc, mrc);
        if (fired != mfired)
            fail(d, "*fired/*n is %zu, model fired %zu", fired, mfired);
        break;
    }
}

/* -------------------------------------------------------------- drain */

static void on_drain(struct rota_timer *t, void *arg)
{
    struct drv *d = arg;
    struct node *n = rota_container_of(t, struct node, per.timer);

    if (rota_timer_pending(t))
        fail(d, "drain handed back timer %u while still pending", n->id);
    d->drained =
        grow(d->drained, &d->drained_cap, d->ndrained + 1, sizeof *d->drained);
    d->drained_freed = grow(d->drained_freed, &d->drained_freed_cap,
                            d->ndrained + 1, sizeof *d->drained_freed);
    d->drained_freed[d->ndrained] = false;
    d->drained[d->ndrained++] = n->id;
    if (chance(d, 30)) {
        replace_node(d, n->id); /* fn may free the timer */
        d->drained_freed[d->ndrained - 1] = true;
    }
}

static int cmp_id(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static void do_drain(struct drv *d)
{
    snprintf(d->op, sizeof d->op, "drain()");
    trace(d, "op %" PRIu64 ": drain()\n", d->ops);
    uint32_t *exp = malloc((d->cfg.pool + 1) * sizeof *exp);
    if (exp == NULL)
        abort();
    d->ndrained = 0;
    int rc = rota_wheel_drain(d->w, on_drain, d);
    size_t n = model_drain(&d->m, exp);
    for (size_t i = 0; i < d->ndrained; i++)
        if (d->drained_freed[i])
            model_renew(&d->m, d->drained[i]);
    if (rc != 0)
        fail(d, "returned %d", rc);
    if (n != d->ndrained) {
        fail(d, "handed back %zu timers, model has %zu pending", d->ndrained,
             n);
    } else if (n > 0) {
        qsort(exp, n, sizeof *exp, cmp_id);
        qsort(d->drained, n, sizeof *exp, cmp_id);
        if (memcmp(exp, d->drained, n * sizeof *exp) != 0)
            fail(d, "handed back other timers than the pending ones");
    }
    free(exp);
}

/* ---------------------------------------------------------- operations */

static uint64_t next_deadline_checked(struct drv *d)
{
    uint64_t got = rota_wheel_next_deadline(d->w);
    uint64_t exp = model_next_deadline(&d->m);
    /* rota_timer_touch_at_unchecked() may leave the answer early (rota.h),
     * until the wheel looks again: early only after such a touch since the
     * last exact answer. */
    if (got == exp)
        d->unchecked_touches = 0;
    else if (!(d->unchecked_touches > 0 && got < exp))
        fail(d,
             "rota_wheel_next_deadline() is %" PRIu64 ", model says %" PRIu64,
             got, exp);
    return got;
}

static void expect_rc(struct drv *d, int got, int exp)
{
    if (got != exp)
        fail(d, "returned %d (%s), model says %d", got, rota_strerror(got),
             exp);
}

/* Names the operation in progress (for messages) and traces it. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
op_name(struct drv *d, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(d->op, sizeof d->op, fmt, ap);
    va_end(ap);
    trace(d, "op %" PRIu64 ": %s\n", d->ops, d->op);
}

/* Time has run out: start again from the beginning, so runs that start
 * near the top keep exercising the high bits. */
static void op_restart(struct drv *d, uint64_t now)
{
    (void)now;
    do_drain(d);
    op_name(d, "rota_wheel_init(%" PRIu64 ")", d->cfg.start);
    /* rota_wheel_init() zeroes the counters too: so does a new model. */
    expect_rc(d, rota_wheel_init(d->w, d->cfg.start), 0);
    model_destroy(&d->m);
    if (model_init(&d->m, d->cfg.pool, d->cfg.start) != 0)
        abort();
    /* Fresh timers too: a periodic one keeps its period otherwise. */
    for (uint32_t k = 0; k < d->cfg.pool; k++) {
        replace_node(d, k);
        if (k % 2 == 0)
            model_make_periodic(&d->m, k);
    }
    d->restarts++;
}

/* arm_at, or (15%) arm_range_at with a window from the deadline, 5% of
 * those upside down (ROTA_EINVAL). */
static void op_arm(struct drv *d, uint64_t now)
{
    uint32_t id = (uint32_t)rnd(d, d->cfg.pool);
    uint64_t x = gen_deadline(d, now);

    if (chance(d, 15)) {
        uint64_t p = chance(d, 5) ? sub_floor(x, 1 + rnd(d, 3))
                                  : add_sat(x, gen_delta(d));
        op_name(d, "arm_range(t%u, %" PRIu64 ", %" PRIu64 ")", id, x, p);
        expect_rc(d, rota_timer_arm_range_at(d->w, T(d, id), x, p),
                  model_arm_range(&d->m, id, x, p));
    } else {
        op_name(d, "arm(t%u, %" PRIu64 ")", id, x);
        expect_rc(d, rota_timer_arm_at(d->w, T(d, id), x),
                  model_arm(&d->m, id, x));
    }
    check_timer(d, id);
}

/* arm_in, 5% with a delay that saturates. */
static void op_arm_in(struct drv *d, uint64_t now)
{
    uint32_t id = (uint32_t)rnd(d, d->cfg.pool);
    uint64_t x = chance(d, 5) ? UINT64_MAX - rnd(d, 3) : gen_delta(d);

    (void)now;
    op_name(d, "arm_in(t%u, %" PRIu64 ")", id, x);
    expect_rc(d, rota_timer_arm_in(d->w, T(d, id), x),
              model_arm_in(&d->m, id, x));
    check_timer(d, id);
}

/* arm_at on a pending timer. */
static void op_rearm(struct drv *d, uint64_t now)
{
    uint32_t id = pick_pending(d);
    uint64_t x = gen_deadline(d, now);

    op_name(d, "re-arm(t%u, %" PRIu64 ")", id, x);
    expect_rc(d, rota_timer_arm_at(d->w, T(d, id), x), model_arm(&d->m, id, x));
    check_timer(d, id);
}

/* How a touch is made: touch_at_unchecked() when its preconditions hold,
 * else as TOUCH_SOME; touch_at() (80%) or touch_range_at(); touch_at(). */
enum touch_how { TOUCH_UNCHECKED, TOUCH_SOME, TOUCH_PLAIN };

static void touch(struct drv *d, uint64_t now, uint32_t id, uint64_t x,
                  enum touch_how how)
{
    const struct model_timer *mt = &d->m.t[id];

    if (how == TOUCH_UNCHECKED && mt->pending && x >= mt->deadline &&
        x >= now && x <= ROTA_MAX_DEADLINE) {
        /* The one-store touch.  It is not counted in stats.touched, and may
         * leave next_deadline() early (next_deadline_checked() allows
         * that). */
        op_name(d, "touch_unchecked(t%u, %" PRIu64 ")", id, x);
        uint64_t touched = d->m.stats.touched;
        rota_timer_touch_at_unchecked(d->w, T(d, id), x);
        d->unchecked_touches++;
        expect_rc(d, 0, model_touch(&d->m, id, x));
        d->m.stats.touched = touched;
    } else if (how == TOUCH_PLAIN || chance(d, 80)) {
        op_name(d, "touch(t%u, %" PRIu64 ")", id, x);
        expect_rc(d, rota_timer_touch_at(d->w, T(d, id), x),
                  model_touch(&d->m, id, x));
    } else { /* with slack around x: often holds the deadline already */
        uint64_t lo = sub_floor(x, rnd(d, 2) ? 0 : gen_delta(d));
        uint64_t hi = add_sat(x, rnd(d, 3) ? gen_delta(d) : 0);
        op_name(d, "touch_range(t%u, %" PRIu64 ", %" PRIu64 ")", id, lo, hi);
        expect_rc(d, rota_timer_touch_range_at(d->w, T(d, id), lo, hi),
                  model_touch_range(&d->m, id, lo, hi));
    }
    check_timer(d, id);
}

static uint64_t later(struct drv *d, uint32_t id)
{
    return add_sat(rota_timer_deadline(T(d, id)), gen_delta(d));
}

static void op_touch_later_unchecked(struct drv *d, uint64_t now)
{
    uint32_t id = pick_pending(d);
    touch(d, now, id, later(d, id), TOUCH_UNCHECKED);
}

static void op_touch_later(struct drv *d, uint64_t now)
{
    uint32_t id = pick_pending(d);
    touch(d, now, id, later(d, id), TOUCH_SOME);
}

static void op_touch_earlier(struct drv *d, uint64_t now)
{
    uint32_t id = pick_pending(d);
    uint64_t x = sub_floor(rota_timer_deadline(T(d, id)), 1 + gen_delta(d));
    touch(d, now, id, x, TOUCH_SOME);
}

/* Any timer, maybe not pending (ROTA_ENOENT), to any deadline. */
static void op_touch_any(struct drv *d, uint64_t now)
{
    uint32_t id = (uint32_t)rnd(d, d->cfg.pool);
    uint64_t x = gen_deadline(d, now);
    touch(d, now, id, x, TOUCH_PLAIN);
}

static void cancel(struct drv *d, uint32_t id)
{
    op_name(d, "cancel(t%u)", id);
    expect_rc(d, rota_timer_cancel(d->w, T(d, id)), model_cancel(&d->m, id));
    check_timer(d, id);
}

static void op_cancel_pending(struct drv *d, uint64_t now)
{
    (void)now;
    cancel(d, pick_pending(d));
}

static void op_cancel_any(struct drv *d, uint64_t now)
{
    (void)now;
    cancel(d, (uint32_t)rnd(d, d->cfg.pool));
}

/* A periodic timer under each missed-tick policy. */
static void op_arm_periodic(struct drv *d, uint64_t now)
{
    uint32_t id = periodic_id((uint32_t)rnd(d, d->cfg.pool));
    uint64_t x = gen_deadline(d, now);
    uint64_t p = gen_period(d);
    int policy = (int)rnd(d, 3);

    op_name(d, "arm_periodic(t%u, %" PRIu64 ", %" PRIu64 ", %d)", id, x, p,
            policy);
    expect_rc(
        d, rota_periodic_arm_at(d->w, P(d, id), x, p, (enum rota_missed)policy),
        model_arm_periodic(&d->m, id, x, p, policy));
    check_timer(d, id);
}

/* Calls that must fail with ROTA_EINVAL and change nothing. */
static void op_invalid(struct drv *d, uint64_t now)
{
    struct rota_wheel *w = d->w;
    uint32_t id = periodic_id(pick_pending(d));
    uint64_t p = chance(d, 50) ? 0 : 1 + rnd(d, 100);
    int policy = p == 0 ? (int)rnd(d, 3) : 3 + (int)rnd(d, 300);
    int ms = -1;

    if (chance(d, 10))
        policy = -1;
    op_name(d,
            "arm_periodic(t%u, %" PRIu64 ", period %" PRIu64
            ", policy %d) + other invalid calls",
            id, now, p, policy);
    expect_rc(
        d, rota_periodic_arm_at(w, P(d, id), now, p, (enum rota_missed)policy),
        model_arm_periodic(&d->m, id, now, p, policy));
    expect_rc(d, rota_wheel_expire(w, add_sat(now, 5), NULL, 1, NULL),
              ROTA_EINVAL);
    expect_rc(d, rota_wheel_timeout_ms(w, now, 0, &ms), ROTA_EINVAL);
    if (ms != 0)
        fail(d, "timeout_ms() with tick 0 stored %d, not 0", ms);
    expect_rc(d, rota_wheel_timeout_ms(w, now, 1, NULL), ROTA_EINVAL);
    expect_rc(d, rota_timer_arm_at(NULL, T(d, id), now), ROTA_EINVAL);
    expect_rc(d, rota_wheel_advance(NULL, now), ROTA_EINVAL);
    check_timer(d, id);
}

static void op_advance(struct drv *d, uint64_t now)
{
    (void)now;
    do_call(d, C_ADVANCE, gen_now(d), 0);
}

/* With a budget of 0 to 4 fires. */
static void op_advance_max(struct drv *d, uint64_t now)
{
    size_t max = (size_t)rnd(d, 5);
    (void)now;
    do_call(d, C_ADVANCE_MAX, gen_now(d), max);
}

/* With a cap of 1 to 5, or 0 (10%). */
static void op_expire(struct drv *d, uint64_t now)
{
    size_t cap = chance(d, 10) ? 0 : 1 + (size_t)rnd(d, 5);
    (void)now;
    do_call(d, C_EXPIRE, gen_now(d), cap);
}

static void op_next_deadline(struct drv *d, uint64_t now)
{
    (void)now;
    op_name(d, "next_deadline()");
    next_deadline_checked(d);
}

static void op_state(struct drv *d, uint64_t now)
{
    (void)now;
    op_name(d, "count() and every timer's state");
    check_state(d, true, true);
}

/* At now, at the next deadline, just before it, or in the past; with
 * ticks that round every way. */
static void op_timeout_ms(struct drv *d, uint64_t now)
{
    static const uint64_t ticks[] = {1,       1000,       999999,    1000000,
                                     1000001, 1000000000, UINT64_MAX};
    uint64_t tick = rnd(d, 4) == 0
                        ? 1 + rnd(d, 0)
                        : ticks[rnd(d, sizeof ticks / sizeof ticks[0])];
    uint64_t next = model_next_deadline(&d->m);
    uint64_t at;

    switch (rnd(d, 4)) {
    case 0:
        at = now;
        break;
    case 1:
        at = next == ROTA_NEVER ? now : next;
        break;
    case 2:
        at = next == ROTA_NEVER ? now : sub_floor(next, 1 + rnd(d, 3));
        break;
    default:
        at = sub_floor(now, rnd(d, 1000));
        break;
    }
    op_name(d, "timeout_ms(%" PRIu64 ", tick %" PRIu64 ")", at, tick);
    bool may_be_early = d->unchecked_touches > 0;
    int got = 12345, exp = 54321;
    expect_rc(d, rota_wheel_timeout_ms(d->w, at, tick, &got),
              model_timeout_ms(&d->m, at, tick, &exp));
    if (got != exp && !(may_be_early && got >= 0 && (exp < 0 || got <= exp)))
        fail(d, "timeout %d ms, model says %d", got, exp);
}

static void op_drain(struct drv *d, uint64_t now)
{
    (void)now;
    do_drain(d);
}

/* Preconditions of the table's conditional rows. */
static bool at_the_top(struct drv *d, uint64_t now)
{
    (void)d;
    return now == ROTA_MAX_DEADLINE;
}

/* Below half full, most calls become arms (90%): a large pending
 * population fills every level.  (Draws only when below half full.) */
static bool filling(struct drv *d, uint64_t now)
{
    (void)now;
    return d->m.pending * 2 < d->cfg.pool && chance(d, 90);
}

/*
 * The operations.  drv_step() draws op in [0, 1000) and runs the first row
 * whose band [lo, hi) holds op and whose precondition (when it has one)
 * holds: a band's width is its weight in thousandths, and the rows without
 * a precondition cover [0, 1000) exactly once (drv_new() checks).  A
 * conditional row overrides the rows after it, so it comes first.
 */
struct op_row {
    const char *what;
    unsigned lo, hi;
    bool (*when)(struct drv *d, uint64_t now); /* NULL: always */
    void (*run)(struct drv *d, uint64_t now);
};

static const struct op_row op_table[] = {
    {"restart at the top of time", 0, 20, at_the_top, op_restart},
    {"arm, arm_range", 0, 140, NULL, op_arm},
    {"arm while below half full", 565, 1000, filling, op_arm},
    {"arm_in", 140, 220, NULL, op_arm_in},
    {"re-arm a pending timer", 220, 280, NULL, op_rearm},
    {"touch later, unchecked", 280, 320, NULL, op_touch_later_unchecked},
    {"touch later", 320, 360, NULL, op_touch_later},
    {"touch earlier", 360, 400, NULL, op_touch_earlier},
    {"touch any timer", 400, 420, NULL, op_touch_any},
    {"cancel a pending timer", 420, 480, NULL, op_cancel_pending},
    {"cancel any timer", 480, 510, NULL, op_cancel_any},
    {"arm_periodic", 510, 560, NULL, op_arm_periodic},
    {"calls that must fail", 560, 565, NULL, op_invalid},
    {"advance", 565, 740, NULL, op_advance},
    {"advance_max", 740, 800, NULL, op_advance_max},
    {"expire", 800, 860, NULL, op_expire},
    {"next_deadline", 860, 910, NULL, op_next_deadline},
    {"count and every timer's state", 910, 930, NULL, op_state},
    {"timeout_ms", 930, 975, NULL, op_timeout_ms},
    {"drain", 975, 977, NULL, op_drain},
    {"advance", 977, 1000, NULL, op_advance},
};

#define OP_RANGE 1000u
#define OP_ROWS (sizeof op_table / sizeof op_table[0])

/* The unconditional rows cover [0, OP_RANGE) exactly once: every draw has
 * an operation, and no row is shadowed. */
static bool op_table_sound(void)
{
    for (unsigned op = 0; op < OP_RANGE; op++) {
        unsigned hits = 0;
        for (size_t i = 0; i < OP_ROWS; i++)
            hits += op_table[i].when == NULL && op >= op_table[i].lo &&
                    op < op_table[i].hi;
        if (hits != 1) {
            fprintf(stderr, "driver: op %u is in %u unconditional rows\n", op,
                    hits);
            return false;
        }
    }
    return true;
}

int drv_step(struct drv *d)
{
    uint64_t now = rota_wheel_now(d->w);
    unsigned op;

    if (d->failed)
        return -1;
    if (d->src.done != NULL && d->src.done(d->src.ctx))
        return 1;
    op = (unsigned)rnd(d, OP_RANGE);
    d->op[0] = '\0';
    d->pending_sum += d->m.pending;
    for (size_t i = 0; i < OP_ROWS; i++) {
        const struct op_row *r = &op_table[i];
        if (op >= r->lo && op < r->hi && (r->when == NULL || r->when(d, now))) {
            r->run(d, now);
            break;
        }
    }
    check_state(d, d->cfg.full_every <= 1 || d->ops % d->cfg.full_every == 0,
                d->cfg.check_every <= 1 || d->ops % d->cfg.check_every == 0);
    if (d->cfg.fault == DRV_FAULT_NONE && !d->fault_applied &&
        d->fault_op == UINT64_MAX - 1) {
        d->fault_applied = true;
        d->fault_op = d->ops;
    }
    d->ops++;
    return d->failed ? -1 : 0;
}

/* ------------------------------------------------------------ life */

struct drv *drv_new(const struct drv_config *cfg, struct drv_src src)
{
    struct drv *d;

    if (!op_table_sound())
        abort();
    d = calloc(1, sizeof *d);
    if (d == NULL)
        return NULL;
    d->cfg = *cfg;
    if (d->cfg.pool == 0)
        d->cfg.pool = 1;
    if (d->cfg.full_every == 0)
        d->cfg.full_every = 1;
    d->src = src;
    d->fault_op = cfg->fault != DRV_FAULT_NONE ? UINT64_MAX - 1 : UINT64_MAX;
    d->w = malloc(sizeof *d->w);
    d->nodes = calloc(d->cfg.pool, sizeof *d->nodes);
    d->seen = calloc(d->cfg.pool, 1);
    if (d->w == NULL || d->nodes == NULL || d->seen == NULL ||
        model_init(&d->m, d->cfg.pool, cfg->start) != 0) {
        fprintf(stderr, "driver: out of memory\n");
        abort();
    }
    for (uint32_t id = 0; id < d->cfg.pool; id++) {
        d->nodes[id] = new_node(d, id);
        if (id % 2 == 0)
            model_make_periodic(&d->m, id);
    }
    snprintf(d->op, sizeof d->op, "rota_wheel_init(%" PRIu64 ")", cfg->start);
    if (rota_wheel_init(d->w, cfg->start) != 0)
        fail(d, "rota_wheel_init failed");
    check_state(d, true, true);
    return d;
}

static void forget_timer(struct rota_timer *timer, void *arg)
{
    (void)timer;
    (void)arg;
}

int drv_finish(struct drv *d)
{
    int rc;

    if (!d->failed) {
        do_drain(d);
        check_state(d, true, true);
        if (rota_wheel_count(d->w) != 0)
            fail(d, "timers left after drain");
        if (d->failed)
            fprintf(stderr, "%s\n", d->err);
    }
    rc = d->failed ? -1 : 0;
    /* rota.h: drain a wheel that still has timers before dropping it (a
     * debug build would take the freed timers, reused, for pending ones). */
    (void)rota_wheel_drain(d->w, forget_timer, NULL);
    for (uint32_t id = 0; id < d->cfg.pool; id++)
        free(d->nodes[id]);
    free(d->nodes);
    free(d->seen);
    free(d->w);
    model_destroy(&d->m);
    free(d->got);
    free(d->acts);
    free(d->exp);
    free(d->ids);
    free(d->drained);
    free(d->drained_freed);
    free(d);
    return rc;
}

const char *drv_error(const struct drv *d)
{
    return d->failed ? d->err : NULL;
}

uint64_t drv_ops(const struct drv *d)
{
    return d->ops;
}

uint64_t drv_fires(const struct drv *d)
{
    return d->fires;
}

uint64_t drv_actions(const struct drv *d)
{
    return d->actions;
}

double drv_avg_pending(const struct drv *d)
{
    return d->ops ? (double)d->pending_sum / (double)d->ops : 0.0;
}

uint64_t drv_restarts(const struct drv *d)
{
    return d->restarts;
}

void drv_geometry(const struct drv *d, unsigned level, struct drv_geometry *out)
{
    memset(out, 0, sizeof *out);
    if (level < 1 || level > TOP_LEVEL)
        return;
    out->span = span(level);
    out->near_deadlines = d->near_deadlines[level];
    out->span_delays = d->span_delays[level];
    out->near_steps = d->near_steps[level];
    out->crossings = d->crossings[level];
}

uint64_t drv_periodic_fires(const struct drv *d, int policy, int lateness)
{
    if (policy < 0 || policy > 2 || lateness < 0 || lateness > 2)
        return 0;
    return d->periodic[policy][lateness];
}

bool drv_fault_applied(const struct drv *d, uint64_t *op)
{
    if (op != NULL)
        *op = d->fault_op;
    return d->fault_applied;
}
