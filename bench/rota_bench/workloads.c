/* SPDX-License-Identifier: MIT */
/*
 * workloads.c - W1-W5, MEM and FLOOR (docs/BENCH.md), run against any
 * implementation through the operations table of bench.h.
 *
 * One op stream per (workload, N), generated here once from splitmix64
 * (seeded from --seed and the workload) and replayed identically by every
 * implementation.  Delays that callbacks need (W1's re-arm on expiry) are
 * not drawn from the stream, whose position would then depend on the order
 * in which an implementation fires equal deadlines; they are a hash of
 * (seed, timer id, fire tick), so every correct implementation makes the
 * same choice whatever its tie order.  For the same reason the cross-check
 * is an order-independent sum over fires of mix(id, fire tick), plus the
 * number of fires; every implementation must match the first one run,
 * exactly, or the run stops with a message naming both.
 *
 * An approximate implementation (bench.h: max_late) fires late by design,
 * so its fires cannot match the exact ones.  Each of its jobs runs twice:
 * first under a shadow that records every timer's deadline and allowed
 * lateness (wrapping its arm, rearm, cancel and periodic calls) and checks
 * each fire against that window - never before the deadline, never in a
 * call after one that had reached deadline + max_late(delay) - and, after
 * each repetition, that no timer whose window has closed is still pending;
 * then again without the shadow, timed, and its fires must equal the
 * checked run's exactly (the implementation is deterministic), so the
 * timed figures carry no cost of checking.
 *
 * Repetitions continue one timeline: the structure is set up once (not
 * timed) and repetition r replays slice r of the stream (W1, W2) or a fresh
 * round of timers (W3, W4, W5), so a 1e7-timer structure is built once per
 * implementation rather than once per repetition.  Only the measured loop
 * sits between the two clock reads.
 */
#define _GNU_SOURCE
#include "driver.h"
#include "splitmix.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define W1_MAX_DELAY 60000u
#define W1_OPS_PER_TICK 1000u
#define W2_TIMEOUT 30000u
#define W3_SPAN 60000u
#define W4_TIMERS 1000u
#define W4_MAX_DELAY 3600000u
#define W5_MIN_PERIOD 10u
#define W5_MAX_PERIOD 1000u
#define W7_TICK 100u           /* the loop wakes every 100 ms */
#define W7_TIMEOUT 30000u      /* idle timeout: 30 s */
#define W7_LIMIT 1024u         /* work limit per advance call, if any */
#define W7_SILENT_PER_MILLE 10 /* 1% of connections never speak */
#define W8_TIMEOUT 30000u      /* a connection's timer on arrival */
#define W8_RTT 100u            /* each move: up to one RTT either way */

/* ------------------------------------------------------------ randomness */

static uint64_t mix(uint64_t x)
{
    uint64_t s = x;
    return splitmix(&s);
}

/* Uniform in [lo, hi]. */
static uint32_t uniform(uint64_t *s, uint32_t lo, uint32_t hi)
{
    return lo +
           (uint32_t)(((splitmix(s) >> 32) * (uint64_t)(hi - lo + 1)) >> 32);
}

static uint64_t stream_seed(const struct config *cfg, unsigned stream,
                            uint32_t n, uint64_t part)
{
    return mix(cfg->seed ^
               mix(((uint64_t)stream << 56) ^ ((uint64_t)n << 8) ^ part));
}

/* -------------------------------------------------------- the fire hook */

enum hook_mode { HOOK_COUNT, HOOK_W1, HOOK_W2, HOOK_W5, HOOK_W8 };

/* A timer's window, in the checked run of an approximate implementation:
 * due at `deadline`, allowed until deadline + `bound`. */
struct shadow {
    uint64_t deadline;
    uint32_t bound;
    uint32_t period2; /* period << 1 | pending */
};

static struct {
    const struct bench_impl *impl;
    void *h;
    enum hook_mode mode;
    uint64_t now;
    uint64_t prev;         /* the time before the current advance call */
    struct shadow *shadow; /* NULL except in a checked run */
    uint32_t shadow_n;
    const struct bench_impl *real; /* what the shadow wraps */
    const char *job;               /* "W1 N=1000", for messages */
    uint64_t seed;
    uint64_t fires;
    uint64_t sum;
    uint32_t *counts;
    uint64_t *deadline; /* W8: each timer's deadline, as the driver set it */
    double job_start;
    const char *fault; /* --fault: the implementation to misreport */
    bool fault_early;  /* --fault-early: report the fire too early */
} g;

void wl_set_fault(const char *impl, bool early)
{
    g.fault = impl;
    g.fault_early = early;
}

/* The lateness an implementation may add to a timer `delay` ticks ahead. */
static uint64_t slack(const struct bench_impl *impl, uint64_t delay)
{
    return impl->max_late ? impl->max_late(delay) : 0;
}

static void shadow_file(uint32_t id, uint64_t deadline, uint64_t period)
{
    struct shadow *s = &g.shadow[id];
    uint64_t delay = deadline > g.now ? deadline - g.now : 0;
    uint64_t bound = g.real->max_late(delay);
    if (bound > UINT32_MAX || period > UINT32_MAX / 2)
        bench_die("%s %s: timer %u: window or period too large to check",
                  g.real->name, g.job, id);
    s->deadline = deadline;
    s->bound = (uint32_t)bound;
    s->period2 = (uint32_t)period << 1 | 1u;
}

