/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn/output_rows.h -- writing a block of output rows: normalizers
 * against the plan's policy, division, GEMM straight into the caller's
 * outputs, and where a non-finite output came from (attn/output_rows.c).
 * Not installed.
 */
#ifndef LINATTN_ATTN_OUTPUT_ROWS_H
#define LINATTN_ATTN_OUTPUT_ROWS_H

#include "attn/problem.h"
#include "attn/state.h"

/* Makes den[0, rows) the normalizers of a block: under LINATTN_DENOM_COUNT
 * den[i] = count0 + i * step (the keys row i sees: step 1 in the causal
 * paths, 0 otherwise), or with the causal paths' key weights w (not
 * NULL) count0 + w[0] + ... + w[i] (count0 the weight seen before), else den as given (phi . z); then adds the plan's
 * eps.  Returns the number of leading rows whose normalizer satisfies the
 * plan's policy (rows when !check). */
int64_t XI(good_rows)(const X(plan) *plan, real *den, int64_t rows,
                      int check, double count0, int64_t step,
                      const real *w);

/* good_rows with each row's count given (a decayed stream's, under
 * LINATTN_DENOM_COUNT: den[i] = counts[i]; else den as given). */
int64_t XI(good_counts)(const X(plan) *plan, real *den, int64_t rows,
                        int check, const double *counts);

/* Nonzero when den (as the forward calls write it, eps included)
 * satisfies the plan's normalizer policy. */
int XI(den_ok)(const X(plan) *plan, real den);

/* Where a non-finite output came from.  Finite inputs never give one with
 * status 0: a row whose inputs were all finite but whose output (or
 * requested numerator or normalizer) is not is LINATTN_EOVERFLOW, while
 * NaN and Inf in the inputs propagate as documented.  Row r's inputs are
 * its query (the problem's Q; NULL: none) and either a state (st: its
 * poisoned flag) or the keys and values it sees (the problem's K and V;
 * causal: rows j <= r only).  first_bad caches the first key row holding
 * NaN or Inf (-1: not looked yet); one origin per thread. */
typedef struct {
    const XI(problem) *pb;
    const X(state) *st;
    int64_t first_bad;
} XI(origin);

/* The first of keys [0, n) whose weight w[j] is not 0 and whose row of k
 * (d columns) or v (e columns) holds NaN or Inf, or n (the keys of weight
 * 0 have no effect on any result, so they are not inputs). */
int64_t XI(first_bad_kept_key)(XI(view) k, XI(view) v, int64_t d,
                               int64_t e, const real *w, int64_t n);

/* Nonzero when row r's inputs are all finite (see XI(origin)). */
int XI(inputs_finite)(XI(origin) *o, int64_t r);

/* The first of rows [r0, r0 + rows) of pb's outputs (out, num, den; each
 * may be absent) that holds a non-finite value although its inputs were
 * finite, as an offset from r0, or rows.  Row r0 + i is row orow + i of
 * the origin o. */
int64_t XI(first_overflow)(const XI(problem) *pb, int64_t r0, int64_t rows,
                           XI(origin) *o, int64_t orow);

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

/* Writes rows [0, rows) of a block to pb's outputs at row r0 (each of
 * out, num, den may be absent): num = A B (rows x inner times inner x e:
 * phi(Q_b) S, or scores times V) by GEMM straight into the output, den
 * from den_b (eps included), out = num / den (by the micro-kernel's
 * scaled GEMM when it takes the shape and the reciprocals are normal,
 * else divide_rows).  inv is workspace of rows entries; y, of rows x e
 * entries, is needed only when a leading dimension of out or num is
 * beyond the BLAS integer (XI(write_needs_y): the GEMM then goes through
 * y).  Returns nonzero when a value written is not finite (then
 * XI(first_overflow) tells whether that is an overflow). */
int XI(write_rows)(const XI(problem) *pb, XI(view) a, XI(view) b,
                   int64_t inner, const real *den_b, int64_t rows, int64_t r0,
                   real *inv, real *y);

/* a (rows x cols, layout colmajor, lda) = b (same shape, layout b_colmajor,
 * ldb) with row i multiplied by s[i], or copied when s is NULL; nonzero
 * when a value written is not finite. */
int XI(put_rows)(real *a, int colmajor, int64_t lda, const real *b,
                  int b_colmajor, int64_t ldb, int64_t rows, int64_t cols,
                  const real *s);

/* Nonzero when write_rows needs its y workspace for pb's outputs. */
int XI(write_needs_y)(const XI(problem) *pb);

#endif
