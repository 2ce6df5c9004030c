/* SPDX-License-Identifier: MIT */
/*
 * impl_heap4.c - `heap4`: an indexed 4-ary heap with each entry's four
 * children in one cache line, the structure of libev's timers and the Go
 * runtime's (written here from the published design; see heap_impl.h).
 * Shallower than heap2 (log4 n levels) at the price of up to four
 * comparisons per level.  Workloads map as for heap2.
 */
#define HEAP_D 4
#define HEAP_NAME impl_heap4
#define HEAP_LABEL "heap4"
#include "heap_impl.h"
