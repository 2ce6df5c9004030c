/* SPDX-License-Identifier: MIT */
/*
 * service_clock.h - internal: the default clock of rota/service.h.
 *
 * CLOCK_MONOTONIC for the time; a mutex, a condition variable on
 * CLOCK_MONOTONIC and a "woken" flag for the sleep.  Or CLOCK_BOOTTIME
 * (Linux): a condition variable cannot wait on it (glibc accepts only
 * MONOTONIC and REALTIME), so the sleep is a poll() on a CLOCK_BOOTTIME
 * timerfd armed at the deadline and an eventfd that wake() writes.  The
 * service embeds one (it is per service: the wake flag belongs to one
 * sleeper).
 */
#ifndef ROTA_SERVICE_CLOCK_H
#define ROTA_SERVICE_CLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "rota/clock.h"
#include "rota/service.h"

struct rota__sysclock {
    struct rota_clock clock;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int woken; /* a wake() not yet consumed by a wait() */
    int tfd, efd;     /* BOOTTIME: the sleep's timerfd and eventfd; else -1 */
};

/* `source` ROTA_CLOCK_MONOTONIC or ROTA_CLOCK_BOOTTIME.  0, ROTA_ENOTSUP
 * (no such clock here), or ROTA_ESYS; on success *out holds the function
 * table. */
int rota__sysclock_init(struct rota__sysclock *sc,
                        enum rota_clock_source source,
                        struct rota_service_clock *out);
/* forked_copy: in a child of fork(), free without destroying the mutex
 * and condition variable (see service_fork.c). */
void rota__sysclock_fini(struct rota__sysclock *sc, bool forked_copy);

#endif /* ROTA_SERVICE_CLOCK_H */
