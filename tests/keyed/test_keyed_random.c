/* SPDX-License-Identifier: MIT */
/*
 * test_keyed_random.c - rota/keyed.h against a flat-array model, on a fake
 * clock, under random operation sequences.
 *
 * Each run replays one seeded stream of set / set_at / move / move_at /
 * remove / get / contains / advance / advance_max / drain on a map and on
 * the model (model/keyed_model.c), including operations made from
 * inside expire callbacks, and compares every result; 8-byte keys go to
 * the _u64 calls as numbers one time in two.  After each
 * operation (every few in long runs) rota_keyed_check() verifies the
 * structure.  The callback checks that an entry fires only when the model
 * says it is due, with the right value, gone from the map, never in the
 * pass that armed it, and in deadline order; after each complete advance
 * no entry is left due except those (re)armed during it.  Every other run
 * borrows keys (rota_keyed_config.borrow_keys): each set passes a fresh
 * copy of its key and poisons the copy it passed before, so a map that
 * still read the old one would miss the key.
 *
 * ROTA_SEED=n repeats a run; ROTA_TEST_SCALE=small shortens it for
 * valgrind.  keyed_random_catches_planted_lie proves the comparison can
 * fail: it lies to the model about one move and must see a check fail at
 * that operation (CTest runs it as a test of its own).
 */
#include <rota/keyed.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/keyed_model.h"

struct run {
    struct rota_keyed *map;
    struct keyed_model model;
    uint64_t rng;
    unsigned nkeys;
    uintptr_t next_value;
    int fired;               /* callbacks in the current advance */
    uint64_t last_untouched; /* deadline order of untouched entries */
    int depth;               /* nested callback operations */
    uint64_t ops;
    const char *stage;
    /* The planted fault: lie to the model about the first move at or
     * after operation 500; the operation it was planted at. */
    bool plant;
    uint64_t planted_op;
    uint64_t first_failed_op; /* the first random_op() a check failed in */
    /* borrow_keys: every set passes one of two copies of its key, kept
     * here, and poisons the other, so a map still reading a copy it was
     * told to drop misses the key (see borrow()). */
    bool borrow;
    unsigned char *copies; /* [key index][2][32] */
    unsigned char *which;  /* the copy key i's last set passed */
    unsigned char *stale;  /* the copy to poison once the set returned */
};

static struct run R;

static uint64_t rnd(uint64_t n) /* uniform-ish in [0, n) */
{
    return n == 0 ? 0 : h_rand(&R.rng) % n;
}

/* Key i: the empty key for 0, else its decimal digits, for one key in
 * five a suffix that makes it longer than a slot holds (8 bytes), for
 * another NUL bytes up to exactly 8 (the length the _u64 calls take), and
 * otherwise i % 3 NUL bytes, so keys differ in length, contents and
 * embedded zeros.  At most 23 bytes. */
static size_t make_key(unsigned i, unsigned char *buf)
{
    if (i == 0)
        return 0;
    size_t n =
        (size_t)snprintf((char *)buf, 32, i % 5 == 4 ? "%u-long-key" : "%u", i);
    unsigned zeros = i % 5 == 2 ? 8 - (unsigned)n : i % 3;
    for (unsigned z = 0; z < zeros; z++)
        buf[n++] = 0;
    return n;
}

/* Whether this operation passes its key as a number, to the _u64 calls:
 * an 8-byte key, one time in two; *k receives the number. */
static bool as_u64(const unsigned char *key, size_t len, uint64_t *k)
{
    if (len != 8 || rnd(2) == 0)
        return false;
    memcpy(k, key, sizeof *k);
    return true;
}

/* The index a key of make_key() was made from. */
static unsigned index_of(const void *key, size_t len)
{
    unsigned i = 0;
    const unsigned char *p = key;
    for (size_t k = 0; k < len && p[k] >= '0' && p[k] <= '9'; k++)
        i = i * 10 + (unsigned)(p[k] - '0');
    return i;
}

