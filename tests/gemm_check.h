/*
 * gemm_check.h - the differential GEMM checker shared by the gemm and
 * concurrency suites: a case describes one (possibly batched) call with its
 * leading dimensions and strides, gemm_random_case draws one from a seeded
 * generator, and gemm_run_case runs it through tessel and judges the result
 * against ref_sgemm. The runner never calls CHECK itself, so that worker
 * threads can use it and leave the counting to the main thread.
 */
#ifndef TESSEL_GEMM_CHECK_H
#define TESSEL_GEMM_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessel.h"
#include "test.h"

typedef struct gemm_case {
    char transa, transb;
    int64_t M, N, K;
    float alpha, beta;
    int64_t lda, ldb, ldc;
    bool batched;  /* call tessel_sgemm_strided_batched, else tessel_sgemm */
    int64_t batch; /* 1 when not batched */
    int64_t stride_a, stride_b, stride_c;
    bool nan_c;    /* C's blocks start as NaN (only meaningful with beta 0) */
} gemm_case;

/* A plain, unbatched case with the smallest valid leading dimensions. */
gemm_case gemm_case_tight(char transa, char transb, int64_t M, int64_t N, int64_t K,
                          float alpha, float beta);

/* Turns `gc` into a batched case of `batch` matrices stored one after the
 * other (`gap` spare elements between them). */
void gemm_case_batch(gemm_case *gc, int64_t batch, int64_t gap);

/* Multiply-adds the reference spends on a case (at least one per element). */
double gemm_case_work(const gemm_case *gc);

/* Draws a valid case whose work is at most max_work: sizes from the edge
 * set {0, 1, 2, 3, 7, 16, 17, 31, 64, 97, 255, 256, 600} or random, any
 * transposes, padded or odd leading dimensions, a mix of alpha and beta,
 * NaN in C under beta 0, and sometimes a strided batch (stride 0 inputs,
 * interleaved [M, batch * N] outputs). */
void gemm_random_case(test_rng *r, double max_work, gemm_case *gc);

/* One line naming the case and the threads of ctx ("default" for NULL). */
void gemm_case_describe(const gemm_case *gc, const tessel_ctx *ctx, char *out, size_t len);

/* Fills the matrices from `seed`, runs the case on ctx and compares every
 * element of C with ref_sgemm under the bound
 *   |c - ref| <= 2 (K + 2) 2^-24 (|alpha| (|A||B|)_ij + |beta C0_ij|) + 1e-30,
 * exactly when K == 0 or alpha == 0; checks the status, that
 * tessel_last_error() is "", that C's padding and A and B are unchanged.
 * Returns true if all holds, else false with the worst finding in `why`. */
bool gemm_run_case(tessel_ctx *ctx, const gemm_case *gc, uint64_t seed, char *why,
                   size_t why_len);

#endif /* TESSEL_GEMM_CHECK_H */
