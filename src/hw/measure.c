/*
 * measure.c - what this machine measurably does on one core: clock
 * frequency, FMA peak, FMA latency and issue rate, and read bandwidth from
 * each cache level and from DRAM. Every number is the best of a few short
 * repetitions, since on a shared or virtual machine interference only ever
 * makes a run slower. The vector loops come from measure_<isa>.c, chosen by
 * the profile's ISA class; the whole full measurement stays well under 2 s.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "hw/measure.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static hw_loops loops_for(hw_isa isa)
{
    hw_loops l = {hw_fma_chains_generic, hw_fma_dependent_generic, hw_fma_broadcast_generic,
                  hw_read_sum_generic};
#if defined(__x86_64__)
    if (isa == HW_ISA_AVX512) {
        l.fma_chains = hw_fma_chains_avx512;
        l.fma_dependent = hw_fma_dependent_avx512;
        l.fma_broadcast = hw_fma_broadcast_avx512;
        l.read_sum = hw_read_sum_avx512;
    } else if (isa == HW_ISA_AVX2) {
        l.fma_chains = hw_fma_chains_avx2;
        l.fma_dependent = hw_fma_dependent_avx2;
        l.fma_broadcast = hw_fma_broadcast_avx2;
        l.read_sum = hw_read_sum_avx2;
    }
#else
    (void)isa;
#endif
    return l;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Results go to a volatile so no loop is removed as dead code. */
static volatile float float_sink;
static volatile uint64_t int_sink;

/* Each step is an add then an xor on the previous value: two dependent
 * single-cycle ALU operations on every core since the Pentium Pro, so a step
 * takes 2 cycles whatever the width of the core. Eight steps per iteration
 * keep the loop's own branch and counter negligible, which matters when an
 * SMT sibling shares the front end (measured here: a 1.7x slowdown with one
 * step per iteration while the other vCPU was busy). The operands come from
 * volatiles so the chain cannot be computed at compile time, and no algebra
 * shortens it. */
static uint64_t int_chain(long iters)
{
    volatile uint64_t va = 0x9e3779b97f4a7c15ull, vb = 0xbf58476d1ce4e5b9ull;
    uint64_t a = va, b = vb, x = 0;
    for (long i = 0; i < iters; i++) {
        x = (x + a) ^ b;
        x = (x + a) ^ b;
        x = (x + a) ^ b;
        x = (x + a) ^ b;
        x = (x + a) ^ b;
        x = (x + a) ^ b;
        x = (x + a) ^ b;
        x = (x + a) ^ b;
    }
    return x;
}

enum {
    QUICK_ROUNDS = 7,
    FREQ_ITERS = 125000,   /* 8 steps each: 2M cycles, ~0.5-1 ms */
    CHAIN_ITERS = 150000,  /* 12 FMAs each: ~1M cycles at 2 per cycle */
    DEP_ITERS = 60000,     /* 4 dependent FMAs each: ~1M cycles */
    BROADCAST_ROUNDS = 15,
    BROADCAST_GROUPS = 3,      /* of BROADCAST_ROUNDS pairs, a pause apart */
    BROADCAST_PAUSE_MS = 20,
    BROADCAST_ITERS = 50000, /* 12 FMAs each: 0.3-0.6M cycles */
};

