/*
 * gemm.c - the GEMM operator: the loop nest of Goto and van de Geijn
 * around the ukernels, executing a plan.
 *
 *   for jc in N by nc:            (this share's columns)
 *     for pc in K by kc:          B[pc.., jc..]: kc x nc, stays in L2 (packed
 *                                 into panels, or read in place, per the plan)
 *       for ir in row tiles:      the plan's heights; A packed tile by tile
 *                                 when transposed or its rows alias in L1
 *         for jr in panels:       ukernel(tile ir, panel jr)
 *
 * Small M with B transposed runs dot-product tiles instead (run_dot_share),
 * reading both operands in place.
 *
 * The A micro-panel of tile ir stays in L1 while the B micro-panels stream
 * past it, so each tile writes C along its rows, where hardware prefetchers
 * and the TLB keep up. B streamed from memory in place turns the last two
 * loops round: each B panel is read from memory once, for every tile of
 * a group of up to 16 in turn. Those loops over one share are
 * gemm_blocks.c's; this file decides which task runs which share.
 * A plan split along N gives each thread its columns
 * and its own packed B (gemm_run_share), in groups a faster thread may take
 * over (run_split_n); one split along M runs one shared B
 * per block and hands out row tiles (run_shared_b); one split along K
 * gives each thread its rows of B over the whole grid (run_k_share) and
 * sums the partial products into C after the run (sum_partials).
 * Batches of small matrices, and batches that spread evenly over the
 * threads, instead run whole matrices per thread, asking for the next
 * one's operands while one runs where the batch comes from memory
 * (ops/prefetch_next.c).
 */
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ops/gemm_blocks.h"
#include "ops/prefetch_next.h"

/* Below this many flops a matrix gains nothing from splitting over threads,
 * so batches of such matrices are split over the batch instead. */
static const double SMALL_MATRIX_FLOPS = 4e6;

/* Groups of matrices in a share of a batch split over threads. */
static const int64_t GROUPS_PER_BATCH_SHARE = 4;

/* Matrices of fewer flops do not ask for the next (batch_prefetches_next). */
static const double PREFETCH_NEXT_MIN_FLOPS = 4e5;

/* Progress of one (jc, pc) block of a shared-B run, counted by the tasks:
 * row tiles claimed and done, and the B panels its first tile has packed. */
typedef struct {
    atomic_int tiles_claimed, tiles_done;
    atomic_int panels_ready;
} block_progress;

/* The groups of one share of a split along N not yet taken: its owner
 * takes them from the front, a thread done with its own from the back.
 * Front in the low 32 bits, back in the high, so that one compare and
 * swap takes a group from either end and never the same one twice. */
typedef struct {
    alignas(64) _Atomic uint64_t front_back;
} share_groups;

typedef struct {
    const gemm_call *call;
    const gemm_plan *plan;
    int64_t batch;
    int64_t stride_a, stride_b, stride_c;
    bool split_batch;     /* tasks take whole matrices, not plan shares, */
    int batch_tasks;      /* the tasks a split batch is shared among */
    bool prefetch_next;   /* a task asks for matrix i + 1 while i runs */
    /* Whole matrices run by one task, each in place (gemm_runs_in_place),
     * by the tiles' ukernels looked up once for the batch. */
    bool matrices_in_place;
    ukernel_fn in_place_fns[PLAN_MAX_RUNS];
    /* Whole matrices of a row plan over B in place: its row form, looked
     * up once for the batch and called straight from run_matrix (12 x
     * (1x64x1), 1 thread: 0.95-1.01 of the time, median 0.96, five
     * processes each alternating). */
    ukernel_fn matrix_row_fn;
    float *scratch;       /* per-task slices of scratch_floats */
    int64_t scratch_floats;
    float *partials;      /* split along K: M x N for each task after the first */
    int64_t a_floats, b_floats; /* within a slice: A micro-panel, B block (not shared) */
    /* Shared-B runs (plans split along M over threads): two B blocks all
     * tasks use, alternating by block, and each block's progress. */
    bool shared_b;
    bool own_panels;      /* B read in place: a masked panel per task (own_panel) */
    float *shared_b_bufs[2];
    block_progress *progress;
    int64_t blocks;       /* (jc, pc) blocks of one matrix */
    atomic_int *tile_blocks; /* per matrix and row tile: its blocks done */
    /* A split along N run in groups of a share's panels (run_split_n),
     * or a batch in groups of a share's matrices (run_batch_share): each
     * share's groups left, one counter a cache line. */
    share_groups *groups;
    int64_t group_units;  /* panels (row plans: their units; batches: matrices) in a group */
} gemm_job;

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* C = beta * C for the cases with no product (K == 0, alpha == 0). */
static void scale_c(const gemm_call *c)
{
    for (int64_t i = 0; i < c->M; i++) {
        float *row = c->C + i * c->ldc;
        for (int64_t j = 0; j < c->N; j++)
            row[j] = c->beta == 0.0f ? 0.0f : c->beta * row[j];
    }
}

