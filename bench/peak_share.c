/*
 * peak_share.c - how much of the machine's FMA peak each library reaches on
 * one large GEMM (2048^3 by default), with the peak timed in the same
 * rounds as the libraries.
 *
 * bench/run's pct_peak column divides by one peak, probed before the run
 * starts. On a shared host the clock the benchmark gets drifts by several
 * percent over minutes (the probe read 106 and 113 GFLOP/s an hour apart on
 * the 2-vCPU Zen 4), so a GEMM timed minutes later is measured against
 * another machine. Here each round times the peak loop `tessel probe` uses
 * (HW_FMA_CHAINS independent chains of vector FMAs, the fastest of a few
 * short runs), then each library's calls, then the peak loop again; the
 * round's peak is the higher of its two readings, so a round in which the
 * clock rose counts against the libraries, never for them. A library's
 * share of the peak is the median over the rounds of its GFLOP/s (median
 * of its calls in the round) over the round's peak.
 *
 *   peak_share [--size M N K] [--threads T] [--rounds R] [--calls C]
 *              [--libs tessel,onednn,openblas,blis]
 *
 * Writes a markdown table to stdout, progress to stderr. With T threads
 * the peak is T times one core's (the loop runs on the calling thread).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"
#include "timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hw/hw.h"
#include "hw/measure.h"

enum { MAX_LIBS = 4, MAX_ROUNDS = 64, MAX_CALLS = 64 };

/* The peak loop's share of a reading: the fastest of PEAK_RUNS runs of
 * PEAK_ITERS steps (12 FMAs a step: about 0.5 ms on one 512-bit FMA
 * pipe), as the probe takes the fastest of its rounds. */
enum { PEAK_RUNS = 7 };
static const long PEAK_ITERS = 150000;

static volatile float sink;

typedef float (*fma_loop)(long iters);

static fma_loop peak_loop(hw_isa isa)
{
#if defined(__x86_64__)
    if (isa == HW_ISA_AVX512)
        return hw_fma_chains_avx512;
    if (isa == HW_ISA_AVX2)
        return hw_fma_chains_avx2;
#endif
    (void)isa;
    return hw_fma_chains_generic;
}

/* One core's FMA peak now, GFLOP/s. */
static double read_peak(fma_loop loop, int vec_floats)
{
    double best = 1e30;
    for (int r = 0; r < PEAK_RUNS; r++) {
        double t0 = bench_now_s();
        sink = loop(PEAK_ITERS);
        double t = bench_now_s() - t0;
        if (t < best)
            best = t;
    }
    double flops = 2.0 * vec_floats * (double)HW_FMA_CHAINS * (double)PEAK_ITERS;
    return flops / best * 1e-9;
}

static const bench_lib *find_lib(const char *name)
{
    static const bench_lib *const known[] = {&bench_lib_tessel, &bench_lib_onednn,
                                             &bench_lib_openblas, &bench_lib_blis};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i]->name, name) == 0)
            return known[i];
    return NULL;
}

static float *random_matrix(size_t n, unsigned *seed)
{
    float *m = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    for (size_t i = 0; m && i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        m[i] = (float)((*seed >> 8) & 0xffff) / 65536.0f - 0.5f;
    }
    return m;
}

static void usage(void)
{
    fprintf(stderr, "usage: peak_share [--size M N K] [--threads T] [--rounds R] [--calls C]\n"
                    "                  [--libs tessel,onednn,openblas,blis]\n");
}

