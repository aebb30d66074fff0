/*
 * gemm_blocks.c - runs one share of a plan on the calling thread: the
 * blocks of B (kc x nc), each panel prepared as its first row tile needs
 * it (packed, copied as the ukernel reads it, or read in place), the
 * prefetches each ukernel call is asked to make, and the row tiles over
 * the block, tiles outermost or, for B read in place from memory or the
 * L3, panels outermost. Also the pre-packing of B for tessel_sgemm_pack_b,
 * which prepares the same panels once. Which thread runs which share, and
 * how they share a block, is gemm.c's.
 */
#include <stdlib.h>

#include "ops/gemm_blocks.h"
#include "ops/prefetch_next.h"

/* Packed B panels are nr wide but the masked last one, which is only as
 * wide as the vectors its columns need. */
static int panel_width(const gemm_plan *p, int cols)
{
    if (cols == p->nr) /* no division on the common path: tiny matrices felt it */
        return cols;
    return (cols + p->vec - 1) / p->vec * p->vec;
}

/* Whether this call packs B and the rows of op(B) are contiguous, so the
 * copy goes row by row: as the first tile reads them, or rows first. */
static bool packs_rows_of_b(const gemm_call *c, const gemm_plan *p)
{
    return p->pack_b && !c->packed && c->b_cs == 1;
}

/* Whether the B panels of a block are packed by the block's first row
 * tile as it reads them (the ukernel's b_copy), instead of in a pass of
 * their own before it. The copy then rides on loads the product makes
 * anyway, where a separate pass reads all of B once more (measured: 7% of
 * 384x3072x768). Not for B from memory, which is packed rows first. */
static bool packs_on_first_use(const gemm_call *c, const gemm_plan *p)
{
    return packs_rows_of_b(c, p) && !p->b_from_memory;
}

/* Rows of B from memory packed per step: each step is that many streams
 * along the rows, across every panel of the block. Time 8 / 16 rows, in
 * one process (calls alternating), Zen 4: 128x50257x768 0.89-0.95 at 1
 * thread, 0.95-0.96 at 2; 64 and 512 rows and 256x16384x1024 0.97-1.06,
 * level; 4 rows 0.93-1.00, 32 rows 1.16. */
enum { PACK_ROWS_PER_STEP = 8 };

/* Packs a whole (jc, pc) block of B from memory before its first tile
 * runs, a few rows at a time across all its panels: B then streams along
 * its rows, where the prefetchers follow it. Panel by panel, it is as
 * many short streams as the block is deep (plan.h, b_from_memory). */
static void pack_b_by_rows(const gemm_call *c, const gemm_plan *p, const b_block *blk,
                           float *b_buf)
{
    for (int64_t k0 = 0; k0 < blk->kb; k0 += PACK_ROWS_PER_STEP) {
        int64_t rows = min64(PACK_ROWS_PER_STEP, blk->kb - k0);
        for (int64_t jr = 0; jr < blk->panels; jr++) {
            int cols = (int)min64(p->nr, blk->nb - jr * p->nr);
            int width = panel_width(p, cols);
            const float *src = c->B + (blk->pc + k0) * c->b_rs + blk->jc + jr * p->nr;
            ukernel_pack_b(p->isa, width, cols, rows, src, c->b_rs, 1,
                           b_buf + jr * p->nr * blk->kb + k0 * width);
        }
    }
}

/* Prepares B panel jr of the block: packs it into b_buf, unless the
 * pre-packed weights hold it, or it is a full panel left in place (rows
 * of op(B) contiguous) or to the first row tile to pack (first_use). A
 * masked last panel is always packed, so that the ukernel's full-width
 * loads stay inside B. */
static void prepare_b_panel(const gemm_call *c, const gemm_plan *p, const b_block *blk,
                            int64_t jr, bool first_use, float *b_buf)
{
    int cols = (int)min64(p->nr, blk->nb - jr * p->nr);
    if (c->packed || (cols == p->nr && (!p->pack_b || first_use)))
        return;
    const float *panel = c->B + blk->pc * c->b_rs + (blk->jc + jr * p->nr) * c->b_cs;
    ukernel_pack_b(p->isa, panel_width(p, cols), cols, blk->kb, panel, c->b_rs, c->b_cs,
                   p->pack_b ? b_buf + jr * p->nr * blk->kb : b_buf);
}

