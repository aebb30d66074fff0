/*
 * gemm.c - the GEMM operator: the five-loop nest of Goto and van de Geijn
 * around the ukernels, executing a plan.
 *
 *   for jc in N by nc:            (this thread's columns)
 *     for pc in K by kc:          B[pc.., jc..]: kc x nc, stays in L2 (packed
 *                                 into panels, or read in place, per the plan)
 *       for ic in M by ~mc:       row tiles of the plan's heights (A packed
 *                                 only when transposed)
 *         for ir: for jr:         ukernel(tile ir, panel jr)
 *
 * Small M with B transposed runs dot-product tiles instead (run_dot_share),
 * reading both operands in place.
 *
 * The A micro-panel of tile ir stays in L1 while the B micro-panels stream
 * past it, so each tile writes C along its rows, where hardware prefetchers
 * and the TLB keep up. Each thread runs the nest on its own share (rows or
 * columns, as the plan split them) with its own packed buffers, so threads
 * never wait for each other. Small batched matrices instead run whole
 * matrices per thread.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

/* Below this many flops a matrix gains nothing from splitting over threads,
 * so batches of such matrices are split over the batch instead. */
static const double SMALL_MATRIX_FLOPS = 4e6;

typedef struct {
    const gemm_call *call;
    const gemm_plan *plan;
    int64_t batch;
    int64_t stride_a, stride_b, stride_c;
    bool split_batch;     /* tasks take whole matrices, not plan shares */
    float *scratch;       /* per-task slices of scratch_floats */
    int64_t scratch_floats;
    int64_t a_floats, b_floats; /* within a slice: packed A block, packed B block */
} gemm_job;

static int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Packed B panels are nr wide but the masked last one, which is only as
 * wide as the vectors its columns need. */
