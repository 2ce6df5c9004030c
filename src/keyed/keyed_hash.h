/* SPDX-License-Identifier: MIT */
/*
 * keyed_hash.h - the keyed map's two seeded hashes, internal.
 *
 * rota__fasthash(): a multiply-fold hash in the style of wyhash (written
 * here from the idea: 64x64->128-bit multiplies of key words xored with
 * secret words, high and low halves folded), keyed by the map's 128-bit
 * seed.  A handful of instructions for a short key, once the seed's
 * secrets are premixed (rota__fastkey_of(), once per map; the map hashes
 * with rota__fasthash_k(), equal to rota__fasthash(), or, for a key of
 * up to 8 bytes it has already read as a word, rota__fasthash_word()).  Speed matters more
 * than it seems: with SipHash every lookup at a million keys took twice as
 * long, because its long serial chain of rounds keeps the CPU from running
 * ahead to the next operation's cache misses.
 *
 * rota__siphash(): SipHash-c-d (Aumasson and Bernstein, 2012), a keyed
 * pseudo-random function: without the key nobody can predict which keys
 * share a bucket.  The map starts with the fast hash and switches for good
 * to SipHash-1-3 (the variant Rust's HashMap uses) when a chain grows
 * suspiciously long, so an attacker who finds collisions in the fast hash
 * gains one rehash, not a quadratic map.  Tests check SipHash-2-4 against
 * the paper's reference output, which exercises the same code.
 *
 * Header-only so tests can reach them.
 */
#ifndef ROTA_KEYED_HASH_H
#define ROTA_KEYED_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t rota__sip_rotl(uint64_t x, unsigned b)
{
    return (x << b) | (x >> (64u - b));
}

