/*
 * explain_report.c - the text of `tessel explain`: the hardware as the
 * model sees it, the candidate tables with the rules' verdicts (from
 * plan_candidates, so the reasons are the model's own), the blocking and
 * why, and the plan in words: path, packing, row runs, column panels,
 * ukernels and each thread's share of the predicted cycles.
 */
#include <stdbool.h>
#include <stdio.h>

#include "explain.h"

/* 49152 -> "48 KiB", 1032192 -> "1008 KiB", 314572800 -> "300 MiB". */
static void format_bytes(double bytes, char *buf, size_t len)
{
    if (bytes >= 1 << 20)
        snprintf(buf, len, "%.3g MiB", bytes / (1 << 20));
    else if (bytes >= 1024)
        snprintf(buf, len, "%.0f KiB", bytes / 1024);
    else
        snprintf(buf, len, "%.0f B", bytes);
}

void explain_print_hardware(const plan_model *m)
{
    const hw_profile *hw = &m->hw;
    printf("hardware  %s: %d floats a vector, %d vector registers; FMA latency %.2g cycles, "
           "%.3g FMAs a cycle, %.2g more a broadcast", hw_isa_name(hw->isa), m->vec,
           hw->vec_registers, hw->fma_latency_cycles, hw->fma_per_cycle, hw->broadcast_cycles);
    if (hw->freq_ghz > 0)
        printf(", %.2f GHz", hw->freq_ghz);
    printf("\n         ");
    for (int level = 1; level <= 3; level++) {
        const hw_cache *c = hw_data_cache(hw, level);
        char size[24];
        if (!c) {
            printf(" L%d unknown (model assumes a default)%s", level, level < 3 ? "," : "");
            continue;
        }
        format_bytes((double)c->size_bytes, size, sizeof size);
        printf(" L%d%s %s %d-way", level, c->type == 'D' ? "d" : "", size, c->ways);
        if (c->shared_by > 1)
            printf(" shared by %d", c->shared_by);
        printf("%s", level < 3 ? "," : "");
    }
    printf("\n");
}

static void print_candidate(int rank, const plan_candidate *c, const char *note)
{
    char tile[16], kc[16];
    snprintf(tile, sizeof tile, "%dx%d", c->mr, c->nr);
    if (c->dot)
        snprintf(kc, sizeof kc, "%.2f", c->score);
    else
        snprintf(kc, sizeof kc, "%lld", (long long)c->verdict.kc);
    printf("  %4d  %6s  %4d  %4d  %9s  %s%s%s%s\n", rank, tile, c->verdict.registers,
           c->accumulators, kc, plan_candidate_status_name(c->status),
           c->status == CANDIDATE_REJECTED ? ": " : "", c->reason, note);
}

void explain_print_candidates(const plan_model *m, const gemm_plan *p)
{
    plan_candidate list[PLAN_MAX_CANDIDATES];
    int n = plan_candidates(m, list, PLAN_MAX_CANDIDATES);
    printf("\ncandidates: the %d built %s ukernels, mr rows x nr columns (nr = nv x %d), "
           "best first:\n  most accumulators within the rules, ties to the taller\n",
           n, hw_isa_name(m->hw.isa), m->vec);
    printf("  %4s  %6s  %4s  %4s  %9s  %s\n", "rank", "tile", "regs", "acc", "L1 kc", "verdict");
    for (int i = 0; i < n; i++) {
        bool used = !p->dot && p->npanels > 0 && list[i].nv == p->nv &&
                    list[i].mr == m->bulk_mr[p->nv];
        print_candidate(i + 1, &list[i], used && list[i].status != CANDIDATE_CHOSEN
                                             ? " (this plan's main tile)" : "");
    }

    plan_candidate dots[PLAN_MAX_DOT_CANDIDATES];
    n = plan_dot_candidates(m, dots, PLAN_MAX_DOT_CANDIDATES);
    bool waived = n > 0 && dots[0].verdict.latency_waived;
    printf("\ndot-product candidates (small M with B^T, both read in place): the %d built, "
           "mr rows of A x nj rows of B^T,\n  best first: %s\n", n,
           waived ? "none hides the latency, so the most accumulators, then FMAs per load"
                  : "most FMAs per load (mr nj / (mr + nj)), ties to more accumulators");
    printf("  %4s  %6s  %4s  %4s  %9s  %s\n", "rank", "tile", "regs", "acc", "FMAs/load",
           "verdict");
    for (int i = 0; i < n; i++)
        print_candidate(i + 1, &dots[i], "");
}

