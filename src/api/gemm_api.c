/*
 * gemm_api.c - the GEMM entry points: check every argument, reject what
 * would read or write outside the caller's matrices or race on the output,
 * find the plan for the call's shape key in the context's plan cache (or
 * make it and store it), then hand a call with the transposes folded into
 * strides and its plan to the operator. Nothing is written before all
 * checks pass.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/api.h"

/* The elements a stored rows x cols matrix with leading dimension ld
 * spans, or -1 if that overflows what memory can hold. */
static int64_t span_elements(int64_t rows, int64_t cols, int64_t ld)
{
    if (rows == 0 || cols == 0)
        return 0;
    const int64_t max_elements = PTRDIFF_MAX / (int64_t)sizeof(float);
    if (rows - 1 > (max_elements - cols) / ld)
        return -1;
    return (rows - 1) * ld + cols;
}

typedef struct {
    const char *name;   /* "A", "B", "C" */
    const float *ptr;
    int64_t rows, cols; /* as stored */
    int64_t ld, stride, span;
} matrix_arg;

static bool is_trans(char t)
{
    return t == 'T' || t == 't';
}

static tessel_status check_trans(const char *name, char t)
{
    if (t == 'N' || t == 'n' || t == 'T' || t == 't')
        return TESSEL_OK;
    return api_fail(TESSEL_ERR_BAD_TRANS, "%s is '%c' (0x%02x); expected 'N' or 'T'", name,
                    t >= 32 && t < 127 ? t : '?', (unsigned char)t);
}

/* Leading dimension, NULL, size and batch extent of one matrix. */
static tessel_status check_matrix(matrix_arg *m, int64_t batch)
{
    int64_t need = m->cols > 1 ? m->cols : 1;
    if (m->ld < need)
        return api_fail(TESSEL_ERR_BAD_LD, "ld%c %lld < %lld, the row length of %s",
                        m->name[0] + 'a' - 'A', (long long)m->ld, (long long)need, m->name);
    m->span = span_elements(m->rows, m->cols, m->ld);
    if (m->span < 0)
        return api_fail(TESSEL_ERR_BAD_SIZE, "%s (%lld x %lld, ld %lld) is larger than memory",
                        m->name, (long long)m->rows, (long long)m->cols, (long long)m->ld);
    if (batch == 0)
        m->span = 0; /* an empty batch holds no matrix: NULL is fine */
    if (m->span == 0)
        return TESSEL_OK;
    if (!m->ptr)
        return api_fail(TESSEL_ERR_NULL, "%s is NULL but holds %lld x %lld elements", m->name,
                        (long long)m->rows, (long long)m->cols);
    if (m->stride < 0)
        return api_fail(TESSEL_ERR_BAD_SIZE, "stride_%c %lld is negative",
                        m->name[0] + 'a' - 'A', (long long)m->stride);
    if (batch > 1) {
        const int64_t max_elements = PTRDIFF_MAX / (int64_t)sizeof(float);
        if (m->stride > 0 && batch - 1 > (max_elements - m->span) / m->stride)
            return api_fail(TESSEL_ERR_BAD_SIZE, "batch %lld of %s at stride %lld is larger "
                            "than memory", (long long)batch, m->name, (long long)m->stride);
        m->span += (batch - 1) * m->stride;
    }
    return TESSEL_OK;
}

static bool overlaps(const matrix_arg *x, const matrix_arg *y)
{
    if (x->span == 0 || y->span == 0)
        return false;
    uintptr_t x0 = (uintptr_t)x->ptr, x1 = x0 + (uintptr_t)x->span * sizeof(float);
    uintptr_t y0 = (uintptr_t)y->ptr, y1 = y0 + (uintptr_t)y->span * sizeof(float);
    return x0 < y1 && y0 < x1;
}

/* Batch outputs must not share elements: either whole matrices apart, or
 * interleaved column blocks within the same rows (attention heads stored
 * side by side in one [M, heads * N] matrix). */
static bool batch_outputs_disjoint(const matrix_arg *c, int64_t batch)
{
    if (batch <= 1 || c->rows == 0 || c->cols == 0)
        return true;
    int64_t one = span_elements(c->rows, c->cols, c->ld);
    if (c->stride >= one)
        return true;
    return c->stride >= c->cols && (batch - 1) * c->stride + c->cols <= c->ld;
}

bool api_plan_for(tessel_ctx *ctx, const gemm_shape *shape, int threads, gemm_plan *plan)
{
    /* A tuned plan was measured for the context's thread count; a call
     * planned for fewer threads (small batched matrices) takes the model's. */
    const plan_choice *tuned = threads == ctx->threads ? tune_plans_find(&ctx->tuned, shape) : NULL;
    if (tuned)
        plan_gemm_choice(&ctx->model, shape, threads, tuned, plan);
    else
        plan_gemm(&ctx->model, shape, threads, plan);
    return tuned != NULL;
}

