/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_errors.c -- every argument check of every entry point, compiled once
 * per precision.  Each rejected call must return the documented status and
 * leave its outputs untouched (they hold a sentinel before the call).
 */
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR
#define SENT ((real)-555)
#define BIG ((int64_t)1 << 40) /* beyond every BLAS integer */
/* A leading dimension whose matrix of 3 rows cannot be addressed in int64
 * (leading dimensions beyond the BLAS integer alone are accepted: the
 * library copies such blocks through workspace). */
#define HUGE_LD (INT64_MAX / 2)

static real qb[64], kb[64], vb[64], ob[64], nb[64], db[64];

static void fill(void)
{
    for (int i = 0; i < 64; i++) {
        qb[i] = (real)(0.1 * (i % 7) + 0.2);
        kb[i] = (real)(0.1 * (i % 5) + 0.3);
        vb[i] = (real)(0.1 * (i % 3) - 0.1);
        ob[i] = nb[i] = db[i] = SENT;
    }
}

static int untouched(void)
{
    for (int i = 0; i < 64; i++)
        if (ob[i] != SENT || nb[i] != SENT || db[i] != SENT)
            return 0;
    return 1;
}

static P(plan) *plan32(void) /* d = 3, e = 2 */
{
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, NULL), 0);
    return p;
}

START_TEST(plan_create_errors)
{
    P(plan) *sentinel = (P(plan) *)&qb, *p = sentinel;
    linattn_opts o;
    linattn_opts_init(&o);
    ck_assert_int_eq(P(plan_create)(NULL, LINATTN_MAP_ELU1, 3, 2, NULL), -1);
    ck_assert_int_eq(P(plan_create)(&p, 0, 3, 2, NULL), -2);
    ck_assert_int_eq(P(plan_create)(&p, 99, 3, 2, NULL), -2);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 0, 2, NULL), -3);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, -4, 2, NULL), -3);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 0, NULL), -4);
    o.m = 5; /* elementwise maps need m = d */
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
    linattn_opts_init(&o);
    o.block = -1;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
    linattn_opts_init(&o);
    o.denom = 7;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
    linattn_opts_init(&o);
    o.eps = -1e-3;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
    o.eps = NAN;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
    o.eps = INFINITY;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
#ifdef TEST_SINGLE
    /* eps must survive the conversion to float */
    o.eps = 1e39;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
    o.eps = 1e-50;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
#endif
    /* a state whose byte count does not fit the address space */
    linattn_opts_init(&o);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 2147483647, 1073741824, &o),
                     LINATTN_ESIZE);
    linattn_opts_init(&o);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, BIG, 2, &o), LINATTN_ESIZE);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, BIG, &o), LINATTN_ESIZE);
    o.block = BIG;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), LINATTN_ESIZE);
    ck_assert(p == sentinel);
    /* accessors */
    p = plan32();
    int64_t d = -1, m = -1, e = -1;
    ck_assert_int_eq(P(plan_dims)(NULL, &d, &m, &e), -1);
    ck_assert(d == -1 && m == -1 && e == -1);
    ck_assert_int_eq(P(plan_dims)(p, &d, &m, &e), 0);
    ck_assert(d == 3 && m == 3 && e == 2);
    ck_assert_int_eq(P(plan_dims)(p, NULL, NULL, NULL), 0);
    P(plan_destroy)(p);
    P(plan_destroy)(NULL);
}
END_TEST

