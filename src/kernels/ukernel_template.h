/*
 * ukernel_template.h - the one register-blocked ukernel, written once.
 *
 * Each ISA file defines UK_VEC_FLOATS (floats per vector), UK_ROW_VECS and
 * UK_ROW_RESTS (the row form's widths, ukernel_sizes.h), includes this
 * file, and lists the (mr, nv) members it builds with UK_MEMBER. The body
 * is a plain C function over GCC/Clang vector extensions taking mr, nv and
 * the A layout as arguments; every member calls it with constants, so the
 * compiler unrolls the loops and keeps the mr x nv accumulators in
 * registers. The file's target flags (-mavx512f, -mavx2 -mfma, or none)
 * decide which instructions that makes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kernels/ukernel.h"

typedef float uk_vec __attribute__((vector_size(UK_VEC_FLOATS * sizeof(float))));
typedef int32_t uk_ivec __attribute__((vector_size(sizeof(uk_vec)))); /* lane masks */

/* Lane lists for __builtin_shufflevector, which takes them as constant
 * expressions: F(s, lane) for every lane of a vector. */
#if UK_VEC_FLOATS == 16
#define UK_LANES(F, s)                                                                   \
    F(s, 0), F(s, 1), F(s, 2), F(s, 3), F(s, 4), F(s, 5), F(s, 6), F(s, 7), F(s, 8),     \
        F(s, 9), F(s, 10), F(s, 11), F(s, 12), F(s, 13), F(s, 14), F(s, 15)
#elif UK_VEC_FLOATS == 8
#define UK_LANES(F, s) F(s, 0), F(s, 1), F(s, 2), F(s, 3), F(s, 4), F(s, 5), F(s, 6), F(s, 7)
#elif UK_VEC_FLOATS == 4
#define UK_LANES(F, s) F(s, 0), F(s, 1), F(s, 2), F(s, 3)
#endif
#define UK_LANE_INDEX(s, l) (l)

/* Half a vector: the last vector of an edge tile with at most half its
 * lanes in use. Only 16-float vectors take it (see uk_half_edge). */
typedef float uk_half __attribute__((vector_size(UK_VEC_FLOATS / 2 * sizeof(float))));
enum { UK_HALF_LAST = UK_VEC_FLOATS == 16 };

/* memcpy is how C says "unaligned vector load/store"; it compiles to one
 * instruction. */
static inline __attribute__((always_inline)) uk_vec uk_load(const float *p)
{
    uk_vec v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) void uk_store(float *p, uk_vec v)
{
    memcpy(p, &v, sizeof v);
}

