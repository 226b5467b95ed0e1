/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn/paths.h -- the one-call paths and their argument checks.  Not
 * installed.
 */
#ifndef LINATTN_ATTN_PATHS_H
#define LINATTN_ATTN_PATHS_H

#include "attn/state.h"

/* ---- attention.c ---- */

/* The matrix checks of the attention-shaped calls: Q (nq x d), K (nk x d),
 * V (nk x e), out (nq x e) as arguments pos, pos + 2, pos + 4, pos + 6
 * (their leading dimensions follow each) and, when not NULL, the nq
 * normalizers den at pos + 8 (an output, as out: apart from the inputs
 * and out), then the sizes (keys_in_blas: nk is a GEMM dimension), then
 * the plan's input check. */
int XI(qkvo_args)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                  const real *q, int64_t ldq, const real *k, int64_t ldk,
                  const real *v, int64_t ldv, const real *out, int64_t ldout,
                  const real *den, int pos, int keys_in_blas);

/* Argument checks of linattn_d_attention, shared with the naive path;
 * the _den form also checks the normalizers of the training calls'
 * forward (NULL: none; backward.c). */
int XI(attention_args)(const X(plan) *plan, int layout, int64_t nq,
                       int64_t nk, const real *q, int64_t ldq, const real *k,
                       int64_t ldk, const real *v, int64_t ldv,
                       const real *out, int64_t ldout, int keys_in_blas);
int XI(attention_den_args)(const X(plan) *plan, int layout, int64_t nq,
                           int64_t nk, const real *q, int64_t ldq,
                           const real *k, int64_t ldk, const real *v,
                           int64_t ldv, const real *out, int64_t ldout,
                           const real *den, int keys_in_blas);

/* Argument checks of the causal calls (causal.c), shared with the naive
 * causal baseline; _den as above. */
int XI(causal_args)(const X(plan) *plan, int layout, int64_t n, const real *q,
                    int64_t ldq, const real *k, int64_t ldk, const real *v,
                    int64_t ldv, const real *out, int64_t ldout,
                    int keys_in_blas);
int XI(causal_den_args)(const X(plan) *plan, int layout, int64_t n,
                        const real *q, int64_t ldq, const real *k,
                        int64_t ldk, const real *v, int64_t ldv,
                        const real *out, int64_t ldout, const real *den,
                        int keys_in_blas);

/* The one-call paths after their argument checks (the public functions
 * check, then call these; the batched calls check every problem first,
 * then call these per problem).  Same meaning and statuses as
 * linattn_d_attention, _causal, _naive (causal = 0, nq, nk) and
 * _naive_causal (causal = 1, nq = nk = n). */
int XI(attention_run)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                      const real *q, int64_t ldq, const real *k, int64_t ldk,
                      const real *v, int64_t ldv, real *out, int64_t ldout,
                      int64_t *bad_row);
int XI(causal_run)(const X(plan) *plan, int layout, int64_t n, const real *q,
                   int64_t ldq, const real *k, int64_t ldk, const real *v,
                   int64_t ldv, real *out, int64_t ldout, int64_t *bad_row);
/* The same, handing back the normalizers as well (den, nq or n entries;
 * NULL: not asked), as state_query does (eps included, shifted maps'
 * factors in): what the backward calls take (grad.h). */
int XI(attention_run_den)(const X(plan) *plan, int layout, int64_t nq,
                          int64_t nk, const real *q, int64_t ldq,
                          const real *k, int64_t ldk, const real *v,
                          int64_t ldv, real *out, int64_t ldout, real *den,
                          int64_t *bad_row);
int XI(causal_run_den)(const X(plan) *plan, int layout, int64_t n,
                       const real *q, int64_t ldq, const real *k, int64_t ldk,
                       const real *v, int64_t ldv, real *out, int64_t ldout,
                       real *den, int64_t *bad_row);
/* y (rows x w, ldy) += tril(A) X for a rows x rows A (lda) and X (rows x
 * w, a row-major view), reading only A[i][j] and row j of X with j <= i
 * (causal.c). */
void XI(tril_times)(const real *a, int64_t lda, XI(view) x, int64_t rows,
                    int64_t w, real *y, int64_t ldy);
/* causal_run continuing from the state from (NULL: a zero state): rows
 * see its keys first; with absorb set and status 0, from then holds its
 * keys and these n.  On any error from is unchanged. */
int XI(causal_from)(const X(plan) *plan, X(state) *from, int absorb,
                    int layout, int64_t n, const real *q, int64_t ldq,
                    const real *k, int64_t ldk, const real *v, int64_t ldv,
                    real *out, int64_t ldout, int64_t *bad_row);
/* The same, handing back the normalizers (den may be NULL). */
int XI(causal_from_den)(const X(plan) *plan, X(state) *from, int absorb,
                        int layout, int64_t n, const real *q, int64_t ldq,
                        const real *k, int64_t ldk, const real *v,
                        int64_t ldv, real *out, int64_t ldout, real *den,
                        int64_t *bad_row);
/* The checks of positions 1-4 of every batched call: plan, layout,
 * batch, heads (batched.c). */
int XI(batched_leading)(const X(plan) *plan, int layout, int64_t batch,
                        int64_t heads);
int XI(naive_run)(const X(plan) *plan, int causal, int layout, int64_t nq,
                  int64_t nk, const real *q, int64_t ldq, const real *k,
                  int64_t ldk, const real *v, int64_t ldv, real *out,
                  int64_t ldout, int64_t *bad_row);

#endif
