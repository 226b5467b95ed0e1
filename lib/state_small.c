/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state_small.c -- updates and queries of a few rows (token-by-token
 * decoding) without workspace allocation or BLAS.
 *
 * For one token the blocked path spends most of its time outside the
 * arithmetic: five allocations, GEMM's packing of 1 x m operands and the
 * OpenMP fork checks cost several times the 2 m (e + 1) flops of a rank-one
 * update.  Here phi of the rows lives on the stack and the update and the
 * query are plain loops over the m x (e + 1) state, which stays in cache
 * between tokens: constant time and memory per token whatever the context.
 */
#include <string.h>
#include "internal.h"
#include "kern.h"

/* Stack budget: phi of the rows and one row of values or numerators. */
#define SMALL_ROWS 4
#define SMALL_WIDTH 512

int XI(small_ok)(const X(plan) *plan, int64_t n)
{
    return n <= SMALL_ROWS && plan->m <= SMALL_WIDTH && plan->e < SMALL_WIDTH;
}

void XI(state_update_small)(X(state) *st, XI(view) k, XI(view) v, int64_t n)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e;
    real phi[SMALL_ROWS * SMALL_WIDTH], vrow[SMALL_ROWS * SMALL_WIDTH];
    if (plan->shifted) { /* keys share the state's shift (state.c) */
        double rexp[SMALL_ROWS];
        double bmax = XI(phi_pre)(plan, k, n, phi, rexp);
        XI(raise_shift)(st->acc, m * (e + 1), &st->shift, st->tokens > 0, bmax);
        XI(phi_post)(plan, phi, n, rexp, NULL, st->shift, NULL);
    } else {
        XI(phi_rows)(plan, k, n, phi, NULL);
    }
    XI(copy_rows)(v, 0, n, e, vrow);
    const XI(kern) *kn = XI(kern_now)();
    for (int64_t r = 0; r < n; r++)
        kn->rank1(st->acc, m, e, phi + r * m, vrow + r * e);
}

int XI(state_query_small)(const X(state) *st, int layout, int64_t n,
                          XI(view) q, real *out, int64_t ldout, real *num,
                          int64_t ldnum, real *den, int64_t *bad_row)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e;
    int cm = layout == LINATTN_COL_MAJOR;
    real phi[SMALL_ROWS * SMALL_WIDTH], y[SMALL_WIDTH + 1];
    XI(phi_rows)(plan, q, n, phi, NULL);
    const XI(kern) *kn = XI(kern_now)();
    for (int64_t r = 0; r < n; r++) {
        kn->row_times(y, st->sz, m, e, phi + r * m);
        real dr = y[e];
        if (XI(good_rows)(plan, &dr, 1, out != NULL, st->tokens, 0) == 0) {
            if (bad_row)
                *bad_row = r;
            return LINATTN_EDENOM;
        }
        real inv = 1 / dr;
        if (num)
            XI(put_rows)(cm ? num + r : num + r * ldnum, cm, ldnum, y, 0, e,
                         1, e, NULL);
        if (out)
            XI(put_rows)(cm ? out + r : out + r * ldout, cm, ldout, y, 0, e,
                         1, e, &inv);
        if (den)
            den[r] = dr;
    }
    return 0;
}
