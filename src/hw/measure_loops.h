/*
 * measure_loops.h - the timing loops, written once with GCC vector
 * extensions and instantiated per ISA class by measure_<isa>.c, each compiled
 * with its own target flags so the loops run on that class's registers.
 *
 * The including file defines, before including this header:
 *   MEASURE_VEC_BYTES   vector width in bytes (64, 32, 16)
 *   MEASURE_SUFFIX      name suffix of the instance (avx512, avx2, generic)
 *   MEASURE_FMA(a,b,c)  a*b + c, fused where the class has FMA. The project
 *                       builds with -std=c11, under which gcc does not
 *                       contract a*b + c, so the FMA classes pass intrinsics.
 * There is deliberately no include guard: each file includes it once.
 */
#include <stddef.h>

#include "hw/measure.h"

typedef float vf __attribute__((vector_size(MEASURE_VEC_BYTES)));

enum { VEC_FLOATS = MEASURE_VEC_BYTES / (int)sizeof(float) };

#define MEASURE_PASTE2(base, suffix) base##_##suffix
#define MEASURE_PASTE(base, suffix) MEASURE_PASTE2(base, suffix)
#define MEASURE_NAME(base) MEASURE_PASTE(base, MEASURE_SUFFIX)

/* Uninstrumented like the broadcast loop, which calls it: under
 * -fsanitize=undefined its lanes were checked one by one. */
__attribute__((no_sanitize("address", "undefined"))) static vf splat(float x)
{
    vf v;
    for (int i = 0; i < VEC_FLOATS; i++)
        v[i] = x;
    return v;
}

static float lane_sum(vf v)
{
    float s = 0.0f;
    for (int i = 0; i < VEC_FLOATS; i++)
        s += v[i];
    return s;
}

/* Operands come through volatiles so the compiler cannot evaluate the
 * chains at compile time. acc*x + y with x < 1 converges to y/(1-x) = 1, so
 * values stay normal however long the loop runs. The accumulator is the
 * multiplicand: the product then depends on the chain and cannot be hoisted
 * when MEASURE_FMA is a plain multiply and add. */
float MEASURE_NAME(hw_fma_chains)(long iters)
{
    volatile float xs = 0.9999f, ys = 0.0001f;
    vf x = splat(xs), y = splat(ys);
    vf a0 = splat(0.0f), a1 = splat(0.1f), a2 = splat(0.2f), a3 = splat(0.3f);
    vf a4 = splat(0.4f), a5 = splat(0.5f), a6 = splat(0.6f), a7 = splat(0.7f);
    vf a8 = splat(0.8f), a9 = splat(0.9f), a10 = splat(1.0f), a11 = splat(1.1f);
    /* Twelve named accumulators rather than an array: at -O2 the compiler
     * keeps every one in a register without relying on loop unrolling. */
    for (long i = 0; i < iters; i++) {
        a0 = MEASURE_FMA(a0, x, y);
        a1 = MEASURE_FMA(a1, x, y);
        a2 = MEASURE_FMA(a2, x, y);
        a3 = MEASURE_FMA(a3, x, y);
        a4 = MEASURE_FMA(a4, x, y);
        a5 = MEASURE_FMA(a5, x, y);
        a6 = MEASURE_FMA(a6, x, y);
        a7 = MEASURE_FMA(a7, x, y);
        a8 = MEASURE_FMA(a8, x, y);
        a9 = MEASURE_FMA(a9, x, y);
        a10 = MEASURE_FMA(a10, x, y);
        a11 = MEASURE_FMA(a11, x, y);
    }
    vf s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
    return lane_sum(s);
}

/* The chain runs through the addend, as a ukernel's accumulator does
 * (acc += a*b); for the unfused generic class that is the add latency alone,
 * which is what its ukernels wait on. x*y = 1e-8 keeps acc far from
 * overflow for any run length used here. */
float MEASURE_NAME(hw_fma_dependent)(long iters)
{
    volatile float xs = 0.0001f, ys = 0.0001f;
    vf x = splat(xs), y = splat(ys), acc = splat(0.0f);
    for (long i = 0; i < iters; i++) {
        acc = MEASURE_FMA(x, y, acc);
        acc = MEASURE_FMA(x, y, acc);
        acc = MEASURE_FMA(x, y, acc);
        acc = MEASURE_FMA(x, y, acc);
    }
    return lane_sum(acc);
}

/* As hw_fma_chains, but each FMA multiplies by a float of `a` broadcast
 * from memory, one broadcast per FMA as in a ukernel one vector wide. On
 * cores that broadcast on a load port alone this runs as fast as the
 * chains; where a broadcast also takes a vector pipe (measured: AMD EPYC
 * family 23, 256-bit broadcasts), the difference is what it costs.
 * acc += a*x with x = 1e-4 and a near 1 grows by 1e-4 a step. Left out of
 * the sanitizers' instrumentation, which checks every load (built with
 * -fsanitize=address and -O1, the probe read 104 cycles a broadcast; the
 * Makefile builds these loops at -O2 whatever the rest). */
__attribute__((no_sanitize("address", "undefined"))) float
MEASURE_NAME(hw_fma_broadcast)(const float *a, long iters)
{
    volatile float xs = 0.0001f;
    vf x = splat(xs);
    vf a0 = splat(0.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
    vf a6 = a0, a7 = a0, a8 = a0, a9 = a0, a10 = a0, a11 = a0;
    for (long i = 0; i < iters; i++) {
        const float *p = a + (i % (HW_BROADCAST_FLOATS / HW_FMA_CHAINS)) * HW_FMA_CHAINS;
        a0 = MEASURE_FMA(splat(p[0]), x, a0);
        a1 = MEASURE_FMA(splat(p[1]), x, a1);
        a2 = MEASURE_FMA(splat(p[2]), x, a2);
        a3 = MEASURE_FMA(splat(p[3]), x, a3);
        a4 = MEASURE_FMA(splat(p[4]), x, a4);
        a5 = MEASURE_FMA(splat(p[5]), x, a5);
        a6 = MEASURE_FMA(splat(p[6]), x, a6);
        a7 = MEASURE_FMA(splat(p[7]), x, a7);
        a8 = MEASURE_FMA(splat(p[8]), x, a8);
        a9 = MEASURE_FMA(splat(p[9]), x, a9);
        a10 = MEASURE_FMA(splat(p[10]), x, a10);
        a11 = MEASURE_FMA(splat(p[11]), x, a11);
    }
    vf s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) + ((a8 + a9) + (a10 + a11));
    return lane_sum(s);
}

/* Eight independent sums so add latency never limits the load rate. */
float MEASURE_NAME(hw_read_sum)(const float *buf, size_t nfloats, long passes)
{
    const vf *v = (const vf *)buf;
    size_t nvec = nfloats / VEC_FLOATS;
    vf s0 = splat(0.0f), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0;
    for (long p = 0; p < passes; p++) {
        for (size_t i = 0; i + 8 <= nvec; i += 8) {
            s0 += v[i + 0];
            s1 += v[i + 1];
            s2 += v[i + 2];
            s3 += v[i + 3];
            s4 += v[i + 4];
            s5 += v[i + 5];
            s6 += v[i + 6];
            s7 += v[i + 7];
        }
    }
    return lane_sum(((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)));
}
