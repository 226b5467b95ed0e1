/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_step.c -- one decoding step of many streams
 * (linattn_d_states_step), compiled once per precision: against
 * linattn_d_state_update then linattn_d_state_query row by row on copies
 * of the states (bit for bit, several steps, both layouts, heads with
 * plans of their own), on one thread and on two; a row that fails leaves
 * the others done; every bad argument refused with nothing written and
 * no state changed.
 */
#include "testutil.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

static P(plan) *plan_of(int map, int64_t d, int64_t e, uint64_t seed,
                        int check_finite)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.seed = seed;
    o.check_finite = check_finite;
    if (map == LINATTN_MAP_IDENTITY)
        o.denom = LINATTN_DENOM_POSITIVE;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* count states, stream r of plan plans[r % nplans], each holding a few
 * tokens already. */
static void states_of(P(state) **st, int64_t count, P(plan) *const *plans,
                      int nplans, int64_t d, int64_t e, uint64_t *s)
{
    for (int64_t r = 0; r < count; r++) {
        ck_assert_int_eq(P(state_create)(&st[r], plans[r % nplans]), 0);
        tmat k = tmat_rand(ROW, 3, d, 0, -1, 1, s);
        tmat v = tmat_rand(ROW, 3, e, 0, -1, 1, s);
        ck_assert_int_eq(P(state_update)(st[r], ROW, 1 + r % 3, k.a, k.ld,
                                         v.a, v.ld), 0);
        tmat_free(&k);
        tmat_free(&v);
    }
}

static void set_threads(int t)
{
#ifdef _OPENMP
    omp_set_num_threads(t);
#else
    (void)t;
#endif
}

/* Nonzero when two states hold the same bits and tokens. */
static int same_state(const P(state) *a, const P(state) *b, int64_t m,
                      int64_t e)
{
    real sa[4096], sb[4096];
    int64_t ta = -1, tb = -2;
    ck_assert_int_eq(P(state_get)(a, ROW, sa, e, sa + m * e, &ta), 0);
    ck_assert_int_eq(P(state_get)(b, ROW, sb, e, sb + m * e, &tb), 0);
    return ta == tb && !memcmp(sa, sb, (size_t)(m * e + m) * sizeof(real));
}

START_TEST(step_is_update_then_query)
{
    int layout = _i % 2 ? COL : ROW, threads = 1 + _i / 2;
    int64_t d = 6, e = 5, count = 40, steps = 4;
    uint64_t s = 3 + (uint64_t)(_i % 2);
    /* four heads, each its own plan (FAVOR+ with seeds of their own) */
    P(plan) *plans[4] = {plan_of(LINATTN_MAP_ELU1, d, e, 1, 0),
                         plan_of(LINATTN_MAP_FAVOR, d, e, 2, 0),
                         plan_of(LINATTN_MAP_FAVOR, d, e, 3, 0),
                         plan_of(LINATTN_MAP_ELU1, d, e, 4, 0)};
    P(state) *st[40], *ref[40];
    states_of(st, count, plans, 4, d, e, &s);
    for (int64_t r = 0; r < count; r++) {
        ck_assert_int_eq(P(state_create)(&ref[r], plans[r % 4]), 0);
        ck_assert_int_eq(P(state_copy)(ref[r], st[r]), 0);
    }
    set_threads(threads);
    for (int64_t step = 0; step < steps; step++) {
        tmat q = tmat_rand(layout, count, d, 2, -1, 1, &s);
        tmat k = tmat_rand(layout, count, d, 1, -1, 1, &s);
        tmat v = tmat_rand(layout, count, e, 0, -1, 1, &s);
        tmat out = tmat_like(&q, count, e, 3), want = tmat_like(&q, count, e, 3);
        int64_t bad = -4;
        ck_assert_int_eq(P(states_step)(st, count, layout, q.a, q.ld, k.a,
                                        k.ld, v.a, v.ld, out.a, out.ld, &bad),
                         0);
        ck_assert_int_eq(bad, -4);
        for (int64_t r = 0; r < count; r++) {
            real *kr = tmat_at(&k, r, 0), *vr = tmat_at(&v, r, 0);
            real *qr = tmat_at(&q, r, 0), *wr = tmat_at(&want, r, 0);
            ck_assert_int_eq(P(state_update)(ref[r], layout, 1, kr, k.ld, vr,
                                             v.ld), 0);
            ck_assert_int_eq(P(state_query)(ref[r], layout, 1, qr, q.ld, wr,
                                            want.ld, NULL, 1, NULL, NULL), 0);
        }
        for (int64_t r = 0; r < count; r++)
            for (int64_t c = 0; c < e; c++)
                ck_assert(!memcmp(tmat_at(&out, r, c), tmat_at(&want, r, c),
                                  sizeof(real)));
        ck_assert(tmat_padding_intact(&out));
        tmat_free(&q);
        tmat_free(&k);
        tmat_free(&v);
        tmat_free(&out);
        tmat_free(&want);
    }
    set_threads(2);
    for (int64_t r = 0; r < count; r++) {
        int64_t m;
        P(plan_dims)(plans[r % 4], NULL, &m, NULL);
        ck_assert(same_state(st[r], ref[r], m, e));
        P(state_destroy)(st[r]);
        P(state_destroy)(ref[r]);
    }
    for (int i = 0; i < 4; i++)
        P(plan_destroy)(plans[i]);
}
END_TEST

