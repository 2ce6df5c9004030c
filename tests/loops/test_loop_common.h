/* SPDX-License-Identifier: MIT */
/*
 * test_loop_common.h - the real-loop scenarios every event-loop adapter
 * test runs (test_loop_epoll.c, test_loop_uv.c, test_loop_ev.c,
 * test_loop_event.c, test_loop_sdevent.c).  Each test file fills a struct
 * lt_ops with its loop's glue, defines the scenarios as named tests with
 * LT_TESTS() (filterable like every harness.h test: `test_loop_uv
 * idle_kicks`) and calls lt_main().
 *
 * These tests run real loops with short real timers on loopback.  They check
 * the integration, not the wheel (the core's tests do that on a fake
 * clock): every timer fires, never before its deadline by CLOCK_MONOTONIC,
 * and no later than one tick plus LT_SLACK_NS (the machine is shared, so the
 * slack is generous); touches never re-arm the loop's timer; a timer armed
 * from a callback earlier than the current arming is honoured; a timer that
 * re-arms itself with delay 0 does not starve I/O; the loop ends by itself
 * when the wheel is empty, and pending timers keep it running (with a sync
 * only where the adapter's header asks for one).
 *
 * Randomized delays use the seed printed at the start; set ROTA_SEED to
 * replay one.  Checks are harness.h's, made on the loop's thread.
 */
#ifndef TEST_LOOP_COMMON_H
#define TEST_LOOP_COMMON_H

/* Each test file defines _GNU_SOURCE before its first include: accept4(),
 * CLOCK_MONOTONIC and uv.h's pthread types need it under -std=c11. */

#include <rota.h>
#include <rota/loop.h>

#include "harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define LT_MS UINT64_C(1000000)
#define LT_SLACK_NS (300u * LT_MS) /* the real-time slack of these tests */

static uint64_t lt_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The scenarios' random delays: seeded from h_seed() in lt_main(). */
static uint64_t lt_rng;

static uint64_t lt_rand(void)
{
    return h_rand(&lt_rng);
}

/* ------------------------------------------------------- the loop's glue */

typedef void lt_io_fn(int fd, void *arg);

struct lt_ops {
    const char *name;
    /* Called before each scenario: set what differs between flavours of
     * one loop (timerfd or not, libevent's precise timer).  May be NULL. */
    void (*select)(void);
    /* Why this loop cannot run here (the kernel refuses io_uring), or NULL;
     * the scenarios then skip with that reason.  May be NULL. */
    const char *(*unavailable)(void);
    /* Create the loop and bind the adapter to `wheel`, which lt_init() has
     * initialised at `clock`'s time (the adapter does not). */
    void (*init)(struct rota_wheel *wheel, const struct rota_clock *clock);
    uint64_t (*deadline_in)(uint64_t delay_ns);
    /* The adapter's sync (after arming outside the loop). */
    void (*sync)(void);
    /* Call fn(fd, arg) whenever fd is readable; stop that. */
    void (*watch)(int fd, lt_io_fn *fn, void *arg);
    void (*unwatch)(int fd);
    /* Run the loop until nothing is left to do. */
    void (*run)(void);
    /* Stop the adapter and destroy the loop. */
    void (*fini)(void);
    /* The adapter's stats call (rota/loop.h) and its budget. */
    void (*stats)(struct rota_loop_stats *out);
    void (*set_budget)(size_t max_fires);
    /* libevent: arms made in I/O callbacks need an explicit sync. */
    bool sync_in_callbacks;
    /* Arms made outside the loop need a sync before it runs (libevent),
     * or before it runs again once it has ended with the wheel empty
     * (libuv): what each header says. */
    bool sync_before_run;
    bool sync_before_rerun;
    /* false for a loop that recomputes its timeout every turn and so has
     * nothing to re-arm (the epoll_wait timeout): skips the re-arm checks. */
    bool counts_rearms;
};

static const struct lt_ops *lt;

static struct rota_loop_stats lt_stats(void)
{
    struct rota_loop_stats st;
    lt->stats(&st);
    return st;
}

static uint64_t lt_rearms(void)
{
    return lt_stats().rearms;
}

static uint64_t lt_wakeups(void)
{
    return lt_stats().wakeups;
}
static struct rota_wheel lt_wheel;
static struct rota_clock lt_clock;