/* A plan split along M over threads, run with one B block shared by all
 * tasks. Per (jc, pc) block, the tasks claim row tiles one at a time from
 * a counter. Whoever claims the first prepares the B panels as it goes
 * (packing them, or copying them as its ukernels read them), publishing
 * each; the other tiles follow a panel behind. A tile waits until the
 * same tile of the block before is done (it wrote the same C), and the
 * first tile of a block waits until every tile of the block two back is
 * done (the two B buffers alternate). B is read and packed once, not once
 * per thread, with no pass of its own, and a thread the machine slows
 * down simply takes fewer tiles: with a static split the two halves
 * ended 10-20% apart here.
 *
 * Work is claimed in one order (block by block, tile by tile) and every
 * wait is for work earlier in it, all of which has been claimed by a
 * running task: the earliest unfinished work never waits, so the run
 * always finishes, also when the pool runs the tasks one after another
 * (the first then does it all). */
static void run_shared_b(const gemm_job *job, const gemm_call *c, int64_t matrix, float *a_buf,
                         float *own_buf)
{
    const gemm_plan *p = job->plan;
    atomic_int *tile_blocks = job->tile_blocks + matrix * p->ntiles;
    int64_t g = matrix * job->blocks; /* this block's number across the batch */
    int b = 0;                        /* and within the matrix */
    for (int64_t jc = 0; jc < c->N; jc += p->nc)
        for (int64_t pc = 0; pc < c->K; pc += p->kc, g++, b++) {
            b_block blk = gemm_make_block(p, jc, min64(p->nc, c->N - jc), pc,
                                          min64(p->kc, c->K - pc));
            block_progress *bp = &job->progress[g];
            float *b_buf = job->shared_b_bufs[g % 2];
            own_panel own = {.buf = own_buf, .ready = false};
            for (int t; (t = atomic_fetch_add(&bp->tiles_claimed, 1)) < p->ntiles;) {
                if (t == 0 && g >= 2)
                    rt_wait_at_least(&job->progress[g - 2].tiles_done, (int)p->ntiles);
                rt_wait_at_least(&tile_blocks[t], b);
                gemm_run_tile(c, p, &blk, t, t == 0, &bp->panels_ready, a_buf, b_buf,
                              own_buf ? &own : NULL);
                atomic_store_explicit(&tile_blocks[t], b + 1, memory_order_release);
                atomic_fetch_add_explicit(&bp->tiles_done, 1, memory_order_release);
            }
        }
}

/* The dot tile at rows i, columns j of the share ending at (m1, n1), by
 * the plan's member for its size. */
static void run_dot_tile(const gemm_call *c, const gemm_plan *p, int64_t i, int64_t m1,
                         int64_t j, int64_t n1, ukernel_args *args)
{
    bool last_rows = i + p->dot_mr > m1, last_cols = j + p->dot_nj > n1;
    args->m = (int)min64(p->dot_mr, m1 - i);
    args->n = (int)min64(p->dot_nj, n1 - j);
    args->a = c->A + i * c->a_rs;
    args->b = c->B + j * c->b_cs;
    args->c = c->C + i * c->ldc + j;
    p->dot_fn[last_rows][last_cols](args);
}

/* Dot-product plans: rows [m0, m1) and columns [n0, n1) in tiles of
 * dot_mr rows of A and dot_nj rows of B^T, both read in place, remainders
 * by the exact smaller members. The larger operand is read once, its
 * tiles outermost, and the smaller is reused from cache: a few rows of A
 * against a wide B^T (decoding a token), or a tall A against a few rows
 * of B^T (a matrix times a few vectors: with columns outermost, 1000 x 10
 * x 1000 read all of A once per column tile). */
static void run_dot_share(const gemm_call *c, const gemm_plan *p, int64_t m0, int64_t m1,
                          int64_t n0, int64_t n1)
{
    if (m0 >= m1 || n0 >= n1)
        return;
    ukernel_args args;
    ukernel_args_clear(&args);
    args.k = c->K;
    args.a_rs = c->a_rs;
    args.a_cs = 1;
    args.b_rs = c->b_cs;
    /* The rows of the tiles ahead, only where B^T's rows start off a cache
     * line (plan_dot.c, dot_prefetches_ahead). */
    if (p->b_prefetch > 0 && ukernel_rows_straddle_lines(c->B, c->b_cs))
        args.b_prefetch = p->b_prefetch * c->b_cs;
    args.ldc = c->ldc;
    args.alpha = c->alpha;
    args.beta = c->beta;
    if (m1 - m0 > n1 - n0) {
        for (int64_t i = m0; i < m1; i += p->dot_mr)
            for (int64_t j = n0; j < n1; j += p->dot_nj)
                run_dot_tile(c, p, i, m1, j, n1, &args);
    } else {
        for (int64_t j = n0; j < n1; j += p->dot_nj)
            for (int64_t i = m0; i < m1; i += p->dot_mr)
                run_dot_tile(c, p, i, m1, j, n1, &args);
    }
}

