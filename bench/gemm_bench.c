/*
 * gemm_bench.c - the peer benchmark driver. It reads the GEMM and batched
 * GEMM shape lists, and for each thread count and each problem times tessel
 * and every peer (OpenBLAS, BLIS, oneDNN) in this one process, on the same
 * A and B buffers: a warm-up call or two, then R individually timed
 * calls, R chosen so each library spends about a target time per problem,
 * in three rounds that alternate between the libraries; a library's time
 * is the median of its fastest round.
 * Every library writes its own C, and each peer's C is compared with
 * tessel's, so a fast wrong answer shows up in the max_rel_diff column.
 * A problem timed while other processes took the benchmark's cores, or
 * while the host gave them less than their usual speed (canary.h, checked
 * before every library's round), is timed again. It also measures call
 * overhead (a 1x1x1 GEMM and 12 batched 5x5x64 GEMMs, median of many
 * single calls). Results go to a CSV file, progress to
 * stderr; bench/gemm_report.c turns the CSV into tables and plots.
 *
 * Pre-packed weights: on the linear-layer shapes of packed_families (plain
 * GEMMs with transb 'N'), two more "libraries" run after the others,
 * tessel-packed and onednn-packed, which pack B into their own layout once
 * when the call is prepared and time only the multiplication by the packed
 * copy. Their results are checked against plain tessel_sgemm's like any
 * peer's. On the same problems tessel-fused and onednn-fused time the
 * packed call with a bias and GELU applied as C is written (bench.h); their
 * results are checked against each other.
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"
#include "canary.h"
#include "timing.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIBS 8
#define MAX_THREADS 16
#define REL_DIFF_WARN 1e-3

typedef struct problem_row {
    char family[64];
    bench_problem p;
} problem_row;

typedef struct problem_list {
    problem_row *rows;
    size_t n, cap;
} problem_list;

/* How long to spend per (library, problem), and within which bounds. */
typedef struct timing_policy {
    double target_s;
    int min_reps, max_reps;
    double long_call_s; /* calls longer than this get 3 repetitions */
    int overhead_calls;
} timing_policy;

/* A growable buffer of random floats, reused across problems: any prefix of
 * it is as good an input as freshly drawn data, and refilling a 500 MB llama
 * weight matrix for every shape would cost more than timing it. */
typedef struct pool {
    float *data;
    size_t cap;
} pool;

/* What one library measured on one problem. */
typedef struct lib_result {
    int ran; /* 0: a packed variant on a problem outside the packed mode */
    int ok;
    double seconds;
    double max_rel_diff; /* NAN when there is no reference to compare with */
} lib_result;

static const bench_lib *const all_libs[MAX_LIBS] = {
    &bench_lib_tessel,        &bench_lib_openblas,       &bench_lib_blis,
    &bench_lib_onednn,        &bench_lib_tessel_packed,  &bench_lib_onednn_packed,
    &bench_lib_tessel_fused,  &bench_lib_onednn_fused,
};

/* The families whose shapes are linear layers with constant weights: the
 * packed variants run on their plain problems with transb 'N'. */
static const char *const packed_families[] = {"bert-base", "dietcode"};

/* CPU seconds the whole machine spent busy (steal included), from
 * /proc/stat; NAN where there is no /proc. Together with this process's
 * own CPU time it tells how much else ran during the benchmark. */
static double machine_busy_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8] = {0};
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                       &v[3], &v[4], &v[5], &v[6], &v[7])
              : 0;
    if (f)
        fclose(f);
    if (n != 8)
        return NAN;
    /* user nice system idle iowait irq softirq steal: all but idle, iowait */
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    return (double)busy / (double)sysconf(_SC_CLK_TCK);
}

static double self_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- shape files ---------------------------------------------------- */

/* Whether a problem is also timed with pre-packed weights. */
static int packed_mode(const problem_row *r)
{
    if (r->p.batched || r->p.transb != 'N')
        return 0;
    for (size_t i = 0; i < sizeof packed_families / sizeof packed_families[0]; i++)
        if (strcmp(r->family, packed_families[i]) == 0)
            return 1;
    return 0;
}

static int family_selected(const char *family, const char *filter)
{
    if (!filter || !*filter)
        return 1;
    /* filter is a comma-separated list of family names */
    size_t len = strlen(family);
    for (const char *s = filter; *s;) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == len && strncmp(s, family, n) == 0)
            return 1;
        if (!e)
            break;
        s = e + 1;
    }
    return 0;
}

