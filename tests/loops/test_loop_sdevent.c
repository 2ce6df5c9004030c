/* SPDX-License-Identifier: MIT */
/*
 * test_loop_sdevent.c - rota/sdevent.h on a real sd-event loop: the shared
 * scenarios of test_loop_common.h, with I/O event sources watching the
 * descriptors, and what only this adapter has: its life without a wheel
 * that keeps the loop alive, a budgeted wake-up that lets I/O in, the coarse
 * clock, priorities, sd-event's fork rule, and a planted early fire that the
 * never-early check must catch.
 */
#define _GNU_SOURCE /* accept4, CLOCK_MONOTONIC under -std=c11 */
#include <rota/sdevent.h>

#include "test_loop_common.h"

#include <sys/wait.h>

#define MAX_FD 1024

static sd_event *event;
static struct rota_clock clk;
static struct rota_sdevent rs;

static struct rota_loop_stats stats_of(const struct rota_sdevent *x)
{
    struct rota_loop_stats st;
    rota_sdevent_stats(x, &st);
    return st;
}
static sd_event_source *watches[MAX_FD];
static int nwatched;

static void v_init(struct rota_wheel *wheel, const struct rota_clock *clock)
{
    CHECK(sd_event_new(&event) >= 0);
    clk = *clock;
    nwatched = 0;
    CHECK(rota_sdevent_init(&rs, event, wheel, clock) == 0);
}

/* For this file's own tests: lt_wheel on a CLOCK_MONOTONIC of tick_ns. */
static void sd_init(uint64_t tick_ns)
{
    CHECK(rota_clock_init(&lt_clock, ROTA_CLOCK_MONOTONIC, tick_ns) == 0);
    CHECK(rota_wheel_init(&lt_wheel, rota_clock_now(&lt_clock)) == 0);
    v_init(&lt_wheel, &lt_clock);
}

static uint64_t v_deadline_in(uint64_t delay_ns)
{
    return rota_sdevent_deadline_in(&rs, delay_ns);
}

static void v_sync(void)
{
    CHECK(rota_sdevent_sync(&rs) >= 0);
}

struct watch {
    lt_io_fn *fn;
    void *arg;
};

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
    struct watch *w = arg;
    (void)s;
    (void)revents;
    w->fn(fd, w->arg);
    return 0;
}

static void v_watch(int fd, lt_io_fn *fn, void *arg)
{
    struct watch *w = calloc(1, sizeof *w);
    CHECK(w != NULL && fd >= 0 && fd < MAX_FD);
    w->fn = fn;
    w->arg = arg;
    CHECK(sd_event_add_io(event, &watches[fd], fd, EPOLLIN, on_io, w) >= 0);
    /* The source owns its struct watch: freed when the source is. */
    CHECK(sd_event_source_set_destroy_callback(watches[fd], free) >= 0);
    nwatched++;
}

static void v_unwatch(int fd)
{
    watches[fd] = sd_event_source_disable_unref(watches[fd]);
    nwatched--;
}

/* An sd-event loop never ends by itself (the header's LIFETIME): the test's
 * loop runs while anything is watched, the wheel holds a timer, or the
 * wheel's source is set (a wake-up is due that may find nothing), bounded in
 * time.  Timers armed outside the loop need no sync: the first iteration's
 * prepare callback sets the source. */
static void v_run(void)
{
    uint64_t give_up = lt_mono_ns() + 10000 * LT_MS;
    while ((nwatched > 0 || rota_wheel_count(&lt_wheel) > 0 ||
            stats_of(&rs).armed != ROTA_NEVER) &&
           lt_mono_ns() < give_up)
        CHECK(sd_event_run(event, 1000000) >= 0);
    CHECK(lt_mono_ns() < give_up);
}

static void v_fini(void)
{
    rota_sdevent_close(&rs);
    event = sd_event_unref(event);
}

static void v_stats(struct rota_loop_stats *out)
{
    rota_sdevent_stats(&rs, out);
}

static void v_set_budget(size_t max_fires)
{
    rota_sdevent_set_budget(&rs, max_fires);
}

static const struct lt_ops sdevent_ops = {
    .name = "sd-event",
    .init = v_init,
    .deadline_in = v_deadline_in,
    .sync = v_sync,
    .watch = v_watch,
    .unwatch = v_unwatch,
    .run = v_run,
    .fini = v_fini,
    .stats = v_stats,
    .set_budget = v_set_budget,
    .sync_in_callbacks = false,
    .sync_before_run = false,
    .sync_before_rerun = false,
    .counts_rearms = true,
};

