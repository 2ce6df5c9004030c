/* SPDX-License-Identifier: MIT */
/*
 * service_heap.h - the baseline of the S1 / S2 benchmark: the thread-safe
 * timer service a user would write without rota/service.h.
 *
 * An indexed binary min-heap (`heap2`: each node knows its slot, so cancel
 * is O(log n)) of caller-owned nodes, behind one mutex; a timer thread
 * sleeps on a condition variable (CLOCK_MONOTONIC) until the earliest
 * deadline and is signalled when an arm makes a new earliest one; due
 * callbacks run on the timer thread, outside the lock, or are handed to N
 * worker threads through a mutex + condvar FIFO.  Ties are broken by an arm
 * sequence number.  Nothing is allocated per operation.
 *
 * It has the cancel race rota's service fixes (a callback popped or queued
 * before a cancel still runs); the benchmark's callbacks do not care.
 */
#ifndef ROTA_BENCH_SERVICE_HEAP_H
#define ROTA_BENCH_SERVICE_HEAP_H

#include <stdbool.h>
#include <stdint.h>

struct hs_node {
    uint64_t deadline_ns;
    uint64_t seq;
    uint32_t slot; /* index in the heap, HS_IDLE when not pending */
    uint32_t qnext;
    void (*fn)(struct hs_node *node, uint64_t now_ns);
    void *arg;
};

#define HS_IDLE UINT32_MAX

struct hs_service;

/* A service for up to `capacity` pending nodes, with `workers` worker
 * threads (0: callbacks on the timer thread).  NULL on failure. */
struct hs_service *hs_create(uint32_t capacity, unsigned workers,
                             struct hs_node *nodes);
/* Stop the threads and free the service (pending nodes are dropped). */
void hs_destroy(struct hs_service *svc);
/* (Re-)arm a node at an absolute CLOCK_MONOTONIC deadline. */
void hs_arm(struct hs_service *svc, struct hs_node *node, uint64_t deadline_ns);
/* Remove a pending node; false if it was not pending. */
bool hs_cancel(struct hs_service *svc, struct hs_node *node);

uint64_t hs_now_ns(void);

#endif /* ROTA_BENCH_SERVICE_HEAP_H */
