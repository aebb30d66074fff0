/*
 * plan_gemm.c - plans one GEMM shape: the tessellation of M by row tiles of
 * several heights (bulk tiles of the main height, then the DP's cheapest
 * cover of the remainder: no padding), the column panels of N (the last
 * one masked), kc/mc/nc, what to pack, and the split across threads that
 * balances predicted time.
 */
#include <string.h>

#include "plan/plan.h"

/* At most this many row tiles' worth of rows is "small M": A and B are
 * used so few times that packing them costs more than it saves. */
static const int SMALL_M_TILES = 2;
/* Up to this many rows, op(B) = B^T is read in place by dot-product tiles
 * rather than packed: the copy of B would cost more than the product. */
static const int64_t DOT_MAX_M = 16;
/* How far ahead the ukernel prefetches B. Packed panels stream from L2
 * and are asked for about a kilobyte ahead (measured on 2048^3: +10%
 * over none, flat from 1 to 1.5 KB). B read in place has rows kilobytes
 * apart that no hardware prefetcher follows, and a miss to L3 costs a
 * hundred cycles or more where a small tile's k step takes a few. */
static const int PACKED_PREFETCH_BYTES = 1024;
static const int IN_PLACE_PREFETCH_ROWS = 16;
/* The extra time of reading B in place over packed panels (measured). */
static const double IN_PLACE_PENALTY = 0.07;

static void add_run(gemm_plan *p, int mr, int64_t count)
{
    if (count <= 0)
        return;
    if (p->nruns > 0 && p->runs[p->nruns - 1].mr == mr) {
        p->runs[p->nruns - 1].count += count;
    } else {
        p->runs[p->nruns++] = (plan_run){.mr = mr, .count = count};
    }
    p->ntiles += count;
}

/* Rows of tiles nv vectors wide: bulk tiles of the model's height, then
 * the DP's cheapest cover of the last rows. */
static void tessellate_rows(const plan_model *m, int nv, int64_t M, gemm_plan *p)
{
    int64_t rest = M;
    int bulk_mr = m->bulk_mr[nv];
    if (M > PLAN_DP_LEN) {
        int64_t bulk = (M - PLAN_DP_LEN + bulk_mr - 1) / bulk_mr;
        add_run(p, bulk_mr, bulk);
        rest = M - bulk * bulk_mr;
    }
    while (rest > 0) {
        int h = m->dp_first[nv][rest];
        add_run(p, h, 1);
        rest -= h;
    }
}

void plan_tile_rows(const gemm_plan *p, int64_t tile, int64_t *row, int *mr)
{
    int64_t r = 0;
    for (int i = 0; i < p->nruns; i++) {
        if (tile < p->runs[i].count) {
            *row = r + tile * p->runs[i].mr;
            *mr = p->runs[i].mr;
            return;
        }
        tile -= p->runs[i].count;
        r += p->runs[i].count * p->runs[i].mr;
    }
    *row = r;
    *mr = 0;
}

/* Cycles per k step of one row tile across `panels` column panels, the
 * last of which is `tail_nv` vectors wide. */
static double row_tile_cycles(const plan_model *m, int mr, int64_t panels, int tail_nv)
{
    double full = m->tile_cycles[m->nv][mr];
    double tail = m->tile_cycles[tail_nv][mr];
    return (double)(panels - 1) * full + tail;
}

/* Splits `units` items of costs unit_cost(i) into `threads` contiguous
 * ranges of near-equal cost; returns the largest range's cost. */
static double balance(int64_t units, int threads, const double *prefix, int64_t *bounds)
{
    double total = prefix[units];
    bounds[0] = 0;
    int64_t at = 0;
    for (int t = 1; t < threads; t++) {
        double target = total * t / threads;
        while (at < units && prefix[at + 1] <= target)
            at++;
        /* Round to whichever boundary is nearer the target. */
        if (at < units && prefix[at + 1] - target < target - prefix[at])
            at++;
        bounds[t] = at;
    }
    bounds[threads] = units;
    double worst = 0.0;
    for (int t = 0; t < threads; t++) {
        double cost = prefix[bounds[t + 1]] - prefix[bounds[t]];
        if (cost > worst)
            worst = cost;
    }
    return worst;
}

