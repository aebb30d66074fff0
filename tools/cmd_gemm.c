/*
 * cmd_gemm.c - `tessel gemm M N K`: times tessel_sgemm (with --batch COUNT,
 * tessel_sgemm_strided_batched on COUNT matrices of each operand; with
 * --packed, tessel_sgemm_packed on B packed once, and with --bias or --act
 * its fused epilogue) on one shape with seeded random row-major matrices
 * and reports the median time, GFLOP/s and the fraction of the FMA peak of
 * the threads the call actually used; with --check it compares one more
 * call against ref_sgemm (and ref_epilogue) and fails if the error exceeds
 * the bound the tests use. --csv prints one line for scripts
 * (tools/demo.sh).
 */
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli_call.h"
#include "hw/hw.h"
#include "ref/ref.h"

static const char usage[] =
    "tessel gemm M N K [--trans NT] [--threads T] [--batch COUNT | --packed [--bias] "
    "[--act ACT]] [--repeat R] [--alpha A] [--beta B] [--check] [--csv]";

static void print_help(void)
{
    printf("usage: %s\n\n"
           "Times C = alpha * op(A) op(B) + beta * C on row-major M x K, K x N\n"
           "matrices (leading dimension = row length) filled with seeded random\n"
           "values in [-1, 1): one warm-up call, then R timed calls.\n\n"
           "  --trans XY    op(A), op(B): N (as stored) or T (transposed); default NN\n"
           "  --threads T   threads of the context; 0 (default) = TESSEL_NUM_THREADS\n"
           "                or every core this process may run on\n"
           "  --batch COUNT COUNT matrices of each operand, one after another: one\n"
           "                tessel_sgemm_strided_batched call (default 1)\n"
           "  --packed      B packed once (tessel_sgemm_pack_b, its time shown), then\n"
           "                tessel_sgemm_packed timed: a layer with constant weights\n"
           "  --bias        add a seeded random row of N floats as C is stored\n"
           "  --act ACT     then apply relu, gelu-tanh or gelu-erf (--bias and --act\n"
           "                are the packed call's epilogue: they imply --packed)\n"
           "  --repeat R    timed calls (default: enough for ~%.1f s, at least %d)\n"
           "  --alpha A     default 1\n"
           "  --beta B      default 0 (C then starts as NaN: it must not be read)\n"
           "  --check       compare every matrix with ref_sgemm (and ref_epilogue);\n"
           "                exit 1 if any element's error exceeds\n"
           "                2 (K + 2) 2^-24 (|alpha| |A||B| + |beta| |C|), times the\n"
           "                activation's slope plus its rounding (test_packed.c)\n"
           "                (shown: the max abs error and the largest bound)\n"
           "  --csv         print one line:\n"
           "                M,N,K,trans,threads,seconds,gflops,pct_peak,batch\n\n"
           "Prints the median time of a call, GFLOP/s (2MNK COUNT / t) and %% of peak,\n"
           "where peak is the quick-measured FMA peak per core times the threads the\n"
           "call used.\n",
           usage, CLI_TIMED_SECONDS, CLI_MIN_REPEAT);
}

typedef struct gemm_args {
    cli_problem p;    /* sizes, --trans, --threads, --batch */
    int repeat;       /* 0: choose from the time of one call */
    float alpha, beta;
    bool check, csv;
    bool packed, bias;             /* --packed; --bias (implies packed) */
    tessel_activation activation;  /* --act (implies packed) */
} gemm_args;

static const struct {
    const char *name;
    tessel_activation activation;
} ACTIVATIONS[] = {{"none", TESSEL_ACT_NONE},
                   {"relu", TESSEL_ACT_RELU},
                   {"gelu-tanh", TESSEL_ACT_GELU_TANH},
                   {"gelu-erf", TESSEL_ACT_GELU_ERF}};
enum { N_ACTIVATIONS = sizeof ACTIVATIONS / sizeof ACTIVATIONS[0] };

static const char *activation_name(tessel_activation act)
{
    for (int i = 0; i < N_ACTIVATIONS; i++)
        if (ACTIVATIONS[i].activation == act)
            return ACTIVATIONS[i].name;
    return "?";
}

/* Fills *a from argv; returns CLI_OK, CLI_USAGE after saying why, or -1
 * after printing the help (not an error). */
