/*
 * test_kernels.c - every ukernel this CPU can run, against the reference
 * on one tile: packed and strided A, full and edge tiles, k from 0 up, and
 * the three C updates (beta 0 over NaN, beta 1, general); every
 * dot-product member for B^T read in place. Also the packing routines'
 * layouts and zero fill, and each ISA class's epilogue.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/ukernel.h"
#include "ref/ref.h"
#include "test.h"

static bool isa_runs_here(hw_isa isa)
{
    const hw_profile *hw = hw_default_profile();
    return isa <= hw->isa;
}

/* One kernel call on an m x n part of an mr x nr tile, checked elementwise
 * against the reference with the K-scaled bound; also checks that nothing
 * outside the m x n part of C changed. */
static bool kernel_case(ukernel_fn fn, int mr, int nr, bool packed, int64_t k, int m, int n,
                        float alpha, float beta, test_rng *rng)
{
    const int64_t lda = k + 3, ldc = nr + 5;
    float *a = calloc((size_t)(mr * lda + 1), sizeof(float));
    float *a_packed = calloc((size_t)(mr * k + UK_PACK_SLACK), sizeof(float));
    float *b = calloc((size_t)(k * nr + 1), sizeof(float));
    float *c = calloc((size_t)(mr * ldc), sizeof(float));
    float *want = calloc((size_t)(mr * ldc), sizeof(float));
    float *abs_a = calloc((size_t)(mr * lda + 1), sizeof(float));
    float *abs_b = calloc((size_t)(k * nr + 1), sizeof(float));
    float *bound = calloc((size_t)(mr * ldc), sizeof(float));
    for (int64_t i = 0; i < mr * lda; i++)
        abs_a[i] = fabsf(a[i] = test_rng_float(rng));
    for (int64_t i = 0; i < k * nr; i++)
        abs_b[i] = fabsf(b[i] = test_rng_float(rng));
    for (int64_t i = 0; i < mr * ldc; i++)
        want[i] = c[i] = beta == 0.0f ? NAN : test_rng_float(rng);
    ukernel_pack_a(HW_ISA_GENERIC, mr, k, a, lda, 1, a_packed);

    ukernel_args args = {.k = k, .b = b, .b_rs = nr, .c = c, .ldc = ldc,
                         .alpha = alpha, .beta = beta, .m = m, .n = n};
    args.a = packed ? a_packed : a;
    args.a_rs = packed ? 1 : lda;
    args.a_cs = packed ? mr : 1;
    fn(&args);

    ref_sgemm('N', 'N', m, n, k, alpha, a, lda, b, nr, beta, want, ldc);
    ref_sgemm('N', 'N', m, n, k, fabsf(alpha), abs_a, lda, abs_b, nr, 0.0f, bound, ldc);
    bool ok = true;
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < ldc; j++) {
            float got = c[i * ldc + j], ref = want[i * ldc + j];
            if (i < m && j < n) {
                double tol = 2.0 * (k + 2) * ldexp(1.0, -24) *
                             (bound[i * ldc + j] + fabs(beta * (double)ref)) + 1e-30;
                if (beta != 0.0f) /* the bound is on |beta * C0|; ref already added it */
                    tol += 2.0 * ldexp(1.0, -24) * fabs((double)ref);
                ok = ok && fabs((double)got - ref) <= tol;
            } else {
                /* Untouched: bitwise equal, NaN included. */
                ok = ok && memcmp(&got, &ref, sizeof got) == 0;
            }
        }
    free(a), free(a_packed), free(b), free(c), free(want), free(abs_a), free(abs_b), free(bound);
    return ok;
}

