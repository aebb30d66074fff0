/*
 * explain_draw.c - draws a plan's tessellation for `tessel explain`: the
 * character grid (from plan_grid_build, which keeps every band of tiles
 * visible) and an SVG drawing in plain fprintf, each region a rectangle
 * coloured by its ukernel, tile edges where they are far enough apart to
 * see, thread boundaries as dashed lines, and a legend.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "explain.h"

void explain_kind_label(const plan_region *r, int vec, char *buf, size_t len)
{
    if (r->row)
        snprintf(buf, len, "row form");
    else if (r->dot)
        snprintf(buf, len, "dot %dx%d", r->mr, r->nv);
    else if (r->masked)
        snprintf(buf, len, "%dx%d (masked %d)", r->mr, r->nv * vec, r->width);
    else
        snprintf(buf, len, "%dx%d", r->mr, r->nv * vec);
}

enum { MAX_KINDS = 52 };

/* One region of each kind (its label) and the tiles of each kind. */
static int collect_kinds(const explain_picture *pic, const plan_region **example,
                         int64_t *tiles)
{
    int nkinds = 0;
    for (int k = 0; k < MAX_KINDS; k++) {
        example[k] = NULL;
        tiles[k] = 0;
    }
    for (int64_t i = 0; i < pic->nregions; i++) {
        int k = pic->regions[i].kind;
        if (k < 0 || k >= MAX_KINDS)
            continue;
        if (!example[k])
            example[k] = &pic->regions[i];
        tiles[k] += pic->regions[i].tiles;
        nkinds = k + 1 > nkinds ? k + 1 : nkinds;
    }
    return nkinds;
}

/* ---- the character grid ---- */

static int cell_thread(const explain_picture *pic, const plan_grid *g, int r, int c)
{
    int i = g->region[r][c];
    return i >= 0 ? pic->regions[i].thread : -1;
}

/* Whether cell row r starts a new band: its regions differ from row r-1's. */
static bool new_band(const plan_grid *g, int r)
{
    if (r == 0)
        return true;
    for (int c = 0; c < g->cols; c++)
        if (g->region[r][c] != g->region[r - 1][c])
            return true;
    return false;
}

static void print_grid_row(FILE *out, const explain_picture *pic, const plan_grid *g, int r,
                           bool split_n)
{
    if (new_band(g, r))
        fprintf(out, "  %8lld ", (long long)g->row_at[r]);
    else
        fprintf(out, "  %8s ", "");
    for (int c = 0; c < g->cols; c++) {
        if (split_n && c > 0 && cell_thread(pic, g, r, c) != cell_thread(pic, g, r, c - 1))
            fputc('|', out);
        int i = g->region[r][c];
        fputc(i >= 0 ? plan_kind_letter(pic->regions[i].kind) : '.', out);
    }
    bool thread_starts = r == 0 || cell_thread(pic, g, r, 0) != cell_thread(pic, g, r - 1, 0);
    if (!split_n && pic->plan->threads > 1 && thread_starts)
        fprintf(out, "  thread %d", cell_thread(pic, g, r, 0));
    fputc('\n', out);
}

/* The column header: 0 on the left, N on the right, and with an N split
 * the first column of each thread's share over its '|'. */
static void print_grid_header(FILE *out, const explain_picture *pic, const plan_grid *g,
                              bool split_n)
{
    char line[2 * PLAN_GRID_MAX_COLS + 32];
    int width = g->cols;
    for (int c = 1; split_n && c < g->cols; c++)
        width += cell_thread(pic, g, 0, c) != cell_thread(pic, g, 0, c - 1);
    memset(line, ' ', sizeof line);
    int at = 0;
    for (int c = 0; c < g->cols; c++) {
        bool boundary = split_n && c > 0 && cell_thread(pic, g, 0, c) != cell_thread(pic, g, 0, c - 1);
        at += boundary;
        if (c == 0 || boundary) {
            char label[24];
            int n = snprintf(label, sizeof label, "%lld", (long long)g->col_at[c]);
            if (at + n < width - 6)
                memcpy(line + at, label, (size_t)n);
        }
        at++;
    }
    char end[24];
    int n = snprintf(end, sizeof end, "%lld", (long long)pic->N);
    int start = width - n > 0 ? width - n : 0;
    memcpy(line + start, end, (size_t)n);
    line[width > start + n ? width : start + n] = '\0';
    fprintf(out, "  %8s %s\n", "", line);
}

