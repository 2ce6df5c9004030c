/* SPDX-License-Identifier: MIT */
/*
 * test_loop_uv.c - rota/uv.h on a real libuv loop: the shared scenarios of
 * test_loop_common.h (timers never early, earlier arms from I/O honoured,
 * delay-0 re-arms do not starve I/O, idle kicks on loopback, touches never
 * re-arm), with uv_poll_t watching the descriptors.
 */
#define _GNU_SOURCE /* uv.h needs pthread types under -std=c11 */
#include <rota/uv.h>

#include "test_loop_common.h"

#define MAX_FD 1024

struct watch {
    uv_poll_t h;
    lt_io_fn *fn;
    void *arg;
    int fd;
};

static uv_loop_t loop;
static struct rota_uv rw;

static struct rota_loop_stats stats_of(const struct rota_uv *x)
{
    struct rota_loop_stats st;
    rota_uv_stats(x, &st);
    return st;
}
static struct watch *watches[MAX_FD];

static void u_init(struct rota_wheel *wheel, const struct rota_clock *clock)
{
    CHECK(uv_loop_init(&loop) == 0);
    CHECK(rota_uv_init(&rw, &loop, wheel, clock) == 0);
}

static uint64_t u_deadline_in(uint64_t delay_ns)
{
    return rota_uv_deadline_in(&rw, delay_ns);
}

static void u_sync(void)
{
    CHECK(rota_uv_sync(&rw) >= 0);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct watch *w = h->data;
    (void)status;
    (void)events;
    w->fn(w->fd, w->arg);
}

static void u_watch(int fd, lt_io_fn *fn, void *arg)
{
    struct watch *w = calloc(1, sizeof *w);
    CHECK(w != NULL && fd >= 0 && fd < MAX_FD);
    w->fn = fn;
    w->arg = arg;
    w->fd = fd;
    CHECK(uv_poll_init(&loop, &w->h, fd) == 0);
    w->h.data = w;
    CHECK(uv_poll_start(&w->h, UV_READABLE, on_poll) == 0);
    watches[fd] = w;
}

static void free_watch(uv_handle_t *h)
{
    free(h->data);
}

static void u_unwatch(int fd)
{
    struct watch *w = watches[fd];
    watches[fd] = NULL;
    uv_poll_stop(&w->h); /* before the caller closes the descriptor */
    uv_close((uv_handle_t *)&w->h, free_watch);
}

static void u_run(void)
{
    uv_run(&loop, UV_RUN_DEFAULT);
}

static void u_fini(void)
{
    CHECK_EQ_INT(rota_uv_close(&rw), 2);
    uv_run(&loop, UV_RUN_DEFAULT); /* runs the close callbacks */
    CHECK_CMPU(stats_of(&rw).in_flight, ==, 0);
    CHECK(uv_loop_close(&loop) == 0);
}

static void u_stats(struct rota_loop_stats *out)
{
    rota_uv_stats(&rw, out);
}

static void u_set_budget(size_t max_fires)
{
    rota_uv_set_budget(&rw, max_fires);
}

/* init binds an initialised wheel and refuses anything else; a wheel with
 * nothing pending keeps no loop alive; close reports the two handles libuv
 * closes from the loop, and stats show them closed once it has run. */
TEST(libuv_lifetime)
{
    static struct rota_wheel zeroed; /* never initialised */
    struct rota_wheel wheel;
    struct rota_clock clock, no_clock = {0};
    CHECK(rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    CHECK(rota_wheel_init(&wheel, rota_clock_now(&clock)) == 0);
    CHECK(rota_uv_init(NULL, &loop, &wheel, &clock) == ROTA_EINVAL);
    CHECK(uv_loop_init(&loop) == 0);
    CHECK(rota_uv_init(&rw, &loop, NULL, &clock) == ROTA_EINVAL);
    CHECK(rota_uv_init(&rw, &loop, &wheel, NULL) == ROTA_EINVAL);
    CHECK(rota_uv_init(&rw, &loop, &zeroed, &clock) == ROTA_EINVAL);
    CHECK(rota_uv_init(&rw, &loop, &wheel, &no_clock) == ROTA_EINVAL);
    CHECK(rota_uv_sync(&rw) == ROTA_EINVAL); /* not bound */
    CHECK_EQ_INT(rota_uv_close(&rw), 0);     /* a no-op after a failure */
    CHECK(rota_uv_close(NULL) == ROTA_EINVAL);
    CHECK(rota_uv_init(&rw, &loop, &wheel, &clock) == 0);
    CHECK(rota_uv_sync(&rw) == 0);
    CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0); /* returns after one turn */
    CHECK(rota_uv_now(&rw) == uv_now(&loop));  /* 1 ms ticks */
    CHECK(rota_wheel_now(&wheel) >= rota_clock_now(&clock) - 1000);
    CHECK_EQ_INT(rota_uv_close(&rw), 2);
    CHECK_EQ_INT(rota_uv_close(&rw), 2); /* twice: the second does nothing */
    CHECK(rota_uv_sync(&rw) == ROTA_EINVAL);
    /* libuv closes handles from the loop */
    CHECK_CMPU(stats_of(&rw).in_flight, ==, 2);
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK_CMPU(stats_of(&rw).in_flight, ==, 0);
    CHECK_EQ_INT(rota_uv_close(&rw), 0);
    CHECK(uv_loop_close(&loop) == 0);
}

static const struct lt_ops uv_ops = {
    .name = "libuv",
    .init = u_init,
    .deadline_in = u_deadline_in,
    .sync = u_sync,
    .watch = u_watch,
    .unwatch = u_unwatch,
    .run = u_run,
    .fini = u_fini,
    .stats = u_stats,
    .set_budget = u_set_budget,
    .sync_in_callbacks = false,
    .sync_before_rerun = true,
    .counts_rearms = true,
};

LT_TESTS(libuv, uv_ops)
LT_PLANTED_TESTS(libuv, uv_ops)

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(libuv_lifetime),
        LT_TEST_LIST(libuv),
        LT_PLANTED_TEST_LIST(libuv),
    };
    return lt_main(argc, argv, tests, H_COUNT(tests));
}