/* Prefix sums of unit costs for the two ways of splitting. Row tiles: each
 * costs its height's cycles across all panels. Column panels: each costs
 * the sum over row tiles; all equal but the masked last one. The arrays are
 * on the stack up to a size and the split is evenly-by-count past it,
 * which is what balancing gives there anyway. */
enum { SPLIT_EXACT_UNITS = 4096 };

static double split_rows(const plan_model *m, const gemm_plan *p, int threads, int tail_nv,
                         int64_t *bounds)
{
    double prefix[SPLIT_EXACT_UNITS + 1];
    int64_t units = p->ntiles;
    if (units > SPLIT_EXACT_UNITS) {
        for (int t = 0; t <= threads; t++)
            bounds[t] = units * t / threads;
        return row_tile_cycles(m, m->mr, p->npanels, tail_nv) * (double)units / threads;
    }
    prefix[0] = 0.0;
    for (int64_t i = 0; i < units; i++) {
        int64_t row;
        int mr;
        plan_tile_rows(p, i, &row, &mr);
        prefix[i + 1] = prefix[i] + row_tile_cycles(m, mr, p->npanels, tail_nv);
    }
    return balance(units, threads, prefix, bounds);
}

static double split_cols(const plan_model *m, const gemm_plan *p, int threads, int tail_nv,
                         int64_t *bounds)
{
    double prefix[SPLIT_EXACT_UNITS + 1];
    double full = 0.0, tail = 0.0;
    for (int i = 0; i < p->nruns; i++) {
        full += (double)p->runs[i].count * m->tile_cycles[m->nv][p->runs[i].mr];
        tail += (double)p->runs[i].count * m->tile_cycles[tail_nv][p->runs[i].mr];
    }
    int64_t units = p->npanels;
    if (units > SPLIT_EXACT_UNITS) {
        for (int t = 0; t <= threads; t++)
            bounds[t] = units * t / threads;
        return full * (double)units / threads;
    }
    prefix[0] = 0.0;
    for (int64_t i = 0; i < units; i++)
        prefix[i + 1] = prefix[i] + (i == units - 1 ? tail : full);
    return balance(units, threads, prefix, bounds);
}

int64_t plan_kc(const plan_model *m, int64_t K)
{
    if (K <= 0)
        return 1;
    int64_t kblocks = (K + m->kc - 1) / m->kc;
    return (K + kblocks - 1) / kblocks;
}

/* Dot-product plans: column tiles split evenly over the threads. */
static void plan_dot(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p)
{
    p->dot = true;
    p->dot_mr = m->dot_mr;
    p->dot_nj = m->dot_nj;
    p->kc = s->K;
    p->npanels = (s->N + p->dot_nj - 1) / p->dot_nj;
    p->split = 'N';
    p->threads = threads < p->npanels ? threads : (int)p->npanels;
    for (int t = 0; t <= p->threads; t++)
        p->bounds[t] = p->npanels * t / p->threads;
    double steps = (double)s->K / p->vec + 1.0;
    double tiles = (double)((s->M + p->dot_mr - 1) / p->dot_mr) * p->npanels;
    double step_cycles = model_tile_cycles(p->dot_mr, p->dot_nj, m->hw.fma_latency_cycles,
                                           m->hw.fma_per_cycle, 2.0);
    p->predicted_seconds = tiles * steps * step_cycles / p->threads / m->cycles_per_second;
}

