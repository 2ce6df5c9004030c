/* SPDX-License-Identifier: MIT */
/*
 * test_service_fork.c - rota/service.h across fork() (the header's FORK):
 * in the child every call that would use the parent's service returns
 * ROTA_EFORK, the copy checks out consistent, stop hands back exactly the
 * timers pending at the fork and runs none, destroy returns (a child that
 * hangs is killed and fails the test), and the child can create a service
 * of its own; the parent's service carries on as if nothing happened.
 * Forks are made while other threads arm and cancel as fast as they can
 * and while periodic callbacks run on workers, so that a fork lands in
 * the middle of operations; and from a callback.
 *
 * The child reports through its exit status: 0 when every check passed.
 */
#define _GNU_SOURCE
#include "test_service_common.h"

#include <errno.h>
#include <signal.h>
#include <sys/wait.h>

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* Wait for the child; kill it after `timeout_s` (it hung): returns its
 * wait status, or -1 if it had to be killed. */
static int reap(pid_t pid, int timeout_s)
{
    int status;
    uint64_t end = st_mono_ns() + (uint64_t)timeout_s * ST_S;
    while (st_mono_ns() < end) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            return status;
        if (got < 0 && errno != EINTR)
            return -1;
        st_sleep_ns(ST_MS);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    fprintf(stderr, "  child %d hung: killed\n", (int)pid);
    return -1;
}

/* The child's verdict: exit status 0 when no check failed since `mark`. */
static _Noreturn void child_exit(unsigned long mark)
{
    fflush(stderr);
    fflush(stdout);
    _exit(h_failed == mark ? 0 : 1);
}

static bool exited_with(int status, int code)
{
    return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == code;
}

/* ------------------------------------------------------- the callbacks */

static atomic_long periodic_runs;
static atomic_long oneshot_runs;

static void on_periodic(struct rota_service *svc,
                        const struct rota_service_event *ev)
{
    (void)svc;
    (void)ev;
    atomic_fetch_add(&periodic_runs, 1);
}

static void on_oneshot(struct rota_service *svc,
                       const struct rota_service_event *ev)
{
    (void)svc;
    (void)ev;
    atomic_fetch_add(&oneshot_runs, 1);
}

/* ------------------------------------------- producers during the fork */

struct load {
    struct rota_service *svc;
    atomic_bool stop;
    atomic_long ops;
};

static void *producer(void *arg)
{
    struct load *ld = arg;
    struct rota_service_handle h[64];
    uint64_t seed = (uint64_t)(uintptr_t)&h;
    while (!atomic_load(&ld->stop)) {
        /* Near timers (fire on workers), staged and far ones (the far
         * vector grows), all cancelled again: every path's locks. */
        for (int i = 0; i < 64; i++) {
            uint64_t delay = (h_rand(&seed) % 3 == 0) ? h_rand(&seed) % ST_MS
                                                      : 10 * ST_S + i * ST_MS;
            if (rota_service_arm_in(ld->svc, delay, on_oneshot, NULL, &h[i]) !=
                0)
                h[i] = (struct rota_service_handle){0, 0, 0};
        }
        for (int i = 0; i < 64; i++)
            rota_service_try_cancel(ld->svc, h[i]);
        atomic_fetch_add(&ld->ops, 128);
    }
    return NULL;
}

/* ------------------------------------------------------- the child side */

#define LONG_TIMERS 100

struct handback {
    int count;
    int ours;    /* handed back with an arg of ours */
    long argsum; /* sum of those args' values */
};

static long long_arg[LONG_TIMERS];

static void count_handback(struct rota_service *svc,
                           struct rota_service_handle timer, void *timer_arg,
                           void *stop_arg)
{
    (void)svc;
    (void)timer;
    struct handback *hb = stop_arg;
    hb->count++;
    long *a = timer_arg;
    if (a >= long_arg && a < long_arg + LONG_TIMERS) {
        hb->ours++;
        hb->argsum += *a;
    }
}

/* Everything a child may and may not do with the parent's service. */
static void child_side(struct rota_service *svc, unsigned workers,
                       struct rota_service_handle one, bool new_service)
{
    struct rota_service_handle h;
    struct rota_service_stats st;
    const char *why = NULL;

