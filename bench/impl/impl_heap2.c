/* SPDX-License-Identifier: MIT */
/*
 * impl_heap2.c - `heap2`: an indexed binary heap of {deadline, node *}
 * entries, the structure of libuv's and the JDK's timers (written here from
 * the published design; see heap_impl.h for what makes it strong).  Every
 * workload maps directly: arm = push, cancel = remove at the stored index,
 * re-arm = change the key in place, advance = pop while the top is due.
 */
#define HEAP_D 2
#define HEAP_NAME impl_heap2
#define HEAP_LABEL "heap2"
#include "heap_impl.h"
