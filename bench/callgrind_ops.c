/* SPDX-License-Identifier: MIT */
/*
 * callgrind_ops.c - instructions per call of rota_timer_arm_at,
 * rota_timer_cancel and rota_timer_touch_at with 1e5 timers pending, for
 * valgrind's callgrind (machine-independent, unlike nanoseconds):
 *
 *   valgrind --tool=callgrind --callgrind-out-file=cg.out \
 *       --toggle-collect=phase_cancel_arm --toggle-collect=phase_touch \
 *       build/bench/callgrind_ops
 *   callgrind_annotate --inclusive=yes cg.out | grep rota_timer_
 *
 * Only the two phase functions are collected, so setup (1e5 arms into an
 * empty wheel) is left out.  Phase 1 does 1e5 x (cancel a random pending
 * timer, arm it again with a fresh delay in [1, 60000]); phase 2 does 1e5
 * touches of a random timer to now + 30000 (W2's refresh, deadlines
 * initially spread over (now, now + 30000], so a touch almost always moves
 * a deadline later: the fast path).  Each phase calls its functions exactly
 * OPS times, so inclusive Ir / OPS = instructions per call.  The clock
 * does not move inside a phase, so nothing fires there.  Prints only the
 * call counts, no timing.
 */
#include <rota.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "splitmix.h"

#define N 100000u
#define OPS 100000u
#define START 1000000u

struct node {
    struct rota_timer timer;
    uint32_t id;
};

static struct rota_wheel wheel;
static struct node *nodes;
static uint64_t rng = 42;

static uint32_t uniform(uint32_t lo, uint32_t hi)
{
    return lo +
           (uint32_t)(((splitmix(&rng) >> 32) * (uint64_t)(hi - lo + 1)) >> 32);
}

static void on_fire(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)late;
    rota_timer_arm_at(w, t, rota_wheel_now(w) + uniform(1, 60000));
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "callgrind_ops: %s: %s\n", what, rota_strerror(rc));
    exit(1);
}

void phase_cancel_arm(const uint32_t *id, const uint32_t *delay, uint64_t now);
void phase_touch(const uint32_t *id, uint64_t now);

/* Ids and delays are drawn before the phase, so the collected cost is
 * rota's alone. */
__attribute__((noinline)) void
phase_cancel_arm(const uint32_t *id, const uint32_t *delay, uint64_t now)
{
    for (uint32_t i = 0; i < OPS; i++) {
        int rc = rota_timer_cancel(&wheel, &nodes[id[i]].timer);
        if (rc != 1)
            die("cancel", rc);
        rc = rota_timer_arm_at(&wheel, &nodes[id[i]].timer, now + delay[i]);
        if (rc != 0)
            die("arm", rc);
    }
}

__attribute__((noinline)) void phase_touch(const uint32_t *id, uint64_t now)
{
    for (uint32_t i = 0; i < OPS; i++) {
        int rc = rota_timer_touch_at(&wheel, &nodes[id[i]].timer, now + 30000);
        if (rc != 0)
            die("touch", rc);
    }
}

int main(void)
{
    uint32_t *id = malloc(OPS * sizeof *id);
    uint32_t *delay = malloc(OPS * sizeof *delay);
    nodes = malloc(N * sizeof *nodes);
    if (!id || !delay || !nodes)
        return 1;
    uint64_t now = START;
    rota_wheel_init(&wheel, now);
    for (uint32_t i = 0; i < N; i++) {
        nodes[i].id = i;
        rota_timer_init(&nodes[i].timer, on_fire);
        int rc =
            rota_timer_arm_at(&wheel, &nodes[i].timer, now + uniform(1, 60000));
        if (rc != 0)
            die("setup arm", rc);
    }
    /* Phase 1: W1's churn. */
    for (uint32_t i = 0; i < OPS; i++) {
        id[i] = uniform(0, N - 1);
        delay[i] = uniform(1, 60000);
    }
    phase_cancel_arm(id, delay, now);
    rota_wheel_advance(&wheel, ++now);

    /* Phase 2: W2's state - every deadline within the next 30000 ticks. */
    for (uint32_t i = 0; i < N; i++) {
        int rc =
            rota_timer_arm_at(&wheel, &nodes[i].timer, now + uniform(1, 30000));
        if (rc != 0)
            die("phase 2 arm", rc);
    }
    rota_wheel_advance(&wheel, ++now);
    for (uint32_t i = 0; i < OPS; i++)
        id[i] = uniform(0, N - 1);
    phase_touch(id, now);

    printf("callgrind_ops: %u timers pending; phase_cancel_arm: %u cancels "
           "+ %u arms; phase_touch: %u touches\n",
           (unsigned)rota_wheel_count(&wheel), OPS, OPS, OPS);
    free(id);
    free(delay);
    free(nodes);
    return 0;
}
