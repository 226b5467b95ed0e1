/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * normalize.c -- numerators and normalizers into outputs, with the plan's
 * normalizer policy.  Shared by the factored and the naive paths so that
 * both treat a bad normalizer identically.
 *
 * The numerators go from GEMM straight into the caller's output and are
 * divided there while the block is still in cache: no staging copy, so the
 * only traffic beyond the bare GEMMs is one in-cache pass per block.
 */
#include <math.h>
#include "internal.h"
#include "kernels.h"
#include "threads.h"
#include "validate.h"

int64_t XI(good_rows)(const X(plan) *plan, real *den, int64_t rows,
                      int check, int64_t count0, int64_t step)
{
    int nonzero = plan->denom == LINATTN_DENOM_NONZERO;
    if (plan->denom == LINATTN_DENOM_COUNT)
        for (int64_t i = 0; i < rows; i++)
            den[i] = (real)(count0 + i * step);
    for (int64_t i = 0; i < rows; i++)
        den[i] += plan->eps;
    for (int64_t i = 0; check && i < rows; i++)
        if (!isfinite(den[i]) || (nonzero ? den[i] == 0 : !(den[i] > 0)))
            return i;
    return rows;
}

void XI(scale_rows)(real *a, int colmajor, int64_t lda, int64_t rows,
                    int64_t cols, const real *s)
{
    if (colmajor) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (rows * cols >= LINATTN_PAR_MIN && linattn_i_may_thread())
#endif
        for (int64_t j = 0; j < cols; j++) {
            real *col = a + j * lda;
            LINATTN_SIMD
            for (int64_t i = 0; i < rows; i++)
                col[i] *= s[i];
        }
    } else {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (rows * cols >= LINATTN_PAR_MIN && linattn_i_may_thread())
#endif
        for (int64_t i = 0; i < rows; i++) {
            real *row = a + i * lda, si = s[i];
            LINATTN_SIMD
            for (int64_t j = 0; j < cols; j++)
                row[j] *= si;
        }
    }
}

void XI(put_rows)(real *a, int colmajor, int64_t lda, const real *b,
                  int b_colmajor, int64_t ldb, int64_t rows, int64_t cols,
                  const real *s)
{
    if (!colmajor && !b_colmajor) {
        /* Row major to row major (the causal path's case): contiguous rows,
         * vectorized. */
        for (int64_t r = 0; r < rows; r++) {
            real *ar = a + r * lda, sr = s ? s[r] : 1;
            const real *br = b + r * ldb;
            LINATTN_SIMD
            for (int64_t c = 0; c < cols; c++)
                ar[c] = br[c] * sr;
        }
        return;
    }
    /* Walk the destination in its own order: its writes are contiguous. */
    int64_t outer = colmajor ? cols : rows, inner = colmajor ? rows : cols;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t r = colmajor ? i : o, c = colmajor ? o : i;
            real v = b_colmajor ? b[r + c * ldb] : b[r * ldb + c];
            a[o * lda + i] = s ? v * s[r] : v;
        }
}

int XI(write_needs_y)(const real *out, int64_t ldout, const real *num,
                      int64_t ldnum)
{
    return (out && !linattn_i_ld_fits(ldout)) ||
           (num && !linattn_i_ld_fits(ldnum));
}

void XI(write_rows)(const X(plan) *plan, XI(view) a, XI(view) b,
                    int64_t inner, const real *den_b, int64_t rows,
                    int layout, int64_t r0, real *out, int64_t ldout,
                    real *num, int64_t ldnum, real *den, real *inv, real *y)
{
    int cm = layout == LINATTN_COL_MAJOR;
    int64_t e = plan->e;
    if (rows == 0)
        return;
    real *at_out = out ? (cm ? out + r0 : out + r0 * ldout) : NULL;
    real *at_num = num ? (cm ? num + r0 : num + r0 * ldnum) : NULL;
    if (den)
        for (int64_t i = 0; i < rows; i++)
            den[r0 + i] = den_b[i];
    /* One reciprocal per row, in both layouts, so they agree to the bit. */
    for (int64_t i = 0; out && i < rows; i++)
        inv[i] = 1 / den_b[i];
    if (XI(write_needs_y)(out, ldout, num, ldnum)) {
        /* A leading dimension BLAS cannot take: GEMM into y, then copy. */
        XI(gemm)(0, 0, rows, e, inner, 1, a, b, 0, y, e);
        if (num)
            XI(put_rows)(at_num, cm, ldnum, y, 0, e, rows, e, NULL);
        if (out)
            XI(put_rows)(at_out, cm, ldout, y, 0, e, rows, e, inv);
        return;
    }
    if (num)
        XI(gemm_c)(cm, 0, 0, rows, e, inner, 1, a, b, 0, at_num, ldnum);
    if (!out)
        return;
    if (num) {
        XI(put_rows)(at_out, cm, ldout, at_num, cm, ldnum, rows, e, inv);
    } else if (cm || !XI(gemm_scaled)(0, rows, e, inner, a, b, at_out, ldout,
                                      inv)) {
        XI(gemm_c)(cm, 0, 0, rows, e, inner, 1, a, b, 0, at_out, ldout);
        XI(scale_rows)(at_out, cm, ldout, rows, e, inv);
    }
}
