/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_kernels.c -- the library's own kernels (lib/kernels/kern.h), compiled once
 * per precision, in every build the CPU can run (generic, AVX2, AVX-512:
 * each table is called directly, so a CI machine without AVX-512 still
 * runs the others and this one all three): the exponentials against libm
 * over the whole range, at the special values (overflow, underflow, NaN)
 * and through the masked or padded tails; elu + 1 and exp(x - c); the row
 * statistics, the GEMM micro-kernel, the decoding and causal loops
 * against plain loops; the dispatch following the forced level.  And the
 * random generator of lib/maps/rng.c (Philox known answers, Box-Muller, test
 * vectors).
 */
#include <float.h>
#include <stdio.h>
#include "testutil.h"
#include "common/prec.h"
#include "kernels/vexp.h"
#include "common/cpu.h"
#include "kernels/kern.h"
#include "maps/rng.h"

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
    /* lengths 1..33: the tail path agrees with the full-vector path, and
     * nothing past the end is written */
    for (int64_t n = 1; n <= 33; n++) {
        real t[34];
        t[n] = (real)-7;
        f(t, x + 100, n);
        for (int64_t i = 0; i < n; i++)
            ck_assert(t[i] == y[100 + i]);
        ck_assert(t[n] == (real)-7);
    }
}

START_TEST(portable_exp)
{
    check_kernel(portable, "portable", 2.0);
}
END_TEST

/* Every kernel build this CPU runs: level i of the loop. */
#define FOR_EACH_BUILD(kn)                                                    \
    for (int level_ = 0; level_ < LINATTN_ISA_COUNT; level_++)                 \
        for (const XI(kern) *kn = XI(kern_of)(level_);                         \
             kn && level_ <= linattn_i_cpu_isa(); kn = NULL)

static const XI(kern) *current;
static void via_current(real *y, const real *x, int64_t n)
{
    current->exp(y, x, n);
}

START_TEST(every_build_exp)
{
    int ran = 0;
    FOR_EACH_BUILD(kn)
    {
        current = kn;
        check_kernel(via_current, kn->name, 2.0);
        /* elu + 1 from the same kernel: v + 1 above 0, exp below, NaN kept */
        real x[6] = {-2, (real)-0.0, 0, 3, (real)NAN, (real)-800}, y[6];
        kn->elu1(y, x, 6);
        ck_assert(fabs(y[0] - exp(-2.0)) <= 2 * ULP * exp(-2.0));
        ck_assert(y[1] == 1 && y[2] == 1 && y[3] == 4 && isnan(y[4]) && y[5] == 0);
        /* against the build's own exp on every lane position */
        enum { N = 37 };
        real v[N], got[N], want[N];
        uint64_t s = 5;
        for (int i = 0; i < N; i++)
            v[i] = (real)(8 * test_uniform(&s) - 4);
        kn->elu1(got, v, N);
        kn->exp(want, v, N);
        for (int i = 0; i < N; i++)
            ck_assert(got[i] == (v[i] > 0 ? v[i] + 1 : want[i]));
        /* in place */
        memcpy(got, v, sizeof v);
        kn->elu1(got, got, N);
        for (int i = 0; i < N; i++)
            ck_assert(got[i] == (v[i] > 0 ? v[i] + 1 : want[i]));
        /* exp(x - c) in one pass: the bits of exp of the difference, tails
         * of every length, shifts that take arguments past both ends */
        real xs[11] = {-3, (real)0.5, (real)(XMAX - 9), (real)1e-3, (real)NAN,
                       -20, 4, 9, 1, (real)-0.25, 2};
        const real cs[3] = {0, (real)3.5, (real)(XFLUSH + 2)};
        for (int ci = 0; ci < 3; ci++)
            for (int64_t n = 1; n <= 11; n++) {
                real g[11], diff[11], w[11];
                for (int64_t i = 0; i < n; i++)
                    diff[i] = xs[i] - cs[ci];
                kn->exp_shift(g, xs, n, cs[ci]);
                kn->exp(w, diff, n);
                ck_assert(memcmp(g, w, (size_t)n * sizeof(real)) == 0);
            }
        ran++;
    }
    ck_assert_int_ge(ran, 1);
    printf("%s: %d kernel build(s) run on this CPU\n", PREC, ran);
}
END_TEST