/* Whether the block's first tile writes B panel jr (`cols` wide) into the
 * buffer, by packing or by copying as it reads: then the other tiles of
 * a shared-B run wait for it. */
static bool panel_from_first_tile(const gemm_call *c, const gemm_plan *p, int cols)
{
    return !c->packed && (p->pack_b || cols < p->nr);
}

/* The k steps, from the first, whose prefetch (`ahead` floats past each
 * row of `rs` floats, a `width`-float row) stays within the `left`
 * floats from the panel's start to the end of what B is read from. Past
 * that end lies memory that may not be mapped, or not yet touched, where
 * a prefetch costs a page walk that finds nothing: AMD EPYC family 23, 1
 * thread, 8x2304x768 with B in place (its last block's last rows asking
 * past its end) ran at 17 GF/s where B was followed by untouched pages
 * and at 25-31 where they had been written, the same plan in one binary;
 * asking only within B, 24-27 either way. In a plain program (B of its
 * own malloc), old / new: 8x2304x768 16.8 / 23.7 GF/s, 13 and 16 x 768 x
 * 768 25.8 / 29.7, 26.3 / 32.3; 512x768x768 and 1024^3 level. bench/run
 * did not see it: its buffers carry written slack past every matrix. */
static int64_t prefetch_steps(int64_t ahead, int64_t rs, int width, int64_t left, int64_t kb)
{
    if (ahead <= 0)
        return 0;
    int64_t last = left - width - ahead; /* step p asks for p * rs + ahead .. + width */
    if (last < 0)
        return 0;
    return min64(kb, last / rs + 1);
}

/* Rows ahead that the first row tile of a block, which reads B from L3
 * or memory, asks for into L2 (ukernel.h, b_l2_ahead), wrapping to the
 * next panel's first rows: as it copies B, and as it reads B in place
 * where B's rows collide in the L1 (plan_b_l2_ahead). AMD EPYC family 25,
 * time with / without, the copy (medians of four processes each), 1
 * thread: 150 and 252 x 2304 x 768 0.975, 512x3072x768 0.975,
 * 200x768x3072 0.96, 384x768x768 0.99; 2 threads, and 32-100 rows,
 * level. In one process, 24 rows gained two thirds as much, 36-64 the
 * same; without the wrap 36 rows gained half. In place, rows 12-16 KiB
 * apart, new / old speed (medians of five processes each; the old one
 * varied by a fifth from process to process), 1 thread: 17 x 1024 x
 * 4096, 2048 x 2048, 3072 x 768 1.11, 1.20, 1.11; 64 x 1024 x 4096,
 * 3072 x 1024 1.11, 1.06; 2 threads 17 rows 1.08-1.18, 64 rows
 * 1.05-1.09, 100-512 x 3072 x 768 level. Asked for by every tile
 * reading B in place it lost 2-10% to this on 2 threads, and where rows
 * do not collide (3 or 9 KiB apart) it gained 0-2% on 1 thread and lost
 * 0-8% on 2. Only where the block is deeper than the distance, so that
 * the rows wrapped to in the next panel are rows of this block (past B's
 * last column they run on into its next row). */
enum { L2_AHEAD_ROWS = 40 };

/* Asks the tile to prefetch B `rows` ahead into L2 (and over its last
 * steps the next panel's first rows); false, asking nothing, where the
 * block is not deeper than that. */
static bool ask_l2_ahead(const b_block *blk, int64_t jr, const gemm_plan *p, int64_t rows,
                         ukernel_args *args)
{
    if (rows <= 0 || blk->kb <= rows)
        return false;
    args->b_l2_ahead = rows;
    args->b_l2_next = jr + 1 < blk->panels ? args->b + p->nr : NULL;
    return true;
}

