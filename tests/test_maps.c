/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_maps.c -- the kernelized feature maps (FAVOR+, two-sided FAVOR+,
 * random Fourier, Taylor, caller-supplied), their W and their
 * stabilization, compiled once per precision.
 *
 * Independent computations throughout: the features against their
 * formulas evaluated by plain loops in long double from the plan's W;
 * W against the generator's numbers (linattn_rng_normal) and LAPACK-free
 * checks (orthogonality, the triangular factor of the sign-fixed QR);
 * attention in every path against a long double reference built from
 * feature rows; unbiasedness against exp(x.y) with a confidence interval.
 */
#include <stdio.h>
#include <lapacke.h>
#include "testutil.h"
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
#include <cblas.h>
#endif

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

/* A map under test: a built-in one (act 0) or a custom activation. */
typedef struct {
    int map, act;
    const char *name;
} mapcase;

static const mapcase cases[] = {
    {LINATTN_MAP_FAVOR, 0, "favor"},
    {LINATTN_MAP_FAVOR_HYP, 0, "favor-hyp"},
    {LINATTN_MAP_TRIG, 0, "trig"},
    {LINATTN_MAP_TAYLOR, 0, "taylor"},
    {LINATTN_MAP_CUSTOM, LINATTN_ACT_EXP, "custom-exp"},
    {LINATTN_MAP_CUSTOM, LINATTN_ACT_RELU, "custom-relu"},
    {LINATTN_MAP_CUSTOM, LINATTN_ACT_ELU1, "custom-elu1"},
    {LINATTN_MAP_CUSTOM, LINATTN_ACT_HEDGEHOG, "hedgehog"},
};
#define NCASES ((int)(sizeof cases / sizeof *cases))

/* A custom map's W (rows x d, row major) and b: fixed pseudo-random
 * values; b = 1 keeps ReLU features mostly positive. */
static void custom_wb(int64_t rows, int64_t d, real *w, real *b)
{
    uint64_t s = 99;
    for (int64_t i = 0; i < rows * d; i++)
        w[i] = (real)(test_uniform(&s) - 0.5);
    for (int64_t i = 0; i < rows; i++)
        b[i] = (real)(0.5 + 0.5 * test_uniform(&s));
}

/* A plan for case c (custom maps: m = 2d features, W given column major
 * so that the copy from that layout is exercised too).  o may be NULL. */
static P(plan) *plan_for(const mapcase *c, int64_t d, int64_t e,
                         const linattn_opts *o)
{
    linattn_opts opts;
    if (o)
        opts = *o;
    else
        linattn_opts_init(&opts);
    if (c->map == LINATTN_MAP_TRIG)
        opts.denom = LINATTN_DENOM_NONZERO; /* signed features */
    P(plan) *p = NULL;
    if (c->map != LINATTN_MAP_CUSTOM) {
        ck_assert_int_eq(P(plan_create)(&p, c->map, d, e, &opts), 0);
        return p;
    }
    int64_t m = 2 * d, rows = c->act == LINATTN_ACT_HEDGEHOG ? m / 2 : m;
    real *w = malloc((size_t)(rows * d) * sizeof(real));
    real *wc = malloc((size_t)(rows * d) * sizeof(real));
    real *b = malloc((size_t)rows * sizeof(real));
    custom_wb(rows, d, w, b);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t t = 0; t < d; t++)
            wc[i + t * rows] = w[i * d + t];
    ck_assert_int_eq(P(plan_create_custom)(&p, c->act, d, m, e, COL, wc, rows,
                                           b, &opts), 0);
    free(w), free(wc), free(b);
    return p;
}

/* What a plan needs to be evaluated by plain loops: W (long double), b,
 * the input scale. */
typedef struct {
    int map, act;
    int64_t d, m, rows;
    long double s, *w, *b;
} refmap;

static refmap ref_of(const mapcase *c, P(plan) *p, long double s)
{
    refmap r = {c->map, c->act, 0, 0, 0, s, NULL, NULL};
    P(plan_dims)(p, &r.d, &r.m, NULL);
    ck_assert_int_eq(P(plan_weights)(p, ROW, NULL, 0, &r.rows), 0);
    if (r.rows) {
        real *w = malloc((size_t)(r.rows * r.d) * sizeof(real));
        ck_assert_int_eq(P(plan_weights)(p, ROW, w, r.d, NULL), 0);
        r.w = malloc((size_t)(r.rows * r.d) * sizeof(long double));
        for (int64_t i = 0; i < r.rows * r.d; i++)
            r.w[i] = w[i];
        free(w);
    }
    if (c->map == LINATTN_MAP_CUSTOM) {
        real *w = malloc((size_t)(r.rows * r.d) * sizeof(real));
        real *b = malloc((size_t)r.rows * sizeof(real));
        custom_wb(r.rows, r.d, w, b);
        r.b = malloc((size_t)r.rows * sizeof(long double));
        for (int64_t i = 0; i < r.rows; i++)
            r.b[i] = b[i];
        free(w), free(b);
    }
    return r;
}

static void ref_free(refmap *r)
{
    free(r->w), free(r->b);
}

/* The default input scale of the softmax-approximating maps. */
static long double default_scale(int map, int64_t d)
{
    return map == LINATTN_MAP_CUSTOM ? 1 : 1 / sqrtl(sqrtl((long double)d));
}

