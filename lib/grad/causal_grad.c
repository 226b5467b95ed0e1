/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * causal_grad.c -- gradients of causal linear attention, chunked as
 * the forward (causal.c), and the forward call that hands back the
 * normalizers they need.
 *
 * Row i sees keys j <= i.  With [g h]_i as in grad/attention_grad.c (G_i /
 * den_i, -(G_i . out_i) / den_i) and P_ij = [g h]_i . [v_j 1]:
 *
 *     dphi(q_i) = sum_{j <= i} P_ij phi(k_j)   = [S z]_{<=i} [g h]_i
 *     dphi(k_j) = sum_{i >= j} P_ij phi(q_i)   = D_{>=j} [v_j 1]
 *     dv_j      = sum_{i >= j} A_ij g_i,         A_ij = phi(q_i).phi(k_j)
 *
 * with the prefix states [S z] of the forward and the suffix sums
 * D_{>=j} = sum_{i >= j} phi(q_i) [g h]_i^T.  Two sweeps over chunks of C
 * rows, each with carried m x (e + 1) sums and the chunk's triangles:
 *
 *   forward sweep (dQ):  dphi(Q_c) = [g h]_c [S z]^T + tril(P) phi(K_c),
 *                        then [S z] += phi(K_c)^T [V_c 1];
 *   reverse sweep (dK, dV, from the last chunk):
 *                        dphi(K_c) = [V_c 1] D^T + tril(P)^T phi(Q_c),
 *                        dV_c = phi(K_c) D_S + tril(A)^T g_c,
 *                        then D += phi(Q_c)^T [g h]_c.
 *
 * The triangles read only entries with j <= i (GEMMs below the diagonal
 * blocks, loops on them), so no gradient of row i's query reads a later
 * key and no key's gradient reads an earlier row's G, not even as 0 * Inf.
 * Memory: per thread O(C (m + e + C) + m e), whatever n.  Saved from the
 * forward: out and den.
 *
 * Shifted maps: as in the forward, key j's features carry exp(-m_j), the
 * running maximum of the key exponents, and entries (i, j) of the
 * triangles are rescaled by exp(m_j - m_i) <= 1, the carried state's terms
 * by exp(M - m_i) <= 1.  den_i (as the forward wrote it) carries
 * exp(-c_i - m_i), so [g h]_i carries exp(c_i + m_i) and D is kept times
 * exp(R - m_i) for each row it holds, R the smallest m_i among them (the
 * first row's): every factor is at most 1.  The reverse sweep needs the
 * running maximum at each chunk's start, which cannot be recovered
 * backwards; the forward sweep leaves it in dV's first entry of the
 * chunk's first row, which the reverse sweep reads before it writes that
 * row (so dV takes no memory beyond its own, and no copy of the shifts
 * grows with n).
 *
 * Threads: as the forward, contiguous ranges.  Range t's forward sweep
 * starts from the state of the ranges before it (built first); its
 * reverse sweep from the suffix sums of the ranges after it, which their
 * forward sweeps computed along the way.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "grad/grad.h"
#include "attn/paths.h"
#include "attn/problem.h"
#include "kernels/kern.h"
#include "kernels/kern_grad.h"
#include "common/simd.h"
#include "common/threads.h"
#include "common/validate.h"

/* One thread's workspace: the chunk's features, values with ones, [g h],
 * the squares A and P, the adjoints, dV staging, the running shifts. */
typedef struct {
    real *fq, *fk, *gh, *sa, *sp, *a, *y;
    /* transposes, so that every product's right operand is untransposed
     * (the kernels' micro-kernel takes those): [V_c 1]^T (built from V
     * directly), phi(K_c)^T, and dV's later-rows part before it is
     * turned */
    real *vt, *kt, *yt;
    /* key weights: a chunk's keys and values with the rows of weight 0
     * zeroed (those rows are never read) */
    real *kz, *vz;
    double *rexp, *mrun;
    XI(fgrad_ws) fw;
    /* the carried sums, transposed ((e + 1) x m) for the same reason */
    XI(accum) pre;  /* forward sweep: the state [S z]^T of earlier rows */
    XI(accum) part; /* forward sweep: this range's D^T (ranges t > 0)   */
    XI(accum) suf;  /* reverse sweep: D^T of the later rows             */
} cws;

static void free_cws(cws *w)
{
    free(w->fq), free(w->fk), free(w->gh), free(w->sa), free(w->sp);
    free(w->a), free(w->y), free(w->vt), free(w->kt), free(w->yt);
    free(w->kz), free(w->vz), free(w->rexp), free(w->mrun);
    XI(fgrad_free)(&w->fw);
    XI(accum_free)(&w->pre);
    XI(accum_free)(&w->part);
    XI(accum_free)(&w->suf);
}

static int alloc_cws(cws *w, const X(plan) *plan, int64_t c)
{
    int64_t m = plan->m, e = plan->e, ld = e + 1;
    memset(w, 0, sizeof *w);
    w->fq = linattn_i_alloc(c * m, sizeof(real));
    w->fk = linattn_i_alloc(c * m, sizeof(real));
    w->a = linattn_i_alloc(c * m, sizeof(real));
    w->gh = linattn_i_alloc(c * ld, sizeof(real));
    w->sa = linattn_i_alloc(c * c, sizeof(real));
    w->sp = linattn_i_alloc(c * c, sizeof(real));
    w->y = linattn_i_alloc(c * ld, sizeof(real));
    w->vt = linattn_i_alloc(ld * c, sizeof(real));
    w->kt = linattn_i_alloc(m * c, sizeof(real));
    w->yt = linattn_i_alloc(ld * c, sizeof(real));
    w->kz = linattn_i_alloc(c * plan->d, sizeof(real));
    w->vz = linattn_i_alloc(c * e, sizeof(real));
    w->rexp = linattn_i_alloc(c, sizeof(double));
    w->mrun = linattn_i_alloc(c, sizeof(double));
    int bad = !w->fq || !w->fk || !w->a || !w->gh || !w->sa || !w->sp ||
              !w->y || !w->vt || !w->kt || !w->yt || !w->kz || !w->vz ||
              !w->rexp || !w->mrun;
    bad = bad || XI(fgrad_alloc)(&w->fw, plan, c);
    bad = bad || XI(accum_alloc)(&w->pre, m * ld);
    bad = bad || XI(accum_alloc)(&w->part, m * ld);
    bad = bad || XI(accum_alloc)(&w->suf, m * ld);
    if (bad) {
        free_cws(w);
        return LINATTN_ENOMEM;
    }
    return 0;
}

/* exp(to - from), exactly 1 when they are equal (also both infinite). */
static double factor(double to, double from)
{
    return to == from ? 1 : exp(to - from);
}

static void scale_row(real *r, int64_t len, double f)
{
    if (f == 1)
        return;
    real g = (real)f;
    for (int64_t c = 0; c < len; c++)
        r[c] *= g;
}

/* y_j (width w, ldy) += sum_{i >= j} A_ij x_i (x: ldx) for j < rows: the
 * blocks below the diagonal blocks by GEMM, the diagonal blocks by loops,
 * so that no entry with i < j is read. */
static void XI(triangle_t_times)(const real *a, int64_t lda, const real *x,
                                 int64_t ldx, int64_t rows, int64_t w,
                                 real *y, int64_t ldy)
{
    const XI(gkern) *gk = XI(gkern_now)();
    for (int64_t j0 = 0; j0 < rows; j0 += LINATTN_TRI_BLOCK) {
        int64_t j1 = j0 + LINATTN_TRI_BLOCK < rows ? j0 + LINATTN_TRI_BLOCK
                                                    : rows;
        if (j1 < rows)
            XI(gemm)(1, 0, j1 - j0, w, rows - j1, 1,
                     (XI(view)){a + j1 * lda + j0, lda, 0},
                     (XI(view)){x + j1 * ldx, ldx, 0}, 1, y + j0 * ldy, ldy);
        gk->tri_t_diag(a, lda, x, ldx, w, j0, j1, y, ldy);
    }
}

/* c (ldc) = a bt for rows i < rows and columns j < the end of i's row
 * block: every entry j <= i the triangles read, and a quarter less than the
 * whole square at C = 2 LINATTN_TRI_BLOCK (the entries above are never read).
 */
static void XI(lower_square)(XI(view) a, XI(view) bt, int64_t rows,
                             int64_t k, real *c, int64_t ldc)
{
    for (int64_t r0 = 0; r0 < rows; r0 += LINATTN_TRI_BLOCK) {
        int64_t r1 = r0 + LINATTN_TRI_BLOCK < rows ? r0 + LINATTN_TRI_BLOCK
                                                    : rows;
        XI(gemm)(0, 0, r1 - r0, r1, k, 1, XI(view_rows)(a, r0), bt, 0,
                 c + r0 * ldc, ldc);
    }
}

/* vt (e + 1 rows, ld c) = [V_c 1]^T for rows rows of the view v. */
static void values_t(XI(view) v, int64_t rows, int64_t e, real *vt,
                     int64_t c)
{
    if (v.colmajor)
        for (int64_t col = 0; col < e; col++)
            memcpy(vt + col * c, v.p + col * v.ld, (size_t)rows * sizeof(real));
    else
        XI(kern_now)()->transpose(rows, e, v.p, v.ld, vt, c);
    for (int64_t i = 0; i < rows; i++)
        vt[e * c + i] = 1;
}

typedef struct {
    const XI(problem) *pb; /* the call's; a range's rows: problem_rows */
    cws *ws;
    XI(pgrad) *pg;
    int64_t c;
} cjob;

/* The chunk's keys and values as the sweeps read them: where the caller
 * keeps them, or (key weights with a 0 among the chunk's) copies with
 * those rows zeroed, never read. */
static void chunk_keys(const XI(problem) *rg, cws *w, int64_t r,
                       int64_t rows, XI(view) *kb, XI(view) *vb)
{
    const X(plan) *plan = rg->plan;
    const real *wt = rg->part[LINATTN_I_KW].p;
    *kb = XI(view_rows)(XI(part_view)(rg, LINATTN_I_K), r);
    *vb = XI(view_rows)(XI(part_view)(rg, LINATTN_I_V), r);
    int zeros = 0;
    for (int64_t j = 0; wt && j < rows; j++)
        zeros |= wt[r + j] == 0;
    if (zeros) {
        *kb = XI(zero_dropped)(*kb, rows, plan->d, wt + r, w->kz);
        /* the state's gradient alone reads no values */
        if (rg->part[LINATTN_I_V].p)
            *vb = XI(zero_dropped)(*vb, rows, plan->e, wt + r, w->vz);
    }
}

/* The chunk's features, [V 1] and [g h]; shifted maps take the keys at
 * their running shifts from start (-inf: none yet), the keys of weight 0
 * without a say in them, as in the forward.  Key weights w_j scale [v_j
 * 1], so that S, z, the squares' P and every key's adjoint carry them.
 * *kv, *vv: the chunk's keys and values as read (chunk_keys). */
static void chunk_inputs(const XI(problem) *rg, cws *w, int64_t r,
                         int64_t rows, int64_t c, double start, XI(view) *kv,
                         XI(view) *vv)
{
    const X(plan) *plan = rg->plan;
    const real *wt = rg->part[LINATTN_I_KW].p;
    XI(phi_rows)(plan, XI(view_rows)(XI(part_view)(rg, LINATTN_I_Q), r), rows,
                 w->fq, NULL);
    XI(view) kb, vb;
    chunk_keys(rg, w, r, rows, &kb, &vb);
    *kv = kb;
    *vv = vb;
    if (plan->shifted) {
        XI(phi_pre)(plan, kb, rows, w->fk, w->rexp);
        for (int64_t j = 0; wt && j < rows; j++)
            if (wt[r + j] == 0)
                w->rexp[j] = -INFINITY;
        double run = start;
        for (int64_t j = 0; j < rows; j++) {
            double x = w->rexp[j];
            run = x > run || x != x ? x : run; /* NaN propagates */
            w->mrun[j] = run;
        }
        XI(phi_post)(plan, w->fk, rows, w->rexp, w->mrun, 0, NULL);
    } else {
        XI(phi_rows)(plan, kb, rows, w->fk, NULL);
    }
    values_t(vb, rows, plan->e, w->vt, c);
    for (int64_t col = 0; wt && col <= plan->e; col++)
        for (int64_t j = 0; j < rows; j++)
            w->vt[col * c + j] *= wt[r + j];
    XI(gh_rows)(plan, XI(view_rows)(XI(part_view)(rg, LINATTN_I_G), r),
                XI(view_rows)(XI(part_view)(rg, LINATTN_I_OUT), r),
                rg->part[LINATTN_I_DEN].p + r, rows, w->gh);
}

/* Shifted maps: entries (i, j < i) of the squares times exp(m_j - m_i). */
static void rescale_squares(const X(plan) *plan, cws *w, int64_t rows,
                            int64_t c, int both)
{
    if (!plan->shifted)
        return;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < i; j++) {
            if (w->mrun[j] == w->mrun[i])
                continue;
            real f = (real)exp(w->mrun[j] - w->mrun[i]);
            w->sp[i * c + j] *= f;
            if (both)
                w->sa[i * c + j] *= f;
        }
}

