/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * exp_avx512.h -- exponentials for AVX-512 (F, DQ), included by the
 * AVX-512 build of kern.c, in the precision it is compiled for.
 *
 * x = (T k + j) ln2 / T + r, |r| <= ln2 / (2T), with T = 32 entries of
 * 2^(j/T) in double (16 in float) held in registers and picked by
 * permutes (no gather), exp(r) - 1 by a short polynomial (degree 6 in
 * double, 4 in float: truncation far below half an ulp), and the power
 * of two applied by scalef.  The special values are those of vexp.h: 0
 * below its flush threshold, +inf above the overflow threshold, NaN
 * propagates.  Tails run through the same lanes under a mask, so every
 * element is computed the same way wherever it falls.
 */
#include "kernels/exp2_table.h"

/* The special values of vexp.h on a computed y = exp(x): NaN needs no
 * fixing (it reaches r, p and y), +Inf (whose r is NaN) and the flush
 * below VEXP_LO do.  (A macro: the vector types follow the precision.) */
#define KEXP_SPECIAL(y, x)                                                    \
    KV_MASK_MOV(KV_MASK_MOV((y), KV_CMP((x), KV_SET1(VEXP_INF), _CMP_GT_OQ),  \
                            KV_SET1(KV_INF)),                                 \
                KV_CMP((x), KV_SET1(VEXP_LO), _CMP_LT_OQ), KV_SET1(0))

#ifdef LINATTN_SINGLE
typedef __m512 kvec;
typedef __mmask16 kmask;
#define KV_LANES 16
#define KV_LOAD(m, p) _mm512_maskz_loadu_ps(m, p)
#define KV_STORE(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define KV_SET1 _mm512_set1_ps
#define KV_CMP(a, b, op) _mm512_cmp_ps_mask(a, b, op)
#define KV_SUB _mm512_sub_ps
#define KV_ADD _mm512_add_ps
#define KV_BLEND _mm512_mask_blend_ps
#define KV_MASK_MOV _mm512_mask_mov_ps
#define KV_INF __builtin_inff()

static const uint32_t exp2_j16[16] = {
    0x3f800000, 0x3f85aac3, 0x3f8b95c2, 0x3f91c3d3, 0x3f9837f0, 0x3f9ef532,
    0x3fa5fed7, 0x3fad583f, 0x3fb504f3, 0x3fbd08a4, 0x3fc5672a, 0x3fce248c,
    0x3fd744fd, 0x3fe0ccdf, 0x3feac0c7, 0x3ff5257d};

static inline __m512 kexp(__m512 x)
{
    const __m512 table = _mm512_loadu_ps((const float *)exp2_j16);
    /* k = round(16 x / ln2), r = x - k ln2/16 in two steps (arguments
     * beyond the thresholds compute garbage that the masks below
     * replace) */
    __m512 kf = _mm512_roundscale_ps(
        _mm512_mul_ps(x, _mm512_set1_ps(23.083120654223414f)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(0x1.62e43p-5f), x);
    r = _mm512_fnmadd_ps(kf, _mm512_set1_ps(-0x1.05c61p-33f), r);
    __m512i ki = _mm512_cvtps_epi32(kf);
    __m512 t = _mm512_permutexvar_ps(ki, table); /* low 4 bits: j */
    /* scalef takes 2^floor(e): k = 16 floor(k/16) + j */
    __m512 e = _mm512_mul_ps(kf, _mm512_set1_ps(0.0625f));
    /* exp(r) - 1 = r (1 + r/2 + r^2/6 + r^3/24) */
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(1.0f / 24), r,
                               _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_mul_ps(p, r);
    return KEXP_SPECIAL(_mm512_scalef_ps(_mm512_fmadd_ps(t, p, t), e), x);
}
#else
typedef __m512d kvec;
typedef __mmask8 kmask;
#define KV_LANES 8
#define KV_LOAD(m, p) _mm512_maskz_loadu_pd(m, p)
#define KV_STORE(p, m, v) _mm512_mask_storeu_pd(p, m, v)
#define KV_SET1 _mm512_set1_pd
#define KV_CMP(a, b, op) _mm512_cmp_pd_mask(a, b, op)
#define KV_SUB _mm512_sub_pd
#define KV_ADD _mm512_add_pd
#define KV_BLEND _mm512_mask_blend_pd
#define KV_MASK_MOV _mm512_mask_mov_pd
#define KV_INF __builtin_inf()

/* 2^(j/32), j = 0..31: the even entries of 2^(j/64) */
static const uint64_t exp2_j32[32] = {
    LINATTN_EXP2_J64(LINATTN_EXP2_TAKE, LINATTN_EXP2_SKIP)};

static inline __m512d kexp(__m512d x)
{
    const double *tb = (const double *)exp2_j32;
    /* k = round(32 x / ln2), r = x - k ln2/32 in two steps (ln2/32 =
     * hi + lo; the FMA makes the first step exact but for one rounding).
     * Arguments beyond the thresholds compute garbage that the masks
     * below replace. */
    __m512d kf = _mm512_roundscale_pd(
        _mm512_mul_pd(x, _mm512_set1_pd(46.166241308446828384)),
        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512d r = _mm512_fnmadd_pd(kf, _mm512_set1_pd(0x1.62e42fefa39efp-6), x);
    r = _mm512_fnmadd_pd(kf, _mm512_set1_pd(0x1.abc9e3b39803fp-61), r);
    /* j = k mod 32: bits 0-3 pick within a pair of registers, bit 4 the
     * pair */
    __m512i ki = _mm512_cvtpd_epi64(kf);
    __m512d t0 = _mm512_permutex2var_pd(_mm512_loadu_pd(tb), ki,
                                        _mm512_loadu_pd(tb + 8));
    __m512d t1 = _mm512_permutex2var_pd(_mm512_loadu_pd(tb + 16), ki,
                                        _mm512_loadu_pd(tb + 24));
    __m512d t = _mm512_mask_blend_pd(
        _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16)), t0, t1);
    /* scalef takes 2^floor(e): k = 32 floor(k/32) + j */
    __m512d e = _mm512_mul_pd(kf, _mm512_set1_pd(1.0 / 32));
    /* exp(r) - 1 = r (1 + r/2 + ... + r^5/720), Estrin's scheme */
    __m512d r2 = _mm512_mul_pd(r, r);
    __m512d p01 = _mm512_fmadd_pd(_mm512_set1_pd(0.5), r, _mm512_set1_pd(1.0));
    __m512d p23 = _mm512_fmadd_pd(_mm512_set1_pd(1.0 / 24), r,
                                  _mm512_set1_pd(1.0 / 6));
    __m512d p45 = _mm512_fmadd_pd(_mm512_set1_pd(1.0 / 720), r,
                                  _mm512_set1_pd(1.0 / 120));
    __m512d p = _mm512_fmadd_pd(_mm512_fmadd_pd(p45, r2, p23), r2, p01);
    p = _mm512_mul_pd(p, r);
    return KEXP_SPECIAL(_mm512_scalef_pd(_mm512_fmadd_pd(t, p, t), e), x);
}
#endif

