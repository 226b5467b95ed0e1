/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * causal.c -- causal linear attention, out_i from keys j <= i only, as
 * chunked GEMMs.  For each chunk c of C rows, with (S, z) the state of all
 * earlier chunks:
 *
 *     A   = tril(phi(Q_c) phi(K_c)^T)                       (C x C)
 *     num = phi(Q_c) S + A V_c,   den = phi(Q_c) z + A 1
 *     then S += phi(K_c)^T V_c,   z += phi(K_c)^T 1
 *
 * in two GEMMs per chunk: [num | A] = phi(Q_c) [S | phi(K_c)^T] (the state
 * and the chunk's keys side by side), and the state update
 * S += phi(K_c)^T V_c with V_c read where the caller keeps it.  z stays
 * out of the GEMMs (its dot products and column sums are O(C m) per
 * chunk): the GEMMs' widths are then e and e + C, whole vectors for the
 * usual sizes, where a column of ones would cost the micro-kernel
 * (kern.h) a vector of its own.  tril(A) V_c is built from GEMMs on the
 * blocks strictly below the diagonal and small explicit triangles on it,
 * so that no future token of the chunk enters a row's output, not even as
 * 0 * Inf (OpenBLAS's TRMM does let NaN through from rows below:
 * measured).
 *
 * Extra memory is O(C (m + e + C) + m e), whatever n: the prefix state is
 * never materialized per token.
 *
 * The maps with exponentials carry a running shift, so that no output
 * depends on a later token, not even through rounding: key j's features
 * are taken with m_j, the largest key exponent up to j (the carried
 * state's included), and row i rescales its triangle entries by
 * exp(m_j - m_i) <= 1 and the carried state's terms (at shift M) by
 * exp(M - m_i) <= 1.  The state then moves to the chunk's last m_j.  (One
 * shift for the whole chunk would cancel in exact arithmetic but not in
 * rounding or underflow; a peer library leaked future tokens exactly
 * there.)
 *
 * Decay and gates (attn/decay.h) are factors of the same kind, with b_i
 * the chunk's running sum of log decays up to row i: the carried state
 * reaches row i times exp(b_i), key j times exp(b_i - b_j), and the
 * state moves past the chunk as exp(b_C) S + (phi(K_c) exp(b_C - b))^T
 * V_c.  With the shifts the two multiply, exp(b_i - b_j + m_j - m_i) and
 * exp(b_i + M - m_i): one exponential of a sum of two exponents <= 0,
 * computed per entry from row i's and row j's own numbers, so neither
 * kind of factor can overflow or carry a later token.  The plan's decay
 * alone (no gates) gives exp(b_i - b_j) = gamma^(i - j): a table of C + 1
 * powers, no exponential per entry.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/decay.h"
#include "attn/chunk_states.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "kernels/kern.h"
#include "common/simd.h"
#include "common/threads.h"
#include "common/validate.h"

/* The workspace of one causal pass, all allocated up front.
 *
 * b is m x (e + C): S with phi(K_c)^T beside it, so that one GEMM
 * phi(Q_c) b gives [num | A] for the chunk (in r).  In double S
 * accumulates in b itself (acc aliases b, leading dimension ldb); in float
 * acc is a separate m x e double accumulator that b follows, and part the
 * chunk's update before it is folded in.  z likewise: zacc accumulates,
 * z is the working copy the queries read. */
typedef struct {
    real *phiq, *phik, *vbuf, *r, *dd, *b, *part, *z;
    acc_t *acc, *zacc, *zpart;
    int64_t ldb, ldacc;
    /* shifted maps: each key's largest exponent and the running maximum
     * m_j; the carried state is at shift, and holds tokens when has */
    double *rexp, *mrun;
    double shift;
    int has;
    /* decay: the chunk's running sums of log decays, its rows' counts
     * (LINATTN_DENOM_COUNT), a row's factors and the carried state's
     * (C each), and when the plan's decay is the only one gamma^k for k
     * <= C, reversed: pwr[C - k] (else NULL) */
    double *bsum, *cnt;
    real *xf, *gf, *pwr;
    int64_t c;
    /* saved chunk states: this range's first record, NULL none, and a
     * record's staging */
    real *rec, *stage;
} causal_ws;

static void free_causal_ws(causal_ws *w)
{
    free(w->phiq), free(w->phik), free(w->vbuf), free(w->r), free(w->dd);
    free(w->b), free(w->part), free(w->z), free(w->zacc), free(w->zpart);
    free(w->rexp), free(w->mrun);
    free(w->bsum), free(w->cnt), free(w->xf), free(w->gf), free(w->pwr);
    free(w->stage);
    if (LINATTN_ACC_WIDER)
        free(w->acc);
}

static int alloc_causal_ws(causal_ws *w, const XI(problem) *pb, int64_t c)
{
    const X(plan) *plan = pb->plan;
    int64_t m = plan->m, e = plan->e, ldb = e + c;
    memset(w, 0, sizeof *w);
    w->ldb = ldb;
    /* phi of Q and K always materialized: the chunk is small and the
     * same buffers then serve every map and every leading dimension. */
    w->phiq = linattn_i_alloc(c * m, sizeof(real));
    w->phik = linattn_i_alloc(c * m, sizeof(real));
    w->vbuf = linattn_i_alloc(c * e, sizeof(real));
    w->r = linattn_i_alloc(c * ldb, sizeof(real));
    w->dd = linattn_i_alloc(3 * c, sizeof(real));
    w->b = linattn_i_alloc(m * ldb, sizeof(real));
    w->z = linattn_i_alloc(m, sizeof(real));
    w->zacc = linattn_i_alloc(m, sizeof(acc_t));
    w->zpart = linattn_i_alloc(m, sizeof(acc_t));
#if LINATTN_ACC_WIDER
    w->part = linattn_i_alloc(m * e, sizeof(real));
    w->acc = linattn_i_alloc(m * e, sizeof(acc_t));
    w->ldacc = e;
#else
    w->acc = w->b;
    w->ldacc = ldb;
#endif
    if (plan->shifted) {
        w->rexp = linattn_i_alloc(c, sizeof(double));
        w->mrun = linattn_i_alloc(c, sizeof(double));
    }
    int decays = XI(decays)(pb), table = !pb->part[LINATTN_I_GATE].p;
    w->c = c;
    if (decays) {
        w->bsum = linattn_i_alloc(c, sizeof(double));
        w->cnt = linattn_i_alloc(c, sizeof(double));
        w->xf = linattn_i_alloc(c + 1, sizeof(real));
        w->gf = linattn_i_alloc(c + 1, sizeof(real));
        w->pwr = table ? linattn_i_alloc(c + 1, sizeof(real)) : NULL;
        for (int64_t k = 0; w->pwr && k <= c; k++)
            w->pwr[c - k] = (real)exp((double)k * XI(log_decay)(pb));
    }
    if (pb->chunk_states) /* zeroed: a record's padding is written too */
        w->stage = calloc((size_t)XI(chunk_record_len)(plan), sizeof(real));
    if (!w->phiq || !w->phik || !w->vbuf || !w->r || !w->dd || !w->b ||
        !w->z || !w->zacc || !w->zpart ||
        (LINATTN_ACC_WIDER && (!w->part || !w->acc)) ||
        (plan->shifted && (!w->rexp || !w->mrun)) ||
        (decays && (!w->bsum || !w->cnt || !w->xf || !w->gf ||
                    (table && !w->pwr))) ||
        (pb->chunk_states && !w->stage)) {
        free_causal_ws(w);
        return LINATTN_ENOMEM;
    }
    memset(w->b, 0, (size_t)(m * ldb) * sizeof(real));
    memset(w->z, 0, (size_t)m * sizeof(real));
    memset(w->zacc, 0, (size_t)m * sizeof(acc_t));
    if (LINATTN_ACC_WIDER) {
        memset(w->acc, 0, (size_t)(m * e) * sizeof(acc_t));
        memset(w->part, 0, (size_t)(m * e) * sizeof(real));
    }
    return 0;
}

/* The carried state := a s + b t, with s the workspace's own (S, z) and t
 * an accumulator [S | z] (m x (e + 1), row major) such as a state's
 * (t NULL: 0); the working copies follow. */
static void combine_state(const X(plan) *plan, causal_ws *w, acc_t a,
                          const acc_t *t, acc_t b)
{
    int64_t m = plan->m, e = plan->e;
    for (int64_t i = 0; i < m; i++) {
        acc_t *si = w->acc + i * w->ldacc;
        const acc_t *ti = t ? t + i * (e + 1) : NULL;
        for (int64_t j = 0; j < e; j++) {
            acc_t x = a * si[j] + (ti ? b * ti[j] : 0);
            si[j] = x;
            w->b[i * w->ldb + j] = (real)x;
        }
        w->zacc[i] = a * w->zacc[i] + (ti ? b * ti[e] : 0);
        w->z[i] = (real)w->zacc[i];
    }
}

/* dst's carried state (S, z accumulated) := src's. */
static void copy_carried(const X(plan) *plan, causal_ws *dst,
                         const causal_ws *src)
{
    for (int64_t i = 0; i < plan->m; i++) {
        memcpy(dst->acc + i * dst->ldacc, src->acc + i * src->ldacc,
               (size_t)plan->e * sizeof(acc_t));
        dst->zacc[i] = src->zacc[i];
    }
}

/* den[i] += sum_{j <= i} A[i][j]: the triangle's part of the normalizers. */
static void triangle_sums(const real *a, int64_t lda, int64_t rows, real *den)
{
    for (int64_t i = 0; i < rows; i++) {
        const real *ai = a + i * lda;
        real acc = 0;
        LINATTN_SIMD_SUM
        for (int64_t j = 0; j <= i; j++)
            acc += ai[j];
        den[i] += acc;
    }
}

/* y (rows x e, ldy) += tril(A) V, reading only A[i][j] and row j of v
 * with j <= i: below the diagonal blocks by GEMM, the diagonal blocks by
 * explicit loops.  (A and y may share a buffer, in disjoint columns.) */
static void triangle_times(const real *a, int64_t lda, XI(view) v,
                           int64_t rows, int64_t e, real *y, int64_t ldy)
{
    const XI(kern) *kn = XI(kern_now)();
    for (int64_t i0 = 0; i0 < rows; i0 += LINATTN_TRI_BLOCK) {
        int64_t i1 = i0 + LINATTN_TRI_BLOCK < rows ? i0 + LINATTN_TRI_BLOCK
                                                    : rows;
        if (i0 > 0)
            XI(gemm)(0, 0, i1 - i0, e, i0, 1, (XI(view)){a + i0 * lda, lda, 0},
                     v, 1, y + i0 * ldy, ldy);
        kn->tri_diag(a, lda, v.p, v.ld, e, i0, i1, y, ldy);
    }
}

/* The same for other files (grad/causal_grad.c): y (rows x w, ldy) +=
 * tril(A) X, reading only A[i][j] and rows x_j with j <= i. */
void XI(tril_times)(const real *a, int64_t lda, XI(view) x, int64_t rows,
                    int64_t w, real *y, int64_t ldy)
{
    triangle_times(a, lda, x, rows, w, y, ldy);
}

/* Shifted maps: phi(K_c) with the running shifts m_j into w->phik (wt:
 * the chunk's key weights, NULL none; a key of weight 0 has no say in
 * the running maximum, whatever its row holds: its features, NaN or Inf
 * as they may be, are zeroed by the caller). */
static void running_keys(const X(plan) *plan, causal_ws *w, XI(view) k,
                         int64_t rows, const real *wt)
{
    XI(phi_pre)(plan, k, rows, w->phik, w->rexp);
    for (int64_t j = 0; wt && j < rows; j++)
        if (wt[j] == 0)
            w->rexp[j] = -INFINITY;
    double run = w->has ? w->shift : -INFINITY;
    for (int64_t j = 0; j < rows; j++) {
        double x = w->rexp[j];
        run = x > run || x != x ? x : run; /* NaN propagates */
        w->mrun[j] = run;
    }
    XI(phi_post)(plan, w->phik, rows, w->rexp, w->mrun, 0, NULL);
}

/* Key weights: phi(K_c) into w->phik with each row times its weight (0
 * exactly for weight 0).  K_c is mapped where the caller keeps it, rows
 * of weight 0 included: every map computes a row's features from that
 * row alone, so NaN or Inf there stays in features that are then zeroed
 * (running_keys keeps those rows out of the shifted maps' running
 * maximum).  (V_c: causal_serial.)  Returns nonzero when a key of the
 * chunk weighs more than 0. */
static int weighted_keys(const X(plan) *plan, causal_ws *w, XI(view) k,
                         int64_t rows, const real *wt)
{
    int64_t m = plan->m;
    int any = 0;
    for (int64_t j = 0; j < rows; j++)
        any |= wt[j] != 0;
    if (plan->shifted)
        running_keys(plan, w, k, rows, wt);
    else
        XI(phi_rows)(plan, k, rows, w->phik, NULL);
    for (int64_t j = 0; j < rows; j++) {
        real *fj = w->phik + j * m;
        if (wt[j] == 0)
            memset(fj, 0, (size_t)m * sizeof(real));
        else if (wt[j] != 1)
            for (int64_t t = 0; t < m; t++)
                fj[t] *= wt[j];
    }
    return any;
}

/* On [num | A] and the carried normalizers dq before the triangle is
 * added, the shifted maps' and the decay's factors: row i's carried-state
 * terms times exp(b_i + M - m_i), its triangle entries A[i][j] times
 * exp(b_i - b_j + m_j - m_i), b the chunk's decay sums (NULL: none), m
 * the running shifts and M the carried state's (0 for the maps without).
 * Every exponent <= 0.  Decayed without shifts, a row's factors go
 * through the vectorized exponential (kern.h) at once, or with the
 * plan's decay alone come from the table of powers (w->pwr, reversed so
 * that row i's run is contiguous: gamma^(i - j) at pwr[c - i + j]); the
 * shifted maps take libm's exp of the summed exponent, so that gates of 0
 * give the undecayed call's bits. */
static void rescale_rows(const X(plan) *plan, causal_ws *w, int64_t rows,
                         int64_t e, real *dq, const double *b)
{
    const double *mr = w->mrun;
    int sh = plan->shifted;
    const XI(kern) *kn = XI(kern_now)();
    real *x = w->xf, *g = w->gf;
    if (b && !sh) { /* the carried state's factors, every row at once */
        if (w->pwr) {
            for (int64_t i = 0; i < rows; i++)
                g[i] = w->pwr[w->c - i - 1];
        } else {
            for (int64_t i = 0; i < rows; i++)
                g[i] = (real)b[i];
            kn->exp(g, g, rows);
        }
    }
    for (int64_t i = 0; i < rows; i++) {
        real *ri = w->r + i * w->ldb, *ai = ri + e;
        if (sh) {
            for (int64_t j = 0; j < i; j++)
                if (b)
                    ai[j] *= (real)exp((b[i] - b[j]) + (mr[j] - mr[i]));
                else if (mr[j] != mr[i])
                    ai[j] *= (real)exp(mr[j] - mr[i]);
        } else if (w->pwr) {
            const real *t = w->pwr + (w->c - i);
            LINATTN_SIMD
            for (int64_t j = 0; j < i; j++)
                ai[j] *= t[j];
        } else {
            for (int64_t j = 0; j < i; j++)
                x[j] = (real)(b[i] - b[j]);
            kn->exp(x, x, i);
            LINATTN_SIMD
            for (int64_t j = 0; j < i; j++)
                ai[j] *= x[j];
        }
        /* an empty carried state contributes zeros, whatever phi(q_i) */
        real gi;
        if (!sh)
            gi = g[i];
        else if (!w->has)
            gi = 0;
        else
            gi = (real)exp(b ? (w->shift - mr[i]) + b[i] : w->shift - mr[i]);
        /* (vectorized: these scaling loops were a third of a gated
         * float call's own time, scalar) */
        if (gi != 1) {
            LINATTN_SIMD
            for (int64_t c = 0; c < e; c++)
                ri[c] *= gi;
        }
        dq[i] *= gi;
    }
}

/* Before the state absorbs the chunk, the factors of the state's update:
 * phi(K_c) row j times exp(b_last - b_j + m_j - M') and the carried
 * state times exp(b_last + M - M'), M' the chunk's last running shift
 * when its keys move it (shifted maps with keys here; else M' = M, and 0
 * without shifts); in float the working copy follows when the chunk is
 * folded in.  b: the decay sums (NULL: none). */
static void move_state(const X(plan) *plan, causal_ws *w, int64_t rows,
                       const double *b, int keys_here)
{
    int64_t m = plan->m, e = plan->e;
    int sh = plan->shifted && keys_here;
    double to = sh ? w->mrun[rows - 1] : w->shift;
    double bl = b ? b[rows - 1] : 0;
    real *x = w->xf; /* (decayed without shifts only) */
    int fast = b && !plan->shifted;
    if (fast && w->pwr) {
        for (int64_t j = 0; j < rows; j++)
            x[j] = w->pwr[w->c - (rows - 1 - j)];
    } else if (fast) {
        for (int64_t j = 0; j < rows; j++)
            x[j] = (real)(bl - b[j]);
        XI(kern_now)()->exp(x, x, rows);
    }
    for (int64_t j = 0; j < rows && (sh || b); j++) {
        real rf = fast ? x[j]
                  : b  ? (real)exp((bl - b[j]) + (sh ? w->mrun[j] - to : 0))
                  : w->mrun[j] != to ? (real)exp(w->mrun[j] - to)
                                     : 1;
        if (rf != 1) {
            real *kj = w->phik + j * m;
            LINATTN_SIMD
            for (int64_t t = 0; t < m; t++)
                kj[t] *= rf;
        }
    }
    /* the carried state (none yet for a shifted map without keys) */
    double f = (sh ? w->shift - to : 0) + bl;
    if ((!plan->shifted || w->has) && f != 0) {
        acc_t ef = (acc_t)exp(f);
        for (int64_t i = 0; i < m; i++) {
            acc_t *ai = w->acc + i * w->ldacc;
            LINATTN_SIMD
            for (int64_t j = 0; j < e; j++)
                ai[j] *= ef;
            w->zacc[i] *= ef;
        }
    }
    if (sh) {
        w->shift = to;
        w->has = 1;
    }
}

/* Whether the carried state holds keys, as a saved record says it: has
 * is kept for the shifted maps only (the others' empty state is zeros,
 * which the backward may read as a state). */
static int carried(const X(plan) *plan, const causal_ws *w)
{
    return plan->shifted ? w->has : 1;
}

/* Saved chunk states of an empty call: the final state only, zero (the
 * backward of no rows reads nothing, and no starting state's gradient
 * needs it). */
static void seal_empty(const X(plan) *plan, real *buf)
{
    real *rec = XI(chunk_record)(plan, buf, 0, 1, 1);
    memset(rec, 0, (size_t)XI(chunk_record_len)(plan) * sizeof(real));
    XI(chunk_states_seal)(plan, buf, 0, 1);
}

/* The rows of rg (a range of the call's problem: its queries, keys and
 * outputs at its first row) causally, after keys of total weight `before`
 * (the count of LINATTN_DENOM_COUNT) absorbed in the carried state (row r is row orow + r of the origin o, the whole
 * call's inputs); returns -1, or the first row whose normalizer breaks
 * the policy (*status LINATTN_EDENOM) or that overflowed
 * (LINATTN_EOVERFLOW): rows before it written, none after.  The range's
 * den (if any) gets the normalizers of the rows out got. */
static int64_t causal_serial(const XI(problem) *rg, causal_ws *w, int64_t c,
                             double before, XI(origin) *o, int64_t orow,
                             int *status)
{
    const X(plan) *plan = rg->plan;
    int64_t n = rg->nq, ldout = rg->part[LINATTN_I_OUT].s.ld;
    XI(view) q = XI(part_view)(rg, LINATTN_I_Q);
    XI(view) k = XI(part_view)(rg, LINATTN_I_K);
    XI(view) v = XI(part_view)(rg, LINATTN_I_V);
    real *out = XI(part_out)(rg, LINATTN_I_OUT);
    real *den_out = XI(part_out)(rg, LINATTN_I_DEN);
    int64_t m = plan->m, e = plan->e, ldb = w->ldb;
    real *den = w->dd, *inv = w->dd + c, *dq = w->dd + 2 * c;
    int cm = rg->layout == LINATTN_COL_MAJOR;
    /* V_c straight from the caller when BLAS and the micro-kernel can
     * read it there (row major, a leading dimension BLAS takes) */
    int v_direct = !v.colmajor && linattn_i_ld_fits(v.ld);
    const XI(kern) *kn = XI(kern_now)();
    /* key weights: the count so far is their running sum (decayed: the
     * recurrence of attn/decay.h) */
    const real *kw = rg->part[LINATTN_I_KW].p;
    double mass = before;
    int decays = XI(decays)(rg);
    for (int64_t r = 0; r < n; r += c) {
        int64_t rows = n - r < c ? n - r : c;
        if (w->rec) /* the state before the chunk, for the backward */
            XI(chunk_record_put)(plan,
                                 w->rec + r / c * XI(chunk_record_len)(plan),
                                 w->stage, w->b, ldb, w->z, w->shift,
                                 carried(plan, w));
        XI(phi_query)(plan, XI(view_rows)(q, r), rows, w->phiq, NULL);
        XI(view) vc = XI(view_rows)(v, r);
        int keys_here = 1; /* a key of this chunk enters the state */
        if (kw) {
            keys_here = weighted_keys(plan, w, XI(view_rows)(k, r), rows,
                                      kw + r);
            /* the copy has the rows of weight 0 zeroed */
            if (!v_direct)
                vc = XI(masked_values)(vc, e, kw + r, rows, 0, w->vbuf);
        } else {
            if (plan->shifted)
                running_keys(plan, w, XI(view_rows)(k, r), rows, NULL);
            else
                XI(phi_rows)(plan, XI(view_rows)(k, r), rows, w->phik, NULL);
            if (!v_direct) {
                XI(copy_rows)(vc, 0, rows, e, w->vbuf);
                vc = (XI(view)){w->vbuf, e, 0};
            }
        }
        kn->transpose(rows, m, w->phik, m, w->b + e, ldb);
        XI(view) pk = {w->phik, m, 0};
        /* [num | A] = phi(Q_c) [S | phi(K_c)^T], dq = phi(Q_c) z, then
         * num += tril(A) V_c, den = dq + tril(A) 1.  (A is the whole
         * square; only its lower triangle is read.) */
        XI(gemm)(0, 0, rows, e + rows, m, 1, (XI(view)){w->phiq, m, 0},
                 (XI(view)){w->b, ldb, 0}, 0, w->r, ldb);
        kn->row_stats(w->phiq, m, rows, m, w->z, dq, NULL);
        const double *bs = NULL;
        if (decays) {
            XI(decay_sums)(rg, r, rows, w->bsum);
            bs = w->bsum;
        }
        if (plan->shifted || decays)
            rescale_rows(plan, w, rows, e, dq, bs);
        memcpy(den, dq, (size_t)rows * sizeof(real));
        triangle_sums(w->r + e, ldb, rows, den);
        int64_t good;
        if (decays) {
            /* (the count is only the count normalizer's) */
            if (plan->denom == LINATTN_DENOM_COUNT)
                mass = XI(decayed_count)(rg, r, rows, mass, w->cnt);
            good = XI(good_counts)(plan, den, rows, 1, w->cnt);
        } else {
            good = kw ? XI(good_rows)(plan, den, rows, 1, mass, 1, kw + r)
                      : XI(good_rows)(plan, den, rows, 1,
                                      before + (double)(r + 1), 1, NULL);
            for (int64_t j = 0; kw && j < rows; j++)
                mass += kw[r + j];
        }
        /* out = (num + tril(A) V_c) / den for the good rows: in one pass
         * by the micro-kernel where there is one, out is row major and
         * every reciprocal is a normal number (the kernel notes
         * non-finite values in its stores); else the triangle into r and
         * a division pass, which notes them too. */
        real *at = cm ? out + r : out + r * ldout;
        int nonfinite;
        /* Key weights with V_c in place: the features of its rows of
         * weight 0 are zeros, so those rows add exactly nothing if they
         * are finite; if not (0 * NaN), V_c is replaced by the copy with
         * those rows zeroed (XI(masked_values)) before it reaches an
         * output or the state.  The micro-kernel leaves r as it was, so
         * V_c is looked at after it, in cache, and its rows redone from
         * the copy only then: a clean chunk does not pay a scan of V_c
         * before its first use (measured: a few % of the call). */
        int v_later = kw && v_direct;
        if (kn->trimm && !cm && XI(reciprocals)(den, good, inv)) {
            nonfinite = kn->trimm(good, e, w->r + e, ldb, vc.p, vc.ld, w->r,
                                  ldb, at, ldout, inv);
            XI(view) vm = v_later ? XI(masked_values)(vc, e, kw + r, rows, 1,
                                                      w->vbuf)
                                  : vc;
            if (vm.p != vc.p) {
                vc = vm;
                nonfinite = kn->trimm(good, e, w->r + e, ldb, vc.p, vc.ld,
                                      w->r, ldb, at, ldout, inv);
            }
        } else {
            if (v_later) /* r takes the triangle: V_c checked before */
                vc = XI(masked_values)(vc, e, kw + r, rows, 1, w->vbuf);
            /* over every row of the chunk, as for a clean one: a shorter
             * GEMM may round the good rows differently, and rows before
             * a failing one must keep their bits */
            triangle_times(w->r + e, ldb, vc, rows, e, w->r, ldb);
            nonfinite = XI(divide_rows)(at, cm, ldout, w->r, 0, ldb, good, e,
                                        den, inv);
        }
        if (den_out) /* the rows out got, as state_query's den */
            memcpy(den_out + r, den, (size_t)good * sizeof(real));
        if (nonfinite) {
            int64_t over = XI(first_overflow)(rg, r, good, o, orow + r);
            if (over < good) {
                *status = LINATTN_EOVERFLOW;
                return r + over;
            }
        }
        if (good < rows) {
            *status = LINATTN_EDENOM;
            return r + good;
        }
        /* The state moves past this chunk: S += phi(K_c)^T V_c,
         * z += phi(K_c)^T 1. */
        if ((plan->shifted && keys_here) || decays)
            move_state(plan, w, rows, bs, keys_here);
        kn->row_stats(w->phik, m, rows, m, NULL, NULL, w->zpart);
        for (int64_t i = 0; i < m; i++) {
            w->zacc[i] += w->zpart[i];
            w->z[i] = (real)w->zacc[i];
        }
#if LINATTN_ACC_WIDER
        /* acc += part in double, b = acc in float, and part = 0 for the
         * next chunk's GEMM to add into (beta = 1 spares a pass that
         * clears it) */
        XI(gemm)(1, 0, m, e, rows, 1, pk, vc, 1, w->part, e);
        for (int64_t i = 0; i < m; i++)
            kn->fold(w->acc + i * e, w->part + i * e, w->b + i * ldb, e);
#else
        XI(gemm)(1, 0, m, e, rows, 1, pk, vc, 1, w->b, ldb);
#endif
    }
    return -1;
}

/* A causal call split over threads: range t starts from the state of all
 * earlier ranges (pass 1 builds the range states, a prefix sum hands them
 * on, pass 2 runs the chunks of each range). */
typedef struct {
    const XI(problem) *pb;
    causal_ws *ws;
    int64_t c;
    double before; /* the starting state's count (its keys' weight) */
    /* with key weights or decay, range t's starting count */
    double range_before[LINATTN_MAX_THREADS];
    int counted;
    int poisoned;   /* the starting state holds NaN or Inf from its inputs */
    int status[LINATTN_MAX_THREADS]; /* range t's, with its first bad row */
} causal_job;

static int64_t range_chunks(void *ctx, int t, int64_t lo, int64_t hi)
{
    causal_job *j = ctx;
    XI(origin) o = {j->pb, NULL, j->poisoned ? 0 : -1};
    XI(problem) rg = XI(problem_rows)(j->pb, lo, hi);
    double before = j->counted ? j->range_before[t] : j->before + (double)lo;
    int64_t bad = causal_serial(&rg, &j->ws[t], j->c, before, &o, lo,
                                &j->status[t]);
    return bad >= 0 ? lo + bad : INT64_MAX;
}

/* The first range's carried state starts as from (acc at shift; has: it
 * holds tokens), as if its chunks had run before. */
static void seed_ws(const X(plan) *plan, causal_ws *w, const X(state) *from)
{
    combine_state(plan, w, 0, from->acc, 1); /* w = from's [S | z] */
    w->shift = from->shift;
    w->has = from->tokens > 0;
}

int XI(causal_run)(const XI(problem) *pb, int64_t *bad_row)
{
    if (pb->qoff) /* packed: each sequence by this path */
        return XI(packed_run)(pb, XI(causal_run), bad_row);
    const X(plan) *plan = pb->plan;
    X(state) *from = pb->state;
    int64_t n = pb->nq;
    const real *kw = pb->part[LINATTN_I_KW].p;
    if (n == 0) {
        if (pb->chunk_states)
            seal_empty(plan, pb->chunk_states);
        return 0;
    }
    int st = 0;
    int64_t c = plan->chunk < n ? plan->chunk : n;
    int64_t min_rows = plan->block > c ? plan->block : c;
    int nt = linattn_i_threads(n, min_rows);
    /* the buffer of an earlier call is refused from here on, whatever
     * this one returns, until it seals its own */
    if (pb->chunk_states)
        XI(chunk_states_clear)(pb->chunk_states);
    /* All workspace and range states before anything is written. */
    causal_ws ws[LINATTN_MAX_THREADS];
    X(state) states[LINATTN_MAX_THREADS];
    void *mem = nt > 1 ? malloc((size_t)nt * XI(state_bytes)(plan)) : NULL;
    int have = 0;
    if (nt == 1 || mem)
        while (have < nt && !alloc_causal_ws(&ws[have], pb, c))
            have++;
    int64_t bad = INT64_MAX;
    int decays = XI(decays)(pb);
    causal_job job = {pb, ws, c, from ? from->mass : 0, {0}, kw || decays,
                      from ? from->poisoned : 0, {0}};
    /* with key weights, range t's count starts at the weight before it
     * (decayed: the recurrence over the ranges before) */
    int64_t lo = 0;
    for (int t = 0; job.counted && t < nt; t++) {
        double s = t ? job.range_before[t - 1] : job.before;
        int64_t start = linattn_i_range_start(n, nt, t);
        if (decays) {
            s = XI(decayed_count)(pb, lo, start - lo, s, NULL);
            lo = start;
        }
        for (; lo < start; lo++)
            s += kw[lo];
        job.range_before[t] = s;
    }
    if (have == nt && from)
        seed_ws(plan, &ws[0], from);
    if (have == nt && pb->chunk_states) {
        for (int t = 0; t < nt; t++)
            ws[t].rec = XI(chunk_record)(plan, pb->chunk_states, n, nt, t);
    }
    if (have < nt) {
        st = LINATTN_ENOMEM;
    } else if (nt > 1) {
        /* The states of ranges 0 .. nt-2, one after another, each update
         * split over all threads (a range per thread would leave the last
         * thread idle while the others build theirs). */
        for (int t = 0; !st && t < nt - 1; t++) {
            int64_t lo = linattn_i_range_start(n, nt, t);
            int64_t hi = linattn_i_range_start(n, nt, t + 1);
            XI(problem) rg = XI(problem_rows)(pb, lo, hi);
            XI(state_init)(&states[t], plan,
                           (char *)mem + t * XI(state_bytes)(plan));
            st = XI(state_update_run)(&states[t], &rg, 0);
        }
        /* range t starts from ranges 0 .. t-1 (at the larger shift): the
         * state before range t - 1, decayed over its rows (a factor
         * exp(B) <= 1), and range t - 1's own keys (whose state decays to
         * its end).  The shift stays the running maximum of the key
         * exponents, as on one thread (B is a factor, not a shift): the
         * normalizers written carry exp(-m_i) of that maximum whatever
         * the thread count, which the backward reproduces from them. */
        for (int t = 1; !st && t < nt; t++) {
            acc_t a, b;
            double B = 0;
            if (decays)
                B = XI(decay_total)(pb, linattn_i_range_start(n, nt, t - 1),
                                    linattn_i_range_start(n, nt, t) -
                                        linattn_i_range_start(n, nt, t - 1));
            ws[t].shift = ws[t - 1].shift;
            XI(shift_factors)(plan, &ws[t].shift, ws[t - 1].has,
                              states[t - 1].shift, states[t - 1].tokens > 0,
                              &a, &b);
            if (B != 0)
                a *= (acc_t)exp(B);
            ws[t].has = ws[t - 1].has || states[t - 1].tokens > 0;
            copy_carried(plan, &ws[t], &ws[t - 1]);
            combine_state(plan, &ws[t], a, states[t - 1].acc, b);
        }
    }
    if (!st)
        bad = linattn_i_parallel_ranges(nt, n, range_chunks, &job);
    /* the carried state after the last range's chunks becomes from's,
     * refused as linattn_d_state_update refuses it when its sums left the
     * range: every row is written by then, and stays */
    int refused = 0;
    if (!st && bad >= n && pb->chunk_states) { /* the final state, sealed */
        const causal_ws *w = &ws[nt - 1];
        XI(chunk_record_put)(plan,
                             XI(chunk_record)(plan, pb->chunk_states, n, nt,
                                              nt),
                             w->stage, w->b, w->ldb, w->z, w->shift,
                             carried(plan, w));
        XI(chunk_states_seal)(plan, pb->chunk_states, n, nt);
    }
    if (!st && bad >= n && pb->absorb) {
        const causal_ws *w = &ws[nt - 1];
        refused = XI(state_take)(from, w->acc, w->ldacc, w->zacc, w->shift,
                                 pb, n);
        if (refused && pb->chunk_states) /* a failed call seals nothing */
            XI(chunk_states_clear)(pb->chunk_states);
    }
    for (int t = 0; t < have; t++)
        free_causal_ws(&ws[t]);
    free(mem);
    if (st)
        return st;
    if (refused) {
        if (bad_row)
            *bad_row = -1;
        return refused;
    }
    if (bad < n) {
        if (bad_row)
            *bad_row = bad;
        return job.status[linattn_i_range_of(n, nt, bad)];
    }
    return 0;
}

/* ---- the public calls ---- */

/* linattn_d_causal: n rows of Q, K, V, out from argument 4 on. */
static const linattn_i_signature causal_sig = {
    .plan = 1, .layout = 2, .nq = 3, .flags = LINATTN_I_SCAN | LINATTN_I_DECAY,
    .part = {LINATTN_I_QKVO(4)}};

/* linattn_d_causal_forward: and den (12). */
static const linattn_i_signature forward_sig = {
    .plan = 1, .layout = 2, .nq = 3, .flags = LINATTN_I_SCAN | LINATTN_I_DECAY,
    .part = {LINATTN_I_QKVO(4), LINATTN_I_DEN_OUT(12, 1)}};

/* linattn_d_state_causal: the state (its plan) first, absorb after the
 * matrices; its tokens and these n must fit int64 (row i's count, and an
 * absorbing call's end). */
static const linattn_i_signature state_causal_sig = {
    .state = 1, .layout = 2, .nq = 3, .absorb = 12,
    .flags = LINATTN_I_SCAN | LINATTN_I_TOKENS | LINATTN_I_DECAY,
    .part = {LINATTN_I_QKVO(4)}};

/* A causal problem of n rows. */
static XI(problem) causal_problem(const X(plan) *plan, int layout, int64_t n)
{
    XI(problem) pb = XI(problem_init)(plan, layout, n, n);
    pb.causal = 1;
    return pb;
}

int X(causal)(const X(plan) *plan, int layout, int64_t n, const real *q,
              int64_t ldq, const real *k, int64_t ldk, const real *v,
              int64_t ldv, real *out, int64_t ldout, int64_t *bad_row)
{
    XI(problem) pb = causal_problem(plan, layout, n);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    int st = XI(problem_check)(&pb, &causal_sig, NULL);
    return st ? st : XI(causal_run)(&pb, bad_row);
}

int X(causal_check)(const X(plan) *plan, int layout, int64_t n,
                    const real *q, int64_t ldq, const real *k, int64_t ldk,
                    const real *v, int64_t ldv, const real *out,
                    int64_t ldout)
{
    XI(problem) pb = causal_problem(plan, layout, n);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    return XI(problem_check)(&pb, &causal_sig, NULL);
}

int X(causal_forward)(const X(plan) *plan, int layout, int64_t n,
                      const real *q, int64_t ldq, const real *k, int64_t ldk,
                      const real *v, int64_t ldv, real *out, int64_t ldout,
                      real *den, int64_t *bad_row)
{
    XI(problem) pb = causal_problem(plan, layout, n);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    pb.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    int st = XI(problem_check)(&pb, &forward_sig, NULL);
    return st ? st : XI(causal_run)(&pb, bad_row);
}

int X(state_causal)(X(state) *state, int layout, int64_t n, const real *q,
                    int64_t ldq, const real *k, int64_t ldk, const real *v,
                    int64_t ldv, real *out, int64_t ldout, int absorb,
                    int64_t *bad_row)
{
    XI(problem) pb = causal_problem(state ? state->plan : NULL, layout, n);
    pb.state = state;
    pb.absorb = absorb;
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    int st = XI(problem_check)(&pb, &state_causal_sig, NULL);
    return st ? st : XI(causal_run)(&pb, bad_row);
}

/* linattn_d_causal_ex: and the extras (12), whose den is optional. */
static const linattn_i_signature ex_sig = {
    .plan = 1, .layout = 2, .nq = 3, .extras = 12, .given = 12,
    .absorb = 12,
    .flags = LINATTN_I_SCAN | LINATTN_I_TOKENS | LINATTN_I_DECAY,
    .ex_parts = LINATTN_I_X_DEN | LINATTN_I_X_STATE | LINATTN_I_X_WEIGHTS |
                LINATTN_I_X_OFFSETS | LINATTN_I_X_STATES | LINATTN_I_X_GATES |
                LINATTN_I_X_CHUNK_STATES,
    .part = {LINATTN_I_QKVO(4), LINATTN_I_DEN_OUT(12, 0),
             LINATTN_I_WEIGHTS_IN(12), LINATTN_I_GATES_IN(12)}};

int X(causal_ex)(const X(plan) *plan, int layout, int64_t n, const real *q,
                 int64_t ldq, const real *k, int64_t ldk, const real *v,
                 int64_t ldv, real *out, int64_t ldout, const X(extras) *ex,
                 int64_t *bad_row)
{
    XI(problem) pb = causal_problem(plan, layout, n);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_extras)(&pb, ex);
    int st = XI(problem_check)(&pb, &ex_sig, NULL);
    return st ? st : XI(causal_run)(&pb, bad_row);
}

int X(causal_ex_check)(const X(plan) *plan, int layout, int64_t n,
                       const real *q, int64_t ldq, const real *k, int64_t ldk,
                       const real *v, int64_t ldv, const real *out,
                       int64_t ldout, const X(extras) *ex)
{
    XI(problem) pb = causal_problem(plan, layout, n);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_extras)(&pb, ex);
    return XI(problem_check)(&pb, &ex_sig, NULL);
}
