/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_grad.c -- gradients for training (doc/gradients.md), compiled once
 * per precision.  Independent computations throughout:
 *
 *   - every map and path against the O(n^2) long double reference of
 *     gradref.h, written from the quadratic formula (1e-12 relative in
 *     double, 1e-5 in float), single and batched calls, both layouts;
 *   - central finite differences of the library's own forward calls
 *     (double only: 1e-6 relative);
 *   - causal invariants bit for bit: dk_j, dv_j do not move when rows
 *     i < j of G, Q, out and den change (to anything, NaN included), dq_i
 *     does not move when every other row and the keys and values j > i
 *     change;
 *   - the batched calls against the single calls problem by problem;
 *     thread counts to rounding; the shifts at large norms.
 */
#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "testutil.h"
#include "refmaps.h"
#include "gradref.h"

/* The small awkward shapes: d != e, nq != nk, blocks and chunks that do
 * not divide the row counts. */
enum { D = 3, E = 2, NQ = 13, NK = 11, NC = 37, BLOCK = 5, CHUNK = 8 };

static linattn_opts small_opts(double eps)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = BLOCK;
    o.chunk = CHUNK;
    o.eps = eps;
    o.seed = 7;
    return o;
}

/* The maps whose features carry stabilizing shifts. */
static int is_shifted(const mapcase *c)
{
    return c->map == LINATTN_MAP_FAVOR || c->map == LINATTN_MAP_FAVOR_HYP ||
           c->map == LINATTN_MAP_TRIG ||
           (c->map == LINATTN_MAP_CUSTOM && c->act == LINATTN_ACT_EXP);
}

/* Inputs for a map: the identity gets positive ones (its normalizers
 * then stay away from zero), TRIG small ones (its estimate stays
 * positive); values and G anywhere in [-1, 1). */
static tmat inputs(const mapcase *c, int layout, int64_t rows, int64_t cols,
                   int64_t pad, uint64_t *s)
{
    if (c->map == LINATTN_MAP_IDENTITY)
        return tmat_rand(layout, rows, cols, pad, 0.2, 1, s);
    if (c->map == LINATTN_MAP_TRIG)
        return tmat_rand(layout, rows, cols, pad, -0.4, 0.4, s);
    tmat x = tmat_rand(layout, rows, cols, pad, -1, 1, s);
    for (int64_t i = 0; c->map == LINATTN_MAP_RELU && i < rows; i++) {
        real *x0 = tmat_at(&x, i, 0); /* a feature > 0 in every row */
        *x0 = (real)(fabs((double)*x0) + 0.1);
    }
    return x;
}

/* One problem's data and the library's results. */
typedef struct {
    tmat q, k, v, g, out, dq, dk, dv;
    real *den, *dw, *db;
    int64_t rows; /* of W */
} problem;

/* A problem whose matrices have leading dimensions their natural ones
 * plus small paddings, or plus pad when pad > 0. */
static problem problem_pad(const mapcase *c, P(plan) *p, int layout,
                           int64_t nq, int64_t nk, uint64_t seed, int64_t pad)
{
    problem x;
    uint64_t s = seed;
    int64_t d, m, e;
    P(plan_dims)(p, &d, &m, &e);
    int64_t p1 = pad ? pad : 1, p2 = pad ? pad : 2, p3 = pad ? pad : 3;
    x.q = inputs(c, layout, nq, d, p1, &s);
    x.k = inputs(c, layout, nk, d, p2, &s);
    x.v = tmat_rand(layout, nk, e, p1, -1, 1, &s);
    x.g = tmat_rand(layout, nq, e, p3, -1, 1, &s);
    x.out = tmat_like(&x.q, nq, e, p1);
    x.dq = tmat_like(&x.q, nq, d, p2);
    x.dk = tmat_like(&x.q, nk, d, p1);
    x.dv = tmat_like(&x.q, nk, e, p2);
    P(plan_weights)(p, ROW, NULL, 0, &x.rows);
    x.den = malloc((size_t)(nq + 1) * sizeof(real));
    x.dw = malloc((size_t)(x.rows * d + 1) * sizeof(real));
    x.db = malloc((size_t)(x.rows + 1) * sizeof(real));
    return x;
}

static problem problem_new(const mapcase *c, P(plan) *p, int layout,
                           int64_t nq, int64_t nk, uint64_t seed)
{
    return problem_pad(c, p, layout, nq, nk, seed, 0);
}

