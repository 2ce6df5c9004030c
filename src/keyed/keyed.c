/* SPDX-License-Identifier: MIT */
/*
 * keyed.c - timers by key: a seeded open-addressing hash table whose slots
 * hold the entries, wheel timers included.
 *
 * THE WORKLOAD
 *   A TTL cache: up to millions of keys, most of them set or refreshed again
 *   long before they expire (go-zero's cache moves a key's timer on every
 *   write), some removed, a few expiring.  Keys come from clients, so the
 *   table must not degrade when a client picks them.  Every operation is a
 *   hash lookup plus one timer operation, and at a million keys each random
 *   memory touch is a cache miss (~20 ns when the CPU can overlap it,
 *   ~160 ns when it depends on the previous one), so the design counts
 *   dependent touches.
 *
 * THE STRUCTURE
 *   One array of 56-byte slots, linear probing, any length from 8 up.  A
 *   slot holds the whole entry: a 32-bit hash (its top bit always set, so
 *   0 marks an empty slot and 1 a TOMB, below), the key length, the key
 *   (up to 8 bytes in the slot, zero-padded and compared as one word;
 *   longer keys in a block of their own, the slot keeping the pointer),
 *   the value and the struct rota_timer.  A lookup of a short key reads
 *   its home slot: one dependent miss, where a chained table reads a
 *   bucket and then the entry it points to.  The compared fields and the
 *   timer's hot 16 bytes sit within the slot's first 40 bytes, so the set
 *   or move that follows usually stays in the lines the lookup brought in;
 *   a probe past the home slot reads the next slot, which the hardware
 *   prefetches.  A long key costs a second miss, only when the stored
 *   hash already matched.
 *
 *   A key's home slot is its hash's low 31 bits scaled to the table
 *   (h * size >> 31, a multiply and a shift) rather than masked, so the
 *   table may have any size and grows by half instead of doubling.  The
 *   table grows at load 3/4 (linear probing then compares 2.5 slots a hit
 *   on average) to load 1/2, and shrinks below 1/8 to at most 1/2: it
 *   spends 75 to 112 bytes an entry where doubling spent 75 to 149 (see
 *   ALTERNATIVES REJECTED).
 *   Deletion is the backward shift (Knuth's algorithm R): the entries after
 *   the hole that may move closer to their home slot are moved into it
 *   (an entry at least as far from its home as from the hole), so there
 *   are no tombstones in the current table and probes stay as short as
 *   the load allows.
 *
 * ENTRIES MOVE, TIMERS FOLLOW
 *   The wheel links timers by address and entries move: on growth and
 *   shrinking, on the SipHash switch, and when a deletion shifts its
 *   neighbours back.  Every move copies the slot and points the timer's two
 *   list neighbours at the copy, rota_timer_relocate()'s work in O(1):
 *   same deadline, same slot, same place among equal deadlines, pending
 *   or not.  Cancel and re-arm would not do: a re-armed timer goes
 *   behind later-set equal deadlines, and inside an advance it is
 *   deferred to the next one.  The relink is inline (wheel-inl.h's
 *   rota__timer_copied()), so the backward shift calls nothing and saves
 *   no register; on a wheel whose library is a debug build
 *   (rota__plain_wheel() false), which must see every move and init to
 *   keep its seals, the library's calls make them.
 *
 *   The wheel is embedded in the map, so a firing timer finds its map with
 *   container_of on the wheel pointer the core passes, and its slot with
 *   container_of on the timer: no back pointer in any entry.
 *
 *   The expire trampoline is where moving entries bite.  It copies what it
 *   needs out of the slot (length, value, the key word or the pointer to
 *   the key block), erases the slot (which may shift other entries into
 *   it), and then calls the user with a key that is either that local copy
 *   or the block it now owns.  The callback may set, move or remove any key,
 *   grow or shrink the table, or drain it: after it returns the trampoline
 *   touches only its locals and the map struct (frees the key block, takes
 *   a resize step), never the slot.  The wheel itself reads nothing of a fired
 *   timer after its callback, and it takes the next due timer from the
 *   head of its due list, which relocation keeps linked.
 *
 *   Moving a deadline later is rota_timer_touch_at(): a store into the slot
 *   already in cache, the timer re-filed only if its old slot comes due
 *   first.  An earlier deadline re-files it (two neighbours unlinked, one
 *   slot tail appended).  This is where the layer beats a rounds wheel:
 *   there, every tick walks the whole slot under the hand, a chain of
 *   dependent misses over 1/512 of all keys whatever their deadlines.
 *
 * RESIZING IN STEPS
 *   Rehashing all at once stalled: inserting 1e7 keys, the growth from 2^23
 *   to 2^24 slots took 3.6 s in one set on the benchmark machine (a VM:
 *   the kernel clearing 1.2 GB of fresh pages, then 6.3 million relocates,
 *   each two random writes).  So a resize runs in two phases, one step per
 *   insert, removal or expiry:
 *     1. The next table is allocated (not zeroed) and ZERO_PER_STEP of its
 *        slots are made empty per step; the map works on in the current
 *        table meanwhile (a growth reaches load 0.77 before it is ready).
 *     2. The ready table becomes current and the old one is migrated in
 *        slot order, MOVES_PER_STEP entries (passing at most
 *        VISITS_PER_STEP slots) per step.  A migrated or removed entry of
 *        the old table leaves a TOMB, which probes pass over, so the old
 *        table's clusters stay intact; the old table takes no inserts.  A
 *        lookup probes the current table, then the old one: two misses for
 *        keys not yet migrated, only while a migration runs.  The old
 *        table is freed when the cursor reaches its end.
 *   A growth starts at 3/4 of S slots, with 1.5 S slots to empty (3/128 S
 *   steps) and 0.75 S entries to move (3/32 S steps): the inserts made
 *   meanwhile bring the new table to load 0.58 at most, so one growth ends
 *   long before the next is due (a shrink likewise).  Eight moves a step
 *   (each a relocate: two random writes) keep the stretch short in which
 *   lookups may take two misses and both tables hold memory: a map filled
 *   to 1e6 keys has finished the growth it began at 753,983.  The worst
 *   single call measured inserting 1e7 keys is then 36 to 47 ms, and
 *   removing them all 72 to 79 ms: the allocator returning a whole old
 *   table (glibc unmaps 0.6 or 1.2 GB), which no step can split.  Should
 *   the current table ever be one entry from full (a growth the allocator
 *   refused, or inserts that outran a shrink), the insert finishes the
 *   resize in progress and makes one at once.  Memory peaks at the old
 *   table plus the new (1.6 GB as a map of 8-byte keys passes 8.6
 *   million).
 *
 * INSTRUCTIONS COUNT TOO
 *   Counting misses is not enough: the CPU overlaps this operation's misses
 *   with the next operation's only when the instructions between them fit
 *   its reorder window (a few hundred), and a 1e5-key table sits in the L3,
 *   where the path length is the cost.  So a set or move is one call: hash
 *   and probe are inlined into it (forced: the compiler left the probe out
 *   of line, 35 instructions a set), no public function calls another
 *   (they are interposable symbols in the shared library, so the compiler
 *   may not inline them), the fast hash's secrets are derived once at
 *   create, the map's time is read from the wheel without a call, and a
 *   deadline costs one wheel call (touch; arm only when touch says the
 *   timer was idle).
 *
 *   Keys of 1 to 8 bytes in the map's usual state (the fast hash, a
 *   table, no migration running) take the lean path, find_word(): the
 *   key is loaded once (two overlapping 4-byte loads below 8 bytes, no
 *   call), as the word its slot holds, and hashed from that word; the
 *   probe walks slot pointers and compares a slot's stored hash and
 *   length as one word, then the key word.  A key that is a number (the
 *   _u64 calls) is that word already: no length to check, nothing to
 *   load.  The lean path makes no call that anything follows but its
 *   return, so set and move save no register at all: what it does not
 *   finish it hands on by a tail call with the arguments it was given
 *   (to the general path, find_noting(): another state, a probe longer
 *   than any before; to set_found(): an entry with no deadline or a
 *   ROTA_NEVER one; to set_insert(): an absent key), a ttl that is
 *   ROTA_NEVER, saturates or needs the wheel's time source goes the
 *   general way before anything is read, and the wheel's own calls
 *   inside its inline touch return straight to the caller (move) or are
 *   made by a tail call to set_touch_finish(), which returns set's 1
 *   (rota__touch_pending() says which call finishes the touch).  The
 *   hash's two multiplies are written out as one mulq each on x86-64
 *   (keyed_hash.h): from an __int128 product gcc 12 kept one half in a
 *   callee-saved register, which the set path then saved and restored.
 *
 *   The lean path tests one pointer for its state (lean: the table's
 *   first slot, NULL under SipHash or with no table) and reads the
 *   table's end from the map, and a probe step loads a slot's first
 *   word once, for the tag compare and the empty test alike.  Insert,
 *   removal and expiry test the count against two bounds kept with the
 *   table (table_changed()) to learn that no resize is due.  An insert
 *   initialises its timer inline (rota__timer_init_plain()), so the arm
 *   that follows knows it idle and files it without testing its state.
 *
 *   Counted with callgrind in W6 at 1e3 keys (bench/keyed/counts.sh:
 *   8-byte ids through the _u64 calls, the adapter included, the seed
 *   fixed), an operation takes 105 instructions (hashed-rounds: 65): a
 *   set 101, a move 86, a remove 171 (hashed-rounds 65, 38 and 119).  A
 *   set of an id found in its home slot, to a later deadline, takes 60
 *   in the library: entry and exit 17 (the map, time source, ttl and
 *   state tests), the hash 10, the home slot and the tag 10, the compare
 *   5, the found entry's tests and stores 11, and the wheel's touch 7;
 *   an earlier deadline costs about 30 in the touch (unlinked, then
 *   filed by the wheel's inline arm), each slot probed past the home 7,
 *   and an insert (one set in eight here) about 80 in set_insert().  A
 *   remove's backward shift reads on to the end of the cluster (3.8
 *   slots on average, 15 instructions each) and moves 0.8 entries, each
 *   a copy of the slot and two neighbours' links.  What a rounds wheel
 *   does not pay for: a seeded hash (its mixer is unseeded, 9
 *   instructions), a table of any size (a multiply where a mask would
 *   do) of 56-byte slots, the flood detection's probe count, and the
 *   wheel's exact next deadline and counters on each touch and move (its
 *   earlier move is two list operations, rota's a slot computed from the
 *   deadline's level).
 *
 * THE GUARANTEES AND WHY THEY HOLD
 *   - One live entry per key: the table holds at most one slot per key
 *     (an insert follows a probe that found none) and a slot's timer is
 *     pending only while the slot is occupied; set on an existing key
 *     updates it in place.  rota_keyed_check() verifies that each entry is
 *     the first match on the probe from its home.
 *   - Removed before the callback: the trampoline erases the slot, then
 *     calls the user; the wheel has already forgotten the timer (one-shot),
 *     so the callback may set the same key.
 *   - Out of memory changes nothing: the only allocations that can fail a
 *     call are a long key's block (made first) and the next table; when the
 *     next table is refused the current one stays in use, at a higher load,
 *     until one empty slot is left (probes need it to end), and only then
 *     is an insert refused (the key block freed again).
 *   - Never early, exact, no idle cost: the wheel's (rota.h).
 *
 * HASHING
 *   A fast multiply-fold hash under the map's 128-bit seed (keyed_hash.h;
 *   its secrets premixed once, in `fk`), and SipHash-1-3 from the first
 *   probe longer than flood_probe() on.  A key of up to 8 bytes is hashed
 *   as its word, with the two multiplies of the 9-16-byte path.  A single
 *   multiply by a secret constant saves four instructions but turns
 *   consecutive ids into an arithmetic progression of homes, whose
 *   spacing the seed decides: in a W6 run at 1e3 keys it tripled the
 *   slots probed past the home and doubled the backward shift's work.
 *   One multiply of the two masked copies of the word, its halves
 *   folded and the result folded once more by a shift (h ^ h >> 29),
 *   saves the second multiply (seven instructions and about four cycles
 *   of the chain to the home slot) and spreads ids as well as a random
 *   function for most seeds, but not for all: over 256 seeds and three
 *   table sizes of 1,021 to 2,297 slots at load 3/4, consecutive,
 *   high-byte, strided and pointer-like ids had a mean successful probe
 *   of 3.0 to 4.3 slots at the 95th percentile of seeds and 9 to 35 at
 *   the worst (the two multiplies: 2.8 to 2.9 and 3.4 to 4.0; a random
 *   function: 2.5 on average).
 *   One product of two copies of a key that changes in a few bits is
 *   nearly linear in it, and a fixed fold does not hide the slope the
 *   seed picks.
 *   The test suite checks the spread of structured keys (consecutive,
 *   high-byte and strided ids, decimal strings) against linear probing,
 *   and the worst of 64 seeds for ids.  Measured at a million 8-byte
 *   keys, SipHash made a lookup 15-20% slower: its serial rounds delay
 *   the slot address the next miss needs.  Linear probing makes longer runs than
 *   chaining at random (a run is a cluster, not a bucket): the longest
 *   probe at load 3/4 was 50 slots at 2^10, 160 at 2^20 and 220 at 2^24
 *   in simulation (about 380 at 2^24 at load 0.8; a growth in steps
 *   reaches 0.77), so the bound grows with the table (64 + 32 log2 size: 384 at
 *   2^10, 832 at 2^24).  Keys chosen to collide in the fast hash's
 *   low bits pile into one cluster and cross it after a few hundred
 *   inserts; the map then rebuilds the table once, at once, under the
 *   seeded PRF (O(n), a new array; if the allocator refuses, the fast hash
 *   stays and a later long probe tries again).  That stall is the price
 *   the attacker's collisions buy, never an honest user's.
 *
 * ALTERNATIVES REJECTED
 *   - Chained buckets with one allocation per entry (this layer's previous
 *     design): two dependent misses per lookup (bucket, then entry), and
 *     W6 at 1e6 keys took about 0.7 of the rounds baseline's time against
 *     about 0.4 now.  It used less memory (104 bytes an entry at 1e6 with
 *     glibc, against 151 for this table when it doubled, 1e6 keys falling
 *     just past load 3/4 of 2^20 slots; 120 at 1e7).
 *   - Doubling the table (this layer's previous growth): load 3/8 to 3/4,
 *     117 bytes of table an entry at 1e6 keys (2^21 slots) against 84
 *     growing by half (1,507,965 slots), 109 against 92 on average over
 *     sizes from 1e5 to 1e7; the TTL cache example at a million small
 *     keys went from 214 to 181 bytes a key.  Growing by half moves each entry about
 *     twice in its life instead of once, and the higher mean load
 *     lengthens probes a little: counted in W6 at 1e3 keys, set took 211
 *     instructions and 217 after, remove 221 and 291 (more backward
 *     shifts at load 0.65 than at 0.49).  Inlining the probe into each
 *     public call and reading the wheel's time without a call then
 *     brought set to 183, move to 152 (from 162) and remove to 280.
 *   - Open addressing with {tag, pointer} slots: the same two dependent
 *     misses as chaining.
 *   - Rehashing all at once: 3.6 s in one call at 1e7 keys (see RESIZING
 *     IN STEPS).
 *   - Tombstones instead of the backward shift: no entries moved on
 *     deletion, but probes lengthen until a rebuild; a shift moves a
 *     couple of slots on average, each an O(1) relocate.  (The old table
 *     of a migration does use them: it is never probed for an insert and
 *     goes away when the migration ends.)
 *   - Robin Hood ordering: shorter worst probes, but inserts swap entries,
 *     and each swap of a pending entry is a relocate touching two random
 *     neighbours.
 *   - The caller passes a wheel: every entry would need a pointer back to
 *     its map (8 bytes each) for the expire trampoline.  Exposing the map's
 *     own wheel gives event loops the same single wheel.
 */
