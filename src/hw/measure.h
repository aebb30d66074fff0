/*
 * measure.h - internal to src/hw: the timing loops each ISA class provides
 * (instantiated from measure_loops.h) and the measurement entry point that
 * probe.c calls. Nothing here is used outside src/hw/.
 */
#ifndef TESSEL_HW_MEASURE_H
#define TESSEL_HW_MEASURE_H

#include <stddef.h>

#include "hw/hw.h"

/* The loops of one ISA class. Each returns a value derived from its work so
 * the compiler cannot drop it; the caller times the call. */
typedef struct hw_loops {
    /* HW_FMA_CHAINS independent chains of `iters` dependent FMAs each. */
    float (*fma_chains)(long iters);
    /* One chain of 4 * `iters` dependent FMAs through the accumulator. */
    float (*fma_dependent)(long iters);
    /* HW_FMA_CHAINS chains of `iters` FMAs each, every FMA fed by its own
     * broadcast of a float of a (HW_BROADCAST_FLOATS of them), as a
     * ukernel's FMAs are fed by A. */
    float (*fma_broadcast)(const float *a, long iters);
    /* Reads `nfloats` floats (a multiple of 8 vectors, 64-byte aligned)
     * `passes` times. */
    float (*read_sum)(const float *buf, size_t nfloats, long passes);
} hw_loops;

/* Independent chains in fma_chains: enough to cover latency 4-6 times two or
 * three FMA pipes, and still fit 16 registers with the two operands. */
enum { HW_FMA_CHAINS = 12 };
/* The floats fma_broadcast cycles through: 32 steps' worth, in L1. */
enum { HW_BROADCAST_FLOATS = 32 * HW_FMA_CHAINS };

float hw_fma_chains_generic(long iters);
float hw_fma_dependent_generic(long iters);
float hw_fma_broadcast_generic(const float *a, long iters);
float hw_read_sum_generic(const float *buf, size_t nfloats, long passes);
#if defined(__x86_64__)
float hw_fma_chains_avx2(long iters);
float hw_fma_dependent_avx2(long iters);
float hw_fma_broadcast_avx2(const float *a, long iters);
float hw_read_sum_avx2(const float *buf, size_t nfloats, long passes);
float hw_fma_chains_avx512(long iters);
float hw_fma_dependent_avx512(long iters);
float hw_fma_broadcast_avx512(const float *a, long iters);
float hw_read_sum_avx512(const float *buf, size_t nfloats, long passes);
#endif

/* What hw_measure times besides the FMAs. */
typedef enum {
    HW_MEASURE_QUICK, /* the L3's read bandwidth, briefly */
    HW_MEASURE_ALL    /* the read bandwidth of every level */
} hw_measure_what;

/* Fills the measured fields of *p for p->isa: frequency, FMA peak, latency,
 * issue rate and the cost of a broadcast always; read bandwidth as `what`
 * asks. */
void hw_measure(hw_profile *p, hw_measure_what what);

#endif /* TESSEL_HW_MEASURE_H */
