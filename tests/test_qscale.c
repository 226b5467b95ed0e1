/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_qscale.c -- the query scale (linattn_opts.query_scale: every call
 * reads s phi(q)), compiled once per precision.  Checked by the closed
 * forms it must obey against the unscaled calls, on every path that reads
 * queries:
 *
 *   - without normalizer and under the count, out = s times the unscaled
 *     call's (den unchanged: the count, or 1);
 *   - under the positive and signed policies s cancels but for eps: the
 *     call equals the unscaled one with eps / s, its den s times that
 *     call's;
 *   - the backward: grad(s, G) = grad(1, s G) without normalizer, and
 *     under the policies the unscaled call's with eps / s (the same
 *     function of Q, K, V), dL/da included;
 *   - every refusal: a scale for a map that is not exact, negative, NaN,
 *     Inf, or one that the working precision flushes to 0.
 */
#include <math.h>
#include <string.h>
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR

enum { D = 3, E = 2, N = 29, NK = 23, BLOCK = 7, CHUNK = 5 };
#define S 0.37

static P(plan) *plan_of(int map, int denom, double eps, double qs, double ld)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = BLOCK;
    o.chunk = CHUNK;
    o.denom = denom;
    o.eps = eps;
    o.query_scale = qs;
    o.log_decay = ld;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, D, E, &o), 0);
    return p;
}

/* Every path that reads queries, into out (N x E rows of q; the
 * non-causal ones against NK keys) and den (N): path 0 attention_forward,
 * 1 causal_forward, 2 naive, 3 naive_causal, 4 a state's query, 5
 * states_step (decoding each row as the last token of its own stream),
 * 6 causal_ex with gates. */
#define PATHS 7
static int run_path(int path, const P(plan) *p, const tmat *q, const tmat *k,
                    const tmat *v, const real *gates, tmat *out, real *den)
{
    int64_t nk = path == 0 || path == 2 || path == 4 ? NK : N;
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den;
    switch (path) {
    case 0:
        return P(attention_forward)(p, ROW, N, nk, q->a, q->ld, k->a, k->ld,
                                    v->a, v->ld, out->a, out->ld, den, NULL);
    case 1:
        return P(causal_forward)(p, ROW, N, q->a, q->ld, k->a, k->ld, v->a,
                                 v->ld, out->a, out->ld, den, NULL);
    case 2:
        return P(naive)(p, ROW, N, nk, q->a, q->ld, k->a, k->ld, v->a, v->ld,
                        out->a, out->ld, NULL);
    case 3:
        return P(naive_causal)(p, ROW, N, q->a, q->ld, k->a, k->ld, v->a,
                               v->ld, out->a, out->ld, NULL);
    case 4: {
        P(state) *st = NULL;
        ck_assert_int_eq(P(state_create)(&st, p), 0);
        ck_assert_int_eq(P(state_update)(st, ROW, nk, k->a, k->ld, v->a,
                                         v->ld),
                         0);
        int r = P(state_query)(st, ROW, N, q->a, q->ld, out->a, out->ld, NULL,
                               0, den, NULL);
        P(state_destroy)(st);
        return r;
    }
    case 5: { /* stream i holds keys 0 .. i - 1, then takes token i */
        P(state) *sts[N];
        for (int64_t i = 0; i < N; i++) {
            ck_assert_int_eq(P(state_create)(&sts[i], p), 0);
            if (i)
                ck_assert_int_eq(P(state_update)(sts[i], ROW, i, k->a, k->ld,
                                                 v->a, v->ld),
                                 0);
        }
        int r = P(states_step)(sts, N, ROW, q->a, q->ld, k->a, k->ld, v->a,
                               v->ld, out->a, out->ld, NULL);
        for (int64_t i = 0; i < N; i++)
            P(state_destroy)(sts[i]);
        return r;
    }
    default:
        ex.gates = gates;
        return P(causal_ex)(p, ROW, N, q->a, q->ld, k->a, k->ld, v->a, v->ld,
                            out->a, out->ld, &ex, NULL);
    }
}

