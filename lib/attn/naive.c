/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * naive.c -- the quadratic baselines: the same kernel maths rescanned for
 * every query (linattn_d_naive) and exact softmax attention
 * (linattn_d_softmax).  Both score a block of query rows against all keys
 * with one GEMM, so memory is O(rows * nk) per thread and never nq x nk.
 * Query rows are split over threads like the factored path, so that the
 * two are timed on equal terms.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/decay.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/threads.h"
#include "common/validate.h"

/* Query rows per block so that the score block stays within the cap. */
static int64_t score_rows(int64_t block, int64_t nk)
{
    int64_t rows = nk > 0 ? LINATTN_NAIVE_SCORES / nk : block;
    if (rows > block)
        rows = block;
    return rows < 1 ? 1 : rows;
}

/* den[i] = sum_j a[i, j] for rows x nk scores (row major, ld nk),
 * accumulated in acc_t. */
static void row_sums(const real *a, int64_t rows, int64_t nk, real *den)
{
    for (int64_t i = 0; i < rows; i++) {
        acc_t s = 0;
        for (int64_t j = 0; j < nk; j++)
            s += a[i * nk + j];
        den[i] = (real)s;
    }
}

/* One thread's scores, features (or a copy of the query rows), normalizers
 * with their reciprocals, and the staging block for outputs whose leading
 * dimension is beyond BLAS. */
typedef struct {
    real *a, *phiq, *dd, *y;
} score_ws;

typedef struct {
    const XI(problem) *pb; /* the call's: its Q, outputs, plan, sizes */
    int64_t rows_max;
    XI(view) pk, v;        /* phi(K), or K for softmax; V as the GEMMs */
                           /* read it                                 */
    score_ws *ws;
    const double *mrun;    /* causal, shifted maps: key j's running shift */
    const double *before;  /* key weights: before[c] = w_0 + .. + w_{c-1} */
    /* causal, decayed: key c's running sum of log decays and row c's
     * decayed count (the count normalizer's) */
    const double *bsum, *counts;
    int status[LINATTN_MAX_THREADS]; /* range t's, with its first bad row */
} score_job;

/* Rows [r, r + rows) written to the outputs: 0, or the status for the
 * first that overflowed, with *bad its row. */
static int overflow_in(const score_job *j, XI(origin) *o, int64_t r,
                       int64_t rows, int64_t *bad)
{
    int64_t over = XI(first_overflow)(j->pb, r, rows, o, r);
    if (over == rows)
        return 0;
    *bad = r + over;
    return LINATTN_EOVERFLOW;
}

static void free_score_ws(score_ws *ws, int count)
{
    for (int t = 0; t < count; t++) {
        free(ws[t].a);
        free(ws[t].phiq);
        free(ws[t].dd);
        free(ws[t].y);
    }
}

/* Workspaces for nt threads (phi or a copy of the queries only when
 * phi_m > 0, the output staging block only when y_e > 0); returns 0 or
 * LINATTN_ENOMEM with nothing left allocated. */
static int alloc_score_ws(score_ws *ws, int nt, int64_t rows, int64_t nk,
                          int64_t phi_m, int64_t y_e)
{
    for (int t = 0; t < nt; t++) {
        ws[t].a = linattn_i_alloc(rows * (nk > 0 ? nk : 1), sizeof(real));
        ws[t].phiq = phi_m ? linattn_i_alloc(rows * phi_m, sizeof(real)) : NULL;
        ws[t].dd = linattn_i_alloc(2 * rows, sizeof(real));
        ws[t].y = y_e ? linattn_i_alloc(rows * y_e, sizeof(real)) : NULL;
        if (!ws[t].a || (phi_m && !ws[t].phiq) || !ws[t].dd || (y_e && !ws[t].y)) {
            free_score_ws(ws, t + 1);
            return LINATTN_ENOMEM;
        }
    }
    return 0;
}

/* Causal rows [r, r + rows) of a block, its masked scores in w->a (ld nk):
 * y = A V by GEMM over the keys before the block, which every row sees,
 * plus the block's own keys j <= i by explicit loops, so that a later
 * token's value never meets a masked zero (0 * Inf would be NaN); then
 * out = y / den.  Nonzero when a value written is not finite. */