/* Points the ukernel at B panel jr of the (jc, pc) block, `cols` wide;
 * the first row tile of a block that packs on first use reads full panels
 * in place and leaves them packed in b_buf.
 *
 * B read in place with rows close together (PLAN_CLOSE_B_ROW_BYTES, by
 * this call's ldb) is left to the hardware prefetchers; asking for its
 * rows again only took load slots. Time without / with the software
 * prefetch, 64-wide tiles, 1 thread: 12 matrices of M x 64 x M (rows 256
 * bytes apart), M = 43, 81, 128, 256: 0.90, 0.90, 0.90-0.93, 0.92-0.93;
 * 128x128x256 (512 bytes) 0.90. 32-wide tiles were level at 256-512
 * bytes, and lost 3% without it at a kilobyte (128x256x256), 9% at 2 KB
 * and 30-40% at 3 KB and more. B streamed from memory is prefetched
 * along its rows instead (plan_gemm.c, STREAM_PREFETCH_BYTES), wherever
 * they lie. */
static void point_at_b(const gemm_call *c, const gemm_plan *p, const b_block *blk, int64_t jr,
                       int cols, float *b_buf, bool first_tile, ukernel_args *args)
{
    const int64_t jc = blk->jc, pc = blk->pc, kb = blk->kb;
    const int width = panel_width(p, cols);
    args->b_rs = width;
    args->b_copy = NULL;
    args->b_l2_ahead = 0;
    args->b_l2_next = NULL;
    /* Rows ahead, as the plan says, or floats ahead along each row. */
    int64_t rows_ahead = p->b_prefetch, along = 0;
    int64_t row_bytes = c->b_rs * (int64_t)sizeof(float);
    bool rows_close = row_bytes <= PLAN_CLOSE_B_ROW_BYTES;
    /* Floats from the panel's start to the end of what it is read from:
     * B's last element, the pre-packed weights', the block's packed
     * panels'. */
    int64_t col = jc + jr * p->nr;
    int64_t in_place_left = (c->K - 1 - pc) * c->b_rs + (c->N - col);
    int64_t left;
    if (first_tile && cols == p->nr && packs_on_first_use(c, p)) {
        args->b = c->B + pc * c->b_rs + col;
        args->b_rs = c->b_rs;
        args->b_copy = b_buf + jr * p->nr * kb;
        /* Rows close together are left to the hardware prefetchers, as
         * below. */
        if (!rows_close)
            ask_l2_ahead(blk, jr, p, L2_AHEAD_ROWS, args);
        left = in_place_left;
        if (rows_close)
            rows_ahead = 0;
    } else if (c->packed) {
        int64_t at = pc * c->packed->n_padded + col * kb;
        args->b = c->packed->data + at;
        left = c->K * c->packed->n_padded - at;
    } else if (p->pack_b) {
        int64_t last = blk->nb - (blk->panels - 1) * p->nr;
        args->b = b_buf + jr * p->nr * kb;
        left = ((blk->panels - 1 - jr) * p->nr + panel_width(p, (int)last)) * kb;
        if (p->b_panels_in_l1)
            rows_ahead = 0;
    } else if (cols < p->nr) {
        args->b = b_buf;
        left = width * kb;
    } else {
        args->b = c->B + pc * c->b_rs + col;
        args->b_rs = c->b_rs;
        left = in_place_left;
        along = p->b_prefetch_along;
        /* Far into L2 instead of near, where the tile's steps are long
         * (plan_b.c, FAR_MIN_STEP_CYCLES). */
        if (rows_close ||
            ask_l2_ahead(blk, jr, p, plan_b_far_rows(p, args->m, row_bytes), args) ||
            plan_b_unprefetched(p, row_bytes))
            rows_ahead = 0;
        else if (first_tile && plan_b_l2_ahead(p, row_bytes))
            ask_l2_ahead(blk, jr, p, L2_AHEAD_ROWS, args);
    }
    args->b_prefetch = along ? along : rows_ahead * args->b_rs;
    args->b_prefetch_steps = prefetch_steps(args->b_prefetch, args->b_rs, width, left, kb);
}

