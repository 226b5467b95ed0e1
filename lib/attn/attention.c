/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attention.c -- non-causal linear attention in one call: build the state
 * over all keys in row blocks, then answer the queries in row blocks.
 * Extra memory: one state and one block of workspace, whatever nq and nk.
 * The public calls (attention, its check, the forward that hands back the
 * normalizers) describe their problem and run it here.
 */
#include <stdlib.h>
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/state.h"

/* linattn_d_attention: Q, K, V, out from argument 5 on. */
static const linattn_i_signature attention_sig = {
    .plan = 1, .layout = 2, .nq = 3, .nk = 4, .flags = LINATTN_I_SCAN,
    .part = {LINATTN_I_QKVO(5)}};

/* linattn_d_attention_forward: and den (13). */
static const linattn_i_signature forward_sig = {
    .plan = 1, .layout = 2, .nq = 3, .nk = 4, .flags = LINATTN_I_SCAN,
    .part = {LINATTN_I_QKVO(5), LINATTN_I_DEN_OUT(13, 1)}};

int X(attention)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                 const real *q, int64_t ldq, const real *k, int64_t ldk,
                 const real *v, int64_t ldv, real *out, int64_t ldout,
                 int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    int st = XI(problem_check)(&pb, &attention_sig, NULL);
    return st ? st : XI(attention_run)(&pb, bad_row);
}

int X(attention_check)(const X(plan) *plan, int layout, int64_t nq,
                       int64_t nk, const real *q, int64_t ldq, const real *k,
                       int64_t ldk, const real *v, int64_t ldv,
                       const real *out, int64_t ldout)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    return XI(problem_check)(&pb, &attention_sig, NULL);
}

int X(attention_forward)(const X(plan) *plan, int layout, int64_t nq,
                         int64_t nk, const real *q, int64_t ldq, const real *k,
                         int64_t ldk, const real *v, int64_t ldv, real *out,
                         int64_t ldout, real *den, int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    pb.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    int st = XI(problem_check)(&pb, &forward_sig, NULL);
    return st ? st : XI(attention_run)(&pb, bad_row);
}

/* linattn_d_attention_ex: and the extras (13), whose den is optional. */
static const linattn_i_signature ex_sig = {
    .plan = 1, .layout = 2, .nq = 3, .nk = 4, .extras = 13, .given = 13,
    .absorb = 13, .flags = LINATTN_I_SCAN | LINATTN_I_TOKENS,
    .ex_parts = LINATTN_I_X_DEN | LINATTN_I_X_STATE | LINATTN_I_X_WEIGHTS |
                LINATTN_I_X_OFFSETS | LINATTN_I_X_KEY_OFFSETS |
                LINATTN_I_X_STATES,
    .part = {LINATTN_I_QKVO(5), LINATTN_I_DEN_OUT(13, 0),
             LINATTN_I_WEIGHTS_IN(13)}};

int X(attention_ex)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                    const real *q, int64_t ldq, const real *k, int64_t ldk,
                    const real *v, int64_t ldv, real *out, int64_t ldout,
                    const X(extras) *ex, int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_extras)(&pb, ex);
    int st = XI(problem_check)(&pb, &ex_sig, NULL);
    return st ? st : XI(attention_run)(&pb, bad_row);
}

int X(attention_ex_check)(const X(plan) *plan, int layout, int64_t nq,
                          int64_t nk, const real *q, int64_t ldq,
                          const real *k, int64_t ldk, const real *v,
                          int64_t ldv, const real *out, int64_t ldout,
                          const X(extras) *ex)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_extras)(&pb, ex);
    return XI(problem_check)(&pb, &ex_sig, NULL);
}

int XI(attention_run)(const XI(problem) *pb, int64_t *bad_row)
{
    if (pb->qoff) /* packed: each sequence by this path */
        return XI(packed_run)(pb, XI(attention_run), bad_row);
    const X(plan) *plan = pb->plan;
    X(state) *from = pb->state;
    /* without queries nothing is asked, but a state may absorb the keys */
    if (pb->nq == 0 && !(from && pb->absorb))
        return 0;
    void *mem = malloc(XI(state_bytes)(plan));
    if (!mem)
        return LINATTN_ENOMEM;
    /* the keys go into a copy of the starting state (or a zero one), which
     * replaces it only when everything succeeded */
    X(state) state;
    XI(state_init)(&state, plan, mem);
    if (from)
        XI(state_assign)(&state, from);
    /* a state that absorbs refuses sums beyond the range as
     * linattn_d_state_update does, before any row is written (every row
     * reads all of them); only read, the copy keeps them and the queries
     * report the rows they reach */
    int absorbing = from && pb->absorb;
    int st = XI(state_update_run)(&state, pb, absorbing);
    if (st == LINATTN_EOVERFLOW && bad_row)
        *bad_row = -1;
    if (!st)
        st = XI(state_query_run)(&state, pb, bad_row);
    if (!st && from && pb->absorb)
        XI(state_assign)(from, &state);
    free(mem);
    return st;
}
