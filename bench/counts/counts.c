/* SPDX-License-Identifier: MIT */
/*
 * counts.c - rota_counts: what each timer operation executes, counted
 * instead of timed, for bench/counts/counts.sh (`make bench-counts`).
 *
 * Nanoseconds depend on the machine: its caches, its prefetchers, how many
 * misses it overlaps, who else runs on it.  Instructions executed and data
 * references made (loads and stores) do not: the same binary and input give
 * the same counts on any x86-64, run after run.  So this program runs each
 * operation class of rota_bench's workloads (docs/BENCH.md) as a phase of
 * its own, under valgrind's callgrind, which counts; the script divides by
 * the operations of the phase.
 *
 * One process measures one implementation at one N (argv), through the
 * same operations table rota_bench uses (bench.h), so each implementation's
 * figures include the same harness: the loop, the indirect call into the
 * adapter and the adapter's own few instructions.  The harness's share is
 * measured too, by the implementation "none", whose operations do nothing
 * and whose fires cost only the hook: counts.sh subtracts it.
 *
 * The phases, in order, each at a fixed simulated time unless it advances:
 *   cancel+arm  N timers pending with deadlines uniform in (now, now +
 *               60000]; OPS pairs of (cancel a random pending timer, arm it
 *               again at now + uniform [1, 60000]): W1's churn
 *   touch       every timer re-armed to (now, now + 30000], then OPS
 *               re-arms of a random timer, the i-th to now + 30000 + i,
 *               with the implementation's cheapest move (rota:
 *               rota_timer_touch_at): W2's refresh, whose clock moves, so
 *               every deadline is later than the one it replaces
 *   arm         a fresh structure; N arms with delays uniform in [1, 60000]:
 *               W3's storm
 *   expiry      advance one tick at a time through 60000 ticks: every timer
 *               fires once; per fire, the empty ticks included: W3's expiry
 *   periodic    a fresh structure; N periodic timers, periods uniform in
 *               [10, 1000], first deadline one period ahead (not counted);
 *               then PERIODIC_TICKS ticks one at a time; per fire: W5
 *   direct      "rota" and "none" only, last: the cancel+arm phase's pairs
 *               called inline in a loop of their own, with no adapter
 *               (direct.c), on a fresh wheel of N timers
 * With a third argument "cancel+arm" only the first and the direct phase
 * run (the figures that need N = 1e7, where the others take long under
 * valgrind).
 * Between phases the statistics are zeroed; after each, dumped under the
 * phase's name (CALLGRIND_DUMP_STATS_AT), and the phase's operation count
 * printed on stdout as "phase NAME OPS".  Run without valgrind the program
 * does the same work and dumps nothing: a check that it runs.
 */
#include "bench.h"
#include "callgrind.h"
#include "direct.h"
#include "splitmix.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define START_TICK UINT64_C(1000000)
#define OPS 100000u
#define EXPIRY_TICKS 60000u
#define PERIODIC_TICKS 1000u

static uint64_t rng = 42;
static uint64_t fired;
static bool churn_only; /* argv[3] "cancel+arm": that phase alone */

static uint32_t uniform(uint32_t lo, uint32_t hi)
{
    return lo +
           (uint32_t)(((splitmix(&rng) >> 32) * (uint64_t)(hi - lo + 1)) >> 32);
}

/* ---------------------------------------------------- what adapters call */

__attribute__((noinline)) void bench_fired(uint32_t id)
{
    (void)id;
    fired++;
}

/* -------------------------------------------- "none": the harness alone */

/* Every operation returns at once: its phases count the loop, the call
 * through the table and the argument loads, which every implementation's
 * figures include too.  Its expiry and periodic phases count the loop of
 * advance() calls alone; the hook's cost per fire is the "hook" phase. */
static void *none_create(uint32_t n, uint64_t now)
{
    static char none;
    (void)n;
    (void)now;
    return &none;
}

static void none_destroy(void *impl)
{
    (void)impl;
}

static void none_arm(void *impl, uint32_t id, uint64_t deadline)
{
    (void)impl;
    (void)id;
    (void)deadline;
}

static void none_cancel(void *impl, uint32_t id)
{
    (void)impl;
    (void)id;
}

static void none_periodic(void *impl, uint32_t id, uint64_t first,
                          uint64_t period)
{
    (void)impl;
    (void)id;
    (void)first;
    (void)period;
}

static void none_advance(void *impl, uint64_t now)
{
    (void)impl;
    (void)now;
}

static const struct bench_impl impl_none = {
    .name = "none",
    .create = none_create,
    .destroy = none_destroy,
    .arm = none_arm,
    .cancel = none_cancel,
    .rearm = none_arm,
    .arm_periodic = none_periodic,
    .advance = none_advance,
};

/* ------------------------------------------------------------- phases */

/* "phase NAME OPS TICKS": OPS operations (fires, for expiry and periodic)
 * in TICKS advance() calls. */
static void phase_done(const char *name, uint64_t ops, uint64_t ticks)
{
    CALLGRIND_DUMP_STATS_AT(name);
    printf("phase %s %llu %llu\n", name, (unsigned long long)ops,
           (unsigned long long)ticks);
}

/* Each measured loop is a function of its own, so that nothing of the
 * setup around it is inlined into it (the counts are of the loop alone). */
__attribute__((noinline)) static void
run_cancel_arm(const struct bench_impl *im, void *s, const uint32_t *id,
               const uint32_t *delay, uint64_t now)
{
    for (uint32_t i = 0; i < OPS; i++) {
        im->cancel(s, id[i]);
        im->arm(s, id[i], now + delay[i]);
    }
}

