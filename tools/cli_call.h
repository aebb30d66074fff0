/*
 * cli_call.h - the call `tessel gemm` and `tessel explain` make for a
 * problem: its row-major operands (cli_call.c) and the plan and schedule
 * the library takes for it, found the way a real call finds them. Split
 * from cli.h, which the other commands include, because it needs the
 * library's internal plan and operator types.
 */
#ifndef TESSEL_CLI_CALL_H
#define TESSEL_CLI_CALL_H

#include <stdbool.h>
#include <stdint.h>

#include "cli.h"
#include "ops/ops.h"

/* One stored matrix of each operand, leading dimension = stored row length
 * (at least 1, as the API asks of empty matrices too); the matrices of a
 * batch lie one after another, stride_* floats apart. */
typedef struct cli_operands {
    int64_t a_rows, a_cols, b_rows, b_cols;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;
} cli_operands;

cli_operands cli_describe_operands(const cli_problem *p);

/* What a call on ctx does with the problem (B pre-packed where `packed`
 * is given): the shape key and thread count it plans for, the plan (a
 * tuned one from the database before the model's), and how the operator
 * runs the batch on it; or that the call runs no plan at all. */
typedef struct cli_call_plan {
    bool direct;          /* a few multiply-adds: the plain loop, no plan (ops.h) */
    gemm_shape shape;
    int plan_threads;
    gemm_plan plan;
    bool tuned;
    op_schedule run;
} cli_call_plan;

void cli_plan_call(tessel_ctx *ctx, const cli_problem *p, const tessel_packed_b *packed,
                   cli_call_plan *out);

/* One call on the problem, as a program makes it: with `packed`, the
 * pre-packed call (tessel_sgemm_packed_epilogue; `epilogue` NULL for none,
 * B unused); else the strided batched call on the problem's batch. */
tessel_status cli_call_gemm(tessel_ctx *ctx, const cli_problem *p, const cli_operands *o,
                            float alpha, const float *A, const float *B,
                            const tessel_packed_b *packed, const tessel_epilogue *epilogue,
                            float beta, float *C);

#endif /* TESSEL_CLI_CALL_H */
