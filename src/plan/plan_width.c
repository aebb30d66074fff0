/*
 * plan_width.c - the main tile width of a plan. The model's rules choose
 * one width for the bulk of large shapes (model.c); a few rows, B of short
 * rows or rows that crowd the L1 sets each measured faster at another,
 * and each such rule, with what it was measured on, is here.
 */
#include "plan/candidates.h"
#include "plan/plan_rules.h"

/* What both rules below ask first: op(B) rows read as they are (not
 * transposed, not pre-packed), and a built widest tile wider than the
 * model's. */
static bool widest_tile_may_read_b(const plan_model *m, const gemm_shape *s)
{
    return plan_b_rows_in_place(s) && UK_MAX_NV > m->nv && m->bulk_mr[UK_MAX_NV] > 0;
}

/* A few rows reading B in place (a few tokens through a layer) take the
 * widest tile wherever one such tile covers them (up to 6 rows here): it
 * reads each element of A once where panels of 32 read it twice, and B's
 * rows in whole pairs of lines; up to 4 rows it also doubles the chains
 * the rules' tile keeps in flight. `compare-short-tile-64-wide.md`,
 * oneDNN / tessel new over old at 1 and 2 threads: the attention output
 * (768 x 768) at 1-8 rows 1.04 / 1.25, its 1-4 row shapes 1.04-1.09 /
 * 1.13-1.23. Time 64 / 32 wide, both in place, 1 / 2 threads: 1, 3, 5 x
 * 3072 x 768 0.96, 0.89, 0.92 / 0.93, 0.79, 0.84; 3 x 1024 x 768 0.84 /
 * 0.77; 5-6 rows x 3072 x 768 0.89-0.90 / 0.88-0.90, x 1024 x 1024 0.89
 * / 0.87, x 768 x 768 0.96-0.97 / 0.90-0.97, x 2304 x 768 and 768 x
 * 3072 0.96-0.98 / 0.97-1.00. Past one tile (7-12 rows: two 64-wide
 * tiles against one 32-wide) it took 1.07-1.31x the time. (An early
 * form that took 5-6 rows lost, 0.88-0.98 on 768 x 3072, while B was
 * prefetched 16 rows ahead; the rows were then also kept to B whose rows
 * spread over the L1 sets, which 8 rows ahead (IN_PLACE_PREFETCH_LINES)
 * no longer needs.) */
static bool short_tile_goes_wide(const plan_model *m, const gemm_shape *s)
{
    return widest_tile_may_read_b(m, s) && s->M <= m->bulk_mr[UK_MAX_NV] &&
           s->N >= UK_MAX_NV * m->vec;
}

/* Rows one tile of the main width does not cover but one 16-wide tile
 * (the narrowest family, up to 16 rows) does: that one tile reads B once,
 * where the main tile and a short one after it read it twice (15-16 rows
 * as 14 + 1-2 of the 32-wide family). Only where the narrow tile passes
 * the rules: with two FMA pipes 16x16 overruns the load ports. Time 16 /
 * 32 wide, B in place, AMD EPYC (Zen 4), 1 / 2 threads: 15 x 768 x 768
 * 0.86 / 0.84, 15 x 3072 x 768 0.71 / 0.74, 16 rows x 768 x 768 0.91 /
 * 0.83, x 2304 x 768 0.88-0.90 / 0.89-0.92, x 3072 x 768 0.73 / 0.73, x
 * 768 x 3072 0.93-0.95 / 0.84, x 1024 x 1024 0.79 / 0.75, x 4096 x 1024
 * 0.71 / 0.76, x 1024 x 4096 0.95 / 0.92. Where both widths need the
 * same number of tiles it gained nothing (8, 13, 24 rows: 0.93-1.05),
 * nor did 2 tiles against 3 from 32 rows up. */
