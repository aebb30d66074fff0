/*
 * plan_b.c - where op(B) lies, as the planner's rules ask it: read in
 * place or not, from memory on every call or kept by a cache, whether
 * its rows, a fixed stride apart, fall into the same few L1 sets, and
 * whether a tile reading it in place asks for it far ahead into L2. Plans
 * are keyed by shape, so a row stride here is N floats (ldb taken as N).
 */
#include "plan/candidates.h"
#include "plan/plan_rules.h"

/* B larger than this many L2s is taken to come from memory on every
 * call: no cache keeps it between calls, and read in place it is
 * blocked to stream along its rows (plan_gemm.c, STREAM_LINES, where
 * the blocking and this bound were measured). */
static const int64_t STREAM_B_L2S = 16;

/* Whether op(B) can be read in place: its rows contiguous (not B^T) and
 * not pre-packed into panels. */
bool plan_b_rows_in_place(const gemm_shape *s)
{
    return !s->transb && s->prepacked_kc == 0;
}

/* Whether op(B), rows contiguous and not pre-packed, comes from memory on
 * every call. */
bool plan_b_streams_from_memory(const plan_model *m, const gemm_shape *s)
{
    return plan_b_rows_in_place(s) &&
           s->K * s->N * (int64_t)sizeof(float) > STREAM_B_L2S * m->l2_bytes;
}

/* Where the L3 does not feed the tiles (model.c, model_l3_feeds_tile), a
 * B whose share a thread is over this many L2s is read as if from memory
 * by up to this many row tiles of the main tile's height: such an L3
 * reads at near memory's rate (the Xeon model 167: L3 30 GB/s, DRAM 16,
 * L2 163), and the tiles, reading a few lines of each row, did not keep
 * enough of it in flight. There, in separate processes alternating, time
 * streamed / as before, 1 thread: 5, 8, 16, 24 x 3072 x 768 0.79, 0.74,
 * 0.83, 0.86; 16x768x3072 0.89, 17x4096x1024 0.87; 2 and 3 rows 0.93;
 * 8x2304x768 0.92, 2-24 rows of it level; 2 threads (4.7 MB a thread)
 * 16-24 x 3072 x 768 0.96-0.99, 16x768x3072 0.87, 17x4096x1024 0.93, 8
 * rows 0.98, 3 rows level. Past two tiles it lost (32 rows level; 43,
 * 50, 64 rows 1.05, 1.13, 1.20 at 1 thread, 64 rows 1.27 at 2), where
 * the rows of each L2-sized block serve more tiles; and so did shares
 * under two L2s: 2 threads, 2-13 x 2304 x 768 (3.5 MB a thread)
 * 1.13-1.36, 8-16 x 768 x 768 (1.2 MB) 1.22-1.94. On more threads 2-6
 * rows, each thread running the row form over its columns, went either
 * way (2 x 3072 x 768 and x 768 x 3072 1.12 and 1.08, 3-5 rows
 * 0.94-1.05), so there it starts past the row form's rows. */
static const int64_t STREAM_L3_B_L2S = 2;
static const int64_t STREAM_L3_MAX_TILES = 2;

bool plan_b_streams(const plan_model *m, const gemm_shape *s, int threads)
{
    if (plan_b_streams_from_memory(m, s))
        return true;
    int64_t share = s->K * s->N * (int64_t)sizeof(float) / (threads > 1 ? threads : 1);
    int64_t least_rows = threads > 1 ? UK_ROW_STREAM_MAX_M + 1 : 1;
    return plan_b_rows_in_place(s) && !m->l3_feeds_tile &&
           share > STREAM_L3_B_L2S * m->l2_bytes && s->M >= least_rows &&
           s->M <= STREAM_L3_MAX_TILES * m->mr;
}

/* Whether op(B) takes more than 1 / parts of the L3. */
bool plan_b_outgrows_l3_part(const plan_model *m, const gemm_shape *s, int parts)
{
    const hw_cache *l3 = hw_data_cache(&m->hw, 3);
    return l3 && s->K * s->N * (int64_t)sizeof(float) > l3->size_bytes / parts;
}

/* Whether B's rows, read in place, collide in the L1: a row stride that
 * is a multiple of half an L1 way (2 KiB of 4 KiB here) puts the same
 * column of every row in one or two of its sets, so a panel's k steps
 * evict each other (taking ldb as N, as plans are keyed). Strides of 3
 * KiB (768 floats) spread over four and were not seen to suffer. */
