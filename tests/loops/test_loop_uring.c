/* SPDX-License-Identifier: MIT */
/*
 * test_loop_uring.c - rota/uring.h on a real io_uring: the bookkeeping of
 * struct rota_uring (which SQEs it takes and when it must take none), both
 * ways of moving the timeout (IORING_TIMEOUT_UPDATE, remove + add), the
 * budget, teardown, a coarse clock, and the shared real-loop scenarios of
 * test_loop_common.h on a minimal ring loop that watches descriptors with
 * IORING_OP_POLL_ADD.  Each checker of this file has a twin that plants
 * the fault it looks for and passes only if the checker fails
 * (*_catches_*).
 *
 * Where the kernel refuses io_uring (io_uring_queue_init() fails: seccomp,
 * io_uring_disabled, an old kernel), every test skips and says why.
 */
#define _GNU_SOURCE
#include <rota/clock.h>
#include <rota/uring.h>

#include <liburing.h>
#include <poll.h>

#include "test_loop_common.h"

#define RING_ENTRIES 256

/* Why this machine has no io_uring, or NULL when it has. */
static const char *uring_refused(void)
{
    static int state; /* 0 unknown, 1 works, -errno refused */
    if (state == 0) {
        struct io_uring r;
        int rc = io_uring_queue_init(8, &r, 0);
        if (rc == 0) {
            io_uring_queue_exit(&r);
            state = 1;
        } else {
            state = rc;
        }
    }
    static char why[160];
    if (state > 0)
        return NULL;
    snprintf(why, sizeof why,
             "io_uring_queue_init() failed: %s (the kernel refuses io_uring "
             "here: seccomp, kernel.io_uring_disabled or a kernel before 5.5)",
             strerror(-state));
    return why;
}

/* Skip the running test when this machine has no io_uring. */
#define need_uring()                                                           \
    do {                                                                       \
        const char *why_ = uring_refused();                                    \
        if (why_ != NULL)                                                      \
            SKIP(why_);                                                        \
    } while (0)

static struct io_uring ring;

static void ring_init(void)
{
    CHECK_EQ_INT(io_uring_queue_init(RING_ENTRIES, &ring, 0), 0);
}

/* Submit and hand every completion that arrives within `wait_ms` (at least
 * one is waited for when wait_ms > 0) to the adapter, which must own all
 * of them.  Returns how many there were. */
static int drain_own(struct rota_uring *ut, int wait_ms)
{
    struct io_uring_cqe *cqe;
    int n = 0;
    CHECK(io_uring_submit(&ring) >= 0);
    if (wait_ms > 0) {
        struct __kernel_timespec ts = {wait_ms / 1000,
                                       (long long)(wait_ms % 1000) * 1000000};
        int rc = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
        if (rc == -ETIME)
            return 0;
        CHECK_EQ_INT(rc, 0);
    }
    while (io_uring_peek_cqe(&ring, &cqe) == 0) {
        CHECK(rota_uring_owns(ut, cqe));
        CHECK(rota_uring_handle(ut, cqe) == 1);
        io_uring_cqe_seen(&ring, cqe);
        n++;
    }
    return n;
}

static struct rota_loop_stats stats_of(const struct rota_uring *ut)
{
    struct rota_loop_stats st;
    rota_uring_stats(ut, &st);
    return st;
}

/* ------------------------------------------- bookkeeping: what costs SQEs */

/* The checker of "touches, later arms and cancels cost no SQE": the SQE
 * count must not have moved. */
static void check_no_sqe(const struct rota_uring *ut, uint64_t before,
                         const char *what)
{
    uint64_t now = stats_of(ut).sqes;
    if (!CHECK_CMPU(now, ==, before))
        fprintf(stderr, "    %s took %" PRIu64 " SQE(s)\n", what, now - before);
}

static int fired_at_object;

static void on_object(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
    fired_at_object++;
}

/* `plant`: touch a timer to an earlier deadline between the touches, which
 * does move the timeout: check_no_sqe() must notice. */
