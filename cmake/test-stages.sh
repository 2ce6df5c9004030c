#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# test-stages.sh - what `make test` runs: the CTest suite in each of the
# configurations that catch different bugs, then one summary line.
#
#   default   build/       RelWithDebInfo, every test (ctest -j2)
#   asan      build-asan/  Debug, ASan+UBSan (clang if it can, else gcc),
#                          every test
#   valgrind  build/       the same binaries as "default" under valgrind
#                          memcheck: tests labelled "valgrind", with
#                          ROTA_TEST_SCALE=small in the environment
#   fuzz      build-fuzz/  clang, ROTA_BUILD_FUZZ=ON + ASan+UBSan, tests
#                          labelled "fuzz" (only when clang can link
#                          libFuzzer)
#   tsan      build-tsan/  -O1 -g, ThreadSanitizer (clang if it can, else
#                          gcc), tests labelled "threads"
#   i386      build-i386/  gcc -m32 (gcc-multilib), RelWithDebInfo, every
#                          test the build registers: the default stage's
#                          minus the libuv/libev/libevent/liburing adapters and the
#                          benchmarks, whose peer libraries Debian installs
#                          for the machine's own architecture only
#   clang     build-clang/ clang, RelWithDebInfo, every test
#   debug     build-debug/ ROTA_DEBUG=ON (the misuse checks of rota.h's
#                          DEBUG BUILDS in the whole library), Debug, every
#                          test: correct use is never reported (the
#                          checks' own tests also run in every other
#                          stage, on a test-only debug core)
#
# No stage leaves tests out by a "slow" label: every test fits its stage's
# time (tests shrink themselves under ROTA_TEST_SCALE=small where valgrind
# needs it), so each sanitizer sees the whole suite.
#
# Why i386 and clang: 32-bit pointers and size_t change every structure's
# layout and every size_t/uint64_t conversion, and a second compiler reads
# the C standard differently where the code leans on it; neither shows in a
# 64-bit gcc build.
# Why both ASan and valgrind: ASan sees stack and global overflows and UB
# that valgrind cannot; valgrind checks the optimised binaries we ship,
# without recompiling, and finds reads of uninitialised memory.
#
# Every stage runs even when an earlier one failed, so one run shows every
# problem.  A stage that fails to configure or build counts as one failed
# test.  The last line is "N passed, N failed" (", N skipped" when some were
# skipped), summed over the stages, after one line per stage that names
# each test it failed; the exit status is 1 if anything failed.
# The same line is saved in build/test-summary.txt for .ci/run to repeat.
#
# Environment knobs (all optional):
#   ROTA_STAGES="default asan"  run only these stages
#   ROTA_WERROR=OFF             build without -Werror (default ON)
#   CTEST_JOBS=2, BUILD_JOBS=$(nproc), CMAKE=cmake, CTEST=ctest
#   ROTA_TEST_TIMEOUT=600       seconds, for tests without a TIMEOUT
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
root=$PWD

CMAKE=${CMAKE:-cmake}
CTEST=${CTEST:-ctest}
CTEST_JOBS=${CTEST_JOBS:-2}
BUILD_JOBS=${BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}
WERROR=${ROTA_WERROR:-ON}
STAGES=${ROTA_STAGES:-default asan valgrind fuzz tsan i386 clang debug}
# A default for tests that set no TIMEOUT of their own: a hung test must not
# eat CI's 90 minutes.
TIMEOUT=${ROTA_TEST_TIMEOUT:-600}

total_passed=0
total_failed=0
total_skipped=0
summary=()

now() { date +%s; }

want() { [[ " $STAGES " == *" $1 "* ]]; }

# record STAGE PASSED FAILED SKIPPED SECONDS [NOTE]
record()
{
    total_passed=$((total_passed + $2))
    total_failed=$((total_failed + $3))
    total_skipped=$((total_skipped + $4))
    summary+=("$(printf '  %-9s %3d ok  %3d failed  %3d skipped  %4ds  %s' \
        "$1" "$2" "$3" "$4" "$5" "${6-}")")
}

banner() { printf '\n===== test stage: %s =====\n' "$*"; }