LT_TESTS(sdevent, sdevent_ops)
LT_PLANTED_TESTS(sdevent, sdevent_ops)

/* ----------------------------------------------------- life and errors */

static int fired;

static void on_fire(struct rota_wheel *w, struct rota_timer *t, uint64_t late)
{
    (void)w;
    (void)t;
    (void)late;
    fired++;
}

TEST(sdevent_lifetime)
{
    struct rota_wheel wheel;
    struct rota_timer t;

    CHECK(rota_sdevent_init(NULL, NULL, NULL, NULL) == ROTA_EINVAL);
    CHECK(rota_sdevent_init(&rs, NULL, &wheel, &clk) == ROTA_EINVAL);
    rota_sdevent_close(&rs); /* a no-op after a failed init */
    CHECK(rota_sdevent_sync(&rs) == ROTA_EINVAL);
    CHECK(rota_sdevent_sync(NULL) == ROTA_EINVAL);
    CHECK(rota_sdevent_set_priority(&rs, 0) == ROTA_EINVAL);
    CHECK(stats_of(NULL).armed == ROTA_NEVER);

    CHECK(sd_event_new(&event) >= 0);
    CHECK(rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    CHECK(rota_wheel_init(&wheel, rota_clock_now(&clk)) == 0);
    CHECK(rota_sdevent_init(&rs, event, NULL, &clk) == ROTA_EINVAL);
    CHECK(rota_sdevent_init(&rs, event, &wheel, NULL) == ROTA_EINVAL);
    /* Never initialised (zeroed): refused, not used. */
    static struct rota_wheel zeroed_wheel;
    struct rota_clock zeroed_clock = {0};
    CHECK(rota_sdevent_init(&rs, event, &zeroed_wheel, &clk) == ROTA_EINVAL);
    CHECK(rota_sdevent_init(&rs, event, &wheel, &zeroed_clock) == ROTA_EINVAL);

    /* A clock sd-event has no time sources for is refused.  (No
     * rota_clock_init() source is such a clock: the field is set by hand.) */
    struct rota_clock cpu = clk;
    cpu.id_ = CLOCK_PROCESS_CPUTIME_ID;
    CHECK(rota_sdevent_init(&rs, event, &wheel, &cpu) == ROTA_EINVAL);

    /* A wheel that already holds a timer: init sets the source to it. */
    rota_timer_init(&t, on_fire);
    uint64_t d = rota_clock_deadline_after(&clk, 5 * LT_MS);
    CHECK(rota_timer_arm_at(&wheel, &t, d) == 0);
    CHECK(rota_sdevent_init(&rs, event, &wheel, &clk) == 0);
    CHECK(stats_of(&rs).armed == d);
    CHECK_CMPU(stats_of(&rs).rearms, ==, 1);
    CHECK(rota_sdevent_sync(&rs) == 0);
    CHECK(rota_sdevent_set_priority(&rs, SD_EVENT_PRIORITY_IDLE) == 0);
    fired = 0;
    while (fired == 0)
        CHECK(sd_event_run(event, 1000000) >= 0);
    CHECK_CMPU(rota_sdevent_now(&rs), >=, d);
    CHECK(stats_of(&rs).armed == ROTA_NEVER); /* the wheel is empty */
    CHECK_CMPU(stats_of(&rs).wakeups, ==, 1);

    /* Nothing set, nothing due: an iteration dispatches nothing, and the
     * loop does not end by itself (sd-event has no such notion). */
    CHECK(sd_event_run(event, 0) == 0);
    CHECK_CMPU(stats_of(&rs).wakeups, ==, 1);
    CHECK(sd_event_get_state(event) == SD_EVENT_INITIAL);

    v_fini();
    rota_sdevent_close(&rs); /* twice is fine */
    CHECK(rota_sdevent_sync(&rs) == ROTA_EINVAL);
}

/* The wheel is empty when an I/O callback arms a timer: the source, set to
 * infinity, still runs its prepare callback, so the arm is noticed before
 * the loop blocks (a one-shot source would have been disabled by then). */
static struct rota_timer from_io;
static uint64_t from_io_due;

static void arm_from_io(int fd, void *arg)
{
    char b[16];
    (void)arg;
    CHECK(read(fd, b, sizeof b) == 1);
    v_unwatch(fd);
    rota_timer_init(&from_io, on_fire);
    from_io_due = lt_mono_ns() + 20 * LT_MS;
    CHECK(rota_timer_arm_at(&lt_wheel, &from_io,
                            rota_sdevent_deadline_in(&rs, 20 * LT_MS)) == 0);
}

TEST(sdevent_arm_from_io_into_an_empty_wheel)
{
    int pair[2];
    sd_init(LT_MS);
    CHECK(stats_of(&rs).armed == ROTA_NEVER);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair) == 0);
    v_watch(pair[0], arm_from_io, NULL);
    CHECK(write(pair[1], "x", 1) == 1);
    fired = 0;
    uint64_t t0 = lt_mono_ns();
    /* One iteration for the I/O, then one that waits (up to 2 s) for the
     * timer: it must end after about 20 ms, with the timer fired. */
    CHECK(sd_event_run(event, 2000000) == 1);
    CHECK(stats_of(&rs).armed == ROTA_NEVER); /* not synced yet */
    CHECK(sd_event_run(event, 2000000) == 1);
    CHECK_EQ_INT(fired, 1);
    CHECK_CMPU(lt_mono_ns(), >=, from_io_due);
    CHECK_CMPU(lt_mono_ns() - t0, <, 20 * LT_MS + LT_SLACK_NS);
    CHECK_CMPU(stats_of(&rs).rearms, ==, 1);
    close(pair[0]);
    close(pair[1]);
    v_fini();
}