/* The row form a row plan over B in place runs. */
static ukernel_fn row_form(const gemm_plan *p)
{
    return ukernel_row_lookup(p->isa, p->b_from_memory ? UK_ROW_STREAMED : UK_ROW_CACHED);
}

/* Row plans: columns [n0, n1) of the M rows of A (one, or a few with B
 * streaming) times B, by the row form `row`, in calls of at most
 * ROW_CALL_COLUMNS (its width is an int). */
enum { ROW_CALL_COLUMNS = 1 << 24 };
static void run_row_share(const gemm_call *c, ukernel_fn row, int64_t n0, int64_t n1)
{
    for (int64_t j = n0; j < n1; j += ROW_CALL_COLUMNS) {
        ukernel_args args;
        gemm_call_args(c, &args);
        args.b = c->B + j * c->b_cs;
        args.c = c->C + j;
        args.m = (int)c->M;
        args.n = (int)min64(ROW_CALL_COLUMNS, n1 - j);
        row(&args);
    }
}

/* The row form over pre-packed B, columns [n0, n1) from panel n0 / nr
 * on: per k block, its whole panels in one call and a last, narrower one
 * (N not a multiple of nr) by the in-place form over that panel, whose
 * rows are its padded width apart. The epilogue follows the last block. */
static void run_row_panels_share(const gemm_call *c, const gemm_plan *p, int64_t n0,
                                 int64_t n1)
{
    const struct tessel_packed_b *pb = c->packed;
    int64_t whole_end = min64(n1, c->N / pb->nr * pb->nr);
    for (int64_t pc = 0; pc < c->K; pc += pb->kc) {
        int64_t kb = min64(pb->kc, c->K - pc);
        const float *block = pb->data + pc * pb->n_padded;
        ukernel_args args;
        gemm_call_args(c, &args);
        args.k = kb;
        args.a = c->A + pc * c->a_cs;
        args.beta = pc == 0 ? c->beta : 1.0f;
        args.m = (int)c->M;
        if (n0 < whole_end) {
            args.b = block + n0 * kb;
            args.b_rs = pb->nr;
            args.c = c->C + n0;
            args.n = (int)(whole_end - n0);
            ukernel_row_lookup(p->isa, UK_ROW_PANELS)(&args);
        }
        if (whole_end < n1) {
            args.b = block + whole_end * kb;
            args.b_rs = pb->n_padded - whole_end;
            args.c = c->C + whole_end;
            args.n = (int)(n1 - whole_end);
            ukernel_row_lookup(p->isa, UK_ROW_CACHED)(&args);
        }
    }
    if (c->epilogue)
        ukernel_epilogue(p->isa, c->C + n0, c->ldc, (int)c->M, (int)(n1 - n0),
                         c->epilogue->bias ? c->epilogue->bias + n0 : NULL,
                         c->epilogue->activation);
}

static gemm_call batch_entry(const gemm_job *job, int64_t i)
{
    gemm_call c = *job->call;
    c.ahead = NULL;
    c.A += i * job->stride_a;
    c.B += i * job->stride_b;
    c.C += i * job->stride_c;
    return c;
}

/* op(B)'s N columns as N rows of K floats, 16 k steps at a time: the
 * rows of B read stay in L1 while each output row gets a line of them
 * (column by column, 32x15x3072 read B 15 times; row by row, its stores
 * 12 KB apart all fell in one L1 set). */
static void transpose_narrow_b(const gemm_call *c, float *bt)
{
    enum { STEPS = 16 };
    for (int64_t k0 = 0; k0 < c->K; k0 += STEPS) {
        int64_t k1 = min64(k0 + STEPS, c->K);
        for (int64_t j = 0; j < c->N; j++)
            for (int64_t k = k0; k < k1; k++)
                bt[j * c->K + k] = c->B[k * c->b_rs + j * c->b_cs];
    }
}

/* Runs the plan's share `t` of one matrix: its part of the grid, or all
 * of it in a split along K (run_k_share gives it its rows of B); in a
 * split along N, units [u0, u1) (panels; for dot plans, column tiles),
 * the share's own or a group of any share's (run_split_n). */
