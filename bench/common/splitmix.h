/* SPDX-License-Identifier: MIT */
/*
 * splitmix.h - the benchmarks' one generator: splitmix64 (Steele, Lea and
 * Flood, 2014), as docs/BENCH.md says (seed 42 unless --seed).  Every
 * benchmark program includes this one copy, so their streams agree.
 */
#ifndef ROTA_BENCH_SPLITMIX_H
#define ROTA_BENCH_SPLITMIX_H

#include <stdint.h>

static inline uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

#endif
