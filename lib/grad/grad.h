/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grad.h -- what the gradient files of lib/grad share (features_grad.c,
 * grad_util.c, attention_grad.c, causal_grad.c, batched_grad.c).  Not
 * installed.
 *
 * Notation (doc/gradients.md).  The attention paths compute features with
 * a positive factor per row that cancels in out_i = num_i / den_i (the
 * stabilizing shifts of doc/maps.md): f_i = phi(x_i) exp(-c_i).  The
 * backward passes work in the same scaled quantities the forward used, so
 * the adjoint they form for row i, a~_i = dL/df_i, is exp(c_i) dL/dphi_i,
 * and the product a~_i * f_i (entrywise) equals dL/dphi_i * phi(x_i): the
 * shift cancels exactly, and the map's Jacobian is applied to that
 * product (grad/features_grad.c).
 */
#ifndef LINATTN_GRAD_H
#define LINATTN_GRAD_H

#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/validate.h"

/* Accumulators of the projection's gradients, added to by the backward
 * passes: dw (wrows x d, row major, ld d) and db (wrows); either NULL
 * when not asked for. */
typedef struct {
    acc_t *dw, *db;
} XI(pgrad);

/* Workspace of phi_backward for blocks of up to rows rows. */
typedef struct {
    real *y;    /* rows x d: dx staged before it goes to the caller      */
    real *xc;   /* rows x d: x copied when its ld is beyond BLAS         */
    real *rho;  /* rows: the coefficients of the norm terms              */
    real *part; /* wrows x d: a block's dW before it is added (float)    */
    real *ones; /* rows ones: gemm_to_checked's row scales               */
} XI(fgrad_ws);

int XI(fgrad_alloc)(XI(fgrad_ws) *w, const X(plan) *plan, int64_t rows);
void XI(fgrad_free)(XI(fgrad_ws) *w);

/* dx = J^T a for rows [0, rows) of x: f (rows x m, row major, ld m) are
 * the rows' features times positive per-row factors, a (same shape) the
 * adjoints with respect to f; a is overwritten.  dx (rows x d) goes to
 * (cm, dx, lddx) at its first row; pg's accumulators (if any) get the
 * rows' dW and db added.  Returns nonzero when a value written to dx is
 * not finite. */
int XI(phi_backward)(const X(plan) *plan, XI(view) x, int64_t rows,
                     const real *f, real *a, int cm, real *dx, int64_t lddx,
                     XI(fgrad_ws) *w, const XI(pgrad) *pg);

/* ---- grad/grad_util.c ---- */

/* Rows [0, rows) of x (cols columns) into buf (row major, ld cols), the
 * rows whose key weight w is 0 as zeros (never read: the backward's view
 * of a block with keys of weight 0). */
XI(view) XI(zero_dropped)(XI(view) x, int64_t rows, int64_t cols,
                          const real *w, real *buf);

/* gh (rows x (e + 1), row major, ld e + 1) = [G_i / den_i,
 * -(G_i . out_i) / den_i]: the adjoints of the numerators and of the
 * normalizer of row i. */
void XI(gh_rows)(const X(plan) *plan, XI(view) g, XI(view) out,
                 const real *den, int64_t rows, real *gh);

/* The view v of a rows x cols matrix when BLAS can take its leading
 * dimension, else its rows copied into buf (row major, ld cols). */
XI(view) XI(fit_view)(XI(view) v, int64_t rows, int64_t cols, real *buf);

/* dst (rows x cols at (cm, dst, ld)) = op(A) op(B) (inner dimension
 * inner), by GEMM straight into dst, or through y (rows x cols) when ld
 * is beyond BLAS. */
void XI(gemm_to)(int trans_a, int trans_b, int64_t rows, int64_t cols,
                 int64_t inner, XI(view) a, XI(view) b, int cm, real *dst,
                 int64_t ld, real *y);

/* gemm_to with A and B untransposed, and nonzero when a value written is
 * not finite: noted by the micro-kernel in its stores where it takes the
 * shape (rows scaled by ones, rows entries of 1), else by a pass over
 * the block. */
int XI(gemm_to_checked)(int64_t rows, int64_t cols, int64_t inner,
                        XI(view) a, XI(view) b, int cm, real *dst, int64_t ld,
                        real *y, const real *ones);

/* A sum of m x (e + 1) GEMM products accumulated in acc_t, with a working-
 * precision copy w that GEMMs read (w aliases acc in double; part is the
 * float GEMM's target before it is folded in).  Shifted maps: the sum is
 * stored times exp(-shift), meaningful when has. */
