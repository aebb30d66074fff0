/*
 * test_ref.c - checks the reference GEMM itself on products small enough to
 * work out by hand: 2x2, a 2x3x4 product under every transpose with padded
 * leading dimensions, alpha and beta, beta 0 over NaN, K == 0, and a sum
 * that only double accumulation gets right. Every other GEMM test trusts
 * ref_sgemm, so its answers here are exact.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "ref/ref.h"
#include "test.h"

/* Exact comparison of a rows x cols block stored with leading dimension ld
 * against a dense expected block. */
static bool block_equals(const float *got, int64_t ld, const float *want, int rows, int cols)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            if (!(got[i * ld + j] == want[i * cols + j]))
                return false;
    return true;
}

static void ref_2x2(void)
{
    const float A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8};
    const float want[4] = {19, 22, 43, 50};
    float C[4] = {NAN, NAN, NAN, NAN};
    ref_sgemm('N', 'N', 2, 2, 2, 1.0f, A, 2, B, 2, 0.0f, C, 2);
    CHECK(block_equals(C, 2, want, 2, 2), "2x2: got %g %g %g %g, want 19 22 43 50",
          (double)C[0], (double)C[1], (double)C[2], (double)C[3]);
}

/* op(A) = [1 2 3 4; 5 6 7 8], op(B) = [1 0 2; 0 1 0; 1 1 1; 2 0 -1]; their
 * product is [12 5 1; 28 13 9]. Each is stored either as is or transposed,
 * with a leading dimension one or two past the row, padding set to NaN. */
static void ref_2x3x4(void)
{
    static const float opA[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
    static const float opB[4][3] = {{1, 0, 2}, {0, 1, 0}, {1, 1, 1}, {2, 0, -1}};
    static const float product[6] = {12, 5, 1, 28, 13, 9};
    static const float scaled[6] = {23, 9, 1, 55, 25, 17}; /* 2 AB - 1 */
    static const char flags[8][2] = {{'N', 'N'}, {'N', 'T'}, {'T', 'N'}, {'T', 'T'},
                                     {'n', 'n'}, {'n', 't'}, {'t', 'n'}, {'t', 't'}};
    for (int f = 0; f < 8; f++) {
        char ta = flags[f][0], tb = flags[f][1];
        bool at = ta == 'T' || ta == 't', bt = tb == 'T' || tb == 't';
        float A[4 * 5], B[4 * 5], C[2 * 5];
        for (int i = 0; i < 20; i++)
            A[i] = B[i] = NAN;
        int64_t lda = (at ? 2 : 4) + 1, ldb = (bt ? 4 : 3) + 2, ldc = 4;
        for (int i = 0; i < 2; i++)
            for (int p = 0; p < 4; p++)
                A[at ? p * lda + i : i * lda + p] = opA[i][p];
        for (int p = 0; p < 4; p++)
            for (int j = 0; j < 3; j++)
                B[bt ? j * ldb + p : p * ldb + j] = opB[p][j];

        for (int i = 0; i < 10; i++)
            C[i] = NAN;
        C[3] = C[7] = -99.0f; /* padding of C */
        ref_sgemm(ta, tb, 2, 3, 4, 1.0f, A, lda, B, ldb, 0.0f, C, ldc);
        CHECK(block_equals(C, ldc, product, 2, 3) && C[3] == -99.0f && C[7] == -99.0f,
              "2x3x4 %c%c beta 0 over NaN: got [%g %g %g; %g %g %g], padding %g %g", ta, tb,
              (double)C[0], (double)C[1], (double)C[2], (double)C[4], (double)C[5],
              (double)C[6], (double)C[3], (double)C[7]);

        for (int i = 0; i < 8; i++)
            C[i] = i == 3 || i == 7 ? -99.0f : 1.0f;
        ref_sgemm(ta, tb, 2, 3, 4, 2.0f, A, lda, B, ldb, -1.0f, C, ldc);
        CHECK(block_equals(C, ldc, scaled, 2, 3) && C[3] == -99.0f && C[7] == -99.0f,
              "2x3x4 %c%c alpha 2 beta -1: got [%g %g %g; %g %g %g]", ta, tb, (double)C[0],
              (double)C[1], (double)C[2], (double)C[4], (double)C[5], (double)C[6]);
    }
}

/* K == 0 forms no product: C = beta * C, zeros over NaN for beta 0. */
static void ref_k0(void)
{
    float C[2] = {2.0f, -4.0f};
    ref_sgemm('N', 'N', 1, 2, 0, 1.0f, NULL, 1, NULL, 2, -1.5f, C, 2);
    CHECK(C[0] == -3.0f && C[1] == 6.0f, "K 0 beta -1.5: got %g %g, want -3 6", (double)C[0],
          (double)C[1]);
    float D[2] = {NAN, NAN};
    ref_sgemm('T', 'N', 1, 2, 0, 1.0f, NULL, 1, NULL, 2, 0.0f, D, 2);
    CHECK(D[0] == 0.0f && D[1] == 0.0f, "K 0 beta 0 over NaN: got %g %g", (double)D[0],
          (double)D[1]);
}

/* 2^24 + 1 - 2^24 is 0 in float arithmetic and 1 in double. */
static void ref_double_accumulation(void)
{
    const float a[3] = {1.0f, 1.0f, 1.0f}, b[3] = {16777216.0f, 1.0f, -16777216.0f};
    float c = NAN;
    ref_sgemm('N', 'N', 1, 1, 3, 1.0f, a, 3, b, 1, 0.0f, &c, 1);
    CHECK(c == 1.0f, "2^24 + 1 - 2^24: got %g, want 1 (accumulation not in double?)",
          (double)c);
}

void suite_ref(void)
{
    ref_2x2();
    ref_2x3x4();
    ref_k0();
    ref_double_accumulation();
}
