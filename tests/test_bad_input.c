/*
 * test_bad_input.c - every class of bad argument to the GEMM entry points
 * and tessel_ctx_create returns its own status, leaves every buffer
 * bitwise untouched, and explains itself through tessel_last_error() and
 * tessel_status_str(); the next successful call clears the message. Also
 * the boundaries on the valid side: NULL for an empty matrix, matrices
 * adjacent but not overlapping, interleaved batch outputs, leading
 * dimensions exactly the row of the transposed storage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel.h"
#include "test.h"

enum { BUF = 256 };
static float a_buf[BUF], b_buf[BUF], c_buf[BUF];
static float a_saved[BUF], b_saved[BUF], c_saved[BUF];

/* One call's arguments; `batched` picks the strided batched entry point. */
typedef struct {
    char transa, transb;
    int64_t M, N, K;
    float alpha;
    const float *A;
    int64_t lda, stride_a;
    const float *B;
    int64_t ldb, stride_b;
    float beta;
    float *C;
    int64_t ldc, stride_c, batch;
    bool batched;
} call_args;

/* A valid 4 x 4 x 4 call on 8-wide rows, batch strides of 64. */
static call_args valid_call(void)
{
    return (call_args){.transa = 'N', .transb = 'N', .M = 4, .N = 4, .K = 4, .alpha = 1.0f,
                       .A = a_buf, .lda = 8, .stride_a = 64, .B = b_buf, .ldb = 8,
                       .stride_b = 64, .beta = 0.5f, .C = c_buf, .ldc = 8, .stride_c = 64,
                       .batch = 1};
}

static call_args batched_call(int64_t batch)
{
    call_args c = valid_call();
    c.batched = true;
    c.batch = batch;
    return c;
}

static tessel_status call(const call_args *c)
{
    if (c->batched)
        return tessel_sgemm_strided_batched(NULL, c->transa, c->transb, c->M, c->N, c->K,
                                            c->alpha, c->A, c->lda, c->stride_a, c->B, c->ldb,
                                            c->stride_b, c->beta, c->C, c->ldc, c->stride_c,
                                            c->batch);
    return tessel_sgemm(NULL, c->transa, c->transb, c->M, c->N, c->K, c->alpha, c->A, c->lda,
                        c->B, c->ldb, c->beta, c->C, c->ldc);
}

static void reset_buffers(void)
{
    test_rng r = {0xbad};
    for (int i = 0; i < BUF; i++) {
        a_buf[i] = test_rng_float(&r);
        b_buf[i] = test_rng_float(&r);
        c_buf[i] = test_rng_float(&r);
    }
    memcpy(a_saved, a_buf, sizeof a_buf);
    memcpy(b_saved, b_buf, sizeof b_buf);
    memcpy(c_saved, c_buf, sizeof c_buf);
}

/* A small valid call on buffers of its own must succeed and clear the
 * thread's error message. */
static void check_success_clears(const char *after)
{
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4];
    tessel_status s = tessel_sgemm(NULL, 'N', 'N', 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
    CHECK(s == TESSEL_OK && tessel_last_error()[0] == '\0' && c[0] == 1 && c[3] == 4,
          "valid call after %s: status %d, last error \"%s\"", after, (int)s,
          tessel_last_error());
}

/* The status, a message, and all three buffers bitwise unchanged. */
static void expect_status(const char *what, const call_args *c, tessel_status want)
{
    reset_buffers();
    tessel_status got = call(c);
    const char *error = tessel_last_error();
    CHECK(got == want, "%s: status %d (%s), want %d (%s); last error \"%s\"", what, (int)got,
          tessel_status_str(got), (int)want, tessel_status_str(want), error);
    CHECK(tessel_status_str(got)[0] != '\0', "%s: tessel_status_str(%d) is empty", what,
          (int)got);
    bool untouched = memcmp(a_buf, a_saved, sizeof a_buf) == 0 &&
                     memcmp(b_buf, b_saved, sizeof b_buf) == 0 &&
                     memcmp(c_buf, c_saved, sizeof c_buf) == 0;
    if (want != TESSEL_OK) {
        CHECK(error[0] != '\0', "%s: tessel_last_error() is empty", what);
        CHECK(untouched, "%s: a buffer was written by a call that failed", what);
        check_success_clears(what);
    } else {
        CHECK(error[0] == '\0', "%s: succeeded but last error is \"%s\"", what, error);
    }
}

