/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn/state.h -- the object behind a state handle, and the state's
 * internals shared by the paths (attn/state.c, attn/state_small.c).
 * Not installed.
 */
#ifndef LINATTN_ATTN_STATE_H
#define LINATTN_ATTN_STATE_H

#include "attn/plan.h"
#include "attn/problem.h"

struct X(state_s) {
    const X(plan) *plan;
    int64_t tokens;
    /* The keys' total weight (sum w_j: tokens when every key weighed 1),
     * the count of LINATTN_DENOM_COUNT. */
    double mass;
    /* Stabilizing shift of the exponential feature maps: the stored S and
     * z are the true sums times exp(-shift).  Always 0 for the maps that
     * need none (identity, elu+1, ReLU). */
    double shift;
    acc_t *acc;  /* m x (e+1), row major: [S | z], accumulated            */
    real *sz;    /* the same in the working precision (aliases acc in     */
                 /* double); queries read only this                       */
    /* Overflow bookkeeping (state.c): poisoned when a NaN or Inf reached
     * acc from non-finite input (or a restored checkpoint), so that its
     * queries let them propagate instead of reporting an overflow; bound
     * >= max |acc| (+Inf when unknown), which lets a few-row update skip
     * its overflow check when the sum cannot leave the range. */
    int poisoned;
    double bound;
    /* 0 between calls: a packed call that absorbs marks its states while
     * it checks that no two sequences share one (attn/packed.c). */
    int mark;
};

/* ---- state internals (state.c) ---- */

/* A zero state for plan whose arrays live in caller-provided memory of
 * XI(state_bytes)(plan) bytes (used by the one-call paths). */
size_t XI(state_bytes)(const X(plan) *plan);
void XI(state_init)(X(state) *st, const X(plan) *plan, void *mem);

/* The shift of an accumulator (len entries at *shift; has: it holds
 * tokens) about to absorb keys whose largest exponent is bmax: raised to
 * bmax when that is larger, the accumulator rescaled by the returned
 * factor exp(old - bmax) (1 when nothing changed); set to bmax when it
 * holds nothing. */
double XI(raise_shift)(acc_t *acc, int64_t len, double *shift, int has,
                       double bmax);

/* The shift raise_shift would give: bmax when it is finite and larger (or
 * the accumulator holds nothing), else shift. */
double XI(next_shift)(double shift, int has, double bmax);

/* The factors a, b that bring an accumulator dst (at *dst_shift) and src
 * (at src_shift) to the larger shift, which *dst_shift becomes: dst =
 * a dst + b src is then their sum.  An accumulator without tokens (has
 * 0) holds zeros and its shift is meaningless; maps without shifts get
 * 1, 1 and leave *dst_shift alone. */
void XI(shift_factors)(const X(plan) *plan, double *dst_shift, int dst_has,
                       double src_shift, int src_has, acc_t *a, acc_t *b);

/* dst (at *dst_shift) += src (at src_shift), both brought to the larger
 * shift first (the accumulators hold their sums times exp(-shift));
 * dst_has, src_has: the accumulator holds tokens (an empty one's shift
 * is meaningless). */
void XI(acc_add)(const X(plan) *plan, acc_t *dst, double *dst_shift,
                 int dst_has, const acc_t *src, double src_shift, int src_has,
                 int64_t len);

/* Republishes the working-precision copy sz from acc, after acc was
 * written directly (a restored checkpoint). */
void XI(state_publish)(X(state) *st);

/* Key weights: the values v (rows [0, n), e columns; weights w) as the
 * GEMMs read them against features whose rows of weight 0 are exactly 0.
 * v itself when direct (the caller may read it in place) and its rows of
 * weight 0 are finite: 0 times a finite value adds exactly nothing.  Else
 * a copy into buf (n x e entries) with those rows zeroed, as 0 * NaN and
 * 0 * Inf are NaN: what a weight 0 holds reaches no result.  The copy is
 * row major (ld e) when !direct; when direct it keeps v's layout, so that
 * NaN there and zeros there give the same bits. */
