/* SPDX-License-Identifier: MIT */
/*
 * service_config.c - rota_service_config_check(): what
 * rota_service_create() accepts, field by field, each refusal with a text
 * that names the field (rota/service.h).  Kept apart from the service's
 * life cycle so that a new field's rule is one line here and its message
 * is next to it.
 */
#include "rota/service.h"

#include <stddef.h>
#include <stdint.h>

/* The most timer records create allocates at once. */
#define MAX_INITIAL_CAPACITY ((size_t)1 << 26)

static int refuse(const char **why, const char *text)
{
    if (why != NULL)
        *why = text;
    return ROTA_EINVAL;
}

int rota_service_config_check(const struct rota_service_config *config,
                              const char **why)
{
    if (config == NULL)
        return 0; /* every default */
    const struct rota_service_config *c = config;
    if (c->workers > ROTA_SERVICE_MAX_WORKERS)
        return refuse(why, "workers: more than ROTA_SERVICE_MAX_WORKERS");
    if (c->shards > ROTA_SERVICE_MAX_SHARDS)
        return refuse(why, "shards: more than ROTA_SERVICE_MAX_SHARDS");
    if (c->initial_capacity > MAX_INITIAL_CAPACITY)
        return refuse(why, "initial_capacity: more than 2^26 timer records");
    if (c->clock != NULL) {
        if (c->clock->now_ns == NULL)
            return refuse(why, "clock: its now_ns function is NULL");
        if (c->clock->wait == NULL)
            return refuse(why, "clock: its wait function is NULL");
        if (c->clock->wake == NULL)
            return refuse(why, "clock: its wake function is NULL");
        if (c->clock_source != ROTA_CLOCK_MONOTONIC)
            return refuse(why, "clock_source: must be 0 (ROTA_CLOCK_MONOTONIC) "
                               "when clock is set");
    }
    if (c->clock_source != ROTA_CLOCK_MONOTONIC &&
        c->clock_source != ROTA_CLOCK_BOOTTIME)
        return refuse(why, "clock_source: neither ROTA_CLOCK_MONOTONIC nor "
                           "ROTA_CLOCK_BOOTTIME");
    if (c->allocator != NULL) {
        if (c->allocator->alloc == NULL)
            return refuse(why, "allocator: its alloc function is NULL");
        if (c->allocator->free == NULL)
            return refuse(why, "allocator: its free function is NULL");
    }
    return 0;
}
