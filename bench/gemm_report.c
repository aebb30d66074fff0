/*
 * gemm_report.c - turns the CSV that gemm_bench writes into the summary
 * tables (markdown, on stdout) and a gnuplot script with its data, one PNG
 * per family. For each (threads, family) the summary gives every library's
 * geometric-mean GFLOP/s, tessel's per-shape ratio to the best peer and to
 * oneDNN (geometric mean and the worst shape), then the pre-packed-weights
 * table (tessel-packed against onednn-packed, the libraries' "-packed" rows,
 * kept out of the throughput table) and the fused-epilogue table
 * (tessel-fused against onednn-fused, likewise), the call-overhead table
 * and any result that differed from its reference. It only reads the CSV,
 * so a summary can be rebuilt from an old result file.
 *
 *   gemm_report RESULTS.csv [--plots DIR PREFIX TERMINAL]
 *
 * With --plots, it writes DIR/plot.gp and DIR/<family>.dat; the script draws
 * PREFIX-<family>.png with the given gnuplot terminal (pngcairo or png).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NAMES 64
#define REL_DIFF_WARN 1e-3

typedef struct rec {
    int lib, threads, family;
    long long batch, M, N, K;
    char ta, tb;
    double seconds, gflops, rel_diff; /* rel_diff NAN when empty */
} rec;

typedef struct name_set {
    char *names[MAX_NAMES];
    int n;
} name_set;

static rec *recs;
static size_t nrecs;
static name_set libs, families;
static int threads[MAX_NAMES], nthreads;

static int name_index(name_set *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0)
            return i;
    if (s->n == MAX_NAMES)
        return -1;
    s->names[s->n] = strdup(name);
    return s->names[s->n] ? s->n++ : -1;
}

static int thread_index(int t)
{
    for (int i = 0; i < nthreads; i++)
        if (threads[i] == t)
            return i;
    if (nthreads == MAX_NAMES)
        return -1;
    threads[nthreads] = t;
    return nthreads++;
}

/* Splits a CSV line in place on commas (no quoting is ever written). */
static int split(char *line, char **fields, int max)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *s = line; n < max;) {
        fields[n++] = s;
        char *c = strchr(s, ',');
        if (!c)
            break;
        *c = '\0';
        s = c + 1;
    }
    return n;
}

static int read_csv(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char line[1024];
    size_t cap = 0;
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        char *fl[13];
        if (++lineno == 1 || line[0] == '\n')
            continue; /* header */
        if (split(line, fl, 13) != 13) {
            fprintf(stderr, "gemm_report: %s:%d: expected 13 fields\n", path, lineno);
            fclose(f);
            return -1;
        }
        if (nrecs == cap) {
            cap = cap ? 2 * cap : 1024;
            rec *r = realloc(recs, cap * sizeof *r);
            if (!r) {
                fclose(f);
                return -1;
            }
            recs = r;
        }
        rec *r = &recs[nrecs];
        r->lib = name_index(&libs, fl[0]);
        r->threads = atoi(fl[1]);
        r->family = name_index(&families, fl[2]);
        r->batch = atoll(fl[3]);
        r->M = atoll(fl[4]);
        r->N = atoll(fl[5]);
        r->K = atoll(fl[6]);
        r->ta = fl[7][0];
        r->tb = fl[8][0];
        r->seconds = atof(fl[9]);
        r->gflops = atof(fl[10]);
        r->rel_diff = fl[12][0] ? atof(fl[12]) : NAN;
        if (r->lib < 0 || r->family < 0 || thread_index(r->threads) < 0) {
            fprintf(stderr, "gemm_report: too many distinct names\n");
            fclose(f);
            return -1;
        }
        nrecs++;
    }
    fclose(f);
    return 0;
}

static int same_problem(const rec *a, const rec *b)
{
    return a->threads == b->threads && a->family == b->family && a->batch == b->batch &&
           a->M == b->M && a->N == b->N && a->K == b->K && a->ta == b->ta && a->tb == b->tb;
}

