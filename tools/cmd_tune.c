/*
 * cmd_tune.c - `tessel tune`: calibrates the cost model on this machine
 * and stores it in the tuning database (within a minute on two cores),
 * reports its error on held-out shapes, transfers another profile's model
 * from a few samples, or tunes a list of shapes and stores each one's
 * fastest plan. Progress goes to stderr as a bar, results to stdout, and
 * a last "result:" line of key=value pairs for scripts (bench/).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "cli.h"
#include "db/db.h"
#include "hw/hw.h"
#include "tune/store.h"
#include "tune/tune.h"

static const char usage[] =
    "tessel tune [--threads T] [--budget S] [--eval FILE|none] [--shapes FILE [--top K]]\n"
    "            [--transfer-from PROFILE --samples N] [--list] [--no-store]";

enum { MAX_SAMPLES = 4000, MAX_SHAPES = 4096, MAX_TOP = 16 };
/* Rounds of the model's plan against the best measured of the top K. */
enum { HEAD_TO_HEAD_ROUNDS = 7 };
/* Held-out evaluation: at most this many seconds of it within a calibration. */
static const double EVAL_SECONDS = 12.0;
/* Matrices of the largest shape the training and the bench lists use. */
static const int64_t BENCH_FLOATS = (int64_t)TUNE_MAX_DIM * TUNE_MAX_DIM;

typedef struct tune_options {
    int threads;
    double budget;
    const char *eval, *shapes, *transfer_from;
    int top, samples;
    bool list, store, verbose;
} tune_options;

static void print_help(void)
{
    printf("usage: %s\n\n"
           "Calibrates tessel's cost model on this machine: measures every ukernel\n"
           "tile and a training set of plans, fits the model, reports its error on\n"
           "held-out shapes, and stores it in the tuning database (TESSEL_DB, else\n"
           "$XDG_CACHE_HOME/tessel/tessel.db, else ~/.cache/tessel/tessel.db), where\n"
           "every context of this machine, ISA and thread count then finds it.\n\n"
           "  --threads T          threads the model is calibrated for (default: all)\n"
           "  --budget S           seconds of training measurements (default 30)\n"
           "  --eval FILE|none     held-out shapes (default bench/shapes/gemm.txt)\n"
           "  --shapes FILE        instead: measure the --top K (default 8) best\n"
           "                       predicted plans of each shape, store the fastest\n"
           "  --transfer-from P    instead: start from profile P's model (a stored key,\n"
           "                       or ISA/THREADS such as avx512/1) and correct it from\n"
           "  --samples N          N measurements (at most 32; default 32)\n"
           "  --list               list the stored calibrations and exit\n"
           "  --verbose            print each held-out shape's predicted and measured time\n"
           "                       (with --shapes: every measured plan and its model terms)\n"
           "  --no-store           measure and report, store nothing\n\n"
           "Shape files have lines 'family M N K transa transb' ('#' comments),\n"
           "as in bench/shapes/.\n",
           usage);
}

/* ---- progress on stderr ---- */

typedef struct progress_bar {
    const char *label;
    int shown; /* percent last drawn, -1 before the first */
} progress_bar;

static void draw_progress(void *arg, double fraction)
{
    progress_bar *bar = arg;
    int percent = (int)(fraction * 100.0 + 0.5);
    if (percent > 100)
        percent = 100;
    if (percent == bar->shown)
        return;
    bar->shown = percent;
    char cells[31];
    int filled = percent * 30 / 100;
    for (int i = 0; i < 30; i++)
        cells[i] = i < filled ? '#' : '.';
    cells[30] = '\0';
    fprintf(stderr, "\r  %-16s [%s] %3d%%", bar->label, cells, percent);
    if (percent == 100)
        fputc('\n', stderr);
    fflush(stderr);
}

/* ---- shape files ---- */

static int read_shapes(const char *path, gemm_shape *out, int max)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        char family[64], ta, tb;
        long long M, N, K;
        if (line[0] == '#' ||
            sscanf(line, "%63s %lld %lld %lld %c %c", family, &M, &N, &K, &ta, &tb) != 6)
            continue;
        if (M < 0 || N < 0 || K < 0 || M > TUNE_MAX_DIM || N > TUNE_MAX_DIM || K > TUNE_MAX_DIM)
            continue;
        out[n++] = (gemm_shape){.M = M, .N = N, .K = K, .transa = ta == 'T' || ta == 't',
                                .transb = tb == 'T' || tb == 't'};
    }
    fclose(f);
    return n;
}