/* Row tile t across the block's B panels. Its A micro-panel (packed just
 * before, when the plan packs A) stays in L1 while the B micro-panels
 * stream past it from L2, and C is written along its rows. The block's
 * first tile also prepares each B panel just before it uses it (packs it,
 * or copies it as it reads it); with `panels_ready`, a shared-B run, it
 * counts the panels done there, and any other tile waits for each panel
 * it needs, a step behind. */
void gemm_run_tile(const gemm_call *c, const gemm_plan *p, const b_block *blk, int64_t t,
                   bool first_tile, atomic_int *panels_ready, float *a_buf, float *b_buf,
                   own_panel *own)
{
    int64_t r;
    int mr;
    plan_tile_rows(p, t, &r, &mr);
    /* The tile's ukernel for full panels, looked up at the first; the
     * masked last panel looks up its own. */
    ukernel_desc desc = {.isa = p->isa, .a_packed = p->pack_a, .mr = mr};
    ukernel_fn full_width = NULL;
    ukernel_args args;
    ukernel_args_clear(&args);
    args.k = blk->kb;
    args.m = mr;
    args.ldc = c->ldc;
    args.alpha = c->alpha;
    args.beta = blk->pc == 0 ? c->beta : 1.0f;
    const tessel_epilogue *epi = blk->pc + blk->kb == c->K ? c->epilogue : NULL;
    const float *a = c->A + r * c->a_rs + blk->pc * c->a_cs;
    if (p->pack_a) {
        ukernel_pack_a(p->isa, mr, blk->kb, a, c->a_rs, c->a_cs, a_buf);
        args.a = a_buf;
        args.a_rs = 1;
        args.a_cs = mr;
    } else {
        args.a = a;
        args.a_rs = c->a_rs;
        args.a_cs = c->a_cs;
    }
    int64_t panels = blk->panels;
    bool first_use = packs_on_first_use(c, p);
    bool by_rows = first_tile && packs_rows_of_b(c, p) && p->b_from_memory;
    /* The first tile publishes each panel as soon as it is ready: one it
     * packs is ready before its ukernel runs, one the ukernel copies as
     * it reads only after. (Published after the ukernel always, a plan
     * of one masked panel made the other threads wait for the whole
     * first tile: 64x40x256 took 26 us on 2 threads, 13 on one.) */
    bool publish = first_tile && panels_ready;
    if (by_rows) {
        pack_b_by_rows(c, p, blk, b_buf);
        if (publish)
            atomic_store_explicit(panels_ready, (int)panels, memory_order_release);
        publish = false;
    }
    for (int64_t jr = 0; jr < panels; jr++) {
        int64_t col = blk->jc + jr * p->nr;
        args.n = (int)min64(p->nr, blk->nb - jr * p->nr);
        ukernel_fn ukernel = full_width;
        if (args.n < p->nr) {
            desc.nv = panel_width(p, args.n) / p->vec;
            ukernel = ukernel_lookup(&desc);
        } else if (!full_width) {
            desc.nv = p->nv;
            ukernel = full_width = ukernel_lookup(&desc);
        }
        bool copied_as_read = first_tile && first_use && args.n == p->nr;
        bool own_copy = own && args.n < p->nr;
        if (own_copy) {
            if (!own->ready)
                prepare_b_panel(c, p, blk, jr, false, own->buf);
            own->ready = true;
        } else if (first_tile && !by_rows) {
            prepare_b_panel(c, p, blk, jr, first_use, b_buf);
        } else if (!first_tile && panels_ready && panel_from_first_tile(c, p, args.n)) {
            rt_wait_at_least(panels_ready, (int)jr + 1);
        }
        if (publish && !copied_as_read)
            atomic_store_explicit(panels_ready, (int)jr + 1, memory_order_release);
        point_at_b(c, p, blk, jr, args.n, own_copy ? own->buf : b_buf, first_tile, &args);
        args.c = c->C + r * c->ldc + col;
        ukernel(&args);
        if (c->ahead)
            prefetch_next_step(c->ahead);
        if (publish && copied_as_read)
            atomic_store_explicit(panels_ready, (int)jr + 1, memory_order_release);
        /* The tile is final and still in L1: finish it. */
        if (epi)
            ukernel_epilogue(p->isa, args.c, c->ldc, mr, args.n,
                             epi->bias ? epi->bias + col : NULL, epi->activation);
    }
}