typedef struct {
    acc_t *acc;
    real *w, *part;
    int64_t len;
    double shift;
    int has;
} XI(accum);

int XI(accum_alloc)(XI(accum) *s, int64_t len);
void XI(accum_free)(XI(accum) *s);
void XI(accum_zero)(XI(accum) *s);
/* acc += op(A) op(B), an m x cols product (cols = len / m). */
void XI(accum_gemm)(XI(accum) *s, int trans_a, int trans_b, int64_t m,
                    int64_t cols, int64_t inner, XI(view) a, XI(view) b);
/* acc *= f, and the working copy with it. */
void XI(accum_scale)(XI(accum) *s, acc_t f);
/* w = acc (after acc was written directly). */
void XI(accum_publish)(XI(accum) *s);

/* pg = zeroed accumulators for dw and/or db (NULL members otherwise);
 * pgrad_free(pg, 1) releases them. */
int XI(pgrad_open)(XI(pgrad) *pg, const X(plan) *plan, int want_dw,
                   int want_db);
/* Per-thread gradient accumulators: nt sets of (dw, db) for a plan,
 * zeroed (NULL members where pg has none). */
int XI(pgrad_alloc)(XI(pgrad) *parts, int nt, const X(plan) *plan,
                    const XI(pgrad) *pg);
void XI(pgrad_free)(XI(pgrad) *parts, int nt);
/* pg += parts[0] + ... + parts[nt - 1], in that order. */
void XI(pgrad_fold)(const X(plan) *plan, const XI(pgrad) *pg,
                    const XI(pgrad) *parts, int nt);
/* The caller's dw (layout, ldw; may be NULL) and db (may be NULL) from
 * pg's accumulators. */
void XI(pgrad_write)(const X(plan) *plan, const XI(pgrad) *pg, int layout,
                     real *dw, int64_t lddw, real *db);

/* ---- the one-call paths after their checks (grad/attention_grad.c,
 * grad/causal_grad.c) on a single problem whose den is valid: Q, K, V,
 * out, den, G in, dQ, dK, dV out.  They add to pg's accumulators (NULL:
 * none) and return 0, or LINATTN_ENOMEM or LINATTN_EOVERFLOW (the keys'
 * sums built before the passes left the range) with no gradient written;
 * *nonfinite (set on status 0) tells whether a value written to dq, dk or
 * dv is not finite (the verdict is grad_overflow's). ---- */

/* pb->state: NULL, or the state of K, V to use instead of rebuilding it. */
int XI(attention_backward_run)(const XI(problem) *pb, const XI(pgrad) *pg,
                               int *nonfinite);
int XI(causal_backward_run)(const XI(problem) *pb, const XI(pgrad) *pg,
                            int *nonfinite);

/* Either of them on a single problem (pb->causal: the causal one), and
 * on a packed one (pb->qoff) each sequence in order as a problem of its
 * own, with its starting state and its share of dstates, until one
 * fails (grad/grad_util.c). */
int XI(backward_problem)(const XI(problem) *pb, const XI(pgrad) *pg,
                         int *nonfinite);

/* The parts of the backward calls from Q's position pos: Q, K, V, out at
 * pos, pos + 2, pos + 4, pos + 6 (a leading dimension or strides after
 * each), den at pos + 8, G at pos + 9, dQ, dK, dV at pos + 11, + 13,
 * + 15, dW and its leading dimension at pos + 17, db at pos + 19. */
#define LINATTN_I_BACKWARD(pos)                                              \
    [LINATTN_I_Q] = {(pos), LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_INPUT},     \
    [LINATTN_I_K] = {(pos) + 2, LINATTN_I_NK, LINATTN_I_D, LINATTN_I_INPUT}, \
    [LINATTN_I_V] = {(pos) + 4, LINATTN_I_NK, LINATTN_I_E, LINATTN_I_INPUT}, \
    [LINATTN_I_OUT] = {(pos) + 6, LINATTN_I_NQ, LINATTN_I_E,                 \
                       LINATTN_I_INPUT},                                     \
    [LINATTN_I_DEN] = {(pos) + 8, LINATTN_I_NQ, LINATTN_I_ONE,               \
                       LINATTN_I_INPUT | LINATTN_I_VECTOR},                  \
    [LINATTN_I_G] = {(pos) + 9, LINATTN_I_NQ, LINATTN_I_E, LINATTN_I_INPUT}, \
    [LINATTN_I_DQ] = {(pos) + 11, LINATTN_I_NQ, LINATTN_I_D,                 \
                      LINATTN_I_OUTPUT},                                     \
    [LINATTN_I_DK] = {(pos) + 13, LINATTN_I_NK, LINATTN_I_D,                 \
                      LINATTN_I_OUTPUT},                                     \
    [LINATTN_I_DV] = {(pos) + 15, LINATTN_I_NK, LINATTN_I_E,                 \
                      LINATTN_I_OUTPUT},                                     \
    LINATTN_I_PARAM_GRADS((pos) + 17)

