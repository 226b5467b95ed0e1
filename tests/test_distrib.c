/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_distrib.c -- the serial building blocks of distributed and
 * segmented runs, compiled once per precision: plan fingerprints, a
 * state's accumulator out and in (export/import), causal attention that
 * continues from a state (state_causal), and the argument checks that do
 * no work (*_check).  liblinattn_mpi is written on these; its own tests
 * (tests/mpi/) run under mpirun.
 */
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

#ifdef TEST_SINGLE
#define OTHER(name) linattn_d_##name
typedef double other_real;
#else
#define OTHER(name) linattn_s_##name
typedef float other_real;
#endif

static P(plan) *plan_with(int map, int64_t d, int64_t e, const linattn_opts *o)
{
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, o), 0);
    return p;
}

static uint64_t fingerprint_of(const P(plan) *p)
{
    uint64_t fp = 0;
    ck_assert_int_eq(P(plan_fingerprint)(p, &fp), 0);
    return fp;
}

/* The checkpoint bytes of a state: its complete observable contents. */
static unsigned char *state_bytes(const P(state) *s, int64_t *len)
{
    ck_assert_int_eq(P(state_save_size)(s, len), 0);
    unsigned char *b = malloc((size_t)*len);
    ck_assert_int_eq(P(state_save)(s, b, *len, NULL), 0);
    return b;
}

static int same_state(const P(state) *a, const P(state) *b)
{
    int64_t la, lb;
    unsigned char *x = state_bytes(a, &la), *y = state_bytes(b, &lb);
    int same = la == lb && memcmp(x, y, (size_t)la) == 0;
    free(x);
    free(y);
    return same;
}

/* ---- plan_fingerprint ---- */

/* Plans built alike agree; changing any one option, the map, a size or
 * the precision changes the fingerprint. */
START_TEST(fingerprint_covers_the_plan)
{
    linattn_opts base;
    linattn_opts_init(&base);
    base.seed = 11;
    P(plan) *a = plan_with(LINATTN_MAP_FAVOR, 4, 3, &base);
    P(plan) *b = plan_with(LINATTN_MAP_FAVOR, 4, 3, &base);
    uint64_t fa = fingerprint_of(a);
    ck_assert(fa == fingerprint_of(b));
    enum { VARIANTS = 13 };
    uint64_t seen[VARIANTS + 1];
    seen[0] = fa;
    for (int v = 0; v < VARIANTS; v++) {
        linattn_opts o = base;
        int map = LINATTN_MAP_FAVOR;
        int64_t d = 4, e = 3;
        switch (v) {
        case 0: o.seed = 12; break;
        case 1: o.m = 8; break;
        case 2: o.block = 5; break;
        case 3: o.chunk = 3; break;
        case 4: o.denom = LINATTN_DENOM_NONZERO; break;
        case 5: o.eps = 1e-6; break;
        case 6: o.check_finite = 1; break;
        case 7: o.draw = LINATTN_DRAW_IID; break;
        case 8: o.input_scale = 0.5; break;
        case 9: map = LINATTN_MAP_FAVOR_HYP; break;
        case 10: d = 5; break;
        case 11: e = 4; break;
        case 12: map = LINATTN_MAP_TRIG; break;
        }
        P(plan) *c = plan_with(map, d, e, &o);
        seen[v + 1] = fingerprint_of(c);
        for (int w = 0; w <= v; w++)
            ck_assert_msg(seen[v + 1] != seen[w], "variant %d equals %d", v,
                          w - 1);
        P(plan_destroy)(c);
    }
    /* the other precision, same arguments */
    OTHER(plan) *o = NULL;
    ck_assert_int_eq(OTHER(plan_create)(&o, LINATTN_MAP_FAVOR, 4, 3, &base), 0);
    uint64_t fo = 0;
    ck_assert_int_eq(OTHER(plan_fingerprint)(o, &fo), 0);
    ck_assert(fo != fa);
    OTHER(plan_destroy)(o);
    /* exact maps: the seed does not enter the map, but equal plans agree */
    linattn_opts e1 = base, e2 = base;
    e2.seed = 99;
    P(plan) *x = plan_with(LINATTN_MAP_ELU1, 4, 3, &e1);
    P(plan) *y = plan_with(LINATTN_MAP_ELU1, 4, 3, &e2);
    ck_assert(fingerprint_of(x) == fingerprint_of(y));
    ck_assert(fingerprint_of(x) != fa);
    P(plan_destroy)(x), P(plan_destroy)(y);
    /* errors, nothing written */
    uint64_t keep = 12345;
    ck_assert_int_eq(P(plan_fingerprint)(NULL, &keep), -1);
    ck_assert(keep == 12345);
    ck_assert_int_eq(P(plan_fingerprint)(a, NULL), -2);
    P(plan_destroy)(a), P(plan_destroy)(b);
}
END_TEST

