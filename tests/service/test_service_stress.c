/* SPDX-License-Identifier: MIT */
/*
 * test_service_stress.c - rota/service.h under concurrent abuse, on the
 * real clock; meant to run under ThreadSanitizer too.
 *
 * Several producer threads arm (one-shot and periodic, short and long
 * delays), touch, try_cancel and cancel_sync their own timers at random;
 * some callbacks are slow (so callbacks queue up for the workers and the
 * Apollo window - cancel after queueing, before starting - is hit) and some
 * arm new timers.  Each round ends with rota_service_stop() while the
 * producers are still submitting.  Afterwards, for every round:
 *   - every timer ended exactly once: one-shot fires + cancels + hand-backs
 *     == successful arms, counted by the test from return values and
 *     callbacks, and the service's own counters agree;
 *   - no callback ran before its deadline on the real clock (the earliest
 *     deadline the timer was ever given, read before the call), none ran
 *     after a cancel_sync() of its timer returned (sync-cancel in
 *     docs/DESIGN.md), none ran
 *     concurrently with itself;
 *   - rota_service_check() passes (every record is free again) and, after
 *     destroy, the allocator is back to zero bytes.
 * stress_catches_lost_fire proves the accounting can fail: one round in
 * which the test forgets one callback must fail the checks above.
 * Environment: ROTA_STRESS_MS (total time, default 2500), ROTA_STRESS_THREADS
 * (producers, default 4), ROTA_SEED.
 */
#include "test_service_common.h"

#include <sched.h>

#define SLOTS 512
#define ARENA (1u << 18)

struct tctx {
    atomic_int state; /* 0 pending, 1 fired, 2 cancelled, 3 handed back */
    atomic_int inside;
    atomic_int synced; /* a cancel_sync() of it has returned */
    _Atomic uint64_t min_deadline;
    bool periodic;
};

struct round {
    struct rota_service *svc;
    unsigned workers;
    atomic_bool stop_requested;
    atomic_bool stopped;            /* stop has returned */
    uint64_t start_ns, duration_ns; /* arms are paced over the round */
    /* Every timer's context lives here until the round ends. */
    struct tctx *arena;
    atomic_uint arena_used;
    /* The test's own accounting. */
    atomic_llong armed, fired, runs, cancelled, handed_back;
    atomic_llong early, future_deadline, double_end, after_sync, concurrent;
    atomic_llong cancelled_after_due, callback_arms;
    /* The planted fault: the first one-shot fire is not counted, as if
     * the service had lost a callback. */
    atomic_bool lose_one;
};

static struct tctx *new_ctx(struct round *r, bool periodic, uint64_t deadline)
{
    unsigned i = atomic_fetch_add(&r->arena_used, 1);
    if (i >= ARENA)
        return NULL;
    struct tctx *c = &r->arena[i];
    atomic_init(&c->state, 0);
    atomic_init(&c->inside, 0);
    atomic_init(&c->synced, 0);
    atomic_init(&c->min_deadline, deadline);
    c->periodic = periodic;
    return c;
}

static void end_once(struct round *r, struct tctx *c, int how)
{
    if (atomic_exchange(&c->state, how) != 0)
        atomic_fetch_add(&r->double_end, 1);
}

static struct round *the_round;

static void spin_ns(uint64_t ns)
{
    uint64_t end = st_mono_ns() + ns;
    while (st_mono_ns() < end)
        ;
}

