/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_weights.c -- key weights (linattn_d_extras.weights), compiled once
 * per precision: S = sum w_j phi(k_j) v_j^T and z likewise in
 * linattn_d_attention_ex and linattn_d_state_update_ex.  Against weighted
 * plain loops in long double (the elementwise maps, both layouts, several
 * blocks, the count normalizer as sum w_j); weights 0 against dropping
 * those keys (whose rows hold NaN and Inf, never read); integer weights
 * against repeating keys (FAVOR+ too, whose shift must ignore the keys of
 * weight 0); a weighted stream against one weighted call; the causal path
 * (linattn_d_causal_ex) against weighted causal loops, its keys of weight
 * 0 never read (bit for bit), a range of threads without keys, and a
 * weighted state continued; NaN and Inf in the rows of weight 0 of K and
 * V against zeros there, bit for bit, for every kind of map, causal or
 * not; and every bad weight refused with nothing written.
 */
#include <limits.h>
#include "testutil.h"
#include "fileutil.h"

#ifndef LINATTN_BLAS_INT_MAX /* lowered in one build of make check-hard */
#define LINATTN_BLAS_INT_MAX INT_MAX
#endif

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

static P(plan) *plan_with(int map, int64_t d, int64_t e, int denom,
                          int check_finite)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = denom;
    o.block = 7; /* several blocks on small problems */
    o.check_finite = check_finite;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* Row-major q (nq x d), k (nk x d), v (nk x e), uniform in [-1, 1). */
static void qkv_rand(tmat *q, tmat *k, tmat *v, int64_t nq, int64_t nk,
                     int64_t d, int64_t e, uint64_t *s)
{
    *q = tmat_rand(ROW, nq, d, 0, -1, 1, s);
    *k = tmat_rand(ROW, nk, d, 0, -1, 1, s);
    *v = tmat_rand(ROW, nk, e, 0, -1, 1, s);
}

/* Weights in [0, 2), every third one 0 (with NaN and Inf planted in that
 * key's rows of k and v when poison is 1); poison 2: in (0.1, 2), none 0
 * (the paths read blocks without weight 0 where the caller keeps them). */
static real *weights_for(int64_t n, tmat *k, tmat *v, int poison, uint64_t *s)
{
    real *w = malloc((size_t)(n + 1) * sizeof *w);
    for (int64_t j = 0; j < n; j++) {
        w[j] = (real)(2 * test_uniform(s));
        if (poison == 2) {
            w[j] = (real)(0.1 + 1.9 * test_uniform(s));
        } else if (j % 3 == 1) {
            w[j] = 0;
            if (poison) {
                *tmat_at(k, j, 0) = (real)NAN;
                *tmat_at(v, j, v->cols - 1) = (real)INFINITY;
            }
        }
    }
    return w;
}

/* out_i = sum_j w_j a_ij v_j / den_i, a_ij = phi(q_i) . phi(k_j), den_i =
 * sum_j w_j a_ij (or sum_j w_j under the count normalizer), by loops over
 * the keys of weight not 0: all of them, or (causal) j <= i. */
static void ref_weighted_mask(int map, int causal, int count, const tmat *q,
                              const tmat *k, const tmat *v, const real *w,
                              long double *out)
{
    int64_t d = q->cols, e = v->cols;
    for (int64_t i = 0; i < q->rows; i++) {
        long double den = 0, mass = 0;
        for (int64_t c = 0; c < e; c++)
            out[i * e + c] = 0;
        for (int64_t j = 0; j < (causal ? i + 1 : k->rows); j++) {
            mass += w[j];
            if (w[j] == 0)
                continue;
            long double a = 0;
            for (int64_t t = 0; t < d; t++)
                a += ref_phi(map, *tmat_at(q, i, t)) *
                     ref_phi(map, *tmat_at(k, j, t));
            den += w[j] * a;
            for (int64_t c = 0; c < e; c++)
                out[i * e + c] += w[j] * a * *tmat_at(v, j, c);
        }
        for (int64_t c = 0; c < e; c++)
            out[i * e + c] /= count ? mass : den;
    }
}

static void ref_weighted(int map, int count, const tmat *q, const tmat *k,
                         const tmat *v, const real *w, long double *out)
{
    ref_weighted_mask(map, 0, count, q, k, v, w, out);
}

/* A state holding the first n0 keys of k and v with their weights w, and
 * extras that continue it with the next keys' weights and absorb them. */
static P(state) *weighted_state(const P(plan) *p, int64_t n0, const tmat *k,
                                const tmat *v, const real *w, P(extras) *ex)
{
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    P(extras_init)(ex);
    ex->weights = w;
    ck_assert_int_eq(P(state_update_ex)(st, ROW, n0, k->a, k->ld, v->a,
                                        v->ld, ex), 0);
    ex->weights = w + n0;
    ex->state = st;
    ex->absorb = 1;
    return st;
}

/* The rows of x whose weight is not 0, times rep[j] each (rep NULL: once;
 * w NULL: every row). */
static tmat rows_kept(const tmat *x, const real *w, const int *rep)
{
    int64_t n = 0;
    for (int64_t j = 0; j < x->rows; j++)
        n += (w && w[j] == 0) ? 0 : rep ? rep[j] : 1;
    tmat y = tmat_like(x, n, x->cols, 0);
    int64_t r = 0;
    for (int64_t j = 0; j < x->rows; j++)
        for (int t = 0; t < ((w && w[j] == 0) ? 0 : rep ? rep[j] : 1); t++, r++)
            for (int64_t c = 0; c < x->cols; c++)
                *tmat_at(&y, r, c) = *tmat_at(x, j, c);
    return y;
}

/* attention_ex of p on (q, k, v) with weights w (NULL: none) into out. */
static int weighted_call(const P(plan) *p, const tmat *q, const tmat *k,
                         const tmat *v, const real *w, tmat *out,
                         int64_t *bad)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    return P(attention_ex)(p, q->layout, q->rows, k->rows, q->a, q->ld, k->a,
                           k->ld, v->a, v->ld, out->a, out->ld, &ex, bad);
}

/* ---- against loops ---- */

