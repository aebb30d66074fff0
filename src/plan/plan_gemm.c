/*
 * plan_gemm.c - plans one GEMM shape: the tessellation of M by row tiles of
 * several heights (bulk tiles of the main height, then the DP's cheapest
 * cover of the remainder: no padding), the column panels of N (the last
 * one masked), kc/nc, what to pack, and the split across threads that
 * balances predicted time.
 */
#include <stdio.h>
#include <string.h>

#include "plan/candidates.h"
#include "plan/plan.h"

/* At most this many row tiles' worth of rows is "small M": A and B are
 * used so few times that packing them costs more than it saves. */
static const int SMALL_M_TILES = 2;
/* From this many rows and column panels, A with rows contiguous along k
 * is packed. */
static const int64_t PACK_A_MIN_ROWS = 8, PACK_A_MIN_PANELS = 6;
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
/* A plan of one row tile reads each B panel once: no later tile finds
 * the B block in the L2, which is what the rules' kc keeps it there for.
 * K runs in one block up to this many rows, while the tile's A rows fit
 * half the L1. Time K whole / rules' kc, B in place, 2 threads, on the
 * Xeon (model 207): 1x768x768 0.91, 3x768x768 0.91-0.95, 5x768x768
 * 0.91-0.96, 8x768x768 0.97 (bench/compare, M 1-8: 1.07 against oneDNN).
 * There the rule first held only where each thread's share of B stayed
 * in its L2 between calls, as B from L3 gained little or lost
 * (2x2304x768 0.96, 1x3072x768 1.01, 8x3072x768 1.05 at 1 thread); on
 * Zen 4 (1 MiB L2) B from L3 gained on 47 of 48 shapes, two runs of 2-5
 * x 768-3072 x 768: 0.91-1.02 at 1 thread, 0.84-1.00 at 2, so the rule
 * no longer asks it. Deeper, a block of B read in place spans a page or
 * so per row and misses the TLB: 3072 rows took 1.13-1.41x the rules'
 * time (1x768x3072, 8x768x3072). */
static const int64_t ONE_TILE_WHOLE_K_MAX_ROWS = 768;
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
 * (0.97-1.03). One row now takes the row form instead (plan_row), and
 * so do 2-5 rows 2 KiB-multiples apart in a B of over a quarter of the
 * L3 at one thread (b_rows_crowd_l1_sets). */
static const int64_t UNPREFETCHED_MAX_ROWS = 4;
/* Row tiles a thread from which a split along M of B read in place is
 * charged no ragged end (see the split below). */
static const int64_t IN_PLACE_M_MIN_TILES = 2;
/* A split along N is charged this share of its time more where a split
 * along M would hand out STATIC_SPLIT_MIN_TILES row tiles or more a
 * thread: its halves are fixed, so the call ends with the slower thread,
 * and on a shared host one often is; row tiles claimed one at a time let
 * it take fewer. AMD EPYC family 23, a neighbour on the cores, 2
 * threads, against oneDNN (bench/compare, 30 bert-base and dietcode
 * shapes that move): bert-base 0.93-1.01 -> 0.99-1.09, dietcode
 * 0.87-0.96 -> 0.95-1.05 per round; in one process 256 x 2304 x 768,
 * 512 x 768 x 768, 128 x 1024 x 4096 took 0.84-0.86 of the time along M,
 * 100 x 3072 x 768 1.09. Since then a split along N runs its shares in
 * groups a fast thread takes from a slowed one (ops/gemm.c,
 * run_split_n), four a share, coarser than M's row tiles; the slack was
 * not measured again. */
static const double STATIC_SPLIT_SLACK = 0.05;
static const int64_t STATIC_SPLIT_MIN_TILES = 4;
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
 * the tiles run in groups (ops/gemm.c, PANELS_OUTER_MAX_TILES), the
 * later ones reading the block from L2. In one process, AMD EPYC family
 * 23, time in place / packed rows first: 100, 128, 150, 200, 256 x 768 x
 * 3072 0.88, 0.91, 0.93, 0.95, 0.96, 300 rows 1.12; 128, 200 x 1024 x
 * 4096 0.98, 1.00. At 2 threads in place took 1.11-1.47x the time
 * (100-256 rows) in a slow spell and 0.89-0.92 in a quiet one, and a
 * bench/compare against oneDNN swung 0.54-1.46 per round: 2 threads keep
 * 16 until that is measured. Wide B (x 3072 x 768, its block past the
 * L2) took 1.17-1.25x from 100 rows. */
static const int64_t ONE_LINE_DEEP_STREAM_MAX_TILES_1T = 40;
/* B that no cache keeps between calls (larger than this many L2s) comes
 * from memory at the speed of the hardware prefetchers, which follow a
 * few dozen streams, one per row. Read in place, its block is a few rows
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
 * copied rows first (ops/gemm.c, b_from_memory): 128x50257x768 packed
 * / streamed in place went from 1.13-1.17 to 0.86-0.87. The lines were
 * measured on AMD EPYC family 23 (16-wide panels, one line a row, B of
 * 9.4 MB from memory), 64 rows deep against 32, median of three
 * processes, 1 thread: 3, 5, 8 x 3072 x 768 14.8 / 7.4, 20.6 / 11.9,
 * 24.0 / 16.2 GF/s; 2, 3, 8, 12 x 768 x 3072 7.1 / 7.5, 10.1 / 8.7, 17.5 /
 * 17.1, 22.9 / 22.5 (128 rows: 8.1, 11.6, 19.8, 22.1, but 3-8 x 3072 x
 * 768 15.0, 19.6, 20.0); 2 threads, 3 and 8 x 3072 x 768 28-34 / 14-25,
 * 45-47 / 37-44. */
static const int64_t STREAM_B_L2S = 16;
static const int64_t STREAM_LINES = 64, STREAM_NC = 4096;
/* Such a block is read panel by panel: a line or a few of each of its
 * rows, then the next few along. The rows are asked for this many bytes
 * ahead along themselves (four lines), not rows ahead. Time with / without
 * (rows ahead, or none where the rule of UNPREFETCHED_MAX_ROWS says so),
 * AMD EPYC (Zen 3, 16-wide panels, B of 9.4 MB: 16 of its 512 KiB L2s),
 * 1 thread: 8x768x3072 0.41-0.50, 3x3072x768 0.26-0.41. Two lines ahead
 * did as well on one shape, one line and six lost (0.6-0.9). */
static const int STREAM_PREFETCH_BYTES = 256;

/* The depth of a block of B streamed from memory in place: STREAM_LINES
 * lines a panel step, over the lines of a main-tile row. */
