/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_prec.h -- the precision switch of the benchmark-side sources that
 * are compiled twice (measure.c, scaling_run.c), as the library's are:
 * plain for double, with BENCH_SINGLE for float.  BX() names this side's
 * functions, LX() the library's, BLAS() the CBLAS routine.
 */
#ifndef LINATTN_BENCH_PREC_H
#define LINATTN_BENCH_PREC_H

#ifdef BENCH_SINGLE
typedef float breal;
#define BX(name) bench_s_##name
#define LX(name) linattn_s_##name
#define BLAS(name) cblas_s##name
#else
typedef double breal;
#define BX(name) bench_d_##name
#define LX(name) linattn_d_##name
#define BLAS(name) cblas_d##name
#endif

#endif
