/*
 * canary.c - the machine-speed canary (canary.h). Each thread makes
 * CANARY_SAMPLES short runs of a fixed piece of arithmetic, 10
 * independent chains of 8-float multiply-adds: enough independent work
 * that the FP pipes, not the chains' latency, set the pace, so a core the
 * host shares or holds back reads slow. A run takes about a third of a
 * millisecond; a thread's speed is its median run, so one interrupted run
 * does not count. The best (shortest) run any thread has taken is the
 * yardstick; the first calls set it, and a faster run later only lowers
 * it, so a slow start costs a few needless retimes, never a missed one.
 *
 * The runs are made by helper threads, one on each CPU the benchmark's
 * threads run on (the caller's first), while the caller waits. Left to
 * the scheduler, a helper sometimes shared the caller's CPU while the
 * other idled, and the check read half speed while the libraries ran at
 * full speed.
 *
 * What it saw on the 2-vCPU AMD EPYC (Zen 4) of 2026-12-06: runs within
 * 1-4% of the best while the machine was calm, and 0.50 of it while both
 * libraries ran a 2-thread GEMM at one thread's speed (31 x 2304 x 768,
 * 114 and 112 GFLOP/s; the shapes timed just before and after it ran at
 * 206-220), with the guest's steal time flat (8 ticks in 35 minutes of
 * benchmarks).
 */
#define _GNU_SOURCE /* CPU affinity: pthread_attr_setaffinity_np, sched_getcpu */

#include "canary.h"
#include "timing.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#define CANARY_CHAINS 10
#define CANARY_MAX_THREADS 16
#define CANARY_SAMPLES 5

/* About 0.3 ms on a 3.7 GHz core. */
static const long CANARY_STEPS = 200000;

typedef float canary_vec __attribute__((vector_size(32)));

static double best_s = 1e30;
static volatile float sink;

/* The fixed work, its seconds: x = x * 0.5 + 1, which converges to 2, so
 * the chains never reach infinities or denormals, whose speed differs.
 * Unrolled, so that the chains live in registers: kept in memory (an
 * array loaded and stored every step), the loop's pace was set by store
 * forwarding, which the host's spells slowed 2x while the libraries'
 * FMAs ran at full speed. With FMA where the CPU has it, as the
 * libraries run; else a multiply and an add on 8-float vectors, which
 * the compiler lowers to what the target has. */
#define CANARY_LOOP(step)                                                      \
    canary_vec x[CANARY_CHAINS];                                               \
    const canary_vec half = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};  \
    const canary_vec one = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f};   \
    for (int c = 0; c < CANARY_CHAINS; c++)                                    \
        x[c] = one * (float)c;                                                 \
    double t0 = bench_now_s();                                                 \
    for (long s = 0; s < CANARY_STEPS; s++)                                    \
        _Pragma("GCC unroll 16") for (int c = 0; c < CANARY_CHAINS; c++)       \
            x[c] = step;                                                       \
    double t = bench_now_s() - t0;                                             \
    float sum = 0.0f; /* every chain's result used: none is optimised away */ \
    for (int c = 0; c < CANARY_CHAINS; c++)                                    \
        sum += x[c][0];                                                        \
    sink = sum;                                                                \
    return t

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static double canary_run_fma(void)
{
    CANARY_LOOP(__builtin_ia32_vfmaddps256(x[c], half, one));
}
#endif

static double canary_run_plain(void)
{
    CANARY_LOOP(x[c] * half + one);
}

static double canary_run(void)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2"))
        return canary_run_fma();
#endif
    return canary_run_plain();
}

typedef struct {
    atomic_int *go;
    double seconds[CANARY_SAMPLES];
} canary_thread;

static void canary_samples(canary_thread *ct)
{
    for (int i = 0; i < CANARY_SAMPLES; i++)
        ct->seconds[i] = canary_run();
}

/* Helpers wait for `go` so that every thread's runs overlap the others'. */
static void *canary_helper(void *arg)
{
    canary_thread *ct = arg;
    while (!atomic_load(ct->go)) {
    }
    canary_samples(ct);
    return NULL;
}

static double median_seconds(double *v)
{
    /* CANARY_SAMPLES is small: insertion sort */
    for (int i = 1; i < CANARY_SAMPLES; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return v[CANARY_SAMPLES / 2];
}

/* The CPUs to check: the caller's, then the next ones it may run on. */
static int pick_cpus(int threads, int *cpus)
{
    cpu_set_t allowed;
    int here = sched_getcpu();
    if (here < 0 || sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return 0;
    int n = 0;
    cpus[n++] = here;
    for (int c = 0; c < CPU_SETSIZE && n < threads; c++)
        if (c != here && CPU_ISSET(c, &allowed))
            cpus[n++] = c;
    return n;
}

double canary_capacity(int threads)
{
    if (threads < 1)
        threads = 1;
    if (threads > CANARY_MAX_THREADS)
        threads = CANARY_MAX_THREADS;
    int cpus[CANARY_MAX_THREADS];
    int n = pick_cpus(threads, cpus);
    atomic_int go = 0;
    canary_thread ct[CANARY_MAX_THREADS];
    pthread_t tid[CANARY_MAX_THREADS];
    int started = 0;
    for (int i = 0; i < n; i++) {
        pthread_attr_t attr;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[i], &one);
        ct[i].go = &go;
        int ok = pthread_attr_init(&attr) == 0;
        ok = ok && pthread_attr_setaffinity_np(&attr, sizeof one, &one) == 0 &&
             pthread_create(&tid[i], &attr, canary_helper, &ct[i]) == 0;
        pthread_attr_destroy(&attr);
        if (!ok)
            break;
        started++;
    }
    atomic_store(&go, 1);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    if (started < n || n == 0)
        return 1.0;
    double slowest = 0.0;
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < CANARY_SAMPLES; k++)
            if (ct[i].seconds[k] < best_s)
                best_s = ct[i].seconds[k];
        double median = median_seconds(ct[i].seconds);
        if (median > slowest)
            slowest = median;
    }
    return slowest > 0.0 ? best_s / slowest : 1.0;
}
