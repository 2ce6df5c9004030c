/* SPDX-License-Identifier: MIT */
/*
 * service_stage.c - rota/service.h: staging, where a shard's timers wait
 * before they enter its wheel (band lists and the far vector), and its
 * part of rota_service_check().  The rest of the design is in the essay at
 * the top of service.c.
 *
 * STAGING
 *   A wheel moves a high-level slot's timers down all at once when the slot
 *   comes due (a cascade), and its exact next deadline scans the earliest
 *   slot.  When one thread arms 1e5 timers over a second,
 *   each slot at level 3 (2^18 ticks, 262 ms of 1 us ticks) holds ~26000
 *   of them: the scan and the cascade each held the shard's lock and the
 *   service thread for ~4 ms at every such boundary, and the timers due
 *   then fired up to 8 ms late (S2: p99 3 ms).  So a timer due more than a
 *   band (STAGE_SHIFT: 2048 ticks) ahead does not go to the wheel at
 *   once: it waits on its shard's list for its band (O(1), FIFO), and the
 *   service thread moves each band into the wheel before the band before
 *   it starts: once a pass has fired what is due, STAGE_SLICE records at
 *   a time with a look at the clock between slices (it stops to fire a
 *   timer that comes due, so a move never makes one late), or, if it
 *   overslept the move, STAGE_BATCH per lock hold before it advances the
 *   wheel.  A
 *   timer thus enters the wheel at most two bands before its deadline,
 *   where it is filed low and cascades in small groups, and the service
 *   thread's work is spread evenly over time.  Bands beyond STAGE_BANDS
 *   go to the wheel directly.  The rule depends only on the deadline and
 *   on the shard's band cursor (stage_next), under the shard lock, so
 *   timers with equal deadlines armed by one thread still enter the wheel
 *   in arm order.  A staged timer is LIVE and not in the wheel; cancel,
 *   touch and stop take it off its list.  Before it sleeps, the service
 *   thread moves early any band whose move would come before the wheel's
 *   next deadline, so it still sleeps exactly until the next deadline and
 *   never wakes only to move a band.
 *
 * FAR STAGING
 *   Most request timeouts are seconds away and cancelled long before they
 *   come due (S1: 1..60 s).  Filed in the wheel or on a
 *   band list, such a timer is a node of a long doubly linked list: its
 *   cancel writes both neighbours and its arm the old tail, three records
 *   at random, and each store miss is waited for at the next locked
 *   instruction (the unlock, the next lock).  So a timer due in the
 *   FAR_BANDS bands from far_from on (past the band lists, 134 s) is
 *   appended to the shard's far vector instead, entries of {record, band}
 *   in arm order; the record keeps its entry's position, and a cancel or
 *   touch sets the entry's bit in a hole bitmap of one bit per entry, small
 *   enough to stay in cache.  A pair then costs the misses on its own
 *   record only (S1: ~25% less CPU per pair than on the lists).  When the
 *   band lists' cursor comes within half their horizon of far_from, the
 *   service thread scans the vector (STAGE_BATCH entries per lock hold, in
 *   order): entries due before the lists' end go onto the band lists, the
 *   rest close up over the holes, then far_from moves to the lists' end.
 *   A full vector closes its holes if they are half of it, else
 *   doubles; if it cannot grow it closes what holes it has, and without
 *   any the timer is filed as if there were no far vector.  Arm order
 *   holds: a timer goes to the far vector only while its band is at or
 *   after far_from, the scan moves entries in vector order, and a timer
 *   armed during a scan for a band the scan will move is appended behind
 *   the entries it will move first.  The scan's time joins the band moves in
 *   the sleep rule of STAGING, so the thread never wakes only to scan.
 */
#define _POSIX_C_SOURCE 200809L /* pthreads */
#include <string.h>

#include "service_internal.h"

#define BAD(text)                                                              \
    do {                                                                       \
        *why = (text);                                                         \
        return ROTA_ECORRUPT;                                                  \
    } while (0)

