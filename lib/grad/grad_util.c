/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * grad_util.c -- what the backward passes share: argument checks, the
 * adjoints [g h] of numerators and normalizers, GEMMs into the caller's
 * matrices, and accumulators (m x (e + 1) sums, dW and db) kept in
 * acc_t as the states are.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "grad/grad.h"
#include "attn/output_rows.h"
#include "attn/problem.h"
#include "kernels/kern_grad.h"
#include "common/simd.h"
#include "common/validate.h"

/* [g h] of gh_rows before the query scale. */
static void gh_unscaled(const X(plan) *plan, XI(view) g, XI(view) out,
                        const real *den, int64_t rows, real *gh)
{
    int64_t e = plan->e, ld = e + 1;
    /* the count, and no normalizer at all (den 1), do not depend on the
     * features: no adjoint for it, h = 0 */
    int count = plan->denom == LINATTN_DENOM_COUNT ||
                plan->denom == LINATTN_DENOM_NONE;
    if (!g.colmajor && !out.colmajor) {
        XI(gkern_now)()->gh(gh, g.p, g.ld, out.p, out.ld, den, rows, e,
                            count);
        return;
    }
    /* column major (either): strided reads; consecutive rows share
     * their cache lines */
    for (int64_t i = 0; i < rows; i++) {
        real *row = gh + i * ld, acc = 0, inv = 1 / den[i];
        for (int64_t c = 0; c < e; c++)
            row[c] = g.colmajor ? g.p[i + c * g.ld] : g.p[i * g.ld + c];
        for (int64_t c = 0; !count && c < e; c++)
            acc += row[c] * (out.colmajor ? out.p[i + c * out.ld]
                                          : out.p[i * out.ld + c]);
        /* not a normal reciprocal: divide (as the kernel's gh) */
        for (int64_t c = 0; c < e; c++)
            row[c] = isnormal(inv) ? row[c] * inv : row[c] / den[i];
        row[e] = isnormal(inv) ? -acc * inv : -acc / den[i];
    }
}

/* With a query scale s the forward read s phi(q): the adjoint of the
 * unscaled phi(q) is s times the scaled one's, and the keys' adjoints and
 * the states' gradients read s phi(q) where they read phi(q).  Scaling
 * [g h] by s gives all of them from the unscaled features, and leaves
 * phi(q) . dphi(q) (the decays' share) as it is. */
void XI(gh_rows)(const X(plan) *plan, XI(view) g, XI(view) out,
                 const real *den, int64_t rows, real *gh)
{
    gh_unscaled(plan, g, out, den, rows, gh);
    for (int64_t i = 0; plan->qscale != 1 && i < rows * (plan->e + 1); i++)
        gh[i] *= plan->qscale;
}

XI(view) XI(fit_view)(XI(view) v, int64_t rows, int64_t cols, real *buf)
{
    if (linattn_i_ld_fits(v.ld))
        return v;
    XI(copy_rows)(v, 0, rows, cols, buf);
    return (XI(view)){buf, cols, 0};
}

void XI(gemm_to)(int trans_a, int trans_b, int64_t rows, int64_t cols,
                 int64_t inner, XI(view) a, XI(view) b, int cm, real *dst,
                 int64_t ld, real *y)
{
    if (rows == 0 || cols == 0)
        return;
    if (linattn_i_ld_fits(ld)) {
        XI(gemm_c)(cm, trans_a, trans_b, rows, cols, inner, 1, a, b, 0, dst,
                   ld);
        return;
    }
    XI(gemm)(trans_a, trans_b, rows, cols, inner, 1, a, b, 0, y, cols);
    XI(put_rows)(dst, cm, ld, y, 0, cols, rows, cols, NULL);
}

int XI(gemm_to_checked)(int64_t rows, int64_t cols, int64_t inner,
                        XI(view) a, XI(view) b, int cm, real *dst, int64_t ld,
                        real *y, const real *ones)
{
    int nonfinite = 0;
    if (rows == 0 || cols == 0)
        return 0;
    if (!cm && XI(gemm_scaled)(0, rows, cols, inner, a, b, dst, ld, ones,
                               &nonfinite))
        return nonfinite;
    XI(gemm_to)(0, 0, rows, cols, inner, a, b, cm, dst, ld, y);
    return !XI(all_finite)((XI(view)){dst, ld, cm}, rows, cols);
}

/* ---- accumulators ---- */

int XI(accum_alloc)(XI(accum) *s, int64_t len)
{
    memset(s, 0, sizeof *s);
    s->len = len;
    s->acc = linattn_i_alloc(len, sizeof(acc_t));
#if LINATTN_ACC_WIDER
    s->w = linattn_i_alloc(len, sizeof(real));
    s->part = linattn_i_alloc(len, sizeof(real));
    if (!s->acc || !s->w || !s->part) {
        XI(accum_free)(s);
        return LINATTN_ENOMEM;
    }
#else
    s->w = s->acc;
    if (!s->acc)
        return LINATTN_ENOMEM;
#endif
    XI(accum_zero)(s);
    return 0;
}