static void problem_free(problem *x)
{
    tmat_free(&x->q), tmat_free(&x->k), tmat_free(&x->v), tmat_free(&x->g);
    tmat_free(&x->out), tmat_free(&x->dq), tmat_free(&x->dk);
    tmat_free(&x->dv);
    free(x->den), free(x->dw), free(x->db);
}

/* The library's forward (out, den) and backward of problem x: dw (row
 * major, ld d) when the map has a W, db when it is custom. */
static int lib_grad(P(plan) *p, const mapcase *c, int causal, problem *x)
{
    int64_t d, bad = -1;
    P(plan_dims)(p, &d, NULL, NULL);
    int layout = x->q.layout, st;
    if (causal)
        st = P(causal_forward)(p, layout, x->q.rows, x->q.a, x->q.ld, x->k.a,
                               x->k.ld, x->v.a, x->v.ld, x->out.a, x->out.ld,
                               x->den, &bad);
    else
        st = P(attention_forward)(p, layout, x->q.rows, x->k.rows, x->q.a,
                                  x->q.ld, x->k.a, x->k.ld, x->v.a, x->v.ld,
                                  x->out.a, x->out.ld, x->den, &bad);
    if (st)
        return st;
    real *dw = x->rows ? x->dw : NULL;
    real *db = c->map == LINATTN_MAP_CUSTOM ? x->db : NULL;
    int lw = layout == COL ? (int)x->rows : (int)d;
    if (causal)
        return P(causal_backward)(p, layout, x->q.rows, x->q.a, x->q.ld, x->k.a,
                                  x->k.ld, x->v.a, x->v.ld, x->out.a,
                                  x->out.ld, x->den, x->g.a, x->g.ld, x->dq.a,
                                  x->dq.ld, x->dk.a, x->dk.ld, x->dv.a,
                                  x->dv.ld, dw, lw > 0 ? lw : 1, db, &bad);
    return P(attention_backward)(p, layout, x->q.rows, x->k.rows, x->q.a,
                                 x->q.ld, x->k.a, x->k.ld, x->v.a, x->v.ld,
                                 x->out.a, x->out.ld, x->den, x->g.a, x->g.ld,
                                 x->dq.a, x->dq.ld, x->dk.a, x->dk.ld,
                                 x->dv.a, x->dv.ld, dw, lw > 0 ? lw : 1, db,
                                 NULL, &bad);
}

/* Library results of x against the reference: the forward's out and den,
 * then the gradients; the largest relative error. */
static double compare(const problem *x, const refgrad *r, const mapcase *c,
                      int64_t d, int shifted)
{
    /* (the shifted maps' den carries the shift factors) */
    double err[7] = {rel_err(&x->out, r->out),
                     shifted ? 0 : rel_err_vec(x->den, 1, 1, x->q.rows, ROW, r->den),
                     rel_err(&x->dq, r->dq), rel_err(&x->dk, r->dk),
                     rel_err(&x->dv, r->dv), 0, 0};
    int lw = x->q.layout == COL ? (int)x->rows : (int)d;
    if (x->rows)
        err[5] = rel_err_vec(x->dw, lw, x->rows, d, x->q.layout, r->dw);
    if (c->map == LINATTN_MAP_CUSTOM)
        err[6] = rel_err_vec(x->db, 1, 1, x->rows, ROW, r->db);
    double worst = 0;
    for (int i = 0; i < 7; i++)
        worst = err[i] > worst ? err[i] : worst;
    return worst;
}

/* Every map, non-causal and causal, both layouts, eps 0 and (for the maps
 * without shifts) eps > 0: library against the reference. */
