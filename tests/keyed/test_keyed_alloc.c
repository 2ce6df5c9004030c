/* SPDX-License-Identifier: MIT */
/*
 * test_keyed_alloc.c - out of memory at every allocation of rota/keyed.h.
 *
 * One fixed operation script (create, inserts that grow the table,
 * replaces, moves, removals that shrink it, expiries whose callbacks set
 * keys again, drains, inserts after a drain, destroy) runs again and again
 * with an allocator that fails its Nth allocation, for N = 1, 2, ... until
 * the script runs with no allocation failing.  After every call that
 * returns ROTA_ENOMEM, every entry (key, value, deadline) must be exactly
 * as the model says, rota_keyed_check() must pass, and at the end every
 * byte must be back.  A second pass fails every allocation from the Nth on
 * (memory stays exhausted), for every 5th N (25th with
 * ROTA_TEST_SCALE=small).
 */
#include <rota/keyed.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model/keyed_model.h"

struct failing {
    uint64_t calls;   /* allocations asked for in this run */
    uint64_t fail_at; /* 1-based; 0 never */
    bool persistent;  /* fail every call from fail_at on */
    uint64_t failures;
    size_t live_bytes, live_blocks;
};

static void *fail_alloc(void *ctx, size_t size)
{
    struct failing *f = ctx;
    f->calls++;
    if (f->fail_at != 0 &&
        (f->calls == f->fail_at || (f->persistent && f->calls > f->fail_at))) {
        f->failures++;
        return NULL;
    }
    void *p = malloc(size);
    if (p != NULL) {
        f->live_bytes += size;
        f->live_blocks++;
    }
    return p;
}

static void fail_free(void *ctx, void *ptr, size_t size)
{
    struct failing *f = ctx;
    f->live_bytes -= size;
    f->live_blocks--;
    free(ptr);
}

static struct {
    struct rota_keyed *map;
    struct keyed_model model;
    uint64_t rng;
    uint64_t step;
    uint64_t enomem; /* ROTA_ENOMEM results seen */
} S;

static uint64_t total_enomem; /* over all runs */

static size_t make_key(unsigned i, unsigned char *buf)
{
    /* Lengths from 1 to 40 bytes, so entries differ in size. */
    size_t len = 1 + i % 40;
    for (size_t b = 0; b < len; b++)
        buf[b] = (unsigned char)(i * 31 + b);
    buf[0] = (unsigned char)i;
    buf[len - 1] = (unsigned char)(i >> 8);
    return len;
}

/* Every entry is exactly as the model says. */
static void verify_intact(int line)
{
    const char *why = NULL;
    if (rota_keyed_check(S.map, &why) != 0)
        FAIL_AT(__FILE__, line, "step %" PRIu64 ": check: %s", S.step,
                why ? why : "?");
    if (rota_keyed_count(S.map) != S.model.n)
        FAIL_AT(__FILE__, line, "step %" PRIu64 ": count %zu, model %zu",
                S.step, rota_keyed_count(S.map), S.model.n);
    for (size_t i = 0; i < S.model.n; i++) {
        const struct km_entry *e = &S.model.e[i];
        void *value = NULL;
        uint64_t deadline = 0;
        if (rota_keyed_get(S.map, e->key, e->len, &value, &deadline) != 1 ||
            value != e->value || deadline != e->deadline) {
            FAIL_AT(__FILE__, line, "step %" PRIu64 ": entry changed", S.step);
            return;
        }
    }
}

/* A set on both sides; the model follows only what succeeded. */
static void do_set(const unsigned char *key, size_t len, uint64_t ttl)
{
    void *value = (void *)(uintptr_t)(S.step * 1000 + len);
    int rc = rota_keyed_set_in(S.map, key, len, value, ttl, NULL);
    if (rc == ROTA_ENOMEM) {
        S.enomem++;
        total_enomem++;
        if (km_find(&S.model, key, len) != NULL)
            FAIL_MSG("ENOMEM replacing an existing key");
        verify_intact(__LINE__);
        return;
    }
    CHECK_EQ_INT(rc, km_set(&S.model, key, len, value,
                            km_deadline_in(&S.model, ttl), NULL));
}

static void on_expire(struct rota_keyed *map, const void *key, size_t len,
                      void *value, void *arg)
{
    (void)map, (void)value, (void)arg;
    km_remove(&S.model, key, len, NULL);
    /* Keys whose first byte is a multiple of 3 come back: an allocation
     * inside a callback, which may fail too. */
    if (((const unsigned char *)key)[0] % 3 == 0)
        do_set(key, len, 5 + len);
}

static void drop(struct rota_keyed *map, const void *key, size_t len,
                 void *value, void *arg)
{
    (void)map, (void)key, (void)len, (void)value, (void)arg;
}

