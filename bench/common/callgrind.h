/* SPDX-License-Identifier: MIT */
/*
 * callgrind.h - valgrind's client requests for the programs that count
 * under callgrind (rota_counts, bench_lanes): CALLGRIND_ZERO_STATS and
 * CALLGRIND_DUMP_STATS_AT from valgrind's header when it is installed,
 * else requests that do nothing, so the programs build and run without
 * valgrind (and count nothing).
 */
#ifndef ROTA_BENCH_CALLGRIND_H
#define ROTA_BENCH_CALLGRIND_H

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_DUMP_STATS_AT
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(name) ((void)(name))
#endif

#endif