START_TEST(backward_matches_reference)
{
    for (int mi = 0; mi < NMAPS; mi++)
        for (int causal = 0; causal < 2; causal++)
            for (int layout = ROW; layout <= COL; layout++)
                for (int ke = 0; ke < 3; ke++) {
                    mapcase c = map_case(mi);
                    int shifted = is_shifted(&c), count = ke == 2;
                    if (count && shifted)
                        continue; /* refused for these maps */
                    double eps = ke && !shifted ? 0.25 : 0;
                    linattn_opts o = small_opts(eps);
                    if (count)
                        o.denom = LINATTN_DENOM_COUNT;
                    P(plan) *p = grad_plan(&c, D, E, &o);
                    int64_t nq = causal ? NC : NQ, nk = causal ? NC : NK;
                    problem x = problem_new(&c, p, layout, nq, nk, 11 + mi);
                    int st = lib_grad(p, &c, causal, &x);
                    if (st)
                        printf("%s causal %d layout %d: status %d\n", c.name,
                               causal, layout, st);
                    ck_assert_int_eq(st, 0);
                    refmap r = grad_ref_of(&c, p, D);
                    refgrad g = ref_grad(&r, causal, count, eps, &x.q, &x.k,
                                         &x.v, &x.g);
                    double err = compare(&x, &g, &c, D, shifted);
                    if (err > TOL || getenv("GRAD_VERBOSE"))
                        printf("%s causal %d layout %d eps %g count %d: "
                               "%.3e\n", c.name, causal, layout, eps, count, err);
                    ck_assert(err <= TOL);
                    ck_assert(tmat_padding_intact(&x.dq));
                    ck_assert(tmat_padding_intact(&x.dk));
                    ck_assert(tmat_padding_intact(&x.dv));
                    refgrad_free(&g);
                    ref_free(&r);
                    problem_free(&x);
                    P(plan_destroy)(p);
                }
}
END_TEST

/* Leading dimensions of 600 to 700 (beyond the lowered BLAS limit of
 * check-hard's build, where every matrix must then go through the copy
 * paths): the reference still, for maps with and without W. */
START_TEST(large_leading_dimensions)
{
    static const int which[] = {0, 1, 3, 3 + NCASES - 1}; /* ident, elu, */
    for (int wi = 0; wi < 4; wi++)               /* FAVOR, Hedgehog */
        for (int causal = 0; causal < 2; causal++)
            for (int layout = ROW; layout <= COL; layout++) {
                mapcase c = map_case(which[wi]);
                linattn_opts o = small_opts(0);
                P(plan) *p = grad_plan(&c, D, E, &o);
                int64_t n = causal ? NC : NQ, pad = layout == ROW ? 600 : 700 - n;
                problem x = problem_pad(&c, p, layout, n, causal ? NC : NK, 3, pad);
                ck_assert_int_eq(lib_grad(p, &c, causal, &x), 0);
                refmap r = grad_ref_of(&c, p, D);
                refgrad g = ref_grad(&r, causal, 0, 0, &x.q, &x.k, &x.v, &x.g);
                double err = compare(&x, &g, &c, D, is_shifted(&c));
                ck_assert_msg(err <= TOL, "%s causal %d layout %d: %.3e",
                              c.name, causal, layout, err);
                ck_assert(tmat_padding_intact(&x.dq));
                ck_assert(tmat_padding_intact(&x.dv));
                refgrad_free(&g);
                ref_free(&r);
                problem_free(&x);
                P(plan_destroy)(p);
            }
}
END_TEST

/* The non-causal backward given the keys' state (state_update, as a
 * forward made of state_update and state_query builds it, whose den it
 * takes) gives the same bytes as rebuilding it, for every map, both
 * layouts, a call split over threads. */
START_TEST(backward_with_state)
{
    for (int mi = 0; mi < NMAPS; mi++)
        for (int layout = ROW; layout <= COL; layout++) {
            mapcase c = map_case(mi);
            linattn_opts o = small_opts(0);
            P(plan) *p = grad_plan(&c, D, E, &o);
            problem x = problem_new(&c, p, layout, NQ, NK, 23 + mi);
            problem y = problem_new(&c, p, layout, NQ, NK, 23 + mi);
            P(state) *st;
            ck_assert_int_eq(P(state_create)(&st, p), 0);
            ck_assert_int_eq(P(state_update)(st, layout, NK, x.k.a, x.k.ld,
                                             x.v.a, x.v.ld), 0);
            ck_assert_int_eq(P(state_query)(st, layout, NQ, x.q.a, x.q.ld,
                                            x.out.a, x.out.ld, NULL, 0, x.den,
                                            NULL), 0);
            int64_t d = D, lw = layout == COL ? x.rows : d, bad;
            real *dw = x.rows ? x.dw : NULL, *yw = x.rows ? y.dw : NULL;
            real *db = c.map == LINATTN_MAP_CUSTOM ? x.db : NULL;
            real *yb = c.map == LINATTN_MAP_CUSTOM ? y.db : NULL;
            const P(state) *given[2] = {NULL, st};
            problem *to[2] = {&x, &y};
            for (int t = 0; t < 2; t++)
                ck_assert_int_eq(P(attention_backward)(
                    p, layout, NQ, NK, x.q.a, x.q.ld, x.k.a, x.k.ld, x.v.a,
                    x.v.ld, x.out.a, x.out.ld, x.den, x.g.a, x.g.ld,
                    to[t]->dq.a, to[t]->dq.ld, to[t]->dk.a, to[t]->dk.ld,
                    to[t]->dv.a, to[t]->dv.ld, t ? yw : dw, lw > 0 ? lw : 1,
                    t ? yb : db, given[t], &bad), 0);
            ck_assert(rel_diff(&x.dq, &y.dq) == 0);
            ck_assert(rel_diff(&x.dk, &y.dk) == 0);
            ck_assert(rel_diff(&x.dv, &y.dv) == 0);
            for (int64_t i = 0; i < x.rows * D; i++)
                ck_assert(x.dw[i] == y.dw[i]);
            P(state_destroy)(st);
            problem_free(&x), problem_free(&y);
            P(plan_destroy)(p);
        }
}
END_TEST

