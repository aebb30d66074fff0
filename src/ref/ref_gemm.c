/*
 * ref_gemm.c - reference GEMM: three loops, double accumulation.
 */
#include "ref/ref.h"

static double element(const float *X, int64_t ld, char trans, int64_t row, int64_t col)
{
    return (trans == 'N' || trans == 'n') ? X[row * ld + col] : X[col * ld + row];
}

void ref_sgemm(char transa, char transb, int64_t M, int64_t N, int64_t K,
               float alpha, const float *A, int64_t lda,
               const float *B, int64_t ldb,
               float beta, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            double sum = 0.0;
            for (int64_t p = 0; p < K; p++)
                sum += element(A, lda, transa, i, p) * element(B, ldb, transb, p, j);
            double out = (double)alpha * sum;
            if (beta != 0.0f)
                out += (double)beta * C[i * ldc + j];
            C[i * ldc + j] = (float)out;
        }
    }
}