static inline __attribute__((always_inline)) uk_half uk_load_half(const float *p)
{
    uk_half v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Pins a loaded vector to a register. Left alone, GCC folds each use of a
 * B vector into its FMA as a memory operand, loading every B vector mr
 * times a k step instead of once; with one FMA pipe and few rows the loads
 * then bound the loop (3x64 from L2: 80 GF/s of 118). The empty asm says
 * the value is in a register here and may have changed, so it is neither
 * reloaded nor folded. */
#if defined(__x86_64__) || defined(__i386__)
#define UK_IN_REGISTER(v) __asm__("" : "+v"(v))
#elif defined(__aarch64__)
#define UK_IN_REGISTER(v) __asm__("" : "+w"(v))
#else
#define UK_IN_REGISTER(v) ((void)0)
#endif

/* Edge tiles (m < mr or n < nr) take a shared path, keeping each member's
 * code small: the accumulators go to a tile on the stack and only the
 * valid part is written. It still writes whole vectors: a row n >= V
 * wide ends with a vector that overlaps the one before it, computed
 * before that one is stored (so beta reads C as it was), and storing the
 * same values twice. Only rows narrower than a vector go element by
 * element. (Element by element throughout, the masked last panel of
 * N = 127 cost 15% of 127^3. AVX-512 masked stores straight from the
 * registers took 0.98-0.995 of an edge tile's time, and the full tiles
 * 1.01; attention's Q K^T at 17-100 tokens 0.97-0.99 of its time: not
 * worth a second path per ISA.) */
static __attribute__((noinline)) void
uk_update_edge(const float *tile, int tile_ld, const ukernel_args *args)
{
    const int n = args->n;
    const float alpha = args->alpha, beta = args->beta;
    for (int i = 0; i < args->m; i++) {
        float *c = args->c + i * args->ldc;
        const float *t = tile + i * tile_ld;
        if (n < UK_VEC_FLOATS) {
            for (int j = 0; j < n; j++)
                c[j] = beta != 0.0f ? alpha * t[j] + beta * c[j] : alpha * t[j];
            continue;
        }
        const int last = n - UK_VEC_FLOATS;
        uk_vec tail = alpha * uk_load(t + last);
        if (beta != 0.0f)
            tail += beta * uk_load(c + last);
        for (int j = 0; j < last; j += UK_VEC_FLOATS) {
            uk_vec out = alpha * uk_load(t + j);
            if (beta != 0.0f)
                out += beta * uk_load(c + j);
            uk_store(c + j, out);
        }
        uk_store(c + last, tail);
    }
}

/* Byte offsets of rows 1, 3, 5 and 7 of A read in place: with x86's
 * index scales of 1, 2, 4 and 8 they reach rows 0..7 from one base and
 * rows 8..15 from a second, in six registers. */
typedef struct {
    int64_t r1, r3, r5, r7;
} uk_row_bytes;

/* A(i, p) of A read in place, from a (row 0's float p). Written as base
 * plus offset times a constant so that the compiler keeps the two bases
 * and four offsets, where a[i * a_rs] took one register per row and
 * spilled the rest: 14-row tiles read A from the stack five times a k
 * step, 4-7% slower than from a packed A (docs/DESIGN.md, where A is
 * packed).
 * Tiles of 8 rows or fewer keep a[i * a_rs]: they fit the registers. */
static inline __attribute__((always_inline)) float uk_strided_a(const float *a,
                                                                 const uk_row_bytes *rb, int i)
{
    const char *base = (const char *)a + (i >= 8 ? 8 * rb->r1 : 0);
    int64_t off;
    switch (i % 8) {
    case 0: off = 0; break;
    case 1: off = rb->r1; break;
    case 2: off = 2 * rb->r1; break;
    case 3: off = rb->r3; break;
    case 4: off = 4 * rb->r1; break;
    case 5: off = rb->r5; break;
    case 6: off = 2 * rb->r3; break;
    default: off = rb->r7; break;
    }
    float x;
    memcpy(&x, base + off, sizeof x);
    return x;
}

/* The k loop: acc += A micro-panel x B micro-panel. With copy_b the B
 * rows, read in place, are also stored as a packed panel at b_copy (nr
 * floats a row), so the first row tile packs B for the ones after it
 * while its loads are in flight anyway. With far, B's rows are also asked
 * for b_l2_ahead steps on into L2. */
static inline __attribute__((always_inline)) void
uk_k_loop(const int mr, const int nv, const int a_packed, const int copy_b, const int far,
          const int half, const ukernel_args *args, uk_vec acc[UK_MAX_MR][UK_MAX_NV])
{
    /* With half, the last vector is a half one (see uk_half_edge), summed
     * apart and widened into acc[i][nv - 1] at the end. */
    const int whole = half ? nv - 1 : nv;
    uk_half acc_half[UK_MAX_MR];
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++)
        acc_half[i] = (uk_half){0};
    const float *a = args->a;
    const float *b = args->b;
    float *b_copy = args->b_copy;
    const int64_t a_rs = a_packed ? 1 : args->a_rs;
    const int64_t a_step = a_packed ? mr : args->a_cs;
    const int64_t r1 = a_rs * (int64_t)sizeof(float);
    const uk_row_bytes row_bytes = {r1, 3 * r1, 5 * r1, 7 * r1};
    const int64_t b_rs = args->b_rs;

    const int64_t b_ahead = args->b_prefetch;
    const int64_t prefetch_steps = args->b_prefetch_steps;
    /* Rows of B that do not start on a cache line (a malloc'd matrix is
     * 16-byte aligned) end in one line more than their vectors start in:
     * it is asked for too, or every row waits on it. (64x768x3072, B in
     * place 16 bytes off, 1 thread: 73 -> 103 GF/s, 106 aligned.) */
    const bool b_straddles = ukernel_rows_straddle_lines(b, b_rs);
    /* Read once: the copy's stores might alias *args as far as the
     * compiler knows, and it reloaded k from memory every step. */
    const int64_t k = args->k;
    /* Rows of B kilobytes apart, read from L3 or memory (by the copy, or
     * in place where they collide in the L1): a step's near prefetch
     * arrives too late, so each step also asks for a row further on into
     * L2, and the last steps for the next panel's first rows, which no
     * step of this call would. */
    const int64_t l2_ahead = far ? args->b_l2_ahead : 0;
    const float *const l2_next = args->b_l2_next;
    for (int64_t p = 0; p < k; p++) {
        if (b_ahead && p < prefetch_steps) {
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                __builtin_prefetch(b + b_ahead + v * UK_VEC_FLOATS);
            if (b_straddles)
                __builtin_prefetch(b + b_ahead + nv * UK_VEC_FLOATS - 1);
        }
        if (l2_ahead) {
            const float *far = p + l2_ahead < k ? b + l2_ahead * b_rs
                               : l2_next        ? l2_next + (p + l2_ahead - k) * b_rs
                                                : NULL;
            if (far) {
#pragma GCC unroll 4
                for (int v = 0; v < nv; v++)
                    __builtin_prefetch(far + v * UK_VEC_FLOATS, 0, 2);
                if (b_straddles)
                    __builtin_prefetch(far + nv * UK_VEC_FLOATS - 1, 0, 2);
            }
        }
        uk_vec bv[UK_MAX_NV];
#pragma GCC unroll 4
        for (int v = 0; v < whole; v++) {
            bv[v] = uk_load(b + v * UK_VEC_FLOATS);
            UK_IN_REGISTER(bv[v]);
        }
        uk_half b_half = {0};
        if (half) {
            b_half = uk_load_half(b + whole * UK_VEC_FLOATS);
            UK_IN_REGISTER(b_half);
        }
        if (copy_b) {
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                uk_store(b_copy + v * UK_VEC_FLOATS, bv[v]);
            b_copy += nv * UK_VEC_FLOATS;
        }
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++) {
            float ai = a_packed ? a[i] : mr > 8 ? uk_strided_a(a, &row_bytes, i) : a[i * a_rs];
#pragma GCC unroll 4
            for (int v = 0; v < whole; v++)
                acc[i][v] += ai * bv[v];
            if (half)
                acc_half[i] += ai * b_half;
        }
        a += a_step;
        b += b_rs;
        /* Hidden from the optimiser, the base cannot be split into a
         * pointer per row again (see uk_strided_a). */
        if (!a_packed && mr > 8)
            __asm__("" : "+r"(a));
    }
    /* Widened in registers, the upper lanes zero (through memory, each
     * was a store the wider load could not forward from). */
    if (half)
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++)
            acc[i][nv - 1] = __builtin_shufflevector(acc_half[i], (uk_half){0},
                                                     UK_LANES(UK_LANE_INDEX, 0));
}

