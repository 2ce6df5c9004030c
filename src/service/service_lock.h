/* SPDX-License-Identifier: MIT */
/*
 * service_lock.h - internal: the lock of a rota/service.h shard.
 *
 * A shard's lock guards O(1) work (an arm or a cancel is ~100 instructions
 * under it; the service thread's holds are bounded batches).  glibc's
 * mutex spends ~57 instructions and a few stores on a lock + unlock pair
 * that does not contend, a tenth of an S1 arm + cancel pair's
 * instructions, twice per pair.  On Linux the shard lock is a futex word,
 * 0 free and 1 held, and a count of the threads asleep on it:
 *
 *   - Taking it is one compare-and-swap.  A contender spins briefly (the
 *     holder is usually about to drop it), then counts itself a sleeper
 *     and waits on the word with a short timeout (LOCK_NAP_NS), trying
 *     again after each wait.
 *   - Dropping it is a plain release store of 0 - no locked instruction,
 *     so the stores of the critical section that missed in the cache are
 *     not waited for at the unlock - then a plain load of the sleepers'
 *     count, and a futex wake only if it is not 0.
 *
 *   Without a fence between the store and the load, a contender that
 *   counts itself and goes to sleep just as the holder drops the lock may
 *   be missed by the holder's load; the timeout bounds that lost wake to
 *   one nap.  Mutual exclusion rests on the compare-and-swap alone; the
 *   release store and the acquiring CAS order each critical section
 *   before the next (the service's sleep rule, service.c "Sleeping",
 *   needs nothing more of the lock).
 *
 * Elsewhere it is a pthread mutex.  Needs no feature macro: the futex
 * calls live in service_lock.c.
 */
#ifndef ROTA_SERVICE_LOCK_H
#define ROTA_SERVICE_LOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#ifdef __linux__
struct rota__lock {
    _Atomic uint32_t word;     /* 0 free, 1 held */
    _Atomic uint32_t sleepers; /* contenders past their spin */
};

/* The contended paths, out of line (service_lock.c): they make the futex
 * system calls, whose declarations need feature macros that a header must
 * not impose on its includers. */
void rota__lock_slow(struct rota__lock *l);
void rota__lock_wake(struct rota__lock *l);

static inline int rota__lock_init(struct rota__lock *l)
{
    atomic_init(&l->word, 0);
    atomic_init(&l->sleepers, 0);
    return 0;
}

static inline void rota__lock_destroy(struct rota__lock *l)
{
    (void)l;
}

static inline void rota__lock(struct rota__lock *l)
{
    uint32_t c = 0;
    if (!atomic_compare_exchange_strong_explicit(
            &l->word, &c, 1, memory_order_acquire, memory_order_relaxed))
        rota__lock_slow(l);
}

static inline void rota__unlock(struct rota__lock *l)
{
    atomic_store_explicit(&l->word, 0, memory_order_release);
    if (atomic_load_explicit(&l->sleepers, memory_order_relaxed) != 0)
        rota__lock_wake(l);
}
#else
struct rota__lock {
    pthread_mutex_t mu;
};

static inline int rota__lock_init(struct rota__lock *l)
{
    return pthread_mutex_init(&l->mu, NULL);
}

static inline void rota__lock_destroy(struct rota__lock *l)
{
    pthread_mutex_destroy(&l->mu);
}

static inline void rota__lock(struct rota__lock *l)
{
    pthread_mutex_lock(&l->mu);
}

static inline void rota__unlock(struct rota__lock *l)
{
    pthread_mutex_unlock(&l->mu);
}
#endif

#endif /* ROTA_SERVICE_LOCK_H */
