/*
 * model.c - the analytic model of DESIGN ("Register and cache blocking",
 * after Low, Igual, Smith and Quintana-Orti, TOMS 2016): which ukernel tile
 * keeps the FMA pipes busy within the register file, and which kc and nc
 * keep each operand's block resident in its cache level. Everything here
 * depends only on the hardware profile, so plan_model_init runs once per
 * context and planning a shape is table lookups.
 */
#include <math.h>
#include <string.h>

#include "plan/candidates.h"
#include "plan/plan.h"

/* Vector loads (B rows and A broadcasts) a core issues per cycle: two on
 * every x86 core with AVX2 or AVX-512 and on current arm64 cores. */
static const double LOADS_PER_CYCLE = 2.0;
/* Fixed cycles per ukernel call beyond its k loop (call, pointer set-up). */
static const double CALL_CYCLES = 30.0;
/* The rate of copying operands into panels that the rules weigh copies
 * against (which way to split over threads; whether to pack B is now
 * decided by row tiles, plan_gemm.c b_read_in_place). Their
 * thresholds were set by measurement at this figure, and it is not read
 * from the probe: a context's quick probe measures no L2 bandwidth, and
 * `tessel tune`, whose probe does (L2 139 GB/s here, so 70 GB/s of
 * copying), planned other shapes than the library it tunes. It split
 * 512x768x768, 256^3 and 2048^3 along N with B packed on 2 threads, where
 * the context's plan along M took 0.97, 0.92 and 0.87-1.0 the time. */
static const double RULES_PACK_GBS = 20.0;

/* The model counts what the hardware has: whole FMA pipes, and whole FMAs
 * in flight to hide the latency. The probe's figures are timings against
 * the clock of an integer chain, and move from one process to the next:
 * 1.74-2.03 FMAs a cycle here, but 1.42 in 1 of 80 processes on a quiet
 * machine, and 1.36-1.45 in 3 of 60 while an emulator kept the other vCPU
 * busy (a thread sharing the core's FMA ports, or a lower AVX-512 clock,
 * for the whole probe; the dependent FMAs read 3.85-3.9 cycles meanwhile).
 * So a pipe is counted from a quarter of one up (a core never issues more
 * than it has, so a one-pipe core reads at most 1), and the FMAs in flight
 * are the whole latency times the pipes. Under emulation neither is a
 * core's figure (a fraction of an FMA a cycle against tens of cycles of
 * latency, which rejected every tile); there latency times rate, a ratio of
 * two FMA timings in which the clock cancels, stands in. On the raw figures
 * a shape's plan changed from one process to the next: the calibrated
 * model, its per-tile scales fitted against one probe's tile times, planned
 * 17 of 140 bert-base and dietcode shapes differently in two runs at 1
 * thread, 16x16 tiles among them. */
static void count_whole_fma_units(hw_profile *hw)
{
    double rate = hw->fma_per_cycle, latency = hw->fma_latency_cycles;
    double pipes = floor(rate + 0.75);
    if (pipes < 1.0)
        pipes = 1.0;
    double in_flight = rate >= 0.5 ? round(latency) * pipes : round(latency * rate);
    if (in_flight < 1.0)
        in_flight = 1.0;
    hw->fma_per_cycle = pipes;
    hw->fma_latency_cycles = in_flight / pipes;
}

int model_registers(int mr, int nv)
{
    return mr * nv + nv + 1;
}

bool model_hides_latency(int mr, int nv, double fma_latency, double fma_per_cycle)
{
    return mr * nv >= fma_latency * fma_per_cycle;
}

int model_l1_ways_for_b(int l1_ways, int mr, int nr)
{
    return (int)floor((l1_ways - 1) / (1.0 + (double)mr / nr));
}

static int64_t cache_sets(const hw_cache *c)
{
    if (c->ways <= 0 || c->line_bytes <= 0)
        return 0;
    return c->size_bytes / ((int64_t)c->ways * c->line_bytes);
}

int64_t model_kc(const hw_cache *l1, int mr, int nr)
{
    int ways_b = model_l1_ways_for_b(l1->ways, mr, nr);
    return (int64_t)ways_b * cache_sets(l1) * l1->line_bytes / (nr * (int64_t)sizeof(float));
}