static _Noreturn void window_failed(uint32_t id, const char *what,
                                    uint64_t tick, uint64_t prev)
{
    if (id >= g.shadow_n)
        crosscheck_die("%s %s: fire of unknown timer %u", g.real->name, g.job,
                       id);
    const struct shadow *s = &g.shadow[id];
    crosscheck_die("%s %s: timer %u %s (fired in the call "
                   "that advanced from %llu to %llu; deadline %llu, allowed "
                   "lateness %u ticks: it must fire in the first call that "
                   "reaches a tick in [%llu, %llu]).  An approximate "
                   "implementation may be late within its bound, never early, "
                   "never later.",
                   g.real->name, g.job, id, what, (unsigned long long)prev,
                   (unsigned long long)tick, (unsigned long long)s->deadline,
                   s->bound, (unsigned long long)s->deadline,
                   (unsigned long long)(s->deadline + s->bound));
}

/* One fire of the checked run, at the call (prev, tick]. */
static void shadow_fired(uint32_t id, uint64_t tick, uint64_t prev)
{
    if (id >= g.shadow_n || !(g.shadow[id].period2 & 1u))
        window_failed(id, "fired while not pending", tick, prev);
    struct shadow *s = &g.shadow[id];
    if (tick < s->deadline)
        window_failed(id, "fired early", tick, prev);
    if (prev >= s->deadline + s->bound)
        window_failed(id, "fired too late", tick, prev);
    if (s->period2 >> 1) /* still pending: the next point of its schedule */
        shadow_file(id, s->deadline + (s->period2 >> 1), s->period2 >> 1);
    else
        s->period2 = 0;
}

/* After a repetition of the checked run: nothing whose window has closed
 * may still be pending (a timer lost or stuck). */
static void shadow_sweep(void)
{
    for (uint32_t id = 0; id < g.shadow_n; id++) {
        const struct shadow *s = &g.shadow[id];
        if ((s->period2 & 1u) && s->deadline + s->bound <= g.now)
            crosscheck_die("%s %s: timer %u (deadline %llu, "
                           "allowed lateness %u) has not fired by %llu",
                           g.real->name, g.job, id,
                           (unsigned long long)s->deadline, s->bound,
                           (unsigned long long)g.now);
    }
}

static void *sh_create(uint32_t n, uint64_t now)
{
    g.shadow = calloc(n, sizeof *g.shadow);
    if (!g.shadow)
        bench_die("out of memory for the shadow of %u timers", n);
    g.shadow_n = n;
    return g.real->create(n, now);
}

static void sh_destroy(void *impl)
{
    g.real->destroy(impl);
    free(g.shadow);
    g.shadow = NULL;
    g.shadow_n = 0;
}

static void sh_arm(void *impl, uint32_t id, uint64_t deadline)
{
    if (g.shadow[id].period2 & 1u)
        bench_die("%s %s: the workload armed pending timer %u", g.real->name,
                  g.job, id);
    shadow_file(id, deadline, 0);
    g.real->arm(impl, id, deadline);
}

static void sh_cancel(void *impl, uint32_t id)
{
    if (!(g.shadow[id].period2 & 1u))
        bench_die("%s %s: the workload cancelled idle timer %u", g.real->name,
                  g.job, id);
    g.shadow[id].period2 = 0;
    g.real->cancel(impl, id);
}

static void sh_rearm(void *impl, uint32_t id, uint64_t deadline)
{
    shadow_file(id, deadline, 0);
    g.real->rearm(impl, id, deadline);
}

static void sh_arm_periodic(void *impl, uint32_t id, uint64_t first,
                            uint64_t period)
{
    shadow_file(id, first, period);
    g.real->arm_periodic(impl, id, first, period);
}

static void sh_advance(void *impl, uint64_t now)
{
    g.real->advance(impl, now);
}

void bench_fired(uint32_t id)
{
    uint64_t tick = g.now, prev = g.prev;
    g.fires++;
    /* --fault: the driver's self-test.  Pretend the named implementation
     * fired its third timer of each job one tick late (--fault-early: one
     * tick early); the cross-check must catch it and stop the run.  An
     * approximate implementation may be late, so for it the fire is moved
     * just outside its window: to the call after the one that reached the
     * end of the window, or to the tick before the deadline. */
    if (g.fault && g.fires == 3 && !strcmp(g.fault, g.impl->name)) {
        if (g.shadow && id < g.shadow_n && g.fault_early) {
            tick = g.shadow[id].deadline - 1;
        } else if (g.shadow && id < g.shadow_n) {
            tick = g.shadow[id].deadline + g.shadow[id].bound + 1;
            prev = tick - 1;
        } else {
            tick = g.fault_early ? tick - 1 : tick + 1;
        }
    }
    if (g.shadow)
        shadow_fired(id, tick, prev);
    g.sum += mix(((uint64_t)id << 32) ^ tick ^ UINT64_C(0x5bd1e995));
    switch (g.mode) {
    case HOOK_COUNT:
        break;
    case HOOK_W1: {
        uint64_t d =
            1 + mix(g.seed ^ ((uint64_t)id << 32) ^ tick) % W1_MAX_DELAY;
        g.impl->arm(g.h, id, tick + d);
        break;
    }
    case HOOK_W2:
        g.impl->rearm(g.h, id, tick + W2_TIMEOUT);
        break;
    case HOOK_W5:
        g.counts[id]++;
        break;
    case HOOK_W8: /* the connection's next packet: a fresh timeout */
        g.deadline[id] = tick + W8_TIMEOUT;
        g.impl->rearm(g.h, id, tick + W8_TIMEOUT);
        break;
    }
}