#define _DEFAULT_SOURCE /* getrandom() */
#include "rota/keyed.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "keyed_hash.h"

/* The smallest table. */
#define MIN_SLOTS 8u
/* The largest: a slot's index is taken from the stored hash's low 31 bits. */
#define MAX_SLOTS ((size_t)1 << 31)
/* Set in every stored hash, so 0 marks an empty slot; TOMB marks a slot
 * of the old table whose entry was migrated or removed. */
#define OCCUPIED 0x80000000u
#define TOMB 1u
/* Keys up to this long are stored in the slot. */
#define INLINE_KEY 8u
/* Per step of a resize (one per insert, removal or expiry): slots of the
 * next table made empty, or entries migrated and slots visited. */
#define ZERO_PER_STEP 64u
#define MOVES_PER_STEP 8u
#define VISITS_PER_STEP 128u

/* One slot: 56 bytes.  What a lookup compares comes first, the timer's
 * links and deadline right after the value, so a set touches bytes 0-48. */
struct slot {
    uint32_t hash; /* the key's hash | OCCUPIED, 0 (empty) or TOMB */
    uint32_t key_len;
    union {
        uint64_t word;      /* key_len <= 8: the bytes, zero-padded */
        unsigned char *ptr; /* longer: the map's heap copy, or the
                               caller's bytes (borrow_keys) */
    } key;
    void *value;
    struct rota_timer timer; /* pending iff the entry has a deadline */
};

struct table {
    struct slot *slot;
    size_t size; /* at least MIN_SLOTS, or 0 for no table */
};

