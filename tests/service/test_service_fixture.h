/* SPDX-License-Identifier: MIT */
/*
 * test_service_fixture.h - what test_service.c (the contract, black box)
 * and test_service_staging.c (the internals) share: a service on the
 * manual clock with a counting allocator, a probe callback that records
 * each run, and a stop hand-back recorder.
 */
#ifndef ROTA_TEST_SERVICE_FIXTURE_H
#define ROTA_TEST_SERVICE_FIXTURE_H

#include "test_service_common.h"

#define T0 (1000 * ST_S) /* the manual clock's start */

/* ------------------------------------------------------------- fixture */

struct fix {
    struct rota_manual_clock *mc;
    struct rota_service *svc;
    struct st_alloc alloc;
    struct rota_allocator allocator;
};

static inline void fix_init_cfg(struct fix *f, struct rota_service_config cfg)
{
    struct rota_service_clock clock;
    CHECK_EQ_INT(rota_manual_clock_create(&f->mc, T0), 0);
    rota_manual_clock_bind(f->mc, &clock);
    f->allocator = st_allocator(&f->alloc);
    cfg.clock = &clock;
    cfg.allocator = &f->allocator;
    f->svc = NULL;
    CHECK_EQ_INT(rota_service_create(&f->svc, &cfg), 0);
}

static inline void fix_init(struct fix *f, unsigned workers)
{
    fix_init_cfg(f, (struct rota_service_config){.workers = workers});
}

static inline void fix_fini(struct fix *f)
{
    const char *why = NULL;
    int rc = rota_service_check(f->svc, &why);
    if (rc != 0)
        fprintf(stderr, "  check: %s\n", why ? why : "?");
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(rota_service_destroy(f->svc), 0);
    CHECK_EQ_INT(atomic_load(&f->alloc.bytes), 0); /* memory back to baseline */
    CHECK_EQ_INT(atomic_load(&f->alloc.blocks), 0);
    rota_manual_clock_destroy(f->mc);
}

/* Move the clock and wait until everything due has fired. */
static inline void advance(struct fix *f, uint64_t ns)
{
    rota_manual_clock_advance(f->mc, ns);
    CHECK_EQ_INT(rota_service_sync(f->svc), 0);
}

static inline struct rota_service_stats stats_of(struct fix *f)
{
    struct rota_service_stats st;
    rota_service_stats(f->svc, &st);
    return st;
}

/* ---------------------------------------------------- a probe callback */

#define PROBE_RUNS 32

struct probe {
    int id;
    atomic_int runs;
    atomic_int entered;
    atomic_int inside;
    atomic_int max_inside;
    struct st_latch *latch; /* when set, the callback waits on it */
    uint64_t deadline[PROBE_RUNS];
    uint64_t late[PROBE_RUNS];
    struct rota_service_handle handle[PROBE_RUNS];
    /* Optional action, run inside the callback. */
    void (*action)(struct rota_service *svc, struct probe *p,
                   const struct rota_service_event *ev);
    int rc;
    struct rota_service_handle other;
    int *order; /* when set, ids are appended to it */
    atomic_int *order_n;
};

static inline void probe_fn(struct rota_service *svc,
                            const struct rota_service_event *ev)
{
    struct probe *p = ev->arg;
    int k = atomic_fetch_add(&p->runs, 1);
    int in = atomic_fetch_add(&p->inside, 1) + 1;
    if (in > atomic_load(&p->max_inside))
        atomic_store(&p->max_inside, in);
    if (k < PROBE_RUNS) {
        p->deadline[k] = ev->deadline_ns;
        p->late[k] = ev->late_ns;
        p->handle[k] = ev->timer;
    }
    if (p->order != NULL)
        p->order[atomic_fetch_add(p->order_n, 1)] = p->id;
    if (p->action != NULL)
        p->action(svc, p, ev);
    atomic_store(&p->entered, 1);
    if (p->latch != NULL)
        st_latch_wait(p->latch);
    atomic_fetch_sub(&p->inside, 1);
}

static inline bool same(struct rota_service_handle a,
                        struct rota_service_handle b)
{
    return a.index == b.index && a.generation == b.generation &&
           a.service == b.service;
}

/* ------------------------------------------------- stop's hand-back */

struct handback {
    int n;
    void *args[8];
    struct rota_service_handle h[8];
    int rc_stop, rc_sync;
};

static inline void handback_fn(struct rota_service *svc,
                               struct rota_service_handle timer,
                               void *timer_arg, void *stop_arg)
{
    struct handback *hb = stop_arg;
    if (hb->n < 8) {
        hb->args[hb->n] = timer_arg;
        hb->h[hb->n] = timer;
    }
    hb->n++;
    hb->rc_stop = rota_service_stop(svc, NULL, NULL);
    hb->rc_sync = rota_service_sync(svc);
}

#endif /* ROTA_TEST_SERVICE_FIXTURE_H */