/* A little-endian 64-bit load from any alignment, on any host. */
static inline uint64_t rota__sip_load64(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
           (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
           (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

#define ROTA__SIPROUND(v0, v1, v2, v3)                                         \
    do {                                                                       \
        v0 += v1;                                                              \
        v1 = rota__sip_rotl(v1, 13);                                           \
        v1 ^= v0;                                                              \
        v0 = rota__sip_rotl(v0, 32);                                           \
        v2 += v3;                                                              \
        v3 = rota__sip_rotl(v3, 16);                                           \
        v3 ^= v2;                                                              \
        v0 += v3;                                                              \
        v3 = rota__sip_rotl(v3, 21);                                           \
        v3 ^= v0;                                                              \
        v2 += v1;                                                              \
        v1 = rota__sip_rotl(v1, 17);                                           \
        v1 ^= v2;                                                              \
        v2 = rota__sip_rotl(v2, 32);                                           \
    } while (0)

/* SipHash-c-d of `len` bytes at `data` under the key (k0, k1): k0 is the
 * little-endian reading of key bytes 0-7, k1 of bytes 8-15. */
static inline uint64_t rota__siphash(unsigned c_rounds, unsigned d_rounds,
                                     uint64_t k0, uint64_t k1, const void *data,
                                     size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    uint64_t v0 = k0 ^ UINT64_C(0x736f6d6570736575);
    uint64_t v1 = k1 ^ UINT64_C(0x646f72616e646f6d);
    uint64_t v2 = k0 ^ UINT64_C(0x6c7967656e657261);
    uint64_t v3 = k1 ^ UINT64_C(0x7465646279746573);
    size_t whole = len & ~(size_t)7;

    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = rota__sip_load64(p + i);
        v3 ^= m;
        for (unsigned r = 0; r < c_rounds; r++)
            ROTA__SIPROUND(v0, v1, v2, v3);
        v0 ^= m;
    }
    /* The last word: the remaining 0-7 bytes, length mod 256 on top. */
    uint64_t b = (uint64_t)len << 56;
    switch (len & 7) {
    case 7:
        b |= (uint64_t)p[whole + 6] << 48; /* fall through */
    case 6:
        b |= (uint64_t)p[whole + 5] << 40; /* fall through */
    case 5:
        b |= (uint64_t)p[whole + 4] << 32; /* fall through */
    case 4:
        b |= (uint64_t)p[whole + 3] << 24; /* fall through */
    case 3:
        b |= (uint64_t)p[whole + 2] << 16; /* fall through */
    case 2:
        b |= (uint64_t)p[whole + 1] << 8; /* fall through */
    case 1:
        b |= (uint64_t)p[whole];
        break;
    default:
        break;
    }
    v3 ^= b;
    for (unsigned r = 0; r < c_rounds; r++)
        ROTA__SIPROUND(v0, v1, v2, v3);
    v0 ^= b;
    v2 ^= 0xff;
    for (unsigned r = 0; r < d_rounds; r++)
        ROTA__SIPROUND(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

/* ------------------------------------------------------------ fast hash */

#if defined(__x86_64__) && defined(__GNUC__)
/* The 128-bit product of a and b, as (low, high): one mulq, written out
 * because gcc 12 copies one half of an __int128 product to a callee-saved
 * register before it folds, and the lean path then saves that register. */
static inline void rota__mul128(uint64_t a, uint64_t b, uint64_t *lo,
                                uint64_t *hi)
{
    uint64_t l, h;
    __asm__("mulq %3" : "=a"(l), "=d"(h) : "a"(a), "rm"(b) : "cc");
    *lo = l;
    *hi = h;
}
#elif defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 rota__u128;
/* The 128-bit product of a and b, as (low, high). */
static inline void rota__mul128(uint64_t a, uint64_t b, uint64_t *lo,
                                uint64_t *hi)
{
    rota__u128 r = (rota__u128)a * b;
    *lo = (uint64_t)r;
    *hi = (uint64_t)(r >> 64);
}
#else
static inline void rota__mul128(uint64_t a, uint64_t b, uint64_t *lo,
                                uint64_t *hi)
{
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    *lo = (mid << 32) | (uint32_t)ll;
    *hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}
#endif

/* Multiply and fold: the mixing step. */
static inline uint64_t rota__mum(uint64_t a, uint64_t b)
{
    uint64_t lo, hi;
    rota__mul128(a, b, &lo, &hi);
    return lo ^ hi;
}

/* The fast hash's secrets, derived once from the seed (k0, k1) so a hash
 * does not redo the premixing multiply; sc1 and c0k0 are combinations
 * the short keys' path (rota__fasthash_word()) would otherwise redo. */
struct rota__fastkey {
    uint64_t c0, c1, seed, k0, sc1, c0k0;
};

static inline struct rota__fastkey rota__fastkey_of(uint64_t k0, uint64_t k1)
{
    struct rota__fastkey fk;
    fk.c0 = UINT64_C(0xa0761d6478bd642f) ^ k1;
    fk.c1 = UINT64_C(0xe7037ed1a0b428db) ^ (k1 << 32 | k1 >> 32);
    /* Premixed, so no seed (not even 0 or 1) multiplies by a small
     * number and lets two changed words cancel. */
    fk.seed = rota__mum(k0 ^ fk.c0, k1 ^ fk.c1);
    fk.k0 = k0;
    fk.sc1 = fk.seed ^ fk.c1;
    fk.c0k0 = fk.c0 ^ k0;
    return fk;
}

/* The bytes of a key of up to 8 bytes as a little-endian word, zero
 * above the key: the word rota__fasthash_word() hashes. */
static inline uint64_t rota__short_word(const unsigned char *p, size_t len)
{
    uint64_t word = 0;
    if (len == 8)
        return rota__sip_load64(p);
    for (size_t i = 0; i < len; i++)
        word |= (uint64_t)p[i] << (8 * i);
    return word;
}

/* The fast hash of a key of up to 8 bytes, given as its little-endian
 * word (rota__short_word()) and its length: the 9-16-byte path below
 * with the word as both of its words.  The first multiply is of two
 * differently masked copies of the word (quadratic in it, so consecutive
 * ids do not become an arithmetic progression of homes, as they do
 * under one multiply by a constant); the second folds its halves again
 * with the length.  The map reads the word once for the hash and the
 * slot compare alike. */
static inline uint64_t rota__fasthash_word(const struct rota__fastkey *fk,
                                           uint64_t word, size_t len)
{
    uint64_t lo, hi;
    rota__mul128(word ^ fk->c0, word ^ fk->sc1, &lo, &hi);
    return rota__mum(lo ^ fk->c1 ^ (uint64_t)len, hi ^ fk->c0k0);
}

/* The fast seeded hash of `len` bytes under the secrets `fk`.  Every byte
 * of the key and its length reach the result: keys up to 16 bytes are read
 * as one word (rota__fasthash_word()) or two overlapping ones, longer
 * ones 16 bytes a step. */
static inline uint64_t rota__fasthash_k(const struct rota__fastkey *fk,
                                        const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    const uint64_t c0 = fk->c0, c1 = fk->c1;
    uint64_t seed = fk->seed, a, b;

    if (len <= 8)
        return rota__fasthash_word(fk, rota__short_word(p, len), len);
    if (len <= 16) {
        a = rota__sip_load64(p);
        b = rota__sip_load64(p + len - 8);
    } else {
        size_t left = len;
        while (left > 16) {
            seed = rota__mum(rota__sip_load64(p) ^ c0,
                             rota__sip_load64(p + 8) ^ seed);
            p += 16;
            left -= 16;
        }
        a = rota__sip_load64(p + left - 16);
        b = rota__sip_load64(p + left - 8);
    }
    uint64_t lo, hi;
    rota__mul128(a ^ c0, b ^ seed ^ c1, &lo, &hi);
    return rota__mum(lo ^ c1 ^ (uint64_t)len, hi ^ c0 ^ fk->k0);
}

/* The same hash under the seed (k0, k1) itself. */
static inline uint64_t rota__fasthash(uint64_t k0, uint64_t k1,
                                      const void *data, size_t len)
{
    struct rota__fastkey fk = rota__fastkey_of(k0, k1);
    return rota__fasthash_k(&fk, data, len);
}

#endif /* ROTA_KEYED_HASH_H */
