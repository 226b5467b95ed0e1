/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * maps/features.h -- the feature maps phi as the paths use them: rows of
 * features with the statistics gathered in the same pass, the shifted
 * maps' two steps, and the elementwise helpers (maps/features.c,
 * maps/kernelized.c).  Not installed.
 */
#ifndef LINATTN_MAPS_FEATURES_H
#define LINATTN_MAPS_FEATURES_H

#include "attn/plan.h"

/* Rows per task of the per-row work of the maps: the unit of parallel
 * splitting and of partial column sums, fixed so that results do not
 * depend on the thread count. */
#define LINATTN_ROWS_PER_TASK 256

/* Nonzero when phi(x) = x, so callers may hand x to BLAS directly. */
int XI(map_is_identity)(const X(plan) *plan);

/* Nonzero when the queries' features are the queries themselves: the
 * identity map without a query scale (callers may hand Q to BLAS). */
int XI(query_is_raw)(const X(plan) *plan);

/* Nonzero for the elementwise maps (identity, elu+1, ReLU): m = d. */
int XI(map_is_elementwise)(const X(plan) *plan);

/* What to gather about a block's feature rows while they are in cache:
 * den[i] = phi_i . z (z contiguous, m entries) when den is not NULL, and
 * colsum += sum_i phi_i when colsum is not NULL (partial: workspace of
 * XI(stats_partial_len)(plan, rows) entries). */
typedef struct {
    const real *z;
    real *den;
    acc_t *colsum;
    acc_t *partial;
} XI(stats);

int64_t XI(stats_partial_len)(const X(plan) *plan, int64_t rows);

/* f(ctx, lo, hi, part) over the fixed chunks [lo, hi) of LINATTN_ROWS_PER_TASK
 * rows of [0, rows), split over the OpenMP team when rows * width is
 * large; part is the chunk's column-sum partial (width entries) when st
 * asks for column sums, NULL otherwise, and the partials are added to
 * st->colsum in chunk order, so results do not depend on the team. */
typedef void (*XI(chunk_fn))(const void *ctx, int64_t lo, int64_t hi,
                             acc_t *part);
void XI(over_chunks)(int64_t rows, int64_t width, XI(chunk_fn) f,
                     const void *ctx, const XI(stats) *st);

/* phi of rows [0, rows) of x into out (rows x m, row major, ld m), and the
 * statistics st asks for (st may be NULL).  For the identity map out may
 * be NULL: then nothing is written and the statistics read x itself.
 * Splits the rows over the OpenMP team when the block is large.
 * The shifted maps (plan->shifted) write row i times exp(-c_i), c_i its
 * largest exponent: the query form, whose factor cancels in out_i. */
void XI(phi_rows)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                  const XI(stats) *st);

/* phi_rows of query rows, times the plan's query scale s (its statistics
 * too: den = s phi . z).  For the identity map out must not be NULL
 * unless query_is_raw. */
void XI(phi_query)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   const XI(stats) *st);

/* The shifted maps in two steps, for keys, whose shift must be chosen
 * across rows.  phi_pre leaves an intermediate form of rows [0, rows) in
 * out (rows x m) and each row's largest exponent in rexp[i] (rows
 * entries); it returns their maximum (-inf for no rows).  phi_post turns
 * out into the features times exp(-sh[i]) for row i (sh NULL: exp(-shift)
 * for every row; shift 0 gives phi itself), then takes st's statistics
 * (st may be NULL). */
double XI(phi_pre)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   double *rexp);
void XI(phi_post)(const X(plan) *plan, real *out, int64_t rows,
                  const double *rexp, const double *sh, double shift,
                  const XI(stats) *st);

/* phi itself, without shifts (what linattn_d_features returns), of rows
 * [0, rows) into out; rexp: workspace of rows entries (shifted maps). */
void XI(phi_plain)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   double *rexp);

/* The kernelized maps' part of phi_rows (maps/kernelized.c). */
void XI(kmap_rows)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   const XI(stats) *st);

/* The statistics of rows [lo, hi) of the feature view f (m columns):
 * den[i] = f_i . z and part += sum_i f_i, as requested by st. */
void XI(stats_range)(XI(view) f, int64_t m, int64_t lo, int64_t hi,
                     const XI(stats) *st, acc_t *part);

/* y = exp(x), y = elu(x) + 1 over count values (y may equal x), by the
 * vectorized kernels. */
void XI(exp_array)(real *y, const real *x, int64_t count);
void XI(elu1_array)(real *y, const real *x, int64_t count);
/* y = exp(x - c) over count values (y may equal x). */
void XI(exp_shift_array)(real *y, const real *x, int64_t count, real c);

/* Multiplies row i of the rows x cols matrix a (layout, lda) by s[i];
 * nonzero when a product is not finite. */
int XI(scale_rows)(real *a, int colmajor, int64_t lda, int64_t rows,
                   int64_t cols, const real *s);

/* In place elementwise exp over count contiguous values. */
void XI(exp_inplace)(real *x, int64_t count);

/* Rows [lo, hi) of the rows x cols view x into the same rows of out (row
 * major, ld cols). */
void XI(copy_rows)(XI(view) x, int64_t lo, int64_t hi, int64_t cols,
                   real *out);

/* Nonzero when every entry of the rows x cols view is finite. */
int XI(all_finite)(XI(view) x, int64_t rows, int64_t cols);

/* The first of rows [0, rows) of the view (cols columns) that holds a
 * non-finite value, or rows (attn/output_rows.c). */
int64_t XI(first_nonfinite_row)(XI(view) x, int64_t rows, int64_t cols);

#endif