/* A custom map's fingerprint follows every bit of W. */
START_TEST(fingerprint_follows_custom_weights)
{
    real w[6] = {1, 2, 3, 4, 5, 6};
    P(plan) *a = NULL, *b = NULL;
    ck_assert_int_eq(P(plan_create_custom)(&a, LINATTN_ACT_RELU, 2, 3, 2, ROW,
                                           w, 2, NULL, NULL), 0);
#ifdef TEST_SINGLE
    w[5] = nextafterf(6.0f, 7.0f); /* one ulp away */
#else
    w[5] = nextafter(6.0, 7.0);
#endif
    ck_assert_int_eq(P(plan_create_custom)(&b, LINATTN_ACT_RELU, 2, 3, 2, ROW,
                                           w, 2, NULL, NULL), 0);
    ck_assert(fingerprint_of(a) != fingerprint_of(b));
    P(plan_destroy)(a), P(plan_destroy)(b);
}
END_TEST

/* ---- state_plan, state_export, state_import ---- */

START_TEST(state_plan_reads_back)
{
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, 3, 2, NULL);
    P(state) *s;
    ck_assert_int_eq(P(state_create)(&s, p), 0);
    const P(plan) *got = NULL;
    ck_assert_int_eq(P(state_plan)(s, &got), 0);
    ck_assert_ptr_eq(got, p);
    const P(plan) *keep = p;
    ck_assert_int_eq(P(state_plan)(NULL, &keep), -1);
    ck_assert_ptr_eq(keep, p);
    ck_assert_int_eq(P(state_plan)(s, NULL), -2);
    P(state_destroy)(s);
    P(plan_destroy)(p);
}
END_TEST

/* The exported accumulator times exp(shift) is the sum of the features
 * (plain loops in long double over features read from the plan), for an
 * exact map (shift 0) and FAVOR+ at input scale 1, whose shift is large;
 * the working-precision state (state_get) is the accumulator rounded. */
START_TEST(export_is_the_sum_of_features)
{
    static const int maps_[] = {LINATTN_MAP_ELU1, LINATTN_MAP_FAVOR};
    int map = maps_[_i];
    int64_t n = 37, d = 3, e = 2;
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 8;
    if (map == LINATTN_MAP_FAVOR)
        o.input_scale = 1, o.seed = 5;
    P(plan) *p = plan_with(map, d, e, &o);
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    uint64_t seed = 31;
    tmat k = tmat_rand(ROW, n, d, 0, -1.5, 1.5, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    P(state) *s;
    P(state_create)(&s, p);
    ck_assert_int_eq(P(state_update)(s, ROW, n, k.a, d, v.a, e), 0);
    double *acc = malloc((size_t)(m * (e + 1)) * sizeof *acc);
    double shift = -1;
    int64_t tokens = -1;
    ck_assert_int_eq(P(state_export)(s, acc, &shift, &tokens), 0);
    ck_assert_int_eq(tokens, n);
    if (map == LINATTN_MAP_ELU1)
        ck_assert(shift == 0);
    else
        ck_assert(shift > 1); /* keys of norm ~1.5, scale 1 */
    real *phi = malloc((size_t)(n * m) * sizeof *phi);
    ck_assert_int_eq(P(features)(p, ROW, n, k.a, d, phi, m), 0);
    long double worst = 0, big = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j <= e; j++) {
            long double sum = 0;
            for (int64_t r = 0; r < n; r++)
                sum += (long double)phi[r * m + i] * (j < e ? v.a[r * e + j] : 1);
            long double got = (long double)acc[i * (e + 1) + j] * expl(shift);
            worst = fmaxl(worst, fabsl(got - sum));
            big = fmaxl(big, fabsl(sum));
        }
    ck_assert_msg(worst <= TOL * big, "map %d: %Lg of %Lg", map, worst, big);
    real *sget = malloc((size_t)(m * e) * sizeof *sget), *zget = malloc((size_t)m * sizeof *zget);
    ck_assert_int_eq(P(state_get)(s, ROW, sget, e, zget, NULL), 0);
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < e; j++)
            ck_assert(sget[i * e + j] == (real)acc[i * (e + 1) + j]);
        ck_assert(zget[i] == (real)acc[i * (e + 1) + e]);
    }
    /* NULL outputs are skipped */
    ck_assert_int_eq(P(state_export)(s, NULL, NULL, NULL), 0);
    ck_assert_int_eq(P(state_export)(NULL, acc, &shift, &tokens), -1);
    free(phi), free(sget), free(zget), free(acc);
    P(state_destroy)(s);
    P(plan_destroy)(p);
    tmat_free(&k), tmat_free(&v);
}
END_TEST

/* export then import restores a state bit for bit (checkpoint bytes);
 * two halves' accumulators brought to the larger shift and added by
 * plain loops, imported, answer queries as the state of all keys does. */
