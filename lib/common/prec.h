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
#include <stdint.h>
#include <string.h>
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

/* Nonzero for NaN and +-Inf. */
#define LINATTN_NOT_FINITE(y) (!((y) <= REAL_MAX && (y) >= -REAL_MAX))

/* For loops that look at every value they write: y * 0 is +-0 for finite
 * y and NaN for NaN and +-Inf, so or-ing the bits of the products and
 * testing the exponent field once after the loop tells whether a value
 * was not finite.  One multiply and one integer or per value: measured
 * 1.3 times a plain scaling pass over a 1024 x 64 block, where an or of
 * comparisons (LINATTN_NOT_FINITE) cost 15 times. */
#ifdef LINATTN_SINGLE
typedef uint32_t real_bits;
#define REAL_EXP_BITS 0x7f800000u
#define REAL_SIGN_BIT 0x80000000u
#else
typedef uint64_t real_bits;
#define REAL_EXP_BITS 0x7ff0000000000000ull
#define REAL_SIGN_BIT 0x8000000000000000ull
#endif
static inline real_bits linattn_i_zero_bits(real y)
{
    real z = y * 0;
    real_bits u;
    memcpy(&u, &z, sizeof u);
    return u;
}

#endif