static int parse_args(int argc, char **argv, gemm_args *a)
{
    *a = (gemm_args){.p = cli_problem_default(), .alpha = 1.0f, .beta = 0.0f};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        int r;
        if (cli_is_help(arg)) {
            print_help();
            return -1;
        } else if (strcmp(arg, "--check") == 0) {
            a->check = true;
        } else if (strcmp(arg, "--csv") == 0) {
            a->csv = true;
        } else if (strcmp(arg, "--packed") == 0) {
            a->packed = true;
        } else if (strcmp(arg, "--bias") == 0) {
            a->bias = a->packed = true;
        } else if ((r = cli_take_value(argc, argv, &i, "--act", &value)) != 0) {
            int k = 0;
            while (r > 0 && k < N_ACTIVATIONS && strcmp(value, ACTIVATIONS[k].name) != 0)
                k++;
            if (r < 0 || k == N_ACTIVATIONS)
                return cli_usage_error("gemm", usage,
                                       "--act takes none, relu, gelu-tanh or gelu-erf");
            a->activation = ACTIVATIONS[k].activation;
            a->packed = true;
        } else if ((r = cli_take_value(argc, argv, &i, "--repeat", &value)) != 0) {
            int64_t n;
            if (r < 0 || cli_parse_i64(value, 1, 1 << 30, &n) != 0)
                return cli_usage_error("gemm", usage, "--repeat takes a count >= 1");
            a->repeat = (int)n;
        } else if ((r = cli_take_value(argc, argv, &i, "--alpha", &value)) != 0) {
            if (r < 0 || cli_parse_float(value, &a->alpha) != 0)
                return cli_usage_error("gemm", usage, "--alpha takes a finite number");
        } else if ((r = cli_take_value(argc, argv, &i, "--beta", &value)) != 0) {
            if (r < 0 || cli_parse_float(value, &a->beta) != 0)
                return cli_usage_error("gemm", usage, "--beta takes a finite number");
        } else if ((r = cli_take_problem_arg("gemm", usage, argc, argv, &i, &a->p)) != CLI_OK) {
            return r == CLI_NOT_TAKEN ? cli_usage_error("gemm", usage, "unknown option '%s'", arg)
                                      : r;
        }
    }
    if (a->packed && a->p.batch > 1)
        return cli_usage_error("gemm", usage, "--packed (or --bias, --act) takes one matrix: "
                                              "the pre-packed call has no batch");
    return cli_problem_complete("gemm", usage, &a->p);
}

/* ---- --check: the reference, split over rows so 2048^3 takes seconds ---- */

/* The operands in the layout the reference reads fastest: op(A) as M x K
 * and op(B) transposed, N x K, so its inner loop walks two contiguous rows
 * (the reference's result does not depend on the layout it is given). */
typedef struct check_job {
    int64_t M, N, K;
    float alpha, beta;
    const float *bias;          /* the epilogue's, or NULL */
    tessel_activation activation;
    const float *opa;   /* M x K */
    const float *opbt;  /* N x K */
    const float *c0;    /* C before the call, M x N */
    const float *c;     /* C from tessel, M x N */
    float *ref;         /* the reference result, M x N */
    int64_t row0, row1; /* this worker's rows */
    double max_err, max_bound; /* the largest error, the largest bound */
    int64_t over;              /* elements beyond their own bound */
} check_job;

/* The largest slope of an activation: how much it can widen an error in
 * its input (GELU's derivative peaks at 1.13). */
static double activation_slope(tessel_activation act)
{
    return act == TESSEL_ACT_GELU_TANH || act == TESSEL_ACT_GELU_ERF ? 1.13 : 1.0;
}

