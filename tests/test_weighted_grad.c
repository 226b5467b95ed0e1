/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_weighted_grad.c -- the backward _ex calls (linattn_d_attention_
 * backward_ex, linattn_d_causal_backward_ex), compiled once per
 * precision: integer key weights against the unweighted backward on the
 * keys repeated (dq equal, each key's dk and dv the sum over its copies,
 * the keys of weight 0 with NaN in their rows never read and their
 * gradients 0); dL/dw against central differences of the weighted
 * forward, non-causal and causal (several chunks, two ranges of
 * threads); weights all 1 against none, bit for bit; a given weighted
 * state against the rebuilt one; packed
 * sequences against one backward call per piece (bit for bit on one
 * thread); and every refusal with nothing written.
 */
#include "testutil.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define ROW LINATTN_ROW_MAJOR

static P(plan) *plan_of(int map, int64_t d, int64_t e, int denom)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = denom;
    o.block = 5;
    o.seed = 9;
    if (map == LINATTN_MAP_FAVOR)
        o.m = 6;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* Forward with weights w (NULL: none) into out and den. */
static void forward(const P(plan) *p, int64_t nq, int64_t nk, const real *q,
                    const real *k, const real *v, const real *w, real *out,
                    real *den, int64_t d, int64_t e)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ex.den = den;
    ck_assert_int_eq(P(attention_ex)(p, ROW, nq, nk, q, d, k, d, v, e, out, e,
                                     &ex, NULL), 0);
}

/* The backward with weights w and dL/dw into dkw (each may be NULL). */
static int backward(const P(plan) *p, int64_t nq, int64_t nk, const real *q,
                    const real *k, const real *v, const real *out,
                    const real *den, const real *g, real *dq, real *dk,
                    real *dv, const real *w, real *dkw, const P(state) *st,
                    int64_t d, int64_t e)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ex.dweights = dkw;
    return P(attention_backward_ex)(p, ROW, nq, nk, q, d, k, d, v, e, out, e,
                                    den, g, e, dq, d, dk, d, dv, e, NULL, 1,
                                    NULL, st, &ex, NULL);
}

static double max_diff(const real *a, const real *b, int64_t n, double *scale)
{
    double m = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = fabs((double)a[i] - (double)b[i]);
        m = x > m ? x : m;
        s = fabs((double)b[i]) > s ? fabs((double)b[i]) : s;
    }
    *scale = s;
    return m;
}