START_TEST(weighted_matches_loops)
{
    static const int maps[3] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                                LINATTN_MAP_RELU};
    int map = maps[_i % 3], layout = _i / 3 % 2 ? COL : ROW;
    int count = _i / 6 % 2, positive = _i / 12;
    int64_t nq = 13, nk = 40, d = 4, e = 3;
    uint64_t s = 31 + (uint64_t)_i;
    P(plan) *p = plan_with(map, d, e,
                           count ? LINATTN_DENOM_COUNT : LINATTN_DENOM_POSITIVE,
                           1);
    /* positive queries and keys: positive normalizers for every map */
    tmat q = tmat_rand(layout, nq, d, 2, 0.1, 1, &s);
    tmat k = tmat_rand(layout, nk, d, 1, 0.1, 1, &s);
    tmat v = tmat_rand(layout, nk, e, 3, -1, 1, &s);
    real *w = weights_for(nk, &k, &v, positive ? 2 : 1, &s);
    tmat out = tmat_like(&q, nq, e, 2);
    long double *ref = malloc((size_t)(nq * e) * sizeof *ref);
    ref_weighted(map, count, &q, &k, &v, w, ref);
    int64_t bad = -7;
    /* check_finite is on: the NaN and Inf of the keys of weight 0 are not
     * looked at */
    ck_assert_int_eq(weighted_call(p, &q, &k, &v, w, &out, &bad), 0);
    ck_assert_double_le(rel_err(&out, ref), 100 * TOL);
    ck_assert(tmat_padding_intact(&out));
    /* the quadratic baseline with the same weights */
    tmat nout = tmat_like(&q, nq, e, 1);
    P(extras) nex;
    P(extras_init)(&nex);
    nex.weights = w;
    ck_assert_int_eq(P(naive_ex)(p, layout, nq, nk, q.a, q.ld, k.a, k.ld, v.a,
                                 v.ld, nout.a, nout.ld, &nex, &bad), 0);
    ck_assert_double_le(rel_err(&nout, ref), 100 * TOL);
    ck_assert(tmat_padding_intact(&nout));
    tmat_free(&nout);
    /* normalizers out with the weights: sum_j w_j a_ij, or sum_j w_j */
    real den[13];
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ex.den = den;
    ck_assert_int_eq(P(attention_ex)(p, layout, nq, nk, q.a, q.ld, k.a, k.ld,
                                     v.a, v.ld, out.a, out.ld, &ex, &bad), 0);
    long double mass = 0;
    for (int64_t j = 0; j < nk; j++)
        mass += w[j];
    for (int64_t i = 0; i < nq; i++) {
        long double want = 0;
        for (int64_t j = 0; count == 0 && j < nk; j++)
            for (int64_t t = 0; w[j] != 0 && t < d; t++)
                want += w[j] * ref_phi(map, *tmat_at(&q, i, t)) *
                        ref_phi(map, *tmat_at(&k, j, t));
        if (count)
            want = mass;
        ck_assert_double_le(fabsl(den[i] - want) / want, 100 * TOL);
    }
    free(ref), free(w);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    P(plan_destroy)(p);
}
END_TEST

/* All weights 1 is no weights: the same sums, to rounding (the weighted
 * path gathers its blocks and builds z in the GEMM). */
START_TEST(unit_weights_are_none)
{
    int map = _i % 2 ? LINATTN_MAP_FAVOR : LINATTN_MAP_ELU1;
    int64_t nq = 9, nk = 30, d = 5, e = 2;
    uint64_t s = 3 + (uint64_t)_i;
    P(plan) *p = plan_with(map, d, e, LINATTN_DENOM_POSITIVE, 0);
    tmat q, k, v;
    qkv_rand(&q, &k, &v, nq, nk, d, e, &s);
    real w[30];
    for (int j = 0; j < 30; j++)
        w[j] = 1;
    tmat a = tmat_like(&q, nq, e, 0), b = tmat_like(&q, nq, e, 0);
    int64_t bad;
    ck_assert_int_eq(weighted_call(p, &q, &k, &v, w, &a, &bad), 0);
    ck_assert_int_eq(P(attention)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld, v.a,
                                  v.ld, b.a, b.ld, &bad), 0);
    ck_assert_double_le(rel_diff(&a, &b), 10 * TOL);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
}
END_TEST

/* ---- invariants, every map ---- */

/* Weights 0 and 1 are a padding mask: the call on the kept keys alone.
 * The masked rows hold NaN and Inf; FAVOR+'s shift must not see them.
 * Also every weight 0 in the first 2000 keys, so that with two threads a
 * whole range holds no key. */
START_TEST(zero_weights_drop_keys)
{
    static const int maps[4] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                                LINATTN_MAP_FAVOR, LINATTN_MAP_TRIG};
    int map = maps[_i % 4], wide = _i / 4;
    int64_t nq = 11, nk = wide ? 4000 : 50, d = 4, e = 3;
    uint64_t s = 77 + (uint64_t)_i;
    P(plan) *p = plan_with(map, d, e, LINATTN_DENOM_NONZERO, 0);
    tmat q = tmat_rand(ROW, nq, d, 0, 0.1, 1, &s);
    tmat k = tmat_rand(ROW, nk, d, 0, 0.1, 1, &s);
    tmat v = tmat_rand(ROW, nk, e, 0, -1, 1, &s);
    real *w = malloc((size_t)nk * sizeof *w);
    for (int64_t j = 0; j < nk; j++) {
        w[j] = (wide ? j >= nk / 2 : j % 4 != 2) ? 1 : 0;
        /* wide: keys of large norm, whose exponents (FAVOR+: w.k - |k|^2/2,
         * near -1800) lie far below the shift 0 of a range without keys,
         * which must not take part in choosing the shift */
        for (int64_t t = 0; wide && w[j] != 0 && t < d; t++)
            *tmat_at(&k, j, t) += 30;
        if (w[j] == 0) {
            /* a huge key would raise an exponential map's shift */
            *tmat_at(&k, j, 0) = j % 2 ? (real)NAN : (real)1e4;
            *tmat_at(&v, j, 1) = (real)INFINITY;
        }
    }
    tmat kk = rows_kept(&k, w, NULL), vk = rows_kept(&v, w, NULL);
    tmat a = tmat_like(&q, nq, e, 0), b = tmat_like(&q, nq, e, 0);
    int64_t bad;
    ck_assert_int_eq(weighted_call(p, &q, &k, &v, w, &a, &bad), 0);
    ck_assert_int_eq(P(attention)(p, ROW, nq, kk.rows, q.a, q.ld, kk.a, kk.ld,
                                  vk.a, vk.ld, b.a, b.ld, &bad), 0);
    ck_assert_double_le(rel_diff(&a, &b), 100 * TOL);
    /* and the quadratic baseline, weighted, against the same (its keys
     * are a GEMM dimension: beyond a lowered BLAS limit, LINATTN_ESIZE) */
    P(extras) nex;
    P(extras_init)(&nex);
    nex.weights = w;
    ck_assert_int_eq(P(naive_ex)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld, v.a,
                                 v.ld, a.a, a.ld, &nex, &bad),
                     nk > LINATTN_BLAS_INT_MAX ? LINATTN_ESIZE : 0);
    if (nk <= LINATTN_BLAS_INT_MAX)
        ck_assert_double_le(rel_diff(&a, &b), 1000 * TOL);
    free(w);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&kk);
    tmat_free(&vk), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
}
END_TEST

/* Integer weights are repeated keys (and their count, under the count
 * normalizer, the repeated keys' number). */
START_TEST(integer_weights_repeat_keys)
{
    static const int maps[3] = {LINATTN_MAP_ELU1, LINATTN_MAP_FAVOR,
                                LINATTN_MAP_TAYLOR};
    int count = _i / 3;
    /* (the shifted maps have no count normalizer) */
    int map = count && _i % 3 == 1 ? LINATTN_MAP_RELU : maps[_i % 3];
    int64_t nq = 8, nk = 25, d = 3, e = 4;
    uint64_t s = 5 + (uint64_t)_i;
    P(plan) *p = plan_with(map, d, e,
                           count ? LINATTN_DENOM_COUNT : LINATTN_DENOM_POSITIVE,
                           0);
    tmat q = tmat_rand(COL, nq, d, 1, -1, 1, &s);
    tmat k = tmat_rand(COL, nk, d, 2, -1, 1, &s);
    tmat v = tmat_rand(COL, nk, e, 0, -1, 1, &s);
    real w[25];
    int rep[25];
    for (int j = 0; j < 25; j++) {
        rep[j] = j % 4;
        w[j] = (real)rep[j];
    }
    tmat kr = rows_kept(&k, NULL, rep), vr = rows_kept(&v, NULL, rep);
    tmat a = tmat_like(&q, nq, e, 0), b = tmat_like(&q, nq, e, 0);
    int64_t bad;
    ck_assert_int_eq(weighted_call(p, &q, &k, &v, w, &a, &bad), 0);
    ck_assert_int_eq(P(attention)(p, COL, nq, kr.rows, q.a, q.ld, kr.a, kr.ld,
                                  vr.a, vr.ld, b.a, b.ld, &bad), 0);
    ck_assert_double_le(rel_diff(&a, &b), 100 * TOL);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&kr);
    tmat_free(&vr), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
}
END_TEST