/* features_backward against J^T dphi of the formula, dW and db included. */
START_TEST(features_backward_matches_jacobian)
{
    for (int mi = 0; mi < NMAPS; mi++)
        for (int layout = ROW; layout <= COL; layout++) {
            mapcase c = map_case(mi);
            linattn_opts o = small_opts(0);
            P(plan) *p = grad_plan(&c, D, E, &o);
            int64_t m, rows, n = 9;
            P(plan_dims)(p, NULL, &m, NULL);
            P(plan_weights)(p, ROW, NULL, 0, &rows);
            uint64_t s = 5 + mi;
            tmat x = inputs(&c, layout, n, D, 1, &s);
            tmat a = tmat_rand(layout, n, m, 2, -1, 1, &s);
            tmat dx = tmat_like(&x, n, D, 3);
            real dw[64 * 64], db[64];
            int lw = layout == COL ? (int)rows : D;
            int custom = c.map == LINATTN_MAP_CUSTOM;
            ck_assert_int_eq(P(features_backward)(p, layout, n, x.a, x.ld, a.a,
                                                  a.ld, dx.a, dx.ld,
                                                  rows ? dw : NULL, lw > 0 ? lw : 1,
                                                  custom ? db : NULL), 0);
            refmap r = grad_ref_of(&c, p, D);
            long double *la = malloc((size_t)(n * m) * sizeof *la);
            long double *rdx = calloc((size_t)(n * D), sizeof *rdx);
            long double *rdw = calloc((size_t)(rows * D + 1), sizeof *rdw);
            long double *rdb = calloc((size_t)(rows + 1), sizeof *rdb);
            for (int64_t i = 0; i < n; i++)
                for (int64_t t = 0; t < m; t++)
                    la[i * m + t] = *tmat_at(&a, i, t);
            ref_back_rows(&r, &x, la, rdx, rdw, rdb);
            double err = rel_err(&dx, rdx);
            if (rows)
                err = fmax(err, rel_err_vec(dw, lw, rows, D, layout, rdw));
            if (custom)
                err = fmax(err, rel_err_vec(db, 1, 1, rows, ROW, rdb));
            if (err > TOL || getenv("GRAD_VERBOSE"))
                printf("features_backward %s layout %d: %.3e\n", c.name,
                       layout, err);
            ck_assert(err <= TOL);
            ck_assert(tmat_padding_intact(&dx));
            free(la), free(rdx), free(rdw), free(rdb);
            ref_free(&r);
            tmat_free(&x), tmat_free(&a), tmat_free(&dx);
            P(plan_destroy)(p);
        }
}
END_TEST

/* ReLU's derivative at 0 is 0 (and 1 just above). */
START_TEST(relu_derivative_at_zero)
{
    linattn_opts o = small_opts(0);
    P(plan) *p;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_RELU, 2, 1, &o), 0);
    real x[4] = {0, (real)1e-30, -0.0f, 2}, a[4] = {3, 3, 3, 3}, dx[4];
    ck_assert_int_eq(P(features_backward)(p, ROW, 2, x, 2, a, 2, dx, 2, NULL,
                                          1, NULL), 0);
    ck_assert(dx[0] == 0 && dx[1] == 3 && dx[2] == 0 && dx[3] == 3);
    P(plan_destroy)(p);
}
END_TEST

/* No queries: dK = dV = 0, written; no keys (eps > 0 keeps den valid):
 * dQ = 0; n = 0 for the causal call writes nothing. */