/* phi(x) by its formula (doc/maps.md), in long double. */
static void ref_features(const refmap *r, const long double *x,
                         long double *phi)
{
    int64_t d = r->d, m = r->m, h = r->rows;
    long double xs[64], u[512], c = 0;
    for (int64_t t = 0; t < d; t++) {
        xs[t] = r->s * x[t];
        c += xs[t] * xs[t] / 2;
    }
    for (int64_t j = 0; j < h; j++) {
        u[j] = r->b ? r->b[j] : 0;
        for (int64_t t = 0; t < d; t++)
            u[j] += r->w[j * d + t] * xs[t];
    }
    switch (r->map) {
    case LINATTN_MAP_FAVOR:
        for (int64_t j = 0; j < m; j++)
            phi[j] = expl(u[j] - c) / sqrtl((long double)m);
        return;
    case LINATTN_MAP_FAVOR_HYP:
        for (int64_t j = 0; j < h; j++) {
            phi[j] = expl(u[j] - c) / sqrtl((long double)m);
            phi[h + j] = expl(-u[j] - c) / sqrtl((long double)m);
        }
        return;
    case LINATTN_MAP_TRIG:
        for (int64_t j = 0; j < h; j++) {
            phi[j] = sinl(u[j]) * expl(c) / sqrtl((long double)h);
            phi[h + j] = cosl(u[j]) * expl(c) / sqrtl((long double)h);
        }
        return;
    case LINATTN_MAP_TAYLOR: {
        int64_t k = 0;
        phi[k++] = 1;
        for (int64_t t = 0; t < d; t++)
            phi[k++] = xs[t];
        for (int64_t a = 0; a < d; a++) {
            phi[k++] = xs[a] * xs[a] / sqrtl(2);
            for (int64_t b = a + 1; b < d; b++)
                phi[k++] = xs[a] * xs[b];
        }
        return;
    }
    default:
        break;
    }
    switch (r->act) {
    case LINATTN_ACT_EXP:
        for (int64_t j = 0; j < m; j++)
            phi[j] = expl(u[j]);
        return;
    case LINATTN_ACT_RELU:
        for (int64_t j = 0; j < m; j++)
            phi[j] = u[j] > 0 ? u[j] : 0;
        return;
    case LINATTN_ACT_ELU1:
        for (int64_t j = 0; j < m; j++)
            phi[j] = u[j] > 0 ? u[j] + 1 : expl(u[j]);
        return;
    default: { /* Hedgehog: softmax over [u, -u] */
        long double sum = 0;
        for (int64_t j = 0; j < h; j++) {
            phi[j] = expl(u[j]);
            phi[h + j] = expl(-u[j]);
            sum += phi[j] + phi[h + j];
        }
        for (int64_t j = 0; j < m; j++)
            phi[j] /= sum;
    }
    }
}

/* Row i of a test matrix in long double. */
static void row_of(const tmat *x, int64_t i, long double *out)
{
    for (int64_t t = 0; t < x->cols; t++)
        out[t] = *tmat_at(x, i, t);
}

/* The library's features of every row of x, as long double rows (n x m). */
static long double *lib_features(P(plan) *p, const tmat *x, int64_t m)
{
    tmat f = tmat_like(x, x->rows, m, 1);
    ck_assert_int_eq(P(features)(p, x->layout, x->rows, x->a, x->ld, f.a, f.ld), 0);
    ck_assert(tmat_padding_intact(&f));
    long double *out = malloc((size_t)(x->rows * m + 1) * sizeof *out);
    for (int64_t i = 0; i < x->rows; i++)
        for (int64_t j = 0; j < m; j++)
            out[i * m + j] = *tmat_at(&f, i, j);
    tmat_free(&f);
    return out;
}

/* features() equals the formula, both layouts, padded leading dimensions;
 * for the custom maps also with an input scale. */
START_TEST(features_match_formula)
{
    const mapcase *c = &cases[_i % NCASES];
    int layout = _i / NCASES ? COL : ROW;
    int64_t n = 7, d = 5, m;
    uint64_t seed = 31 + (uint64_t)_i;
    tmat x = tmat_rand(layout, n, d, 2, -1, 1, &seed);
    for (int scaled = 0; scaled < 2; scaled++) {
        linattn_opts o;
        linattn_opts_init(&o);
        o.input_scale = scaled ? 0.7 : 0;
        o.seed = 5;
        P(plan) *p = plan_for(c, d, 3, &o);
        P(plan_dims)(p, NULL, &m, NULL);
        refmap r = ref_of(c, p, scaled ? 0.7L : default_scale(c->map, d));
        long double *f = lib_features(p, &x, m), want[512], xi[8];
        for (int64_t i = 0; i < n; i++) {
            row_of(&x, i, xi);
            ref_features(&r, xi, want);
            long double big = 0;
            for (int64_t j = 0; j < m; j++)
                big = fabsl(want[j]) > big ? fabsl(want[j]) : big;
            for (int64_t j = 0; j < m; j++)
                ck_assert_msg(fabsl(f[i * m + j] - want[j]) <= 40 * TOL * big,
                              "%s %s layout %d row %lld feature %lld: %Lg vs %Lg",
                              PREC, c->name, layout, (long long)i, (long long)j,
                              f[i * m + j], want[j]);
        }
        free(f);
        ref_free(&r);
        P(plan_destroy)(p);
    }
    tmat_free(&x);
}
END_TEST

/* plan_weights: row counts per map, both layouts, the caller's W back
 * unchanged, nothing written for maps without W. */
START_TEST(weights_read_back)
{
    int64_t d = 3, rows = -1;
    linattn_opts o;
    linattn_opts_init(&o);
    o.m = 10;
    P(plan) *p;
    const int maps[3] = {LINATTN_MAP_FAVOR, LINATTN_MAP_FAVOR_HYP,
                         LINATTN_MAP_TRIG};
    const int64_t want[3] = {10, 5, 5};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(P(plan_create)(&p, maps[i], d, 2, &o), 0);
        real wr[30], wc[30 + 7];
        ck_assert_int_eq(P(plan_weights)(p, ROW, wr, d, &rows), 0);
        ck_assert_int_eq(rows, want[i]);
        for (int j = 0; j < 37; j++)
            wc[j] = -555;
        ck_assert_int_eq(P(plan_weights)(p, COL, wc, rows + 1, NULL), 0);
        for (int64_t r = 0; r < rows; r++) {
            for (int64_t t = 0; t < d; t++)
                ck_assert(wc[r + t * (rows + 1)] == wr[r * d + t]);
            ck_assert(r + 1 < rows || wc[rows] == -555); /* padding */
        }
        P(plan_destroy)(p);
    }
    /* custom: W and b as given; Hedgehog has m / 2 rows */
    real w[12], b[4];
    custom_wb(4, d, w, b);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_HEDGEHOG, d, 8, 2,
                                           ROW, w, d, b, NULL), 0);
    real back[12];
    ck_assert_int_eq(P(plan_weights)(p, ROW, back, d, &rows), 0);
    ck_assert_int_eq(rows, 4);
    ck_assert(memcmp(w, back, sizeof w) == 0);
    P(plan_destroy)(p);
    /* no W: rows = 0 and nothing written */
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_TAYLOR, d, 2, NULL), 0);
    back[0] = -555;
    ck_assert_int_eq(P(plan_weights)(p, ROW, back, 1, &rows), 0);
    ck_assert(rows == 0 && back[0] == -555);
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    ck_assert_int_eq(m, 1 + d + d * (d + 1) / 2);
    P(plan_destroy)(p);
}
END_TEST