static void hook_begin(const struct bench_impl *impl, void *h,
                       enum hook_mode mode, uint64_t seed, uint64_t now)
{
    g.impl = impl;
    g.h = h;
    g.mode = mode;
    g.seed = seed;
    g.now = now;
    g.prev = now;
    g.fires = 0;
    g.sum = 0;
}

static void advance_to(uint64_t now)
{
    g.prev = g.now;
    g.now = now;
    g.impl->advance(g.h, now);
}

/* --------------------------------------------------------------- data */

struct w1_op {
    uint32_t id;
    uint32_t delay;
};

struct wl_data {
    const struct config *cfg;
    const struct workload *w;
    uint32_t n;
    int reps;
    double cap;
    uint64_t ops_per_rep;
    struct w1_op *w1; /* W1 and W8 (a signed move): reps * ops */
    uint32_t *ids;    /* W2 and FLOOR: reps * ops */
    uint32_t *setup;  /* W1, W2, MEM: one delay per timer */
};

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        bench_die("out of memory (%zu bytes)", size);
    return p;
}

/* W1: a delay per timer, then (id, delay) per operation. */
static void prep_w1(struct wl_data *d, uint64_t s)
{
    uint64_t total = d->ops_per_rep * (uint64_t)d->reps;
    d->setup = xmalloc((size_t)d->n * sizeof *d->setup);
    for (uint32_t i = 0; i < d->n; i++)
        d->setup[i] = uniform(&s, 1, W1_MAX_DELAY);
    d->w1 = xmalloc((size_t)total * sizeof *d->w1);
    for (uint64_t i = 0; i < total; i++) {
        d->w1[i].id = uniform(&s, 0, d->n - 1);
        d->w1[i].delay = uniform(&s, 1, W1_MAX_DELAY);
    }
}

/* W2: a delay per timer, then an id per operation. */
static void prep_w2(struct wl_data *d, uint64_t s)
{
    uint64_t total = d->ops_per_rep * (uint64_t)d->reps;
    d->setup = xmalloc((size_t)d->n * sizeof *d->setup);
    for (uint32_t i = 0; i < d->n; i++)
        d->setup[i] = uniform(&s, 1, W2_TIMEOUT);
    d->ids = xmalloc((size_t)total * sizeof *d->ids);
    for (uint64_t i = 0; i < total; i++)
        d->ids[i] = uniform(&s, 0, d->n - 1);
}

/* FLOOR: the same stream of ids as W2 (W2's stream number). */
static void prep_floor(struct wl_data *d, uint64_t s)
{
    (void)s;
    prep_w2(d, stream_seed(d->cfg, wl_find("W2")->stream, d->n, 0));
}

/* W8: a delay per timer, then (id, signed move) per operation. */
static void prep_w8(struct wl_data *d, uint64_t s)
{
    uint64_t total = d->ops_per_rep * (uint64_t)d->reps;
    d->setup = xmalloc((size_t)d->n * sizeof *d->setup);
    for (uint32_t i = 0; i < d->n; i++)
        d->setup[i] = uniform(&s, 1, W8_TIMEOUT);
    d->w1 = xmalloc((size_t)total * sizeof *d->w1);
    for (uint64_t i = 0; i < total; i++) {
        d->w1[i].id = uniform(&s, 0, d->n - 1);
        d->w1[i].delay = uniform(&s, 0, 2 * W8_RTT); /* RTT + move */
    }
}

/* MEM: a delay per timer. */
static void prep_mem(struct wl_data *d, uint64_t s)
{
    d->setup = xmalloc((size_t)d->n * sizeof *d->setup);
    for (uint32_t i = 0; i < d->n; i++)
        d->setup[i] = uniform(&s, 1, W1_MAX_DELAY);
}

struct wl_data *wl_prepare(const struct config *cfg, const struct workload *w,
                           uint32_t n)
{
    struct wl_data *d = calloc(1, sizeof *d);
    if (!d)
        bench_die("out of memory");
    d->cfg = cfg;
    d->w = w;
    d->n = n;
    d->reps = reps_for(cfg, w, n);
    d->cap = n >= 10000000 ? cfg->cap_big : cfg->cap_small;
    d->ops_per_rep = cfg->w12_ops;
    if (w->prepare)
        w->prepare(d, stream_seed(cfg, w->stream, n, 0));
    return d;
}

void wl_release(struct wl_data *d)
{
    if (!d)
        return;
    free(d->w1);
    free(d->ids);
    free(d->setup);
    free(d);
}

/* ------------------------------------------------------------ helpers */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void set_out(struct wl_out *out, int i, const char *metric,
                    double *samples, int reps)
{
    out->metric[i] = metric;
    out->value[i] = bench_median(samples, reps);
    if (out->count < i + 1)
        out->count = i + 1;
}

/* Whether to run repetition r: up to d->reps, but none after the job's
 * time cap (at least one runs).  Records the previous one's cross-check
 * snapshot. */
static bool more_reps(const struct wl_data *d, int r, struct wl_out *out)
{
    if (r == 0) {
        out->reps = 0;
        g.job_start = bench_wall();
        return true;
    }
    out->fires[r - 1] = g.fires;
    out->checksum[r - 1] = g.sum;
    out->reps = r;
    if (g.shadow)
        shadow_sweep();
    return r < d->reps && bench_wall() - g.job_start < d->cap;
}

static void expect_fires(const struct bench_impl *impl, const char *wl,
                         uint32_t n, int rep, uint64_t got, uint64_t want)
{
    if (got != want)
        crosscheck_die("%s %s N=%u repetition %d fired %llu "
                       "timers, expected %llu",
                       impl->name, wl, n, rep, (unsigned long long)got,
                       (unsigned long long)want);
}