/* Armed outside the loop into an empty wheel, no sync: the first
 * iteration's prepare callback sets the source before it waits, so one
 * sd_event_run() waits for the timer and fires it. */
TEST(sdevent_arm_outside_the_loop_needs_no_sync)
{
    struct rota_timer t;
    sd_init(LT_MS);
    rota_timer_init(&t, on_fire);
    uint64_t due = lt_mono_ns() + 20 * LT_MS;
    CHECK(rota_timer_arm_at(&lt_wheel, &t,
                            rota_sdevent_deadline_in(&rs, 20 * LT_MS)) == 0);
    CHECK(stats_of(&rs).armed == ROTA_NEVER);
    fired = 0;
    CHECK(sd_event_run(event, 2000000) == 1);
    CHECK_EQ_INT(fired, 1);
    CHECK_CMPU(lt_mono_ns(), >=, due);
    CHECK_CMPU(lt_mono_ns(), <, due + LT_SLACK_NS);
    v_fini();
}

/* ------------------------------------------------------------- budget */

#define BUDGET_TIMERS 1000
#define BUDGET 100

static struct rota_timer storm[BUDGET_TIMERS];
static int fired_at_io;

static void note_io(int fd, void *arg)
{
    char b[16];
    (void)arg;
    CHECK(read(fd, b, sizeof b) == 1);
    v_unwatch(fd);
    fired_at_io = fired;
}

/* 1,000 timers due at one tick, a budget of 100: ten wake-ups, in order,
 * none early, and the readable socket is served after the first budget,
 * not after the whole storm. */
TEST(sdevent_budget_lets_io_in)
{
    int pair[2];
    sd_init(LT_MS);
    rota_sdevent_set_budget(&rs, BUDGET);
    uint64_t due = lt_mono_ns() + 10 * LT_MS;
    uint64_t d = rota_sdevent_deadline_in(&rs, 10 * LT_MS);
    for (int i = 0; i < BUDGET_TIMERS; i++) {
        rota_timer_init(&storm[i], on_fire);
        CHECK(rota_timer_arm_at(&lt_wheel, &storm[i], d) == 0);
    }
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pair) == 0);
    fired = 0;
    fired_at_io = -1;
    /* Wait for the deadline first, so that the socket turns readable while
     * the storm is being served. */
    while (fired == 0)
        CHECK(sd_event_run(event, 1000000) >= 0);
    CHECK_CMPU(lt_mono_ns(), >=, due);
    CHECK(fired > 0 && fired <= BUDGET);
    v_watch(pair[0], note_io, NULL);
    CHECK(write(pair[1], "x", 1) == 1);
    v_run();
    CHECK_EQ_INT(fired, BUDGET_TIMERS);
    CHECK(fired_at_io >= BUDGET && fired_at_io <= 3 * BUDGET);
    CHECK_CMPU(stats_of(&rs).wakeups, >=, BUDGET_TIMERS / BUDGET);
    /* One setting, for the deadline: the source then stays due, at its
     * past time, until the storm is over. */
    CHECK_CMPU(stats_of(&rs).rearms, ==, 1);
    printf("sd-event: budget %d: I/O served after %d of %d fires, %" PRIu64
           " wake-ups\n",
           BUDGET, fired_at_io, BUDGET_TIMERS, stats_of(&rs).wakeups);
    close(pair[0]);
    close(pair[1]);
    v_fini();
}

/* --------------------------------------------------------- coarse clock */

