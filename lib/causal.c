/*
 * causal.c -- causal linear attention, out_i from keys j <= i only, as
 * chunked GEMMs.  For each chunk c of C rows, with (S, z) the state of all
 * earlier chunks:
 *
 *     A   = tril(phi(Q_c) phi(K_c)^T)                       (C x C)
 *     num = phi(Q_c) S + A V_c,   den = phi(Q_c) z + A 1
 *     then S += phi(K_c)^T V_c,   z += phi(K_c)^T 1
 *
 * A V_c is built from GEMMs on the blocks strictly below the diagonal and
 * small explicit triangles on it, so that no future token of the chunk
 * enters a row's output, not even as 0 * Inf (OpenBLAS's TRMM does let
 * NaN through from rows below: measured).
 *
 * Extra memory is O(C (m + e + C) + m e), whatever n: the prefix state is
 * never materialized per token.
 *
 * The maps with exponentials carry a running shift, so that no output
 * depends on a later token, not even through rounding: key j's features
 * are taken with m_j, the largest key exponent up to j (over the carried
 * state too), and row i rescales its triangle entries by exp(m_j - m_i)
 * <= 1 and the carried state (at shift M) by exp(M - m_i) <= 1.  The
 * state then moves to the chunk's last m_j.  (A shift over the whole
 * chunk would cancel in exact arithmetic but not in rounding or
 * underflow; a peer library leaked future tokens exactly there.)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "threads.h"
#include "validate.h"

/* Checks of linattn_d_causal and linattn_d_naive_causal (positions as in
 * their prototypes), as attention's with one sequence for both. */
int XI(causal_args)(const X(plan) *plan, int layout, int64_t n, const real *q,
                    int64_t ldq, const real *k, int64_t ldk, const real *v,
                    int64_t ldv, const real *out, int64_t ldout,
                    int keys_in_blas)
{
    if (!plan)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    if (n < 0)
        return -3;
    return XI(qkvo_args)(plan, layout, n, n, q, ldq, k, ldk, v, ldv, out,
                         ldout, 4, keys_in_blas);
}

/* The workspace of one causal pass, all allocated up front. */
typedef struct {
    real *phiq, *phik, *a, *vcopy, *y, *dd, *s, *part;
    acc_t *acc, *zsum, *partial;
    /* shifted maps: each key's largest exponent and the running maximum
     * m_j; the carried state is at shift, and holds tokens when has */
    double *rexp, *mrun;
    double shift;
    int has;
} causal_ws;

static void free_causal_ws(causal_ws *w)
{
    free(w->phiq), free(w->phik), free(w->a), free(w->vcopy), free(w->y);
    free(w->dd), free(w->s), free(w->part);
    free(w->acc), free(w->zsum), free(w->partial);
    free(w->rexp), free(w->mrun);
}

static int alloc_causal_ws(causal_ws *w, const X(plan) *plan, int64_t c,
                           int copy_v)
{
    int64_t m = plan->m, e = plan->e, len = m * (e + 1);
    memset(w, 0, sizeof *w);
    /* phi of Q and K always materialized: the chunk is small and the
     * same buffers then serve every map and every leading dimension. */
    w->phiq = linattn_i_alloc(c * m, sizeof(real));
    w->phik = linattn_i_alloc(c * m, sizeof(real));
    w->a = linattn_i_alloc(c * c, sizeof(real));
    w->vcopy = copy_v ? linattn_i_alloc(c * e, sizeof(real)) : NULL;
    w->y = linattn_i_alloc(c * e, sizeof(real));
    w->dd = linattn_i_alloc(2 * c + m, sizeof(real));
    w->s = linattn_i_alloc(len, sizeof(real));
    w->part = LINATTN_ACC_WIDER ? linattn_i_alloc(m * e, sizeof(real)) : NULL;
    w->acc = linattn_i_alloc(len, sizeof(acc_t));
    w->zsum = linattn_i_alloc(m, sizeof(acc_t));
    w->partial = linattn_i_alloc(XI(stats_partial_len)(plan, c), sizeof(acc_t));
    if (plan->shifted) {
        w->rexp = linattn_i_alloc(c, sizeof(double));
        w->mrun = linattn_i_alloc(c, sizeof(double));
    }
    if (!w->phiq || !w->phik || !w->a || (copy_v && !w->vcopy) || !w->y ||
        !w->dd || !w->s || (LINATTN_ACC_WIDER && !w->part) || !w->acc ||
        !w->zsum || !w->partial || (plan->shifted && (!w->rexp || !w->mrun))) {
        free_causal_ws(w);
        return LINATTN_ENOMEM;
    }
    memset(w->acc, 0, (size_t)len * sizeof(acc_t));
    memset(w->s, 0, (size_t)len * sizeof(real));
    return 0;
}

