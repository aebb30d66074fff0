/*
 * plan.h - the planner: from the hardware profile and a GEMM shape, a plan
 * the operator executes. The model's rules (register and cache blocking,
 * tile costs) are pure functions here so they can be tested with
 * hand-computed numbers; plan_model caches what depends only on the
 * hardware, so planning one shape is a few table lookups.
 */
#ifndef TESSEL_PLAN_H
#define TESSEL_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/hw.h"
#include "kernels/ukernel.h"
#include "plan/cost.h"

enum {
    PLAN_DP_LEN = 64,      /* remainders up to this many rows are covered optimally */
    PLAN_MAX_RUNS = 24,    /* row runs in one tessellation */
    PLAN_MAX_THREADS = 256
};

/* Rows of op(B) at most this many bytes apart share a page 8 or more to
 * the page, and the hardware prefetchers follow them: B so read in place
 * is not prefetched by the ukernel (ops/gemm_blocks.c, from the call's ldb) and
 * is read by the widest tile (plan_width.c, taking ldb as N). */
enum { PLAN_CLOSE_B_ROW_BYTES = 512 };

/* ---- the model's rules (DESIGN, "Register and cache blocking") ---- */

/* Registers a (mr, nv) tile needs: accumulators, B vectors, one broadcast. */
int model_registers(int mr, int nv);

/* Rule 2's load-port bound: the mr broadcasts and nv B loads of a k step
 * issue within the time its mr * nv FMAs take. */
bool model_fits_load_ports(int mr, int nv, double fma_per_cycle, double loads_per_cycle);

/* The share of one FMA pipe's time that the broadcasts of a tile nv
 * vectors wide add (one per row per k step, broadcast_cycles each). */
double model_broadcast_share(int nv, double broadcast_cycles);

/* Rule 1, FMA latency: enough independent accumulators to keep every
 * FMA pipe busy, mr * nv >= latency * issue width. */
bool model_hides_latency(int mr, int nv, double fma_latency, double fma_per_cycle);

/* Rule 3. The mr x kc A micro-panel (broadcast operand) stays in L1 while
 * kc x nr B micro-panels (vector operand) stream through it from L2. Ways
 * of the L1 for the streaming B, one way spare, split in proportion to
 * the panels' widths: floor((W1 - 1) / (1 + mr / nr)). */
int model_l1_ways_for_b(int l1_ways, int mr, int nr);

/* kc = C_B * N1 * C1 / (nr * sizeof(float)); 0 if C_B is 0. */
int64_t model_kc(const hw_cache *l1, int mr, int nr);

/* The bytes of A and B micro-panels a k step of an mr x nr tile reads,
 * per cycle of its FMAs: (mr + nr) * sizeof(float) * pipes / (mr * nr /
 * vector floats). */
double model_panel_bytes_per_cycle(int mr, int nr, int vec, double fma_per_cycle);

/* Whether the L2 feeds an mr x nr tile's A and B micro-panels at its
 * pace: model_panel_bytes_per_cycle at most L2_FED_BYTES_PER_CYCLE
 * (model.c). */
bool model_l2_feeds_tile(int mr, int nr, int vec, double fma_per_cycle);
/* Whether one core reads the L3 (as measured; true unmeasured) fast enough
 * for an mr-row tile's FMAs on B's panels. */
bool model_l3_feeds_tile(const hw_profile *hw, int mr, int vec, double fma_per_cycle);

/* The kc the planner uses for a tile: rule 3's, or, where the L2 feeds
 * it (model_l2_feeds_tile), the deeper kc of an A micro-panel that takes
 * every L1 way but one. 0 if rule 3 gives 0. */
int64_t model_tile_kc(const hw_cache *l1, int mr, int nr, int vec, double fma_per_cycle);

/* Rule 4, one level up: the kc x nc block of B stays in L2 while A
 * micro-panels pass, or in half this CPU's share of the L3 where that
 * holds more (l3 may be NULL: the planner passes model_feeding_l3, NULL
 * where the L3 does not feed the tiles); nc is a multiple of nr. */
int64_t model_nc(const hw_cache *l2, const hw_cache *l3, int64_t kc, int mr, int nr);

/* Cycles per k step of one mr x nv tile: the larger of the FMA issue time
 * (with what its mr broadcasts add, broadcast_cycles each), the load issue
 * time and the FMA latency (one dependent FMA per accumulator per step). */
