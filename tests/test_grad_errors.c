/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_grad_errors.c -- every error path of the training calls (forward
 * with normalizers, backward, features_backward), compiled once per
 * precision: each argument made invalid in turn returns -position, and
 * LINATTN_ESIZE, LINATTN_ENONFINITE, LINATTN_EDENOM (with its row) and
 * LINATTN_ENOMEM are provoked; after every refused call every output
 * (gradients, dW, db, the forward's out and den) holds what it held
 * before, bit for bit.
 */
#include <stdio.h>
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

enum { N = 13, D = 3, E = 2, M = 6, WROWS = 6 };

/* Every argument of a backward call (causal: nq = nk = n, positions one
 * less from q on). */
typedef struct {
    const P(plan) *plan;
    int layout;
    int64_t nq, nk;
    const real *q, *k, *v, *out, *den, *g;
    int64_t ldq, ldk, ldv, ldout, ldg, lddq, lddk, lddv, lddw;
    real *dq, *dk, *dv, *dw, *db;
    const P(state) *state; /* non-causal only */
    int64_t *bad;
} bargs;

static int call_backward(const bargs *a, int causal)
{
    if (causal)
        return P(causal_backward)(a->plan, a->layout, a->nq, a->q, a->ldq,
                                  a->k, a->ldk, a->v, a->ldv, a->out, a->ldout,
                                  a->den, a->g, a->ldg, a->dq, a->lddq, a->dk,
                                  a->lddk, a->dv, a->lddv, a->dw, a->lddw,
                                  a->db, a->bad);
    return P(attention_backward)(a->plan, a->layout, a->nq, a->nk, a->q,
                                 a->ldq, a->k, a->ldk, a->v, a->ldv, a->out,
                                 a->ldout, a->den, a->g, a->ldg, a->dq,
                                 a->lddq, a->dk, a->lddk, a->dv, a->lddv,
                                 a->dw, a->lddw, a->db, a->state, a->bad);
}

/* The arrays of one call, row major, inputs in [0.1, 1) (positive
 * normalizers), outputs filled with a sentinel. */
typedef struct {
    real q[N * D], k[N * D], v[N * E], out[N * E], den[N], g[N * E];
    real dq[N * D], dk[N * D], dv[N * E], dw[WROWS * D], db[WROWS];
} data;

static void data_fill(data *x, const P(plan) *p, int causal)
{
    uint64_t s = 3;
    real *in[4] = {x->q, x->k, x->v, x->g};
    int64_t len[4] = {N * D, N * D, N * E, N * E};
    for (int i = 0; i < 4; i++)
        for (int64_t j = 0; j < len[i]; j++)
            in[i][j] = (real)(0.1 + 0.9 * test_uniform(&s));
    int64_t bad;
    int st = causal ? P(causal_forward)(p, ROW, N, x->q, D, x->k, D, x->v, E,
                                        x->out, E, x->den, &bad)
                    : P(attention_forward)(p, ROW, N, N, x->q, D, x->k, D, x->v,
                                           E, x->out, E, x->den, &bad);
    ck_assert_int_eq(st, 0);
    real *o[5] = {x->dq, x->dk, x->dv, x->dw, x->db};
    int64_t olen[5] = {N * D, N * D, N * E, WROWS * D, WROWS};
    for (int i = 0; i < 5; i++)
        for (int64_t j = 0; j < olen[i]; j++)
            o[i][j] = (real)1e30;
}

static int outputs_untouched(const data *x)
{
    const real *o[5] = {x->dq, x->dk, x->dv, x->dw, x->db};
    int64_t olen[5] = {N * D, N * D, N * E, WROWS * D, WROWS};
    for (int i = 0; i < 5; i++)
        for (int64_t j = 0; j < olen[i]; j++)
            if (o[i][j] != (real)1e30)
                return 0;
    return 1;
}

static bargs valid_args(const P(plan) *p, data *x, int with_w, int with_b,
                        int64_t *bad)
{
    bargs a = {p,     ROW,   N,     N,     x->q,  x->k,  x->v,  x->out,
               x->den, x->g, D,     D,     E,     E,     E,     D,
               D,     E,     D,     x->dq, x->dk, x->dv, with_w ? x->dw : NULL,
               with_b ? x->db : NULL, NULL, bad};
    return a;
}

static P(plan) *custom_plan(int check_finite, double eps)
{
    real w[WROWS * D], b[WROWS];
    uint64_t s = 8;
    for (int i = 0; i < WROWS * D; i++)
        w[i] = (real)(test_uniform(&s) - 0.5);
    for (int i = 0; i < WROWS; i++)
        b[i] = (real)test_uniform(&s);
    linattn_opts o;
    linattn_opts_init(&o);
    o.check_finite = check_finite;
    o.eps = eps;
    o.block = 4;
    o.chunk = 5;
    P(plan) *p;
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_ELU1, D, M, E, ROW,
                                           w, D, b, &o), 0);
    return p;
}