/* The caller owns the wheel and its time: initialise both, then bind. */
static void lt_init(uint64_t tick_ns)
{
    CHECK(rota_clock_init(&lt_clock, ROTA_CLOCK_MONOTONIC, tick_ns) == 0);
    CHECK(rota_wheel_init(&lt_wheel, rota_clock_now(&lt_clock)) == 0);
    lt->init(&lt_wheel, &lt_clock);
}

static void lt_sync_if_needed(void)
{
    if (lt->sync_in_callbacks)
        lt->sync();
}

/* -------------------------------------------------- scenario: many timers */

#define LT_NTIMERS 300

struct lt_timer {
    struct rota_timer t;
    uint64_t due_ns; /* the instant it must not fire before */
    uint64_t fired_ns;
    uint64_t tick_ns;
};

static struct lt_timer lt_timers[LT_NTIMERS];
static struct lt_timer lt_many[100];
static int lt_fired;
static uint64_t lt_max_late_ns;

static void lt_on_timer(struct rota_wheel *w, struct rota_timer *t,
                        uint64_t late)
{
    struct lt_timer *x = rota_container_of(t, struct lt_timer, t);
    uint64_t now = lt_mono_ns();

    (void)w;
    (void)late;
    x->fired_ns = now;
    lt_fired++;
    CHECK_CMPU(now, >=, x->due_ns); /* never early */
    if (now >= x->due_ns && now - x->due_ns > lt_max_late_ns)
        lt_max_late_ns = now - x->due_ns;
    CHECK_CMPU(now, <=, x->due_ns + x->tick_ns + LT_SLACK_NS);
}

/* Arm `x` `delay_ns` from now: due_ns is measured before the deadline is
 * computed, so "never early" is judged against the earliest honest start. */
static void lt_arm_fn(struct lt_timer *x, uint64_t delay_ns, uint64_t tick_ns,
                      rota_timer_fn *fn)
{
    x->due_ns = lt_mono_ns() + delay_ns;
    x->fired_ns = 0;
    x->tick_ns = tick_ns;
    rota_timer_init(&x->t, fn);
    CHECK(rota_timer_arm_at(&lt_wheel, &x->t, lt->deadline_in(delay_ns)) == 0);
}

static void lt_arm(struct lt_timer *x, uint64_t delay_ns, uint64_t tick_ns)
{
    lt_arm_fn(x, delay_ns, tick_ns, lt_on_timer);
}

/* 300 timers, 0-250 ms, 1 ms ticks, armed before the loop runs; the loop
 * must end by itself once the last has fired. */
static void lt_scenario_timers(void)
{
    const uint64_t tick = LT_MS;
    lt_init(tick);
    lt_fired = 0;
    lt_max_late_ns = 0;
    for (int i = 0; i < LT_NTIMERS; i++)
        lt_arm(&lt_timers[i], lt_rand() % (250 * LT_MS), tick);
    lt->sync();
    uint64_t t0 = lt_mono_ns();
    lt->run();
    uint64_t took = lt_mono_ns() - t0;
    CHECK_CMPU(lt_fired, ==, LT_NTIMERS);
    CHECK_CMPU(rota_wheel_count(&lt_wheel), ==, 0);
    CHECK_CMPU(took, <, 250 * LT_MS + LT_SLACK_NS + LT_SLACK_NS);
    /* One OS timer: wake-ups are bounded by distinct deadlines, not by
     * timers; and each wake-up re-arms once at most. */
    if (lt->counts_rearms)
        CHECK_CMPU(lt_rearms(), <=, lt_wakeups() + 1);
    printf("%s: timers: %d fired, max lateness %.2f ms, %" PRIu64
           " wake-ups, %" PRIu64 " re-arms\n",
           lt->name, lt_fired, (double)lt_max_late_ns / 1e6, lt_wakeups(),
           lt_rearms());
    /* Both histograms count what they say: the wheel's one per timer, the
     * adapter's one per wake-up, and no wake-up comes before its deadline
     * by more than the clock's own rounding (bucket 0 holds those). */
    struct rota_lateness wheel_late, wake_late;
    uint64_t wheel_sum = 0, wake_sum = 0, median = 0;
    rota_wheel_lateness(&lt_wheel, &wheel_late);
    wake_late = lt_stats().lateness;
    for (unsigned k = 0; k < ROTA_LATE_BUCKETS; k++) {
        wheel_sum += wheel_late.count[k];
        wake_sum += wake_late.count[k];
    }
    for (unsigned k = 0, seen = 0; k < ROTA_LATE_BUCKETS; k++) {
        seen += (unsigned)wake_late.count[k];
        if (2 * seen >= wake_sum) {
            median = k;
            break;
        }
    }
    CHECK_CMPU(wheel_sum, ==, (uint64_t)LT_NTIMERS);
    CHECK_CMPU(wake_sum, ==, lt_wakeups());
    printf("%s: wake-up lateness: median under %" PRIu64 " us\n", lt->name,
           median == 0 ? 0 : ((uint64_t)1 << median) / 1000 + 1);
    lt->fini();
}

