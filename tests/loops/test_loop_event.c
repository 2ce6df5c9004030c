/* SPDX-License-Identifier: MIT */
/*
 * test_loop_event.c - rota/event.h on a real libevent event_base: the shared
 * scenarios of test_loop_common.h, with persistent read events watching the
 * descriptors.  libevent 2.1 has no prepare hook, so arms made in I/O
 * callbacks call rota_event_sync() (sync_in_callbacks).  Run twice: with a
 * default event_base and with EVENT_BASE_FLAG_PRECISE_TIMER.
 */
#define _GNU_SOURCE /* accept4, CLOCK_MONOTONIC under -std=c11 */
#include <rota/event.h>

#include "test_loop_common.h"

#define MAX_FD 1024

struct watch {
    struct event *ev;
    lt_io_fn *fn;
    void *arg;
};

static struct event_base *base;
static bool precise; /* EVENT_BASE_FLAG_PRECISE_TIMER */
static struct rota_event rw;
static struct watch watches[MAX_FD];

static void b_init(struct rota_wheel *wheel, const struct rota_clock *clock)
{
    struct event_config *cfg = event_config_new();
    CHECK(cfg != NULL);
    if (precise)
        event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    CHECK(base != NULL);
    CHECK(rota_event_init(&rw, base, wheel, clock) == 0);
}

static uint64_t b_deadline_in(uint64_t delay_ns)
{
    return rota_event_deadline_in(&rw, delay_ns);
}

static void b_sync(void)
{
    CHECK(rota_event_sync(&rw) >= 0);
}

static void on_read(evutil_socket_t fd, short what, void *arg)
{
    struct watch *w = arg;
    (void)what;
    w->fn((int)fd, w->arg);
}

static void b_watch(int fd, lt_io_fn *fn, void *arg)
{
    CHECK(fd >= 0 && fd < MAX_FD);
    struct watch *w = &watches[fd];
    w->fn = fn;
    w->arg = arg;
    w->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_read, w);
    CHECK(w->ev != NULL);
    CHECK(event_add(w->ev, NULL) == 0);
}

static void b_unwatch(int fd)
{
    event_free(watches[fd].ev); /* deletes it; fine from its own callback */
    watches[fd].ev = NULL;
}

static void b_run(void)
{
    CHECK(event_base_dispatch(base) >= 0);
}

static void b_fini(void)
{
    rota_event_close(&rw);
    event_base_free(base);
    base = NULL;
}

static void b_stats(struct rota_loop_stats *out)
{
    rota_event_stats(&rw, out);
}

static void b_set_budget(size_t max_fires)
{
    rota_event_set_budget(&rw, max_fires);
}

/* init binds an initialised wheel and refuses anything else; a wheel with
 * nothing pending keeps no loop alive; close twice is fine. */
TEST(libevent_lifetime)
{
    static struct rota_wheel zeroed; /* never initialised */
    struct rota_wheel wheel;
    struct rota_clock clock, no_clock = {0};
    CHECK(rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    CHECK(rota_wheel_init(&wheel, rota_clock_now(&clock)) == 0);
    CHECK(rota_event_init(NULL, NULL, &wheel, &clock) == ROTA_EINVAL);
    base = event_base_new();
    CHECK(rota_event_init(&rw, base, NULL, &clock) == ROTA_EINVAL);
    CHECK(rota_event_init(&rw, base, &wheel, NULL) == ROTA_EINVAL);
    CHECK(rota_event_init(&rw, base, &zeroed, &clock) == ROTA_EINVAL);
    CHECK(rota_event_init(&rw, base, &wheel, &no_clock) == ROTA_EINVAL);
    CHECK(rota_event_sync(&rw) == ROTA_EINVAL); /* no evtimer */
    rota_event_close(&rw);                      /* a no-op after a failure */
    CHECK(rota_event_init(&rw, base, &wheel, &clock) == 0);
    CHECK(rota_event_sync(&rw) == 0);
    CHECK(event_base_dispatch(base) == 1); /* no events: returns 1 */
    b_fini();
    rota_event_close(&rw); /* twice is fine */
}

/* libevent's default clock is CLOCK_MONOTONIC_COARSE (a few ms behind),
 * the precise flag makes it CLOCK_MONOTONIC: both must work. */
static void select_coarse(void)
{
    precise = false;
}

static void select_precise(void)
{
    precise = true;
}

#define EVENT_OPS                                                              \
    .init = b_init, .deadline_in = b_deadline_in, .sync = b_sync,              \
    .watch = b_watch, .unwatch = b_unwatch, .run = b_run, .fini = b_fini,      \
    .stats = b_stats, .set_budget = b_set_budget, .sync_in_callbacks = true,   \
    .sync_before_run = true, .counts_rearms = true

static const struct lt_ops coarse_ops = {
    .name = "libevent", .select = select_coarse, EVENT_OPS};
static const struct lt_ops precise_ops = {
    .name = "libevent-precise", .select = select_precise, EVENT_OPS};

LT_TESTS(libevent, coarse_ops)
LT_PLANTED_TESTS(libevent, coarse_ops)
LT_TESTS(libevent_precise, precise_ops)

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(libevent_lifetime),
        LT_TEST_LIST(libevent),
        LT_PLANTED_TEST_LIST(libevent),
        LT_TEST_LIST(libevent_precise),
    };
    return lt_main(argc, argv, tests, H_COUNT(tests));
}
