/*
 * explain.h - the parts of `tessel explain` (cmd_explain.c): the report in
 * words (explain_report.c) and the pictures of a plan's regions, a
 * character grid for the terminal and an SVG drawing, labelled by ukernel
 * with the thread split marked (explain_draw.c). Regions come from
 * src/plan/candidates.h.
 */
#ifndef TESSEL_EXPLAIN_H
#define TESSEL_EXPLAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plan/candidates.h"

/* ---- the report (explain_report.c), each section to stdout ---- */

void explain_print_hardware(const plan_model *m);
void explain_print_candidates(const plan_model *m, const gemm_plan *p);
void explain_print_blocking(const plan_model *m, const gemm_plan *p, const gemm_shape *s);
void explain_print_plan(const plan_model *m, const gemm_plan *p, const gemm_shape *s,
                        const plan_region *regions, int64_t nregions);

/* ---- the pictures (explain_draw.c) ---- */

typedef struct explain_picture {
    const gemm_plan *plan;
    const plan_region *regions;
    int64_t nregions;
    int64_t M, N, K;
} explain_picture;

/* "14x32", "14x16 (masked 9)", "dot 4x5": the ukernel of a region kind. */
void explain_kind_label(const plan_region *r, int vec, char *buf, size_t len);

/* The character grid with row offsets on the left, thread boundaries
 * ('-' rows for an M split, '|' columns for an N split) and a legend. */
void explain_print_grid(FILE *out, const explain_picture *pic);

/* Writes the SVG drawing to `path`; 0, or -1 (errno set) if it cannot. */
int explain_write_svg(const char *path, const explain_picture *pic);

#endif /* TESSEL_EXPLAIN_H */