int main(int argc, char **argv)
{
    bench_problem p = {.batch = 1, .M = 2048, .N = 2048, .K = 2048, .transa = 'N',
                       .transb = 'N'};
    int threads = 1, rounds = 7, calls = 3;
    char libs_arg[256] = "tessel,onednn";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 3 < argc) {
            p.M = atoll(argv[i + 1]);
            p.N = atoll(argv[i + 2]);
            p.K = atoll(argv[i + 3]);
            i += 3;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc) {
            calls = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--libs") == 0 && i + 1 < argc) {
            snprintf(libs_arg, sizeof libs_arg, "%s", argv[++i]);
        } else {
            usage();
            return 2;
        }
    }
    if (p.M < 1 || p.N < 1 || p.K < 1 || threads < 1 || rounds < 1 || rounds > MAX_ROUNDS ||
        calls < 1 || calls > MAX_CALLS) {
        usage();
        return 2;
    }
    bench_problem_layout(&p);

    const bench_lib *libs[MAX_LIBS];
    int nlibs = 0;
    for (char *name = strtok(libs_arg, ","); name; name = strtok(NULL, ",")) {
        const bench_lib *l = find_lib(name);
        if (!l || nlibs == MAX_LIBS) {
            fprintf(stderr, "peak_share: unknown or repeated library '%s'\n", name);
            return 2;
        }
        libs[nlibs++] = l;
    }

    const hw_profile *hw = hw_default_profile();
    fma_loop loop = peak_loop(hw->isa);
    unsigned seed = 12345u;
    float *A = random_matrix((size_t)(p.M * p.K), &seed);
    float *B = random_matrix((size_t)(p.K * p.N), &seed);
    float *C[MAX_LIBS];
    bench_call *call[MAX_LIBS];
    char err[256];
    for (int l = 0; l < nlibs; l++) {
        C[l] = random_matrix((size_t)(p.M * p.N), &seed);
        if (!A || !B || !C[l] || libs[l]->set_threads(threads) != 0 ||
            !(call[l] = libs[l]->prepare(&p, A, B, C[l], err, sizeof err))) {
            fprintf(stderr, "peak_share: cannot prepare %s\n", libs[l]->name);
            return 1;
        }
        /* warm: tessel's plan, oneDNN's JIT, first-touch faults */
        if (libs[l]->run(call[l], err, sizeof err) != 0) {
            fprintf(stderr, "peak_share: %s failed: %s\n", libs[l]->name, err);
            return 1;
        }
        if (libs[l]->park)
            libs[l]->park();
    }

    double flops = 2.0 * (double)p.M * (double)p.N * (double)p.K;
    double share[MAX_LIBS][MAX_ROUNDS], gflops[MAX_LIBS][MAX_ROUNDS], peaks[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        double before = read_peak(loop, hw->vec_floats);
        double got[MAX_LIBS];
        for (int l = 0; l < nlibs; l++) {
            double t[MAX_CALLS];
            for (int c = 0; c < calls; c++) {
                double t0 = bench_now_s();
                if (libs[l]->run(call[l], err, sizeof err) != 0) {
                    fprintf(stderr, "peak_share: %s failed: %s\n", libs[l]->name, err);
                    return 1;
                }
                t[c] = bench_now_s() - t0;
            }
            if (libs[l]->park)
                libs[l]->park();
            /* as gemm_bench does: an OpenMP pool's spinning workers
             * would take the cores of the next library or peak loop */
            if (threads > 1)
                nanosleep(&(struct timespec){0, 25000000L}, NULL);
            got[l] = flops / bench_median(t, calls) * 1e-9;
        }
        double after = read_peak(loop, hw->vec_floats);
        double peak = (before > after ? before : after) * threads;
        peaks[r] = peak;
        fprintf(stderr, "peak_share: round %d: peak %.1f GFLOP/s (%.1f before, %.1f after)",
                r + 1, peak, before * threads, after * threads);
        for (int l = 0; l < nlibs; l++) {
            gflops[l][r] = got[l];
            share[l][r] = got[l] / peak;
            fprintf(stderr, ", %s %.1f (%.1f%%)", libs[l]->name, got[l], 100.0 * share[l][r]);
        }
        fprintf(stderr, "\n");
    }

    double lo = peaks[0], hi = peaks[0];
    for (int r = 1; r < rounds; r++) {
        lo = peaks[r] < lo ? peaks[r] : lo;
        hi = peaks[r] > hi ? peaks[r] : hi;
    }
    printf("%lldx%lldx%lld NN at %d thread(s), %d rounds of %d calls per library; "
           "FMA peak (%s, timed before and after each round's libraries, the higher "
           "kept) %.1f GFLOP/s, %.1f-%.1f over the rounds\n\n",
           (long long)p.M, (long long)p.N, (long long)p.K, threads, rounds, calls,
           hw_isa_name(hw->isa), bench_median(peaks, rounds), lo, hi);
    printf("| library | GFLOP/s (median of rounds) | share of the round's peak, median "
           "| lowest | highest |\n|---|---:|---:|---:|---:|\n");
    for (int l = 0; l < nlibs; l++) {
        double g = bench_median(gflops[l], rounds);
        double s = bench_median(share[l], rounds); /* sorts share[l] */
        printf("| %s | %.1f | %.1f%% | %.1f%% | %.1f%% |\n", libs[l]->name, g, 100.0 * s,
               100.0 * share[l][0], 100.0 * share[l][rounds - 1]);
        libs[l]->release(call[l]);
        free(C[l]);
    }
    free(A);
    free(B);
    return 0;
}
