/* SPDX-License-Identifier: MIT */
/*
 * store.c - the keyspace: every key in one rota keyed map, Redis's expiry
 * rules on top, an index for SCAN and eviction, and the memory bound.
 *
 * ONE BLOCK A KEY
 *   A key's header, key bytes and value bytes are one malloc block (struct
 *   value), and the map borrows the key from it (borrow_keys) instead of
 *   copying it: the key is stored once.  So the map must be told of a new
 *   block before the old one goes: a SET hands the map the new block's key
 *   in the same call that replaces the value (one lookup, and the old
 *   block freed after), and APPEND's growth copies into a new block,
 *   points the map at it, then frees the old (realloc() would free the
 *   key the map still reads).
 *
 * EXPIRY
 *   Redis keeps a key's expiry as an absolute unix time in milliseconds and
 *   calls the key expired once the clock is past it (now > when).  So does
 *   this store (struct value's `when`), which makes TTL, PTTL, EXPIRETIME
 *   and the GT/LT comparisons of EXPIRE exactly Redis's.  The map's deadline
 *   is the same instant on CLOCK_MONOTONIC in 1 ms ticks (the first tick
 *   after `when`), so the wheel removes each key when its time comes and
 *   the event loop sleeps until the next one: no sampling, no scan.  The
 *   loop expires for about a millisecond a turn (store_expire()), so keys
 *   that share a deadline by the million are removed over many turns.  A
 *   lookup also checks `when` against the unix clock, so a key is never
 *   served after its time: between two ticks, while a mass expiry is
 *   still being worked through, or if the two clocks drift (a wheel expiry
 *   that the unix clock says is early re-arms the key instead).
 *
 * THE INDEX
 *   rota's keyed map has no iteration, and SCAN and eviction need "a key
 *   at position i".  A dense array of value pointers gives that, every
 *   key in it.  Each value knows its position; removal
 *   moves the last element into the hole (O(1)).  SCAN walks the array of
 *   all keys from its end towards 0, the cursor being the next position to
 *   read plus one: an element only ever moves from the end (already
 *   visited) to a lower position, so every key present for a whole
 *   iteration is returned at least once, as Redis promises, and keys
 *   added during it may or may not be.
 *
 * MEMORY AND EVICTION
 *   Used memory is the dataset: the map's own bytes (rota_keyed_stats()),
 *   each value's block rounded as malloc rounds it, and the array.
 *   Client buffers are not counted (they are bounded on their own; Redis
 *   counts them).
 *
 *   Growth is counted before it happens.  The map's table grows by half at
 *   load 3/4, the new table allocated beside the old one, and the arrays double
 *   when full: with small keys that is a third of used memory arriving in
 *   one insert, and evicting room for it at once took a fifth of the keys
 *   in one command (5,858 keys for 100 SETs at 16 MB; 84,405 at 128 MB),
 *   while with noeviction the growth went past the bound.  So the bound
 *   is checked against used memory plus a growing share of each coming
 *   growth (rota_keyed_next_growth() says when and how much): nothing
 *   until the count is within a sixth of the growth point, then a share
 *   with each key, the whole of it at that point.  Each SET in that stretch
 *   evicts a few keys more than its own bytes need (about 700 bytes'
 *   worth on x86-64), and the table grows only if memory for it was
 *   found; otherwise the count settles below the growth point, the table
 *   at load 5/8 to 3/4.  Used memory, as INFO reports it, is never more
 *   than what was counted, so noeviction keeps the bound too.
 *
 *   Over --maxmemory, before each command, keys are evicted
 *   as Redis does, by sampling: --maxmemory-samples random keys (of all,
 *   or of those with a TTL) join a pool of the 16 best candidates seen so
 *   far, and the best of the pool goes (least recently used, or nearest
 *   expiry for volatile-ttl), until memory fits.  The keys with a TTL
 *   have no array of their own (it cost 8 bytes a key): volatile-*
 *   policies draw from the array of all keys and keep the keys with a
 *   TTL (sample_volatile()).  This approximates the
 *   exact order closely while costing a few probes per eviction; the
 *   wheel does know the exact next expiry, but not which key it belongs
 *   to through rota's public API, and an exact LRU list would cost two
 *   pointers a key.  When nothing can be evicted (noeviction, or no
 *   volatile key left) commands that add data
 *   are refused with Redis's -OOM error (commands.c).
 */
