/*
 * test_candidates.c - the candidate lists and a plan's regions. For the
 * zen4 and avx2-16 presets: every built member is listed once, the chosen
 * one is the model's tile, each rejection is recomputed from the model_*
 * rules and fails the rule its reason names (and only that one first),
 * and the ranking is the documented preference. Regions and the grid:
 * a hand-made 17 x 40 plan checked cell by cell, thread splits, a 2-row
 * band kept visible under 98 rows, and real plans covering M x N exactly.
 */
#include <string.h>

#include "plan/candidates.h"
#include "plan/plan.h"
#include "test.h"

/* ---- candidates ---- */

/* The presets these checks run on are x86 profiles. */
#if defined(__x86_64__)
/* The load ports model.c assumes (two vector loads a cycle). */
static const double LOADS_PER_CYCLE = 2.0;
static int count_built(hw_isa isa)
{
    int n = 0;
    for (int nv = 1; nv <= UK_MAX_NV; nv++)
        for (int mr = 1; mr <= UK_MAX_MR; mr++) {
            ukernel_desc d = {.isa = isa, .mr = mr, .nv = nv, .a_packed = true};
            n += ukernel_lookup(&d) != NULL;
        }
    return n;
}

static int count_built_dot(hw_isa isa)
{
    int n = 0;
    for (int mr = 1; mr <= UK_DOT_MAX_MR; mr++)
        for (int nj = 1; nj <= UK_DOT_MAX_NJ; nj++)
            n += ukernel_dot_lookup(isa, mr, nj) != NULL;
    return n;
}

/* The first rule (mr, nv) fails, recomputed from the public rules. */
static tile_rule first_failed_rule(const plan_model *m, int mr, int nv)
{
    const hw_profile *hw = &m->hw;
    hw_cache l1 = model_l1(m);
    if (model_registers(mr, nv) > hw->vec_registers)
        return TILE_RULE_REGISTERS;
    if (!model_hides_latency(mr, nv, hw->fma_latency_cycles, hw->fma_per_cycle))
        return TILE_RULE_LATENCY;
    if (!model_fits_load_ports(mr, nv, hw->fma_per_cycle, LOADS_PER_CYCLE))
        return TILE_RULE_LOAD_PORTS;
    if (model_broadcast_share(nv, hw->broadcast_cycles) >
        m->least_broadcast_share + 0.1 + 1e-9)
        return TILE_RULE_BROADCASTS;
    if (model_kc(&l1, mr, nv * m->vec) <= 0)
        return TILE_RULE_L1;
    return TILE_RULE_PASSES;
}

/* Words each reason must contain for the rule it names. */
static bool reason_names_rule(const char *reason, tile_rule rule)
{
    switch (rule) {
    case TILE_RULE_REGISTERS: return strstr(reason, "registers") != NULL;
    case TILE_RULE_LATENCY: return strstr(reason, "latency") != NULL;
    case TILE_RULE_LOAD_PORTS: return strstr(reason, "loads") != NULL;
    case TILE_RULE_BROADCASTS: return strstr(reason, "broadcasts") != NULL;
    case TILE_RULE_L1: return strstr(reason, "L1") != NULL;
    default: return false;
    }
}

static int status_order(candidate_status s)
{
    return s == CANDIDATE_CHOSEN ? 0 : s == CANDIDATE_VIABLE ? 1 : 2;
}

