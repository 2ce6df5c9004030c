/* SPDX-License-Identifier: MIT */
/*
 * test_service_staging.c - rota/service.h's internals, white box: the only
 * test that includes src/service/service_internal.h.  Staging (band lists and the
 * far vector, src/service/service_stage.c): where a timer waits before it enters
 * its shard's wheel, and that cancel, touch, stop, equal deadlines, memory
 * failure, sleeping, the top of time, the pending cap and a clock going
 * back all hold while it does; and rota_service_check() catching a planted
 * fault in a record.  The contract itself is tested, black box, in
 * test_service.c.
 */
#include "test_service_fixture.h"

#include "../../src/service/service_internal.h"

/* The checker must be able to fail: plant a fault (a pending timer whose
 * record says it has ended) and see it reported. */
TEST(service_check_catches_planted_fault)
{
    struct fix f;
    struct probe p = {.id = 1};
    struct rota_service_handle h;
    const char *why = NULL;
    fix_init(&f, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_S, probe_fn, &p, &h), 0);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    CHECK_EQ_INT(rota_service_check(f.svc, &why), 0);
    struct rec *r = rec_at(f.svc, h.index);
    atomic_fetch_and(&r->word, ~(uint64_t)F_LIVE);
    CHECK_EQ_INT(rota_service_check(f.svc, &why), ROTA_ECORRUPT);
    CHECK(why != NULL);
    printf("     planted fault reported: %s\n", why ? why : "(none)");
    atomic_fetch_or(&r->word, (uint64_t)F_LIVE);
    CHECK_EQ_INT(rota_service_check(f.svc, &why), 0);
    fix_fini(&f);
}

/* A one-shot arm writes nothing on the record's second line, so the
 * period a periodic timer of an earlier generation left in pt.sched_ is
 * cleared when the one-shot record enters the wheel (else the core would
 * fire it again, and again).  The record is reused (free chains are
 * LIFO), fires once, and the checker catches a period planted on it. */
TEST(one_shot_record_reused_after_a_periodic_carries_no_period)
{
    struct fix f;
    struct probe p = {.id = 1}, q = {.id = 2};
    struct rota_service_handle hp, ho;
    const char *why = NULL;
    fix_init(&f, 0);
    CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 100 * ST_MS, 50 * ST_MS,
                                              ROTA_MISSED_SKIP, probe_fn, &p,
                                              &hp),
                 0);
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, hp), ROTA_SERVICE_CANCELLED);
    /* Within a band: straight into the wheel. */
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &q, &ho), 0);
    CHECK_EQ_U64(ho.index, hp.index);
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    CHECK_EQ_INT(rota_service_check(f.svc, &why), 0);

    struct rec *r = rec_at(f.svc, ho.index);
    struct shard *sh = shard_of(f.svc, r);
    rota__lock(&sh->mu);
    CHECK(rota_timer_pending(&r->pt.timer));
    CHECK_EQ_U64(rota__sched_period(r->pt.sched_), 0);
    /* the fault: the period left behind */
    r->pt.sched_ = rota__sched(7, ROTA_MISSED_SKIP);
    rota__unlock(&sh->mu);
    CHECK_EQ_INT(rota_service_check(f.svc, &why), ROTA_ECORRUPT);
    CHECK(why != NULL);
    printf("     planted fault reported: %s\n", why ? why : "(none)");
    rota__lock(&sh->mu);
    r->pt.sched_ = rota__sched(0, ROTA_MISSED_SKIP);
    rota__unlock(&sh->mu);
    CHECK_EQ_INT(rota_service_check(f.svc, &why), 0);

    advance(&f, ST_S);
    CHECK_EQ_INT(atomic_load(&q.runs), 1);
    CHECK_EQ_INT(atomic_load(&p.runs), 0);
    CHECK_EQ_U64(stats_of(&f).expired, 1);
    CHECK_EQ_U64(stats_of(&f).pending, 0);
    CHECK_EQ_INT(rota_service_check(f.svc, &why), 0);
    fix_fini(&f);
}

/* ------------------------------------------------------ staged timers */

/* Timers due more than a band (STAGE_SHIFT ticks: 2.048 ms of the default
 * 1 us tick) ahead, and within STAGE_BANDS bands (~2.1 s), wait on their
 * shard's band list before they enter the wheel (see "Staging" in
 * service.c).  These tests look at where a timer is with the internal
 * structures, under the shard's lock, and only while the service thread
 * sleeps: an "anchor" timer filed in the wheel before any band's move keeps
 * the thread from moving bands early, so what is staged stays staged. */

/* Whether the timer `h` names is staged: on the far vector if `far`, else
 * on a band list. */
static bool staged_as(struct fix *f, struct rota_service_handle h, bool far)
{
    struct rec *r = rec_at(f->svc, h.index);
    struct shard *sh = shard_of(f->svc, r);
    rota__lock(&sh->mu);
    bool s = gen_of(atomic_load(&r->word)) == h.generation &&
             r->sband != STAGE_NONE && (r->sband == STAGE_FAR) == far;
    rota__unlock(&sh->mu);
    return s;
}

/* Whether the timer `h` names waits on a band list. */
static bool staged(struct fix *f, struct rota_service_handle h)
{
    return staged_as(f, h, false);
}

/* Whether the timer `h` names waits on its shard's far vector. */
static bool far_staged(struct fix *f, struct rota_service_handle h)
{
    return staged_as(f, h, true);
}

/* Beyond the far horizon (FAR_BANDS bands past far_from): to the wheel. */
#define BEYOND_FAR (140 * ST_S)

/* Wait until the service thread sleeps until exactly `until`. */
static void wait_asleep(struct fix *f, uint64_t until)
{
    uint64_t u = 0;
    ST_WAIT_FOR(rota_manual_clock_sleeping(f->mc, &u) && u == until, 10 * ST_S);
    CHECK_EQ_U64(u, until);
}

/* Cancel of a staged timer (try_cancel and cancel_sync, one-shot and
 * periodic): it leaves its band list at once, never fires, its record is
 * reused by a new generation, and the stale handle finds nothing. */
