/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_approx.c -- linattn_*_approx_error, the errors of kernelized
 * attention against softmax attention, compiled once per precision.
 *
 * Against independent computations: one key (every attention returns v
 * exactly, so the output and matrix errors are exactly 0), a two-key case
 * worked by hand, and random cases against plain long-double loops over
 * the whole attention and kernel matrices; then every error path with the
 * statistics untouched.
 */
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR
#define BIG ((int64_t)1 << 40) /* beyond every BLAS integer */
#define HUGE_LD (INT64_MAX / 2)

static P(plan) *make_plan(int map, int64_t d, int64_t e, int64_t block,
                          double eps, int check_finite)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = block;
    o.eps = eps;
    o.check_finite = check_finite;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* Statistics holding a byte pattern, to see that a refused call wrote
 * nothing. */
static linattn_approx_stats poisoned(void)
{
    linattn_approx_stats s;
    memset(&s, 0x5a, sizeof s);
    return s;
}

static int untouched(const linattn_approx_stats *s)
{
    linattn_approx_stats p = poisoned();
    return memcmp(s, &p, sizeof p) == 0;
}

/* Relative closeness, exact zero only matching zero. */
static int close_to(double got, long double want, double tol)
{
    if (want == 0)
        return got == 0;
    return fabsl((long double)got - want) <= tol * fabsl(want);
}

/* Features by plain loops in long double, rows of x into an x->rows x m
 * array: the elementwise maps (testutil's ref_phi, m = d), or FAVOR+ from
 * the plan's W (m x d, row major) and input scale s:
 * exp(W s x - s^2 |x|^2 / 2) / sqrt(m). */
static long double *ref_features(int map, const real *w, int64_t m,
                                 long double s, const tmat *x)
{
    int64_t n = x->rows, d = x->cols;
    long double *f = malloc((size_t)(n * m) * sizeof *f);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            if (map != LINATTN_MAP_FAVOR) {
                f[i * m + j] = ref_phi(map, *tmat_at(x, i, j));
                continue;
            }
            long double u = 0, sq = 0;
            for (int64_t t = 0; t < d; t++) {
                long double xt = s * *tmat_at(x, i, t);
                u += w[j * d + t] * xt;
                sq += xt * xt;
            }
            f[i * m + j] = expl(u - sq / 2) / sqrtl((long double)m);
        }
    return f;
}

/* The statistics by plain loops in long double from the feature rows
 * fq, fk (m wide): A = fq fk^T, P = softmax(scale Q K^T), outputs
 * A V / (A 1 + eps) and P V, masked to j <= i when causal. */
