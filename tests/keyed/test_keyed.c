/* SPDX-License-Identifier: MIT */
/*
 * test_keyed.c - unit tests for rota/keyed.h: every operation, and each
 * bug that keyed timer layers are known for as a named test.
 */
#include <rota/keyed.h>

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/keyed/keyed_hash.h"
#include "harness.h"
#include "model/keyed_model.h"

#define K(s) (s), (sizeof(s) - 1) /* a string literal as key, length */

static const unsigned char seed_a[ROTA_KEYED_SEED_SIZE] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static const unsigned char seed_b[ROTA_KEYED_SEED_SIZE] = {
    0x5e, 0xed, 0xb0, 0x0b, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

/* ------------------------------------------------- a recording callback */

#define LOG_MAX 64

struct fired {
    char key[32];
    size_t len;
    void *value;
    uint64_t now;
    bool present_inside; /* contains(key) from inside the callback */
    size_t count_inside;
};

struct log {
    struct fired f[LOG_MAX];
    int n;
    /* Optional action run inside the callback. */
    void (*action)(struct rota_keyed *map, const void *key, size_t len,
                   struct log *log);
    int rc; /* the action's result */
};

static void record(struct rota_keyed *map, const void *key, size_t len,
                   void *value, void *arg)
{
    struct log *log = arg;
    if (log->n < LOG_MAX) {
        struct fired *f = &log->f[log->n++];
        f->len = len < sizeof f->key ? len : sizeof f->key - 1;
        if (f->len != 0)
            memcpy(f->key, key, f->len);
        f->key[f->len] = '\0';
        f->value = value;
        f->now = rota_keyed_now(map);
        f->present_inside = rota_keyed_contains(map, key, len);
        f->count_inside = rota_keyed_count(map);
    }
    if (log->action != NULL)
        log->action(map, key, len, log);
}

static struct rota_keyed *make(struct log *log, uint64_t now)
{
    struct rota_keyed_config cfg = {
        .now = now, .expire = record, .arg = log, .seed = seed_a};
    struct rota_keyed *map = NULL;
    CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0);
    return map;
}

static void check_ok(struct rota_keyed *map)
{
    const char *why = NULL;
    int rc = rota_keyed_check(map, &why);
    if (rc != 0)
        FAIL_MSG("rota_keyed_check: %s", why ? why : "?");
}

static int v[16]; /* distinct value pointers: &v[i] */

/* ---------------------------------------------------------- operations */