/* The forward sweep over a range: dQ, and (part) the range's own D;
 * nonzero when a value written to dQ is not finite. */
static int forward_sweep(const XI(problem) *rg, cws *w, int64_t c, int part,
                         const XI(pgrad) *pg)
{
    const X(plan) *plan = rg->plan;
    int cm = rg->layout == LINATTN_COL_MAJOR;
    int64_t m = plan->m, e = plan->e, ld = e + 1, n = rg->nq;
    int64_t lddq = rg->part[LINATTN_I_DQ].s.ld;
    XI(accum) *s = &w->pre;
    XI(view) fq = {w->fq, m, 0}, fk = {w->fk, m, 0}, ghv = {w->gh, ld, 0};
    XI(view) vt = {w->vt, c, 0};
    const XI(kern) *kn = XI(kern_now)();
    int bad = 0;
    for (int64_t r = 0; r < n; r += c) {
        int64_t rows = n - r < c ? n - r : c;
        double start = s->has ? s->shift : -INFINITY;
        XI(view) kb, vb;
        chunk_inputs(rg, w, r, rows, c, start, &kb, &vb);
        if (plan->shifted) /* the reverse sweep's note, exact in real */
            *XI(part_row)(rg, LINATTN_I_DV, r) = (real)start;
        XI(lower_square)(ghv, vt, rows, ld, w->sp, c);
        rescale_squares(plan, w, rows, c, 0);
        /* dphi(Q_c) = [g h] [S z]^T (row i at exp(M - m_i)) + tril(P) K */
        if (s->has) {
            XI(gemm)(0, 0, rows, m, ld, 1, ghv, (XI(view)){s->w, m, 0}, 0,
                     w->a, m);
            for (int64_t i = 0; plan->shifted && i < rows; i++)
                scale_row(w->a + i * m, m, factor(s->shift, w->mrun[i]));
        } else {
            memset(w->a, 0, (size_t)(rows * m) * sizeof(real));
        }
        if (kn->trimm)
            kn->trimm(rows, m, w->sp, c, w->fk, m, w->a, m, w->a, m, NULL);
        else
            XI(tril_times)(w->sp, c, fk, rows, m, w->a, m);
        XI(view) qb = XI(view_rows)(XI(part_view)(rg, LINATTN_I_Q), r);
        bad |= XI(phi_backward)(plan, qb, rows, w->fq, w->a, cm,
                                XI(part_row)(rg, LINATTN_I_DQ, r), lddq,
                                &w->fw, pg);
        if (part) { /* D of this range at the shift of its first row */
            XI(accum) *d = &w->part;
            if (!d->has)
                d->shift = plan->shifted ? w->mrun[0] : 0;
            for (int64_t i = 0; plan->shifted && i < rows; i++)
                scale_row(w->gh + i * ld, ld, factor(d->shift, w->mrun[i]));
            XI(accum_gemm)(d, 1, 0, ld, m, rows, ghv, fq);
            d->has = 1;
        }
        /* the state moves past the chunk, to its last shift */
        if (plan->shifted) {
            double to = w->mrun[rows - 1];
            for (int64_t j = 0; j < rows; j++)
                scale_row(w->fk + j * m, m, factor(w->mrun[j], to));
            if (s->has)
                XI(accum_scale)(s, factor(s->shift, to));
            s->shift = to;
        }
        XI(accum_gemm)(s, 0, 0, ld, m, rows, vt, fk);
        s->has = 1;
    }
    return bad;
}

