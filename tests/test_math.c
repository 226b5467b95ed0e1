/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_math.c -- numerical tests, compiled once per precision.
 *
 * Factored attention against the naive rescan and against plain-loop
 * references (long double), over awkward shapes and both layouts; the
 * invariants of the additive state; the normalizer policies; softmax.
 */
#include "testutil.h"
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
#include <cblas.h>
#endif

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

typedef struct {
    int64_t nq, nk, d, e, block, pad;
} shape;

/* n = 1, n not a multiple of the block, d != e, d = 1, padded ld, C > n. */
static const shape shapes[] = {
    {1, 1, 1, 1, 0, 0},   {1, 5, 3, 2, 0, 2},   {23, 17, 4, 6, 7, 3},
    {40, 33, 1, 5, 8, 1}, {9, 64, 8, 3, 64, 0}, {130, 129, 6, 6, 16, 5},
    {5, 300, 2, 1, 0, 4}, {64, 64, 16, 16, 100, 0},
};
static const int maps[] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                           LINATTN_MAP_RELU};
static const int layouts[] = {ROW, COL};

static P(plan) *make_plan(int map, int64_t d, int64_t e, int64_t block)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = block;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* Data range per map: identity and ReLU get positive-leaning inputs so
 * that normalizers are well away from zero (the policy tests cover the
 * rest); elu+1 is positive for any input. */
static void data_range(int map, double *lo, double *hi)
{
    *lo = map == LINATTN_MAP_ELU1 ? -2.0 : 0.05;
    *hi = map == LINATTN_MAP_ELU1 ? 2.0 : 1.0;
}

START_TEST(factored_matches_naive_and_reference)
{
    const shape *s = &shapes[_i % (int)(sizeof shapes / sizeof *shapes)];
    int variant = _i / (int)(sizeof shapes / sizeof *shapes);
    int map = maps[variant % 3], layout = layouts[variant / 3];
    uint64_t seed = 1234 + (uint64_t)_i;
    double lo, hi;
    data_range(map, &lo, &hi);
    tmat q = tmat_rand(layout, s->nq, s->d, s->pad, lo, hi, &seed);
    tmat k = tmat_rand(layout, s->nk, s->d, s->pad, lo, hi, &seed);
    tmat v = tmat_rand(layout, s->nk, s->e, s->pad, -1, 1, &seed);
    tmat fo = tmat_like(&q, s->nq, s->e, s->pad);
    tmat no = tmat_like(&q, s->nq, s->e, s->pad);
    long double *ref = malloc((size_t)(s->nq * s->e) * sizeof *ref);
    P(plan) *p = make_plan(map, s->d, s->e, s->block);

    ck_assert_int_eq(P(attention)(p, layout, s->nq, s->nk, q.a, q.ld, k.a,
                                  k.ld, v.a, v.ld, fo.a, fo.ld, NULL), 0);
    ck_assert_int_eq(P(naive)(p, layout, s->nq, s->nk, q.a, q.ld, k.a, k.ld,
                              v.a, v.ld, no.a, no.ld, NULL), 0);
    ref_linear(map, &q, &k, &v, ref);
    double e_fn = rel_diff(&fo, &no), e_fr = rel_err(&fo, ref);
    double e_nr = rel_err(&no, ref);
    ck_assert_msg(e_fn < TOL && e_fr < TOL && e_nr < TOL,
                  "%s map %d layout %d nq %lld nk %lld d %lld e %lld: "
                  "factored-naive %g factored-ref %g naive-ref %g",
                  PREC, map, layout, (long long)s->nq, (long long)s->nk,
                  (long long)s->d, (long long)s->e, e_fn, e_fr, e_nr);
    ck_assert(tmat_padding_intact(&fo) && tmat_padding_intact(&no));

    P(plan_destroy)(p);
    free(ref);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&fo), tmat_free(&no);
}
END_TEST

/* Streaming the keys in uneven pieces, then querying, equals one call. */
START_TEST(state_pieces_equal_one_call)
{
    uint64_t seed = 99;
    int64_t n = 50, d = 5, e = 3;
    tmat q = tmat_rand(ROW, 7, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat a = tmat_like(&q, 7, e, 0), b = tmat_like(&q, 7, e, 0);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 4);
    P(state) *st;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    const int64_t cuts[] = {0, 1, 2, 9, 9, 30, 50};
    for (int c = 0; c + 1 < 7; c++)
        ck_assert_int_eq(P(state_update)(st, ROW, cuts[c + 1] - cuts[c],
                                         k.a + cuts[c] * d, d,
                                         v.a + cuts[c] * e, e), 0);
    int64_t tokens = -1;
    ck_assert_int_eq(P(state_get)(st, ROW, NULL, 0, NULL, &tokens), 0);
    ck_assert_int_eq(tokens, n);
    ck_assert_int_eq(P(state_query)(st, ROW, 7, q.a, d, a.a, e, NULL, 0,
                                    NULL, NULL), 0);
    ck_assert_int_eq(P(attention)(p, ROW, 7, n, q.a, d, k.a, d, v.a, e, b.a,
                                  e, NULL), 0);
    ck_assert(rel_diff(&a, &b) < TOL);
    P(state_destroy)(st);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&a), tmat_free(&b);
}
END_TEST

/* The state of a concatenation equals the merge of the parts' states. */
START_TEST(merge_equals_concatenation)
{
    uint64_t seed = 7;
    int64_t n = 40, d = 4, e = 6, split = 13;
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 0);
    P(state) *all, *left, *right, *copy;
    ck_assert_int_eq(P(state_create)(&all, p), 0);
    ck_assert_int_eq(P(state_create)(&left, p), 0);
    ck_assert_int_eq(P(state_create)(&right, p), 0);
    ck_assert_int_eq(P(state_create)(&copy, p), 0);
    P(state_update)(all, ROW, n, k.a, d, v.a, e);
    P(state_update)(left, ROW, split, k.a, d, v.a, e);
    P(state_update)(right, ROW, n - split, k.a + split * d, d, v.a + split * e, e);
    ck_assert_int_eq(P(state_merge)(left, right), 0);
    real s1[24], s2[24], z1[4], z2[4];
    int64_t t1, t2;
    P(state_get)(all, ROW, s1, e, z1, &t1);
    P(state_get)(left, ROW, s2, e, z2, &t2);
    ck_assert_int_eq(t1, t2);
    for (int i = 0; i < 24; i++)
        ck_assert(fabs(s1[i] - s2[i]) <= TOL * (1 + fabs(s1[i])));
    for (int i = 0; i < 4; i++)
        ck_assert(fabs(z1[i] - z2[i]) <= TOL * (1 + fabs(z1[i])));
    /* copy then reset: the copy keeps the numbers, the reset one is zero */
    ck_assert_int_eq(P(state_copy)(copy, all), 0);
    ck_assert_int_eq(P(state_reset)(all), 0);
    P(state_get)(copy, ROW, s2, e, z2, &t2);
    ck_assert_int_eq(t2, n);
    for (int i = 0; i < 24; i++)
        ck_assert(s1[i] == s2[i]);
    P(state_get)(all, ROW, s2, e, z2, &t2);
    ck_assert_int_eq(t2, 0);
    for (int i = 0; i < 24; i++)
        ck_assert(s2[i] == 0);
    P(state_destroy)(all), P(state_destroy)(left), P(state_destroy)(right);
    P(state_destroy)(copy);
    P(plan_destroy)(p);
    tmat_free(&k), tmat_free(&v);
}
END_TEST

