/* SPDX-License-Identifier: MIT */
/* rota/clock.h: the system clock as wheel ticks.  See the header for why
 * "now" rounds down and deadlines round up. */
#define _GNU_SOURCE /* CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME */
#include "rota/clock.h"

#include <errno.h>
#include <stddef.h>
#include <time.h>

int rota_clock_init(struct rota_clock *clock, enum rota_clock_source source,
                    uint64_t tick_ns)
{
    struct timespec ts;
    clockid_t id;

    if (clock == NULL || tick_ns == 0)
        return ROTA_EINVAL;
    switch (source) {
    case ROTA_CLOCK_MONOTONIC:
        id = CLOCK_MONOTONIC;
        break;
    case ROTA_CLOCK_MONOTONIC_COARSE:
#ifdef CLOCK_MONOTONIC_COARSE
        id = CLOCK_MONOTONIC_COARSE;
        break;
#else
        return ROTA_ENOTSUP;
#endif
    case ROTA_CLOCK_BOOTTIME:
        /* Linux only: elsewhere a clock of that name may exist and mean
         * something else (FreeBSD's does not count suspend). */
#if defined(__linux__) && defined(CLOCK_BOOTTIME)
        id = CLOCK_BOOTTIME;
        break;
#else
        return ROTA_ENOTSUP;
#endif
    default:
        return ROTA_EINVAL;
    }
    if (clock_gettime(id, &ts) != 0)
        return errno == EINVAL ? ROTA_ENOTSUP : ROTA_ESYS; /* old kernel */
    clock->id_ = id;
    clock->tick_ns_ = tick_ns;
    return 0;
}

uint64_t rota_clock_now_ns(const struct rota_clock *clock)
{
    struct timespec ts;

    /* The clock was read successfully in rota_clock_init(); monotonic clocks
     * do not start failing afterwards. */
    clock_gettime((clockid_t)clock->id_, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rota_clock_now(const struct rota_clock *clock)
{
    return rota_clock_now_ns(clock) / clock->tick_ns_;
}

/* ceil(ns / tick) without overflowing ns + tick - 1. */
static uint64_t div_ceil(uint64_t ns, uint64_t tick)
{
    return ns / tick + (ns % tick != 0);
}

uint64_t rota_clock_deadline_after(const struct rota_clock *clock,
                                   uint64_t delay_ns)
{
    uint64_t now_ns = rota_clock_now_ns(clock);
    uint64_t at_ns = now_ns + delay_ns;

    if (at_ns < now_ns)
        return ROTA_MAX_DEADLINE;
    uint64_t ticks = div_ceil(at_ns, clock->tick_ns_);
    return ticks > ROTA_MAX_DEADLINE ? ROTA_MAX_DEADLINE : ticks;
}

uint64_t rota_clock_ticks_ceil(const struct rota_clock *clock, uint64_t ns)
{
    uint64_t ticks = div_ceil(ns, clock->tick_ns_);
    return ticks > ROTA_MAX_DEADLINE ? ROTA_MAX_DEADLINE : ticks;
}

uint64_t rota_clock_ns(const struct rota_clock *clock, uint64_t ticks)
{
    if (ticks != 0 && clock->tick_ns_ > UINT64_MAX / ticks)
        return UINT64_MAX;
    return ticks * clock->tick_ns_;
}
