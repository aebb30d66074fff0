/*
 * test_gemm.c - differential tests of tessel_sgemm and
 * tessel_sgemm_strided_batched against ref_sgemm (double accumulation).
 * Every case fills A and B's padding with NaN (a result that reads it turns
 * NaN) and C's padding with a sentinel (a write outside the M x N blocks is
 * seen), then holds every element to an error bound that scales with K, or
 * to exact equality where no product is formed (K == 0, alpha == 0). The
 * suite runs a grid over the edge sizes, a few thousand seeded random
 * cases, explicit exact, batched and large cases, each on contexts of 1, 2
 * and 3 threads and on the default context. Work per case is capped so the
 * O(MNK) reference stays cheap, also under sanitizers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "gemm_check.h"
#include "ops/gemm_blocks.h"
#include "ops/ops.h"
#include "ref/ref.h"
#include "tessel.h"
#include "test.h"

/* Padding of A and B: a quiet NaN, so reading it poisons a result. */
static const uint32_t INPUT_PAD_BITS = 0x7fc0dead;
/* Padding of C: finite, so that C = beta * C or C = 0 written there shows. */
static const uint32_t OUTPUT_PAD_BITS = 0xc4424242; /* about -777.04 */
/* C's blocks under beta 0 with nan_c. */
static const uint32_t NAN_C_BITS = 0x7fc0c0c0;

