/* SPDX-License-Identifier: MIT */
/*
 * test_checkers.c - the invariant checkers must be able to fail.
 *
 * Every other test calls rota_wheel_check() and rota_keyed_check() on sound
 * structures, where a checker that always returned 0 would pass too.  Here
 * each is handed a structure corrupted in one known way that cannot crash
 * it (a flipped occupancy bit, a deadline earlier than the slot the timer
 * sits in, timers taken out of a map's wheel behind the map's back) and
 * must return ROTA_ECORRUPT with the matching reason; undoing the damage
 * must make it pass again, which shows the corruption was the only fault.
 *
 * The wheel's corruptions write its private fields (rota.h makes them
 * visible so that a wheel can be embedded): they describe what a stray
 * write or a misuse would leave, not an API.
 */
#include <rota.h>
#include <rota/keyed.h>

#include "harness.h"

/* The checker's verdict and reason; prints the reason. */
static int check_wheel(const struct rota_wheel *w, const char **why)
{
    *why = NULL;
    int rc = rota_wheel_check(w, why);
    printf("  rota_wheel_check: %d (%s)\n", rc, *why ? *why : "no reason");
    return rc;
}

static bool has(const char *why, const char *word)
{
    return why != NULL && strstr(why, word) != NULL;
}

static void flip_bit(struct rota_wheel *w, unsigned slot)
{
    w->occupied_[slot / 64] ^= (uint64_t)1 << (slot % 64);
}

static struct rota_wheel wheel; /* ~37 KiB: not on the stack */

TEST(wheel_check_catches_flipped_occupancy_bit)
{
    struct rota_timer t;
    const char *why;

    rota_wheel_init(&wheel, 0);
    rota_timer_init(&t, NULL);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t, 1000), 0);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);

    /* An empty slot of level 1 marked occupied: the bitmap no longer
     * agrees with the lists. */
    unsigned slot = ROTA_WHEEL_SLOTS + 100;
    CHECK(!(wheel.occupied_[slot / 64] >> (slot % 64) & 1));
    flip_bit(&wheel, slot);
    CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
    CHECK(has(why, "bit"));

    /* And the other way: the occupied slot's bit cleared. */
    flip_bit(&wheel, slot);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    unsigned home = ROTA_WHEEL_SLOTS + (1000 >> ROTA_WHEEL_BITS);
    CHECK(wheel.occupied_[home / 64] >> (home % 64) & 1);
    flip_bit(&wheel, home);
    CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
    CHECK(has(why, "bit"));
    flip_bit(&wheel, home);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t), 1);
}

/* While a limited advance leaves a slot half cascaded, the inline arm must
 * be switched off (an arm inside that slot has to join the cascade's back);
 * a wheel that says otherwise would file such a timer out of order. */
TEST(wheel_check_catches_inline_arm_left_on_in_a_cascade)
{
    static struct rota_timer t[10];
    const char *why;

    rota_wheel_init(&wheel, 0);
    for (unsigned i = 0; i < 10; i++) {
        rota_timer_init(&t[i], NULL);
        CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[i], 300 + i), 0);
    }
    /* At 256 the level-1 slot [256, 512) cascades; a limit of 2 stops
     * after two re-filings. */
    CHECK_EQ_INT(rota_wheel_advance_max(&wheel, 256, 2, NULL), 1);
    CHECK(wheel.cascade_end_ == 512);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    CHECK(wheel.arm_min_ == UINT64_MAX);
    wheel.arm_min_ = 512; /* the inline arm on mid-cascade */
    CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
    CHECK(has(why, "inline arm"));
    wheel.arm_min_ = UINT64_MAX;
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 299), 0);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    CHECK(wheel.cascade_end_ == 0);
    for (unsigned i = 0; i < 10; i++)
        CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[i]), 1);
}

/* The inline arm files a deadline >= arm_min_ with no other check: one
 * set too low would file a due deadline, one an idle advance makes due,
 * or one below the cached earliest deadline without lowering it. */