static void object_scenario(unsigned flags, bool plant)
{
    struct rota_clock clk;
    struct rota_wheel w;
    struct rota_uring ut;
    struct rota_timer t[64];

    ring_init();
    CHECK(rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    rota_wheel_init(&w, rota_clock_now(&clk));
    CHECK(rota_uring_init(&ut, &ring, &w, &clk, flags) == 0);
    struct rota_loop_stats st = stats_of(&ut);
    bool update = !(flags & ROTA_URING_NO_UPDATE) &&
                  (ring.features & IORING_FEAT_EXT_ARG) != 0;
    CHECK_EQ_INT(st.update, update);
    CHECK(stats_of(&ut).armed == ROTA_NEVER);
    CHECK_EQ_INT(rota_uring_sync(&ut), 0); /* empty: nothing to arm */
    CHECK_CMPU(stats_of(&ut).sqes, ==, 0);

    /* The first arm costs one SQE, at the next sync. */
    for (int i = 0; i < 64; i++)
        rota_timer_init(&t[i], on_object);
    uint64_t d = rota_clock_deadline_after(&clk, 60000 * LT_MS);
    CHECK(rota_timer_arm_at(&w, &t[0], d) == 0);
    CHECK_EQ_INT(rota_uring_sync(&ut), 1);
    CHECK_EQ_INT(rota_uring_sync(&ut), 0);
    CHECK(stats_of(&ut).armed == d);
    CHECK_CMPU(stats_of(&ut).sqes, ==, 1);
    CHECK_EQ_INT((int)stats_of(&ut).in_flight, 1);
    CHECK_EQ_INT(drain_own(&ut, 0), 0); /* submitted, nothing completes */

    /* Later arms, touches (thousands) and cancels: no SQE. */
    uint64_t before = stats_of(&ut).sqes;
    for (int i = 1; i < 64; i++)
        CHECK(rota_timer_arm_at(&w, &t[i], d + (uint64_t)i) == 0);
    CHECK(rota_uring_sync(&ut) == 0);
    for (int round = 0; round < 100; round++) {
        for (int i = 0; i < 64; i++) {
            uint64_t later = d + 1000 + (uint64_t)(round * 64 + i);
            CHECK(rota_timer_touch_at(&w, &t[i], later) == 0);
        }
        if (plant && round == 50)
            CHECK(rota_timer_touch_at(&w, &t[3], d - 100) == 0);
        CHECK(rota_uring_sync(&ut) >= 0);
    }
    for (int i = 32; i < 64; i++)
        CHECK(rota_timer_cancel(&w, &t[i]) == 1);
    CHECK(rota_uring_sync(&ut) >= 0);
    check_no_sqe(&ut, before, "touches, later arms and cancels");
    if (plant) {
        rota_wheel_drain(&w, NULL, NULL);
        rota_uring_close(&ut);
        io_uring_queue_exit(&ring);
        return;
    }
    CHECK(stats_of(&ut).armed == d); /* stale but harmless: early */

    /* An earlier arm moves the timeout: one SQE with an update, two with
     * remove + add; the completions are the adapter's and fire nothing. */
    CHECK(rota_timer_arm_at(&w, &t[40], d - 30000) == 0);
    CHECK_EQ_INT(rota_uring_sync(&ut), 1);
    CHECK_EQ_INT(rota_uring_sync(&ut), 0);
    CHECK(stats_of(&ut).armed == d - 30000);
    st = stats_of(&ut);
    CHECK_CMPU(st.sqes, ==, before + (update ? 1 : 2));
    CHECK_CMPU(st.updates, ==, update ? 1 : 0);
    CHECK_CMPU(st.removes, ==, update ? 0 : 1);
    CHECK_CMPU(st.rearms, ==, 2);
    /* update: its own completion; remove: the remove's and the old
     * timeout's -ECANCELED. */
    int got = 0;
    for (int tries = 0; tries < 10 && got < (update ? 1 : 2); tries++)
        got += drain_own(&ut, 100);
    CHECK_EQ_INT(got, update ? 1 : 2);
    CHECK_EQ_INT((int)stats_of(&ut).in_flight, 1); /* the timeout */
    CHECK_EQ_INT(fired_at_object, 0);
    CHECK_CMPU(stats_of(&ut).wakeups, ==, 0);

    /* A completion that is not the adapter's is left alone. */
    struct io_uring_cqe other = {.user_data = 42, .res = -ETIME};
    CHECK(!rota_uring_owns(&ut, &other));
    CHECK_EQ_INT(rota_uring_handle(&ut, &other), 0);
    CHECK(rota_uring_handle(NULL, &other) == ROTA_EINVAL);
    CHECK(rota_uring_handle(&ut, NULL) == ROTA_EINVAL);

    /* Teardown: one remove, two completions, then nothing in flight; the
     * wheel keeps its timers. */
    size_t pending = rota_wheel_count(&w);
    int left = rota_uring_close(&ut);
    CHECK_EQ_INT(left, 2);
    CHECK_EQ_INT(rota_uring_close(&ut), 2); /* idempotent */
    for (int tries = 0; tries < 10 && (int)stats_of(&ut).in_flight > 0; tries++)
        drain_own(&ut, 100);
    CHECK_EQ_INT((int)stats_of(&ut).in_flight, 0);
    CHECK_EQ_INT(rota_uring_close(&ut), 0);
    CHECK_EQ_INT(rota_uring_sync(&ut), 0); /* closed: arms nothing */
    CHECK_CMPU(rota_wheel_count(&w), ==, pending);
    CHECK_EQ_INT(fired_at_object, 0);
    rota_wheel_drain(&w, NULL, NULL);
    io_uring_queue_exit(&ring);
}

TEST(uring_object_update)
{
    need_uring();
    object_scenario(0, false);
}

TEST(uring_object_remove_add)
{
    need_uring();
    object_scenario(ROTA_URING_NO_UPDATE, false);
}

TEST(uring_sqe_count_catches_an_earlier_touch)
{
    need_uring();
    unsigned long mark = h_expect_begin();
    object_scenario(0, true);
    CHECK(h_expect_end(mark) > 0);
}

TEST(uring_init_errors)
{
    struct rota_clock clk;
    struct rota_wheel w;
    struct rota_uring ut;

    need_uring();
    ring_init();
    CHECK(rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    rota_wheel_init(&w, 0);
    CHECK(rota_uring_init(NULL, &ring, &w, &clk, 0) == ROTA_EINVAL);
    CHECK(rota_uring_init(&ut, NULL, &w, &clk, 0) == ROTA_EINVAL);
    CHECK_EQ_INT(rota_uring_close(&ut), 0); /* a no-op after a failure */
    CHECK(rota_uring_init(&ut, &ring, NULL, &clk, 0) == ROTA_EINVAL);
    CHECK(rota_uring_init(&ut, &ring, &w, NULL, 0) == ROTA_EINVAL);
    CHECK(rota_uring_init(&ut, &ring, &w, &clk, 99) == ROTA_EINVAL);
    CHECK_EQ_INT(rota_uring_sync(&ut), 0);
    CHECK(rota_uring_sync(NULL) == ROTA_EINVAL);
    CHECK(rota_uring_close(NULL) == ROTA_EINVAL);
    CHECK(stats_of(NULL).armed == ROTA_NEVER);
    CHECK_EQ_INT((int)stats_of(NULL).in_flight, 0);
    io_uring_queue_exit(&ring);
}

/* The kernel answers the first update with -EINVAL (a kernel with the
 * feature bit and without IORING_TIMEOUT_UPDATE): the adapter falls back
 * to remove + add, once, and the timeout still moves. */
TEST(uring_update_refused_falls_back_to_remove)
{
    struct rota_clock clk;
    struct rota_wheel w;
    struct rota_uring ut;
    struct rota_timer a, b;

    need_uring();
    ring_init();
    if (!(ring.features & IORING_FEAT_EXT_ARG)) {
        io_uring_queue_exit(&ring);
        SKIP("this kernel has no IORING_TIMEOUT_UPDATE: nothing to refuse");
    }
    CHECK(rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    rota_wheel_init(&w, rota_clock_now(&clk));
    CHECK(rota_uring_init(&ut, &ring, &w, &clk, 0) == 0);
    rota_timer_init(&a, on_object);
    rota_timer_init(&b, on_object);
    CHECK(rota_timer_arm_at(
              &w, &a, rota_clock_deadline_after(&clk, 60000 * LT_MS)) == 0);
    CHECK_EQ_INT(rota_uring_sync(&ut), 1);
    CHECK(io_uring_submit(&ring) == 1);
    /* As if the kernel had refused an update. */
    struct io_uring_cqe refused = {.user_data = (uintptr_t)&ut + 1,
                                   .res = -EINVAL};
    CHECK(rota_uring_owns(&ut, &refused));
    CHECK_EQ_INT(rota_uring_handle(&ut, &refused), 1);
    CHECK_EQ_INT(stats_of(&ut).update, 0);
    /* The next earlier arm moves it with remove + add. */
    uint64_t near = rota_clock_deadline_after(&clk, 30 * LT_MS);
    CHECK(rota_timer_arm_at(&w, &b, near) == 0);
    CHECK_EQ_INT(rota_uring_sync(&ut), 1);
    CHECK_CMPU(stats_of(&ut).removes, ==, 1);
    uint64_t t0 = lt_mono_ns();
    fired_at_object = 0;
    for (int i = 0; i < 20 && fired_at_object == 0; i++)
        drain_own(&ut, 100);
    CHECK_EQ_INT(fired_at_object, 1);
    CHECK_CMPU(lt_mono_ns() - t0, <, 30 * LT_MS + LT_SLACK_NS);
    CHECK_CMPU(rota_clock_now(&clk), >=, near);
    rota_wheel_drain(&w, NULL, NULL);
    io_uring_queue_exit(&ring); /* cancels the rest */
}

/* Someone else cancels the adapter's timeout (an io_uring_prep_cancel()
 * over the ring's requests): the next sync arms it again and the timer
 * still fires. */
TEST(uring_timeout_cancelled_by_others_is_armed_again)
{
    struct rota_clock clk;
    struct rota_wheel w;
    struct rota_uring ut;
    struct rota_timer t;

    need_uring();
    ring_init();
    CHECK(rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    rota_wheel_init(&w, rota_clock_now(&clk));
    CHECK(rota_uring_init(&ut, &ring, &w, &clk, 0) == 0);
    rota_timer_init(&t, on_object);
    uint64_t d = rota_clock_deadline_after(&clk, 50 * LT_MS);
    CHECK(rota_timer_arm_at(&w, &t, d) == 0);
    CHECK_EQ_INT(rota_uring_sync(&ut), 1);
    CHECK(io_uring_submit(&ring) == 1);
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)&ut, 0);
    io_uring_sqe_set_data64(sqe, 7);
    CHECK(io_uring_submit(&ring) == 1);
    int seen = 0, cancels = 0;
    while (seen < 2) {
        struct io_uring_cqe *cqe;
        if (!CHECK_EQ_INT(io_uring_wait_cqe(&ring, &cqe), 0))
            break;
        if (cqe->user_data == 7)
            cancels += cqe->res == 0;
        else
            CHECK_EQ_INT(rota_uring_handle(&ut, cqe), 1); /* -ECANCELED */
        io_uring_cqe_seen(&ring, cqe);
        seen++;
    }
    CHECK_EQ_INT(cancels, 1);
    CHECK(stats_of(&ut).armed == ROTA_NEVER);
    CHECK_EQ_INT(rota_uring_sync(&ut), 1); /* armed again */
    CHECK(stats_of(&ut).armed == d);
    fired_at_object = 0;
    for (int i = 0; i < 20 && fired_at_object == 0; i++)
        drain_own(&ut, 100);
    CHECK_EQ_INT(fired_at_object, 1);
    CHECK_CMPU(rota_clock_now(&clk), >=, d);
    rota_uring_close(&ut);
    io_uring_queue_exit(&ring);
}

/* A callback may not hand the adapter its own completion. */
static struct rota_uring *busy_ut;
static int busy_rc;

static void on_busy(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
    struct io_uring_cqe mine = {.user_data = (uintptr_t)busy_ut, .res = -ETIME};
    busy_rc = rota_uring_handle(busy_ut, &mine);
}

TEST(uring_handle_from_a_callback_is_busy)
{
    struct rota_clock clk;
    struct rota_wheel w;
    struct rota_uring ut;
    struct rota_timer t;

    need_uring();
    ring_init();
    CHECK(rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    rota_wheel_init(&w, rota_clock_now(&clk));
    rota_timer_init(&t, on_busy);
    CHECK(rota_timer_arm_at(&w, &t, rota_clock_deadline_after(&clk, LT_MS)) ==
          0);
    CHECK(rota_uring_init(&ut, &ring, &w, &clk, 0) == 0);
    busy_ut = &ut;
    busy_rc = 1;
    for (int i = 0; i < 20 && rota_wheel_count(&w) > 0; i++)
        drain_own(&ut, 100);
    CHECK_EQ_INT(rota_wheel_count(&w), 0);
    CHECK(busy_rc == ROTA_EBUSY);
    CHECK_EQ_INT((int)stats_of(&ut).in_flight, 0);
    CHECK(stats_of(&ut).armed == ROTA_NEVER);
    rota_uring_close(&ut);
    io_uring_queue_exit(&ring);
}

/* With CLOCK_MONOTONIC_COARSE the clock may lag when the timeout fires:
 * the timer must still fire at that wake-up (no arming in the past over and
 * over).  Repeated to catch the lag. */
TEST(uring_coarse_clock_fires_once)
{
    struct rota_clock clk;
    struct rota_wheel w;
    struct rota_uring ut;
    struct rota_timer t;

    need_uring();
    if (rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC_COARSE, LT_MS / 10) != 0)
        SKIP("no CLOCK_MONOTONIC_COARSE on this system");
    ring_init();
    rota_wheel_init(&w, rota_clock_now(&clk));
    CHECK(rota_uring_init(&ut, &ring, &w, &clk, 0) == 0);
    rota_timer_init(&t, on_object);
    fired_at_object = 0;
    for (int round = 0; round < 20; round++) {
        uint64_t due = rota_clock_now_ns(&clk) + 3 * LT_MS;
        CHECK(rota_timer_arm_at(
                  &w, &t, rota_clock_deadline_after(&clk, 3 * LT_MS)) == 0);
        CHECK(rota_uring_sync(&ut) == 1);
        int before = fired_at_object;
        for (int i = 0; i < 20 && fired_at_object == before; i++)
            drain_own(&ut, 1000);
        CHECK_CMPU(lt_mono_ns(), >=, due);
    }
    CHECK_EQ_INT(fired_at_object, 20);
    CHECK_CMPU(stats_of(&ut).wakeups, ==, 20); /* one each, no spinning */
    rota_uring_close(&ut);
    io_uring_queue_exit(&ring);
}

/* ------------------------------------------------ a minimal ring loop */

struct watch {
    lt_io_fn *fn;
    void *arg;
    int fd;
    bool active;
    struct watch *next_all; /* every watch, freed by r_fini() */
};

static struct rota_clock clk;
static struct rota_uring ut;
static unsigned ut_flags;
static int nwatched;
static struct watch *watches[1024];
static struct watch *all_watches;
static bool skip_sync;     /* planted fault: a loop that never syncs */
static int remove_tag;     /* user_data of the loop's own poll removals */
static size_t handled_max; /* most callbacks run by one rota_uring_handle() */
static size_t fires_now;   /* callbacks run by the current handle */

static void poll_arm(struct watch *w)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    if (sqe == NULL) {
        io_uring_submit(&ring);
        sqe = io_uring_get_sqe(&ring);
    }
    CHECK(sqe != NULL);
    io_uring_prep_poll_add(sqe, w->fd, POLLIN);
    io_uring_sqe_set_data(sqe, w);
}

static void r_init(struct rota_wheel *wheel, const struct rota_clock *clock)
{
    ring_init();
    clk = *clock;
    nwatched = 0;
    CHECK(rota_uring_init(&ut, &ring, wheel, &clk, ut_flags) == 0);
}

static uint64_t r_deadline_in(uint64_t delay_ns)
{
    return rota_clock_deadline_after(&clk, delay_ns);
}

static void r_sync(void)
{
    CHECK(rota_uring_sync(&ut) >= 0);
}

static void r_watch(int fd, lt_io_fn *fn, void *arg)
{
    struct watch *w = calloc(1, sizeof *w);
    CHECK(w != NULL && fd >= 0 && fd < 1024);
    w->fn = fn;
    w->arg = arg;
    w->fd = fd;
    w->active = true;
    w->next_all = all_watches;
    all_watches = w;
    watches[fd] = w;
    nwatched++;
    poll_arm(w);
}

static void r_unwatch(int fd)
{
    struct watch *w = watches[fd];
    watches[fd] = NULL;
    w->active = false;
    nwatched--;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
    if (sqe == NULL) {
        io_uring_submit(&ring);
        sqe = io_uring_get_sqe(&ring);
    }
    CHECK(sqe != NULL);
    io_uring_prep_poll_remove(sqe, (uint64_t)(uintptr_t)w);
    io_uring_sqe_set_data(sqe, &remove_tag);
    /* Submitted now, before the caller closes the descriptor. */
    io_uring_submit(&ring);
}

static void r_completion(struct io_uring_cqe *cqe)
{
    if (io_uring_cqe_get_data(cqe) == &remove_tag)
        return;
    struct watch *w = io_uring_cqe_get_data(cqe);
    if (!w->active)
        return; /* the poll an unwatch removed */
    w->fn(w->fd, w->arg);
    if (w->active)
        poll_arm(w); /* one-shot poll: again */
}

/* The loop of the header's example, the adapter's completions after the
 * batch's I/O: runs while anything is watched or the timeout is armed;
 * bounded in time. */
static void r_run(void)
{
    uint64_t give_up = lt_mono_ns() + 10000 * LT_MS;
    for (;;) {
        if (!skip_sync)
            CHECK(rota_uring_sync(&ut) >= 0);
        if ((nwatched == 0 && stats_of(&ut).armed == ROTA_NEVER) ||
            lt_mono_ns() >= give_up)
            break;
        struct io_uring_cqe *cqe;
        struct __kernel_timespec ts = {1, 0}; /* the time bound above */
        int rc = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &ts, NULL);
        CHECK(rc >= 0 || rc == -ETIME || rc == -EINTR);
        /* The adapter's completions are copied and handled after the
         * batch's I/O: a completion handler may submit, and completions
         * posted meanwhile belong to the next batch. */
        struct {
            uint64_t user_data;
            int32_t res;
        } own[8];
        unsigned head, n = 0, nown = 0;
        io_uring_for_each_cqe(&ring, head, cqe)
        {
            n++;
            if (!rota_uring_owns(&ut, cqe)) {
                r_completion(cqe);
            } else if (CHECK(nown < 8)) {
                own[nown].user_data = cqe->user_data;
                own[nown++].res = cqe->res;
            }
        }
        io_uring_cq_advance(&ring, n);
        for (unsigned i = 0; i < nown; i++) {
            struct io_uring_cqe copy = {.user_data = own[i].user_data,
                                        .res = own[i].res};
            fires_now = 0;
            CHECK_EQ_INT(rota_uring_handle(&ut, &copy), 1);
            if (fires_now > handled_max)
                handled_max = fires_now;
        }
    }
    CHECK(lt_mono_ns() < give_up);
}