static void run_plan_units(const gemm_call *c, const gemm_plan *p, int t, int64_t u0,
                           int64_t u1, float *a_buf, float *b_buf)
{
    int64_t t0 = 0, t1 = p->ntiles, n0 = 0, n1 = c->N;
    if (p->row) {
        if (p->split == 'N') {
            n0 = u0 * p->nr;
            n1 = min64(c->N, u1 * p->nr);
        }
        if (n0 < n1 && c->packed)
            run_row_panels_share(c, p, n0, n1);
        else if (n0 < n1)
            run_row_share(c, row_form(p), n0, n1);
        return;
    }
    if (p->dot) {
        int64_t m0 = 0, m1 = c->M;
        if (p->split == 'M') {
            m0 = p->bounds[t] * p->dot_mr;
            m1 = min64(c->M, p->bounds[t + 1] * p->dot_mr);
        } else if (p->split == 'N') {
            n0 = u0 * p->dot_nj;
            n1 = min64(c->N, u1 * p->dot_nj);
        }
        if (c->b_rs == 1) {
            run_dot_share(c, p, m0, m1, n0, n1);
            return;
        }
        /* A few columns of B not contiguous along k: their transpose, a
         * few rows of K, into this task's scratch first (op_sgemm_plan
         * sizes it). */
        gemm_call with_bt = *c;
        transpose_narrow_b(c, b_buf);
        with_bt.B = b_buf;
        with_bt.b_rs = 1;
        with_bt.b_cs = c->K;
        run_dot_share(&with_bt, p, m0, m1, n0, n1);
        return;
    }
    if (p->split == 'M') {
        t0 = p->bounds[t];
        t1 = p->bounds[t + 1];
    } else if (p->split == 'N') {
        n0 = u0 * p->nr;
        n1 = min64(c->N, u1 * p->nr);
    }
    if (t0 >= t1 || n0 >= n1)
        return;
    if (gemm_runs_in_place(c, p, n0, n1)) {
        ukernel_fn fns[PLAN_MAX_RUNS];
        gemm_in_place_fns(p, fns);
        gemm_run_in_place(c, p, t0, t1, n0, n1, fns);
    } else {
        gemm_run_share(c, p, t0, t1, n0, n1, a_buf, b_buf);
    }
}

static void run_plan_share(const gemm_call *c, const gemm_plan *p, int t, float *a_buf,
                           float *b_buf)
{
    run_plan_units(c, p, t, p->bounds[t], p->bounds[t + 1], a_buf, b_buf);
}

/* Takes a group of `share` from the front (the owner) or the back;
 * returns its number, or -1 once none is left. */
static int64_t take_group(share_groups *share, bool front)
{
    uint64_t fb = atomic_load_explicit(&share->front_back, memory_order_relaxed);
    for (;;) {
        uint64_t f = fb & 0xffffffffu, b = fb >> 32;
        if (f >= b)
            return -1;
        uint64_t next = front ? fb + 1 : fb - ((uint64_t)1 << 32);
        if (atomic_compare_exchange_weak_explicit(&share->front_back, &fb, next,
                                                  memory_order_relaxed, memory_order_relaxed))
            return front ? (int64_t)f : (int64_t)b - 1;
    }
}

/* Groups of share s of a split along N, from the front or the back. */
static void run_groups(const gemm_job *job, int t, int s, bool front, float *a_buf,
                       float *b_buf)
{
    const gemm_plan *p = job->plan;
    for (int64_t g; (g = take_group(&job->groups[s], front)) >= 0;) {
        int64_t u0 = p->bounds[s] + g * job->group_units;
        int64_t u1 = min64(u0 + job->group_units, p->bounds[s + 1]);
        run_plan_units(job->call, p, t, u0, u1, a_buf, b_buf);
    }
}

/* Groups in a share of a split along N (run_split_n): enough that a
 * slowed core hands part of its share on, few enough that taking them
 * costs little beside their work (a compare and swap each, on the
 * share's own cache line). */
enum { GROUPS_PER_SHARE = 4 };

/* A batch split over threads is never one: it runs one-thread plans. */
static bool splits_n_in_groups(const gemm_plan *p, int64_t batch, int ntasks)
{
    return batch == 1 && ntasks > 1 && ntasks == p->threads && p->split == 'N' && !p->dot;
}

/* Units (panels) a group: a share's over GROUPS_PER_SHARE, but for the
 * tiles whole column blocks (nc), since each block packs every A
 * micro-panel afresh (groups of a third of a block lost 3-10% at 13-64
 * x 768 x 3072 on 2 threads, in bench/compare against oneDNN), and for
 * the row form no fewer than one of its blocks of vectors, so that it
 * still reads that many side by side. */
static int64_t group_units(const gemm_plan *p, const gemm_call *c)
{
    int64_t largest = 0;
    for (int t = 0; t < p->threads; t++)
        largest = max64(largest, p->bounds[t + 1] - p->bounds[t]);
    int64_t units = (largest + GROUPS_PER_SHARE - 1) / GROUPS_PER_SHARE;
    if (p->row) {
        int64_t block_vecs = ukernel_row_vecs(p->isa) / c->M; /* M > 0 here */
        int64_t unit_vecs = p->nr / p->vec;
        int64_t block_units = (block_vecs + unit_vecs - 1) / unit_vecs;
        if (units < block_units)
            units = block_units;
    } else {
        int64_t block_units = p->nc / p->nr > 0 ? p->nc / p->nr : 1;
        units = (units + block_units - 1) / block_units * block_units;
    }
    return units > 0 ? units : 1;
}

