/*
 * ref.h - plain, obviously-correct reference implementations of every op.
 *
 * They loop in the textbook order and accumulate in double, so the fast
 * paths can be checked against them with an error bound that scales with
 * K. They check nothing: callers pass valid arguments.
 */
#ifndef TESSEL_REF_H
#define TESSEL_REF_H

#include <stdint.h>

#include "tessel.h"

/* C = alpha * op(A) op(B) + beta * C, row-major; beta == 0 never reads C. */
void ref_sgemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
               float alpha, const float *A, int64_t lda,
               const float *B, int64_t ldb,
               float beta, float *C, int64_t ldc);

/* C[i][j] = act(C[i][j] + bias[j]) over an M x N block (bias may be
 * NULL), in double: the reference for fused epilogues. */
void ref_epilogue(int64_t M, int64_t N, float *C, int64_t ldc, const float *bias,
                  tessel_activation activation);

#endif /* TESSEL_REF_H */
