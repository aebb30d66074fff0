/*
 * prefetch_next.c - the next matrix of a batch, asked for while this one
 * runs.
 *
 * A batch of attention's matrices larger than the caches (192 heads of
 * 128 x 64, 12 MB) finds each matrix's A and B in memory when its turn
 * comes. Its first tiles then pack them miss by miss, a few short rows
 * at a time, where the hardware prefetchers have little run to follow.
 * So, while matrix i runs, each ukernel call asks for a few lines of
 * matrix i+1's operands, spread so that all of them have been asked for
 * by the middle of matrix i: they arrive while its FMAs keep the core
 * busy. (AMD EPYC family 23, 1 thread, against oneDNN in the same run:
 * 192 x (128x128x64) B^T 0.81 -> 0.92, 192 x (100x64x100) 0.86 -> 0.93;
 * bench/results/2026-12-03-compare-prefetch-next-matrix-l2b.md.)
 *
 * The lines go to the L2 (prefetcht1): they are read half a matrix or
 * more later, and the L1 holds the running matrix's blocks. (Into the L1
 * measured the same on the batches above, within the noise.)
 *
 * Where K is short, matrix i+1's C is asked for too. Each ukernel asks
 * for its own tile of C as it starts, and its k loop hides the wait
 * where K is long; at attention's K = 64 a 14x32 tile is over in ~1800
 * cycles. With the next C asked for, 192 x (S x S x 64) B^T, S = 100-128,
 * ran 1.08-1.12x as fast at 1 thread and 1.03-1.07x at 2; P V's C (K =
 * 100-128 tokens) asked for too ran 0.92-0.98x (AMD EPYC family 25, in
 * one process, alternating: 2026-12-07-prefetch-next-c-inprocess-zen4.txt).
 * ops/gemm.c decides where the asking pays (batch_prefetches_next).
 */
#include "ops/prefetch_next.h"

enum { LINE_BYTES = 64 };

/* All lines asked for by the 1 / PREFETCH_NEXT_SPEED point of the matrix. */
static const int64_t PREFETCH_NEXT_SPEED = 2;

/* The longest K at which the next matrix's C is asked for as well. */
static const int64_t PREFETCH_NEXT_C_MAX_K = 64;

/* An op(X) of rows x cols with element (i, j) at x[i * rs + j * cs], as
 * the contiguous rows it is stored in. Strides other than 1 on both
 * sides do not come from the API; nothing is asked for then. */
static prefetch_region region_of(const float *x, int64_t rows, int64_t cols, int64_t rs,
                                 int64_t cs)
{
    prefetch_region r = {.base = (const char *)x};
    if (cs == 1) {
        r.rows = rows;
        r.row_bytes = cols * (int64_t)sizeof(float);
        r.stride = rs * (int64_t)sizeof(float);
    } else if (rs == 1) {
        r.rows = cols;
        r.row_bytes = rows * (int64_t)sizeof(float);
        r.stride = cs * (int64_t)sizeof(float);
    }
    return r;
}

/* Lines a row may touch: one more than its bytes fill when it does not
 * start on a line. */
static int64_t region_lines(const prefetch_region *r)
{
    return r->rows * ((r->row_bytes + LINE_BYTES - 1) / LINE_BYTES + 1);
}

bool prefetch_next_asks_for_c(const gemm_call *next)
{
    return next->K <= PREFETCH_NEXT_C_MAX_K;
}

int64_t prefetch_next_bytes(const gemm_call *next)
{
    int64_t a = next->M * next->K, b = next->packed ? 0 : next->K * next->N;
    int64_t c = prefetch_next_asks_for_c(next) ? next->M * next->N : 0;
    return (a + b + c) * (int64_t)sizeof(float);
}

void prefetch_next_start(prefetch_next *n, const gemm_call *next, int64_t steps)
{
    n->operands[0] = region_of(next->A, next->M, next->K, next->a_rs, next->a_cs);
    n->operands[1] = next->packed ? (prefetch_region){0}
                                  : region_of(next->B, next->K, next->N, next->b_rs, next->b_cs);
    n->operands[2] = prefetch_next_asks_for_c(next)
                         ? region_of(next->C, next->M, next->N, next->ldc, 1)
                         : (prefetch_region){0};
    int64_t lines = 0;
    for (int i = 0; i < PREFETCH_NEXT_PARTS; i++)
        lines += region_lines(&n->operands[i]);
    if (steps < 1)
        steps = 1;
    n->per_step = (lines * PREFETCH_NEXT_SPEED + steps - 1) / steps;
    n->part = 0;
    n->row = 0;
    n->line = 0;
}

void prefetch_next_step(prefetch_next *n)
{
    int64_t left = n->per_step;
    while (left > 0 && n->part < PREFETCH_NEXT_PARTS) {
        const prefetch_region *r = &n->operands[n->part];
        if (n->row >= r->rows) {
            n->part++;
            n->row = 0;
            continue;
        }
        /* The row's lines, from the one holding its first byte to the one
         * holding its last, in one tight loop: a pass through this
         * bookkeeping for every line cost batches whose operands were
         * already in the caches a fifth of their time (see
         * 2026-12-07-prefetch-next-step-inprocess-zen4.txt). */
        uintptr_t start = (uintptr_t)(r->base + n->row * r->stride);
        uintptr_t first = start / LINE_BYTES + (uintptr_t)n->line;
        uintptr_t last = (start + (uintptr_t)r->row_bytes - 1) / LINE_BYTES;
        int64_t count = (int64_t)(last - first) + 1;
        if (count > left)
            count = left;
        for (int64_t i = 0; i < count; i++)
            __builtin_prefetch((const void *)((first + (uintptr_t)i) * LINE_BYTES), 0, 2);
        left -= count;
        n->line += count;
        if (first + (uintptr_t)count > last) {
            n->row++;
            n->line = 0;
        }
    }
}