static inline __attribute__((always_inline)) void
ukernel_body(const int mr, const int nv, const int a_packed, const int half,
             const ukernel_args *args)
{
    uk_vec acc[UK_MAX_MR][UK_MAX_NV];
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[i][v] = (uk_vec){0};

    /* C is touched once per k block, long after it left the caches: ask
     * for its lines now so they arrive while the k loop runs. */
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            __builtin_prefetch(args->c + i * args->ldc + v * UK_VEC_FLOATS, 1);

    /* Copies of the k loop, so that the one that also packs B, and the one
     * that also asks for B far ahead, cost the plain one nothing (its
     * loads and FMAs took 4-5% longer beside a test for the far rows). */
    if (half)
        uk_k_loop(mr, nv, a_packed, 0, 0, 1, args, acc);
    else if (args->b_copy)
        uk_k_loop(mr, nv, a_packed, 1, 1, 0, args, acc);
    else if (args->b_l2_ahead)
        uk_k_loop(mr, nv, a_packed, 0, 1, 0, args, acc);
    else
        uk_k_loop(mr, nv, a_packed, 0, 0, 0, args, acc);

    if (args->m < mr || args->n < nv * UK_VEC_FLOATS) {
        float tile[UK_MAX_MR * UK_MAX_NV * UK_VEC_FLOATS];
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                uk_store(tile + (i * nv + v) * UK_VEC_FLOATS, acc[i][v]);
        uk_update_edge(tile, nv * UK_VEC_FLOATS, args);
        return;
    }
    const float alpha = args->alpha, beta = args->beta;
    /* C's address in locals: each store to C might alias *args as far as
     * the compiler knows, and it reloaded both after every row. */
    float *const c = args->c;
    const int64_t ldc = args->ldc;
    /* alpha is 1 in nearly every call; scaling by it took mr * nv
     * multiplies on the FMA ports at the end of every tile. */
    if (alpha != 1.0f)
#pragma GCC unroll 16
        for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++)
                acc[i][v] *= alpha;
#pragma GCC unroll 16
    for (int i = 0; i < mr; i++) {
        float *row = c + i * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            uk_vec out = acc[i][v];
            if (beta != 0.0f)
                out += beta * uk_load(row + v * UK_VEC_FLOATS);
            uk_store(row + v * UK_VEC_FLOATS, out);
        }
    }
}

/* The dot-product form, for op(B) = B^T read in place: rows of A and rows
 * of B^T are both contiguous along k, so the vectors run along k and each
 * of the mr x nj accumulators is summed across its lanes at the end. No
 * packing at all: what pays for small M, where a copy of B would cost more
 * than the product. */
/* The lane sums of v[0..n), n at most V, folded pairwise: at each level
 * two vectors whose outputs span w lanes each become one whose outputs
 * span w/2, each output's two halves added (x's outputs in the low half,
 * y's in the high). After log2 V levels lane k holds the sum of vector k:
 * about two shuffles and one add an output, where summing each vector
 * alone took log2 V of each. The folds are written on values, v only
 * read: folded in place in an array, GCC kept every dot tile's
 * accumulators on the stack, zeroed and spilled there (12 x (17x17x64)
 * B^T ran at a third of the FMA peak). */
#define UK_FOLD_LANE(w, r, half)                                                        \
    (((r) % (UK_VEC_FLOATS / 2)) / ((w) / 2) * (w) + ((r) % (UK_VEC_FLOATS / 2)) % ((w) / 2) + \
     (half) * ((w) / 2) + ((r) >= UK_VEC_FLOATS / 2 ? UK_VEC_FLOATS : 0))
#define UK_FOLD_LO(w, r) UK_FOLD_LANE(w, r, 0)
#define UK_FOLD_HI(w, r) UK_FOLD_LANE(w, r, 1)
#define UK_FOLD(x, y, w)                                                                 \
    (__builtin_shufflevector(x, y, UK_LANES(UK_FOLD_LO, w)) +                            \
     __builtin_shufflevector(x, y, UK_LANES(UK_FOLD_HI, w)))

/* v[k], or the zero vector z (uk_lane_sums' own) past the n given. */
#define UK_TAKE(v, n, k) ((n) > (k) ? (v)[k] : z)
static inline __attribute__((always_inline)) uk_vec uk_lane_sums(const uk_vec *v, int n)
{
    const uk_vec z = {0};
#if UK_VEC_FLOATS >= 16
    uk_vec y0 = UK_FOLD(UK_TAKE(v, n, 0), UK_TAKE(v, n, 1), 16);
    uk_vec y1 = UK_FOLD(UK_TAKE(v, n, 2), UK_TAKE(v, n, 3), 16);
    uk_vec y2 = UK_FOLD(UK_TAKE(v, n, 4), UK_TAKE(v, n, 5), 16);
    uk_vec y3 = UK_FOLD(UK_TAKE(v, n, 6), UK_TAKE(v, n, 7), 16);
    uk_vec y4 = UK_FOLD(UK_TAKE(v, n, 8), UK_TAKE(v, n, 9), 16);
    uk_vec y5 = UK_FOLD(UK_TAKE(v, n, 10), UK_TAKE(v, n, 11), 16);
    uk_vec y6 = UK_FOLD(UK_TAKE(v, n, 12), UK_TAKE(v, n, 13), 16);
    uk_vec y7 = UK_FOLD(UK_TAKE(v, n, 14), UK_TAKE(v, n, 15), 16);
    uk_vec x0 = UK_FOLD(y0, y1, 8), x1 = UK_FOLD(y2, y3, 8), x2 = UK_FOLD(y4, y5, 8),
           x3 = UK_FOLD(y6, y7, 8);
#elif UK_VEC_FLOATS == 8
    uk_vec x0 = UK_FOLD(UK_TAKE(v, n, 0), UK_TAKE(v, n, 1), 8);
    uk_vec x1 = UK_FOLD(UK_TAKE(v, n, 2), UK_TAKE(v, n, 3), 8);
    uk_vec x2 = UK_FOLD(UK_TAKE(v, n, 4), UK_TAKE(v, n, 5), 8);
    uk_vec x3 = UK_FOLD(UK_TAKE(v, n, 6), UK_TAKE(v, n, 7), 8);
#else
    uk_vec x0 = UK_TAKE(v, n, 0), x1 = UK_TAKE(v, n, 1), x2 = UK_TAKE(v, n, 2),
           x3 = UK_TAKE(v, n, 3);
#endif
    uk_vec u0 = UK_FOLD(x0, x1, 4), u1 = UK_FOLD(x2, x3, 4);
    return UK_FOLD(u0, u1, 2);
}
#undef UK_TAKE

