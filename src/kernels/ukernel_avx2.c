/*
 * ukernel_avx2.c - the ukernel family for AVX2 + FMA (8 floats a vector, 16
 * registers). Compiled with -mavx2 -mfma; only called when the probe finds
 * both and TESSEL_ISA allows them.
 */
#define UK_VEC_FLOATS 8
#include "kernels/ukernel_sizes.h"
#define UK_ROW_VECS UK_ROW_VECS_16REG
#define UK_ROW_RESTS UK_ROW_RESTS_16REG
#include "kernels/ukernel_template.h"
#include "kernels/epilogue_template.h"

UK_SIZES_16REG(UK_MEMBER)

const ukernel_entry ukernel_table_avx2[] = {UK_SIZES_16REG(UK_ENTRY)};
const int ukernel_table_avx2_count = sizeof ukernel_table_avx2 / sizeof ukernel_table_avx2[0];

UK_DOT_SIZES_16REG(UK_DOT_MEMBER)

const ukernel_entry ukernel_dot_table_avx2[] = {UK_DOT_SIZES_16REG(UK_DOT_ENTRY)};
const int ukernel_dot_table_avx2_count =
    sizeof ukernel_dot_table_avx2 / sizeof ukernel_dot_table_avx2[0];

const ukernel_packers ukernel_packers_avx2 = UK_PACKERS;
const ukernel_fn ukernel_row_avx2[UK_ROW_FORM_COUNT] = UK_ROW_FORMS;
const int ukernel_row_vecs_avx2 = UK_ROW_VECS;
const ukernel_epilogue_fn ukernel_epilogue_avx2 = uk_epilogue;
