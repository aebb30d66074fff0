/*
 * test_packed.c - pre-packed weights and fused epilogues against the
 * reference: each handle serves every M from 0 to 64 and random larger
 * ones, on contexts of 1, 2, 3 and 8 threads, with every activation, with
 * and without bias; one row across the panels of handles of many widths;
 * plus the bad inputs of the packed calls.
 *
 * Bound: the GEMM bound of test_gemm.c on the pre-activation value x,
 * times the activation's largest slope (1 for ReLU, 1.13 for GELU), plus
 * the activation's own rounding, at most 8 * 2^-24 (|x + bias| + |y|) (the fast
 * tanh/erf of kernels/epilogue_template.h measure under 2 * 2^-24 there).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref/ref.h"
#include "test.h"
#include "tessel.h"

typedef struct {
    char transb;
    int64_t K, N;
} handle_shape;

static float *random_floats(test_rng *r, int64_t n)
{
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        x[i] = test_rng_float(r);
    return x;
}

static float *absolute(const float *x, int64_t n)
{
    float *y = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        y[i] = fabsf(x[i]);
    return y;
}

/* One call on `handle`; returns whether every element is within bound. */
static bool packed_case(tessel_ctx *ctx, const tessel_packed_b *handle, const float *B,
                        const handle_shape *hs, int64_t M, char transa, float alpha,
                        float beta, const tessel_epilogue *epi, test_rng *r, char *why)
{
    int64_t K = hs->K, N = hs->N, ldb = hs->transb == 'N' ? N : K;
    int64_t lda = (transa == 'N' ? K : M) + 1, ldc = N + 3;
    int64_t a_rows = transa == 'N' ? M : K, b_rows = hs->transb == 'N' ? K : N;
    float *A = random_floats(r, a_rows * lda);
    float *C = random_floats(r, M * ldc);
    float *x = malloc((size_t)(M * ldc + 1) * sizeof(float));
    float *bound = malloc((size_t)(M * ldc + 1) * sizeof(float));
    float *absA = absolute(A, a_rows * lda), *absB = absolute(B, b_rows * ldb);
    if (beta == 0.0f)
        for (int64_t i = 0; i < M * ldc; i++)
            C[i] = NAN;
    memcpy(x, C, (size_t)(M * ldc) * sizeof(float));
    ref_sgemm(transa, hs->transb, M, N, K, alpha, A, lda, B, ldb, beta, x, ldc);
    ref_sgemm(transa, hs->transb, M, N, K, fabsf(alpha), absA, lda, absB, ldb, 0.0f, bound, ldc);
    float *want = malloc((size_t)(M * ldc + 1) * sizeof(float));
    memcpy(want, x, (size_t)(M * ldc) * sizeof(float));
    if (epi)
        ref_epilogue(M, N, want, ldc, epi->bias, epi->activation);

    float *C0 = malloc((size_t)(M * ldc + 1) * sizeof(float));
    memcpy(C0, C, (size_t)(M * ldc) * sizeof(float));
    tessel_status s = epi ? tessel_sgemm_packed_epilogue(ctx, transa, M, A, lda, handle, alpha,
                                                         beta, C, ldc, epi)
                          : tessel_sgemm_packed(ctx, transa, M, A, lda, handle, alpha, beta, C,
                                                ldc);
    bool ok = s == TESSEL_OK;
    double slope = epi && epi->activation >= TESSEL_ACT_GELU_TANH ? 1.13 : 1.0;
    double worst = 0.0;
    for (int64_t i = 0; ok && i < M; i++)
        for (int64_t j = 0; j < ldc; j++) {
            int64_t e = i * ldc + j;
            if (j >= N) { /* padding untouched */
                ok = ok && memcmp(&C[e], &C0[e], sizeof(float)) == 0;
                continue;
            }
            double c0 = beta == 0.0f ? 0.0 : fabs((double)beta * C0[e]);
            double gemm_tol = 2.0 * (K + 2) * ldexp(1.0, -24) * (bound[e] + c0) + 1e-30;
            double pre = (double)x[e] + (epi && epi->bias ? epi->bias[j] : 0.0f);
            double tol = slope * gemm_tol +
                         8.0 * ldexp(1.0, -24) * (fabs(pre) + fabs((double)want[e]));
            double err = fabs((double)C[e] - want[e]);
            if (!(err <= tol))
                ok = false;
            if (err / tol > worst)
                worst = err / tol;
        }
    if (!ok)
        snprintf(why, 200, "status %d (%s), worst error %.3g of bound", (int)s,
                 tessel_last_error(), worst);
    free(A), free(C), free(x), free(bound), free(absA), free(absB), free(want), free(C0);
    return ok;
}