/* Lanes [first, first + count) of s, to c[0..count) (plus beta times C
 * as it was), straight from the register. Stored as a vector on the
 * stack and copied out row by row, each row was loads waiting on that
 * store: dot tiles' calls took 1.03-1.10x as long (12 x (5x5x64),
 * 12 x (17x17x64), 192 x (5x5x64) B^T, 1 and 2 threads, in one process,
 * 2026-12-07-dot-store-inprocess-zen4.txt). */
static inline __attribute__((always_inline)) void uk_store_lanes(float *c, uk_vec s, int first,
                                                                 int count, float beta)
{
    if (beta != 0.0f) {
        for (int j = 0; j < count; j++)
            c[j] = s[first + j] + beta * c[j];
        return;
    }
#pragma GCC unroll 16
    for (int j = 0; j < count; j++)
        c[j] = s[first + j];
}

/* A vector of x[0..count), zero beyond: the k remainder. */
static inline __attribute__((always_inline)) uk_vec uk_load_partial(const float *x, int count)
{
    float lane[UK_VEC_FLOATS] = {0};
    memcpy(lane, x, (size_t)count * sizeof(float));
    return uk_load(lane);
}

/* A dot tile's whole vectors along k; returns the k reached. With
 * prefetch, each step also asks for the rows of B^T of the tiles ahead,
 * b_prefetch floats on (plan_dot.c, dot_prefetches_ahead). A copy of the
 * loop: beside a test of b_prefetch in it, the plain one took 1.05x the
 * time (12 x (1 x L x 64) B^T, rows on cache lines, against oneDNN in
 * separate processes alternating). */
static inline __attribute__((always_inline)) int64_t
uk_dot_k_loop(const int mr, const int nj, const int prefetch, const ukernel_args *args,
              uk_vec acc[UK_DOT_MAX_MR][UK_DOT_MAX_NJ])
{
    const float *a = args->a, *b = args->b;
    const int64_t lda = args->a_rs, ldb = args->b_rs, k = args->k;
    const int64_t ahead = prefetch ? args->b_prefetch : 0;
    uk_vec av[UK_DOT_MAX_MR], bv[UK_DOT_MAX_NJ];
    int64_t p = 0;
    for (; p + UK_VEC_FLOATS <= k; p += UK_VEC_FLOATS) {
        if (prefetch)
#pragma GCC unroll 8
            for (int j = 0; j < nj; j++)
                __builtin_prefetch(b + ahead + j * ldb + p);
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++)
            av[i] = uk_load(a + i * lda + p);
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++)
            bv[j] = uk_load(b + j * ldb + p);
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
            for (int j = 0; j < nj; j++)
                acc[i][j] += av[i] * bv[j];
    }
    return p;
}

static inline __attribute__((always_inline)) void
dotkernel_body(const int mr, const int nj, const ukernel_args *args)
{
    uk_vec acc[UK_DOT_MAX_MR][UK_DOT_MAX_NJ];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++)
            acc[i][j] = (uk_vec){0};

    const float *a = args->a, *b = args->b;
    const int64_t lda = args->a_rs, ldb = args->b_rs, k = args->k;
    uk_vec av[UK_DOT_MAX_MR], bv[UK_DOT_MAX_NJ];
    int64_t p = args->b_prefetch ? uk_dot_k_loop(mr, nj, 1, args, acc)
                                 : uk_dot_k_loop(mr, nj, 0, args, acc);
    if (p < k) {
        int rest = (int)(k - p);
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++)
            av[i] = uk_load_partial(a + i * lda + p, rest);
#pragma GCC unroll 8
        for (int j = 0; j < nj; j++)
            bv[j] = uk_load_partial(b + j * ldb + p, rest);
#pragma GCC unroll 4
        for (int i = 0; i < mr; i++)
#pragma GCC unroll 8
            for (int j = 0; j < nj; j++)
                acc[i][j] += av[i] * bv[j];
    }
    /* The lane sums of as many whole rows as fill a vector (3 rows of 5
     * on AVX-512) folded together, scaled as a vector and stored nj
     * floats a row; rows wider than a vector V sums at a time. Row by
     * row, the folds with zeros that pad each row to a power of two cost
     * 4-6% more (12 x (17x17x64), 12 x (8x64x64) B^T). */
    const int group = nj <= UK_VEC_FLOATS ? UK_VEC_FLOATS / nj : 1;
#pragma GCC unroll 4
    for (int i0 = 0; i0 < mr; i0 += group) {
        int rows = mr - i0 < group ? mr - i0 : group;
        if (nj <= UK_VEC_FLOATS) {
            uk_vec v[UK_VEC_FLOATS];
#pragma GCC unroll 16
            for (int r = 0; r < rows * nj; r++)
                v[r] = acc[i0 + r / nj][r % nj];
            uk_vec sums = args->alpha * uk_lane_sums(v, rows * nj);
#pragma GCC unroll 4
            for (int r = 0; r < rows; r++)
                uk_store_lanes(args->c + (i0 + r) * args->ldc, sums, r * nj, nj, args->beta);
        } else {
#pragma GCC unroll 8
            for (int j0 = 0; j0 < nj; j0 += UK_VEC_FLOATS) {
                int n = nj - j0 < UK_VEC_FLOATS ? nj - j0 : UK_VEC_FLOATS;
                uk_vec sums = args->alpha * uk_lane_sums(acc[i0] + j0, n);
                uk_store_lanes(args->c + i0 * args->ldc + j0, sums, 0, n, args->beta);
            }
        }
    }
}

/* ---- packing by transposing ----
 *
 * Copying rows that are contiguous along k into a panel whose rows are k
 * steps (op(B) = B^T into B panels, rows of A into an A micro-panel) is a
 * transpose. Done element by element it costs a load and a store each,
 * as much as the product itself for attention's K = 64; here blocks of
 * V x V (V floats a vector) are loaded as V vectors, transposed in
 * registers and stored as V vectors.
 *
 * The transpose swaps the off-diagonal s x s blocks for s = V/2 ... 1:
 * rows i and i + s (i / s even) become, lane by lane, x's lane where
 * (lane / s) is even else y's lane - s, and x's lane + s where (lane / s)
 * is even else y's lane. __builtin_shufflevector takes the lane lists as
 * constant expressions, listed once per vector width. (Half the work done
 * by the loads instead, each 128-bit lane a quad loaded and inserted,
 * measured the same: about 75 cycles a 16 x 16 block either way.) */
