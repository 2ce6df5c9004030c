/* SPDX-License-Identifier: MIT */
/*
 * main.c - rota_bench: rota against in-tree baselines and the real event
 * loop libraries, on the workloads of docs/BENCH.md.
 *
 *   rota_bench [--quick] [--json PATH] [--only IMPL,IMPL] [--workloads W1,W3]
 *              [--n N[,N...]] [--seed S] [--ops M] [--reps R]
 *              [--fault IMPL] [--fault-early IMPL] [--list]
 *
 * Every implementation runs the same workloads on the same operation
 * stream in one process, one job at a time (job = workload x N x
 * implementation; each builds its structure, measures, and frees it before
 * the next starts, so a 1e7-timer libuv does not share memory with a 1e7
 * heap).  Progress and an estimate of the time left go to stderr; the
 * table and the ratios to rota go to stdout;
 * JSON to --json (default build/bench/results.json); a log-log PNG next to
 * it when gnuplot is installed.
 *
 * Budget (the default run must finish in about ten minutes on a 2-core VM):
 * W1/W2/FLOOR replay a fixed number of operations per repetition (not
 * proportional to N); W3 arms and expires all N timers per repetition; W4
 * is always 3.6e6 advance calls over 1,000 timers; W5 runs 10,000 ticks, so
 * its fires grow with N (about 46.5 per timer: 4.7e7 per repetition at
 * 1e6, minutes for the heaps and peers), and W5 at N >= 1e6 runs only when
 * asked for with --n; hashed-rounds' W3 at 1e7 likewise (its ticks walk
 * N/512 timers each).  MEM runs at N = 1e6 only.  Repetitions: the median
 * of up to 5 (up to 3 at N = 1e7), but no new repetition starts once a
 * job's repetitions have run 4 s, so a slow implementation at large N runs
 * fewer, at least one (meta.repetitions, meta.repetitions_cut_by_time_cap).
 * W3 at 1e7 is one repetition for everyone; its slowest peers (libuv,
 * libevent) take one to two minutes each, the largest share of the run.
 */
#define _GNU_SOURCE
#include "driver.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct bench_impl *const all_impls[] = {
    &impl_rota,          &impl_rota_arm,        &impl_rota_store,
    &impl_rota_slack,    &impl_heap2,           &impl_heap4,
    &impl_hashed_rounds, &impl_wheel_bare,      &impl_wheel_approx,
#ifdef BENCH_HAVE_LIBUV
    &impl_libuv,
#endif
#ifdef BENCH_HAVE_LIBEV
    &impl_libev,
#endif
#ifdef BENCH_HAVE_LIBEVENT
    &impl_libevent,      &impl_libevent_common,
#endif
#ifdef BENCH_HAVE_SDEVENT
    &impl_sdevent,
#endif
};
#define NALL ((int)(sizeof all_impls / sizeof all_impls[0]))

/* Peers this binary was built without, and how to add them. */
static const struct {
    const char *name, *package;
    bool present;
} peers[] = {
#ifdef BENCH_HAVE_LIBUV
    {"libuv", "libuv1-dev", true},
#else
    {"libuv", "libuv1-dev", false},
#endif
#ifdef BENCH_HAVE_LIBEV
    {"libev", "libev-dev", true},
#else
    {"libev", "libev-dev", false},
#endif
#ifdef BENCH_HAVE_LIBEVENT
    {"libevent", "libevent-dev", true},
#else
    {"libevent", "libevent-dev", false},
#endif
#ifdef BENCH_HAVE_SDEVENT
    {"sd-event", "libsystemd-dev", true},
#else
    {"sd-event", "libsystemd-dev", false},
#endif
};

/* ---------------------------------------------------------------- jobs */

struct job {
    const struct workload *w;
    uint32_t n;
    const struct bench_impl *impl; /* NULL for an `alone` workload */
    double weight;                 /* rough cost, for the time estimate */
};

/* A guess of a job's seconds, from figures measured on a 2-core VM; the
 * estimate printed is rescaled by what the finished jobs really took, so
 * only the relative sizes matter. */
