/*
 * keyed.c - timers by key: a seeded hash map whose entries embed wheel
 * timers.
 *
 * THE WORKLOAD
 *   A TTL cache: up to millions of keys, most of them set or refreshed again
 *   long before they expire (go-zero's cache moves a key's timer on every
 *   write), some removed, a few expiring.  Keys come from clients, so the
 *   table must not degrade when a client picks them.  Every operation is a
 *   hash lookup plus one timer operation, and at a million keys each random
 *   memory touch is a cache miss (~20 ns when the CPU can overlap it,
 *   ~160 ns when it depends on the previous one), so the design counts
 *   touches.
 *
 * THE STRUCTURE
 *   One allocation per entry holds the struct rota_timer, the chain link,
 *   the value, a 32-bit hash, the key length and the key bytes: a lookup
 *   reads the bucket (one miss) and the entry (a dependent miss), and the
 *   timer it then moves is already in cache.  Buckets are singly linked
 *   chains (the table grows at load 1, so a successful lookup compares 1.5
 *   entries on average); the stored hash lets most mismatches and every
 *   rehash skip the key bytes.
 *
 *   The wheel is embedded in the map, so a firing timer finds its map with
 *   container_of on the wheel pointer the core passes, and its entry with
 *   container_of on the timer: no back pointer in any entry.
 *
 *   Moving a deadline later is rota_timer_touch(): a store into the entry
 *   already in cache, the timer re-filed only if its old slot comes due
 *   first.  An earlier deadline re-files it (two neighbours unlinked, one
 *   slot tail appended).  This is where the layer beats a rounds wheel:
 *   there, every tick walks the whole slot under the hand, a chain of
 *   dependent misses over 1/512 of all keys whatever their deadlines.
 *
 *   Resizing is incremental (as Redis's dict): a second bucket array is
 *   allocated (not zeroed: each new bucket is cleared when the first old
 *   bucket that feeds it moves) and every insert or removal moves up to two
 *   non-empty old buckets (passing over at most 64 empty ones), until the
 *   old array is empty.  That finishes a growth before the count doubles
 *   again and a shrink before the next shrink is due.  A key lives
 *   in the old array if its old bucket index is at or after the move
 *   cursor, else in the new one, so a lookup reads exactly one bucket.
 *
 * INSTRUCTIONS COUNT TOO
 *   Counting misses is not enough: the CPU overlaps this operation's entry
 *   miss with the next operation's bucket miss only when the instructions
 *   between them fit its reorder window (a few hundred), and a 1e5-key table
 *   sits in the L3, where the path length is the cost.  So a set or move
 *   is one call: hash, bucket and chain walk are inlined into it, no public
 *   function calls another (they are interposable symbols in the shared
 *   library, so the compiler may not inline them), the fast hash's secrets
 *   are derived once at create, and a deadline costs one wheel call
 *   (touch; arm only when touch says the timer was idle).  Measured on W6
 *   (shared/BENCH.md) with callgrind at 1e5 keys: 396 instructions an
 *   operation before this was done, 273 after (the benchmark's own loop is
 *   66 of them; the hashed-rounds baseline takes 133 in all), for about the
 *   same number of cache misses as the baseline.  What remains is mostly
 *   the wheel's touch (about 50) and the exactness it buys.  At 1e5 keys
 *   the rest of the gap is footprint: 10.6 MB of entries and buckets
 *   against the baseline's 7.4 MB, about the L3 share a loaded machine
 *   gives (callgrind with an 8 MB last level: 0.42 misses an operation
 *   against none), so the ratio there swings with the neighbours.  The
 *   lever is a smaller entry: 88 bytes take a 96-byte malloc chunk, 72
 *   would take 80 (the 8-byte key stored once, in `head`, and its length
 *   and hash folded away).
 *
 * THE GUARANTEES AND WHY THEY HOLD
 *   - One live entry per key: the table holds at most one entry per key and
 *     an entry's timer is pending only while the entry is in the table;
 *     set on an existing key updates it in place.
 *   - Removed before the callback: the trampoline unlinks the entry from its
 *     chain, then calls the user, then frees it; the wheel has already
 *     forgotten the timer (one-shot), so the callback may set the same key.
 *   - Out of memory changes nothing: the only allocations that can fail a
 *     call are the new entry and the first bucket array, both made before
 *     anything is linked; a failed growth leaves the old table in use.
 *   - Never early, exact, no idle cost: the wheel's (rota.h).
 *
 * HASHING
 *   A fast multiply-fold hash under the map's 128-bit seed (keyed_hash.h;
 *   its secrets premixed once, in `fk`), and SipHash-1-3 from the first
 *   chain longer than FLOOD_CHAIN on.
 *   Measured at a million 8-byte keys, SipHash made a lookup 15-20% slower:
 *   its serial rounds delay the bucket address the next miss needs.  Random
 *   keys never make such a chain (chains average the load, at most 1), so
 *   honest users keep the fast hash, and a client who found collisions in
 *   it buys one O(n) in-place rehash, after which the seeded PRF holds.
 *   No separate integer-key path: an 8-byte key already hashes in a few
 *   instructions and is compared as one word (`head`).
 *
 * ALTERNATIVES REJECTED
 *   - The caller passes a wheel: every entry would need a pointer back to
 *     its map (8 bytes each) for the expire trampoline.  Exposing the map's
 *     own wheel gives event loops the same single wheel.
 *   - Open addressing with {tag, pointer} slots: the same two dependent
 *     misses per lookup, more bytes per entry at a safe load, and deletion
 *     needs tombstones or back-shifting.
 *   - Doubly linked chains: O(1) unlink on expiry for 8 more bytes per
 *     entry; the singly linked walk from the bucket is short and the bucket
 *     is hashed from the stored hash, not the key.
 *   - Rehashing all at once: a 1e7-key map would stall for ~100 ms in one
 *     set; a zeroed new array would stall for its memset.
 *   - Entries stored in the table itself (open addressing): one dependent
 *     miss per lookup instead of two, and a prototype ran W6 at 1e6 keys
 *     in about 0.36 of the rounds baseline's time (this design: about
 *     0.6).  But entries then move (on growth, and on deletion by back
 *     shifting), and the wheel links timers by address.  Moving a pending
 *     timer through the wheel's API (cancel, arm at the new address) puts
 *     it behind later-set equal deadlines, and inside an advance defers a
 *     due entry to the next advance; both break documented guarantees.
 *     It needs a wheel primitive that moves a pending timer to a new
 *     address in place (splice the node, keep its slot and order), O(1),
 *     plus the variable-length key kept outside the table.
 */