void explain_print_grid(FILE *out, const explain_picture *pic)
{
    plan_grid g;
    plan_grid_build(pic->regions, pic->nregions, pic->M, pic->N, PLAN_GRID_MAX_ROWS,
                    PLAN_GRID_MAX_COLS, &g);
    if (g.rows == 0)
        return;
    bool split_n = pic->plan->threads > 1 && pic->plan->split == 'N';
    bool split_m = pic->plan->threads > 1 && pic->plan->split == 'M';
    double rows_per_cell = (double)pic->M / g.rows, cols_per_cell = (double)pic->N / g.cols;
    fprintf(out, "tessellation of M %lld x N %lld in %d x %d cells (a cell %s %.3g row%s x "
            "%.3g column%s)\n", (long long)pic->M, (long long)pic->N, g.rows, g.cols,
            rows_per_cell == 1 && cols_per_cell == 1 ? "=" : "~", rows_per_cell,
            rows_per_cell == 1 ? "" : "s", cols_per_cell, cols_per_cell == 1 ? "" : "s");
    if (split_m || split_n)
        fprintf(out, "thread shares are marked by %s\n", split_m ? "'-' rows" : "'|' columns");
    print_grid_header(out, pic, &g, split_n);
    for (int r = 0; r < g.rows; r++) {
        if (split_m && r > 0 && cell_thread(pic, &g, r, 0) != cell_thread(pic, &g, r - 1, 0)) {
            fprintf(out, "  %8s ", "");
            for (int c = 0; c < g.cols; c++)
                fputc('-', out);
            fputc('\n', out);
        }
        print_grid_row(out, pic, &g, r, split_n);
    }
    const plan_region *example[MAX_KINDS];
    int64_t tiles[MAX_KINDS];
    int nkinds = collect_kinds(pic, example, tiles);
    fprintf(out, "legend  ");
    for (int k = 0; k < nkinds; k++) {
        char label[48];
        explain_kind_label(example[k], pic->plan->vec, label, sizeof label);
        fprintf(out, "%s%c %s: %lld tile%s", k ? ", " : "", plan_kind_letter(k), label,
                (long long)tiles[k], tiles[k] == 1 ? "" : "s");
    }
    fputc('\n', out);
}

/* ---- the SVG drawing ---- */

/* Colours that stay apart from each other and from the white tile edges. */
static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
enum { NCOLOURS = sizeof palette / sizeof palette[0] };

/* Where the drawing lies on the page, and how matrix rows and columns map
 * onto it. Each axis has its own scale, so that M = 100 against N = 3072
 * is still legible; the title says when the axes are not to scale. */
typedef struct svg_frame {
    double left, top, width, height;
    double per_row, per_col;
} svg_frame;

static const double SVG_WIDTH = 720, SVG_MIN_HEIGHT = 160, SVG_MAX_HEIGHT = 720;
/* Tile edges are drawn when at least this many pixels apart. */
static const double MIN_EDGE_GAP = 4;

static svg_frame make_frame(int64_t M, int64_t N)
{
    svg_frame f = {.left = 110, .top = 70, .width = SVG_WIDTH};
    double natural = SVG_WIDTH * (double)M / (double)N;
    f.height = natural < SVG_MIN_HEIGHT ? SVG_MIN_HEIGHT
               : natural > SVG_MAX_HEIGHT ? SVG_MAX_HEIGHT : natural;
    f.per_row = f.height / (double)M;
    f.per_col = f.width / (double)N;
    return f;
}

