/* SPDX-License-Identifier: MIT */
/*
 * test_lanes.c - timeout lanes (rota/lanes.h) on a fake clock.
 *
 * Named cases: arm and fire exactly, touch moves to the tail, cancel of the
 * head and of the last timer, rescale shorter (overdue timers fire in the
 * next advance, never before their new deadline) and longer, scale
 * arithmetic and saturation, callbacks that re-arm with a duration of 0
 * (no loop), drain, errors, and the checker catching a corrupted lane.
 *
 * lanes_random_matches_model: random streams of arm, touch, cancel, set
 * duration, set scale and advance over three lanes, with callbacks that
 * re-arm, touch, cancel and rescale in their own lane, against a
 * brute-force model (below) that keeps each timer's arm time and finds the
 * due ones by scanning every timer.  Each fire must be the model's
 * earliest due timer of that lane, with the model's lateness; after each
 * advance no timer may be due that did not fire.  The planted faults
 * (lanes_random_catches_*) must be caught: a fire dropped from the record,
 * and a lane given a duration one tick longer than the model's.
 *
 * ROTA_SEED repeats a run.
 */
#include <rota.h>
#include <rota/lanes.h>

#include "harness.h"

static struct rota_wheel wheel;

/* ------------------------------------------------------------ named cases */

struct rec {
    struct rota_lane_timer t;
    int id;
    int fires;
    uint64_t late;
    uint64_t fired_now;
};

static uint64_t fake_now;
static int fire_order[64];
static int fire_count;

static void rec_fire(struct rota_lane *lane, struct rota_lane_timer *t,
                     uint64_t late)
{
    struct rec *r = rota_container_of(t, struct rec, t);
    /* Inside its callback, the deadline that came due. */
    CHECK_EQ_U64(rota_lane_deadline(lane, t) + late, fake_now);
    r->fires++;
    r->late = late;
    r->fired_now = fake_now;
    if (fire_count < 64)
        fire_order[fire_count++] = r->id;
}

static void setup(uint64_t start)
{
    rota_wheel_init(&wheel, start);
    fake_now = start;
    fire_count = 0;
}

static void advance(uint64_t now)
{
    fake_now = now;
    rota_wheel_advance(&wheel, now);
}

#define CHECK_LANE(l)                                                          \
    do {                                                                       \
        const char *lwhy_ = NULL;                                              \
        if (!CHECK_EQ_INT(rota_lane_check((l), &lwhy_), 0))                    \
            fprintf(stderr, "    rota_lane_check: %s\n", lwhy_ ? lwhy_ : "?"); \
        CHECK_WHEEL(&wheel);                                                   \
    } while (0)

TEST(lane_fires_exactly_in_arm_order)
{
    struct rota_lane lane;
    struct rec r[3];

    setup(1000);
    CHECK_EQ_INT(rota_lane_init(&lane, &wheel, 30, rec_fire), 0);
    for (int i = 0; i < 3; i++) {
        r[i] = (struct rec){.id = i};
        rota_lane_timer_init(&r[i].t);
        advance(1000 + (uint64_t)i * 5); /* armed at 1000, 1005, 1010 */
        CHECK_EQ_INT(rota_lane_arm(&lane, &r[i].t), 0);
    }
    CHECK_EQ_U64(rota_lane_count(&lane), 3);
    CHECK_EQ_U64(rota_lane_deadline(&lane, &r[1].t), 1035);
    /* One wheel timer for the lane, at the head's deadline. */
    CHECK_EQ_U64(rota_wheel_count(&wheel), 1);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 1030);
    CHECK_LANE(&lane);
    advance(1029);
    CHECK_EQ_INT(r[0].fires, 0);
    advance(1030);
    CHECK_EQ_INT(r[0].fires, 1);
    CHECK_EQ_U64(r[0].late, 0);
    CHECK_EQ_INT(r[1].fires, 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 1035);
    advance(1050); /* both others, in order, with their lateness */
    CHECK_EQ_INT(r[1].fires, 1);
    CHECK_EQ_U64(r[1].late, 15);
    CHECK_EQ_U64(r[2].late, 10);
    CHECK_EQ_INT(fire_count, 3);
    CHECK_EQ_INT(fire_order[1], 1);
    CHECK_EQ_INT(fire_order[2], 2);
    CHECK_EQ_U64(rota_lane_count(&lane), 0);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK(!rota_lane_timer_pending(&r[0].t));
    CHECK_LANE(&lane);
}