    long periodic_before = atomic_load(&periodic_runs);
    CHECK_EQ_INT(rota_service_arm_in(svc, ST_MS, on_oneshot, NULL, &h),
                 ROTA_EFORK);
    CHECK_EQ_INT(rota_service_arm_at(svc, 0, on_oneshot, NULL, &h), ROTA_EFORK);
    CHECK_EQ_INT(rota_service_arm_periodic_in(svc, ST_MS, ST_MS,
                                              ROTA_MISSED_SKIP, on_periodic,
                                              NULL, &h),
                 ROTA_EFORK);
    CHECK_EQ_INT(rota_service_arm_periodic_at(svc, 0, ST_MS, ROTA_MISSED_SKIP,
                                              on_periodic, NULL, &h),
                 ROTA_EFORK);
    CHECK_EQ_INT(rota_service_touch_in(svc, one, ST_S), ROTA_EFORK);
    CHECK_EQ_INT(rota_service_touch_at(svc, one, 0), ROTA_EFORK);
    CHECK_EQ_INT(rota_service_try_cancel(svc, one), ROTA_EFORK);
    CHECK_EQ_INT(rota_service_cancel_sync(svc, one), ROTA_EFORK);
    CHECK_EQ_INT(rota_service_sync(svc), ROTA_EFORK);
    CHECK_EQ_STR(rota_strerror(ROTA_EFORK),
                 "service belongs to the parent process (fork)");
    /* The copy is consistent, whatever the other threads were doing. */
    CHECK_EQ_INT(rota_service_check(svc, &why), 0);
    if (why != NULL)
        fprintf(stderr, "  child: %s\n", why);
    CHECK(rota_service_now(svc) > 0);
    rota_service_stats(svc, &st);
    CHECK_CMPU(st.pending, >=, LONG_TIMERS + 1);

    /* Stop hands back what was pending at the fork, running nothing. */
    struct handback hb = {0, 0, 0};
    int handed = rota_service_stop(svc, count_handback, &hb);
    CHECK_EQ_INT(handed, hb.count);
    /* The counters are exact only at a quiet moment, and a worker may have
     * been between a fire's start and its count: within the threads. */
    CHECK_CMPU((uint64_t)hb.count, <=, st.pending);
    CHECK_CMPU((uint64_t)hb.count + 1 + workers, >=, st.pending);
    CHECK_EQ_INT(hb.ours, LONG_TIMERS); /* each long timer, once */
    CHECK_EQ_INT(hb.argsum, LONG_TIMERS * (LONG_TIMERS - 1) / 2);
    CHECK_EQ_INT(rota_service_stop(svc, count_handback, &hb), 0);
    CHECK_EQ_INT(rota_service_check(svc, &why), 0);
    CHECK_EQ_INT(rota_service_arm_in(svc, ST_MS, on_oneshot, NULL, &h),
                 ROTA_EFORK);
    st_sleep_ns(20 * ST_MS);
    CHECK_EQ_INT(atomic_load(&periodic_runs), periodic_before);
    CHECK_EQ_INT(rota_service_destroy(svc), 0);

    /* A service of the child's own works. */
    if (new_service) {
        struct rota_service *mine;
        if (CHECK_EQ_INT(rota_service_create(&mine, NULL), 0)) {
            long before = atomic_load(&oneshot_runs);
            CHECK_EQ_INT(
                rota_service_arm_in(mine, ST_MS, on_oneshot, NULL, NULL), 0);
            ST_WAIT_FOR(atomic_load(&oneshot_runs) > before, 10 * ST_S);
            CHECK(atomic_load(&oneshot_runs) > before);
            CHECK_EQ_INT(rota_service_destroy(mine), 0);
        }
    }
}

/* ------------------------------------------------------------ the tests */

/* The parent's side: a service with long timers, a periodic timer on
 * workers and producers; `forks` children, each checking its copy. */
