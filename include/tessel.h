/*
 * tessel.h - the public API of tessel.
 *
 * tessel runs deep-learning tensor operators fast for shapes known only at
 * run time. Every matrix is row-major, like dnnl_sgemm and cblas with
 * CblasRowMajor. Every entry point returns a tessel_status; none aborts and
 * none prints. On any error the output is left untouched and
 * tessel_last_error() holds a one-line explanation for the calling thread.
 *
 * This header is the whole public surface: nothing under src/ is public.
 */
#ifndef TESSEL_H
#define TESSEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tessel_status {
    TESSEL_OK = 0,
    TESSEL_ERR_BAD_ARG = 1,      /* an argument is out of its domain (e.g. threads < 0) */
    TESSEL_ERR_BAD_TRANS = 2,    /* transa/transb is not one of 'N', 'n', 'T', 't' */
    TESSEL_ERR_BAD_SIZE = 3,     /* a size is negative, or the matrix does not fit in memory */
    TESSEL_ERR_BAD_LD = 4,       /* a leading dimension is smaller than the row it holds */
    TESSEL_ERR_NULL = 5,         /* a NULL pointer where a non-empty matrix is needed */
    TESSEL_ERR_ALIAS = 6,        /* the output overlaps an input, or batch outputs overlap */
    TESSEL_ERR_NO_MEMORY = 7,    /* an allocation failed; nothing was written */
    TESSEL_ERR_INTERNAL = 8,     /* a bug in tessel: please report it with tessel_last_error() */
    /* Warnings: the call did its job, with a fallback worth knowing about.
     * tessel_last_error() says what happened. */
    TESSEL_WARN_DB = 100         /* the tuning database is missing, corrupt, locked or
                                    unreadable: plans come from the analytic model */
} tessel_status;

/* Whether a status is a failure (not OK and not a warning). */
#define TESSEL_IS_ERROR(status) ((status) != TESSEL_OK && (status) < TESSEL_WARN_DB)

/* A context owns the thread pool, the hardware profile and the planner
 * state. A context may be shared by any number of threads. */
typedef struct tessel_ctx tessel_ctx;

/* Creates a context running `num_threads` threads (the caller counts as
 * one). num_threads 0 means the TESSEL_NUM_THREADS environment variable if
 * set, else every core the process may run on (its affinity mask). When
 * the caller already runs its own threads, give each of them a context of
 * one thread, or share one context: calls that find its pool busy run on
 * the calling thread alone rather than oversubscribing the cores. The
 * context's worker threads keep off the CPU the calling thread last
 * called from (their affinity is the one they started with less that
 * CPU); the calling thread's own affinity is never changed.
 *
 * The context reads this machine's calibrated cost model and tuned plans
 * from the tuning database (`tessel tune` writes them; TESSEL_DB names the
 * file, TESSEL_DB=off means none). If the database is missing, corrupt,
 * locked or unreadable, the context is still created, plans come from the
 * analytic model, and the status is TESSEL_WARN_DB with the reason in
 * tessel_last_error(). Test with TESSEL_IS_ERROR(), not != TESSEL_OK. */
tessel_status tessel_ctx_create(tessel_ctx **ctx, int num_threads);
void tessel_ctx_destroy(tessel_ctx *ctx);

/* The number of threads a context runs (after resolving 0). */
int tessel_ctx_threads(const tessel_ctx *ctx);

/* C = alpha * op(A) * op(B) + beta * C, where op(X) is X for 'N' and X^T for
 * 'T'. op(A) is M x K, op(B) is K x N, C is M x N. ctx NULL means the
 * process-wide default context, created on first use. beta == 0 never
 * reads C, so C may hold NaN or garbage. M, N or K of 0 is valid: K == 0
 * gives C = beta * C. C must not overlap A or B. */
tessel_status tessel_sgemm(tessel_ctx *ctx, char transa, char transb,
                           int64_t M, int64_t N, int64_t K, float alpha,
                           const float *A, int64_t lda,
                           const float *B, int64_t ldb,
                           float beta, float *C, int64_t ldc);

/* `batch` independent GEMMs of the same shape; matrix i of A starts at
 * A + i * stride_a (likewise B and C). A stride of 0 reuses one matrix for
 * every batch entry (inputs only); output matrices must not overlap. */
tessel_status tessel_sgemm_strided_batched(tessel_ctx *ctx, char transa, char transb,
                                           int64_t M, int64_t N, int64_t K, float alpha,
                                           const float *A, int64_t lda, int64_t stride_a,
                                           const float *B, int64_t ldb, int64_t stride_b,
                                           float beta, float *C, int64_t ldc, int64_t stride_c,
                                           int64_t batch);

/* ---- Pre-packed weights and fused epilogues ----
 *
 * An inference runtime's linear layer multiplies a changing activation
 * (M = batch x sequence length, different on every call) by constant
 * weights. Packing the weights once into the ukernels' panel layout saves
 * re-packing them on every call, for every M. */

typedef struct tessel_packed_b tessel_packed_b;

/* Packs op(B) (K x N; B itself is K x N for 'N', N x K for 'T') once.
 * The handle is usable with any context of this process, by any number of
 * threads at once, until tessel_packed_destroy. */
tessel_status tessel_sgemm_pack_b(tessel_ctx *ctx, char transb, int64_t K, int64_t N,
                                  const float *B, int64_t ldb, tessel_packed_b **packed);
void tessel_packed_destroy(tessel_packed_b *packed);

typedef enum tessel_activation {
    TESSEL_ACT_NONE = 0,
    TESSEL_ACT_RELU = 1,      /* max(x, 0) */
    TESSEL_ACT_GELU_TANH = 2, /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    TESSEL_ACT_GELU_ERF = 3   /* 0.5 x (1 + erf(x / sqrt(2))) */
} tessel_activation;

/* Applied as C is stored: C = act(alpha * op(A) op(B) + beta * C + bias),
 * bias a row of N floats added to every row (NULL for none). */
typedef struct tessel_epilogue {
    const float *bias;
    tessel_activation activation;
} tessel_epilogue;

/* C[M, N] = alpha * op(A) * B_packed + beta * C, op(A) M x K. */
tessel_status tessel_sgemm_packed(tessel_ctx *ctx, char transa, int64_t M, const float *A,
                                  int64_t lda, const tessel_packed_b *packed, float alpha,
                                  float beta, float *C, int64_t ldc);

/* The same with an epilogue (NULL: none), so Y = act(X W + b) is one pass. */
tessel_status tessel_sgemm_packed_epilogue(tessel_ctx *ctx, char transa, int64_t M,
                                           const float *A, int64_t lda,
                                           const tessel_packed_b *packed, float alpha,
                                           float beta, float *C, int64_t ldc,
                                           const tessel_epilogue *epilogue);

/* A short, static description of a status ("bad leading dimension"). */
const char *tessel_status_str(tessel_status status);

/* The detail of the last error on the calling thread ("ldb 3 < N 4 for
 * transb 'N'"), or "" if none. Valid until the thread's next tessel call. */
const char *tessel_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* TESSEL_H */