START_TEST(import_restores_and_sums)
{
    int map = _i ? LINATTN_MAP_FAVOR : LINATTN_MAP_RELU;
    int64_t n = 50, cut = 19, d = 4, e = 3, nq = 6;
    linattn_opts o;
    linattn_opts_init(&o);
    if (map == LINATTN_MAP_FAVOR)
        o.input_scale = 1, o.seed = 9;
    P(plan) *p = plan_with(map, d, e, &o);
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    int64_t len = m * (e + 1);
    uint64_t seed = 90 + (uint64_t)_i;
    tmat k = tmat_rand(ROW, n, d, 0, 0.05, 1.2, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat q = tmat_rand(ROW, nq, d, 0, 0.05, 1, &seed);
    /* the later half gets larger keys: a larger shift */
    for (int64_t i = cut * d; i < n * d; i++)
        k.a[i] = (real)(k.a[i] * 2);
    P(state) *all, *a, *b, *c;
    P(state_create)(&all, p), P(state_create)(&a, p);
    P(state_create)(&b, p), P(state_create)(&c, p);
    P(state_update)(all, ROW, n, k.a, d, v.a, e);
    P(state_update)(a, ROW, cut, k.a, d, v.a, e);
    P(state_update)(b, ROW, n - cut, k.a + cut * d, d, v.a + cut * e, e);
    double *xa = malloc((size_t)len * sizeof *xa), *xb = malloc((size_t)len * sizeof *xb);
    double sa, sb;
    int64_t ta, tb;
    P(state_export)(a, xa, &sa, &ta);
    P(state_export)(b, xb, &sb, &tb);
    /* round trip */
    ck_assert_int_eq(P(state_import)(c, xa, sa, ta), 0);
    ck_assert(same_state(a, c));
    /* the sum, at the larger shift */
    double s = sa > sb ? sa : sb;
    for (int64_t i = 0; i < len; i++)
        xa[i] = xa[i] * exp(sa - s) + xb[i] * exp(sb - s);
    ck_assert_int_eq(P(state_import)(c, xa, s, ta + tb), 0);
    tmat o1 = tmat_like(&q, nq, e, 0), o2 = tmat_like(&q, nq, e, 0);
    ck_assert_int_eq(P(state_query)(all, ROW, nq, q.a, d, o1.a, e, NULL, 0, NULL, NULL), 0);
    ck_assert_int_eq(P(state_query)(c, ROW, nq, q.a, d, o2.a, e, NULL, 0, NULL, NULL), 0);
    ck_assert_msg(rel_diff(&o2, &o1) < TOL, "%g", rel_diff(&o2, &o1));
    int64_t tok;
    P(state_get)(c, ROW, NULL, 1, NULL, &tok);
    ck_assert_int_eq(tok, n);
    double sh;
    P(state_shift)(c, &sh);
    ck_assert(map == LINATTN_MAP_RELU ? sh == 0 : sh == s);
    free(xa), free(xb);
    P(state_destroy)(all), P(state_destroy)(a), P(state_destroy)(b);
    P(state_destroy)(c);
    P(plan_destroy)(p);
    tmat_free(&k), tmat_free(&v), tmat_free(&q), tmat_free(&o1), tmat_free(&o2);
}
END_TEST

START_TEST(import_errors_leave_state)
{
    linattn_opts o;
    linattn_opts_init(&o);
    P(plan) *pe = plan_with(LINATTN_MAP_ELU1, 2, 2, &o);
    P(plan) *pf = plan_with(LINATTN_MAP_FAVOR, 2, 2, &o);
    uint64_t seed = 3;
    tmat k = tmat_rand(ROW, 5, 2, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, 5, 2, 0, -1, 1, &seed);
    P(state) *se, *sf, *ref;
    P(state_create)(&se, pe), P(state_create)(&sf, pf);
    P(state_update)(se, ROW, 5, k.a, 2, v.a, 2);
    P(state_update)(sf, ROW, 5, k.a, 2, v.a, 2);
    double acc[64] = {0};
    P(state_create)(&ref, pe);
    P(state_copy)(ref, se);
    ck_assert_int_eq(P(state_import)(NULL, acc, 0, 1), -1);
    ck_assert_int_eq(P(state_import)(se, NULL, 0, 1), -2);
    ck_assert_int_eq(P(state_import)(se, acc, NAN, 1), -3);
    ck_assert_int_eq(P(state_import)(se, acc, 1, 1), -3); /* elu+1: no shift */
    ck_assert_int_eq(P(state_import)(se, acc, 0, -1), -4);
    ck_assert(same_state(se, ref));
    P(state_destroy)(ref);
    P(state_create)(&ref, pf);
    P(state_copy)(ref, sf);
    ck_assert_int_eq(P(state_import)(sf, acc, INFINITY, 1), -3);
    ck_assert_int_eq(P(state_import)(sf, acc, -INFINITY, 1), -3);
    ck_assert_int_eq(P(state_import)(sf, acc, 2.5, -3), -4);
    ck_assert(same_state(sf, ref));
    /* a finite shift is taken by the shifted maps */
    ck_assert_int_eq(P(state_import)(sf, acc, -7.25, 0), 0);
    double sh;
    P(state_shift)(sf, &sh);
    ck_assert(sh == -7.25);
    P(state_destroy)(ref), P(state_destroy)(se), P(state_destroy)(sf);
    P(plan_destroy)(pe), P(plan_destroy)(pf);
    tmat_free(&k), tmat_free(&v);
}
END_TEST

/* ---- state_causal ---- */

static const int causal_maps[] = {LINATTN_MAP_ELU1, LINATTN_MAP_RELU,
                                  LINATTN_MAP_FAVOR};

static P(plan) *causal_plan(int map, int64_t d, int64_t e)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 16; /* so that 100 rows split over two threads */
    o.chunk = 7;
    o.seed = 4;
    if (map == LINATTN_MAP_FAVOR)
        o.input_scale = 1; /* large exponents: the shifts matter */
    return plan_with(map, d, e, &o);
}

