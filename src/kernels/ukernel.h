/*
 * ukernel.h - the micro-kernel family and its registry.
 *
 * A ukernel computes one mr x nr tile of C = alpha * A B + beta * C over k,
 * holding the tile in vector registers: nr = nv vectors wide, mr rows
 * tall. All members come from one C template (ukernel_template.h) compiled
 * once per ISA class with that class's target flags; the registry maps a
 * descriptor (ISA, mr, nv, A layout) to the compiled function.
 */
#ifndef TESSEL_UKERNEL_H
#define TESSEL_UKERNEL_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/hw.h"
#include "tessel.h"

enum { UK_MAX_MR = 16, UK_MAX_NV = 4, UK_DOT_MAX_MR = 4, UK_DOT_MAX_NJ = 8 };

/* Everything a ukernel call needs. Element (i, p) of the A micro-panel is
 * a[i * a_rs + p * a_cs] (packed panels: a_rs 1, a_cs mr); row p of the B
 * micro-panel is the nr floats at b + p * b_rs, readable in full even past
 * n (packed panels are zero-filled there). B read in place has rows far
 * apart, which hardware prefetchers do not follow: with each row p the
 * ukernel asks for the line b_prefetch floats past it (a multiple of b_rs:
 * a row that many steps ahead; or less: further along the same row), in
 * the first b_prefetch_steps k steps only (the rest would ask past the
 * end of what B is read from). With
 * b_copy set, the ukernel also stores each row of B it reads at
 * b_copy + p * nr: a full-width B panel read in place comes out packed
 * for the tiles after it. Rows read in place from L3 or memory, kilobytes
 * apart, come too late for the near prefetch: each k step also asks for
 * the row b_l2_ahead steps on into L2 (0: none, else under k), and the
 * last b_l2_ahead steps for the first rows of the next panel to be read,
 * b_l2_next (its first row, b_rs apart; NULL: none). The dot-product
 * members (below) read B^T's rows b_rs apart and, with b_prefetch set,
 * ask for the line b_prefetch floats past each vector they load: the rows
 * of the tiles ahead. The tile's top-left
 * element of C is c. Only
 * m x n of the tile is written; beta == 0 never reads C. */
typedef struct ukernel_args {
    int64_t k;
    const float *a;
    int64_t a_rs, a_cs;
    const float *b;
    int64_t b_rs;
    int64_t b_prefetch; /* floats past each row of B read to prefetch, or 0 */
    int64_t b_prefetch_steps; /* only the first this many k steps prefetch */
    float *b_copy;   /* where to store the B rows read, packed; or NULL */
    int64_t b_l2_ahead;        /* rows ahead asked for into L2, or 0 */
    const float *b_l2_next;    /* the next panel read in place, or NULL */
    float *c;
    int64_t ldc;
    float alpha, beta;
    int m, n;
} ukernel_args;

typedef void (*ukernel_fn)(const ukernel_args *args);

/* Sets every field of *a to zero, one store each. An initializer of the
 * struct (`= {0}`, or a designated one) compiled, where GCC chose, to
 * `rep stos`, whose start-up was a third of the time of the dot-product
 * share around a 1x1x64 tile and half of a row tile's on 192 x
 * (17x64x17). */
static inline void ukernel_args_clear(ukernel_args *a)
{
    a->k = 0;
    a->a = NULL;
    a->a_rs = 0;
    a->a_cs = 0;
    a->b = NULL;
    a->b_rs = 0;
    a->b_prefetch = 0;
    a->b_prefetch_steps = 0;
    a->b_copy = NULL;
    a->b_l2_ahead = 0;
    a->b_l2_next = NULL;
    a->c = NULL;
    a->ldc = 0;
    a->alpha = 0.0f;
    a->beta = 0.0f;
    a->m = 0;
    a->n = 0;
}

/* The cache line: 64 bytes on every x86-64 and on the Arm cores tessel
 * targets. Only prefetching depends on it. */
enum { UK_LINE_BYTES = 64 };

/* Whether rows row_floats apart from b start off a cache line (a malloc'd
 * matrix starts 16 bytes past one): each row then ends in one line more
 * than its vectors start in, which the ukernels' prefetches must cover. */
static inline bool ukernel_rows_straddle_lines(const float *b, int64_t row_floats)
{
    return (uintptr_t)b % UK_LINE_BYTES != 0 ||
           row_floats * (int64_t)sizeof(float) % UK_LINE_BYTES != 0;
}
/* A field added to ukernel_args must be added to ukernel_args_clear too. */
_Static_assert(sizeof(ukernel_args) == 8 * sizeof(int64_t) + 5 * sizeof(void *) +
                                           2 * sizeof(float) + 2 * sizeof(int),
               "ukernel_args_clear sets every field of ukernel_args");

