/* SPDX-License-Identifier: MIT */
/*
 * test_loop_ev.c - rota/ev.h on a real libev loop: the shared scenarios of
 * test_loop_common.h, with ev_io watching the descriptors.
 */
#define _GNU_SOURCE /* accept4, CLOCK_MONOTONIC under -std=c11 */
#include <rota/ev.h>

#include "test_loop_common.h"

#define MAX_FD 1024

struct watch {
    ev_io io;
    lt_io_fn *fn;
    void *arg;
};

static struct ev_loop *loop;
static struct rota_ev rw;
static struct watch *watches[MAX_FD];

static void v_init(struct rota_wheel *wheel, const struct rota_clock *clock)
{
    loop = ev_loop_new(EVFLAG_AUTO);
    CHECK(loop != NULL);
    CHECK(rota_ev_init(&rw, loop, wheel, clock) == 0);
}

static uint64_t v_deadline_in(uint64_t delay_ns)
{
    return rota_ev_deadline_in(&rw, delay_ns);
}

static void v_sync(void)
{
    CHECK(rota_ev_sync(&rw) >= 0);
}

static void on_io(struct ev_loop *l, ev_io *io, int revents)
{
    struct watch *w = rota_container_of(io, struct watch, io);
    (void)l;
    (void)revents;
    w->fn(io->fd, w->arg);
}

static void v_watch(int fd, lt_io_fn *fn, void *arg)
{
    struct watch *w = calloc(1, sizeof *w);
    CHECK(w != NULL && fd >= 0 && fd < MAX_FD);
    w->fn = fn;
    w->arg = arg;
    ev_io_init(&w->io, on_io, fd, EV_READ);
    ev_io_start(loop, &w->io);
    watches[fd] = w;
}

static void v_unwatch(int fd)
{
    struct watch *w = watches[fd];
    watches[fd] = NULL;
    ev_io_stop(loop, &w->io);
    free(w);
}

static void v_run(void)
{
    ev_run(loop, 0);
}

static void v_fini(void)
{
    rota_ev_close(&rw);
    ev_loop_destroy(loop);
    loop = NULL;
}

static void v_stats(struct rota_loop_stats *out)
{
    rota_ev_stats(&rw, out);
}

static void v_set_budget(size_t max_fires)
{
    rota_ev_set_budget(&rw, max_fires);
}

/* init binds an initialised wheel and refuses anything else; a wheel with
 * nothing pending keeps no loop alive; close twice is fine. */
TEST(libev_lifetime)
{
    static struct rota_wheel zeroed; /* never initialised */
    struct rota_wheel wheel;
    struct rota_clock clock, no_clock = {0};
    CHECK(rota_clock_init(&clock, ROTA_CLOCK_MONOTONIC, LT_MS) == 0);
    CHECK(rota_wheel_init(&wheel, rota_clock_now(&clock)) == 0);
    CHECK(rota_ev_init(NULL, NULL, &wheel, &clock) == ROTA_EINVAL);
    loop = ev_loop_new(EVFLAG_AUTO);
    CHECK(rota_ev_init(&rw, loop, NULL, &clock) == ROTA_EINVAL);
    CHECK(rota_ev_init(&rw, loop, &wheel, NULL) == ROTA_EINVAL);
    CHECK(rota_ev_init(&rw, loop, &zeroed, &clock) == ROTA_EINVAL);
    CHECK(rota_ev_init(&rw, loop, &wheel, &no_clock) == ROTA_EINVAL);
    CHECK(rota_ev_sync(&rw) == ROTA_EINVAL); /* never started */
    rota_ev_close(&rw);                      /* a no-op after a failure */
    CHECK(rota_ev_init(&rw, loop, &wheel, &clock) == 0);
    CHECK(rota_ev_sync(&rw) == 0);
    CHECK(ev_run(loop, 0) == 0); /* nothing keeps it alive */
    v_fini();
    rota_ev_close(&rw); /* twice is fine */
    CHECK(rota_ev_sync(&rw) == ROTA_EINVAL);
}

static const struct lt_ops ev_ops = {
    .name = "libev",
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
    .counts_rearms = true,
};

LT_TESTS(libev, ev_ops)
LT_PLANTED_TESTS(libev, ev_ops)

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(libev_lifetime),
        LT_TEST_LIST(libev),
        LT_PLANTED_TEST_LIST(libev),
    };
    return lt_main(argc, argv, tests, H_COUNT(tests));
}
