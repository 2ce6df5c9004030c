/* SPDX-License-Identifier: MIT */
/*
 * test_clock_boot.c - ROTA_CLOCK_BOOTTIME is really CLOCK_BOOTTIME, in
 * rota/clock.h, in rota/epoll.h's timerfd and in rota/service.h's default
 * clock.
 *
 * A machine that never suspended has CLOCK_BOOTTIME == CLOCK_MONOTONIC, so
 * comparing readings proves nothing by itself.  This program defines its
 * own clock_gettime() and timerfd_create(), which the library's calls
 * reach instead of libc's (an executable's definition comes first in the
 * symbol lookup; the sanitizers' interceptors are weak).  They count the
 * calls per clock and go to the kernel with syscall(), and can add an
 * hour to every CLOCK_BOOTTIME reading: a simulated suspend, so that a
 * reading taken from the wrong clock is an hour off.  The timerfd's clock
 * is also read back from the kernel (/proc/self/fdinfo, "clockid:").
 *
 * The planted faults (`*_catches_*`, each also its own CTest test) turn
 * every CLOCK_BOOTTIME the library asks for into CLOCK_MONOTONIC, which is
 * what a library that ignored the source would do, and run the same
 * checks: they must fail.
 */
#define _GNU_SOURCE
#include <rota/clock.h>
#include <rota/epoll.h>
#include <rota/service.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define SEC 1000000000ull
#define SUSPEND (3600 * SEC) /* the simulated suspend */
#define IDS 16

static atomic_int fault;          /* planted: BOOTTIME becomes MONOTONIC */
static _Atomic uint64_t boot_add; /* added to BOOTTIME readings */
static _Atomic unsigned long reads[IDS], created[IDS];

static void count(_Atomic unsigned long *per_id, clockid_t id)
{
    if ((unsigned)id < IDS)
        atomic_fetch_add(&per_id[id], 1);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (id == CLOCK_BOOTTIME && atomic_load(&fault))
        id = CLOCK_MONOTONIC;
    count(reads, id);
    if (syscall(SYS_clock_gettime, id, ts) != 0)
        return -1;
    uint64_t add = atomic_load(&boot_add);
    if (id == CLOCK_BOOTTIME && add != 0) {
        uint64_t ns = (uint64_t)ts->tv_sec * SEC + (uint64_t)ts->tv_nsec + add;
        ts->tv_sec = (time_t)(ns / SEC);
        ts->tv_nsec = (long)(ns % SEC);
    }
    return 0;
}

int timerfd_create(int id, int flags)
{
    if (id == CLOCK_BOOTTIME && atomic_load(&fault))
        id = CLOCK_MONOTONIC;
    count(created, id);
    return (int)syscall(SYS_timerfd_create, id, flags);
}

/* The truth, past the interposer and its fault. */
static uint64_t true_ns(clockid_t id)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, id, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
    return id == CLOCK_BOOTTIME ? ns + atomic_load(&boot_add) : ns;
}

/* The clockid the kernel reports for a timerfd, or -1 if it does not. */
static int fd_clockid(int fd)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return -1;
    ssize_t n = read(f, buf, sizeof buf - 1);
    close(f);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *at = strstr(buf, "clockid:");
    return at == NULL ? -1 : atoi(at + strlen("clockid:"));
}

/* A reading `got` taken between the boottime readings b0 and b1 is
 * boottime's, and an hour ahead of the monotonic clock read after it. */
static bool check_boottime_reading(uint64_t b0, uint64_t got, uint64_t b1,
                                   uint64_t mono_after)
{
    return CHECK_CMPU(b0, <=, got) && CHECK_CMPU(got, <=, b1) &&
           CHECK_CMPU(got, >, mono_after + SUSPEND / 2);
}

/* ------------------------------------------------------------ the clock */

