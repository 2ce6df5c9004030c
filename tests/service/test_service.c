/* SPDX-License-Identifier: MIT */
/*
 * test_service.c - the contract of rota/service.h, black box: only the
 * public header, on the manual clock.  Every operation, every outcome of
 * try_cancel (a latch holds a callback to reach "running"), the cancel
 * contract, the Apollo race (a cancelled timer queued for a worker never
 * runs), stale handles and handles of another service, periodic schedules
 * and missed-tick policies, the pending cap, stop's hand-back, the service
 * thread's sleeping, memory.  The internals (staging, the checker's planted
 * fault) are tested in test_service_staging.c.
 *
 * Time moves only when a test moves it; rota_service_sync() then waits
 * until the service thread has fired everything due.  Two tests use the
 * real clock to show that an idle service does not wake up; they check
 * upper bounds only.
 */
#include "test_service_fixture.h"

/* --------------------------------------------------------------- tests */

TEST(create_refuses_bad_arguments)
{
    struct rota_service *svc = (void *)1;
    struct rota_service_config cfg = {0};
    struct rota_service_clock half = {0};
    struct rota_allocator bad = {0};

    CHECK_EQ_INT(rota_service_create(NULL, NULL), ROTA_EINVAL);
    cfg.workers = ROTA_SERVICE_MAX_WORKERS + 1;
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), ROTA_EINVAL);
    CHECK(svc == NULL);
    cfg = (struct rota_service_config){.clock = &half};
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), ROTA_EINVAL);
    cfg = (struct rota_service_config){.allocator = &bad};
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_destroy(NULL), 0);
    CHECK_EQ_INT(rota_service_stop(NULL, NULL, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_sync(NULL), ROTA_EINVAL);
    CHECK_EQ_INT(
        rota_service_try_cancel(NULL, (struct rota_service_handle){0, 1, 1}),
        ROTA_EINVAL);
    CHECK_EQ_INT(
        rota_service_cancel_sync(NULL, (struct rota_service_handle){0, 1, 1}),
        ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_arm_in(NULL, 1, probe_fn, NULL, NULL),
                 ROTA_EINVAL);
    CHECK_EQ_INT(
        rota_service_touch_in(NULL, (struct rota_service_handle){0, 1, 1}, 1),
        ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_check(NULL, NULL), ROTA_EINVAL);
    const char *why = NULL;
    CHECK_EQ_INT(rota_service_check(NULL, &why), ROTA_EINVAL);
    CHECK(why != NULL);
    CHECK_EQ_INT(rota_service_now(NULL), 0);
    rota_service_stats(NULL, NULL);

    /* Defaults: the real clock, no workers. */
    CHECK_EQ_INT(rota_service_create(&svc, NULL), 0);
    CHECK_EQ_INT(rota_service_arm_in(svc, ST_MS, NULL, NULL, NULL),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_arm_periodic_in(svc, ST_MS, 0, ROTA_MISSED_SKIP,
                                              probe_fn, NULL, NULL),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_arm_periodic_in(svc, ST_MS, ST_MS,
                                              (enum rota_missed)7, probe_fn,
                                              NULL, NULL),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_destroy(svc), 0);
    /* A period the core cannot hold (over ROTA_MAX_PERIOD ticks), with
     * ticks of 1 ns, where period_ns can reach it. */
    cfg = (struct rota_service_config){.tick_ns = 1};
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0);
    CHECK_EQ_INT(rota_service_arm_periodic_in(svc, ST_MS, ROTA_MAX_PERIOD + 1,
                                              ROTA_MISSED_SKIP, probe_fn, NULL,
                                              NULL),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_arm_periodic_at(svc, ST_MS, UINT64_MAX,
                                              ROTA_MISSED_SKIP, probe_fn, NULL,
                                              NULL),
                 ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_destroy(svc), 0);
}

/* A one-shot timer fires once, exactly at its deadline and not one
 * nanosecond before, with and without workers. */
TEST(one_shot_fires_exactly_at_its_deadline)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        struct fix f;
        struct probe p = {.id = 1};
        struct rota_service_handle h = {0};
        fix_init(&f, workers);
        CHECK_EQ_INT(rota_service_now(f.svc), T0);
        CHECK_EQ_INT(rota_service_arm_in(f.svc, 10 * ST_MS, probe_fn, &p, &h),
                     0);
        CHECK(h.generation != 0);
        CHECK_EQ_INT(rota_service_sync(f.svc), 0);
        advance(&f, 10 * ST_MS - 1);
        CHECK_EQ_INT(atomic_load(&p.runs), 0);
        advance(&f, 1);
        CHECK_EQ_INT(atomic_load(&p.runs), 1);
        CHECK_EQ_U64(p.deadline[0], T0 + 10 * ST_MS);
        CHECK_EQ_U64(p.late[0], 0);
        CHECK(same(p.handle[0], h));
        advance(&f, ST_S);
        CHECK_EQ_INT(atomic_load(&p.runs), 1);
        /* An absolute deadline, not a tick multiple: rounded up. */
        uint64_t at = rota_service_now(f.svc) + 5 * ST_MS + 1;
        CHECK_EQ_INT(rota_service_arm_at(f.svc, at, probe_fn, &p, NULL), 0);
        advance(&f, 5 * ST_MS);
        CHECK_EQ_INT(atomic_load(&p.runs), 1);
        advance(&f, ST_US);
        CHECK_EQ_INT(atomic_load(&p.runs), 2);
        CHECK_EQ_U64(p.deadline[1], at - 1 + ST_US);
        struct rota_service_stats st = stats_of(&f);
        CHECK_EQ_U64(st.armed, 2);
        CHECK_EQ_U64(st.fired, 2);
        CHECK_EQ_U64(st.expired, 2);
        CHECK_EQ_U64(st.pending, 0);
        fix_fini(&f);
    }
}

/* The service thread sleeps exactly until the next deadline; a later
 * submission does not wake it, an earlier one does (bug class idle-cpu,
 * docs/DESIGN.md). */
TEST(service_thread_sleeps_until_the_next_deadline)
{
    struct fix f;
    struct probe p = {.id = 1};
    uint64_t until = 0;
    fix_init(&f, 0);

    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until), 5 * ST_S);
    CHECK_EQ_U64(until, UINT64_MAX); /* nothing pending: no deadline */

    CHECK_EQ_INT(rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &p, NULL),
                 0);
    ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until) &&
                    until == T0 + 100 * ST_MS,
                5 * ST_S);
    CHECK_EQ_U64(until, T0 + 100 * ST_MS);

    /* Earlier: the arm itself wakes the thread (no sync here). */
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 10 * ST_MS, probe_fn, &p, NULL), 0);
    ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until) &&
                    until == T0 + 10 * ST_MS,
                5 * ST_S);
    CHECK_EQ_U64(until, T0 + 10 * ST_MS);

    /* Later: no wake-up; the thread takes it in at its next deadline. */
    uint64_t waits = rota_manual_clock_waits(f.mc);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 50 * ST_MS, probe_fn, &p, NULL), 0);
    st_sleep_ns(20 * ST_MS);
    CHECK_EQ_U64(rota_manual_clock_waits(f.mc), waits);
    CHECK(rota_manual_clock_sleeping(f.mc, &until));
    CHECK_EQ_U64(until, T0 + 10 * ST_MS);

    advance(&f, 10 * ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), 1);
    ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until) &&
                    until == T0 + 50 * ST_MS,
                5 * ST_S);
    CHECK_EQ_U64(until, T0 + 50 * ST_MS);
    advance(&f, 90 * ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), 3);
    fix_fini(&f);
}

