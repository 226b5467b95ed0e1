/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * batched_grad.c -- the training calls over batch x heads problems: the
 * forward calls that hand back normalizers and the backward calls, with
 * the threading and statuses of the batched calls (attn/batched.c runs
 * the problems: over threads when there are at least as many as threads,
 * else one after another, each splitting its rows).  Every problem runs
 * the single call's code.  dW and db are sums over all problems: each
 * range of threads adds its problems into its own accumulators, which are
 * added in range order at the end.
 *
 * The normalizers are a dense array, problem (b, h)'s nq (or n) of them
 * at den + (b heads + h) nq; the checks see den as an nq x 1 matrix with
 * those strides, so it may not meet an output either.
 */
#include <string.h>
#include "grad/grad.h"
#include "attn/paths.h"
#include "attn/problem.h"
#include "common/threads.h"

static int one_forward(const XI(problem) *one, void *ctx, int t, int64_t *row)
{
    (void)ctx, (void)t;
    return one->causal ? XI(causal_run)(one, row)
                       : XI(attention_run)(one, row);
}

/* A backward problem on range t, into that range's dW and db. */
static int one_backward(const XI(problem) *one, void *ctx, int t,
                        int64_t *row)
{
    const XI(pgrad) *pg = (const XI(pgrad) *)ctx + t;
    int nonfinite = 0;
    int st = XI(backward_problem)(one, pg, &nonfinite);
    if (st == LINATTN_EOVERFLOW)
        *row = -1; /* the keys' sums, before anything was written */
    if (!st && nonfinite)
        st = XI(grad_overflow)(one, row);
    return st;
}

/* Every backward problem's inputs finite. */
static int all_inputs_finite(const XI(problem) *pb)
{
    for (int64_t p = 0; p < XI(problem_count)(pb); p++) {
        XI(problem) one = XI(problem_one)(pb, p);
        if (!XI(bwd_inputs_finite)(&one))
            return 0;
    }
    return 1;
}

/* The problems of a checked backward call, dW and db written when every
 * problem succeeded (zeros when there are none: sums over none). */
static int backward(const XI(problem) *pb, linattn_where *bad)
{
    const X(plan) *plan = pb->plan;
    real *dw = XI(part_out)(pb, LINATTN_I_DW);
    real *db = XI(part_out)(pb, LINATTN_I_DB);
    int64_t problems = XI(problem_count)(pb);
    if (problems == 0 && !dw && !db)
        return 0;
    int nt = XI(batched_threads)(pb);
    XI(pgrad) parts[LINATTN_MAX_THREADS], total = {NULL, NULL};
    if (XI(pgrad_open)(&total, plan, dw != NULL, db != NULL))
        return LINATTN_ENOMEM;
    int split = nt > 1 && (dw || db);
    if (split && XI(pgrad_alloc)(parts, nt, plan, &total)) {
        XI(pgrad_free)(&total, 1);
        return LINATTN_ENOMEM;
    }
    for (int t = 0; !split && t < nt; t++)
        parts[t] = total;
    int st = XI(batched_run)(pb, one_backward, parts, bad);
    if (split) {
        XI(pgrad_fold)(plan, &total, parts, nt);
        XI(pgrad_free)(parts, nt);
    }
    /* sums of finite problems' gradients beyond the range: no row */
    if (!st && !XI(pgrad_finite)(plan, &total) && all_inputs_finite(pb)) {
        XI(pgrad_free)(&total, 1);
        if (bad)
            *bad = (linattn_where){-1, -1, -1};
        return LINATTN_EOVERFLOW;
    }
    if (!st)
        XI(pgrad_write)(plan, &total, pb->layout, dw,
                        pb->part[LINATTN_I_DW].s.ld, db);
    XI(pgrad_free)(&total, 1);
    return st;
}

/* The signatures: plan, layout, batch, heads, nq and nk, or n; the
 * matrices with their strides (den dense, without), dW and db. */
#define FORWARD_PARTS(pos)                                                    \
    LINATTN_I_QKVO(pos),                                                      \
        [LINATTN_I_DEN] = {(pos) + 8, LINATTN_I_NQ, LINATTN_I_ONE,            \
                           LINATTN_I_OUTPUT | LINATTN_I_VECTOR}
