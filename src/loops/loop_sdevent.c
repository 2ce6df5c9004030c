/* SPDX-License-Identifier: MIT */
/*
 * loop_sdevent.c - rota/sdevent.h: a rota wheel driven by one sd-event time
 * source.
 *
 * sd-event keeps one timerfd per clock and a pair of priority queues of the
 * time sources on it; setting a source's time reshuffles both queues and
 * makes the loop re-arm the timerfd before its next poll.  So the adapter
 * keeps to the rule of the adapter engine (loop_engine.c): it calls
 * sd_event_source_set_time() only after a wake-up and when a timer has
 * become earlier than the setting (an O(1) counter comparison when nothing
 * was armed).
 *
 * Why one always-enabled source with a prepare callback, and not a one-shot
 * source plus something else to notice arms: sd-event runs a source's prepare
 * callback only while the source is enabled.  A one-shot source is disabled
 * once it has fired, so a timer armed from an I/O callback while the wheel
 * was empty would go unnoticed until something else woke the loop.  Setting
 * an enabled source to USEC_INFINITY means "never" to sd-event (its timerfd
 * is left unarmed), so the source stays enabled at no cost while the wheel is
 * empty, and its prepare callback keeps watching for arms.  A post source
 * (run after every dispatch) would also see them, but costs an extra loop
 * iteration after every event; the prepare callback costs a counter read.
 *
 * The source is SD_EVENT_ON, not ONESHOT: after a wake-up that stopped at
 * the budget, it is simply left where it was, in the past, and sd-event
 * dispatches it again in its next iteration, after a non-blocking poll,
 * without a call to move it; sd-event orders pending sources of one priority by the iteration
 * that found them pending, so I/O found in between runs first.  A timer
 * that re-arms itself with delay 0 from its callback is filed for the next
 * advance by the wheel (rota.h), and so waits for that same next iteration:
 * it cannot starve the loop.
 */
#define _GNU_SOURCE /* CLOCK_MONOTONIC_COARSE, errno values */
#include "loop_engine.h"
#include "rota/sdevent.h"

#include <errno.h>
#include <time.h>

/* Ticks to sd-event's microseconds, rounded up (never before the deadline);
 * a deadline that does not fit is "never". */
static uint64_t ticks_to_usec(const struct rota_sdevent *rs, uint64_t ticks)
{
    uint64_t ns =
        loop_ticks_to_ns(ticks, rota_clock_ns(&rs->engine_.clock_, 1));
    if (ns == UINT64_MAX)
        return UINT64_MAX; /* USEC_INFINITY */
    return ns / 1000u + (ns % 1000u != 0);
}

/* A negative errno from sd-event as ROTA_ESYS with errno set. */
static int sd_failed(int r)
{
    errno = -r;
    return ROTA_ESYS;
}

/* Disable and release a source (sd_event_source_disable_unref() does both,
 * but only from systemd 248 on). */
static void drop_source(sd_event_source *src)
{
    (void)sd_event_source_set_enabled(src, SD_EVENT_OFF);
    sd_event_source_unref(src);
}

/* Set the source to `deadline` (ticks; ROTA_NEVER: infinity). */
static int arm_at(struct rota_sdevent *rs, uint64_t deadline)
{
    struct rota_loop_engine *e = &rs->engine_;
    uint64_t usec = UINT64_MAX;
    if (deadline != ROTA_NEVER) {
        usec = ticks_to_usec(rs, deadline);
        e->rearms_++; /* setting to infinity is a disarm: not counted */
    }
    int r = sd_event_source_set_time(rs->source_, usec);
    if (r < 0) {
        rota__loop_retry(e); /* the next sync tries again */
        return sd_failed(r);
    }
    e->armed_ = deadline;
    return 1;
}

/* After a wake-up (or at init): the wheel's next deadline, or infinity. */
static int rearm(struct rota_sdevent *rs)
{
    uint64_t next = rota__loop_next(&rs->engine_, false);
    if (next == rs->engine_.armed_)
        return 0; /* already set there (at init: both ROTA_NEVER) */
    return arm_at(rs, next);
}

int rota_sdevent_sync(struct rota_sdevent *rs)
{
    if (rs == NULL || rs->source_ == NULL)
        return ROTA_EINVAL;
    uint64_t next = rota__loop_earlier(&rs->engine_);
    if (next == ROTA_NEVER)
        return 0;
    return arm_at(rs, next);
}

