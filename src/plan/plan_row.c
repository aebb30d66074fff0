/*
 * plan_row.c - the row form: one to a few rows of A along whole rows of
 * B (ukernel_template.h), for B that streams from memory or crowds the
 * caches, and for a few rows over pre-packed panels; when it pays, the
 * reason `tessel explain` shows, and its plan.
 */
#include "plan/plan_rules.h"

/* Whether each thread's columns of B outgrow its L2, so that the row
 * form reads them from L3 or memory on every call: it then takes its
 * streaming body, whose runs along whole rows the L2's prefetcher
 * follows, rather than a kilobyte of each row at a time. Time streaming /
 * blocks, Intel Xeon (model 207, L2 2 MiB, L3 reads 29 GB/s), in
 * process, 1 thread: 1x768x768 (B 2.3 MB) 0.75-0.85, 1x1024x1024 0.85-0.90,
 * 1x2304x768 0.80-0.86, 1x3072x768 0.77-0.83, 1x4096x1024 0.75-0.83,
 * 1x1024x4096 0.73-0.79; B inside the L2, 1x512x768 0.92-1.05 and
 * 1x256x768 1.17-1.40. 2 threads:
 * 1x768x768 (1.2 MB a thread) 1.00-1.24, 1x1024x1024 (2 MB) 0.77-0.88,
 * 1x3072x768 0.70-0.72. (On the AMD EPYC, Zen 4 with 1 MiB of L2, the
 * blocks read a 16 MB B at 52 GB/s against the stream's 46: not checked
 * there since.) */
static bool row_b_outgrows_l2(const plan_model *m, const gemm_shape *s, int threads)
{
    int64_t cols = (s->N + threads - 1) / threads;
    return s->K * cols * (int64_t)sizeof(float) > m->l2_bytes;
}

/* A B of more than half the L3: what stays of it between row steps is
 * then little, and the streaming row form's long runs pay for a few rows
 * (up to ROW_FORM_FULL_L3_MAX_M, see plan_takes_row_form) as they do for B from
 * memory. */
enum { ROW_FORM_FULL_L3_MAX_M = 4 };

/* Up to this many rows (see plan_row_form_reason). Once the first row
 * tile asked for colliding rows far ahead into L2 (ops/gemm_blocks.c,
 * L2_AHEAD_ROWS), the tiles overtook the form at 4 and 5 rows: Zen 4, in
 * one process, 1 thread, medians of three processes, tiles / form speed,
 * 4-5 x 4096 x 1024, x 1024 x 4096, x 3072 x 1024 1.17-1.35, 4 x 3072 x
 * 768 1.56, 5 x 3072 x 768 1.02; at 2 and 3 rows the form still won (2
 * rows 0.73-0.76 without it, 3 rows 0.95-1.08). */
enum { ROW_FORM_CROWDED_MAX_M = 3 };

/* Whether `rows` rows of the row form, each with its share of the
 * form's accumulators, keep enough FMAs in flight (rule 2 of the tiles). */
static bool row_panels_hide_latency(const plan_model *m, int64_t rows)
{
    int vecs = ukernel_row_vecs(m->hw.isa) / (int)rows;
    return model_hides_latency((int)rows, vecs, m->hw.fma_latency_cycles, m->hw.fma_per_cycle);
}