static double job_weight(const struct config *cfg, const struct job *j)
{
    static const double op_ns[] = {25, 200, 300, 900};   /* rota W1 */
    static const double setup_ns[] = {20, 30, 60, 200};  /* arm + free */
    static const double chase_ns[] = {5, 150, 250, 490}; /* dependent */
    int k = j->n <= 1000 ? 0 : j->n <= 100000 ? 1 : j->n <= 1000000 ? 2 : 3;
    double n = j->n, c = op_ns[k] * 1e-9, reps = reps_for(cfg, j->w, j->n);
    double cap = j->n >= 10000000 ? cfg->cap_big : cfg->cap_small;
    const char *name = j->impl ? j->impl->name : "floor";
    bool rounds = !strcmp(name, "hashed-rounds");
    /* sd-event's W1 op, measured on a quiet machine: 0.28 us at 1e4,
     * 1.3 us at 1e5, 4 us at 1e6. */
    double slow = !strcmp(name, "sd-event") ? (j->n >= 100000 ? 13 : 4)
                  : !strcmp(name, "libuv") || !strncmp(name, "libevent", 8) ? 4
                  : !strcmp(name, "libev") || !strncmp(name, "heap", 4)     ? 2
                                                                            : 1;
    double setup = n * setup_ns[k] * 1e-9 * slow;
    struct cost cost = {.n = n,
                        .op_s = c,
                        .setup_s = setup_ns[k] * 1e-9,
                        .chase_s = chase_ns[k] * 1e-9,
                        .slow = slow,
                        .rounds = rounds};
    double rep = j->w->rep_cost(cfg, &cost);
    double measured = reps * rep;
    if (measured > cap + rep)
        measured = rep > cap ? rep : cap + rep;
    return setup * 2 + measured;
}

/* CPU time the hypervisor gave to other guests while this VM's CPUs
 * wanted it (the "steal" column of /proc/stat, all CPUs), in ms; 0 where
 * there is no such column.  A job that saw some may have a call that
 * waited for it: W7's longest call is the first figure it moves. */
static double steal_ms(void)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL)
        return 0;
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                     &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    return got == 8 && hz > 0 ? (double)v[7] * 1000.0 / (double)hz : 0;
}

static void fmt_duration(char *buf, size_t size, double s)
{
    if (s < 60)
        snprintf(buf, size, "%.0fs", s);
    else
        snprintf(buf, size, "%dm%02ds", (int)(s / 60), (int)s % 60);
}

/* -------------------------------------------------------- cross-check */

/* What the implementations run so far fired after each repetition (the
 * one that ran the most repetitions sets the later entries). */
struct reference {
    int reps;
    const char *impl[MAX_REPS];
    uint64_t fires[MAX_REPS], checksum[MAX_REPS];
};

static void cross_check(struct reference *ref, const struct job *j,
                        const struct wl_out *out)
{
    for (int r = 0; r < out->reps; r++) {
        if (r >= ref->reps) {
            ref->impl[r] = j->impl->name;
            ref->fires[r] = out->fires[r];
            ref->checksum[r] = out->checksum[r];
            ref->reps = r + 1;
            continue;
        }
        if (ref->fires[r] != out->fires[r] ||
            ref->checksum[r] != out->checksum[r])
            crosscheck_die(
                "%s N=%u, after repetition %d: %s "
                "fired %" PRIu64 " timers (checksum %016" PRIx64 "), "
                "%s fired %" PRIu64 " (checksum %016" PRIx64 ").  The "
                "implementations disagree on which timer fires at "
                "which tick; a benchmark of a broken implementation "
                "is worthless.",
                j->w->name, j->n, r + 1, ref->impl[r], ref->fires[r],
                ref->checksum[r], j->impl->name, out->fires[r],
                out->checksum[r]);
    }
}

/* An approximate implementation's timed run must fire exactly what its
 * checked run fired (workloads.c): the same stream, a deterministic
 * implementation, so any difference is a bug. */
static void same_as_checked(const struct job *j, const struct wl_out *checked,
                            const struct wl_out *out)
{
    int reps = checked->reps < out->reps ? checked->reps : out->reps;
    for (int r = 0; r < reps; r++)
        if (checked->fires[r] != out->fires[r] ||
            checked->checksum[r] != out->checksum[r])
            crosscheck_die("%s N=%u, after repetition %d: %s "
                           "fired %" PRIu64 " timers (checksum %016" PRIx64 ") "
                           "in its checked run and %" PRIu64
                           " (checksum %016" PRIx64 ") in its timed run",
                           j->w->name, j->n, r + 1, j->impl->name,
                           checked->fires[r], checked->checksum[r],
                           out->fires[r], out->checksum[r]);
}