/* The reverse sweep over a range, from the suffix sums in w->suf;
 * nonzero when a value written to dK or dV is not finite. */
static int reverse_sweep(const XI(problem) *rg, cws *w, int64_t c,
                         const XI(pgrad) *pg)
{
    const X(plan) *plan = rg->plan;
    int cm = rg->layout == LINATTN_COL_MAJOR;
    int64_t m = plan->m, e = plan->e, ld = e + 1, n = rg->nq;
    int64_t lddk = rg->part[LINATTN_I_DK].s.ld;
    int64_t lddv = rg->part[LINATTN_I_DV].s.ld;
    const real *wt = rg->part[LINATTN_I_KW].p;
    real *dkw = XI(part_out)(rg, LINATTN_I_DKW);
    /* the width of the values' adjoints: and the ones' for dL/dw */
    int64_t ey = dkw ? ld : e;
    XI(accum) *d = &w->suf;
    XI(view) fq = {w->fq, m, 0}, ghv = {w->gh, ld, 0};
    XI(view) vt = {w->vt, c, 0}, kt = {w->kt, c, 0};
    const XI(kern) *kn = XI(kern_now)();
    int bad = 0;
    for (int64_t r = (n - 1) / c * c; n > 0 && r >= 0; r -= c) {
        int64_t rows = n - r < c ? n - r : c;
        double start = 0;
        if (plan->shifted)
            start = (double)*XI(part_row)(rg, LINATTN_I_DV, r);
        XI(view) kb, vb;
        chunk_inputs(rg, w, r, rows, c, start, &kb, &vb);
        kn->transpose(rows, m, w->fk, m, w->kt, c);
        XI(lower_square)(fq, kt, rows, m, w->sa, c);
        XI(lower_square)(ghv, vt, rows, ld, w->sp, c);
        rescale_squares(plan, w, rows, c, 1);
        /* the later rows: dphi(K_c) = [V 1] D^T, dV_c = phi(K_c) D_S
         * (as (D_S^T phi(K_c)^T)^T), row j at exp(m_j - R) */
        if (d->has) {
            XI(view) dt = {d->w, m, 0};
            XI(gemm)(1, 0, rows, m, ld, 1, vt, dt, 0, w->a, m);
            XI(gemm)(0, 0, ey, rows, m, 1, dt, kt, 0, w->yt, c);
            kn->transpose(ey, rows, w->yt, c, w->y, ey);
            for (int64_t j = 0; plan->shifted && j < rows; j++) {
                double f = factor(w->mrun[j], d->shift);
                scale_row(w->a + j * m, m, f);
                scale_row(w->y + j * ey, ey, f);
            }
        } else {
            memset(w->a, 0, (size_t)(rows * m) * sizeof(real));
            memset(w->y, 0, (size_t)(rows * ey) * sizeof(real));
        }
        /* the chunk's own rows i >= j */
        XI(triangle_t_times)(w->sp, c, w->fq, m, rows, m, w->a, m);
        XI(triangle_t_times)(w->sa, c, w->gh, ld, rows, ey, w->y, ey);
        /* [y_j | y1_j] are the adjoints of the weighted [w_j v_j | w_j]:
         * dv_j = w_j y_j, dL/dw_j = v_j . y_j + y1_j */
        for (int64_t j = 0; dkw && j < rows; j++) {
            real dot = w->y[j * ey + e];
            for (int64_t col = 0; col < e; col++)
                dot += *(vb.colmajor ? vb.p + j + col * vb.ld
                                     : vb.p + j * vb.ld + col) *
                       w->y[j * ey + col];
            dkw[r + j] = wt && wt[r + j] == 0 ? 0 : dot;
            bad |= LINATTN_NOT_FINITE(dkw[r + j]);
        }
        bad |= XI(put_rows)(XI(part_row)(rg, LINATTN_I_DV, r), cm, lddv, w->y,
                            0, ey, rows, e, wt ? wt + r : NULL);
        bad |= XI(phi_backward)(plan, kb, rows, w->fk, w->a, cm,
                                XI(part_row)(rg, LINATTN_I_DK, r), lddk,
                                &w->fw, pg);
        /* D takes the chunk's rows, at the shift of its first row */
        if (plan->shifted) {
            double to = w->mrun[0];
            if (d->has)
                XI(accum_scale)(d, factor(to, d->shift));
            for (int64_t i = 0; i < rows; i++)
                scale_row(w->gh + i * ld, ld, factor(to, w->mrun[i]));
            d->shift = to;
        }
        XI(accum_gemm)(d, 1, 0, ld, m, rows, ghv, fq);
        d->has = 1;
    }
    return bad;
}

