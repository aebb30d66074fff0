/*
 * plan_choice.c - the knobs a plan may turn away from the rules
 * (plan_choice): the variants a calibrated model or `tessel tune` weighs
 * for a shape, which of them the model alone may take, and the text form
 * a tuned choice is stored in.
 */
#include <stdio.h>
#include <string.h>

#include "plan/candidates.h"
#include "plan/plan_rules.h"

int plan_variants(const plan_model *m, const gemm_shape *s, int threads, plan_choice *out,
                  int max)
{
    int n = 0;
    if (max < 1)
        return 0;
    out[n++] = (plan_choice){0};
    if (plan_takes_dot_form(m, s) || plan_takes_row_form(m, s, threads) || s->M == 0 || s->N == 0 ||
        s->K == 0)
        return n;
    plan_choice more[3 * UK_MAX_NV + 8];
    int k = 0;
    if (s->prepacked_kc == 0) {
        /* Other widths whose main tile the rules accept: a width they
         * reject (16 wide here: a k step's broadcasts outlast its FMAs)
         * only looked cheap to a calibrated model, and measured 1.1-1.5x
         * the time of the rules' width (64x768x3072 at 2 threads). */
        for (int nv = 1; nv <= UK_MAX_NV; nv++)
            if (nv != m->nv && m->bulk_mr[nv] > 0 &&
                model_tile_verdict(m, m->bulk_mr[nv], nv).failed == TILE_RULE_PASSES)
                more[k++] = (plan_choice){.nv = nv};
        more[k++] = (plan_choice){.kc = m->kc / 2};
        more[k++] = (plan_choice){.kc = m->kc * 2};
    }
    more[k++] = (plan_choice){.nc = m->nc / 2};
    if (plan_b_rows_in_place(s)) {
        more[k++] = (plan_choice){.pack_b = PLAN_B_IN_PLACE};
        more[k++] = (plan_choice){.pack_b = PLAN_B_PACKED};
    }
    if (threads > 1) {
        more[k++] = (plan_choice){.split = 'M'};
        more[k++] = (plan_choice){.split = 'N'};
    }
    for (int i = 0; i < k && n < max; i++)
        out[n++] = more[i];
    return n;
}

bool plan_variant_admissible(const plan_model *m, const gemm_plan *rules,
                             const plan_choice *v)
{
    /* How B is read and how the threads split the work stay the rules'.
     * Their thresholds were set by measurement, and what decides them
     * (load balance as threads claim row tiles, a core slowed by the
     * host, rows of B far apart in the caches) is what the fitted weights
     * see least. In-process A/B at 2 threads of every gemm.txt shape where
     * a calibration of today left the rules on either, model / rules
     * time: along N instead of M 0.97-1.02 at 43-80 x 768 x 768 and
     * 992-1600 x 2304-3072 x 768, 1.13 at 1904 x 3072 x 768, 1.17-1.23 at
     * 31-32 x 768 x 3072; B packed instead of in place 1.03-1.05 (511-512
     * x 768 x 768-3072, 512^3), 0.99-1.00 with the split changed too (512 x
     * 1024 x 1024-4096). In top-8 runs before, where the rules packed and
     * the model read in place, the fastest plan packed in 51 of 53
     * verdicts; B of short rows, which the rules read in place, it once
     * packed (128x64x128, 1.12x the time). (A variant asking for what the
     * rules chose is their plan again, not planned twice.) */
    bool b_or_split = v->pack_b || v->split;
    /* The tile width stays the rules' too. The tile rates are measured in
     * L1, and the fitted weights do not see what a wider panel costs in
     * place: its B block and copies in the L2, a row of three lines where
     * the hardware fetches pairs. With one calibration of today (2
     * threads, held-out MAPE 11%) the model took 48-wide tiles on 139 of
     * the 179 gemm.txt shapes and missed the best of the top 8 by more
     * than 5% on 49 of them (up to 1.67x: 50-119 x 2304-3072 x 768), 122
     * within 5% in all, against 166 in a run where an older calibration
     * had left the width alone. Before: one row tile reading B in place
     * took 1.05-1.26x the time 48 wide (1x768x3072, 2x768x3072,
     * 3x2304x768, 1x3072x1024), and B of short rows, the widest tile's,
     * was once given 48-wide panels packed (512x64x512). */
    bool other_width = v->nv && v->nv != rules->nv;
    /* The doubled kc is not taken either (tune --shapes still measures
     * it; B in panels runs it by rule, packed_kc, where the variant is the
     * rules' plan again): past the model's kc the A micro-panel no longer stays (or
     * no longer fits) in L1 while B streams by, which no feature sees,
     * while the fitted weight of C (1.1-3.3 in today's calibrations)
     * makes halving the passes over C look like a gain. It was the
     * model's plan in most of its misses; without it, 140 of the 179
     * gemm.txt shapes were within 5% of the best of the top 8 at 2
     * threads, against 124-128 in three runs with it. */
    bool deeper = v->kc > m->kc;
    return !(b_or_split || other_width || deeper);
}

/* ---- the stored form of a choice ---- */

int plan_choice_format(const plan_choice *c, char *buf, size_t len)
{
    const char *b = c->pack_b == PLAN_B_PACKED ? "packed"
                    : c->pack_b == PLAN_B_IN_PLACE ? "in_place" : "rules";
    char split[2] = {c->split ? c->split : '-', '\0'};
    int n = snprintf(buf, len, "nv=%d kc=%lld nc=%lld b=%s split=%s", c->nv, (long long)c->kc,
                     (long long)c->nc, b, split);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

bool plan_choice_equal(const plan_choice *x, const plan_choice *y)
{
    return x->nv == y->nv && x->kc == y->kc && x->nc == y->nc && x->pack_b == y->pack_b &&
           x->split == y->split;
}

int plan_choice_parse(const char *text, plan_choice *out)
{
    int nv, used = 0;
    long long kc, nc;
    char b[16], split[4];
    if (sscanf(text, "nv=%d kc=%lld nc=%lld b=%15s split=%3s%n", &nv, &kc, &nc, b, split,
               &used) != 5 || text[used] != '\0')
        return -1;
    plan_choice c = {.nv = nv, .kc = kc, .nc = nc};
    if (nv < 0 || nv > UK_MAX_NV || kc < 0 || kc > (1 << 20) || nc < 0 || nc > (1 << 24))
        return -1;
    if (strcmp(b, "packed") == 0)
        c.pack_b = PLAN_B_PACKED;
    else if (strcmp(b, "in_place") == 0)
        c.pack_b = PLAN_B_IN_PLACE;
    else if (strcmp(b, "rules") != 0)
        return -1;
    if (strcmp(split, "M") == 0 || strcmp(split, "N") == 0 || strcmp(split, "K") == 0)
        c.split = split[0];
    else if (strcmp(split, "-") != 0)
        return -1;
    *out = c;
    return 0;
}