/* From a zero state, state_causal is the causal call bit for bit (both
 * layouts, padded leading dimensions, one and two threads' worth of rows);
 * with absorb = 0 the state stays as it was. */
START_TEST(from_zero_is_causal)
{
    int map = causal_maps[_i % 3], layout = _i / 3 ? COL : ROW;
    static const int64_t ns[] = {1, 23, 100};
    int64_t d = 3, e = 4;
    P(plan) *p = causal_plan(map, d, e);
    for (int ni = 0; ni < 3; ni++) {
        int64_t n = ns[ni];
        uint64_t seed = 500 + (uint64_t)(_i * 3 + ni);
        tmat q = tmat_rand(layout, n, d, 2, 0.05, 1.5, &seed);
        tmat k = tmat_rand(layout, n, d, 1, 0.05, 1.5, &seed);
        tmat v = tmat_rand(layout, n, e, 0, -1, 1, &seed);
        tmat o1 = tmat_like(&q, n, e, 3), o2 = tmat_like(&q, n, e, 3);
        P(state) *s, *zero;
        P(state_create)(&s, p), P(state_create)(&zero, p);
        ck_assert_int_eq(P(causal)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                   o1.a, o1.ld, NULL), 0);
        ck_assert_int_eq(P(state_causal)(s, layout, n, q.a, q.ld, k.a, k.ld, v.a,
                                         v.ld, o2.a, o2.ld, 0, NULL), 0);
        ck_assert(memcmp(o1.a, o2.a, (size_t)(o1.ld * (layout == COL ? e : n)) * sizeof(real)) == 0);
        ck_assert(tmat_padding_intact(&o2));
        ck_assert(same_state(s, zero));
        P(state_destroy)(s), P(state_destroy)(zero);
        tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&o1), tmat_free(&o2);
    }
    P(plan_destroy)(p);
}
END_TEST

/* A sequence cut into uneven segments (one of them empty, one of 1 row,
 * one split over threads), each passed with absorb = 1, gives the causal
 * result of the whole to rounding and the plain-loop reference; the final
 * state is the state of all keys (tokens and shift exactly). */
START_TEST(segments_equal_whole)
{
    int map = causal_maps[_i % 3], layout = _i / 3 ? COL : ROW;
    static const int64_t cuts[] = {0, 1, 1, 8, 40, 40, 140, 157};
    int64_t n = 157, d = 3, e = 2, ncuts = 8;
    P(plan) *p = causal_plan(map, d, e);
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    uint64_t seed = 700 + (uint64_t)_i;
    tmat q = tmat_rand(layout, n, d, 1, 0.05, 1.5, &seed);
    tmat k = tmat_rand(layout, n, d, 0, 0.05, 1.5, &seed);
    tmat v = tmat_rand(layout, n, e, 2, -1, 1, &seed);
    /* later keys larger: the shift moves up between segments */
    for (int64_t i = 90; i < n; i++)
        for (int64_t t = 0; t < d; t++)
            *tmat_at(&k, i, t) = (real)(*tmat_at(&k, i, t) * 2.5);
    tmat whole = tmat_like(&q, n, e, 0), seg = tmat_like(&q, n, e, 1);
    ck_assert_int_eq(P(causal)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                               whole.a, whole.ld, NULL), 0);
    P(state) *s, *all;
    P(state_create)(&s, p), P(state_create)(&all, p);
    for (int c = 0; c + 1 < ncuts; c++) {
        int64_t lo = cuts[c], rows = cuts[c + 1] - lo;
        const real *qa = layout == COL ? q.a + lo : q.a + lo * q.ld;
        const real *ka = layout == COL ? k.a + lo : k.a + lo * k.ld;
        const real *va = layout == COL ? v.a + lo : v.a + lo * v.ld;
        real *oa = layout == COL ? seg.a + lo : seg.a + lo * seg.ld;
        ck_assert_int_eq(P(state_causal)(s, layout, rows, qa, q.ld, ka, k.ld, va,
                                         v.ld, oa, seg.ld, 1, NULL), 0);
    }
    ck_assert_msg(rel_diff(&seg, &whole) < TOL, "map %d: %g", map, rel_diff(&seg, &whole));
    ck_assert(tmat_padding_intact(&seg));
    /* the reference from the plan's features, by plain loops */
    real *fq = malloc((size_t)(n * m) * sizeof *fq), *fk = malloc((size_t)(n * m) * sizeof *fk);
    int64_t ldf = layout == COL ? n : m;
    ck_assert_int_eq(P(features)(p, layout, n, q.a, q.ld, fq, ldf), 0);
    ck_assert_int_eq(P(features)(p, layout, n, k.a, k.ld, fk, ldf), 0);
    long double *lq = malloc((size_t)(n * m) * sizeof *lq), *lk = malloc((size_t)(n * m) * sizeof *lk);
    for (int64_t i = 0; i < n; i++)
        for (int64_t t = 0; t < m; t++) {
            int64_t at = layout == COL ? i + t * n : i * m + t;
            lq[i * m + t] = fq[at], lk[i * m + t] = fk[at];
        }
    long double *ref = malloc((size_t)(n * e) * sizeof *ref);
    ref_linear_phi(lq, lk, m, 1, &v, n, ref);
    ck_assert_msg(rel_err(&seg, ref) < 10 * TOL, "map %d: %g", map, rel_err(&seg, ref));
    /* the absorbed state */
    P(state_update)(all, layout, n, k.a, k.ld, v.a, v.ld);
    int64_t ts, ta;
    double ss, sa;
    P(state_get)(s, ROW, NULL, 1, NULL, &ts);
    P(state_get)(all, ROW, NULL, 1, NULL, &ta);
    P(state_shift)(s, &ss), P(state_shift)(all, &sa);
    ck_assert_int_eq(ts, n);
    ck_assert_int_eq(ta, n);
    ck_assert(ss == sa);
    double *xs = malloc((size_t)(m * (e + 1)) * sizeof *xs);
    double *xa = malloc((size_t)(m * (e + 1)) * sizeof *xa);
    P(state_export)(s, xs, NULL, NULL), P(state_export)(all, xa, NULL, NULL);
    double worst = 0, big = 0;
    for (int64_t i = 0; i < m * (e + 1); i++)
        worst = fmax(worst, fabs(xs[i] - xa[i])), big = fmax(big, fabs(xa[i]));
    ck_assert_msg(worst <= TOL * big, "%g of %g", worst, big);
    free(fq), free(fk), free(lq), free(lk), free(ref), free(xs), free(xa);
    P(state_destroy)(s), P(state_destroy)(all);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&whole), tmat_free(&seg);
}
END_TEST