/* The argument made invalid at position pos of the non-causal call (the
 * causal call's pos + 1 from q on); returns 0 when pos has no such. */
static int break_arg(bargs *a, int pos, const P(plan) *plain)
{
    switch (pos) {
    case 1: a->plan = NULL; return 1;
    case 2: a->layout = 7; return 1;
    case 3: a->nq = -1; return 1;
    case 4: a->nk = -1; return 1;
    case 5: a->q = NULL; return 1;
    case 6: a->ldq = D - 1; return 1;
    case 7: a->k = NULL; return 1;
    case 8: a->ldk = 0; return 1;
    case 9: a->v = NULL; return 1;
    case 10: a->ldv = E - 1; return 1;
    case 11: a->out = NULL; return 1;
    case 12: a->ldout = -3; return 1;
    case 13: a->den = NULL; return 1;
    case 14: a->g = NULL; return 1;
    case 15: a->ldg = 1; return 1;
    case 16: a->dq = NULL; return 1;
    case 17: a->lddq = 2; return 1;
    case 18: a->dk = NULL; return 1;
    case 19: a->lddk = 0; return 1;
    case 20: a->dv = NULL; return 1;
    case 21: a->lddv = 1; return 1;
    case 22: a->plan = plain; return 1; /* dw given, the map has no W */
    case 23: a->lddw = D - 1; return 1;
    case 24: a->plan = plain, a->dw = NULL; return 1; /* db, not custom */
    case 25: return 0; /* the state: backward_state_errors */
    default: return 0;
    }
}

/* Each argument in turn: -position, nothing written, *bad untouched. */
START_TEST(backward_argument_errors)
{
    int causal = _i;
    P(plan) *p = custom_plan(0, 0), *plain;
    ck_assert_int_eq(P(plan_create)(&plain, LINATTN_MAP_ELU1, D, E, NULL), 0);
    data x;
    data_fill(&x, p, causal);
    for (int pos = 1; pos <= 24; pos++) {
        if (causal && pos == 4)
            continue; /* no nk */
        int64_t bad = -5;
        bargs a = valid_args(p, &x, 1, 1, &bad);
        ck_assert(break_arg(&a, pos, plain));
        if (causal && pos == 3)
            a.nq = -1;
        int want = causal && pos > 4 ? -(pos - 1) : -pos;
        int st = call_backward(&a, causal);
        ck_assert_msg(st == want, "causal %d position %d: %d", causal, pos, st);
        ck_assert(outputs_untouched(&x));
        ck_assert(bad == -5);
    }
    /* a matrix beyond int64 addressing: LINATTN_ESIZE */
    int64_t bad = -5;
    bargs a = valid_args(p, &x, 1, 1, &bad);
    a.ldg = (int64_t)1 << 62;
    ck_assert_int_eq(call_backward(&a, causal), LINATTN_ESIZE);
    a = valid_args(p, &x, 1, 1, &bad);
    a.lddw = (int64_t)1 << 62;
    ck_assert_int_eq(call_backward(&a, causal), LINATTN_ESIZE);
    ck_assert(outputs_untouched(&x));
    /* an argument error outranks a size condition */
    a.dq = NULL;
    ck_assert_int_eq(call_backward(&a, causal), causal ? -15 : -16);
    ck_assert(outputs_untouched(&x));
    /* the valid call works, with and without dw and db */
    a = valid_args(p, &x, 0, 0, NULL);
    ck_assert_int_eq(call_backward(&a, causal), 0);
    P(plan_destroy)(p);
    P(plan_destroy)(plain);
}
END_TEST

/* Refused before anything is written (every array of the call lives in
 * one struct, compared whole): outputs meeting an input or an earlier
 * output, with that output's -position (dq on q, inside G; dk on dq; dv
 * from den into G; dw inside out; db on dw, on q), and leading
 * dimensions whose last element fits int64 as an index but not as a
 * byte offset (8 per element: 12 ld fits, 96 ld does not), LINATTN_ESIZE
 * (G, dk, dW; the forward calls' V and out, features_backward's dphi). */