/* out is linear in V: out(a V1 + b V2) = a out(V1) + b out(V2). */
START_TEST(output_linear_in_values)
{
    uint64_t seed = 5;
    int64_t nq = 11, nk = 29, d = 3, e = 4;
    tmat q = tmat_rand(COL, nq, d, 1, -1, 1, &seed);
    tmat k = tmat_rand(COL, nk, d, 1, -1, 1, &seed);
    tmat v1 = tmat_rand(COL, nk, e, 0, -1, 1, &seed);
    tmat v2 = tmat_rand(COL, nk, e, 0, -1, 1, &seed);
    tmat v3 = tmat_like(&v1, nk, e, 0);
    for (int64_t i = 0; i < nk * e; i++)
        v3.a[i] = (real)(2.0 * v1.a[i] - 0.5 * v2.a[i]);
    tmat o1 = tmat_like(&q, nq, e, 0), o2 = tmat_like(&q, nq, e, 0);
    tmat o3 = tmat_like(&q, nq, e, 0), o4 = tmat_like(&q, nq, e, 0);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 5);
    P(attention)(p, COL, nq, nk, q.a, q.ld, k.a, k.ld, v1.a, v1.ld, o1.a, o1.ld, NULL);
    P(attention)(p, COL, nq, nk, q.a, q.ld, k.a, k.ld, v2.a, v2.ld, o2.a, o2.ld, NULL);
    P(attention)(p, COL, nq, nk, q.a, q.ld, k.a, k.ld, v3.a, v3.ld, o3.a, o3.ld, NULL);
    for (int64_t i = 0; i < nq * e; i++)
        o4.a[i] = (real)(2.0 * o1.a[i] - 0.5 * o2.a[i]);
    ck_assert(rel_diff(&o3, &o4) < 20 * TOL);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v1), tmat_free(&v2);
    tmat_free(&v3), tmat_free(&o1), tmat_free(&o2), tmat_free(&o3), tmat_free(&o4);
}
END_TEST

/* The same data in row- and column-major order gives the same outputs. */
START_TEST(row_major_equals_col_major)
{
    uint64_t s1 = 11, s2 = 11;
    int64_t nq = 19, nk = 37, d = 5, e = 2;
    tmat qr = tmat_rand(ROW, nq, d, 2, -1, 1, &s1);
    tmat kr = tmat_rand(ROW, nk, d, 0, -1, 1, &s1);
    tmat vr = tmat_rand(ROW, nk, e, 1, -1, 1, &s1);
    tmat qc = tmat_rand(COL, nq, d, 3, -1, 1, &s2);
    tmat kc = tmat_rand(COL, nk, d, 0, -1, 1, &s2);
    tmat vc = tmat_rand(COL, nk, e, 4, -1, 1, &s2);
    tmat orow = tmat_like(&qr, nq, e, 0), ocol = tmat_like(&qc, nq, e, 2);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 6);
    ck_assert_int_eq(P(attention)(p, ROW, nq, nk, qr.a, qr.ld, kr.a, kr.ld,
                                  vr.a, vr.ld, orow.a, orow.ld, NULL), 0);
    ck_assert_int_eq(P(attention)(p, COL, nq, nk, qc.a, qc.ld, kc.a, kc.ld,
                                  vc.a, vc.ld, ocol.a, ocol.ld, NULL), 0);
    ck_assert(rel_diff(&orow, &ocol) < TOL);
    ck_assert(tmat_padding_intact(&ocol));
    P(plan_destroy)(p);
    tmat_free(&qr), tmat_free(&kr), tmat_free(&vr), tmat_free(&qc);
    tmat_free(&kc), tmat_free(&vc), tmat_free(&orow), tmat_free(&ocol);
}
END_TEST

/* num and den requested separately give out = num / den. */
START_TEST(numerators_and_normalizers)
{
    uint64_t seed = 3;
    int64_t n = 9, d = 3, e = 4;
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, 12, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, 12, e, 0, -1, 1, &seed);
    tmat out = tmat_like(&q, n, e, 0), num = tmat_like(&q, n, e, 1);
    real den[9];
    P(plan) *p = make_plan(LINATTN_MAP_RELU, d, e, 4);
    P(state) *st;
    P(state_create)(&st, p);
    P(state_update)(st, ROW, 12, k.a, d, v.a, e);
    /* ReLU of signed data can give zero normalizers: ask for raw values. */
    ck_assert_int_eq(P(state_query)(st, ROW, n, q.a, d, NULL, 0, num.a, num.ld,
                                    den, NULL), 0);
    real s[12], z[3];
    P(state_get)(st, COL, s, d, z, NULL);
    for (int64_t i = 0; i < n; i++) {
        double dd = 0;
        for (int t = 0; t < d; t++) {
            double f = q.a[i * d + t] > 0 ? q.a[i * d + t] : 0;
            dd += f * z[t];
        }
        ck_assert(fabs(den[i] - dd) <= TOL * (1 + fabs(dd)));
        for (int c = 0; c < e; c++) {
            double nn = 0;
            for (int t = 0; t < d; t++)
                nn += (q.a[i * d + t] > 0 ? q.a[i * d + t] : 0) * s[t + c * d];
            ck_assert(fabs(*tmat_at(&num, i, c) - nn) <= TOL * (1 + fabs(nn)));
        }
    }
    ck_assert(tmat_padding_intact(&num));
    P(state_destroy)(st);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out), tmat_free(&num);
}
END_TEST

/* A zero normalizer in row 5 of 8: EDENOM, bad_row = 5, rows 0..4 written,
 * row 5 untouched, rows 6..7 untouched or correct (another thread may have
 * answered them); with eps the call succeeds with num / (den + eps). */