static linattn_approx_stats ref_stats(const long double *fq,
                                      const long double *fk, int64_t m,
                                      long double eps, long double scale,
                                      int causal, const tmat *q,
                                      const tmat *k, const tmat *v)
{
    int64_t nq = q->rows, nk = k->rows, d = q->cols, e = v->cols;
    long double od2 = 0, oref2 = 0, omax = 0, ad2 = 0, aref2 = 0, kd2 = 0,
                kref2 = 0;
    long double *a = malloc((size_t)nk * sizeof *a);
    long double *p = malloc((size_t)nk * sizeof *p);
    int64_t pairs = 0;
    for (int64_t i = 0; i < nq; i++) {
        int64_t lim = causal ? i + 1 : nk;
        long double den = eps, psum = 0, mx = -INFINITY;
        for (int64_t j = 0; j < lim; j++) {
            long double dot = 0, s = 0;
            for (int64_t t = 0; t < m; t++)
                dot += fq[i * m + t] * fk[j * m + t];
            for (int64_t t = 0; t < d; t++)
                s += (long double)*tmat_at(q, i, t) * *tmat_at(k, j, t);
            a[j] = dot;
            p[j] = scale * s;
            den += dot;
            kd2 += (dot - expl(p[j])) * (dot - expl(p[j]));
            kref2 += expl(p[j]) * expl(p[j]);
            mx = p[j] > mx ? p[j] : mx;
            pairs++;
        }
        for (int64_t j = 0; j < lim; j++) {
            p[j] = expl(p[j] - mx);
            psum += p[j];
        }
        for (int64_t j = 0; j < lim; j++) {
            p[j] /= psum;
            a[j] /= den;
            ad2 += (a[j] - p[j]) * (a[j] - p[j]);
            aref2 += p[j] * p[j];
        }
        for (int64_t c = 0; c < e; c++) {
            long double oa = 0, oe = 0;
            for (int64_t j = 0; j < lim; j++) {
                oa += a[j] * *tmat_at(v, j, c);
                oe += p[j] * *tmat_at(v, j, c);
            }
            od2 += (oa - oe) * (oa - oe);
            oref2 += oe * oe;
            omax = fabsl(oa - oe) > omax ? fabsl(oa - oe) : omax;
        }
    }
    free(a);
    free(p);
    linattn_approx_stats r;
    memset(&r, 0, sizeof r);
    r.out_rel_fro = (double)sqrtl(od2 / oref2);
    r.out_mse = (double)(od2 / (nq * e));
    r.out_max_abs = (double)omax;
    r.attn_rel_fro = (double)sqrtl(ad2 / aref2);
    r.kernel_mse = (double)(kd2 / pairs);
    r.kernel_rel_fro = (double)sqrtl(kd2 / kref2);
    r.pairs = pairs;
    return r;
}

/* ref_stats for an elementwise map. */
static linattn_approx_stats ref_stats_map(int map, long double eps,
                                          long double scale, int causal,
                                          const tmat *q, const tmat *k,
                                          const tmat *v)
{
    int64_t d = q->cols;
    long double *fq = ref_features(map, NULL, d, 1, q);
    long double *fk = ref_features(map, NULL, d, 1, k);
    linattn_approx_stats r = ref_stats(fq, fk, d, eps, scale, causal, q, k, v);
    free(fq);
    free(fk);
    return r;
}

static void expect_stats(const linattn_approx_stats *got,
                         const linattn_approx_stats *want, double tol)
{
    ck_assert_msg(close_to(got->out_rel_fro, want->out_rel_fro, tol),
                  "out_rel_fro %g, want %g", got->out_rel_fro, want->out_rel_fro);
    ck_assert_msg(close_to(got->out_mse, want->out_mse, tol),
                  "out_mse %g, want %g", got->out_mse, want->out_mse);
    ck_assert_msg(close_to(got->out_max_abs, want->out_max_abs, tol),
                  "out_max_abs %g, want %g", got->out_max_abs, want->out_max_abs);
    ck_assert_msg(close_to(got->attn_rel_fro, want->attn_rel_fro, tol),
                  "attn_rel_fro %g, want %g", got->attn_rel_fro, want->attn_rel_fro);
    ck_assert_msg(close_to(got->kernel_mse, want->kernel_mse, tol),
                  "kernel_mse %g, want %g", got->kernel_mse, want->kernel_mse);
    ck_assert_msg(close_to(got->kernel_rel_fro, want->kernel_rel_fro, tol),
                  "kernel_rel_fro %g, want %g", got->kernel_rel_fro,
                  want->kernel_rel_fro);
    ck_assert_int_eq(got->pairs, want->pairs);
    for (int i = 0; i < 5; i++)
        ck_assert(got->reserved[i] == 0);
}

/* One key: every attention returns v itself (its single weight is x / x
 * = 1), so the output and matrix errors are exactly 0; the kernel error is
 * phi(q).phi(k) against exp(scale q.k), from the loops. */