START_TEST(features_errors)
{
    P(plan) *p = plan32();
    fill();
    ck_assert_int_eq(P(features)(NULL, ROW, 2, qb, 3, ob, 3), -1);
    ck_assert_int_eq(P(features)(p, 0, 2, qb, 3, ob, 3), -2);
    ck_assert_int_eq(P(features)(p, ROW, -1, qb, 3, ob, 3), -3);
    ck_assert_int_eq(P(features)(p, ROW, 2, NULL, 3, ob, 3), -4);
    ck_assert_int_eq(P(features)(p, ROW, 2, qb, 2, ob, 3), -5);
    ck_assert_int_eq(P(features)(p, COL, 4, qb, 3, ob, 4), -5);
    ck_assert_int_eq(P(features)(p, ROW, 2, qb, 3, NULL, 3), -6);
    ck_assert_int_eq(P(features)(p, ROW, 2, qb, 3, ob, 0), -7);
    ck_assert_int_eq(P(features)(p, ROW, 3, qb, HUGE_LD, ob, 3), LINATTN_ESIZE);
    ck_assert(untouched());
    ck_assert_int_eq(P(features)(p, ROW, 0, NULL, 3, NULL, 3), 0);
    P(plan_destroy)(p);
}
END_TEST

START_TEST(state_errors)
{
    P(plan) *p = plan32();
    P(state) *st = (P(state) *)&qb, *st0 = st;
    ck_assert_int_eq(P(state_create)(NULL, p), -1);
    ck_assert_int_eq(P(state_create)(&st, NULL), -2);
    ck_assert(st == st0);
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    fill();
    /* update */
    ck_assert_int_eq(P(state_update)(NULL, ROW, 2, kb, 3, vb, 2), -1);
    ck_assert_int_eq(P(state_update)(st, 103, 2, kb, 3, vb, 2), -2);
    ck_assert_int_eq(P(state_update)(st, ROW, -2, kb, 3, vb, 2), -3);
    ck_assert_int_eq(P(state_update)(st, ROW, 2, NULL, 3, vb, 2), -4);
    ck_assert_int_eq(P(state_update)(st, ROW, 2, kb, 1, vb, 2), -5);
    ck_assert_int_eq(P(state_update)(st, ROW, 2, kb, 3, NULL, 2), -6);
    ck_assert_int_eq(P(state_update)(st, ROW, 2, kb, 3, vb, 1), -7);
    ck_assert_int_eq(P(state_update)(st, COL, 2, kb, 2, vb, 1), -7);
    ck_assert_int_eq(P(state_update)(st, ROW, 3, kb, HUGE_LD, vb, 2), LINATTN_ESIZE);
    ck_assert_int_eq(P(state_update)(st, COL, BIG, kb, HUGE_LD, vb, HUGE_LD), LINATTN_ESIZE);
    real s[6], z[3];
    int64_t tokens = -1;
    ck_assert_int_eq(P(state_get)(st, ROW, s, 2, z, &tokens), 0);
    ck_assert_int_eq(tokens, 0); /* nothing was absorbed */
    for (int i = 0; i < 6; i++)
        ck_assert(s[i] == 0);
    /* query */
    ck_assert_int_eq(P(state_update)(st, ROW, 4, kb, 3, vb, 2), 0);
    int64_t bad = -9;
    ck_assert_int_eq(P(state_query)(NULL, ROW, 2, qb, 3, ob, 2, nb, 2, db, &bad), -1);
    ck_assert_int_eq(P(state_query)(st, 0, 2, qb, 3, ob, 2, nb, 2, db, &bad), -2);
    ck_assert_int_eq(P(state_query)(st, ROW, -1, qb, 3, ob, 2, nb, 2, db, &bad), -3);
    ck_assert_int_eq(P(state_query)(st, ROW, 2, NULL, 3, ob, 2, nb, 2, db, &bad), -4);
    ck_assert_int_eq(P(state_query)(st, ROW, 2, qb, 2, ob, 2, nb, 2, db, &bad), -5);
    ck_assert_int_eq(P(state_query)(st, ROW, 2, qb, 3, ob, 1, nb, 2, db, &bad), -7);
    ck_assert_int_eq(P(state_query)(st, ROW, 2, qb, 3, ob, 2, nb, 1, db, &bad), -9);
    ck_assert_int_eq(P(state_query)(st, ROW, 2, qb, 3, NULL, 0, NULL, 0, NULL, &bad), -10);
    ck_assert_int_eq(P(state_query)(st, ROW, 3, qb, HUGE_LD, NULL, 0, NULL, 0, NULL, &bad), -10);
    ck_assert_int_eq(P(state_query)(st, ROW, 3, qb, HUGE_LD, ob, 2, nb, 2, db, &bad), LINATTN_ESIZE);
    ck_assert_int_eq(P(state_query)(st, ROW, 3, qb, 3, ob, HUGE_LD, nb, 2, db, &bad), LINATTN_ESIZE);
    ck_assert_int_eq(P(state_query)(st, ROW, 3, qb, 3, ob, 2, nb, HUGE_LD, db, &bad), LINATTN_ESIZE);
    ck_assert(untouched() && bad == -9);
    /* the optional outputs are optional */
    ck_assert_int_eq(P(state_query)(st, ROW, 2, qb, 3, NULL, 0, NULL, 0, db, NULL), 0);
    ck_assert(db[0] != SENT && db[1] != SENT && db[2] == SENT);
    /* get */
    fill();
    ck_assert_int_eq(P(state_get)(NULL, ROW, ob, 2, nb, &tokens), -1);
    ck_assert_int_eq(P(state_get)(st, 5, ob, 2, nb, &tokens), -2);
    ck_assert_int_eq(P(state_get)(st, ROW, ob, 1, nb, &tokens), -4);
    ck_assert_int_eq(P(state_get)(st, COL, ob, 2, nb, &tokens), -4);
    ck_assert_int_eq(P(state_get)(st, ROW, ob, HUGE_LD, nb, &tokens), LINATTN_ESIZE);
    ck_assert(untouched());
    /* reset, merge, copy */
    ck_assert_int_eq(P(state_reset)(NULL), -1);
    P(plan) *other;
    ck_assert_int_eq(P(plan_create)(&other, LINATTN_MAP_RELU, 3, 2, NULL), 0);
    P(state) *st2;
    ck_assert_int_eq(P(state_create)(&st2, other), 0);
    ck_assert_int_eq(P(state_merge)(NULL, st), -1);
    ck_assert_int_eq(P(state_merge)(st, NULL), -2);
    ck_assert_int_eq(P(state_merge)(st, st2), -2);
    ck_assert_int_eq(P(state_copy)(NULL, st), -1);
    ck_assert_int_eq(P(state_copy)(st, NULL), -2);
    ck_assert_int_eq(P(state_copy)(st, st2), -2);
    ck_assert_int_eq(P(state_get)(st, ROW, NULL, 0, NULL, &tokens), 0);
    ck_assert_int_eq(tokens, 4); /* the rejected merge/copy changed nothing */
    P(state_destroy)(st2);
    P(plan_destroy)(other);
    P(state_destroy)(st);
    P(state_destroy)(NULL);
    P(plan_destroy)(p);
}
END_TEST