/* Under LINATTN_DENOM_COUNT a continued segment divides by the state's
 * tokens + i + 1: segments equal the whole causal call, and plain loops
 * over the plan's features divided by the global count. */
START_TEST(segments_under_count)
{
    int map = _i % 2 ? LINATTN_MAP_RELU : LINATTN_MAP_ELU1, layout = _i / 2 ? COL : ROW;
    int64_t n = 61, d = 3, e = 2, cut = 25, m = d;
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = LINATTN_DENOM_COUNT;
    o.chunk = 6;
    o.block = 16;
    P(plan) *p = plan_with(map, d, e, &o);
    uint64_t seed = 900 + (uint64_t)_i;
    tmat q = tmat_rand(layout, n, d, 1, -1, 1, &seed);
    tmat k = tmat_rand(layout, n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(layout, n, e, 2, -1, 1, &seed);
    tmat whole = tmat_like(&q, n, e, 0), seg = tmat_like(&q, n, e, 0);
    ck_assert_int_eq(P(causal)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                               whole.a, whole.ld, NULL), 0);
    P(state) *s;
    P(state_create)(&s, p);
    int64_t lo[3] = {0, cut, n};
    for (int c = 0; c < 2; c++) {
        int64_t at = lo[c], rows = lo[c + 1] - at;
        tmat vq = q, vk = k, vv = v, vo = seg;
        vq.a += layout == COL ? at : at * q.ld, vk.a += layout == COL ? at : at * k.ld;
        vv.a += layout == COL ? at : at * v.ld, vo.a += layout == COL ? at : at * seg.ld;
        ck_assert_int_eq(P(state_causal)(s, layout, rows, vq.a, q.ld, vk.a, k.ld, vv.a,
                                         v.ld, vo.a, seg.ld, 1, NULL), 0);
    }
    ck_assert_msg(rel_diff(&seg, &whole) < TOL, "%g", rel_diff(&seg, &whole));
    long double *fq = ref_phi_rows(map, &q), *fk = ref_phi_rows(map, &k);
    long double *ref = malloc((size_t)(n * e) * sizeof *ref);
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < e; c++) {
            long double sum = 0;
            for (int64_t j = 0; j <= i; j++) {
                long double a = 0;
                for (int64_t t = 0; t < m; t++)
                    a += fq[i * m + t] * fk[j * m + t];
                sum += a * *tmat_at(&v, j, c);
            }
            ref[i * e + c] = sum / (long double)(i + 1);
        }
    ck_assert_msg(rel_err(&seg, ref) < 10 * TOL, "%g", rel_err(&seg, ref));
    free(fq), free(fk), free(ref);
    P(state_destroy)(s);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&whole), tmat_free(&seg);
}
END_TEST

/* Changing the tokens after position p (in a later segment) leaves the
 * outputs 0..p bit-identical, for every map, in one and two threads'
 * worth of rows per segment. */
