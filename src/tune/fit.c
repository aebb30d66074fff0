/*
 * fit.c - fitting the cost model's weights to measured plans, and the two
 * figures that judge a fit: mean absolute percentage error and Kendall's
 * rank correlation. The fit minimises the mean absolute relative error
 * (a 10 us plan matters as much as a 10 ms one, and one measurement
 * spoiled by a neighbour's burst must not drag every weight), as least
 * squares reweighted by the inverse of each residual; weights are kept
 * >= 0 (a resource cannot give time back), and for transfer pulled
 * towards the weights of the machine it starts from, so a few samples
 * correct rather than replace them. Ten weights: coordinate descent on the
 * normal equations converges in a few hundred sweeps, under a millisecond.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/tune.h"

enum { SWEEPS = 2000 };

/* Relative residuals below this are not weighted up further. */
static const double RESIDUAL_FLOOR = 0.01;
enum { REWEIGHTINGS = 8 };

/* Weighted least squares: sample k weighs u[k] / seconds^2. */
static void solve(const tune_sample *s, int n, const double *u, const double *prior,
                  double lambda, double overlap, double *coef)
{
    enum { F = COST_NFEATURES };
    double h[F][F], g[F];
    memset(h, 0, sizeof h);
    memset(g, 0, sizeof g);
    for (int k = 0; k < n; k++) {
        if (!(s[k].seconds > 0.0))
            continue;
        double w = u[k] / (s[k].seconds * s[k].seconds), x[F];
        cost_effective(s[k].features, overlap, x);
        for (int i = 0; i < F; i++) {
            g[i] += w * x[i] * s[k].seconds;
            for (int j = 0; j < F; j++)
                h[i][j] += w * x[i] * x[j];
        }
    }
    /* The pull towards the prior is scaled per weight by how much the data
     * says about it, so lambda is the prior's weight as a fraction of all
     * the samples' (4 / n: the prior counts as four samples), whatever the
     * units. */
    double pull[F];
    for (int i = 0; i < F; i++) {
        coef[i] = prior[i];
        pull[i] = lambda * h[i][i];
    }
    for (int sweep = 0; sweep < SWEEPS; sweep++) {
        double moved = 0.0;
        for (int i = 0; i < F; i++) {
            double denom = h[i][i] + pull[i];
            if (denom <= 0.0)
                continue; /* the feature never appeared: keep the prior */
            double rest = g[i] + pull[i] * prior[i];
            for (int j = 0; j < F; j++)
                if (j != i)
                    rest -= h[i][j] * coef[j];
            double next = rest / denom;
            if (next < 0.0)
                next = 0.0;
            moved += fabs(next - coef[i]) * sqrt(h[i][i]);
            coef[i] = next;
        }
        if (moved < 1e-12)
            break;
    }
}

void tune_fit(const tune_sample *s, int n, const double *prior, double lambda, double overlap,
              double *coef)
{
    double *u = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!u) {
        memcpy(coef, prior, sizeof(double) * COST_NFEATURES);
        return;
    }
    for (int k = 0; k < n; k++)
        u[k] = 1.0;
    for (int round = 0; round < REWEIGHTINGS; round++) {
        solve(s, n, u, prior, lambda, overlap, coef);
        for (int k = 0; k < n; k++) {
            if (!(s[k].seconds > 0.0))
                continue;
            double x[COST_NFEATURES], p = 0.0;
            cost_effective(s[k].features, overlap, x);
            for (int i = 0; i < COST_NFEATURES; i++)
                p += coef[i] * x[i];
            u[k] = 1.0 / fmax(fabs(p - s[k].seconds) / s[k].seconds, RESIDUAL_FLOOR);
        }
    }
    free(u);
}

double tune_kendall_tau(const double *a, const double *b, int n)
{
    double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            double da = a[i] - a[j], db = b[i] - b[j];
            if (da == 0.0 && db == 0.0)
                continue;
            if (da == 0.0)
                ties_a++;
            else if (db == 0.0)
                ties_b++;
            else if ((da > 0) == (db > 0))
                concordant++;
            else
                discordant++;
        }
    double denom = sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
    return denom > 0 ? (concordant - discordant) / denom : 0.0;
}

double tune_fit_overlap(const tune_sample *s, int n, const double *prior, double *coef)
{
    /* The overlap enters through a max, so it is searched, not solved:
     * each candidate gets its least-squares weights, the best fit wins. */
    static const double OVERLAPS[] = {0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0};
    double best = INFINITY, best_overlap = 0.0;
    double trial[COST_NFEATURES];
    for (size_t i = 0; i < sizeof OVERLAPS / sizeof OVERLAPS[0]; i++) {
        tune_fit(s, n, prior, 0.0, OVERLAPS[i], trial);
        double mape, tau;
        tune_errors(s, n, trial, OVERLAPS[i], &mape, &tau);
        if (mape < best) {
            best = mape;
            best_overlap = OVERLAPS[i];
            memcpy(coef, trial, sizeof trial);
        }
    }
    return best_overlap;
}

void tune_errors(const tune_sample *s, int n, const double *coef, double overlap, double *mape,
                 double *tau)
{
    double *predicted = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double *measured = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    double sum = 0.0;
    int used = 0;
    for (int k = 0; k < n; k++) {
        if (!(s[k].seconds > 0.0))
            continue;
        double p = 0.0, x[COST_NFEATURES];
        cost_effective(s[k].features, overlap, x);
        for (int i = 0; i < COST_NFEATURES; i++)
            p += coef[i] * x[i];
        sum += fabs(p - s[k].seconds) / s[k].seconds;
        if (predicted && measured) {
            predicted[used] = p;
            measured[used] = s[k].seconds;
        }
        used++;
    }
    *mape = used ? sum / used : 0.0;
    *tau = predicted && measured ? tune_kendall_tau(predicted, measured, used) : 0.0;
    free(predicted);
    free(measured);
}