/* On the real clock: an idle service does not wake up, and neither does a
 * service whose only timer is a minute away (Netty, go-zero tick). */
TEST(idle_service_never_wakes_up)
{
    struct rota_service *svc = NULL;
    struct rota_service_stats st;
    struct probe p = {.id = 1};
    struct rota_service_handle h;

    CHECK_EQ_INT(rota_service_create(&svc, NULL), 0);
    st_sleep_ns(200 * ST_MS);
    rota_service_stats(svc, &st);
    CHECK_EQ_U64(st.wakeups, 0);
    CHECK_EQ_INT(rota_service_arm_in(svc, 60 * ST_S, probe_fn, &p, &h), 0);
    st_sleep_ns(200 * ST_MS);
    rota_service_stats(svc, &st);
    CHECK_CMPU(st.wakeups, <=, 1); /* the arm moved the next deadline */
    CHECK_EQ_INT(rota_service_try_cancel(svc, h), ROTA_SERVICE_CANCELLED);
    st_sleep_ns(100 * ST_MS);
    rota_service_stats(svc, &st);
    CHECK_CMPU(st.wakeups, <=, 1); /* a cancel never wakes it */
    CHECK_EQ_INT(rota_service_destroy(svc), 0);
    CHECK_EQ_INT(atomic_load(&p.runs), 0);
}

/* A delay is counted in ticks rounded up: the timer fires once the clock
 * reaches the first tick boundary at or after now + delay, never before.
 * The default tick (1 us) takes its own division path, so both it and a
 * tick that divides nothing evenly are checked. */
TEST(delay_rounds_up_to_a_tick_boundary)
{
    static const uint64_t ticks[2] = {0, 1500}; /* 0: the default, 1000 */
    for (int k = 0; k < 2; k++) {
        struct fix f;
        struct probe p = {.id = 1};
        uint64_t tick = ticks[k] != 0 ? ticks[k] : 1000;
        fix_init_cfg(&f, (struct rota_service_config){.tick_ns = ticks[k]});
        advance(&f, 1); /* the clock is off a tick boundary */
        uint64_t now = rota_service_now(f.svc);
        uint64_t delay = 3 * tick + 7;
        uint64_t fire = (now + delay + tick - 1) / tick * tick;
        CHECK_EQ_INT(rota_service_arm_in(f.svc, delay, probe_fn, &p, NULL), 0);
        advance(&f, delay - 1); /* just before the time asked for */
        CHECK_EQ_INT(atomic_load(&p.runs), 0);
        advance(&f, fire - 1 - rota_service_now(f.svc)); /* before the tick */
        CHECK_EQ_INT(atomic_load(&p.runs), 0);
        advance(&f, 1);
        CHECK_EQ_INT(atomic_load(&p.runs), 1);
        CHECK_EQ_U64(p.deadline[0], fire);
        fix_fini(&f);
    }
}

/* Each thread arms on its home shard of each service; a thread that arms
 * on services with different numbers of shards in turn must find the
 * right one every time (a home shard of a 4-shard service is out of a
 * 1-shard service's range: ASan and the checks below see it). */
struct two_services {
    struct rota_service *a, *b;
    int failures;
};

static void *arm_on_both(void *arg)
{
    struct two_services *t = arg;
    static struct probe p = {.id = 1};
    for (int k = 0; k < 64; k++) {
        struct rota_service_handle ha, hb;
        struct rota_service *first = k % 2 ? t->b : t->a; /* a first */
        struct rota_service *second = k % 2 ? t->a : t->b;
        if (rota_service_arm_in(first, ST_S, probe_fn, &p, &ha) != 0 ||
            rota_service_arm_in(second, ST_S, probe_fn, &p, &hb) != 0 ||
            rota_service_try_cancel(first, ha) != ROTA_SERVICE_CANCELLED ||
            rota_service_try_cancel(second, hb) != ROTA_SERVICE_CANCELLED)
            t->failures++;
    }
    /* One left pending on each, to be found by check and counted. */
    if (rota_service_arm_in(t->a, ST_S, probe_fn, &p, NULL) != 0 ||
        rota_service_arm_in(t->b, ST_S, probe_fn, &p, NULL) != 0)
        t->failures++;
    return NULL;
}

TEST(home_shard_is_per_service)
{
    struct fix fa, fb;
    fix_init_cfg(&fa, (struct rota_service_config){.shards = 4});
    fix_init_cfg(&fb, (struct rota_service_config){.shards = 1});
    struct two_services t = {fa.svc, fb.svc, 0};
    /* Threads one after another: consecutive thread numbers, so some
     * thread's home on the 4-shard service is not shard 0. */
    for (int i = 0; i < 4; i++) {
        pthread_t th;
        CHECK_EQ_INT(pthread_create(&th, NULL, arm_on_both, &t), 0);
        CHECK_EQ_INT(pthread_join(th, NULL), 0);
    }
    CHECK_EQ_INT(t.failures, 0);
    struct rota_service_stats sa = stats_of(&fa), sb = stats_of(&fb);
    CHECK_EQ_U64(sa.armed, 4 * 65);
    CHECK_EQ_U64(sa.pending, 4);
    CHECK_EQ_U64(sb.armed, 4 * 65);
    CHECK_EQ_U64(sb.pending, 4);
    fix_fini(&fa);
    fix_fini(&fb);
}

/* A clock that jumps past timers on the band lists, on the far vector and
 * in the wheel fires them all in deadline order: what was staged is moved
 * in before the wheel advances.  The wheel's timer is touched later than
 * a staged one, so an advance before the move would fire it first. */
static int order_ids[8];
static atomic_int order_n;

static void order_fn(struct rota_service *svc,
                     const struct rota_service_event *ev)
{
    (void)svc;
    int k = atomic_fetch_add(&order_n, 1);
    if (k < 8)
        order_ids[k] = (int)(intptr_t)ev->arg;
}

TEST(clock_jump_fires_staged_and_wheel_timers_in_deadline_order)
{
    struct fix f;
    struct rota_service_handle w;
    fix_init(&f, 0);
    atomic_store(&order_n, 0);
    /* 1: in the wheel (due in 100 us), then touched to 40 ms: a store. */
    CHECK_EQ_INT(
        rota_service_arm_in(f.svc, 100 * ST_US, order_fn, (void *)1, &w), 0);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    CHECK_EQ_INT(rota_service_touch_in(f.svc, w, 40 * ST_MS), 0);
    /* 0 and 2 on band lists, 3 on the far vector. */
    CHECK_EQ_INT(
        rota_service_arm_in(f.svc, 30 * ST_MS, order_fn, (void *)0, NULL), 0);
    CHECK_EQ_INT(
        rota_service_arm_in(f.svc, 700 * ST_MS, order_fn, (void *)2, NULL), 0);
    CHECK_EQ_INT(
        rota_service_arm_in(f.svc, 5 * ST_S, order_fn, (void *)3, NULL), 0);
    advance(&f, 10 * ST_S);
    CHECK_EQ_INT(atomic_load(&order_n), 4);
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(order_ids[i], i);
    fix_fini(&f);
}

