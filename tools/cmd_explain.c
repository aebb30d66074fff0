/*
 * cmd_explain.c - `tessel explain gemm M N K`: shows why tessel runs a
 * shape the way it does on this machine. The hardware the model sees;
 * every built ukernel with the rules' verdict (why the rest were
 * rejected) and the chosen tiles; the blocking and why; the plan a real
 * call makes (same context, same shape key, same planner), its row runs,
 * column panels, ukernels and thread split; a picture of the
 * tessellation (explain_draw.c); and the predicted time against a
 * measured median. With --packed, all of it for the pre-packed call
 * (tessel_sgemm_pack_b once, then tessel_sgemm_packed), which an
 * inference runtime makes for constant weights.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "cli.h"
#include "explain.h"
#include "ops/ops.h"
#include "plan/candidates.h"

static const char usage[] =
    "tessel explain gemm M N K [--trans NT] [--threads T] [--packed] [--svg FILE] [--no-measure]";

static void print_help(void)
{
    printf("usage: %s\n\n"
           "Explains the plan for C = op(A) op(B) on row-major M x K, K x N matrices\n"
           "in this machine's context: the hardware the model sees, every built\n"
           "ukernel with the model's verdict (the rule a rejected one fails), the\n"
           "blocking kc/mc/nc and why, the plan (row runs, column panels, ukernels,\n"
           "thread split), a character grid of the tessellation of M x N labelled\n"
           "by ukernel, and the predicted time against the measured median.\n\n"
           "  --trans XY     op(A), op(B): N (as stored) or T (transposed); default NN\n"
           "  --threads T    threads of the context; 0 (default) = TESSEL_NUM_THREADS\n"
           "                 or every core this process may run on\n"
           "  --packed       the pre-packed call: B packed once (tessel_sgemm_pack_b),\n"
           "                 the plan and time of tessel_sgemm_packed\n"
           "  --svg FILE     also draw the tessellation as SVG into FILE\n"
           "  --no-measure   skip the timed calls (about %.1f s)\n",
           usage, CLI_TIMED_SECONDS);
}

typedef struct explain_args {
    cli_problem p; /* sizes, --trans, --threads */
    const char *svg;
    bool measure, packed;
} explain_args;

/* Fills *a; returns CLI_OK, CLI_USAGE after saying why, or -1 after the
 * help (not an error). */
static int parse_args(int argc, char **argv, explain_args *a)
{
    *a = (explain_args){.p = cli_problem_default(), .measure = true};
    bool have_op = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        int r;
        if (cli_is_help(arg)) {
            print_help();
            return -1;
        } else if (strcmp(arg, "--no-measure") == 0) {
            a->measure = false;
        } else if (strcmp(arg, "--packed") == 0) {
            a->packed = true;
        } else if ((r = cli_take_value(argc, argv, &i, "--svg", &value)) != 0) {
            if (r < 0 || !*value)
                return cli_usage_error("explain", usage, "--svg takes a file name");
            a->svg = value;
        } else if (!have_op && arg[0] != '-') {
            if (strcmp(arg, "gemm") != 0)
                return cli_usage_error("explain", usage, "can explain 'gemm', not '%s'", arg);
            have_op = true;
        } else if ((r = cli_take_problem_arg("explain", usage, argc, argv, &i, &a->p)) != CLI_OK) {
            return r == CLI_NOT_TAKEN
                       ? cli_usage_error("explain", usage, "unknown option '%s'", arg)
                       : r;
        }
    }
    if (!have_op)
        return cli_usage_error("explain", usage, "missing the operator (gemm)");
    return cli_problem_complete("explain", usage, &a->p);
}

/* ---- the matrices and the call, as `tessel gemm` makes them ---- */

/* Row-major operands with leading dimension = stored row length. */
typedef struct operands {
    int64_t a_rows, a_cols, b_rows, b_cols, lda, ldb, ldc;
    float *A, *B, *C;
} operands;

static operands describe_operands(const explain_args *g)
{
    bool ta = g->p.transa == 'T', tb = g->p.transb == 'T';
    operands o = {.a_rows = ta ? g->p.K : g->p.M, .a_cols = ta ? g->p.M : g->p.K,
                  .b_rows = tb ? g->p.N : g->p.K, .b_cols = tb ? g->p.K : g->p.N};
    o.lda = o.a_cols > 1 ? o.a_cols : 1;
    o.ldb = o.b_cols > 1 ? o.b_cols : 1;
    o.ldc = g->p.N > 1 ? g->p.N : 1;
    return o;
}

