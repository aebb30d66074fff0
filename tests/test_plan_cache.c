/*
 * test_plan_cache.c - the plan cache: a hit returns exactly the plan
 * plan_gemm gives for its key; keys that differ in any one field never
 * share an entry (checked in a one-set cache, where every key competes for
 * the same four ways) nor a hash; eviction keeps the entries at capacity
 * and evicted keys plan again correctly; several threads hammering a
 * four-slot cache never see a torn plan; and the GEMM entry points go
 * through their context's cache (a cache shrunk to one set still gives
 * correct results while it thrashes).
 *
 * ThreadSanitizer (make BUILD=build-tsan SAN=-fsanitize=thread
 * build-tsan/tessel_tests; build-tsan/tessel_tests plan_cache) reports
 * nothing here: every word of a slot is a C11 atomic, so the seqlock's
 * overlapping reads and writes are not data races in the language's sense
 * and TSan models the acquire/release pairs that make a rejected copy
 * detectable (see plan_cache.c).
 */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/plan_cache.h"
#include "gemm_check.h"
#include "plan/plan.h"
#include "tessel.h"
#include "test.h"

static plan_model model; /* this machine's */

/* The byte ranges of plan a that two plans must agree on: every byte but
 * the array entries past the counts (runs past nruns, bounds past
 * threads), which a hit does not copy. plan_gemm clears a plan before
 * filling it, so padding compares equal too. Returns the ranges' number,
 * 0 if a's counts are out of range. */
enum { PLAN_RANGES = 3 };
static int compared_ranges(const gemm_plan *a, size_t from[PLAN_RANGES], size_t to[PLAN_RANGES])
{
    if (a->threads < 0 || a->threads > PLAN_MAX_THREADS || a->nruns < 0 ||
        a->nruns > PLAN_MAX_RUNS)
        return 0;
    size_t runs_at = offsetof(gemm_plan, runs), bounds_at = offsetof(gemm_plan, bounds);
    from[0] = 0;
    to[0] = runs_at + sizeof(plan_run) * (size_t)a->nruns;
    from[1] = runs_at + sizeof a->runs;
    to[1] = bounds_at + sizeof(int64_t) * (size_t)(a->threads + 1);
    from[2] = bounds_at + sizeof a->bounds;
    to[2] = sizeof *a;
    return PLAN_RANGES;
}

static bool plans_equal(const gemm_plan *a, const gemm_plan *b)
{
    size_t from[PLAN_RANGES], to[PLAN_RANGES];
    int n = compared_ranges(a, from, to);
    for (int r = 0; r < n; r++)
        if (memcmp((const char *)a + from[r], (const char *)b + from[r], to[r] - from[r]) != 0)
            return false;
    return n > 0;
}

static gemm_shape shape_of(int64_t M, int64_t N, int64_t K, bool transa, bool transb,
                           int64_t prepacked_kc)
{
    return (gemm_shape){.M = M, .N = N, .K = K, .transa = transa, .transb = transb,
                        .prepacked_kc = prepacked_kc};
}

/* A lookup must overwrite everything it reports: start from garbage. */
static bool lookup_into_garbage(plan_cache *c, const plan_key *key, gemm_plan *plan)
{
    memset(plan, 0xA5, sizeof *plan);
    return plan_cache_lookup(c, key, plan);
}

static const int64_t EDGE_SIZES[] = {1, 2, 7, 16, 17, 64, 97, 255, 600, 1296, 2048};
enum { NEDGE = sizeof EDGE_SIZES / sizeof EDGE_SIZES[0] };