static void *check_rows(void *arg)
{
    check_job *j = arg;
    int64_t rows = j->row1 - j->row0, N = j->N, K = j->K;
    float *ref = j->ref + j->row0 * N;
    memcpy(ref, j->c0 + j->row0 * N, (size_t)(rows * N) * sizeof(float));
    ref_sgemm('N', 'T', rows, N, K, j->alpha, j->opa + j->row0 * K, K > 1 ? K : 1, j->opbt,
              K > 1 ? K : 1, j->beta, ref, N > 1 ? N : 1);
    j->max_err = 0.0;
    j->max_bound = 0.0;
    j->over = 0;
    bool epilogue = j->bias || j->activation != TESSEL_ACT_NONE;
    for (int64_t i = j->row0; i < j->row1; i++) {
        const float *a = j->opa + i * K;
        for (int64_t jj = 0; jj < N; jj++) {
            const float *b = j->opbt + jj * K;
            /* |A||B| row by column, four partial sums so it runs at the
             * adder's throughput, not its latency: it only sizes a bound. */
            double s[4] = {0, 0, 0, 0};
            int64_t p = 0;
            for (; p + 4 <= K; p += 4)
                for (int u = 0; u < 4; u++)
                    s[u] += fabs((double)a[p + u] * b[p + u]);
            for (; p < K; p++)
                s[0] += fabs((double)a[p] * b[p]);
            double scale = fabs(j->alpha) * (s[0] + s[1] + s[2] + s[3]);
            if (j->beta != 0.0f)
                scale += fabs(j->beta) * fabs(j->c0[i * N + jj]);
            /* Each element against its own bound, as the tests do: a
             * small element far off is an error even when a large one
             * elsewhere would make the matrix-wide bound loose. */
            double bound = 2.0 * (double)(K + 2) * 0x1p-24 * scale;
            float *want = &ref[(i - j->row0) * N + jj];
            if (epilogue) {
                /* The product's bound through the activation, plus the
                 * activation's own rounding (test_packed.c). */
                double pre = (double)*want + (j->bias ? j->bias[jj] : 0.0f);
                ref_epilogue(1, 1, want, 1, j->bias ? j->bias + jj : NULL, j->activation);
                bound = activation_slope(j->activation) * bound +
                        8.0 * 0x1p-24 * (fabs(pre) + fabs((double)*want));
            }
            double err = fabs((double)j->c[i * N + jj] - (double)*want);
            /* NaN (C read although beta is 0, or garbage) must fail. */
            if (isnan(err))
                err = INFINITY;
            if (err > bound)
                j->over++;
            if (err > j->max_err)
                j->max_err = err;
            if (bound > j->max_bound)
                j->max_bound = bound;
        }
    }
    return NULL;
}

/* Element (row, col) of the stored matrix X read as op(X). */
static float op_element(const float *x, int64_t ld, char trans, int64_t row, int64_t col)
{
    return trans == 'N' ? x[row * ld + col] : x[col * ld + row];
}

/* Checks one matrix, `c`, against the reference: the largest abs error,
 * the largest element bound, and how many elements exceed their own
 * bound; -1 if memory ran out. Spreads the reference over the machine's
 * cores. */
static int check_matrix(const gemm_args *g, const cli_operands *o, const float *A,
                        const float *B, const float *bias, const float *c0, const float *c,
                        double *max_err, double *max_bound, int64_t *over)
{
    int64_t M = g->p.M, N = g->p.N, K = g->p.K;
    float *opa = cli_alloc_matrix(M, K), *opbt = cli_alloc_matrix(N, K);
    float *ref = cli_alloc_matrix(M, N);
    int ok = opa && opbt && ref;
    if (ok) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t p = 0; p < K; p++)
                opa[i * K + p] = op_element(A, o->lda, g->p.transa, i, p);
        for (int64_t j = 0; j < N; j++)
            for (int64_t p = 0; p < K; p++)
                opbt[j * K + p] = op_element(B, o->ldb, g->p.transb, p, j);

        enum { MAX_WORKERS = 64 };
        int workers = hw_default_profile()->cores;
        workers = workers < 1 ? 1 : workers > MAX_WORKERS ? MAX_WORKERS : workers;
        if (workers > M)
            workers = M > 0 ? (int)M : 1;
        check_job jobs[MAX_WORKERS];
        pthread_t tids[MAX_WORKERS];
        bool started[MAX_WORKERS] = {false};
        for (int w = 0; w < workers; w++) {
            jobs[w] = (check_job){M, N, K, g->alpha, g->beta, bias, g->activation, opa, opbt,
                                  c0, c, ref, M * w / workers, M * (w + 1) / workers, 0, 0, 0};
            /* Worker 0 is this thread; a thread that fails to start is
             * done here too, only slower. */
            started[w] = w > 0 && pthread_create(&tids[w], NULL, check_rows, &jobs[w]) == 0;
        }
        for (int w = 0; w < workers; w++)
            if (!started[w])
                check_rows(&jobs[w]);
        for (int w = 0; w < workers; w++) {
            if (started[w])
                pthread_join(tids[w], NULL);
            *max_err = jobs[w].max_err > *max_err ? jobs[w].max_err : *max_err;
            *max_bound = jobs[w].max_bound > *max_bound ? jobs[w].max_bound : *max_bound;
            *over += jobs[w].over;
        }
    }
    free(opa);
    free(opbt);
    free(ref);
    return ok ? 0 : -1;
}