/* The plan for a shape key: from the cache, or made and stored. Two
 * callers missing on the same shape both plan it (the same plan; the
 * second insert is dropped) rather than one waiting for the other. */
static void cached_plan(tessel_ctx *ctx, const gemm_shape *shape, int threads,
                        gemm_plan *plan)
{
    plan_key key = plan_key_make(shape, threads);
    if (plan_cache_lookup(ctx->plans, &key, plan))
        return;
    api_plan_for(ctx, shape, threads, plan);
    plan_cache_insert(ctx->plans, &key, plan);
}

/* Hands a checked call and its plan to the operator on ctx (or the default
 * context). */
static tessel_status run_gemm(tessel_ctx *ctx, const gemm_call *call, int64_t batch,
                              int64_t stride_a, int64_t stride_b, int64_t stride_c)
{
    tessel_status s;
    tessel_ctx *resolved = api_resolve_ctx(ctx, &s);
    if (!resolved)
        return s;
    if (call->packed && call->packed->isa != resolved->model.hw.isa)
        return api_fail(TESSEL_ERR_BAD_ARG, "B was packed for %s, this context runs %s",
                        hw_isa_name(call->packed->isa), hw_isa_name(resolved->model.hw.isa));
    if (op_sgemm_is_direct(call, batch)) {
        op_sgemm_direct(call, batch, stride_a, stride_b, stride_c);
        return TESSEL_OK;
    }
    op_env env = {.model = &resolved->model, .pool = resolved->pool,
                  .buffers = resolved->buffers, .threads = resolved->threads};
    gemm_shape shape;
    int threads;
    op_gemm_key(&env, call, batch, &shape, &threads);
    gemm_plan plan;
    cached_plan(resolved, &shape, threads, &plan);
    s = op_sgemm_plan(&env, call, &plan, batch, stride_a, stride_b, stride_c);
    if (s == TESSEL_ERR_NO_MEMORY)
        return api_fail(s, "cannot allocate packing buffers for %lld x %lld x %lld",
                        (long long)call->M, (long long)call->N, (long long)call->K);
    return s;
}

static tessel_status gemm_checked(tessel_ctx *ctx, char transa, char transb, int64_t M,
                                  int64_t N, int64_t K, float alpha, const float *A,
                                  int64_t lda, int64_t stride_a, const float *B, int64_t ldb,
                                  int64_t stride_b, float beta, float *C, int64_t ldc,
                                  int64_t stride_c, int64_t batch)
{
    api_clear_error();
    tessel_status s;
    if ((s = check_trans("transa", transa)) || (s = check_trans("transb", transb)))
        return s;
    if (M < 0 || N < 0 || K < 0 || batch < 0)
        return api_fail(TESSEL_ERR_BAD_SIZE, "negative size: M %lld, N %lld, K %lld, batch %lld",
                        (long long)M, (long long)N, (long long)K, (long long)batch);
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX)
        return api_fail(TESSEL_ERR_BAD_SIZE, "M, N and K must each be below 2^31");
    bool ta = is_trans(transa), tb = is_trans(transb);
    matrix_arg a = {"A", A, ta ? K : M, ta ? M : K, lda, stride_a, 0};
    matrix_arg b = {"B", B, tb ? N : K, tb ? K : N, ldb, stride_b, 0};
    matrix_arg c = {"C", C, M, N, ldc, stride_c, 0};
    if ((s = check_matrix(&a, batch)) || (s = check_matrix(&b, batch)) ||
        (s = check_matrix(&c, batch)))
        return s;
    if (!batch_outputs_disjoint(&c, batch))
        return api_fail(TESSEL_ERR_ALIAS, "C matrices of the batch overlap (stride_c %lld)",
                        (long long)stride_c);
    bool reads_ab = K > 0 && alpha != 0.0f;
    if (reads_ab && (overlaps(&c, &a) || overlaps(&c, &b)))
        return api_fail(TESSEL_ERR_ALIAS, "C overlaps %s", overlaps(&c, &a) ? "A" : "B");

    gemm_call call = {
        .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
        .A = A, .a_rs = ta ? 1 : lda, .a_cs = ta ? lda : 1,
        .B = B, .b_rs = tb ? 1 : ldb, .b_cs = tb ? ldb : 1,
        .C = C, .ldc = ldc,
    };
    return run_gemm(ctx, &call, batch, stride_a, stride_b, stride_c);
}

tessel_status tessel_sgemm(tessel_ctx *ctx, char transa, char transb, int64_t M, int64_t N,
                           int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                           int64_t ldb, float beta, float *C, int64_t ldc)
{
    return gemm_checked(ctx, transa, transb, M, N, K, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc,
                        0, 1);
}

