/*
 * cmd_explain.c - `tessel explain gemm M N K`: shows why tessel runs a
 * shape the way it does on this machine. The hardware the model sees;
 * every built ukernel with the rules' verdict (why the rest were
 * rejected) and the chosen tiles; the blocking and why; the plan a real
 * call makes (same context, same shape key, same planner), its row runs,
 * column panels, ukernels and thread split; a picture of the
 * tessellation (explain_draw.c); and the predicted time against a
 * measured median. With --batch, how a strided batched call shares the
 * matrices among the threads, each run by the plan shown. With --packed,
 * all of it for the pre-packed call (tessel_sgemm_pack_b once, then
 * tessel_sgemm_packed), which an inference runtime makes for constant
 * weights.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "cli_call.h"
#include "explain.h"

static const char usage[] =
    "tessel explain gemm M N K [--trans NT] [--threads T] [--batch COUNT] [--packed]\n"
    "                          [--svg FILE] [--no-measure]";

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
           "  --batch COUNT  COUNT matrices of each operand, one after another: the\n"
           "                 strided batched call, how its matrices are shared out\n"
           "                 among the threads, and the plan each runs by\n"
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
    if (a->packed && a->p.batch > 1)
        return cli_usage_error("explain", usage, "--packed takes one matrix: the pre-packed call "
                                                 "has no batch");
    return cli_problem_complete("explain", usage, &a->p);
}

/* ---- the timed calls ---- */

/* Median seconds of the timed calls after a warm-up (the strided batched
 * call, or the pre-packed call on `packed` where given), their number in
 * *calls; -1 if memory ran out or a call failed (*status). */
