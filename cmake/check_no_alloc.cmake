# SPDX-License-Identifier: MIT
# check_no_alloc.cmake - prove from the object files that the core keeps the
# promises rota.h makes: it never allocates (MODE=alloc), and it never reads a
# clock, sleeps or starts a thread (MODE=clock).
#
#   cmake -DNM=/usr/bin/nm -DMODE=alloc -P check_no_alloc.cmake a.o b.o ...
#
# Why the object files and not the source: a review can miss a strdup() in a
# helper or a call hidden behind a macro, but the linker cannot; `nm -u` lists
# every symbol an object needs from outside, whatever the source looked like.
# Why not the library: librota also holds components that may allocate
# (keyed tables, the service), so CMakeLists.txt builds the core as an OBJECT
# library of its own and passes exactly those objects here.
#
# Exits non-zero, naming the object and the symbol, when a forbidden symbol is
# referenced.  It also fails when nm fails or no object is given, so a broken
# invocation can never pass silently.

if(NOT NM)
  message(FATAL_ERROR "check_no_alloc: pass -DNM=<path to nm>")
endif()
if(NOT MODE)
  set(MODE alloc)
endif()

# Regular expressions matched against each undefined symbol's whole name.
if(MODE STREQUAL "alloc")
  set(forbidden
    # C and POSIX allocators, and the functions that allocate for the caller
    malloc calloc realloc reallocarray free aligned_alloc posix_memalign
    memalign valloc pvalloc "__libc_.*alloc" strdup strndup asprintf
    vasprintf getline getdelim open_memstream
    # the raw page allocator
    mmap mmap64 munmap mremap brk sbrk
    # C++ operator new / delete (all overloads), should C++ ever slip in
    "_Zn[wa].*" "_Zd[la].*")
elseif(MODE STREQUAL "clock")
  set(forbidden
    # reading a clock
    clock_gettime "__clock_gettime.*" gettimeofday time clock timespec_get
    clock_getres ftime times
    # sleeping
    nanosleep clock_nanosleep usleep sleep
    # starting threads
    pthread_create thrd_create clone fork)
else()
  message(FATAL_ERROR "check_no_alloc: unknown MODE '${MODE}' (alloc, clock)")
endif()

# Objects come after the script name: cmake [-D...] -P script [--] obj...
set(objects "")
set(first -1)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 1 ${last})
  if(first EQUAL -1 AND CMAKE_ARGV${i} STREQUAL "-P")
    math(EXPR first "${i} + 2")
  elseif(NOT first EQUAL -1 AND i GREATER_EQUAL first
         AND NOT CMAKE_ARGV${i} STREQUAL "--")
    list(APPEND objects "${CMAKE_ARGV${i}}")
  endif()
endforeach()
if(NOT objects)
  message(FATAL_ERROR "check_no_alloc: no object files given")
endif()

set(violations 0)
foreach(object IN LISTS objects)
  if(NOT EXISTS "${object}")
    message(FATAL_ERROR "check_no_alloc: ${object} does not exist")
  endif()
  execute_process(COMMAND "${NM}" -u "${object}"
    OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_no_alloc: ${NM} -u ${object} failed (${rc}): ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(names "")
  foreach(line IN LISTS lines)
    # "                 U malloc" (GNU nm) or "malloc@GLIBC_2.2.5" forms
    string(REGEX REPLACE "^.*[ \t]" "" name "${line}")
    string(REGEX REPLACE "@.*$" "" name "${name}")
    if(NOT name STREQUAL "")
      list(APPEND names "${name}")
    endif()
  endforeach()
  foreach(name IN LISTS names)
    foreach(pattern IN LISTS forbidden)
      if(name MATCHES "^(${pattern})$")
        get_filename_component(short "${object}" NAME)
        message(SEND_ERROR "${short} references ${name} (forbidden in the core: MODE=${MODE})")
        math(EXPR violations "${violations} + 1")
        break()
      endif()
    endforeach()
  endforeach()
  list(LENGTH names count)
  message(STATUS "${object}: ${count} undefined symbols checked")
endforeach()

if(violations GREATER 0)
  message(FATAL_ERROR "check_no_alloc: ${violations} forbidden reference(s) in the core (MODE=${MODE})")
endif()
list(LENGTH objects nobj)
message(STATUS "check_no_alloc: ${nobj} core object(s) clean (MODE=${MODE})")