typedef int (*attn_fn)(const P(plan) *, int, int64_t, int64_t, const real *,
                       int64_t, const real *, int64_t, const real *, int64_t,
                       real *, int64_t, int64_t *);

START_TEST(attention_and_naive_errors)
{
    attn_fn fns[2] = {P(attention), P(naive)};
    attn_fn f = fns[_i];
    P(plan) *p = plan32();
    fill();
    int64_t bad = -9;
    ck_assert_int_eq(f(NULL, ROW, 2, 3, qb, 3, kb, 3, vb, 2, ob, 2, &bad), -1);
    ck_assert_int_eq(f(p, 0, 2, 3, qb, 3, kb, 3, vb, 2, ob, 2, &bad), -2);
    ck_assert_int_eq(f(p, ROW, -2, 3, qb, 3, kb, 3, vb, 2, ob, 2, &bad), -3);
    ck_assert_int_eq(f(p, ROW, 2, -3, qb, 3, kb, 3, vb, 2, ob, 2, &bad), -4);
    ck_assert_int_eq(f(p, ROW, 2, 3, NULL, 3, kb, 3, vb, 2, ob, 2, &bad), -5);
    ck_assert_int_eq(f(p, ROW, 2, 3, qb, 2, kb, 3, vb, 2, ob, 2, &bad), -6);
    ck_assert_int_eq(f(p, ROW, 2, 3, qb, 3, NULL, 3, vb, 2, ob, 2, &bad), -7);
    ck_assert_int_eq(f(p, ROW, 2, 3, qb, 3, kb, 0, vb, 2, ob, 2, &bad), -8);
    ck_assert_int_eq(f(p, ROW, 2, 3, qb, 3, kb, 3, NULL, 2, ob, 2, &bad), -9);
    ck_assert_int_eq(f(p, ROW, 2, 3, qb, 3, kb, 3, vb, 1, ob, 2, &bad), -10);
    ck_assert_int_eq(f(p, ROW, 2, 3, qb, 3, kb, 3, vb, 2, NULL, 2, &bad), -11);
    ck_assert_int_eq(f(p, ROW, 2, 3, qb, 3, kb, 3, vb, 2, ob, 1, &bad), -12);
    /* column major: every leading dimension must cover the rows */
    ck_assert_int_eq(f(p, COL, 4, 3, qb, 3, kb, 3, vb, 3, ob, 4, &bad), -6);
    ck_assert_int_eq(f(p, COL, 2, 5, qb, 2, kb, 4, vb, 5, ob, 2, &bad), -8);
    ck_assert_int_eq(f(p, COL, 2, 5, qb, 2, kb, 5, vb, 4, ob, 2, &bad), -10);
    ck_assert_int_eq(f(p, COL, 5, 3, qb, 5, kb, 3, vb, 3, ob, 4, &bad), -12);
    /* sizes beyond BLAS integers, refused before any access */
    ck_assert_int_eq(f(p, ROW, 3, 3, qb, HUGE_LD, kb, 3, vb, 2, ob, 2, &bad), LINATTN_ESIZE);
    ck_assert_int_eq(f(p, ROW, 3, 3, qb, 3, kb, HUGE_LD, vb, 2, ob, 2, &bad), LINATTN_ESIZE);
    ck_assert_int_eq(f(p, ROW, 3, 3, qb, 3, kb, 3, vb, HUGE_LD, ob, 2, &bad), LINATTN_ESIZE);
    ck_assert_int_eq(f(p, ROW, 3, 3, qb, 3, kb, 3, vb, 2, ob, HUGE_LD, &bad), LINATTN_ESIZE);
    ck_assert_int_eq(f(p, ROW, BIG, 3, qb, INT64_MAX / 2, kb, 3, vb, 2, ob, 2, &bad),
                     LINATTN_ESIZE);
    /* rows x ld beyond int64 with every ld a valid BLAS integer */
    ck_assert_int_eq(f(p, ROW, BIG, 3, qb, (int64_t)1 << 30, kb, 3, vb, 2, ob, 2, &bad),
                     LINATTN_ESIZE);
    ck_assert_int_eq(f(p, COL, 2, (int64_t)1 << 62, qb, 2, kb, (int64_t)1 << 62, vb,
                       (int64_t)1 << 62, ob, 2, &bad), LINATTN_ESIZE);
    ck_assert(untouched() && bad == -9);
    /* nq = 0 is a no-op that succeeds */
    ck_assert_int_eq(f(p, ROW, 0, 3, NULL, 3, kb, 3, vb, 2, NULL, 2, &bad), 0);
    ck_assert(untouched());
    P(plan_destroy)(p);
}
END_TEST

