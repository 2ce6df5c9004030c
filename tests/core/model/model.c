/* SPDX-License-Identifier: MIT */
/*
 * model.c - the reference model of the core wheel; see model.h.  Every
 * question is an O(n) scan of a flat array: slow, and obviously right.
 */
#include "model.h"

#include "wide.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t model_sat_add(uint64_t a, uint64_t b)
{
    return b > ROTA_MAX_DEADLINE || a > ROTA_MAX_DEADLINE - b
               ? ROTA_MAX_DEADLINE
               : a + b;
}

static uint64_t clamp(const struct model *m, uint64_t deadline)
{
    if (deadline > ROTA_MAX_DEADLINE)
        deadline = ROTA_MAX_DEADLINE;
    return deadline < m->now ? m->now : deadline;
}

int model_init(struct model *m, size_t n, uint64_t now)
{
    memset(m, 0, sizeof *m);
    m->t = calloc(n ? n : 1, sizeof *m->t);
    if (m->t == NULL)
        return -1;
    m->n = n;
    m->now = now > ROTA_MAX_DEADLINE ? ROTA_MAX_DEADLINE : now;
    return 0;
}

void model_destroy(struct model *m)
{
    free(m->t);
    m->t = NULL;
    m->n = 0;
}

/* (Re)arm at an already clamped deadline; the period is the caller's. */
static void arm_at(struct model *m, struct model_timer *t, uint64_t deadline)
{
    if (!t->pending) {
        t->pending = true;
        m->pending++;
    }
    t->deadline = deadline;
    t->seq = ++m->seq;
    t->touched = false;
    t->deferred = m->in_pass && deadline <= m->now;
    m->stats.armed++;
}

void model_make_periodic(struct model *m, uint32_t id)
{
    if (id < m->n)
        m->t[id].periodic = true;
}

void model_renew(struct model *m, uint32_t id)
{
    if (id < m->n && !m->t[id].pending) {
        m->t[id].period = 0;
        m->t[id].policy = ROTA_MISSED_SKIP;
    }
}

int model_arm(struct model *m, uint32_t id, uint64_t deadline)
{
    if (id >= m->n)
        return ROTA_EINVAL;
    struct model_timer *t = &m->t[id];
    if (!t->periodic) { /* a struct rota_periodic keeps its schedule */
        t->period = 0;
        t->policy = ROTA_MISSED_SKIP;
    }
    arm_at(m, t, clamp(m, deadline));
    return 0;
}

int model_arm_in(struct model *m, uint32_t id, uint64_t delay)
{
    return model_arm(m, id, model_sat_add(m->now, delay));
}

int model_arm_periodic(struct model *m, uint32_t id, uint64_t first,
                       uint64_t period, int policy)
{
    if (id >= m->n || period == 0 || period > ROTA_MAX_PERIOD ||
        policy < ROTA_MISSED_SKIP || policy > ROTA_MISSED_DELAY ||
        !m->t[id].periodic)
        return ROTA_EINVAL;
    struct model_timer *t = &m->t[id];
    t->period = period;
    t->policy = policy;
    arm_at(m, t, clamp(m, first));
    return 0;
}

int model_touch(struct model *m, uint32_t id, uint64_t deadline)
{
    if (id >= m->n)
        return ROTA_EINVAL;
    struct model_timer *t = &m->t[id];
    if (!t->pending)
        return ROTA_ENOENT;
    deadline = clamp(m, deadline);
    if (deadline < t->deadline) {
        arm_at(m, t, deadline); /* earlier: a re-arm, period kept */
        return 0;
    }
    if (deadline > t->deadline) {
        t->deadline = deadline; /* later: a store */
        t->touched = true;
        m->stats.touched++;
    }
    return 0;
}

/* The instant of [lo, hi] divisible by the largest power of two, found by
 * trying every power from the top (the wheel uses a bit trick). */
static uint64_t coarsest_in(uint64_t lo, uint64_t hi)
{
    for (int bit = 63; bit > 0; bit--) {
        uint64_t unit = (uint64_t)1 << bit;
        uint64_t up = lo % unit == 0 ? lo : lo - lo % unit + unit;
        if (up >= lo && up <= hi) /* up >= lo: no wrap past 2^64 */
            return up;
    }
    return lo;
}

int model_arm_range(struct model *m, uint32_t id, uint64_t earliest,
                    uint64_t latest)
{
    if (id >= m->n || earliest > latest)
        return ROTA_EINVAL;
    return model_arm(m, id, coarsest_in(clamp(m, earliest), clamp(m, latest)));
}

int model_touch_range(struct model *m, uint32_t id, uint64_t earliest,
                      uint64_t latest)
{
    if (id >= m->n || earliest > latest)
        return ROTA_EINVAL;
    struct model_timer *t = &m->t[id];
    if (!t->pending)
        return ROTA_ENOENT;
    uint64_t lo = clamp(m, earliest), hi = clamp(m, latest);
    if (t->deadline >= lo && t->deadline <= hi)
        return 0;
    return model_touch(m, id, coarsest_in(lo, hi));
}

