/*
 * normalize.c -- numerators / normalizers -> outputs, with the plan's
 * normalizer policy.  Shared by the factored and the naive paths so that
 * both treat a bad normalizer identically.
 */
#include <math.h>
#include "internal.h"

static int den_ok(const X(plan) *plan, real den)
{
    if (!isfinite(den))
        return 0;
    return plan->denom == LINATTN_DENOM_NONZERO ? den != 0 : den > 0;
}

static real *at(real *a, int layout, int64_t ld, int64_t i, int64_t j)
{
    return layout == LINATTN_COL_MAJOR ? a + i + j * ld : a + i * ld + j;
}

int64_t XI(finish_rows)(const X(plan) *plan, real *y, int64_t rows,
                        int layout, int64_t r0, real *out, int64_t ldout,
                        real *num, int64_t ldnum, real *den)
{
    int64_t e = plan->e, ldy = e + 1, good = rows, bad = -1;
    if (out) {
        for (int64_t i = 0; i < rows; i++)
            if (!den_ok(plan, y[i * ldy + e] + plan->eps)) {
                good = i;
                bad = i;
                break;
            }
    }
    if (num) {
        for (int64_t i = 0; i < good; i++)
            for (int64_t j = 0; j < e; j++)
                *at(num, layout, ldnum, r0 + i, j) = y[i * ldy + j];
    }
    if (den) {
        for (int64_t i = 0; i < good; i++)
            den[r0 + i] = y[i * ldy + e] + plan->eps;
    }
    if (out) {
        /* Multiply by one reciprocal per row, in both layouts, so that the
         * layouts agree to the last bit. */
        for (int64_t i = 0; i < good; i++)
            y[i * ldy + e] = 1 / (y[i * ldy + e] + plan->eps);
        if (layout == LINATTN_ROW_MAJOR) {
            for (int64_t i = 0; i < good; i++) {
                real *o = out + (r0 + i) * ldout;
                const real *yi = y + i * ldy;
                for (int64_t j = 0; j < e; j++)
                    o[j] = yi[j] * yi[e];
            }
        } else {
            for (int64_t j = 0; j < e; j++) {
                real *o = out + r0 + j * ldout;
                for (int64_t i = 0; i < good; i++)
                    o[i] = y[i * ldy + j] * y[i * ldy + e];
            }
        }
    }
    return bad;
}