TEST(create_and_destroy_check_their_arguments)
{
    struct rota_keyed *map = NULL;
    struct rota_allocator half = {NULL, NULL, NULL};
    struct rota_keyed_config bad = {.allocator = &half};

    CHECK_EQ_INT(rota_keyed_create(NULL, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_create(&map, &bad), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_create(&map, NULL),
                 0); /* defaults, getrandom seed */
    CHECK(map != NULL);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    CHECK_EQ_U64(rota_keyed_now(map), 0);
    CHECK(rota_keyed_wheel(map) != NULL);
    check_ok(map);
    CHECK_EQ_INT(rota_keyed_destroy(map), 0);
    CHECK_EQ_INT(rota_keyed_destroy(NULL), 0);

    struct rota_keyed_config far = {.now = UINT64_MAX};
    CHECK_EQ_INT(rota_keyed_create(&map, &far), 0);
    CHECK_EQ_U64(rota_keyed_now(map), ROTA_MAX_DEADLINE);
    rota_keyed_destroy(map);
}

TEST(invalid_arguments_return_einval)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 100);
    static const char big[1] = {0};

    CHECK_EQ_INT(rota_keyed_set_in(NULL, K("a"), NULL, 1, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_set_in(map, NULL, 1, NULL, 1, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_move_in(map, NULL, 3, 1), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_remove(map, NULL, 3, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_get(map, NULL, 3, NULL, NULL), ROTA_EINVAL);
    CHECK(!rota_keyed_contains(NULL, K("a")));
    /* A length beyond UINT32_MAX is refused before the bytes are read. */
    if (SIZE_MAX > UINT32_MAX)
        CHECK_EQ_INT(
            rota_keyed_set_in(map, big, (size_t)UINT32_MAX + 1, NULL, 1, NULL),
            ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_advance(NULL, 1), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_drain(map, NULL, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_drain(NULL, record, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    CHECK_EQ_INT(rota_keyed_check(NULL, NULL), ROTA_EINVAL);
    const char *why = NULL;
    CHECK_EQ_INT(rota_keyed_check(NULL, &why), ROTA_EINVAL);
    CHECK(why != NULL);
    rota_keyed_destroy(map);
}

TEST(set_get_and_replace)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 1000);
    void *value = NULL, *old = NULL;
    uint64_t deadline = 0;

    CHECK_EQ_INT(rota_keyed_set_in(map, K("alpha"), &v[1], 50, &old), 0);
    CHECK(old == NULL); /* untouched when the key was added */
    CHECK_EQ_INT(rota_keyed_count(map), 1);
    CHECK_EQ_INT(rota_keyed_get(map, K("alpha"), &value, &deadline), 1);
    CHECK(value == &v[1]);
    CHECK_EQ_U64(deadline, 1050);
    CHECK(rota_keyed_contains(map, K("alpha")));
    CHECK(!rota_keyed_contains(map, K("alph")));
    CHECK(!rota_keyed_contains(map, K("alphaa")));
    CHECK_EQ_INT(rota_keyed_get(map, K("beta"), &value, &deadline), 0);

    /* Replace: value swapped, old handed back, deadline moved. */
    CHECK_EQ_INT(rota_keyed_set_in(map, K("alpha"), &v[2], 80, &old), 1);
    CHECK(old == &v[1]);
    CHECK_EQ_INT(rota_keyed_count(map), 1);
    CHECK_EQ_INT(rota_keyed_get(map, K("alpha"), &value, &deadline), 1);
    CHECK(value == &v[2]);
    CHECK_EQ_U64(deadline, 1080);

    /* Absolute deadlines, and NULL out-pointers. */
    CHECK_EQ_INT(rota_keyed_set_at(map, K("beta"), &v[3], 1200, NULL), 0);
    CHECK_EQ_INT(rota_keyed_get(map, K("beta"), NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, 1200);
    CHECK_EQ_INT(rota_keyed_get(map, K("beta"), NULL, NULL), 1);
    CHECK_EQ_INT(rota_keyed_count(map), 2);
    check_ok(map);

    CHECK_EQ_INT(rota_keyed_advance(map, 1079), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 1080), 1);
    CHECK_EQ_INT(log.n, 1);
    CHECK(strcmp(log.f[0].key, "alpha") == 0 && log.f[0].value == &v[2]);
    CHECK_EQ_INT(rota_keyed_advance(map, 1200), 1);
    CHECK_EQ_INT(log.n, 2);
    CHECK(log.f[1].value == &v[3]);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* The _u64 calls name an entry by the number's 8 bytes: the same entry as
 * those bytes passed to the byte calls, with the same contracts. */
TEST(u64_keys_are_their_eight_bytes)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 1000);
    const uint64_t id = UINT64_C(0x0123456789abcdef);
    void *value = NULL, *old = NULL;
    uint64_t deadline = 0, k = 0;

    CHECK_EQ_INT(rota_keyed_set_u64_in(map, id, &v[1], 50, &old), 0);
    CHECK(old == NULL);
    CHECK_EQ_INT(rota_keyed_get(map, &id, sizeof id, &value, &deadline), 1);
    CHECK(value == &v[1]);
    CHECK_EQ_U64(deadline, 1050);
    CHECK_EQ_INT(rota_keyed_set_in(map, &id, sizeof id, &v[2], 70, &old), 1);
    CHECK(old == &v[1]);
    CHECK_EQ_INT(rota_keyed_get_u64(map, id, &value, &deadline), 1);
    CHECK(value == &v[2]);
    CHECK_EQ_U64(deadline, 1070);
    CHECK_EQ_INT(rota_keyed_set_u64_at(map, id, &v[3], 1030, &old), 1);
    CHECK(old == &v[2]);
    CHECK_EQ_INT(rota_keyed_move_u64_in(map, id, 90), 0);
    CHECK_EQ_INT(rota_keyed_get(map, &id, sizeof id, NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, 1090);
    CHECK_EQ_INT(rota_keyed_move_u64_at(map, id, 1020), 0); /* earlier */
    CHECK_EQ_INT(rota_keyed_get_u64(map, id, NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, 1020);
    CHECK_EQ_INT(rota_keyed_move_u64_in(map, id, ROTA_NEVER), 0);
    CHECK_EQ_INT(rota_keyed_get_u64(map, id, NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, ROTA_NEVER);
    CHECK_EQ_INT(rota_keyed_set_u64_in(map, id + 1, &v[4], 5, NULL), 0);
    CHECK_EQ_INT(rota_keyed_count(map), 2);
    check_ok(map);

    /* Absent keys, NULL maps. */
    CHECK_EQ_INT(rota_keyed_move_u64_in(map, 7, 1), ROTA_ENOENT);
    CHECK_EQ_INT(rota_keyed_move_u64_at(map, 7, 1), ROTA_ENOENT);
    CHECK_EQ_INT(rota_keyed_remove_u64(map, 7, &value), 0);
    CHECK_EQ_INT(rota_keyed_get_u64(map, 7, &value, &deadline), 0);
    CHECK_EQ_INT(rota_keyed_set_u64_in(NULL, 7, NULL, 1, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_set_u64_at(NULL, 7, NULL, 1, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_move_u64_in(NULL, 7, 1), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_move_u64_at(NULL, 7, 1), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_remove_u64(NULL, 7, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_keyed_get_u64(NULL, 7, NULL, NULL), ROTA_EINVAL);

    /* The callback receives the 8 bytes. */
    CHECK_EQ_INT(rota_keyed_advance(map, 1005), 1);
    CHECK_EQ_INT(log.n, 1);
    CHECK_EQ_INT(log.f[0].len, 8);
    memcpy(&k, log.f[0].key, sizeof k);
    CHECK_EQ_U64(k, id + 1);
    CHECK(log.f[0].value == &v[4]);

    /* Remove through either form. */
    CHECK_EQ_INT(rota_keyed_remove_u64(map, id, &value), 1);
    CHECK(value == &v[3]);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    CHECK_EQ_INT(rota_keyed_set_u64_in(map, id, &v[5], 5, NULL), 0);
    CHECK_EQ_INT(rota_keyed_remove(map, &id, sizeof id, &value), 1);
    CHECK(value == &v[5]);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* The _u64 calls work in every state of the map: before its first table,
 * during a resize's migration (keys found in either table), after the
 * switch to SipHash, and with a time source on its wheel (the general
 * paths). */
static uint64_t fixed_time(void *arg)
{
    return *(const uint64_t *)arg;
}

TEST(u64_keys_in_every_state)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);
    void *value = NULL;
    uint64_t deadline = 0;

    CHECK_EQ_INT(rota_keyed_get_u64(map, 1, &value, NULL), 0); /* no table */
    CHECK_EQ_INT(rota_keyed_move_u64_in(map, 1, 5), ROTA_ENOENT);
    CHECK_EQ_INT(rota_keyed_remove_u64(map, 1, NULL), 0);
    /* Grow through several resizes, checking every key at each step. */
    for (uint64_t i = 1; i <= 3000; i++) {
        CHECK_EQ_INT(rota_keyed_set_u64_in(map, i * 7919, &v[i % 16], i, NULL),
                     0);
        if (i % 97 == 0) {
            for (uint64_t j = 1; j <= i; j += 13) {
                CHECK_EQ_INT(
                    rota_keyed_get_u64(map, j * 7919, &value, &deadline), 1);
                CHECK(value == &v[j % 16]);
                CHECK_EQ_U64(deadline, j);
            }
            check_ok(map);
        }
    }
    /* Shrink through resizes by removing with the number. */
    for (uint64_t i = 1; i <= 3000; i++) {
        if (i % 3 != 0)
            CHECK_EQ_INT(rota_keyed_remove_u64(map, i * 7919, NULL), 1);
        if (i % 211 == 0)
            check_ok(map);
    }
    CHECK_EQ_INT(rota_keyed_count(map), 1000);
    for (uint64_t i = 3; i <= 3000; i += 3)
        CHECK_EQ_INT(rota_keyed_move_u64_at(map, i * 7919, 5000 + i), 0);
    check_ok(map);

    /* A time source on the wheel: ttls count from its time. */
    uint64_t t = 100;
    CHECK_EQ_INT(
        rota_wheel_set_time_source(rota_keyed_wheel(map), fixed_time, &t), 0);
    CHECK_EQ_INT(rota_keyed_set_u64_in(map, 42, &v[1], 10, NULL), 0);
    CHECK_EQ_INT(rota_keyed_get_u64(map, 42, NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, 110);
    CHECK_EQ_INT(rota_keyed_move_u64_in(map, 42, 20), 0);
    CHECK_EQ_INT(rota_keyed_get_u64(map, 42, NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, 120);
    check_ok(map);
    rota_keyed_destroy(map);
}

TEST(move_changes_only_an_existing_deadline)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);
    uint64_t deadline;

    CHECK_EQ_INT(rota_keyed_move_in(map, K("nobody"), 5), ROTA_ENOENT);
    CHECK_EQ_INT(rota_keyed_move_at(map, K("nobody"), 5), ROTA_ENOENT);
    CHECK_EQ_INT(rota_keyed_count(map), 0); /* move never creates */

    rota_keyed_set_in(map, K("later"), &v[1], 10, NULL);
    rota_keyed_set_in(map, K("earlier"), &v[2], 100, NULL);
    CHECK_EQ_INT(rota_keyed_move_in(map, K("later"), 100), 0); /* touch path */
    CHECK_EQ_INT(rota_keyed_move_at(map, K("earlier"), 20),
                 0); /* re-file path */
    CHECK_EQ_INT(rota_keyed_get(map, K("later"), NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, 100);
    check_ok(map);

    CHECK_EQ_INT(rota_keyed_advance(map, 10),
                 0); /* the old deadline: nothing */
    CHECK_EQ_INT(rota_keyed_advance(map, 19), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 20), 1);
    CHECK(log.n == 1 && strcmp(log.f[0].key, "earlier") == 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 99), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 100), 1);
    CHECK(log.n == 2 && strcmp(log.f[1].key, "later") == 0);
    CHECK_EQ_U64(log.f[1].now, 100);
    check_ok(map);
    rota_keyed_destroy(map);
}

TEST(removed_keys_never_fire)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);
    void *value = NULL;

    CHECK_EQ_INT(rota_keyed_remove(map, K("x"), &value), 0);
    rota_keyed_set_in(map, K("x"), &v[4], 5, NULL);
    rota_keyed_set_in(map, K("y"), &v[5], ROTA_NEVER, NULL);
    CHECK_EQ_INT(rota_keyed_remove(map, K("x"), &value), 1);
    CHECK(value == &v[4]);
    CHECK_EQ_INT(rota_keyed_remove(map, K("x"), &value), 0);
    CHECK_EQ_INT(rota_keyed_remove(map, K("y"), NULL), 1);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 1000),
                 0); /* removed keys never fire */
    CHECK_EQ_INT(log.n, 0);
    CHECK_EQ_INT(rota_wheel_count(rota_keyed_wheel(map)), 0);
    check_ok(map);
    rota_keyed_destroy(map);
}

TEST(keys_are_bytes)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);
    unsigned char nul1[3] = {'a', 0, 'b'}, nul2[3] = {'a', 0, 'c'};
    size_t big_len = (size_t)1 << 20;
    unsigned char *big = malloc(big_len);
    void *value;

    memset(big, 'z', big_len);
    CHECK_EQ_INT(rota_keyed_set_in(map, "", 0, &v[0], ROTA_NEVER, NULL), 0);
    CHECK_EQ_INT(rota_keyed_set_in(map, NULL, 0, &v[1], ROTA_NEVER, NULL), 1);
    CHECK_EQ_INT(rota_keyed_set_in(map, nul1, 3, &v[2], ROTA_NEVER, NULL), 0);
    CHECK_EQ_INT(rota_keyed_set_in(map, nul2, 3, &v[3], ROTA_NEVER, NULL), 0);
    CHECK_EQ_INT(rota_keyed_set_in(map, nul1, 1, &v[4], ROTA_NEVER, NULL), 0);
    CHECK_EQ_INT(rota_keyed_set_in(map, big, big_len, &v[5], 7, NULL), 0);
    /* The map copied the key: the caller's buffer may change. */
    memset(big, 'q', big_len);
    CHECK_EQ_INT(rota_keyed_get(map, big, big_len, &value, NULL), 0);
    memset(big, 'z', big_len);
    CHECK_EQ_INT(rota_keyed_get(map, big, big_len, &value, NULL), 1);
    CHECK(value == &v[5]);
    CHECK_EQ_INT(rota_keyed_get(map, nul2, 3, &value, NULL), 1);
    CHECK(value == &v[3]);
    CHECK_EQ_INT(rota_keyed_get(map, "", 0, &value, NULL), 1);
    CHECK(value == &v[1]);
    CHECK_EQ_INT(rota_keyed_count(map), 5);
    check_ok(map);
    CHECK_EQ_INT(rota_keyed_advance(map, 7), 1);
    CHECK_EQ_INT(log.n, 1);
    CHECK_EQ_INT(log.f[0].len, 31); /* truncated copy of the 1 MiB key */
    free(big);
    rota_keyed_destroy(map);
}

TEST(persistent_entries_never_fire)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);
    uint64_t deadline;

    rota_keyed_set_in(map, K("forever"), &v[1], ROTA_NEVER, NULL);
    rota_keyed_set_in(map, K("persisted"), &v[2], 10, NULL);
    rota_keyed_set_in(map, K("overwritten"), &v[3], 10, NULL);
    CHECK_EQ_INT(rota_keyed_move_in(map, K("persisted"), ROTA_NEVER), 0);
    /* SET without EX in Redis: the new value has no TTL. */
    CHECK_EQ_INT(
        rota_keyed_set_in(map, K("overwritten"), &v[4], ROTA_NEVER, NULL), 1);
    CHECK_EQ_INT(rota_keyed_get(map, K("overwritten"), NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, ROTA_NEVER);
    struct rota_keyed_stats st;
    rota_keyed_stats(map, &st);
    CHECK_EQ_INT(st.count, 3);
    CHECK_EQ_INT(st.expiring, 0);
    CHECK_EQ_INT(rota_wheel_count(rota_keyed_wheel(map)), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 1000000), 0);
    CHECK_EQ_INT(log.n, 0);
    /* A persistent key can be given a deadline again. */
    CHECK_EQ_INT(rota_keyed_move_in(map, K("forever"), 5), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 1000005), 1);
    CHECK_EQ_INT(rota_keyed_count(map), 2);
    /* ... and so can a set on one (an arm, not a touch, inside). */
    CHECK_EQ_INT(rota_keyed_set_in(map, K("persisted"), &v[5], 3, NULL), 1);
    rota_keyed_stats(map, &st);
    CHECK_EQ_INT(st.expiring, 1);
    CHECK_EQ_INT(rota_keyed_get(map, K("persisted"), NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, 1000008);
    check_ok(map);
    CHECK_EQ_INT(rota_keyed_advance(map, 1000007), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 1000008), 1);
    CHECK_EQ_INT(log.n, 2);
    CHECK(log.f[1].value == &v[5]);
    CHECK_EQ_INT(rota_keyed_count(map), 1);
    check_ok(map);
    rota_keyed_destroy(map);
}