static void every_kernel(void)
{
    test_rng rng = {42};
    const int64_t ks[] = {0, 1, 7, 37, 130};
    const float alphas[] = {1.0f, -1.5f};
    const float betas[] = {0.0f, 1.0f, -1.5f};
    for (int isa = 0; isa < HW_ISA_COUNT; isa++) {
        if (!isa_runs_here((hw_isa)isa))
            continue;
        int vec = ukernel_vec_floats((hw_isa)isa);
        int built = 0;
        for (int nv = 1; nv <= UK_MAX_NV; nv++)
            for (int mr = 1; mr <= UK_MAX_MR; mr++)
                for (int packed = 0; packed <= 1; packed++) {
                    ukernel_desc d = {.isa = (hw_isa)isa, .mr = mr, .nv = nv, .a_packed = packed};
                    ukernel_fn fn = ukernel_lookup(&d);
                    if (!fn)
                        continue;
                    built++;
                    int nr = nv * vec;
                    int fails = 0, cases = 0;
                    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
                        for (int shape = 0; shape < 5; shape++) {
                            /* full tile, edge in n, edge in m and n, then
                             * the last vector exactly half in use (the
                             * half-width path on 16-float vectors) and
                             * one column past half (the full one) */
                            const int widths[] = {nr, nr - vec / 2 - 1, 1, nr - vec / 2,
                                                  nr - vec / 2 + 1};
                            int m = shape == 2 ? (mr + 1) / 2 : mr;
                            int n = widths[shape];
                            if (n < 1)
                                n = 1;
                            float alpha = alphas[(ki + shape) % 2];
                            float beta = betas[(ki + shape + mr) % 3];
                            cases++;
                            fails += !kernel_case(fn, mr, nr, packed, ks[ki], m, n, alpha, beta,
                                                  &rng);
                        }
                    CHECK(fails == 0, "%s ukernel %dx%d (%s A): %d of %d cases wrong",
                          hw_isa_name((hw_isa)isa), mr, nr, packed ? "packed" : "strided", fails,
                          cases);
                }
        CHECK(built > 0, "%s has ukernels", hw_isa_name((hw_isa)isa));
    }
}

/* One row-form call (cached: B's rows ldb apart; panels: B in panels of
 * pw floats, each pw * k) on m rows of A, columns 0..n, checked against
 * the reference with the K-scaled bound, C's padding untouched. */
static bool row_case(hw_isa isa, ukernel_row_form form, int m, int n, int64_t k, float alpha,
                     float beta, test_rng *rng)
{
    const int pw = 2 * ukernel_vec_floats(isa); /* two vectors a panel */
    const int64_t lda = k + 3, ldb = n + 5, ldc = n + 7;
    const int64_t panels = (n + pw - 1) / pw;
    float *a = calloc((size_t)(m * lda + 1), sizeof(float));
    float *b = calloc((size_t)(k * ldb + 1), sizeof(float));
    float *b_panels = calloc((size_t)(panels * pw * k + 1), sizeof(float));
    float *c = calloc((size_t)(m * ldc), sizeof(float));
    float *want = calloc((size_t)(m * ldc), sizeof(float));
    float *bound = calloc((size_t)(m * ldc), sizeof(float));
    float *abs_a = calloc((size_t)(m * lda + 1), sizeof(float));
    float *abs_b = calloc((size_t)(k * ldb + 1), sizeof(float));
    for (int64_t i = 0; i < m * lda; i++)
        abs_a[i] = fabsf(a[i] = test_rng_float(rng));
    for (int64_t i = 0; i < k * ldb; i++)
        abs_b[i] = fabsf(b[i] = test_rng_float(rng));
    for (int64_t p = 0; p < k; p++)
        for (int j = 0; j < n; j++)
            b_panels[j / pw * pw * k + p * pw + j % pw] = b[p * ldb + j];
    for (int64_t i = 0; i < m * ldc; i++)
        c[i] = beta == 0.0f ? NAN : test_rng_float(rng);
    memcpy(want, c, (size_t)(m * ldc) * sizeof(float));
    ref_sgemm('N', 'N', m, n, k, alpha, a, lda, b, ldb, beta, want, ldc);
    ref_sgemm('N', 'N', m, n, k, fabsf(alpha), abs_a, lda, abs_b, ldb, 0.0f, bound, ldc);
    float *c0 = malloc((size_t)(m * ldc) * sizeof(float));
    memcpy(c0, c, (size_t)(m * ldc) * sizeof(float));
    bool panel_form = form == UK_ROW_PANELS;
    ukernel_args args = {.k = k, .a = a, .a_rs = lda, .a_cs = 1,
                         .b = panel_form ? b_panels : b, .b_rs = panel_form ? pw : ldb,
                         .c = c, .ldc = ldc, .alpha = alpha, .beta = beta, .m = m, .n = n};
    ukernel_row_lookup(isa, form)(&args);
    bool ok = true;
    for (int i = 0; i < m; i++)
        for (int64_t j = 0; j < ldc; j++) {
            int64_t e = i * ldc + j;
            if (j >= n) {
                ok = ok && memcmp(&c[e], &c0[e], sizeof(float)) == 0;
                continue;
            }
            double c_part = beta == 0.0f ? 0.0 : fabs((double)beta * c0[e]);
            double tol = 2.0 * (double)(k + 2) * ldexp(1.0, -24) * (bound[e] + c_part) + 1e-30;
            ok = ok && fabs((double)c[e] - want[e]) <= tol;
        }
    free(a), free(b), free(b_panels), free(c), free(want), free(bound), free(abs_a), free(abs_b);
    free(c0);
    return ok;
}

