/* SPDX-License-Identifier: MIT */
/*
 * service_lock.c - the contended paths of the shard lock (service_lock.h):
 * a short spin, then the futex.  Out of line so that only this file needs
 * syscall()'s feature macro.
 */
#define _DEFAULT_SOURCE /* syscall() */
#include "service_lock.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOCK_SPINS 128 /* a few microseconds: longer than a normal hold */

static inline void rota__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void rota__lock_slow(struct rota__lock *l)
{
    for (int i = 0; i < LOCK_SPINS; i++) {
        rota__cpu_relax();
        uint32_t c = atomic_load_explicit(&l->word, memory_order_relaxed);
        if (c == 0 &&
            atomic_compare_exchange_weak_explicit(
                &l->word, &c, 1, memory_order_acquire, memory_order_relaxed))
            return;
    }
    /* Mark it contended, so that whoever drops it wakes a sleeper; taken
     * this way it stays marked (another may sleep still). */
    while (atomic_exchange_explicit(&l->word, 2, memory_order_acquire) != 0)
        syscall(SYS_futex, (void *)&l->word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL,
                0);
}

void rota__lock_wake(struct rota__lock *l)
{
    syscall(SYS_futex, (void *)&l->word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#else
typedef int rota__no_futex; /* ISO C wants something in a translation unit */
#endif