TEST(try_cancel_of_a_pending_timer_reports_cancelled)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        struct fix f;
        struct probe p = {.id = 1};
        struct rota_service_handle h, g;
        fix_init(&f, workers);
        /* Cancelled before the service thread even saw the arm. */
        CHECK_EQ_INT(rota_service_arm_in(f.svc, 10 * ST_MS, probe_fn, &p, &h),
                     0);
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h), ROTA_SERVICE_CANCELLED);
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h),
                     ROTA_SERVICE_NOT_PENDING);
        /* Cancelled while filed in the wheel. */
        CHECK_EQ_INT(rota_service_arm_in(f.svc, 10 * ST_MS, probe_fn, &p, &g),
                     0);
        CHECK_EQ_INT(rota_service_sync(f.svc), 0);
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, g), ROTA_SERVICE_CANCELLED);
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, g),
                     ROTA_SERVICE_NOT_PENDING);
        advance(&f, ST_S);
        CHECK_EQ_INT(atomic_load(&p.runs), 0);
        struct rota_service_stats st = stats_of(&f);
        CHECK_EQ_U64(st.armed, 2);
        CHECK_EQ_U64(st.cancelled, 2);
        CHECK_EQ_U64(st.pending, 0);
        fix_fini(&f);
    }
}

TEST(try_cancel_after_fire_reports_not_pending)
{
    struct fix f;
    struct probe p = {.id = 1};
    struct rota_service_handle h;
    fix_init(&f, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, &h), 0);
    advance(&f, ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), 1);
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, h), ROTA_SERVICE_NOT_PENDING);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, h), ROTA_SERVICE_NOT_PENDING);
    CHECK_EQ_INT(rota_service_touch_in(f.svc, h, ST_MS), ROTA_ENOENT);
    /* Handles that never named anything (`far`: this service's, at an
     * index it never allocated). */
    struct rota_service_handle zero = {0, 0, 0};
    struct rota_service_handle far = {UINT32_MAX - 1, 1, h.service};
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, zero),
                 ROTA_SERVICE_NOT_PENDING);
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, far), ROTA_SERVICE_NOT_PENDING);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, far),
                 ROTA_SERVICE_NOT_PENDING);
    CHECK_EQ_INT(rota_service_touch_in(f.svc, far, ST_MS), ROTA_ENOENT);
    fix_fini(&f);
}

/* Hold a callback on a latch: try_cancel says RUNNING, cancel_sync waits
 * for it and returns only after the callback has returned (property
 * sync-cancel, docs/DESIGN.md). */
struct syncer {
    struct rota_service *svc;
    struct rota_service_handle h;
    atomic_int done;
    int rc;
};

static void *syncer_main(void *arg)
{
    struct syncer *s = arg;
    s->rc = rota_service_cancel_sync(s->svc, s->h);
    atomic_store(&s->done, 1);
    return NULL;
}

TEST(try_cancel_of_a_running_callback_reports_running)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        struct fix f;
        struct st_latch latch;
        struct probe p = {.id = 1, .latch = &latch};
        struct rota_service_handle h;
        struct syncer s = {0};
        pthread_t th;
        st_latch_init(&latch);
        fix_init(&f, workers);

        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, &h), 0);
        CHECK_EQ_INT(rota_service_sync(f.svc), 0);
        rota_manual_clock_advance(f.mc, ST_MS);
        ST_WAIT_FOR(atomic_load(&p.entered), 10 * ST_S);
        CHECK(atomic_load(&p.entered));
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h), ROTA_SERVICE_RUNNING);
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h), ROTA_SERVICE_RUNNING);
        CHECK_EQ_INT(rota_service_touch_in(f.svc, h, ST_MS), ROTA_ENOENT);

        s.svc = f.svc;
        s.h = h;
        pthread_create(&th, NULL, syncer_main, &s);
        st_sleep_ns(50 * ST_MS);
        CHECK_EQ_INT(atomic_load(&s.done),
                     0); /* still waiting for the callback */
        st_latch_open(&latch);
        pthread_join(th, NULL);
        CHECK_EQ_INT(s.rc, ROTA_SERVICE_NOT_PENDING); /* it had fired */
        CHECK_EQ_INT(atomic_load(&p.inside), 0);      /* ... and has returned */
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h),
                     ROTA_SERVICE_NOT_PENDING);
        CHECK_EQ_INT(rota_service_sync(f.svc), 0);
        CHECK_EQ_INT(atomic_load(&p.runs), 1);
        fix_fini(&f);
        st_latch_fini(&latch);
    }
}

/* From inside its own callback: try_cancel says RUNNING (and stops a
 * periodic timer), cancel_sync refuses with EDEADLK and changes nothing. */
static void own_cancel_sync(struct rota_service *svc, struct probe *p,
                            const struct rota_service_event *ev)
{
    p->rc = rota_service_cancel_sync(svc, ev->timer);
}

static void own_try_cancel(struct rota_service *svc, struct probe *p,
                           const struct rota_service_event *ev)
{
    if (atomic_load(&p->runs) == 2)
        p->rc = rota_service_try_cancel(svc, ev->timer);
}

TEST(cancel_from_its_own_callback_does_not_deadlock)
{
    for (unsigned workers = 0; workers <= 1; workers++) {
        struct fix f;
        struct probe a = {.id = 1, .action = own_cancel_sync};
        struct probe b = {.id = 2, .action = own_try_cancel};
        struct rota_service_handle ha, hb;
        fix_init(&f, workers);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, ST_MS, ST_MS,
                                                  ROTA_MISSED_SKIP, probe_fn,
                                                  &a, &ha),
                     0);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, ST_MS, ST_MS,
                                                  ROTA_MISSED_SKIP, probe_fn,
                                                  &b, &hb),
                     0);
        for (int i = 0; i < 5; i++)
            advance(&f, ST_MS);
        CHECK_EQ_INT(a.rc, ROTA_EDEADLK);
        CHECK_EQ_INT(atomic_load(&a.runs), 5); /* EDEADLK changed nothing */
        CHECK_EQ_INT(b.rc, ROTA_SERVICE_RUNNING);
        CHECK_EQ_INT(atomic_load(&b.runs), 2); /* stopped from its 2nd run */
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, ha),
                     ROTA_SERVICE_CANCELLED);
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, hb),
                     ROTA_SERVICE_NOT_PENDING);
        advance(&f, 5 * ST_MS);
        CHECK_EQ_INT(atomic_load(&a.runs), 5);
        struct rota_service_stats st = stats_of(&f);
        CHECK_EQ_U64(st.cancelled, 2);
        CHECK_EQ_U64(st.pending, 0);
        fix_fini(&f);
    }
}

