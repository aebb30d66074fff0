/*
 * plan_gemm.c - plans one GEMM shape: the tessellation of M by row tiles of
 * several heights (bulk tiles of the main height, then the DP's cheapest
 * cover of the remainder: no padding), the column panels of N (the last
 * one masked), kc/nc and what to pack; then, calibrated, the cheapest
 * predicted of the variants the model may take. The dot-product and row
 * forms (plan_dot.c, plan_row.c), the tile width (plan_width.c) and the
 * split across threads (plan_split.c) are decided in their own files.
 */
#include <string.h>

#include "plan/candidates.h"
#include "plan/plan_rules.h"

/* At most this many row tiles' worth of rows is "small M": A and B are
 * used so few times that packing them costs more than it saves. */
static const int SMALL_M_TILES = 2;

/* From this many rows and column panels, A with rows contiguous along k
 * is packed. */
static const int64_t PACK_A_MIN_ROWS = 8, PACK_A_MIN_PANELS = 6;

/* How far ahead the ukernel prefetches B. Packed panels stream from L2
 * and are asked for about a kilobyte ahead (measured on 2048^3: +10%
 * over none, flat from 1 to 1.5 KB). B read in place has rows kilobytes
 * apart that no hardware prefetcher follows, and a miss to L3 costs a
 * hundred cycles or more where a small tile's k step takes a few. */
static const int PACKED_PREFETCH_BYTES = 1024;

/* Unless the block the call packs is no larger than the L1: packed just
 * before its first row tile reads it, it is still there for the next,
 * and the prefetches are only extra loads in each k step (where A is
 * read in place by 14 row offsets, also registers reloaded from the
 * stack). Not pre-packed weights: they come from wherever the caller
 * left them, and were not measured without. Time
 * without / with, in one process, attention's matrices of K = 64 (blocks
 * of 8-32 KiB), 1 thread: B^T at 17-128 tokens 0.91-0.99, 81x81 B 0.95,
 * 100x100 B 1.01; 2 threads, B^T: 12 x 24, 81, 128 tokens 0.91, 0.95,
 * 0.98, 192 x 62, 119 tokens 0.92, 0.99. Blocks larger than the L1 lost
 * without them: 12 x (200x200x64) B^T (56 KiB) 1.03-1.04, 1024x48x768
 * (K whole, 144 KiB) 1.02. */
static bool packed_block_in_l1(const plan_model *m, const gemm_shape *s, const gemm_plan *p)
{
    int64_t cols = p->nc < s->N ? p->nc : s->N;
    return p->pack_b && s->prepacked_kc == 0 &&
           p->kc * cols * (int64_t)sizeof(float) <= model_l1(m).size_bytes;
}

/* A plan of this many B panels or fewer takes K in one block where all
 * of op(B) fits half the L2. The rules' kc keeps the A micro-panel in L1
 * for the panels after the first; with one or two there is little to
 * keep, while each k block costs every tile a ukernel call and a pass
 * over its C. Time K whole / rules' kc, 12 matrices (attention's P V):
 * 384x64x384 0.97 at 1 thread, 0.91 at 2; 512x64x512 0.92; 256x64x256
 * 0.98. */
static const int64_t WHOLE_K_MAX_PANELS = 2;

/* B read in place is prefetched this many cache lines ahead: the rows
 * ahead times the lines a tile reads of each row (2 for a 32-wide tile,
 * 4 for 64 wide), at most 16 rows. Time 8 / 16 rows ahead, 1 thread:
 * 64-wide tiles, 64x1024x768 0.97, 64x3072x768 0.92 (4 rows: 0.92,
 * 0.94); 32-wide, 64x3072x768 0.96, 64x768x768 0.99. Sixteen rows of 4
 * lines kept more misses in flight than the L1 tracks. */
static const int IN_PLACE_PREFETCH_LINES = 32;
static const int IN_PLACE_PREFETCH_MAX_ROWS = 16;

/* A plan of this many rows or fewer reading B in place from L3 (B under
 * a third of it), where B's rows lie a multiple of the L1's way span
 * apart (4 KiB: line j of every row falls in one set), is not
 * prefetched: the lines asked for rows ahead evict each other before
 * use, and the hardware prefetchers do better alone. Time without / with
 * in process, 1 thread (2 threads): 1-3 x 3072 x 768 0.71-0.79
 * (0.71-0.78), 4x3072x768 0.84, 1x2048x768 0.78 (0.77), 3x1024x768 0.70
 * (0.71). Against oneDNN in bench/compare, 1 thread: 1-3 x 3072 x 768
 * 0.58-1.14 -> 0.68-1.34, 1-3 x 1024 x 1024 0.57-1.19 -> 0.72-1.62; but
 * 1-3 x 3072 x 1024 (B of 12 MiB, of a 32 MiB L3 other guests share)
 * 0.58-1.14 -> 0.56-1.09, hence the third. Not taken either: 5 rows
 * (0.96-1.00 in process), 8 rows (1.07-1.10), rows 3 or 9 KiB apart
 * (0.97-1.03). One row now takes the row form instead (plan_row_form), and
 * so do 2-5 rows 2 KiB-multiples apart in a B of over a quarter of the
 * L3 at one thread (plan_b_rows_crowd_l1_sets). */
static const int64_t UNPREFETCHED_MAX_ROWS = 4;

/* Row tiles up to which deep or square B whose rows do not collide in
 * the L1 is read in place (see b_read_in_place). */
static const int64_t DEEP_IN_PLACE_MAX_TILES = 4;