#define UK_LOW_LANE(s, l) (((l) / (s)) % 2 == 0 ? (l) : UK_VEC_FLOATS + (l) - (s))
#define UK_HIGH_LANE(s, l) (((l) / (s)) % 2 == 0 ? (l) + (s) : UK_VEC_FLOATS + (l))
/* x's high half in the low lanes, y's (zeros) above. */
#define UK_HIGH_DOWN(s, l) ((l) + UK_VEC_FLOATS / 2)

#define UK_SWAP_BLOCKS(r, s) UK_SWAP_BLOCKS_OF(r, s, UK_VEC_FLOATS)
/* The swaps of s x s blocks among the first n rows (n a multiple of 2s). */
#define UK_SWAP_BLOCKS_OF(r, s, n)                                                       \
    for (int i = 0; i < (n); i++)                                                        \
        if ((i / (s)) % 2 == 0) {                                                        \
            uk_vec x = r[i], y = r[i + (s)];                                             \
            r[i] = __builtin_shufflevector(x, y, UK_LANES(UK_LOW_LANE, s));              \
            r[i + (s)] = __builtin_shufflevector(x, y, UK_LANES(UK_HIGH_LANE, s));       \
        }

static inline __attribute__((always_inline)) void uk_transpose(uk_vec r[UK_VEC_FLOATS])
{
#if UK_VEC_FLOATS >= 16
    UK_SWAP_BLOCKS(r, 8)
#endif
#if UK_VEC_FLOATS >= 8
    UK_SWAP_BLOCKS(r, 4)
#endif
    UK_SWAP_BLOCKS(r, 2)
    UK_SWAP_BLOCKS(r, 1)
}

/* Lanes 0..n-1 set, the rest clear. */
static inline __attribute__((always_inline)) uk_ivec uk_lanes_below(int n)
{
    const uk_ivec lane = {UK_LANES(UK_LANE_INDEX, 0)};
    return lane < (uk_ivec){0} + n;
}

/* Rows of a group that uk_pack_transposed copies float by float: a
 * quarter of the group. Measured on AVX-512 (4 of 16); with AVX2 the copy
 * of 4 rows of 8 took 1.2x the transpose's time (a 20-row panel of K = 64
 * 199 -> 240 ns), and on 4-float vectors every group would have gone
 * float by float. */
enum { UK_FEW_ROWS = UK_VEC_FLOATS / 4 };

#if UK_VEC_FLOATS == 16
/* A group of 5 to 8 rows (the A micro-panel of a 5-8-row tile, the last
 * rows of a B^T panel at N = 24 or 200): 8 rows of 16 k steps, each 8 x 8
 * half transposed by the swaps of 4, 2 and 1, give k steps 0-7 in the
 * low halves and 8-15 in the high halves, stored with the other half and
 * the missing rows zeroed, k steps upwards (uk_pack_transposed's order).
 * Three eighths of the whole 16 x 16 transpose's shuffles: a 24-row
 * B^T panel of K = 64 200 -> 150 ns, an 8-row A micro-panel of kc 192
 * 277 -> 149. */
static void uk_pack_half_group(int w, int rows, int64_t k, const float *src, int64_t ld,
                               float *dst)
{
    enum { HALF = UK_VEC_FLOATS / 2 };
    const uk_ivec keep = uk_lanes_below(rows); /* low half, rows that exist */
    const uk_vec zero = {0};
    const float *row[HALF];
    for (int i = 0; i < HALF; i++)
        row[i] = src + (int64_t)(i < rows ? i : rows - 1) * ld;
    for (int64_t p0 = 0; p0 < k; p0 += UK_VEC_FLOATS) {
        int depth = k - p0 < UK_VEC_FLOATS ? (int)(k - p0) : UK_VEC_FLOATS;
        uk_vec r[UK_VEC_FLOATS];
#pragma GCC unroll 8
        for (int i = 0; i < HALF; i++)
            r[i] = depth == UK_VEC_FLOATS ? uk_load(row[i] + p0)
                                          : uk_load_partial(row[i] + p0, depth);
        UK_SWAP_BLOCKS_OF(r, 4, HALF)
        UK_SWAP_BLOCKS_OF(r, 2, HALF)
        UK_SWAP_BLOCKS_OF(r, 1, HALF)
        uk_vec out[UK_VEC_FLOATS];
#pragma GCC unroll 8
        for (int t = 0; t < HALF; t++) {
            out[t] = (uk_vec)((uk_ivec)r[t] & keep);
            out[HALF + t] = (uk_vec)((uk_ivec)__builtin_shufflevector(
                                         r[t], zero, UK_LANES(UK_HIGH_DOWN, 0)) &
                                     keep);
        }
        if (depth == UK_VEC_FLOATS) {
#pragma GCC unroll 16
            for (int t = 0; t < UK_VEC_FLOATS; t++)
                uk_store(dst + (p0 + t) * w, out[t]);
        } else {
            for (int t = 0; t < depth; t++)
                uk_store(dst + (p0 + t) * w, out[t]);
        }
    }
}
#endif

/* One V x V block of a transposing copy: V floats (k steps) of n rows,
 * ld floats apart, become V k steps of V lanes, w floats apart; lanes
 * from n on are zero. Rows past the last are read again from the last
 * and their lanes cleared after the transpose, one mask for all. Each
 * row's and each store's address is the one before plus ld or w: kept
 * as a pointer and a mask per row and a pointer per store, as the loop
 * was first written, they filled the registers, and each 16 x 16 block
 * read them back from the stack. Time against that loop, in one process,
 * AVX-512 on Zen 4: K = 64 panels (B^T 256 x 64 into 32-wide panels, A
 * 252 x 64 into 14-row ones) 0.76-0.83, K = 768 0.94-0.98; attention's
 * 12 x (L x L x 64) q K^T, L = 128-256, 0.96-1.00 of the whole call. The
 * rows are pinned to registers: folded into the shuffles, each was read
 * twice (512 x 768 B^T took 1.13x the old loop's time). */
