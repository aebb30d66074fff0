/*
 * ukernel_generic.c - the ukernel family for any target the compiler
 * supports, with 4-float vectors: SSE2 on x86-64 (16 registers), NEON on
 * arm64 (32 registers). Compiled with no target flags, so it runs wherever
 * the library does.
 */
#define UK_VEC_FLOATS 4

/* gcc's first scheduling pass, on by default for aarch64 (x86 does not run
 * it), hoists the mr scalar loads of A above the FMAs that use them: each
 * takes a register, and the widest members (6x4, 8x3, 9x3, 11x2 to 14x2,
 * 16x1) then spill accumulators to the stack inside the k loop, 2 to 8
 * vector loads and stores per step. Without that pass every A value reuses
 * one register, as the register budget of ukernel_sizes.h assumes. */
#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-schedule-insns")
#endif

#include "kernels/ukernel_sizes.h"

#if defined(__aarch64__)
#define UK_SIZES_GENERIC UK_SIZES_32REG
#define UK_DOT_SIZES_GENERIC UK_DOT_SIZES_32REG
#define UK_ROW_VECS UK_ROW_VECS_32REG
#define UK_ROW_RESTS UK_ROW_RESTS_32REG
#else
#define UK_SIZES_GENERIC UK_SIZES_16REG
#define UK_DOT_SIZES_GENERIC UK_DOT_SIZES_16REG
#define UK_ROW_VECS UK_ROW_VECS_16REG
#define UK_ROW_RESTS UK_ROW_RESTS_16REG
#endif

#include "kernels/ukernel_template.h"
#include "kernels/epilogue_template.h"

UK_SIZES_GENERIC(UK_MEMBER)

const ukernel_entry ukernel_table_generic[] = {UK_SIZES_GENERIC(UK_ENTRY)};
const int ukernel_table_generic_count = sizeof ukernel_table_generic / sizeof ukernel_table_generic[0];

UK_DOT_SIZES_GENERIC(UK_DOT_MEMBER)

const ukernel_entry ukernel_dot_table_generic[] = {UK_DOT_SIZES_GENERIC(UK_DOT_ENTRY)};
const int ukernel_dot_table_generic_count =
    sizeof ukernel_dot_table_generic / sizeof ukernel_dot_table_generic[0];

const ukernel_packers ukernel_packers_generic = UK_PACKERS;
const ukernel_fn ukernel_row_generic[UK_ROW_FORM_COUNT] = UK_ROW_FORMS;
const int ukernel_row_vecs_generic = UK_ROW_VECS;
const ukernel_epilogue_fn ukernel_epilogue_generic = uk_epilogue;