/* The cycles a broadcast from memory adds to the FMA it feeds: the
 * broadcast loop against the chains just before it, in short pairs, and
 * the median of the pairs' ratios, the floats broadcast in a static block
 * on a cache line. Measured on AMD EPYC family 23, 25 processes idle and
 * 25 with the other vCPU busy: this way 0.21-0.25 cycles in all 50. The
 * best of each loop over 7 millisecond rounds read 0.2-1.0 (the best of
 * each came from rounds the host's clock or a neighbour treated
 * differently); their median ratio, the floats on the stack, 0.88 in 1
 * of 15 processes, the quartile 0.15-0.44 or, of 15 short pairs, 0.62-0.8
 * in 3 of 30 (the stack's alignment, it seems: static, none), and the
 * quartile of those 0.09-0.31. An hour later, with a neighbour sharing
 * the cores (the tiles of one vCPU at two thirds of their speed), it read
 * 0.8-1.0, though 8-wide tiles still ran at 0.82 of 16-wide ones: the
 * rule (plan/model.c) then takes 4x24 over 6x16, as fast in L1 (39.4-39.7
 * GF/s, 26.4 against 25.1 on the slowed vCPU). Against a loop of FMAs
 * each fed by a whole vector loaded instead of the chains, the ratio
 * read -0.1 to 0.4.
 *
 * A neighbour comes and goes in bursts, so the pairs run in three groups
 * 20 ms apart and the least of the groups' medians is kept: the cost on
 * a quiet core is what tiles see most of the time. One group (the rule
 * before, 2026-12-03) read 0.37-1.09 in 6 of 44 processes (5 past the
 * 0.4 that leaves 6x16 out), one of them beside a GEMM on the other
 * vCPU, so 6x16 and 4x24 changed places from process to process (4x24
 * leaves N = 64 a masked panel: 62x64x62 6% slower); three groups read
 * 0.21-0.24 in all 52 (+0.1 s a probe). Later, in a busier hour, three
 * read 0.41-0.73 in 2 of 20, and five groups 40 ms apart 0.40-0.97 in 5
 * of 30 (four in a row): bursts that outlast a probe, where 4x24 is in
 * fact the faster tile (above). */
static void measure_broadcast(hw_profile *p, const hw_loops *l)
{
    static _Alignas(64) float broadcast_src[HW_BROADCAST_FLOATS]; /* same values each call */
    for (int i = 0; i < HW_BROADCAST_FLOATS; i++)
        broadcast_src[i] = 1.0f + 0.001f * (float)i;
    double least = 0.0;
    for (int g = 0; g < BROADCAST_GROUPS; g++) {
        if (g > 0) {
            struct timespec pause = {0, BROADCAST_PAUSE_MS * 1000000L};
            nanosleep(&pause, NULL);
        }
        double ratio[BROADCAST_ROUNDS];
        for (int r = 0; r < BROADCAST_ROUNDS; r++) {
            double t0 = now_seconds();
            float_sink = l->fma_chains(BROADCAST_ITERS);
            double t1 = now_seconds();
            float_sink = l->fma_broadcast(broadcast_src, BROADCAST_ITERS);
            double t2 = now_seconds();
            ratio[r] = t1 > t0 ? (t2 - t1) / (t1 - t0) : 1.0;
        }
        qsort(ratio, BROADCAST_ROUNDS, sizeof ratio[0], compare_doubles);
        if (g == 0 || ratio[BROADCAST_ROUNDS / 2] < least)
            least = ratio[BROADCAST_ROUNDS / 2];
    }
    double extra = (least - 1.0) / p->fma_per_cycle;
    p->broadcast_cycles = extra > 0 ? extra : 0.0;
}

/* Frequency, FMA throughput and latency, interleaved round by round so
 * the three see the same clock (AVX-512 code may run at a lower one);
 * then the cost of a broadcast. */
static void measure_fma(hw_profile *p, const hw_loops *l)
{
    float_sink = l->fma_chains(CHAIN_ITERS / 4); /* wakes the vector units */

    double t_freq = 1e30, t_chain = 1e30, t_dep = 1e30;
    for (int r = 0; r < QUICK_ROUNDS; r++) {
        double t0 = now_seconds();
        int_sink = int_chain(FREQ_ITERS);
        double t1 = now_seconds();
        float_sink = l->fma_chains(CHAIN_ITERS);
        double t2 = now_seconds();
        float_sink = l->fma_dependent(DEP_ITERS);
        double t3 = now_seconds();
        if (t1 - t0 < t_freq)
            t_freq = t1 - t0;
        if (t2 - t1 < t_chain)
            t_chain = t2 - t1;
        if (t3 - t2 < t_dep)
            t_dep = t3 - t2;
    }
    if (t_freq <= 0 || t_chain <= 0 || t_dep <= 0)
        return; /* a clock that does not advance: keep the defaults */

    double hz = 2.0 * 8 * FREQ_ITERS / t_freq;
    double fmas = (double)HW_FMA_CHAINS * CHAIN_ITERS;
    double flops_per_s = fmas * 2.0 * p->vec_floats / t_chain;
    p->freq_ghz = hz * 1e-9;
    p->fma_peak_gflops = flops_per_s * 1e-9;
    p->fma_latency_cycles = t_dep / (4.0 * DEP_ITERS) * hz;
    p->fma_per_cycle = flops_per_s / (2.0 * p->vec_floats * hz);
    measure_broadcast(p, l);
}