START_TEST(integer_weights_repeat_keys)
{
    static const int maps[3] = {LINATTN_MAP_ELU1, LINATTN_MAP_FAVOR,
                                LINATTN_MAP_IDENTITY};
    int map = maps[_i % 3];
    int denom = map == LINATTN_MAP_IDENTITY ? LINATTN_DENOM_COUNT
                                            : LINATTN_DENOM_POSITIVE;
    int64_t d = 3, e = 2, nq = 9, nk = 13, nrep = 0;
    uint64_t s = 5 + (uint64_t)_i;
    P(plan) *p = plan_of(map, d, e, denom);
    real *q = test_rand_vec(nq * d, -1, 1, &s), *k = test_rand_vec(nk * d, -1, 1, &s);
    real *v = test_rand_vec(nk * e, -1, 1, &s), *g = test_rand_vec(nq * e, -1, 1, &s);
    real w[13];
    int rep[13];
    for (int64_t j = 0; j < nk; j++) {
        rep[j] = (int)((j * 7 + 3) % 4); /* 0 .. 3 */
        w[j] = (real)rep[j];
        nrep += rep[j];
    }
    /* the keys repeated rep[j] times */
    real *kr = malloc((size_t)(nrep * d) * sizeof *kr);
    real *vr = malloc((size_t)(nrep * e) * sizeof *vr);
    for (int64_t j = 0, r = 0; j < nk; j++)
        for (int t = 0; t < rep[j]; t++, r++) {
            memcpy(kr + r * d, k + j * d, (size_t)d * sizeof *k);
            memcpy(vr + r * e, v + j * e, (size_t)e * sizeof *v);
        }
    for (int64_t j = 0; j < nk; j++)
        if (rep[j] == 0) { /* never read */
            k[j * d] = (real)NAN;
            v[j * e + 1] = (real)INFINITY;
        }
    real out[18], den[9], rout[18], rden[9];
    forward(p, nq, nk, q, k, v, w, out, den, d, e);
    forward(p, nq, nrep, q, kr, vr, NULL, rout, rden, d, e);
    real dq[27], dk[39], dv[26], dkw[13], rdq[27];
    real *rdk = malloc((size_t)(nrep * d) * sizeof *rdk);
    real *rdv = malloc((size_t)(nrep * e) * sizeof *rdv);
    for (int i = 0; i < 39; i++)
        dk[i] = 99;
    ck_assert_int_eq(backward(p, nq, nk, q, k, v, out, den, g, dq, dk, dv, w,
                              dkw, NULL, d, e), 0);
    ck_assert_int_eq(backward(p, nq, nrep, q, kr, vr, rout, rden, g, rdq, rdk,
                              rdv, NULL, NULL, NULL, d, e), 0);
    double sc, tol = 1000 * TOL;
    ck_assert_double_le(max_diff(dq, rdq, nq * d, &sc), tol * (1 + sc));
    for (int64_t j = 0, r = 0; j < nk; j++) {
        for (int64_t c = 0; c < d; c++) {
            double sum = 0;
            for (int t = 0; t < rep[j]; t++)
                sum += rdk[(r + t) * d + c];
            ck_assert_double_le(fabs(dk[j * d + c] - sum),
                                tol * (1 + fabs(sum)));
        }
        for (int64_t c = 0; c < e; c++) {
            double sum = 0;
            for (int t = 0; t < rep[j]; t++)
                sum += rdv[(r + t) * e + c];
            ck_assert_double_le(fabs(dv[j * e + c] - sum),
                                tol * (1 + fabs(sum)));
        }
        if (rep[j] == 0)
            ck_assert(dkw[j] == 0 && dk[j * d] == 0 && dv[j * e + 1] == 0);
        r += rep[j];
    }
    /* a given state of the weighted keys: the same gradients */
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    P(extras) ux;
    P(extras_init)(&ux);
    ux.weights = w;
    ck_assert_int_eq(P(state_update_ex)(st, ROW, nk, k, d, v, e, &ux), 0);
    real gdq[27], gdk[39], gdv[26], gdkw[13];
    ck_assert_int_eq(backward(p, nq, nk, q, k, v, out, den, g, gdq, gdk, gdv,
                              w, gdkw, st, d, e), 0);
    ck_assert_double_le(max_diff(gdq, dq, nq * d, &sc), tol * (1 + sc));
    ck_assert_double_le(max_diff(gdkw, dkw, nk, &sc), tol * (1 + sc));
    /* a state of all nk keys does not hold the weighted ones */
    P(state) *all = NULL;
    ck_assert_int_eq(P(state_create)(&all, p), 0);
    for (int64_t j = 0; j < nk * d; j++)
        kr[j] = (real)0.5;
    ck_assert_int_eq(P(state_update)(all, ROW, nk, kr, d, vr, e), 0);
    ck_assert_int_eq(backward(p, nq, nk, q, k, v, out, den, g, gdq, gdk, gdv,
                              w, gdkw, all, d, e), -25);
    P(state_destroy)(st);
    P(state_destroy)(all);
    free(q), free(k), free(v), free(g), free(kr), free(vr), free(rdk);
    free(rdv);
    P(plan_destroy)(p);
}
END_TEST

/* dL/dw_j, L = sum G . out, against central differences of the weighted
 * forward (also at every w = 1 with weights NULL). */
