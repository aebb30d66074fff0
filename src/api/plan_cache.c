/*
 * plan_cache.c - the plan cache: a set-associative table of fixed size whose
 * slots are sequence locks. Lookups are lock-free and copy a plan out of its
 * slot, retrying nothing: a slot that changed under the reader counts as a
 * miss, and the caller plans the shape itself (under a microsecond to a few,
 * and the same plan). Writers, which only ever copy an already-made plan
 * in, serialise on one mutex; planning never happens under it.
 *
 * Memory ordering (C11). Every word of a slot is an atomic, so readers and
 * writers never race in the language's sense. The textbook seqlock copies
 * with plain loads between an acquire and a release fence; that is a data
 * race by the letter of C11, ThreadSanitizer reports it, and TSan does not
 * model standalone fences (GCC warns under -Wtsan). Ordering each word
 * instead costs nothing on x86 and lets TSan check the protocol. A slot's
 * first word is its sequence count, even when stable, odd while a writer is
 * inside it:
 *
 *   writer (holding the mutex):        reader:
 *     s = seq (relaxed)                  s0 = seq (acquire); odd: skip slot
 *     seq = s + 1 (relaxed)              words (each an acquire load)
 *     words (each a release store)       s1 = seq (relaxed); accept iff s1 == s0
 *     seq = s + 2 (release)
 *
 * Why an accepted copy is never torn: (a) every word the writer that stored
 * s0 wrote happens-before the reader's acquire load of s0, so the reader sees
 * those values or newer ones; (b) if it saw any newer word, it read it with
 * an acquire load from a later writer's release store, which therefore
 * synchronises with it: that writer's earlier store of an odd count
 * (>= s0 + 1) happens-before the reader's later load of s1, so s1 != s0 and
 * the copy is rejected. The acquire loads also keep the s1 load after every
 * word load. Writers see each other's counts through the mutex. On x86 the
 * acquire loads and release stores are plain moves: the protocol costs the
 * two count loads and the comparison. Counts are 64 bits and never wrap.
 *
 * Slot layout, in 64-bit words: the count, the key (5 words; an empty slot
 * has thread count 0, which no key has), the plan's fixed fields (all but
 * its two arrays), bounds[0 .. max_threads], runs[0 .. PLAN_MAX_RUNS). A
 * plan is ~2.6 KB because its arrays have room for PLAN_MAX_THREADS threads
 * and PLAN_MAX_RUNS runs; a slot keeps bounds for the context's thread
 * count only, and a hit copies the fixed fields, threads + 1 bounds and
 * nruns runs (about 30 words for a two-thread plan, not 330): copying the
 * whole plan would be most of a hit's cost.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api/plan_cache.h"

typedef _Atomic unsigned long long slot_word;

_Static_assert(sizeof(unsigned long long) == 8, "slot words are 64 bits");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2,
               "slot words must be lock-free atomics (plain memory, zero from calloc)");
_Static_assert(sizeof(plan_key) == 40, "plan_key is five words without padding");
_Static_assert(offsetof(gemm_plan, runs) % 8 == 0 && sizeof(plan_run) % 8 == 0 &&
                   offsetof(gemm_plan, bounds) % 8 == 0 && sizeof(gemm_plan) % 8 == 0,
               "a plan is copied as whole words");
_Static_assert(offsetof(gemm_plan, runs) < offsetof(gemm_plan, bounds),
               "the fixed fields are: before runs, between runs and bounds, after bounds");

enum {
    KEY_WORDS = 5,
    SEQ_WORD = 0,
    KEY_WORD = 1,
    PLAN_WORD = KEY_WORD + KEY_WORDS,
    /* The word of the key holding the thread count: 0 marks an empty slot. */
    KEY_THREADS_WORD = KEY_WORD + 4,
    WORDS_PER_LINE = 64 / 8,
    MAX_SETS = 1 << 20
};