struct rota_keyed {
    struct rota_wheel wheel; /* the entries' timers; see the essay */
    struct table cur;        /* where entries are added */
    /* cur's first slot and its end while the lean path may probe cur (the
     * fast hash and a table), else NULL: one test where it tested the
     * hash and the size, and no end to compute (table_changed()). */
    struct slot *lean, *lean_end;
    /* resize_work() has nothing to do while count - calm_low <=
     * calm_span (table_changed()). */
    size_t calm_low, calm_span;
    struct table next; /* a resize's table, being emptied */
    struct table old;  /* a resize's entries not yet migrated */
    size_t cursor;     /* slots of next emptied, or of old migrated */
    bool draining;
    bool advancing;     /* inside rota_keyed_advance(): callbacks may run */
    unsigned in_expire; /* depth of expire callbacks running */
    size_t count;
    size_t expiring;
    uint64_t k0, k1;
    struct rota__fastkey fk; /* the fast hash's secrets, from (k0, k1) */
    bool sip;    /* switched to SipHash after a suspiciously long probe */
    bool borrow; /* long keys are the caller's bytes (borrow_keys) */
    struct rota_allocator alloc;
    rota_keyed_expire_fn *expire;
    void *arg;
    size_t bytes;
    size_t held; /* key bytes out of the table in expire() */
    size_t longest_probe;
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

static inline const unsigned char *key_bytes(const struct slot *s)
{
    return s->key_len <= INLINE_KEY ? (const unsigned char *)&s->key.word
                                    : s->key.ptr;
}

static void free_key(struct rota_keyed *m, struct slot *s)
{
    if (s->key_len > INLINE_KEY && !m->borrow)
        mem_free(m, s->key.ptr, s->key_len);
}

/* A borrowed key is stored as the caller's pointer, never written through
 * nor freed (the union has one pointer type for both kinds). */
static inline unsigned char *borrowed(const void *key)
{
    return (unsigned char *)(uintptr_t)key;
}

/* -------------------------------------------------------------- table */

static __attribute__((noinline)) uint32_t sip_key(const struct rota_keyed *m,
                                                  const void *key, size_t len)
{
    return (uint32_t)rota__siphash(1, 3, m->k0, m->k1, key, len) | OCCUPIED;
}

/* Inlined into every lookup: a call here costs more than the hash. */
static inline __attribute__((always_inline)) uint32_t
hash_key(const struct rota_keyed *m, const void *key, size_t len)
{
    if (__builtin_expect(m->sip, 0))
        return sip_key(m, key, len);
    return (uint32_t)rota__fasthash_k(&m->fk, key, len) | OCCUPIED;
}

static inline uint64_t word_of(const void *key, uint32_t len)
{
    uint64_t word = 0;
    if (len == 8)
        memcpy(&word, key, 8); /* one load */
    else if (len != 0 && len < 8)
        memcpy(&word, key, len);
    return word;
}

/* word_of()'s word as rota__short_word() reads the same bytes. */
static inline uint64_t le_word(uint64_t word)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return __builtin_bswap64(word);
#else
    return word;
#endif
}

/* A 4-byte load from any alignment, as a little-endian number. */
static inline uint32_t le_load32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

/* The bytes of a key of 1 to 8 bytes as a little-endian word, zero-padded
 * (le_word() of the word its slot holds), without a call: one load for 8
 * bytes, two overlapping 4-byte loads for 4 to 7, three byte loads for 1
 * to 3 (bytes read twice are the same bytes, so OR-ing them is exact).  A
 * memcpy of a variable length would be a call, and a call in the lean
 * path makes it save registers (see INSTRUCTIONS COUNT TOO). */
static inline uint64_t short_le_word(const void *key, uint32_t len)
{
    const unsigned char *p = key;
    if (len == 8) {
        uint64_t word;
        memcpy(&word, p, sizeof word);
        return le_word(word);
    }
    if (len >= 4)
        return (uint64_t)le_load32(p) | (uint64_t)le_load32(p + len - 4)
                                            << (8 * (len - 4));
    return (uint64_t)p[0] | (uint64_t)p[len >> 1] << (8 * (len >> 1)) |
           (uint64_t)p[len - 1] << (8 * (len - 1));
}

static inline bool key_equal(const struct slot *s, uint32_t h, uint64_t word,
                             const void *key, uint32_t len)
{
    if (s->hash != h || s->key_len != len)
        return false;
    if (len <= INLINE_KEY)
        return s->key.word == word;
    return memcmp(s->key.ptr, key, len) == 0;
}

/* Whether s is one of t's slots (compared as integers: s may belong to
 * another array). */
static inline bool in_table(const struct table *t, const struct slot *s)
{
    return (uintptr_t)s - (uintptr_t)t->slot < t->size * sizeof *s;
}

/* The home slot of hash h in a table of `size` slots: the hash's low 31
 * bits scaled to the size (a multiply and a shift, for any size, where a
 * mask needs a power of two; see THE STRUCTURE). */
static inline size_t home_of(uint32_t h, size_t size)
{
    return (size_t)(((uint64_t)(h & ~OCCUPIED) * size) >> 31);
}

/* The slot after i, wrapping at the table's end. */
static inline size_t next_of(size_t i, size_t size)
{
    return i + 1 == size ? 0 : i + 1;
}

/* Probe one table for the key: its slot, or NULL and in *end the empty
 * slot that ends the probe.  TOMB slots (only in the old table) are passed
 * over.  *walked receives the slots compared. */
static inline struct slot *probe(const struct table *t, uint32_t h,
                                 uint64_t word, const void *key, uint32_t len,
                                 size_t *end, size_t *walked)
{
    const size_t size = t->size;
    size_t i = home_of(h, size), n = 0;
    struct slot *found = NULL;

    for (;; i = next_of(i, size)) {
        struct slot *s = &t->slot[i];
        if (s->hash == 0)
            break;
        n++;
        if (key_equal(s, h, word, key, len)) {
            found = s;
            break;
        }
    }
    *end = i;
    *walked = n;
    return found;
}

/* The key's slot, in the current table or (during a migration) the old
 * one, or NULL and in *end where the probe of the current table ended.
 * *walked receives the longer probe's length.  The map must have a
 * table. */
static inline struct slot *find(const struct rota_keyed *m, uint32_t h,
                                const void *key, uint32_t len, size_t *end,
                                size_t *walked)
{
    const uint64_t word = len <= INLINE_KEY ? word_of(key, len) : 0;
    size_t old_end, old_walked;

    struct slot *s = probe(&m->cur, h, word, key, len, end, walked);
    if (s == NULL && m->old.size != 0) {
        s = probe(&m->old, h, word, key, len, &old_end, &old_walked);
        if (old_walked > *walked)
            *walked = old_walked;
    }
    return s;
}

/* Move the entry in slot `from` to the empty slot `to`, its timer with it
 * (the wheel keeps its place, as rota_timer_relocate() keeps it): the slot
 * copied whole, then, on a plain wheel (`plain`: rota__plain_wheel()), the
 * timer's two list neighbours pointed at the copy inline; a debug build's
 * library makes the move itself. */
static inline __attribute__((always_inline)) void
move_slot_as(struct rota_keyed *m, struct slot *from, struct slot *to,
             bool plain)
{
    *to = *from;
    if (plain)
        rota__timer_copied(&to->timer);
    else
        (void)rota_timer_relocate(&m->wheel, &from->timer, &to->timer);
    from->hash = 0;
}

static inline void move_slot(struct rota_keyed *m, struct slot *from,
                             struct slot *to)
{
    move_slot_as(m, from, to, rota__plain_wheel(&m->wheel));
}

/* The first empty slot from the home of hash h in table t. */
static inline size_t empty_slot(const struct table *t, uint32_t h)
{
    const size_t size = t->size;
    size_t i = home_of(h, size);
    while (t->slot[i].hash != 0)
        i = next_of(i, size);
    return i;
}

/* erase()'s backward shift in the current table, from the emptied slot
 * s: the entries after it that may move closer to their home move back
 * (Knuth's algorithm R).  One copy each for a plain wheel and a debug
 * build's (`plain`), so that the first calls nothing and keeps its loop
 * in registers without saving any. */
static inline __attribute__((always_inline)) void
shift_back(struct rota_keyed *m, struct slot *s, bool plain)
{
    const size_t size = m->cur.size;
    struct slot *const first = m->cur.slot, *const last = first + size;
    struct slot *hole = s, *t = s;
    /* The index after the hole's (1 to size), and t's distance from the
     * hole as t walks on. */
    size_t after = (size_t)(s - first) + 1, gap = 0;
    s->hash = 0;
    for (;;) {
        gap++;
        if (++t == last)
            t = first;
        const uint32_t h = t->hash;
        if (h == 0)
            break;
        /* t may fill the hole unless its home lies in (hole, t], read
         * cyclically: unless the home is fewer than gap slots past
         * `after`.  A home before `after` wraps the difference past
         * size, and adding size brings it back. */
        size_t d = home_of(h, size) - after;
        if (d >= size)
            d += size;
        if (d >= gap) {
            move_slot_as(m, t, hole, plain);
            hole = t;
            after += gap;
            if (after > size)
                after -= size;
            gap = 0;
        }
    }
}