#define _DEFAULT_SOURCE /* getrandom() */
#include "rota/keyed.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "keyed_hash.h"

/* The smallest bucket array; a power of two. */
#define MIN_BUCKETS 8u
/* The largest: hashes are stored in 32 bits. */
#define MAX_BUCKETS ((size_t)1 << 31)
/* Non-empty old buckets moved per insert and per removal while resizing,
 * and the empty ones that may be passed over for each. */
#define MOVES_PER_INSERT 2u
#define MOVES_PER_REMOVE 2u
#define EMPTY_VISITS 64u

/* What a lookup reads comes first (24 bytes, usually one cache line): a
 * short key is compared without touching the rest. */
struct entry {
    struct entry *next; /* the bucket's chain */
    uint32_t hash;
    uint32_t key_len;
    uint64_t head; /* the key's first 8 bytes, zero-padded */
    void *value;
    struct rota_timer timer; /* pending iff the entry has a deadline */
    unsigned char key[];     /* all key_len bytes, for the callbacks */
};

struct table {
    struct entry **bucket;
    size_t size; /* a power of two, or 0 before the first insert */
};

struct rota_keyed {
    struct rota_wheel wheel; /* the entries' timers; see the essay */
    struct table table[2];   /* [1] exists only while resizing */
    size_t cursor;           /* next old bucket to move while resizing */
    bool resizing;
    bool draining;
    bool advancing;     /* inside rota_keyed_advance(): callbacks may run */
    unsigned in_expire; /* depth of expire callbacks running */
    size_t count;
    size_t expiring;
    uint64_t k0, k1;
    struct rota__fastkey fk; /* the fast hash's secrets, from (k0, k1) */
    bool sip; /* switched to SipHash after a suspiciously long chain */
    struct rota_keyed_allocator alloc;
    rota_keyed_expire_fn *expire;
    void *arg;
    size_t bytes;
    size_t held; /* bytes of the entry out of the table in expire() */
    size_t longest_chain;
    uint64_t expired;
    uint64_t resizes;
};