static void hits_equal_planner(void)
{
    plan_cache *c = plan_cache_create(256, 4);
    CHECK(c != NULL, "plan_cache_create(256, 4)");
    if (!c)
        return;
    test_rng r = {0x9c0ffee};
    static gemm_plan expected, got;
    int mismatches = 0, misses = 0, cases = 0;
    for (int i = 0; i < 300; i++) {
        int64_t M = EDGE_SIZES[test_rng_range(&r, 0, NEDGE - 1)];
        int64_t N = i % 3 ? EDGE_SIZES[test_rng_range(&r, 0, NEDGE - 1)] : test_rng_range(&r, 1, 5000);
        int64_t K = EDGE_SIZES[test_rng_range(&r, 0, NEDGE - 1)];
        bool ta = test_rng_range(&r, 0, 1), tb = test_rng_range(&r, 0, 1);
        int64_t kc = i % 5 == 0 ? plan_kc(&model, K) : 0;
        int threads = (int)test_rng_range(&r, 1, 4);
        gemm_shape s = shape_of(M, N, K, ta, tb, kc);
        plan_key key = plan_key_make(&s, threads);
        if (lookup_into_garbage(c, &key, &got))
            continue; /* drew a key twice */
        cases++;
        plan_gemm(&model, &s, threads, &expected);
        plan_cache_insert(c, &key, &expected);
        bool hit = lookup_into_garbage(c, &key, &got);
        misses += !hit;
        if (hit && !plans_equal(&expected, &got) && ++mismatches <= 3)
            CHECK(false, "hit for %lldx%lldx%lld %c%c kc %lld, %d threads differs from plan_gemm",
                  (long long)M, (long long)N, (long long)K, ta ? 'T' : 'N', tb ? 'T' : 'N',
                  (long long)kc, threads);
        /* Planning again gives the same plan, so a cached one stands for it. */
        gemm_plan *again = malloc(sizeof *again);
        if (again) {
            plan_gemm(&model, &s, threads, again);
            CHECK(plans_equal(&expected, again), "plan_gemm is deterministic");
            free(again);
        }
    }
    CHECK(cases > 200, "%d distinct keys drawn", cases);
    CHECK(misses == 0, "%d of %d lookups right after their insert missed", misses, cases);
    CHECK(mismatches == 0, "%d of %d hits differ from plan_gemm", mismatches, cases);
    plan_cache_destroy(c);
}

/* One key per field changed by one step. */
enum { NFIELDS = 7 };

static plan_key key_varied(int field)
{
    gemm_shape s = shape_of(100, 200, 300, false, false, 0);
    int threads = 2;
    switch (field) {
    case 0: s.M++; break;
    case 1: s.N++; break;
    case 2: s.K++; break;
    case 3: s.transa = true; break;
    case 4: s.transb = true; break;
    case 5: s.prepacked_kc = 64; break;
    case 6: threads = 3; break;
    default: break;
    }
    return plan_key_make(&s, threads);
}

/* A plan marked with `tag` (in predicted_seconds) to tell entries apart
 * even where two keys would plan alike. */
static void tagged_plan(const plan_key *key, double tag, gemm_plan *plan)
{
    gemm_shape s = shape_of(key->M, key->N, key->K, key->trans & 1, key->trans & 2,
                            key->prepacked_kc);
    plan_gemm(&model, &s, key->threads, plan);
    plan->predicted_seconds = tag;
}