/* ---- the pieces every mode uses ---- */

typedef struct tune_session {
    tessel_ctx *ctx;
    hw_profile hw;
    plan_model *model;
    tune_bench bench;
    db *store;           /* NULL: not storing */
    char key[128];
} tune_session;

static int open_session(const tune_options *o, tune_session *t)
{
    memset(t, 0, sizeof *t);
    /* This context only lends its pool: tune measures with its own model. */
    int rc = cli_context(&t->ctx, o->threads, 1);
    if (rc != CLI_OK)
        return rc;
    double start = cli_now();
    /* The full probe: calibration wants the bandwidths the quick one skips. */
    if (hw_probe(&t->hw, true) != 0)
        fprintf(stderr, "tessel tune: TESSEL_ISA names a class this CPU lacks; using %s\n",
                hw_isa_name(t->hw.isa));
    t->model = malloc(sizeof *t->model);
    if (!t->model || plan_model_init(t->model, &t->hw) != 0) {
        fprintf(stderr, "tessel tune: no ukernels built for %s\n", hw_isa_name(t->hw.isa));
        return CLI_FAIL;
    }
    int threads = tessel_ctx_threads(t->ctx);
    tune_profile_key(&t->hw, threads, t->key, sizeof t->key);
    printf("tessel tune: %s\n", t->key);
    printf("  probe            %5.1f s  %s, peak %.0f GF/s per core, L2 %.0f GB/s, DRAM %.0f GB/s\n",
           cli_now() - start, hw_isa_name(t->hw.isa), t->hw.fma_peak_gflops,
           t->hw.read_gbs[HW_LEVEL_L2], t->hw.read_gbs[HW_LEVEL_DRAM]);
    op_env env = {.model = t->model, .pool = t->ctx->pool, .buffers = t->ctx->buffers,
                  .threads = threads};
    if (tune_bench_init(&t->bench, &env, BENCH_FLOATS) != 0) {
        fprintf(stderr, "tessel tune: out of memory for the measurement matrices\n");
        return CLI_FAIL;
    }
    if (o->store) {
        char msg[512];
        db_status st = db_open(NULL, true, 5000, &t->store, msg, sizeof msg);
        if (st != DB_OK)
            fprintf(stderr, "tessel tune: warning: %s; results will not be stored\n", msg);
    }
    return CLI_OK;
}

static void close_session(tune_session *t)
{
    db_close(t->store);
    tune_bench_free(&t->bench);
    free(t->model);
    tessel_ctx_destroy(t->ctx);
}

/* Stores the model (and the samples it was fitted on) in one transaction;
 * returns whether it was stored. */
static bool store_model(tune_session *t, const tune_sample *samples, int n)
{
    if (!t->store)
        return false;
    char text[8192];
    if (cost_model_format(&t->model->cost, text, sizeof text) != 0)
        return false;
    char description[256];
    snprintf(description, sizeof description, "%s %s cores=%d peak=%.1fGF/s", t->hw.cpu_name,
             hw_isa_name(t->hw.isa), t->hw.cores, t->hw.fma_peak_gflops);
    db_status st = db_begin(t->store);
    if (st == DB_OK)
        st = db_put_profile(t->store, t->hw.fingerprint, description);
    if (st == DB_OK)
        st = db_put_calibration(t->store, t->key, text);
    for (int i = 0; i < n && st == DB_OK; i++) {
        char shape[128], choice[96], features[512];
        tune_shape_key(&samples[i].shape, shape, sizeof shape);
        plan_choice_format(&samples[i].choice, choice, sizeof choice);
        int at = snprintf(features, sizeof features, "%s | %s | threads=%d |", shape, choice,
                          samples[i].threads);
        for (int f = 0; f < COST_NFEATURES && at < (int)sizeof features; f++)
            at += snprintf(features + at, sizeof features - (size_t)at, " %.6g",
                           samples[i].features[f]);
        st = db_add_sample(t->store, t->key, features, samples[i].seconds);
    }
    st = st == DB_OK ? db_commit(t->store) : st;
    if (st != DB_OK) {
        db_rollback(t->store);
        fprintf(stderr, "tessel tune: warning: not stored: %s\n", db_errmsg(t->store));
        return false;
    }
    return true;
}

static void print_weights(const cost_model *cm)
{
    printf("  weights         ");
    for (int i = 0; i < COST_NFEATURES; i++)
        printf(" %s=%.3g", cost_feature_name(i), cm->coef[i]);
    printf(" overlap=%.3g\n", cm->overlap);
}