/* ---------------------------------------------------------- workloads */

/* W1 churn: cancel + arm a random live timer per op; 1 tick per 1000 ops. */
static void run_w1(const struct config *cfg, const struct bench_impl *impl,
                   struct wl_data *d, uint64_t seed, struct wl_out *out)
{
    (void)cfg;
    uint32_t n = d->n;
    uint64_t now = START_TICK;
    void *h = impl->create(n, now);
    double t[MAX_REPS];

    hook_begin(impl, h, HOOK_W1, seed, now);
    for (uint32_t i = 0; i < n; i++)
        impl->arm(h, i, now + d->setup[i]);
    for (int r = 0; more_reps(d, r, out); r++) {
        const struct w1_op *op = d->w1 + (uint64_t)r * d->ops_per_rep;
        uint64_t m = d->ops_per_rep;
        uint32_t k = 0;
        double t0 = bench_wall();
        for (uint64_t i = 0; i < m; i++) {
            impl->cancel(h, op[i].id);
            impl->arm(h, op[i].id, now + op[i].delay);
            if (++k == W1_OPS_PER_TICK) {
                k = 0;
                advance_to(++now);
            }
        }
        t[r] = (bench_wall() - t0) * 1e9 / (double)m;
    }
    set_out(out, 0, d->w->metrics[0], t, out->reps);
    impl->destroy(h);
}

/* W2 refresh: re-arm a random timer to now + 30000; 1 tick per N/1000 ops. */
static void run_w2(const struct config *cfg, const struct bench_impl *impl,
                   struct wl_data *d, uint64_t seed, struct wl_out *out)
{
    (void)cfg;
    uint32_t n = d->n;
    uint32_t per_tick = n / 1000 ? n / 1000 : 1;
    uint64_t now = START_TICK;
    void *h = impl->create(n, now);
    double t[MAX_REPS];

    hook_begin(impl, h, HOOK_W2, seed, now);
    /* As if each connection was last active at a random moment of the
     * past 30 s: deadlines spread over (now, now + 30000]. */
    for (uint32_t i = 0; i < n; i++)
        impl->arm(h, i, now + d->setup[i]);
    for (int r = 0; more_reps(d, r, out); r++) {
        const uint32_t *id = d->ids + (uint64_t)r * d->ops_per_rep;
        uint64_t m = d->ops_per_rep;
        uint32_t k = 0;
        double t0 = bench_wall();
        for (uint64_t i = 0; i < m; i++) {
            impl->rearm(h, id[i], now + W2_TIMEOUT);
            if (++k == per_tick) {
                k = 0;
                advance_to(++now);
            }
        }
        t[r] = (bench_wall() - t0) * 1e9 / (double)m;
    }
    set_out(out, 0, d->w->metrics[0], t, out->reps);
    impl->destroy(h);
}

/* W8 QUIC: move a random pending timer by up to one RTT, earlier or later
 * (clamped to after now), with the implementation's refresh call; 1 tick
 * per N/1000 ops; a timer that fires is armed again 30 s ahead. */
static void run_w8(const struct config *cfg, const struct bench_impl *impl,
                   struct wl_data *d, uint64_t seed, struct wl_out *out)
{
    (void)cfg;
    uint32_t n = d->n;
    uint32_t per_tick = n / 1000 ? n / 1000 : 1;
    uint64_t now = START_TICK;
    void *h = impl->create(n, now);
    uint64_t *deadline = xmalloc((size_t)n * sizeof *deadline);
    double t[MAX_REPS];

    hook_begin(impl, h, HOOK_W8, seed, now);
    g.deadline = deadline;
    for (uint32_t i = 0; i < n; i++) {
        deadline[i] = now + d->setup[i];
        impl->arm(h, i, deadline[i]);
    }
    for (int r = 0; more_reps(d, r, out); r++) {
        const struct w1_op *op = d->w1 + (uint64_t)r * d->ops_per_rep;
        uint64_t m = d->ops_per_rep;
        uint32_t k = 0;
        double t0 = bench_wall();
        for (uint64_t i = 0; i < m; i++) {
            uint32_t id = op[i].id;
            uint64_t to = deadline[id] + op[i].delay - W8_RTT;
            if (to <= now)
                to = now + 1;
            deadline[id] = to;
            impl->rearm(h, id, to);
            if (++k == per_tick) {
                k = 0;
                advance_to(++now);
            }
        }
        t[r] = (bench_wall() - t0) * 1e9 / (double)m;
    }
    set_out(out, 0, d->w->metrics[0], t, out->reps);
    impl->destroy(h);
    g.deadline = NULL;
    free(deadline);
}

/* W3 storm: arm N timers over [1, 60000], then advance tick by tick to
 * +60000; every timer fires.  Two figures: per arm, per expiry. */
static void run_w3(const struct config *cfg, const struct bench_impl *impl,
                   struct wl_data *d, uint64_t seed, struct wl_out *out)
{
    (void)seed;
    uint32_t n = d->n;
    uint64_t now = START_TICK;
    void *h = impl->create(n, now);
    uint32_t *delay = xmalloc((size_t)n * sizeof *delay);
    double ta[MAX_REPS], te[MAX_REPS];