START_TEST(backward_outputs_apart)
{
    int causal = _i;
    P(plan) *p = custom_plan(0, 0);
    data x, keep;
    data_fill(&x, p, causal);
    keep = x;
    const int64_t ld = (int64_t)1 << 59;
    for (int c = 0; c < 10; c++) {
        int64_t bad = -5;
        bargs a = valid_args(p, &x, 1, 1, &bad);
        int want = 0;
        switch (c) {
        case 0: a.dq = x.q, want = 16; break;
        case 1: a.dq = x.g + 1, a.lddq = D, want = 16; break;
        case 2: a.dk = x.dq + 5, want = 18; break;
        case 3: a.dv = x.den + 2, want = 20; break;
        case 4: a.dw = x.out + 1, want = 22; break;
        case 5: a.db = x.dw + WROWS * D - 1, want = 24; break;
        case 6: a.db = x.q + 4, want = 24; break;
        case 7: a.ldg = ld; break;
        case 8: a.lddk = ld; break;
        default: a.lddw = ld; break;
        }
        want = !want ? LINATTN_ESIZE : causal ? -(want - 1) : -want;
        int st = call_backward(&a, causal);
        ck_assert_msg(st == want, "causal %d case %d: %d", causal, c, st);
        ck_assert(!memcmp(&x, &keep, sizeof x) && bad == -5);
    }
    real out[N * E], den[N], a[N * M];
    for (int i = 0; i < N * M; i++)
        a[i] = 1;
    ck_assert_int_eq(P(attention_forward)(p, ROW, N, N, x.q, D, x.k, D, x.v, ld,
                                          out, E, den, NULL), LINATTN_ESIZE);
    ck_assert_int_eq(P(causal_forward)(p, ROW, N, x.q, D, x.k, D, x.v, E, out,
                                       ld, den, NULL), LINATTN_ESIZE);
    ck_assert_int_eq(P(features_backward)(p, ROW, N, x.q, D, a, ld, x.dq, D,
                                          x.dw, D, NULL), LINATTN_ESIZE);
    ck_assert(!memcmp(&x, &keep, sizeof x));
    /* apart, side by side: accepted */
    bargs b = valid_args(p, &x, 1, 1, NULL);
    ck_assert_int_eq(call_backward(&b, causal), 0);
    P(plan_destroy)(p);
}
END_TEST

/* The non-causal call's state (argument 25): one of another map or other
 * dimensions, or not holding nk tokens, is refused before anything is
 * written, and outranks a size condition and a bad normalizer. */
START_TEST(backward_state_errors)
{
    P(plan) *p = custom_plan(0, 0), *other;
    ck_assert_int_eq(P(plan_create)(&other, LINATTN_MAP_ELU1, D, E, NULL), 0);
    data x;
    data_fill(&x, p, 0);
    P(state) *s_other, *s_short, *s_ok;
    ck_assert_int_eq(P(state_create)(&s_other, other), 0);
    ck_assert_int_eq(P(state_create)(&s_short, p), 0);
    ck_assert_int_eq(P(state_create)(&s_ok, p), 0);
    ck_assert_int_eq(P(state_update)(s_other, ROW, N, x.k, D, x.v, E), 0);
    ck_assert_int_eq(P(state_update)(s_short, ROW, N - 1, x.k, D, x.v, E), 0);
    ck_assert_int_eq(P(state_update)(s_ok, ROW, N, x.k, D, x.v, E), 0);
    const P(state) *bad_states[2] = {s_other, s_short};
    for (int i = 0; i < 2; i++) {
        int64_t bad = -5;
        bargs a = valid_args(p, &x, 1, 1, &bad);
        a.state = bad_states[i];
        ck_assert_int_eq(call_backward(&a, 0), -25);
        a.ldg = (int64_t)1 << 62; /* outranks ESIZE */
        ck_assert_int_eq(call_backward(&a, 0), -25);
        a = valid_args(p, &x, 1, 1, &bad);
        a.state = bad_states[i];
        real keep = x.den[3];
        x.den[3] = 0; /* and EDENOM, whose row stays unwritten */
        ck_assert_int_eq(call_backward(&a, 0), -25);
        x.den[3] = keep;
        ck_assert(outputs_untouched(&x) && bad == -5);
    }
    bargs a = valid_args(p, &x, 1, 1, NULL);
    a.state = s_ok;
    ck_assert_int_eq(call_backward(&a, 0), 0);
    P(state_destroy)(s_other), P(state_destroy)(s_short);
    P(state_destroy)(s_ok);
    P(plan_destroy)(other);
    P(plan_destroy)(p);
}
END_TEST

