# SPDX-License-Identifier: MIT
# bench_keyed: W6 (keyed TTL timers), rota/keyed.h against the
# go-zero-style `hashed-rounds` baseline.  include()d from
# bench/CMakeLists.txt.
# Run: build-release/bench/bench_keyed [--quick] [--n 1e6] [--json PATH].
# The static library, as rota_bench measures (no PLT calls).
rota_bench_program(bench_keyed
  ${CMAKE_CURRENT_LIST_DIR}/bench_keyed.c
  ${CMAKE_CURRENT_LIST_DIR}/keyed_rota.c
  ${CMAKE_CURRENT_LIST_DIR}/keyed_rounds.c)