/* ------------------------------------------------------------- options */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rota_bench [--quick] [--json PATH] [--only IMPL,...]\n"
            "                  [--workloads W1,...] [--n N,...] [--seed S]\n"
            "                  [--ops M] [--reps R] [--smoke] [--list]\n"
            "                  [--list-workloads]\n"
            "  --quick      small N and few operations (CI; < 60 s)\n"
            "  --json PATH  results file (default build/bench/results.json)\n"
            "  --only       implementations to run (see --list)\n"
            "  --workloads  which to run (see --list-workloads; default: "
            "all)\n"
            "  --n          sizes (default 1000,10000,100000,1000000,10000000;"
            "\n               W7 runs at 100000 and 1000000 unless --n)\n"
            "  --seed       splitmix64 seed of the op streams (default 42)\n"
            "  --ops        W1/W2/FLOOR operations per repetition\n"
            "  --reps       repetitions (median reported)\n"
            "  --smoke      each workload that has a smoke size, at that "
            "size,\n"
            "               briefly (the cross-check tests; implies --quick)\n"
            "  --fault IMPL self-test: report one fire of IMPL per job a "
            "tick late;\n"
            "               the cross-check must stop the run (exit 3);\n"
            "               with --smoke, each workload in a process of "
            "its own\n"
            "               must stop it\n"
            "  --fault-early IMPL  the same, a tick early\n"
            "W6 (keyed timers) and S1-S3 (the threaded service) are their "
            "own programs:\nbench_keyed and rota_bench_service.\n");
}

static bool in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        if (l == len && strncasecmp(p, name, len) == 0)
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

static uint64_t parse_u64(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end); /* accepts 1e6 */
    if (errno || end == s || *end || v < 0 || v > 1.8e19)
        bench_die("%s: bad number '%s'", opt, s);
    return (uint64_t)v;
}

/* What the command line chose, beyond struct config. */
struct selection {
    const char *json, *only, *wls;
    const char *fault; /* --fault / --fault-early: the implementation */
    uint32_t ns[16];
    int nn;
    const struct bench_impl *impls[NALL];
    int ni;
    bool want[32]; /* by row of bench_workloads */
};

/* Each name of a comma list must be one of `known` (or a peer this
 * binary was built without, which gets its own message). */
static void check_only(const char *only)
{
    for (const char *p = only; *p;) {
        const char *end = strchr(p, ',');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        bool known = false;
        for (int k = 0; k < NALL; k++)
            known |= strlen(all_impls[k]->name) == l &&
                     !strncasecmp(all_impls[k]->name, p, l);
        for (size_t k = 0; k < sizeof peers / sizeof peers[0]; k++)
            if (!peers[k].present && strlen(peers[k].name) == l &&
                !strncasecmp(peers[k].name, p, l))
                bench_die("--only: %s was not found when rota_bench was "
                          "configured (apt-get install %s, then "
                          "re-run cmake)",
                          peers[k].name, peers[k].package);
        if (!known)
            bench_die("--only: unknown implementation '%.*s' (see "
                      "--list)",
                      (int)l, p);
        p = end ? end + 1 : p + l;
    }
}

static void check_workloads(const char *wls)
{
    for (const char *p = wls; *p;) {
        const char *end = strchr(p, ',');
        size_t l = end ? (size_t)(end - p) : strlen(p);
        char name[16];
        snprintf(name, sizeof name, "%.*s", (int)(l < 15 ? l : 15), p);
        if (!wl_find(name))
            bench_die("--workloads: no workload '%.*s' here (see "
                      "--list-workloads; W6 and S1-S3 are bench_keyed and "
                      "rota_bench_service)",
                      (int)l, p);
        p = end ? end + 1 : p + l;
    }
}