static void distinct_keys(void)
{
    static gemm_plan plan, got;
    plan_key base = key_varied(-1);
    static const char *field_names[NFIELDS] = {"M", "N", "K", "transa", "transb",
                                               "prepacked_kc", "threads"};
    for (int f = 0; f < NFIELDS; f++) {
        plan_key other = key_varied(f);
        CHECK(plan_key_hash(&base) != plan_key_hash(&other), "hash ignores %s", field_names[f]);
        /* One set: both keys land in the same four ways, so only the full
         * comparison tells them apart. */
        plan_cache *c = plan_cache_create(1, 4);
        CHECK(c != NULL, "one-set cache");
        if (!c)
            return;
        tagged_plan(&base, 1.0, &plan);
        plan_cache_insert(c, &base, &plan);
        CHECK(!plan_cache_lookup(c, &other, &got), "key differing in %s hits the base entry",
              field_names[f]);
        tagged_plan(&other, 2.0, &plan);
        plan_cache_insert(c, &other, &plan);
        bool hit_base = lookup_into_garbage(c, &base, &got);
        CHECK(hit_base && got.predicted_seconds == 1.0, "base key after %s variant: %s",
              field_names[f], hit_base ? "wrong plan" : "miss");
        bool hit_other = lookup_into_garbage(c, &other, &got);
        CHECK(hit_other && got.predicted_seconds == 2.0, "%s variant: %s", field_names[f],
              hit_other ? "wrong plan" : "miss");
        plan_cache_destroy(c);
    }

    /* plan_key_make mirrors plan_gemm's clamping: equal plans, equal keys. */
    gemm_shape s = shape_of(5, 6, 7, true, false, 0);
    plan_key k0 = plan_key_make(&s, 0), k1 = plan_key_make(&s, 1);
    plan_key kbig = plan_key_make(&s, 100000), kmax = plan_key_make(&s, PLAN_MAX_THREADS);
    CHECK(memcmp(&k0, &k1, sizeof k0) == 0, "threads 0 is keyed as 1");
    CHECK(memcmp(&kbig, &kmax, sizeof k0) == 0, "threads past the maximum key as the maximum");
    CHECK(k1.trans == 1, "transa is bit 0 of trans");

    /* Single-field changes over many random keys never share a hash. */
    test_rng r = {0x4a5b};
    int same = 0;
    for (int i = 0; i < 20000; i++) {
        gemm_shape a = shape_of(test_rng_range(&r, 0, 1 << 20), test_rng_range(&r, 0, 1 << 20),
                                test_rng_range(&r, 0, 1 << 20), test_rng_range(&r, 0, 1),
                                test_rng_range(&r, 0, 1), test_rng_range(&r, 0, 1) ? 224 : 0);
        plan_key ka = plan_key_make(&a, (int)test_rng_range(&r, 1, PLAN_MAX_THREADS - 1));
        plan_key kb = ka;
        switch (i % 6) {
        case 0: kb.M ^= 1; break;
        case 1: kb.N += 1; break;
        case 2: kb.K -= 1; break;
        case 3: kb.trans ^= 2; break;
        case 4: kb.prepacked_kc += 16; break;
        default: kb.threads += 1; break;
        }
        same += plan_key_hash(&ka) == plan_key_hash(&kb);
    }
    CHECK(same == 0, "%d of 20000 single-field changes kept the hash", same);

    /* The BERT-base linear layers at every M up to 512 (2048 keys) spread
     * over 512 sets about as a random function would: mean 4 a set. */
    enum { SETS = 512 };
    static int per_set[SETS];
    memset(per_set, 0, sizeof per_set);
    static const int64_t nk[4][2] = {{768, 768}, {3072, 768}, {768, 3072}, {2304, 768}};
    for (int p = 0; p < 4; p++)
        for (int64_t M = 1; M <= 512; M++) {
            gemm_shape b = shape_of(M, nk[p][0], nk[p][1], false, false, 0);
            plan_key k = plan_key_make(&b, 2);
            per_set[plan_key_hash(&k) & (SETS - 1)]++;
        }
    int fullest = 0, empty = 0;
    for (int i = 0; i < SETS; i++) {
        fullest = per_set[i] > fullest ? per_set[i] : fullest;
        empty += per_set[i] == 0;
    }
    /* Poisson(4): about 9 empty sets, the fullest around 11. */
    CHECK(fullest <= 14 && empty <= 25, "BERT keys over %d sets: fullest %d, %d empty", SETS,
          fullest, empty);
}

