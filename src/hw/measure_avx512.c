/*
 * measure_avx512.c - the timing loops on 512-bit zmm vectors. Built with the
 * AVX-512 flags (Makefile, *_avx512.c) and called only when the probe found
 * AVX-512 usable; the FMA is an intrinsic because -std=c11 keeps gcc from
 * fusing a*b + c on its own.
 */
#include <immintrin.h>

#define MEASURE_VEC_BYTES 64
#define MEASURE_SUFFIX avx512
#define MEASURE_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))

#include "hw/measure_loops.h"