void rota__service_stage_init(struct shard *sh, uint64_t now)
{
    /* Bands up to now's next one go to the wheel directly. */
    sh->stage_next = (now >> STAGE_SHIFT) + 2;
    sh->staged = 0;
    memset(sh->stage_occ, 0, sizeof sh->stage_occ);
    sh->far = NULL;
    sh->far_dead = NULL;
    sh->far_len = sh->far_cap = sh->far_live = 0;
    sh->far_scanning = false;
    sh->far_from = sh->stage_next + STAGE_BANDS;
}

/* The far vector and its hole bitmap, in one block. */
static size_t far_bytes(uint32_t cap)
{
    return (size_t)cap * sizeof(struct far_ent) + cap / 8;
}

static bool far_hole(const struct shard *sh, uint32_t k)
{
    return (sh->far_dead[k / 64] >> (k % 64)) & 1u;
}

static void far_set_hole(struct shard *sh, uint32_t k, bool hole)
{
    uint64_t bit = (uint64_t)1 << (k % 64);
    if (hole)
        sh->far_dead[k / 64] |= bit;
    else
        sh->far_dead[k / 64] &= ~bit;
}

void rota__service_stage_fini(struct shard *sh)
{
    rota__service_free(sh->svc, sh->far, far_bytes(sh->far_cap));
    sh->far = NULL;
    sh->far_dead = NULL;
    sh->far_cap = 0;
}

/* The band of a far entry: at or after far_from, less than 2^32 on. */
static uint64_t far_band(const struct shard *sh, const struct far_ent *e)
{
    return sh->far_from + (uint32_t)(e->band - (uint32_t)sh->far_from);
}

/* Squeeze the holes out of the far vector, keeping the order; no scan
 * runs.  Each moved record learns its new place (independent misses). */
static void far_compact(struct shard *sh)
{
    uint32_t wr = 0;
    for (uint32_t rd = 0; rd < sh->far_len; rd++) {
        if (far_hole(sh, rd))
            continue;
        if (wr != rd) {
            struct far_ent e = sh->far[rd];
            sh->far[wr] = e;
            far_set_hole(sh, wr, false);
            rec_at(sh->svc, e.index)->snext = wr;
        }
        wr++;
    }
    sh->far_len = wr;
}

/* Double the far vector; false if the allocator says no. */
static bool far_grow(struct shard *sh)
{
    uint32_t cap = sh->far_cap != 0 ? 2 * sh->far_cap : FAR_MIN_CAP;
    if (cap <= sh->far_cap || cap > UINT32_MAX / 2)
        return false;
    struct far_ent *v = rota__service_alloc(sh->svc, far_bytes(cap));
    if (v == NULL)
        return false;
    uint64_t *dead = (uint64_t *)(void *)(v + cap);
    memset(dead, 0, cap / 8);
    if (sh->far_len != 0) {
        memcpy(v, sh->far, sh->far_len * sizeof *v);
        memcpy(dead, sh->far_dead, sh->far_cap / 8);
    }
    rota__service_free(sh->svc, sh->far, far_bytes(sh->far_cap));
    sh->far = v;
    sh->far_dead = dead;
    sh->far_cap = cap;
    return true;
}

/* Append the record to the far vector; false if it is full and can
 * neither close holes (none, or a scan runs) nor grow: the caller files
 * the record on a band list or in the wheel instead. */
static __attribute__((noinline)) bool far_make_room(struct shard *sh)
{
    uint32_t holes = sh->far_len - sh->far_live;
    bool can_compact = !sh->far_scanning && holes != 0;
    if (can_compact && holes >= sh->far_len / 2)
        far_compact(sh);
    else if (!far_grow(sh)) {
        if (!can_compact)
            return false;
        far_compact(sh);
    }
    return true;
}

