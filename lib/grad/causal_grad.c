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
 *
 * Decay and gates (attn/decay.h): row i sees key j <= i with weight
 * exp(B_i - B_j), B the running sum of the log decays a_t.  Every factor
 * is the forward's, exp of a difference <= 0 composed with the shifts in
 * one exponent: the triangles' entries (i, j) times exp(b_i - b_j + m_j -
 * m_i) (b the chunk's sums), the carried state's terms of row i times
 * exp(b_i + M - m_i), and the state moving past the chunk as in the
 * forward.  D, the suffix sums, is kept at the boundary after the chunk
 * it has reached: key j of chunk c reads it times exp(b_C - b_j), and it
 * moves to the chunk's start as exp(b_C) D + sum_i exp(b_i) phi(q_i)
 * [g h]_i^T; between ranges, a range's own D and the suffix after it
 * (times the range's total decay) add up alike.
 *
 * The gradient of the log decays: dL/dB_i collects every pair (i, j <
 * i) as + and every pair (k > i, i) as -, each pair's share being
 * E_ij = exp(B_i - B_j) P_ij A_ij, so dL/dB_i = phi(q_i) . dphi(q_i) -
 * phi(k_i) . dphi(k_i) (the pair (i, i) cancels), and dL/da_t =
 * sum_{i >= t} dL/dB_i: the forward sweep writes the queries' dot
 * products (before the map's backward overwrites its adjoint), the
 * reverse sweep subtracts the keys' and sums from the range's end, and a
 * last pass adds the later ranges' totals and the final state's
 * <dstate_end, S_end>.  The dot products of features and their adjoints
 * are shift-free (each row's factor cancels).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "grad/grad.h"
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/decay.h"
#include "attn/chunk_states.h"
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
    /* decay: the chunk's running sums of the log decays, its triangle's
     * factors (C x C), and with the plan's decay alone gamma^k at pwr[C -
     * k] (else NULL); utot: the range's sum of dL/dB (dL/da at its first
     * row before the later ranges' are added) */
    double *bsum;
    real *fac, *pwr;
    double utot;
    XI(fgrad_ws) fw;
    /* the carried sums, transposed ((e + 1) x m) for the same reason */
    XI(accum) pre;  /* forward sweep: the state [S z]^T of earlier rows */
    XI(accum) part; /* forward sweep: this range's D^T (ranges t > 0)   */
    XI(accum) suf;  /* reverse sweep: D^T of the later rows             */
    /* the forward's saved chunk states: this range's first record (the
     * one sweep reads [S z] there instead of building it), NULL none,
     * and the state before the chunk turned, [S z]^T */
    const real *rec;
    real *st;
    int64_t c; /* the chunk's rows */
} cws;

static void free_cws(cws *w)
{
    free(w->fq), free(w->fk), free(w->gh), free(w->sa), free(w->sp);
    free(w->a), free(w->y), free(w->vt), free(w->kt), free(w->yt);
    free(w->kz), free(w->vz), free(w->rexp), free(w->mrun), free(w->st);
    free(w->bsum), free(w->fac), free(w->pwr);
    XI(fgrad_free)(&w->fw);
    XI(accum_free)(&w->pre);
    XI(accum_free)(&w->part);
    XI(accum_free)(&w->suf);
}

static int alloc_cws(cws *w, const XI(problem) *pb, int64_t c)
{
    const X(plan) *plan = pb->plan;
    int64_t m = plan->m, e = plan->e, ld = e + 1;
    memset(w, 0, sizeof *w);
    w->c = c;
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
    if (pb->chunk_states) /* only the saved states' sweep turns them */
        w->st = linattn_i_alloc(m * ld, sizeof(real));
    int bad = !w->fq || !w->fk || !w->a || !w->gh || !w->sa || !w->sp ||
              !w->y || !w->vt || !w->kt || !w->yt || !w->kz || !w->vz ||
              !w->rexp || !w->mrun || (pb->chunk_states && !w->st);
    if (XI(decays)(pb)) {
        int table = !pb->part[LINATTN_I_GATE].p;
        w->bsum = linattn_i_alloc(c, sizeof(double));
        w->fac = linattn_i_alloc(c * c, sizeof(real));
        w->pwr = table ? linattn_i_alloc(c + 1, sizeof(real)) : NULL;
        bad = bad || !w->bsum || !w->fac || (table && !w->pwr);
        for (int64_t k = 0; w->pwr && k <= c; k++)
            w->pwr[c - k] = (real)exp((double)k * XI(log_decay)(pb));
    }
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

/* exp((to - from) + b): a sum at shift `from` brought to shift `to` and
 * decayed by b (the maps without shifts pass 0, 0), exactly 1 when the
 * exponent is 0; equal shifts (both infinite among them) differ by 0.
 * Every caller's exponent is <= 0. */
static double factor(double to, double from, double b)
{
    double x = (to == from ? 0 : to - from) + b;
    return x == 0 ? 1 : exp(x);
}

/* The shifts a factor compares, 0 for the maps without them. */
static double shift_of(const X(plan) *plan, double shift)
{
    return plan->shifted ? shift : 0;
}

static void scale_row(real *r, int64_t len, double f)
{
    if (f == 1)
        return;
    real g = (real)f;
    LINATTN_SIMD
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

/* Decay: the triangle's factors exp((b_i - b_j) + (m_j - m_i)) of
 * entries (i, j < i) into w->fac (b the chunk's decay sums in w->bsum, m
 * the shifted maps' running shifts): without shifts through the
 * vectorized exponential a row at a time, or with the plan's decay alone
 * from the table of powers (gamma^(i - j) at pwr[C - i + j]); the shifted
 * maps by libm's exp of the summed exponent, as the forward. */
static void decay_square(const X(plan) *plan, cws *w, int64_t rows, int64_t c)
{
    const double *b = w->bsum;
    for (int64_t i = 0; i < rows; i++) {
        real *f = w->fac + i * c;
        if (plan->shifted) {
            for (int64_t j = 0; j < i; j++)
                f[j] = (real)factor(w->mrun[j], w->mrun[i], b[i] - b[j]);
        } else if (w->pwr) {
            memcpy(f, w->pwr + (c - i), (size_t)i * sizeof(real));
        } else {
            for (int64_t j = 0; j < i; j++)
                f[j] = (real)(b[i] - b[j]);
            XI(kern_now)()->exp(f, f, i);
        }
    }
}

/* Entries (i, j < i) of the squares (sa too when both) times their
 * factors: decayed, w->fac's; else the shifted maps' exp(m_j - m_i). */
static void rescale_squares(const X(plan) *plan, cws *w, int64_t rows,
                            int64_t c, int both, int decayed)
{
    if (decayed) {
        for (int64_t i = 0; i < rows; i++) {
            const real *f = w->fac + i * c;
            real *p = w->sp + i * c, *a = w->sa + i * c;
            LINATTN_SIMD
            for (int64_t j = 0; j < i; j++)
                p[j] *= f[j];
            for (int64_t j = 0; both && j < i; j++)
                a[j] *= f[j];
        }
        return;
    }
    if (!plan->shifted)
        return;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < i; j++) {
            if (w->mrun[j] == w->mrun[i])
                continue;
            real f = (real)factor(w->mrun[j], w->mrun[i], 0);
            w->sp[i * c + j] *= f;
            if (both)
                w->sa[i * c + j] *= f;
        }
}

/* Row i's dot product of its features f_i and their adjoints a_i (rows
 * of width m), in double: its share of dL/dB_i. */
static double row_dot(const real *f, const real *a, int64_t m)
{
    double acc = 0;
    for (int64_t t = 0; t < m; t++)
        acc += (double)f[t] * (double)a[t];
    return acc;
}

/* The chunk's decay sums into w->bsum and its triangle's factors (NULL
 * when the problem does not decay). */
static const double *chunk_decay(const XI(problem) *rg, cws *w, int64_t r,
                                 int64_t rows, int64_t c)
{
    if (!XI(decays)(rg))
        return NULL;
    XI(decay_sums)(rg, r, rows, w->bsum);
    decay_square(rg->plan, w, rows, c);
    return w->bsum;
}

/* The chunk's queries' part at row r (its inputs and P, rescaled, in w):
 * dphi(Q_c) = [g h] [S z]^T (row i at exp(b_i + M - m_i)) + tril(P) K,
 * from the state before it (sw, [S z]^T at shift, holding keys when
 * has), through the map's backward into dQ; with dL/da asked for, each
 * row's phi(q_i) . dphi(q_i) in dg (before the map's backward overwrites
 * the adjoint).  Nonzero when a value written to dQ is not finite. */
static int query_part(const XI(problem) *rg, cws *w, int64_t r, int64_t rows,
                      const real *sw, double shift, int has, const double *bs,
                      const XI(pgrad) *pg)
{
    const X(plan) *plan = rg->plan;
    int sh = plan->shifted;
    int64_t m = plan->m, ld = plan->e + 1;
    real *dg = XI(part_out)(rg, LINATTN_I_DGATE);
    const XI(kern) *kn = XI(kern_now)();
    if (has) {
        XI(gemm)(0, 0, rows, m, ld, 1, (XI(view)){w->gh, ld, 0},
                 (XI(view)){sw, m, 0}, 0, w->a, m);
        for (int64_t i = 0; (sh || bs) && i < rows; i++)
            scale_row(w->a + i * m, m,
                      factor(shift_of(plan, shift),
                             shift_of(plan, w->mrun[i]), bs ? bs[i] : 0));
    } else {
        memset(w->a, 0, (size_t)(rows * m) * sizeof(real));
    }
    if (kn->trimm)
        kn->trimm(rows, m, w->sp, w->c, w->fk, m, w->a, m, w->a, m, NULL);
    else
        XI(tril_times)(w->sp, w->c, (XI(view)){w->fk, m, 0}, rows, m, w->a,
                       m);
    for (int64_t i = 0; dg && i < rows; i++)
        dg[r + i] = (real)row_dot(w->fq + i * m, w->a + i * m, m);
    XI(view) qb = XI(view_rows)(XI(part_view)(rg, LINATTN_I_Q), r);
    return XI(phi_backward)(plan, qb, rows, w->fq, w->a,
                            rg->layout == LINATTN_COL_MAJOR,
                            XI(part_row)(rg, LINATTN_I_DQ, r),
                            rg->part[LINATTN_I_DQ].s.ld, &w->fw, pg);
}

/* The forward sweep over a range: dQ, and (part) the range's own D at
 * the range's start; with dL/da asked for, each row's phi(q_i) .
 * dphi(q_i) there.  Nonzero when a value written to dQ is not finite. */
static int forward_sweep(const XI(problem) *rg, cws *w, int64_t c, int part,
                         const XI(pgrad) *pg)
{
    const X(plan) *plan = rg->plan;
    int sh = plan->shifted;
    int64_t m = plan->m, e = plan->e, ld = e + 1, n = rg->nq;
    XI(accum) *s = &w->pre;
    XI(view) fq = {w->fq, m, 0}, fk = {w->fk, m, 0}, ghv = {w->gh, ld, 0};
    XI(view) vt = {w->vt, c, 0};
    int bad = 0;
    double bpre = 0; /* the decay of the range's rows before the chunk */
    for (int64_t r = 0; r < n; r += c) {
        int64_t rows = n - r < c ? n - r : c;
        double start = s->has ? s->shift : -INFINITY;
        XI(view) kb, vb;
        chunk_inputs(rg, w, r, rows, c, start, &kb, &vb);
        if (sh) /* the reverse sweep's note, exact in real */
            *XI(part_row)(rg, LINATTN_I_DV, r) = (real)start;
        const double *bs = chunk_decay(rg, w, r, rows, c);
        XI(lower_square)(ghv, vt, rows, ld, w->sp, c);
        rescale_squares(plan, w, rows, c, 0, bs != NULL);
        bad |= query_part(rg, w, r, rows, s->w, s->shift, s->has, bs, pg);
        if (part) { /* D of this range at the shift of its first row */
            XI(accum) *d = &w->part;
            if (!d->has)
                d->shift = sh ? w->mrun[0] : 0;
            for (int64_t i = 0; (sh || bs) && i < rows; i++)
                scale_row(w->gh + i * ld, ld,
                          factor(shift_of(plan, d->shift),
                                 shift_of(plan, w->mrun[i]),
                                 bs ? bpre + bs[i] : 0));
            XI(accum_gemm)(d, 1, 0, ld, m, rows, ghv, fq);
            d->has = 1;
        }
        /* the state moves past the chunk, to its last shift, decayed */
        if (sh || bs) {
            double to = shift_of(plan, w->mrun[rows - 1]);
            double bl = bs ? bs[rows - 1] : 0;
            for (int64_t j = 0; j < rows; j++)
                scale_row(w->fk + j * m, m,
                          factor(shift_of(plan, w->mrun[j]), to,
                                 bs ? bl - bs[j] : 0));
            if (s->has)
                XI(accum_scale)(s, factor(shift_of(plan, s->shift), to, bl));
            if (sh)
                s->shift = to;
            bpre += bl;
        }
        XI(accum_gemm)(s, 0, 0, ld, m, rows, vt, fk);
        s->has = 1;
    }
    return bad;
}

/* The reverse sweep over a range, from the suffix sums in w->suf (at the
 * range's end); with dL/da asked for, the rows' dL/dB summed from the
 * range's end (the total in w->utot).  Nonzero when a value written to
 * dK or dV is not finite. */
static int reverse_sweep(const XI(problem) *rg, cws *w, int64_t c,
                         const XI(pgrad) *pg)
{
    const X(plan) *plan = rg->plan;
    int cm = rg->layout == LINATTN_COL_MAJOR, sh = plan->shifted;
    int64_t m = plan->m, e = plan->e, ld = e + 1, n = rg->nq;
    int64_t lddk = rg->part[LINATTN_I_DK].s.ld;
    int64_t lddv = rg->part[LINATTN_I_DV].s.ld;
    const real *wt = rg->part[LINATTN_I_KW].p;
    real *dkw = XI(part_out)(rg, LINATTN_I_DKW);
    real *dg = XI(part_out)(rg, LINATTN_I_DGATE);
    /* the width of the values' adjoints: and the ones' for dL/dw */
    int64_t ey = dkw ? ld : e;
    XI(accum) *d = &w->suf;
    XI(view) fq = {w->fq, m, 0}, ghv = {w->gh, ld, 0};
    XI(view) vt = {w->vt, c, 0}, kt = {w->kt, c, 0};
    const XI(kern) *kn = XI(kern_now)();
    int bad = 0;
    double usum = 0;
    int64_t reclen = XI(chunk_record_len)(plan);
    for (int64_t r = (n - 1) / c * c; n > 0 && r >= 0; r -= c) {
        int64_t rows = n - r < c ? n - r : c;
        /* the running shift at the chunk's start: the forward sweep's
         * note, or the saved state's */
        double start = 0, shift = 0;
        int has = 0;
        const real *rec = w->rec ? w->rec + r / c * reclen : NULL;
        if (rec) {
            XI(chunk_record_get)(plan, rec, &shift, &has);
            start = has ? shift : -INFINITY;
        } else if (sh) {
            start = (double)*XI(part_row)(rg, LINATTN_I_DV, r);
        }
        XI(view) kb, vb;
        chunk_inputs(rg, w, r, rows, c, start, &kb, &vb);
        const double *bs = chunk_decay(rg, w, r, rows, c);
        double bl = bs ? bs[rows - 1] : 0;
        kn->transpose(rows, m, w->fk, m, w->kt, c);
        XI(lower_square)(fq, kt, rows, m, w->sa, c);
        XI(lower_square)(ghv, vt, rows, ld, w->sp, c);
        rescale_squares(plan, w, rows, c, 1, bs != NULL);
        /* one sweep with the saved states: the queries' part here too,
         * before the keys' (which read the same features and squares) */
        if (rec) {
            kn->transpose(m, ld, rec, ld, w->st, m);
            bad |= query_part(rg, w, r, rows, w->st, shift, has, bs, pg);
        }
        /* the later rows: dphi(K_c) = [V 1] D^T, dV_c = phi(K_c) D_S
         * (as (D_S^T phi(K_c)^T)^T), row j at exp(b_C - b_j + m_j - R) */
        if (d->has) {
            XI(view) dt = {d->w, m, 0};
            XI(gemm)(1, 0, rows, m, ld, 1, vt, dt, 0, w->a, m);
            XI(gemm)(0, 0, ey, rows, m, 1, dt, kt, 0, w->yt, c);
            kn->transpose(ey, rows, w->yt, c, w->y, ey);
            for (int64_t j = 0; (sh || bs) && j < rows; j++) {
                double f = factor(shift_of(plan, w->mrun[j]),
                                  shift_of(plan, d->shift),
                                  bs ? bl - bs[j] : 0);
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
        /* dL/dB_j = phi(q_j) . dphi(q_j) (the forward sweep's) - phi(k_j) .
         * dphi(k_j), summed from the range's end */
        for (int64_t j = rows - 1; dg && j >= 0; j--) {
            usum += (double)dg[r + j] - row_dot(w->fk + j * m, w->a + j * m, m);
            dg[r + j] = (real)usum;
            bad |= LINATTN_NOT_FINITE(dg[r + j]);
        }
        bad |= XI(phi_backward)(plan, kb, rows, w->fk, w->a, cm,
                                XI(part_row)(rg, LINATTN_I_DK, r), lddk,
                                &w->fw, pg);
        /* D takes the chunk's rows and moves to its start (the shift of
         * its first row) */
        if (sh || bs) {
            double to = shift_of(plan, w->mrun[0]);
            if (d->has)
                XI(accum_scale)(d, factor(to, shift_of(plan, d->shift), bl));
            for (int64_t i = 0; i < rows; i++)
                scale_row(w->gh + i * ld, ld,
                          factor(to, shift_of(plan, w->mrun[i]),
                                 bs ? bs[i] : 0));
            if (sh)
                d->shift = to;
        }
        XI(accum_gemm)(d, 1, 0, ld, m, rows, ghv, fq);
        d->has = 1;
    }
    w->utot = usum;
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

/* The total log decay of range t's rows (0 without decay). */
static double range_decay(const XI(problem) *pb, int nt, int t)
{
    int64_t n = pb->nq, lo = linattn_i_range_start(n, nt, t);
    if (!XI(decays)(pb))
        return 0;
    return XI(decay_total)(pb, lo, linattn_i_range_start(n, nt, t + 1) - lo);
}

/* The start states of ranges 1 .. nt-1: the states of the ranges before,
 * built one after another (each update threaded), then added up, the
 * state before range t - 1 decayed over its rows (a factor, the shift
 * staying the running maximum of the key exponents, as in the forward:
 * the normalizers carry exp(-m_i) of that maximum). */
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
        double B = range_decay(pb, nt, t - 1);
        if (B != 0)
            a *= (acc_t)exp(B);
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

/* The final state from its saved record ([S z]) into pre ([S z]^T, as
 * the forward sweep leaves it). */
static void load_final(const X(plan) *plan, XI(accum) *pre, const real *rec)
{
    int64_t m = plan->m, ld = plan->e + 1;
    for (int64_t i = 0; i < ld; i++)
        for (int64_t j = 0; j < m; j++)
            pre->acc[i * m + j] = (acc_t)rec[j * ld + i];
    XI(chunk_record_get)(plan, rec, &pre->shift, &pre->has);
    XI(accum_publish)(pre);
}

/* Range t's suffix: range t + 1's own D and its suffix (decayed over
 * range t + 1's rows), at the shift of range t + 1's first row (the
 * smaller). */
static void suffix_sums(const XI(problem) *pb, cws *ws, int nt)
{
    for (int t = nt - 2; t >= 0; t--) {
        XI(accum) *to = &ws[t].suf, *own = &ws[t + 1].part;
        const XI(accum) *after = &ws[t + 1].suf;
        acc_t f = after->has ? (acc_t)factor(own->shift, after->shift,
                                             range_decay(pb, nt, t + 1))
                             : 0;
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
    double f = live && plan->shifted ? factor(from->shift, d->shift, 0) : 1;
    for (int64_t j = 0; j < m; j++)
        for (int64_t i = 0; i < ld; i++) {
            double x = live ? (double)d->acc[i * m + j] * f : 0;
            out[j * ld + i] = x;
            bad |= !isfinite(x);
        }
    return bad;
}

/* The log decay of key row i (the plan's, the head's and its gate). */
static double row_decay(const XI(problem) *pb, const real *gates, int64_t i)
{
    return XI(log_decay)(pb) + (gates ? (double)gates[i] : 0);
}

/* dL/da after the sweeps, per range t of the split (off: what the later
 * ranges add).  Under LINATTN_DENOM_COUNT the normalizer is the decayed
 * count, den_i = sum_{j <= i} exp(B_i - B_j) w_j + eps, which moves with
 * the decays although no feature does: with hc_i = dL/dden_i =
 * -(G_i . out_i) / den_i, dL/dB_i gains hc_i (den_i - eps) - w_i r_i,
 * r_i = sum_{k >= i} exp(B_k - B_i) hc_k (a decayed suffix sum; within a
 * range r = hc_i + exp(a_{i+1}) r, and the later ranges' part R reaches
 * row i as exp(B_end - B_i) R, summed into dL/da_t as kappa_t R with
 * kappa_t = sum_{t <= i <= end} w_i exp(B_end - B_i)). */
typedef struct {
    const XI(problem) *pb;
    real *dg;
    int count;
    double xtot[LINATTN_MAX_THREADS]; /* the count's sum of dL/dB     */
    double rfirst[LINATTN_MAX_THREADS]; /* its r before the first row */
    double off[LINATTN_MAX_THREADS];  /* the later ranges' dL/dB sums */
    double rlater[LINATTN_MAX_THREADS]; /* their hc, at the range end */
} ujob;

/* hc_i = dL/dden_i of the count normalizer, row i of the range rg. */
static double count_adjoint(const XI(problem) *rg, int64_t i)
{
    XI(view) g = XI(view_rows)(XI(part_view)(rg, LINATTN_I_G), i);
    XI(view) o = XI(view_rows)(XI(part_view)(rg, LINATTN_I_OUT), i);
    double dot = 0;
    for (int64_t c = 0; c < rg->e; c++)
        dot += (double)(g.colmajor ? g.p[c * g.ld] : g.p[c]) *
               (double)(o.colmajor ? o.p[c * o.ld] : o.p[c]);
    return -dot / (double)rg->part[LINATTN_I_DEN].p[i];
}

/* The count's share within range t, summed from its end into dg. */
static int64_t count_share(void *ctx, int t, int64_t lo, int64_t hi)
{
    ujob *j = ctx;
    XI(problem) rg = XI(problem_rows)(j->pb, lo, hi);
    const real *gates = rg.part[LINATTN_I_GATE].p;
    const real *w = rg.part[LINATTN_I_KW].p, *den = rg.part[LINATTN_I_DEN].p;
    double eps = (double)rg.plan->eps, r = 0, x = 0, next = 0;
    for (int64_t i = rg.nq - 1; i >= 0; i--) {
        double hc = count_adjoint(&rg, i);
        r = hc + exp(next) * r; /* next: a_{i+1}, 0 at the range's end */
        x += hc * ((double)den[i] - eps) - (w ? (double)w[i] : 1) * r;
        j->dg[lo + i] = (real)((double)j->dg[lo + i] + x);
        next = row_decay(&rg, gates, i);
    }
    j->xtot[t] = x;
    j->rfirst[t] = exp(next) * r; /* at the boundary before the range */
    return INT64_MAX;
}

/* The later ranges' share of range t: off[t], and under the count
 * -kappa_t rlater[t]; nonzero (its first row) when a value written is
 * not finite. */
static int64_t add_later(void *ctx, int t, int64_t lo, int64_t hi)
{
    ujob *j = ctx;
    XI(problem) rg = XI(problem_rows)(j->pb, lo, hi);
    const real *gates = rg.part[LINATTN_I_GATE].p;
    const real *w = rg.part[LINATTN_I_KW].p;
    double kappa = 0, decay = 0; /* decay: B_end - B_i */
    int bad = 0;
    for (int64_t i = rg.nq - 1; i >= 0; i--) {
        double add = j->off[t];
        if (j->count && j->rlater[t] != 0) {
            kappa += (w ? (double)w[i] : 1) * exp(decay);
            add -= kappa * j->rlater[t];
            decay += row_decay(&rg, gates, i);
        }
        if (add != 0)
            j->dg[lo + i] = (real)((double)j->dg[lo + i] + add);
        bad |= LINATTN_NOT_FINITE(j->dg[lo + i]);
    }
    return bad ? lo : INT64_MAX;
}

/* <dS_end, S_end>: the final state's share of dL/dB at the last row (its
 * decays scale the whole of S_end), from the forward sweep's final state
 * (pre, [S z]^T) and the gradient handed in at its shift (the two
 * factors of the shift cancel). */
static double end_share(const X(plan) *plan, const XI(accum) *pre,
                        const double *dend)
{
    int64_t m = plan->m, ld = plan->e + 1;
    double acc = 0;
    for (int64_t i = 0; dend && pre->has && i < ld; i++)
        for (int64_t j = 0; j < m; j++)
            acc += (double)pre->acc[i * m + j] * dend[j * ld + i];
    return acc;
}

/* The dL/da pass after the reverse sweeps (which left each range's sums
 * from its end in dg, their totals in ws[t].utot): nonzero when a value
 * written is not finite. */
static int finish_dgates(const XI(problem) *pb, const cws *ws, int nt)
{
    ujob job;
    memset(&job, 0, sizeof job);
    job.pb = pb;
    job.dg = XI(part_out)(pb, LINATTN_I_DGATE);
    job.count = pb->plan->denom == LINATTN_DENOM_COUNT;
    if (job.count)
        linattn_i_parallel_ranges(nt, pb->nq, count_share, &job);
    job.off[nt - 1] = end_share(pb->plan, &ws[nt - 1].pre, pb->dstate_end);
    for (int t = nt - 2; t >= 0; t--) {
        job.off[t] = job.off[t + 1] + ws[t + 1].utot + job.xtot[t + 1];
        job.rlater[t] = job.count ? job.rfirst[t + 1] +
                                        exp(range_decay(pb, nt, t + 1)) *
                                            job.rlater[t + 1]
                                  : 0;
    }
    return linattn_i_parallel_ranges(nt, pb->nq, add_later, &job) != INT64_MAX;
}

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
 * running shift of its first row; decayed, row i times exp(B_i) from the
 * range's start); the keys are read only for the running shifts. */
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
    int decays = XI(decays)(&rg);
    double bpre = 0; /* the decay of the range's rows before the chunk */
    if (!plan->shifted)
        d->shift = 0;
    for (int64_t r = 0; r < rg.nq; r += j->c) {
        int64_t rows = rg.nq - r < j->c ? rg.nq - r : j->c;
        XI(phi_rows)(plan, XI(view_rows)(XI(part_view)(&rg, LINATTN_I_Q), r),
                     rows, w->fq, NULL);
        XI(gh_rows)(plan, XI(view_rows)(XI(part_view)(&rg, LINATTN_I_G), r),
                    XI(view_rows)(XI(part_view)(&rg, LINATTN_I_OUT), r),
                    rg.part[LINATTN_I_DEN].p + r, rows, w->gh);
        if (decays)
            XI(decay_sums)(&rg, r, rows, w->bsum);
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
        }
        for (int64_t i = 0; (plan->shifted || decays) && i < rows; i++)
            scale_row(w->gh + i * ld, ld,
                      factor(shift_of(plan, d->shift),
                             shift_of(plan, w->mrun[i]),
                             decays ? bpre + w->bsum[i] : 0));
        if (decays)
            bpre += w->bsum[rows - 1];
        XI(accum_gemm)(d, 1, 0, ld, m, rows, ghv, fq);
        d->has = 1;
    }
    return INT64_MAX;
}

/* Range t > 0's own D (range 0's is not needed: no range before it
 * reads it), from the running shift its saved first record starts at:
 * what the forward sweep would have left in w->part. */
static int64_t own_sum(void *ctx, int t, int64_t lo, int64_t hi)
{
    return t > 0 ? dstate_range(ctx, t, lo, hi) : INT64_MAX;
}

static void own_sums(const XI(problem) *pb, cws *ws, int nt, int64_t c)
{
    double start[LINATTN_MAX_THREADS];
    for (int t = 0; t < nt; t++) {
        int has;
        XI(chunk_record_get)(pb->plan, ws[t].rec, &start[t], &has);
        start[t] = has ? start[t] : -INFINITY;
    }
    djob job = {pb, ws, c, NULL, start};
    linattn_i_parallel_ranges(nt, pb->nq, own_sum, &job);
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
    /* with the forward's saved states, its split (the records' chunks) */
    real *saved = pb->chunk_states;
    int nt = saved ? XI(chunk_states_threads)(plan, saved, n)
                   : linattn_i_threads(n, min_rows);
    if (nt < 1) /* the header changed since the checks: a caller's race */
        return -24;
    cws ws[LINATTN_MAX_THREADS];
    XI(pgrad) parts[LINATTN_MAX_THREADS];
    XI(pgrad) none = {NULL, NULL};
    const XI(pgrad) *pgv = pg ? pg : &none;
    int split = nt > 1 && (pgv->dw || pgv->db);
    int have = 0, st = 0;
    while (have < nt && !alloc_cws(&ws[have], pb, c))
        have++;
    if (have < nt || (split && XI(pgrad_alloc)(parts, nt, plan, pgv)))
        st = LINATTN_ENOMEM;
    if (!st && pb->state)
        seed_pre(plan, &ws[0].pre, pb->state);
    for (int t = 0; !st && saved && t < nt; t++)
        ws[t].rec = XI(chunk_record)(plan, saved, n, nt, t);
    if (!st && nt > 1 && !saved)
        st = prefix_states(pb, ws, nt);
    if (!st) {
        for (int t = 0; !split && t < nt; t++)
            parts[t] = *pgv;
        cjob job = {pb, ws, parts, c};
        int64_t qbad = INT64_MAX;
        if (saved) { /* the final state and the ranges' own D */
            load_final(plan, &ws[nt - 1].pre,
                       XI(chunk_record)(plan, saved, n, nt, nt));
            own_sums(pb, ws, nt, c);
        } else {
            qbad = linattn_i_parallel_ranges(nt, n, forward_range, &job);
        }
        if (pb->dstate_end) /* at the final running shift, the last pre's */
            seed_suffix(plan, &ws[nt - 1].suf, pb->dstate_end,
                        ws[nt - 1].pre.shift);
        suffix_sums(pb, ws, nt);
        int64_t kbad = linattn_i_parallel_ranges(nt, n, reverse_range, &job);
        *nonfinite = qbad != INT64_MAX || kbad != INT64_MAX;
        if (pb->part[LINATTN_I_DGATE].p)
            *nonfinite |= finish_dgates(pb, ws, nt);
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
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY | LINATTN_I_DECAY,
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
 * and their gradients out, gates in and dL/da out. */
static const linattn_i_signature backward_ex_sig = {
    .plan = 1, .layout = 2, .nq = 3, .extras = 24, .given = 24, .absorb = 24,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_DWEIGHTS |
                LINATTN_I_X_OFFSETS | LINATTN_I_X_STATE |
                LINATTN_I_X_STATES | LINATTN_I_X_DSTATES |
                LINATTN_I_X_DSTATE_END | LINATTN_I_X_GATES |
                LINATTN_I_X_DGATES | LINATTN_I_X_CHUNK_STATES,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY | LINATTN_I_DECAY |
             LINATTN_I_CHUNKS_IN,
    .part = {LINATTN_I_BACKWARD(4), LINATTN_I_WEIGHTS_IN(24),
             LINATTN_I_DWEIGHTS_OUT(24), LINATTN_I_GATES_IN(24),
             LINATTN_I_DGATES_OUT(24)}};

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

/* ex->dstates of causal_backward_ex without its sweeps: the ranges' D at
 * the shifts of their first rows, added at the first's (the smallest),
 * each decayed over the rows before its range, then brought to the
 * state's shift by write_dstate; with dstate_end, that gradient too (at
 * the final running shift, the largest; decayed over every row). */
static int dstates_run(const XI(problem) *pb, int *nonfinite)
{
    const X(plan) *plan = pb->plan;
    int64_t n = pb->nq, c = plan->chunk < n ? plan->chunk : n;
    int64_t min_rows = plan->block > c ? plan->block : c;
    int nt = n > 0 ? linattn_i_threads(n, min_rows) : 1;
    cws ws[LINATTN_MAX_THREADS];
    double top[LINATTN_MAX_THREADS], start[LINATTN_MAX_THREADS];
    int have = 0, st = 0;
    while (have < nt && !alloc_cws(&ws[have], pb, c > 0 ? c : 1))
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
        double before = 0; /* the decay of the rows before range t */
        for (int t = 1; t < nt; t++) {
            before += range_decay(pb, nt, t - 1);
            acc_t f = (acc_t)factor(d->shift, ws[t].part.shift, before);
            for (int64_t i = 0; i < d->len; i++)
                d->acc[i] += f * ws[t].part.acc[i];
        }
        if (pb->dstate_end) {
            /* the final state's gradient at the final running shift */
            int64_t m = plan->m, ld = plan->e + 1;
            double fin = plan->shifted ? run : 0;
            if (!d->has)
                d->shift = fin;
            acc_t f = (acc_t)factor(d->shift, fin,
                                    before + range_decay(pb, nt, nt - 1));
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
                LINATTN_I_X_DSTATES | LINATTN_I_X_DSTATE_END |
                LINATTN_I_X_GATES,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY | LINATTN_I_DECAY,
    .part = {[LINATTN_I_Q] = {4, LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_K] = {6, LINATTN_I_NK, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_OUT] = {8, LINATTN_I_NQ, LINATTN_I_E,
                                LINATTN_I_INPUT},
             [LINATTN_I_DEN] = {10, LINATTN_I_NQ, LINATTN_I_ONE,
                                LINATTN_I_INPUT | LINATTN_I_VECTOR},
             [LINATTN_I_G] = {11, LINATTN_I_NQ, LINATTN_I_E, LINATTN_I_INPUT},
             LINATTN_I_WEIGHTS_IN(13), LINATTN_I_GATES_IN(13)}};

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