static int causal_rows(const score_job *j, score_ws *w, int64_t r,
                        int64_t rows, int64_t nk)
{
    const XI(problem) *pb = j->pb;
    int64_t e = pb->e, ldout = pb->part[LINATTN_I_OUT].s.ld;
    real *out = XI(part_out)(pb, LINATTN_I_OUT);
    XI(view) v = j->v;
    int64_t rs = v.colmajor ? 1 : v.ld, cs = v.colmajor ? v.ld : 1;
    if (r > 0)
        XI(gemm)(0, 0, rows, e, r, 1, (XI(view)){w->a, nk, 0}, v, 0, w->y, e);
    else
        memset(w->y, 0, (size_t)(rows * e) * sizeof(real));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t c = r; c <= r + i; c++) {
            real aic = w->a[i * nk + c];
            const real *vc = v.p + c * rs;
            for (int64_t col = 0; col < e; col++)
                w->y[i * e + col] += aic * vc[col * cs];
        }
    int cm = pb->layout == LINATTN_COL_MAJOR;
    return XI(divide_rows)(cm ? out + r : out + r * ldout, cm, ldout, w->y, 0,
                           e, rows, e, w->dd, w->dd + j->rows_max);
}

/* Key weights: phi(K) (nk x m) of the keys with the rows of weight 0
 * zeroed before the map (never read) and after it, every other row times
 * its weight; the shifted maps' shifts (mrun: causal, the running
 * maximum) ignore the keys of weight 0.  kz: workspace of nk x d. */
static void weighted_keys(const X(plan) *plan, XI(view) k, const real *kw,
                          int64_t nk, real *kz, real *phik, double *rexp,
                          double *mrun)
{
    int64_t d = plan->d, m = plan->m;
    for (int64_t j = 0; j < nk; j++) {
        if (kw[j] == 0)
            memset(kz + j * d, 0, (size_t)d * sizeof(real));
        else
            XI(copy_rows)(XI(view_rows)(k, j), 0, 1, d, kz + j * d);
    }
    XI(view) kv = {kz, d, 0};
    if (plan->shifted) {
        XI(phi_pre)(plan, kv, nk, phik, rexp);
        double run = -INFINITY;
        for (int64_t j = 0; j < nk; j++) {
            double x = kw[j] == 0 ? -INFINITY : rexp[j];
            run = x > run || x != x ? x : run;
            if (mrun)
                mrun[j] = run;
        }
        XI(phi_post)(plan, phik, nk, rexp, mrun, run, NULL);
    } else {
        XI(phi_rows)(plan, kv, nk, phik, NULL);
    }
    for (int64_t j = 0; j < nk; j++) {
        real *fj = phik + j * m;
        if (kw[j] == 0)
            memset(fj, 0, (size_t)m * sizeof(real));
        else if (kw[j] != 1)
            for (int64_t t = 0; t < m; t++)
                fj[t] *= kw[j];
    }
}