START_TEST(dweights_central_differences)
{
    int map = _i % 2 ? LINATTN_MAP_FAVOR : LINATTN_MAP_ELU1;
    int unit = _i / 2;
    int64_t d = 3, e = 2, nq = 7, nk = 10;
    uint64_t s = 41 + (uint64_t)_i;
    P(plan) *p = plan_of(map, d, e, LINATTN_DENOM_POSITIVE);
    real *q = test_rand_vec(nq * d, -1, 1, &s), *k = test_rand_vec(nk * d, -1, 1, &s);
    real *v = test_rand_vec(nk * e, -1, 1, &s), *g = test_rand_vec(nq * e, -1, 1, &s);
    real *w = test_rand_vec(nk, 0.3, 1.5, &s);
    if (unit)
        for (int64_t j = 0; j < nk; j++)
            w[j] = 1;
    real out[14], den[7], dq[21], dk[30], dv[20], dkw[10];
    forward(p, nq, nk, q, k, v, w, out, den, d, e);
    ck_assert_int_eq(backward(p, nq, nk, q, k, v, out, den, g, dq, dk, dv,
                              unit ? NULL : w, dkw, NULL, d, e), 0);
    double h = sizeof(real) == 4 ? 1e-2 : 1e-6;
    double tol = sizeof(real) == 4 ? 2e-2 : 1e-7;
    for (int64_t j = 0; j < nk; j++) {
        double l[2];
        real keep = w[j];
        for (int side = 0; side < 2; side++) {
            w[j] = (real)(keep + (side ? -h : h));
            real o2[14], d2[7];
            forward(p, nq, nk, q, k, v, w, o2, d2, d, e);
            l[side] = 0;
            for (int64_t i = 0; i < nq * e; i++)
                l[side] += (double)g[i] * (double)o2[i];
        }
        w[j] = keep;
        double fd = (l[0] - l[1]) / (2 * h);
        ck_assert_double_le(fabs(dkw[j] - fd), tol * (1 + fabs(fd)));
    }
    free(q), free(k), free(v), free(g), free(w);
    P(plan_destroy)(p);
}
END_TEST

/* Packed: the gradients of each sequence as its own backward call (bit
 * for bit on one thread), dW summed over them (FAVOR+). */