TEST(wheel_check_catches_arm_min_too_low)
{
    static struct rota_timer t[2];
    const char *why;

    rota_wheel_init(&wheel, 100);
    for (unsigned i = 0; i < 2; i++)
        rota_timer_init(&t[i], NULL);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[0], 5000), 0);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[1], 7000), 0);
    CHECK(rota_wheel_next_deadline(&wheel) == 5000);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    /* A debug build's arm_min_ is always UINT64_MAX (every arm goes to
     * the library): the planted values below fail there for that. */
    bool debug = wheel.pending_above_ == UINTPTR_MAX;
    /* The earliest known and no cascade open: arm_min_ is the earliest,
     * raised to the next slot start of the level at which 4999 and cur
     * (100) differ, level 1 (see the next test). */
    CHECK(wheel.arm_min_ == (debug ? UINT64_MAX : 5120));
    uint64_t good = wheel.arm_min_;
    wheel.arm_min_ = 100; /* now_: a deadline at now would be filed */
    CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
    CHECK(has(why, debug ? "debug" : "due"));
    wheel.arm_min_ = wheel.next_step_ - 1; /* below the next slot start */
    CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
    CHECK(has(why, debug ? "debug" : "advance"));
    wheel.arm_min_ = 4999; /* above now_ and next_step_, below 5000 */
    CHECK(wheel.next_step_ <= 4999);
    CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
    CHECK(has(why, debug ? "debug" : "earliest"));
    wheel.arm_min_ = good;
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    for (unsigned i = 0; i < 2; i++)
        CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[i]), 1);
}

/* The inline arm finds a deadline's slot against arm_min_ - 1, not cur:
 * the same slot only if arm_min_ - 1 ends its slot at the level where it
 * and cur differ.  5001 does not (5000 and 5050 share level 1's slot
 * [4864, 5120), where cur, 100, differs from them): against 5000, 5050
 * would be filed at level 0, whose slots hold cur's block [0, 256), and
 * the checker finds the wheel corrupt. */
TEST(wheel_check_catches_arm_min_inside_a_slot)
{
    static struct rota_timer t[2];
    const char *why;

    rota_wheel_init(&wheel, 100);
    for (unsigned i = 0; i < 2; i++)
        rota_timer_init(&t[i], NULL);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[0], 5000), 0);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    bool debug = wheel.pending_above_ == UINTPTR_MAX;
    CHECK(wheel.arm_min_ == (debug ? UINT64_MAX : 5120));
    uint64_t good = wheel.arm_min_;
    wheel.arm_min_ = 5001; /* above now_, next_step_ and the earliest */
    CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
    CHECK(has(why, debug ? "debug" : "slot other than cur"));
    if (!debug) {
        /* What the rule prevents: the inline arm files 5050 a level too
         * low. */
        CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[1], 5050), 0);
        wheel.arm_min_ = good;
        CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
        CHECK(has(why, "slot"));
        /* Out of the wrong list by hand, then as the library files it. */
        t[1].link_.prev->next = t[1].link_.next;
        t[1].link_.next->prev = t[1].link_.prev;
        rota__list_emptied(&wheel, t[1].link_.prev);
        t[1].link_.prev = ROTA__IDLE;
        wheel.stats_.armed--;
        CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
        CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t[1], 5050), 0);
        CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
        CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[1]), 1);
    }
    wheel.arm_min_ = good;
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t[0]), 1);
}

/* The due list's head is a timer that is never armed, whose deadline,
 * ROTA_NEVER, no run of fires can have: the fire loop ends a run where
 * the head's deadline is not the run's, without testing for the list's
 * end.  Any other deadline there would have the loop fire the head. */
TEST(wheel_check_catches_a_due_head_with_a_deadline)
{
    static struct rota_timer t;
    const char *why;

    rota_wheel_init(&wheel, 100);
    rota_timer_init(&t, NULL);
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t, 200), 0);
    CHECK(wheel.due_.deadline_ == ROTA_NEVER);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    wheel.due_.deadline_ = 200; /* the deadline of the run at 200 */
    CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
    CHECK(has(why, "due list's head"));
    wheel.due_.deadline_ = ROTA_NEVER;
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    CHECK_EQ_INT(rota_wheel_advance(&wheel, 200), 1);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
}

