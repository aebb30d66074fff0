/*
 * candidates.c - the candidate lists and a plan's regions. Each built
 * member of the model's ISA gets the verdict of the model's rules
 * (model_tile_verdict, model_dot_verdict: the same calls that chose the
 * model's tiles), a reason in words when a rule rejects it, and a rank by
 * the model's preference. A plan's tessellation is turned into rectangles
 * of one ukernel and one thread, and rasterised for a terminal; this is
 * what `tessel explain` shows and what a tuner starts from.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/candidates.h"

/* ---- candidates ---- */

/* Why the verdict rejects, with the numbers the rule compared. */
static void describe_rejection(const tile_verdict *v, char *reason, size_t len)
{
    switch (v->failed) {
    case TILE_RULE_REGISTERS:
        snprintf(reason, len, "needs %d registers, %d available", v->registers,
                 v->registers_available);
        break;
    case TILE_RULE_LATENCY:
        snprintf(reason, len, "%d chain%s < latency %.3g x %.3g FMA pipe%s = %.3g", v->chains,
                 v->chains == 1 ? "" : "s", v->fma_latency, v->fma_pipes,
                 v->fma_pipes == 1 ? "" : "s", v->chains_needed);
        break;
    case TILE_RULE_LOAD_PORTS:
        snprintf(reason, len, "a k step's loads take %.3g cycles, its FMAs %.3g",
                 v->load_cycles, v->fma_cycles);
        break;
    case TILE_RULE_BROADCASTS:
        snprintf(reason, len,
                 "its broadcasts add %.0f%% to an FMA pipe's time, the widest tile's %.0f%%",
                 100.0 * v->broadcast_share, 100.0 * v->least_broadcast_share);
        break;
    case TILE_RULE_L1:
        snprintf(reason, len, "B panels leave no L1 way (of %d)", v->l1_ways);
        break;
    case TILE_RULE_PASSES:
        reason[0] = '\0';
        break;
    }
}

static int status_rank(const plan_candidate *c)
{
    return c->status == CANDIDATE_CHOSEN ? 0 : c->status == CANDIDATE_VIABLE ? 1 : 2;
}

/* The ranking: chosen, viable, rejected; within each, the model's
 * preference. qsort is not stable, but no two members compare equal. */
static int compare_candidates(const void *pa, const void *pb)
{
    const plan_candidate *a = pa, *b = pb;
    if (status_rank(a) != status_rank(b))
        return status_rank(a) - status_rank(b);
    if (a->dot)
        return model_compare_dot_tiles(a->verdict.latency_waived, a->mr, a->nv, b->mr, b->nv);
    return model_compare_tiles(a->mr, a->nv, b->mr, b->nv);
}

/* Copies what fits of the ranked list into out; returns the full count. */
static int rank_and_copy(plan_candidate *all, int n, plan_candidate *out, int max)
{
    qsort(all, (size_t)n, sizeof *all, compare_candidates);
    for (int i = 0; i < n && i < max; i++)
        out[i] = all[i];
    return n;
}

static void judge(plan_candidate *c, bool chosen)
{
    if (c->verdict.failed != TILE_RULE_PASSES)
        c->status = CANDIDATE_REJECTED;
    else
        c->status = chosen ? CANDIDATE_CHOSEN : CANDIDATE_VIABLE;
    describe_rejection(&c->verdict, c->reason, sizeof c->reason);
}

int plan_candidates(const plan_model *m, plan_candidate *out, int max)
{
    plan_candidate all[PLAN_MAX_CANDIDATES];
    int n = 0;
    for (int nv = 1; nv <= UK_MAX_NV; nv++)
        for (int mr = 1; mr <= UK_MAX_MR; mr++) {
            ukernel_desc d = {.isa = m->hw.isa, .mr = mr, .nv = nv, .a_packed = true};
            if (!ukernel_lookup(&d))
                continue;
            plan_candidate *c = &all[n++];
            *c = (plan_candidate){.mr = mr, .nv = nv, .nr = nv * m->vec,
                                  .accumulators = mr * nv, .score = mr * nv,
                                  .verdict = model_tile_verdict(m, mr, nv)};
            judge(c, mr == m->mr && nv == m->nv);
        }
    return rank_and_copy(all, n, out, max);
}