void XI(accum_free)(XI(accum) *s)
{
    free(s->acc);
#if LINATTN_ACC_WIDER
    free(s->w);
    free(s->part);
#endif
    memset(s, 0, sizeof *s);
}

void XI(accum_zero)(XI(accum) *s)
{
    memset(s->acc, 0, (size_t)s->len * sizeof(acc_t));
#if LINATTN_ACC_WIDER
    memset(s->w, 0, (size_t)s->len * sizeof(real));
#endif
    s->shift = 0;
    s->has = 0;
}

void XI(accum_gemm)(XI(accum) *s, int trans_a, int trans_b, int64_t m,
                    int64_t cols, int64_t inner, XI(view) a, XI(view) b)
{
    if (inner == 0)
        return;
#if LINATTN_ACC_WIDER
    XI(gemm)(trans_a, trans_b, m, cols, inner, 1, a, b, 0, s->part, cols);
    LINATTN_SIMD
    for (int64_t i = 0; i < s->len; i++) {
        acc_t t = s->acc[i] + s->part[i];
        s->acc[i] = t;
        s->w[i] = (real)t;
    }
#else
    XI(gemm)(trans_a, trans_b, m, cols, inner, 1, a, b, 1, s->acc, cols);
#endif
}

void XI(accum_scale)(XI(accum) *s, acc_t f)
{
    if (f == 1)
        return;
    LINATTN_SIMD
    for (int64_t i = 0; i < s->len; i++)
        s->acc[i] *= f;
    XI(accum_publish)(s);
}

void XI(accum_publish)(XI(accum) *s)
{
#if LINATTN_ACC_WIDER
    for (int64_t i = 0; i < s->len; i++)
        s->w[i] = (real)s->acc[i];
#else
    (void)s;
#endif
}

/* ---- dW and db ---- */

int XI(pgrad_open)(XI(pgrad) *pg, const X(plan) *plan, int want_dw,
                   int want_db)
{
    int64_t h = plan->wrows, d = plan->d;
    pg->dw = want_dw ? linattn_i_alloc(h * d, sizeof(acc_t)) : NULL;
    pg->db = want_db ? linattn_i_alloc(h, sizeof(acc_t)) : NULL;
    if ((want_dw && !pg->dw) || (want_db && !pg->db)) {
        XI(pgrad_free)(pg, 1);
        return LINATTN_ENOMEM;
    }
    if (pg->dw)
        memset(pg->dw, 0, (size_t)(h * d) * sizeof(acc_t));
    if (pg->db)
        memset(pg->db, 0, (size_t)h * sizeof(acc_t));
    return 0;
}

int XI(pgrad_alloc)(XI(pgrad) *parts, int nt, const X(plan) *plan,
                    const XI(pgrad) *pg)
{
    for (int t = 0; t < nt; t++)
        if (XI(pgrad_open)(&parts[t], plan, pg->dw != NULL, pg->db != NULL)) {
            XI(pgrad_free)(parts, t);
            return LINATTN_ENOMEM;
        }
    return 0;
}

void XI(pgrad_free)(XI(pgrad) *parts, int nt)
{
    for (int t = 0; t < nt; t++) {
        free(parts[t].dw);
        free(parts[t].db);
        parts[t].dw = parts[t].db = NULL;
    }
}

void XI(pgrad_fold)(const X(plan) *plan, const XI(pgrad) *pg,
                    const XI(pgrad) *parts, int nt)
{
    int64_t h = plan->wrows, d = plan->d;
    for (int t = 0; t < nt; t++) {
        for (int64_t i = 0; pg->dw && i < h * d; i++)
            pg->dw[i] += parts[t].dw[i];
        for (int64_t i = 0; pg->db && i < h; i++)
            pg->db[i] += parts[t].db[i];
    }
}

void XI(pgrad_write)(const X(plan) *plan, const XI(pgrad) *pg, int layout,
                     real *dw, int64_t lddw, real *db)
{
    int64_t h = plan->wrows, d = plan->d;
    for (int64_t i = 0; dw && i < h; i++)
        for (int64_t t = 0; t < d; t++) {
            real x = (real)pg->dw[i * d + t];
            if (layout == LINATTN_COL_MAJOR)
                dw[i + t * lddw] = x;
            else
                dw[i * lddw + t] = x;
        }
    for (int64_t i = 0; db && i < h; i++)
        db[i] = (real)pg->db[i];
}

