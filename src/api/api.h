/*
 * api.h - internals of the API glue: the context, the thread-local error
 * message, and argument checks shared by the entry points.
 */
#ifndef TESSEL_API_H
#define TESSEL_API_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/ops.h"
#include "plan/plan.h"
#include "runtime/runtime.h"
#include "tessel.h"

struct tessel_ctx {
    int threads;
    plan_model model;
    rt_pool *pool;
    rt_buffers *buffers;
};

/* Records a message for tessel_last_error() and returns `status`. */
tessel_status api_fail(tessel_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void api_clear_error(void);

/* The context to use: ctx itself, or the process default (created on first
 * use) when ctx is NULL. On failure returns NULL with the error recorded in
 * *status. */
tessel_ctx *api_resolve_ctx(tessel_ctx *ctx, tessel_status *status);

/* The model a context plans with (the CLI shows it). */
const plan_model *api_ctx_model(const tessel_ctx *ctx);

#endif /* TESSEL_API_H */
