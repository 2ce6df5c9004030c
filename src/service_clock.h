/* SPDX-License-Identifier: MIT */
/*
 * service_clock.h - internal: the default clock of rota/service.h.
 *
 * CLOCK_MONOTONIC for the time; a mutex, a condition variable on
 * CLOCK_MONOTONIC and a "woken" flag for the sleep.  The service embeds one
 * (it is per service: the wake flag belongs to one sleeper).
 */
#ifndef ROTA_SERVICE_CLOCK_H
#define ROTA_SERVICE_CLOCK_H

#include <pthread.h>
#include <stdatomic.h>

#include "rota/clock.h"
#include "rota/service.h"

struct rota__sysclock {
    struct rota_clock clock;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int woken; /* a wake() not yet consumed by a wait() */
};

/* 0, or ROTA_ESYS; on success *out holds the function table. */
int rota__sysclock_init(struct rota__sysclock *sc,
                        struct rota_service_clock *out);
void rota__sysclock_fini(struct rota__sysclock *sc);

#endif /* ROTA_SERVICE_CLOCK_H */
