/* SPDX-License-Identifier: MIT */
/*
 * keyed_rota.c - W6 adapter for rota/keyed.h: keys are the ids, passed by
 * value to the _u64 calls (the ids' 8 bytes, as docs/keyed.md teaches for
 * numeric keys), the clock is the map's own (rota_keyed_advance), set and
 * move take a ttl from the map's now.  Public API only.
 */
#include "keyed_bench.h"

#include <rota/keyed.h>
#include <stdlib.h>

static void count_expiry(struct rota_keyed *map, const void *key, size_t len,
                         void *value, void *arg)
{
    (void)map, (void)key, (void)len, (void)value;
    (*(uint64_t *)arg)++;
}

static void *rota_create(uint64_t now, uint64_t *expired)
{
    struct rota_keyed_config cfg = {.now = now,
                                    .expire = count_expiry,
                                    .arg = expired,
                                    .seed = keyed_map_seed};
    struct rota_keyed *map = NULL;
    if (rota_keyed_create(&map, &cfg) != 0)
        abort();
    return map;
}

static void rota_set(void *impl, uint64_t key, uint64_t ttl)
{
    if (rota_keyed_set_u64_in(impl, key, NULL, ttl, NULL) < 0)
        abort();
}

static bool rota_move(void *impl, uint64_t key, uint64_t ttl)
{
    return rota_keyed_move_u64_in(impl, key, ttl) == 0;
}

static bool rota_remove(void *impl, uint64_t key)
{
    return rota_keyed_remove_u64(impl, key, NULL) == 1;
}

static void rota_advance(void *impl, uint64_t now)
{
    rota_keyed_advance(impl, now);
}

static size_t rota_count(void *impl)
{
    return rota_keyed_count(impl);
}

static void rota_destroy(void *impl)
{
    rota_keyed_destroy(impl);
}

const struct keyed_impl keyed_rota = {
    "rota",      rota_create,  rota_set,   rota_move,
    rota_remove, rota_advance, rota_count, rota_destroy,
};