/* Time budget of the full measurement, in seconds from its start: stop
 * touching the DRAM buffer once it is big enough after SOFT, at HARD in any
 * case, and start no DRAM pass that would end after END. Typical runs end in
 * a third of a second; these only bound the bad ones. */
static const double DRAM_SOFT_S = 0.8, DRAM_HARD_S = 1.4, DRAM_END_S = 1.8;

/* Page-aligned memory from the kernel, asking for huge pages so that
 * touching a large buffer costs fewer faults and TLB misses do not pollute
 * the DRAM figure. */
static float *map_buffer(size_t bytes)
{
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
#if defined(MADV_HUGEPAGE)
    madvise(m, bytes, MADV_HUGEPAGE);
#endif
    return m;
}

/* Best read bandwidth in GB/s over up to `reps` timings of about
 * `bytes_per_rep` bytes each; a repetition that would end after `deadline`
 * is not started. With `warm`, one untimed pass first brings the buffer into
 * the cache level being measured. */
static double read_bandwidth(const hw_loops *l, const float *buf, size_t bytes,
                             size_t bytes_per_rep, int reps, bool warm, double deadline)
{
    size_t nfloats = bytes / sizeof(float);
    long passes = (long)(bytes_per_rep / bytes);
    if (passes < 1)
        passes = 1;
    if (warm)
        float_sink = l->read_sum(buf, nfloats, 1);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now_seconds();
        float_sink = l->read_sum(buf, nfloats, passes);
        double t1 = now_seconds();
        if (t1 - t0 < best)
            best = t1 - t0;
        if (t1 + (t1 - t0) > deadline)
            break;
    }
    return best > 0 ? (double)bytes * (double)passes / best * 1e-9 : 0.0;
}

/* Sizes whole 512-byte blocks: the read loop consumes eight vectors at a
 * time. */
static size_t round_block(int64_t bytes)
{
    return (size_t)(bytes / 512 * 512);
}

/* The buffer that measures the L3: it must clearly overflow the L2 (4x)
 * but stay well inside the L3 (half). 0 without both levels. */
static size_t l3_buffer_bytes(const hw_profile *p)
{
    const hw_cache *l2 = hw_data_cache(p, 2), *l3 = hw_data_cache(p, 3);
    if (!l2 || !l3)
        return 0;
    int64_t s = l3->size_bytes / 2;
    if (s > 4 * l2->size_bytes)
        s = 4 * l2->size_bytes;
    return round_block(s);
}

