/* SPDX-License-Identifier: MIT */
/*
 * test_service_common.h - what the tests of rota/service.h share on top of
 * harness.h: a latch, a counting allocator, time helpers.
 */
#ifndef ROTA_TEST_SERVICE_COMMON_H
#define ROTA_TEST_SERVICE_COMMON_H

#define _POSIX_C_SOURCE 200809L

#include <rota/service.h>

#include "harness.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ time */

#define ST_US UINT64_C(1000)
#define ST_MS UINT64_C(1000000)
#define ST_S UINT64_C(1000000000)

static inline uint64_t st_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * ST_S + (uint64_t)ts.tv_nsec;
}

static inline void st_sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / ST_S), (long)(ns % ST_S)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* A statement: poll `cond` every 100 us until it holds or `timeout_ns`
 * passes.  Check the condition afterwards. */
#define ST_WAIT_FOR(cond, timeout_ns)                                          \
    for (uint64_t st_end_ = st_mono_ns() + (timeout_ns);                       \
         !(cond) && st_mono_ns() < st_end_;)                                   \
    st_sleep_ns(100 * ST_US)

/* ------------------------------------------------------------------ latch */

/* A gate a callback can wait on: the test opens it. */
struct st_latch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool open;
};

static inline void st_latch_init(struct st_latch *l)
{
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->open = false;
}

static inline void st_latch_wait(struct st_latch *l)
{
    pthread_mutex_lock(&l->mu);
    while (!l->open)
        pthread_cond_wait(&l->cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
}

static inline void st_latch_open(struct st_latch *l)
{
    pthread_mutex_lock(&l->mu);
    l->open = true;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static inline void st_latch_fini(struct st_latch *l)
{
    pthread_cond_destroy(&l->cv);
    pthread_mutex_destroy(&l->mu);
}

/* ------------------------------------------------------ counting allocator */

struct st_alloc {
    atomic_llong bytes;    /* outstanding */
    atomic_llong blocks;   /* outstanding */
    atomic_int fail_after; /* allocations to allow before failing; -1 never */
};

static void *st_alloc_fn(void *ctx, size_t size)
{
    struct st_alloc *a = ctx;
    if (atomic_load(&a->fail_after) == 0)
        return NULL;
    if (atomic_load(&a->fail_after) > 0)
        atomic_fetch_sub(&a->fail_after, 1);
    void *p = malloc(size);
    if (p != NULL) {
        atomic_fetch_add(&a->bytes, (long long)size);
        atomic_fetch_add(&a->blocks, 1);
    }
    return p;
}

static void st_free_fn(void *ctx, void *ptr, size_t size)
{
    struct st_alloc *a = ctx;
    if (ptr == NULL)
        return;
    atomic_fetch_sub(&a->bytes, (long long)size);
    atomic_fetch_sub(&a->blocks, 1);
    free(ptr);
}

static inline struct rota_allocator st_allocator(struct st_alloc *a)
{
    atomic_init(&a->bytes, 0);
    atomic_init(&a->blocks, 0);
    atomic_init(&a->fail_after, -1);
    return (struct rota_allocator){st_alloc_fn, st_free_fn, a};
}

#endif /* ROTA_TEST_SERVICE_COMMON_H */
