/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kern_grad.h -- the backward passes' own loops, built once per code path as
 * lib/kernels/kern.c is (lib/kernels/kern_grad.c, LINATTN_KERN_LEVEL 0
 * generic, 1 AVX2 + FMA, 2 AVX-512): the compiler vectorizes the same plain
 * loops for each target, and the table of the level in force is used.
 */
#ifndef LINATTN_KERN_GRAD_H
#define LINATTN_KERN_GRAD_H

#include <stdint.h>
#include "common/prec.h"

typedef struct {
    /* Rows [j0, j1) of y (ldy) += the diagonal block of tril(A)^T X:
     * y_j += sum_{i = j..j1-1} a[i][j] x_i (cols entries), reading only
     * those entries of a (lda) and rows of x (ldx). */
    void (*tri_t_diag)(const real *a, int64_t lda, const real *x,
                       int64_t ldx, int64_t cols, int64_t j0, int64_t j1,
                       real *y, int64_t ldy);
    /* [g h] of rows rows (ld e + 1) from rows of G and out (row major,
     * ldg, ldo) and den: g = G / den, h = -(G . out) / den (h = 0 when
     * count: den is then a count of keys); rows whose 1 / den is not a
     * normal number are divided, the others multiplied by it. */
    void (*gh)(real *gh, const real *g, int64_t ldg, const real *o,
               int64_t ldo, const real *den, int64_t rows, int64_t e,
               int count);
    /* y = a times the derivative of elu + 1 (slope min(f, 1)) or of ReLU
     * (f > 0; 0 at 0; NaN f gives NaN) from the features f, or y = a
     * (the identity's), over n values; y may be a.  Nonzero when a value
     * of y is not finite (the stores are looked at as they are made:
     * prec.h's y * 0). */
    int (*elu1_slope)(real *y, const real *a, const real *f, int64_t n);
    int (*relu_slope)(real *y, const real *a, const real *f, int64_t n);
    int (*copy)(real *y, const real *a, int64_t n);
} XI(gkern);

/* The table of the level in force (kernels/dispatch.c, as kern.h's). */
const XI(gkern) *XI(gkern_now)(void);

#endif