TEST(lane_touch_moves_to_the_tail)
{
    struct rota_lane lane;
    struct rec a = {.id = 0}, b = {.id = 1};

    setup(0);
    rota_lane_init(&lane, &wheel, 100, rec_fire);
    rota_lane_timer_init(&a.t);
    rota_lane_timer_init(&b.t);
    rota_lane_arm(&lane, &a.t);
    advance(10);
    rota_lane_arm(&lane, &b.t);
    advance(50);
    CHECK_EQ_INT(rota_lane_touch(&lane, &a.t), 0); /* a: 150, b: 110 */
    CHECK_EQ_U64(rota_lane_deadline(&lane, &a.t), 150);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 110);
    CHECK_LANE(&lane);
    advance(109);
    CHECK_EQ_INT(a.fires + b.fires, 0);
    advance(110);
    CHECK_EQ_INT(b.fires, 1);
    CHECK_EQ_INT(a.fires, 0);
    /* Arm of a pending timer is a touch. */
    advance(120);
    CHECK_EQ_INT(rota_lane_arm(&lane, &a.t), 0);
    CHECK_EQ_U64(rota_lane_deadline(&lane, &a.t), 220);
    advance(219);
    CHECK_EQ_INT(a.fires, 0);
    advance(220);
    CHECK_EQ_INT(a.fires, 1);
    CHECK_EQ_INT(rota_lane_touch(&lane, &a.t), ROTA_ENOENT);
    CHECK_LANE(&lane);
}

TEST(lane_cancel_head_and_last)
{
    struct rota_lane lane;
    struct rec a = {.id = 0}, b = {.id = 1};

    setup(0);
    rota_lane_init(&lane, &wheel, 100, rec_fire);
    rota_lane_timer_init(&a.t);
    rota_lane_timer_init(&b.t);
    rota_lane_arm(&lane, &a.t);
    advance(40);
    rota_lane_arm(&lane, &b.t);
    CHECK_EQ_INT(rota_lane_cancel(&lane, &a.t), 1);
    CHECK_EQ_INT(rota_lane_cancel(&lane, &a.t), 0);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 140);
    CHECK_LANE(&lane);
    CHECK_EQ_INT(rota_lane_cancel(&lane, &b.t), 1);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0); /* an empty lane: no timer */
    CHECK_LANE(&lane);
    advance(1000);
    CHECK_EQ_INT(a.fires + b.fires, 0);
}

TEST(lane_shrink_fires_overdue_next_advance_never_early)
{
    struct rota_lane lane;
    struct rec r[4];

    setup(0);
    rota_lane_init(&lane, &wheel, 1000, rec_fire);
    for (int i = 0; i < 4; i++) {
        r[i] = (struct rec){.id = i};
        rota_lane_timer_init(&r[i].t);
        advance((uint64_t)i * 100); /* armed at 0, 100, 200, 300 */
        rota_lane_arm(&lane, &r[i].t);
    }
    advance(350);
    /* Down to 200: 0 and 100 are overdue (200, 300), 200 due at 400 and
     * 300 at 500. */
    CHECK_EQ_INT(rota_lane_set_duration(&lane, 200), 0);
    CHECK_EQ_U64(rota_lane_duration(&lane), 200);
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 350);
    CHECK_LANE(&lane);
    CHECK_EQ_INT(r[0].fires, 0); /* nothing fires inside the call */
    advance(350);
    CHECK_EQ_INT(r[0].fires, 1);
    CHECK_EQ_INT(r[1].fires, 1);
    CHECK_EQ_U64(r[0].late, 150);
    CHECK_EQ_U64(r[1].late, 50);
    CHECK_EQ_INT(r[2].fires, 0);
    advance(399);
    CHECK_EQ_INT(r[2].fires, 0);
    /* Half of 200 by scale: 300 is due at 400, 200 overdue. */
    CHECK_EQ_INT(rota_lane_set_scale(&lane, ROTA_LANE_SCALE_ONE / 2), 0);
    CHECK_EQ_U64(rota_lane_duration(&lane), 100);
    advance(399);
    CHECK_EQ_INT(r[2].fires, 1);
    CHECK_EQ_U64(r[2].late, 99);
    CHECK_EQ_INT(r[3].fires, 0);
    /* Back to 1.0 (200): 300 is due at 500 again. */
    CHECK_EQ_INT(rota_lane_set_scale(&lane, ROTA_LANE_SCALE_ONE), 0);
    advance(499);
    CHECK_EQ_INT(r[3].fires, 0);
    advance(500);
    CHECK_EQ_INT(r[3].fires, 1);
    CHECK_EQ_U64(r[3].late, 0);
    CHECK_LANE(&lane);
}