void explain_print_blocking(const plan_model *m, const gemm_plan *p, const gemm_shape *s)
{
    printf("\n");
    if (p->dot) {
        printf("blocking  none: dot-product tiles run all of K = %lld, reading A and B^T in "
               "place\n", (long long)s->K);
        return;
    }
    if (p->row) {
        if (s->prepacked_kc > 0)
            printf("blocking  the pre-packed k blocks of %lld: the row form runs each over "
                   "C's row%s\n", (long long)s->prepacked_kc, s->M == 1 ? "" : "s");
        else
            printf("blocking  none: the row form runs all of %s = %lld over C's row%s, "
                   "reading A and B in place\n", p->split == 'K' ? "a thread's rows of K" : "K",
                   (long long)(p->split == 'K' ? p->kc : s->K), s->M == 1 ? "" : "s");
        return;
    }
    if (s->M == 0 || s->N == 0 || s->K == 0) {
        printf("blocking  none: nothing to multiply\n");
        return;
    }
    int mr = m->bulk_mr[p->nv];
    tile_verdict v = model_tile_verdict(m, mr, p->nv);
    int64_t kblocks = (s->K + p->kc - 1) / p->kc;
    printf("blocking  kc %lld: K = %lld as %lld block%s of %s%lld; ", (long long)p->kc,
           (long long)s->K, (long long)kblocks, kblocks == 1 ? "" : "s",
           s->K % p->kc ? "at most " : "", (long long)p->kc);
    if (m->kc_for[p->nv] > v.kc)
        printf("the model's kc %lld: the L2 feeds the %d x kc A and kc x %d B micro-panels "
               "as fast as the FMAs use them (%.1f bytes a cycle), so A fills the L1 less a "
               "way: fewer k blocks than the L1 rule's kc %lld\n",
               (long long)m->kc_for[p->nv], mr, p->nr,
               model_panel_bytes_per_cycle(mr, p->nr, m->vec, m->hw.fma_per_cycle),
               (long long)v.kc);
    else
        printf("the model's kc %lld keeps the %d x kc A micro-panel in L1 while %d-wide B "
               "panels stream through %d of its %d ways (one spare)\n", (long long)v.kc, mr,
               p->nr, v.l1_ways_for_b, v.l1_ways);
    if (p->whole_k && p->ntiles == 1)
        printf("          K whole: one row tile reads each B panel once, so no other tile "
               "would find the B block in the L2; one k block saves a pass over C\n");
    else if (p->whole_k)
        printf("          K whole: only %lld B panel%s read each A micro-panel, so keeping it in "
               "L1 saves little; one k block saves a pass over C\n", (long long)p->npanels,
               p->npanels == 1 ? "" : "s");
    if (p->b_one_block)
        printf("          K and N whole: B, read in place, stays in the L3 between calls; one "
               "block saves each tile a pass over C per k block, and the L3 keeps the panels "
               "coming\n");
    if ((p->pack_b || s->prepacked_kc > 0) && !p->whole_k && !p->deep_kc &&
        p->kc > m->kc_for[p->nv])
        printf("          kc past the model's: B in panels runs k blocks up to twice its "
               "depth, as the L2 feeds A's micro-panel; a deeper block saves each tile "
               "passes over C\n");
    if (p->deep_kc)
        printf("          kc deepened: a thread runs at most %lld B panels, few to keep an A "
               "micro-panel in L1 for, and each k block costs every tile a call and a pass "
               "over C\n", (long long)(p->nc / p->nr));
    char block[24], l2[24];
    double block_bytes = (double)p->kc * (double)(p->nc < s->N ? p->nc : s->N) * sizeof(float);
    format_bytes(block_bytes, block, sizeof block);
    format_bytes((double)m->l2_bytes, l2, sizeof l2);
    const char *why = !p->nc_half_l2 ? ""
                      : !p->pack_b ? "; capped to half the L2: B is read in place, its rows far "
                                     "apart"
                                   : "; capped to half the L2: the first row tile's copy "
                                     "passes it with its source";
    if (p->b_from_memory && !p->pack_b)
        printf("          nc %lld: B streams from memory in place, a kc x nc block (%s) at a time, "
               "its panels outermost: a panel serves the row tiles (16 at a time) before the next "
               "is read\n",
               (long long)p->nc, block);
    else if (block_bytes > (double)m->l2_bytes)
        printf("          nc %lld: the kc x nc block of B (%s) stays in the L3, past the %s L2, "
               "while A micro-panels pass: A, packed once per block, is packed fewer times\n",
               (long long)p->nc, block, l2);
    else
        printf("          nc %lld: the kc x nc block of B (%s) stays in the %s L2 while A "
               "micro-panels pass%s\n", (long long)p->nc, block, l2, why);
    printf("          mc = %d (one row tile): its A micro-panel is %s just before its row of B "
           "panels and stays in L1 while they stream by\n", mr,
           p->pack_a ? "packed" : "read in place");
}