TEST(huge_ttl_saturates)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 1000);
    uint64_t deadline;

    rota_keyed_set_in(map, K("huge"), NULL, ROTA_MAX_DEADLINE, NULL);
    CHECK_EQ_INT(rota_keyed_get(map, K("huge"), NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, ROTA_MAX_DEADLINE); /* saturated, not wrapped */
    CHECK_EQ_INT(rota_keyed_advance(map, ROTA_MAX_DEADLINE - 1), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, ROTA_MAX_DEADLINE), 1);
    rota_keyed_destroy(map);
}

/* ------------------------------------------------------- named cases */

/* The entry is gone from the map when its callback runs. */
TEST(removed_before_callback)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);

    rota_keyed_set_in(map, K("k"), &v[1], 3, NULL);
    rota_keyed_set_in(map, K("other"), &v[2], 100, NULL);
    CHECK_EQ_INT(rota_keyed_advance(map, 3), 1);
    CHECK_EQ_INT(log.n, 1);
    CHECK(!log.f[0].present_inside);
    CHECK_EQ_INT(log.f[0].count_inside, 1);
    rota_keyed_destroy(map);
}

static void set_again_ttl0(struct rota_keyed *map, const void *key, size_t len,
                           struct log *log)
{
    if (log->n <= 3) /* re-set itself a few times, then stop */
        log->rc = rota_keyed_set_in(map, key, len, &v[9], 0, NULL);
}

/* A callback that re-sets its own key with ttl 0 cannot loop: each set
 * expires in the next advance. */
TEST(callback_sets_same_key)
{
    struct log log = {.action = set_again_ttl0};
    struct rota_keyed *map = make(&log, 0);

    rota_keyed_set_in(map, K("again"), &v[1], 1, NULL);
    CHECK_EQ_INT(rota_keyed_advance(map, 1), 1);
    CHECK_EQ_INT(log.rc, 0); /* added again: the old entry was gone */
    CHECK_EQ_INT(rota_keyed_count(map), 1);
    CHECK_EQ_INT(rota_keyed_advance(map, 1),
                 1); /* same now: the next advance */
    CHECK_EQ_INT(rota_keyed_advance(map, 1), 1);
    CHECK_EQ_INT(rota_keyed_advance(map, 1), 1);
    CHECK_EQ_INT(rota_keyed_advance(map, 1), 0);
    CHECK_EQ_INT(log.n, 4);
    CHECK(log.f[1].value == &v[9]);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    check_ok(map);
    rota_keyed_destroy(map);
}

static void remove_victim(struct rota_keyed *map, const void *key, size_t len,
                          struct log *log)
{
    (void)key;
    (void)len;
    if (log->n == 1)
        log->rc = rota_keyed_remove(map, K("victim"), NULL);
}

/* A callback may remove an entry due in the same advance: it never fires. */
TEST(callback_removes_due_entry)
{
    struct log log = {.action = remove_victim};
    struct rota_keyed *map = make(&log, 0);

    rota_keyed_set_in(map, K("first"), &v[1], 5, NULL);
    rota_keyed_set_in(map, K("victim"), &v[2], 5, NULL);
    rota_keyed_set_in(map, K("last"), &v[3], 6, NULL);
    CHECK_EQ_INT(rota_keyed_advance(map, 10), 2);
    CHECK_EQ_INT(log.rc, 1);
    CHECK_EQ_INT(log.n, 2);
    CHECK(strcmp(log.f[0].key, "first") == 0);
    CHECK(strcmp(log.f[1].key, "last") == 0);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* TTL 0 makes the entry due; it expires at the next advance, not in set. */
TEST(ttl_zero_fires_at_the_next_advance)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 500);
    uint64_t deadline;

    CHECK_EQ_INT(rota_keyed_set_in(map, K("now"), &v[1], 0, NULL), 0);
    CHECK_EQ_INT(log.n, 0);
    CHECK(rota_keyed_contains(map, K("now")));
    CHECK_EQ_INT(rota_keyed_get(map, K("now"), NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, 500);
    /* A past absolute deadline is clamped to now, the same. */
    CHECK_EQ_INT(rota_keyed_set_at(map, K("past"), &v[2], 3, NULL), 0);
    CHECK_EQ_INT(rota_keyed_move_in(map, K("now"), 0), 0);
    CHECK_EQ_INT(log.n, 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 500), 2);
    CHECK_EQ_INT(log.n, 2);
    CHECK(strcmp(log.f[0].key, "now") == 0);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    rota_keyed_destroy(map);
}

/* Never early: an entry fires in the first advance that reaches its
 * deadline, in deadline order, ties in the order their deadlines were set. */
TEST(never_early_and_order)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);

    rota_keyed_set_in(map, K("c"), &v[3], 70000, NULL);
    rota_keyed_set_in(map, K("a"), &v[1], 4096, NULL);
    rota_keyed_set_in(map, K("b"), &v[2], 4096, NULL);
    rota_keyed_set_in(map, K("z"), &v[4], 1, NULL);
    CHECK_EQ_INT(rota_keyed_advance(map, 4095), 1);
    CHECK_EQ_INT(rota_keyed_advance(map, 4095), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 69999), 2);
    CHECK_EQ_INT(log.n, 3);
    CHECK(strcmp(log.f[1].key, "a") == 0);
    CHECK(strcmp(log.f[2].key, "b") == 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 70000), 1);
    CHECK_EQ_U64(log.f[3].now, 70000);
    /* Going back in time fires nothing. */
    rota_keyed_set_in(map, K("d"), &v[5], 10, NULL);
    CHECK_EQ_INT(rota_keyed_advance(map, 5), 0);
    CHECK_EQ_U64(rota_keyed_now(map), 70000);
    CHECK_EQ_INT(rota_keyed_advance(map, 70010), 1);
    rota_keyed_destroy(map);
}

/* go-zero#205: MoveTimer then RemoveTimer left a task that still fired.
 * Every sequence leaves exactly one live entry per key. */
TEST(one_entry_per_key)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);

    rota_keyed_set_in(map, K("k"), &v[1], 10, NULL);
    rota_keyed_move_in(map, K("k"), 30);
    rota_keyed_move_in(map, K("k"), 5);
    CHECK_EQ_INT(rota_keyed_remove(map, K("k"), NULL), 1);
    CHECK_EQ_INT(rota_keyed_advance(map, 100), 0);
    CHECK_EQ_INT(log.n, 0);

    rota_keyed_set_in(map, K("k"), &v[1], 10, NULL);
    rota_keyed_set_in(map, K("k"), &v[2], 20, NULL);
    rota_keyed_set_in(map, K("k"), &v[3], 5, NULL);
    rota_keyed_move_in(map, K("k"), 40);
    CHECK_EQ_INT(rota_keyed_count(map), 1);
    CHECK_EQ_INT(rota_wheel_count(rota_keyed_wheel(map)), 1);
    CHECK_EQ_INT(rota_keyed_advance(map, 139), 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 140), 1);
    CHECK_EQ_INT(rota_keyed_advance(map, 100000), 0);
    CHECK_EQ_INT(log.n, 1);
    CHECK(log.f[0].value == &v[3]);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* Moving a key whose deadline has passed but whose expiry was not yet
 * collected: it lives on with the new deadline. */
TEST(move_overdue_entry)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);
    uint64_t deadline;

    rota_keyed_set_in(map, K("late"), &v[1], 10, NULL);
    rota_keyed_set_in(map, K("late2"), &v[2], 10, NULL);
    /* Time passes to 50 without an advance; the caller then uses absolute
     * deadlines from its own clock. */
    CHECK(rota_keyed_contains(map, K("late")));
    CHECK_EQ_INT(rota_keyed_move_at(map, K("late"), 80), 0);
    CHECK_EQ_INT(rota_keyed_set_at(map, K("late2"), &v[3], 90, NULL), 1);
    CHECK_EQ_INT(rota_keyed_advance(map, 50), 0);
    CHECK_EQ_INT(rota_keyed_count(map), 2);
    CHECK_EQ_INT(rota_keyed_get(map, K("late"), NULL, &deadline), 1);
    CHECK_EQ_U64(deadline, 80);
    /* Overdue at the wheel's now but not collected (advance_max 0). */
    size_t fired = 99;
    CHECK_EQ_INT(rota_keyed_advance_max(map, 85, 0, &fired), 1);
    CHECK_EQ_INT(fired, 0);
    CHECK_EQ_INT(rota_keyed_move_in(map, K("late"), 10),
                 0);                              /* lives on to 95 */
    CHECK_EQ_INT(rota_keyed_advance(map, 94), 1); /* late2 only */
    CHECK_EQ_INT(log.n, 1);
    CHECK(strcmp(log.f[0].key, "late2") == 0);
    CHECK_EQ_INT(rota_keyed_advance(map, 95), 1);
    CHECK_EQ_INT(log.n, 2);
    check_ok(map);
    rota_keyed_destroy(map);
}

TEST(advance_max_stops_at_its_limit)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);
    char key[8];
    size_t fired = 0;

    for (int i = 0; i < 10; i++) {
        int len = snprintf(key, sizeof key, "k%d", i);
        rota_keyed_set_in(map, key, (size_t)len, NULL, (uint64_t)(i % 3), NULL);
    }
    CHECK_EQ_INT(rota_keyed_advance_max(map, 5, 4, &fired), 1);
    CHECK_EQ_INT(fired, 4);
    CHECK_EQ_INT(rota_keyed_count(map), 6);
    CHECK_EQ_INT(rota_keyed_advance_max(map, 5, 100, &fired), 0);
    CHECK_EQ_INT(fired, 6);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    rota_keyed_destroy(map);
}

/* ---------------------------------------------------------------- drain */

struct drain_log {
    int calls;
    struct rota_keyed *map;
    int advance_rc, destroy_rc, drain_rc, set_rc;
    bool present_inside;
};

