/* SPDX-License-Identifier: MIT */
/*
 * service_bench.c - rota_bench_service: workloads S1, S2 and S3 (docs/BENCH.md),
 * rota/service.h against the mutex + condvar heap2 service a user would
 * write (service_heap.c).  Unlike rota_bench these run on the real clock
 * and real threads: they measure the threading design, not the wheel.
 *
 *   S1  submission throughput.  N = 1e5 live timers, delays uniform in
 *       [1, 60000] ms, split evenly between P producer threads (P = 1, 2).
 *       Each op picks one of the producer's timers at random, cancels it
 *       and arms it again with a fresh delay (W1's churn), as two calls.
 *       Timed from a common start until every producer has done its ops
 *       and, for rota, the service thread has taken in every submission
 *       (rota_service_sync()), so queued work is not hidden.
 *       Metrics: pairs_per_sec, ns_per_pair (wall time / total pairs), and
 *       cpu_ns_per_pair (process CPU time / total pairs: every thread of the
 *       implementation included, and insensitive to other tenants of a
 *       shared machine, which the wall-clock figures are not).
 *   S2  firing lateness.  N = 1e5 timers armed at absolute deadlines now +
 *       uniform [1, 1000] ms; each callback reads CLOCK_MONOTONIC and
 *       records (now - deadline); callbacks on the timer thread (0 workers)
 *       or on 2 workers.  Metrics: late_p50_us, late_p99_us, late_max_us.
 *   S3  request timeouts, as a server arms them: T = 1, 2, 4 threads each
 *       arm a timeout of [50, 500] ms, work ~1 us, cancel; 1% fire.
 *       Against the heap and the floor of a core wheel per thread (see the
 *       S3 section).  Metrics: cpu_ns_per_req, lat_p50_ns, lat_p99_ns.
 *
 * Both implementations replay the same splitmix64 sequence (seed 42 unless
 * --seed), in the same process run, alternating per repetition so that load
 * from the rest of the machine falls on both; the median of the
 * repetitions is reported.  Callbacks count their fires and the run fails
 * loudly if a count is wrong.
 *
 * Output: a table on stdout and JSON rows in the format of
 * docs/BENCH.md ({"impl", "workload", "n", "metric", "value"}) in
 * build/bench/results-service.json (--json PATH).  Workloads are named
 * S1-1p, S1-2p (producers), S2-0w, S2-2w (workers) and S3-1t, S3-2t,
 * S3-4t (threads).
 *
 * Usage: rota_bench_service [--quick] [--seed N] [--reps N] [--json PATH]
 *                           [--only S1|S2|S3] [--impl rota|heap]
 */
#define _GNU_SOURCE
#include <rota.h>
#include <rota/service.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "benchutil.h"
#include "service_heap.h"
#include "splitmix.h"

#ifndef BENCH_COMPILER
#define BENCH_COMPILER "unknown"
#endif
#ifndef BENCH_CFLAGS
#define BENCH_CFLAGS "unknown"
#endif

#define MS UINT64_C(1000000)
#define MAX_ROWS 128
#define MAX_REPS 15

/* ------------------------------------------------------------ results */

struct row {
    const char *impl, *workload, *metric;
    uint32_t n;
    double value;
};

static struct row rows[MAX_ROWS];
static int nrows;

static void add_row(const char *impl, const char *wl, uint32_t n,
                    const char *metric, double value)
{
    if (nrows == MAX_ROWS)
        bench_die("too many result rows");
    rows[nrows++] = (struct row){impl, wl, metric, n, value};
}

static double row_value(const char *impl, const char *wl, const char *metric)
{
    for (int i = 0; i < nrows; i++)
        if (!strcmp(rows[i].impl, impl) && !strcmp(rows[i].workload, wl) &&
            !strcmp(rows[i].metric, metric))
            return rows[i].value;
    return 0;
}

static void read_line(const char *path, const char *prefix, char *out,
                      size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[512];
    snprintf(out, cap, "unknown");
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f) != NULL) {
        if (prefix == NULL || strncmp(line, prefix, strlen(prefix)) == 0) {
            char *s = prefix == NULL ? line : strchr(line, ':');
            s = s == NULL ? line : (prefix == NULL ? s : s + 1);
            while (*s == ' ' || *s == '\t')
                s++;
            size_t len = strcspn(s, "\n");
            if (len >= cap)
                len = cap - 1; /* truncate, on purpose */
            memcpy(out, s, len);
            out[len] = '\0';
            break;
        }
    }
    fclose(f);
}

/* ------------------------------------------------------------- shared */

struct config {
    uint64_t seed;
    int reps_s1, reps_s2;
    uint32_t s1_n, s1_ops; /* live timers; pairs per producer per rep */
    uint32_t s2_n;
    uint64_t s2_max_delay;
    int reps_s3;
    uint32_t s3_reqs; /* requests per thread per rep */
    bool quick;
    bool run_s1, run_s2, run_s3; /* --only S1 / S2 / S3: one workload */
    bool run_rota, run_heap;     /* --impl rota / heap: likewise */
};

static atomic_ullong fires;    /* every callback of any implementation */
static uint32_t s3_work_iters; /* S3's ~1 us of work, for the report */

/* A start line all producers (and the timing thread) cross together. */
struct barrier {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int waiting, needed;
    unsigned long long generation;
};