static void script(void)
{
    unsigned char key[64];

    for (unsigned round = 0; round < 3; round++) {
        /* Grow: 150 new keys (several resizes), some without deadline. */
        for (unsigned i = 0; i < 150; i++) {
            S.step++;
            size_t len = make_key(i + round * 7, key);
            do_set(key, len, i % 5 == 0 ? ROTA_NEVER : 1 + (i * 37) % 200);
        }
        /* Replace and move: never allocate, never fail. */
        for (unsigned i = 0; i < 60; i++) {
            S.step++;
            size_t len = make_key(i * 2, key);
            do_set(key, len, (i * 13) % 150);
            len = make_key(i * 2 + 1, key);
            uint64_t ttl = i % 4 == 0 ? ROTA_NEVER : (i * 11) % 300;
            CHECK_EQ_INT(
                rota_keyed_move_in(S.map, key, len, ttl),
                km_move(&S.model, key, len, km_deadline_in(&S.model, ttl)));
        }
        /* Expire some (callbacks insert again), then shrink by removal. */
        for (unsigned t = 0; t < 4; t++) {
            S.step++;
            uint64_t now = rota_keyed_now(S.map) + 40;
            km_begin_pass(&S.model, now);
            CHECK(rota_keyed_advance(S.map, now) >= 0);
        }
        for (unsigned i = 0; i < 170; i++) {
            S.step++;
            size_t len = make_key(i + round * 7, key);
            CHECK_EQ_INT(rota_keyed_remove(S.map, key, len, NULL),
                         km_remove(&S.model, key, len, NULL));
        }
        verify_intact(__LINE__);
        if (round == 1) { /* drain frees the table: the next insert needs one */
            S.step++;
            CHECK_EQ_INT(rota_keyed_drain(S.map, drop, NULL), 0);
            while (S.model.n > 0)
                km_remove(&S.model, S.model.e[0].key, S.model.e[0].len, NULL);
            verify_intact(__LINE__);
        }
    }
}

/* One run of the script with allocation N failing; false when no
 * allocation failed (the script has fewer than N). */
static bool run_with_failure(uint64_t n, bool persistent)
{
    struct failing f = {.fail_at = n, .persistent = persistent};
    struct rota_allocator a = {fail_alloc, fail_free, &f};
    static const unsigned char seed[ROTA_KEYED_SEED_SIZE] = {42};
    struct rota_keyed_config cfg = {
        .allocator = &a, .expire = on_expire, .seed = seed, .now = 1000000};

    memset(&S, 0, sizeof S);
    int rc = rota_keyed_create(&S.map, &cfg);
    if (rc == ROTA_ENOMEM) {
        CHECK_EQ_INT(f.live_blocks, 0);
        return true;
    }
    CHECK_EQ_INT(rc, 0);
    km_init(&S.model, cfg.now);
    script();
    /* Drain at the end too, then use the map again. */
    S.step++;
    CHECK_EQ_INT(rota_keyed_drain(S.map, drop, NULL), 0);
    while (S.model.n > 0)
        km_remove(&S.model, S.model.e[0].key, S.model.e[0].len, NULL);
    verify_intact(__LINE__);
    for (unsigned i = 0; i < 20; i++) {
        unsigned char key[64];
        size_t len = make_key(i, key);
        S.step++;
        do_set(key, len, 10);
    }
    verify_intact(__LINE__);
    CHECK_EQ_INT(rota_keyed_destroy(S.map), 0);
    CHECK_EQ_INT(f.live_bytes, 0);
    CHECK_EQ_INT(f.live_blocks, 0);
    km_free(&S.model);
    return f.failures != 0;
}

TEST(every_allocation_fails_once)
{
    uint64_t n = 1;
    while (run_with_failure(n, false) && h_failed == 0)
        n++;
    printf("failed each of the script's %" PRIu64 " allocations in turn: "
           "%" PRIu64 " calls returned ROTA_ENOMEM, the other failures were "
           "absorbed (table growth)\n",
           n - 1, total_enomem);
    CHECK(n > 300);          /* the script really allocates */
    CHECK(total_enomem > 0); /* and the failure path really ran */
}

TEST(memory_stays_exhausted)
{
    uint64_t step = h_small() ? 25 : 5; /* ROTA_TEST_SCALE=small */
    for (uint64_t n = 1; run_with_failure(n, true) && h_failed == 0; n += step)
        ;
}

static const struct h_test tests[] = {
    H_TEST(every_allocation_fails_once),
    H_TEST(memory_stays_exhausted),
};

int main(int argc, char **argv)
{
    return h_main(argc, argv, tests, H_COUNT(tests));
}
