/*
 * cost.h - the cost model: a plan's predicted time as a weighted sum of
 * features, each a time the plan spends at one resource (its busiest
 * thread's ukernel k loops, its calls, the bytes each level moves over that
 * level's bandwidth, packing, threads). The features come from the
 * hardware profile and the plan, so they move with the machine; the
 * weights come from calibration (src/tune/) and transfer between machines.
 * Uncalibrated, the weights are analytic defaults: k loops plus packing.
 */
#ifndef TESSEL_COST_H
#define TESSEL_COST_H

#include <stdbool.h>
#include <stddef.h>

#include "hw/hw.h"
#include "kernels/ukernel.h"

typedef enum cost_feature {
    COST_FMA,        /* busiest thread's ukernel k loops at the tile rates */
    COST_CALLS,      /* its ukernel calls (set-up, C update) */
    COST_B_STREAM,   /* B micro-panels streamed past each row tile, from L2 */
    COST_A_STREAM,   /* A read once per column block, from where it lives */
    COST_PACK,       /* bytes copied into panels, over the pack bandwidth */
    COST_C,          /* C read and written once per k block */
    COST_B_IN_PLACE, /* B read in place: its rows lie far apart */
    COST_MEMORY,     /* operands that do not stay in a core's L2 between
                        calls, over the bandwidth of the level they live in,
                        which the threads share */
    COST_THREADS,    /* one microsecond per extra thread woken */
    COST_FIXED,      /* one microsecond per call */
    COST_NFEATURES
} cost_feature;

/* Ukernel tile rates are measured with A packed or read in place. */
enum { COST_A_PACKED = 0, COST_A_IN_PLACE = 1 };

typedef struct cost_model {
    bool calibrated;
    /* The machine numbers the features are computed with. Calibration
     * stores the ones it measured, so a loaded model predicts with the
     * numbers it was fitted on. */
    double ghz;
    double gbs[HW_LEVEL_COUNT];   /* one core's read bandwidth per level */
    double pack_gbs;
    /* The FMA latency, issue rate and broadcast cost the model's rules and
     * tile rates were built from (plan_model_set_cost rebuilds them from
     * these, so every process plans as the calibration did); 0 in a model
     * stored before, and broadcast_cycles -1 in one stored before it. */
    double fma_latency, fma_per_cycle, broadcast_cycles;
    double coef[COST_NFEATURES];
    /* The k loops overlap with memory traffic: the FMA term is
     * max(fma, overlap * memory); 0 means they add. Fitted by calibration. */
    double overlap;
    /* Measured over analytic cycles of each (mr, nv) tile's k step in L1;
     * 1 where nothing was measured. */
    float tile_scale[2][UK_MAX_NV + 1][UK_MAX_MR + 1];
} cost_model;

/* The analytic defaults for a profile (unmeasured numbers get per-cycle
 * defaults for the class of machine). */
void cost_model_default(cost_model *cm, const hw_profile *hw);

/* Names of the features, for tables and the stored text. */
const char *cost_feature_name(int f);

/* The features as the weights apply to them: the FMA feature replaced by
 * max(fma, overlap * memory). */
void cost_effective(const double *f, double overlap, double *g);

/* Sum of coef[i] * g[i] over the effective features. */
double cost_predict(const cost_model *cm, const double *f);

/* The stored form: a few lines of "key values". Parsing checks every field
 * and returns 0, or -1 (and leaves *cm alone) on anything unexpected. */
int cost_model_format(const cost_model *cm, char *buf, size_t len);
int cost_model_parse(const char *text, cost_model *cm);

#endif /* TESSEL_COST_H */