/* Returns -1 to go on, or the exit status. */
static int parse_options(int argc, char **argv, struct config *cfg,
                         struct selection *sel)
{
    const char *nlist = NULL;
    uint64_t ops = 0, reps = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            cfg->quick = true;
        } else if (!strcmp(a, "--smoke")) {
            cfg->smoke = cfg->quick = true;
        } else if (!strcmp(a, "--list")) {
            for (int k = 0; k < NALL; k++)
                printf("%s\n", all_impls[k]->name);
            return 0;
        } else if (!strcmp(a, "--list-workloads")) {
            for (int k = 0; k < bench_nworkloads; k++)
                printf("%-6s %s\n", bench_workloads[k].name,
                       bench_workloads[k].title);
            return 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (v && !strcmp(a, "--json")) {
            sel->json = argv[++i];
        } else if (v && !strcmp(a, "--only")) {
            sel->only = argv[++i];
        } else if (v && !strcmp(a, "--workloads")) {
            sel->wls = argv[++i];
        } else if (v && !strcmp(a, "--n")) {
            nlist = argv[++i];
        } else if (v && !strcmp(a, "--seed")) {
            cfg->seed = parse_u64(a, argv[++i]);
        } else if (v && !strcmp(a, "--ops")) {
            ops = parse_u64(a, argv[++i]);
        } else if (v && !strcmp(a, "--reps")) {
            reps = parse_u64(a, argv[++i]);
        } else if (v && !strcmp(a, "--fault")) {
            sel->fault = argv[++i];
            wl_set_fault(sel->fault, false);
        } else if (v && !strcmp(a, "--fault-early")) {
            sel->fault = argv[++i];
            wl_set_fault(sel->fault, true);
        } else {
            usage(stderr);
            return 2;
        }
    }

    if (nlist && cfg->smoke)
        bench_die("--smoke runs each workload at its own size: no --n");
    if (nlist) {
        for (const char *p = nlist; p && *p && sel->nn < 16;) {
            char *end;
            double v = strtod(p, &end);
            if (end == p || v < 1000 || v > 2e8)
                bench_die("--n: each N must be in [1000, 2e8]: '%s'", nlist);
            sel->ns[sel->nn++] = (uint32_t)v;
            p = *end == ',' ? end + 1 : NULL;
        }
        cfg->n_given = true;
    } else if (cfg->smoke) {
        sel->ns[sel->nn++] = 0; /* each row's smoke_n */
        cfg->n_given = true;
    } else {
        static const uint32_t quick[] = {1000, 10000};
        static const uint32_t full[] = {1000, 10000, 100000, 1000000, 10000000};
        const uint32_t *list = cfg->quick ? quick : full;
        int count = cfg->quick ? 2 : 5;
        for (int k = 0; k < count; k++)
            sel->ns[sel->nn++] = list[k];
    }
    if (cfg->quick) {
        cfg->w12_ops = 100000;
        cfg->w4_ticks = 360000;
        cfg->reps_small = cfg->reps_big = 3;
        cfg->cap_small = cfg->cap_big = 0.5;
        cfg->mem_n = 10000;
    }
    if (cfg->smoke) { /* the cross-check tests: small and brief */
        cfg->w12_ops = 20000;
        cfg->reps_small = cfg->reps_big = 2;
    }
    if (ops)
        cfg->w12_ops = (uint32_t)ops;
    if (reps) {
        if (reps > 15)
            bench_die("--reps: at most 15");
        cfg->reps_small = cfg->reps_big = (int)reps;
    }

    for (int k = 0; k < NALL; k++)
        if (!sel->only || in_list(sel->only, all_impls[k]->name))
            sel->impls[sel->ni++] = all_impls[k];
    if (sel->only) {
        check_only(sel->only);
        cfg->only_given = true;
    }
    if (sel->wls)
        check_workloads(sel->wls);
    if (bench_nworkloads > (int)(sizeof sel->want / sizeof sel->want[0]))
        bench_die("more workloads than struct selection holds");
    for (int w = 0; w < bench_nworkloads; w++)
        sel->want[w] =
            (!sel->wls || in_list(sel->wls, bench_workloads[w].name)) &&
            (!cfg->smoke || bench_workloads[w].smoke_n);
    return -1;
}

/* ---------------------------------------------------------------- meta */