static void callback(struct rota_service *svc,
                     const struct rota_service_event *ev)
{
    struct round *r = the_round;
    struct tctx *c = ev->arg;
    uint64_t now = rota_service_now(svc);

    if (now < atomic_load(&c->min_deadline))
        atomic_fetch_add(&r->early, 1); /* before any deadline it was given */
    if (now < ev->deadline_ns)
        atomic_fetch_add(&r->future_deadline, 1); /* told a wrong deadline */
    if (atomic_load(&c->synced))
        atomic_fetch_add(&r->after_sync, 1);
    if (atomic_fetch_add(&c->inside, 1) != 0)
        atomic_fetch_add(&r->concurrent, 1);
    atomic_fetch_add(&r->runs, 1);
    if (!c->periodic) {
        end_once(r, c, 1);
        if (!atomic_exchange(&r->lose_one, false))
            atomic_fetch_add(&r->fired, 1);
    }
    /* Cheap per-call randomness from the clock. */
    uint64_t x = now * 0x9e3779b97f4a7c15ull;
    if ((x >> 58) == 0) /* 1 in 64: a slow callback */
        spin_ns(50 * ST_US + (x >> 40) % (200 * ST_US));
    else if ((x >> 58) == 1) { /* 1 in 64: arm from the callback */
        uint64_t delay = (x >> 30) % (3 * ST_MS);
        struct tctx *n = new_ctx(r, false, now + delay);
        if (n != NULL) {
            int rc = rota_service_arm_in(svc, delay, callback, n, NULL);
            if (rc == 0) {
                atomic_fetch_add(&r->armed, 1);
                atomic_fetch_add(&r->callback_arms, 1);
            } else if (rc != ROTA_ESHUTDOWN) {
                atomic_fetch_add(&r->double_end, 1000000);
            }
        }
    }
    atomic_fetch_sub(&c->inside, 1);
}

static void handback(struct rota_service *svc, struct rota_service_handle h,
                     void *timer_arg, void *stop_arg)
{
    struct round *r = stop_arg;
    (void)svc;
    (void)h;
    end_once(r, timer_arg, 3);
    atomic_fetch_add(&r->handed_back, 1);
}

struct producer {
    struct round *round;
    uint64_t seed;
    pthread_t thread;
};

struct slot {
    struct rota_service_handle h;
    struct tctx *c;
    uint64_t deadline; /* latest deadline asked */
};

/* Account for a cancel's result on a slot this producer owns. */
static void account_cancel(struct round *r, struct slot *s, int rc)
{
    uint64_t now = st_mono_ns();
    if (rc == ROTA_SERVICE_CANCELLED ||
        (rc == ROTA_SERVICE_RUNNING && s->c->periodic)) {
        /* Only this producer cancels its timers: RUNNING on a periodic
         * timer means this call stopped it. */
        end_once(r, s->c, 2);
        atomic_fetch_add(&r->cancelled, 1);
        if (!s->c->periodic && now > s->deadline + 200 * ST_US)
            atomic_fetch_add(&r->cancelled_after_due, 1);
    } else if (rc != ROTA_SERVICE_NOT_PENDING && rc != ROTA_SERVICE_RUNNING) {
        atomic_fetch_add(&r->double_end, 1000000); /* an error: fail */
    }
}

