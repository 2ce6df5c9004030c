/* SPDX-License-Identifier: MIT */
/*
 * test_service_config.c - rota_service_config_check() names the field at
 * fault for every configuration rota_service_create() refuses, and create
 * refuses exactly those (rota/service.h).  One test per field; each breaks
 * one rule of an otherwise valid configuration, asks both calls, and checks
 * the text starts with the field's name.
 */
#include <rota.h>
#include <rota/service.h>

#include <stdint.h>
#include <string.h>

#include "harness.h"

static uint64_t now_ns(void *ctx)
{
    (void)ctx;
    return 0;
}
static void wait_until(void *ctx, uint64_t deadline_ns)
{
    (void)ctx, (void)deadline_ns;
}
static void wake(void *ctx)
{
    (void)ctx;
}
static void *alloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}
static void release(void *ctx, void *ptr, size_t size)
{
    (void)ctx, (void)size;
    free(ptr);
}

/* `cfg` is refused, by both calls, for `field`. */
static void check_refused(const struct rota_service_config *cfg,
                          const char *field)
{
    const char *why = NULL;
    struct rota_service *svc = (struct rota_service *)&why; /* not NULL */

    CHECK_EQ_INT(rota_service_config_check(cfg, &why), ROTA_EINVAL);
    if (CHECK(why != NULL)) {
        size_t n = strlen(field);
        CHECK(strncmp(why, field, n) == 0 && why[n] == ':');
        printf("     %s\n", why);
    }
    CHECK_EQ_INT(rota_service_config_check(cfg, NULL), ROTA_EINVAL);
    CHECK_EQ_INT(rota_service_create(&svc, cfg), ROTA_EINVAL);
    CHECK(svc == NULL);
}

/* A valid configuration with every field set. */
static struct rota_service_clock clock_table = {now_ns, wait_until, wake, NULL};
static struct rota_allocator allocator = {alloc, release, NULL};

static struct rota_service_config valid(void)
{
    struct rota_service_config cfg = {0};
    cfg.workers = 1;
    cfg.shards = 1;
    cfg.initial_capacity = 64;
    cfg.allocator = &allocator;
    return cfg;
}

TEST(valid_configs_pass)
{
    const char *why = "untouched";
    struct rota_service_config cfg = valid();

    CHECK_EQ_INT(rota_service_config_check(NULL, &why), 0);
    CHECK_EQ_INT(rota_service_config_check(&cfg, &why), 0);
    CHECK_EQ_STR(why, "untouched"); /* written only on a refusal */
    cfg.clock = &clock_table;
    CHECK_EQ_INT(rota_service_config_check(&cfg, NULL), 0);
    cfg.workers = ROTA_SERVICE_MAX_WORKERS;
    cfg.shards = ROTA_SERVICE_MAX_SHARDS;
    cfg.initial_capacity = (size_t)1 << 26;
    CHECK_EQ_INT(rota_service_config_check(&cfg, NULL), 0);
    cfg = valid();
    cfg.clock_source = ROTA_CLOCK_BOOTTIME;
    CHECK_EQ_INT(rota_service_config_check(&cfg, NULL), 0);
    /* And create agrees. */
    struct rota_service *svc = NULL;
    cfg = valid();
    if (CHECK_EQ_INT(rota_service_create(&svc, &cfg), 0))
        rota_service_destroy(svc);
}

TEST(workers_named)
{
    struct rota_service_config cfg = valid();
    cfg.workers = ROTA_SERVICE_MAX_WORKERS + 1;
    check_refused(&cfg, "workers");
}

TEST(shards_named)
{
    struct rota_service_config cfg = valid();
    cfg.shards = ROTA_SERVICE_MAX_SHARDS + 1;
    check_refused(&cfg, "shards");
}

TEST(initial_capacity_named)
{
    struct rota_service_config cfg = valid();
    cfg.initial_capacity = ((size_t)1 << 26) + 1;
    check_refused(&cfg, "initial_capacity");
}

TEST(clock_functions_named)
{
    struct rota_service_config cfg = valid();
    struct rota_service_clock broken;

    cfg.clock = &broken;
    for (int missing = 0; missing < 3; missing++) {
        broken = clock_table;
        if (missing == 0)
            broken.now_ns = NULL;
        else if (missing == 1)
            broken.wait = NULL;
        else
            broken.wake = NULL;
        check_refused(&cfg, "clock");
    }
}

TEST(clock_source_named)
{
    struct rota_service_config cfg = valid();
    cfg.clock_source = ROTA_CLOCK_MONOTONIC_COARSE;
    check_refused(&cfg, "clock_source");
    cfg.clock_source = (enum rota_clock_source)77;
    check_refused(&cfg, "clock_source");
    /* A source and a clock of one's own: which one? */
    cfg.clock = &clock_table;
    cfg.clock_source = ROTA_CLOCK_BOOTTIME;
    check_refused(&cfg, "clock_source");
}

TEST(allocator_functions_named)
{
    struct rota_service_config cfg = valid();
    struct rota_allocator broken = allocator;

    cfg.allocator = &broken;
    broken.alloc = NULL;
    check_refused(&cfg, "allocator");
    broken = allocator;
    broken.free = NULL;
    check_refused(&cfg, "allocator");
}

int main(int argc, char **argv)
{
    static const struct h_test tests[] = {
        H_TEST(valid_configs_pass),
        H_TEST(workers_named),
        H_TEST(shards_named),
        H_TEST(initial_capacity_named),
        H_TEST(clock_functions_named),
        H_TEST(clock_source_named),
        H_TEST(allocator_functions_named),
    };
    return h_main(argc, argv, tests, H_COUNT(tests));
}
