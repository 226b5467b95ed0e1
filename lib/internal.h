/*
 * internal.h -- the objects behind the opaque handles, and the helpers the
 * precision-generic files share.  Not installed.
 */
#ifndef LINATTN_INTERNAL_H
#define LINATTN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "blas.h"
#include "prec.h"

/* Default rows per block.  Large enough that OpenBLAS runs the skinny
 * GEMMs near their best rate (it loses half its speed below ~1000 rows),
 * small enough that a block of phi stays in the last-level cache:
 * 4096 x 64 doubles = 2 MiB.  Measured with benchmarks/bench_core. */
#define LINATTN_DEFAULT_BLOCK 4096

/* The naive baselines hold rows x nk scores; this caps rows * nk. */
#define LINATTN_NAIVE_SCORES 4194304

struct X(plan_s) {
    int map;
    int64_t d, m, e;
    int64_t block;
    int denom;
    real eps;
    uint64_t seed;
    uint64_t fingerprint; /* equal for plans whose states may be merged */
};

struct X(state_s) {
    const X(plan) *plan;
    int64_t tokens;
    acc_t *acc;  /* m x (e+1), row major: [S | z], accumulated            */
    real *sz;    /* the same in the working precision (aliases acc in     */
                 /* double); queries read only this                       */
};

/* ---- feature maps (featmap.c) ---- */

/* Nonzero when phi(x) = x, so callers may hand x to BLAS directly. */
int XI(map_is_identity)(const X(plan) *plan);

/* phi of rows [0, rows) of x into out (rows x m, row major, ld m).  When
 * colsum is not NULL the column sums of the result are added to it. */
void XI(phi_rows)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                  acc_t *colsum);

/* Column sums of rows [0, rows) of a rows x cols view, added to sum. */
void XI(colsum_view)(XI(view) x, int64_t rows, int64_t cols, acc_t *sum);

/* In place elementwise exp over count contiguous values. */
void XI(exp_inplace)(real *x, int64_t count);

/* ---- normalization (normalize.c) ---- */

/* y holds rows x (e+1) values [num | den] (row major, ld e+1); its last
 * column is overwritten (reciprocals).  Writes rows
 * [0, rows) to out/num/den (each may be NULL) at row offset r0, applying
 * the plan's eps and policy when out is requested.  Returns -1, or the
 * index within the block of the first row whose normalizer breaks the
 * policy, in which case only the rows before it were written. */
int64_t XI(finish_rows)(const X(plan) *plan, real *y, int64_t rows,
                        int layout, int64_t r0, real *out, int64_t ldout,
                        real *num, int64_t ldnum, real *den);

/* ---- state internals (state.c) ---- */

/* A zero state for plan whose arrays live in caller-provided memory of
 * XI(state_bytes)(plan) bytes (used by the one-call paths). */
size_t XI(state_bytes)(const X(plan) *plan);
void XI(state_init)(X(state) *st, const X(plan) *plan, void *mem);

/* update and query after argument checks (same meaning as the public
 * functions); both return 0, LINATTN_ENOMEM or LINATTN_EDENOM. */
int XI(state_update_checked)(X(state) *st, XI(view) k, XI(view) v, int64_t n);
int XI(state_query_checked)(const X(state) *st, int layout, int64_t n,
                            XI(view) q, real *out, int64_t ldout, real *num,
                            int64_t ldnum, real *den, int64_t *bad_row);

/* ---- attention.c ---- */

/* Argument checks of linattn_d_attention, shared with the naive path. */
int XI(attention_args)(const X(plan) *plan, int layout, int64_t nq,
                       int64_t nk, const real *q, int64_t ldq, const real *k,
                       int64_t ldk, const real *v, int64_t ldv,
                       const real *out, int64_t ldout);

/* Rows per block for a plan. */
static inline int64_t XI(block_rows)(const X(plan) *plan)
{
    return plan->block;
}

#endif