TEST(cancelled_staged_timer_never_fires_and_its_record_is_reused)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        struct fix f;
        struct probe a = {.id = 1}, s1 = {.id = 2}, s2 = {.id = 3},
                     s3 = {.id = 4};
        struct rota_service_handle ha, h1, h2, h3;
        fix_init(&f, workers);
        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &a, &ha), 0);
        CHECK_EQ_INT(
            rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &s1, &h1), 0);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 200 * ST_MS,
                                                  50 * ST_MS, ROTA_MISSED_SKIP,
                                                  probe_fn, &s2, &h2),
                     0);
        wait_asleep(&f, T0 + ST_MS);
        CHECK(!staged(&f, ha));
        CHECK(staged(&f, h1));
        CHECK(staged(&f, h2));
        CHECK_EQ_U64(stats_of(&f).pending, 3); /* staged ones count */
        CHECK_EQ_INT(rota_service_check(f.svc, NULL), 0);

        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h1),
                     ROTA_SERVICE_CANCELLED);
        CHECK(!staged(&f, h1));
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h1),
                     ROTA_SERVICE_NOT_PENDING);
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, h2),
                     ROTA_SERVICE_CANCELLED);
        CHECK_EQ_INT(rota_service_cancel_sync(f.svc, h2),
                     ROTA_SERVICE_NOT_PENDING);
        CHECK_EQ_U64(stats_of(&f).pending, 1);
        CHECK_EQ_INT(rota_service_check(f.svc, NULL), 0);

        /* The record is reused, staged again under a new generation. */
        CHECK_EQ_INT(
            rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &s3, &h3), 0);
        CHECK(staged(&f, h3));
        CHECK(h3.index == h1.index || h3.index == h2.index);
        CHECK(!same(h3, h1) && !same(h3, h2));
        CHECK_EQ_INT(rota_service_touch_in(f.svc, h1, ST_MS), ROTA_ENOENT);
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h2),
                     ROTA_SERVICE_NOT_PENDING);
        CHECK(staged(&f, h3));

        advance(&f, ST_S);
        CHECK_EQ_INT(atomic_load(&a.runs), 1);
        CHECK_EQ_INT(atomic_load(&s1.runs), 0);
        CHECK_EQ_INT(atomic_load(&s2.runs), 0);
        CHECK_EQ_INT(atomic_load(&s3.runs), 1);
        CHECK_EQ_U64(s3.deadline[0], T0 + 100 * ST_MS);
        struct rota_service_stats st = stats_of(&f);
        CHECK_EQ_U64(st.armed, 4);
        CHECK_EQ_U64(st.cancelled, 2);
        CHECK_EQ_U64(st.expired, 2);
        CHECK_EQ_U64(st.pending, 0);
        fix_fini(&f);
    }
}

/* Touch of a staged timer: later to another band, earlier within the
 * staged range, earlier into the range filed in the wheel at once (and
 * before the thread's sleep: it must wake), later out of the staged range,
 * and a staged periodic timer; each fires exactly at its new deadline and
 * not a tick before.  A wheel timer touched into the staged range stays
 * in the wheel. */
TEST(touched_staged_timer_fires_exactly_at_its_new_deadline)
{
    struct fix f;
    struct probe a = {.id = 0}, p[8];
    struct rota_service_handle ha, h[8];
    fix_init(&f, 0);
    for (int i = 0; i < 8; i++) {
        memset(&p[i], 0, sizeof p[i]);
        p[i].id = i;
    }
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &a, &ha), 0);
    CHECK_EQ_INT(
        rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &p[1], &h[1]), 0);
    CHECK_EQ_INT(
        rota_service_arm_in(f.svc, 300 * ST_MS, probe_fn, &p[2], &h[2]), 0);
    CHECK_EQ_INT(
        rota_service_arm_in(f.svc, 200 * ST_MS, probe_fn, &p[3], &h[3]), 0);
    CHECK_EQ_INT(
        rota_service_arm_in(f.svc, 150 * ST_MS, probe_fn, &p[4], &h[4]), 0);
    CHECK_EQ_INT(
        rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &p[5], &h[5]), 0);
    CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 400 * ST_MS, 100 * ST_MS,
                                              ROTA_MISSED_SKIP, probe_fn, &p[6],
                                              &h[6]),
                 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, BEYOND_FAR, probe_fn, &p[7], &h[7]),
                 0);
    wait_asleep(&f, T0 + ST_MS);
    for (int i = 1; i <= 6; i++)
        CHECK(staged(&f, h[i]));
    CHECK(!staged(&f, h[7]) && !far_staged(&f, h[7])); /* in the wheel */

    /* Later, to another band. */
    CHECK_EQ_INT(rota_service_touch_at(f.svc, h[1], T0 + 300 * ST_MS), 0);
    CHECK(staged(&f, h[1]));
    /* Earlier, still staged. */
    CHECK_EQ_INT(rota_service_touch_at(f.svc, h[2], T0 + 50 * ST_MS), 0);
    CHECK(staged(&f, h[2]));
    /* Earlier, into the wheel's range (after the anchor). */
    CHECK_EQ_INT(rota_service_touch_at(f.svc, h[3], T0 + 2 * ST_MS), 0);
    CHECK(!staged(&f, h[3]));
    /* Earlier than the thread's sleep: it wakes and sleeps until it. */
    CHECK_EQ_INT(rota_service_touch_at(f.svc, h[4], T0 + 500 * ST_US), 0);
    CHECK(!staged(&f, h[4]));
    wait_asleep(&f, T0 + 500 * ST_US);
    /* Later, beyond the band lists: to the far vector. */
    CHECK_EQ_INT(rota_service_touch_at(f.svc, h[5], T0 + 10 * ST_S + ST_MS), 0);
    CHECK(!staged(&f, h[5]) && far_staged(&f, h[5]));
    /* A staged periodic timer: its period continues from the new one. */
    CHECK_EQ_INT(rota_service_touch_at(f.svc, h[6], T0 + 250 * ST_MS), 0);
    CHECK(staged(&f, h[6]));
    /* A wheel timer touched into the staged range: still the wheel's. */
    CHECK_EQ_INT(rota_service_touch_at(f.svc, h[7], T0 + 120 * ST_MS), 0);
    CHECK(!staged(&f, h[7]));
    CHECK_EQ_U64(stats_of(&f).touched, 7);
    CHECK_EQ_U64(stats_of(&f).pending, 8);
    CHECK_EQ_INT(rota_service_check(f.svc, NULL), 0);

    /* Each at its deadline, not a tick before. */
    static const struct {
        int i;
        uint64_t at;
    } due[] = {
        {4, 500 * ST_US},       {0, ST_MS},       {3, 2 * ST_MS},
        {2, 50 * ST_MS},        {7, 120 * ST_MS}, {6, 250 * ST_MS},
        {1, 300 * ST_MS},       {6, 350 * ST_MS}, {6, 450 * ST_MS},
        {5, 10 * ST_S + ST_MS},
    };
    uint64_t now = T0;
    int runs[8] = {0};
    for (size_t k = 0; k < sizeof due / sizeof due[0]; k++) {
        struct probe *q = due[k].i == 0 ? &a : &p[due[k].i];
        advance(&f, T0 + due[k].at - ST_US - now);
        CHECK_EQ_INT(atomic_load(&q->runs), runs[due[k].i]);
        advance(&f, ST_US);
        now = T0 + due[k].at;
        CHECK_EQ_INT(atomic_load(&q->runs), ++runs[due[k].i]);
        if (atomic_load(&q->runs) == runs[due[k].i])
            CHECK_EQ_U64(q->deadline[runs[due[k].i] - 1], now);
    }
    CHECK_EQ_INT(atomic_load(&p[1].runs), 1);
    CHECK_EQ_INT(atomic_load(&p[5].runs), 1);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, h[6]), ROTA_SERVICE_CANCELLED);
    fix_fini(&f);
}