/* max |x - f y| / max |f y| over the N x E outputs. */
static double scaled_err(const tmat *x, const tmat *y, double f)
{
    long double num = 0, den = 0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < E; c++) {
            long double a = *tmat_at(x, i, c), b = f * *tmat_at(y, i, c);
            num = fabsl(a - b) > num ? fabsl(a - b) : num;
            den = fabsl(b) > den ? fabsl(b) : den;
        }
    return (double)(den > 0 ? num / den : num);
}

/* Case i: the map (identity, elu+1, ReLU), the policy (none, count,
 * the map's own with eps), the path. */
START_TEST(forward_closed_forms)
{
    static const int maps[] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                               LINATTN_MAP_RELU};
    int map = maps[_i % 3], pol = (_i / 3) % 3, path = _i / 9;
    int own = map == LINATTN_MAP_IDENTITY ? LINATTN_DENOM_NONZERO
                                          : LINATTN_DENOM_POSITIVE;
    int denom = pol == 0 ? LINATTN_DENOM_NONE
                : pol == 1 ? LINATTN_DENOM_COUNT
                           : own;
    double eps = pol == 2 ? 1e-2 : 0, ld = path == 6 ? -0.05 : 0;
    uint64_t s = 11 + (uint64_t)_i;
    double lo = map == LINATTN_MAP_IDENTITY ? 0.2 : -1;
    tmat q = tmat_rand(ROW, N, D, 0, lo, 1, &s), k = tmat_rand(ROW, N, D, 0, lo, 1, &s);
    tmat v = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    real gates[N];
    for (int64_t i = 0; i < N; i++)
        gates[i] = (real)(-0.3 * test_uniform(&s));
    /* the unscaled plan: the same policy, with eps / s under the policies */
    P(plan) *ps = plan_of(map, denom, eps, S, ld);
    P(plan) *p1 = plan_of(map, denom, pol == 2 ? eps / S : 0, 0, ld);
    tmat o1 = tmat_like(&q, N, E, 0), os = tmat_like(&q, N, E, 0);
    real d1[N], ds[N];
    for (int64_t i = 0; i < N; i++)
        d1[i] = ds[i] = -7;
    ck_assert_int_eq(run_path(path, p1, &q, &k, &v, gates, &o1, d1), 0);
    ck_assert_int_eq(run_path(path, ps, &q, &k, &v, gates, &os, ds), 0);
    double f = pol == 2 ? 1 : S; /* what s does to out */
    ck_assert_msg(scaled_err(&os, &o1, f) < TOL * 10, "map %d pol %d path %d: %g",
                  map, pol, path, scaled_err(&os, &o1, f));
    /* den where the path writes it: 1, the count, or s times the
     * unscaled call's (which has eps / s) */
    for (int64_t i = 0; d1[0] != -7 && i < N; i++) {
        double want = pol == 2 ? S * d1[i] : d1[i];
        ck_assert_msg(fabs(ds[i] - want) <= TOL * 10 * fabs(want),
                      "den %lld: %g %g", (long long)i, (double)ds[i], want);
    }
    P(plan_destroy)(ps), P(plan_destroy)(p1);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&o1), tmat_free(&os);
}
END_TEST

/* The backward, non-causal and causal (with gates and dL/da): against the
 * unscaled call on s G (no normalizer) or with eps / s (elu+1). */
