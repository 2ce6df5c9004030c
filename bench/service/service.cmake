# SPDX-License-Identifier: MIT
# rota_bench_service: S1-S3 (docs/BENCH.md), rota/service.h against a
# mutex + condvar heap2 timer service (service_heap.c), on the real clock
# with real threads.  include()d from bench/CMakeLists.txt.
# Run: build/bench/rota_bench_service [--quick]; rows go to
# build/bench/results-service.json (relative to the working directory).
find_package(Threads REQUIRED)
rota_bench_program(rota_bench_service
  ${CMAKE_CURRENT_LIST_DIR}/service_bench.c
  ${CMAKE_CURRENT_LIST_DIR}/service_heap.c)
target_link_libraries(rota_bench_service PRIVATE Threads::Threads)