static void write_fixed_meta(bool locked)
{
    report_meta("code_locked", locked ? "true" : "false");
    report_meta("timing", "\"CLOCK_MONOTONIC around the measured loop only; "
                          "setup excluded\"");
    report_meta("build", "\"rota (rota_static) and the in-tree baselines "
                         "are compiled here with the flags above; libuv, "
                         "libev, libevent and sd-event (libsystemd) are "
                         "Debian's prebuilt shared libraries, called "
                         "through the PLT\"");
    report_meta("mem", "\"RSS growth (/proc/self/statm) across creating the "
                       "structure and arming N timers, divided by N: every "
                       "allocation a user makes for N timers is inside the "
                       "window (the array of nodes = library timer + a "
                       "32-bit id, the wheel, heap arrays grown by "
                       "doubling, the peers' loops); bytes_per_timer_node "
                       "is sizeof that node (+ one 16-byte heap entry for "
                       "heap2/heap4)\"");
    report_meta("peer_clock",
                "\"libuv, libev, libevent and sd-event read the simulated "
                "clock through an interposed clock_gettime "
                "(bench/impl/fakeclock.c); advance = one non-blocking loop "
                "iteration (sd-event: one per fire, as it dispatches one "
                "source per iteration), whose zero-timeout epoll_wait on "
                "an empty set is answered without a syscall, as is "
                "sd-event's timerfd_settime; libev is armed half a tick "
                "early because it fires strictly after its deadline "
                "(bench/impl/impl_libev.c)\"");
}

/* Peers this binary was built without: a skip each, and a word on how to
 * add them. */
static void report_missing_peers(const struct selection *sel)
{
    for (size_t k = 0; k < sizeof peers / sizeof peers[0]; k++) {
        if (peers[k].present ||
            (sel->only && !in_list(sel->only, peers[k].name)))
            continue;
        char why[160];
        snprintf(why, sizeof why,
                 "not found when rota_bench was configured; to add it: "
                 "apt-get install %s and re-run cmake",
                 peers[k].package);
        fprintf(stderr, "rota_bench: %s %s\n", peers[k].name, why);
        report_skip(peers[k].name, "all", 0, why);
    }
}

/* ---------------------------------------------------------------- jobs */

/* Why an implementation is left out at N whatever the workload (a
 * reason), or NULL. */
static const char *impl_budget(const struct config *cfg,
                               const struct bench_impl *impl, uint32_t n)
{
    if (!strcmp(impl->name, "sd-event") && !cfg->n_given && n >= 10000000)
        return "budget: 4 us per W1 operation and 10.5 us per W3 expiry at "
               "1e6 (two binary heaps of pointers to 350-byte sources), more "
               "at 1e7: minutes per workload; run with --only sd-event --n "
               "10000000";
    return NULL;
}

/* The job list: N outer, then workload (the table's order), then
 * implementation.  Returns the count. */
static int build_jobs(const struct config *cfg, const struct selection *sel,
                      struct job *jobs, int max)
{
    int nj = 0;
    for (int i = 0; i < sel->nn; i++) {
        for (int k = 0; k < bench_nworkloads; k++) {
            const struct workload *w = &bench_workloads[k];
            uint32_t n = sel->ns[i];
            if (!sel->want[k])
                continue;
            if (cfg->smoke) {
                n = w->smoke_n;
            } else if (w->only_n) { /* one N, once */
                if (i)
                    continue;
                n = w->only_n(cfg);
            }
            const char *why = w->budget ? w->budget(cfg, NULL, n) : NULL;
            if (why) {
                if (*why)
                    report_skip("all", w->name, n, why);
                continue;
            }
            if (w->alone) {
                if (nj == max)
                    bench_die("more than %d jobs", max);
                jobs[nj++] = (struct job){w, n, NULL, 0};
                continue;
            }
            for (int m = 0; m < sel->ni; m++) {
                const struct bench_impl *impl = sel->impls[m];
                why = impl->skip ? impl->skip(w->name) : NULL;
                if (why) {
                    if (i == 0)
                        report_skip(impl->name, w->name, 0, why);
                    continue;
                }
                why = w->budget ? w->budget(cfg, impl, n) : NULL;
                if (!why)
                    why = impl_budget(cfg, impl, n);
                if (why) {
                    if (*why)
                        report_skip(impl->name, w->name, n, why);
                    continue;
                }
                if (nj == max)
                    bench_die("more than %d jobs", max);
                jobs[nj++] = (struct job){w, n, impl, 0};
            }
        }
    }
    return nj;
}

/* Appends `"W1/1000/rota": value` to a JSON object being built in buf. */
static void add_job_entry(char *buf, size_t size, size_t *len,
                          const struct job *j, const char *value)
{
    if (*len >= size - 64)
        return;
    *len += (size_t)snprintf(buf + *len, size - *len, "%s\"%s/%u/%s\": %s",
                             *len > 1 ? ", " : "", j->w->name, j->n,
                             j->impl ? j->impl->name : "floor", value);
}