typedef int (*causal_fn)(const P(plan) *, int, int64_t, const real *, int64_t,
                         const real *, int64_t, const real *, int64_t, real *,
                         int64_t, int64_t *);

START_TEST(causal_errors)
{
    causal_fn fns[2] = {P(causal), P(naive_causal)};
    causal_fn f = fns[_i];
    P(plan) *p = plan32();
    fill();
    int64_t bad = -9;
    ck_assert_int_eq(f(NULL, ROW, 3, qb, 3, kb, 3, vb, 2, ob, 2, &bad), -1);
    ck_assert_int_eq(f(p, 5, 3, qb, 3, kb, 3, vb, 2, ob, 2, &bad), -2);
    ck_assert_int_eq(f(p, ROW, -3, qb, 3, kb, 3, vb, 2, ob, 2, &bad), -3);
    ck_assert_int_eq(f(p, ROW, 3, NULL, 3, kb, 3, vb, 2, ob, 2, &bad), -4);
    ck_assert_int_eq(f(p, ROW, 3, qb, 2, kb, 3, vb, 2, ob, 2, &bad), -5);
    ck_assert_int_eq(f(p, ROW, 3, qb, 3, NULL, 3, vb, 2, ob, 2, &bad), -6);
    ck_assert_int_eq(f(p, ROW, 3, qb, 3, kb, 2, vb, 2, ob, 2, &bad), -7);
    ck_assert_int_eq(f(p, ROW, 3, qb, 3, kb, 3, NULL, 2, ob, 2, &bad), -8);
    ck_assert_int_eq(f(p, ROW, 3, qb, 3, kb, 3, vb, 1, ob, 2, &bad), -9);
    ck_assert_int_eq(f(p, ROW, 3, qb, 3, kb, 3, vb, 2, NULL, 2, &bad), -10);
    ck_assert_int_eq(f(p, ROW, 3, qb, 3, kb, 3, vb, 2, ob, 1, &bad), -11);
    ck_assert_int_eq(f(p, COL, 4, qb, 3, kb, 4, vb, 4, ob, 4, &bad), -5);
    ck_assert_int_eq(f(p, ROW, 3, qb, HUGE_LD, kb, 3, vb, 2, ob, 2, &bad), LINATTN_ESIZE);
    ck_assert(untouched() && bad == -9);
    ck_assert_int_eq(f(p, ROW, 0, NULL, 3, NULL, 3, NULL, 2, NULL, 2, &bad), 0);
    P(plan_destroy)(p);
    /* chunk option */
    linattn_opts o;
    linattn_opts_init(&o);
    o.chunk = -1;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
    o.chunk = BIG;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), LINATTN_ESIZE);
}
END_TEST

