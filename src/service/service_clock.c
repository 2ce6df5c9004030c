/* SPDX-License-Identifier: MIT */
/*
 * service_clock.c - the clocks of rota/service.h: the default one
 * (CLOCK_MONOTONIC, or CLOCK_BOOTTIME) and the manual one for tests.
 *
 * Both implement the same three-function contract: now_ns(), wait(deadline)
 * and a sticky wake().  "Sticky" is what makes the service thread's sleep
 * race-free: a wake() that lands between the service thread's last look at
 * its queue and its call to wait() makes that wait() return at once, so no
 * submission is ever left waiting for a deadline that may be hours away.
 */
#define _GNU_SOURCE /* pthread_condattr_setclock, CLOCK_BOOTTIME */
#include "service_clock.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#endif

/* ------------------------------------------------------ the default clock */

static uint64_t sys_now(void *ctx)
{
    struct rota__sysclock *sc = ctx;
    return rota_clock_now_ns(&sc->clock);
}

static void sys_wait(void *ctx, uint64_t deadline_ns)
{
    struct rota__sysclock *sc = ctx;

    pthread_mutex_lock(&sc->mu);
    while (!atomic_load_explicit(&sc->woken, memory_order_acquire)) {
        if (deadline_ns == UINT64_MAX) {
            pthread_cond_wait(&sc->cv, &sc->mu);
            continue;
        }
        if (rota_clock_now_ns(&sc->clock) >= deadline_ns)
            break;
        struct timespec ts = {
            .tv_sec = (time_t)(deadline_ns / 1000000000u),
            .tv_nsec = (long)(deadline_ns % 1000000000u),
        };
        if (pthread_cond_timedwait(&sc->cv, &sc->mu, &ts) == ETIMEDOUT)
            break;
    }
    pthread_mutex_unlock(&sc->mu);
    /* Consume the wake.  An exchange, not a store: when it reads a wake that
     * raced with the timeout, it also acquires what the waker published
     * before waking (its submission), which the caller looks at next. */
    atomic_exchange_explicit(&sc->woken, 0, memory_order_acq_rel);
}

static void sys_wake(void *ctx)
{
    struct rota__sysclock *sc = ctx;

    /* Many producers may want to wake the same sleep: only the first pays
     * for the mutex and the signal. */
    if (atomic_exchange_explicit(&sc->woken, 1, memory_order_acq_rel) != 0)
        return;
    pthread_mutex_lock(&sc->mu);
    pthread_cond_signal(&sc->cv);
    pthread_mutex_unlock(&sc->mu);
}

#ifdef __linux__
/* ----------------------------------------- the default clock on BOOTTIME */

/* The same sticky-wake contract as sys_wait(), on descriptors: an eventfd
 * written by wake() stays readable until this wait drains it, so a wake
 * between the look at `woken` and poll() makes poll() return at once.  A
 * stale count left by a wake that raced with the drain makes the next wait
 * return early, which the contract allows. */
