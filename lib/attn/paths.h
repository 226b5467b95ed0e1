/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn/paths.h -- the one-call paths, after the checks: the public calls
 * describe their problem (attn/problem.h) and have it checked, then run it
 * here; the batched calls check every problem first, then run each.  Each
 * has the meaning and statuses of its public call.  Not installed.
 */
#ifndef LINATTN_ATTN_PATHS_H
#define LINATTN_ATTN_PATHS_H

#include "attn/problem.h"
#include "attn/state.h"

/* Non-causal attention of a single problem (linattn_d_attention): out
 * from the state of all keys; den, when the problem has it, the
 * normalizers (linattn_d_attention_forward). */
int XI(attention_run)(const XI(problem) *pb, int64_t *bad_row);

/* Causal attention of a single problem (linattn_d_causal, nq = nk): rows
 * see the keys of pb->state first (NULL: none) and, with pb->absorb and
 * status 0, the state then holds its keys and these (on any error it is
 * unchanged); den as in attention_run. */
int XI(causal_run)(const XI(problem) *pb, int64_t *bad_row);

/* The quadratic baselines of a single problem: linattn_d_naive, or
 * linattn_d_naive_causal when pb->causal. */
int XI(naive_run)(const XI(problem) *pb, int64_t *bad_row);

/* ---- packed sequences (attn/packed.c) ---- */

/* A single-problem path (one of the above). */
typedef int (*XI(run_fn))(const XI(problem) *pb, int64_t *bad_row);

/* The packed problem pb (pb->qoff not NULL, after its checks), each
 * sequence by run as its own problem: 0, or the status of the first
 * failing sequence, with *bad_row its row in the packed stream (if it
 * names one).  Absorbing states are all restored when any sequence
 * fails. */
int XI(packed_run)(const XI(problem) *pb, XI(run_fn) run, int64_t *bad_row);

/* ---- batched calls (attn/batched.c) ---- */

/* batch x heads problems of plan in layout, of nq queries and nk keys
 * each (causal: nk = nq), without parts. */
XI(problem) XI(problem_batched)(const X(plan) *plan, int layout,
                                int64_t batch, int64_t heads, int64_t nq,
                                int64_t nk, int causal);

/* A batched call's Q, K, V and out, each with the caller's strides. */
void XI(problem_qkvo_batched)(XI(problem) *pb, const real *q,
                              const linattn_strides *sq, const real *k,
                              const linattn_strides *sk, const real *v,
                              const linattn_strides *sv, const real *out,
                              const linattn_strides *sout);

/* One problem of a batched call (one: problem p as a single problem),
 * on range t of the threads (0 when problems run one after another): the
 * single path's status, and its row. */
typedef int (*XI(one_fn))(const XI(problem) *one, void *ctx, int t,
                          int64_t *row);

/* The ranges of threads the problems of pb are split over (1: one after
 * another, each splitting its rows). */
int XI(batched_threads)(const XI(problem) *pb);

/* Every problem of pb (after its checks) by run, whatever another
 * returned: 0, or the status of the first failing problem in (b, h)
 * order, which *bad (if not NULL) names with its row. */
int XI(batched_run)(const XI(problem) *pb, XI(one_fn) run, void *ctx,
                    linattn_where *bad);

/* Rows per diagonal block of the causal chunks' triangle products: the
 * forward's (attn/causal.c) and the backward's (grad/causal_grad.c),
 * whose sweeps must cut the chunk where the forward did. */
#define LINATTN_TRI_BLOCK 16

/* y (rows x w, ldy) += tril(A) X for a rows x rows A (lda) and X (rows x
 * w, a row-major view), reading only A[i][j] and row j of X with j <= i
 * (attn/causal.c). */
void XI(tril_times)(const real *a, int64_t lda, XI(view) x, int64_t rows,
                    int64_t w, real *y, int64_t ldy);

#endif