/* The pointer a set passes for this key: the key itself, or with
 * borrow_keys the copy not passed last time.  The other copy is still
 * the map's during the set; poison_stale() spoils it after. */
static const void *borrow(const void *key, size_t len)
{
    if (!R.borrow)
        return key;
    unsigned i = index_of(key, len);
    unsigned char *c = R.copies + (size_t)i * 64;
    unsigned w = R.which[i] ^= 1;
    memcpy(c + w * 32, key, len);
    R.stale = c + (w ^ 1) * 32;
    return c + w * 32;
}

static void poison_stale(void)
{
    if (R.stale != NULL)
        memset(R.stale, 0xee, 32);
    R.stale = NULL;
}

static uint64_t random_ttl(void)
{
    uint64_t r = rnd(100);
    if (r < 6)
        return 0;
    if (r < 36)
        return 1 + rnd(64);
    if (r < 76)
        return 1 + rnd(5000);
    if (r < 90)
        return 1 + rnd(300000);
    if (r < 98)
        return ROTA_NEVER;
    return ROTA_MAX_DEADLINE - rnd(3); /* saturates */
}

static uint64_t random_deadline(void)
{
    uint64_t now = R.model.now, r = rnd(100);
    if (r < 10)
        return now > 100 ? now - rnd(100) : 0; /* in the past */
    if (r < 95)
        return now + rnd(20000);
    return r < 98 ? ROTA_NEVER : UINT64_MAX - 1;
}

static void verify_check(int line)
{
    const char *why = NULL;
    if (rota_keyed_check(R.map, &why) != 0)
        FAIL_AT(__FILE__, line, "check after op %" PRIu64 " (%s): %s", R.ops,
                R.stage, why ? why : "?");
}

static void *new_value(void)
{
    return (void *)++R.next_value;
}

/* One random operation other than advance and drain, on both sides. */
static void random_op(void)
{
    unsigned char key[32];
    size_t len = make_key((unsigned)rnd(R.nkeys), key);
    void *got = NULL, *want = NULL;
    uint64_t r = rnd(100);
    unsigned long failed_before = h_failed;
    uint64_t op = ++R.ops;

    uint64_t k = 0;
    bool u64 = as_u64(key, len, &k);
    if (r < 30) {
        void *value = new_value();
        uint64_t ttl = random_ttl();
        uint64_t deadline = km_deadline_in(&R.model, ttl);
        R.stage = u64 ? "set_u64" : "set";
        CHECK_EQ_INT(u64 ? rota_keyed_set_u64_in(R.map, k, value, ttl, &got)
                         : rota_keyed_set_in(R.map, borrow(key, len), len,
                                             value, ttl, &got),
                     km_set(&R.model, key, len, value, deadline, &want));
        poison_stale();
        CHECK(got == want);
    } else if (r < 40) {
        void *value = new_value();
        uint64_t deadline = random_deadline();
        R.stage = u64 ? "set_u64_at" : "set_at";
        CHECK_EQ_INT(
            u64 ? rota_keyed_set_u64_at(R.map, k, value, deadline, &got)
                : rota_keyed_set_at(R.map, borrow(key, len), len, value,
                                    deadline, &got),
            km_set(&R.model, key, len, value, deadline, &want));
        poison_stale();
        CHECK(got == want);
    } else if (r < 58) {
        uint64_t ttl = random_ttl();
        uint64_t deadline = km_deadline_in(&R.model, ttl);
        R.stage = u64 ? "move_u64" : "move";
        if (R.plant && R.ops >= 500 && km_find(&R.model, key, len) != NULL) {
            R.plant = false; /* tell the model a different deadline */
            R.planted_op = R.ops;
            deadline = deadline == ROTA_NEVER ? R.model.now + 7 : ROTA_NEVER;
        }
        CHECK_EQ_INT(u64 ? rota_keyed_move_u64_in(R.map, k, ttl)
                         : rota_keyed_move_in(R.map, key, len, ttl),
                     km_move(&R.model, key, len, deadline));
    } else if (r < 64) {
        uint64_t deadline = random_deadline();
        R.stage = u64 ? "move_u64_at" : "move_at";
        CHECK_EQ_INT(u64 ? rota_keyed_move_u64_at(R.map, k, deadline)
                         : rota_keyed_move_at(R.map, key, len, deadline),
                     km_move(&R.model, key, len, deadline));
    } else if (r < 80) {
        R.stage = u64 ? "remove_u64" : "remove";
        CHECK_EQ_INT(u64 ? rota_keyed_remove_u64(R.map, k, &got)
                         : rota_keyed_remove(R.map, key, len, &got),
                     km_remove(&R.model, key, len, &want));
        CHECK(got == want);
    } else {
        R.stage = "get";
    }
    /* The key's whole state after any operation: presence, value,
     * deadline. */
    uint64_t deadline = 0;
    struct km_entry *e = km_find(&R.model, key, len);
    CHECK_EQ_INT(u64 ? rota_keyed_get_u64(R.map, k, &got, &deadline)
                     : rota_keyed_get(R.map, key, len, &got, &deadline),
                 e != NULL);
    CHECK_EQ_INT(rota_keyed_contains(R.map, key, len), e != NULL);
    if (e != NULL) {
        CHECK(got == e->value);
        CHECK_EQ_U64(deadline, e->deadline);
    }
    CHECK_EQ_INT(rota_keyed_count(R.map), R.model.n);
    if (h_failed > failed_before && R.first_failed_op == 0)
        R.first_failed_op = op;
}