static void fork_under_load(unsigned workers, int forks, bool new_service)
{
    struct rota_service_config cfg = {0};
    struct rota_service *svc;
    struct rota_service_handle longs[LONG_TIMERS], tick;
    struct load ld;
    pthread_t prod[2];

    cfg.workers = workers;
    cfg.shards = 4;
    if (!CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0))
        return;
    for (int i = 0; i < LONG_TIMERS; i++) {
        long_arg[i] = i;
        CHECK_EQ_INT(rota_service_arm_in(svc, 3600 * ST_S + (uint64_t)i * ST_S,
                                         on_oneshot, &long_arg[i], &longs[i]),
                     0);
    }
    CHECK_EQ_INT(rota_service_arm_periodic_in(svc, 0, 200 * ST_US,
                                              ROTA_MISSED_SKIP, on_periodic,
                                              NULL, &tick),
                 0);
    ld.svc = svc;
    atomic_init(&ld.stop, false);
    atomic_init(&ld.ops, 0);
    for (int i = 0; i < 2; i++)
        pthread_create(&prod[i], NULL, producer, &ld);
    ST_WAIT_FOR(atomic_load(&ld.ops) > 1000, 10 * ST_S);

    int ok = 0;
    for (int k = 0; k < forks; k++) {
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        if (!CHECK(pid >= 0))
            break;
        if (pid == 0) {
            unsigned long mark = h_failed;
            child_side(svc, workers, longs[0], new_service && k == 0);
            child_exit(mark);
        }
        int status = reap(pid, 60);
        if (!CHECK(exited_with(status, 0)))
            break;
        ok++;
        st_sleep_ns((uint64_t)(k % 5) * 300 * ST_US);
    }
    CHECK_EQ_INT(ok, forks);

    /* The parent carries on: producers are still served, timers fire,
     * the long timers are all still its own to cancel. */
    long runs = atomic_load(&periodic_runs);
    ST_WAIT_FOR(atomic_load(&periodic_runs) > runs + 5, 10 * ST_S);
    CHECK(atomic_load(&periodic_runs) > runs + 5);
    atomic_store(&ld.stop, true);
    for (int i = 0; i < 2; i++)
        pthread_join(prod[i], NULL);
    CHECK_EQ_INT(rota_service_sync(svc), 0);
    const char *why = NULL;
    CHECK_EQ_INT(rota_service_check(svc, &why), 0);
    for (int i = 0; i < LONG_TIMERS; i++)
        CHECK_EQ_INT(rota_service_try_cancel(svc, longs[i]),
                     ROTA_SERVICE_CANCELLED);
    CHECK_EQ_INT(rota_service_cancel_sync(svc, tick), ROTA_SERVICE_CANCELLED);
    CHECK_EQ_INT(rota_service_sync(svc), 0);
    struct rota_service_stats st;
    rota_service_stats(svc, &st);
    CHECK_EQ_U64(st.pending, 0);
    CHECK_EQ_U64(st.armed, st.expired + st.cancelled);
    CHECK_EQ_INT(rota_service_destroy(svc), 0);
}

TEST(fork_child_gets_a_frozen_copy_without_workers)
{
    fork_under_load(0, h_small() ? 3 : 20, false);
}

TEST(fork_child_gets_a_frozen_copy_with_workers)
{
    fork_under_load(2, h_small() ? 3 : 20, false);
}

/* The child may create a service of its own.  TSan (die_after_fork) ends a
 * child of a threaded process that starts a thread, as POSIX allows. */
TEST(fork_child_creates_its_own_service)
{
#ifdef UNDER_TSAN
    SKIP("ThreadSanitizer cannot start threads in the child of a "
         "threaded process (it dies: die_after_fork)");
#else
    fork_under_load(1, 1, true);
#endif
}

/* A callback that forks: the child's only thread is a copy of the
 * service's; it finds the copy frozen and, returning, ends the child with
 * status 127.  The parent's service goes on. */
static int fork_pipe[2];
static atomic_int fork_pid;

static void on_fork(struct rota_service *svc,
                    const struct rota_service_event *ev)
{
    (void)ev;
    pid_t pid = fork();
    if (pid == 0) {
        int rc[2];
        rc[0] = rota_service_arm_in(svc, ST_MS, on_oneshot, NULL, NULL);
        rc[1] = rota_service_destroy(svc); /* from its own callback */
        if (write(fork_pipe[1], rc, sizeof rc) != (ssize_t)sizeof rc)
            _exit(3);
        return; /* the library ends the child */
    }
    atomic_store(&fork_pid, pid);
}

