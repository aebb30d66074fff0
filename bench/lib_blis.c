/*
 * lib_blis.c - BLIS through its native typed API, bli_sgemm, which takes a
 * row stride and a column stride per matrix: row-major is rs = ld, cs = 1,
 * and a transposed operand is described as stored and flagged with
 * BLIS_TRANSPOSE. The native API avoids BLIS's cblas_sgemm, which would clash
 * with OpenBLAS's. Like OpenBLAS, BLIS 0.9 has no batched GEMM in its typed
 * API, so a batched problem is a loop in the caller.
 */
/* blis.h uses POSIX barriers, which strict C11 hides */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

#include <blis.h>

struct bench_call {
    bench_problem p;
    float *A, *B, *C;
};

static const char *blis_version(void)
{
    static char buf[96];
#if defined(BLIS_ENABLE_OPENMP)
    const char *rt = "OpenMP";
#elif defined(BLIS_ENABLE_PTHREADS)
    const char *rt = "pthreads";
#else
    const char *rt = "single-threaded";
#endif
    snprintf(buf, sizeof buf, "BLIS %s (%s, %s)", bli_info_get_version_str(), rt,
             bli_arch_string(bli_arch_query_id()));
    return buf;
}

static int blis_set_threads(int threads)
{
    bli_thread_set_num_threads(threads);
    return bli_thread_get_num_threads() == threads ? 0 : -1;
}

static bench_call *blis_prepare(const bench_problem *p, const float *A,
                                const float *B, float *C, char *err, size_t errlen)
{
    bench_call *c = malloc(sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->p = *p;
    /* bli_sgemm takes non-const pointers but only reads A and B. */
    c->A = (float *)(uintptr_t)A;
    c->B = (float *)(uintptr_t)B;
    c->C = C;
    return c;
}

static int blis_run(bench_call *c, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const bench_problem *p = &c->p;
    trans_t ta = p->transa == 'T' ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
    trans_t tb = p->transb == 'T' ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE;
    float one = 1.0f, zero = 0.0f;
    for (int64_t i = 0; i < p->batch; i++)
        bli_sgemm(ta, tb, p->M, p->N, p->K, &one,
                  c->A + i * p->stride_a, p->lda, 1,
                  c->B + i * p->stride_b, p->ldb, 1,
                  &zero, c->C + i * p->stride_c, p->ldc, 1);
    return 0;
}

static void blis_release(bench_call *c)
{
    free(c);
}

const bench_lib bench_lib_blis = {
    .name = "blis",
    .version = blis_version,
    .set_threads = blis_set_threads,
    .prepare = blis_prepare,
    .run = blis_run,
    .release = blis_release,
};
