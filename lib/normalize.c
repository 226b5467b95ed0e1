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

int64_t XI(good_rows)(const X(plan) *plan, real *den, int64_t rows,
                      int check)
{
    int nonzero = plan->denom == LINATTN_DENOM_NONZERO;
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

/* a (rows x cols) = b with row i multiplied by s[i]; same layout. */
static void copy_scaled(real *a, const real *b, int colmajor, int64_t lda,
                        int64_t ldb, int64_t rows, int64_t cols, const real *s)
{
    int64_t outer = colmajor ? cols : rows, inner = colmajor ? rows : cols;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            a[o * lda + i] = b[o * ldb + i] * s[colmajor ? i : o];
}

void XI(write_rows)(const X(plan) *plan, XI(view) a, XI(view) b,
                    int64_t inner, const real *den_b, int64_t rows,
                    int layout, int64_t r0, real *out, int64_t ldout,
                    real *num, int64_t ldnum, real *den, real *inv)
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
    if (num)
        XI(gemm_c)(cm, 0, 0, rows, e, inner, 1, a, b, 0, at_num, ldnum);
    if (!out)
        return;
    /* One reciprocal per row, in both layouts, so they agree to the bit. */
    for (int64_t i = 0; i < rows; i++)
        inv[i] = 1 / den_b[i];
    if (num) {
        copy_scaled(at_out, at_num, cm, ldout, ldnum, rows, e, inv);
    } else {
        XI(gemm_c)(cm, 0, 0, rows, e, inner, 1, a, b, 0, at_out, ldout);
        XI(scale_rows)(at_out, cm, ldout, rows, e, inv);
    }
}
