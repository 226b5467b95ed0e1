/* SPDX-License-Identifier: BSD-3-Clause */
/* validate.c -- argument checks (see validate.h). */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "linattn.h"
#include "common/validate.h"

int linattn_i_layout_ok(int layout)
{
    return layout == LINATTN_ROW_MAJOR || layout == LINATTN_COL_MAJOR;
}

int linattn_i_matrix_arg(int layout, int64_t rows, int64_t cols,
                         const void *p, int64_t ld, int pos)
{
    if (p == NULL && rows > 0)
        return -pos;
    int64_t need = layout == LINATTN_ROW_MAJOR ? cols : rows;
    if (ld < 1 || ld < need)
        return -(pos + 1);
    return 0;
}

int linattn_i_blas_fits(int64_t x)
{
    return x <= LINATTN_BLAS_INT_MAX ? 0 : LINATTN_ESIZE;
}

int64_t linattn_i_extent(int layout, int64_t rows, int64_t cols, int64_t ld)
{
    if (rows == 0 || cols == 0)
        return 0;
    /* The last element sits at (outer - 1) * ld + inner - 1. */
    int64_t outer = layout == LINATTN_ROW_MAJOR ? rows : cols;
    int64_t inner = layout == LINATTN_ROW_MAJOR ? cols : rows;
    const int64_t most = INT64_MAX / LINATTN_ELEM_MAX;
    if (inner > most)
        return -1;
    /* (outer - 1) ld > most - inner, by the product when it cannot
     * overflow (both factors in [0, 2^31)): the bound (most - inner) / ld,
     * a division of tens of cycles, took a third of the checks of a call
     * of four one-row matrices (a decoding step) */
    const int64_t small = (int64_t)1 << 31;
    if (outer - 1 < small && ld >= 1 && ld < small) {
        if ((outer - 1) * ld > most - inner)
            return -1;
    } else if (outer - 1 > (most - inner) / ld) {
        return -1;
    }
    return (outer - 1) * ld + inner;
}

int linattn_i_matrix_fits(int layout, int64_t rows, int64_t cols, int64_t ld)
{
    if (linattn_i_blas_fits(cols))
        return LINATTN_ESIZE;
    return linattn_i_extent(layout, rows, cols, ld) < 0 ? LINATTN_ESIZE : 0;
}

void linattn_i_mat_range(int layout, size_t elem, const linattn_i_mat *a,
                         uintptr_t *lo, uintptr_t *hi)
{
    *lo = *hi = (uintptr_t)a->p;
    if (!a->p || a->rows == 0 || a->cols == 0)
        return;
    int64_t outer = layout == LINATTN_ROW_MAJOR ? a->rows : a->cols;
    int64_t inner = layout == LINATTN_ROW_MAJOR ? a->cols : a->rows;
    *hi += (uintptr_t)((outer - 1) * a->ld + inner) * elem;
}

int linattn_i_check_mats_io(int layout, size_t elem, const linattn_i_mat *mats,
                            int count, int first_output)
{
    for (int i = 0; i < count; i++) {
        const linattn_i_mat *a = &mats[i];
        if (a->optional && !a->p)
            continue;
        int st = linattn_i_matrix_arg(layout, a->rows, a->cols, a->p, a->ld,
                                      a->pos);
        if (st)
            return st;
    }
    for (int i = 0; i < count; i++) {
        const linattn_i_mat *a = &mats[i];
        if (a->optional && !a->p)
            continue;
        int st = linattn_i_matrix_fits(layout, a->rows, a->cols, a->ld);
        if (st)
            return st;
    }
    for (int o = first_output; o < count; o++) {
        uintptr_t olo, ohi;
        linattn_i_mat_range(layout, elem, &mats[o], &olo, &ohi);
        for (int i = 0; olo < ohi && i < o; i++) {
            uintptr_t lo, hi;
            linattn_i_mat_range(layout, elem, &mats[i], &lo, &hi);
            if (lo < hi && lo < ohi && olo < hi)
                return -mats[o].pos;
        }
    }
    return 0;
}

int linattn_i_check_mats(int layout, const linattn_i_mat *mats, int count)
{
    return linattn_i_check_mats_io(layout, 1, mats, count, count);
}

void *linattn_i_alloc(int64_t count, size_t size)
{
    if (count < 1 || (uint64_t)count > SIZE_MAX / size)
        return NULL;
    return malloc((size_t)count * size);
}