static bool one_narrow_tile_covers(const plan_model *m, const gemm_shape *s)
{
    int narrow_mr = m->bulk_mr[1];
    return plan_b_rows_in_place(s) && m->nv > 1 && s->M > m->mr &&
           s->M <= narrow_mr && model_tile_verdict(m, narrow_mr, 1).failed == TILE_RULE_PASSES;
}

/* The widest width past the main one whose tiles cover the M rows in at
 * most `tiles` row tiles and fit N at least once; 0 if none does. What
 * the two rules below ask, for one tile and for two. */
static int widest_in_tiles(const plan_model *m, const gemm_shape *s, int64_t tiles)
{
    for (int nv = UK_MAX_NV; nv > m->nv; nv--) {
        int mr = m->bulk_mr[nv];
        if (mr > 0 && s->M <= tiles * mr && s->N >= nv * m->vec)
            return nv;
    }
    return 0;
}

/* The width of the widest tile that covers the rows in one, wider than
 * the model's, where that tile asks for B far ahead into L2 (plan_b.c,
 * plan_tile_reads_b_far); 0 where none does. */
static int one_far_tile_width(const plan_model *m, const gemm_shape *s)
{
    int nv = widest_in_tiles(m, s, 1);
    return nv > 0 && plan_tile_reads_b_far(m, s, (int)s->M, nv) ? nv : 0;
}

/* On one thread, with one FMA pipe, a few rows more than the pipe keeps
 * in flight (5-8 on Zen 4's AVX-512: latency 4 times 1 FMA a cycle)
 * reading a shallow B in place whose rows spread over the L1 sets take
 * the 16-wide tile: one chain a row is enough, and a panel one line wide
 * reads each row's line once, the next panel's line already fetched
 * beside it. Time 16 wide / the rules' (64 wide up to 6 rows, then 32 or
 * 48), AMD EPYC family 25, medians of three processes, 1 thread: 5-6 x
 * 768 x 768 and x 2304 x 768 0.92-0.94, 7-8 rows 0.96-1.01; 2 threads
 * 0.98-1.02, so one thread only. B of short rows (plan_short_b_rows_go_wide)
 * takes the widest tile instead: 12 x (M x 64 x M), time 64 / 16 wide,
 * medians of five processes, M = 5, 6, 7: 0.87, 0.94, 0.88; 12 x
 * (8x128x8) 0.57. It lost where K is deep (6 and 8 x 768
 * x 3072 1.01-1.10: each panel's rows span more pages, as in
 * PLAN_ONE_TILE_WHOLE_K_MAX_ROWS), where rows collide (x 3072 x 768, 12 KiB
 * apart: 1.10-1.53), at 4 rows (4 chains for a latency of 4: 1.03) and
 * from 12 rows (1.01-1.02). It was measured before the wider tiles asked
 * for B far ahead into L2 (plan_b.c, FAR_MIN_STEP_CYCLES); where the one
 * wider tile that covers the rows does (one_far_tile_width: any B a cache
 * keeps), it steps aside: time 64 / 16 wide in one process (make
 * bench-ab, 15 rounds), Zen 4, 1 thread: 5-6 x 2304 x 768 0.86-0.89, x
 * 768 x 768 0.90-0.95; 48 / 16 wide, 7-8 rows, 0.93-0.98 (below). */
static bool few_rows_go_narrow(const plan_model *m, const gemm_shape *s, int threads)
{
    double in_flight = m->hw.fma_latency_cycles * m->hw.fma_per_cycle;
    return threads == 1 && m->hw.fma_per_cycle < 2.0 && m->nv > 1 && plan_b_rows_in_place(s) &&
           (double)s->M > in_flight && (double)s->M <= 2.0 * in_flight &&
           s->K <= PLAN_ONE_TILE_WHOLE_K_MAX_ROWS && !plan_b_rows_collide(m, s) &&
           one_far_tile_width(m, s) == 0 &&
           model_tile_verdict(m, (int)s->M, 1).failed == TILE_RULE_PASSES;
}