static void check_main_list(const char *preset, const plan_model *m)
{
    plan_candidate list[PLAN_MAX_CANDIDATES];
    int n = plan_candidates(m, list, PLAN_MAX_CANDIDATES);
    CHECK(n == count_built(m->hw.isa), "%s: %d candidates for %d built members", preset, n,
          count_built(m->hw.isa));
    bool seen[UK_MAX_NV + 1][UK_MAX_MR + 1] = {{false}};
    int chosen = 0, twice = 0, wrong_rule = 0, bad_reason = 0, bad_order = 0;
    for (int i = 0; i < n; i++) {
        const plan_candidate *c = &list[i];
        twice += seen[c->nv][c->mr];
        seen[c->nv][c->mr] = true;
        tile_rule rule = first_failed_rule(m, c->mr, c->nv);
        wrong_rule += rule != c->verdict.failed ||
                      (rule == TILE_RULE_PASSES) != (c->status != CANDIDATE_REJECTED);
        if (c->status == CANDIDATE_REJECTED)
            bad_reason += c->reason[0] == '\0' || !reason_names_rule(c->reason, rule);
        else
            bad_reason += c->reason[0] != '\0';
        if (c->status == CANDIDATE_CHOSEN) {
            chosen++;
            CHECK(c->mr == m->mr && c->nv == m->nv, "%s: chosen %dx%d, model %dx%d", preset,
                  c->mr, c->nv, m->mr, m->nv);
        }
        CHECK(c->nr == c->nv * m->vec && c->accumulators == c->mr * c->nv,
              "%s: %dx%d widths and accumulators", preset, c->mr, c->nv);
        /* Chosen, viable, rejected; within each, most accumulators, ties taller. */
        if (i > 0) {
            const plan_candidate *b = &list[i - 1];
            int sb = status_order(b->status), sc = status_order(c->status);
            bool ok = sb < sc || (sb == sc && (b->accumulators > c->accumulators ||
                                               (b->accumulators == c->accumulators &&
                                                b->mr > c->mr)));
            bad_order += !ok;
        }
    }
    CHECK(twice == 0, "%s: %d members listed twice", preset, twice);
    CHECK(chosen == 1 && list[0].status == CANDIDATE_CHOSEN, "%s: one chosen, ranked first",
          preset);
    CHECK(wrong_rule == 0, "%s: %d verdicts differ from the rules", preset, wrong_rule);
    CHECK(bad_reason == 0, "%s: %d reasons missing or naming another rule", preset, bad_reason);
    CHECK(bad_order == 0, "%s: %d candidates out of order", preset, bad_order);
}

static void check_dot_list(const char *preset, const plan_model *m)
{
    plan_candidate list[PLAN_MAX_DOT_CANDIDATES];
    int n = plan_dot_candidates(m, list, PLAN_MAX_DOT_CANDIDATES);
    CHECK(n == count_built_dot(m->hw.isa), "%s: %d dot candidates", preset, n);
    CHECK(n > 0 && list[0].status == CANDIDATE_CHOSEN && list[0].mr == m->dot_mr &&
              list[0].nv == m->dot_nj,
          "%s: dot chosen %dx%d first, model %dx%d", preset, list[0].mr, list[0].nv,
          m->dot_mr, m->dot_nj);
    int bad = 0;
    for (int i = 1; i < n; i++) {
        const plan_candidate *b = &list[i - 1], *c = &list[i];
        bad += c->status == CANDIDATE_CHOSEN;
        if (status_order(b->status) == status_order(c->status))
            bad += model_compare_dot_tiles(c->verdict.latency_waived, b->mr, b->nv, c->mr,
                                           c->nv) >= 0;
        else
            bad += status_order(b->status) > status_order(c->status);
        bool hides = model_hides_latency(c->mr, c->nv, m->hw.fma_latency_cycles,
                                         m->hw.fma_per_cycle);
        bad += (c->status == CANDIDATE_REJECTED) != (!hides && !c->verdict.latency_waived);
    }
    CHECK(bad == 0, "%s: %d dot candidates misjudged or out of order", preset, bad);
}
#endif /* x86-64: the presets the checks above run on */