/* Whether a share's blocks run panels outermost (run_block_by_panels):
 * B streamed from memory in place (plan.h, b_from_memory), or read in
 * place as one block that only the L3 holds (b_one_block) by a plan of
 * at most ONE_BLOCK_PANELS_OUTER_TILES row tiles, where tiles outermost
 * every tile read all of B from the L3 again. (Calls with an epilogue
 * are on pre-packed B, never read in place.) In one process, AMD EPYC
 * family 25 model 1 (Zen 3), time panels / tiles outermost over B in one
 * block: 1 thread 8, 16, 24 x 768 x 768 0.88, 0.96, 0.99, 13 and 24 x
 * 2304 x 768 0.93, 0.94, 12 x 1024 x 1024 0.98; 2 threads 0.97, 0.94,
 * 0.99, 0.93, 0.99, 0.88; shapes of other plans 1.00-1.02 beside them
 * (bench/results/2026-12-07-session35-zen3-panels-outer-ab.txt). One
 * block over more tiles (Zen 4's, up to 119 rows) was not measured so.
 * The row tiles go PANELS_OUTER_MAX_TILES at a time, so that their A
 * micro-panels stay in L1 beside the panel; the groups after the first
 * find the block in L2. */
enum { PANELS_OUTER_MAX_TILES = 16, ONE_BLOCK_PANELS_OUTER_TILES = 4 };
static bool runs_panels_outer(const gemm_call *c, const gemm_plan *p)
{
    bool one_block = p->b_one_block && p->ntiles <= ONE_BLOCK_PANELS_OUTER_TILES;
    return (p->b_from_memory || one_block) && !p->pack_b && !c->packed && !c->epilogue &&
           !p->row && !p->dot;
}

int64_t gemm_a_panels_at_once(const gemm_call *c, const gemm_plan *p)
{
    return runs_panels_outer(c, p) ? min64(p->ntiles, PANELS_OUTER_MAX_TILES) : 1;
}

/* One block of B streamed from memory in place (or held by the L3 alone),
 * panels outermost: each B panel (kc rows of a line or two) comes from
 * memory (the L3) once and serves every row tile before the next is
 * read, so memory is asked at an even pace. Tiles outermost, the block's
 * first tile asked for all of it in a burst while the others read it
 * from L2 (or, wider than the L2, L3): memory idled most of the time,
 * then held up the first tile. The A micro-panels of all the tiles,
 * packed at the start, stay in L1.
 *
 * Every tile asks for the lines ahead of its panel, not the first only:
 * rows of B 3 KB apart fall in a few L1 sets, so the panel does not stay
 * whole in L1 between tiles. (In one process, 1 thread, first tile only /
 * every tile: 8, 13, 16 x 768 x 3072 1.12-1.27, 1.09, 1.06-1.08 of the
 * time; wide B level. Copying the panel for the later tiles, as the
 * tiles-outermost path packs B, lost 4-10% on the same shapes.) Over the
 * last panels the prefetch points at the next block's row starts: 8, 13,
 * 16 x 768 x 3072 0.95-0.97, 0.99, 0.96 of the time, 2 threads 8 and 16
 * rows 0.88, 0.92. */
