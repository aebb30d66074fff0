/*
 * test_concurrency.c - eight threads call tessel at once, each with its own
 * seeded shapes (batched ones among them), and every result is checked
 * against the reference: first all on the default context (ctx NULL, which
 * may be created by the race itself), then all sharing one explicit
 * context of two threads, then each with a one-thread context created in
 * the thread. Workers only record what they found; the main thread does the
 * CHECKs after joining, since the counters of test.h are not thread-safe.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "gemm_check.h"
#include "tessel.h"
#include "test.h"

enum { WORKERS = 8, ITERATIONS = 16 };

typedef enum { SHARE_DEFAULT, SHARE_ONE_CONTEXT, CONTEXT_PER_THREAD } sharing;

typedef struct {
    sharing mode;
    tessel_ctx *shared; /* for SHARE_ONE_CONTEXT */
    uint64_t seed;
    tessel_status create_status; /* for CONTEXT_PER_THREAD */
    bool ok[ITERATIONS];
    char why[ITERATIONS][800];
} worker;

static void *work(void *opaque)
{
    worker *w = opaque;
    tessel_ctx *ctx = w->shared;
    if (w->mode == CONTEXT_PER_THREAD) {
        w->create_status = tessel_ctx_create(&ctx, 1);
        if (w->create_status != TESSEL_OK)
            return NULL;
    }
    test_rng r = {w->seed};
    for (int it = 0; it < ITERATIONS; it++) {
        gemm_case gc;
        /* Every few cases large enough for the planner to split it. */
        gemm_random_case(&r, it % 3 == 0 ? 4e6 : 5e5, &gc);
        w->ok[it] = gemm_run_case(ctx, &gc, test_rng_next(&r), w->why[it], sizeof w->why[it]);
    }
    if (w->mode == CONTEXT_PER_THREAD)
        tessel_ctx_destroy(ctx);
    return NULL;
}

static void run_workers(sharing mode, tessel_ctx *shared, const char *label, uint64_t seed)
{
    static worker workers[WORKERS];
    pthread_t ids[WORKERS];
    bool started[WORKERS];
    for (int t = 0; t < WORKERS; t++) {
        workers[t] = (worker){.mode = mode, .shared = shared,
                              .seed = seed + 0x1000u * (uint64_t)t};
        started[t] = pthread_create(&ids[t], NULL, work, &workers[t]) == 0;
        CHECK(started[t], "%s: cannot start worker %d", label, t);
    }
    for (int t = 0; t < WORKERS; t++) {
        if (!started[t])
            continue;
        pthread_join(ids[t], NULL);
        const worker *w = &workers[t];
        if (mode == CONTEXT_PER_THREAD) {
            CHECK(w->create_status == TESSEL_OK, "%s: worker %d: tessel_ctx_create: %s", label,
                  t, tessel_status_str(w->create_status));
            if (w->create_status != TESSEL_OK)
                continue;
        }
        for (int it = 0; it < ITERATIONS; it++)
            CHECK(w->ok[it], "%s: worker %d, case %d: %s", label, t, it, w->why[it]);
    }
}

void suite_concurrency(void)
{
    run_workers(SHARE_DEFAULT, NULL, "default context", 0xc0c0a);

    tessel_ctx *two = NULL;
    tessel_status s = tessel_ctx_create(&two, 2);
    CHECK(s == TESSEL_OK, "tessel_ctx_create(2): %s", tessel_status_str(s));
    if (s == TESSEL_OK) {
        run_workers(SHARE_ONE_CONTEXT, two, "shared 2-thread context", 0xc0c0b);
        tessel_ctx_destroy(two);
    }

    run_workers(CONTEXT_PER_THREAD, NULL, "1-thread context per thread", 0xc0c0c);
}
