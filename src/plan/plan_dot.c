/*
 * plan_dot.c - the dot-product form: a few rows of A times B^T (or op(B)
 * narrower than a vector), where tiles read both in place along k and sum
 * each output across the lanes instead of copying B^T into panels; when
 * it pays, and its plan (tile, members, split).
 */
#include "plan/candidates.h"
#include "plan/plan_rules.h"

/* Up to this many rows, op(B) = B^T is read in place by dot-product tiles
 * rather than packed, where A and B^T outgrow half the L2 (below,
 * dot_beats_panels weighs the two): the copy of B would cost more than
 * the product. But each output's lane sum costs shuffles and adds
 * whatever K is, against K / vec FMAs, while the copy of B is shared by
 * the M rows: the dot tiles pay only while M vec <= K. Ratio to oneDNN,
 * dot tiles / B^T packed, one matrix, 1 thread: 16x768x768 1.11 / 0.87,
 * 16x4096x4096 0.99 / 0.57 (measured with an older, slower lane sum). */
static const int64_t DOT_MAX_M = 16;

/* Where A and B^T sit in the L2, the two forms' costs in vec-wide FMAs an
 * output of C. Dot tiles: K / vec FMAs and the lane sum's folds, about
 * DOT_FOLD_FMAS. Panels: K / vec FMAs over the panel's padded width
 * (17 columns take two vectors) plus the copy of B^T, K floats a column
 * shared by the M rows at PACK_FMAS_PER_FLOAT each. Fitted (least
 * squares on the log of the ratio) on 12 matrices, 1 thread, AVX-512 on
 * the AMD EPYC of 2026-12-05, dot / panel time measured (predicted):
 * 32x32x64 1.35 (1.34), 8x64x64 0.88 (0.88), 12x64x64 1.07 (1.04),
 * 16x64x64 1.12 (1.14), 17x64x64 1.21 (1.16), 17x17x64 0.72 (0.71),
 * 24x24x64 0.95 (1.00), 43x43x64 1.31 (1.27), 32x32x128 1.03 (1.08),
 * 17x17x128 0.57 (0.58). */
static const double DOT_FOLD_FMAS = 2.46, PACK_FMAS_PER_FLOAT = 0.415;

/* Whether dot tiles cost less than B^T packed into panels, by the fitted
 * costs above (DOT_FOLD_FMAS, PACK_FMAS_PER_FLOAT) where A and B^T sit in
 * half the L2, else by the rule measured on larger operands (DOT_MAX_M,
 * M vec <= K). */
static bool dot_beats_panels(const plan_model *m, const gemm_shape *s)
{
    if ((double)(s->M + s->N) * (double)s->K * sizeof(float) > (double)m->l2_bytes / 2)
        return s->M <= DOT_MAX_M && s->M * m->vec <= s->K;
    double steps = (double)s->K / m->vec;
    double padded = (double)((s->N + m->vec - 1) / m->vec * m->vec) / (double)s->N;
    double copy = PACK_FMAS_PER_FLOAT * (double)s->K / (double)s->M;
    return steps + DOT_FOLD_FMAS < steps * padded + copy;
}

/* Few rows times B^T: the dot-product tiles read both in place. So does
 * op(B) narrower than a vector at any M (a matrix times a few vectors),
 * where a panel would fill most of its lanes with zeros (128x1x768 took
 * 33 us that way, against 4.6 for oneDNN): B^T read in place, or B
 * transposed first (ops/gemm.c) where it fills at most half the lanes.
 * The copy costs about what 32 rows of A do against it, so a panel that
 * wastes little is kept: 32x15x3072 took 50 us by dot tiles, 45 by one. */
bool plan_takes_dot_form(const plan_model *m, const gemm_shape *s)
{
    if (s->transa || s->prepacked_kc > 0 || s->K < m->vec || s->N <= 0)
        return false;
    if (s->transb)
        return s->N < m->vec || dot_beats_panels(m, s);
    return 2 * s->N <= m->vec;
}

/* Fewer rows than the model's dot tile: the best member of that height,
 * by the model's own comparison (more FMAs per load), which for 3 rows is
 * 3x7, not the 3x5 remainder of a 4x5 tile. Llama-7B decoding against
 * oneDNN, 1 thread (bench/compare `compare-few-rows-dot.md`): 3 rows
 * 0.76-0.81 -> 0.90-0.93, 2 rows 0.88-0.96 -> 0.98-1.00. */
static void few_rows_dot_tile(const plan_model *m, int rows, gemm_plan *p)
{
    int best = 0;
    for (int nj = 1; nj <= UK_DOT_MAX_NJ; nj++) {
        if (!ukernel_dot_lookup(m->hw.isa, rows, nj))
            continue;
        tile_verdict v = model_dot_verdict(m, rows, nj);
        if (v.failed == TILE_RULE_PASSES &&
            (best == 0 || model_compare_dot_tiles(v.latency_waived, rows, nj, rows, best) < 0))
            best = nj;
    }
    if (best > 0) {
        p->dot_mr = rows;
        p->dot_nj = best;
    }
}

