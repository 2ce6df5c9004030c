# SPDX-License-Identifier: MIT
# S1 / S2 (docs/BENCH.md): rota/service.h against a mutex + condvar heap2 timer
# service (service_heap.c), on the real clock with real threads.
# include() this from bench/CMakeLists.txt; it links the library target
# rota_static.  Run: build/bench/rota_bench_service [--quick]; rows go to
# build/bench/results-service.json (relative to the working directory).
find_package(Threads REQUIRED)
add_executable(rota_bench_service
  ${CMAKE_CURRENT_LIST_DIR}/service_bench.c
  ${CMAKE_CURRENT_LIST_DIR}/service_heap.c)
target_link_libraries(rota_bench_service PRIVATE rota_static Threads::Threads
  $<BUILD_INTERFACE:rota_warnings>)
string(TOUPPER "${CMAKE_BUILD_TYPE}" _rota_service_bt)
target_compile_definitions(rota_bench_service PRIVATE
  "BENCH_COMPILER=\"${CMAKE_C_COMPILER_ID} ${CMAKE_C_COMPILER_VERSION}\""
  "BENCH_CFLAGS=\"${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${_rota_service_bt}}\"")

# rota_service_counts: S1's and S3's submission paths on one thread, for
# callgrind (bench/service_counts.c says how to count).
add_executable(rota_service_counts
  ${CMAKE_CURRENT_LIST_DIR}/service_counts.c
  ${CMAKE_CURRENT_LIST_DIR}/service_heap.c)
target_link_libraries(rota_service_counts PRIVATE rota_static Threads::Threads
  $<BUILD_INTERFACE:rota_warnings>)
