/* SPDX-License-Identifier: MIT */
/*
 * impl_wheel_approx.c - `wheel-approx`: a non-cascading, approximate
 * hierarchical wheel in the style of Linux's timer wheel (kernel/time/
 * timer.c since 4.8), written here to show what rota's exactness costs.
 *
 * THE STRUCTURE
 *   Twelve levels of 64 slots; level L counts time in granules of 8^L
 *   ticks (1, 8, 64, 512 ... 8^11 = 2^33 ticks), so it spans 64 granules.
 *   A timer is filed once, at the lowest level whose 64 slots reach its
 *   deadline, in the slot of the first granule boundary at or after the
 *   deadline: it is rounded up, never down, so it never fires early.  It
 *   is never moved again (no cascade): when time reaches that boundary the
 *   slot comes due and every timer in it fires.  Each slot is a circular
 *   doubly linked list with a sentinel head: arm appends, cancel unlinks.
 *
 * WHY IT IS APPROXIMATE, AND BY HOW MUCH
 *   A deadline D filed against the wheel's time C at level L fires at
 *   ceil(D / 8^L) * 8^L, at most 8^L - 1 ticks late.  Level L >= 1 is used
 *   only when level L - 1 could not hold the timer, which needs a delay
 *   D - C of at least 63 * 8^(L-1) + 2 ticks; so a timer fires at most
 *   8/63 of its delay late (12.7%, the figure Linux's essay rounds to
 *   12.5%): a 30 s timeout up to 3.8 s late, a 60 s one up to 7.6 s.
 *   wheel_approx_max_late() states the bound; the benchmark's cross-check
 *   holds every fire to it (bench/rota_bench/workloads.c).  Levels 0 .. 11 reach 2^39
 *   ticks (17 years of milliseconds); a deadline beyond that stops the run
 *   (Linux would fire it early, at its horizon).
 *
 * WHAT IT SAVES
 *   rota files a timer against the exact time and moves it down a level
 *   (a cascade: one cache miss per timer) each time it gets within a
 *   level's span of its deadline; here a timer is touched twice in its life
 *   (filed, fired), however far its deadline.  The price is lateness, and
 *   a firing step that visits one slot per level whose granule ends at
 *   that tick.  Like wheel-bare it advances tick by tick with no occupancy
 *   bitmap, no cached next deadline, no statistics and no argument checks,
 *   and calls the bench's hook directly; the node is 32 bytes.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <stdlib.h>

#define SLOT_BITS 6u
#define SLOTS (1u << SLOT_BITS)
#define CLK_SHIFT 3u /* each level's granule is 8x the one below */
#define LEVELS 12u

struct anode {
    struct anode *next, *prev;
    uint64_t deadline; /* as asked: periodic timers continue from it */
    uint64_t period;   /* 0: one-shot */
};

struct approx {
    uint64_t clk; /* the last tick processed */
    struct anode *nodes;
    struct anode slot[LEVELS][SLOTS]; /* list heads (links only) */
};

static void list_init(struct anode *head)
{
    head->next = head->prev = head;
}

static void list_append(struct anode *head, struct anode *n)
{
    struct anode *tail = head->prev;
    n->prev = tail;
    n->next = head;
    tail->next = n;
    head->prev = n;
}

static void list_unlink(struct anode *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
}

uint64_t wheel_approx_max_late(uint64_t delay)
{
    /* 8^L - 1 <= 8 * (63 * 8^(L-1) + 2) / 63, rounded down: see the top
     * of the file.  Delays past 2^39 are refused before this matters. */
    return delay > UINT64_MAX / 8 ? UINT64_MAX : delay * 8 / 63;
}

/* File `n` by its deadline against clk: the lowest level with a slot for
 * the first granule boundary at or after the deadline, within 64 granules
 * of clk's.  A level L cannot hold a delay above 64 * 8^L, so the search
 * starts at the first level that may (Linux compares the delay with a
 * table instead; either costs a few instructions). */
