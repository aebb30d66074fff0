/*
 * bench.h - the seam between the benchmark driver and the libraries it
 * times. Each library (tessel and every peer) lives in its own bench/lib_*.c
 * and fills in a bench_lib: how to set its thread count, and how to turn one
 * problem on given buffers into a prepared call that can be run many times.
 * Keeping each library in its own translation unit keeps their headers apart:
 * OpenBLAS and BLIS both ship a cblas.h and both export cblas_sgemm, so no
 * file may include both. Every matrix is row-major.
 *
 * A library may also come as a "packed" variant (tessel-packed,
 * onednn-packed): its prepare puts the constant B into the library's own
 * layout once, as an inference runtime does with weights, and its run
 * multiplies by the packed copy. The driver gives those only the problems of
 * its pre-packed-weights mode (see gemm_bench.c). A "fused" variant
 * (tessel-fused, onednn-fused) is a packed one whose call also adds a bias
 * row and applies GELU (tanh form) as C is written: the whole of a
 * transformer's FFN-up layer, Y = gelu(X W + b), in one call.
 */
#ifndef TESSEL_BENCH_H
#define TESSEL_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* One problem: C[M,N] = op(A)[M,K] x op(B)[K,N], `batch` times, matrices
 * packed tightly (lda is the stored row length of A, and so on). `batched`
 * is set for problems from bgemm.txt, which go through each library's
 * batched path even for batch 1. */
typedef struct bench_problem {
    int64_t batch, M, N, K;
    char transa, transb;
    int batched;
    int64_t lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c;
} bench_problem;

/* Fills in the leading dimensions and batch strides from the sizes and the
 * transposes. */
static inline void bench_problem_layout(bench_problem *p)
{
    p->lda = p->transa == 'T' ? p->M : p->K;
    p->ldb = p->transb == 'T' ? p->K : p->N;
    p->ldc = p->N;
    p->stride_a = p->M * p->K;
    p->stride_b = p->K * p->N;
    p->stride_c = p->M * p->N;
}

/* The fused variants' bias row of n floats, the same in every library:
 * small values of both signs, so that GELU sees both sides of its bend.
 * NULL if memory ran out; the caller frees it. */
static inline float *bench_bias_row(int64_t n)
{
    float *bias = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t j = 0; bias && j < n; j++)
        bias[j] = 0.125f * (float)(j % 9 - 4);
    return bias;
}

/* A problem bound to its buffers, ready to run. What it holds is private to
 * the library that made it (oneDNN keeps a primitive here). */
typedef struct bench_call bench_call;

typedef struct bench_lib {
    const char *name;
    /* Nonzero for a pre-packed-weights variant: prepare packs B (not timed),
     * run uses the packed copy. Such a variant only runs plain (not batched)
     * problems with transb 'N'. */
    int packed;
    /* Nonzero for a fused variant (packed too): C = gelu_tanh(A B + bias),
     * bias = bench_bias_row(N). Its result is compared with the other fused
     * variant's, not with the plain product. */
    int fused;
    /* A one-line version string, e.g. "oneDNN 2.6.3 (OpenMP)". */
    const char *(*version)(void);
    /* Sets the threads later calls use; returns 0 on success. */
    int (*set_threads)(int threads);
    /* Binds a problem to buffers; NULL on failure, with a reason in err. */
    bench_call *(*prepare)(const bench_problem *p, const float *A,
                           const float *B, float *C, char *err, size_t errlen);
    /* Runs the call to completion; returns 0 on success, else writes err. */
    int (*run)(bench_call *call, char *err, size_t errlen);
    /* Stops the library's idle worker threads from taking cores while
     * other libraries are timed (NULL: they need no help). Called at the
     * start and after each of the library's turns; its next call may pay
     * for starting them again. */
    void (*park)(void);
    void (*release)(bench_call *call);
} bench_lib;

extern const bench_lib bench_lib_tessel;
extern const bench_lib bench_lib_openblas;
extern const bench_lib bench_lib_blis;
extern const bench_lib bench_lib_onednn;
extern const bench_lib bench_lib_tessel_packed;
extern const bench_lib bench_lib_onednn_packed;
extern const bench_lib bench_lib_tessel_fused;
extern const bench_lib bench_lib_onednn_fused;

#endif /* TESSEL_BENCH_H */
