/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_kernels.c -- the vectorized exponentials against libm, compiled
 * once per precision: the portable kernel of lib/vexp.h (included here
 * directly) and, in double on a CPU with AVX2 + FMA, the table-driven
 * kernel of lib/vexp_avx2.c.  Over the whole range, at the special values
 * (overflow, underflow, NaN) and through the padded tail.  And the random
 * generator of lib/rng.c (Philox known answers, Box-Muller, test vectors).
 */
#include <stdio.h>
#include "testutil.h"
#include "prec.h"
#include "vexp.h"
#include "vexp_avx2.h"
#include "rng.h"

#ifdef TEST_SINGLE
#define ULP FLT_EPSILON
#define XMAX 88.72283935546875
#define XFLUSH -86.5 /* below: flushed to zero */
#else
#define ULP DBL_EPSILON
#define XMAX 709.782712893384
#define XFLUSH -707.5
#endif

typedef void (*exp_array)(real *y, const real *x, int64_t n);

static void portable(real *y, const real *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = XI(exp)(x[i]);
}

/* max relative error in units of epsilon over n points spread over the
 * normal range, and the special values. */
static void check_kernel(exp_array f, const char *name, double max_ulps)
{
    enum { N = 20011 }; /* odd: exercises a tail */
    static real x[N], y[N];
    uint64_t s = 17;
    for (int i = 0; i < N; i++)
        x[i] = (real)(XFLUSH + (XMAX - XFLUSH) * test_uniform(&s));
    x[0] = 0, x[1] = (real)XFLUSH, x[2] = (real)-1e-30, x[3] = 1;
    f(y, x, N);
    double worst = 0;
    for (int i = 0; i < N; i++) {
        long double want = expl((long double)x[i]);
        if (want > (long double)(XMAX > 100 ? DBL_MAX : FLT_MAX))
            continue;
        double err = (double)(fabsl(y[i] - want) / want) / ULP;
        worst = err > worst ? err : worst;
    }
    ck_assert_msg(worst <= max_ulps, "%s %s: %.2f ulp", PREC, name, worst);
    printf("%s %s exp: max error %.2f ulp over %d points\n", PREC, name,
           worst, N);
    real sx[7] = {(real)-1000, (real)(XFLUSH - 1), (real)1000, (real)INFINITY,
                  (real)-INFINITY, (real)NAN, (real)(XMAX - 0.001)};
    real sy[7];
    f(sy, sx, 7);
    ck_assert(sy[0] == 0 && sy[1] == 0);
    ck_assert(isinf(sy[2]) && sy[2] > 0 && isinf(sy[3]) && sy[3] > 0);
    ck_assert(sy[4] == 0);
    ck_assert(isnan(sy[5]));
    ck_assert(isfinite(sy[6]) && sy[6] > 0);
    /* lengths 1..9: the tail path agrees with the full-vector path */
    for (int64_t n = 1; n <= 9; n++) {
        real t[9];
        f(t, x + 100, n);
        for (int64_t i = 0; i < n; i++)
            ck_assert(t[i] == y[100 + i]);
    }
}

START_TEST(portable_exp)
{
    check_kernel(portable, "portable", 2.0);
}
END_TEST

#if defined(LINATTN_HAVE_AVX2_EXP) && !defined(TEST_SINGLE)
START_TEST(avx2_exp)
{
    if (!linattn_i_avx2_ok()) {
        printf("no AVX2 + FMA on this CPU: kernel not run\n");
        return;
    }
    check_kernel(linattn_i_exp_avx2, "avx2", 1.5);
    /* elu + 1 from the same kernel: v + 1 above 0, exp below, NaN kept */
    double x[6] = {-2, -0.0, 0, 3, NAN, -800}, y[6];
    linattn_i_elu1_avx2(y, x, 6);
    ck_assert(fabs(y[0] - exp(-2.0)) <= 2 * DBL_EPSILON * exp(-2.0));
    ck_assert(y[1] == 1 && y[2] == 1 && y[3] == 4 && isnan(y[4]) && y[5] == 0);
    /* exp(x - c) in one pass: the bits of exp of the difference, tails of
     * every length, shifts that take arguments past both ends */
    double xs[11] = {-3, 0.5, 700, 1e-3, NAN, -20, 4, 9, 1, -0.25, 2};
    const double cs[3] = {0, 3.5, -705};
    for (int ci = 0; ci < 3; ci++)
        for (int64_t n = 1; n <= 11; n++) {
            double got[11], diff[11], want[11];
            for (int64_t i = 0; i < n; i++)
                diff[i] = xs[i] - cs[ci];
            linattn_i_exp_shift_avx2(got, xs, n, cs[ci]);
            linattn_i_exp_avx2(want, diff, n);
            ck_assert(memcmp(got, want, (size_t)n * sizeof(double)) == 0);
        }
}
END_TEST
#endif

#ifndef TEST_SINGLE
/* The generator of the random maps (precision-independent: run once).
 * Philox4x32-10 against the published known-answer vectors of Random123
 * (kat_vectors, "philox4x32 10"): an independent check of the bijection. */