/* W of a plan as bytes (rows x d, row major). */
static real *weights_of(int map, int64_t d, int64_t m, int draw, uint64_t seed,
                        int64_t *rows)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.m = m;
    o.draw = draw;
    o.seed = seed;
    P(plan) *p;
    ck_assert_int_eq(P(plan_create)(&p, map, d, 2, &o), 0);
    ck_assert_int_eq(P(plan_weights)(p, ROW, NULL, 0, rows), 0);
    real *w = malloc((size_t)(*rows * d) * sizeof(real));
    ck_assert_int_eq(P(plan_weights)(p, ROW, w, d, NULL), 0);
    P(plan_destroy)(p);
    return w;
}

#ifndef TEST_SINGLE
/* The orthogonal draws, in double: each block's rows orthogonal to 1e-12
 * (the last block truncated: m = 15, d = 6 gives blocks of 6, 6, 3);
 * row norms chi(d) from the norm stream, or sqrt(d); Q's sign fixed so
 * that R = Q^T G is upper triangular with a positive diagonal, G the
 * Gaussian block from the generator (which checks the layout of the
 * generator's numbers in G); iid rows the generator's numbers exactly. */
START_TEST(orthogonal_blocks)
{
    const int64_t d = 6, m = 15;
    const uint64_t seed = 2024;
    for (int draw = LINATTN_DRAW_ORTHO; draw <= LINATTN_DRAW_IID; draw++) {
        int64_t rows;
        double *w = weights_of(LINATTN_MAP_FAVOR, d, m, draw, seed, &rows), g[36], v[6];
        ck_assert_int_eq(rows, m);
        if (draw == LINATTN_DRAW_IID) {
            double z[15 * 6];
            linattn_rng_normal(seed, 0, 0, m * d, z);
            ck_assert(memcmp(w, z, sizeof z) == 0);
            free(w);
            continue;
        }
        /* norms, then the unit rows */
        for (int64_t r = 0; r < m; r++) {
            long double want = sqrtl((long double)d), nn = 0;
            if (draw == LINATTN_DRAW_ORTHO) {
                linattn_rng_normal(seed, 1, (uint64_t)(r * d), d, v);
                want = 0;
                for (int t = 0; t < d; t++)
                    want += (long double)v[t] * v[t];
                want = sqrtl(want);
            }
            for (int t = 0; t < d; t++)
                nn += (long double)w[r * d + t] * w[r * d + t];
            ck_assert(fabsl(sqrtl(nn) - want) <= 1e-13L * want);
            for (int t = 0; t < d; t++)
                w[r * d + t] /= (double)sqrtl(nn);
        }
        for (int64_t b = 0; b * d < m; b++) {
            int64_t take = m - b * d < d ? m - b * d : d;
            const double *q = w + b * d * d; /* row j of the block = q_j */
            for (int64_t i = 0; i < take; i++)
                for (int64_t j = 0; j < take; j++) {
                    long double dot = 0;
                    for (int t = 0; t < d; t++)
                        dot += (long double)q[i * d + t] * q[j * d + t];
                    ck_assert(fabsl(dot - (i == j)) <= 1e-12L);
                }
            /* R = Q^T G, G column major: column j of G is g_j */
            linattn_rng_normal(seed, 0, (uint64_t)(b * d * d), d * d, g);
            for (int64_t i = 0; i < take; i++)
                for (int64_t j = 0; j < take; j++) {
                    long double rij = 0;
                    for (int t = 0; t < d; t++)
                        rij += (long double)q[i * d + t] * g[t + j * d];
                    if (i > j)
                        ck_assert(fabsl(rij) <= 1e-12L);
                    else if (i == j)
                        ck_assert(rij > 0.01L);
                }
            /* against LAPACK's QR of the same block, sign-fixed */
            double tau[6], ql[36];
            memcpy(ql, g, sizeof ql);
            ck_assert_int_eq(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, 6, 6, ql, 6, tau), 0);
            double sgn[6];
            for (int j = 0; j < d; j++)
                sgn[j] = ql[j + j * d] < 0 ? -1 : 1;
            ck_assert_int_eq(LAPACKE_dorgqr(LAPACK_COL_MAJOR, 6, 6, 6, ql, 6, tau), 0);
            for (int64_t j = 0; j < take; j++)
                for (int t = 0; t < d; t++)
                    ck_assert(fabs(q[j * d + t] - sgn[j] * ql[t + j * d]) <= 1e-13);
        }
        free(w);
    }
    /* The draw's arithmetic is fixed-order IEEE double: these bits (the
     * values doc/rng.md lists) on every platform and BLAS. */
    int64_t rows;
    double *w = weights_of(LINATTN_MAP_FAVOR, d, m, LINATTN_DRAW_ORTHO_FIXED, seed, &rows);
    ck_assert(w[0] == 0x1.11fbafebc84bfp+0 && w[7] == 0x1.41320909fb4d4p+0);
    ck_assert(w[41] == -0x1.70e81bd32f02bp-6 && w[89] == 0x1.360eb16adc8ccp+0);
    free(w);
}
END_TEST
#endif

#ifdef TEST_SINGLE
/* A float plan's W is the double plan's W rounded. */
START_TEST(float_w_is_rounded_double)
{
    for (int draw = LINATTN_DRAW_ORTHO; draw <= LINATTN_DRAW_IID; draw++) {
        linattn_opts o;
        linattn_opts_init(&o);
        o.seed = 77;
        o.draw = draw;
        linattn_s_plan *ps;
        linattn_d_plan *pd;
        ck_assert_int_eq(linattn_s_plan_create(&ps, LINATTN_MAP_FAVOR_HYP, 7, 2, &o), 0);
        ck_assert_int_eq(linattn_d_plan_create(&pd, LINATTN_MAP_FAVOR_HYP, 7, 2, &o), 0);
        float ws[14 * 7];
        double wd[14 * 7];
        int64_t rows;
        ck_assert_int_eq(linattn_s_plan_weights(ps, ROW, ws, 7, &rows), 0);
        ck_assert_int_eq(linattn_d_plan_weights(pd, ROW, wd, 7, NULL), 0);
        ck_assert_int_eq(rows, 14);
        for (int i = 0; i < 14 * 7; i++)
            ck_assert(ws[i] == (float)wd[i]);
        linattn_s_plan_destroy(ps);
        linattn_d_plan_destroy(pd);
    }
}
END_TEST
#endif

