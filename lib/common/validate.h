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

/* Bytes per element counted when a matrix must be addressable: the larger
 * precision's, for both, so that a float matrix is held to the same
 * element count as a double one. */
#define LINATTN_ELEM_MAX 8

/* 0 when a rows x cols matrix with leading dimension ld is addressable
 * (its extent, (outer - 1) ld + inner elements of LINATTN_ELEM_MAX bytes,
 * fits int64, so no pointer arithmetic on it can wrap) and its row length
 * cols fits the BLAS integer; else LINATTN_ESIZE.  (A leading dimension
 * beyond the BLAS integer is fine: the library then copies blocks through
 * workspace.) */
int linattn_i_matrix_fits(int layout, int64_t rows, int64_t cols, int64_t ld);

/* The elements a rows x cols matrix with leading dimension ld spans
 * ((outer - 1) ld + inner; 0 without rows or columns), or -1 when it is
 * not addressable (linattn_i_matrix_fits). */
int64_t linattn_i_extent(int layout, int64_t rows, int64_t cols, int64_t ld);

/* The leading dimension under which a vector of n entries (stride 1) is
 * checked as an n x 1 matrix in layout. */
static inline int64_t linattn_i_vector_ld(int layout, int64_t n)
{
    return layout == LINATTN_COL_MAJOR && n > 1 ? n : 1;
}

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

/* As linattn_i_check_mats where mats[first_output .. count) are outputs
 * (elements of elem bytes); then, once every matrix is known to be
 * addressable, an output whose address range meets an input's or an
 * earlier output's is refused as -pos (its pointer's position).  Ranges,
 * not elements: an output interleaved with an input inside one buffer is
 * refused too, as in the batched calls. */
int linattn_i_check_mats_io(int layout, size_t elem, const linattn_i_mat *mats,
                            int count, int first_output);

/* The byte range [lo, hi) of a matrix argument already known to be
 * addressable (so its extent is a product without overflow, and no
 * division is needed on this per-call path); empty (lo = hi) when it has
 * no elements or is NULL. */
void linattn_i_mat_range(int layout, size_t elem, const linattn_i_mat *a,
                         uintptr_t *lo, uintptr_t *hi);

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
 * overlapping); then an output's address range meeting an input's or an
 * earlier output's (-pos of the output); then LINATTN_ESIZE (a
 * row length beyond BLAS, or a matrix not addressable in int64).  Returns
 * the first failure, or 0. */
int linattn_i_check_batched(int layout, int64_t batch, int64_t heads,
                            size_t elem, const linattn_i_bmat *mats,
                            int count);

/* The byte range [lo, hi) from a batched matrix's first element to past
 * its last; empty (lo = hi) when it has no elements or its span is not
 * addressable (refused by linattn_i_check_batched as LINATTN_ESIZE). */
void linattn_i_bmat_range(int layout, int64_t batch, int64_t heads,
                          size_t elem, const linattn_i_bmat *a, uintptr_t *lo,
                          uintptr_t *hi);

/* 0 when x fits the BLAS integer, else LINATTN_ESIZE. */
int linattn_i_blas_fits(int64_t x);

/* malloc of count elements of size bytes, NULL when count < 1, on
 * overflow of the byte count, or when memory is short. */
void *linattn_i_alloc(int64_t count, size_t size);

#endif
