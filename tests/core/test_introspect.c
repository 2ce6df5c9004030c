/* SPDX-License-Identifier: MIT */
/*
 * test_introspect.c - rota_timer_remaining() and rota_wheel_foreach() on a
 * fake clock.
 *
 * remaining: pending, due but not yet fired, not pending, periodic, inside
 * a callback, every error.  foreach: each pending timer visited exactly
 * once wherever the wheel holds it (a slot, the due list in the middle of
 * a pass, the list of timers armed during the pass, a slot a limited
 * advance left half cascaded), compared with a model of the pending set
 * after random operations; early stop; a visitor that cancels (and frees)
 * the timer it visits; the calls a visitor is refused.  The randomized
 * comparison proves it can fail: foreach_random_catches_planted_miss hides
 * one visit and must be caught.  test_diff.c checks both functions
 * against the reference model as well.
 */
#include <rota.h>

#include "harness.h"

struct node {
    union { /* the same timer, for the calls that take either */
        struct rota_timer timer;
        struct rota_periodic per;
    };
    unsigned id;
};

static struct rota_wheel wheel, other;

/* ------------------------------------------------------------ remaining */

static uint64_t left(const struct rota_timer *t, int expect_rc)
{
    uint64_t ticks = 12345;
    CHECK_EQ_INT(rota_timer_remaining(&wheel, t, &ticks), expect_rc);
    return ticks;
}

TEST(remaining_pending_due_idle)
{
    struct node a, b;

    rota_wheel_init(&wheel, 1000);
    rota_timer_init(&a.timer, NULL);
    rota_timer_init(&b.timer, NULL);
    rota_timer_arm_at(&wheel, &b.timer, 5000);
    CHECK_EQ_U64(left(&a.timer, 0), 0); /* never armed */
    rota_timer_arm_at(&wheel, &a.timer, 1100);
    CHECK_EQ_U64(left(&a.timer, 1), 100);
    rota_wheel_advance(&wheel, 1040);
    CHECK_EQ_U64(left(&a.timer, 1), 60);
    rota_timer_touch_at(&wheel, &a.timer, 1500); /* later: a store */
    CHECK_EQ_U64(left(&a.timer, 1), 460);
    rota_timer_touch_at_unchecked(&wheel, &a.timer, 1600);
    CHECK_EQ_U64(left(&a.timer, 1), 560);
    rota_timer_touch_at(&wheel, &a.timer, 1200); /* earlier: re-filed */
    CHECK_EQ_U64(left(&a.timer, 1), 160);
    /* Due but not fired: a limit of 0 leaves it pending past its
     * deadline; it is overdue, and remaining says 0, still pending. */
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 1300, 0, NULL), 1);
    CHECK(rota_timer_pending(&a.timer));
    CHECK_EQ_U64(left(&a.timer, 1), 0);
    /* From the wheel's `now`, not from where its lists stopped. */
    CHECK_EQ_U64(left(&b.timer, 1), 3700);
    rota_wheel_advance(&wheel, 1300);
    CHECK(!rota_timer_pending(&a.timer));
    CHECK_EQ_U64(left(&a.timer, 0), 0);     /* fired */
    rota_timer_arm_at(&wheel, &a.timer, 0); /* the past: due at now */
    CHECK_EQ_U64(left(&a.timer, 1), 0);
    rota_timer_cancel(&wheel, &a.timer);
    CHECK_EQ_U64(left(&a.timer, 0), 0); /* cancelled */
    rota_timer_arm_at(&wheel, &a.timer, ROTA_MAX_DEADLINE);
    CHECK_EQ_U64(left(&a.timer, 1), ROTA_MAX_DEADLINE - 1300);
    /* A window: to the deadline the wheel picked (1536, the multiple of
     * the largest power of two in [1400, 1700]). */
    CHECK_EQ_INT(rota_timer_arm_range_at(&wheel, &a.timer, 1400, 1700), 0);
    CHECK_EQ_U64(rota_timer_deadline(&a.timer), 1536);
    CHECK_EQ_U64(left(&a.timer, 1), 1536 - 1300);
}

TEST(remaining_periodic_counts_to_next_fire)
{
    struct node p;

    rota_wheel_init(&wheel, 0);
    rota_periodic_init(&p.per, NULL);
    rota_periodic_arm_at(&wheel, &p.per, 10, 25, ROTA_MISSED_SKIP);
    CHECK_EQ_U64(left(&p.timer, 1), 10);
    rota_wheel_advance(&wheel, 10); /* fires; next 35 */
    CHECK_EQ_U64(left(&p.timer, 1), 25);
    rota_wheel_advance(&wheel, 30);
    CHECK_EQ_U64(left(&p.timer, 1), 5);
    rota_wheel_advance(&wheel, 100); /* late: SKIP to 110 */
    CHECK_EQ_U64(left(&p.timer, 1), 10);
}