START_TEST(empty_sides)
{
    linattn_opts o = small_opts(0.5);
    mapcase c = map_case(3 + NCASES - 1); /* Hedgehog: dW, db too */
    P(plan) *p = grad_plan(&c, D, E, &o);
    problem x = problem_new(&c, p, ROW, 4, 6, 3);
    for (int64_t i = 0; i < 4; i++)
        x.den[i] = (real)0.5;
    int64_t bad = -1;
    ck_assert_int_eq(P(attention_backward)(p, ROW, 0, 6, x.q.a, x.q.ld, x.k.a,
                                           x.k.ld, x.v.a, x.v.ld, x.out.a,
                                           x.out.ld, NULL, x.g.a, x.g.ld,
                                           x.dq.a, x.dq.ld, x.dk.a, x.dk.ld,
                                           x.dv.a, x.dv.ld, x.dw, D, x.db,
                                           NULL, &bad), 0);
    for (int64_t i = 0; i < 6; i++) {
        for (int64_t t = 0; t < D; t++)
            ck_assert(*tmat_at(&x.dk, i, t) == 0);
        for (int64_t t = 0; t < E; t++)
            ck_assert(*tmat_at(&x.dv, i, t) == 0);
    }
    for (int64_t i = 0; i < x.rows * D; i++)
        ck_assert(x.dw[i] == 0);
    ck_assert_int_eq(P(attention_backward)(p, ROW, 4, 0, x.q.a, x.q.ld, NULL,
                                           D, NULL, E, x.out.a, x.out.ld,
                                           x.den, x.g.a, x.g.ld, x.dq.a,
                                           x.dq.ld, NULL, D, NULL, E, x.dw, D,
                                           x.db, NULL, &bad), 0);
    for (int64_t i = 0; i < 4; i++)
        for (int64_t t = 0; t < D; t++)
            ck_assert(*tmat_at(&x.dq, i, t) == 0);
    ck_assert_int_eq(P(causal_backward)(p, ROW, 0, NULL, D, NULL, D, NULL, E,
                                        NULL, E, NULL, NULL, E, NULL, D, NULL,
                                        D, NULL, E, NULL, 1, NULL, &bad), 0);
    ck_assert(bad == -1);
    problem_free(&x);
    P(plan_destroy)(p);
}
END_TEST

#ifndef TEST_SINGLE
/* sum_i G_i . out_i through the library's forward call, in long double. */
static long double loss(P(plan) *p, int causal, problem *x)
{
    int64_t bad;
    int st = causal ? P(causal)(p, x->q.layout, x->q.rows, x->q.a, x->q.ld,
                                x->k.a, x->k.ld, x->v.a, x->v.ld, x->out.a,
                                x->out.ld, &bad)
                    : P(attention)(p, x->q.layout, x->q.rows, x->k.rows,
                                   x->q.a, x->q.ld, x->k.a, x->k.ld, x->v.a,
                                   x->v.ld, x->out.a, x->out.ld, &bad);
    ck_assert_int_eq(st, 0);
    long double l = 0;
    for (int64_t i = 0; i < x->out.rows; i++)
        for (int64_t c = 0; c < x->out.cols; c++)
            l += (long double)*tmat_at(&x->g, i, c) * *tmat_at(&x->out, i, c);
    return l;
}

/* The central difference of the loss in every entry of m, against grad. */
static double fd_error(P(plan) *p, int causal, problem *x, tmat *m,
                       const tmat *grad)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < m->rows; i++)
        for (int64_t c = 0; c < m->cols; c++) {
            real *e = tmat_at(m, i, c), keep = *e;
            double h = 1e-6 * fmax(1, fabs(keep));
            *e = keep + h;
            long double lp = loss(p, causal, x);
            *e = keep - h;
            long double lm = loss(p, causal, x);
            *e = keep;
            double fd = (double)((lp - lm) / (2 * h)), g = *tmat_at(grad, i, c);
            num = fmax(num, fabs(fd - g));
            den = fmax(den, fabs(g));
        }
    return den > 0 ? num / den : num;
}

/* A custom plan of case c from W (rows x d, row major) and b. */
static P(plan) *custom_plan(const mapcase *c, const real *w, const real *b,
                            int64_t m, const linattn_opts *o)
{
    P(plan) *p;
    ck_assert_int_eq(P(plan_create_custom)(&p, c->act, D, m, E, ROW, w, D, b,
                                           o), 0);
    return p;
}

/* dW and db of a custom map by central differences of the loss, each
 * entry perturbed in a plan of its own. */