/* The plan's fixed fields: three byte ranges around its two arrays. */
typedef struct {
    size_t at, words;
} plan_segment;

enum {
    RUNS_END = offsetof(gemm_plan, runs) + sizeof(((gemm_plan *)0)->runs),
    BOUNDS_END = offsetof(gemm_plan, bounds) + sizeof(((gemm_plan *)0)->bounds)
};
static const plan_segment FIXED[] = {
    {0, offsetof(gemm_plan, runs) / 8},
    {RUNS_END, (offsetof(gemm_plan, bounds) - RUNS_END) / 8},
    {BOUNDS_END, (sizeof(gemm_plan) - BOUNDS_END) / 8},
};
enum { NFIXED = sizeof FIXED / sizeof FIXED[0], RUN_WORDS = sizeof(plan_run) / 8 };

struct plan_cache {
    slot_word *slots;         /* sets * PLAN_CACHE_WAYS slots, 64-byte aligned */
    void *allocation;
    uint64_t set_mask;        /* sets - 1 */
    size_t slot_words;        /* slot stride, whole cache lines */
    size_t fixed_words;       /* the plan's fixed fields */
    size_t bounds_word, runs_word; /* where the arrays start in a slot */
    int max_threads;
    /* Writers only, under `writer`: */
    pthread_mutex_t writer;
    unsigned char *next_victim; /* per set: the way to evict next */
    int entries;
    uint64_t inserts, evictions;
};

plan_key plan_key_make(const gemm_shape *shape, int threads)
{
    if (threads < 1)
        threads = 1;
    if (threads > PLAN_MAX_THREADS)
        threads = PLAN_MAX_THREADS;
    return (plan_key){.M = shape->M, .N = shape->N, .K = shape->K,
                      .prepacked_kc = shape->prepacked_kc, .threads = threads,
                      .trans = (shape->transa ? 1u : 0u) | (shape->transb ? 2u : 0u)};
}

static void key_to_words(const plan_key *key, uint64_t words[KEY_WORDS])
{
    words[0] = (uint64_t)key->M;
    words[1] = (uint64_t)key->N;
    words[2] = (uint64_t)key->K;
    words[3] = (uint64_t)key->prepacked_kc;
    words[4] = (uint64_t)(uint32_t)key->threads | (uint64_t)key->trans << 32;
}

/* Each field times its own odd constant (a bijection of the field), the
 * products xored together, then MurmurHash3's finaliser (a bijection that
 * spreads every bit over the low bits the set index is taken from): keys
 * that differ in one field never share a hash. The five multiplies are
 * independent, so the whole hash is about the finaliser's latency. */
uint64_t plan_key_hash(const plan_key *key)
{
    static const uint64_t ODD[KEY_WORDS] = {0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                                            0x165667b19e3779f9ull, 0xd6e8feb86659fd93ull,
                                            0xa0761d6478bd642full};
    uint64_t words[KEY_WORDS];
    key_to_words(key, words);
    uint64_t h = 0;
    for (int i = 0; i < KEY_WORDS; i++)
        h ^= words[i] * ODD[i];
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

plan_cache *plan_cache_create(int sets, int max_threads)
{
    if (max_threads < 1 || max_threads > PLAN_MAX_THREADS)
        return NULL;
    int rounded = 1;
    while (rounded < sets && rounded < MAX_SETS)
        rounded *= 2;
    plan_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->set_mask = (uint64_t)rounded - 1;
    c->max_threads = max_threads;
    for (int i = 0; i < NFIXED; i++)
        c->fixed_words += FIXED[i].words;
    c->bounds_word = PLAN_WORD + c->fixed_words;
    c->runs_word = c->bounds_word + (size_t)max_threads + 1;
    size_t words = c->runs_word + PLAN_MAX_RUNS * RUN_WORDS;
    /* Whole lines per slot: a writer in one slot never disturbs readers of
     * its neighbours. */
    c->slot_words = (words + WORDS_PER_LINE - 1) / WORDS_PER_LINE * WORDS_PER_LINE;
    size_t nslots = (size_t)rounded * PLAN_CACHE_WAYS;
    /* calloc: zero is an empty slot with count 0, and pages no shape ever
     * hashes to are never touched. */
    c->allocation = calloc(nslots * c->slot_words + WORDS_PER_LINE, sizeof(slot_word));
    c->next_victim = calloc((size_t)rounded, 1);
    if (!c->allocation || !c->next_victim || pthread_mutex_init(&c->writer, NULL) != 0) {
        free(c->allocation);
        free(c->next_victim);
        free(c);
        return NULL;
    }
    uintptr_t at = (uintptr_t)c->allocation;
    c->slots = (slot_word *)((at + 63) & ~(uintptr_t)63);
    return c;
}

void plan_cache_destroy(plan_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->writer);
    free(c->allocation);
    free(c->next_victim);
    free(c);
}