/* Naive linear attention on query rows [lo, hi). */
static int64_t naive_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    score_job *j = ctx;
    const XI(problem) *pb = j->pb;
    const X(plan) *plan = pb->plan;
    score_ws *w = &j->ws[t];
    int64_t m = plan->m, bad;
    int causal = pb->causal;
    XI(origin) o = {pb, NULL, -1};
    for (int64_t r = lo; r < hi; r += j->rows_max) {
        int64_t rows = hi - r < j->rows_max ? hi - r : j->rows_max;
        /* causal: the block's last row sees keys up to its own index */
        int64_t nk = causal ? r + rows : pb->nk;
        XI(view) pq = XI(view_rows)(XI(part_view)(pb, LINATTN_I_Q), r);
        if (w->phiq) {
            XI(phi_query)(plan, pq, rows, w->phiq, NULL);
            pq = (XI(view)){w->phiq, m, 0};
        }
        if (nk)
            XI(gemm)(0, 1, rows, nk, m, 1, pq, j->pk, 0, w->a, nk);
        else
            memset(w->a, 0, (size_t)rows * sizeof(real));
        for (int64_t i = 0; causal && i < rows; i++)
            for (int64_t c = r + i + 1; c < nk; c++)
                w->a[i * nk + c] = 0; /* the mask: keys after row r + i */
        /* key c's features carry exp(-m_c): bring row r + i's to m_{r+i} */
        for (int64_t i = 0; j->mrun && i < rows; i++)
            for (int64_t c = 0; c <= r + i; c++)
                if (j->mrun[c] != j->mrun[r + i])
                    w->a[i * nk + c] *= (real)exp(j->mrun[c] - j->mrun[r + i]);
        /* the decay mask: key c reaches row r + i >= c times exp(b_{r+i} -
         * b_c), entry by entry */
        for (int64_t i = 0; j->bsum && i < rows; i++)
            for (int64_t c = 0; c <= r + i; c++)
                w->a[i * nk + c] *= (real)exp(j->bsum[r + i] - j->bsum[c]);
        row_sums(w->a, rows, nk, w->dd);
        const real *kw = pb->part[LINATTN_I_KW].p;
        int64_t good =
            j->bsum ? XI(good_counts)(plan, w->dd, rows, 1, j->counts + r)
            : !kw ? XI(good_rows)(plan, w->dd, rows, 1, causal ? r + 1 : nk,
                                causal, NULL)
            : causal ? XI(good_rows)(plan, w->dd, rows, 1, j->before[r], 1,
                                     kw + r)
                     : XI(good_rows)(plan, w->dd, rows, 1, j->before[nk], 0,
                                     NULL);
        int nf = causal
                     ? causal_rows(j, w, r, good, nk)
                     /* with no keys the GEMM has inner dimension 0: zeros */
                     : XI(write_rows)(pb, (XI(view)){w->a, nk > 0 ? nk : 1, 0},
                                      j->v, nk, w->dd, good, r,
                                      w->dd + j->rows_max, w->y);
        if (nf && (j->status[t] = overflow_in(j, &o, r, good, &bad)))
            return bad;
        if (good < rows) {
            j->status[t] = LINATTN_EDENOM;
            return r + good;
        }
    }
    return INT64_MAX;
}