/* A tile that asks the L2 for at most this many bytes a cycle of A and B
 * together has them fed from there as fast as its FMAs use them (an L2
 * delivers 32 bytes a cycle on x86 cores since Haswell and Zen 1, the
 * probe read 32 here; the bound is under a quarter of that), so its A
 * micro-panel need not stay in the L1 while B streams by, and kc deepens
 * until A alone fills the L1 less a way: fewer k blocks, so fewer ukernel
 * calls and passes over C.
 * AMD EPYC family 25 (Zen 4, one 512-bit FMA a cycle): 14x32 asks 6.6
 * bytes a cycle; in one process, time with kc 384-512 / the L1 rule's
 * 128, 1 thread: 2048^3 0.92, 1024^3 0.96, 512x3072x768 0.95, 14x3072x768
 * 0.95, 128x3072x768 0.96-0.98, 512x768x3072 0.96-0.97, 64x768x768 0.99;
 * 2 threads: 2048^3 0.92, 512x768x3072 0.95, 512x3072x768 and 300x2304x768
 * 0.97. The Xeon's 14x32 on two pipes asks 13.1, and there twice the L1
 * rule's kc measured level; AMD EPYC family 23's 6x16 asks 7.3 and was
 * not measured deeper, so the bound sits below it. */
static const double L2_FED_BYTES_PER_CYCLE = 7.0;

double model_panel_bytes_per_cycle(int mr, int nr, int vec, double fma_per_cycle)
{
    double fma_cycles = (double)mr * nr / vec / fma_per_cycle;
    return (mr + nr) * (double)sizeof(float) / fma_cycles;
}

bool model_l2_feeds_tile(int mr, int nr, int vec, double fma_per_cycle)
{
    return model_panel_bytes_per_cycle(mr, nr, vec, fma_per_cycle) <= L2_FED_BYTES_PER_CYCLE;
}

/* The L3 feeds a tile when one core reads it at least this many times as
 * fast as the tile's FMAs use B's panels: the rules that size B's blocks
 * for the L3 (model_nc) or read B in place from it in one block
 * (plan_gemm.c, b_runs_as_one_block) count on panels from the L3 coming
 * as fast as from the L2. The margin covers A's and C's lines on the same
 * path and prefetches that land late. They were measured where it holds
 * by far (AMD EPYC family 23 and 25, their L3 close to each core). The
 * Xeon (family 6 model 167, a mesh L3 of 480 MiB) reads 30 GB/s, 8 bytes
 * a cycle, where its 14x32 tile on two FMA pipes takes 8.4 of B: there,
 * with B's block sized for the L3 / the L2, 1 thread, 512x3072x768 took
 * 1.13x the time and GPT-2's head 128x50257x768 2.3x, and 16x768x3072
 * read in one block / in the rules' kc 1.39x. The AMD EPYC family 25
 * model 1 (Zen 3, AVX2) reads its L3 at 53-75 GB/s in the quick probe,
 * 16-23 bytes a cycle where 6x16 on two pipes takes 10.7: a margin of 1.5
 * put it on either side from process to process, and its plans with B's
 * blocks sized for the L3 took 0.65-1.02 of the time of the L2-sized ones
 * at 1 thread, 0.78-1.02 at 2 (17 shapes each, in one process,
 * bench/results/2026-12-07-session35-zen3-l3-feed-ab.txt). */
static const double L3_FEED_MARGIN = 1.2;

bool model_l3_feeds_tile(const hw_profile *hw, int mr, int vec, double fma_per_cycle)
{
    double l3_gbs = hw->read_gbs[HW_LEVEL_L3];
    if (l3_gbs <= 0 || hw->freq_ghz <= 0 || mr <= 0)
        return true; /* unmeasured (a preset, no L3): the rules as measured */
    double l3_bytes_per_cycle = l3_gbs / hw->freq_ghz;
    /* A k step reads a vector of B per nv FMAs on mr rows. */
    double b_bytes_per_cycle = (double)vec * sizeof(float) * fma_per_cycle / mr;
    return l3_bytes_per_cycle >= L3_FEED_MARGIN * b_bytes_per_cycle;
}

