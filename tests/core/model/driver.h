/* SPDX-License-Identifier: MIT */
/*
 * driver.h - one operation stream run on a real wheel and on the model in
 * lockstep, shared by the differential test (tests/test_diff.c, values from
 * a seeded PRNG) and the fuzz target (fuzz/fuzz_wheel.c, values from the
 * fuzzer's bytes).
 *
 * Each drv_step() draws one operation from a table (driver.c, op_table:
 * each row a weight and, for some, a precondition): arm, arm_in, re-arm,
 * touch later or earlier, cancel, arm_periodic (every policy), advance,
 * advance_max with a small budget, expire with a small cap, next_deadline,
 * count, timeout_ms, drain, and calls that must fail with ROTA_EINVAL.
 * Every full comparison of the timers' state also walks the wheel with
 * rota_wheel_foreach() (each pending timer visited once, no other) and
 * asks every timer's rota_timer_remaining().  Callbacks draw actions of
 * their own from a second table (act_table): arm, touch, cancel,
 * cancel-and-free other timers, re-arm themselves with delay 0, free
 * themselves, query the wheel, and check that re-entering it gives
 * ROTA_EBUSY, walk it with rota_wheel_foreach() and rota_timer_remaining()
 * mid-pass; they are recorded and replayed into
 * the model at the same point of its pass.  After each call the fired
 * sequences are compared (model_compare()), then return values, counters,
 * the wheel's time, every timer's state and rota_wheel_check().
 *
 * A planted fault (drv_config.fault) corrupts one comparison on purpose, so
 * a test can prove that a wrong wheel would be caught.
 */
#ifndef ROTA_TEST_DRIVER_H
#define ROTA_TEST_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the stream's values come from. */
struct drv_src {
    /* A value in [0, bound); bound 0 means any 64-bit value. */
    uint64_t (*next)(void *ctx, uint64_t bound);
    /* True when the input is used up (NULL: never). */
    bool (*done)(void *ctx);
    void *ctx;
};

enum drv_fault {
    DRV_FAULT_NONE = 0,
    DRV_FAULT_DROP,      /* forget the last timer the wheel fired in a call */
    DRV_FAULT_SWAP,      /* swap two fires with different deadlines */
    DRV_FAULT_EARLY,     /* ask the model with now + 1: a timer a tick early */
    DRV_FAULT_WALK,      /* hide one timer rota_wheel_foreach() visited */
    DRV_FAULT_REMAINING, /* the model's remaining() of one timer + 1 */
};

struct drv_config {
    size_t pool;          /* timers, >= 1 */
    uint64_t start;       /* the wheel's initial time */
    int fault;            /* enum drv_fault, planted once */
    uint64_t trace_from;  /* print ops from this index on (UINT64_MAX: off) */
    unsigned full_every;  /* compare every timer's state every N ops (>= 1) */
    unsigned check_every; /* rota_wheel_check() every N ops (0 or 1: each) */
};

struct drv;

struct drv *drv_new(const struct drv_config *cfg, struct drv_src src);
/* One operation: 0 done, 1 the source is used up, -1 a mismatch. */
int drv_step(struct drv *d);
/* Drain the wheel (compared with the model) and free everything: 0 or -1
 * (the error was printed). */
int drv_finish(struct drv *d);
/* The first mismatch, with the operation that found it. */
const char *drv_error(const struct drv *d);
uint64_t drv_ops(const struct drv *d);       /* top-level operations done */
uint64_t drv_fires(const struct drv *d);     /* timers fired or expired */
uint64_t drv_actions(const struct drv *d);   /* operations from callbacks */
double drv_avg_pending(const struct drv *d); /* timers pending per op */
uint64_t drv_restarts(const struct drv *d);  /* wheel re-inits at the top */
/* How often the stream aimed at level `level` (1 .. ROTA_WHEEL_LEVELS - 1;
 * other levels read as zeros): delays within one tick of its span;
 * deadlines drawn and clock steps landing within one tick of a non-zero
 * multiple of its span (counted at the highest level they are near); clock
 * steps crossing one. */
struct drv_geometry {
    uint64_t span; /* 2^(ROTA_WHEEL_BITS * level) */
    uint64_t span_delays, near_deadlines, near_steps, crossings;
};
void drv_geometry(const struct drv *d, unsigned level,
                  struct drv_geometry *out);
/* Fires of periodic timers under `policy` (enum rota_missed) late by less
 * than a period (lateness 0), exactly one period (1) or more (2): where
 * the policies agree, where they first differ, and beyond. */
uint64_t drv_periodic_fires(const struct drv *d, int policy, int lateness);
/* Whether the planted fault was applied, and at which operation. */
bool drv_fault_applied(const struct drv *d, uint64_t *op);

#endif /* ROTA_TEST_DRIVER_H */
