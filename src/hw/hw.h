/*
 * hw.h - the hardware model: what the machine is (ISA, caches, cores) and
 * what it measurably does (FMA peak and latency, read bandwidth per level).
 *
 * The planner reads only this struct, so a profile from another machine, or
 * one restricted by TESSEL_ISA, plans exactly as that machine would.
 */
#ifndef TESSEL_HW_H
#define TESSEL_HW_H

#include <stdbool.h>
#include <stdint.h>

/* ISA classes the ukernels are built for, from weakest to strongest. */
typedef enum hw_isa {
    HW_ISA_GENERIC = 0, /* whatever the compiler targets by default (SSE2, NEON) */
    HW_ISA_AVX2 = 1,    /* AVX2 + FMA, 16 ymm registers */
    HW_ISA_AVX512 = 2,  /* AVX-512 F, 32 zmm registers */
    HW_ISA_COUNT
} hw_isa;

enum { HW_MAX_CACHES = 8 };

/* Memory levels whose read bandwidth is measured. */
enum { HW_LEVEL_L1 = 0, HW_LEVEL_L2, HW_LEVEL_L3, HW_LEVEL_DRAM, HW_LEVEL_COUNT };

typedef struct hw_cache {
    int level;            /* 1, 2, 3 ... */
    char type;            /* 'D' data, 'I' instruction, 'U' unified */
    int64_t size_bytes;   /* one instance */
    int ways;             /* associativity; 0 if unknown */
    int line_bytes;
    int shared_by;        /* logical CPUs sharing one instance */
} hw_cache;

typedef struct hw_profile {
    char cpu_name[64];          /* brand string, or "unknown" */
    char arch[16];              /* "x86_64", "aarch64", ... */

    /* What the CPU reports (before any TESSEL_ISA restriction). */
    bool has_avx2, has_fma, has_avx512f, has_avx512bw, has_avx512vl,
         has_avx512bf16, has_amx, has_neon;

    /* What tessel uses: the best class the CPU, the OS and TESSEL_ISA allow. */
    hw_isa isa;
    int vec_floats;             /* floats per vector register of `isa` */
    int vec_registers;          /* architectural vector registers of `isa` */

    int ncaches;
    hw_cache caches[HW_MAX_CACHES];

    int cores;                  /* CPUs in the process affinity mask */

    /* Measured (zero when the profile was taken without measuring). */
    double freq_ghz;            /* estimated core clock */
    double fma_peak_gflops;     /* one core, `isa` vectors, fp32 */
    double fma_latency_cycles;  /* dependent vector FMA latency */
    double fma_per_cycle;       /* vector FMA issues per cycle */
    double broadcast_cycles;    /* FMA-pipe cycles a scalar broadcast from
                                 * memory adds to the FMA it feeds (0 where
                                 * it only takes a load port) */
    double read_gbs[HW_LEVEL_COUNT]; /* one core's read bandwidth per level */

    uint64_t fingerprint;       /* CPU model, ISA, caches, cores */
} hw_profile;

/* Fills *p from cpuid/auxval/sysfs, applies TESSEL_ISA and, if `measure`,
 * times the FMA peak, latency and read bandwidths (the whole measurement
 * under 2 s). Without `measure`, the measured fields get analytic defaults
 * for the ISA (fma_latency_cycles 4, fma_per_cycle 2 for AVX-512/AVX2...)
 * and freq_ghz/fma_peak_gflops/read_gbs stay 0. Returns 0 on success, -1 if
 * TESSEL_ISA names an unknown class or one the CPU lacks (p is still filled
 * with the best available class). */
int hw_probe(hw_profile *p, bool measure);

/* The process-wide profile, probed once (quick measurement only: FMA
 * peak and latency and, in a few milliseconds, the L3's read bandwidth),
 * thread-safe. Never NULL. */
const hw_profile *hw_default_profile(void);

/* Cache lookups: the data or unified cache of `level`, or NULL. */
const hw_cache *hw_data_cache(const hw_profile *p, int level);

const char *hw_isa_name(hw_isa isa);
/* Parses "avx512", "avx2", "generic"; returns -1 if unknown. */
int hw_isa_parse(const char *name);

/* Builds a profile for a known machine without touching this one, so the
 * model can be unit-tested with hand-computed numbers (the PRESETS table
 * in probe.c):
 * "zen4" (AVX-512, 32 regs, L1 32K/8-way, L2 1M/8-way, L3 32M/16-way),
 * "zen3" (AVX2, 16 regs, 2 FMA pipes, L1 32K/8-way, L2 512K/8-way, L3
 * 32M/16-way) and "avx2-16" (AVX2, 16 regs, L1 32K/8-way, L2 256K/4-way,
 * L3 8M/16-way). */
int hw_profile_preset(hw_profile *p, const char *name);

#endif /* TESSEL_HW_H */