START_TEST(one_key_is_exact)
{
    const int maps[3] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                         LINATTN_MAP_RELU};
    int layout = _i % 2 ? COL : ROW, map = maps[_i / 2];
    uint64_t seed = 11 + (uint64_t)_i;
    tmat q = tmat_rand(layout, 5, 3, 2, 0.1, 1.0, &seed);
    tmat k = tmat_rand(layout, 1, 3, 1, 0.1, 1.0, &seed);
    tmat v = tmat_rand(layout, 1, 2, 3, -1.0, 1.0, &seed);
    P(plan) *p = make_plan(map, 3, 2, 2, 0, 0);
    linattn_approx_stats st;
    ck_assert_int_eq(P(approx_error)(p, layout, 5, 1, q.a, q.ld, k.a, k.ld,
                                     v.a, v.ld, 0.7, 0, &st), 0);
    ck_assert(st.out_rel_fro == 0 && st.out_mse == 0 && st.out_max_abs == 0);
    ck_assert(st.attn_rel_fro == 0);
    linattn_approx_stats want = ref_stats_map(map, 0, 0.7L, 0, &q, &k, &v);
    ck_assert(want.kernel_mse > 0.01); /* the case is not trivial */
    expect_stats(&st, &want, 10 * TOL);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
}
END_TEST

/* Worked by hand.  Identity map, d = e = 1, scale = ln 3, queries 2 and 1,
 * keys 1 and 0, values 1 and 0.  Kernel rows A = (2, 0) and (1, 0), so
 * Ah = (1, 0) and the approximate outputs are 1 and 1.  Softmax weights
 * 3^(2 q k): row 0 (9, 1) / 10, row 1 (3, 1) / 4, outputs 9/10 and 3/4.
 * Exact kernel exp(ln 3 q k): row 0 (9, 1), row 1 (3, 1).
 *   out:    diffs 1/10, 1/4; exact 9/10, 3/4
 *   matrix: Ah - P = (1/10, -1/10), (1/4, -1/4); |P|^2 = 82/100, 10/16
 *   kernel: A - K = (-7, -1), (-2, -1); |K|^2 = 82, 10
 * Causal, row 0 sees key 0 alone: both outputs 1, Ah = P = 1, kernel diff
 * -7 against 9; row 1 as above. */
START_TEST(two_keys_by_hand)
{
    int causal = _i;
    real q[2] = {2, 1}, k[2] = {1, 0}, v[2] = {1, 0};
    P(plan) *p = make_plan(LINATTN_MAP_IDENTITY, 1, 1, 0, 0, 0);
    linattn_approx_stats st, want;
    ck_assert_int_eq(P(approx_error)(p, ROW, 2, 2, q, 1, k, 1, v, 1, log(3.0),
                                     causal, &st), 0);
    memset(&want, 0, sizeof want);
    if (!causal) {
        long double od2 = 0.01L + 0.0625L, oref2 = 0.81L + 0.5625L;
        want.out_rel_fro = (double)sqrtl(od2 / oref2);
        want.out_mse = (double)(od2 / 2);
        want.out_max_abs = 0.25;
        want.attn_rel_fro = (double)sqrtl((0.02L + 0.125L) / (0.82L + 0.625L));
        want.kernel_mse = (49 + 1 + 4 + 1) / 4.0;
        want.kernel_rel_fro = sqrt(55.0 / 92.0);
        want.pairs = 4;
    } else {
        want.out_rel_fro = 0.2; /* sqrt((1/16) / (1 + 9/16)) */
        want.out_mse = 1.0 / 32;
        want.out_max_abs = 0.25;
        want.attn_rel_fro = sqrt(1.0 / 13); /* (1/8) / (1 + 10/16) */
        want.kernel_mse = (49 + 4 + 1) / 3.0;
        want.kernel_rel_fro = sqrt(54.0 / 91.0);
        want.pairs = 3;
    }
    expect_stats(&st, &want, 10 * TOL);
    P(plan_destroy)(p);
}
END_TEST