static void run_block_by_panels(const gemm_call *c, const gemm_plan *p, const b_block *blk,
                                const b_block *next, int64_t t0, int64_t t1, float *a_buf,
                                float *b_buf)
{
    /* Panels the prefetch along the rows runs ahead; over the block's
     * last that many, it asks for the start of the next block's rows
     * instead, which nothing else would ask for before they are read. */
    int64_t ahead = p->b_prefetch_along / p->nr;
    if (ahead < 1)
        ahead = 1;
    ukernel_args tile_args[PANELS_OUTER_MAX_TILES];
    ukernel_fn full_width[PANELS_OUTER_MAX_TILES];
    int64_t tile_row[PANELS_OUTER_MAX_TILES];
    int64_t a_stride = round_up(UK_MAX_MR * blk->kb, 16);
    for (int64_t t = t0; t < t1; t++) {
        ukernel_args *args = &tile_args[t - t0];
        ukernel_args_clear(args);
        int mr;
        plan_tile_rows(p, t, &tile_row[t - t0], &mr);
        const float *a = c->A + tile_row[t - t0] * c->a_rs + blk->pc * c->a_cs;
        args->k = blk->kb;
        args->m = mr;
        args->ldc = c->ldc;
        args->alpha = c->alpha;
        args->beta = blk->pc == 0 ? c->beta : 1.0f;
        if (p->pack_a) {
            float *packed = a_buf + (t - t0) * a_stride;
            ukernel_pack_a(p->isa, mr, blk->kb, a, c->a_rs, c->a_cs, packed);
            args->a = packed;
            args->a_rs = 1;
            args->a_cs = mr;
        } else {
            args->a = a;
            args->a_rs = c->a_rs;
            args->a_cs = c->a_cs;
        }
        ukernel_desc desc = {.isa = p->isa, .a_packed = p->pack_a, .mr = mr, .nv = p->nv};
        full_width[t - t0] = ukernel_lookup(&desc);
    }
    for (int64_t jr = 0; jr < blk->panels; jr++) {
        int64_t col = blk->jc + jr * p->nr;
        int cols = (int)min64(p->nr, blk->nb - jr * p->nr);
        /* Packs the masked last panel only: full ones are read in place. */
        prepare_b_panel(c, p, blk, jr, false, b_buf);
        ukernel_args panel;
        ukernel_args_clear(&panel);
        point_at_b(c, p, blk, jr, cols, b_buf, false, &panel);
        int64_t wrap = jr - (blk->panels - ahead);
        if (next && cols == p->nr && wrap >= 0 && panel.b_prefetch) {
            panel.b_prefetch = (next->pc - blk->pc) * c->b_rs + next->jc + wrap * p->nr -
                               (blk->jc + jr * p->nr);
            panel.b_prefetch_steps = min64(blk->kb, next->kb); /* rows the next block has */
        }
        for (int64_t t = t0; t < t1; t++) {
            ukernel_args *args = &tile_args[t - t0];
            ukernel_fn ukernel = full_width[t - t0];
            if (cols < p->nr) {
                ukernel_desc desc = {.isa = p->isa, .a_packed = p->pack_a, .mr = args->m,
                                     .nv = panel_width(p, cols) / p->vec};
                ukernel = ukernel_lookup(&desc);
            }
            args->n = cols;
            args->b = panel.b;
            args->b_rs = panel.b_rs;
            args->b_copy = NULL;
            args->b_prefetch = panel.b_prefetch;
            args->b_prefetch_steps = panel.b_prefetch_steps;
            args->c = c->C + tile_row[t - t0] * c->ldc + col;
            ukernel(args);
        }
    }
}

/* The loop nest over one share: row tiles [t0, t1), columns [n0, n1),
 * with B blocks of its own, prepared by the first row tile of each. */