/* What a callback sees: its own one-shot timer is no longer pending; a
 * periodic one counts to its next fire; another timer as from outside. */
static uint64_t seen_ticks[3];
static int seen_rc[3];
static struct node *seen_other;

static void look_inside(struct rota_wheel *w, struct rota_timer *t,
                        uint64_t late)
{
    struct node *n = rota_container_of(t, struct node, timer);
    (void)late;
    seen_rc[n->id] = rota_timer_remaining(w, t, &seen_ticks[n->id]);
    if (n->id == 0)
        seen_rc[2] =
            rota_timer_remaining(w, &seen_other->timer, &seen_ticks[2]);
}

TEST(remaining_inside_callbacks)
{
    struct node a = {.id = 0}, p = {.id = 1}, b = {.id = 2};

    rota_wheel_init(&wheel, 0);
    rota_timer_init(&a.timer, look_inside);
    rota_periodic_init(&p.per, look_inside);
    rota_timer_init(&b.timer, look_inside);
    seen_other = &b;
    rota_timer_arm_at(&wheel, &a.timer, 50);
    rota_periodic_arm_at(&wheel, &p.per, 50, 7, ROTA_MISSED_BURST);
    rota_timer_arm_at(&wheel, &b.timer, 80);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 50), 2);
    CHECK_EQ_INT(seen_rc[0], 0); /* a one-shot in its callback */
    CHECK_EQ_U64(seen_ticks[0], 0);
    CHECK_EQ_INT(seen_rc[1], 1); /* periodic: next at 57 */
    CHECK_EQ_U64(seen_ticks[1], 7);
    CHECK_EQ_INT(seen_rc[2], 1); /* b, from a's callback */
    CHECK_EQ_U64(seen_ticks[2], 30);
}

TEST(remaining_errors)
{
    struct node a, junk;
    uint64_t ticks = 7;

    rota_wheel_init(&wheel, 0);
    rota_wheel_init(&other, 0);
    rota_timer_init(&a.timer, NULL);
    rota_timer_arm_at(&other, &a.timer, 10);
    CHECK_EQ_INT(rota_timer_remaining(NULL, &a.timer, &ticks), ROTA_EINVAL);
    CHECK_EQ_U64(ticks, 0);
    ticks = 7;
    CHECK_EQ_INT(rota_timer_remaining(&wheel, NULL, &ticks), ROTA_EINVAL);
    CHECK_EQ_U64(ticks, 0);
    CHECK_EQ_INT(rota_timer_remaining(&wheel, &a.timer, NULL), ROTA_EINVAL);
    if (rota_debug_enabled()) { /* a release build takes the caller's word */
        ticks = 7;
        CHECK_EQ_INT(rota_timer_remaining(&wheel, &a.timer, &ticks),
                     ROTA_EOTHERWHEEL);
        CHECK_EQ_U64(ticks, 0);
    }
    CHECK_EQ_INT(rota_timer_remaining(&other, &a.timer, &ticks), 1);
    CHECK_EQ_U64(ticks, 10);
    memset(&junk, 0, sizeof junk);
    ticks = 7;
    CHECK_EQ_INT(rota_timer_remaining(&wheel, &junk.timer, &ticks),
                 ROTA_EUNINIT);
    CHECK_EQ_U64(ticks, 0);
}

/* -------------------------------------------------------------- foreach */

#define POOL 400

static struct node pool[POOL];
static unsigned visits[POOL]; /* visits per timer in the last walk */
static size_t nvisits;
static bool hide_one; /* the planted fault: forget the first visit */

static int count_visit(struct rota_wheel *w, struct rota_timer *t, void *arg)
{
    struct node *n = rota_container_of(t, struct node, timer);
    (void)w;
    (void)arg;
    if (hide_one) {
        hide_one = false;
        return 0;
    }
    if (n >= pool && n < pool + POOL)
        visits[n->id]++;
    nvisits++;
    return 0;
}

static int walk_all(struct rota_wheel *w)
{
    memset(visits, 0, sizeof visits);
    nvisits = 0;
    return rota_wheel_foreach(w, count_visit, NULL);
}

/* Every timer the model says is pending visited once, no other. */
static bool visits_match(const bool *pending)
{
    bool ok = true;
    for (unsigned i = 0; i < POOL; i++) {
        if (visits[i] != (pending[i] ? 1u : 0u)) {
            fprintf(stderr, "    timer %u: visited %u times, pending %d\n", i,
                    visits[i], pending[i]);
            ok = false;
        }
    }
    return ok;
}