double model_tile_cycles(int mr, int nv, double fma_latency, double fma_per_cycle,
                         double loads_per_cycle, double broadcast_cycles);

/* ---- what depends only on the hardware ---- */

typedef struct plan_model {
    hw_profile hw;
    int vec;                 /* floats per vector */
    int nv, mr;              /* the main tile, from rules 1-3 */
    int dot_mr, dot_nj;      /* the dot-product tile (B^T in place), rules 1-2 */
    int nr;                  /* nv * vec */
    /* The least share of FMA time that broadcasts add, in the widest tile
     * the other rules pass: the broadcast rule's baseline. */
    double least_broadcast_share;
    int64_t kc, nc;
    /* The L2 feeds the main tile at its pace (model_l2_feeds_tile). */
    bool l2_feeds_tile;
    /* So does the L3 (model_l3_feeds_tile); where not, B's blocks are
     * sized for the L2 and no B in place runs as one block. */
    bool l3_feeds_tile;
    /* The same rules for a main tile of each width (its bulk height):
     * what a plan gets when it is given another width. */
    int64_t kc_for[UK_MAX_NV + 1], nc_for[UK_MAX_NV + 1];
    int64_t l2_bytes;        /* one core's L2 */
    double pack_bytes_per_second;
    /* Cycles per k step of an (mr, nv) tile; 0 where no ukernel is built. */
    double tile_cycles[UK_MAX_NV + 1][UK_MAX_MR + 1];
    /* For tiles nv vectors wide: the height bulk rows are cut into, and
     * the cheapest cover of L rows (DP over remainders): the height of its
     * first tile and its cost per k step. */
    int bulk_mr[UK_MAX_NV + 1];
    int dp_first[UK_MAX_NV + 1][PLAN_DP_LEN + 1];
    double dp_cost[UK_MAX_NV + 1][PLAN_DP_LEN + 1];
    /* Predicted time of a plan: analytic defaults from the profile until
     * a calibration (src/tune/) replaces them. When calibrated, plan_gemm
     * picks the cheapest predicted plan among a few variants of the
     * rules' one; uncalibrated, the rules' plan. */
    cost_model cost;
} plan_model;

/* Derives the model from a profile. Returns 0, or -1 if no ukernel of the
 * profile's ISA is built (a library bug). */
int plan_model_init(plan_model *m, const hw_profile *hw);

/* The L3 the rules may keep B in: the profile's, where it feeds the main
 * tile (plan_model.l3_feeds_tile), else NULL. */
const hw_cache *model_feeding_l3(const plan_model *m);

/* Installs a cost model. A calibrated one that records the FMA figures it
 * was fitted on rebuilds the model from them first (the rest of the
 * profile kept), so that a process whose quick probe read them off plans
 * as the calibration did. Returns plan_model_init's -1 on failure. */
int plan_model_set_cost(plan_model *m, const cost_model *cost);

/* ---- one shape ---- */

typedef struct plan_run {
    int mr;            /* tile height */
    int64_t count;     /* consecutive tiles of that height */
} plan_run;

typedef struct gemm_shape {
    int64_t M, N, K;
    bool transa, transb;      /* rows of op(A), op(B) not contiguous along k, n */
    int64_t prepacked_kc;     /* B already packed with this kc; 0 if not */
} gemm_shape;

/* The kc the model blocks B in panels with: K whole up to 1.5 times its
 * kc, else its kc evened out over the k blocks (K = 1200 with kc 700
 * runs as 2 x 600, not 700 + 500). */
int64_t plan_kc(const plan_model *m, int64_t K);

/* The knobs a plan may turn away from the model's rules: what the tuner
 * varies and what a tuned plan stores. Zero fields keep the rules' value. */
typedef struct plan_choice {
    int nv;            /* main tile width in vectors; its height is the
                          cheapest per row of that width (bulk_mr) */
    int64_t kc, nc;
    int pack_b;        /* 0 rules, 1 read B in place, 2 pack B */
    char split;        /* 0 the rules', 'M', 'N' or 'K' */
} plan_choice;

enum { PLAN_B_RULES = 0, PLAN_B_IN_PLACE = 1, PLAN_B_PACKED = 2 };

