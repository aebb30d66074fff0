/*
 * plan_rules.h - what the planner's files share and nothing outside
 * src/plan/ uses: the questions about where op(B) lies (plan_b.c), each
 * form's planner (plan_dot.c, plan_row.c), the tile width (plan_width.c)
 * and the split across threads (plan_split.c) that plan_gemm.c puts
 * together, and the few constants and helpers more than one of them
 * reads.
 */
#ifndef TESSEL_PLAN_RULES_H
#define TESSEL_PLAN_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan.h"

/* ---- where op(B) lies (plan_b.c) ---- */

/* Rows of op(B) contiguous (not B^T) and not pre-packed into panels. */
bool plan_b_rows_in_place(const gemm_shape *s);
/* op(B) read in place that comes from memory on every call: larger than
 * STREAM_B_L2S L2s (plan_b.c). */
bool plan_b_streams_from_memory(const plan_model *m, const gemm_shape *s);
/* op(B) read in place that streams on every call for `threads` threads:
 * from memory, or, for a few rows of A, from an L3 that does not feed
 * the tiles (plan_b.c, STREAM_L3_B_L2S). */
bool plan_b_streams(const plan_model *m, const gemm_shape *s, int threads);
/* op(B) takes more than 1 / parts of the L3 (false without an L3). */
bool plan_b_outgrows_l3_part(const plan_model *m, const gemm_shape *s, int parts);
/* Half of one L1 way in bytes (0 if the L1's ways are unknown). */
int64_t plan_l1_half_way(const plan_model *m);
/* B's rows (N floats apart) a multiple of half an L1 way apart. */
bool plan_b_rows_collide(const plan_model *m, const gemm_shape *s);
/* The same, for B read in place. */
bool plan_b_rows_crowd_l1_sets(const plan_model *m, const gemm_shape *s);
/* B read in place and not streamed: the FMAs a tile's k step must take
 * for the tile to ask for B's rows far ahead into L2 instead of near into
 * L1 (0: never), and how many of its FMAs ahead. */
int plan_far_step_fmas(const plan_model *m);
int plan_far_ahead_fmas(const plan_model *m);
/* Whether tiles nv vectors wide ask far ahead wherever B's rows lie (not
 * only where they collide). */
bool plan_far_any_rows(const plan_model *m, int nv);
/* Whether an mr-row tile nv vectors wide reads shape s's B far ahead. */
bool plan_tile_reads_b_far(const plan_model *m, const gemm_shape *s, int mr, int nv);

/* ---- the forms and rules plan_gemm.c puts together ---- */

/* Dot-product tiles over A and B^T in place (plan_dot.c). */
bool plan_takes_dot_form(const plan_model *m, const gemm_shape *s);
void plan_dot_form(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p);
/* The row form: a few rows of A along whole rows of B (plan_row.c). */
bool plan_takes_row_form(const plan_model *m, const gemm_shape *s, int threads);
void plan_row_form(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p);
/* The main tile width in vectors for a choice (plan_width.c), and the
 * rule under which B of short rows is read in place by the widest tile. */
int plan_tile_width(const plan_model *m, const gemm_shape *s, const plan_choice *c,
                    int threads);
bool plan_short_b_rows_go_wide(const plan_model *m, const gemm_shape *s);
/* The split of a tessellated, blocked plan's M x N grid across `threads`
 * (plan_split.c): sets p->split, threads, bounds and fma_cycles.
 * tail_nv is the width of the last column panel in vectors. */
void plan_split_grid(const plan_model *m, const gemm_shape *s, const plan_choice *c,
                     int threads, int tail_nv, gemm_plan *p);

/* ---- shared constants and helpers ---- */

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
enum { PLAN_ONE_TILE_WHOLE_K_MAX_ROWS = 768 };

/* Records the knobs a plan was made with. Field by field into the plan,
 * which plan_gemm_choice zeroed: a compound literal's padding is
 * unspecified (clang copied stack bytes into it), and the plan cache and
 * its tests copy and compare plans word for word. */
static inline void plan_set_choice(gemm_plan *p, int64_t kc, int64_t nc, int pack_b, char split)
{
    p->choice.nv = p->nv;
    p->choice.kc = kc;
    p->choice.nc = nc;
    p->choice.pack_b = pack_b;
    p->choice.split = split;
}

/* The clock the rules count cycles at: the cost model's, which is the
 * calibration's where there is one. The context's own probe reads
 * 2.18-2.36 GHz from one process to the next here (and 2.8-3.0 an hour
 * later), enough to turn the rules' packing and split choices on 511 x
 * 768 x 768 and 1600 x 3072 x 768 at 2 threads. */
static inline double plan_clock_hz(const plan_model *m)
{
    return m->cost.ghz * 1e9;
}

#endif
