/*
 * plan_bench.c - micro-benchmark of planning and the plan cache (make
 * bench-plan): (1) planning a shape seen for the first time, plan_gemm on
 * the BERT-base linear layers at every M from 1 to 512 and on 2048^3, and
 * the whole miss path (lookup, plan, insert); (2) the overhead of a cache
 * hit (key, lookup, copy of the plan); (3) for context, a whole 1x1x1
 * tessel_sgemm call, which takes the hit path. Every figure is a median
 * over repetitions, since the development VM is noisy; a plan time is the
 * median over repetitions of one shape, then the median (and the slowest)
 * over the shapes. Prints a table; writes a CSV only with --csv FILE.
 *
 *   plan_bench [--threads N] [--csv FILE]
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/plan_cache.h"
#include "plan/plan.h"
#include "tessel.h"
#include "timing.h"

enum {
    PLAN_REPS = 15,        /* timings of each shape's planning */
    BERT_MAX_M = 512,
    HIT_BATCH = 1000,      /* lookups timed together (a clock read costs ~20 ns) */
    HIT_BATCHES = 301,
    CALL_BATCH = 100,
    CALL_BATCHES = 301
};

static const int64_t BERT_NK[][2] = {{768, 768}, {3072, 768}, {768, 3072}, {2304, 768}};
enum { BERT_FAMILIES = sizeof BERT_NK / sizeof BERT_NK[0] };

static double now_ns(void)
{
    return bench_now_s() * 1e9;
}

static double maximum(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return m;
}

typedef struct {
    FILE *csv;
} report;

/* "312.0 ns" or "1.59 us", into buf; "" for 0 (no figure). */
static const char *format_time(double ns, char *buf, size_t len)
{
    if (ns <= 0)
        snprintf(buf, len, "%s", "");
    else if (ns < 1e3)
        snprintf(buf, len, "%.1f ns", ns);
    else
        snprintf(buf, len, "%.2f us", ns / 1e3);
    return buf;
}

static void row(report *r, const char *what, double median_ns, double slowest_ns,
                double target_ns)
{
    char med[32], slow[32], target[32];
    const char *verdict = target_ns <= 0 ? "" : median_ns <= target_ns ? "ok" : "OVER";
    format_time(target_ns, target, sizeof target);
    printf("%-44s %10s  %10s  %s%-9s %s\n", what, format_time(median_ns, med, sizeof med),
           format_time(slowest_ns, slow, sizeof slow), target_ns > 0 ? "<= " : "   ", target,
           verdict);
    if (r->csv)
        fprintf(r->csv, "\"%s\",%.1f,%.1f,%.0f\n", what, median_ns, slowest_ns, target_ns);
}

/* Median planning time of one shape. */
static double time_plan(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *plan)
{
    double t[PLAN_REPS];
    for (int r = 0; r < PLAN_REPS; r++) {
        double t0 = now_ns();
        plan_gemm(m, s, threads, plan);
        t[r] = now_ns() - t0;
    }
    return bench_median(t, PLAN_REPS);
}

static gemm_shape bert_shape(int family, int64_t M)
{
    return (gemm_shape){.M = M, .N = BERT_NK[family][0], .K = BERT_NK[family][1]};
}