/* Cycles per k step of one tile of a region, at the model's rates. */
static double region_tile_cycles(const plan_model *m, const plan_region *r)
{
    if (r->dot)
        return model_tile_cycles(r->mr, r->nv, m->hw.fma_latency_cycles, m->hw.fma_per_cycle,
                                 2.0, 0.0);
    return m->tile_cycles[r->nv][r->mr];
}

static void print_rows_and_columns(const gemm_plan *p, const gemm_shape *s)
{
    printf("rows      M = %lld:", (long long)s->M);
    if (p->dot) {
        int64_t full = s->M / p->dot_mr, rest = s->M % p->dot_mr;
        if (full > 0)
            printf(" %lld x %d-row tiles", (long long)full, p->dot_mr);
        if (rest > 0)
            printf("%s1 x %lld-row tile", full > 0 ? " + " : " ", (long long)rest);
    } else {
        for (int i = 0; i < p->nruns; i++)
            printf("%s%lld x %d-row tile%s", i ? " + " : " ", (long long)p->runs[i].count,
                   p->runs[i].mr, p->runs[i].count == 1 ? "" : "s");
    }
    int64_t unit = p->dot ? p->dot_nj : p->nr;
    int64_t tail = s->N - (p->npanels - 1) * unit;
    printf("\ncolumns   N = %lld: ", (long long)s->N);
    if (tail == unit)
        printf("%lld %s%s of %lld", (long long)p->npanels, p->dot ? "tile" : "panel",
               p->npanels == 1 ? "" : "s", (long long)unit);
    else if (p->npanels > 1)
        printf("%lld %s%s of %lld + 1 of %lld", (long long)p->npanels - 1,
               p->dot ? "tile" : "panel", p->npanels == 2 ? "" : "s", (long long)unit,
               (long long)tail);
    else
        printf("1 %s of %lld", p->dot ? "tile" : "panel", (long long)tail);
    if (!p->dot && tail != unit) {
        int tail_nv = (int)((tail + p->vec - 1) / p->vec);
        printf(" (%d vector%s of %d%s)", tail_nv, tail_nv == 1 ? "" : "s", p->vec,
               tail < tail_nv * p->vec ? ", masked" : "");
    }
    printf("\n");
}

static void print_threads(const plan_model *m, const gemm_plan *p, const plan_region *regions,
                          int64_t nregions)
{
    enum { SHOWN = 16 };
    double cycles[PLAN_MAX_THREADS] = {0}, total = 0.0;
    for (int64_t i = 0; i < nregions; i++) {
        /* the row form: a thread's share is its columns */
        double c = regions[i].row ? (double)regions[i].cols
                                  : region_tile_cycles(m, &regions[i]) * (double)regions[i].tiles;
        cycles[regions[i].thread] += c;
        total += c;
    }
    if (p->split == 'K') {
        printf("threads   %d, split along K (rows of op(B)): each thread runs the whole grid "
               "over its rows,\n          reading one stretch of B; the partial products are "
               "summed into C after\n", p->threads);
        for (int t = 0; t < p->threads && t < SHOWN; t++)
            printf("          thread %d: rows of B %lld-%lld\n", t, (long long)p->bounds[t],
                   (long long)p->bounds[t + 1] - 1);
        if (p->threads > SHOWN)
            printf("          ... %d more\n", p->threads - SHOWN);
        return;
    }
    printf("threads   %d, split along %s:\n", p->threads,
           p->split == 'M' ? "M (row tiles)"
           : p->dot        ? "N (column tiles)"
           : p->row        ? "N (vectors of columns)"
                           : "N (panels)");
    if (p->split == 'M' && p->threads > 1 && p->b_per_thread)
        printf("          (each thread packs its own copy of B and runs its share below: the\n"
               "          L3 does not feed the tiles, so a copy another core packed comes slower)\n");
    else if (p->split == 'M' && p->threads > 1 && !p->dot)
        printf("          (the threads pack one shared B per block and take its row tiles one\n"
               "          at a time, so each runs about the share below, more if it is faster)\n");
    else if (p->split == 'N' && p->threads > 1 && !p->dot)
        printf("          (each thread runs its share below in groups, up to 4, and then takes\n"
               "          what is left of the others' from their ends, so a faster one runs more)\n");
    for (int t = 0; t < p->threads && t < SHOWN; t++) {
        int64_t first = -1, last = -1;
        for (int64_t i = 0; i < nregions; i++) {
            const plan_region *r = &regions[i];
            int64_t lo = p->split == 'M' ? r->row0 : r->col0;
            int64_t hi = lo + (p->split == 'M' ? r->rows : r->cols);
            if (r->thread == t) {
                first = first < 0 || lo < first ? lo : first;
                last = hi > last ? hi : last;
            }
        }
        printf("          thread %d: %s %lld-%lld, %s %lld-%lld, %.1f%% of the predicted "
               "cycles\n", t,
               p->split == 'M' ? "tiles" : p->dot ? "column tiles" : p->row ? "vectors" : "panels",
               (long long)p->bounds[t], (long long)p->bounds[t + 1] - 1,
               p->split == 'M' ? "rows" : "columns", (long long)first, (long long)last - 1,
               total > 0 ? 100.0 * cycles[t] / total : 0.0);
    }
    if (p->threads > SHOWN)
        printf("          ... %d more\n", p->threads - SHOWN);
}