int XI(naive_run)(const XI(problem) *pb, int64_t *bad_row)
{
    if (pb->qoff) /* packed: each sequence by this path */
        return XI(packed_run)(pb, XI(naive_run), bad_row);
    const X(plan) *plan = pb->plan;
    int64_t nq = pb->nq, nk = pb->nk;
    int causal = pb->causal;
    if (nq == 0)
        return 0;
    int st = 0;
    int64_t m = plan->m;
    int64_t rows_max = score_rows(plan->block, nk);
    int nt = linattn_i_threads(nq, rows_max);
    int64_t per = (nq + nt - 1) / nt;
    rows_max = rows_max < per ? rows_max : per;
    int identity = XI(map_is_identity)(plan);
    int64_t e = plan->e;
    XI(view) kv = XI(part_view)(pb, LINATTN_I_K);
    XI(view) vv = XI(part_view)(pb, LINATTN_I_V);
    /* phi is materialized for every map but the identity, and for the
     * identity too when a leading dimension is beyond BLAS (a copy). */
    const real *kw = pb->part[LINATTN_I_KW].p;
    int phi_k = nk && (kw || !identity || !linattn_i_ld_fits(kv.ld));
    int phi_q = !XI(query_is_raw)(plan) ||
                !linattn_i_ld_fits(pb->part[LINATTN_I_Q].s.ld);
    int copy_v = nk && (kw || !linattn_i_ld_fits(vv.ld));
    /* All workspace before any output is written. */
    score_ws ws[LINATTN_MAX_THREADS];
    real *phik = phi_k ? linattn_i_alloc(nk * m, sizeof(real)) : NULL;
    real *vcopy = copy_v ? linattn_i_alloc(nk * e, sizeof(real)) : NULL;
    if ((phi_k && !phik) || (copy_v && !vcopy) ||
        alloc_score_ws(ws, nt, rows_max, nk, phi_q ? m : 0,
                       causal || XI(write_needs_y)(pb) ? e : 0)) {
        free(phik);
        free(vcopy);
        return LINATTN_ENOMEM;
    }
    double *mrun = NULL, *rexp = NULL, *before = NULL;
    if (kw) {
        /* the keys' copy with the rows of weight 0 zeroed, their weights'
         * running sums (the count of the count normalizer) */
        real *kz = nk ? linattn_i_alloc(nk * plan->d, sizeof(real)) : NULL;
        rexp = nk && plan->shifted ? linattn_i_alloc(nk, sizeof(double))
                                   : NULL;
        mrun = nk && plan->shifted && causal
                   ? linattn_i_alloc(nk, sizeof(double))
                   : NULL;
        before = linattn_i_alloc(nk + 1, sizeof(double));
        if ((nk && !kz) || !before || (nk && plan->shifted && !rexp) ||
            (nk && plan->shifted && causal && !mrun)) {
            free(kz), free(rexp), free(mrun), free(before), free(phik);
            free(vcopy);
            free_score_ws(ws, nt);
            return LINATTN_ENOMEM;
        }
        if (nk)
            weighted_keys(plan, kv, kw, nk, kz, phik, rexp, mrun);
        free(kz), free(rexp);
        before[0] = 0;
        for (int64_t j = 0; j < nk; j++)
            before[j + 1] = before[j] + kw[j];
    } else if (phik && plan->shifted) {
        /* keys shifted by their maximum (non-causal: it cancels), or by
         * the running maximum up to each key (causal: nothing later) */
        rexp = linattn_i_alloc(nk, sizeof(double));
        mrun = causal ? linattn_i_alloc(nk, sizeof(double)) : NULL;
        if (!rexp || (causal && !mrun)) {
            free(rexp), free(mrun), free(phik), free(vcopy);
            free_score_ws(ws, nt);
            return LINATTN_ENOMEM;
        }
        double run = XI(phi_pre)(plan, kv, nk, phik, rexp);
        if (causal) {
            run = -INFINITY;
            for (int64_t i = 0; i < nk; i++) {
                run = rexp[i] > run || rexp[i] != rexp[i] ? rexp[i] : run;
                mrun[i] = run;
            }
        }
        XI(phi_post)(plan, phik, nk, rexp, mrun, run, NULL);
        free(rexp);
    } else if (phik) {
        XI(phi_rows)(plan, kv, nk, phik, NULL);
    }
    if (vcopy) {
        for (int64_t j = 0; kw && j < nk; j++)
            if (kw[j] == 0) /* never read: zeros stand in */
                memset(vcopy + j * e, 0, (size_t)e * sizeof(real));
            else
                XI(copy_rows)(XI(view_rows)(vv, j), 0, 1, e, vcopy + j * e);
        if (!kw)
            XI(copy_rows)(vv, 0, nk, e, vcopy);
        vv = (XI(view)){vcopy, e, 0};
    }
    /* No keys: the GEMM has inner dimension 0 and never reads V, but BLAS
     * still checks its leading dimension (V may be NULL, ldv anything). */
    if (nk == 0)
        vv = (XI(view)){vv.p, e, 0};
    double *bsum = NULL, *counts = NULL;
    if (causal && XI(decays)(pb)) {
        bsum = linattn_i_alloc(nk, sizeof(double));
        counts = linattn_i_alloc(nk, sizeof(double));
        if (!bsum || !counts) {
            free(bsum), free(counts), free(mrun), free(before), free(phik);
            free(vcopy);
            free_score_ws(ws, nt);
            return LINATTN_ENOMEM;
        }
        XI(decay_sums)(pb, 0, nk, bsum);
        XI(decayed_count)(pb, 0, nk, 0, counts);
    }
    score_job job = {pb, rows_max, phik ? (XI(view)){phik, m, 0} : kv, vv,
                     ws, mrun, before, bsum, counts, {0}};
    int64_t bad = linattn_i_parallel_ranges(nt, nq, naive_range, &job);
    free(bsum), free(counts);
    free_score_ws(ws, nt);
    free(mrun);
    free(before);
    free(phik);
    free(vcopy);
    if (bad < nq) {
        if (bad_row)
            *bad_row = bad;
        return job.status[linattn_i_range_of(nq, nt, bad)];
    }
    return st;
}

/* linattn_d_naive: as linattn_d_attention, the keys a GEMM dimension. */
static const linattn_i_signature naive_sig = {
    .plan = 1, .layout = 2, .nq = 3, .nk = 4,
    .flags = LINATTN_I_SCAN | LINATTN_I_KEYS_IN_BLAS,
    .part = {LINATTN_I_QKVO(5)}};