/* stop hands back staged timers exactly once each, with the wheel's, and
 * counts them; a staged timer cancelled before stop is not handed back. */
TEST(stop_hands_back_each_staged_timer_once)
{
    for (unsigned workers = 0; workers <= 2; workers += 2) {
        struct fix f;
        struct probe p[6];
        struct rota_service_handle h[6];
        struct handback back = {0};
        fix_init(&f, workers);
        for (int i = 0; i < 6; i++) {
            memset(&p[i], 0, sizeof p[i]);
            p[i].id = i;
        }
        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &p[0], &h[0]),
                     0);
        CHECK_EQ_INT(
            rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &p[1], &h[1]), 0);
        CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_S, probe_fn, &p[2], &h[2]),
                     0);
        CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 500 * ST_MS, ST_MS,
                                                  ROTA_MISSED_SKIP, probe_fn,
                                                  &p[3], &h[3]),
                     0);
        CHECK_EQ_INT(
            rota_service_arm_in(f.svc, 10 * ST_S, probe_fn, &p[4], &h[4]),
            0); /* on the far vector */
        CHECK_EQ_INT(
            rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &p[5], &h[5]), 0);
        wait_asleep(&f, T0 + ST_MS);
        CHECK(staged(&f, h[1]) && staged(&f, h[2]) && staged(&f, h[3]) &&
              staged(&f, h[5]));
        CHECK(!staged(&f, h[0]) && far_staged(&f, h[4]));
        CHECK_EQ_INT(rota_service_try_cancel(f.svc, h[5]),
                     ROTA_SERVICE_CANCELLED);
        CHECK_EQ_INT(rota_service_stop(f.svc, handback_fn, &back), 5);
        CHECK_EQ_INT(back.n, 5);
        int seen[6] = {0};
        for (int k = 0; k < back.n && k < 8; k++) {
            int id = ((struct probe *)back.args[k])->id;
            seen[id]++;
            CHECK(same(back.h[k], h[id]));
        }
        for (int i = 0; i < 5; i++)
            CHECK_EQ_INT(seen[i], 1);
        CHECK_EQ_INT(seen[5], 0);
        CHECK_EQ_INT(rota_service_stop(f.svc, handback_fn, &back), 0);
        CHECK_EQ_INT(back.n, 5);
        for (int i = 0; i < 6; i++)
            CHECK_EQ_INT(rota_service_try_cancel(f.svc, h[i]),
                         ROTA_SERVICE_NOT_PENDING);
        rota_manual_clock_advance(f.mc, 20 * ST_S);
        struct rota_service_stats st = stats_of(&f);
        CHECK_EQ_U64(st.armed, 6);
        CHECK_EQ_U64(st.handed_back, 5);
        CHECK_EQ_U64(st.cancelled, 6);
        CHECK_EQ_U64(st.expired, 0);
        CHECK_EQ_U64(st.pending, 0);
        for (int i = 0; i < 6; i++)
            CHECK_EQ_INT(atomic_load(&p[i].runs), 0);
        fix_fini(&f); /* check() after stop: band lists empty */
    }
}

/* Equal deadlines from one thread fire in arm order whether each timer
 * was staged or not: staged then filed directly (its band moved already),
 * filed directly (beyond the far horizon) then staged, and more than a
 * batch (STAGE_BATCH) of staged ones in one band. */
enum { ORDER_N = 700 };
static int order_seen[ORDER_N + 8];
static atomic_int order_n;

static void order_fn(struct rota_service *svc,
                     const struct rota_service_event *ev)
{
    (void)svc;
    int k = atomic_fetch_add(&order_n, 1);
    if (k < ORDER_N + 8)
        order_seen[k] = (int)(intptr_t)ev->arg;
}

