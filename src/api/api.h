/*
 * api.h - internals of the API glue: the context (with its plan cache), the
 * thread-local error message, and argument checks shared by the entry
 * points.
 */
#ifndef TESSEL_API_H
#define TESSEL_API_H

#include <stdbool.h>
#include <stdint.h>

#include "api/plan_cache.h"
#include "ops/ops.h"
#include "plan/plan.h"
#include "runtime/runtime.h"
#include "tessel.h"
#include "tune/store.h"

/* Sets of a context's plan cache (PLAN_CACHE_WAYS plans each): room for
 * 2048 plans, as many as the BERT-base linear layers (four weight shapes)
 * at every M up to 512; with all of those live, set conflicts keep about
 * 80% of them. A slot is 0.6 KB at two threads (2.7 KB at 256), and its
 * pages are touched only as sets fill. */
enum { API_PLAN_CACHE_SETS = 512 };

struct tessel_ctx {
    int threads;
    plan_model model;
    rt_pool *pool;
    rt_buffers *buffers;
    /* Plans made with `model` for at most `threads` threads, by shape key. */
    plan_cache *plans;
    /* Plans `tessel tune --shapes` measured fastest on this machine for
     * `threads` threads, read from the tuning database at creation. */
    tune_plans tuned;
};

/* Records a message for tessel_last_error() and returns `status`. */
tessel_status api_fail(tessel_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void api_clear_error(void);

/* The context to use: ctx itself, or the process default (created on first
 * use) when ctx is NULL. On failure returns NULL with the error recorded in
 * *status. */
tessel_ctx *api_resolve_ctx(tessel_ctx *ctx, tessel_status *status);

/* The plan for a shape the cache does not hold: the tuned plan stored for
 * it, else the planner's from the context's model. This is the one place
 * a miss is served (and `tessel explain` asks it too); true if the plan
 * was a tuned one. */
bool api_plan_for(tessel_ctx *ctx, const gemm_shape *shape, int threads, gemm_plan *plan);

/* The model a context plans with (the CLI shows it). */
const plan_model *api_ctx_model(const tessel_ctx *ctx);

#endif /* TESSEL_API_H */