START_TEST(bad_normalizer_reported)
{
    int64_t nq = 8, nk = 2, d = 2, e = 1;
    real q[16], k[4] = {1, 0, 0, 1}, v[2] = {3, 5}, out[8];
    for (int i = 0; i < 8; i++)
        q[2 * i] = (real)(i + 1), q[2 * i + 1] = 1;
    q[10] = -1; /* row 5: den = -1 + 1 = 0 */
    q[11] = 1;
    for (int block = 1; block <= 9; block += 4) {
        P(plan) *p = make_plan(LINATTN_MAP_IDENTITY, d, e, block);
        for (int path = 0; path < 2; path++) {
            for (int i = 0; i < 8; i++)
                out[i] = -777;
            int64_t bad = -1;
            int st = path ? P(naive)(p, ROW, nq, nk, q, d, k, d, v, e, out, e, &bad)
                          : P(attention)(p, ROW, nq, nk, q, d, k, d, v, e, out, e, &bad);
            ck_assert_int_eq(st, LINATTN_EDENOM);
            ck_assert_int_eq(bad, 5);
            for (int i = 0; i < 5; i++)
                ck_assert(fabs(out[i] - (3.0 * (i + 1) + 5) / (i + 2)) < TOL);
            ck_assert(out[5] == -777);
            for (int i = 6; i < 8; i++)
                ck_assert(out[i] == -777 ||
                          fabs(out[i] - (3.0 * (i + 1) + 5) / (i + 2)) < TOL);
        }
        P(plan_destroy)(p);
    }
    /* Negative normalizer: refused by POSITIVE, accepted by NONZERO. */
    real qn[2] = {-2, 1}, o1 = 0;
    linattn_opts o;
    linattn_opts_init(&o);
    P(plan) *p;
    P(plan_create)(&p, LINATTN_MAP_IDENTITY, d, e, &o);
    ck_assert_int_eq(P(attention)(p, ROW, 1, nk, qn, d, k, d, v, e, &o1, e, NULL),
                     LINATTN_EDENOM);
    P(plan_destroy)(p);
    o.denom = LINATTN_DENOM_NONZERO;
    P(plan_create)(&p, LINATTN_MAP_IDENTITY, d, e, &o);
    ck_assert_int_eq(P(attention)(p, ROW, 1, nk, qn, d, k, d, v, e, &o1, e, NULL), 0);
    ck_assert(fabs(o1 - (-6.0 + 5.0) / (-1.0)) < TOL);
    P(plan_destroy)(p);
    /* eps: zero normalizer becomes eps; no keys at all gives 0 / eps. */
    o.denom = LINATTN_DENOM_POSITIVE;
    o.eps = 0.5;
    P(plan_create)(&p, LINATTN_MAP_IDENTITY, d, e, &o);
    ck_assert_int_eq(P(attention)(p, ROW, 8, nk, q, d, k, d, v, e, out, e, NULL), 0);
    ck_assert(fabs(out[5] - (-3.0 + 5.0) / 0.5) < TOL);
    ck_assert_int_eq(P(attention)(p, ROW, 1, 0, q, d, NULL, d, NULL, e, out, e, NULL), 0);
    ck_assert(out[0] == 0);
    /* the naive path too, with a V leading dimension BLAS could not take
     * (no keys: V is never read, and must not reach BLAS either) */
    out[0] = -777;
    ck_assert_int_eq(P(naive)(p, ROW, 1, 0, q, d, NULL, d, NULL, (int64_t)1 << 31,
                              out, e, NULL), 0);
    ck_assert(out[0] == 0);
    P(plan_destroy)(p);
    /* NaN input: the normalizer is NaN, reported, not written. */
    linattn_opts_init(&o);
    P(plan_create)(&p, LINATTN_MAP_ELU1, d, e, &o);
    real qnan[2] = {NAN, 0};
    out[0] = -777;
    int64_t bad = -1;
    ck_assert_int_eq(P(attention)(p, ROW, 1, nk, qnan, d, k, d, v, e, out, e, &bad),
                     LINATTN_EDENOM);
    ck_assert(bad == 0 && out[0] == -777);
    P(plan_destroy)(p);
}
END_TEST

/* Softmax against the plain-loop reference, including huge scores that a
 * softmax without the max subtraction would overflow. */
START_TEST(softmax_matches_reference)
{
    uint64_t seed = 21;
    for (int layout = ROW; layout <= COL; layout++) {
        for (int big = 0; big < 2; big++) {
            int64_t nq = 13, nk = 21, d = 4, e = 3;
            tmat q = tmat_rand(layout, nq, d, 1, -1, 1, &seed);
            tmat k = tmat_rand(layout, nk, d, 2, -1, 1, &seed);
            tmat v = tmat_rand(layout, nk, e, 0, -1, 1, &seed);
            tmat o = tmat_like(&q, nq, e, 1);
            long double ref[13 * 3];
            real scale = big ? (real)300 : (real)0.5;
            ck_assert_int_eq(P(softmax)(layout, nq, nk, d, e, scale, q.a, q.ld,
                                        k.a, k.ld, v.a, v.ld, o.a, o.ld), 0);
            ref_softmax(scale, &q, &k, &v, ref);
            double err = rel_err(&o, ref);
            /* exp amplifies the rounding of scale * q.k by that product. */
            double tol = big ? 2000 * TOL : 10 * TOL;
            ck_assert_msg(err < tol, "%s softmax layout %d big %d err %g", PREC,
                          layout, big, err);
            ck_assert(tmat_padding_intact(&o));
            tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&o);
        }
    }
}
END_TEST

/* The float library tracks the double one at a long sequence: the state
 * accumulates in double, so the error does not grow with n. */
START_TEST(long_sequence_accuracy)
{
    uint64_t seed = 77;
    int64_t nk = 1 << 16, nq = 64, d = 8, e = 8;
    tmat q = tmat_rand(ROW, nq, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, nk, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, nk, e, 0, -1, 1, &seed);
    tmat o = tmat_like(&q, nq, e, 0);
    long double *ref = malloc((size_t)(nq * e) * sizeof *ref);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 0);
    ck_assert_int_eq(P(attention)(p, ROW, nq, nk, q.a, d, k.a, d, v.a, e, o.a,
                                  e, NULL), 0);
    ref_linear(LINATTN_MAP_ELU1, &q, &k, &v, ref);
    double err = rel_err(&o, ref);
    ck_assert_msg(err < 10 * TOL, "%s n = 2^16: relative error %g", PREC, err);
    P(plan_destroy)(p);
    free(ref);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&o);
}
END_TEST

