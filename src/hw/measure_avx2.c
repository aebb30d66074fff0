/*
 * measure_avx2.c - the timing loops on 256-bit ymm vectors. Built with
 * -mavx2 -mfma (Makefile, *_avx2.c) and called only when the probe found
 * AVX2 and FMA usable; the FMA is an intrinsic because -std=c11 keeps gcc
 * from fusing a*b + c on its own.
 */
#include <immintrin.h>

#define MEASURE_VEC_BYTES 32
#define MEASURE_SUFFIX avx2
#define MEASURE_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))

#include "hw/measure_loops.h"