/* ------------------------------------ scenario: earlier timer from I/O */

static int lt_pair[2];
static struct lt_timer lt_long, lt_short;

static void lt_on_short(struct rota_wheel *w, struct rota_timer *t,
                        uint64_t late)
{
    lt_on_timer(w, t, late);
    /* Cancel the long one: the wheel is empty, the loop must end now. */
    CHECK(rota_timer_cancel(&lt_wheel, &lt_long.t) == 1);
}

static void lt_on_pair_readable(int fd, void *arg)
{
    char b[16];
    (void)arg;
    CHECK(read(fd, b, sizeof b) == 1);
    lt->unwatch(fd);
    /* Earlier than the current arming (2 s): must be honoured. */
    lt_arm_fn(&lt_short, 20 * LT_MS, LT_MS, lt_on_short);
    lt_sync_if_needed();
}

static void lt_scenario_earlier_from_io(void)
{
    lt_init(LT_MS);
    lt_fired = 0;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, lt_pair) == 0);
    lt_arm(&lt_long, 2000 * LT_MS, LT_MS);
    lt->sync();
    lt->watch(lt_pair[0], lt_on_pair_readable, NULL);
    CHECK(write(lt_pair[1], "x", 1) == 1);
    uint64_t t0 = lt_mono_ns();
    lt->run();
    uint64_t took = lt_mono_ns() - t0;
    CHECK(lt_short.fired_ns != 0);
    CHECK(lt_long.fired_ns == 0);
    CHECK_CMPU(took, <, 20 * LT_MS + LT_SLACK_NS); /* not 2 s */
    printf("%s: earlier timer armed from I/O fired after %.2f ms\n", lt->name,
           (double)(lt_short.fired_ns - (lt_short.due_ns - 20 * LT_MS)) / 1e6);
    close(lt_pair[0]);
    close(lt_pair[1]);
    lt->fini();
}

/* ------------------------------ scenario: delay 0 re-arm vs I/O fairness */

static struct rota_timer lt_spin;
static int lt_spins, lt_spins_at_io;
static bool lt_io_seen;

static void lt_on_spin(struct rota_wheel *w, struct rota_timer *t,
                       uint64_t late)
{
    (void)late;
    lt_spins++;
    if (!lt_io_seen && lt_spins < 1000)
        rota_timer_arm_at(w, t, rota_wheel_now(w)); /* due at once, again */
}

static void lt_on_spin_io(int fd, void *arg)
{
    char b[16];
    (void)arg;
    CHECK(read(fd, b, sizeof b) == 1);
    lt->unwatch(fd);
    lt_io_seen = true;
    lt_spins_at_io = lt_spins;
}

static void lt_scenario_zero_delay(void)
{
    lt_init(LT_MS);
    lt_spins = 0;
    lt_spins_at_io = -1;
    lt_io_seen = false;
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, lt_pair) == 0);
    rota_timer_init(&lt_spin, lt_on_spin);
    CHECK(rota_timer_arm_at(&lt_wheel, &lt_spin, rota_wheel_now(&lt_wheel)) ==
          0);
    lt->sync();
    lt->watch(lt_pair[0], lt_on_spin_io, NULL);
    CHECK(write(lt_pair[1], "x", 1) == 1);
    lt->run();
    /* The loop polled between re-arms: I/O was seen long before 1000. */
    CHECK(lt_io_seen);
    CHECK(lt_spins_at_io >= 0 && lt_spins_at_io < 50);
    printf("%s: a delay-0 timer re-armed %d time(s) before I/O ran\n", lt->name,
           lt_spins_at_io);
    close(lt_pair[0]);
    close(lt_pair[1]);
    lt->fini();
}

/* ------------------------------------- scenario: idle kicks on loopback */