TEST(staged_equal_deadlines_fire_in_arm_order)
{
    struct fix f;
    struct rota_service_handle ha, hA, hB, hC;
    fix_init(&f, 0);
    atomic_store(&order_n, 0);

    /* A and C staged; A's band moves; B, armed after, goes to the wheel. */
    uint64_t d = T0 + 100 * ST_MS;
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, order_fn, (void *)-1, &ha),
                 0);
    CHECK_EQ_INT(rota_service_arm_at(f.svc, d, order_fn, (void *)1, &hA), 0);
    CHECK_EQ_INT(rota_service_arm_at(f.svc, d, order_fn, (void *)2, &hC), 0);
    wait_asleep(&f, T0 + ST_MS);
    CHECK(staged(&f, hA) && staged(&f, hC));
    advance(&f, 98 * ST_MS);
    /* The move is work ahead, done after the sync's fires: once the thread
     * sleeps until A's deadline, their band is in the wheel. */
    wait_asleep(&f, d);
    CHECK(!staged(&f, hA) && !staged(&f, hC));
    CHECK_EQ_INT(rota_service_arm_at(f.svc, d, order_fn, (void *)3, &hB), 0);
    CHECK(!staged(&f, hB));
    advance(&f, 2 * ST_MS - ST_US);
    CHECK_EQ_INT(atomic_load(&order_n), 1); /* the anchor */
    advance(&f, ST_US);
    CHECK_EQ_INT(atomic_load(&order_n), 4);
    CHECK_EQ_INT(order_seen[0], -1);
    CHECK_EQ_INT(order_seen[1], 1);
    CHECK_EQ_INT(order_seen[2], 2);
    CHECK_EQ_INT(order_seen[3], 3);

    /* F beyond the far horizon goes to the wheel; G and H, armed later
     * with the same deadline, are staged once it is within range. */
    uint64_t now = T0 + 100 * ST_MS;
    uint64_t d2 = now + BEYOND_FAR + 3 * ST_S;
    struct rota_service_handle hF, hG, hH;
    CHECK_EQ_INT(rota_service_arm_at(f.svc, d2, order_fn, (void *)4, &hF), 0);
    CHECK(!staged(&f, hF) && !far_staged(&f, hF));
    advance(&f, BEYOND_FAR + 1500 * ST_MS);
    now += BEYOND_FAR + 1500 * ST_MS;
    CHECK_EQ_INT(
        rota_service_arm_at(f.svc, now + ST_MS, order_fn, (void *)-2, &ha), 0);
    CHECK_EQ_INT(rota_service_arm_at(f.svc, d2, order_fn, (void *)5, &hG), 0);
    CHECK_EQ_INT(rota_service_arm_at(f.svc, d2, order_fn, (void *)6, &hH), 0);
    wait_asleep(&f, now + ST_MS);
    CHECK(staged(&f, hG) && staged(&f, hH));
    CHECK(!staged(&f, hF));
    advance(&f, d2 - now - ST_US);
    CHECK_EQ_INT(atomic_load(&order_n), 5);
    advance(&f, ST_US);
    now = d2;
    CHECK_EQ_INT(atomic_load(&order_n), 8);
    CHECK_EQ_INT(order_seen[4], -2);
    CHECK_EQ_INT(order_seen[5], 4);
    CHECK_EQ_INT(order_seen[6], 5);
    CHECK_EQ_INT(order_seen[7], 6);

    /* More than STAGE_BATCH staged in one band, then one filed directly. */
    atomic_store(&order_n, 0);
    uint64_t d3 = now + 200 * ST_MS;
    struct rota_service_handle hs;
    CHECK_EQ_INT(
        rota_service_arm_at(f.svc, now + ST_MS, order_fn, (void *)-3, &ha), 0);
    for (int i = 0; i < ORDER_N - 1; i++)
        CHECK_EQ_INT(
            rota_service_arm_at(f.svc, d3, order_fn, (void *)(intptr_t)i, &hs),
            0);
    wait_asleep(&f, now + ST_MS);
    CHECK(staged(&f, hs));
    advance(&f, d3 - now - ST_MS);
    wait_asleep(&f, d3); /* the band's move is done */
    CHECK(!staged(&f, hs));
    CHECK_EQ_INT(rota_service_arm_at(f.svc, d3, order_fn,
                                     (void *)(intptr_t)(ORDER_N - 1), &hs),
                 0);
    advance(&f, ST_MS);
    CHECK_EQ_INT(atomic_load(&order_n), ORDER_N + 1);
    CHECK_EQ_INT(order_seen[0], -3);
    int bad = 0;
    for (int i = 0; i < ORDER_N; i++)
        bad += order_seen[1 + i] != i;
    CHECK_EQ_INT(bad, 0);
    fix_fini(&f);
}

/* The far vector (timers due beyond the band lists, see "Staging" in
 * service.c): holes left by cancels, growth and compaction of the vector,
 * touches out of it and within it, scans that move its timers onto the
 * band lists as the clock nears them; every timer fires exactly at its
 * deadline, equal deadlines in arm order, and check() agrees throughout. */
enum { FAR_N = 3 * FAR_MIN_CAP };
struct far_probe {
    int id;
    uint64_t want; /* the deadline it must fire at, exactly then */
};
static int far_seq[2 * FAR_N + 8];
static atomic_int far_n, far_bad;

static void far_fn(struct rota_service *svc,
                   const struct rota_service_event *ev)
{
    const struct far_probe *q = ev->arg;
    if (ev->deadline_ns != q->want || rota_service_now(svc) != q->want)
        atomic_fetch_add(&far_bad, 1);
    int k = atomic_fetch_add(&far_n, 1);
    if (k < 2 * FAR_N + 8)
        far_seq[k] = q->id;
}

static const struct far_probe *far_of(int id, const struct far_probe *a,
                                      const struct far_probe *b,
                                      const struct far_probe *anchor)
{
    return id < 0 ? anchor : id < FAR_N ? &a[id] : &b[id - FAR_N];
}