static int64_t forward_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    cjob *j = ctx;
    XI(problem) rg = XI(problem_rows)(j->pb, lo, hi);
    int bad = forward_sweep(&rg, &j->ws[t], j->c, t > 0, &j->pg[t]);
    return bad ? lo : INT64_MAX;
}

static int64_t reverse_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    cjob *j = ctx;
    XI(problem) rg = XI(problem_rows)(j->pb, lo, hi);
    int bad = reverse_sweep(&rg, &j->ws[t], j->c, &j->pg[t]);
    return bad ? lo : INT64_MAX;
}

/* The start states of ranges 1 .. nt-1: the states of the ranges before,
 * built one after another (each update threaded), then added up. */
static int prefix_states(const XI(problem) *pb, cws *ws, int nt)
{
    const X(plan) *plan = pb->plan;
    int64_t n = pb->nq;
    size_t bytes = XI(state_bytes)(plan);
    char *mem = malloc((size_t)(nt - 1) * bytes);
    if (!mem)
        return LINATTN_ENOMEM;
    int st = 0;
    for (int t = 1; !st && t < nt; t++) {
        int64_t lo = linattn_i_range_start(n, nt, t - 1);
        int64_t hi = linattn_i_range_start(n, nt, t);
        XI(problem) rg = XI(problem_rows)(pb, lo, hi);
        X(state) s;
        XI(state_init)(&s, plan, mem + (size_t)(t - 1) * bytes);
        st = XI(state_update_run)(&s, &rg, 0);
        if (st)
            break;
        XI(accum) *to = &ws[t].pre, *from = &ws[t - 1].pre;
        acc_t a, b;
        to->shift = from->shift;
        XI(shift_factors)(plan, &to->shift, from->has, s.shift, s.tokens > 0,
                          &a, &b);
        to->has = from->has || s.tokens > 0;
        int64_t m = plan->m, ld = plan->e + 1; /* acc: [S z]^T */
        for (int64_t i = 0; i < ld; i++)
            for (int64_t j = 0; j < m; j++)
                to->acc[i * m + j] =
                    a * from->acc[i * m + j] + b * s.acc[j * ld + i];
        XI(accum_publish)(to);
    }
    free(mem);
    return st;
}

