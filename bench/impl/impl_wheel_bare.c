/* SPDX-License-Identifier: MIT */
/*
 * impl_wheel_bare.c - `wheel-bare`: the simplest correct hierarchical
 * timing wheel, written here as a yardstick for rota's bookkeeping.
 *
 * Eight levels of 256 slots cover a 64-bit tick count read as eight 8-bit
 * digits.  A timer with deadline D, filed when the wheel has processed tick
 * `now`, sits at the level of the highest digit in which D and now differ,
 * in the slot of D's digit there.  Every slot is a circular doubly linked
 * list with a sentinel head; cancel unlinks (two neighbour writes), arm
 * appends (one write to the old tail).  Advancing is tick by tick: at each
 * tick whose low digits are zero, the slots of the levels whose boundary was
 * crossed are cascaded (highest level first), each timer filed again
 * against the new time; then the level-0 slot of the tick fires, front to
 * back.
 *
 * What it leaves out on purpose, because it is the floor rota's extras are
 * measured against: no occupancy bitmap (an idle tick still visits a slot;
 * a long idle stretch costs one step per tick), no cached next deadline, no
 * statistics, no argument checks, no tag saying where a timer is (the
 * bench's contract says when a timer is pending), no callback pointer (it
 * calls the bench's hook directly).  The node is 32 bytes: two links, the
 * deadline and the period.  Exact all the same: never early (a timer
 * reaches its level-0 slot only in the tick of its deadline) and never a
 * rotation late (filing compares whole deadlines, not offsets).  A deadline
 * at or before the processed tick is not produced by the workloads; it
 * would fire on the next tick.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdlib.h>

#define BITS 8u
#define SLOTS (1u << BITS)
#define LEVELS (64u / BITS)

struct bnode {
    struct bnode *next, *prev;
    uint64_t deadline;
    uint64_t period; /* 0: one-shot */
};

struct bare {
    uint64_t now; /* the last tick processed */
    struct bnode *nodes;
    struct bnode slot[LEVELS][SLOTS]; /* list heads (links only) */
};

static void list_append(struct bnode *head, struct bnode *n)
{
    struct bnode *tail = head->prev;
    n->prev = tail;
    n->next = head;
    tail->next = n;
    head->prev = n;
}

static void list_unlink(struct bnode *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
}

static void file(struct bare *w, struct bnode *n)
{
    uint64_t d = n->deadline <= w->now ? w->now + 1 : n->deadline;
    unsigned level = (63u - (unsigned)__builtin_clzll(d ^ w->now)) / BITS;
    list_append(&w->slot[level][(d >> (level * BITS)) & (SLOTS - 1)], n);
}

static void *create(uint32_t n, uint64_t now)
{
    struct bare *w = malloc(sizeof *w);
    if (!w)
        bench_die("wheel-bare: out of memory");
    w->nodes = malloc((size_t)n * sizeof *w->nodes);
    if (!w->nodes)
        bench_die("wheel-bare: out of memory for %u nodes", n);
    w->now = now;
    for (unsigned l = 0; l < LEVELS; l++)
        for (unsigned s = 0; s < SLOTS; s++)
            w->slot[l][s].next = w->slot[l][s].prev = &w->slot[l][s];
    return w;
}

static void destroy(void *impl)
{
    struct bare *w = impl;
    free(w->nodes);
    free(w);
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct bare *w = impl;
    struct bnode *n = &w->nodes[id];
    n->deadline = deadline;
    n->period = 0;
    file(w, n);
}

static void cancel(void *impl, uint32_t id)
{
    struct bare *w = impl;
    list_unlink(&w->nodes[id]);
}

static void rearm(void *impl, uint32_t id, uint64_t deadline)
{
    struct bare *w = impl;
    struct bnode *n = &w->nodes[id];
    list_unlink(n);
    n->deadline = deadline;
    file(w, n);
}

/* rearm() is also called from the fire hook on the timer that just fired,
 * which is idle then: the fire loop below links it into a list of its own
 * before the hook runs, so the unlink above is always valid. */

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct bare *w = impl;
    struct bnode *n = &w->nodes[id];
    n->deadline = first;
    n->period = period;
    file(w, n);
}

/* File again every timer of a slot whose time has come (w->now is its
 * start), front to back. */
static void cascade(struct bare *w, struct bnode *head)
{
    while (head->next != head) {
        struct bnode *n = head->next;
        list_unlink(n);
        if (n->deadline == w->now) /* due in this very tick */
            list_append(&w->slot[0][w->now & (SLOTS - 1)], n);
        else
            file(w, n);
    }
}

static void tick(struct bare *w)
{
    uint64_t now = ++w->now;
    if ((now & (SLOTS - 1)) == 0) {
        /* The highest level whose digits below it are all zero. */
        unsigned top = 1;
        while (top + 1 < LEVELS && ((now >> (top * BITS)) & (SLOTS - 1)) == 0)
            top++;
        for (unsigned l = top; l >= 1; l--)
            cascade(w, &w->slot[l][(now >> (l * BITS)) & (SLOTS - 1)]);
    }
    struct bnode *head = &w->slot[0][now & (SLOTS - 1)];
    while (head->next != head) {
        struct bnode *n = head->next;
        uint32_t id = (uint32_t)(n - w->nodes);
        list_unlink(n);
        if (n->period) {
            n->deadline += n->period;
            file(w, n);
        } else {
            /* Idle: a self-linked node, so that a rearm() from the hook
             * may unlink it like a pending one. */
            n->next = n->prev = n;
        }
        bench_fired(id);
    }
}

static void advance(void *impl, uint64_t now)
{
    struct bare *w = impl;
    while (w->now < now)
        tick(w);
}

const struct bench_impl impl_wheel_bare = {
    .name = "wheel-bare",
    .node_size = sizeof(struct bnode),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = rearm,
    .arm_periodic = arm_periodic,
    .advance = advance,
};
