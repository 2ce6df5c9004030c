/* SPDX-License-Identifier: MIT */
/*
 * keyed_rounds.c - the `hashed-rounds` keyed baseline for workload W6:
 * go-zero's TimingWheel design (collection/timingwheel.go) written in C.
 *
 * THE DESIGN IT REPRODUCES
 *   One wheel of 512 slots, one tick per slot, each slot a doubly linked
 *   list of tasks, plus a map from key to task.  A task whose deadline is
 *   more than one rotation away stays in the slot of its deadline and is
 *   skipped by the hand until its round comes (go-zero counts `circle`
 *   down; here the absolute deadline is compared, the same visits).
 *   Moving a task later is lazy, as go-zero's `diff`: only the deadline is
 *   stored, and the hand re-files the task when it passes the old slot.
 *   Moving it earlier re-files it at once (go-zero marks the old task
 *   removed and queues a new one; unlinking is the cheaper C equivalent).
 *   Every tick the hand walks the whole slot under it.
 *
 * WHAT IT DOES BETTER THAN GO-ZERO (so the comparison is with the design,
 * not its bugs or its runtime)
 *   Exact: a deadline that is a multiple of 512 ticks away is not a
 *   rotation late (go-zero#5510), removal is immediate (go-zero#205), no
 *   goroutines or channels, keys are plain uint64_t hashed by a fast
 *   unkeyed mixer (cheaper than rota's SipHash, so any bias favours the
 *   baseline), one allocation per key.
 */
#include "keyed_bench.h"

#include <stdlib.h>
#include <string.h>

#define SLOTS 512u
#define SLOT_MASK (SLOTS - 1)

struct task {
    struct task *prev, *next; /* slot list (circular, with a head) */
    struct task *chain;       /* hash bucket chain */
    uint64_t key;
    uint64_t deadline;
    void *value;
};

struct rounds {
    struct task slot[SLOTS]; /* list heads: only prev/next used */
    struct task **bucket;
    size_t mask, count;
    uint64_t now;
    uint64_t *expired;
};

static uint64_t mix(uint64_t x) /* splitmix64's finaliser */
{
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static void list_add(struct task *head, struct task *t)
{
    t->prev = head->prev;
    t->next = head;
    head->prev->next = t;
    head->prev = t;
}

static void list_del(struct task *t)
{
    t->prev->next = t->next;
    t->next->prev = t->prev;
}

static struct task **find(struct rounds *r, uint64_t key)
{
    struct task **link = &r->bucket[mix(key) & r->mask];
    while (*link != NULL && (*link)->key != key)
        link = &(*link)->chain;
    return link;
}

static void grow(struct rounds *r)
{
    size_t size = (r->mask + 1) * 2;
    struct task **b = calloc(size, sizeof *b);
    if (b == NULL)
        abort();
    for (size_t i = 0; i <= r->mask; i++) {
        struct task *t = r->bucket[i];
        while (t != NULL) {
            struct task *next = t->chain;
            struct task **head = &b[mix(t->key) & (size - 1)];
            t->chain = *head;
            *head = t;
            t = next;
        }
    }
    free(r->bucket);
    r->bucket = b;
    r->mask = size - 1;
}

static void *rounds_create(uint64_t now, uint64_t *expired)
{
    struct rounds *r = calloc(1, sizeof *r);
    if (r == NULL)
        abort();
    for (unsigned i = 0; i < SLOTS; i++)
        r->slot[i].prev = r->slot[i].next = &r->slot[i];
    r->mask = 1023;
    r->bucket = calloc(r->mask + 1, sizeof *r->bucket);
    if (r->bucket == NULL)
        abort();
    r->now = now;
    r->expired = expired;
    return r;
}

/* Give a filed task a new deadline: later is lazy, earlier re-files. */
static void move_task(struct rounds *r, struct task *t, uint64_t deadline)
{
    uint64_t old = t->deadline;
    t->deadline = deadline;
    /* The task may sit in an older, earlier slot after lazy moves, so an
     * earlier deadline always re-files it. */
    if (deadline < old) {
        list_del(t);
        list_add(&r->slot[deadline & SLOT_MASK], t);
    }
}

static void rounds_set(void *impl, uint64_t key, uint64_t ttl)
{
    struct rounds *r = impl;
    struct task **link = find(r, key);
    uint64_t deadline = r->now + ttl;

    if (*link != NULL) {
        (*link)->value = NULL;
        move_task(r, *link, deadline);
        return;
    }
    struct task *t = malloc(sizeof *t);
    if (t == NULL)
        abort();
    t->key = key;
    t->deadline = deadline;
    t->value = NULL;
    t->chain = NULL;
    *link = t;
    list_add(&r->slot[deadline & SLOT_MASK], t);
    if (++r->count > r->mask + 1)
        grow(r);
}

static bool rounds_move(void *impl, uint64_t key, uint64_t ttl)
{
    struct rounds *r = impl;
    struct task *t = *find(r, key);
    if (t == NULL)
        return false;
    move_task(r, t, r->now + ttl);
    return true;
}

static bool rounds_remove(void *impl, uint64_t key)
{
    struct rounds *r = impl;
    struct task **link = find(r, key);
    struct task *t = *link;
    if (t == NULL)
        return false;
    *link = t->chain;
    list_del(t);
    free(t);
    r->count--;
    return true;
}

/* Tick by tick: the hand walks every task of every slot it passes. */
static void rounds_advance(void *impl, uint64_t now)
{
    struct rounds *r = impl;
    while (r->now < now) {
        uint64_t tick = ++r->now;
        struct task *head = &r->slot[tick & SLOT_MASK];
        struct task *t = head->next;
        while (t != head) {
            struct task *next = t->next;
            if (t->deadline <= tick) {
                list_del(t);
                struct task **link = find(r, t->key);
                *link = t->chain;
                r->count--;
                (*r->expired)++;
                free(t);
            } else if ((t->deadline & SLOT_MASK) != (tick & SLOT_MASK)) {
                list_del(t); /* moved later: re-file (go-zero's diff) */
                list_add(&r->slot[t->deadline & SLOT_MASK], t);
            }
            t = next;
        }
    }
}

static size_t rounds_count(void *impl)
{
    return ((struct rounds *)impl)->count;
}

static void rounds_destroy(void *impl)
{
    struct rounds *r = impl;
    for (size_t i = 0; i <= r->mask; i++) {
        struct task *t = r->bucket[i];
        while (t != NULL) {
            struct task *next = t->chain;
            free(t);
            t = next;
        }
    }
    free(r->bucket);
    free(r);
}

const struct keyed_impl keyed_hashed_rounds = {
    "hashed-rounds", rounds_create,  rounds_set,   rounds_move,
    rounds_remove,   rounds_advance, rounds_count, rounds_destroy,
};
