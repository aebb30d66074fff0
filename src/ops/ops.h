/*
 * ops.h - the operators: loop nests that execute a plan with ukernels.
 * Arguments arrive checked (src/api/ does that); an op fails only when
 * memory runs out, and then before writing anything.
 */
#ifndef TESSEL_OPS_H
#define TESSEL_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "plan/plan.h"
#include "runtime/runtime.h"
#include "tessel.h"

/* What the operators run with: the model, the pool, the buffer cache. */
typedef struct op_env {
    const plan_model *model;
    rt_pool *pool;
    rt_buffers *buffers;
    int threads;
} op_env;

/* op(B) packed once into the ukernels' panels: for each k block of kc
 * rows (the last may be shorter), its nr-wide panels one after another,
 * each kb x nr, the masked last one only as wide as its vectors. Block pc
 * starts at data + pc * n_padded. */
struct tessel_packed_b {
    hw_isa isa;
    int vec, nr;
    int64_t K, N, kc;
    int64_t n_padded;
    float *data;
};

/* One GEMM, with the transposes folded into strides: op(A)(i, p) is
 * A[i * a_rs + p * a_cs], op(B)(p, j) is B[p * b_rs + j * b_cs] unless
 * `packed` holds op(B). The epilogue, if any, follows the last k block. */
typedef struct gemm_call {
    int64_t M, N, K;
    float alpha, beta;
    const float *A;
    int64_t a_rs, a_cs;
    const float *B;
    int64_t b_rs, b_cs;
    const struct tessel_packed_b *packed;
    float *C;
    int64_t ldc;
    const tessel_epilogue *epilogue;
    /* The next matrix of a batch, asked for a few lines after each
     * ukernel call (ops/prefetch_next.c); NULL for none. */
    struct prefetch_next *ahead;
} gemm_call;

/* Packs op(B) (element (p, j) at B[p * b_rs + j * b_cs]) for the model's
 * blocking. NULL if memory ran out. */
struct tessel_packed_b *op_pack_b(const plan_model *model, const float *B, int64_t b_rs,
                                  int64_t b_cs, int64_t K, int64_t N);
void op_packed_free(struct tessel_packed_b *packed);

/* `batch` GEMMs; entry i adds i * stride_{a,b,c} to the pointers. */
tessel_status op_sgemm(const op_env *env, const gemm_call *call, int64_t batch,
                       int64_t stride_a, int64_t stride_b, int64_t stride_c);

/* The two halves of op_sgemm, for callers that show, vary or cache the
 * plan: the plan it would run (batches of small matrices get a one-thread
 * plan and are split over the batch), and running a given plan.
 * op_gemm_key gives everything that plan depends on besides the model:
 * the shape and the thread count to plan for, so that
 * plan_gemm(env->model, shape, *threads, plan) is op_plan_sgemm. */
void op_gemm_key(const op_env *env, const gemm_call *call, int64_t batch, gemm_shape *shape,
                 int *threads);
void op_plan_sgemm(const op_env *env, const gemm_call *call, int64_t batch, gemm_plan *plan);
tessel_status op_sgemm_plan(const op_env *env, const gemm_call *call, const gemm_plan *plan,
                            int64_t batch, int64_t stride_a, int64_t stride_b, int64_t stride_c);

/* How op_sgemm_plan runs `batch` matrices (1: one) on a plan, decided
 * from the call, the plan and the context alone: what `tessel explain`
 * shows. plan_batch_seconds(..., rounds, tasks) predicts the call. */
typedef struct op_schedule {
    int tasks;              /* tasks on the pool (1: the calling thread alone) */
    bool whole_matrices;    /* the tasks share out whole matrices of the batch */
    int64_t group_matrices; /* whole_matrices: taken this many at a time */
    int64_t rounds;         /* matrices the busiest task runs one after another */
    bool one_at_a_time;     /* a split along K: a batch runs matrix by matrix */
    bool shared_b;          /* a split along M: one B block shared by the tasks */
    bool prefetch_next;     /* matrix i + 1's operands asked for while i runs */
    bool in_place;          /* whole matrices by ukernels looked up once a batch */
} op_schedule;
void op_gemm_schedule(const op_env *env, const gemm_call *call, const gemm_plan *plan,
                      int64_t batch, op_schedule *run);

/* GEMMs of a few multiply-adds in all (gemm_direct.c): whether a call is
 * one (B not pre-packed, no epilogue), and running it by the plain loop,
 * no plan needed. */
bool op_sgemm_is_direct(const gemm_call *call, int64_t batch);
void op_sgemm_direct(const gemm_call *call, int64_t batch, int64_t stride_a, int64_t stride_b,
                     int64_t stride_c);

#endif /* TESSEL_OPS_H */
