/*
 * registry.c - maps a ukernel descriptor to its compiled function. The
 * per-ISA tables are indexed once into a dense [isa][nv][mr] array so a
 * lookup is two array reads.
 */
#include <pthread.h>
#include <stddef.h>

#include "kernels/ukernel.h"

extern const ukernel_entry ukernel_table_generic[], ukernel_dot_table_generic[];
extern const int ukernel_table_generic_count, ukernel_dot_table_generic_count;
extern const ukernel_packers ukernel_packers_generic;
extern const ukernel_fn ukernel_row_generic[UK_ROW_FORM_COUNT];
extern const int ukernel_row_vecs_generic;
extern const ukernel_epilogue_fn ukernel_epilogue_generic;
#if defined(__x86_64__)
extern const ukernel_entry ukernel_table_avx2[], ukernel_dot_table_avx2[];
extern const int ukernel_table_avx2_count, ukernel_dot_table_avx2_count;
extern const ukernel_packers ukernel_packers_avx2;
extern const ukernel_fn ukernel_row_avx2[UK_ROW_FORM_COUNT];
extern const int ukernel_row_vecs_avx2;
extern const ukernel_entry ukernel_table_avx512[], ukernel_dot_table_avx512[];
extern const int ukernel_table_avx512_count, ukernel_dot_table_avx512_count;
extern const ukernel_packers ukernel_packers_avx512;
extern const ukernel_fn ukernel_row_avx512[UK_ROW_FORM_COUNT];
extern const int ukernel_row_vecs_avx512;
extern const ukernel_epilogue_fn ukernel_epilogue_avx2, ukernel_epilogue_avx512;
#endif

static const ukernel_entry *index_table[HW_ISA_COUNT][UK_MAX_NV + 1][UK_MAX_MR + 1];
static const ukernel_entry *dot_index[HW_ISA_COUNT][UK_DOT_MAX_NJ + 1][UK_DOT_MAX_MR + 1];
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static void index_one(hw_isa isa, const ukernel_entry *table, int count,
                      const ukernel_entry *dots, int ndots)
{
    for (int i = 0; i < count; i++)
        index_table[isa][table[i].nv][table[i].mr] = &table[i];
    for (int i = 0; i < ndots; i++)
        dot_index[isa][dots[i].nv][dots[i].mr] = &dots[i];
}

static void build_index(void)
{
    index_one(HW_ISA_GENERIC, ukernel_table_generic, ukernel_table_generic_count,
              ukernel_dot_table_generic, ukernel_dot_table_generic_count);
#if defined(__x86_64__)
    index_one(HW_ISA_AVX2, ukernel_table_avx2, ukernel_table_avx2_count, ukernel_dot_table_avx2,
              ukernel_dot_table_avx2_count);
    index_one(HW_ISA_AVX512, ukernel_table_avx512, ukernel_table_avx512_count,
              ukernel_dot_table_avx512, ukernel_dot_table_avx512_count);
#endif
}

ukernel_fn ukernel_dot_lookup(hw_isa isa, int mr, int nj)
{
    if (isa < 0 || isa >= HW_ISA_COUNT || mr < 1 || mr > UK_DOT_MAX_MR || nj < 1 ||
        nj > UK_DOT_MAX_NJ)
        return NULL;
    pthread_once(&index_once, build_index);
    const ukernel_entry *e = dot_index[isa][nj][mr];
    return e ? e->packed : NULL;
}

ukernel_fn ukernel_lookup(const ukernel_desc *d)
{
    if (d->isa < 0 || d->isa >= HW_ISA_COUNT || d->mr < 1 || d->mr > UK_MAX_MR ||
        d->nv < 1 || d->nv > UK_MAX_NV)
        return NULL;
    pthread_once(&index_once, build_index);
    const ukernel_entry *e = index_table[d->isa][d->nv][d->mr];
    if (!e)
        return NULL;
    return d->a_packed ? e->packed : e->strided;
}

ukernel_fn ukernel_row_lookup(hw_isa isa, ukernel_row_form form)
{
    if (form < 0 || form >= UK_ROW_FORM_COUNT)
        return NULL;
    switch (isa) {
#if defined(__x86_64__)
    case HW_ISA_AVX512: return ukernel_row_avx512[form];
    case HW_ISA_AVX2: return ukernel_row_avx2[form];
#endif
    default: return ukernel_row_generic[form];
    }
}

void ukernel_epilogue(hw_isa isa, float *c, int64_t ldc, int m, int n, const float *bias,
                      tessel_activation activation)
{
    switch (isa) {
#if defined(__x86_64__)
    case HW_ISA_AVX512: ukernel_epilogue_avx512(c, ldc, m, n, bias, activation); return;
    case HW_ISA_AVX2: ukernel_epilogue_avx2(c, ldc, m, n, bias, activation); return;
#endif
    default: ukernel_epilogue_generic(c, ldc, m, n, bias, activation); return;
    }
}

const ukernel_packers *ukernel_packers_lookup(hw_isa isa)
{
    switch (isa) {
#if defined(__x86_64__)
    case HW_ISA_AVX512: return &ukernel_packers_avx512;
    case HW_ISA_AVX2: return &ukernel_packers_avx2;
#endif
    default: return &ukernel_packers_generic;
    }
}

int ukernel_vec_floats(hw_isa isa)
{
    switch (isa) {
    case HW_ISA_AVX512: return 16;
    case HW_ISA_AVX2: return 8;
    default: return 4;
    }
}

int ukernel_row_vecs(hw_isa isa)
{
    switch (isa) {
#if defined(__x86_64__)
    case HW_ISA_AVX512: return ukernel_row_vecs_avx512;
    case HW_ISA_AVX2: return ukernel_row_vecs_avx2;
#endif
    default: return ukernel_row_vecs_generic;
    }
}
