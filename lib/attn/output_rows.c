/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * output_rows.c -- numerators and normalizers into a problem's outputs, with
 * the plan's normalizer policy.  Shared by the factored and the naive paths
 * so that both treat a bad normalizer identically.
 *
 * The numerators go from GEMM straight into the caller's output and are
 * divided there while the block is still in cache: no staging copy, so the
 * only traffic beyond the bare GEMMs is one in-cache pass per block.  That
 * pass also notes whether a value it wrote is not finite, so that an
 * overflow is reported (LINATTN_EOVERFLOW) without a pass of its own.
 */
#include <math.h>
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/simd.h"
#include "common/threads.h"
#include "common/validate.h"

int64_t XI(good_rows)(const X(plan) *plan, real *den, int64_t rows,
                      int check, double count0, int64_t step,
                      const real *w)
{
    if (plan->denom == LINATTN_DENOM_COUNT && w) {
        double run = count0;
        for (int64_t i = 0; i < rows; i++) {
            run += w[i];
            den[i] = (real)run;
        }
    } else if (plan->denom == LINATTN_DENOM_COUNT) {
        for (int64_t i = 0; i < rows; i++)
            den[i] = (real)(count0 + (double)(i * step));
    }
    return XI(good_counts)(plan, den, rows, check, NULL);
}

int64_t XI(good_counts)(const X(plan) *plan, real *den, int64_t rows,
                        int check, const double *counts)
{
    int nonzero = plan->denom == LINATTN_DENOM_NONZERO;
    if (plan->denom == LINATTN_DENOM_NONE) { /* out = the numerators */
        for (int64_t i = 0; i < rows; i++)
            den[i] = 1;
        return rows;
    }
    for (int64_t i = 0; counts && plan->denom == LINATTN_DENOM_COUNT &&
                        i < rows; i++)
        den[i] = (real)counts[i];
    for (int64_t i = 0; i < rows; i++)
        den[i] += plan->eps;
    for (int64_t i = 0; check && i < rows; i++)
        if (!isfinite(den[i]) || (nonzero ? den[i] == 0 : !(den[i] > 0)))
            return i;
    return rows;
}

int XI(scale_rows)(real *a, int colmajor, int64_t lda, int64_t rows,
                   int64_t cols, const real *s)
{
    real_bits bad = 0;
    if (colmajor) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(| : bad) if (rows * cols >= LINATTN_PAR_MIN && linattn_i_may_thread())
#endif
        for (int64_t j = 0; j < cols; j++) {
            real *col = a + j * lda;
            LINATTN_SIMD_REDUCE(|, bad)
            for (int64_t i = 0; i < rows; i++) {
                real y = col[i] * s[i];
                col[i] = y;
                bad |= linattn_i_zero_bits(y);
            }
        }
    } else {
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(| : bad) if (rows * cols >= LINATTN_PAR_MIN && linattn_i_may_thread())
#endif
        for (int64_t i = 0; i < rows; i++) {
            real *row = a + i * lda, si = s[i];
            LINATTN_SIMD_REDUCE(|, bad)
            for (int64_t j = 0; j < cols; j++) {
                real y = row[j] * si;
                row[j] = y;
                bad |= linattn_i_zero_bits(y);
            }
        }
    }
    return (bad & REAL_EXP_BITS) != 0;
}

int XI(put_rows)(real *a, int colmajor, int64_t lda, const real *b,
                 int b_colmajor, int64_t ldb, int64_t rows, int64_t cols,
                 const real *s)
{
    real_bits bad = 0;
    if (!colmajor && !b_colmajor) {
        /* Row major to row major (the causal path's case): contiguous rows,
         * vectorized. */
        for (int64_t r = 0; r < rows; r++) {
            real *ar = a + r * lda, sr = s ? s[r] : 1;
            const real *br = b + r * ldb;
            LINATTN_SIMD_REDUCE(|, bad)
            for (int64_t c = 0; c < cols; c++) {
                real y = br[c] * sr;
                ar[c] = y;
                bad |= linattn_i_zero_bits(y);
            }
        }
        return (bad & REAL_EXP_BITS) != 0;
    }
    /* Walk the destination in its own order: its writes are contiguous. */
    int64_t outer = colmajor ? cols : rows, inner = colmajor ? rows : cols;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t r = colmajor ? i : o, c = colmajor ? o : i;
            real v = b_colmajor ? b[r + c * ldb] : b[r * ldb + c];
            real y = s ? v * s[r] : v;
            a[o * lda + i] = y;
            bad |= linattn_i_zero_bits(y);
        }
    return (bad & REAL_EXP_BITS) != 0;
}

