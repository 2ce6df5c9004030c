/* SPDX-License-Identifier: MIT */
/*
 * keyed_bench.h - the interface W6 (keyed TTL timers) drives: set, move,
 * remove by 8-byte id, and advance a simulated clock.  One adapter per
 * implementation: keyed_rota.c (rota/keyed.h) and keyed_rounds.c (the
 * go-zero-style `hashed-rounds` baseline).
 */
#ifndef ROTA_BENCH_KEYED_H
#define ROTA_BENCH_KEYED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keyed_impl {
    const char *name;
    /* An empty map at time `now`; each expiry increments *expired. */
    void *(*create)(uint64_t now, uint64_t *expired);
    /* Add the key, or replace its value and move its deadline. */
    void (*set)(void *impl, uint64_t key, uint64_t ttl);
    /* Move an existing key's deadline; false if absent. */
    bool (*move)(void *impl, uint64_t key, uint64_t ttl);
    /* Remove; false if absent. */
    bool (*remove)(void *impl, uint64_t key);
    /* Advance the clock to `now`, expiring what is due. */
    void (*advance)(void *impl, uint64_t now);
    size_t (*count)(void *impl);
    void (*destroy)(void *impl);
};

/* The hash seed of rota's map, from bench_keyed --map-seed (so that counts
 * under callgrind repeat exactly), or NULL for one the map draws itself. */
extern const unsigned char *keyed_map_seed;

extern const struct keyed_impl keyed_rota;
extern const struct keyed_impl keyed_hashed_rounds;

#endif /* ROTA_BENCH_KEYED_H */