TEST(far_timers_are_staged_and_fire_at_their_deadlines)
{
    static struct far_probe a[FAR_N], b[FAR_N], anchor = {-1, T0 + ST_MS};
    static struct rota_service_handle ha[FAR_N], hb[FAR_N];
    struct rota_service_handle h;
    struct fix f;
    fix_init(&f, 0);
    atomic_store(&far_n, 0);
    atomic_store(&far_bad, 0);
    uint64_t base = T0 + 5 * ST_S;
    CHECK_EQ_INT(rota_service_arm_at(f.svc, anchor.want, far_fn, &anchor, &h),
                 0);
    for (int k = 0; k < FAR_N; k++) {
        a[k] = (struct far_probe){k, base + (uint64_t)k * ST_MS};
        CHECK_EQ_INT(
            rota_service_arm_at(f.svc, a[k].want, far_fn, &a[k], &ha[k]), 0);
    }
    wait_asleep(&f, anchor.want);
    int bad = 0;
    for (int k = 0; k < FAR_N; k++)
        bad += !far_staged(&f, ha[k]);
    CHECK_EQ_INT(bad, 0);
    /* Two holes in three, then as many again: the vector, full, closes
     * its holes up instead of growing. */
    for (int k = 0; k < FAR_N; k++)
        if (k % 3 != 0)
            CHECK_EQ_INT(rota_service_try_cancel(f.svc, ha[k]),
                         ROTA_SERVICE_CANCELLED);
    CHECK_EQ_INT(rota_service_check(f.svc, NULL), 0);
    for (int j = 0; j < FAR_N; j++) {
        b[j] = (struct far_probe){FAR_N + j, base + 3 * (uint64_t)j * ST_MS};
        CHECK_EQ_INT(
            rota_service_arm_at(f.svc, b[j].want, far_fn, &b[j], &hb[j]), 0);
    }
    CHECK(far_staged(&f, ha[3]) && far_staged(&f, hb[FAR_N - 1]));
    CHECK_EQ_INT(rota_service_check(f.svc, NULL), 0);
    /* Out of the far vector onto a band list, and along it. */
    a[0].want = T0 + 100 * ST_MS;
    CHECK_EQ_INT(rota_service_touch_at(f.svc, ha[0], a[0].want), 0);
    CHECK(staged(&f, ha[0]));
    a[3].want = T0 + 20 * ST_S;
    CHECK_EQ_INT(rota_service_touch_at(f.svc, ha[3], a[3].want), 0);
    CHECK(far_staged(&f, ha[3]));
    CHECK_EQ_INT(rota_service_check(f.svc, NULL), 0);

    /* Step through every deadline in order: nothing a tick early, all
     * due at once, the first batch before the second at equal times. */
    int expect[2 * FAR_N + 8], ne = 0;
    expect[ne++] = -1;
    expect[ne++] = 0;
    for (int j = 0; j < FAR_N; j++) {
        if (j < FAR_N / 3 && j != 0 && j != 1)
            expect[ne++] = 3 * j; /* a[3j], armed first */
        expect[ne++] = FAR_N + j;
    }
    expect[ne++] = 3;
    uint64_t now = T0;
    int seen = 0;
    for (int e = 0; e < ne;) {
        const struct far_probe *q = far_of(expect[e], a, b, &anchor);
        int at_once = 1;
        while (e + at_once < ne &&
               far_of(expect[e + at_once], a, b, &anchor)->want == q->want)
            at_once++;
        advance(&f, q->want - ST_US - now);
        CHECK_EQ_INT(atomic_load(&far_n), seen);
        advance(&f, ST_US);
        now = q->want;
        seen += at_once;
        CHECK_EQ_INT(atomic_load(&far_n), seen);
        e += at_once;
        if (e % 64 < at_once)
            CHECK_EQ_INT(rota_service_check(f.svc, NULL), 0);
    }
    CHECK_EQ_INT(atomic_load(&far_bad), 0);
    bad = 0;
    for (int e = 0; e < ne; e++)
        bad += far_seq[e] != expect[e];
    CHECK_EQ_INT(bad, 0);

    /* A periodic timer armed onto the far vector keeps its schedule.  A
     * near timer first, and the thread asleep until it: were the periodic
     * timer the only one, the thread would wake for it and, to sleep
     * exactly until it, move it through the bands into the wheel at once
     * (by design), racing the check below (seen under valgrind). */
    struct probe near = {.id = 1};
    struct rota_service_handle hn;
    CHECK_EQ_INT(rota_service_arm_at(f.svc, now + ST_MS, probe_fn, &near, &hn),
                 0);
    wait_asleep(&f, now + ST_MS);
    struct probe p = {.id = 0};
    CHECK_EQ_INT(rota_service_arm_periodic_in(f.svc, 10 * ST_S, ST_S,
                                              ROTA_MISSED_SKIP, probe_fn, &p,
                                              &h),
                 0);
    CHECK(far_staged(&f, h));
    advance(&f, 10 * ST_S - ST_US);
    CHECK_EQ_INT(atomic_load(&near.runs), 1);
    CHECK_EQ_INT(atomic_load(&p.runs), 0);
    advance(&f, ST_US);
    CHECK_EQ_INT(atomic_load(&p.runs), 1);
    advance(&f, ST_S);
    CHECK_EQ_INT(atomic_load(&p.runs), 2);
    CHECK_EQ_U64(p.deadline[1], now + 11 * ST_S);
    CHECK_EQ_INT(rota_service_cancel_sync(f.svc, h), ROTA_SERVICE_CANCELLED);
    struct rota_service_stats st = stats_of(&f);
    CHECK_EQ_U64(st.pending, 0);
    fix_fini(&f);
}

/* When the far vector cannot grow, arm still succeeds: a full vector with
 * holes closes them, one without goes nearer the wheel; every timer still
 * fires at its deadline. */