/* ---- the streaming update ---- */

/* A weighted stream in pieces (one key, a few, many: the small and the
 * blocked paths) queried at the end is one weighted call; it counts the
 * keys of weight not 0 as its tokens.  ex NULL is state_update, bit for
 * bit. */
START_TEST(weighted_stream_is_one_call)
{
    int count = _i / 2;
    int map = _i % 2 ? (count ? LINATTN_MAP_IDENTITY : LINATTN_MAP_FAVOR)
                     : LINATTN_MAP_ELU1;
    int64_t nq = 6, nk = 61, d = 4, e = 3;
    uint64_t s = 11 + (uint64_t)_i;
    P(plan) *p = plan_with(map, d, e,
                           count ? LINATTN_DENOM_COUNT : LINATTN_DENOM_POSITIVE,
                           1);
    tmat q, k, v;
    qkv_rand(&q, &k, &v, nq, nk, d, e, &s);
    real *w = weights_for(nk, &k, &v, 1, &s);
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    P(extras) ex;
    P(extras_init)(&ex);
    static const int64_t cuts[] = {0, 1, 4, 5, 40, 61};
    for (int c = 0; c + 1 < 6; c++) {
        int64_t lo = cuts[c], n = cuts[c + 1] - lo;
        ex.weights = w + lo;
        ck_assert_int_eq(P(state_update_ex)(st, ROW, n, k.a + lo * k.ld, k.ld,
                                            v.a + lo * v.ld, v.ld, &ex), 0);
    }
    int64_t tokens = -1, kept = 0;
    ck_assert_int_eq(P(state_get)(st, ROW, NULL, 1, NULL, &tokens), 0);
    for (int64_t j = 0; j < nk; j++)
        kept += w[j] != 0;
    ck_assert_int_eq(tokens, kept);
    tmat a = tmat_like(&q, nq, e, 0), b = tmat_like(&q, nq, e, 0);
    int64_t bad;
    ck_assert_int_eq(P(state_query)(st, ROW, nq, q.a, q.ld, a.a, a.ld, NULL, 1,
                                    NULL, &bad), 0);
    ck_assert_int_eq(weighted_call(p, &q, &k, &v, w, &b, &bad), 0);
    ck_assert_double_le(rel_diff(&a, &b), 100 * TOL);
    /* ex NULL, or nothing set: state_update, bit for bit */
    P(state) *x = NULL, *y = NULL;
    ck_assert_int_eq(P(state_create)(&x, p), 0);
    ck_assert_int_eq(P(state_create)(&y, p), 0);
    tmat k2 = tmat_rand(ROW, nk, d, 0, -1, 1, &s);
    tmat v2 = tmat_rand(ROW, nk, e, 0, -1, 1, &s);
    P(extras_init)(&ex);
    ck_assert_int_eq(P(state_update_ex)(x, ROW, nk, k2.a, k2.ld, v2.a, v2.ld,
                                        NULL), 0);
    ck_assert_int_eq(P(state_update_ex)(x, ROW, 3, k2.a, k2.ld, v2.a, v2.ld,
                                        &ex), 0);
    ck_assert_int_eq(P(state_update)(y, ROW, nk, k2.a, k2.ld, v2.a, v2.ld), 0);
    ck_assert_int_eq(P(state_update)(y, ROW, 3, k2.a, k2.ld, v2.a, v2.ld), 0);
    int64_t lx, ly;
    ck_assert_int_eq(P(state_save_size)(x, &lx), 0);
    ck_assert_int_eq(P(state_save_size)(y, &ly), 0);
    unsigned char *bx = malloc((size_t)lx), *by = malloc((size_t)ly);
    ck_assert_int_eq(P(state_save)(x, bx, lx, NULL), 0);
    ck_assert_int_eq(P(state_save)(y, by, ly, NULL), 0);
    ck_assert_mem_eq(bx, by, (size_t)lx);
    free(bx), free(by), free(w);
    P(state_destroy)(st), P(state_destroy)(x), P(state_destroy)(y);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&k2);
    tmat_free(&v2), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
}
END_TEST

/* A weighted call that starts from a weighted state, under the count
 * normalizer: the count is the state's weight and the call's. */
START_TEST(weighted_state_and_call_compose)
{
    int64_t nq = 5, n0 = 17, nk = 23, d = 3, e = 2;
    uint64_t s = 99;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_COUNT, 0);
    tmat q, k, v;
    qkv_rand(&q, &k, &v, nq, n0 + nk, d, e, &s);
    real *w = weights_for(n0 + nk, &k, &v, 1, &s);
    P(extras) ex;
    P(state) *st = weighted_state(p, n0, &k, &v, w, &ex);
    tmat a = tmat_like(&q, nq, e, 0);
    int64_t bad;
    ck_assert_int_eq(P(attention_ex)(p, ROW, nq, nk, q.a, q.ld,
                                     k.a + n0 * k.ld, k.ld, v.a + n0 * v.ld,
                                     v.ld, a.a, a.ld, &ex, &bad), 0);
    long double *ref = malloc((size_t)(nq * e) * sizeof *ref);
    ref_weighted(LINATTN_MAP_ELU1, 1, &q, &k, &v, w, ref);
    ck_assert_double_le(rel_err(&a, ref), 100 * TOL);
    /* the state absorbed: its queries are the same */
    tmat b = tmat_like(&q, nq, e, 0);
    ck_assert_int_eq(P(state_query)(st, ROW, nq, q.a, q.ld, b.a, b.ld, NULL, 1,
                                    NULL, &bad), 0);
    ck_assert_double_le(rel_err(&b, ref), 100 * TOL);
    free(ref), free(w);
    P(state_destroy)(st);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
}
END_TEST

/* ---- causal ---- */

static P(plan) *causal_plan(int map, int64_t d, int64_t e, int denom,
                            double eps)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = denom;
    o.chunk = 5; /* several chunks, and chunks of weight 0 only */
    o.block = 7;
    o.eps = eps;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* causal_ex with key weights against loops; the first key weighs more
 * than 0 so that every row has a normalizer. */
