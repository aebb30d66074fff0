/*
 * cost.c - the cost model of DESIGN ("Cost model"): the features of a
 * plan, their weighted sum, the analytic default weights, and the text form
 * a calibration is stored in. Every feature is a time in seconds on the
 * busiest thread, so a weight near 1 means "this resource is spent
 * serially", near 0 "it overlaps with the rest", and weights fitted on one
 * machine stay meaningful on another whose features come from its own
 * profile.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

/* Bytes per cycle one core reads from each level where the profile has no
 * measurement (the quick probe contexts use measures only the L3's): the
 * order of what current x86 and arm64 cores sustain. */
static const double DEFAULT_BYTES_PER_CYCLE[HW_LEVEL_COUNT] = {64.0, 32.0, 12.0, 4.0};
static const double DEFAULT_GHZ = 3.0;
/* Fixed cycles per ukernel call beyond its k loop; the same figure the
 * tessellation DP charges (model.c). */
static const double CALL_CYCLES = 30.0;

static const char *const FEATURE_NAMES[COST_NFEATURES] = {
    "fma", "calls", "b_stream", "a_stream", "pack", "c", "b_in_place", "memory", "threads",
    "fixed"};

/* Before calibration: the k loops and the copies are spent serially,
 * streams overlap with the k loops, waking a thread costs a few
 * microseconds under a hypervisor (DESIGN, "Runtime"). */
static const double DEFAULT_COEF[COST_NFEATURES] = {1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 5.0,
                                                     0.3};

const char *cost_feature_name(int f)
{
    return f >= 0 && f < COST_NFEATURES ? FEATURE_NAMES[f] : "?";
}

void cost_model_default(cost_model *cm, const hw_profile *hw)
{
    memset(cm, 0, sizeof *cm);
    cm->ghz = hw->freq_ghz > 0 ? hw->freq_ghz : DEFAULT_GHZ;
    for (int l = 0; l < HW_LEVEL_COUNT; l++)
        cm->gbs[l] = hw->read_gbs[l] > 0 ? hw->read_gbs[l] : DEFAULT_BYTES_PER_CYCLE[l] * cm->ghz;
    /* A copy reads and writes each byte: half the L2 read rate. */
    cm->pack_gbs = cm->gbs[HW_LEVEL_L2] / 2;
    cm->fma_latency = hw->fma_latency_cycles > 0 ? hw->fma_latency_cycles : 0;
    cm->fma_per_cycle = hw->fma_per_cycle > 0 ? hw->fma_per_cycle : 0;
    cm->broadcast_cycles = hw->broadcast_cycles > 0 ? hw->broadcast_cycles : 0;
    memcpy(cm->coef, DEFAULT_COEF, sizeof cm->coef);
    for (int a = 0; a < 2; a++)
        for (int nv = 0; nv <= UK_MAX_NV; nv++)
            for (int mr = 0; mr <= UK_MAX_MR; mr++)
                cm->tile_scale[a][nv][mr] = 1.0f;
}

void cost_effective(const double *f, double overlap, double *g)
{
    memcpy(g, f, sizeof(double) * COST_NFEATURES);
    if (overlap * f[COST_MEMORY] > f[COST_FMA])
        g[COST_FMA] = overlap * f[COST_MEMORY];
}

double cost_predict(const cost_model *cm, const double *f)
{
    double g[COST_NFEATURES], t = 0.0;
    cost_effective(f, cm->overlap, g);
    for (int i = 0; i < COST_NFEATURES; i++)
        t += cm->coef[i] * g[i];
    return t;
}

/* Bandwidth (bytes/s) of the level a block of `bytes` lives in: L2 if it
 * fits one core's L2, L3 if it fits the L3, else DRAM. */
