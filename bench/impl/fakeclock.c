/* SPDX-License-Identifier: MIT */
/*
 * fakeclock.c - the simulated clock, as the real peer libraries see it.
 *
 * libuv, libev and libevent read time only through clock_gettime() (they
 * call it through the PLT of their Debian shared objects; checked with
 * `nm -D`), and none of them lets a caller inject time through its API:
 * uv_update_time(), ev_now_update() and libevent's time cache all re-read
 * the system clock.  The benchmark cannot sleep for an hour of simulated
 * time, so this file interposes clock_gettime(): the executable defines the
 * symbol, the dynamic linker binds the libraries' references to it, and
 * while the fake clock is enabled every clock id reads the simulated tick
 * (1 tick = 1 ms).  The libraries' code runs unmodified; they simply live
 * in simulated time.  Our own measurements call the real clock_gettime()
 * (found with dlsym(RTLD_NEXT)), so timing is unaffected.
 *
 * A loop iteration of libev and libevent also calls epoll_wait() with a
 * zero timeout (non-blocking run).  The benchmark registers no file
 * descriptor, so the kernel's answer is known: 0 events.  While the fake
 * clock is enabled, epoll_wait()/epoll_pwait() with timeout 0 return 0
 * without entering the kernel, so the figures are the libraries' own
 * user-space cost of timers and loop bookkeeping, not a syscall (~0.3-1 us
 * each) that would swamp them at small N.  The number of calls elided is
 * reported in meta (peers_epoll_calls_elided).  libuv makes no such call:
 * uv__io_poll() returns at once when no descriptor is watched.
 *
 * sd-event keeps a timerfd per clock and re-arms it (timerfd_settime,
 * absolute) whenever its earliest time source may have moved.  In simulated
 * time that would arm a kernel timer at a simulated instant, which means
 * nothing (nothing ever waits on it: every wait has a zero timeout), so
 * while the fake clock is enabled timerfd_settime() succeeds without
 * entering the kernel, for the same reason as above; the count is reported
 * in meta (peers_timerfd_settime_elided).  No other implementation of the
 * benchmark uses a timerfd.
 */
#define _GNU_SOURCE
#include "bench.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>

typedef int clock_fn(clockid_t, struct timespec *);
typedef int epoll_wait_fn(int, struct epoll_event *, int, int);
typedef int epoll_pwait_fn(int, struct epoll_event *, int, int,
                           const sigset_t *);
typedef int timerfd_settime_fn(int, int, const struct itimerspec *,
                               struct itimerspec *);

static bool fake_on;
static uint64_t fake_ms;
static uint64_t elided;
static uint64_t settime_elided;

/* The next definition of `name` (libc's).  ISO C has no conversion from
 * void * to a function pointer; POSIX guarantees the representation, so
 * copy the bytes. */
static void next_symbol(const char *name, void *fn, size_t size)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (!p) {
        fprintf(stderr, "rota_bench: dlsym(%s) failed\n", name);
        abort();
    }
    memcpy(fn, &p, size);
}

static clock_fn *real_clock(void)
{
    static clock_fn *fn;
    if (!fn)
        next_symbol("clock_gettime", &fn, sizeof fn);
    return fn;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (fake_on) {
        ts->tv_sec = (time_t)(fake_ms / 1000);
        ts->tv_nsec = (long)(fake_ms % 1000) * 1000000L;
        return 0;
    }
    return real_clock()(id, ts);
}

int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
    static epoll_wait_fn *real;
    if (fake_on && timeout == 0) {
        elided++;
        return 0;
    }
    if (!real)
        next_symbol("epoll_wait", &real, sizeof real);
    return real(epfd, events, maxevents, timeout);
}

int epoll_pwait(int epfd, struct epoll_event *events, int maxevents,
                int timeout, const sigset_t *sigmask)
{
    static epoll_pwait_fn *real;
    if (fake_on && timeout == 0) {
        elided++;
        return 0;
    }
    if (!real)
        next_symbol("epoll_pwait", &real, sizeof real);
    return real(epfd, events, maxevents, timeout, sigmask);
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value,
                    struct itimerspec *old_value)
{
    static timerfd_settime_fn *real;
    if (fake_on) {
        settime_elided++;
        if (old_value)
            memset(old_value, 0, sizeof *old_value);
        return 0;
    }
    if (!real)
        next_symbol("timerfd_settime", &real, sizeof real);
    return real(fd, flags, new_value, old_value);
}

void bench_fakeclock_enable(bool on)
{
    fake_on = on;
}

void bench_fakeclock_set(uint64_t ms)
{
    fake_ms = ms;
}

uint64_t bench_fakeclock_now(void)
{
    return fake_ms;
}

uint64_t bench_fakeclock_elided(void)
{
    return elided;
}

uint64_t bench_fakeclock_settime_elided(void)
{
    return settime_elided;
}

double bench_wall(void)
{
    struct timespec ts;
    real_clock()(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
