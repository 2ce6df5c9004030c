# SPDX-License-Identifier: MIT
# The counts programs: instructions and data references per operation
# under valgrind's callgrind rather than timed (docs/BENCH.md).
# include()d from bench/CMakeLists.txt.
#   rota_counts          rota, wheel-bare and hashed-rounds (counts.sh,
#                        `make bench-counts`)
#   rota_service_counts  S1's and S3's submission paths on one thread
#                        (service_counts.c says how to count)
rota_bench_program(rota_counts ${CMAKE_CURRENT_LIST_DIR}/counts.c
  ${CMAKE_CURRENT_LIST_DIR}/direct.c
  ${ROTA_BENCH_IMPL_DIR}/impl_rota.c ${ROTA_BENCH_IMPL_DIR}/impl_wheel_bare.c
  ${ROTA_BENCH_IMPL_DIR}/impl_hashed_rounds.c)

find_package(Threads REQUIRED)
rota_bench_program(rota_service_counts
  ${CMAKE_CURRENT_LIST_DIR}/service_counts.c
  ${CMAKE_CURRENT_LIST_DIR}/../service/service_heap.c)
target_include_directories(rota_service_counts PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/../service)
target_link_libraries(rota_service_counts PRIVATE Threads::Threads)

# The counts are deterministic: two runs of the script at a small N must
# print the same rows (and the script must run to its closing line).  Not
# under a sanitizer, whose runtime valgrind cannot host.
find_program(ROTA_VALGRIND valgrind)
if(ROTA_BENCH_TESTS AND ROTA_VALGRIND AND ROTA_SANITIZE STREQUAL "")
  add_test(NAME bench_counts_deterministic
    COMMAND sh -c "bash \"$1\" -o \"$3.1\" \"$2\" 2000 >/dev/null && bash \"$1\" -o \"$3.2\" \"$2\" 2000 && cmp \"$3.1\" \"$3.2\" && echo counts identical"
            sh ${CMAKE_CURRENT_LIST_DIR}/counts.sh $<TARGET_FILE:rota_counts>
            ${CMAKE_CURRENT_BINARY_DIR}/counts-selftest.tsv)
  set_tests_properties(bench_counts_deterministic PROPERTIES LABELS "bench"
    TIMEOUT 300 PASS_REGULAR_EXPRESSION "[0-9]+ met, [0-9]+ missed\ncounts identical")
endif()