static void svg_region(FILE *out, const svg_frame *f, const plan_region *r)
{
    double x = f->left + r->col0 * f->per_col, y = f->top + r->row0 * f->per_row;
    double w = r->cols * f->per_col, h = r->rows * f->per_row;
    fprintf(out, "<rect x='%.2f' y='%.2f' width='%.2f' height='%.2f' fill='%s'/>\n", x, y, w, h,
            palette[r->kind % NCOLOURS]);
    /* Edges between the tiles inside the region. */
    double row_gap = r->mr * f->per_row, col_gap = r->width * f->per_col;
    if (row_gap >= MIN_EDGE_GAP)
        for (int64_t row = r->row0 + r->mr; row < r->row0 + r->rows; row += r->mr)
            fprintf(out, "<line x1='%.2f' y1='%.2f' x2='%.2f' y2='%.2f' stroke='#ffffff' stroke-opacity='0.55' stroke-width='0.6'/>\n", x,
                    f->top + row * f->per_row, x + w, f->top + row * f->per_row);
    if (col_gap >= MIN_EDGE_GAP && !r->masked)
        for (int64_t col = r->col0 + r->width; col < r->col0 + r->cols; col += r->width)
            fprintf(out, "<line x1='%.2f' y1='%.2f' x2='%.2f' y2='%.2f' stroke='#ffffff' stroke-opacity='0.55' stroke-width='0.6'/>\n",
                    f->left + col * f->per_col, y, f->left + col * f->per_col, y + h);
    fprintf(out, "<rect x='%.2f' y='%.2f' width='%.2f' height='%.2f' fill='none' stroke='#ffffff' stroke-width='1.5'/>\n", x, y,
            w, h);
}

/* A dashed line where each thread's share begins, labelled outside. */
static void svg_threads(FILE *out, const svg_frame *f, const explain_picture *pic)
{
    const gemm_plan *p = pic->plan;
    for (int t = 0; t < p->threads; t++) {
        /* The share's first row (M split) or column (N split). */
        int64_t start = -1;
        for (int64_t i = 0; i < pic->nregions; i++) {
            const plan_region *r = &pic->regions[i];
            int64_t at = p->split == 'M' ? r->row0 : r->col0;
            if (r->thread == t && (start < 0 || at < start))
                start = at;
        }
        if (start < 0)
            continue;
        if (p->split == 'M') {
            double y = f->top + start * f->per_row;
            if (t > 0)
                fprintf(out, "<line x1='%.2f' y1='%.2f' x2='%.2f' y2='%.2f' stroke='#111111' stroke-width='2.5' stroke-dasharray='8 4'/>\n",
                        f->left - 6, y, f->left + f->width + 6, y);
            fprintf(out, "<text x='%.2f' y='%.2f' font-size='11'>thread %d</text>\n",
                    f->left + f->width + 10, y + 12, t);
        } else {
            double x = f->left + start * f->per_col;
            if (t > 0)
                fprintf(out, "<line x1='%.2f' y1='%.2f' x2='%.2f' y2='%.2f' stroke='#111111' stroke-width='2.5' stroke-dasharray='8 4'/>\n",
                        x, f->top - 6, x, f->top + f->height + 6);
            fprintf(out, "<text x='%.2f' y='%.2f' font-size='11'>t%d</text>\n", x + 3,
                    f->top + f->height + 20, t);
        }
    }
}

/* Axis titles, 0 and the length at each end, and the row where each band
 * of tiles starts wherever there is room for its label. */
