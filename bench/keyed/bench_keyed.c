/* SPDX-License-Identifier: MIT */
/*
 * bench_keyed.c - workload W6 (docs/BENCH.md): go-zero-style TTL cache
 * timers by key, rota/keyed.h against the in-tree `hashed-rounds` baseline
 * (keyed_rounds.c).
 *
 *   bench_keyed [--quick] [--seed S] [--ops M] [--n N1,N2,...] [--json PATH]
 *               [--map-seed K]
 *
 * W6: N keys (8-byte ids) are set first (setup, not timed).  Then each op
 * is set (70%), move (20%) or remove (10%) on a random key with a TTL
 * uniform in [1, 60000]; the simulated clock (1 tick = 1 ms, starting at
 * 1,000,000) advances one tick every 1,000 ops and due keys expire (the
 * callback counts).  Metric: ns per op, the advances and expiries included.
 * One splitmix64 stream (seed 42 unless --seed) drives every choice, and
 * every implementation replays the identical stream; the repetitions of
 * the implementations are interleaved in one process, the median of 3 is
 * reported, and the run fails loudly if the implementations disagree on
 * any count (expired keys, moves and removes that found their key, keys
 * left).  Bytes per key: the growth of RSS over one implementation's
 * setup; freed memory is given back (malloc_trim) after each size, or the
 * next size's first implementation would reuse the previous sizes' heap
 * without growing RSS and report too few bytes (it did: 88 instead of
 * rota's real 104 at N = 1e6 when run after 1e3 and 1e5).  rota's map
 * draws its hash seed from getrandom() unless --map-seed K derives it from
 * K (counts.sh: instruction counts then repeat exactly).
 */
#define _GNU_SOURCE
#include "benchutil.h"
#include "keyed_bench.h"
#include "splitmix.h"

#include <inttypes.h>
#include <stdio.h>
#if defined(__GLIBC__)
#include <malloc.h> /* malloc_trim */
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BENCH_CFLAGS
#define BENCH_CFLAGS "unknown"
#endif

#define START_TIME 1000000u
#define MAX_TTL 60000u
#define OPS_PER_TICK 1000u
#define REPS 3

static const struct keyed_impl *const impls[] = {&keyed_rota,
                                                 &keyed_hashed_rounds};
#define NIMPL (sizeof impls / sizeof impls[0])

static unsigned char map_seed[16];
const unsigned char *keyed_map_seed; /* keyed_bench.h */

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* One implementation's state in a run: its own copy of the stream. */
struct lane {
    const struct keyed_impl *im;
    void *h;
    uint64_t rng, now, since;
    uint64_t expired, moved, removed, missed_moves, missed_removes;
    double ns[REPS];
};

static void setup(struct lane *l, uint64_t n, uint64_t seed)
{
    uint64_t rng = seed ^ UINT64_C(0x5e7a9);
    l->now = START_TIME;
    l->h = l->im->create(l->now, &l->expired);
    for (uint64_t k = 0; k < n; k++)
        l->im->set(l->h, k, 1 + splitmix(&rng) % MAX_TTL);
}

/* Out of line: counts.sh counts what runs inside it (--toggle-collect). */
static __attribute__((noinline)) double run_ops(struct lane *l, uint64_t n,
                                                uint64_t ops)
{
    const struct keyed_impl *im = l->im;
    void *h = l->h;
    double t0 = now_sec();

    for (uint64_t i = 0; i < ops; i++) {
        if (++l->since == OPS_PER_TICK) {
            l->since = 0;
            im->advance(h, ++l->now);
        }
        uint64_t key = splitmix(&l->rng) % n;
        uint64_t r = splitmix(&l->rng);
        uint64_t kind = r % 100, ttl = 1 + (r >> 32) % MAX_TTL;
        if (kind < 70) {
            im->set(h, key, ttl);
        } else if (kind < 90) {
            if (im->move(h, key, ttl))
                l->moved++;
            else
                l->missed_moves++;
        } else {
            if (im->remove(h, key))
                l->removed++;
            else
                l->missed_removes++;
        }
    }
    return (now_sec() - t0) * 1e9 / (double)ops;
}

static double median3(const double *v)
{
    double a = v[0], b = v[1], c = v[2];
    if ((a <= b && b <= c) || (c <= b && b <= a))
        return b;
    if ((b <= a && a <= c) || (c <= a && a <= b))
        return a;
    return c;
}