static void measure_bandwidth(hw_profile *p, const hw_loops *l, double start)
{
    const hw_cache *l1 = hw_data_cache(p, 1), *l2 = hw_data_cache(p, 2), *l3 = hw_data_cache(p, 3);
    const hw_cache *last = l3 ? l3 : l2 ? l2 : l1;

    /* Half of each level leaves room for the code's own lines and for
     * imperfect replacement. */
    size_t size[HW_LEVEL_COUNT] = {0, 0, 0, 0};
    size[HW_LEVEL_L1] = round_block(l1 ? l1->size_bytes / 2 : 16 << 10);
    if (l2)
        size[HW_LEVEL_L2] = round_block(l2->size_bytes / 2);
    size[HW_LEVEL_L3] = l3_buffer_bytes(p);
    /* DRAM: four times the last level defeats it with any replacement
     * policy; 1 GiB bounds the time and memory spent. */
    int64_t dram = last ? 4 * last->size_bytes : 256 << 20;
    if (dram > (int64_t)1 << 30)
        dram = (int64_t)1 << 30;
    if (dram < 64 << 20)
        dram = 64 << 20;
    size[HW_LEVEL_DRAM] = round_block(dram);

    size_t cache_bytes = size[HW_LEVEL_L1];
    for (int lv = HW_LEVEL_L2; lv <= HW_LEVEL_L3; lv++)
        if (size[lv] > cache_bytes)
            cache_bytes = size[lv];
    float *buf = map_buffer(cache_bytes);
    if (buf) {
        memset(buf, 0, cache_bytes);
        for (int lv = HW_LEVEL_L1; lv <= HW_LEVEL_L3; lv++)
            if (size[lv] > 0)
                p->read_gbs[lv] = read_bandwidth(l, buf, size[lv], 16 << 20, 9, true, 1e30);
        munmap(buf, cache_bytes);
    }

    /* A smaller DRAM buffer if memory is short, as long as it still
     * overflows the last level twice. */
    size_t bytes = size[HW_LEVEL_DRAM];
    size_t floor_bytes = last ? round_block(2 * last->size_bytes) : bytes;
    buf = map_buffer(bytes);
    while (!buf && bytes / 2 >= floor_bytes && bytes / 2 > 0) {
        bytes = round_block((int64_t)(bytes / 2));
        buf = map_buffer(bytes);
    }
    if (!buf)
        return;
    /* One write per page makes the kernel back every page with real,
     * distinct memory (untouched pages would all read the one shared zero
     * page, from cache). On a busy or freshly booted VM that can take a
     * second per GiB, so past the time budget a prefix still twice the last
     * level will do, and with less than that DRAM stays unmeasured. */
    size_t touched = 0;
    const size_t chunk = 16 << 20;
    while (touched < bytes) {
        double t = now_seconds();
        if (t > start + DRAM_SOFT_S && touched >= floor_bytes)
            break;
        if (t > start + DRAM_HARD_S)
            break;
        size_t end = touched + chunk < bytes ? touched + chunk : bytes;
        for (size_t off = touched; off < end; off += 4096)
            ((volatile char *)buf)[off] = 0;
        touched = end;
    }
    /* The buffer is far larger than the last level, so touching it left
     * nothing useful cached: no warm-up pass. */
    if (touched >= floor_bytes && touched > 0)
        p->read_gbs[HW_LEVEL_DRAM] =
            read_bandwidth(l, buf, round_block((int64_t)touched), 0, 2, false, start + DRAM_END_S);
    munmap(buf, bytes);
}

/* The L3 alone, in a few milliseconds: the rules ask whether it feeds the
 * tiles (plan/model.c, model_l3_feeds_tile), and a context cannot wait for
 * the whole measurement. The best of twelve repetitions: on a host whose
 * other guests share the L3, the best of four read 37-68 GB/s on the Zen
 * 3 of 2026-12-07 (40 processes), the best of twelve 49-81, for 3 ms more
 * (the quick measurement took 61 ms, then 64). */
static const int QUICK_L3_REPS = 12;
static const size_t QUICK_L3_REP_BYTES = 16 << 20;

static void measure_l3(hw_profile *p, const hw_loops *l)
{
    size_t bytes = l3_buffer_bytes(p);
    if (bytes == 0)
        return;
    float *buf = map_buffer(bytes);
    if (!buf)
        return;
    memset(buf, 0, bytes);
    p->read_gbs[HW_LEVEL_L3] =
        read_bandwidth(l, buf, bytes, QUICK_L3_REP_BYTES, QUICK_L3_REPS, true, 1e30);
    munmap(buf, bytes);
}

void hw_measure(hw_profile *p, hw_measure_what what)
{
    double start = now_seconds();
    hw_loops l = loops_for(p->isa);
    measure_fma(p, &l);
    if (what == HW_MEASURE_ALL)
        measure_bandwidth(p, &l, start);
    else
        measure_l3(p, &l);
}
