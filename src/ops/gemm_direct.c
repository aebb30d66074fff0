/*
 * gemm_direct.c - GEMMs too small to plan: C = alpha op(A) op(B) + beta C
 * by the plain triple loop. For a handful of multiply-adds, finding a plan
 * in the cache, packing the one masked B panel and calling a ukernel on
 * an edge tile cost far more than the products: a 1x1x1 call took about
 * 0.3 us that way, most of it bookkeeping.
 */
#include <stdbool.h>

#include "ops/ops.h"

/* Up to this many multiply-adds in the whole call (all of a batch), the
 * loop beats planning. Time a call, 1 thread, loop / planned: 1x1x1 66 /
 * 285 ns, 4x4x4 173 / 340, 2x2x16 137 / 437, 1x1x64 120 / 771; past it
 * the planned path soon wins (8x8x4 471 / 366, 8x8x16 643 / 242). */
static const int64_t DIRECT_MAX_FMAS = 64;

bool op_sgemm_is_direct(const gemm_call *call, int64_t batch)
{
    if (call->packed || call->epilogue || batch > DIRECT_MAX_FMAS || call->M > DIRECT_MAX_FMAS ||
        call->N > DIRECT_MAX_FMAS || call->K > DIRECT_MAX_FMAS)
        return false; /* and the product below cannot overflow */
    return batch * call->M * call->N * call->K <= DIRECT_MAX_FMAS;
}

void op_sgemm_direct(const gemm_call *call, int64_t batch, int64_t stride_a, int64_t stride_b,
                     int64_t stride_c)
{
    for (int64_t m = 0; m < batch; m++) {
        const float *A = call->A + m * stride_a, *B = call->B + m * stride_b;
        float *C = call->C + m * stride_c;
        bool product = call->K > 0 && call->alpha != 0.0f; /* else A, B are not read */
        for (int64_t i = 0; i < call->M; i++)
            for (int64_t j = 0; j < call->N; j++) {
                float *c = C + i * call->ldc + j;
                if (!product) {
                    *c = call->beta == 0.0f ? 0.0f : call->beta * *c;
                    continue;
                }
                float sum = 0.0f;
                for (int64_t p = 0; p < call->K; p++)
                    sum += A[i * call->a_rs + p * call->a_cs] * B[p * call->b_rs + j * call->b_cs];
                /* beta 0 never reads C, which may hold NaN. */
                *c = call->beta == 0.0f ? call->alpha * sum : call->alpha * sum + call->beta * *c;
            }
    }
}