static void count_drain(struct rota_keyed *map, const void *key, size_t len,
                        void *value, void *arg)
{
    struct drain_log *d = arg;
    (void)value;
    d->calls++;
    d->present_inside |= rota_keyed_contains(map, key, len);
    if (d->calls == 1) {
        d->advance_rc = rota_keyed_advance(map, 1000000);
        d->destroy_rc = rota_keyed_destroy(map);
        d->drain_rc = rota_keyed_drain(map, count_drain, arg);
        d->set_rc = rota_keyed_set_in(map, K("born-in-drain"), NULL, 5, NULL);
    }
}

/* go-zero#5314: Drain scheduled its calls and returned.  Here every fn call
 * has run when drain returns, the map is empty and usable. */
TEST(drain_runs_every_call_before_returning)
{
    struct log log = {0};
    struct rota_keyed *map = make(&log, 0);
    struct drain_log d = {0};
    char key[16];

    for (int i = 0; i < 1000; i++) {
        int len = snprintf(key, sizeof key, "key%d", i);
        rota_keyed_set_in(map, key, (size_t)len, &v[i % 16],
                          i % 2 ? ROTA_NEVER : (uint64_t)i, NULL);
    }
    CHECK_EQ_INT(rota_keyed_drain(map, count_drain, &d), 0);
    CHECK_EQ_INT(d.calls, 1000);
    CHECK(!d.present_inside);
    CHECK_EQ_INT(d.advance_rc, ROTA_EBUSY);
    CHECK_EQ_INT(d.destroy_rc, ROTA_EBUSY);
    CHECK_EQ_INT(d.drain_rc, ROTA_EBUSY);
    CHECK_EQ_INT(d.set_rc, 0);
    CHECK_EQ_INT(rota_keyed_count(map), 1); /* only what fn set */
    CHECK_EQ_INT(rota_wheel_count(rota_keyed_wheel(map)), 1);
    check_ok(map);
    CHECK_EQ_INT(rota_keyed_advance(map, 5000), 1);
    CHECK_EQ_INT(log.n, 1);
    CHECK(strcmp(log.f[0].key, "born-in-drain") == 0);
    /* Drain an empty map, then use it again. */
    d.calls = 0;
    CHECK_EQ_INT(rota_keyed_drain(map, count_drain, &d), 0);
    CHECK_EQ_INT(d.calls, 0);
    CHECK_EQ_INT(rota_keyed_set_in(map, K("after"), NULL, 1, NULL), 0);
    check_ok(map);
    rota_keyed_destroy(map);
}

static void drain_from_callback(struct rota_keyed *map, const void *key,
                                size_t len, struct log *log)
{
    struct drain_log d = {0};
    (void)key;
    (void)len;
    log->rc = rota_keyed_drain(map, count_drain, &d);
    CHECK_EQ_INT(d.calls, 3);
    CHECK_EQ_INT(rota_keyed_destroy(map), ROTA_EBUSY);
    CHECK_EQ_INT(rota_keyed_advance(map, 1), ROTA_EBUSY);
}

TEST(drain_from_expire_callback)
{
    struct log log = {.action = drain_from_callback};
    struct rota_keyed *map = make(&log, 0);

    rota_keyed_set_in(map, K("trigger"), NULL, 1, NULL);
    rota_keyed_set_in(map, K("a"), NULL, 2, NULL);
    rota_keyed_set_in(map, K("b"), NULL, 1, NULL);
    rota_keyed_set_in(map, K("c"), NULL, ROTA_NEVER, NULL);
    CHECK_EQ_INT(rota_keyed_advance(map, 10), 1); /* b was drained, not fired */
    CHECK_EQ_INT(log.rc, 0);
    /* Only the key the drain function set is left. */
    CHECK_EQ_INT(rota_keyed_count(map), 1);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* ------------------------------------------------------------- memory */

struct counting {
    size_t live_bytes, live_blocks, allocs;
    bool size_mismatch;
};

/* Each block carries its size in a 16-byte header, to check that free()
 * receives the size alloc() was asked for. */
static void *count_alloc(void *ctx, size_t size)
{
    struct counting *c = ctx;
    unsigned char *p = malloc(size + 16);
    if (p == NULL)
        return NULL;
    memcpy(p, &size, sizeof size);
    c->live_bytes += size;
    c->live_blocks++;
    c->allocs++;
    return p + 16;
}

static void count_free(void *ctx, void *ptr, size_t size)
{
    struct counting *c = ctx;
    unsigned char *p = (unsigned char *)ptr - 16;
    size_t asked;
    memcpy(&asked, p, sizeof asked);
    if (asked != size)
        c->size_mismatch = true;
    c->live_bytes -= size;
    c->live_blocks--;
    free(p);
}

static int destroy_calls;
static void count_call(struct rota_keyed *map, const void *key, size_t len,
                       void *value, void *arg)
{
    (void)map, (void)key, (void)len, (void)value, (void)arg;
    destroy_calls++;
}

/* Every byte comes from the hook and goes back; destroy calls nothing. */
TEST(allocator_hook_sees_every_allocation_and_free)
{
    struct counting c = {0};
    struct rota_allocator a = {count_alloc, count_free, &c};
    struct rota_keyed_config cfg = {
        .allocator = &a, .expire = count_call, .seed = seed_a};
    struct rota_keyed *map = NULL;
    struct rota_keyed_stats st;
    char key[16];

    CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0);
    CHECK_EQ_INT(c.live_blocks, 1);
    for (int i = 0; i < 5000; i++) {
        int len = snprintf(key, sizeof key, "%d", i);
        rota_keyed_set_in(map, key, (size_t)len, NULL, (uint64_t)i + 1, NULL);
    }
    rota_keyed_stats(map, &st);
    CHECK_EQ_INT(st.bytes, c.live_bytes);
    CHECK_EQ_INT(rota_keyed_destroy(map), 0);
    CHECK_EQ_INT(destroy_calls, 0);
    CHECK_EQ_INT(c.live_bytes, 0);
    CHECK_EQ_INT(c.live_blocks, 0);
    CHECK(!c.size_mismatch);
}

/* The layout of src/keyed/keyed.c's table slot (a hash, the key's length, the key
 * or a pointer to it, the value, the timer), for its size on this target:
 * 72 bytes on x86-64, the figure rota/keyed.h states, 56 on i386. */
struct slot_layout {
    uint32_t hash, key_len;
    union {
        uint64_t word;
        unsigned char *ptr;
    } key;
    void *value;
    struct rota_timer timer;
};
#define SLOT_BYTES sizeof(struct slot_layout)

/* The figure the header states: one slot per table slot, keys of up to 8
 * bytes inside it, longer ones in a block of their own length. */
TEST(memory_per_entry_is_as_documented)
{
    struct rota_keyed *map = NULL;
    struct rota_keyed_config cfg = {.seed = seed_a};
    struct rota_keyed_stats before, after;
    /* Under load 3/4 of 88,258 slots (8 grown by half 20 times), past
     * the growth from 58,839 at 44,130 (which has finished: it migrates
     * eight entries an insert). */
    const size_t n = 60000;

    CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0);
    rota_keyed_stats(map, &before);
    for (uint64_t i = 0; i < n; i++)
        rota_keyed_set_in(map, &i, sizeof i, NULL, i % 1000 + 1, NULL);
    rota_keyed_stats(map, &after);
    CHECK_EQ_INT(after.slots, 88258);
#if defined(__x86_64__)
    CHECK_EQ_INT(SLOT_BYTES, 56);
