/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * validate.h -- argument checks shared by every public entry point.  They
 * run before any work, so a rejected call writes nothing and never reaches
 * BLAS (whose reference implementation exits on a bad argument).
 */
#ifndef LINATTN_VALIDATE_H
#define LINATTN_VALIDATE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include "linattn.h"

/* The largest BLAS integer (LP64 interfaces: OpenBLAS, reference, BLIS).
 * A test build lowers it (check-hard) to exercise the paths that keep
 * larger leading dimensions away from BLAS. */
#ifndef LINATTN_BLAS_INT_MAX
#define LINATTN_BLAS_INT_MAX INT_MAX
#endif

/* Nonzero when a leading dimension may be handed to BLAS as it is; larger
 * ones are copied through workspace block by block. */
static inline int linattn_i_ld_fits(int64_t ld)
{
    return ld <= LINATTN_BLAS_INT_MAX;
}

/* Nonzero for LINATTN_ROW_MAJOR and LINATTN_COL_MAJOR. */
int linattn_i_layout_ok(int layout);

/* Checks the pointer and leading dimension of a rows x cols matrix given as
 * arguments number pos (pointer) and pos + 1 (leading dimension).  Returns
 * 0, -pos or -(pos + 1). */
int linattn_i_matrix_arg(int layout, int64_t rows, int64_t cols,
                         const void *p, int64_t ld, int pos);

/* 0 when a rows x cols matrix with leading dimension ld can be addressed
 * in int64 and its row length cols fits the BLAS integer; else
 * LINATTN_ESIZE.  (A leading dimension beyond the BLAS integer is fine:
 * the library then copies blocks through workspace.) */
int linattn_i_matrix_fits(int layout, int64_t rows, int64_t cols, int64_t ld);

/* A matrix argument: rows x cols at p with leading dimension ld, given as
 * argument number pos (its leading dimension is pos + 1).  An optional
 * matrix with p NULL is skipped. */
typedef struct {
    int64_t rows, cols;
    const void *p;
    int64_t ld;
    int pos;
    int optional;
} linattn_i_mat;

/* linattn_i_matrix_arg over the list, in order, then linattn_i_matrix_fits
 * over it: the first failure's status, or 0. */
int linattn_i_check_mats(int layout, const linattn_i_mat *mats, int count);

/* A matrix argument of a batched call: each problem's matrix is rows x
 * cols at p + b * s->batch + h * s->head with leading dimension s->ld;
 * p is argument number pos, s is pos + 1.  An output's problems must not
 * overlap one another nor meet the inputs. */
typedef struct {
    int64_t rows, cols;
    const void *p;
    const linattn_strides *s;
    int pos;
    int output;
} linattn_i_bmat;

/* The checks of a batched call's matrices (elements of elem bytes), in
 * this order: per matrix the pointer (-pos), then its strides (-(pos + 1):
 * NULL, leading dimension, a negative stride, an output's problems
 * overlapping); then an output's address range meeting an input's (-pos
 * of the output); then LINATTN_ESIZE (a row length beyond BLAS, or a
 * matrix not addressable in int64).  Returns the first failure, or 0. */
int linattn_i_check_batched(int layout, int64_t batch, int64_t heads,
                            size_t elem, const linattn_i_bmat *mats,
                            int count);

/* 0 when x fits the BLAS integer, else LINATTN_ESIZE. */
int linattn_i_blas_fits(int64_t x);

/* malloc of count elements of size bytes, NULL when count < 1, on
 * overflow of the byte count, or when memory is short. */
void *linattn_i_alloc(int64_t count, size_t size);

#endif
