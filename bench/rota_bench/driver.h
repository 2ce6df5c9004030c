/* SPDX-License-Identifier: MIT */
/*
 * driver.h - the driver's own interfaces: main.c (options, the list of
 * jobs, progress), workloads.c (the workloads, their table and the
 * window checks) and report.c (table, JSON, plot).  Adapters never include this.
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
    bool n_given;        /* --n named the sizes: no budget leaves one out */
    bool only_given;     /* --only named the implementations */
    bool smoke;          /* --smoke: each workload at its smoke size */
};

#define MAX_REPS 15

/* Stops the run: two implementations disagree, or one fired outside its
 * window.  Exit status 3, which only this uses (--smoke --fault counts on
 * it). */
#define CROSSCHECK_STATUS 3
#define crosscheck_die(...)                                                    \
    (bench_die_status = CROSSCHECK_STATUS,                                     \
     bench_die("CROSS-CHECK FAILED: " __VA_ARGS__))

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

/* What a job's time guess is made of (main.c: a rough cost per call
 * from figures measured on a 2-core VM, scaled for the implementation). */
struct cost {
    double n;       /* timers */
    double op_s;    /* seconds per W1 operation of rota at this N */
    double setup_s; /* seconds to arm and free one timer */
    double chase_s; /* seconds per dependent memory access among N nodes */
    double slow;    /* this implementation's factor over rota */
    bool rounds;    /* hashed-rounds: every tick walks N/512 timers */
};

struct wl_data;

/* One workload: one row of the table in workloads.c, which main.c (the
 * jobs), report.c (the table's rows and columns), the JSON (meta.workloads,
 * which bench/common/results-md.py reads) and the smoke tests
 * (--smoke) all follow.  Adding a workload is a runner and a row there,
 * and its section in docs/BENCH.md. */
struct workload {
    const char *name;  /* "W1": --workloads, the JSON, the table */
    const char *title; /* one line: the results page, --list-workloads */
    /* The number its operation streams are seeded with: fixed for ever
     * (a new workload takes a new one), so a run's streams stay what they
     * were whatever the table's order. */
    unsigned stream;
    /* Draws the operation stream every implementation replays, from
     * seed `s` (NULL: the runner draws each repetition's own). */
    void (*prepare)(struct wl_data *d, uint64_t s);
    /* Runs the workload on `impl` (NULL for an `alone` workload). */
    void (*run)(const struct config *cfg, const struct bench_impl *impl,
                struct wl_data *d, uint64_t seed, struct wl_out *out);
    /* The seconds one repetition takes, roughly (the time guess). */
    double (*rep_cost)(const struct config *cfg, const struct cost *c);
    /* NULL: runs at every N of the run; otherwise the one N it runs at,
     * once. */
    uint32_t (*only_n)(const struct config *cfg);
    /* NULL, or why the job (impl at n; impl NULL: the workload at n as a
     * whole) is left out of a run that did not name it: a reason goes to
     * meta.skipped, WL_QUIET leaves it out silently. */
    const char *(*budget)(const struct config *cfg,
                          const struct bench_impl *impl, uint32_t n);
    const char *metrics[4]; /* the report's rows, in this order */
    uint32_t big_reps_n;    /* reps_big from this N on (0: 1e7) */
    bool one_rep;           /* one repetition (MEM) */
    bool alone;             /* measures the machine, no implementation */
    bool unchecked;         /* no fires to compare (MEM) */
    uint32_t smoke_n;       /* --smoke runs it at this N (0: not at all) */
};

#define WL_QUIET ""

extern const struct workload bench_workloads[];
extern const int bench_nworkloads;

/* The row named `name` (case-insensitive), or NULL. */
const struct workload *wl_find(const char *name);

/* How many repetitions a job runs (median reported). */
int reps_for(const struct config *cfg, const struct workload *w, uint32_t n);

/* Per (workload, N) data shared by every implementation (the op stream). */
struct wl_data *wl_prepare(const struct config *cfg, const struct workload *w,
                           uint32_t n);
void wl_release(struct wl_data *data);

/* Run workload `w` for one implementation (NULL for an `alone` one); dies
 * loudly on a broken run.  `checked`: for an approximate implementation
 * (max_late), run every call through the shadow that checks each fire
 * against its window (workloads.c); its timings are not worth reporting.
 * Ignored for exact implementations, which are checked against each
 * other (main.c). */
void wl_run(const struct config *cfg, const struct bench_impl *impl,
            const struct workload *w, uint32_t n, struct wl_data *data,
            struct wl_out *out, bool checked);

/* --fault IMPL / --fault-early IMPL: misreport one fire of IMPL per job,
 * late or early (self-test). */
void wl_set_fault(const char *impl, bool early);

/* report.c */
void report_add(const char *impl, const char *workload, uint32_t n,
                const char *metric, double value);
void report_skip(const char *impl, const char *workload, uint32_t n,
                 const char *reason);
void report_meta(const char *key, const char *json_value);
void report_table(FILE *out, const char *const *impls, int nimpl);
int report_json(const char *path, const struct config *cfg);
void report_plot(const char *json_path);

#endif /* ROTA_BENCH_DRIVER_H */