/* A value in [-1, 1) that is exact in float too. */
static real small_value(uint64_t *s)
{
    return (real)((int)(64 * test_uniform(s)) - 32) / 32;
}

START_TEST(every_build_row_stats)
{
    const int64_t rows = 13, m = 19, ldf = 23;
    real f[13 * 23], z[19], den[13];
    acc_t part[19];
    uint64_t s = 9;
    for (int64_t i = 0; i < rows * ldf; i++)
        f[i] = small_value(&s);
    for (int64_t j = 0; j < m; j++)
        z[j] = small_value(&s);
    FOR_EACH_BUILD(kn)
    {
        kn->row_stats(f, ldf, rows, m, z, den, part);
        for (int64_t i = 0; i < rows; i++) {
            long double want = 0;
            for (int64_t j = 0; j < m; j++)
                want += (long double)f[i * ldf + j] * z[j];
            ck_assert(den[i] == (real)want); /* exact: short dyadic values */
        }
        for (int64_t j = 0; j < m; j++) {
            long double want = 0;
            for (int64_t i = 0; i < rows; i++)
                want += f[i * ldf + j];
            ck_assert(part[j] == (acc_t)want);
        }
        den[0] = -5;
        kn->row_stats(f, ldf, rows, m, NULL, NULL, part); /* part only */
        ck_assert(den[0] == -5);
    }
}
END_TEST

/* The GEMM micro-kernel against plain loops: C = A B (+ C) (times s),
 * A in both orientations, shapes that leave every kind of edge (rows not
 * a multiple of the tile, columns not of the vector, K not of the chunk),
 * C with padding that must stay untouched. */
START_TEST(every_build_mm)
{
    static const int64_t shapes[][3] = {
        {1, 1, 1},   {6, 8, 4},    {7, 9, 5},     {13, 33, 64},
        {64, 65, 1024}, {32, 97, 64}, {5, 130, 131}, {64, 64, 0},
        {19, 16, 70}};
    FOR_EACH_BUILD(kn)
    {
        if (!kn->mm) {
            printf("%s %s: no micro-kernel (BLAS is used)\n", PREC, kn->name);
            continue;
        }
        for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
            int64_t M = shapes[t][0], N = shapes[t][1], K = shapes[t][2];
            int64_t ldb = N + 3, ldc = N + 2, lda = (K > M ? K : M) + 1;
            int64_t ka = K > 0 ? K : 1;
            real *a = malloc(sizeof(real) * (size_t)((M > ka ? M : ka) * lda));
            real *b = malloc(sizeof(real) * (size_t)(ka * ldb));
            real *c = malloc(sizeof(real) * (size_t)(M * ldc));
            real *c0 = malloc(sizeof(real) * (size_t)(M * ldc));
            real sc[1024];
            uint64_t s = 3 + (uint64_t)t;
            for (int64_t i = 0; i < (M > ka ? M : ka) * lda; i++)
                a[i] = small_value(&s);
            for (int64_t i = 0; i < ka * ldb; i++)
                b[i] = small_value(&s);
            for (int64_t i = 0; i < M * ldc; i++)
                c0[i] = small_value(&s);
            for (int64_t i = 0; i < M; i++)
                sc[i] = (real)(i % 3 + 1) / 4;
            for (int trans = 0; trans < 2; trans++)
                for (int add = 0; add < 2; add++)
                    for (int scaled = 0; scaled < 2; scaled++) {
                        int64_t ars = trans ? 1 : lda, aks = trans ? lda : 1;
                        memcpy(c, c0, sizeof(real) * (size_t)(M * ldc));
                        /* all finite: no flag */
                        ck_assert(kn->mm(M, N, K, a, ars, aks, b, ldb, c, ldc,
                                         add, scaled ? sc : NULL) == 0);
                        for (int64_t i = 0; i < M; i++) {
                            for (int64_t j = 0; j < N; j++) {
                                long double w = add ? c0[i * ldc + j] : 0;
                                for (int64_t k = 0; k < K; k++)
                                    w += (long double)a[i * ars + k * aks] *
                                         b[k * ldb + j];
                                if (scaled)
                                    w *= sc[i];
                                real got = c[i * ldc + j];
                                ck_assert_msg(fabsl(got - w) <= 1e-5L * (1 + fabsl(w)) *
                                                  (sizeof(real) == 4 ? 1 : 1e-7L),
                                              "%s %s mm %lld x %lld x %lld", PREC,
                                              kn->name, (long long)M, (long long)N,
                                              (long long)K);
                            }
                            for (int64_t j = N; j < ldc; j++) /* padding */
                                ck_assert(c[i * ldc + j] == c0[i * ldc + j]);
                        }
                    }
            free(a), free(b), free(c), free(c0);
        }
    }
}
END_TEST