static void barrier_wait(struct barrier *b)
{
    pthread_mutex_lock(&b->mu);
    unsigned long long gen = b->generation;
    if (++b->waiting == b->needed) {
        b->waiting = 0;
        b->generation++;
        pthread_cond_broadcast(&b->cv);
    } else {
        while (gen == b->generation)
            pthread_cond_wait(&b->cv, &b->mu);
    }
    pthread_mutex_unlock(&b->mu);
}

/* ----------------------------------------------------------------- S1 */

struct s1_run {
    bool rota;
    struct rota_service *svc;
    struct hs_service *hs;
    struct hs_node *nodes;
    struct rota_service_handle *handles;
    uint32_t n, ops;
    unsigned producers;
    uint64_t seed;
    struct barrier start;
};

struct s1_producer {
    struct s1_run *run;
    unsigned id;
    pthread_t thread;
};

static void s1_rota_fn(struct rota_service *svc,
                       const struct rota_service_event *ev)
{
    (void)svc;
    (void)ev;
    atomic_fetch_add_explicit(&fires, 1, memory_order_relaxed);
}

static void s1_heap_fn(struct hs_node *node, uint64_t now)
{
    (void)node;
    (void)now;
    atomic_fetch_add_explicit(&fires, 1, memory_order_relaxed);
}

static uint64_t s1_delay(uint64_t *rng)
{
    return (1 + splitmix(rng) % 60000) * MS;
}

static void *s1_producer_main(void *arg)
{
    struct s1_producer *p = arg;
    struct s1_run *r = p->run;
    uint32_t share = r->n / r->producers, base = p->id * share;
    uint64_t rng = r->seed * 1000003u + p->id;

    barrier_wait(&r->start);
    if (r->rota) {
        for (uint32_t k = 0; k < r->ops; k++) {
            uint32_t i = base + (uint32_t)(splitmix(&rng) % share);
            rota_service_try_cancel(r->svc, r->handles[i]);
            if (rota_service_arm_in(r->svc, s1_delay(&rng), s1_rota_fn, NULL,
                                    &r->handles[i]) != 0)
                bench_die("S1: rota_service_arm_in failed");
        }
    } else {
        for (uint32_t k = 0; k < r->ops; k++) {
            uint32_t i = base + (uint32_t)(splitmix(&rng) % share);
            hs_cancel(r->hs, &r->nodes[i]);
            hs_arm(r->hs, &r->nodes[i], hs_now_ns() + s1_delay(&rng));
        }
    }
    barrier_wait(&r->start);
    return NULL;
}

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One repetition: pairs per second; process CPU ns per pair in *cpu. */
static double s1_once(const struct config *cfg, bool rota, unsigned producers,
                      int rep, double *cpu)
{
    struct s1_run r = {.rota = rota,
                       .n = cfg->s1_n,
                       .ops = cfg->s1_ops,
                       .producers = producers,
                       .seed = cfg->seed + (uint64_t)rep};
    struct s1_producer prod[2];
    uint64_t rng = cfg->seed ^ 0x5151;

    unsigned long long fires0 = atomic_load(&fires);
    pthread_mutex_init(&r.start.mu, NULL);
    pthread_cond_init(&r.start.cv, NULL);
    r.start.needed = (int)producers + 1;
    if (rota) {
        struct rota_service_config sc = {.initial_capacity = 2 * cfg->s1_n};
        if (rota_service_create(&r.svc, &sc) != 0)
            bench_die("S1: rota_service_create failed");
        r.handles = calloc(r.n, sizeof *r.handles);
        if (r.handles == NULL)
            bench_die("out of memory");
        for (uint32_t i = 0; i < r.n; i++)
            if (rota_service_arm_in(r.svc, s1_delay(&rng), s1_rota_fn, NULL,
                                    &r.handles[i]) != 0)
                bench_die("S1: rota_service_arm_in failed");
        rota_service_sync(r.svc);
    } else {
        r.nodes = calloc(r.n, sizeof *r.nodes);
        if (r.nodes == NULL)
            bench_die("out of memory");
        for (uint32_t i = 0; i < r.n; i++) {
            r.nodes[i].slot = HS_IDLE;
            r.nodes[i].fn = s1_heap_fn;
        }
        r.hs = hs_create(r.n, 0, r.nodes);
        if (r.hs == NULL)
            bench_die("S1: hs_create failed");
        for (uint32_t i = 0; i < r.n; i++)
            hs_arm(r.hs, &r.nodes[i], hs_now_ns() + s1_delay(&rng));
    }
    for (unsigned i = 0; i < producers; i++) {
        prod[i] = (struct s1_producer){&r, i, 0};
        pthread_create(&prod[i].thread, NULL, s1_producer_main, &prod[i]);
    }
    barrier_wait(&r.start);
    uint64_t t0 = hs_now_ns();
    double c0 = cpu_now();
    barrier_wait(&r.start);
    if (rota)
        rota_service_sync(r.svc); /* the service thread has caught up */
    uint64_t t1 = hs_now_ns();
    *cpu = (cpu_now() - c0) / ((double)producers * r.ops);
    for (unsigned i = 0; i < producers; i++)
        pthread_join(prod[i].thread, NULL);
    if (rota) {
        struct rota_service_stats st;
        rota_service_stats(r.svc, &st);
        if (st.armed != r.n + (uint64_t)producers * r.ops ||
            st.expired != atomic_load(&fires) - fires0 ||
            st.pending + st.expired + st.cancelled != st.armed)
            bench_die("S1: rota's counts do not add up");
        rota_service_destroy(r.svc);
        free(r.handles);
    } else {
        hs_destroy(r.hs);
        free(r.nodes);
    }
    pthread_cond_destroy(&r.start.cv);
    pthread_mutex_destroy(&r.start.mu);
    return (double)producers * r.ops / ((double)(t1 - t0) / 1e9);
}

