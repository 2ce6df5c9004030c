/* SPDX-License-Identifier: MIT */
/*
 * rota/keyed.h - timers by key, for TTL caches.
 *
 * A keyed map holds entries {key, value, deadline}: set a key with a time to
 * live, move its deadline, remove it, look it up, and have an expire
 * callback called when its time comes.  It is the TimingWheel behind
 * go-zero's collection cache (SetTimer, MoveTimer, RemoveTimer, Drain, Stop)
 * done in C on rota's wheel, without its known bugs:
 *   - exactly one live entry per key, whatever sequence of set / move /
 *     remove / expiry happens (go-zero#205 left two after a move and a
 *     remove);
 *   - drain calls its function for every entry before it returns
 *     (go-zero#5314 scheduled them and returned);
 *   - never early, never a rotation late (go-zero#5510), no work while
 *     nothing is due.
 *
 * ENTRIES
 *   A key is any byte string (length 0 to UINT32_MAX), copied into memory the
 *   map owns: the caller's buffer may be reused as soon as a call returns.
 *   A map created with borrow_keys instead keeps the caller's pointer for
 *   keys longer than 8 bytes (shorter ones are always copied into the
 *   slot), so a cache whose values already hold their key stores it once
 *   (BORROWED KEYS below).
 *   A value is the caller's pointer, stored and handed back, never
 *   dereferenced.  An entry has a deadline in ticks or none (ROTA_NEVER): an
 *   entry without a deadline stays until it is removed, so the map can be a
 *   cache's only index, keys with and without a TTL alike.
 *
 * TIME
 *   The map owns a rota wheel (rota.h) and reads no clock: the caller passes
 *   `now` in ticks to rota_keyed_advance(), as to the wheel.  Names follow
 *   rota.h's rule (NAMES FOR TIME): the `_at` functions take an absolute
 *   deadline; the `_in` functions take a time to live counted from the
 *   map's now (the latest `now` given to advance), adding with
 *   saturation.  ROTA_NEVER as a deadline or a ttl means "no expiry".
 *   A deadline at or before now (a ttl of 0) makes the entry due: it expires
 *   in the next advance, never inside the set or move that made it due.
 *   An entry lives until an advance collects it: one whose deadline has
 *   passed is still found by get and contains, and moving or setting it
 *   gives it the new deadline (it lives on).  A cache that wants Redis's
 *   lazy expiry advances before it serves a request, or compares the
 *   deadline get returns with its own now.
 *
 * BORROWED KEYS
 *   With borrow_keys, rota_keyed_set_at() and rota_keyed_set_in() keep the
 *   `key` pointer they are given (for keys longer than 8 bytes) and read
 *   through it to compare keys, to rehash and to hand the key to the expire
 *   and drain callbacks.  The bytes must stay valid and unchanged for as
 *   long as the entry is in the map: until it is removed, expires (the
 *   expire callback still receives that pointer, and the map reads nothing
 *   through it after the callback returns) or is drained.  A set on an
 *   existing key takes the new pointer, so a caller that moves its copy
 *   (a value reallocated) sets the key again with the new one before the
 *   old goes; the other functions take any pointer to equal bytes and keep
 *   nothing.  The map never writes or frees borrowed bytes, and they are
 *   not in rota_keyed_stats()'s bytes.  rota_keyed_check() rehashes every
 *   key, so bytes changed behind the map's back are reported (as a stored
 *   hash that does not match its key) where they would otherwise make
 *   lookups miss.
 *
 * EXPIRY
 *   An advance whose `now` reaches an entry's deadline removes the entry from
 *   the map and then calls the expire callback with its key and value; the
 *   key bytes stay valid until the callback returns, then the entry is
 *   freed.  Entries due in one advance expire in deadline order, ties in the
 *   order their deadlines were set (an entry moved later takes its place
 *   when the wheel re-files it, as rota.h says of touched timers).
 *
 * THE WHEEL
 *   The map's wheel is embedded in the map (no per-entry back pointer is
 *   needed to find the map from a firing timer, which saves 8 bytes an
 *   entry).  rota_keyed_wheel() exposes it so an event loop can sleep on
 *   rota_wheel_timeout_ms() and arm its own timers on the same wheel; they
 *   fire from rota_keyed_advance() like the entries.  Advance it only
 *   through rota_keyed_advance(), never call rota_wheel_drain() on it (use
 *   rota_keyed_drain()), and cancel your own timers on it before
 *   rota_keyed_destroy().
 *
 * CALLBACK CONTEXT
 *   The expire callback may call any function of this map (set the same key
 *   again, move or remove others, drain) except rota_keyed_advance() and
 *   rota_keyed_advance_max(), which return ROTA_EBUSY (the wheel is running
 *   it), and rota_keyed_destroy(), which returns ROTA_EBUSY.  A key set again
 *   with a ttl of 0 from its own callback expires in the next advance, so it
 *   cannot loop.  The drain function may call any function, including set
 *   (the new entries stay), except advance, drain and destroy (ROTA_EBUSY);
 *   nor may it advance the map's wheel directly.
 *
 * MEMORY
 *   All memory comes from the allocator in the config (malloc and free when
 *   it is NULL): the slot array, which holds the entries themselves (two
 *   arrays for the length of a resize), a block per key longer than 8 bytes
 *   (its length, no header) and the map itself.  When an allocation fails
 *   the call returns ROTA_ENOMEM and every existing entry, value and
 *   deadline is as it was; a failed table growth is not an error (the map
 *   works on at a higher load and tries again on a later insert, and
 *   refuses an insert only when a single empty slot is left).  The table
 *   grows at load 3/4 to half as large again (load 1/2) and shrinks below
 *   1/8 in steps: each insert, removal
 *   or expiry empties 64 slots of the new table, then moves eight entries
 *   into it, so no single call pays for rehashing a million keys (the
 *   worst seen inserting 1e7 keys: about 40 ms, the allocator freeing the
 *   old table).
 *
 *   Measured on x86-64 (the test suite checks the slot size):
 *     slot                   56 bytes (32 of them the struct rota_timer),
 *                            keys of up to 8 bytes included; 75 to 112
 *                            bytes an entry at load 3/4 to 1/2
 *     + longer keys          a block of the key's length (with glibc
 *                            malloc's 8 bytes, rounded up to 16); none
 *                            when borrowed (borrow_keys)
 *   The table is 98, 111, 84 and 96 bytes an entry at 1e4, 1e5, 1e6 and
 *   1e7 entries (17,434 to 17,176,657 slots; 92 on average over sizes
 *   from 1e5 to 1e7).  A resize holds the old array and the new one at
 *   once (1.6 GB as it passes 8.6 million keys).
 *
 * HASHING
 *   Keys are hashed under a 128-bit secret seed, given in the config or read
 *   from getrandom(), so a client that does not know it cannot choose keys
 *   that pile into one place in the table (hash flooding).  The map starts
 *   with a fast multiply-fold hash; if a set, move or remove ever compares
 *   more than 64 + 32 log2(table size) slots in one probe (random keys do
 *   not: the longest probe grows with the log of the size, to about 330
 *   slots at 2^24), it rebuilds the table once with SipHash-1-3 and keeps
 *   that for good.  rota_keyed_stats() reports the longest probe and
 *   whether the switch happened.
 *
 * THREAD SAFETY
 *   None: a map, its wheel and its callbacks belong to one thread at a time.
 *   Different maps are independent.
 *
 * ERRORS
 *   Negative ROTA_E* codes from rota.h: ROTA_EINVAL (NULL map, NULL key with
 *   a non-zero length, a key longer than UINT32_MAX), ROTA_ENOENT (move of an
 *   absent key), ROTA_ENOMEM, ROTA_EBUSY (see CALLBACK CONTEXT), ROTA_ESYS
 *   (getrandom() failed in create), ROTA_ECORRUPT (rota_keyed_check()).
 */
