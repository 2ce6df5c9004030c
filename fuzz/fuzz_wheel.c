/* SPDX-License-Identifier: MIT */
/*
 * fuzz_wheel.c - libFuzzer target: the fuzzer's bytes are the operation
 * stream of the differential test (tests/core/model/driver.c), run on a real
 * wheel and on the reference model in lockstep.  Any disagreement, any
 * rota_wheel_check() failure, and any memory error (ASan) aborts.
 *
 * Input: byte 0 picks the pool size (1..32 timers: small, so operations
 * keep hitting the same timers), byte 1 the starting time (one of
 * fuzz_input.h's, some just below a level boundary); every later
 * value the stream needs takes 1, 2, 4 or 8 little-endian bytes (by its
 * range) and is reduced modulo that range, so fuzz/gen_corpus.c can write
 * inputs that replay a chosen PRNG stream exactly.  When the bytes run
 * out the run ends with a drain, compared like everything else.
 *
 * ROTA_TRACE=1 in the environment prints every operation (to replay a
 * crash with fuzz_replay or the fuzzer binary and read what happened).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <rota.h>

#include "fuzz_input.h"
#include "model/driver.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Enough operations for any input libFuzzer makes by default (4 KiB). */
#define MAX_OPS 20000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int trace = -1;
    struct fuzz_bytes in = {data, size, 2};
    struct drv_config cfg = {0};
    struct drv_src src = {fuzz_bytes_next, fuzz_bytes_done, &in};
    int rc = 0;

    if (trace < 0) {
        const char *env = getenv("ROTA_TRACE");
        trace = env != NULL && *env != '\0';
    }
    if (size < 2)
        return 0;
    cfg.pool = fuzz_pool_size(data[0]);
    cfg.start = fuzz_start_time(data[1]);
    cfg.fault = DRV_FAULT_NONE;
    cfg.trace_from = trace ? 0 : UINT64_MAX;
    /* Every timer's state after each operation (the pool is small), the
     * wheel's own invariant check every 4th (it walks all
     * ROTA_WHEEL_LEVELS * ROTA_WHEEL_SLOTS = 2,048 slot heads: each
     * operation would cut the executions per second by three). */
    cfg.full_every = 1;
    cfg.check_every = 4;
    struct drv *d = drv_new(&cfg, src);
    if (d == NULL)
        abort();
    for (int ops = 0; ops < MAX_OPS && (rc = drv_step(d)) == 0; ops++)
        ;
    if (rc < 0) {
        fprintf(stderr, "fuzz_wheel: wheel and model disagree: %s\n",
                drv_error(d));
        abort();
    }
    if (drv_finish(d) != 0) {
        fprintf(stderr, "fuzz_wheel: the final drain disagrees\n");
        abort();
    }
    return 0;
}