static int list_push(problem_list *l, const problem_row *r)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        problem_row *rows = realloc(l->rows, cap * sizeof *rows);
        if (!rows)
            return -1;
        l->rows = rows;
        l->cap = cap;
    }
    l->rows[l->n++] = *r;
    return 0;
}

/* Reads "family M N K ta tb" lines, or "family batch M N K ta tb" when
 * batched; '#' starts a comment line. */
static int read_shapes(const char *path, int batched, const char *filter, problem_list *out)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "gemm_bench: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[512];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '#' || *s == '\n' || *s == '\0')
            continue;
        problem_row r;
        memset(&r, 0, sizeof r);
        long long batch = 1, M, N, K;
        char ta, tb;
        int got = batched
            ? sscanf(s, "%63s %lld %lld %lld %lld %c %c", r.family, &batch, &M, &N, &K, &ta, &tb)
            : sscanf(s, "%63s %lld %lld %lld %c %c", r.family, &M, &N, &K, &ta, &tb);
        if (got != (batched ? 7 : 6) || batch < 1 || M < 1 || N < 1 || K < 1 ||
            (ta != 'N' && ta != 'T') || (tb != 'N' && tb != 'T')) {
            fprintf(stderr, "gemm_bench: %s:%d: cannot parse: %s", path, lineno, line);
            fclose(f);
            return -1;
        }
        if (!family_selected(r.family, filter))
            continue;
        r.p.batch = batch;
        r.p.M = M;
        r.p.N = N;
        r.p.K = K;
        r.p.transa = ta;
        r.p.transb = tb;
        r.p.batched = batched;
        bench_problem_layout(&r.p);
        if (list_push(out, &r) != 0) {
            fclose(f);
            return -1;
        }
    }
    fclose(f);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The --quick subset: per family, only the rows whose M is the smallest,
 * the median or the largest of that family's distinct M values. */
static void quick_subset(problem_list *l)
{
    int64_t *ms = malloc(l->n * sizeof *ms);
    unsigned char *kept_flag = calloc(l->n, 1);
    if (!ms || !kept_flag) {
        free(ms);
        free(kept_flag);
        return;
    }
    for (size_t i = 0; i < l->n; i++) {
        size_t nd = 0;
        for (size_t k = 0; k < l->n; k++)
            if (strcmp(l->rows[k].family, l->rows[i].family) == 0)
                ms[nd++] = l->rows[k].p.M;
        qsort(ms, nd, sizeof *ms, cmp_i64);
        size_t u = 0;
        for (size_t k = 0; k < nd; k++)
            if (u == 0 || ms[k] != ms[u - 1])
                ms[u++] = ms[k];
        int64_t m = l->rows[i].p.M;
        kept_flag[i] = m == ms[0] || m == ms[u / 2] || m == ms[u - 1];
    }
    size_t kept = 0;
    for (size_t i = 0; i < l->n; i++)
        if (kept_flag[i])
            l->rows[kept++] = l->rows[i];
    l->n = kept;
    free(ms);
    free(kept_flag);
}

/* ---- buffers -------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float rand_unit(void)
{
    /* xorshift64*, top 24 bits mapped to [-1, 1) */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    uint64_t r = rng_state * 2685821657736338717ull;
    return (float)(r >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

/* Floats every matrix starts past its 64-byte aligned buffer (--offset):
 * 0 for the aligned buffers an ML runtime hands over, 4 for the 16-byte
 * alignment of a plain malloc. */
static size_t g_offset_floats;

static float *pool_get(pool *p, size_t n, int random)
{
    if (n <= p->cap)
        return p->data;
    free(p->data);
    size_t cap = n + n / 8;
    void *mem = NULL;
    if (posix_memalign(&mem, 64, cap * sizeof(float)) != 0) {
        p->data = NULL;
        p->cap = 0;
        return NULL;
    }
    p->data = mem;
    p->cap = cap;
    for (size_t i = 0; i < cap; i++)
        p->data[i] = random ? rand_unit() : 0.0f;
    return p->data;
}

/* max |x - ref| / max |ref|: a norm-wise relative difference, stable where
 * single elements of ref are near zero. A NaN anywhere gives infinity. */
static double max_rel_diff(const float *x, const float *ref, size_t n)
{
    double maxd = 0.0, maxr = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)ref[i]);
        if (!(d <= maxd)) {
            if (d != d)
                return INFINITY;
            maxd = d;
        }
        double r = fabs((double)ref[i]);
        if (r > maxr)
            maxr = r;
    }
    if (maxr == 0.0)
        return maxd == 0.0 ? 0.0 : INFINITY;
    return maxd / maxr;
}