/* A normalizer the policy refuses: LINATTN_EDENOM with its row, before
 * anything is written; NaN, 0, negative (POSITIVE), 0 (NONZERO). */
START_TEST(backward_bad_normalizer)
{
    int causal = _i;
    P(plan) *p = custom_plan(0, 0);
    data x;
    data_fill(&x, p, causal);
    const real bad_values[3] = {0, -1, (real)NAN};
    for (int i = 0; i < 3; i++) {
        real keep = x.den[7];
        x.den[7] = bad_values[i];
        int64_t bad = -5;
        bargs a = valid_args(p, &x, 1, 1, &bad);
        ck_assert_int_eq(call_backward(&a, causal), LINATTN_EDENOM);
        ck_assert_int_eq(bad, 7);
        ck_assert(outputs_untouched(&x));
        a.bad = NULL; /* may be NULL */
        ck_assert_int_eq(call_backward(&a, causal), LINATTN_EDENOM);
        ck_assert(outputs_untouched(&x));
        x.den[7] = keep;
    }
    /* NONZERO accepts a negative normalizer, refuses 0 */
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = LINATTN_DENOM_NONZERO;
    P(plan) *id;
    ck_assert_int_eq(P(plan_create)(&id, LINATTN_MAP_IDENTITY, D, E, &o), 0);
    x.den[2] = 0;
    x.den[1] = -3;
    int64_t bad = -5;
    bargs a = valid_args(id, &x, 0, 0, &bad);
    ck_assert_int_eq(call_backward(&a, causal), LINATTN_EDENOM);
    ck_assert_int_eq(bad, 2);
    ck_assert(outputs_untouched(&x));
    P(plan_destroy)(id);
    P(plan_destroy)(p);
}
END_TEST

/* opts.check_finite: NaN or Inf in any input refuses the call. */
START_TEST(backward_nonfinite_inputs)
{
    int causal = _i;
    P(plan) *p = custom_plan(1, 0);
    data x;
    data_fill(&x, p, causal);
    real *in[6] = {x.q, x.k, x.v, x.out, x.den, x.g};
    for (int i = 0; i < 6; i++) {
        real keep = in[i][1];
        in[i][1] = i % 2 ? (real)INFINITY : (real)NAN;
        int64_t bad = -5;
        bargs a = valid_args(p, &x, 1, 1, &bad);
        ck_assert_int_eq(call_backward(&a, causal), LINATTN_ENONFINITE);
        ck_assert(outputs_untouched(&x));
        in[i][1] = keep;
    }
    P(plan_destroy)(p);
}
END_TEST

/* The forward calls with normalizers: den NULL refused (-13, -12), other
 * arguments as the plain calls; on EDENOM den holds the rows out does. */
