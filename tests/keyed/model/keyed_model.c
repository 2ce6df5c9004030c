/* SPDX-License-Identifier: MIT */
/* keyed_model.c - see keyed_model.h. */
#include "keyed_model.h"

#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- model */

void km_init(struct keyed_model *m, uint64_t now)
{
    *m = (struct keyed_model){0};
    m->now = now > ROTA_MAX_DEADLINE ? ROTA_MAX_DEADLINE : now;
}

void km_free(struct keyed_model *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->e[i].key);
    free(m->e);
    *m = (struct keyed_model){0};
}

struct km_entry *km_find(struct keyed_model *m, const void *key, size_t len)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->e[i].len == len &&
            (len == 0 || memcmp(m->e[i].key, key, len) == 0))
            return &m->e[i];
    return NULL;
}

uint64_t km_deadline_in(const struct keyed_model *m, uint64_t ttl)
{
    if (ttl == ROTA_NEVER)
        return ROTA_NEVER;
    if (ttl > ROTA_MAX_DEADLINE - m->now)
        return ROTA_MAX_DEADLINE;
    return m->now + ttl;
}

static uint64_t clamp(const struct keyed_model *m, uint64_t deadline)
{
    if (deadline == ROTA_NEVER)
        return ROTA_NEVER;
    return deadline < m->now ? m->now : deadline;
}

static void set_deadline(struct keyed_model *m, struct km_entry *e,
                         uint64_t deadline)
{
    uint64_t next = clamp(m, deadline);

    e->strict = e->deadline == ROTA_NEVER || next < e->deadline;
    e->deadline = next;
    e->pass = m->pass;
}

int km_set(struct keyed_model *m, const void *key, size_t len, void *value,
           uint64_t deadline, void **old_value)
{
    struct km_entry *e = km_find(m, key, len);

    if (e != NULL) {
        if (old_value != NULL)
            *old_value = e->value;
        e->value = value;
        set_deadline(m, e, deadline);
        return 1;
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 16;
        m->e = realloc(m->e, m->cap * sizeof *m->e);
        if (m->e == NULL)
            abort();
    }
    e = &m->e[m->n++];
    e->key = malloc(len ? len : 1);
    if (e->key == NULL)
        abort();
    if (len != 0)
        memcpy(e->key, key, len);
    e->len = len;
    e->value = value;
    e->deadline = ROTA_NEVER;
    set_deadline(m, e, deadline);
    return 0;
}

int km_move(struct keyed_model *m, const void *key, size_t len,
            uint64_t deadline)
{
    struct km_entry *e = km_find(m, key, len);

    if (e == NULL)
        return ROTA_ENOENT;
    set_deadline(m, e, deadline);
    return 0;
}

int km_remove(struct keyed_model *m, const void *key, size_t len, void **value)
{
    struct km_entry *e = km_find(m, key, len);

    if (e == NULL)
        return 0;
    if (value != NULL)
        *value = e->value;
    free(e->key);
    *e = m->e[--m->n];
    return 1;
}

void km_begin_pass(struct keyed_model *m, uint64_t now)
{
    if (now > ROTA_MAX_DEADLINE)
        now = ROTA_MAX_DEADLINE;
    if (now > m->now)
        m->now = now;
    m->pass++;
}
