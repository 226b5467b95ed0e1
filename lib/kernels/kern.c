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

static void k_rank1(acc_t *acc, int64_t m, int64_t e, const real *p,
                    const real *v, acc_t f)
{
    int64_t ld = e + 1;
    for (int64_t i = 0; i < m; i++) {
        acc_t pi = p[i];
        acc_t *row = acc + i * ld;
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
    }
}

static void k_row_times(real *y, const real *s, int64_t m, int64_t e,
                        const real *p)
{
    int64_t ld = e + 1;
    for (int64_t j = 0; j < ld; j++)
        y[j] = 0;
    for (int64_t i = 0; i < m; i++) {
        real pi = p[i];
        const real *row = s + i * ld;
        LINATTN_SIMD
        for (int64_t j = 0; j < ld; j++)
            y[j] += pi * row[j];
    }
}

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
#define K_MM k_mm
#define K_TRIMM k_trimm
#define K_TRANSPOSE k_transpose512
#else
#define K_MM NULL
#define K_TRIMM NULL
#define K_TRANSPOSE k_transpose
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
                             k_rank1,     k_row_times, k_fold,
                             k_tri_diag,  K_TRIMM,
                             K_TRANSPOSE};
