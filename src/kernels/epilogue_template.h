/*
 * epilogue_template.h - bias and activation applied to a tile of C right
 * after its last ukernel call, while the tile is still in L1, so
 * Y = act(X W + b) needs no second pass over Y. Included by each
 * ukernel_<isa>.c after ukernel_template.h and written on its vectors
 * (uk_vec), so every ISA class runs it a vector at a time. (Written on
 * floats in a file of its own, built with the baseline flags, GELU ran an
 * element at a time and cost more than the GEMM it followed: 17 x 3072 x
 * 768 pre-packed, 2 threads, 358 -> 799 us.)
 *
 * GELU needs tanh or erf. libm's are exact but scalar calls; these are
 * branch-free formulas, built on an exp with Cody-Waite range reduction:
 *  - exp(x) = 2^n e^r, |r| <= ln2/2, e^r by its degree-6 Taylor polynomial
 *    (truncation error below 2^-25 relative), n rounded to the nearest
 *    integer by adding and subtracting 1.5 * 2^23;
 *  - tanh(y) = sign(y) (1 - 2 / (e^{2|y|} + 1));
 *  - erf(x) by Abramowitz and Stegun 7.1.26, |error| <= 1.5e-7.
 * Both give GELU within a few 1e-7 |x| absolute, which the tests bound.
 */
#ifndef TESSEL_EPILOGUE_TEMPLATE_H
#define TESSEL_EPILOGUE_TEMPLATE_H

/* Lane by lane, x where `take` is set, else y. */
static inline uk_vec uk_select(uk_ivec take, uk_vec x, uk_vec y)
{
    return (uk_vec)((take & (uk_ivec)x) | (~take & (uk_ivec)y));
}

static inline uk_vec uk_abs(uk_vec x)
{
    return (uk_vec)((uk_ivec)x & INT32_MAX);
}

/* |x| with the sign of s. */
static inline uk_vec uk_copysign(uk_vec x, uk_vec s)
{
    return (uk_vec)(((uk_ivec)x & INT32_MAX) | ((uk_ivec)s & INT32_MIN));
}

static inline uk_vec uk_exp(uk_vec x)
{
    const uk_vec lo = (uk_vec){0} - 87.0f, hi = (uk_vec){0} + 88.0f;
    x = uk_select(x < lo, lo, x);
    x = uk_select(x > hi, hi, x);
    /* At 1.5 * 2^23 a float's unit is 1: the sum rounds to an integer. */
    const float round = 0x1.8p23f;
    uk_vec n = (x * 1.44269504f + round) - round;
    /* ln 2 split in two so n * ln2_hi is exact. */
    uk_vec r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    uk_vec p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 +
                                                                            r * (1.0f / 720))))));
    uk_ivec bits = (__builtin_convertvector(n, uk_ivec) + 127) * (1 << 23);
    return p * (uk_vec)bits;
}

static inline uk_vec uk_gelu_tanh(uk_vec x)
{
    uk_vec y = 0.7978845608f * (x + 0.044715f * x * x * x);
    uk_vec e = uk_exp(2.0f * uk_abs(y));
    uk_vec t = uk_copysign(1.0f - 2.0f / (e + 1.0f), y);
    return 0.5f * x * (1.0f + t);
}

static inline uk_vec uk_gelu_erf(uk_vec x)
{
    uk_vec z = uk_abs(x) * 0.70710678f;
    uk_vec t = 1.0f / (1.0f + 0.3275911f * z);
    uk_vec poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f +
                                                                 t * (-1.453152027f +
                                                                      t * 1.061405429f))));
    uk_vec erf_z = uk_copysign(1.0f - poly * uk_exp(-z * z), x);
    return 0.5f * x * (1.0f + erf_z);
}

static inline uk_vec uk_activate(uk_vec x, tessel_activation activation)
{
    switch (activation) {
    case TESSEL_ACT_RELU: return uk_select(x > 0.0f, x, (uk_vec){0});
    case TESSEL_ACT_GELU_TANH: return uk_gelu_tanh(x);
    case TESSEL_ACT_GELU_ERF: return uk_gelu_erf(x);
    default: return x;
    }
}

/* See ukernel_epilogue (ukernel.h). Whole vectors of each row, then the
 * last few columns through a vector on the stack. */
static void uk_epilogue(float *c, int64_t ldc, int m, int n, const float *bias,
                        tessel_activation activation)
{
    for (int i = 0; i < m; i++) {
        float *row = c + i * ldc;
        int j = 0;
        for (; j + UK_VEC_FLOATS <= n; j += UK_VEC_FLOATS) {
            uk_vec x = uk_load(row + j);
            if (bias)
                x += uk_load(bias + j);
            uk_store(row + j, uk_activate(x, activation));
        }
        if (j < n) {
            float lane[UK_VEC_FLOATS] = {0}, add[UK_VEC_FLOATS] = {0};
            memcpy(lane, row + j, (size_t)(n - j) * sizeof(float));
            if (bias)
                memcpy(add, bias + j, (size_t)(n - j) * sizeof(float));
            uk_store(lane, uk_activate(uk_load(lane) + uk_load(add), activation));
            memcpy(row + j, lane, (size_t)(n - j) * sizeof(float));
        }
    }
}

#endif /* TESSEL_EPILOGUE_TEMPLATE_H */