/* linattn_d_naive_causal: as linattn_d_causal, likewise. */
static const linattn_i_signature naive_causal_sig = {
    .plan = 1, .layout = 2, .nq = 3,
    .flags = LINATTN_I_SCAN | LINATTN_I_KEYS_IN_BLAS | LINATTN_I_DECAY,
    .part = {LINATTN_I_QKVO(4)}};

int X(naive)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
             const real *q, int64_t ldq, const real *k, int64_t ldk,
             const real *v, int64_t ldv, real *out, int64_t ldout,
             int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    int st = XI(problem_check)(&pb, &naive_sig, NULL);
    return st ? st : XI(naive_run)(&pb, bad_row);
}

/* linattn_d_naive_ex, linattn_d_naive_causal_ex: and the extras (13 and
 * 12), of which they take the key weights. */
static const linattn_i_signature naive_ex_sig = {
    .plan = 1, .layout = 2, .nq = 3, .nk = 4, .extras = 13,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_OFFSETS |
                LINATTN_I_X_KEY_OFFSETS,
    .flags = LINATTN_I_SCAN | LINATTN_I_KEYS_IN_BLAS,
    .part = {LINATTN_I_QKVO(5), LINATTN_I_WEIGHTS_IN(13)}};

static const linattn_i_signature naive_causal_ex_sig = {
    .plan = 1, .layout = 2, .nq = 3, .extras = 12,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_OFFSETS | LINATTN_I_X_GATES,
    .flags = LINATTN_I_SCAN | LINATTN_I_KEYS_IN_BLAS | LINATTN_I_DECAY,
    .part = {LINATTN_I_QKVO(4), LINATTN_I_WEIGHTS_IN(12),
             LINATTN_I_GATES_IN(12)}};

int X(naive_ex)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                const real *q, int64_t ldq, const real *k, int64_t ldk,
                const real *v, int64_t ldv, real *out, int64_t ldout,
                const X(extras) *ex, int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_extras)(&pb, ex);
    int st = XI(problem_check)(&pb, &naive_ex_sig, NULL);
    return st ? st : XI(naive_run)(&pb, bad_row);
}

int X(naive_causal_ex)(const X(plan) *plan, int layout, int64_t n,
                       const real *q, int64_t ldq, const real *k, int64_t ldk,
                       const real *v, int64_t ldv, real *out, int64_t ldout,
                       const X(extras) *ex, int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, n, n);
    pb.causal = 1;
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_extras)(&pb, ex);
    int st = XI(problem_check)(&pb, &naive_causal_ex_sig, NULL);
    return st ? st : XI(naive_run)(&pb, bad_row);
}

int X(naive_causal)(const X(plan) *plan, int layout, int64_t n, const real *q,
                    int64_t ldq, const real *k, int64_t ldk, const real *v,
                    int64_t ldv, real *out, int64_t ldout, int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, n, n);
    pb.causal = 1;
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    int st = XI(problem_check)(&pb, &naive_causal_sig, NULL);
    return st ? st : XI(naive_run)(&pb, bad_row);
}

/* a[i, :] = exp(a[i, :] - max_j a[i, j]) for rows x nk scores; returns
 * the first row whose maximum is infinite (rows when none is): its
 * weights cannot be formed (scores beyond the floating-point range, or
 * infinite input), and that row and the later ones are left as scores. */
static int64_t softmax_weights(real *a, int64_t rows, int64_t nk)
{
    for (int64_t i = 0; i < rows; i++) {
        real *row = a + i * nk, mx = row[0];
        for (int64_t j = 1; j < nk; j++)
            mx = row[j] > mx || row[j] != row[j] ? row[j] : mx;
        if (isinf(mx))
            return i;
        /* A NaN score propagates through exp and the sums by itself. */
        if (mx == mx)
            for (int64_t j = 0; j < nk; j++)
                row[j] -= mx;
        XI(exp_inplace)(row, nk);
    }
    return rows;
}