/* ---- timing --------------------------------------------------------- */

static double problem_flops(const bench_problem *p)
{
    return 2.0 * (double)p->M * (double)p->N * (double)p->K * (double)p->batch;
}

/* One library's timing of one problem. The calls are timed in
 * TIMING_ROUNDS rounds interleaved with the other libraries' rounds
 * (measure_all), and the time is the median of its fastest round. This
 * host has spells of 0.1 s to seconds in which its cores run at half
 * speed (every shape alike, operands in L2 or not, with no steal time:
 * bench/results/2026-12-06-half-speed-spells-zen4.txt); one falling on
 * two of a library's three rounds and none of the other's moved the
 * median of all calls to half speed (tessel's 24x3072x768 on 2 threads
 * at 0.57 of oneDNN in two full runs, 206-221 GFLOP/s in short ones). The
 * fastest round needs one clean round of each library, and every library
 * is judged by the same rule. */
#define TIMING_ROUNDS 3

typedef struct lib_timing {
    bench_call *call;
    double *t;      /* seconds of each timed call, round after round */
    double call_s;  /* one call's time, from the warm-up */
    int reps, done;
    int round_end[TIMING_ROUNDS]; /* `done` at the end of each round */
} lib_timing;

/* Each round starts with ROUND_WARMUP_S of untimed calls, at least one.
 * After the pause before it, the first calls of every library on 2
 * threads paid for waking its sleeping thread, a virtual CPU the host had
 * to schedule again (oneDNN 4-7 ms on 12 x (62x64x62), tessel's worker
 * 2.8 ms on 12 x (128x128x64), against 27-140 us calls), which could fill
 * a short round. And a long call's operands, warm at the end of its own
 * round, were partly evicted by the other library's round in between
 * (oneDNN's dnnl_sgemm copies B on every call: 16 MB more for 64 x 4096
 * x 1024): with two timed calls a round and no warm-up, tessel's
 * bert-large 64-row layers read 78-90 GF/s against 90-96 warm in one
 * process, the median falling between cold and warm calls. */
#define ROUND_WARMUP_S 0.002

/* Prepares the call, warms it up and decides how many calls to time. */
static int start_timing(const bench_lib *lib, const bench_problem *p, const float *A,
                        const float *B, float *C, const timing_policy *tp, lib_timing *lt)
{
    char err[256] = "";
    memset(lt, 0, sizeof *lt);
    size_t nc = (size_t)(p->batch * p->stride_c);
    for (size_t i = 0; i < nc; i++)
        C[i] = NAN; /* beta is 0: an element a library forgets to write shows */
    lt->call = lib->prepare(p, A, B, C, err, sizeof err);
    if (!lt->call) {
        fprintf(stderr, "  %s: prepare failed: %s\n", lib->name, err);
        return -1;
    }
    double t0 = bench_now_s();
    if (lib->run(lt->call, err, sizeof err) != 0)
        goto fail;
    double est = bench_now_s() - t0;
    if (est < 0.05) {
        /* the first call may include planning, JIT or page faults */
        t0 = bench_now_s();
        if (lib->run(lt->call, err, sizeof err) != 0)
            goto fail;
        est = bench_now_s() - t0;
    }
    int reps = tp->max_reps;
    if (est > 0.0 && tp->target_s / est < (double)reps)
        reps = (int)ceil(tp->target_s / est);
    if (reps < tp->min_reps)
        reps = tp->min_reps;
    if (est > tp->long_call_s && reps > 3)
        reps = 3; /* long calls vary little; spend the budget on shapes */
    lt->reps = reps;
    lt->call_s = est;
    lt->t = malloc((size_t)reps * sizeof *lt->t);
    if (lt->t)
        return 0;
    snprintf(err, sizeof err, "out of memory");
fail:
    fprintf(stderr, "  %s: run failed: %s\n", lib->name, err);
    lib->release(lt->call);
    lt->call = NULL;
    return -1;
}

/* Times round `round` of TIMING_ROUNDS: the calls up to its share of the
 * total. A machine that turns busy mid-way must not stretch slow calls,
 * so a round stops at a tenth of ten times the target once it has its
 * share of the minimum. */