TEST(arm_succeeds_when_the_far_vector_cannot_grow)
{
    enum { NB = FAR_MIN_CAP };
    static struct probe pb[NB];
    static struct rota_service_handle hb[NB];
    struct probe anchor = {.id = 0}, pa = {.id = 0}, pc = {.id = 0},
                 pd = {.id = 0};
    struct rota_service_handle h, ha, hc, hd;
    struct fix f;
    fix_init_cfg(&f, (struct rota_service_config){.initial_capacity = 1024});
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &anchor, &h), 0);
    wait_asleep(&f, T0 + ST_MS);
    atomic_store(&f.alloc.fail_after, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 10 * ST_S, probe_fn, &pa, &ha), 0);
    CHECK(!far_staged(&f, ha) && !staged(&f, ha));
    atomic_store(&f.alloc.fail_after, -1);
    for (int k = 0; k < NB; k++) {
        memset(&pb[k], 0, sizeof pb[k]);
        CHECK_EQ_INT(rota_service_arm_in(f.svc, 10 * ST_S + (uint64_t)k * ST_MS,
                                         probe_fn, &pb[k], &hb[k]),
                     0);
    }
    CHECK(far_staged(&f, hb[0]) && far_staged(&f, hb[NB - 1]));
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, hb[0]), ROTA_SERVICE_CANCELLED);
    atomic_store(&f.alloc.fail_after, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 10 * ST_S, probe_fn, &pc, &hc), 0);
    CHECK(far_staged(&f, hc)); /* the hole closed up */
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 10 * ST_S, probe_fn, &pd, &hd), 0);
    CHECK(!far_staged(&f, hd) && !staged(&f, hd));
    atomic_store(&f.alloc.fail_after, -1);
    CHECK_EQ_INT(rota_service_check(f.svc, NULL), 0);
    advance(&f, 10 * ST_S - ST_US);
    CHECK_EQ_INT(atomic_load(&pa.runs) + atomic_load(&pc.runs) +
                     atomic_load(&pd.runs),
                 0);
    advance(&f, ST_US);
    CHECK_EQ_INT(atomic_load(&pa.runs), 1);
    CHECK_EQ_INT(atomic_load(&pc.runs), 1);
    CHECK_EQ_INT(atomic_load(&pd.runs), 1);
    CHECK_EQ_U64(pd.deadline[0], T0 + 10 * ST_S);
    CHECK_EQ_U64(pc.deadline[0], T0 + 10 * ST_S);
    advance(&f, NB * ST_MS);
    int bad = atomic_load(&pb[0].runs);
    for (int k = 1; k < NB; k++)
        bad += atomic_load(&pb[k].runs) != 1 ||
               pb[k].deadline[0] != T0 + 10 * ST_S + (uint64_t)k * ST_MS;
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_U64(stats_of(&f).pending, 0);
    fix_fini(&f);
}

/* Sleeping with staged timers: the thread sleeps until the exact next
 * deadline, never past a staged one, and a staged arm due after the
 * thread's sleep does not wake it (even when its band's move would come
 * before that sleep ends). */
TEST(service_thread_never_sleeps_past_a_staged_deadline)
{
    struct fix f;
    struct probe a = {.id = 1}, x = {.id = 2};
    struct rota_service_handle hx;
    fix_init(&f, 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 50 * ST_MS, probe_fn, &a, NULL), 0);
    wait_asleep(&f, T0 + 50 * ST_MS);
    uint64_t waits = rota_manual_clock_waits(f.mc);
    /* Due after the sleep ends; its band (T0 + 49.9 ms ...) moves before. */
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 51 * ST_MS, probe_fn, &x, &hx), 0);
    st_sleep_ns(20 * ST_MS);
    CHECK_EQ_U64(rota_manual_clock_waits(f.mc), waits); /* no wake-up */
    wait_asleep(&f, T0 + 50 * ST_MS);
    advance(&f, 50 * ST_MS);
    CHECK_EQ_INT(atomic_load(&a.runs), 1);
    wait_asleep(&f, T0 + 51 * ST_MS); /* exactly, not a band's move */
    advance(&f, ST_MS - ST_US);
    CHECK_EQ_INT(atomic_load(&x.runs), 0);
    advance(&f, ST_US);
    CHECK_EQ_INT(atomic_load(&x.runs), 1);
    CHECK_EQ_U64(x.deadline[0], T0 + 51 * ST_MS);
    fix_fini(&f);
}

/* Staging near the end of time: a 1 ns tick and a clock 1 ms before
 * UINT64_MAX, so that the last deadline (ROTA_MAX_DEADLINE) is staged. */
TEST(staging_holds_at_the_last_deadline)
{
    struct rota_manual_clock *mc;
    struct rota_service_clock clock;
    struct rota_service *svc = NULL;
    struct probe p = {.id = 1}, q = {.id = 2};
    struct rota_service_handle hp, hq;
    uint64_t start = UINT64_MAX - ST_MS;
    CHECK_EQ_INT(rota_manual_clock_create(&mc, start), 0);
    rota_manual_clock_bind(mc, &clock);
    struct rota_service_config cfg = {.clock = &clock, .tick_ns = 1};
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0);
    /* q first: with the wheel empty the thread moves the first band
     * early, and that must be q's, not p's. */
    CHECK_EQ_INT(rota_service_arm_in(svc, 500 * ST_US, probe_fn, &q, &hq), 0);
    CHECK_EQ_INT(rota_service_arm_in(svc, UINT64_MAX, probe_fn, &p, &hp), 0);
    struct fix f = {.mc = mc, .svc = svc};
    wait_asleep(&f, start + 500 * ST_US);
    CHECK(staged(&f, hp)); /* its band is the last one (2^53 - 1) */
    rota_manual_clock_advance(mc, 500 * ST_US - 1);
    CHECK_EQ_INT(rota_service_sync(svc), 0);
    CHECK_EQ_INT(atomic_load(&q.runs), 0);
    rota_manual_clock_advance(mc, 1);
    CHECK_EQ_INT(rota_service_sync(svc), 0);
    CHECK_EQ_INT(atomic_load(&q.runs), 1);
    CHECK_EQ_U64(q.deadline[0], start + 500 * ST_US);
    /* To ROTA_MAX_DEADLINE, not UINT64_MAX ("never"). */
    rota_manual_clock_set(mc, UINT64_MAX - 2);
    CHECK_EQ_INT(rota_service_sync(svc), 0);
    CHECK_EQ_INT(atomic_load(&p.runs), 0);
    rota_manual_clock_set(mc, UINT64_MAX - 1);
    CHECK_EQ_INT(rota_service_sync(svc), 0);
    CHECK_EQ_INT(atomic_load(&p.runs), 1);
    CHECK_EQ_U64(p.deadline[0], UINT64_MAX - 1);
    CHECK_EQ_INT(rota_service_check(svc, NULL), 0);
    CHECK_EQ_INT(rota_service_destroy(svc), 0);
    rota_manual_clock_destroy(mc);
}

