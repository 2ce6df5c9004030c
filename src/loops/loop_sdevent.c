/* SPDX-License-Identifier: MIT */
/*
 * loop_sdevent.c - rota/sdevent.h: a rota wheel driven by one sd-event time
 * source.
 *
 * sd-event keeps one timerfd per clock and a pair of priority queues of the
 * time sources on it; setting a source's time reshuffles both queues and
 * makes the loop re-arm the timerfd before its next poll.  So the adapter
 * keeps to the rule every rota adapter follows: it remembers the setting
 * (`armed_`), which is never later than the wheel's earliest deadline, and
 * calls sd_event_source_set_time() only after a wake-up and when a timer has
 * become earlier than the setting (loop_earlier_deadline(): an O(1) counter
 * comparison when nothing was armed).
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
#include "loop_common.h"
#include "rota/sdevent.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* Ticks to sd-event's microseconds, rounded up (never before the deadline);
 * a deadline that does not fit is "never". */
static uint64_t ticks_to_usec(const struct rota_sdevent *rs, uint64_t ticks)
{
    uint64_t ns = loop_ticks_to_ns(ticks, rota_clock_ns(&rs->clock_, 1));
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
    uint64_t usec = UINT64_MAX;
    if (deadline != ROTA_NEVER) {
        usec = ticks_to_usec(rs, deadline);
        rs->rearms_++; /* setting to infinity is a disarm: not counted */
    }
    int r = sd_event_source_set_time(rs->source_, usec);
    if (r < 0) {
        rs->seen_armed_ = UINT64_MAX; /* the next sync tries again */
        return sd_failed(r);
    }
    rs->armed_ = deadline;
    return 1;
}

/* After a wake-up (or at init): the wheel's next deadline, or infinity. */
static int rearm(struct rota_sdevent *rs)
{
    rs->seen_armed_ = loop_armed_count(rs->wheel_);
    uint64_t next = rota_wheel_next_deadline(rs->wheel_);
    if (next == rs->armed_)
        return 0; /* already set there (at init: both ROTA_NEVER) */
    return arm_at(rs, next);
}

int rota_sdevent_sync(struct rota_sdevent *rs)
{
    if (rs == NULL || rs->source_ == NULL)
        return ROTA_EINVAL;
    uint64_t next =
        loop_earlier_deadline(rs->wheel_, &rs->seen_armed_, rs->armed_);
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

    (void)s;
    (void)usec;
    rs->wakeups_++;
    loop_count_wake(rs->late_ns_, &rs->clock_, rs->armed_);
    uint64_t now = rota_clock_now(&rs->clock_);
    if (now < rs->armed_) {
        /* CLOCK_MONOTONIC has passed the setting (sd-event fired the
         * source); a coarse clock may lag it by a few ms, and waiting for
         * it would mean waking again and again until it catches up. */
        now = rs->armed_;
    }
    if (now < loop_wheel_time(rs->wheel_))
        now = loop_wheel_time(rs->wheel_);
    int more = 0;
    if (rs->budget_ == 0)
        rota_wheel_advance(rs->wheel_, now);
    else
        more = rota_wheel_advance_max(rs->wheel_, now, rs->budget_, NULL);
    if (rs->source_ == NULL)
        return 0; /* closed from a callback, against the header's advice */
    if (more == 1) {
        /* Work left.  The source's time has passed (it just fired), and an
         * ON source left at a past time is found pending again by
         * sd-event's next iteration, after its poll: nothing to set. */
        rs->seen_armed_ = loop_armed_count(rs->wheel_);
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
    rs->source_ = NULL;
    rs->wheel_ = NULL; /* until checked: close after a failed init */
    rs->armed_ = ROTA_NEVER;
    rs->seen_armed_ = 0;
    rs->rearms_ = 0;
    rs->wakeups_ = 0;
    memset(rs->late_ns_, 0, sizeof rs->late_ns_);
    rs->budget_ = 0;
    if (event == NULL || !loop_can_bind(wheel, clock))
        return ROTA_EINVAL;
    rs->wheel_ = wheel;
    rs->clock_ = *clock;
    /* sd-event has no coarse time sources; the coarse clock is the same
     * time line as CLOCK_MONOTONIC.  Any other clock id is passed on, and
     * refused below if sd-event has no time sources for it. */
    clockid_t id = (clockid_t)clock->id_;
    if (id == CLOCK_MONOTONIC_COARSE)
        id = CLOCK_MONOTONIC;

    sd_event_source *src;
    int r = sd_event_add_time(event, &src, id, UINT64_MAX, 1, on_time, rs);
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
        return sd_failed(r);
    }
    rs->source_ = src;
    r = rearm(rs);
    if (r < 0) {
        rota_sdevent_close(rs);
        return r;
    }
    loop_give_time_source(wheel, &rs->clock_); /* loop_common.h: why */
    return 0;
}

uint64_t rota_sdevent_now(const struct rota_sdevent *rs)
{
    return rs == NULL ? 0 : rota_clock_now(&rs->clock_);
}

uint64_t rota_sdevent_deadline_after(const struct rota_sdevent *rs,
                                     uint64_t delay_ns)
{
    return rs == NULL ? ROTA_MAX_DEADLINE
                      : rota_clock_deadline_after(&rs->clock_, delay_ns);
}

void rota_sdevent_set_budget(struct rota_sdevent *rs, size_t max_fires)
{
    if (rs != NULL)
        rs->budget_ = max_fires;
}

int rota_sdevent_set_priority(struct rota_sdevent *rs, int64_t priority)
{
    if (rs == NULL || rs->source_ == NULL)
        return ROTA_EINVAL;
    int r = sd_event_source_set_priority(rs->source_, priority);
    return r < 0 ? sd_failed(r) : 0;
}

uint64_t rota_sdevent_armed(const struct rota_sdevent *rs)
{
    return rs == NULL ? ROTA_NEVER : rs->armed_;
}

uint64_t rota_sdevent_rearms(const struct rota_sdevent *rs)
{
    return rs == NULL ? 0 : rs->rearms_;
}

uint64_t rota_sdevent_wakeups(const struct rota_sdevent *rs)
{
    return rs == NULL ? 0 : rs->wakeups_;
}

void rota_sdevent_lateness(const struct rota_sdevent *rs,
                           struct rota_lateness *out)
{
    loop_copy_lateness(rs == NULL ? NULL : rs->late_ns_, out);
}

void rota_sdevent_close(struct rota_sdevent *rs)
{
    if (rs == NULL)
        return;
    if (rs->source_ != NULL)
        drop_source(rs->source_);
    rs->source_ = NULL;
    rs->armed_ = ROTA_NEVER;
    loop_take_time_source(rs->wheel_, &rs->clock_);
}