static int time_round(const bench_lib *lib, lib_timing *lt, int round, const timing_policy *tp)
{
    char err[256] = "";
    int want = (lt->reps * (round + 1) + TIMING_ROUNDS - 1) / TIMING_ROUNDS;
    int least = (tp->min_reps * (round + 1) + TIMING_ROUNDS - 1) / TIMING_ROUNDS;
    double warm_until = bench_now_s() + ROUND_WARMUP_S;
    do {
        if (lib->run(lt->call, err, sizeof err) != 0) {
            fprintf(stderr, "  %s: run failed: %s\n", lib->name, err);
            return -1;
        }
    } while (bench_now_s() < warm_until);
    double deadline = bench_now_s() + 10.0 * tp->target_s / TIMING_ROUNDS;
    while (lt->done < want && (lt->done < least || bench_now_s() < deadline)) {
        double t0 = bench_now_s();
        if (lib->run(lt->call, err, sizeof err) != 0) {
            fprintf(stderr, "  %s: run failed: %s\n", lib->name, err);
            return -1;
        }
        lt->t[lt->done++] = bench_now_s() - t0;
    }
    lt->round_end[round] = lt->done;
    return 0;
}

/* The median of the fastest round that timed any calls. */
static double fastest_round_median(lib_timing *lt)
{
    double best = INFINITY;
    for (int round = 0, start = 0; round < TIMING_ROUNDS; start = lt->round_end[round++]) {
        int end = lt->round_end[round];
        if (end > start) {
            double m = bench_median(lt->t + start, end - start);
            if (m < best)
                best = m;
        }
    }
    return best;
}

static void end_timing(const bench_lib *lib, lib_timing *lt, double *seconds)
{
    if (seconds)
        *seconds = fastest_round_median(lt);
    free(lt->t);
    if (lt->call)
        lib->release(lt->call);
    memset(lt, 0, sizeof *lt);
}

/* Call overhead: the median of `calls` single calls after a warm-up, or of
 * as many as fit in OVERHEAD_MAX_S when a library turns out slow. */
#define OVERHEAD_MAX_S 2.0

static int time_overhead(const bench_lib *lib, const bench_problem *p, const float *A,
                         const float *B, float *C, int calls, double *seconds)
{
    char err[256] = "";
    bench_call *call = lib->prepare(p, A, B, C, err, sizeof err);
    if (!call) {
        fprintf(stderr, "  %s: prepare failed: %s\n", lib->name, err);
        return -1;
    }
    double *t = malloc((size_t)calls * sizeof *t);
    int rc = t ? 0 : -1;
    double deadline = bench_now_s() + 0.1 * OVERHEAD_MAX_S;
    for (int i = 0; rc == 0 && i < calls / 10 + 10 && bench_now_s() < deadline; i++)
        rc = lib->run(call, err, sizeof err);
    int done = 0;
    deadline = bench_now_s() + OVERHEAD_MAX_S;
    while (rc == 0 && done < calls && (done < 10 || bench_now_s() < deadline)) {
        double t0 = bench_now_s();
        rc = lib->run(call, err, sizeof err);
        t[done++] = bench_now_s() - t0;
    }
    if (rc == 0)
        *seconds = bench_median(t, done);
    else
        fprintf(stderr, "  %s: overhead run failed: %s\n", lib->name, err);
    free(t);
    lib->release(call);
    return rc;
}

/* ---- output --------------------------------------------------------- */

static void csv_row(FILE *out, const char *lib, int threads, const char *family,
                    const bench_problem *p, const lib_result *r, double peak_per_thread)
{
    double gflops = problem_flops(p) / r->seconds * 1e-9;
    fprintf(out, "%s,%d,%s,%lld,%lld,%lld,%lld,%c,%c,%.9g,%.4f,", lib, threads, family,
            (long long)p->batch, (long long)p->M, (long long)p->N, (long long)p->K,
            p->transa, p->transb, r->seconds, gflops);
    if (peak_per_thread > 0.0)
        fprintf(out, "%.2f", 100.0 * gflops / (peak_per_thread * threads));
    fputc(',', out);
    if (!isnan(r->max_rel_diff))
        fprintf(out, "%.3g", r->max_rel_diff);
    fputc('\n', out);
}

static void park(const bench_lib *lib)
{
    if (lib->park)
        lib->park();
}

/* Lowers *capacity to the machine's speed now, if that is lower. */
static void check_speed(int threads, double *capacity)
{
    double speed = canary_capacity(threads);
    if (speed < *capacity)
        *capacity = speed;
}

/* Times every library once on one problem (the packed variants only when
 * `packed` is set) and compares their results; returns the CPUs other
 * processes used meanwhile, on average, and sets *capacity to the lowest
 * machine speed the canary saw before a round or after the last (1.0 for
 * call overheads, which are not checked). */