const hw_cache *model_feeding_l3(const plan_model *m)
{
    return m->l3_feeds_tile ? hw_data_cache(&m->hw, 3) : NULL;
}

int64_t model_tile_kc(const hw_cache *l1, int mr, int nr, int vec, double fma_per_cycle)
{
    int64_t kc = model_kc(l1, mr, nr);
    if (kc <= 0 || !model_l2_feeds_tile(mr, nr, vec, fma_per_cycle))
        return kc;
    int64_t deep = (int64_t)(l1->ways - 1) * cache_sets(l1) * l1->line_bytes /
                   (mr * (int64_t)sizeof(float));
    return deep > kc ? deep : kc;
}

int64_t model_nc(const hw_cache *l2, const hw_cache *l3, int64_t kc, int mr, int nr)
{
    int64_t way_bytes = cache_sets(l2) * l2->line_bytes;
    if (way_bytes <= 0 || kc <= 0)
        return nr;
    int64_t a_panel_bytes = kc * mr * (int64_t)sizeof(float);
    int64_t ways_a = (a_panel_bytes + way_bytes - 1) / way_bytes;
    int64_t ways_b = l2->ways - 1 - ways_a;
    if (ways_b < 1)
        ways_b = 1;
    int64_t nc = ways_b * way_bytes / (kc * (int64_t)sizeof(float));
    /* Where half this CPU's share of the L3 holds a wider block, the
     * block is sized for it: each row tile then reads B's panels from the
     * L3 (prefetched ahead, as fast as from the L2 here), and A, packed
     * tile by tile once per column block, is packed fewer times. AMD EPYC
     * family 23 (512 KiB L2, 8 MiB L3 over 2 CPUs), time with nc 2048-4096
     * / the L2 rule's 256-304, in one process: 1 thread 2048^3 0.97,
     * 1024^3 0.97-0.98, 384x2304x768 0.96-0.97, 512x3072x768 0.975-0.98;
     * 2 threads 2048^3 0.93, 1024^3 0.965, 200-403 rows 0.98-0.99. */
    if (l3 && l3->size_bytes > 0) {
        int64_t share = l3->size_bytes / (l3->shared_by > 0 ? l3->shared_by : 1);
        int64_t l3_nc = share / 2 / (kc * (int64_t)sizeof(float));
        if (l3_nc > nc)
            nc = l3_nc;
    }
    nc -= nc % nr;
    return nc < nr ? nr : nc;
}

double model_tile_cycles(int mr, int nv, double fma_latency, double fma_per_cycle,
                         double loads_per_cycle, double broadcast_cycles)
{
    double fma = mr * nv / fma_per_cycle + mr * broadcast_cycles;
    double loads = (mr + nv) / loads_per_cycle;
    double cycles = fma > loads ? fma : loads;
    return cycles > fma_latency ? cycles : fma_latency;
}

/* A stand-in for a missing cache level, so a partial profile still plans. */
static hw_cache cache_or_default(const hw_profile *hw, int level, int64_t size, int ways)
{
    const hw_cache *c = hw_data_cache(hw, level);
    if (c && c->size_bytes > 0 && c->ways > 0 && c->line_bytes > 0)
        return *c;
    return (hw_cache){.level = level, .type = 'U', .size_bytes = size, .ways = ways,
                      .line_bytes = 64, .shared_by = 1};
}

hw_cache model_l1(const plan_model *m)
{
    return cache_or_default(&m->hw, 1, 32 << 10, 8);
}

bool model_fits_load_ports(int mr, int nv, double fma_per_cycle, double loads_per_cycle)
{
    return (mr + nv) * fma_per_cycle <= loads_per_cycle * mr * nv + 1e-9;
}