void explain_print_plan(const plan_model *m, const gemm_plan *p, const gemm_shape *s,
                       const plan_region *regions, int64_t nregions)
{
    if (nregions == 0) {
        printf("plan      nothing to multiply (M, N or K is 0)%s\n",
               s->M > 0 && s->N > 0 ? ": C = beta C" : "");
        return;
    }
    const char *why = p->row ? plan_row_form_reason(m, s, p->threads) : NULL;
    if (p->row && p->b_from_memory && s->M == 1)
        printf("plan      row form, streaming: 1 row of A times B, both read in place, "
               "nothing packed; each thread's share of B outgrows its L2, so 8 of its rows "
               "at a time are read whole and summed into C's row in L2\n");
    else if (p->row && p->b_from_memory)
        printf("plan      row form, streaming%s%s%s: %lld rows of A times B, both read in "
               "place, nothing packed; 8 rows of B at a time are read whole and summed into "
               "C's rows\n", why ? " (" : "", why ? why : "", why ? ")" : "", (long long)s->M);
    else if (p->row)
        printf("plan      row form: %lld row%s of A times B, %s; each row of B read a block "
               "of C's row%s at a time, %s, a run the hardware prefetchers follow\n",
               (long long)s->M, s->M == 1 ? "" : "s",
               s->prepacked_kc > 0 ? "A read in place, B from its pre-packed panels"
                                   : "both read in place, nothing packed",
               s->M == 1 ? "" : "s",
               s->prepacked_kc > 0 ? "across several panels" : "along its columns");
    else if (p->dot && s->transb)
        printf("plan      dot-product path: A and B^T read in place, nothing packed; "
               "%d x %d tiles%s\n", p->dot_mr, p->dot_nj,
               p->b_prefetch ? "; where B^T's rows start off a cache line, each asks for the "
                                "rows of the tiles ahead"
                              : "");
    else if (p->dot)
        printf("plan      dot-product path: A read in place, B's %lld column%s transposed "
               "first into rows of B^T; %d x %d tiles\n", (long long)s->N,
               s->N == 1 ? "" : "s", p->dot_mr, p->dot_nj);
    else
        printf("plan      packed path: A %s; B %s\n",
               !p->pack_a ? "read in place (too few rows to pay for the copy)"
                          : "packed tile by tile",
               p->pack_b && p->b_from_memory
                   ? "packed into nr-wide panels, a few rows at a time across each block (it "
                     "comes from memory: the prefetchers follow its rows)"
               : p->pack_b ? "packed into nr-wide panels"
               : p->b_from_memory
                   ? "read in place a few rows deep (it comes from memory: the prefetchers "
                     "follow its rows)"
                   : "read in place (copying it would cost more than reading in place)");
    /* explain's B is dense: its rows are N floats apart */
    if (plan_b_unprefetched(p, s->N * (int64_t)sizeof(float)))
        printf("          B's rows lie a multiple of %lld bytes (the L1's way span) apart: "
               "not prefetched, the hardware prefetchers do better alone\n",
               (long long)p->b_unprefetched_stride);
    if (p->b_panels_in_l1)
        printf("          B's kc x nc block fits the L1: the row tiles after the first find "
               "its packed panels there, and the ukernel does not prefetch them\n");
    if (!p->row)
        print_rows_and_columns(p, s);
    printf("ukernels ");
    int shown = -1;
    for (int64_t i = 0; i < nregions; i++) {
        if (regions[i].kind <= shown)
            continue;
        shown = regions[i].kind;
        char label[48];
        explain_kind_label(&regions[i], p->vec, label, sizeof label);
        int64_t tiles = 0;
        for (int64_t j = 0; j < nregions; j++)
            tiles += regions[j].kind == shown ? regions[j].tiles : 0;
        printf("%s%c %s: %lld tile%s", shown ? ", " : " ", plan_kind_letter(shown), label,
               (long long)tiles, tiles == 1 ? "" : "s");
    }
    printf("\n");
    print_threads(m, p, regions, nregions);
}