/* Where the L2 feeds the main tile at its pace (model_l2_feeds_tile), B's
 * panels read in place from the L2 and L3 keep up with it too, and the
 * copy is the cost without the gain for more row tiles, wide B, deep B,
 * or rows colliding in the L1 alike. AMD EPYC family 25 (Zen 4, one
 * 512-bit FMA a cycle), time in place / packed (the rules' plan) in one
 * process, 1 thread: 31, 43, 64, 80 x 3072 x 768 0.78-0.92, 0.88,
 * 0.97, 0.92; 43, 64, 100 x 2304 x 768 0.92, 0.95, 0.98; 64, 80, 128 x
 * 768 x 3072 0.94-0.97; 64x1024x1024 0.94, 40x4096x1024 0.97; 128 x 768
 * x 768, 2304 x 768, 3072 x 768 0.98, 1.00, 1.00; from 200 rows on
 * 1.01-1.045. 2 threads: 31-100 x 3072 x 768 0.87-0.91, 43-100 x 2304 x
 * 768 0.94-0.97, 100 x 768 x 3072 0.88, 100x768x768 0.93, 40x4096x1024
 * 0.94, 64x1024x1024 0.96. */
static const int64_t L2_FED_IN_PLACE_MAX_TILES = 10;

/* On more threads B read in place spares them the shared copy and its
 * wait further: Zen 4, 2 threads, in place split M / packed (the rules'
 * plan): 255^3 0.90, 256^3 0.885, 384^3 0.97, 512^3 0.955, 300 and 384
 * x 768 x 768 0.98, 512x768x768 0.81, 300x2304x768 0.96, 384x1024x1024
 * 0.975, 512x1024x1024 and 300x768x3072 0.99-1.00; 512x3072x768 1.01,
 * 1000^3 1.06, 1024^3 1.03, 2048^3 1.08. Hence up to 512 rows. */
static const int64_t L2_FED_IN_PLACE_MAX_TILES_THREADS = 37;

/* B read in place, up to this part of the L3 (which keeps it between
 * calls), runs as one block, K and N whole: the rules' kc and the nc that
 * kept the block in half the L2 cost every tile a pass over C per k block
 * and every panel a start the near prefetch does not cover, while the
 * L3 and the prefetchers keep the panels coming. AMD EPYC family 25 (L2 1
 * MiB, L3 32 MiB), in one process, time in one block / as the rules had
 * it (kc 384-615, nc 256-288; medians of three processes each): 1
 * thread, 8-119 rows x 768 x 768, 2304 x 768, 768 x 3072, 3072 x 768,
 * 1024 x 1024 0.94-0.98, 6x192x768, 64x384x3072, 512x64x4096 0.96-0.97,
 * 2x768x3072 1.02; 2 threads 2-77 rows 0.91-0.98, 300-384 rows
 * 0.94-0.95, 100-511 rows otherwise level. Past the third: 64 x 4096 x
 * 1024 and x 1024 x 4096 (16 MiB) 1.04-1.05 (kc and nc 1024). */
static const int64_t WHOLE_B_L3_PARTS = 3;

/* Row tiles up to which B streamed from memory is read in place, and deep
 * B in panels one cache line wide (see b_read_in_place). */
static const int64_t STREAM_IN_PLACE_MAX_TILES = 7;
static const int64_t ONE_LINE_DEEP_STREAM_MAX_TILES = 16;

/* At 1 thread deep B streams in place up to this many tiles: past 16
 * the tiles run in groups (ops/gemm_blocks.c, PANELS_OUTER_MAX_TILES), the
 * later ones reading the block from L2. In one process, AMD EPYC family
 * 23, time in place / packed rows first: 100, 128, 150, 200, 256 x 768 x
 * 3072 0.88, 0.91, 0.93, 0.95, 0.96, 300 rows 1.12; 128, 200 x 1024 x
 * 4096 0.98, 1.00. At 2 threads in place took 1.11-1.47x the time
 * (100-256 rows) in a slow spell and 0.89-0.92 in a quiet one, and a
 * bench/compare against oneDNN swung 0.54-1.46 per round: 2 threads keep
 * 16 until that is measured. Wide B (x 3072 x 768, its block past the
 * L2) took 1.17-1.25x from 100 rows. */
static const int64_t ONE_LINE_DEEP_STREAM_MAX_TILES_1T = 40;

/* Row tiles up to which B in panels one cache line wide, from the L2 or
 * an L3 that feeds the tiles (not streamed), is read in place: the copy
 * is repaid by more tiles than that. In one process (make bench-ab), AMD
 * EPYC family 25 model 1 (Zen 3), time in place / packed, 1 thread: 13,
 * 16, 20, 24 x 768 x 768 0.86, 0.87, 0.90, 0.86; 13, 17, 24 x 2304 x 768
 * 0.89, 0.87, 1.00; 31 and 43 rows 0.99-1.15; 2 threads: 13, 16, 24 x
 * 768 x 768 0.81, 0.95, 0.89, 13 and 24 x 2304 x 768 0.87, 0.87. Not where
 * B's rows collide in the L1 (plan_b_rows_collide): 17 and 24 x 1024 x
 * 1024 1.15, 1.40 (bench/results/2026-12-07-session35-zen3-in-place-ab.txt). */
static const int64_t ONE_LINE_IN_PLACE_MAX_TILES = 4;

/* B that no cache keeps between calls (plan_b_streams_from_memory: over
 * 16 L2s) comes from memory at the speed of the hardware prefetchers,
 * which follow a few dozen streams, one per row. Read in place, its block is a few rows
 * deep and long along them: nc 4096, and kc such that a panel step reads
 * STREAM_LINES lines, kc rows of the main tile's lines each (32 rows of
 * two on AVX-512, 64 of one on AVX2). Time streamed / as the
 * blocking rules have it, 1 thread: 1x50257x768 0.57-0.71, 32x50257x768
 * 0.57, 1x4096x4096 0.87, 16x4096x4096 0.86, 1x11008x4096 1.05; B
 * that stays in L3 between calls gained nothing (1x3072x768 1.03-1.07,
 * 1x4096x1024 0.98), hence the bound. A choice's kc and nc give way to
 * this, as the prefetch distance does: the cost model has no term for
 * the prefetchers and would trade it for fewer k blocks. Packed, B keeps
 * its blocking (a shallow kc would move C once per 32 rows) and is
 * copied rows first (ops/gemm_blocks.c, pack_b_by_rows): 128x50257x768 packed
 * / streamed in place went from 1.13-1.17 to 0.86-0.87. The lines were
 * measured on AMD EPYC family 23 (16-wide panels, one line a row, B of
 * 9.4 MB from memory), 64 rows deep against 32, median of three
 * processes, 1 thread: 3, 5, 8 x 3072 x 768 14.8 / 7.4, 20.6 / 11.9,
 * 24.0 / 16.2 GF/s; 2, 3, 8, 12 x 768 x 3072 7.1 / 7.5, 10.1 / 8.7, 17.5 /
 * 17.1, 22.9 / 22.5 (128 rows: 8.1, 11.6, 19.8, 22.1, but 3-8 x 3072 x
 * 768 15.0, 19.6, 20.0); 2 threads, 3 and 8 x 3072 x 768 28-34 / 14-25,
 * 45-47 / 37-44. */
