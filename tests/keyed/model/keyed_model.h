/* SPDX-License-Identifier: MIT */
/*
 * keyed_model.h - a trivially correct model of rota/keyed.h for tests: a
 * flat array of {key, value, deadline} searched linearly.
 *
 * The model knows nothing of hashing or wheels; it applies the header's
 * rules directly: deadlines are clamped to [now, ROTA_MAX_DEADLINE]
 * (ROTA_NEVER means none), a ttl counts from the model's now with
 * saturation, and after an advance to `now` no entry whose deadline is at
 * or before `now` remains unless it was given its deadline during that
 * advance (by a callback).
 */
#ifndef ROTA_TESTS_KEYED_MODEL_H
#define ROTA_TESTS_KEYED_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rota.h>

/* -------------------------------------------------------------- model */

struct km_entry {
    unsigned char *key;
    size_t len;
    void *value;
    uint64_t deadline; /* clamped; ROTA_NEVER for none */
    uint64_t pass;     /* advance pass in which the deadline was last set */
    /* Whether that set must wait for the next advance: the timer was armed
     * (new entry, no deadline before, or an earlier deadline), not merely
     * pushed later, which may still fire in the running pass. */
    bool strict;
};

struct keyed_model {
    struct km_entry *e;
    size_t n, cap;
    uint64_t now;
    uint64_t pass; /* incremented by km_begin_pass() */
};

void km_init(struct keyed_model *m, uint64_t now);
void km_free(struct keyed_model *m);
struct km_entry *km_find(struct keyed_model *m, const void *key, size_t len);
/* The deadline a ttl gives at the model's now (ROTA_NEVER stays). */
uint64_t km_deadline_in(const struct keyed_model *m, uint64_t ttl);
/* As rota_keyed_set_at(): 0 added, 1 replaced. */
int km_set(struct keyed_model *m, const void *key, size_t len, void *value,
           uint64_t deadline, void **old_value);
/* As rota_keyed_move_at(): 0 or ROTA_ENOENT. */
int km_move(struct keyed_model *m, const void *key, size_t len,
            uint64_t deadline);
/* As rota_keyed_remove(): 1 or 0. */
int km_remove(struct keyed_model *m, const void *key, size_t len, void **value);
/* Start an advance to `now` (ignored if earlier than the model's). */
void km_begin_pass(struct keyed_model *m, uint64_t now);

#endif /* ROTA_TESTS_KEYED_MODEL_H */