/* The same seed gives the same W bit for bit: twice, at 1, 2 and 4
 * threads (OpenMP and OpenBLAS), and for the two-sided map, whose m / 2
 * rows are the one-sided map's first rows; another seed another W. */
START_TEST(w_reproducible)
{
    const int64_t d = 64, m = 256;
    int64_t rows;
#ifdef _OPENMP
    int saved = omp_get_max_threads();
#endif
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    int blas_saved = openblas_get_num_threads();
#endif
    real *ref = weights_of(LINATTN_MAP_FAVOR, d, m, LINATTN_DRAW_ORTHO, 9, &rows);
    ck_assert_int_eq(rows, m);
    for (int threads = 1; threads <= 4; threads *= 2) {
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
        openblas_set_num_threads(threads);
#endif
        real *w = weights_of(LINATTN_MAP_FAVOR, d, m, LINATTN_DRAW_ORTHO, 9, &rows);
        ck_assert(memcmp(w, ref, (size_t)(m * d) * sizeof(real)) == 0);
        free(w);
    }
#ifdef _OPENMP
    omp_set_num_threads(saved);
#endif
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    openblas_set_num_threads(blas_saved);
#endif
    real *hyp = weights_of(LINATTN_MAP_FAVOR_HYP, d, m, LINATTN_DRAW_ORTHO, 9, &rows);
    ck_assert_int_eq(rows, m / 2);
    ck_assert(memcmp(hyp, ref, (size_t)(rows * d) * sizeof(real)) == 0);
    real *other = weights_of(LINATTN_MAP_FAVOR, d, m, LINATTN_DRAW_ORTHO, 10, &rows);
    int64_t same = 0;
    for (int64_t i = 0; i < m * d; i++)
        same += other[i] == ref[i];
    ck_assert_int_lt(same, 10);
    free(ref), free(hyp), free(other);
}
END_TEST

/* Unbiasedness: over N fixed seeds, the mean of phi(x).phi(y) lies within
 * z = 4.5 standard errors of the kernel exp(x.y / sqrt(d)).  The seeds
 * are fixed, so the test is deterministic; a correct estimator would
 * fall outside with probability 7e-6 for one seed set (normal tail), and
 * the interval is checked to be narrow (5% of the kernel) so that a
 * missing factor, a wrong scale or a biased draw cannot hide in it. */
START_TEST(random_maps_unbiased)
{
    static const struct {
        int map, draw;
    } est[] = {{LINATTN_MAP_FAVOR, LINATTN_DRAW_ORTHO},
               {LINATTN_MAP_FAVOR, LINATTN_DRAW_IID},
               {LINATTN_MAP_FAVOR_HYP, LINATTN_DRAW_ORTHO},
               {LINATTN_MAP_TRIG, LINATTN_DRAW_ORTHO},
               {LINATTN_MAP_TRIG, LINATTN_DRAW_IID}};
    const int64_t d = 4, m = 8;
    const int N = 4000;
    real xy[8];
    uint64_t s = 8;
    for (int i = 0; i < 8; i++)
        xy[i] = (real)(1.2 * test_uniform(&s) - 0.6);
    long double dot = 0;
    for (int t = 0; t < d; t++)
        dot += (long double)xy[t] * xy[d + t];
    long double kernel = expl(dot / 2); /* sqrt(d) = 2 */
    for (size_t k = 0; k < sizeof est / sizeof *est; k++) {
        long double sum = 0, sum2 = 0;
        for (int seed = 1; seed <= N; seed++) {
            linattn_opts o;
            linattn_opts_init(&o);
            o.m = m;
            o.seed = (uint64_t)seed * 7919;
            o.draw = est[k].draw;
            P(plan) *p;
            ck_assert_int_eq(P(plan_create)(&p, est[k].map, d, 1, &o), 0);
            real f[16];
            ck_assert_int_eq(P(features)(p, ROW, 2, xy, d, f, m), 0);
            long double v = 0;
            for (int j = 0; j < m; j++)
                v += (long double)f[j] * f[m + j];
            sum += v, sum2 += v * v;
            P(plan_destroy)(p);
        }
        long double mean = sum / N, var = (sum2 - N * mean * mean) / (N - 1);
        long double se = sqrtl(var / N);
        printf("%s map %d draw %d: mean %.5Lf, kernel %.5Lf, se %.5Lf\n", PREC,
               est[k].map, est[k].draw, mean, kernel, se);
        ck_assert(se < 0.05L * kernel);
        ck_assert_msg(fabsl(mean - kernel) <= 4.5L * se, "map %d draw %d: %Lg vs %Lg",
                      est[k].map, est[k].draw, mean, kernel);
    }
}
END_TEST

/* Taylor: phi(q).phi(k) = 1 + t + t^2 / 2 with t = q.k / sqrt(d) (and
 * t = q.k at input_scale 1), to rounding, for small and large inputs. */
START_TEST(taylor_kernel_closed_form)
{
    const int64_t d = 7, m = 1 + d + d * (d + 1) / 2;
    for (int scaled = 0; scaled < 2; scaled++) {
        linattn_opts o;
        linattn_opts_init(&o);
        o.input_scale = scaled ? 1 : 0;
        P(plan) *p;
        ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_TAYLOR, d, 1, &o), 0);
        uint64_t s = 17;
        for (int amp = 1; amp <= 100; amp *= 10) {
            tmat x = tmat_rand(ROW, 20, d, 0, -amp, amp, &s);
            long double *f = lib_features(p, &x, m);
            for (int i = 0; i + 1 < 20; i++) {
                long double t = 0, k = 0, nq = 0, nk = 0;
                for (int c = 0; c < d; c++) {
                    long double a = *tmat_at(&x, i, c), b = *tmat_at(&x, i + 1, c);
                    t += a * b, nq += a * a, nk += b * b;
                }
                long double sc = scaled ? 1 : 1 / sqrtl((long double)d);
                t *= sc;
                for (int j = 0; j < m; j++)
                    k += f[i * m + j] * f[(i + 1) * m + j];
                long double want = 1 + t + t * t / 2;
                long double size = 1 + sc * sqrtl(nq * nk);
                ck_assert_msg(fabsl(k - want) <= 20 * TOL * size * size,
                              "%s taylor amp %d: %Lg vs %Lg", PREC, amp, k, want);
                ck_assert(k > 0);
            }
            free(f);
            tmat_free(&x);
        }
        P(plan_destroy)(p);
    }
}
END_TEST

