# SPDX-License-Identifier: MIT
# A thin wrapper over CMake for muscle memory: every rule only configures,
# builds, runs or installs through cmake/ctest.  Build logic belongs in
# CMakeLists.txt, never here.
#
#   make / make build   Release build in build/ (-Werror when $CI is set)
#   make test           the eight test stages (cmake/test-stages.sh):
#                       build/, build-asan/, valgrind, build-fuzz/,
#                       build-tsan/, build-i386/ (gcc -m32), build-clang/,
#                       build-debug/
#   make bench          Release build in build-release/, runs rota_bench
#                       with $(BENCH_ARGS) (W1-W5, MEM, FLOOR), then
#                       bench_keyed (W6) and rota_bench_service (S1-S3);
#                       BENCH_ARGS=--quick makes all three a smoke run
#   make bench-counts   Release build in build-release/, then instructions
#                       and data references per operation for rota,
#                       wheel-bare and hashed-rounds under valgrind
#                       (bench/counts/counts.sh; N=$(COUNTS_N))
#   make bench-results  docs/bench-results.md from the JSON of the last
#                       make bench (bench/common/results-md.py)
#   make bench-server   Release build in build-server/, runs the idle
#                       server's figures (examples/idle-server/README.md)
#   make bench-cache    Release build in build-cache/, redis-benchmark
#                       against the TTL cache and redis-server
#                       (examples/ttl-cache/README.md)
#   make debug          Debug build with rota's misuse checks (ROTA_DEBUG=ON,
#                       rota.h "DEBUG BUILDS") in build-debug/, whose
#                       librota has the checks (every build also makes
#                       librota_debug, the same checks beside librota)
#   make install        build/ installed into $(PREFIX) (default /usr/local)
#   make format         clang-format -i every C file
#   make format-check   fail if any C file is not clang-formatted
#   make abi-update     rewrite abi/*.symbols from build/'s shared libraries
#                       (after a deliberate change of exported symbols)
#   make single-file    build/single-file/rota.h + rota.c: the core wheel
#                       and clock helper in two files to vendor
#   make license-check  list files lacking the SPDX licence line
#                       (sh cmake/check-license.sh --fix adds it)
#   make refs-check     list lines that point outside the repository
#   make clean          remove every build directory

CMAKE ?= cmake
CLANG_FORMAT ?= clang-format
PREFIX ?= /usr/local
BENCH_ARGS ?=
COUNTS_N ?= 10000 1000000
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# -Werror only in CI: a new compiler's new warning must not stop a user's
# build, but must stop a merge.
ifneq ($(CI),)
WERROR := ON
else
WERROR := OFF
endif

BUILD_DIRS := build build-asan build-tsan build-fuzz build-i386 build-clang \
              build-release build-server build-cache build-debug

# Every C source and header of the project (what exists of these folders).
FORMAT_DIRS := $(wildcard include src tests bench examples fuzz)
FORMAT_FILES = $(shell find $(FORMAT_DIRS) -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null) \
               $(wildcard *.c *.h)

.PHONY: all build debug test bench bench-counts bench-results bench-server bench-cache install format \
	format-check license-check refs-check abi-update single-file clean

all: build

build:
	$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release -DROTA_WERROR=$(WERROR)
	$(CMAKE) --build build -j $(JOBS)

debug:
	$(CMAKE) -S . -B build-debug -DCMAKE_BUILD_TYPE=Debug -DROTA_DEBUG=ON \
		-DROTA_WERROR=$(WERROR)
	$(CMAKE) --build build-debug -j $(JOBS)

# The stages need a loop, a summary and "keep going after a failure", which
# a shell script says more plainly than make.  -Werror is on for all of them
# (ROTA_WERROR=OFF make test to relax).
test:
	bash cmake/test-stages.sh