# configure_and_build DIR CMAKE-ARGS...: 0 when both steps succeed.  The
# options every stage depends on are passed each time, so a build directory
# someone reconfigured by hand (say, build/ with -DROTA_SANITIZE=thread)
# cannot silently change what a stage tests; later arguments win.
configure_and_build()
{
    local dir=$1
    shift
    "$CMAKE" -S "$root" -B "$dir" -DROTA_WERROR="$WERROR" \
        -DROTA_BUILD_TESTS=ON -DROTA_SANITIZE= -DROTA_BUILD_FUZZ=OFF \
        -DROTA_DEBUG=OFF "$@" &&
        "$CMAKE" --build "$dir" -j "$BUILD_JOBS"
}

# failed_tests LOG: "NAME (STATUS)" for each test CTest's closing list in LOG
# says failed (skipped and disabled tests are not failures).
failed_tests()
{
    sed -nE 's/^[[:space:]]+[0-9]+ - (.*) \(([^()]*)\)$/\1 (\2)/p' "$1" |
        grep -vE '\((Skipped|Disabled)\)$'
}

# run_ctest STAGE DIR START CTEST-ARGS...: run CTest in DIR, then count what
# its report says.  Counts come from CTest's own closing lines, so they are
# the numbers a reader of the log sees.
#
# A test labelled "realtime" that failed runs once more (failed ones only):
# those tests judge latencies against wall-clock slack, and a shared 2-core
# machine can stall a process past any slack now and then.  It counts as
# passed only if the second run passes, and the summary names it either way
# ("passed on a second run"), so a test that starts to fail often shows.
# Every other test gets one run: a fake-clock test that fails once has a bug.
run_ctest()
{
    local stage=$1 dir=$2 start=$3
    shift 3
    local log=$dir/ctest-$stage.log rc
    (cd "$dir" && "$CTEST" --output-on-failure --timeout "$TIMEOUT" "$@") 2>&1 |
        tee "$log"
    rc=${PIPESTATUS[0]}

    local line total=0 failed=0 skipped
    line=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1)
    if [[ -n $line ]]; then
        failed=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
        total=$(sed -E 's/.* failed out of ([0-9]+).*/\1/' <<<"$line")
    fi
    # CTest counts a skipped test (SKIP_RETURN_CODE, DISABLED) as passed.
    skipped=$(grep -cE '^[[:space:]]+[0-9]+ - .* \((Skipped|Disabled)\)$' "$log")
    local passed=$((total - failed - skipped))
    local note=""
    if ((total == 0)); then
        note="no tests matched"
    fi
    if ((rc != 0 && failed == 0)); then
        # CTest itself failed (bad arguments, a crash): never let that pass.
        failed=1
        note="ctest exited $rc without reporting a failed test"
    fi

    local entry name names=() second=() lines=()
    mapfile -t lines < <(failed_tests "$log")
    if ((failed > 0)); then
        local realtime
        realtime=" $(cd "$dir" && "$CTEST" -N -L realtime |
            sed -nE 's/^[[:space:]]*Test +#[0-9]+: (.*)$/\1/p' | tr '\n' ' ') "
        for entry in "${lines[@]}"; do
            name=${entry% (*}
            [[ $realtime == *" $name "* ]] && names+=("$name")
        done
    fi
    if ((${#names[@]} > 0)); then
        local relog=$dir/ctest-$stage-second-run.log
        printf '\n===== %s: a second run of the failed real-time tests =====\n' "$stage"
        (cd "$dir" && "$CTEST" --output-on-failure --timeout "$TIMEOUT" "$@" \
            -R "^($(IFS='|'; echo "${names[*]}"))\$") 2>&1 | tee "$relog"
        for name in "${names[@]}"; do
            if grep -qE "#[0-9]+: $name [ .]*Passed" "$relog"; then
                second+=("$name")
            fi
        done
        failed=$((failed - ${#second[@]}))
        passed=$((passed + ${#second[@]}))
    fi

    record "$stage" "$passed" "$failed" "$skipped" $(($(now) - start)) "$note"
    # Name what failed under the stage's line, so the summary at the end of
    # a long log says which test to rerun, not only how many.
    for entry in "${lines[@]}"; do
        name=${entry% (*}
        if [[ " ${second[*]} " == *" $name "* ]]; then
            summary+=("$(printf '            passed on a second run: %s (first run %s' "$name" "${entry##* (}")")
        else
            summary+=("$(printf '            failed: %s' "$entry")")
        fi
    done
}

# can_link CC FLAGS...: whether CC can build and link a program with FLAGS
# (clang without its runtime package cannot link sanitizers or libFuzzer).
can_link()
{
    local cc=$1 tmp ok=1
    shift
    command -v "$cc" >/dev/null 2>&1 || return 1
    tmp=$(mktemp -d) || return 1
    printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n#ifndef FUZZ\nint main(void) { return 0; }\n#endif\n' >"$tmp/probe.c"
    "$cc" "$@" "$tmp/probe.c" -o "$tmp/probe" >/dev/null 2>&1 && ok=0
    rm -rf "$tmp"
    return $ok
}

# ---------------------------------------------------------------- default
default_ok=0
if want default; then
    banner "default (build/, RelWithDebInfo)"
    start=$(now)
    if configure_and_build build -DCMAKE_BUILD_TYPE=RelWithDebInfo; then
        default_ok=1
        run_ctest default build "$start" -j "$CTEST_JOBS"
    else
        record default 0 1 0 $(($(now) - start)) "configure/build failed"
    fi
fi

# ------------------------------------------------------------------- asan
if want asan; then
    if can_link clang -fsanitize=address,undefined; then
        asan_cc=clang
    else
        asan_cc=gcc
    fi
    banner "asan (build-asan/, Debug, ASan+UBSan, $asan_cc)"
    start=$(now)
    if configure_and_build build-asan -DCMAKE_BUILD_TYPE=Debug \
        -DCMAKE_C_COMPILER="$asan_cc" -DROTA_SANITIZE=address \
        -DROTA_BUILD_BENCH=OFF; then
        # halt_on_error + abort so a report is a failed test, with a stack.
        ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
            run_ctest asan build-asan "$start" -j "$CTEST_JOBS"
    else
        record asan 0 1 0 $(($(now) - start)) "configure/build failed"
    fi
fi

# --------------------------------------------------------------- valgrind
# CTest's memcheck mode runs each selected test's command under valgrind with
# the options set in CMakeLists.txt (MEMORYCHECK_COMMAND_OPTIONS): any error
# or definite leak makes valgrind exit 1, so the test fails.  Label only
# tests whose command is a binary built here: valgrind on a shell script
# checks the shell, not rota.
if want valgrind; then
    banner "valgrind (build/, memcheck, label valgrind)"
    start=$(now)
    if ! command -v valgrind >/dev/null 2>&1; then
        echo "valgrind is not installed: stage skipped"
        record valgrind 0 0 0 0 "valgrind not installed"
    elif ((default_ok == 0)); then
        echo "build/ did not build (or the default stage was not run): stage skipped"
        record valgrind 0 0 0 0 "needs the default stage"
    else
        # Tests read ROTA_TEST_SCALE=small to shrink their loops: valgrind
        # runs code 20-50x slower.
        ROTA_TEST_SCALE=small \
            run_ctest valgrind build "$start" -j "$CTEST_JOBS" -T memcheck -L valgrind
        # --output-on-failure shows the test's own output; valgrind's report
        # went to CTest's log file, so show that for each failed test.
        sed -nE 's/^[[:space:]]+([0-9]+) - .* \(Failed\)$/\1/p' build/ctest-valgrind.log |
            while read -r n; do
                printf '\n----- valgrind report of test #%s -----\n' "$n"
                cat "build/Testing/Temporary/MemoryChecker.$n.log" 2>/dev/null
            done
    fi
fi

# ------------------------------------------------------------------- fuzz
# libFuzzer targets are registered as short CTest runs (label "fuzz"); long
# campaigns are run by hand from build-fuzz/fuzz/.
if want fuzz; then
    banner "fuzz (build-fuzz/, clang, libFuzzer + ASan+UBSan)"
    start=$(now)
    if ! can_link clang -DFUZZ -fsanitize=fuzzer,address,undefined; then
        echo "clang cannot link libFuzzer here (install clang and libclang-rt-14-dev): stage skipped"
        record fuzz 0 0 0 0 "no clang/libFuzzer"
    # -O1 -g without NDEBUG: fast enough to fuzz, and assert()s stay armed.
    elif configure_and_build build-fuzz -DCMAKE_C_COMPILER=clang \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
        -DROTA_BUILD_FUZZ=ON -DROTA_SANITIZE=address -DROTA_BUILD_BENCH=OFF; then
        ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
        UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
            run_ctest fuzz build-fuzz "$start" -j "$CTEST_JOBS" -L fuzz
    else
        record fuzz 0 1 0 $(($(now) - start)) "configure/build failed"
    fi
fi

# ------------------------------------------------------------------- tsan
# The threaded tests (label "threads": rota/service.h's, see
# tests/CMakeLists.txt) under ThreadSanitizer: clang when it can link the
# runtime (more reliable there), else gcc.  -O1: -O0 code under TSan is too
# slow for the real-time test's 500,000 callbacks a second to catch up in
# its grace period.  halt_on_error turns the first report into a failed test.
if want tsan; then
    if can_link clang -fsanitize=thread; then
        tsan_cc=clang
    else
        tsan_cc=gcc
    fi
    banner "tsan (build-tsan/, -O1 -g, ThreadSanitizer, $tsan_cc, label threads)"
    start=$(now)
    if configure_and_build build-tsan -DCMAKE_C_COMPILER="$tsan_cc" \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
        -DROTA_SANITIZE=thread -DROTA_BUILD_BENCH=OFF \
        -DROTA_BUILD_EXAMPLES=OFF; then
        TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
            run_ctest tsan build-tsan "$start" -j "$CTEST_JOBS" -L threads
    else
        record tsan 0 1 0 $(($(now) - start)) "configure/build failed"
    fi
fi

# ------------------------------------------------------------------- i386
# A stage whose compiler is missing is skipped on a developer's machine, but
# fails in CI, where .ci/run installs it: a green CI must not hide it.
missing_tool()
{
    local stage=$1 why=$2
    echo "$why: stage skipped"
    if [[ -n ${CI-} ]]; then
        record "$stage" 0 1 0 0 "$why (CI installs it)"
    else
        record "$stage" 0 0 0 0 "$why"
    fi
}

if want i386; then
    banner "i386 (build-i386/, gcc -m32, RelWithDebInfo)"
    start=$(now)
    # A build/ configured for 64 bits by hand keeps the 64-bit libraries it
    # found in its cache: start such a directory afresh.
    if [[ -f build-i386/CMakeCache.txt ]] &&
        ! grep -q '^CMAKE_C_FLAGS:STRING=-m32$' build-i386/CMakeCache.txt; then
        rm -rf build-i386
    fi
    if ! can_link gcc -m32; then
        missing_tool i386 "gcc cannot link -m32 programs (install gcc-multilib)"
    # pkg-config looks only where 32-bit .pc files live, so the 64-bit
    # libuv, libevent and libsystemd are not picked up (and libev's library
    # is not found in the 32-bit search path): the adapters are not built.
    elif PKG_CONFIG_LIBDIR=/usr/lib/i386-linux-gnu/pkgconfig \
        configure_and_build build-i386 -DCMAKE_C_COMPILER=gcc \
        -DCMAKE_C_FLAGS=-m32 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DROTA_BUILD_BENCH=OFF; then
        run_ctest i386 build-i386 "$start" -j "$CTEST_JOBS"
    else
        record i386 0 1 0 $(($(now) - start)) "configure/build failed"
    fi
fi

# ------------------------------------------------------------------ clang
if want clang; then
    banner "clang (build-clang/, RelWithDebInfo)"
    start=$(now)
    if ! can_link clang; then
        missing_tool clang "clang is not installed"
    elif configure_and_build build-clang -DCMAKE_C_COMPILER=clang \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROTA_BUILD_BENCH=OFF; then
        run_ctest clang build-clang "$start" -j "$CTEST_JOBS"
    else
        record clang 0 1 0 $(($(now) - start)) "configure/build failed"
    fi
fi

# ------------------------------------------------------------------ debug
if want debug; then
    banner "debug (build-debug/, ROTA_DEBUG=ON, Debug)"
    start=$(now)
    if configure_and_build build-debug -DCMAKE_BUILD_TYPE=Debug \
        -DROTA_DEBUG=ON -DROTA_BUILD_BENCH=OFF; then
        run_ctest debug build-debug "$start" -j "$CTEST_JOBS"
    else
        record debug 0 1 0 $(($(now) - start)) "configure/build failed"
    fi
fi

# ---------------------------------------------------------------- summary
printf '\n===== test summary =====\n'
printf '%s\n' "${summary[@]}"
line="$total_passed passed, $total_failed failed"
if ((total_skipped > 0)); then
    line+=", $total_skipped skipped"
fi
mkdir -p build && printf '%s\n' "$line" >build/test-summary.txt
printf '%s\n' "$line"
((total_failed == 0))
