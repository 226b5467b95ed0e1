/*
 * naive.c -- the quadratic baselines: the same kernel maths rescanned for
 * every query (linattn_d_naive) and exact softmax attention
 * (linattn_d_softmax).  Both score a block of query rows against all keys
 * with one GEMM, so memory is O(rows * nk) and never nq x nk.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "validate.h"

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

int X(naive)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
             const real *q, int64_t ldq, const real *k, int64_t ldk,
             const real *v, int64_t ldv, real *out, int64_t ldout,
             int64_t *bad_row)
{
    int st = XI(attention_args)(plan, layout, nq, nk, q, ldq, k, ldk, v, ldv,
                                out, ldout);
    if (!st)
        st = linattn_i_blas_fits(nk);
    if (st || nq == 0)
        return st;
    int64_t m = plan->m;
    int64_t rows_max = score_rows(plan->block, nk);
    if (rows_max > nq)
        rows_max = nq;
    int identity = XI(map_is_identity)(plan);
    int cm = layout == LINATTN_COL_MAJOR;
    XI(view) qv = {q, ldq, cm}, kv = {k, ldk, cm}, vv = {v, ldv, cm};
    /* nk = 0 still needs a (zero) score block so that every row reads
     * normalizer 0 and the policy decides. */
    int64_t nka = nk > 0 ? nk : 1;
    real *phik = identity || nk == 0 ? NULL : linattn_i_alloc(nk * m, sizeof(real));
    real *phiq = identity ? NULL : linattn_i_alloc(rows_max * m, sizeof(real));
    real *a = linattn_i_alloc(rows_max * nka, sizeof(real));
    real *dd = linattn_i_alloc(2 * rows_max, sizeof(real));
    if ((!identity && nk && !phik) || (!identity && !phiq) || !a || !dd) {
        free(phik);
        free(phiq);
        free(a);
        free(dd);
        return LINATTN_ENOMEM;
    }
    XI(view) pk = kv;
    if (!identity && nk) {
        XI(phi_rows)(plan, kv, nk, phik, NULL);
        pk = (XI(view)){phik, m, 0};
    }
    for (int64_t r = 0; r < nq; r += rows_max) {
        int64_t rows = nq - r < rows_max ? nq - r : rows_max;
        XI(view) pq = XI(view_rows)(qv, r);
        if (!identity) {
            XI(phi_rows)(plan, pq, rows, phiq, NULL);
            pq = (XI(view)){phiq, m, 0};
        }
        if (nk)
            XI(gemm)(0, 1, rows, nk, m, 1, pq, pk, 0, a, nk);
        else
            memset(a, 0, (size_t)rows * sizeof(real));
        row_sums(a, rows, nk, dd);
        int64_t good = XI(good_rows)(plan, dd, rows, 1);
        /* With no keys the GEMM has inner dimension 0 and writes zeros. */
        XI(write_rows)(plan, (XI(view)){a, nka, 0}, vv, nk, dd, good, layout,
                       r, out, ldout, NULL, 0, NULL, dd + rows_max);
        if (good < rows) {
            if (bad_row)
                *bad_row = r + good;
            st = LINATTN_EDENOM;
            break;
        }
    }
    free(phik);
    free(phiq);
    free(a);
    free(dd);
    return st;
}

/* a[i, :] = exp(a[i, :] - max_j a[i, j]) for rows x nk scores. */
static void softmax_weights(real *a, int64_t rows, int64_t nk)
{
    for (int64_t i = 0; i < rows; i++) {
        real *row = a + i * nk, mx = row[0];
        for (int64_t j = 1; j < nk; j++)
            mx = row[j] > mx ? row[j] : mx;
        /* A NaN score propagates through exp and the sums by itself; an
         * infinite maximum is not subtracted (inf - inf would invent NaN
         * where the input had none). */
        if (isfinite(mx))
            for (int64_t j = 0; j < nk; j++)
                row[j] -= mx;
        XI(exp_inplace)(row, nk);
    }
}

int X(softmax)(int layout, int64_t nq, int64_t nk, int64_t d, int64_t e,
               real scale, const real *q, int64_t ldq, const real *k,
               int64_t ldk, const real *v, int64_t ldv, real *out,
               int64_t ldout)
{
    if (!linattn_i_layout_ok(layout))
        return -1;
    if (nq < 0)
        return -2;
    if (nk < 1)
        return -3;
    if (d < 1)
        return -4;
    if (e < 1)
        return -5;
    if (!isfinite(scale))
        return -6;
    int st = linattn_i_matrix_arg(layout, nq, d, q, ldq, 7);
    if (!st)
        st = linattn_i_matrix_arg(layout, nk, d, k, ldk, 9);
    if (!st)
        st = linattn_i_matrix_arg(layout, nk, e, v, ldv, 11);
    if (!st)
        st = linattn_i_matrix_arg(layout, nq, e, out, ldout, 13);
    if (!st)
        st = linattn_i_matrix_fits(layout, nq, d, ldq);
    if (!st)
        st = linattn_i_matrix_fits(layout, nk, d, ldk);
    if (!st)
        st = linattn_i_matrix_fits(layout, nk, e, ldv);
    if (!st)
        st = linattn_i_matrix_fits(layout, nq, e, ldout);
    if (!st && (linattn_i_blas_fits(nk) || linattn_i_blas_fits(d) ||
                linattn_i_blas_fits(e + 1)))
        st = LINATTN_ESIZE;
    if (st || nq == 0)
        return st;
    int64_t rows_max = score_rows(LINATTN_DEFAULT_BLOCK, nk);
    if (rows_max > nq)
        rows_max = nq;
    real *a = linattn_i_alloc(rows_max * nk, sizeof(real));
    real *inv = linattn_i_alloc(rows_max, sizeof(real));
    if (!a || !inv) {
        free(a);
        free(inv);
        return LINATTN_ENOMEM;
    }
    int cm = layout == LINATTN_COL_MAJOR;
    XI(view) qv = {q, ldq, cm}, kv = {k, ldk, cm}, vv = {v, ldv, cm};
    for (int64_t r = 0; r < nq; r += rows_max) {
        int64_t rows = nq - r < rows_max ? nq - r : rows_max;
        real *o = cm ? out + r : out + r * ldout;
        XI(gemm)(0, 1, rows, nk, d, scale, XI(view_rows)(qv, r), kv, 0, a, nk);
        softmax_weights(a, rows, nk);
        row_sums(a, rows, nk, inv);
        for (int64_t i = 0; i < rows; i++)
            inv[i] = 1 / inv[i];
        XI(gemm_c)(cm, 0, 0, rows, e, nk, 1, (XI(view)){a, nk, 0}, vv, 0, o,
                   ldout);
        XI(scale_rows)(o, cm, ldout, rows, e, inv);
    }
    free(a);
    free(inv);
    return 0;
}
