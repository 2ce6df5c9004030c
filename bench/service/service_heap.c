/* SPDX-License-Identifier: MIT */
/*
 * service_heap.c - the mutex + condvar heap2 timer service (see the header):
 * the obvious design the S1 / S2 benchmark compares rota/service.h with.
 * Written plainly, as a careful user would: the lock is held only for heap
 * operations, callbacks run outside it, the timer thread is signalled only
 * when the earliest deadline moves earlier, and its timer slack is set to
 * 1 ns like rota's service thread, so S2 compares designs, not kernel
 * settings.
 */
#define _GNU_SOURCE /* PR_SET_TIMERSLACK */
#include "service_heap.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#ifdef __linux__
#include <sys/prctl.h>
#endif

struct hs_service {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the timer thread's sleep */
    struct hs_node **heap;
    uint32_t n, cap;
    uint64_t seq;
    bool stop;
    pthread_t timer;

    unsigned nworkers;
    pthread_t *workers;
    struct hs_node *nodes; /* for the worker FIFO's links */
    pthread_mutex_t wmu;
    pthread_cond_t wcv;
    uint32_t whead, wtail;
    bool wstop;
};

uint64_t hs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- heap2 */

static bool before(const struct hs_node *a, const struct hs_node *b)
{
    return a->deadline_ns < b->deadline_ns ||
           (a->deadline_ns == b->deadline_ns && a->seq < b->seq);
}

static void place(struct hs_service *s, uint32_t i, struct hs_node *node)
{
    s->heap[i] = node;
    node->slot = i;
}

static void sift_up(struct hs_service *s, uint32_t i)
{
    struct hs_node *node = s->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!before(node, s->heap[parent]))
            break;
        place(s, i, s->heap[parent]);
        i = parent;
    }
    place(s, i, node);
}

static void sift_down(struct hs_service *s, uint32_t i)
{
    struct hs_node *node = s->heap[i];
    for (;;) {
        uint32_t child = 2 * i + 1;
        if (child >= s->n)
            break;
        if (child + 1 < s->n && before(s->heap[child + 1], s->heap[child]))
            child++;
        if (!before(s->heap[child], node))
            break;
        place(s, i, s->heap[child]);
        i = child;
    }
    place(s, i, node);
}

static void heap_remove(struct hs_service *s, struct hs_node *node)
{
    uint32_t i = node->slot;
    struct hs_node *last = s->heap[--s->n];
    node->slot = HS_IDLE;
    if (last == node)
        return;
    place(s, i, last);
    if (i > 0 && before(last, s->heap[(i - 1) / 2]))
        sift_up(s, i);
    else
        sift_down(s, i);
}

/* ------------------------------------------------------------ threads */

static void *worker_main(void *arg)
{
    struct hs_service *s = arg;
    pthread_mutex_lock(&s->wmu);
    for (;;) {
        while (!s->wstop && s->whead == HS_IDLE)
            pthread_cond_wait(&s->wcv, &s->wmu);
        if (s->wstop)
            break;
        struct hs_node *node = &s->nodes[s->whead];
        s->whead = node->qnext;
        if (s->whead == HS_IDLE)
            s->wtail = HS_IDLE;
        pthread_mutex_unlock(&s->wmu);
        node->fn(node, hs_now_ns());
        pthread_mutex_lock(&s->wmu);
    }
    pthread_mutex_unlock(&s->wmu);
    return NULL;
}

static void hand_to_worker(struct hs_service *s, struct hs_node *node)
{
    uint32_t id = (uint32_t)(node - s->nodes);
    pthread_mutex_lock(&s->wmu);
    node->qnext = HS_IDLE;
    if (s->whead == HS_IDLE)
        s->whead = id;
    else
        s->nodes[s->wtail].qnext = id;
    s->wtail = id;
    pthread_cond_signal(&s->wcv);
    pthread_mutex_unlock(&s->wmu);
}

static void *timer_main(void *arg)
{
    struct hs_service *s = arg;
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        if (s->n == 0) {
            pthread_cond_wait(&s->cv, &s->mu);
            continue;
        }
        struct hs_node *top = s->heap[0];
        uint64_t now = hs_now_ns();
        if (top->deadline_ns > now) {
            struct timespec ts = {(time_t)(top->deadline_ns / 1000000000u),
                                  (long)(top->deadline_ns % 1000000000u)};
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
            continue;
        }
        heap_remove(s, top);
        if (s->nworkers != 0) {
            hand_to_worker(s, top);
        } else {
            pthread_mutex_unlock(&s->mu);
            top->fn(top, now);
            pthread_mutex_lock(&s->mu);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ------------------------------------------------------------- public */

struct hs_service *hs_create(uint32_t capacity, unsigned workers,
                             struct hs_node *nodes)
{
    struct hs_service *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->heap = calloc(capacity, sizeof *s->heap);
    s->workers = calloc(workers + 1, sizeof *s->workers);
    if (s->heap == NULL || s->workers == NULL) {
        free(s->heap);
        free(s->workers);
        free(s);
        return NULL;
    }
    s->cap = capacity;
    s->nworkers = workers;
    s->nodes = nodes;
    s->whead = s->wtail = HS_IDLE;
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->wmu, NULL);
    pthread_cond_init(&s->wcv, NULL);
    pthread_create(&s->timer, NULL, timer_main, s);
    for (unsigned i = 0; i < workers; i++)
        pthread_create(&s->workers[i], NULL, worker_main, s);
    return s;
}

void hs_destroy(struct hs_service *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->timer, NULL);
    pthread_mutex_lock(&s->wmu);
    s->wstop = true;
    pthread_cond_broadcast(&s->wcv);
    pthread_mutex_unlock(&s->wmu);
    for (unsigned i = 0; i < s->nworkers; i++)
        pthread_join(s->workers[i], NULL);
    for (uint32_t i = 0; i < s->n; i++)
        s->heap[i]->slot = HS_IDLE;
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->wcv);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->wmu);
    free(s->heap);
    free(s->workers);
    free(s);
}

void hs_arm(struct hs_service *s, struct hs_node *node, uint64_t deadline_ns)
{
    pthread_mutex_lock(&s->mu);
    if (node->slot != HS_IDLE)
        heap_remove(s, node);
    node->deadline_ns = deadline_ns;
    node->seq = s->seq++;
    if (s->n == s->cap) { /* the benchmark sizes it; never happens */
        pthread_mutex_unlock(&s->mu);
        abort();
    }
    place(s, s->n++, node);
    sift_up(s, node->slot);
    if (node->slot == 0) /* a new earliest deadline: wake the timer */
        pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

bool hs_cancel(struct hs_service *s, struct hs_node *node)
{
    pthread_mutex_lock(&s->mu);
    bool pending = node->slot != HS_IDLE;
    if (pending)
        heap_remove(s, node);
    pthread_mutex_unlock(&s->mu);
    return pending;
}
