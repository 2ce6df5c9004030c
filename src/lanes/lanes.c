/* SPDX-License-Identifier: MIT */
/*
 * lanes.c - timeout lanes (rota/lanes.h): one FIFO of timers per duration,
 * one wheel timer per lane.
 *
 * THE WORKLOAD
 *   A server arms one idle or request timeout per connection or request,
 *   all with the same few durations, and restarts ("touches") them on every
 *   bit of activity; few ever fire.  Under overload the operator wants
 *   every idle timeout shorter at once (Envoy's scaled timers), which a
 *   wheel or a heap can only do by visiting every timer.
 *
 * THE STRUCTURE
 *   A lane holds its timers in a circular doubly linked list in the order
 *   they were armed or last touched, and each timer records that arm time,
 *   not its deadline.  All timers of a lane share its duration, so
 *   deadline = arm time + duration is non-decreasing along the list: the
 *   head is the earliest.  The lane embeds one struct rota_timer, pending on
 *   the wheel while the lane holds timers, at a deadline never later than
 *   the head's (an earlier one costs the lane one wake-up that fires
 *   nothing and re-arms it).  Rules:
 *     - arm and touch append at the tail with arm time = the wheel's time,
 *       raised to the previous arm time so the list stays sorted;
 *     - a touch or cancel that removes the head moves the wheel timer to
 *       the new head's deadline with rota_timer_touch_at(), a store, since
 *       it is later; a cancel that empties the lane cancels it;
 *     - a rescale stores the new duration and re-arms the wheel timer at
 *       the head's new deadline, earlier or later: the deadlines of all
 *       the other timers follow, since they are computed;
 *     - when the wheel timer fires, the lane fires every head timer whose
 *       deadline is at or before the wheel's now, then re-arms the wheel
 *       timer at the new head's deadline.  A mark linked at the tail when
 *       the pass starts stops it at the timers armed or touched by its own
 *       callbacks: they wait for the next advance, as rota.h's timers armed
 *       in a callback do, so a duration of 0 cannot loop.
 *
 * THE GUARANTEES AND WHY THEY HOLD
 *   - Never early: a timer fires only when arm time + duration <= now,
 *     checked against the duration of that moment.
 *   - Exact: the wheel timer is never later than the head's deadline and
 *     the wheel fires it in the first advance that reaches it; a fire
 *     leaves the wheel timer at the next head's exact deadline, which is
 *     after now (or was armed in this pass, when the wheel defers it).
 *   - A rescale is O(1): one store and one re-arm.
 *
 * ALTERNATIVES REJECTED
 *   - Storing deadlines (libevent's common timeouts, H2O's timeout lists):
 *     the same FIFO, but a change of duration must rewrite every timer.
 *   - One wheel timer per lane timer: touch and expiry then pay the
 *     wheel's slot arithmetic and cascades, and a rescale is O(timers).
 *   - Scaling at fire time only (a lane checks each head against the
 *     scaled duration when its old deadline comes): a shrink would then
 *     fire late by up to the old duration.
 */
#include <rota/lanes.h>

#include <stddef.h>

static struct rota_lane_timer *lane_timer_of(struct rota_link *link)
{
    return rota_container_of(link, struct rota_lane_timer, link_);
}

static bool lt_pending(const struct rota_lane_timer *t)
{
    return t->link_.prev != ROTA__IDLE && t->link_.prev != NULL;
}

static int check_lt(const struct rota_lane *lane,
                    const struct rota_lane_timer *t)
{
    if (lane == NULL || t == NULL || !lane->ready_)
        return ROTA_EINVAL;
    if (t->link_.prev == NULL)
        return ROTA_EUNINIT;
    return 0;
}

static void unlink_lt(struct rota_lane_timer *t)
{
    struct rota_link *prev = t->link_.prev, *next = t->link_.next;
    prev->next = next;
    next->prev = prev;
}

static void append(struct rota_link *head, struct rota_link *link)
{
    struct rota_link *tail = head->prev;
    link->next = head;
    link->prev = tail;
    tail->next = link;
    head->prev = link;
}

static uint64_t deadline_of(const struct rota_lane *lane, uint64_t armed_at)
{
    uint64_t d = lane->duration_;
    if (armed_at > ROTA_MAX_DEADLINE || d > ROTA_MAX_DEADLINE - armed_at)
        return ROTA_MAX_DEADLINE;
    return armed_at + d;
}

/* The first timer of the list, or NULL (empty, or only the firing mark
 * and what follows it is left: see fire()). */
static struct rota_lane_timer *head_of(struct rota_lane *lane)
{
    struct rota_link *first = lane->fifo_.next;
    if (first == &lane->fifo_ || first == &lane->mark_)
        return NULL;
    return lane_timer_of(first);
}

/* The arm time for a timer appended now. */
static uint64_t arm_time(struct rota_lane *lane)
{
    /* rota_wheel_now(), without the call when no time source is set (as
     * rota.h's rota_timer_arm_in() does). */
    const struct rota_wheel *w = lane->wheel_;
    uint64_t now = w->time_fn_ == NULL ? w->now_ : rota_wheel_now(w);
    if (now < lane->last_arm_)
        now = lane->last_arm_;
    lane->last_arm_ = now;
    return now;
}

