/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kern_grad.c -- the loops of kernels/kern_grad.h, compiled once per
 * precision and code path with kernels/kern.c (the same -march); the
 * tables are chosen in kernels/dispatch.c.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "common/cpu.h"
#include "kernels/kern_grad.h"
#include "common/simd.h"

#ifndef LINATTN_KERN_LEVEL
#define LINATTN_KERN_LEVEL 0
#endif

/* Columns of y in strips of four 64-byte vectors whose sums stay in
 * registers along i (GCC's vector extension: an array would be kept on
 * the stack): each y_j is loaded and stored once per strip instead of once
 * per row i.  Every entry adds the same terms in the same order (y_j
 * first, then i = j, j + 1, ...) as the plain loop for the rest. */
typedef real tri_vec __attribute__((vector_size(64)));
#define TRI_LANES ((int64_t)(sizeof(tri_vec) / sizeof(real)))

static void g_tri_t_diag(const real *a, int64_t lda, const real *x,
                         int64_t ldx, int64_t cols, int64_t j0, int64_t j1,
                         real *y, int64_t ldy)
{
    int64_t c0 = 0;
    for (; c0 + 4 * TRI_LANES <= cols; c0 += 4 * TRI_LANES)
        for (int64_t j = j0; j < j1; j++) {
            /* memcpy, not pointer casts: rows need not be 64-byte aligned;
             * no vector crosses a function boundary (the psABI differs
             * between the levels this file is built for) */
            real *yj = y + j * ldy + c0;
            tri_vec s[4], t[4];
            memcpy(s, yj, sizeof s);
            for (int64_t i = j; i < j1; i++) {
                real aij = a[i * lda + j];
                memcpy(t, x + i * ldx + c0, sizeof t);
                s[0] += aij * t[0], s[1] += aij * t[1];
                s[2] += aij * t[2], s[3] += aij * t[3];
            }
            memcpy(yj, s, sizeof s);
        }
    for (int64_t j = j0; c0 < cols && j < j1; j++) {
        real *yj = y + j * ldy;
        for (int64_t i = j; i < j1; i++) {
            real aij = a[i * lda + j];
            const real *xi = x + i * ldx;
            LINATTN_SIMD
            for (int64_t c = c0; c < cols; c++)
                yj[c] += aij * xi[c];
        }
    }
}

static void g_gh(real *gh, const real *g, int64_t ldg, const real *o,
                 int64_t ldo, const real *den, int64_t rows, int64_t e,
                 int count)
{
    for (int64_t i = 0; i < rows; i++) {
        const real *gi = g + i * ldg, *oi = o + i * ldo;
        real *row = gh + i * (e + 1), inv = 1 / den[i], acc = 0;
        if (!count) {
            LINATTN_SIMD_SUM
            for (int64_t c = 0; c < e; c++)
                acc += gi[c] * oi[c];
        }
        /* a reciprocal that is not a normal number (a tiny normalizer's
         * overflows, a huge one's has lost bits): divide, as the forward
         * calls do (attn/output_rows.c) */
        if (!isnormal(inv)) {
            for (int64_t c = 0; c < e; c++)
                row[c] = gi[c] / den[i];
            row[e] = -acc / den[i];
            continue;
        }
        LINATTN_SIMD
        for (int64_t c = 0; c < e; c++)
            row[c] = gi[c] * inv;
        row[e] = -acc * inv;
    }
}

static int g_elu1_slope(real *y, const real *a, const real *f, int64_t n)
{
    real_bits bad = 0;
    LINATTN_SIMD_REDUCE(|, bad)
    for (int64_t i = 0; i < n; i++) {
        real t = a[i] * (f[i] > 1 ? 1 : f[i]); /* NaN stays NaN */
        y[i] = t;
        bad |= linattn_i_zero_bits(t);
    }
    return (bad & REAL_EXP_BITS) != 0;
}

static int g_relu_slope(real *y, const real *a, const real *f, int64_t n)
{
    real_bits bad = 0;
    LINATTN_SIMD_REDUCE(|, bad)
    for (int64_t i = 0; i < n; i++) {
        real t = f[i] > 0 ? a[i] : (f[i] != f[i] ? f[i] : 0);
        y[i] = t;
        bad |= linattn_i_zero_bits(t);
    }
    return (bad & REAL_EXP_BITS) != 0;
}

static int g_copy(real *y, const real *a, int64_t n)
{
    real_bits bad = 0;
    LINATTN_SIMD_REDUCE(|, bad)
    for (int64_t i = 0; i < n; i++) {
        real t = a[i];
        y[i] = t;
        bad |= linattn_i_zero_bits(t);
    }
    return (bad & REAL_EXP_BITS) != 0;
}

#if LINATTN_KERN_LEVEL == 2
#define GKERN_TABLE XI(gkern_avx512)
#elif LINATTN_KERN_LEVEL == 1
#define GKERN_TABLE XI(gkern_avx2)
#else
#define GKERN_TABLE XI(gkern_generic)
#endif

extern const XI(gkern) GKERN_TABLE;
const XI(gkern) GKERN_TABLE = {g_tri_t_diag, g_gh, g_elu1_slope,
                               g_relu_slope, g_copy};