/* Rows per diagonal block of the triangle product. */
#define TRIANGLE_BLOCK 16

/* y (rows x e, ld e) = tril(A) V for the first rows rows, reading only
 * A[i][j] and V row j with j <= i: below the diagonal blocks by GEMM,
 * the diagonal blocks by explicit loops. */
static void triangle_times(const real *a, int64_t lda, XI(view) v,
                           int64_t rows, int64_t e, real *y)
{
    /* V(j, c) = v.p[j * rs + c * cs] in either layout: no branch inside
     * the loops below. */
    int64_t rs = v.colmajor ? 1 : v.ld, cs = v.colmajor ? v.ld : 1;
    for (int64_t i0 = 0; i0 < rows; i0 += TRIANGLE_BLOCK) {
        int64_t i1 = i0 + TRIANGLE_BLOCK < rows ? i0 + TRIANGLE_BLOCK : rows;
        if (i0 > 0)
            XI(gemm)(0, 0, i1 - i0, e, i0, 1, (XI(view)){a + i0 * lda, lda, 0},
                     v, 0, y + i0 * e, e);
        else
            memset(y, 0, (size_t)((i1 - i0) * e) * sizeof(real));
        for (int64_t i = i0; i < i1; i++)
            for (int64_t j = i0; j <= i; j++) {
                real aij = a[i * lda + j];
                const real *vj = v.p + j * rs;
                for (int64_t c = 0; c < e; c++)
                    y[i * e + c] += aij * vj[c * cs];
            }
    }
}

/* Shifted maps: phi(K_c) with the running shifts m_j into w->phik. */
static void running_keys(const X(plan) *plan, causal_ws *w, XI(view) k,
                         int64_t rows)
{
    XI(phi_pre)(plan, k, rows, w->phik, w->rexp);
    double run = w->has ? w->shift : -INFINITY;
    for (int64_t j = 0; j < rows; j++) {
        double x = w->rexp[j];
        run = x > run || x != x ? x : run; /* NaN propagates */
        w->mrun[j] = run;
    }
    XI(phi_post)(plan, w->phik, rows, w->rexp, w->mrun, 0, NULL);
}

/* Shifted maps, before the normalizers are read: row i's triangle entries
 * times exp(m_j - m_i), its carried-state terms (den[i] from z, and
 * phi(q_i) for the GEMM with S) times exp(M - m_i). */
static void rescale_rows(const X(plan) *plan, causal_ws *w, int64_t rows,
                         real *den)
{
    int64_t m = plan->m;
    const double *mr = w->mrun;
    for (int64_t i = 0; i < rows; i++) {
        real *ai = w->a + i * rows;
        for (int64_t j = 0; j < i; j++)
            if (mr[j] != mr[i])
                ai[j] *= (real)exp(mr[j] - mr[i]);
        real g = w->has ? (real)exp(w->shift - mr[i]) : 0;
        if (g != 1) {
            den[i] *= g;
            real *qi = w->phiq + i * m;
            for (int64_t t = 0; t < m; t++)
                qi[t] *= g;
        }
    }
}

/* Shifted maps, after the chunk's outputs: phi(K_c) brought to the
 * chunk's last shift M' (row j times exp(m_j - M')), its column sums into
 * w->zsum, and the carried state from M to M'. */
static void move_shift(const X(plan) *plan, causal_ws *w, int64_t rows)
{
    int64_t m = plan->m, len = m * (plan->e + 1);
    double to = w->mrun[rows - 1];
    for (int64_t j = 0; j < rows; j++)
        if (w->mrun[j] != to) {
            real f = (real)exp(w->mrun[j] - to);
            real *kj = w->phik + j * m;
            for (int64_t t = 0; t < m; t++)
                kj[t] *= f;
        }
    XI(stats) ks = {NULL, NULL, w->zsum, NULL};
    XI(stats_range)((XI(view)){w->phik, m, 0}, m, 0, rows, &ks, w->zsum);
    if (w->has && w->shift != to) {
        double f = exp(w->shift - to);
        for (int64_t i = 0; i < len; i++)
            w->acc[i] *= f;
    }
    w->shift = to;
    w->has = 1;
}