static void candidates_of_presets(void)
{
#if defined(__x86_64__)
    hw_profile hw;
    plan_model m;
    CHECK(hw_profile_preset(&hw, "zen4") == 0 && plan_model_init(&m, &hw) == 0, "zen4 model");
    check_main_list("zen4", &m);
    check_dot_list("zen4", &m);
    /* Latency 4 x 1 pipe: only tiles under 4 accumulators are rejected. */
    plan_candidate list[PLAN_MAX_CANDIDATES];
    int n = plan_candidates(&m, list, PLAN_MAX_CANDIDATES), rejected = 0;
    for (int i = 0; i < n; i++)
        rejected += list[i].status == CANDIDATE_REJECTED;
    CHECK(rejected == 5, "zen4: %d rejected (1x1, 2x1, 3x1, 1x2, 1x3)", rejected);
    CHECK(strcmp(list[n - 1].reason, "1 chain < latency 4 x 1 FMA pipe = 4") == 0,
          "zen4 1x16 reason '%s'", list[n - 1].reason);
    CHECK(list[1].mr == 9 && list[1].nv == 3, "zen4 runner-up %dx%d (27 accumulators)",
          list[1].mr, list[1].nv);

    CHECK(hw_profile_preset(&hw, "avx2-16") == 0 && plan_model_init(&m, &hw) == 0,
          "avx2-16 model");
    check_main_list("avx2-16", &m);
    check_dot_list("avx2-16", &m);
    /* DESIGN: the load ports rule out 14 x 1, (14 + 1) / 2 > 14 / 2 cycles. */
    n = plan_candidates(&m, list, PLAN_MAX_CANDIDATES);
    const plan_candidate *c14 = NULL;
    for (int i = 0; i < n; i++)
        if (list[i].mr == 14 && list[i].nv == 1)
            c14 = &list[i];
    CHECK(c14 && c14->verdict.failed == TILE_RULE_LOAD_PORTS &&
              strcmp(c14->reason, "a k step's loads take 7.5 cycles, its FMAs 7") == 0,
          "avx2-16 14x8 reason '%s'", c14 ? c14->reason : "(missing)");
    CHECK(list[1].mr == 4 && list[1].nv == 3, "avx2-16 runner-up %dx%d (12 accumulators, "
          "shorter than 6x2)", list[1].mr, list[1].nv);
    plan_candidate dots[PLAN_MAX_DOT_CANDIDATES];
    n = plan_dot_candidates(&m, dots, PLAN_MAX_DOT_CANDIDATES);
    int dot_rejected = 0;
    for (int i = 0; i < n; i++)
        dot_rejected += dots[i].status == CANDIDATE_REJECTED || !dots[i].verdict.latency_waived;
    CHECK(dot_rejected == 0, "avx2-16: no dot member hides latency, so none is rejected");
    /* A list cut short still reports the full count and the top of it. */
    plan_candidate top[3];
    CHECK(plan_candidates(&m, top, 3) == count_built(HW_ISA_AVX2) && top[0].mr == 6 &&
              top[0].nv == 2,
          "top 3 of the avx2-16 list");

    CHECK(hw_profile_preset(&hw, "zen1") == 0 && plan_model_init(&m, &hw) == 0, "zen1 model");
    check_main_list("zen1", &m);
    check_dot_list("zen1", &m);
    n = plan_candidates(&m, list, PLAN_MAX_CANDIDATES);
    const plan_candidate *c13 = NULL;
    for (int i = 0; i < n; i++)
        if (list[i].mr == 13 && list[i].nv == 1)
            c13 = &list[i];
    CHECK(c13 && c13->verdict.failed == TILE_RULE_BROADCASTS &&
              strcmp(c13->reason,
                     "its broadcasts add 20% to an FMA pipe's time, the widest tile's 5%") == 0,
          "zen1 13x8 reason '%s'", c13 ? c13->reason : "(missing)");
#endif
}

/* ---- regions and the grid ---- */

/* The 17 x 40 plan a zen4-like machine would run with 14-row and 3-row
 * tiles: two panels, the second 8 of 32 columns wide (one masked vector). */
static gemm_plan small_plan(int threads, char split)
{
    gemm_plan p = {.isa = HW_ISA_AVX512, .vec = 16, .nv = 2, .nr = 32, .nruns = 2,
                   .ntiles = 2, .npanels = 2, .split = split, .threads = threads};
    p.runs[0] = (plan_run){.mr = 14, .count = 1};
    p.runs[1] = (plan_run){.mr = 3, .count = 1};
    p.bounds[0] = 0;
    p.bounds[threads] = 2;
    if (threads == 2)
        p.bounds[1] = 1;
    return p;
}

static char cell_letter(const plan_grid *g, const plan_region *regions, int r, int c)
{
    int i = g->region[r][c];
    return i < 0 ? '.' : plan_kind_letter(regions[i].kind);
}