/* cancel_sync on a periodic timer whose callback is running: it cancels
 * the next runs (returns 1) and waits for the current one. */
TEST(cancel_sync_of_a_running_periodic_cancels_next_runs_and_waits)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        struct fix f;
        struct st_latch latch;
        struct probe p = {.id = 1, .latch = &latch};
        struct syncer s = {0};
        pthread_t th;
        st_latch_init(&latch);
        fix_init(&f, workers);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, ST_MS, ST_MS,
                                                  ROTA_MISSED_BURST, probe_fn,
                                                  &p, &s.h),
                     0);
        CHECK_EQ_INT(rota_service_sync(f.svc), 0);
        rota_manual_clock_advance(f.mc, ST_MS);
        ST_WAIT_FOR(atomic_load(&p.entered), 10 * ST_S);
        /* More boundaries pass while it runs (owed under BURST). */
        rota_manual_clock_advance(f.mc, 5 * ST_MS);
        s.svc = f.svc;
        pthread_create(&th, NULL, syncer_main, &s);
        st_sleep_ns(50 * ST_MS);
        CHECK_EQ_INT(atomic_load(&s.done), 0);
        st_latch_open(&latch);
        pthread_join(th, NULL);
        CHECK_EQ_INT(s.rc, ROTA_SERVICE_CANCELLED);
        int runs = atomic_load(&p.runs);
        CHECK_EQ_INT(atomic_load(&p.inside), 0);
        advance(&f, 10 * ST_MS);
        CHECK_EQ_INT(atomic_load(&p.runs), runs); /* never again */
        CHECK_CMP(runs, <=, 6);
        fix_fini(&f);
        st_latch_fini(&latch);
    }
}

/* apollo#15810: a timer whose callback is queued for a worker, but not
 * started, is cancelled: it must never run. */
TEST(cancelled_timer_queued_for_a_worker_never_runs)
{
    struct fix f;
    struct st_latch latch;
    struct probe busy = {.id = 1}, victim = {.id = 2}, victim2 = {.id = 3};
    struct rota_service_handle hb, hv, hv2;
    st_latch_init(&latch);
    busy.latch = &latch;
    fix_init(&f, 1);

    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &busy, &hb), 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 2 * ST_MS, probe_fn, &victim, &hv),
                 0);
    CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 2 * ST_MS, ST_MS,
                                              ROTA_MISSED_BURST, probe_fn,
                                              &victim2, &hv2),
                 0);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    rota_manual_clock_advance(f.mc, ST_MS);
    ST_WAIT_FOR(atomic_load(&busy.entered), 10 * ST_S); /* the only worker */
    rota_manual_clock_advance(f.mc, 5 * ST_MS);
    /* Wait until the service thread has queued them (it sleeps after). */
    uint64_t until;
    ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until) &&
                    until > T0 + 6 * ST_MS,
                10 * ST_S);
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, hv), ROTA_SERVICE_CANCELLED);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, hv2), ROTA_SERVICE_CANCELLED);
    st_latch_open(&latch);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    CHECK_EQ_INT(atomic_load(&busy.runs), 1);
    CHECK_EQ_INT(atomic_load(&victim.runs), 0);
    CHECK_EQ_INT(atomic_load(&victim2.runs), 0);
    struct rota_service_stats st = stats_of(&f);
    CHECK_EQ_U64(st.cancelled, 2);
    CHECK_EQ_U64(st.expired, 1);
    CHECK_CMPU(st.queue_high, >=, 2); /* busy, victim and victim2 queued */
    fix_fini(&f);
    st_latch_fini(&latch);
}

/* Bug class stale-handle (docs/DESIGN.md): a handle of an ended timer never reaches the timer that
 * reuses its record. */
TEST(stale_handle_never_reaches_the_reused_record)
{
    struct fix f;
    struct probe a = {.id = 1}, b = {.id = 2};
    struct rota_service_handle ha, hb;
    fix_init(&f, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &a, &ha), 0);
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, ha), ROTA_SERVICE_CANCELLED);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0); /* the record is freed */
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 2 * ST_MS, probe_fn, &b, &hb), 0);
    CHECK_EQ_INT(hb.index, ha.index);      /* the same record, reused ... */
    CHECK(hb.generation != ha.generation); /* ... a new generation */
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, ha), ROTA_SERVICE_NOT_PENDING);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, ha), ROTA_SERVICE_NOT_PENDING);
    CHECK_EQ_INT(rota_service_touch_in(f.svc, ha, 100 * ST_S), ROTA_ENOENT);
    advance(&f, 2 * ST_MS);
    CHECK_EQ_INT(atomic_load(&a.runs), 0);
    CHECK_EQ_INT(atomic_load(&b.runs), 1);
    CHECK(same(b.handle[0], hb));
    fix_fini(&f);
}

/* A handle names a timer of the service that armed it: another service
 * given it (whose own timer may sit at the same index and generation)
 * answers "not pending" and leaves its timers alone. */
TEST(handle_of_another_service_is_not_pending_there)
{
    struct fix f1, f2;
    struct probe a = {.id = 1}, b = {.id = 2};
    struct rota_service_handle ha, hb;
    fix_init(&f1, 0);
    fix_init(&f2, 0);
    CHECK_EQ_INT(rota_service_arm_in(f1.svc, ST_MS, probe_fn, &a, &ha), 0);
    CHECK_EQ_INT(rota_service_arm_in(f2.svc, ST_MS, probe_fn, &b, &hb), 0);
    CHECK_EQ_INT(ha.index, hb.index); /* the first record of each */
    CHECK_EQ_INT(ha.generation, hb.generation);
    CHECK(!same(ha, hb));
    CHECK_EQ_INT(rota_service_touch_in(f2.svc, ha, 100 * ST_S), ROTA_ENOENT);
    CHECK_EQ_INT(rota_service_try_cancel(f2.svc, ha), ROTA_SERVICE_NOT_PENDING);
    CHECK_EQ_INT(rota_service_cancel_sync(f2.svc, ha),
                 ROTA_SERVICE_NOT_PENDING);
    advance(&f1, ST_MS);
    advance(&f2, ST_MS);
    CHECK_EQ_INT(atomic_load(&a.runs), 1);
    CHECK_EQ_INT(atomic_load(&b.runs), 1); /* untouched, not cancelled */
    CHECK(same(b.handle[0], hb));
    CHECK(!same(b.handle[0], ha));
    fix_fini(&f2);
    fix_fini(&f1);
}