static void on_expire(struct rota_keyed *map, const void *key, size_t len,
                      void *value, void *arg)
{
    struct km_entry *e = km_find(&R.model, key, len);

    (void)arg;
    R.fired++;
    if (e == NULL) {
        FAIL_MSG("op %" PRIu64 ": fired a key the "
                 "model does not hold",
                 R.ops);
        return;
    }
    if (e->deadline == ROTA_NEVER || e->deadline > R.model.now)
        FAIL_MSG("op %" PRIu64 ": fired early: "
                 "deadline %" PRIu64 ", now %" PRIu64,
                 R.ops, e->deadline, R.model.now);
    if (e->pass == R.model.pass && e->strict)
        FAIL_MSG("op %" PRIu64 ": fired in the pass "
                 "that armed it",
                 R.ops);
    if (e->pass != R.model.pass) {
        if (e->deadline < R.last_untouched)
            FAIL_MSG("op %" PRIu64 ": out of deadline "
                     "order",
                     R.ops);
        R.last_untouched = e->deadline;
    }
    CHECK(value == e->value);
    CHECK(!rota_keyed_contains(map, key, len)); /* gone before the call */
    km_remove(&R.model, key, len, NULL);
    CHECK_EQ_INT(rota_keyed_count(map), R.model.n);

    /* Use the map from inside the callback, the same key included. */
    if (R.depth == 0 && rnd(4) == 0) {
        R.depth++;
        if (rnd(3) == 0) {
            void *v = new_value();
            uint64_t ttl = rnd(3) == 0 ? 0 : random_ttl();
            CHECK_EQ_INT(
                rota_keyed_set_in(map, borrow(key, len), len, v, ttl, NULL),
                km_set(&R.model, key, len, v, km_deadline_in(&R.model, ttl),
                       NULL));
            poison_stale();
        }
        for (int i = (int)rnd(4); i > 0; i--)
            random_op();
        CHECK_EQ_INT(rota_keyed_advance(map, R.model.now + 1), ROTA_EBUSY);
        CHECK_EQ_INT(rota_keyed_destroy(map), ROTA_EBUSY);
        R.depth--;
    }
}