/* The plan a real call makes: the same shape key and thread count
 * (op_gemm_key reads the strides the API derives from the transposes, so a
 * 1-wide transposed operand counts as not transposed, as it does there),
 * and the same sources, a tuned plan before the planner's. */
static const char *plan_like_a_call(tessel_ctx *ctx, const explain_args *g,
                                    const tessel_packed_b *packed, gemm_shape *shape,
                                    gemm_plan *plan)
{
    operands o = describe_operands(g);
    bool ta = g->p.transa == 'T', tb = g->p.transb == 'T';
    op_env env = {.model = api_ctx_model(ctx), .threads = tessel_ctx_threads(ctx)};
    gemm_call call = {.M = g->p.M, .N = g->p.N, .K = g->p.K, .alpha = 1.0f,
                      .a_rs = ta ? 1 : o.lda, .a_cs = ta ? o.lda : 1,
                      .b_rs = tb ? 1 : o.ldb, .b_cs = tb ? o.ldb : 1, .ldc = o.ldc,
                      .packed = packed};
    int threads;
    op_gemm_key(&env, &call, 1, shape, &threads);
    if (api_plan_for(ctx, shape, threads, plan))
        return "a tuned plan from the tuning database (`tessel tune --shapes`)";
    return env.model->cost.calibrated ? "the calibrated model: the cheapest predicted variant"
                                      : "the analytic model's rules (not calibrated)";
}

/* Median seconds of the timed calls after a warm-up (tessel_sgemm, or
 * tessel_sgemm_packed on `packed` where given), their number in *calls;
 * -1 if memory ran out or a call failed (*status). */
static double measure(tessel_ctx *ctx, const explain_args *g, const tessel_packed_b *packed,
                      int *calls, tessel_status *status)
{
    operands o = describe_operands(g);
    o.A = cli_alloc_matrix(o.a_rows, o.a_cols);
    o.B = packed ? NULL : cli_alloc_matrix(o.b_rows, o.b_cols);
    o.C = cli_alloc_matrix(g->p.M, g->p.N);
    double *times = malloc(CLI_MAX_REPEAT * sizeof *times);
    double median = -1.0;
    *status = TESSEL_OK;
    if (o.A && (o.B || packed) && o.C && times) {
        cli_fill_random(o.A, o.a_rows * o.a_cols, 1);
        if (o.B)
            cli_fill_random(o.B, o.b_rows * o.b_cols, 2);
        int n = 0;
        double spent = 0.0;
        /* The first call plans and fills the buffer cache: not timed. */
        for (int r = -1; *status == TESSEL_OK && n < CLI_MAX_REPEAT &&
                         (n < CLI_MIN_REPEAT || spent < CLI_TIMED_SECONDS); r++) {
            double t0 = cli_now();
            if (packed)
                *status = tessel_sgemm_packed(ctx, g->p.transa, g->p.M, o.A, o.lda, packed, 1.0f,
                                              0.0f, o.C, o.ldc);
            else
                *status = tessel_sgemm(ctx, g->p.transa, g->p.transb, g->p.M, g->p.N, g->p.K, 1.0f,
                                       o.A, o.lda, o.B, o.ldb, 0.0f, o.C, o.ldc);
            double t = cli_now() - t0;
            if (r >= 0) {
                times[n++] = t;
                spent += t;
            }
        }
        if (*status == TESSEL_OK && n > 0) {
            median = cli_median(times, n);
        }
        *calls = n;
    }
    free(o.A);
    free(o.B);
    free(o.C);
    free(times);
    return *status == TESSEL_OK ? median : -1.0;
}

static void print_time(const gemm_plan *p, const gemm_shape *s, double measured, int calls)
{
    double flops = 2.0 * (double)s->M * (double)s->N * (double)s->K;
    printf("time      predicted %.2f us", p->predicted_seconds * 1e6);
    if (p->predicted_seconds > 0 && flops > 0)
        printf(" (%.1f GFLOP/s)", flops / p->predicted_seconds * 1e-9);
    if (measured < 0) {
        printf("; not measured\n");
        return;
    }
    printf(", measured %.2f us (median of %d calls", measured * 1e6, calls);
    if (measured > 0 && flops > 0)
        printf(", %.1f GFLOP/s", flops / measured * 1e-9);
    printf(")");
    if (p->predicted_seconds > 0 && measured > 0)
        printf(": measured / predicted = %.2f", measured / p->predicted_seconds);
    printf("\n");
}