/* features() equals phi applied elementwise, in both layouts. */
START_TEST(features_elementwise)
{
    uint64_t seed = 4;
    for (int mi = 0; mi < 3; mi++)
        for (int layout = ROW; layout <= COL; layout++) {
            tmat x = tmat_rand(layout, 10, 3, 1, -30, 3, &seed);
            tmat f = tmat_like(&x, 10, 3, 2);
            P(plan) *p = make_plan(maps[mi], 3, 2, 4);
            ck_assert_int_eq(P(features)(p, layout, 10, x.a, x.ld, f.a, f.ld), 0);
            for (int i = 0; i < 10; i++)
                for (int j = 0; j < 3; j++) {
                    long double want = ref_phi(maps[mi], *tmat_at(&x, i, j));
                    ck_assert(fabsl(*tmat_at(&f, i, j) - want) <=
                              2 * TOL * fabsl(want) + 1e-300L);
                }
            ck_assert(tmat_padding_intact(&f));
            P(plan_destroy)(p);
            tmat_free(&x), tmat_free(&f);
        }
}
END_TEST

/* A split call whose bad normalizers sit in the second thread's range (rows
 * 40 and 50 of 64): bad_row is 40, rows before it hold results, row 40 is
 * untouched, later rows hold a result or their old value. */
START_TEST(bad_normalizer_in_split_call)
{
    int64_t nq = 64, nk = 2, d = 2, e = 1;
    real q[128], k[4] = {1, 0, 0, 1}, v[2] = {3, 5}, out[64];
    for (int i = 0; i < nq; i++)
        q[2 * i] = (real)(i % 7 + 1), q[2 * i + 1] = 1, out[i] = -777;
    q[80] = -1, q[100] = -1; /* rows 40 and 50: den = -1 + 1 = 0 */
    P(plan) *p = make_plan(LINATTN_MAP_IDENTITY, d, e, 4);
    int64_t bad = -1;
    for (int path = 0; path < 2; path++) {
        for (int i = 0; i < nq; i++)
            out[i] = -777;
        int st = path ? P(naive)(p, ROW, nq, nk, q, d, k, d, v, e, out, e, &bad)
                      : P(attention)(p, ROW, nq, nk, q, d, k, d, v, e, out, e, &bad);
        ck_assert_int_eq(st, LINATTN_EDENOM);
        ck_assert_int_eq(bad, 40);
        for (int i = 0; i < nq; i++) {
            double want = (3.0 * q[2 * i] + 5) / (q[2 * i] + 1);
            if (i < 40)
                ck_assert(fabs(out[i] - want) < TOL * 10);
            else if (i == 40 || i == 50)
                ck_assert(out[i] == -777);
            else
                ck_assert(out[i] == -777 || fabs(out[i] - want) < TOL * 10);
        }
    }
    P(plan_destroy)(p);
    /* NONZERO still refuses a zero normalizer. */
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = LINATTN_DENOM_NONZERO;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_IDENTITY, d, e, &o), 0);
    ck_assert_int_eq(P(attention)(p, ROW, nq, nk, q, d, k, d, v, e, out, e, &bad),
                     LINATTN_EDENOM);
    ck_assert_int_eq(bad, 40);
    P(plan_destroy)(p);
}
END_TEST

/* out, num and den together, column major, several rows: out = num / den;
 * merge and copy of a state with itself. */
START_TEST(outputs_together_and_self_merge)
{
    uint64_t seed = 8;
    int64_t n = 13, d = 3, e = 4;
    tmat q = tmat_rand(COL, n, d, 2, -1, 1, &seed);
    tmat k = tmat_rand(COL, 20, d, 1, -1, 1, &seed);
    tmat v = tmat_rand(COL, 20, e, 0, -1, 1, &seed);
    tmat out = tmat_like(&q, n, e, 3), num = tmat_like(&q, n, e, 1);
    real den[13];
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 5);
    P(state) *st;
    P(state_create)(&st, p);
    P(state_update)(st, COL, 20, k.a, k.ld, v.a, v.ld);
    ck_assert_int_eq(P(state_query)(st, COL, n, q.a, q.ld, out.a, out.ld, num.a,
                                    num.ld, den, NULL), 0);
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < e; c++)
            ck_assert(fabs(*tmat_at(&out, i, c) - *tmat_at(&num, i, c) / den[i]) <=
                      4 * TOL * (1 + fabs(*tmat_at(&out, i, c))));
    ck_assert(tmat_padding_intact(&out) && tmat_padding_intact(&num));
    real s1[12], s2[12], z1[3], z2[3];
    int64_t t1, t2;
    P(state_get)(st, ROW, s1, e, z1, &t1);
    ck_assert_int_eq(P(state_copy)(st, st), 0);
    ck_assert_int_eq(P(state_merge)(st, st), 0);
    P(state_get)(st, ROW, s2, e, z2, &t2);
    ck_assert_int_eq(t2, 2 * t1);
    for (int i = 0; i < 12; i++)
        ck_assert(s2[i] == 2 * s1[i]);
    for (int i = 0; i < 3; i++)
        ck_assert(z2[i] == 2 * z1[i]);
    P(state_destroy)(st);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out), tmat_free(&num);
}
END_TEST

#ifdef _OPENMP
#include <omp.h>
/* One thread and two give the same results to rounding, on a size that
 * the library splits (many small blocks), for update, query and naive. */
START_TEST(thread_counts_agree)
{
    uint64_t seed = 31;
    int64_t n = 300, d = 5, e = 3;
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat o1 = tmat_like(&q, n, e, 0), o2 = tmat_like(&q, n, e, 0);
    tmat n1 = tmat_like(&q, n, e, 0), n2 = tmat_like(&q, n, e, 0);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 8);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, o1.a, e, NULL), 0);
    ck_assert_int_eq(P(naive)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, n1.a, e, NULL), 0);
    omp_set_num_threads(2);
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, o2.a, e, NULL), 0);
    ck_assert_int_eq(P(naive)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, n2.a, e, NULL), 0);
    omp_set_num_threads(saved);
    ck_assert(rel_diff(&o1, &o2) < TOL);
    ck_assert(rel_diff(&n1, &n2) < TOL);
    ck_assert(rel_diff(&o2, &n2) < TOL);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
    tmat_free(&o1), tmat_free(&o2), tmat_free(&n1), tmat_free(&n2);
}
END_TEST
#endif

#ifdef _OPENMP
/* The OpenMP team may be smaller than asked (OMP_DYNAMIC, thread limits):
 * every range must still be done.  Asks for 8 threads with dynamic
 * adjustment on, on a machine that has fewer cores. */