static double fd_params(const mapcase *c, int causal, problem *x,
                        const linattn_opts *o)
{
    int64_t m = 2 * D, rows = x->rows;
    real w[64], b[64];
    custom_wb(rows, D, w, b);
    double num = 0, den = 0;
    for (int64_t i = 0; i < rows * (D + 1); i++) {
        real *e = i < rows * D ? &w[i] : &b[i - rows * D], keep = *e;
        double h = 1e-6 * fmax(1, fabs(keep));
        double g = i < rows * D ? x->dw[i] : x->db[i - rows * D];
        *e = keep + h;
        P(plan) *pp = custom_plan(c, w, b, m, o);
        long double lp = loss(pp, causal, x);
        P(plan_destroy)(pp);
        *e = keep - h;
        pp = custom_plan(c, w, b, m, o);
        long double lm = loss(pp, causal, x);
        P(plan_destroy)(pp);
        *e = keep;
        double fd = (double)((lp - lm) / (2 * h));
        num = fmax(num, fabs(fd - g));
        den = fmax(den, fabs(g));
    }
    return den > 0 ? num / den : num;
}

/* Central differences of the library's forward calls, every map and
 * path, both layouts, eps 0 (the exponential maps) and 0.25 (the others),
 * and the count normalizer (the maps that take it): relative error
 * <= 1e-6. */
START_TEST(finite_differences)
{
    for (int mi = 0; mi < NMAPS; mi++)
        for (int causal = 0; causal < 2; causal++)
            for (int pol = 0; pol < 3; pol++) {
                mapcase c = map_case(mi);
                int shifted = is_shifted(&c), count = pol == 2;
                int layout = pol == 1 ? COL : ROW;
                if (count && shifted)
                    continue;
                linattn_opts o = small_opts(shifted ? 0 : 0.25);
                if (count)
                    o.denom = LINATTN_DENOM_COUNT;
                P(plan) *p = grad_plan(&c, D, E, &o);
                int64_t nq = causal ? 19 : NQ, nk = causal ? 19 : NK;
                problem x = problem_new(&c, p, layout, nq, nk, 40 + mi);
                ck_assert_int_eq(lib_grad(p, &c, causal, &x), 0);
                double err[4] = {fd_error(p, causal, &x, &x.q, &x.dq),
                                 fd_error(p, causal, &x, &x.k, &x.dk),
                                 fd_error(p, causal, &x, &x.v, &x.dv), 0};
                if (c.map == LINATTN_MAP_CUSTOM) {
                    /* the parameters' gradients with W row major */
                    problem y = problem_new(&c, p, ROW, nq, nk, 40 + mi);
                    ck_assert_int_eq(lib_grad(p, &c, causal, &y), 0);
                    err[3] = fd_params(&c, causal, &y, &o);
                    problem_free(&y);
                }
                for (int i = 0; i < 4; i++) {
                    if (err[i] > 1e-6 || getenv("GRAD_VERBOSE"))
                        printf("fd %s causal %d layout %d count %d grad %d: "
                               "%.3e\n", c.name, causal, layout, count, i,
                               err[i]);
                    ck_assert(err[i] <= 1e-6);
                }
                problem_free(&x);
                P(plan_destroy)(p);
            }
}
END_TEST
#endif

/* Two runs of the causal backward on the same plan differ only where the
 * test changed inputs: the entries that must not move are compared bit
 * for bit.  p = the row the invariants are checked at (inside a chunk). */