/* (1) plan_gemm per shape: median over the shapes, and the slowest. */
static void bench_planning(report *r, const plan_model *m, int threads, gemm_plan *plan)
{
    static double per_shape[BERT_FAMILIES * BERT_MAX_M];
    int all = 0;
    for (int f = 0; f < BERT_FAMILIES; f++) {
        double *fam = per_shape + all;
        for (int64_t M = 1; M <= BERT_MAX_M; M++) {
            gemm_shape s = bert_shape(f, M);
            fam[M - 1] = time_plan(m, &s, threads, plan);
        }
        char what[64];
        snprintf(what, sizeof what, "plan_gemm, bert N %lld K %lld, M 1..%d",
                 (long long)BERT_NK[f][0], (long long)BERT_NK[f][1], BERT_MAX_M);
        double worst = maximum(fam, BERT_MAX_M);
        double copy[BERT_MAX_M];
        memcpy(copy, fam, sizeof copy);
        row(r, what, bench_median(copy, BERT_MAX_M), worst, 20e3);
        all += BERT_MAX_M;
    }
    double worst = maximum(per_shape, all);
    row(r, "plan_gemm, all bert shapes", bench_median(per_shape, all), worst, 20e3);
    gemm_shape big = {.M = 2048, .N = 2048, .K = 2048};
    row(r, "plan_gemm, 2048 x 2048 x 2048", time_plan(m, &big, threads, plan), 0, 20e3);
    gemm_shape one = {.M = 1, .N = 1, .K = 1};
    row(r, "plan_gemm, 1 x 1 x 1", time_plan(m, &one, threads, plan), 0, 20e3);

    /* A calibrated cost model makes plan_gemm compare up to 16 variants
     * of the rules' plan: the slowest planning there is. Timed with the
     * default weights marked calibrated (the weights do not change the
     * work). */
    static plan_model calibrated;
    calibrated = *m;
    calibrated.cost.calibrated = true;
    double t[BERT_FAMILIES * BERT_MAX_M];
    int n = 0;
    for (int f = 0; f < BERT_FAMILIES; f++)
        for (int64_t M = 1; M <= BERT_MAX_M; M += 7) {
            gemm_shape sh = bert_shape(f, M);
            t[n++] = time_plan(&calibrated, &sh, threads, plan);
        }
    double slowest = maximum(t, n);
    row(r, "plan_gemm calibrated, bert (every 7th M)", bench_median(t, n), slowest, 20e3);
    row(r, "plan_gemm calibrated, 2048 x 2048 x 2048", time_plan(&calibrated, &big, threads, plan),
        0, 20e3);
}

/* (1) the whole miss path on a cache emptied before each pass. */
static void bench_miss_path(report *r, const plan_model *m, plan_cache *cache, int threads,
                            gemm_plan *plan)
{
    enum { SHAPES = BERT_FAMILIES * BERT_MAX_M };
    static double t[PLAN_REPS][SHAPES];
    for (int rep = 0; rep < PLAN_REPS; rep++) {
        plan_cache_clear(cache);
        int i = 0;
        for (int f = 0; f < BERT_FAMILIES; f++)
            for (int64_t M = 1; M <= BERT_MAX_M; M++, i++) {
                gemm_shape s = bert_shape(f, M);
                double t0 = now_ns();
                plan_key key = plan_key_make(&s, threads);
                if (!plan_cache_lookup(cache, &key, plan)) {
                    plan_gemm(m, &s, threads, plan);
                    plan_cache_insert(cache, &key, plan);
                }
                t[rep][i] = now_ns() - t0;
            }
    }
    static double per_shape[SHAPES];
    for (int i = 0; i < SHAPES; i++) {
        double v[PLAN_REPS];
        for (int rep = 0; rep < PLAN_REPS; rep++)
            v[rep] = t[rep][i];
        per_shape[i] = bench_median(v, PLAN_REPS);
    }
    double worst = maximum(per_shape, SHAPES);
    double median_ns = bench_median(per_shape, SHAPES);
    row(r, "miss: key + lookup + plan + insert, bert", median_ns, worst, 20e3);
}

static volatile int64_t sink;

/* Median per lookup over batches of HIT_BATCH lookups of `keys`. */
static double time_hits(plan_cache *cache, const gemm_shape *shapes, int nshapes, int threads,
                        gemm_plan *plan, bool hash_only)
{
    static double t[HIT_BATCHES];
    int at = 0;
    for (int b = 0; b < HIT_BATCHES; b++) {
        int64_t acc = 0;
        double t0 = now_ns();
        for (int i = 0; i < HIT_BATCH; i++) {
            plan_key key = plan_key_make(&shapes[at], threads);
            if (hash_only) {
                acc += (int64_t)plan_key_hash(&key);
            } else {
                acc += plan_cache_lookup(cache, &key, plan);
                acc += plan->threads;
            }
            at = at + 1 == nshapes ? 0 : at + 1;
        }
        t[b] = (now_ns() - t0) / HIT_BATCH;
        sink = acc;
    }
    return bench_median(t, HIT_BATCHES);
}