    hook_begin(impl, h, HOOK_COUNT, 0, now);
    for (int r = 0; more_reps(d, r, out); r++) {
        uint64_t s = stream_seed(cfg, d->w->stream, n, (uint64_t)r + 1);
        for (uint32_t i = 0; i < n; i++)
            delay[i] = uniform(&s, 1, W3_SPAN);
        uint64_t before = g.fires, base = now;
        /* An approximate implementation needs its slack to fire them all. */
        uint64_t span = W3_SPAN + slack(impl, W3_SPAN);
        double t0 = bench_wall();
        for (uint32_t i = 0; i < n; i++)
            impl->arm(h, i, base + delay[i]);
        double t1 = bench_wall();
        for (uint64_t i = 0; i < span; i++)
            advance_to(++now);
        double t2 = bench_wall();
        expect_fires(impl, "W3", n, r, g.fires - before, n);
        ta[r] = (t1 - t0) * 1e9 / n;
        te[r] = (t2 - t1) * 1e9 / n;
    }
    set_out(out, 0, d->w->metrics[0], ta, out->reps);
    set_out(out, 1, d->w->metrics[1], te, out->reps);
    free(delay);
    impl->destroy(h);
}

/* W4 sparse: 1000 timers over one simulated hour, advanced tick by tick. */
static void run_w4(const struct config *cfg, const struct bench_impl *impl,
                   struct wl_data *d, uint64_t seed, struct wl_out *out)
{
    (void)seed;
    uint64_t now = START_TICK;
    void *h = impl->create(W4_TIMERS, now);
    double t[MAX_REPS];

    hook_begin(impl, h, HOOK_COUNT, 0, now);
    for (int r = 0; more_reps(d, r, out); r++) {
        uint64_t s = stream_seed(cfg, d->w->stream, W4_TIMERS, (uint64_t)r + 1);
        /* An approximate implementation fires a timer of delay d in
         * [d, d + slack(d)]: at least those whose whole window fits. */
        uint64_t before = g.fires, expected = 0, at_least = 0;
        uint64_t round = W4_MAX_DELAY + slack(impl, W4_MAX_DELAY);
        for (uint32_t i = 0; i < W4_TIMERS; i++) {
            uint32_t delay = uniform(&s, 1, W4_MAX_DELAY);
            impl->arm(h, i, now + delay);
            expected += delay <= cfg->w4_ticks;
            at_least += delay + slack(impl, delay) <= cfg->w4_ticks;
        }
        double t0 = bench_wall();
        for (uint32_t i = 0; i < cfg->w4_ticks; i++)
            advance_to(++now);
        t[r] = (bench_wall() - t0) * 1e9 / cfg->w4_ticks;
        uint64_t fired = g.fires - before;
        if (impl->max_late && fired >= at_least && fired <= expected)
            expected = fired; /* within what the windows allow */
        expect_fires(impl, "W4", W4_TIMERS, r, fired, expected);
        if (cfg->w4_ticks < round) { /* finish the round: all have fired */
            for (uint64_t i = cfg->w4_ticks; i < round; i++)
                advance_to(++now);
        }
    }
    set_out(out, 0, d->w->metrics[0], t, out->reps);
    impl->destroy(h);
}

/* W5 periodic: N timers, periods over [10, 1000], first deadline one
 * period after the start T, run ticks T+1 .. T+10000.  Timer i fires at
 * T + k*p for k = 1 .. floor(10000/p): exactly floor(10000/p) times, which
 * is checked per timer (a drifting or late implementation fails). */
static void run_w5(const struct config *cfg, const struct bench_impl *impl,
                   struct wl_data *d, uint64_t seed, struct wl_out *out)
{
    (void)seed;
    uint32_t n = d->n;
    uint64_t now = START_TICK;
    void *h = impl->create(n, now);
    uint32_t *period = xmalloc((size_t)n * sizeof *period);
    uint32_t *counts = xmalloc((size_t)n * sizeof *counts);
    double t[MAX_REPS];

    hook_begin(impl, h, HOOK_W5, 0, now);
    g.counts = counts;
    for (int r = 0; more_reps(d, r, out); r++) {
        uint64_t s = stream_seed(cfg, d->w->stream, n, (uint64_t)r + 1);
        for (uint32_t i = 0; i < n; i++) {
            period[i] = uniform(&s, W5_MIN_PERIOD, W5_MAX_PERIOD);
            counts[i] = 0;
            impl->arm_periodic(h, i, now + period[i], period[i]);
        }
        uint64_t before = g.fires;
        double t0 = bench_wall();
        for (uint32_t i = 0; i < cfg->w5_ticks; i++)
            advance_to(++now);
        double dt = bench_wall() - t0;
        uint64_t fires = g.fires - before;
        for (uint32_t i = 0; i < n; i++) {
            /* An approximate implementation's last fires may fall after
             * the run, by up to its slack. */
            uint32_t most = cfg->w5_ticks / period[i];
            uint64_t late = slack(impl, period[i]);
            uint32_t least =
                late >= cfg->w5_ticks
                    ? 0
                    : (uint32_t)((cfg->w5_ticks - late) / period[i]);
            if (!impl->max_late)
                least = most;
            if (counts[i] < least || counts[i] > most)
                crosscheck_die(
                    "%s W5 N=%u repetition %d: "
                    "timer %u (period %u) fired %u times in %u ticks, "
                    "expected floor(%u/%u) = %u%s",
                    impl->name, n, r, i, period[i], counts[i], cfg->w5_ticks,
                    cfg->w5_ticks, period[i], most,
                    least < most ? " or one less (late)" : "");
            if (impl->cancel_periodic)
                impl->cancel_periodic(h, i);
            else
                impl->cancel(h, i);
        }
        t[r] = fires ? dt * 1e9 / (double)fires : 0;
    }
    set_out(out, 0, d->w->metrics[0], t, out->reps);
    g.counts = NULL;
    free(period);
    free(counts);
    impl->destroy(h);
}

