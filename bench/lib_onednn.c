/*
 * lib_onednn.c - oneDNN, two ways. Plain problems go through dnnl_sgemm
 * (row-major, 'N'/'T', like tessel_sgemm). Batched problems go through the
 * matmul primitive with 3-D memory descriptors (batch, rows, cols) whose
 * strides describe the strided batch and any transpose; the primitive is
 * created in prepare, outside the timing loop, and a timed run is one
 * execution followed by dnnl_stream_wait. Debian's libdnnl uses OpenMP, so
 * the thread count is omp_set_num_threads; oneDNN may fix a primitive's
 * threading when it is created, which is why the driver sets threads before
 * preparing. Written against the oneDNN 2.x C API (Debian bookworm ships
 * 2.6); 3.x changed how descriptors are created.
 *
 * The "onednn-packed" variant is oneDNN's pre-packed-weights path: a 2-D
 * matmul primitive (src M x K, weights K x N, dst M x N) whose weights
 * descriptor says dnnl_format_tag_any, so oneDNN chooses its own blocked
 * layout. prepare creates the primitive, asks it for that layout, and
 * reorders the plain B into it once with a reorder primitive; a timed run is
 * the execution and dnnl_stream_wait. Without runtime dimensions a matmul
 * primitive is made for one M, so each problem gets its own primitive (and
 * its own weights layout), created outside the timing. "onednn-fused" is
 * the same primitive with a bias (1 x N) and a GELU (tanh) eltwise
 * post-op: Y = gelu(X W + b) in one execution, as tessel-fused.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#if DNNL_VERSION_MAJOR != 2
#error "bench/lib_onednn.c is written for the oneDNN 2.x C API"
#endif

struct bench_call {
    bench_problem p;
    const float *A, *B;
    float *C;
    /* Batched problems and onednn-packed only; for onednn-packed, mem_b
     * owns the reordered weights. onednn-fused adds the bias. */
    dnnl_primitive_t prim;
    dnnl_memory_t mem_a, mem_b, mem_c, mem_bias;
    float *bias;
};

static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;

static const char *onednn_runtime_name(unsigned rt)
{
    switch (rt) {
    case DNNL_RUNTIME_SEQ: return "sequential";
    case DNNL_RUNTIME_OMP: return "OpenMP";
    case DNNL_RUNTIME_TBB: return "TBB";
    case DNNL_RUNTIME_THREADPOOL: return "threadpool";
    default: return "unknown runtime";
    }
}

static const char *onednn_version(void)
{
    static char buf[96];
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, sizeof buf, "oneDNN %d.%d.%d (%s, cpu runtime %s)", v->major, v->minor,
             v->patch, v->hash ? v->hash : "?", onednn_runtime_name(v->cpu_runtime));
    return buf;
}

static int onednn_set_threads(int threads)
{
    if (dnnl_version()->cpu_runtime != DNNL_RUNTIME_OMP) {
        fprintf(stderr, "oneDNN: cpu runtime is %s, not OpenMP: cannot set threads\n",
                onednn_runtime_name(dnnl_version()->cpu_runtime));
        return -1;
    }
    omp_set_num_threads(threads);
    return omp_get_max_threads() == threads ? 0 : -1;
}

static int onednn_init_engine(char *err, size_t errlen)
{
    dnnl_status_t st;
    if (g_engine)
        return 0;
    st = dnnl_engine_create(&g_engine, dnnl_cpu, 0);
    if (st == dnnl_success)
        st = dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags);
    if (st != dnnl_success) {
        snprintf(err, errlen, "engine/stream: %s", dnnl_status2str(st));
        return -1;
    }
    return 0;
}

/* A 3-D descriptor of `batch` row-major matrices of rows x cols, stored
 * with leading dimension ld and batch stride bs; `trans` means the
 * matrix is stored transposed (cols x rows). */
static dnnl_status_t onednn_md(dnnl_memory_desc_t *md, int64_t batch, int64_t rows,
                               int64_t cols, int trans, int64_t ld, int64_t bs)
{
    dnnl_dims_t dims = {batch, rows, cols};
    dnnl_dims_t strides = {bs, trans ? 1 : ld, trans ? ld : 1};
    return dnnl_memory_desc_init_by_strides(md, 3, dims, dnnl_f32, strides);
}