static void bad_sizes(void)
{
    call_args c;
    c = valid_call(), c.M = -1, expect_status("M -1", &c, TESSEL_ERR_BAD_SIZE);
    c = valid_call(), c.N = -1, expect_status("N -1", &c, TESSEL_ERR_BAD_SIZE);
    c = valid_call(), c.K = -1, expect_status("K -1", &c, TESSEL_ERR_BAD_SIZE);
    c = batched_call(-1), expect_status("batch -1", &c, TESSEL_ERR_BAD_SIZE);
    c = batched_call(2), c.M = INT64_MIN, expect_status("batched M INT64_MIN", &c,
                                                        TESSEL_ERR_BAD_SIZE);

    /* Beyond 32 bits, and beyond memory with sizes that each fit. */
    c = valid_call(), c.transa = 'T', c.M = (int64_t)1 << 40, c.lda = (int64_t)1 << 40,
    c.ldc = (int64_t)1 << 40;
    expect_status("M 2^40, lda and ldc 2^40", &c, TESSEL_ERR_BAD_SIZE);
    c = valid_call(), c.M = (int64_t)INT32_MAX + 1;
    expect_status("M INT32_MAX + 1", &c, TESSEL_ERR_BAD_SIZE);
    c = valid_call(), c.N = (int64_t)INT32_MAX + 1, c.ldb = c.ldc = c.N;
    expect_status("N INT32_MAX + 1", &c, TESSEL_ERR_BAD_SIZE);
    c = valid_call(), c.K = (int64_t)INT32_MAX + 1, c.lda = c.K;
    expect_status("K INT32_MAX + 1", &c, TESSEL_ERR_BAD_SIZE);
    c = valid_call(), c.M = (int64_t)1 << 30, c.ldc = (int64_t)1 << 40;
    expect_status("C 2^30 rows of ldc 2^40", &c, TESSEL_ERR_BAD_SIZE);
    c = valid_call(), c.M = c.N = INT32_MAX, c.K = 1, c.lda = 1, c.ldb = c.ldc = INT32_MAX;
    expect_status("C INT32_MAX x INT32_MAX (2^64 bytes)", &c, TESSEL_ERR_BAD_SIZE);
    c = batched_call((int64_t)1 << 40), c.stride_c = (int64_t)1 << 30;
    expect_status("batch 2^40 of C at stride 2^30", &c, TESSEL_ERR_BAD_SIZE);

    c = batched_call(2), c.stride_a = -1, expect_status("stride_a -1", &c, TESSEL_ERR_BAD_SIZE);
    c = batched_call(2), c.stride_b = -8, expect_status("stride_b -8", &c, TESSEL_ERR_BAD_SIZE);
    c = batched_call(2), c.stride_c = -64;
    expect_status("stride_c -64", &c, TESSEL_ERR_BAD_SIZE);
}

/* op(A) is 6 x 5 and op(B) 5 x 3: stored A is 6 x 5 under 'N' (lda >= 5)
 * but 5 x 6 under 'T' (lda >= 6); B is 5 x 3 under 'N' (ldb >= 3) but
 * 3 x 5 under 'T' (ldb >= 5). */
static void bad_leading_dimensions(void)
{
    call_args c, shape = valid_call();
    shape.M = 6, shape.N = 3, shape.K = 5, shape.lda = 5, shape.ldb = 3, shape.ldc = 3;

    c = shape, expect_status("lda 5 for A 6 x 5 'N'", &c, TESSEL_OK);
    c = shape, c.lda = 4, expect_status("lda 4 < K 5, 'N'", &c, TESSEL_ERR_BAD_LD);
    c = shape, c.transa = 'T', expect_status("lda 5 < M 6, 'T'", &c, TESSEL_ERR_BAD_LD);
    c = shape, c.transa = 't', c.lda = 6, expect_status("lda 6 for A 5 x 6 't'", &c, TESSEL_OK);

    c = shape, expect_status("ldb 3 for B 5 x 3 'N'", &c, TESSEL_OK);
    c = shape, c.ldb = 2, expect_status("ldb 2 < N 3, 'N'", &c, TESSEL_ERR_BAD_LD);
    c = shape, c.transb = 'T', c.ldb = 4;
    expect_status("ldb 4 < K 5, 'T'", &c, TESSEL_ERR_BAD_LD);
    c = shape, c.transb = 'T', c.ldb = 5, expect_status("ldb 5 for B 3 x 5 'T'", &c, TESSEL_OK);

    c = shape, c.ldc = 2, expect_status("ldc 2 < N 3", &c, TESSEL_ERR_BAD_LD);
    c = shape, c.ldc = -3, expect_status("ldc -3", &c, TESSEL_ERR_BAD_LD);
    c = shape, c.N = 1, c.ldb = 1, c.ldc = 0, expect_status("ldc 0, N 1", &c, TESSEL_ERR_BAD_LD);
    c = batched_call(3), c.lda = 3, expect_status("batched lda 3 < K 4", &c, TESSEL_ERR_BAD_LD);
}