static double measure_all(const bench_lib *const *libs, int nlibs, int threads,
                          const bench_problem *p, const float *A, const float *B,
                          float *const *C, const timing_policy *tp, int overhead, int packed,
                          lib_result *res, double *capacity)
{
    *capacity = 1.0;
    double wall = bench_now_s(), busy = machine_busy_s(), self = self_cpu_s();
    lib_timing lt[MAX_LIBS];
    for (int l = 0; l < nlibs; l++) {
        res[l].max_rel_diff = NAN;
        res[l].ran = !libs[l]->packed || packed;
        res[l].ok = 0;
        if (!res[l].ran)
            continue;
        if (overhead) {
            res[l].ok = time_overhead(libs[l], p, A, B, C[l], tp->overhead_calls,
                                      &res[l].seconds) == 0;
            park(libs[l]);
            /* let this library's spinning workers go to sleep before the
             * next library needs the cores (bench/run explains the times) */
            sleep_ms(threads > 1 ? 25 : 1);
        } else {
            res[l].ok = start_timing(libs[l], p, A, B, C[l], tp, &lt[l]) == 0;
            park(libs[l]);
        }
    }
    /* the first round, like every other, starts once the last library's
     * workers sleep (without this pause, tessel's first round at 2 threads
     * ran beside oneDNN's spinning OpenMP worker in 33 of the 108
     * bert-base shapes) */
    if (!overhead)
        sleep_ms(threads > 1 ? 25 : 1);
    for (int round = 0; !overhead && round < TIMING_ROUNDS; round++)
        for (int l = 0; l < nlibs; l++) {
            if (!res[l].ran || !res[l].ok)
                continue;
            /* after the pause: the last library's workers sleep */
            check_speed(threads, capacity);
            if (time_round(libs[l], &lt[l], round, tp) != 0) {
                end_timing(libs[l], &lt[l], NULL);
                res[l].ok = 0;
            }
            park(libs[l]);
            sleep_ms(threads > 1 ? 25 : 1);
        }
    /* and after the last round's pause: a spell that began in it */
    if (!overhead)
        check_speed(threads, capacity);
    for (int l = 0; !overhead && l < nlibs; l++)
        if (res[l].ran && res[l].ok)
            end_timing(libs[l], &lt[l], &res[l].seconds);
    /* /proc/stat counts in clock ticks: forgive two of them, so that short
     * problems do not read as loaded by rounding alone */
    double others_s = machine_busy_s() - busy - (self_cpu_s() - self);
    double others = (others_s - 2.0 / (double)sysconf(_SC_CLK_TCK)) / (bench_now_s() - wall);

    /* The reference is tessel's result when tessel is among the libraries
     * (it is first); its own row then holds the smallest difference to any
     * other library that is not a packed variant (tessel-packed shares
     * tessel's kernels and would hide a bug in both), so a wrong tessel
     * result flags its own row too. */
    size_t nc = (size_t)(p->batch * p->stride_c);
    /* The fused variants compute another function: the two are compared
     * with each other. */
    int fused[2] = {-1, -1};
    for (int l = 0; l < nlibs; l++)
        if (libs[l]->fused && res[l].ok)
            fused[fused[0] < 0 ? 0 : 1] = l;
    if (fused[1] >= 0) {
        res[fused[0]].max_rel_diff = max_rel_diff(C[fused[0]], C[fused[1]], nc);
        res[fused[1]].max_rel_diff = max_rel_diff(C[fused[1]], C[fused[0]], nc);
    }
    if (res[0].ok) {
        double best = INFINITY;
        int peers = 0;
        for (int l = 1; l < nlibs; l++) {
            if (!res[l].ok || libs[l]->fused)
                continue;
            res[l].max_rel_diff = max_rel_diff(C[l], C[0], nc);
            if (!libs[l]->packed) {
                peers++;
                if (res[l].max_rel_diff < best)
                    best = res[l].max_rel_diff;
            }
        }
        if (peers > 0)
            res[0].max_rel_diff = best;
    }
    return isnan(others) || others < 0.0 ? 0.0 : others;
}

/* Counts over a whole run, for the closing lines of the log. */
typedef struct run_stats {
    int warnings; /* results differing from tessel's */
    int retried;  /* problems timed again (other processes, a slow machine) */
    int loaded;   /* problems whose kept attempt still shared cores */
    int slowed;   /* problems whose kept attempt still ran on a slow machine */
} run_stats;