/* The pending cap counts staged timers; cancelling one frees its place. */
TEST(pending_cap_counts_staged_timers)
{
    struct fix f;
    struct probe p = {.id = 1};
    struct rota_service_handle h[2];
    fix_init_cfg(&f, (struct rota_service_config){.max_pending = 2});
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &p, &h[0]),
                 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 200 * ST_MS, probe_fn, &p, &h[1]),
                 0);
    CHECK(staged(&f, h[1]));
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 300 * ST_MS, probe_fn, &p, NULL),
                 ROTA_EAGAIN);
    CHECK_EQ_INT(rota_service_try_cancel(f.svc, h[1]), ROTA_SERVICE_CANCELLED);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 300 * ST_MS, probe_fn, &p, &h[1]),
                 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 300 * ST_MS, probe_fn, &p, NULL),
                 ROTA_EAGAIN);
    advance(&f, 100 * ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), 1);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 300 * ST_MS, probe_fn, &p, NULL),
                 0);
    advance(&f, 300 * ST_MS);
    CHECK_EQ_INT(atomic_load(&p.runs), 3);
    CHECK_EQ_U64(stats_of(&f).pending, 0);
    fix_fini(&f);
}

/* A clock that can go backwards: the manual clock minus `back`. */
struct back_clock {
    struct rota_service_clock inner;
    _Atomic uint64_t back;
};

static uint64_t back_now(void *ctx)
{
    struct back_clock *c = ctx;
    return c->inner.now_ns(c->inner.ctx) - atomic_load(&c->back);
}

static void back_wait(void *ctx, uint64_t deadline_ns)
{
    struct back_clock *c = ctx;
    uint64_t back = atomic_load(&c->back);
    c->inner.wait(c->inner.ctx, deadline_ns > UINT64_MAX - back
                                    ? UINT64_MAX
                                    : deadline_ns + back);
}

static void back_wake(void *ctx)
{
    struct back_clock *c = ctx;
    c->inner.wake(c->inner.ctx);
}

/* The clock goes back 1 s with timers staged: nothing fires early (as the
 * clock reads), staged timers stay staged and fire at their deadlines, a
 * timer armed in the past fires once the clock is back past the wheel's
 * time, and one armed into the staged range from the earlier time is
 * staged and fires at its deadline. */
TEST(clock_going_back_never_fires_a_staged_timer_early)
{
    struct back_clock bc;
    struct rota_service_clock clock = {
        .now_ns = back_now, .wait = back_wait, .wake = back_wake, .ctx = &bc};
    struct fix f;
    struct probe a = {.id = 1}, s = {.id = 2}, x = {.id = 3}, y = {.id = 4};
    struct rota_service_handle hs, hx, hy;
    CHECK_EQ_INT(rota_manual_clock_create(&f.mc, T0), 0);
    rota_manual_clock_bind(f.mc, &bc.inner);
    atomic_init(&bc.back, 0);
    f.allocator = st_allocator(&f.alloc);
    f.svc = NULL;
    struct rota_service_config cfg = {.clock = &clock,
                                      .allocator = &f.allocator};
    CHECK_EQ_INT(rota_service_create(&f.svc, &cfg), 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, ST_MS, probe_fn, &a, NULL), 0);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &s, &hs), 0);
    wait_asleep(&f, T0 + ST_MS);
    CHECK(staged(&f, hs));

    atomic_store(&bc.back, ST_S); /* the clock reads T0 - 1 s */
    CHECK_EQ_INT(rota_service_sync(f.svc), 0);
    CHECK_EQ_INT(rota_service_now(f.svc), T0 - ST_S);
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 100 * ST_MS, probe_fn, &x, &hx), 0);
    CHECK(!staged(&f, hx)); /* before the wheel's time: due at once */
    CHECK_EQ_INT(rota_service_arm_in(f.svc, 1200 * ST_MS, probe_fn, &y, &hy),
                 0);
    CHECK(staged(&f, hy)); /* T0 + 200 ms */
    CHECK(staged(&f, hs));
    advance(&f, ST_S - ST_US); /* reads T0 - 1 us: before the wheel's time */
    CHECK_EQ_INT(atomic_load(&a.runs) + atomic_load(&x.runs), 0);
    advance(&f, ST_MS); /* T0 + 999 us */
    CHECK_EQ_INT(atomic_load(&x.runs), 1);
    CHECK_EQ_INT(atomic_load(&a.runs), 0);
    advance(&f, ST_US); /* T0 + 1 ms */
    CHECK_EQ_INT(atomic_load(&a.runs), 1);
    advance(&f, 99 * ST_MS - ST_US);
    CHECK_EQ_INT(atomic_load(&s.runs), 0);
    advance(&f, ST_US);
    CHECK_EQ_INT(atomic_load(&s.runs), 1);
    CHECK_EQ_U64(s.deadline[0], T0 + 100 * ST_MS);
    advance(&f, 100 * ST_MS - ST_US);
    CHECK_EQ_INT(atomic_load(&y.runs), 0);
    advance(&f, ST_US);
    CHECK_EQ_INT(atomic_load(&y.runs), 1);
    CHECK_EQ_U64(y.deadline[0], T0 + 200 * ST_MS);
    fix_fini(&f);
}

/* A clock whose every read moves it on by `step` ns once stepping starts:
 * time passes while the service thread works, as many reads as it makes.
 * Its wait returns at once while stepping (the thread's reads move the
 * clock to the deadline), else it blocks until woken. */
struct step_clock {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint64_t now, step;
    int woken; /* under mu */
};

static uint64_t step_now(void *ctx)
{
    struct step_clock *c = ctx;
    return atomic_fetch_add(&c->now, atomic_load(&c->step));
}