static void null_pointers(void)
{
    call_args c;
    c = valid_call(), c.A = NULL, expect_status("A NULL", &c, TESSEL_ERR_NULL);
    c = valid_call(), c.B = NULL, expect_status("B NULL", &c, TESSEL_ERR_NULL);
    c = valid_call(), c.C = NULL, expect_status("C NULL", &c, TESSEL_ERR_NULL);
    c = batched_call(2), c.C = NULL, expect_status("batched C NULL", &c, TESSEL_ERR_NULL);

    /* An empty matrix may be NULL. */
    c = valid_call(), c.M = 0, c.A = NULL, c.C = NULL;
    expect_status("M 0, A and C NULL", &c, TESSEL_OK);
    c = valid_call(), c.N = 0, c.B = NULL, c.C = NULL;
    expect_status("N 0, B and C NULL", &c, TESSEL_OK);
    c = batched_call(0), expect_status("batch 0", &c, TESSEL_OK);
    CHECK(memcmp(c_buf, c_saved, sizeof c_buf) == 0, "batch 0 wrote C");
    c = batched_call(0), c.A = NULL, c.B = NULL, c.C = NULL;
    expect_status("batch 0 with NULL matrices", &c, TESSEL_OK);
    c = valid_call(), c.K = 0, c.A = NULL, c.B = NULL, c.beta = -1.5f;
    expect_status("K 0, A and B NULL", &c, TESSEL_OK);
    bool scaled = true;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 8; j++)
            scaled &= c_buf[i * 8 + j] == (j < 4 ? -1.5f * c_saved[i * 8 + j] : c_saved[i * 8 + j]);
    CHECK(scaled, "K 0 with A and B NULL: C is not exactly beta * C");
}

static void aliasing(void)
{
    call_args c;
    /* A spans 3 * 8 + 4 = 28 elements from a_buf. */
    c = valid_call(), c.C = a_buf, expect_status("C == A", &c, TESSEL_ERR_ALIAS);
    c = valid_call(), c.C = a_buf + 2, expect_status("C = A + 2", &c, TESSEL_ERR_ALIAS);
    c = valid_call(), c.C = a_buf + 27, expect_status("C on A's last element", &c,
                                                      TESSEL_ERR_ALIAS);
    c = valid_call(), c.C = (float *)a_buf + 28, expect_status("C just after A", &c, TESSEL_OK);
    c = valid_call(), c.C = b_buf, expect_status("C == B", &c, TESSEL_ERR_ALIAS);
    c = valid_call(), c.C = b_buf + 9, expect_status("C = B + 9", &c, TESSEL_ERR_ALIAS);
    c = valid_call(), c.A = c_buf + 20, expect_status("A inside C", &c, TESSEL_ERR_ALIAS);
    c = valid_call(), c.transb = 'T', c.B = c_buf + 24;
    expect_status("B^T inside C", &c, TESSEL_ERR_ALIAS);

    /* Batch outputs overlapping each other. */
    c = batched_call(2), c.stride_c = 0, expect_status("stride_c 0, batch 2", &c,
                                                       TESSEL_ERR_ALIAS);
    c = batched_call(2), c.stride_c = 1, expect_status("stride_c 1, batch 2", &c,
                                                       TESSEL_ERR_ALIAS);
    c = batched_call(3), c.stride_c = 8, expect_status("stride_c one row, batch 3", &c,
                                                       TESSEL_ERR_ALIAS);
    c = batched_call(2), c.stride_c = 4, c.ldc = 7;
    expect_status("heads side by side past ldc", &c, TESSEL_ERR_ALIAS);
    c = batched_call(2), c.stride_c = 4, c.ldc = 8;
    expect_status("heads side by side, [4, 2 * 4]", &c, TESSEL_OK);
    c = batched_call(1), c.stride_c = 0, expect_status("stride_c 0, batch 1", &c, TESSEL_OK);
    /* C of batch entry 1 (elements 64..91) overlaps A of entry 0. */
    c = batched_call(2), c.A = c_buf + 80, c.stride_a = 0;
    expect_status("batch 1's C overlaps A", &c, TESSEL_ERR_ALIAS);
}