TEST(touch_moves_a_pending_deadline)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        struct fix f;
        struct probe p = {.id = 1}, q = {.id = 2};
        struct rota_service_handle hp, hq;
        fix_init(&f, workers);
        /* Later: the old deadline passes silently. */
        CHECK_EQ_INT(rota_service_arm_in(f.svc, 10 * ST_MS, probe_fn, &p, &hp),
                     0);
        CHECK_EQ_INT(rota_service_touch_in(f.svc, hp, 50 * ST_MS), 0);
        /* Earlier, after the service thread has filed it. */
        CHECK_EQ_INT(rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &q, &hq),
                     0);
        CHECK_EQ_INT(rota_service_sync(f.svc), 0);
        CHECK_EQ_INT(rota_service_touch_at(f.svc, hq, T0 + 5 * ST_MS), 0);
        advance(&f, 5 * ST_MS);
        CHECK_EQ_INT(atomic_load(&q.runs), 1);
        CHECK_EQ_U64(q.deadline[0], T0 + 5 * ST_MS);
        advance(&f, 10 * ST_MS);
        CHECK_EQ_INT(atomic_load(&p.runs), 0);
        /* Touch again, from the timer's new now. */
        CHECK_EQ_INT(rota_service_touch_in(f.svc, hp, 20 * ST_MS), 0);
        advance(&f, 20 * ST_MS - ST_US);
        CHECK_EQ_INT(atomic_load(&p.runs), 0);
        advance(&f, ST_US);
        CHECK_EQ_INT(atomic_load(&p.runs), 1);
        CHECK_EQ_U64(p.deadline[0], T0 + 35 * ST_MS);
        CHECK_EQ_INT(rota_service_touch_in(f.svc, hp, ST_MS), ROTA_ENOENT);
        advance(&f, ST_S);
        CHECK_EQ_INT(atomic_load(&p.runs), 1);
        CHECK_EQ_U64(stats_of(&f).touched, 3);
        fix_fini(&f);
    }
}

/* A touched periodic timer keeps its period from the new deadline. */
TEST(touched_periodic_keeps_its_period_from_the_new_deadline)
{
    struct fix f;
    struct probe p = {.id = 1};
    struct rota_service_handle h;
    fix_init(&f, 0);
    CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 10 * ST_MS, 10 * ST_MS,
                                              ROTA_MISSED_SKIP, probe_fn, &p,
                                              &h),
                 0);
    advance(&f, 10 * ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), 1);
    CHECK_EQ_INT(rota_service_touch_in(f.svc, h, 15 * ST_MS),
                 0); /* T0 + 25 ms */
    advance(&f, 10 * ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), 1);
    advance(&f, 5 * ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), 2);
    advance(&f, 10 * ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), 3);
    CHECK_EQ_U64(p.deadline[1], T0 + 25 * ST_MS);
    CHECK_EQ_U64(p.deadline[2], T0 + 35 * ST_MS);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, h), ROTA_SERVICE_CANCELLED);
    fix_fini(&f);
}

/* Drift-free schedule: deadlines are first + k * period whatever the
 * lateness of each fire (bug class periodic-drift, docs/DESIGN.md). */
TEST(periodic_deadlines_never_drift)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        struct fix f;
        struct probe p = {.id = 1};
        struct rota_service_handle h;
        fix_init(&f, workers);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 2 * ST_MS, 2 * ST_MS,
                                                  ROTA_MISSED_SKIP, probe_fn,
                                                  &p, &h),
                     0);
        CHECK_EQ_INT(rota_service_sync(f.svc), 0);
        /* Each step is 2 ms + 300 us: fires get later, deadlines do not. */
        for (int i = 0; i < 6; i++)
            advance(&f, 2 * ST_MS + (i == 0 ? 300 * ST_US : 0));
        CHECK_EQ_INT(atomic_load(&p.runs), 6);
        for (int k = 0; k < 6; k++) {
            CHECK_EQ_U64(p.deadline[k], T0 + (uint64_t)(k + 1) * 2 * ST_MS);
            CHECK_EQ_U64(p.late[k], 300 * ST_US);
        }
        CHECK_EQ_INT(atomic_load(&p.max_inside), 1);
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, h),
                     ROTA_SERVICE_CANCELLED);
        fix_fini(&f);
    }
}

/* The missed-tick policies, with the service thread and with a worker. */
TEST(periodic_missed_tick_policies_hold)
{
    for (unsigned workers = 0; workers <= 1; workers++) {
        struct fix f;
        struct probe burst = {.id = 1}, skip = {.id = 2}, delay = {.id = 3};
        struct rota_service_handle hb, hs, hd;
        fix_init(&f, workers);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 2 * ST_MS, 2 * ST_MS,
                                                  ROTA_MISSED_BURST, probe_fn,
                                                  &burst, &hb),
                     0);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 2 * ST_MS, 2 * ST_MS,
                                                  ROTA_MISSED_SKIP, probe_fn,
                                                  &skip, &hs),
                     0);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 2 * ST_MS, 2 * ST_MS,
                                                  ROTA_MISSED_DELAY, probe_fn,
                                                  &delay, &hd),
                     0);
        CHECK_EQ_INT(rota_service_sync(f.svc), 0);
        advance(&f, 11 * ST_MS); /* boundaries 2, 4, 6, 8, 10 have passed */
        CHECK_EQ_INT(atomic_load(&burst.runs), 5);
        for (int k = 0; k < 5; k++) {
            CHECK_EQ_U64(burst.deadline[k], T0 + (uint64_t)(k + 1) * 2 * ST_MS);
            CHECK_EQ_U64(burst.late[k], (uint64_t)(9 - 2 * k) * ST_MS);
        }
        CHECK_EQ_INT(atomic_load(&skip.runs), 1);
        CHECK_EQ_U64(skip.late[0], 9 * ST_MS);
        CHECK_EQ_INT(atomic_load(&delay.runs), 1);
        advance(&f, ST_MS); /* T0 + 12: SKIP's next boundary */
        CHECK_EQ_INT(atomic_load(&skip.runs), 2);
        CHECK_EQ_U64(skip.deadline[1], T0 + 12 * ST_MS);
        CHECK_EQ_INT(atomic_load(&delay.runs), 1);
        advance(&f, ST_MS); /* T0 + 13 = 11 + 2: DELAY restarted at 11 */
        CHECK_EQ_INT(atomic_load(&delay.runs), 2);
        CHECK_EQ_U64(delay.deadline[1], T0 + 13 * ST_MS);
        CHECK_EQ_INT(atomic_load(&burst.runs), 6);
        CHECK_EQ_INT(atomic_load(&burst.max_inside), 1);
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, hb),
                     ROTA_SERVICE_CANCELLED);
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, hs),
                     ROTA_SERVICE_CANCELLED);
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, hd),
                     ROTA_SERVICE_CANCELLED);
        fix_fini(&f);
    }
}

/* Worker mode: while a periodic callback is held, BURST boundaries are
 * kept for it (each with its own deadline), SKIP ones are folded into one,
 * and the callback never runs twice at once. */