START_TEST(causality_across_segments)
{
    int map = causal_maps[_i];
    int64_t n = 120, d = 3, e = 2, cut = 50, p0 = 77;
    P(plan) *p = causal_plan(map, d, e);
    uint64_t seed = 800 + (uint64_t)_i;
    tmat q = tmat_rand(ROW, n, d, 0, 0.05, 1.5, &seed);
    tmat k = tmat_rand(ROW, n, d, 0, 0.05, 1.5, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat o1 = tmat_like(&q, n, e, 0), o2 = tmat_like(&q, n, e, 0);
    for (int round = 0; round < 2; round++) {
        tmat *o = round ? &o2 : &o1;
        P(state) *s;
        P(state_create)(&s, p);
        ck_assert_int_eq(P(state_causal)(s, ROW, cut, q.a, d, k.a, d, v.a, e,
                                         o->a, e, 1, NULL), 0);
        ck_assert_int_eq(P(state_causal)(s, ROW, n - cut, q.a + cut * d, d,
                                         k.a + cut * d, d, v.a + cut * e, e,
                                         o->a + cut * e, e, 1, NULL), 0);
        P(state_destroy)(s);
        /* the future: larger queries and keys, values Inf and NaN */
        for (int64_t i = (p0 + 1) * d; i < n * d; i++)
            q.a[i] = (real)(q.a[i] * 3 + 1), k.a[i] = (real)(k.a[i] * 4);
        for (int64_t i = (p0 + 1) * e; i < n * e; i++)
            v.a[i] = i % 2 ? (real)INFINITY : (real)NAN;
    }
    ck_assert(memcmp(o1.a, o2.a, (size_t)((p0 + 1) * e) * sizeof(real)) == 0);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&o1), tmat_free(&o2);
}
END_TEST

/* A bad normalizer inside a continued segment: EDENOM with the row of
 * this call, rows before it written, and the state unchanged although
 * absorb = 1; NaN input under check_finite: ENONFINITE, nothing written. */
START_TEST(state_causal_failures_leave_state)
{
    int64_t d = 2, e = 2, n = 12;
    linattn_opts o;
    linattn_opts_init(&o);
    o.chunk = 4;
    o.check_finite = 1;
    P(plan) *p = plan_with(LINATTN_MAP_IDENTITY, d, e, &o);
    real k0[4] = {1, 1, 1, 1}, v0[4] = {1, 2, 3, 4};
    P(state) *s, *ref;
    P(state_create)(&s, p), P(state_create)(&ref, p);
    P(state_update)(s, ROW, 2, k0, d, v0, e);
    P(state_copy)(ref, s);
    real q[24], k[24], v[24], out[24];
    for (int i = 0; i < 24; i++)
        q[i] = 1, k[i] = (real)0.5, v[i] = (real)i, out[i] = -555;
    /* row 9: q = (-1, -1) against keys summing to positive z: den < 0 */
    q[18] = q[19] = -1;
    int64_t bad = -1;
    ck_assert_int_eq(P(state_causal)(s, ROW, n, q, d, k, d, v, e, out, e, 1, &bad),
                     LINATTN_EDENOM);
    ck_assert_int_eq(bad, 9);
    for (int i = 0; i < 18; i++)
        ck_assert(out[i] != -555);
    ck_assert(out[18] == -555 && out[19] == -555);
    ck_assert(same_state(s, ref));
    /* NaN in a value under check_finite */
    for (int i = 0; i < 24; i++)
        q[i] = 1, out[i] = -555;
    v[7] = (real)NAN;
    ck_assert_int_eq(P(state_causal)(s, ROW, n, q, d, k, d, v, e, out, e, 1, NULL),
                     LINATTN_ENONFINITE);
    for (int i = 0; i < 24; i++)
        ck_assert(out[i] == -555);
    ck_assert(same_state(s, ref));
    P(state_destroy)(s), P(state_destroy)(ref);
    P(plan_destroy)(p);
}
END_TEST

/* A state whose token count is near INT64_MAX (reachable through
 * state_import or a checkpoint): state_causal refuses with LINATTN_ESIZE
 * before any work when this call's rows would take the count (or a row's
 * DENOM_COUNT count) past INT64_MAX; nothing written, the state unchanged,
 * absorb or not.  At exactly INT64_MAX it still runs. */
START_TEST(state_causal_token_overflow)
{
    int64_t d = 2, e = 2, n = 4;
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = _i ? LINATTN_DENOM_COUNT : LINATTN_DENOM_POSITIVE;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, &o);
    P(state) *s, *ref;
    P(state_create)(&s, p), P(state_create)(&ref, p);
    double acc[6] = {1, 2, 3, 4, 5, 6};
    real q[8], k[8], v[8], out[8];
    for (int i = 0; i < 8; i++)
        q[i] = k[i] = (real)0.25, v[i] = (real)i, out[i] = -555;
    for (int absorb = 0; absorb < 2; absorb++) {
        ck_assert_int_eq(P(state_import)(s, acc, 0, INT64_MAX - 1), 0);
        P(state_copy)(ref, s);
        ck_assert_int_eq(P(state_causal)(s, ROW, n, q, d, k, d, v, e, out, e,
                                         absorb, NULL), LINATTN_ESIZE);
        for (int i = 0; i < 8; i++)
            ck_assert(out[i] == -555);
        ck_assert(same_state(s, ref));
        /* INT64_MAX - n tokens before: the last row sees INT64_MAX */
        ck_assert_int_eq(P(state_import)(s, acc, 0, INT64_MAX - n), 0);
        ck_assert_int_eq(P(state_causal)(s, ROW, n, q, d, k, d, v, e, out, e,
                                         absorb, NULL), 0);
        int64_t tokens;
        P(state_get)(s, ROW, NULL, 1, NULL, &tokens);
        ck_assert(tokens == (absorb ? INT64_MAX : INT64_MAX - n));
        for (int i = 0; i < 8; i++)
            ck_assert(isfinite((double)out[i])), out[i] = -555;
    }
    P(state_destroy)(s), P(state_destroy)(ref);
    P(plan_destroy)(p);
}
END_TEST