/* Random inputs against the loops: 2 maps x 2 layouts x causal or not,
 * blocks of 3 rows over 7 or 9 queries (a partial last block), padded
 * leading dimensions, d != e, an eps in the normalizer. */
START_TEST(against_plain_loops)
{
    int map = _i & 1 ? LINATTN_MAP_RELU : LINATTN_MAP_ELU1;
    int layout = _i & 2 ? COL : ROW, causal = (_i & 4) != 0;
    int64_t nq = causal ? 9 : 7, nk = causal ? 9 : 11, d = 4, e = 3;
    double eps = map == LINATTN_MAP_RELU ? 0.05 : 0;
    uint64_t seed = 101 + (uint64_t)_i;
    tmat q = tmat_rand(layout, nq, d, 1, -1.0, 1.5, &seed);
    tmat k = tmat_rand(layout, nk, d, 2, -1.0, 1.5, &seed);
    tmat v = tmat_rand(layout, nk, e, 3, -2.0, 2.0, &seed);
    P(plan) *p = make_plan(map, d, e, 3, eps, 0);
    linattn_approx_stats st;
    ck_assert_int_eq(P(approx_error)(p, layout, nq, nk, q.a, q.ld, k.a, k.ld,
                                     v.a, v.ld, 0.5, causal, &st), 0);
    linattn_approx_stats want = ref_stats_map(map, eps, 0.5L, causal, &q,
                                                 &k, &v);
    ck_assert(want.out_rel_fro > 0.01 && want.attn_rel_fro > 0.01);
    expect_stats(&st, &want, 10 * TOL);
    /* the inputs are only read */
    ck_assert(tmat_padding_intact(&q) && tmat_padding_intact(&k) &&
              tmat_padding_intact(&v));
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
}
END_TEST

/* A random map against the loops: FAVOR+ with the plan's W (read back
 * with plan_weights), the default input scale d^(-1/4) and softmax scale
 * 1/sqrt(d), so that the kernel statistics compare estimates of
 * exp(q.k / sqrt(d)) with it. */
START_TEST(favor_against_plain_loops)
{
    int causal = _i;
    int64_t n = 6, nk = causal ? 6 : 9, d = 4, e = 3, m = 8, rows = 0;
    uint64_t seed = 7 + (uint64_t)_i;
    tmat q = tmat_rand(ROW, n, d, 0, -1.0, 1.0, &seed);
    tmat k = tmat_rand(ROW, nk, d, 1, -1.0, 1.0, &seed);
    tmat v = tmat_rand(ROW, nk, e, 0, -1.0, 1.0, &seed);
    linattn_opts o;
    linattn_opts_init(&o);
    o.m = m;
    o.seed = 5;
    o.block = 4;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, d, e, &o), 0);
    real w[32];
    ck_assert_int_eq(P(plan_weights)(p, ROW, w, d, &rows), 0);
    ck_assert_int_eq(rows, m);
    long double s = powl(d, -0.25L);
    long double *fq = ref_features(LINATTN_MAP_FAVOR, w, m, s, &q);
    long double *fk = ref_features(LINATTN_MAP_FAVOR, w, m, s, &k);
    linattn_approx_stats st;
    ck_assert_int_eq(P(approx_error)(p, ROW, n, nk, q.a, q.ld, k.a, k.ld, v.a,
                                     v.ld, 0.5, causal, &st), 0);
    linattn_approx_stats want = ref_stats(fq, fk, m, 0, 0.5L, causal, &q, &k, &v);
    ck_assert(want.kernel_mse > 1e-4 && want.out_rel_fro > 1e-3);
    expect_stats(&st, &want, 10 * TOL);
    free(fq), free(fk);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
}
END_TEST

/* (phi(x).phi(y) - exp(x.y))^2 for one query x and one key y (kernel_mse
 * with nq = nk = 1 and input_scale 1, so the kernel is exp(x.y)). */