/* Range t's suffix: range t + 1's own D and its suffix, at the shift of
 * range t + 1's first row (the smaller). */
static void suffix_sums(cws *ws, int nt)
{
    for (int t = nt - 2; t >= 0; t--) {
        XI(accum) *to = &ws[t].suf, *own = &ws[t + 1].part;
        const XI(accum) *after = &ws[t + 1].suf;
        acc_t f = after->has ? (acc_t)factor(own->shift, after->shift) : 0;
        for (int64_t i = 0; i < to->len; i++)
            to->acc[i] = own->acc[i] + (after->has ? f * after->acc[i] : 0);
        to->shift = own->shift;
        to->has = own->has || after->has;
        XI(accum_publish)(to);
    }
}

/* A starting state (rows see its keys first): the first range's forward
 * sweep starts from it, [S z] transposed into pre at its shift, holding
 * keys when it has tokens (as the forward seeds its carried state); the
 * ranges after it start from it too (prefix_states adds to it). */
static void seed_pre(const X(plan) *plan, XI(accum) *pre, const X(state) *from)
{
    int64_t m = plan->m, ld = plan->e + 1;
    for (int64_t i = 0; i < ld; i++)
        for (int64_t j = 0; j < m; j++)
            pre->acc[i * m + j] = from->acc[j * ld + i];
    pre->shift = from->shift;
    pre->has = from->tokens > 0;
    XI(accum_publish)(pre);
}

/* The final state's gradient from beyond the call (m x (e + 1) doubles,
 * its accumulator's: the true sums' gradient times exp(shift), shift the
 * final state's) as the last range's suffix sums: D^T stored times
 * exp(R) with R = shift, the largest running shift, so the sweep's
 * factors exp(m_j - R) stay <= 1. */
static void seed_suffix(const X(plan) *plan, XI(accum) *suf,
                        const double *dend, double shift)
{
    int64_t m = plan->m, ld = plan->e + 1;
    for (int64_t i = 0; i < ld; i++)
        for (int64_t j = 0; j < m; j++)
            suf->acc[i * m + j] = (acc_t)dend[j * ld + i];
    suf->shift = plan->shifted ? shift : 0;
    suf->has = 1;
    XI(accum_publish)(suf);
}

/* The starting state's gradient from d, the first range's D after its
 * reverse sweep (every row's: sum_i phi(q_i) [g h]_i^T, stored times
 * exp(R), R = d->shift): the accumulator holds the sums times
 * exp(-shift), so its gradient is D exp(shift - R), a factor <= 1 (the
 * rows' shifts start from the state's).  A state without tokens is not
 * read (as in the forward): 0.  out: m x (e + 1), row major.  Nonzero
 * when an entry is not finite. */
static int write_dstate(const X(plan) *plan, const XI(accum) *d,
                        const X(state) *from, double *out)
{
    int64_t m = plan->m, ld = plan->e + 1;
    int live = d && d->has && from->tokens > 0, bad = 0;
    double f = live && plan->shifted ? factor(from->shift, d->shift) : 1;
    for (int64_t j = 0; j < m; j++)
        for (int64_t i = 0; i < ld; i++) {
            double x = live ? (double)d->acc[i * m + j] * f : 0;
            out[j * ld + i] = x;
            bad |= !isfinite(x);
        }
    return bad;
}

