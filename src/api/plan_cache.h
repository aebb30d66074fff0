/*
 * plan_cache.h - a context's cache of GEMM plans, keyed by everything a plan
 * depends on besides the context's model: the shape and the thread count it
 * was made for. Fixed memory (sets x PLAN_CACHE_WAYS slots, allocated once,
 * evicting round-robin within a set), safe for any number of concurrent
 * callers: a lookup never takes a lock and never waits for a planner, since
 * planning happens outside the cache and only the copy into a slot is
 * serialised.
 */
#ifndef TESSEL_PLAN_CACHE_H
#define TESSEL_PLAN_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan.h"

/* Ways of one set: a lookup compares at most this many keys. */
enum { PLAN_CACHE_WAYS = 4 };

/* What a plan is a function of, given the model: gemm_shape's fields and
 * the thread count handed to plan_gemm. Plain words, no padding, so that
 * it hashes and compares field by field and fits five words of a slot. */
typedef struct plan_key {
    int64_t M, N, K;
    int64_t prepacked_kc;
    int32_t threads;       /* as plan_gemm uses it: 1..PLAN_MAX_THREADS */
    uint32_t trans;        /* bit 0: shape.transa, bit 1: shape.transb */
} plan_key;

/* The key of plan_gemm(model, shape, threads, ...); threads is clamped to
 * 1..PLAN_MAX_THREADS as plan_gemm clamps it, so equal plans share a key. */
plan_key plan_key_make(const gemm_shape *shape, int threads);

/* A 64-bit mix of every field (the set index is taken from its top bits). */
uint64_t plan_key_hash(const plan_key *key);

typedef struct plan_cache plan_cache;

/* A cache of `sets` x PLAN_CACHE_WAYS plans (sets is rounded up to a power
 * of two) for plans of at most `max_threads` threads: the context's thread
 * count, which bounds every plan made for it. NULL if memory ran out. */
plan_cache *plan_cache_create(int sets, int max_threads);
void plan_cache_destroy(plan_cache *cache);

/* If the cache holds a plan for `key`, copies it into *plan and returns
 * true; else returns false with *plan unspecified. Of the plan's arrays
 * only runs[0 .. nruns) and bounds[0 .. threads] are written (nothing
 * reads past them). A lookup that races with an insert into the same slot
 * may miss, never returns a mix of two plans. Lock-free. */
bool plan_cache_lookup(plan_cache *cache, const plan_key *key, gemm_plan *plan);

/* Stores `plan` as the plan for `key`, evicting the set's oldest entry if
 * it is full. Does nothing if the key is already present (another caller
 * planned the same shape meanwhile) or if plan->threads exceeds the
 * cache's max_threads. Takes the cache's writer lock only for the copy. */
void plan_cache_insert(plan_cache *cache, const plan_key *key, const gemm_plan *plan);

/* Forgets every plan, e.g. when what a miss would plan has changed. */
void plan_cache_clear(plan_cache *cache);

typedef struct plan_cache_stats {
    int capacity;          /* slots: sets x PLAN_CACHE_WAYS */
    int entries;           /* slots holding a plan now */
    uint64_t inserts;      /* plans stored since creation */
    uint64_t evictions;    /* of which replaced another plan */
} plan_cache_stats;

/* A consistent snapshot (taken under the writer lock). */
void plan_cache_get_stats(plan_cache *cache, plan_cache_stats *stats);

#endif /* TESSEL_PLAN_CACHE_H */