static bool far_push(struct shard *sh, struct rec *r, uint64_t band,
                     uint64_t deadline)
{
    /* The full vector's work is out of line: the append that is left
     * saves no registers. */
    if (sh->far_len == sh->far_cap && !far_make_room(sh))
        return false;
    r->sband = STAGE_FAR;
    r->soff = (uint16_t)(deadline & ((1u << STAGE_SHIFT) - 1u));
    r->snext = sh->far_len;
    far_set_hole(sh, sh->far_len, false);
    sh->far[sh->far_len++] = (struct far_ent){r->index, (uint32_t)band};
    sh->far_live++;
    return true;
}

/* Take a staged record off its band list or the far vector.  The shard's
 * lock is held. */
void rota__service_unstage(struct shard *sh, struct rec *r)
{
    if (r->sband == STAGE_FAR) {
        /* A bit in a small bitmap, not the entry: no line of the vector
         * or of a neighbouring record is touched (a miss each). */
        far_set_hole(sh, r->snext, true);
        sh->far_live--;
        r->sband = STAGE_NONE;
        return;
    }
    unsigned b = r->sband;
    if (r->sprev != NIL)
        rec_at(sh->svc, r->sprev)->snext = r->snext;
    else
        sh->stage_head[b] = r->snext;
    if (r->snext != NIL)
        rec_at(sh->svc, r->snext)->sprev = r->sprev;
    else
        sh->stage_tail[b] = r->sprev;
    if (sh->stage_head[b] == NIL)
        sh->stage_occ[b / 64] &= ~((uint64_t)1 << (b % 64));
    r->sband = STAGE_NONE;
    sh->staged--;
}

/* Put the record into the wheel.  A one-shot arm writes nothing on the
 * record's second line (struct rec), so a one-shot record's period (in
 * pt.sched_) is cleared here, where that line is written anyway: the core
 * fires the timer of a struct rota_periodic once only while its period is
 * 0, and a record that was periodic in an earlier generation still has
 * one. */
static void wheel_file(struct shard *sh, struct rec *r, uint64_t deadline)
{
    if (rec_periodic(r)) {
        rota_periodic_arm_at(&sh->wheel, &r->pt, deadline,
                             rota__sched_period(r->pt.sched_),
                             rota__sched_missed(r->pt.sched_));
        return;
    }
    r->pt.sched_ = rota__sched(0, ROTA_MISSED_SKIP);
    rota_timer_arm_at(&sh->wheel, &r->pt.timer, deadline);
}

/* The band number of list `b`, which holds a band in [stage_next,
 * stage_next + STAGE_BANDS). */
static uint64_t band_of_list(const struct shard *sh, unsigned b)
{
    uint64_t first = sh->stage_next;
    uint64_t k = (b - (first % STAGE_BANDS)) % STAGE_BANDS;
    return first + k;
}

/* Put the record in the wheel at `deadline`, or on its band's list when
 * that band is staged.  The shard's lock is held and the record is in
 * neither.  The caller wakes the service thread by the deadline, not by the
 * band's move: before it sleeps the thread moves every band whose move
 * comes before its wheel's next deadline (next_deadline()), so a staged
 * timer due after that sleep ends is moved in time without a wake-up. */
void rota__service_file(struct shard *sh, struct rec *r, uint64_t deadline,
                        bool far_ok)
{
    uint64_t band = deadline >> STAGE_SHIFT;
    if (far_ok && band >= sh->far_from && band - sh->far_from < FAR_BANDS &&
        far_push(sh, r, band, deadline))
        return;
    if (band >= sh->stage_next && band - sh->stage_next < STAGE_BANDS) {
        unsigned b = (unsigned)(band % STAGE_BANDS);
        uint64_t bit = (uint64_t)1 << (b % 64);
        r->sband = (uint16_t)b;
        r->soff = (uint16_t)(deadline & ((1u << STAGE_SHIFT) - 1u));
        r->snext = NIL;
        if (sh->stage_occ[b / 64] & bit) {
            r->sprev = sh->stage_tail[b];
            rec_at(sh->svc, r->sprev)->snext = r->index;
        } else {
            r->sprev = NIL;
            sh->stage_head[b] = r->index;
            sh->stage_occ[b / 64] |= bit;
        }
        sh->stage_tail[b] = r->index;
        sh->staged++;
        return;
    }
    r->sband = STAGE_NONE;
    wheel_file(sh, r, deadline);
}