void plan_gemm(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p)
{
    memset(p, 0, sizeof *p);
    p->isa = m->hw.isa;
    p->vec = m->vec;
    p->nv = m->nv;
    p->nr = m->nr;
    if (threads < 1)
        threads = 1;
    if (threads > PLAN_MAX_THREADS)
        threads = PLAN_MAX_THREADS;

    p->npanels = (s->N + p->nr - 1) / p->nr;
    int64_t tail_cols = s->N - (p->npanels - 1) * p->nr;
    int tail_nv = (int)((tail_cols + p->vec - 1) / p->vec);
    /* A single narrow panel is tessellated for its own width. */
    tessellate_rows(m, p->npanels == 1 ? tail_nv : m->nv, s->M, p);
    /* Few rows times B^T: the dot-product tiles read both in place. */
    if (s->transb && !s->transa && s->prepacked_kc == 0 && s->M <= DOT_MAX_M &&
        s->K >= p->vec && s->N > 0) {
        plan_dot(m, s, threads, p);
        return;
    }
    if (p->ntiles == 0 || p->npanels == 0 || s->K == 0) {
        p->threads = 1;
        p->split = 'M';
        p->bounds[1] = p->ntiles;
        return;
    }

    bool small_m = s->M <= SMALL_M_TILES * m->mr;
    /* The A micro-panel stays in L1 across the row of B panels, so rows
     * of A read in place cost nothing more; only op(A) = A^T, whose kc
     * rows of mr floats lie a leading dimension apart (a page each), is
     * worth packing. */
    p->pack_a = s->transa && !small_m;
    p->kc = s->prepacked_kc > 0 ? s->prepacked_kc : plan_kc(m, s->K);
    p->mc = m->mc;
    p->nc = m->nc;
    /* B with contiguous rows (op(B) = B) is read in place, its kc x nc
     * block capped to half the L2 since its rows lie far apart, unless
     * copying it is cheap next to the product: the copy moves 8 bytes per
     * element of B, the product does 2 M flops per element, so its share
     * of the time is 4 peak / (M * pack bandwidth). Reading in place cost
     * about 7% against packed panels where both were measured (1296x3072x768:
     * 142 against 153 GF/s), while copying cost 25% at M = 128
     * (128x3072x768: 89-131 packed, 112-146 in place). Packed weights are
     * already in panels. */
    double peak_flops = m->cycles_per_second * m->hw.fma_per_cycle * 2.0 * m->vec;
    double copy_share = 4.0 * peak_flops / ((double)s->M * m->pack_bytes_per_second);
    bool b_in_place = !s->transb && (small_m || copy_share > IN_PLACE_PENALTY);
    p->pack_b = s->prepacked_kc > 0 || !b_in_place;
    if (!p->pack_b) {
        int64_t half_l2_cols = m->l2_bytes / 2 / (p->kc * (int64_t)sizeof(float));
        half_l2_cols -= half_l2_cols % p->nr;
        if (half_l2_cols >= p->nr && half_l2_cols < p->nc)
            p->nc = half_l2_cols;
    }
    p->b_prefetch = p->pack_b ? PACKED_PREFETCH_BYTES / (p->nr * (int)sizeof(float)) + 1
                              : IN_PLACE_PREFETCH_ROWS;

    /* Threads: try both splits, keep the one predicted to end first. A
     * split along M packs all of B in every thread; along N, all of A. */
    int t_m = threads < p->ntiles ? threads : (int)p->ntiles;
    int t_n = threads < p->npanels ? threads : (int)p->npanels;
    int64_t bounds_m[PLAN_MAX_THREADS + 1], bounds_n[PLAN_MAX_THREADS + 1];
    double bytes_a = p->pack_a ? (double)s->M * s->K * 8 : 0.0; /* read + write */
    double bytes_b = p->pack_b && !s->prepacked_kc ? (double)s->K * s->N * 8 : 0.0;
    double per_pack_byte = m->cycles_per_second / m->pack_bytes_per_second;
    double cost_m = split_rows(m, p, t_m, tail_nv, bounds_m) * (double)s->K +
                    (bytes_b + bytes_a / t_m) * per_pack_byte;
    double cost_n = split_cols(m, p, t_n, tail_nv, bounds_n) * (double)s->K +
                    (bytes_a + bytes_b / t_n) * per_pack_byte;
    if (cost_m <= cost_n) {
        p->split = 'M';
        p->threads = t_m;
        memcpy(p->bounds, bounds_m, sizeof(int64_t) * (size_t)(t_m + 1));
    } else {
        p->split = 'N';
        p->threads = t_n;
        memcpy(p->bounds, bounds_n, sizeof(int64_t) * (size_t)(t_n + 1));
    }
    double cycles = cost_m <= cost_n ? cost_m : cost_n;
    p->predicted_seconds = cycles / m->cycles_per_second;
}