static double squared_error(int map, int draw, int64_t d, int64_t m,
                            uint64_t seed, const real *x, const real *y)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.m = m;
    o.seed = seed;
    o.draw = draw;
    o.input_scale = 1;
    o.denom = LINATTN_DENOM_NONZERO; /* trigonometric features are signed */
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, 1, &o), 0);
    real v = 1;
    linattn_approx_stats st;
    ck_assert_int_eq(P(approx_error)(p, ROW, 1, 1, x, d, y, d, &v, 1, 1.0, 0,
                                     &st), 0);
    P(plan_destroy)(p);
    return st.kernel_mse;
}

/* Lemma 2 of Choromanski et al. 2021 for the trigonometric estimator with
 * iid W: MSE = (1/(2 m')) exp(|x+y|^2) SM^-2 (1 - exp(-|x-y|^2))^2 with
 * m' = m/2 vectors; at |x| = |y| = 1, x.y = 0 that is
 * e^2 (1 - e^-2)^2 / m.  The terms are bounded (|e cos|), so the sample
 * standard error of the mean squared error is reliable; 16000 fixed seeds,
 * within 4.5 of it.  And the two exact cases of the lemma: positive
 * features at y = -x, trigonometric at y = x, rounding error only. */
START_TEST(lemma2_mse)
{
    const int64_t d = 4, m = 16, draws = 16000;
    real x[4] = {1, 0, 0, 0}, y[4] = {0, 1, 0, 0}, minus[4] = {-1, 0, 0, 0};
    long double sum = 0, sum2 = 0;
    for (int64_t s = 1; s <= draws; s++) {
        long double e2 = squared_error(LINATTN_MAP_TRIG, LINATTN_DRAW_IID, d, m,
                                       (uint64_t)s, x, y);
        sum += e2;
        sum2 += e2 * e2;
    }
    long double mean = sum / draws;
    long double se = sqrtl((sum2 / draws - mean * mean) / (draws - 1));
    long double theory = expl(2) * powl(1 - expl(-2), 2) / m;
    ck_assert_msg(fabsl(mean - theory) <= 4.5L * se,
                  "trig MSE %Lg, theory %Lg, se %Lg", mean, theory, se);
    ck_assert(se < 0.02L * theory); /* the check has power: 4.5 se < 10% */
    for (uint64_t s = 1; s <= 5; s++) {
        double tol = 100 * TOL; /* relative RMS error */
        ck_assert(squared_error(LINATTN_MAP_FAVOR, LINATTN_DRAW_IID, d, m, s, x,
                                minus) <= tol * tol * exp(-2.0));
        ck_assert(squared_error(LINATTN_MAP_TRIG, LINATTN_DRAW_IID, d, m, s, x,
                                x) <= tol * tol * exp(2.0));
    }
}
END_TEST

/* exp(scale q.k) beyond the double range: the kernel errors are +Inf, not
 * NaN, and the rest is exact (one key). */
START_TEST(kernel_overflow_is_infinite)
{
    real q[1] = {40}, k[1] = {20}, v[1] = {3};
    P(plan) *p = make_plan(LINATTN_MAP_IDENTITY, 1, 1, 0, 0, 0);
    linattn_approx_stats st;
    ck_assert_int_eq(P(approx_error)(p, ROW, 1, 1, q, 1, k, 1, v, 1, 1.0, 0,
                                     &st), 0);
    ck_assert(isinf(st.kernel_mse) && st.kernel_mse > 0);
    ck_assert(isinf(st.kernel_rel_fro) && st.kernel_rel_fro > 0);
    ck_assert(st.out_rel_fro == 0 && st.attn_rel_fro == 0);
    P(plan_destroy)(p);
}
END_TEST

/* NaN in V reaches the output statistics (propagation, the default);
 * a plan with check_finite refuses it instead. */