static void r_fini(void)
{
    rota_uring_close(&ut);
    io_uring_queue_exit(&ring); /* cancels whatever is in flight */
    while (all_watches != NULL) {
        struct watch *next = all_watches->next_all;
        free(all_watches);
        all_watches = next;
    }
    memset(watches, 0, sizeof watches);
}

static void r_stats(struct rota_loop_stats *out)
{
    rota_uring_stats(&ut, out);
}

static void r_set_budget(size_t max_fires)
{
    rota_uring_set_budget(&ut, max_fires);
}

static void select_update(void)
{
    ut_flags = 0;
}

static void select_remove(void)
{
    ut_flags = ROTA_URING_NO_UPDATE;
}

#define URING_OPS                                                              \
    .init = r_init, .deadline_in = r_deadline_in, .sync = r_sync,              \
    .watch = r_watch, .unwatch = r_unwatch, .run = r_run, .fini = r_fini,      \
    .stats = r_stats, .set_budget = r_set_budget, .sync_in_callbacks = false,  \
    .counts_rearms = true, .unavailable = uring_refused

static const struct lt_ops update_ops = {
    .name = "uring-update", .select = select_update, URING_OPS};
static const struct lt_ops remove_ops = {
    .name = "uring-remove", .select = select_remove, URING_OPS};