static void onednn_release(bench_call *c)
{
    if (!c)
        return;
    if (c->prim)
        dnnl_primitive_destroy(c->prim);
    if (c->mem_a)
        dnnl_memory_destroy(c->mem_a);
    if (c->mem_b)
        dnnl_memory_destroy(c->mem_b);
    if (c->mem_c)
        dnnl_memory_destroy(c->mem_c);
    if (c->mem_bias)
        dnnl_memory_destroy(c->mem_bias);
    free(c->bias);
    free(c);
}

static bench_call *onednn_prepare(const bench_problem *p, const float *A,
                                  const float *B, float *C, char *err, size_t errlen)
{
    bench_call *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->p = *p;
    c->A = A;
    c->B = B;
    c->C = C;
    if (!p->batched)
        return c;

    if (onednn_init_engine(err, errlen) != 0) {
        onednn_release(c);
        return NULL;
    }
    dnnl_memory_desc_t md_a, md_b, md_c;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    const char *what = "memory descriptors";
    dnnl_status_t st = onednn_md(&md_a, p->batch, p->M, p->K, p->transa == 'T', p->lda,
                                 p->stride_a);
    if (st == dnnl_success)
        st = onednn_md(&md_b, p->batch, p->K, p->N, p->transb == 'T', p->ldb, p->stride_b);
    if (st == dnnl_success)
        st = onednn_md(&md_c, p->batch, p->M, p->N, 0, p->ldc, p->stride_c);
    if (st == dnnl_success) {
        what = "matmul descriptor";
        st = dnnl_matmul_desc_init(&desc, &md_a, &md_b, NULL, &md_c);
    }
    if (st == dnnl_success) {
        what = "primitive descriptor";
        st = dnnl_primitive_desc_create(&pd, &desc, NULL, g_engine, NULL);
    }
    if (st == dnnl_success) {
        what = "primitive";
        st = dnnl_primitive_create(&c->prim, pd);
    }
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    /* The memory objects wrap the caller's buffers; nothing is copied. */
    if (st == dnnl_success) {
        what = "memory objects";
        st = dnnl_memory_create(&c->mem_a, &md_a, g_engine, (void *)(uintptr_t)A);
    }
    if (st == dnnl_success)
        st = dnnl_memory_create(&c->mem_b, &md_b, g_engine, (void *)(uintptr_t)B);
    if (st == dnnl_success)
        st = dnnl_memory_create(&c->mem_c, &md_c, g_engine, C);
    if (st != dnnl_success) {
        snprintf(err, errlen, "matmul %s: %s", what, dnnl_status2str(st));
        onednn_release(c);
        return NULL;
    }
    return c;
}

/* One execution of a call's matmul primitive, then the stream wait. */
static dnnl_status_t onednn_execute(bench_call *c)
{
    dnnl_exec_arg_t args[4] = {
        {DNNL_ARG_SRC, c->mem_a},
        {DNNL_ARG_WEIGHTS, c->mem_b},
        {DNNL_ARG_DST, c->mem_c},
        {DNNL_ARG_BIAS, c->mem_bias},
    };
    dnnl_status_t st = dnnl_primitive_execute(c->prim, g_stream, c->mem_bias ? 4 : 3, args);
    return st == dnnl_success ? dnnl_stream_wait(g_stream) : st;
}

static int onednn_run(bench_call *c, char *err, size_t errlen)
{
    const bench_problem *p = &c->p;
    dnnl_status_t st;
    if (!p->batched)
        st = dnnl_sgemm(p->transa, p->transb, p->M, p->N, p->K, 1.0f, c->A, p->lda,
                        c->B, p->ldb, 0.0f, c->C, p->ldc);
    else
        st = onednn_execute(c);
    if (st != dnnl_success) {
        snprintf(err, errlen, "%s", dnnl_status2str(st));
        return -1;
    }
    return 0;
}