static __attribute__((noinline)) void shift_back_checked(struct rota_keyed *m,
                                                         struct slot *s)
{
    shift_back(m, s, false);
}

/* Take the entry in slot s out of the map.  In the current table the slot
 * empties and the entries after it that may move closer to their home
 * shift back (backward-shift deletion: no tombstones); in the old table,
 * which takes no inserts, it becomes a TOMB that probes pass over. */
static void erase(struct rota_keyed *m, struct slot *s)
{
    m->count--;
    if (m->old.size != 0 && in_table(&m->old, s)) {
        s->hash = TOMB;
        return;
    }
    if (rota__plain_wheel(&m->wheel))
        shift_back(m, s, true);
    else
        shift_back_checked(m, s);
}

static void free_table(struct rota_keyed *m, struct table *t)
{
    if (t->size != 0)
        mem_free(m, t->slot, t->size * sizeof *t->slot);
    *t = (struct table){NULL, 0};
}

static inline bool resizing(const struct rota_keyed *m)
{
    return (m->next.size | m->old.size) != 0;
}

/* The count a table of `size` slots grows past (load 3/4), and the size
 * it grows to (half as large again, at most MAX_SLOTS; see THE
 * STRUCTURE). */
static inline size_t grow_at(size_t size)
{
    return size / 4 * 3 + size % 4 * 3 / 4;
}

/* The fewest entries with nothing for resize_work() to do: below 1/8 of
 * the table it shrinks (tables above the smallest), and none while a
 * resize runs (SIZE_MAX, with a span of 0). */
static size_t calm_low(const struct rota_keyed *m)
{
    if (resizing(m))
        return SIZE_MAX;
    return m->cur.size > MIN_SLOTS ? m->cur.size / 8 : 0;
}

/* After the tables or the hash change: the lean path's view of the map,
 * and the counts between which resize_work() has nothing to do (none
 * while a resize runs: each call then takes a step). */
static void table_changed(struct rota_keyed *m)
{
    const size_t size = m->cur.size;
    m->lean = m->sip || size == 0 ? NULL : m->cur.slot;
    m->lean_end = m->lean == NULL ? NULL : m->lean + size;
    m->calm_low = calm_low(m);
    m->calm_span = resizing(m) ? 0 : grow_at(size) - m->calm_low;
}

/* One step of a resize (every remaining one for SIZE_MAX steps): empty
 * the next table's slots, then, once it is ready and current, migrate the
 * old table's entries into it in slot order. */
static void resize_steps(struct rota_keyed *m, size_t steps)
{
    if (m->next.size != 0) {
        size_t left = m->next.size - m->cursor;
        size_t n =
            steps == SIZE_MAX || left <= ZERO_PER_STEP ? left : ZERO_PER_STEP;
        for (size_t i = m->cursor; i < m->cursor + n; i++)
            m->next.slot[i].hash = 0;
        m->cursor += n;
        if (m->cursor < m->next.size)
            return;
        m->old = m->cur;
        m->cur = m->next;
        m->next = (struct table){NULL, 0};
        table_changed(m);
        m->cursor = 0;
        if (steps != SIZE_MAX)
            return;
    }
    if (m->old.size == 0)
        return;
    size_t moves = steps == SIZE_MAX ? SIZE_MAX : MOVES_PER_STEP;
    size_t visits = steps == SIZE_MAX ? SIZE_MAX : VISITS_PER_STEP;
    while (moves > 0 && visits > 0 && m->cursor < m->old.size) {
        struct slot *s = &m->old.slot[m->cursor++];
        visits--;
        if ((s->hash & OCCUPIED) != 0) {
            move_slot(m, s, &m->cur.slot[empty_slot(&m->cur, s->hash)]);
            s->hash = TOMB;
            moves--;
        }
    }
    if (m->cursor == m->old.size) {
        free_table(m, &m->old);
        m->cursor = 0;
        table_changed(m);
    }
}

static inline size_t grown(size_t size)
{
    return size >= MAX_SLOTS / 3 * 2 ? MAX_SLOTS : size + size / 2;
}

/* Start a resize when the load passes 3/4 (to 1.5 times the size) or falls
 * below 1/8 (to load 1/4 to 1/2) and the allocator gives the new table;
 * otherwise go on with the current one. */
static void maybe_resize(struct rota_keyed *m)
{
    size_t size = m->cur.size, want;

    if (resizing(m) || size == 0)
        return;
    if (m->count > grow_at(size)) {
        if (size >= MAX_SLOTS)
            return;
        want = grown(size);
    } else if (size > MIN_SLOTS && m->count < size / 8) {
        want = MIN_SLOTS;
        while (want < m->count * 2)
            want *= 2;
    } else {
        return;
    }
    struct slot *slot = mem_alloc(m, want * sizeof *slot);
    if (slot == NULL)
        return;
    m->next = (struct table){slot, want};
    m->cursor = 0;
    m->resizes++;
    table_changed(m);
}

/* After an insert or a removal: start or continue a resize.  The load
 * test is maybe_resize()'s, as one range compare of the count (the
 * bounds kept by table_changed()), inline: most calls have nothing to
 * do. */
static inline void resize_work(struct rota_keyed *m)
{
    if (m->count - m->calm_low <= m->calm_span)
        return;
    maybe_resize(m);
    if (resizing(m))
        resize_steps(m, 1);
}

/* Whether the current table can take one more entry and keep an empty
 * slot to end probes (it holds at most m->count entries).  When it is
 * that full, finish a resize in progress, or make one at once; false
 * when the allocator refuses. */
static bool room_for_one(struct rota_keyed *m)
{
    if (m->cur.size == 0) {
        struct slot *slot = mem_alloc(m, MIN_SLOTS * sizeof *slot);
        if (slot == NULL)
            return false;
        for (size_t i = 0; i < MIN_SLOTS; i++)
            slot[i].hash = 0;
        m->cur = (struct table){slot, MIN_SLOTS};
        table_changed(m);
        return true;
    }
    if (m->count + 2 <= m->cur.size)
        return true;
    resize_steps(m, SIZE_MAX); /* rare: see the essay */
    maybe_resize(m);
    resize_steps(m, SIZE_MAX);
    return m->count + 2 <= m->cur.size;
}

/* The longest probe random keys make grows with log(size): in
 * simulation 50 slots at 2^10, 160 at 2^20 and 220 at 2^24 at load 3/4,
 * 70, 200 and 380 at load 0.8 (a growth reaches 0.77 before the new table
 * is ready; 300 to 330 seen at 2^24 inserting 1e7 keys).  One over this
 * says keys were chosen to collide. */
static inline size_t flood_probe(size_t size)
{
    size_t bits = 0;
    while (((size_t)1 << bits) < size)
        bits++;
    return 64 + 32 * bits;
}

/* Switch to SipHash for good and rebuild the table under it: O(n) once,
 * after finishing any resize.  When the allocator refuses, the fast hash
 * stays and a later long probe tries again. */
static void rehash_with_siphash(struct rota_keyed *m)
{
    resize_steps(m, SIZE_MAX);
    const size_t size = m->cur.size;
    struct slot *fresh = mem_alloc(m, size * sizeof *fresh);
    if (fresh == NULL)
        return;
    m->sip = true;
    for (size_t i = 0; i < size; i++)
        fresh[i].hash = 0;
    struct table t = {fresh, size};
    for (size_t i = 0; i < size; i++) {
        struct slot *s = &m->cur.slot[i];
        if (s->hash == 0)
            continue;
        s->hash = hash_key(m, key_bytes(s), s->key_len);
        move_slot(m, s, &fresh[empty_slot(&t, s->hash)]);
    }
    free_table(m, &m->cur);
    m->cur = t;
    table_changed(m);
}

/* find() for the calls that may change the map: track the longest probe
 * and switch hashes when it says keys were chosen to collide.  The map
 * must have a table. */
/* find_noting()'s rare part, out of line: a probe longer than any
 * before it, maybe long enough to switch to SipHash. */
static __attribute__((noinline)) struct slot *
note_probe(struct rota_keyed *m, const void *key, uint32_t len, uint32_t *h,
           size_t *end, struct slot *s, size_t walked)
{
    m->longest_probe = walked;
    if (walked > flood_probe(m->cur.size) && !m->sip) {
        rehash_with_siphash(m);
        *h = hash_key(m, key, len);
        s = find(m, *h, key, len, end, &walked);
    }
    return s;
}