/* ---- the command ---- */

/* The matrices of the problem: every matrix of the batch of each operand,
 * C as it was before the calls (C0), and with --packed B's packed handle
 * and the epilogue's bias (NULL without --bias). */
typedef struct matrices {
    float *A, *B, *C, *C0;
    float *bias;
    tessel_packed_b *packed;
} matrices;

/* One call on the problem, as the library is called for it. */
static tessel_status call_gemm(tessel_ctx *ctx, const gemm_args *g, const cli_operands *o,
                               const matrices *x)
{
    tessel_epilogue epilogue = {x->bias, g->activation};
    bool fused = x->bias || g->activation != TESSEL_ACT_NONE;
    return cli_call_gemm(ctx, &g->p, o, g->alpha, x->A, x->B, x->packed,
                         fused ? &epilogue : NULL, g->beta, x->C);
}

/* --check: one more call from C as it was (the timed calls overwrote it,
 * and with beta != 0 each one fed on the last), every matrix of the batch
 * against the reference; prints the verdict. */
static int check_call(tessel_ctx *ctx, const gemm_args *g, const cli_operands *o,
                      const matrices *x)
{
    int64_t c_floats = g->p.batch * o->stride_c;
    memcpy(x->C, x->C0, (size_t)c_floats * sizeof(float));
    tessel_status s = call_gemm(ctx, g, o, x);
    if (s != TESSEL_OK)
        return cli_library_error(s);
    double err = 0.0, bound = 0.0;
    int64_t over = 0;
    for (int64_t i = 0; i < g->p.batch; i++)
        if (check_matrix(g, o, x->A + i * o->stride_a, x->B + i * o->stride_b, x->bias,
                         x->C0 + i * o->stride_c, x->C + i * o->stride_c, &err, &bound,
                         &over) != 0) {
            fprintf(stderr, "tessel gemm: cannot allocate the reference for --check\n");
            return CLI_FAIL;
        }
    /* --csv keeps stdout to its one line; a failure still says why. */
    if (over == 0 && !g->csv)
        printf("check    max abs error %.3g, bound %.3g: ok\n", err, bound);
    else if (over > 0)
        fprintf(g->csv ? stderr : stdout,
                "check    max abs error %.3g, bound %.3g: FAILED, %lld of %lld "
                "elements beyond their bound\n",
                err, bound, (long long)over, (long long)(g->p.batch * g->p.M * g->p.N));
    return over == 0 ? CLI_OK : CLI_FAIL;
}

