/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_extras.c -- the extension point, compiled once per precision: a
 * call's optional parts (linattn_d_extras) through linattn_d_attention_ex
 * and linattn_d_causal_ex.  Absent parts are the plain calls bit for bit;
 * each part is what the call it stands for computes (the _forward calls'
 * normalizers, state_causal's starting state), composed parts are checked
 * against plain-loop references on the concatenated sequence, and every
 * refusal (each field of the extras, -i of the extras argument) writes
 * nothing and leaves the state as it was.
 */
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

static P(plan) *plan_with(int map, int64_t d, int64_t e, int denom)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = denom;
    o.chunk = 5; /* several causal chunks on small problems */
    o.block = 7;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* The checkpoint bytes of a state: everything observable about it. */
static unsigned char *state_bytes(const P(state) *s, int64_t *len)
{
    ck_assert_int_eq(P(state_save_size)(s, len), 0);
    unsigned char *b = malloc((size_t)*len);
    ck_assert_int_eq(P(state_save)(s, b, *len, NULL), 0);
    return b;
}

static int state_is(const P(state) *s, const unsigned char *bytes,
                    int64_t len)
{
    int64_t l;
    unsigned char *now = state_bytes(s, &l);
    int same = l == len && memcmp(now, bytes, (size_t)len) == 0;
    free(now);
    return same;
}

/* A state holding n0 keys and values of its own. */
static P(state) *state_with(const P(plan) *p, int64_t n0, int64_t d,
                            int64_t e, tmat *k0, tmat *v0, uint64_t *s)
{
    *k0 = tmat_rand(ROW, n0, d, 0, -1, 1, s);
    *v0 = tmat_rand(ROW, n0, e, 0, -1, 1, s);
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    ck_assert_int_eq(P(state_update)(st, ROW, n0, k0->a, k0->ld, v0->a,
                                     v0->ld), 0);
    return st;
}

/* Extras that start from st and absorb the call's keys into it. */
static P(extras) absorbing(P(state) *st)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.state = st;
    ex.absorb = 1;
    return ex;
}

/* Rows of a and b one after the other (same layout and columns). */
static tmat stacked(const tmat *a, const tmat *b)
{
    uint64_t s = 1;
    tmat c = tmat_rand(ROW, a->rows + b->rows, a->cols, 0, 0, 0, &s);
    for (int64_t i = 0; i < c.rows; i++)
        for (int64_t j = 0; j < c.cols; j++)
            *tmat_at(&c, i, j) = i < a->rows ? *tmat_at(a, i, j)
                                             : *tmat_at(b, i - a->rows, j);
    return c;
}

static int same_bits(const tmat *x, const tmat *y)
{
    for (int64_t i = 0; i < x->rows; i++)
        for (int64_t j = 0; j < x->cols; j++)
            if (memcmp(tmat_at(x, i, j), tmat_at(y, i, j), sizeof(real)))
                return 0;
    return 1;
}

/* ---- extras_init ---- */

START_TEST(init_means_absent)
{
    P(extras) ex;
    memset(&ex, 0x5a, sizeof ex);
    ck_assert_int_eq(P(extras_init)(&ex), 0);
    ck_assert_ptr_null(ex.den);
    ck_assert_ptr_null(ex.state);
    ck_assert_ptr_null(ex.weights);
    ck_assert_ptr_null(ex.offsets);
    ck_assert_ptr_null(ex.key_offsets);
    ck_assert_ptr_null(ex.states);
    ck_assert_ptr_null(ex.dweights);
    ck_assert_ptr_null(ex.dstate_end);
    ck_assert_ptr_null(ex.gates);
    ck_assert_ptr_null(ex.head_decays);
    ck_assert_ptr_null(ex.dgates);
    ck_assert_int_eq(ex.nseq, 0);
    ck_assert_int_eq(ex.absorb, 0);
    for (size_t i = 0; i < sizeof ex.reserved_int / sizeof *ex.reserved_int;
         i++)
        ck_assert_int_eq(ex.reserved_int[i], 0);
    for (size_t i = 0; i < sizeof ex.reserved_ptr / sizeof *ex.reserved_ptr;
         i++)
        ck_assert_ptr_null(ex.reserved_ptr[i]);
    for (size_t i = 0; i < sizeof ex.reserved / sizeof *ex.reserved; i++)
        ck_assert_int_eq(ex.reserved[i], 0);
    ck_assert_int_eq(P(extras_init)(NULL), -1);
}
END_TEST