static void eviction(void)
{
    enum { KEYS = 100 };
    plan_cache *c = plan_cache_create(2, 2);
    CHECK(c != NULL, "two-set cache");
    if (!c)
        return;
    static gemm_plan expected[KEYS], got;
    plan_key keys[KEYS];
    for (int i = 0; i < KEYS; i++) {
        gemm_shape s = shape_of(i + 1, 64 + i % 7, 96, i % 2, false, 0);
        keys[i] = plan_key_make(&s, 1 + i % 2);
        plan_gemm(&model, &s, keys[i].threads, &expected[i]);
        plan_cache_insert(c, &keys[i], &expected[i]);
        plan_cache_stats st;
        plan_cache_get_stats(c, &st);
        if (st.entries > st.capacity) {
            CHECK(false, "%d entries in a cache of %d", st.entries, st.capacity);
            break;
        }
    }
    plan_cache_stats st;
    plan_cache_get_stats(c, &st);
    CHECK(st.capacity == 2 * PLAN_CACHE_WAYS, "capacity %d", st.capacity);
    CHECK(st.entries == st.capacity, "entries %d of %d after %d inserts", st.entries,
          st.capacity, KEYS);
    CHECK(st.inserts == KEYS && st.evictions == KEYS - (uint64_t)st.capacity,
          "inserts %llu, evictions %llu", (unsigned long long)st.inserts,
          (unsigned long long)st.evictions);

    /* Round-robin within a set keeps the last four keys of each set. */
    int hits = 0, wrong = 0;
    bool missed[KEYS];
    for (int i = 0; i < KEYS; i++) {
        bool hit = lookup_into_garbage(c, &keys[i], &got);
        missed[i] = !hit;
        hits += hit;
        wrong += hit && !plans_equal(&expected[i], &got);
    }
    CHECK(hits == st.capacity, "%d hits among %d keys in a cache of %d", hits, KEYS,
          st.capacity);
    CHECK(!missed[KEYS - 1], "the last key inserted was evicted");
    CHECK(wrong == 0, "%d hits returned another key's plan", wrong);

    /* Evicted keys plan again and are served right after. */
    int replanned = 0;
    wrong = 0;
    static gemm_plan fresh;
    for (int i = 0; i < KEYS; i++) {
        if (!missed[i])
            continue;
        gemm_shape s = shape_of(keys[i].M, keys[i].N, keys[i].K, keys[i].trans & 1,
                                keys[i].trans & 2, keys[i].prepacked_kc);
        plan_gemm(&model, &s, keys[i].threads, &fresh);
        plan_cache_insert(c, &keys[i], &fresh);
        replanned++;
        wrong += !lookup_into_garbage(c, &keys[i], &got) || !plans_equal(&expected[i], &got);
    }
    CHECK(replanned == KEYS - st.capacity && wrong == 0, "%d of %d re-planned keys wrong", wrong,
          replanned);
    plan_cache_get_stats(c, &st);
    CHECK(st.entries == st.capacity, "still %d entries of %d", st.entries, st.capacity);

    /* A present key is not stored twice. */
    int present = KEYS - 1;
    while (present > 0 && !plan_cache_lookup(c, &keys[present], &got))
        present--;
    uint64_t inserts = st.inserts;
    plan_cache_insert(c, &keys[present], &expected[present]);
    plan_cache_get_stats(c, &st);
    CHECK(st.inserts == inserts, "inserting a present key stored it again");

    /* A plan for more threads than the cache was made for is not stored. */
    gemm_shape big = shape_of(2048, 2048, 2048, false, false, 0);
    plan_key big_key = plan_key_make(&big, 8);
    plan_gemm(&model, &big, 8, &fresh);
    if (fresh.threads > 2) {
        plan_cache_insert(c, &big_key, &fresh);
        CHECK(!plan_cache_lookup(c, &big_key, &got), "an %d-thread plan in a 2-thread cache",
              fresh.threads);
    }

    plan_cache_clear(c);
    plan_cache_get_stats(c, &st);
    hits = 0;
    for (int i = 0; i < KEYS; i++)
        hits += plan_cache_lookup(c, &keys[i], &got);
    CHECK(st.entries == 0 && hits == 0, "after clear: %d entries, %d hits", st.entries, hits);
    plan_cache_insert(c, &keys[3], &expected[3]);
    CHECK(lookup_into_garbage(c, &keys[3], &got) && plans_equal(&expected[3], &got),
          "insert after clear");
    plan_cache_destroy(c);
}

/* ---- concurrency: threads share a one-set cache (four slots) ----
 * Most lookups miss, so writers rewrite the slots readers are copying all
 * the time. With the sequence check in plan_cache_lookup disabled, this
 * test reports dozens of wrong plans per thread on the 2-vCPU VM; with it,
 * none. */

enum { HAMMER_THREADS = 4, HAMMER_KEYS = 24, HAMMER_ITERATIONS = 20000, HAMMER_MAX_THREADS = 8 };

static plan_key hammer_keys[HAMMER_KEYS];
static gemm_plan hammer_expected[HAMMER_KEYS];

typedef struct {
    plan_cache *cache;
    uint64_t seed;
    long hits, misses, wrong;
    int first_wrong_key;
    long first_wrong_byte; /* of the first wrong hit: where it differs */
} hammer_worker;

/* The first byte at which two plans differ where plans_equal looks, or
 * -1 (also when a's counts are out of range). */
static long first_difference(const gemm_plan *a, const gemm_plan *b)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    size_t from[PLAN_RANGES], to[PLAN_RANGES];
    int n = compared_ranges(a, from, to);
    for (int r = 0; r < n; r++)
        for (size_t i = from[r]; i < to[r]; i++)
            if (x[i] != y[i])
                return (long)i;
    return -1;
}

/* Looks up random keys; a hit must equal the plan made beforehand for its
 * key, a miss plans the shape here and inserts it. Only records: the main
 * thread checks. */