int model_cancel(struct model *m, uint32_t id)
{
    if (id >= m->n)
        return ROTA_EINVAL;
    struct model_timer *t = &m->t[id];
    if (!t->pending)
        return 0;
    t->pending = false;
    t->deferred = false;
    t->touched = false;
    m->pending--;
    m->stats.cancelled++;
    return 1;
}

uint64_t model_next_deadline(const struct model *m)
{
    uint64_t best = ROTA_NEVER;
    for (size_t i = 0; i < m->n; i++)
        if (m->t[i].pending && m->t[i].deadline < best)
            best = m->t[i].deadline;
    return best;
}

int model_timeout_ms(const struct model *m, uint64_t now, uint64_t tick_ns,
                     int *timeout_ms)
{
    *timeout_ms = 0;
    if (tick_ns == 0)
        return ROTA_EINVAL;
    uint64_t next = model_next_deadline(m);
    if (next == ROTA_NEVER)
        *timeout_ms = -1;
    else if (next > now)
        *timeout_ms = (int)w_min64(
            w_div_ceil(w_mul(next - now, tick_ns), 1000000u), INT_MAX);
    return 0;
}

static bool eligible(const struct model *m, const struct model_timer *t)
{
    return t->pending && !t->deferred && t->deadline <= m->now;
}

int model_remaining(const struct model *m, uint32_t id, uint64_t *ticks)
{
    const struct model_timer *t = &m->t[id];
    *ticks = 0;
    if (!t->pending)
        return 0;
    if (t->deadline > m->now)
        *ticks = t->deadline - m->now;
    return 1;
}

bool model_due(const struct model *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (eligible(m, &m->t[i]))
            return true;
    return false;
}

/*
 * The next timer to fire: among the due timers with the earliest deadline,
 * the untouched one armed first, or any touched one (their place among
 * equal deadlines is unspecified).  `hint` picks among the legal choices.
 */
static long choose(const struct model *m, long hint)
{
    uint64_t best = ROTA_NEVER;
    long untouched = -1, touched = -1;

    for (size_t i = 0; i < m->n; i++)
        if (eligible(m, &m->t[i]) && m->t[i].deadline < best)
            best = m->t[i].deadline;
    if (best == ROTA_NEVER)
        return -1;
    for (size_t i = 0; i < m->n; i++) {
        const struct model_timer *t = &m->t[i];
        if (!eligible(m, t) || t->deadline != best)
            continue;
        long *slot = t->touched ? &touched : &untouched;
        if (*slot < 0 || t->seq < m->t[*slot].seq)
            *slot = (long)i;
    }
    if (hint >= 0 && (size_t)hint < m->n) {
        const struct model_timer *h = &m->t[hint];
        if (eligible(m, h) && h->deadline == best &&
            (h->touched || hint == untouched))
            return hint;
    }
    return untouched >= 0 ? untouched : touched;
}

/* The deadline after `fired` for a periodic timer; false when the schedule
 * would pass ROTA_MAX_DEADLINE. */
static bool next_period(const struct model *m, const struct model_timer *t,
                        uint64_t fired, uint64_t *next)
{
    struct wide n;
    uint64_t late = m->now - fired;

    if (late < t->period) /* nothing missed: the schedule, every policy */
        n = w_add(w_of(fired), w_of(t->period));
    else if (t->policy == ROTA_MISSED_BURST)
        n = w_add(w_of(fired), w_of(t->period));
    else if (t->policy == ROTA_MISSED_DELAY)
        n = w_add(w_of(m->now), w_of(t->period));
    else /* SKIP: the first point of the schedule strictly after now */
        n = w_add(w_of(fired), w_mul(late / t->period + 1, t->period));
    if (w_gt64(n, ROTA_MAX_DEADLINE))
        return false;
    *next = n.lo;
    return true;
}

int model_pass(struct model *m, uint64_t now, size_t max, bool callbacks,
               const uint32_t *hint, size_t nhint, model_hook *hook, void *arg,
               struct model_fire *out, size_t cap, size_t *fired)
{
    size_t count = 0;

    if (now > ROTA_MAX_DEADLINE)
        now = ROTA_MAX_DEADLINE;
    if (now < m->now) {
        m->stats.clock_backwards++;
        *fired = 0;
        return model_due(m);
    }
    m->now = now;
    m->in_pass = callbacks;
    while (count < max) {
        long id = choose(m, count < nhint ? (long)hint[count] : -1);
        if (id < 0)
            break;
        struct model_timer *t = &m->t[id];
        struct model_fire f = {0};
        uint64_t next;
        f.id = (uint32_t)id;
        f.deadline = t->deadline;
        f.late = now - t->deadline;
        f.touched = t->touched;
        f.has_late = true;
        m->stats.fired++;
        if (t->period != 0 && next_period(m, t, t->deadline, &next)) {
            t->deadline = next;
            t->seq = ++m->seq;
            t->touched = false;
        } else {
            t->pending = false;
            t->touched = false;
            m->pending--;
        }
        f.next = t->deadline;
        f.pending_after = t->pending;
        if (count < cap)
            out[count] = f;
        count++;
        if (hook != NULL)
            hook(m, count - 1, &f, arg);
    }
    m->in_pass = false;
    /* Timers deferred by the pass join the wheel now, in the order they were
     * armed, behind everything already pending (rota.h, CALLBACK CONTEXT). */
    for (;;) {
        long first = -1;
        for (size_t i = 0; i < m->n; i++)
            if (m->t[i].deferred &&
                (first < 0 || m->t[i].seq < m->t[first].seq))
                first = (long)i;
        if (first < 0)
            break;
        m->t[first].deferred = false;
        m->t[first].seq = ++m->seq;
    }
    *fired = count;
    return model_due(m);
}