/* The decoding and causal loops against plain loops. */
START_TEST(every_build_small_loops)
{
    enum { M = 11, E = 9, LD = E + 1 };
    real p[M], v[E], y[LD], sz[M * LD];
    acc_t acc[M * LD], acc0[M * LD];
    uint64_t s = 21;
    for (int i = 0; i < M; i++)
        p[i] = small_value(&s);
    for (int j = 0; j < E; j++)
        v[j] = small_value(&s);
    for (int i = 0; i < M * LD; i++)
        acc0[i] = small_value(&s), sz[i] = small_value(&s);
    FOR_EACH_BUILD(kn)
    {
        /* the update; in float with the working copy written in the
         * pass */
        memcpy(acc, acc0, sizeof acc);
        kn->step(acc, sz, M, E, p, v, 1, NULL, NULL);
        for (int i = 0; i < M; i++)
            for (int j = 0; j <= E; j++) {
                ck_assert(acc[i * LD + j] ==
                          acc0[i * LD + j] + (acc_t)p[i] * (j < E ? v[j] : 1));
                if (sizeof(real) != sizeof(acc_t)) /* float's copy */
                    ck_assert(sz[i * LD + j] == (real)acc[i * LD + j]);
            }
        /* with the state before scaled in the same pass (a decay) */
        memcpy(acc, acc0, sizeof acc);
        acc_t f = (acc_t)0.625;
        kn->step(acc, sz, M, E, p, v, f, NULL, NULL);
        for (int i = 0; i < M; i++)
            for (int j = 0; j <= E; j++) {
                long double want = (long double)f * acc0[i * LD + j] +
                                   (long double)p[i] * (j < E ? v[j] : 1);
                ck_assert(fabsl(acc[i * LD + j] - want) <= 4 * DBL_EPSILON * (1 + fabsl(want)));
            }
        kn->step(acc, sz, M, E, NULL, NULL, 1, p, y);
        for (int j = 0; j <= E; j++) {
            long double w = 0;
            for (int i = 0; i < M; i++)
                w += (long double)p[i] * sz[i * LD + j];
            ck_assert(y[j] == (real)w);
        }
        /* the largest magnitude: of none 0, NaN and Inf above all */
        real xs[37];
        for (int i = 0; i < 37; i++)
            xs[i] = small_value(&s);
        xs[23] = (real)-3.5;
        ck_assert(kn->amax(xs, 0) == 0);
        ck_assert(kn->amax(xs, 23) < 3.5 && kn->amax(xs, 37) == 3.5);
        ck_assert(kn->amax(xs + 23, 1) == 3.5);
        xs[30] = (real)-INFINITY;
        ck_assert(kn->amax(xs, 37) == INFINITY);
        xs[30] = (real)NAN;
        ck_assert(kn->amax(xs, 37) == INFINITY);
        for (int i = 0; i < 37; i++)
            xs[i] = i % 2 ? (real)-0.0 : 0;
        ck_assert(kn->amax(xs, 37) == 0);
        real part[M * LD], work[M * LD];
        for (int i = 0; i < M * LD; i++)
            part[i] = small_value(&s);
        memcpy(acc, acc0, sizeof acc);
        memcpy(work, part, sizeof part);
        kn->fold(acc, work, sz, M * LD);
        for (int i = 0; i < M * LD; i++) {
            ck_assert(acc[i] == acc0[i] + part[i]);
            ck_assert(sz[i] == (real)acc[i] && work[i] == 0);
        }
        /* the diagonal block [3, 8) of a 9-row chunk: entries above the
         * diagonal and rows of v after the row are NaN and must not be
         * read */
        enum { R = 9, L = 5, LDV = 7 };
        real a[R * R], vv[R * LDV], yy[R * L], y0[R * L];
        for (int i = 0; i < R; i++)
            for (int j = 0; j < R; j++)
                a[i * R + j] = j > i ? (real)NAN : small_value(&s);
        for (int i = 0; i < R * LDV; i++) /* beyond column L: not read */
            vv[i] = i % LDV < L ? small_value(&s) : (real)NAN;
        for (int i = 0; i < R * L; i++)
            y0[i] = small_value(&s);
        memcpy(yy, y0, sizeof yy);
        kn->tri_diag(a, R, vv, LDV, L, 3, 8, yy, L);
        for (int i = 0; i < R; i++)
            for (int c = 0; c < L; c++) {
                long double w = y0[i * L + c];
                for (int j = 3; i >= 3 && i < 8 && j <= i; j++)
                    w += (long double)a[i * R + j] * vv[j * LDV + c];
                ck_assert(yy[i * L + c] == (real)w);
            }
    }
}
END_TEST