START_TEST(causal_weighted_matches_loops)
{
    static const int maps[3] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                                LINATTN_MAP_RELU};
    int map = maps[_i % 3], layout = _i / 3 % 2 ? COL : ROW;
    int count = _i / 6 % 2, positive = _i / 12;
    int64_t n = 37, d = 4, e = 3;
    uint64_t s = 313 + (uint64_t)_i;
    P(plan) *p = causal_plan(map, d, e,
                             count ? LINATTN_DENOM_COUNT
                                   : LINATTN_DENOM_POSITIVE, 0);
    tmat q = tmat_rand(layout, n, d, 1, 0.1, 1, &s);
    tmat k = tmat_rand(layout, n, d, 0, 0.1, 1, &s);
    tmat v = tmat_rand(layout, n, e, 2, -1, 1, &s);
    real *w = weights_for(n, &k, &v, positive ? 2 : 1, &s);
    for (int64_t j = 10; !positive && j < 16; j++) /* a chunk of weight 0 */
        w[j] = 0;
    tmat out = tmat_like(&q, n, e, 1);
    real den[37];
    long double *ref = malloc((size_t)(n * e) * sizeof *ref);
    ref_weighted_mask(map, 1, count, &q, &k, &v, w, ref);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ex.den = den;
    int64_t bad = -7;
    ck_assert_int_eq(P(causal_ex)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a,
                                  v.ld, out.a, out.ld, &ex, &bad), 0);
    ck_assert_double_le(rel_err(&out, ref), 100 * TOL);
    ck_assert(tmat_padding_intact(&out));
    /* the quadratic baseline with the same weights */
    tmat nout = tmat_like(&q, n, e, 1);
    ex.den = NULL;
    ck_assert_int_eq(P(naive_causal_ex)(p, layout, n, q.a, q.ld, k.a, k.ld,
                                        v.a, v.ld, nout.a, nout.ld, &ex,
                                        &bad), 0);
    ex.den = den;
    ck_assert_double_le(rel_err(&nout, ref), 100 * TOL);
    ck_assert(tmat_padding_intact(&nout));
    tmat_free(&nout);
    long double mass = 0;
    for (int64_t i = 0; count && i < n; i++) {
        mass += w[i];
        ck_assert_double_le(fabsl(den[i] - mass) / mass, 10 * TOL);
    }
    free(ref), free(w);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    P(plan_destroy)(p);
}
END_TEST

/* The keys of weight 0 are never read: NaN, Inf and huge values in their
 * rows of K and V give outputs identical, bit for bit, to zeros there
 * (every map, the shifted ones included, whose running maximum must
 * ignore them). */
START_TEST(causal_zero_weights_never_read)
{
    static const int maps[4] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                                LINATTN_MAP_FAVOR, LINATTN_MAP_TRIG};
    int far = _i == 4; /* FAVOR+, keys of large norm */
    int map = far ? LINATTN_MAP_FAVOR : maps[_i % 4];
    int64_t n = 41, d = 4, e = 3;
    uint64_t s = 55 + (uint64_t)_i;
    P(plan) *p = causal_plan(map, d, e, LINATTN_DENOM_NONZERO, 0);
    tmat q = tmat_rand(ROW, n, d, 0, 0.1, 1, &s);
    tmat k = tmat_rand(ROW, n, d, 0, 0.1, 1, &s);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &s);
    real w[41];
    for (int64_t j = 0; j < n; j++)
        w[j] = j % 3 == 2 ? 0 : (real)(0.5 + j % 2);
    tmat k2 = tmat_rand(ROW, n, d, 0, 0, 0, &s), v2 = tmat_rand(ROW, n, e, 0, 0, 0, &s);
    for (int64_t j = 0; j < n; j++) {
        /* far: the kept keys' exponents near -1800, the running maximum
         * must not take a key of weight 0 (nor its zeroed row) */
        for (int64_t t = 0; far && t < d; t++)
            *tmat_at(&k, j, t) += 30;
        for (int64_t t = 0; t < d; t++)
            *tmat_at(&k2, j, t) = w[j] == 0 ? 0 : *tmat_at(&k, j, t);
        for (int64_t c = 0; c < e; c++)
            *tmat_at(&v2, j, c) = w[j] == 0 ? 0 : *tmat_at(&v, j, c);
        if (w[j] == 0) {
            *tmat_at(&k, j, j % d) = j % 2 ? (real)NAN : (real)1e4;
            *tmat_at(&v, j, 0) = (real)INFINITY;
        }
    }
    tmat a = tmat_like(&q, n, e, 0), b = tmat_like(&q, n, e, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    int64_t bad;
    ck_assert_int_eq(P(causal_ex)(p, ROW, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                  a.a, a.ld, &ex, &bad), 0);
    ck_assert_int_eq(P(causal_ex)(p, ROW, n, q.a, q.ld, k2.a, k2.ld, v2.a,
                                  v2.ld, b.a, b.ld, &ex, &bad), 0);
    ck_assert_mem_eq(a.a, b.a, (size_t)(n * e) * sizeof(real));
    /* the quadratic baseline: the same rows read, the same outputs to
     * rounding (every map: a reference for FAVOR+ and the rest), and its
     * own never-read rows, bit for bit */
    tmat na = tmat_like(&q, n, e, 0), nb = tmat_like(&q, n, e, 0);
    ck_assert_int_eq(P(naive_causal_ex)(p, ROW, n, q.a, q.ld, k.a, k.ld, v.a,
                                        v.ld, na.a, na.ld, &ex, &bad), 0);
    ck_assert_int_eq(P(naive_causal_ex)(p, ROW, n, q.a, q.ld, k2.a, k2.ld,
                                        v2.a, v2.ld, nb.a, nb.ld, &ex, &bad),
                     0);
    ck_assert_mem_eq(na.a, nb.a, (size_t)(n * e) * sizeof(real));
    ck_assert_double_le(rel_diff(&a, &na), 1000 * TOL);
    tmat_free(&na), tmat_free(&nb);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&k2);
    tmat_free(&v2), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
}
END_TEST

/* A plan of the given kind for zero_weights_never_reach: the built-in
 * maps (kinds 0-6), or caller-supplied ones with a projection W and a
 * bias (7-9), whose GEMM maps the keys of weight 0 with the others. */
static P(plan) *masked_plan(int kind, int64_t d, int64_t e, int causal)
{
    static const int maps[7] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                                LINATTN_MAP_RELU, LINATTN_MAP_TAYLOR,
                                LINATTN_MAP_FAVOR, LINATTN_MAP_FAVOR_HYP,
                                LINATTN_MAP_TRIG};
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = LINATTN_DENOM_NONZERO;
    o.chunk = 5;
    o.block = 7;
    P(plan) *p = NULL;
    if (kind < 7) {
        ck_assert_int_eq(P(plan_create)(&p, maps[kind], d, e, &o), 0);
        return p;
    }
    /* W > 0 and b > 0 on positive inputs: positive normalizers; kind 7
     * ReLU, 8 Hedgehog, 9 exp (a shifted map) */
    int act = kind == 7 ? LINATTN_ACT_RELU
                        : kind == 8 ? LINATTN_ACT_HEDGEHOG : LINATTN_ACT_EXP;
    int64_t m = 2 * d, rows = act == LINATTN_ACT_HEDGEHOG ? d : m;
    uint64_t seed = 21 + (uint64_t)kind + 10 * (uint64_t)causal;
    tmat w = tmat_rand(ROW, rows, d, 0, 0.1, 0.7, &seed);
    tmat b = tmat_rand(ROW, rows, 1, 0, 0.1, 0.3, &seed);
    ck_assert_int_eq(P(plan_create_custom)(&p, act, d, m, e, ROW, w.a, d, b.a,
                                           &o),
                     0);
    tmat_free(&w), tmat_free(&b);
    return p;
}