START_TEST(packed_backward_is_pieces)
{
    static const int64_t qlen[] = {4, 0, 7, 1, 12}, klen[] = {3, 0, 9, 1, 12};
    int causal = _i % 2, map = _i / 2 ? LINATTN_MAP_FAVOR : LINATTN_MAP_ELU1;
    int64_t d = 3, e = 2, nseq = 5, rows;
    int64_t qoff[6] = {0}, koff[6] = {0};
    for (int t = 0; t < 5; t++) {
        qoff[t + 1] = qoff[t] + qlen[t];
        koff[t + 1] = koff[t] + (causal ? qlen[t] : klen[t]);
    }
    int64_t nq = qoff[5], nk = koff[5];
    uint64_t s = 61 + (uint64_t)_i;
    P(plan) *p = plan_of(map, d, e, LINATTN_DENOM_POSITIVE);
    ck_assert_int_eq(P(plan_weights)(p, ROW, NULL, 1, &rows), 0);
    real *q = test_rand_vec(nq * d, -1, 1, &s), *k = test_rand_vec(nk * d, -1, 1, &s);
    real *v = test_rand_vec(nk * e, -1, 1, &s), *g = test_rand_vec(nq * e, -1, 1, &s);
    real *out = malloc((size_t)(nq * e) * sizeof *out);
    real *den = malloc((size_t)nq * sizeof *den);
    real *dq = malloc((size_t)(nq * d) * sizeof *dq);
    real *dk = malloc((size_t)(nk * d) * sizeof *dk);
    real *dv = malloc((size_t)(nk * e) * sizeof *dv);
    real *pq = malloc((size_t)(nq * d) * sizeof *pq);
    real *pk = malloc((size_t)(nk * d) * sizeof *pk);
    real *pv = malloc((size_t)(nk * e) * sizeof *pv);
    real dw[64], pdw[64], one_dw[64];
    int64_t wr = map == LINATTN_MAP_FAVOR ? rows : 0;
#ifdef _OPENMP
    int old = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
    P(extras) ex;
    P(extras_init)(&ex);
    ex.offsets = qoff;
    ex.key_offsets = causal ? NULL : koff;
    ex.nseq = nseq;
    ex.den = den;
    if (causal)
        ck_assert_int_eq(P(causal_ex)(p, ROW, nq, q, d, k, d, v, e, out, e,
                                      &ex, NULL), 0);
    else
        ck_assert_int_eq(P(attention_ex)(p, ROW, nq, nk, q, d, k, d, v, e,
                                         out, e, &ex, NULL), 0);
    ex.den = NULL;
    real *dwp = wr ? dw : NULL;
    int st = causal
        ? P(causal_backward_ex)(p, ROW, nq, q, d, k, d, v, e, out, e, den, g,
                                e, dq, d, dk, d, dv, e, dwp, d, NULL, &ex,
                                NULL)
        : P(attention_backward_ex)(p, ROW, nq, nk, q, d, k, d, v, e, out, e,
                                   den, g, e, dq, d, dk, d, dv, e, dwp, d,
                                   NULL, NULL, &ex, NULL);
    ck_assert_int_eq(st, 0);
    for (int64_t i = 0; i < wr * d; i++)
        pdw[i] = 0;
    for (int t = 0; t < 5; t++) {
        int64_t a = qoff[t], b = koff[t], n = qlen[t], m = koff[t + 1] - b;
        real *dwo = wr ? one_dw : NULL;
        st = causal
            ? P(causal_backward)(p, ROW, n, q + a * d, d, k + b * d, d,
                                 v + b * e, e, out + a * e, e, den + a,
                                 g + a * e, e, pq + a * d, d, pk + b * d, d,
                                 pv + b * e, e, dwo, d, NULL, NULL)
            : P(attention_backward)(p, ROW, n, m, q + a * d, d, k + b * d, d,
                                    v + b * e, e, out + a * e, e, den + a,
                                    g + a * e, e, pq + a * d, d, pk + b * d,
                                    d, pv + b * e, e, dwo, d, NULL, NULL,
                                    NULL);
        ck_assert_int_eq(st, 0);
        for (int64_t i = 0; i < wr * d; i++)
            pdw[i] += one_dw[i];
    }
#ifdef _OPENMP
    omp_set_num_threads(old);
#endif
    ck_assert(!memcmp(dq, pq, (size_t)(nq * d) * sizeof *dq));
    ck_assert(!memcmp(dk, pk, (size_t)(nk * d) * sizeof *dk));
    ck_assert(!memcmp(dv, pv, (size_t)(nk * e) * sizeof *dv));
    double sc;
    if (wr)
        ck_assert_double_le(max_diff(dw, pdw, wr * d, &sc),
                            100 * TOL * (1 + sc));
    free(q), free(k), free(v), free(g), free(out), free(den);
    free(dq), free(dk), free(dv), free(pq), free(pk), free(pv);
    P(plan_destroy)(p);
}
END_TEST

/* The causal backward with key weights: every gradient (dq, dk, dv,
 * dL/dw) against central differences of the weighted causal forward (in
 * double), with several chunks and, on two threads, two ranges; keys of
 * weight 0 hold NaN (never read: their dk, dv, dL/dw are 0, and L does
 * not depend on them); weights all 1 bit for bit the unweighted backward
 * (both precisions). */