/* ---- finite inputs, finite gradients ---- */

int XI(bwd_inputs_finite)(const XI(problem) *pb)
{
    int64_t d = pb->d, e = pb->e, nq = pb->nq, nk = pb->nk;
    /* the keys of weight 0 are not inputs: never read */
    const real *w = pb->part[LINATTN_I_KW].p;
    int keys_ok = w ? XI(first_bad_kept_key)(XI(part_view)(pb, LINATTN_I_K),
                                             XI(part_view)(pb, LINATTN_I_V),
                                             d, e, w, nk) == nk
                    : XI(all_finite)(XI(part_view)(pb, LINATTN_I_K), nk, d) &&
                          XI(all_finite)(XI(part_view)(pb, LINATTN_I_V), nk,
                                         e);
    const real *gates = pb->part[LINATTN_I_GATE].p;
    if (gates && !XI(all_finite)((XI(view)){gates, nk, 0}, 1, nk))
        return 0;
    return XI(all_finite)(XI(part_view)(pb, LINATTN_I_Q), nq, d) && keys_ok &&
           XI(all_finite)(XI(part_view)(pb, LINATTN_I_OUT), nq, e) &&
           XI(all_finite)(XI(part_view)(pb, LINATTN_I_G), nq, e) &&
           XI(all_finite)((XI(view)){pb->part[LINATTN_I_DEN].p, nq, 0}, 1,
                          nq);
}