START_TEST(smaller_team_than_asked)
{
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    /* OpenBLAS's OpenMP build cannot run under dynamic teams: a GEMM it
     * threads waits forever for the workers the runtime chose not to
     * start (exec_blas spins; seen with 0.3.21).  The library's own
     * ranges are what this test is about, and that BLAS cannot host it. */
    if (openblas_get_parallel() == 2) {
        fprintf(stderr, "smaller_team_than_asked: skipped under OpenBLAS's "
                        "OpenMP build (it hangs with OMP_DYNAMIC)\n");
        return;
    }
#endif
    uint64_t seed = 12;
    int64_t n = 300, d = 4, e = 3;
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat fo = tmat_like(&q, n, e, 0), no = tmat_like(&q, n, e, 0);
    tmat so = tmat_like(&q, n, e, 0);
    long double *ref = malloc((size_t)(n * e) * sizeof *ref);
    long double *sref = malloc((size_t)(n * e) * sizeof *sref);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 8);
    P(state) *st;
    P(state_create)(&st, p);
    int saved = omp_get_max_threads(), dyn = omp_get_dynamic();
    omp_set_dynamic(1);
    omp_set_num_threads(8);
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, fo.a, e, NULL), 0);
    ck_assert_int_eq(P(naive)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, no.a, e, NULL), 0);
    ck_assert_int_eq(P(softmax)(ROW, n, n, d, e, (real)0.5, q.a, d, k.a, d, v.a, e,
                                so.a, e), 0);
    ck_assert_int_eq(P(state_update)(st, ROW, n, k.a, d, v.a, e), 0);
    omp_set_dynamic(dyn);
    omp_set_num_threads(saved);
    ref_linear(LINATTN_MAP_ELU1, &q, &k, &v, ref);
    ref_softmax(0.5L, &q, &k, &v, sref);
    ck_assert(rel_err(&fo, ref) < TOL && rel_err(&no, ref) < TOL);
    ck_assert(rel_err(&so, sref) < 10 * TOL);
    real z[4];
    int64_t tokens;
    P(state_get)(st, ROW, NULL, 0, z, &tokens);
    ck_assert_int_eq(tokens, n);
    for (int j = 0; j < d; j++) {
        long double want = 0;
        for (int64_t i = 0; i < n; i++)
            want += ref_phi(LINATTN_MAP_ELU1, k.a[i * d + j]);
        ck_assert(fabsl(z[j] - want) <= TOL * want);
    }
    P(state_destroy)(st);
    P(plan_destroy)(p);
    free(ref), free(sref);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
    tmat_free(&fo), tmat_free(&no), tmat_free(&so);
}
END_TEST

/* Threads of the caller use one shared plan and one shared state at once:
 * each thread queries the state, and runs the one-call path on its own
 * data (values scaled by its number); every answer equals the serial one.
 * Afterwards OpenBLAS's thread count is what it was. */
START_TEST(concurrent_queries_on_one_state)
{
    uint64_t seed = 13;
    int64_t n = 200, d = 4, e = 3;
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat want = tmat_like(&q, n, e, 0);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 8);
    P(state) *st;
    P(state_create)(&st, p);
    P(state_update)(st, ROW, n, k.a, d, v.a, e);
    P(state_query)(st, ROW, n, q.a, d, want.a, e, NULL, 0, NULL, NULL);
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    int blas_threads = openblas_get_num_threads();
#endif
    /* serial answers of the one-call path for values scaled by 1..4 */
    real *serial = malloc((size_t)(4 * n * e) * sizeof(real));
    real *vs = malloc((size_t)(4 * n * e) * sizeof(real));
    for (int t = 0; t < 4; t++) {
        for (int64_t i = 0; i < n * e; i++)
            vs[t * n * e + i] = (real)(t + 1) * v.a[i];
        P(attention)(p, ROW, n, n, q.a, d, k.a, d, vs + t * n * e, e,
                     serial + t * n * e, e, NULL);
    }
    int mismatches = 0;
#pragma omp parallel num_threads(4) reduction(+ : mismatches)
    {
        int t = omp_get_thread_num();
        real *o = malloc((size_t)(n * e) * sizeof(real));
        for (int rep = 0; rep < 5; rep++) {
            if (P(state_query)(st, ROW, n, q.a, d, o, e, NULL, 0, NULL, NULL))
                mismatches++;
            for (int64_t i = 0; i < n * e; i++)
                mismatches += o[i] != want.a[i];
            /* the one-call path on this thread's own data */
            P(attention)(p, ROW, n, n, q.a, d, k.a, d, vs + t * n * e, e, o, e,
                         NULL);
            for (int64_t i = 0; i < n * e; i++)
                mismatches += fabs(o[i] - serial[t * n * e + i]) >
                              TOL * (1 + fabs(serial[t * n * e + i]));
        }
        free(o);
    }
    free(serial);
    free(vs);
    ck_assert_int_eq(mismatches, 0);
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    /* a split call in between leaves OpenBLAS as it was */
    tmat big = tmat_like(&q, n, e, 0);
    P(attention)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, big.a, e, NULL);
    ck_assert_int_eq(openblas_get_num_threads(), blas_threads);
    tmat_free(&big);
#endif
    P(state_destroy)(st);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&want);
}
END_TEST
#endif

/* The NaN/Inf policy.  Default: NaN in the values reaches the outputs of
 * the rows it touches (status 0); NaN in the keys makes the normalizers
 * NaN, reported as EDENOM.  With check_finite: LINATTN_ENONFINITE before
 * anything is written or absorbed. */
