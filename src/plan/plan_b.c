/*
 * plan_b.c - where op(B) lies, as the planner's rules ask it: read in
 * place or not, from memory on every call or kept by a cache, and whether
 * its rows, a fixed stride apart, fall into the same few L1 sets. Plans
 * are keyed by shape, so a row stride here is N floats (ldb taken as N).
 */
#include "plan/plan_rules.h"

/* B larger than this many L2s is taken to come from memory on every
 * call: no cache keeps it between calls, and read in place it is
 * blocked to stream along its rows (plan_gemm.c, STREAM_LINES, where
 * the blocking and this bound were measured). */
static const int64_t STREAM_B_L2S = 16;

/* Whether op(B) can be read in place: its rows contiguous (not B^T) and
 * not pre-packed into panels. */
bool plan_b_rows_in_place(const gemm_shape *s)
{
    return !s->transb && s->prepacked_kc == 0;
}

/* Whether op(B), rows contiguous and not pre-packed, comes from memory on
 * every call. */
bool plan_b_streams_from_memory(const plan_model *m, const gemm_shape *s)
{
    return plan_b_rows_in_place(s) &&
           s->K * s->N * (int64_t)sizeof(float) > STREAM_B_L2S * m->l2_bytes;
}

/* Whether op(B) takes more than 1 / parts of the L3. */
bool plan_b_outgrows_l3_part(const plan_model *m, const gemm_shape *s, int parts)
{
    const hw_cache *l3 = hw_data_cache(&m->hw, 3);
    return l3 && s->K * s->N * (int64_t)sizeof(float) > l3->size_bytes / parts;
}

/* Whether B's rows, read in place, collide in the L1: a row stride that
 * is a multiple of half an L1 way (2 KiB of 4 KiB here) puts the same
 * column of every row in one or two of its sets, so a panel's k steps
 * evict each other (taking ldb as N, as plans are keyed). Strides of 3
 * KiB (768 floats) spread over four and were not seen to suffer. */
int64_t plan_l1_half_way(const plan_model *m)
{
    const hw_cache *l1 = hw_data_cache(&m->hw, 1);
    return l1 && l1->ways > 0 ? l1->size_bytes / l1->ways / 2 : 0;
}

bool plan_b_rows_collide(const plan_model *m, const gemm_shape *s)
{
    int64_t half_way = plan_l1_half_way(m);
    return half_way > 0 && s->N * (int64_t)sizeof(float) % half_way == 0;
}

/* Whether consecutive rows of B (N floats apart: a B of its own), read
 * in place, collide so (Zen 4: 3072 x 768's rows are 12 KiB apart,
 * 1024 x 4096's 16 KiB). A tile reading such a B walks a column strip
 * whose lines crowd a set or two, so the lines it asks for ahead evict
 * each other before use; the row form reads B along its rows instead. */
bool plan_b_rows_crowd_l1_sets(const plan_model *m, const gemm_shape *s)
{
    return plan_b_rows_in_place(s) && plan_b_rows_collide(m, s);
}