typedef struct gemm_plan {
    hw_isa isa;
    int vec;
    int nv, nr;               /* main column panel: nv vectors, nr floats */
    int64_t kc, nc;           /* A is used one row tile at a time: no mc */
    /* Small M with op(B) = B^T: dot-product tiles read A and B^T in place
     * (no tessellation DP, no packing); rows of the M x N grid in tiles of
     * dot_mr, columns in tiles of dot_nj, remainders exact. */
    bool dot;
    int dot_mr, dot_nj;
    /* The dot-product members it runs, [last row tile][last column tile]:
     * dot_mr x dot_nj and the exact remainders, looked up once here
     * rather than by every matrix of a batch (12 x (1x1x64) B^T 508 ->
     * 420 ns a call, medians of five processes). */
    ukernel_fn dot_fn[2][2];
    /* One row of A times B with contiguous rows (M = 1): the row form
     * (ukernel_row_lookup; its streaming one where b_from_memory) over all
     * of K, columns in units of one vector (nr = vec, npanels of them),
     * split along N. */
    bool row;
    bool pack_a, pack_b;
    /* op(B) with contiguous rows that no cache keeps between calls: read
     * in place it is blocked a few rows deep (kc 32); packed, each block
     * is copied a few rows at a time across all its panels, not panel by
     * panel, so either way B streams along its rows from memory. */
    bool b_from_memory;
    /* One or two B panels: K runs in one block (see plan_gemm.c). */
    bool whole_k;
    /* B read in place that the L3 keeps between calls: one kc x nc
     * block, the whole of B (see plan_gemm.c, WHOLE_B_L3_PARTS). */
    bool b_one_block;
    int b_prefetch;           /* rows of B (dot plans: of B^T) the ukernel prefetches ahead */
    /* B streamed in place (b_from_memory): floats ahead along each row
     * to prefetch instead of rows ahead (see plan_gemm.c), or 0. */
    int b_prefetch_along;
    /* B read in place whose rows lie a multiple of this many bytes apart
     * is not prefetched (0: always prefetched; see plan_gemm.c and
     * plan_b_unprefetched). */
    int64_t b_unprefetched_stride;
    /* B read in place whose rows lie a multiple of this many bytes apart
     * is also asked for rows ahead into L2 (0: never; see plan_gemm.c
     * and plan_b_l2_ahead). */
    int64_t b_l2_ahead_stride;
    /* B read in place and not streamed: a tile whose k step takes at
     * least b_far_step_fmas FMAs asks for B's rows b_far_fmas FMAs of its
     * own ahead into L2 instead of a few rows ahead into L1 (0: never),
     * with panels this wide wherever B's rows lie (b_far_any_rows), else
     * only where they collide in the L1 (see plan_b.c and
     * plan_b_far_rows). */
    int b_far_step_fmas;
    int b_far_fmas;
    bool b_far_any_rows;
    /* B packed by the call into a kc x nc block that fits the L1: the
     * ukernel does not prefetch its panels (plan_gemm.c, packed_block_in_l1). */
    bool b_panels_in_l1;
    bool nc_half_l2;          /* nc cut so the B block fills at most half the L2 */
    bool deep_kc;             /* kc deepened, up to twice: few B panels a thread (plan_gemm.c) */
    /* Tessellation of M: runs of tiles, top to bottom, covering M exactly. */
    plan_run runs[PLAN_MAX_RUNS];
    int nruns;
    int64_t ntiles;           /* row tiles in all */
    int64_t npanels;          /* column panels: ceil(N / nr), the last masked;
                                 for dot plans, column tiles ceil(N / dot_nj) */
    /* Thread split: along 'M' (row tiles) or 'N' (column panels); thread t
     * gets tiles or panels [bounds[t], bounds[t + 1]). Along 'K', thread t
     * gets rows [bounds[t], bounds[t + 1]) of op(B) (columns of op(A)) and
     * runs the whole grid over them, the rest of the plan being the
     * 1-thread plan of M x N x K / threads; the partial products are
     * summed into C (ops/gemm.c). */
    char split;
    /* Split along M with B packed by the call: each thread packs its own
     * copy of B's blocks for a fixed share of the row tiles, instead of
     * one copy shared tile by tile (plan_split.c, threads_pack_own_b). */
    bool b_per_thread;
    int threads;
    int64_t bounds[PLAN_MAX_THREADS + 1];
    /* The knobs with every value resolved (nv, kc, nc, pack_b, split). */
    plan_choice choice;
    /* What the cost model reads: cycles of the ukernel k loops of the
     * busiest thread at the model's tile rates, and its ukernel calls. */
    double fma_cycles;
    double calls;
    double predicted_seconds;
} gemm_plan;

/* Whether plan p leaves B, read in place with rows `row_bytes` apart (the
 * call's ldb), unprefetched. */