/* How much more of a tile's FMA time its broadcasts of A may take than
 * they take in the widest tile. A tile one vector wide broadcasts once
 * per FMA; where a broadcast also takes a vector pipe, it pays for every
 * one. AMD EPYC (family 23), where the probe reads 0.20-0.23 cycles a
 * broadcast: 5-14 x 8 tiles ran at 33 GF/s in L1 against 39-40 for 3-6 x
 * 16, 2-4 x 24 and 2 x 32, and GEMMs with 6x16 as the main tile took
 * 0.79-0.83 of the time of 14x8 ones (1024^3, 64x768x768, 384x3072x768,
 * 1 thread). There 8 wide adds 15-17% more than 32 wide, 16 wide 5-6%.
 * Against the widest tile rather than absolute, so that a probe that
 * reads broadcasts dear (a neighbour on the core) narrows the choice
 * instead of rejecting every tile. With the probe's 0.21-0.25 cycles
 * there, 8 wide stays out from 0.13 and 16 wide in up to 0.4; where a
 * neighbour on the core made it read 0.8-1.0, 24 wide is the widest in,
 * as fast in L1. */
static const double MAX_EXTRA_BROADCAST_SHARE = 0.1;

/* The share is counted per FMA pipe: a broadcast's cycles against one
 * pipe's FMAs of the row (nv), not against the core's (nv / pipes). On
 * one pipe the two are the same. On two, counted against the core's, the
 * probe's 0.19-0.51 cycles a broadcast on the AMD EPYC of family 25
 * model 1 (Zen 3, AVX2) left 6x16 out for 4x24 in 7 of 10 processes,
 * where 6x16, which reads two thirds of the B bytes per FMA, was the
 * faster: in one process, the two alternating, 4x24 took 1.047 of
 * 6x16's time (geomean of 13 BERT shapes at 1 and 2 threads, 6x16 ahead
 * in 20 of 26) and 1.028 over 7 more (12 of 14, the rest level;
 * `2026-12-06-plan-ab-zen3-6x16-4x24.txt`). The probe's loop feeds
 * every FMA a broadcast, which a two-pipe core may not absorb where a
 * tile's one broadcast for two or more FMAs is. */
double model_broadcast_share(int nv, double broadcast_cycles)
{
    return broadcast_cycles / nv;
}

/* Rules 1-3 of model_tile_verdict: registers, latency, load ports. */
static tile_rule first_rules(const plan_model *m, int mr, int nv)
{
    double fma_per_cycle = m->hw.fma_per_cycle, latency = m->hw.fma_latency_cycles;
    if (model_registers(mr, nv) > m->hw.vec_registers)
        return TILE_RULE_REGISTERS;
    if (!model_hides_latency(mr, nv, latency, fma_per_cycle))
        return TILE_RULE_LATENCY;
    if (!model_fits_load_ports(mr, nv, fma_per_cycle, LOADS_PER_CYCLE))
        return TILE_RULE_LOAD_PORTS;
    return TILE_RULE_PASSES;
}

/* The broadcast rule's baseline: the share of the widest built tile that
 * passes rules 1-3 (widths go up, so the last one found). */
static void find_least_broadcast_share(plan_model *m)
{
    m->least_broadcast_share = 0.0;
    for (int nv = 1; nv <= UK_MAX_NV; nv++)
        for (int mr = 1; mr <= UK_MAX_MR; mr++)
            if (m->tile_cycles[nv][mr] > 0.0 && first_rules(m, mr, nv) == TILE_RULE_PASSES)
                m->least_broadcast_share =
                    model_broadcast_share(nv, m->hw.broadcast_cycles);
}

/* The rules of DESIGN ("Register and cache blocking") on one main-family
 * member, in order, stopping at the first that fails: fit the registers,
 * hide the FMA latency, feed the FMAs within the load ports, keep the
 * broadcasts' cost on the vector pipes near the widest tile's, and leave
 * the streaming B micro-panels at least one L1 way. The numbers compared
 * are kept so the candidate list can say why a tile was rejected. */