static int on_prepare(sd_event_source *s, void *userdata)
{
    (void)s;
    /* An error leaves seen_armed_ stale, so the next iteration tries again;
     * returning it would make sd-event disable the source for good. */
    rota_sdevent_sync(userdata);
    return 0;
}

static int on_time(sd_event_source *s, uint64_t usec, void *userdata)
{
    struct rota_sdevent *rs = userdata;
    struct rota_loop_engine *e = &rs->engine_;

    (void)s;
    (void)usec;
    /* sd-event fired the source: CLOCK_MONOTONIC has passed the setting,
     * which a coarse clock may not show yet (the floor). */
    uint64_t now = rota__loop_wake(e, e->armed_, e->armed_);
    int more = rota__loop_advance(e, now, NULL);
    if (rs->source_ == NULL)
        return 0; /* closed from a callback, against the header's advice */
    if (more == 1) {
        /* Work left.  The source's time has passed (it just fired), and an
         * ON source left at a past time is found pending again by
         * sd-event's next iteration, after its poll: nothing to set. */
        rota__loop_next(e, true);
        return 0;
    }
    /* Whatever happens, return 0: sd-event disables a source whose
     * callback fails.  A failed set_time leaves the source due, so it runs
     * again in the next iteration and retries. */
    rearm(rs);
    return 0;
}

int rota_sdevent_init(struct rota_sdevent *rs, sd_event *event,
                      struct rota_wheel *wheel, const struct rota_clock *clock)
{
    if (rs == NULL)
        return ROTA_EINVAL;
    rota__loop_reset(&rs->engine_);
    rs->source_ = NULL;
    if (event == NULL || rota__loop_bind(&rs->engine_, wheel, clock) != 0)
        return ROTA_EINVAL;
    /* sd-event has no coarse time sources; the coarse clock is the same
     * time line as CLOCK_MONOTONIC.  Any other clock id is passed on, and
     * refused below if sd-event has no time sources for it. */
    clockid_t id = (clockid_t)clock->id_;
    if (id == CLOCK_MONOTONIC_COARSE)
        id = CLOCK_MONOTONIC;

    sd_event_source *src;
    int r = sd_event_add_time(event, &src, id, UINT64_MAX, 1, on_time, rs);
    if (r < 0)
        rota__loop_unbind(&rs->engine_);
    if (r == -EOPNOTSUPP || r == -EINVAL)
        return ROTA_EINVAL;
    if (r < 0)
        return sd_failed(r);
    r = sd_event_source_set_enabled(src, SD_EVENT_ON);
    if (r >= 0)
        r = sd_event_source_set_prepare(src, on_prepare);
    if (r >= 0)
        (void)sd_event_source_set_description(src, "rota-wheel");
    if (r < 0) {
        drop_source(src);
        rota__loop_unbind(&rs->engine_);
        return sd_failed(r);
    }
    rs->source_ = src;
    r = rearm(rs);
    if (r < 0) {
        rota_sdevent_close(rs);
        return r;
    }
    rota__loop_publish(&rs->engine_);
    return 0;
}

uint64_t rota_sdevent_now(const struct rota_sdevent *rs)
{
    return rota__loop_now(rs == NULL ? NULL : &rs->engine_);
}

uint64_t rota_sdevent_deadline_in(const struct rota_sdevent *rs,
                                  uint64_t delay_ns)
{
    return rota__loop_deadline_in(rs == NULL ? NULL : &rs->engine_, delay_ns);
}

void rota_sdevent_set_budget(struct rota_sdevent *rs, size_t max_fires)
{
    if (rs != NULL)
        rs->engine_.budget_ = max_fires;
}

int rota_sdevent_set_priority(struct rota_sdevent *rs, int64_t priority)
{
    if (rs == NULL || rs->source_ == NULL)
        return ROTA_EINVAL;
    int r = sd_event_source_set_priority(rs->source_, priority);
    return r < 0 ? sd_failed(r) : 0;
}

void rota_sdevent_stats(const struct rota_sdevent *rs,
                        struct rota_loop_stats *out)
{
    if (out != NULL)
        rota__loop_stats(rs == NULL ? NULL : &rs->engine_, out);
}

int rota_sdevent_close(struct rota_sdevent *rs)
{
    if (rs == NULL)
        return ROTA_EINVAL;
    if (rs->source_ != NULL)
        drop_source(rs->source_);
    rs->source_ = NULL;
    rota__loop_unbind(&rs->engine_);
    return 0;
}