int cmd_gemm(int argc, char **argv)
{
    gemm_args g;
    int rc = parse_args(argc, argv, &g);
    if (rc < 0)
        return CLI_OK; /* --help */
    if (rc != CLI_OK)
        return rc;

    int64_t M = g.p.M, N = g.p.N, K = g.p.K, batch = g.p.batch;
    cli_operands o = cli_describe_operands(&g.p);

    tessel_ctx *ctx = NULL;
    rc = cli_context(&ctx, g.p.threads, g.csv);
    if (rc != CLI_OK)
        return rc;

    /* Strides, not rows x columns: an empty matrix still has its ld. */
    int64_t c_floats = batch * o.stride_c;
    matrices x = {cli_alloc_matrix(batch, o.stride_a), cli_alloc_matrix(batch, o.stride_b),
                  cli_alloc_matrix(batch, o.stride_c), cli_alloc_matrix(batch, o.stride_c),
                  g.bias ? cli_alloc_matrix(1, N) : NULL, NULL};
    double *times = NULL;
    if (!x.A || !x.B || !x.C || !x.C0 || (g.bias && !x.bias)) {
        fprintf(stderr, "tessel gemm: cannot allocate the matrices for %lld x (%lld x %lld x %lld)\n",
                (long long)batch, (long long)M, (long long)N, (long long)K);
        rc = CLI_FAIL;
        goto done;
    }
    cli_fill_random(x.A, batch * o.stride_a, 1);
    cli_fill_random(x.B, batch * o.stride_b, 2);
    /* With beta 0 the API promises never to read C: start it as NaN so a
     * --check catches a call that does. */
    if (g.beta != 0.0f)
        cli_fill_random(x.C0, c_floats, 3);
    else
        for (int64_t i = 0; i < c_floats; i++)
            x.C0[i] = NAN;
    memcpy(x.C, x.C0, (size_t)c_floats * sizeof(float));
    if (x.bias)
        cli_fill_random(x.bias, N, 4);

    /* --packed: B packed once, as a runtime packs constant weights; the
     * packing is timed on its own, never inside the calls. */
    double pack_seconds = 0.0;
    if (g.packed) {
        double p0 = cli_now();
        tessel_status ps = tessel_sgemm_pack_b(ctx, g.p.transb, K, N, x.B, o.ldb, &x.packed);
        pack_seconds = cli_now() - p0;
        if (ps != TESSEL_OK) {
            rc = cli_library_error(ps);
            goto done;
        }
    }

    /* The warm-up plans the shape and fills the library's buffer cache;
     * the next call, timed, tells how many fit in the target time. */
    tessel_status s = call_gemm(ctx, &g, &o, &x);
    double t0 = cli_now();
    if (s == TESSEL_OK)
        s = call_gemm(ctx, &g, &o, &x);
    double first = cli_now() - t0;
    if (s != TESSEL_OK) {
        rc = cli_library_error(s);
        goto done;
    }
    int repeat = g.repeat;
    if (repeat == 0) {
        double n = first > 0 ? CLI_TIMED_SECONDS / first : CLI_MAX_REPEAT;
        repeat = n < CLI_MIN_REPEAT ? CLI_MIN_REPEAT : n > CLI_MAX_REPEAT ? CLI_MAX_REPEAT : (int)n;
    }
    times = malloc((size_t)repeat * sizeof *times);
    if (!times) {
        fprintf(stderr, "tessel gemm: cannot allocate %d timings\n", repeat);
        rc = CLI_FAIL;
        goto done;
    }
    times[0] = first;
    for (int r = 1; r < repeat && s == TESSEL_OK; r++) {
        t0 = cli_now();
        s = call_gemm(ctx, &g, &o, &x);
        times[r] = cli_now() - t0;
    }
    if (s != TESSEL_OK) {
        rc = cli_library_error(s);
        goto done;
    }
    double median = cli_median(times, (int)repeat);

    /* The peak of the threads the call runs on, not of the context: a
     * small shape that uses one thread of eight is not at 1/8 of peak. */
    cli_call_plan cp;
    cli_plan_call(ctx, &g.p, x.packed, &cp);
    int used = cp.direct ? 1 : cp.run.tasks;
    double flops = 2.0 * (double)M * (double)N * (double)K * (double)batch;
    double gflops = median > 0 ? flops / median * 1e-9 : 0.0;
    double peak = hw_default_profile()->fma_peak_gflops * used;
    double pct = peak > 0 ? 100.0 * gflops / peak : 0.0;

    if (g.csv) {
        printf("%lld,%lld,%lld,%c%c,%d,%.9f,%.3f,%.2f,%lld\n", (long long)M, (long long)N,
               (long long)K, g.p.transa, g.p.transb, used, median, gflops, pct,
               (long long)batch);
    } else {
        printf("gemm     M %lld, N %lld, K %lld, trans %c%c, alpha %g, beta %g", (long long)M,
               (long long)N, (long long)K, g.p.transa, g.p.transb, (double)g.alpha,
               (double)g.beta);
        if (batch > 1)
            printf(", batch %lld (strided)", (long long)batch);
        if (g.packed)
            printf(", B pre-packed%s%s%s", g.bias ? ", + bias" : "",
                   g.activation != TESSEL_ACT_NONE ? ", then " : "",
                   g.activation != TESSEL_ACT_NONE ? activation_name(g.activation) : "");
        printf("\nthreads  %d used of %d\n", used, tessel_ctx_threads(ctx));
        if (g.packed)
            printf("pack     %.3f us, once (tessel_sgemm_pack_b)\n", pack_seconds * 1e6);
        printf("median   %.3f us of %d timed calls\n", median * 1e6, repeat);
        printf("rate     %.2f GFLOP/s, %.1f%% of peak (%.1f GFLOP/s = %.1f x %d)\n", gflops,
               pct, peak, hw_default_profile()->fma_peak_gflops, used);
    }
    if (g.check)
        rc = check_call(ctx, &g, &o, &x);

done:
    free(times);
    free(x.A);
    free(x.B);
    free(x.C);
    free(x.C0);
    free(x.bias);
    tessel_packed_destroy(x.packed);
    tessel_ctx_destroy(ctx);
    if (fflush(stdout) != 0)
        rc = CLI_FAIL;
    return rc;
}