static void step_wait(void *ctx, uint64_t deadline_ns)
{
    struct step_clock *c = ctx;
    pthread_mutex_lock(&c->mu);
    while (!c->woken && atomic_load(&c->step) == 0 &&
           atomic_load(&c->now) < deadline_ns)
        pthread_cond_wait(&c->cv, &c->mu);
    c->woken = 0;
    pthread_mutex_unlock(&c->mu);
}

static void step_wake(void *ctx)
{
    struct step_clock *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->woken = 1;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

#define YIELD_STEP (50 * ST_US) /* the clock's move per read */
#define YIELD_N 2000            /* timers in the band moved ahead */

struct yield_run {
    struct st_latch gate; /* holds the service thread in a callback */
    atomic_int in_gate;
    atomic_int fired; /* the band's timers */
    uint64_t a_late;  /* the early timer: its lateness, */
    uint32_t a_left;  /* and its shard's staged timers when it ran */
};

static void yield_gate_fn(struct rota_service *svc,
                          const struct rota_service_event *ev)
{
    (void)svc;
    struct yield_run *y = ev->arg;
    atomic_store(&y->in_gate, 1);
    st_latch_wait(&y->gate);
}

static void yield_a_fn(struct rota_service *svc,
                       const struct rota_service_event *ev)
{
    struct yield_run *y = ev->arg;
    y->a_late = ev->late_ns;
    /* On the service thread, the only writer of a shard's staging while
     * no producer arms. */
    y->a_left = shard_of(svc, rec_at(svc, ev->timer.index))->staged;
}

static void yield_b_fn(struct rota_service *svc,
                       const struct rota_service_event *ev)
{
    (void)svc;
    struct yield_run *y = ev->arg;
    atomic_fetch_add(&y->fired, 1);
}

/* One run: a timer A due 3 ms on, and YIELD_N timers in the band after
 * A's, whose move into the wheel comes before A's deadline and is
 * therefore done ahead of time, while the clock moves YIELD_STEP per read;
 * `slice` is the service's records per look at the clock. */
static void yield_once(unsigned slice, struct yield_run *y)
{
    struct step_clock c;
    struct rota_service_clock clock = {
        .now_ns = step_now, .wait = step_wait, .wake = step_wake, .ctx = &c};
    struct rota_service *svc = NULL;
    /* Ticks of 1 us; start on a band's first tick. */
    uint64_t t0 = ((uint64_t)1 << 30) * ST_US, band = 2048 * ST_US;
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    atomic_init(&c.now, t0);
    atomic_init(&c.step, 0);
    c.woken = 0;
    memset(y, 0, sizeof *y);
    st_latch_init(&y->gate);
    struct rota_service_config cfg = {.clock = &clock};
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0);
    CHECK_EQ_INT(rota_service_arm_at(svc, t0, yield_gate_fn, y, NULL), 0);
    ST_WAIT_FOR(atomic_load(&y->in_gate), 10 * ST_S);
    CHECK(atomic_load(&y->in_gate));
    struct rota_service_handle hb;
    CHECK_EQ_INT(rota_service_arm_at(svc, t0 + 3 * ST_MS, yield_a_fn, y, NULL),
                 0);
    for (unsigned k = 0; k < YIELD_N; k++)
        CHECK_EQ_INT(rota_service_arm_at(svc, t0 + 2 * band + k * ST_US,
                                         yield_b_fn, y, &hb),
                     0);
    struct rec *rb = rec_at(svc, hb.index);
    rota__lock(&shard_of(svc, rb)->mu);
    bool waits = rb->sband != STAGE_NONE;
    rota__unlock(&shard_of(svc, rb)->mu);
    CHECK(waits);             /* the band waits to be moved */
    svc->stage_slice = slice; /* the thread is held: it reads it after */
    atomic_store(&c.step, YIELD_STEP);
    st_latch_open(&y->gate);
    ST_WAIT_FOR(atomic_load(&y->fired) == YIELD_N, 10 * ST_S);
    CHECK_EQ_INT(atomic_load(&y->fired), YIELD_N);
    CHECK_EQ_INT(rota_service_check(svc, NULL), 0);
    CHECK_EQ_INT(rota_service_destroy(svc), 0);
    st_latch_fini(&y->gate);
    pthread_cond_destroy(&c.cv);
    pthread_mutex_destroy(&c.mu);
}

/* Staging work done ahead of time yields to a timer that comes due while
 * it runs: A fires while most of the band is still staged, within a few
 * clock reads of its deadline.  The planted fault, a service that moves
 * the band in one go (an unbounded slice), is caught: A then finds
 * nothing staged. */
TEST(staging_ahead_yields_to_a_due_timer)
{
    struct yield_run y;
    yield_once(STAGE_SLICE, &y);
    printf("     A: %u of %u still staged, %" PRIu64 " us late\n", y.a_left,
           YIELD_N, y.a_late / ST_US);
    CHECK(y.a_left > YIELD_N / 4);
    CHECK(y.a_late <= 4 * YIELD_STEP);
    yield_once(UINT32_MAX, &y);
    printf("     planted fault (no slices): %u still staged\n", y.a_left);
    CHECK_EQ_U64(y.a_left, 0);
}

static const struct h_test tests[] = {
    H_TEST(service_check_catches_planted_fault),
    H_TEST(one_shot_record_reused_after_a_periodic_carries_no_period),
    H_TEST(cancelled_staged_timer_never_fires_and_its_record_is_reused),
    H_TEST(touched_staged_timer_fires_exactly_at_its_new_deadline),
    H_TEST(stop_hands_back_each_staged_timer_once),
    H_TEST(staged_equal_deadlines_fire_in_arm_order),
    H_TEST(far_timers_are_staged_and_fire_at_their_deadlines),
    H_TEST(arm_succeeds_when_the_far_vector_cannot_grow),
    H_TEST(service_thread_never_sleeps_past_a_staged_deadline),
    H_TEST(staging_ahead_yields_to_a_due_timer),
    H_TEST(staging_holds_at_the_last_deadline),
    H_TEST(pending_cap_counts_staged_timers),
    H_TEST(clock_going_back_never_fires_a_staged_timer_early),
};

int main(int argc, char **argv)
{
    return h_main(argc, argv, tests, H_COUNT(tests));
}