START_TEST(backward_closed_forms)
{
    int causal = _i & 1, none = _i >> 1;
    int denom = none ? LINATTN_DENOM_NONE : LINATTN_DENOM_POSITIVE;
    double eps = none ? 0 : 1e-2, ld = causal ? -0.05 : 0;
    uint64_t s = 71 + (uint64_t)_i;
    tmat q = tmat_rand(ROW, N, D, 0, -1, 1, &s), k = tmat_rand(ROW, N, D, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, N, E, 0, -1, 1, &s), g = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    tmat gs = tmat_like(&g, N, E, 0);
    for (int64_t i = 0; i < N * E; i++)
        gs.a[i] = none ? (real)(S * g.a[i]) : g.a[i];
    real gates[N];
    for (int64_t i = 0; i < N; i++)
        gates[i] = (real)(-0.3 * test_uniform(&s));
    P(plan) *pl[2] = {plan_of(LINATTN_MAP_ELU1, denom, eps, S, ld),
                      plan_of(LINATTN_MAP_ELU1, denom, none ? 0 : eps / S, 0,
                              ld)};
    tmat dq[2], dk[2], dv[2];
    real dg[2][N];
    for (int r = 0; r < 2; r++) {
        tmat out = tmat_like(&q, N, E, 0);
        real den[N];
        const tmat *gr = r ? &gs : &g;
        dq[r] = tmat_like(&q, N, D, 0), dk[r] = tmat_like(&q, N, D, 0);
        dv[r] = tmat_like(&q, N, E, 0);
        P(extras) ex;
        P(extras_init)(&ex);
        ex.den = den;
        if (causal) {
            ex.gates = gates;
            ck_assert_int_eq(P(causal_ex)(pl[r], ROW, N, q.a, q.ld, k.a, k.ld,
                                          v.a, v.ld, out.a, out.ld, &ex,
                                          NULL),
                             0);
            P(extras) bx;
            P(extras_init)(&bx);
            bx.gates = gates;
            bx.dgates = dg[r];
            ck_assert_int_eq(
                P(causal_backward_ex)(pl[r], ROW, N, q.a, q.ld, k.a, k.ld, v.a,
                                      v.ld, out.a, out.ld, den, gr->a, gr->ld,
                                      dq[r].a, dq[r].ld, dk[r].a, dk[r].ld,
                                      dv[r].a, dv[r].ld, NULL, 0, NULL, &bx,
                                      NULL),
                0);
        } else {
            ck_assert_int_eq(P(attention_forward)(pl[r], ROW, N, N, q.a, q.ld,
                                                  k.a, k.ld, v.a, v.ld, out.a,
                                                  out.ld, den, NULL),
                             0);
            ck_assert_int_eq(
                P(attention_backward)(pl[r], ROW, N, N, q.a, q.ld, k.a, k.ld,
                                      v.a, v.ld, out.a, out.ld, den, gr->a,
                                      gr->ld, dq[r].a, dq[r].ld, dk[r].a,
                                      dk[r].ld, dv[r].a, dv[r].ld, NULL, 0,
                                      NULL, NULL, NULL),
                0);
        }
        tmat_free(&out);
    }
    ck_assert(rel_diff(&dq[0], &dq[1]) < TOL * 10);
    ck_assert(rel_diff(&dk[0], &dk[1]) < TOL * 10);
    ck_assert(rel_diff(&dv[0], &dv[1]) < TOL * 10);
    if (causal)
        ck_assert(vec_rel_diff(dg[0], dg[1], N) < TOL * 100);
    for (int r = 0; r < 2; r++)
        tmat_free(&dq[r]), tmat_free(&dk[r]), tmat_free(&dv[r]),
            P(plan_destroy)(pl[r]);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g), tmat_free(&gs);
}
END_TEST

START_TEST(refusals)
{
    linattn_opts o;
    linattn_opts_init(&o);
    ck_assert(o.query_scale == 0);
    P(plan) *p = NULL;
    const double bad[] = {-1, NAN, INFINITY, -INFINITY,
#ifdef TEST_SINGLE
                          1e-60, 1e60 /* flushed to 0, or beyond float */
#else
                          -0.0 - 1e-300
#endif
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        o.query_scale = bad[i];
        ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, D, E, &o), -5);
        ck_assert_ptr_null(p);
    }
    /* the maps that are not exact carry their own input scaling */
    o.query_scale = 0.5;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, D, E, &o), -5);
    real w[4 * D], b[4];
    for (int i = 0; i < 4 * D; i++)
        w[i] = (real)(0.1 * i);
    for (int i = 0; i < 4; i++)
        b[i] = 1;
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_ELU1, D, 4, E, ROW,
                                           w, D, b, &o),
                     -10);
    ck_assert_ptr_null(p);
    /* 1 is the absent scale for every map */
    o.query_scale = 1;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, D, E, &o), 0);
    P(plan_destroy)(p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("qscale_" PREC);
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, forward_closed_forms, 0, 9 * PATHS);
    tcase_add_loop_test(tc, backward_closed_forms, 0, 4);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
