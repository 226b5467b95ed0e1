/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * simd.h -- compiler hints for the elementwise loops.
 *
 * LINATTN_SIMD asks for vectorization (OpenMP simd, enabled by configure
 * with -fopenmp-simd, which needs no OpenMP runtime).  The loops that
 * matter are built once per code path (generic, AVX2, AVX-512) in
 * lib/kernels/kern.c and chosen at run time (kernels/dispatch.c): one
 * binary that is fast on current clusters and still runs on old nodes.
 */
#ifndef LINATTN_COMMON_SIMD_H
#define LINATTN_COMMON_SIMD_H

#ifdef LINATTN_HAVE_OPENMP_SIMD
#define LINATTN_SIMD _Pragma("omp simd")
/* A vectorized sum into a variable named acc (the order of the additions
 * changes, within the usual rounding). */
#define LINATTN_SIMD_SUM _Pragma("omp simd reduction(+ : acc)")
/* A vectorized reduction of the integer variable v by op (|, max: exact
 * in any order). */
#define LINATTN_PRAGMA_(x) _Pragma(#x)
#define LINATTN_SIMD_REDUCE(op, v) LINATTN_PRAGMA_(omp simd reduction(op : v))
#else
#define LINATTN_SIMD
#define LINATTN_SIMD_SUM
#define LINATTN_SIMD_REDUCE(op, v)
#endif

#endif