TEST(wheel_check_catches_timer_in_the_wrong_slot)
{
    struct rota_timer t;
    const char *why;

    rota_wheel_init(&wheel, 0);
    rota_timer_init(&t, NULL);
    /* 1000 files in level 1's slot of [768, 1024). */
    CHECK_EQ_INT(rota_timer_arm_at(&wheel, &t, 1000), 0);
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);

    /* A later deadline in the same slot is legal (a touch stores it); an
     * earlier one than the slot's start means the timer would fire late. */
    t.deadline_ = 1020;
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    t.deadline_ = 500;
    CHECK_EQ_INT(check_wheel(&wheel, &why), ROTA_ECORRUPT);
    CHECK(has(why, "deadline"));
    t.deadline_ = 1000;
    CHECK_EQ_INT(check_wheel(&wheel, &why), 0);
    CHECK_EQ_INT(rota_timer_cancel(&wheel, &t), 1);
}

/* ----------------------------------------------------------- keyed map */

static const unsigned char seed[ROTA_KEYED_SEED_SIZE] = {1, 2, 3};

static struct rota_keyed *new_map(void)
{
    struct rota_keyed_config cfg = {.seed = seed};
    struct rota_keyed *map = NULL;
    if (!CHECK_EQ_INT(rota_keyed_create(&map, &cfg), 0))
        return NULL;
    for (unsigned i = 0; i < 50; i++) {
        char key[16];
        int len = snprintf(key, sizeof key, "key-%u", i);
        CHECK_EQ_INT(rota_keyed_set_in(map, key, (size_t)len, NULL,
                                       i % 2 ? ROTA_NEVER : 100 + i, NULL),
                     0);
    }
    return map;
}

static int check_map(const struct rota_keyed *map, const char **why)
{
    *why = NULL;
    int rc = rota_keyed_check(map, why);
    printf("  rota_keyed_check: %d (%s)\n", rc, *why ? *why : "no reason");
    return rc;
}

static void forget(struct rota_timer *t, void *arg)
{
    (*(unsigned *)arg)++;
    (void)t;
}

TEST(keyed_check_catches_timers_lost_behind_its_back)
{
    struct rota_keyed *map = new_map();
    const char *why;
    unsigned taken = 0;

    if (map == NULL)
        return;
    CHECK_EQ_INT(check_map(map, &why), 0);
    /* The map's wheel is shared with the caller (rota_keyed_wheel()), so
     * a caller can drain it: the 25 entries with a deadline still count
     * as expiring, but their timers are idle. */
    CHECK_EQ_INT(rota_wheel_drain(rota_keyed_wheel(map), forget, &taken), 0);
    CHECK_EQ_INT(taken, 25);
    CHECK_EQ_INT(check_map(map, &why), ROTA_ECORRUPT);
    CHECK(has(why, "expiring") || has(why, "fewer timers"));
    CHECK_EQ_INT(rota_keyed_destroy(map), 0);
}

TEST(keyed_check_catches_a_corrupt_wheel)
{
    struct rota_keyed *map = new_map();
    const char *why;

    if (map == NULL)
        return;
    struct rota_wheel *w = rota_keyed_wheel(map);
    unsigned slot = 3 * ROTA_WHEEL_SLOTS + 200; /* level 3: empty */
    CHECK_EQ_INT(check_map(map, &why), 0);
    flip_bit(w, slot);
    CHECK_EQ_INT(check_map(map, &why), ROTA_ECORRUPT);
    CHECK(has(why, "bit"));
    flip_bit(w, slot);
    CHECK_EQ_INT(check_map(map, &why), 0);
    CHECK_EQ_INT(rota_keyed_destroy(map), 0);
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(wheel_check_catches_flipped_occupancy_bit),
        H_TEST(wheel_check_catches_timer_in_the_wrong_slot),
        H_TEST(wheel_check_catches_inline_arm_left_on_in_a_cascade),
        H_TEST(wheel_check_catches_arm_min_too_low),
        H_TEST(wheel_check_catches_arm_min_inside_a_slot),
        H_TEST(wheel_check_catches_a_due_head_with_a_deadline),
        H_TEST(keyed_check_catches_timers_lost_behind_its_back),
        H_TEST(keyed_check_catches_a_corrupt_wheel),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
