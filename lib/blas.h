/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * blas.h -- the only door to BLAS.  Every matrix is seen as a row-major
 * "view": a column-major argument is the row-major view of its transpose, so
 * one GEMM wrapper serves both layouts without copies.  Sizes were checked
 * against the BLAS integer range by the caller (validate.h).
 */
#ifndef LINATTN_BLAS_H
#define LINATTN_BLAS_H

#include <stdint.h>
#include <stdlib.h>
#include <cblas.h>
#include "prec.h"
#include "validate.h"

/* A rows x cols matrix as the caller passed it. */
typedef struct {
    const real *p;
    int64_t ld;
    int colmajor;
} XI(view);

/* The view of rows [r, r + count) of a. */
static inline XI(view) XI(view_rows)(XI(view) a, int64_t r)
{
    XI(view) b = a;
    b.p = a.colmajor ? a.p + r : a.p + r * a.ld;
    return b;
}

/* C (m x n, row major, ldc) = alpha op(A) op(B) + beta C, where op(A) is
 * m x k and op(B) is k x n, each transposed when trans_* is set. */
static inline void XI(gemm)(int trans_a, int trans_b, int64_t m, int64_t n,
                            int64_t k, real alpha, XI(view) a, XI(view) b,
                            real beta, real *c, int64_t ldc)
{
#if LINATTN_BLAS_INT_MAX < INT_MAX
    /* Test builds with a lowered limit (make check-hard): a size or leading
     * dimension beyond it reaching BLAS is a bug in the copy paths. */
    if (m > LINATTN_BLAS_INT_MAX || n > LINATTN_BLAS_INT_MAX ||
        k > LINATTN_BLAS_INT_MAX || a.ld > LINATTN_BLAS_INT_MAX ||
        b.ld > LINATTN_BLAS_INT_MAX || ldc > LINATTN_BLAS_INT_MAX)
        abort();
#endif
    /* A column-major view is its own transpose in row-major terms. */
    int ta = trans_a ^ a.colmajor, tb = trans_b ^ b.colmajor;
    CBLAS(gemm)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha,
                a.p, (int)a.ld, b.p, (int)b.ld, beta, c, (int)ldc);
}

/* The same with C (m x n) stored column major: C^T = op(B)^T op(A)^T. */
static inline void XI(gemm_c)(int c_colmajor, int trans_a, int trans_b,
                              int64_t m, int64_t n, int64_t k, real alpha,
                              XI(view) a, XI(view) b, real beta, real *c,
                              int64_t ldc)
{
    if (c_colmajor)
        XI(gemm)(!trans_b, !trans_a, n, m, k, alpha, b, a, beta, c, ldc);
    else
        XI(gemm)(trans_a, trans_b, m, n, k, alpha, a, b, beta, c, ldc);
}

#endif