static int64_t stream_kc(const plan_model *m)
{
    int64_t line_floats = model_l1(m).line_bytes / (int64_t)sizeof(float);
    int64_t lines = (m->nr + line_floats - 1) / line_floats;
    return STREAM_LINES / (lines > 0 ? lines : 1);
}

/* Whether op(B) can be read in place: its rows contiguous (not B^T) and
 * not pre-packed into panels. */
static bool b_rows_in_place(const gemm_shape *s)
{
    return !s->transb && s->prepacked_kc == 0;
}

/* Whether op(B), rows contiguous and not pre-packed, comes from memory on
 * every call (see STREAM_B_L2S). */
static bool b_streams_from_memory(const plan_model *m, const gemm_shape *s)
{
    return b_rows_in_place(s) &&
           s->K * s->N * (int64_t)sizeof(float) > STREAM_B_L2S * m->l2_bytes;
}

/* Records the knobs a plan was made with. Field by field into the plan,
 * which plan_gemm_choice zeroed: a compound literal's padding is
 * unspecified (clang copied stack bytes into it), and the plan cache and
 * its tests copy and compare plans word for word. */
static void set_choice(gemm_plan *p, int64_t kc, int64_t nc, int pack_b, char split)
{
    p->choice.nv = p->nv;
    p->choice.kc = kc;
    p->choice.nc = nc;
    p->choice.pack_b = pack_b;
    p->choice.split = split;
}