#endif
    CHECK_EQ_INT(after.bytes - before.bytes, after.slots * SLOT_BYTES);
    printf("memory per entry (8-byte keys): %zu bytes of table at load "
           "%.2f, excluding the allocator's own overhead\n",
           after.slots * SLOT_BYTES / n, (double)n / (double)after.slots);
    /* A 9-byte key adds its own block of 9 bytes. */
    unsigned char long_key[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    CHECK_EQ_INT(
        rota_keyed_set_in(map, long_key, sizeof long_key, NULL, 5, NULL), 0);
    rota_keyed_stats(map, &before);
    CHECK_EQ_INT(before.bytes - after.bytes, 9);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* Growing and shrinking (each all at once) keep every invariant. */
TEST(table_grows_and_shrinks)
{
    struct rota_keyed *map = NULL;
    struct rota_keyed_config cfg = {.seed = seed_b};
    struct rota_keyed_stats st;
    const uint64_t n = 100000;
    bool saw_shrunk = false;

    CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0);
    for (uint64_t i = 0; i < n; i++) {
        rota_keyed_set_in(map, &i, sizeof i, (void *)(uintptr_t)(i + 1),
                          i % 7 == 0 ? ROTA_NEVER : i + 1, NULL);
        if (i % 4999 == 0 || (i > 32760 && i < 32800))
            check_ok(map);
    }
    rota_keyed_stats(map, &st);
    CHECK_EQ_INT(st.count, n);
    CHECK(st.resizes >= 14);
    for (uint64_t i = 0; i < n; i++) {
        void *value = NULL;
        if (rota_keyed_get(map, &i, sizeof i, &value, NULL) != 1 ||
            value != (void *)(uintptr_t)(i + 1)) {
            CHECK(!"entry lost or corrupted by a resize");
            break;
        }
    }
    size_t grown = st.slots;
    /* Remove most: the table shrinks, in several steps. */
    for (uint64_t i = 0; i < n - 100; i++) {
        CHECK_EQ_INT(rota_keyed_remove(map, &i, sizeof i, NULL), 1);
        if (i % 9973 == 0) {
            check_ok(map);
            rota_keyed_stats(map, &st);
            saw_shrunk |= st.slots != grown;
        }
    }
    check_ok(map);
    rota_keyed_stats(map, &st);
    CHECK_EQ_INT(st.count, 100);
    CHECK(st.slots <= 1024);
    CHECK(saw_shrunk);
    /* The rest expire; expiry shrinks the table too. */
    CHECK(rota_keyed_advance(map, n + 1) > 0);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* rota_keyed_next_growth() foretells every growth: the table's memory
 * rises only at the insert that reaches the count it gave, and by the
 * bytes it gave (8-byte keys: no key blocks, so only tables move it). */
TEST(next_growth_foretells_memory)
{
    struct rota_keyed *map = NULL;
    struct rota_keyed_config cfg = {.seed = seed_a};
    struct rota_keyed_stats st;
    size_t at = 0, more = 0, growths = 0, wrong = 0, last = 0;

    rota_keyed_next_growth(NULL, &at, &more); /* stores nothing */
    CHECK_EQ_INT(at, 0);
    CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0);
    rota_keyed_next_growth(map, NULL, NULL);
    rota_keyed_next_growth(map, &at, &more);
    CHECK_EQ_INT(at, 1); /* no table yet: the first insert makes one */
    CHECK(more > 0);
    for (uint64_t i = 0; i < 200000; i++) {
        rota_keyed_stats(map, &st);
        size_t before = st.bytes;
        rota_keyed_next_growth(map, &at, &more);
        CHECK_EQ_INT(rota_keyed_set_in(map, &i, sizeof i, NULL, i, NULL), 0);
        rota_keyed_stats(map, &st);
        bool due = st.count == at;
        if (st.bytes > before && due && st.bytes - before == more) {
            growths++;
            last = more;
        } else if (st.bytes > before || due)
            wrong++;
    }
    CHECK_EQ_INT(wrong, 0);
    /* A table of 8 slots, then 26 growths by half to 297,870 (at
     * 198,581). */
    CHECK_EQ_INT(growths, 27);
    /* Mid-resize the answer is the growth after it, half as big again. */
    rota_keyed_next_growth(map, &at, &more);
    rota_keyed_stats(map, &st);
    CHECK_EQ_INT(st.slots, 297870);
    CHECK_EQ_INT(at, st.slots * 3 / 4 + 1);
    CHECK_EQ_INT(last, st.slots * SLOT_BYTES);
    CHECK_EQ_INT(more, (st.slots + st.slots / 2) * SLOT_BYTES);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* --------------------------------------------------------------- hashing */

/* SipHash-2-4 reference output from the paper (key 00..0f, message
 * 00..0e), through the same code rota runs as SipHash-1-3. */
TEST(siphash_matches_its_reference_vectors)
{
    unsigned char msg[64];
    for (int i = 0; i < 64; i++)
        msg[i] = (unsigned char)i;
    uint64_t k0 = rota__sip_load64(seed_a), k1 = rota__sip_load64(seed_a + 8);
    CHECK_EQ_U64(rota__siphash(2, 4, k0, k1, msg, 15),
                 UINT64_C(0xa129ca6149be45e5));
    CHECK_EQ_U64(rota__siphash(2, 4, k0, k1, msg, 0),
                 UINT64_C(0x726fdb47dd0e0e31));
    CHECK_EQ_U64(rota__siphash(2, 4, k0, k1, msg, 8),
                 UINT64_C(0x93f5f5799a932462));
    /* The seed changes every hash. */
    uint64_t j0 = rota__sip_load64(seed_b), j1 = rota__sip_load64(seed_b + 8);
    CHECK(rota__siphash(1, 3, k0, k1, msg, 8) !=
          rota__siphash(1, 3, j0, j1, msg, 8));
}

/* Hash flooding: keys chosen to share a home slot under the fast hash with
 * one seed (as an attacker who knew the seed would) make the map switch to
 * SipHash once, after which probes are short again; under any other seed
 * the same keys spread out and nothing switches. */
#define FLOOD_PROBE_2048 (64 + 32 * 11)
TEST(flooding_switches_to_siphash)
{
    const int want = h_small() ? 600 : 1000;
    /* The top 11 of the 31 bits that pick a home clear: home 0 in every
     * table of up to 2048 slots. */
    const uint32_t mask = 0x7ff00000u;
    uint64_t k0 = rota__sip_load64(seed_a), k1 = rota__sip_load64(seed_a + 8);
    uint64_t *keys = malloc((size_t)want * sizeof *keys);
    int found = 0;

    for (uint64_t x = 0; found < want; x++)
        if (((uint32_t)rota__fasthash(k0, k1, &x, sizeof x) & mask) == 0)
            keys[found++] = x;

    for (int s = 0; s < 2; s++) {
        struct rota_keyed *map = NULL;
        struct rota_keyed_config cfg = {.seed = s == 0 ? seed_a : seed_b};
        struct rota_keyed_stats st;
        CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0);
        /* Half the keys go in as numbers (the _u64 calls' lean path
         * notes probes too), and are read back the other way. */
        for (int i = 0; i < want; i++)
            CHECK_EQ_INT(
                i % 2 ? rota_keyed_set_u64_in(map, keys[i], &keys[i], 10, NULL)
                      : rota_keyed_set_in(map, &keys[i], sizeof keys[i],
                                          &keys[i], 10, NULL),
                0);
        rota_keyed_stats(map, &st);
        CHECK_EQ_INT(st.sip_hash, s == 0);
        /* The switch came at the first probe longer than 64 + 32 log2(size)
         * slots (size at most 2048 here). */
        CHECK(st.longest_probe <= FLOOD_PROBE_2048 + 1);
        for (int i = 0; i < want; i++) { /* nothing lost by the rehash */
            void *value = NULL;
            CHECK_EQ_INT(i % 2 ? rota_keyed_get(map, &keys[i], sizeof keys[i],
                                                &value, NULL)
                               : rota_keyed_get_u64(map, keys[i], &value, NULL),
                         1);
            CHECK(value == &keys[i]);
        }
        for (int i = 0; i < want; i++)
            CHECK_EQ_INT(
                i % 2 ? rota_keyed_move_u64_in(map, keys[i], 20)
                      : rota_keyed_move_in(map, &keys[i], sizeof keys[i], 20),
                0);
        rota_keyed_stats(map, &st);
        /* short probes after the switch */
        CHECK(st.longest_probe <= FLOOD_PROBE_2048 + 1);
        CHECK_EQ_INT(st.sip_hash, s == 0);
        check_ok(map);
        CHECK_EQ_INT(rota_keyed_advance(map, 20), want);
        rota_keyed_destroy(map);
    }
    free(keys);
}

/* The fast hash reads every byte and the length: no two of these short
 * keys (all lengths 0-40, one byte flipped) share a 64-bit hash. */
TEST(fasthash_uses_every_byte)
{
    unsigned char buf[48] = {0};
    uint64_t k0 = 1, k1 = 2, seen[64 * 41];
    int n = 0;
    for (size_t len = 0; len <= 40; len++) {
        seen[n++] = rota__fasthash(k0, k1, buf, len);
        for (size_t i = 0; i < len; i++) {
            buf[i] ^= 0x40;
            seen[n++] = rota__fasthash(k0, k1, buf, len);
            buf[i] ^= 0x40;
        }
    }
    int dups = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            dups += seen[i] == seen[j];
    CHECK_EQ_INT(dups, 0);
    CHECK(rota__fasthash(1, 2, buf, 8) != rota__fasthash(3, 2, buf, 8));
    CHECK(rota__fasthash(1, 2, buf, 8) != rota__fasthash(1, 4, buf, 8));
}

/* The map hashes with secrets derived once (rota__fastkey_of): the same
 * values as rota__fasthash(k0, k1), pinned so a change to either shows
 * (keys of up to 8 bytes are hashed as one word: the 3-byte value is that
 * path's). */
TEST(fasthash_precomputed_secrets)
{
    static const size_t lens[] = {0, 3, 8, 13, 16, 40};
    static const uint64_t want[] = {
        UINT64_C(0xb72f6af8f6f56fa1), UINT64_C(0x795c0c829ff13a81),
        UINT64_C(0xbbf92058c6796993), UINT64_C(0x7c5b9e61462d0a58),
        UINT64_C(0x76a752454912bc27), UINT64_C(0x0a6e815000e35ccc)};
    const uint64_t k0 = UINT64_C(0x0706050403020100);
    const uint64_t k1 = UINT64_C(0x0f0e0d0c0b0a0908);
    const struct rota__fastkey fk = rota__fastkey_of(k0, k1);
    unsigned char buf[40];

    for (int i = 0; i < 40; i++)
        buf[i] = (unsigned char)(i * 7 + 1);
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        CHECK_EQ_U64(rota__fasthash(k0, k1, buf, lens[i]), want[i]);
        CHECK_EQ_U64(rota__fasthash_k(&fk, buf, lens[i]), want[i]);
    }
}

/* How well a hash spreads keys with the structure real ids have over a
 * table as the map uses it: the home of hash h in a table of `size`
 * slots is the top of h's low 31 bits scaled to the size (keyed.c's
 * home_of()), and linear probing walks on from there.  Four families of
 * 1,148 keys (load 3/4 of the map's 1,531-slot table, the size W6 runs
 * at 1e3 keys): consecutive ids, ids in the high bytes of the word,
 * ids with a stride of 4096, and decimal strings of 1 to 8 bytes; each
 * under four seeds.  Returns the worst family's mean probe length over
 * its seeds (slots compared by a successful lookup; 2.5 expected at load
 * 3/4 for a random function, SipHash gives 2.46 to 2.51 here) and stores
 * the most keys any one home received. */
typedef uint64_t spread_hash_fn(uint64_t k0, uint64_t k1, const void *key,
                                size_t len);