/* The decoding step over states of every width class (narrower than a
 * vector, whole groups, a partial last group, one panel and several,
 * rows not a multiple of four), with a decay factor and without: the
 * update is exact (f = 1) or within rounding of f acc + p v; the float
 * copy is the rounded accumulator; the query is the plain loop's sum
 * over the rows in order (the long-double sum rounded, within the
 * terms' rounding); the fused step gives the bits of the update then the
 * query, and leaves y's entries past e alone. */
START_TEST(every_build_step_widths)
{
    static const int64_t widths[][2] = {{3, 2},   {5, 6},   {13, 7},  {6, 8},
                                        {4, 15},  {64, 64}, {64, 71},
                                        {9, 72},  {30, 79}, {7, 150}};
    uint64_t s = 41;
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        int64_t m = widths[w][0], e = widths[w][1], ld = e + 1;
        real *p = malloc((size_t)m * sizeof *p), *q = malloc((size_t)m * sizeof *q);
        real *v = malloc((size_t)e * sizeof *v);
        real *y = malloc((size_t)(ld + 3) * sizeof *y), *y2 = malloc((size_t)(ld + 3) * sizeof *y2);
        acc_t *acc0 = malloc((size_t)(m * ld) * sizeof *acc0);
        acc_t *a1 = malloc((size_t)(m * ld) * sizeof *a1), *a2 = malloc((size_t)(m * ld) * sizeof *a2);
        real *s1 = malloc((size_t)(m * ld) * sizeof *s1), *s2 = malloc((size_t)(m * ld) * sizeof *s2);
        for (int64_t i = 0; i < m; i++)
            p[i] = small_value(&s), q[i] = small_value(&s);
        for (int64_t j = 0; j < e; j++)
            v[j] = small_value(&s);
        for (int64_t i = 0; i < m * ld; i++)
            acc0[i] = small_value(&s);
        FOR_EACH_BUILD(kn)
        for (int fi = 0; fi < 2; fi++) {
            acc_t f = fi ? (acc_t)0.625 : 1;
            /* a state's working copy: acc itself in double */
            real *c1 = sizeof(real) == sizeof(acc_t) ? (real *)a1 : s1;
            real *c2 = sizeof(real) == sizeof(acc_t) ? (real *)a2 : s2;
            memcpy(a1, acc0, (size_t)(m * ld) * sizeof *a1);
            memcpy(a2, acc0, (size_t)(m * ld) * sizeof *a2);
            kn->step(a1, c1, m, e, p, v, f, NULL, NULL);
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < ld; j++) {
                    acc_t got = a1[i * ld + j], vj = j < e ? (acc_t)v[j] : 1;
                    if (f == 1)
                        ck_assert(got == acc0[i * ld + j] + (acc_t)p[i] * vj);
                    long double want = (long double)f * acc0[i * ld + j] +
                                       (long double)p[i] * vj;
                    ck_assert_msg(fabsl(got - want) <= 4 * DBL_EPSILON * (1 + fabsl(want)),
                                  "%s %s step %lld x %lld", PREC, kn->name,
                                  (long long)m, (long long)e);
                    ck_assert(c1[i * ld + j] == (real)got);
                }
            for (int64_t j = 0; j < ld + 3; j++)
                y[j] = y2[j] = (real)-7;
            kn->step(a1, c1, m, e, NULL, NULL, 1, q, y);
            for (int64_t j = 0; j < ld; j++) {
                long double want = 0, mag = 0;
                for (int64_t i = 0; i < m; i++) {
                    want += (long double)q[i] * c1[i * ld + j];
                    mag += fabsl((long double)q[i] * c1[i * ld + j]);
                }
                ck_assert_msg(fabsl(y[j] - want) <= 2 * m * REAL_EPSILON * (mag + 1e-30L),
                              "%s %s query %lld x %lld col %lld", PREC,
                              kn->name, (long long)m, (long long)e, (long long)j);
            }
            kn->step(a2, c2, m, e, p, v, f, q, y2);
            ck_assert_msg(!memcmp(a1, a2, (size_t)(m * ld) * sizeof *a1) &&
                              !memcmp(c1, c2, (size_t)(m * ld) * sizeof *c1) &&
                              !memcmp(y, y2, (size_t)(ld + 3) * sizeof *y),
                          "%s %s fused step %lld x %lld f %g", PREC, kn->name,
                          (long long)m, (long long)e, (double)f);
            ck_assert(y2[ld] == (real)-7 && y2[ld + 2] == (real)-7);
        }
        free(p), free(q), free(v), free(y), free(y2);
        free(acc0), free(a1), free(a2), free(s1), free(s2);
    }
}
END_TEST

