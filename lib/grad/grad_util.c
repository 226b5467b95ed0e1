/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gradutil.c -- what the backward passes share: argument checks, the
 * adjoints [g h] of numerators and normalizers, GEMMs into the caller's
 * matrices, and accumulators (m x (e + 1) sums, dW and db) kept in
 * acc_t as the states are.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "grad/grad.h"
#include "kernels/kern_grad.h"
#include "common/simd.h"
#include "common/validate.h"

int XI(den_ok)(const X(plan) *plan, real den)
{
    if (!isfinite(den))
        return 0;
    return plan->denom == LINATTN_DENOM_NONZERO ? den != 0 : den > 0;
}

int64_t XI(den_first_bad)(const X(plan) *plan, const real *den, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!XI(den_ok)(plan, den[i]))
            return i;
    return n;
}

void XI(gh_rows)(const X(plan) *plan, XI(view) g, XI(view) out,
                 const real *den, int64_t rows, real *gh)
{
    int64_t e = plan->e, ld = e + 1;
    int count = plan->denom == LINATTN_DENOM_COUNT;
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

int XI(bwd_inputs_finite)(const X(plan) *plan, const XI(bwd_io) *io)
{
    int64_t d = plan->d, e = plan->e, nq = io->nq, nk = io->nk;
    if (!XI(all_finite)(io->q, nq, d) || !XI(all_finite)(io->k, nk, d) ||
        !XI(all_finite)(io->v, nk, e))
        return 0;
    return !io->den || (XI(all_finite)(io->out, nq, e) &&
                        XI(all_finite)(io->g, nq, e) &&
                        XI(all_finite)((XI(view)){io->den, nq, 0}, 1, nq));
}

int XI(grad_overflow)(const X(plan) *plan, const XI(bwd_io) *io,
                      int64_t *bad_row)
{
    if (!XI(bwd_inputs_finite)(plan, io) || (io->state && io->state->poisoned))
        return 0;
    int64_t d = plan->d, e = plan->e;
    int64_t r = XI(first_nonfinite_row)(io->dq, io->nq, d);
    if (r == io->nq) {
        int64_t rk = XI(first_nonfinite_row)(io->dk, io->nk, d);
        int64_t rv = XI(first_nonfinite_row)(io->dv, io->nk, e);
        r = rk < rv ? rk : rv;
        r = r < io->nk ? r : -1; /* only dw or db */
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

/* ---- argument checks ---- */

int XI(pgrad_args)(const X(plan) *plan, int layout, const real *dw,
                   int64_t lddw, const real *db, int pos)
{
    int64_t h = plan->wrows;
    if (dw && !h)
        return -pos; /* the map has no W */
    if (dw) {
        int st = linattn_i_matrix_arg(layout, h, plan->d, dw, lddw, pos);
        if (st)
            return st;
    }
    if (db && plan->map != LINATTN_MAP_CUSTOM)
        return -(pos + 2); /* only the custom maps have a b */
    if (dw && linattn_i_matrix_fits(layout, h, plan->d, lddw))
        return LINATTN_ESIZE;
    return 0;
}

void XI(pgrad_mats)(const X(plan) *plan, int layout, const real *dw,
                    int64_t lddw, const real *db, int pos, linattn_i_mat *two)
{
    two[0] = (linattn_i_mat){plan->wrows, plan->d, dw, lddw, pos, 1};
    two[1] = (linattn_i_mat){plan->wrows, 1, db,
                             linattn_i_vector_ld(layout, plan->wrows), pos + 2,
                             1};
}

int XI(backward_call)(int causal, const X(plan) *plan, int layout,
                      int64_t nq, int64_t nk, const real *q, int64_t ldq,
                      const real *k, int64_t ldk, const real *v, int64_t ldv,
                      const real *out, int64_t ldout, const real *den,
                      const real *g, int64_t ldg, real *dq, int64_t lddq,
                      real *dk, int64_t lddk, real *dv, int64_t lddv,
                      real *dw, int64_t lddw, real *db, const X(state) *state,
                      int64_t *bad_row)
{
    if (!plan)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    if (nq < 0)
        return -3;
    if (!causal && nk < 0)
        return -4;
    int st = XI(backward_args)(plan, layout, nq, nk, q, ldq, k, ldk, v, ldv,
                               out, ldout, den, g, ldg, dq, lddq, dk, lddk,
                               dv, lddv, dw, lddw, db, state,
                               causal ? 4 : 5, bad_row);
    if (st)
        return st;
    XI(pgrad) pg;
    if (XI(pgrad_open)(&pg, plan, dw != NULL, db != NULL))
        return LINATTN_ENOMEM;
    int cm = layout == LINATTN_COL_MAJOR, nonfinite = 0;
    XI(bwd_io) io = {nq,          nk,         {q, ldq, cm},
                     {k, ldk, cm}, {v, ldv, cm}, {out, ldout, cm},
                     {g, ldg, cm}, {dq, lddq, cm}, {dk, lddk, cm},
                     {dv, lddv, cm}, den,       state};
    if (causal)
        st = XI(causal_backward_run)(plan, layout, nq, io.q, io.k, io.v,
                                     io.out, den, io.g, dq, lddq, dk, lddk, dv,
                                     lddv, &pg, &nonfinite);
    else
        st = XI(attention_backward_run)(plan, layout, nq, nk, io.q, io.k, io.v,
                                        io.out, den, io.g, dq, lddq, dk, lddk,
                                        dv, lddv, &pg, state, &nonfinite);
    if (st == LINATTN_EOVERFLOW && bad_row)
        *bad_row = -1; /* the keys' sums, before anything was written */
    if (!st && (nonfinite || !XI(pgrad_finite)(plan, &pg)))
        st = XI(grad_overflow)(plan, &io, bad_row);
    if (!st)
        XI(pgrad_write)(plan, &pg, layout, dw, lddw, db);
    XI(pgrad_free)(&pg, 1);
    return st;
}

int XI(backward_args)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                      const real *q, int64_t ldq, const real *k, int64_t ldk,
                      const real *v, int64_t ldv, const real *out,
                      int64_t ldout, const real *den, const real *g,
                      int64_t ldg, const real *dq, int64_t lddq,
                      const real *dk, int64_t lddk, const real *dv,
                      int64_t lddv, const real *dw, int64_t lddw,
                      const real *db, const X(state) *state, int pos,
                      int64_t *bad_row)
{
    int64_t d = plan->d, e = plan->e;
    /* den is an nq x 1 matrix whose leading dimension the call implies */
    int64_t ldden = linattn_i_vector_ld(layout, nq);
    linattn_i_mat mats[11] = {
        {nq, d, q, ldq, pos, 0},         {nk, d, k, ldk, pos + 2, 0},
        {nk, e, v, ldv, pos + 4, 0},     {nq, e, out, ldout, pos + 6, 0},
        {nq, 1, den, ldden, pos + 8, 0}, {nq, e, g, ldg, pos + 9, 0},
        {nq, d, dq, lddq, pos + 11, 0},  {nk, d, dk, lddk, pos + 13, 0},
        {nk, e, dv, lddv, pos + 15, 0}};
    /* dq, dk, dv (from 6 on) apart from the inputs and one another */
    int st = linattn_i_check_mats_io(layout, sizeof(real), mats, 9, 6);
    if (st < 0)
        return st;
    int pst = XI(pgrad_args)(plan, layout, dw, lddw, db, pos + 17);
    if (pst < 0)
        return pst;
    /* a state to use must be of this map, holding nk tokens (its shift is
     * the one den was taken at, by the forward that made it) */
    const X(plan) *sp = state ? state->plan : NULL;
    if (sp && (sp->fingerprint != plan->fingerprint || sp->map != plan->map ||
               sp->d != plan->d || sp->m != plan->m || sp->e != plan->e ||
               state->tokens != nk))
        return -(pos + 20);
    if (st || pst)
        return st ? st : pst;
    /* dw and db, known valid now, apart from every other matrix too */
    XI(pgrad_mats)(plan, layout, dw, lddw, db, pos + 17, mats + 9);
    st = linattn_i_check_mats_io(layout, sizeof(real), mats, 11, 6);
    if (st)
        return st;
    int cm = layout == LINATTN_COL_MAJOR;
    XI(bwd_io) io = {nq,           nk,           {q, ldq, cm},
                     {k, ldk, cm}, {v, ldv, cm}, {out, ldout, cm},
                     {g, ldg, cm}, {NULL, 0, 0}, {NULL, 0, 0},
                     {NULL, 0, 0}, den,          NULL};
    if (plan->check_finite && !XI(bwd_inputs_finite)(plan, &io))
        return LINATTN_ENONFINITE;
    int64_t bad = XI(den_first_bad)(plan, den, nq);
    if (bad < nq) {
        if (bad_row)
            *bad_row = bad;
        return LINATTN_EDENOM;
    }
    return 0;
}
