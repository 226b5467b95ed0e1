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
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
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
} causal_ws;

static void free_causal_ws(causal_ws *w)
{
    free(w->phiq), free(w->phik), free(w->a), free(w->vcopy), free(w->y);
    free(w->dd), free(w->s), free(w->part);
    free(w->acc), free(w->zsum), free(w->partial);
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
    if (!w->phiq || !w->phik || !w->a || (copy_v && !w->vcopy) || !w->y ||
        !w->dd || !w->s || (LINATTN_ACC_WIDER && !w->part) || !w->acc ||
        !w->zsum || !w->partial) {
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
                for (int64_t c = 0; c < e; c++)
                    y[i * e + c] += aij * XI(view_at)(v, j, c);
            }
    }
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

int X(causal)(const X(plan) *plan, int layout, int64_t n, const real *q,
              int64_t ldq, const real *k, int64_t ldk, const real *v,
              int64_t ldv, real *out, int64_t ldout, int64_t *bad_row)
{
    int st = XI(causal_args)(plan, layout, n, q, ldq, k, ldk, v, ldv, out,
                             ldout, 0);
    if (st || n == 0)
        return st;
    causal_ws w;
    int64_t c = plan->chunk < n ? plan->chunk : n;
    if (alloc_causal_ws(&w, plan, c, !linattn_i_ld_fits(ldv)))
        return LINATTN_ENOMEM;
#if !LINATTN_ACC_WIDER
    /* In double the state is accumulated in place: S is acc itself. */
    free(w.s);
    w.s = w.acc;
#endif
    int cm = layout == LINATTN_COL_MAJOR;
    int64_t bad = causal_serial(plan, &w, c, layout, n, (XI(view)){q, ldq, cm},
                                (XI(view)){k, ldk, cm}, (XI(view)){v, ldv, cm},
                                out, ldout);
#if !LINATTN_ACC_WIDER
    w.s = NULL;
#endif
    free_causal_ws(&w);
    if (bad >= 0) {
        if (bad_row)
            *bad_row = bad;
        return LINATTN_EDENOM;
    }
    return 0;
}