/* 1 / den when that is a normal number.  Then num (1 / den) differs from
 * num / den by rounding only; below |den| = 1 / REAL_MAX the reciprocal
 * overflows (and num (1 / den) would be Inf, or NaN for num = 0), above
 * 1 / REAL_MIN it is subnormal and has lost bits.  Such rows are divided.
 * (den is finite and nonzero here: the policy passed it.) */
static int reciprocal_ok(real den, real *inv)
{
    *inv = 1 / den;
    return isnormal(*inv);
}

int XI(reciprocals)(const real *den, int64_t rows, real *inv)
{
    int ok = 1;
    for (int64_t i = 0; i < rows; i++)
        ok &= reciprocal_ok(den[i], &inv[i]);
    return ok;
}

int XI(divide_rows)(real *a, int colmajor, int64_t lda, const real *b,
                    int b_colmajor, int64_t ldb, int64_t rows, int64_t cols,
                    const real *den, real *inv)
{
    int64_t divide = 0;
    for (int64_t i = 0; i < rows; i++)
        if (!reciprocal_ok(den[i], &inv[i])) {
            inv[i] = 1; /* the pass below copies the row; divided after */
            divide++;
        }
    int bad = a == b && colmajor == b_colmajor && lda == ldb
                  ? XI(scale_rows)(a, colmajor, lda, rows, cols, inv)
                  : XI(put_rows)(a, colmajor, lda, b, b_colmajor, ldb, rows,
                                 cols, inv);
    for (int64_t i = 0; divide && i < rows; i++) {
        real r;
        if (reciprocal_ok(den[i], &r))
            continue;
        for (int64_t c = 0; c < cols; c++) {
            real *y = colmajor ? a + i + c * lda : a + i * lda + c;
            *y /= den[i];
            bad |= LINATTN_NOT_FINITE(*y);
        }
    }
    return bad;
}

int XI(den_ok)(const X(plan) *plan, real den)
{
    if (!isfinite(den))
        return 0;
    if (plan->denom == LINATTN_DENOM_NONE)
        return den == 1;
    return plan->denom == LINATTN_DENOM_NONZERO ? den != 0 : den > 0;
}

int XI(write_needs_y)(const XI(problem) *pb)
{
    const XI(part) *out = &pb->part[LINATTN_I_OUT];
    const XI(part) *num = &pb->part[LINATTN_I_NUM];
    return (out->p && !linattn_i_ld_fits(out->s.ld)) ||
           (num->p && !linattn_i_ld_fits(num->s.ld));
}

int XI(write_rows)(const XI(problem) *pb, XI(view) a, XI(view) b,
                   int64_t inner, const real *den_b, int64_t rows, int64_t r0,
                   real *inv, real *y)
{
    int cm = pb->layout == LINATTN_COL_MAJOR;
    int64_t e = pb->e;
    int64_t ldout = pb->part[LINATTN_I_OUT].s.ld;
    int64_t ldnum = pb->part[LINATTN_I_NUM].s.ld;
    int bad = 0;
    if (rows == 0)
        return 0;
    real *at_out = XI(part_row)(pb, LINATTN_I_OUT, r0);
    real *at_num = XI(part_row)(pb, LINATTN_I_NUM, r0);
    real *den = XI(part_row)(pb, LINATTN_I_DEN, r0);
    if (den)
        for (int64_t i = 0; i < rows; i++) {
            den[i] = den_b[i];
            bad |= LINATTN_NOT_FINITE(den_b[i]);
        }
    if (XI(write_needs_y)(pb)) {
        /* A leading dimension BLAS cannot take: GEMM into y, then copy. */
        XI(gemm)(0, 0, rows, e, inner, 1, a, b, 0, y, e);
        if (at_num)
            bad |= XI(put_rows)(at_num, cm, ldnum, y, 0, e, rows, e, NULL);
        if (at_out)
            bad |= XI(divide_rows)(at_out, cm, ldout, y, 0, e, rows, e, den_b,
                                   inv);
        return bad;
    }
    if (at_num)
        XI(gemm_c)(cm, 0, 0, rows, e, inner, 1, a, b, 0, at_num, ldnum);
    if (!at_out) /* raw numerators only: a pass to look at them */
        return bad || (at_num && !XI(all_finite)((XI(view)){at_num, ldnum, cm},
                                                 rows, e));
    /* out = phi(Q_b) S / den in one pass by the micro-kernel, which notes
     * non-finite values in its stores, when every row's reciprocal is a
     * normal number (else, rarely, the rows are divided as below). */
    int nonfinite = 0;
    if (!at_num && !cm && XI(reciprocals)(den_b, rows, inv) &&
        XI(gemm_scaled)(0, rows, e, inner, a, b, at_out, ldout, inv,
                        &nonfinite))
        return bad | nonfinite;
    if (!at_num)
        XI(gemm_c)(cm, 0, 0, rows, e, inner, 1, a, b, 0, at_out, ldout);
    /* out = num / den: a non-finite numerator makes its quotient so too,
     * so looking at the quotients covers both. */
    return bad | XI(divide_rows)(at_out, cm, ldout, at_num ? at_num : at_out,
                                 cm, at_num ? ldnum : ldout, rows, e, den_b,
                                 inv);
}