tessel_status tessel_sgemm_strided_batched(tessel_ctx *ctx, char transa, char transb,
                                           int64_t M, int64_t N, int64_t K, float alpha,
                                           const float *A, int64_t lda, int64_t stride_a,
                                           const float *B, int64_t ldb, int64_t stride_b,
                                           float beta, float *C, int64_t ldc, int64_t stride_c,
                                           int64_t batch)
{
    return gemm_checked(ctx, transa, transb, M, N, K, alpha, A, lda, stride_a, B, ldb, stride_b,
                        beta, C, ldc, stride_c, batch);
}

tessel_status tessel_sgemm_pack_b(tessel_ctx *ctx, char transb, int64_t K, int64_t N,
                                  const float *B, int64_t ldb, tessel_packed_b **packed)
{
    api_clear_error();
    tessel_status s;
    if (!packed)
        return api_fail(TESSEL_ERR_NULL, "tessel_sgemm_pack_b: packed pointer is NULL");
    *packed = NULL;
    if ((s = check_trans("transb", transb)))
        return s;
    if (K < 0 || N < 0)
        return api_fail(TESSEL_ERR_BAD_SIZE, "negative size: K %lld, N %lld", (long long)K,
                        (long long)N);
    if (K > INT32_MAX || N > INT32_MAX)
        return api_fail(TESSEL_ERR_BAD_SIZE, "K and N must each be below 2^31");
    bool tb = is_trans(transb);
    matrix_arg b = {"B", B, tb ? N : K, tb ? K : N, ldb, 0, 0};
    if ((s = check_matrix(&b, 1)))
        return s;
    tessel_ctx *resolved = api_resolve_ctx(ctx, &s);
    if (!resolved)
        return s;
    *packed = op_pack_b(&resolved->model, B, tb ? 1 : ldb, tb ? ldb : 1, K, N);
    if (!*packed)
        return api_fail(TESSEL_ERR_NO_MEMORY, "cannot allocate %lld x %lld packed floats",
                        (long long)K, (long long)N);
    return TESSEL_OK;
}

void tessel_packed_destroy(tessel_packed_b *packed)
{
    op_packed_free(packed);
}

tessel_status tessel_sgemm_packed_epilogue(tessel_ctx *ctx, char transa, int64_t M,
                                           const float *A, int64_t lda,
                                           const tessel_packed_b *packed, float alpha,
                                           float beta, float *C, int64_t ldc,
                                           const tessel_epilogue *epilogue)
{
    api_clear_error();
    tessel_status s;
    if (!packed)
        return api_fail(TESSEL_ERR_NULL, "packed B is NULL");
    if ((s = check_trans("transa", transa)))
        return s;
    if (M < 0 || M > INT32_MAX)
        return api_fail(TESSEL_ERR_BAD_SIZE, "M %lld is not in 0..2^31-1", (long long)M);
    int64_t K = packed->K, N = packed->N;
    bool ta = is_trans(transa);
    matrix_arg a = {"A", A, ta ? K : M, ta ? M : K, lda, 0, 0};
    matrix_arg c = {"C", C, M, N, ldc, 0, 0};
    if ((s = check_matrix(&a, 1)) || (s = check_matrix(&c, 1)))
        return s;
    if (K > 0 && alpha != 0.0f && overlaps(&c, &a))
        return api_fail(TESSEL_ERR_ALIAS, "C overlaps A");
    if (epilogue) {
        if (epilogue->activation < TESSEL_ACT_NONE || epilogue->activation > TESSEL_ACT_GELU_ERF)
            return api_fail(TESSEL_ERR_BAD_ARG, "unknown activation %d",
                            (int)epilogue->activation);
        if (epilogue->bias) {
            matrix_arg bias = {"bias", epilogue->bias, 1, N, N > 1 ? N : 1, 0, 0};
            if ((s = check_matrix(&bias, 1)))
                return s;
            if (overlaps(&c, &bias))
                return api_fail(TESSEL_ERR_ALIAS, "C overlaps the bias");
        }
    }
    gemm_call call = {
        .M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
        .A = A, .a_rs = ta ? 1 : lda, .a_cs = ta ? lda : 1,
        .packed = packed, .C = C, .ldc = ldc, .epilogue = epilogue,
    };
    return run_gemm(ctx, &call, 1, 0, 0, 0);
}

tessel_status tessel_sgemm_packed(tessel_ctx *ctx, char transa, int64_t M, const float *A,
                                  int64_t lda, const tessel_packed_b *packed, float alpha,
                                  float beta, float *C, int64_t ldc)
{
    return tessel_sgemm_packed_epilogue(ctx, transa, M, A, lda, packed, alpha, beta, C, ldc,
                                        NULL);
}
