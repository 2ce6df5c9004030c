# SPDX-License-Identifier: MIT
# rota_bench: rota against the in-tree baselines (heap2, heap4,
# hashed-rounds, wheel-bare, wheel-approx) and the real event-loop
# libraries found on this machine (bench/impl/impl.cmake), on the workloads
# of the table in workloads.c (docs/BENCH.md).  include()d from
# bench/CMakeLists.txt.
rota_bench_program(rota_bench
  ${CMAKE_CURRENT_LIST_DIR}/main.c ${CMAKE_CURRENT_LIST_DIR}/workloads.c
  ${CMAKE_CURRENT_LIST_DIR}/report.c ${ROTA_BENCH_IMPL_DIR}/fakeclock.c
  ${ROTA_BENCH_IMPLS})
target_link_libraries(rota_bench PRIVATE ${ROTA_BENCH_PEER_LIBS}
  ${CMAKE_DL_LIBS} m)
target_compile_definitions(rota_bench PRIVATE ${ROTA_BENCH_PEER_DEFS}
  "BENCH_SOURCE_DIR=\"${PROJECT_SOURCE_DIR}\"") # the commit in the plot's title

# The cross-checks must be able to fail.  --smoke runs every workload of the
# table that has a smoke size, at that size, briefly; each run below must
# pass, and the same run with a planted fault must stop with the
# cross-check's message in every one of those workloads.  Deterministic: no timing is checked.
#   exact:  rota, heap2 and hashed-rounds agree fire for fire; one fire of
#           heap2 reported a tick late is caught.
#   approx: wheel-approx fires late by design: its fires are checked
#           against their windows (never early, never past deadline + its
#           bound, none lost), not against rota's; a fire one call too late
#           and one a tick early are caught.
#   sdevent: the one peer whose loop dispatches one event per iteration
#           (impl_sdevent.c): its fires, periodic re-arms and W7's limited
#           advances agree with rota's, and a misreported fire is caught.
#   peers:  libuv, libev and libevent, the same.
if(ROTA_BENCH_TESTS)
  set(_smoke_runs
    "exact|rota,heap2,hashed-rounds|--fault heap2|CROSS-CHECK FAILED"
    "approx|rota,wheel-approx|--fault wheel-approx|CROSS-CHECK FAILED: wheel-approx .* fired too late"
    "approx_early|rota,wheel-approx|--fault-early wheel-approx|CROSS-CHECK FAILED: wheel-approx .* fired early")
  if(_rota_bench_have_sdevent)
    list(APPEND _smoke_runs "sdevent|rota,sd-event|--fault sd-event|CROSS-CHECK FAILED")
  endif()
  # peers: the other peers found, linked as rota_bench links them (libev's
  # libevent emulation must not take libevent's calls), agree with rota.
  set(_peers "")
  foreach(_p uv:libuv ev:libev event:libevent)
    string(REPLACE ":" ";" _p "${_p}")
    list(GET _p 0 _loop)
    list(GET _p 1 _impl)
    if(_rota_bench_have_${_loop})
      string(APPEND _peers ",${_impl}")
    endif()
  endforeach()
  if(_peers)
    string(REGEX MATCH "[^,]+$" _last "${_peers}")
    list(APPEND _smoke_runs "peers|rota${_peers}|--fault ${_last}|CROSS-CHECK FAILED")
  endif()
  foreach(_run IN LISTS _smoke_runs)
    string(REPLACE "|" ";" _f "${_run}")
    list(GET _f 0 _name)
    list(GET _f 1 _only)
    list(GET _f 2 _fault)
    list(GET _f 3 _expect)
    separate_arguments(_fault)
    # approx_early plants its fault on the same passing run as approx.
    if(NOT _name STREQUAL "approx_early")
      add_test(NAME bench_crosscheck_${_name}
        COMMAND rota_bench --smoke --only ${_only}
                --json ${CMAKE_CURRENT_BINARY_DIR}/selftest_${_name}.json)
      set_tests_properties(bench_crosscheck_${_name} PROPERTIES
        LABELS "bench" TIMEOUT 300)
    endif()
    add_test(NAME bench_crosscheck_${_name}_fault
      COMMAND rota_bench --smoke --only ${_only} ${_fault}
              --json ${CMAKE_CURRENT_BINARY_DIR}/selftest_${_name}_fault.json)
    # Pass only on the cross-check's own message (not on any failure), and
    # only when every workload met the fault (each in a process of its own).
    set_tests_properties(bench_crosscheck_${_name}_fault PROPERTIES
      PASS_REGULAR_EXPRESSION "${_expect}"
      FAIL_REGULAR_EXPRESSION "was not caught|let the fault"
      LABELS "bench" TIMEOUT 300)
  endforeach()
  # ... and the per-workload fault runs must notice a fault that no
  # workload meets (planted in an implementation that is not running).
  add_test(NAME bench_crosscheck_fault_missed
    COMMAND rota_bench --smoke --only rota,heap2 --fault no-such-impl
            --json ${CMAKE_CURRENT_BINARY_DIR}/selftest_missed.json)
  set_tests_properties(bench_crosscheck_fault_missed PROPERTIES
    PASS_REGULAR_EXPRESSION "[0-9]+ of [0-9]+ workloads let the fault planted in no-such-impl through"
    LABELS "bench" TIMEOUT 300)
endif()