/* ------------------------------------------------------------- memory */

static void *default_alloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}

static void default_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    (void)size;
    free(ptr);
}

static void *mem_alloc(struct rota_keyed *m, size_t size)
{
    void *p = m->alloc.alloc(m->alloc.ctx, size);
    if (p != NULL)
        m->bytes += size;
    return p;
}

static void mem_free(struct rota_keyed *m, void *p, size_t size)
{
    m->bytes -= size;
    m->alloc.free(m->alloc.ctx, p, size);
}

static size_t entry_size(uint32_t key_len)
{
    return offsetof(struct entry, key) + key_len;
}

static void free_entry(struct rota_keyed *m, struct entry *e)
{
    mem_free(m, e, entry_size(e->key_len));
}

/* -------------------------------------------------------------- table */

static __attribute__((noinline)) uint32_t
sip_key(const struct rota_keyed *m, const void *key, size_t len)
{
    return (uint32_t)rota__siphash(1, 3, m->k0, m->k1, key, len);
}

/* Inlined into every lookup: a call here costs more than the hash. */
static inline __attribute__((always_inline)) uint32_t
hash_key(const struct rota_keyed *m, const void *key, size_t len)
{
    if (__builtin_expect(m->sip, 0))
        return sip_key(m, key, len);
    return (uint32_t)rota__fasthash_k(&m->fk, key, len);
}

static inline uint64_t head_of(const void *key, uint32_t len)
{
    uint64_t head = 0;
    if (len >= 8)
        memcpy(&head, key, 8); /* one load */
    else if (len != 0)
        memcpy(&head, key, len);
    return head;
}

/* The bucket that holds (or would hold) a key with hash h; the table must
 * have buckets.  See the essay for the rule during a resize. */
static inline struct entry **bucket_for(const struct rota_keyed *m,
                                        uint32_t h)
{
    size_t old = h & (m->table[0].size - 1);
    if (m->resizing && old < m->cursor)
        return &m->table[1].bucket[h & (m->table[1].size - 1)];
    return &m->table[0].bucket[old];
}

static inline bool key_equal(const struct entry *e, uint32_t h,
                             uint64_t head, const void *key, uint32_t len)
{
    return e->head == head && e->hash == h && e->key_len == len &&
           (len <= 8 ||
            memcmp(e->key + 8, (const unsigned char *)key + 8, len - 8) == 0);
}

/* The link that points at the key's entry, or NULL.  *walked receives the
 * number of entries compared. */
static inline struct entry **find(const struct rota_keyed *m, uint32_t h,
                                  const void *key, uint32_t len,
                                  size_t *walked)
{
    size_t n = 0;
    uint64_t head = head_of(key, len);

    *walked = 0;
    if (m->table[0].size == 0)
        return NULL;
    for (struct entry **link = bucket_for(m, h); *link != NULL;
         link = &(*link)->next) {
        n++;
        if (key_equal(*link, h, head, key, len)) {
            *walked = n;
            return link;
        }
    }
    *walked = n;
    return NULL;
}

static void rehash_with_siphash(struct rota_keyed *m);

/* Track the longest chain; one this long under the fast hash means keys
 * were chosen to collide (random keys at load 1 give chains of 10 or so
 * at a billion keys). */
#define FLOOD_CHAIN 32u

/* find() for the calls that may change the map: track the longest chain
 * and switch hashes when it says keys were chosen to collide. */
