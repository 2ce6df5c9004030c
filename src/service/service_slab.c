/* SPDX-License-Identifier: MIT */
/*
 * service_slab.c - rota/service.h: the records' slab.  Each timer is a
 * record in a slab of chunks that never move (chunk c holds base << c
 * records, so index -> chunk is one clz); see "Records" in the essay at
 * the top of service.c.  Free records move in chains of MAG: each shard
 * keeps a hot chain it takes from and frees to and one spare full chain,
 * and the rest wait in the service-wide depot, under grow_mu, which also
 * adds chunks.  So an arm or a free touches the depot once in MAG times,
 * and a thread that frees what another armed returns whole chains.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads */
#include <string.h>

#include "service_internal.h"

void *rota__service_alloc(struct rota_service *svc, size_t size)
{
    void *p = svc->alloc.alloc(svc->alloc.ctx, size);
    if (p != NULL)
        add(&svc->bytes, size);
    return p;
}

void rota__service_free(struct rota_service *svc, void *p, size_t size)
{
    if (p == NULL)
        return;
    atomic_fetch_sub_explicit(&svc->bytes, size, memory_order_relaxed);
    svc->alloc.free(svc->alloc.ctx, p, size);
}

/*
 * Add chunk number svc->nchunks to the depot, as chains of MAG records.
 * The caller holds grow_mu (lock order: a shard's lock, then grow_mu).
 */
int rota__service_add_chunk(struct rota_service *svc)
{
    unsigned c = svc->nchunks;
    uint64_t first = (((uint64_t)1 << c) - 1u) << svc->base_shift;
    uint64_t n = (uint64_t)1 << (svc->base_shift + c); /* a multiple of MAG */
    if (c >= CHUNKS || first + n > NIL || /* indices stay below NIL */
        n > (SIZE_MAX - 64) / sizeof(struct rec))
        return ROTA_ENOMEM;
    size_t bytes = (size_t)n * sizeof(struct rec) + 64;
    void *raw = rota__service_alloc(svc, bytes);
    if (raw == NULL)
        return ROTA_ENOMEM;
    struct rec *recs = (void *)(((uintptr_t)raw + 63u) & ~(uintptr_t)63u);
    for (uint64_t i = 0; i < n; i++) {
        struct rec *r = &recs[i];
        memset(r, 0, sizeof *r);
        atomic_init(&r->word, (uint64_t)1 << 32 | F_FREE);
        atomic_init(&r->due, 0);
        atomic_init(&r->shard, 0);
        r->index = (uint32_t)(first + i);
        r->free_next = (i + 1) % MAG != 0 ? r->index + 1 : NIL;
        r->wnext = NIL;
        r->sband = STAGE_NONE;
        rota_periodic_init(&r->pt, rota__service_on_fire);
    }
    svc->chunk_raw[c] = raw;
    svc->chunk_bytes[c] = bytes;
    atomic_store_explicit(&svc->chunk_at[c],
                          (uintptr_t)recs -
                              (uintptr_t)first * (uintptr_t)sizeof(struct rec),
                          memory_order_release);
    atomic_store_explicit(&svc->nrecords, (uint32_t)(first + n),
                          memory_order_release);
    svc->nchunks = c + 1;
    for (uint64_t i = n; i >= MAG; i -= MAG) { /* chains pop in index order */
        struct rec *head = &recs[i - MAG];
        head->wnext = svc->depot;
        svc->depot = head->index;
        svc->depot_n++;
    }
    return 0;
}

/* Give the shard a full chain from the depot (growing the slab if the
 * depot is empty).  The caller holds the shard's lock. */
static int refill(struct rota_service *svc, struct shard *sh)
{
    int rc = 0;
    pthread_mutex_lock(&svc->grow_mu);
    if (svc->depot == NIL)
        rc = rota__service_add_chunk(svc);
    if (rc == 0) {
        struct rec *head = rec_at(svc, svc->depot);
        svc->depot = head->wnext;
        svc->depot_n--;
        head->wnext = NIL;
        sh->hot = head->index;
        sh->hot_n = MAG;
    }
    pthread_mutex_unlock(&svc->grow_mu);
    return rc;
}

/* rota__service_take_record()'s slow path (service_internal.h): the hot
 * chain is empty; the spare becomes hot, or a chain comes from the depot
 * (grown by a chunk when it is empty). */
int rota__service_take_slow(struct rota_service *svc, struct shard *sh)
{
    if (sh->spare == NIL)
        return refill(svc, sh);
    sh->hot = sh->spare;
    sh->hot_n = MAG;
    sh->spare = NIL;
    return 0;
}

/* rota__service_free_locked()'s slow path: the hot chain is full; it
 * becomes the spare, and the previous spare goes to the depot. */
void rota__service_free_slow(struct rota_service *svc, struct shard *sh)
{
    if (sh->spare != NIL) {
        struct rec *head = rec_at(svc, sh->spare);
        pthread_mutex_lock(&svc->grow_mu);
        head->wnext = svc->depot;
        svc->depot = head->index;
        svc->depot_n++;
        pthread_mutex_unlock(&svc->grow_mu);
    }
    sh->spare = sh->hot;
    sh->hot = NIL;
    sh->hot_n = 0;
}

void rota__service_notify_waiters(struct rota_service *svc)
{
    pthread_mutex_lock(&svc->done_mu);
    pthread_cond_broadcast(&svc->done_cv);
    pthread_mutex_unlock(&svc->done_mu);
}

/* Clear `bits` (holds, WAITER, owed) of the word; free the record if that
 * was its last hold.  Wakes cancel_sync() sleepers when RUNNING goes. */
void rota__service_release(struct rota_service *svc, struct rec *r,
                           uint64_t bits)
{
    uint64_t w = atomic_load_explicit(&r->word, memory_order_relaxed);
    uint64_t nw;
    bool freed;
    do {
        nw = settle(w & ~bits, &freed);
    } while (!atomic_compare_exchange_weak_explicit(
        &r->word, &w, nw, memory_order_acq_rel, memory_order_relaxed));
    if ((w & F_WAITER) && !(nw & F_RUNNING))
        rota__service_notify_waiters(svc);
    if (freed) {
        struct shard *sh = shard_of(svc, r);
        rota__lock(&sh->mu);
        rota__service_free_locked(svc, sh, r, r->index);
        rota__unlock(&sh->mu);
    }
}