/* A split along N, one matrix: each task runs its own share's groups
 * in order, then takes what is left of the others' from their ends. The
 * share is the plan's, so each core reads the same columns of B call
 * after call (in its own L2); but the host slows one core or the other
 * by a third for tens of milliseconds at a time (its other tenants), and
 * with fixed halves every call then ran at the slower core's pace: at 2
 * threads 4x768x768 ran at one thread's speed in 14-24 of 100 rounds of
 * 2 ms. */
static void run_split_n(const gemm_job *job, int t, float *a_buf, float *b_buf)
{
    run_groups(job, t, t, true, a_buf, b_buf);
    for (int i = 1; i < job->plan->threads; i++)
        run_groups(job, t, (t + i) % job->plan->threads, false, a_buf, b_buf);
}

/* Share t of a plan split along K (plan_gemm.c, k_split_pays): rows
 * [bounds[t], bounds[t + 1]) of op(B) times those columns of op(A), over
 * the whole grid. The first share writes C, scaled by beta; the others
 * write their partial products, beta 0, into the job's partials, which
 * sum_partials adds into C after the run. The epilogue waits for that. */
static void run_k_share(const gemm_job *job, const gemm_call *c, int t, float *a_buf,
                        float *b_buf)
{
    const gemm_plan *p = job->plan;
    gemm_call share = *c;
    share.A += p->bounds[t] * c->a_cs;
    share.B += p->bounds[t] * c->b_rs;
    share.K = p->bounds[t + 1] - p->bounds[t];
    share.epilogue = NULL;
    if (t > 0) {
        share.C = job->partials + (t - 1) * c->M * c->N;
        share.ldc = c->N;
        share.beta = 0.0f;
    }
    run_plan_share(&share, p, t, a_buf, b_buf);
}

/* Adds the partial products of a split along K into C, then applies the
 * epilogue. */
static void sum_partials(const gemm_job *job)
{
    const gemm_call *c = job->call;
    int64_t size = c->M * c->N;
    for (int64_t i = 0; i < c->M; i++) {
        float *row = c->C + i * c->ldc;
        for (int t = 1; t < job->plan->threads; t++) {
            const float *part = job->partials + (t - 1) * size + i * c->N;
            for (int64_t j = 0; j < c->N; j++)
                row[j] += part[j];
        }
    }
    if (c->epilogue)
        ukernel_epilogue(job->plan->isa, c->C, c->ldc, (int)c->M, (int)c->N,
                         c->epilogue->bias, c->epilogue->activation);
}

/* Matrix i of the batch, run whole by one task, which asks for matrix
 * `next` (i + 1, if that task runs it next; else -1) meanwhile. A dot
 * plan over rows of B^T goes straight to its tiles: for attention's
 * scores at a token or a few, the way through the plan's share was a
 * tenth of the call (12 x (1x1x64) B^T 420 -> 375 ns without it, medians
 * of five processes). */
static void run_matrix(const gemm_job *job, int64_t i, int64_t next, float *a_buf,
                       float *b_buf)
{
    gemm_call c = batch_entry(job, i);
    if (job->plan->dot && c.b_rs == 1) {
        run_dot_share(&c, job->plan, 0, c.M, 0, c.N);
        return;
    }
    if (job->matrix_row_fn) {
        run_row_share(&c, job->matrix_row_fn, 0, c.N);
        return;
    }
    if (job->matrices_in_place) {
        gemm_run_in_place(&c, job->plan, 0, job->plan->ntiles, 0, c.N, job->in_place_fns);
        return;
    }
    prefetch_next ahead;
    if (job->prefetch_next && next >= 0) {
        gemm_call n = batch_entry(job, next);
        /* A one-thread plan: its ukernel calls are the whole matrix's. */
        prefetch_next_start(&ahead, &n, (int64_t)job->plan->calls);
        c.ahead = &ahead;
    }
    run_plan_share(&c, job->plan, 0, a_buf, b_buf);
}

/* Matrices a group, in a batch split over `tasks`: about
 * GROUPS_PER_BATCH_SHARE groups a share. Fewer, and a slowed thread
 * cannot hand part of its share on; more, and the share's cache line
 * travels between the cores for every few small matrices. */
static int64_t batch_group_matrices(int64_t batch, int tasks)
{
    int64_t n = batch / ((int64_t)tasks * GROUPS_PER_BATCH_SHARE);
    return n > 0 ? n : 1;
}

/* The first matrix of share s of a batch split over its tasks. */
static int64_t batch_share_start(const gemm_job *job, int s)
{
    return job->batch * s / job->batch_tasks;
}

/* Groups of share s of a batch, from the front or the back. */
static void run_batch_groups(const gemm_job *job, int s, bool front, float *a_buf, float *b_buf)
{
    int64_t end = batch_share_start(job, s + 1);
    for (int64_t g; (g = take_group(&job->groups[s], front)) >= 0;) {
        int64_t i0 = batch_share_start(job, s) + g * job->group_units;
        int64_t i1 = min64(i0 + job->group_units, end);
        for (int64_t i = i0; i < i1; i++)
            run_matrix(job, i, i + 1 < i1 ? i + 1 : -1, a_buf, b_buf);
    }
}