int plan_dot_candidates(const plan_model *m, plan_candidate *out, int max)
{
    plan_candidate all[PLAN_MAX_DOT_CANDIDATES];
    int n = 0;
    for (int mr = 1; mr <= UK_DOT_MAX_MR; mr++)
        for (int nj = 1; nj <= UK_DOT_MAX_NJ; nj++) {
            if (!ukernel_dot_lookup(m->hw.isa, mr, nj))
                continue;
            plan_candidate *c = &all[n++];
            *c = (plan_candidate){.dot = true, .mr = mr, .nv = nj, .nr = nj,
                                  .accumulators = mr * nj,
                                  .score = (double)mr * nj / (mr + nj),
                                  .verdict = model_dot_verdict(m, mr, nj)};
            judge(c, mr == m->dot_mr && nj == m->dot_nj);
        }
    return rank_and_copy(all, n, out, max);
}

const char *plan_candidate_status_name(candidate_status status)
{
    switch (status) {
    case CANDIDATE_CHOSEN: return "chosen";
    case CANDIDATE_VIABLE: return "viable";
    default: return "rejected";
    }
}

/* ---- regions ---- */

/* Collects regions and numbers their kinds. */
typedef struct region_list {
    plan_region *out;
    int64_t max, n;
    int nkinds;
    plan_region kinds[64]; /* one example of each kind */
} region_list;

static bool same_kind(const plan_region *a, const plan_region *b)
{
    return a->dot == b->dot && a->row == b->row && a->mr == b->mr && a->nv == b->nv &&
           a->width == b->width;
}