START_TEST(forward_errors)
{
    P(plan) *p;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_IDENTITY, D, E, NULL), 0);
    data x;
    data_fill(&x, p, 0);
    real out[N * E], den[N];
    for (int i = 0; i < N * E; i++)
        out[i] = 5;
    for (int i = 0; i < N; i++)
        den[i] = 5;
    int64_t bad = -1;
    ck_assert_int_eq(P(attention_forward)(p, ROW, N, N, x.q, D, x.k, D, x.v, E,
                                          out, E, NULL, &bad), -13);
    ck_assert_int_eq(P(causal_forward)(p, ROW, N, x.q, D, x.k, D, x.v, E, out,
                                       E, NULL, &bad), -12);
    ck_assert_int_eq(P(attention_forward)(p, ROW, N, N, x.q, D, x.k, D, x.v, E,
                                          NULL, E, den, &bad), -11);
    ck_assert_int_eq(P(causal_forward)(p, 3, N, x.q, D, x.k, D, x.v, E, out, E,
                                       den, &bad), -2);
    ck_assert_int_eq(P(attention_forward)(p, ROW, N, N, x.q, (int64_t)1 << 62,
                                          x.k, D, x.v, E, out, E, NULL, &bad),
                     -13);
    /* den meeting an input or out: refused as den (out meeting q as out) */
    ck_assert_int_eq(P(attention_forward)(p, ROW, N, N, x.q, D, x.k, D, x.v, E,
                                          out, E, x.q + 3, &bad), -13);
    ck_assert_int_eq(P(attention_forward)(p, ROW, N, N, x.q, D, x.k, D, x.v, E,
                                          out, E, out + N * E - 1, &bad), -13);
    ck_assert_int_eq(P(causal_forward)(p, COL, N, x.q, N, x.k, N, x.v, N, out,
                                       N, x.v + N, &bad), -12);
    ck_assert_int_eq(P(causal_forward)(p, ROW, N, x.q, D, x.k, D, x.v, E,
                                       x.k + 1, E, den, &bad), -10);
    for (int i = 0; i < N; i++)
        ck_assert(den[i] == 5);
    for (int i = 0; i < N * E; i++)
        ck_assert(out[i] == 5);
    /* no rows: den may be NULL */
    ck_assert_int_eq(P(attention_forward)(p, ROW, 0, N, x.q, D, x.k, D, x.v, E,
                                          out, E, NULL, &bad), 0);
    ck_assert_int_eq(P(causal_forward)(p, ROW, 0, x.q, D, x.k, D, x.v, E, out,
                                       E, NULL, &bad), 0);
    /* a negative query row under POSITIVE: EDENOM at that row */
    real q[N * D];
    memcpy(q, x.q, sizeof q);
    for (int t = 0; t < D; t++)
        q[9 * D + t] = -q[9 * D + t];
    for (int causal = 0; causal < 2; causal++) {
        for (int i = 0; i < N; i++)
            den[i] = 5;
        int st = causal ? P(causal_forward)(p, ROW, N, q, D, x.k, D, x.v, E,
                                            out, E, den, &bad)
                        : P(attention_forward)(p, ROW, N, N, q, D, x.k, D, x.v,
                                               E, out, E, den, &bad);
        ck_assert_int_eq(st, LINATTN_EDENOM);
        ck_assert_int_eq(bad, 9);
        for (int i = 0; i < 9; i++) /* the rows before it are written */
            ck_assert(causal ? den[i] != 5 : den[i] == x.den[i]);
        ck_assert(den[9] == 5);
    }
    P(plan_destroy)(p);
}
END_TEST

/* features_backward: every argument, nothing written. */
START_TEST(features_backward_errors)
{
    P(plan) *p = custom_plan(0, 0), *plain;
    ck_assert_int_eq(P(plan_create)(&plain, LINATTN_MAP_FAVOR, D, E, NULL), 0);
    real x[N * D], a[N * M], dx[N * D], dw[WROWS * D], db[WROWS];
    for (int i = 0; i < N * D; i++)
        x[i] = (real)0.1 * (real)i, dx[i] = 9;
    for (int i = 0; i < N * M; i++)
        a[i] = 1;
    for (int i = 0; i < WROWS * D; i++)
        dw[i] = 9;
    for (int i = 0; i < WROWS; i++)
        db[i] = 9;
    struct {
        const P(plan) *p;
        int layout;
        int64_t n, ldx, lda, lddx, lddw;
        const real *x, *a;
        real *dx, *dw, *db;
        int want;
    } c[] = {{NULL, ROW, N, D, M, D, D, x, a, dx, dw, db, -1},
             {p, 0, N, D, M, D, D, x, a, dx, dw, db, -2},
             {p, ROW, -1, D, M, D, D, x, a, dx, dw, db, -3},
             {p, ROW, N, D, M, D, D, NULL, a, dx, dw, db, -4},
             {p, ROW, N, D - 1, M, D, D, x, a, dx, dw, db, -5},
             {p, ROW, N, D, M, D, D, x, NULL, dx, dw, db, -6},
             {p, ROW, N, D, M - 1, D, D, x, a, dx, dw, db, -7},
             {p, ROW, N, D, M, D, D, x, a, NULL, dw, db, -8},
             {p, COL, N, N, N, N - 1, WROWS, x, a, dx, dw, db, -9},
             {p, ROW, N, D, M, D, 0, x, a, dx, dw, db, -11},
             {plain, ROW, N, D, 4 * D, D, D, x, a, dx, dw, db, -12},
             {p, ROW, N, (int64_t)1 << 62, M, D, D, x, a, dx, dw, db,
              LINATTN_ESIZE}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        int st = P(features_backward)(c[i].p, c[i].layout, c[i].n, c[i].x,
                                      c[i].ldx, c[i].a, c[i].lda, c[i].dx,
                                      c[i].lddx, c[i].dw, c[i].lddw, c[i].db);
        ck_assert_msg(st == c[i].want, "case %zu: %d", i, st);
    }
    P(plan) *id;
    ck_assert_int_eq(P(plan_create)(&id, LINATTN_MAP_IDENTITY, D, E, NULL), 0);
    ck_assert_int_eq(P(features_backward)(id, ROW, N, x, D, a, D, dx, D, dw, D,
                                          NULL), -10); /* no W */
    /* outputs meeting an input or an earlier output: -position */
    ck_assert_int_eq(P(features_backward)(p, ROW, N, x, D, a, M, x, D, dw, D,
                                          db), -8);
    ck_assert_int_eq(P(features_backward)(p, ROW, N, x, D, a, M, dx, D,
                                          dx + 4, D, db), -10);
    ck_assert_int_eq(P(features_backward)(p, ROW, N, x, D, a, M, dx, D, dw, D,
                                          a + 7), -12);
    ck_assert_int_eq(P(features_backward)(p, ROW, N, x, D, a, M, dx, D, dw, D,
                                          dw + 2), -12);
    for (int i = 0; i < N * D; i++)
        ck_assert(dx[i] == 9);
    for (int i = 0; i < WROWS * D; i++)
        ck_assert(dw[i] == 9);
    for (int i = 0; i < WROWS; i++)
        ck_assert(db[i] == 9);
    P(plan_destroy)(id);
    P(plan_destroy)(p);
    P(plan_destroy)(plain);
}
END_TEST