static inline __attribute__((always_inline)) void
uk_transpose_block(const int n, const float *src, int64_t ld, float *dst, int64_t w)
{
    uk_vec r[UK_VEC_FLOATS];
#pragma GCC unroll 16
    for (int i = 0; i < UK_VEC_FLOATS; i++) {
        r[i] = uk_load(src);
        UK_IN_REGISTER(r[i]);
        if (i + 1 < n)
            src += ld;
    }
    uk_transpose(r);
    const uk_ivec keep = uk_lanes_below(n);
#pragma GCC unroll 16
    for (int t = 0; t < UK_VEC_FLOATS; t++) {
        uk_store(dst, n < UK_VEC_FLOATS ? (uk_vec)((uk_ivec)r[t] & keep) : r[t]);
        dst += w;
    }
}

/* See ukernel_transpose_fn. Every store is a whole vector: one that runs
 * past the panel's width spills into the start of the next k step's row,
 * which a group of columns further left writes afterwards (the groups go
 * right to left, k steps upwards), or, for the last k step, into the
 * slack past the panel. */
static void uk_pack_transposed(int w, int rows, int64_t k, const float *src, int64_t ld,
                               float *dst)
{
    if (rows <= 0) {
        memset(dst, 0, (size_t)(w * k) * sizeof(float));
        return;
    }
    for (int i0 = (w - 1) / UK_VEC_FLOATS * UK_VEC_FLOATS; i0 >= 0; i0 -= UK_VEC_FLOATS) {
        /* A group of at most UK_FEW_ROWS rows (the last of a panel, as
         * in N = 17, 81 or 100) is copied float by float over a vector
         * of zeros each k step: a transpose would cost the whole V x V. */
        if (rows - i0 <= UK_FEW_ROWS) {
            for (int64_t p = 0; p < k; p++) {
                float *out = dst + p * w + i0;
                uk_store(out, (uk_vec){0});
                for (int i = 0; i < rows - i0; i++)
                    out[i] = src[(int64_t)(i0 + i) * ld + p];
            }
            continue;
        }
#if UK_VEC_FLOATS == 16
        if (rows - i0 <= UK_VEC_FLOATS / 2) {
            uk_pack_half_group(w, rows - i0, k, src + (int64_t)i0 * ld, ld, dst + i0);
            continue;
        }
#endif
        const float *first = src + (int64_t)i0 * ld;
        int64_t p0 = 0;
        /* A whole group by the block with n a constant: no test a row. */
        if (rows - i0 >= UK_VEC_FLOATS)
            for (; p0 + UK_VEC_FLOATS <= k; p0 += UK_VEC_FLOATS)
                uk_transpose_block(UK_VEC_FLOATS, first + p0, ld, dst + p0 * w + i0, w);
        else
            for (; p0 + UK_VEC_FLOATS <= k; p0 += UK_VEC_FLOATS)
                uk_transpose_block(rows - i0, first + p0, ld, dst + p0 * w + i0, w);
        if (p0 < k) {
            int depth = (int)(k - p0);
            uk_vec r[UK_VEC_FLOATS];
            for (int i = 0; i < UK_VEC_FLOATS; i++)
                r[i] = uk_load_partial(first + (int64_t)(i0 + i < rows ? i : rows - 1 - i0) * ld +
                                           p0,
                                       depth);
            uk_transpose(r);
            const uk_ivec keep = uk_lanes_below(rows - i0);
            for (int t = 0; t < depth; t++)
                uk_store(dst + (p0 + t) * w + i0, (uk_vec)((uk_ivec)r[t] & keep));
        }
    }
}

/* See ukernel_copy_fn. Whole vectors where they fit the panel; a vector
 * that runs past n is loaded whole when the block goes on past it (the
 * next row, or this one's padding), its lanes from n on zeroed in
 * registers; at the very end of the block it is read element by element.
 * (A memcpy per row and a loop of zeros took 2.7 us for a 256 x 40 panel,
 * a fifth of that GEMM.) */
static void uk_pack_rows(int w, int n, int64_t k, const float *src, int64_t ld, float *dst)
{
    const float *block_end = k > 0 ? src + (k - 1) * ld + n : src;
    for (int64_t p = 0; p < k; p++) {
        const float *row = src + p * ld;
        float *out = dst + p * w;
        int j = 0;
        for (; j + UK_VEC_FLOATS <= w; j += UK_VEC_FLOATS) {
            int left = n - j;
            uk_vec v;
            if (left >= UK_VEC_FLOATS)
                v = uk_load(row + j);
            else if (left <= 0)
                v = (uk_vec){0};
            else if (row + j + UK_VEC_FLOATS <= block_end)
                v = (uk_vec)((uk_ivec)uk_load(row + j) & uk_lanes_below(left));
            else
                v = uk_load_partial(row + j, left);
            uk_store(out + j, v);
        }
        for (; j < w; j++)
            out[j] = j < n ? row[j] : 0.0f;
    }
}

/* The packing functions of this ISA class (ukernel.h). */
#define UK_PACKERS {uk_pack_transposed, uk_pack_rows}
/* The row forms, in ukernel_row_form's order (ukernel_row_lookup). */
#define UK_ROW_FORMS {uk_row, uk_row_stream, uk_row_panels}

/* ---- the row form ----
 *
 * One row of A times B, rows of B contiguous (M = 1: a matrix-vector
 * product). With one row there is nothing to block for; B streams from L3
 * or memory, and how it is read decides the time. The tiles read each row
 * of B one tile wide, a quarter kilobyte at 64 wide, a new page each at a
 * few kilobytes a row; here nv vectors of C stay in registers while all of
 * K runs, so each row of B is read UK_ROW_VECS vectors (a kilobyte with
 * AVX-512) at a time, a run the hardware prefetchers follow. Columns past
 * the last whole vector go one by one.
 *
 * The same body reads pre-packed B (uk_row_panels): there vector v of a
 * row lies in panel v / pv, pv vectors wide, panels ps floats apart. In
 * place ps is 0, a constant: the offsets fold to constants and the loads
 * address B by one pointer and fixed displacements.
 *
 * Up to UK_ROW_MAX_M rows share each vector of B loaded, the register
 * budget of UK_ROW_VECS accumulators split among them: with one panel
 * stream (a 2-row tile over pre-packed panels) B came from L3 at 50-61
 * GB/s where one row over 8 panels at once drew 76 (Zen 4, 1 thread).
 *
 * uk_row_block: vectors v0 .. v0 + nv of `rows` rows of C. */