static void *producer_main(void *arg)
{
    struct producer *p = arg;
    struct round *r = p->round;
    struct rota_service *svc = r->svc;
    struct slot slots[SLOTS];
    uint64_t rng = p->seed;
    bool shut = false;

    memset(slots, 0, sizeof slots);
    while (!shut) {
        uint64_t x = h_rand(&rng);
        struct slot *s = &slots[x % SLOTS];
        unsigned op = (unsigned)((x >> 16) % 100);
        if (s->c == NULL || op < 40) { /* arm */
            /* Spread the arena over the round instead of using it up. */
            uint64_t spent = st_mono_ns() - r->start_ns;
            if (atomic_load(&r->arena_used) >
                (uint64_t)ARENA * spent / r->duration_ns) {
                st_sleep_ns(20 * ST_US);
                shut = atomic_load(&r->stopped);
                continue;
            }
            bool periodic = ((x >> 24) & 15) == 0;
            uint64_t kind = (x >> 28) & 7, delay;
            if (kind < 5)
                delay = (x >> 32) % (4 * ST_MS); /* fires soon */
            else if (kind < 7)
                delay = 20 * ST_MS + (x >> 32) % (200 * ST_MS);
            else
                delay = ST_S + (x >> 32) % (10 * ST_S); /* handed back */
            uint64_t t0 = st_mono_ns();
            struct tctx *c = new_ctx(r, periodic, t0 + delay);
            if (c == NULL) {
                sched_yield();
                shut = atomic_load(&r->stopped);
                continue;
            }
            struct rota_service_handle h;
            int rc =
                periodic
                    ? rota_service_arm_periodic_in(
                          svc, delay, ST_MS + (x >> 48) % (3 * ST_MS),
                          (enum rota_missed)((x >> 40) % 3), callback, c, &h)
                    : rota_service_arm_in(svc, delay, callback, c, &h);
            if (rc == ROTA_ESHUTDOWN) {
                shut = true;
                continue;
            }
            if (rc != 0) {
                atomic_fetch_add(&r->double_end, 1000000);
                continue;
            }
            atomic_fetch_add(&r->armed, 1);
            /* The old timer of this slot is left to fire or be handed back
             * (or, periodic, to be handed back). */
            *s = (struct slot){h, c, t0 + delay};
        } else if (op < 65) {
            account_cancel(r, s, rota_service_try_cancel(svc, s->h));
            s->c = NULL;
        } else if (op < 80) {
            int rc = rota_service_cancel_sync(svc, s->h);
            /* Whatever the result, the callback is not running now and
             * never will again (sync-cancel, docs/DESIGN.md). */
            if (atomic_load(&s->c->inside) != 0)
                atomic_fetch_add(&r->after_sync, 1);
            atomic_store(&s->c->synced, 1);
            account_cancel(r, s, rc);
            s->c = NULL;
        } else if (op < 97) { /* touch */
            uint64_t delay = (x >> 32) % (6 * ST_MS);
            uint64_t t0 = st_mono_ns();
            uint64_t old = atomic_load(&s->c->min_deadline);
            if (t0 + delay < old)
                atomic_store(&s->c->min_deadline, t0 + delay);
            int rc = rota_service_touch_in(svc, s->h, delay);
            if (rc == 0)
                s->deadline = t0 + delay;
            else if (rc == ROTA_ESHUTDOWN)
                shut = true;
            else if (rc != ROTA_ENOENT)
                atomic_fetch_add(&r->double_end, 1000000);
        } else {
            sched_yield();
        }
    }
    /* Stopped: every timer was fired, cancelled or handed back, so a
     * cancel now finds nothing. */
    for (int i = 0; i < SLOTS; i++)
        if (slots[i].c != NULL)
            account_cancel(r, &slots[i],
                           rota_service_try_cancel(svc, slots[i].h));
    return NULL;
}