/*
 * One step of a far scan, at most *budget entries: every entry due before
 * the target goes to the band lists (or the wheel), in vector order, the
 * rest close up behind them.  Returns true once the scan has ended.
 */
static bool far_scan(struct shard *sh, unsigned *budget)
{
    if (!sh->far_scanning) {
        sh->far_target = sh->stage_next + STAGE_BANDS;
        if (sh->far_live == 0) { /* nothing to move: drop the holes */
            sh->far_len = 0;
            sh->far_from = sh->far_target;
            return true;
        }
        sh->far_scanning = true;
        sh->far_rd = sh->far_wr = 0;
    }
    while (sh->far_rd < sh->far_len) {
        if (*budget == 0)
            return false;
        (*budget)--;
        uint32_t k = sh->far_rd++;
        if (far_hole(sh, k))
            continue;
        struct far_ent e = sh->far[k];
        struct rec *r = rec_at(sh->svc, e.index);
        uint64_t band = far_band(sh, &e);
        if (band < sh->far_target) {
            sh->far_live--;
            rota__service_file(sh, r, band << STAGE_SHIFT | r->soff, false);
            continue;
        }
        if (sh->far_wr != k) {
            sh->far[sh->far_wr] = e;
            far_set_hole(sh, sh->far_wr, false);
            r->snext = sh->far_wr;
        }
        sh->far_wr++;
    }
    sh->far_len = sh->far_wr;
    sh->far_from = sh->far_target;
    sh->far_scanning = false;
    return true;
}

/*
 * Move the bands that start at most one band after `now` into the wheel
 * (`ahead`), or only those that have started (not `ahead`: the bands that
 * may hold timers due at `now`), at most `budget` records or far entries
 * (at least 1); the shard's lock is held.  Before the band lists' cursor
 * comes within half a horizon of far_from, a far scan moves the far timers
 * due within the horizon onto the lists.  Returns true if work remains.
 */
bool rota__service_stage_pump(struct shard *sh, uint64_t now, bool ahead,
                              unsigned budget)
{
    uint64_t last = (now >> STAGE_SHIFT) + (ahead ? 1u : 0u);
    for (;;) {
        /* Only pumps move stage_next, so in a steady pass the scan falls
         * due in an `ahead` pump, after the pass's fires. */
        if (sh->far_scanning ||
            sh->far_from <= sh->stage_next + STAGE_BANDS / 2) {
            if (!far_scan(sh, &budget))
                return true;
            continue;
        }
        if (sh->stage_next > last)
            return false;
        if (sh->staged == 0) { /* skip ahead, but not past a far scan */
            /* As at init: the band after now's goes to the wheel directly
             * (else a timer armed for it would be staged and moved at once
             * by the next look for work ahead). */
            uint64_t to = (now >> STAGE_SHIFT) + 2,
                     cap = sh->far_from - STAGE_BANDS / 2;
            sh->stage_next = to < cap ? to : cap;
            continue;
        }
        unsigned b = (unsigned)(sh->stage_next % STAGE_BANDS);
        uint64_t bit = (uint64_t)1 << (b % 64);
        uint64_t base = sh->stage_next << STAGE_SHIFT;
        while (sh->stage_occ[b / 64] & bit) { /* in arm order */
            if (budget == 0)
                return true;
            budget--;
            struct rec *r = rec_at(sh->svc, sh->stage_head[b]);
            rota__service_unstage(sh, r);
            uint64_t deadline = base | r->soff;
            wheel_file(sh, r, deadline);
        }
        sh->stage_next++;
    }
}

/* The tick at which the service thread must next move a band of the shard
 * or scan its far vector (ROTA_NEVER if nothing is staged); the shard's
 * lock is held. */