int XI(causal_backward_run)(const XI(problem) *pb, const XI(pgrad) *pg,
                            int *nonfinite)
{
    const X(plan) *plan = pb->plan;
    int64_t n = pb->nq;
    if (n == 0) {
        if (pb->dstates)
            write_dstate(plan, NULL, pb->state, pb->dstates);
        return 0;
    }
    int64_t c = plan->chunk < n ? plan->chunk : n;
    int64_t min_rows = plan->block > c ? plan->block : c;
    int nt = linattn_i_threads(n, min_rows);
    cws ws[LINATTN_MAX_THREADS];
    XI(pgrad) parts[LINATTN_MAX_THREADS];
    XI(pgrad) none = {NULL, NULL};
    const XI(pgrad) *pgv = pg ? pg : &none;
    int split = nt > 1 && (pgv->dw || pgv->db);
    int have = 0, st = 0;
    while (have < nt && !alloc_cws(&ws[have], plan, c))
        have++;
    if (have < nt || (split && XI(pgrad_alloc)(parts, nt, plan, pgv)))
        st = LINATTN_ENOMEM;
    if (!st && pb->state)
        seed_pre(plan, &ws[0].pre, pb->state);
    if (!st && nt > 1)
        st = prefix_states(pb, ws, nt);
    if (!st) {
        for (int t = 0; !split && t < nt; t++)
            parts[t] = *pgv;
        cjob job = {pb, ws, parts, c};
        int64_t qbad = linattn_i_parallel_ranges(nt, n, forward_range, &job);
        if (pb->dstate_end) /* at the final running shift, the last pre's */
            seed_suffix(plan, &ws[nt - 1].suf, pb->dstate_end,
                        ws[nt - 1].pre.shift);
        suffix_sums(ws, nt);
        int64_t kbad = linattn_i_parallel_ranges(nt, n, reverse_range, &job);
        *nonfinite = qbad != INT64_MAX || kbad != INT64_MAX;
        if (pb->dstates)
            *nonfinite |= write_dstate(plan, &ws[0].suf, pb->state,
                                       pb->dstates);
        if (split)
            XI(pgrad_fold)(plan, pgv, parts, nt);
    }
    if (split && have == nt)
        XI(pgrad_free)(parts, nt);
    for (int t = 0; t < have; t++)
        free_cws(&ws[t]);
    return st;
}

/* ---- the public call ---- */

/* linattn_d_causal_backward: n rows of Q, K, V, out, den, G in; dQ, dK,
 * dV out; dW and db (optional) against the map, after the others. */
static const linattn_i_signature backward_sig = {
    .plan = 1, .layout = 2, .nq = 3,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY,
    .part = {LINATTN_I_BACKWARD(4)}};

int X(causal_backward)(const X(plan) *plan, int layout, int64_t n,
                       const real *q, int64_t ldq, const real *k, int64_t ldk,
                       const real *v, int64_t ldv, const real *out,
                       int64_t ldout, const real *den, const real *g,
                       int64_t ldg, real *dq, int64_t lddq, real *dk,
                       int64_t lddk, real *dv, int64_t lddv, real *dw,
                       int64_t lddw, real *db, int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, n, n);
    pb.causal = 1;
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_grads)(&pb, den, g, ldg, dq, lddq, dk, lddk, dv, lddv, dw,
                      lddw, db);
    return XI(backward_single)(&pb, &backward_sig, bad_row);
}

/* linattn_d_causal_backward_ex: and the extras (24): key weights in,
 * dL/dw out, packed sequences, the forward's starting state (or states)
 * and their gradients out. */
static const linattn_i_signature backward_ex_sig = {
    .plan = 1, .layout = 2, .nq = 3, .extras = 24, .given = 24, .absorb = 24,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_DWEIGHTS |
                LINATTN_I_X_OFFSETS | LINATTN_I_X_STATE |
                LINATTN_I_X_STATES | LINATTN_I_X_DSTATES |
                LINATTN_I_X_DSTATE_END,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY,
    .part = {LINATTN_I_BACKWARD(4), LINATTN_I_WEIGHTS_IN(24),
             LINATTN_I_DWEIGHTS_OUT(24)}};

/* The problem of linattn_d_causal_backward_ex from its arguments. */
static XI(problem) backward_ex_problem(const X(plan) *plan, int layout,
        int64_t n, const real *q, int64_t ldq, const real *k, int64_t ldk,
        const real *v, int64_t ldv, const real *out, int64_t ldout,
        const real *den, const real *g, int64_t ldg, real *dq, int64_t lddq,
        real *dk, int64_t lddk, real *dv, int64_t lddv, real *dw,
        int64_t lddw, real *db, const X(extras) *ex)
{
    XI(problem) pb = XI(problem_init)(plan, layout, n, n);
    pb.causal = 1;
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_grads)(&pb, den, g, ldg, dq, lddq, dk, lddk, dv, lddv, dw,
                      lddw, db);
    XI(problem_backward_extras)(&pb, ex, ex ? ex->state : NULL);
    /* the backward only reads the states: absorb must be 0 (refused as a
     * value other than 0 or 1 is) */
    pb.absorb = ex && ex->absorb ? -1 : 0;
    return pb;
}

int X(causal_backward_ex)(const X(plan) *plan, int layout, int64_t n,
                          const real *q, int64_t ldq, const real *k,
                          int64_t ldk, const real *v, int64_t ldv,
                          const real *out, int64_t ldout, const real *den,
                          const real *g, int64_t ldg, real *dq, int64_t lddq,
                          real *dk, int64_t lddk, real *dv, int64_t lddv,
                          real *dw, int64_t lddw, real *db,
                          const X(extras) *ex, int64_t *bad_row)
{
    XI(problem) pb = backward_ex_problem(plan, layout, n, q, ldq, k, ldk, v,
                                         ldv, out, ldout, den, g, ldg, dq,
                                         lddq, dk, lddk, dv, lddv, dw, lddw,
                                         db, ex);
    return XI(backward_single)(&pb, &backward_ex_sig, bad_row);
}