/* dW (rows of W x d, its leading dimension after it) and db (rows of W)
 * at pos and pos + 2: optional, against the map, after the other parts. */
#define LINATTN_I_PARAM_GRADS(pos)                                           \
    [LINATTN_I_DW] = {(pos), LINATTN_I_WROWS, LINATTN_I_D,                   \
                      LINATTN_I_OUTPUT | LINATTN_I_OPTIONAL |                \
                          LINATTN_I_SECONDARY},                              \
    [LINATTN_I_DB] = {(pos) + 2, LINATTN_I_WROWS, LINATTN_I_ONE,             \
                      LINATTN_I_OUTPUT | LINATTN_I_OPTIONAL |                \
                          LINATTN_I_SECONDARY | LINATTN_I_VECTOR}

/* A single backward call's parts beyond Q, K, V, out: its arguments. */
static inline void XI(problem_grads)(XI(problem) *pb, const real *den,
                                     const real *g, int64_t ldg, real *dq,
                                     int64_t lddq, real *dk, int64_t lddk,
                                     real *dv, int64_t lddv, real *dw,
                                     int64_t lddw, real *db)
{
    pb->part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    pb->part[LINATTN_I_G] = XI(part_single)(g, ldg);
    pb->part[LINATTN_I_DQ] = XI(part_single)(dq, lddq);
    pb->part[LINATTN_I_DK] = XI(part_single)(dk, lddk);
    pb->part[LINATTN_I_DV] = XI(part_single)(dv, lddv);
    pb->part[LINATTN_I_DW] = XI(part_single)(dw, lddw);
    pb->part[LINATTN_I_DB] = XI(part_single)(db, 1);
}

/* A backward _ex call's extras into its problem: the parts of
 * XI(problem_extras) (key weights, dL/dw out, offsets) without its den
 * and state, which are the call's own arguments here (the forward's
 * normalizers in, the keys' state). */
static inline void XI(problem_backward_extras)(XI(problem) *pb,
                                               const X(extras) *ex,
                                               const X(state) *state)
{
    XI(part) den = pb->part[LINATTN_I_DEN];
    XI(problem_extras)(pb, ex);
    pb->part[LINATTN_I_DEN] = den;
    pb->state = (X(state) *)state; /* only read */
    pb->absorb = 0;
}

/* A public single backward call after its problem is described: the
 * checks (sig; LINATTN_EDENOM names den's row in *bad_row), then the run
 * (pb->causal: causal) with dW and db accumulated, the verdict on
 * non-finite gradients, and dW and db written on success. */
int XI(backward_single)(const XI(problem) *pb, const linattn_i_signature *sig,
                        int64_t *bad_row);

/* backward_single's checks alone (the public _check calls). */
int XI(backward_check)(const XI(problem) *pb, const linattn_i_signature *sig,
                       int64_t *bad_row);

/* backward_single after its checks (the entry points whose checks go
 * beyond the validator's run them first). */
int XI(backward_checked)(const XI(problem) *pb, int64_t *bad_row);

/* Nonzero when the len doubles at x (NULL: none) meet a part of a single
 * problem whose role has a bit of roles (LINATTN_I_INPUT, _OUTPUT). */
int XI(meets_parts)(const XI(problem) *pb, const linattn_i_signature *sig,
                    const double *x, int64_t len, unsigned roles);

/* ---- finite inputs, finite gradients (grad/grad_util.c) ---- */

/* Nonzero when a backward problem's input arrays (Q, K, V, out, den, G)
 * hold no NaN or Inf (the given state's contents are not looked at). */
int XI(bwd_inputs_finite)(const XI(problem) *pb);

/* The verdict on a backward problem whose dq, dk, dv (or dw, db) hold a
 * value that is not finite: 0 when its inputs (the given states included)
 * hold NaN or Inf, which propagate; else LINATTN_EOVERFLOW with *bad_row
 * (if not NULL) the first row of dq holding a non-finite value, else the
 * first of dk and dv, else -1. */
int XI(grad_overflow)(const XI(problem) *pb, int64_t *bad_row);

/* Nonzero when pg's sums are finite in the working precision (what
 * pgrad_write would write). */
int XI(pgrad_finite)(const X(plan) *plan, const XI(pgrad) *pg);

#endif