#define _GNU_SOURCE
#include "cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static const char *const policy_names[] = {
    [POLICY_NOEVICTION] = "noeviction",
    [POLICY_ALLKEYS_LRU] = "allkeys-lru",
    [POLICY_ALLKEYS_RANDOM] = "allkeys-random",
    [POLICY_VOLATILE_LRU] = "volatile-lru",
    [POLICY_VOLATILE_RANDOM] = "volatile-random",
    [POLICY_VOLATILE_TTL] = "volatile-ttl",
};

const char *policy_name(enum policy p)
{
    return policy_names[p];
}

bool policy_parse(const char *s, enum policy *out)
{
    for (size_t i = 0; i < sizeof policy_names / sizeof *policy_names; i++)
        if (strcmp(s, policy_names[i]) == 0) {
            *out = (enum policy)i;
            return true;
        }
    return false;
}

static long long unix_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* What malloc takes for a block of n bytes (glibc: 8 bytes of header,
 * 16-byte granules, 32 at least). */
static size_t block_size(size_t n)
{
    size_t s = (n + 8 + 15) & ~(size_t)15;
    return s < 32 ? 32 : s;
}

static size_t value_size(const struct value *v)
{
    return block_size(sizeof *v + v->key_len + v->len + v->spare);
}

static uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (S.rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* ---------------------------------------------------------- the index */

/* Room for one more element; false when out of memory. */
static bool array_reserve(struct value ***arr, size_t len, size_t *cap)
{
    if (len == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        struct value **p = realloc(*arr, ncap * sizeof *p);
        if (p == NULL)
            return false;
        *arr = p;
        *cap = ncap;
    }
    return true;
}

static void all_remove(struct value *v)
{
    struct value *last = S.all[--S.all_len];
    S.all[v->all_idx] = last;
    last->all_idx = v->all_idx;
}

/* The sum of `when` over the keys with a TTL (S.vol_len of them), so
 * that INFO's avg_ttl costs O(1) (exact while the sum stays below 2^64
 * ms). */
static long double vol_when_sum;

/* Count v's expiry out of S.vol_len and vol_when_sum. */
static void vol_remove(const struct value *v)
{
    if (v->when == NO_EXPIRE)
        return;
    vol_when_sum -= v->when;
    S.vol_len--;
}

/* The monotonic deadline for a unix-ms expiry: the first tick after it. */
static uint64_t deadline_of(long long when)
{
    if (when == NO_EXPIRE)
        return ROTA_NEVER;
    if (when < S.now_ms)
        return S.now_tick;
    unsigned long long ahead =
        (unsigned long long)when - (unsigned long long)S.now_ms + 1;
    if (ahead > ROTA_MAX_DEADLINE - S.now_tick)
        return ROTA_MAX_DEADLINE;
    return S.now_tick + ahead;
}

static void value_free(struct value *v)
{
    S.value_bytes -= value_size(v);
    free(v);
}

#define POOL_SIZE 16
static struct value *pool[POOL_SIZE]; /* see MEMORY AND EVICTION */
static size_t pool_len;
static void pool_remove(const struct value *v);

/* Take v out of the index and free it (it is already out of the map). */
static void forget(struct value *v)
{
    pool_remove(v);
    all_remove(v);
    vol_remove(v);
    value_free(v);
}

static void on_expire(struct rota_keyed *map, const void *key, size_t len,
                      void *value, void *arg)
{
    (void)arg;
    struct value *v = value;
    if (v->when != NO_EXPIRE && v->when >= S.now_ms &&
        rota_keyed_set_at(map, key, len, v, deadline_of(v->when), NULL) >= 0)
        return; /* the unix clock says not yet (clock drift): re-armed */
    S.expired++;
    forget(v);
}

/*
 * The map's allocator.  Its tables are its only big blocks (56 bytes a
 * slot: 84 MB for 1.5 million slots), and the map frees an old table in one call
 * when a resize ends, which the kernel makes pay for every page (12 ms for
 * that table, in the middle of a mass expiry).  So blocks of BIG_BLOCK
 * bytes or more are mapped here and, when freed, unmapped UNMAP_SLICE
 * bytes a loop turn (store_expire()); smaller ones are malloc's.
 */
#define BIG_BLOCK (1u << 20)
#define UNMAP_SLICE (8u << 20)
#define UNMAP_QUEUE 8

static struct {
    char *p;
    size_t len;
} unmap_queue[UNMAP_QUEUE];
static size_t unmap_len;

static size_t page_round(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE); /* divides UNMAP_SLICE */
    return (n + page - 1) & ~(page - 1);
}