/* Measures the model's own plan of each held-out shape, spreading the
 * picks over the list, and reports the prediction error. Every shape is
 * timed twice, in two passes over the list (the first within half of
 * `seconds`, the second taking about as long), and keeps the faster (as
 * the training samples are: tune_retime_faster). */
static int evaluate(tune_session *t, const char *path, double seconds, bool verbose,
                    double *mape, double *tau)
{
    gemm_shape *shapes = malloc(sizeof *shapes * MAX_SHAPES);
    tune_sample *held = calloc(MAX_SHAPES, sizeof *held);
    int n = shapes ? read_shapes(path, shapes, MAX_SHAPES) : -1, taken = 0;
    if (n <= 0 || !held) {
        free(shapes);
        free(held);
        return n < 0 ? -1 : 0;
    }
    progress_bar bar = {"held-out shapes", -1};
    double start = cli_now();
    /* A stride coprime with the list visits every family early. */
    int stride = 7;
    while (n % stride == 0)
        stride++;
    for (int i = 0; i < n && cli_now() - start < seconds / 2; i++) {
        const gemm_shape *s = &shapes[(int64_t)i * stride % n];
        gemm_plan p;
        plan_gemm(t->model, s, t->bench.env.threads, &p);
        tune_sample *h = &held[taken++];
        h->shape = *s;
        plan_cost_features(t->model, s, &p, h->features);
        h->seconds = tune_time_plan(&t->bench, s, &p, 0.004);
        draw_progress(&bar, (cli_now() - start) / seconds);
    }
    for (int i = 0; i < taken; i++) {
        gemm_plan p;
        plan_gemm(t->model, &held[i].shape, t->bench.env.threads, &p);
        tune_retime_faster(&t->bench, &held[i].shape, &p, 0.004, &held[i].seconds);
        draw_progress(&bar, 0.5 + 0.5 * (i + 1) / taken);
    }
    draw_progress(&bar, 1.0);
    tune_errors(held, taken, t->model->cost.coef, t->model->cost.overlap, mape, tau);
    for (int i = 0; verbose && i < taken; i++) {
        const gemm_shape *s = &held[i].shape;
        double predicted = cost_predict(&t->model->cost, held[i].features);
        printf("    %5lld x %5lld x %5lld %c%c  predicted %10.1f us  measured %10.1f us  %+6.1f%%\n",
               (long long)s->M, (long long)s->N, (long long)s->K, s->transa ? 'T' : 'N',
               s->transb ? 'T' : 'N', predicted * 1e6, held[i].seconds * 1e6,
               100.0 * (predicted / held[i].seconds - 1.0));
    }
    free(shapes);
    free(held);
    return taken;
}

/* ---- the modes ---- */

static int run_calibrate(const tune_options *o, tune_session *t)
{
    double start = cli_now();
    tune_sample *samples = calloc(MAX_SAMPLES, sizeof *samples);
    if (!samples)
        return CLI_FAIL;
    progress_bar bar = {"training plans", -1};
    int taken = 0;
    double t0 = cli_now();
    tune_calibrate(&t->bench, t->model, o->budget, samples, MAX_SAMPLES, &taken, draw_progress,
                   &bar);
    double fit_mape, fit_tau;
    tune_errors(samples, taken, t->model->cost.coef, t->model->cost.overlap, &fit_mape,
                &fit_tau);
    printf("  tiles + plans    %5.1f s  %d samples; fit: MAPE %.1f%%, Kendall tau %.3f\n",
           cli_now() - t0, taken, 100 * fit_mape, fit_tau);
    print_weights(&t->model->cost);

    double mape = NAN, tau = NAN;
    int held = 0;
    if (strcmp(o->eval, "none") != 0) {
        t0 = cli_now();
        held = evaluate(t, o->eval, EVAL_SECONDS, o->verbose, &mape, &tau);
        if (held < 0)
            fprintf(stderr, "tessel tune: warning: cannot read %s; no held-out report\n", o->eval);
        else
            printf("  held-out         %5.1f s  %d shapes of %s: MAPE %.1f%%, Kendall tau %.3f\n",
                   cli_now() - t0, held, o->eval, 100 * mape, tau);
    }
    bool stored = store_model(t, samples, taken);
    double total = cli_now() - start;
    printf("  %s\n", stored ? "stored" : "not stored");
    printf("result: seconds=%.1f samples=%d fit_mape=%.4f fit_tau=%.4f heldout=%d "
           "heldout_mape=%.4f heldout_tau=%.4f stored=%d\n",
           total, taken, fit_mape, fit_tau, held > 0 ? held : 0, mape, tau, stored);
    free(samples);
    return stored || !o->store ? CLI_OK : CLI_FAIL;
}