TEST(lane_grow_delays_every_timer)
{
    struct rota_lane lane;
    struct rec a = {.id = 0};

    setup(0);
    rota_lane_init(&lane, &wheel, 100, rec_fire);
    rota_lane_timer_init(&a.t);
    rota_lane_arm(&lane, &a.t);
    advance(50);
    CHECK_EQ_INT(rota_lane_set_scale(&lane, 3 * ROTA_LANE_SCALE_ONE), 0);
    CHECK_EQ_U64(rota_lane_deadline(&lane, &a.t), 300);
    advance(100);
    advance(299);
    CHECK_EQ_INT(a.fires, 0);
    advance(300);
    CHECK_EQ_INT(a.fires, 1);
    CHECK_EQ_U64(a.late, 0);
}

TEST(lane_scale_rounds_up_and_saturates)
{
    struct rota_lane lane;
    struct rec a = {.id = 0};

    setup(0);
    rota_lane_init(&lane, &wheel, 3, rec_fire);
    rota_lane_set_scale(&lane, ROTA_LANE_SCALE_ONE / 2); /* 1.5 -> 2 */
    CHECK_EQ_U64(rota_lane_duration(&lane), 2);
    rota_lane_set_scale(&lane, 1); /* 3/65536 -> 1: never rounds to 0 */
    CHECK_EQ_U64(rota_lane_duration(&lane), 1);
    rota_lane_set_scale(&lane, 0);
    CHECK_EQ_U64(rota_lane_duration(&lane), 0);
    rota_lane_set_duration(&lane, (uint64_t)1 << 62);
    rota_lane_set_scale(&lane, 8 * ROTA_LANE_SCALE_ONE);
    CHECK_EQ_U64(rota_lane_duration(&lane), ROTA_MAX_DEADLINE);
    rota_lane_set_duration(&lane, UINT64_MAX);
    rota_lane_set_scale(&lane, ROTA_LANE_SCALE_ONE - 1);
    CHECK_CMPU(rota_lane_duration(&lane), <=, ROTA_MAX_DEADLINE);
    CHECK_CMPU(rota_lane_duration(&lane), >, UINT64_MAX / 2);
    /* A saturated deadline is pending, never wraps into the past. */
    rota_lane_set_scale(&lane, ROTA_LANE_SCALE_ONE);
    advance(5);
    rota_lane_timer_init(&a.t);
    rota_lane_arm(&lane, &a.t);
    CHECK_EQ_U64(rota_lane_deadline(&lane, &a.t), ROTA_MAX_DEADLINE);
    advance(1000000);
    CHECK_EQ_INT(a.fires, 0);
    CHECK_LANE(&lane);
    CHECK_EQ_INT(rota_lane_cancel(&lane, &a.t), 1);
}

/* A callback that re-arms its own timer in a lane of duration 0: it fires
 * once per advance, never loops. */
static int zero_fires;
static void rearm_zero(struct rota_lane *lane, struct rota_lane_timer *t,
                       uint64_t late)
{
    (void)late;
    zero_fires++;
    rota_lane_arm(lane, t);
}

TEST(lane_zero_duration_rearm_does_not_loop)
{
    struct rota_lane lane;
    struct rota_lane_timer t;

    setup(0);
    rota_lane_init(&lane, &wheel, 0, rearm_zero);
    rota_lane_timer_init(&t);
    rota_lane_arm(&lane, &t);
    zero_fires = 0;
    advance(0);
    CHECK_EQ_INT(zero_fires, 1);
    advance(0);
    CHECK_EQ_INT(zero_fires, 2);
    advance(7);
    CHECK_EQ_INT(zero_fires, 3);
    CHECK_LANE(&lane);
    rota_lane_cancel(&lane, &t);
}