static void small_grid_by_hand(void)
{
    gemm_shape s = {.M = 17, .N = 40, .K = 64};
    gemm_plan p = small_plan(1, 'M');
    plan_region regions[8];
    int64_t n = plan_regions(&p, &s, regions, 8);
    CHECK(n == 4, "17 x 40: %lld regions", (long long)n);
    const plan_region want[4] = {
        {.row0 = 0, .rows = 14, .col0 = 0, .cols = 32, .mr = 14, .nv = 2, .width = 32, .tiles = 1},
        {.row0 = 0, .rows = 14, .col0 = 32, .cols = 8, .mr = 14, .nv = 1, .width = 8,
         .masked = true, .tiles = 1, .kind = 1},
        {.row0 = 14, .rows = 3, .col0 = 0, .cols = 32, .mr = 3, .nv = 2, .width = 32, .tiles = 1,
         .kind = 2},
        {.row0 = 14, .rows = 3, .col0 = 32, .cols = 8, .mr = 3, .nv = 1, .width = 8,
         .masked = true, .tiles = 1, .kind = 3},
    };
    for (int i = 0; i < 4 && i < n; i++) {
        const plan_region *r = &regions[i], *w = &want[i];
        CHECK(r->row0 == w->row0 && r->rows == w->rows && r->col0 == w->col0 &&
                  r->cols == w->cols && r->mr == w->mr && r->nv == w->nv &&
                  r->width == w->width && r->masked == w->masked && r->tiles == w->tiles &&
                  r->kind == w->kind && r->thread == 0 && !r->dot,
              "region %d: rows %lld+%lld cols %lld+%lld %dx%d kind %d", i, (long long)r->row0,
              (long long)r->rows, (long long)r->col0, (long long)r->cols, r->mr, r->nv, r->kind);
    }
    plan_grid g;
    plan_grid_build(regions, n, s.M, s.N, PLAN_GRID_MAX_ROWS, PLAN_GRID_MAX_COLS, &g);
    CHECK(g.rows == 17 && g.cols == 40, "17 x 40 drawn one cell an element: %d x %d", g.rows,
          g.cols);
    int wrong = 0;
    for (int r = 0; r < g.rows; r++)
        for (int c = 0; c < g.cols; c++) {
            char expect = r < 14 ? (c < 32 ? 'A' : 'B') : (c < 32 ? 'C' : 'D');
            wrong += cell_letter(&g, regions, r, c) != expect || g.row_at[r] != r ||
                     g.col_at[c] != c;
        }
    CHECK(wrong == 0, "17 x 40 grid: %d cells wrong", wrong);

    /* Two threads along M: the bands belong to threads 0 and 1. */
    p = small_plan(2, 'M');
    n = plan_regions(&p, &s, regions, 8);
    CHECK(n == 4 && regions[0].thread == 0 && regions[1].thread == 0 && regions[2].thread == 1 &&
              regions[3].thread == 1,
          "M split: threads by row band");
    /* Along N: panel 0 to thread 0, the masked panel to thread 1. */
    p = small_plan(2, 'N');
    n = plan_regions(&p, &s, regions, 8);
    CHECK(n == 4 && regions[0].thread == 0 && regions[0].cols == 32 && regions[1].thread == 1 &&
              regions[1].col0 == 32 && regions[2].thread == 0 && regions[3].thread == 1,
          "N split: threads by panel");
    /* A 1-wide grid keeps one cell a region's worth: 3 x 4 cells. */
    plan_grid_build(regions, n, s.M, s.N, 3, 4, &g);
    CHECK(g.rows == 3 && g.cols == 4 && cell_letter(&g, regions, 0, 0) == 'A' &&
              cell_letter(&g, regions, 0, 3) == 'B' && cell_letter(&g, regions, 2, 0) == 'C' &&
              cell_letter(&g, regions, 2, 3) == 'D',
          "17 x 40 in 3 x 4 cells keeps all four regions");
}

/* 7 tiles of 14 rows and one of 2 over 3072 columns: the 2-row band gets
 * a cell row of its own although it is 2% of M. */
static void thin_band_stays_visible(void)
{
    gemm_shape s = {.M = 100, .N = 3072, .K = 64};
    gemm_plan p = {.isa = HW_ISA_AVX512, .vec = 16, .nv = 2, .nr = 32, .nruns = 2,
                   .ntiles = 8, .npanels = 96, .split = 'M', .threads = 1};
    p.runs[0] = (plan_run){.mr = 14, .count = 7};
    p.runs[1] = (plan_run){.mr = 2, .count = 1};
    p.bounds[1] = 8;
    plan_region regions[4];
    int64_t n = plan_regions(&p, &s, regions, 4);
    CHECK(n == 2 && regions[0].tiles == 7 * 96 && regions[1].tiles == 96,
          "100 x 3072: two regions of 672 and 96 tiles");
    plan_grid g;
    plan_grid_build(regions, n, s.M, s.N, PLAN_GRID_MAX_ROWS, PLAN_GRID_MAX_COLS, &g);
    CHECK(g.rows == 36 && g.cols == 72 && g.row_at[g.rows] == 100 && g.col_at[g.cols] == 3072,
          "100 x 3072 in 36 x 72 cells");
    CHECK(g.row_at[35] == 98 && cell_letter(&g, regions, 35, 0) == 'B' &&
              cell_letter(&g, regions, 34, 71) == 'A',
          "the 2-row band is the last cell row (starts at %lld)", (long long)g.row_at[35]);
    int increasing = 1;
    for (int r = 0; r < g.rows; r++)
        increasing &= g.row_at[r] < g.row_at[r + 1];
    CHECK(increasing, "cell rows advance");
}