static inline bool plan_b_unprefetched(const gemm_plan *p, int64_t row_bytes)
{
    return p->b_unprefetched_stride > 0 && row_bytes % p->b_unprefetched_stride == 0;
}

/* Whether plan p asks for B, read in place with rows `row_bytes` apart
 * (the call's ldb), rows ahead into L2 as well. */
static inline bool plan_b_l2_ahead(const gemm_plan *p, int64_t row_bytes)
{
    return p->b_l2_ahead_stride > 0 && row_bytes % p->b_l2_ahead_stride == 0;
}

/* Rows ahead that a tile of mr rows of plan p asks for B, read in
 * place with rows `row_bytes` apart, into L2 instead of near rows into
 * L1; 0 where it keeps the near ones. */
static inline int64_t plan_b_far_rows(const gemm_plan *p, int mr, int64_t row_bytes)
{
    int64_t step_fmas = (int64_t)mr * p->nv;
    if (p->b_far_step_fmas == 0 || step_fmas < p->b_far_step_fmas)
        return 0;
    if (!p->b_far_any_rows && !plan_b_l2_ahead(p, row_bytes))
        return 0;
    return p->b_far_fmas / step_fmas;
}

/* Whether `batch` matrices of shape s are worth splitting over threads
 * (a batch by matrices, one matrix by its plan's split): only when one
 * thread would take a few microseconds over them, more than waking the
 * others costs. */
bool plan_threads_pay(const plan_model *m, const gemm_shape *s, int64_t batch);

/* Plans C = op(A) op(B) for `threads` threads (capped at PLAN_MAX_THREADS):
 * the rules' plan, or with a calibrated cost model the cheapest predicted
 * of plan_variants. */
void plan_gemm(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p);

/* Whether the calibrated planner may take variant v instead of the rules'
 * plan `rules` (the one made from the all-zero choice): only a shallower
 * kc or a narrower nc. How B is read, the split, the tile width and a
 * doubled kc are what its fitted weights misjudge (plan_choice.c says
 * why). */
bool plan_variant_admissible(const plan_model *m, const gemm_plan *rules,
                             const plan_choice *v);

/* Why the rules run shape s on one thread by the row form (plan_row.c,
 * plan_takes_row_form), in a few words for `tessel explain`; NULL where they
 * do not. (A split along K plans each thread's share of s the same way.) */
const char *plan_row_form_reason(const plan_model *m, const gemm_shape *s, int threads);

/* The plan for one choice; knobs that do not apply to the shape (packing
 * B^T in place, a width other than a pre-packed B's, a dot plan) fall back
 * to the rules'. The choice actually used is in p->choice. */
void plan_gemm_choice(const plan_model *m, const gemm_shape *s, int threads,
                      const plan_choice *c, gemm_plan *p);

/* Up to `max` distinct choices worth comparing for a shape, the rules'
 * (all zero) first: other tile widths, kc halved and doubled, nc halved,
 * B packed or in place, the other thread split. Returns how many. */
int plan_variants(const plan_model *m, const gemm_shape *s, int threads, plan_choice *out,
                  int max);

/* "nv=2 kc=224 nc=2048 b=packed split=M": what a tuned plan stores. Parsing
 * returns 0, or -1 on text it does not understand (nothing is trusted). */
int plan_choice_format(const plan_choice *c, char *buf, size_t len);
bool plan_choice_equal(const plan_choice *x, const plan_choice *y);
int plan_choice_parse(const char *text, plan_choice *c);

/* The cost model's features of a plan (seconds on its busiest thread;
 * see cost.h); plan_gemm stores cost_predict of them in the plan. */
void plan_cost_features(const plan_model *m, const gemm_shape *s, const gemm_plan *p,
                        double *features);

/* The predicted time of a call that runs `rounds` matrices of plan p one
 * after another on each of `tasks` tasks (a batch; 1 and p->threads give
 * p->predicted_seconds): the call's own costs (the fixed term, waking the
 * tasks' threads) counted once, the rest of p's for every matrix in turn. */
double plan_batch_seconds(const plan_model *m, const gemm_shape *s, const gemm_plan *p,
                          int64_t rounds, int tasks);

/* Row offset and height of row tile `tile` (0 <= tile < p->ntiles). */
void plan_tile_rows(const gemm_plan *p, int64_t tile, int64_t *row, int *mr);

#endif /* TESSEL_PLAN_H */
