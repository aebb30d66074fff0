/*
 * plan_split.c - how a plan's work is shared across threads: the M x N
 * grid split along M (row tiles, claimed one at a time as the threads
 * run) or along N (column panels, fixed shares), whichever is predicted
 * to end first from the tiles' rates, the copies each split makes and
 * the fetches of B it costs; and whether a call is worth threads at all.
 */
#include <string.h>

#include "plan/plan_rules.h"

/* Row tiles a thread from which a split along M of B read in place is
 * charged no ragged end (see the split below). */
static const int64_t IN_PLACE_M_MIN_TILES = 2;

/* A split along N is charged this share of its time more where a split
 * along M would hand out STATIC_SPLIT_MIN_TILES row tiles or more a
 * thread: its halves are fixed, so the call ends with the slower thread,
 * and on a shared host one often is; row tiles claimed one at a time let
 * it take fewer. AMD EPYC family 23, a neighbour on the cores, 2
 * threads, against oneDNN (bench/compare, 30 bert-base and dietcode
 * shapes that move): bert-base 0.93-1.01 -> 0.99-1.09, dietcode
 * 0.87-0.96 -> 0.95-1.05 per round; in one process 256 x 2304 x 768,
 * 512 x 768 x 768, 128 x 1024 x 4096 took 0.84-0.86 of the time along M,
 * 100 x 3072 x 768 1.09. Since then a split along N runs its shares in
 * groups a fast thread takes from a slowed one (ops/gemm.c,
 * run_split_n), four a share, coarser than M's row tiles; the slack was
 * not measured again. */
static const double STATIC_SPLIT_SLACK = 0.05;
static const int64_t STATIC_SPLIT_MIN_TILES = 4;

/* Cycles per k step of an (mr, nv) tile: the rule's, times what
 * calibration measured for that ukernel and A layout. */
static double tile_rate(const plan_model *m, const gemm_plan *p, int nv, int mr)
{
    int layout = p->pack_a ? COST_A_PACKED : COST_A_IN_PLACE;
    return m->tile_cycles[nv][mr] * m->cost.tile_scale[layout][nv][mr];
}

/* Cycles per k step of one row tile across `panels` column panels, the
 * last of which is `tail_nv` vectors wide. */
static double row_tile_cycles(const plan_model *m, const gemm_plan *p, int mr, int tail_nv)
{
    return (double)(p->npanels - 1) * tile_rate(m, p, p->nv, mr) + tile_rate(m, p, tail_nv, mr);
}

/* Splits `units` items of costs unit_cost(i) into `threads` contiguous
 * ranges of near-equal cost; returns the largest range's cost. */
static double balance(int64_t units, int threads, const double *prefix, int64_t *bounds)
{
    double total = prefix[units];
    bounds[0] = 0;
    int64_t at = 0;
    for (int t = 1; t < threads; t++) {
        double target = total * t / threads;
        while (at < units && prefix[at + 1] <= target)
            at++;
        /* Round to whichever boundary is nearer the target. */
        if (at < units && prefix[at + 1] - target < target - prefix[at])
            at++;
        bounds[t] = at;
    }
    bounds[threads] = units;
    double worst = 0.0;
    for (int t = 0; t < threads; t++) {
        double cost = prefix[bounds[t + 1]] - prefix[bounds[t]];
        if (cost > worst)
            worst = cost;
    }
    return worst;
}

/* B read in place is fetched by every thread that reads it, from L3 or
 * memory unless the thread's share stayed in its L2 since the last call:
 * along M each thread reads all of B, along N only its own columns. B
 * that the call packs, shared along M, is fetched the same way: each
 * block from the cache of the thread that packed it (along N each thread
 * packs and keeps its own columns). The
 * rate it is charged at is what the FMAs do not hide, fitted to the
 * differences measured between the two splits: Intel Xeon (model 167, L2
 * 2 MiB), 2 threads, time along N / M in one process, 16 x 768 x 3072
 * 0.82, 32 x 768 x 3072 0.88, 48-64 x 3072 and 2304 x 768 0.88-0.90, 64
 * x 768 x 768 0.92 (its halves of B stay in the L2s), 100-150 x 3072 x
 * 768 0.93-0.95, 150 x 768 x 3072 0.98-1.00, 512 x 768 x 3072 1.01
 * (where packing A twice weighs more). B packed by the call, 2 threads,
 * N / M: 255-384 x 768 x 768 and x 768 x 3072 0.92-0.96, 384-512 x 1024
 * x 1024 and x 1024 x 4096 0.96-0.98; 1296 x 768 x 768 and 512^3, which
 * stay along M, 1.04 and 1.02. Pre-packed panels, read in one run each,
 * went the other way (64-150 x 768 x 768 N / M 1.02-1.06), so they are
 * not charged. Where the L3 does not feed the tiles (model.c,
 * model_l3_feeds_tile), the fetch comes at most at the rate one core
 * reads it, as the quick probe measured: B's blocks are then sized for
 * the L2, and the same Xeon read B packed by the other thread at its
 * L3's 30 GB/s, and 2
 * threads split along N / M, packed, took 200x768x768 0.86, 255 x 768 x
 * 3072 0.91, 384x768x3072 and 512x768x768 0.94, 255^3 0.94 (in one
 * process, 9 rounds): at 30 GB/s the charge is 16%, 13%, 8% and 6% of
 * their FMA time. */
