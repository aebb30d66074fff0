/*
 * context.c - creating contexts and the process-wide default one. A context
 * resolves its thread count, takes the process's hardware profile, derives
 * the planner's model from it once, starts its thread pool and makes its
 * plan cache (plans depend on the model and the thread count, so each
 * context has its own). It also reads this machine's calibration and tuned
 * plans from the tuning database; a database it cannot use leaves the
 * analytic model in charge and makes creation return a warning.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "api/api.h"
#include "hw/hw.h"

/* TESSEL_NUM_THREADS if set and valid, else the cores we may run on. */
static tessel_status default_threads(int *threads)
{
    const char *env = getenv("TESSEL_NUM_THREADS");
    if (env && *env) {
        char *end;
        errno = 0;
        long n = strtol(env, &end, 10);
        if (errno || *end || n < 1 || n > PLAN_MAX_THREADS)
            return api_fail(TESSEL_ERR_BAD_ARG,
                            "TESSEL_NUM_THREADS='%s' is not a thread count in 1..%d", env,
                            PLAN_MAX_THREADS);
        *threads = (int)n;
        return TESSEL_OK;
    }
    *threads = hw_default_profile()->cores;
    if (*threads < 1)
        *threads = 1;
    if (*threads > PLAN_MAX_THREADS)
        *threads = PLAN_MAX_THREADS;
    return TESSEL_OK;
}

tessel_status tessel_ctx_create(tessel_ctx **out, int num_threads)
{
    api_clear_error();
    if (!out)
        return api_fail(TESSEL_ERR_NULL, "tessel_ctx_create: ctx pointer is NULL");
    *out = NULL;
    if (num_threads < 0 || num_threads > PLAN_MAX_THREADS)
        return api_fail(TESSEL_ERR_BAD_ARG, "num_threads %d is not in 0..%d", num_threads,
                        PLAN_MAX_THREADS);
    int threads = num_threads;
    if (threads == 0) {
        tessel_status s = default_threads(&threads);
        if (s != TESSEL_OK)
            return s;
    }
    tessel_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return api_fail(TESSEL_ERR_NO_MEMORY, "cannot allocate a context");
    ctx->threads = threads;
    if (plan_model_init(&ctx->model, hw_default_profile()) != 0) {
        free(ctx);
        return api_fail(TESSEL_ERR_INTERNAL, "no ukernel is built for ISA %s",
                        hw_isa_name(hw_default_profile()->isa));
    }
    char db_message[512];
    cost_model cost = ctx->model.cost;
    tune_load_status loaded = tune_load(&ctx->model.hw, threads, &cost, &ctx->tuned, db_message,
                                        sizeof db_message);
    if (plan_model_set_cost(&ctx->model, &cost) != 0) {
        hw_isa isa = ctx->model.hw.isa;
        tune_plans_free(&ctx->tuned);
        free(ctx);
        return api_fail(TESSEL_ERR_INTERNAL, "no ukernel is built for ISA %s", hw_isa_name(isa));
    }
    ctx->plans = plan_cache_create(API_PLAN_CACHE_SETS, threads);
    if (!ctx->plans) {
        tessel_ctx_destroy(ctx);
        return api_fail(TESSEL_ERR_NO_MEMORY, "cannot allocate a plan cache");
    }
    ctx->buffers = rt_buffers_create();
    ctx->pool = rt_pool_create(threads);
    if (!ctx->buffers || !ctx->pool) {
        tessel_ctx_destroy(ctx);
        return api_fail(TESSEL_ERR_NO_MEMORY, "cannot start %d threads", threads);
    }
    *out = ctx;
    if (loaded == TUNE_LOAD_UNUSABLE)
        return api_fail(TESSEL_WARN_DB, "%s", db_message);
    return TESSEL_OK;
}

void tessel_ctx_destroy(tessel_ctx *ctx)
{
    if (!ctx)
        return;
    rt_pool_destroy(ctx->pool);
    rt_buffers_destroy(ctx->buffers);
    plan_cache_destroy(ctx->plans);
    tune_plans_free(&ctx->tuned);
    free(ctx);
}

int tessel_ctx_threads(const tessel_ctx *ctx)
{
    return ctx ? ctx->threads : 0;
}

const plan_model *api_ctx_model(const tessel_ctx *ctx)
{
    return &ctx->model;
}

static tessel_ctx *default_ctx;
static tessel_status default_status;
static char default_error[256];
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void create_default(void)
{
    /* A warning (the tuning database) still gives a working context. */
    default_status = tessel_ctx_create(&default_ctx, 0);
    if (TESSEL_IS_ERROR(default_status)) {
        const char *msg = tessel_last_error();
        int i = 0;
        for (; msg[i] && i < (int)sizeof default_error - 1; i++)
            default_error[i] = msg[i];
        default_error[i] = '\0';
    }
}

tessel_ctx *api_resolve_ctx(tessel_ctx *ctx, tessel_status *status)
{
    *status = TESSEL_OK;
    if (ctx)
        return ctx;
    pthread_once(&default_once, create_default);
    if (!default_ctx)
        *status = api_fail(default_status, "default context: %s", default_error);
    return default_ctx;
}