static void *map_alloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size < BIG_BLOCK)
        return malloc(size);
    void *p = mmap(NULL, page_round(size), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void map_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    if (size < BIG_BLOCK) {
        free(p);
    } else if (unmap_len < UNMAP_QUEUE) {
        unmap_queue[unmap_len].p = p;
        unmap_queue[unmap_len].len = page_round(size);
        unmap_len++;
    } else {
        munmap(p, page_round(size)); /* never seen: resizes are far apart */
    }
}

static const struct rota_allocator map_allocator = {map_alloc, map_free, NULL};

/* Unmap up to `budget` bytes of freed tables, from their ends; true when
 * some are left. */
static bool unmap_some(size_t budget)
{
    while (unmap_len > 0 && budget > 0) {
        char *p = unmap_queue[unmap_len - 1].p;
        size_t len = unmap_queue[unmap_len - 1].len;
        size_t cut = len < budget ? len : budget;
        munmap(p + len - cut, cut);
        budget -= cut;
        if (cut == len)
            unmap_len--;
        else
            unmap_queue[unmap_len - 1].len = len - cut;
    }
    return unmap_len > 0;
}

/* ------------------------------------------------------------- public */

int store_init(void)
{
    if (rota_clock_init(&S.clock, ROTA_CLOCK_MONOTONIC, TICK_NS) != 0)
        return ROTA_ESYS;
    S.now_tick = rota_clock_now(&S.clock);
    S.now_ms = unix_ms();
    if (getrandom(&S.rng, sizeof S.rng, 0) != sizeof S.rng)
        S.rng = (uint64_t)S.now_ms ^ S.now_tick;
    struct rota_keyed_config cfg = {.now = S.now_tick,
                                    .expire = on_expire,
                                    .allocator = &map_allocator,
                                    .borrow_keys = true};
    return rota_keyed_create(&S.map, &cfg);
}

static void drop_value(struct rota_keyed *map, const void *key, size_t len,
                       void *value, void *arg)
{
    (void)map, (void)key, (void)len, (void)arg;
    value_free(value);
}

/* Forget the index (its values are freed or handed over). */
static void index_reset(void)
{
    pool_len = 0;
    free(S.all);
    S.all = NULL;
    S.all_len = S.vol_len = S.all_cap = 0;
    vol_when_sum = 0;
}

void store_flush(void)
{
    rota_keyed_drain(S.map, drop_value, NULL);
    index_reset();
}

/*
 * FLUSHALL ASYNC: the keyspace is handed to `lazy` whole and the store
 * goes on with a new empty map; loop turns then free the old one, values
 * and keys, a time-bounded slice each (store_expire()), removing each key
 * from the old map so that its table shrinks in steps, and destroy it once
 * it is empty.  Its memory counts as used until then, as Redis counts
 * lazily freed memory; meanwhile a write over the bound is let through
 * (store_evict()) rather than refused for memory that is on its way out.
 */
static struct {
    struct rota_keyed *map; /* NULL: nothing pending */
    struct value **all;     /* the old map's values: all[0, len) */
    size_t len, cap;
} lazy;

/* Free up to `n` of the pending values (SIZE_MAX: all); true when some
 * are left. */
static bool lazy_free(size_t n)
{
    if (lazy.map == NULL)
        return false;
    for (; n > 0 && lazy.len > 0; n--) {
        struct value *v = lazy.all[--lazy.len];
        rota_keyed_remove(lazy.map, v->data, v->key_len, NULL);
        value_free(v);
    }
    if (lazy.len > 0)
        return true;
    rota_keyed_destroy(lazy.map);
    free(lazy.all);
    lazy.map = NULL;
    return false;
}

void store_flush_async(void)
{
    struct rota_keyed *fresh;
    struct rota_keyed_config cfg = {.now = S.now_tick,
                                    .expire = on_expire,
                                    .allocator = &map_allocator,
                                    .borrow_keys = true};
    lazy_free(SIZE_MAX); /* one at a time (two in a row are rare) */
    if (rota_keyed_create(&fresh, &cfg) != 0) {
        store_flush();
        return;
    }
    lazy.map = S.map;
    lazy.all = S.all;
    lazy.len = S.all_len;
    lazy.cap = S.all_cap;
    S.all = NULL; /* handed over: index_reset() must not free it */
    S.map = fresh;
    index_reset();
}