static const double B_FETCH_GBS = 100.0;

static double b_fetch_gbs(const plan_model *m)
{
    double l3 = m->hw.read_gbs[HW_LEVEL_L3];
    return !m->l3_feeds_tile && l3 > 0 && l3 < B_FETCH_GBS ? l3 : B_FETCH_GBS;
}

static double b_fetched(const plan_model *m, double b_bytes, int threads, char split)
{
    double share = split == 'N' && threads > 1 ? b_bytes / threads : b_bytes;
    return share <= 0.75 * (double)m->l2_bytes ? 0.0 : share;
}

/* Prefix sums of unit costs for the two ways of splitting. Row tiles: each
 * costs its height's cycles across all panels. Column panels: each costs
 * the sum over row tiles; all equal but the masked last one. The arrays are
 * on the stack up to a size and the split is evenly-by-count past it,
 * which is what balancing gives there anyway. */
enum { SPLIT_EXACT_UNITS = 4096 };

/* A split along M over threads runs with row tiles handed out one at a
 * time (ops/gemm.c), so a thread ends about when the total divided by the
 * threads is done, give or take the tile it took last: half the largest
 * tile on average, and never less than that tile. The static bounds
 * split_rows computes are what each thread is expected to take. Tiles
 * are claimed block by block, so where nothing else holds the threads
 * back the tile taken last is only one k block of it (`last_share` of
 * the tile: B read in place or packed before the call); where they
 * share B packed on the way, the tile that packs each block's panels
 * sets the pace, and the whole tile is charged. */
static double claimed_rows(const plan_model *m, const gemm_plan *p, int threads, int tail_nv,
                           double last_share)
{
    double total = 0.0, largest = 0.0;
    for (int i = 0; i < p->nruns; i++) {
        double tile = row_tile_cycles(m, p, p->runs[i].mr, tail_nv);
        total += (double)p->runs[i].count * tile;
        largest = tile > largest ? tile : largest;
    }
    if (threads <= 1)
        return total;
    double expected = total / threads + 0.5 * largest * last_share;
    return expected > largest ? expected : largest;
}

/* Row tiles: the bounds, what each thread is expected to take, and the
 * largest share's cost, which is the split's where the shares are fixed
 * (each thread packs its own B); where the tiles are handed out, the
 * cost is claimed_rows'. */
static double split_rows(const plan_model *m, const gemm_plan *p, int threads, int tail_nv,
                         int64_t *bounds)
{
    double prefix[SPLIT_EXACT_UNITS + 1];
    int64_t units = p->ntiles;
    if (units > SPLIT_EXACT_UNITS) {
        for (int t = 0; t <= threads; t++)
            bounds[t] = units * t / threads;
        return claimed_rows(m, p, threads, tail_nv, 0.0);
    }
    prefix[0] = 0.0;
    for (int64_t i = 0; i < units; i++) {
        int64_t row;
        int mr;
        plan_tile_rows(p, i, &row, &mr);
        prefix[i + 1] = prefix[i] + row_tile_cycles(m, p, mr, tail_nv);
    }
    return balance(units, threads, prefix, bounds);
}

