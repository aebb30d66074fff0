/*
 * ukernel_generic.c - the ukernel family for any target the compiler
 * supports, with 4-float vectors: SSE2 on x86-64 (16 registers), NEON on
 * arm64 (32 registers). Compiled with no target flags, so it runs wherever
 * the library does.
 */
#define UK_VEC_FLOATS 4
#include "kernels/ukernel_template.h"
#include "kernels/ukernel_sizes.h"

#if defined(__aarch64__)
#define UK_SIZES_GENERIC UK_SIZES_32REG
#else
#define UK_SIZES_GENERIC UK_SIZES_16REG
#endif

UK_SIZES_GENERIC(UK_MEMBER)

const ukernel_entry ukernel_table_generic[] = {UK_SIZES_GENERIC(UK_ENTRY)};
const int ukernel_table_generic_count = sizeof ukernel_table_generic / sizeof ukernel_table_generic[0];
