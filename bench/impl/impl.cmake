# SPDX-License-Identifier: MIT
# The implementations behind bench.h's table of operations, for rota_bench
# (every one) and the counts and lanes programs (a few).  include()d from
# bench/CMakeLists.txt.
#
# The peers are found by cmake/rotaLoops.cmake, the module the library's
# own loop adapters and its installed package use: the same search, the
# same targets (rota_loop::uv, ...).  Each one missing is reported here and
# at run time, and its column is skipped (apt-get install libuv1-dev
# libev-dev libevent-dev libsystemd-dev adds them; re-run cmake).

set(ROTA_BENCH_IMPL_DIR ${CMAKE_CURRENT_LIST_DIR})
set(ROTA_BENCH_IMPLS
  ${ROTA_BENCH_IMPL_DIR}/impl_rota.c ${ROTA_BENCH_IMPL_DIR}/impl_heap2.c
  ${ROTA_BENCH_IMPL_DIR}/impl_heap4.c ${ROTA_BENCH_IMPL_DIR}/impl_hashed_rounds.c
  ${ROTA_BENCH_IMPL_DIR}/impl_wheel_bare.c ${ROTA_BENCH_IMPL_DIR}/impl_wheel_approx.c)
set(ROTA_BENCH_PEER_LIBS "")
set(ROTA_BENCH_PEER_DEFS "")
set(ROTA_BENCH_MISSING "")

# rota_bench_peer(LOOP SOURCE DEFINE PACKAGE): the peer's adapter file
# when rota_find_loop() finds its library.  Order matters for libev,
# whose libev.so also exports libevent's API (event_add, ... from its
# event.h emulation): it must come after libevent_core in the link line,
# or libevent's calls bind to libev's emulation.  rota_loop::ev names the
# file itself and rota_loop::event reaches it through pkg-config's
# target, which CMake places later; wrapping each in an INTERFACE
# IMPORTED target of ours puts every peer at the same depth, so they keep
# the order they are listed in (impl_libevent.c checks at run time).
macro(rota_bench_peer loop source define package)
  rota_find_loop(${loop} _rota_bench_have_${loop})
  if(_rota_bench_have_${loop})
    add_library(rota_bench_peer_${loop} INTERFACE IMPORTED)
    set_target_properties(rota_bench_peer_${loop} PROPERTIES
      INTERFACE_LINK_LIBRARIES rota_loop::${loop})
    list(APPEND ROTA_BENCH_IMPLS ${ROTA_BENCH_IMPL_DIR}/${source})
    list(APPEND ROTA_BENCH_PEER_LIBS rota_bench_peer_${loop})
    list(APPEND ROTA_BENCH_PEER_DEFS ${define})
    message(STATUS "rota_bench: ${package} found (rota_loop::${loop})")
  else()
    list(APPEND ROTA_BENCH_MISSING "${package}")
  endif()
endmacro()
rota_bench_peer(uv impl_libuv.c BENCH_HAVE_LIBUV libuv1-dev)
rota_bench_peer(event impl_libevent.c BENCH_HAVE_LIBEVENT libevent-dev)
rota_bench_peer(sdevent impl_sdevent.c BENCH_HAVE_SDEVENT libsystemd-dev)
rota_bench_peer(ev impl_libev.c BENCH_HAVE_LIBEV libev-dev)
if(_rota_bench_have_sdevent AND ROTA_LOOP_sdevent_VERSION)
  list(APPEND ROTA_BENCH_PEER_DEFS
       "BENCH_SDEVENT_VERSION=\"${ROTA_LOOP_sdevent_VERSION}\"")
endif()

foreach(_missing IN LISTS ROTA_BENCH_MISSING)
  message(STATUS "rota_bench: peer not found, its column will be skipped: "
                 "apt-get install ${_missing}")
endforeach()
if(ROTA_BENCH_MISSING)
  message(STATUS "rota_bench: to add every peer: apt-get install "
                 "libuv1-dev libev-dev libevent-dev libsystemd-dev, then "
                 "re-run cmake")
endif()