static inline __attribute__((always_inline)) void
uk_row_block(const int rows, const int nv, const ukernel_args *args, int64_t v0, int pv,
             int64_t ps)
{
    uk_vec acc[UK_ROW_VECS];
    int64_t offset[UK_ROW_VECS];
    const float *b = args->b + (ps == 0 ? v0 * UK_VEC_FLOATS : 0);
#pragma GCC unroll 16
    for (int v = 0; v < nv; v++)
        offset[v] = ps == 0 ? v * UK_VEC_FLOATS
                            : (v0 + v) / pv * ps + (v0 + v) % pv * UK_VEC_FLOATS;
#pragma GCC unroll 16
    for (int r = 0; r < rows * nv; r++)
        acc[r] = (uk_vec){0};
    const float *a = args->a;
    const int64_t a_rs = args->a_rs, a_cs = args->a_cs, b_rs = args->b_rs, k = args->k;
    for (int64_t p = 0; p < k; p++) {
        float ap[UK_ROW_MAX_M];
#pragma GCC unroll 6
        for (int i = 0; i < rows; i++)
            ap[i] = a[i * a_rs + p * a_cs];
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++) {
            uk_vec bv = uk_load(b + p * b_rs + offset[v]);
            UK_IN_REGISTER(bv);
#pragma GCC unroll 6
            for (int i = 0; i < rows; i++)
                acc[i * nv + v] += ap[i] * bv;
        }
    }
    const float alpha = args->alpha, beta = args->beta;
#pragma GCC unroll 6
    for (int i = 0; i < rows; i++) {
        float *c = args->c + i * args->ldc + v0 * UK_VEC_FLOATS;
#pragma GCC unroll 16
        for (int v = 0; v < nv; v++) {
            uk_vec out = alpha * acc[i * nv + v];
            if (beta != 0.0f)
                out += beta * uk_load(c + v * UK_VEC_FLOATS);
            uk_store(c + v * UK_VEC_FLOATS, out);
        }
    }
}

/* The whole vectors of C's rows, UK_ROW_VECS / rows at a time, the rest
 * with constant counts, so that their accumulators too stay in
 * registers (counts past the budget are never reached, and not built). */
static inline __attribute__((always_inline)) void
uk_rows_vectors(const int rows, const ukernel_args *args, int pv, int64_t ps)
{
    const int whole = args->n / UK_VEC_FLOATS;
    const int step = UK_ROW_VECS / rows;
    int v = 0;
    for (; v + step <= whole; v += step)
        uk_row_block(rows, step, args, v, pv, ps);
    switch (whole - v) {
#define UK_ROW_REST(NV)                                                                 \
    case NV:                                                                            \
        if (NV * rows <= UK_ROW_VECS)                                                   \
            uk_row_block(rows, NV, args, v, pv, ps);                                    \
        break;
        UK_ROW_RESTS(UK_ROW_REST)
#undef UK_ROW_REST
    default: break;
    }
}

/* args->m rows (1 to UK_ROW_MAX_M), each count its own body. */
static inline __attribute__((always_inline)) void uk_row_vectors(const ukernel_args *args,
                                                                 int pv, int64_t ps)
{
    switch (args->m) {
    case 2: uk_rows_vectors(2, args, pv, ps); break;
    case 3: uk_rows_vectors(3, args, pv, ps); break;
    case 4: uk_rows_vectors(4, args, pv, ps); break;
    case 5: uk_rows_vectors(5, args, pv, ps); break;
    case 6: uk_rows_vectors(6, args, pv, ps); break;
    default: uk_rows_vectors(1, args, pv, ps); break;
    }
}

/* Columns from..n of each of the m rows, one at a time: those past the
 * last whole vector. Inlined: called last, it was a tail jump, which GCC
 * leaves without a vzeroupper, and the scalar callee returned to the
 * caller's SSE code with the vector registers' upper halves dirty. On the
 * Xeon (AVX-512) that cost about 130 ns a call: 12 x (1x64x1) took 2.2 us
 * against 0.54 for 12 x (2x64x1). */
static inline __attribute__((always_inline)) void uk_row_columns(const ukernel_args *args,
                                                                 int from)
{
    for (int i = 0; i < args->m; i++) {
        const float *a = args->a + i * args->a_rs;
        float *c = args->c + i * args->ldc;
        for (int j = from; j < args->n; j++) {
            float sum = 0.0f;
            for (int64_t p = 0; p < args->k; p++)
                sum += a[p * args->a_cs] * args->b[p * args->b_rs + j];
            c[j] = args->beta != 0.0f ? args->alpha * sum + args->beta * c[j] : args->alpha * sum;
        }
    }
}

/* C[i, 0..n) = alpha * A[i, 0..k) B + beta * C for the m rows: a at a_cs
 * apart along k, a_rs apart across rows, B's rows b_rs apart. */
static void uk_row(const ukernel_args *args)
{
    uk_row_vectors(args, 1, 0); /* no panels */
    uk_row_columns(args, args->n / UK_VEC_FLOATS * UK_VEC_FLOATS);
}

/* The same from pre-packed panels: b_rs is the panel width, a whole
 * number of vectors, each panel b_rs * k floats; n a whole number of
 * vectors (a last, narrower panel is another call, uk_row over it). */
static void uk_row_panels(const ukernel_args *args)
{
    uk_row_vectors(args, (int)(args->b_rs / UK_VEC_FLOATS), args->b_rs * args->k);
}