static int panel_width(const gemm_plan *p, int cols)
{
    return (cols + p->vec - 1) / p->vec * p->vec;
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

/* Prepares the B panels of one (jc, pc) block: packs them into b_buf, or
 * finds them in the pre-packed weights, or leaves them in place (rows of
 * op(B) are contiguous then) except a masked last panel, which is packed
 * so that the ukernel's full-width loads stay inside B. */
static void prepare_b(const gemm_call *c, const gemm_plan *p, int64_t jc, int64_t nb,
                      int64_t pc, int64_t kb, float *b_buf)
{
    if (c->packed)
        return;
    const float *b_block = c->B + pc * c->b_rs + jc * c->b_cs;
    int64_t panels = (nb + p->nr - 1) / p->nr;
    for (int64_t jr = p->pack_b ? 0 : panels - 1; jr < panels; jr++) {
        int cols = (int)min64(p->nr, nb - jr * p->nr);
        if (!p->pack_b && cols == p->nr)
            break;
        ukernel_pack_b(panel_width(p, cols), cols, kb, b_block + jr * p->nr * c->b_cs, c->b_rs,
                       c->b_cs, p->pack_b ? b_buf + jr * p->nr * kb : b_buf);
    }
}

/* Points the ukernel at B panel jr of the (jc, pc) block, `cols` wide. */
static void point_at_b(const gemm_call *c, const gemm_plan *p, int64_t jc, int64_t jr,
                       int cols, int64_t pc, int64_t kb, const float *b_buf, ukernel_args *args)
{
    args->b_rs = panel_width(p, cols);
    args->b_prefetch = p->b_prefetch;
    if (c->packed) {
        int64_t panel = jc / p->nr + jr;
        args->b = c->packed->data + pc * c->packed->n_padded + panel * p->nr * kb;
    } else if (p->pack_b) {
        args->b = b_buf + jr * p->nr * kb;
    } else if (cols < p->nr) {
        args->b = b_buf;
    } else {
        args->b = c->B + pc * c->b_rs + jc + jr * p->nr;
        args->b_rs = c->b_rs;
    }
}

/* The loop nest over one share: row tiles [t0, t1), columns [n0, n1). */
static void run_share(const gemm_call *c, const gemm_plan *p, int64_t t0, int64_t t1,
                      int64_t n0, int64_t n1, float *a_buf, float *b_buf)
{
    ukernel_desc desc = {.isa = p->isa, .a_packed = p->pack_a};
    ukernel_args args = {.ldc = c->ldc, .alpha = c->alpha};
    const tessel_epilogue *epi = c->epilogue;

    for (int64_t jc = n0; jc < n1; jc += p->nc) {
        int64_t nb = min64(p->nc, n1 - jc);
        int64_t panels = (nb + p->nr - 1) / p->nr;
        for (int64_t pc = 0; pc < c->K; pc += p->kc) {
            int64_t kb = min64(p->kc, c->K - pc);
            bool last_k = pc + kb == c->K;
            args.k = kb;
            args.beta = pc == 0 ? c->beta : 1.0f;
            prepare_b(c, p, jc, nb, pc, kb, b_buf);

            int64_t tile = t0;
            while (tile < t1) {
                /* One mc block: whole tiles until mc rows are covered. */
                int64_t rows = 0, tiles = 0, r;
                int mr;
                while (tile + tiles < t1 && (rows < p->mc || tiles == 0)) {
                    plan_tile_rows(p, tile + tiles, &r, &mr);
                    rows += mr;
                    tiles++;
                }
                if (p->pack_a) {
                    int64_t off = 0;
                    for (int64_t t = 0; t < tiles; t++) {
                        plan_tile_rows(p, tile + t, &r, &mr);
                        ukernel_pack_a(mr, kb, c->A + r * c->a_rs + pc * c->a_cs, c->a_rs,
                                       c->a_cs, a_buf + off);
                        off += (int64_t)mr * kb;
                    }
                }
                /* The A micro-panel stays in L1 while the B micro-panels
                 * stream past it from L2, and C is written along its rows. */
                int64_t off = 0;
                for (int64_t t = 0; t < tiles; t++) {
                    plan_tile_rows(p, tile + t, &r, &mr);
                    desc.mr = mr;
                    args.m = mr;
                    if (p->pack_a) {
                        args.a = a_buf + off;
                        args.a_rs = 1;
                        args.a_cs = mr;
                    } else {
                        args.a = c->A + r * c->a_rs + pc * c->a_cs;
                        args.a_rs = c->a_rs;
                        args.a_cs = c->a_cs;
                    }
                    for (int64_t jr = 0; jr < panels; jr++) {
                        int64_t col = jc + jr * p->nr;
                        args.n = (int)min64(p->nr, nb - jr * p->nr);
                        desc.nv = (args.n + p->vec - 1) / p->vec;
                        point_at_b(c, p, jc, jr, args.n, pc, kb, b_buf, &args);
                        args.c = c->C + r * c->ldc + col;
                        ukernel_lookup(&desc)(&args);
                        /* The tile is final and still in L1: finish it. */
                        if (last_k && epi)
                            ukernel_epilogue(args.c, c->ldc, mr, args.n,
                                             epi->bias ? epi->bias + col : NULL, epi->activation);
                    }
                    off += (int64_t)mr * kb;
                }
                tile += tiles;
            }
        }
    }
}

/* Dot-product plans: columns [n0, n1) in tiles of dot_nj rows of B^T,
 * each reused from cache by every tile of dot_mr rows of A; both read in
 * place, remainders by the exact smaller members. */
static void run_dot_share(const gemm_call *c, const gemm_plan *p, int64_t n0, int64_t n1)
{
    ukernel_args args = {.k = c->K, .a_rs = c->a_rs, .a_cs = 1, .b_rs = c->b_cs,
                         .ldc = c->ldc, .alpha = c->alpha, .beta = c->beta};
    for (int64_t j = n0; j < n1; j += p->dot_nj) {
        args.n = (int)min64(p->dot_nj, n1 - j);
        args.b = c->B + j * c->b_cs;
        for (int64_t i = 0; i < c->M; i += p->dot_mr) {
            args.m = (int)min64(p->dot_mr, c->M - i);
            args.a = c->A + i * c->a_rs;
            args.c = c->C + i * c->ldc + j;
            ukernel_dot_lookup(p->isa, args.m, args.n)(&args);
        }
    }
}

static gemm_call batch_entry(const gemm_job *job, int64_t i)
{
    gemm_call c = *job->call;
    c.A += i * job->stride_a;
    c.B += i * job->stride_b;
    c.C += i * job->stride_c;
    return c;
}

/* Runs the plan's share `t` of one matrix. */
static void run_plan_share(const gemm_call *c, const gemm_plan *p, int t, float *a_buf,
                           float *b_buf)
{
    int64_t t0 = 0, t1 = p->ntiles, n0 = 0, n1 = c->N;
    if (p->dot) {
        n0 = p->bounds[t] * p->dot_nj;
        n1 = min64(c->N, p->bounds[t + 1] * p->dot_nj);
        run_dot_share(c, p, n0, n1);
        return;
    }
    if (p->split == 'M') {
        t0 = p->bounds[t];
        t1 = p->bounds[t + 1];
    } else {
        n0 = p->bounds[t] * p->nr;
        n1 = min64(c->N, p->bounds[t + 1] * p->nr);
    }
    if (t0 < t1 && n0 < n1)
        run_share(c, p, t0, t1, n0, n1, a_buf, b_buf);
}

static void gemm_task(void *opaque, int task, int ntasks)
{
    const gemm_job *job = opaque;
    float *slice = job->scratch + task * job->scratch_floats;
    float *a_buf = slice, *b_buf = slice + job->a_floats;
    if (job->split_batch) {
        int64_t b0 = job->batch * task / ntasks, b1 = job->batch * (task + 1) / ntasks;
        for (int64_t i = b0; i < b1; i++) {
            gemm_call c = batch_entry(job, i);
            run_plan_share(&c, job->plan, 0, a_buf, b_buf);
        }
        return;
    }
    for (int64_t i = 0; i < job->batch; i++) {
        gemm_call c = batch_entry(job, i);
        run_plan_share(&c, job->plan, task, a_buf, b_buf);
    }
}

void op_gemm_key(const op_env *env, const gemm_call *call, int64_t batch, gemm_shape *shape,
                 int *threads)
{
    double flops = 2.0 * (double)call->M * call->N * call->K;
    bool small_batched = batch > 1 && flops < SMALL_MATRIX_FLOPS;
    *shape = (gemm_shape){.M = call->M, .N = call->N, .K = call->K,
                          .transa = call->a_cs != 1,
                          .transb = call->b_cs != 1,
                          .prepacked_kc = call->packed ? call->packed->kc : 0};
    *threads = small_batched ? 1 : env->threads;
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
    gemm_job job = {.call = call, .plan = plan, .batch = batch, .stride_a = stride_a,
                    .stride_b = stride_b, .stride_c = stride_c};
    if (call->K == 0 || call->alpha == 0.0f) {
        for (int64_t i = 0; i < batch; i++) {
            gemm_call c = batch_entry(&job, i);
            scale_c(&c);
            if (c.epilogue)
                ukernel_epilogue(c.C, c.ldc, (int)c.M, (int)c.N, c.epilogue->bias,
                                 c.epilogue->activation);
        }
        return TESSEL_OK;
    }

    /* A one-thread plan for a batch: whole matrices per thread instead. */
    job.split_batch = env->threads > 1 && batch > 1 && plan->threads == 1;
    int ntasks = job.split_batch ? (int)min64(env->threads, batch) : plan->threads;

    /* Scratch for every task, acquired before anything is written. A block
     * may overshoot mc by less than one tile. */
    int64_t a_rows = min64(plan->mc, call->M) + UK_MAX_MR;
    job.a_floats = plan->pack_a ? round_up(a_rows * plan->kc, 16) : 0;
    int64_t b_cols = round_up(min64(plan->nc, plan->npanels * plan->nr), plan->nr);
    bool b_scratch = !call->packed && !plan->dot;
    job.b_floats = b_scratch ? round_up((plan->pack_b ? b_cols : plan->nr) * plan->kc, 16) : 0;
    job.scratch_floats = job.a_floats + job.b_floats;
    job.scratch = rt_buffer_acquire(env->buffers,
                                    (size_t)(job.scratch_floats * ntasks) * sizeof(float));
    if (!job.scratch)
        return TESSEL_ERR_NO_MEMORY;

    if (ntasks > 1)
        rt_pool_run(env->pool, gemm_task, &job, ntasks);
    else
        gemm_task(&job, 0, 1);
    rt_buffer_release(env->buffers, job.scratch);
    return TESSEL_OK;
}

tessel_status op_sgemm(const op_env *env, const gemm_call *call, int64_t batch,
                       int64_t stride_a, int64_t stride_b, int64_t stride_c)
{
    gemm_plan plan;
    op_plan_sgemm(env, call, batch, &plan);
    return op_sgemm_plan(env, call, &plan, batch, stride_a, stride_b, stride_c);
}

struct tessel_packed_b *op_pack_b(const plan_model *model, const float *B, int64_t b_rs,
                                  int64_t b_cs, int64_t K, int64_t N)
{
    struct tessel_packed_b *pb = calloc(1, sizeof *pb);
    if (!pb)
        return NULL;
    pb->isa = model->hw.isa;
    pb->vec = model->vec;
    pb->nr = model->nr;
    pb->K = K;
    pb->N = N;
    pb->kc = plan_kc(model, K);
    int64_t panels = (N + pb->nr - 1) / pb->nr;
    int64_t tail = N - (panels - 1) * pb->nr;
    pb->n_padded = panels > 0 ? (panels - 1) * pb->nr + round_up(tail, pb->vec) : 0;
    size_t bytes = (size_t)(K * pb->n_padded) * sizeof(float);
    pb->data = aligned_alloc(64, round_up((int64_t)bytes, 64) + 64);
    if (!pb->data) {
        free(pb);
        return NULL;
    }
    gemm_plan layout = {.vec = pb->vec, .nr = pb->nr, .pack_b = true};
    gemm_call call = {.B = B, .b_rs = b_rs, .b_cs = b_cs};
    for (int64_t pc = 0; pc < K; pc += pb->kc) {
        int64_t kb = min64(pb->kc, K - pc);
        prepare_b(&call, &layout, 0, N, pc, kb, pb->data + pc * pb->n_padded);
    }
    return pb;
}

void op_packed_free(struct tessel_packed_b *packed)
{
    if (!packed)
        return;
    free(packed->data);
    free(packed);
}