static inline struct entry **find_noting(struct rota_keyed *m,
                                         const void *key, uint32_t len,
                                         uint32_t *h)
{
    size_t walked;

    *h = hash_key(m, key, len);
    struct entry **link = find(m, *h, key, len, &walked);
    if (walked > m->longest_chain) { /* rare: a new record */
        m->longest_chain = walked;
        if (walked > FLOOD_CHAIN && !m->sip) {
            rehash_with_siphash(m);
            *h = hash_key(m, key, len);
            link = find(m, *h, key, len, &walked);
        }
    }
    return link;
}

/* Take an entry that is in the table out of its chain. */
static void unlink_entry(struct rota_keyed *m, struct entry *e)
{
    struct entry **link = bucket_for(m, e->hash);
    while (*link != e)
        link = &(*link)->next;
    *link = e->next;
    m->count--;
}

/* Move old bucket i into the new array, clearing the new buckets it is the
 * first to feed. */
static void move_bucket(struct rota_keyed *m, size_t i)
{
    struct table *from = &m->table[0], *to = &m->table[1];

    if (to->size > from->size) {
        for (size_t j = i; j < to->size; j += from->size)
            to->bucket[j] = NULL;
    } else if (i < to->size) {
        to->bucket[i] = NULL;
    }
    struct entry *e = from->bucket[i];
    from->bucket[i] = NULL;
    while (e != NULL) {
        struct entry *next = e->next;
        struct entry **head = &to->bucket[e->hash & (to->size - 1)];
        e->next = *head;
        *head = e;
        e = next;
    }
}

static void finish_resize(struct rota_keyed *m)
{
    mem_free(m, m->table[0].bucket,
             m->table[0].size * sizeof *m->table[0].bucket);
    m->table[0] = m->table[1];
    m->table[1] = (struct table){NULL, 0};
    m->resizing = false;
}

/* Move up to `moves` non-empty old buckets (all of them for SIZE_MAX). */
static void resize_step(struct rota_keyed *m, size_t moves)
{
    if (!m->resizing)
        return;
    size_t visits = moves == SIZE_MAX ? SIZE_MAX : moves * EMPTY_VISITS;
    size_t size = m->table[0].size;
    while (moves > 0 && visits > 0 && m->cursor < size) {
        if (m->table[0].bucket[m->cursor] != NULL)
            moves--;
        visits--;
        move_bucket(m, m->cursor++);
    }
    if (m->cursor == size)
        finish_resize(m);
}

/* Start growing at load 1 or shrinking below 1/8 when the allocator
 * allows; otherwise go on with the current array. */
static void maybe_resize(struct rota_keyed *m)
{
    size_t size = m->table[0].size, want;

    if (m->resizing || size == 0)
        return;
    if (m->count > size) {
        if (size >= MAX_BUCKETS)
            return;
        want = size * 2;
    } else if (size > MIN_BUCKETS && m->count < size / 8) {
        want = MIN_BUCKETS;
        while (want < m->count * 2)
            want *= 2;
    } else {
        return;
    }
    struct entry **bucket = mem_alloc(m, want * sizeof *bucket);
    if (bucket == NULL)
        return;
    m->table[1] = (struct table){bucket, want};
    m->cursor = 0;
    m->resizing = true;
    m->resizes++;
}

/* Switch to SipHash for good and rebuild the chains in place: O(n) once,
 * no allocation, so it cannot fail. */
static void rehash_with_siphash(struct rota_keyed *m)
{
    struct entry *all = NULL;

    resize_step(m, SIZE_MAX);
    struct table *t = &m->table[0];
    for (size_t i = 0; i < t->size; i++) {
        struct entry *e = t->bucket[i];
        while (e != NULL) {
            struct entry *next = e->next;
            e->next = all;
            all = e;
            e = next;
        }
        t->bucket[i] = NULL;
    }
    m->sip = true;
    while (all != NULL) {
        struct entry *e = all;
        all = e->next;
        e->hash = hash_key(m, e->key, e->key_len);
        struct entry **head = &t->bucket[e->hash & (t->size - 1)];
        e->next = *head;
        *head = e;
    }
}

/* ---------------------------------------------------------- deadlines */

