/*
 * pack.c - copies blocks of A and B into the contiguous micro-panel layouts
 * the ukernels stream through (see ukernel.h). A source whose rows already
 * run the panel's way is copied row by row; one that runs across it
 * (op(A) rows contiguous along k, op(B) = B^T) goes through the ISA's
 * register transpose (ukernel_template.h).
 */
#include <string.h>

#include "kernels/ukernel.h"

void ukernel_pack_a(hw_isa isa, int mr, int64_t k, const float *src, int64_t rs, int64_t cs,
                    float *dst)
{
    if (rs == 1) { /* op(A) columns are contiguous: each k step copies mr floats */
        for (int64_t p = 0; p < k; p++)
            memcpy(dst + p * mr, src + p * cs, (size_t)mr * sizeof(float));
    } else { /* rows contiguous along k (cs == 1) */
        ukernel_packers_lookup(isa)->transpose(mr, mr, k, src, rs, dst);
    }
}

void ukernel_pack_b(hw_isa isa, int nr, int n, int64_t k, const float *src, int64_t rs,
                    int64_t cs, float *dst)
{
    if (cs == 1) /* rows of op(B) are contiguous: copy them, zero the rest */
        ukernel_packers_lookup(isa)->copy_rows(nr, n, k, src, rs, dst);
    else /* op(B) = B^T: columns contiguous along k (rs == 1) */
        ukernel_packers_lookup(isa)->transpose(nr, n, k, src, cs, dst);
}