/* Inlined into set, move and remove, so each is one call (see
 * INSTRUCTIONS COUNT TOO). */
static inline __attribute__((always_inline)) struct slot *
find_noting(struct rota_keyed *m, const void *key, uint32_t len, uint32_t *h,
            size_t *end)
{
    size_t walked;

    *h = hash_key(m, key, len);
    struct slot *s = find(m, *h, key, len, end, &walked);
    if (__builtin_expect(walked > m->longest_probe, 0))
        s = note_probe(m, key, len, h, end, s, walked);
    return s;
}

/* A slot's stored hash and key length as one word (the two fields are
 * adjacent), so a probe compares both at once. */
_Static_assert(offsetof(struct slot, key_len) == sizeof(uint32_t),
               "hash and key_len form the slot's first word");

static inline uint64_t tag_of(uint32_t h, uint32_t len)
{
    const struct {
        uint32_t hash, key_len;
    } t = {h, len};
    uint64_t word;
    memcpy(&word, &t, sizeof word);
    return word;
}

/* The stored hash in a tag (a slot's first word, tag_of()). */
static inline uint32_t tag_hash(uint64_t tag)
{
    struct {
        uint32_t hash, key_len;
    } t;
    memcpy(&t, &tag, sizeof t);
    return t.hash;
}

static inline uint64_t slot_tag(const struct slot *s)
{
    uint64_t word;
    memcpy(&word, s, sizeof word);
    return word;
}

/* find_noting()'s common case, inlined into set, move, remove and get:
 * a key of 1 to 8 bytes, given as `le` (short_le_word()) and `word` (the
 * word its slot holds), the fast hash, a table and no migration.  The
 * probe walks slot pointers and compares the stored hash and length as
 * one word, then the key word.  Returns the key's slot, or NULL with *end
 * the empty slot that ends the probe (the key is absent) and in *tag_out
 * its tag (tag_of()) for the insert.  NULL with *end NULL sends the
 * caller to the general path: another state, or a probe longer than any
 * before (which find_noting() records, and which may switch the map to
 * SipHash). */
static inline __attribute__((always_inline)) struct slot *
find_word(const struct rota_keyed *m, uint64_t le, uint64_t word, uint32_t len,
          uint64_t *tag_out, struct slot **end)
{
    *end = NULL;
    struct slot *const first = m->lean;
    if (first == NULL)
        return NULL;
    const uint32_t h =
        (uint32_t)rota__fasthash_word(&m->fk, le, len) | OCCUPIED;
    const uint64_t tag = tag_of(h, len);
    *tag_out = tag;
    struct slot *s = first + home_of(h, m->cur.size), *found = NULL;
    size_t n = 1; /* slots compared, the one at hand included */

    /* One load of a slot's first word tests both for the key's tag and
     * for an empty slot (no tag is 0: OCCUPIED is set in each). */
    for (;; n++) {
        const uint64_t t = slot_tag(s);
        if (t == tag && s->key.word == word) {
            found = s;
            break;
        }
        if (tag_hash(t) == 0) {
            n--; /* an empty slot is not compared */
            break;
        }
        /* The table's end and, at the wrap, its first slot are read
         * from the map, not kept in registers: fewer registers keep the
         * lean path from saving any (a relaxed load is a plain load the
         * compiler does not hoist). */
        if (++s == __atomic_load_n(&m->lean_end, __ATOMIC_RELAXED))
            s = __atomic_load_n(&m->lean, __ATOMIC_RELAXED);
    }
    if (__builtin_expect(n > m->longest_probe, 0))
        return NULL;
    if (found == NULL && m->old.size == 0)
        *end = s;
    return found;
}

/* find_word() of a key given as bytes; *word receives the word its slot
 * holds (or would). */
static inline __attribute__((always_inline)) struct slot *
find_short(const struct rota_keyed *m, const void *key, size_t key_len,
           uint64_t *tag, uint64_t *word, struct slot **end)
{
    /* 1 to 8 bytes (a key of 0 goes the general way, which checks that
     * a NULL key has no length). */
    if (key_len - 1 >= INLINE_KEY || key == NULL) {
        *end = NULL;
        return NULL;
    }
    const uint64_t le = short_le_word(key, (uint32_t)key_len);
    *word = le_word(le);
    return find_word(m, le, *word, (uint32_t)key_len, tag, end);
}

/* ---------------------------------------------------------- deadlines */

/* Saturating now + ttl; ROTA_NEVER stays "no deadline". */
static inline uint64_t deadline_after(uint64_t now, uint64_t ttl)
{
    if (ttl == ROTA_NEVER)
        return ROTA_NEVER;
    return ttl > ROTA_MAX_DEADLINE - now ? ROTA_MAX_DEADLINE : now + ttl;
}

/* deadline_after() the map's now: the wheel's time without a call, unless
 * a time source is set on it (rota_keyed_wheel() lets a caller set one). */
static uint64_t deadline_in(const struct rota_keyed *m, uint64_t ttl)
{
    uint64_t now =
        m->wheel.time_fn_ == NULL ? m->wheel.now_ : rota_wheel_now(&m->wheel);
    return deadline_after(now, ttl);
}

/* Give an entry in the table its new deadline.  The calls cannot fail: the
 * wheel and the timer are the map's own and initialised. */
static inline void apply_deadline(struct rota_keyed *m, struct slot *s,
                                  uint64_t deadline)
{
    if (deadline == ROTA_NEVER) {
        if (rota_timer_cancel(&m->wheel, &s->timer) == 1)
            m->expiring--;
    } else if (rota_timer_touch_at(&m->wheel, &s->timer, deadline) ==
               ROTA_ENOENT) {
        /* Touch moves only a pending timer (later: a store; earlier: the
         * wheel re-files it); this one had no deadline. */
        (void)rota_timer_arm_at(&m->wheel, &s->timer, deadline);
        m->expiring++;
    }
}

/* The wheel calls this for a due entry: out of the map, then the user.
 * The entry's slot is reused by the erase (and the callback may move or
 * grow the table), so what the callback and the code after it need is
 * copied out first; nothing here reads the slot after erase(). */
static void on_expire(struct rota_wheel *wheel, struct rota_timer *timer,
                      uint64_t late)
{
    struct rota_keyed *m = rota_container_of(wheel, struct rota_keyed, wheel);
    struct slot *s = rota_container_of(timer, struct slot, timer);
    const uint32_t len = s->key_len;
    void *const value = s->value;
    const uint64_t word = s->key.word;
    unsigned char *const far = len > INLINE_KEY ? s->key.ptr : NULL;
    /* A borrowed key is the caller's: neither held nor freed here. */
    const size_t held = far != NULL && !m->borrow ? len : 0;

    (void)late;
    erase(m, s);
    m->expiring--;
    m->expired++;
    if (m->expire != NULL) {
        m->in_expire++;
        m->held += held;
        m->expire(m, far != NULL ? far : (const void *)&word, len, value,
                  m->arg);
        m->held -= held;
        m->in_expire--;
    }
    if (held != 0)
        mem_free(m, far, len);
    resize_work(m);
}

/* ------------------------------------------------------------ public */

int rota_keyed_create(struct rota_keyed **out,
                      const struct rota_keyed_config *config)
{
    static const struct rota_allocator libc = {default_alloc, default_free,
                                               NULL};
    const struct rota_keyed_config defaults = {0};
    unsigned char seed[ROTA_KEYED_SEED_SIZE];

    if (out == NULL)
        return ROTA_EINVAL;
    if (config == NULL)
        config = &defaults;
    const struct rota_allocator *alloc =
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
    m->borrow = config->borrow_keys;
    m->bytes = sizeof *m;
    m->k0 = rota__sip_load64(seed);
    m->k1 = rota__sip_load64(seed + 8);
    m->fk = rota__fastkey_of(m->k0, m->k1);
    table_changed(m);
    *out = m;
    return 0;
}

/* Free every key copy and every table, calling nothing. */
static void free_all(struct rota_keyed *m)
{
    struct table *held[2] = {&m->cur, &m->old};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < held[k]->size; i++)
            if ((held[k]->slot[i].hash & OCCUPIED) != 0)
                free_key(m, &held[k]->slot[i]);
        free_table(m, held[k]);
    }
    free_table(m, &m->next);
    m->cursor = 0;
    m->count = 0;
    m->expiring = 0;
}

static void forget_timer(struct rota_timer *timer, void *arg)
{
    (void)timer;
    (void)arg;
}