#define LT_CONNS 20
#define LT_IDLE_NS (200u * LT_MS)
#define LT_KICK_TICK_NS (10u * LT_MS)
#define LT_CHAT_NS (40u * LT_MS)
#define LT_RUN_NS (900u * LT_MS)

struct lt_conn {
    struct rota_timer idle;    /* server side: kicks when silent */
    struct rota_periodic chat; /* client side: chatty writes */
    int server_fd, client_fd;
    bool chatty;
    uint64_t last_write_ns;
    uint64_t kicked_ns;
};

static struct lt_conn lt_conns[LT_CONNS];
static struct rota_timer lt_stop;
static uint64_t lt_touches;

static void lt_on_idle(struct rota_wheel *w, struct rota_timer *t,
                       uint64_t late)
{
    struct lt_conn *c = rota_container_of(t, struct lt_conn, idle);
    (void)w;
    (void)late;
    c->kicked_ns = lt_mono_ns();
    lt->unwatch(c->server_fd);
    close(c->server_fd);
    c->server_fd = -1;
}

static void lt_on_chat(struct rota_wheel *w, struct rota_timer *t,
                       uint64_t late)
{
    struct lt_conn *c = rota_container_of(t, struct lt_conn, chat.timer);
    (void)w;
    (void)late;
    c->last_write_ns = lt_mono_ns();
    CHECK(write(c->client_fd, "c", 1) == 1);
}

static void lt_on_server_readable(int fd, void *arg)
{
    struct lt_conn *c = arg;
    char b[256];
    ssize_t n = read(fd, b, sizeof b);
    if (n > 0) {
        /* Touch on every read: must never re-arm the loop's timer. */
        CHECK(rota_timer_touch_at(&lt_wheel, &c->idle,
                                  lt->deadline_in(LT_IDLE_NS)) == 0);
        lt_touches++;
    }
}

static void lt_on_stop(struct rota_wheel *w, struct rota_timer *t,
                       uint64_t late)
{
    (void)t;
    (void)late;
    for (int i = 0; i < LT_CONNS; i++) {
        struct lt_conn *c = &lt_conns[i];
        rota_timer_cancel(w, &c->chat.timer);
        if (c->server_fd >= 0) {
            rota_timer_cancel(w, &c->idle);
            lt->unwatch(c->server_fd);
            close(c->server_fd);
            c->server_fd = -1;
        }
        close(c->client_fd);
    }
}