static double spread_worst_probe(spread_hash_fn *hash, size_t *worst_home)
{
    enum { SIZE = 1531, KEYS = SIZE * 3 / 4 };
    static uint16_t home_load[SIZE];
    static bool taken[SIZE];
    double worst = 0;

    *worst_home = 0;
    for (int family = 0; family < 4; family++) {
        double probes = 0;
        for (uint64_t seed = 1; seed <= 4; seed++) {
            uint64_t k0 = seed * UINT64_C(0x9e3779b97f4a7c15), k1 = ~k0;
            memset(home_load, 0, sizeof home_load);
            memset(taken, 0, sizeof taken);
            for (uint64_t i = 0; i < KEYS; i++) {
                unsigned char key[16] = {0};
                size_t len = 8;
                uint64_t id = family == 0   ? i
                              : family == 1 ? i << 40
                              : family == 2 ? i * 4096
                                            : 0;
                memcpy(key, &id, sizeof id);
                if (family == 3)
                    len = (size_t)snprintf((char *)key, 9, "%llu",
                                           (unsigned long long)(i * 7919));
                uint32_t h = (uint32_t)hash(k0, k1, key, len) & 0x7fffffffu;
                size_t at = (size_t)(((uint64_t)h * SIZE) >> 31);
                if (++home_load[at] > *worst_home)
                    *worst_home = home_load[at];
                for (probes++; taken[at]; probes++)
                    at = at + 1 == SIZE ? 0 : at + 1;
                taken[at] = true;
            }
        }
        if (probes / (4 * KEYS) > worst)
            worst = probes / (4 * KEYS);
    }
    return worst;
}

/* The planted fault for fasthash_spread_catches_planted_collapse: the short-key
 * hash without its high half, a product's low bits only, which depend on
 * the low bits of the key alone (ids in the high bytes share a home). */
static uint64_t low_half_only(uint64_t k0, uint64_t k1, const void *key,
                              size_t len)
{
    const struct rota__fastkey fk = rota__fastkey_of(k0, k1);
    uint64_t word = rota__short_word(key, len), lo, hi;
    rota__mul128(word ^ fk.c0, word ^ fk.sc1, &lo, &hi);
    return lo;
}

/* The fast hash spreads structured keys as a random function would (a
 * mean probe under 2.8, no home with more than 12 keys, where random
 * gives about 2.5 and 6); fasthash_spread_catches_planted_collapse shows
 * a hash that collapses them fails the same checker. */
TEST(fasthash_spreads_structured_keys)
{
    size_t worst_home = 0;
    double probe = spread_worst_probe(rota__fasthash, &worst_home);
    printf("fast hash: worst mean probe %.2f, most keys in one home %zu\n",
           probe, worst_home);
    CHECK(probe < 2.8);
    CHECK(worst_home <= 12);
}

/* The planted fault: the same checker rejects a hash that collapses. */
TEST(fasthash_spread_catches_planted_collapse)
{
    size_t worst_home = 0;
    double probe = spread_worst_probe(low_half_only, &worst_home);
    printf("planted low-half hash: worst mean probe %.2f, most keys in one "
           "home %zu\n",
           probe, worst_home);
    CHECK(probe >= 2.8 && worst_home > 12);
}

/* A hash's spread of 8-byte ids under each of many seeds: a mean over a
 * few seeds hides a hash that is random-like for most seeds and bad for
 * some.  For each of 64 seeds and four families of 1,148 ids (consecutive,
 * in the high bytes, strided by 4096, pointer-like: strided by 16 from a
 * heap-like base), the mean probe of a successful lookup in the map's
 * 1,531-slot table at load 3/4 (home_of() as keyed.c computes it).
 * Returns the worst seed's over all families. */
typedef uint64_t word_hash_fn(const struct rota__fastkey *fk, uint64_t word);

static double seed_worst_probe(word_hash_fn *hash)
{
    enum { SIZE = 1531, KEYS = SIZE * 3 / 4 };
    static bool taken[SIZE];
    double worst = 0;

    for (int family = 0; family < 4; family++) {
        for (uint64_t seed = 1; seed <= 64; seed++) {
            uint64_t k0 = seed * UINT64_C(0x9e3779b97f4a7c15), k1 = ~k0;
            const struct rota__fastkey fk = rota__fastkey_of(k0, k1);
            double probes = 0;
            memset(taken, 0, sizeof taken);
            for (uint64_t i = 0; i < KEYS; i++) {
                uint64_t id = family == 0   ? i
                              : family == 1 ? i << 40
                              : family == 2 ? i * 4096
                                            : UINT64_C(0x7f0000001000) + i * 16;
                uint32_t h = (uint32_t)hash(&fk, id) & 0x7fffffffu;
                size_t at = (size_t)(((uint64_t)h * SIZE) >> 31);
                for (probes++; taken[at]; probes++)
                    at = at + 1 == SIZE ? 0 : at + 1;
                taken[at] = true;
            }
            if (probes / KEYS > worst)
                worst = probes / KEYS;
        }
    }
    return worst;
}

static uint64_t map_word_hash(const struct rota__fastkey *fk, uint64_t word)
{
    return rota__fasthash_word(fk, word, 8);
}

/* The planted fault for fasthash_seed_spread_catches_one_multiply: the
 * short-key hash with one multiply, its result folded by a shift (seven
 * instructions cheaper; keyed.c, HASHING, says why it is not used). */
static uint64_t one_multiply(const struct rota__fastkey *fk, uint64_t word)
{
    uint64_t h = rota__mum(word ^ fk->c0, word ^ fk->sc1 ^ 8);
    return h ^ (h >> 29);
}

/* No seed makes the fast hash pile up structured ids: the worst of 256
 * seed and family pairs has a mean probe under 4 (measured 3.4; a
 * random function averages 2.5); the planted twin shows a hash that
 * fails for a few seeds fails this. */
TEST(fasthash_spreads_ids_under_every_seed)
{
    double worst = seed_worst_probe(map_word_hash);
    printf("fast hash: worst seed's mean probe %.2f\n", worst);
    CHECK(worst < 4.0);
}

TEST(fasthash_seed_spread_catches_one_multiply)
{
    double worst = seed_worst_probe(one_multiply);
    printf("planted one-multiply hash: worst seed's mean probe %.2f\n", worst);
    CHECK(worst >= 4.0);
}

/* ---------------------------------------------------------- the wheel */

struct own_timer {
    struct rota_timer timer;
    int fired;
};

static struct rota_keyed *own_map; /* destroyed from own_fire, if set */
static int own_destroy_rc = 99;

static void own_fire(struct rota_wheel *w, struct rota_timer *t, uint64_t l)
{
    (void)w, (void)l;
    rota_container_of(t, struct own_timer, timer)->fired++;
    if (own_map != NULL)
        own_destroy_rc = rota_keyed_destroy(own_map);
}

static void destroy_in_callback(struct rota_keyed *map, const void *key,
                                size_t len, struct log *log)
{
    (void)key, (void)len;
    log->rc = rota_keyed_destroy(map);
}

/* The caller's own timers share the map's wheel and fire from advance. */
/* ------------------------------------------------------ moving entries */

/* Entries live inside the table and move (growth, shrinking, deletion's
 * backward shift); their timers move with them and must keep their
 * deadlines and their order among equal deadlines. */

#define ORDER_MAX 8192

struct order {
    uint64_t key[ORDER_MAX];
    uint64_t at[ORDER_MAX];
    size_t n;
    bool bad_key; /* a callback saw a key that was not 8 bytes, or present */
    void (*action)(struct rota_keyed *map, uint64_t key, struct order *o);
};

static void record_order(struct rota_keyed *map, const void *key, size_t len,
                         void *value, void *arg)
{
    struct order *o = arg;
    uint64_t k = 0;

    (void)value;
    if (len != sizeof k || rota_keyed_contains(map, key, len))
        o->bad_key = true;
    memcpy(&k, key, sizeof k);
    if (o->n < ORDER_MAX) {
        o->key[o->n] = k;
        o->at[o->n] = rota_keyed_now(map);
        o->n++;
    }
    if (o->action != NULL)
        o->action(map, k, o);
}

static struct rota_keyed *make_order(struct order *o)
{
    struct rota_keyed_config cfg = {
        .expire = record_order, .arg = o, .seed = seed_a};
    struct rota_keyed *map = NULL;
    CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0);
    return map;
}

/* Many growths and deletion shifts while every entry is pending: each
 * fires once, at its deadline, ties in the order they were set. */
TEST(pending_entries_survive_moves)
{
    static struct order o;
    const uint64_t n = 3000;
    static bool gone[3000];
    struct rota_keyed *map;

    memset(&o, 0, sizeof o);
    map = make_order(&o);
    for (uint64_t i = 0; i < n; i++)
        CHECK_EQ_INT(rota_keyed_set_at(map, &i, sizeof i, NULL,
                                       100 + i * 7919 % 50, NULL),
                     0);
    check_ok(map);
    for (uint64_t i = 0; i < n; i += 3) { /* shifts entries back */
        CHECK_EQ_INT(rota_keyed_remove(map, &i, sizeof i, NULL), 1);
        gone[i] = true;
    }
    check_ok(map);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t deadline = 0;
        CHECK_EQ_INT(rota_keyed_get(map, &i, sizeof i, NULL, &deadline),
                     gone[i] ? 0 : 1);
        if (!gone[i])
            CHECK_EQ_U64(deadline, 100 + i * 7919 % 50);
    }
    for (uint64_t now = 0; now < 160; now++)
        rota_keyed_advance(map, now);
    CHECK(!o.bad_key);
    size_t k = 0;
    for (uint64_t d = 100; d < 150; d++)
        for (uint64_t i = 0; i < n; i++)
            if (!gone[i] && 100 + i * 7919 % 50 == d) {
                if (k >= o.n || o.key[k] != i || o.at[k] != d) {
                    CHECK(!"an entry fired out of order or at the wrong time");
                    d = 150;
                    break;
                }
                k++;
            }
    CHECK_EQ_INT(o.n, k);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* The first callback of a pass adds thousands of keys (the table grows,
 * moving the pending entries due later in the same pass) and removes some
 * of those entries (shifting others); expiry also shrinks the table. */