/* Nonzero when the len doubles at x are all finite (x NULL: none). */
static int doubles_finite(const double *x, int64_t len)
{
    for (int64_t i = 0; x && i < len; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

int XI(grad_overflow)(const XI(problem) *pb, int64_t *bad_row)
{
    /* the final state's gradient handed in is an input too */
    if (!XI(bwd_inputs_finite)(pb) || (pb->state && pb->state->poisoned) ||
        !doubles_finite(pb->dstate_end, pb->m * (pb->e + 1)))
        return 0;
    for (int64_t s = 0; pb->states && s < pb->nseq; s++)
        if (pb->states[s]->poisoned) /* a packed problem's */
            return 0;
    int64_t d = pb->d, e = pb->e;
    int64_t r = XI(first_nonfinite_row)(XI(part_view)(pb, LINATTN_I_DQ),
                                        pb->nq, d);
    if (r == pb->nq) {
        int64_t rk = XI(first_nonfinite_row)(XI(part_view)(pb, LINATTN_I_DK),
                                             pb->nk, d);
        int64_t rv = XI(first_nonfinite_row)(XI(part_view)(pb, LINATTN_I_DV),
                                             pb->nk, e);
        r = rk < rv ? rk : rv;
        r = r < pb->nk ? r : -1; /* only dw or db */
    }
    if (bad_row)
        *bad_row = r;
    return LINATTN_EOVERFLOW;
}

int XI(pgrad_finite)(const X(plan) *plan, const XI(pgrad) *pg)
{
    int64_t h = plan->wrows, d = plan->d;
    for (int64_t i = 0; pg->dw && i < h * d; i++)
        if (LINATTN_NOT_FINITE((real)pg->dw[i]))
            return 0;
    for (int64_t i = 0; pg->db && i < h; i++)
        if (LINATTN_NOT_FINITE((real)pg->db[i]))
            return 0;
    return 1;
}

/* ---- one problem, packed or not ---- */

int XI(backward_problem)(const XI(problem) *pb, const XI(pgrad) *pg,
                         int *nonfinite)
{
    if (!pb->qoff)
        return pb->causal ? XI(causal_backward_run)(pb, pg, nonfinite)
                          : XI(attention_backward_run)(pb, pg, nonfinite);
    /* packed: each sequence its own problem, in order */
    const X(plan) *plan = pb->plan;
    int st = 0;
    for (int64_t s = 0; !st && s < pb->nseq; s++) {
        XI(problem) one = XI(problem_span)(pb, pb->qoff[s], pb->qoff[s + 1],
                                           pb->koff[s], pb->koff[s + 1]);
        one.qoff = one.koff = NULL;
        one.nseq = 0;
        /* the causal backward's starting states and their gradients:
         * sequence s's */
        if (pb->states)
            one.state = pb->states[s];
        one.states = NULL;
        if (pb->dstates)
            one.dstates = pb->dstates + s * plan->m * (plan->e + 1);
        int nf = 0;
        st = one.causal ? XI(causal_backward_run)(&one, pg, &nf)
                        : XI(attention_backward_run)(&one, pg, &nf);
        *nonfinite |= nf;
    }
    return st;
}

/* ---- the public single calls ---- */

/* Where part i of a single problem lies: [*lo, *hi) in bytes (empty
 * without rows or when absent). */
static void part_bytes(const XI(problem) *pb, const linattn_i_signature *sig,
                       int i, uintptr_t *lo, uintptr_t *hi)
{
    const linattn_i_part_sig *ps = &sig->part[i];
    int kind = linattn_i_part_rows_kind(i);
    int64_t rows = kind == LINATTN_I_WROWS ? pb->plan->wrows
                                           : XI(part_rows)(pb, i);
    int64_t cols = ps->cols == LINATTN_I_D   ? pb->d
                   : ps->cols == LINATTN_I_M ? pb->m
                   : ps->cols == LINATTN_I_E ? pb->e
                                             : 1;
    int64_t ld = pb->part[i].s.ld, span = 0;
    if (rows > 0 && cols > 0)
        span = (ps->role & LINATTN_I_VECTOR) ? rows
               : pb->layout == LINATTN_COL_MAJOR ? (cols - 1) * ld + rows
                                                 : (rows - 1) * ld + cols;
    *lo = (uintptr_t)pb->part[i].p;
    *hi = *lo + (uintptr_t)span * sizeof(real);
}

int XI(meets_parts)(const XI(problem) *pb, const linattn_i_signature *sig,
                    const double *x, int64_t len, unsigned roles)
{
    uintptr_t lo = (uintptr_t)x, hi = lo + (uintptr_t)len * sizeof(double);
    for (int i = 0; x && len > 0 && i < LINATTN_I_PARTS; i++) {
        if (!sig->part[i].pos || !pb->part[i].p ||
            !(sig->part[i].role & roles))
            continue;
        uintptr_t a, b;
        part_bytes(pb, sig, i, &a, &b);
        if (a < b && lo < b && a < hi)
            return 1;
    }
    return 0;
}

/* The final state's gradient handed in (checked after the validator,
 * whose stages know nothing of it): one sequence only, and apart from
 * every output (the gradients, dL/dw, the starting states' gradients). */
static int dstate_end_check(const XI(problem) *pb,
                            const linattn_i_signature *sig)
{
    if (!pb->dstate_end)
        return 0;
    int64_t len = pb->m * (pb->e + 1);
    uintptr_t lo = (uintptr_t)pb->dstate_end;
    uintptr_t hi = lo + (uintptr_t)len * sizeof(double);
    uintptr_t a = (uintptr_t)pb->dstates, b = a + (uintptr_t)len * sizeof(double);
    if (pb->qoff || XI(meets_parts)(pb, sig, pb->dstate_end, len,
                                    LINATTN_I_OUTPUT) ||
        (pb->dstates && lo < b && a < hi))
        return -sig->extras;
    return 0;
}

int XI(backward_check)(const XI(problem) *pb, const linattn_i_signature *sig,
                       int64_t *bad_row)
{
    linattn_where where = {0, 0, -1};
    int st = XI(problem_check)(pb, sig, &where);
    if (st == LINATTN_EDENOM && bad_row)
        *bad_row = where.row;
    return st ? st : dstate_end_check(pb, sig);
}

int XI(backward_single)(const XI(problem) *pb, const linattn_i_signature *sig,
                        int64_t *bad_row)
{
    int st = XI(backward_check)(pb, sig, bad_row);
    return st ? st : XI(backward_checked)(pb, bad_row);
}

int XI(backward_checked)(const XI(problem) *pb, int64_t *bad_row)
{
    int st;
    const X(plan) *plan = pb->plan;
    real *dw = XI(part_out)(pb, LINATTN_I_DW);
    real *db = XI(part_out)(pb, LINATTN_I_DB);
    XI(pgrad) pg;
    if (XI(pgrad_open)(&pg, plan, dw != NULL, db != NULL))
        return LINATTN_ENOMEM;
    int nonfinite = 0;
    st = XI(backward_problem)(pb, &pg, &nonfinite);
    if (st == LINATTN_EOVERFLOW && bad_row)
        *bad_row = -1; /* the keys' sums, before anything was written */
    if (!st && (nonfinite || !XI(pgrad_finite)(plan, &pg)))
        st = XI(grad_overflow)(pb, bad_row);
    if (!st)
        XI(pgrad_write)(plan, &pg, pb->layout, dw, pb->part[LINATTN_I_DW].s.ld,
                        db);
    XI(pgrad_free)(&pg, 1);
    return st;
}

XI(view) XI(zero_dropped)(XI(view) x, int64_t rows, int64_t cols,
                          const real *w, real *buf)
{
    for (int64_t i = 0; i < rows; i++) {
        if (w[i] == 0)
            memset(buf + i * cols, 0, (size_t)cols * sizeof(real));
        else
            XI(copy_rows)(XI(view_rows)(x, i), 0, 1, cols, buf + i * cols);
    }
    return (XI(view)){buf, cols, 0};
}