LT_TESTS(uring_update, update_ops)
LT_PLANTED_TESTS(uring_update, update_ops)
LT_TESTS(uring_remove, remove_ops)

/* ---------------------------------------- an earlier timer moves it */

static struct lt_timer far_timer, near_timer;

/* A timer 2 s away is armed; then, from I/O, one 20 ms away: it must fire
 * after ~20 ms, never before, and the loop end then (the far one is
 * cancelled by the near one's callback).  `plant`: the loop does not sync,
 * so the timeout stays at 2 s and the checks must fail. */
static void on_near(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    lt_on_timer(w, t, late);
    rota_timer_cancel(w, &far_timer.t);
}

static void on_near_io(int fd, void *arg)
{
    char b[8];
    (void)arg;
    CHECK(read(fd, b, sizeof b) == 1);
    lt->unwatch(fd);
    lt_arm_fn(&near_timer, 20 * LT_MS, LT_MS, on_near);
}

static void earlier_moves(bool plant)
{
    int pair[2];
    lt_use(&update_ops);
    lt_init(LT_MS);
    lt_arm(&far_timer, 2000 * LT_MS, LT_MS);
    CHECK(rota_uring_sync(&ut) == 1);
    uint64_t moves = stats_of(&ut).updates + stats_of(&ut).removes;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair) == 0);
    lt->watch(pair[0], on_near_io, NULL);
    CHECK(write(pair[1], "x", 1) == 1);
    skip_sync = plant;
    uint64_t t0 = lt_mono_ns();
    lt->run();
    skip_sync = false;
    uint64_t took = lt_mono_ns() - t0;
    CHECK(near_timer.fired_ns != 0);
    CHECK_CMPU(took, <, 20 * LT_MS + LT_SLACK_NS);
    CHECK_CMPU(stats_of(&ut).updates + stats_of(&ut).removes, ==, moves + 1);
    printf("uring: a timer armed earlier from I/O fired after %.2f ms\n",
           (double)took / 1e6);
    close(pair[0]);
    close(pair[1]);
    rota_wheel_drain(&lt_wheel, NULL, NULL);
    lt->fini();
}