START_TEST(softmax_errors)
{
    fill();
    real sc = (real)0.5;
    ck_assert_int_eq(P(softmax)(7, 2, 3, 3, 2, sc, qb, 3, kb, 3, vb, 2, ob, 2), -1);
    ck_assert_int_eq(P(softmax)(ROW, -1, 3, 3, 2, sc, qb, 3, kb, 3, vb, 2, ob, 2), -2);
    ck_assert_int_eq(P(softmax)(ROW, 2, 0, 3, 2, sc, qb, 3, kb, 3, vb, 2, ob, 2), -3);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 0, 2, sc, qb, 3, kb, 3, vb, 2, ob, 2), -4);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 0, sc, qb, 3, kb, 3, vb, 2, ob, 2), -5);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, (real)NAN, qb, 3, kb, 3, vb, 2, ob, 2), -6);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, (real)INFINITY, qb, 3, kb, 3, vb, 2, ob, 2), -6);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, sc, NULL, 3, kb, 3, vb, 2, ob, 2), -7);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, sc, qb, 2, kb, 3, vb, 2, ob, 2), -8);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, sc, qb, 3, NULL, 3, vb, 2, ob, 2), -9);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, sc, qb, 3, kb, 2, vb, 2, ob, 2), -10);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, sc, qb, 3, kb, 3, NULL, 2, ob, 2), -11);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, sc, qb, 3, kb, 3, vb, 1, ob, 2), -12);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, sc, qb, 3, kb, 3, vb, 2, NULL, 2), -13);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, 3, 2, sc, qb, 3, kb, 3, vb, 2, ob, 1), -14);
    ck_assert_int_eq(P(softmax)(ROW, 3, 3, 3, 2, sc, qb, HUGE_LD, kb, 3, vb, 2, ob, 2), LINATTN_ESIZE);
    ck_assert_int_eq(P(softmax)(ROW, 2, 3, BIG, 2, sc, qb, BIG, kb, BIG, vb, 2, ob, 2),
                     LINATTN_ESIZE);
    ck_assert(untouched());
}
END_TEST