/* Allocation failure under a capped address space: LINATTN_ENOMEM,
 * nothing written. */
START_TEST(backward_out_of_memory)
{
    if (!address_cap_allowed())
        return;
    int causal = _i;
    const int64_t n = 2000, d = 128, e = 128;
    linattn_opts o;
    linattn_opts_init(&o);
    o.chunk = 1024; /* the causal squares: 8 MiB each */
    P(plan) *p;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, d, e, &o), 0);
    uint64_t s = 4;
    real *in = malloc((size_t)(n * (3 * d + 3 * e) + n) * sizeof(real));
    real *grad = malloc((size_t)(n * (2 * d + e)) * sizeof(real));
    for (int64_t i = 0; i < n * (3 * d + 3 * e) + n; i++)
        in[i] = (real)(0.1 + test_uniform(&s));
    for (int64_t i = 0; i < n * (2 * d + e); i++)
        grad[i] = 7;
    real *q = in, *k = q + n * d, *v = k + n * d, *out = v + n * e;
    real *g = out + n * e, *den = g + n * e;
    ck_assert_int_eq(P(attention_forward)(p, ROW, n, n, q, d, k, d, v, e, out,
                                          e, den, NULL), 0);
    cap_address_space(2u << 20);
    int64_t bad = -1;
    int st = causal ? P(causal_backward)(p, ROW, n, q, d, k, d, v, e, out, e,
                                         den, g, e, grad, d, grad + n * d, d,
                                         grad + 2 * n * d, e, NULL, 1, NULL,
                                         &bad)
                    : P(attention_backward)(p, ROW, n, n, q, d, k, d, v, e,
                                            out, e, den, g, e, grad, d,
                                            grad + n * d, d, grad + 2 * n * d,
                                            e, NULL, 1, NULL, NULL, &bad);
    ck_assert_int_eq(st, LINATTN_ENOMEM);
    for (int64_t i = 0; i < n * (2 * d + e); i++)
        ck_assert(grad[i] == 7);
    ck_assert_int_eq(bad, -1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gradient errors (" PREC ")");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, backward_argument_errors, 0, 2);
    tcase_add_loop_test(tc, backward_bad_normalizer, 0, 2);
    tcase_add_test(tc, backward_state_errors);
    tcase_add_loop_test(tc, backward_outputs_apart, 0, 2);
    tcase_add_loop_test(tc, backward_nonfinite_inputs, 0, 2);
    tcase_add_test(tc, forward_errors);
    tcase_add_test(tc, features_backward_errors);
    tcase_add_loop_test(tc, backward_out_of_memory, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