static double bandwidth_for(const cost_model *cm, const hw_profile *hw, double bytes)
{
    const hw_cache *l2 = hw_data_cache(hw, 2);
    const hw_cache *l3 = hw_data_cache(hw, 3);
    if (l2 && bytes <= (double)l2->size_bytes)
        return cm->gbs[HW_LEVEL_L2] * 1e9;
    if (l3 && bytes <= (double)l3->size_bytes)
        return cm->gbs[HW_LEVEL_L3] * 1e9;
    return cm->gbs[HW_LEVEL_DRAM] * 1e9;
}

/* What a repeated call of the plan reads from beyond the L2 of each core:
 * nothing if every thread's share of A, B and C fits in three quarters of
 * its L2 (calls in a loop, as inference makes them, find them there);
 * else all three once, and B once more per pass over it where a thread's
 * share of B does not fit (dot-product plans sweep B^T once per group of
 * rows). Those levels are shared, so the bytes are not divided by the
 * threads. */
static double memory_seconds(const plan_model *m, const gemm_shape *s, const gemm_plan *p)
{
    const cost_model *cm = &m->cost;
    const hw_cache *l2 = hw_data_cache(&m->hw, 2);
    double l2_bytes = l2 ? (double)l2->size_bytes : 1 << 20;
    double threads = p->threads > 0 ? p->threads : 1;
    double a = (double)s->M * s->K * 4, b = (double)s->K * s->N * 4, c = (double)s->M * s->N * 4;
    /* A split along K gives each thread its columns of A and rows of B. */
    double a_share = p->split == 'M' || p->split == 'K' ? a / threads : a;
    double b_share = p->split == 'N' || p->split == 'K' ? b / threads : b;
    if (a_share + b_share + c / threads <= 0.75 * l2_bytes)
        return 0.0;
    double passes = 1.0;
    if (p->dot && b_share > 0.5 * l2_bytes)
        passes = ceil((double)s->M / p->dot_mr);
    double bytes = a + c + b * passes;
    return bytes / bandwidth_for(cm, &m->hw, a + b + c);
}

void plan_cost_features(const plan_model *m, const gemm_shape *s, const gemm_plan *p,
                        double *f)
{
    const cost_model *cm = &m->cost;
    memset(f, 0, sizeof(double) * COST_NFEATURES);
    f[COST_FIXED] = 1e-6;
    if (s->M == 0 || s->N == 0 || s->K == 0)
        return;
    double cps = cm->ghz * 1e9;
    double threads = p->threads > 0 ? p->threads : 1;
    double M = (double)s->M, N = (double)s->N, K = (double)s->K;
    double l2 = cm->gbs[HW_LEVEL_L2] * 1e9;

    f[COST_FMA] = p->fma_cycles / cps;
    f[COST_CALLS] = p->calls * CALL_CYCLES / cps;
    f[COST_THREADS] = (threads - 1) * 1e-6;
    f[COST_MEMORY] = memory_seconds(m, s, p);
    /* Every row tile streams all of op(B)'s columns past its A panel. */
    double row_tiles = p->dot ? ceil(M / p->dot_mr) : (double)p->ntiles;
    double b_bytes = row_tiles * K * N * 4 / threads;
    f[COST_B_STREAM] = b_bytes / l2;
    f[COST_C] = M * N * 8 * ceil(K / (double)(p->kc > 0 ? p->kc : s->K)) / threads / l2;
    if (p->dot || p->row) {
        f[COST_A_STREAM] = M * K * 4 / (p->split == 'N' ? 1 : threads) / l2;
        return;
    }
    /* Each thread streams its rows of A once per column block: all of A
     * in a split along N, its share in a split along M. */
    double column_blocks = ceil(N / (double)p->nc);
    if (p->split == 'N')
        f[COST_A_STREAM] = M * K * 4 * ceil(N / threads / (double)p->nc) / l2;
    else
        f[COST_A_STREAM] = M * K * 4 * column_blocks / threads / l2;
    if (!p->pack_b)
        f[COST_B_IN_PLACE] = b_bytes / l2;
    /* Copies read and write every element. The threads of a split along M
     * pack one shared B between them, or each its own (b_per_thread); a
     * split along N packs all of A in every thread. A is packed tile by
     * tile once per column block. */
    double copy_b = p->pack_b && !s->prepacked_kc ? K * N * 8 : 0.0;
    double copy_a = p->pack_a ? M * K * 8 * column_blocks : 0.0;
    double copied = p->split == 'N'     ? copy_a + copy_b / threads
                    : p->b_per_thread ? copy_b + copy_a / threads
                                      : (copy_b + copy_a) / threads;
    f[COST_PACK] = copied / (cm->pack_gbs * 1e9);
}