/* Saturating now + ttl; ROTA_NEVER stays "no deadline". */
static uint64_t deadline_in(const struct rota_keyed *m, uint64_t ttl)
{
    if (ttl == ROTA_NEVER)
        return ROTA_NEVER;
    uint64_t now = rota_wheel_now(&m->wheel);
    return ttl > ROTA_MAX_DEADLINE - now ? ROTA_MAX_DEADLINE : now + ttl;
}

/* Give an entry in the table its new deadline.  The calls cannot fail: the
 * wheel and the timer are the map's own and initialised. */
static inline void apply_deadline(struct rota_keyed *m, struct entry *e,
                                  uint64_t deadline)
{
    if (deadline == ROTA_NEVER) {
        if (rota_timer_cancel(&m->wheel, &e->timer) == 1)
            m->expiring--;
    } else if (rota_timer_touch(&m->wheel, &e->timer, deadline) ==
               ROTA_ENOENT) {
        /* Touch moves only a pending timer (later: a store; earlier: the
         * wheel re-files it); this one had no deadline. */
        (void)rota_timer_arm(&m->wheel, &e->timer, deadline);
        m->expiring++;
    }
}

/* The wheel calls this for a due entry: out of the map, then the user. */
static void on_expire(struct rota_wheel *wheel, struct rota_timer *timer,
                      uint64_t late)
{
    struct rota_keyed *m = rota_container_of(wheel, struct rota_keyed, wheel);
    struct entry *e = rota_container_of(timer, struct entry, timer);

    (void)late;
    unlink_entry(m, e);
    m->expiring--;
    m->expired++;
    if (m->expire != NULL) {
        m->in_expire++;
        m->held += entry_size(e->key_len);
        m->expire(m, e->key, e->key_len, e->value, m->arg);
        m->held -= entry_size(e->key_len);
        m->in_expire--;
    }
    free_entry(m, e);
    maybe_resize(m);
    resize_step(m, MOVES_PER_REMOVE);
}

/* ------------------------------------------------------------ public */

int rota_keyed_create(struct rota_keyed **out,
                      const struct rota_keyed_config *config)
{
    static const struct rota_keyed_allocator libc = {default_alloc,
                                                     default_free, NULL};
    const struct rota_keyed_config defaults = {0};
    unsigned char seed[ROTA_KEYED_SEED_SIZE];

    if (out == NULL)
        return ROTA_EINVAL;
    if (config == NULL)
        config = &defaults;
    const struct rota_keyed_allocator *alloc =
        config->allocator != NULL ? config->allocator : &libc;
    if (alloc->alloc == NULL || alloc->free == NULL)
        return ROTA_EINVAL;
    if (config->seed != NULL) {
        memcpy(seed, config->seed, sizeof seed);
    } else {
        size_t got = 0;
        while (got < sizeof seed) {
            ssize_t n = getrandom(seed + got, sizeof seed - got, 0);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                return ROTA_ESYS;
            got += (size_t)n;
        }
    }

    struct rota_keyed *m = alloc->alloc(alloc->ctx, sizeof *m);
    if (m == NULL)
        return ROTA_ENOMEM;
    memset(m, 0, sizeof *m);
    (void)rota_wheel_init(&m->wheel, config->now);
    m->alloc = *alloc;
    m->expire = config->expire;
    m->arg = config->arg;
    m->bytes = sizeof *m;
    m->k0 = rota__sip_load64(seed);
    m->k1 = rota__sip_load64(seed + 8);
    m->fk = rota__fastkey_of(m->k0, m->k1);
    *out = m;
    return 0;
}

/* Free every entry and bucket array, calling nothing. */
static void free_all(struct rota_keyed *m)
{
    resize_step(m, SIZE_MAX);
    struct table *t = &m->table[0];
    for (size_t i = 0; i < t->size; i++) {
        struct entry *e = t->bucket[i];
        while (e != NULL) {
            struct entry *next = e->next;
            free_entry(m, e);
            e = next;
        }
    }
    if (t->size != 0)
        mem_free(m, t->bucket, t->size * sizeof *t->bucket);
    *t = (struct table){NULL, 0};
    m->count = 0;
    m->expiring = 0;
}