const bench_lib bench_lib_onednn = {
    .name = "onednn",
    .version = onednn_version,
    .set_threads = onednn_set_threads,
    .prepare = onednn_prepare,
    .run = onednn_run,
    .release = onednn_release,
};

/* ---- onednn-packed ---- */

static const char *onednn_packed_version(void)
{
    static char buf[192]; /* onednn_version() is at most 95 characters */
    snprintf(buf, sizeof buf, "%s, matmul primitive per M, weights reordered once into "
             "its format_tag_any layout", onednn_version());
    return buf;
}

/* Reorders the plain weights in `from` into `to` (any layout), once. */
static dnnl_status_t onednn_reorder(dnnl_memory_t from, dnnl_memory_t to)
{
    const dnnl_memory_desc_t *md_from, *md_to;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    dnnl_status_t st = dnnl_memory_get_memory_desc(from, &md_from);
    if (st == dnnl_success)
        st = dnnl_memory_get_memory_desc(to, &md_to);
    if (st == dnnl_success)
        st = dnnl_reorder_primitive_desc_create(&rpd, md_from, g_engine, md_to, g_engine,
                                                NULL);
    if (st == dnnl_success)
        st = dnnl_primitive_create(&reorder, rpd);
    if (st == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
        st = dnnl_primitive_execute(reorder, g_stream, 2, args);
    }
    if (st == dnnl_success)
        st = dnnl_stream_wait(g_stream);
    if (reorder)
        dnnl_primitive_destroy(reorder);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    return st;
}

/* The primitive attributes of onednn-fused: GELU (tanh) after the bias. */
static dnnl_status_t onednn_gelu_attr(dnnl_primitive_attr_t *attr)
{
    dnnl_post_ops_t ops = NULL;
    dnnl_status_t st = dnnl_primitive_attr_create(attr);
    if (st == dnnl_success)
        st = dnnl_post_ops_create(&ops);
    if (st == dnnl_success)
        st = dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_gelu_tanh, 0.0f, 0.0f);
    if (st == dnnl_success)
        st = dnnl_primitive_attr_set_post_ops(*attr, ops);
    if (ops)
        dnnl_post_ops_destroy(ops);
    return st;
}

/* onednn-packed, and with `fused` onednn-fused: the primitive for this M,
 * the weights reordered once into its layout. */
