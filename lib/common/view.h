/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * common/view.h -- a matrix as the caller passed it, seen row major: a
 * column-major argument is the row-major view of its transpose, so one
 * GEMM wrapper (common/blas.h) serves both layouts without copies.
 */
#ifndef LINATTN_COMMON_VIEW_H
#define LINATTN_COMMON_VIEW_H

#include <stdint.h>
#include "common/prec.h"

/* A rows x cols matrix as the caller passed it. */
typedef struct {
    const real *p;
    int64_t ld;
    int colmajor;
} XI(view);

/* The view of rows [r, r + count) of a. */
static inline XI(view) XI(view_rows)(XI(view) a, int64_t r)
{
    XI(view) b = a;
    b.p = a.colmajor ? a.p + r : a.p + r * a.ld;
    return b;
}

#endif
