/*
 * prefetch_next.h - the next matrix of a batch, asked for while this one
 * runs (prefetch_next.c says why). Internal to src/ops/.
 */
#ifndef TESSEL_PREFETCH_NEXT_H
#define TESSEL_PREFETCH_NEXT_H

#include <stdbool.h>
#include <stdint.h>

#include "ops/ops.h"

/* One operand as rows of contiguous bytes: `rows` rows of `row_bytes`,
 * `stride` bytes apart. */
typedef struct {
    const char *base;
    int64_t rows, row_bytes, stride;
} prefetch_region;

/* The regions asked for, in order: A, op(B), C. */
enum { PREFETCH_NEXT_PARTS = 3 };

/* Where the asking has got to: region `part`, its row `row`, `line`
 * lines into it; `per_step` lines asked for per step. */
typedef struct prefetch_next {
    prefetch_region operands[PREFETCH_NEXT_PARTS];
    int part;
    int64_t row, line;
    int64_t per_step;
} prefetch_next;

/* Whether prefetch_next_start asks for `next`'s C as well as its operands
 * (where K is short). */
bool prefetch_next_asks_for_c(const gemm_call *next);

/* Bytes of `next` that prefetch_next_start would ask for. */
int64_t prefetch_next_bytes(const gemm_call *next);

/* Sets `n` up to ask for `next`'s A and op(B) (not a pre-packed B), and
 * its C where K is short (prefetch_next.c says why), in
 * about `steps` / PREFETCH_NEXT_SPEED calls of prefetch_next_step. */
void prefetch_next_start(prefetch_next *n, const gemm_call *next, int64_t steps);

/* Asks for the next few lines; nothing once all have been asked for. */
void prefetch_next_step(prefetch_next *n);

#endif