/* The record of library `lib` for the same problem as r, or NULL. */
static const rec *find(const rec *r, int lib)
{
    for (size_t i = 0; i < nrecs; i++)
        if (recs[i].lib == lib && same_problem(&recs[i], r))
            return &recs[i];
    return NULL;
}

static void shape_str(const rec *r, char *buf, size_t len)
{
    if (r->batch > 1)
        snprintf(buf, len, "%lldx(%lldx%lldx%lld)", r->batch, r->M, r->N, r->K);
    else
        snprintf(buf, len, "%lldx%lldx%lld", r->M, r->N, r->K);
}

static const char *overhead_family = "overhead";

static int ends_with(const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);
    return n > k && strcmp(name + n - k, suffix) == 0;
}

/* The pre-packed-weights and fused-epilogue variants ("tessel-packed",
 * "onednn-fused", ...) run on a few families only; they have their own
 * tables. */
static int is_variant(int lib)
{
    return ends_with(libs.names[lib], "-packed") || ends_with(libs.names[lib], "-fused");
}

static int lib_named(const char *name)
{
    for (int l = 0; l < libs.n; l++)
        if (strcmp(libs.names[l], name) == 0)
            return l;
    return -1;
}

/* Accumulates the per-shape ratio num / den for a geometric mean. */
typedef struct ratio_acc {
    double log_sum, worst;
    int n;
    const rec *worst_rec;
} ratio_acc;

static void ratio_add(ratio_acc *a, const rec *num, const rec *den)
{
    if (!num || !den || num->gflops <= 0 || den->gflops <= 0)
        return;
    double ratio = num->gflops / den->gflops;
    a->log_sum += log(ratio);
    a->n++;
    if (!a->worst_rec || ratio < a->worst) {
        a->worst = ratio;
        a->worst_rec = num;
    }
}

static void ratio_print(const ratio_acc *a)
{
    if (a->n)
        printf(" %.2f |", exp(a->log_sum / a->n));
    else
        printf(" |");
}

/* A variant pair's table: tessel's and oneDNN's variant (tessel-packed
 * and onednn-packed, say), their ratio, and each against the same
 * library's call it builds on (`base`: tessel and onednn for the packed
 * variants, the packed ones for the fused). */
typedef struct variant_pair {
    const char *title, *intro;
    const char *tessel, *onednn;           /* the variants */
    const char *tessel_base, *onednn_base; /* what each is measured against */
} variant_pair;