static const linattn_i_signature attention_forward_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .nk = 6, .flags = LINATTN_I_SCAN,
    .part = {FORWARD_PARTS(7)}};
static const linattn_i_signature causal_forward_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .flags = LINATTN_I_SCAN | LINATTN_I_DECAY,
    .part = {FORWARD_PARTS(6)}};
static const linattn_i_signature attention_backward_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .nk = 6,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY,
    .part = {LINATTN_I_BACKWARD(7)}};
static const linattn_i_signature causal_backward_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY | LINATTN_I_DECAY,
    .part = {LINATTN_I_BACKWARD(6)}};

/* The gradients' parts of a batched backward problem. */
static void grad_parts(XI(problem) *pb, const real *den, const real *g,
                       const linattn_strides *sg, real *dq,
                       const linattn_strides *sdq, real *dk,
                       const linattn_strides *sdk, real *dv,
                       const linattn_strides *sdv, real *dw, int64_t lddw,
                       real *db)
{
    pb->part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    pb->part[LINATTN_I_G] = XI(part_batched)(g, sg);
    pb->part[LINATTN_I_DQ] = XI(part_batched)(dq, sdq);
    pb->part[LINATTN_I_DK] = XI(part_batched)(dk, sdk);
    pb->part[LINATTN_I_DV] = XI(part_batched)(dv, sdv);
    pb->part[LINATTN_I_DW] = XI(part_single)(dw, lddw);
    pb->part[LINATTN_I_DB] = XI(part_single)(db, 1);
}

/* A batched backward call once its parts are described: the _ex calls'
 * extras (sig->extras: ex, which may be NULL), the checks, the run. */
static int backward_call(XI(problem) *pb, const X(extras) *ex,
                         const linattn_i_signature *sig, linattn_where *bad)
{
    if (sig->extras) {
        XI(problem_backward_extras)(pb, ex, NULL);
        /* the backward only reads the states: absorb must be 0 (refused
         * as a value other than 0 or 1 is) */
        pb->absorb = ex && ex->absorb ? -1 : 0;
    }
    int st = XI(problem_check)(pb, sig, bad);
    return st ? st : backward(pb, bad);
}

int X(batched_attention_forward)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, real *out,
        const linattn_strides *sout, real *den, linattn_where *bad)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, nq, nk,
                                         0);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);
    pb.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    int st = XI(problem_check)(&pb, &attention_forward_sig, bad);
    return st ? st : XI(batched_run)(&pb, one_forward, NULL, bad);
}

int X(batched_causal_forward)(const X(plan) *plan, int layout, int64_t batch,
        int64_t heads, int64_t n, const real *q, const linattn_strides *sq,
        const real *k, const linattn_strides *sk, const real *v,
        const linattn_strides *sv, real *out, const linattn_strides *sout,
        real *den, linattn_where *bad)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, n, n, 1);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);
    pb.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    int st = XI(problem_check)(&pb, &causal_forward_sig, bad);
    return st ? st : XI(batched_run)(&pb, one_forward, NULL, bad);
}

int X(batched_attention_backward)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den, const real *g,
        const linattn_strides *sg, real *dq, const linattn_strides *sdq,
        real *dk, const linattn_strides *sdk, real *dv,
        const linattn_strides *sdv, real *dw, int64_t lddw, real *db,
        linattn_where *bad)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, nq, nk,
                                         0);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);
    grad_parts(&pb, den, g, sg, dq, sdq, dk, sdk, dv, sdv, dw, lddw, db);
    return backward_call(&pb, NULL, &attention_backward_sig, bad);
}

int X(batched_causal_backward)(const X(plan) *plan, int layout, int64_t batch,
        int64_t heads, int64_t n, const real *q, const linattn_strides *sq,
        const real *k, const linattn_strides *sk, const real *v,
        const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den, const real *g,
        const linattn_strides *sg, real *dq, const linattn_strides *sdq,
        real *dk, const linattn_strides *sdk, real *dv,
        const linattn_strides *sdv, real *dw, int64_t lddw, real *db,
        linattn_where *bad)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, n, n, 1);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);
    grad_parts(&pb, den, g, sg, dq, sdq, dk, sdk, dv, sdv, dw, lddw, db);
    return backward_call(&pb, NULL, &causal_backward_sig, bad);
}