XI(view) XI(masked_values)(XI(view) v, int64_t e, const real *w, int64_t n,
                           int direct, real *buf);

/* A query that one row of keys answers in its update's own pass (a
 * decoding step, kern.h's step): phi, its features; y (e + 1 entries) its
 * numerators and normalizer, once done is set (the update took the
 * few-row path). */
typedef struct {
    const real *phi;
    real *y;
    int done;
} XI(fused);

/* st += the state of pb's keys and values (its nk rows of K and V),
 * after the call's checks: 0 or LINATTN_ENOMEM (st unchanged).  Sums that
 * finite inputs push beyond the range are LINATTN_EOVERFLOW, st
 * unchanged, when strict (linattn_d_state_update); else they are kept
 * (the one-call paths, whose queries then report the rows they reach). */
int XI(state_update_run)(X(state) *st, const XI(problem) *pb, int strict);

/* As state_update_run, answering fq's query in the update's pass when
 * it can (fq->done then set; fq NULL: none). */
int XI(state_update_fused)(X(state) *st, const XI(problem) *pb, int strict,
                           XI(fused) *fq);

/* st = the sums of its keys and rows [0, n) of pb's keys and values,
 * built elsewhere (a causal call's carried state): S m x e with leading
 * dimension ldacc, z in zacc, at shift.  Sums that finite inputs pushed
 * beyond the range are refused as linattn_d_state_update refuses them:
 * LINATTN_EOVERFLOW, st unchanged. */
int XI(state_take)(X(state) *st, const acc_t *acc, int64_t ldacc,
                   const acc_t *zacc, double shift, const XI(problem) *pb,
                   int64_t n);

/* The queries of pb (its nq rows of Q into its outputs out, num, den,
 * each may be absent) against st, after the call's checks: 0,
 * LINATTN_ENOMEM, LINATTN_EDENOM or LINATTN_EOVERFLOW (with *bad_row), as
 * linattn_d_state_query. */
int XI(state_query_run)(const X(state) *st, const XI(problem) *pb,
                        int64_t *bad_row);

/* dst = src, for states whose plans fit each other (XI(state_fits_plan)):
 * the sums, the shift, the token count and the overflow bookkeeping. */
void XI(state_assign)(X(state) *dst, const X(state) *src);

/* Nonzero when st belongs to a plan whose states may be merged with
 * plan's: the same fingerprint, map and sizes. */
int XI(state_fits_plan)(const X(state) *st, const X(plan) *plan);

/* ---- a few rows at a time (state_small.c) ---- */

/* Nonzero when an update or query of n rows takes the small path: plain
 * loops on stack workspace, no allocation, no BLAS. */
int XI(small_ok)(const X(plan) *plan, int64_t n);
/* As state_update_run / state_query_run, for small_ok sizes.  The
 * update does not count the tokens; it publishes (the float copy in the
 * same pass) and returns 1 when done, 0 (state unchanged) when its sums
 * could leave the range or the inputs are not finite: the blocked path
 * then decides.  b: a decayed update's running sums of the rows' log
 * decays (attn/decay.h), NULL without; fq: a query its last row's pass
 * answers (NULL: none). */
int XI(state_update_small)(X(state) *st, XI(view) k, XI(view) v, int64_t n,
                           const double *b, XI(fused) *fq);
int XI(state_query_small)(const X(state) *st, const XI(problem) *pb,
                          int64_t *bad_row);

/* linattn_d_state_update of pb's one row of keys then
 * linattn_d_state_query of its one query, after the call's checks, with
 * their statuses, in one pass over the state when the update takes the
 * few-row path (the same bits). */
int XI(state_step_run)(X(state) *st, const XI(problem) *pb, int64_t *bad_row);

#endif
