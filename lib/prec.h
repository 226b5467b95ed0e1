/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * prec.h -- the precision switch.  Every precision-generic source file is
 * compiled twice: once plain (double) and once with LINATTN_SINGLE (float).
 * X() mangles public names, XI() internal ones, CBLAS() picks the BLAS
 * routine, and acc_t is the type states accumulate in.
 */
#ifndef LINATTN_PREC_H
#define LINATTN_PREC_H

#include <float.h>
#include "linattn.h"

#ifdef LINATTN_SINGLE
typedef float real;
#define X(name) linattn_s_##name
#define XI(name) linattn_si_##name
#define CBLAS(name) cblas_s##name
#define REAL_EPSILON FLT_EPSILON
#define REAL_MAX FLT_MAX
/* float states accumulate in double: 2^20 float updates would otherwise
 * lose about three digits, and the state is tiny (m x (e+1)). */
#define LINATTN_ACC_WIDER 1
#else
typedef double real;
#define X(name) linattn_d_##name
#define XI(name) linattn_di_##name
#define CBLAS(name) cblas_d##name
#define REAL_EPSILON DBL_EPSILON
#define REAL_MAX DBL_MAX
#define LINATTN_ACC_WIDER 0
#endif

typedef double acc_t;

/* Nonzero for NaN and +-Inf: two comparisons, so that loops that test every
 * value they write still vectorize. */
#define LINATTN_NOT_FINITE(y) (!((y) <= REAL_MAX && (y) >= -REAL_MAX))

#endif
