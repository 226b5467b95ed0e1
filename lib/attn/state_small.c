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
#include <math.h>
#include <string.h>
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "kernels/kern.h"
#include "common/simd.h"

/* Stack budget: phi of the rows and one row of values or numerators. */
#define SMALL_ROWS 4
#define SMALL_WIDTH 512

int XI(small_ok)(const X(plan) *plan, int64_t n)
{
    return n <= SMALL_ROWS && plan->m <= SMALL_WIDTH && plan->e < SMALL_WIDTH;
}

int XI(state_update_small)(X(state) *st, XI(view) k, XI(view) v, int64_t n,
                           const double *b, XI(fused) *fq)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e;
    real phi[SMALL_ROWS * SMALL_WIDTH], vrow[SMALL_ROWS * SMALL_WIDTH];
    double rexp[SMALL_ROWS], shift = st->shift, f = 1;
    const XI(kern) *kn = XI(kern_now)();
    /* decayed (b: the rows' running sums of log decays): the state before
     * times exp(B), B = b[n - 1] (the shifted maps: a shift of B), row r
     * times exp(B - b[r]), each <= 1 */
    double B = b ? b[n - 1] : 0, from = st->shift + (plan->shifted ? B : 0);
    if (plan->shifted) { /* keys share the state's shift (state.c) */
        double bmax = XI(phi_pre)(plan, k, n, phi, rexp);
        shift = XI(next_shift)(from, st->tokens > 0, bmax);
        if (st->tokens > 0 && shift != st->shift)
            f = exp(from - shift);
        XI(phi_post)(plan, phi, n, rexp, NULL, shift, NULL);
    } else {
        XI(phi_rows)(plan, k, n, phi, NULL);
        f = b ? exp(B) : 1;
    }
    for (int64_t r = 0; b && r < n - 1; r++) {
        real g = (real)exp(B - b[r]);
        for (int64_t t = 0; t < m; t++)
            phi[r * m + t] *= g;
    }
    XI(copy_rows)(v, 0, n, e, vrow);
    if (!st->poisoned) {
        /* Every new entry is at most f bound + n max|phi| max(|v|, 1) in
         * magnitude: when that is well inside the range no sum can
         * overflow, and the update needs no check.  Else (values near the
         * range's end, or NaN and Inf) the blocked path decides. */
        double vmax = kn->amax(vrow, n * e);
        double grow = (double)n * kn->amax(phi, n * m) * (vmax > 1 ? vmax : 1);
        double bound = f * st->bound + grow;
        if (!(bound <= REAL_MAX / 4))
            return 0;
        st->bound = bound;
    }
    st->shift = shift;
    /* the state's factor f in the first row's pass, the float copy and
     * a fused query in the last one's (one sweep of the state per row,
     * as without them) */
    for (int64_t r = 0; r < n; r++) {
        int last = r == n - 1 && fq;
        kn->step(st->acc, st->sz, m, e, phi + r * m, vrow + r * e,
                 r ? 1 : (acc_t)f, last ? fq->phi : NULL, last ? fq->y : NULL);
    }
    if (fq)
        fq->done = 1;
    return 1;
}

/* Row r of pb's outputs from y, its numerators and (y[e]) normalizer:
 * 0, or LINATTN_EDENOM or LINATTN_EOVERFLOW with r in *bad_row (as
 * linattn_d_state_query). */
static int query_row(const X(state) *st, const XI(problem) *pb, int64_t r,
                     real *y, int64_t *bad_row)
{
    const X(plan) *plan = st->plan;
    int64_t e = plan->e;
    int cm = pb->layout == LINATTN_COL_MAJOR;
    real *out = XI(part_out)(pb, LINATTN_I_OUT);
    real *num = XI(part_out)(pb, LINATTN_I_NUM);
    real *den = XI(part_out)(pb, LINATTN_I_DEN);
    int64_t ldout = pb->part[LINATTN_I_OUT].s.ld;
    int64_t ldnum = pb->part[LINATTN_I_NUM].s.ld;
    XI(origin) origin = {pb, st, -1};
    real dr = y[e], inv;
    if (XI(good_rows)(plan, &dr, 1, out != NULL, st->mass, 0, NULL) == 0) {
        if (bad_row)
            *bad_row = r;
        return LINATTN_EDENOM;
    }
    real *num_r = num ? (cm ? num + r : num + r * ldnum) : NULL;
    real *out_r = out ? (cm ? out + r : out + r * ldout) : NULL;
    int bad = 0;
    if (num)
        bad |= XI(put_rows)(num_r, cm, ldnum, y, 0, e, 1, e, NULL);
    if (out)
        bad |= XI(divide_rows)(out_r, cm, ldout, y, 0, e, 1, e, &dr, &inv);
    if (den) {
        den[r] = dr;
        bad |= LINATTN_NOT_FINITE(dr);
    }
    if (bad && XI(first_overflow)(pb, r, 1, &origin, r) == 0) {
        if (bad_row)
            *bad_row = r;
        return LINATTN_EOVERFLOW;
    }
    return 0;
}

int XI(state_query_small)(const X(state) *st, const XI(problem) *pb,
                          int64_t *bad_row)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e, n = pb->nq;
    real phi[SMALL_ROWS * SMALL_WIDTH], y[SMALL_WIDTH + 1];
    XI(phi_query)(plan, XI(part_view)(pb, LINATTN_I_Q), n, phi, NULL);
    const XI(kern) *kn = XI(kern_now)();
    for (int64_t r = 0; r < n; r++) {
        kn->step(st->acc, st->sz, m, e, NULL, NULL, 1, phi + r * m, y);
        int status = query_row(st, pb, r, y, bad_row);
        if (status)
            return status;
    }
    return 0;
}

int XI(state_step_run)(X(state) *st, const XI(problem) *pb, int64_t *bad_row)
{
    const X(plan) *plan = st->plan;
    real phi[SMALL_WIDTH], y[SMALL_WIDTH + 1];
    XI(fused) fq = {phi, y, 0};
    /* phi(q) depends on the query alone (the shifted maps' own exponent
     * included): taken before the update, it is what the query after the
     * update would take */
    if (XI(small_ok)(plan, 1))
        XI(phi_query)(plan, XI(part_view)(pb, LINATTN_I_Q), 1, phi, NULL);
    int status = XI(state_update_fused)(st, pb, 1,
                                        XI(small_ok)(plan, 1) ? &fq : NULL);
    if (status)
        return status;
    if (!fq.done) /* the update took another path: the query reads it */
        return XI(state_query_run)(st, pb, bad_row);
    return query_row(st, pb, 0, y, bad_row);
}