/* The thread counts of the contexts every handle is tried on. */
static const int context_threads[4] = {1, 2, 3, 8};

typedef void (*handle_test)(tessel_ctx *const ctx[4], const handle_shape *hs,
                            const tessel_packed_b *handle, const float *B, const float *bias,
                            test_rng *r);

/* Packs a seeded random B of each shape (with a bias of N) on the first
 * context and runs `test` over the handle. */
static void for_each_handle(const handle_shape *shapes, size_t count, test_rng *r,
                            handle_test test)
{
    tessel_ctx *ctx[4];
    for (int t = 0; t < 4; t++)
        CHECK(tessel_ctx_create(&ctx[t], context_threads[t]) == TESSEL_OK,
              "context of %d threads", context_threads[t]);
    for (size_t h = 0; h < count; h++) {
        const handle_shape *hs = &shapes[h];
        int64_t ldb = hs->transb == 'N' ? hs->N : hs->K;
        float *B = random_floats(r, (hs->transb == 'N' ? hs->K : hs->N) * ldb);
        float *bias = random_floats(r, hs->N);
        tessel_packed_b *handle = NULL;
        CHECK(tessel_sgemm_pack_b(ctx[0], hs->transb, hs->K, hs->N, B, ldb, &handle) ==
                  TESSEL_OK, "pack %c %lldx%lld", hs->transb, (long long)hs->K, (long long)hs->N);
        if (handle)
            test(ctx, hs, handle, B, bias, r);
        tessel_packed_destroy(handle);
        free(B), free(bias);
    }
    for (int t = 0; t < 4; t++)
        tessel_ctx_destroy(ctx[t]);
}

/* Every M from 0 to 64 and a few random larger ones on one handle. */
static void serve_every_m(tessel_ctx *const ctx[4], const handle_shape *hs,
                          const tessel_packed_b *handle, const float *B, const float *bias,
                          test_rng *r)
{
    int fails = 0, cases = 0;
    char why[320] = "";
    for (int64_t M = 0; M <= 64 + 6; M++) {
        int64_t m = M <= 64 ? M : test_rng_range(r, 65, 600);
        tessel_epilogue epi = {.bias = (M % 2) ? bias : NULL,
                               .activation = (tessel_activation)(M % 4)};
        char transa = (M % 5 == 3) ? 'T' : 'N';
        float alpha = (M % 3 == 1) ? -1.5f : 1.0f;
        float beta = (M % 3 == 0) ? 0.0f : (M % 3 == 1 ? 1.0f : -1.5f);
        char one_why[200];
        bool ok = packed_case(ctx[M % 4], handle, B, hs, m, transa, alpha, beta,
                              (M % 6 == 5) ? NULL : &epi, r, one_why);
        cases++;
        if (!ok) {
            fails++;
            snprintf(why, sizeof why, "M %lld transa %c act %d bias %d: %s", (long long)m,
                     transa, (int)epi.activation, epi.bias != NULL, one_why);
        }
    }
    CHECK(fails == 0, "packed %c K %lld N %lld: %d of %d M values wrong; last: %s", hs->transb,
          (long long)hs->K, (long long)hs->N, fails, cases, why);
}

static void handles_serve_every_m(void)
{
    const handle_shape shapes[] = {
        {'N', 37, 50}, {'T', 300, 129}, {'N', 1, 1}, {'N', 0, 5}, {'T', 256, 200}, {'N', 129, 48},
    };
    test_rng r = {7};
    for_each_handle(shapes, sizeof shapes / sizeof shapes[0], &r, serve_every_m);
}

/* One to six rows of A (the row form's reach, plan_row.c), eight ways
 * each: each activation, bias or not, A transposed, beta 0 over NaN, on
 * every context. */
static void serve_one_row(tessel_ctx *const ctx[4], const handle_shape *hs,
                          const tessel_packed_b *handle, const float *B, const float *bias,
                          test_rng *r)
{
    for (int rows = 1; rows <= 6; rows++)
        for (int v = 0; v < 8; v++) {
            tessel_epilogue epi = {.bias = v % 2 ? bias : NULL,
                                   .activation = (tessel_activation)(v % 4)};
            char transa = v % 3 == 2 ? 'T' : 'N';
            float alpha = v % 2 ? 0.75f : 1.0f, beta = v % 4 == 0 ? 0.0f : -0.5f;
            char why[200] = "";
            CHECK(packed_case(ctx[v % 4], handle, B, hs, rows, transa, alpha, beta,
                              v == 6 ? NULL : &epi, r, why),
                  "%d rows over packed %c K %lld N %lld, %d threads, transa %c beta %g act %d "
                  "bias %d: %s",
                  rows, hs->transb, (long long)hs->K, (long long)hs->N, context_threads[v % 4],
                  transa, (double)beta, (int)epi.activation, epi.bias != NULL, why);
        }
}