static void grow_in_callback(struct rota_keyed *map, uint64_t key,
                             struct order *o)
{
    static bool done;
    (void)key;
    if (o->n != 1 || done)
        return;
    done = true;
    for (uint64_t j = 0; j < 3000; j++) {
        uint64_t k = 1000000 + j;
        if (rota_keyed_set_at(map, &k, sizeof k, NULL, 10, NULL) != 0)
            o->bad_key = true;
    }
    for (uint64_t k = 50; k < 60; k++)
        if (rota_keyed_remove(map, &k, sizeof k, NULL) != 1)
            o->bad_key = true;
    if (rota_keyed_check(map, NULL) != 0)
        o->bad_key = true;
}

TEST(callback_grows_table_mid_pass)
{
    static struct order o;
    struct rota_keyed *map;
    struct rota_keyed_stats st;

    memset(&o, 0, sizeof o);
    o.action = grow_in_callback;
    map = make_order(&o);
    for (uint64_t i = 0; i < 100; i++)
        rota_keyed_set_at(map, &i, sizeof i, NULL, 10, NULL);
    rota_keyed_stats(map, &st);
    size_t before = st.slots;
    CHECK_EQ_INT(rota_keyed_advance(map, 10), 90);
    rota_keyed_stats(map, &st);
    CHECK(st.slots > before); /* it grew inside the pass */
    CHECK(!o.bad_key);
    for (size_t i = 0, want = 0; i < o.n; i++, want++) {
        if (want == 50)
            want = 60;
        CHECK_EQ_U64(o.key[i], want);
    }
    check_ok(map);
    /* The added keys are due at 10 = now: they expire in the next advance,
     * in the order they were set, shrinking the table as they go. */
    o.n = 0;
    CHECK_EQ_INT(rota_keyed_advance(map, 10), 3000);
    CHECK(!o.bad_key);
    for (size_t i = 0; i < o.n; i++)
        if (o.key[i] != 1000000 + i) {
            CHECK(!"added keys fired out of order");
            break;
        }
    rota_keyed_stats(map, &st);
    CHECK_EQ_INT(st.count, 0);
    CHECK_EQ_INT(st.slots, 8);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* Keys of 0 to 300 bytes, many sharing their first 8 bytes: the long ones
 * live in blocks of their own, found, replaced, removed and expired with
 * their exact bytes. */
struct long_keys {
    bool seen[301];
    bool bad;
};

static void fill_key(unsigned char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = i < 8 ? (unsigned char)"commonpf"[i]
                       : (unsigned char)(len * 31 + i * 7);
}

static void check_long_key(struct rota_keyed *map, const void *key, size_t len,
                           void *value, void *arg)
{
    struct long_keys *lk = arg;
    unsigned char want[300];

    (void)map;
    fill_key(want, len);
    if (len > 300 || value != &v[len % 16] || lk->seen[len] ||
        (len != 0 && memcmp(key, want, len) != 0))
        lk->bad = true;
    else
        lk->seen[len] = true;
}

TEST(keys_of_every_length_up_to_300_bytes_are_kept_intact)
{
    struct long_keys lk = {{0}, false};
    struct rota_keyed_config cfg = {
        .expire = check_long_key, .arg = &lk, .seed = seed_b};
    struct rota_keyed *map = NULL;
    struct rota_keyed_stats empty, st;
    unsigned char key[300];

    CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0);
    rota_keyed_stats(map, &empty);
    for (size_t len = 0; len <= 300; len++) {
        fill_key(key, len);
        CHECK_EQ_INT(
            rota_keyed_set_in(map, key, len, &v[0], len % 17 + 1, NULL), 0);
        memset(key, 0xee, sizeof key); /* the map kept its own copy */
    }
    for (size_t len = 0; len <= 300; len++) { /* replace: no allocation */
        void *old = NULL;
        fill_key(key, len);
        CHECK_EQ_INT(
            rota_keyed_set_in(map, key, len, &v[len % 16], len % 17 + 1, &old),
            1);
        CHECK(old == &v[0]);
    }
    check_ok(map);
    for (size_t len = 0; len <= 300; len += 5) {
        void *value = NULL;
        fill_key(key, len);
        CHECK_EQ_INT(rota_keyed_remove(map, key, len, &value), 1);
        CHECK(value == &v[len % 16]);
        CHECK(!rota_keyed_contains(map, key, len));
    }
    check_ok(map);
    for (size_t len = 0; len <= 300; len++) {
        fill_key(key, len);
        CHECK_EQ_INT(rota_keyed_contains(map, key, len), len % 5 != 0);
        if (len > 0) { /* one byte changed: absent */
            key[len - 1] ^= 1;
            CHECK(!rota_keyed_contains(map, key, len));
        }
    }
    CHECK_EQ_INT(rota_keyed_advance(map, 100), 300 - 60);
    CHECK(!lk.bad);
    for (size_t len = 0; len <= 300; len++)
        CHECK_EQ_INT(lk.seen[len], len % 5 != 0);
    rota_keyed_stats(map, &st);
    CHECK_EQ_INT(st.count, 0);
    CHECK_EQ_INT(st.bytes, empty.bytes + st.slots * SLOT_BYTES); /* no keys */
    check_ok(map);
    rota_keyed_destroy(map);
}

/* Keys chosen to share a home slot in the 8-slot table form one cluster;
 * removing from its front and middle shifts the rest back, timers and all,
 * and a key whose home the cluster covers moves only as far as its home. */
TEST(deletion_shifts_cluster)
{
    static struct order o;
    uint64_t k0 = rota__sip_load64(seed_a), k1 = rota__sip_load64(seed_a + 8);
    uint64_t home0[4], home1 = 0;
    int found0 = 0;
    bool found1 = false;
    struct rota_keyed *map;
    struct rota_keyed_stats st;

    for (uint64_t x = 0; found0 < 4 || !found1; x++) {
        uint32_t home = (uint32_t)rota__fasthash(k0, k1, &x, sizeof x) & 7;
        if (home == 0 && found0 < 4)
            home0[found0++] = x;
        else if (home == 1 && !found1)
            home1 = x, found1 = true;
    }
    memset(&o, 0, sizeof o);
    map = make_order(&o);
    /* Slots 0-3 hold home0[], slot 4 home1 (three past its home), with
     * deadlines 5, 5, 3, 4 and 3. */
    const uint64_t deadline[5] = {5, 5, 3, 4, 3};
    for (int i = 0; i < 4; i++)
        rota_keyed_set_at(map, &home0[i], sizeof home0[i], NULL, deadline[i],
                          NULL);
    rota_keyed_set_at(map, &home1, sizeof home1, NULL, deadline[4], NULL);
    rota_keyed_stats(map, &st);
    CHECK_EQ_INT(st.slots, 8);
    check_ok(map);
    CHECK_EQ_INT(rota_keyed_remove(map, &home0[0], sizeof home0[0], NULL), 1);
    check_ok(map);
    CHECK_EQ_INT(rota_keyed_remove(map, &home0[2], sizeof home0[2], NULL), 1);
    check_ok(map);
    uint64_t d = 0;
    CHECK_EQ_INT(rota_keyed_get(map, &home0[1], sizeof home0[1], NULL, &d), 1);
    CHECK_EQ_U64(d, 5);
    CHECK_EQ_INT(rota_keyed_get(map, &home0[3], sizeof home0[3], NULL, &d), 1);
    CHECK_EQ_U64(d, 4);
    CHECK_EQ_INT(rota_keyed_get(map, &home1, sizeof home1, NULL, &d), 1);
    CHECK_EQ_U64(d, 3);
    /* A key set again after the removals takes a tie's later place. */
    rota_keyed_set_at(map, &home0[0], sizeof home0[0], NULL, 4, NULL);
    check_ok(map);
    for (uint64_t now = 0; now <= 5; now++)
        rota_keyed_advance(map, now);
    CHECK(!o.bad_key);
    CHECK_EQ_INT(o.n, 4);
    const uint64_t want[4] = {home1, home0[3], home0[0], home0[1]};
    const uint64_t at[4] = {3, 4, 4, 5};
    for (size_t i = 0; i < 4 && i < o.n; i++) {
        CHECK_EQ_U64(o.key[i], want[i]);
        CHECK_EQ_U64(o.at[i], at[i]);
    }
    check_ok(map);
    rota_keyed_destroy(map);
}

/* Every operation while a resize runs (the next table being emptied,
 * then entries migrating from the old table, which keeps TOMBs where they
 * left): sets, moves and removes of keys in either table, and expiries of
 * both, checked after each step against a plain array. */
struct mid_resize {
    bool present[4000];
    uint64_t deadline[4000];
    size_t fired;
    bool exact; /* advancing one tick at a time: each at its deadline */
    bool bad;
};

static void mid_resize_expire(struct rota_keyed *map, const void *key,
                              size_t len, void *value, void *arg)
{
    struct mid_resize *mr = arg;
    uint64_t k;

    (void)value;
    memcpy(&k, key, sizeof k);
    if (len != sizeof k || k >= 4000 || !mr->present[k] ||
        (mr->exact ? mr->deadline[k] != rota_keyed_now(map)
                   : mr->deadline[k] > rota_keyed_now(map)))
        mr->bad = true;
    else
        mr->present[k] = false;
    mr->fired++;
}