/* When other processes take more than the CPUs the benchmark leaves idle
 * (plus LOAD_RETRY_CPUS) while a problem is timed, some timed thread had
 * to share a core; when the canary before some round ran below
 * SLOW_MACHINE of its best speed, the host held the benchmark's cores
 * back (a spell that may fall on one library's rounds and not the
 * other's: at 2 threads, single shapes ran at one thread's speed for one
 * library only). Either way the problem runs again, up to MAX_ATTEMPTS
 * times in all. The attempt kept is the first clean one, else the one
 * whose machine was fastest, less load breaking ties. Which attempt is
 * kept depends on the machine alone, never on the libraries' times. */
#define LOAD_RETRY_CPUS 0.3
#define SLOW_MACHINE 0.75
#define MAX_ATTEMPTS 3

/* After an attempt on a slowed machine, the next waits until the canary
 * reads SLOW_MACHINE or more again, checking every 50 ms, for at most
 * SLOW_WAIT_S: most spells here end within a second, some last minutes,
 * and those must not stall the run. */
#define SLOW_WAIT_S 1.0

static void wait_for_speed(int threads)
{
    double until = bench_now_s() + SLOW_WAIT_S;
    while (canary_capacity(threads) < SLOW_MACHINE && bench_now_s() < until)
        sleep_ms(50);
}

static double load_limit(int threads)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double spare = cpus > threads ? (double)(cpus - threads) : 0.0;
    return spare + LOAD_RETRY_CPUS;
}

/* Runs every selected library on one problem and writes its CSV rows. */
static void bench_one(const bench_lib *const *libs, int nlibs, int threads,
                      const problem_row *row, pool *pa, pool *pb, pool *pc,
                      const timing_policy *tp, int overhead, double peak_per_thread, FILE *out,
                      run_stats *stats)
{
    const bench_problem *p = &row->p;
    int packed = !overhead && packed_mode(row);
    size_t na = (size_t)(p->batch * p->stride_a), nb = (size_t)(p->batch * p->stride_b);
    size_t nc = (size_t)(p->batch * p->stride_c);
    const size_t off = g_offset_floats;
    const float *A = pool_get(pa, na + off, 1), *B = pool_get(pb, nb + off, 1);
    float *C[MAX_LIBS];
    if (!A || !B) {
        fprintf(stderr, "gemm_bench: out of memory for %s\n", row->family);
        return;
    }
    A += off;
    B += off;
    for (int l = 0; l < nlibs; l++) {
        C[l] = NULL;
        if (libs[l]->packed && !packed)
            continue;
        C[l] = pool_get(&pc[l], nc + off, 0);
        if (!C[l]) {
            fprintf(stderr, "gemm_bench: out of memory for %s\n", row->family);
            return;
        }
        C[l] += off;
    }

    lib_result res[MAX_LIBS] = {{0}}, attempt[MAX_LIBS] = {{0}};
    double wall = bench_now_s(), least = INFINITY, speed = -1.0;
    double limit = load_limit(threads);
    int attempts = 0;
    while (attempts < MAX_ATTEMPTS && (least > limit || speed < SLOW_MACHINE)) {
        double capacity;
        if (attempts > 0 && speed < SLOW_MACHINE)
            wait_for_speed(threads);
        double others = measure_all(libs, nlibs, threads, p, A, B, C, tp, overhead, packed,
                                    attempt, &capacity);
        attempts++;
        /* a loaded attempt counts as no faster than a slowed one */
        double kept_speed = capacity - (others > limit ? 1.0 : 0.0);
        double best_speed = speed - (least > limit ? 1.0 : 0.0);
        if (attempts == 1 || kept_speed > best_speed ||
            (kept_speed == best_speed && others < least)) {
            least = others;
            speed = capacity;
            memcpy(res, attempt, sizeof res);
        }
    }
    if (attempts > 1)
        stats->retried++;
    if (least > limit)
        stats->loaded++;
    if (speed < SLOW_MACHINE)
        stats->slowed++;

    fprintf(stderr, "[T=%d] %-10s %4lldx%-5lldx%-5lld x%-3lld %c%c ", threads, row->family,
            (long long)p->M, (long long)p->N, (long long)p->K, (long long)p->batch,
            p->transa, p->transb);
    for (int l = 0; l < nlibs; l++) {
        if (!res[l].ran)
            continue;
        if (!res[l].ok) {
            fprintf(stderr, " %s FAILED", libs[l]->name);
            continue;
        }
        if (overhead)
            fprintf(stderr, " %s %.2fus", libs[l]->name, res[l].seconds * 1e6);
        else
            fprintf(stderr, " %s %.1f", libs[l]->name, problem_flops(p) / res[l].seconds * 1e-9);
        if (res[l].max_rel_diff > REL_DIFF_WARN) {
            fprintf(stderr, " [WARN diff %.2g]", res[l].max_rel_diff);
            stats->warnings++;
        }
        csv_row(out, libs[l]->name, threads, row->family, p, &res[l], peak_per_thread);
    }
    fprintf(stderr, "  (%.1f s", bench_now_s() - wall);
    if (attempts > 1 || least > limit || speed < SLOW_MACHINE)
        fprintf(stderr, ", %d attempt(s), other load %.2f CPUs, machine at %.2f of its speed",
                attempts, least, speed);
    fprintf(stderr, ")\n");
    fflush(out);
}