/* Rows [0, n) causally; returns -1 or the first row whose normalizer
 * breaks the policy (rows before it written, none after). */
static int64_t causal_serial(const X(plan) *plan, causal_ws *w, int64_t c,
                             int layout, int64_t n, XI(view) q, XI(view) k,
                             XI(view) v, real *out, int64_t ldout)
{
    int64_t m = plan->m, e = plan->e, ld = e + 1;
    real *den = w->dd, *inv = w->dd + c, *z = w->dd + 2 * c;
    for (int64_t r = 0; r < n; r += c) {
        int64_t rows = n - r < c ? n - r : c;
        /* phi(Q_c) with the normalizers phi(q_i) . z of earlier chunks,
         * phi(K_c) with its column sums. */
        for (int64_t i = 0; i < m; i++)
            z[i] = w->s[i * ld + e];
        XI(stats) qs = {z, den, NULL, NULL};
        memset(w->zsum, 0, (size_t)m * sizeof(acc_t));
        XI(stats) ks = {NULL, NULL, w->zsum, w->partial};
        XI(phi_rows)(plan, XI(view_rows)(q, r), rows, w->phiq, &qs);
        if (plan->shifted)
            running_keys(plan, w, XI(view_rows)(k, r), rows);
        else
            XI(phi_rows)(plan, XI(view_rows)(k, r), rows, w->phik, &ks);
        XI(view) pq = {w->phiq, m, 0}, pk = {w->phik, m, 0};
        XI(view) vc = XI(view_rows)(v, r);
        if (w->vcopy) {
            XI(copy_rows)(vc, 0, rows, e, w->vcopy);
            vc = (XI(view)){w->vcopy, e, 0};
        }
        /* The triangle: keys of this chunk up to and including the row.
         * (The GEMM fills the square; only the lower triangle is read.) */
        XI(gemm)(0, 1, rows, rows, m, 1, pq, pk, 0, w->a, rows);
        if (plan->shifted)
            rescale_rows(plan, w, rows, den);
        for (int64_t i = 0; i < rows; i++) {
            const real *ai = w->a + i * rows;
            acc_t sum = 0;
            for (int64_t j = 0; j <= i; j++)
                sum += ai[j];
            den[i] += (real)sum;
        }
        int64_t good = XI(good_rows)(plan, den, rows, 1);
        /* num = tril(A) V_c + phi(Q_c) S for the good rows, then
         * out = num / den. */
        if (good > 0) {
            triangle_times(w->a, rows, vc, good, e, w->y);
            XI(gemm)(0, 0, good, e, m, 1, pq, (XI(view)){w->s, ld, 0}, 1, w->y, e);
            for (int64_t i = 0; i < good; i++)
                inv[i] = 1 / den[i];
            XI(put_rows)(layout == LINATTN_COL_MAJOR ? out + r : out + r * ldout,
                         layout == LINATTN_COL_MAJOR, ldout, w->y, 0, e, good, e,
                         inv);
        }
        if (good < rows)
            return r + good;
        /* The state moves past this chunk. */
        if (plan->shifted)
            move_shift(plan, w, rows);
#if LINATTN_ACC_WIDER
        XI(gemm)(1, 0, m, e, rows, 1, pk, vc, 0, w->part, e);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < e; j++)
                w->acc[i * ld + j] += w->part[i * e + j];
#else
        XI(gemm)(1, 0, m, e, rows, 1, pk, vc, 1, w->acc, ld);
#endif
        for (int64_t i = 0; i < m; i++)
            w->acc[i * ld + e] += w->zsum[i];
        for (int64_t i = 0; LINATTN_ACC_WIDER && i < m * ld; i++)
            w->s[i] = (real)w->acc[i];
    }
    return -1;
}

/* A causal call split over threads: range t starts from the state of all
 * earlier ranges (pass 1 builds the range states, a prefix sum hands them
 * on, pass 2 runs the chunks of each range). */
typedef struct {
    const X(plan) *plan;
    causal_ws *ws;
    X(state) *range_state;
    int nt, layout;
    int64_t c;
    XI(view) q, k, v;
    real *out;
    int64_t ldout;
} causal_job;

