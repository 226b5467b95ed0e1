/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exp_avx2.h -- the double exponential for AVX2 + FMA, included by the
 * AVX2 build of kern.c (double only; float takes the portable loop, which
 * the compiler vectorizes well enough there).
 *
 * The portable lib/vexp.h needs a degree-13 polynomial on |r| <= ln2/2.
 * Here x = (64 k + j) ln2/64 + r with |r| <= ln2/128, so exp(r) needs only
 * degree 5, and 2^(j/64) comes from a 64-entry table by one AVX2 gather,
 * within 1 ulp.  Same special values as vexp.h: +inf above the overflow
 * threshold, 0 below about twice the smallest normal, NaN propagates.
 */
#include "kernels/exp2_table.h"

/* 2^(j/64), j = 0..63 */
static const uint64_t exp2_j64[64] = {
    LINATTN_EXP2_J64(LINATTN_EXP2_TAKE, LINATTN_EXP2_TAKE)};

/* exp of 4 lanes; lanes where pos is set give v + 1 instead (elu + 1). */
static inline __m256d exp4(__m256d v)
{
    const __m256d inv = _mm256_set1_pd(92.332482616893656768); /* 64/ln2 */
    const __m256d shift = _mm256_set1_pd(0x1.8p52);
    const __m256d ln2hi = _mm256_set1_pd(0x1.62e42fefa4000p-7);
    const __m256d ln2lo = _mm256_set1_pd(-0x1.8432a1b0e2634p-49);
    const __m256d hi = _mm256_set1_pd(709.782712893384);
    const __m256d lo = _mm256_set1_pd(-707.5);
    __m256d xc = _mm256_max_pd(_mm256_min_pd(v, hi), lo);
    __m256d kd = _mm256_fmadd_pd(xc, inv, shift);
    __m256i n = _mm256_castpd_si256(kd);
    kd = _mm256_sub_pd(kd, shift);
    __m256d r = _mm256_fnmadd_pd(kd, ln2hi, xc);
    r = _mm256_fnmadd_pd(kd, ln2lo, r);
    /* exp(r) - 1 = r (1 + r/2 + r^2/6 + r^3/24 + r^4/120) */
    __m256d p = _mm256_fmadd_pd(_mm256_set1_pd(1.0 / 120), r,
                                _mm256_set1_pd(1.0 / 24));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0 / 6));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(0.5));
    p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(1.0));
    p = _mm256_mul_pd(p, r);
    __m256i j = _mm256_and_si256(n, _mm256_set1_epi64x(63));
    __m256i t = _mm256_i64gather_epi64((const long long *)exp2_j64, j, 8);
    /* 2^(k-1) 2^(j/64): k - 1 added to the table entry's exponent; the
     * doubling after the multiply reaches the overflow threshold. */
    __m256i k = _mm256_slli_epi64(
        _mm256_sub_epi64(_mm256_srli_epi64(n, 6), _mm256_set1_epi64x(1)), 52);
    __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(t, k));
    __m256d y = _mm256_fmadd_pd(s, p, s);
    y = _mm256_add_pd(y, y);
    y = _mm256_blendv_pd(y, _mm256_set1_pd(__builtin_inf()),
                         _mm256_cmp_pd(v, hi, _CMP_GT_OQ));
    y = _mm256_blendv_pd(y, _mm256_setzero_pd(),
                         _mm256_cmp_pd(v, lo, _CMP_LT_OQ));
    /* NaN: min/max above replaced it; put it back. */
    return _mm256_blendv_pd(y, v, _mm256_cmp_pd(v, v, _CMP_UNORD_Q));
}

static inline __m256d elu4(__m256d v)
{
    __m256d pos = _mm256_cmp_pd(v, _mm256_setzero_pd(), _CMP_GT_OQ);
    __m256d ex = exp4(_mm256_andnot_pd(pos, v)); /* exp(0) where v > 0 */
    return _mm256_blendv_pd(ex, _mm256_add_pd(v, _mm256_set1_pd(1.0)), pos);
}

/* The tail goes through the same lanes, padded, so that every element is
 * computed the same way wherever it falls. */
#define KERNEL(name, op)                                                      \
    static void name(double *y, const double *x, int64_t n)                   \
    {                                                                         \
        int64_t i = 0;                                                        \
        for (; i + 4 <= n; i += 4)                                            \
            _mm256_storeu_pd(y + i, op(_mm256_loadu_pd(x + i)));              \
        if (i < n) {                                                          \
            double in[4] = {0, 0, 0, 0}, out[4];                              \
            memcpy(in, x + i, (size_t)(n - i) * sizeof(double));              \
            _mm256_storeu_pd(out, op(_mm256_loadu_pd(in)));                   \
            memcpy(y + i, out, (size_t)(n - i) * sizeof(double));             \
        }                                                                     \
    }

KERNEL(k_exp, exp4)
KERNEL(k_elu1, elu4)

/* y = exp(x - c): the shifted exponentials of the kernelized maps in one
 * pass (padded tail lanes compute exp(0)). */
static void k_exp_shift(double *y, const double *x, int64_t n, double c)
{
    const __m256d vc = _mm256_set1_pd(c);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(y + i, exp4(_mm256_sub_pd(_mm256_loadu_pd(x + i), vc)));
    if (i < n) {
        double in[4] = {c, c, c, c}, out[4];
        memcpy(in, x + i, (size_t)(n - i) * sizeof(double));
        _mm256_storeu_pd(out, exp4(_mm256_sub_pd(_mm256_loadu_pd(in), vc)));
        memcpy(y + i, out, (size_t)(n - i) * sizeof(double));
    }
}