/* The cached and panel row forms on 1 to UK_ROW_MAX_M rows, every ISA:
 * n of whole blocks, a remainder of vectors, and (cached) single
 * columns past the last vector; k from 0 up; beta 0 over NaN, 1, other. */
static void row_forms(hw_isa isa)
{
    test_rng rng = {23};
    const int vec = ukernel_vec_floats(isa);
    const int ns[] = {vec, 3 * vec, 16 * vec, 21 * vec, 5, 3 * vec + 3};
    const int64_t ks[] = {0, 1, 7, 130};
    const float betas[] = {0.0f, 1.0f, -1.5f};
    int fails = 0, cases = 0;
    const ukernel_row_form forms[] = {UK_ROW_CACHED, UK_ROW_PANELS};
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
        for (int m = 1; m <= UK_ROW_MAX_M; m++)
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                    ukernel_row_form form = forms[f];
                    if (form == UK_ROW_PANELS && ns[ni] % vec != 0)
                        continue; /* the panel form takes whole vectors */
                    float beta = betas[(ni + ki + (size_t)m) % 3];
                    float alpha = (ni + ki) % 2 ? -1.5f : 1.0f;
                    cases++;
                    if (!row_case(isa, form, m, ns[ni], ks[ki], alpha, beta, &rng)) {
                        fails++;
                        CHECK(false, "%s row form %d: %d rows, n %d, k %lld", hw_isa_name(isa),
                              (int)form, m, ns[ni], (long long)ks[ki]);
                    }
                }
    CHECK(fails == 0 && cases > 0, "%s row forms: %d of %d cases wrong", hw_isa_name(isa), fails,
          cases);
}

/* Every dot-product member on A (mr x k) and B^T (nj x k) read in place,
 * k with and without a remainder of the vector width. */
static void every_dot_kernel(void)
{
    test_rng rng = {43};
    const int64_t ks[] = {0, 1, 16, 37, 130};
    for (int isa = 0; isa < HW_ISA_COUNT; isa++) {
        if (!isa_runs_here((hw_isa)isa))
            continue;
        for (int mr = 1; mr <= UK_DOT_MAX_MR; mr++)
            for (int nj = 1; nj <= UK_DOT_MAX_NJ; nj++) {
                ukernel_fn fn = ukernel_dot_lookup((hw_isa)isa, mr, nj);
                if (!fn)
                    continue;
                int fails = 0;
                for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
                    int64_t k = ks[ki], lda = k + 3, ldb = k + 1, ldc = nj + 2;
                    float a[UK_DOT_MAX_MR * 133], b[UK_DOT_MAX_NJ * 131];
                    float c[UK_DOT_MAX_MR * (UK_DOT_MAX_NJ + 2)], want[sizeof c / sizeof c[0]];
                    float abs_a[sizeof a / sizeof a[0]], abs_b[sizeof b / sizeof b[0]];
                    float bound[sizeof c / sizeof c[0]];
                    for (int64_t i = 0; i < mr * lda; i++)
                        abs_a[i] = fabsf(a[i] = test_rng_float(&rng));
                    for (int64_t i = 0; i < nj * ldb; i++)
                        abs_b[i] = fabsf(b[i] = test_rng_float(&rng));
                    float beta = ki % 2 ? 0.0f : -1.5f;
                    for (int64_t i = 0; i < mr * ldc; i++)
                        want[i] = c[i] = beta == 0.0f ? NAN : test_rng_float(&rng);
                    ukernel_args args = {.k = k, .a = a, .a_rs = lda, .a_cs = 1, .b = b,
                                         .b_rs = ldb, .c = c, .ldc = ldc, .alpha = 1.5f,
                                         .beta = beta, .m = mr, .n = nj};
                    fn(&args);
                    ref_sgemm('N', 'T', mr, nj, k, 1.5f, a, lda, b, ldb, beta, want, ldc);
                    ref_sgemm('N', 'T', mr, nj, k, 1.5f, abs_a, lda, abs_b, ldb, 0.0f, bound, ldc);
                    for (int i = 0; i < mr; i++)
                        for (int j = 0; j < ldc; j++) {
                            float got = c[i * ldc + j], ref = want[i * ldc + j];
                            if (j >= nj) {
                                fails += memcmp(&got, &ref, sizeof got) != 0;
                                continue;
                            }
                            double tol = 2.0 * (k + 2) * ldexp(1.0, -24) *
                                             (bound[i * ldc + j] + 1.5 * fabs((double)ref)) +
                                         1e-30;
                            fails += !(fabs((double)got - ref) <= tol);
                        }
                }
                CHECK(fails == 0, "%s dot ukernel %dx%d: %d wrong elements",
                      hw_isa_name((hw_isa)isa), mr, nj, fails);
            }
    }
}

