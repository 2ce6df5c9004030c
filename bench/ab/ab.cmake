# SPDX-License-Identifier: MIT
# ab.sh (interleaved A/B of two builds) must keep building and linking two
# prefixed copies of the library: a tiny run of the source tree against
# itself.  It times nothing that is checked.  include()d from
# bench/CMakeLists.txt.
if(ROTA_BENCH_TESTS AND UNIX)
  add_test(NAME bench_ab_smoke
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/ab.sh -w churn,refresh,storm
            -n 2000 -s 2 -o 5000 ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR})
  set_tests_properties(bench_ab_smoke PROPERTIES LABELS "bench" TIMEOUT 300
    PASS_REGULAR_EXPRESSION "storm expiry .*B/A median")
endif()
