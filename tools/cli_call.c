/*
 * cli_call.c - the operands of a `tessel gemm` or `tessel explain`
 * problem, the plan a real call makes for it, and the call (cli_call.h).
 */
#include "cli_call.h"

#include "api/api.h"

cli_operands cli_describe_operands(const cli_problem *p)
{
    bool ta = p->transa == 'T', tb = p->transb == 'T';
    cli_operands o = {.a_rows = ta ? p->K : p->M, .a_cols = ta ? p->M : p->K,
                      .b_rows = tb ? p->N : p->K, .b_cols = tb ? p->K : p->N};
    o.lda = o.a_cols > 1 ? o.a_cols : 1;
    o.ldb = o.b_cols > 1 ? o.b_cols : 1;
    o.ldc = p->N > 1 ? p->N : 1;
    o.stride_a = o.a_rows * o.lda;
    o.stride_b = o.b_rows * o.ldb;
    o.stride_c = p->M * o.ldc;
    return o;
}

/* The same shape key and thread count as the API's (op_gemm_key reads the
 * strides the API derives from the transposes, so a 1-wide transposed
 * operand counts as not transposed, as it does there), and the same
 * sources, a tuned plan before the planner's. */
void cli_plan_call(tessel_ctx *ctx, const cli_problem *p, const tessel_packed_b *packed,
                   cli_call_plan *out)
{
    cli_operands o = cli_describe_operands(p);
    bool ta = p->transa == 'T', tb = p->transb == 'T';
    op_env env = {.model = api_ctx_model(ctx), .threads = tessel_ctx_threads(ctx)};
    gemm_call call = {.M = p->M, .N = p->N, .K = p->K, .alpha = 1.0f,
                      .a_rs = ta ? 1 : o.lda, .a_cs = ta ? o.lda : 1,
                      .b_rs = tb ? 1 : o.ldb, .b_cs = tb ? o.ldb : 1, .ldc = o.ldc,
                      .packed = packed};
    out->direct = !packed && op_sgemm_is_direct(&call, p->batch);
    op_gemm_key(&env, &call, p->batch, &out->shape, &out->plan_threads);
    out->tuned = api_plan_for(ctx, &out->shape, out->plan_threads, &out->plan);
    op_gemm_schedule(&env, &call, &out->plan, p->batch, &out->run);
}

tessel_status cli_call_gemm(tessel_ctx *ctx, const cli_problem *p, const cli_operands *o,
                            float alpha, const float *A, const float *B,
                            const tessel_packed_b *packed, const tessel_epilogue *epilogue,
                            float beta, float *C)
{
    if (packed)
        return tessel_sgemm_packed_epilogue(ctx, p->transa, p->M, A, o->lda, packed, alpha,
                                            beta, C, o->ldc, epilogue);
    return tessel_sgemm_strided_batched(ctx, p->transa, p->transb, p->M, p->N, p->K, alpha, A,
                                        o->lda, o->stride_a, B, o->ldb, o->stride_b, beta, C,
                                        o->ldc, o->stride_c, p->batch);
}