static void run_round(uint64_t seed, unsigned producers, unsigned workers,
                      uint64_t duration_ns, int round_no, bool lose_one)
{
    static struct round round;
    struct st_alloc alloc;
    struct rota_allocator al = st_allocator(&alloc);
    struct rota_service_config cfg = {
        .workers = workers, .allocator = &al, .initial_capacity = 256};
    struct producer prod[16];

    memset(&round, 0, sizeof round);
    round.workers = workers;
    round.arena = calloc(ARENA, sizeof *round.arena);
    the_round = &round;
    round.start_ns = st_mono_ns();
    round.duration_ns = duration_ns + duration_ns / 4;
    atomic_store(&round.lose_one, lose_one);
    CHECK_EQ_INT(rota_service_create(&round.svc, &cfg), 0);
    if (round.svc == NULL || round.arena == NULL)
        return;
    for (unsigned i = 0; i < producers; i++) {
        prod[i].round = &round;
        prod[i].seed = seed + 0x1000 * (uint64_t)(round_no + 1) + i;
        pthread_create(&prod[i].thread, NULL, producer_main, &prod[i]);
    }
    st_sleep_ns(duration_ns);
    /* Stop while the producers are still submitting. */
    atomic_store(&round.stop_requested, true);
    int handed = rota_service_stop(round.svc, handback, &round);
    atomic_store(&round.stopped, true);
    CHECK_CMP(handed, >=, 0);
    for (unsigned i = 0; i < producers; i++)
        pthread_join(prod[i].thread, NULL);

    struct rota_service_stats st;
    rota_service_stats(round.svc, &st);
    long long armed = atomic_load(&round.armed);
    long long fired = atomic_load(&round.fired);
    long long cancelled = atomic_load(&round.cancelled);
    long long back = atomic_load(&round.handed_back);
    printf(
        "round %d (%u workers): armed %lld = fired %lld + cancelled %lld + "
        "handed back %lld; callback runs %lld, %lld cancels after the "
        "deadline, %lld arms from callbacks, %llu records, queue high %llu\n",
        round_no, workers, armed, fired, cancelled, back,
        atomic_load(&round.runs), atomic_load(&round.cancelled_after_due),
        atomic_load(&round.callback_arms), (unsigned long long)st.records,
        (unsigned long long)st.queue_high);
    CHECK_EQ_INT(armed, fired + cancelled + back);
    CHECK_EQ_INT(handed, back);
    CHECK_EQ_INT(atomic_load(&round.double_end), 0);
    CHECK_EQ_INT(atomic_load(&round.early), 0);
    CHECK_EQ_INT(atomic_load(&round.future_deadline), 0);
    CHECK_EQ_INT(atomic_load(&round.after_sync), 0);
    CHECK_EQ_INT(atomic_load(&round.concurrent), 0);
    CHECK_CMP(armed, >, 0);
    CHECK_EQ_U64(st.armed, (uint64_t)armed);
    CHECK_EQ_U64(st.expired, (uint64_t)fired);
    CHECK_EQ_U64(st.cancelled, (uint64_t)(cancelled + back));
    CHECK_EQ_U64(st.handed_back, (uint64_t)back);
    CHECK_EQ_U64(st.fired, (uint64_t)atomic_load(&round.runs));
    CHECK_EQ_U64(st.pending, 0);
    const char *why = NULL;
    int rc = rota_service_check(round.svc, &why);
    if (rc != 0)
        fprintf(stderr, "  check: %s\n", why ? why : "?");
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(rota_service_destroy(round.svc), 0);
    CHECK_EQ_INT(atomic_load(&alloc.bytes), 0);
    CHECK_EQ_INT(atomic_load(&alloc.blocks), 0);
    free(round.arena);
}

static uint64_t g_seed, g_ms, g_threads;

TEST(random_producers_against_stop_account_for_every_timer)
{
    const unsigned rounds = 4;
    for (unsigned i = 0; i < rounds; i++)
        run_round(g_seed, (unsigned)g_threads, i == 1 ? 0 : 2,
                  g_ms * ST_MS / rounds, (int)i, false);
}

/* The accounting catches one callback the test did not count. */
TEST(stress_catches_lost_fire)
{
    unsigned long mark = h_expect_begin();
    run_round(g_seed, 2, 2, 300 * ST_MS, 0, true);
    unsigned long caught = h_expect_end(mark);
    printf("a lost fire made %lu check(s) fail\n", caught);
    CHECK(caught >= 2); /* the sum, and the service's expired count */
}

static const struct h_test tests[] = {
    H_TEST(stress_catches_lost_fire),
    H_TEST(random_producers_against_stop_account_for_every_timer)};

int main(int argc, char **argv)
{
    g_seed = h_seed();
    /* valgrind (ROTA_TEST_SCALE=small) runs 20-50x slower: less time would
     * mean far fewer operations, so keep the time, use fewer threads. */
    g_ms = h_env("ROTA_STRESS_MS", 2500);
    g_threads = h_env("ROTA_STRESS_THREADS", h_small() ? 2 : 4);
    if (g_threads < 1 || g_threads > 16)
        g_threads = 4;
    return h_main(argc, argv, tests, H_COUNT(tests));
}