/* Softmax attention on query rows [lo, hi). */
static int64_t softmax_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    score_job *j = ctx;
    const XI(problem) *pb = j->pb;
    score_ws *w = &j->ws[t];
    int64_t nk = pb->nk, d = pb->d, bad;
    XI(origin) o = {pb, NULL, -1};
    for (int64_t r = lo; r < hi; r += j->rows_max) {
        int64_t rows = hi - r < j->rows_max ? hi - r : j->rows_max;
        XI(view) qb = XI(view_rows)(XI(part_view)(pb, LINATTN_I_Q), r);
        if (w->phiq) { /* Q's leading dimension is beyond BLAS */
            XI(copy_rows)(qb, 0, rows, d, w->phiq);
            qb = (XI(view)){w->phiq, d, 0};
        }
        XI(gemm)(0, 1, rows, nk, d, (real)pb->scale, qb, j->pk, 0, w->a, nk);
        int64_t good = softmax_weights(w->a, rows, nk);
        row_sums(w->a, good, nk, w->dd);
        /* the division is the linear paths' (softmax sums are >= 1) */
        if (XI(write_rows)(pb, (XI(view)){w->a, nk, 0}, j->v, nk, w->dd, good,
                           r, w->dd + j->rows_max, w->y) &&
            (j->status[t] = overflow_in(j, &o, r, good, &bad)))
            return bad;
        if (good < rows) {
            j->status[t] = LINATTN_EDENOM;
            return r + good;
        }
    }
    return INT64_MAX;
}

/* linattn_d_softmax: no plan, the widths and the scale before the
 * matrices; nk, d and e are GEMM dimensions. */
static const linattn_i_signature softmax_sig = {
    .layout = 1, .nq = 2, .nk = 3, .d = 4, .e = 5, .scale = 6, .nk_min = 1,
    .flags = LINATTN_I_DIMS_IN_BLAS, .part = {LINATTN_I_QKVO(7)}};

int X(softmax)(int layout, int64_t nq, int64_t nk, int64_t d, int64_t e,
               real scale, const real *q, int64_t ldq, const real *k,
               int64_t ldk, const real *v, int64_t ldv, real *out,
               int64_t ldout)
{
    XI(problem) pb = XI(problem_init)(NULL, layout, nq, nk);
    pb.d = d;
    pb.e = e;
    pb.scale = scale;
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    int st = XI(problem_check)(&pb, &softmax_sig, NULL);
    if (st || nq == 0)
        return st;
    int64_t rows_max = score_rows(LINATTN_DEFAULT_BLOCK, nk);
    if (rows_max > LINATTN_BLAS_INT_MAX) /* only in test builds */
        rows_max = LINATTN_BLAS_INT_MAX;
    int nt = linattn_i_threads(nq, rows_max);
    int64_t per = (nq + nt - 1) / nt;
    rows_max = rows_max < per ? rows_max : per;
    XI(view) kv = XI(part_view)(&pb, LINATTN_I_K);
    XI(view) vv = XI(part_view)(&pb, LINATTN_I_V);
    /* Leading dimensions beyond BLAS: K and V copied once, Q per block. */
    int copy_k = !linattn_i_ld_fits(ldk), copy_v = !linattn_i_ld_fits(ldv);
    real *kcopy = copy_k ? linattn_i_alloc(nk * d, sizeof(real)) : NULL;
    real *vcopy = copy_v ? linattn_i_alloc(nk * e, sizeof(real)) : NULL;
    score_ws ws[LINATTN_MAX_THREADS];
    if ((copy_k && !kcopy) || (copy_v && !vcopy) ||
        alloc_score_ws(ws, nt, rows_max, nk, linattn_i_ld_fits(ldq) ? 0 : d,
                       linattn_i_ld_fits(ldout) ? 0 : e)) {
        free(kcopy);
        free(vcopy);
        return LINATTN_ENOMEM;
    }
    if (kcopy) {
        XI(copy_rows)(kv, 0, nk, d, kcopy);
        kv = (XI(view)){kcopy, d, 0};
    }
    if (vcopy) {
        XI(copy_rows)(vv, 0, nk, e, vcopy);
        vv = (XI(view)){vcopy, e, 0};
    }
    score_job job = {&pb, rows_max, kv, vv, ws, NULL, NULL, NULL, NULL, {0}};
    int64_t bad = linattn_i_parallel_ranges(nt, nq, softmax_range, &job);
    free_score_ws(ws, nt);
    free(kcopy);
    free(vcopy);
    return bad < nq ? job.status[linattn_i_range_of(nq, nt, bad)] : 0;
}