/* A batch split over threads in whole matrices: each task runs its own
 * share, the same matrices call after call, so that a batch the caches
 * hold is found in the L2 of the core that ran it last; then what is
 * left of the others' shares, from their ends, so that a thread the
 * machine slows down hands part of its share on. */
static void run_batch_share(const gemm_job *job, int t, float *a_buf, float *b_buf)
{
    run_batch_groups(job, t, true, a_buf, b_buf);
    for (int i = 1; i < job->batch_tasks; i++)
        run_batch_groups(job, (t + i) % job->batch_tasks, false, a_buf, b_buf);
}

static void gemm_task(void *opaque, int task, int ntasks)
{
    gemm_job *job = opaque;
    float *slice = job->scratch + task * job->scratch_floats;
    float *a_buf = slice, *b_buf = slice + job->a_floats;
    (void)ntasks;
    if (job->split_batch) {
        run_batch_share(job, task, a_buf, b_buf);
        return;
    }
    for (int64_t i = 0; i < job->batch; i++) {
        if (job->shared_b) {
            gemm_call c = batch_entry(job, i);
            run_shared_b(job, &c, i, a_buf, job->own_panels ? b_buf : NULL);
        } else if (job->plan->threads == 1) {
            run_matrix(job, i, i + 1 < job->batch ? i + 1 : -1, a_buf, b_buf);
        } else if (job->plan->split == 'K') {
            run_k_share(job, job->call, task, a_buf, b_buf); /* batch 1 (op_sgemm_plan) */
        } else if (job->groups) {
            run_split_n(job, task, a_buf, b_buf); /* batch 1 */
        } else {
            gemm_call c = batch_entry(job, i);
            run_plan_share(&c, job->plan, task, a_buf, b_buf);
        }
    }
}

/* Whether `batch` matrices spread over `threads` in whole matrices within
 * an eighth of evenly. Such a batch runs whole matrices per thread
 * whatever their size: each thread keeps its matrices in its own L2 and
 * nothing is shared or waited for. At 2 threads, 12 matrices each split
 * over the threads took, against whole matrices per thread: 384x64x384
 * 1.34x, 512x64x512 1.11x, 384x384x64 NT 1.11x, 256x256x64 NT 1.15x. */
static bool batch_spreads_evenly(int64_t batch, int threads)
{
    int64_t rounds = (batch + threads - 1) / threads;
    return batch >= threads && rounds * threads * 8 <= batch * 9;
}

/* Whether a task that runs whole matrices of the batch one after another
 * asks for the next one's operands while this one runs
 * (ops/prefetch_next.c): where the batch outgrows half the last cache,
 * so that they come from memory, the next operands fit half the L2
 * beside this matrix's blocks, and a matrix takes long enough that the
 * asking costs it little. Through the row tiles' loop only. Against
 * oneDNN, 1 thread, with / without (bench/compare,
 * 2026-12-03-compare-prefetch-next-matrix-l2*): attention's 192 heads of
 * 62-128 tokens 0.99-1.14; asked for everywhere, 12 heads, which stay in
 * the caches, 0.70-0.94 (12 x (5x64x5) 0.70), and 192 heads of 24-43
 * tokens, microseconds a matrix, 0.84-0.95. */
static bool batch_prefetches_next(const op_env *env, const gemm_call *call, int64_t batch,
                                  const gemm_plan *plan)
{
    const hw_cache *last = hw_data_cache(&env->model->hw, 3);
    int64_t last_bytes = last ? last->size_bytes : env->model->l2_bytes;
    double flops = 2.0 * (double)call->M * (double)call->N * (double)call->K;
    int64_t floats = call->M * call->K + (call->packed ? 0 : call->K * call->N) + call->M * call->N;
    int64_t matrix_bytes = floats * (int64_t)sizeof(float);
    /* Short k loops (the next C asked for too) of 0.8 MFLOP or more wait
     * on memory from a quarter of the last cache: on a 32 MiB L3 shared
     * with neighbours, 144 and 192 x (81x81x64) B^T (9.7 and 13 MiB) ran
     * 1.36-1.47x as fast at 1 thread asking, 192 of them 1.15x at 2;
     * asked for from there, P V (K = 81 tokens) ran 0.87-0.92x at 2
     * threads and 192 x (62x64x62) 0.82x at 1
     * (2026-12-07-prefetch-next-short-k-inprocess-zen4.txt). */
    bool short_k = prefetch_next_asks_for_c(call) && flops >= 2 * PREFETCH_NEXT_MIN_FLOPS;
    double from = (double)last_bytes / (short_k ? 4 : 2);
    return batch > 1 && !plan->dot && !plan->row && flops >= PREFETCH_NEXT_MIN_FLOPS &&
           prefetch_next_bytes(call) <= env->model->l2_bytes / 2 &&
           (double)batch * (double)matrix_bytes > from;
}

