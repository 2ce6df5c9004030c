# SPDX-License-Identifier: MIT
# rotaLoops.cmake - find the event-loop libraries the adapters are built on,
# as imported targets named the same everywhere:
#
#   rota_loop::uv      libuv           (pkg-config libuv)
#   rota_loop::ev      libev           (ev.h and libev: Debian's libev-dev
#                                      ships no pkg-config file)
#   rota_loop::event   libevent_core   (pkg-config libevent_core)
#   rota_loop::uring   liburing        (pkg-config liburing; Linux only)
#   rota_loop::sdevent libsystemd      (pkg-config libsystemd: sd-event)
#
# rota's own build includes this file to decide which adapters it can build,
# and the installed rotaConfig.cmake includes its installed copy to give the
# adapters' exported targets (rota::uv, ...) their loop library again in the
# consumer's project: the exported targets name rota_loop::<loop>, never a
# path from the machine rota was built on.
#
#   rota_find_loop(<uv|ev|event|uring|sdevent> <result-variable>)
# defines rota_loop::<loop> if it can and sets the variable to TRUE or FALSE.

function(rota_find_loop loop result)
  if(TARGET rota_loop::${loop})
    set(${result} TRUE PARENT_SCOPE)
    return()
  endif()
  set(${result} FALSE PARENT_SCOPE)
  if(loop STREQUAL "uv" OR loop STREQUAL "event" OR loop STREQUAL "uring" OR
     loop STREQUAL "sdevent")
    if(loop STREQUAL "uv")
      set(_module libuv)
    elseif(loop STREQUAL "uring")
      if(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux")
        return()
      endif()
      set(_module liburing)
    elseif(loop STREQUAL "sdevent")
      set(_module libsystemd)
    else()
      set(_module libevent_core)
    endif()
    find_package(PkgConfig QUIET)
    if(NOT PKG_CONFIG_FOUND)
      return()
    endif()
    pkg_check_modules(ROTA_LOOP_${loop} QUIET IMPORTED_TARGET ${_module})
    if(NOT ROTA_LOOP_${loop}_FOUND)
      return()
    endif()
    add_library(rota_loop::${loop} INTERFACE IMPORTED)
    set_property(TARGET rota_loop::${loop} PROPERTY
      INTERFACE_LINK_LIBRARIES PkgConfig::ROTA_LOOP_${loop})
  elseif(loop STREQUAL "ev")
    find_path(ROTA_LIBEV_INCLUDE_DIR ev.h)
    find_library(ROTA_LIBEV_LIBRARY ev)
    if(NOT ROTA_LIBEV_INCLUDE_DIR OR NOT ROTA_LIBEV_LIBRARY)
      return()
    endif()
    add_library(rota_loop::ev UNKNOWN IMPORTED)
    set_target_properties(rota_loop::ev PROPERTIES
      IMPORTED_LOCATION "${ROTA_LIBEV_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${ROTA_LIBEV_INCLUDE_DIR}")
  else()
    message(FATAL_ERROR "rota_find_loop: no loop '${loop}' (uv, ev, event, uring or sdevent)")
  endif()
  set(${result} TRUE PARENT_SCOPE)
endfunction()