START_TEST(causal_weights_central_differences)
{
    int map = _i % 2 ? LINATTN_MAP_FAVOR : LINATTN_MAP_ELU1;
    int64_t d = 2, e = 2, n = 40;
    uint64_t s = 71 + (uint64_t)_i;
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 4;
    o.chunk = 4;
    o.seed = 3;
    if (map == LINATTN_MAP_FAVOR)
        o.m = 6;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    real *q = test_rand_vec(n * d, -1, 1, &s), *k = test_rand_vec(n * d, -1, 1, &s);
    real *v = test_rand_vec(n * e, -1, 1, &s), *g = test_rand_vec(n * e, -1, 1, &s);
    real *w = test_rand_vec(n, 0.3, 1.5, &s);
    w[9] = w[10] = w[23] = 0; /* rows 9 and 10: a chunk with two zeros */
    k[9 * d] = (real)NAN;
    v[10 * e + 1] = (real)INFINITY;
    real out[80], den[40], dq[80], dk[80], dv[80], dkw[40];
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ex.den = den;
    ck_assert_int_eq(P(causal_ex)(p, ROW, n, q, d, k, d, v, e, out, e, &ex,
                                  NULL), 0);
    ex.den = NULL;
    ex.dweights = dkw;
    ck_assert_int_eq(P(causal_backward_ex)(p, ROW, n, q, d, k, d, v, e, out, e,
                                           den, g, e, dq, d, dk, d, dv, e,
                                           NULL, 1, NULL, &ex, NULL), 0);
    for (int64_t j = 0; j < n; j++)
        if (w[j] == 0) {
            ck_assert(dkw[j] == 0 && dk[j * d] == 0 && dk[j * d + 1] == 0);
            ck_assert(dv[j * e] == 0 && dv[j * e + 1] == 0);
        }
#ifndef TEST_SINGLE
    /* L = sum G . out of the weighted causal forward at x + t h */
    real *const xs[4] = {q, k, v, w};
    const real *gs[4] = {dq, dk, dv, dkw};
    const int64_t len[4] = {n * d, n * d, n * e, n};
    double h = 1e-6;
    for (int a = 0; a < 4; a++)
        for (int64_t i = 0; i < len[a]; i++) {
            int64_t row = a == 3 ? i : a == 2 ? i / e : i / d;
            if (a > 0 && w[row] == 0)
                continue; /* not read: L does not depend on it */
            double l[2];
            real keep = xs[a][i];
            for (int side = 0; side < 2; side++) {
                xs[a][i] = (real)(keep + (side ? -h : h));
                real o2[80];
                P(extras) fx;
                P(extras_init)(&fx);
                fx.weights = w;
                ck_assert_int_eq(P(causal_ex)(p, ROW, n, q, d, k, d, v, e, o2,
                                              e, &fx, NULL), 0);
                l[side] = 0;
                for (int64_t t = 0; t < n * e; t++)
                    l[side] += (double)g[t] * (double)o2[t];
            }
            xs[a][i] = keep;
            double fd = (l[0] - l[1]) / (2 * h);
            ck_assert_double_le(fabs(gs[a][i] - fd), 1e-7 * (1 + fabs(fd)));
        }
#endif
    /* weights all 1: the unweighted backward, bit for bit */
    for (int64_t j = 0; j < n; j++)
        w[j] = 1;
    k[9 * d] = 0.25;
    v[10 * e + 1] = 0.5;
    real dq1[80], dk1[80], dv1[80];
    ck_assert_int_eq(P(causal_forward)(p, ROW, n, q, d, k, d, v, e, out, e,
                                       den, NULL), 0);
    ck_assert_int_eq(P(causal_backward_ex)(p, ROW, n, q, d, k, d, v, e, out, e,
                                           den, g, e, dq, d, dk, d, dv, e,
                                           NULL, 1, NULL, &ex, NULL), 0);
    ck_assert_int_eq(P(causal_backward)(p, ROW, n, q, d, k, d, v, e, out, e,
                                        den, g, e, dq1, d, dk1, d, dv1, e,
                                        NULL, 1, NULL, NULL), 0);
    ck_assert(!memcmp(dq, dq1, sizeof dq) && !memcmp(dk, dk1, sizeof dk) &&
              !memcmp(dv, dv1, sizeof dv));
    free(q), free(k), free(v), free(g), free(w);
    P(plan_destroy)(p);
}
END_TEST