START_TEST(nonfinite_input_policy)
{
    int64_t n = 6, d = 2, e = 2;
    real q[12], k[12], v[12], out[12];
    for (int i = 0; i < 12; i++)
        q[i] = k[i] = (real)(0.1 * (i % 5)), v[i] = (real)(i % 3);
    v[5] = (real)NAN;
    linattn_opts o;
    linattn_opts_init(&o);
    P(plan) *p;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, d, e, &o), 0);
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q, d, k, d, v, e, out, e, NULL), 0);
    for (int i = 0; i < (int)n; i++)
        ck_assert(isnan(out[i * e + 1]) && isfinite(out[i * e]));
    v[5] = 1;
    k[3] = (real)INFINITY;
    int64_t bad = -1;
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q, d, k, d, v, e, out, e, &bad),
                     LINATTN_EDENOM);
    ck_assert_int_eq(bad, 0);
    P(plan_destroy)(p);

    o.check_finite = 1;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, d, e, &o), 0);
    for (int i = 0; i < 12; i++)
        out[i] = -777;
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q, d, k, d, v, e, out, e, NULL),
                     LINATTN_ENONFINITE);
    ck_assert_int_eq(P(naive)(p, COL, n, n, q, n, k, n, v, n, out, n, NULL),
                     LINATTN_ENONFINITE);
    P(state) *st;
    P(state_create)(&st, p);
    ck_assert_int_eq(P(state_update)(st, ROW, n, k, d, v, e), LINATTN_ENONFINITE);
    int64_t tokens = -1;
    P(state_get)(st, ROW, NULL, 0, NULL, &tokens);
    ck_assert_int_eq(tokens, 0);
    k[3] = 0;
    ck_assert_int_eq(P(state_update)(st, ROW, n, k, d, v, e), 0);
    q[7] = (real)NAN;
    ck_assert_int_eq(P(state_query)(st, ROW, n, q, d, out, e, NULL, 0, NULL, NULL),
                     LINATTN_ENONFINITE);
    for (int i = 0; i < 12; i++)
        ck_assert(out[i] == -777);
    q[7] = 0;
    ck_assert_int_eq(P(state_query)(st, ROW, n, q, d, out, e, NULL, 0, NULL, NULL), 0);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

/* Leading dimensions far larger than the rows (row major: padding of 600
 * per row; column major: 700 rows of room for 37) give the results of the
 * tight layout.  The test build with LINATTN_BLAS_INT_MAX = 512 (make
 * check-hard) runs this through the paths that copy such blocks because
 * BLAS could not take their leading dimension. */
START_TEST(large_leading_dimensions)
{
    int64_t nq = 37, nk = 29, d = 3, e = 2;
    for (int layout = ROW; layout <= COL; layout++) {
        int64_t pad = layout == ROW ? 600 : 700 - nq;
        uint64_t s1 = 5, s2 = 5;
        tmat q = tmat_rand(layout, nq, d, 0, 0.1, 1, &s1);
        tmat k = tmat_rand(layout, nk, d, 0, 0.1, 1, &s1);
        tmat v = tmat_rand(layout, nk, e, 0, -1, 1, &s1);
        tmat qw = tmat_rand(layout, nq, d, pad, 0.1, 1, &s2);
        tmat kw = tmat_rand(layout, nk, d, pad, 0.1, 1, &s2);
        tmat vw = tmat_rand(layout, nk, e, pad, -1, 1, &s2);
        /* the kernelized maps too: their projection of such rows is a
         * plain loop (lib/maps/kernelized.c) */
        static const int ldmaps[] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                                     LINATTN_MAP_RELU, LINATTN_MAP_FAVOR,
                                     LINATTN_MAP_FAVOR_HYP, LINATTN_MAP_TAYLOR};
        for (int mi = 0; mi < 6; mi++) {
            int map = ldmaps[mi];
            P(plan) *p = make_plan(map, d, e, 8);
            for (int path = 0; path < 4; path++) {
                tmat o = tmat_like(&q, nq, e, 0), ow = tmat_like(&q, nq, e, pad);
                tmat nw = tmat_like(&q, nq, e, pad);
                real den[37];
                int st1, st2;
                if (path == 0) {
                    st1 = P(attention)(p, layout, nq, nk, q.a, q.ld, k.a, k.ld, v.a, v.ld, o.a, o.ld, NULL);
                    st2 = P(attention)(p, layout, nq, nk, qw.a, qw.ld, kw.a, kw.ld, vw.a, vw.ld, ow.a, ow.ld, NULL);
                } else if (path == 1) {
                    st1 = P(naive)(p, layout, nq, nk, q.a, q.ld, k.a, k.ld, v.a, v.ld, o.a, o.ld, NULL);
                    st2 = P(naive)(p, layout, nq, nk, qw.a, qw.ld, kw.a, kw.ld, vw.a, vw.ld, ow.a, ow.ld, NULL);
                } else if (path == 2) {
                    st1 = P(softmax)(layout, nq, nk, d, e, (real)0.7, q.a, q.ld, k.a, k.ld, v.a, v.ld, o.a, o.ld);
                    st2 = P(softmax)(layout, nq, nk, d, e, (real)0.7, qw.a, qw.ld, kw.a, kw.ld, vw.a, vw.ld, ow.a, ow.ld);
                } else {
                    P(state) *s;
                    P(state_create)(&s, p);
                    P(state_update)(s, layout, nk, kw.a, kw.ld, vw.a, vw.ld);
                    st1 = P(attention)(p, layout, nq, nk, q.a, q.ld, k.a, k.ld, v.a, v.ld, o.a, o.ld, NULL);
                    st2 = P(state_query)(s, layout, nq, qw.a, qw.ld, ow.a, ow.ld, nw.a, nw.ld, den, NULL);
                    for (int64_t i = 0; i < nq && !st2; i++)
                        for (int64_t c = 0; c < e; c++)
                            ck_assert(fabs(*tmat_at(&nw, i, c) / den[i] - *tmat_at(&ow, i, c)) <=
                                      4 * TOL * (1 + fabs(*tmat_at(&ow, i, c))));
                    P(state_destroy)(s);
                }
                ck_assert_int_eq(st1, 0);
                ck_assert_int_eq(st2, 0);
                ck_assert_msg(rel_diff(&ow, &o) < 10 * TOL, "%s layout %d map %d path %d: %g",
                              PREC, layout, map, path, rel_diff(&ow, &o));
                ck_assert(tmat_padding_intact(&ow) && tmat_padding_intact(&nw));
                tmat_free(&o), tmat_free(&ow), tmat_free(&nw);
            }
            P(plan_destroy)(p);
        }
        tmat_free(&q), tmat_free(&k), tmat_free(&v);
        tmat_free(&qw), tmat_free(&kw), tmat_free(&vw);
    }
}
END_TEST

/* Causal, chunked, against the masked naive rescan and the masked
 * reference: n = 1, n not a multiple of C, C = 1, C > n, both layouts,
 * every map. */