static long rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2)
        bench_die("cannot read /proc/self/statm");
    fclose(f);
    return resident * sysconf(_SC_PAGESIZE);
}

/* MEM: RSS growth for creating the structure (every user allocation for N
 * timers included) and arming N timers, per timer; and the node's size. */
static void run_mem(const struct config *cfg, const struct bench_impl *impl,
                    struct wl_data *d, uint64_t seed, struct wl_out *out)
{
    (void)cfg;
    (void)seed;
    uint32_t n = d->n;
    uint64_t now = START_TICK;

    malloc_trim(0);
    long before = rss_bytes();
    void *h = impl->create(n, now);
    hook_begin(impl, h, HOOK_COUNT, 0, now);
    for (uint32_t i = 0; i < n; i++)
        impl->arm(h, i, now + d->setup[i]);
    long after = rss_bytes();
    impl->destroy(h);
    malloc_trim(0);
    out->count = 2;
    out->metric[0] = d->w->metrics[0];
    out->value[0] = (double)(after - before) / n;
    out->metric[1] = d->w->metrics[1];
    out->value[1] = (double)impl->node_size;
    out->reps = 1;
    out->fires[0] = g.fires;
    out->checksum[0] = g.sum;
}

/*
 * W7 event-loop tick: one loop thread's N idle connections.  The loop wakes
 * every W7_TICK ms of simulated time; in between, connections speak at
 * random (on average once per simulated second each: N/10 refreshes per
 * tick, each a rearm() to that moment + 30 s, the implementation's own
 * refresh idiom); 1% of them (ids below N/100) never speak and are kicked
 * when their 30 s run out, and the kick re-arms them (a new connection on
 * the same slot).  On waking, the loop advances: once, or with a library
 * that offers a limit (advance_max), repeatedly at the same time until no
 * work is left, as a loop that serves I/O between calls would.  Every
 * advance call is timed alone: p50, p99.9 and the maximum say how long one
 * call can keep the thread from its connections; cpu_ms_per_sim_s is all
 * of the loop's work (refreshes and advances) per simulated second.  The
 * simulated minute crosses a 65,536 ms boundary (49 s in), where a wheel
 * of 8-bit digits cascades the timers filed beyond it all at once.
 */
static void run_w7(const struct config *cfg, const struct bench_impl *impl,
                   struct wl_data *d, uint64_t seed, struct wl_out *out)
{
    uint32_t n = d->n, silent = n / 1000 * W7_SILENT_PER_MILLE;
    uint32_t per_tick = n / (1000 / W7_TICK) ? n / (1000 / W7_TICK) : 1;
    uint64_t now = START_TICK;
    void *h = impl->create(n, now);
    size_t ncalls = 0, cap = 1024;
    double *call_us = xmalloc(cap * sizeof *call_us), busy = 0;
    uint64_t s = stream_seed(cfg, d->w->stream, n, 1);

    hook_begin(impl, h, HOOK_W2, seed, now);
    for (uint32_t i = 0; i < n; i++)
        impl->arm(h, i, now + uniform(&s, 1, W7_TIMEOUT));
    out->reps = 0;
    g.job_start = bench_wall();
    uint32_t ticks = cfg->w7_seconds * (1000 / W7_TICK);
    for (uint32_t k = 0; k < ticks; k++) {
        double t0 = bench_wall();
        for (uint32_t i = 0; i < per_tick; i++) {
            uint32_t id = uniform(&s, silent, n - 1);
            uint64_t at = now + (uint64_t)i * W7_TICK / per_tick;
            impl->rearm(h, id, at + W7_TIMEOUT);
        }
        double t1 = bench_wall();
        busy += t1 - t0;
        now += W7_TICK;
        g.prev = g.now;
        g.now = now;
        bool more;
        do {
            double a = bench_wall();
            if (impl->advance_max)
                more = impl->advance_max(h, now, W7_LIMIT);
            else {
                impl->advance(h, now);
                more = false;
            }
            double b = bench_wall();
            busy += b - a;
            if (ncalls == cap) {
                cap *= 2;
                call_us = realloc(call_us, cap * sizeof *call_us);
                if (!call_us)
                    bench_die("W7: out of memory");
            }
            call_us[ncalls++] = (b - a) * 1e6;
        } while (more);
    }
    out->fires[0] = g.fires;
    out->checksum[0] = g.sum;
    out->reps = 1;
    if (g.shadow)
        shadow_sweep();
    qsort(call_us, ncalls, sizeof *call_us, cmp_double);
    out->count = 4;
    out->metric[0] = d->w->metrics[0];
    out->value[0] = call_us[(ncalls - 1) / 2];
    out->metric[1] = d->w->metrics[1];
    out->value[1] = call_us[(size_t)((double)(ncalls - 1) * 0.999)];
    out->metric[2] = d->w->metrics[2];
    out->value[2] = call_us[ncalls - 1];
    out->metric[3] = d->w->metrics[3];
    out->value[3] = busy * 1e3 / cfg->w7_seconds;
    free(call_us);
    impl->destroy(h);
}