TEST(operations_mid_resize)
{
    static struct mid_resize mr;
    struct rota_keyed_config cfg = {
        .expire = mid_resize_expire, .arg = &mr, .seed = seed_b};
    struct rota_keyed *map = NULL;
    uint64_t now = 0, rng = 7;

    memset(&mr, 0, sizeof mr);
    mr.exact = true;
    CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0);
    for (int round = 0; round < 2; round++) {
        /* Round 0 grows through 1024 and 2048 slots; round 1 shrinks. */
        for (uint64_t op = 0; op < 3000; op++) {
            rng = rng * 6364136223846793005u + 1442695040888963407u;
            uint64_t r = rng >> 33;
            uint64_t k = round == 0 ? op : r % 4000;
            uint64_t d = now + 1 + r % 300;
            if (round == 1 && r % 4 != 0) { /* mostly removes */
                CHECK_EQ_INT(rota_keyed_remove(map, &k, sizeof k, NULL),
                             mr.present[k]);
                mr.present[k] = false;
            } else if (r % 5 == 0 && mr.present[k / 2]) {
                k /= 2;
                CHECK_EQ_INT(rota_keyed_move_at(map, &k, sizeof k, d), 0);
                mr.deadline[k] = d;
            } else {
                CHECK_EQ_INT(
                    rota_keyed_set_at(map, &k, sizeof k, NULL, d, NULL),
                    mr.present[k]);
                mr.present[k] = true;
                mr.deadline[k] = d;
            }
            if (op % 7 == 0)
                rota_keyed_advance(map, ++now);
            if (op % 3 == 0 || round == 1)
                check_ok(map);
        }
    }
    CHECK(!mr.bad);
    CHECK(mr.fired > 0);
    size_t left = 0;
    for (uint64_t k = 0; k < 4000; k++) {
        uint64_t d = 0;
        CHECK_EQ_INT(rota_keyed_get(map, &k, sizeof k, NULL, &d),
                     mr.present[k]);
        if (mr.present[k]) {
            CHECK_EQ_U64(d, mr.deadline[k]);
            left++;
        }
    }
    CHECK_EQ_INT(rota_keyed_count(map), left);
    mr.exact = false;
    rota_keyed_advance(map, now + 400);
    CHECK(!mr.bad);
    CHECK_EQ_INT(rota_keyed_count(map), 0);
    check_ok(map);
    rota_keyed_destroy(map);
}

TEST(own_timers_on_the_wheel)
{
    struct log log = {.action = destroy_in_callback};
    struct rota_keyed *map = make(&log, 0);
    struct own_timer own = {0};
    struct rota_wheel *w = rota_keyed_wheel(map);

    rota_timer_init(&own.timer, own_fire);
    CHECK_EQ_INT(rota_timer_arm_at(w, &own.timer, 15), 0);
    rota_keyed_set_in(map, K("k"), NULL, 20, NULL);
    CHECK_EQ_U64(rota_wheel_next_deadline(w), 15);
    int ms = 0;
    CHECK_EQ_INT(rota_wheel_timeout_ms(w, 0, 1000000, &ms), 0);
    CHECK_EQ_INT(ms, 15);
    CHECK_EQ_INT(rota_keyed_advance(map, 15), 1);
    CHECK_EQ_INT(own.fired, 1);
    CHECK_EQ_U64(rota_wheel_next_deadline(w), 20);
    CHECK_EQ_INT(rota_keyed_advance(map, 20), 1);
    CHECK_EQ_INT(log.rc, ROTA_EBUSY); /* destroy refused inside the callback */
    /* Drain hands back only the map's entries. */
    rota_keyed_set_in(map, K("k2"), NULL, 50, NULL);
    rota_timer_arm_at(w, &own.timer, 40);
    struct drain_log d = {0};
    CHECK_EQ_INT(rota_keyed_drain(map, count_drain, &d), 0);
    CHECK_EQ_INT(d.calls, 1);
    CHECK(rota_timer_pending(&own.timer));
    /* k2 is gone; the timer and the key count_drain set (at 25) fire. */
    own_map = map; /* destroy from a timer of ours: refused */
    CHECK_EQ_INT(rota_keyed_advance(map, 40), 2);
    own_map = NULL;
    CHECK_EQ_INT(own_destroy_rc, ROTA_EBUSY);
    CHECK_EQ_INT(own.fired, 2);
    check_ok(map);
    rota_keyed_destroy(map);
}

/* ------------------------------------------------------ borrowed keys */

static const void *drained_key;

static void note_drained(struct rota_keyed *map, const void *key, size_t len,
                         void *value, void *arg)
{
    (void)map, (void)value, (void)arg;
    if (len > 8)
        drained_key = key;
}

/* With borrow_keys a long key is the caller's bytes: no block is taken
 * for it, the newest pointer a set gave is the one kept (the old copy may
 * be freed at once: ASan and valgrind see a read of it), callbacks get
 * that pointer back, and a key changed behind the map's back is reported
 * by the check (the planted fault). */
TEST(borrowed_keys_are_kept_once_and_checked)
{
    struct log log = {0};
    struct rota_keyed_config cfg = {
        .expire = record, .arg = &log, .seed = seed_a, .borrow_keys = true};
    struct rota_keyed *m = NULL;
    if (!CHECK_EQ_INT(rota_keyed_create(&m, &cfg), 0))
        return;
    struct rota_keyed_stats empty, st;
    rota_keyed_stats(m, &empty);

    char *a = malloc(20), *b = malloc(20);
    static char c[] = "a-key-of-20-bytes!!";
    static char shortk[] = "short";
    if (!CHECK(a != NULL && b != NULL))
        return;
    memcpy(a, "a-key-of-20-bytes!!", 20);
    memcpy(b, a, 20);
    CHECK_EQ_INT(rota_keyed_set_at(m, a, 20, (void *)1, 10, NULL), 0);
    CHECK_EQ_INT(rota_keyed_set_at(m, K(shortk), (void *)3, ROTA_NEVER, NULL),
                 0);
    rota_keyed_stats(m, &st);
    CHECK_EQ_U64(st.bytes,
                 empty.bytes + st.slots * SLOT_BYTES); /* no key block */
    /* Replaced through b: a is no longer read. */
    void *old = NULL;
    CHECK_EQ_INT(rota_keyed_set_at(m, b, 20, (void *)2, 10, &old), 1);
    CHECK(old == (void *)1);
    free(a);
    CHECK_EQ_INT(rota_keyed_get(m, c, 20, &old, NULL), 1); /* equal bytes */
    CHECK(old == (void *)2);
    CHECK_EQ_INT(rota_keyed_check(m, NULL), 0);

    /* The planted fault: the caller changes its bytes; the check says so. */
    const char *why = NULL;
    b[3] ^= 1;
    CHECK_EQ_INT(rota_keyed_check(m, &why), ROTA_ECORRUPT);
    CHECK(why != NULL &&
          strcmp(why, "stored hash does not match the key") == 0);
    b[3] ^= 1;
    CHECK_EQ_INT(rota_keyed_check(m, NULL), 0);

    /* Expiry hands back the caller's pointer; the map reads nothing after. */
    CHECK_EQ_INT(rota_keyed_advance(m, 10), 1);
    CHECK_EQ_INT(log.n, 1);
    CHECK(log.f[0].value == (void *)2);
    CHECK_EQ_INT(log.f[0].len, 20);
    CHECK(memcmp(log.f[0].key, c, 19) == 0);
    free(b);
    CHECK_EQ_INT(rota_keyed_check(m, NULL), 0);

    /* Drain too; and a long key set again after a remove borrows anew. */
    CHECK_EQ_INT(rota_keyed_set_at(m, c, 20, (void *)4, ROTA_NEVER, NULL), 0);
    CHECK_EQ_INT(rota_keyed_drain(m, note_drained, NULL), 0);
    CHECK(drained_key == (const void *)c);
    rota_keyed_stats(m, &st);
    CHECK_EQ_U64(st.bytes, empty.bytes);
    CHECK_EQ_INT(rota_keyed_destroy(m), 0);
}

static const struct h_test tests[] = {
    H_TEST(create_and_destroy_check_their_arguments),
    H_TEST(invalid_arguments_return_einval),
    H_TEST(set_get_and_replace),
    H_TEST(u64_keys_are_their_eight_bytes),
    H_TEST(u64_keys_in_every_state),
    H_TEST(move_changes_only_an_existing_deadline),
    H_TEST(removed_keys_never_fire),
    H_TEST(keys_are_bytes),
    H_TEST(persistent_entries_never_fire),
    H_TEST(huge_ttl_saturates),
    H_TEST(removed_before_callback),
    H_TEST(callback_sets_same_key),
    H_TEST(callback_removes_due_entry),
    H_TEST(ttl_zero_fires_at_the_next_advance),
    H_TEST(never_early_and_order),
    H_TEST(one_entry_per_key),
    H_TEST(move_overdue_entry),
    H_TEST(advance_max_stops_at_its_limit),
    H_TEST(drain_runs_every_call_before_returning),
    H_TEST(drain_from_expire_callback),
    H_TEST(allocator_hook_sees_every_allocation_and_free),
    H_TEST(memory_per_entry_is_as_documented),
    H_TEST(table_grows_and_shrinks),
    H_TEST(next_growth_foretells_memory),
    H_TEST(siphash_matches_its_reference_vectors),
    H_TEST(flooding_switches_to_siphash),
    H_TEST(fasthash_uses_every_byte),
    H_TEST(fasthash_precomputed_secrets),
    H_TEST(fasthash_spreads_structured_keys),
    H_TEST(fasthash_spread_catches_planted_collapse),
    H_TEST(fasthash_spreads_ids_under_every_seed),
    H_TEST(fasthash_seed_spread_catches_one_multiply),
    H_TEST(own_timers_on_the_wheel),
    H_TEST(pending_entries_survive_moves),
    H_TEST(callback_grows_table_mid_pass),
    H_TEST(keys_of_every_length_up_to_300_bytes_are_kept_intact),
    H_TEST(deletion_shifts_cluster),
    H_TEST(operations_mid_resize),
    H_TEST(borrowed_keys_are_kept_once_and_checked),
};

int main(int argc, char **argv)
{
    return h_main(argc, argv, tests, H_COUNT(tests));
}