tile_verdict model_tile_verdict(const plan_model *m, int mr, int nv)
{
    hw_cache l1 = model_l1(m);
    double fma_per_cycle = m->hw.fma_per_cycle, latency = m->hw.fma_latency_cycles;
    tile_verdict v = {
        .registers = model_registers(mr, nv),
        .registers_available = m->hw.vec_registers,
        .chains = mr * nv,
        .fma_latency = latency,
        .fma_pipes = fma_per_cycle,
        .chains_needed = latency * fma_per_cycle,
        .load_cycles = (mr + nv) / LOADS_PER_CYCLE,
        .fma_cycles = mr * nv / fma_per_cycle,
        .broadcast_cycles = mr * m->hw.broadcast_cycles,
        .broadcast_share = model_broadcast_share(nv, m->hw.broadcast_cycles),
        .least_broadcast_share = m->least_broadcast_share,
        .l1_ways = l1.ways,
        .l1_ways_for_b = model_l1_ways_for_b(l1.ways, mr, nv * m->vec),
        .kc = model_kc(&l1, mr, nv * m->vec),
    };
    v.failed = first_rules(m, mr, nv);
    if (v.failed != TILE_RULE_PASSES)
        return v;
    if (v.broadcast_share > v.least_broadcast_share + MAX_EXTRA_BROADCAST_SHARE + 1e-9)
        v.failed = TILE_RULE_BROADCASTS;
    else if (v.kc <= 0)
        v.failed = TILE_RULE_L1;
    return v;
}

/* Most accumulators, ties to the tallest: with A resident in L1 the B
 * micro-panels stream from L2 at nr floats a k step, 1/mr of them per
 * FMA, so taller tiles ask less of the L2. (Measured: 14x32 over 6x64 on
 * 1296x3072x768 at 1 thread, 135-152 against 92-123 GF/s in alternating
 * runs.) */
int model_compare_tiles(int mr_a, int nv_a, int mr_b, int nv_b)
{
    if (mr_a * nv_a != mr_b * nv_b)
        return mr_a * nv_a > mr_b * nv_b ? -1 : 1;
    return mr_b - mr_a;
}

/* Among the built tiles that pass every rule, the preferred one. */
static void choose_main_tile(plan_model *m)
{
    for (int nv = 1; nv <= UK_MAX_NV; nv++)
        for (int mr = 1; mr <= UK_MAX_MR; mr++) {
            if (m->tile_cycles[nv][mr] == 0.0)
                continue;
            if (model_tile_verdict(m, mr, nv).failed != TILE_RULE_PASSES)
                continue;
            if (m->mr == 0 || model_compare_tiles(mr, nv, m->mr, m->nv) < 0) {
                m->mr = mr;
                m->nv = nv;
            }
        }
}

/* Whether any built dot member hides the FMA latency. With 16 registers
 * none may (AVX2: 10 chains needed, 9 fit); the rule is waived then. */
static bool dot_family_hides_latency(const plan_model *m)
{
    for (int mr = 1; mr <= UK_DOT_MAX_MR; mr++)
        for (int nj = 1; nj <= UK_DOT_MAX_NJ; nj++)
            if (ukernel_dot_lookup(m->hw.isa, mr, nj) &&
                model_hides_latency(mr, nj, m->hw.fma_latency_cycles, m->hw.fma_per_cycle))
                return true;
    return false;
}

tile_verdict model_dot_verdict(const plan_model *m, int mr, int nj)
{
    tile_verdict v = {
        .registers = mr * nj + mr + nj,
        .registers_available = m->hw.vec_registers,
        .chains = mr * nj,
        .fma_latency = m->hw.fma_latency_cycles,
        .fma_pipes = m->hw.fma_per_cycle,
        .chains_needed = m->hw.fma_latency_cycles * m->hw.fma_per_cycle,
        .latency_waived = !dot_family_hides_latency(m),
        .load_cycles = (mr + nj) / LOADS_PER_CYCLE,
        .fma_cycles = mr * nj / m->hw.fma_per_cycle,
    };
    if (v.registers > v.registers_available)
        v.failed = TILE_RULE_REGISTERS;
    else if (!v.latency_waived &&
             !model_hides_latency(mr, nj, m->hw.fma_latency_cycles, m->hw.fma_per_cycle))
        v.failed = TILE_RULE_LATENCY;
    return v;
}

/* The dot tile: most FMAs per load (mr + nj vectors feed mr * nj FMAs),
 * ties to more accumulators; with the latency waived, the most
 * accumulators first, since the chains are what is short. Last, the
 * taller: B^T, the large operand, is read once per mr rows of A. */