TEST(uring_earlier_timer_moves_the_timeout)
{
    need_uring();
    earlier_moves(false);
}

TEST(uring_earlier_check_catches_a_loop_that_never_syncs)
{
    need_uring();
    unsigned long mark = h_expect_begin();
    earlier_moves(true);
    CHECK(h_expect_end(mark) > 0);
}

/* ------------------------------------------------------ never early */

/* lt_on_timer() checks "never before due_ns".  Planted: the wheel's
 * deadline is 500 ms earlier than the due_ns the check is given (a margin
 * that a slow run, valgrind's, cannot eat up). */
TEST(uring_never_early_check_catches_an_early_deadline)
{
    need_uring();
    lt_use(&update_ops);
    lt_init(LT_MS);
    lt_fired = 0;
    for (int i = 0; i < 5; i++) {
        struct lt_timer *x = &lt_timers[i];
        uint64_t delay = (uint64_t)(600 + 10 * i) * LT_MS;
        x->due_ns = lt_mono_ns() + delay;
        x->fired_ns = 0;
        x->tick_ns = LT_MS;
        rota_timer_init(&x->t, lt_on_timer);
        CHECK(rota_timer_arm_at(&lt_wheel, &x->t,
                                lt->deadline_in(delay - 500 * LT_MS)) == 0);
    }
    unsigned long mark = h_expect_begin();
    lt->run();
    unsigned long caught = h_expect_end(mark);
    CHECK_EQ_INT(lt_fired, 5);
    CHECK(caught > 0); /* the early fires were reported */
    lt->fini();
}

