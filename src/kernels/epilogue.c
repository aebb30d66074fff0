/*
 * epilogue.c - bias and activation applied to a tile of C right after its
 * last ukernel call, while the tile is still in L1, so Y = act(X W + b)
 * needs no second pass over Y.
 *
 * GELU needs tanh or erf. libm's are exact but scalar calls, slower than
 * the GEMM itself for BERT's FFN; these are branch-free formulas the
 * compiler vectorises, built on an exp with Cody-Waite range reduction:
 *  - exp(x) = 2^n e^r, |r| <= ln2/2, e^r by its degree-6 Taylor polynomial
 *    (truncation error below 2^-25 relative);
 *  - tanh(y) = sign(y) (1 - 2 / (e^{2|y|} + 1));
 *  - erf(x) by Abramowitz and Stegun 7.1.26, |error| <= 1.5e-7.
 * Both give GELU within a few 1e-7 |x| absolute, which the tests bound.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/ukernel.h"

static inline float exp_approx(float x)
{
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    float n = floorf(x * 1.44269504f + 0.5f);
    /* ln 2 split in two so n * ln2_hi is exact. */
    float r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static inline float gelu_tanh(float x)
{
    float y = 0.7978845608f * (x + 0.044715f * x * x * x);
    float e = exp_approx(2.0f * fabsf(y));
    float t = 1.0f - 2.0f / (e + 1.0f);
    t = y < 0.0f ? -t : t;
    return 0.5f * x * (1.0f + t);
}

static inline float gelu_erf(float x)
{
    float z = fabsf(x) * 0.70710678f;
    float t = 1.0f / (1.0f + 0.3275911f * z);
    float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f +
                 t * (-1.453152027f + t * 1.061405429f))));
    float erf_z = 1.0f - poly * exp_approx(-z * z);
    erf_z = x < 0.0f ? -erf_z : erf_z;
    return 0.5f * x * (1.0f + erf_z);
}

void ukernel_epilogue(float *c, int64_t ldc, int m, int n, const float *bias,
                      tessel_activation activation)
{
    for (int i = 0; i < m; i++) {
        float *row = c + i * ldc;
        if (bias)
            for (int j = 0; j < n; j++)
                row[j] += bias[j];
        switch (activation) {
        case TESSEL_ACT_RELU:
            for (int j = 0; j < n; j++)
                row[j] = row[j] > 0.0f ? row[j] : 0.0f;
            break;
        case TESSEL_ACT_GELU_TANH:
            for (int j = 0; j < n; j++)
                row[j] = gelu_tanh(row[j]);
            break;
        case TESSEL_ACT_GELU_ERF:
            for (int j = 0; j < n; j++)
                row[j] = gelu_erf(row[j]);
            break;
        default:
            break;
        }
    }
}