int rota_keyed_destroy(struct rota_keyed *m)
{
    if (m == NULL)
        return 0;
    if (m->in_expire != 0 || m->draining || m->advancing)
        return ROTA_EBUSY;
    /* The entries' timers die with the wheel: no need to cancel them.  But
     * a debug build of the core (rota.h, DEBUG BUILDS) holds a wheel to
     * rota.h's word, drain before drop: it would take their memory, handed
     * out again, for timers still pending. */
    if (rota_debug_enabled())
        (void)rota_wheel_drain(&m->wheel, forget_timer, NULL);
    free_all(m);
    struct rota_allocator alloc = m->alloc;
    alloc.free(alloc.ctx, m, sizeof *m);
    return 0;
}

static int check_key(const struct rota_keyed *m, const void *key, size_t len)
{
    if (m == NULL || (key == NULL && len != 0) || len > UINT32_MAX)
        return ROTA_EINVAL;
    return 0;
}

/* entry_begins() after the timer's init: the count, the arm unless the
 * deadline is ROTA_NEVER, and a step of any resize under way. */
static inline __attribute__((always_inline)) int
entry_armed(struct rota_keyed *m, struct slot *s, uint64_t deadline)
{
    m->count++;
    if (deadline != ROTA_NEVER) {
        (void)rota_timer_arm_at(&m->wheel, &s->timer, deadline);
        m->expiring++;
    }
    resize_work(m);
    return 0;
}

/* entry_begins() on a wheel whose library is a debug build, which must see
 * the timer's init. */
static __attribute__((noinline)) int entry_begins_checked(struct rota_keyed *m,
                                                          struct slot *s,
                                                          void *value,
                                                          uint64_t deadline)
{
    s->value = value;
    rota_timer_init(&s->timer, on_expire);
    return entry_armed(m, s, deadline);
}

/* The end of every insert, once the slot holds the key: the entry's value
 * and timer, the count, the arm unless the deadline is ROTA_NEVER, and a
 * step of any resize under way.  The timer's init inline, so that the arm
 * knows it idle. */
static inline __attribute__((always_inline)) int
entry_begins(struct rota_keyed *m, struct slot *s, void *value,
             uint64_t deadline)
{
    if (!rota__plain_wheel(&m->wheel))
        return entry_begins_checked(m, s, value, deadline);
    s->value = value;
    rota__timer_init_plain(&s->timer, on_expire);
    return entry_armed(m, s, deadline);
}

/* Add a key known to be absent; the probe of the current table ended at
 * slot `end`, unless the map had no table.  The key copy is made before
 * the table changes, so a refusal leaves everything as it was. */
static int insert(struct rota_keyed *m, size_t end, uint32_t h, const void *key,
                  uint32_t len, void *value, uint64_t deadline)
{
    unsigned char *heap = NULL;
    if (len > INLINE_KEY && m->borrow) {
        heap = borrowed(key);
    } else if (len > INLINE_KEY) {
        heap = mem_alloc(m, len);
        if (heap == NULL)
            return ROTA_ENOMEM;
        memcpy(heap, key, len);
    }
    struct slot *before = m->cur.slot;
    if (!room_for_one(m)) {
        if (heap != NULL && !m->borrow)
            mem_free(m, heap, len);
        return ROTA_ENOMEM;
    }
    if (m->cur.slot != before) /* a new table: probe it */
        end = empty_slot(&m->cur, h);
    struct slot *s = &m->cur.slot[end];
    s->hash = h;
    s->key_len = len;
    if (heap != NULL)
        s->key.ptr = heap;
    else
        s->key.word = word_of(key, len);
    return entry_begins(m, s, value, deadline);
}

/* set_at()'s general path: any key, any state, the arguments checked. */
static __attribute__((noinline)) int
set_general(struct rota_keyed *m, const void *key, size_t key_len, void *value,
            uint64_t deadline, void **old_value)
{
    int rc = check_key(m, key, key_len);
    if (rc != 0)
        return rc;
    const uint32_t len = (uint32_t)key_len;
    uint32_t h;
    size_t end = 0;
    struct slot *s = NULL;
    if (m->cur.size != 0)
        s = find_noting(m, key, len, &h, &end);
    else
        h = hash_key(m, key, len);
    if (s != NULL) {
        if (old_value != NULL)
            *old_value = s->value;
        s->value = value;
        if (len > INLINE_KEY && m->borrow)
            s->key.ptr = borrowed(key); /* the caller's newest copy */
        apply_deadline(m, s, deadline);
        return 1;
    }
    return insert(m, end, h, key, len, value, deadline);
}

/* set_general() of a key given as a number (its 8 bytes). */
static __attribute__((noinline)) int set_u64_general(struct rota_keyed *m,
                                                     uint64_t key, void *value,
                                                     uint64_t deadline,
                                                     void **old_value)
{
    return set_general(m, &key, sizeof key, value, deadline, old_value);
}

/* set_at() of a key found in slot s whose deadline goes or whose timer is
 * idle (the entry had none): out of line, entered by a tail call. */
static __attribute__((noinline)) int set_found(struct rota_keyed *m,
                                               struct slot *s, void *value,
                                               uint64_t deadline,
                                               void **old_value)
{
    if (old_value != NULL)
        *old_value = s->value;
    s->value = value;
    apply_deadline(m, s, deadline);
    return 1;
}

/* set_at() of an absent key of 1 to 8 bytes whose probe of the current
 * table ended at slot `end`; `tag` is its hash and length (tag_of()),
 * `word` the word its slot holds.  Six arguments, so the lean path
 * reaches it by a tail call. */
static __attribute__((noinline)) int set_insert(struct rota_keyed *m,
                                                struct slot *end, uint64_t tag,
                                                uint64_t word, void *value,
                                                uint64_t deadline)
{
    if (m->count + 2 > m->cur.size) { /* rare: insert() makes room */
        struct {
            uint32_t hash, key_len;
        } t;
        memcpy(&t, &tag, sizeof t);
        return insert(m, (size_t)(end - m->cur.slot), t.hash, &word, t.key_len,
                      value, deadline);
    }
    /* insert() for a key in a word, with room: no key block, no new
     * table, and the slot at hand rather than its index. */
    memcpy(end, &tag, sizeof tag); /* hash and key_len: slot_tag() */
    end->key.word = word;
    return entry_begins(m, end, value, deadline);
}

/* set_in_slot()'s touch, finished by the wheel's call that `then` names
 * (rota__touch_pending()): out of line, entered by a tail call, so that
 * the lean path makes no call that anything but a return follows. */
static __attribute__((noinline)) int
set_touch_finish(struct rota_keyed *m, struct slot *s, uint64_t deadline,
                 int then, struct rota_link *filled)
{
#ifdef ROTA__INLINE_PATHS
    if (then == ROTA__TOUCH_FILE) {
        (void)rota__arm_finish(&m->wheel, &s->timer, deadline, filled);
        return 1;
    }
#endif
    (void)then;
    (void)filled;
    (void)rota_timer_touch_at_noinline(&m->wheel, &s->timer, deadline);
    return 1;
}

/* Whether an entry's timer is pending, read as the wheel's inline paths
 * read it (false in a debug build, whose calls all go to the library). */
static inline bool timer_pending(const struct rota_keyed *m,
                                 const struct slot *s)
{
    return (uintptr_t)s->timer.link_.prev > m->wheel.pending_above_;
}

/* The public functions are interposable symbols in the shared library, so
 * they call these instead of one another: one call per operation.  The
 * lean path (see INSTRUCTIONS COUNT TOO) makes no call that anything
 * follows but a return: what it does not finish it hands on by a tail
 * call, so it keeps nothing across a call.  `m` is not NULL. */
static inline __attribute__((always_inline)) int
set_in_slot(struct rota_keyed *m, struct slot *s, void *value,
            uint64_t deadline, void **old_value)
{
    if (deadline == ROTA_NEVER || !timer_pending(m, s))
        return set_found(m, s, value, deadline, old_value);
    if (old_value != NULL)
        *old_value = s->value;
    s->value = value;
    /* A later deadline is a store; an earlier one re-files the timer.  The
     * wheel's call, when it needs one, is made by a tail call. */
    struct rota_link *filled;
    const int then =
        rota__touch_pending(&m->wheel, &s->timer, deadline, &filled);
    if (then != 0)
        return set_touch_finish(m, s, deadline, then, filled);
    return 1;
}

static inline __attribute__((always_inline)) int
set_at(struct rota_keyed *m, const void *key, size_t key_len, void *value,
       uint64_t deadline, void **old_value)
{
    uint64_t tag, word;
    struct slot *end, *s = find_short(m, key, key_len, &tag, &word, &end);
    if (s != NULL)
        return set_in_slot(m, s, value, deadline, old_value);
    if (end != NULL)
        return set_insert(m, end, tag, word, value, deadline);
    return set_general(m, key, key_len, value, deadline, old_value);
}