static void bad_trans(void)
{
    static const char bad[] = {'X', '\0', 'C', ' '};
    char what[64];
    for (int i = 0; i < (int)sizeof bad; i++) {
        call_args c = valid_call();
        c.transa = bad[i];
        snprintf(what, sizeof what, "transa 0x%02x", (unsigned char)bad[i]);
        expect_status(what, &c, TESSEL_ERR_BAD_TRANS);
        c = batched_call(2);
        c.transb = bad[i];
        snprintf(what, sizeof what, "batched transb 0x%02x", (unsigned char)bad[i]);
        expect_status(what, &c, TESSEL_ERR_BAD_TRANS);
    }
}

/* tessel_ctx_create with a NULL out pointer, negative threads, and a
 * TESSEL_NUM_THREADS that is not a count; the caller's environment is
 * restored afterwards. */
static void bad_contexts(void)
{
    tessel_ctx *ctx = NULL;
    tessel_status s = tessel_ctx_create(&ctx, -1);
    CHECK(s == TESSEL_ERR_BAD_ARG && tessel_last_error()[0],
          "ctx_create(-1): status %d, last error \"%s\"", (int)s, tessel_last_error());
    s = tessel_ctx_create(NULL, 2);
    CHECK(s == TESSEL_ERR_NULL && tessel_last_error()[0],
          "ctx_create(NULL, 2): status %d, last error \"%s\"", (int)s, tessel_last_error());

    const char *before = getenv("TESSEL_NUM_THREADS");
    char *saved = before ? strdup(before) : NULL;
    static const char *bad_env[] = {"abc", "-3", "2x"};
    for (int i = 0; i < 3; i++) {
        setenv("TESSEL_NUM_THREADS", bad_env[i], 1);
        ctx = NULL;
        s = tessel_ctx_create(&ctx, 0);
        CHECK(s == TESSEL_ERR_BAD_ARG && tessel_last_error()[0],
              "TESSEL_NUM_THREADS=%s, threads 0: status %d, last error \"%s\"", bad_env[i],
              (int)s, tessel_last_error());
        if (s == TESSEL_OK)
            tessel_ctx_destroy(ctx);
        /* An explicit count does not consult the variable. */
        s = tessel_ctx_create(&ctx, 1);
        CHECK(s == TESSEL_OK && tessel_last_error()[0] == '\0',
              "TESSEL_NUM_THREADS=%s, threads 1: status %d, last error \"%s\"", bad_env[i],
              (int)s, tessel_last_error());
        if (s == TESSEL_OK)
            tessel_ctx_destroy(ctx);
    }
    setenv("TESSEL_NUM_THREADS", "2", 1);
    s = tessel_ctx_create(&ctx, 0);
    CHECK(s == TESSEL_OK && tessel_ctx_threads(ctx) == 2 && tessel_last_error()[0] == '\0',
          "TESSEL_NUM_THREADS=2, threads 0: status %d, threads %d", (int)s,
          s == TESSEL_OK ? tessel_ctx_threads(ctx) : -1);
    if (s == TESSEL_OK)
        tessel_ctx_destroy(ctx);
    if (saved) {
        setenv("TESSEL_NUM_THREADS", saved, 1);
        free(saved);
    } else {
        unsetenv("TESSEL_NUM_THREADS");
    }
}

/* Each failure class has its own non-empty name. */
static void status_names(void)
{
    static const tessel_status all[] = {
        TESSEL_OK,        TESSEL_ERR_BAD_ARG, TESSEL_ERR_BAD_TRANS, TESSEL_ERR_BAD_SIZE,
        TESSEL_ERR_BAD_LD, TESSEL_ERR_NULL,    TESSEL_ERR_ALIAS,     TESSEL_ERR_NO_MEMORY,
        TESSEL_ERR_INTERNAL};
    enum { N_STATUS = sizeof all / sizeof all[0] };
    for (int i = 0; i < N_STATUS; i++) {
        const char *name = tessel_status_str(all[i]);
        CHECK(name && name[0], "tessel_status_str(%d) is empty", (int)all[i]);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(name, tessel_status_str(all[j])) != 0,
                  "statuses %d and %d share the name \"%s\"", (int)all[i], (int)all[j], name);
    }
    const char *unknown = tessel_status_str((tessel_status)99);
    CHECK(unknown && unknown[0], "tessel_status_str(99) is empty");
}

void suite_bad_input(void)
{
    bad_sizes();
    bad_leading_dimensions();
    null_pointers();
    aliasing();
    bad_trans();
    bad_contexts();
    status_names();
}