/* Rows fewer than one tile, where the main width gives them fewer
 * accumulators than the FMA pipes keep in flight (latency times issue
 * rate), take the widest tile that covers them in one: 3 rows of AVX2's
 * 16 wide hold 6 chains for 2 pipes of 4 cycles, 24 wide 9. Time 24 / 16
 * wide, B in place, AMD EPYC (Zen 3), 1 thread: 3 x 768 x 768, x 2304 x
 * 768, x 768 x 3072 0.92-0.94, 0.92, 0.86-0.89 (0.89 / 0.88 at 2 threads
 * in the top-8 run). With two FMA pipes, any rows that one wider tile
 * covers take it: it reads each element of A in fewer panels and keeps
 * more chains in flight. Time 48 / 32 wide in one process (make
 * bench-ab), Intel Xeon (model 167), 7-9 rows, 1 thread: x 3072 x 768
 * 0.81-0.83, x 768 x 768 0.88-0.92, x 2304 x 768 0.93-0.96, x 768 x 3072
 * 0.95-0.97; 2 threads 0.81, 0.90-0.97, 0.94-0.95, 0.97-1.02; under
 * TESSEL_ISA=avx2, 4 rows 24 / 16 wide 0.60-0.92 (5 rows, two tiles of
 * 24, lost: 1.15-1.24). (On the Xeon model 207 the same 7-9 rows had
 * measured 0.83-0.93 the other way, 32 wide the faster.) The width, or 0
 * where the rule does not apply (where one FMA pipe needs 4 chains, as
 * with Zen 4's AVX-512, only one row would, and one row takes the row
 * form). */
static int few_rows_width(const plan_model *m, const gemm_shape *s)
{
    double in_flight = m->hw.fma_latency_cycles * m->hw.fma_per_cycle;
    bool two_pipes = m->hw.fma_per_cycle >= 2.0;
    if (!plan_b_rows_in_place(s) || (!two_pipes && (double)(s->M * m->nv) >= in_flight))
        return 0;
    return widest_in_tiles(m, s, 1);
}

/* With two FMA pipes, rows that take two row tiles of the main width and
 * two of a wider one take the widest such: B is read twice either way,
 * and each tile holds more accumulators, more chains in flight and fewer
 * loads per FMA. On AVX-512 (14 rows of 32, 9 of 48) that is 15-18 rows,
 * 48 wide; on AVX2 (6 rows of 16, 4 of 24) 7-8 rows, 24 wide. Against
 * oneDNN, tessel new / old, the Xeon (model 207), 1 / 2 threads
 * (`2026-12-02-compare-two-tiles-wider.md`): 15-18 rows of the BERT-base
 * layers 1.02x / 1.14x, of the BERT-large layers 1.05x / 1.03x; per shape
 * 0.96-1.15 at 1 thread, the deep layers (768 x 3072, 1024 x 4096) the
 * weakest. One tile against one (7-9 rows 48 instead of 32 wide) lost at
 * 1 thread, 0.83-0.93 on 2304 x 768 and 768 x 3072
 * (`2026-12-02-compare-same-tiles-wider-1t.md`), and where the wider
 * tile needs more tiles it loses (11, 14, 20-28 rows: 0.96-1.26 the
 * time). With one FMA pipe (Zen 4's AVX-512), only where the wider tile
 * asks for B far ahead into L2 and the main one does not (plan_b.c: rows
 * that do not collide in the L1): 17-18 rows 48 wide, time 48 / 32 wide
 * in one process (make bench-ab), 1 / 2 threads: x 768 x 3072 0.93-0.94
 * / 0.99, x 2304 x 768 0.94-0.98 / 0.97-0.98, x 768 x 768 0.98 / 0.98;
 * over rows that collide, where both ask far, it went either way (x 3072
 * x 768 0.95-0.97, x 1024 x 4096 and x 4096 x 1024 1.02-1.06) and 32
 * stays. The width, or 0 where no wider tile qualifies. */