static int drained;
static void count_drained(struct rota_lane_timer *t, void *arg)
{
    (void)t;
    (void)arg;
    drained++;
}

static struct rota_lane busy_lane;
static int busy_rc;
static void drain_from_callback(struct rota_lane *lane,
                                struct rota_lane_timer *t, uint64_t late)
{
    (void)t;
    (void)late;
    busy_rc = rota_lane_drain(lane, count_drained, NULL);
}

TEST(lane_drain_and_errors)
{
    struct rota_lane lane;
    struct rota_lane_timer t[5], zeroed = {0};

    setup(0);
    CHECK_EQ_INT(rota_lane_init(NULL, &wheel, 1, rec_fire), ROTA_EINVAL);
    CHECK_EQ_INT(rota_lane_init(&lane, NULL, 1, rec_fire), ROTA_EINVAL);
    CHECK_EQ_INT(rota_lane_init(&lane, &wheel, 1, NULL), ROTA_EINVAL);
    rota_lane_init(&lane, &wheel, 10, rec_fire);
    CHECK_EQ_INT(rota_lane_arm(&lane, &zeroed), ROTA_EUNINIT);
    CHECK_EQ_INT(rota_lane_arm(&lane, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_lane_touch(&lane, &zeroed), ROTA_EUNINIT);
    CHECK_EQ_INT(rota_lane_cancel(NULL, &t[0]), ROTA_EINVAL);
    for (int i = 0; i < 5; i++) {
        rota_lane_timer_init(&t[i]);
        rota_lane_arm(&lane, &t[i]);
    }
    drained = 0;
    CHECK_EQ_INT(rota_lane_drain(&lane, count_drained, NULL), 0);
    CHECK_EQ_INT(drained, 5);
    CHECK_EQ_U64(rota_lane_count(&lane), 0);
    CHECK_EQ_U64(rota_wheel_count(&wheel), 0);
    CHECK(!rota_lane_timer_pending(&t[3]));
    CHECK_LANE(&lane);

    rota_lane_init(&busy_lane, &wheel, 10, drain_from_callback);
    rota_lane_arm(&busy_lane, &t[0]);
    rota_lane_arm(&busy_lane, &t[1]);
    advance(10);
    CHECK_EQ_INT(busy_rc, ROTA_EBUSY);
    CHECK_EQ_U64(rota_lane_count(&busy_lane), 0);
}

/* Timers armed in a callback of another lane, and a lane shrunk there. */
static struct rota_lane other_lane;
static struct rec cross[4];
static void cross_fire(struct rota_lane *lane, struct rota_lane_timer *t,
                       uint64_t late)
{
    rec_fire(lane, t, late);
    rota_lane_arm(&other_lane, &cross[2].t);
    rota_lane_set_duration(&other_lane, 5); /* cross[1] overdue */
}

TEST(lane_callback_acts_on_another_lane)
{
    struct rota_lane lane;

    setup(0);
    rota_lane_init(&lane, &wheel, 10, cross_fire);
    rota_lane_init(&other_lane, &wheel, 100, rec_fire);
    for (int i = 0; i < 3; i++) {
        cross[i] = (struct rec){.id = i};
        rota_lane_timer_init(&cross[i].t);
    }
    rota_lane_arm(&lane, &cross[0].t);
    rota_lane_arm(&other_lane, &cross[1].t);
    advance(10);
    CHECK_EQ_INT(cross[0].fires, 1);
    CHECK_EQ_INT(cross[1].fires, 0); /* re-timed in a callback: next call */
    CHECK_EQ_U64(rota_wheel_next_deadline(&wheel), 10);
    advance(10);
    CHECK_EQ_INT(cross[1].fires, 1);
    CHECK_EQ_U64(cross[1].late, 5);
    CHECK_EQ_INT(cross[2].fires, 0);
    advance(15);
    CHECK_EQ_INT(cross[2].fires, 1);
    CHECK_EQ_U64(cross[2].late, 0);
}

TEST(lane_check_catches_a_corrupted_lane)
{
    struct rota_lane lane;
    struct rota_lane_timer t[3];
    const char *why = NULL;

    setup(0);
    rota_lane_init(&lane, &wheel, 50, rec_fire);
    for (int i = 0; i < 3; i++) {
        rota_lane_timer_init(&t[i]);
        advance((uint64_t)i);
        rota_lane_arm(&lane, &t[i]);
    }
    CHECK_EQ_INT(rota_lane_check(&lane, &why), 0);
    /* Arm times out of order. */
    t[1].armed_at_ = 5;
    lane.last_arm_ = 5;
    CHECK_EQ_INT(rota_lane_check(&lane, &why), ROTA_ECORRUPT);
    printf("  rota_lane_check: %s\n", why);
    CHECK(why != NULL && strstr(why, "decrease") != NULL);
    t[1].armed_at_ = 1;
    CHECK_EQ_INT(rota_lane_check(&lane, &why), 0);
    /* The wheel timer later than the head. */
    rota_timer_touch_at(&wheel, &lane.timer_, 60);
    CHECK_EQ_INT(rota_lane_check(&lane, &why), ROTA_ECORRUPT);
    printf("  rota_lane_check: %s\n", why);
    CHECK(why != NULL && strstr(why, "later") != NULL);
    rota_timer_arm_at(&wheel, &lane.timer_, 50);
    /* A count that disagrees. */
    lane.count_++;
    CHECK_EQ_INT(rota_lane_check(&lane, &why), ROTA_ECORRUPT);
    CHECK(why != NULL && strstr(why, "count") != NULL);
    lane.count_--;
    CHECK_EQ_INT(rota_lane_check(&lane, &why), 0);
    rota_lane_drain(&lane, count_drained, NULL);
}

/* ------------------------------------------------------- the model */

/*
 * The brute-force model: each timer's lane, arm time and arm sequence; a
 * lane's duration computed from base and scale in the plainest way (bases
 * below 2^32, so base * scale fits 64 bits).  Due: arm + duration <= now.
 * The FIFO order is (arm time, seq).  Timers armed or touched during their
 * lane's own fire are excluded from that fire.
 */
#define LANES 3
#define POOL 48

struct m_timer {
    int lane; /* -1: idle */
    uint64_t armed_at;
    uint64_t seq;
    bool in_pass; /* armed or touched during its lane's current fire */
};

struct m_lane {
    uint64_t base;
    uint32_t scale;
    uint64_t last_arm;
};

enum fault { FAULT_NONE, FAULT_DROP, FAULT_LONGER };

struct run {
    struct rota_lane lane[LANES];
    struct rota_lane_timer timer[POOL];
    struct m_timer m[POOL];
    struct m_lane ml[LANES];
    uint64_t now, seq, rng;
    enum fault fault;
    bool planted;  /* the fault has been applied */
    bool mismatch; /* the comparison found a difference */
    uint64_t fires, rescales, callback_ops;
};

static struct run run;

static uint64_t m_duration(const struct m_lane *l)
{
    return (l->base * l->scale + ROTA_LANE_SCALE_ONE - 1) / ROTA_LANE_SCALE_ONE;
}

static uint64_t m_deadline(int i)
{
    return run.m[i].armed_at + m_duration(&run.ml[run.m[i].lane]);
}

static uint64_t rnd(uint64_t bound)
{
    return h_rand(&run.rng) % bound;
}

static int lane_index(const struct rota_lane *lane)
{
    return (int)(lane - run.lane);
}

static int timer_index(const struct rota_lane_timer *t)
{
    return (int)(t - run.timer);
}

static void mismatch(const char *what, int id)
{
    if (!run.mismatch && run.fault == FAULT_NONE)
        FAIL_MSG("lanes model: %s (timer %d, now %" PRIu64 ")", what, id,
                 run.now);
    run.mismatch = true;
}

static void m_arm(int i, int lane, bool in_pass)
{
    struct m_lane *l = &run.ml[lane];
    if (run.now > l->last_arm)
        l->last_arm = run.now;
    run.m[i] = (struct m_timer){lane, l->last_arm, ++run.seq, in_pass};
}

/* Arm (or touch) timer i in lane `lane`, in both. */
static void do_arm(int i, int lane, bool in_pass)
{
    if (run.m[i].lane >= 0 && run.m[i].lane != lane) {
        rota_lane_cancel(&run.lane[run.m[i].lane], &run.timer[i]);
        run.m[i].lane = -1;
    }
    if (rota_lane_arm(&run.lane[lane], &run.timer[i]) != 0)
        mismatch("arm failed", i);
    m_arm(i, lane, in_pass);
}

static void do_cancel(int i)
{
    int lane = run.m[i].lane;
    int rc = rota_lane_cancel(&run.lane[lane < 0 ? 0 : lane], &run.timer[i]);
    if (rc != (lane >= 0))
        mismatch("cancel's result", i);
    run.m[i].lane = -1;
}

static void do_rescale(int lane)
{
    struct m_lane *l = &run.ml[lane];
    run.rescales++;
    if (rnd(2) == 0) {
        l->base = rnd(4) == 0 ? 0 : rnd(120);
        uint64_t real = l->base;
        if (run.fault == FAULT_LONGER && run.fires > 50 &&
            l->scale == ROTA_LANE_SCALE_ONE) {
            real++; /* the lane waits a tick longer than the model */
            run.planted = true;
        }
        rota_lane_set_duration(&run.lane[lane], real);
    } else {
        static const uint32_t scales[] = {0,     1,     16384, 32768, 49151,
                                          65536, 65537, 98304, 131072};
        l->scale = scales[rnd(sizeof scales / sizeof scales[0])];
        if (run.fault == FAULT_LONGER && run.planted)
            l->scale = ROTA_LANE_SCALE_ONE; /* keep the planted tick */
        rota_lane_set_scale(&run.lane[lane], l->scale);
    }
}

static bool dropped_once;

static void model_fire(struct rota_lane *lane, struct rota_lane_timer *t,
                       uint64_t late)
{
    int l = lane_index(lane), i = timer_index(t);
    run.fires++;
    if (run.fault == FAULT_DROP && !run.planted && run.fires > 50) {
        /* Forget this fire: the model still holds the timer as pending. */
        run.planted = true;
        dropped_once = true;
        return;
    }
    /* The model's earliest eligible timer of the lane. */
    int best = -1;
    for (int j = 0; j < POOL; j++) {
        if (run.m[j].lane != l || run.m[j].in_pass)
            continue;
        if (best < 0 || run.m[j].armed_at < run.m[best].armed_at ||
            (run.m[j].armed_at == run.m[best].armed_at &&
             run.m[j].seq < run.m[best].seq))
            best = j;
    }
    if (best != i)
        mismatch("fired a timer that is not its lane's earliest", i);
    else if (m_deadline(i) > run.now)
        mismatch("fired early", i);
    else if (late != run.now - m_deadline(i))
        mismatch("wrong lateness", i);
    run.m[i].lane = -1;
    /* What a callback does, in its own lane. */
    switch (rnd(8)) {
    case 0:
        do_arm(i, l, true); /* re-arm itself */
        run.callback_ops++;
        break;
    case 1: {
        int j = (int)rnd(POOL);
        if (run.m[j].lane == l) {
            do_arm(j, l, true); /* touch another */
            run.callback_ops++;
        }
        break;
    }
    case 2: {
        int j = (int)rnd(POOL);
        if (run.m[j].lane == l) {
            do_cancel(j);
            run.callback_ops++;
        }
        break;
    }
    case 3:
        do_rescale(l);
        run.callback_ops++;
        break;
    default:
        break;
    }
}

static void compare_after_advance(void)
{
    for (int i = 0; i < POOL; i++) {
        if (run.m[i].lane >= 0 && !run.m[i].in_pass && m_deadline(i) <= run.now)
            mismatch("a due timer did not fire", i);
        run.m[i].in_pass = false;
        if (rota_lane_timer_pending(&run.timer[i]) != (run.m[i].lane >= 0))
            mismatch("pending differs", i);
        else if (run.m[i].lane >= 0 &&
                 rota_lane_deadline(&run.lane[run.m[i].lane], &run.timer[i]) !=
                     m_deadline(i))
            mismatch("deadline differs", i);
    }
    for (int l = 0; l < LANES; l++) {
        const char *why = NULL;
        if (rota_lane_check(&run.lane[l], &why) != 0)
            mismatch(why, -1);
    }
}

/* One random stream; returns the operation at which a mismatch was seen,
 * or 0. */
static uint64_t random_run(uint64_t seed, uint64_t ops, enum fault fault)
{
    run = (struct run){.rng = seed, .fault = fault};
    run.now = 1000 + rnd(1000);
    rota_wheel_init(&wheel, run.now);
    for (int l = 0; l < LANES; l++) {
        run.ml[l] = (struct m_lane){rnd(100), ROTA_LANE_SCALE_ONE, 0};
        rota_lane_init(&run.lane[l], &wheel, run.ml[l].base, model_fire);
    }
    for (int i = 0; i < POOL; i++) {
        rota_lane_timer_init(&run.timer[i]);
        run.m[i].lane = -1;
    }
    for (uint64_t op = 1; op <= ops; op++) {
        int i = (int)rnd(POOL), l = (int)rnd(LANES);
        switch (rnd(10)) {
        case 0:
        case 1:
        case 2:
            do_arm(i, run.m[i].lane >= 0 && rnd(2) ? run.m[i].lane : l, false);
            break;
        case 3:
            if (run.m[i].lane >= 0) {
                if (rota_lane_touch(&run.lane[run.m[i].lane], &run.timer[i]) !=
                    0)
                    mismatch("touch failed", i);
                m_arm(i, run.m[i].lane, false);
            } else if (rota_lane_touch(&run.lane[l], &run.timer[i]) !=
                       ROTA_ENOENT) {
                mismatch("touch of an idle timer", i);
            }
            break;
        case 4:
            do_cancel(i);
            break;
        case 5:
            do_rescale(l);
            break;
        default: {
            /* Small steps often land on a deadline exactly. */
            uint64_t step = rnd(4) == 0 ? rnd(200) : rnd(6);
            run.now += step;
            rota_wheel_advance(&wheel, run.now);
            compare_after_advance();
            break;
        }
        }
        if (run.mismatch) {
            for (int j = 0; j < LANES; j++)
                rota_lane_drain(&run.lane[j], count_drained, NULL);
            return op;
        }
    }
    for (int j = 0; j < LANES; j++)
        rota_lane_drain(&run.lane[j], count_drained, NULL);
    return 0;
}

TEST(lanes_random_matches_model)
{
    uint64_t seed = h_seed();
    uint64_t ops = h_small() ? 20000 : 400000;
    uint64_t total_fires = 0, total_rescales = 0, total_cb = 0;

    for (int r = 0; r < 4; r++) {
        uint64_t bad = random_run(seed + (uint64_t)r, ops / 4, FAULT_NONE);
        CHECK_EQ_U64(bad, 0);
        total_fires += run.fires;
        total_rescales += run.rescales;
        total_cb += run.callback_ops;
    }
    printf("  %" PRIu64 " fires, %" PRIu64 " rescales, %" PRIu64
           " callback operations compared\n",
           total_fires, total_rescales, total_cb);
    /* The stream must exercise what it claims to. */
    CHECK_CMPU(total_fires, >, ops / 20);
    CHECK_CMPU(total_rescales, >, ops / 40);
    CHECK_CMPU(total_cb, >, ops / 200);
}

static void planted(enum fault fault, const char *name)
{
    uint64_t seed = h_seed() ^ (uint64_t)fault * 0x9e3779b97f4a7c15u;
    uint64_t bad = random_run(seed, 200000, fault);
    CHECK(run.planted);
    CHECK_CMPU(bad, >, 0);
    printf("  planted fault \"%s\" caught at op %" PRIu64 "\n", name, bad);
}

TEST(lanes_random_catches_dropped_fire)
{
    planted(FAULT_DROP, "a fire dropped from the record");
}

TEST(lanes_random_catches_longer_duration)
{
    planted(FAULT_LONGER, "a lane a tick longer than the model");
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(lane_fires_exactly_in_arm_order),
        H_TEST(lane_touch_moves_to_the_tail),
        H_TEST(lane_cancel_head_and_last),
        H_TEST(lane_shrink_fires_overdue_next_advance_never_early),
        H_TEST(lane_grow_delays_every_timer),
        H_TEST(lane_scale_rounds_up_and_saturates),
        H_TEST(lane_zero_duration_rearm_does_not_loop),
        H_TEST(lane_drain_and_errors),
        H_TEST(lane_callback_acts_on_another_lane),
        H_TEST(lane_check_catches_a_corrupted_lane),
        H_TEST(lanes_random_matches_model),
        H_TEST(lanes_random_catches_dropped_fire),
        H_TEST(lanes_random_catches_longer_duration),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
