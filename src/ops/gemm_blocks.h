/*
 * gemm_blocks.h - between gemm.c, which decides which thread runs which
 * share of a plan, and gemm_blocks.c, which runs a share: the blocks of
 * B, their panels and the row tiles over them. Nothing outside src/ops/
 * uses it.
 */
#ifndef TESSEL_GEMM_BLOCKS_H
#define TESSEL_GEMM_BLOCKS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ops/ops.h"

static inline int64_t round_up(int64_t x, int64_t to)
{
    return (x + to - 1) / to * to;
}

static inline int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* The ukernel arguments that come from the call as they are: all of K, A
 * and its strides, B's row stride, C's, alpha and beta; the rest zero. */
static inline void gemm_call_args(const gemm_call *c, ukernel_args *args)
{
    ukernel_args_clear(args);
    args->k = c->K;
    args->a = c->A;
    args->a_rs = c->a_rs;
    args->a_cs = c->a_cs;
    args->b_rs = c->b_rs;
    args->ldc = c->ldc;
    args->alpha = c->alpha;
    args->beta = c->beta;
}

/* One (jc, pc) block of B: columns [jc, jc + nb), rows [pc, pc + kb),
 * in `panels` panels. */
typedef struct {
    int64_t jc, nb, pc, kb;
    int64_t panels;
} b_block;

static inline b_block gemm_make_block(const gemm_plan *p, int64_t jc, int64_t nb, int64_t pc,
                                      int64_t kb)
{
    return (b_block){.jc = jc, .nb = nb, .pc = pc, .kb = kb,
                     .panels = (nb + p->nr - 1) / p->nr};
}

/* A shared-B run that reads B in place still packs the masked last panel
 * (the ukernel loads whole vectors). Each task packs its own copy, once
 * per block, rather than waiting for the first tile's and then reading
 * it from the other core (64x40x256 on 2 threads took twice its time on
 * one that way). */
typedef struct {
    float *buf;
    bool ready; /* packed for the current block */
} own_panel;

/* Row tile t across the block's B panels; the block's first tile
 * prepares the panels (into b_buf), and with `panels_ready` (a shared-B
 * run) publishes them as it goes while the other tiles wait for each. A
 * packed A micro-panel goes to a_buf; `own` is the task's masked panel
 * of a shared-B run that reads B in place, else NULL. */
void gemm_run_tile(const gemm_call *c, const gemm_plan *p, const b_block *blk, int64_t t,
                   bool first_tile, atomic_int *panels_ready, float *a_buf, float *b_buf,
                   own_panel *own);

/* The loop nest over one share: row tiles [t0, t1), columns [n0, n1),
 * with B blocks of its own in b_buf, A micro-panels in a_buf (as many at
 * once as gemm_a_panels_at_once says). */
void gemm_run_share(const gemm_call *c, const gemm_plan *p, int64_t t0, int64_t t1,
                    int64_t n0, int64_t n1, float *a_buf, float *b_buf);
int64_t gemm_a_panels_at_once(const gemm_call *c, const gemm_plan *p);

/* The same share where nothing is packed, copied or prefetched
 * (gemm_runs_in_place says when): only the tiles' ukernel calls, by
 * `fns`, the full-width ukernel of each run of the tessellation, which
 * gemm_in_place_fns looks up (once for a whole batch, where the batch
 * runs in place). */
bool gemm_runs_in_place(const gemm_call *c, const gemm_plan *p, int64_t n0, int64_t n1);
void gemm_in_place_fns(const gemm_plan *p, ukernel_fn fns[PLAN_MAX_RUNS]);
void gemm_run_in_place(const gemm_call *c, const gemm_plan *p, int64_t t0, int64_t t1,
                       int64_t n0, int64_t n1, const ukernel_fn fns[PLAN_MAX_RUNS]);

#endif
