/*
 * pack.c - copies blocks of A and B into the contiguous micro-panel layouts
 * the ukernels stream through (see ukernel.h). Plain C: the compiler
 * vectorises the contiguous cases.
 */
#include <string.h>

#include "kernels/ukernel.h"

void ukernel_pack_a(int mr, int64_t k, const float *src, int64_t rs, int64_t cs, float *dst)
{
    if (rs == 1) { /* op(A) columns are contiguous: each k step copies mr floats */
        for (int64_t p = 0; p < k; p++)
            memcpy(dst + p * mr, src + p * cs, (size_t)mr * sizeof(float));
        return;
    }
    for (int64_t p = 0; p < k; p++)
        for (int i = 0; i < mr; i++)
            dst[p * mr + i] = src[i * rs + p * cs];
}

void ukernel_pack_b(int nr, int n, int64_t k, const float *src, int64_t rs, int64_t cs, float *dst)
{
    if (cs == 1) { /* rows of op(B) are contiguous: copy them, zero the rest */
        for (int64_t p = 0; p < k; p++) {
            memcpy(dst + p * nr, src + p * rs, (size_t)n * sizeof(float));
            for (int j = n; j < nr; j++)
                dst[p * nr + j] = 0.0f;
        }
        return;
    }
    /* Columns of op(B) are contiguous (B transposed): read each column in
     * order and scatter it down the panel. A column is only k floats,
     * too short for hardware prefetchers to get going, and the next one
     * is a leading dimension away: ask for a later column's lines while
     * copying this one, so the misses overlap instead of queueing. */
    enum { COLUMNS_AHEAD = 4, FLOATS_PER_LINE = 16 };
    for (int j = 0; j < nr; j++) {
        const float *col = src + j * cs;
        if (j < n) {
            if (j + COLUMNS_AHEAD < n)
                for (int64_t p = 0; p < k; p += FLOATS_PER_LINE)
                    __builtin_prefetch(col + COLUMNS_AHEAD * cs + p * rs);
            for (int64_t p = 0; p < k; p++)
                dst[p * nr + j] = col[p * rs];
        } else {
            for (int64_t p = 0; p < k; p++)
                dst[p * nr + j] = 0.0f;
        }
    }
}