int X(causal_backward_check)(const X(plan) *plan, int layout, int64_t n,
                             const real *q, int64_t ldq, const real *k,
                             int64_t ldk, const real *v, int64_t ldv,
                             const real *out, int64_t ldout, const real *den,
                             const real *g, int64_t ldg, const real *dq,
                             int64_t lddq, const real *dk, int64_t lddk,
                             const real *dv, int64_t lddv, const real *dw,
                             int64_t lddw, const real *db, const X(extras) *ex,
                             int64_t *bad_row)
{
    XI(problem) pb = backward_ex_problem(plan, layout, n, q, ldq, k, ldk, v,
                                         ldv, out, ldout, den, g, ldg,
                                         (real *)dq, lddq, (real *)dk, lddk,
                                         (real *)dv, lddv, (real *)dw, lddw,
                                         (real *)db, ex);
    return XI(backward_check)(&pb, &backward_ex_sig, bad_row);
}

/* ---- the starting state's gradient alone ---- */

typedef struct {
    const XI(problem) *pb;
    cws *ws;
    int64_t c;
    double *top;   /* shifted maps: each range's largest key exponent   */
    double *start; /* and the running shift it starts from              */
} djob;

/* The largest exponent of range t's keys of weight not 0 (-inf: none;
 * NaN propagates, as in the sweeps' running maximum). */
static int64_t key_top(void *ctx, int t, int64_t lo, int64_t hi)
{
    djob *j = ctx;
    XI(problem) rg = XI(problem_rows)(j->pb, lo, hi);
    const real *wt = rg.part[LINATTN_I_KW].p;
    cws *w = &j->ws[t];
    double run = -INFINITY;
    for (int64_t r = 0; r < rg.nq; r += j->c) {
        int64_t rows = rg.nq - r < j->c ? rg.nq - r : j->c;
        XI(view) kb, vb;
        chunk_keys(&rg, w, r, rows, &kb, &vb);
        XI(phi_pre)(rg.plan, kb, rows, w->fk, w->rexp);
        for (int64_t i = 0; i < rows; i++) {
            double x = wt && wt[r + i] == 0 ? -INFINITY : w->rexp[i];
            run = x > run || x != x ? x : run;
        }
    }
    j->top[t] = run;
    return INT64_MAX;
}

/* Range t's D (sum_i phi(q_i) [g h]_i^T, transposed, in w->part at the
 * running shift of its first row); the keys are read only for the
 * running shifts. */
static int64_t dstate_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    djob *j = ctx;
    XI(problem) rg = XI(problem_rows)(j->pb, lo, hi);
    const X(plan) *plan = rg.plan;
    const real *wt = rg.part[LINATTN_I_KW].p;
    cws *w = &j->ws[t];
    int64_t m = plan->m, ld = plan->e + 1;
    XI(accum) *d = &w->part;
    XI(view) fq = {w->fq, m, 0}, ghv = {w->gh, ld, 0};
    double run = plan->shifted ? j->start[t] : 0;
    for (int64_t r = 0; r < rg.nq; r += j->c) {
        int64_t rows = rg.nq - r < j->c ? rg.nq - r : j->c;
        XI(phi_rows)(plan, XI(view_rows)(XI(part_view)(&rg, LINATTN_I_Q), r),
                     rows, w->fq, NULL);
        XI(gh_rows)(plan, XI(view_rows)(XI(part_view)(&rg, LINATTN_I_G), r),
                    XI(view_rows)(XI(part_view)(&rg, LINATTN_I_OUT), r),
                    rg.part[LINATTN_I_DEN].p + r, rows, w->gh);
        if (plan->shifted) {
            XI(view) kb, vb;
            chunk_keys(&rg, w, r, rows, &kb, &vb);
            XI(phi_pre)(plan, kb, rows, w->fk, w->rexp);
            for (int64_t i = 0; i < rows; i++) {
                double x = wt && wt[r + i] == 0 ? -INFINITY : w->rexp[i];
                run = x > run || x != x ? x : run;
                w->mrun[i] = run;
            }
            if (!d->has)
                d->shift = w->mrun[0];
            for (int64_t i = 0; i < rows; i++)
                scale_row(w->gh + i * ld, ld, factor(d->shift, w->mrun[i]));
        }
        XI(accum_gemm)(d, 1, 0, ld, m, rows, ghv, fq);
        d->has = 1;
    }
    return INT64_MAX;
}

/* ex->dstates of causal_backward_ex without its sweeps: the ranges' D at
 * the shifts of their first rows, added at the first's (the smallest),
 * then brought to the state's shift by write_dstate; with dstate_end,
 * that gradient too (at the final running shift, the largest). */
