/* SPDX-License-Identifier: MIT */
/*
 * wide.h - exact unsigned 128-bit arithmetic for the tests' reference
 * computations, in plain C11 (no __int128: 32-bit targets have none).
 *
 * The references it serves (rounding a tick count times a tick length to
 * milliseconds, the next step of a periodic schedule) must be obviously
 * exact, so the code is the schoolbook one: 32-bit limbs for the product,
 * shift-and-subtract for the quotient.  Slow, and only tests use it.
 */
#ifndef ROTA_TEST_WIDE_H
#define ROTA_TEST_WIDE_H

#include <stdbool.h>
#include <stdint.h>

struct wide {
    uint64_t hi, lo;
};

static inline struct wide w_of(uint64_t x)
{
    return (struct wide){0, x};
}

static inline struct wide w_add(struct wide a, struct wide b)
{
    struct wide r = {a.hi + b.hi, a.lo + b.lo};
    r.hi += r.lo < a.lo; /* carry */
    return r;
}

/* The full 128-bit product of two 64-bit values. */
static inline struct wide w_mul(uint64_t a, uint64_t b)
{
    uint64_t a0 = (uint32_t)a, a1 = a >> 32;
    uint64_t b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    struct wide r;
    r.lo = (mid << 32) | (uint32_t)p00;
    r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return r;
}

static inline int w_cmp(struct wide a, struct wide b)
{
    if (a.hi != b.hi)
        return a.hi < b.hi ? -1 : 1;
    return a.lo < b.lo ? -1 : a.lo > b.lo;
}

static inline bool w_gt64(struct wide a, uint64_t b)
{
    return a.hi != 0 || a.lo > b;
}

/* a / d, d >= 1: one quotient bit per step. */
static inline struct wide w_div(struct wide a, uint64_t d)
{
    struct wide q = {0, 0};
    uint64_t rem = 0;
    for (int i = 127; i >= 0; i--) {
        uint64_t bit = i >= 64 ? (a.hi >> (i - 64)) & 1 : (a.lo >> i) & 1;
        bool over = rem >> 63; /* rem * 2 would not fit: it exceeds d */
        rem = (rem << 1) | bit;
        if (over || rem >= d) {
            rem -= d;
            if (i >= 64)
                q.hi |= (uint64_t)1 << (i - 64);
            else
                q.lo |= (uint64_t)1 << i;
        }
    }
    return q;
}

/* ceil(a / d), d >= 1. */
static inline struct wide w_div_ceil(struct wide a, uint64_t d)
{
    return w_div(w_add(a, w_of(d - 1)), d);
}

/* The value, or `cap` when it exceeds cap. */
static inline uint64_t w_min64(struct wide a, uint64_t cap)
{
    return w_gt64(a, cap) ? cap : a.lo;
}

#endif /* ROTA_TEST_WIDE_H */