/* A few rows of A over pre-packed B take the row form across the panels
 * (ops/gemm.c, run_row_panels_share): every panel count from a part of
 * one to dozens, a narrower last panel or none, K over several k blocks. */
static void one_row_over_panels(void)
{
    const handle_shape shapes[] = {
        {'N', 1, 1},     {'N', 7, 5},     {'N', 64, 16},   {'T', 3000, 203},
        {'N', 768, 768}, {'N', 1031, 97}, {'T', 129, 520}, {'N', 2100, 48},
    };
    test_rng r = {11};
    for_each_handle(shapes, sizeof shapes / sizeof shapes[0], &r, serve_one_row);
}

static void bad_packed_input(void)
{
    float B[12] = {0}, A[12] = {0}, C[12], saved[12];
    for (int i = 0; i < 12; i++)
        saved[i] = C[i] = (float)i;
    tessel_packed_b *handle = NULL;
    CHECK(tessel_sgemm_pack_b(NULL, 'N', 3, 4, B, 4, NULL) == TESSEL_ERR_NULL, "NULL handle out");
    CHECK(tessel_sgemm_pack_b(NULL, 'X', 3, 4, B, 4, &handle) == TESSEL_ERR_BAD_TRANS,
          "bad transb");
    CHECK(tessel_sgemm_pack_b(NULL, 'N', 3, 4, B, 3, &handle) == TESSEL_ERR_BAD_LD, "ldb < N");
    CHECK(tessel_sgemm_pack_b(NULL, 'N', -1, 4, B, 4, &handle) == TESSEL_ERR_BAD_SIZE, "K < 0");
    CHECK(tessel_sgemm_pack_b(NULL, 'N', 3, 4, NULL, 4, &handle) == TESSEL_ERR_NULL, "B NULL");
    CHECK(handle == NULL, "no handle after a failed pack");
    CHECK(tessel_sgemm_pack_b(NULL, 'N', 3, 4, B, 4, &handle) == TESSEL_OK && handle,
          "pack 3x4");
    CHECK(tessel_sgemm_packed(NULL, 'N', 3, A, 3, NULL, 1, 0, C, 4) == TESSEL_ERR_NULL,
          "packed NULL");
    CHECK(tessel_sgemm_packed(NULL, 'N', 3, A, 2, handle, 1, 0, C, 4) == TESSEL_ERR_BAD_LD,
          "lda < K");
    CHECK(tessel_sgemm_packed(NULL, 'N', 3, A, 3, handle, 1, 0, C, 3) == TESSEL_ERR_BAD_LD,
          "ldc < N");
    CHECK(tessel_sgemm_packed(NULL, 'N', 3, C, 3, handle, 1, 0, C, 4) == TESSEL_ERR_ALIAS,
          "C overlaps A");
    tessel_epilogue bad_act = {.bias = NULL, .activation = (tessel_activation)9};
    CHECK(tessel_sgemm_packed_epilogue(NULL, 'N', 3, A, 3, handle, 1, 0, C, 4, &bad_act) ==
              TESSEL_ERR_BAD_ARG, "unknown activation");
    tessel_epilogue bias_in_c = {.bias = C + 4, .activation = TESSEL_ACT_RELU};
    CHECK(tessel_sgemm_packed_epilogue(NULL, 'N', 3, A, 3, handle, 1, 0, C, 4, &bias_in_c) ==
              TESSEL_ERR_ALIAS, "bias inside C");
    CHECK(memcmp(C, saved, sizeof C) == 0, "C untouched by failed packed calls");
    CHECK(tessel_sgemm_packed(NULL, 'N', 0, NULL, 3, handle, 1, 0, NULL, 4) == TESSEL_OK,
          "M 0 with NULL A and C");
    tessel_packed_destroy(handle);
    tessel_packed_destroy(NULL);
}

void suite_packed(void)
{
    bad_packed_input();
    handles_serve_every_m();
    one_row_over_panels();
}