static slot_word *set_of(const plan_cache *c, const plan_key *key)
{
    uint64_t set = plan_key_hash(key) & c->set_mask;
    return c->slots + set * PLAN_CACHE_WAYS * c->slot_words;
}

static size_t set_index(const plan_cache *c, const slot_word *set)
{
    return (size_t)(set - c->slots) / (PLAN_CACHE_WAYS * c->slot_words);
}

/* ---- readers ---- */

static void load_words(slot_word *from, unsigned char *to, size_t words)
{
    for (size_t i = 0; i < words; i++) {
        uint64_t w = atomic_load_explicit(&from[i], memory_order_acquire);
        memcpy(to + i * 8, &w, 8);
    }
}

static bool slot_has_key(slot_word *slot, const uint64_t want[KEY_WORDS])
{
    for (int i = 0; i < KEY_WORDS; i++)
        if (atomic_load_explicit(&slot[KEY_WORD + i], memory_order_acquire) != want[i])
            return false;
    return true;
}

bool plan_cache_lookup(plan_cache *c, const plan_key *key, gemm_plan *plan)
{
    uint64_t want[KEY_WORDS];
    key_to_words(key, want);
    slot_word *set = set_of(c, key);
    for (int way = 0; way < PLAN_CACHE_WAYS; way++) {
        slot_word *slot = set + way * c->slot_words;
        uint64_t seq = atomic_load_explicit(&slot[SEQ_WORD], memory_order_acquire);
        if (seq & 1)
            continue; /* being rewritten: what it held is leaving */
        if (!slot_has_key(slot, want))
            continue;
        slot_word *words = slot + PLAN_WORD;
        for (int i = 0; i < NFIXED; i++) {
            load_words(words, (unsigned char *)plan + FIXED[i].at, FIXED[i].words);
            words += FIXED[i].words;
        }
        /* A torn copy may hold any lengths: bound them before using them;
         * the count check below rejects such a copy anyway. */
        int threads = plan->threads, nruns = plan->nruns;
        if (threads < 0 || threads > c->max_threads)
            threads = c->max_threads;
        if (nruns < 0 || nruns > PLAN_MAX_RUNS)
            nruns = PLAN_MAX_RUNS;
        load_words(slot + c->bounds_word, (unsigned char *)plan->bounds, (size_t)threads + 1);
        load_words(slot + c->runs_word, (unsigned char *)plan->runs, (size_t)nruns * RUN_WORDS);
        if (atomic_load_explicit(&slot[SEQ_WORD], memory_order_relaxed) == seq)
            return true;
        /* Rewritten while we copied: the key has left this slot, and a key
         * is never in two slots. */
        return false;
    }
    return false;
}

/* ---- writers (holding c->writer) ---- */

static void store_words(slot_word *to, const unsigned char *from, size_t words)
{
    for (size_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, from + i * 8, 8);
        atomic_store_explicit(&to[i], w, memory_order_release);
    }
}