/* Entries due after a complete advance: only those (re)armed during it. */
static void verify_nothing_due(void)
{
    for (size_t i = 0; i < R.model.n; i++) {
        const struct km_entry *e = &R.model.e[i];
        if (e->deadline <= R.model.now && e->pass != R.model.pass) {
            FAIL_MSG("op %" PRIu64 ": due entry (deadline "
                     "%" PRIu64 ", now %" PRIu64 ") left by advance",
                     R.ops, e->deadline, R.model.now);
            return;
        }
    }
}

static void random_advance(void)
{
    uint64_t now = R.model.now, r = rnd(100);

    if (r < 5)
        now = now > 50 ? now - rnd(50) : now; /* backwards: fires nothing */
    else if (r < 30)
        now += rnd(2);
    else if (r < 80)
        now += rnd(100);
    else if (r < 97)
        now += rnd(5000);
    else
        now += rnd(400000);

    bool backwards = now < R.model.now;
    R.ops++;
    R.stage = "advance";
    km_begin_pass(&R.model, now);
    R.fired = 0;
    R.last_untouched = 0;
    if (rnd(5) == 0) {
        size_t max = (size_t)rnd(4), fired = 0;
        int rc = rota_keyed_advance_max(R.map, now, max, &fired);
        CHECK(rc == 0 || rc == 1);
        CHECK_EQ_INT(fired, R.fired);
        if (backwards) /* nothing fires; rc says whether any is due */
            CHECK_EQ_INT(fired, 0);
        else if (rc == 1 && fired < max) {
            /* Re-armed entries wait for the next call, or the limit went
             * on filing timers again (rota.h: it counts both).  A second,
             * unlimited call at the same time fires the rest. */
            km_begin_pass(&R.model, now);
            R.fired = 0;
            int rc2 = rota_keyed_advance(R.map, now);
            CHECK_EQ_INT(rc2, R.fired);
            verify_nothing_due();
        } else if (rc == 0)
            verify_nothing_due();
    } else {
        int rc = rota_keyed_advance(R.map, now);
        CHECK_EQ_INT(rc, R.fired);
        if (backwards) /* the wheel keeps its time and fires nothing */
            CHECK_EQ_INT(rc, 0);
        else
            verify_nothing_due();
    }
    CHECK_EQ_U64(rota_keyed_now(R.map), R.model.now);
    CHECK_EQ_INT(rota_keyed_count(R.map), R.model.n);
}

static void on_drain(struct rota_keyed *map, const void *key, size_t len,
                     void *value, void *arg)
{
    struct keyed_model *snapshot = arg;
    void *want = NULL;
    (void)map;
    if (km_remove(snapshot, key, len, &want) != 1)
        FAIL_MSG("drain handed back an unknown key (%zu bytes, %.*s)", len,
                 (int)len, (const char *)key);
    else
        CHECK(value == want);
}

static void drain_and_compare(void)
{
    R.ops++;
    R.stage = "drain";
    CHECK_EQ_INT(rota_keyed_drain(R.map, on_drain, &R.model), 0);
    CHECK_EQ_INT(R.model.n, 0); /* every model entry was handed back */
    CHECK_EQ_INT(rota_keyed_count(R.map), 0);
    CHECK_EQ_INT(rota_wheel_count(rota_keyed_wheel(R.map)), 0);
}