static int two_tiles_width(const plan_model *m, const gemm_shape *s)
{
    int main_mr = m->bulk_mr[m->nv];
    if (!plan_b_rows_in_place(s) || main_mr <= 0)
        return 0;
    int64_t tiles = (s->M + main_mr - 1) / main_mr;
    int nv = tiles == 2 ? widest_in_tiles(m, s, 2) : 0;
    if (nv == 0 || m->hw.fma_per_cycle >= 2.0)
        return nv;
    bool wide_far = plan_tile_reads_b_far(m, s, m->bulk_mr[nv], nv);
    return wide_far && !plan_tile_reads_b_far(m, s, main_mr, m->nv) ? nv : 0;
}

/* Whether B is read in place by the widest tile (64 wide on AVX-512)
 * because its rows are short: N a multiple of that width, rows close
 * enough together that the hardware prefetchers follow them (taking ldb
 * as N, as plans are keyed; attention's P V at head size 64 or 128). One
 * wide tile reads each element of A once where panels of 32 read it
 * twice, and B's rows in whole lines; a copy of B would be read the same
 * way (at N = 64 it is B's rows unchanged). Time 64 / 32 wide, both in
 * place, 1 thread: 12 matrices of M x 64 x M, M = 17, 43, 81, 128, 256,
 * 512: 0.97, 0.97, 0.97, 0.95, 0.94, 0.93; M x 128 x K, 64-256 rows:
 * 0.92-0.97. Against the plans before (32 wide, B packed from 43 rows
 * up): 12 x (M x 64 x M), M = 17, 24, 43, 62: 0.90, 0.93, 0.95, 0.96;
 * 12 x (M x 128 x M), M = 17, 43, 128: 0.85, 0.93, 0.96; at 2 threads
 * 512x128x512 0.92. Packed, the 64-wide tile lost (1.04-1.14 the time).
 * This held once the software prefetch of close rows was left out
 * (ops/gemm_blocks.c); before, 64 against 32 wide went either way. B that is
 * a slice of wider rows (V of one head in a 768-wide matrix, ldb 768,
 * rows 3 KB apart and prefetched) gets the same plan, and there 64 wide
 * in place took 0.90-0.99 the time of 32 wide, in place or packed
 * (12 x (M x 64 x M), M = 43, 128, 512). Against
 * oneDNN, BERT's P V rose 1.09x / 1.12x at 1 / 2 threads
 * (`compare-one-widest-panel.md`), Llama's 1.10x (head size 128,
 * `compare-short-b-rows-wide.md`). */
bool plan_short_b_rows_go_wide(const plan_model *m, const gemm_shape *s)
{
    int64_t widest = UK_MAX_NV * m->vec;
    /* Only where the widest tile loads less per FMA than the model's
     * ((nv + mr) / (mr nv): 6x64 0.42 against 14x32's 0.57 here). With
     * 16 registers it is 2 rows of 4 vectors (0.75 against 6x2's 0.67),
     * and under TESSEL_ISA=avx2 it took 1.15-1.55x the time (12 x (43x64x43),
     * 128x64x128, 256x128x256). */
    int wide_mr = m->bulk_mr[UK_MAX_NV];
    bool fewer_loads = (UK_MAX_NV + wide_mr) * m->mr * m->nv <
                       (m->nv + m->mr) * wide_mr * UK_MAX_NV;
    return widest_tile_may_read_b(m, s) && fewer_loads && s->N % widest == 0 &&
           s->N * (int64_t)sizeof(float) <= PLAN_CLOSE_B_ROW_BYTES;
}