typedef struct {
    int64_t n, nk, d, e, block, chunk, pad;
} mshape;

static const mshape mshapes[] = {
    {1, 1, 2, 1, 0, 0, 0},
    {23, 17, 4, 3, 7, 5, 3},
    {130, 129, 5, 6, 16, 0, 1},
};
#define NMSHAPES ((int)(sizeof mshapes / sizeof *mshapes))

/* Every map in every path (attention, naive, causal, naive causal,
 * streaming one token at a time) against the long double reference built
 * from the feature rows (which features_match_formula checks). */
START_TEST(paths_match_reference)
{
    const mapcase *c = &cases[_i % NCASES];
    const mshape *sh = &mshapes[(_i / NCASES) % NMSHAPES];
    int layout = _i / (NCASES * NMSHAPES) ? COL : ROW;
    uint64_t seed = 700 + (uint64_t)_i;
    double amp = c->map == LINATTN_MAP_TRIG ? 0.4 : 1;
    int64_t n = sh->n, nk = sh->nk, d = sh->d, e = sh->e, m;
    tmat q = tmat_rand(layout, n, d, sh->pad, -amp, amp, &seed);
    tmat k = tmat_rand(layout, nk, d, sh->pad, -amp, amp, &seed);
    tmat v = tmat_rand(layout, nk, e, sh->pad, -1, 1, &seed);
    tmat kc = tmat_rand(layout, n, d, sh->pad, -amp, amp, &seed); /* causal */
    tmat vc = tmat_rand(layout, n, e, sh->pad, -1, 1, &seed);
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = sh->block;
    o.chunk = sh->chunk;
    o.seed = 3;
    P(plan) *p = plan_for(c, d, e, &o);
    P(plan_dims)(p, NULL, &m, NULL);
    long double *fq = lib_features(p, &q, m), *fk = lib_features(p, &k, m);
    long double *fkc = lib_features(p, &kc, m);
    long double *ref = malloc((size_t)(n * e) * sizeof *ref);
    long double *refc = malloc((size_t)(n * e) * sizeof *refc);
    ref_linear_phi(fq, fk, m, 0, &v, n, ref);
    ref_linear_phi(fq, fkc, m, 1, &vc, n, refc);
    double tol = 100 * TOL;
    for (int path = 0; path < 5; path++) {
        tmat out = tmat_like(&q, n, e, sh->pad);
        int st;
        if (path == 0)
            st = P(attention)(p, layout, n, nk, q.a, q.ld, k.a, k.ld, v.a, v.ld, out.a, out.ld, NULL);
        else if (path == 1)
            st = P(naive)(p, layout, n, nk, q.a, q.ld, k.a, k.ld, v.a, v.ld, out.a, out.ld, NULL);
        else if (path == 2)
            st = P(causal)(p, layout, n, q.a, q.ld, kc.a, kc.ld, vc.a, vc.ld, out.a, out.ld, NULL);
        else if (path == 3)
            st = P(naive_causal)(p, layout, n, q.a, q.ld, kc.a, kc.ld, vc.a, vc.ld, out.a, out.ld, NULL);
        else {
            P(state) *s;
            ck_assert_int_eq(P(state_create)(&s, p), 0);
            st = 0;
            for (int64_t i = 0; i < n && !st; i++) {
                st = P(state_update)(s, layout, 1, tmat_at(&kc, i, 0), kc.ld,
                                     tmat_at(&vc, i, 0), vc.ld);
                if (!st)
                    st = P(state_query)(s, layout, 1, tmat_at(&q, i, 0), q.ld,
                                        tmat_at(&out, i, 0), out.ld, NULL, 0,
                                        NULL, NULL);
            }
            P(state_destroy)(s);
        }
        ck_assert_int_eq(st, 0);
        double err = rel_err(&out, path < 2 ? ref : refc);
        ck_assert_msg(err < tol, "%s %s layout %d n %lld path %d: %g", PREC,
                      c->name, layout, (long long)n, path, err);
        ck_assert(tmat_padding_intact(&out));
        tmat_free(&out);
    }
    free(fq), free(fk), free(fkc), free(ref), free(refc);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&kc), tmat_free(&vc);
}
END_TEST

/* Rows of large norm: random directions, norms uniform in
 * [0.6, 1] BIG_NORM. */
#ifdef TEST_SINGLE
#define BIG_NORM 20.0
#define BIG_TOL 1e-3
#define CUSTOM_SCALE 12.0
#else
#define BIG_NORM 50.0
#define BIG_TOL 1e-9
#define CUSTOM_SCALE 30.0
#endif
static tmat big_rows(int64_t n, int64_t d, uint64_t *seed)
{
    tmat x = tmat_rand(ROW, n, d, 0, -1, 1, seed);
    for (int64_t i = 0; i < n; i++) {
        double nn = 0, want = BIG_NORM * (0.6 + 0.4 * test_uniform(seed));
        for (int64_t t = 0; t < d; t++)
            nn += (double)x.a[i * d + t] * x.a[i * d + t];
        for (int64_t t = 0; t < d; t++)
            x.a[i * d + t] = (real)(x.a[i * d + t] * want / sqrt(nn));
    }
    return x;
}

/* Inputs whose exponentials leave the floating-point range without the
 * shifts (|x| up to 50 in double, 20 in float): the unshifted features()
 * overflow or underflow at input scale 1, yet every path returns finite
 * outputs, and the factored paths agree with the quadratic ones. */