/* The kernelized maps' options, the custom constructor, plan_weights,
 * state_shift: every -i, *plan and outputs untouched. */
START_TEST(map_errors)
{
    P(plan) *sentinel = (P(plan) *)&qb, *p = sentinel;
    linattn_opts o;
    linattn_opts_init(&o);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_CUSTOM, 3, 2, NULL), -2);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_CUSTOM + 1, 3, 2, NULL), -2);
    const double bad_scale[] = {-1, NAN, INFINITY};
    for (int i = 0; i < 3; i++) {
        o.input_scale = bad_scale[i];
        ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, 3, 2, &o), -5);
    }
    o.input_scale = 1; /* the exact maps take no input scale */
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), -5);
#ifdef TEST_SINGLE
    o.input_scale = 1e39; /* beyond float */
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_TAYLOR, 3, 2, &o), -5);
#endif
    linattn_opts_init(&o);
    o.draw = 3;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, 3, 2, &o), -5);
    o.draw = -1;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, 3, 2, &o), -5);
    linattn_opts_init(&o);
    o.m = 5; /* odd: the two-sided maps need m even */
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR_HYP, 3, 2, &o), -5);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_TRIG, 3, 2, &o), -5);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_TAYLOR, 3, 2, &o), -5);
    o.m = -2;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, 3, 2, &o), -5);
    o.m = BIG;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, 3, 2, &o), LINATTN_ESIZE);
    linattn_opts_init(&o); /* Taylor's m = 1 + d + d(d+1)/2 beyond BLAS */
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_TAYLOR, 70000, 2, &o),
                     LINATTN_ESIZE);
    ck_assert(p == sentinel);

    /* the custom constructor: W 2 x 3 */
    real w[6] = {1, 2, 3, 4, 5, 6}, b[2] = {0, 1};
    ck_assert_int_eq(P(plan_create_custom)(NULL, LINATTN_ACT_EXP, 3, 2, 2, ROW, w, 3, b, NULL), -1);
    ck_assert_int_eq(P(plan_create_custom)(&p, 0, 3, 2, 2, ROW, w, 3, b, NULL), -2);
    ck_assert_int_eq(P(plan_create_custom)(&p, 5, 3, 2, 2, ROW, w, 3, b, NULL), -2);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 0, 2, 2, ROW, w, 3, b, NULL), -3);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 0, 2, ROW, w, 3, b, NULL), -4);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_HEDGEHOG, 3, 3, 2, ROW, w, 3, b, NULL), -4);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 0, ROW, w, 3, b, NULL), -5);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, 7, w, 3, b, NULL), -6);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, ROW, NULL, 3, b, NULL), -7);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, ROW, w, 2, b, NULL), -8);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, COL, w, 1, b, NULL), -8);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, COL, w, HUGE_LD, b, NULL),
                     LINATTN_ESIZE);
    w[4] = (real)NAN;
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, ROW, w, 3, b, NULL), -7);
    w[4] = (real)INFINITY;
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_RELU, 3, 2, 2, ROW, w, 3, b, NULL), -7);
    w[4] = 5;
    b[1] = (real)NAN;
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, ROW, w, 3, b, NULL), -9);
    b[1] = 1;
    o.m = 3; /* opts.m must be 0 or m */
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, ROW, w, 3, b, &o), -10);
    linattn_opts_init(&o);
    o.eps = -1;
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, ROW, w, 3, b, &o), -10);
    linattn_opts_init(&o);
    o.input_scale = 1e300; /* s W beyond the working precision */
    w[0] = (real)1e30;
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, ROW, w, 3, b, &o), -10);
    w[0] = 1;
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, BIG, 2, 2, COL, w, 2, b, NULL),
                     LINATTN_ESIZE);
    ck_assert(p == sentinel);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 3, 2, 2, ROW, w, 3, NULL, NULL), 0);

    /* plan_weights: W is 2 x 3 */
    fill();
    int64_t rows = -7;
    ck_assert_int_eq(P(plan_weights)(NULL, ROW, ob, 3, &rows), -1);
    ck_assert_int_eq(P(plan_weights)(p, 0, ob, 3, &rows), -2);
    ck_assert_int_eq(P(plan_weights)(p, ROW, ob, 2, &rows), -4);
    ck_assert_int_eq(P(plan_weights)(p, COL, ob, 1, &rows), -4);
    ck_assert_int_eq(P(plan_weights)(p, COL, ob, HUGE_LD, &rows), LINATTN_ESIZE);
    ck_assert(untouched() && rows == -7);
    ck_assert_int_eq(P(plan_weights)(p, ROW, NULL, 0, &rows), 0);
    ck_assert_int_eq(rows, 2);

    /* state_shift */
    P(state) *st;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    double shift = -7;
    ck_assert_int_eq(P(state_shift)(NULL, &shift), -1);
    ck_assert_int_eq(P(state_shift)(st, NULL), -2);
    ck_assert(shift == -7);
    ck_assert_int_eq(P(state_shift)(st, &shift), 0);
    ck_assert(shift == 0);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