/* ---- main ----------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: gemm_bench [options]\n"
            "  --gemm FILE        GEMM shapes (family M N K ta tb)\n"
            "  --bgemm FILE       batched shapes (family batch M N K ta tb)\n"
            "  --threads \"1 2\"    thread counts to run\n"
            "  --filter F1,F2     only these families ('overhead' for the call overhead)\n"
            "  --libs L1,L2       only these libraries (default tessel,openblas,blis,onednn,\n"
            "                     tessel-packed,onednn-packed,tessel-fused,onednn-fused;\n"
            "                     tessel first is the reference)\n"
            "  --quick            a subset of shapes, fewer repetitions\n"
            "  --peak GFLOPS      FMA peak of one thread, for the pct_peak column\n"
            "  --offset BYTES     start A, B and C this far past 64-byte alignment\n"
            "                     (a multiple of 4 below 64; 16 is what malloc gives)\n"
            "  --csv FILE         write results here (default stdout)\n"
            "  --versions         print each library's version line and exit\n");
}

int main(int argc, char **argv)
{
    const char *gemm_file = NULL, *bgemm_file = NULL, *filter = NULL, *csv_path = NULL;
    const char *thread_list = "1 2", *lib_list = NULL;
    int quick = 0, versions_only = 0;
    double peak = 0.0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            quick = 1;
            continue;
        }
        if (strcmp(a, "--versions") == 0) {
            versions_only = 1;
            continue;
        }
        if (!v) {
            usage();
            return 2;
        }
        if (strcmp(a, "--gemm") == 0)
            gemm_file = v;
        else if (strcmp(a, "--bgemm") == 0)
            bgemm_file = v;
        else if (strcmp(a, "--threads") == 0)
            thread_list = v;
        else if (strcmp(a, "--filter") == 0)
            filter = v;
        else if (strcmp(a, "--libs") == 0)
            lib_list = v;
        else if (strcmp(a, "--peak") == 0)
            peak = atof(v);
        else if (strcmp(a, "--csv") == 0)
            csv_path = v;
        else if (strcmp(a, "--offset") == 0) {
            long bytes = strtol(v, NULL, 10);
            if (bytes < 0 || bytes >= 64 || bytes % (long)sizeof(float) != 0) {
                usage();
                return 2;
            }
            g_offset_floats = (size_t)bytes / sizeof(float);
        }
        else {
            usage();
            return 2;
        }
        i++;
    }

    const bench_lib *libs[MAX_LIBS];
    int nlibs = 0;
    for (int l = 0; l < MAX_LIBS; l++)
        if (family_selected(all_libs[l]->name, lib_list))
            libs[nlibs++] = all_libs[l];
    if (nlibs == 0) {
        fprintf(stderr, "gemm_bench: no library selected by --libs %s\n", lib_list);
        return 2;
    }

    if (versions_only) {
        for (int l = 0; l < nlibs; l++)
            printf("%s %s\n", libs[l]->name, libs[l]->version());
        return 0;
    }
    /* Every library linked in, selected or not: OpenBLAS starts its
     * workers when it loads. */
    for (int l = 0; l < MAX_LIBS; l++)
        park(all_libs[l]);

    int threads[MAX_THREADS], nthreads = 0;
    for (const char *s = thread_list; *s;) {
        char *end;
        long t = strtol(s, &end, 10);
        if (end == s)
            break;
        if (t < 1 || t > 1024 || nthreads == MAX_THREADS) {
            fprintf(stderr, "gemm_bench: bad --threads %s\n", thread_list);
            return 2;
        }
        threads[nthreads++] = (int)t;
        s = end;
        while (*s == ' ' || *s == ',')
            s++;
    }
    if (nthreads == 0) {
        fprintf(stderr, "gemm_bench: bad --threads %s\n", thread_list);
        return 2;
    }

    problem_list shapes = {0};
    if ((gemm_file && read_shapes(gemm_file, 0, filter, &shapes) != 0) ||
        (bgemm_file && read_shapes(bgemm_file, 1, filter, &shapes) != 0))
        return 1;
    if (quick)
        quick_subset(&shapes);

    timing_policy tp = quick ? (timing_policy){0.01, 3, 20, 0.2, 1000}
                             : (timing_policy){0.03, 5, 200, 0.2, 10000};

    /* the call-overhead problems */
    problem_row over[2];
    memset(over, 0, sizeof over);
    snprintf(over[0].family, sizeof over[0].family, "overhead");
    over[0].p = (bench_problem){.batch = 1, .M = 1, .N = 1, .K = 1, .transa = 'N', .transb = 'N'};
    snprintf(over[1].family, sizeof over[1].family, "overhead");
    over[1].p = (bench_problem){.batch = 12, .M = 5, .N = 5, .K = 64, .transa = 'N',
                                .transb = 'T', .batched = 1};
    bench_problem_layout(&over[0].p);
    bench_problem_layout(&over[1].p);
    int do_overhead = family_selected("overhead", filter);

    FILE *out = csv_path ? fopen(csv_path, "w") : stdout;
    if (!out) {
        fprintf(stderr, "gemm_bench: cannot write %s: %s\n", csv_path, strerror(errno));
        return 1;
    }
    fprintf(out, "library,threads,family,batch,M,N,K,transa,transb,seconds,gflops,pct_peak,"
                 "max_rel_diff\n");

    for (int l = 0; l < nlibs; l++)
        fprintf(stderr, "gemm_bench: %-8s %s\n", libs[l]->name, libs[l]->version());
    size_t npacked = 0;
    for (size_t i = 0; i < shapes.n; i++)
        npacked += (size_t)packed_mode(&shapes.rows[i]);
    fprintf(stderr, "gemm_bench: %zu problems (%zu also with pre-packed weights), threads %s%s\n",
            shapes.n, npacked, thread_list, quick ? ", quick" : "");

    pool pa = {0}, pb = {0}, pc[MAX_LIBS];
    memset(pc, 0, sizeof pc);
    run_stats stats = {0, 0, 0, 0};
    int failed = 0;
    double start = bench_now_s();
    for (int ti = 0; ti < nthreads && !failed; ti++) {
        for (int l = 0; l < nlibs; l++)
            if (libs[l]->set_threads(threads[ti]) != 0) {
                fprintf(stderr, "gemm_bench: %s cannot run %d threads\n", libs[l]->name,
                        threads[ti]);
                failed = 1;
            }
        if (failed)
            break;
        double t_start = bench_now_s(), busy_start = machine_busy_s(), self_start = self_cpu_s();
        if (do_overhead)
            for (int k = 0; k < 2; k++)
                bench_one(libs, nlibs, threads[ti], &over[k], &pa, &pb, pc, &tp, 1, peak, out,
                          &stats);
        for (size_t i = 0; i < shapes.n; i++)
            bench_one(libs, nlibs, threads[ti], &shapes.rows[i], &pa, &pb, pc, &tp, 0, peak,
                      out, &stats);
        double wall = bench_now_s() - t_start;
        double others = (machine_busy_s() - busy_start - (self_cpu_s() - self_start)) / wall;
        fprintf(stderr, "gemm_bench: %d thread(s) took %.1f s; other processes used %.2f CPUs"
                        " on average meanwhile\n", threads[ti], wall, others > 0 ? others : 0.0);
    }
    fprintf(stderr, "gemm_bench: total %.1f s, %d result(s) differ from tessel by more than %g\n",
            bench_now_s() - start, stats.warnings, REL_DIFF_WARN);
    fprintf(stderr, "gemm_bench: %d problem(s) retimed because other processes took the "
                    "benchmark's cores or the host slowed them (canary below %.2f of its "
                    "speed); after %d attempts %d still shared them, %d still ran slowed\n",
            stats.retried, SLOW_MACHINE, MAX_ATTEMPTS, stats.loaded, stats.slowed);

    if (out != stdout)
        fclose(out);
    free(pa.data);
    free(pb.data);
    for (int l = 0; l < MAX_LIBS; l++)
        free(pc[l].data);
    free(shapes.rows);
    return failed ? 1 : 0;
}
