/*
 * measure.c - the two measurements calibration rests on: one plan's time
 * through the operator that real calls run (op_sgemm_plan, on seeded
 * matrices held for the whole session), and each ukernel tile's k step in
 * L1, called directly from the registry, A packed and read in place.
 */
#include <stdlib.h>
#include <string.h>

#include "tune/tune.h"

/* A value in [-1, 1) from a counter: matrices differ per element but
 * are the same every run. */
static float seeded_value(uint64_t i)
{
    uint64_t z = i * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
    return (float)((double)(z >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

int tune_bench_init(tune_bench *b, const op_env *env, int64_t floats)
{
    memset(b, 0, sizeof *b);
    b->env = *env;
    b->floats = floats;
    size_t bytes = (size_t)floats * sizeof(float);
    b->A = aligned_alloc(64, bytes);
    b->B = aligned_alloc(64, bytes);
    b->C = aligned_alloc(64, bytes);
    if (!b->A || !b->B || !b->C) {
        tune_bench_free(b);
        return -1;
    }
    for (int64_t i = 0; i < floats; i++) {
        b->A[i] = seeded_value((uint64_t)i);
        b->B[i] = seeded_value((uint64_t)(i + floats));
        b->C[i] = 0.0f;
    }
    return 0;
}

void tune_bench_free(tune_bench *b)
{
    free(b->A);
    free(b->B);
    free(b->C);
    b->A = b->B = b->C = NULL;
}

bool tune_bench_fits(const tune_bench *b, const gemm_shape *s)
{
    return s->M * s->K <= b->floats && s->K * s->N <= b->floats && s->M * s->N <= b->floats;
}

/* The call a plan is timed with: row-major matrices, leading dimension
 * the row length, transposes folded into strides as src/api does. */
static gemm_call bench_call(const tune_bench *b, const gemm_shape *s)
{
    gemm_call c = {.M = s->M, .N = s->N, .K = s->K, .alpha = 1.0f, .beta = 0.0f,
                   .A = b->A, .B = b->B, .C = b->C, .ldc = s->N};
    c.a_rs = s->transa ? 1 : s->K;
    c.a_cs = s->transa ? s->M : 1;
    c.b_rs = s->transb ? 1 : s->N;
    c.b_cs = s->transb ? s->K : 1;
    return c;
}

static int compare_doubles(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

enum { MIN_REPEATS = 5, MAX_REPEATS = 201 };

double tune_time_plan(tune_bench *b, const gemm_shape *s, const gemm_plan *p, double min_seconds)
{
    gemm_call call = bench_call(b, s);
    double t0 = rt_seconds();
    op_sgemm_plan(&b->env, &call, p, 1, 0, 0, 0);
    double first = rt_seconds() - t0;
    int repeats = first > 0 ? (int)(min_seconds / first) : MAX_REPEATS;
    if (repeats < MIN_REPEATS)
        repeats = MIN_REPEATS;
    if (repeats > MAX_REPEATS)
        repeats = MAX_REPEATS;
    double times[MAX_REPEATS];
    for (int r = 0; r < repeats; r++) {
        double start = rt_seconds();
        op_sgemm_plan(&b->env, &call, p, 1, 0, 0, 0);
        times[r] = rt_seconds() - start;
    }
    qsort(times, (size_t)repeats, sizeof times[0], compare_doubles);
    return times[repeats / 2];
}

/* Calibration times each plan twice, in two passes over its list seconds
 * apart, and keeps the faster. A shared host runs both cores at half
 * speed for 0.1-1.5 s at a time (2026-12-06-half-speed-spells-zen4.txt):
 * a plan timed once in a spell read twice its time, and the fit took the
 * spells for costs of the plans (Zen 3, 2026-12-07: fit MAPE 20-21%,
 * held-out 18-23% in three runs, 512 x 768 x 3072 at twice 511's time).
 * The passes lie seconds apart, longer than a spell; as the benchmark
 * keeps each library's fastest round, the error is then the model's
 * against the machine at its own speed. */
void tune_retime_faster(tune_bench *b, const gemm_shape *s, const gemm_plan *p,
                        double min_seconds, double *seconds)
{
    double again = tune_time_plan(b, s, p, min_seconds);
    if (again < *seconds)
        *seconds = again;
}

/* Seconds per k step of one ukernel on panels resident in L1: the median
 * of a few runs of `calls` calls over k steps. */
static double time_tile(ukernel_fn fn, ukernel_args *args, int calls)
{
    double times[5];
    for (int r = 0; r < 5; r++) {
        double start = rt_seconds();
        for (int i = 0; i < calls; i++)
            fn(args);
        times[r] = (rt_seconds() - start) / ((double)calls * (double)args->k);
    }
    qsort(times, 5, sizeof times[0], compare_doubles);
    return times[2];
}

void tune_measure_tiles(const plan_model *m, cost_model *cm)
{
    /* Panels for the largest tile at the model's kc, and one C tile. */
    int64_t kc = m->kc;
    int64_t nr_max = (int64_t)UK_MAX_NV * m->vec;
    float *a = aligned_alloc(64, (size_t)(UK_MAX_MR * kc) * sizeof(float));
    float *bp = aligned_alloc(64, (size_t)(nr_max * kc) * sizeof(float));
    float *c = aligned_alloc(64, (size_t)(UK_MAX_MR * nr_max) * sizeof(float));
    if (!a || !bp || !c)
        goto done;
    for (int64_t i = 0; i < UK_MAX_MR * kc; i++)
        a[i] = seeded_value((uint64_t)i);
    for (int64_t i = 0; i < nr_max * kc; i++)
        bp[i] = seeded_value((uint64_t)(i + 7919));
    memset(c, 0, (size_t)(UK_MAX_MR * nr_max) * sizeof(float));

    double cycles_per_second = cm->ghz * 1e9;
    /* About a millisecond per run at the FMA peak. */
    int calls = (int)(1e6 / (double)kc) + 1;
    for (int nv = 1; nv <= UK_MAX_NV; nv++)
        for (int mr = 1; mr <= UK_MAX_MR; mr++) {
            if (m->tile_cycles[nv][mr] <= 0.0 ||
                model_registers(mr, nv) > m->hw.vec_registers)
                continue;
            for (int layout = 0; layout < 2; layout++) {
                ukernel_desc d = {.isa = m->hw.isa, .mr = mr, .nv = nv,
                                  .a_packed = layout == COST_A_PACKED};
                ukernel_fn fn = ukernel_lookup(&d);
                if (!fn)
                    continue;
                ukernel_args args = {.k = kc, .a = a, .b = bp, .b_rs = nv * m->vec,
                                     .c = c, .ldc = nr_max, .alpha = 1.0f, .beta = 1.0f,
                                     .m = mr, .n = nv * m->vec};
                /* Packed: element (i, p) at p * mr + i; in place: rows kc apart. */
                args.a_rs = layout == COST_A_PACKED ? 1 : kc;
                args.a_cs = layout == COST_A_PACKED ? mr : 1;
                int n = calls * 16 / (mr * nv) + 1;
                double step = time_tile(fn, &args, n);
                double scale = step * cycles_per_second / m->tile_cycles[nv][mr];
                cm->tile_scale[layout][nv][mr] = (float)scale;
            }
        }
done:
    free(a);
    free(bp);
    free(c);
}