/* Allocation failure: with the address space capped, a state too large to
 * allocate gives LINATTN_ENOMEM and writes nothing. */
START_TEST(out_of_memory_reported)
{
    if (!address_cap_allowed())
        return;
    int64_t d = 8192, e = 8192; /* a state of m (e+1) = 64 Mi entries */
    P(plan) *p;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, d, e, NULL), 0);
    real *q = calloc((size_t)d, sizeof(real)), *v = calloc((size_t)e, sizeof(real));
    real *o = malloc((size_t)e * sizeof(real));
    for (int64_t i = 0; i < e; i++)
        o[i] = SENT;
    /* 128 MiB of address space on top of what the process maps now. */
    cap_address_space(128u << 20);
    P(state) *st = (P(state) *)&qb;
    ck_assert_int_eq(P(state_create)(&st, p), LINATTN_ENOMEM);
    ck_assert(st == (P(state) *)&qb);
    ck_assert_int_eq(P(attention)(p, ROW, 1, 1, q, d, q, d, v, e, o, e, NULL),
                     LINATTN_ENOMEM);
    for (int64_t i = 0; i < e; i++)
        ck_assert(o[i] == SENT);
    /* drawing W: the d x d Gaussian block of the QR (512 MiB) */
    linattn_opts opts;
    linattn_opts_init(&opts);
    opts.m = 2;
    P(plan) *fp = (P(plan) *)&qb;
    ck_assert_int_eq(P(plan_create)(&fp, LINATTN_MAP_FAVOR, d, 2, &opts),
                     LINATTN_ENOMEM);
    ck_assert(fp == (P(plan) *)&qb);
    free(q), free(v), free(o);
    P(plan_destroy)(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("errors " PREC);
    TCase *tc = tcase_create("errors");
    tcase_add_test(tc, plan_create_errors);
    tcase_add_test(tc, features_errors);
    tcase_add_test(tc, state_errors);
    tcase_add_loop_test(tc, attention_and_naive_errors, 0, 2);
    tcase_add_test(tc, softmax_errors);
    tcase_add_loop_test(tc, causal_errors, 0, 2);
    tcase_add_test(tc, map_errors);
    tcase_add_test(tc, out_of_memory_reported);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