/* ---- absent parts, and each part alone: the call it stands for ---- */

/* No extras (NULL, or all absent): linattn_d_attention and _causal, bit
 * for bit; den only: the _forward calls, bit for bit. */
START_TEST(absent_and_den_are_the_plain_calls)
{
    static const int maps[3] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                                LINATTN_MAP_FAVOR};
    int map = maps[_i % 3], layout = _i / 3 % 2 ? COL : ROW;
    int64_t nq = 23, nk = 23, d = 4, e = 3;
    uint64_t s = 17 + (uint64_t)_i;
    P(plan) *p = plan_with(map, d, e, LINATTN_DENOM_POSITIVE);
    /* positive queries and keys: the identity's normalizers too */
    tmat q = tmat_rand(layout, nq, d, 1, 0.1, 1, &s);
    tmat k = tmat_rand(layout, nk, d, 2, 0.1, 1, &s);
    tmat v = tmat_rand(layout, nk, e, 0, -1, 1, &s);
    P(extras) ex;
    P(extras_init)(&ex);
    for (int causal = 0; causal < 2; causal++) {
        tmat want = tmat_like(&q, nq, e, 1), got = tmat_like(&q, nq, e, 1);
        tmat got2 = tmat_like(&q, nq, e, 1);
        real wden[23], gden[23];
        int64_t bad = -1;
        if (causal) {
            ck_assert_int_eq(P(causal)(p, layout, nq, q.a, q.ld, k.a, k.ld,
                                       v.a, v.ld, want.a, want.ld, &bad), 0);
            ck_assert_int_eq(P(causal_ex)(p, layout, nq, q.a, q.ld, k.a, k.ld,
                                          v.a, v.ld, got.a, got.ld, NULL,
                                          &bad), 0);
            ck_assert_int_eq(P(causal_ex)(p, layout, nq, q.a, q.ld, k.a, k.ld,
                                          v.a, v.ld, got2.a, got2.ld, &ex,
                                          &bad), 0);
        } else {
            ck_assert_int_eq(P(attention)(p, layout, nq, nk, q.a, q.ld, k.a,
                                          k.ld, v.a, v.ld, want.a, want.ld,
                                          &bad), 0);
            ck_assert_int_eq(P(attention_ex)(p, layout, nq, nk, q.a, q.ld,
                                             k.a, k.ld, v.a, v.ld, got.a,
                                             got.ld, NULL, &bad), 0);
            ck_assert_int_eq(P(attention_ex)(p, layout, nq, nk, q.a, q.ld,
                                             k.a, k.ld, v.a, v.ld, got2.a,
                                             got2.ld, &ex, &bad), 0);
        }
        ck_assert(same_bits(&got, &want));
        ck_assert(same_bits(&got2, &want));
        /* den only */
        ex.den = gden;
        if (causal) {
            ck_assert_int_eq(P(causal_forward)(p, layout, nq, q.a, q.ld, k.a,
                                               k.ld, v.a, v.ld, want.a,
                                               want.ld, wden, &bad), 0);
            ck_assert_int_eq(P(causal_ex)(p, layout, nq, q.a, q.ld, k.a, k.ld,
                                          v.a, v.ld, got.a, got.ld, &ex,
                                          &bad), 0);
        } else {
            ck_assert_int_eq(P(attention_forward)(p, layout, nq, nk, q.a,
                                                  q.ld, k.a, k.ld, v.a, v.ld,
                                                  want.a, want.ld, wden,
                                                  &bad), 0);
            ck_assert_int_eq(P(attention_ex)(p, layout, nq, nk, q.a, q.ld,
                                             k.a, k.ld, v.a, v.ld, got.a,
                                             got.ld, &ex, &bad), 0);
        }
        ex.den = NULL;
        ck_assert(same_bits(&got, &want));
        ck_assert_mem_eq(gden, wden, sizeof wden);
        tmat_free(&want), tmat_free(&got), tmat_free(&got2);
    }
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
    P(plan_destroy)(p);
}
END_TEST