static void run_s1(const struct config *cfg)
{
    for (unsigned p = 1; p <= 2; p++) {
        double v[2][MAX_REPS], c[2][MAX_REPS];
        for (int rep = 0; rep < cfg->reps_s1; rep++) {
            /* Alternate the order so drifting load hits both. */
            bool first_rota = rep % 2 == 0;
            int a = first_rota ? 0 : 1, b = 1 - a;
            v[a][rep] = c[a][rep] = v[b][rep] = c[b][rep] = 0;
            if (first_rota ? cfg->run_rota : cfg->run_heap)
                v[a][rep] = s1_once(cfg, first_rota, p, rep, &c[a][rep]);
            if (first_rota ? cfg->run_heap : cfg->run_rota)
                v[b][rep] = s1_once(cfg, !first_rota, p, rep, &c[b][rep]);
        }
        const char *wl = p == 1 ? "S1-1p" : "S1-2p";
        for (int impl = 0; impl < 2; impl++) {
            if (!(impl == 0 ? cfg->run_rota : cfg->run_heap))
                continue;
            double m = bench_median(v[impl], cfg->reps_s1);
            const char *name = impl == 0 ? "rota-service" : "mutex-heap2";
            add_row(name, wl, cfg->s1_n, "pairs_per_sec", m);
            add_row(name, wl, cfg->s1_n, "ns_per_pair", 1e9 / m);
            add_row(name, wl, cfg->s1_n, "cpu_ns_per_pair",
                    bench_median(c[impl], cfg->reps_s1));
        }
    }
}

/* ----------------------------------------------------------------- S2 */

static uint64_t *s2_deadline;
static uint64_t *s2_late;
static atomic_uint s2_count;

static void s2_record(uint32_t id)
{
    uint64_t now = hs_now_ns();
    if (s2_late[id] != UINT64_MAX)
        bench_die("S2: a timer fired twice");
    s2_late[id] = now > s2_deadline[id] ? now - s2_deadline[id] : 0;
    atomic_fetch_add_explicit(&s2_count, 1, memory_order_release);
    atomic_fetch_add_explicit(&fires, 1, memory_order_relaxed);
}

static void s2_rota_fn(struct rota_service *svc,
                       const struct rota_service_event *ev)
{
    (void)svc;
    s2_record((uint32_t)(uintptr_t)ev->arg);
}

static struct hs_node *s2_nodes;