static void clock_case(void)
{
    struct rota_clock c;

    atomic_store(&boot_add, SUSPEND);
    unsigned long boot0 = atomic_load(&reads[CLOCK_BOOTTIME]);
    unsigned long mono0 = atomic_load(&reads[CLOCK_MONOTONIC]);
    if (!CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_BOOTTIME, 1000), 0))
        return;
    for (int i = 0; i < 100; i++) {
        uint64_t b0 = true_ns(CLOCK_BOOTTIME);
        uint64_t got = rota_clock_now_ns(&c);
        uint64_t b1 = true_ns(CLOCK_BOOTTIME);
        uint64_t mono = true_ns(CLOCK_MONOTONIC);
        uint64_t ticks = rota_clock_now(&c);
        if (!check_boottime_reading(b0, got, b1, mono) ||
            !CHECK_CMPU(ticks, >=, got / 1000) ||
            !CHECK_CMPU(ticks, <=, true_ns(CLOCK_BOOTTIME) / 1000)) {
            for (i++; i < 100; i++) /* keep the count of reads below */
                rota_clock_now_ns(&c), rota_clock_now(&c);
        }
    }
    /* 1 at init, 2 per round: every reading, and none of another clock. */
    CHECK_EQ_U64(atomic_load(&reads[CLOCK_BOOTTIME]) - boot0, 201);
    CHECK_EQ_U64(atomic_load(&reads[CLOCK_MONOTONIC]) - mono0, 0);
    atomic_store(&boot_add, 0);
}

TEST(boottime_clock_reads_clock_boottime)
{
    clock_case();
}

TEST(boottime_catches_a_monotonic_clock)
{
    atomic_store(&fault, 1);
    unsigned long mark = h_expect_begin();
    clock_case();
    CHECK(h_expect_end(mark) > 0);
    atomic_store(&fault, 0);
}

/* ------------------------------------------------- the epoll timerfd */

static void epoll_case(void)
{
    struct rota_clock c;
    struct rota_wheel w;
    struct rota_epoll et;
    struct rota_timer t;

    if (!CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_BOOTTIME, 1000000), 0))
        return;
    rota_wheel_init(&w, rota_clock_now(&c));
    unsigned long boot0 = atomic_load(&created[CLOCK_BOOTTIME]);
    unsigned long mono0 = atomic_load(&created[CLOCK_MONOTONIC]);
    if (!CHECK_EQ_INT(rota_epoll_init(&et, &w, &c, ROTA_EPOLL_TIMERFD), 0))
        return;
    CHECK_EQ_U64(atomic_load(&created[CLOCK_BOOTTIME]) - boot0, 1);
    CHECK_EQ_U64(atomic_load(&created[CLOCK_MONOTONIC]) - mono0, 0);
    int kernel_id = fd_clockid(rota_epoll_fd(&et));
    if (kernel_id >= 0) /* the line exists since Linux 3.17 */
        CHECK_EQ_INT(kernel_id, CLOCK_BOOTTIME);
    else
        printf("  (this kernel's fdinfo shows no clockid)\n");

    /* It works: a timer 20 ms ahead wakes the loop, never early. */
    rota_timer_init(&t, NULL);
    uint64_t deadline = rota_clock_deadline_after(&c, 20000000);
    CHECK_EQ_INT(rota_timer_arm_at(&w, &t, deadline), 0);
    int ms;
    CHECK_EQ_INT(rota_epoll_wait_ms(&et, &ms), 0);
    CHECK_EQ_INT(ms, -1);
    struct pollfd p = {rota_epoll_fd(&et), POLLIN, 0};
    int fired = 0;
    for (int i = 0; i < 100 && fired == 0; i++) {
        if (poll(&p, 1, 100) > 0)
            fired = rota_epoll_dispatch(&et);
    }
    CHECK_EQ_INT(fired, 1);
    CHECK_CMPU(true_ns(CLOCK_BOOTTIME), >=, deadline * 1000000);
    rota_epoll_close(&et);

    /* A monotonic clock keeps its monotonic timerfd. */
    CHECK_EQ_INT(rota_clock_init(&c, ROTA_CLOCK_MONOTONIC, 1000000), 0);
    CHECK_EQ_INT(rota_epoll_init(&et, &w, &c, ROTA_EPOLL_TIMERFD), 0);
    if (kernel_id >= 0)
        CHECK_EQ_INT(fd_clockid(rota_epoll_fd(&et)), CLOCK_MONOTONIC);
    rota_epoll_close(&et);
}

TEST(boottime_epoll_timerfd_is_clock_boottime)
{
    epoll_case();
}

