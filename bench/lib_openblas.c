/*
 * lib_openblas.c - OpenBLAS through cblas_sgemm with CblasRowMajor. OpenBLAS
 * has no strided-batched GEMM in the Debian version (0.3.21), so a batched
 * problem is a loop of cblas_sgemm calls in the caller, which is what an
 * application using it would write. The cblas.h included here must be
 * OpenBLAS's own (bench/run puts its directory first on the include path),
 * and the executable must list libopenblas before libblis so that
 * cblas_sgemm resolves to OpenBLAS.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

#include <cblas.h>

struct bench_call {
    bench_problem p;
    const float *A, *B;
    float *C;
};

static const char *openblas_version(void)
{
    return openblas_get_config();
}

static int openblas_set_threads(int threads)
{
    openblas_set_num_threads(threads);
    return openblas_get_num_threads() == threads ? 0 : -1;
}

/* OpenBLAS's pthread build starts its workers when it loads, and an idle
 * worker is meant to spin for 2^OPENBLAS_THREAD_TIMEOUT cycles and then
 * sleep. On the AMD EPYC host of 2026-12-01 one kept calling
 * sched_yield through whole runs that never called OpenBLAS (39% of the
 * process's samples), taking a core from the threads of the library
 * being timed: tessel at 2 threads fell from 187 to 96 GF/s on
 * 128x2304x768 in some runs. Ending the workers between turns keeps them
 * off; OpenBLAS starts them again on its next threaded call.
 * (blas_thread_shutdown_ is exported by libopenblas, not declared in
 * its cblas.h.) */
void blas_thread_shutdown_(void);

static void openblas_park(void)
{
    blas_thread_shutdown_();
}

static bench_call *openblas_prepare(const bench_problem *p, const float *A,
                                    const float *B, float *C, char *err, size_t errlen)
{
    bench_call *c = malloc(sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->p = *p;
    c->A = A;
    c->B = B;
    c->C = C;
    return c;
}

static int openblas_run(bench_call *c, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const bench_problem *p = &c->p;
    enum CBLAS_TRANSPOSE ta = p->transa == 'T' ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = p->transb == 'T' ? CblasTrans : CblasNoTrans;
    for (int64_t i = 0; i < p->batch; i++)
        cblas_sgemm(CblasRowMajor, ta, tb, (blasint)p->M, (blasint)p->N, (blasint)p->K,
                    1.0f, c->A + i * p->stride_a, (blasint)p->lda,
                    c->B + i * p->stride_b, (blasint)p->ldb,
                    0.0f, c->C + i * p->stride_c, (blasint)p->ldc);
    return 0;
}

static void openblas_release(bench_call *c)
{
    free(c);
}

const bench_lib bench_lib_openblas = {
    .name = "openblas",
    .version = openblas_version,
    .set_threads = openblas_set_threads,
    .park = openblas_park,
    .prepare = openblas_prepare,
    .run = openblas_run,
    .release = openblas_release,
};
