/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * finite_draw.h -- the inputs and plans of the finite-output sweeps
 * (tests/test_finite.c, tests/test_grad_finite.c): values drawn across the
 * whole exponent range of the precision (testutil.h's real, TEST_SINGLE),
 * and one plan per sweep case (11 maps x 4 policies).
 */
#ifndef LINATTN_FINITE_DRAW_H
#define LINATTN_FINITE_DRAW_H

#include "testutil.h"

#ifdef TEST_SINGLE
#define EMIN (-149) /* the smallest subnormal's exponent */
#define EMAX 127
#else
#define EMIN (-1074)
#define EMAX 1023
#endif

/* Sweep case c uses a custom map act(W x + b). */
static inline int sweep_custom(int c)
{
    return c % 11 >= 7;
}

/* A value with its exponent drawn from [lo, hi] (subnormals included at
 * the bottom of the range), a random sign, sometimes 0. */
static inline real draw(uint64_t *s, int lo, int hi)
{
    double u = test_uniform(s);
    if (u < 0.05)
        return 0;
    int ex = lo + (int)((hi - lo + 1) * test_uniform(s));
    if (ex > hi)
        ex = hi;
    double x = ldexp(1 + test_uniform(s), ex);
    if (!isfinite((real)x))
        x = ldexp(1, hi);
    return (real)(u < 0.5 ? -x : x);
}

/* One matrix's exponent range: narrow around a centre anywhere in the
 * range (where tiny normalizers, huge sums and overflowing quotients
 * live), or the whole range at once. */
static inline void exponents(uint64_t *s, int *lo, int *hi)
{
    int centre = EMIN + (int)((EMAX - EMIN) * test_uniform(s));
    int spread = (int)(test_uniform(s) * 4) == 0 ? EMAX - EMIN
                                                  : (int)(8 * test_uniform(s));
    *lo = centre - spread < EMIN ? EMIN : centre - spread;
    *hi = centre + spread > EMAX ? EMAX : centre + spread;
}

/* count values drawn with one exponent range (exponents) into a. */
static inline void draw_all(uint64_t *s, real *a, int64_t count)
{
    int lo, hi;
    exponents(s, &lo, &hi);
    for (int64_t i = 0; i < count; i++)
        a[i] = draw(s, lo, hi);
}

/* The plan of sweep case c: every map (the custom ones, sweep_custom(c),
 * through W = 1 and b, which may be NULL), and the four normalizer
 * policies (positive, nonzero, eps, count; count is not offered to the
 * shifted maps, which take positive instead). */
static inline P(plan) *sweep_plan(int c, int64_t d, int64_t e, const real *b)
{
    int kind = c % 11, policy = (c / 11) % 4;
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 4;
    o.chunk = 3;
    o.denom = policy == 1   ? LINATTN_DENOM_NONZERO
              : policy == 3 ? LINATTN_DENOM_COUNT
                            : LINATTN_DENOM_POSITIVE;
    o.eps = policy == 2 ? 1e-3 : 0;
    P(plan) *p = NULL;
    if (sweep_custom(c)) {
        int act = kind - 6;
        real w[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
        if (act == LINATTN_ACT_EXP && o.denom == LINATTN_DENOM_COUNT)
            o.denom = LINATTN_DENOM_POSITIVE;
        ck_assert_int_eq(P(plan_create_custom)(&p, act, d,
                                               act == LINATTN_ACT_HEDGEHOG ? 2 * d
                                                                           : d,
                                               e, LINATTN_ROW_MAJOR, w, 3, b, &o), 0);
        return p;
    }
    int map = kind + 1;
    if ((map == LINATTN_MAP_IDENTITY || map == LINATTN_MAP_TRIG) &&
        o.denom == LINATTN_DENOM_POSITIVE)
        o.denom = LINATTN_DENOM_NONZERO; /* signed kernels */
    if (o.denom == LINATTN_DENOM_COUNT &&
        (map == LINATTN_MAP_FAVOR || map == LINATTN_MAP_FAVOR_HYP ||
         map == LINATTN_MAP_TRIG))
        o.denom = LINATTN_DENOM_POSITIVE;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

#endif