/* Runs every job, checks each against the others, and reports its
 * figures; the JSON objects of cut repetitions and stolen CPU go to meta. */
static void run_jobs(const struct config *cfg, struct job *jobs, int nj)
{
    double total_weight = 0;
    for (int k = 0; k < nj; k++) {
        jobs[k].weight = job_weight(cfg, &jobs[k]);
        total_weight += jobs[k].weight;
    }

    char guess[32];
    fmt_duration(guess, sizeof guess, total_weight);
    fprintf(stderr,
            "rota_bench: %d jobs, seed %" PRIu64 ", %s run, about %s "
            "on a 2-core VM\n",
            nj, cfg->seed, cfg->quick ? "quick" : "full", guess);
    double start = bench_wall(), done_weight = 0;
    struct reference ref = {0};
    struct wl_data *data = NULL;
    static char reps_used[16384] = "{";
    static char stolen[16384] = "{";
    size_t sl = 1, rl = 1;
    for (int k = 0; k < nj; k++) {
        const struct job *j = &jobs[k];
        if (k == 0 || j->w != jobs[k - 1].w || j->n != jobs[k - 1].n) {
            wl_release(data);
            data = wl_prepare(cfg, j->w, j->n);
            memset(&ref, 0, sizeof ref);
        }
        double elapsed = bench_wall() - start;
        char el[32] = "", left[32] = "?";
        fmt_duration(el, sizeof el, elapsed);
        if (done_weight > 0)
            fmt_duration(left, sizeof left,
                         elapsed / done_weight * (total_weight - done_weight));
        fprintf(stderr, "[%3d/%3d] %-5s N=%-8u %-15s elapsed %s, ~%s left\n",
                k + 1, nj, j->w->name, j->n, j->impl ? j->impl->name : "floor",
                el, left);

        struct wl_out out;
        double steal0 = steal_ms();
        if (j->impl && j->impl->max_late && !j->w->unchecked) {
            /* Approximate: checked against its windows, then timed. */
            struct wl_out checked;
            wl_run(cfg, j->impl, j->w, j->n, data, &checked, true);
            wl_run(cfg, j->impl, j->w, j->n, data, &out, false);
            same_as_checked(j, &checked, &out);
        } else {
            wl_run(cfg, j->impl, j->w, j->n, data, &out, false);
            if (j->impl && !j->w->unchecked && j->impl->inexact == NULL)
                cross_check(&ref, j, &out);
        }
        char v[32];
        if (out.reps < reps_for(cfg, j->w, j->n)) {
            snprintf(v, sizeof v, "%d", out.reps);
            add_job_entry(reps_used, sizeof reps_used, &rl, j, v);
        }
        double stole = steal_ms() - steal0;
        if (stole > 0) {
            fprintf(stderr,
                    "          the hypervisor took %.0f ms of CPU "
                    "during this job\n",
                    stole);
            snprintf(v, sizeof v, "%.0f", stole);
            add_job_entry(stolen, sizeof stolen, &sl, j, v);
        }
        for (int m = 0; m < out.count; m++)
            report_add(j->impl ? j->impl->name : "floor", j->w->name, j->n,
                       out.metric[m], out.value[m]);
        malloc_trim(0);
        done_weight += j->weight;
    }
    wl_release(data);
    snprintf(reps_used + rl, sizeof reps_used - rl, "}");
    report_meta("repetitions_cut_by_time_cap", reps_used);
    snprintf(stolen + sl, sizeof stolen - sl, "}");
    report_meta("cpu_steal_ms_by_job", stolen);
}

/* meta.versions: the library each implementation linked. */
static void report_versions(const struct selection *sel)
{
    char versions[512];
    int vl = snprintf(versions, sizeof versions, "{");
    for (int k = 0; k < sel->ni; k++) {
        const struct bench_impl *impl = sel->impls[k];
        if (!impl->version ||
            (k && impl->version == sel->impls[k - 1]->version))
            continue;
        vl += snprintf(versions + vl, sizeof versions - (size_t)vl,
                       "%s\"%s\": \"%s\"", vl > 1 ? ", " : "", impl->name,
                       impl->version());
    }
    snprintf(versions + vl, sizeof versions - (size_t)vl, "}");
    report_meta("versions", versions);
}

/* --smoke with a planted fault: every workload must catch it.  Each runs
 * in a child process of its own (a caught fault ends the process) that
 * must stop with the cross-check's status; a workload whose run ends well
 * has let the fault through. */