uint64_t rota__service_stage_next(const struct shard *sh)
{
    uint64_t far = ROTA_NEVER;
    if (sh->far_scanning)
        return 0;
    /* A pump at `now` brings stage_next to (now >> STAGE_SHIFT) + 2, and
     * scans when that is within half a horizon of far_from. */
    if (sh->far_live != 0)
        far = (sh->far_from - STAGE_BANDS / 2 - 2) << STAGE_SHIFT;
    if (sh->staged == 0)
        return far;
    unsigned start = (unsigned)(sh->stage_next % STAGE_BANDS);
    for (unsigned k = 0; k <= STAGE_BANDS / 64; k++) {
        unsigned word = (start / 64 + k) % (STAGE_BANDS / 64);
        uint64_t bits = sh->stage_occ[word];
        if (k == 0) /* the lists before start come last, not first */
            bits &= ~(uint64_t)0 << (start % 64);
        else if (k == STAGE_BANDS / 64)
            bits &= ~(~(uint64_t)0 << (start % 64));
        if (bits == 0)
            continue;
        unsigned b = word * 64 + (unsigned)__builtin_ctzll(bits);
        uint64_t band = band_of_list(sh, b);
        uint64_t move = (band - 1) << STAGE_SHIFT;
        return move < far ? move : far;
    }
    return far; /* not reached: staged != 0 */
}

/* ------------------------------------------------------------ checking */

/* For rota_service_check(): the shard's band lists are well linked, each
 * record on the list of its band, as many as counted; the far vector's
 * entries and records agree.  `n` records exist; the shard's lock is held.
 * 0, or ROTA_ECORRUPT with the violation in *why. */
int rota__service_stage_check(struct rota_service *svc, struct shard *sh,
                              uint32_t n, const char **why)
{
    uint64_t count = 0;
    for (unsigned b = 0; b < STAGE_BANDS; b++) {
        if (!(sh->stage_occ[b / 64] & ((uint64_t)1 << (b % 64))))
            continue;
        uint32_t prev = NIL;
        for (uint32_t i = sh->stage_head[b]; i != NIL;) {
            if (i >= n)
                BAD("band list runs out of the slab");
            struct rec *r = rec_at(svc, i);
            if (r->sband != b || r->sprev != prev)
                BAD("band list badly linked");
            if (!(atomic_load_explicit(&r->word, memory_order_relaxed) &
                  F_LIVE))
                BAD("ended timer still staged");
            if (++count > sh->staged)
                BAD("band lists hold more records than counted");
            prev = i;
            i = r->snext;
        }
        if (prev == NIL || sh->stage_tail[b] != prev)
            BAD("band list tail is wrong");
    }
    if (count != sh->staged)
        BAD("band lists hold fewer records than counted");
    /* The far vector: each entry names a live record that points back at
     * it, with a band at or after far_from; as many as counted. */
    count = 0;
    if (sh->far_len > sh->far_cap)
        BAD("far vector longer than its capacity");
    for (uint32_t k = 0; k < sh->far_len; k++) {
        if (sh->far_scanning && k >= sh->far_wr && k < sh->far_rd)
            continue;
        if ((sh->far_dead[k / 64] >> (k % 64)) & 1u)
            continue;
        uint32_t i = sh->far[k].index;
        if (i >= n)
            BAD("far entry runs out of the slab");
        struct rec *r = rec_at(svc, i);
        if (r->sband != STAGE_FAR || r->snext != k)
            BAD("far entry and its record disagree");
        if (!(atomic_load_explicit(&r->word, memory_order_relaxed) & F_LIVE))
            BAD("ended timer still on the far vector");
        uint32_t lag = sh->far[k].band - (uint32_t)sh->far_from;
        if (!sh->far_scanning && lag >= FAR_BANDS)
            BAD("far entry outside the far horizon");
        count++;
    }
    if (count != sh->far_live)
        BAD("far vector holds a different number of records than counted");
    if (sh->far_from < sh->stage_next ||
        sh->far_from > sh->stage_next + STAGE_BANDS)
        BAD("far horizon out of step with the band lists");
    return 0;
}
