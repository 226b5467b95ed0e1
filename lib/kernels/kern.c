/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kern.c -- the kernels of kernels/kern.h, compiled once per precision and
 * per code path (LINATTN_KERN_LEVEL 0 generic, 1 AVX2 + FMA, 2 AVX-512,
 * with the matching -march).  The plain loops are the same source for
 * every path; the compiler vectorizes them for its target.  Explicit
 * intrinsics where it cannot: the table-driven exponentials
 * (kernels/exp_avx2.h, kernels/exp_avx512.h) and the AVX-512 GEMM
 * micro-kernel (kernels/mm_avx512.h).
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "kernels/kern.h"
#include "common/simd.h"
#include "kernels/vexp.h"

#ifndef LINATTN_KERN_LEVEL
#define LINATTN_KERN_LEVEL 0
#endif

#if LINATTN_KERN_LEVEL == 2 && !defined(__AVX512F__)
#error "the AVX-512 build of kern.c needs -march=x86-64-v4"
#endif
#if LINATTN_KERN_LEVEL == 1 && !(defined(__AVX2__) && defined(__FMA__))
#error "the AVX2 build of kern.c needs -march=x86-64-v3"
#endif

#if LINATTN_KERN_LEVEL >= 1
#include <immintrin.h>
#endif

/* ---- exponentials ---- */

#if LINATTN_KERN_LEVEL == 2
#include "kernels/exp_avx512.h"
#elif LINATTN_KERN_LEVEL == 1 && !defined(LINATTN_SINGLE)
#include "kernels/exp_avx2.h"
#else
/* The portable exponential of vexp.h, vectorized by the compiler. */
static void k_exp(real *y, const real *x, int64_t n)
{
    LINATTN_SIMD
    for (int64_t i = 0; i < n; i++)
        y[i] = XI(exp)(x[i]);
}

static void k_elu1(real *y, const real *x, int64_t n)
{
    LINATTN_SIMD
    for (int64_t i = 0; i < n; i++) {
        real v = x[i];
        /* exp only of non-positive values keeps the unused lane finite;
         * the test is written so that NaN reaches exp and propagates. */
        real ev = XI(exp)(v > 0 ? 0 : v);
        y[i] = v > 0 ? v + 1 : ev;
    }
}

static void k_exp_shift(real *y, const real *x, int64_t n, real c)
{
    LINATTN_SIMD
    for (int64_t i = 0; i < n; i++)
        y[i] = XI(exp)(x[i] - c);
}
#endif

/* ---- statistics of feature rows ---- */

static void k_row_stats(const real *f, int64_t ldf, int64_t rows, int64_t m,
                        const real *z, real *den, acc_t *part)
{
    if (den)
        for (int64_t i = 0; i < rows; i++) {
            const real *row = f + i * ldf;
            real acc = 0;
            LINATTN_SIMD_SUM
            for (int64_t j = 0; j < m; j++)
                acc += row[j] * z[j];
            den[i] = acc;
        }
    if (part) {
        for (int64_t j = 0; j < m; j++)
            part[j] = 0;
        for (int64_t i = 0; i < rows; i++) {
            const real *row = f + i * ldf;
            LINATTN_SIMD
            for (int64_t j = 0; j < m; j++)
                part[j] += row[j];
        }
    }
}

/* ---- small loops of decoding and of the causal chunks ---- */

/* Row i of a step's update: acc = f acc + p_i [v 1], and its copy in the
 * working precision when that is not acc itself. */
static inline void step_row(acc_t *row, real *srow, int64_t e, acc_t pi,
                            const real *v, acc_t f)
{
    if (f == 1) {
        LINATTN_SIMD
        for (int64_t j = 0; j < e; j++)
            row[j] += pi * v[j];
        row[e] += pi;
    } else {
        LINATTN_SIMD
        for (int64_t j = 0; j < e; j++)
            row[j] = f * row[j] + pi * v[j];
        row[e] = f * row[e] + pi;
    }
#if LINATTN_ACC_WIDER
    LINATTN_SIMD
    for (int64_t j = 0; j <= e; j++)
        srow[j] = (real)row[j];
#else
    (void)srow;
#endif
}

/* kern.h's step in plain loops.  The query takes the rows four at a
 * time, so that y goes through memory once per four terms (row by row,
 * each term waited for the store of the one before: half the time of a
 * decoding step), each column still summed over the rows in order. */
