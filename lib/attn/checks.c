/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * checks.c -- the argument checks of the one-call paths, without the
 * call: a collective caller (liblinattn_mpi) agrees on every rank's
 * status before any data moves.  The batched calls' are in batched.c.
 */
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"

int X(attention_check)(const X(plan) *plan, int layout, int64_t nq,
                       int64_t nk, const real *q, int64_t ldq, const real *k,
                       int64_t ldk, const real *v, int64_t ldv,
                       const real *out, int64_t ldout)
{
    return XI(attention_args)(plan, layout, nq, nk, q, ldq, k, ldk, v, ldv,
                              out, ldout, 0);
}

int X(causal_check)(const X(plan) *plan, int layout, int64_t n,
                    const real *q, int64_t ldq, const real *k, int64_t ldk,
                    const real *v, int64_t ldv, const real *out,
                    int64_t ldout)
{
    return XI(causal_args)(plan, layout, n, q, ldq, k, ldk, v, ldv, out,
                           ldout, 0);
}