static void lt_scenario_idle_kicks(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof a;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    CHECK(ls >= 0);
    CHECK(bind(ls, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(ls, 64) == 0);
    CHECK(getsockname(ls, (struct sockaddr *)&a, &alen) == 0);

    lt_init(LT_KICK_TICK_NS);
    lt_touches = 0;
    for (int i = 0; i < LT_CONNS; i++) {
        struct lt_conn *c = &lt_conns[i];
        c->chatty = i % 2 == 0;
        c->kicked_ns = 0;
        c->client_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(c->client_fd >= 0);
        CHECK(connect(c->client_fd, (struct sockaddr *)&a, sizeof a) == 0);
        c->server_fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        CHECK(c->server_fd >= 0);
        rota_timer_init(&c->idle, lt_on_idle);
        rota_periodic_init(&c->chat, lt_on_chat);
        CHECK(rota_timer_arm_at(&lt_wheel, &c->idle,
                                lt->deadline_in(LT_IDLE_NS)) == 0);
        lt->watch(c->server_fd, lt_on_server_readable, c);
        c->last_write_ns = lt_mono_ns();
        CHECK(write(c->client_fd, "h", 1) == 1);
        if (c->chatty) {
            uint64_t first = lt->deadline_in(LT_CHAT_NS);
            CHECK(rota_periodic_arm_at(&lt_wheel, &c->chat, first,
                                       LT_CHAT_NS / LT_KICK_TICK_NS,
                                       ROTA_MISSED_SKIP) == 0);
        }
    }
    close(ls);
    rota_timer_init(&lt_stop, lt_on_stop);
    CHECK(rota_timer_arm_at(&lt_wheel, &lt_stop, lt->deadline_in(LT_RUN_NS)) ==
          0);
    lt->sync();
    lt->run();

    uint64_t worst = 0;
    for (int i = 0; i < LT_CONNS; i++) {
        struct lt_conn *c = &lt_conns[i];
        if (c->chatty) {
            CHECK(c->kicked_ns == 0); /* never kicked while chatty */
            continue;
        }
        CHECK(c->kicked_ns != 0);
        if (c->kicked_ns == 0)
            continue;
        uint64_t after = c->kicked_ns - c->last_write_ns;
        CHECK_CMPU(after, >=, LT_IDLE_NS);
        CHECK_CMPU(after, <=, LT_IDLE_NS + LT_KICK_TICK_NS + LT_SLACK_NS);
        if (after > worst)
            worst = after;
    }
    CHECK_CMPU(lt_touches, >=, LT_CONNS); /* at least the hellos */
    /* Touches did not re-arm: at most one arming per wake-up, plus the
     * first. */
    if (lt->counts_rearms) {
        CHECK_CMPU(lt_rearms(), <=, lt_wakeups() + 1);
        CHECK_CMPU(lt_rearms(), <, lt_touches);
    }
    printf("%s: idle kicks: %" PRIu64 " touches, %" PRIu64 " re-arms, %" PRIu64
           " wake-ups, slowest kick %.1f ms after the last byte\n",
           lt->name, lt_touches, lt_rearms(), lt_wakeups(),
           (double)worst / 1e6);
    lt->fini();
}

/* ---------------------------------------------- scenario: sync is lazy */

/* Without running the loop: arms later than the current arming, touches
 * and cancels never re-arm; an earlier arm does, once. */
static void lt_scenario_sync_rule(void)
{
    lt_init(LT_MS);
    uint64_t base = lt_rearms();
    for (int i = 0; i < 100; i++)
        lt_arm(&lt_many[i], (uint64_t)(1000 + i) * LT_MS, LT_MS);
    lt->sync();
    CHECK_CMPU(lt_rearms(), ==, base + 1);
    for (int i = 0; i < 100; i++)
        CHECK(rota_timer_touch_at(&lt_wheel, &lt_many[i].t,
                                  lt->deadline_in(5000 * LT_MS)) == 0);
    lt->sync();
    for (int i = 50; i < 100; i++)
        CHECK(rota_timer_cancel(&lt_wheel, &lt_many[i].t) == 1);
    lt->sync();
    CHECK_CMPU(lt_rearms(), ==, base + 1);
    CHECK(rota_timer_arm_at(&lt_wheel, &lt_many[50].t,
                            lt->deadline_in(10 * LT_MS)) == 0);
    lt->sync();
    lt->sync();
    CHECK_CMPU(lt_rearms(), ==, base + 2);
    for (int i = 0; i < 51; i++)
        rota_timer_cancel(&lt_wheel, &lt_many[i].t);
    CHECK_CMPU(rota_wheel_count(&lt_wheel), ==, 0);
    lt->run(); /* one wake-up that finds nothing, then the loop ends */
    CHECK_CMPU(lt_rearms(), ==, base + 2);
    lt->fini();
}

/* ----------------------------- scenario: pending timers keep it alive */

/* Timers armed before the adapter is bound, then between init and the
 * first run, with no sync: the loop must run until every one has fired
 * (a loop that returned early would leave them pending).  Then, once the
 * loop has ended with the wheel empty, timers armed outside it again: the
 * second run must fire them too, with a sync only where the header says
 * one is needed. */
static void lt_scenario_keeps_loop_alive(void)
{
    CHECK(rota_clock_init(&lt_clock, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    CHECK(rota_wheel_init(&lt_wheel, rota_clock_now(&lt_clock)) == 0);
    lt_fired = 0;
    lt_max_late_ns = 0;
    /* Before the bind: the adapter must look at the wheel it is given. */
    struct lt_timer *early = &lt_many[0];
    early->due_ns = lt_mono_ns() + 30 * LT_MS;
    early->fired_ns = 0;
    early->tick_ns = LT_MS;
    rota_timer_init(&early->t, lt_on_timer);
    CHECK(rota_timer_arm_at(&lt_wheel, &early->t,
                            rota_clock_deadline_after(&lt_clock, 30 * LT_MS)) ==
          0);
    lt->init(&lt_wheel, &lt_clock);
    if (lt->counts_rearms) /* init armed the loop's timer for it */
        CHECK_CMPU(lt_rearms(), ==, 1);
    for (int i = 1; i < 50; i++)
        lt_arm(&lt_many[i], (uint64_t)(20 + i) * LT_MS, LT_MS);
    if (lt->sync_before_run)
        lt->sync();
    lt->run();
    CHECK_CMPU(lt_fired, ==, 50);
    CHECK_CMPU(rota_wheel_count(&lt_wheel), ==, 0);

    for (int i = 50; i < 100; i++)
        lt_arm(&lt_many[i], (uint64_t)(i - 40) * LT_MS, LT_MS);
    if (lt->sync_before_run || lt->sync_before_rerun)
        lt->sync();
    lt->run();
    CHECK_CMPU(lt_fired, ==, 100);
    CHECK_CMPU(rota_wheel_count(&lt_wheel), ==, 0);
    lt->fini();
}

/* ------------------------- scenario: delays counted after a long idle */

/* A loop with nothing to do sleeps: the wheel's `now` stays where the last
 * wake-up left it.  Then an I/O callback (a timerfd coming due, so the test
 * needs no second thread) arms with a delay counted from the wheel's now,
 * the three ways a user writes it: rota_timer_arm_in(), arm_at(now + d) and
 * touch_at(now + d) of a timer armed far away before the idle.  Each must
 * fire no earlier than d after the call by CLOCK_MONOTONIC (lt_on_timer()),
 * not at once, as it would if the delay were counted from the stale time.
 * Then the same between two runs of the loop, after a sleep outside it. */

#define LT_IDLE_GAP_NS (300u * LT_MS) /* how long the loop sleeps */
#define LT_GAP_DELAY 100u             /* then the delay, in 1 ms ticks */

static struct lt_timer lt_in, lt_plus, lt_touched;
/* The planted fault: the adapter's time source taken off the wheel after
 * the bind, so that delays count from the wheel's stale time again. */
static bool lt_planted_no_source;

/* Set up `x` to be due `LT_GAP_DELAY` ticks after `t0_ns`. */
static void lt_gap_prepare(struct lt_timer *x, uint64_t t0_ns)
{
    x->due_ns = t0_ns + LT_GAP_DELAY * LT_MS;
    x->fired_ns = 0;
    x->tick_ns = LT_MS;
}

/* The three arms, with the delay counted from the wheel's time.  due_ns
 * is read before the calls: the earliest honest start. */
static void lt_gap_arm(void)
{
    uint64_t t0 = lt_mono_ns();
    lt_gap_prepare(&lt_in, t0);
    lt_gap_prepare(&lt_plus, t0);
    lt_gap_prepare(&lt_touched, t0);
    rota_timer_init(&lt_in.t, lt_on_timer);
    rota_timer_init(&lt_plus.t, lt_on_timer);
    CHECK(rota_timer_arm_in(&lt_wheel, &lt_in.t, LT_GAP_DELAY) == 0);
    CHECK(rota_timer_arm_at(&lt_wheel, &lt_plus.t,
                            rota_wheel_now(&lt_wheel) + LT_GAP_DELAY) == 0);
    CHECK(rota_timer_touch_at(&lt_wheel, &lt_touched.t,
                              rota_wheel_now(&lt_wheel) + LT_GAP_DELAY) == 0);
}

/* Arm lt_touched far away (10 s): the touch of lt_gap_arm() brings it in. */
static void lt_gap_arm_far(void)
{
    rota_timer_init(&lt_touched.t, lt_on_timer);
    lt_touched.due_ns = UINT64_MAX; /* not to fire before the touch */
    CHECK(rota_timer_arm_at(&lt_wheel, &lt_touched.t,
                            lt->deadline_in(10000 * LT_MS)) == 0);
}

static void lt_on_gap_over(int fd, void *arg)
{
    uint64_t expirations;
    (void)arg;
    CHECK(read(fd, &expirations, sizeof expirations) ==
          (ssize_t)sizeof expirations);
    lt->unwatch(fd);
    lt_gap_arm();
    lt_sync_if_needed();
}

static void lt_gap_report(const char *where)
{
    const struct lt_timer *x[] = {&lt_in, &lt_plus, &lt_touched};
    for (int i = 0; i < 3; i++) {
        uint64_t t0 = x[i]->due_ns - LT_GAP_DELAY * LT_MS;
        if (x[i]->fired_ns != 0)
            printf("%s: %s: %s fired %.2f ms after the call (delay %u ms)\n",
                   lt->name, where,
                   i == 0   ? "arm_in"
                   : i == 1 ? "arm_at(now + d)"
                            : "touch_at(now + d)",
                   (double)(x[i]->fired_ns - t0) / 1e6, LT_GAP_DELAY);
    }
}

static void lt_scenario_delay_after_idle(void)
{
    lt_init(LT_MS);
    if (lt_planted_no_source)
        CHECK(rota_wheel_set_time_source(&lt_wheel, NULL, NULL) == 0);
    lt_fired = 0;
    lt_max_late_ns = 0;
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (!CHECK(tfd >= 0))
        return;
    lt_gap_arm_far();
    lt->sync();
    struct itimerspec its = {{0, 0}, {0, (long)LT_IDLE_GAP_NS}};
    CHECK(timerfd_settime(tfd, 0, &its, NULL) == 0);
    lt->watch(tfd, lt_on_gap_over, NULL);
    lt->run(); /* idles, then the timerfd's callback arms */
    CHECK_CMPU(lt_fired, ==, 3);
    CHECK_CMPU(rota_wheel_count(&lt_wheel), ==, 0);
    lt_gap_report("after an idle loop, from I/O");
    close(tfd);

    /* Between two runs: the loop has ended, the program sleeps. */
    struct timespec gap = {0, (long)LT_IDLE_GAP_NS};
    nanosleep(&gap, NULL);
    lt_gap_arm_far();
    lt_gap_arm();
    if (lt->sync_before_run || lt->sync_before_rerun)
        lt->sync();
    lt->run();
    CHECK_CMPU(lt_fired, ==, 6);
    CHECK_CMPU(rota_wheel_count(&lt_wheel), ==, 0);
    lt_gap_report("outside the loop, after a sleep");
    lt->fini();

    /* Closed, the adapter has taken its source back: the wheel's time no
     * longer moves with the clock (and calls nothing of the adapter). */
    uint64_t closed_at = rota_wheel_now(&lt_wheel);
    struct timespec pause = {0, 5 * (long)LT_MS};
    nanosleep(&pause, NULL);
    CHECK_CMPU(rota_wheel_now(&lt_wheel), ==, closed_at);
}

/* ------------------------------------- scenario: a budget spreads a storm */

/* LT_STORM timers due together, a budget of LT_STORM_BUDGET callbacks per
 * wake-up: every timer fires, never early and within a tick + slack, and it
 * takes at least LT_STORM / LT_STORM_BUDGET wake-ups (without the budget a
 * wake-up or two run them all: the planted fault below). */
#define LT_STORM 40
#define LT_STORM_BUDGET 4

static bool lt_planted_no_budget;

static void lt_scenario_budget(void)
{
    lt_init(LT_MS);
    lt_fired = 0;
    lt_max_late_ns = 0;
    lt->set_budget(lt_planted_no_budget ? 0 : LT_STORM_BUDGET);
    for (int i = 0; i < LT_STORM; i++)
        lt_arm(&lt_many[i], 20 * LT_MS, LT_MS);
    lt->sync();
    lt->run();
    CHECK_CMPU(lt_fired, ==, LT_STORM);
    CHECK_CMPU(rota_wheel_count(&lt_wheel), ==, 0);
    CHECK_CMPU(lt_wakeups(), >=, LT_STORM / LT_STORM_BUDGET);
    printf("%s: budget %d: %d timers in %" PRIu64 " wake-ups\n", lt->name,
           LT_STORM_BUDGET, lt_fired, lt_wakeups());
    lt->set_budget(0);
    lt->fini();
}

/* ---------------------------------------------- the scenarios as tests */

/* Select `ops` for the next scenario (and whatever its flavour needs).
 * Returns why the loop cannot run here, or NULL. */
static const char *lt_use(const struct lt_ops *ops)
{
    const char *why = ops->unavailable != NULL ? ops->unavailable() : NULL;
    lt = ops;
    if (why == NULL && ops->select != NULL)
        ops->select();
    return why;
}

/* lt_use(), or skip the running test. */
#define LT_USE(ops)                                                            \
    do {                                                                       \
        const char *why_ = lt_use(ops);                                        \
        if (why_ != NULL)                                                      \
            SKIP(why_);                                                        \
    } while (0)

static void lt_sync_is_lazy(const struct lt_ops *ops)
{
    LT_USE(ops);
    if (!ops->counts_rearms)
        SKIP("this loop recomputes its timeout every turn: nothing to re-arm");
    lt_scenario_sync_rule();
}

/*
 * LT_TESTS(v, ops) defines the eight scenarios as tests named v_<scenario>
 * for the struct lt_ops `ops` (an object with static storage), and
 * LT_TEST_LIST(v) lists them for h_main(), so `test_loop_epoll
 * epoll_timerfd_idle` runs one scenario on one flavour.
 */
#define LT_TESTS(v, ops)                                                       \
    TEST(v##_sync_is_lazy)                                                     \
    {                                                                          \
        lt_sync_is_lazy(&(ops));                                               \
    }                                                                          \
    TEST(v##_timers_never_early)                                               \
    {                                                                          \
        LT_USE(&(ops));                                                        \
        lt_scenario_timers();                                                  \
    }                                                                          \
    TEST(v##_earlier_timer_from_io)                                            \
    {                                                                          \
        LT_USE(&(ops));                                                        \
        lt_scenario_earlier_from_io();                                         \
    }                                                                          \
    TEST(v##_zero_delay_rearm_lets_io_run)                                     \
    {                                                                          \
        LT_USE(&(ops));                                                        \
        lt_scenario_zero_delay();                                              \
    }                                                                          \
    TEST(v##_idle_kicks_on_loopback)                                           \
    {                                                                          \
        LT_USE(&(ops));                                                        \
        lt_scenario_idle_kicks();                                              \
    }                                                                          \
    TEST(v##_pending_timers_keep_the_loop_alive)                               \
    {                                                                          \
        lt_use(&(ops));                                                        \
        lt_scenario_keeps_loop_alive();                                        \
    }                                                                          \
    TEST(v##_delay_after_idle_never_early)                                     \
    {                                                                          \
        LT_USE(&(ops));                                                        \
        lt_scenario_delay_after_idle();                                        \
    }                                                                          \
    TEST(v##_budget_spreads_a_storm)                                           \
    {                                                                          \
        LT_USE(&(ops));                                                        \
        lt_scenario_budget();                                                  \
    }
#define LT_TEST_LIST(v)                                                        \
    H_TEST(v##_sync_is_lazy), H_TEST(v##_timers_never_early),                  \
        H_TEST(v##_earlier_timer_from_io),                                     \
        H_TEST(v##_zero_delay_rearm_lets_io_run),                              \
        H_TEST(v##_idle_kicks_on_loopback),                                    \
        H_TEST(v##_pending_timers_keep_the_loop_alive),                        \
        H_TEST(v##_delay_after_idle_never_early),                              \
        H_TEST(v##_budget_spreads_a_storm)

/*
 * LT_PLANTED_TESTS(v, ops) defines v_delay_after_idle_catches_a_wheel_
 * without_time_source and v_budget_check_catches_a_loop_without_budget:
 * the scenarios with a planted fault, each passing only if its checks
 * catch it (each loop test registers it
 * with CTest on its own, so a scenario that stopped checking shows).
 */
#define LT_PLANTED_TESTS(v, ops)                                               \
    TEST(v##_delay_after_idle_catches_a_wheel_without_time_source)             \
    {                                                                          \
        LT_USE(&(ops));                                                        \
        lt_planted_no_source = true;                                           \
        unsigned long mark = h_expect_begin();                                 \
        lt_scenario_delay_after_idle();                                        \
        CHECK(h_expect_end(mark) > 0);                                         \
        lt_planted_no_source = false;                                          \
    }                                                                          \
    TEST(v##_budget_check_catches_a_loop_without_budget)                       \
    {                                                                          \
        LT_USE(&(ops));                                                        \
        lt_planted_no_budget = true;                                           \
        unsigned long mark = h_expect_begin();                                 \
        lt_scenario_budget();                                                  \
        CHECK(h_expect_end(mark) > 0);                                         \
        lt_planted_no_budget = false;                                          \
    }
#define LT_PLANTED_TEST_LIST(v)                                                \
    H_TEST(v##_delay_after_idle_catches_a_wheel_without_time_source),          \
        H_TEST(v##_budget_check_catches_a_loop_without_budget)

/* main() of a loop test: seed the scenarios' delays, run the tests. */
static int lt_main(int argc, char **argv, const struct h_test *tests,
                   size_t count)
{
    lt_rng = h_seed();
    return h_main(argc, argv, tests, count);
}

#endif /* TEST_LOOP_COMMON_H */