/* The call (causal or not) of p on (q, k, v) with weights w into out. */
static int masked_call(const P(plan) *p, int causal, const tmat *q,
                       const tmat *k, const tmat *v, const real *w,
                       tmat *out)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    int64_t bad;
    if (causal)
        return P(causal_ex)(p, q->layout, q->rows, q->a, q->ld, k->a, k->ld,
                            v->a, v->ld, out->a, out->ld, &ex, &bad);
    return P(attention_ex)(p, q->layout, q->rows, k->rows, q->a, q->ld, k->a,
                           k->ld, v->a, v->ld, out->a, out->ld, &ex, &bad);
}

/* The keys of weight 0 have no effect on any output, whatever their rows
 * hold: NaN, Inf and huge values there give outputs identical, bit for
 * bit, to zeros there, and those of the call without these keys (causal:
 * and without their query rows) to rounding.  Every kind of map (the
 * paths map K in place, rows of weight 0 included, and the shifted maps
 * must keep those rows out of their maximum), causal or not, both
 * layouts; the first blocks or chunks poison K only (V read in place),
 * the last ones V as well (V copied with those rows zeroed, at another
 * leading dimension), and one block holds keys of weight 0 only. */
START_TEST(zero_weights_never_reach)
{
    int kind = _i % 10, causal = _i / 10 % 2, layout = _i / 20 ? COL : ROW;
    int64_t n = 47, d = 3, e = 4;
    uint64_t s = 401 + (uint64_t)_i;
    P(plan) *p = masked_plan(kind, d, e, causal);
    tmat q = tmat_rand(layout, n, d, 1, 0.1, 1, &s);
    tmat k = tmat_rand(layout, n, d, 2, 0.1, 1, &s);
    tmat v = tmat_rand(layout, n, e, 3, -1, 1, &s);
    tmat k0 = tmat_like(&k, n, d, 2), v0 = tmat_like(&v, n, e, 3);
    real w[47], wk[47];
    int64_t kept = 0;
    for (int64_t j = 0; j < n; j++) {
        w[j] = j % 4 == 1 || (j >= 21 && j < 28) ? 0 : (real)(0.25 + j % 3);
        for (int64_t t = 0; t < d; t++)
            *tmat_at(&k0, j, t) = w[j] == 0 ? 0 : *tmat_at(&k, j, t);
        for (int64_t c = 0; c < e; c++)
            *tmat_at(&v0, j, c) = w[j] == 0 ? 0 : *tmat_at(&v, j, c);
        if (w[j] == 0) {
            /* a huge key would raise an exponential map's shift */
            *tmat_at(&k, j, j % d) = j % 3 ? (real)NAN : (real)1e4;
            if (j % 3 == 0)
                *tmat_at(&k, j, (j + 1) % d) = (real)-INFINITY;
            if (j > 28)
                *tmat_at(&v, j, j % e) = j % 2 ? (real)NAN : (real)INFINITY;
        } else {
            wk[kept++] = w[j];
        }
    }
    tmat a = tmat_like(&q, n, e, 1), b = tmat_like(&q, n, e, 1);
    ck_assert_int_eq(masked_call(p, causal, &q, &k, &v, w, &a), 0);
    ck_assert_int_eq(masked_call(p, causal, &q, &k0, &v0, w, &b), 0);
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < e; c++) {
            real x = *tmat_at(&a, i, c), y = *tmat_at(&b, i, c);
            ck_assert(isfinite(x));
            ck_assert_mem_eq(&x, &y, sizeof x);
        }
    ck_assert(tmat_padding_intact(&a));
    /* without those keys (causal: the kept rows' outputs) */
    tmat qk = causal ? rows_kept(&q, w, NULL) : q;
    tmat kk = rows_kept(&k, w, NULL), vk = rows_kept(&v, w, NULL);
    tmat c = tmat_like(&q, qk.rows, e, 0);
    ck_assert_int_eq(masked_call(p, causal, &qk, &kk, &vk, wk, &c), 0);
    tmat ak = causal ? rows_kept(&a, w, NULL) : a;
    ck_assert_double_le(rel_diff(&ak, &c), 100 * TOL);
    if (causal)
        tmat_free(&qk), tmat_free(&ak);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&k0);
    tmat_free(&v0), tmat_free(&kk), tmat_free(&vk), tmat_free(&a);
    tmat_free(&b), tmat_free(&c);
    P(plan_destroy)(p);
}
END_TEST

/* Every key of the first half weighs 0 (with two threads a whole range
 * holds none; FAVOR+'s keys of the second half have exponents near
 * -1800): the second half's rows are the causal call on the second half
 * alone; the first half's see no key, den = eps, out = 0. */
START_TEST(causal_leading_zero_weights)
{
    int map = _i ? LINATTN_MAP_FAVOR : LINATTN_MAP_ELU1;
    int64_t n = 4000, h = n / 2, d = 4, e = 3;
    uint64_t s = 8 + (uint64_t)_i;
    P(plan) *p = causal_plan(map, d, e, LINATTN_DENOM_POSITIVE, 1e-3);
    tmat q = tmat_rand(ROW, n, d, 0, 0.1, 1, &s);
    tmat k = tmat_rand(ROW, n, d, 0, 0.1, 1, &s);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &s);
    real *w = malloc((size_t)n * sizeof *w);
    for (int64_t j = 0; j < n; j++) {
        w[j] = j < h ? 0 : 1;
        for (int64_t t = 0; _i && j >= h && t < d; t++)
            *tmat_at(&k, j, t) += 30;
    }
    tmat a = tmat_like(&q, n, e, 0), b = tmat_like(&q, h, e, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    int64_t bad;
    ck_assert_int_eq(P(causal_ex)(p, ROW, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                  a.a, a.ld, &ex, &bad), 0);
    ck_assert_int_eq(P(causal)(p, ROW, h, q.a + h * q.ld, q.ld,
                               k.a + h * k.ld, k.ld, v.a + h * v.ld, v.ld,
                               b.a, b.ld, &bad), 0);
    for (int64_t i = 0; i < h * e; i++)
        ck_assert(a.a[i] == 0);
    tmat tail = {ROW, h, e, a.ld, a.a + h * a.ld};
    ck_assert_double_le(rel_diff(&tail, &b), 100 * TOL);
    free(w);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
}
END_TEST

/* A weighted causal call from a weighted state, absorbing: the loops on
 * the concatenation, and the state then answers as one weighted stream;
 * its tokens are the keys of weight not 0. */