/* elu(x) + 1: x + 1 above 0, exp(x) elsewhere (NaN fails x > 0 and
 * propagates through exp). */
static inline kvec kelu1(kvec x)
{
    kmask pos = KV_CMP(x, KV_SET1(0), _CMP_GT_OQ);
    return KV_BLEND(pos, kexp(x), KV_ADD(x, KV_SET1(1)));
}

static inline kmask tail_mask(int64_t left)
{
    return left >= KV_LANES ? (kmask)-1 : (kmask)(((uint32_t)1 << left) - 1);
}

/* Inputs usually stream from memory (a block of the caller's queries or
 * keys) while each vector takes tens of cycles: prefetching this far
 * ahead keeps enough cache lines in flight (measured: without it the
 * loads stalled the loop for more time than the arithmetic took). */
#define KV_PREFETCH 512

/* The line KV_PREFETCH bytes after p, which may lie past the array: the
 * address is made as an integer (pointer arithmetic beyond one past the
 * end is undefined in C; prefetching any address is harmless). */
static inline void prefetch_ahead(const real *p)
{
    _mm_prefetch((const char *)((uintptr_t)p + KV_PREFETCH), _MM_HINT_T0);
}

/* y = F(x) over n values (F a macro of one vector): the whole vectors by
 * plain loads and stores, the last, partial one under a mask, computed
 * the same way.  A masked store across a cache line cost several times a
 * plain one (AMD Zen 5: a feature row of a decoding step, 64 values to
 * an unaligned buffer, took twice its time with every store masked). */
#define KV_MAP(y, x, n, F)                                                    \
    do {                                                                      \
        int64_t i_ = 0;                                                       \
        for (; i_ + KV_LANES <= (n); i_ += KV_LANES) {                        \
            prefetch_ahead((x) + i_);                                         \
            KV_STORE((y) + i_, (kmask)-1, F(KV_LOAD((kmask)-1, (x) + i_)));   \
        }                                                                     \
        if (i_ < (n)) {                                                       \
            kmask m_ = tail_mask((n) - i_);                                   \
            KV_STORE((y) + i_, m_, F(KV_LOAD(m_, (x) + i_)));                 \
        }                                                                     \
    } while (0)

static void k_exp(real *y, const real *x, int64_t n)
{
    KV_MAP(y, x, n, kexp);
}

static void k_elu1(real *y, const real *x, int64_t n)
{
    KV_MAP(y, x, n, kelu1);
}

static void k_exp_shift(real *y, const real *x, int64_t n, real c)
{
    const kvec vc = KV_SET1(c);
#define KEXP_SHIFTED(v) kexp(KV_SUB((v), vc))
    KV_MAP(y, x, n, KEXP_SHIFTED);
#undef KEXP_SHIFTED
}