int main(int argc, char **argv)
{
    uint64_t seed = 42, ops = 2000000;
    uint64_t sizes[8] = {1000, 100000, 1000000, 10000000};
    size_t nsizes = 4;
    const char *json_path = "build/bench/results-w6.json";
    bool quick = false;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = true;
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
            ops = strtoull(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            json_path = argv[++i];
        } else if (strcmp(argv[i], "--map-seed") == 0 && i + 1 < argc) {
            uint64_t k = strtoull(argv[++i], NULL, 0), w[2];
            w[0] = splitmix(&k);
            w[1] = splitmix(&k);
            memcpy(map_seed, w, sizeof map_seed);
            keyed_map_seed = map_seed;
        } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
            nsizes = 0;
            for (char *p = argv[++i]; *p != '\0' && nsizes < 8;) {
                sizes[nsizes++] = (uint64_t)strtod(p, &p);
                if (*p == ',')
                    p++;
            }
        } else {
            fprintf(stderr, "usage: bench_keyed [--quick] [--seed S] "
                            "[--ops M] [--n N1,N2,...] [--json PATH] "
                            "[--map-seed K]\n");
            return 2;
        }
    }
    if (quick) {
        sizes[0] = 1000, sizes[1] = 100000, nsizes = 2;
        ops = 200000;
    }

    char cpu[256], date[64];
    time_t t = time(NULL);
    bench_cpu_model(cpu, sizeof cpu);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    printf("W6 keyed: %s, compiler %s, flags %s\n", cpu, __VERSION__,
           BENCH_CFLAGS);
    printf("seed %" PRIu64 ", %" PRIu64 " ops per repetition, median of %d\n",
           seed, ops, REPS);
    printf("%-10s %12s %16s %8s %14s %14s\n", "N", "rota ns/op", "rounds ns/op",
           "ratio", "rota B/key", "rounds B/key");

    FILE *json = fopen(json_path, "w");
    if (json == NULL)
        fprintf(stderr, "cannot write %s (no JSON written)\n", json_path);
    else
        fprintf(json,
                "{\"meta\": {\"workload\": \"W6\", \"workloads\": [{\"name\": "
                "\"W6\", \"title\": \"W6 keyed TTL timers (bench_keyed)\"}], "
                "\"compiler\": \"%s\", "
                "\"flags\": \"%s\", \"cpu\": \"%s\", \"seed\": %" PRIu64
                ", \"date\": \"%s\", \"ops\": %" PRIu64 ", \"skipped\": []},"
                "\n \"results\": [",
                __VERSION__, BENCH_CFLAGS, cpu, seed, date, ops);
    bool first = true;
    int status = 0;

    for (size_t s = 0; s < nsizes; s++) {
        uint64_t n = sizes[s];
        struct lane lanes[NIMPL];
        long bytes_per_key[NIMPL];
        for (size_t i = 0; i < NIMPL; i++) {
            lanes[i] = (struct lane){.im = impls[i], .rng = seed};
            long before = rss_kb();
            setup(&lanes[i], n, seed);
            bytes_per_key[i] = (rss_kb() - before) * 1024 / (long)n;
        }
        for (int rep = 0; rep < REPS; rep++)
            for (size_t j = 0; j < NIMPL; j++) {
                /* Alternate who goes first, against drift. */
                size_t i = rep % 2 ? NIMPL - 1 - j : j;
                lanes[i].ns[rep] = run_ops(&lanes[i], n, ops);
            }
        double med[NIMPL];
        for (size_t i = 0; i < NIMPL; i++)
            med[i] = median3(lanes[i].ns);
        printf("%-10" PRIu64 " %12.1f %16.1f %8.2f %14ld %14ld\n", n, med[0],
               med[1], med[0] / med[1], bytes_per_key[0], bytes_per_key[1]);
        fflush(stdout);

        for (size_t i = 1; i < NIMPL; i++) {
            struct lane *a = &lanes[0], *b = &lanes[i];
            size_t ca = a->im->count(a->h), cb = b->im->count(b->h);
            if (a->expired != b->expired || a->moved != b->moved ||
                a->removed != b->removed || ca != cb) {
                fprintf(stderr,
                        "MISMATCH at N=%" PRIu64 ": %s vs %s: expired %" PRIu64
                        "/%" PRIu64 ", moved %" PRIu64 "/%" PRIu64
                        ", removed %" PRIu64 "/%" PRIu64 ", keys %zu/%zu\n",
                        n, a->im->name, b->im->name, a->expired, b->expired,
                        a->moved, b->moved, a->removed, b->removed, ca, cb);
                status = 1;
            }
        }
        printf("           counts: %" PRIu64 " expired, %" PRIu64
               " moves and %" PRIu64 " removes found their key, %zu keys "
               "left\n",
               lanes[0].expired, lanes[0].moved, lanes[0].removed,
               lanes[0].im->count(lanes[0].h));
        for (size_t i = 0; i < NIMPL; i++) {
            if (json != NULL)
                fprintf(json,
                        "%s\n  {\"impl\": \"%s\", \"workload\": \"W6\", "
                        "\"n\": %" PRIu64 ", \"metric\": \"ns_per_op\", "
                        "\"value\": %.1f}",
                        first ? "" : ",", lanes[i].im->name, n, med[i]);
            first = false;
            lanes[i].im->destroy(lanes[i].h);
        }
#if defined(__GLIBC__)
        malloc_trim(0); /* so the next size's RSS growth is its own */
#endif
    }
    if (json != NULL) {
        fprintf(json, "\n]}\n");
        fclose(json);
    }
    return status;
}