static void *hammer(void *opaque)
{
    hammer_worker *w = opaque;
    test_rng r = {w->seed};
    gemm_plan *got = malloc(sizeof *got);
    if (!got)
        return NULL;
    for (int it = 0; it < HAMMER_ITERATIONS; it++) {
        int i = (int)test_rng_range(&r, 0, HAMMER_KEYS - 1);
        const plan_key *k = &hammer_keys[i];
        memset(got, 0x5A, sizeof *got);
        if (plan_cache_lookup(w->cache, k, got)) {
            w->hits++;
            if (!plans_equal(&hammer_expected[i], got) && w->wrong++ == 0) {
                w->first_wrong_key = i;
                w->first_wrong_byte = first_difference(&hammer_expected[i], got);
            }
            continue;
        }
        w->misses++;
        gemm_shape s = shape_of(k->M, k->N, k->K, k->trans & 1, k->trans & 2, k->prepacked_kc);
        plan_gemm(&model, &s, k->threads, got);
        plan_cache_insert(w->cache, k, got);
    }
    free(got);
    return NULL;
}

static void concurrent_readers_and_writers(void)
{
    /* Keys whose plans differ widely: thread counts 1..8 (so different
     * lengths of bounds), dot, packed-B and in-place plans, tall and short
     * tessellations. */
    static const int64_t Ms[] = {1, 5, 17, 100, 333, 600, 1296, 2048};
    for (int i = 0; i < HAMMER_KEYS; i++) {
        gemm_shape s = shape_of(Ms[i % 8], i % 3 == 0 ? 3072 : 768 + 64 * i, 768 + (i % 4) * 37,
                                i % 5 == 1, i % 4 == 1, i % 7 == 3 ? 224 : 0);
        int threads = 1 + i % HAMMER_MAX_THREADS;
        hammer_keys[i] = plan_key_make(&s, threads);
        plan_gemm(&model, &s, threads, &hammer_expected[i]);
    }
    plan_cache *c = plan_cache_create(1, HAMMER_MAX_THREADS);
    CHECK(c != NULL, "one-set cache");
    if (!c)
        return;
    hammer_worker workers[HAMMER_THREADS];
    pthread_t ids[HAMMER_THREADS];
    bool started[HAMMER_THREADS];
    for (int t = 0; t < HAMMER_THREADS; t++) {
        workers[t] = (hammer_worker){.cache = c, .seed = 0x7000u + (uint64_t)t};
        started[t] = pthread_create(&ids[t], NULL, hammer, &workers[t]) == 0;
        CHECK(started[t], "cannot start hammer thread %d", t);
    }
    long hits = 0, misses = 0;
    for (int t = 0; t < HAMMER_THREADS; t++) {
        if (!started[t])
            continue;
        pthread_join(ids[t], NULL);
        const hammer_worker *w = &workers[t];
        hits += w->hits;
        misses += w->misses;
        CHECK(w->wrong == 0,
              "thread %d: %ld of %ld hits were not the key's plan (first: key %d, from byte "
              "%ld of the plan; predicted_seconds at %zu, choice at %zu)",
              t, w->wrong, w->hits, w->first_wrong_key, w->first_wrong_byte,
              offsetof(gemm_plan, predicted_seconds), offsetof(gemm_plan, choice));
    }
    plan_cache_stats st;
    plan_cache_get_stats(c, &st);
    CHECK(hits > 0 && misses > 0, "hammer: %ld hits, %ld misses", hits, misses);
    CHECK(st.entries <= st.capacity && st.evictions > 0,
          "hammer: %d entries of %d, %llu evictions", st.entries, st.capacity,
          (unsigned long long)st.evictions);
    /* Afterwards, a quiet cache serves what it holds exactly. */
    static gemm_plan got;
    int wrong = 0;
    for (int i = 0; i < HAMMER_KEYS; i++)
        wrong += lookup_into_garbage(c, &hammer_keys[i], &got) &&
                 !plans_equal(&hammer_expected[i], &got);
    CHECK(wrong == 0, "after the hammer, %d hits were wrong", wrong);
    plan_cache_destroy(c);
}

/* ---- the API goes through its context's cache ---- */

static int entries_of(tessel_ctx *ctx)
{
    plan_cache_stats st;
    plan_cache_get_stats(ctx->plans, &st);
    return st.entries;
}

static bool run_case(tessel_ctx *ctx, gemm_case *gc, uint64_t seed, const char *label)
{
    char why[800];
    bool ok = gemm_run_case(ctx, gc, seed, why, sizeof why);
    CHECK(ok, "%s: %s", label, why);
    return ok;
}

