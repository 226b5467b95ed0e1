/*
 * featmap.c -- the feature maps phi applied to row blocks.
 *
 * Every map writes phi of a block into a row-major buffer that GEMM then
 * reads from cache; the identity map skips the copy (callers ask
 * XI(map_is_identity) and hand the caller's matrix to BLAS).  The
 * elementwise loops are written branch-free so that they vectorize.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "kernels.h"
#include "validate.h"
#include "vexp.h"

int XI(map_is_identity)(const X(plan) *plan)
{
    return plan->map == LINATTN_MAP_IDENTITY;
}

/* Copies rows [0, rows) of x (rows x cols) into out, row major, ld cols. */
static void gather_rows(XI(view) x, int64_t rows, int64_t cols, real *out)
{
    if (!x.colmajor) {
        for (int64_t i = 0; i < rows; i++)
            memcpy(out + i * cols, x.p + i * x.ld, (size_t)cols * sizeof(real));
        return;
    }
    /* Column major: read down columns (contiguous), write strided; the
     * block is small enough that the writes stay in cache. */
    for (int64_t j = 0; j < cols; j++) {
        const real *col = x.p + j * x.ld;
        for (int64_t i = 0; i < rows; i++)
            out[i * cols + j] = col[i];
    }
}

LINATTN_CLONES
static void elu1_inplace(real *x, int64_t count)
{
    LINATTN_SIMD
    for (int64_t i = 0; i < count; i++) {
        real v = x[i];
        /* exp only of non-positive values keeps the unused lane finite;
         * the test is written so that NaN reaches exp and propagates. */
        real ev = XI(exp)(v > 0 ? 0 : v);
        x[i] = v > 0 ? v + 1 : ev;
    }
}

static void relu_inplace(real *x, int64_t count)
{
    LINATTN_SIMD
    for (int64_t i = 0; i < count; i++)
        x[i] = x[i] < 0 ? 0 : x[i]; /* NaN stays NaN */
}

LINATTN_CLONES
void XI(exp_inplace)(real *x, int64_t count)
{
    LINATTN_SIMD
    for (int64_t i = 0; i < count; i++)
        x[i] = XI(exp)(x[i]);
}

static void add_colsums(const real *a, int64_t rows, int64_t cols, acc_t *sum)
{
    for (int64_t i = 0; i < rows; i++) {
        const real *row = a + i * cols;
        LINATTN_SIMD
        for (int64_t j = 0; j < cols; j++)
            sum[j] += row[j];
    }
}

void XI(colsum_view)(XI(view) x, int64_t rows, int64_t cols, acc_t *sum)
{
    if (!x.colmajor) {
        for (int64_t i = 0; i < rows; i++) {
            const real *row = x.p + i * x.ld;
            LINATTN_SIMD
            for (int64_t j = 0; j < cols; j++)
                sum[j] += row[j];
        }
        return;
    }
    for (int64_t j = 0; j < cols; j++) {
        const real *col = x.p + j * x.ld;
        acc_t s = 0;
        for (int64_t i = 0; i < rows; i++)
            s += col[i];
        sum[j] += s;
    }
}

void XI(phi_rows)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                  acc_t *colsum)
{
    int64_t d = plan->d, m = plan->m;
    gather_rows(x, rows, d, out);
    switch (plan->map) {
    case LINATTN_MAP_ELU1:
        elu1_inplace(out, rows * m);
        break;
    case LINATTN_MAP_RELU:
        relu_inplace(out, rows * m);
        break;
    default: /* identity: the copy is phi */
        break;
    }
    if (colsum)
        add_colsums(out, rows, m, colsum);
}

int X(features)(const X(plan) *plan, int layout, int64_t n, const real *x,
                int64_t ldx, real *phi, int64_t ldphi)
{
    if (!plan)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    if (n < 0)
        return -3;
    int st = linattn_i_matrix_arg(layout, n, plan->d, x, ldx, 4);
    if (!st)
        st = linattn_i_matrix_arg(layout, n, plan->m, phi, ldphi, 6);
    if (!st)
        st = linattn_i_matrix_fits(layout, n, plan->d, ldx);
    if (!st)
        st = linattn_i_matrix_fits(layout, n, plan->m, ldphi);
    if (st || n == 0)
        return st;
    int64_t block = XI(block_rows)(plan), m = plan->m;
    real *buf = linattn_i_alloc(block * m, sizeof(real));
    if (!buf)
        return LINATTN_ENOMEM;
    XI(view) xv = {x, ldx, layout == LINATTN_COL_MAJOR};
    for (int64_t r = 0; r < n; r += block) {
        int64_t rows = n - r < block ? n - r : block;
        XI(phi_rows)(plan, XI(view_rows)(xv, r), rows, buf, NULL);
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < m; j++) {
                real *dst = layout == LINATTN_COL_MAJOR
                                ? phi + (r + i) + j * ldphi
                                : phi + (r + i) * ldphi + j;
                *dst = buf[i * m + j];
            }
    }
    free(buf);
    return 0;
}