static inline __attribute__((always_inline)) int
set_u64_at(struct rota_keyed *m, uint64_t key, void *value, uint64_t deadline,
           void **old_value)
{
    uint64_t tag;
    struct slot *end, *s = find_word(m, le_word(key), key, 8, &tag, &end);
    if (s != NULL)
        return set_in_slot(m, s, value, deadline, old_value);
    if (end != NULL)
        return set_insert(m, end, tag, key, value, deadline);
    return set_u64_general(m, key, value, deadline, old_value);
}

int rota_keyed_set_at(struct rota_keyed *m, const void *key, size_t key_len,
                      void *value, uint64_t deadline, void **old_value)
{
    if (m == NULL)
        return ROTA_EINVAL;
    return set_at(m, key, key_len, value, deadline, old_value);
}

int rota_keyed_set_u64_at(struct rota_keyed *m, uint64_t key, void *value,
                          uint64_t deadline, void **old_value)
{
    if (m == NULL)
        return ROTA_EINVAL;
    return set_u64_at(m, key, value, deadline, old_value);
}

/* Whether now + ttl is the deadline of a ttl: no time source on the map's
 * wheel (reading it is a call), and neither ROTA_NEVER nor a sum to
 * saturate.  The other ttls take the general path (deadline_in()). */
static inline bool plain_ttl(const struct rota_keyed *m, uint64_t ttl)
{
    return m->wheel.time_fn_ == NULL &&
           ttl <= ROTA_MAX_DEADLINE - m->wheel.now_;
}

/* now + ttl for a plain_ttl(): at most ROTA_MAX_DEADLINE, so never
 * ROTA_NEVER, which the inlined paths then need not test. */
static inline uint64_t plain_deadline(const struct rota_keyed *m, uint64_t ttl)
{
    const uint64_t deadline = m->wheel.now_ + ttl;
    if (deadline > ROTA_MAX_DEADLINE)
        __builtin_unreachable();
    return deadline;
}

/* rota_keyed_set_in() of a ttl that is not plain_ttl(), off the lean
 * path. */
static __attribute__((noinline)) int
set_in_timed(struct rota_keyed *m, const void *key, size_t key_len, void *value,
             uint64_t ttl, void **old_value)
{
    return set_general(m, key, key_len, value, deadline_in(m, ttl), old_value);
}

int rota_keyed_set_in(struct rota_keyed *m, const void *key, size_t key_len,
                      void *value, uint64_t ttl, void **old_value)
{
    if (m == NULL)
        return ROTA_EINVAL;
    if (!plain_ttl(m, ttl))
        return set_in_timed(m, key, key_len, value, ttl, old_value);
    return set_at(m, key, key_len, value, plain_deadline(m, ttl), old_value);
}

static __attribute__((noinline)) int set_u64_in_timed(struct rota_keyed *m,
                                                      uint64_t key, void *value,
                                                      uint64_t ttl,
                                                      void **old_value)
{
    return set_u64_general(m, key, value, deadline_in(m, ttl), old_value);
}

int rota_keyed_set_u64_in(struct rota_keyed *m, uint64_t key, void *value,
                          uint64_t ttl, void **old_value)
{
    if (m == NULL)
        return ROTA_EINVAL;
    if (!plain_ttl(m, ttl))
        return set_u64_in_timed(m, key, value, ttl, old_value);
    return set_u64_at(m, key, value, plain_deadline(m, ttl), old_value);
}

/* move_at()'s general path: any key, any state, the arguments checked. */
static __attribute__((noinline)) int move_general(struct rota_keyed *m,
                                                  const void *key,
                                                  size_t key_len,
                                                  uint64_t deadline)
{
    int rc = check_key(m, key, key_len);
    if (rc != 0)
        return rc;
    if (m->cur.size == 0)
        return ROTA_ENOENT;
    uint32_t h;
    size_t end;
    struct slot *s = find_noting(m, key, (uint32_t)key_len, &h, &end);
    if (s == NULL)
        return ROTA_ENOENT;
    apply_deadline(m, s, deadline);
    return 0;
}

static __attribute__((noinline)) int
move_u64_general(struct rota_keyed *m, uint64_t key, uint64_t deadline)
{
    return move_general(m, &key, sizeof key, deadline);
}

/* move_at() of a key found in slot s (as set_found()). */
static __attribute__((noinline)) int
move_found(struct rota_keyed *m, struct slot *s, uint64_t deadline)
{
    apply_deadline(m, s, deadline);
    return 0;
}

static inline __attribute__((always_inline)) int
move_in_slot(struct rota_keyed *m, struct slot *s, uint64_t deadline)
{
    if (deadline == ROTA_NEVER || !timer_pending(m, s))
        return move_found(m, s, deadline);
    /* The touch of the map's own pending timer returns 0: its result is
     * returned so that the wheel's calls in it are tail calls. */
    return rota_timer_touch_at(&m->wheel, &s->timer, deadline);
}

static inline __attribute__((always_inline)) int move_at(struct rota_keyed *m,
                                                         const void *key,
                                                         size_t key_len,
                                                         uint64_t deadline)
{
    uint64_t tag, word;
    struct slot *end, *s = find_short(m, key, key_len, &tag, &word, &end);
    if (s != NULL)
        return move_in_slot(m, s, deadline);
    if (end != NULL)
        return ROTA_ENOENT;
    return move_general(m, key, key_len, deadline);
}

static inline __attribute__((always_inline)) int
move_u64_at(struct rota_keyed *m, uint64_t key, uint64_t deadline)
{
    uint64_t tag;
    struct slot *end, *s = find_word(m, le_word(key), key, 8, &tag, &end);
    if (s != NULL)
        return move_in_slot(m, s, deadline);
    if (end != NULL)
        return ROTA_ENOENT;
    return move_u64_general(m, key, deadline);
}

int rota_keyed_move_at(struct rota_keyed *m, const void *key, size_t key_len,
                       uint64_t deadline)
{
    if (m == NULL)
        return ROTA_EINVAL;
    return move_at(m, key, key_len, deadline);
}

int rota_keyed_move_u64_at(struct rota_keyed *m, uint64_t key,
                           uint64_t deadline)
{
    if (m == NULL)
        return ROTA_EINVAL;
    return move_u64_at(m, key, deadline);
}

/* rota_keyed_move_in() of a ttl that is not plain_ttl(). */
static __attribute__((noinline)) int move_in_timed(struct rota_keyed *m,
                                                   const void *key,
                                                   size_t key_len, uint64_t ttl)
{
    return move_general(m, key, key_len, deadline_in(m, ttl));
}

int rota_keyed_move_in(struct rota_keyed *m, const void *key, size_t key_len,
                       uint64_t ttl)
{
    if (m == NULL)
        return ROTA_EINVAL;
    if (!plain_ttl(m, ttl))
        return move_in_timed(m, key, key_len, ttl);
    return move_at(m, key, key_len, plain_deadline(m, ttl));
}

static __attribute__((noinline)) int
move_u64_in_timed(struct rota_keyed *m, uint64_t key, uint64_t ttl)
{
    return move_u64_general(m, key, deadline_in(m, ttl));
}

int rota_keyed_move_u64_in(struct rota_keyed *m, uint64_t key, uint64_t ttl)
{
    if (m == NULL)
        return ROTA_EINVAL;
    if (!plain_ttl(m, ttl))
        return move_u64_in_timed(m, key, ttl);
    return move_u64_at(m, key, plain_deadline(m, ttl));
}

/* Take a found entry out of the map; `inline_key`: the lean path found
 * it, so its key is in the slot and there is no block to free. */
static inline __attribute__((always_inline)) int
remove_slot(struct rota_keyed *m, struct slot *s, void **value, bool inline_key)
{
    if (rota_timer_cancel(&m->wheel, &s->timer) == 1)
        m->expiring--;
    if (value != NULL)
        *value = s->value;
    if (!inline_key)
        free_key(m, s);
    erase(m, s);
    resize_work(m);
    return 1;
}

/* remove's general path: any key, any state, the arguments checked. */
static __attribute__((noinline)) int remove_general(struct rota_keyed *m,
                                                    const void *key,
                                                    size_t key_len,
                                                    void **value)
{
    int rc = check_key(m, key, key_len);
    if (rc != 0)
        return rc;
    if (m->cur.size == 0)
        return 0;
    uint32_t h;
    size_t at;
    struct slot *s = find_noting(m, key, (uint32_t)key_len, &h, &at);
    if (s == NULL)
        return 0;
    return remove_slot(m, s, value, false);
}

int rota_keyed_remove(struct rota_keyed *m, const void *key, size_t key_len,
                      void **value)
{
    if (m == NULL)
        return ROTA_EINVAL;
    uint64_t tag, word;
    struct slot *end, *s = find_short(m, key, key_len, &tag, &word, &end);
    if (s != NULL)
        return remove_slot(m, s, value, true);
    if (end != NULL)
        return 0;
    return remove_general(m, key, key_len, value);
}