TEST(held_periodic_keeps_owed_fires_and_never_overlaps)
{
    struct fix f;
    struct st_latch latch;
    struct probe burst = {.id = 1}, skip = {.id = 2};
    struct rota_service_handle hb, hs;
    st_latch_init(&latch);
    burst.latch = &latch;
    skip.latch = &latch;
    fix_init(&f, 2);
    CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, ST_MS, ST_MS,
                                              ROTA_MISSED_BURST, probe_fn,
                                              &burst, &hb),
                 0);
    CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, ST_MS, ST_MS,
                                              ROTA_MISSED_SKIP, probe_fn, &skip,
                                              &hs),
                 0);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    rota_manual_clock_advance(f.mc, ST_MS);
    ST_WAIT_FOR(atomic_load(&burst.entered) && atomic_load(&skip.entered),
                10 * ST_S);
    for (int i = 0; i < 4; i++) { /* boundaries 2..5 while both are held */
        uint64_t until;
        rota_manual_clock_advance(f.mc, ST_MS);
        ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until) &&
                        until > rota_manual_clock_now(f.mc),
                    10 * ST_S);
    }
    st_latch_open(&latch);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    CHECK_EQ_INT(atomic_load(&burst.runs), 5);
    for (int k = 0; k < 5; k++)
        CHECK_EQ_U64(burst.deadline[k], T0 + (uint64_t)(k + 1) * ST_MS);
    CHECK_EQ_INT(atomic_load(&skip.runs), 2); /* 1, then the folded 2..5 */
    CHECK_EQ_U64(skip.deadline[1], T0 + 2 * ST_MS);
    CHECK_EQ_U64(stats_of(&f).merged, 3);
    CHECK_EQ_INT(atomic_load(&burst.max_inside), 1);
    CHECK_EQ_INT(atomic_load(&skip.max_inside), 1);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, hb), ROTA_SERVICE_CANCELLED);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, hs), ROTA_SERVICE_CANCELLED);
    fix_fini(&f);
    st_latch_fini(&latch);
}

/* Advance the manual clock and wait until the service thread has handled
 * it (it sleeps again, towards a later deadline) - without sync(), which
 * would wait for a held callback. */
static void advance_nosync(struct fix *f, uint64_t ns)
{
    uint64_t until;
    rota_manual_clock_advance(f->mc, ns);
    ST_WAIT_FOR(rota_manual_clock_sleeping(f->mc, &until) &&
                    until > rota_manual_clock_now(f->mc),
                10 * ST_S);
}

/* A BURST timer touched while runs of its old schedule wait for a worker:
 * every run is told a deadline that really came due, never one in the
 * future (the first boundary of the new schedule is folded). */
TEST(touch_while_owed_never_reports_a_future_deadline)
{
    struct fix f;
    struct st_latch latch;
    struct probe p = {.id = 1};
    struct rota_service_handle h;
    st_latch_init(&latch);
    p.latch = &latch;
    fix_init(&f, 1);
    CHECK_EQ_INT(rota_service_arm_periodic_in(
                     f.svc, ST_MS, ST_MS, ROTA_MISSED_BURST, probe_fn, &p, &h),
                 0);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    rota_manual_clock_advance(f.mc, ST_MS);
    ST_WAIT_FOR(atomic_load(&p.entered), 10 * ST_S); /* run 1 is held */
    advance_nosync(&f, ST_MS);                       /* boundary 2 owed */
    advance_nosync(&f, ST_MS);                       /* boundary 3 owed */
    CHECK_EQ_INT(rota_service_touch_in(f.svc, h, 500 * ST_US),
                 0); /* T0 + 3.5 ms */
    uint64_t until;
    ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until) &&
                    until == T0 + 3500 * ST_US,
                10 * ST_S); /* the touch woke it; now it sleeps till 3.5 */
    CHECK_EQ_U64(until, T0 + 3500 * ST_US);
    advance_nosync(&f, 500 * ST_US); /* new schedule's first boundary */
    uint64_t now = rota_manual_clock_now(f.mc);
    st_latch_open(&latch);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    CHECK_EQ_INT(atomic_load(&p.runs), 3);
    if (atomic_load(&p.runs) != 3)
        for (int k = 0; k < atomic_load(&p.runs) && k < PROBE_RUNS; k++)
            fprintf(stderr, "  run %d: deadline T0 + %llu us, late %llu us\n",
                    k, (unsigned long long)((p.deadline[k] - T0) / ST_US),
                    (unsigned long long)(p.late[k] / ST_US));
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_U64(p.deadline[k], T0 + (uint64_t)(k + 1) * ST_MS);
        CHECK_CMPU(p.deadline[k], <=, now);
        if (k > 0) /* runs 2 and 3 start after the release, at `now` */
            CHECK_EQ_U64(p.late[k], now - p.deadline[k]);
    }
    CHECK_EQ_U64(stats_of(&f).merged, 1);
    advance(&f, ST_MS); /* the new schedule goes on: T0 + 4.5 ms */
    CHECK_EQ_INT(atomic_load(&p.runs), 4);
    CHECK_EQ_U64(p.deadline[3], T0 + 4500 * ST_US);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, h), ROTA_SERVICE_CANCELLED);
    fix_fini(&f);
    st_latch_fini(&latch);
}

TEST(arm_beyond_the_pending_cap_fails)
{
    struct fix f;
    struct probe p = {.id = 1};
    struct rota_service_handle h[3];
    fix_init_cfg(&f, (struct rota_service_config){.max_pending = 2});
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, &h[0]), 0);
    CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, ST_MS, ST_MS,
                                              ROTA_MISSED_SKIP, probe_fn, &p,
                                              &h[1]),
                 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, &h[2]),
                 ROTA_EAGAIN);
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, h[0]), ROTA_SERVICE_CANCELLED);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, &h[2]), 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, NULL),
                 ROTA_EAGAIN);
    advance(&f, ST_MS); /* the one-shot fires, the periodic stays */
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, NULL), 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, NULL),
                 ROTA_EAGAIN);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, h[1]), ROTA_SERVICE_CANCELLED);
    advance(&f, ST_MS);
    fix_fini(&f);
}

/* stop hands back every pending timer, counted as cancelled; afterwards
 * arm and touch fail and cancels find nothing. */
TEST(stop_hands_back_every_pending_timer)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        struct fix f;
        struct probe a = {.id = 1}, b = {.id = 2}, c = {.id = 3};
        struct rota_service_handle ha, hb, hc;
        struct handback back = {0};
        fix_init(&f, workers);
        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &a, &ha), 0);
        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_S, probe_fn, &b, &hb), 0);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, ST_MS, ST_MS,
                                                  ROTA_MISSED_SKIP, probe_fn,
                                                  &c, &hc),
                     0);
        advance(&f, ST_MS);
        CHECK_EQ_INT(rota_service_stop(f.svc, handback_fn, &back), 2);
        CHECK_EQ_INT(back.n, 2);
        CHECK((back.args[0] == &b && back.args[1] == &c) ||
              (back.args[0] == &c && back.args[1] == &b));
        CHECK(same(back.h[0], back.args[0] == &b ? hb : hc));
        CHECK_EQ_INT(back.rc_stop, ROTA_EDEADLK);
        CHECK_EQ_INT(back.rc_sync, ROTA_EDEADLK);
        CHECK_EQ_INT(rota_service_stop(f.svc, handback_fn, &back),
                     0); /* again */
        CHECK_EQ_INT(back.n, 2);
        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &a, NULL),
                     ROTA_ESHUTDOWN);
        CHECK_EQ_INT(rota_service_touch_in(f.svc, hb, ST_MS), ROTA_ESHUTDOWN);
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, hb),
                     ROTA_SERVICE_NOT_PENDING);
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, hc),
                     ROTA_SERVICE_NOT_PENDING);
        CHECK_EQ_INT(rota_service_sync(f.svc), ROTA_ESHUTDOWN);
        rota_manual_clock_advance(f.mc, 10 * ST_S);
        struct rota_service_stats st = stats_of(&f);
        CHECK_EQ_U64(st.armed, 3);
        CHECK_EQ_U64(st.expired, 1);
        CHECK_EQ_U64(st.handed_back, 2);
        CHECK_EQ_U64(st.cancelled, 2);
        CHECK_EQ_U64(st.pending, 0);
        CHECK_EQ_INT(atomic_load(&b.runs), 0);
        fix_fini(&f); /* check() after stop, then destroy */
    }
}