/* (2) hits: over every bert shape the cache holds, and one shape again. */
static void bench_hits(report *r, const plan_model *m, plan_cache *cache, int threads,
                       gemm_plan *plan)
{
    enum { SHAPES = BERT_FAMILIES * BERT_MAX_M };
    static gemm_shape held[SHAPES];
    int nheld = 0;
    plan_cache_clear(cache);
    for (int f = 0; f < BERT_FAMILIES; f++)
        for (int64_t M = 1; M <= BERT_MAX_M; M++) {
            gemm_shape s = bert_shape(f, M);
            plan_key key = plan_key_make(&s, threads);
            plan_gemm(m, &s, threads, plan);
            plan_cache_insert(cache, &key, plan);
        }
    /* Set conflicts evict some: time only the shapes still held. */
    for (int f = 0; f < BERT_FAMILIES; f++)
        for (int64_t M = 1; M <= BERT_MAX_M; M++) {
            gemm_shape s = bert_shape(f, M);
            plan_key key = plan_key_make(&s, threads);
            if (plan_cache_lookup(cache, &key, plan))
                held[nheld++] = s;
        }
    char what[64];
    snprintf(what, sizeof what, "hit: key + lookup + copy, %d bert shapes", nheld);
    row(r, what, time_hits(cache, held, nheld, threads, plan, false), 0, 100);
    row(r, "hit: key + lookup + copy, one shape", time_hits(cache, held, 1, threads, plan, false),
        0, 100);
    row(r, "  of which key + hash", time_hits(cache, held, nheld, threads, plan, true), 0, 0);
    plan_cache_stats st;
    plan_cache_get_stats(cache, &st);
    printf("%-44s %d of %d slots held after %d inserts\n", "  (cache fill)", st.entries,
           st.capacity, SHAPES);
}

/* (3) a whole 1x1x1 call (argument checks, cache hit, ukernel). */
static void bench_call(report *r, tessel_ctx *ctx)
{
    float a = 1.0f, b = 2.0f, c = 0.0f;
    for (int i = 0; i < 1000; i++)
        tessel_sgemm(ctx, 'N', 'N', 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
    static double t[CALL_BATCHES];
    for (int bt = 0; bt < CALL_BATCHES; bt++) {
        double t0 = now_ns();
        for (int i = 0; i < CALL_BATCH; i++)
            tessel_sgemm(ctx, 'N', 'N', 1, 1, 1, 1.0f, &a, 1, &b, 1, 0.0f, &c, 1);
        t[bt] = (now_ns() - t0) / CALL_BATCH;
    }
    row(r, "tessel_sgemm 1 x 1 x 1, whole call", bench_median(t, CALL_BATCHES), 0, 0);
}

int main(int argc, char **argv)
{
    int threads = 0;
    const char *csv_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            csv_path = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--threads N] [--csv FILE]\n", argv[0]);
            return 2;
        }
    }
    tessel_ctx *ctx;
    /* The analytic planner, whatever this machine has calibrated: the
     * calibrated one is timed on its own copy of the model below. */
    setenv("TESSEL_DB", "off", 1);
    tessel_status s = tessel_ctx_create(&ctx, threads);
    if (TESSEL_IS_ERROR(s)) {
        fprintf(stderr, "plan_bench: %s: %s\n", tessel_status_str(s), tessel_last_error());
        return 1;
    }
    report r = {0};
    if (csv_path) {
        r.csv = fopen(csv_path, "w");
        if (!r.csv) {
            perror(csv_path);
            return 1;
        }
        fprintf(r.csv, "what,median_ns,slowest_ns,target_ns\n");
    }
    threads = tessel_ctx_threads(ctx);
    const plan_model *m = api_ctx_model(ctx);
    gemm_plan *plan = malloc(sizeof *plan);
    plan_cache *cache = plan_cache_create(API_PLAN_CACHE_SETS, threads);
    if (!plan || !cache) {
        fprintf(stderr, "plan_bench: out of memory\n");
        return 1;
    }
    printf("plan cache micro-benchmark: %s, %d threads, cache %d sets x %d ways; medians\n",
           hw_isa_name(m->hw.isa), threads, API_PLAN_CACHE_SETS, PLAN_CACHE_WAYS);
    printf("%-44s %10s  %10s  %s\n", "what", "median", "slowest", "target");
    bench_planning(&r, m, threads, plan);
    bench_miss_path(&r, m, cache, threads, plan);
    bench_hits(&r, m, cache, threads, plan);
    bench_call(&r, ctx);
    if (r.csv)
        fclose(r.csv);
    plan_cache_destroy(cache);
    free(plan);
    tessel_ctx_destroy(ctx);
    return 0;
}