double plan_batch_seconds(const plan_model *m, const gemm_shape *s, const gemm_plan *p,
                          int64_t rounds, int tasks)
{
    double f[COST_NFEATURES];
    plan_cost_features(m, s, p, f);
    const double *coef = m->cost.coef;
    double fixed = coef[COST_FIXED] * f[COST_FIXED];
    double plan_wake = coef[COST_THREADS] * f[COST_THREADS];
    /* a microsecond a thread woken, as the feature counts p's */
    double wake = coef[COST_THREADS] * (tasks > 1 ? tasks - 1 : 0) * 1e-6;
    return (double)rounds * (p->predicted_seconds - fixed - plan_wake) + fixed + wake;
}

/* ---- the stored text ---- */

/* Appends to buf at *at; false once the text no longer fits. */
static bool append(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(buf + *at, len - *at, fmt, args);
    va_end(args);
    if (n < 0 || (size_t)n >= len - *at)
        return false;
    *at += (size_t)n;
    return true;
}

int cost_model_format(const cost_model *cm, char *buf, size_t len)
{
    size_t at = 0;
    bool ok = len > 0 && append(buf, len, &at, "tessel-cost 1\nghz %.6g\ngbs", cm->ghz);
    for (int l = 0; l < HW_LEVEL_COUNT; l++)
        ok = ok && append(buf, len, &at, " %.6g", cm->gbs[l]);
    ok = ok && append(buf, len, &at, "\npack_gbs %.6g\noverlap %.6g\ncoef", cm->pack_gbs,
                      cm->overlap);
    for (int i = 0; i < COST_NFEATURES; i++)
        ok = ok && append(buf, len, &at, " %s=%.6g", FEATURE_NAMES[i], cm->coef[i]);
    ok = ok && append(buf, len, &at, "\n");
    if (cm->fma_latency > 0 && cm->fma_per_cycle > 0)
        ok = ok && append(buf, len, &at, "fma %.6g %.6g %.6g\n", cm->fma_latency,
                          cm->fma_per_cycle, cm->broadcast_cycles >= 0 ? cm->broadcast_cycles : 0);
    for (int a = 0; a < 2; a++)
        for (int nv = 1; nv <= UK_MAX_NV; nv++)
            for (int mr = 1; mr <= UK_MAX_MR; mr++)
                if (cm->tile_scale[a][nv][mr] != 1.0f)
                    ok = ok && append(buf, len, &at, "tile %s %d %d %.5g\n",
                                      a == COST_A_PACKED ? "packed" : "in_place", mr, nv,
                                      (double)cm->tile_scale[a][nv][mr]);
    return ok ? 0 : -1;
}

static bool positive_finite(double x)
{
    return isfinite(x) && x > 0.0;
}

/* Whether only blanks remain: a number followed by anything else is
 * damage, not a number. */
static bool only_blanks(const char *rest)
{
    while (*rest == ' ' || *rest == '\t' || *rest == '\r')
        rest++;
    return *rest == '\0';
}

