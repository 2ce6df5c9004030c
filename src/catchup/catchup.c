/* SPDX-License-Identifier: MIT */
/*
 * catchup.c - calm after a stall (rota/catchup.h).
 *
 * THE WORKLOAD
 *   A process that was stopped, or a machine that resumed from suspend,
 *   wakes with every timer of the gap overdue.  Fired at once they make a
 *   thundering herd (reconnects, retries, kicks); spread out they do not.
 *
 * THE STRUCTURE
 *   The policy sits in front of the wheel's advance and uses only rota.h:
 *     - a stall is seen before advancing: `now` is at least `stall` ticks
 *       past rota_wheel_next_deadline(), which the wheel keeps cached (the
 *       adapters ask for it after every advance anyway), so the check
 *       costs a load and a compare;
 *     - during a catch-up each call that may fire runs
 *       rota_wheel_advance_max(wheel, now, burst), which resumes in order
 *       where the last one stopped, and sets the next allowed call
 *       `spacing` ticks later; calls before that only move the wheel's
 *       time (rota_wheel_advance_max() with a limit of 0);
 *     - the catch-up ends in the call that leaves nothing due.
 *
 * THE GUARANTEES AND WHY THEY HOLD
 *   Never early and in order: every fire is the wheel's own, which fires
 *   only due timers, in order, and resumes a limited call where it
 *   stopped.  The rate: one limited call per `spacing` ticks.
 *
 * ALTERNATIVES REJECTED
 *   - Counting the overdue timers first, to spread them evenly over a
 *     window: the count is a walk of every due slot, O(overdue) before the
 *     first fire.  A rate needs no count, and a window is a rate chosen
 *     from an estimate the caller can make (timers armed per second).
 *   - Random jitter per timer (systemd's RandomizedDelaySec): it needs a
 *     deadline change per timer, and a timer would fire later than needed
 *     even when nothing stalled.
 */
#include <rota/catchup.h>

int rota_catchup_init(struct rota_catchup *c, uint64_t stall, size_t burst,
                      uint64_t spacing)
{
    if (c == NULL || stall == 0 || burst == 0 || spacing == 0)
        return ROTA_EINVAL;
    *c = (struct rota_catchup){0};
    c->stall_ = stall;
    c->burst_ = burst;
    c->spacing_ = spacing;
    return 0;
}

int rota_catchup_advance(struct rota_catchup *c, struct rota_wheel *wheel,
                         uint64_t now)
{
    if (c == NULL || wheel == NULL)
        return ROTA_EINVAL;
    if (!c->active_) {
        uint64_t next = rota_wheel_next_deadline(wheel);
        if (next == ROTA_NEVER || now < next || now - next < c->stall_)
            return rota_wheel_advance(wheel, now);
        c->active_ = true;
        c->next_ = now;
        c->stats_.stalls++;
        c->stats_.last_stall = now - next;
        if (now - next > c->stats_.max_stall)
            c->stats_.max_stall = now - next;
        c->stats_.last_overdue = 0;
    }
    size_t fired = 0;
    if (now < c->next_) {
        /* Held back: the wheel's time moves, nothing fires. */
        int rc = rota_wheel_advance_max(wheel, now, 0, NULL);
        if (rc < 0)
            return rc;
        c->stats_.held++;
        return 0;
    }
    int more = rota_wheel_advance_max(wheel, now, c->burst_, &fired);
    if (more < 0)
        return more;
    c->stats_.overdue += fired;
    c->stats_.last_overdue += fired;
    c->next_ = now + c->spacing_ < now ? ROTA_MAX_DEADLINE : now + c->spacing_;
    if (!more)
        c->active_ = false;
    return fired > INT32_MAX ? INT32_MAX : (int)fired;
}

bool rota_catchup_active(const struct rota_catchup *c)
{
    return c != NULL && c->active_;
}

uint64_t rota_catchup_next_wake(const struct rota_catchup *c,
                                struct rota_wheel *wheel)
{
    if (c != NULL && c->active_)
        return c->next_;
    return rota_wheel_next_deadline(wheel);
}

void rota_catchup_stats(const struct rota_catchup *c,
                        struct rota_catchup_stats *out)
{
    if (c == NULL || out == NULL)
        return;
    *out = c->stats_;
}