/* Every argument error of state_causal: its -i, nothing written, the
 * state unchanged. */
START_TEST(state_causal_argument_errors)
{
    int64_t d = 2, e = 3, n = 4;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, NULL);
    P(state) *s, *ref;
    P(state_create)(&s, p), P(state_create)(&ref, p);
    real q[8] = {0}, k[8] = {0}, v[12] = {0}, out[12];
    for (int i = 0; i < 12; i++)
        out[i] = -1;
    P(state_update)(s, ROW, n, k, d, v, e);
    P(state_copy)(ref, s);
#define CALL(...) P(state_causal)(__VA_ARGS__)
    ck_assert_int_eq(CALL(NULL, ROW, n, q, d, k, d, v, e, out, e, 1, NULL), -1);
    ck_assert_int_eq(CALL(s, 7, n, q, d, k, d, v, e, out, e, 1, NULL), -2);
    ck_assert_int_eq(CALL(s, ROW, -1, q, d, k, d, v, e, out, e, 1, NULL), -3);
    ck_assert_int_eq(CALL(s, ROW, n, NULL, d, k, d, v, e, out, e, 1, NULL), -4);
    ck_assert_int_eq(CALL(s, ROW, n, q, d - 1, k, d, v, e, out, e, 1, NULL), -5);
    ck_assert_int_eq(CALL(s, ROW, n, q, d, NULL, d, v, e, out, e, 1, NULL), -6);
    ck_assert_int_eq(CALL(s, ROW, n, q, d, k, 0, v, e, out, e, 1, NULL), -7);
    ck_assert_int_eq(CALL(s, ROW, n, q, d, k, d, NULL, e, out, e, 1, NULL), -8);
    ck_assert_int_eq(CALL(s, ROW, n, q, d, k, d, v, e - 1, out, e, 1, NULL), -9);
    ck_assert_int_eq(CALL(s, ROW, n, q, d, k, d, v, e, NULL, e, 1, NULL), -10);
    ck_assert_int_eq(CALL(s, ROW, n, q, d, k, d, v, e, out, e - 1, 1, NULL), -11);
    ck_assert_int_eq(CALL(s, ROW, n, q, d, k, d, v, e, out, e, 2, NULL), -12);
    ck_assert_int_eq(CALL(s, ROW, n, q, d, k, d, v, e, out, e, -1, NULL), -12);
    /* an earlier argument outranks absorb */
    ck_assert_int_eq(CALL(s, ROW, n, q, d, k, d, v, e, out, e - 1, 2, NULL), -11);
    /* no rows: nothing to do, absorb or not */
    ck_assert_int_eq(CALL(s, ROW, 0, NULL, d, NULL, d, NULL, e, NULL, e, 1, NULL), 0);
#undef CALL
    for (int i = 0; i < 12; i++)
        ck_assert(out[i] == -1);
    ck_assert(same_state(s, ref));
    P(state_destroy)(s), P(state_destroy)(ref);
    P(plan_destroy)(p);
}
END_TEST

/* ---- the checks without the call ---- */

/* A list of argument sets, each valid but for one change; every check
 * returns what its call returns, and writes nothing. */
