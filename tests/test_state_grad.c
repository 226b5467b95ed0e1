/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_state_grad.c -- linattn_d_causal_backward_ex from a starting state
 * (the forward's ex->state, or one per packed sequence), compiled once
 * per precision: dQ, dK, dV and the state's gradient (ex->dstates, of
 * the accumulator as export writes it) against central differences of
 * the forward from that state (double; elu+1 and FAVOR+, whose state
 * carries a shift, with and without key weights, over several chunks
 * and two ranges of threads); a state without tokens gives the stateless
 * backward bit for bit and a zero gradient; packed sequences with states
 * against one call per sequence, bit for bit; every refusal with nothing
 * written.
 */
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR

static P(plan) *plan_of(int map, int64_t d, int64_t e)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 4;
    o.chunk = 4;
    o.seed = 3;
    if (map == LINATTN_MAP_FAVOR)
        o.m = 6;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* A state of nk keys (norms up to 2.5: FAVOR+'s shift well above 0). */
static P(state) *state_of(const P(plan) *p, int64_t nk, int64_t d, int64_t e,
                          uint64_t *s)
{
    real *k = test_rand_vec(nk * d, -2.5, 2.5, s), *v = test_rand_vec(nk * e, -1, 1, s);
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    ck_assert_int_eq(P(state_update)(st, ROW, nk, k, d, v, e), 0);
    free(k), free(v);
    return st;
}

#ifndef TEST_SINGLE
/* L = sum G . out of the causal forward from st with weights w. */
static double loss(const P(plan) *p, int64_t n, const real *q, const real *k,
                   const real *v, const real *w, P(state) *st, const real *g,
                   int64_t d, int64_t e)
{
    real *o = malloc((size_t)(n * e) * sizeof *o);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ex.state = st;
    ck_assert_int_eq(P(causal_ex)(p, ROW, n, q, d, k, d, v, e, o, e, &ex,
                                  NULL), 0);
    double l = 0;
    for (int64_t t = 0; t < n * e; t++)
        l += (double)g[t] * (double)o[t];
    free(o);
    return l;
}
#endif

/* _i: map (elu+1, FAVOR+) x weights (none, some). */
START_TEST(starting_state_central_differences)
{
    int map = _i % 2 ? LINATTN_MAP_FAVOR : LINATTN_MAP_ELU1;
    int weighted = _i / 2;
    int64_t d = 2, e = 2, n = 40;
    uint64_t s = 501 + (uint64_t)_i;
    P(plan) *p = plan_of(map, d, e);
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    P(state) *st = state_of(p, 9, d, e, &s);
    real *q = test_rand_vec(n * d, -1, 1, &s), *k = test_rand_vec(n * d, -1, 1, &s);
    real *v = test_rand_vec(n * e, -1, 1, &s), *g = test_rand_vec(n * e, -1, 1, &s);
    real *w = weighted ? test_rand_vec(n, 0.3, 1.5, &s) : NULL;
    if (w)
        w[5] = 0;
    real out[80], den[40], dq[80], dk[80], dv[80];
    double *ds = malloc((size_t)(m * (e + 1)) * sizeof *ds);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ex.state = st;
    ex.den = den;
    ck_assert_int_eq(P(causal_ex)(p, ROW, n, q, d, k, d, v, e, out, e, &ex,
                                  NULL), 0);
    ex.den = NULL;
    ex.dstates = ds;
    ck_assert_int_eq(P(causal_backward_ex)(p, ROW, n, q, d, k, d, v, e, out, e,
                                           den, g, e, dq, d, dk, d, dv, e,
                                           NULL, 1, NULL, &ex, NULL), 0);
    for (int64_t i = 0; i < m * (e + 1); i++)
        ck_assert(isfinite(ds[i]));
#ifndef TEST_SINGLE
    double h = 1e-6;
    real *const xs[3] = {q, k, v};
    const real *gs[3] = {dq, dk, dv};
    const int64_t len[3] = {n * d, n * d, n * e};
    for (int a = 0; a < 3; a++)
        for (int64_t i = 0; i < len[a]; i += 3) {
            int64_t row = a == 2 ? i / e : i / d;
            if (a > 0 && w && w[row] == 0)
                continue;
            real keep = xs[a][i];
            xs[a][i] = (real)(keep + h);
            double lp = loss(p, n, q, k, v, w, st, g, d, e);
            xs[a][i] = (real)(keep - h);
            double lm = loss(p, n, q, k, v, w, st, g, d, e);
            xs[a][i] = keep;
            double fd = (lp - lm) / (2 * h);
            ck_assert_msg(fabs(gs[a][i] - fd) <= 1e-7 * (1 + fabs(fd)),
                          "array %d entry %lld: %g against %g", a,
                          (long long)i, (double)gs[a][i], fd);
        }
    /* the state's accumulator, perturbed through export and import */
    double *acc = malloc((size_t)(m * (e + 1)) * sizeof *acc), shift;
    int64_t tokens;
    P(state_export)(st, acc, &shift, &tokens);
    P(state) *t = NULL;
    P(state_create)(&t, p);
    for (int64_t i = 0; i < m * (e + 1); i++) {
        double keep = acc[i], step = h * (1 + fabs(keep));
        acc[i] = keep + step;
        P(state_import)(t, acc, shift, tokens);
        double lp = loss(p, n, q, k, v, w, t, g, d, e);
        acc[i] = keep - step;
        P(state_import)(t, acc, shift, tokens);
        double lm = loss(p, n, q, k, v, w, t, g, d, e);
        acc[i] = keep;
        double fd = (lp - lm) / (2 * step);
        ck_assert_msg(fabs(ds[i] - fd) <= 1e-6 * (1 + fabs(fd)),
                      "dstate %lld: %g against %g", (long long)i, ds[i], fd);
    }
    if (map == LINATTN_MAP_FAVOR)
        ck_assert(shift != 0); /* the scaling of the gradient was tested */
    P(state_destroy)(t);
    free(acc);
#endif
    free(q), free(k), free(v), free(g), free(w), free(ds);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

/* A state without tokens is not read: the stateless backward, bit for
 * bit, and a zero gradient. */
START_TEST(empty_state_is_none)
{
    int64_t d = 3, e = 2, n = 17;
    uint64_t s = 77;
    P(plan) *p = plan_of(LINATTN_MAP_FAVOR, d, e);
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    P(state) *st = NULL;
    P(state_create)(&st, p);
    real *q = test_rand_vec(n * d, -1, 1, &s), *k = test_rand_vec(n * d, -1, 1, &s);
    real *v = test_rand_vec(n * e, -1, 1, &s), *g = test_rand_vec(n * e, -1, 1, &s);
    real out[34], den[17], a[3][51], b[3][51];
    double ds[64];
    for (int i = 0; i < 64; i++)
        ds[i] = -7;
    ck_assert_int_eq(P(causal_forward)(p, ROW, n, q, d, k, d, v, e, out, e, den,
                                       NULL), 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.state = st;
    ex.dstates = ds;
    ck_assert_int_eq(P(causal_backward_ex)(p, ROW, n, q, d, k, d, v, e, out, e,
                                           den, g, e, a[0], d, a[1], d, a[2],
                                           e, NULL, 1, NULL, &ex, NULL), 0);
    ck_assert_int_eq(P(causal_backward)(p, ROW, n, q, d, k, d, v, e, out, e,
                                        den, g, e, b[0], d, b[1], d, b[2], e,
                                        NULL, 1, NULL, NULL), 0);
    ck_assert(!memcmp(a[0], b[0], (size_t)(n * d) * sizeof(real)));
    ck_assert(!memcmp(a[1], b[1], (size_t)(n * d) * sizeof(real)));
    ck_assert(!memcmp(a[2], b[2], (size_t)(n * e) * sizeof(real)));
    for (int64_t i = 0; i < m * (e + 1); i++)
        ck_assert(ds[i] == 0);
    ck_assert(ds[m * (e + 1)] == -7);
    free(q), free(k), free(v), free(g);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

/* Packed sequences, each from its own state: one call per sequence
 * with ex->state, bit for bit (gradients and every state's gradient);
 * _i: map. */
START_TEST(packed_states_are_pieces)
{
    int map = _i ? LINATTN_MAP_FAVOR : LINATTN_MAP_ELU1;
    int64_t d = 2, e = 3, n = 29;
    const int64_t off[5] = {0, 7, 7, 20, 29};
    uint64_t s = 88 + (uint64_t)_i;
    P(plan) *p = plan_of(map, d, e);
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    int64_t len = m * (e + 1);
    P(state) *sts[4];
    for (int i = 0; i < 4; i++)
        sts[i] = state_of(p, 3 + i, d, e, &s);
    real *q = test_rand_vec(n * d, -1, 1, &s), *k = test_rand_vec(n * d, -1, 1, &s);
    real *v = test_rand_vec(n * e, -1, 1, &s), *g = test_rand_vec(n * e, -1, 1, &s);
    real out[87], den[29], a[3][87], b[3][87];
    double *da = malloc((size_t)(4 * len) * sizeof *da);
    double *db = malloc((size_t)(4 * len) * sizeof *db);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.offsets = off;
    ex.nseq = 4;
    ex.states = sts;
    ex.den = den;
    ck_assert_int_eq(P(causal_ex)(p, ROW, n, q, d, k, d, v, e, out, e, &ex,
                                  NULL), 0);
    ex.den = NULL;
    ex.dstates = da;
    ck_assert_int_eq(P(causal_backward_ex)(p, ROW, n, q, d, k, d, v, e, out, e,
                                           den, g, e, a[0], d, a[1], d, a[2],
                                           e, NULL, 1, NULL, &ex, NULL), 0);
    for (int i = 0; i < 4; i++) {
        int64_t o = off[i], r = off[i + 1] - off[i];
        P(extras) one;
        P(extras_init)(&one);
        one.state = sts[i];
        one.dstates = db + i * len;
        ck_assert_int_eq(P(causal_backward_ex)(
                             p, ROW, r, q + o * d, d, k + o * d, d, v + o * e,
                             e, out + o * e, e, den + o, g + o * e, e,
                             b[0] + o * d, d, b[1] + o * d, d, b[2] + o * e,
                             e, NULL, 1, NULL, &one, NULL),
                         0);
    }
    ck_assert(!memcmp(a[0], b[0], (size_t)(n * d) * sizeof(real)));
    ck_assert(!memcmp(a[1], b[1], (size_t)(n * d) * sizeof(real)));
    ck_assert(!memcmp(a[2], b[2], (size_t)(n * e) * sizeof(real)));
    ck_assert(!memcmp(da, db, (size_t)(4 * len) * sizeof *da));
    /* the empty sequence's gradient is 0, the others' not */
    for (int64_t i = 0; i < len; i++)
        ck_assert(da[len + i] == 0);
    free(da), free(db);
    free(q), free(k), free(v), free(g);
    for (int i = 0; i < 4; i++)
        P(state_destroy)(sts[i]);
    P(plan_destroy)(p);
}
END_TEST

/* dstates without a state, absorb = 1, a state of another plan, dstates
 * meeting dq or the states array: -24, nothing written. */
START_TEST(bad_state_refused)
{
    int64_t d = 2, e = 2, n = 6;
    uint64_t s = 5;
    P(plan) *p = plan_of(LINATTN_MAP_ELU1, d, e), *other = NULL;
    ck_assert_int_eq(P(plan_create)(&other, LINATTN_MAP_ELU1, d, e + 1, NULL),
                     0);
    P(state) *st = state_of(p, 4, d, e, &s), *wrong = NULL;
    P(state_create)(&wrong, other);
    real *q = test_rand_vec(n * d, -1, 1, &s), *k = test_rand_vec(n * d, -1, 1, &s);
    real *v = test_rand_vec(n * e, -1, 1, &s), *g = test_rand_vec(n * e, -1, 1, &s);
    real out[12], den[6];
    ck_assert_int_eq(P(causal_forward)(p, ROW, n, q, d, k, d, v, e, out, e, den,
                                       NULL), 0);
    real grads[3][64];
    double ds[32];
    const int64_t off[2] = {0, 6};
    P(state) *list[1] = {st};
    for (int c = 0; c < 6; c++) {
        P(extras) ex;
        P(extras_init)(&ex);
        double *dsp = ds;
        switch (c) {
        case 0: break; /* dstates, no state */
        case 1: ex.state = st, ex.absorb = 1; break;
        case 2: ex.state = wrong; break;
        case 3: ex.state = st, dsp = (double *)(void *)grads[0]; break;
        case 4: ex.offsets = off, ex.nseq = 1, ex.states = list,
                dsp = (double *)(void *)list; break;
        default: ex.states = list; break; /* states without offsets */
        }
        ex.dstates = dsp;
        for (int a = 0; a < 3; a++)
            for (int i = 0; i < 64; i++)
                grads[a][i] = -7;
        for (int i = 0; i < 32; i++)
            ds[i] = -7;
        P(state) *keep = list[0];
        int r = P(causal_backward_ex)(p, ROW, n, q, d, k, d, v, e, out, e, den,
                                      g, e, grads[0], d, grads[1], d, grads[2],
                                      e, NULL, 1, NULL, &ex, NULL);
        ck_assert_msg(r == -24, "case %d: %d", c, r);
        ck_assert(list[0] == keep);
        for (int a = 0; a < 3; a++)
            for (int i = 0; i < 64; i++)
                ck_assert(grads[a][i] == -7);
        for (int i = 0; i < 32; i++)
            ck_assert(ds[i] == -7);
    }
    free(q), free(k), free(v), free(g);
    P(state_destroy)(st), P(state_destroy)(wrong);
    P(plan_destroy)(p), P(plan_destroy)(other);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("state grad " PREC);
    TCase *tc = tcase_create("state grad");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, starting_state_central_differences, 0, 4);
    tcase_add_test(tc, empty_state_is_none);
    tcase_add_loop_test(tc, packed_states_are_pieces, 0, 2);
    tcase_add_test(tc, bad_state_refused);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