/* Row 2's query has a normalizer <= 0 (the identity map under POSITIVE):
 * LINATTN_EDENOM at row 2, its state advanced and its out row as it was;
 * the rows after it done. */
START_TEST(failing_row_leaves_others_done)
{
    int64_t d = 2, e = 2, count = 4;
    P(plan) *p = plan_of(LINATTN_MAP_IDENTITY, d, e, 1, 0);
    P(state) *st[4];
    for (int r = 0; r < 4; r++)
        ck_assert_int_eq(P(state_create)(&st[r], p), 0);
    real q[8] = {1, 1, 1, 1, -1, -1, 1, 1};
    real k[8] = {1, 0, 0, 1, 1, 1, 2, 1};
    real v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    real out[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    int64_t bad = -1;
    ck_assert_int_eq(P(states_step)(st, count, ROW, q, d, k, d, v, e, out, e,
                                    &bad), LINATTN_EDENOM);
    ck_assert_int_eq(bad, 2);
    /* one key each: out_r = v_r whenever q_r . k_r > 0 */
    for (int r = 0; r < 4; r++) {
        int64_t tokens = -1;
        ck_assert_int_eq(P(state_get)(st[r], ROW, NULL, 1, NULL, &tokens), 0);
        ck_assert_int_eq(tokens, 1);
        for (int c = 0; c < 2; c++)
            ck_assert(out[2 * r + c] == (r == 2 ? 9 : v[2 * r + c]));
    }
    for (int r = 0; r < 4; r++)
        P(state_destroy)(st[r]);
    P(plan_destroy)(p);
}
END_TEST

START_TEST(bad_step_refused)
{
    int64_t d = 3, e = 2;
    uint64_t s = 5;
    P(plan) *p = plan_of(LINATTN_MAP_ELU1, d, e, 1, 0);
    P(plan) *wide = plan_of(LINATTN_MAP_ELU1, d, e + 1, 1, 0);
    P(plan) *careful = plan_of(LINATTN_MAP_ELU1, d, e, 1, 1);
    P(state) *st[3], *w = NULL, *c = NULL;
    P(plan) *plans[1] = {p};
    states_of(st, 3, plans, 1, d, e, &s);
    ck_assert_int_eq(P(state_create)(&w, wide), 0);
    ck_assert_int_eq(P(state_create)(&c, careful), 0);
    real q[9], k[9], v[6], out[6];
    for (int i = 0; i < 9; i++)
        q[i] = k[i] = (real)(0.1 * i);
    for (int i = 0; i < 6; i++)
        v[i] = (real)i, out[i] = 7;
    P(state) *withnull[3] = {st[0], NULL, st[2]};
    P(state) *mixed[3] = {st[0], w, st[2]};
    P(state) *twice[3] = {st[0], st[1], st[0]};
    P(state) *careful3[3] = {st[0], c, st[2]};
    int64_t bad = -9;
#define STEP(states, count, lay, qq, ldq, kk, ldk, vv, ldv, oo, ldo)          \
    P(states_step)(states, count, lay, qq, ldq, kk, ldk, vv, ldv, oo, ldo, &bad)
    ck_assert_int_eq(STEP(st, -1, ROW, q, d, k, d, v, e, out, e), -2);
    ck_assert_int_eq(STEP(NULL, 3, ROW, q, d, k, d, v, e, out, e), -1);
    ck_assert_int_eq(STEP(withnull, 3, ROW, q, d, k, d, v, e, out, e), -1);
    ck_assert_int_eq(STEP(mixed, 3, ROW, q, d, k, d, v, e, out, e), -1);
    ck_assert_int_eq(STEP(twice, 3, ROW, q, d, k, d, v, e, out, e), -1);
    ck_assert_int_eq(STEP(st, 3, 7, q, d, k, d, v, e, out, e), -3);
    ck_assert_int_eq(STEP(st, 3, ROW, NULL, d, k, d, v, e, out, e), -4);
    ck_assert_int_eq(STEP(st, 3, ROW, q, d - 1, k, d, v, e, out, e), -5);
    ck_assert_int_eq(STEP(st, 3, ROW, q, d, NULL, d, v, e, out, e), -6);
    ck_assert_int_eq(STEP(st, 3, ROW, q, d, k, 0, v, e, out, e), -7);
    ck_assert_int_eq(STEP(st, 3, ROW, q, d, k, d, NULL, e, out, e), -8);
    ck_assert_int_eq(STEP(st, 3, ROW, q, d, k, d, v, 1, out, e), -9);
    ck_assert_int_eq(STEP(st, 3, ROW, q, d, k, d, v, e, NULL, e), -10);
    ck_assert_int_eq(STEP(st, 3, ROW, q, d, k, d, v, e, v, e), -10);
    ck_assert_int_eq(STEP(st, 3, ROW, q, d, k, d, v, e, out, 1), -11);
    /* check_finite of the state's plan: its row only */
    k[4] = (real)NAN;
    ck_assert_int_eq(STEP(careful3, 3, ROW, q, d, k, d, v, e, out, e),
                     LINATTN_ENONFINITE);
    k[4] = 0;
    ck_assert_int_eq(bad, -9);
    for (int i = 0; i < 6; i++)
        ck_assert(out[i] == 7);
    for (int r = 0; r < 3; r++) {
        int64_t tokens = -1;
        ck_assert_int_eq(P(state_get)(st[r], ROW, NULL, 1, NULL, &tokens), 0);
        ck_assert_int_eq(tokens, 1 + r % 3);
    }
    /* nothing to do without streams; the marks were cleared: a good step */
    ck_assert_int_eq(STEP(NULL, 0, ROW, NULL, 1, NULL, 1, NULL, 1, NULL, 1),
                     0);
    ck_assert_int_eq(STEP(twice + 1, 2, ROW, q, d, k, d, v, e, out, e), 0);
#undef STEP
    for (int r = 0; r < 3; r++)
        P(state_destroy)(st[r]);
    P(state_destroy)(w);
    P(state_destroy)(c);
    P(plan_destroy)(p);
    P(plan_destroy)(wide);
    P(plan_destroy)(careful);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("step " PREC);
    TCase *tc = tcase_create("step");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, step_is_update_then_query, 0, 4);
    tcase_add_test(tc, failing_row_leaves_others_done);
    tcase_add_test(tc, bad_step_refused);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