START_TEST(checks_agree_with_calls)
{
    int64_t d = 3, e = 2, nq = 5, nk = 4;
    linattn_opts o;
    linattn_opts_init(&o);
    o.check_finite = 1;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, &o);
    real q[15] = {0}, k[12] = {0}, v[8] = {0}, out[10], nan_k[12] = {0};
    nan_k[11] = (real)NAN;
    for (int c = 0; c < 14; c++) {
        const P(plan) *pp = p;
        int layout = ROW;
        int64_t a_nq = nq, a_nk = nk, ldq = d, ldk = d, ldv = e, ldo = e;
        const real *qq = q, *kk = k, *vv = v;
        real *oo = out;
        switch (c) {
        case 0: break;
        case 1: pp = NULL; break;
        case 2: layout = 0; break;
        case 3: a_nq = -1; break;
        case 4: a_nk = -2; break;
        case 5: qq = NULL; break;
        case 6: ldq = 2; break;
        case 7: kk = NULL; break;
        case 8: ldk = 0; break;
        case 9: vv = NULL; break;
        case 10: ldv = 1; break;
        case 11: oo = NULL; break;
        case 12: ldo = 1; break;
        case 13: kk = nan_k; break;
        }
        for (int i = 0; i < 10; i++)
            out[i] = -9;
        int want = P(attention)(pp, layout, a_nq, a_nk, qq, ldq, kk, ldk, vv,
                                ldv, oo, ldo, NULL);
        ck_assert_int_eq(c == 0 ? want == 0 : want != 0, 1);
        for (int i = 0; i < 10; i++)
            out[i] = -9;
        ck_assert_int_eq(P(attention_check)(pp, layout, a_nq, a_nk, qq, ldq, kk,
                                            ldk, vv, ldv, oo, ldo), want);
        for (int i = 0; i < 10; i++)
            ck_assert(out[i] == -9);
        if (c == 4)
            continue; /* causal has one size */
        int64_t n = c == 3 ? -1 : nk;
        int wantc = P(causal)(pp, layout, n, qq, ldq, kk, ldk, vv, ldv, oo, ldo,
                              NULL);
        ck_assert_int_eq(c == 0 ? wantc == 0 : wantc != 0, 1);
        for (int i = 0; i < 10; i++)
            out[i] = -9;
        ck_assert_int_eq(P(causal_check)(pp, layout, n, qq, ldq, kk, ldk, vv, ldv,
                                         oo, ldo), wantc);
        for (int i = 0; i < 10; i++)
            ck_assert(out[i] == -9);
    }
    P(plan_destroy)(p);
}
END_TEST

START_TEST(batched_checks_agree_with_calls)
{
    int64_t d = 2, e = 2, n = 3, B = 2, H = 2;
    linattn_opts o;
    linattn_opts_init(&o);
    o.check_finite = 1;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, &o);
    real in[2 * 2 * 3 * 2] = {0}, nan_in[2 * 2 * 3 * 2] = {0}, out[2 * 2 * 3 * 2];
    nan_in[23] = (real)NAN;
    const linattn_strides s = {d, H * n * d, n * d}, neg = {d, -1, n * d},
                          overlap = {d, 0, n * d};
    for (int c = 0; c < 9; c++) {
        int64_t batch = B, heads = H, nn = n;
        const real *kk = in;
        const linattn_strides *sq = &s, *sout = &s;
        real *oo = out;
        switch (c) {
        case 0: break;
        case 1: batch = -1; break;
        case 2: heads = -1; break;
        case 3: nn = -1; break;
        case 4: sq = NULL; break;
        case 5: sq = &neg; break;
        case 6: sout = &overlap; break; /* two batches on one output */
        case 7: oo = (real *)in; break;  /* output meets an input */
        case 8: kk = nan_in; break;
        }
        for (int causal = 0; causal < 2; causal++) {
            for (int i = 0; i < 24; i++)
                out[i] = -9;
            int want = causal
                ? P(batched_causal)(p, ROW, batch, heads, nn, in, sq, kk, &s,
                                    in, &s, oo, sout, NULL)
                : P(batched_attention)(p, ROW, batch, heads, nn, nn, in, sq, kk,
                                       &s, in, &s, oo, sout, NULL);
            ck_assert_int_eq(c == 0 ? want == 0 : want != 0, 1);
            for (int i = 0; i < 24; i++)
                out[i] = -9;
            int got = causal
                ? P(batched_causal_check)(p, ROW, batch, heads, nn, in, sq, kk,
                                          &s, in, &s, oo, sout)
                : P(batched_attention_check)(p, ROW, batch, heads, nn, nn, in,
                                             sq, kk, &s, in, &s, oo, sout);
            ck_assert_msg(got == want, "case %d causal %d: %d vs %d", c, causal,
                          got, want);
            for (int i = 0; i < 24; i++)
                ck_assert(out[i] == -9);
        }
    }
    ck_assert_int_eq(P(batched_attention_check)(NULL, ROW, B, H, n, n, in, &s, in,
                                                &s, in, &s, out, &s), -1);
    ck_assert_int_eq(P(batched_causal_check)(p, 3, B, H, n, in, &s, in, &s, in,
                                             &s, out, &s), -2);
    P(plan_destroy)(p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("distrib " PREC);
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fingerprint_covers_the_plan);
    tcase_add_test(tc, fingerprint_follows_custom_weights);
    tcase_add_test(tc, state_plan_reads_back);
    tcase_add_loop_test(tc, export_is_the_sum_of_features, 0, 2);
    tcase_add_loop_test(tc, import_restores_and_sums, 0, 2);
    tcase_add_test(tc, import_errors_leave_state);
    tcase_add_loop_test(tc, from_zero_is_causal, 0, 6);
    tcase_add_loop_test(tc, segments_equal_whole, 0, 6);
    tcase_add_loop_test(tc, segments_under_count, 0, 4);
    tcase_add_loop_test(tc, causality_across_segments, 0, 3);
    tcase_add_test(tc, state_causal_failures_leave_state);
    tcase_add_test(tc, state_causal_argument_errors);
    tcase_add_loop_test(tc, state_causal_token_overflow, 0, 2);
    tcase_add_test(tc, checks_agree_with_calls);
    tcase_add_test(tc, batched_checks_agree_with_calls);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