static void fork_in_callback(unsigned workers)
{
    struct rota_service_config cfg = {0};
    struct rota_service *svc;

    cfg.workers = workers;
    if (!CHECK_EQ_INT(pipe(fork_pipe), 0))
        return;
    if (!CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0))
        return;
    atomic_store(&fork_pid, 0);
    long before = atomic_load(&periodic_runs);
    CHECK_EQ_INT(rota_service_arm_periodic_in(svc, 0, ST_MS, ROTA_MISSED_SKIP,
                                              on_periodic, NULL, NULL),
                 0);
    CHECK_EQ_INT(rota_service_arm_in(svc, ST_MS, on_fork, NULL, NULL), 0);
    ST_WAIT_FOR(atomic_load(&fork_pid) != 0, 10 * ST_S);
    pid_t pid = atomic_load(&fork_pid);
    if (CHECK(pid > 0)) {
        int rc[2] = {0, 0};
        CHECK_EQ_INT(read(fork_pipe[0], rc, sizeof rc), (int)sizeof rc);
        CHECK_EQ_INT(rc[0], ROTA_EFORK);
        CHECK_EQ_INT(rc[1], ROTA_EDEADLK);
        CHECK(exited_with(reap(pid, 60), 127));
    }
    ST_WAIT_FOR(atomic_load(&periodic_runs) > before + 5, 10 * ST_S);
    CHECK(atomic_load(&periodic_runs) > before + 5);
    CHECK_EQ_INT(rota_service_sync(svc), 0);
    const char *why = NULL;
    CHECK_EQ_INT(rota_service_check(svc, &why), 0);
    CHECK_EQ_INT(rota_service_destroy(svc), 0);
    close(fork_pipe[0]);
    close(fork_pipe[1]);
}

TEST(fork_in_a_callback_on_the_service_thread)
{
    fork_in_callback(0);
}

TEST(fork_in_a_callback_on_a_worker)
{
    fork_in_callback(2);
}

/* The manual clock the parent's service sleeps on can be destroyed in the
 * child: its condition variable has a waiter there that does not exist. */
TEST(fork_child_destroys_a_manual_clock_in_use)
{
    struct rota_manual_clock *mc;
    struct rota_service_clock table;
    struct rota_service_config cfg = {0};
    struct rota_service *svc;

    CHECK_EQ_INT(rota_manual_clock_create(&mc, 1000), 0);
    rota_manual_clock_bind(mc, &table);
    cfg.clock = &table;
    if (!CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0))
        return;
    CHECK_EQ_INT(rota_service_arm_in(svc, ST_S, on_oneshot, NULL, NULL), 0);
    ST_WAIT_FOR(rota_manual_clock_sleeping(mc, NULL), 10 * ST_S);
    CHECK(rota_manual_clock_sleeping(mc, NULL));
    pid_t pid = fork();
    if (pid == 0) {
        unsigned long mark = h_failed;
        CHECK_EQ_INT(rota_service_stop(svc, NULL, NULL), 1);
        CHECK_EQ_INT(rota_service_destroy(svc), 0);
        rota_manual_clock_destroy(mc);
        child_exit(mark);
    }
    if (CHECK(pid > 0))
        CHECK(exited_with(reap(pid, 60), 0));
    long before = atomic_load(&oneshot_runs);
    rota_manual_clock_advance(mc, ST_S);
    CHECK_EQ_INT(rota_service_sync(svc), 0);
    CHECK_EQ_INT(atomic_load(&oneshot_runs), before + 1);
    CHECK_EQ_INT(rota_service_destroy(svc), 0);
    rota_manual_clock_destroy(mc);
}

/* The planted faults: a child that hangs, and one whose check fails, must
 * each fail the check the tests above make on every child. */
TEST(fork_catches_a_hung_or_failing_child)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0)
        for (;;)
            pause();
    if (!CHECK(pid > 0))
        return;
    unsigned long mark = h_expect_begin();
    CHECK(exited_with(reap(pid, 1), 0));
    CHECK(h_expect_end(mark) > 0);

    pid = fork();
    if (pid == 0) {
        unsigned long child_mark = h_failed;
        CHECK_EQ_INT(ROTA_EFORK, 0); /* a check that fails in the child */
        child_exit(child_mark);
    }
    if (!CHECK(pid > 0))
        return;
    mark = h_expect_begin();
    CHECK(exited_with(reap(pid, 60), 0));
    CHECK(h_expect_end(mark) > 0);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(fork_child_gets_a_frozen_copy_without_workers),
        H_TEST(fork_child_gets_a_frozen_copy_with_workers),
        H_TEST(fork_child_creates_its_own_service),
        H_TEST(fork_in_a_callback_on_the_service_thread),
        H_TEST(fork_in_a_callback_on_a_worker),
        H_TEST(fork_child_destroys_a_manual_clock_in_use),
        H_TEST(fork_catches_a_hung_or_failing_child),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