/* A state only, in causal_ex: linattn_d_state_causal of that state, bit
 * for bit, absorbing or not. */
START_TEST(causal_state_is_state_causal)
{
    int absorb = _i % 2, layout = _i / 2 ? COL : ROW;
    int64_t n = 19, n0 = 11, d = 3, e = 2;
    uint64_t s = 5 + (uint64_t)_i;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE);
    tmat k0, v0;
    P(state) *a = state_with(p, n0, d, e, &k0, &v0, &s);
    P(state) *b = NULL;
    ck_assert_int_eq(P(state_create)(&b, p), 0);
    ck_assert_int_eq(P(state_copy)(b, a), 0);
    tmat q = tmat_rand(layout, n, d, 0, -1, 1, &s);
    tmat k = tmat_rand(layout, n, d, 1, -1, 1, &s);
    tmat v = tmat_rand(layout, n, e, 0, -1, 1, &s);
    tmat want = tmat_like(&q, n, e, 0), got = tmat_like(&q, n, e, 0);
    int64_t bad = -1;
    ck_assert_int_eq(P(state_causal)(a, layout, n, q.a, q.ld, k.a, k.ld, v.a,
                                     v.ld, want.a, want.ld, absorb, &bad), 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.state = b;
    ex.absorb = absorb;
    ck_assert_int_eq(P(causal_ex)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a,
                                  v.ld, got.a, got.ld, &ex, &bad), 0);
    ck_assert(same_bits(&got, &want));
    int64_t la;
    unsigned char *bytes = state_bytes(a, &la);
    ck_assert(state_is(b, bytes, la)); /* both absorbed alike, or neither */
    free(bytes);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&k0);
    tmat_free(&v0), tmat_free(&want), tmat_free(&got);
    P(state_destroy)(a), P(state_destroy)(b);
    P(plan_destroy)(p);
}
END_TEST

/* ---- the parts composed, against plain loops ---- */

/* A state and den together, both calls and both normalizer policies
 * that use them: out against the reference on the state's keys followed
 * by the call's (all of them non-causal; j <= i of the call's, after all
 * of the state's, causal); den against phi(q_i) . z by loops (identity);
 * under LINATTN_DENOM_COUNT the counts include the state's tokens. */
