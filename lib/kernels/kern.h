/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kern.h -- the library's own kernels, in one build per code path.
 *
 * lib/kernels/kern.c is compiled once per precision and per level of
 * lib/common/cpu.h: generic (the compiler's baseline), AVX2 + FMA
 * (-march=x86-64-v3) and AVX-512 (-march=x86-64-v4), where the compiler's
 * vectorization of the plain loops is joined by explicit intrinsics (the
 * table-driven exponentials, the GEMM micro-kernels).  Each build fills a
 * table; the library calls through the table of the level linattn_i_isa()
 * picks, and the tests call every table the CPU can run
 * (tests/test_kernels.c).  A build for a level the compiler cannot target
 * leaves its table out, and the next lower one is used.
 */
#ifndef LINATTN_KERN_H
#define LINATTN_KERN_H

#include <stdint.h>
#include "common/prec.h"

typedef struct {
    const char *name; /* "generic", "avx2", "avx512" */
    /* y = exp(x), y = elu(x) + 1, y = exp(x - c) over n values (y may
     * equal x): within 2 ulp, 0 below about twice the smallest normal
     * number, +inf above the overflow threshold, NaN propagates. */
    void (*exp)(real *y, const real *x, int64_t n);
    void (*elu1)(real *y, const real *x, int64_t n);
    void (*exp_shift)(real *y, const real *x, int64_t n, real c);
    /* The statistics of feature rows (f: rows x m, row i at f + i ldf):
     * den[i] = f_i . z when den is not NULL, part[j] = sum_i f_ij when
     * part is not NULL (partial column sums, in double). */
    void (*row_stats)(const real *f, int64_t ldf, int64_t rows, int64_t m,
                      const real *z, real *den, acc_t *part);
    /* C (M x N, row major, ldc) = A B, or C + A B when add; then, when s
     * is not NULL, row i times s[i].  A(i, k) = a[i ars + k aks] (so
     * either layout and either transposition), B is K x N row major
     * (ldb).  NULL in builds without a micro-kernel: callers use BLAS.
     * No row of C is read or written twice in any other order than
     * C's own, so C may be the caller's output.  With s, returns nonzero
     * when a value written is not finite (NaN or +-Inf), noted in the
     * stores themselves (LINATTN_EOVERFLOW needs no pass of its own);
     * without s, 0. */
    int (*mm)(int64_t M, int64_t N, int64_t K, const real *a, int64_t ars,
              int64_t aks, const real *b, int64_t ldb, real *c, int64_t ldc,
              int add, const real *s);
    /* One pass over an m x (e + 1) state [S | z] (row major, ld e + 1),
     * row by row: token-by-token decoding reads the state once a step.
     * With p: acc[i][j] = f acc[i][j] + p[i] v[j], v[e] = 1 (a rank-one
     * update, the state before scaled by f in the same pass: a decay or
     * a shift's move; f = 1: acc += p v^T exactly), and, when s is not
     * acc itself (float), s[i][j] = acc[i][j] in the working precision
     * (the publish, in the same pass).  With q: y[j] = sum_i q[i]
     * s[i][j], j <= e (numerators and, in y[e], the normalizer of one
     * query), from the rows as the update left them, while they are in
     * registers.  p NULL: s is only read (a query); q NULL: no query.
     * Every build sums each column over i in order, one rounding a term
     * (the FMA where the build has one): a step's query has the bits of
     * the same query made after the update, in any build. */
    void (*step)(acc_t *acc, real *s, int64_t m, int64_t e, const real *p,
                 const real *v, acc_t f, const real *q, real *y);
    /* The largest |x_i| over n values (0 for none), +Inf when one is
     * NaN or Inf. */
    double (*amax)(const real *x, int64_t n);
    /* acc += part (in double), s = acc (working precision), part = 0,
     * over len entries. */
    void (*fold)(acc_t *acc, real *part, real *s, int64_t len);
    /* Rows [i0, i1) of y (ldy) += the diagonal block of tril(A) V:
     * y_i += sum_{j = i0..i} a[i][j] v_j (cols entries), reading only
     * those entries of a (lda) and rows of v (ldv). */
    void (*tri_diag)(const real *a, int64_t lda, const real *v, int64_t ldv,
                     int64_t cols, int64_t i0, int64_t i1, real *y,
                     int64_t ldy);
    /* dst (rows x cols, lddst) = (y + tril(A) V) with row i times s[i]
     * (s NULL: 1) over a whole chunk, reading only a[i][j] (lda) and rows
     * v_j (ldv) with j <= i; dst may be y (ldy).  Returns nonzero when a
     * value written is not finite (noted in the stores, as mm's).  NULL
     * in builds without a micro-kernel (callers combine GEMMs and
     * tri_diag). */
    int (*trimm)(int64_t rows, int64_t cols, const real *a, int64_t lda,
                 const real *v, int64_t ldv, const real *y, int64_t ldy,
                 real *dst, int64_t lddst, const real *s);
    /* dst (cols x rows, ldd) = src^T (src rows x cols, lds). */
    void (*transpose)(int64_t rows, int64_t cols, const real *src,
                      int64_t lds, real *dst, int64_t ldd);
} XI(kern);

/* The tables of the builds (NULL where a level was not built). */
const XI(kern) *XI(kern_of)(int level);

/* The table of the level in force (linattn_i_isa()). */
const XI(kern) *XI(kern_now)(void);

#endif