static void add_run(gemm_plan *p, int mr, int64_t count)
{
    if (count <= 0)
        return;
    if (p->nruns > 0 && p->runs[p->nruns - 1].mr == mr) {
        p->runs[p->nruns - 1].count += count;
    } else {
        plan_run *run = &p->runs[p->nruns++];
        run->mr = mr; /* field by field: see set_choice */
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

/* Cycles per k step of an (mr, nv) tile: the rule's, times what
 * calibration measured for that ukernel and A layout. */
static double tile_rate(const plan_model *m, const gemm_plan *p, int nv, int mr)
{
    int layout = p->pack_a ? COST_A_PACKED : COST_A_IN_PLACE;
    return m->tile_cycles[nv][mr] * m->cost.tile_scale[layout][nv][mr];
}

/* Cycles per k step of one row tile across `panels` column panels, the
 * last of which is `tail_nv` vectors wide. */
static double row_tile_cycles(const plan_model *m, const gemm_plan *p, int mr, int tail_nv)
{
    return (double)(p->npanels - 1) * tile_rate(m, p, p->nv, mr) + tile_rate(m, p, tail_nv, mr);
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

/* B read in place is fetched by every thread that reads it, from L3 or
 * memory unless the thread's share stayed in its L2 since the last call:
 * along M each thread reads all of B, along N only its own columns. B
 * that the call packs, shared along M, is fetched the same way: each
 * block from the cache of the thread that packed it (along N each thread
 * packs and keeps its own columns). The
 * rate it is charged at is what the FMAs do not hide, fitted to the
 * differences measured between the two splits: Intel Xeon (model 167, L2
 * 2 MiB), 2 threads, time along N / M in one process, 16 x 768 x 3072
 * 0.82, 32 x 768 x 3072 0.88, 48-64 x 3072 and 2304 x 768 0.88-0.90, 64
 * x 768 x 768 0.92 (its halves of B stay in the L2s), 100-150 x 3072 x
 * 768 0.93-0.95, 150 x 768 x 3072 0.98-1.00, 512 x 768 x 3072 1.01
 * (where packing A twice weighs more). B packed by the call, 2 threads,
 * N / M: 255-384 x 768 x 768 and x 768 x 3072 0.92-0.96, 384-512 x 1024
 * x 1024 and x 1024 x 4096 0.96-0.98; 1296 x 768 x 768 and 512^3, which
 * stay along M, 1.04 and 1.02. Pre-packed panels, read in one run each,
 * went the other way (64-150 x 768 x 768 N / M 1.02-1.06), so they are
 * not charged. */
static const double B_FETCH_GBS = 100.0;

static double b_fetched(const plan_model *m, double b_bytes, int threads, char split)
{
    double share = split == 'N' && threads > 1 ? b_bytes / threads : b_bytes;
    return share <= 0.75 * (double)m->l2_bytes ? 0.0 : share;
}

/* Prefix sums of unit costs for the two ways of splitting. Row tiles: each
 * costs its height's cycles across all panels. Column panels: each costs
 * the sum over row tiles; all equal but the masked last one. The arrays are
 * on the stack up to a size and the split is evenly-by-count past it,
 * which is what balancing gives there anyway. */
enum { SPLIT_EXACT_UNITS = 4096 };

/* Row tiles: the bounds only, what each thread is expected to take; the
 * cost of the split is claimed_rows', since the tiles are handed out. */
static void split_rows(const plan_model *m, const gemm_plan *p, int threads, int tail_nv,
                       int64_t *bounds)
{
    double prefix[SPLIT_EXACT_UNITS + 1];
    int64_t units = p->ntiles;
    if (units > SPLIT_EXACT_UNITS) {
        for (int t = 0; t <= threads; t++)
            bounds[t] = units * t / threads;
        return;
    }
    prefix[0] = 0.0;
    for (int64_t i = 0; i < units; i++) {
        int64_t row;
        int mr;
        plan_tile_rows(p, i, &row, &mr);
        prefix[i + 1] = prefix[i] + row_tile_cycles(m, p, mr, tail_nv);
    }
    balance(units, threads, prefix, bounds);
}

/* A split along M over threads runs with row tiles handed out one at a
 * time (ops/gemm.c), so a thread ends about when the total divided by the
 * threads is done, give or take the tile it took last: half the largest
 * tile on average, and never less than that tile. The static bounds
 * split_rows computes are what each thread is expected to take. Tiles
 * are claimed block by block, so where nothing else holds the threads
 * back the tile taken last is only one k block of it (`last_share` of
 * the tile: B read in place or packed before the call); where they
 * share B packed on the way, the tile that packs each block's panels
 * sets the pace, and the whole tile is charged. */
static double claimed_rows(const plan_model *m, const gemm_plan *p, int threads, int tail_nv,
                           double last_share)
{
    double total = 0.0, largest = 0.0;
    for (int i = 0; i < p->nruns; i++) {
        double tile = row_tile_cycles(m, p, p->runs[i].mr, tail_nv);
        total += (double)p->runs[i].count * tile;
        largest = tile > largest ? tile : largest;
    }
    if (threads <= 1)
        return total;
    double expected = total / threads + 0.5 * largest * last_share;
    return expected > largest ? expected : largest;
}

static double split_cols(const plan_model *m, const gemm_plan *p, int threads, int tail_nv,
                         int64_t *bounds)
{
    double prefix[SPLIT_EXACT_UNITS + 1];
    double full = 0.0, tail = 0.0;
    for (int i = 0; i < p->nruns; i++) {
        full += (double)p->runs[i].count * tile_rate(m, p, p->nv, p->runs[i].mr);
        tail += (double)p->runs[i].count * tile_rate(m, p, tail_nv, p->runs[i].mr);
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
 * cap on nc would then halve. */
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
    return steps + DOT_FOLD_FMAS < steps * padded + PACK_FMAS_PER_FLOAT * (double)s->K / (double)s->M;
}

/* Few rows times B^T: the dot-product tiles read both in place. So does
 * op(B) narrower than a vector at any M (a matrix times a few vectors),
 * where a panel would fill most of its lanes with zeros (128x1x768 took
 * 33 us that way, against 4.6 for oneDNN): B^T read in place, or B
 * transposed first (ops/gemm.c) where it fills at most half the lanes.
 * The copy costs about what 32 rows of A do against it, so a panel that
 * wastes little is kept: 32x15x3072 took 50 us by dot tiles, 45 by one. */
static bool dot_product_plan(const plan_model *m, const gemm_shape *s)
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

/* Dot-product plans: column tiles split evenly over the threads, or row
 * tiles where there are fewer column tiles than threads (a matrix times
 * a vector: 1000x1x1000 ran on one of two threads). */
static void plan_dot(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p)
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
    set_choice(p, p->kc, 0, PLAN_B_RULES, p->split);
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

/* Whether each thread's columns of B outgrow its L2, so that the row
 * form reads them from L3 or memory on every call: it then takes its
 * streaming body, whose runs along whole rows the L2's prefetcher
 * follows, rather than a kilobyte of each row at a time. Time streaming /
 * blocks, Intel Xeon (model 207, L2 2 MiB, L3 reads 29 GB/s), in
 * process, 1 thread: 1x768x768 (B 2.3 MB) 0.75-0.85, 1x1024x1024 0.85-0.90,
 * 1x2304x768 0.80-0.86, 1x3072x768 0.77-0.83, 1x4096x1024 0.75-0.83,
 * 1x1024x4096 0.73-0.79; B inside the L2, 1x512x768 0.92-1.05 and
 * 1x256x768 1.17-1.40. 2 threads:
 * 1x768x768 (1.2 MB a thread) 1.00-1.24, 1x1024x1024 (2 MB) 0.77-0.88,
 * 1x3072x768 0.70-0.72. (On the AMD EPYC, Zen 4 with 1 MiB of L2, the
 * blocks read a 16 MB B at 52 GB/s against the stream's 46: not checked
 * there since.) */
static bool row_b_outgrows_l2(const plan_model *m, const gemm_shape *s, int threads)
{
    int64_t cols = (s->N + threads - 1) / threads;
    return s->K * cols * (int64_t)sizeof(float) > m->l2_bytes;
}

/* Whether op(B) takes more than 1 / parts of the L3. */
static bool b_outgrows_l3_part(const plan_model *m, const gemm_shape *s, int parts)
{
    const hw_cache *l3 = hw_data_cache(&m->hw, 3);
    return l3 && s->K * s->N * (int64_t)sizeof(float) > l3->size_bytes / parts;
}

/* A B of more than half the L3: what stays of it between row steps is
 * then little, and the streaming row form's long runs pay for a few rows
 * (up to ROW_FORM_FULL_L3_MAX_M, see row_form_plan) as they do for B from
 * memory. */
enum { ROW_FORM_FULL_L3_MAX_M = 4 };

/* Whether B's rows, read in place, collide in the L1: a row stride that
 * is a multiple of half an L1 way (2 KiB of 4 KiB here) puts the same
 * column of every row in one or two of its sets, so a panel's k steps
 * evict each other (taking ldb as N, as plans are keyed). Strides of 3
 * KiB (768 floats) spread over four and were not seen to suffer. */
static int64_t l1_half_way(const plan_model *m)
{
    const hw_cache *l1 = hw_data_cache(&m->hw, 1);
    return l1 && l1->ways > 0 ? l1->size_bytes / l1->ways / 2 : 0;
}

static bool b_rows_collide(const plan_model *m, const gemm_shape *s)
{
    int64_t half_way = l1_half_way(m);
    return half_way > 0 && s->N * (int64_t)sizeof(float) % half_way == 0;
}

/* Whether consecutive rows of B (N floats apart: a B of its own), read
 * in place, collide so (Zen 4: 3072 x 768's rows are 12 KiB apart,
 * 1024 x 4096's 16 KiB). A tile reading such a B walks a column strip
 * whose lines crowd a set or two, so the lines it asks for ahead evict
 * each other before use; the row form reads B along its rows instead. */
static bool b_rows_crowd_l1_sets(const plan_model *m, const gemm_shape *s)
{
    return b_rows_in_place(s) && b_rows_collide(m, s);
}

/* Up to this many rows (see plan_row_form_reason). Once the first row
 * tile asked for colliding rows far ahead into L2 (ops/gemm.c,
 * L2_AHEAD_ROWS), the tiles overtook the form at 4 and 5 rows: Zen 4, in
 * one process, 1 thread, medians of three processes, tiles / form speed,
 * 4-5 x 4096 x 1024, x 1024 x 4096, x 3072 x 1024 1.17-1.35, 4 x 3072 x
 * 768 1.56, 5 x 3072 x 768 1.02; at 2 and 3 rows the form still won (2
 * rows 0.73-0.76 without it, 3 rows 0.95-1.08). */
enum { ROW_FORM_CROWDED_MAX_M = 3 };

/* Whether `rows` rows of the row form, each with its share of the
 * form's accumulators, keep enough FMAs in flight (rule 2 of the tiles). */
static bool row_panels_hide_latency(const plan_model *m, int64_t rows)
{
    int vecs = ukernel_row_vecs(m->hw.isa) / (int)rows;
    return model_hides_latency((int)rows, vecs, m->hw.fma_latency_cycles, m->hw.fma_per_cycle);
}

/* A few rows of A times B with contiguous rows: the row form, which reads
 * a kilobyte of each row of B in one run (ukernel_template.h), not a
 * tile's quarter kilobyte. Against oneDNN, bench/compare
 * (`compare-row-form.md`), one row, 1 thread (2): 1x3072x768 0.67 -> 0.98
 * (0.89 -> 1.00), bert-large's one-row layers 0.55-0.77 -> 0.70-0.94
 * (0.62-1.01 -> 0.84-1.08); B in L2 (1x768x768) level. A B from memory
 * takes its streaming body, which also serves 2 to UK_ROW_STREAM_MAX_M
 * rows of a B that streams from memory: its sums stay in registers across
 * 8 rows of B read whole, where the tiles read B a line of a row at a
 * time. AMD EPYC family 23 (B of 9.4 MB, L3 8 MiB), tessel / oneDNN in
 * one process, tiles -> row form, 2-4 rows, 1 thread: x 3072 x 768
 * 0.93-1.05 -> 1.16-1.33, x 768 x 3072 0.58-0.75 -> 0.76-0.94; 2
 * threads 0.75-1.06 -> 1.11-1.37, 0.58-0.69 -> 0.71-0.75. B in L3 went
 * the other way: x 768 x 768 0.91-1.14 -> 0.66-0.76 (2 threads
 * 0.85-1.02 -> 0.65-0.72), x 2304 x 768 mixed. 5 and 6 rows too
 * (medians of three alternating rounds, `compare-rows-stream-5-8.md`, 1
 * thread): 5 x 768 x 3072 0.64 -> 0.77, 5 and 6 x 3072 x 768 0.64-0.67 ->
 * 0.84-0.98; 8 rows went level or worse (0.74 -> 0.73, 1.09 -> 1.02), so
 * the form stops at 6. Reading 16 rows of B a step instead of 8 lost at
 * every count (1 x 768 x 3072 1.00 -> 0.79, `compare-rows-stream-16.md`).
 * A B of more than half the L3 takes the form up to 4 rows: 2-4 x 2304 x
 * 768 (7 MB, L3 8 MiB) 0.72-0.90 -> 0.93-1.08 at 1 thread, 0.81-0.92 ->
 * 0.83-0.96 at 2; 5 and 6 rows lost (0.91-0.92 -> 0.73-0.89,
 * `compare-rows-stream-b-fills-l3.md`). One row over pre-packed B takes
 * the form across its panels (`compare-packed-row-form.md`), and so do up
 * to UK_ROW_MAX_M rows where their share of the form's accumulators
 * hides the FMA latency (row_panels_hide_latency): the tiles read one
 * 32-wide panel at a time, the form several. In one process, Zen 4, 1
 * thread, time row form / tiles: 2 x 768-3072 x 768-3072 0.70-0.77, 3
 * rows 0.56-0.93, 4 rows 0.85-1.01, 5 rows 0.85-0.96, 6 rows 0.66-0.95; 8
 * rows (two vectors a row, as the 8x32 tile) 0.92-1.09, hence 6. Up to
 * ROW_FORM_CROWDED_MAX_M rows of a B whose rows crowd the L1 sets (b_rows_crowd_l1_sets) and
 * that takes over a quarter of the L3 (32 MiB here, which other guests
 * share) stream too: Zen 4, in one process, 1 thread, time row form /
 * tiles 2-5 x 3072 x 768 0.41-0.97 (tiles 27-95 GF/s by the spell, the
 * form 49-98), 3 x 1024 x 4096 and 3 x 4096 x 1024 0.50-0.68; 6 rows
 * 1.00-1.22, rows 9 KiB apart (2304) 1.00-1.13, a 4 MiB B (1024 x 1024)
 * 1.00-1.01, so not those. Against oneDNN (`compare-crowded-rows-row-
 * form.md`, 4 rounds, 1 thread) new / old: 2-4 x 3072 x 768 1.72-1.75, 5
 * rows 0.93 (medians 1.06 against 1.02), bert-large's 2-5 x 1024-4096 x
 * 1024-4096 1.28-2.31. At 2 threads the split along K leaves each thread
 * half of such a B, which keeps tiles: the form over such halves took
 * 0.46-1.52 of their time, in one process, calls alternating, the same
 * shape flipping from run to run (2-4 x 3072 x 768, 2-4 x 4096 x 1024, 3
 * x 1024 x 4096), so no rule there. */
const char *plan_row_form_reason(const plan_model *m, const gemm_shape *s)
{
    if (s->N <= 0 || s->K <= 0 || s->M < 1)
        return NULL;
    if (s->prepacked_kc > 0) {
        if (s->M == 1)
            return "one row";
        return s->M <= UK_ROW_MAX_M && row_panels_hide_latency(m, s->M)
                   ? "each row's share of the accumulators hides the FMA latency"
                   : NULL;
    }
    if (!b_rows_in_place(s))
        return NULL;
    if (s->M == 1)
        return "one row";
    if (s->M <= UK_ROW_STREAM_MAX_M && b_streams_from_memory(m, s))
        return "B comes from memory";
    if (s->M <= ROW_FORM_FULL_L3_MAX_M && b_outgrows_l3_part(m, s, 2))
        return "B takes over half the L3";
    if (s->M <= ROW_FORM_CROWDED_MAX_M && b_rows_crowd_l1_sets(m, s) &&
        b_outgrows_l3_part(m, s, 4))
        return "B's rows crowd one or two L1 sets and B takes over a quarter of the L3";
    return NULL;
}

static bool row_form_plan(const plan_model *m, const gemm_shape *s)
{
    return plan_row_form_reason(m, s) != NULL;
}

/* Row plans: the columns, in whole vectors (pre-packed B: in its
 * panels), split evenly over the threads; K runs whole (pre-packed: in
 * its blocks), nothing is packed. */
static void plan_row(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p)
{
    bool panels = s->prepacked_kc > 0;
    p->row = true;
    p->kc = panels ? s->prepacked_kc : s->K;
    p->nr = panels ? m->nr : m->vec;
    p->npanels = (s->N + p->nr - 1) / p->nr;
    p->ntiles = 1;
    p->split = 'N';
    p->threads = threads < p->npanels ? threads : (int)p->npanels;
    /* Several rows of A only the streaming body takes. */
    p->b_from_memory = !panels && (s->M > 1 || b_streams_from_memory(m, s) ||
                                   row_b_outgrows_l2(m, s, p->threads));
    for (int t = 0; t <= p->threads; t++)
        p->bounds[t] = p->npanels * t / p->threads;
    set_choice(p, p->kc, 0, PLAN_B_RULES, p->split);
    double vectors = (double)((s->N + m->vec - 1) / m->vec);
    p->fma_cycles = (double)s->M * vectors * (double)s->K / m->hw.fma_per_cycle / p->threads;
    p->calls = 1.0;
    double f[COST_NFEATURES];
    plan_cost_features(m, s, p, f);
    p->predicted_seconds = cost_predict(&m->cost, f);
}

/* The clock the rules count cycles at: the cost model's, which is the
 * calibration's where there is one. The context's own probe reads
 * 2.18-2.36 GHz from one process to the next here (and 2.8-3.0 an hour
 * later), enough to turn the rules' packing and split choices on 511 x
 * 768 x 768 and 1600 x 3072 x 768 at 2 threads. */
static double clock_hz(const plan_model *m)
{
    return m->cost.ghz * 1e9;
}

/* One core's FMA peak in flops a second, at the model's clock. */
static double peak_flops(const plan_model *m)
{
    return clock_hz(m) * m->hw.fma_per_cycle * 2.0 * m->vec;
}

/* What both rules below ask first: op(B) rows read as they are (not
 * transposed, not pre-packed), and a built widest tile wider than the
 * model's. */
static bool widest_tile_may_read_b(const plan_model *m, const gemm_shape *s)
{
    return b_rows_in_place(s) && UK_MAX_NV > m->nv && m->bulk_mr[UK_MAX_NV] > 0;
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
    return b_rows_in_place(s) && m->nv > 1 && s->M > m->mr &&
           s->M <= narrow_mr && model_tile_verdict(m, narrow_mr, 1).failed == TILE_RULE_PASSES;
}

/* On one thread, with one FMA pipe, a few rows more than the pipe keeps
 * in flight (5-8 on Zen 4's AVX-512: latency 4 times 1 FMA a cycle)
 * reading a shallow B in place whose rows spread over the L1 sets take
 * the 16-wide tile: one chain a row is enough, and a panel one line wide
 * reads each row's line once, the next panel's line already fetched
 * beside it. Time 16 wide / the rules' (64 wide up to 6 rows, then 32 or
 * 48), AMD EPYC family 25, medians of three processes, 1 thread: 5-6 x
 * 768 x 768 and x 2304 x 768 0.92-0.94, 7-8 rows 0.96-1.01; 2 threads
 * 0.98-1.02, so one thread only. B of short rows (short_b_rows_go_wide)
 * takes the widest tile instead: 12 x (M x 64 x M), time 64 / 16 wide,
 * medians of five processes, M = 5, 6, 7: 0.87, 0.94, 0.88; 12 x
 * (8x128x8) 0.57. It lost where K is deep (6 and 8 x 768
 * x 3072 1.01-1.10: each panel's rows span more pages, as in
 * ONE_TILE_WHOLE_K_MAX_ROWS), where rows collide (x 3072 x 768, 12 KiB
 * apart: 1.10-1.53), at 4 rows (4 chains for a latency of 4: 1.03) and
 * from 12 rows (1.01-1.02). */
static bool few_rows_go_narrow(const plan_model *m, const gemm_shape *s, int threads)
{
    double in_flight = m->hw.fma_latency_cycles * m->hw.fma_per_cycle;
    return threads == 1 && m->hw.fma_per_cycle < 2.0 && m->nv > 1 && b_rows_in_place(s) &&
           (double)s->M > in_flight && (double)s->M <= 2.0 * in_flight &&
           s->K <= ONE_TILE_WHOLE_K_MAX_ROWS && !b_rows_collide(m, s) &&
           model_tile_verdict(m, (int)s->M, 1).failed == TILE_RULE_PASSES;
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
    if (!b_rows_in_place(s) || (!two_pipes && (double)(s->M * m->nv) >= in_flight))
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
 * time). Not measured with one FMA pipe (Zen 4's AVX-512), which keeps
 * its rules. The width, or 0 where no wider tile qualifies. */
static int two_tiles_width(const plan_model *m, const gemm_shape *s)
{
    int main_mr = m->bulk_mr[m->nv];
    if (!b_rows_in_place(s) || main_mr <= 0 || m->hw.fma_per_cycle < 2.0)
        return 0;
    int64_t tiles = (s->M + main_mr - 1) / main_mr;
    return tiles == 2 ? widest_in_tiles(m, s, 2) : 0;
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
 * (ops/gemm.c); before, 64 against 32 wide went either way. B that is
 * a slice of wider rows (V of one head in a 768-wide matrix, ldb 768,
 * rows 3 KB apart and prefetched) gets the same plan, and there 64 wide
 * in place took 0.90-0.99 the time of 32 wide, in place or packed
 * (12 x (M x 64 x M), M = 43, 128, 512). Against
 * oneDNN, BERT's P V rose 1.09x / 1.12x at 1 / 2 threads
 * (`compare-one-widest-panel.md`), Llama's 1.10x (head size 128,
 * `compare-short-b-rows-wide.md`). */
static bool short_b_rows_go_wide(const plan_model *m, const gemm_shape *s)
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
 * whose rows crowd the L1 sets (b_rows_crowd_l1_sets), take that width:
 * each k step reads three lines of a crowded row where the 32-wide tile
 * reads two, and A's elements are read in fewer panels. Time 48 / 32
 * wide in one process (make bench-ab), Zen 4, 1 / 2 threads: 7-9 x 3072
 * x 768 0.89-0.92 / 0.89-1.03, 7 and 9 x 4096 x 1024 0.78-0.89 / 0.83,
 * 8 x 1024 x 4096 0.88 / 0.96; where the rows do not crowd, 7 x 768 x 768
 * and x 2304 x 768, it lost (1.04 / 1.03-1.07), so those keep the rules'
 * width. The width, or 0. */
static int crowded_rows_width(const plan_model *m, const gemm_shape *s)
{
    return b_rows_crowd_l1_sets(m, s) ? widest_in_tiles(m, s, 1) : 0;
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
 * packs all of it for itself (ops/gemm.c, own_panel), where two panels
 * split along N give each its own (64x40x256 at 2 threads 1.04 -> 0.81
 * in a round before). N = 64 or 128 take the widest tile by the rule of
 * short rows above. */
static int choose_width(const plan_model *m, const gemm_shape *s, const plan_choice *c,
                        int threads)
{
    if (s->prepacked_kc > 0)
        return m->nv;
    int64_t one_panel = (s->N + m->vec - 1) / m->vec;
    bool masked_in_place = !s->transb && s->N % m->vec != 0;
    if (one_panel > m->nv && one_panel <= UK_MAX_NV && m->bulk_mr[one_panel] > 0 &&
        s->N % m->nr != 0 && (threads == 1 || !masked_in_place))
        return (int)one_panel;
    if (c->nv == 0 && short_b_rows_go_wide(m, s))
        return UK_MAX_NV;
    if (c->nv == 0 && few_rows_go_narrow(m, s, threads))
        return 1;
    if (c->nv == 0 && short_tile_goes_wide(m, s))
        return UK_MAX_NV;
    int few_rows_nv = c->nv == 0 ? few_rows_width(m, s) : 0;
    if (few_rows_nv > 0)
        return few_rows_nv;
    int crowded_nv = c->nv == 0 ? crowded_rows_width(m, s) : 0;
    if (crowded_nv > 0)
        return crowded_nv;
    if (c->nv == 0 && one_narrow_tile_covers(m, s))
        return 1;
    int two_tiles_nv = c->nv == 0 ? two_tiles_width(m, s) : 0;
    if (two_tiles_nv > 0)
        return two_tiles_nv;
    if (c->nv < 1 || c->nv > UK_MAX_NV || m->bulk_mr[c->nv] == 0)
        return m->nv;
    return c->nv;
}

/* Whether B is read in place: as chosen where that is possible (rows of
 * op(B) contiguous, not pre-packed), else by the rule of the comment
 * below. */
static bool b_read_in_place(const plan_model *m, const gemm_shape *s, const plan_choice *c,
                            int nv, bool small_m, int threads)
{
    if (!b_rows_in_place(s))
        return false;
    if (c->pack_b == PLAN_B_IN_PLACE)
        return true;
    if (c->pack_b == PLAN_B_PACKED)
        return false;
    if (short_b_rows_go_wide(m, s) && nv == UK_MAX_NV)
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
        if (!b_streams_from_memory(m, s))
            return small_m;
        int64_t deep = threads == 1 ? ONE_LINE_DEEP_STREAM_MAX_TILES_1T
                                    : ONE_LINE_DEEP_STREAM_MAX_TILES;
        int64_t tiles = s->K >= s->N ? deep : STREAM_IN_PLACE_MAX_TILES;
        return s->M <= tiles * m->mr;
    }
    /* B is packed by the first row tile as it reads it (ops/gemm.c), so
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
     * (b_rows_collide), is packed from small M up: 2 threads, 32-992 x
     * 3072 x 768 0.87-0.90, 32-150 x 4096 x 1024 0.81-0.90, 100-992 x 2304
     * x 768 0.92-0.94 (32-64 rows 0.95-1.00), 1 thread 32-256 x 1024 x
     * 1024, x 1024 x 4096 and x 2048 x 2048 0.87-0.93, x 512 x 512
     * 0.87-0.91. B streamed from memory (b_streams_from_memory) comes
     * once a call either way, and its copy pays from more rows: 1 / 2
     * threads, 32, 64, 80, 96, 112, 128 x 50257 x 768 (gpt2's head),
     * packed / in place 1.32 / 1.36, 1.13 / 1.14, 1.03 / 1.05, 1.00 /
     * 1.00, 0.96 / 0.98, 0.94 / 0.96. */
    if (b_streams_from_memory(m, s))
        return s->M <= STREAM_IN_PLACE_MAX_TILES * m->mr;
    int64_t l2_fed_tiles = threads > 1 ? L2_FED_IN_PLACE_MAX_TILES_THREADS
                                       : L2_FED_IN_PLACE_MAX_TILES;
    if (m->l2_feeds_tile && s->M <= l2_fed_tiles * m->mr)
        return true;
    if (s->N > s->K || b_rows_collide(m, s))
        return small_m;
    return s->M <= DEEP_IN_PLACE_MAX_TILES * m->mr;
}

/* Below this many row tiles a block's first tile, which copies B as it
 * reads it, is a large share of the block's time (copy_passes_l2). */
static const int64_t COPY_PASS_MAX_TILES = 12;

/* B packed by the first row tile of each block, as it reads it or (B^T)
 * panel by panel just before (ops/gemm.c), passes the L2 twice over: its
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
 * (WHOLE_B_L3_PARTS; N may then be cut for the threads, split_lone_block). */
static bool b_runs_as_one_block(const plan_model *m, const gemm_shape *s, const gemm_plan *p)
{
    const hw_cache *l3 = hw_data_cache(&m->hw, 3);
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
    return model_nc(l2, hw_data_cache(&m->hw, 3), p->kc, m->bulk_mr[p->nv], p->nr);
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
    p->nv = choose_width(m, s, c, threads);
    p->nr = p->nv * m->vec;

    p->npanels = (s->N + p->nr - 1) / p->nr;
    int64_t tail_cols = s->N - (p->npanels - 1) * p->nr;
    int tail_nv = (int)((tail_cols + p->vec - 1) / p->vec);
    /* A single narrow panel is tessellated for its own width. */
    tessellate_rows(m, p->npanels == 1 ? tail_nv : p->nv, s->M, p);
    if (dot_product_plan(m, s)) {
        plan_dot(m, s, threads, p);
        return;
    }
    if (row_form_plan(m, s)) {
        plan_row(m, s, threads, p);
        return;
    }
    if (p->ntiles == 0 || p->npanels == 0 || s->K == 0) {
        p->threads = 1;
        p->split = 'M';
        p->bounds[1] = p->ntiles;
        set_choice(p, 0, 0, PLAN_B_RULES, 'M');
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
    bool one_short_tile = p->ntiles == 1 && s->K <= ONE_TILE_WHOLE_K_MAX_ROWS && l1 &&
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
    p->b_from_memory = b_streams_from_memory(m, s);
    bool streams_in_place = !p->pack_b && p->b_from_memory;
    if (p->pack_b && c->kc == 0 && s->prepacked_kc == 0 && !p->whole_k && !copy_passes_l2(s, p)) {
        p->kc = packed_kc(m->kc_for[p->nv], s->K);
        if (c->nc == 0 && l2)
            p->nc = nc_for_kc(m, l2, p);
    }
    if (streams_in_place) {
        p->whole_k = false;
        p->kc = even_kc(stream_kc(m), s->K);
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
    p->b_unprefetched_stride = 0;
    if (!p->pack_b && !streams_in_place && s->M <= UNPREFETCHED_MAX_ROWS &&
        l1 && l1->ways > 0 && l3 && s->K * s->N * (int64_t)sizeof(float) < l3->size_bytes / 3)
        p->b_unprefetched_stride = l1->size_bytes / l1->ways;
    /* Rows that collide in the L1 (b_rows_collide) also come late from
     * the L2 and L3, where the hardware prefetchers leave them: the first
     * row tile asks for them far ahead (ops/gemm.c, L2_AHEAD_ROWS). */
    p->b_l2_ahead_stride = !p->pack_b && !streams_in_place ? l1_half_way(m) : 0;

    /* Threads: try both splits, keep the one predicted to end first
     * unless the choice names one. The threads of a split along M pack
     * one shared B between them; along N, each packs all of A. */
    int t_m = threads < p->ntiles ? threads : (int)p->ntiles;
    int t_n = threads < p->npanels ? threads : (int)p->npanels;
    int64_t bounds_m[PLAN_MAX_THREADS + 1], bounds_n[PLAN_MAX_THREADS + 1];
    double bytes_a = p->pack_a ? (double)s->M * s->K * 8 : 0.0; /* read + write */
    double bytes_b = p->pack_b && !s->prepacked_kc ? (double)s->K * s->N * 8 : 0.0;
    double per_pack_byte = clock_hz(m) / m->pack_bytes_per_second;
    split_rows(m, p, t_m, tail_nv, bounds_m);
    bool waits_on_packer = p->pack_b && s->prepacked_kc == 0;
    /* With B read in place and two row tiles or more a thread, the end
     * is not charged at all: the half k block a thread may wait made N
     * win where M measured 4-15% faster (56-100 x 768 x 768 at 2
     * threads, Xeon model 207; at 17-31 rows, a tile or so a thread, N
     * stays 5-18% faster). On the Xeon model 167 the same shapes ran
     * 4-9% faster along N, which the fetch of B below now charges
     * (b_fetched). */
    bool many_tiles = !p->pack_b && p->ntiles >= IN_PLACE_M_MIN_TILES * t_m;
    double last_share = waits_on_packer ? 1.0
                        : many_tiles    ? 0.0
                                        : (double)p->kc / (double)s->K;
    double fma_m = claimed_rows(m, p, t_m, tail_nv, last_share) * (double)s->K;
    double fma_n = split_cols(m, p, t_n, tail_nv, bounds_n) * (double)s->K;
    double cost_m = fma_m + (bytes_b + bytes_a) / t_m * per_pack_byte;
    double cost_n = fma_n + (bytes_a + bytes_b / t_n) * per_pack_byte;
    double per_fetch_byte = clock_hz(m) / (B_FETCH_GBS * 1e9);
    double b_bytes = (double)s->K * (double)s->N * sizeof(float);
    if (!p->pack_b) {
        cost_m += b_fetched(m, b_bytes, t_m, 'M') * per_fetch_byte;
        cost_n += b_fetched(m, b_bytes, t_n, 'N') * per_fetch_byte;
    } else if (waits_on_packer && t_m > 1) {
        cost_m += b_fetched(m, b_bytes, t_m, 'M') * per_fetch_byte;
    }
    if (t_n > 1 && p->ntiles >= STATIC_SPLIT_MIN_TILES * t_m)
        cost_n *= 1.0 + STATIC_SPLIT_SLACK;
    /* B streamed in place splits along N: each thread then runs its
     * columns' blocks panels outermost (ops/gemm.c), where a split along
     * M shares each block's panels across the threads tile by tile. In
     * one process, 2 threads, time along N / along M: 50, 64, 90 x 768 x
     * 3072 0.88, 0.89, 0.92; 24, 40 x 3072 x 768 0.88, 0.95. */
    bool along_m = c->split == 'M' ||
                   (c->split != 'N' && !(streams_in_place && t_n > 1) && cost_m <= cost_n);
    p->split = along_m ? 'M' : 'N';
    p->threads = along_m ? t_m : t_n;
    memcpy(p->bounds, along_m ? bounds_m : bounds_n, sizeof(int64_t) * (size_t)(p->threads + 1));
    p->fma_cycles = along_m ? fma_m : fma_n;
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
    set_choice(p, p->kc, p->nc, p->pack_b ? PLAN_B_PACKED : PLAN_B_IN_PLACE, p->split);
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
/* One row (the row form) splits K for B over this many L2s. */
static const int64_t K_SPLIT_ROW_B_L2S = 2;

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
 * +3-4%, 8 rows level. So: B deep (K >= 2N) and from memory, 1-6 rows of
 * A and B over 8 L2s, one row and B over 2. Not B^T, whose
 * rows (K long) each thread reads whole, nor pre-packed B, whose panels
 * a thread's columns are contiguous stretches of. */
static bool k_split_pays(const plan_model *m, const gemm_shape *s, int threads)
{
    if (threads < 2 || !b_rows_in_place(s) || s->K / threads < K_SPLIT_MIN_ROWS)
        return false;
    int64_t b_bytes = s->K * s->N * (int64_t)sizeof(float);
    if (s->M <= K_SPLIT_TINY_ROWS && b_bytes > K_SPLIT_B_L2S * m->l2_bytes)
        return true;
    if (s->M == 1 && b_bytes > K_SPLIT_ROW_B_L2S * m->l2_bytes)
        return true;
    return s->M <= K_SPLIT_MAX_ROWS && s->K >= 2 * s->N && b_streams_from_memory(m, s);
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
    bool asked = c->split == 'K' && threads > 1 && b_rows_in_place(s) && s->K >= threads;
    if (asked || (c->split == 0 && k_split_pays(m, s, threads)))
        plan_k_split(m, s, threads, c, p);
    else {
        plan_choice grid = *c;
        if (grid.split == 'K') /* asked for where it cannot run: the rules' split */
            grid.split = 0;
        plan_m_or_n(m, s, threads, &grid, p);
    }
}

int plan_variants(const plan_model *m, const gemm_shape *s, int threads, plan_choice *out,
                  int max)
{
    int n = 0;
    if (max < 1)
        return 0;
    out[n++] = (plan_choice){0};
    if (dot_product_plan(m, s) || row_form_plan(m, s) || s->M == 0 || s->N == 0 || s->K == 0)
        return n;
    plan_choice more[3 * UK_MAX_NV + 8];
    int k = 0;
    if (s->prepacked_kc == 0) {
        /* Other widths whose main tile the rules accept: a width they
         * reject (16 wide here: a k step's broadcasts outlast its FMAs)
         * only looked cheap to a calibrated model, and measured 1.1-1.5x
         * the time of the rules' width (64x768x3072 at 2 threads). */
        for (int nv = 1; nv <= UK_MAX_NV; nv++)
            if (nv != m->nv && m->bulk_mr[nv] > 0 &&
                model_tile_verdict(m, m->bulk_mr[nv], nv).failed == TILE_RULE_PASSES)
                more[k++] = (plan_choice){.nv = nv};
        more[k++] = (plan_choice){.kc = m->kc / 2};
        more[k++] = (plan_choice){.kc = m->kc * 2};
    }
    more[k++] = (plan_choice){.nc = m->nc / 2};
    if (b_rows_in_place(s)) {
        more[k++] = (plan_choice){.pack_b = PLAN_B_IN_PLACE};
        more[k++] = (plan_choice){.pack_b = PLAN_B_PACKED};
    }
    if (threads > 1) {
        more[k++] = (plan_choice){.split = 'M'};
        more[k++] = (plan_choice){.split = 'N'};
    }
    for (int i = 0; i < k && n < max; i++)
        out[n++] = more[i];
    return n;
}

/* Below this much work on one thread, a call runs on the caller alone:
 * waking a thread and sharing counters with it cost more than it gives.
 * Each matrix costs SECONDS_PER_MATRIX beyond its flops (192 x (5x64x5)
 * took 16-23 us on one thread, 3.6 of them flops). Time on 1 thread, 2
 * threads: 12 x (5x64x5) 1.0 us, 3.1 us; 12 x (1x64x1) 0.6, 2.4; 12 x
 * (24x64x24) 8.6, 8.1-8.9; 192 x (5x64x5) 16-23, 13-15; one 64^3 4.0,
 * 4.5; one 127^3 28-30, 27. */
static const double THREADS_MIN_SECONDS = 4e-6;
static const double SECONDS_PER_MATRIX = 0.1e-6;

bool plan_threads_pay(const plan_model *m, const gemm_shape *s, int64_t batch)
{
    double flops = 2.0 * (double)s->M * (double)s->N * (double)s->K;
    return (double)batch * (flops / peak_flops(m) + SECONDS_PER_MATRIX) >= THREADS_MIN_SECONDS;
}

/* A variant replaces the plan in hand only when predicted this much
 * cheaper. Within one shape the fitted model ranks plans little better
 * than chance (Kendall tau 0.2-0.3 over a shape's top 8, against 0.95
 * across shapes), so smaller predicted gains are mostly its error, and
 * each calibration's weights turned them a different way: with one, the
 * model's plan was within 5% of the best of the top 8 on 123 of 179
 * gemm.txt shapes at 2 threads without the margin, 140 and 144 with it. */
static const double VARIANT_MARGIN = 0.05;

bool plan_variant_admissible(const plan_model *m, const gemm_plan *rules,
                             const plan_choice *v)
{
    /* How B is read and how the threads split the work stay the rules'.
     * Their thresholds were set by measurement, and what decides them
     * (load balance as threads claim row tiles, a core slowed by the
     * host, rows of B far apart in the caches) is what the fitted weights
     * see least. In-process A/B at 2 threads of every gemm.txt shape where
     * a calibration of today left the rules on either, model / rules
     * time: along N instead of M 0.97-1.02 at 43-80 x 768 x 768 and
     * 992-1600 x 2304-3072 x 768, 1.13 at 1904 x 3072 x 768, 1.17-1.23 at
     * 31-32 x 768 x 3072; B packed instead of in place 1.03-1.05 (511-512
     * x 768 x 768-3072, 512^3), 0.99-1.00 with the split changed too (512 x
     * 1024 x 1024-4096). In top-8 runs before, where the rules packed and
     * the model read in place, the fastest plan packed in 51 of 53
     * verdicts; B of short rows, which the rules read in place, it once
     * packed (128x64x128, 1.12x the time). (A variant asking for what the
     * rules chose is their plan again, not planned twice.) */
    bool b_or_split = v->pack_b || v->split;
    /* The tile width stays the rules' too. The tile rates are measured in
     * L1, and the fitted weights do not see what a wider panel costs in
     * place: its B block and copies in the L2, a row of three lines where
     * the hardware fetches pairs. With one calibration of today (2
     * threads, held-out MAPE 11%) the model took 48-wide tiles on 139 of
     * the 179 gemm.txt shapes and missed the best of the top 8 by more
     * than 5% on 49 of them (up to 1.67x: 50-119 x 2304-3072 x 768), 122
     * within 5% in all, against 166 in a run where an older calibration
     * had left the width alone. Before: one row tile reading B in place
     * took 1.05-1.26x the time 48 wide (1x768x3072, 2x768x3072,
     * 3x2304x768, 1x3072x1024), and B of short rows, the widest tile's,
     * was once given 48-wide panels packed (512x64x512). */
    bool other_width = v->nv && v->nv != rules->nv;
    /* The doubled kc is not taken either (tune --shapes still measures
     * it; B in panels runs it by rule, packed_kc, where the variant is the
     * rules' plan again): past the model's kc the A micro-panel no longer stays (or
     * no longer fits) in L1 while B streams by, which no feature sees,
     * while the fitted weight of C (1.1-3.3 in today's calibrations)
     * makes halving the passes over C look like a gain. It was the
     * model's plan in most of its misses; without it, 140 of the 179
     * gemm.txt shapes were within 5% of the best of the top 8 at 2
     * threads, against 124-128 in three runs with it. */
    bool deeper = v->kc > m->kc;
    return !(b_or_split || other_width || deeper);
}

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

/* ---- the stored form of a choice ---- */

int plan_choice_format(const plan_choice *c, char *buf, size_t len)
{
    const char *b = c->pack_b == PLAN_B_PACKED ? "packed"
                    : c->pack_b == PLAN_B_IN_PLACE ? "in_place" : "rules";
    char split[2] = {c->split ? c->split : '-', '\0'};
    int n = snprintf(buf, len, "nv=%d kc=%lld nc=%lld b=%s split=%s", c->nv, (long long)c->kc,
                     (long long)c->nc, b, split);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

bool plan_choice_equal(const plan_choice *x, const plan_choice *y)
{
    return x->nv == y->nv && x->kc == y->kc && x->nc == y->nc && x->pack_b == y->pack_b &&
           x->split == y->split;
}

int plan_choice_parse(const char *text, plan_choice *out)
{
    int nv, used = 0;
    long long kc, nc;
    char b[16], split[4];
    if (sscanf(text, "nv=%d kc=%lld nc=%lld b=%15s split=%3s%n", &nv, &kc, &nc, b, split,
               &used) != 5 || text[used] != '\0')
        return -1;
    plan_choice c = {.nv = nv, .kc = kc, .nc = nc};
    if (nv < 0 || nv > UK_MAX_NV || kc < 0 || kc > (1 << 20) || nc < 0 || nc > (1 << 24))
        return -1;
    if (strcmp(b, "packed") == 0)
        c.pack_b = PLAN_B_PACKED;
    else if (strcmp(b, "in_place") == 0)
        c.pack_b = PLAN_B_IN_PLACE;
    else if (strcmp(b, "rules") != 0)
        return -1;
    if (strcmp(split, "M") == 0 || strcmp(split, "N") == 0 || strcmp(split, "K") == 0)
        c.split = split[0];
    else if (strcmp(split, "-") != 0)
        return -1;
    *out = c;
    return 0;
}