START_TEST(state_and_den_compose)
{
    int causal = _i % 2, count = _i / 2 % 2, layout = _i / 4 ? COL : ROW;
    int map = count ? LINATTN_MAP_IDENTITY : LINATTN_MAP_ELU1;
    int64_t n = 17, n0 = 9, d = 3, e = 2;
    uint64_t s = 99 + (uint64_t)_i;
    P(plan) *p = plan_with(map, d, e, count ? LINATTN_DENOM_COUNT
                                            : LINATTN_DENOM_POSITIVE);
    tmat k0, v0;
    P(state) *st = state_with(p, n0, d, e, &k0, &v0, &s);
    tmat q = tmat_rand(layout, n, d, 0, 0.1, 1, &s);
    tmat k = tmat_rand(layout, n, d, 0, 0.1, 1, &s);
    tmat v = tmat_rand(layout, n, e, 1, -1, 1, &s);
    tmat out = tmat_like(&q, n, e, 0);
    real den[17];
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den;
    ex.state = st;
    ex.absorb = 1;
    int64_t bad = -1;
    int rc = causal ? P(causal_ex)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a,
                                   v.ld, out.a, out.ld, &ex, &bad)
                    : P(attention_ex)(p, layout, n, n, q.a, q.ld, k.a, k.ld,
                                      v.a, v.ld, out.a, out.ld, &ex, &bad);
    ck_assert_int_eq(rc, 0);
    /* the reference on the whole sequence: the state's keys, then these
     * (qr's first n0 rows stand in for the state's tokens' queries, which
     * are not compared) */
    tmat kk = stacked(&k0, &k), vv = stacked(&v0, &v), qr = stacked(&k0, &q);
    long double *ref = malloc((size_t)(n * e) * sizeof *ref);
    long double *fq = ref_phi_rows(map, &qr), *fk = ref_phi_rows(map, &kk);
    for (int64_t i = n0; i < n0 + n; i++) {
        /* non-causal: every key; causal: the state's and the call's to i */
        int64_t last = causal ? i : n0 + n - 1;
        long double z = 0, num[2] = {0, 0};
        for (int64_t j = 0; j <= last; j++) {
            long double a = 0;
            for (int64_t t = 0; t < d; t++)
                a += fq[i * d + t] * fk[j * d + t];
            z += a;
            for (int64_t c = 0; c < e; c++)
                num[c] += a * *tmat_at(&vv, j, c);
        }
        long double nden = count ? (long double)(last + 1) : z;
        for (int64_t c = 0; c < e; c++)
            ref[(i - n0) * e + c] = num[c] / nden;
        ck_assert_msg(fabsl(den[i - n0] - nden) <= 1e3 * TOL * fabsl(nden),
                      "den[%lld] %g, reference %Lg", (long long)(i - n0),
                      (double)den[i - n0], nden);
    }
    ck_assert_double_le(rel_err(&out, ref), 1e3 * TOL);
    /* absorbed: the state of both key sets, as updates leave it */
    int64_t tokens = -1;
    P(state_get)(st, ROW, NULL, 1, NULL, &tokens);
    ck_assert_int_eq(tokens, n0 + n);
    P(state) *both = NULL;
    ck_assert_int_eq(P(state_create)(&both, p), 0);
    ck_assert_int_eq(P(state_update)(both, ROW, n0 + n, kk.a, kk.ld, vv.a,
                                     vv.ld), 0);
    real zs[3], zb[3];
    P(state_get)(st, ROW, NULL, 1, zs, NULL);
    P(state_get)(both, ROW, NULL, 1, zb, NULL);
    for (int t = 0; t < 3; t++)
        ck_assert(fabs((double)(zs[t] - zb[t])) <= 1e3 * TOL * fabs(zb[t]));
    free(ref), free(fq), free(fk);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&k0);
    tmat_free(&v0), tmat_free(&out), tmat_free(&kk), tmat_free(&vv);
    tmat_free(&qr);
    P(state_destroy)(st), P(state_destroy)(both);
    P(plan_destroy)(p);
}
END_TEST

/* Non-causal with a state and no queries: nothing to answer, but the
 * state absorbs the keys when asked to (and stays as it was if not). */
START_TEST(no_queries_still_absorb)
{
    int64_t nk = 6, n0 = 4, d = 2, e = 2;
    uint64_t s = 3;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE);
    tmat k0, v0;
    P(state) *st = state_with(p, n0, d, e, &k0, &v0, &s);
    tmat k = tmat_rand(ROW, nk, d, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, nk, e, 0, -1, 1, &s);
    int64_t len;
    unsigned char *before = state_bytes(st, &len);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.state = st;
    ck_assert_int_eq(P(attention_ex)(p, ROW, 0, nk, NULL, d, k.a, k.ld, v.a,
                                     v.ld, NULL, e, &ex, NULL), 0);
    ck_assert(state_is(st, before, len));
    ex.absorb = 1;
    ck_assert_int_eq(P(attention_ex)(p, ROW, 0, nk, NULL, d, k.a, k.ld, v.a,
                                     v.ld, NULL, e, &ex, NULL), 0);
    int64_t tokens = -1;
    P(state_get)(st, ROW, NULL, 1, NULL, &tokens);
    ck_assert_int_eq(tokens, n0 + nk);
    free(before);
    tmat_free(&k), tmat_free(&v), tmat_free(&k0), tmat_free(&v0);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