START_TEST(large_norms_stay_finite)
{
    static const mapcase big[] = {
        {LINATTN_MAP_FAVOR, 0, "favor"},
        {LINATTN_MAP_FAVOR_HYP, 0, "favor-hyp"},
        {LINATTN_MAP_CUSTOM, LINATTN_ACT_EXP, "custom-exp"},
        {LINATTN_MAP_TRIG, 0, "trig"}};
    const mapcase *c = &big[_i % 4];
    int unit_scale = _i / 4;
    int64_t n = 70, d = 4, e = 3, m;
    uint64_t seed = 55 + (uint64_t)_i;
    tmat q = big_rows(n, d, &seed), k = big_rows(n, d, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 16;
    o.chunk = 8;
    o.input_scale = unit_scale ? 1 : 0; /* 0: the default d^(-1/4) */
    if (c->map == LINATTN_MAP_CUSTOM) /* exp(u), |u| up to 1500 (240) */
        o.input_scale = unit_scale ? CUSTOM_SCALE : 1;
    P(plan) *p = plan_for(c, d, e, &o);
    P(plan_dims)(p, NULL, &m, NULL);
    /* without shifts the features leave the range */
    real *f = malloc((size_t)(n * m) * sizeof(real));
    ck_assert_int_eq(P(features)(p, ROW, n, k.a, d, f, m), 0);
    int64_t out_of_range = 0;
    for (int64_t i = 0; i < n * m; i++)
        out_of_range += f[i] == 0 || isinf(f[i]);
    if (unit_scale)
        ck_assert_int_gt(out_of_range, 0);
    free(f);
    tmat outs[5];
    for (int path = 0; path < 5; path++) {
        outs[path] = tmat_like(&q, n, e, 0);
        real *out = outs[path].a;
        int st;
        if (path == 0)
            st = P(attention)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, out, e, NULL);
        else if (path == 1)
            st = P(naive)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, out, e, NULL);
        else if (path == 2)
            st = P(causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, out, e, NULL);
        else if (path == 3)
            st = P(naive_causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, out, e, NULL);
        else {
            P(state) *s;
            ck_assert_int_eq(P(state_create)(&s, p), 0);
            st = 0;
            for (int64_t i = 0; i < n && !st; i++) {
                st = P(state_update)(s, ROW, 1, k.a + i * d, d, v.a + i * e, e);
                if (!st)
                    st = P(state_query)(s, ROW, 1, q.a + i * d, d, out + i * e, e,
                                        NULL, 0, NULL, NULL);
            }
            P(state_destroy)(s);
        }
        ck_assert_msg(st == 0, "%s %s scale %d path %d: status %d", PREC,
                      c->name, unit_scale, path, st);
        for (int64_t i = 0; i < n * e; i++)
            ck_assert_msg(isfinite(out[i]), "%s %s path %d: %g", PREC, c->name,
                          path, (double)out[i]);
    }
    /* TRIG's signed estimates at these norms are noise (normalizers
     * cancel): finiteness only.  The others: factored = quadratic. */
    if (c->map != LINATTN_MAP_TRIG) {
        double e1 = rel_diff(&outs[0], &outs[1]), e2 = rel_diff(&outs[2], &outs[3]);
        double e3 = rel_diff(&outs[4], &outs[2]);
        ck_assert_msg(e1 < BIG_TOL && e2 < BIG_TOL && e3 < BIG_TOL,
                      "%s %s scale %d: %g %g %g", PREC, c->name, unit_scale, e1,
                      e2, e3);
    }
    for (int path = 0; path < 5; path++)
        tmat_free(&outs[path]);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
}
END_TEST

/* Causality bit for bit with the shifted maps on inputs of large norm:
 * changing every token after p (queries and keys to far larger norms, so
 * that later shifts grow; values to Inf and NaN) leaves outputs 0..p
 * bit-identical, p inside a chunk; split over threads or not; the
 * quadratic baseline too. */
