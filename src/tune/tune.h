/*
 * tune.h - calibration and transfer of the cost model (DESIGN, "Cost
 * model"), and per-shape tuning. Calibration measures every ukernel's k
 * step in L1 and a few hundred plans on seeded training shapes, then fits
 * the cost model's weights; transfer starts from another machine's (or
 * ISA's, or thread count's) weights and corrects them from a few samples;
 * per-shape tuning measures the best predicted plans of a shape and keeps
 * the fastest. Everything here measures through src/ops/, so what is timed
 * is what a call runs.
 */
#ifndef TESSEL_TUNE_H
#define TESSEL_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/ops.h"
#include "plan/plan.h"

/* One measured plan: its shape, the knobs it was planned with, the
 * features the cost model reads and the median time of a call. */
typedef struct tune_sample {
    gemm_shape shape;
    plan_choice choice;
    int threads;
    double features[COST_NFEATURES];
    double seconds;
} tune_sample;

/* Called as work progresses, fraction in [0, 1]. */
typedef void (*tune_progress_fn)(void *arg, double fraction);

/* Seeded matrices big enough for every shape measured, reused by all
 * measurements of a session. */
typedef struct tune_bench {
    op_env env;
    float *A, *B, *C;
    int64_t floats;      /* each of A, B, C */
} tune_bench;

/* Largest dimension and largest matrix the training and tuning shapes use. */
enum { TUNE_MAX_DIM = 4096 };

int tune_bench_init(tune_bench *b, const op_env *env, int64_t floats);
void tune_bench_free(tune_bench *b);
bool tune_bench_fits(const tune_bench *b, const gemm_shape *s);

/* Median seconds of one call of the plan on the bench's matrices, over
 * repeats filling about min_seconds (at least 3), after one warm-up. */
double tune_time_plan(tune_bench *b, const gemm_shape *s, const gemm_plan *p, double min_seconds);

/* Times the plan again as tune_time_plan(.., min_seconds) and keeps the
 * faster of that and *seconds, an earlier timing of the same plan. */
void tune_retime_faster(tune_bench *b, const gemm_shape *s, const gemm_plan *p,
                        double min_seconds, double *seconds);

/* Measures each built ukernel tile that fits the registers, A packed and
 * read in place, at the model's kc in L1, and stores measured over
 * analytic cycles in cm->tile_scale. cm->ghz converts seconds to cycles. */
void tune_measure_tiles(const plan_model *m, cost_model *cm);

/* The seeded training shape number i: M log-uniform in 1..1024, N and K
 * among common layer widths, mostly NN, within a flop cap. */
gemm_shape tune_training_shape(uint64_t seed, int i);

/* Measures up to n plans within about `seconds`: per training shape (from
 * `seed`), the model's plan and one other variant, taken within half the
 * time, then each timed again and the faster kept. Features are computed
 * with m (its cost model's machine numbers and tile scales). Returns how
 * many samples were taken. */
int tune_collect(tune_bench *b, const plan_model *m, uint64_t seed, int n, double seconds,
                 tune_sample *out, tune_progress_fn progress, void *arg);

/* Fits the weights: least squares on relative error, weights >= 0, pulled
 * towards `prior` with strength `lambda` (0 = plain fit). */
void tune_fit(const tune_sample *s, int n, const double *prior, double lambda, double overlap,
              double *coef);

/* The plain fit for the best of a few overlaps (cost_model.overlap);
 * returns that overlap. */
double tune_fit_overlap(const tune_sample *s, int n, const double *prior, double *coef);

/* Mean absolute percentage error and Kendall's tau of the predictions of
 * (coef, overlap) against the measured times. */
void tune_errors(const tune_sample *s, int n, const double *coef, double overlap, double *mape,
                 double *tau);

/* Kendall's tau-b of two series (ties counted as neither). */
double tune_kendall_tau(const double *a, const double *b, int n);

/* Calibration: tile rates, then training plans for about `seconds`, then
 * the fit; m->cost becomes the calibrated model. The samples taken are
 * left in samples[0 .. *taken). */
void tune_calibrate(tune_bench *b, plan_model *m, double seconds, tune_sample *samples,
                    int max_samples, int *taken, tune_progress_fn progress, void *arg);

typedef struct tune_transfer_report {
    int samples, validated;            /* fitted on, judged on */
    double mape_before, tau_before;    /* the source's weights as they are */
    double mape_after, tau_after;      /* corrected */
} tune_transfer_report;

/* Transfer: m->cost starts as the source's weights on m's own machine
 * numbers (and the source's tile rates if same_isa), is judged on
 * nvalidate fresh measurements, corrected from nsamples others, and
 * judged again. */
void tune_transfer(tune_bench *b, plan_model *m, const cost_model *source, bool same_isa,
                   int nsamples, int nvalidate, tune_transfer_report *r,
                   tune_progress_fn progress, void *arg);

/* A distinct plan of a shape, its predicted and (once tuned) measured time. */
typedef struct tune_candidate {
    plan_choice choice;   /* resolved: every knob set */
    double predicted, measured;
} tune_candidate;

/* The distinct plans of plan_variants, cheapest predicted first. */
int tune_rank(const plan_model *m, const gemm_shape *s, int threads, tune_candidate *out,
              int max);

/* Measures the `top` cheapest predicted plans of a shape (alternating,
 * three times each, keeping each plan's fastest) and returns how many;
 * out[] is in predicted order with `measured` filled in. */
int tune_shape(tune_bench *b, const plan_model *m, const gemm_shape *s, int top,
               tune_candidate *out, int max);

#endif /* TESSEL_TUNE_H */