/* ---- refusals: -i of the extras, nothing written, state unchanged ---- */

/* Each field that can be wrong, alone: a reserved word not 0 (each of
 * the three kinds, first and last), den meeting q or out, a state of a
 * plan with another map or other sizes, absorb 2, absorb 1 without a
 * state; then a state whose tokens the call's keys would carry past
 * INT64_MAX (LINATTN_ESIZE), and with check_finite a NaN query
 * (LINATTN_ENONFINITE), both before any work. */
START_TEST(each_bad_field_refused)
{
    int causal = _i;
    int64_t n = 8, d = 3, e = 2, pos = causal ? 12 : 13;
    uint64_t s = 41;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE);
    P(plan) *other = plan_with(LINATTN_MAP_RELU, d, e, LINATTN_DENOM_POSITIVE);
    P(plan) *wider = plan_with(LINATTN_MAP_ELU1, d + 1, e,
                               LINATTN_DENOM_POSITIVE);
    tmat k0, v0;
    P(state) *st = state_with(p, 5, d, e, &k0, &v0, &s);
    P(state) *so = NULL, *sw = NULL;
    ck_assert_int_eq(P(state_create)(&so, other), 0);
    ck_assert_int_eq(P(state_create)(&sw, wider), 0);
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &s);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &s);
    tmat out = tmat_like(&q, n, e, 0);
    real den[8];
    for (int i = 0; i < 8; i++)
        den[i] = (real)-7;
    int64_t len;
    unsigned char *before = state_bytes(st, &len);
    for (int c = 0; c < 12; c++) {
        P(extras) ex;
        P(extras_init)(&ex);
        ex.state = st;
        ex.absorb = 1;
        ex.den = den;
        switch (c) {
        case 0: ex.reserved_int[0] = 1; break;
        case 1: ex.reserved_int[2] = -1; break;
        case 2: ex.reserved_ptr[0] = &ex; break;
        case 3: /* the last one */
            ex.reserved_ptr[sizeof ex.reserved_ptr / sizeof *ex.reserved_ptr - 1] = &ex;
            break;
        case 4: ex.reserved[0] = 1; break;
        case 5: ex.reserved[14] = 1; break;
        case 6: ex.den = q.a + 2; break; /* inside q */
        case 7: ex.den = out.a + 1; break; /* inside out */
        case 8: ex.state = so; break;
        case 9: ex.state = sw; break;
        case 10: ex.absorb = 2; break;
        default: ex.state = NULL; break; /* absorb 1, no state */
        }
        int64_t bad = -5;
        int rc = causal ? P(causal_ex)(p, ROW, n, q.a, q.ld, k.a, k.ld, v.a,
                                       v.ld, out.a, out.ld, &ex, &bad)
                        : P(attention_ex)(p, ROW, n, n, q.a, q.ld, k.a, k.ld,
                                          v.a, v.ld, out.a, out.ld, &ex,
                                          &bad);
        ck_assert_msg(rc == -pos, "case %d: %d", c, rc);
        ck_assert_int_eq(bad, -5);
        ck_assert(tmat_padding_intact(&out));
        for (int64_t i = 0; i < n; i++) {
            ck_assert(*tmat_at(&out, i, 0) == 0);
            if (c != 6)
                ck_assert(den[i] == (real)-7);
        }
        ck_assert(state_is(st, before, len));
    }
    /* the state's tokens and these n beyond INT64_MAX */
    double acc[3 * 3];
    memset(acc, 0, sizeof acc);
    P(state) *full = NULL;
    ck_assert_int_eq(P(state_create)(&full, p), 0);
    ck_assert_int_eq(P(state_import)(full, acc, 0, INT64_MAX - 3), 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.state = full;
    int rc = causal ? P(causal_ex)(p, ROW, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                   out.a, out.ld, &ex, NULL)
                    : P(attention_ex)(p, ROW, n, n, q.a, q.ld, k.a, k.ld, v.a,
                                      v.ld, out.a, out.ld, &ex, NULL);
    ck_assert_int_eq(rc, LINATTN_ESIZE);
    /* check_finite: a NaN query, refused before any work */
    linattn_opts o;
    linattn_opts_init(&o);
    o.check_finite = 1;
    P(plan) *pf = NULL;
    ck_assert_int_eq(P(plan_create)(&pf, LINATTN_MAP_ELU1, d, e, &o), 0);
    *tmat_at(&q, 3, 1) = (real)NAN;
    P(extras_init)(&ex);
    ex.den = den;
    rc = causal ? P(causal_ex)(pf, ROW, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                               out.a, out.ld, &ex, NULL)
                : P(attention_ex)(pf, ROW, n, n, q.a, q.ld, k.a, k.ld, v.a,
                                  v.ld, out.a, out.ld, &ex, NULL);
    ck_assert_int_eq(rc, LINATTN_ENONFINITE);
    for (int64_t i = 0; i < n; i++)
        ck_assert(den[i] == (real)-7 && *tmat_at(&out, i, 1) == 0);
    free(before);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    tmat_free(&k0), tmat_free(&v0);
    P(state_destroy)(st), P(state_destroy)(so), P(state_destroy)(sw);
    P(state_destroy)(full);
    P(plan_destroy)(p), P(plan_destroy)(other), P(plan_destroy)(wider);
    P(plan_destroy)(pf);
}
END_TEST

