/*
 * calibrate.c - the three jobs of `tessel tune` that measure: calibration
 * (ukernel tile rates, then a training set of plans, then the fit),
 * transfer (another profile's weights corrected from a few samples), and
 * per-shape tuning (the best predicted plans of a shape measured, the
 * fastest kept). Each works on a plan_model whose cost model it fills in;
 * storing the result is the caller's business (store.c keys, src/db/).
 */
#include <stdlib.h>
#include <string.h>

#include "tune/tune.h"

/* Transfer pulls the weights towards the source's as if the source were
 * this many more samples: enough that a few noisy samples cannot throw a
 * weight far, little enough that 32 can correct it. */
static const double TRANSFER_PRIOR_SAMPLES = 4.0;

void tune_calibrate(tune_bench *b, plan_model *m, double seconds, tune_sample *samples,
                    int max_samples, int *taken, tune_progress_fn progress, void *arg)
{
    cost_model_default(&m->cost, &m->hw);
    tune_measure_tiles(m, &m->cost);
    *taken = tune_collect(b, m, 1, max_samples, seconds, samples, progress, arg);
    double prior[COST_NFEATURES];
    memcpy(prior, m->cost.coef, sizeof prior);
    m->cost.overlap = tune_fit_overlap(samples, *taken, prior, m->cost.coef);
    m->cost.calibrated = true;
}

void tune_transfer(tune_bench *b, plan_model *m, const cost_model *source, bool same_isa,
                   int nsamples, int nvalidate, tune_transfer_report *r,
                   tune_progress_fn progress, void *arg)
{
    memset(r, 0, sizeof *r);
    /* The target's own machine numbers; the source's weights, and its tile
     * rates only where they describe the same ukernels. */
    cost_model_default(&m->cost, &m->hw);
    memcpy(m->cost.coef, source->coef, sizeof m->cost.coef);
    m->cost.overlap = source->overlap;
    if (same_isa)
        memcpy(m->cost.tile_scale, source->tile_scale, sizeof m->cost.tile_scale);
    m->cost.calibrated = true;

    tune_sample *fit = calloc((size_t)nsamples + 1, sizeof *fit);
    tune_sample *check = calloc((size_t)nvalidate + 1, sizeof *check);
    if (!fit || !check)
        goto done;
    /* Different seeds: the samples judged on are never the ones fitted. */
    r->validated = tune_collect(b, m, 2, nvalidate, 1e9, check, NULL, NULL);
    r->samples = tune_collect(b, m, 3, nsamples, 1e9, fit, progress, arg);
    tune_errors(check, r->validated, m->cost.coef, m->cost.overlap, &r->mape_before,
                &r->tau_before);
    double pull = r->samples > 0 ? TRANSFER_PRIOR_SAMPLES / r->samples : 0.0;
    tune_fit(fit, r->samples, source->coef, pull, m->cost.overlap, m->cost.coef);
    tune_errors(check, r->validated, m->cost.coef, m->cost.overlap, &r->mape_after,
                &r->tau_after);
done:
    free(fit);
    free(check);
}

int tune_rank(const plan_model *m, const gemm_shape *s, int threads, tune_candidate *out,
              int max)
{
    plan_choice variants[16];
    int n = plan_variants(m, s, threads, variants, 16), kept = 0;
    for (int i = 0; i < n; i++) {
        gemm_plan p;
        plan_gemm_choice(m, s, threads, &variants[i], &p);
        bool seen = false;
        for (int j = 0; j < kept && !seen; j++)
            seen = plan_choice_equal(&out[j].choice, &p.choice);
        if (seen || kept == max)
            continue;
        out[kept++] = (tune_candidate){.choice = p.choice, .predicted = p.predicted_seconds};
    }
    /* Insertion sort by predicted time: a dozen entries. */
    for (int i = 1; i < kept; i++)
        for (int j = i; j > 0 && out[j].predicted < out[j - 1].predicted; j--) {
            tune_candidate t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return kept;
}

/* Rounds of measurements of each plan in tune_shape. */
enum { TUNE_ROUNDS = 3 };

int tune_shape(tune_bench *b, const plan_model *m, const gemm_shape *s, int top,
               tune_candidate *out, int max)
{
    int n = tune_rank(m, s, b->env.threads, out, max);
    if (n > top)
        n = top;
    /* Round after round, alternating, keeping each plan's fastest median:
     * the machine's clock and neighbours drift, and a plan measured only
     * during a slow spell would lose unfairly. Three rounds, not two: this
     * host has spells of 0.1-1.5 s in which both cores run at half speed
     * (every shape at once, in-L2 ones too: bench/results/
     * 2026-12-06-half-speed-spells-zen4.txt), long enough to cover two
     * rounds of a large shape's plan. */
    for (int round = 0; round < TUNE_ROUNDS; round++)
        for (int i = 0; i < n; i++) {
            gemm_plan p;
            plan_gemm_choice(m, s, b->env.threads, &out[i].choice, &p);
            double t = tune_time_plan(b, s, &p, 0.01);
            if (round == 0 || t < out[i].measured)
                out[i].measured = t;
        }
    return n;
}
