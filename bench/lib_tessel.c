/*
 * lib_tessel.c - tessel as seen by the benchmark: one context per thread
 * count, created when the driver switches threads, and a prepared call that
 * is just the arguments of tessel_sgemm or tessel_sgemm_strided_batched.
 * tessel plans on the first call for a shape and caches the plan; the
 * driver's warm-up call pays for that, so timed calls measure the cached
 * path, as a long-running application would see it.
 *
 * The "tessel-packed" variant packs B once with tessel_sgemm_pack_b when the
 * call is prepared (not timed) and times tessel_sgemm_packed, the path of an
 * inference runtime whose weights are constant; "tessel-fused" times
 * tessel_sgemm_packed_epilogue with a bias and GELU (tanh form) on the same
 * packed B. All share the context.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

#include "tessel.h"

struct bench_call {
    bench_problem p;
    const float *A, *B;
    float *C;
    tessel_packed_b *packed; /* tessel-packed and tessel-fused only */
    float *bias;             /* tessel-fused only */
};

static tessel_ctx *g_ctx;

static const char *tessel_version(void)
{
    return "tessel (this tree)";
}

/* Both variants call this in turn with the same count: the context is only
 * rebuilt when the count changes. */
static int tessel_set_threads(int threads)
{
    if (g_ctx && tessel_ctx_threads(g_ctx) == threads)
        return 0;
    if (g_ctx) {
        tessel_ctx_destroy(g_ctx);
        g_ctx = NULL;
    }
    tessel_status st = tessel_ctx_create(&g_ctx, threads);
    if (TESSEL_IS_ERROR(st)) {
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
    c->packed = NULL;
    c->bias = NULL;
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
    if (TESSEL_IS_ERROR(st)) {
        snprintf(err, errlen, "%s: %s", tessel_status_str(st), tessel_last_error());
        return -1;
    }
    return 0;
}

static void tessel_release(bench_call *c)
{
    if (c && c->packed)
        tessel_packed_destroy(c->packed);
    if (c)
        free(c->bias);
    free(c);
}

/* ---- tessel-packed ---- */

static const char *tessel_packed_version(void)
{
    return "tessel (this tree), tessel_sgemm_pack_b once, then tessel_sgemm_packed";
}

static bench_call *tessel_packed_prepare(const bench_problem *p, const float *A,
                                         const float *B, float *C, char *err, size_t errlen)
{
    if (p->batched) {
        snprintf(err, errlen, "no packed path for batched problems");
        return NULL;
    }
    bench_call *c = tessel_prepare(p, A, B, C, err, errlen);
    if (!c)
        return NULL;
    tessel_status st = tessel_sgemm_pack_b(g_ctx, p->transb, p->K, p->N, B, p->ldb,
                                           &c->packed);
    if (TESSEL_IS_ERROR(st)) {
        snprintf(err, errlen, "tessel_sgemm_pack_b: %s: %s", tessel_status_str(st),
                 tessel_last_error());
        tessel_release(c);
        return NULL;
    }
    return c;
}

static int tessel_packed_run(bench_call *c, char *err, size_t errlen)
{
    const bench_problem *p = &c->p;
    tessel_status st = tessel_sgemm_packed(g_ctx, p->transa, p->M, c->A, p->lda, c->packed,
                                           1.0f, 0.0f, c->C, p->ldc);
    if (TESSEL_IS_ERROR(st)) {
        snprintf(err, errlen, "%s: %s", tessel_status_str(st), tessel_last_error());
        return -1;
    }
    return 0;
}

const bench_lib bench_lib_tessel_packed = {
    .name = "tessel-packed",
    .packed = 1,
    .version = tessel_packed_version,
    .set_threads = tessel_set_threads,
    .prepare = tessel_packed_prepare,
    .run = tessel_packed_run,
    .release = tessel_release,
};

/* ---- tessel-fused ---- */

static const char *tessel_fused_version(void)
{
    return "tessel (this tree), tessel_sgemm_pack_b once, then tessel_sgemm_packed_epilogue "
           "(bias, GELU tanh)";
}

static bench_call *tessel_fused_prepare(const bench_problem *p, const float *A,
                                        const float *B, float *C, char *err, size_t errlen)
{
    bench_call *c = tessel_packed_prepare(p, A, B, C, err, errlen);
    if (!c)
        return NULL;
    c->bias = bench_bias_row(p->N);
    if (!c->bias) {
        snprintf(err, errlen, "out of memory");
        tessel_release(c);
        return NULL;
    }
    return c;
}

static int tessel_fused_run(bench_call *c, char *err, size_t errlen)
{
    const bench_problem *p = &c->p;
    const tessel_epilogue epilogue = {c->bias, TESSEL_ACT_GELU_TANH};
    tessel_status st = tessel_sgemm_packed_epilogue(g_ctx, p->transa, p->M, c->A, p->lda,
                                                    c->packed, 1.0f, 0.0f, c->C, p->ldc,
                                                    &epilogue);
    if (TESSEL_IS_ERROR(st)) {
        snprintf(err, errlen, "%s: %s", tessel_status_str(st), tessel_last_error());
        return -1;
    }
    return 0;
}

const bench_lib bench_lib_tessel_fused = {
    .name = "tessel-fused",
    .packed = 1,
    .fused = 1,
    .version = tessel_fused_version,
    .set_threads = tessel_set_threads,
    .prepare = tessel_fused_prepare,
    .run = tessel_fused_run,
    .release = tessel_release,
};

const bench_lib bench_lib_tessel = {
    .name = "tessel",
    .version = tessel_version,
    .set_threads = tessel_set_threads,
    .prepare = tessel_prepare,
    .run = tessel_run,
    .release = tessel_release,
};