static __attribute__((noinline)) int
remove_u64_general(struct rota_keyed *m, uint64_t key, void **value)
{
    return remove_general(m, &key, sizeof key, value);
}

int rota_keyed_remove_u64(struct rota_keyed *m, uint64_t key, void **value)
{
    if (m == NULL)
        return ROTA_EINVAL;
    uint64_t tag;
    struct slot *end, *s = find_word(m, le_word(key), key, 8, &tag, &end);
    if (s != NULL)
        return remove_slot(m, s, value, true);
    if (end != NULL)
        return 0;
    return remove_u64_general(m, key, value);
}

/* What get returns for a found entry. */
static inline int get_slot(const struct slot *s, void **value,
                           uint64_t *deadline)
{
    if (value != NULL)
        *value = s->value;
    if (deadline != NULL)
        *deadline = rota_timer_pending(&s->timer)
                        ? rota_timer_deadline(&s->timer)
                        : ROTA_NEVER;
    return 1;
}

/* get's general path: any key, any state, the arguments checked. */
static __attribute__((noinline)) int get_general(const struct rota_keyed *m,
                                                 const void *key,
                                                 size_t key_len, void **value,
                                                 uint64_t *deadline)
{
    int rc = check_key(m, key, key_len);
    if (rc != 0)
        return rc;
    if (m->cur.size == 0)
        return 0;
    size_t at, walked;
    const struct slot *s = find(m, hash_key(m, key, key_len), key,
                                (uint32_t)key_len, &at, &walked);
    if (s == NULL)
        return 0;
    return get_slot(s, value, deadline);
}

int rota_keyed_get(const struct rota_keyed *m, const void *key, size_t key_len,
                   void **value, uint64_t *deadline)
{
    if (m == NULL)
        return ROTA_EINVAL;
    uint64_t tag, word;
    struct slot *end;
    const struct slot *s = find_short(m, key, key_len, &tag, &word, &end);
    if (s != NULL)
        return get_slot(s, value, deadline);
    if (end != NULL)
        return 0;
    return get_general(m, key, key_len, value, deadline);
}

int rota_keyed_get_u64(const struct rota_keyed *m, uint64_t key, void **value,
                       uint64_t *deadline)
{
    if (m == NULL)
        return ROTA_EINVAL;
    uint64_t tag;
    struct slot *end;
    const struct slot *s = find_word(m, le_word(key), key, 8, &tag, &end);
    if (s != NULL)
        return get_slot(s, value, deadline);
    if (end != NULL)
        return 0;
    return get_general(m, &key, sizeof key, value, deadline);
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
    /* Detach the table first: fn sees an empty map and may use it (a set
     * makes a new table), while the detached slots stay where they are. */
    resize_steps(m, SIZE_MAX);
    struct table t = m->cur;
    m->cur = (struct table){NULL, 0};
    table_changed(m);
    m->count = 0;
    m->expiring = 0;
    m->draining = true;
    for (size_t i = 0; i < t.size; i++) {
        struct slot *s = &t.slot[i];
        if (s->hash == 0)
            continue;
        (void)rota_timer_cancel(&m->wheel, &s->timer);
        fn(m, key_bytes(s), s->key_len, s->value, arg);
        free_key(m, s);
    }
    m->draining = false;
    free_table(m, &t);
    return 0;
}

static size_t max_size(size_t a, size_t b)
{
    return a > b ? a : b;
}

void rota_keyed_stats(const struct rota_keyed *m, struct rota_keyed_stats *out)
{
    if (m == NULL || out == NULL)
        return;
    *out = (struct rota_keyed_stats){
        .count = m->count,
        .expiring = m->expiring,
        .slots = max_size(m->cur.size, max_size(m->next.size, m->old.size)),
        .bytes = m->bytes,
        .longest_probe = m->longest_probe,
        .sip_hash = m->sip,
        .expired = m->expired,
        .resizes = m->resizes,
    };
}

void rota_keyed_next_growth(const struct rota_keyed *m, size_t *at_count,
                            size_t *bytes)
{
    if (m == NULL)
        return;
    /* maybe_resize()'s rule, applied to the table a running resize ends
     * with (next while it is being emptied, else cur). */
    size_t size = m->next.size != 0 ? m->next.size : m->cur.size;
    size_t at = 1, more = MIN_SLOTS * sizeof(struct slot);
    if (size >= MAX_SLOTS) {
        at = SIZE_MAX;
        more = 0;
    } else if (size != 0) {
        at = grow_at(size) + 1;
        more = grown(size) * sizeof(struct slot);
    }
    if (at_count != NULL)
        *at_count = at;
    if (bytes != NULL)
        *bytes = more;
}

/* --------------------------------------------------------- invariants */

#define FAIL(text)                                                             \
    do {                                                                       \
        if (why != NULL)                                                       \
            *why = (text);                                                     \
        return ROTA_ECORRUPT;                                                  \
    } while (0)

struct census {
    size_t entries, expiring, bytes;
};

/* The entries of one table: each where linear probing finds it (no empty
 * slot between its home and it; TOMBs only in the old table, none before
 * the migration cursor) and the first match on the map's way to its key,
 * so no key appears twice. */
static int check_table(const struct rota_keyed *m, const struct table *t,
                       bool old, struct census *c, const char **why)
{
    if (t->size > MAX_SLOTS || (t->size != 0 && t->size < MIN_SLOTS))
        FAIL("table size out of range");
    c->bytes += t->size * sizeof *t->slot;
    for (size_t i = 0; i < t->size; i++) {
        const struct slot *s = &t->slot[i];
        if (s->hash == 0)
            continue;
        if (s->hash == TOMB) {
            if (!old)
                FAIL("a tombstone outside the old table");
            continue;
        }
        if ((s->hash & OCCUPIED) == 0)
            FAIL("a slot is neither empty, a tombstone nor occupied");
        if (old && i < m->cursor)
            FAIL("an entry before the migration cursor");
        if (++c->entries > m->count)
            FAIL("more entries in the tables than counted");
        if (hash_key(m, key_bytes(s), s->key_len) != s->hash)
            FAIL("stored hash does not match the key");
        if (s->key_len <= INLINE_KEY &&
            s->key.word != word_of(&s->key.word, s->key_len))
            FAIL("inline key is not zero-padded");
        for (size_t j = home_of(s->hash, t->size); j != i;
             j = next_of(j, t->size))
            if (t->slot[j].hash == 0)
                FAIL("an empty slot cuts an entry off from its home");
        size_t end, walked;
        if (find(m, s->hash, key_bytes(s), s->key_len, &end, &walked) != s)
            FAIL("a key appears twice");
        if (rota_timer_pending(&s->timer))
            c->expiring++;
        if (s->key_len > INLINE_KEY && !m->borrow)
            c->bytes += s->key_len;
    }
    return 0;
}

int rota_keyed_check(const struct rota_keyed *m, const char **why)
{
    const char *wheel_why = NULL;

    if (m == NULL) {
        if (why != NULL)
            *why = "NULL map";
        return ROTA_EINVAL; /* a bad argument, not a corrupt map */
    }
    struct census c = {0, 0, sizeof *m + m->held};
    if (m->cur.size == 0 && (m->count != 0 || resizing(m)))
        FAIL("entries or a resize without a table");
    if (m->next.size != 0 && m->old.size != 0)
        FAIL("a table emptied while another migrates");
    if (m->lean != (m->sip || m->cur.size == 0 ? NULL : m->cur.slot) ||
        m->lean_end != (m->lean == NULL ? NULL : m->lean + m->cur.size))
        FAIL("the lean path's view of the table is stale");
    if (m->calm_low != calm_low(m) ||
        m->calm_span != (resizing(m) ? 0 : grow_at(m->cur.size) - m->calm_low))
        FAIL("the resize bounds disagree with the table");
    if (m->next.size != 0 && m->cursor >= m->next.size)
        FAIL("resize state is inconsistent");
    if (m->old.size != 0 && m->cursor >= m->old.size)
        FAIL("migration state is inconsistent");
    if (m->next.size > MAX_SLOTS ||
        (m->next.size != 0 && m->next.size < MIN_SLOTS))
        FAIL("next table size out of range");
    c.bytes += m->next.size * sizeof *m->next.slot;
    if (check_table(m, &m->cur, false, &c, why) != 0 ||
        check_table(m, &m->old, true, &c, why) != 0)
        return ROTA_ECORRUPT;
    if (m->cur.size != 0 && c.entries >= m->cur.size)
        FAIL("no empty slot left to end a probe");
    if (c.entries != m->count)
        FAIL("entry count disagrees with the tables");
    if (c.expiring != m->expiring)
        FAIL("expiring count disagrees with the pending timers");
    /* A drain holds the detached table where this cannot see it: skip the
     * memory comparison inside a drain function. */
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
