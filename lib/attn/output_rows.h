/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn/output_rows.h -- writing a block of output rows: normalizers
 * against the plan's policy, division, GEMM straight into the caller's
 * outputs, and where a non-finite output came from (attn/output_rows.c).
 * Not installed.
 */
#ifndef LINATTN_ATTN_OUTPUT_ROWS_H
#define LINATTN_ATTN_OUTPUT_ROWS_H

#include "attn/state.h"

/* ---- normalization (normalize.c) ---- */

/* Makes den[0, rows) the normalizers of a block: under LINATTN_DENOM_COUNT
 * den[i] = count0 + i * step (the keys row i sees: step 1 in the causal
 * paths, 0 otherwise), else den as given (phi . z); then adds the plan's
 * eps.  Returns the number of leading rows whose normalizer satisfies the
 * plan's policy (rows when !check). */
int64_t XI(good_rows)(const X(plan) *plan, real *den, int64_t rows,
                      int check, int64_t count0, int64_t step);

/* Where a non-finite output came from.  Finite inputs never give one with
 * status 0: a row whose inputs were all finite but whose output (or
 * requested numerator or normalizer) is not is LINATTN_EOVERFLOW, while
 * NaN and Inf in the inputs propagate as documented.  Row r's inputs are
 * its query (q, d columns; q.p NULL: none) and either a state (st: its
 * poisoned flag) or the keys and values it sees (k, v, nk rows of d and e
 * columns; causal: rows j <= r only).  first_bad caches the first key
 * row holding NaN or Inf (-1: not looked yet); one origin per thread. */
typedef struct {
    XI(view) q, k, v;
    int64_t d, e, nk;
    int causal;
    const X(state) *st;
    int64_t first_bad;
} XI(origin);

/* Nonzero when row r's inputs are all finite (see XI(origin)). */
int XI(inputs_finite)(XI(origin) *o, int64_t r);

/* The first of rows [0, rows) of a written block (out, num: rows x e in
 * layout, den: rows entries, each pointing at the block's first row and
 * each may be NULL) that holds a non-finite value although its inputs were
 * finite, or rows.  Block row i is row orow + i of the origin o. */
int64_t XI(first_overflow)(int layout, int64_t rows, int64_t e,
                           const real *out, int64_t ldout, const real *num,
                           int64_t ldnum, const real *den, XI(origin) *o,
                           int64_t orow);

/* inv[i] = 1 / den[i] over rows entries; nonzero when every one is a
 * normal number, so that multiplying by inv differs from dividing by den
 * by rounding only (the fused kernels, which multiply, may then be used;
 * else divide_rows). */
int XI(reciprocals)(const real *den, int64_t rows, real *inv);

/* a (rows x cols, layout colmajor, lda) = b (same shape, b_colmajor, ldb;
 * b may be a itself) with row i divided by den[i]: times the reciprocal
 * when that is a normal number, by division otherwise (tiny or huge
 * normalizers).  inv: workspace of rows entries.  Returns nonzero when a
 * value written is not finite. */
int XI(divide_rows)(real *a, int colmajor, int64_t lda, const real *b,
                    int b_colmajor, int64_t ldb, int64_t rows, int64_t cols,
                    const real *den, real *inv);

/* Writes rows [0, rows) of a block to the caller's outputs at row offset r0
 * (each of out, num, den may be NULL): num = A B (rows x inner times
 * inner x e: phi(Q_b) S, or scores times V) by GEMM straight into the
 * output, den from den_b (eps included), out = num / den (by the
 * micro-kernel's scaled GEMM when it takes the shape and the reciprocals
 * are normal, else divide_rows).
 * inv is workspace of rows entries; y, of rows x e entries, is needed only
 * when a leading dimension of out or num is beyond the BLAS integer (the
 * GEMM then goes through y).  Returns nonzero when a value written is not
 * finite (then XI(first_overflow) tells whether that is an overflow). */
int XI(write_rows)(const X(plan) *plan, XI(view) a, XI(view) b,
                    int64_t inner, const real *den_b, int64_t rows,
                   int layout, int64_t r0, real *out, int64_t ldout,
                   real *num, int64_t ldnum, real *den, real *inv, real *y);

/* a (rows x cols, layout colmajor, lda) = b (same shape, layout b_colmajor,
 * ldb) with row i multiplied by s[i], or copied when s is NULL; nonzero
 * when a value written is not finite. */
int XI(put_rows)(real *a, int colmajor, int64_t lda, const real *b,
                  int b_colmajor, int64_t ldb, int64_t rows, int64_t cols,
                  const real *s);

/* Nonzero when write_rows needs its y workspace for these outputs. */
int XI(write_needs_y)(const real *out, int64_t ldout, const real *num,
                      int64_t ldnum);

#endif