/* ---------------------------------------------------------- the budget */

#define BUDGET_TIMERS 100
#define BUDGET 10

static struct rota_timer budget_timers[BUDGET_TIMERS];
static int budget_fired, budget_fired_at_io;
static int budget_pair[2];

static void on_budget(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
    budget_fired++;
    fires_now++;
    /* The byte arrives while the timers run: its completion then competes
     * with the wake-ups that follow. */
    if (budget_fired == 1)
        CHECK(write(budget_pair[1], "x", 1) == 1);
}

static void on_budget_io(int fd, void *arg)
{
    char b[8];
    (void)arg;
    CHECK(read(fd, b, sizeof b) == 1);
    lt->unwatch(fd);
    budget_fired_at_io = budget_fired;
}

/* 100 timers due at once, budget 10: no wake-up runs more than 10, a read
 * that arrives after the first one ran is served before they all ran, all
 * of them run.  `budget` 0 plants the fault (no budget). */
static void budget_scenario(size_t budget)
{
    int *pair = budget_pair;
    lt_use(&update_ops);
    lt_init(LT_MS);
    rota_uring_set_budget(&ut, budget);
    budget_fired = 0;
    budget_fired_at_io = -1;
    handled_max = 0;
    uint64_t due = lt->deadline_in(5 * LT_MS);
    for (int i = 0; i < BUDGET_TIMERS; i++) {
        rota_timer_init(&budget_timers[i], on_budget);
        CHECK(rota_timer_arm_at(&lt_wheel, &budget_timers[i], due) == 0);
    }
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair) == 0);
    lt->watch(pair[0], on_budget_io, NULL);
    lt->run();
    CHECK_EQ_INT(budget_fired, BUDGET_TIMERS);
    CHECK_CMPU(handled_max, <=, BUDGET);
    CHECK(budget_fired_at_io >= 0 && budget_fired_at_io < BUDGET_TIMERS);
    CHECK_CMPU(stats_of(&ut).wakeups, >=, BUDGET_TIMERS / BUDGET);
    printf("uring: budget %zu: %" PRIu64 " wake-ups, at most %zu callbacks "
           "each, the read served after %d\n",
           budget, stats_of(&ut).wakeups, handled_max, budget_fired_at_io);
    close(pair[0]);
    close(pair[1]);
    lt->fini();
}