static void one_run(uint64_t seed, unsigned ops, bool plant, bool borrow_keys)
{
    static const unsigned key_spaces[] = {1, 8, 64, 1000, 20000};
    struct rota_keyed_config cfg = {.expire = on_expire};
    unsigned char hash_seed[ROTA_KEYED_SEED_SIZE];

    R = (struct run){.rng = seed, .plant = plant, .borrow = borrow_keys};
    R.nkeys = key_spaces[rnd(sizeof key_spaces / sizeof key_spaces[0])];
    cfg.borrow_keys = borrow_keys;
    if (borrow_keys) {
        R.copies = calloc(R.nkeys, 64);
        R.which = calloc(R.nkeys, 1);
        if (!CHECK(R.copies != NULL && R.which != NULL))
            return;
    }
    cfg.now = rnd(4) == 0 ? 0 : rnd(UINT64_C(1) << 40);
    for (size_t i = 0; i < sizeof hash_seed; i++)
        hash_seed[i] = (unsigned char)rnd(256);
    cfg.seed = hash_seed;
    CHECK_EQ_INT(rota_keyed_create(&R.map, &cfg), 0);
    km_init(&R.model, cfg.now);
    unsigned check_every = 1;

    for (unsigned i = 0; i < ops && h_failed == 0; i++) {
        uint64_t r = rnd(1000);
        if (r < 150)
            random_advance();
        else if (r < 152)
            drain_and_compare();
        else
            random_op();
        if (i % check_every == 0)
            verify_check(__LINE__);
    }
    /* The end of time: everything with a deadline expires. */
    R.stage = "final advance";
    int rc;
    do { /* again while callbacks re-arm keys */
        km_begin_pass(&R.model, UINT64_MAX);
        R.fired = 0;
        R.last_untouched = 0;
        rc = rota_keyed_advance(R.map, UINT64_MAX);
        CHECK_EQ_INT(rc, R.fired);
        verify_nothing_due();
    } while (rc > 0 && h_failed == 0);
    verify_check(__LINE__);
    for (size_t i = 0; i < R.model.n; i++)
        CHECK_EQ_U64(R.model.e[i].deadline, ROTA_NEVER);
    drain_and_compare();
    verify_check(__LINE__);
    CHECK_EQ_INT(rota_keyed_destroy(R.map), 0);
    km_free(&R.model);
    free(R.copies);
    free(R.which);
}

/* Runs use seeds base, base + 1, ...: ROTA_SEED=<the seed a failing run
 * printed> repeats that run first.  Stops at the first failing run. */
TEST(keyed_map_matches_the_model_in_random_runs)
{
    uint64_t base = h_seed();
    unsigned runs = h_small() ? 6 : 60;
    unsigned ops = h_small() ? 3000 : 20000;

    for (unsigned r = 0; r < runs && h_failed == 0; r++) {
        one_run(base + r, ops, false, r % 2 == 1);
        if (h_failed != 0)
            fprintf(stderr, "failed: repeat with ROTA_SEED=%" PRIu64 "\n",
                    base + r);
    }
    CHECK(runs > 0);
}

/* The comparison catches a lie: the model is told a different deadline
 * for one move, and a check must fail at that very operation (the key's
 * deadline is compared right after it). */
TEST(keyed_random_catches_planted_lie)
{
    uint64_t base = h_seed();
    unsigned long failed = 0;
    uint64_t planted = 0, seen_at = 0;

    for (unsigned r = 0; r < 20 && planted == 0; r++) {
        unsigned long mark = h_expect_begin();
        one_run(base + r, 3000, true, r % 2 == 1);
        unsigned long caught = h_expect_end(mark);
        if (R.planted_op != 0) {
            planted = R.planted_op;
            failed = caught;
            seen_at = R.first_failed_op;
        }
    }
    if (!CHECK(planted != 0)) /* a run of 3,000 ops always moves a key */
        return;
    printf("lie planted at op %" PRIu64 "; %lu check(s) failed, the first "
           "at op %" PRIu64 "\n",
           planted, failed, seen_at);
    CHECK(failed > 0);
    CHECK_EQ_U64(seen_at, planted);
}

static const struct h_test tests[] = {
    H_TEST(keyed_random_catches_planted_lie),
    H_TEST(keyed_map_matches_the_model_in_random_runs),
};

int main(int argc, char **argv)
{
    return h_main(argc, argv, tests, H_COUNT(tests));
}