static void boot_wait(void *ctx, uint64_t deadline_ns)
{
    struct rota__sysclock *sc = ctx;
    struct pollfd fds[2] = {{sc->efd, POLLIN, 0}, {sc->tfd, POLLIN, 0}};
    nfds_t n = 1;

    if (deadline_ns != UINT64_MAX) {
        /* An all-zero it_value would disarm: instant 0 is long past. */
        uint64_t at = deadline_ns == 0 ? 1 : deadline_ns;
        struct itimerspec its = {
            .it_interval = {0, 0},
            .it_value = {(time_t)(at / 1000000000u), (long)(at % 1000000000u)},
        };
        if (timerfd_settime(sc->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
            n = 2;
        else
            deadline_ns = 0; /* cannot sleep until it: return, poll again */
    }
    if (deadline_ns != 0 &&
        !atomic_load_explicit(&sc->woken, memory_order_acquire))
        poll(fds, n, -1); /* EINTR: an early return, which is allowed */
    uint64_t count;
    while (read(sc->efd, &count, sizeof count) > 0)
        ;
    if (n == 2)
        while (read(sc->tfd, &count, sizeof count) > 0)
            ;
    atomic_exchange_explicit(&sc->woken, 0, memory_order_acq_rel);
}

static void boot_wake(void *ctx)
{
    struct rota__sysclock *sc = ctx;
    uint64_t one = 1;

    if (atomic_exchange_explicit(&sc->woken, 1, memory_order_acq_rel) != 0)
        return;
    /* EAGAIN (the counter is full) leaves it readable: the wake lands. */
    while (write(sc->efd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

static int boot_init(struct rota__sysclock *sc, struct rota_service_clock *out)
{
    int rc = rota_clock_init(&sc->clock, ROTA_CLOCK_BOOTTIME, 1);
    if (rc != 0)
        return rc == ROTA_ENOTSUP ? rc : ROTA_ESYS;
    sc->tfd = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
    if (sc->tfd < 0)
        return errno == EINVAL ? ROTA_ENOTSUP : ROTA_ESYS;
    sc->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (sc->efd < 0) {
        close(sc->tfd);
        sc->tfd = -1;
        return ROTA_ESYS;
    }
    atomic_init(&sc->woken, 0);
    out->now_ns = sys_now;
    out->wait = boot_wait;
    out->wake = boot_wake;
    out->ctx = sc;
    return 0;
}
#endif

int rota__sysclock_init(struct rota__sysclock *sc,
                        enum rota_clock_source source,
                        struct rota_service_clock *out)
{
    pthread_condattr_t attr;

    sc->tfd = sc->efd = -1;
    if (source == ROTA_CLOCK_BOOTTIME) {
#ifdef __linux__
        return boot_init(sc, out);
#else
        return ROTA_ENOTSUP;
#endif
    }
    if (rota_clock_init(&sc->clock, ROTA_CLOCK_MONOTONIC, 1) != 0)
        return ROTA_ESYS;
    if (pthread_condattr_init(&attr) != 0)
        return ROTA_ESYS;
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&sc->cv, &attr) != 0) {
        pthread_condattr_destroy(&attr);
        return ROTA_ESYS;
    }
    pthread_condattr_destroy(&attr);
    if (pthread_mutex_init(&sc->mu, NULL) != 0) {
        pthread_cond_destroy(&sc->cv);
        return ROTA_ESYS;
    }
    atomic_init(&sc->woken, 0);
    out->now_ns = sys_now;
    out->wait = sys_wait;
    out->wake = sys_wake;
    out->ctx = sc;
    return 0;
}

void rota__sysclock_fini(struct rota__sysclock *sc, bool forked_copy)
{
    if (sc->tfd >= 0) {
        close(sc->tfd);
        close(sc->efd);
        return;
    }
    if (forked_copy)
        return; /* a waiter of the parent's would make destroy hang */
    pthread_cond_destroy(&sc->cv);
    pthread_mutex_destroy(&sc->mu);
}

/* ------------------------------------------------------- the manual clock */

struct rota_manual_clock {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t now;
    _Atomic uint64_t waits;
    int woken;               /* under mu */
    int sleeping;            /* under mu */
    uint64_t sleep_deadline; /* under mu */
    pid_t pid;               /* the process that created it */
};

static uint64_t man_now(void *ctx)
{
    struct rota_manual_clock *mc = ctx;
    return atomic_load_explicit(&mc->now, memory_order_acquire);
}

static void man_wait(void *ctx, uint64_t deadline_ns)
{
    struct rota_manual_clock *mc = ctx;

    pthread_mutex_lock(&mc->mu);
    atomic_fetch_add_explicit(&mc->waits, 1, memory_order_relaxed);
    while (!mc->woken &&
           atomic_load_explicit(&mc->now, memory_order_relaxed) < deadline_ns) {
        mc->sleeping = 1;
        mc->sleep_deadline = deadline_ns;
        pthread_cond_wait(&mc->cv, &mc->mu);
    }
    mc->sleeping = 0;
    mc->woken = 0;
    pthread_mutex_unlock(&mc->mu);
}

static void man_wake(void *ctx)
{
    struct rota_manual_clock *mc = ctx;

    pthread_mutex_lock(&mc->mu);
    mc->woken = 1;
    pthread_cond_broadcast(&mc->cv);
    pthread_mutex_unlock(&mc->mu);
}

int rota_manual_clock_create(struct rota_manual_clock **out, uint64_t start_ns)
{
    if (out == NULL)
        return ROTA_EINVAL;
    *out = NULL;
    struct rota_manual_clock *mc = calloc(1, sizeof *mc);
    if (mc == NULL)
        return ROTA_ENOMEM;
    if (pthread_mutex_init(&mc->mu, NULL) != 0) {
        free(mc);
        return ROTA_ESYS;
    }
    if (pthread_cond_init(&mc->cv, NULL) != 0) {
        pthread_mutex_destroy(&mc->mu);
        free(mc);
        return ROTA_ESYS;
    }
    atomic_init(&mc->now, start_ns);
    atomic_init(&mc->waits, 0);
    mc->pid = getpid();
    *out = mc;
    return 0;
}

void rota_manual_clock_destroy(struct rota_manual_clock *mc)
{
    if (mc == NULL)
        return;
    /* In a child of fork(), a service thread of the parent's may have been
     * waiting on the condition variable: destroying it would wait for that
     * thread forever.  Only the memory is released there. */
    if (mc->pid == getpid()) {
        pthread_cond_destroy(&mc->cv);
        pthread_mutex_destroy(&mc->mu);
    }
    free(mc);
}

void rota_manual_clock_bind(struct rota_manual_clock *mc,
                            struct rota_service_clock *out)
{
    if (mc == NULL || out == NULL)
        return;
    out->now_ns = man_now;
    out->wait = man_wait;
    out->wake = man_wake;
    out->ctx = mc;
}

void rota_manual_clock_set(struct rota_manual_clock *mc, uint64_t now_ns)
{
    if (mc == NULL)
        return;
    pthread_mutex_lock(&mc->mu);
    if (now_ns > atomic_load_explicit(&mc->now, memory_order_relaxed))
        atomic_store_explicit(&mc->now, now_ns, memory_order_release);
    pthread_cond_broadcast(&mc->cv);
    pthread_mutex_unlock(&mc->mu);
}

void rota_manual_clock_advance(struct rota_manual_clock *mc, uint64_t delta_ns)
{
    if (mc == NULL)
        return;
    pthread_mutex_lock(&mc->mu);
    uint64_t now = atomic_load_explicit(&mc->now, memory_order_relaxed);
    now = now > UINT64_MAX - delta_ns ? UINT64_MAX : now + delta_ns;
    atomic_store_explicit(&mc->now, now, memory_order_release);
    pthread_cond_broadcast(&mc->cv);
    pthread_mutex_unlock(&mc->mu);
}

uint64_t rota_manual_clock_now(struct rota_manual_clock *mc)
{
    return mc == NULL ? 0 : man_now(mc);
}

bool rota_manual_clock_sleeping(struct rota_manual_clock *mc,
                                uint64_t *deadline_ns)
{
    if (mc == NULL)
        return false;
    pthread_mutex_lock(&mc->mu);
    bool sleeping = mc->sleeping != 0;
    if (deadline_ns != NULL)
        *deadline_ns = mc->sleep_deadline;
    pthread_mutex_unlock(&mc->mu);
    return sleeping;
}

uint64_t rota_manual_clock_waits(struct rota_manual_clock *mc)
{
    return mc == NULL ? 0
                      : atomic_load_explicit(&mc->waits, memory_order_relaxed);
}
