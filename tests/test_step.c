/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_step.c -- one decoding step of many streams
 * (linattn_d_states_step), compiled once per precision: against
 * linattn_d_state_update then linattn_d_state_query row by row on copies
 * of the states (bit for bit, several steps, both layouts, heads with
 * plans of their own), on one thread and on two; a row that fails leaves
 * the others done; every bad argument refused with nothing written and
 * no state changed.  The _ex form (a gate and a key weight per row):
 * against linattn_d_state_update_ex of each row then its query (bit for
 * bit, heads of their own gamma), against the recurrence token by token
 * in long double (identity, elu+1), gates of 0 as the plain step, a gate
 * of -1e3 as a new state, and every refusal of the extras before any
 * state changes.
 */
#include "testutil.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

/* A plan of map with the log decay ld (0: none). */
static P(plan) *decayed_plan(int map, int64_t d, int64_t e, uint64_t seed,
                             double ld, int check_finite)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.seed = seed;
    o.check_finite = check_finite;
    o.log_decay = ld;
    if (map == LINATTN_MAP_IDENTITY)
        o.denom = LINATTN_DENOM_POSITIVE;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

static P(plan) *plan_of(int map, int64_t d, int64_t e, uint64_t seed,
                        int check_finite)
{
    return decayed_plan(map, d, e, seed, 0, check_finite);
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

/* ---- states_step_ex: a gate (and a key weight) per row ---- */

/* The heads' plans of the gated tests: each its own gamma (two elu+1,
 * two FAVOR+ of their own seeds, one of each without decay). */
#define HEADS 4
static void heads_of(P(plan) **plans, int64_t d, int64_t e)
{
    plans[0] = decayed_plan(LINATTN_MAP_ELU1, d, e, 1, -0.1, 0);
    plans[1] = decayed_plan(LINATTN_MAP_FAVOR, d, e, 2, -0.01, 0);
    plans[2] = decayed_plan(LINATTN_MAP_FAVOR, d, e, 3, 0, 0);
    plans[3] = decayed_plan(LINATTN_MAP_ELU1, d, e, 4, 0, 0);
}

/* Gates for count rows: most in [-2, 0), some 0, some -1e-12, one -1e3
 * (a state that dies in one step). */
static real *gates_of(int64_t count, uint64_t *s)
{
    real *g = test_rand_vec(count, -2, 0, s);
    for (int64_t r = 0; r < count; r++)
        g[r] = r % 7 == 1 ? 0 : r % 7 == 3 ? (real)-1e-12 : g[r];
    g[count / 2] = (real)-1e3;
    return g;
}

/* Nonzero when the exported accumulators, shifts and tokens of two
 * states are the same bits. */
static int same_export(const P(state) *a, const P(state) *b, int64_t m,
                       int64_t e)
{
    double x[4096], y[4096], sa, sb;
    int64_t ta = -1, tb = -2;
    ck_assert_int_eq(P(state_export)(a, x, &sa, &ta), 0);
    ck_assert_int_eq(P(state_export)(b, y, &sb, &tb), 0);
    return ta == tb && !memcmp(&sa, &sb, sizeof sa) &&
           !memcmp(x, y, (size_t)(m * (e + 1)) * sizeof *x);
}

/* The heads' plans, count streams of them (a few tokens each) and a
 * copy of each stream. */
static void heads_and_copies(P(plan) **plans, P(state) **st, P(state) **ref,
                             int64_t count, int64_t d, int64_t e, uint64_t *s)
{
    heads_of(plans, d, e);
    states_of(st, count, plans, HEADS, d, e, s);
    for (int64_t r = 0; r < count; r++) {
        ck_assert_int_eq(P(state_create)(&ref[r], plans[r % HEADS]), 0);
        ck_assert_int_eq(P(state_copy)(ref[r], st[r]), 0);
    }
}

/* Each stream the same bits as its copy; then all of them freed. */
static void same_and_free(P(plan) **plans, P(state) **st, P(state) **ref,
                          int64_t count, int64_t e)
{
    for (int64_t r = 0; r < count; r++) {
        int64_t m;
        P(plan_dims)(plans[r % HEADS], NULL, &m, NULL);
        ck_assert(same_export(st[r], ref[r], m, e));
        P(state_destroy)(st[r]);
        P(state_destroy)(ref[r]);
    }
    for (int i = 0; i < HEADS; i++)
        P(plan_destroy)(plans[i]);
}

/* Every row of states_step is state_update of that row then
 * state_query, and of states_step_ex state_update_ex of it with its gate
 * (and weight), bit for bit (outputs and states): heads of their own
 * gamma and map, several steps, both layouts, one thread and two; form
 * 0 the plain step, 1 gates, 2 gates and key weights (the rows of weight
 * 0 hold NaN keys and values: never read). */
START_TEST(step_is_update_then_query)
{
    int layout = _i % 2 ? COL : ROW, threads = 1 + (_i / 2) % 2;
    int form = _i / 4, weighted = form == 2;
    int64_t d = 6, e = 5, count = 40, steps = 4;
    uint64_t s = 3 + (uint64_t)_i;
    P(plan) *plans[HEADS];
    P(state) *st[40], *ref[40];
    heads_and_copies(plans, st, ref, count, d, e, &s);
    set_threads(threads);
    for (int64_t step = 0; step < steps; step++) {
        tmat q = tmat_rand(layout, count, d, 2, -1, 1, &s);
        tmat k = tmat_rand(layout, count, d, 1, -1, 1, &s);
        tmat v = tmat_rand(layout, count, e, 0, -1, 1, &s);
        tmat out = tmat_like(&q, count, e, 3), want = tmat_like(&q, count, e, 3);
        real *g = gates_of(count, &s), *w = test_rand_vec(count, 0, 2, &s);
        for (int64_t r = 5; weighted && r < count; r += 9) {
            w[r] = 0;
            *tmat_at(&k, r, 1) = *tmat_at(&v, r, 0) = (real)NAN;
        }
        P(extras) ex;
        P(extras_init)(&ex);
        ex.gates = g;
        ex.weights = weighted ? w : NULL;
        int64_t bad = -4;
        ck_assert_int_eq(
            form ? P(states_step_ex)(st, count, layout, q.a, q.ld, k.a, k.ld,
                                     v.a, v.ld, out.a, out.ld, &ex, &bad)
                 : P(states_step)(st, count, layout, q.a, q.ld, k.a, k.ld,
                                  v.a, v.ld, out.a, out.ld, &bad),
            0);
        ck_assert_int_eq(bad, -4);
        for (int64_t r = 0; r < count; r++) {
            P(extras) one; /* form 0: as linattn_d_extras_init leaves it */
            P(extras_init)(&one);
            one.gates = form ? g + r : NULL;
            one.weights = weighted ? w + r : NULL;
            ck_assert_int_eq(P(state_update_ex)(ref[r], layout, 1,
                                                tmat_at(&k, r, 0), k.ld,
                                                tmat_at(&v, r, 0), v.ld,
                                                &one), 0);
            ck_assert_int_eq(P(state_query)(ref[r], layout, 1,
                                            tmat_at(&q, r, 0), q.ld,
                                            tmat_at(&want, r, 0), want.ld,
                                            NULL, 1, NULL, NULL), 0);
        }
        for (int64_t r = 0; r < count; r++)
            for (int64_t c = 0; c < e; c++)
                ck_assert_msg(!memcmp(tmat_at(&out, r, c),
                                      tmat_at(&want, r, c), sizeof(real)),
                              "row %d column %d", (int)r, (int)c);
        ck_assert(tmat_padding_intact(&out));
        free(g), free(w);
        tmat_free(&q), tmat_free(&k), tmat_free(&v);
        tmat_free(&out), tmat_free(&want);
    }
    set_threads(2);
    same_and_free(plans, st, ref, count, e);
}
END_TEST

/* Gates of 0 (on undecayed and decayed plans), extras all absent and ex
 * NULL: states_step's bits, outputs and states. */
START_TEST(zero_gates_are_the_plain_step)
{
    int layout = _i % 2 ? COL : ROW;
    int64_t d = 4, e = 3, count = 12;
    uint64_t s = 29 + (uint64_t)_i;
    P(plan) *plans[HEADS];
    P(state) *st[12], *ref[12];
    heads_and_copies(plans, st, ref, count, d, e, &s);
    real g[12] = {0};
    P(extras) ex;
    P(extras_init)(&ex);
    for (int form = 0; form < 3; form++) {
        ex.gates = form == 0 ? g : NULL;
        tmat q = tmat_rand(layout, count, d, 1, -1, 1, &s);
        tmat k = tmat_rand(layout, count, d, 0, -1, 1, &s);
        tmat v = tmat_rand(layout, count, e, 2, -1, 1, &s);
        tmat out = tmat_like(&q, count, e, 1), want = tmat_like(&q, count, e, 1);
        ck_assert_int_eq(P(states_step_ex)(st, count, layout, q.a, q.ld, k.a,
                                           k.ld, v.a, v.ld, out.a, out.ld,
                                           form == 2 ? NULL : &ex, NULL), 0);
        ck_assert_int_eq(P(states_step)(ref, count, layout, q.a, q.ld, k.a,
                                        k.ld, v.a, v.ld, want.a, want.ld,
                                        NULL), 0);
        size_t len = (size_t)((layout == COL ? e : count) * out.ld);
        ck_assert(!memcmp(out.a, want.a, len * sizeof(real)));
        tmat_free(&q), tmat_free(&k), tmat_free(&v);
        tmat_free(&out), tmat_free(&want);
    }
    same_and_free(plans, st, ref, count, e);
}
END_TEST

/* Against the recurrence written from the formula, token by token in
 * long double: S = exp(ln gamma + g_t) S + phi(k_t) v_t^T, z likewise,
 * out_t = phi(q_t)^T S / (phi(q_t)^T z + eps), for the identity and
 * elu+1 maps; streams of their own gamma, T steps of one token each,
 * gates in [-2, 0) with -1e-12 and -1e3 among them. */
START_TEST(gated_step_against_recurrence)
{
    int map = _i % 2 ? LINATTN_MAP_IDENTITY : LINATTN_MAP_ELU1;
    int layout = _i / 2 ? COL : ROW;
    enum { NS = 6, T = 9, DD = 3, EE = 2 };
    double lo = map == LINATTN_MAP_IDENTITY ? 0.05 : -2, hi = 1;
    const double lg[NS] = {0, -0.05, -0.5, 0, -1e-9, -0.2};
    const double eps = 1e-3;
    uint64_t s = 41 + (uint64_t)_i;
    P(plan) *plans[NS];
    P(state) *st[NS];
    for (int r = 0; r < NS; r++) {
        linattn_opts o;
        linattn_opts_init(&o);
        o.log_decay = lg[r];
        o.eps = eps;
        ck_assert_int_eq(P(plan_create)(&plans[r], map, DD, EE, &o), 0);
        ck_assert_int_eq(P(state_create)(&st[r], plans[r]), 0);
    }
    long double S[NS][DD][EE] = {{{0}}}, z[NS][DD] = {{0}};
    double worst = 0;
    for (int t = 0; t < T; t++) {
        tmat q = tmat_rand(layout, NS, DD, 1, lo, hi, &s);
        tmat k = tmat_rand(layout, NS, DD, 0, lo, hi, &s);
        tmat v = tmat_rand(layout, NS, EE, 1, -1, 1, &s);
        tmat out = tmat_like(&q, NS, EE, 0);
        real *g = test_rand_vec(NS, -2, 0, &s);
        g[t % NS] = (real)-1e-12;
        if (t == 4)
            g[2] = (real)-1e3;
        P(extras) ex;
        P(extras_init)(&ex);
        ex.gates = g;
        ck_assert_int_eq(P(states_step_ex)(st, NS, layout, q.a, q.ld, k.a,
                                           k.ld, v.a, v.ld, out.a, out.ld,
                                           &ex, NULL), 0);
        for (int r = 0; r < NS; r++) {
            long double f = expl((long double)lg[r] + (long double)g[r]);
            long double pk[DD], pq[DD], den = eps;
            for (int i = 0; i < DD; i++) {
                pk[i] = ref_phi(map, *tmat_at(&k, r, i));
                pq[i] = ref_phi(map, *tmat_at(&q, r, i));
                z[r][i] = f * z[r][i] + pk[i];
                for (int c = 0; c < EE; c++)
                    S[r][i][c] = f * S[r][i][c] + pk[i] * *tmat_at(&v, r, c);
                den += pq[i] * z[r][i];
            }
            for (int c = 0; c < EE; c++) {
                long double num = 0;
                for (int i = 0; i < DD; i++)
                    num += pq[i] * S[r][i][c];
                long double want = num / den;
                double err = (double)fabsl(*tmat_at(&out, r, c) - want) /
                             (double)(fabsl(want) > 1 ? fabsl(want) : 1);
                worst = err > worst ? err : worst;
            }
        }
        free(g);
        tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    }
    ck_assert_msg(worst < TOL * (10 + T), "map %d: %g", map, worst);
    for (int r = 0; r < NS; r++) {
        P(state_destroy)(st[r]);
        P(plan_destroy)(plans[r]);
    }
}
END_TEST

/* A gate of -1e3 forgets everything: the step answers as a new state
 * given the row's token alone, bit for bit. */
START_TEST(gate_kills_state)
{
    int64_t d = 3, e = 2, count = 3;
    uint64_t s = 53;
    P(plan) *p = decayed_plan(LINATTN_MAP_ELU1, d, e, 1, -0.3, 0);
    P(plan) *plans[1] = {p};
    P(state) *st[3], *fresh[3];
    states_of(st, count, plans, 1, d, e, &s);
    tmat q = tmat_rand(ROW, count, d, 0, -1, 1, &s);
    tmat k = tmat_rand(ROW, count, d, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, count, e, 0, -1, 1, &s);
    tmat out = tmat_like(&q, count, e, 0), want = tmat_like(&q, count, e, 0);
    real g[3] = {(real)-1e3, (real)-1e3, (real)-1e3};
    P(extras) ex;
    P(extras_init)(&ex);
    ex.gates = g;
    for (int r = 0; r < count; r++)
        ck_assert_int_eq(P(state_create)(&fresh[r], p), 0);
    ck_assert_int_eq(P(states_step_ex)(st, count, ROW, q.a, q.ld, k.a, k.ld,
                                       v.a, v.ld, out.a, out.ld, &ex, NULL),
                     0);
    ck_assert_int_eq(P(states_step)(fresh, count, ROW, q.a, q.ld, k.a, k.ld,
                                    v.a, v.ld, want.a, want.ld, NULL), 0);
    ck_assert(!memcmp(out.a, want.a, (size_t)(count * e) * sizeof(real)));
    for (int r = 0; r < count; r++) {
        P(state_destroy)(st[r]);
        P(state_destroy)(fresh[r]);
    }
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
    tmat_free(&out), tmat_free(&want);
    P(plan_destroy)(p);
}
END_TEST

/* Every refusal of the extras writes nothing and changes no state (the
 * exported bytes of every state, the offending row the last one: all
 * rows are checked before any state changes); a NaN gate without
 * check_finite propagates as state_update_ex does. */
START_TEST(bad_gated_step_refused)
{
    int64_t d = 3, e = 2, count = 3, m;
    uint64_t s = 61;
    P(plan) *p = decayed_plan(LINATTN_MAP_ELU1, d, e, 1, -0.2, 0);
    P(plan) *careful = decayed_plan(LINATTN_MAP_ELU1, d, e, 1, -0.2, 1);
    P(plan_dims)(p, NULL, &m, NULL);
    P(plan) *plans[1] = {p};
    P(state) *st[3], *before[3], *c = NULL;
    states_of(st, count, plans, 1, d, e, &s);
    ck_assert_int_eq(P(state_create)(&c, careful), 0);
    for (int r = 0; r < count; r++) {
        ck_assert_int_eq(P(state_create)(&before[r], p), 0);
        ck_assert_int_eq(P(state_copy)(before[r], st[r]), 0);
    }
    real q[9], k[9], v[6], out[6], g[3] = {-1, -0.5, -0.25}, w[3] = {1, 1, 1};
    for (int i = 0; i < 9; i++)
        q[i] = k[i] = (real)(0.1 * i);
    for (int i = 0; i < 6; i++)
        v[i] = (real)i, out[i] = 7;
    real den[3];
    double dstate_end[64] = {0}, hd[1] = {0};
    int64_t offsets[2] = {0, 3}, bad = -9;
    P(state) *careful3[3] = {st[0], st[1], c};
    P(extras) ex;
#define STEPX(states)                                                         \
    P(states_step_ex)(states, count, ROW, q, d, k, d, v, e, out, e, &ex, &bad)
    enum { CASES = 21 };
    for (int cs = 0; cs < CASES; cs++) {
        P(extras_init)(&ex);
        ex.gates = g;
        ex.weights = w;
        int want = -12;
        P(state) **use = st;
        switch (cs) {
        case 0: g[2] = (real)0.5; break;
        case 1: g[2] = (real)INFINITY; break;
        case 2: ex.reserved_int[0] = 1; break;
        case 3: ex.reserved_ptr[0] = &bad; break;
        case 4: ex.reserved[14] = 1; break;
        case 5: ex.den = den; break;
        case 6: ex.state = c; break;
        case 7: ex.absorb = 1; break;
        case 8: ex.offsets = offsets, ex.nseq = 1; break;
        case 9: ex.states = careful3; break;
        case 10: ex.head_decays = hd; break;
        case 11: ex.dstate_end = dstate_end; break;
        case 12: ex.dgates = den; break;
        case 18: ex.dweights = den; break;
        case 19: ex.dstates = dstate_end; break;
        case 13: w[2] = -1; break;
        case 14: w[2] = (real)NAN; break;
        case 15: ex.weights = out; want = -10; break; /* out meets them */
        case 20: ex.gates = out; break; /* a part after out: its position */
        case 16: g[2] = (real)NAN, use = careful3, want = LINATTN_ENONFINITE;
                 break;
        case 17: g[2] = (real)-INFINITY, use = careful3,
                 want = LINATTN_ENONFINITE;
                 break;
        default: break;
        }
        int got_cs = STEPX(use);
        ck_assert_msg(got_cs == want, "case %d: %d", cs, got_cs);
        g[2] = (real)-0.25, w[2] = 1;
        ck_assert_int_eq(bad, -9);
        for (int i = 0; i < 6; i++)
            ck_assert(out[i] == 7);
        for (int r = 0; r < count; r++)
            ck_assert_msg(same_export(st[r], before[r], m, e), "case %d", cs);
        int64_t tokens = -1;
        P(state_get)(c, ROW, NULL, 1, NULL, &tokens);
        ck_assert_int_eq(tokens, 0);
    }
    /* without check_finite a NaN gate propagates as state_update_ex's:
     * the same status, the rows before done */
    P(extras_init)(&ex);
    ex.gates = g;
    g[1] = (real)NAN;
    int got = STEPX(st);
    P(extras) one;
    P(extras_init)(&one);
    int want = 0;
    real row[2];
    for (int r = 0; r < count; r++) {
        one.gates = g + r;
        int st_r = P(state_update_ex)(before[r], ROW, 1, k + r * d, d,
                                      v + r * e, e, &one);
        if (!st_r)
            st_r = P(state_query)(before[r], ROW, 1, q + r * d, d, row, e,
                                  NULL, 1, NULL, NULL);
        if (st_r && !want)
            want = st_r;
        if (!st_r)
            ck_assert(!memcmp(row, out + r * e, sizeof row));
        ck_assert(same_export(st[r], before[r], m, e));
    }
    ck_assert_int_eq(got, want);
    if (got)
        ck_assert_int_eq(bad, 1);
#undef STEPX
    for (int r = 0; r < count; r++) {
        P(state_destroy)(st[r]);
        P(state_destroy)(before[r]);
    }
    P(state_destroy)(c);
    P(plan_destroy)(p);
    P(plan_destroy)(careful);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("step " PREC);
    TCase *tc = tcase_create("step");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, step_is_update_then_query, 0, 12);
    tcase_add_test(tc, failing_row_leaves_others_done);
    tcase_add_test(tc, bad_step_refused);
    tcase_add_loop_test(tc, zero_gates_are_the_plain_step, 0, 2);
    tcase_add_loop_test(tc, gated_step_against_recurrence, 0, 4);
    tcase_add_test(tc, gate_kills_state);
    tcase_add_test(tc, bad_gated_step_refused);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