static int64_t range_state(void *ctx, int t, int64_t lo, int64_t hi)
{
    causal_job *j = ctx;
    if (t == j->nt - 1) /* nobody comes after the last range */
        return INT64_MAX;
    return XI(state_update_checked)(&j->range_state[t], XI(view_rows)(j->k, lo),
                                    XI(view_rows)(j->v, lo), hi - lo)
               ? 0
               : INT64_MAX;
}

static int64_t range_chunks(void *ctx, int t, int64_t lo, int64_t hi)
{
    causal_job *j = ctx;
    int cm = j->layout == LINATTN_COL_MAJOR;
    real *out = cm ? j->out + lo : j->out + lo * j->ldout;
    int64_t bad = causal_serial(j->plan, &j->ws[t], j->c, j->layout, hi - lo,
                                XI(view_rows)(j->q, lo), XI(view_rows)(j->k, lo),
                                XI(view_rows)(j->v, lo), out, j->ldout);
    return bad >= 0 ? lo + bad : INT64_MAX;
}

int X(causal)(const X(plan) *plan, int layout, int64_t n, const real *q,
              int64_t ldq, const real *k, int64_t ldk, const real *v,
              int64_t ldv, real *out, int64_t ldout, int64_t *bad_row)
{
    int st = XI(causal_args)(plan, layout, n, q, ldq, k, ldk, v, ldv, out,
                             ldout, 0);
    if (st || n == 0)
        return st;
    int64_t c = plan->chunk < n ? plan->chunk : n;
    int64_t min_rows = plan->block > c ? plan->block : c;
    int nt = linattn_i_threads(n, min_rows);
    int64_t len = plan->m * (plan->e + 1);
    /* All workspace and range states before anything is written. */
    causal_ws ws[LINATTN_MAX_THREADS];
    X(state) states[LINATTN_MAX_THREADS];
    void *mem = nt > 1 ? malloc((size_t)nt * XI(state_bytes)(plan)) : NULL;
    int have = 0;
    if (nt == 1 || mem)
        while (have < nt && !alloc_causal_ws(&ws[have], plan, c,
                                             !linattn_i_ld_fits(ldv)))
            have++;
    int64_t bad = INT64_MAX;
    int cm = layout == LINATTN_COL_MAJOR;
    causal_job job = {plan, ws, states, nt, layout, c, {q, ldq, cm},
                      {k, ldk, cm}, {v, ldv, cm}, out, ldout};
    if (have < nt) {
        st = LINATTN_ENOMEM;
    } else if (nt > 1) {
        for (int t = 0; t < nt; t++)
            XI(state_init)(&states[t], plan, (char *)mem + t * XI(state_bytes)(plan));
        if (linattn_i_parallel_ranges(nt, n, range_state, &job) == 0)
            st = LINATTN_ENOMEM;
        /* range t starts from ranges 0 .. t-1 (at the larger shift) */
        for (int t = 1; !st && t < nt; t++) {
            memcpy(ws[t].acc, ws[t - 1].acc, (size_t)len * sizeof(acc_t));
            ws[t].shift = ws[t - 1].shift;
            XI(acc_add)(ws[t].acc, &ws[t].shift, ws[t - 1].has,
                        states[t - 1].acc, states[t - 1].shift,
                        states[t - 1].tokens > 0, len);
            ws[t].has = ws[t - 1].has || states[t - 1].tokens > 0;
        }
    }
    for (int t = 0; !st && LINATTN_ACC_WIDER && t < nt; t++)
        for (int64_t i = 0; i < len; i++)
            ws[t].s[i] = (real)ws[t].acc[i];
#if !LINATTN_ACC_WIDER
    /* In double the state is accumulated in place: S is acc itself. */
    for (int t = 0; t < have; t++) {
        free(ws[t].s);
        ws[t].s = ws[t].acc;
    }
#endif
    if (!st)
        bad = linattn_i_parallel_ranges(nt, n, range_chunks, &job);
    for (int t = 0; t < have; t++) {
#if !LINATTN_ACC_WIDER
        ws[t].s = NULL;
#endif
        free_causal_ws(&ws[t]);
    }
    free(mem);
    if (st)
        return st;
    if (bad < n) {
        if (bad_row)
            *bad_row = bad;
        return LINATTN_EDENOM;
    }
    return 0;
}
