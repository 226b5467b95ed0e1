/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state_causal.c -- causal attention continuing from a state: the causal
 * chunks (causal.c) with the carried state starting from the caller's
 * instead of zero.  A sequence in segments, or the rows of one MPI rank
 * after the exclusive prefix of the earlier ranks' states.
 */
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"

int X(state_causal)(X(state) *state, int layout, int64_t n, const real *q,
                    int64_t ldq, const real *k, int64_t ldk, const real *v,
                    int64_t ldv, real *out, int64_t ldout, int absorb,
                    int64_t *bad_row)
{
    if (!state)
        return -1;
    /* absorb is checked after the matrices: argument order, as LAPACKE
     * reports the first invalid argument. */
    int st = XI(causal_args)(state->plan, layout, n, q, ldq, k, ldk, v, ldv,
                             out, ldout, 0);
    if (st < 0)
        return st;
    if (absorb != 0 && absorb != 1)
        return -12;
    if (st)
        return st;
    /* Row i sees tokens + i + 1 keys (DENOM_COUNT divides by it) and an
     * absorbing call ends with tokens + n: both must fit int64. */
    if (n > INT64_MAX - state->tokens)
        return LINATTN_ESIZE;
    return XI(causal_from)(state->plan, state, absorb, layout, n, q, ldq, k,
                           ldk, v, ldv, out, ldout, bad_row);
}