static void k_step_c(acc_t *acc, real *s, int64_t m, int64_t e, const real *p,
                     const real *v, acc_t f, const real *q, real *y)
{
    int64_t ld = e + 1;
    for (int64_t j = 0; q && j < ld; j++)
        y[j] = 0;
    for (int64_t i = 0; i < m; i += 4) {
        int64_t rows = m - i < 4 ? m - i : 4;
        for (int64_t r = 0; p && r < rows; r++)
            step_row(acc + (i + r) * ld, s + (i + r) * ld, e, p[i + r], v, f);
        if (!q)
            continue;
        const real *r0 = s + i * ld;
        if (rows == 4) {
            real q0 = q[i], q1 = q[i + 1], q2 = q[i + 2], q3 = q[i + 3];
            LINATTN_SIMD
            for (int64_t j = 0; j < ld; j++) {
                real t = y[j];
                t += q0 * r0[j];
                t += q1 * r0[ld + j];
                t += q2 * r0[2 * ld + j];
                t += q3 * r0[3 * ld + j];
                y[j] = t;
            }
        } else {
            for (int64_t r = 0; r < rows; r++) {
                real qr = q[i + r];
                LINATTN_SIMD
                for (int64_t j = 0; j < ld; j++)
                    y[j] += qr * r0[r * ld + j];
            }
        }
    }
}

/* The bits of |x| (sign cleared) order as the values do, and NaN and
 * Inf (exponent all ones) above every finite value: one integer maximum,
 * exact in any order, so it vectorizes (a floating-point maximum may
 * not be reordered: its serial chain cost a decoding step a tenth of
 * its time).  Signed, for the vector compares every build has: the
 * largest |x| of these bits, +Inf for NaN and Inf. */
typedef int64_t amax_bits; /* wide enough for either precision's bits */

static inline double amax_of(amax_bits top)
{
    if (top >= (amax_bits)REAL_EXP_BITS)
        return INFINITY;
    real_bits b = (real_bits)top;
    real mx;
    memcpy(&mx, &b, sizeof mx);
    return mx;
}

#if LINATTN_KERN_LEVEL != 2
static double k_amax(const real *x, int64_t n)
{
    amax_bits top = 0;
    LINATTN_SIMD_REDUCE(max, top)
    for (int64_t i = 0; i < n; i++) {
        real_bits u;
        memcpy(&u, x + i, sizeof u);
        amax_bits a = (amax_bits)(u & ~REAL_SIGN_BIT);
        top = a > top ? a : top;
    }
    return amax_of(top);
}
#endif

static void k_fold(acc_t *acc, real *part, real *s, int64_t len)
{
    LINATTN_SIMD
    for (int64_t i = 0; i < len; i++) {
        acc_t t = acc[i] + part[i];
        acc[i] = t;
        s[i] = (real)t;
        part[i] = 0;
    }
}

static void k_tri_diag(const real *a, int64_t lda, const real *v,
                       int64_t ldv, int64_t cols, int64_t i0, int64_t i1,
                       real *y, int64_t ldy)
{
    for (int64_t i = i0; i < i1; i++) {
        real *yi = y + i * ldy;
        for (int64_t j = i0; j <= i; j++) {
            real aij = a[i * lda + j];
            const real *vj = v + j * ldv;
            LINATTN_SIMD
            for (int64_t c = 0; c < cols; c++)
                yi[c] += aij * vj[c];
        }
    }
}

#if LINATTN_KERN_LEVEL != 2
static void k_transpose(int64_t rows, int64_t cols, const real *src,
                        int64_t lds, real *dst, int64_t ldd)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            dst[j * ldd + i] = src[i * lds + j];
}
#endif

/* ---- GEMM micro-kernel ---- */

#if LINATTN_KERN_LEVEL == 2
#include "kernels/mm_avx512.h"
#include "kernels/step_avx512.h"
#define K_MM k_mm
#define K_TRIMM k_trimm
#define K_TRANSPOSE k_transpose512
#define K_STEP k_step
#define K_AMAX k_amax512
#else
#define K_MM NULL
#define K_TRIMM NULL
#define K_TRANSPOSE k_transpose
#define K_STEP k_step_c
#define K_AMAX k_amax
#endif

#if LINATTN_KERN_LEVEL == 2
#define KERN_TABLE XI(kern_avx512)
#define KERN_NAME "avx512"
#elif LINATTN_KERN_LEVEL == 1
#define KERN_TABLE XI(kern_avx2)
#define KERN_NAME "avx2"
#else
#define KERN_TABLE XI(kern_generic)
#define KERN_NAME "generic"
#endif

extern const XI(kern) KERN_TABLE;
const XI(kern) KERN_TABLE = {KERN_NAME,   k_exp,   k_elu1,
                             k_exp_shift, k_row_stats, K_MM,
                             K_STEP,      K_AMAX,      k_fold,
                             k_tri_diag,  K_TRIMM,
                             K_TRANSPOSE};
