/* SPDX-License-Identifier: MIT */
/*
 * driver.h - the driver's own interfaces: main.c (options, the list of
 * jobs, progress), workloads.c (W1-W5, MEM, FLOOR and the cross-check) and
 * report.c (table, JSON, plot).  Adapters never include this.
 */
#ifndef ROTA_BENCH_DRIVER_H
#define ROTA_BENCH_DRIVER_H

#include "bench.h"

#include <stdio.h>

#define START_TICK UINT64_C(1000000) /* the simulated clock starts here */
#define MAX_NS 4

/* What one run is asked to do (set by main.c from the options). */
struct config {
    bool quick;
    uint64_t seed;
    uint32_t w12_ops;    /* W1/W2/FLOOR operations per repetition */
    uint32_t w4_ticks;   /* W4 advance calls per repetition */
    uint32_t w5_ticks;   /* W5 ticks per repetition */
    uint32_t w7_seconds; /* W7's simulated seconds */
    uint32_t mem_n;      /* MEM's N */
    int reps_small;      /* repetitions for N <= 1e6 */
    int reps_big;        /* repetitions for N = 1e7 (and W5 at 1e6) */
    double cap_small;    /* seconds: no new repetition after this long */
    double cap_big;      /* the same at N = 1e7 */
};

#define MAX_REPS 15

/* How many repetitions a job runs (median reported). */
int reps_for(const struct config *cfg, enum bench_workload wl, uint32_t n);

/* One measured figure, as in the JSON's results array (docs/BENCH.md). */
struct result {
    const char *impl;
    const char *workload;
    uint32_t n;
    const char *metric;
    double value;
};

/* What a workload hands back to the driver for one implementation. */
struct wl_out {
    int count; /* figures in value[]/metric[] */
    double value[4];
    const char *metric[4];
    int reps; /* repetitions run (the cap may stop early) */
    /* After each repetition: fires so far, and the order-independent sum
     * over (id, fire tick) of those fires; compared across
     * implementations repetition by repetition. */
    uint64_t fires[MAX_REPS];
    uint64_t checksum[MAX_REPS];
};

/* Per (workload, N) data shared by every implementation (the op stream). */
struct wl_data;
struct wl_data *wl_prepare(const struct config *cfg, enum bench_workload wl,
                           uint32_t n);
void wl_release(struct wl_data *data);

/* Run workload `wl` for one implementation; dies loudly on a broken run.
 * `checked`: for an approximate implementation (max_late), run every call
 * through the shadow that checks each fire against its window
 * (workloads.c); its timings are not worth reporting.  Ignored for exact
 * implementations, which are checked against each other (main.c). */
void wl_run(const struct config *cfg, const struct bench_impl *impl,
            enum bench_workload wl, uint32_t n, struct wl_data *data,
            struct wl_out *out, bool checked);

/* --fault IMPL / --fault-early IMPL: misreport one fire of IMPL per job,
 * late or early (self-test). */
void wl_set_fault(const char *impl, bool early);

/* The FLOOR workload (no implementation): both metrics. */
void wl_floor(const struct config *cfg, uint32_t n, struct wl_data *data,
              struct wl_out *out);

/* report.c */
void report_add(const char *impl, const char *workload, uint32_t n,
                const char *metric, double value);
void report_skip(const char *impl, const char *workload, uint32_t n,
                 const char *reason);
void report_meta(const char *key, const char *json_value);
void report_table(FILE *out, const char *const *impls, int nimpl);
int report_json(const char *path, const struct config *cfg);
void report_plot(const char *json_path);

const char *wl_name(enum bench_workload wl);
int mkdir_parents(const char *path);

#endif /* ROTA_BENCH_DRIVER_H */