START_TEST(causal_weighted_state_composes)
{
    int count = _i;
    int64_t n0 = 12, n = 23, d = 3, e = 2;
    uint64_t s = 21 + (uint64_t)_i;
    P(plan) *p = causal_plan(LINATTN_MAP_ELU1, d, e,
                             count ? LINATTN_DENOM_COUNT
                                   : LINATTN_DENOM_POSITIVE, 0);
    tmat q, k, v;
    qkv_rand(&q, &k, &v, n0 + n, n0 + n, d, e, &s);
    real *w = weights_for(n0 + n, &k, &v, 1, &s);
    P(extras) ex;
    P(state) *st = weighted_state(p, n0, &k, &v, w, &ex);
    tmat out = tmat_like(&q, n, e, 0);
    int64_t bad;
    ck_assert_int_eq(P(causal_ex)(p, ROW, n, q.a + n0 * q.ld, q.ld,
                                  k.a + n0 * k.ld, k.ld, v.a + n0 * v.ld, v.ld,
                                  out.a, out.ld, &ex, &bad), 0);
    long double *ref = malloc((size_t)((n0 + n) * e) * sizeof *ref);
    ref_weighted_mask(LINATTN_MAP_ELU1, 1, count, &q, &k, &v, w, ref);
    ck_assert_double_le(rel_err(&out, ref + n0 * e), 100 * TOL);
    int64_t tokens, kept = 0;
    for (int64_t j = 0; j < n0 + n; j++)
        kept += w[j] != 0;
    ck_assert_int_eq(P(state_get)(st, ROW, NULL, 1, NULL, &tokens), 0);
    ck_assert_int_eq(tokens, kept);
    /* the state holds every weighted key: a query of the last row's q is
     * the last row's output */
    tmat last = tmat_like(&q, 1, e, 0);
    ck_assert_int_eq(P(state_query)(st, ROW, 1, q.a + (n0 + n - 1) * q.ld,
                                    q.ld, last.a, last.ld, NULL, 1, NULL,
                                    &bad), 0);
    ck_assert_double_le(rel_err(&last, ref + (n0 + n - 1) * e), 100 * TOL);
    free(ref), free(w);
    P(state_destroy)(st);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    tmat_free(&last);
    P(plan_destroy)(p);
}
END_TEST

/* ---- checkpoints ---- */

/* A weighted stream checkpoints as any other (the restored state answers
 * bit for bit); under the count normalizer a weight that is not its
 * token count goes into format version 2 (8 bytes more), and the
 * restored state continues as the saved one does, bit for bit, its
 * count the weight (a state restored with its tokens as its count would
 * not). */
START_TEST(weighted_checkpoints)
{
    int count = _i;
    int64_t n = 20, d = 3, e = 2;
    uint64_t s = 64 + (uint64_t)_i;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e,
                           count ? LINATTN_DENOM_COUNT : LINATTN_DENOM_POSITIVE,
                           0);
    tmat q, k, v;
    qkv_rand(&q, &k, &v, 4, n, d, e, &s);
    real w[20];
    for (int j = 0; j < 20; j++)
        w[j] = j % 5 ? 1 : 0; /* weights 0 and 1: the weight is the tokens */
    P(extras) ex;
    P(state) *st = weighted_state(p, n, &k, &v, w, &ex);
    int64_t len;
    ck_assert_int_eq(P(state_save_size)(st, &len), 0);
    unsigned char *buf = malloc((size_t)len);
    ck_assert_int_eq(P(state_save)(st, buf, len, NULL), 0);
    P(state) *back = NULL;
    ck_assert_int_eq(P(state_create)(&back, p), 0);
    ck_assert_int_eq(P(state_load)(back, buf, len), 0);
    tmat a = tmat_like(&q, 4, e, 0), b = tmat_like(&q, 4, e, 0);
    int64_t bad;
    ck_assert_int_eq(P(state_query)(st, ROW, 4, q.a, q.ld, a.a, a.ld, NULL, 1,
                                    NULL, &bad), 0);
    ck_assert_int_eq(P(state_query)(back, ROW, 4, q.a, q.ld, b.a, b.ld, NULL,
                                    1, NULL, &bad), 0);
    ck_assert_mem_eq(a.a, b.a, (size_t)(4 * e) * sizeof(real));
    /* a weight that is not the token count */
    w[1] = (real)0.5;
    ex.weights = w;
    ex.state = NULL;
    ex.absorb = 0;
    ck_assert_int_eq(P(state_update_ex)(st, ROW, 3, k.a, k.ld, v.a, v.ld,
                                        &ex), 0);
    int64_t len2;
    ck_assert_int_eq(P(state_save_size)(st, &len2), 0);
    ck_assert_int_eq(len2, len + (count ? 8 : 0));
    unsigned char *buf2 = malloc((size_t)len2);
    ck_assert_int_eq(P(state_save)(st, buf2, len2 - 1, NULL), -3);
    ck_assert_int_eq(P(state_save)(st, buf2, len2, NULL), 0);
    ck_assert_int_eq(buf2[8], count ? 2 : 1); /* the format version */
    /* a directory of its own: the double and float programs run this
     * test at the same time under make -j2, and a shared file name let
     * one load the other's checkpoint */
    char *dir = temp_dir(), *path = in_dir(dir, "ck");
    ck_assert_int_eq(P(state_save_file)(st, path), 0);
    P(state) *again = NULL, *fromfile = NULL;
    ck_assert_int_eq(P(state_create)(&again, p), 0);
    ck_assert_int_eq(P(state_create)(&fromfile, p), 0);
    ck_assert_int_eq(P(state_load)(again, buf2, len2), 0);
    ck_assert_int_eq(P(state_load_file)(fromfile, path), 0);
    remove_tree(dir);
    free(path), free(dir);
    /* all three continue alike: one more weighted update, then queries */
    P(state) *three[3] = {st, again, fromfile};
    tmat outs[3];
    for (int t = 0; t < 3; t++) {
        ck_assert_int_eq(P(state_update_ex)(three[t], ROW, 3, k.a, k.ld, v.a,
                                            v.ld, &ex), 0);
        outs[t] = tmat_like(&q, 4, e, 0);
        ck_assert_int_eq(P(state_query)(three[t], ROW, 4, q.a, q.ld,
                                        outs[t].a, outs[t].ld, NULL, 1, NULL,
                                        &bad), 0);
    }
    ck_assert_mem_eq(outs[0].a, outs[1].a, (size_t)(4 * e) * sizeof(real));
    ck_assert_mem_eq(outs[0].a, outs[2].a, (size_t)(4 * e) * sizeof(real));
    for (int t = 0; t < 3; t++)
        tmat_free(&outs[t]);
    P(state_destroy)(again), P(state_destroy)(fromfile);
    free(buf);
    free(buf2);
    P(state_destroy)(st), P(state_destroy)(back);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
}
END_TEST

/* ---- refusals: nothing written, the state unchanged ---- */

