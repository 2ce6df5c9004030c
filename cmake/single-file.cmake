# SPDX-License-Identifier: MIT
# single-file.cmake - write the vendorable core: one rota.h and one rota.c
# that a project can copy into its tree and compile with nothing else (no
# build step, no generated header, no other rota file):
#
#   cmake -DROTA_SOURCE_DIR=<rota checkout> -DROTA_OUT_DIR=<dir> \
#         -P cmake/single-file.cmake
#
# (`make single-file` and the build's single-file target run it; the
# single_file_* tests compile and run a program from the two files alone.)
#
# What goes in:
#   rota.h  include/rota.h with include/rota/version.h in place of its
#           #include, then include/rota/clock.h: the core wheel and the clock
#           helper, the whole API of both.
#   rota.c  src/core/wheel.c, wheel_check.c, error.c, version.c and
#           src/clock/clock.c, after #include "rota.h".  An internal header one of
#           them (or another internal header) includes, src/core/<name>.h, is
#           inlined once, where it is first included; a feature-test
#           macro (#define _GNU_SOURCE ...) moves to the top of the file,
#           above every system header.  Any other #include "..."
#           stops the script with an error naming it, so a change to the
#           sources can never produce a single file that does not compile.
# Both start with the licence, which must travel with every copy.
#
# It works on whole file contents (never CMake lists, which would mangle the
# semicolons of C).

cmake_minimum_required(VERSION 3.16)

if(NOT ROTA_SOURCE_DIR OR NOT ROTA_OUT_DIR)
  message(FATAL_ERROR "single-file.cmake: set ROTA_SOURCE_DIR and ROTA_OUT_DIR")
endif()
set(src ${ROTA_SOURCE_DIR})

# The sources, in order.  Headers: rota.h (with version.h) then clock.h.
set(ROTA_SF_SOURCES src/core/wheel.c src/core/wheel_check.c src/core/error.c
  src/core/version.c src/clock/clock.c)

file(READ ${src}/LICENSE _license)
file(READ ${src}/include/rota/version.h _version_h)
string(REGEX MATCH "#define ROTA_VERSION_MAJOR ([0-9]+)" _m "${_version_h}")
set(_major ${CMAKE_MATCH_1})
string(REGEX MATCH "#define ROTA_VERSION_MINOR ([0-9]+)" _m "${_version_h}")
set(_minor ${CMAKE_MATCH_1})
string(REGEX MATCH "#define ROTA_VERSION_PATCH ([0-9]+)" _m "${_version_h}")
set(_patch ${CMAKE_MATCH_1})
set(_version "${_major}.${_minor}.${_patch}")

