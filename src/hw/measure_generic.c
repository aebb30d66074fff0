/*
 * measure_generic.c - the timing loops on 128-bit vectors with the compiler's
 * default target: SSE2 on x86-64, which has no FMA, so a multiply and an add
 * (as the generic ukernels do there); NEON on aarch64, whose fused
 * multiply-add is passed as an intrinsic since -std=c11 keeps gcc from
 * fusing a*b + c on its own.
 */
#if defined(__aarch64__)
#include <arm_neon.h>
#define MEASURE_FMA(a, b, c) vfmaq_f32((c), (a), (b))
#else
#define MEASURE_FMA(a, b, c) ((a) * (b) + (c))
#endif

#define MEASURE_VEC_BYTES 16
#define MEASURE_SUFFIX generic

#include "hw/measure_loops.h"