void op_gemm_schedule(const op_env *env, const gemm_call *call, const gemm_plan *plan,
                      int64_t batch, op_schedule *run)
{
    /* A one-thread plan for a batch: whole matrices per thread instead,
     * unless the batch is over before a woken thread would join in. */
    gemm_shape shape = {.M = call->M, .N = call->N, .K = call->K};
    bool whole = env->threads > 1 && batch > 1 && plan->threads == 1 &&
                 plan_threads_pay(env->model, &shape, batch);
    int tasks = whole ? (int)min64(env->threads, batch) : plan->threads;
    bool by_matrix = tasks == 1 || whole; /* a task runs whole matrices */
    run->tasks = tasks;
    run->whole_matrices = whole;
    run->group_matrices = whole ? batch_group_matrices(batch, tasks) : 0;
    run->rounds = whole ? (batch + tasks - 1) / tasks : batch;
    run->one_at_a_time = plan->split == 'K' && batch > 1;
    run->shared_b = !whole && tasks > 1 && plan->split == 'M' && !plan->dot &&
                    !plan->b_per_thread;
    run->prefetch_next = by_matrix && batch_prefetches_next(env, call, batch, plan);
    run->in_place = by_matrix && plan->threads == 1 && !plan->dot && !plan->row &&
                    !run->prefetch_next && gemm_runs_in_place(call, plan, 0, call->N);
}

void op_gemm_key(const op_env *env, const gemm_call *call, int64_t batch, gemm_shape *shape,
                 int *threads)
{
    double flops = 2.0 * (double)call->M * call->N * call->K;
    bool whole_matrices = batch > 1 && (flops < SMALL_MATRIX_FLOPS ||
                                        batch_spreads_evenly(batch, env->threads));
    *shape = (gemm_shape){.M = call->M, .N = call->N, .K = call->K,
                          .transa = call->a_cs != 1,
                          /* One column contiguous along k is also a row
                           * of B^T, read in place by dot-product tiles. */
                          .transb = call->b_cs != 1 || (call->N == 1 && call->b_rs == 1),
                          .prepacked_kc = call->packed ? call->packed->kc : 0};
    *threads = whole_matrices ? 1 : env->threads;
}

void op_plan_sgemm(const op_env *env, const gemm_call *call, int64_t batch, gemm_plan *plan)
{
    gemm_shape shape;
    int threads;
    op_gemm_key(env, call, batch, &shape, &threads);
    plan_gemm(env->model, &shape, threads, plan);
}