/* Nonzero when row i of the rows x cols matrix (layout cm, ld) holds a
 * value that is not finite (a NULL matrix holds none). */
static int row_bad(const real *a, int cm, int64_t ld, int64_t i, int64_t cols)
{
    for (int64_t c = 0; a && c < cols; c++)
        if (LINATTN_NOT_FINITE(cm ? a[i + c * ld] : a[i * ld + c]))
            return 1;
    return 0;
}

int64_t XI(first_overflow)(const XI(problem) *pb, int64_t r0, int64_t rows,
                           XI(origin) *o, int64_t orow)
{
    int cm = pb->layout == LINATTN_COL_MAJOR;
    int64_t e = pb->e;
    const real *out = XI(part_row)(pb, LINATTN_I_OUT, r0);
    const real *num = XI(part_row)(pb, LINATTN_I_NUM, r0);
    const real *den = XI(part_row)(pb, LINATTN_I_DEN, r0);
    int64_t ldout = pb->part[LINATTN_I_OUT].s.ld;
    int64_t ldnum = pb->part[LINATTN_I_NUM].s.ld;
    for (int64_t i = 0; i < rows; i++)
        if ((row_bad(out, cm, ldout, i, e) || row_bad(num, cm, ldnum, i, e) ||
             (den && LINATTN_NOT_FINITE(den[i]))) &&
            XI(inputs_finite)(o, orow + i))
            return i;
    return rows;
}

int64_t XI(first_nonfinite_row)(XI(view) x, int64_t rows, int64_t cols)
{
    int64_t first = rows;
    for (int64_t c = 0; x.colmajor && c < cols; c++)
        for (int64_t i = 0; i < first; i++)
            if (LINATTN_NOT_FINITE(x.p[i + c * x.ld]))
                first = i;
    for (int64_t i = 0; !x.colmajor && i < rows; i++)
        if (!XI(all_finite)(XI(view_rows)(x, i), 1, cols))
            return i;
    return first;
}

int64_t XI(first_bad_kept_key)(XI(view) k, XI(view) v, int64_t d,
                               int64_t e, const real *w, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        if (w[j] != 0 && !(XI(all_finite)(XI(view_rows)(k, j), 1, d) &&
                           XI(all_finite)(XI(view_rows)(v, j), 1, e)))
            return j;
    return n;
}

int XI(inputs_finite)(XI(origin) *o, int64_t r)
{
    const XI(problem) *pb = o->pb;
    XI(view) q = XI(part_view)(pb, LINATTN_I_Q);
    if (q.p && !XI(all_finite)(XI(view_rows)(q, r), 1, pb->d))
        return 0;
    if (o->st)
        return !o->st->poisoned;
    const real *w = pb->part[LINATTN_I_KW].p;
    if (o->first_bad < 0 && w) {
        /* key weights: the keys of weight 0 are not inputs (no effect) */
        o->first_bad = XI(first_bad_kept_key)(XI(part_view)(pb, LINATTN_I_K),
                                              XI(part_view)(pb, LINATTN_I_V),
                                              pb->d, pb->e, w, pb->nk);
    } else if (o->first_bad < 0) {
        int64_t kb = XI(first_nonfinite_row)(XI(part_view)(pb, LINATTN_I_K),
                                             pb->nk, pb->d);
        int64_t vb = XI(first_nonfinite_row)(XI(part_view)(pb, LINATTN_I_V),
                                             pb->nk, pb->e);
        o->first_bad = kb < vb ? kb : vb;
    }
    /* causal: row r sees keys j <= r; else all of them */
    return pb->causal ? r < o->first_bad : o->first_bad == pb->nk;
}