static int dstates_run(const XI(problem) *pb, int *nonfinite)
{
    const X(plan) *plan = pb->plan;
    int64_t n = pb->nq, c = plan->chunk < n ? plan->chunk : n;
    int64_t min_rows = plan->block > c ? plan->block : c;
    int nt = n > 0 ? linattn_i_threads(n, min_rows) : 1;
    cws ws[LINATTN_MAX_THREADS];
    double top[LINATTN_MAX_THREADS], start[LINATTN_MAX_THREADS];
    int have = 0, st = 0;
    while (have < nt && !alloc_cws(&ws[have], plan, c > 0 ? c : 1))
        have++;
    if (have < nt)
        st = LINATTN_ENOMEM;
    if (!st) {
        const X(state) *from = pb->state;
        djob job = {pb, ws, c, top, start};
        double run = from->tokens > 0 ? from->shift : -INFINITY;
        if (plan->shifted && n > 0) {
            linattn_i_parallel_ranges(nt, n, key_top, &job);
            for (int t = 0; t < nt; t++) {
                start[t] = run;
                run = top[t] > run || top[t] != top[t] ? top[t] : run;
            }
        }
        if (n > 0)
            linattn_i_parallel_ranges(nt, n, dstate_range, &job);
        XI(accum) *d = &ws[0].part;
        d->has = n > 0;
        for (int t = 1; t < nt; t++) {
            acc_t f = (acc_t)factor(d->shift, ws[t].part.shift);
            for (int64_t i = 0; i < d->len; i++)
                d->acc[i] += f * ws[t].part.acc[i];
        }
        if (pb->dstate_end) {
            /* the final state's gradient at the final running shift */
            int64_t m = plan->m, ld = plan->e + 1;
            double fin = plan->shifted ? run : 0;
            if (!d->has)
                d->shift = fin;
            acc_t f = (acc_t)factor(d->shift, fin);
            for (int64_t i = 0; i < ld; i++)
                for (int64_t jj = 0; jj < m; jj++)
                    d->acc[i * m + jj] += f * (acc_t)pb->dstate_end[jj * ld + i];
            d->has = 1;
        }
        *nonfinite = write_dstate(plan, d, from, pb->dstates);
    }
    for (int t = 0; t < have; t++)
        free_cws(&ws[t]);
    return st;
}

/* linattn_d_causal_backward_dstates: Q, K, out, den, G of n rows in (no
 * values), the extras (13) with the starting state and its gradient. */
static const linattn_i_signature dstates_sig = {
    .plan = 1, .layout = 2, .nq = 3, .extras = 13, .given = 13, .absorb = 13,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_STATE |
                LINATTN_I_X_DSTATES | LINATTN_I_X_DSTATE_END,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY,
    .part = {[LINATTN_I_Q] = {4, LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_K] = {6, LINATTN_I_NK, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_OUT] = {8, LINATTN_I_NQ, LINATTN_I_E,
                                LINATTN_I_INPUT},
             [LINATTN_I_DEN] = {10, LINATTN_I_NQ, LINATTN_I_ONE,
                                LINATTN_I_INPUT | LINATTN_I_VECTOR},
             [LINATTN_I_G] = {11, LINATTN_I_NQ, LINATTN_I_E, LINATTN_I_INPUT},
             LINATTN_I_WEIGHTS_IN(13)}};

int X(causal_backward_dstates)(const X(plan) *plan, int layout, int64_t n,
                               const real *q, int64_t ldq, const real *k,
                               int64_t ldk, const real *out, int64_t ldout,
                               const real *den, const real *g, int64_t ldg,
                               const X(extras) *ex, int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, n, n);
    pb.causal = 1;
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, NULL, 0, out, ldout);
    pb.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    pb.part[LINATTN_I_G] = XI(part_single)(g, ldg);
    XI(problem_extras)(&pb, ex);
    pb.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    pb.absorb = ex && ex->absorb ? -1 : 0; /* only read: absorb 0 */
    linattn_where where = {0, 0, -1};
    int st = XI(problem_check)(&pb, &dstates_sig, &where);
    if (st == LINATTN_EDENOM && bad_row)
        *bad_row = where.row;
    if (st)
        return st;
    /* what the call is for: the state and its gradient */
    if (!ex || !ex->state || !ex->dstates)
        return -13;
    int64_t len = pb.m * (pb.e + 1);
    size_t bytes = (size_t)len * sizeof(double);
    uintptr_t lo = (uintptr_t)ex->dstates, hi = lo + bytes;
    uintptr_t a = (uintptr_t)ex->dstate_end, b = a + bytes;
    if (ex->dstate_end && lo < b && a < hi)
        return -13;
    int nonfinite = 0;
    st = dstates_run(&pb, &nonfinite);
    if (!st && nonfinite) {
        /* finite inputs (the state's and the handed gradient's too):
         * the sums left the range */
        int fin = XI(all_finite)(XI(part_view)(&pb, LINATTN_I_Q), n, pb.d) &&
                  XI(all_finite)(XI(part_view)(&pb, LINATTN_I_OUT), n, pb.e) &&
                  XI(all_finite)(XI(part_view)(&pb, LINATTN_I_G), n, pb.e) &&
                  XI(all_finite)((XI(view)){den, n, 0}, 1, n) &&
                  !ex->state->poisoned;
        /* the keys set the shifted maps' running shifts (weighted: those
         * of weight 0 are never read) */
        if (fin && plan->shifted && !ex->weights)
            fin = XI(all_finite)(XI(part_view)(&pb, LINATTN_I_K), n, pb.d);
        for (int64_t i = 0; fin && ex->dstate_end && i < len; i++)
            fin = isfinite(ex->dstate_end[i]);
        if (fin) {
            st = LINATTN_EOVERFLOW;
            if (bad_row)
                *bad_row = -1;
        }
    }
    return st;
}