tessel_status op_sgemm_plan(const op_env *env, const gemm_call *call, const gemm_plan *plan,
                            int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c)
{
    if (call->M == 0 || call->N == 0 || batch == 0)
        return TESSEL_OK;
    /* Field by field: an initializer zeroed all 192 bytes with `rep stos`
     * first, a tenth of a 1x1x1 call. Every field is set before the tasks
     * start. */
    gemm_job job;
    job.call = call;
    job.plan = plan;
    job.batch = batch;
    job.stride_a = stride_a;
    job.stride_b = stride_b;
    job.stride_c = stride_c;
    job.shared_b_bufs[0] = job.shared_b_bufs[1] = NULL; /* shared-B runs only: */
    job.progress = NULL;
    job.tile_blocks = NULL;
    job.blocks = 0;
    job.groups = NULL;
    job.group_units = 0;
    if (call->K == 0 || call->alpha == 0.0f) {
        for (int64_t i = 0; i < batch; i++) {
            gemm_call c = batch_entry(&job, i);
            scale_c(&c);
            if (c.epilogue)
                ukernel_epilogue(plan->isa, c.C, c.ldc, (int)c.M, (int)c.N, c.epilogue->bias,
                                 c.epilogue->activation);
        }
        return TESSEL_OK;
    }

    /* A split along K sums each matrix's partial products after its run:
     * one matrix at a time. */
    if (plan->split == 'K' && batch > 1) {
        for (int64_t i = 0; i < batch; i++) {
            gemm_call c = batch_entry(&job, i);
            tessel_status st = op_sgemm_plan(env, &c, plan, 1, 0, 0, 0);
            if (st != TESSEL_OK)
                return st;
        }
        return TESSEL_OK;
    }

    op_schedule run;
    op_gemm_schedule(env, call, plan, batch, &run);
    int ntasks = run.tasks;
    job.split_batch = run.whole_matrices;
    job.batch_tasks = ntasks;
    job.shared_b = run.shared_b;
    job.prefetch_next = run.prefetch_next;
    job.matrices_in_place = run.in_place;
    if (job.matrices_in_place)
        gemm_in_place_fns(plan, job.in_place_fns);
    job.matrix_row_fn = plan->row && !call->packed && plan->threads == 1 ? row_form(plan) : NULL;

    /* Scratch, acquired before anything is written: for every task, one
     * packed A micro-panel and (unless shared) a packed B block; for a
     * shared-B run, two B blocks, then every block's progress counters
     * and every row tile's blocks done, in one buffer. */
    /* Panels outermost, a micro-panel for every row tile of the share. */
    int64_t a_panels = gemm_a_panels_at_once(call, plan);
    job.a_floats = plan->pack_a
                       ? (a_panels - 1) * round_up(UK_MAX_MR * plan->kc, 16) +
                             round_up(UK_MAX_MR * plan->kc + UK_PACK_SLACK, 16)
                       : 0;
    int64_t b_cols = round_up(min64(plan->nc, plan->npanels * plan->nr), plan->nr);
    bool b_scratch = !call->packed && !plan->dot && !plan->row;
    int64_t b_floats = b_scratch ? round_up((plan->pack_b ? b_cols : plan->nr) * plan->kc, 16) : 0;
    /* Dot tiles read rows of B^T; columns of B not contiguous along k are
     * transposed into each task's scratch (narrow op(B), run_plan_share). */
    if (plan->dot && call->b_rs != 1)
        b_floats = round_up(call->N * call->K, 16);
    /* A shared-B run that reads B in place keeps one panel per task
     * (own_panel) and shares nothing; one that packs B shares two blocks. */
    job.own_panels = job.shared_b && b_scratch && !plan->pack_b;
    bool shares_blocks = job.shared_b && !job.own_panels;
    job.b_floats = shares_blocks ? 0 : b_floats;
    job.scratch_floats = job.a_floats + job.b_floats;
    int64_t partial_floats =
        plan->split == 'K' ? round_up((ntasks - 1) * call->M * call->N, 16) : 0;
    size_t float_bytes = (size_t)(job.scratch_floats * ntasks + partial_floats) * sizeof(float);
    size_t progress_bytes = 0, tile_bytes = 0, group_bytes = 0;
    bool grouped = job.split_batch || splits_n_in_groups(plan, batch, ntasks);
    if (grouped) /* from the next cache line on */
        group_bytes = 64 + (size_t)ntasks * sizeof(share_groups);
    if (job.shared_b) {
        if (shares_blocks)
            float_bytes += (size_t)(2 * b_floats) * sizeof(float);
        job.blocks = (call->N + plan->nc - 1) / plan->nc * ((call->K + plan->kc - 1) / plan->kc);
        progress_bytes = (size_t)(batch * job.blocks) * sizeof(block_progress);
        tile_bytes = (size_t)(batch * plan->ntiles) * sizeof(atomic_int);
    }
    /* float_bytes is a multiple of 64: the counters start on a cache line. */
    char *scratch =
        rt_buffer_acquire(env->buffers, float_bytes + progress_bytes + tile_bytes + group_bytes);
    if (!scratch)
        return TESSEL_ERR_NO_MEMORY;
    job.scratch = (float *)scratch;
    job.partials = job.scratch + job.scratch_floats * ntasks;
    if (job.shared_b) {
        if (shares_blocks) {
            job.shared_b_bufs[0] = job.partials + partial_floats;
            job.shared_b_bufs[1] = job.shared_b_bufs[0] + b_floats;
        }
        job.progress = (block_progress *)(scratch + float_bytes);
        job.tile_blocks = (atomic_int *)(scratch + float_bytes + progress_bytes);
        for (int64_t i = 0; i < batch * job.blocks; i++) {
            atomic_init(&job.progress[i].tiles_claimed, 0);
            atomic_init(&job.progress[i].tiles_done, 0);
            atomic_init(&job.progress[i].panels_ready, 0);
        }
        for (int64_t i = 0; i < batch * plan->ntiles; i++)
            atomic_init(&job.tile_blocks[i], 0);
    }
    if (grouped) {
        /* After the counters, which end on a whole number of ints: round
         * up to the next cache line. */
        size_t at = (float_bytes + progress_bytes + tile_bytes + 63) / 64 * 64;
        job.groups = (share_groups *)(scratch + at);
        job.group_units = job.split_batch ? run.group_matrices : group_units(plan, call);
        for (int t = 0; t < ntasks; t++) {
            int64_t units = job.split_batch ? batch_share_start(&job, t + 1) -
                                                  batch_share_start(&job, t)
                                            : plan->bounds[t + 1] - plan->bounds[t];
            uint64_t groups = (uint64_t)((units + job.group_units - 1) / job.group_units);
            atomic_init(&job.groups[t].front_back, groups << 32);
        }
    }

    if (ntasks > 1)
        rt_pool_run(env->pool, gemm_task, &job, ntasks);
    else
        gemm_task(&job, 0, 1);
    if (plan->split == 'K')
        sum_partials(&job);
    rt_buffer_release(env->buffers, scratch);
    return TESSEL_OK;
}

tessel_status op_sgemm(const op_env *env, const gemm_call *call, int64_t batch,
                       int64_t stride_a, int64_t stride_b, int64_t stride_c)
{
    gemm_plan plan;
    op_plan_sgemm(env, call, batch, &plan);
    return op_sgemm_plan(env, call, &plan, batch, stride_a, stride_b, stride_c);
}