# The licence as a C comment, and the SPDX line first.
string(REGEX REPLACE "\n$" "" _license "${_license}")
string(REPLACE "\n" "\n * " _license_c "${_license}")
string(REPLACE " * \n" " *\n" _license_c "${_license_c}")
set(_preamble "/* SPDX-License-Identifier: MIT */
/*
 * @FILE@ - rota ${_version}, the core timing wheel and the clock helper in
 * two files (rota.h and rota.c) to copy into a project and compile as they
 * are: cc -std=c11 -c rota.c.  Generated from rota's sources by
 * cmake/single-file.cmake (make single-file); edit those, not this.
 *
 * ${_license_c}
 */
")

# strip_line(VAR LINE): remove every line of VAR that is exactly LINE.
function(strip_line var line)
  string(REPLACE "\n${line}\n" "\n" _t "\n${${var}}")
  string(REGEX REPLACE "^\n" "" _t "${_t}")
  set(${var} "${_t}" PARENT_SCOPE)
endfunction()

# ------------------------------------------------------------------ rota.h
file(READ ${src}/include/rota.h _rota_h)
file(READ ${src}/include/rota/clock.h _clock_h)
if(NOT _rota_h MATCHES "\n#include \"rota/version.h\"\n")
  message(FATAL_ERROR "single-file.cmake: include/rota.h no longer includes \"rota/version.h\"; update this script")
endif()
# version.h's own SPDX line would repeat the preamble's.
strip_line(_version_h "/* SPDX-License-Identifier: MIT */")
string(REPLACE "\n#include \"rota/version.h\"\n" "\n${_version_h}" _rota_h "${_rota_h}")
# rota.h's private part, included at its end, goes in its place.
file(READ ${src}/include/rota/wheel-inl.h _inl_h)
if(NOT _rota_h MATCHES "\n#include \"rota/wheel-inl.h\"\n")
  message(FATAL_ERROR "single-file.cmake: include/rota.h no longer includes \"rota/wheel-inl.h\"; update this script")
endif()
strip_line(_inl_h "/* SPDX-License-Identifier: MIT */")
string(REPLACE "\n#include \"rota/wheel-inl.h\"\n" "\n${_inl_h}" _rota_h "${_rota_h}")
strip_line(_rota_h "/* SPDX-License-Identifier: MIT */")
strip_line(_clock_h "/* SPDX-License-Identifier: MIT */")
strip_line(_clock_h "#include \"../rota.h\"")
foreach(_part _rota_h _clock_h)
  string(REGEX MATCH "#include \"[^\"]*\"" _left "${${_part}}")
  if(_left)
    message(FATAL_ERROR "single-file.cmake: a public header has ${_left}, which the single rota.h cannot hold; update this script")
  endif()
endforeach()
string(REPLACE "@FILE@" "rota.h" _out_h "${_preamble}")
string(APPEND _out_h "${_rota_h}\n${_clock_h}")

# ------------------------------------------------------------------ rota.c
set(_features "")
set(_body "")
set(_inlined "")
foreach(_file IN LISTS ROTA_SF_SOURCES)
  file(READ ${src}/${_file} _c)
  strip_line(_c "/* SPDX-License-Identifier: MIT */")
  foreach(_own "rota.h" "rota/clock.h" "rota/version.h")
    strip_line(_c "#include \"${_own}\"")
  endforeach()
  # Feature-test macros go to the top of rota.c, once each.
  string(REGEX MATCHALL "(^|\n)#define _[A-Z0-9_]+_SOURCE[^\n]*" _defs "${_c}")
  foreach(_def IN LISTS _defs)
    string(STRIP "${_def}" _def)
    string(REGEX REPLACE "^#define (_[A-Z0-9_]+_SOURCE).*$" "\\1" _name "${_def}")
    string(REGEX REPLACE "^#define _[A-Z0-9_]+_SOURCE[ \t]*([0-9A-Za-z]*).*$" "\\1" _value "${_def}")
    if(NOT _features MATCHES "#ifndef ${_name}\n")
      if(_value STREQUAL "")
        string(APPEND _features "#ifndef ${_name}\n#define ${_name}\n#endif\n")
      else()
        string(APPEND _features "#ifndef ${_name}\n#define ${_name} ${_value}\n#endif\n")
      endif()
    endif()
    strip_line(_c "${_def}")
  endforeach()
  # Internal headers, inlined once each; anything else is an error.
  while(_c MATCHES "\n#include \"([^\"]+)\"[^\n]*\n")
    set(_inc "${CMAKE_MATCH_1}")
    set(_line "${CMAKE_MATCH_0}")
    if(NOT EXISTS ${src}/src/core/${_inc})
      message(FATAL_ERROR "single-file.cmake: ${_file} includes \"${_inc}\", which is not an internal header in src/core/; the single rota.c cannot hold it: update this script")
    endif()
    if(_inc IN_LIST _inlined)
      string(REPLACE "${_line}" "\n" _c "${_c}")
    else()
      list(APPEND _inlined "${_inc}")
      file(READ ${src}/src/core/${_inc} _ih)
      strip_line(_ih "/* SPDX-License-Identifier: MIT */")
      string(REPLACE "${_line}" "\n/* ---- src/core/${_inc} ---- */\n${_ih}\n" _c "${_c}")
    endif()
  endwhile()
  string(APPEND _body "\n/* ======================================================== ${_file} */\n${_c}")
endforeach()

string(REPLACE "@FILE@" "rota.c" _out_c "${_preamble}")
string(APPEND _out_c "${_features}\n#include \"rota.h\"\n${_body}")

file(MAKE_DIRECTORY ${ROTA_OUT_DIR})
# Write through a temporary and copy only on change, so a rebuild that
# changes nothing does not touch the files' times.
file(WRITE ${ROTA_OUT_DIR}/rota.h.tmp "${_out_h}")
file(WRITE ${ROTA_OUT_DIR}/rota.c.tmp "${_out_c}")
configure_file(${ROTA_OUT_DIR}/rota.h.tmp ${ROTA_OUT_DIR}/rota.h COPYONLY)
configure_file(${ROTA_OUT_DIR}/rota.c.tmp ${ROTA_OUT_DIR}/rota.c COPYONLY)
file(REMOVE ${ROTA_OUT_DIR}/rota.h.tmp ${ROTA_OUT_DIR}/rota.c.tmp)
message(STATUS "single-file: ${ROTA_OUT_DIR}/rota.h and rota.c (rota ${_version})")
