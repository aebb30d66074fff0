/*
 * plan_ab.c - does one plan beat another on this machine? Times several
 * plan choices for one GEMM shape in one process, round after round in
 * turn (A, B, C, A, B, C ...), on the same buffers and the same thread
 * pool, and prints each one's median and its time over the first's. On a
 * host whose speed drifts by the minute, alternating within one process is
 * the only comparison of two plans that a slow spell cannot tilt; it is
 * how the planner's rules are checked before bench/compare weighs them
 * against the peers (make bench-ab, bench/README.md).
 *
 *   plan_ab M N K [--threads T] [--trans XY] [--packed] [--rounds R]
 *           [--offset BYTES] CHOICE...
 *
 * A CHOICE is "rules" (the planner's own plan for the shape) or a knob
 * string as `tessel explain` prints after "source": "nv=2 kc=0 nc=0
 * b=rules split=N" (0, rules or - leave a knob to the planner). --packed
 * packs B once first (tessel_sgemm_pack_b's layout) and times the
 * pre-packed call. A, B and C start on a 64-byte boundary, as bench/run's
 * do, or --offset bytes past one (16: where malloc leaves them; on the AMD
 * EPYC of 2026-12-03, 3x3072x768 ran at 7 GF/s aligned and 13 at 16 bytes
 * off, oneDNN's the other way round). The planner runs with whatever model the context has:
 * set TESSEL_DB=off for the analytic rules.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "ops/ops.h"
#include "plan/plan.h"
#include "tessel.h"
#include "timing.h"

enum { MAX_CHOICES = 8, MAX_ROUNDS = 101 };

/* Calls are timed in batches of about this many seconds each round. */
static const double BATCH_SECONDS = 0.02;

static int usage(void)
{
    fprintf(stderr, "usage: plan_ab M N K [--threads T] [--trans XY] [--packed] [--rounds R] "
                    "[--offset BYTES] CHOICE...\n  CHOICE: rules, or \"nv=2 kc=0 nc=0 b=rules split=N\"\n");
    return 2;
}

/* n floats `offset` bytes past a 64-byte boundary, the block that holds
 * them in *block (to free). */
static float *seeded(int64_t n, unsigned seed, int offset, void **block)
{
    *block = aligned_alloc(64, ((size_t)(n > 0 ? n : 1) * sizeof(float) + 64 + 63) / 64 * 64);
    if (!*block)
        return NULL;
    float *v = (float *)((char *)*block + offset);
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)((seed >> 16) % 200) / 100.0f - 1.0f;
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return usage();
    int64_t M = atoll(argv[1]), N = atoll(argv[2]), K = atoll(argv[3]);
    int threads = 1, rounds = 21, offset = 0;
    bool packed = false, trans_a = false, trans_b = false;
    const char *choices[MAX_CHOICES];
    int nchoices = 0;
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--offset") == 0 && i + 1 < argc) {
            offset = atoi(argv[++i]);
            if (offset < 0 || offset >= 64 || offset % 4 != 0)
                return usage();
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--trans") == 0 && i + 1 < argc && strlen(argv[i + 1]) == 2) {
            trans_a = argv[i + 1][0] == 'T';
            trans_b = argv[++i][1] == 'T';
        } else if (strcmp(argv[i], "--packed") == 0)
            packed = true;
        else if (nchoices < MAX_CHOICES)
            choices[nchoices++] = argv[i];
        else
            return usage();
    }
    if (M < 1 || N < 1 || K < 1 || threads < 1 || nchoices == 0 || rounds < 1 ||
        rounds > MAX_ROUNDS)
        return usage();

    tessel_ctx *ctx;
    tessel_status st = tessel_ctx_create(&ctx, threads);
    if (TESSEL_IS_ERROR(st)) {
        fprintf(stderr, "plan_ab: %s: %s\n", tessel_status_str(st), tessel_last_error());
        return 1;
    }
    const plan_model *model = api_ctx_model(ctx);
    op_env env = {model, ctx->pool, ctx->buffers, threads};
    void *a_block, *b_block, *c_block;
    float *A = seeded(M * K, 1, offset, &a_block), *B = seeded(K * N, 2, offset, &b_block);
    float *C = seeded(M * N, 3, offset, &c_block);
    if (!A || !B || !C)
        return 1;
    gemm_call call = {.M = M, .N = N, .K = K, .alpha = 1.0f, .beta = 0.0f, .A = A,
                      .a_rs = trans_a ? 1 : K, .a_cs = trans_a ? M : 1, .B = B,
                      .b_rs = trans_b ? 1 : N, .b_cs = trans_b ? K : 1, .C = C, .ldc = N};
    if (packed && !(call.packed = op_pack_b(model, B, call.b_rs, call.b_cs, K, N)))
        return 1;
    gemm_shape shape;
    int plan_threads;
    op_gemm_key(&env, &call, 1, &shape, &plan_threads);

    gemm_plan plans[MAX_CHOICES];
    for (int c = 0; c < nchoices; c++) {
        plan_choice pc = {0};
        if (strcmp(choices[c], "rules") != 0 && plan_choice_parse(choices[c], &pc) != 0) {
            fprintf(stderr, "plan_ab: cannot read the choice \"%s\"\n", choices[c]);
            return 2;
        }
        plan_gemm_choice(model, &shape, plan_threads, &pc, &plans[c]);
        char knobs[128];
        plan_choice_format(&plans[c].choice, knobs, sizeof knobs);
        printf("[%d] %-8s %s\n", c, strcmp(choices[c], "rules") == 0 ? "rules" : "choice", knobs);
    }

    /* Calls per batch from one warm-up call of the first plan. */
    double t0 = bench_now_s();
    op_sgemm_plan(&env, &call, &plans[0], 1, 0, 0, 0);
    double one = bench_now_s() - t0;
    int calls = one > 0 ? (int)(BATCH_SECONDS / one) + 1 : 1000;
    for (int c = 0; c < nchoices; c++)
        for (int i = 0; i < calls; i++)
            op_sgemm_plan(&env, &call, &plans[c], 1, 0, 0, 0);
    static double t[MAX_CHOICES][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++)
        for (int c = 0; c < nchoices; c++) {
            t0 = bench_now_s();
            for (int i = 0; i < calls; i++)
                op_sgemm_plan(&env, &call, &plans[c], 1, 0, 0, 0);
            t[c][r] = (bench_now_s() - t0) / calls;
        }

    double flops = 2.0 * (double)M * (double)N * (double)K, first = 0.0;
    printf("%lldx%lldx%lld %c%c%s, %d thread(s), %d rounds of %d calls:",
           (long long)M, (long long)N, (long long)K, trans_a ? 'T' : 'N', trans_b ? 'T' : 'N',
           packed ? " pre-packed" : "", threads, rounds, calls);
    for (int c = 0; c < nchoices; c++) {
        double med = bench_median(t[c], rounds);
        if (c == 0)
            first = med;
        printf("  [%d] %.1f GFLOP/s (%.3f)", c, flops / med * 1e-9, med / first);
    }
    printf("\n");
    if (call.packed)
        op_packed_free((struct tessel_packed_b *)call.packed);
    free(a_block);
    free(b_block);
    free(c_block);
    tessel_ctx_destroy(ctx);
    return 0;
}
