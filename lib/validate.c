/* SPDX-License-Identifier: BSD-3-Clause */
/* validate.c -- argument checks (see validate.h). */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "linattn.h"
#include "validate.h"

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

int linattn_i_matrix_fits(int layout, int64_t rows, int64_t cols, int64_t ld)
{
    if (linattn_i_blas_fits(cols))
        return LINATTN_ESIZE;
    if (rows == 0)
        return 0;
    /* The last element sits at (outer - 1) * ld + inner - 1. */
    int64_t outer = layout == LINATTN_ROW_MAJOR ? rows : cols;
    int64_t inner = layout == LINATTN_ROW_MAJOR ? cols : rows;
    if (outer - 1 > (INT64_MAX - inner) / ld)
        return LINATTN_ESIZE;
    return 0;
}

int linattn_i_check_mats(int layout, const linattn_i_mat *mats, int count)
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
    return 0;
}

void *linattn_i_alloc(int64_t count, size_t size)
{
    if (count < 1 || (uint64_t)count > SIZE_MAX / size)
        return NULL;
    return malloc((size_t)count * size);
}