TEST(foreach_empty_and_errors)
{
    rota_wheel_init(&wheel, 0);
    CHECK_EQ_INT(walk_all(&wheel), 0);
    CHECK_EQ_U64(nvisits, 0);
    CHECK_EQ_INT(rota_wheel_foreach(NULL, count_visit, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_wheel_foreach(&wheel, NULL, NULL), ROTA_EINVAL);
}

/* The model: which timers are pending, kept by the test itself (a fire
 * of a one-shot clears its entry; periodic timers stay). */
static bool model_pending[POOL];
static bool model_periodic[POOL];

static void model_fire(struct rota_wheel *w, struct rota_timer *t,
                       uint64_t late)
{
    struct node *n = rota_container_of(t, struct node, timer);
    (void)w;
    (void)late;
    if (!model_periodic[n->id])
        model_pending[n->id] = false;
}

static bool in_cascade(const struct rota_wheel *w)
{
    /* Private field, read only to prove that the scenario was reached. */
    return w->cascade_.next != &w->cascade_;
}

/* Random operations (arm, periodic, touch, cancel, advance, advance_max
 * with a small limit), each followed by a walk compared with the model.
 * Returns the number of walks that disagreed. */
static unsigned random_walks(uint64_t seed, unsigned ops, bool plant,
                             unsigned *cascades_seen)
{
    uint64_t s = seed;
    unsigned bad = 0;

    rota_wheel_init(&wheel, 1000000);
    for (unsigned i = 0; i < POOL; i++) {
        rota_periodic_init(&pool[i].per, model_fire);
        pool[i].id = i;
        model_pending[i] = model_periodic[i] = false;
    }
    for (unsigned op = 0; op < ops; op++) {
        unsigned id = (unsigned)(h_rand(&s) % POOL);
        uint64_t now = rota_wheel_now(&wheel);
        uint64_t delay =
            h_rand(&s) % 4 == 0 ? h_rand(&s) % 70000 : h_rand(&s) % 600;
        switch (h_rand(&s) % 10) {
        case 0:
        case 1:
        case 2:
            /* a periodic timer keeps its period (rota.h) */
            rota_timer_arm_at(&wheel, &pool[id].timer, now + delay);
            model_pending[id] = true;
            break;
        case 3:
            rota_periodic_arm_at(&wheel, &pool[id].per, now + delay,
                                 1 + h_rand(&s) % 300, ROTA_MISSED_SKIP);
            model_pending[id] = model_periodic[id] = true;
            break;
        case 4:
            if (rota_timer_touch_at(&wheel, &pool[id].timer, now + delay) ==
                    0 &&
                !model_pending[id])
                bad++; /* touch found a timer the model says is idle */
            break;
        case 5:
            rota_timer_cancel(&wheel, &pool[id].timer);
            model_pending[id] = false;
            break;
        case 6:
        case 7:
            rota_wheel_advance_max(&wheel, now + h_rand(&s) % 2000,
                                   h_rand(&s) % 4, NULL);
            break;
        default:
            rota_wheel_advance(&wheel, now + h_rand(&s) % 300);
            break;
        }
        if (in_cascade(&wheel))
            ++*cascades_seen;
        hide_one = plant && op == ops / 2 && rota_wheel_count(&wheel) > 0;
        CHECK_EQ_INT(walk_all(&wheel), 0);
        if (!visits_match(model_pending)) {
            fprintf(stderr, "    after op %u (seed %" PRIu64 ")\n", op, seed);
            bad++;
        }
        bool hidden = plant && op == ops / 2 && rota_wheel_count(&wheel) > 0;
        CHECK_EQ_U64(nvisits, rota_wheel_count(&wheel) - hidden);
    }
    const char *why = NULL;
    CHECK_EQ_INT(rota_wheel_check(&wheel, &why), 0);
    return bad;
}

static uint64_t master_seed;

TEST(foreach_random_visits_exactly_the_pending_set)
{
    unsigned cascades = 0;
    unsigned ops = h_small() ? 3000 : 20000;
    CHECK_EQ_INT(random_walks(master_seed, ops, false, &cascades), 0);
    /* The walks met half-done cascades (not only empty cascade lists). */
    printf("  %u walks with a half-done cascade\n", cascades);
    CHECK(cascades > 0);
}

TEST(foreach_random_catches_planted_miss)
{
    unsigned cascades = 0;
    /* The walk after op 1000 misses one timer: exactly that walk must be
     * reported. */
    CHECK_EQ_INT(random_walks(master_seed ^ 1, 2000, true, &cascades), 1);
}

/* A half-done cascade, made on purpose: its timers are visited. */
TEST(foreach_sees_half_done_cascade)
{
    bool pending[POOL] = {false};

    rota_wheel_init(&wheel, 0);
    for (unsigned i = 0; i < 5; i++) {
        rota_timer_init(&pool[i].timer, NULL);
        pool[i].id = i;
        rota_timer_arm_at(&wheel, &pool[i].timer, 300 + i); /* a level-1 slot */
        pending[i] = true;
    }
    /* Limit 1: the slot's cascade starts, one timer is filed again. */
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 290, 1, NULL), 1);
    CHECK(in_cascade(&wheel));
    CHECK_EQ_INT(walk_all(&wheel), 0);
    CHECK(visits_match(pending));
    CHECK_EQ_U64(nvisits, 5);
}

