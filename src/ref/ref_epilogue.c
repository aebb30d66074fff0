/*
 * ref_epilogue.c - reference bias and activation, in double, straight
 * from the formulas in tessel.h.
 */
#include <math.h>

#include "ref/ref.h"

static double activate(double x, tessel_activation activation)
{
    const double pi = 3.14159265358979323846;
    switch (activation) {
    case TESSEL_ACT_RELU: return x > 0.0 ? x : 0.0;
    case TESSEL_ACT_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
    case TESSEL_ACT_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    default: return x;
    }
}

void ref_epilogue(int64_t M, int64_t N, float *C, int64_t ldc, const float *bias,
                  tessel_activation activation)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double x = (double)C[i * ldc + j] + (bias ? bias[j] : 0.0);
            C[i * ldc + j] = (float)activate(x, activation);
        }
}