bench:
	$(CMAKE) -S . -B build-release -DCMAKE_BUILD_TYPE=Release \
		-DROTA_BUILD_BENCH=ON -DROTA_BUILD_TESTS=OFF -DROTA_BUILD_EXAMPLES=OFF \
		-DROTA_SANITIZE= -DROTA_BUILD_FUZZ=OFF -DROTA_WERROR=$(WERROR)
	@if ! $(CMAKE) --build build-release --target help | grep -w rota_bench >/dev/null; then \
		echo "make bench: there is no rota_bench target yet (bench/CMakeLists.txt must define it)"; \
		exit 1; \
	fi
	$(CMAKE) --build build-release -j $(JOBS) --target rota_bench bench_keyed rota_bench_service
	build-release/bench/rota_bench $(BENCH_ARGS)
	@echo "== W6 (keyed timers): bench_keyed =="
	build-release/bench/bench_keyed $(filter --quick,$(BENCH_ARGS))
	@echo "== S1/S2/S3 (threaded service): rota_bench_service =="
	build-release/bench/rota_bench_service $(filter --quick,$(BENCH_ARGS))

bench-counts:
	$(CMAKE) -S . -B build-release -DCMAKE_BUILD_TYPE=Release \
		-DROTA_BUILD_BENCH=ON -DROTA_BUILD_TESTS=OFF -DROTA_BUILD_EXAMPLES=OFF \
		-DROTA_SANITIZE= -DROTA_BUILD_FUZZ=OFF -DROTA_WERROR=$(WERROR)
	$(CMAKE) --build build-release -j $(JOBS) --target rota_counts
	bash bench/counts/counts.sh -o build-release/counts.tsv \
		build-release/bench/rota_counts $(COUNTS_N)

# The page is generated from whichever of the three JSON files the last
# `make bench` wrote (it says which, and whether the run was --quick);
# BENCH_NOTE="..." adds a sentence about the run the files do not record
# (read from the environment by the script, never expanded by the shell).
BENCH_JSON = $(wildcard build/bench/results.json build/bench/results-w6.json \
                        build/bench/results-service.json)
bench-results:
	@test -n "$(BENCH_JSON)" || { echo "make bench-results: no build/bench/results*.json: run make bench first"; exit 1; }
	python3 bench/common/results-md.py --out docs/bench-results.md $(BENCH_JSON)

# The bench-server target (examples/idle-server/CMakeLists.txt) builds the
# server and the load generator and runs bench_server.sh.
bench-server:
	$(CMAKE) -S . -B build-server -DCMAKE_BUILD_TYPE=Release \
		-DROTA_BUILD_EXAMPLES=ON -DROTA_BUILD_TESTS=OFF -DROTA_BUILD_BENCH=OFF \
		-DROTA_WERROR=$(WERROR)
	$(CMAKE) --build build-server -j $(JOBS) --target bench-server

# The bench-cache target (examples/ttl-cache/CMakeLists.txt) builds the
# cache and runs bench_cache.sh (needs redis-server and redis-benchmark).
bench-cache:
	$(CMAKE) -S . -B build-cache -DCMAKE_BUILD_TYPE=Release \
		-DROTA_BUILD_EXAMPLES=ON -DROTA_BUILD_TESTS=OFF -DROTA_BUILD_BENCH=OFF \
		-DROTA_WERROR=$(WERROR)
	$(CMAKE) --build build-cache -j $(JOBS) --target bench-cache

install: build
	$(CMAKE) --install build --prefix $(PREFIX)

format:
	$(CLANG_FORMAT) -i $(FORMAT_FILES)

format-check:
	$(CLANG_FORMAT) --dry-run --Werror $(FORMAT_FILES)

single-file:
	$(CMAKE) -S . -B build -DCMAKE_BUILD_TYPE=Release -DROTA_WERROR=$(WERROR)
	$(CMAKE) --build build --target single-file
	@echo "make single-file: build/single-file/rota.h and build/single-file/rota.c"

abi-update: build
	$(CMAKE) --build build --target abi-update

license-check:
	sh cmake/check-license.sh

refs-check:
	sh cmake/check-self-contained.sh

clean:
	rm -rf $(BUILD_DIRS)
