/* SPDX-License-Identifier: MIT */
/*
 * report.c - what rota_bench prints and writes: the table (one row per
 * workload + metric + N, one column per implementation, each cell with its
 * ratio to rota), the JSON and the gnuplot PNG (all described in
 * docs/BENCH.md).  The JSON's meta and the plot's title say what was
 * measured where: the commit, the date and the machine.
 */
#define _GNU_SOURCE
#include "driver.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCH_COMPILER
#define BENCH_COMPILER "unknown"
#endif
#ifndef BENCH_CFLAGS
#define BENCH_CFLAGS "unknown"
#endif
#ifndef BENCH_SOURCE_DIR
#define BENCH_SOURCE_DIR "."
#endif

#define MAX_RESULTS 4096
#define MAX_SKIPS 256
#define MAX_META 32

static struct result results[MAX_RESULTS];
static int nresults;

static struct skip {
    const char *impl, *workload, *reason;
    uint32_t n;
} skips[MAX_SKIPS];
static int nskips;

static struct {
    const char *key;
    char *value; /* JSON text */
} meta[MAX_META];
static int nmeta;

void report_add(const char *impl, const char *workload, uint32_t n,
                const char *metric, double value)
{
    if (nresults == MAX_RESULTS)
        bench_die("too many results");
    results[nresults++] = (struct result){impl, workload, n, metric, value};
}

void report_skip(const char *impl, const char *workload, uint32_t n,
                 const char *reason)
{
    for (int i = 0; i < nskips; i++)
        if (!strcmp(skips[i].impl, impl) &&
            !strcmp(skips[i].workload, workload) && skips[i].n == n)
            return;
    if (nskips == MAX_SKIPS)
        bench_die("too many skips");
    char *copy = strdup(reason); /* callers may pass a stack buffer */
    if (!copy)
        bench_die("out of memory");
    skips[nskips++] = (struct skip){impl, workload, copy, n};
}

void report_meta(const char *key, const char *json_value)
{
    for (int i = 0; i < nmeta; i++) {
        if (!strcmp(meta[i].key, key)) {
            free(meta[i].value);
            meta[i].value = strdup(json_value);
            return;
        }
    }
    if (nmeta == MAX_META)
        bench_die("too many meta keys");
    meta[nmeta].key = key;
    meta[nmeta++].value = strdup(json_value);
}

static const struct result *find(const char *impl, const char *workload,
                                 const char *metric, uint32_t n)
{
    for (int i = 0; i < nresults; i++)
        if (results[i].n == n && !strcmp(results[i].impl, impl) &&
            !strcmp(results[i].workload, workload) &&
            !strcmp(results[i].metric, metric))
            return &results[i];
    return NULL;
}

static const char *skip_reason(const char *impl, const char *workload,
                               uint32_t n)
{
    for (int i = 0; i < nskips; i++)
        if ((!strcmp(skips[i].impl, impl) || !strcmp(skips[i].impl, "all")) &&
            (!strcmp(skips[i].workload, workload) ||
             !strcmp(skips[i].workload, "all")) &&
            (skips[i].n == 0 || skips[i].n == n))
            return skips[i].reason;
    return NULL;
}

/* ---------------------------------------------------------------- table */

/* Rows: the workload table's order, each workload's metrics in its
 * row's order (bench_workloads, workloads.c). */

static int collect_ns(uint32_t *ns)
{
    int count = 0;
    for (int i = 0; i < nresults; i++) {
        int k = 0;
        while (k < count && ns[k] != results[i].n)
            k++;
        if (k == count && count < 16)
            ns[count++] = results[i].n;
    }
    for (int a = 0; a < count; a++) /* sort ascending */
        for (int b = a + 1; b < count; b++)
            if (ns[b] < ns[a]) {
                uint32_t t = ns[a];
                ns[a] = ns[b];
                ns[b] = t;
            }
    return count;
}

static void fmt_value(char *buf, size_t size, double v)
{
    if (v >= 1000)
        snprintf(buf, size, "%.0f", v);
    else if (v >= 10)
        snprintf(buf, size, "%.1f", v);
    else
        snprintf(buf, size, "%.2f", v);
}

