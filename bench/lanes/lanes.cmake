# SPDX-License-Identifier: MIT
# rota_bench_lanes: timeout lanes (rota/lanes.h) against the wheel's own
# arm/touch/expiry and hashed-rounds when every timer has one duration;
# lanes.sh runs it for timings and under callgrind for counts.
# include()d from bench/CMakeLists.txt.
rota_bench_program(rota_bench_lanes ${CMAKE_CURRENT_LIST_DIR}/bench_lanes.c
  ${ROTA_BENCH_IMPL_DIR}/impl_hashed_rounds.c)