static void file(struct approx *w, struct anode *n)
{
    uint64_t d = n->deadline <= w->clk ? w->clk + 1 : n->deadline;
    uint64_t delay = d - w->clk;
    if (delay > (uint64_t)1 << 39)
        bench_die("wheel-approx: a delay of %llu ticks is beyond its "
                  "horizon (2^39)",
                  (unsigned long long)delay);
    unsigned bits = delay <= 1 ? 0 : 64u - (unsigned)__builtin_clzll(delay - 1);
    unsigned level = bits <= SLOT_BITS ? 0 : (bits - SLOT_BITS + 2) / CLK_SHIFT;
    for (; level < LEVELS; level++) {
        unsigned shift = level * CLK_SHIFT;
        uint64_t gran = (uint64_t)1 << shift;
        uint64_t boundary = (d + gran - 1) >> shift; /* in granules */
        if (boundary <= (w->clk >> shift) + SLOTS) {
            list_append(&w->slot[level][boundary & (SLOTS - 1)], n);
            return;
        }
    }
    bench_die("wheel-approx: no level holds deadline %llu",
              (unsigned long long)d);
}

static void *create(uint32_t n, uint64_t now)
{
    struct approx *w = malloc(sizeof *w);
    if (!w)
        bench_die("wheel-approx: out of memory");
    w->nodes = malloc((size_t)n * sizeof *w->nodes);
    if (!w->nodes)
        bench_die("wheel-approx: out of memory for %u nodes", n);
    w->clk = now;
    for (unsigned l = 0; l < LEVELS; l++)
        for (unsigned s = 0; s < SLOTS; s++)
            list_init(&w->slot[l][s]);
    return w;
}

static void destroy(void *impl)
{
    struct approx *w = impl;
    free(w->nodes);
    free(w);
}

static void arm(void *impl, uint32_t id, uint64_t deadline)
{
    struct approx *w = impl;
    struct anode *n = &w->nodes[id];
    n->deadline = deadline;
    n->period = 0;
    file(w, n);
}

static void cancel(void *impl, uint32_t id)
{
    struct approx *w = impl;
    list_unlink(&w->nodes[id]);
}

/* Also called from the fire hook on the timer that just fired: the fire
 * loop leaves it self-linked, so the unlink is valid. */
static void rearm(void *impl, uint32_t id, uint64_t deadline)
{
    struct approx *w = impl;
    struct anode *n = &w->nodes[id];
    list_unlink(n);
    n->deadline = deadline;
    file(w, n);
}

static void arm_periodic(void *impl, uint32_t id, uint64_t first,
                         uint64_t period)
{
    struct approx *w = impl;
    struct anode *n = &w->nodes[id];
    n->deadline = first;
    n->period = period;
    file(w, n);
}

/* Move every timer of `slot` to the end of `batch`. */
static void take_all(struct anode *batch, struct anode *slot)
{
    if (slot->next == slot)
        return;
    slot->next->prev = batch->prev;
    batch->prev->next = slot->next;
    slot->prev->next = batch;
    batch->prev = slot->prev;
    list_init(slot);
}

static void tick(struct approx *w)
{
    uint64_t now = ++w->clk;
    struct anode batch;

    /* Level L's slot comes due when a granule of 8^L ends, i.e. when the
     * 3L low bits of the time are zero.  Every slot due now is taken off
     * the wheel before any timer fires: a timer the hook arms 64 granules
     * ahead lands in the slot of its level that is due now, and must wait
     * for that slot's next turn. */
    list_init(&batch);
    for (unsigned level = 0; level < LEVELS; level++) {
        unsigned shift = level * CLK_SHIFT;
        if (level > 0 && (now & (((uint64_t)1 << shift) - 1)) != 0)
            break;
        take_all(&batch, &w->slot[level][(now >> shift) & (SLOTS - 1)]);
    }
    while (batch.next != &batch) {
        struct anode *n = batch.next;
        uint32_t id = (uint32_t)(n - w->nodes);
        list_unlink(n);
        if (n->period) {
            n->deadline += n->period; /* on the schedule, not from now */
            file(w, n);
        } else {
            list_init(n); /* idle, and safe to rearm() from the hook */
        }
        bench_fired(id);
    }
}

static void advance(void *impl, uint64_t now)
{
    struct approx *w = impl;
    while (w->clk < now)
        tick(w);
}

const struct bench_impl impl_wheel_approx = {
    .name = "wheel-approx",
    .node_size = sizeof(struct anode),
    .create = create,
    .destroy = destroy,
    .arm = arm,
    .cancel = cancel,
    .rearm = rearm,
    .arm_periodic = arm_periodic,
    .advance = advance,
    .inexact = "fires up to 8/63 of its delay late, never early; the driver "
               "checks every fire against that window",
    .max_late = wheel_approx_max_late,
};