/* Finds the source model: an exact stored key, or "ISA/THREADS" matched
 * against the stored keys' " isa=ISA threads=THREADS" ending. */
typedef struct source_search {
    const char *want;
    char suffix[64];
    cost_model found;
    char key[128];
    bool ok;
} source_search;

static int match_source(void *arg, const char *key, const char *text)
{
    source_search *s = arg;
    size_t kl = strlen(key), sl = strlen(s->suffix);
    bool hit = strcmp(key, s->want) == 0 ||
               (sl > 0 && kl > sl && strcmp(key + kl - sl, s->suffix) == 0);
    if (hit && cost_model_parse(text, &s->found) == 0) {
        snprintf(s->key, sizeof s->key, "%s", key);
        s->ok = true;
        return 1;
    }
    return 0;
}

static int run_transfer(const tune_options *o, tune_session *t)
{
    if (!t->store) {
        /* Reading the source needs the database even with --no-store. */
        char msg[512];
        if (db_open(NULL, false, 5000, &t->store, msg, sizeof msg) != DB_OK) {
            fprintf(stderr, "tessel tune: %s\n", msg);
            return CLI_FAIL;
        }
    }
    source_search search = {.want = o->transfer_from};
    char isa[16];
    int threads;
    if (sscanf(o->transfer_from, "%15[a-z0-9]/%d", isa, &threads) == 2)
        snprintf(search.suffix, sizeof search.suffix, " isa=%s threads=%d", isa, threads);
    db_for_each_calibration(t->store, match_source, &search);
    if (!search.ok) {
        fprintf(stderr, "tessel tune: no stored calibration matches '%s' (see --list)\n",
                o->transfer_from);
        return CLI_FAIL;
    }
    double start = cli_now();
    char needle[32];
    snprintf(needle, sizeof needle, " isa=%s ", hw_isa_name(t->hw.isa));
    bool same_isa = strstr(search.key, needle) != NULL;
    progress_bar bar = {"transfer samples", -1};
    tune_transfer_report r;
    tune_transfer(&t->bench, t->model, &search.found, same_isa, o->samples, 48, &r,
                  draw_progress, &bar);
    printf("  from %s\n", search.key);
    printf("  before           MAPE %.1f%%, Kendall tau %.3f (source weights, %d held-out plans)\n",
           100 * r.mape_before, r.tau_before, r.validated);
    printf("  after            MAPE %.1f%%, Kendall tau %.3f (corrected from %d samples)\n",
           100 * r.mape_after, r.tau_after, r.samples);
    print_weights(&t->model->cost);
    bool stored = o->store && store_model(t, NULL, 0);
    printf("  %s\n", stored ? "stored" : "not stored");
    printf("result: seconds=%.1f samples=%d validated=%d mape_before=%.4f tau_before=%.4f "
           "mape_after=%.4f tau_after=%.4f stored=%d\n",
           cli_now() - start, r.samples, r.validated, r.mape_before, r.tau_before, r.mape_after,
           r.tau_after, stored);
    return CLI_OK;
}

/* --verbose: every measured plan of a shape with its predicted time and
 * the weighted terms the prediction sums (in microseconds), so a wrong
 * ranking shows which term misjudged it. */
static void print_candidates(const tune_session *t, const gemm_shape *s, const tune_candidate *c,
                             int k)
{
    const cost_model *cm = &t->model->cost;
    for (int j = 0; j < k; j++) {
        gemm_plan p;
        double f[COST_NFEATURES], g[COST_NFEATURES];
        char text[96];
        plan_gemm_choice(t->model, s, t->bench.env.threads, &c[j].choice, &p);
        plan_cost_features(t->model, s, &p, f);
        cost_effective(f, cm->overlap, g);
        plan_choice_format(&c[j].choice, text, sizeof text);
        printf("      %-44s predicted %9.1f measured %9.1f us:", text, c[j].predicted * 1e6,
               c[j].measured * 1e6);
        for (int i = 0; i < COST_NFEATURES; i++)
            if (cm->coef[i] * g[i] >= 0.05e-6)
                printf(" %s %.1f", cost_feature_name(i), cm->coef[i] * g[i] * 1e6);
        printf("\n");
    }
}