static void variant_table(const variant_pair *v)
{
    int tp = lib_named(v->tessel), dp = lib_named(v->onednn);
    int tessel = lib_named(v->tessel_base), onednn = lib_named(v->onednn_base);
    printf("\n## %s\n\n", v->title);
    if (tp < 0 && dp < 0) {
        printf("Not measured.\n");
        return;
    }
    printf("%s Geometric mean GFLOP/s; ratios are per shape, then geometric-meaned; *worst "
           "shape* is where %s / %s is lowest; the last two columns compare each call with "
           "the same library's %s and %s.\n\n",
           v->intro, v->tessel, v->onednn, v->tessel_base, v->onednn_base);
    printf("| threads | family | shapes | %s | %s | %s / %s | worst shape (ratio) | %s / %s | "
           "%s / %s |\n|---|---|---:|---:|---:|---:|---|---:|---:|\n",
           v->tessel, v->onednn, v->tessel, v->onednn, v->tessel, v->tessel_base, v->onednn,
           v->onednn_base);
    int first_lib = tp >= 0 ? tp : dp;
    for (int ti = 0; ti < nthreads; ti++) {
        for (int fam = -1; fam < families.n; fam++) {
            double lsum[2] = {0, 0};
            int lcnt[2] = {0, 0}, shapes = 0;
            ratio_acc vs_dnn = {0, 0, 0, NULL}, tp_gain = {0, 0, 0, NULL},
                      dp_gain = {0, 0, 0, NULL};
            for (size_t i = 0; i < nrecs; i++) {
                const rec *r = &recs[i];
                if (r->threads != threads[ti] || r->gflops <= 0 ||
                    (r->lib != tp && r->lib != dp) || (fam >= 0 && r->family != fam))
                    continue;
                int k = r->lib == tp ? 0 : 1;
                lsum[k] += log(r->gflops);
                lcnt[k]++;
                if (r->lib != first_lib)
                    continue;
                shapes++;
                const rec *t = tp >= 0 ? find(r, tp) : NULL, *d = dp >= 0 ? find(r, dp) : NULL;
                ratio_add(&vs_dnn, t, d);
                ratio_add(&tp_gain, t, tessel >= 0 ? find(r, tessel) : NULL);
                ratio_add(&dp_gain, d, onednn >= 0 ? find(r, onednn) : NULL);
            }
            if (shapes == 0)
                continue;
            /* the pooled line only when there is more than one family */
            if (fam < 0) {
                int fams = 0;
                for (int f = 0; f < families.n; f++)
                    for (size_t i = 0; i < nrecs; i++)
                        if (recs[i].family == f && recs[i].lib == first_lib &&
                            recs[i].threads == threads[ti]) {
                            fams++;
                            break;
                        }
                if (fams < 2)
                    continue;
            }
            printf("| %d | %s | %d |", threads[ti], fam >= 0 ? families.names[fam] : "**all**",
                   shapes);
            for (int k = 0; k < 2; k++) {
                if (lcnt[k])
                    printf(" %.1f |", exp(lsum[k] / lcnt[k]));
                else
                    printf(" |");
            }
            ratio_print(&vs_dnn);
            if (vs_dnn.worst_rec) {
                char sh[96];
                shape_str(vs_dnn.worst_rec, sh, sizeof sh);
                printf(" %s %c%c (%.2f) |", sh, vs_dnn.worst_rec->ta, vs_dnn.worst_rec->tb,
                       vs_dnn.worst);
            } else {
                printf(" |");
            }
            ratio_print(&tp_gain);
            ratio_print(&dp_gain);
            printf("\n");
        }
    }
}

static void variant_tables(void)
{
    static const variant_pair packed = {
        "Pre-packed weights",
        "Constant weights packed once outside the timing: tessel_sgemm_pack_b then "
        "tessel_sgemm_packed; oneDNN's matmul primitive with weights in its chosen "
        "(format_tag_any) layout, reordered once, primitive created per shape (per M).",
        "tessel-packed", "onednn-packed", "tessel", "onednn"};
    static const variant_pair fused = {
        "Fused epilogue (bias + GELU)",
        "Y = gelu_tanh(X W + b) in one call, on the pre-packed weights: "
        "tessel_sgemm_packed_epilogue; oneDNN's packed matmul primitive with a bias and a "
        "GELU (tanh) eltwise post-op; against the packed call, what the epilogue costs.",
        "tessel-fused", "onednn-fused", "tessel-packed", "onednn-packed"};
    variant_table(&packed);
    variant_table(&fused);
}