static void s2_heap_fn(struct hs_node *node, uint64_t now)
{
    (void)now;
    s2_record((uint32_t)(node - s2_nodes));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* One repetition: p50, p99, max lateness in us. */
static void s2_once(const struct config *cfg, bool rota, unsigned workers,
                    int rep, double out[3])
{
    uint32_t n = cfg->s2_n;
    uint64_t rng = cfg->seed * 7919u + (uint64_t)rep;
    struct rota_service *svc = NULL;
    struct hs_service *hs = NULL;

    atomic_store(&s2_count, 0);
    memset(s2_late, 0xff, (size_t)n * sizeof *s2_late);
    if (rota) {
        struct rota_service_config sc = {.workers = workers,
                                         .initial_capacity = n};
        if (rota_service_create(&svc, &sc) != 0)
            bench_die("S2: rota_service_create failed");
    } else {
        for (uint32_t i = 0; i < n; i++)
            s2_nodes[i] = (struct hs_node){.slot = HS_IDLE, .fn = s2_heap_fn};
        hs = hs_create(n, workers, s2_nodes);
        if (hs == NULL)
            bench_die("S2: hs_create failed");
    }
    for (uint32_t i = 0; i < n; i++) {
        uint64_t delay = (1 + splitmix(&rng) % cfg->s2_max_delay) * MS;
        s2_deadline[i] = hs_now_ns() + delay;
        if (rota) {
            if (rota_service_arm_at(svc, s2_deadline[i], s2_rota_fn,
                                    (void *)(uintptr_t)i, NULL) != 0)
                bench_die("S2: rota_service_arm_at failed");
        } else {
            hs_arm(hs, &s2_nodes[i], s2_deadline[i]);
        }
    }
    uint64_t give_up = hs_now_ns() + (cfg->s2_max_delay + 10000) * MS;
    while (atomic_load_explicit(&s2_count, memory_order_acquire) < n) {
        if (hs_now_ns() > give_up)
            bench_die(
                "S2: timers did not all fire within 10 s of their deadline");
        struct timespec ts = {0, 2 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (rota)
        rota_service_destroy(svc);
    else
        hs_destroy(hs);
    qsort(s2_late, n, sizeof *s2_late, cmp_u64);
    out[0] = (double)s2_late[n / 2] / 1e3;
    out[1] = (double)s2_late[(uint64_t)n * 99 / 100] / 1e3;
    out[2] = (double)s2_late[n - 1] / 1e3;
}

static void run_s2(const struct config *cfg)
{
    s2_deadline = calloc(cfg->s2_n, sizeof *s2_deadline);
    s2_late = calloc(cfg->s2_n, sizeof *s2_late);
    s2_nodes = calloc(cfg->s2_n, sizeof *s2_nodes);
    if (s2_deadline == NULL || s2_late == NULL || s2_nodes == NULL)
        bench_die("out of memory");
    static const char *metric[3] = {"late_p50_us", "late_p99_us",
                                    "late_max_us"};
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        double v[2][3][MAX_REPS];
        for (int rep = 0; rep < cfg->reps_s2; rep++) {
            for (int k = 0; k < 2; k++) {
                bool rota = (rep + k) % 2 == 0;
                double out[3] = {0, 0, 0};
                if (rota ? cfg->run_rota : cfg->run_heap)
                    s2_once(cfg, rota, workers, rep, out);
                for (int m = 0; m < 3; m++)
                    v[rota ? 0 : 1][m][rep] = out[m];
            }
        }
        const char *wl = workers == 0 ? "S2-0w" : "S2-2w";
        for (int impl = 0; impl < 2; impl++)
            for (int m = 0;
                 m < 3 && (impl == 0 ? cfg->run_rota : cfg->run_heap); m++)
                add_row(impl == 0 ? "rota-service" : "mutex-heap2", wl,
                        cfg->s2_n, metric[m],
                        bench_median(v[impl][m], cfg->reps_s2));
    }
    free(s2_deadline);
    free(s2_late);
    free(s2_nodes);
}

/* ----------------------------------------------------------------- S3 */

/*
 * S3: the request timeout of a server.  T threads each run requests: arm a
 * timeout of uniform [50, 500] ms, do ~1 us of work, cancel; 1% of the
 * timeouts are left to fire (the request hangs).  Four implementations:
 *   none              the same loop without a timer: the baseline that the
 *                     CPU figures are net of (the work and the clock reads
 *                     that time the calls);
 *   rota-service      one service shared by the T threads (arm_in,
 *                     try_cancel);
 *   mutex-heap2       one heap service shared by the T threads;
 *   wheel-per-thread  the floor: a core wheel per thread, shared with no
 *                     one, advanced by its thread after each request (what
 *                     per-thread wheels cost a program that can use them).
 * A request's timer lives in its context; a context whose timer is left to
 * fire is not reused.  Each arm that reads the clock does so inside the
 * timed call.  Metrics: cpu_ns_per_req (process CPU, every thread, net of
 * the loop: see below), cpu_gross_ns_per_req (the same, not net),
 * lat_p99_ns (the worst thread's p99 of arm + cancel time) and lat_p50_ns
 * (likewise, p50).
 *
 * The timer is ~10% of a request's CPU, so the net figure is a small
 * difference of two large ones.  Taken as the difference of two medians
 * measured minutes apart, it went negative when the machine's load moved
 * between them: on a shared VM the speed of the work itself varies by
 * more than a timer costs.  So each run also times every request's work,
 * and its figure is its CPU per request less the median work time of the
 * same run; every run of an implementation is paired with a run of
 * `none` just before it, the net figure is the median of the pairs'
 * differences, and the gross figure is reported next to it.
 */
enum s3_impl { S3_NONE, S3_ROTA, S3_HEAP, S3_FLOOR, S3_IMPLS };
static const char *const s3_name[S3_IMPLS] = {
    "none", "rota-service", "mutex-heap2", "wheel-per-thread"};
#define S3_MAX_T 4

struct s3_run {
    enum s3_impl impl;
    struct rota_service *svc;
    struct hs_service *hs;
    struct hs_node *nodes; /* heap: ctx_per contexts per thread */
    uint32_t reqs, ctx_per;
    unsigned threads;
    uint64_t seed;
    uint32_t work_iters;
    struct barrier start;
};

struct s3_thread {
    struct s3_run *run;
    unsigned id;
    pthread_t thread;
    uint64_t *lat;
    uint64_t *work; /* each request's work, ns */
    uint64_t left;  /* timers this thread left to fire, or found fired */
};

static atomic_ullong s3_sink;

/* ~1 us of work: a chain of dependent multiply-adds. */
static uint64_t s3_work(uint32_t iters, uint64_t x)
{
    for (uint32_t i = 0; i < iters; i++)
        x = x * 6364136223846793005u + 1442695040888963407u;
    return x;
}

static uint32_t s3_calibrate(void)
{
    uint32_t iters = 1u << 20;
    uint64_t best = UINT64_MAX;
    for (int k = 0; k < 5; k++) {
        uint64_t t0 = hs_now_ns();
        atomic_fetch_add(&s3_sink, s3_work(iters, (uint64_t)k));
        uint64_t t = hs_now_ns() - t0;
        best = t < best ? t : best;
    }
    uint64_t per_us = (uint64_t)iters * 1000u / (best != 0 ? best : 1);
    return per_us != 0 ? (uint32_t)per_us : 1;
}

static void s3_floor_fn(struct rota_wheel *wheel, struct rota_timer *timer,
                        uint64_t late)
{
    (void)wheel;
    (void)timer;
    (void)late;
    atomic_fetch_add_explicit(&fires, 1, memory_order_relaxed);
}

static void *s3_thread_main(void *arg)
{
    struct s3_thread *th = arg;
    struct s3_run *r = th->run;
    uint64_t rng = r->seed * 2654435761u + th->id;
    uint64_t x = th->id;
    struct rota_service_handle *handles = NULL;
    struct rota_timer *timers = NULL;
    struct rota_wheel wheel;
    struct hs_node *nodes = r->nodes + (size_t)th->id * r->ctx_per;
    uint32_t cur = 0;

    if (r->impl == S3_ROTA)
        handles = calloc(r->ctx_per, sizeof *handles);
    if (r->impl == S3_FLOOR) {
        timers = calloc(r->ctx_per, sizeof *timers);
        if (timers != NULL)
            for (uint32_t i = 0; i < r->ctx_per; i++)
                rota_timer_init(&timers[i], s3_floor_fn);
        rota_wheel_init(&wheel, hs_now_ns() / 1000u);
    }
    if ((r->impl == S3_ROTA && handles == NULL) ||
        (r->impl == S3_FLOOR && timers == NULL))
        bench_die("out of memory");
    barrier_wait(&r->start);
    for (uint32_t k = 0; k < r->reqs; k++) {
        uint64_t delay = (50 + splitmix(&rng) % 451) * MS;
        bool leave = splitmix(&rng) % 100 == 0;
        uint64_t t0 = hs_now_ns();
        switch (r->impl) {
        case S3_ROTA:
            if (rota_service_arm_in(r->svc, delay, s1_rota_fn, NULL,
                                    &handles[cur]) != 0)
                bench_die("S3: rota_service_arm_in failed");
            break;
        case S3_HEAP:
            hs_arm(r->hs, &nodes[cur], hs_now_ns() + delay);
            break;
        case S3_FLOOR: {
            uint64_t at = hs_now_ns() + delay;
            rota_timer_arm_at(&wheel, &timers[cur], at / 1000u + 1u);
            break;
        }
        default:
            break;
        }
        uint64_t t1 = hs_now_ns();
        x = s3_work(r->work_iters, x);
        uint64_t t2 = hs_now_ns();
        if (!leave) {
            switch (r->impl) {
            /* A thread preempted for 50 ms on a loaded machine finds its
             * timer fired: counted with those left to fire. */
            case S3_ROTA:
                if (rota_service_try_cancel(r->svc, handles[cur]) !=
                    ROTA_SERVICE_CANCELLED)
                    th->left++;
                break;
            case S3_HEAP:
                if (!hs_cancel(r->hs, &nodes[cur]))
                    th->left++;
                break;
            case S3_FLOOR:
                if (rota_timer_cancel(&wheel, &timers[cur]) != 1)
                    th->left++;
                break;
            default:
                break;
            }
        }
        uint64_t t3 = hs_now_ns();
        th->lat[k] = (t1 - t0) + (t3 - t2);
        th->work[k] = t2 - t1;
        if (r->impl == S3_FLOOR)
            rota_wheel_advance(&wheel, t3 / 1000u);
        if (leave) {
            th->left++;
            if (++cur == r->ctx_per)
                bench_die("S3: out of request contexts");
        }
    }
    barrier_wait(&r->start);
    if (r->impl == S3_FLOOR) { /* fire what was left, for the count */
        rota_wheel_advance(&wheel, UINT64_MAX / 2);
        if (rota_wheel_count(&wheel) != 0)
            bench_die("S3: the floor's wheel kept timers");
    }
    atomic_fetch_add(&s3_sink, x);
    free(handles);
    free(timers);
    return NULL;
}

/* One repetition: CPU ns per request (not net), the worst thread's p50
 * and p99 of arm + cancel ns, and CPU ns per request less the median time
 * of one request's work in this run (averaged over the threads). */
static void s3_once(const struct config *cfg, enum s3_impl impl,
                    unsigned threads, int rep, uint32_t work_iters,
                    double out[4])
{
    struct s3_run r = {.impl = impl,
                       .reqs = cfg->s3_reqs,
                       .ctx_per = cfg->s3_reqs / 50 + 64,
                       .threads = threads,
                       .seed = cfg->seed + (uint64_t)rep,
                       .work_iters = work_iters};
    struct s3_thread th[S3_MAX_T];
    unsigned long long fires0 = atomic_load(&fires);

    pthread_mutex_init(&r.start.mu, NULL);
    pthread_cond_init(&r.start.cv, NULL);
    r.start.needed = (int)threads + 1;
    r.nodes = calloc((size_t)threads * r.ctx_per, sizeof *r.nodes);
    if (r.nodes == NULL)
        bench_die("out of memory");
    for (size_t i = 0; i < (size_t)threads * r.ctx_per; i++)
        r.nodes[i] = (struct hs_node){.slot = HS_IDLE, .fn = s1_heap_fn};
    if (impl == S3_ROTA && rota_service_create(&r.svc, NULL) != 0)
        bench_die("S3: rota_service_create failed");
    if (impl == S3_HEAP) {
        r.hs = hs_create(threads * r.ctx_per, 0, r.nodes);
        if (r.hs == NULL)
            bench_die("S3: hs_create failed");
    }
    for (unsigned i = 0; i < threads; i++) {
        th[i] = (struct s3_thread){&r,
                                   i,
                                   0,
                                   calloc(r.reqs, sizeof(uint64_t)),
                                   calloc(r.reqs, sizeof(uint64_t)),
                                   0};
        if (th[i].lat == NULL || th[i].work == NULL)
            bench_die("out of memory");
        pthread_create(&th[i].thread, NULL, s3_thread_main, &th[i]);
    }
    barrier_wait(&r.start);
    double c0 = cpu_now();
    barrier_wait(&r.start);
    if (impl == S3_ROTA)
        rota_service_sync(r.svc);
    double c1 = cpu_now();
    uint64_t left = 0;
    for (unsigned i = 0; i < threads; i++) {
        pthread_join(th[i].thread, NULL);
        left += th[i].left;
    }
    if (impl != S3_NONE) { /* every timer left must fire, once */
        uint64_t give_up = hs_now_ns() + 5000 * MS;
        while (atomic_load(&fires) - fires0 < left) {
            if (hs_now_ns() > give_up)
                bench_die("S3: timers left to fire did not fire");
            struct timespec ts = {0, 2 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    if (impl == S3_ROTA) {
        struct rota_service_stats st;
        rota_service_sync(r.svc);
        rota_service_stats(r.svc, &st);
        if (st.armed != (uint64_t)threads * r.reqs || st.expired != left ||
            st.cancelled != st.armed - left || st.pending != 0)
            bench_die("S3: rota's counts do not add up");
        rota_service_destroy(r.svc);
    }
    hs_destroy(r.hs);
    if (atomic_load(&fires) - fires0 != (impl == S3_NONE ? 0 : left))
        bench_die("S3: a timer fired twice, or one cancelled fired");
    out[0] = (c1 - c0) / ((double)threads * r.reqs);
    out[1] = out[2] = 0;
    double work = 0;
    for (unsigned i = 0; i < threads; i++) {
        qsort(th[i].lat, r.reqs, sizeof(uint64_t), cmp_u64);
        double p50 = (double)th[i].lat[r.reqs / 2];
        double p99 = (double)th[i].lat[(uint64_t)r.reqs * 99 / 100];
        out[1] = p50 > out[1] ? p50 : out[1];
        out[2] = p99 > out[2] ? p99 : out[2];
        free(th[i].lat);
        qsort(th[i].work, r.reqs, sizeof(uint64_t), cmp_u64);
        work += (double)th[i].work[r.reqs / 2] / threads;
        free(th[i].work);
    }
    out[3] = out[0] - work;
    free(r.nodes);
    pthread_cond_destroy(&r.start.cv);
    pthread_mutex_destroy(&r.start.mu);
}

static void run_s3(const struct config *cfg)
{
    static const unsigned ts[3] = {1, 2, 4};
    uint32_t iters = s3_calibrate();
    s3_work_iters = iters;
    for (int t = 0; t < 3; t++) {
        /* v[impl][0]: gross CPU; [1], [2]: latency; [3]: CPU net of the
         * `none` run paired with it.  none's own rows: every paired run. */
        double v[S3_IMPLS][4][MAX_REPS * S3_IMPLS];
        int nv[S3_IMPLS] = {0};
        memset(v, 0, sizeof v);
        for (int rep = 0; rep < cfg->reps_s3; rep++) {
            /* Rotate the order so drifting load hits all of them. */
            for (int k = 0; k < S3_IMPLS; k++) {
                int impl = (rep + k) % S3_IMPLS;
                if (impl == S3_NONE || (impl == S3_ROTA && !cfg->run_rota) ||
                    (impl == S3_HEAP && !cfg->run_heap))
                    continue;
                double base[4], out[4];
                s3_once(cfg, S3_NONE, ts[t], rep, iters, base);
                s3_once(cfg, (enum s3_impl)impl, ts[t], rep, iters, out);
                for (int m = 0; m < 3; m++) {
                    v[S3_NONE][m][nv[S3_NONE]] = base[m];
                    v[impl][m][nv[impl]] = out[m];
                }
                v[impl][3][nv[impl]++] = out[3] - base[3];
                nv[S3_NONE]++;
            }
        }
        static const char *const wl[3] = {"S3-1t", "S3-2t", "S3-4t"};
        for (int impl = 0; impl < S3_IMPLS; impl++) {
            if (nv[impl] == 0)
                continue;
            double gross = bench_median(v[impl][0], nv[impl]);
            add_row(s3_name[impl], wl[t], cfg->s3_reqs, "cpu_ns_per_req",
                    impl == S3_NONE ? gross
                                    : bench_median(v[impl][3], nv[impl]));
            add_row(s3_name[impl], wl[t], cfg->s3_reqs, "cpu_gross_ns_per_req",
                    gross);
            add_row(s3_name[impl], wl[t], cfg->s3_reqs, "lat_p50_ns",
                    bench_median(v[impl][1], nv[impl]));
            add_row(s3_name[impl], wl[t], cfg->s3_reqs, "lat_p99_ns",
                    bench_median(v[impl][2], nv[impl]));
        }
    }
}

/* ------------------------------------------------------------- report */

static void print_s1(const struct config *cfg)
{
    printf("\nS1 submission throughput: arm + cancel pairs per second, "
           "N = %u live timers, median of %d\n",
           cfg->s1_n, cfg->reps_s1);
    printf("  %-10s %16s %16s %8s   %s\n", "producers", "rota-service",
           "mutex-heap2", "ratio", "CPU ns per pair (rota / heap)");
    for (int p = 1; p <= 2; p++) {
        const char *wl = p == 1 ? "S1-1p" : "S1-2p";
        double a = row_value("rota-service", wl, "pairs_per_sec");
        double b = row_value("mutex-heap2", wl, "pairs_per_sec");
        printf("  %-10d %13.2f M/s %13.2f M/s %7.2fx   %.0f / %.0f\n", p,
               a / 1e6, b / 1e6, a / b,
               row_value("rota-service", wl, "cpu_ns_per_pair"),
               row_value("mutex-heap2", wl, "cpu_ns_per_pair"));
    }
}

static void print_s2(const struct config *cfg)
{
    printf("\nS2 firing lateness in us (now - deadline at the callback), N = "
           "%u timers, delays 1..%" PRIu64 " ms, median of %d\n",
           cfg->s2_n, cfg->s2_max_delay, cfg->reps_s2);
    printf("  %-8s %-14s %10s %10s %10s\n", "workers", "impl", "p50", "p99",
           "max");
    for (int w = 0; w <= 2; w += 2) {
        const char *wl = w == 0 ? "S2-0w" : "S2-2w";
        for (int impl = 0; impl < 2; impl++) {
            const char *name = impl == 0 ? "rota-service" : "mutex-heap2";
            printf("  %-8d %-14s %10.1f %10.1f %10.1f\n", w, name,
                   row_value(name, wl, "late_p50_us"),
                   row_value(name, wl, "late_p99_us"),
                   row_value(name, wl, "late_max_us"));
        }
    }
}

static void print_s3(const struct config *cfg)
{
    static const char *const wl[3] = {"S3-1t", "S3-2t", "S3-4t"};
    printf("\nS3 request timeouts: arm [50, 500] ms, ~1 us of work (%u "
           "iterations), cancel; 1%% fire; %u requests per thread, median of "
           "%d\n",
           s3_work_iters, cfg->s3_reqs, cfg->reps_s3);
    printf("  CPU ns per request, every thread, net of a run of the loop "
           "without a timer paired with each run (median of the "
           "differences; gross in brackets; none: %.0f / %.0f / %.0f ns at "
           "T = 1 / 2 / 4)\n",
           row_value("none", wl[0], "cpu_ns_per_req"),
           row_value("none", wl[1], "cpu_ns_per_req"),
           row_value("none", wl[2], "cpu_ns_per_req"));
    printf("  %-3s %14s %14s %17s %12s %12s\n", "T", "rota-service",
           "mutex-heap2", "wheel-per-thread", "rota/floor", "rota/heap");
    for (int t = 0; t < 3; t++) {
        double a = row_value("rota-service", wl[t], "cpu_ns_per_req");
        double b = row_value("mutex-heap2", wl[t], "cpu_ns_per_req");
        double c = row_value("wheel-per-thread", wl[t], "cpu_ns_per_req");
        printf("  %-3d %5.0f (%6.0f) %5.0f (%6.0f) %8.0f (%6.0f) %11.2fx "
               "%11.2fx\n",
               1 << t, a,
               row_value("rota-service", wl[t], "cpu_gross_ns_per_req"), b,
               row_value("mutex-heap2", wl[t], "cpu_gross_ns_per_req"), c,
               row_value("wheel-per-thread", wl[t], "cpu_gross_ns_per_req"),
               a / c, a / b);
    }
    printf("  arm + cancel ns per request, p99 of the worst thread (p50)\n");
    printf("  %-3s %14s %14s %17s %12s %12s\n", "T", "rota-service",
           "mutex-heap2", "wheel-per-thread", "rota/floor", "rota/heap");
    for (int t = 0; t < 3; t++) {
        double a = row_value("rota-service", wl[t], "lat_p99_ns");
        double b = row_value("mutex-heap2", wl[t], "lat_p99_ns");
        double c = row_value("wheel-per-thread", wl[t], "lat_p99_ns");
        printf("  %-3d %7.0f (%4.0f) %7.0f (%4.0f) %10.0f (%4.0f) %11.2fx "
               "%11.2fx\n",
               1 << t, a, row_value("rota-service", wl[t], "lat_p50_ns"), b,
               row_value("mutex-heap2", wl[t], "lat_p50_ns"), c,
               row_value("wheel-per-thread", wl[t], "lat_p50_ns"), a / c,
               a / b);
    }
}

static void print_table(const struct config *cfg, const char *load0,
                        const char *load1)
{
    if (cfg->run_s1)
        print_s1(cfg);
    if (cfg->run_s2)
        print_s2(cfg);
    if (cfg->run_s3)
        print_s3(cfg);
    printf("\n");
    printf("load average before / after: %s / %s\n", load0, load1);
}

static int write_json(const char *path, const struct config *cfg,
                      const char *load0, const char *load1)
{
    char cpu[256], date[64], kernel[128];
    struct utsname u;
    time_t t = time(NULL);
    read_line("/proc/cpuinfo", "model name", cpu, sizeof cpu);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    snprintf(kernel, sizeof kernel, "%s",
             uname(&u) == 0 ? u.release : "unknown");
    (void)bench_mkdir_parents(path);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "rota_bench_service: cannot write %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    fprintf(f, "{\n  \"meta\": {\n    \"compiler\": ");
    bench_json_string(f, BENCH_COMPILER);
    fprintf(f, ",\n    \"flags\": ");
    bench_json_string(f, BENCH_CFLAGS);
    fprintf(f, ",\n    \"cpu\": ");
    bench_json_string(f, cpu);
    fprintf(f, ",\n    \"cpus_online\": %ld", sysconf(_SC_NPROCESSORS_ONLN));
    fprintf(f, ",\n    \"kernel\": ");
    bench_json_string(f, kernel);
    fprintf(f, ",\n    \"seed\": %" PRIu64, cfg->seed);
    fprintf(f, ",\n    \"date\": ");
    bench_json_string(f, date);
    /* Order and titles for bench/common/results-md.py. */
    static const char *const titles[][2] = {
        {"S1-1p", "S1 threaded service, 1 producer: arm + cancel pairs"},
        {"S1-2p", "S1 threaded service, 2 producers: arm + cancel pairs"},
        {"S2-0w", "S2 firing lateness, callbacks on the service thread"},
        {"S2-2w", "S2 firing lateness, 2 workers"},
    };
    fprintf(f, ",\n    \"workloads\": [");
    for (size_t i = 0; i < sizeof titles / sizeof titles[0]; i++) {
        fprintf(f, "%s\n      {\"name\": ", i ? "," : "");
        bench_json_string(f, titles[i][0]);
        fprintf(f, ", \"title\": ");
        bench_json_string(f, titles[i][1]);
        fputc('}', f);
    }
    fprintf(f, "\n    ]");
    fprintf(f, ",\n    \"repetitions\": ");
    bench_json_string(f,
                      "median of the repetitions; implementations alternate");
    fprintf(f,
            ",\n    \"repetitions_s1\": %d,\n    \"repetitions_s2\": %d"
            ",\n    \"repetitions_s3\": %d",
            cfg->reps_s1, cfg->reps_s2, cfg->reps_s3);
    fprintf(f, ",\n    \"quick\": %s", cfg->quick ? "true" : "false");
    fprintf(f, ",\n    \"clock\": ");
    bench_json_string(f, "real: CLOCK_MONOTONIC (S1, S2, S3 run real threads)");
    fprintf(f, ",\n    \"s1_pairs_per_producer\": %u", cfg->s1_ops);
    fprintf(f, ",\n    \"s2_max_delay_ms\": %" PRIu64, cfg->s2_max_delay);
    fprintf(f, ",\n    \"s3_requests_per_thread\": %u", cfg->s3_reqs);
    fprintf(f, ",\n    \"s3_work_iterations\": %u", s3_work_iters);
    fprintf(f, ",\n    \"loadavg_before\": ");
    bench_json_string(f, load0);
    fprintf(f, ",\n    \"loadavg_after\": ");
    bench_json_string(f, load1);
    fprintf(f, ",\n    \"skipped\": []\n  },\n  \"results\": [");
    for (int i = 0; i < nrows; i++) {
        fprintf(f, "%s\n    {\"impl\": ", i ? "," : "");
        bench_json_string(f, rows[i].impl);
        fprintf(f, ", \"workload\": ");
        bench_json_string(f, rows[i].workload);
        fprintf(f, ", \"n\": %u, \"metric\": ", rows[i].n);
        bench_json_string(f, rows[i].metric);
        fprintf(f, ", \"value\": %.6g}", rows[i].value);
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    bench_program = "rota_bench_service";
    struct config cfg = {.seed = 42,
                         .reps_s1 = 5,
                         .reps_s2 = 3,
                         .s1_n = 100000,
                         .s1_ops = 2000000,
                         .s2_n = 100000,
                         .s2_max_delay = 1000,
                         .reps_s3 = 3,
                         .s3_reqs = 200000,
                         .run_s1 = true,
                         .run_s2 = true,
                         .run_s3 = true,
                         .run_rota = true,
                         .run_heap = true};
    const char *json = "build/bench/results-service.json";
    int reps = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            cfg.quick = true;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            cfg.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc &&
                 (!strcmp(argv[i + 1], "S1") || !strcmp(argv[i + 1], "S2") ||
                  !strcmp(argv[i + 1], "S3"))) {
            i++;
            cfg.run_s1 = !strcmp(argv[i], "S1");
            cfg.run_s2 = !strcmp(argv[i], "S2");
            cfg.run_s3 = !strcmp(argv[i], "S3");
        } else if (!strcmp(argv[i], "--impl") && i + 1 < argc &&
                   (!strcmp(argv[i + 1], "rota") ||
                    !strcmp(argv[i + 1], "heap"))) {
            cfg.run_rota = !strcmp(argv[++i], "rota");
            cfg.run_heap = !cfg.run_rota;
        } else {
            fprintf(stderr,
                    "usage: %s [--quick] [--seed N] [--reps N] "
                    "[--json PATH] [--only S1|S2|S3] [--impl rota|heap]\n",
                    argv[0]);
            return 2;
        }
    }
    if (cfg.quick) {
        cfg.reps_s1 = 3;
        cfg.reps_s2 = 1;
        cfg.s1_ops = 200000;
        cfg.s2_n = 20000;
        cfg.s2_max_delay = 200;
        cfg.reps_s3 = 1;
        cfg.s3_reqs = 20000;
    }
    if (reps > 0)
        cfg.reps_s1 = cfg.reps_s2 = cfg.reps_s3 =
            reps < MAX_REPS ? reps : MAX_REPS;

    char load0[128], load1[128];
    read_line("/proc/loadavg", NULL, load0, sizeof load0);
    printf("rota_bench_service: %s, %s; seed %" PRIu64 "%s\n", BENCH_COMPILER,
           BENCH_CFLAGS, cfg.seed, cfg.quick ? " (quick)" : "");
    fflush(stdout);
    if (cfg.run_s1)
        run_s1(&cfg);
    if (cfg.run_s2)
        run_s2(&cfg);
    if (cfg.run_s3)
        run_s3(&cfg);
    read_line("/proc/loadavg", NULL, load1, sizeof load1);
    print_table(&cfg, load0, load1);
    if (write_json(json, &cfg, load0, load1) != 0)
        return 1;
    printf("results written to %s\n", json);
    return 0;
}