void report_table(FILE *out, const char *const *impls, int nimpl)
{
    uint32_t ns[16];
    int nn = collect_ns(ns);
    const char *cols[32];
    int nc = 0;
    for (int k = 0; k < nimpl && nc < 32; k++) {
        bool any = false;
        for (int i = 0; i < nresults && !any; i++)
            any = !strcmp(results[i].impl, impls[k]);
        if (any)
            cols[nc++] = impls[k];
    }

    fprintf(out, "\nrota_bench results: median per cell; (x R) = this "
                 "implementation / rota, lower is better for every "
                 "metric\n\n");
    fprintf(out, "%-5s %-23s %9s", "wl", "metric", "N");
    for (int c = 0; c < nc; c++)
        fprintf(out, " %17s", cols[c]);
    fputc('\n', out);

    for (int w = 0; w < bench_nworkloads; w++) {
        const char *wl = bench_workloads[w].name;
        for (int m = 0; m < 4 && bench_workloads[w].metrics[m]; m++) {
            const char *metric = bench_workloads[w].metrics[m];
            for (int i = 0; i < nn; i++) {
                bool row = false;
                for (int c = 0; c < nc && !row; c++)
                    row = find(cols[c], wl, metric, ns[i]);
                if (!row)
                    continue;
                const struct result *base = find("rota", wl, metric, ns[i]);
                fprintf(out, "%-5s %-23s %9u", wl, metric, ns[i]);
                for (int c = 0; c < nc; c++) {
                    const struct result *r = find(cols[c], wl, metric, ns[i]);
                    char cell[48], v[24];
                    if (!r) {
                        bool na = skip_reason(cols[c], wl, ns[i]);
                        snprintf(cell, sizeof cell, "%s", na ? "n/a" : "-");
                    } else if (base && base->value > 0 &&
                               strcmp(cols[c], "rota") != 0) {
                        fmt_value(v, sizeof v, r->value);
                        snprintf(cell, sizeof cell, "%s (x%.2f)", v,
                                 r->value / base->value);
                    } else {
                        fmt_value(v, sizeof v, r->value);
                        snprintf(cell, sizeof cell, "%s", v);
                    }
                    fprintf(out, " %17s", cell);
                }
                fputc('\n', out);
            }
        }
    }
    if (nskips) {
        fprintf(out, "\nnot run (n/a):\n");
        for (int i = 0; i < nskips; i++) {
            char n[24] = "";
            if (skips[i].n)
                snprintf(n, sizeof n, " N=%u", skips[i].n);
            fprintf(out, "  %-15s %-5s%s: %s\n", skips[i].impl,
                    skips[i].workload, n, skips[i].reason);
        }
    }
}

/* ----------------------------------------------------------------- JSON */

/* The commit measured: `git describe --always --dirty` in the source tree
 * the binary was built from ("-dirty": uncommitted changes), or "unknown"
 * outside a git checkout. */
static void commit_id(char *buf, size_t size)
{
    FILE *p = popen("git -C '" BENCH_SOURCE_DIR "' describe --always --dirty "
                    "--abbrev=7 2>/dev/null",
                    "r");
    snprintf(buf, size, "unknown");
    if (!p)
        return;
    if (fgets(buf, (int)size, p))
        buf[strcspn(buf, "\n")] = '\0';
    if (pclose(p) != 0 || !buf[0])
        snprintf(buf, size, "unknown");
}

