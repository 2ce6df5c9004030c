/* SPDX-License-Identifier: MIT */
/*
 * heap_impl.h - the indexed d-ary heap behind impl_heap2.c (d = 2, as libuv
 * and the JDK) and impl_heap4.c (d = 4, as libev and the Go runtime).
 * Include it after defining HEAP_D and HEAP_NAME.
 *
 * The strongest plain heap we know how to write, so that rota is measured
 * against a serious baseline rather than a straw man:
 *   - The heap is an array of 16-byte {deadline, node *} entries, so a sift
 *     compares deadlines without touching the timers (libuv and the JDK
 *     dereference both timers on every comparison).  Each node stores its
 *     position, so cancel and re-arm are O(log n) from the timer, and every
 *     entry that moves writes its node's position (an unavoidable random
 *     store per level, as in every indexed heap).
 *   - Ties are broken by an arm sequence kept in the node, read only when
 *     two deadlines are equal, so equal deadlines fire in arm order, as in
 *     rota and libuv.
 *   - The "hole" technique: a sift moves entries into the hole and writes
 *     the travelling entry once.
 *   - Cache-aligned layout: the root sits at physical index d - 1 and the
 *     array starts on a 64-byte boundary, so the d children of any entry
 *     share one aligned block (for d = 4: exactly one cache line).
 *   - Re-arm (W2) changes the key in place and sifts one way; a periodic
 *     timer at the top gets its next deadline in place and sifts down
 *     (one sift instead of pop + push).
 *   - The array grows by doubling (a real library cannot know n), which
 *     MEM counts.
 * No adapter here is driven dishonestly: the heap takes time from its
 * caller.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdlib.h>
#include <string.h>

#ifndef HEAP_D
#error define HEAP_D
#endif

#define ROOT ((uint32_t)HEAP_D - 1u)

struct hnode {
    uint64_t seq;    /* arm sequence: the tie-breaker */
    uint64_t period; /* 0 for one-shot timers */
    uint32_t pos;    /* physical index in the heap, 0 when idle */
    uint32_t id;
};

struct hent {
    uint64_t deadline;
    struct hnode *node;
};

struct heap {
    struct hent *a;
    uint32_t end; /* one past the last used physical index */
    uint32_t cap; /* physical entries allocated */
    uint64_t seq;
    struct hnode *nodes;
};

static inline int before(const struct hent *x, const struct hent *y)
{
    if (x->deadline != y->deadline)
        return x->deadline < y->deadline;
    return x->node->seq < y->node->seq;
}

static inline void place(struct heap *h, uint32_t p, struct hent e)
{
    h->a[p] = e;
    e.node->pos = p;
}

static void sift_up(struct heap *h, uint32_t p, struct hent e)
{
    while (p > ROOT) {
        uint32_t parent = p / HEAP_D + HEAP_D - 2;
        if (!before(&e, &h->a[parent]))
            break;
        place(h, p, h->a[parent]);
        p = parent;
    }
    place(h, p, e);
}

static void sift_down(struct heap *h, uint32_t p, struct hent e)
{
    struct hent *a = h->a;
    for (;;) {
        uint32_t c = HEAP_D * (p - HEAP_D + 2);
        if (c >= h->end)
            break;
        uint32_t last = c + HEAP_D < h->end ? c + HEAP_D : h->end;
        uint32_t m = c;
        for (uint32_t k = c + 1; k < last; k++)
            if (before(&a[k], &a[m]))
                m = k;
        if (!before(&a[m], &e))
            break;
        place(h, p, a[m]);
        p = m;
    }
    place(h, p, e);
}

/* Put `e` where it belongs, starting from the hole at p. */
static void sift(struct heap *h, uint32_t p, struct hent e)
{
    if (p > ROOT && before(&e, &h->a[p / HEAP_D + HEAP_D - 2]))
        sift_up(h, p, e);
    else
        sift_down(h, p, e);
}

static void grow(struct heap *h)
{
    uint32_t cap = h->cap ? h->cap * 2 : 64;
    struct hent *a = aligned_alloc(64, (size_t)cap * sizeof *a);
    if (!a)
        bench_die("heap: out of memory (%u entries)", cap);
    if (h->a) {
        memcpy(a, h->a, (size_t)h->end * sizeof *a);
        free(h->a);
    }
    h->a = a;
    h->cap = cap;
}

static void *create(uint32_t n, uint64_t now)
{
    (void)now;
    struct heap *h = calloc(1, sizeof *h);
    if (!h)
        bench_die("heap: out of memory");
    h->nodes = malloc((size_t)n * sizeof *h->nodes);
    if (!h->nodes)
        bench_die("heap: out of memory for %u nodes", n);
    for (uint32_t i = 0; i < n; i++)
        h->nodes[i] = (struct hnode){.id = i};
    h->end = ROOT;
    grow(h);
    return h;
}

static void destroy(void *impl)
{
    struct heap *h = impl;
    free(h->a);
    free(h->nodes);
    free(h);
}

static void insert(struct heap *h, struct hnode *n, uint64_t deadline)
{
    if (h->end == h->cap)
        grow(h);
    n->seq = ++h->seq;
    sift_up(h, h->end++, (struct hent){deadline, n});
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct heap *h = impl;
    struct hnode *n = &h->nodes[id];
    n->period = 0;
    insert(h, n, deadline);
}

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct heap *h = impl;
    struct hnode *n = &h->nodes[id];
    n->period = period;
    insert(h, n, first);
}

/* Take the entry at p out; the last entry fills the hole. */
static void remove_at(struct heap *h, uint32_t p)
{
    h->a[p].node->pos = 0;
    struct hent last = h->a[--h->end];
    if (p != h->end)
        sift(h, p, last);
}

static void cancel(void *impl, uint32_t id)
{
    struct heap *h = impl;
    uint32_t p = h->nodes[id].pos;
    if (p == 0)
        bench_die("heap: cancel of an idle timer %u", id);
    remove_at(h, p);
}

static void rearm(void *impl, uint32_t id, uint64_t deadline)
{
    struct heap *h = impl;
    struct hnode *n = &h->nodes[id];
    if (n->pos == 0) {
        insert(h, n, deadline);
        return;
    }
    n->seq = ++h->seq;
    sift(h, n->pos, (struct hent){deadline, n});
}

static void advance(void *impl, uint64_t now)
{
    struct heap *h = impl;
    while (h->end > ROOT && h->a[ROOT].deadline <= now) {
        struct hent top = h->a[ROOT];
        struct hnode *n = top.node;
        if (n->period) {
            n->seq = ++h->seq;
            sift_down(h, ROOT, (struct hent){top.deadline + n->period, n});
        } else {
            remove_at(h, ROOT);
        }
        bench_fired(n->id);
    }
}

const struct bench_impl HEAP_NAME = {
    .name = HEAP_LABEL,
    .node_size = sizeof(struct hnode) + sizeof(struct hent),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = rearm,
    .arm_periodic = arm_periodic,
    .advance = advance,
};