int model_compare_dot_tiles(bool latency_waived, int mr_a, int nj_a, int mr_b, int nj_b)
{
    double per_load_a = (double)mr_a * nj_a / (mr_a + nj_a);
    double per_load_b = (double)mr_b * nj_b / (mr_b + nj_b);
    int acc_a = mr_a * nj_a, acc_b = mr_b * nj_b;
    bool per_load_differs = fabs(per_load_a - per_load_b) > 1e-9;
    if (latency_waived && acc_a != acc_b)
        return acc_a > acc_b ? -1 : 1;
    if (per_load_differs)
        return per_load_a > per_load_b ? -1 : 1;
    if (acc_a != acc_b)
        return acc_a > acc_b ? -1 : 1;
    return mr_b - mr_a;
}

static void choose_dot_tile(plan_model *m)
{
    for (int mr = 1; mr <= UK_DOT_MAX_MR; mr++)
        for (int nj = 1; nj <= UK_DOT_MAX_NJ; nj++) {
            if (!ukernel_dot_lookup(m->hw.isa, mr, nj))
                continue;
            tile_verdict v = model_dot_verdict(m, mr, nj);
            if (v.failed != TILE_RULE_PASSES)
                continue;
            if (m->dot_mr == 0 ||
                model_compare_dot_tiles(v.latency_waived, mr, nj, m->dot_mr, m->dot_nj) < 0) {
                m->dot_mr = mr;
                m->dot_nj = nj;
            }
        }
}

/* Cost per k step of one tile of height h, nv vectors wide, with its
 * per-call overhead (call, C update) spread over a kc-long k loop. */
static double tile_step_cost(const plan_model *m, int nv, int h)
{
    return m->tile_cycles[nv][h] + (CALL_CYCLES + 2.0 * h * nv) / (double)m->kc;
}

/* Built, and within the register file: a tile that spills is never worth
 * it, whatever width a plan gives its main tile. */
static bool tile_usable(const plan_model *m, int nv, int h)
{
    return m->tile_cycles[nv][h] > 0.0 && model_registers(h, nv) <= m->hw.vec_registers;
}

/* For each width: the DP over remainders (the cheapest cover of every
 * length up to PLAN_DP_LEN), and the bulk height, the one cheapest per
 * row. The main width's bulk height is the main tile's.
 *
 * Covers of equal cost go to the one whose shortest tile is tallest:
 * 17 rows as 9 + 8, not 14 + 3. The step costs tie (34 cycles a k step
 * either way), but a 3-row tile reads its B panels for 6 FMAs a step, and
 * with B read in place or from L2 that read is what it waits on. Time
 * even / tail-heavy covers, 32 wide, AMD EPYC (Zen 4), 1 thread: 17 x
 * 3072 x 768 0.80, 17 x 768 x 768 0.87, 31 x 768 x 3072 0.92, 45 x 2304 x
 * 768 0.99, 100 x 768 x 768 0.98; 2 threads: 17 x 3072 x 768 0.81, 31 x
 * 768 x 768 0.91, 45 x 3072 x 768 0.93. */
static void build_row_dp(plan_model *m)
{
    for (int nv = 1; nv <= UK_MAX_NV; nv++) {
        double best_per_row = INFINITY;
        for (int h = 1; h <= UK_MAX_MR; h++)
            if (tile_usable(m, nv, h) && tile_step_cost(m, nv, h) / h <= best_per_row) {
                best_per_row = tile_step_cost(m, nv, h) / h;
                m->bulk_mr[nv] = h;
            }
        int shortest[PLAN_DP_LEN + 1]; /* the shortest tile of each cover */
        m->dp_cost[nv][0] = 0.0;
        m->dp_first[nv][0] = 0;
        shortest[0] = UK_MAX_MR + 1;
        for (int len = 1; len <= PLAN_DP_LEN; len++) {
            m->dp_cost[nv][len] = INFINITY;
            shortest[len] = 0;
            for (int h = 1; h <= UK_MAX_MR && h <= len; h++) {
                if (!tile_usable(m, nv, h) || (nv == m->nv && h > m->mr))
                    continue;
                double cost = m->dp_cost[nv][len - h] + tile_step_cost(m, nv, h);
                int low = h < shortest[len - h] ? h : shortest[len - h];
                bool cheaper = cost < m->dp_cost[nv][len] - 1e-12;
                bool tie = !cheaper && cost < m->dp_cost[nv][len] + 1e-12;
                if (cheaper || (tie && low > shortest[len])) {
                    m->dp_cost[nv][len] = cost;
                    m->dp_first[nv][len] = h;
                    shortest[len] = low;
                }
            }
        }
    }
    m->bulk_mr[m->nv] = m->mr;
}