static void svg_axes(FILE *out, const svg_frame *f, const explain_picture *pic)
{
    fprintf(out, "<text x='%.2f' y='%.2f' font-size='14' font-weight='bold'>N = %lld columns &#8594;</text>\n",
            f->left, f->top - 24, (long long)pic->N);
    fprintf(out, "<text x='%.2f' y='%.2f' font-size='11' text-anchor='end'>%lld</text>\n",
            f->left + f->width, f->top - 6, (long long)pic->N);
    fprintf(out, "<text x='%.2f' y='%.2f' font-size='11'>0</text>\n", f->left, f->top - 6);
    /* Unrotated, in two lines: not every SVG renderer rotates text. */
    double middle = f->top + f->height / 2;
    fprintf(out, "<text x='8' y='%.2f' font-size='14' font-weight='bold'>M = %lld</text>\n",
            middle - 4, (long long)pic->M);
    fprintf(out, "<text x='8' y='%.2f' font-size='14' font-weight='bold'>rows &#8595;</text>\n",
            middle + 14);
    double last_y = -1e9;
    for (int64_t i = 0; i < pic->nregions; i++) {
        const plan_region *r = &pic->regions[i];
        double y = f->top + r->row0 * f->per_row;
        if (r->col0 != 0 || y - last_y < 12)
            continue;
        fprintf(out, "<text x='%.2f' y='%.2f' font-size='11' text-anchor='end'>%lld</text>\n",
                f->left - 6, y + 10, (long long)r->row0);
        last_y = y;
    }
    fprintf(out, "<text x='%.2f' y='%.2f' font-size='11' text-anchor='end'>%lld</text>\n",
            f->left - 6, f->top + f->height, (long long)pic->M);
}

static double svg_legend(FILE *out, const svg_frame *f, const explain_picture *pic)
{
    const plan_region *example[MAX_KINDS];
    int64_t tiles[MAX_KINDS];
    int nkinds = collect_kinds(pic, example, tiles);
    double y = f->top + f->height + 40;
    for (int k = 0; k < nkinds; k++, y += 20) {
        char label[48];
        explain_kind_label(example[k], pic->plan->vec, label, sizeof label);
        fprintf(out, "<rect x='%.2f' y='%.2f' width='14' height='14' fill='%s'/>\n", f->left,
                y - 11, palette[k % NCOLOURS]);
        fprintf(out, "<text x='%.2f' y='%.2f'>%c  %s, %lld tile%s</text>\n", f->left + 22, y,
                plan_kind_letter(k), label, (long long)tiles[k], tiles[k] == 1 ? "" : "s");
    }
    return y;
}

int explain_write_svg(const char *path, const explain_picture *pic)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    svg_frame f = make_frame(pic->M, pic->N);
    const plan_region *example[MAX_KINDS];
    int64_t tiles[MAX_KINDS];
    int nkinds = collect_kinds(pic, example, tiles);
    double page_w = f.left + f.width + 90, page_h = f.top + f.height + 60 + 20.0 * nkinds;
    fprintf(out, "<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' "
            "viewBox='0 0 %.0f %.0f' font-family='sans-serif' font-size='13'>\n",
            page_w, page_h, page_w, page_h);
    fprintf(out, "<rect width='100%%' height='100%%' fill='#ffffff'/>\n");
    const gemm_plan *p = pic->plan;
    bool to_scale = f.height == SVG_WIDTH * (double)pic->M / (double)pic->N;
    fprintf(out, "<text x='%.2f' y='22' font-size='14' font-weight='bold'>%lld x %lld x %lld: %s path, %d thread%s"
            "%s%s</text>\n", f.left, (long long)pic->M, (long long)pic->N, (long long)pic->K,
            p->dot ? "dot-product" : "packed", p->threads, p->threads == 1 ? "" : "s",
            p->threads == 1  ? ""
            : p->split == 'M' ? ", split along M"
            : p->split == 'K' ? ", split along K (every thread the whole grid)"
                              : ", split along N",
            to_scale ? "" : " (axes not to scale)");
    for (int64_t i = 0; i < pic->nregions; i++)
        svg_region(out, &f, &pic->regions[i]);
    if (p->threads > 1 && p->split != 'K')
        svg_threads(out, &f, pic);
    svg_axes(out, &f, pic);
    svg_legend(out, &f, pic);
    fprintf(out, "</svg>\n");
    return fclose(out) == 0 ? 0 : -1;
}