START_TEST(bad_backward_ex_refused)
{
    int64_t d = 2, e = 2, n = 4;
    uint64_t s = 3;
    P(plan) *p = plan_of(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE);
    real *q = test_rand_vec(n * d, -1, 1, &s), *k = test_rand_vec(n * d, -1, 1, &s);
    real *v = test_rand_vec(n * e, -1, 1, &s), *g = test_rand_vec(n * e, -1, 1, &s);
    real out[8], den[4], dq[8], dk[8], dv[8], dkw[4];
    real w[4] = {1, 0.5, 2, 1}, neg[4] = {1, -1, 1, 1};
    forward(p, n, n, q, k, v, w, out, den, d, e);
    for (int i = 0; i < 8; i++)
        dq[i] = dk[i] = dv[i] = 5;
    for (int i = 0; i < 4; i++)
        dkw[i] = 5;
    P(extras) ex;
    P(extras_init)(&ex);
    /* a bad weight; dweights meeting dk; a part it does not take */
    ex.weights = neg;
    ck_assert_int_eq(P(attention_backward_ex)(p, ROW, n, n, q, d, k, d, v, e,
                                              out, e, den, g, e, dq, d, dk, d,
                                              dv, e, NULL, 1, NULL, NULL, &ex,
                                              NULL), -26);
    ex.weights = w;
    ex.dweights = dk;
    ck_assert_int_eq(P(attention_backward_ex)(p, ROW, n, n, q, d, k, d, v, e,
                                              out, e, den, g, e, dq, d, dk, d,
                                              dv, e, NULL, 1, NULL, NULL, &ex,
                                              NULL), -26);
    ex.dweights = dkw;
    ex.absorb = 1;
    ck_assert_int_eq(P(attention_backward_ex)(p, ROW, n, n, q, d, k, d, v, e,
                                              out, e, den, g, e, dq, d, dk, d,
                                              dv, e, NULL, 1, NULL, NULL, &ex,
                                              NULL), -26);
    ex.absorb = 0;
    /* offsets with the keys' state */
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    P(extras) ux;
    P(extras_init)(&ux);
    ux.weights = w;
    ck_assert_int_eq(P(state_update_ex)(st, ROW, n, k, d, v, e, &ux), 0);
    int64_t off[2] = {0, 4};
    ex.offsets = off;
    ex.nseq = 1;
    ck_assert_int_eq(P(attention_backward_ex)(p, ROW, n, n, q, d, k, d, v, e,
                                              out, e, den, g, e, dq, d, dk, d,
                                              dv, e, NULL, 1, NULL, st, &ex,
                                              NULL), -26);
    /* the causal backward takes no key offsets; the forward no dweights */
    P(extras) cx;
    P(extras_init)(&cx);
    cx.offsets = off;
    cx.key_offsets = off;
    cx.nseq = 1;
    ck_assert_int_eq(P(causal_backward_ex)(p, ROW, n, q, d, k, d, v, e, out,
                                           e, den, g, e, dq, d, dk, d, dv, e,
                                           NULL, 1, NULL, &cx, NULL), -24);
    P(extras_init)(&cx);
    cx.weights = neg;
    ck_assert_int_eq(P(causal_backward_ex)(p, ROW, n, q, d, k, d, v, e, out,
                                           e, den, g, e, dq, d, dk, d, dv, e,
                                           NULL, 1, NULL, &cx, NULL), -24);
    P(extras_init)(&cx);
    cx.dweights = dkw;
    ck_assert_int_eq(P(attention_ex)(p, ROW, n, n, q, d, k, d, v, e, out, e,
                                     &cx, NULL), -13);
    for (int i = 0; i < 8; i++)
        ck_assert(dq[i] == 5 && dk[i] == 5 && dv[i] == 5);
    for (int i = 0; i < 4; i++)
        ck_assert(dkw[i] == 5);
    /* and the good call */
    ex.offsets = NULL;
    ex.nseq = 0;
    ck_assert_int_eq(P(attention_backward_ex)(p, ROW, n, n, q, d, k, d, v, e,
                                              out, e, den, g, e, dq, d, dk, d,
                                              dv, e, NULL, 1, NULL, st, &ex,
                                              NULL), 0);
    P(state_destroy)(st);
    free(q), free(k), free(v), free(g);
    P(plan_destroy)(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("weighted grad " PREC);
    TCase *tc = tcase_create("weighted grad");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, integer_weights_repeat_keys, 0, 3);
    tcase_add_loop_test(tc, dweights_central_differences, 0, 4);
    tcase_add_loop_test(tc, packed_backward_is_pieces, 0, 4);
    tcase_add_loop_test(tc, causal_weights_central_differences, 0, 2);
    tcase_add_test(tc, bad_backward_ex_refused);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