int rota_keyed_destroy(struct rota_keyed *m)
{
    if (m == NULL)
        return 0;
    if (m->in_expire != 0 || m->draining || m->advancing)
        return ROTA_EBUSY;
    /* The entries' timers die with the wheel: no need to cancel them. */
    free_all(m);
    struct rota_keyed_allocator alloc = m->alloc;
    alloc.free(alloc.ctx, m, sizeof *m);
    return 0;
}

static int check_key(const struct rota_keyed *m, const void *key, size_t len)
{
    if (m == NULL || (key == NULL && len != 0) || len > UINT32_MAX ||
        len > SIZE_MAX - offsetof(struct entry, key))
        return ROTA_EINVAL;
    return 0;
}

/* Add a key known to be absent. */
static int insert(struct rota_keyed *m, uint32_t h, const void *key,
                  uint32_t len, void *value, uint64_t deadline)
{
    struct entry *e = mem_alloc(m, entry_size(len));
    if (e == NULL)
        return ROTA_ENOMEM;
    if (m->table[0].size == 0) {
        struct entry **bucket = mem_alloc(m, MIN_BUCKETS * sizeof *bucket);
        if (bucket == NULL) {
            mem_free(m, e, entry_size(len));
            return ROTA_ENOMEM;
        }
        memset(bucket, 0, MIN_BUCKETS * sizeof *bucket);
        m->table[0] = (struct table){bucket, MIN_BUCKETS};
    }
    rota_timer_init(&e->timer, on_expire);
    e->value = value;
    e->hash = h;
    e->key_len = len;
    e->head = head_of(key, len);
    if (len != 0)
        memcpy(e->key, key, len);
    struct entry **head = bucket_for(m, h);
    e->next = *head;
    *head = e;
    m->count++;
    if (deadline != ROTA_NEVER) {
        (void)rota_timer_arm(&m->wheel, &e->timer, deadline);
        m->expiring++;
    }
    maybe_resize(m);
    resize_step(m, MOVES_PER_INSERT);
    return 0;
}

/* The public functions are interposable symbols in the shared library, so
 * they call these instead of one another: one call per operation. */
static inline int set_at(struct rota_keyed *m, const void *key,
                         size_t key_len, void *value, uint64_t deadline,
                         void **old_value)
{
    int rc = check_key(m, key, key_len);
    if (rc != 0)
        return rc;
    uint32_t len = (uint32_t)key_len, h;
    struct entry **link = find_noting(m, key, len, &h);
    if (link != NULL) {
        struct entry *e = *link;
        if (old_value != NULL)
            *old_value = e->value;
        e->value = value;
        apply_deadline(m, e, deadline);
        return 1;
    }
    return insert(m, h, key, len, value, deadline);
}

int rota_keyed_set_at(struct rota_keyed *m, const void *key, size_t key_len,
                      void *value, uint64_t deadline, void **old_value)
{
    return set_at(m, key, key_len, value, deadline, old_value);
}

int rota_keyed_set(struct rota_keyed *m, const void *key, size_t key_len,
                   void *value, uint64_t ttl, void **old_value)
{
    if (m == NULL)
        return ROTA_EINVAL;
    return set_at(m, key, key_len, value, deadline_in(m, ttl), old_value);
}

static inline int move_at(struct rota_keyed *m, const void *key,
                          size_t key_len, uint64_t deadline)
{
    int rc = check_key(m, key, key_len);
    if (rc != 0)
        return rc;
    uint32_t h;
    struct entry **link = find_noting(m, key, (uint32_t)key_len, &h);
    if (link == NULL)
        return ROTA_ENOENT;
    apply_deadline(m, *link, deadline);
    return 0;
}

int rota_keyed_move_at(struct rota_keyed *m, const void *key, size_t key_len,
                       uint64_t deadline)
{
    return move_at(m, key, key_len, deadline);
}

int rota_keyed_move(struct rota_keyed *m, const void *key, size_t key_len,
                    uint64_t ttl)
{
    if (m == NULL)
        return ROTA_EINVAL;
    return move_at(m, key, key_len, deadline_in(m, ttl));
}

