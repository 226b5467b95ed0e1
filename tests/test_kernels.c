/*
 * test_kernels.c -- the vectorized exponentials against libm, compiled
 * once per precision: the portable kernel of lib/vexp.h (included here
 * directly) and, in double on a CPU with AVX2 + FMA, the table-driven
 * kernel of lib/vexp_avx2.c.  Over the whole range, at the special values
 * (overflow, underflow, NaN) and through the padded tail.
 */
#include <stdio.h>
#include "testutil.h"
#include "prec.h"
#include "vexp.h"
#include "vexp_avx2.h"

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
    suite_add_tcase(s, tc);
    return run_suite(s);
}