void store_destroy(void)
{
    lazy_free(SIZE_MAX);
    store_flush();
    rota_keyed_destroy(S.map);
    unmap_some(SIZE_MAX);
}

void store_tick(void)
{
    S.now_tick = rota_clock_now(&S.clock);
    S.now_ms = unix_ms();
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Bounded, so that a million keys sharing a deadline are reclaimed over
 * many loop turns instead of stalling every client for one long call
 * (574 ms for 1e6 keys, measured).  The bound is time, checked every
 * EXPIRE_CHUNK expiries, because the cost of an expiry varies tenfold:
 * a few hundred nanoseconds mostly, several microseconds while the map
 * shrinks (each removal then clears slots of the new table, whose fresh
 * pages the kernel must fault in).  A count small enough for the dear
 * phase would make the cheap one crawl.
 */
#define EXPIRE_CHUNK 64

bool store_expire(uint64_t budget_ns)
{
    uint64_t start = mono_ns();
    bool more = unmap_some(UNMAP_SLICE); /* a freed table: 0.5 ms a slice */
    while (lazy_free(EXPIRE_CHUNK)) {
        more = true;
        if (mono_ns() - start >= budget_ns)
            return true;
    }
    for (;;) {
        size_t fired;
        if (rota_keyed_advance_max(S.map, S.now_tick, EXPIRE_CHUNK, &fired) !=
            1)
            return more;
        if (mono_ns() - start >= budget_ns)
            return true;
    }
}

struct value *store_lookup(const char *key, size_t len)
{
    void *p;
    if (rota_keyed_get(S.map, key, len, &p, NULL) != 1)
        return NULL;
    struct value *v = p;
    if (v->when != NO_EXPIRE && S.now_ms > v->when) {
        rota_keyed_remove(S.map, key, len, NULL);
        S.expired++;
        forget(v);
        return NULL;
    }
    if (pool_len > 0)
        pool_remove(v); /* its idle time changes */
    v->lru = (uint32_t)S.now_tick;
    return v;
}

static void set_volatile(struct value *v, long long when)
{
    pool_remove(v); /* its score changes */
    vol_remove(v);
    if (when != NO_EXPIRE) {
        vol_when_sum += when;
        S.vol_len++;
    }
    v->when = when;
}

/*
 * One map call: the set adds the key or hands back the value it replaces
 * (live or expired but not yet collected), and the new block takes over
 * the old one's places.  The map borrows the key from the new block, so
 * the old one can go at once.  KEEPTTL needs the old expiry first: that
 * case looks the key up before.
 */
struct value *store_set(const char *key, size_t klen, const void *val,
                        size_t vlen, long long when, bool keepttl)
{
    if (klen > UINT32_MAX || S.all_len >= NO_INDEX)
        return NULL;
    if (keepttl) {
        const struct value *old = store_lookup(key, klen);
        if (old != NULL)
            when = old->when;
    }
    /* A new key's place in the index, made before the map changes. */
    if (!array_reserve(&S.all, S.all_len, &S.all_cap))
        return NULL;
    struct value *v = malloc(sizeof *v + klen + vlen);
    if (v == NULL)
        return NULL;
    v->key_len = (uint32_t)klen;
    v->spare = 0;
    v->len = vlen;
    memcpy(v->data, key, klen);
    if (vlen > 0)
        memcpy(v->data + klen, val, vlen);
    v->lru = (uint32_t)S.now_tick;
    v->when = NO_EXPIRE;

    void *prev = NULL;
    int rc =
        rota_keyed_set_at(S.map, v->data, klen, v, deadline_of(when), &prev);
    if (rc < 0) {
        free(v);
        return NULL;
    }
    if (rc == 1) {
        struct value *old = prev;
        if (old->when != NO_EXPIRE && S.now_ms > old->when)
            S.expired++; /* its time had passed: reclaimed by this write */
        v->all_idx = old->all_idx;
        S.all[v->all_idx] = v;
        v->when = old->when; /* its expiry is counted: v takes it over */
        pool_remove(old);
        value_free(old);
    } else {
        v->all_idx = (uint32_t)S.all_len;
        S.all[S.all_len++] = v;
    }
    S.value_bytes += value_size(v);
    set_volatile(v, when);
    return v;
}

/*
 * APPEND's growth.  Copying the whole value at each append made a run of
 * appends quadratic (100 one-byte appends to a 32 MB value took 4.8 s);
 * the room left after the value makes it linear.  The room is the new
 * length again up to 1 MiB (as Redis's sdsMakeRoomFor() doubles), then an
 * eighth of it: still geometric, so the copies of a run of appends sum to
 * a constant times its final length (Redis adds a flat 1 MiB there, which
 * is linear per MiB), and at most 12.5% of a big value is unused.  The
 * room counts in used memory, as Redis's sds allocation does.
 */
struct value *store_append(struct value *v, const void *p, size_t n)
{
    if (n <= v->spare) {
        memcpy(v->data + v->key_len + v->len, p, n);
        v->len += n;
        v->spare -= (uint32_t)n;
        v->lru = (uint32_t)S.now_tick;
        return v;
    }
    size_t len = v->len + n;
    size_t room = len < ((size_t)1 << 20) ? len : len / 8;
    if (room > UINT32_MAX)
        room = UINT32_MAX;
    size_t old_size = value_size(v);
    /* A new block, not realloc(): the map reads the key from the old one
     * until it is told the new one, so the old block must outlive that
     * set.  (The growth is geometric, so the copies stay amortised O(1) a
     * byte.) */
    struct value *nv = malloc(sizeof *v + v->key_len + len + room);
    if (nv == NULL)
        return NULL;
    memcpy(nv, v, sizeof *v + v->key_len + v->len);
    memcpy(nv->data + nv->key_len + nv->len, p, n);
    nv->len = len;
    nv->spare = (uint32_t)room;
    nv->lru = (uint32_t)S.now_tick;
    /* Every pointer to it: the map (a set on an existing key cannot fail),
     * the index, the eviction pool. */
    rota_keyed_set_at(S.map, nv->data, nv->key_len, nv, deadline_of(nv->when),
                      NULL);
    S.all[nv->all_idx] = nv;
    pool_remove(v);
    free(v);
    S.value_bytes += value_size(nv) - old_size;
    return nv;
}

void store_set_expire(struct value *v, long long when)
{
    set_volatile(v, when);
    rota_keyed_move_at(S.map, v->data, v->key_len, deadline_of(when));
}

bool store_delete(const char *key, size_t len)
{
    void *p;
    if (store_lookup(key, len) == NULL)
        return false;
    rota_keyed_remove(S.map, key, len, &p);
    forget(p);
    return true;
}

size_t store_count(void)
{
    return rota_keyed_count(S.map);
}

size_t store_used_memory(void)
{
    struct rota_keyed_stats st;
    rota_keyed_stats(S.map, &st);
    size_t used = st.bytes + S.value_bytes + S.all_cap * sizeof(struct value *);
    if (lazy.map != NULL) {
        rota_keyed_stats(lazy.map, &st);
        used += st.bytes + lazy.cap * sizeof *lazy.all;
    }
    if (used > S.peak_memory)
        S.peak_memory = used;
    return used;
}

/* The share of a coming allocation of `bytes`, made when a count reaches
 * `at`, that is counted at `count`: none until the count is within a
 * sixth of `at`, then a share per key, all of it at `at`. */
static size_t ramp(size_t count, size_t at, size_t bytes)
{
    size_t window = at / 6 + 1;
    if (count >= at)
        return bytes;
    if (at - count >= window)
        return 0;
    return (size_t)((double)bytes * (double)(window - (at - count)) /
                    (double)window);
}

/* Used memory plus what the next growths of the map's table and of the
 * index array will add (see MEMORY AND EVICTION). */
static size_t counted_memory(void)
{
    size_t at, bytes;
    rota_keyed_next_growth(S.map, &at, &bytes);
    return store_used_memory() + ramp(rota_keyed_count(S.map), at, bytes) +
           ramp(S.all_len, S.all_cap + 1, S.all_cap * sizeof *S.all);
}

/*
 * The eviction pool, as Redis's: the best candidates seen by the last
 * rounds of sampling, best last.  Each round adds --maxmemory-samples
 * fresh samples and evicts the best of the pool, so a good candidate seen
 * once is not forgotten because the next five samples were worse.  A key
 * that leaves the store leaves the pool (forget()).
 */
static void pool_remove(const struct value *v)
{
    for (size_t i = 0; i < pool_len; i++)
        if (pool[i] == v) {
            memmove(&pool[i], &pool[i + 1], (pool_len - i - 1) * sizeof *pool);
            pool_len--;
            return;
        }
}

/* How good a victim v is: the higher, the sooner it goes. */
static uint64_t badness(const struct value *v)
{
    if (S.policy == POLICY_VOLATILE_TTL)
        return UINT64_MAX - (uint64_t)v->when;        /* nearest expiry */
    return (uint32_t)((uint32_t)S.now_tick - v->lru); /* longest idle */
}

static void pool_offer(struct value *v)
{
    uint64_t b = badness(v);
    size_t i = 0;
    for (size_t j = 0; j < pool_len; j++)
        if (pool[j] == v)
            return;
    while (i < pool_len && badness(pool[i]) < b)
        i++;
    if (pool_len == POOL_SIZE) {
        if (i == 0)
            return; /* worse than everything in a full pool */
        memmove(&pool[0], &pool[1], (i - 1) * sizeof *pool); /* drop worst */
        pool[i - 1] = v;
        return;
    }
    memmove(&pool[i + 1], &pool[i], (pool_len - i) * sizeof *pool);
    pool[i] = v;
    pool_len++;
}

/* Draws from the index of all keys before sample_volatile() walks it. */
#define VOLATILE_DRAWS 64

/*
 * A random key with a TTL.  There is no index of them (it cost 8 bytes a
 * key): draws from the index of all keys are kept only when the key has a
 * TTL, which picks uniformly among those keys, and when VOLATILE_DRAWS
 * draws find none (such keys are rare) a walk from a random place takes
 * the first one, O(keys) at worst.  NULL when no key has a TTL.
 */
static struct value *sample_volatile(void)
{
    if (S.vol_len == 0 || S.all_len == 0)
        return NULL;
    for (unsigned i = 0; i < VOLATILE_DRAWS; i++) {
        struct value *v = S.all[rng_next() % S.all_len];
        if (v->when != NO_EXPIRE)
            return v;
    }
    size_t start = (size_t)(rng_next() % S.all_len);
    for (size_t i = 0; i < S.all_len; i++) {
        struct value *v = S.all[(start + i) % S.all_len];
        if (v->when != NO_EXPIRE)
            return v;
    }
    return NULL;
}

/* One sample for the policy: any key, or one with a TTL. */
static struct value *sample(bool volatile_only)
{
    if (volatile_only)
        return sample_volatile();
    return S.all_len == 0 ? NULL : S.all[rng_next() % S.all_len];
}

/* The victim for the policy, or NULL when there is none. */
static struct value *pick_victim(void)
{
    bool volatile_only = S.policy == POLICY_VOLATILE_LRU ||
                         S.policy == POLICY_VOLATILE_RANDOM ||
                         S.policy == POLICY_VOLATILE_TTL;
    if (S.policy == POLICY_NOEVICTION)
        return NULL;
    struct value *v = sample(volatile_only);
    if (v == NULL)
        return NULL;
    if (S.policy == POLICY_ALLKEYS_RANDOM || S.policy == POLICY_VOLATILE_RANDOM)
        return v;
    pool_offer(v);
    for (unsigned i = 1; i < S.maxmemory_samples; i++)
        if ((v = sample(volatile_only)) != NULL)
            pool_offer(v);
    return pool[pool_len - 1];
}

bool store_evict(void)
{
    while (counted_memory() > S.maxmemory) {
        struct value *v = pick_victim();
        if (v == NULL)
            return lazy.map != NULL; /* being freed (FLUSHALL ASYNC) */
        rota_keyed_remove(S.map, v->data, v->key_len, NULL);
        S.evicted++;
        forget(v);
    }
    return true;
}

unsigned long long store_scan(unsigned long long cursor, long count,
                              void (*fn)(struct value *v, void *arg), void *arg)
{
    size_t pos = cursor == 0 || cursor > S.all_len ? S.all_len : cursor;
    /* Drop what has expired by the unix clock before returning it. */
    for (long n = 0; n < count && pos > 0; n++) {
        struct value *v = S.all[--pos];
        if (v->when != NO_EXPIRE && S.now_ms > v->when) {
            /* forget() moves the last key here; it was visited already */
            rota_keyed_remove(S.map, v->data, v->key_len, NULL);
            S.expired++;
            forget(v);
            continue;
        }
        fn(v, arg);
    }
    return pos;
}

long long store_avg_ttl(void)
{
    if (S.vol_len == 0) {
        vol_when_sum = 0; /* no rounding carried over */
        return 0;
    }
    long double avg = vol_when_sum / S.vol_len - S.now_ms;
    return avg > 0 ? (long long)avg : 0;
}