static void add_region(region_list *list, plan_region r)
{
    if (r.rows <= 0 || r.cols <= 0)
        return;
    r.kind = -1;
    for (int k = 0; k < list->nkinds; k++)
        if (same_kind(&list->kinds[k], &r))
            r.kind = k;
    if (r.kind < 0 && list->nkinds < (int)(sizeof list->kinds / sizeof list->kinds[0])) {
        r.kind = list->nkinds;
        list->kinds[list->nkinds++] = r;
    }
    if (list->n < list->max)
        list->out[list->n] = r;
    list->n++;
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* How N is cut: units of `unit` columns (panels of nr, or dot_nj rows of
 * B^T), the last of which may be narrower and run a narrower ukernel. */
typedef struct column_layout {
    int64_t N, unit, units;
    int full_nv, tail_nv;  /* ukernel widths of full units and the last unit */
    int full_width, tail_width;
    bool tail_masked;
    bool dot;
} column_layout;

/* A band of `rows` rows from row0, `tiles` tiles mr tall, cut at the
 * last (narrower) column unit and, for an N split, at the threads' unit
 * ranges; with an M split the band belongs to `thread`. */
static void add_band(region_list *list, const gemm_plan *p, const column_layout *cl, int mr,
                     int64_t row0, int64_t rows, int64_t tiles, int thread)
{
    /* Column-unit ranges per thread: all units for an M split. */
    int nthreads = p->split == 'N' ? p->threads : 1;
    for (int t = 0; t < nthreads; t++) {
        int64_t u0 = p->split == 'N' ? p->bounds[t] : 0;
        int64_t u1 = p->split == 'N' ? p->bounds[t + 1] : cl->units;
        int owner = p->split == 'N' ? t : thread;
        bool has_tail = cl->tail_width != cl->full_width || cl->tail_nv != cl->full_nv;
        int64_t full_end = has_tail ? min64(u1, cl->units - 1) : u1;
        plan_region r = {.row0 = row0, .rows = rows, .mr = mr, .dot = cl->dot,
                         .thread = owner};
        if (full_end > u0) {
            r.col0 = u0 * cl->unit;
            r.cols = (full_end - u0) * cl->unit;
            r.nv = cl->full_nv;
            r.width = cl->full_width;
            r.masked = false;
            r.tiles = tiles * (full_end - u0);
            add_region(list, r);
        }
        if (has_tail && u1 == cl->units && u0 < u1) {
            r.col0 = (cl->units - 1) * cl->unit;
            r.cols = cl->N - r.col0;
            r.nv = cl->tail_nv;
            r.width = cl->tail_width;
            r.masked = cl->tail_masked;
            r.tiles = tiles;
            add_region(list, r);
        }
    }
}

/* Packed path: N in nr-wide panels, the last masked to whole vectors; a
 * single narrow panel is one ukernel of its own width. */
static column_layout panel_layout(const gemm_plan *p, int64_t N)
{
    column_layout cl = {.N = N, .unit = p->nr, .units = p->npanels, .full_nv = p->nv,
                        .full_width = p->nr};
    int64_t tail_cols = N - (p->npanels - 1) * p->nr;
    cl.tail_nv = (int)((tail_cols + p->vec - 1) / p->vec);
    cl.tail_width = (int)tail_cols;
    cl.tail_masked = tail_cols < (int64_t)cl.tail_nv * p->vec;
    return cl;
}

static void packed_regions(region_list *list, const gemm_plan *p, const gemm_shape *s)
{
    column_layout cl = panel_layout(p, s->N);
    int64_t tile = 0, row = 0;
    for (int i = 0; i < p->nruns; i++) {
        int64_t run_end = tile + p->runs[i].count;
        int mr = p->runs[i].mr;
        /* An M split cuts runs at the threads' tile ranges. */
        int nthreads = p->split == 'M' ? p->threads : 1;
        for (int t = 0; t < nthreads; t++) {
            int64_t t0 = p->split == 'M' ? max64(tile, p->bounds[t]) : tile;
            int64_t t1 = p->split == 'M' ? min64(run_end, p->bounds[t + 1]) : run_end;
            if (t1 <= t0)
                continue;
            add_band(list, p, &cl, mr, row + (t0 - tile) * mr, (t1 - t0) * mr, t1 - t0, t);
        }
        row += p->runs[i].count * mr;
        tile = run_end;
    }
}

/* Dot path: rows in dot_mr tiles and columns in dot_nj tiles, each with
 * an exact smaller member for the remainder; threads split the columns,
 * or the row tiles (the remainder is the last). */
static void dot_regions(region_list *list, const gemm_plan *p, const gemm_shape *s)
{
    column_layout cl = {.N = s->N, .unit = p->dot_nj, .units = p->npanels,
                        .full_nv = p->dot_nj, .full_width = p->dot_nj, .dot = true};
    cl.tail_nv = (int)(s->N - (p->npanels - 1) * p->dot_nj);
    cl.tail_width = cl.tail_nv;
    int64_t full_tiles = s->M / p->dot_mr;
    int rest = (int)(s->M % p->dot_mr);
    int nthreads = p->split == 'M' ? p->threads : 1;
    for (int t = 0; t < nthreads; t++) {
        int64_t t0 = p->split == 'M' ? p->bounds[t] : 0;
        int64_t t1 = p->split == 'M' ? p->bounds[t + 1] : full_tiles + (rest > 0);
        int64_t full_end = min64(t1, full_tiles);
        if (full_end > t0)
            add_band(list, p, &cl, p->dot_mr, t0 * p->dot_mr, (full_end - t0) * p->dot_mr,
                     full_end - t0, t);
        if (rest > 0 && t1 > full_tiles)
            add_band(list, p, &cl, rest, full_tiles * p->dot_mr, rest, 1, t);
    }
}

/* Row path: each thread's columns are one call of the row form. */
static void row_regions(region_list *list, const gemm_plan *p, const gemm_shape *s)
{
    for (int t = 0; t < p->threads; t++) {
        int64_t col0 = p->bounds[t] * p->nr, col1 = min64(s->N, p->bounds[t + 1] * p->nr);
        add_region(list, (plan_region){.row0 = 0, .rows = s->M, .col0 = col0,
                                       .cols = col1 - col0, .mr = (int)s->M, .row = true,
                                       .thread = t, .tiles = 1});
    }
}

int64_t plan_regions(const gemm_plan *p, const gemm_shape *s, plan_region *out, int64_t max)
{
    region_list list = {.out = out, .max = max};
    if (s->M <= 0 || s->N <= 0 || s->K <= 0)
        return 0;
    if (p->row)
        row_regions(&list, p, s);
    else if (p->dot)
        dot_regions(&list, p, s);
    else
        packed_regions(&list, p, s);
    return list.n;
}

char plan_kind_letter(int kind)
{
    if (kind >= 0 && kind < 26)
        return (char)('A' + kind);
    if (kind >= 26 && kind < 52)
        return (char)('a' + kind - 26);
    return '?';
}

/* ---- the raster ---- */

static int compare_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* Cell starts along one axis of `length`: `cells` of them (cells <=
 * length), every band between consecutive `cuts` at least one cell while
 * cells allow, the rest by largest remainder of the bands' shares. */
static void place_cells(const int64_t *cuts, int ncuts, int64_t length, int cells, int64_t *at)
{
    int nbands = ncuts - 1;
    if (nbands > cells || nbands <= 0) {
        for (int c = 0; c <= cells; c++)
            at[c] = length * c / cells;
        return;
    }
    int given[PLAN_GRID_MAX_COLS + PLAN_GRID_MAX_ROWS];
    int total = 0;
    for (int b = 0; b < nbands; b++) {
        int64_t len = cuts[b + 1] - cuts[b];
        int64_t share = len * cells / length;
        given[b] = (int)(share < 1 ? 1 : share > len ? len : share);
        total += given[b];
    }
    /* Hand out or take back cells where the share is furthest off. */
    while (total != cells) {
        int pick = -1;
        double pick_gap = 0.0;
        for (int b = 0; b < nbands; b++) {
            int64_t len = cuts[b + 1] - cuts[b];
            double gap = (double)len * cells / length - given[b];
            bool can = total < cells ? given[b] < len : given[b] > 1;
            double want = total < cells ? gap : -gap;
            if (can && (pick < 0 || want > pick_gap)) {
                pick = b;
                pick_gap = want;
            }
        }
        if (pick < 0)
            break;
        given[pick] += total < cells ? 1 : -1;
        total += total < cells ? 1 : -1;
    }
    int c = 0;
    for (int b = 0; b < nbands; b++) {
        int64_t len = cuts[b + 1] - cuts[b];
        for (int i = 0; i < given[b]; i++)
            at[c++] = cuts[b] + len * i / given[b];
    }
    at[c] = length;
}

/* Adds `cut` to the set unless it is there already or the set is full. */
static void add_cut(int64_t *cuts, int *ncuts, int max, int64_t cut)
{
    for (int i = 0; i < *ncuts; i++)
        if (cuts[i] == cut)
            return;
    if (*ncuts < max)
        cuts[(*ncuts)++] = cut;
}

/* The distinct region boundaries along rows (or columns), 0 and the length
 * among them, sorted. Stopping at `max` only loses the detail of where
 * the cuts are once there are too many to give each band a cell. */
static int collect_cuts(const plan_region *regions, int64_t n, bool rows, int64_t length,
                        int64_t *cuts, int max)
{
    int ncuts = 0;
    add_cut(cuts, &ncuts, max, 0);
    add_cut(cuts, &ncuts, max, length);
    for (int64_t i = 0; i < n && ncuts < max; i++) {
        int64_t start = rows ? regions[i].row0 : regions[i].col0;
        int64_t size = rows ? regions[i].rows : regions[i].cols;
        add_cut(cuts, &ncuts, max, start);
        add_cut(cuts, &ncuts, max, start + size);
    }
    qsort(cuts, (size_t)ncuts, sizeof *cuts, compare_i64);
    return ncuts;
}

static int64_t find_region(const plan_region *regions, int64_t n, int64_t row, int64_t col)
{
    for (int64_t i = 0; i < n; i++) {
        const plan_region *r = &regions[i];
        if (row >= r->row0 && row < r->row0 + r->rows && col >= r->col0 && col < r->col0 + r->cols)
            return i;
    }
    return -1;
}

void plan_grid_build(const plan_region *regions, int64_t n, int64_t M, int64_t N, int max_rows,
                     int max_cols, plan_grid *g)
{
    memset(g, 0, sizeof *g);
    if (M <= 0 || N <= 0 || n <= 0)
        return;
    max_rows = max_rows < 1 ? 1 : max_rows > PLAN_GRID_MAX_ROWS ? PLAN_GRID_MAX_ROWS : max_rows;
    max_cols = max_cols < 1 ? 1 : max_cols > PLAN_GRID_MAX_COLS ? PLAN_GRID_MAX_COLS : max_cols;
    g->rows = (int)min64(M, max_rows);
    g->cols = (int)min64(N, max_cols);

    /* One more cut than cells is enough to know there are too many bands. */
    enum { MAX_CUTS = PLAN_GRID_MAX_COLS + 2 };
    int64_t cuts[MAX_CUTS];
    int ncuts = collect_cuts(regions, n, true, M, cuts, g->rows + 2);
    place_cells(cuts, ncuts, M, g->rows, g->row_at);
    ncuts = collect_cuts(regions, n, false, N, cuts, g->cols + 2);
    place_cells(cuts, ncuts, N, g->cols, g->col_at);

    for (int r = 0; r < g->rows; r++)
        for (int c = 0; c < g->cols; c++)
            g->region[r][c] = (int)find_region(regions, n, g->row_at[r], g->col_at[c]);
}