static void api_uses_cache(void)
{
    tessel_ctx *ctx;
    tessel_status s = tessel_ctx_create(&ctx, 2);
    CHECK(s == TESSEL_OK, "tessel_ctx_create: %s", tessel_status_str(s));
    if (s != TESSEL_OK)
        return;
    CHECK(ctx->plans != NULL && entries_of(ctx) == 0, "a new context has an empty cache");

    gemm_case gc = gemm_case_tight('N', 'T', 37, 41, 29, 1.5f, 0.5f);
    run_case(ctx, &gc, 1, "first call");
    CHECK(entries_of(ctx) == 1, "one shape: %d entries", entries_of(ctx));
    run_case(ctx, &gc, 2, "second call, a hit");
    CHECK(entries_of(ctx) == 1, "same shape again: %d entries", entries_of(ctx));
    /* A batch of small matrices is planned for one thread: its own key. */
    gemm_case_batch(&gc, 3, 5);
    run_case(ctx, &gc, 3, "batched");
    CHECK(entries_of(ctx) == 2, "batched: %d entries", entries_of(ctx));

    /* Packed weights: keyed with the packing's kc, one entry per M. */
    enum { K = 70, N = 50, M = 9 };
    static float A[M * K], B[K * N], C[M * N], C_plain[M * N];
    for (int i = 0; i < M * K; i++)
        A[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    for (int i = 0; i < K * N; i++)
        B[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    tessel_packed_b *packed = NULL;
    s = tessel_sgemm_pack_b(ctx, 'N', K, N, B, N, &packed);
    CHECK(s == TESSEL_OK, "pack_b: %s", tessel_status_str(s));
    if (s == TESSEL_OK) {
        int before = entries_of(ctx);
        for (int rep = 0; rep < 2; rep++)
            for (int m = 1; m <= M; m += 4) {
                s = tessel_sgemm_packed(ctx, 'N', m, A, K, packed, 1.0f, 0.0f, C, N);
                CHECK(s == TESSEL_OK, "packed M %d: %s", m, tessel_status_str(s));
                s = tessel_sgemm(ctx, 'N', 'N', m, N, K, 1.0f, A, K, B, N, 0.0f, C_plain, N);
                CHECK(s == TESSEL_OK, "plain M %d: %s", m, tessel_status_str(s));
                float worst = 0.0f;
                for (int i = 0; i < m * N; i++)
                    worst = fmaxf(worst, fabsf(C[i] - C_plain[i]));
                CHECK(worst < 1e-4f, "packed M %d differs from plain by %g", m, (double)worst);
            }
        /* Three M values, each a packed and a plain key. */
        CHECK(entries_of(ctx) == before + 6, "packed calls: %d entries, expected %d",
              entries_of(ctx), before + 6);
        tessel_packed_destroy(packed);
    }

    /* A cache of one set (four plans) thrashes on random shapes; every
     * result must still be right. */
    plan_cache *tiny = plan_cache_create(1, ctx->threads);
    CHECK(tiny != NULL, "tiny cache");
    if (tiny) {
        plan_cache_destroy(ctx->plans);
        ctx->plans = tiny;
        test_rng r = {0xcafe};
        int failures = 0;
        for (int i = 0; i < 60 && failures < 3; i++) {
            gemm_case rc;
            /* Revisit a few shapes so that hits happen between evictions. */
            test_rng shapes = {0x51 + (uint64_t)(i % 9)};
            gemm_random_case(&shapes, 2e5, &rc);
            failures += !run_case(ctx, &rc, test_rng_next(&r), "one-set cache");
        }
        plan_cache_stats st;
        plan_cache_get_stats(ctx->plans, &st);
        CHECK(st.evictions > 0 && st.entries <= st.capacity,
              "one-set cache in use: %d entries, %llu evictions", st.entries,
              (unsigned long long)st.evictions);
    }
    tessel_ctx_destroy(ctx);

    /* The default context has a cache too. */
    tessel_ctx *def = api_resolve_ctx(NULL, &s);
    CHECK(def != NULL && def->plans != NULL, "default context has a plan cache");
}

void suite_plan_cache(void)
{
    CHECK(plan_model_init(&model, hw_default_profile()) == 0, "model of this machine");
    hits_equal_planner();
    distinct_keys();
    eviction();
    concurrent_readers_and_writers();
    api_uses_cache();
}
