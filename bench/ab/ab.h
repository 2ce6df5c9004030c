/* SPDX-License-Identifier: MIT */
/* ab.h - what harness.c calls on each side of an A/B run (side.c); ab.sh
 * gives each side's copy a prefix: a_ab_churn, b_ab_churn, ... */
#ifndef ROTA_AB_H
#define ROTA_AB_H

#include <stdint.h>

#define AB_START_TICK 1000000u
#define AB_OPS_PER_TICK 1000u

int ab_setup(uint32_t n, const uint32_t *delays, int rearm);
double ab_churn(const uint32_t *ids, const uint32_t *delays, uint32_t ops);
double ab_refresh(const uint32_t *ids, uint32_t ops);
int ab_storm(const uint32_t *delays, uint32_t span, double *arm_ns,
             double *expiry_ns);
int ab_periodic_setup(uint32_t n, const uint32_t *periods);
double ab_periodic(uint32_t ticks);

#endif
