/*
 * lib_tessel.c - tessel as seen by the benchmark: one context per thread
 * count, created when the driver switches threads, and a prepared call that
 * is just the arguments of tessel_sgemm or tessel_sgemm_strided_batched.
 * tessel plans on the first call for a shape and caches the plan; the
 * driver's warm-up call pays for that, so timed calls measure the cached
 * path, as a long-running application would see it.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

#include "tessel.h"

struct bench_call {
    bench_problem p;
    const float *A, *B;
    float *C;
};

static tessel_ctx *g_ctx;

static const char *tessel_version(void)
{
    return "tessel (this tree)";
}

static int tessel_set_threads(int threads)
{
    if (g_ctx) {
        tessel_ctx_destroy(g_ctx);
        g_ctx = NULL;
    }
    tessel_status st = tessel_ctx_create(&g_ctx, threads);
    if (st != TESSEL_OK) {
        fprintf(stderr, "tessel_ctx_create(%d): %s: %s\n", threads,
                tessel_status_str(st), tessel_last_error());
        return -1;
    }
    return 0;
}

static bench_call *tessel_prepare(const bench_problem *p, const float *A,
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

static int tessel_run(bench_call *c, char *err, size_t errlen)
{
    const bench_problem *p = &c->p;
    tessel_status st;
    if (p->batched)
        st = tessel_sgemm_strided_batched(g_ctx, p->transa, p->transb, p->M, p->N, p->K,
                                          1.0f, c->A, p->lda, p->stride_a,
                                          c->B, p->ldb, p->stride_b,
                                          0.0f, c->C, p->ldc, p->stride_c, p->batch);
    else
        st = tessel_sgemm(g_ctx, p->transa, p->transb, p->M, p->N, p->K,
                          1.0f, c->A, p->lda, c->B, p->ldb, 0.0f, c->C, p->ldc);
    if (st != TESSEL_OK) {
        snprintf(err, errlen, "%s: %s", tessel_status_str(st), tessel_last_error());
        return -1;
    }
    return 0;
}

static void tessel_release(bench_call *c)
{
    free(c);
}

const bench_lib bench_lib_tessel = {
    .name = "tessel",
    .version = tessel_version,
    .set_threads = tessel_set_threads,
    .prepare = tessel_prepare,
    .run = tessel_run,
    .release = tessel_release,
};
