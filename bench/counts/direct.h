/* SPDX-License-Identifier: MIT */
/* direct.h - rota_counts' direct phase (direct.c), for counts.c. */
#ifndef ROTA_COUNTS_DIRECT_H
#define ROTA_COUNTS_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

/* N timers pending at now + arm_delay[i], then `ops` pairs: cancel timer
 * id[k], arm it at now + delay[k]; rota's calls inlined, or (none) two
 * empty calls per pair.  Dumped under callgrind as the phase "direct". */
void counts_direct(bool none, uint32_t n, const uint32_t *arm_delay,
                   const uint32_t *id, const uint32_t *delay, uint32_t ops,
                   uint64_t now);

#endif
