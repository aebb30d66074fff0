/*
 * candidates.h - what the planner considered and what it built, in a form
 * that can be shown and tested: every built ukernel of the model's ISA
 * with the verdict of the model's rules on it (the reason for a rejection
 * names the first rule that failed, with its numbers), ranked by the
 * model's own preference so a tuner can take the top few viable tiles;
 * and a plan's tessellation of M x N as rectangles of one ukernel and one
 * thread each, with a character raster of it (`tessel explain`). The
 * rules themselves live in model.c; model_tile_verdict is the one place
 * that applies them, to choose the main tile and to list the candidates.
 */
#ifndef TESSEL_CANDIDATES_H
#define TESSEL_CANDIDATES_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan.h"

/* ---- the rules' verdict on one tile (model.c) ---- */

/* The model's rules in the order they are applied; a tile is judged by
 * the first it fails. */
typedef enum tile_rule {
    TILE_RULE_PASSES = 0,
    TILE_RULE_REGISTERS,  /* accumulators + operand vectors exceed the register file */
    TILE_RULE_LATENCY,    /* fewer independent accumulators than latency x FMA pipes */
    TILE_RULE_LOAD_PORTS, /* a k step's loads take longer than its FMAs */
    TILE_RULE_BROADCASTS, /* its broadcasts of A add a tenth more to its FMA time
                           * than the widest tile's */
    TILE_RULE_L1          /* the streaming B micro-panels get no L1 way */
} tile_rule;

/* The numbers each rule compared, so a rejection can be explained. */
typedef struct tile_verdict {
    tile_rule failed;           /* the first rule failed, or TILE_RULE_PASSES */
    int registers;              /* vector registers the tile needs */
    int registers_available;
    int chains;                 /* independent accumulators (FMA chains) */
    double fma_latency;         /* cycles */
    double fma_pipes;           /* FMA issues per cycle */
    double chains_needed;       /* fma_latency x fma_pipes */
    bool latency_waived;        /* dot family: no member hides latency, so none must */
    double load_cycles;         /* cycles a k step's loads take on the load ports */
    double fma_cycles;          /* cycles a k step's FMAs take */
    double broadcast_cycles;    /* what a k step's broadcasts add to them */
    double broadcast_share;     /* broadcast_cycles / (fma_cycles x fma_pipes) */
    double least_broadcast_share; /* the same for the widest tile rules 1-3 pass */
    int l1_ways, l1_ways_for_b; /* rule 3: W1 and C_B */
    int64_t kc;                 /* rule 3's kc for this tile (main family) */
} tile_verdict;

/* The rules on the main family's (mr, nv) member: registers, latency,
 * load ports, broadcasts, L1 (DESIGN, "Register and cache blocking"). m needs only
 * its profile and vector width set, so plan_model_init can use it. */
tile_verdict model_tile_verdict(const plan_model *m, int mr, int nv);

/* The rules on the dot-product member (mr rows of A, nj rows of B^T):
 * registers (mr * nj accumulators, mr + nj operand vectors) and latency,
 * which is waived when no built member of the family hides it. */
tile_verdict model_dot_verdict(const plan_model *m, int mr, int nj);

/* The model's preference between two tiles that pass: negative if a is
 * preferred, positive if b, 0 if they are the same tile. Main family:
 * most accumulators, ties the taller (less L2 traffic per FMA). Dot
 * family: most FMAs per load (mr * nj / (mr + nj)), ties more
 * accumulators, then the taller (B^T, the large operand, is read
 * ceil(M / mr) times); with the latency waived, most accumulators first. */
int model_compare_tiles(int mr_a, int nv_a, int mr_b, int nv_b);
int model_compare_dot_tiles(bool latency_waived, int mr_a, int nj_a, int mr_b, int nj_b);

/* The L1 the model blocks for: the profile's, or a default if it has none. */
hw_cache model_l1(const plan_model *m);

/* ---- the candidate lists ---- */