static void causal_invariants(const mapcase *c, int threads, double norm)
{
    enum { N = 75 };
    const int64_t p_row = 41;
    linattn_opts o;
    linattn_opts_init(&o);
    o.chunk = 32;
    o.block = 16; /* two threads split the rows */
    o.seed = 3;
    P(plan) *p = grad_plan(c, 4, 3, &o);
#ifdef _OPENMP
    int old = omp_get_max_threads();
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    problem x = problem_new(c, p, ROW, N, N, 77);
    for (int64_t i = 0; i < N; i++) /* larger norms: shifts at work */
        for (int64_t t = 0; t < 4; t++) {
            *tmat_at(&x.q, i, t) *= (real)norm;
            *tmat_at(&x.k, i, t) *= (real)norm;
        }
    ck_assert_int_eq(lib_grad(p, c, 1, &x), 0);
    problem y = problem_new(c, p, ROW, N, N, 77);
    /* 1. rows i < p of G, Q, out, den changed: dk_j, dv_j, j >= p, same */
    memcpy(y.q.a, x.q.a, (size_t)(N * x.q.ld) * sizeof(real));
    memcpy(y.k.a, x.k.a, (size_t)(N * x.k.ld) * sizeof(real));
    memcpy(y.v.a, x.v.a, (size_t)(N * x.v.ld) * sizeof(real));
    memcpy(y.g.a, x.g.a, (size_t)(N * x.g.ld) * sizeof(real));
    memcpy(y.out.a, x.out.a, (size_t)(N * x.out.ld) * sizeof(real));
    memcpy(y.den, x.den, (size_t)N * sizeof(real));
    for (int64_t i = 0; i < p_row; i++) {
        *tmat_at(&y.g, i, 0) = i % 3 ? (real)1e3 : (real)NAN;
        *tmat_at(&y.q, i, 1) += (real)0.5;
        *tmat_at(&y.out, i, 0) = (real)INFINITY;
        y.den[i] *= 2;
    }
    int64_t d, bad;
    P(plan_dims)(p, &d, NULL, NULL);
    ck_assert_int_eq(P(causal_backward)(p, ROW, N, y.q.a, y.q.ld, y.k.a, y.k.ld,
                                        y.v.a, y.v.ld, y.out.a, y.out.ld, y.den,
                                        y.g.a, y.g.ld, y.dq.a, y.dq.ld, y.dk.a,
                                        y.dk.ld, y.dv.a, y.dv.ld, NULL, 1, NULL,
                                        &bad), 0);
    for (int64_t j = p_row; j < N; j++) {
        ck_assert(!memcmp(tmat_at(&y.dk, j, 0), tmat_at(&x.dk, j, 0),
                          (size_t)d * sizeof(real)));
        ck_assert(!memcmp(tmat_at(&y.dv, j, 0), tmat_at(&x.dv, j, 0),
                          (size_t)3 * sizeof(real)));
    }
    /* 2. every other row of G, Q, out, den, and keys and values j > p
     * changed: dq_p the same */
    memcpy(y.g.a, x.g.a, (size_t)(N * x.g.ld) * sizeof(real));
    memcpy(y.q.a, x.q.a, (size_t)(N * x.q.ld) * sizeof(real));
    memcpy(y.out.a, x.out.a, (size_t)(N * x.out.ld) * sizeof(real));
    memcpy(y.den, x.den, (size_t)N * sizeof(real));
    for (int64_t i = 0; i < N; i++) {
        if (i == p_row)
            continue;
        *tmat_at(&y.g, i, 1) = i % 2 ? (real)-7 : (real)INFINITY;
        *tmat_at(&y.q, i, 0) *= (real)3;
        *tmat_at(&y.out, i, 1) = (real)NAN;
        y.den[i] = (real)1e-3;
        if (i > p_row) {
            *tmat_at(&y.k, i, 2) *= (real)20;
            *tmat_at(&y.v, i, 0) = i % 2 ? (real)NAN : (real)1e30;
        }
    }
    ck_assert_int_eq(P(causal_backward)(p, ROW, N, y.q.a, y.q.ld, y.k.a, y.k.ld,
                                        y.v.a, y.v.ld, y.out.a, y.out.ld, y.den,
                                        y.g.a, y.g.ld, y.dq.a, y.dq.ld, y.dk.a,
                                        y.dk.ld, y.dv.a, y.dv.ld, NULL, 1, NULL,
                                        &bad), 0);
    ck_assert(!memcmp(tmat_at(&y.dq, p_row, 0), tmat_at(&x.dq, p_row, 0),
                      (size_t)d * sizeof(real)));
#ifdef _OPENMP
    omp_set_num_threads(old);
#endif
    problem_free(&x), problem_free(&y);
    P(plan_destroy)(p);
}

START_TEST(causal_invariants_bitwise)
{
    for (int mi = 0; mi < NMAPS; mi++)
        for (int threads = 1; threads <= 2; threads++) {
            mapcase c = map_case(mi);
            causal_invariants(&c, threads, 1);
            if (c.map == LINATTN_MAP_FAVOR || c.map == LINATTN_MAP_FAVOR_HYP ||
                (c.map == LINATTN_MAP_CUSTOM && c.act == LINATTN_ACT_EXP))
                causal_invariants(&c, threads, 8);
        }
}
END_TEST

/* The custom exp map's scale (exp(u), |u| up to 750 in double, 120 in
 * float: beyond the range either way; at refmaps.h's CUSTOM_SCALE the
 * float gradient's error reached 4e-3: the gradient of exp attention
 * amplifies the rounding of u, |u| times the unit roundoff per feature,
 * by the scale) and the tolerance (measured: 7e-14 and 6e-6). */