/* A run-time failure leaves an absorbing state as it was: the identity
 * map, normalizers of either sign, the POSITIVE policy; den holds the
 * rows that out does (those before the bad row). */
START_TEST(failure_does_not_absorb)
{
    int causal = _i;
    int64_t n = 6, d = 2, e = 1;
    P(plan) *p = plan_with(LINATTN_MAP_IDENTITY, d, e,
                           LINATTN_DENOM_POSITIVE);
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    real k0[2] = {1, 0}, v0[1] = {1};
    ck_assert_int_eq(P(state_update)(st, ROW, 1, k0, 2, v0, 1), 0);
    /* q . z > 0 for rows 0-2, < 0 for row 3 */
    real q[12] = {1, 0, 1, 0, 1, 0, -1, 0, 1, 0, 1, 0};
    real k[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    real v[6] = {1, 2, 3, 4, 5, 6}, out[6], den[6];
    for (int i = 0; i < 6; i++)
        out[i] = den[i] = (real)-9;
    int64_t len;
    unsigned char *before = state_bytes(st, &len);
    P(extras) ex = absorbing(st);
    ex.den = den;
    int64_t bad = -1;
    int rc = causal ? P(causal_ex)(p, ROW, n, q, d, k, d, v, e, out, e, &ex,
                                   &bad)
                    : P(attention_ex)(p, ROW, n, n, q, d, k, d, v, e, out, e,
                                      &ex, &bad);
    ck_assert_int_eq(rc, LINATTN_EDENOM);
    ck_assert_int_eq(bad, 3);
    ck_assert(state_is(st, before, len));
    for (int i = 0; i < 3; i++) {
        ck_assert(den[i] == 1); /* the state's z, nothing from K = 0 */
        ck_assert(out[i] == 1);
    }
    ck_assert(den[3] == (real)-9 && out[3] == (real)-9);
    free(before);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

/* Finite keys and values whose sums leave the range: an absorbing call
 * refuses them as linattn_d_state_update does (LINATTN_EOVERFLOW, *bad_row
 * -1, the state unchanged), even when no output row reads the sum that
 * overflows.  ReLU features; the last key (big, 0) with value big puts
 * S[0][0] = 16 * max beyond the range (in float, the float copy's); the
 * other keys are (0, 1).  The causal calls see that key only in the last
 * row's own term, q . k = 0, so every row they write is finite, and the
 * rows stay written: those of the reading call (absorb 0).  The attention
 * call reads the whole sums for every row, so it is refused before any
 * row.  Cases: attention_ex with no queries, with queries, causal_ex,
 * state_causal. */
START_TEST(overflowing_sums_not_absorbed)
{
    int64_t n = 40, d = 2, e = 1;
    real big = (real)(4 * sqrt(sizeof(real) == 4 ? FLT_MAX : DBL_MAX));
    linattn_opts o;
    linattn_opts_init(&o);
    o.eps = 1;
    o.chunk = 5; /* several chunks, and two ranges on two threads */
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_RELU, d, e, &o), 0);
    real *q = malloc(sizeof(real) * (size_t)(n * d));
    real *k = malloc(sizeof(real) * (size_t)(n * d));
    real *v = malloc(sizeof(real) * (size_t)n);
    real *out = malloc(sizeof(real) * (size_t)n);
    real *want = malloc(sizeof(real) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        int last = i == n - 1;
        q[2 * i] = 0, q[2 * i + 1] = 1;
        k[2 * i] = last ? big : 0, k[2 * i + 1] = last ? 0 : 1;
        v[i] = last ? big : (real)(i % 3);
        out[i] = want[i] = (real)-7;
    }
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    /* the public update refuses these keys: the behaviour to match */
    ck_assert_int_eq(P(state_update)(st, ROW, n, k, d, v, e),
                     LINATTN_EOVERFLOW);
    real k0[2] = {0, 1}, v0[1] = {2};
    ck_assert_int_eq(P(state_update)(st, ROW, 1, k0, d, v0, e), 0);
    int64_t len;
    unsigned char *before = state_bytes(st, &len);
    P(extras) ex = absorbing(st);
    int64_t bad = 99;
    int rc;
    if (_i < 2) {
        int64_t nq = _i ? n : 0;
        rc = P(attention_ex)(p, ROW, nq, n, nq ? q : NULL, d, k, d, v, e,
                             nq ? out : NULL, e, &ex, &bad);
        for (int64_t i = 0; i < n; i++)
            ck_assert(out[i] == (real)-7);
    } else {
        ck_assert_int_eq(P(state_causal)(st, ROW, n, q, d, k, d, v, e, want,
                                         e, 0, NULL), 0);
        ck_assert(state_is(st, before, len));
        rc = _i == 2 ? P(causal_ex)(p, ROW, n, q, d, k, d, v, e, out, e, &ex,
                                    &bad)
                     : P(state_causal)(st, ROW, n, q, d, k, d, v, e, out, e,
                                       1, &bad);
        for (int64_t i = 0; i < n; i++) {
            ck_assert(isfinite(want[i]));
            ck_assert(memcmp(&out[i], &want[i], sizeof(real)) == 0);
        }
    }
    ck_assert_int_eq(rc, LINATTN_EOVERFLOW);
    ck_assert_int_eq(bad, -1);
    ck_assert(state_is(st, before, len));
    free(before);
    free(q), free(k), free(v), free(out), free(want);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("extras " PREC);
    TCase *tc = tcase_create("extras");
    tcase_add_test(tc, init_means_absent);
    tcase_add_loop_test(tc, absent_and_den_are_the_plain_calls, 0, 6);
    tcase_add_loop_test(tc, causal_state_is_state_causal, 0, 4);
    tcase_add_loop_test(tc, state_and_den_compose, 0, 8);
    tcase_add_test(tc, no_queries_still_absorb);
    tcase_add_loop_test(tc, each_bad_field_refused, 0, 2);
    tcase_add_loop_test(tc, failure_does_not_absorb, 0, 2);
    tcase_add_loop_test(tc, overflowing_sums_not_absorbed, 0, 4);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