/* tril(A) V over a whole chunk (the micro-kernel builds): against plain
 * loops, with NaN above the diagonal of A and in the rows of V that no
 * row may reach (none can leak, not even as 0 * NaN), widths that leave
 * partial vectors and vector groups, padding of y untouched. */
START_TEST(every_build_trimm)
{
    static const int64_t shapes[][2] = {{1, 1}, {5, 3}, {6, 8}, {7, 9},
                                        {16, 64}, {32, 64}, {13, 37},
                                        {32, 96}, {20, 130}};
    FOR_EACH_BUILD(kn)
    {
        if (!kn->trimm)
            continue;
        for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
            int64_t rows = shapes[t][0], cols = shapes[t][1];
            int64_t lda = rows + 2, ldv = cols + 3, ldy = cols + 1;
            real *a = malloc(sizeof(real) * (size_t)(rows * lda));
            real *v = malloc(sizeof(real) * (size_t)(rows * ldv));
            real *y = malloc(sizeof(real) * (size_t)(rows * ldy));
            real *y0 = malloc(sizeof(real) * (size_t)(rows * ldy));
            uint64_t s = 77 + (uint64_t)t;
            for (int64_t i = 0; i < rows; i++)
                for (int64_t j = 0; j < lda; j++)
                    a[i * lda + j] = j <= i ? small_value(&s) : (real)NAN;
            for (int64_t i = 0; i < rows * ldv; i++)
                v[i] = i % ldv < cols ? small_value(&s) : (real)NAN;
            for (int64_t i = 0; i < rows * ldy; i++)
                y0[i] = small_value(&s);
            /* in place, and scaled into another array (its padding kept) */
            real *d = malloc(sizeof(real) * (size_t)(rows * (ldy + 2)));
            real sc[130];
            for (int64_t i = 0; i < rows; i++)
                sc[i] = (real)(i % 4 + 1) / 8;
            for (int into = 0; into < 2; into++) {
                int64_t ldd = into ? ldy + 2 : ldy;
                memcpy(y, y0, sizeof(real) * (size_t)(rows * ldy));
                for (int64_t i = 0; i < rows * ldd; i++)
                    d[i] = (real)-3;
                ck_assert(kn->trimm(rows, cols, a, lda, v, ldv, y, ldy,
                                    into ? d : y, ldd, into ? sc : NULL) == 0);
                const real *got = into ? d : y;
                for (int64_t i = 0; i < rows; i++) {
                    for (int64_t c = 0; c < cols; c++) {
                        long double w = y0[i * ldy + c];
                        for (int64_t j = 0; j <= i; j++)
                            w += (long double)a[i * lda + j] * v[j * ldv + c];
                        if (into)
                            w *= sc[i];
                        ck_assert_msg(got[i * ldd + c] == (real)w,
                                      "%s trimm %lld x %lld", kn->name,
                                      (long long)rows, (long long)cols);
                    }
                    for (int64_t c = cols; c < ldd; c++)
                        ck_assert(got[i * ldd + c] ==
                                  (into ? (real)-3 : y0[i * ldy + c]));
                }
                if (into) /* y itself is only read */
                    ck_assert(memcmp(y, y0, sizeof(real) * (size_t)(rows * ldy)) == 0);
            }
            free(d);
            /* a later row of V turned to NaN changes nothing before it */
            for (int64_t c = 0; c < cols; c++)
                v[(rows - 1) * ldv + c] = (real)NAN;
            memcpy(y, y0, sizeof(real) * (size_t)(rows * ldy));
            /* (the last row is NaN now: flagged) */
            ck_assert(kn->trimm(rows, cols, a, lda, v, ldv, y, ldy, y, ldy,
                                NULL) != 0);
            for (int64_t i = 0; i + 1 < rows; i++)
                for (int64_t c = 0; c < cols; c++)
                    ck_assert(!isnan(y[i * ldy + c]));
            free(a), free(v), free(y), free(y0);
        }
    }
}
END_TEST