static void packing(hw_isa isa)
{
    float src[6 * 7], dst[8 * 7];
    for (int i = 0; i < 6 * 7; i++)
        src[i] = (float)i;
    /* A: a 3 x 4 block of a 6 x 7 matrix (rows 0..2, cols 0..3) */
    ukernel_pack_a(isa, 3, 4, src, 7, 1, dst);
    bool ok = true;
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 3; i++)
            ok = ok && dst[p * 3 + i] == src[i * 7 + p];
    CHECK(ok, "%s pack_a strided rows", hw_isa_name(isa));
    ukernel_pack_a(isa, 3, 4, src, 1, 7, dst); /* transposed source */
    ok = true;
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 3; i++)
            ok = ok && dst[p * 3 + i] == src[p * 7 + i];
    CHECK(ok, "%s pack_a contiguous columns", hw_isa_name(isa));
    /* B: 5 of 8 columns, k 4, zero fill past n */
    for (int t = 0; t < 2; t++) {
        int64_t rs = t ? 1 : 7, cs = t ? 7 : 1;
        ukernel_pack_b(isa, 8, 5, 4, src, rs, cs, dst);
        ok = true;
        for (int p = 0; p < 4; p++)
            for (int j = 0; j < 8; j++)
                ok = ok && dst[p * 8 + j] == (j < 5 ? src[p * rs + j * cs] : 0.0f);
        CHECK(ok, "%s pack_b %s with zero fill", hw_isa_name(isa), t ? "transposed" : "rows");
    }
}

/* The register transpose on every panel width up to three vectors and a
 * bit, row counts 1, 2, half the width, the last four up to it and those
 * leaving 5-8 rows to a 16-row group (whole vectors of zero rows too), k
 * across vector multiples; nothing is written past the panel and its
 * slack (a guard float after them). */
static void transposing(hw_isa isa)
{
    ukernel_transpose_fn fn = ukernel_packers_lookup(isa)->transpose;
    enum { MAX_W = 51, MAX_K = 37, LD = 41 };
    static float src[MAX_W * LD], dst[MAX_W * MAX_K + UK_PACK_SLACK + 1];
    for (int i = 0; i < MAX_W * LD; i++)
        src[i] = (float)(i + 1);
    int failures = 0;
    for (int w = 1; w <= MAX_W; w++)
        for (int rows = 1; rows <= w; rows++)
            for (int k = 0; k <= MAX_K; k += k < 18 ? 1 : 19) {
                if (rows > 2 && rows < w - 3 && rows != w / 2 &&
                    (rows % 16 < 5 || rows % 16 > 8))
                    continue;
                for (int i = 0; i <= MAX_W * MAX_K + UK_PACK_SLACK; i++)
                    dst[i] = -1.0f;
                fn(w, rows, k, src, LD, dst);
                bool ok = dst[w * k + UK_PACK_SLACK] == -1.0f;
                for (int p = 0; p < k; p++)
                    for (int i = 0; i < w; i++)
                        ok = ok && dst[p * w + i] == (i < rows ? src[i * LD + p] : 0.0f);
                if (!ok && failures++ < 3)
                    CHECK(false, "%s transpose w %d rows %d k %d", hw_isa_name(isa), w, rows,
                          k);
            }
    CHECK(failures == 0, "%s transposes: %d wrong", hw_isa_name(isa), failures);
}

/* Row copies into panels of every width up to four vectors and a bit,
 * every n up to it, k across a few rows, ld tight and padded: the values,
 * zeros past n (where the source holds other values), and nothing written
 * past the panel (a guard float). That nothing is read past the block is
 * for AddressSanitizer to see, on the GEMM suite's heap buffers. */