START_TEST(bad_weights_refused)
{
    int64_t nq = 4, nk = 9, d = 3, e = 2;
    uint64_t s = 1;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE, 0);
    tmat q, k, v;
    qkv_rand(&q, &k, &v, nq, nk, d, e, &s);
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    ck_assert_int_eq(P(state_update)(st, ROW, nk, k.a, k.ld, v.a, v.ld), 0);
    int64_t len;
    ck_assert_int_eq(P(state_save_size)(st, &len), 0);
    unsigned char *before = malloc((size_t)len), *now = malloc((size_t)len);
    ck_assert_int_eq(P(state_save)(st, before, len, NULL), 0);
    const real bads[4] = {-1, (real)NAN, (real)INFINITY, (real)-1e-300};
    real w[9];
    P(extras) ex;
    for (int b = 0; b < 4; b++) {
        for (int j = 0; j < 9; j++)
            w[j] = 1;
        w[b * 2] = bads[b];
        if (b == 3 && w[b * 2] == 0)
            w[b * 2] = -1e-30f; /* float: a negative that stays negative */
        P(extras_init)(&ex);
        ex.weights = w;
        tmat out = tmat_like(&q, nq, e, 0);
        for (int64_t i = 0; i < nq * e; i++)
            out.a[i] = 7;
        int64_t bad = -7;
        ck_assert_int_eq(P(attention_ex)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld,
                                         v.a, v.ld, out.a, out.ld, &ex, &bad),
                         -13);
        for (int64_t i = 0; i < nq * e; i++)
            ck_assert(out.a[i] == 7);
        ck_assert_int_eq(bad, -7);
        /* absorbing into a state: the state unchanged */
        ex.state = st;
        ex.absorb = 1;
        ck_assert_int_eq(P(attention_ex)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld,
                                         v.a, v.ld, out.a, out.ld, &ex, &bad),
                         -13);
        ex.state = NULL;
        ex.absorb = 0;
        ck_assert_int_eq(P(state_update_ex)(st, ROW, nk, k.a, k.ld, v.a, v.ld,
                                            &ex), -8);
        ck_assert_int_eq(P(state_save)(st, now, len, NULL), 0);
        ck_assert_mem_eq(now, before, (size_t)len);
        tmat_free(&out);
    }
    for (int j = 0; j < 9; j++)
        w[j] = 1;
    /* out meeting the weights: -11, out's position */
    P(extras_init)(&ex);
    real *buf = malloc(64 * sizeof *buf);
    for (int i = 0; i < 64; i++)
        buf[i] = 1;
    ex.weights = buf;
    int64_t bad = -7;
    ck_assert_int_eq(P(attention_ex)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld, v.a,
                                     v.ld, buf + 4, e, &ex, &bad), -11);
    for (int i = 0; i < 64; i++)
        ck_assert(buf[i] == 1);
    /* den meeting the weights: -13, the extras' */
    ex.den = buf + 8;
    tmat out = tmat_like(&q, nq, e, 0);
    ck_assert_int_eq(P(attention_ex)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld, v.a,
                                     v.ld, out.a, out.ld, &ex, &bad), -13);
    /* weights that share memory with an input are fine */
    P(extras_init)(&ex);
    tmat kv = tmat_rand(ROW, nk, d, 0, 0.5, 1, &s);
    ex.weights = kv.a; /* d entries per row: the first nk of them */
    ck_assert_int_eq(P(attention_ex)(p, ROW, nq, nk, q.a, q.ld, kv.a, kv.ld,
                                     v.a, v.ld, out.a, out.ld, &ex, &bad), 0);
    /* the update takes weights only: den, a state or absorb are -8 */
    real den[4];
    P(extras_init)(&ex);
    ex.den = den;
    ck_assert_int_eq(P(state_update_ex)(st, ROW, nk, k.a, k.ld, v.a, v.ld,
                                        &ex), -8);
    P(extras_init)(&ex);
    ex.state = st;
    ck_assert_int_eq(P(state_update_ex)(st, ROW, nk, k.a, k.ld, v.a, v.ld,
                                        &ex), -8);
    P(extras_init)(&ex);
    ex.reserved[3] = 1;
    ck_assert_int_eq(P(state_update_ex)(st, ROW, nk, k.a, k.ld, v.a, v.ld,
                                        &ex), -8);
    /* the baselines: a bad weight, or a part they do not take, is -13
     * (-12 causal) */
    P(extras_init)(&ex);
    ex.weights = w;
    w[2] = -1;
    ck_assert_int_eq(P(naive_ex)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld, v.a,
                                 v.ld, out.a, out.ld, &ex, &bad), -13);
    ck_assert_int_eq(P(naive_causal_ex)(p, ROW, nk, k.a, k.ld, k.a, k.ld, v.a,
                                        v.ld, buf, e, &ex, &bad), -12);
    w[2] = 1;
    ex.den = den;
    ck_assert_int_eq(P(naive_ex)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld, v.a,
                                 v.ld, out.a, out.ld, &ex, &bad), -13);
    /* ex NULL: linattn_d_naive, bit for bit */
    tmat o2 = tmat_like(&q, nq, e, 0);
    ck_assert_int_eq(P(naive_ex)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld, v.a,
                                 v.ld, out.a, out.ld, NULL, &bad), 0);
    ck_assert_int_eq(P(naive)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                              o2.a, o2.ld, &bad), 0);
    ck_assert_mem_eq(out.a, o2.a, (size_t)(nq * e) * sizeof(real));
    tmat_free(&o2);
    /* causal_ex: a bad weight is -12, the extras', nothing written */
    P(extras_init)(&ex);
    ex.weights = w;
    w[5] = (real)NAN;
    tmat co = tmat_like(&k, nk, e, 0);
    for (int64_t i = 0; i < nk * e; i++)
        co.a[i] = 7;
    ck_assert_int_eq(P(causal_ex)(p, ROW, nk, k.a, k.ld, k.a, k.ld, v.a, v.ld,
                                  co.a, co.ld, &ex, &bad), -12);
    for (int64_t i = 0; i < nk * e; i++)
        ck_assert(co.a[i] == 7);
    /* and out meeting the weights: -10, out's position */
    w[5] = 1;
    ex.weights = co.a + 3;
    ck_assert_int_eq(P(causal_ex)(p, ROW, nk, k.a, k.ld, k.a, k.ld, v.a, v.ld,
                                  co.a, co.ld, &ex, &bad), -10);
    tmat_free(&co);
    ck_assert_int_eq(P(state_save)(st, now, len, NULL), 0);
    ck_assert_mem_eq(now, before, (size_t)len);
    /* earlier arguments come first: a NULL plan is -1 whatever the weights */
    w[0] = -1;
    ck_assert_int_eq(P(attention_ex)(NULL, ROW, nq, nk, q.a, q.ld, k.a, k.ld,
                                     v.a, v.ld, out.a, out.ld, &ex, &bad), -1);
    free(before), free(now), free(buf);
    P(state_destroy)(st);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out), tmat_free(&kv);
    P(plan_destroy)(p);
}
END_TEST

/* check_finite looks at the keys of weight not 0 only, and at all of
 * those: NaN in a kept key is LINATTN_ENONFINITE, nothing written. */
START_TEST(check_finite_sees_kept_keys)
{
    int64_t nq = 3, nk = 10, d = 2, e = 2;
    uint64_t s = 4;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE, 1);
    tmat q, k, v;
    qkv_rand(&q, &k, &v, nq, nk, d, e, &s);
    real w[10];
    for (int j = 0; j < 10; j++)
        w[j] = j == 6 ? 0 : (real)0.5;
    *tmat_at(&v, 6, 1) = (real)NAN;
    tmat out = tmat_like(&q, nq, e, 0);
    int64_t bad;
    ck_assert_int_eq(weighted_call(p, &q, &k, &v, w, &out, &bad), 0);
    *tmat_at(&k, 5, 0) = (real)NAN;
    for (int64_t i = 0; i < nq * e; i++)
        out.a[i] = 7;
    ck_assert_int_eq(weighted_call(p, &q, &k, &v, w, &out, &bad),
                     LINATTN_ENONFINITE);
    for (int64_t i = 0; i < nq * e; i++)
        ck_assert(out.a[i] == 7);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    P(plan_destroy)(p);
}
END_TEST

/* A weighted state's key weight is the sum of its keys' weights (its
 * tokens without weights); export, key_weight and import_weighted carry
 * it into another state, whose count normalizer then reads it; every
 * refusal of import_weighted leaves the state as it was. */