int rota_keyed_remove(struct rota_keyed *m, const void *key, size_t key_len,
                      void **value)
{
    int rc = check_key(m, key, key_len);
    if (rc != 0)
        return rc;
    uint32_t h;
    struct entry **link = find_noting(m, key, (uint32_t)key_len, &h);
    if (link == NULL)
        return 0;
    struct entry *e = *link;
    *link = e->next;
    m->count--;
    if (rota_timer_cancel(&m->wheel, &e->timer) == 1)
        m->expiring--;
    if (value != NULL)
        *value = e->value;
    free_entry(m, e);
    maybe_resize(m);
    resize_step(m, MOVES_PER_REMOVE);
    return 1;
}

int rota_keyed_get(const struct rota_keyed *m, const void *key, size_t key_len,
                   void **value, uint64_t *deadline)
{
    int rc = check_key(m, key, key_len);
    if (rc != 0)
        return rc;
    size_t walked;
    struct entry **link =
        find(m, hash_key(m, key, key_len), key, (uint32_t)key_len, &walked);
    if (link == NULL)
        return 0;
    const struct entry *e = *link;
    if (value != NULL)
        *value = e->value;
    if (deadline != NULL)
        *deadline = rota_timer_pending(&e->timer)
                        ? rota_timer_deadline(&e->timer)
                        : ROTA_NEVER;
    return 1;
}

bool rota_keyed_contains(const struct rota_keyed *m, const void *key,
                         size_t key_len)
{
    return rota_keyed_get(m, key, key_len, NULL, NULL) == 1;
}

size_t rota_keyed_count(const struct rota_keyed *m)
{
    return m == NULL ? 0 : m->count;
}

int rota_keyed_advance_max(struct rota_keyed *m, uint64_t now, size_t max_fires,
                           size_t *fired)
{
    if (m == NULL)
        return ROTA_EINVAL;
    if (m->draining)
        return ROTA_EBUSY;
    bool outer = !m->advancing;
    m->advancing = true;
    int rc = rota_wheel_advance_max(&m->wheel, now, max_fires, fired);
    if (outer)
        m->advancing = false;
    return rc;
}

int rota_keyed_advance(struct rota_keyed *m, uint64_t now)
{
    if (m == NULL)
        return ROTA_EINVAL;
    if (m->draining)
        return ROTA_EBUSY;
    bool outer = !m->advancing;
    m->advancing = true;
    int rc = rota_wheel_advance(&m->wheel, now);
    if (outer) /* a nested call got ROTA_EBUSY from the wheel */
        m->advancing = false;
    return rc;
}

uint64_t rota_keyed_now(const struct rota_keyed *m)
{
    return m == NULL ? 0 : rota_wheel_now(&m->wheel);
}

struct rota_wheel *rota_keyed_wheel(struct rota_keyed *m)
{
    return m == NULL ? NULL : &m->wheel;
}

int rota_keyed_drain(struct rota_keyed *m, rota_keyed_drain_fn *fn, void *arg)
{
    if (m == NULL || fn == NULL)
        return ROTA_EINVAL;
    if (m->draining)
        return ROTA_EBUSY;
    /* Detach everything first: fn sees an empty map and may use it. */
    resize_step(m, SIZE_MAX);
    struct table t = m->table[0];
    m->table[0] = (struct table){NULL, 0};
    m->count = 0;
    m->expiring = 0;
    m->draining = true;
    for (size_t i = 0; i < t.size; i++) {
        struct entry *e = t.bucket[i];
        while (e != NULL) {
            struct entry *next = e->next;
            (void)rota_timer_cancel(&m->wheel, &e->timer);
            fn(m, e->key, e->key_len, e->value, arg);
            free_entry(m, e);
            e = next;
        }
    }
    m->draining = false;
    if (t.size != 0)
        mem_free(m, t.bucket, t.size * sizeof *t.bucket);
    return 0;
}