int X(batched_attention_forward_check)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, nq, nk,
                                         0);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, (real *)out, sout);
    pb.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    return XI(problem_check)(&pb, &attention_forward_sig, NULL);
}

int X(batched_causal_forward_check)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t n, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, n, n, 1);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, (real *)out, sout);
    pb.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    return XI(problem_check)(&pb, &causal_forward_sig, NULL);
}

int X(batched_attention_backward_check)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den, const real *g,
        const linattn_strides *sg, const real *dq, const linattn_strides *sdq,
        const real *dk, const linattn_strides *sdk, const real *dv,
        const linattn_strides *sdv, const real *dw, int64_t lddw,
        const real *db, linattn_where *bad)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, nq, nk,
                                         0);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);
    grad_parts(&pb, den, g, sg, (real *)dq, sdq, (real *)dk, sdk, (real *)dv,
               sdv, (real *)dw, lddw, (real *)db);
    return XI(problem_check)(&pb, &attention_backward_sig, bad);
}

int X(batched_causal_backward_check)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t n, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den, const real *g,
        const linattn_strides *sg, const real *dq, const linattn_strides *sdq,
        const real *dk, const linattn_strides *sdk, const real *dv,
        const linattn_strides *sdv, const real *dw, int64_t lddw,
        const real *db, linattn_where *bad)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, n, n, 1);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);
    grad_parts(&pb, den, g, sg, (real *)dq, sdq, (real *)dk, sdk, (real *)dv,
               sdv, (real *)dw, lddw, (real *)db);
    return XI(problem_check)(&pb, &causal_backward_sig, bad);
}

/* linattn_d_batched_attention_backward_ex, _causal_backward_ex: and the
 * extras (27 and 26): every problem's key weights in and dL/dw out
 * (dense, problem after problem), packed sequences (the same offsets in
 * every problem), the causal forward's starting states (problem after
 * problem, as the forward took them) and their gradients out; causal,
 * the gates in and dL/da out (dense as the weights) and a log decay per
 * head, as batched_causal_ex takes them. */
static const linattn_i_signature attention_backward_ex_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .nk = 6, .extras = 27,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_DWEIGHTS |
                LINATTN_I_X_OFFSETS | LINATTN_I_X_KEY_OFFSETS,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY,
    .part = {LINATTN_I_BACKWARD(7), LINATTN_I_WEIGHTS_IN(27),
             LINATTN_I_DWEIGHTS_OUT(27)}};
static const linattn_i_signature causal_backward_ex_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .extras = 26, .absorb = 26,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_DWEIGHTS |
                LINATTN_I_X_OFFSETS | LINATTN_I_X_STATES |
                LINATTN_I_X_DSTATES | LINATTN_I_X_GATES |
                LINATTN_I_X_DGATES | LINATTN_I_X_HEAD_DECAYS,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY | LINATTN_I_DECAY,
    .part = {LINATTN_I_BACKWARD(6), LINATTN_I_WEIGHTS_IN(26),
             LINATTN_I_DWEIGHTS_OUT(26), LINATTN_I_GATES_IN(26),
             LINATTN_I_DGATES_OUT(26)}};

int X(batched_attention_backward_ex)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den, const real *g,
        const linattn_strides *sg, real *dq, const linattn_strides *sdq,
        real *dk, const linattn_strides *sdk, real *dv,
        const linattn_strides *sdv, real *dw, int64_t lddw, real *db,
        const X(extras) *ex, linattn_where *bad)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, nq, nk,
                                         0);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);
    grad_parts(&pb, den, g, sg, dq, sdq, dk, sdk, dv, sdv, dw, lddw, db);
    return backward_call(&pb, ex, &attention_backward_ex_sig, bad);
}

int X(batched_causal_backward_ex)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t n, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den, const real *g,
        const linattn_strides *sg, real *dq, const linattn_strides *sdq,
        real *dk, const linattn_strides *sdk, real *dv,
        const linattn_strides *sdv, real *dw, int64_t lddw, real *db,
        const X(extras) *ex, linattn_where *bad)
{
    XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, n, n, 1);
    XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);
    grad_parts(&pb, den, g, sg, dq, sdq, dk, sdk, dv, sdv, dw, lddw, db);
    return backward_call(&pb, ex, &causal_backward_ex_sig, bad);
}