/* The flags of the kernels that write normalized rows (mm with s, trimm):
 * set when exactly one value written is not finite, wherever it lies
 * (each tile of rows, each vector of a row, every lane of the masked
 * last vector), whether it came in through C or y (Inf, NaN) or from the
 * arithmetic (a product beyond the range); clear when only the padding
 * beyond the columns, which the masked loads and stores never touch,
 * holds NaN and Inf.  mm without s raises no flag. */
START_TEST(every_build_nonfinite_flags)
{
    static const int64_t shapes[][3] = {{1, 1, 1}, {7, 9, 5}, {13, 37, 70},
                                        {20, 130, 3}, {6, 64, 0}};
    const real bad[2] = {(real)INFINITY, (real)NAN};
    FOR_EACH_BUILD(kn)
    {
        if (!kn->mm || !kn->trimm)
            continue;
        for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
            int64_t M = shapes[t][0], N = shapes[t][1], K = shapes[t][2];
            int64_t ka = K > 0 ? K : 1, ldb = N + 3, ldc = N + 2;
            int64_t lda = (K > M ? K : M) + 1; /* A: M x K and M x M */
            real *a = malloc(sizeof(real) * (size_t)(M * lda));
            real *b = malloc(sizeof(real) * (size_t)((ka > M ? ka : M) * ldb));
            real *c = malloc(sizeof(real) * (size_t)(M * ldc));
            real *c0 = malloc(sizeof(real) * (size_t)(M * ldc));
            real sc[32];
            uint64_t s = 5 + (uint64_t)t;
            for (int64_t i = 0; i < M * lda; i++)
                a[i] = small_value(&s);
            for (int64_t i = 0; i < (ka > M ? ka : M) * ldb; i++)
                b[i] = small_value(&s);
            for (int64_t i = 0; i < M; i++)
                sc[i] = (real)(i % 3 + 1) / 4;
            for (int64_t i = 0; i < M * ldc; i++) /* padding: Inf, NaN */
                c0[i] = i % ldc < N ? small_value(&s) : bad[i % 2];
            /* only the padding is not finite: no flag */
            memcpy(c, c0, sizeof(real) * (size_t)(M * ldc));
            ck_assert(kn->mm(M, N, K, a, lda, 1, b, ldb, c, ldc, 1, sc) == 0);
            memcpy(c, c0, sizeof(real) * (size_t)(M * ldc));
            ck_assert(kn->trimm(M, N, a, lda, b, ldb, c0, ldc, c, ldc, sc) ==
                      0);
            /* one value at a time, every row and column */
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++) {
                    real keep = c0[i * ldc + j];
                    c0[i * ldc + j] = bad[(i + j) % 2];
                    memcpy(c, c0, sizeof(real) * (size_t)(M * ldc));
                    ck_assert_msg(kn->mm(M, N, K, a, lda, 1, b, ldb, c, ldc, 1,
                                         sc) != 0,
                                  "%s %s mm flag at (%lld, %lld) of %lld x %lld",
                                  PREC, kn->name, (long long)i, (long long)j,
                                  (long long)M, (long long)N);
                    memcpy(c, c0, sizeof(real) * (size_t)(M * ldc));
                    ck_assert(kn->mm(M, N, K, a, lda, 1, b, ldb, c, ldc, 1,
                                     NULL) == 0); /* no s: no flag */
                    ck_assert_msg(kn->trimm(M, N, a, lda, b, ldb, c0, ldc, c,
                                            ldc, (i + j) % 2 ? sc : NULL) != 0,
                                  "%s %s trimm flag at (%lld, %lld)", PREC,
                                  kn->name, (long long)i, (long long)j);
                    c0[i * ldc + j] = keep;
                }
            /* a finite row scaled beyond the range: the arithmetic's own
             * overflow (row M - 1: |sum| >= its largest term, times
             * REAL_MAX) */
            for (int64_t j = 0; j < N; j++)
                c0[(M - 1) * ldc + j] = 2;
            sc[M - 1] = REAL_MAX;
            memcpy(c, c0, sizeof(real) * (size_t)(M * ldc));
            ck_assert(K > 0 || kn->mm(M, N, K, a, lda, 1, b, ldb, c, ldc, 1,
                                      sc) != 0);
            for (int64_t k = 0; k < K; k++) /* a row of A large and positive */
                a[(M - 1) * lda + k] = 4, b[k * ldb] = 4;
            memcpy(c, c0, sizeof(real) * (size_t)(M * ldc));
            ck_assert(kn->mm(M, N, K, a, lda, 1, b, ldb, c, ldc, 1, sc) != 0);
            ck_assert(kn->trimm(M, N, a, lda, b, ldb, c0, ldc, c, ldc, sc) !=
                      0);
            free(a), free(b), free(c), free(c0);
        }
    }
}
END_TEST

