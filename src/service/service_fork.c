/* SPDX-License-Identifier: MIT */
/*
 * service_fork.c - rota/service.h across fork(): what the child gets.
 *
 * THE PROBLEM
 *   fork() copies the memory of every thread but continues only the one
 *   that called it.  A service's threads (the service thread, the
 *   workers) do not exist in the child; a shard lock, the slab's lock or
 *   the worker queue's lock may have been held by one of them, and a far
 *   vector may have been half grown.  A child that touches the copy can
 *   hang on a lock nobody will release, or read a structure caught in the
 *   middle of a change.  And if the child somehow ran the copy, every
 *   pending timer would fire twice, once in each process: the
 *   connection's idle timeout in the parent and again in the child, a
 *   periodic flush written twice.
 *
 * THE CHOICE
 *   The copy in the child is frozen, consistent and can be released.
 *   Pre-forking servers create things before they fork more often than
 *   one would think (a library's global service, a master that set one up
 *   before deciding to daemonise), so neither "undefined" nor "hangs" is
 *   acceptable; and restarting the copy in the child (new threads,
 *   carrying on the parent's timers) would fire every timer in both
 *   processes, finish no callback that was running at the fork, and start
 *   threads from inside fork() behind the program's back, in a child
 *   where POSIX promises only async-signal-safe calls.  A child that
 *   wants timers creates its own service, knowingly.  pingora answers the
 *   same question with a pause the caller must remember to make before
 *   fork(); here it is automatic:
 *
 *   - pthread_atfork() handlers, registered with the first service, take
 *     every live service's shard locks, then its slab lock, then its
 *     worker-queue lock before the fork (the order every other path
 *     takes them in: a shard lock may be held while the slab lock is
 *     taken, never the reverse), and release them afterwards in both
 *     processes.  So the child's copy is a snapshot between operations,
 *     whatever the other threads were doing.  Callbacks run under none of
 *     these locks, so a callback may fork.
 *   - In the child each copy is marked forked.  Arm, touch, cancel,
 *     cancel_sync and sync return ROTA_EFORK; rota_service_stop() hands
 *     the pending timers back to the calling thread without running them
 *     (so the child can free what it owns of their args);
 *     rota_service_destroy() frees the copy's memory without joining
 *     threads or destroying synchronisation objects that the parent's
 *     threads were using (a condition variable with waiters copied from
 *     the parent cannot be destroyed: glibc waits for those waiters
 *     forever); rota_service_check() checks the copy on the calling
 *     thread.  now and stats work.
 *
 *   A marked flag, not a pid comparison: getpid() is a system call on
 *   current glibc, and every arm would pay for it.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads */
#include <unistd.h>

#include "service_internal.h"

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rota_service *reg_head; /* under reg_mu */
static pthread_once_t reg_once = PTHREAD_ONCE_INIT;
static int reg_rc; /* pthread_atfork()'s result */

static void lock_all(struct rota_service *svc)
{
    for (unsigned i = 0; i < svc->nshards; i++)
        rota__lock(&svc->shards[i].mu);
    pthread_mutex_lock(&svc->grow_mu);
    pthread_mutex_lock(&svc->wmu);
}

static void unlock_all(struct rota_service *svc)
{
    pthread_mutex_unlock(&svc->wmu);
    pthread_mutex_unlock(&svc->grow_mu);
    for (unsigned i = svc->nshards; i-- > 0;)
        rota__unlock(&svc->shards[i].mu);
}

static void on_prepare(void)
{
    pthread_mutex_lock(&reg_mu);
    for (struct rota_service *s = reg_head; s != NULL; s = s->reg_next)
        lock_all(s);
}

static void on_parent(void)
{
    for (struct rota_service *s = reg_head; s != NULL; s = s->reg_next)
        unlock_all(s);
    pthread_mutex_unlock(&reg_mu);
}

static void on_child(void)
{
    for (struct rota_service *s = reg_head; s != NULL; s = s->reg_next) {
        unlock_all(s);
        atomic_store_explicit(&s->forked, true, memory_order_relaxed);
        /* A thread of the parent may have held it (in stop); the child's
         * stop and check take it. */
        pthread_mutex_init(&s->stop_mu, NULL);
    }
    pthread_mutex_unlock(&reg_mu);
}

static void register_handlers(void)
{
    reg_rc = pthread_atfork(on_prepare, on_parent, on_child);
}

int rota__service_register(struct rota_service *svc)
{
    pthread_once(&reg_once, register_handlers);
    if (reg_rc != 0)
        return ROTA_ESYS;
    pthread_mutex_lock(&reg_mu);
    svc->reg_prev = NULL;
    svc->reg_next = reg_head;
    if (reg_head != NULL)
        reg_head->reg_prev = svc;
    reg_head = svc;
    pthread_mutex_unlock(&reg_mu);
    return 0;
}

void rota__service_unregister(struct rota_service *svc)
{
    pthread_mutex_lock(&reg_mu);
    if (svc->reg_prev != NULL)
        svc->reg_prev->reg_next = svc->reg_next;
    else if (reg_head == svc)
        reg_head = svc->reg_next;
    if (svc->reg_next != NULL)
        svc->reg_next->reg_prev = svc->reg_prev;
    svc->reg_prev = svc->reg_next = NULL;
    pthread_mutex_unlock(&reg_mu);
}

_Noreturn void rota__service_forked_callback_returned(void)
{
    /* This thread is the child's only one, a copy of a service thread
     * whose callback forked and returned: there is no program left to
     * return to.  _exit, not exit: the parent's atexit handlers and stdio
     * buffers are the parent's. */
    _exit(127);
}