void gemm_run_share(const gemm_call *c, const gemm_plan *p, int64_t t0, int64_t t1,
                    int64_t n0, int64_t n1, float *a_buf, float *b_buf)
{
    bool panels_outer = runs_panels_outer(c, p);
    for (int64_t jc = n0; jc < n1; jc += p->nc)
        for (int64_t pc = 0; pc < c->K; pc += p->kc) {
            b_block blk =
                gemm_make_block(p, jc, min64(p->nc, n1 - jc), pc, min64(p->kc, c->K - pc));
            if (panels_outer) {
                int64_t next_pc = pc + p->kc < c->K ? pc + p->kc : 0;
                int64_t next_jc = next_pc ? jc : jc + p->nc;
                b_block next = gemm_make_block(p, next_jc, min64(p->nc, n1 - next_jc), next_pc,
                                               min64(p->kc, c->K - next_pc));
                for (int64_t g = t0; g < t1; g += PANELS_OUTER_MAX_TILES) {
                    int64_t g1 = min64(g + PANELS_OUTER_MAX_TILES, t1);
                    /* The last group runs just before the next block. */
                    bool last = g1 == t1 && next_jc < n1;
                    run_block_by_panels(c, p, &blk, last ? &next : NULL, g, g1, a_buf, b_buf);
                }
                continue;
            }
            for (int64_t t = t0; t < t1; t++)
                gemm_run_tile(c, p, &blk, t, t == t0, NULL, a_buf, b_buf, NULL);
        }
}

/* Whether the plan reads A and B in place, in one k block and one column
 * block of full panels, from rows of B close enough together that
 * nothing is prefetched: then a tile is only its ukernel call, and
 * gemm_run_in_place makes them without the blocking's bookkeeping. That was a
 * tenth of a call on attention's P V at a few dozen tokens (12 x
 * (24x64x24): gemm_run_tile, point_at_b, a ukernel lookup each tile), matrices
 * of a microsecond whose ukernels are as fast as OpenBLAS's. */
bool gemm_runs_in_place(const gemm_call *c, const gemm_plan *p, int64_t n0, int64_t n1)
{
    return !p->pack_a && !p->pack_b && !p->b_from_memory && !c->packed && !c->epilogue &&
           !c->ahead && c->b_cs == 1 && c->K <= p->kc && n1 - n0 <= p->nc &&
           (n1 - n0) % p->nr == 0 && c->b_rs * (int64_t)sizeof(float) <= PLAN_CLOSE_B_ROW_BYTES;
}

void gemm_in_place_fns(const gemm_plan *p, ukernel_fn fns[PLAN_MAX_RUNS])
{
    for (int i = 0; i < p->nruns; i++) {
        ukernel_desc desc = {.isa = p->isa, .a_packed = false, .nv = p->nv,
                             .mr = p->runs[i].mr};
        fns[i] = ukernel_lookup(&desc);
    }
}

/* Row tiles [t0, t1) across the full panels of columns [n0, n1), in the
 * order gemm_run_share takes them, each a ukernel call on A and B in
 * place: run by run of the tessellation, tile by tile within it. */
void gemm_run_in_place(const gemm_call *c, const gemm_plan *p, int64_t t0, int64_t t1,
                       int64_t n0, int64_t n1, const ukernel_fn fns[PLAN_MAX_RUNS])
{
    ukernel_args args;
    gemm_call_args(c, &args);
    args.n = p->nr;
    int64_t run_start = 0, row = 0; /* the run's first tile and its first row */
    for (int i = 0; i < p->nruns && run_start < t1; i++) {
        int mr = p->runs[i].mr;
        int64_t run_end = run_start + p->runs[i].count;
        args.m = mr;
        for (int64_t t = run_start > t0 ? run_start : t0; t < run_end && t < t1; t++) {
            int64_t r = row + (t - run_start) * mr;
            args.a = c->A + r * c->a_rs;
            for (int64_t col = n0; col < n1; col += p->nr) {
                args.b = c->B + col;
                args.c = c->C + r * c->ldc + col;
                fns[i](&args);
            }
        }
        row += p->runs[i].count * mr;
        run_start = run_end;
    }
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
    gemm_plan layout = {.isa = pb->isa, .vec = pb->vec, .nr = pb->nr, .pack_b = true};
    gemm_call call = {.B = B, .b_rs = b_rs, .b_cs = b_cs};
    for (int64_t pc = 0; pc < K; pc += pb->kc) {
        b_block blk = gemm_make_block(&layout, 0, N, pc, min64(pb->kc, K - pc));
        for (int64_t jr = 0; jr < blk.panels; jr++)
            prepare_b_panel(&call, &layout, &blk, jr, false, pb->data + pc * pb->n_padded);
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