START_TEST(nan_values)
{
    real q[2] = {1, 2}, k[2] = {1, 2}, v[2] = {NAN, 1};
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 1, 1, 0, 0, 0);
    linattn_approx_stats st;
    ck_assert_int_eq(P(approx_error)(p, ROW, 2, 2, q, 1, k, 1, v, 1, 1.0, 1,
                                     &st), 0);
    ck_assert(isnan(st.out_rel_fro) && isnan(st.out_mse) &&
              isnan(st.out_max_abs));
    ck_assert(isfinite(st.attn_rel_fro) && isfinite(st.kernel_mse));
    P(plan_destroy)(p);
    p = make_plan(LINATTN_MAP_ELU1, 1, 1, 0, 0, 1);
    st = poisoned();
    ck_assert_int_eq(P(approx_error)(p, ROW, 2, 2, q, 1, k, 1, v, 1, 1.0, 1,
                                     &st), LINATTN_ENONFINITE);
    ck_assert(untouched(&st));
    P(plan_destroy)(p);
}
END_TEST

static real qb[64], kb[64], vb[64];

START_TEST(argument_errors)
{
    for (int i = 0; i < 64; i++) {
        qb[i] = (real)(0.1 * (i % 7) + 0.2);
        kb[i] = (real)(0.1 * (i % 5) + 0.3);
        vb[i] = (real)(0.1 * (i % 3) - 0.1);
    }
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 3, 2, 0, 0, 0);
    linattn_approx_stats st = poisoned();
#define CALL(plan, lay, nq, nk, q, ldq, k, ldk, v, ldv, sc, ca, out) \
    P(approx_error)(plan, lay, nq, nk, q, ldq, k, ldk, v, ldv, sc, ca, out)
    ck_assert_int_eq(CALL(NULL, ROW, 2, 3, qb, 3, kb, 3, vb, 2, 1, 0, &st), -1);
    ck_assert_int_eq(CALL(p, 0, 2, 3, qb, 3, kb, 3, vb, 2, 1, 0, &st), -2);
    ck_assert_int_eq(CALL(p, ROW, 0, 3, qb, 3, kb, 3, vb, 2, 1, 0, &st), -3);
    ck_assert_int_eq(CALL(p, ROW, -1, 3, qb, 3, kb, 3, vb, 2, 1, 0, &st), -3);
    ck_assert_int_eq(CALL(p, ROW, 2, 0, qb, 3, kb, 3, vb, 2, 1, 0, &st), -4);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 3, vb, 2, 1, 1, &st), -4);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, NULL, 3, kb, 3, vb, 2, 1, 0, &st), -5);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 2, kb, 3, vb, 2, 1, 0, &st), -6);
    ck_assert_int_eq(CALL(p, COL, 4, 3, qb, 3, kb, 3, vb, 3, 1, 0, &st), -6);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, NULL, 3, vb, 2, 1, 0, &st), -7);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 0, vb, 2, 1, 0, &st), -8);
    ck_assert_int_eq(CALL(p, COL, 2, 5, qb, 2, kb, 4, vb, 5, 1, 0, &st), -8);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 3, NULL, 2, 1, 0, &st), -9);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 3, vb, 1, 1, 0, &st), -10);
    ck_assert_int_eq(CALL(p, COL, 2, 5, qb, 2, kb, 5, vb, 4, 1, 0, &st), -10);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 3, vb, 2, NAN, 0, &st), -11);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 3, vb, 2, -INFINITY, 0, &st), -11);