/* From a callback: the rest of the due list, timers armed in the pass for
 * now (deferred), slots; not the one-shot that is firing. */
static void walk_from_callback(struct rota_wheel *w, struct rota_timer *t,
                               uint64_t late)
{
    (void)t;
    (void)late;
    rota_timer_arm_at(w, &pool[9].timer, rota_wheel_now(w)); /* deferred */
    CHECK_EQ_INT(walk_all(w), 0);
}

TEST(foreach_from_callback_sees_due_and_deferred)
{
    bool pending[POOL] = {false};

    rota_wheel_init(&wheel, 0);
    for (unsigned i = 0; i < 10; i++) {
        rota_timer_init(&pool[i].timer, NULL);
        pool[i].id = i;
    }
    rota_timer_init(&pool[0].timer, walk_from_callback);
    rota_timer_arm_at(&wheel, &pool[0].timer, 20); /* fires first */
    rota_timer_arm_at(&wheel, &pool[1].timer, 20); /* then these two */
    rota_timer_arm_at(&wheel, &pool[2].timer, 20);
    rota_timer_arm_at(&wheel, &pool[3].timer, 5000);
    rota_timer_arm_at(&wheel, &pool[4].timer, 1u << 20);
    rota_periodic_init(&pool[5].per, NULL);
    rota_periodic_arm_at(&wheel, &pool[5].per, 20, 3, ROTA_MISSED_SKIP);
    pending[1] = pending[2] = pending[3] = pending[4] = true;
    pending[5] = pending[9] = true;
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 20, 1, NULL), 1);
    CHECK(visits_match(pending));
    CHECK_EQ_U64(nvisits, 6);
    rota_wheel_advance(&wheel, 20);
    CHECK_EQ_INT(walk_all(&wheel), 0);
    pending[1] = pending[2] = pending[9] = false;
    CHECK(visits_match(pending));
}

static int stop_after(struct rota_wheel *w, struct rota_timer *t, void *arg)
{
    size_t *budget = arg;
    (void)w;
    (void)t;
    nvisits++;
    return --*budget == 0 ? 42 : 0;
}

TEST(foreach_stops_when_visitor_says_so)
{
    rota_wheel_init(&wheel, 0);
    for (unsigned i = 0; i < 50; i++) {
        rota_timer_init(&pool[i].timer, NULL);
        rota_timer_arm_at(&wheel, &pool[i].timer, 1 + i * 997);
    }
    size_t budget = 7;
    nvisits = 0;
    CHECK_EQ_INT(rota_wheel_foreach(&wheel, stop_after, &budget), 1);
    CHECK_EQ_U64(nvisits, 7);
    budget = 50; /* the last visit says stop: still 1 */
    nvisits = 0;
    CHECK_EQ_INT(rota_wheel_foreach(&wheel, stop_after, &budget), 1);
    CHECK_EQ_U64(nvisits, 50);
    budget = 51;
    nvisits = 0;
    CHECK_EQ_INT(rota_wheel_foreach(&wheel, stop_after, &budget), 0);
    CHECK_EQ_U64(nvisits, 50);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 50);
}

/* The visitor cancels and frees every second timer it visits (heap
 * memory: ASan and valgrind see a walk that follows a freed link). */
struct heap_node {
    struct rota_timer timer;
    unsigned id;
};

static int cancel_odd(struct rota_wheel *w, struct rota_timer *t, void *arg)
{
    struct heap_node *n = rota_container_of(t, struct heap_node, timer);
    unsigned *seen = arg;
    seen[n->id]++;
    if (n->id % 2 == 1) {
        CHECK_EQ_INT(rota_timer_cancel(w, t), 1);
        free(n);
    }
    return 0;
}