void rota_keyed_stats(const struct rota_keyed *m, struct rota_keyed_stats *out)
{
    if (m == NULL || out == NULL)
        return;
    *out = (struct rota_keyed_stats){
        .count = m->count,
        .expiring = m->expiring,
        .buckets = m->resizing && m->table[1].size > m->table[0].size
                       ? m->table[1].size
                       : m->table[0].size,
        .bytes = m->bytes,
        .longest_chain = m->longest_chain,
        .sip_hash = m->sip,
        .expired = m->expired,
        .resizes = m->resizes,
    };
}

/* --------------------------------------------------------- invariants */

#define FAIL(text)                                                             \
    do {                                                                       \
        if (why != NULL)                                                       \
            *why = (text);                                                     \
        return ROTA_ECORRUPT;                                                  \
    } while (0)

/* Whether bucket j of the new array has been cleared (see move_bucket). */
static bool new_bucket_live(const struct rota_keyed *m, size_t j)
{
    size_t old_size = m->table[0].size, new_size = m->table[1].size;
    if (new_size > old_size)
        return (j & (old_size - 1)) < m->cursor;
    return j < m->cursor && j < new_size;
}

struct census {
    size_t entries, expiring, bytes;
};

static int check_chain(const struct rota_keyed *m, struct entry *const *head,
                       struct census *c, const char **why)
{
    for (const struct entry *e = *head; e != NULL; e = e->next) {
        if (++c->entries > m->count)
            FAIL("more entries in the chains than counted (a cycle?)");
        if (hash_key(m, e->key, e->key_len) != e->hash)
            FAIL("stored hash does not match the key");
        if (bucket_for(m, e->hash) != head)
            FAIL("entry is not in the bucket its hash implies");
        for (const struct entry *o = e->next; o != NULL; o = o->next)
            if (key_equal(o, e->hash, e->head, e->key, e->key_len))
                FAIL("a key appears twice");
        if (rota_timer_pending(&e->timer))
            c->expiring++;
        c->bytes += entry_size(e->key_len);
    }
    return 0;
}

int rota_keyed_check(const struct rota_keyed *m, const char **why)
{
    const char *wheel_why = NULL;

    if (m == NULL)
        FAIL("NULL map");
    struct census c = {0, 0, sizeof *m + m->held};
    for (int k = 0; k < 2; k++) {
        size_t size = m->table[k].size;
        if ((size & (size - 1)) != 0)
            FAIL("bucket array size is not a power of two");
        if (size != 0 && k == 1 && !m->resizing)
            FAIL("second bucket array outside a resize");
        if (size != 0)
            c.bytes += size * sizeof *m->table[k].bucket;
    }
    if (m->table[0].size == 0 && (m->count != 0 || m->resizing))
        FAIL("entries or a resize without buckets");
    if (m->resizing && (m->table[1].size == 0 || m->cursor >= m->table[0].size))
        FAIL("resize state is inconsistent");
    for (size_t i = 0; i < m->table[0].size; i++) {
        if (m->resizing && i < m->cursor) {
            if (m->table[0].bucket[i] != NULL)
                FAIL("a moved old bucket is not empty");
            continue;
        }
        if (check_chain(m, &m->table[0].bucket[i], &c, why) != 0)
            return ROTA_ECORRUPT;
    }
    for (size_t j = 0; m->resizing && j < m->table[1].size; j++)
        if (new_bucket_live(m, j) &&
            check_chain(m, &m->table[1].bucket[j], &c, why) != 0)
            return ROTA_ECORRUPT;
    if (c.entries != m->count)
        FAIL("entry count disagrees with the chains");
    if (c.expiring != m->expiring)
        FAIL("expiring count disagrees with the pending timers");
    /* A drain holds the detached entries and array where this cannot see
     * them: skip the memory comparison inside a drain function. */
    if (c.bytes != m->bytes && !m->draining)
        FAIL("memory accounting disagrees with the blocks held");
    if (rota_wheel_count(&m->wheel) < m->expiring)
        FAIL("the wheel holds fewer timers than entries with a deadline");
    if (rota_wheel_check(&m->wheel, &wheel_why) != 0)
        FAIL(wheel_why != NULL ? wheel_why : "wheel check failed");
    if (why != NULL)
        *why = NULL;
    return 0;
}