__attribute__((noinline)) static void run_touch(const struct bench_impl *im,
                                                void *s, const uint32_t *id,
                                                uint64_t deadline)
{
    for (uint32_t i = 0; i < OPS; i++)
        im->rearm(s, id[i], deadline + i);
}

__attribute__((noinline)) static void run_arm(const struct bench_impl *im,
                                              void *s, uint32_t n,
                                              const uint32_t *delay,
                                              uint64_t now)
{
    for (uint32_t i = 0; i < n; i++)
        im->arm(s, i, now + delay[i]);
}

__attribute__((noinline)) static void
run_ticks(const struct bench_impl *im, void *s, uint64_t now, uint32_t ticks)
{
    for (uint32_t t = 1; t <= ticks; t++)
        im->advance(s, now + t);
}

__attribute__((noinline)) static void run_hook(uint32_t ops)
{
    for (uint32_t i = 0; i < ops; i++)
        bench_fired(i);
}

static void measure(const struct bench_impl *im, uint32_t n)
{
    uint32_t *id = malloc(OPS * sizeof *id);
    uint32_t *delay = malloc((n > OPS ? n : OPS) * sizeof *delay);
    if (!id || !delay)
        bench_die("out of memory");
    uint64_t now = START_TICK;

    /* cancel+arm */
    void *s = im->create(n, now);
    for (uint32_t i = 0; i < n; i++)
        im->arm(s, i, now + uniform(1, 60000));
    for (uint32_t i = 0; i < OPS; i++) {
        id[i] = uniform(0, n - 1);
        delay[i] = uniform(1, 60000);
    }
    CALLGRIND_ZERO_STATS;
    run_cancel_arm(im, s, id, delay, now);
    phase_done("cancel+arm", OPS, 0);
    /* The same pairs for the direct phase, which runs last. */
    bool direct = im == &impl_none || im == &impl_rota;
    uint32_t *direct_id = malloc(OPS * sizeof *direct_id);
    uint32_t *direct_delay = malloc(OPS * sizeof *direct_delay);
    uint32_t *direct_arm = malloc((size_t)n * sizeof *direct_arm);
    if (!direct_id || !direct_delay || !direct_arm)
        bench_die("out of memory");
    for (uint32_t i = 0; i < OPS; i++) {
        direct_id[i] = id[i];
        direct_delay[i] = delay[i];
    }
    for (uint32_t i = 0; i < n; i++)
        direct_arm[i] = uniform(1, 60000);
    if (churn_only) {
        im->destroy(s);
        goto direct;
    }

    /* touch: every deadline within the next 30000 ticks first */
    for (uint32_t i = 0; i < n; i++)
        im->rearm(s, i, now + uniform(1, 30000));
    im->advance(s, ++now);
    for (uint32_t i = 0; i < OPS; i++)
        id[i] = uniform(0, n - 1);
    fired = 0;
    CALLGRIND_ZERO_STATS;
    run_touch(im, s, id, now + 30000);
    phase_done("touch", OPS, 0);
    im->destroy(s);

    /* arm (the storm), then expiry */
    now = START_TICK;
    s = im->create(n, now);
    for (uint32_t i = 0; i < n; i++)
        delay[i] = uniform(1, 60000);
    CALLGRIND_ZERO_STATS;
    run_arm(im, s, n, delay, now);
    phase_done("arm", n, 0);
    fired = 0;
    CALLGRIND_ZERO_STATS;
    run_ticks(im, s, now, EXPIRY_TICKS);
    phase_done("expiry", fired, EXPIRY_TICKS);
    if (im != &impl_none && fired != n)
        bench_die("%s: %llu of %u timers fired", im->name,
                  (unsigned long long)fired, n);
    im->destroy(s);

    /* periodic */
    s = im->create(n, now);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t period = uniform(10, 1000);
        im->arm_periodic(s, i, now + period, period);
    }
    fired = 0;
    CALLGRIND_ZERO_STATS;
    run_ticks(im, s, now, PERIODIC_TICKS);
    phase_done("periodic", fired, PERIODIC_TICKS);
    im->destroy(s);

    /* the hook alone, as an adapter calls it once per fire */
    if (im == &impl_none) {
        CALLGRIND_ZERO_STATS;
        run_hook(OPS);
        phase_done("hook", OPS, 0);
    }

direct:
    if (direct) {
        counts_direct(im == &impl_none, n, direct_arm, direct_id, direct_delay,
                      OPS, START_TICK);
        printf("phase direct %u 0\n", OPS);
    }
    free(direct_id);
    free(direct_delay);
    free(direct_arm);
    free(id);
    free(delay);
}

int main(int argc, char **argv)
{
    bench_program = "rota_counts";
    static const struct bench_impl *const impls[] = {
        &impl_none, &impl_rota, &impl_rota_arm, &impl_wheel_bare,
        &impl_hashed_rounds};
    const struct bench_impl *im = NULL;
    long n = argc == 3 || argc == 4 ? strtol(argv[2], NULL, 10) : 0;

    if (argc == 4 && strcmp(argv[3], "cancel+arm") == 0)
        churn_only = true;
    else if (argc == 4)
        n = 0;
    for (size_t i = 0; n > 0 && i < sizeof impls / sizeof *impls; i++)
        if (strcmp(argv[1], impls[i]->name) == 0)
            im = impls[i];
    if (im == NULL || n < 1 || n > 100000000) {
        fprintf(stderr,
                "usage: rota_counts none|rota|rota-arm|wheel-bare|hashed-rounds"
                " N [cancel+arm]\n(run by bench/counts/counts.sh under "
                "valgrind)\n");
        return 2;
    }
    measure(im, (uint32_t)n);
    return 0;
}