int64_t plan_l1_half_way(const plan_model *m)
{
    const hw_cache *l1 = hw_data_cache(&m->hw, 1);
    return l1 && l1->ways > 0 ? l1->size_bytes / l1->ways / 2 : 0;
}

bool plan_b_rows_collide(const plan_model *m, const gemm_shape *s)
{
    int64_t half_way = plan_l1_half_way(m);
    return half_way > 0 && s->N * (int64_t)sizeof(float) % half_way == 0;
}

/* Whether consecutive rows of B (N floats apart: a B of its own), read
 * in place, collide so (Zen 4: 3072 x 768's rows are 12 KiB apart,
 * 1024 x 4096's 16 KiB). A tile reading such a B walks a column strip
 * whose lines crowd a set or two, so the lines it asks for ahead evict
 * each other before use; the row form reads B along its rows instead. */
bool plan_b_rows_crowd_l1_sets(const plan_model *m, const gemm_shape *s)
{
    return plan_b_rows_in_place(s) && plan_b_rows_collide(m, s);
}

/* B read in place, and not streamed along its rows: a tile whose k step
 * takes at least FAR_MIN_STEP_CYCLES of FMAs asks for each row of its
 * panel FAR_AHEAD_CYCLES of its FMAs ahead into L2 (prefetcht1) and none
 * into L1, where the panel is FAR_ANY_ROWS_MIN_LINES lines wide or more,
 * or B's rows collide in the L1 (plan_b_rows_collide; at run time by the
 * call's ldb, gemm_plan.b_far_*, plan_b_far_rows). The tiles read a
 * quarter kilobyte or less of each row, rows kilobytes apart, which no
 * hardware prefetcher follows; asked for into L1 few misses are in
 * flight, into L2 many more, and a long step hides the L2's latency as
 * each row is loaded. Zen 4, in one process, time near (32 lines ahead
 * into L1) / far, 1 thread: 3-6 rows x 768-3072 x 768-3072 at 48-64
 * columns 1.04-1.15; x 3072 x 768 at 8-48 rows 1.04-1.18; bert-large's
 * 17 x 1024-4096 x 1024-4096 1.05-1.20; 2 threads 3-6 rows 1.04-1.07, x
 * 3072 x 768 1.03-1.14, 17 x bert-large 1.05-1.13; mid and large M and
 * the square shapes 0.95-1.03 either way (bench/results/
 * 2026-12-07-far-prefetch-inprocess-zen4.txt). Where it did not pay:
 * steps of 8 or fewer FMAs (2x64, 5x16 and 6x16 tiles, 0.84-0.88: the
 * near prefetch has the line in L1 in time, and the L2's latency spans
 * several short steps), 32-wide panels over rows that do not collide
 * (7x32 at 2 threads 0.93-0.97, 12-13x32 0.94-1.00), near and far
 * together (lost wherever far alone did, and more), and 1024 cycles ahead
 * (as good at 1 thread, 2-4% worse at 2). */
static const double FAR_MIN_STEP_CYCLES = 12.0;
static const double FAR_AHEAD_CYCLES = 2048.0;
static const int FAR_ANY_ROWS_MIN_LINES = 3;

int plan_far_step_fmas(const plan_model *m)
{
    return m->hw.fma_per_cycle > 0 ? (int)(FAR_MIN_STEP_CYCLES * m->hw.fma_per_cycle + 0.5) : 0;
}

int plan_far_ahead_fmas(const plan_model *m)
{
    return (int)(FAR_AHEAD_CYCLES * m->hw.fma_per_cycle + 0.5);
}

bool plan_far_any_rows(const plan_model *m, int nv)
{
    int line = model_l1(m).line_bytes;
    return line > 0 && nv * m->vec * (int)sizeof(float) >= FAR_ANY_ROWS_MIN_LINES * line;
}

bool plan_tile_reads_b_far(const plan_model *m, const gemm_shape *s, int mr, int nv)
{
    int step = plan_far_step_fmas(m);
    return plan_b_rows_in_place(s) && !plan_b_streams_from_memory(m, s) && step > 0 &&
           mr * nv >= step && (plan_far_any_rows(m, nv) || plan_b_rows_collide(m, s));
}