static void lane_fire(struct rota_wheel *wheel, struct rota_timer *timer,
                      uint64_t late);

int rota_lane_init(struct rota_lane *lane, struct rota_wheel *wheel,
                   uint64_t duration, rota_lane_fn *fn)
{
    if (lane == NULL || wheel == NULL || fn == NULL)
        return ROTA_EINVAL;
    *lane = (struct rota_lane){0};
    rota_timer_init(&lane->timer_, lane_fire);
    lane->fifo_.next = lane->fifo_.prev = &lane->fifo_;
    lane->wheel_ = wheel;
    lane->fn_ = fn;
    lane->base_ = duration;
    lane->duration_ = duration;
    lane->scale_ = ROTA_LANE_SCALE_ONE;
    lane->ready_ = 1;
    return 0;
}

void rota_lane_timer_init(struct rota_lane_timer *t)
{
    if (t == NULL)
        return;
    t->link_.next = NULL;
    t->link_.prev = ROTA__IDLE;
    t->armed_at_ = 0;
}

/* The lane lost its head (touch or cancel): the wheel timer follows the new
 * head, later, with a store; an empty lane needs no wheel timer.  Not while
 * firing: fire() re-arms when it is done. */
static void head_left(struct rota_lane *lane)
{
    if (lane->firing_)
        return;
    struct rota_lane_timer *h = head_of(lane);
    if (h == NULL)
        rota_timer_cancel(lane->wheel_, &lane->timer_);
    else
        rota_timer_touch_at(lane->wheel_, &lane->timer_,
                            deadline_of(lane, h->armed_at_));
}

int rota_lane_arm(struct rota_lane *lane, struct rota_lane_timer *t)
{
    int rc = check_lt(lane, t);
    if (rc != 0)
        return rc;
    if (lt_pending(t))
        return rota_lane_touch(lane, t);
    uint64_t at = arm_time(lane);
    if (lane->count_ == 0 && !lane->firing_) {
        rc = rota_timer_arm_at(lane->wheel_, &lane->timer_,
                               deadline_of(lane, at));
        if (rc != 0)
            return rc;
    }
    t->armed_at_ = at;
    append(&lane->fifo_, &t->link_);
    lane->count_++;
    return 0;
}

int rota_lane_touch(struct rota_lane *lane, struct rota_lane_timer *t)
{
    int rc = check_lt(lane, t);
    if (rc != 0)
        return rc;
    if (!lt_pending(t))
        return ROTA_ENOENT;
    bool was_head = lane->fifo_.next == &t->link_;
    unlink_lt(t);
    t->armed_at_ = arm_time(lane);
    append(&lane->fifo_, &t->link_);
    if (was_head)
        head_left(lane);
    return 0;
}

int rota_lane_cancel(struct rota_lane *lane, struct rota_lane_timer *t)
{
    int rc = check_lt(lane, t);
    if (rc != 0)
        return rc;
    if (!lt_pending(t))
        return 0;
    bool was_head = lane->fifo_.next == &t->link_;
    unlink_lt(t);
    t->link_.prev = ROTA__IDLE;
    lane->count_--;
    if (was_head)
        head_left(lane);
    return 1;
}

/* Put the wheel timer at the head's exact deadline (or cancel it). */
static int rearm(struct rota_lane *lane)
{
    struct rota_lane_timer *h = head_of(lane);
    if (h == NULL) {
        rota_timer_cancel(lane->wheel_, &lane->timer_);
        return 0;
    }
    return rota_timer_arm_at(lane->wheel_, &lane->timer_,
                             deadline_of(lane, h->armed_at_));
}

/* ceil(base * scale / 65536), saturated. */
static uint64_t scaled(uint64_t base, uint32_t scale)
{
    uint64_t hi = base >> 16, lo = base & 0xffffu;
    if (hi != 0 && scale > ROTA_MAX_DEADLINE / hi)
        return ROTA_MAX_DEADLINE;
    uint64_t whole = hi * scale;
    uint64_t part = (lo * scale + 0xffffu) >> 16; /* < 2^48: no overflow */
    if (part > ROTA_MAX_DEADLINE - whole)
        return ROTA_MAX_DEADLINE;
    return whole + part;
}

static int retime(struct rota_lane *lane, uint64_t base, uint32_t scale)
{
    if (lane == NULL || !lane->ready_)
        return ROTA_EINVAL;
    lane->base_ = base;
    lane->scale_ = scale;
    lane->duration_ = scale == ROTA_LANE_SCALE_ONE ? base : scaled(base, scale);
    if (lane->firing_) /* fire() re-arms at the end */
        return 0;
    return rearm(lane);
}

int rota_lane_set_duration(struct rota_lane *lane, uint64_t duration)
{
    return retime(lane, duration, lane == NULL ? 0 : lane->scale_);
}

