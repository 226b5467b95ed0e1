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
#include "kernels/kern.h"
#include "common/prec.h"
#include "common/view.h"
#include "common/validate.h"


/* Nonzero for the GEMM shapes the kernels' micro-kernel (kern.h) runs
 * faster than a BLAS: a narrow C (n columns, a few vectors) and either
 * few rows of C or a short inner dimension -- the state update (m x e
 * over a block of rows), the queries (rows x e over m) and the causal
 * chunks.  Larger, squarer products (the naive paths' scores) go to BLAS,
 * whose packing pays off there. */
static inline int XI(mm_suits)(int64_t m, int64_t n, int64_t k)
{
    return n <= 256 && (m <= 256 || k <= 256);
}

/* C (m x n, row major, ldc) = alpha op(A) op(B) + beta C, where op(A) is
 * m x k and op(B) is k x n, each transposed when trans_* is set.  On a
 * CPU whose kernels have a micro-kernel (AVX-512), the skinny products
 * with op(B) row major, alpha = 1 and beta 0 or 1 run there instead of
 * in BLAS (XI(mm_suits)). */
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
    if (!tb && alpha == 1 && (beta == 0 || beta == 1) && XI(mm_suits)(m, n, k)) {
        const XI(kern) *kn = XI(kern_now)();
        if (kn->mm) {
            kn->mm(m, n, k, a.p, ta ? 1 : a.ld, ta ? a.ld : 1, b.p, b.ld, c,
                   ldc, beta == 1, NULL);
            return;
        }
    }
    CBLAS(gemm)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha,
                a.p, (int)a.ld, b.p, (int)b.ld, beta, c, (int)ldc);
}

/* C (m x n, row major, ldc) = op(A) B with row i times s[i], in one pass
 * by the micro-kernel when it takes the shape (op(B) row major, as
 * XI(gemm) decides): returns 1 then, and sets *nonfinite when a value
 * written is not finite (the kernel notes it in its stores); returns 0
 * without touching C when it does not take the shape (the caller then
 * multiplies and scales in two passes). */
static inline int XI(gemm_scaled)(int trans_a, int64_t m, int64_t n,
                                  int64_t k, XI(view) a, XI(view) b, real *c,
                                  int64_t ldc, const real *s, int *nonfinite)
{
    int ta = trans_a ^ a.colmajor;
    const XI(kern) *kn = XI(kern_now)();
    if (b.colmajor || !kn->mm || !XI(mm_suits)(m, n, k) ||
        !linattn_i_ld_fits(ldc))
        return 0;
    *nonfinite = kn->mm(m, n, k, a.p, ta ? 1 : a.ld, ta ? a.ld : 1, b.p, b.ld,
                        c, ldc, 0, s);
    return 1;
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