START_TEST(causal_prefix_bit_identical)
{
    static const mapcase sh[] = {{LINATTN_MAP_FAVOR, 0, "favor"},
                                 {LINATTN_MAP_FAVOR_HYP, 0, "favor-hyp"},
                                 {LINATTN_MAP_TRIG, 0, "trig"},
                                 {LINATTN_MAP_CUSTOM, LINATTN_ACT_EXP, "custom-exp"}};
    const mapcase *c = &sh[_i % 4];
    int64_t block = _i / 4 ? 16 : 0; /* 16: split over threads */
    int64_t n = 45, d = 4, e = 3, p0 = 20;
    uint64_t seed = 81;
    tmat q = big_rows(n, d, &seed), k = big_rows(n, d, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat c1 = tmat_like(&q, n, e, 0), c2 = tmat_like(&q, n, e, 0);
    tmat n1 = tmat_like(&q, n, e, 0), n2 = tmat_like(&q, n, e, 0);
    linattn_opts o;
    linattn_opts_init(&o);
    o.chunk = 8;
    o.block = block;
    o.input_scale = 1;
    P(plan) *p = plan_for(c, d, e, &o);
    ck_assert_int_eq(P(causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, c1.a, e, NULL), 0);
    ck_assert_int_eq(P(naive_causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, n1.a, e, NULL), 0);
    for (int64_t i = (p0 + 1) * d; i < n * d; i++)
        q.a[i] = (real)(q.a[i] * 3 + 5), k.a[i] = (real)(k.a[i] * 3 - 5);
    for (int64_t i = (p0 + 1) * e; i < n * e; i++)
        v.a[i] = i % 3 ? (real)INFINITY : (real)NAN;
    P(naive_causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, n2.a, e, NULL);
    P(causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, c2.a, e, NULL);
    for (int64_t i = 0; i < (p0 + 1) * e; i++) {
        ck_assert_msg(c1.a[i] == c2.a[i], "%s %s block %lld: entry %lld", PREC,
                      c->name, (long long)block, (long long)i);
        ck_assert(n1.a[i] == n2.a[i]);
        ck_assert(isfinite(c1.a[i]));
    }
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
    tmat_free(&c1), tmat_free(&c2), tmat_free(&n1), tmat_free(&n2);
}
END_TEST

/* The exponent of a key row by plain loops: max_j (s W k)_j - s^2|k|^2/2. */
static long double key_exponent(const refmap *r, const real *x)
{
    long double c = 0, mx = -INFINITY;
    for (int64_t t = 0; t < r->d; t++)
        c += r->s * r->s * (long double)x[t] * x[t] / 2;
    for (int64_t j = 0; j < r->rows; j++) {
        long double u = 0;
        for (int64_t t = 0; t < r->d; t++)
            u += r->w[j * r->d + t] * r->s * x[t];
        mx = u > mx ? u : mx;
    }
    return mx - c;
}

/* States with different shifts: the shift is the largest key exponent
 * (plain loops); merging in either order equals the state of the
 * concatenation; copy keeps the shift, reset clears it; S and z are the
 * true sums times exp(-shift). */
START_TEST(shifted_states_merge)
{
    int64_t n1 = 9, n2 = 14, d = 3, e = 2, m;
    uint64_t seed = 5;
    tmat k = tmat_rand(ROW, n1 + n2, d, 0, -0.5, 0.5, &seed);
    tmat v = tmat_rand(ROW, n1 + n2, e, 0, -1, 1, &seed);
    tmat q = tmat_rand(ROW, 6, d, 0, -2, 2, &seed);
    for (int64_t i = 0; i < n1 * d; i++)
        k.a[i] *= 12; /* large norms: the first part's exponents are lower */
    const mapcase c = {LINATTN_MAP_FAVOR, 0, "favor"};
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 4;
    P(plan) *p = plan_for(&c, d, e, &o);
    P(plan_dims)(p, NULL, &m, NULL);
    refmap r = ref_of(&c, p, default_scale(c.map, d));
    P(state) *a, *b, *all, *cp;
    P(state_create)(&a, p), P(state_create)(&b, p), P(state_create)(&all, p);
    P(state_create)(&cp, p);
    P(state_update)(a, ROW, n1, k.a, d, v.a, e);
    P(state_update)(b, ROW, n2, k.a + n1 * d, d, v.a + n1 * e, e);
    P(state_update)(all, ROW, n1 + n2, k.a, d, v.a, e);
    double sa, sb, sall;
    P(state_shift)(a, &sa), P(state_shift)(b, &sb), P(state_shift)(all, &sall);
    long double wa = -INFINITY, wb = -INFINITY;
    for (int64_t i = 0; i < n1 + n2; i++) {
        long double x = key_exponent(&r, k.a + i * d);
        if (i < n1)
            wa = x > wa ? x : wa;
        else
            wb = x > wb ? x : wb;
    }
    ck_assert(fabsl(sa - wa) <= 100 * TOL * (1 + fabsl(wa)));
    ck_assert(fabsl(sb - wb) <= 100 * TOL * (1 + fabsl(wb)));
    ck_assert(sb > sa && sall == sb);
    /* S and z times exp(shift) = the sums of features() */
    long double *fk = lib_features(p, &k, m);
    real z[64];
    P(state_get)(all, ROW, NULL, 0, z, NULL);
    for (int64_t j = 0; j < m; j++) {
        long double want = 0;
        for (int64_t i = 0; i < n1 + n2; i++)
            want += fk[i * m + j];
        ck_assert(fabsl(z[j] * expl(sall) - want) <= 100 * TOL * want);
    }
    tmat o1 = tmat_like(&q, 6, e, 0), o2 = tmat_like(&q, 6, e, 0);
    tmat o3 = tmat_like(&q, 6, e, 0);
    P(state_query)(all, ROW, 6, q.a, d, o1.a, e, NULL, 0, NULL, NULL);
    ck_assert_int_eq(P(state_copy)(cp, b), 0);
    ck_assert_int_eq(P(state_merge)(cp, a), 0); /* larger shift first */
    ck_assert_int_eq(P(state_merge)(a, b), 0);  /* smaller shift first */
    P(state_query)(a, ROW, 6, q.a, d, o2.a, e, NULL, 0, NULL, NULL);
    P(state_query)(cp, ROW, 6, q.a, d, o3.a, e, NULL, 0, NULL, NULL);
    ck_assert(rel_diff(&o2, &o1) < 10 * TOL && rel_diff(&o3, &o1) < 10 * TOL);
    double s1;
    P(state_shift)(a, &s1);
    ck_assert(s1 == sb);
    ck_assert_int_eq(P(state_reset)(a), 0);
    P(state_shift)(a, &s1);
    ck_assert(s1 == 0);
    free(fk);
    ref_free(&r);
    P(state_destroy)(a), P(state_destroy)(b), P(state_destroy)(all);
    P(state_destroy)(cp);
    P(plan_destroy)(p);
    tmat_free(&k), tmat_free(&v), tmat_free(&q);
    tmat_free(&o1), tmat_free(&o2), tmat_free(&o3);
}
END_TEST

/* A checkpoint of a shifted state restores its shift: the restored state
 * answers bit for bit as the saved one, and keeps absorbing keys as it
 * would have; a plan with another W refuses the checkpoint. */
START_TEST(checkpoint_keeps_shift)
{
    int64_t n = 40, d = 4, e = 3;
    uint64_t seed = 61;
    tmat k = big_rows(n, d, &seed), q = big_rows(5, d, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    const mapcase c = {LINATTN_MAP_FAVOR, 0, "favor"};
    linattn_opts o;
    linattn_opts_init(&o);
    o.seed = 12;
    P(plan) *p = plan_for(&c, d, e, &o), *other;
    o.seed = 13;
    other = plan_for(&c, d, e, &o);
    P(state) *a, *b, *x;
    P(state_create)(&a, p), P(state_create)(&b, p), P(state_create)(&x, other);
    P(state_update)(a, ROW, n / 2, k.a, d, v.a, e);
    int64_t bytes;
    ck_assert_int_eq(P(state_save_size)(a, &bytes), 0);
    unsigned char *buf = malloc((size_t)bytes);
    ck_assert_int_eq(P(state_save)(a, buf, bytes, NULL), 0);
    ck_assert_int_eq(P(state_load)(b, buf, bytes), 0);
    ck_assert_int_eq(P(state_load)(x, buf, bytes), LINATTN_EMISMATCH);
    double sa, sb;
    P(state_shift)(a, &sa), P(state_shift)(b, &sb);
    ck_assert(sa == sb && sa != 0);
    P(state_update)(a, ROW, n / 2, k.a + n / 2 * d, d, v.a + n / 2 * e, e);
    P(state_update)(b, ROW, n / 2, k.a + n / 2 * d, d, v.a + n / 2 * e, e);
    real oa[15], ob[15];
    ck_assert_int_eq(P(state_query)(a, ROW, 5, q.a, d, oa, e, NULL, 0, NULL, NULL), 0);
    ck_assert_int_eq(P(state_query)(b, ROW, 5, q.a, d, ob, e, NULL, 0, NULL, NULL), 0);
    ck_assert(memcmp(oa, ob, sizeof oa) == 0);
    /* first keys with a NaN exponent, or with all features underflowing
     * (finite inputs of norm 1e20 in float, 1e200 in double): the state
     * holds NaN or zeros, its shift stays finite, and its checkpoint
     * loads back */
    real huge = sizeof(real) == sizeof(float) ? (real)1e20 : (real)1e200;
    real kbad[2][4] = {{NAN, 1, 0, 0}, {huge, huge, huge, huge}};
    for (int bad = 0; bad < 2; bad++) {
        P(state_reset)(a);
        ck_assert_int_eq(P(state_update)(a, ROW, 1, kbad[bad], d, v.a, e), 0);
        P(state_shift)(a, &sa);
        ck_assert(isfinite(sa));
        ck_assert_int_eq(P(state_save)(a, buf, bytes, NULL), 0);
        ck_assert_int_eq(P(state_load)(b, buf, bytes), 0);
        P(state_update)(a, ROW, n / 2, k.a, d, v.a, e);
        P(state_shift)(a, &sa);
        ck_assert(isfinite(sa));
    }
    free(buf);
    P(state_destroy)(a), P(state_destroy)(b), P(state_destroy)(x);
    P(plan_destroy)(p), P(plan_destroy)(other);
    tmat_free(&k), tmat_free(&q), tmat_free(&v);
}
END_TEST

/* States merge only between plans of the same map: equal (map, d, m, e,
 * draw, seed, input_scale, W, b) merge; any difference refuses (-2). */
START_TEST(merge_needs_same_map)
{
    int64_t d = 3, e = 2;
    linattn_opts o;
    linattn_opts_init(&o);
    o.seed = 1;
    P(plan) *base, *other;
    P(state) *s1, *s2;
    ck_assert_int_eq(P(plan_create)(&base, LINATTN_MAP_FAVOR, d, e, &o), 0);
    P(state_create)(&s1, base);
    for (int variant = 0; variant < 5; variant++) {
        linattn_opts v = o;
        int want = -2;
        if (variant == 0)
            want = 0; /* another plan object, same everything */
        else if (variant == 1)
            v.seed = 2;
        else if (variant == 2)
            v.draw = LINATTN_DRAW_IID;
        else if (variant == 3)
            v.input_scale = 0.5;
        else
            v.m = 2 * d;
        ck_assert_int_eq(P(plan_create)(&other, LINATTN_MAP_FAVOR, d, e, &v), 0);
        P(state_create)(&s2, other);
        ck_assert_int_eq(P(state_merge)(s1, s2), want);
        ck_assert_int_eq(P(state_copy)(s1, s2), want);
        P(state_destroy)(s2);
        P(plan_destroy)(other);
    }
    /* custom maps: W and b count */
    real w[6] = {1, 2, 3, 4, 5, 6}, b[2] = {0, 1};
    P(plan) *c1, *c2, *c3;
    P(state) *t1, *t2, *t3;
    P(plan_create_custom)(&c1, LINATTN_ACT_EXP, d, 2, e, ROW, w, d, b, NULL);
    P(plan_create_custom)(&c2, LINATTN_ACT_EXP, d, 2, e, ROW, w, d, b, NULL);
    w[5] = 7;
    P(plan_create_custom)(&c3, LINATTN_ACT_EXP, d, 2, e, ROW, w, d, b, NULL);
    P(state_create)(&t1, c1), P(state_create)(&t2, c2), P(state_create)(&t3, c3);
    ck_assert_int_eq(P(state_merge)(t1, t2), 0);
    ck_assert_int_eq(P(state_merge)(t1, t3), -2);
    P(state_destroy)(t1), P(state_destroy)(t2), P(state_destroy)(t3);
    P(plan_destroy)(c1), P(plan_destroy)(c2), P(plan_destroy)(c3);
    P(state_destroy)(s1);
    P(plan_destroy)(base);
}
END_TEST

#ifdef _OPENMP
/* One thread and two agree to rounding, in the non-causal and causal
 * paths, on sizes the library splits. */
START_TEST(thread_counts_agree_maps)
{
    int64_t n = 300, d = 5, e = 3;
    for (int ci = 0; ci < NCASES; ci++) {
        uint64_t seed = 91;
        double amp = cases[ci].map == LINATTN_MAP_TRIG ? 0.4 : 3;
        tmat q = tmat_rand(ROW, n, d, 0, -amp, amp, &seed);
        tmat k = tmat_rand(ROW, n, d, 0, -amp, amp, &seed);
        tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
        linattn_opts o;
        linattn_opts_init(&o);
        o.block = 8;
        o.chunk = 8;
        P(plan) *p = plan_for(&cases[ci], d, e, &o);
        tmat a[2], c[2];
        int saved = omp_get_max_threads();
        for (int t = 0; t < 2; t++) {
            omp_set_num_threads(t + 1);
            a[t] = tmat_like(&q, n, e, 0), c[t] = tmat_like(&q, n, e, 0);
            ck_assert_int_eq(P(attention)(p, ROW, n, n, q.a, d, k.a, d, v.a, e,
                                          a[t].a, e, NULL), 0);
            ck_assert_int_eq(P(causal)(p, ROW, n, q.a, d, k.a, d, v.a, e,
                                       c[t].a, e, NULL), 0);
        }
        omp_set_num_threads(saved);
        ck_assert_msg(rel_diff(&a[0], &a[1]) < 100 * TOL &&
                      rel_diff(&c[0], &c[1]) < 100 * TOL, "%s %s: %g %g", PREC,
                      cases[ci].name, rel_diff(&a[0], &a[1]),
                      rel_diff(&c[0], &c[1]));
        for (int t = 0; t < 2; t++)
            tmat_free(&a[t]), tmat_free(&c[t]);
        P(plan_destroy)(p);
        tmat_free(&q), tmat_free(&k), tmat_free(&v);
    }
}
END_TEST
#endif

static Suite *suite(void)
{
    Suite *s = suite_create("maps " PREC);
    TCase *tc = tcase_create("maps");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, features_match_formula, 0, 2 * NCASES);
    tcase_add_test(tc, weights_read_back);
#ifndef TEST_SINGLE
    tcase_add_test(tc, orthogonal_blocks);
#else
    tcase_add_test(tc, float_w_is_rounded_double);
#endif
    tcase_add_test(tc, w_reproducible);
    tcase_add_test(tc, random_maps_unbiased);
    tcase_add_test(tc, taylor_kernel_closed_form);
    tcase_add_loop_test(tc, paths_match_reference, 0, 2 * NCASES * NMSHAPES);
    tcase_add_loop_test(tc, large_norms_stay_finite, 0, 8);
    tcase_add_loop_test(tc, causal_prefix_bit_identical, 0, 8);
    tcase_add_test(tc, shifted_states_merge);
    tcase_add_test(tc, merge_needs_same_map);
    tcase_add_test(tc, checkpoint_keeps_shift);
#ifdef _OPENMP
    tcase_add_test(tc, thread_counts_agree_maps);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