static bench_call *onednn_weights_prepare(const bench_problem *p, const float *A,
                                          const float *B, float *C, int fused, char *err,
                                          size_t errlen)
{
    if (p->batched || p->transb != 'N') {
        snprintf(err, errlen, "packed path only for plain problems with transb N");
        return NULL;
    }
    bench_call *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->p = *p;
    c->A = A;
    c->B = B;
    c->C = C;
    if (onednn_init_engine(err, errlen) != 0) {
        onednn_release(c);
        return NULL;
    }
    dnnl_dims_t dims_a = {p->M, p->K}, dims_b = {p->K, p->N}, dims_c = {p->M, p->N};
    dnnl_dims_t strides_a = {p->transa == 'T' ? 1 : p->lda, p->transa == 'T' ? p->lda : 1};
    dnnl_dims_t strides_b = {p->ldb, 1}, strides_c = {p->ldc, 1};
    dnnl_dims_t dims_bias = {1, p->N}, strides_bias = {p->N, 1};
    dnnl_memory_desc_t md_a, md_b_any, md_b_plain, md_b_packed, md_c, md_bias;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_memory_t plain_b = NULL;
    memset(&md_b_packed, 0, sizeof md_b_packed);
    const char *what = "memory descriptors";
    dnnl_status_t st = dnnl_memory_desc_init_by_strides(&md_a, 2, dims_a, dnnl_f32, strides_a);
    if (st == dnnl_success && fused)
        st = dnnl_memory_desc_init_by_strides(&md_bias, 2, dims_bias, dnnl_f32, strides_bias);
    if (st == dnnl_success)
        st = dnnl_memory_desc_init_by_tag(&md_b_any, 2, dims_b, dnnl_f32, dnnl_format_tag_any);
    if (st == dnnl_success)
        st = dnnl_memory_desc_init_by_strides(&md_b_plain, 2, dims_b, dnnl_f32, strides_b);
    if (st == dnnl_success)
        st = dnnl_memory_desc_init_by_strides(&md_c, 2, dims_c, dnnl_f32, strides_c);
    if (st == dnnl_success) {
        what = "matmul descriptor";
        st = dnnl_matmul_desc_init(&desc, &md_a, &md_b_any, fused ? &md_bias : NULL, &md_c);
    }
    if (st == dnnl_success && fused) {
        what = "GELU post-op";
        st = onednn_gelu_attr(&attr);
    }
    if (st == dnnl_success) {
        what = "primitive descriptor";
        st = dnnl_primitive_desc_create(&pd, &desc, attr, g_engine, NULL);
    }
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (st == dnnl_success) {
        /* the layout oneDNN chose for the weights */
        const dnnl_memory_desc_t *q = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
        what = "weights layout query";
        st = q ? dnnl_success : dnnl_runtime_error;
        if (q)
            md_b_packed = *q;
    }
    if (st == dnnl_success) {
        what = "primitive";
        st = dnnl_primitive_create(&c->prim, pd);
    }
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (st == dnnl_success) {
        what = "memory objects";
        st = dnnl_memory_create(&c->mem_b, &md_b_packed, g_engine, DNNL_MEMORY_ALLOCATE);
    }
    if (st == dnnl_success)
        st = dnnl_memory_create(&plain_b, &md_b_plain, g_engine, (void *)(uintptr_t)B);
    if (st == dnnl_success) {
        what = "weights reorder";
        st = onednn_reorder(plain_b, c->mem_b);
    }
    if (plain_b)
        dnnl_memory_destroy(plain_b);
    if (st == dnnl_success) {
        what = "memory objects";
        st = dnnl_memory_create(&c->mem_a, &md_a, g_engine, (void *)(uintptr_t)A);
    }
    if (st == dnnl_success)
        st = dnnl_memory_create(&c->mem_c, &md_c, g_engine, C);
    if (st == dnnl_success && fused) {
        c->bias = bench_bias_row(p->N);
        st = c->bias ? dnnl_success : dnnl_out_of_memory;
        if (st == dnnl_success)
            st = dnnl_memory_create(&c->mem_bias, &md_bias, g_engine, c->bias);
    }
    if (st != dnnl_success) {
        snprintf(err, errlen, "%s matmul %s: %s", fused ? "fused" : "packed", what,
                 dnnl_status2str(st));
        onednn_release(c);
        return NULL;
    }
    return c;
}

static bench_call *onednn_packed_prepare(const bench_problem *p, const float *A,
                                         const float *B, float *C, char *err, size_t errlen)
{
    return onednn_weights_prepare(p, A, B, C, 0, err, errlen);
}

static bench_call *onednn_fused_prepare(const bench_problem *p, const float *A,
                                        const float *B, float *C, char *err, size_t errlen)
{
    return onednn_weights_prepare(p, A, B, C, 1, err, errlen);
}

static int onednn_packed_run(bench_call *c, char *err, size_t errlen)
{
    dnnl_status_t st = onednn_execute(c);
    if (st != dnnl_success) {
        snprintf(err, errlen, "%s", dnnl_status2str(st));
        return -1;
    }
    return 0;
}

static const char *onednn_fused_version(void)
{
    static char buf[192];
    snprintf(buf, sizeof buf, "%s, matmul primitive per M with bias and a GELU (tanh) "
             "post-op, weights reordered once", onednn_version());
    return buf;
}

const bench_lib bench_lib_onednn_fused = {
    .name = "onednn-fused",
    .packed = 1,
    .fused = 1,
    .version = onednn_fused_version,
    .set_threads = onednn_set_threads,
    .prepare = onednn_fused_prepare,
    .run = onednn_packed_run,
    .release = onednn_release,
};

const bench_lib bench_lib_onednn_packed = {
    .name = "onednn-packed",
    .packed = 1,
    .version = onednn_packed_version,
    .set_threads = onednn_set_threads,
    .prepare = onednn_packed_prepare,
    .run = onednn_packed_run,
    .release = onednn_release,
};
