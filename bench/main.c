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

static const char *const wl_names[WL_COUNT] = {
    "W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "MEM", "FLOOR"};

const char *wl_name(enum bench_workload wl)
{
    return wl_names[wl];
}

_Noreturn void bench_die(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("\nrota_bench: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\nrota_bench: stopping; no results written.\n", stderr);
    exit(2);
}

int reps_for(const struct config *cfg, enum bench_workload wl, uint32_t n)
{
    if (wl == WL_MEM)
        return 1;
    if (n >= 10000000 || (wl == WL_W5 && n >= 1000000))
        return cfg->reps_big;
    return cfg->reps_small;
}

int mkdir_parents(const char *path)
{
    char buf[4096];
    size_t len = strlen(path);
    if (len >= sizeof buf)
        return -1;
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

/* ---------------------------------------------------------------- jobs */

struct job {
    enum bench_workload wl;
    uint32_t n;
    const struct bench_impl *impl; /* NULL for FLOOR */
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
    double n = j->n, c = op_ns[k] * 1e-9, reps = reps_for(cfg, j->wl, j->n);
    double cap = j->n >= 10000000 ? cfg->cap_big : cfg->cap_small;
    const char *name = j->impl ? j->impl->name : "floor";
    bool rounds = !strcmp(name, "hashed-rounds");
    /* sd-event's W1 op, measured on a quiet machine: 0.28 us at 1e4,
     * 1.3 us at 1e5, 4 us at 1e6. */
    double slow = !strcmp(name, "sd-event") ? (j->n >= 100000 ? 13 : 4)
                  : !strcmp(name, "libuv") || !strncmp(name, "libevent", 8) ? 4
                  : !strcmp(name, "libev") || !strncmp(name, "heap", 4)     ? 2
                                                                            : 1;
    double setup = n * setup_ns[k] * 1e-9 * slow, rep;
    switch (j->wl) {
    case WL_W1:
    case WL_W2:
    case WL_W8:
        rep = cfg->w12_ops * c * slow;
        if (rounds) /* every tick walks a slot of n / 512 timers */
            rep += cfg->w12_ops / (j->wl == WL_W1 ? 1000.0 : n / 1000 + 1) * n /
                   512 * chase_ns[k] * 1e-9;
        break;
    case WL_W3:
        rep = n * (setup_ns[k] * 1e-9 + c * 1.5) * slow +
              60000 * (slow > 1 ? 80e-9 : 20e-9);
        if (rounds)
            rep += 60000 * n / 512 * chase_ns[k] * 1e-9;
        break;
    case WL_W4:
        rep = cfg->w4_ticks * (slow > 2 ? 80e-9 : 15e-9);
        break;
    case WL_W5:
        rep = 46.5 * n * c * 1.5 * slow + 80e-9 * cfg->w5_ticks;
        break;
    case WL_W7: /* a refresh per connection per simulated second */
        rep = cfg->w7_seconds * n * c * slow +
              (rounds ? cfg->w7_seconds * 1000.0 * n / 512 * 20e-9 : 0);
        break;
    case WL_MEM:
        return setup * 2;
    case WL_FLOOR:
        rep = cfg->w12_ops * (c + chase_ns[k] * 1e-9);
        break;
    default:
        return 1;
    }
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
            bench_die("CROSS-CHECK FAILED: %s N=%u, after repetition %d: %s "
                      "fired %" PRIu64 " timers (checksum %016" PRIx64 "), "
                      "%s fired %" PRIu64 " (checksum %016" PRIx64 ").  The "
                      "implementations disagree on which timer fires at "
                      "which tick; a benchmark of a broken implementation "
                      "is worthless.",
                      wl_name(j->wl), j->n, r + 1, ref->impl[r], ref->fires[r],
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
            bench_die("CROSS-CHECK FAILED: %s N=%u, after repetition %d: %s "
                      "fired %" PRIu64 " timers (checksum %016" PRIx64 ") "
                      "in its checked run and %" PRIu64 " (checksum %016" PRIx64
                      ") in its timed run",
                      wl_name(j->wl), j->n, r + 1, j->impl->name,
                      checked->fires[r], checked->checksum[r], out->fires[r],
                      out->checksum[r]);
}

/* ------------------------------------------------------------- options */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: rota_bench [--quick] [--json PATH] [--only IMPL,...]\n"
            "                  [--workloads W1,...] [--n N,...] [--seed S]\n"
            "                  [--ops M] [--reps R] [--list]\n"
            "  --quick      small N and few operations (CI; < 60 s)\n"
            "  --json PATH  results file (default build/bench/results.json)\n"
            "  --only       implementations to run (see --list)\n"
            "  --workloads  W1,W2,W3,W4,W5,W7,W8,MEM,FLOOR (default: all)\n"
            "  --n          sizes (default 1000,10000,100000,1000000,10000000;"
            "\n               W7 runs at 100000 and 1000000 unless --n)\n"
            "  --seed       splitmix64 seed of the op streams (default 42)\n"
            "  --ops        W1/W2/FLOOR operations per repetition\n"
            "  --reps       repetitions (median reported)\n"
            "  --fault IMPL self-test: report one fire of IMPL per job a "
            "tick late;\n"
            "               the cross-check must stop the run (exit 2)\n"
            "  --fault-early IMPL  the same, a tick early\n");
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
    const char *json = "build/bench/results.json";
    const char *only = NULL, *wls = NULL, *nlist = NULL;
    uint64_t ops = 0, reps = 0;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) {
            cfg.quick = true;
        } else if (!strcmp(a, "--list")) {
            for (int k = 0; k < NALL; k++)
                printf("%s\n", all_impls[k]->name);
            return 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (v && !strcmp(a, "--json")) {
            json = argv[++i];
        } else if (v && !strcmp(a, "--only")) {
            only = argv[++i];
        } else if (v && !strcmp(a, "--workloads")) {
            wls = argv[++i];
        } else if (v && !strcmp(a, "--n")) {
            nlist = argv[++i];
        } else if (v && !strcmp(a, "--seed")) {
            cfg.seed = parse_u64(a, argv[++i]);
        } else if (v && !strcmp(a, "--ops")) {
            ops = parse_u64(a, argv[++i]);
        } else if (v && !strcmp(a, "--reps")) {
            reps = parse_u64(a, argv[++i]);
        } else if (v && !strcmp(a, "--fault")) {
            wl_set_fault(argv[++i], false);
        } else if (v && !strcmp(a, "--fault-early")) {
            wl_set_fault(argv[++i], true);
        } else {
            usage(stderr);
            return 2;
        }
    }

    uint32_t ns[16];
    int nn = 0;
    if (nlist) {
        for (const char *p = nlist; p && *p && nn < 16;) {
            char *end;
            double v = strtod(p, &end);
            if (end == p || v < 1000 || v > 2e8)
                bench_die("--n: each N must be in [1000, 2e8]: '%s'", nlist);
            ns[nn++] = (uint32_t)v;
            p = *end == ',' ? end + 1 : NULL;
        }
    } else if (cfg.quick) {
        ns[nn++] = 1000;
        ns[nn++] = 10000;
    } else {
        ns[nn++] = 1000;
        ns[nn++] = 10000;
        ns[nn++] = 100000;
        ns[nn++] = 1000000;
        ns[nn++] = 10000000;
    }
    if (cfg.quick) {
        cfg.w12_ops = 100000;
        cfg.w4_ticks = 360000;
        cfg.reps_small = cfg.reps_big = 3;
        cfg.cap_small = cfg.cap_big = 0.5;
        cfg.mem_n = 10000;
    }
    if (ops)
        cfg.w12_ops = (uint32_t)ops;
    if (reps) {
        if (reps > 15)
            bench_die("--reps: at most 15");
        cfg.reps_small = cfg.reps_big = (int)reps;
    }

    /* Which implementations, workloads. */
    const struct bench_impl *impls[NALL];
    int ni = 0;
    for (int k = 0; k < NALL; k++)
        if (!only || in_list(only, all_impls[k]->name))
            impls[ni++] = all_impls[k];
    if (only) {
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
    bool want[WL_COUNT] = {false};
    for (int w = 0; w < WL_COUNT; w++)
        want[w] = !wls || in_list(wls, wl_names[w]);

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
                "(bench/fakeclock.c); advance = one non-blocking loop "
                "iteration (sd-event: one per fire, as it dispatches one "
                "source per iteration), whose zero-timeout epoll_wait on "
                "an empty set is answered without a syscall, as is "
                "sd-event's timerfd_settime; libev is armed half a tick "
                "early because it fires strictly after its deadline "
                "(bench/impl_libev.c)\"");

    for (size_t k = 0; k < sizeof peers / sizeof peers[0]; k++) {
        if (peers[k].present || (only && !in_list(only, peers[k].name)))
            continue;
        char why[160];
        snprintf(why, sizeof why,
                 "not found when rota_bench was configured; to add it: "
                 "apt-get install %s and re-run cmake",
                 peers[k].package);
        fprintf(stderr, "rota_bench: %s %s\n", peers[k].name, why);
        report_skip(peers[k].name, "all", 0, why);
    }
    if (want[WL_W6])
        report_skip("all", "W6", 0,
                    "waits for the keyed layer in rota_bench: W6 is measured "
                    "by the separate bench_keyed executable (bench/keyed.cmake)"
                    " for rota/keyed.h against hashed-rounds; the other "
                    "implementations have no keyed API");

    /* The job list: N outer, then workload, then implementation. */
    struct job *jobs = calloc(64 * 16, sizeof *jobs);
    int nj = 0;
    bool w4_done = false, mem_done = false;
    for (int i = 0; i < nn; i++) {
        for (int w = 0; w < WL_COUNT; w++) {
            if (!want[w] || w == WL_W6)
                continue;
            uint32_t n = ns[i];
            if (w == WL_W4) { /* 1,000 timers whatever N: once */
                if (w4_done)
                    continue;
                w4_done = true;
                n = 1000;
            }
            if (w == WL_MEM) { /* at N = 1e6 (1e5 when quick) only */
                if (mem_done)
                    continue;
                mem_done = true;
                n = cfg.mem_n;
            }
            /* W7 models one loop thread's connections: 1e5 and 1e6 (1e4
             * in a quick run). */
            if (w == WL_W7 && !nlist &&
                (cfg.quick ? n != 10000 : n != 100000 && n != 1000000))
                continue;
            if (w == WL_W5 && n >= 1000000 && !nlist) {
                report_skip("all", "W5", n,
                            "budget: about 46.5 fires per timer, 4.7e7 per "
                            "repetition at N = 1e6 (minutes for the heaps "
                            "and peers); run with --workloads W5 --n N");
                continue;
            }
            if (w == WL_FLOOR) {
                jobs[nj++] = (struct job){(enum bench_workload)w, n, NULL, 0};
                continue;
            }
            for (int k = 0; k < ni; k++) {
                const char *why = impls[k]->skip
                                      ? impls[k]->skip((enum bench_workload)w)
                                      : NULL;
                if (why) {
                    if (i == 0 || w == WL_MEM || w == WL_W4)
                        report_skip(impls[k]->name, wl_names[w], 0, why);
                    continue;
                }
                if (w == WL_W7 && !only &&
                    (!strcmp(impls[k]->name, "libuv") ||
                     !strncmp(impls[k]->name, "libevent", 8))) {
                    report_skip(impls[k]->name, "W7", n,
                                "budget: W7 compares rota with the heaps, "
                                "the bare wheel, hashed-rounds, libev and "
                                "(at 1e5) sd-event; name it with --only to "
                                "run it");
                    continue;
                }
                if (!strcmp(impls[k]->name, "sd-event") && !nlist &&
                    (n >= 10000000 || (w == WL_W7 && n >= 1000000))) {
                    report_skip(impls[k]->name, wl_names[w], n,
                                n >= 10000000
                                    ? "budget: 4 us per W1 operation and "
                                      "10.5 us per W3 expiry at 1e6 (two "
                                      "binary heaps of pointers to 350-byte "
                                      "sources), more at 1e7: minutes per "
                                      "workload; run with --only sd-event "
                                      "--n 10000000"
                                    : "budget: W7 at 1e6 is 1.4 s of loop "
                                      "work per simulated second (one loop "
                                      "iteration per fire), a minute and a "
                                      "half; run with --only sd-event "
                                      "--workloads W7 --n 1000000");
                    continue;
                }
                if (w == WL_W3 && n >= 10000000 && !nlist &&
                    impls[k] == &impl_hashed_rounds) {
                    report_skip(impls[k]->name, "W3", n,
                                "budget: every tick walks all N/512 timers "
                                "of one slot (1.2e9 node visits per "
                                "repetition at 1e7, minutes); run with "
                                "--only hashed-rounds --workloads W3 --n "
                                "10000000");
                    continue;
                }
                jobs[nj++] =
                    (struct job){(enum bench_workload)w, n, impls[k], 0};
            }
        }
    }
    double total_weight = 0;
    for (int k = 0; k < nj; k++) {
        jobs[k].weight = job_weight(&cfg, &jobs[k]);
        total_weight += jobs[k].weight;
    }

    char guess[32];
    fmt_duration(guess, sizeof guess, total_weight);
    fprintf(stderr,
            "rota_bench: %d jobs, seed %" PRIu64 ", %s run, about %s "
            "on a 2-core VM\n",
            nj, cfg.seed, cfg.quick ? "quick" : "full", guess);
    double start = bench_wall(), done_weight = 0;
    struct reference ref = {0};
    struct wl_data *data = NULL;
    static char reps_used[16384] = "{";
    static char stolen[16384] = "{";
    size_t sl = 1;
    size_t rl = 1;
    for (int k = 0; k < nj; k++) {
        const struct job *j = &jobs[k];
        if (k == 0 || j->wl != jobs[k - 1].wl || j->n != jobs[k - 1].n) {
            wl_release(data);
            data = NULL;
            data = wl_prepare(&cfg, j->wl, j->n);
            memset(&ref, 0, sizeof ref);
        }
        double elapsed = bench_wall() - start;
        char el[32] = "", left[32] = "?";
        fmt_duration(el, sizeof el, elapsed);
        if (done_weight > 0)
            fmt_duration(left, sizeof left,
                         elapsed / done_weight * (total_weight - done_weight));
        fprintf(stderr, "[%3d/%3d] %-5s N=%-8u %-15s elapsed %s, ~%s left\n",
                k + 1, nj, wl_names[j->wl], j->n,
                j->impl ? j->impl->name : "floor", el, left);

        struct wl_out out;
        double steal0 = steal_ms();
        if (j->impl && j->impl->max_late && j->wl != WL_MEM) {
            /* Approximate: checked against its windows, then timed. */
            struct wl_out checked;
            wl_run(&cfg, j->impl, j->wl, j->n, data, &checked, true);
            wl_run(&cfg, j->impl, j->wl, j->n, data, &out, false);
            same_as_checked(j, &checked, &out);
        } else if (j->impl) {
            wl_run(&cfg, j->impl, j->wl, j->n, data, &out, false);
            if (j->wl != WL_MEM && j->impl->inexact == NULL)
                cross_check(&ref, j, &out);
        } else {
            wl_floor(&cfg, j->n, data, &out);
        }
        if (out.reps < reps_for(&cfg, j->wl, j->n) &&
            rl < sizeof reps_used - 64)
            rl += (size_t)snprintf(reps_used + rl, sizeof reps_used - rl,
                                   "%s\"%s/%u/%s\": %d", rl > 1 ? ", " : "",
                                   wl_names[j->wl], j->n,
                                   j->impl ? j->impl->name : "floor", out.reps);
        double stole = steal_ms() - steal0;
        if (stole > 0 && sl < sizeof stolen - 64) {
            fprintf(stderr,
                    "          the hypervisor took %.0f ms of CPU "
                    "during this job\n",
                    stole);
            sl += (size_t)snprintf(stolen + sl, sizeof stolen - sl,
                                   "%s\"%s/%u/%s\": %.0f", sl > 1 ? ", " : "",
                                   wl_names[j->wl], j->n,
                                   j->impl ? j->impl->name : "floor", stole);
        }
        for (int m = 0; m < out.count; m++)
            report_add(j->impl ? j->impl->name : "floor", wl_names[j->wl], j->n,
                       out.metric[m], out.value[m]);
        malloc_trim(0);
        done_weight += j->weight;
    }
    wl_release(data);
    free(jobs);

    double total = bench_wall() - start;
    char buf[64], versions[512];
    int vl = snprintf(versions, sizeof versions, "{");
    for (int k = 0; k < ni; k++) {
        if (!impls[k]->version ||
            (k && impls[k]->version == impls[k - 1]->version))
            continue;
        vl += snprintf(versions + vl, sizeof versions - (size_t)vl,
                       "%s\"%s\": \"%s\"", vl > 1 ? ", " : "", impls[k]->name,
                       impls[k]->version());
    }
    snprintf(versions + vl, sizeof versions - (size_t)vl, "}");
    report_meta("versions", versions);
    snprintf(reps_used + rl, sizeof reps_used - rl, "}");
    report_meta("repetitions_cut_by_time_cap", reps_used);
    snprintf(stolen + sl, sizeof stolen - sl, "}");
    report_meta("cpu_steal_ms_by_job", stolen);
    snprintf(buf, sizeof buf, "%.1f", total);
    report_meta("total_seconds", buf);
    snprintf(buf, sizeof buf, "%" PRIu64, bench_fakeclock_elided());
    report_meta("peers_epoll_calls_elided", buf);
    snprintf(buf, sizeof buf, "%" PRIu64, bench_fakeclock_settime_elided());
    report_meta("peers_timerfd_settime_elided", buf);

    const char *names[NALL + 1];
    for (int k = 0; k < ni; k++)
        names[k] = impls[k]->name;
    names[ni] = "floor";
    report_table(stdout, names, ni + 1);
    fmt_duration(buf, sizeof buf, total);
    printf("\ntotal run time %s (%.1f s)\n", buf, total);

    if (report_json(json, &cfg) != 0)
        bench_die("cannot write %s: %s", json, strerror(errno));
    printf("results: %s\n", json);
    report_plot(json);
    return 0;
}