/* The row form for a B that streams from memory, for one row of A or up
 * to UK_ROW_STREAM_MAX_M: UK_STREAM_ROWS rows of B at a time, each read
 * across all the columns (eight long runs at once for the prefetchers),
 * summed into C's rows, which stay in L1 or L2. With the blocks above,
 * 1x50257x768 (B 154 MB) drew 14-15 GB/s from memory at 1 thread; this
 * way, against oneDNN, 0.46 -> 1.00 (0.85 -> 1.22 at 2 threads, bench/compare
 * `compare-row-stream.md`). For a B in L3 the blocks were as fast or
 * faster for one row (1x4096x1024, a loop of each in process: 52 against
 * 46 GB/s). A few rows share each vector of B read: the tiles read it a
 * line of a row at a time, 64 rows deep (plan_gemm.c, STREAM_LINES). */
enum { UK_STREAM_ROWS = 8 };

static inline __attribute__((always_inline)) void uk_rows_stream(const int mr,
                                                                 const ukernel_args *args)
{
    const int whole = args->n / UK_VEC_FLOATS * UK_VEC_FLOATS;
    const int64_t k = args->k, b_rs = args->b_rs, ldc = args->ldc;
    const float beta = args->beta;
    for (int64_t p0 = 0; p0 < k; p0 += UK_STREAM_ROWS) {
        const int rows = k - p0 < UK_STREAM_ROWS ? (int)(k - p0) : UK_STREAM_ROWS;
        float ap[UK_ROW_STREAM_MAX_M][UK_STREAM_ROWS];
        for (int i = 0; i < mr; i++)
            for (int r = 0; r < rows; r++)
                ap[i][r] = args->alpha * args->a[i * args->a_rs + (p0 + r) * args->a_cs];
        const float *b = args->b + p0 * b_rs;
        for (int j = 0; j < whole; j += UK_VEC_FLOATS) {
            /* C = sum of (alpha a) B + beta C: beta 0 never reads C */
            uk_vec sum[UK_ROW_STREAM_MAX_M];
#pragma GCC unroll 8
            for (int i = 0; i < mr; i++)
                sum[i] = p0 > 0         ? uk_load(args->c + i * ldc + j)
                         : beta != 0.0f ? beta * uk_load(args->c + i * ldc + j)
                                        : (uk_vec){0};
            if (rows == UK_STREAM_ROWS) {
#pragma GCC unroll 8
                for (int r = 0; r < UK_STREAM_ROWS; r++) {
                    uk_vec bv = uk_load(b + r * b_rs + j);
#pragma GCC unroll 8
                    for (int i = 0; i < mr; i++)
                        sum[i] += ap[i][r] * bv;
                }
            } else {
                for (int r = 0; r < rows; r++) {
                    uk_vec bv = uk_load(b + r * b_rs + j);
#pragma GCC unroll 8
                    for (int i = 0; i < mr; i++)
                        sum[i] += ap[i][r] * bv;
                }
            }
#pragma GCC unroll 8
            for (int i = 0; i < mr; i++)
                uk_store(args->c + i * ldc + j, sum[i]);
        }
    }
    uk_row_columns(args, whole);
}

/* args->m rows (1 to UK_ROW_STREAM_MAX_M), each count its own body so
 * that the sums stay in registers. */
static void uk_row_stream(const ukernel_args *args)
{
    switch (args->m) {
    case 2: uk_rows_stream(2, args); break;
    case 3: uk_rows_stream(3, args); break;
    case 4: uk_rows_stream(4, args); break;
    case 5: uk_rows_stream(5, args); break;
    case 6: uk_rows_stream(6, args); break;
    default: uk_rows_stream(1, args); break;
    }
}

#define UK_DOT_MEMBER(MR, NJ)                                                     \
    static void uk_dot_##MR##x##NJ(const ukernel_args *args)                      \
    {                                                                             \
        dotkernel_body(MR, NJ, args);                                             \
    }
#define UK_DOT_ENTRY(MR, NJ) {MR, NJ, uk_dot_##MR##x##NJ, NULL},

/* An edge tile whose last vector has at most half its lanes in use runs
 * that vector at half width: where a 16-float FMA costs two 8-float ones
 * (AMD Zen 4 splits it in two), a 24-column tile saves a quarter of its
 * FMA time, and where it costs one, nothing is lost (docs/DESIGN.md,
 * ukernel descriptor). Not while packing B (the copy stores whole
 * vectors) nor in the far loop, which only wide B read in place takes. */
static inline __attribute__((always_inline)) int uk_half_edge(const int nv,
                                                              const ukernel_args *args)
{
    return UK_HALF_LAST && args->n <= nv * UK_VEC_FLOATS - UK_VEC_FLOATS / 2 && !args->b_copy &&
           !args->b_l2_ahead;
}

/* One form of a member (A packed or read in place). The half-width edge
 * body is a function of its own: inlined beside the others, it moved the
 * full tiles' code about and cost bert-base and dietcode 1% at 1 thread
 * (2026-12-06-compare-session24-half-edge-bert-dietcode.md). */
#define UK_MEMBER_FORM(MR, NV, FORM, A_PACKED)                                    \
    static __attribute__((noinline)) void uk_##MR##x##NV##_##FORM##_half(         \
        const ukernel_args *args)                                                 \
    {                                                                             \
        ukernel_body(MR, NV, A_PACKED, 1, args);                                  \
    }                                                                             \
    static void uk_##MR##x##NV##_##FORM(const ukernel_args *args)                 \
    {                                                                             \
        if (uk_half_edge(NV, args))                                               \
            uk_##MR##x##NV##_##FORM##_half(args);                                 \
        else                                                                      \
            ukernel_body(MR, NV, A_PACKED, 0, args);                              \
    }

/* One member: a packed-A and a strided-A function and its table entry. */
#define UK_MEMBER(MR, NV) UK_MEMBER_FORM(MR, NV, packed, 1) UK_MEMBER_FORM(MR, NV, strided, 0)
#define UK_ENTRY(MR, NV) {MR, NV, uk_##MR##x##NV##_packed, uk_##MR##x##NV##_strided},
