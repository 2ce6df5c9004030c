/* SPDX-License-Identifier: MIT */
/*
 * harness.c - interleaved A/B runs of two builds of rota (see ab.sh).
 *
 * This machine's speed drifts by half within minutes, so two runs of two
 * builds compare moments, not code.  Here both builds live in one process
 * (side.c, linked twice under prefixes a_ and b_), each with its own wheel
 * and timers, fed the same operations; segments alternate A, B, B, A, ...
 * and the answer is the median over segments of B's time divided by A's in
 * the same pair, with quartiles.  Run A against itself to see the spread.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/splitmix.h"

#define AB_SIDE(prefix)                                                        \
    int prefix##ab_setup(uint32_t, const uint32_t *, int);                     \
    double prefix##ab_churn(const uint32_t *, const uint32_t *, uint32_t);     \
    double prefix##ab_refresh(const uint32_t *, uint32_t);                     \
    int prefix##ab_storm(const uint32_t *, uint32_t, double *, double *);      \
    int prefix##ab_periodic_setup(uint32_t, const uint32_t *);                 \
    double prefix##ab_periodic(uint32_t);
AB_SIDE(a_)
AB_SIDE(b_)

#define MAX_SEGMENTS 1000
#define STORM_SPAN 60000u
/* W5's periods: uniform in [PERIOD_MIN, PERIOD_MAX]; a tick fires about
 * n x FIRES_PER_TICK of them (the mean of 1 / period). */
#define PERIOD_MIN 10u
#define PERIOD_MAX 1000u
#define FIRES_PER_TICK 0.00465

static int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double quantile(double *v, int n, int num, int den)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[(n - 1) * num / den];
}

static void report(const char *what, double *a, double *b, int n)
{
    double ratio[MAX_SEGMENTS];
    for (int i = 0; i < n; i++)
        ratio[i] = b[i] / a[i];
    double a_med = quantile(a, n, 1, 2), b_med = quantile(b, n, 1, 2);
    double q1 = quantile(ratio, n, 1, 4), med = quantile(ratio, n, 1, 2),
           q3 = quantile(ratio, n, 3, 4);
    printf("%-12s A %8.2f ns  B %8.2f ns  B/A median %.3f  (quartiles "
           "%.3f .. %.3f, %d segments)\n",
           what, a_med, b_med, med, q1, q3, n);
}

static void die(const char *what)
{
    fprintf(stderr, "ab: %s\n", what);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: ab_harness churn|refresh|storm|periodic N "
                        "SEGMENTS OPS_PER_SEGMENT\n");
        return 2;
    }
    const char *workload = argv[1];
    uint32_t n = (uint32_t)strtoul(argv[2], NULL, 10);
    int segments = atoi(argv[3]);
    uint32_t ops = (uint32_t)strtoul(argv[4], NULL, 10);
    if (n == 0 || segments < 2 || segments > MAX_SEGMENTS || ops == 0)
        die("N, SEGMENTS (2..1000) and OPS_PER_SEGMENT must be positive");

    uint64_t seed = 42;
    uint32_t *delays = malloc((size_t)n * sizeof *delays);
    uint32_t *ids = malloc((size_t)ops * sizeof *ids);
    uint32_t *op_delays = malloc((size_t)ops * sizeof *op_delays);
    if (!delays || !ids || !op_delays)
        die("out of memory");
    for (uint32_t i = 0; i < n; i++)
        delays[i] = 1 + (uint32_t)(splitmix(&seed) % STORM_SPAN);

    int storm = strcmp(workload, "storm") == 0;
    int periodic = strcmp(workload, "periodic") == 0;
    if (!storm && !periodic && strcmp(workload, "churn") &&
        strcmp(workload, "refresh"))
        die("workload is churn, refresh, storm or periodic");
    if (periodic) {
        for (uint32_t i = 0; i < n; i++)
            delays[i] = PERIOD_MIN + (uint32_t)(splitmix(&seed) %
                                                (PERIOD_MAX - PERIOD_MIN + 1));
        if (a_ab_periodic_setup(n, delays) != 0 ||
            b_ab_periodic_setup(n, delays) != 0)
            die("setup failed");
    } else if (a_ab_setup(n, storm ? NULL : delays, !storm) != 0 ||
               b_ab_setup(n, storm ? NULL : delays, !storm) != 0) {
        die("setup failed");
    }
    /* A periodic segment is the ticks that fire about OPS timers. */
    double per_tick = (double)n * FIRES_PER_TICK;
    uint32_t ticks = (uint32_t)((double)ops / per_tick) + 1;

    double a[MAX_SEGMENTS], b[MAX_SEGMENTS];
    double a2[MAX_SEGMENTS], b2[MAX_SEGMENTS];
    for (int s = 0; s < segments; s++) {
        for (uint32_t i = 0; i < ops; i++) {
            ids[i] = (uint32_t)(splitmix(&seed) % n);
            op_delays[i] = 1 + (uint32_t)(splitmix(&seed) % STORM_SPAN);
        }
        for (int turn = 0; turn < 2; turn++) {
            int side_b = (s + turn) % 2; /* A B, B A, A B, ... */
            double *t = side_b ? &b[s] : &a[s], *t2 = side_b ? &b2[s] : &a2[s];
            if (periodic) {
                *t = (side_b ? b_ab_periodic : a_ab_periodic)(ticks);
                if (*t < 0)
                    die("a periodic segment fired nothing, or lost timers");
                continue;
            }
            if (storm) {
                if ((side_b ? b_ab_storm : a_ab_storm)(delays, STORM_SPAN, t,
                                                       t2) != 0)
                    die("a timer call failed, or timers were left");
                continue;
            }
            if (workload[0] == 'c')
                *t = (side_b ? b_ab_churn : a_ab_churn)(ids, op_delays, ops);
            else
                *t = (side_b ? b_ab_refresh : a_ab_refresh)(ids, ops);
            if (*t < 0)
                die("a timer call failed");
        }
    }
    if (storm) {
        report("storm arm", a, b, segments);
        report("storm expiry", a2, b2, segments);
    } else {
        report(workload, a, b, segments);
    }
    return 0;
}