static double split_cols(const plan_model *m, const gemm_plan *p, int threads, int tail_nv,
                         int64_t *bounds)
{
    double prefix[SPLIT_EXACT_UNITS + 1];
    double full = 0.0, tail = 0.0;
    for (int i = 0; i < p->nruns; i++) {
        full += (double)p->runs[i].count * tile_rate(m, p, p->nv, p->runs[i].mr);
        tail += (double)p->runs[i].count * tile_rate(m, p, tail_nv, p->runs[i].mr);
    }
    int64_t units = p->npanels;
    if (units > SPLIT_EXACT_UNITS) {
        for (int t = 0; t <= threads; t++)
            bounds[t] = units * t / threads;
        return full * (double)units / threads;
    }
    prefix[0] = 0.0;
    for (int64_t i = 0; i < units; i++)
        prefix[i + 1] = prefix[i] + (i == units - 1 ? tail : full);
    return balance(units, threads, prefix, bounds);
}

/* One core's FMA peak in flops a second, at the model's clock. */
static double peak_flops(const plan_model *m)
{
    return plan_clock_hz(m) * m->hw.fma_per_cycle * 2.0 * m->vec;
}

/* Below this much work on one thread, a call runs on the caller alone:
 * waking a thread and sharing counters with it cost more than it gives.
 * Each matrix costs SECONDS_PER_MATRIX beyond its flops (192 x (5x64x5)
 * took 16-23 us on one thread, 3.6 of them flops). Time on 1 thread, 2
 * threads: 12 x (5x64x5) 1.0 us, 3.1 us; 12 x (1x64x1) 0.6, 2.4; 12 x
 * (24x64x24) 8.6, 8.1-8.9; 192 x (5x64x5) 16-23, 13-15; one 64^3 4.0,
 * 4.5; one 127^3 28-30, 27.
 * A matrix of one row (or a few) reads each element of B for one FMA:
 * its operands read from the L2 take longer than its flops at the peak,
 * and that is its time. Counted by flops alone, a decoder's attention at
 * one token and small matrix-vector products stayed on one thread; by
 * what they read, 2 threads against 1 (Zen 4, separate processes
 * alternating, three each): 12 x (1x64x128) 0.64-0.75 of the time, 12 x
 * (1x128x64) B^T 0.71-0.73, one 1x512x256 0.67-0.78, one 1x256x512 and
 * 1x1024x128 0.59-0.69; no shape of bench/shapes/ changes side. */
static const double THREADS_MIN_SECONDS = 4e-6;
static const double SECONDS_PER_MATRIX = 0.1e-6;

bool plan_threads_pay(const plan_model *m, const gemm_shape *s, int64_t batch)
{
    double M = (double)s->M, N = (double)s->N, K = (double)s->K;
    double compute = 2.0 * M * N * K / peak_flops(m);
    double read = (M * K + K * N + M * N) * sizeof(float) / (m->cost.gbs[HW_LEVEL_L2] * 1e9);
    double matrix = compute > read ? compute : read;
    return (double)batch * (matrix + SECONDS_PER_MATRIX) >= THREADS_MIN_SECONDS;
}

/* Where the L3 does not feed the tiles (model.c, model_l3_feeds_tile),
 * the threads of a split along M each pack their own copy of B, over a
 * fixed share of the row tiles, instead of sharing one copy tile by tile
 * (ops/gemm.c, run_shared_b): the panels one thread packed reach the
 * other from its L2 across the L3's path, slower than a copy of its own
 * costs. Intel Xeon (family 6 model 207, its L3 read at 35 GB/s by one
 * core, 9 bytes a cycle), 2 threads, time own / shared in one process
 * (calls alternating): 384 x 768 x 768 0.91-0.93, 511 x 768 x 768 0.935,
 * 384 x 768 x 3072 0.91, 512 and 688 x 768 x 3072 0.96-0.97, 1296 x 768 x
 * 768 0.96, 512 x 3072 x 768 0.96, 1024^3 0.97, 2048^3 0.99, 255^3 0.86;
 * 100 x 768 x 768, 200 x 2304 x 768, 128 x 3072 x 768 level
 * (bench/results/2026-12-07-session36-spr-own-b-ab.txt). Where the L3
 * keeps up (AMD EPYC), the shared copy and its tiles handed out one at a
 * time stay: with fixed halves the two ended 10-20% apart there. */
static bool threads_pack_own_b(const plan_model *m, const gemm_shape *s, const gemm_plan *p,
                               int threads)
{
    return threads > 1 && p->pack_b && s->prepacked_kc == 0 && !m->l3_feeds_tile;
}

/* Both splits are tried and the one predicted to end first kept, unless
 * the choice names one. The threads of a split along M pack one shared
 * B between them, or each its own (threads_pack_own_b); along N, each
 * packs all of A. */