#ifdef TEST_SINGLE
#define GRAD_CUSTOM_SCALE 6.0
#define GRAD_BIG_TOL 1e-4
#else
#define GRAD_CUSTOM_SCALE 15.0
#define GRAD_BIG_TOL 1e-10
#endif

/* Inputs whose exponentials leave the floating-point range without the
 * shifts (refmaps.h's big rows, input scale 1): finite gradients, equal
 * to the long double reference (unshifted, where the range is wide) to
 * GRAD_BIG_TOL; TRIG (whose signed estimates are noise there) finite
 * only. */
START_TEST(large_norms_gradients)
{
    const mapcase *c = &big_cases[_i % 4];
    int causal = _i / 4;
    int64_t n = 70, d = 4, e = 3;
    uint64_t seed = 59 + (uint64_t)(_i % 4); /* test_maps' unit-scale inputs */
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 16;
    o.chunk = 8;
    o.input_scale = c->map == LINATTN_MAP_CUSTOM ? GRAD_CUSTOM_SCALE : 1;
    P(plan) *p = plan_for(c, d, e, &o);
    problem x = problem_new(c, p, ROW, n, n, 9);
    tmat_free(&x.q), tmat_free(&x.k);
    x.q = big_rows(n, d, &seed);
    x.k = big_rows(n, d, &seed);
    ck_assert_int_eq(lib_grad(p, c, causal, &x), 0);
    const tmat *gr[3] = {&x.dq, &x.dk, &x.dv};
    for (int i = 0; i < 3; i++)
        for (int64_t r = 0; r < gr[i]->rows; r++)
            for (int64_t t = 0; t < gr[i]->cols; t++)
                ck_assert(isfinite(*tmat_at(gr[i], r, t)));
    if (c->map != LINATTN_MAP_TRIG) {
        refmap r = ref_of(c, p, (long double)o.input_scale);
        refgrad g = ref_grad(&r, causal, 0, 0, &x.q, &x.k, &x.v, &x.g);
        double err = fmax(fmax(rel_err(&x.dq, g.dq), rel_err(&x.dk, g.dk)),
                          rel_err(&x.dv, g.dv));
        if (getenv("GRAD_VERBOSE"))
            printf("large norms %s causal %d: %.3e\n", c->name, causal, err);
        ck_assert_msg(err < GRAD_BIG_TOL, "%s causal %d: %.3e", c->name,
                      causal, err);
        refgrad_free(&g);
        ref_free(&r);
    }
    problem_free(&x);
    P(plan_destroy)(p);
}
END_TEST

/* One thread and two agree to rounding (the rows split over threads:
 * partial sums of d[S z], dW, db, and the causal ranges' states). */
START_TEST(thread_counts_agree)
{
#ifdef _OPENMP
    int saved = omp_get_max_threads();
    for (int mi = 0; mi < NMAPS; mi += 5)
        for (int causal = 0; causal < 2; causal++) {
            mapcase c = map_case(mi);
            linattn_opts o;
            linattn_opts_init(&o);
            o.block = 64;
            o.chunk = 16;
            P(plan) *p = grad_plan(&c, 5, 4, &o);
            problem x[2];
            for (int t = 0; t < 2; t++) {
                omp_set_num_threads(t + 1);
                x[t] = problem_new(&c, p, COL, 600, causal ? 600 : 550, 17);
                ck_assert_int_eq(lib_grad(p, &c, causal, &x[t]), 0);
            }
            double err = fmax(fmax(rel_diff(&x[0].dq, &x[1].dq),
                                   rel_diff(&x[0].dk, &x[1].dk)),
                              rel_diff(&x[0].dv, &x[1].dv));
            ck_assert_msg(err <= TOL, "%s causal %d: %.3e", c.name, causal, err);
            problem_free(&x[0]), problem_free(&x[1]);
            P(plan_destroy)(p);
        }
    omp_set_num_threads(saved);
#endif
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gradients (" PREC ")");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, backward_matches_reference);
    tcase_add_test(tc, features_backward_matches_jacobian);
    tcase_add_test(tc, relu_derivative_at_zero);
    tcase_add_test(tc, empty_sides);
    tcase_add_test(tc, large_leading_dimensions);
    tcase_add_test(tc, backward_with_state);
#ifndef TEST_SINGLE
    tcase_add_test(tc, finite_differences);
#endif
    tcase_add_test(tc, causal_invariants_bitwise);
    tcase_add_loop_test(tc, large_norms_gradients, 0, 8);
    tcase_add_test(tc, thread_counts_agree);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