typedef struct ukernel_desc {
    hw_isa isa;
    int mr;        /* rows: 1..UK_MAX_MR */
    int nv;        /* vectors per row: 1..UK_MAX_NV */
    bool a_packed; /* A micro-panel packed (a_rs 1, a_cs mr, known at compile time) */
} ukernel_desc;

/* One compiled member of the family, as the per-ISA tables list them. */
typedef struct ukernel_entry {
    int mr, nv;
    ukernel_fn packed;  /* A packed */
    ukernel_fn strided; /* A read in place with a_rs, a_cs */
} ukernel_entry;

/* The compiled function for d, or NULL if that member was not built. */
ukernel_fn ukernel_lookup(const ukernel_desc *d);

/* The dot-product members (ukernel_template.h): C[mr x nj] from mr rows of
 * A (a, a_rs apart) and nj rows of B^T (b, b_rs apart), both contiguous
 * along k; m == mr and n == nj. Their table entries use `packed` for the
 * function and nv for nj. NULL if (mr, nj) was not built for the ISA. */
ukernel_fn ukernel_dot_lookup(hw_isa isa, int mr, int nj);

/* The row forms (ukernel_template.h): C[i, 0..n) = alpha * A[i, 0..k) B +
 * beta * C for m rows of A (rows a_rs apart, k floats a_cs apart), C's
 * rows ldc apart; the prefetch fields are not read.
 *   UK_ROW_CACHED: 1 to UK_ROW_MAX_M rows, B's rows b_rs apart, any n.
 *   UK_ROW_STREAMED: the same for a B that streams from memory, 1 to
 *     UK_ROW_STREAM_MAX_M rows.
 *   UK_ROW_PANELS: 1 to UK_ROW_MAX_M rows, B pre-packed in panels b_rs
 *     floats wide (a whole number of vectors) and b_rs * k floats each;
 *     n a whole number of vectors. */
enum { UK_ROW_MAX_M = 6, UK_ROW_STREAM_MAX_M = 6 };
typedef enum { UK_ROW_CACHED, UK_ROW_STREAMED, UK_ROW_PANELS, UK_ROW_FORM_COUNT } ukernel_row_form;
ukernel_fn ukernel_row_lookup(hw_isa isa, ukernel_row_form form);
/* The vectors of C the cached and panel forms hold in registers: m rows
 * take ukernel_row_vecs / m each (half the register file in all). */
int ukernel_row_vecs(hw_isa isa);

/* Copies `rows` rows of a matrix, ld floats apart and contiguous along k,
 * into a panel w floats wide, transposed: dst[p * w + i] = src[i * ld + p]
 * for i < rows, zero for rows <= i < w (rows <= w). dst needs room for
 * UK_PACK_SLACK floats past w * k: whole-vector stores may run into it. */
enum { UK_PACK_SLACK = 16 };
typedef void (*ukernel_transpose_fn)(int w, int rows, int64_t k, const float *src, int64_t ld,
                                     float *dst);
/* Copies k rows of n floats, ld floats apart, into a panel w floats wide
 * (n <= w): dst[p * w + j] = src[p * ld + j] for j < n, zero for
 * n <= j < w. Reads nothing past the block's last element. */
typedef void (*ukernel_copy_fn)(int w, int n, int64_t k, const float *src, int64_t ld,
                                float *dst);
/* Each ISA class builds both (ukernel_template.h). */
typedef struct ukernel_packers {
    ukernel_transpose_fn transpose;
    ukernel_copy_fn copy_rows;
} ukernel_packers;
const ukernel_packers *ukernel_packers_lookup(hw_isa isa);

/* Floats per vector of an ISA class. */
int ukernel_vec_floats(hw_isa isa);

/* Packing into the layouts the ukernels read, with the ISA's transpose
 * where the source runs the other way. One of rs, cs is 1, as the API's
 * transposes folded into strides always make it.
 * pack_a: an mr x k block whose element (i, p) is src[i * rs + p * cs]
 *   becomes dst[p * mr + i]; dst has UK_PACK_SLACK floats to spare.
 * pack_b: a k x n block whose element (p, j) is src[p * rs + j * cs]
 *   becomes dst[p * nr + j], with zeros for n <= j < nr. */
void ukernel_pack_a(hw_isa isa, int mr, int64_t k, const float *src, int64_t rs, int64_t cs,
                    float *dst);
void ukernel_pack_b(hw_isa isa, int nr, int n, int64_t k, const float *src, int64_t rs,
                    int64_t cs, float *dst);

/* Adds bias[0..n) to each of m rows of C and applies the activation,
 * vectorised for the ISA class (epilogue_template.h). */
typedef void (*ukernel_epilogue_fn)(float *c, int64_t ldc, int m, int n, const float *bias,
                                    tessel_activation activation);
void ukernel_epilogue(hw_isa isa, float *c, int64_t ldc, int m, int n, const float *bias,
                      tessel_activation activation);

#endif /* TESSEL_UKERNEL_H */