#ifdef TEST_SINGLE
    /* the scale must be finite in float too */
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 3, vb, 2, 1e39, 0, &st), -11);
#endif
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 3, vb, 2, 1, 2, &st), -12);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 3, vb, 2, 1, -1, &st), -12);
    ck_assert_int_eq(CALL(p, ROW, 2, 3, qb, 3, kb, 3, vb, 2, 1, 0, NULL), -13);
    /* sizes: matrices beyond int64 addressing, keys beyond BLAS */
    ck_assert_int_eq(CALL(p, ROW, 3, 3, qb, HUGE_LD, kb, 3, vb, 2, 1, 0, &st),
                     LINATTN_ESIZE);
    ck_assert_int_eq(CALL(p, ROW, 3, 3, qb, 3, kb, HUGE_LD, vb, 2, 1, 0, &st),
                     LINATTN_ESIZE);
    ck_assert_int_eq(CALL(p, ROW, 3, 3, qb, 3, kb, 3, vb, HUGE_LD, 1, 0, &st),
                     LINATTN_ESIZE);
    ck_assert_int_eq(CALL(p, ROW, 2, BIG, qb, 3, kb, 3, vb, 2, 1, 0, &st),
                     LINATTN_ESIZE);
#undef CALL
    ck_assert(untouched(&st));
    P(plan_destroy)(p);
}
END_TEST

/* A zero normalizer (ReLU features of a negative query), in the second
 * block of rows after a good first one: EDENOM, nothing written. */
START_TEST(bad_normalizer_reported)
{
    real q[6] = {1, 2, 0.5, -1, 3, 1}, k[3] = {1, 2, 3}, v[3] = {1, 2, 3};
    P(plan) *p = make_plan(LINATTN_MAP_RELU, 1, 1, 2, 0, 0);
    linattn_approx_stats st = poisoned();
    ck_assert_int_eq(P(approx_error)(p, ROW, 6, 3, q, 1, k, 1, v, 1, 1.0, 0,
                                     &st), LINATTN_EDENOM);
    ck_assert(untouched(&st));
    P(plan_destroy)(p);
    /* an eps makes the same call succeed */
    p = make_plan(LINATTN_MAP_RELU, 1, 1, 2, 0.25, 0);
    ck_assert_int_eq(P(approx_error)(p, ROW, 6, 3, q, 1, k, 1, v, 1, 1.0, 0,
                                     &st), 0);
    P(plan_destroy)(p);
}
END_TEST

/* Allocation failure under a capped address space: LINATTN_ENOMEM and
 * nothing written.  1024 queries against 4096 keys want two score blocks
 * of 1024 x 4096 entries (32 or 16 MiB each); the cap leaves 8 MiB. */
START_TEST(out_of_memory_reported)
{
    if (!address_cap_allowed())
        return;
    int64_t nq = 1024, nk = 4096;
    real *q = calloc((size_t)nq, sizeof(real)), *k = calloc((size_t)nk, sizeof(real));
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 1, 1, 0, 0, 0);
    cap_address_space(8u << 20);
    linattn_approx_stats st = poisoned();
    ck_assert_int_eq(P(approx_error)(p, ROW, nq, nk, q, 1, k, 1, k, 1, 1.0, 0,
                                     &st), LINATTN_ENOMEM);
    ck_assert(untouched(&st));
    free(q), free(k);
    P(plan_destroy)(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("approx " PREC);
    TCase *tc = tcase_create("approx");
    tcase_add_loop_test(tc, one_key_is_exact, 0, 6);
    tcase_add_loop_test(tc, two_keys_by_hand, 0, 2);
    tcase_add_loop_test(tc, against_plain_loops, 0, 8);
    tcase_add_loop_test(tc, favor_against_plain_loops, 0, 2);
    tcase_add_test(tc, kernel_overflow_is_infinite);
    tcase_add_test(tc, nan_values);
    tcase_add_test(tc, argument_errors);
    tcase_add_test(tc, bad_normalizer_reported);
    tcase_add_test(tc, out_of_memory_reported);
    suite_add_tcase(s, tc);
    /* 16000 plans: seconds under the sanitizers, beyond Check's default */
    TCase *theory = tcase_create("theory");
    tcase_add_test(theory, lemma2_mse);
    tcase_set_timeout(theory, 120);
    suite_add_tcase(s, theory);
    return run_suite(s);
}