static void copying_rows(hw_isa isa)
{
    ukernel_copy_fn fn = ukernel_packers_lookup(isa)->copy_rows;
    enum { MAX_W = 67, MAX_K = 5, MAX_LD = MAX_W + 3 };
    static float src[MAX_K * MAX_LD + 64], dst[MAX_W * MAX_K + 1];
    int failures = 0;
    for (int w = 1; w <= MAX_W; w++)
        for (int n = 1; n <= w; n++)
            for (int k = 0; k <= MAX_K; k++)
                for (int pad = 0; pad <= 3; pad += 3) {
                    int ld = n + pad;
                    /* The block, then values it must not copy. */
                    for (int i = 0; i < MAX_K * MAX_LD + 64; i++)
                        src[i] = i < (k > 0 ? (k - 1) * ld + n : 0) && i % ld < n
                                     ? (float)(i + 1) : -7.0f;
                    for (int i = 0; i <= MAX_W * MAX_K; i++)
                        dst[i] = -1.0f;
                    fn(w, n, k, src, ld, dst);
                    bool ok = dst[w * k] == -1.0f;
                    for (int p = 0; p < k; p++)
                        for (int j = 0; j < w; j++)
                            ok = ok && dst[p * w + j] == (j < n ? src[p * ld + j] : 0.0f);
                    if (!ok && failures++ < 3)
                        CHECK(false, "%s copy rows w %d n %d k %d ld %d", hw_isa_name(isa), w,
                              n, k, ld);
                }
    CHECK(failures == 0, "%s row copies: %d wrong", hw_isa_name(isa), failures);
}

/* The epilogue of an ISA class against ref_epilogue: rows from 0 to past
 * two vectors wide (the whole vectors and the tail through the stack),
 * rows apart by more than their width (the gap untouched), with and
 * without bias, every activation, values across GELU's bend and past the
 * exp's clamp. Bound: the approximations' rounding, 8 * 2^-24 (|x + bias|
 * + |y|), as test_packed.c allows. */
static void epilogues(hw_isa isa)
{
    test_rng rng = {0xe9110};
    const int vec = ukernel_vec_floats(isa);
    int fails = 0, cases = 0;
    for (int act = TESSEL_ACT_NONE; act <= TESSEL_ACT_GELU_ERF; act++)
        for (int n = 0; n <= 2 * vec + 3; n++)
            for (int with_bias = 0; with_bias < 2; with_bias++) {
                enum { M = 3, GAP = 2 };
                int64_t ldc = n + GAP;
                float c[M * (2 * 16 + 3 + GAP)], want[M * (2 * 16 + 3 + GAP)], bias[2 * 16 + 3];
                for (int64_t e = 0; e < M * ldc; e++) {
                    /* mostly in [-4, 4), now and then far out (|x| up to 200) */
                    float scale = test_rng_range(&rng, 0, 9) == 0 ? 200.0f : 4.0f;
                    c[e] = want[e] = scale * test_rng_float(&rng);
                }
                for (int j = 0; j < n; j++)
                    bias[j] = test_rng_float(&rng);
                const float *b = with_bias ? bias : NULL;
                ukernel_epilogue(isa, c, ldc, M, n, b, (tessel_activation)act);
                float pre[M * (2 * 16 + 3 + GAP)];
                memcpy(pre, want, sizeof pre);
                ref_epilogue(M, n, want, ldc, b, (tessel_activation)act);
                bool ok = true;
                for (int i = 0; i < M; i++)
                    for (int64_t j = 0; j < ldc; j++) {
                        int64_t e = i * ldc + j;
                        if (j >= n) { /* the gap is not C's */
                            ok = ok && c[e] == pre[e];
                            continue;
                        }
                        double x = (double)pre[e] + (b ? b[j] : 0.0f);
                        double tol = 8.0 * ldexp(1.0, -24) * (fabs(x) + fabs((double)want[e]));
                        ok = ok && fabs((double)c[e] - want[e]) <= tol;
                    }
                cases++;
                if (!ok && fails++ < 3)
                    CHECK(false, "%s epilogue: activation %d, n %d, bias %d", hw_isa_name(isa),
                          act, n, with_bias);
            }
    CHECK(fails == 0, "%s epilogues: %d of %d cases wrong", hw_isa_name(isa), fails, cases);
}

void suite_kernels(void)
{
    for (int isa = 0; isa < HW_ISA_COUNT; isa++)
        if (isa_runs_here((hw_isa)isa)) {
            packing((hw_isa)isa);
            transposing((hw_isa)isa);
            copying_rows((hw_isa)isa);
            row_forms((hw_isa)isa);
            epilogues((hw_isa)isa);
        }
    every_kernel();
    every_dot_kernel();
}