int plan_model_init(plan_model *m, const hw_profile *hw)
{
    memset(m, 0, sizeof *m);
    m->hw = *hw;
    if (m->hw.fma_latency_cycles <= 0)
        m->hw.fma_latency_cycles = 4;
    if (m->hw.fma_per_cycle <= 0)
        m->hw.fma_per_cycle = 1;
    count_whole_fma_units(&m->hw);
    m->vec = ukernel_vec_floats(hw->isa);

    for (int nv = 1; nv <= UK_MAX_NV; nv++)
        for (int mr = 1; mr <= UK_MAX_MR; mr++) {
            ukernel_desc d = {.isa = hw->isa, .mr = mr, .nv = nv, .a_packed = true};
            if (ukernel_lookup(&d))
                m->tile_cycles[nv][mr] =
                    model_tile_cycles(mr, nv, m->hw.fma_latency_cycles, m->hw.fma_per_cycle,
                                      LOADS_PER_CYCLE, m->hw.broadcast_cycles);
        }

    hw_cache l1 = model_l1(m);
    hw_cache l2 = cache_or_default(&m->hw, 2, 1 << 20, 8);
    find_least_broadcast_share(m);
    choose_main_tile(m);
    choose_dot_tile(m);
    if (m->mr == 0 || m->dot_mr == 0)
        return -1;
    m->nr = m->nv * m->vec;
    m->kc = model_tile_kc(&l1, m->mr, m->nr, m->vec, m->hw.fma_per_cycle);
    m->l2_feeds_tile = model_l2_feeds_tile(m->mr, m->nr, m->vec, m->hw.fma_per_cycle);
    m->l3_feeds_tile = model_l3_feeds_tile(&m->hw, m->mr, m->vec, m->hw.fma_per_cycle);
    const hw_cache *l3 = model_feeding_l3(m); /* NULL: B's blocks sized for the L2 alone */
    m->nc = model_nc(&l2, l3, m->kc, m->mr, m->nr);
    m->l2_bytes = l2.size_bytes;
    build_row_dp(m);
    for (int nv = 1; nv <= UK_MAX_NV; nv++) {
        if (m->bulk_mr[nv] == 0)
            continue;
        m->kc_for[nv] =
            model_tile_kc(&l1, m->bulk_mr[nv], nv * m->vec, m->vec, m->hw.fma_per_cycle);
        if (m->kc_for[nv] <= 0)
            m->kc_for[nv] = m->kc;
        m->nc_for[nv] = model_nc(&l2, l3, m->kc_for[nv], m->bulk_mr[nv], nv * m->vec);
    }

    cost_model_default(&m->cost, &m->hw);
    m->pack_bytes_per_second = RULES_PACK_GBS * 1e9;
    return 0;
}

/* The quick probe of a process now and then reads the FMAs well off (1 in
 * about a hundred processes here read under 1.25 a cycle, one pipe, and
 * its calibrated model then took 16x16 tiles for 2048x768x768). A
 * calibration records the figures its tile rates were fitted on, and the
 * rules are rebuilt from those, so every process plans as it did. */
int plan_model_set_cost(plan_model *m, const cost_model *cost)
{
    double broadcast =
        cost->broadcast_cycles >= 0 ? cost->broadcast_cycles : m->hw.broadcast_cycles;
    if (cost->calibrated && cost->fma_latency > 0 && cost->fma_per_cycle > 0 &&
        (cost->fma_latency != m->hw.fma_latency_cycles ||
         cost->fma_per_cycle != m->hw.fma_per_cycle || broadcast != m->hw.broadcast_cycles)) {
        hw_profile hw = m->hw;
        hw.fma_latency_cycles = cost->fma_latency;
        hw.fma_per_cycle = cost->fma_per_cycle;
        hw.broadcast_cycles = broadcast;
        if (plan_model_init(m, &hw) != 0)
            return -1;
    }
    m->cost = *cost;
    m->cost.broadcast_cycles = broadcast;
    return 0;
}