/* A few rows of A times B with contiguous rows: the row form, which reads
 * a kilobyte of each row of B in one run (ukernel_template.h), not a
 * tile's quarter kilobyte. Against oneDNN, bench/compare
 * (`compare-row-form.md`), one row, 1 thread (2): 1x3072x768 0.67 -> 0.98
 * (0.89 -> 1.00), bert-large's one-row layers 0.55-0.77 -> 0.70-0.94
 * (0.62-1.01 -> 0.84-1.08); B in L2 (1x768x768) level. A B from memory
 * takes its streaming body, which also serves 2 to UK_ROW_STREAM_MAX_M
 * rows of a B that streams from memory: its sums stay in registers across
 * 8 rows of B read whole, where the tiles read B a line of a row at a
 * time. AMD EPYC family 23 (B of 9.4 MB, L3 8 MiB), tessel / oneDNN in
 * one process, tiles -> row form, 2-4 rows, 1 thread: x 3072 x 768
 * 0.93-1.05 -> 1.16-1.33, x 768 x 3072 0.58-0.75 -> 0.76-0.94; 2
 * threads 0.75-1.06 -> 1.11-1.37, 0.58-0.69 -> 0.71-0.75. B in L3 went
 * the other way: x 768 x 768 0.91-1.14 -> 0.66-0.76 (2 threads
 * 0.85-1.02 -> 0.65-0.72), x 2304 x 768 mixed. 5 and 6 rows too
 * (medians of three alternating rounds, `compare-rows-stream-5-8.md`, 1
 * thread): 5 x 768 x 3072 0.64 -> 0.77, 5 and 6 x 3072 x 768 0.64-0.67 ->
 * 0.84-0.98; 8 rows went level or worse (0.74 -> 0.73, 1.09 -> 1.02), so
 * the form stops at 6. Reading 16 rows of B a step instead of 8 lost at
 * every count (1 x 768 x 3072 1.00 -> 0.79, `compare-rows-stream-16.md`).
 * A B of more than half the L3 takes the form up to 4 rows: 2-4 x 2304 x
 * 768 (7 MB, L3 8 MiB) 0.72-0.90 -> 0.93-1.08 at 1 thread, 0.81-0.92 ->
 * 0.83-0.96 at 2; 5 and 6 rows lost (0.91-0.92 -> 0.73-0.89,
 * `compare-rows-stream-b-fills-l3.md`). One row over pre-packed B takes
 * the form across its panels (`compare-packed-row-form.md`), and so do up
 * to UK_ROW_MAX_M rows where their share of the form's accumulators
 * hides the FMA latency (row_panels_hide_latency): the tiles read one
 * 32-wide panel at a time, the form several. In one process, Zen 4, 1
 * thread, time row form / tiles: 2 x 768-3072 x 768-3072 0.70-0.77, 3
 * rows 0.56-0.93, 4 rows 0.85-1.01, 5 rows 0.85-0.96, 6 rows 0.66-0.95; 8
 * rows (two vectors a row, as the 8x32 tile) 0.92-1.09, hence 6. Up to
 * ROW_FORM_CROWDED_MAX_M rows of a B whose rows crowd the L1 sets (plan_b_rows_crowd_l1_sets) and
 * that takes over a quarter of the L3 (32 MiB here, which other guests
 * share) stream too: Zen 4, in one process, 1 thread, time row form /
 * tiles 2-5 x 3072 x 768 0.41-0.97 (tiles 27-95 GF/s by the spell, the
 * form 49-98), 3 x 1024 x 4096 and 3 x 4096 x 1024 0.50-0.68; 6 rows
 * 1.00-1.22, rows 9 KiB apart (2304) 1.00-1.13, a 4 MiB B (1024 x 1024)
 * 1.00-1.01, so not those. Against oneDNN (`compare-crowded-rows-row-
 * form.md`, 4 rounds, 1 thread) new / old: 2-4 x 3072 x 768 1.72-1.75, 5
 * rows 0.93 (medians 1.06 against 1.02), bert-large's 2-5 x 1024-4096 x
 * 1024-4096 1.28-2.31. At 2 threads the split along K leaves each thread
 * half of such a B, which keeps tiles: the form over such halves took
 * 0.46-1.52 of their time, in one process, calls alternating, the same
 * shape flipping from run to run (2-4 x 3072 x 768, 2-4 x 4096 x 1024, 3
 * x 1024 x 4096), so no rule there. */
const char *plan_row_form_reason(const plan_model *m, const gemm_shape *s, int threads)
{
    if (s->N <= 0 || s->K <= 0 || s->M < 1)
        return NULL;
    if (s->prepacked_kc > 0) {
        if (s->M == 1)
            return "one row";
        return s->M <= UK_ROW_MAX_M && row_panels_hide_latency(m, s->M)
                   ? "each row's share of the accumulators hides the FMA latency"
                   : NULL;
    }
    if (!plan_b_rows_in_place(s))
        return NULL;
    if (s->M == 1)
        return "one row";
    if (s->M <= UK_ROW_STREAM_MAX_M && plan_b_streams_from_memory(m, s))
        return "B comes from memory";
    if (s->M <= UK_ROW_STREAM_MAX_M && plan_b_streams(m, s, threads))
        return "B comes from an L3 as slow as memory";
    if (s->M <= ROW_FORM_FULL_L3_MAX_M && plan_b_outgrows_l3_part(m, s, 2))
        return "B takes over half the L3";
    if (s->M <= ROW_FORM_CROWDED_MAX_M && plan_b_rows_crowd_l1_sets(m, s) &&
        plan_b_outgrows_l3_part(m, s, 4))
        return "B's rows crowd one or two L1 sets and B takes over a quarter of the L3";
    return NULL;
}

bool plan_takes_row_form(const plan_model *m, const gemm_shape *s, int threads)
{
    return plan_row_form_reason(m, s, threads) != NULL;
}

/* Row plans: the columns, in whole vectors (pre-packed B: in its
 * panels), split evenly over the threads; K runs whole (pre-packed: in
 * its blocks), nothing is packed. */
void plan_row_form(const plan_model *m, const gemm_shape *s, int threads, gemm_plan *p)
{
    bool panels = s->prepacked_kc > 0;
    p->row = true;
    p->kc = panels ? s->prepacked_kc : s->K;
    p->nr = panels ? m->nr : m->vec;
    p->npanels = (s->N + p->nr - 1) / p->nr;
    p->ntiles = 1;
    p->split = 'N';
    p->threads = threads < p->npanels ? threads : (int)p->npanels;
    /* Several rows of A only the streaming body takes. */
    p->b_from_memory = !panels && (s->M > 1 || plan_b_streams_from_memory(m, s) ||
                                   row_b_outgrows_l2(m, s, p->threads));
    for (int t = 0; t <= p->threads; t++)
        p->bounds[t] = p->npanels * t / p->threads;
    plan_set_choice(p, p->kc, 0, PLAN_B_RULES, p->split);
    double vectors = (double)((s->N + m->vec - 1) / m->vec);
    p->fma_cycles = (double)s->M * vectors * (double)s->K / m->hw.fma_per_cycle / p->threads;
    p->calls = 1.0;
    double f[COST_NFEATURES];
    plan_cost_features(m, s, p, f);
    p->predicted_seconds = cost_predict(&m->cost, f);
}