void wl_run(const struct config *cfg, const struct bench_impl *impl,
            const struct workload *w, uint32_t n, struct wl_data *d,
            struct wl_out *out, bool checked)
{
    uint64_t seed = stream_seed(cfg, w->stream, n, 0xf1);
    static char job[64];
    /* The checked run of an approximate implementation: the same impl,
     * every call through the shadow (see the top of the file). */
    struct bench_impl shadowed;
    memset(out, 0, sizeof *out);
    snprintf(job, sizeof job, "%s N=%u", w->name, n);
    g.job = job;
    if (checked && impl && impl->max_late) {
        shadowed = *impl;
        shadowed.create = sh_create;
        shadowed.destroy = sh_destroy;
        shadowed.arm = sh_arm;
        shadowed.cancel = sh_cancel;
        shadowed.rearm = sh_rearm;
        shadowed.arm_periodic = sh_arm_periodic;
        shadowed.advance = sh_advance;
        shadowed.advance_max = NULL;
        g.real = impl;
        impl = &shadowed;
    }
    w->run(cfg, impl, d, seed, out);
}

/* ---------------------------------------------------------------- FLOOR */

struct floor_node {
    uint64_t field;
    uint64_t next;
    uint64_t pad[6];
};

/* The W2 loop with the timer op replaced by one increment of an 8-byte
 * field of a random 64-byte node (independent accesses), then a dependent
 * chase through the same nodes in one random cycle (Sattolo). */
static void run_floor(const struct config *cfg, const struct bench_impl *impl,
                      struct wl_data *d, uint64_t seed, struct wl_out *out)
{
    (void)impl;
    (void)seed;
    uint32_t n = d->n;
    struct floor_node *node = aligned_alloc(64, (size_t)n * sizeof *node);
    uint32_t per_tick = n / 1000 ? n / 1000 : 1;
    double ti[MAX_REPS], tc[MAX_REPS];
    uint64_t s = stream_seed(cfg, d->w->stream, n, 7);
    volatile uint64_t sink;

    if (!node)
        bench_die("FLOOR: out of memory for %u nodes", n);
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < n; i++)
        node[i] = (struct floor_node){.next = i};
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = uniform(&s, 0, i - 1);
        uint64_t tmp = node[i].next;
        node[i].next = node[j].next;
        node[j].next = tmp;
    }
    uint64_t now = START_TICK;
    for (int r = 0; more_reps(d, r, out); r++) {
        const uint32_t *id = d->ids + (uint64_t)r * d->ops_per_rep;
        uint64_t m = d->ops_per_rep;
        uint32_t k = 0;
        double t0 = bench_wall();
        for (uint64_t i = 0; i < m; i++) {
            node[id[i]].field++;
            if (++k == per_tick) {
                k = 0;
                ++now;
            }
        }
        double t1 = bench_wall();
        uint64_t at = id[0];
        for (uint64_t i = 0; i < m; i++)
            at = node[at].next;
        double t2 = bench_wall();
        sink = at + now;
        ti[r] = (t1 - t0) * 1e9 / (double)m;
        tc[r] = (t2 - t1) * 1e9 / (double)m;
    }
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += node[i].field;
    sink = total;
    (void)sink;
    if (total != d->ops_per_rep * (uint64_t)out->reps)
        bench_die("FLOOR: lost increments");
    set_out(out, 0, d->w->metrics[0], ti, out->reps);
    set_out(out, 1, d->w->metrics[1], tc, out->reps);
    free(node);
}

/* ----------------------------------------------------- what a run costs */

/* One repetition's seconds, roughly, for the time guess (struct cost). */
static double cost_w1(const struct config *cfg, const struct cost *c)
{
    double rep = cfg->w12_ops * c->op_s * c->slow;
    if (c->rounds) /* a tick per 1,000 ops walks a slot of N/512 timers */
        rep += cfg->w12_ops / 1000.0 * c->n / 512 * c->chase_s;
    return rep;
}

static double cost_w2(const struct config *cfg, const struct cost *c)
{
    double rep = cfg->w12_ops * c->op_s * c->slow;
    if (c->rounds) /* a tick per N/1000 ops */
        rep += cfg->w12_ops / (c->n / 1000 + 1) * c->n / 512 * c->chase_s;
    return rep;
}

static double cost_w3(const struct config *cfg, const struct cost *c)
{
    (void)cfg;
    double rep = c->n * (c->setup_s + c->op_s * 1.5) * c->slow +
                 W3_SPAN * (c->slow > 1 ? 80e-9 : 20e-9);
    if (c->rounds)
        rep += (double)W3_SPAN * c->n / 512 * c->chase_s;
    return rep;
}

static double cost_w4(const struct config *cfg, const struct cost *c)
{
    return cfg->w4_ticks * (c->slow > 2 ? 80e-9 : 15e-9);
}

static double cost_w5(const struct config *cfg, const struct cost *c)
{
    return 46.5 * c->n * c->op_s * 1.5 * c->slow + 80e-9 * cfg->w5_ticks;
}

static double cost_w7(const struct config *cfg, const struct cost *c)
{
    /* a refresh per connection per simulated second */
    return cfg->w7_seconds * c->n * c->op_s * c->slow +
           (c->rounds ? cfg->w7_seconds * 1000.0 * c->n / 512 * 20e-9 : 0);
}

static double cost_mem(const struct config *cfg, const struct cost *c)
{
    (void)cfg;
    (void)c;
    return 0; /* the set-up is the measurement */
}

static double cost_floor(const struct config *cfg, const struct cost *c)
{
    return cfg->w12_ops * (c->op_s + c->chase_s);
}

/* ---------------------------------------------------------- the budget */

static uint32_t n_w4(const struct config *cfg)
{
    (void)cfg;
    return W4_TIMERS; /* 1,000 timers whatever N */
}

static uint32_t n_mem(const struct config *cfg)
{
    return cfg->mem_n; /* 1e6 (1e4 when quick) */
}