/* CLOCK_MONOTONIC_COARSE may lag the CLOCK_MONOTONIC the source fires on:
 * the wake-up must still fire the timer (no spinning until the coarse clock
 * catches up).  Repeated to catch the lag. */
TEST(sdevent_coarse_clock_fires_once)
{
    struct rota_timer t;

    if (rota_clock_init(&clk, ROTA_CLOCK_MONOTONIC_COARSE, LT_MS / 10) != 0)
        SKIP("no CLOCK_MONOTONIC_COARSE on this system");
    CHECK(sd_event_new(&event) >= 0);
    rota_wheel_init(&lt_wheel, rota_clock_now(&clk));
    CHECK(rota_sdevent_init(&rs, event, &lt_wheel, &clk) == 0);
    rota_timer_init(&t, on_fire);
    fired = 0;
    for (int round = 0; round < 20; round++) {
        uint64_t due = rota_clock_now_ns(&clk) + 3 * LT_MS;
        CHECK(rota_timer_arm_at(&lt_wheel, &t,
                                rota_clock_deadline_after(&clk, 3 * LT_MS)) ==
              0);
        int before = fired;
        while (fired == before && stats_of(&rs).wakeups < 1000)
            CHECK(sd_event_run(event, 1000000) >= 0);
        CHECK_CMPU(lt_mono_ns(), >=, due);
    }
    CHECK_EQ_INT(fired, 20);
    CHECK_CMPU(stats_of(&rs).wakeups, ==, 20); /* no spinning */
    v_fini();
}

/* ----------------------------------------------------------------- fork */

/* sd-event refuses a parent's loop in the child: the adapter says so with
 * ROTA_ESYS and errno ECHILD, and the parent's loop is unharmed. */
TEST(sdevent_child_of_fork_gets_echild)
{
    struct rota_timer a, b;
    sd_init(LT_MS);
    rota_timer_init(&a, on_fire);
    rota_timer_init(&b, on_fire);
    CHECK(rota_timer_arm_at(&lt_wheel, &a,
                            rota_sdevent_deadline_in(&rs, 5000 * LT_MS)) == 0);
    CHECK(rota_sdevent_sync(&rs) == 1);
    CHECK(rota_timer_arm_at(&lt_wheel, &b,
                            rota_sdevent_deadline_in(&rs, 1000 * LT_MS)) == 0);
    fflush(NULL);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        errno = 0;
        int rc = rota_sdevent_sync(&rs);
        _exit(rc == ROTA_ESYS && errno == ECHILD ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(rota_sdevent_sync(&rs) == 1); /* the parent's is fine */
    rota_timer_cancel(&lt_wheel, &a);
    rota_timer_cancel(&lt_wheel, &b);
    v_fini();
}

/* ------------------------------------------------------- planted fault */

/* The adapter with a planted fault: deadlines of 40 ms and more come out
 * 30 ms early, as an adapter that set its source from a stale time would.
 * The never-early check of the shared scenario must catch it. */
static uint64_t early_deadline_in(uint64_t delay_ns)
{
    if (delay_ns >= 40 * LT_MS)
        delay_ns -= 30 * LT_MS;
    return rota_sdevent_deadline_in(&rs, delay_ns);
}

static const struct lt_ops early_ops = {
    .name = "sd-event (planted early fire)",
    .init = v_init,
    .deadline_in = early_deadline_in,
    .sync = v_sync,
    .watch = v_watch,
    .unwatch = v_unwatch,
    .run = v_run,
    .fini = v_fini,
    .stats = v_stats,
    .set_budget = v_set_budget,
    .sync_in_callbacks = false,
    .sync_before_run = false,
    .sync_before_rerun = false,
    .counts_rearms = true,
};

TEST(sdevent_never_early_catches_planted_early_fire)
{
    lt_use(&early_ops);
    unsigned long mark = h_expect_begin();
    lt_scenario_timers();
    CHECK(h_expect_end(mark) > 0);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(sdevent_lifetime),
        H_TEST(sdevent_arm_from_io_into_an_empty_wheel),
        H_TEST(sdevent_arm_outside_the_loop_needs_no_sync),
        H_TEST(sdevent_budget_lets_io_in),
        H_TEST(sdevent_coarse_clock_fires_once),
        H_TEST(sdevent_child_of_fork_gets_echild),
        H_TEST(sdevent_never_early_catches_planted_early_fire),
        LT_TEST_LIST(sdevent),
        LT_PLANTED_TEST_LIST(sdevent),
    };
    return lt_main(argc, argv, tests, H_COUNT(tests));
}
