# SPDX-License-Identifier: MIT
# W6 (keyed TTL timers): rota/keyed.h against the go-zero-style
# `hashed-rounds` baseline.  include()d from bench/CMakeLists.txt.
# Run: build-release/bench/bench_keyed [--quick] [--n 1e6] [--json PATH].
add_executable(bench_keyed
  ${CMAKE_CURRENT_LIST_DIR}/bench_keyed.c
  ${CMAKE_CURRENT_LIST_DIR}/keyed_rota.c
  ${CMAKE_CURRENT_LIST_DIR}/keyed_rounds.c)
# The static library, as rota_bench measures (no PLT calls).
if(TARGET rota_static)
  target_link_libraries(bench_keyed PRIVATE rota_static)
else()
  target_link_libraries(bench_keyed PRIVATE rota)
endif()
target_link_libraries(bench_keyed PRIVATE $<BUILD_INTERFACE:rota_warnings>)
string(TOUPPER "${CMAKE_BUILD_TYPE}" _rota_keyed_bt)
target_compile_definitions(bench_keyed PRIVATE
  "BENCH_CFLAGS=\"${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${_rota_keyed_bt}}\"")