static double measure(tessel_ctx *ctx, const explain_args *g, const tessel_packed_b *packed,
                      int *calls, tessel_status *status)
{
    cli_operands o = cli_describe_operands(&g->p);
    int64_t batch = g->p.batch;
    float *A = cli_alloc_matrix(batch, o.stride_a);
    float *B = packed ? NULL : cli_alloc_matrix(batch, o.stride_b);
    float *C = cli_alloc_matrix(batch, o.stride_c);
    double *times = malloc(CLI_MAX_REPEAT * sizeof *times);
    double median = -1.0;
    *status = TESSEL_OK;
    if (A && (B || packed) && C && times) {
        cli_fill_random(A, batch * o.stride_a, 1);
        if (B)
            cli_fill_random(B, batch * o.stride_b, 2);
        int n = 0;
        double spent = 0.0;
        /* The first call plans and fills the buffer cache: not timed. */
        for (int r = -1; *status == TESSEL_OK && n < CLI_MAX_REPEAT &&
                         (n < CLI_MIN_REPEAT || spent < CLI_TIMED_SECONDS); r++) {
            double t0 = cli_now();
            *status = cli_call_gemm(ctx, &g->p, &o, 1.0f, A, B, packed, NULL, 0.0f, C);
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
    free(A);
    free(B);
    free(C);
    free(times);
    return *status == TESSEL_OK ? median : -1.0;
}

/* The predicted time of the whole call: for a batch, the matrices the
 * busiest task runs in turn (all of them, where each is split over the
 * threads), the call's own costs once (plan_batch_seconds). */
static void print_time(const plan_model *m, const cli_call_plan *cp, int64_t batch,
                       double measured, int calls)
{
    const gemm_shape *s = &cp->shape;
    double flops = 2.0 * (double)s->M * (double)s->N * (double)s->K * (double)batch;
    double predicted = plan_batch_seconds(m, s, &cp->plan, cp->run.rounds, cp->run.tasks);
    printf("time      predicted %.2f us", predicted * 1e6);
    if (predicted > 0 && flops > 0)
        printf(" (%.1f GFLOP/s)", flops / predicted * 1e-9);
    if (batch > 1)
        printf(" for %lld matrices in turn on the busiest thread", (long long)cp->run.rounds);
    if (measured < 0) {
        printf("; not measured\n");
        return;
    }
    printf(", measured %.2f us (median of %d calls", measured * 1e6, calls);
    if (measured > 0 && flops > 0)
        printf(", %.1f GFLOP/s", flops / measured * 1e-9);
    printf(")");
    if (predicted > 0 && measured > 0)
        printf(": measured / predicted = %.2f", measured / predicted);
    printf("\n");
}

/* How the call runs its batch (op_gemm_schedule): which thread runs which
 * matrices, and what each matrix's run saves. */
static void print_batch(const cli_call_plan *cp, int64_t batch, int threads)
{
    const op_schedule *r = &cp->run;
    printf("batch     %lld matrices one after another (tessel_sgemm_strided_batched); ",
           (long long)batch);
    if (cp->plan_threads < threads)
        printf("each planned for %d thread%s (small matrices, or a batch that spreads evenly "
               "over the threads, run whole matrices per thread)\n",
               cp->plan_threads, cp->plan_threads == 1 ? "" : "s");
    else
        printf("each planned for the context's %d thread%s\n", threads, threads == 1 ? "" : "s");
    if (r->whole_matrices) {
        printf("          whole matrices per thread: %d threads take at most %lld each, %lld at "
               "a time, the same ones every call; a thread done with its own takes what is "
               "left of the others' from their ends\n",
               r->tasks, (long long)r->rounds, (long long)r->group_matrices);
    } else if (r->one_at_a_time) {
        printf("          one matrix at a time, each split along K over %d threads and its "
               "partial sums added after it\n", r->tasks);
    } else if (r->tasks > 1) {
        printf("          one matrix at a time, each split over %d threads by the plan%s\n",
               r->tasks, r->shared_b ? ", one B block shared by the threads" : "");
    } else {
        printf("          on the calling thread, matrix after matrix%s\n",
               threads > 1 ? ": the batch is over before a woken thread would join in" : "");
    }
    if (r->prefetch_next)
        printf("          matrix i + 1's operands asked for while matrix i runs: the batch is "
               "too large against the last cache to stay there between calls\n");
    if (r->in_place)
        printf("          each matrix run in place by its tiles' ukernels, looked up once "
               "for the batch (nothing packed)\n");
}

/* With --packed: B random, packed as tessel_sgemm_pack_b packs it. */
static int pack_b(tessel_ctx *ctx, const explain_args *g, tessel_packed_b **packed)
{
    *packed = NULL;
    if (!g->packed)
        return CLI_OK;
    cli_operands o = cli_describe_operands(&g->p);
    float *B = cli_alloc_matrix(1, o.stride_b);
    if (!B) {
        fprintf(stderr, "tessel explain: cannot allocate B\n");
        return CLI_FAIL;
    }
    cli_fill_random(B, o.stride_b, 2);
    tessel_status s = tessel_sgemm_pack_b(ctx, g->p.transb, g->p.K, g->p.N, B, o.ldb, packed);
    free(B);
    return s == TESSEL_OK ? CLI_OK : cli_library_error(s);
}

/* Where the plan comes from, as a real call finds it. */
static const char *plan_source(const plan_model *m, const cli_call_plan *cp)
{
    if (cp->tuned)
        return "a tuned plan from the tuning database (`tessel tune --shapes`)";
    return m->cost.calibrated ? "the calibrated model: the cheapest predicted variant"
                              : "the analytic model's rules (not calibrated)";
}

static int explain(tessel_ctx *ctx, const explain_args *g, const tessel_packed_b *packed)
{
    const plan_model *m = api_ctx_model(ctx);
    cli_call_plan cp;
    cli_plan_call(ctx, &g->p, packed, &cp);
    const gemm_plan *plan = &cp.plan;
    int64_t nregions = plan_regions(plan, &cp.shape, NULL, 0);
    plan_region *regions = malloc((size_t)(nregions > 0 ? nregions : 1) * sizeof *regions);
    if (!regions) {
        fprintf(stderr, "tessel explain: cannot allocate %lld regions\n", (long long)nregions);
        return CLI_FAIL;
    }
    plan_regions(plan, &cp.shape, regions, nregions);

    int threads = tessel_ctx_threads(ctx);
    printf("explain   gemm M %lld, N %lld, K %lld, trans %c%c", (long long)g->p.M,
           (long long)g->p.N, (long long)g->p.K, g->p.transa, g->p.transb);
    if (g->p.batch > 1)
        printf(", batch %lld", (long long)g->p.batch);
    printf(", context of %d threads%s\n", threads,
           packed ? "; B pre-packed (tessel_sgemm_packed)" : "");
    if (cp.direct)
        printf("direct    at most 64 multiply-adds in all: the call runs the plain loop "
               "(ops/gemm_direct.c), no plan; the measured time below is that loop's, the "
               "plan what the planner would make\n");
    explain_print_hardware(m);
    explain_print_candidates(m, plan);
    explain_print_blocking(m, plan, &cp.shape);
    char knobs[96];
    plan_choice_format(&plan->choice, knobs, sizeof knobs);
    printf("source    %s: %s\n", plan_source(m, &cp), knobs);
    printf("\n");
    explain_print_plan(m, plan, &cp.shape, regions, nregions);
    if (g->p.batch > 1 && !cp.direct)
        print_batch(&cp, g->p.batch, threads);
    explain_picture pic = {.plan = plan, .regions = regions, .nregions = nregions,
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
        print_time(m, &cp, g->p.batch, measured, calls);
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