START_TEST(causal_matches_naive_and_reference)
{
    static const int64_t ns[] = {1, 23, 130};
    static const int64_t chunks[] = {1, 7, 64, 0};
    int map = maps[_i % 3], layout = layouts[(_i / 3) % 2];
    int64_t n = ns[(_i / 6) % 3], d = 3 + _i % 2, e = 2 + (_i / 2) % 3;
    uint64_t seed = 400 + (uint64_t)_i;
    double lo, hi;
    data_range(map, &lo, &hi);
    tmat q = tmat_rand(layout, n, d, 1, lo, hi, &seed);
    tmat k = tmat_rand(layout, n, d, 0, lo, hi, &seed);
    tmat v = tmat_rand(layout, n, e, 2, -1, 1, &seed);
    tmat no = tmat_like(&q, n, e, 1);
    long double *ref = malloc((size_t)(n * e) * sizeof *ref);
    ref_linear_mask(map, 1, &q, &k, &v, ref);
    for (int ci = 0; ci < 4; ci++) {
        linattn_opts o;
        linattn_opts_init(&o);
        o.chunk = chunks[ci];
        o.block = 16;
        P(plan) *p;
        ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
        tmat co = tmat_like(&q, n, e, 1);
        ck_assert_int_eq(P(causal)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                   co.a, co.ld, NULL), 0);
        ck_assert_int_eq(P(naive_causal)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a,
                                         v.ld, no.a, no.ld, NULL), 0);
        double e1 = rel_err(&co, ref), e2 = rel_err(&no, ref);
        ck_assert_msg(e1 < TOL && e2 < TOL && rel_diff(&co, &no) < TOL,
                      "%s causal map %d layout %d n %lld C %lld: %g %g", PREC, map,
                      layout, (long long)n, (long long)chunks[ci], e1, e2);
        ck_assert(tmat_padding_intact(&co) && tmat_padding_intact(&no));
        tmat_free(&co);
        P(plan_destroy)(p);
    }
    free(ref);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&no);
}
END_TEST

/* Appending one token at a time and querying after each gives the causal
 * result; changing the tokens after position p leaves outputs 0..p
 * bit-identical. */
START_TEST(streaming_and_causality)
{
    uint64_t seed = 77;
    int64_t n = 45, d = 4, e = 3, p0 = 20;
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat c1 = tmat_like(&q, n, e, 0), c2 = tmat_like(&q, n, e, 0);
    tmat so = tmat_like(&q, n, e, 0);
    linattn_opts o;
    linattn_opts_init(&o);
    o.chunk = 8;
    P(plan) *p;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, d, e, &o), 0);
    ck_assert_int_eq(P(causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, c1.a, e, NULL), 0);
    P(state) *st;
    P(state_create)(&st, p);
    for (int64_t i = 0; i < n; i++) {
        ck_assert_int_eq(P(state_update)(st, ROW, 1, k.a + i * d, d, v.a + i * e, e), 0);
        ck_assert_int_eq(P(state_query)(st, ROW, 1, q.a + i * d, d, so.a + i * e, e,
                                        NULL, 0, NULL, NULL), 0);
    }
    ck_assert(rel_diff(&so, &c1) < TOL);
    /* the future changes: the past does not */
    for (int64_t i = (p0 + 1) * d; i < n * d; i++)
        q.a[i] = (real)(q.a[i] * 50 + 3), k.a[i] = (real)(k.a[i] * -40);
    /* non-finite future values too: row p0 shares its chunk with rows
     * 21..23, and 0 * Inf must not reach it */
    for (int64_t i = (p0 + 1) * e; i < n * e; i++)
        v.a[i] = i % 3 ? (real)INFINITY : (real)NAN;
    ck_assert_int_eq(P(causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, c2.a, e, NULL), 0);
    for (int64_t i = 0; i <= p0 * e + e - 1; i++)
        ck_assert(c1.a[i] == c2.a[i]);
    P(state_destroy)(st);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&c1), tmat_free(&c2);
    tmat_free(&so);
}
END_TEST

/* A row that breaks the policy stops the causal call there, and the rows
 * before it hold exactly what they hold when it does not: the triangle of
 * the failing row's chunk is computed as for a clean chunk (before: over
 * the good rows only, whose shorter GEMM gave rows before a NaN query
 * other bits on the generic and AVX2 paths).  Rows 17, 33, 40 and 59 of
 * one 64-row chunk: every diagonal block of the triangle, both layouts. */
START_TEST(failing_row_leaves_earlier_bits)
{
    int64_t n = 60, d = 5, e = 7, rows_bad[] = {17, 33, 40, 59};
    for (int li = 0; li < 2; li++)
        for (int bi = 0; bi < 4; bi++) {
            int layout = layouts[li];
            int64_t bad = rows_bad[bi], got = -1;
            uint64_t seed = 91 + (uint64_t)(li * 4 + bi);
            tmat q = tmat_rand(layout, n, d, 1, -1, 1, &seed);
            tmat k = tmat_rand(layout, n, d, 2, -1, 1, &seed);
            tmat v = tmat_rand(layout, n, e, 0, -1, 1, &seed);
            tmat c1 = tmat_like(&q, n, e, 1), c2 = tmat_like(&q, n, e, 1);
            linattn_opts o;
            linattn_opts_init(&o);
            o.chunk = 64;
            P(plan) *p;
            ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, d, e, &o), 0);
            ck_assert_int_eq(P(causal)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a,
                                       v.ld, c1.a, c1.ld, NULL), 0);
            *tmat_at(&q, bad, 2) = (real)NAN;
            ck_assert_int_eq(P(causal)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a,
                                       v.ld, c2.a, c2.ld, &got),
                             LINATTN_EDENOM);
            ck_assert_int_eq(got, bad);
            for (int64_t i = 0; i < bad; i++)
                for (int64_t j = 0; j < e; j++)
                    ck_assert(memcmp(tmat_at(&c1, i, j), tmat_at(&c2, i, j),
                                     sizeof(real)) == 0);
            P(plan_destroy)(p);
            tmat_free(&q), tmat_free(&k), tmat_free(&v);
            tmat_free(&c1), tmat_free(&c2);
        }
}
END_TEST

/* A query of no rows is a successful no-op in both layouts, with every
 * output given (before: column major with den refused den's leading
 * dimension, n = 0, as -11). */
START_TEST(query_of_no_rows)
{
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 3, 2, 0);
    P(state) *st;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    real q[3] = {1, 2, 3}, out[2] = {7, 7}, num[2] = {7, 7}, den[1] = {7};
    int64_t bad = -5;
    for (int li = 0; li < 2; li++) {
        ck_assert_int_eq(P(state_query)(st, layouts[li], 0, q, 3, out, 2, num, 2,
                                        den, &bad), 0);
        ck_assert_int_eq(P(state_query)(st, layouts[li], 0, q, 3, NULL, 0, NULL,
                                        0, den, &bad), 0);
    }
    ck_assert(out[0] == 7 && num[1] == 7 && den[0] == 7 && bad == -5);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

/* Updates and queries of 1 to 5 rows (the small path below 5 rows, the
 * blocked one from 5), in both layouts with padded leading dimensions:
 * keys streamed in pieces of every such size, then every query size with
 * out, num and den at once, against the plain-loop reference; num / den
 * is out, and den is phi(q) . z with z read back from the state.  A zero
 * normalizer in row 1 of 3 stops there: row 0 written, rows 1, 2 not. */