static const int64_t edge_dims[] = {0, 1, 2, 3, 7, 16, 17, 31, 64, 97, 255, 256, 600};
#define N_EDGE_DIMS ((int)(sizeof edge_dims / sizeof edge_dims[0]))

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t to_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static bool is_trans(char t)
{
    return t == 'T' || t == 't';
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Stored shapes: op(A) is M x K, so A is stored K x M under 'T'. */
static int64_t a_rows(const gemm_case *gc) { return is_trans(gc->transa) ? gc->K : gc->M; }
static int64_t a_cols(const gemm_case *gc) { return is_trans(gc->transa) ? gc->M : gc->K; }
static int64_t b_rows(const gemm_case *gc) { return is_trans(gc->transb) ? gc->N : gc->K; }
static int64_t b_cols(const gemm_case *gc) { return is_trans(gc->transb) ? gc->K : gc->N; }

gemm_case gemm_case_tight(char transa, char transb, int64_t M, int64_t N, int64_t K,
                          float alpha, float beta)
{
    gemm_case gc = {.transa = transa, .transb = transb, .M = M, .N = N, .K = K,
                    .alpha = alpha, .beta = beta, .batch = 1};
    gc.lda = max64(a_cols(&gc), 1);
    gc.ldb = max64(b_cols(&gc), 1);
    gc.ldc = max64(N, 1);
    return gc;
}

void gemm_case_batch(gemm_case *gc, int64_t batch, int64_t gap)
{
    gc->batched = true;
    gc->batch = batch;
    gc->stride_a = a_rows(gc) * gc->lda + gap;
    gc->stride_b = b_rows(gc) * gc->ldb + gap;
    gc->stride_c = gc->M * gc->ldc + gap;
}

double gemm_case_work(const gemm_case *gc)
{
    double per = (double)gc->M * (double)gc->N * (double)(gc->K > 0 ? gc->K : 1);
    return per * (double)(gc->batch > 0 ? gc->batch : 1);
}

void gemm_case_describe(const gemm_case *gc, const tessel_ctx *ctx, char *out, size_t len)
{
    char threads[16];
    if (ctx)
        snprintf(threads, sizeof threads, "%d", tessel_ctx_threads(ctx));
    else
        snprintf(threads, sizeof threads, "default");
    int n = snprintf(out, len,
                     "%s trans %c%c M %lld N %lld K %lld alpha %g beta %g%s "
                     "lda %lld ldb %lld ldc %lld",
                     gc->batched ? "batched" : "sgemm", gc->transa, gc->transb,
                     (long long)gc->M, (long long)gc->N, (long long)gc->K, (double)gc->alpha,
                     (double)gc->beta, gc->nan_c ? " (C NaN)" : "", (long long)gc->lda,
                     (long long)gc->ldb, (long long)gc->ldc);
    if (gc->batched && n > 0 && (size_t)n < len)
        n += snprintf(out + n, len - (size_t)n, " batch %lld stride a %lld b %lld c %lld",
                      (long long)gc->batch, (long long)gc->stride_a, (long long)gc->stride_b,
                      (long long)gc->stride_c);
    if (n > 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, " threads %s", threads);
}

/* ---- random cases ---- */

static int64_t random_dim(test_rng *r)
{
    int64_t pick = test_rng_range(r, 0, 9);
    if (pick < 5)
        return edge_dims[test_rng_range(r, 0, N_EDGE_DIMS - 1)];
    if (pick < 9)
        return test_rng_range(r, 1, 128);
    return test_rng_range(r, 129, 700);
}

/* Tight, a little extra (0..7), or odd and well past the row. */
static int64_t random_ld(test_rng *r, int64_t cols)
{
    int64_t tight = max64(cols, 1);
    switch (test_rng_range(r, 0, 4)) {
    case 0:
    case 1:
        return tight;
    case 2:
    case 3:
        return tight + test_rng_range(r, 0, 7);
    default:
        return (tight + test_rng_range(r, 1, 40)) | 1;
    }
}

static char random_trans(test_rng *r)
{
    char t = test_rng_range(r, 0, 1) ? 'T' : 'N';
    if (test_rng_range(r, 0, 15) == 0)
        t = (char)(t - 'A' + 'a');
    return t;
}

static float random_alpha(test_rng *r)
{
    static const float alphas[] = {1.0f, 1.0f, 1.0f, -1.5f, -1.5f, 0.0f,
                                   0.5f, -1.0f, 2.5f,  0.3f,  -0.0078125f};
    return alphas[test_rng_range(r, 0, (int64_t)(sizeof alphas / sizeof alphas[0]) - 1)];
}

static float random_beta(test_rng *r)
{
    static const float betas[] = {0.0f, 0.0f, 0.0f, 1.0f, 1.0f, -1.5f, -1.5f, 0.5f, -1.0f, 3.0f};
    return betas[test_rng_range(r, 0, (int64_t)(sizeof betas / sizeof betas[0]) - 1)];
}

/* The stride of input matrices in a batch: apart, reused (0), or
 * interleaved column blocks of one wide matrix (then ld grows to fit). */
static int64_t random_input_stride(test_rng *r, int64_t batch, int64_t rows, int64_t cols,
                                   int64_t *ld)
{
    int64_t pick = test_rng_range(r, 0, 19);
    if (pick < 4)
        return 0;
    if (pick < 7 && cols > 0) {
        *ld = max64(*ld, batch * cols + test_rng_range(r, 0, 3));
        return cols;
    }
    return rows * *ld + test_rng_range(r, 0, 9);
}

void gemm_random_case(test_rng *r, double max_work, gemm_case *gc)
{
    do {
        *gc = gemm_case_tight(random_trans(r), random_trans(r), random_dim(r), random_dim(r),
                              random_dim(r), random_alpha(r), random_beta(r));
        if (test_rng_range(r, 0, 3) == 0) {
            static const int64_t batches[] = {0, 1, 2, 7, 12};
            gc->batched = true;
            gc->batch = batches[test_rng_range(r, 0, 4)];
        }
    } while (gemm_case_work(gc) > max_work);

    gc->lda = random_ld(r, a_cols(gc));
    gc->ldb = random_ld(r, b_cols(gc));
    gc->ldc = random_ld(r, gc->N);
    gc->nan_c = gc->beta == 0.0f && test_rng_range(r, 0, 1);
    if (!gc->batched)
        return;
    gc->stride_a = random_input_stride(r, gc->batch, a_rows(gc), a_cols(gc), &gc->lda);
    gc->stride_b = random_input_stride(r, gc->batch, b_rows(gc), b_cols(gc), &gc->ldb);
    if (test_rng_range(r, 0, 2) == 0 && gc->N > 0) {
        /* Heads side by side: C is [M, batch * N], head h at column h * N. */
        gc->ldc = max64(gc->ldc, gc->batch * gc->N + test_rng_range(r, 0, 3));
        gc->stride_c = gc->N;
    } else {
        gc->stride_c = gc->M * gc->ldc + test_rng_range(r, 0, 9);
    }
}

/* ---- running and judging one case ---- */

/* Elements spanned by `count` matrices of rows x ld at `stride`, whole
 * last rows included so that their padding is checked too. */
static size_t buffer_len(int64_t rows, int64_t ld, int64_t count, int64_t stride)
{
    int64_t n = rows * ld + (count - 1) * stride;
    return (size_t)max64(n, 1);
}

/* Padding everywhere, then random values in each matrix's rows x cols. */
static void fill_matrices(test_rng *r, float *x, size_t len, int64_t rows, int64_t cols,
                          int64_t ld, int64_t count, int64_t stride, uint32_t pad_bits)
{
    float pad = from_bits(pad_bits);
    for (size_t i = 0; i < len; i++)
        x[i] = pad;
    for (int64_t b = 0; b < count; b++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
                x[b * stride + i * ld + j] = test_rng_float(r);
}

typedef struct {
    float *A, *B, *C, *A0, *B0, *C0, *E, *absA, *absB, *absAB;
    unsigned char *owned; /* 1 where an element of C belongs to a result block */
} case_buffers;

static void free_buffers(case_buffers *m)
{
    free(m->A);
    free(m->B);
    free(m->C);
    free(m->A0);
    free(m->B0);
    free(m->C0);
    free(m->E);
    free(m->absA);
    free(m->absB);
    free(m->absAB);
    free(m->owned);
}

bool gemm_run_case(tessel_ctx *ctx, const gemm_case *gc, uint64_t seed, char *why,
                   size_t why_len)
{
    char name[320];
    gemm_case_describe(gc, ctx, name, sizeof name);
    test_rng r = {seed};
    const int64_t M = gc->M, N = gc->N, K = gc->K;
    const int64_t count = gc->batch > 0 ? gc->batch : 1; /* matrices filled */
    const int64_t results = gc->batched ? gc->batch : 1; /* matrices computed */
    size_t a_len = buffer_len(a_rows(gc), gc->lda, count, gc->stride_a);
    size_t b_len = buffer_len(b_rows(gc), gc->ldb, count, gc->stride_b);
    size_t c_len = buffer_len(M, gc->ldc, count, gc->stride_c);
    size_t mn = (size_t)max64(M * N, 1);

    case_buffers m = {
        .A = malloc(a_len * sizeof(float)), .B = malloc(b_len * sizeof(float)),
        .C = malloc(c_len * sizeof(float)), .A0 = malloc(a_len * sizeof(float)),
        .B0 = malloc(b_len * sizeof(float)), .C0 = malloc(c_len * sizeof(float)),
        .E = malloc(c_len * sizeof(float)), .absA = malloc(a_len * sizeof(float)),
        .absB = malloc(b_len * sizeof(float)), .absAB = malloc(mn * sizeof(float)),
        .owned = calloc(c_len, 1),
    };
    if (!m.A || !m.B || !m.C || !m.A0 || !m.B0 || !m.C0 || !m.E || !m.absA || !m.absB ||
        !m.absAB || !m.owned) {
        snprintf(why, why_len, "%s: test cannot allocate", name);
        free_buffers(&m);
        return false;
    }

    fill_matrices(&r, m.A, a_len, a_rows(gc), a_cols(gc), gc->lda, count, gc->stride_a,
                  INPUT_PAD_BITS);
    fill_matrices(&r, m.B, b_len, b_rows(gc), b_cols(gc), gc->ldb, count, gc->stride_b,
                  INPUT_PAD_BITS);
    fill_matrices(&r, m.C, c_len, M, N, gc->ldc, results, gc->stride_c, OUTPUT_PAD_BITS);
    for (int64_t b = 0; b < results; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                size_t at = (size_t)(b * gc->stride_c + i * gc->ldc + j);
                m.owned[at] = 1;
                if (gc->nan_c)
                    m.C[at] = from_bits(NAN_C_BITS);
            }
    memcpy(m.A0, m.A, a_len * sizeof(float));
    memcpy(m.B0, m.B, b_len * sizeof(float));
    memcpy(m.C0, m.C, c_len * sizeof(float));

    tessel_status s;
    if (gc->batched)
        s = tessel_sgemm_strided_batched(ctx, gc->transa, gc->transb, M, N, K, gc->alpha, m.A,
                                         gc->lda, gc->stride_a, m.B, gc->ldb, gc->stride_b,
                                         gc->beta, m.C, gc->ldc, gc->stride_c, gc->batch);
    else
        s = tessel_sgemm(ctx, gc->transa, gc->transb, M, N, K, gc->alpha, m.A, gc->lda, m.B,
                         gc->ldb, gc->beta, m.C, gc->ldc);
    const char *error = tessel_last_error();
    if (s != TESSEL_OK || error[0] != '\0') {
        snprintf(why, why_len, "%s: status %d (%s), last error \"%s\"", name, (int)s,
                 tessel_status_str(s), error);
        free_buffers(&m);
        return false;
    }
    if (memcmp(m.A, m.A0, a_len * sizeof(float)) || memcmp(m.B, m.B0, b_len * sizeof(float))) {
        snprintf(why, why_len, "%s: an input was modified", name);
        free_buffers(&m);
        return false;
    }

    /* Expected values and |A||B|, one matrix of the batch at a time. */
    memcpy(m.E, m.C0, c_len * sizeof(float));
    for (size_t i = 0; i < a_len; i++)
        m.absA[i] = fabsf(m.A[i]);
    for (size_t i = 0; i < b_len; i++)
        m.absB[i] = fabsf(m.B[i]);
    const bool exact = K == 0 || gc->alpha == 0.0f;
    const double unit = ldexp(1.0, -24);
    double worst = 0.0; /* error / bound; INFINITY for NaN or a wrong exact value */
    char worst_text[200] = "";
    long bad = 0;
    for (int64_t b = 0; b < results; b++) {
        ref_sgemm(gc->transa, gc->transb, M, N, K, gc->alpha, m.A + b * gc->stride_a, gc->lda,
                  m.B + b * gc->stride_b, gc->ldb, gc->beta, m.E + b * gc->stride_c, gc->ldc);
        if (!exact)
            ref_sgemm(gc->transa, gc->transb, M, N, K, 1.0f, m.absA + b * gc->stride_a,
                      gc->lda, m.absB + b * gc->stride_b, gc->ldb, 0.0f, m.absAB,
                      max64(N, 1));
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                size_t at = (size_t)(b * gc->stride_c + i * gc->ldc + j);
                double got = m.C[at], want = m.E[at], err = fabs(got - want), ratio;
                double bound = 0.0;
                if (exact) {
                    ratio = got == want ? 0.0 : INFINITY;
                } else {
                    double c_term = gc->beta == 0.0f ? 0.0 : fabs((double)gc->beta * m.C0[at]);
                    bound = 2.0 * (double)(K + 2) * unit *
                                (fabs((double)gc->alpha) * m.absAB[i * N + j] + c_term) +
                            1e-30;
                    ratio = err <= bound ? err / bound : isnan(err) ? INFINITY : err / bound;
                }
                if (ratio > 1.0)
                    bad++;
                if (ratio > worst || worst_text[0] == '\0') {
                    worst = ratio;
                    snprintf(worst_text, sizeof worst_text,
                             "C[%lld](%lld,%lld) = %.9g, want %.9g, err %.3g, bound %.3g%s",
                             (long long)b, (long long)i, (long long)j, got, want, err, bound,
                             exact ? " (exact)" : "");
                }
            }
    }
    if (bad) {
        snprintf(why, why_len, "%s: %ld elements out of bound, worst %s", name, bad, worst_text);
        free_buffers(&m);
        return false;
    }

    for (size_t i = 0; i < c_len; i++)
        if (!m.owned[i] && to_bits(m.C[i]) != OUTPUT_PAD_BITS) {
            snprintf(why, why_len, "%s: C padding element %zu written: %.9g", name, i,
                     (double)m.C[i]);
            free_buffers(&m);
            return false;
        }
    snprintf(why, why_len, "%s: ok, worst error/bound %.3g", name, worst);
    free_buffers(&m);
    return true;
}

/* ---- the suite ---- */

/* The contexts cases rotate over: default, then 1, 2 and 3 threads. */
enum { N_CTX = 4 };
static tessel_ctx *contexts[N_CTX];
static long case_index;

static void run_on(tessel_ctx *ctx, const gemm_case *gc)
{
    char why[800];
    bool ok = gemm_run_case(ctx, gc, 0x5eed0000u + (uint64_t)case_index++, why, sizeof why);
    CHECK(ok, "%s", why);
}

/* The next context in the rotation. */
static tessel_ctx *next_ctx(void)
{
    return contexts[case_index % N_CTX];
}

static void run_case(const gemm_case *gc)
{
    run_on(next_ctx(), gc);
}

/* Every pair of edge sizes for M and N against a few K, all transposes in
 * turn, skipping the products too large for the reference. */
static void grid_cases(void)
{
    static const int64_t ks[] = {0, 1, 3, 17, 64, 255};
    static const char trans[4][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
    test_rng r = {0x6121d};
    int n = 0;
    for (int mi = 0; mi < N_EDGE_DIMS; mi++)
        for (int ni = 0; ni < N_EDGE_DIMS; ni++)
            for (int ki = 0; ki < (int)(sizeof ks / sizeof ks[0]); ki++) {
                gemm_case gc = gemm_case_tight(trans[n % 4][0], trans[n % 4][1], edge_dims[mi],
                                               edge_dims[ni], ks[ki], random_alpha(&r),
                                               random_beta(&r));
                n++;
                if (gemm_case_work(&gc) > 4e6)
                    continue;
                gc.lda = random_ld(&r, a_cols(&gc));
                gc.ldb = random_ld(&r, b_cols(&gc));
                gc.ldc = random_ld(&r, gc.N);
                gc.nan_c = gc.beta == 0.0f;
                run_case(&gc);
            }
}

static void random_cases(int count)
{
    test_rng r = {0x7e55e1};
    for (int i = 0; i < count; i++) {
        gemm_case gc;
        gemm_random_case(&r, i % 200 == 0 ? 3e7 : 1.5e6, &gc);
        run_case(&gc);
    }
}

/* No product formed: C = beta * C exactly (zeros over NaN for beta 0), and
 * empty outputs untouched. */
static void exact_cases(void)
{
    static const float betas[] = {0.0f, 1.0f, -1.5f, 0.5f};
    for (int c = 0; c < N_CTX; c++)
        for (int bi = 0; bi < 4; bi++) {
            gemm_case gc = gemm_case_tight('N', 'N', 17, 64, 0, 1.0f, betas[bi]);
            gc.ldc = 67;
            gc.nan_c = betas[bi] == 0.0f;
            run_on(contexts[c], &gc);

            gc = gemm_case_tight('T', 'N', 5, 7, 13, 0.0f, betas[bi]);
            gc.lda = 9;
            gc.nan_c = betas[bi] == 0.0f;
            run_on(contexts[c], &gc);

            gc = gemm_case_tight('N', 'T', 97, 31, 64, 0.0f, betas[bi]);
            gc.nan_c = betas[bi] == 0.0f;
            run_on(contexts[c], &gc);

            gc = gemm_case_tight('T', 'T', 31, 255, 0, -1.5f, betas[bi]);
            gemm_case_batch(&gc, 7, 3);
            gc.nan_c = betas[bi] == 0.0f;
            run_on(contexts[c], &gc);
        }
    /* Batches of matrices large enough to split over the threads, in
     * counts that spread evenly over them (whole matrices per thread,
     * each packing its own B) and not. */
    for (int c = 0; c < N_CTX; c++)
        for (int64_t batch = 2; batch <= 6; batch++) {
            gemm_case gc = gemm_case_tight('N', batch % 2 ? 'T' : 'N', 301, 67, 263, 1.0f,
                                           betas[batch % 4]);
            gemm_case_batch(&gc, batch, 5);
            gc.nan_c = gc.beta == 0.0f;
            run_on(contexts[c], &gc);
        }
    static const int64_t empty[][3] = {{0, 7, 5}, {7, 0, 5}, {0, 0, 5}, {0, 7, 0}, {600, 0, 64},
                                       {0, 600, 64}};
    for (int c = 0; c < N_CTX; c++)
        for (int e = 0; e < 6; e++) {
            gemm_case gc = gemm_case_tight(c % 2 ? 'T' : 'N', 'N', empty[e][0], empty[e][1],
                                           empty[e][2], 1.0f, c % 2 ? 0.0f : -1.5f);
            gc.ldc += 3;
            run_on(contexts[c], &gc);
            gemm_case_batch(&gc, 2, 1);
            run_on(contexts[c], &gc);
        }
}

/* Leading dimensions of A that are multiples of a large power of two put
 * a tile's rows on few L1 sets (why A is packed tile by tile, DESIGN rule
 * 5): tall and short M, N and K below lda, every tile height in the DP's
 * remainder, alpha/beta and NaN in C. */
static void aliased_lda_cases(void)
{
    static const int64_t ldas[] = {1024, 1536, 2048, 3072};
    static const int64_t ms[] = {29, 97, 255};
    test_rng r = {0xa11a5};
    for (int li = 0; li < 4; li++)
        for (int mi = 0; mi < 3; mi++) {
            int64_t K = li % 2 ? ldas[li] : test_rng_range(&r, 1, 97);
            gemm_case gc = gemm_case_tight('N', li == 3 ? 'T' : 'N', ms[mi],
                                           test_rng_range(&r, 1, 80), K, random_alpha(&r),
                                           random_beta(&r));
            gc.lda = ldas[li];
            gc.nan_c = gc.beta == 0.0f;
            run_case(&gc);
        }
}

/* Lowercase flags once, alongside the uppercase ones. */
static void lowercase_cases(void)
{
    static const char flags[4][2] = {{'n', 'n'}, {'n', 't'}, {'t', 'n'}, {'t', 't'}};
    for (int f = 0; f < 4; f++) {
        gemm_case gc = gemm_case_tight(flags[f][0], flags[f][1], 23, 19, 37, -1.5f, 0.5f);
        gc.lda += 1;
        gc.ldc += 2;
        run_case(&gc);
    }
}

/* Strided batches: apart, reused inputs (stride 0), and attention-style
 * heads interleaved in one [M, heads * N] output (stride_c N, ldc heads N),
 * with Q likewise [M, heads * K]. */
static void batched_cases(void)
{
    static const int64_t batches[] = {0, 1, 2, 7, 12};
    static const char trans[4][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'}};
    test_rng r = {0xba7c4};
    for (int bi = 0; bi < 5; bi++)
        for (int layout = 0; layout < 5; layout++)
            for (int t = 0; t < 4; t++) {
                int64_t batch = batches[bi];
                gemm_case gc = gemm_case_tight(trans[t][0], trans[t][1],
                                               test_rng_range(&r, 1, 40), test_rng_range(&r, 1, 40),
                                               test_rng_range(&r, 1, 70), random_alpha(&r),
                                               random_beta(&r));
                gc.nan_c = gc.beta == 0.0f;
                gemm_case_batch(&gc, batch, test_rng_range(&r, 0, 5));
                switch (layout) {
                case 1:
                    gc.stride_a = 0;
                    break;
                case 2:
                    gc.stride_b = 0;
                    break;
                case 3:
                    gc.stride_a = 0;
                    gc.stride_b = 0;
                    break;
                case 4:
                    gc.ldc = max64(batch, 1) * gc.N;
                    gc.stride_c = gc.N;
                    if (!is_trans(gc.transa)) {
                        gc.lda = max64(batch, 1) * gc.K;
                        gc.stride_a = gc.K;
                    }
                    break;
                default:
                    break;
                }
                run_case(&gc);
            }
    /* Batches long enough that each thread's share comes in groups of
     * several matrices (ops/gemm.c), the last group cut short: 97 on 2
     * threads is shares of 48 and 49 in groups of 12, on 3 of 32, 32
     * and 33 in groups of 8. On 3 threads over 2 cores, threads also
     * take groups from the ends of the others' shares. */
    static const int64_t long_batches[] = {50, 97};
    for (int c = 0; c < N_CTX; c++)
        for (int bi = 0; bi < 2; bi++) {
            gemm_case gc = gemm_case_tight(trans[c % 4][0], trans[c % 4][1],
                                           test_rng_range(&r, 1, 30), test_rng_range(&r, 1, 30),
                                           test_rng_range(&r, 1, 70), random_alpha(&r),
                                           random_beta(&r));
            gc.nan_c = gc.beta == 0.0f;
            gemm_case_batch(&gc, long_batches[bi], test_rng_range(&r, 0, 5));
            run_on(contexts[c], &gc);
        }
    /* Batches of one-row matrices, the decoder's attention at one token
     * (row and dot plans, each matrix straight to its form in run_matrix):
     * every transpose, K from 1 to past a vector's multiple, N from 1 to
     * past a block of the row form, on every context. */
    static const int64_t one_row_n[] = {1, 17, 64, 100}, one_row_k[] = {1, 5, 64, 300};
    for (int c = 0; c < N_CTX; c++)
        for (int ni = 0; ni < 4; ni++)
            for (int ki = 0; ki < 4; ki++) {
                int t = (c + ni + ki) % 4;
                gemm_case gc = gemm_case_tight(trans[t][0], trans[t][1], 1, one_row_n[ni],
                                               one_row_k[ki], random_alpha(&r), random_beta(&r));
                gc.nan_c = gc.beta == 0.0f;
                gemm_case_batch(&gc, (ni + ki) % 2 ? 12 : 3, test_rng_range(&r, 0, 5));
                run_on(contexts[c], &gc);
            }
    /* Batches that outgrow half the last cache, of matrices large enough
     * that a task running them one after another asks for the next one's
     * operands, and at K = 64 its C, meanwhile (ops/gemm.c,
     * batch_prefetches_next): every transpose, on every context (1
     * thread; 2 and 3 claiming matrices). */
    const hw_cache *last = hw_data_cache(hw_default_profile(), 3);
    if (!last)
        last = hw_data_cache(hw_default_profile(), 2);
    int64_t matrix_bytes = (81 * 64 * 2 + 81 * 81) * (int64_t)sizeof(float);
    int64_t outgrowing = (last ? last->size_bytes : 0) / 2 / matrix_bytes + 2;
    for (int c = 0; c < N_CTX; c++) {
        gemm_case gc = gemm_case_tight(trans[c][0], trans[c][1], 81, 81, 64, random_alpha(&r),
                                       random_beta(&r));
        gc.nan_c = gc.beta == 0.0f;
        gemm_case_batch(&gc, outgrowing, test_rng_range(&r, 0, 5));
        run_on(contexts[c], &gc);
    }
    /* An attention score block: 12 heads of 64 x 64 over d 64, S = Q K^T
     * with Q, K and S all [64, 12 * 64]. */
    for (int c = 0; c < N_CTX; c++) {
        gemm_case gc = gemm_case_tight('N', 'T', 64, 64, 64, 0.125f, 0.0f);
        gc.batched = true;
        gc.batch = 12;
        gc.lda = gc.ldb = gc.ldc = 12 * 64;
        gc.stride_a = gc.stride_b = gc.stride_c = 64;
        gc.nan_c = true;
        run_on(contexts[c], &gc);
    }
    /* Decoding: one query token against a key cache of 307 tokens, 12
     * heads of 64, S = q K^T: dot tiles that, where K's rows start off a
     * cache line (here every matrix after the first, 3 floats past the
     * last), ask for the rows of the tiles ahead (plan_dot.c,
     * dot_prefetches_ahead), past the end of each matrix into the next and
     * past the last; and with K's heads interleaved [307, 12 * 64], every
     * context. */
    for (int c = 0; c < N_CTX; c++)
        for (int interleaved = 0; interleaved < 2; interleaved++) {
            gemm_case gc = gemm_case_tight('N', 'T', 1, 307, 64, random_alpha(&r),
                                           random_beta(&r));
            gc.nan_c = gc.beta == 0.0f;
            gemm_case_batch(&gc, 12, 3);
            if (interleaved) {
                gc.ldb = 12 * 64;
                gc.stride_b = 64;
            }
            run_on(contexts[c], &gc);
        }
    /* Attention's P V at a few dozen tokens, O = P V with V and O [S, 12 *
     * 64] and each head's P [S, S] apart: A and B read in place in one k
     * block (ops/gemm_blocks.c, gemm_run_in_place), tight and head-interleaved, every
     * context, alpha and beta random (beta 0 over NaN). */
    static const int64_t tokens[] = {5, 17, 24, 43};
    for (int c = 0; c < N_CTX; c++)
        for (size_t ti = 0; ti < sizeof tokens / sizeof tokens[0]; ti++) {
            int64_t S = tokens[ti];
            gemm_case gc = gemm_case_tight('N', 'N', S, 64, S, random_alpha(&r), random_beta(&r));
            gc.nan_c = gc.beta == 0.0f;
            gemm_case_batch(&gc, 12, test_rng_range(&r, 0, 5));
            run_on(contexts[c], &gc);
            gc.ldb = gc.ldc = 12 * 64;
            gc.stride_b = gc.stride_c = 64;
            run_on(contexts[c], &gc);
        }
}

/* gemm_run_in_place over any range of row tiles [t0, t1): the rows of
 * those tiles get the product, every other row of C stays as it was. The
 * operator hands it a whole matrix's tiles; a range of them is its
 * contract. The plan is the model's tessellation of 43 rows with A and B
 * read in place, two full panels wide, K in one block; small integers,
 * so every sum is exact and compared exactly. */
static void in_place_tile_ranges(void)
{
    const plan_model *m = api_ctx_model(contexts[1]);
    gemm_shape s = {.M = 43, .N = 2 * m->nr, .K = 43};
    gemm_plan p;
    plan_gemm(m, &s, 1, &p);
    p.pack_a = p.pack_b = p.b_from_memory = false;
    p.kc = s.K;
    p.nc = s.N;
    const int64_t M = s.M, N = s.N, K = s.K;
    const size_t c_bytes = sizeof(float) * (size_t)(M * N);
    float *A = malloc(sizeof(float) * (size_t)(M * K));
    float *B = malloc(sizeof(float) * (size_t)(K * N));
    float *C0 = malloc(c_bytes), *C = malloc(c_bytes), *E = malloc(c_bytes);
    test_rng r = {0x1a7e};
    for (int64_t i = 0; i < M * K; i++)
        A[i] = (float)test_rng_range(&r, -2, 2);
    for (int64_t i = 0; i < K * N; i++)
        B[i] = (float)test_rng_range(&r, -2, 2);
    for (int64_t i = 0; i < M * N; i++)
        C0[i] = (float)test_rng_range(&r, -9, 9);
    gemm_call c = {.M = M, .N = N, .K = K, .alpha = 1.0f, .beta = 0.5f, .A = A, .a_rs = K,
                   .a_cs = 1, .B = B, .b_rs = N, .b_cs = 1, .C = C, .ldc = N};
    CHECK(gemm_runs_in_place(&c, &p, 0, N), "%lldx%lldx%lld with nothing packed runs in place",
          (long long)M, (long long)N, (long long)K);
    ukernel_fn fns[PLAN_MAX_RUNS];
    gemm_in_place_fns(&p, fns);
    int wrong = 0;
    for (int64_t t0 = 0; t0 <= p.ntiles; t0++)
        for (int64_t t1 = t0; t1 <= p.ntiles; t1++) {
            memcpy(C, C0, c_bytes);
            memcpy(E, C0, c_bytes);
            for (int64_t t = t0; t < t1; t++) {
                int64_t row;
                int mr;
                plan_tile_rows(&p, t, &row, &mr);
                ref_sgemm('N', 'N', mr, N, K, 1.0f, A + row * K, K, B, N, 0.5f, E + row * N, N);
            }
            gemm_run_in_place(&c, &p, t0, t1, 0, N, fns);
            wrong += memcmp(C, E, c_bytes) != 0;
        }
    CHECK(wrong == 0, "%d of the ranges of %lld row tiles ran wrong", wrong,
          (long long)p.ntiles);
    free(A);
    free(B);
    free(C0);
    free(C);
    free(E);
}

/* The 600-sized and other large products, a few per thread count. */
static void large_cases(void)
{
    static const struct {
        char ta, tb;
        int64_t M, N, K;
    } big[] = {
        {'N', 'N', 600, 600, 64}, {'T', 'N', 256, 256, 256}, {'N', 'T', 600, 97, 600},
        {'T', 'T', 97, 600, 255}, {'N', 'N', 255, 600, 97},  {'T', 'N', 600, 31, 600},
    };
    test_rng r = {0xb16};
    for (int i = 0; i < (int)(sizeof big / sizeof big[0]); i++)
        for (int rep = 0; rep < 2; rep++) {
            gemm_case gc = gemm_case_tight(big[i].ta, big[i].tb, big[i].M, big[i].N, big[i].K,
                                           rep ? -1.5f : 1.0f, rep ? 1.0f : 0.0f);
            gc.lda = random_ld(&r, a_cols(&gc));
            gc.ldb = random_ld(&r, b_cols(&gc));
            gc.ldc = random_ld(&r, gc.N);
            gc.nan_c = gc.beta == 0.0f;
            run_case(&gc);
        }
}

/* A matrix times a few vectors: op(B) narrower than a vector runs
 * dot-product tiles at any M, split along M over the threads when there
 * are fewer column tiles than threads; B^T is read in place, one column
 * of B contiguous along k (ldb 1) is taken as B^T, other columns of B are
 * transposed first. Each on every context (run_case takes them in turn),
 * with padded and tight leading dimensions. */
static void narrow_b_cases(void)
{
    static const struct {
        char ta, tb;
        int64_t M, N, K, ldb;
    } cases[] = {
        {'N', 'T', 1001, 1, 100, 100}, {'N', 'T', 300, 3, 65, 70}, {'N', 'T', 97, 15, 31, 31},
        {'N', 'N', 999, 1, 65, 1},     {'N', 'N', 130, 1, 17, 3},  {'N', 'T', 64, 1, 768, 768},
        {'N', 'N', 300, 3, 65, 5},     {'N', 'N', 97, 15, 31, 17}, {'N', 'N', 17, 7, 768, 7},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        for (int rep = 0; rep < N_CTX; rep++) {
            gemm_case gc = gemm_case_tight(cases[i].ta, cases[i].tb, cases[i].M, cases[i].N,
                                           cases[i].K, rep % 2 ? -1.5f : 1.0f,
                                           rep % 2 ? 0.5f : 0.0f);
            gc.ldb = cases[i].ldb;
            gc.nan_c = gc.beta == 0.0f;
            run_case(&gc);
        }
    /* A batch: each matrix's B transposed into its task's scratch. */
    for (int rep = 0; rep < N_CTX; rep++) {
        gemm_case gc = gemm_case_tight('N', 'N', 40, 5, 100, 1.0f, 0.0f);
        gemm_case_batch(&gc, 7, 3);
        gc.nan_c = true;
        run_case(&gc);
    }
}

/* One row of A times B runs the row form (ops/gemm.c): blocks of its
 * widest count of vectors, one of fewer, columns past the last whole
 * vector one by one; A's row strided (A^T), B's rows padded, the columns
 * split over threads. Each case on every context in turn. */
static void row_cases(void)
{
    static const int64_t ns[] = {1, 15, 16, 17, 129, 255, 256, 257, 520, 1000, 3077};
    static const int64_t ks[] = {1, 7, 96, 768};
    test_rng r = {0x20e};
    for (int ni = 0; ni < (int)(sizeof ns / sizeof ns[0]); ni++)
        for (int ki = 0; ki < (int)(sizeof ks / sizeof ks[0]); ki++) {
            char ta = (ni + ki) % 2 ? 'T' : 'N';
            gemm_case gc = gemm_case_tight(ta, 'N', 1, ns[ni], ks[ki], random_alpha(&r),
                                           ki % 2 ? 0.0f : random_beta(&r));
            gc.lda = random_ld(&r, a_cols(&gc));
            gc.ldb = random_ld(&r, b_cols(&gc));
            gc.nan_c = gc.beta == 0.0f;
            run_case(&gc);
        }
    /* B of 17-18 MB, past what the model keeps in cache: the streaming
     * row form, 8 rows at a time and the rest. */
    static const int64_t big[][2] = {{4099, 1091}, {4113, 1100}};
    for (int i = 0; i < 2; i++) {
        gemm_case gc = gemm_case_tight(i ? 'T' : 'N', 'N', 1, big[i][0], big[i][1], 0.75f,
                                       i ? 0.0f : -0.5f);
        gc.nan_c = gc.beta == 0.0f;
        run_case(&gc);
    }
    /* 2-6 rows of a B of 36 MB, over 16 L2s of 2 MiB: the streaming row
     * form for several rows (UK_ROW_STREAM_MAX_M), A strided or
     * transposed, B's and C's rows padded, a ragged last vector. */
    for (int64_t rows = 2; rows <= UK_ROW_STREAM_MAX_M; rows++) {
        gemm_case gc = gemm_case_tight(rows == 3 ? 'T' : 'N', 'N', rows, 8195, 1100 + rows,
                                       random_alpha(&r), rows == 2 ? 0.0f : random_beta(&r));
        gc.lda = random_ld(&r, a_cols(&gc));
        gc.ldb = random_ld(&r, b_cols(&gc));
        gc.ldc += 5;
        gc.nan_c = gc.beta == 0.0f;
        run_case(&gc);
    }
}

/* More than 16 row tiles over B streamed in place: the tiles run in
 * groups of 16, the later ones reading the block from L2 (ops/gemm_blocks.c,
 * PANELS_OUTER_MAX_TILES). The rules take that path only where the probe
 * picks a main tile one line wide, so the plan is asked for (b=in_place,
 * 16-wide tiles) and put in the 1-thread context's plan cache under the
 * shape's key; the call then goes through the API and the usual checker
 * (beta 0 over NaN, C's rows padded). */
static void streamed_groups_case(const plan_model *m)
{
    gemm_shape s = {.M = 17 * m->bulk_mr[2] + 3, .N = 163};
    s.K = 16 * m->l2_bytes / (int64_t)sizeof(float) / s.N + 29;
    plan_choice choice = {.nv = 2, .pack_b = PLAN_B_IN_PLACE};
    gemm_plan p;
    plan_gemm_choice(m, &s, 1, &choice, &p);
    CHECK(p.b_from_memory && !p.pack_b && !p.row && !p.dot && p.ntiles > 16,
          "%lldx%lldx%lld: B streamed in place over %lld row tiles", (long long)s.M,
          (long long)s.N, (long long)s.K, (long long)p.ntiles);
    plan_key key = plan_key_make(&s, 1);
    plan_cache_insert(contexts[1]->plans, &key, &p);
    gemm_case gc = gemm_case_tight('N', 'N', s.M, s.N, s.K, -1.5f, 0.0f);
    gc.ldc = s.N + 5;
    gc.nan_c = true;
    run_on(contexts[1], &gc);
}

/* B read in place as one block (plan.h, b_one_block) by a few row tiles:
 * panels outermost (ops/gemm_blocks.c, runs_panels_outer), every tile's
 * A micro-panel packed first. The rules make such plans only where the
 * L3 feeds the tiles, so the plan is asked for (B in place, K and N
 * whole), marked one block as the rules' make_one_block does, and put in
 * the 1-thread context's plan cache: 4 row tiles (the bulk tile's rows,
 * a short last one), a masked last panel, C's rows padded, beta 0 over
 * NaN and then alpha and beta both. */
static void one_block_panels_case(const plan_model *m)
{
    int mr = m->bulk_mr[2];
    gemm_shape s = {.M = 3 * mr + 2, .N = 163, .K = 301};
    plan_choice choice = {.nv = 2, .kc = s.K, .nc = 176, .pack_b = PLAN_B_IN_PLACE};
    gemm_plan p;
    plan_gemm_choice(m, &s, 1, &choice, &p);
    p.b_one_block = true;
    CHECK(!p.pack_b && !p.b_from_memory && !p.row && !p.dot && p.ntiles == 4 && p.kc == s.K &&
              p.nc >= s.N,
          "%lldx%lldx%lld: B in place in one block over %lld row tiles", (long long)s.M,
          (long long)s.N, (long long)s.K, (long long)p.ntiles);
    plan_key key = plan_key_make(&s, 1);
    plan_cache_insert(contexts[1]->plans, &key, &p);
    gemm_case gc = gemm_case_tight('N', 'N', s.M, s.N, s.K, 1.0f, 0.0f);
    gc.ldc = s.N + 3;
    gc.nan_c = true;
    run_on(contexts[1], &gc);
    gc = gemm_case_tight('N', 'N', s.M, s.N, s.K, -0.75f, 1.25f);
    gc.ldb = s.N + 9;
    run_on(contexts[1], &gc);
}

/* A few row tiles over a B that no cache keeps (over 16 of the model's
 * L2s, sized from it; at most 7 tiles of the main tile, 4x24 or 6x16
 * here, whichever the probe picks): B streamed in place, each block run panels
 * outermost (ops/gemm_blocks.c, run_block_by_panels), the prefetch of the last
 * panels pointing at the next block. Deep and wide B, A transposed,
 * strides padded, several k blocks and a ragged last one, a masked last
 * panel; on every context. The 1-thread plan is checked to stream. */
static void streamed_b_cases(void)
{
    const plan_model *m = api_ctx_model(contexts[1]);
    int64_t b_floats = 16 * m->l2_bytes / (int64_t)sizeof(float);
    static const struct {
        char ta;
        int64_t M, N, K; /* N or K 0: sized so that B outgrows 16 L2s */
    } cases[] = {
        {'N', 7, 601, 0}, {'T', 23, 597, 0}, {'N', 27, 603, 0},
        {'N', 13, 0, 301}, {'T', 25, 0, 299},
    };
    test_rng r = {0x57ea};
    int streamed = 0;
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        int64_t N = cases[i].N ? cases[i].N : b_floats / cases[i].K + 45;
        int64_t K = cases[i].K ? cases[i].K : b_floats / cases[i].N + 37;
        gemm_shape shape = {.M = cases[i].M, .N = N, .K = K, .transa = cases[i].ta == 'T'};
        gemm_plan p;
        plan_gemm(m, &shape, 1, &p);
        streamed += p.b_from_memory && !p.pack_b && !p.row && !p.dot;
        for (int c = 0; c < N_CTX; c++) {
            gemm_case gc = gemm_case_tight(cases[i].ta, 'N', cases[i].M, N, K,
                                           random_alpha(&r), c % 2 ? 0.0f : random_beta(&r));
            gc.lda = random_ld(&r, a_cols(&gc));
            gc.ldb = random_ld(&r, b_cols(&gc));
            gc.ldc = random_ld(&r, gc.N);
            gc.nan_c = gc.beta == 0.0f;
            run_on(contexts[c], &gc);
        }
    }
    CHECK(streamed == (int)(sizeof cases / sizeof cases[0]),
          "%d of %d streamed-B cases planned B streamed in place at 1 thread", streamed,
          (int)(sizeof cases / sizeof cases[0]));
    streamed_groups_case(m);
    one_block_panels_case(m);
}

/* A split along M whose threads each pack their own copy of B over a
 * fixed share of the row tiles (plan.h, b_per_thread), as the rules do
 * where the L3 does not feed the tiles: asked for (B packed, split M) on
 * 2 and 3 threads and marked so, whatever this machine's L3 does, then
 * put in the plan caches: tiles of several heights, three k blocks and a
 * ragged last one, two column blocks and a masked last panel, C's rows
 * padded, beta 0 over NaN and then alpha and beta both. The rule itself
 * is checked on the model with its L3 verdict set either way. */
static void own_b_cases(void)
{
    for (int c = 2; c < N_CTX; c++) {
        plan_model m = *api_ctx_model(contexts[c]);
        gemm_shape s = {.M = 5 * m.mr + 3, .N = 2 * 64 + 37, .K = 3 * 64 + 11};
        plan_choice choice = {.kc = 64, .nc = 64, .pack_b = PLAN_B_PACKED, .split = 'M'};
        gemm_plan p;
        for (int feeds = 0; feeds < 2; feeds++) {
            m.l3_feeds_tile = feeds;
            plan_gemm_choice(&m, &s, c, &choice, &p);
            CHECK(p.split == 'M' && p.threads == c && p.b_per_thread == !feeds,
                  "%lldx%lldx%lld, %d threads, split %c, L3 %s the tiles: own B %d",
                  (long long)s.M, (long long)s.N, (long long)s.K, c, p.split,
                  feeds ? "feeds" : "does not feed", p.b_per_thread);
        }
        plan_gemm_choice(api_ctx_model(contexts[c]), &s, c, &choice, &p);
        p.b_per_thread = true;
        plan_key key = plan_key_make(&s, c);
        plan_cache_insert(contexts[c]->plans, &key, &p);
        gemm_case gc = gemm_case_tight('N', 'N', s.M, s.N, s.K, 1.0f, 0.0f);
        gc.ldc = s.N + 5;
        gc.nan_c = true;
        run_on(contexts[c], &gc);
        gc = gemm_case_tight('N', 'N', s.M, s.N, s.K, -0.5f, 1.5f);
        gc.ldb = s.N + 3;
        run_on(contexts[c], &gc);
    }
}

/* B read in place with rows that collide in the L1 (ldb a multiple of
 * half an L1 way): the first row tile of each block also asks for rows
 * far ahead into L2, and in its last k steps for the next panel's first
 * rows (ops/gemm_blocks.c, ask_l2_ahead). Asked for (B in place, kc at most 96)
 * and put in the plan caches of 1, 2 and 3 threads: three row tiles,
 * four k blocks of 73-74 rows, a masked last panel, beta 0 over NaN.
 * Where the probe knows the L1, the plan is checked to ask. */
static void l2_ahead_cases(void)
{
    const int64_t ldb = 1024; /* 4 KiB */
    for (int c = 1; c < N_CTX; c++) {
        const plan_model *m = api_ctx_model(contexts[c]);
        gemm_shape s = {.M = 2 * m->mr + 3, .N = 300, .K = 3 * 96 + 7};
        plan_choice choice = {.kc = 96, .pack_b = PLAN_B_IN_PLACE};
        gemm_plan p;
        plan_gemm_choice(m, &s, c, &choice, &p);
        const hw_cache *l1 = hw_data_cache(&m->hw, 1);
        if (l1 && l1->ways > 0 && (ldb * 4) % (l1->size_bytes / l1->ways / 2) == 0)
            CHECK(!p.pack_b && plan_b_l2_ahead(&p, ldb * (int64_t)sizeof(float)),
                  "%lldx%lldx%lld, %d threads, B in place with ldb %lld: rows asked far ahead",
                  (long long)s.M, (long long)s.N, (long long)s.K, c, (long long)ldb);
        plan_key key = plan_key_make(&s, c);
        plan_cache_insert(contexts[c]->plans, &key, &p);
        gemm_case gc = gemm_case_tight('N', 'N', s.M, s.N, s.K, 0.5f, 0.0f);
        gc.ldb = ldb;
        gc.nan_c = true;
        run_on(contexts[c], &gc);
    }
}

/* Plans split along K (plan_gemm.c, k_split_pays): each thread its rows
 * of op(B), the partial products summed into C after the run (ops/gemm.c).
 * Asked for on shapes the reference checks quickly and put in the plan
 * caches of the 2- and 3-thread contexts: K not a multiple of the
 * threads, A^T, padded strides, beta 0 over NaN, one row (the row form
 * within each share), a batch (one matrix at a time), shares that pack B.
 * Then the rules' own plan for deep B from memory at 2 threads, and,
 * through the op layer, an epilogue applied after the sum. Each case is
 * big enough to be worth threads on a fast core (plan_threads_pay: 1 x
 * 517 x 999 was not, at the 250 GFLOP/s a Xeon's probe can read). */
static void k_split_cases(void)
{
    static const struct {
        char ta;
        int64_t M, N, K, batch;
        float alpha, beta;
    } cases[] = {
        {'N', 5, 301, 1403, 1, 1.0f, 0.0f}, {'T', 7, 97, 2001, 1, -1.5f, 0.5f},
        {'N', 1, 517, 2999, 1, 0.5f, 0.0f}, {'N', 6, 300, 1401, 3, 1.0f, 1.0f},
        {'N', 40, 200, 1200, 1, 2.0f, 0.0f},
    };
    for (int c = 2; c < N_CTX; c++) {
        const plan_model *m = api_ctx_model(contexts[c]);
        int threads = tessel_ctx_threads(contexts[c]);
        for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
            gemm_shape s = {.M = cases[i].M, .N = cases[i].N, .K = cases[i].K,
                            .transa = cases[i].ta == 'T'};
            gemm_plan p;
            plan_gemm_choice(m, &s, threads, &(plan_choice){.split = 'K'}, &p);
            CHECK(p.split == 'K' && p.threads == threads && p.bounds[threads] == s.K,
                  "%lldx%lldx%lld: split %c over %d threads", (long long)s.M, (long long)s.N,
                  (long long)s.K, p.split, p.threads);
            plan_key key = plan_key_make(&s, threads);
            plan_cache_insert(contexts[c]->plans, &key, &p);
            gemm_case gc = gemm_case_tight(cases[i].ta, 'N', s.M, s.N, s.K, cases[i].alpha,
                                           cases[i].beta);
            gc.lda += 3;
            gc.ldc += 5;
            if (cases[i].batch > 1)
                gemm_case_batch(&gc, cases[i].batch, 7);
            gc.nan_c = gc.beta == 0.0f;
            run_on(contexts[c], &gc);
        }
    }

    const plan_model *m = api_ctx_model(contexts[2]);
    gemm_shape deep = {.M = 64, .N = 768};
    deep.K = 16 * m->l2_bytes / (int64_t)sizeof(float) / deep.N * 2;
    gemm_plan p;
    plan_gemm(m, &deep, 2, &p);
    CHECK(p.split == 'K', "64x768x%lld (B over 16 L2s) at 2 threads: split %c", (long long)deep.K,
          p.split);

    /* An epilogue, which the partial products must not see: bias and GELU
     * after the sum. (Enough work that two threads pay on a core of 120
     * GF/s: at K = 900 the plan kept one.) */
    enum { M = 3, N = 70, K = 3000 };
    static float A[M * K], B[K * N], C[M * N], want[M * N], bias[N];
    test_rng r = {0x4b5};
    for (int i = 0; i < M * K; i++)
        A[i] = test_rng_float(&r);
    for (int i = 0; i < K * N; i++)
        B[i] = test_rng_float(&r);
    for (int j = 0; j < N; j++)
        bias[j] = test_rng_float(&r);
    for (int i = 0; i < M * N; i++)
        C[i] = want[i] = NAN;
    tessel_epilogue epi = {.bias = bias, .activation = TESSEL_ACT_GELU_TANH};
    gemm_shape s = {.M = M, .N = N, .K = K};
    plan_gemm_choice(m, &s, 2, &(plan_choice){.split = 'K'}, &p);
    op_env env = {.model = m, .pool = contexts[2]->pool, .buffers = contexts[2]->buffers,
                  .threads = 2};
    gemm_call call = {.M = M, .N = N, .K = K, .alpha = 1.0f, .beta = 0.0f, .A = A, .a_rs = K,
                      .a_cs = 1, .B = B, .b_rs = N, .b_cs = 1, .C = C, .ldc = N,
                      .epilogue = &epi};
    tessel_status st = op_sgemm_plan(&env, &call, &p, 1, 0, 0, 0);
    ref_sgemm('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, want, N);
    ref_epilogue(M, N, want, N, bias, epi.activation);
    double worst = 0.0;
    for (int i = 0; i < M * N; i++) {
        double d = fabs((double)C[i] - want[i]);
        worst = d > worst || d != d ? d : worst;
    }
    /* GELU's slope is at most 1.13: the product's bound, a little wider. */
    double tol = 1.2 * 2.0 * (K + 2) * ldexp(1.0, -24) * 4.0 * (K + 1);
    CHECK(st == TESSEL_OK && p.split == 'K' && worst <= tol,
          "3x70x3000 split along K with bias and GELU: status %d, split %c, off by %g (bound %g)",
          (int)st, p.split, worst, tol);
}

/* Plans split along M over threads share one packed B per (jc, pc) block
 * and hand out row tiles one at a time (ops/gemm.c): more column blocks
 * than one (N past nc, here 2048 wide at most), several k blocks, a masked
 * last panel, a batch (blocks numbered across matrices), B^T packed, A
 * packed; at 2, 3 and 8 threads, 8 more than this machine's cores. */
static void shared_b_cases(void)
{
    static const struct {
        char ta, tb;
        int64_t M, N, K, batch;
    } cases[] = {
        {'N', 'N', 100, 2090, 450, 1}, {'N', 'T', 257, 300, 700, 2}, {'T', 'N', 61, 97, 1000, 1},
        {'N', 'N', 300, 64, 1537, 1},
    };
    static const int threads[] = {2, 3, 8};
    test_rng r = {0x5a4ed};
    for (int t = 0; t < 3; t++) {
        tessel_ctx *ctx = NULL;
        tessel_status s = tessel_ctx_create(&ctx, threads[t]);
        CHECK(s == TESSEL_OK, "tessel_ctx_create(%d): %s", threads[t], tessel_status_str(s));
        if (s != TESSEL_OK)
            return;
        for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
            gemm_case gc = gemm_case_tight(cases[i].ta, cases[i].tb, cases[i].M, cases[i].N,
                                           cases[i].K, random_alpha(&r), random_beta(&r));
            gc.ldc += 3;
            if (cases[i].batch > 1)
                gemm_case_batch(&gc, cases[i].batch, 5);
            gc.nan_c = gc.beta == 0.0f;
            run_on(ctx, &gc);
        }
        tessel_ctx_destroy(ctx);
    }
}

/* The calls the API runs by the plain loop (ops/gemm_direct.c, a few
 * multiply-adds in all), also through the planned path that serves them
 * otherwise, so its edge tiles stay tested on the smallest shapes. Both
 * against the reference, beta 0 over NaN included. */
static void direct_and_planned_cases(tessel_ctx *ctx)
{
    op_env env = {.model = api_ctx_model(ctx), .pool = ctx->pool, .buffers = ctx->buffers,
                  .threads = ctx->threads};
    test_rng rng = {77};
    const float alphas[] = {1.0f, -1.5f, 0.0f}, betas[] = {0.0f, 1.0f, 0.5f};
    int direct = 0, fails[2] = {0, 0};
    for (int64_t M = 0; M <= 4; M++)
        for (int64_t N = 0; N <= 4; N++)
            for (int64_t K = 0; K <= 5; K++)
                for (int t = 0; t < 4; t++) {
                    bool ta = t & 1, tb = t & 2;
                    float A[4 * 5], B[5 * 4], C0[4 * 4], C[4 * 4], want[4 * 4];
                    for (int i = 0; i < 20; i++) {
                        A[i] = test_rng_float(&rng);
                        B[i] = test_rng_float(&rng);
                    }
                    float alpha = alphas[(M + K + t) % 3], beta = betas[(N + K) % 3];
                    for (int i = 0; i < 16; i++)
                        C0[i] = beta == 0.0f ? NAN : test_rng_float(&rng);
                    int64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
                    gemm_call call = {.M = M, .N = N, .K = K, .alpha = alpha, .beta = beta,
                                      .A = A, .a_rs = ta ? 1 : lda, .a_cs = ta ? lda : 1,
                                      .B = B, .b_rs = tb ? 1 : ldb, .b_cs = tb ? ldb : 1,
                                      .C = C, .ldc = ldc};
                    memcpy(want, C0, sizeof want);
                    ref_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A,
                              lda > 0 ? lda : 1, B, ldb > 0 ? ldb : 1, beta, want,
                              ldc > 0 ? ldc : 1);
                    direct += op_sgemm_is_direct(&call, 1) == (M * N * K <= 64);
                    for (int way = 0; way < 2; way++) {
                        memcpy(C, C0, sizeof C);
                        if (way == 0)
                            op_sgemm_direct(&call, 1, 0, 0, 0);
                        else
                            op_sgemm(&env, &call, 1, 0, 0, 0);
                        for (int64_t i = 0; i < M * N; i++) {
                            double tol = 2.0 * (K + 2) * ldexp(1.0, -24) * 4.0 * (K + 1);
                            bool ok = K == 0 || alpha == 0.0f
                                          ? C[i] == want[i] /* exact (-0 is 0) */
                                          : fabs((double)C[i] - want[i]) <= tol;
                            fails[way] += !ok;
                        }
                    }
                }
    CHECK(direct == 5 * 5 * 6 * 4, "direct exactly up to 64 multiply-adds (%d of %d)", direct,
          5 * 5 * 6 * 4);
    CHECK(fails[0] == 0, "tiny GEMMs by the plain loop: %d wrong elements", fails[0]);
    CHECK(fails[1] == 0, "tiny GEMMs by the planned path: %d wrong elements", fails[1]);
}

/* How a call runs its batch (op_gemm_schedule, which op_sgemm_plan and
 * `tessel explain` share), on a 2-thread context, and the batch's
 * predicted time built from the plan's (plan_batch_seconds). Whether a
 * batch of small matrices pays for waking a thread depends on the
 * machine's peak (plan_threads_pay); 192 heads of 43 tokens always do, and
 * 3 large matrices, which do not spread evenly over 2 threads, are each
 * split by the plan. */
static void batch_schedule_cases(tessel_ctx *ctx)
{
    const plan_model *m = api_ctx_model(ctx);
    op_env env = {.model = m, .pool = ctx->pool, .buffers = ctx->buffers, .threads = ctx->threads};
    static const struct {
        int64_t batch, M, N, K;
        bool tb;
        int whole; /* 1, 0, or -1: as plan_threads_pay says */
    } cases[] = {
        {192, 43, 43, 64, true, 1}, {12, 17, 17, 64, true, -1}, {13, 40, 64, 40, false, -1},
        {12, 5, 5, 64, true, -1},   {3, 384, 384, 384, false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t batch = cases[i].batch, M = cases[i].M, N = cases[i].N, K = cases[i].K;
        bool tb = cases[i].tb;
        gemm_call call = {.M = M, .N = N, .K = K, .alpha = 1.0f, .a_rs = K, .a_cs = 1,
                          .b_rs = tb ? 1 : N, .b_cs = tb ? K : 1, .ldc = N};
        gemm_shape shape = {.M = M, .N = N, .K = K, .transb = tb};
        gemm_plan plan;
        op_plan_sgemm(&env, &call, batch, &plan);
        op_schedule run;
        op_gemm_schedule(&env, &call, &plan, batch, &run);
        bool whole = cases[i].whole >= 0 ? cases[i].whole
                                         : plan.threads == 1 && plan_threads_pay(m, &shape, batch);
        int tasks = whole ? 2 : plan.threads;
        int64_t rounds = whole ? (batch + 1) / 2 : batch;
        int64_t group = !whole ? 0 : batch / 8 > 0 ? batch / 8 : 1;
        CHECK(run.whole_matrices == whole && run.tasks == tasks && run.rounds == rounds &&
                  run.group_matrices == group,
              "%lld x (%lldx%lldx%lld): whole %d, tasks %d, rounds %lld, groups of %lld; want "
              "%d, %d, %lld, %lld",
              (long long)batch, (long long)M, (long long)N, (long long)K, run.whole_matrices,
              run.tasks, (long long)run.rounds, (long long)run.group_matrices, whole, tasks,
              (long long)rounds, (long long)group);
        double one = plan_batch_seconds(m, &shape, &plan, 1, plan.threads);
        double step = plan_batch_seconds(m, &shape, &plan, 2, plan.threads) - one;
        double all = plan_batch_seconds(m, &shape, &plan, rounds + 1, plan.threads);
        CHECK(fabs(one - plan.predicted_seconds) <= 1e-9 * plan.predicted_seconds,
              "a batch of one predicts the plan's %.4g s, not %.4g", plan.predicted_seconds, one);
        CHECK(step > 0 && step <= plan.predicted_seconds &&
                  fabs(all - one - (double)rounds * step) <= 1e-9 * all,
              "each matrix in turn adds %.4g s of the plan's %.4g (%.4g for %lld more)", step,
              plan.predicted_seconds, all - one, (long long)rounds);
    }
}

void suite_gemm(void)
{
    static const int threads[N_CTX] = {0, 1, 2, 3};
    contexts[0] = NULL;
    for (int c = 1; c < N_CTX; c++) {
        tessel_status s = tessel_ctx_create(&contexts[c], threads[c]);
        CHECK(s == TESSEL_OK && contexts[c], "tessel_ctx_create(%d): %s", threads[c],
              tessel_status_str(s));
        if (s != TESSEL_OK)
            return;
        CHECK(tessel_ctx_threads(contexts[c]) == threads[c], "context of %d threads runs %d",
              threads[c], tessel_ctx_threads(contexts[c]));
    }
    case_index = 0;
    exact_cases();
    lowercase_cases();
    aliased_lda_cases();
    batched_cases();
    grid_cases();
    random_cases(2400);
    large_cases();
    shared_b_cases();
    k_split_cases();
    narrow_b_cases();
    in_place_tile_ranges();
    row_cases();
    streamed_b_cases();
    l2_ahead_cases();
    own_b_cases();
    direct_and_planned_cases(contexts[2]);
    batch_schedule_cases(contexts[2]);
    for (int c = 1; c < N_CTX; c++)
        tessel_ctx_destroy(contexts[c]);
}