/* Rows that one tile of a wider width covers but the widest does not
 * (7-9 rows on AVX-512: 9 of 48 wide, 6 of 64), over a B read in place
 * whose rows crowd the L1 sets (plan_b_rows_crowd_l1_sets), take that width:
 * each k step reads three lines of a crowded row where the 32-wide tile
 * reads two, and A's elements are read in fewer panels. Time 48 / 32
 * wide in one process (make bench-ab), Zen 4, 1 / 2 threads: 7-9 x 3072
 * x 768 0.89-0.92 / 0.89-1.03, 7 and 9 x 4096 x 1024 0.78-0.89 / 0.83,
 * 8 x 1024 x 4096 0.88 / 0.96. Where the rows do not crowd, 7 x 768 x
 * 768 and x 2304 x 768, it lost (1.04 / 1.03-1.07) while B was asked for
 * near into L1; now that the 48-wide tile asks for it far ahead into L2
 * (one_far_tile_width), it wins there too: time 48 / the rules'
 * width (32, or 16 on one thread), 15 rounds, 1 / 2 threads: 7-9 x 2304
 * x 768 0.92-0.95 / 0.87-0.97, x 768 x 768 0.94-0.98 / 0.94-1.00, x 768
 * x 3072 0.86-0.94 / 0.87-0.97. The width, or 0. */
static int one_wide_tile_width(const plan_model *m, const gemm_shape *s)
{
    if (plan_b_rows_crowd_l1_sets(m, s))
        return widest_in_tiles(m, s, 1);
    return one_far_tile_width(m, s);
}

/* The main tile width a choice asks for, if the family has a usable tile
 * of it; a pre-packed B fixes the width it was packed with. N a little
 * wider than the model's panel, not a multiple of it and within the
 * widest tile, is one panel of the width that covers it, whatever the
 * choice, rather than a full panel and a masked one (time one panel /
 * two, 1 and 2 threads: 100x48x100 0.72 / 0.67; B^T: 43x43x64 0.80,
 * 48x48x64 0.85, 62x62x64 0.96). Masked, B read in place, 1 thread:
 * 512x36x512 0.78, 300x50x768 0.95; against oneDNN 512x36x512 0.72 ->
 * 0.90 and 64x40x256 0.72 -> 0.79 (`compare-one-panel-masked.md`, where
 * 300x50x768 moved 0.91 -> 0.65 with the machine). Not for more threads
 * where that panel would be masked and B read in place: each thread then
 * packs all of it for itself (ops/gemm_blocks.h, own_panel), where two panels
 * split along N give each its own (64x40x256 at 2 threads 1.04 -> 0.81
 * in a round before). N = 64 or 128 take the widest tile by the rule of
 * short rows above. */
int plan_tile_width(const plan_model *m, const gemm_shape *s, const plan_choice *c,
                    int threads)
{
    if (s->prepacked_kc > 0)
        return m->nv;
    int64_t one_panel = (s->N + m->vec - 1) / m->vec;
    bool masked_in_place = !s->transb && s->N % m->vec != 0;
    if (one_panel > m->nv && one_panel <= UK_MAX_NV && m->bulk_mr[one_panel] > 0 &&
        s->N % m->nr != 0 && (threads == 1 || !masked_in_place))
        return (int)one_panel;
    if (c->nv == 0 && plan_short_b_rows_go_wide(m, s))
        return UK_MAX_NV;
    if (c->nv == 0 && few_rows_go_narrow(m, s, threads))
        return 1;
    if (c->nv == 0 && short_tile_goes_wide(m, s))
        return UK_MAX_NV;
    int few_rows_nv = c->nv == 0 ? few_rows_width(m, s) : 0;
    if (few_rows_nv > 0)
        return few_rows_nv;
    int one_wide_nv = c->nv == 0 ? one_wide_tile_width(m, s) : 0;
    if (one_wide_nv > 0)
        return one_wide_nv;
    if (c->nv == 0 && one_narrow_tile_covers(m, s))
        return 1;
    int two_tiles_nv = c->nv == 0 ? two_tiles_width(m, s) : 0;
    if (two_tiles_nv > 0)
        return two_tiles_nv;
    if (c->nv < 1 || c->nv > UK_MAX_NV || m->bulk_mr[c->nv] == 0)
        return m->nv;
    return c->nv;
}