/* With --packed: B random, packed as tessel_sgemm_pack_b packs it. */
static int pack_b(tessel_ctx *ctx, const explain_args *g, tessel_packed_b **packed)
{
    *packed = NULL;
    if (!g->packed)
        return CLI_OK;
    operands o = describe_operands(g);
    float *B = cli_alloc_matrix(o.b_rows, o.b_cols);
    if (!B) {
        fprintf(stderr, "tessel explain: cannot allocate B\n");
        return CLI_FAIL;
    }
    cli_fill_random(B, o.b_rows * o.b_cols, 2);
    tessel_status s = tessel_sgemm_pack_b(ctx, g->p.transb, g->p.K, g->p.N, B, o.ldb, packed);
    free(B);
    return s == TESSEL_OK ? CLI_OK : cli_library_error(s);
}

static int explain(tessel_ctx *ctx, const explain_args *g, const tessel_packed_b *packed)
{
    const plan_model *m = api_ctx_model(ctx);
    gemm_shape shape;
    gemm_plan plan;
    const char *source = plan_like_a_call(ctx, g, packed, &shape, &plan);
    int64_t nregions = plan_regions(&plan, &shape, NULL, 0);
    plan_region *regions = malloc((size_t)(nregions > 0 ? nregions : 1) * sizeof *regions);
    if (!regions) {
        fprintf(stderr, "tessel explain: cannot allocate %lld regions\n", (long long)nregions);
        return CLI_FAIL;
    }
    plan_regions(&plan, &shape, regions, nregions);

    printf("explain   gemm M %lld, N %lld, K %lld, trans %c%c, context of %d threads%s\n",
           (long long)g->p.M, (long long)g->p.N, (long long)g->p.K, g->p.transa, g->p.transb,
           tessel_ctx_threads(ctx), packed ? "; B pre-packed (tessel_sgemm_packed)" : "");
    gemm_call tiny = {.M = g->p.M, .N = g->p.N, .K = g->p.K};
    if (!packed && op_sgemm_is_direct(&tiny, 1))
        printf("direct    at most 64 multiply-adds: the call runs the plain loop "
               "(ops/gemm_direct.c), no plan; the measured time below is that loop's, the "
               "plan what the planner would make\n");
    explain_print_hardware(m);
    explain_print_candidates(m, &plan);
    explain_print_blocking(m, &plan, &shape);
    char knobs[96];
    plan_choice_format(&plan.choice, knobs, sizeof knobs);
    printf("source    %s: %s\n", source, knobs);
    printf("\n");
    explain_print_plan(m, &plan, &shape, regions, nregions);
    explain_picture pic = {.plan = &plan, .regions = regions, .nregions = nregions,
                           .M = g->p.M, .N = g->p.N, .K = g->p.K};
    printf("\n");
    explain_print_grid(stdout, &pic);

    int rc = CLI_OK;
    if (g->svg && nregions > 0) {
        if (explain_write_svg(g->svg, &pic) == 0) {
            printf("svg       %s\n", g->svg);
        } else {
            fprintf(stderr, "tessel explain: cannot write %s: %s\n", g->svg, strerror(errno));
            rc = CLI_FAIL;
        }
    }
    double measured = -1.0;
    int calls = 0;
    if (g->measure && rc == CLI_OK) {
        tessel_status s;
        measured = measure(ctx, g, packed, &calls, &s);
        if (s != TESSEL_OK)
            rc = cli_library_error(s);
        else if (measured < 0)
            fprintf(stderr, "tessel explain: cannot allocate the matrices; not measured\n");
    }
    if (rc == CLI_OK)
        print_time(&plan, &shape, measured, calls);
    free(regions);
    return rc;
}

int cmd_explain(int argc, char **argv)
{
    explain_args g;
    int rc = parse_args(argc, argv, &g);
    if (rc < 0)
        return CLI_OK; /* --help */
    if (rc != CLI_OK)
        return rc;
    tessel_ctx *ctx = NULL;
    rc = cli_context(&ctx, g.p.threads, 0);
    if (rc != CLI_OK)
        return rc;
    tessel_packed_b *packed;
    rc = pack_b(ctx, &g, &packed);
    if (rc == CLI_OK)
        rc = explain(ctx, &g, packed);
    tessel_packed_destroy(packed);
    tessel_ctx_destroy(ctx);
    if (fflush(stdout) != 0)
        rc = CLI_FAIL;
    return rc;
}