void plan_split_grid(const plan_model *m, const gemm_shape *s, const plan_choice *c,
                     int threads, int tail_nv, gemm_plan *p)
{
    bool streams_in_place = !p->pack_b && p->b_from_memory;
    int t_m = threads < p->ntiles ? threads : (int)p->ntiles;
    int t_n = threads < p->npanels ? threads : (int)p->npanels;
    int64_t bounds_m[PLAN_MAX_THREADS + 1], bounds_n[PLAN_MAX_THREADS + 1];
    double bytes_a = p->pack_a ? (double)s->M * s->K * 8 : 0.0; /* read + write */
    double bytes_b = p->pack_b && !s->prepacked_kc ? (double)s->K * s->N * 8 : 0.0;
    double per_pack_byte = plan_clock_hz(m) / m->pack_bytes_per_second;
    double fixed_rows = split_rows(m, p, t_m, tail_nv, bounds_m);
    bool call_packs_b = p->pack_b && s->prepacked_kc == 0;
    bool own_b = threads_pack_own_b(m, s, p, t_m);
    bool waits_on_packer = call_packs_b && !own_b;
    /* With B read in place and two row tiles or more a thread, the end
     * is not charged at all: the half k block a thread may wait made N
     * win where M measured 4-15% faster (56-100 x 768 x 768 at 2
     * threads, Xeon model 207; at 17-31 rows, a tile or so a thread, N
     * stays 5-18% faster). On the Xeon model 167 the same shapes ran
     * 4-9% faster along N, which the fetch of B below now charges
     * (b_fetched). */
    bool many_tiles = !p->pack_b && p->ntiles >= IN_PLACE_M_MIN_TILES * t_m;
    double last_share = waits_on_packer ? 1.0
                        : many_tiles    ? 0.0
                                        : (double)p->kc / (double)s->K;
    double fma_m = (own_b ? fixed_rows : claimed_rows(m, p, t_m, tail_nv, last_share)) *
                   (double)s->K;
    double fma_n = split_cols(m, p, t_n, tail_nv, bounds_n) * (double)s->K;
    double cost_m = fma_m + (bytes_b * (own_b ? t_m : 1) + bytes_a) / t_m * per_pack_byte;
    double cost_n = fma_n + (bytes_a + bytes_b / t_n) * per_pack_byte;
    double per_fetch_byte = plan_clock_hz(m) / (b_fetch_gbs(m) * 1e9);
    double b_bytes = (double)s->K * (double)s->N * sizeof(float);
    if (!p->pack_b) {
        cost_m += b_fetched(m, b_bytes, t_m, 'M') * per_fetch_byte;
        cost_n += b_fetched(m, b_bytes, t_n, 'N') * per_fetch_byte;
    } else if (call_packs_b && t_m > 1) {
        /* Along M every thread fetches all of B: from the packer's cache,
         * or (own_b) to copy it. With own copies, along N each thread
         * fetches what it copies too: all of A (b_fetched's whole share,
         * as along M) and its columns of B. */
        cost_m += b_fetched(m, b_bytes, t_m, 'M') * per_fetch_byte;
        if (own_b) {
            double a_bytes = (double)s->M * (double)s->K * sizeof(float);
            cost_n += (b_fetched(m, a_bytes, t_n, 'M') + b_fetched(m, b_bytes, t_n, 'N')) *
                      per_fetch_byte;
        }
    }
    if (t_n > 1 && p->ntiles >= STATIC_SPLIT_MIN_TILES * t_m)
        cost_n *= 1.0 + STATIC_SPLIT_SLACK;
    if (own_b)
        cost_m *= 1.0 + STATIC_SPLIT_SLACK;
    /* B streamed in place splits along N: each thread then runs its
     * columns' blocks panels outermost (ops/gemm_blocks.c), where a split along
     * M shares each block's panels across the threads tile by tile. In
     * one process, 2 threads, time along N / along M: 50, 64, 90 x 768 x
     * 3072 0.88, 0.89, 0.92; 24, 40 x 3072 x 768 0.88, 0.95. */
    bool along_m = c->split == 'M' ||
                   (c->split != 'N' && !(streams_in_place && t_n > 1) && cost_m <= cost_n);
    p->split = along_m ? 'M' : 'N';
    p->b_per_thread = along_m && own_b;
    p->threads = along_m ? t_m : t_n;
    memcpy(p->bounds, along_m ? bounds_m : bounds_n, sizeof(int64_t) * (size_t)(p->threads + 1));
    p->fma_cycles = along_m ? fma_m : fma_n;
}