static void summary_tables(void)
{
    int tessel = -1, onednn = -1;
    for (int l = 0; l < libs.n; l++) {
        if (strcmp(libs.names[l], "tessel") == 0)
            tessel = l;
        if (strcmp(libs.names[l], "onednn") == 0)
            onednn = l;
    }

    printf("## Throughput\n\n");
    printf("Geometric mean GFLOP/s over the family's shapes. Ratios are per shape, then "
           "geometric-meaned; *best peer* is the fastest other library on each shape; "
           "*worst shape* is where tessel / best peer is lowest.\n\n");
    printf("| threads | family | shapes |");
    for (int l = 0; l < libs.n; l++)
        if (!is_variant(l))
            printf(" %s |", libs.names[l]);
    printf(" tessel / best peer | tessel / onednn | worst shape (ratio) |\n|---|---|---:|");
    for (int l = 0; l < libs.n; l++)
        if (!is_variant(l))
            printf("---:|");
    printf("---:|---:|---|\n");

    for (int ti = 0; ti < nthreads; ti++) {
        for (int fam = -1; fam < families.n; fam++) {
            /* fam -1 is the last line per thread count: every family together */
            if (fam >= 0 && strcmp(families.names[fam], overhead_family) == 0)
                continue;
            double lsum[MAX_NAMES] = {0};
            int lcnt[MAX_NAMES] = {0};
            double best_sum = 0, dnn_sum = 0, worst = INFINITY;
            int best_cnt = 0, dnn_cnt = 0, shapes = 0;
            const rec *worst_rec = NULL;
            for (size_t i = 0; i < nrecs; i++) {
                const rec *r = &recs[i];
                if (r->threads != threads[ti] || r->gflops <= 0 || is_variant(r->lib) ||
                    strcmp(families.names[r->family], overhead_family) == 0 ||
                    (fam >= 0 && r->family != fam))
                    continue;
                lsum[r->lib] += log(r->gflops);
                lcnt[r->lib]++;
                if (r->lib != (tessel >= 0 ? tessel : 0))
                    continue;
                shapes++;
                if (tessel < 0)
                    continue;
                double best = 0;
                for (int l = 0; l < libs.n; l++) {
                    const rec *p = l == tessel || is_variant(l) ? NULL : find(r, l);
                    if (p && p->gflops > best)
                        best = p->gflops;
                }
                if (best > 0) {
                    double ratio = r->gflops / best;
                    best_sum += log(ratio);
                    best_cnt++;
                    if (ratio < worst) {
                        worst = ratio;
                        worst_rec = r;
                    }
                }
                const rec *d = onednn >= 0 ? find(r, onednn) : NULL;
                if (d && d->gflops > 0) {
                    dnn_sum += log(r->gflops / d->gflops);
                    dnn_cnt++;
                }
            }
            if (shapes == 0)
                continue;
            printf("| %d | %s | %d |", threads[ti], fam >= 0 ? families.names[fam] : "**all**",
                   shapes);
            for (int l = 0; l < libs.n; l++) {
                if (is_variant(l))
                    continue;
                if (lcnt[l])
                    printf(" %.1f |", exp(lsum[l] / lcnt[l]));
                else
                    printf(" |");
            }
            if (best_cnt)
                printf(" %.2f |", exp(best_sum / best_cnt));
            else
                printf(" |");
            if (dnn_cnt)
                printf(" %.2f |", exp(dnn_sum / dnn_cnt));
            else
                printf(" |");
            if (worst_rec) {
                char s[96];
                shape_str(worst_rec, s, sizeof s);
                printf(" %s %c%c (%.2f) |\n", s, worst_rec->ta, worst_rec->tb, worst);
            } else {
                printf(" |\n");
            }
        }
    }

    variant_tables();

    printf("\n## Call overhead\n\nMedian time from call to return, in microseconds, over "
           "many single calls on the same buffers. The batched problem is 12 matrices of "
           "5x5x64 (N,T): tessel's strided-batched call, oneDNN's matmul primitive "
           "execution, and a loop of single GEMMs for OpenBLAS and BLIS.\n\n");
    printf("| threads | problem |");
    for (int l = 0; l < libs.n; l++)
        if (!is_variant(l))
            printf(" %s |", libs.names[l]);
    printf("\n|---|---|");
    for (int l = 0; l < libs.n; l++)
        if (!is_variant(l))
            printf("---:|");
    printf("\n");
    int any = 0;
    for (size_t i = 0; i < nrecs; i++) {
        const rec *r = &recs[i];
        if (strcmp(families.names[r->family], overhead_family) != 0)
            continue;
        /* one line per problem: print at its first library's record */
        int first = 1;
        for (size_t j = 0; j < i; j++)
            if (same_problem(&recs[j], r))
                first = 0;
        if (!first)
            continue;
        char s[96];
        shape_str(r, s, sizeof s);
        printf("| %d | %s |", r->threads, s);
        for (int l = 0; l < libs.n; l++) {
            if (is_variant(l))
                continue;
            const rec *p = find(r, l);
            if (p)
                printf(" %.2f |", p->seconds * 1e6);
            else
                printf(" |");
        }
        printf("\n");
        any = 1;
    }
    if (!any)
        printf("| | (not measured) |\n");

    printf("\n## Results that differ\n\nmax_rel_diff = max |C - C_tessel| / max |C_tessel|; "
           "tessel's own row holds its smallest difference to any peer (packed variants "
           "aside); a -packed row is compared with plain tessel, the -fused rows with each "
           "other. Rows above %g:\n\n",
           REL_DIFF_WARN);
    int bad = 0;
    for (size_t i = 0; i < nrecs; i++) {
        const rec *r = &recs[i];
        if (r->rel_diff > REL_DIFF_WARN) {
            char s[96];
            shape_str(r, s, sizeof s);
            printf("- %s, %d thread(s), %s %s %c%c: %.3g\n", libs.names[r->lib], r->threads,
                   families.names[r->family], s, r->ta, r->tb, r->rel_diff);
            bad++;
        }
    }
    if (!bad)
        printf("None.\n");
}

