/*
 * samples.c - the training set of calibration: seeded shapes like those
 * inference produces (a few tokens to a thousand rows against layer widths
 * from 64 to 4096), and for each the model's plan plus one variant of it,
 * measured. Variants teach the fit what the knobs cost; the model's own
 * plans teach it the plans it will actually rank.
 */
#include <math.h>

#include "tune/tune.h"

static const int64_t WIDTHS[] = {64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
enum { NWIDTHS = sizeof WIDTHS / sizeof WIDTHS[0] };
/* Keeps one training measurement to a few milliseconds. */
static const double MAX_TRAINING_FLOPS = 2.5e9;

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

gemm_shape tune_training_shape(uint64_t seed, int i)
{
    uint64_t r = mix(seed * 1000003ull + (uint64_t)i);
    gemm_shape s = {0};
    /* log-uniform M in [1, 1024] */
    double u = (double)(r & 0xffff) / 65536.0;
    s.M = (int64_t)exp(u * log(1024.0));
    if (s.M < 1)
        s.M = 1;
    s.N = WIDTHS[(r >> 16) % NWIDTHS];
    s.K = WIDTHS[(r >> 24) % NWIDTHS];
    unsigned layout = (unsigned)((r >> 32) % 20);
    s.transb = layout >= 14;                 /* 30% NT, as attention's Q K^T */
    s.transa = layout >= 12 && layout < 14;  /* 10% TN */
    while (2.0 * (double)s.M * (double)s.N * (double)s.K > MAX_TRAINING_FLOPS && s.M > 1)
        s.M /= 2;
    return s;
}

int tune_collect(tune_bench *b, const plan_model *m, uint64_t seed, int n, double seconds,
                 tune_sample *out, tune_progress_fn progress, void *arg)
{
    double start = rt_seconds();
    int taken = 0;
    plan_choice variants[16];
    for (int i = 0; taken < n; i++) {
        double elapsed = rt_seconds() - start;
        if (elapsed > seconds / 2)
            break;
        if (progress)
            progress(arg, elapsed / seconds);
        gemm_shape s = tune_training_shape(seed, i);
        if (!tune_bench_fits(b, &s))
            continue;
        int nvariants = plan_variants(m, &s, b->env.threads, variants, 16);
        int pick[2] = {0, nvariants > 1 ? 1 + (int)(mix(seed + (uint64_t)i) % (uint64_t)(nvariants - 1)) : -1};
        for (int j = 0; j < 2 && taken < n; j++) {
            if (pick[j] < 0)
                continue;
            gemm_plan p;
            plan_gemm_choice(m, &s, b->env.threads, &variants[pick[j]], &p);
            tune_sample *t = &out[taken++];
            t->shape = s;
            t->choice = variants[pick[j]];
            t->threads = b->env.threads;
            plan_cost_features(m, &s, &p, t->features);
            t->seconds = tune_time_plan(b, &s, &p, 0.004);
        }
    }
    /* Every sample timed again, seconds after the first (measure.c,
     * tune_retime_faster). */
    for (int i = 0; i < taken; i++) {
        gemm_plan p;
        plan_gemm_choice(m, &out[i].shape, b->env.threads, &out[i].choice, &p);
        tune_retime_faster(b, &out[i].shape, &p, 0.004, &out[i].seconds);
        if (progress)
            progress(arg, 0.5 + 0.5 * (i + 1) / taken);
    }
    if (progress)
        progress(arg, 1.0);
    return taken;
}