/* Opens a slot for writing (odd count) and returns the count to close it
 * with. */
static uint64_t begin_write(slot_word *slot)
{
    uint64_t seq = atomic_load_explicit(&slot[SEQ_WORD], memory_order_relaxed);
    atomic_store_explicit(&slot[SEQ_WORD], seq + 1, memory_order_relaxed);
    return seq + 2;
}

static void end_write(slot_word *slot, uint64_t seq)
{
    atomic_store_explicit(&slot[SEQ_WORD], seq, memory_order_release);
}

static bool slot_is_empty(slot_word *slot)
{
    return atomic_load_explicit(&slot[KEY_THREADS_WORD], memory_order_relaxed) == 0;
}

void plan_cache_insert(plan_cache *c, const plan_key *key, const gemm_plan *plan)
{
    if (plan->threads < 0 || plan->threads > c->max_threads || plan->nruns < 0 ||
        plan->nruns > PLAN_MAX_RUNS || key->threads < 1)
        return;
    uint64_t want[KEY_WORDS];
    key_to_words(key, want);
    slot_word *set = set_of(c, key);

    pthread_mutex_lock(&c->writer);
    slot_word *target = NULL;
    for (int way = 0; way < PLAN_CACHE_WAYS; way++) {
        slot_word *slot = set + way * c->slot_words;
        if (slot_has_key(slot, want)) {
            pthread_mutex_unlock(&c->writer);
            return;
        }
        if (!target && slot_is_empty(slot))
            target = slot;
    }
    if (target) {
        c->entries++;
    } else {
        /* Round-robin: the oldest insert of the set goes. Cheaper than a
         * use bit, which would make every hit write to shared memory. */
        size_t s = set_index(c, set);
        target = set + c->next_victim[s] * c->slot_words;
        c->next_victim[s] = (unsigned char)((c->next_victim[s] + 1) % PLAN_CACHE_WAYS);
        c->evictions++;
    }
    c->inserts++;

    uint64_t done = begin_write(target);
    for (int i = 0; i < KEY_WORDS; i++)
        atomic_store_explicit(&target[KEY_WORD + i], want[i], memory_order_release);
    slot_word *words = target + PLAN_WORD;
    for (int i = 0; i < NFIXED; i++) {
        store_words(words, (const unsigned char *)plan + FIXED[i].at, FIXED[i].words);
        words += FIXED[i].words;
    }
    store_words(target + c->bounds_word, (const unsigned char *)plan->bounds,
                (size_t)plan->threads + 1);
    store_words(target + c->runs_word, (const unsigned char *)plan->runs,
                (size_t)plan->nruns * RUN_WORDS);
    end_write(target, done);
    pthread_mutex_unlock(&c->writer);
}

void plan_cache_clear(plan_cache *c)
{
    pthread_mutex_lock(&c->writer);
    size_t nslots = (size_t)(c->set_mask + 1) * PLAN_CACHE_WAYS;
    for (size_t i = 0; i < nslots; i++) {
        slot_word *slot = c->slots + i * c->slot_words;
        if (slot_is_empty(slot))
            continue;
        uint64_t done = begin_write(slot);
        atomic_store_explicit(&slot[KEY_THREADS_WORD], 0, memory_order_release);
        end_write(slot, done);
    }
    memset(c->next_victim, 0, (size_t)(c->set_mask + 1));
    c->entries = 0;
    pthread_mutex_unlock(&c->writer);
}

void plan_cache_get_stats(plan_cache *c, plan_cache_stats *stats)
{
    pthread_mutex_lock(&c->writer);
    stats->capacity = (int)((c->set_mask + 1) * PLAN_CACHE_WAYS);
    stats->entries = c->entries;
    stats->inserts = c->inserts;
    stats->evictions = c->evictions;
    pthread_mutex_unlock(&c->writer);
}
