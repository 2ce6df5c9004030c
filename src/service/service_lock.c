/* SPDX-License-Identifier: MIT */
/*
 * service_lock.c - the contended paths of the shard lock (service_lock.h):
 * a short spin, then naps on the futex.  Out of line so that only this
 * file needs syscall()'s feature macro.
 */
#define _DEFAULT_SOURCE /* syscall() */
#include "service_lock.h"

#ifdef __linux__
#include <linux/futex.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LOCK_SPINS 128 /* a few microseconds: longer than a normal hold */
/* The longest a contender sleeps on a wake the holder missed (see
 * service_lock.h): a lost wake needs the holder's store and load to
 * straddle the contender's count and sleep, so it is rare, and this caps
 * what it costs. */
#define LOCK_NAP_NS 100000

static inline void rota__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static bool try_take(struct rota__lock *l)
{
    uint32_t c = 0;
    return atomic_compare_exchange_strong_explicit(
        &l->word, &c, 1, memory_order_acquire, memory_order_relaxed);
}

void rota__lock_slow(struct rota__lock *l)
{
    for (int i = 0; i < LOCK_SPINS; i++) {
        rota__cpu_relax();
        if (atomic_load_explicit(&l->word, memory_order_relaxed) == 0 &&
            try_take(l))
            return;
    }
    /* Counted before the first look at the word: a holder that drops the
     * lock after this count is visible to it wakes us. */
    atomic_fetch_add_explicit(&l->sleepers, 1, memory_order_seq_cst);
    while (!try_take(l)) {
        struct timespec nap = {0, LOCK_NAP_NS};
        syscall(SYS_futex, (void *)&l->word, FUTEX_WAIT_PRIVATE, 1, &nap, NULL,
                0);
    }
    atomic_fetch_sub_explicit(&l->sleepers, 1, memory_order_relaxed);
}

void rota__lock_wake(struct rota__lock *l)
{
    syscall(SYS_futex, (void *)&l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#else
typedef int rota__no_futex; /* ISO C wants something in a translation unit */
#endif