static const int64_t STREAM_LINES = 64, STREAM_NC = 4096;

/* Such a block is read panel by panel: a line or a few of each of its
 * rows, then the next few along. The rows are asked for this many bytes
 * ahead along themselves (four lines), not rows ahead. Time with / without
 * (rows ahead, or none where the rule of UNPREFETCHED_MAX_ROWS says so),
 * AMD EPYC (Zen 3, 16-wide panels, B of 9.4 MB: 16 of its 512 KiB L2s),
 * 1 thread: 8x768x3072 0.41-0.50, 3x3072x768 0.26-0.41. Two lines ahead
 * did as well on one shape, one line and six lost (0.6-0.9). */
static const int STREAM_PREFETCH_BYTES = 256;

/* B wider than deep streamed from an L3 that does not feed the tiles
 * (plan_b_streams, not from memory) is read twice as many lines a panel
 * step: its rows, 12 KiB apart at 3072 columns, are so many streams, and
 * that L3 (a mesh) keeps more of them in flight. Intel Xeon family 6
 * model 207 (L3 read at 35 GB/s by one core), in one process, time 128 /
 * 64 lines, 1 thread (2 threads): 13 x 3072 x 768 0.825-0.846
 * (0.80-0.82), 24 x 3072 x 768 0.85 (0.87-0.94), 17 x 3072 x 768 0.90
 * (0.86), 8 x 3072 x 768 0.98-1.00 (0.88-0.90), 17 x 4096 x 1024 0.99-1.13
 * (0.91-1.03). Deep B went either way (24 x 768 x 3072 0.94-0.965, 13
 * rows level, 16 rows 1.04 (1.04-1.08)), and B from memory lost (32 x
 * 50257 x 768 1.015 (1.05))
 * (bench/results/2026-12-07-session36-spr-stream-lines-ab.txt). */
static const int64_t STREAM_L3_WIDE_LINES = 128;

/* The depth of a block of B streamed in place: STREAM_LINES lines a
 * panel step (or STREAM_L3_WIDE_LINES), over the lines of a main-tile
 * row. */
static int64_t stream_kc(const plan_model *m, const gemm_shape *s)
{
    int64_t line_floats = model_l1(m).line_bytes / (int64_t)sizeof(float);
    int64_t lines = (m->nr + line_floats - 1) / line_floats;
    bool wide_from_l3 = !plan_b_streams_from_memory(m, s) && s->N > s->K;
    return (wide_from_l3 ? STREAM_L3_WIDE_LINES : STREAM_LINES) / (lines > 0 ? lines : 1);
}

static void add_run(gemm_plan *p, int mr, int64_t count)
{
    if (count <= 0)
        return;
    if (p->nruns > 0 && p->runs[p->nruns - 1].mr == mr) {
        p->runs[p->nruns - 1].count += count;
    } else {
        plan_run *run = &p->runs[p->nruns++];
        run->mr = mr; /* field by field: see plan_set_choice */
        run->count = count;
    }
    p->ntiles += count;
}

/* Rows of tiles nv vectors wide: bulk tiles of the model's height and
 * the DP's cheapest cover of the last rows, run tallest first. The first
 * tile of a k block is the one whose loads of B miss (read in place, or
 * copied as it reads); a tall one has more FMAs to hide each miss behind.
 * Tallest first against the DP's order (short first): 43x768x768 0.92-0.93
 * of the time at 1 and 2 threads, 192 x (43x64x43) 0.90-0.92, 24x3072x768
 * 0.97. */