enum {
    PLAN_MAX_CANDIDATES = UK_MAX_MR * UK_MAX_NV,
    PLAN_MAX_DOT_CANDIDATES = UK_DOT_MAX_MR * UK_DOT_MAX_NJ,
    PLAN_REASON_LEN = 96
};

typedef enum candidate_status {
    CANDIDATE_CHOSEN,   /* the model's tile for this family */
    CANDIDATE_VIABLE,   /* passes every rule, ranked below the chosen one */
    CANDIDATE_REJECTED  /* fails a rule: see reason */
} candidate_status;

typedef struct plan_candidate {
    bool dot;               /* a dot-product member */
    int mr;                 /* rows of C a tile covers */
    int nv;                 /* vectors wide (main), rows of B^T (dot: nj) */
    int nr;                 /* columns of C a tile covers: nv * vec, or nj */
    int accumulators;       /* mr * nv */
    double score;           /* the preference's first key: accumulators
                               (main), FMAs per load (dot) */
    tile_verdict verdict;
    candidate_status status;
    char reason[PLAN_REASON_LEN]; /* rejected: the rule and its numbers */
} plan_candidate;

/* Every built member of the model's ISA, each once, ranked: the chosen
 * first, then the viable by the model's preference, then the rejected by
 * the same preference. Returns how many there are (at most `max` are
 * written). */
int plan_candidates(const plan_model *m, plan_candidate *out, int max);
int plan_dot_candidates(const plan_model *m, plan_candidate *out, int max);

/* "rejected", "viable", "chosen". */
const char *plan_candidate_status_name(candidate_status status);

/* ---- a plan's tessellation as rectangles ---- */

/* Rows [row0, row0 + rows) x columns [col0, col0 + cols) of C, covered
 * by tiles of one ukernel run by one thread. */
typedef struct plan_region {
    int64_t row0, rows, col0, cols;
    int mr;          /* tile height */
    int nv;          /* the ukernel's vectors (dot: nj, rows of B^T) */
    int width;       /* columns each tile writes: nv * vec, fewer if masked */
    bool masked;     /* the tail panel: the ukernel writes only `width` of nv * vec */
    bool dot;
    bool row;        /* the row form: one row, `cols` columns in one call */
    int thread;
    int64_t tiles;   /* tiles in the region */
    int kind;        /* regions with one ukernel and width share a kind: 0, 1, ... */
} plan_region;

/* The regions of plan p for shape s (what plan_gemm planned), top to
 * bottom, left to right within a row band; kinds numbered in order of
 * first appearance. Returns how many there are (at most `max` written);
 * 0 when there is nothing to compute (M, N or K is 0). */
int64_t plan_regions(const gemm_plan *p, const gemm_shape *s, plan_region *out, int64_t max);

/* A raster of the regions, at most PLAN_GRID_MAX_ROWS x _COLS cells.
 * While there is room every band of rows (and of columns) between region
 * boundaries gets at least one cell and the rest are shared in proportion
 * to the bands' lengths, so a 2-row tile under 98 rows still shows; with
 * more bands than cells, cells are spaced evenly. Cell (r, c) shows the
 * region holding element (row_at[r], col_at[c]). */
enum { PLAN_GRID_MAX_ROWS = 36, PLAN_GRID_MAX_COLS = 72 };

typedef struct plan_grid {
    int rows, cols;
    int64_t row_at[PLAN_GRID_MAX_ROWS + 1]; /* first row of each cell row; [rows] = M */
    int64_t col_at[PLAN_GRID_MAX_COLS + 1]; /* first column of each cell column; [cols] = N */
    int region[PLAN_GRID_MAX_ROWS][PLAN_GRID_MAX_COLS]; /* index into the regions */
} plan_grid;

/* Rasterises `n` regions covering M x N into at most max_rows x max_cols
 * cells (capped to the grid's size). */
void plan_grid_build(const plan_region *regions, int64_t n, int64_t M, int64_t N, int max_rows,
                     int max_cols, plan_grid *g);

/* The letter of a region kind in pictures: A-Z, a-z, then '?'. */
char plan_kind_letter(int kind);

#endif /* TESSEL_CANDIDATES_H */
