/* SPDX-License-Identifier: MIT */
/*
 * impl_hashed_rounds.c - `hashed-rounds`: one wheel of 512 slots with a
 * rounds counter per timer, the structure of Netty's HashedWheelTimer and
 * go-zero's TimingWheel (written here from the published design), with the
 * tick equal to the simulated tick.
 *
 * A timer with deadline D armed when the wheel has processed tick `cur`
 * goes into slot D mod 512 with rounds = (D - cur - 1) / 512: the number of
 * times that slot will be visited before tick D.  Each tick visits one slot
 * and walks every timer in it: rounds == 0 means due (fire), otherwise
 * decrement - the characteristic cost of the design, O(n / 512) per tick
 * whatever is due, and a write to every visited timer.  Slots are circular
 * doubly linked lists, so cancel is O(1) (Netty queues cancels instead; we
 * unlink at once, which is cheaper and keeps memory exact).
 *
 * Exactness, which the originals get wrong in corner cases (go-zero#5510: a
 * rotation late when the target slot is under the hand): the rounds count
 * is taken against the last processed tick, so a timer due in exactly k*512
 * ticks lands in the slot being processed with rounds k - 1 and fires on
 * time; due timers are first moved to a local list and their callbacks run
 * only after the walk, so a callback that arms into the slot being walked
 * is not visited (and decremented) by the same walk.  A deadline at or
 * before the processed tick (not produced by these workloads) goes to the
 * next slot with rounds 0, i.e. it fires on the next tick.  Advancing is
 * tick by tick, as in the originals: idle time costs one slot visit per
 * tick (W4 measures it).
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdlib.h>

#define SLOTS 512u
#define MASK (SLOTS - 1u)

struct rnode {
    struct rnode *next, *prev; /* NULL next: idle */
    uint64_t deadline;
    uint64_t period; /* 0: one-shot */
    uint32_t rounds;
    uint32_t id;
};

struct rounds {
    uint64_t cur;             /* last tick processed */
    struct rnode slot[SLOTS]; /* list heads (only next/prev used) */
    struct rnode *nodes;
};

static void list_init(struct rnode *head)
{
    head->next = head->prev = head;
}

static void list_append(struct rnode *head, struct rnode *n)
{
    n->prev = head->prev;
    n->next = head;
    head->prev->next = n;
    head->prev = n;
}

static void list_unlink(struct rnode *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = NULL;
}

static void *create(uint32_t n, uint64_t now)
{
    struct rounds *w = malloc(sizeof *w);
    if (!w)
        bench_die("hashed-rounds: out of memory");
    w->nodes = malloc((size_t)n * sizeof *w->nodes);
    if (!w->nodes)
        bench_die("hashed-rounds: out of memory for %u nodes", n);
    w->cur = now;
    for (uint32_t i = 0; i < SLOTS; i++)
        list_init(&w->slot[i]);
    for (uint32_t i = 0; i < n; i++)
        w->nodes[i] = (struct rnode){.id = i};
    return w;
}

static void destroy(void *impl)
{
    struct rounds *w = impl;
    free(w->nodes);
    free(w);
}

static void insert(struct rounds *w, struct rnode *n, uint64_t deadline)
{
    n->deadline = deadline;
    if (deadline <= w->cur) {
        n->rounds = 0;
        list_append(&w->slot[(w->cur + 1) & MASK], n);
        return;
    }
    uint64_t rounds = (deadline - w->cur - 1) / SLOTS;
    n->rounds = rounds > UINT32_MAX ? UINT32_MAX : (uint32_t)rounds;
    list_append(&w->slot[deadline & MASK], n);
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct rounds *w = impl;
    w->nodes[id].period = 0;
    insert(w, &w->nodes[id], deadline);
}

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct rounds *w = impl;
    w->nodes[id].period = period;
    insert(w, &w->nodes[id], first);
}

static void cancel(void *impl, uint32_t id)
{
    struct rounds *w = impl;
    struct rnode *n = &w->nodes[id];
    if (!n->next)
        bench_die("hashed-rounds: cancel of an idle timer %u", id);
    list_unlink(n);
}

static void rearm(void *impl, uint32_t id, uint64_t deadline)
{
    struct rounds *w = impl;
    struct rnode *n = &w->nodes[id];
    if (n->next)
        list_unlink(n);
    insert(w, n, deadline);
}

static void advance(void *impl, uint64_t now)
{
    struct rounds *w = impl;
    struct rnode due;

    while (w->cur < now) {
        uint64_t tick = ++w->cur;
        struct rnode *head = &w->slot[tick & MASK];
        list_init(&due);
        for (struct rnode *n = head->next, *next; n != head; n = next) {
            next = n->next;
            if (n->rounds == 0) {
                list_unlink(n);
                list_append(&due, n);
            } else {
                n->rounds--;
            }
        }
        /* Callbacks may arm, cancel or re-arm anything, this list
         * included: take the head again after each one. */
        while (due.next != &due) {
            struct rnode *n = due.next;
            list_unlink(n);
            if (n->deadline > tick)
                bench_die("hashed-rounds: timer %u due at %llu fired at "
                          "%llu",
                          n->id, (unsigned long long)n->deadline,
                          (unsigned long long)tick);
            if (n->period)
                insert(w, n, n->deadline + n->period);
            bench_fired(n->id);
        }
    }
}

const struct bench_impl impl_hashed_rounds = {
    .name = "hashed-rounds",
    .node_size = sizeof(struct rnode),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = rearm,
    .arm_periodic = arm_periodic,
    .advance = advance,
};
