/* SPDX-License-Identifier: MIT */
/*
 * test_service_lock.c - the shard lock (src/service/service_lock.h), white
 * box: its unlock is a plain store followed by a look at the sleepers'
 * count, so these tests drive contenders past their spin into the futex
 * path and check what the lock promises:
 *   - mutual exclusion: THREADS threads each add to a plain counter ROUNDS
 *     times, every hold reading the counter, pausing, then writing it
 *     back, and some holds sleeping long enough that the others stop
 *     spinning and sleep; the total must be exact and no two holds may
 *     overlap (an inside count);
 *   - the sleep path ran (some hold saw a sleeper counted) and its count
 *     is back to zero at the end;
 *   - everyone finishes: a wake the holder misses costs at most one nap.
 * lock_check_catches_no_exclusion proves the checks can fail: the same
 * run with a lock that excludes nothing must fail them.
 */
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "../../src/service/service_lock.h"

#define THREADS 3
#define ROUNDS 4000

struct run {
    struct rota__lock lock;
    bool broken; /* the planted fault: take and drop do nothing */
    /* Read and written back as two relaxed accesses, not one atomic
     * add: only the lock keeps updates from getting lost, and the planted
     * fault's lost updates are no data race for ThreadSanitizer. */
    _Atomic uint64_t counter;
    atomic_int inside;
    atomic_int overlaps;
    atomic_uint saw_sleepers;
};

static void take(struct run *r)
{
    if (!r->broken)
        rota__lock(&r->lock);
}

static void drop(struct run *r)
{
    if (!r->broken)
        rota__unlock(&r->lock);
}

static void *worker(void *arg)
{
    struct run *r = arg;
    for (unsigned i = 0; i < ROUNDS; i++) {
        take(r);
        if (atomic_fetch_add(&r->inside, 1) != 0)
            atomic_fetch_add(&r->overlaps, 1);
#ifdef __linux__
        if (atomic_load_explicit(&r->lock.sleepers, memory_order_relaxed))
            atomic_fetch_add(&r->saw_sleepers, 1);
#endif
        uint64_t v = atomic_load_explicit(&r->counter, memory_order_relaxed);
        if (i % 64 == 0) {
            /* Long enough that the others give up spinning and sleep. */
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        } else {
            for (int k = 0; k < 20; k++)
                __asm__ __volatile__("" ::: "memory");
        }
        atomic_store_explicit(&r->counter, v + 1, memory_order_relaxed);
        atomic_fetch_sub(&r->inside, 1);
        drop(r);
    }
    return NULL;
}

static void run_and_check(bool broken)
{
    static struct run r;
    r = (struct run){.broken = broken};
    CHECK_EQ_INT(rota__lock_init(&r.lock), 0);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ_INT(pthread_create(&t[i], NULL, worker, &r), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("counter %llu of %u, overlapping holds %d, holds that saw a "
           "sleeper %u\n",
           (unsigned long long)atomic_load(&r.counter), THREADS * ROUNDS,
           atomic_load(&r.overlaps), atomic_load(&r.saw_sleepers));
    CHECK_EQ_U64(atomic_load(&r.counter), (uint64_t)THREADS * ROUNDS);
    CHECK_EQ_INT(atomic_load(&r.overlaps), 0);
#ifdef __linux__
    if (!broken)
        CHECK(atomic_load(&r.saw_sleepers) > 0); /* the futex path ran */
    CHECK_EQ_INT((int)atomic_load(&r.lock.sleepers), 0);
#endif
    rota__lock_destroy(&r.lock);
}

TEST(lock_excludes_with_sleepers)
{
    run_and_check(false);
}

/* The checks catch a lock that lets two holders in. */
TEST(lock_check_catches_no_exclusion)
{
    unsigned long mark = h_expect_begin();
    run_and_check(true);
    unsigned long caught = h_expect_end(mark);
    printf("a lock that excludes nothing made %lu check(s) fail\n", caught);
    CHECK(caught >= 2); /* the lost updates, and the overlapping holds */
}

static const struct h_test tests[] = {H_TEST(lock_excludes_with_sleepers),
                                      H_TEST(lock_check_catches_no_exclusion)};

int main(int argc, char **argv)
{
    return h_main(argc, argv, tests, H_COUNT(tests));
}