static const char *budget_w3(const struct config *cfg,
                             const struct bench_impl *impl, uint32_t n)
{
    if (impl && n >= 10000000 && !cfg->n_given &&
        !strcmp(impl->name, "hashed-rounds"))
        return "budget: every tick walks all N/512 timers of one slot "
               "(1.2e9 node visits per repetition at 1e7, minutes); run "
               "with --only hashed-rounds --workloads W3 --n 10000000";
    return NULL;
}

static const char *budget_w5(const struct config *cfg,
                             const struct bench_impl *impl, uint32_t n)
{
    if (!impl && n >= 1000000 && !cfg->n_given)
        return "budget: about 46.5 fires per timer, 4.7e7 per repetition at "
               "N = 1e6 (minutes for the heaps and peers); run with "
               "--workloads W5 --n N";
    return NULL;
}

static const char *budget_w7(const struct config *cfg,
                             const struct bench_impl *impl, uint32_t n)
{
    if (cfg->n_given)
        return NULL;
    if (!impl) /* one loop thread's connections: 1e5 and 1e6 (1e4 quick) */
        return (cfg->quick ? n != 10000 : n != 100000 && n != 1000000)
                   ? WL_QUIET
                   : NULL;
    if (!cfg->only_given &&
        (!strcmp(impl->name, "libuv") || !strncmp(impl->name, "libevent", 8)))
        return "budget: W7 compares rota with the heaps, the bare wheel, "
               "hashed-rounds, libev and (at 1e5) sd-event; name it with "
               "--only to run it";
    if (!strcmp(impl->name, "sd-event") && n >= 1000000)
        return "budget: W7 at 1e6 is 1.4 s of loop work per simulated "
               "second (one loop iteration per fire), a minute and a half; "
               "run with --only sd-event --workloads W7 --n 1000000";
    return NULL;
}

/* ----------------------------------------------------------- the table */

/* One row per workload, in the order of the run and of the report (docs/
 * BENCH.md defines each).  `stream` numbers are never reused: 5 was W6,
 * which bench_keyed measures. */
const struct workload bench_workloads[] = {
    {.name = "W1",
     .title = "W1 churn: cancel + arm",
     .stream = 0,
     .prepare = prep_w1,
     .run = run_w1,
     .rep_cost = cost_w1,
     .metrics = {"ns_per_op"},
     .smoke_n = 2000},
    {.name = "W2",
     .title = "W2 refresh: push a pending deadline later",
     .stream = 1,
     .prepare = prep_w2,
     .run = run_w2,
     .rep_cost = cost_w2,
     .metrics = {"ns_per_op"},
     .smoke_n = 2000},
    {.name = "W3",
     .title = "W3 storm: arm a burst, then expire it",
     .stream = 2,
     .run = run_w3,
     .rep_cost = cost_w3,
     .budget = budget_w3,
     .metrics = {"ns_per_arm", "ns_per_expiry"},
     .smoke_n = 2000},
    {.name = "W4",
     .title = "W4 sparse: advance with 1,000 timers far apart",
     .stream = 3,
     .run = run_w4,
     .rep_cost = cost_w4,
     .only_n = n_w4,
     .metrics = {"ns_per_advance"},
     .smoke_n = W4_TIMERS},
    {.name = "W5",
     .title = "W5 periodic timers",
     .stream = 4,
     .run = run_w5,
     .rep_cost = cost_w5,
     .budget = budget_w5,
     .metrics = {"ns_per_fire"},
     .big_reps_n = 1000000,
     .smoke_n = 2000},
    {.name = "W7",
     .title = "W7 event-loop tick, 100 ms, 30 s idle timeout",
     .stream = 6,
     .run = run_w7,
     .rep_cost = cost_w7,
     .budget = budget_w7,
     .metrics = {"advance_p50_us", "advance_p999_us", "advance_max_us",
                 "cpu_ms_per_sim_s"},
     .smoke_n = 2000},
    {.name = "W8",
     .title = "W8 QUIC: move a pending deadline by up to one RTT, earlier "
              "or later",
     .stream = 7,
     .prepare = prep_w8,
     .run = run_w8,
     .rep_cost = cost_w1,
     .metrics = {"ns_per_op"},
     .smoke_n = 2000},
    {.name = "MEM",
     .title = "MEM: bytes per timer",
     .stream = 8,
     .prepare = prep_mem,
     .run = run_mem,
     .rep_cost = cost_mem,
     .only_n = n_mem,
     .metrics = {"bytes_per_timer_rss", "bytes_per_timer_node"},
     .one_rep = true,
     .unchecked = true},
    {.name = "FLOOR",
     .title = "FLOOR: one random memory access among N nodes",
     .stream = 9,
     .prepare = prep_floor,
     .run = run_floor,
     .rep_cost = cost_floor,
     .metrics = {"ns_per_access", "ns_per_dependent_access"},
     .alone = true},
};
const int bench_nworkloads =
    (int)(sizeof bench_workloads / sizeof bench_workloads[0]);

const struct workload *wl_find(const char *name)
{
    for (int i = 0; i < bench_nworkloads; i++)
        if (!strcasecmp(bench_workloads[i].name, name))
            return &bench_workloads[i];
    return NULL;
}

int reps_for(const struct config *cfg, const struct workload *w, uint32_t n)
{
    if (w->one_rep)
        return 1;
    if (n >= 10000000 || (w->big_reps_n && n >= w->big_reps_n))
        return cfg->reps_big;
    return cfg->reps_small;
}
