# SPDX-License-Identifier: MIT
# run_fuzz.cmake - one bounded libFuzzer run for CTest:
#   cmake -DFUZZER=... -DCORPUS=... -DWORK=... -DSECONDS=... -P run_fuzz.cmake
# The seed corpus is copied to WORK/corpus first, so the fuzzer adds its
# new inputs there and never to the source tree; a crashing input is left
# in WORK/artifacts/ (replay it with tests' fuzz_replay or the fuzzer).
foreach(var FUZZER CORPUS WORK SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_fuzz.cmake: ${var} is not set")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
file(GLOB seeds ${CORPUS}/*)
if(NOT seeds)
  message(FATAL_ERROR "run_fuzz.cmake: no seed inputs in ${CORPUS}")
endif()
file(COPY ${seeds} DESTINATION ${WORK}/corpus)

execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -print_final_stats=1
          -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus
  WORKING_DIRECTORY ${WORK}
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  file(GLOB crashes ${WORK}/artifacts/*)
  message(FATAL_ERROR "fuzzer failed (${rc}); input(s): ${crashes}")
endif()