START_TEST(few_rows_at_a_time)
{
    int64_t d = 5, e = 3, nk = 15;
    for (int mi = 0; mi < 3; mi++)
        for (int li = 0; li < 2; li++) {
            int map = maps[mi], layout = layouts[li];
            uint64_t seed = 77 + (uint64_t)(mi * 2 + li);
            double lo, hi;
            data_range(map, &lo, &hi);
            tmat k = tmat_rand(layout, nk, d, 2, lo, hi, &seed);
            tmat v = tmat_rand(layout, nk, e, 1, -1, 1, &seed);
            P(plan) *p = make_plan(map, d, e, 0);
            P(state) *st;
            ck_assert_int_eq(P(state_create)(&st, p), 0);
            for (int64_t r = 0, piece = 1; r < nk; r += piece, piece = piece % 5 + 1) {
                int64_t rows = nk - r < piece ? nk - r : piece;
                const real *kr = layout == ROW ? k.a + r * k.ld : k.a + r;
                const real *vr = layout == ROW ? v.a + r * v.ld : v.a + r;
                ck_assert_int_eq(P(state_update)(st, layout, rows, kr, k.ld, vr,
                                                 v.ld), 0);
            }
            real z[5];
            ck_assert_int_eq(P(state_get)(st, ROW, NULL, 1, z, NULL), 0);
            for (int64_t n = 1; n <= 5; n++) {
                tmat q = tmat_rand(layout, n, d, 3, lo, hi, &seed);
                tmat out = tmat_like(&q, n, e, 2), num = tmat_like(&q, n, e, 1);
                real den[5];
                long double ref[5 * 3];
                ref_linear(map, &q, &k, &v, ref);
                ck_assert_int_eq(P(state_query)(st, layout, n, q.a, q.ld, out.a,
                                                out.ld, num.a, num.ld, den, NULL), 0);
                for (int64_t i = 0; i < n; i++) {
                    long double dz = 0;
                    for (int64_t t = 0; t < d; t++)
                        dz += ref_phi(map, *tmat_at(&q, i, t)) * z[t];
                    ck_assert(fabsl(den[i] - dz) <= TOL * fabsl(dz));
                    for (int64_t c = 0; c < e; c++) {
                        long double o = *tmat_at(&out, i, c), r = ref[i * e + c];
                        ck_assert(fabsl(o - r) <= TOL * (1 + fabsl(r)));
                        ck_assert(o == *tmat_at(&num, i, c) * (1 / den[i]));
                    }
                }
                ck_assert(tmat_padding_intact(&out) && tmat_padding_intact(&num));
                tmat_free(&q), tmat_free(&out), tmat_free(&num);
            }
            P(state_destroy)(st);
            P(plan_destroy)(p);
            tmat_free(&k), tmat_free(&v);
        }
    /* identity, S = [3; 5], z = [1; 1]: den(q) = q0 + q1 */
    real k[4] = {1, 0, 0, 1}, v[2] = {3, 5}, q[6] = {1, 1, -1, 1, 2, 1};
    real out[3] = {-777, -777, -777}, den[3] = {-777, -777, -777};
    P(plan) *p = make_plan(LINATTN_MAP_IDENTITY, 2, 1, 0);
    P(state) *st;
    P(state_create)(&st, p);
    P(state_update)(st, ROW, 2, k, 2, v, 1);
    int64_t bad = -1;
    ck_assert_int_eq(P(state_query)(st, ROW, 3, q, 2, out, 1, NULL, 0, den, &bad),
                     LINATTN_EDENOM);
    ck_assert(bad == 1 && out[0] == 4 && den[0] == 2);
    ck_assert(out[1] == -777 && out[2] == -777 && den[1] == -777 && den[2] == -777);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

/* Softmax whose scores overflow for finite input: row 1's largest score
 * (big * big) is beyond the floating-point range, so its weights cannot be
 * formed: EDENOM, row 0 written (scores 2 and big: all weight on value 5),
 * row 1 untouched; with the rows swapped nothing is written. */
START_TEST(softmax_score_overflow)
{
    real big = sizeof(real) == sizeof(float) ? (real)1e20 : (real)1e200;
    real q[2] = {1, big}, k[2] = {2, big}, v[2] = {3, 5};
    real out[2] = {-777, -777};
    ck_assert_int_eq(P(softmax)(ROW, 2, 2, 1, 1, 1, q, 1, k, 1, v, 1, out, 1),
                     LINATTN_EDENOM);
    ck_assert(out[0] == 5 && out[1] == -777);
    q[0] = big, q[1] = 1;
    out[0] = -777;
    ck_assert_int_eq(P(softmax)(ROW, 2, 2, 1, 1, 1, q, 1, k, 1, v, 1, out, 1),
                     LINATTN_EDENOM);
    ck_assert(out[0] == -777 && out[1] == -777);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("math " PREC);
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    int nshapes = (int)(sizeof shapes / sizeof *shapes);
    tcase_add_loop_test(tc, factored_matches_naive_and_reference, 0, nshapes * 6);
    tcase_add_test(tc, state_pieces_equal_one_call);
    tcase_add_test(tc, merge_equals_concatenation);
    tcase_add_test(tc, output_linear_in_values);
    tcase_add_test(tc, row_major_equals_col_major);
    tcase_add_test(tc, numerators_and_normalizers);
    tcase_add_test(tc, bad_normalizer_reported);
    tcase_add_test(tc, softmax_matches_reference);
    tcase_add_test(tc, long_sequence_accuracy);
    tcase_add_test(tc, features_elementwise);
    tcase_add_test(tc, bad_normalizer_in_split_call);
    tcase_add_test(tc, nonfinite_input_policy);
    tcase_add_test(tc, large_leading_dimensions);
    tcase_add_loop_test(tc, causal_matches_naive_and_reference, 0, 18);
    tcase_add_test(tc, streaming_and_causality);
    tcase_add_test(tc, failing_row_leaves_earlier_bits);
    tcase_add_test(tc, query_of_no_rows);
    tcase_add_test(tc, few_rows_at_a_time);
    tcase_add_test(tc, softmax_score_overflow);
    tcase_add_test(tc, outputs_together_and_self_merge);
#ifdef _OPENMP
    tcase_add_test(tc, thread_counts_agree);
    tcase_add_test(tc, smaller_team_than_asked);
    tcase_add_test(tc, concurrent_queries_on_one_state);
#endif
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
