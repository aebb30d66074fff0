/*
 * ukernel_sizes.h - which (mr, nv) members each ISA class builds: every
 * height up to what its vector registers hold (mr * nv accumulators, nv B
 * vectors and one A broadcast: mr * nv + nv + 1 <= registers), so any M can
 * be covered exactly by heights of one family. Listed as X(mr, nv) so the
 * one list both defines the functions and fills the table.
 */
#ifndef TESSEL_UKERNEL_SIZES_H
#define TESSEL_UKERNEL_SIZES_H

/* 32 vector registers: AVX-512, NEON. */
#define UK_SIZES_32REG(X) \
    X(1, 1) X(2, 1) X(3, 1) X(4, 1) X(5, 1) X(6, 1) X(7, 1) X(8, 1) X(9, 1) X(10, 1) X(11, 1) X(12, 1) X(13, 1) X(14, 1) X(15, 1) X(16, 1) \
    X(1, 2) X(2, 2) X(3, 2) X(4, 2) X(5, 2) X(6, 2) X(7, 2) X(8, 2) X(9, 2) X(10, 2) X(11, 2) X(12, 2) X(13, 2) X(14, 2) \
    X(1, 3) X(2, 3) X(3, 3) X(4, 3) X(5, 3) X(6, 3) X(7, 3) X(8, 3) X(9, 3) \
    X(1, 4) X(2, 4) X(3, 4) X(4, 4) X(5, 4) X(6, 4)

/* 16 vector registers: AVX2, SSE2. */
#define UK_SIZES_16REG(X) \
    X(1, 1) X(2, 1) X(3, 1) X(4, 1) X(5, 1) X(6, 1) X(7, 1) X(8, 1) X(9, 1) X(10, 1) X(11, 1) X(12, 1) X(13, 1) X(14, 1) \
    X(1, 2) X(2, 2) X(3, 2) X(4, 2) X(5, 2) X(6, 2) \
    X(1, 3) X(2, 3) X(3, 3) X(4, 3) \
    X(1, 4) X(2, 4)

/* Dot-product members X(mr, nj) for op(B) = B^T read in place: mr rows of
 * A and nj rows of B^T, both contiguous along k, vectorised along k; each
 * needs mr * nj accumulators, mr + nj operand vectors. */
/* 32 vector registers. */
#define UK_DOT_SIZES_32REG(X) \
    X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(1, 5) X(1, 6) X(1, 7) X(1, 8) \
    X(2, 1) X(2, 2) X(2, 3) X(2, 4) X(2, 5) X(2, 6) X(2, 7) X(2, 8) \
    X(3, 1) X(3, 2) X(3, 3) X(3, 4) X(3, 5) X(3, 6) X(3, 7) \
    X(4, 1) X(4, 2) X(4, 3) X(4, 4) X(4, 5)

/* 16 vector registers. */
#define UK_DOT_SIZES_16REG(X) \
    X(1, 1) X(1, 2) X(1, 3) X(1, 4) X(1, 5) X(1, 6) X(1, 7) \
    X(2, 1) X(2, 2) X(2, 3) X(2, 4) \
    X(3, 1) X(3, 2) X(3, 3) \
    X(4, 1) X(4, 2)

/* The row form (one row of A times B) keeps UK_ROW_VECS vectors of C in
 * registers, half the register file, and covers fewer with members of
 * every smaller count, listed as X(nv). */
#define UK_ROW_VECS_32REG 16
#define UK_ROW_RESTS_32REG(X) \
    X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define UK_ROW_VECS_16REG 8
#define UK_ROW_RESTS_16REG(X) X(1) X(2) X(3) X(4) X(5) X(6) X(7)

#endif /* TESSEL_UKERNEL_SIZES_H */