/* stop while a worker holds a callback and another is queued behind it:
 * stop waits for the running one; the queued one is handed back. */
struct stopper {
    struct rota_service *svc;
    struct handback back;
    atomic_int done;
    int rc;
};

static void *stopper_main(void *arg)
{
    struct stopper *s = arg;
    s->rc = rota_service_stop(s->svc, handback_fn, &s->back);
    atomic_store(&s->done, 1);
    return NULL;
}

TEST(stop_waits_for_the_running_and_hands_back_the_queued)
{
    struct fix f;
    struct st_latch latch;
    struct probe busy = {.id = 1}, queued = {.id = 2};
    struct stopper s = {0};
    pthread_t th;
    st_latch_init(&latch);
    busy.latch = &latch;
    fix_init(&f, 1);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &busy, NULL), 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 2 * ST_MS, probe_fn, &queued, NULL),
                 0);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    rota_manual_clock_advance(f.mc, ST_MS);
    ST_WAIT_FOR(atomic_load(&busy.entered), 10 * ST_S);
    uint64_t until;
    rota_manual_clock_advance(f.mc, ST_MS);
    ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until) && until == UINT64_MAX,
                10 * ST_S);
    s.svc = f.svc;
    pthread_create(&th, NULL, stopper_main, &s);
    st_sleep_ns(50 * ST_MS);
    CHECK_EQ_INT(atomic_load(&s.done), 0); /* joining the busy worker */
    st_latch_open(&latch);
    pthread_join(th, NULL);
    CHECK_EQ_INT(s.rc, 1);
    CHECK_EQ_INT(s.back.n, 1);
    CHECK(s.back.args[0] == &queued);
    CHECK_EQ_INT(atomic_load(&queued.runs), 0);
    CHECK_EQ_INT(atomic_load(&busy.runs), 1);
    fix_fini(&f);
    st_latch_fini(&latch);
}

/* From a callback: sync, stop, check and destroy refuse (EDEADLK). */
static void call_lifecycle(struct rota_service *svc, struct probe *p,
                           const struct rota_service_event *ev)
{
    (void)ev;
    int bad = 0;
    bad += rota_service_sync(svc) != ROTA_EDEADLK;
    bad += rota_service_stop(svc, NULL, NULL) != ROTA_EDEADLK;
    bad += rota_service_check(svc, NULL) != ROTA_EDEADLK;
    bad += rota_service_destroy(svc) != ROTA_EDEADLK;
    p->rc = bad;
}

TEST(lifecycle_calls_from_a_callback_refuse_with_edeadlk)
{
    for (unsigned workers = 0; workers <= 1; workers++) {
        struct fix f;
        struct probe p = {.id = 1, .action = call_lifecycle, .rc = -1};
        fix_init(&f, workers);
        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, NULL), 0);
        advance(&f, ST_MS);
        CHECK_EQ_INT(atomic_load(&p.runs), 1);
        CHECK_EQ_INT(p.rc, 0);
        fix_fini(&f);
    }
}

/* callback-safety (docs/DESIGN.md) and order: equal deadlines fire in arm order; a callback may cancel
 * a timer due in the same pass (it does not run) and arm new ones. */
static void cancel_other(struct rota_service *svc, struct probe *p,
                         const struct rota_service_event *ev)
{
    (void)ev;
    p->rc = rota_service_try_cancel(svc, p->other);
}

TEST(equal_deadlines_fire_in_arm_order_and_cancel_in_batch_holds)
{
    struct fix f;
    int order[8];
    atomic_int n = 0;
    struct probe p[4];
    struct rota_service_handle h[4];
    fix_init(&f, 0);
    for (int i = 0; i < 4; i++) {
        memset(&p[i], 0, sizeof p[i]);
        p[i].id = i;
        p[i].order = order;
        p[i].order_n = &n;
    }
    p[1].action = cancel_other;
    for (int i = 0; i < 4; i++)
        CHECK_EQ_INT(
            rota_service_arm_in(f.svc, 5 * ST_MS, probe_fn, &p[i], &h[i]), 0);
    p[1].other = h[2];
    advance(&f, 5 * ST_MS);
    CHECK_EQ_INT(atomic_load(&n), 3);
    CHECK_EQ_INT(order[0], 0);
    CHECK_EQ_INT(order[1], 1);
    CHECK_EQ_INT(order[2], 3);
    CHECK_EQ_INT(p[1].rc, ROTA_SERVICE_CANCELLED);
    CHECK_EQ_INT(atomic_load(&p[2].runs), 0);
    fix_fini(&f);
}

/* A callback that re-arms itself with delay 0 does not loop within one
 * pass: each sync sees one more run (libuv#4245). */
static void rearm_zero(struct rota_service *svc, struct probe *p,
                       const struct rota_service_event *ev)
{
    (void)ev;
    if (atomic_load(&p->runs) < 1000)
        p->rc = rota_service_arm_in(svc, 0, probe_fn, p, NULL);
}

TEST(zero_delay_rearm_from_a_callback_makes_progress)
{
    struct fix f;
    struct probe p = {.id = 1, .action = rearm_zero};
    fix_init(&f, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 0, probe_fn, &p, NULL), 0);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    CHECK_CMP(atomic_load(&p.runs), >=, 1);
    ST_WAIT_FOR(atomic_load(&p.runs) == 1000, 10 * ST_S); /* it keeps going */
    CHECK_EQ_INT(atomic_load(&p.runs), 1000);
    CHECK_EQ_INT(p.rc, 0);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    fix_fini(&f);
}

/* Bug class huge-delay (docs/DESIGN.md): huge delays saturate; they never wrap into the past. */
TEST(huge_delay_saturates_and_never_wraps)
{
    struct fix f;
    struct probe p = {.id = 1};
    struct rota_service_handle h;
    uint64_t until;
    fix_init(&f, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, UINT64_MAX, probe_fn, &p, &h), 0);
    CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, UINT64_MAX - 5, UINT64_MAX,
                                              ROTA_MISSED_BURST, probe_fn, &p,
                                              NULL),
                 0);
    advance(&f, 365 * 24 * 3600 * ST_S);
    CHECK_EQ_INT(atomic_load(&p.runs), 0);
    ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until), 5 * ST_S);
    CHECK_CMPU(until, >, 1000000 * ST_S);
    CHECK_EQ_INT(rota_service_touch_in(f.svc, h, UINT64_MAX), 0);
    advance(&f, 365 * 24 * 3600 * ST_S);
    CHECK_EQ_INT(atomic_load(&p.runs), 0);
    fix_fini(&f); /* destroy with pending timers: nothing leaks */
}