size_t model_drain(struct model *m, uint32_t *out)
{
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++) {
        struct model_timer *t = &m->t[i];
        if (!t->pending)
            continue;
        t->pending = false;
        t->deferred = false;
        t->touched = false;
        out[k++] = (uint32_t)i;
        m->stats.drained++;
    }
    m->pending = 0;
    return k;
}

/* ------------------------------------------------------------ compare */

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static bool run_untouched(const struct model_fire *exp, size_t a, size_t b,
                          uint32_t id)
{
    for (size_t k = a; k < b; k++)
        if (exp[k].id == id)
            return !exp[k].touched;
    return false; /* not in the run: the multiset check reports it */
}

/* A run [a, b) with a touched timer: the same multiset of ids, and the
 * untouched ones in exactly the model's order. */
static int compare_touched_run(const struct model_fire *exp,
                               const struct model_fire *got, size_t a, size_t b,
                               char *msg, size_t msglen)
{
    size_t n = b - a, i, j;
    uint32_t *x = malloc(2 * n * sizeof *x), *y;
    int rc = 0;

    if (x == NULL) {
        snprintf(msg, msglen, "out of memory in model_compare");
        return -1;
    }
    y = x + n;
    for (i = 0; i < n; i++) {
        x[i] = exp[a + i].id;
        y[i] = got[a + i].id;
    }
    qsort(x, n, sizeof *x, cmp_u32);
    qsort(y, n, sizeof *y, cmp_u32);
    if (memcmp(x, y, n * sizeof *x) != 0) {
        snprintf(msg, msglen,
                 "fires %zu..%zu (deadline %llu, touched run): not the "
                 "same timers",
                 a, b - 1, (unsigned long long)exp[a].deadline);
        rc = -1;
    }
    for (i = a, j = a; rc == 0; i++, j++) {
        while (i < b && exp[i].touched)
            i++;
        while (j < b && !run_untouched(exp, a, b, got[j].id))
            j++;
        if (i >= b || j >= b) {
            if (i < b || j < b) {
                snprintf(msg, msglen, "untouched fires differ in run %zu..%zu",
                         a, b - 1);
                rc = -1;
            }
            break;
        }
        if (exp[i].id != got[j].id) {
            snprintf(msg, msglen,
                     "fire %zu: timer %u fired before timer %u, armed "
                     "earlier with the same deadline %llu",
                     j, got[j].id, exp[i].id,
                     (unsigned long long)exp[i].deadline);
            rc = -1;
        }
    }
    free(x);
    return rc;
}

int model_compare(const struct model_fire *exp, size_t nexp,
                  const struct model_fire *got, size_t ngot, char *msg,
                  size_t msglen)
{
    if (nexp != ngot) {
        size_t n = nexp < ngot ? nexp : ngot, k = 0;
        while (k < n && exp[k].id == got[k].id)
            k++;
        snprintf(msg, msglen,
                 "the wheel fired %zu timers, the model expects %zu (the "
                 "sequences agree up to fire %zu)",
                 ngot, nexp, k);
        return -1;
    }
    for (size_t a = 0, b; a < nexp; a = b) {
        bool touched = false;
        for (b = a; b < nexp && exp[b].deadline == exp[a].deadline; b++)
            touched |= exp[b].touched;
        if (touched) {
            if (compare_touched_run(exp, got, a, b, msg, msglen))
                return -1;
            continue;
        }
        for (size_t k = a; k < b; k++) {
            if (got[k].id != exp[k].id) {
                snprintf(msg, msglen,
                         "fire %zu: timer %u fired, model expects timer %u "
                         "(deadline %llu)",
                         k, got[k].id, exp[k].id,
                         (unsigned long long)exp[k].deadline);
                return -1;
            }
        }
    }
    for (size_t k = 0; k < nexp; k++) {
        if (got[k].has_late && got[k].late != exp[k].late) {
            snprintf(msg, msglen,
                     "fire %zu (timer %u): late %llu, model expects %llu "
                     "(deadline %llu)",
                     k, got[k].id, (unsigned long long)got[k].late,
                     (unsigned long long)exp[k].late,
                     (unsigned long long)exp[k].deadline);
            return -1;
        }
    }
    return 0;
}