/* ---- plots ---------------------------------------------------------- */

/* Within a family, a dimension that always equals M (N and K of "square",
 * N of "bert-qk") moves with the x axis; every other dimension that varies
 * splits the family into panels. */
typedef struct panel_key {
    long long batch, N, K;
} panel_key;

typedef struct panels {
    int tied_batch, tied_n, tied_k;
    panel_key keys[MAX_NAMES];
    int n;
} panels;

static panel_key key_of(const rec *r, const panels *pn)
{
    panel_key k = {pn->tied_batch ? -1 : r->batch, pn->tied_n ? -1 : r->N,
                   pn->tied_k ? -1 : r->K};
    return k;
}

/* Finds the dimensions tied to M and the distinct panels of a family;
 * returns 0 when there is nothing to plot (no rows, or a single M). */
static int family_panels(int fam, panels *pn)
{
    int count = 0, single_m = 1;
    long long m0 = -1;
    pn->tied_batch = pn->tied_n = pn->tied_k = 1;
    pn->n = 0;
    for (size_t i = 0; i < nrecs; i++) {
        const rec *r = &recs[i];
        if (r->family != fam)
            continue;
        count++;
        pn->tied_batch &= r->batch == r->M;
        pn->tied_n &= r->N == r->M;
        pn->tied_k &= r->K == r->M;
        if (m0 < 0)
            m0 = r->M;
        single_m &= r->M == m0;
    }
    if (count == 0 || single_m)
        return 0;
    for (size_t i = 0; i < nrecs; i++) {
        if (recs[i].family != fam)
            continue;
        panel_key k = key_of(&recs[i], pn);
        int found = 0;
        for (int j = 0; j < pn->n; j++)
            found |= memcmp(&pn->keys[j], &k, sizeof k) == 0;
        if (!found && pn->n < MAX_NAMES)
            pn->keys[pn->n++] = k;
    }
    return 1;
}

static int cmp_rec_m(const void *a, const void *b)
{
    const rec *x = *(const rec *const *)a, *y = *(const rec *const *)b;
    return (x->M > y->M) - (x->M < y->M);
}