static void tessellate_rows(const plan_model *m, int nv, int64_t M, gemm_plan *p)
{
    int64_t tiles_of_height[UK_MAX_MR + 1] = {0};
    int64_t rest = M;
    int bulk_mr = m->bulk_mr[nv];
    if (M > PLAN_DP_LEN) {
        int64_t bulk = (M - PLAN_DP_LEN + bulk_mr - 1) / bulk_mr;
        tiles_of_height[bulk_mr] = bulk;
        rest = M - bulk * bulk_mr;
    }
    while (rest > 0) {
        int h = m->dp_first[nv][rest];
        tiles_of_height[h]++;
        rest -= h;
    }
    for (int h = UK_MAX_MR; h >= 1; h--)
        add_run(p, h, tiles_of_height[h]);
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

/* B in panels (packed by the call, or pre-packed) runs k blocks of
 * PACKED_KC_TIMES the rules' kc, and takes K whole up to
 * PACKED_WHOLE_K_HALVES halves of that. The rules' kc keeps A's
 * micro-panel in L1, but the L2 feeds it as fast as the FMAs use it
 * (model_l2_feeds_tile), so a deeper block only saves each tile passes
 * over C and each block a restart. Its nc is sized again for the deeper
 * kc, so that the block keeps the bytes the L3 rule gives it
 * (model_nc): with the rules' nc, 384x4096x1024 and 128x4096x4096 made a
 * 16 MiB block and lost 4% and 8%. AMD EPYC family 25, new / old speed,
 * medians of three processes, 1 thread: 2048^3, 1024^3, 1000^3
 * 1.010-1.016; 256-2048 x 768 x 3072 1.005-1.015; 384-512 x 1024-4096 x
 * 1024-4096 1.001-1.011; 128x4096x4096 1.005; K 768 level (its block
 * was whole before). 2 threads: 2048^3 1.020, 1024^3 1.026, 1000^3
 * 1.01, 512-2048 x 768 x 3072 1.01-1.04, the rest 0.98-1.03. Pre-packed,
 * 5-1296 x 768 x 3072: 0.99-1.01 at 1 thread, 1.00-1.02 at 2. (K 768
 * in one block, not two of 384, measured 1.00-1.02 the session before.)
 * Not where the first tile's copy passes the L2 (copy_passes_l2), whose
 * cap on nc would then halve. Where the model says the L2 does not feed
 * the tile (Intel Xeon model 207, two pipes) it held too: the rules' kc
 * kept / doubled, in one process, 1 and 2 threads, 384-2048 x 768 x 768,
 * 200x3072x768, 512x768x3072, 255x2304x768 0.97-1.03, 1024^3 at 2
 * threads 1.19 (2026-12-08-session37-spr-experiments.txt). */
static const int64_t PACKED_WHOLE_K_HALVES = 3;
static const int64_t PACKED_KC_TIMES = 2;

/* kc evened out over the k blocks K needs at most kc per block. */
static int64_t even_kc(int64_t kc, int64_t K)
{
    if (K <= 0)
        return 1;
    int64_t kblocks = (K + kc - 1) / kc;
    return (K + kblocks - 1) / kblocks;
}

/* nc evened out likewise over N, kept a multiple of nr: no short last
 * block whose few panels repay packing each A micro-panel once more. */
static int64_t even_nc(int64_t nc, int64_t N, int nr)
{
    if (N <= 0 || nc <= 0)
        return nc;
    int64_t nblocks = (N + nc - 1) / nc;
    int64_t even = (N + nblocks - 1) / nblocks;
    return (even + nr - 1) / nr * nr;
}

/* kc for B in panels (packed by the call, or pre-packed): K whole up to
 * PACKED_WHOLE_K_HALVES halves of PACKED_KC_TIMES the rules' kc, else
 * that evened out. */
static int64_t packed_kc(int64_t kc, int64_t K)
{
    kc *= PACKED_KC_TIMES;
    return 2 * K <= PACKED_WHOLE_K_HALVES * kc ? K : even_kc(kc, K);
}

int64_t plan_kc(const plan_model *m, int64_t K)
{
    return packed_kc(m->kc, K);
}

/* Whether B is read in place: as chosen where that is possible (rows of
 * op(B) contiguous, not pre-packed), else by the rule of the comment
 * below. */
static bool b_read_in_place(const plan_model *m, const gemm_shape *s, const plan_choice *c,
                            int nv, bool small_m, int threads)
{
    if (!plan_b_rows_in_place(s))
        return false;
    if (c->pack_b == PLAN_B_IN_PLACE)
        return true;
    if (c->pack_b == PLAN_B_PACKED)
        return false;
    if (plan_short_b_rows_go_wide(m, s) && nv == UK_MAX_NV)
        return true;
    /* Panels one cache line wide (AVX2's 16 floats) read in place take
     * each k step's line from a new row of B, a new page where rows lie
     * 4 KiB or more apart; the rules below were measured on panels of two
     * lines and more (AVX-512). Time packed / in place, AMD EPYC (Zen 3),
     * best of the top 8 plans, 1 / 2 threads: 17-128 x 1024 x 1024
     * 0.65-0.83 / 0.65-0.85, 31-256 x 768 x 768 0.89-0.95 / 0.93-0.94,
     * 512^3 and 1024^3 0.80 / 0.66. Only a tile or two of rows, which
     * read B once or twice, stay in place, unless B streams from memory:
     * then the copy, which reads it rows first, ran slower than the
     * product over a few rows here. Time in place / packed, AMD EPYC
     * family 23 (L3 8 MiB, B of 9.4 MB), 6-row tiles, 1 / 2 threads: deep,
     * 13-64 x 768 x 3072 0.69-0.87 / 0.86-0.94 (32 and 64 rows), 100 and
     * 128 rows 0.93, 0.83 / 0.99; wide, 13-32 x 3072 x 768 0.78-0.92 /
     * 0.91 (24 rows), 40 rows 0.98 / 1.03, 50-128 rows 1.02-1.14. */
    if (nv * m->vec * (int64_t)sizeof(float) <= model_l1(m).line_bytes) {
        if (!plan_b_streams(m, s, threads))
            return small_m || (s->M <= ONE_LINE_IN_PLACE_MAX_TILES * m->mr &&
                               !plan_b_rows_collide(m, s));
        int64_t deep = threads == 1 ? ONE_LINE_DEEP_STREAM_MAX_TILES_1T
                                    : ONE_LINE_DEEP_STREAM_MAX_TILES;
        int64_t tiles = s->K >= s->N ? deep : STREAM_IN_PLACE_MAX_TILES;
        return s->M <= tiles * m->mr;
    }
    /* B is packed by the first row tile as it reads it (ops/gemm_blocks.c), so
     * the copy costs little more than its stores, and past a few row
     * tiles the panels repay it, at any thread count. Time packed / in
     * place in one process (make bench-ab), Intel Xeon (model 167, L1
     * 48 KiB 12-way, L2 2 MiB), 1 thread: 768 x 768 and 768 x 3072 at
     * 32-48 rows 0.97-1.04, 64 rows 0.98-0.99, 80-256 rows 0.93-0.96;
     * 700 x 700 and 1000 x 1000 the same (32 rows 1.00-1.08, 80-128
     * 0.93-0.98). 2 threads: 100-384 x 768 x 3072 0.95, 768 x 768 level
     * (its halves stay in the L2s either way). Earlier rules, measured on
     * the Xeon model 207, read deep B in place up to 7% of the time in
     * copies (about 600 rows here) and, on 2 threads, up to a thousand
     * rows, where that machine measured in place split M 0.76-0.77 of
     * packed split N (384-450 x 768); this one measures packed split N
     * 0.99-1.01 there. B wider than deep, or whose rows collide in the L1
     * (plan_b_rows_collide), is packed from small M up: 2 threads, 32-992 x
     * 3072 x 768 0.87-0.90, 32-150 x 4096 x 1024 0.81-0.90, 100-992 x 2304
     * x 768 0.92-0.94 (32-64 rows 0.95-1.00), 1 thread 32-256 x 1024 x
     * 1024, x 1024 x 4096 and x 2048 x 2048 0.87-0.93, x 512 x 512
     * 0.87-0.91. B streamed from memory (plan_b_streams_from_memory) comes
     * once a call either way, and its copy pays from more rows: 1 / 2
     * threads, 32, 64, 80, 96, 112, 128 x 50257 x 768 (gpt2's head),
     * packed / in place 1.32 / 1.36, 1.13 / 1.14, 1.03 / 1.05, 1.00 /
     * 1.00, 0.96 / 0.98, 0.94 / 0.96. */
    if (plan_b_streams(m, s, threads))
        return s->M <= STREAM_IN_PLACE_MAX_TILES * m->mr;
    int64_t l2_fed_tiles = threads > 1 ? L2_FED_IN_PLACE_MAX_TILES_THREADS
                                       : L2_FED_IN_PLACE_MAX_TILES;
    if (m->l2_feeds_tile && s->M <= l2_fed_tiles * m->mr)
        return true;
    if (s->N > s->K || plan_b_rows_collide(m, s))
        return small_m;
    return s->M <= DEEP_IN_PLACE_MAX_TILES * m->mr;
}

/* Below this many row tiles a block's first tile, which copies B as it
 * reads it, is a large share of the block's time (copy_passes_l2). */
static const int64_t COPY_PASS_MAX_TILES = 12;

/* B packed by the first row tile of each block, as it reads it or (B^T)
 * panel by panel just before (ops/gemm_blocks.c), passes the L2 twice over: its
 * rows from L3 or memory, and the copy. A block the L2 holds whole, but
 * not twice, loses the start of its copy to the end of its source, and
 * the next tiles read it back from L3. With few row tiles that is a
 * large share of the time, so the block is capped to half the L2, as for
 * B read in place. Time with nc 1024 / the model's (2048 at K 1024-2048,
 * 1536 at 3072 x 768), 1 thread: 64x2048x1024 0.91; 48, 96, 128 x 3072 x
 * 768 0.96, 0.975, 0.985; 128x2048x2048 0.98; 128x4096x1024 0.97. From 15
 * tiles on level or a little worse, as A is packed once per block: 200,
 * 256, 384, 1296 x 3072 x 768 1.00-1.01. At 2 threads (split along N,
 * each thread's block half as wide) 0.99-1.01. B^T the same (Llama's
 * weights), nc 1024 / 2048, 1 / 2 threads: 32, 128, 256 x 4096 x 4096
 * 0.91, 0.965, 0.99 / 0.89, 0.95, 0.95; 64x11008x4096 0.94 / 0.90. */
static bool copy_passes_l2(const gemm_shape *s, const gemm_plan *p)
{
    return p->pack_b && !p->b_from_memory && s->prepacked_kc == 0 &&
           p->ntiles < COPY_PASS_MAX_TILES;
}

/* Whether B, read in place, runs as one block, K and N whole
 * (WHOLE_B_L3_PARTS, where the L3 feeds the tiles: model.c,
 * model_l3_feeds_tile; N may then be cut for the threads,
 * split_lone_block). */
static bool b_runs_as_one_block(const plan_model *m, const gemm_shape *s, const gemm_plan *p)
{
    const hw_cache *l3 = model_feeding_l3(m);
    return !p->pack_b && l3 &&
           s->K * s->N * (int64_t)sizeof(float) <= l3->size_bytes / WHOLE_B_L3_PARTS;
}

/* A split along M whose threads get unequal counts of row tiles, over
 * B in one block, cuts N into a block a thread. The threads claim a
 * block's tiles one at a time, and over several blocks one that ends
 * early takes more of the next; in one block the thread with a tile more
 * sets the time. Two threads, in one process, time with N halved / in
 * one block: 119 x 768 x 3072 (9 tiles) 0.97, 64x384x3072 (5 tiles)
 * 0.94, 119 and 255 x 768 x 768 0.94-0.95, 200x768x768 pre-packed (K
 * whole) 0.95; 150x768x768 pre-packed level. Only where the thread
 * with most tiles has over LONE_BLOCK_SLACK more than an equal share:
 * each block more packs A's tiles once more. */
static const double LONE_BLOCK_SLACK = 0.02;
static void split_lone_block(const gemm_shape *s, gemm_plan *p)
{
    if (p->split != 'M' || p->threads < 2 || p->npanels < p->threads || s->K > p->kc ||
        s->N > p->nc)
        return;
    int64_t most = (p->ntiles + p->threads - 1) / p->threads;
    if ((double)(most * p->threads) <= (1.0 + LONE_BLOCK_SLACK) * (double)p->ntiles)
        return;
    int64_t panels = (p->npanels + p->threads - 1) / p->threads;
    p->nc = even_nc(panels * p->nr, s->N, p->nr);
}

static void make_one_block(const gemm_shape *s, gemm_plan *p)
{
    p->b_one_block = true;
    p->kc = s->K;
    p->nc = (s->N + p->nr - 1) / p->nr * p->nr;
    p->nc_half_l2 = false;
}

/* A thread that runs few B panels keeps each A micro-panel in L1 for
 * few of them, which is what the rules' kc is sized for, while every k
 * block costs each tile a ukernel call and a pass over its C. At most
 * DEEP_KC_MAX_PANELS panels a thread (384 columns of 32), kc is deepened
 * up to twice the rules', within K and with the thread's block of B still
 * within half the L2.
 * In-process A/B on the Xeon, time rules' kc / doubled: 2 threads split
 * along N, 13-48 x 768 x 768 1.01-1.05, 13-32 x 768 x 3072 1.00-1.04; 1
 * thread, 16-128 x 384 x 768 1.00-1.02, 16-256 x 384 x 3072 1.02-1.07.
 * With 24 panels (1 thread, 768 columns) it was level (16x768x768 1.00,
 * 64x768x768 0.99-1.00), hence the bound. */
static const int64_t DEEP_KC_MAX_PANELS = 12;

static void deepen_kc(const plan_model *m, const gemm_shape *s, gemm_plan *p)
{
    int64_t panels = p->npanels;
    if (p->split == 'N') {
        panels = 0;
        for (int t = 0; t < p->threads; t++)
            if (p->bounds[t + 1] - p->bounds[t] > panels)
                panels = p->bounds[t + 1] - p->bounds[t];
    }
    if (panels > DEEP_KC_MAX_PANELS)
        return;
    int64_t cols = panels * p->nr < p->nc ? panels * p->nr : p->nc;
    int64_t half_l2_rows = m->l2_bytes / 2 / (cols * (int64_t)sizeof(float));
    int64_t kc = 2 * p->kc < s->K ? 2 * p->kc : s->K;
    if (kc > half_l2_rows)
        kc = half_l2_rows;
    if (kc <= p->kc) /* also keeps a zero kc from even_kc */
        return;
    kc = even_kc(kc, s->K);
    if (kc <= p->kc)
        return;
    p->kc = kc;
    p->nc = cols;
    p->nc_half_l2 = false;
    p->deep_kc = true;
}

/* The rules' nc for a kc other than theirs (a choice's, or B in
 * panels' deeper one): the B block sized again for the plan's kc. */
static int64_t nc_for_kc(const plan_model *m, const hw_cache *l2, const gemm_plan *p)
{
    return model_nc(l2, model_feeding_l3(m), p->kc, m->bulk_mr[p->nv], p->nr);
}

/* The plan of the M x N grid for `threads` threads split along M or N
 * (plan_gemm_choice without the split along K); `threads` as
 * plan_gemm_choice has bounded it. */
static void plan_m_or_n(const plan_model *m, const gemm_shape *s, int threads,
                        const plan_choice *c, gemm_plan *p)
{
    memset(p, 0, sizeof *p);
    p->isa = m->hw.isa;
    p->vec = m->vec;
    p->nv = plan_tile_width(m, s, c, threads);
    p->nr = p->nv * m->vec;

    p->npanels = (s->N + p->nr - 1) / p->nr;
    int64_t tail_cols = s->N - (p->npanels - 1) * p->nr;
    int tail_nv = (int)((tail_cols + p->vec - 1) / p->vec);
    /* A single narrow panel is tessellated for its own width. */
    tessellate_rows(m, p->npanels == 1 ? tail_nv : p->nv, s->M, p);
    if (plan_takes_dot_form(m, s)) {
        plan_dot_form(m, s, threads, p);
        return;
    }
    if (plan_takes_row_form(m, s, threads)) {
        plan_row_form(m, s, threads, p);
        return;
    }
    if (p->ntiles == 0 || p->npanels == 0 || s->K == 0) {
        p->threads = 1;
        p->split = 'M';
        p->bounds[1] = p->ntiles;
        plan_set_choice(p, 0, 0, PLAN_B_RULES, 'M');
        double f[COST_NFEATURES];
        plan_cost_features(m, s, p, f);
        p->predicted_seconds = cost_predict(&m->cost, f);
        return;
    }

    bool small_m = s->M <= SMALL_M_TILES * m->mr;
    /* A is packed tile by tile, just before its row of B panels: rows of A
     * (contiguous along k) by the register transpose, columns of A^T by
     * copies of mr floats. The copy is read from L1 by every panel after,
     * as one stream of broadcasts instead of mr rows a leading dimension
     * apart (which, at lda 3072, all land on one L1 set). Time packed / in
     * place, 1 and 2 threads, on every shape tried (16 to 1600 rows; N,
     * K 768 to 3072; 1000^3): 0.92 to 1.00, 992x768x3072 0.87 / 0.93. A
     * tile shorter than PACK_A_MIN_ROWS wastes most of a V x V transpose
     * (4x768x768: 1.02 / 1.05), and fewer than PACK_A_MIN_PANELS panels
     * do not repay the copy (attention's P V, N 64: 128x64x128 1.14,
     * 512x64x512 1.10; 128x128x64 1.03, 200x160x64 0.99, 256x256x64
     * 0.94). A^T stays in place for small M, where its columns are read
     * few times. */
    p->pack_a = s->transa ? !small_m
                          : s->M >= PACK_A_MIN_ROWS && p->npanels >= PACK_A_MIN_PANELS;
    const hw_cache *l1 = hw_data_cache(&m->hw, 1);
    bool few_panels = p->npanels <= WHOLE_K_MAX_PANELS &&
                      s->K * p->npanels * p->nr * (int64_t)sizeof(float) <= m->l2_bytes / 2;
    bool one_short_tile = p->ntiles == 1 && s->K <= PLAN_ONE_TILE_WHOLE_K_MAX_ROWS && l1 &&
                          s->M * s->K * (int64_t)sizeof(float) <= l1->size_bytes / 2;
    p->whole_k = s->prepacked_kc == 0 && c->kc == 0 && (few_panels || one_short_tile);
    if (s->prepacked_kc > 0)
        p->kc = s->prepacked_kc;
    else if (c->kc > 0)
        p->kc = even_kc(c->kc, s->K);
    else if (p->whole_k)
        p->kc = s->K;
    else
        p->kc = even_kc(m->kc_for[p->nv], s->K);
    /* A choice of kc alone keeps the B block the rules size for the L2:
     * with the rules' nc, twice their kc made a 3.5 MB block of a 2 MB L2. */
    const hw_cache *l2 = hw_data_cache(&m->hw, 2);
    if (c->nc > 0)
        p->nc = (c->nc + p->nr - 1) / p->nr * p->nr;
    else if (c->kc > 0 && s->prepacked_kc == 0 && l2)
        p->nc = nc_for_kc(m, l2, p);
    else
        p->nc = m->nc_for[p->nv];
    /* B with contiguous rows is read in place, its kc x nc block capped to
     * half the L2 since its rows lie far apart, unless copying it is cheap
     * next to the product. Packed weights are already in panels. A copy
     * that passes the L2 with its source is capped the same way
     * (copy_passes_l2). */
    p->pack_b = !b_read_in_place(m, s, c, p->nv, small_m, threads);
    p->b_from_memory = plan_b_streams(m, s, threads);
    bool streams_in_place = !p->pack_b && p->b_from_memory;
    if (p->pack_b && c->kc == 0 && s->prepacked_kc == 0 && !p->whole_k && !copy_passes_l2(s, p)) {
        p->kc = packed_kc(m->kc_for[p->nv], s->K);
        if (c->nc == 0 && l2)
            p->nc = nc_for_kc(m, l2, p);
    }
    if (streams_in_place) {
        p->whole_k = false;
        p->kc = even_kc(stream_kc(m, s), s->K);
        p->nc = (STREAM_NC + p->nr - 1) / p->nr * p->nr;
        p->b_prefetch_along = STREAM_PREFETCH_BYTES / (int)sizeof(float);
    }
    /* The rules' nc is a bound; the blocks are made equal under it. With
     * B packed, 1 thread, time evened / not: 40, 64, 96 x 2304 x 768
     * (2048 + 256 -> 2 x 1152) 0.90, 0.93, 0.94; 64, 128, 256 x 3072 x
     * 768 (2048 + 1024 -> 2 x 1536) 0.98, 0.98, 0.99; 384 x 3072 x 768
     * 1.00. */
    if (c->nc == 0 && !streams_in_place) {
        int64_t bound = p->nc;
        if (!p->pack_b || copy_passes_l2(s, p)) {
            int64_t half_l2_cols = m->l2_bytes / 2 / (p->kc * (int64_t)sizeof(float));
            half_l2_cols -= half_l2_cols % p->nr;
            if (half_l2_cols >= p->nr && half_l2_cols < bound)
                bound = half_l2_cols;
        }
        int64_t uncapped = even_nc(p->nc, s->N, p->nr);
        p->nc = even_nc(bound, s->N, p->nr);
        p->nc_half_l2 = p->nc < uncapped;
    }
    int lines_a_row = p->nr * (int)sizeof(float) / model_l1(m).line_bytes;
    if (p->pack_b)
        p->b_prefetch = PACKED_PREFETCH_BYTES / (p->nr * (int)sizeof(float)) + 1;
    else if (lines_a_row > 0 && IN_PLACE_PREFETCH_LINES / lines_a_row < IN_PLACE_PREFETCH_MAX_ROWS)
        p->b_prefetch = IN_PLACE_PREFETCH_LINES / lines_a_row;
    else
        p->b_prefetch = IN_PLACE_PREFETCH_MAX_ROWS;
    const hw_cache *l3 = hw_data_cache(&m->hw, 3);
    /* B read in place that a cache keeps: the tiles prefetch it by the
     * rules below (streamed B is prefetched along its rows, above). */
    bool cached_in_place = !p->pack_b && !streams_in_place;
    p->b_unprefetched_stride = 0;
    if (cached_in_place && s->M <= UNPREFETCHED_MAX_ROWS &&
        l1 && l1->ways > 0 && l3 && s->K * s->N * (int64_t)sizeof(float) < l3->size_bytes / 3)
        p->b_unprefetched_stride = l1->size_bytes / l1->ways;
    /* Rows that collide in the L1 (plan_b_rows_collide) also come late from
     * the L2 and L3, where the hardware prefetchers leave them: the first
     * row tile asks for them far ahead (ops/gemm_blocks.c, L2_AHEAD_ROWS). */
    p->b_l2_ahead_stride = cached_in_place ? plan_l1_half_way(m) : 0;
    /* Tiles with long k steps ask for B far ahead into L2 (plan_b.c). */
    p->b_far_step_fmas = cached_in_place ? plan_far_step_fmas(m) : 0;
    p->b_far_fmas = cached_in_place ? plan_far_ahead_fmas(m) : 0;
    p->b_far_any_rows = cached_in_place && plan_far_any_rows(m, p->nv);

    plan_split_grid(m, s, c, threads, tail_nv, p);
    p->b_one_block = false;
    if (c->kc == 0 && c->nc == 0 && s->prepacked_kc == 0 && !streams_in_place) {
        if (b_runs_as_one_block(m, s, p))
            make_one_block(s, p);
        else if (!p->whole_k)
            deepen_kc(m, s, p);
    }
    if (c->nc == 0)
        split_lone_block(s, p);
    p->b_panels_in_l1 = packed_block_in_l1(m, s, p);
    double kblocks = (double)((s->K + p->kc - 1) / p->kc);
    p->calls = (double)p->ntiles * (double)p->npanels * kblocks / p->threads;
    plan_set_choice(p, p->kc, p->nc, p->pack_b ? PLAN_B_PACKED : PLAN_B_IN_PLACE, p->split);
    double f[COST_NFEATURES];
    plan_cost_features(m, s, p, f);
    p->predicted_seconds = cost_predict(&m->cost, f);
}

/* Rows of B (K) a thread takes at the least in a split along K. */
static const int64_t K_SPLIT_MIN_ROWS = 256;
/* Most rows of A in a split along K of deep B from memory. */
static const int64_t K_SPLIT_MAX_ROWS = 512;
/* Up to this many rows of A, any B over K_SPLIT_B_L2S L2s splits K: the
 * rows the streaming row form takes. */
static const int64_t K_SPLIT_TINY_ROWS = 6;
static const int64_t K_SPLIT_B_L2S = 8;
/* One row (the row form) splits K for B of this many L2s or more. */
static const int64_t K_SPLIT_ROW_B_L2S = 1;

/* Whether the threads split K instead of M or N: each then reads its own
 * rows of B, one contiguous stretch, and writes its partial product, the
 * first thread into C, the others into scratch summed into C after
 * (ops/gemm.c). Split along N, each thread reads part of every row of B
 * (a kilobyte and a half of each 3 KB row at 768 columns), which the
 * prefetchers, which run past a part's end into the other thread's,
 * serve badly: two threads reading halves of every 3 KB row of 8 MB got
 * 22 GB/s between them, 74 reading a contiguous half each (AMD EPYC
 * family 23, 2 vCPUs). Along M, both read all of B. Two threads, each
 * half of K as a 1-thread call, partial sums added after, against the
 * library's split along M or N (a program of the public API, GF/s):
 * 1-3 x 768 x 3072 24.8-40.1 against 9.7-17.4, 8-512 x 768 x 3072 +12 to
 * +39%, 1-3 x 3072 x 768 +10 to +34%, 1-3 x 2304 x 768 +5 to +17%, 1 x
 * 1024 x 4096 2x; but 8 x 3072 x 768 -10%, 8-32 x 2304 x 768 -3%, 1-32 x
 * 768 x 768 (B in the L3) -3 to -9%. In one process (make bench-ab),
 * split K / the rules' N at 2 threads: one row, which the row form
 * serves, faster from B of 1 MB up (1 x 512 x 512 +8%, 1 x 768 x 768
 * +18%, 1 x 512 x 1024 +74%, 1 x 1024 x 1024 +61%), 2-3 rows of 768 x 768
 * and 1024 x 1024 level to -11%; 4-6 x 3072 x 768 +31 to +41% and 4 x
 * 2304 x 768 +59% (where N ran the streaming row form), 5-6 x 2304 x 768
 * +3-4%, 8 rows level. The Xeon (model 167, L2 2 MiB), the same way:
 * one row 1 x 512 x 1024 (2 MiB) +107%, 1 x 768 x 768 +38%, 1 x 1024 x
 * 768 +250%, 1 x 1024 x 1024 +160%, 1 x 512 x 512 level; 3 x 1024 x 1024
 * +39%, but 2 and 5 x 768 x 768 -13%, -27%. So: B deep (K >= 2N) and
 * from memory, 1-6 rows of A and B over 8 L2s, one row and B of an L2 or
 * more. Not B^T, whose
 * rows (K long) each thread reads whole, nor pre-packed B, whose panels
 * a thread's columns are contiguous stretches of. */
static bool k_split_pays(const plan_model *m, const gemm_shape *s, int threads)
{
    if (threads < 2 || !plan_b_rows_in_place(s) || s->K / threads < K_SPLIT_MIN_ROWS)
        return false;
    int64_t b_bytes = s->K * s->N * (int64_t)sizeof(float);
    if (s->M <= K_SPLIT_TINY_ROWS && b_bytes > K_SPLIT_B_L2S * m->l2_bytes)
        return true;
    if (s->M == 1 && b_bytes >= K_SPLIT_ROW_B_L2S * m->l2_bytes)
        return true;
    return s->M <= K_SPLIT_MAX_ROWS && s->K >= 2 * s->N && plan_b_streams(m, s, threads);
}

/* The split along K: each thread runs the 1-thread plan of its share,
 * M x N x K / threads; thread t takes rows [bounds[t], bounds[t + 1]) of
 * B. */
static void plan_k_split(const plan_model *m, const gemm_shape *s, int threads,
                         const plan_choice *c, gemm_plan *p)
{
    gemm_shape share = *s;
    share.K = (s->K + threads - 1) / threads;
    plan_choice inner = *c;
    inner.split = 0;
    plan_m_or_n(m, &share, 1, &inner, p);
    p->split = 'K';
    p->threads = threads;
    for (int t = 0; t <= threads; t++)
        p->bounds[t] = s->K * t / threads;
    p->choice.split = 'K';
    double f[COST_NFEATURES];
    plan_cost_features(m, s, p, f);
    p->predicted_seconds = cost_predict(&m->cost, f);
}

void plan_gemm_choice(const plan_model *m, const gemm_shape *s, int threads,
                      const plan_choice *c, gemm_plan *p)
{
    if (threads < 1 || !plan_threads_pay(m, s, 1))
        threads = 1;
    if (threads > PLAN_MAX_THREADS)
        threads = PLAN_MAX_THREADS;
    bool asked = c->split == 'K' && threads > 1 && plan_b_rows_in_place(s) && s->K >= threads;
    if (asked || (c->split == 0 && k_split_pays(m, s, threads)))
        plan_k_split(m, s, threads, c, p);
    else {
        plan_choice grid = *c;
        if (grid.split == 'K') /* asked for where it cannot run: the rules' split */
            grid.split = 0;
        plan_m_or_n(m, s, threads, &grid, p);
    }
}

/* A variant replaces the plan in hand only when predicted this much
 * cheaper. Within one shape the fitted model ranks plans little better
 * than chance (Kendall tau 0.2-0.3 over a shape's top 8, against 0.95
 * across shapes), so smaller predicted gains are mostly its error, and
 * each calibration's weights turned them a different way: with one, the
 * model's plan was within 5% of the best of the top 8 on 123 of 179
 * gemm.txt shapes at 2 threads without the margin, 140 and 144 with it. */
static const double VARIANT_MARGIN = 0.05;

void plan_gemm(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p)
{
    plan_choice rules = {0};
    plan_gemm_choice(m, s, threads, &rules, p);
    if (!m->cost.calibrated)
        return;
    /* Calibrated: the cheapest predicted of the variants it may take.
     * p stays the rules' plan while they are compared (the admissibility
     * rules read it); the best so far and the one being planned take
     * turns in two buffers. */
    plan_choice variants[16];
    int n = plan_variants(m, s, threads, variants, 16);
    gemm_plan buffers[2];
    gemm_plan *best = p, *candidate = &buffers[0];
    for (int i = 1; i < n; i++) {
        if (!plan_variant_admissible(m, p, &variants[i]))
            continue;
        plan_gemm_choice(m, s, threads, &variants[i], candidate);
        if (candidate->predicted_seconds < best->predicted_seconds * (1.0 - VARIANT_MARGIN)) {
            best = candidate;
            candidate = candidate == &buffers[0] ? &buffers[1] : &buffers[0];
        }
    }
    if (best != p)
        memcpy(p, best, sizeof *p);
}
