/* SPDX-License-Identifier: MIT */
/*
 * direct.c - rota_counts' "direct" phase: W1's cancel + arm pairs called
 * as a program calls them, rota_timer_cancel() and rota_timer_arm_at()
 * inlined into the loop, with no operations table and no adapter between
 * (bench/counts/counts.c runs it for "rota" and "none").  The other phases
 * go through the adapters every implementation shares, which adds their
 * return-code checks and argument loads to rota's figures; this one is the
 * figure a caller's own loop pays, comparable with a wheel measured the
 * same way outside this repository.  Its harness, counted by "none", is
 * the same loop calling two empty functions that the compiler may not
 * inline or drop.
 */
#include "direct.h"
#include "bench.h"
#include "callgrind.h"

#include <rota.h>
#include <stdlib.h>

__attribute__((noinline)) static void
run_rota(struct rota_wheel *w, struct rota_timer *t, const uint32_t *id,
         const uint32_t *delay, uint32_t ops, uint64_t now)
{
    for (uint32_t i = 0; i < ops; i++) {
        struct rota_timer *timer = &t[id[i]];
        rota_timer_cancel(w, timer);
        rota_timer_arm_at(w, timer, now + delay[i]);
    }
}

__attribute__((noipa)) static void empty_cancel(void *p)
{
    __asm__ volatile("" : : "r"(p));
}

__attribute__((noipa)) static void empty_arm(void *p, uint64_t d)
{
    __asm__ volatile("" : : "r"(p), "r"(d));
}

__attribute__((noinline)) static void run_none(struct rota_timer *t,
                                               const uint32_t *id,
                                               const uint32_t *delay,
                                               uint32_t ops, uint64_t now)
{
    for (uint32_t i = 0; i < ops; i++) {
        struct rota_timer *timer = &t[id[i]];
        empty_cancel(timer);
        empty_arm(timer, now + delay[i]);
    }
}

static void on_fire(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
}

void counts_direct(bool none, uint32_t n, const uint32_t *arm_delay,
                   const uint32_t *id, const uint32_t *delay, uint32_t ops,
                   uint64_t now)
{
    struct rota_wheel *w = malloc(sizeof *w);
    struct rota_timer *t = malloc((size_t)n * sizeof *t);
    if (w == NULL || t == NULL || rota_wheel_init(w, now) != 0)
        bench_die("direct: out of memory");
    for (uint32_t i = 0; i < n; i++) {
        rota_timer_init(&t[i], on_fire);
        if (!none && rota_timer_arm_at(w, &t[i], now + arm_delay[i]) != 0)
            bench_die("direct: rota_timer_arm_at failed");
    }
    CALLGRIND_ZERO_STATS;
    if (none)
        run_none(t, id, delay, ops, now);
    else
        run_rota(w, t, id, delay, ops, now);
    CALLGRIND_DUMP_STATS_AT("direct");
    if (!none && rota_wheel_count(w) != n)
        bench_die("direct: %zu timers pending, not %u", rota_wheel_count(w), n);
    free(t);
    free(w);
}