START_TEST(key_weight_travels)
{
    int64_t nq = 4, nk = 9, d = 2, e = 3;
    uint64_t s = 31;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_COUNT, 0);
    tmat q, k, v;
    qkv_rand(&q, &k, &v, nq, nk, d, e, &s);
    real w[9];
    double sum = 0;
    for (int j = 0; j < 9; j++) {
        w[j] = j == 2 ? 0 : (real)(0.25 * (j + 1));
        sum += (double)w[j];
    }
    P(state) *a = NULL, *b = NULL;
    P(state_create)(&a, p);
    P(state_create)(&b, p);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ck_assert_int_eq(P(state_update_ex)(a, ROW, nk, k.a, k.ld, v.a, v.ld, &ex),
                     0);
    double wa = -1, wb = -1;
    ck_assert_int_eq(P(state_key_weight)(a, &wa), 0);
    ck_assert_double_eq_tol(wa, sum, 1e-12 * sum);
    int64_t len = 0, tokens = 0;
    P(plan_dims)(p, NULL, &len, NULL);
    len *= e + 1;
    double *acc = malloc((size_t)len * sizeof *acc), shift = 0;
    P(state_export)(a, acc, &shift, &tokens);
    ck_assert_int_eq(tokens, 8);
    /* refused: state, acc, shift, tokens, weight (NaN, Inf, < 0, 0 with
     * tokens, > 0 without); b stays empty */
    ck_assert_int_eq(P(state_import_weighted)(NULL, acc, 0, tokens, wa), -1);
    ck_assert_int_eq(P(state_import_weighted)(b, NULL, 0, tokens, wa), -2);
    ck_assert_int_eq(P(state_import_weighted)(b, acc, 1, tokens, wa), -3);
    ck_assert_int_eq(P(state_import_weighted)(b, acc, 0, -1, wa), -4);
    const double bad[5] = {NAN, INFINITY, -1, 0, 1};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(P(state_import_weighted)(b, acc, 0, i == 4 ? 0 : tokens,
                                                  bad[i]),
                         -5);
    ck_assert_int_eq(P(state_key_weight)(b, &wb), 0);
    ck_assert(wb == 0);
    int64_t tb = -1;
    P(state_export)(b, NULL, NULL, &tb);
    ck_assert_int_eq(tb, 0);
    ck_assert_int_eq(P(state_key_weight)(NULL, &wb), -1);
    ck_assert_int_eq(P(state_key_weight)(b, NULL), -2);
    /* carried: b answers as a, bit for bit (the count is the weight) */
    ck_assert_int_eq(P(state_import_weighted)(b, acc, shift, tokens, wa), 0);
    ck_assert_int_eq(P(state_key_weight)(b, &wb), 0);
    ck_assert(wb == wa);
    tmat oa = tmat_like(&q, nq, e, 0), ob = tmat_like(&q, nq, e, 0);
    ck_assert_int_eq(P(state_query)(a, ROW, nq, q.a, q.ld, oa.a, oa.ld, NULL, 0,
                                    NULL, NULL), 0);
    ck_assert_int_eq(P(state_query)(b, ROW, nq, q.a, q.ld, ob.a, ob.ld, NULL, 0,
                                    NULL, NULL), 0);
    ck_assert(!memcmp(oa.a, ob.a, (size_t)(nq * e) * sizeof(real)));
    /* plain import counts tokens, not the weight: another count */
    ck_assert_int_eq(P(state_import)(b, acc, shift, tokens), 0);
    ck_assert_int_eq(P(state_key_weight)(b, &wb), 0);
    ck_assert(wb == 8);
    free(acc);
    tmat_free(&oa), tmat_free(&ob);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
    P(state_destroy)(a), P(state_destroy)(b);
    P(plan_destroy)(p);
}
END_TEST

/* The _ex checks: the status of the call, nothing computed (out
 * untouched), for good arguments and for a bad weight. */
START_TEST(ex_checks_are_the_calls)
{
    int64_t n = 5, d = 2, e = 2;
    uint64_t s = 8;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE, 0);
    tmat q, k, v;
    qkv_rand(&q, &k, &v, n, n, d, e, &s);
    tmat out = tmat_like(&q, n, e, 0);
    real w[5] = {1, 0.5, 0.75, 0, 1};
    int64_t off[3] = {0, 2, 5};
    for (int c = 0; c < 3; c++) {
        P(extras) ex;
        P(extras_init)(&ex);
        ex.weights = w;
        ex.offsets = off;
        ex.nseq = 2;
        if (c == 1)
            w[3] = -1;
        if (c == 2)
            off[1] = 6;
        for (int64_t i = 0; i < n * e; i++)
            out.a[i] = 7;
        int ca = P(attention_ex_check)(p, ROW, n, n, q.a, q.ld, k.a, k.ld,
                                       v.a, v.ld, out.a, out.ld, &ex);
        int cc = P(causal_ex_check)(p, ROW, n, q.a, q.ld, k.a, k.ld, v.a,
                                    v.ld, out.a, out.ld, &ex);
        for (int64_t i = 0; i < n * e; i++)
            ck_assert(out.a[i] == 7);
        ck_assert_int_eq(ca, c ? -13 : 0);
        ck_assert_int_eq(cc, c ? -12 : 0);
        ck_assert_int_eq(P(attention_ex)(p, ROW, n, n, q.a, q.ld, k.a, k.ld,
                                         v.a, v.ld, out.a, out.ld, &ex, NULL),
                         ca);
        ck_assert_int_eq(P(causal_ex)(p, ROW, n, q.a, q.ld, k.a, k.ld, v.a,
                                      v.ld, out.a, out.ld, &ex, NULL),
                         cc);
        w[3] = 0;
        off[1] = 2;
    }
    ck_assert_int_eq(P(causal_ex_check)(NULL, ROW, n, q.a, q.ld, k.a, k.ld,
                                        v.a, v.ld, out.a, out.ld, NULL),
                     -1);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    P(plan_destroy)(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("weights " PREC);
    TCase *tc = tcase_create("weights");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, weighted_matches_loops, 0, 24);
    tcase_add_loop_test(tc, unit_weights_are_none, 0, 2);
    tcase_add_loop_test(tc, zero_weights_drop_keys, 0, 8);
    tcase_add_loop_test(tc, integer_weights_repeat_keys, 0, 6);
    tcase_add_loop_test(tc, weighted_stream_is_one_call, 0, 4);
    tcase_add_test(tc, weighted_state_and_call_compose);
    tcase_add_loop_test(tc, causal_weighted_matches_loops, 0, 24);
    tcase_add_loop_test(tc, causal_zero_weights_never_read, 0, 5);
    tcase_add_loop_test(tc, zero_weights_never_reach, 0, 40);
    tcase_add_loop_test(tc, causal_leading_zero_weights, 0, 2);
    tcase_add_loop_test(tc, causal_weighted_state_composes, 0, 2);
    tcase_add_loop_test(tc, weighted_checkpoints, 0, 2);
    tcase_add_test(tc, bad_weights_refused);
    tcase_add_test(tc, check_finite_sees_kept_keys);
    tcase_add_test(tc, key_weight_travels);
    tcase_add_test(tc, ex_checks_are_the_calls);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