/* Per-shape tuning. The model's plan is what plan_gemm gives (the rules'
 * plan, or the cheapest predicted once calibrated); it is measured with
 * the top K and judged against their best. */
static int run_shapes(const tune_options *o, tune_session *t)
{
    /* Rank with this machine's calibration if there is one. */
    tune_plans none;
    char msg[512];
    cost_model cost = t->model->cost;
    tune_load(&t->hw, t->bench.env.threads, &cost, &none, msg, sizeof msg);
    tune_plans_free(&none);
    if (plan_model_set_cost(t->model, &cost) != 0) {
        fprintf(stderr, "tessel tune: no ukernel is built for ISA %s\n",
                hw_isa_name(t->model->hw.isa));
        return CLI_FAIL;
    }
    printf("  model            %s\n", t->model->cost.calibrated ? "calibrated" : "analytic (not calibrated)");
    gemm_shape *shapes = malloc(sizeof *shapes * MAX_SHAPES);
    int n = shapes ? read_shapes(o->shapes, shapes, MAX_SHAPES) : -1;
    if (n < 0) {
        fprintf(stderr, "tessel tune: cannot read %s\n", o->shapes);
        free(shapes);
        return CLI_FAIL;
    }
    double start = cli_now();
    int within = 0, stored = 0;
    double tau_sum = 0;
    printf("  %-22s %10s %10s %8s  %-44s %s\n", "shape", "model us", "best us", "model/best",
           "best plan", "model's plan (where not the best)");
    for (int i = 0; i < n; i++) {
        const gemm_shape *s = &shapes[i];
        tune_candidate c[MAX_TOP + 1];
        int k = tune_shape(&t->bench, t->model, s, o->top, c, MAX_TOP);
        gemm_plan model_plan;
        plan_gemm(t->model, s, t->bench.env.threads, &model_plan);
        double model_time = -1, best = INFINITY;
        int best_i = 0;
        double pred[MAX_TOP], meas[MAX_TOP];
        for (int j = 0; j < k; j++) {
            if (plan_choice_equal(&c[j].choice, &model_plan.choice))
                model_time = c[j].measured;
            if (c[j].measured < best) {
                best = c[j].measured;
                best_i = j;
            }
            pred[j] = c[j].predicted;
            meas[j] = c[j].measured;
        }
        tau_sum += k > 1 ? tune_kendall_tau(pred, meas, k) : 1.0;
        /* The best of K noisy times is biased low: the model's plan is
         * judged against the winner in a fresh head-to-head, alternating,
         * by the median of the rounds' ratios. (The least of three times
         * each flipped a fifth of the verdicts from one run to the next:
         * the machine's slow spells last longer than a round.) */
        if (!plan_choice_equal(&c[best_i].choice, &model_plan.choice)) {
            gemm_plan winner;
            plan_gemm_choice(t->model, s, t->bench.env.threads, &c[best_i].choice, &winner);
            double ratio[HEAD_TO_HEAD_ROUNDS], model_times[HEAD_TO_HEAD_ROUNDS];
            for (int round = 0; round < HEAD_TO_HEAD_ROUNDS; round++) {
                model_times[round] = tune_time_plan(&t->bench, s, &model_plan, 0.01);
                ratio[round] = model_times[round] / tune_time_plan(&t->bench, s, &winner, 0.01);
            }
            model_time = cli_median(model_times, HEAD_TO_HEAD_ROUNDS);
            best = model_time / cli_median(ratio, HEAD_TO_HEAD_ROUNDS);
        } else {
            model_time = best;
        }
        within += model_time <= 1.05 * best;
        if (o->verbose)
            print_candidates(t, s, c, k);
        char text[96], name[64];
        plan_choice_format(&c[best_i].choice, text, sizeof text);
        snprintf(name, sizeof name, "%lldx%lldx%lld %c%c", (long long)s->M, (long long)s->N,
                 (long long)s->K, s->transa ? 'T' : 'N', s->transb ? 'T' : 'N');
        char model_text[96] = "";
        if (!plan_choice_equal(&c[best_i].choice, &model_plan.choice))
            plan_choice_format(&model_plan.choice, model_text, sizeof model_text);
        printf("  %-22s %10.1f %10.1f %8.3f  %-44s %s\n", name, model_time * 1e6, best * 1e6,
               model_time / best, text, model_text);
        if (t->store) {
            char key[128];
            tune_shape_key(s, key, sizeof key);
            stored += db_put_plan(t->store, t->key, key, text, best) == DB_OK;
        }
    }
    double total = cli_now() - start;
    printf("  model's plan within 5%% of the best of the top %d: %d of %d shapes (%.0f%%); "
           "mean per-shape tau %.3f; %d plans stored\n",
           o->top, within, n, n ? 100.0 * within / n : 0.0, n ? tau_sum / n : 0.0, stored);
    printf("result: seconds=%.1f shapes=%d within5=%d mean_tau=%.4f stored=%d\n", total, n,
           within, n ? tau_sum / n : 0.0, stored);
    free(shapes);
    return CLI_OK;
}