/* Statistics: counters and the lateness histogram. */
TEST(stats_count_operations_and_lateness)
{
    struct fix f;
    struct probe p = {.id = 1};
    fix_init(&f, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, NULL), 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, NULL), 0);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    advance(&f, ST_MS + 3 * ST_MS); /* 3 ms late: bucket [2048, 4096) us */
    advance(&f, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, NULL), 0);
    advance(&f, ST_MS);
    struct rota_service_stats st = stats_of(&f);
    CHECK_EQ_U64(st.armed, 3);
    CHECK_EQ_U64(st.fired, 3);
    CHECK_EQ_U64(st.late[12], 2);
    CHECK_EQ_U64(st.late[0], 1);
    uint64_t total = 0;
    for (int b = 0; b < ROTA_SERVICE_LATE_BUCKETS; b++)
        total += st.late[b];
    CHECK_EQ_U64(total, st.fired);
    CHECK_CMPU(st.records, >=, 64);
    CHECK_EQ_U64(st.bytes, (uint64_t)atomic_load(&f.alloc.bytes));
    CHECK_EQ_U64(st.queue_high, 0); /* no workers: nothing waits for one */
    fix_fini(&f);
}

/* The slab grows in chunks past its initial capacity and every record is
 * reused; a cancel frees its record at once, without waking the service
 * thread (bug classes lingering-cancel and idle-cpu, docs/DESIGN.md). */
TEST(slab_grows_in_chunks_and_reuses_every_record)
{
    enum { N = 3000 };
    static struct rota_service_handle h[N];
    struct fix f;
    struct probe p = {.id = 1};
    fix_init_cfg(&f, (struct rota_service_config){.initial_capacity = 64});
    for (int i = 0; i < N; i++)
        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_S + (uint64_t)i * ST_US,
                                         probe_fn, &p, &h[i]),
                     0);
    struct rota_service_stats st = stats_of(&f);
    CHECK_CMPU(st.records, >=, N);
    CHECK_CMPU(st.records, <, 4 * N);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    uint64_t until;
    ST_WAIT_FOR(rota_manual_clock_sleeping(f.mc, &until), 5 * ST_S);
    uint64_t waits = rota_manual_clock_waits(f.mc);
    for (int i = 0; i < N; i++)
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h[i]),
                     ROTA_SERVICE_CANCELLED);
    st_sleep_ns(20 * ST_MS);
    CHECK_EQ_U64(rota_manual_clock_waits(f.mc), waits); /* no wake-up */
    const char *why = NULL;
    CHECK_EQ_INT(rota_service_check(f.svc, &why), 0); /* all records are free */
    uint64_t records = stats_of(&f).records;
    for (int i = 0; i < N; i++) /* reuse: no growth */
        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p, NULL), 0);
    CHECK_EQ_U64(stats_of(&f).records, records);
    advance(&f, ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), N);
    fix_fini(&f);
}

TEST(allocation_failure_refuses_and_leaves_the_service_intact)
{
    struct st_alloc a;
    struct rota_allocator al = st_allocator(&a);
    struct rota_service *svc = NULL;
    struct rota_service_config cfg = {
        .allocator = &al, .shards = 1, .initial_capacity = 64};
    for (int fail = 0; fail < 3; fail++) {
        atomic_store(&a.fail_after, fail);
        CHECK_EQ_INT(rota_service_create(&svc, &cfg), ROTA_ENOMEM);
        CHECK_EQ_INT(atomic_load(&a.bytes), 0);
    }
    atomic_store(&a.fail_after, -1);
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0);
    atomic_store(&a.fail_after, 0);
    int ok = 0, rc = 0;
    while ((rc = rota_service_arm_in(svc, ST_S, probe_fn, NULL, NULL)) == 0)
        ok++;
    CHECK_EQ_INT(rc, ROTA_ENOMEM);
    CHECK_EQ_INT(ok, 64); /* chunk 0, then no memory for chunk 1 */
    atomic_store(&a.fail_after, -1);
    CHECK_EQ_INT(rota_service_arm_in(svc, ST_S, probe_fn, NULL, NULL), 0);
    struct rota_service_stats st;
    rota_service_stats(svc, &st);
    CHECK_EQ_U64(st.armed, 65);
    CHECK_EQ_U64(st.pending, 65);
    CHECK_EQ_INT(rota_service_check(svc, NULL), 0);
    CHECK_EQ_INT(rota_service_destroy(svc), 0);
    CHECK_EQ_INT(atomic_load(&a.bytes), 0);
}

static const struct h_test tests[] = {
    H_TEST(create_refuses_bad_arguments),
    H_TEST(one_shot_fires_exactly_at_its_deadline),
    H_TEST(service_thread_sleeps_until_the_next_deadline),
    H_TEST(idle_service_never_wakes_up),
    H_TEST(try_cancel_of_a_pending_timer_reports_cancelled),
    H_TEST(try_cancel_after_fire_reports_not_pending),
    H_TEST(try_cancel_of_a_running_callback_reports_running),
    H_TEST(cancel_from_its_own_callback_does_not_deadlock),
    H_TEST(cancel_sync_of_a_running_periodic_cancels_next_runs_and_waits),
    H_TEST(cancelled_timer_queued_for_a_worker_never_runs),
    H_TEST(stale_handle_never_reaches_the_reused_record),
    H_TEST(handle_of_another_service_is_not_pending_there),
    H_TEST(touch_moves_a_pending_deadline),
    H_TEST(touched_periodic_keeps_its_period_from_the_new_deadline),
    H_TEST(periodic_deadlines_never_drift),
    H_TEST(periodic_missed_tick_policies_hold),
    H_TEST(held_periodic_keeps_owed_fires_and_never_overlaps),
    H_TEST(touch_while_owed_never_reports_a_future_deadline),
    H_TEST(arm_beyond_the_pending_cap_fails),
    H_TEST(stop_hands_back_every_pending_timer),
    H_TEST(stop_waits_for_the_running_and_hands_back_the_queued),
    H_TEST(lifecycle_calls_from_a_callback_refuse_with_edeadlk),
    H_TEST(equal_deadlines_fire_in_arm_order_and_cancel_in_batch_holds),
    H_TEST(zero_delay_rearm_from_a_callback_makes_progress),
    H_TEST(huge_delay_saturates_and_never_wraps),
    H_TEST(stats_count_operations_and_lateness),
    H_TEST(slab_grows_in_chunks_and_reuses_every_record),
    H_TEST(allocation_failure_refuses_and_leaves_the_service_intact),
    H_TEST(delay_rounds_up_to_a_tick_boundary),
    H_TEST(home_shard_is_per_service),
    H_TEST(clock_jump_fires_staged_and_wheel_timers_in_deadline_order),
};

int main(int argc, char **argv)
{
    return h_main(argc, argv, tests, H_COUNT(tests));
}
