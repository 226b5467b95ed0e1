/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * refmaps.h -- the kernelized feature maps evaluated by their formulas
 * (doc/maps.md) in long double, from a plan's W: the reference of
 * test_maps (features) and test_grad (features and their derivatives).
 * Include after testutil.h.
 */
#ifndef LINATTN_REFMAPS_H
#define LINATTN_REFMAPS_H

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
static inline void custom_wb(int64_t rows, int64_t d, real *w, real *b)
{
    uint64_t s = 99;
    for (int64_t i = 0; i < rows * d; i++)
        w[i] = (real)(test_uniform(&s) - 0.5);
    for (int64_t i = 0; i < rows; i++)
        b[i] = (real)(0.5 + 0.5 * test_uniform(&s));
}

/* A plan for case c (custom maps: m = 2d features, W given column major
 * so that the copy from that layout is exercised too).  o may be NULL. */
static inline P(plan) *plan_for(const mapcase *c, int64_t d, int64_t e,
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

static inline refmap ref_of(const mapcase *c, P(plan) *p, long double s)
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

static inline void ref_free(refmap *r)
{
    free(r->w), free(r->b);
}

/* The default input scale of the softmax-approximating maps. */
static inline long double default_scale(int map, int64_t d)
{
    return map == LINATTN_MAP_CUSTOM ? 1 : 1 / sqrtl(sqrtl((long double)d));
}

/* phi(x) by its formula (doc/maps.md), in long double. */
static inline void ref_features(const refmap *r, const long double *x,
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
/* The maps whose features leave the floating-point range at such norms
 * without the stabilizing shifts. */
static const mapcase big_cases[] = {
    {LINATTN_MAP_FAVOR, 0, "favor"},
    {LINATTN_MAP_FAVOR_HYP, 0, "favor-hyp"},
    {LINATTN_MAP_CUSTOM, LINATTN_ACT_EXP, "custom-exp"},
    {LINATTN_MAP_TRIG, 0, "trig"}};

static inline tmat big_rows(int64_t n, int64_t d, uint64_t *seed)
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

#endif