/* One row of A times B^T (a query token against a key cache, as in
 * decoding) reads B^T faster than any cache past the L1 delivers it: a k
 * step loads nj vectors of B^T for nj FMAs. Where B^T's rows start off
 * a cache line (malloc's 16 bytes past one; checked per call, ops/gemm.c)
 * each row spans a line more than its vectors, and the tiles, a few
 * hundred bytes of each row, outran the hardware prefetchers; so each
 * tile also asks for the rows of the tile DOT_AHEAD_TILES on, which
 * follow its own. Only where B^T is over half the L1 (held there, nothing
 * is gained: 12 x (5x5x64) took 1.02x the time) and the lines asked for
 * are used soon, within DOT_AHEAD_MAX_L1_PART of the L1 read between (at
 * K = 4096, 256 KiB ahead, they were evicted first: 1 x 4096 x 4096 and
 * 1 x 11008 x 4096 took 1.09-1.32x the time). AMD EPYC family 25 (Zen
 * 4), B^T 16 bytes off a line, time with / without in one process,
 * batches alternating, 1 / 2 threads: 12 x (1 x L x 64), L = 128, 512,
 * 2048, 0.93-0.94 / 0.93, 0.83 / 0.89, 0.84-0.85 / 0.86; 32 x
 * (1x512x128) 0.79 / 0.75-0.81; in separate processes alternating,
 * medians of seven, 1 thread: 0.79 (L 512), 1.03 (L 2048), 0.83
 * (32 x (1x512x128)). Against oneDNN (bench/compare, six rounds,
 * `bench/results/2026-12-07-compare-dot-ahead-offset16.md`), the
 * decode-qk64 and -qk128 families of `bench/shapes/attn-decode.txt`:
 * tessel / oneDNN 1.17x and 1.22x at 1 thread, 1.12x at 2. On rows
 * aligned to lines it went either way (in one process 0.96-1.01 at K =
 * 64, 0.91-0.94 at 128; against oneDNN, separate processes, 0.94 / 0.84
 * and 1.02 / 1.01), so there it is left out: `-compare-dot-ahead-
 * aligned.md`, the same path as before, reads 1.03 / 1.01 and 0.97 / 0.91
 * (and the untouched P V 1.00-1.14: the host's noise). More rows
 * read B^T at a pace the prefetchers keep up with: 2-8 rows at K 64 took
 * 0.99-1.02x (12 x (2x128x64) 1.04-1.06x), and only at K 128 did 2 and 4
 * rows gain (0.85-0.93): not taken. */
static const int DOT_AHEAD_TILES = 2;
static const int DOT_AHEAD_MAX_L1_PART = 4;

static bool dot_prefetches_ahead(const plan_model *m, const gemm_shape *s, const gemm_plan *p)
{
    int64_t l1 = model_l1(m).size_bytes;
    int64_t b_bytes = s->N * s->K * (int64_t)sizeof(float);
    int64_t between = DOT_AHEAD_TILES * (int64_t)p->dot_nj * s->K * (int64_t)sizeof(float);
    return s->M == 1 && s->transb && l1 > 0 && b_bytes > l1 / 2 &&
           between <= l1 / DOT_AHEAD_MAX_L1_PART;
}

/* Dot-product plans: column tiles split evenly over the threads, or row
 * tiles where there are fewer column tiles than threads (a matrix times
 * a vector: 1000x1x1000 ran on one of two threads). */
void plan_dot_form(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p)
{
    p->dot = true;
    p->dot_mr = m->dot_mr;
    p->dot_nj = m->dot_nj;
    if (s->M < m->dot_mr)
        few_rows_dot_tile(m, (int)s->M, p);
    p->kc = s->K;
    p->npanels = (s->N + p->dot_nj - 1) / p->dot_nj;
    int64_t row_tiles = (s->M + p->dot_mr - 1) / p->dot_mr;
    int rows[2] = {p->dot_mr, (int)(s->M - (row_tiles - 1) * p->dot_mr)};
    int cols[2] = {p->dot_nj, (int)(s->N - (p->npanels - 1) * p->dot_nj)};
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++)
            p->dot_fn[r][c] = ukernel_dot_lookup(m->hw.isa, rows[r], cols[c]);
    p->split = p->npanels < threads && row_tiles > p->npanels ? 'M' : 'N';
    int64_t units = p->split == 'M' ? row_tiles : p->npanels;
    p->threads = threads < units ? threads : (int)units;
    for (int t = 0; t <= p->threads; t++)
        p->bounds[t] = units * t / p->threads;
    if (dot_prefetches_ahead(m, s, p))
        p->b_prefetch = DOT_AHEAD_TILES * p->dot_nj;
    plan_set_choice(p, p->kc, 0, PLAN_B_RULES, p->split);
    /* A k step loads mr + nj vectors along k for mr * nj FMAs, then the
     * accumulators are summed across lanes: about one more step. */
    double steps = (double)s->K / p->vec + 1.0;
    double tiles = (double)((s->M + p->dot_mr - 1) / p->dot_mr) * p->npanels;
    double step_cycles = model_tile_cycles(p->dot_mr, p->dot_nj, m->hw.fma_latency_cycles,
                                           m->hw.fma_per_cycle, 2.0, 0.0);
    p->fma_cycles = tiles * steps * step_cycles / p->threads;
    p->calls = tiles / p->threads;
    double f[COST_NFEATURES];
    plan_cost_features(m, s, p, f);
    p->predicted_seconds = cost_predict(&m->cost, f);
}