static int print_calibration(void *arg, const char *key, const char *text)
{
    (void)arg;
    cost_model cm;
    printf("%s%s\n", key, cost_model_parse(text, &cm) == 0 ? "" : "  (unreadable)");
    return 0;
}

static int run_list(void)
{
    db *d = NULL;
    char msg[512];
    if (db_open(NULL, false, 5000, &d, msg, sizeof msg) != DB_OK) {
        fprintf(stderr, "tessel tune: %s\n", msg);
        return CLI_FAIL;
    }
    printf("calibrations in %s:\n", db_path(d));
    db_for_each_calibration(d, print_calibration, NULL);
    db_close(d);
    return CLI_OK;
}

static int parse_options(int argc, char **argv, tune_options *o)
{
    *o = (tune_options){.budget = 30, .eval = "bench/shapes/gemm.txt", .top = 8,
                        .samples = 32, .store = true};
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int64_t n;
        float f;
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--threads", &v)) != 0) {
            if (r < 0 || cli_parse_i64(v, 0, 4096, &n) != 0)
                return cli_usage_error("tune", usage, "--threads needs a count >= 0");
            o->threads = (int)n;
        } else if ((r = cli_take_value(argc, argv, &i, "--budget", &v)) != 0) {
            if (r < 0 || cli_parse_float(v, &f) != 0 || f <= 0 || f > 3600)
                return cli_usage_error("tune", usage, "--budget needs seconds in (0, 3600]");
            o->budget = f;
        } else if ((r = cli_take_value(argc, argv, &i, "--eval", &v)) != 0) {
            if (r < 0)
                return cli_usage_error("tune", usage, "--eval needs a file or 'none'");
            o->eval = v;
        } else if ((r = cli_take_value(argc, argv, &i, "--shapes", &v)) != 0) {
            if (r < 0)
                return cli_usage_error("tune", usage, "--shapes needs a file");
            o->shapes = v;
        } else if ((r = cli_take_value(argc, argv, &i, "--top", &v)) != 0) {
            if (r < 0 || cli_parse_i64(v, 1, MAX_TOP, &n) != 0)
                return cli_usage_error("tune", usage, "--top needs 1..%d", MAX_TOP);
            o->top = (int)n;
        } else if ((r = cli_take_value(argc, argv, &i, "--transfer-from", &v)) != 0) {
            if (r < 0)
                return cli_usage_error("tune", usage, "--transfer-from needs a profile");
            o->transfer_from = v;
        } else if ((r = cli_take_value(argc, argv, &i, "--samples", &v)) != 0) {
            if (r < 0 || cli_parse_i64(v, 1, 32, &n) != 0)
                return cli_usage_error("tune", usage, "--samples needs 1..32");
            o->samples = (int)n;
        } else if (strcmp(argv[i], "--list") == 0) {
            o->list = true;
        } else if (strcmp(argv[i], "--verbose") == 0) {
            o->verbose = true;
        } else if (strcmp(argv[i], "--no-store") == 0) {
            o->store = false;
        } else {
            return cli_usage_error("tune", usage, "unknown argument '%s'", argv[i]);
        }
    }
    if (o->shapes && o->transfer_from)
        return cli_usage_error("tune", usage, "--shapes and --transfer-from are separate runs");
    return CLI_OK;
}

int cmd_tune(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (cli_is_help(argv[i])) {
            print_help();
            return CLI_OK;
        }
    tune_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != CLI_OK)
        return rc;
    if (o.list)
        return run_list();
    tune_session t;
    rc = open_session(&o, &t);
    if (rc == CLI_OK) {
        if (o.transfer_from)
            rc = run_transfer(&o, &t);
        else if (o.shapes)
            rc = run_shapes(&o, &t);
        else
            rc = run_calibrate(&o, &t);
    }
    close_session(&t);
    return rc;
}