int report_json(const char *path, const struct config *cfg)
{
    if (bench_mkdir_parents(path) != 0)
        return -1;
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    char cpu[256], date[64];
    bench_cpu_model(cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    struct utsname u;
    uname(&u);

    fprintf(f, "{\n  \"meta\": {\n    \"compiler\": ");
    bench_json_string(f, BENCH_COMPILER);
    fprintf(f, ",\n    \"flags\": ");
    bench_json_string(f, BENCH_CFLAGS);
    fprintf(f, ",\n    \"cpu\": ");
    bench_json_string(f, cpu);
    fprintf(f, ",\n    \"cpus_online\": %ld", sysconf(_SC_NPROCESSORS_ONLN));
    fprintf(f, ",\n    \"kernel\": ");
    bench_json_string(f, u.release);
    fprintf(f, ",\n    \"seed\": %llu", (unsigned long long)cfg->seed);
    fprintf(f, ",\n    \"date\": ");
    bench_json_string(f, date);
    char commit[128];
    commit_id(commit, sizeof commit);
    fprintf(f, ",\n    \"commit\": ");
    bench_json_string(f, commit);
    char reps[512];
    snprintf(reps, sizeof reps,
             "median of up to %d repetitions for N <= 1e6 and up to %d at "
             "N = 1e7 (and W5 at N >= 1e6); no new repetition starts once a "
             "job's repetitions have run %.1f s (%.1f s at 1e7), so slow jobs "
             "run fewer, at least one (see repetitions_cut_by_time_cap); MEM "
             "measured once",
             cfg->reps_small, cfg->reps_big, cfg->cap_small, cfg->cap_big);
    fprintf(f, ",\n    \"repetitions\": ");
    bench_json_string(f, reps);
    fprintf(f, ",\n    \"quick\": %s", cfg->quick ? "true" : "false");
    fprintf(f, ",\n    \"clock\": ");
    bench_json_string(f, "simulated: 1 tick = 1 ms, starting at 1000000");
    fprintf(f, ",\n    \"ops_per_repetition_w1_w2_floor\": %u", cfg->w12_ops);
    fprintf(f, ",\n    \"w4_advance_calls\": %u", cfg->w4_ticks);
    fprintf(f, ",\n    \"w5_ticks\": %u", cfg->w5_ticks);
    /* The workloads this program runs, in its order, with their titles:
     * what bench/common/results-md.py orders and names tables by. */
    fprintf(f, ",\n    \"workloads\": [");
    for (int w = 0; w < bench_nworkloads; w++) {
        fprintf(f, "%s\n      {\"name\": ", w ? "," : "");
        bench_json_string(f, bench_workloads[w].name);
        fprintf(f, ", \"title\": ");
        bench_json_string(f, bench_workloads[w].title);
        fputc('}', f);
    }
    fprintf(f, "\n    ]");
    for (int i = 0; i < nmeta; i++) {
        fprintf(f, ",\n    ");
        bench_json_string(f, meta[i].key);
        fprintf(f, ": %s", meta[i].value);
    }
    fprintf(f, ",\n    \"skipped\": [");
    for (int i = 0; i < nskips; i++) {
        fprintf(f, "%s\n      {\"impl\": ", i ? "," : "");
        bench_json_string(f, skips[i].impl);
        fprintf(f, ", \"workload\": ");
        bench_json_string(f, skips[i].workload);
        if (skips[i].n)
            fprintf(f, ", \"n\": %u", skips[i].n);
        fprintf(f, ", \"reason\": ");
        bench_json_string(f, skips[i].reason);
        fputc('}', f);
    }
    fprintf(f, "%s]\n  },\n  \"results\": [", nskips ? "\n    " : "");
    for (int i = 0; i < nresults; i++) {
        const struct result *r = &results[i];
        fprintf(f, "%s\n    {\"impl\": ", i ? "," : "");
        bench_json_string(f, r->impl);
        fprintf(f, ", \"workload\": ");
        bench_json_string(f, r->workload);
        fprintf(f, ", \"n\": %u, \"metric\": ", r->n);
        bench_json_string(f, r->metric);
        fprintf(f, ", \"value\": %.6g}", isfinite(r->value) ? r->value : 0.0);
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f);
}

/* ----------------------------------------------------------------- plot */

static const struct {
    const char *wl, *metric, *title;
} panels[] = {
    {"W1", "ns_per_op", "W1 churn: ns per cancel + arm"},
    {"W2", "ns_per_op",
     "W2 refresh: ns per re-arm (rota-arm, rota-store, libevent-common: "
     "other re-arm calls)"},
    {"W3", "ns_per_arm", "W3 storm: ns per arm"},
    {"W3", "ns_per_expiry", "W3 storm: ns per expiry"},
    {"W5", "ns_per_fire", "W5 periodic: ns per fire"},
    {"FLOOR", NULL, "FLOOR: ns per random access"},
};

/* The same colour for an implementation in every panel: its rank among
 * the implementations in the order results were added. */
static int impl_color(const char *impl)
{
    const char *seen[32];
    int count = 0;
    for (int i = 0; i < nresults; i++) {
        int k = 0;
        while (k < count && strcmp(seen[k], results[i].impl))
            k++;
        if (k == count && count < 32)
            seen[count++] = results[i].impl;
        if (!strcmp(results[i].impl, impl))
            return k % 12 + 1;
    }
    return 1;
}

void report_plot(const char *json_path)
{
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        printf("plot: gnuplot not installed, no PNG (apt-get install "
               "gnuplot-nox)\n");
        return;
    }
    char base[4096], dat[4200], gp[4200], png[4200];
    snprintf(base, sizeof base, "%s", json_path);
    char *dot = strrchr(base, '.');
    if (dot && !strchr(dot, '/'))
        *dot = '\0';
    snprintf(dat, sizeof dat, "%s.dat", base);
    snprintf(gp, sizeof gp, "%s.gp", base);
    snprintf(png, sizeof png, "%s.png", base);

    /* One data block per (panel, series): "N value" lines. */
    FILE *d = fopen(dat, "w"), *g = fopen(gp, "w");
    if (!d || !g) {
        printf("plot: cannot write %s or %s\n", dat, gp);
        if (d)
            fclose(d);
        if (g)
            fclose(g);
        return;
    }
    uint32_t ns[16];
    int nn = collect_ns(ns);
    /* What was measured where, in the title: a plot copied into a README
     * must say which commit, day and machine its figures are from. */
    char commit[128], cpu[256], day[32], where[512];
    commit_id(commit, sizeof commit);
    bench_cpu_model(cpu, sizeof cpu);
    time_t now = time(NULL);
    strftime(day, sizeof day, "%Y-%m-%d", gmtime(&now));
    snprintf(where, sizeof where, "%s, %s, %s (%ld CPUs)", commit, day, cpu,
             sysconf(_SC_NPROCESSORS_ONLN));
    for (char *c = where; *c; c++)
        if (*c == '\'')
            *c = ' ';
    fprintf(g,
            "set terminal pngcairo size 1500,900 font ',9' noenhanced\n"
            "set output '%s'\n"
            "set linetype 1 lc rgb '#d62728' lw 2 pt 7\n"
            "set linetype 2 lc rgb '#ff7f0e' lw 2 pt 5\n"
            "set linetype 3 lc rgb '#1f77b4' lw 1 pt 1\n"
            "set linetype 4 lc rgb '#17becf' lw 1 pt 2\n"
            "set linetype 5 lc rgb '#8c564b' lw 1 pt 4\n"
            "set linetype 6 lc rgb '#2ca02c' lw 1 pt 6\n"
            "set linetype 7 lc rgb '#9467bd' lw 1 pt 8\n"
            "set linetype 8 lc rgb '#7f7f7f' lw 1 pt 10\n"
            "set linetype 9 lc rgb '#bcbd22' lw 1 pt 12\n"
            "set linetype 10 lc rgb '#000000' lw 1 pt 3\n"
            "set linetype 11 lc rgb '#e377c2' lw 1 pt 9\n"
            "set linetype 12 lc rgb '#555555' lw 1 pt 11\n"
            "set multiplot layout 2,3 title 'rota_bench at %s: ns per "
            "operation vs N (log-log, lower is better; implementations: "
            "docs/BENCH.md)'\n"
            "set logscale xy\nset grid\nset key top left font ',8'\n"
            "set xlabel 'N (live timers)'\nset ylabel 'ns'\n"
            "set xrange [500:20000000]\n",
            png, where);
    int block = 0;
    for (size_t p = 0; p < sizeof panels / sizeof panels[0]; p++) {
        const char *series[40];
        const char *metrics[40];
        int count = 0;
        for (int i = 0; i < nresults && count < 40; i++) {
            const struct result *r = &results[i];
            if (strcmp(r->workload, panels[p].wl) ||
                (panels[p].metric && strcmp(r->metric, panels[p].metric)))
                continue;
            bool seen = false;
            for (int k = 0; k < count; k++)
                seen |= !strcmp(series[k], r->impl) &&
                        !strcmp(metrics[k], r->metric);
            if (!seen) {
                series[count] = r->impl;
                metrics[count++] = r->metric;
            }
        }
        fprintf(g, "set title '%s'\n", panels[p].title);
        if (count == 0) {
            /* A fixed y range: with none, gnuplot stops the whole
             * multiplot on a panel without points. */
            fprintf(g, "unset key\nset yrange [1:10]\n"
                       "set label 1 'not run' at graph 0.5, graph 0.5 center\n"
                       "plot 1/0 notitle\n"
                       "unset label 1\nset yrange [*:*]\nset key\n");
            continue;
        }
        fprintf(g, "plot ");
        for (int k = 0; k < count; k++) {
            for (int i = 0; i < nn; i++) {
                const struct result *r =
                    find(series[k], panels[p].wl, metrics[k], ns[i]);
                if (r && r->value > 0)
                    fprintf(d, "%u %g\n", ns[i], r->value);
            }
            fprintf(d, "\n\n");
            char title[96];
            if (panels[p].metric)
                snprintf(title, sizeof title, "%s", series[k]);
            else
                snprintf(title, sizeof title, "%s",
                         strcmp(metrics[k], "ns_per_access") ? "dependent"
                                                             : "independent");
            fprintf(g,
                    "%s'%s' index %d using 1:2 with linespoints lt %d "
                    "title '%s'",
                    k ? ", " : "", dat, block++,
                    panels[p].metric ? impl_color(series[k]) : k + 3, title);
        }
        fputc('\n', g);
    }
    fprintf(g, "unset multiplot\n");
    fclose(d);
    fclose(g);
    char cmd[8600];
    snprintf(cmd, sizeof cmd, "gnuplot '%s' 2>&1", gp);
    if (system(cmd) == 0)
        printf("plot: %s\n", png);
    else
        printf("plot: gnuplot failed on %s\n", gp);
}
