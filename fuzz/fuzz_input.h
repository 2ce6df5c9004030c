/* SPDX-License-Identifier: MIT */
/*
 * fuzz_input.h - how fuzz_wheel.c reads its bytes, shared with the corpus
 * generator (gen_corpus.c) so that a generated file replays exactly.
 */
#ifndef ROTA_FUZZ_INPUT_H
#define ROTA_FUZZ_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rota.h>

struct fuzz_bytes {
    const uint8_t *data;
    size_t size, pos;
};

/* How many bytes a value in [0, bound) takes (bound 0: any 64 bits). */
static inline unsigned fuzz_width(uint64_t bound)
{
    if (bound == 0 || bound > ((uint64_t)1 << 32))
        return 8;
    if (bound > 65536)
        return 4;
    if (bound > 256)
        return 2;
    return 1;
}

/* The next value; missing bytes read as 0. */
static inline uint64_t fuzz_bytes_next(void *ctx, uint64_t bound)
{
    struct fuzz_bytes *in = ctx;
    unsigned width = fuzz_width(bound);
    uint64_t v = 0;

    for (unsigned i = 0; i < width; i++)
        if (in->pos < in->size)
            v |= (uint64_t)in->data[in->pos++] << (8 * i);
    return bound == 0 ? v : v % bound;
}

static inline bool fuzz_bytes_done(void *ctx)
{
    const struct fuzz_bytes *in = ctx;
    return in->pos >= in->size;
}

static inline size_t fuzz_pool_size(uint8_t byte)
{
    return 1 + byte % 32u;
}

/* Where a run's clock starts: the low and high ends, bits set in every
 * level, and just below boundaries of levels 2, 3 and 5 of the wheel
 * (rota.h's ROTA_WHEEL_BITS), so the first steps cascade. */
#define FUZZ_STARTS 8u
static inline uint64_t fuzz_start_time(uint8_t byte)
{
    switch (byte % FUZZ_STARTS) {
    case 0:
        return 0;
    case 1:
        return 1000000;
    case 2:
        return (uint64_t)1 << 40;
    case 3:
        return UINT64_MAX - ((uint64_t)1 << 30);
    case 4:
        return ROTA_MAX_DEADLINE - 100;
    case 5:
        return ((uint64_t)1 << (2 * ROTA_WHEEL_BITS)) - 3;
    case 6:
        return ((uint64_t)1 << (3 * ROTA_WHEEL_BITS)) - 3;
    default:
        return ((uint64_t)1 << (5 * ROTA_WHEEL_BITS)) - 3;
    }
}

#endif /* ROTA_FUZZ_INPUT_H */
