/* SPDX-License-Identifier: MIT */
/*
 * gen_corpus.c - write fuzz/corpus/: small inputs for fuzz_wheel.c that
 * replay chosen PRNG streams of the differential test's driver, so the
 * fuzzer starts from inputs that already reach every operation.
 *
 *   gen_corpus DIR      (writes DIR/seed-NN; the checked-in files were made
 *                        by this program, and it is deterministic)
 *
 * Each value the driver draws is written in the width fuzz_input.h reads,
 * already reduced, so the byte source gives back exactly the same value.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "harness.h" /* h_rand(): the tests' PRNG */
#include "model/driver.h"

struct recorder {
    uint64_t state;
    uint8_t *buf;
    size_t len, cap;
};

static void put(struct recorder *r, uint8_t b)
{
    if (r->len == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 1024;
        r->buf = realloc(r->buf, r->cap);
        if (r->buf == NULL)
            abort();
    }
    r->buf[r->len++] = b;
}

static uint64_t record_next(void *ctx, uint64_t bound)
{
    struct recorder *r = ctx;
    uint64_t v = h_rand(&r->state);
    unsigned width = fuzz_width(bound);

    if (bound != 0)
        v %= bound;
    for (unsigned i = 0; i < width; i++)
        put(r, (uint8_t)(v >> (8 * i)));
    return v;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    /* Three streams for each starting time of fuzz_input.h. */
    for (unsigned n = 0; n < 3 * FUZZ_STARTS; n++) {
        struct recorder r = {0x5eed0000u + n, NULL, 0, 0};
        uint8_t pool_byte = (uint8_t)(n % 4 == 0 ? 3 : 7 + 8 * (n % 4));
        uint8_t start_byte = (uint8_t)(n % FUZZ_STARTS);
        unsigned ops = 40 + 20 * (n % 8);
        put(&r, pool_byte);
        put(&r, start_byte);
        struct drv_config cfg = {0};
        cfg.pool = fuzz_pool_size(pool_byte);
        cfg.start = fuzz_start_time(start_byte);
        cfg.trace_from = UINT64_MAX;
        cfg.full_every = 1;
        struct drv_src src = {record_next, NULL, &r};
        struct drv *d = drv_new(&cfg, src);
        for (unsigned i = 0; i < ops; i++)
            if (drv_step(d) != 0) {
                fprintf(stderr, "seed %u: %s\n", n, drv_error(d));
                return 1;
            }
        drv_finish(d);
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%02u", argv[1], n);
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(r.buf, 1, r.len, f) != r.len || fclose(f)) {
            perror(path);
            return 1;
        }
        printf("%s: %zu bytes, %u operations\n", path, r.len, ops);
        free(r.buf);
    }
    return 0;
}
