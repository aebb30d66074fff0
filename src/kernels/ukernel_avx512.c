/*
 * ukernel_avx512.c - the ukernel family for AVX-512 (16 floats a vector, 32
 * registers). Compiled with -mavx512f; only called when the probe finds
 * AVX-512 and TESSEL_ISA allows it.
 */
#define UK_VEC_FLOATS 16
#include "kernels/ukernel_sizes.h"
#define UK_ROW_VECS UK_ROW_VECS_32REG
#define UK_ROW_RESTS UK_ROW_RESTS_32REG
#include "kernels/ukernel_template.h"
#include "kernels/epilogue_template.h"

UK_SIZES_32REG(UK_MEMBER)

const ukernel_entry ukernel_table_avx512[] = {UK_SIZES_32REG(UK_ENTRY)};
const int ukernel_table_avx512_count = sizeof ukernel_table_avx512 / sizeof ukernel_table_avx512[0];

UK_DOT_SIZES_32REG(UK_DOT_MEMBER)

const ukernel_entry ukernel_dot_table_avx512[] = {UK_DOT_SIZES_32REG(UK_DOT_ENTRY)};
const int ukernel_dot_table_avx512_count =
    sizeof ukernel_dot_table_avx512 / sizeof ukernel_dot_table_avx512[0];

const ukernel_packers ukernel_packers_avx512 = UK_PACKERS;
const ukernel_fn ukernel_row_avx512[UK_ROW_FORM_COUNT] = UK_ROW_FORMS;
const int ukernel_row_vecs_avx512 = UK_ROW_VECS;
const ukernel_epilogue_fn ukernel_epilogue_avx512 = uk_epilogue;