TEST(uring_budget_bounds_each_wakeup)
{
    need_uring();
    budget_scenario(BUDGET);
}

TEST(uring_budget_check_catches_no_budget)
{
    need_uring();
    unsigned long mark = h_expect_begin();
    budget_scenario(0);
    CHECK(h_expect_end(mark) > 0);
}

/* ---------------------------------------------------------- teardown */

static int teardown_fired;

static void on_teardown(struct rota_wheel *w, struct rota_timer *t,
                        uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
    teardown_fired++;
}

/* Close with a timeout 30 ms away in flight: its completions still come and
 * are the adapter's, the timer never runs, the wheel keeps it.  `plant`:
 * no close, and the checks must see the timer run. */
static void teardown_scenario(bool plant)
{
    struct rota_timer t;
    lt_use(&update_ops);
    lt_init(LT_MS);
    teardown_fired = 0;
    rota_timer_init(&t, on_teardown);
    CHECK(rota_timer_arm_at(&lt_wheel, &t, lt->deadline_in(30 * LT_MS)) == 0);
    CHECK(rota_uring_sync(&ut) == 1);
    CHECK(io_uring_submit(&ring) == 1);
    if (!plant)
        CHECK_EQ_INT(rota_uring_close(&ut), 2);
    for (int i = 0; i < 10 && (int)stats_of(&ut).in_flight > 0; i++)
        drain_own(&ut, 100);
    drain_own(&ut, 60); /* nothing more arrives */
    CHECK_EQ_INT((int)stats_of(&ut).in_flight, 0);
    CHECK_EQ_INT(teardown_fired, 0);
    CHECK_CMPU(rota_wheel_count(&lt_wheel), ==, 1);
    rota_wheel_drain(&lt_wheel, NULL, NULL);
    lt->fini();
}