START_TEST(philox_known_answers)
{
    static const uint32_t ctr[3][4] = {
        {0, 0, 0, 0},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}};
    static const uint32_t key[3][2] = {
        {0, 0}, {0xffffffff, 0xffffffff}, {0xa4093822, 0x299f31d0}};
    static const uint32_t want[3][4] = {
        {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
    for (int i = 0; i < 3; i++) {
        uint32_t out[4];
        linattn_i_philox(ctr[i], key[i], out);
        for (int j = 0; j < 4; j++)
            ck_assert_uint_eq(out[j], want[i][j]);
    }
}
END_TEST

/* Box-Muller as doc/rng.md states it, in long double with libm's logl,
 * cosl and sinl, from the Philox words (checked above): the library's
 * own logarithm and sine/cosine agree within 4 units of 2^-52 times the
 * radius, over 2^18 pairs, odd and even starts, high counter and stream
 * words. */
START_TEST(normals_match_long_double_box_muller)
{
    const long double two_pi = 6.283185307179586476925286766559005768L;
    const uint64_t seed = 0x9e3779b97f4a7c15ull, stream = 0x500000003ull;
    const uint64_t first = ((uint64_t)3 << 33) + 1; /* odd: starts at lane 1 */
    enum { N = 1 << 18 };
    static double z[N + 1];
    ck_assert_int_eq(linattn_rng_normal(seed, stream, first, N + 1, z), 0);
    double worst = 0;
    for (uint64_t i = first; i < first + N + 1; i++) {
        uint64_t c = i >> 1;
        const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32),
                                 (uint32_t)stream, (uint32_t)(stream >> 32)};
        const uint32_t k2[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
        uint32_t x[4];
        linattn_i_philox(ctr, k2, x);
        uint64_t w1 = (uint64_t)x[1] << 32 | x[0], w2 = (uint64_t)x[3] << 32 | x[2];
        long double u1 = ((long double)(w1 >> 12) + 0.5L) / 4503599627370496.0L;
        long double u2 = ((long double)(w2 >> 12) + 0.5L) / 4503599627370496.0L;
        ck_assert(u1 > 0 && u1 < 1 && u2 > 0 && u2 < 1);
        long double r = sqrtl(-2 * logl(u1));
        long double want = (i & 1) ? r * sinl(two_pi * u2) : r * cosl(two_pi * u2);
        double err = (double)(fabsl(z[i - first] - want) / (r * DBL_EPSILON));
        worst = err > worst ? err : worst;
    }
    printf("normals against long double Box-Muller: %.2f units of 2^-52 r\n",
           worst);
    ck_assert_msg(worst <= 4, "worst %g", worst);
}
END_TEST

/* The test vectors of doc/rng.md, bit for bit: what every platform must
 * reproduce (they come from this library; the two tests above check the
 * algorithm they come from independently). */
START_TEST(rng_doc_vectors)
{
    static const double v42[8] = {
        -0x1.54ac03c1a0331p-1, 0x1.0938db380d75fp+0, -0x1.6f135c80fefcbp+0,
        0x1.b16fd5e6389c7p-2,  0x1.147f0a3f6edb8p-3, -0x1.cf0bbb759e22ep-1,
        -0x1.4be7821c7eb89p-1, 0x1.3b205af57e134p-1};
    static const double vhi[3] = {0x1.1ed6ee66bf1dap-1, 0x1.53de17e32eaap-1,
                                  0x1.742f3d446b6a5p+0};
    static const double vend[2] = {-0x1.0194a914ba772p+1, -0x1.d0e2907ebb625p-1};
    double z[8];
    ck_assert_int_eq(linattn_rng_normal(42, 0, 0, 8, z), 0);
    ck_assert(memcmp(z, v42, sizeof v42) == 0);
    ck_assert_int_eq(linattn_rng_normal(0x0123456789abcdefull, 1,
                                        ((uint64_t)1 << 40) + 1, 3, z), 0);
    ck_assert(memcmp(z, vhi, sizeof vhi) == 0);
    ck_assert_int_eq(linattn_rng_normal(7, 0x100000000ull, UINT64_MAX - 1, 2, z), 0);
    ck_assert(memcmp(z, vend, sizeof vend) == 0);
    /* a longer draw contains the shorter one: counter-based */
    double a[5], b[3];
    linattn_rng_normal(5, 2, 10, 5, a);
    linattn_rng_normal(5, 2, 11, 3, b);
    ck_assert(memcmp(a + 1, b, sizeof b) == 0);
    /* arguments: nothing written on a refusal */
    z[0] = -555;
    ck_assert_int_eq(linattn_rng_normal(1, 0, 0, -1, z), -4);
    ck_assert_int_eq(linattn_rng_normal(1, 0, UINT64_MAX, 2, z), -4);
    ck_assert_int_eq(linattn_rng_normal(1, 0, 0, 1, NULL), -5);
    ck_assert(z[0] == -555);
    ck_assert_int_eq(linattn_rng_normal(1, 0, UINT64_MAX, 1, z), 0);
    ck_assert_int_eq(linattn_rng_normal(1, 0, 0, 0, NULL), 0);
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("kernels " PREC);
    TCase *tc = tcase_create("exp");
    tcase_add_test(tc, portable_exp);
#if defined(LINATTN_HAVE_AVX2_EXP) && !defined(TEST_SINGLE)
    tcase_add_test(tc, avx2_exp);
#endif
#ifndef TEST_SINGLE
    tcase_add_test(tc, philox_known_answers);
    tcase_add_test(tc, normals_match_long_double_box_muller);
    tcase_add_test(tc, rng_doc_vectors);
#endif
    suite_add_tcase(s, tc);
    return run_suite(s);
}