TEST(foreach_visitor_may_cancel_and_free_visited_timer)
{
    enum { N = 300 };
    static unsigned seen[N];
    struct heap_node *keep[N];

    rota_wheel_init(&wheel, 0);
    memset(seen, 0, sizeof seen);
    for (unsigned i = 0; i < N; i++) {
        struct heap_node *n = malloc(sizeof *n);
        if (!CHECK(n != NULL))
            return;
        rota_timer_init(&n->timer, NULL);
        n->id = i;
        keep[i] = n;
        /* Slots of several levels, some sharing a slot, some due. */
        rota_timer_arm_at(&wheel, &n->timer, i % 3 == 0 ? 0 : i * i * 31);
    }
    CHECK_EQ_INT(rota_wheel_foreach(&wheel, cancel_odd, seen), 0);
    for (unsigned i = 0; i < N; i++)
        CHECK_EQ_INT(seen[i], 1);
    CHECK_EQ_U64(rota_wheel_count(&wheel), N / 2);
    const char *why = NULL;
    CHECK_EQ_INT(rota_wheel_check(&wheel, &why), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, UINT64_MAX / 2), N / 2);
    for (unsigned i = 0; i < N; i += 2)
        free(keep[i]);
}

/* Inside a visitor, the calls that would restructure the wheel are
 * refused, and nothing moves. */
static int reenter(struct rota_wheel *w, struct rota_timer *t, void *arg)
{
    struct rota_timer *out[2];
    size_t n = 0;
    (void)t;
    (void)arg;
    CHECK_EQ_INT(rota_wheel_advance(w, 1u << 30), ROTA_EBUSY);
    CHECK_EQ_INT(rota_wheel_advance_max(w, 1u << 30, 5, &n), ROTA_EBUSY);
    CHECK_EQ_INT(rota_wheel_expire(w, 1u << 30, out, 2, &n), ROTA_EBUSY);
    CHECK_EQ_INT(rota_wheel_foreach(w, count_visit, NULL), ROTA_EBUSY);
    CHECK_EQ_INT(rota_wheel_count(w), 3);
    CHECK_EQ_U64(rota_wheel_now(w), 100);
    /* Another wheel is free to use. */
    CHECK_EQ_INT(rota_wheel_advance(&other, 5), 0);
    CHECK_EQ_INT(rota_wheel_foreach(&other, count_visit, NULL), 0);
    return 0;
}

static void drain_fn(struct rota_timer *t, void *arg)
{
    (void)t;
    (void)arg;
}

static int reenter_drain(struct rota_wheel *w, struct rota_timer *t, void *arg)
{
    (void)t;
    (void)arg;
    CHECK_EQ_INT(rota_wheel_drain(w, drain_fn, NULL), ROTA_EBUSY);
    return 1;
}

TEST(foreach_refuses_reentry)
{
    struct node a, b, c;

    rota_wheel_init(&wheel, 100);
    rota_wheel_init(&other, 0);
    rota_timer_init(&a.timer, NULL);
    rota_timer_init(&b.timer, NULL);
    rota_timer_init(&c.timer, NULL);
    rota_timer_arm_at(&wheel, &a.timer, 100); /* due */
    rota_timer_arm_at(&wheel, &b.timer, 400);
    rota_timer_arm_at(&wheel, &c.timer, 1u << 25);
    CHECK_EQ_INT(rota_wheel_foreach(&wheel, reenter, NULL), 0);
    CHECK_EQ_INT(rota_wheel_foreach(&wheel, reenter_drain, NULL), 1);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 3);
    /* The wheel works normally afterwards. */
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 400), 2);
    const char *why = NULL;
    CHECK_EQ_INT(rota_wheel_check(&wheel, &why), 0);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(remaining_pending_due_idle),
        H_TEST(remaining_periodic_counts_to_next_fire),
        H_TEST(remaining_inside_callbacks),
        H_TEST(remaining_errors),
        H_TEST(foreach_empty_and_errors),
        H_TEST(foreach_random_visits_exactly_the_pending_set),
        H_TEST(foreach_random_catches_planted_miss),
        H_TEST(foreach_sees_half_done_cascade),
        H_TEST(foreach_from_callback_sees_due_and_deferred),
        H_TEST(foreach_stops_when_visitor_says_so),
        H_TEST(foreach_visitor_may_cancel_and_free_visited_timer),
        H_TEST(foreach_refuses_reentry),
    };
    master_seed = h_seed();
    return h_main(argc, argv, tests, H_COUNT(tests));
}