#ifndef ROTA_KEYED_H
#define ROTA_KEYED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../rota.h"

#ifdef __cplusplus
extern "C" {
#endif

struct rota_keyed;

/* Called when an entry expires; the entry is already gone from the map. */
typedef void rota_keyed_expire_fn(struct rota_keyed *map, const void *key,
                                  size_t key_len, void *value, void *arg);

/* Called by rota_keyed_drain() for each entry, already gone from the map. */
typedef void rota_keyed_drain_fn(struct rota_keyed *map, const void *key,
                                 size_t key_len, void *value, void *arg);

/* Size of the hash seed in bytes. */
#define ROTA_KEYED_SEED_SIZE 16

/* Zero-initialise, then set what you need. */
struct rota_keyed_config {
    uint64_t now;                 /* the wheel's starting time, in ticks */
    rota_keyed_expire_fn *expire; /* may be NULL: entries just go */
    void *arg;                    /* passed to expire */
    /* NULL: malloc and free. */
    const struct rota_allocator *allocator;
    /* ROTA_KEYED_SEED_SIZE secret bytes, or NULL to read them from
     * getrandom().  Give a fixed seed only for reproducible tests. */
    const void *seed;
    /* Keep the caller's pointer to keys longer than 8 bytes instead of a
     * copy (see BORROWED KEYS); false: copy them. */
    bool borrow_keys;
};

/* Counters, O(1) to read. */
struct rota_keyed_stats {
    size_t count;         /* entries in the map */
    size_t expiring;      /* entries with a deadline */
    size_t slots;         /* table slots (the larger table mid-resize) */
    size_t bytes;         /* memory held from the allocator, map included */
    size_t longest_probe; /* the longest probe: most slots one set, move
                             or remove compared (see HASHING) */
    bool sip_hash;        /* switched to SipHash-1-3 (see HASHING) */
    uint64_t expired;     /* entries removed by expiry */
    uint64_t resizes;     /* table resizes started */
};

/*
 * Create an empty map (config NULL: all defaults, time 0).  0 and *out
 * set, or ROTA_EINVAL (out NULL, an allocator without alloc or free),
 * ROTA_ENOMEM, ROTA_ESYS (no seed given and getrandom() failed).  A `now`
 * above ROTA_MAX_DEADLINE is read as ROTA_MAX_DEADLINE, as by the wheel.
 */
ROTA_API int rota_keyed_create(struct rota_keyed **out,
                               const struct rota_keyed_config *config);

/*
 * Free the map and every entry, calling nothing (values are the caller's:
 * drain first to free them).  0 (also for NULL), or ROTA_EBUSY from inside
 * rota_keyed_advance() (any callback it runs, your own timers' included)
 * or a drain function of this map.
 */
ROTA_API int rota_keyed_destroy(struct rota_keyed *map);

/*
 * Set `key` to `value`, expiring `ttl` ticks after the map's now (ROTA_NEVER:
 * no expiry).  If the key exists its value is replaced (the old one stored in
 * *old_value when that is not NULL) and its deadline moved; nothing is
 * allocated then, so a replace cannot fail with ROTA_ENOMEM.  Returns 0 if
 * the key was added, 1 if it was replaced, or ROTA_EINVAL, ROTA_ENOMEM (the
 * map is unchanged).
 */
ROTA_API int rota_keyed_set_in(struct rota_keyed *map, const void *key,
                               size_t key_len, void *value, uint64_t ttl,
                               void **old_value);

/* As rota_keyed_set_in(), with an absolute deadline (ROTA_NEVER: none). */
ROTA_API int rota_keyed_set_at(struct rota_keyed *map, const void *key,
                               size_t key_len, void *value, uint64_t deadline,
                               void **old_value);

/*
 * Move an existing key's deadline to `ttl` ticks after the map's now
 * (ROTA_NEVER: make it persistent).  A later deadline is a store (the
 * wheel's touch); an earlier one re-files the timer.  0, or ROTA_ENOENT if
 * the key is absent, ROTA_EINVAL.
 */
ROTA_API int rota_keyed_move_in(struct rota_keyed *map, const void *key,
                                size_t key_len, uint64_t ttl);

/* As rota_keyed_move_in(), with an absolute deadline (ROTA_NEVER: none). */
ROTA_API int rota_keyed_move_at(struct rota_keyed *map, const void *key,
                                size_t key_len, uint64_t deadline);

/*
 * Remove a key, calling nothing.  Returns 1 if it was present (its value
 * stored in *value when that is not NULL), 0 if not, or ROTA_EINVAL.
 */
ROTA_API int rota_keyed_remove(struct rota_keyed *map, const void *key,
                               size_t key_len, void **value);

/*
 * Look a key up.  Returns 1 if present, storing its value in *value and its
 * deadline (ROTA_NEVER if none) in *deadline when they are not NULL; 0 if
 * absent; ROTA_EINVAL.
 */
ROTA_API int rota_keyed_get(const struct rota_keyed *map, const void *key,
                            size_t key_len, void **value, uint64_t *deadline);

/*
 * Keys that are numbers: an id, a connection or session number, a hash the
 * caller has already made.  Each _u64 call is the call of the same name
 * above with the number's 8 bytes as they lie in memory (&key, 8), so the
 * two forms name the same entry and mix freely, and the expire and drain
 * callbacks receive those 8 bytes (memcpy them into a uint64_t).  Same
 * contracts and return values; the key is passed in a register, so the
 * call skips the length checks and the load of the key (the lean path of
 * docs/keyed.md).
 */
ROTA_API int rota_keyed_set_u64_in(struct rota_keyed *map, uint64_t key,
                                   void *value, uint64_t ttl, void **old_value);
ROTA_API int rota_keyed_set_u64_at(struct rota_keyed *map, uint64_t key,
                                   void *value, uint64_t deadline,
                                   void **old_value);
ROTA_API int rota_keyed_move_u64_in(struct rota_keyed *map, uint64_t key,
                                    uint64_t ttl);
ROTA_API int rota_keyed_move_u64_at(struct rota_keyed *map, uint64_t key,
                                    uint64_t deadline);
ROTA_API int rota_keyed_remove_u64(struct rota_keyed *map, uint64_t key,
                                   void **value);
ROTA_API int rota_keyed_get_u64(const struct rota_keyed *map, uint64_t key,
                                void **value, uint64_t *deadline);

/* Whether the key is present (false for a NULL map or invalid key). */
ROTA_API bool rota_keyed_contains(const struct rota_keyed *map, const void *key,
                                  size_t key_len);

/* The number of entries, O(1). */
ROTA_API size_t rota_keyed_count(const struct rota_keyed *map);

/*
 * Set the map's time to `now` and expire every entry whose deadline is at or
 * before it (see EXPIRY); timers of the caller's own on the map's wheel fire
 * too.  Returns the number of callbacks run (saturated to INT_MAX), or
 * ROTA_EINVAL, ROTA_EBUSY.  As rota_wheel_advance().
 */
ROTA_API int rota_keyed_advance(struct rota_keyed *map, uint64_t now);

/* As rota_keyed_advance(), running at most `max_fires` callbacks and filing
 * at most `max_fires` timers again; stores the number run in *fired and
 * returns 1 if it stopped with work left (call again soon).  As
 * rota_wheel_advance_max(). */
ROTA_API int rota_keyed_advance_max(struct rota_keyed *map, uint64_t now,
                                    size_t max_fires, size_t *fired);

/* The map's time: the latest `now` given to advance (or the config's). */
ROTA_API uint64_t rota_keyed_now(const struct rota_keyed *map);

/* The map's wheel (see THE WHEEL), for rota_wheel_timeout_ms() and your own
 * timers. */
ROTA_API struct rota_wheel *rota_keyed_wheel(struct rota_keyed *map);

/*
 * Remove every entry, calling fn(map, key, key_len, value, arg) for each
 * before this returns, in no particular order; the map is empty afterwards
 * (except for keys fn sets) and stays usable.  Frees the table.
 * 0, or ROTA_EINVAL (map or fn NULL), ROTA_EBUSY (from a drain function).
 */
ROTA_API int rota_keyed_drain(struct rota_keyed *map, rota_keyed_drain_fn *fn,
                              void *arg);

/* Copy the counters into *out. */
ROTA_API void rota_keyed_stats(const struct rota_keyed *map,
                               struct rota_keyed_stats *out);

/*
 * The table's next growth, for a caller that keeps its memory under a
 * bound (see MEMORY): once the count reaches *at_count (by an insert, with
 * no resize running), the map allocates *bytes more for a table half as
 * large again, held beside the current one until the resize ends.  A caller that
 * counts a share of *bytes with each insert as the count approaches
 * *at_count has counted all of it when the growth comes, so no single call
 * makes its memory jump.  While a resize runs, the growth after it; with
 * no table yet, the first insert's (*at_count 1).  *at_count is SIZE_MAX
 * and *bytes 0 when the table is at its largest.  Either pointer may be
 * NULL; nothing is stored for a NULL map.  O(1).
 */
ROTA_API void rota_keyed_next_growth(const struct rota_keyed *map,
                                     size_t *at_count, size_t *bytes);

/*
 * Check every invariant: each entry reachable from its home slot, counts,
 * memory accounting, each deadline armed on the wheel, and the wheel's own
 * (rota_wheel_check()).  O(entries + slots).  For tests and debugging.
 * 0, ROTA_EINVAL (map NULL) or ROTA_ECORRUPT, with a static description
 * in *why when not NULL.
 */
ROTA_API int rota_keyed_check(const struct rota_keyed *map, const char **why);

#ifdef __cplusplus
}
#endif

#endif /* ROTA_KEYED_H */