/* Real plans (zen4 model) for many shapes and thread counts: the regions
 * tile M x N exactly (a full-resolution grid finds each element in one
 * region, and areas add up), their tiles add up to the plan's, every
 * ukernel they name is built, and each thread owns what the bounds say. */
static void real_plans_are_covered(void)
{
#if defined(__x86_64__)
    hw_profile hw;
    plan_model m;
    CHECK(hw_profile_preset(&hw, "zen4") == 0 && plan_model_init(&m, &hw) == 0, "zen4 model");
    enum { MAX_REGIONS = 64 };
    plan_region regions[MAX_REGIONS];
    int bad_area = 0, bad_tiles = 0, bad_kernel = 0, holes = 0, bad_thread = 0, checked = 0;
    for (int64_t M = 1; M <= 36; M += 5)
        for (int64_t N = 1; N <= 72; N += 7)
            for (int threads = 1; threads <= 3; threads++)
                for (int transb = 0; transb <= 1; transb++) {
                    gemm_shape s = {.M = M, .N = N, .K = 40, .transb = transb};
                    gemm_plan p;
                    plan_gemm(&m, &s, threads, &p);
                    int64_t n = plan_regions(&p, &s, regions, MAX_REGIONS);
                    if (n > MAX_REGIONS)
                        continue;
                    checked++;
                    int64_t area = 0, tiles = 0;
                    for (int64_t i = 0; i < n; i++) {
                        const plan_region *r = &regions[i];
                        area += r->rows * r->cols;
                        tiles += r->tiles;
                        ukernel_desc d = {.isa = p.isa, .mr = r->mr, .nv = r->nv,
                                          .a_packed = true};
                        ukernel_row_form form =
                            p.b_from_memory ? UK_ROW_STREAMED : UK_ROW_CACHED;
                        bad_kernel += r->row   ? !ukernel_row_lookup(p.isa, form)
                                      : r->dot ? !ukernel_dot_lookup(p.isa, r->mr, r->nv)
                                               : !ukernel_lookup(&d);
                        bad_thread += r->thread < 0 || r->thread >= p.threads;
                    }
                    bad_area += area != M * N;
                    int64_t row_tiles = p.dot ? (M + p.dot_mr - 1) / p.dot_mr : p.ntiles;
                    /* the row form: one call a thread */
                    bad_tiles += tiles != (p.row ? p.threads : row_tiles * p.npanels);
                    plan_grid g;
                    plan_grid_build(regions, n, M, N, PLAN_GRID_MAX_ROWS, PLAN_GRID_MAX_COLS, &g);
                    for (int r = 0; r < g.rows; r++)
                        for (int c = 0; c < g.cols; c++)
                            holes += g.region[r][c] < 0 || g.row_at[r] != r || g.col_at[c] != c;
                }
    CHECK(checked > 300, "%d plans checked", checked);
    CHECK(bad_area == 0, "regions' areas add up to M x N (%d plans off)", bad_area);
    CHECK(bad_tiles == 0, "regions' tiles add up to the plan's (%d plans off)", bad_tiles);
    CHECK(bad_kernel == 0, "every region's ukernel is built (%d not)", bad_kernel);
    CHECK(bad_thread == 0, "every region has one of the plan's threads (%d not)", bad_thread);
    CHECK(holes == 0, "every element lies in a region (%d cells not)", holes);

    gemm_shape empty = {.M = 0, .N = 5, .K = 5};
    gemm_plan p;
    plan_gemm(&m, &empty, 2, &p);
    CHECK(plan_regions(&p, &empty, regions, MAX_REGIONS) == 0, "M = 0: no regions");
#endif
}

/* More bands than cells: cells are spaced evenly and still advance. */
static void many_bands_spaced_evenly(void)
{
    enum { BANDS = 100 };
    plan_region regions[BANDS];
    for (int i = 0; i < BANDS; i++)
        regions[i] = (plan_region){.row0 = 0, .rows = 1, .col0 = i, .cols = 1, .mr = 1,
                                   .nv = 1, .width = 1, .tiles = 1, .kind = i % 2};
    plan_grid g;
    plan_grid_build(regions, BANDS, 1, BANDS, 36, 10, &g);
    int wrong = 0;
    for (int c = 0; c < g.cols; c++)
        wrong += g.col_at[c] != c * 10 || g.region[0][c] != c * 10;
    CHECK(g.rows == 1 && g.cols == 10 && wrong == 0, "100 one-column bands in 10 cells");
}

void suite_candidates(void)
{
    candidates_of_presets();
    small_grid_by_hand();
    thin_band_stays_visible();
    real_plans_are_covered();
    many_bands_spaced_evenly();
}