START_TEST(every_build_transpose)
{
    static const int64_t shapes[][2] = {{1, 1}, {8, 8}, {16, 64}, {13, 21},
                                        {32, 64}, {7, 9}, {48, 17}};
    FOR_EACH_BUILD(kn)
    {
        for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
            int64_t rows = shapes[t][0], cols = shapes[t][1];
            int64_t lds = cols + 3, ldd = rows + 5;
            real *src = malloc(sizeof(real) * (size_t)(rows * lds));
            real *dst = malloc(sizeof(real) * (size_t)(cols * ldd));
            for (int64_t i = 0; i < rows * lds; i++)
                src[i] = (real)i;
            for (int64_t i = 0; i < cols * ldd; i++)
                dst[i] = -1;
            kn->transpose(rows, cols, src, lds, dst, ldd);
            for (int64_t j = 0; j < cols; j++)
                for (int64_t i = 0; i < ldd; i++)
                    ck_assert(dst[j * ldd + i] == (i < rows ? src[i * lds + j] : -1));
            free(src), free(dst);
        }
    }
}
END_TEST

START_TEST(dispatch_follows_the_level)
{
    int cpu = linattn_i_cpu_isa();
    for (int level = 0; level < LINATTN_ISA_COUNT; level++) {
        int set = linattn_i_isa_force(level);
        ck_assert_int_eq(set, level < cpu ? level : cpu);
        ck_assert_int_eq(linattn_i_isa(), set);
        const XI(kern) *want = XI(kern_of)(set);
        if (want)
            ck_assert_ptr_eq(XI(kern_now)(), want);
        ck_assert_str_eq(XI(kern_now)()->name, linattn_i_isa_name(set));
    }
    /* back to the default: the CPU's level, capped by LINATTN_ISA when it
     * names a lower one (isa_paths.sh runs this suite so) */
    linattn_i_isa_force(-1);
    int cap = linattn_i_isa_parse(getenv("LINATTN_ISA"));
    ck_assert_int_eq(linattn_i_isa(), cap >= 0 && cap < cpu ? cap : cpu);
}
END_TEST

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
    /* every build's kernels, and 2^18 long-double normals: seconds each,
     * more under the sanitizers on a shared machine */
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, portable_exp);
    tcase_add_test(tc, every_build_exp);
    tcase_add_test(tc, every_build_row_stats);
    tcase_add_test(tc, every_build_mm);
    tcase_add_test(tc, every_build_small_loops);
    tcase_add_test(tc, every_build_step_widths);
    tcase_add_test(tc, every_build_trimm);
    tcase_add_test(tc, every_build_nonfinite_flags);
    tcase_add_test(tc, every_build_transpose);
    tcase_add_test(tc, dispatch_follows_the_level);
#ifndef TEST_SINGLE
    tcase_add_test(tc, philox_known_answers);
    tcase_add_test(tc, normals_match_long_double_box_muller);
    tcase_add_test(tc, rng_doc_vectors);
#endif
    suite_add_tcase(s, tc);
    return run_suite(s);
}