TEST(uring_close_cancels_the_timeout)
{
    need_uring();
    teardown_scenario(false);
}

TEST(uring_close_check_catches_a_missing_close)
{
    need_uring();
    unsigned long mark = h_expect_begin();
    teardown_scenario(true);
    CHECK(h_expect_end(mark) > 0);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(uring_init_errors),
        H_TEST(uring_object_update),
        H_TEST(uring_object_remove_add),
        H_TEST(uring_sqe_count_catches_an_earlier_touch),
        H_TEST(uring_update_refused_falls_back_to_remove),
        H_TEST(uring_timeout_cancelled_by_others_is_armed_again),
        H_TEST(uring_handle_from_a_callback_is_busy),
        H_TEST(uring_coarse_clock_fires_once),
        H_TEST(uring_earlier_timer_moves_the_timeout),
        H_TEST(uring_earlier_check_catches_a_loop_that_never_syncs),
        H_TEST(uring_never_early_check_catches_an_early_deadline),
        H_TEST(uring_budget_bounds_each_wakeup),
        H_TEST(uring_budget_check_catches_no_budget),
        H_TEST(uring_close_cancels_the_timeout),
        H_TEST(uring_close_check_catches_a_missing_close),
        LT_TEST_LIST(uring_update),
        LT_PLANTED_TEST_LIST(uring_update),
        LT_TEST_LIST(uring_remove),
    };
    return lt_main(argc, argv, tests, H_COUNT(tests));
}