/* One line of the stored text into *cm; false on anything unexpected. */
static bool parse_line(const char *line, cost_model *cm, int *seen)
{
    char word[16];
    int used = 0, end = 0;
    if (sscanf(line, "%15s%n", word, &used) != 1)
        return true; /* blank */
    const char *rest = line + used;
    if (strcmp(word, "tessel-cost") == 0)
        return strcmp(rest, " 1") == 0 && (*seen |= 1);
    if (strcmp(word, "ghz") == 0)
        return sscanf(rest, "%lf%n", &cm->ghz, &end) == 1 && only_blanks(rest + end) &&
               positive_finite(cm->ghz) && (*seen |= 2);
    if (strcmp(word, "gbs") == 0) {
        double *g = cm->gbs;
        return sscanf(rest, "%lf %lf %lf %lf%n", &g[0], &g[1], &g[2], &g[3], &end) ==
                   HW_LEVEL_COUNT && only_blanks(rest + end) &&
               positive_finite(g[0]) && positive_finite(g[1]) && positive_finite(g[2]) &&
               positive_finite(g[3]) && (*seen |= 4);
    }
    if (strcmp(word, "pack_gbs") == 0)
        return sscanf(rest, "%lf%n", &cm->pack_gbs, &end) == 1 && only_blanks(rest + end) &&
               positive_finite(cm->pack_gbs) && (*seen |= 8);
    if (strcmp(word, "overlap") == 0)
        return sscanf(rest, "%lf%n", &cm->overlap, &end) == 1 && only_blanks(rest + end) &&
               isfinite(cm->overlap) && cm->overlap >= 0.0 && (*seen |= 32);
    if (strcmp(word, "coef") == 0) {
        for (int i = 0; i < COST_NFEATURES; i++) {
            char name[24];
            double v;
            int n = 0;
            if (sscanf(rest, " %23[a-z_]=%lf%n", name, &v, &n) != 2 ||
                strcmp(name, FEATURE_NAMES[i]) != 0 || !isfinite(v) || v < 0.0)
                return false;
            cm->coef[i] = v;
            rest += n;
        }
        return only_blanks(rest) && (*seen |= 16);
    }
    if (strcmp(word, "fma") == 0) { /* optional: older models lack it, or its third figure */
        int n = sscanf(rest, "%lf %lf%n %lf%n", &cm->fma_latency, &cm->fma_per_cycle, &end,
                       &cm->broadcast_cycles, &end);
        if (n == 2)
            cm->broadcast_cycles = -1.0;
        return n >= 2 && only_blanks(rest + end) && positive_finite(cm->fma_latency) &&
               positive_finite(cm->fma_per_cycle) && isfinite(cm->broadcast_cycles) &&
               (n == 2 || cm->broadcast_cycles >= 0.0);
    }
    if (strcmp(word, "tile") == 0) {
        char layout[16];
        int mr, nv;
        double scale;
        if (sscanf(rest, "%15s %d %d %lf%n", layout, &mr, &nv, &scale, &end) != 4 ||
            !only_blanks(rest + end) || mr < 1 || mr > UK_MAX_MR || nv < 1 || nv > UK_MAX_NV ||
            !positive_finite(scale))
            return false;
        int a = strcmp(layout, "packed") == 0 ? COST_A_PACKED
                : strcmp(layout, "in_place") == 0 ? COST_A_IN_PLACE : -1;
        if (a < 0)
            return false;
        cm->tile_scale[a][nv][mr] = (float)scale;
        return true;
    }
    return false;
}

int cost_model_parse(const char *text, cost_model *out)
{
    cost_model cm;
    hw_profile none;
    memset(&none, 0, sizeof none);
    cost_model_default(&cm, &none);
    cm.broadcast_cycles = -1.0; /* not recorded, unless an fma line says */
    int seen = 0;
    const char *line = text;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[512];
        if (n >= sizeof buf)
            return -1;
        memcpy(buf, line, n);
        buf[n] = '\0';
        if (!parse_line(buf, &cm, &seen))
            return -1;
        line = end ? end + 1 : NULL;
    }
    if (seen != 63)
        return -1;
    cm.calibrated = true;
    *out = cm;
    return 0;
}