TEST(boottime_catches_a_monotonic_timerfd)
{
    atomic_store(&fault, 1);
    unsigned long mark = h_expect_begin();
    epoll_case();
    CHECK(h_expect_end(mark) > 0);
    atomic_store(&fault, 0);
}

/* ----------------------------------------------------------- the service */

static atomic_int svc_fired;
static _Atomic uint64_t svc_fired_at;

static void on_fire(struct rota_service *svc,
                    const struct rota_service_event *ev)
{
    (void)svc;
    (void)ev;
    atomic_store(&svc_fired_at, true_ns(CLOCK_BOOTTIME));
    atomic_store(&svc_fired, 1);
}

static void service_case(void)
{
    struct rota_service_config cfg = {0};
    struct rota_service *svc;

    cfg.clock_source = ROTA_CLOCK_BOOTTIME;
    cfg.shards = 1;
    /* Its time is boottime's: an hour ahead of monotonic here. */
    atomic_store(&boot_add, SUSPEND);
    unsigned long boot0 = atomic_load(&created[CLOCK_BOOTTIME]);
    if (!CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0))
        return;
    /* The service thread sleeps on a boottime timerfd. */
    CHECK_EQ_U64(atomic_load(&created[CLOCK_BOOTTIME]) - boot0, 1);
    for (int i = 0; i < 100; i++) {
        uint64_t b0 = true_ns(CLOCK_BOOTTIME);
        uint64_t got = rota_service_now(svc);
        uint64_t b1 = true_ns(CLOCK_BOOTTIME);
        if (!check_boottime_reading(b0, got, b1, true_ns(CLOCK_MONOTONIC)))
            break;
    }
    rota_service_destroy(svc);
    atomic_store(&boot_add, 0);

    /* And it sleeps until a deadline on that clock and wakes on time. */
    if (!CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0))
        return;
    atomic_store(&svc_fired, 0);
    uint64_t deadline = rota_service_now(svc) + 20000000;
    CHECK_EQ_INT(rota_service_arm_at(svc, deadline, on_fire, NULL, NULL), 0);
    for (int i = 0; i < 500 && !atomic_load(&svc_fired); i++)
        usleep(10000);
    CHECK(atomic_load(&svc_fired));
    CHECK_CMPU(atomic_load(&svc_fired_at), >=, deadline);
    rota_service_destroy(svc);
}

TEST(boottime_service_clock_is_clock_boottime)
{
    service_case();
}

TEST(boottime_catches_a_monotonic_service_clock)
{
    atomic_store(&fault, 1);
    unsigned long mark = h_expect_begin();
    service_case();
    CHECK(h_expect_end(mark) > 0);
    atomic_store(&fault, 0);
}

TEST(boottime_service_config_errors)
{
    struct rota_service_config cfg = {0};
    struct rota_service *svc = NULL;
    struct rota_manual_clock *mc;
    struct rota_service_clock table;

    /* The coarse clock would make the service thread spin. */
    cfg.clock_source = ROTA_CLOCK_MONOTONIC_COARSE;
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), ROTA_EINVAL);
    cfg.clock_source = (enum rota_clock_source)3;
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), ROTA_EINVAL);
    /* A clock of one's own and a system clock: which one? */
    CHECK_EQ_INT(rota_manual_clock_create(&mc, 0), 0);
    rota_manual_clock_bind(mc, &table);
    cfg.clock = &table;
    cfg.clock_source = ROTA_CLOCK_BOOTTIME;
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), ROTA_EINVAL);
    CHECK(svc == NULL);
    cfg.clock_source = ROTA_CLOCK_MONOTONIC;
    CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0);
    rota_service_destroy(svc);
    rota_manual_clock_destroy(mc);
    CHECK_EQ_STR(rota_strerror(ROTA_ENOTSUP), "not supported on this system");
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(boottime_clock_reads_clock_boottime),
        H_TEST(boottime_catches_a_monotonic_clock),
        H_TEST(boottime_epoll_timerfd_is_clock_boottime),
        H_TEST(boottime_catches_a_monotonic_timerfd),
        H_TEST(boottime_service_clock_is_clock_boottime),
        H_TEST(boottime_catches_a_monotonic_service_clock),
        H_TEST(boottime_service_config_errors),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
