/* SPDX-License-Identifier: MIT */
/*
 * model.h - a trivially correct reference model of the core wheel (rota.h).
 *
 * A flat array of timers, one per id, scanned in O(n) for every question.
 * It mirrors the header's semantics and nothing else:
 *   - deadlines saturate at ROTA_MAX_DEADLINE and clamp to the model's now;
 *   - a pass (advance, advance_max, expire) fires the due timers in
 *     (deadline, seq) order, seq counting up on every arm and on every
 *     periodic reschedule (done before the callback runs);
 *   - a timer armed during a pass with a deadline <= the pass's now is
 *     deferred to the next call;
 *   - periodic next deadlines: deadline + period when the fire is late by
 *     less than a period (nothing missed), whatever the policy; otherwise
 *     SKIP the first point of the schedule strictly after now, BURST
 *     deadline + period (fires again in the same pass), DELAY now + period;
 *     a schedule that would pass ROTA_MAX_DEADLINE ends after its last fire;
 *   - a `now` earlier than the model's fires nothing and is counted;
 *   - touch to a later (or equal) deadline is a store, marked "touched
 *     later" when strictly later; touch earlier re-arms (new seq).
 *
 * A touched-later timer's place among equal deadlines is unspecified (rota.h
 * "Order").  So model_compare() checks each run of equal deadlines exactly
 * when no timer in it was touched later since its last arm, and otherwise
 * as a multiset whose untouched members keep their exact order.  To follow
 * the wheel through such a run, model_pass() takes the wheel's fired ids as
 * a hint and picks the hinted timer whenever that choice is legal; the hint
 * never makes an illegal choice acceptable.
 */
#ifndef ROTA_TEST_MODEL_H
#define ROTA_TEST_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rota.h>

struct model_timer {
    uint64_t deadline;
    uint64_t seq;
    uint64_t period; /* 0: one-shot */
    int policy;      /* enum rota_missed */
    bool periodic;   /* a struct rota_periodic: arms keep its period */
    bool pending;
    bool touched;  /* touched to a later deadline since its last (re)arm */
    bool deferred; /* armed during the current pass at <= now */
};

struct model_stats {
    uint64_t armed, fired, cancelled, touched, drained, clock_backwards;
};

struct model {
    struct model_timer *t;
    size_t n;
    uint64_t now;
    uint64_t seq;
    size_t pending;
    bool in_pass;
    struct model_stats stats;
};

/* One fire as the model expects it (or as the wheel reported it: then only
 * id and, when has_late, late are meaningful). */
struct model_fire {
    uint32_t id;
    uint64_t deadline;  /* the deadline that came due */
    uint64_t late;      /* now - deadline */
    uint64_t next;      /* the timer's deadline after the fire */
    bool pending_after; /* still pending (periodic) after the fire */
    bool touched;       /* touched later since its last arm, at the fire */
    bool has_late;
};

/* Called by model_pass() after each fire (where a callback would run). */
typedef void model_hook(struct model *m, size_t index,
                        const struct model_fire *fire, void *arg);

int model_init(struct model *m, size_t n, uint64_t now);
void model_destroy(struct model *m);
/* Timer `id` is a struct rota_periodic (rota_periodic_init()): the only
 * kind model_arm_periodic() takes, and whose period every arm keeps. */
void model_make_periodic(struct model *m, uint32_t id);
/* Timer `id`, idle, was replaced by fresh memory of the same kind: no
 * schedule. */
void model_renew(struct model *m, uint32_t id);

/* The same return values as the rota_timer_* functions (no EUNINIT or
 * EOTHERWHEEL: the model has one wheel and every id is initialised). */
int model_arm(struct model *m, uint32_t id, uint64_t deadline);
int model_arm_in(struct model *m, uint32_t id, uint64_t delay);
int model_arm_periodic(struct model *m, uint32_t id, uint64_t first,
                       uint64_t period, int policy);
int model_touch(struct model *m, uint32_t id, uint64_t deadline);
int model_cancel(struct model *m, uint32_t id);
/* rota_timer_arm_range_at() and rota_timer_touch_range_at(): the deadline is
 * the instant of the clamped window divisible by the largest power of two. */
int model_arm_range(struct model *m, uint32_t id, uint64_t earliest,
                    uint64_t latest);
int model_touch_range(struct model *m, uint32_t id, uint64_t earliest,
                      uint64_t latest);

uint64_t model_next_deadline(const struct model *m);
/* As rota_timer_remaining(): 1 and deadline - now (0 when due) for a
 * pending timer, 0 and 0 ticks otherwise. */
int model_remaining(const struct model *m, uint32_t id, uint64_t *ticks);
/* As rota_wheel_timeout_ms(): 0 or ROTA_EINVAL, the timeout in *timeout_ms
 * (0 on an error). */
int model_timeout_ms(const struct model *m, uint64_t now, uint64_t tick_ns,
                     int *timeout_ms);
/* Whether a non-deferred pending timer is due at the model's now. */
bool model_due(const struct model *m);

/*
 * One advance_max()/expire() call: set now, fire at most `max` due timers
 * into out[] (capacity `cap`: fires beyond it are counted, not stored),
 * calling hook after each unless NULL; `callbacks` says whether timers
 * armed from the hook are deferred (advance) or the call runs no callbacks
 * (expire).  hint[0..nhint) are the wheel's fired ids.  Stores the number
 * fired in *fired; returns 1 if due timers remain afterwards, else 0.
 */
int model_pass(struct model *m, uint64_t now, size_t max, bool callbacks,
               const uint32_t *hint, size_t nhint, model_hook *hook, void *arg,
               struct model_fire *out, size_t cap, size_t *fired);

/* Every pending timer becomes idle; their ids go to out[] (cap >= n). */
size_t model_drain(struct model *m, uint32_t *out);

/*
 * Compare the wheel's fires got[0..ngot) with the model's exp[0..nexp) of
 * one call (see the top of this file).  0 when they agree; otherwise -1 and
 * a description in msg.
 */
int model_compare(const struct model_fire *exp, size_t nexp,
                  const struct model_fire *got, size_t ngot, char *msg,
                  size_t msglen);

/* Saturating helpers shared with the drivers. */
uint64_t model_sat_add(uint64_t a, uint64_t b);

#endif /* ROTA_TEST_MODEL_H */
