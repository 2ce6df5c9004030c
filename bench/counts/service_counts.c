/* SPDX-License-Identifier: MIT */
/*
 * service_counts.c - rota_service_counts: the submission paths of S1 and
 * S3 (service_bench.c) on one thread, for callgrind, which counts what a
 * clock cannot: instructions and data references per pair, the same from
 * run to run.  Only the loop is counted:
 *
 *   valgrind --tool=callgrind --toggle-collect=counted_pairs \
 *       build-release/bench/rota_service_counts s1 rota 200000
 *
 * then Ir (and Dr, Dw, D1mr... with --cache-sim=yes) / pairs.  Workloads:
 *   s1  1e5 live timers of [1, 60000] ms; each pair cancels one at random
 *       and arms it again;
 *   s3  one request context: arm [50, 500] ms, cancel; 1% left armed.
 * Implementations: rota (rota/service.h) and heap (service_heap.c).  The
 * loop's own cost (splitmix, the handle array) is the same for both.
 */
#define _GNU_SOURCE
#include <rota/service.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service_heap.h"
#include "splitmix.h"

#define MS UINT64_C(1000000)
#define S1_N 100000u

static void rota_fn(struct rota_service *svc,
                    const struct rota_service_event *ev)
{
    (void)svc;
    (void)ev;
}

static void heap_fn(struct hs_node *node, uint64_t now)
{
    (void)node;
    (void)now;
}

static void die(const char *what)
{
    fprintf(stderr, "rota_service_counts: %s\n", what);
    exit(1);
}

struct ctx {
    bool rota, s3;
    struct rota_service *svc;
    struct rota_service_handle *handles;
    struct hs_service *hs;
    struct hs_node *nodes;
    uint32_t n; /* handles / nodes */
    uint64_t rng;
};

/* The counted loop: `pairs` arm + cancel pairs. */
__attribute__((noinline)) static void counted_pairs(struct ctx *c,
                                                    uint32_t pairs)
{
    uint32_t cur = 0;
    for (uint32_t k = 0; k < pairs; k++) {
        if (!c->s3) {
            uint32_t i = (uint32_t)(splitmix(&c->rng) % S1_N);
            uint64_t delay = (1 + splitmix(&c->rng) % 60000) * MS;
            if (c->rota) {
                rota_service_try_cancel(c->svc, c->handles[i]);
                if (rota_service_arm_in(c->svc, delay, rota_fn, NULL,
                                        &c->handles[i]) != 0)
                    die("arm failed");
            } else {
                hs_cancel(c->hs, &c->nodes[i]);
                hs_arm(c->hs, &c->nodes[i], hs_now_ns() + delay);
            }
            continue;
        }
        uint64_t delay = (50 + splitmix(&c->rng) % 451) * MS;
        bool leave = splitmix(&c->rng) % 100 == 0;
        if (c->rota) {
            if (rota_service_arm_in(c->svc, delay, rota_fn, NULL,
                                    &c->handles[cur]) != 0)
                die("arm failed");
            if (!leave)
                rota_service_try_cancel(c->svc, c->handles[cur]);
        } else {
            hs_arm(c->hs, &c->nodes[cur], hs_now_ns() + delay);
            if (!leave)
                hs_cancel(c->hs, &c->nodes[cur]);
        }
        if (leave && ++cur == c->n)
            die("out of contexts");
    }
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "s1") && strcmp(argv[1], "s3")) ||
        (strcmp(argv[2], "rota") && strcmp(argv[2], "heap"))) {
        fprintf(stderr, "usage: %s s1|s3 rota|heap PAIRS\n", argv[0]);
        return 2;
    }
    struct ctx c = {.rota = !strcmp(argv[2], "rota"),
                    .s3 = !strcmp(argv[1], "s3"),
                    .rng = 42};
    uint32_t pairs = (uint32_t)strtoul(argv[3], NULL, 0);
    c.n = c.s3 ? pairs / 50 + 64 : S1_N;
    c.handles = calloc(c.n, sizeof *c.handles);
    c.nodes = calloc(c.n, sizeof *c.nodes);
    if (c.handles == NULL || c.nodes == NULL)
        die("out of memory");
    if (c.rota) {
        struct rota_service_config sc = {.initial_capacity = 2 * S1_N};
        if (rota_service_create(&c.svc, &sc) != 0)
            die("rota_service_create failed");
    } else {
        for (uint32_t i = 0; i < c.n; i++)
            c.nodes[i] = (struct hs_node){.slot = HS_IDLE, .fn = heap_fn};
        c.hs = hs_create(c.n, 0, c.nodes);
        if (c.hs == NULL)
            die("hs_create failed");
    }
    if (!c.s3) {
        for (uint32_t i = 0; i < S1_N; i++) {
            uint64_t delay = (1 + splitmix(&c.rng) % 60000) * MS;
            if (c.rota) {
                if (rota_service_arm_in(c.svc, delay, rota_fn, NULL,
                                        &c.handles[i]) != 0)
                    die("arm failed");
            } else {
                hs_arm(c.hs, &c.nodes[i], hs_now_ns() + delay);
            }
        }
    }
    counted_pairs(&c, pairs);
    printf("%s %s pairs %u\n", argv[1], argv[2], pairs);
    if (c.rota)
        rota_service_destroy(c.svc);
    else
        hs_destroy(c.hs);
    free(c.handles);
    free(c.nodes);
    return 0;
}