static int smoke_faults(const struct config *cfg, struct selection *sel)
{
    bool want[sizeof sel->want / sizeof sel->want[0]];
    int caught = 0, missed = 0;
    memcpy(want, sel->want, sizeof want);
    for (int k = 0; k < bench_nworkloads; k++) {
        if (!want[k])
            continue;
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (pid < 0)
            bench_die("fork: %s", strerror(errno));
        if (pid == 0) {
            memset(sel->want, 0, sizeof sel->want);
            sel->want[k] = true;
            struct job jobs[NALL + 1];
            int nj = build_jobs(cfg, sel, jobs, NALL + 1);
            run_jobs(cfg, jobs, nj);
            _exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid)
            bench_die("waitpid: %s", strerror(errno));
        if (WIFEXITED(status) && WEXITSTATUS(status) == CROSSCHECK_STATUS) {
            caught++;
        } else {
            fprintf(stderr,
                    "rota_bench: the fault planted in %s was not caught in "
                    "%s\n",
                    sel->fault, bench_workloads[k].name);
            missed++;
        }
    }
    if (missed || !caught)
        bench_die("%d of %d workloads let the fault planted in %s through",
                  missed, missed + caught, sel->fault);
    printf("rota_bench: the cross-check caught the fault planted in %s in "
           "every workload (%d)\n",
           sel->fault, caught);
    return CROSSCHECK_STATUS;
}

int main(int argc, char **argv)
{
    struct config cfg = {
        .seed = 42,
        .w12_ops = 2000000,
        .w4_ticks = 3600000,
        .w5_ticks = 10000,
        .w7_seconds = 60,
        .mem_n = 1000000,
        .reps_small = 5,
        .reps_big = 3,
        .cap_small = 4.0,
        .cap_big = 4.0,
    };
    struct selection sel = {.json = "build/bench/results.json"};

    bench_program = "rota_bench";
    bench_die_note = "stopping; no results written.";
    bench_die_status = 2;
    int status = parse_options(argc, argv, &cfg, &sel);
    if (status >= 0)
        return status;

    mallopt(M_MMAP_THRESHOLD, 1 << 20); /* big arrays always mmap: MEM */
    /* The program's code and libraries stay in memory: a kernel that
     * reclaims page cache behind a long run (DAMON, memory pressure) would
     * otherwise put a disk read (milliseconds) into whichever timed call
     * next runs the evicted code.  Later allocations are not locked, so
     * MEM's RSS growth is what it was. */
    bool locked = mlockall(MCL_CURRENT) == 0;
    if (!locked)
        printf("rota_bench: mlockall failed (%s): a timed call may include "
               "a page fault\n",
               strerror(errno));
    write_fixed_meta(locked);
    report_missing_peers(&sel);

    if (cfg.smoke && sel.fault)
        return smoke_faults(&cfg, &sel);

    int max = 16 * bench_nworkloads * (NALL + 1);
    struct job *jobs = calloc((size_t)max, sizeof *jobs);
    if (!jobs)
        bench_die("out of memory");
    int nj = build_jobs(&cfg, &sel, jobs, max);
    double start = bench_wall();
    run_jobs(&cfg, jobs, nj);
    free(jobs);

    double total = bench_wall() - start;
    char buf[64];
    report_versions(&sel);
    snprintf(buf, sizeof buf, "%.1f", total);
    report_meta("total_seconds", buf);
    snprintf(buf, sizeof buf, "%" PRIu64, bench_fakeclock_elided());
    report_meta("peers_epoll_calls_elided", buf);
    snprintf(buf, sizeof buf, "%" PRIu64, bench_fakeclock_settime_elided());
    report_meta("peers_timerfd_settime_elided", buf);

    const char *names[NALL + 1];
    for (int k = 0; k < sel.ni; k++)
        names[k] = sel.impls[k]->name;
    names[sel.ni] = "floor";
    report_table(stdout, names, sel.ni + 1);
    fmt_duration(buf, sizeof buf, total);
    printf("\ntotal run time %s (%.1f s)\n", buf, total);

    if (report_json(sel.json, &cfg) != 0)
        bench_die("cannot write %s: %s", sel.json, strerror(errno));
    printf("results: %s\n", sel.json);
    report_plot(sel.json);
    return 0;
}