static int plot_family(FILE *gp, const char *dir, const char *prefix, const char *term,
                       int fam)
{
    panels pn;
    if (!family_panels(fam, &pn))
        return 0;
    const panel_key *keys = pn.keys;
    int nkeys = pn.n;

    char path[1024];
    snprintf(path, sizeof path, "%s/%s.dat", dir, families.names[fam]);
    FILE *dat = fopen(path, "w");
    if (!dat) {
        perror(path);
        return -1;
    }
    rec **pts = malloc(nrecs * sizeof *pts);
    if (!pts) {
        fclose(dat);
        return -1;
    }
    int cols = nkeys, rows = nthreads;
    fprintf(gp, "set terminal %s size %d,%d font ',9'\n", term, 420 * cols, 320 * rows + 30);
    fprintf(gp, "set output '%s-%s.png'\n", prefix, families.names[fam]);
    fprintf(gp, "set multiplot layout %d,%d title \"%s: GFLOP/s against M\"\n", rows, cols,
            families.names[fam]);
    int block = 0;
    for (int ti = 0; ti < nthreads; ti++) {
        for (int k = 0; k < nkeys; k++) {
            char title[160] = "";
            size_t tl = 0;
            tl += (size_t)snprintf(title + tl, sizeof title - tl, "%d thread%s", threads[ti],
                                   threads[ti] > 1 ? "s" : "");
            if (keys[k].batch >= 0 && keys[k].batch != 1)
                tl += (size_t)snprintf(title + tl, sizeof title - tl, ", batch %lld",
                                       keys[k].batch);
            if (keys[k].N >= 0)
                tl += (size_t)snprintf(title + tl, sizeof title - tl, ", N %lld", keys[k].N);
            if (keys[k].K >= 0)
                snprintf(title + tl, sizeof title - tl, ", K %lld", keys[k].K);
            fprintf(gp, "set title \"%s\"\n", title);
            int nplots = 0;
            for (int l = 0; l < libs.n; l++) {
                int np = 0;
                for (size_t i = 0; i < nrecs; i++) {
                    rec *r = &recs[i];
                    panel_key rk = key_of(r, &pn);
                    if (r->family == fam && r->lib == l && r->threads == threads[ti] &&
                        memcmp(&rk, &keys[k], sizeof rk) == 0 && r->gflops > 0)
                        pts[np++] = r;
                }
                if (np == 0)
                    continue;
                qsort(pts, (size_t)np, sizeof *pts, cmp_rec_m);
                fprintf(dat, "# %s, %s\n", libs.names[l], title);
                for (int i = 0; i < np; i++)
                    fprintf(dat, "%lld %.4f\n", pts[i]->M, pts[i]->gflops);
                fprintf(dat, "\n\n");
                fprintf(gp, "%s '%s' index %d with linespoints ls %d title '%s'",
                        nplots ? ", \\\n    " : "plot ", path, block, l + 1, libs.names[l]);
                block++;
                nplots++;
            }
            if (nplots)
                fprintf(gp, "\n");
            else
                fprintf(gp, "set multiplot next\n");
        }
    }
    fprintf(gp, "unset multiplot\n");
    free(pts);
    fclose(dat);
    return 0;
}

static int write_plots(const char *dir, const char *prefix, const char *term)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/plot.gp", dir);
    FILE *gp = fopen(path, "w");
    if (!gp) {
        perror(path);
        return -1;
    }
    fprintf(gp, "# generated by bench/gemm_report\n");
    fprintf(gp, "set logscale x\nset xlabel 'M'\nset ylabel 'GFLOP/s'\nset yrange [0:*]\n");
    fprintf(gp, "set grid\nset key top left font ',8'\nset pointsize 0.6\n");
    const char *colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"};
    for (int i = 0; i < 6; i++)
        fprintf(gp, "set style line %d lc rgb '%s' lw 1.5 pt %d\n", i + 1, colors[i], 5 + 2 * i);
    int rc = 0;
    for (int f = 0; f < families.n && rc == 0; f++) {
        if (strcmp(families.names[f], overhead_family) == 0)
            continue;
        rc = plot_family(gp, dir, prefix, term, f);
    }
    fclose(gp);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 6 && strcmp(argv[2], "--plots") == 0)) {
        fprintf(stderr, "usage: gemm_report RESULTS.csv [--plots DIR PREFIX TERMINAL]\n");
        return 2;
    }
    if (read_csv(argv[1]) != 0)
        return 1;
    summary_tables();
    if (argc == 6 && write_plots(argv[3], argv[4], argv[5]) != 0)
        return 1;
    return 0;
}