int rota_lane_set_scale(struct rota_lane *lane, uint32_t scale)
{
    return retime(lane, lane == NULL ? 0 : lane->base_, scale);
}

uint64_t rota_lane_duration(const struct rota_lane *lane)
{
    return lane == NULL ? 0 : lane->duration_;
}

size_t rota_lane_count(const struct rota_lane *lane)
{
    return lane == NULL ? 0 : lane->count_;
}

uint64_t rota_lane_deadline(const struct rota_lane *lane,
                            const struct rota_lane_timer *t)
{
    if (lane == NULL || t == NULL || t->link_.prev == NULL ||
        (t->link_.prev == ROTA__IDLE && t->link_.next == NULL))
        return ROTA_NEVER;
    return deadline_of(lane, t->armed_at_);
}

bool rota_lane_timer_pending(const struct rota_lane_timer *t)
{
    return t != NULL && lt_pending(t);
}

/* The wheel timer fired: fire the due heads, up to the mark. */
static void lane_fire(struct rota_wheel *wheel, struct rota_timer *timer,
                      uint64_t late)
{
    struct rota_lane *lane = rota_container_of(timer, struct rota_lane, timer_);
    /* The pass's `now` (not rota_wheel_now(), which may read a time
     * source: a timer fires only in a call whose `now` reaches it). */
    uint64_t now = rota_timer_deadline(timer) + late;
    (void)wheel;

    lane->firing_ = 1;
    append(&lane->fifo_, &lane->mark_);
    struct rota_lane_timer *h;
    while ((h = head_of(lane)) != NULL) {
        uint64_t deadline = deadline_of(lane, h->armed_at_);
        if (deadline > now)
            break;
        unlink_lt(h);
        h->link_.prev = ROTA__IDLE;
        lane->count_--;
        lane->fn_(lane, h, now - deadline); /* may free h */
    }
    /* Out with the mark: the timers after it were armed by callbacks. */
    struct rota_link *prev = lane->mark_.prev, *next = lane->mark_.next;
    prev->next = next;
    next->prev = prev;
    lane->firing_ = 0;
    rearm(lane);
}

int rota_lane_drain(struct rota_lane *lane,
                    void (*fn)(struct rota_lane_timer *timer, void *arg),
                    void *arg)
{
    if (lane == NULL || fn == NULL || !lane->ready_)
        return ROTA_EINVAL;
    if (lane->firing_)
        return ROTA_EBUSY;
    struct rota_link batch = {&batch, &batch};
    if (lane->fifo_.next != &lane->fifo_) {
        batch.next = lane->fifo_.next;
        batch.prev = lane->fifo_.prev;
        batch.next->prev = &batch;
        batch.prev->next = &batch;
        lane->fifo_.next = lane->fifo_.prev = &lane->fifo_;
    }
    lane->count_ = 0;
    rota_timer_cancel(lane->wheel_, &lane->timer_);
    while (batch.next != &batch) {
        struct rota_lane_timer *t = lane_timer_of(batch.next);
        unlink_lt(t);
        t->link_.prev = ROTA__IDLE;
        fn(t, arg);
    }
    return 0;
}

int rota_lane_check(const struct rota_lane *lane, const char **why)
{
    const char *bad = NULL;
    if (lane == NULL || !lane->ready_) {
        if (why != NULL)
            *why = "lane NULL or never initialised";
        return ROTA_EINVAL;
    }
    size_t n = 0;
    uint64_t last = 0;
    const struct rota_link *head = &lane->fifo_;
    for (const struct rota_link *l = head->next; l != head; l = l->next) {
        if (l->next->prev != l) {
            bad = "a timer's next link does not point back to it";
            goto out;
        }
        if (l == &lane->mark_)
            continue;
        const struct rota_lane_timer *t =
            rota_container_of(l, struct rota_lane_timer, link_);
        if (t->armed_at_ < last) {
            bad = "arm times decrease along the lane";
            goto out;
        }
        if (t->armed_at_ > lane->last_arm_) {
            bad = "a timer armed after the lane's latest arm time";
            goto out;
        }
        last = t->armed_at_;
        if (++n > lane->count_)
            break;
    }
    if (n != lane->count_) {
        bad = "the lane's count disagrees with its list";
        goto out;
    }
    if (!lane->firing_) {
        bool pending = rota_timer_pending(&lane->timer_);
        if (pending != (n != 0)) {
            bad = pending ? "the wheel timer is pending on an empty lane"
                          : "the lane holds timers but no wheel timer";
            goto out;
        }
        if (n != 0) {
            const struct rota_lane_timer *h =
                rota_container_of(head->next, struct rota_lane_timer, link_);
            uint64_t d = deadline_of(lane, h->armed_at_);
            uint64_t now = rota_wheel_now(lane->wheel_);
            if (rota_timer_deadline(&lane->timer_) > (d > now ? d : now)) {
                bad = "the wheel timer is later than the lane's head";
                goto out;
            }
        }
    }
out:
    if (why != NULL && bad != NULL)
        *why = bad;
    return bad == NULL ? 0 : ROTA_ECORRUPT;
}
