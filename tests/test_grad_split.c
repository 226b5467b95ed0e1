/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_grad_split.c -- a backward split where the state is handed over,
 * compiled once per precision, against the backward of the whole:
 *
 *   causal: tokens [0, n1) and [n1, n), the second piece's forward from
 *   the first's final state.  linattn_d_causal_backward_dstates of the
 *   second piece gives the gradient of that state (and must equal what
 *   linattn_d_causal_backward_ex writes in ex->dstates); handed to the
 *   first piece as ex->dstate_end, the pieces' dq, dk, dv concatenated
 *   and their dW, db summed are the whole sequence's.
 *
 *   non-causal: queries and keys in pieces around one shared state (the
 *   sum of the key pieces' states).  linattn_d_state_query_backward of
 *   each query piece gives its dq and d[S z]; their sum, brought to each
 *   key piece's own state's shift, as that piece's ex->dstate_end in
 *   linattn_d_attention_backward_ex with nq = 0 gives its dk, dv: all of
 *   them (dW, db summed) the whole call's.
 *
 * Maps: identity, elu+1, FAVOR (shifted), a custom EXP map (shifted, with
 * dW and db) and a custom elu+1 map; both layouts; pieces whose ends no
 * chunk or block divides.  Then the refusals of the new parts, with
 * nothing written.
 */
#include "testutil.h"

#define D 3
#define E 2
#define N 37
#define N1 14 /* the first piece: tokens [0, N1) */

typedef struct {
    int map, act; /* act: custom maps' */
    int64_t m;
} mcase;

static const mcase maps[] = {
    {LINATTN_MAP_IDENTITY, 0, 0},
    {LINATTN_MAP_ELU1, 0, 0},
    {LINATTN_MAP_FAVOR, 0, 8},
    {LINATTN_MAP_CUSTOM, LINATTN_ACT_EXP, 4},
    {LINATTN_MAP_CUSTOM, LINATTN_ACT_ELU1, 5},
};
#define NMAPS ((int)(sizeof maps / sizeof *maps))

static P(plan) *make_plan(const mcase *c, uint64_t *s)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 5;
    o.chunk = 4;
    o.seed = 7;
    P(plan) *p = NULL;
    if (c->map != LINATTN_MAP_CUSTOM) {
        o.m = c->m;
        ck_assert_int_eq(P(plan_create)(&p, c->map, D, E, &o), 0);
        return p;
    }
    real *w = test_rand_vec(c->m * D, -0.8, 0.8, s);
    real *b = test_rand_vec(c->m, -0.5, 0.5, s);
    ck_assert_int_eq(P(plan_create_custom)(&p, c->act, D, c->m, E, LINATTN_ROW_MAJOR,
                                           w, D, b, &o), 0);
    free(w), free(b);
    return p;
}

/* Row i of an n x cols matrix in layout with leading dimension ld. */
static real *at(real *x, int layout, int64_t ld, int64_t i)
{
    return layout == LINATTN_COL_MAJOR ? x + i : x + i * ld;
}

/* A matrix of n rows and cols columns (layout, leading dimension n + 2
 * or cols + 2) of uniform entries. */
static real *rmat_in(int layout, int64_t n, int64_t cols, int64_t *ld,
                     double lo, uint64_t *s)
{
    *ld = layout == LINATTN_COL_MAJOR ? n + 2 : cols + 2;
    int64_t len = layout == LINATTN_COL_MAJOR ? *ld * cols : *ld * n;
    return test_rand_vec(len, lo, 1, s);
}

static real *rmat(int layout, int64_t n, int64_t cols, int64_t *ld,
                  uint64_t *s)
{
    return rmat_in(layout, n, cols, ld, -1, s);
}

/* Queries and keys: positive, so that the identity map's normalizers
 * are too. */
static real *rpos(int layout, int64_t n, int64_t cols, int64_t *ld,
                  uint64_t *s)
{
    return rmat_in(layout, n, cols, ld, 0.05, s);
}

static int64_t mlen(int layout, int64_t n, int64_t cols)
{
    return layout == LINATTN_COL_MAJOR ? (n + 2) * cols : (cols + 2) * n;
}

/* Padding ignored: the entries of an n x cols matrix, relative. */
static double mdiff(const real *x, const real *y, int layout, int64_t n,
                    int64_t cols, int64_t ld)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t c = 0; c < cols; c++) {
            int64_t o = layout == LINATTN_COL_MAJOR ? i + c * ld : i * ld + c;
            num = fmax(num, fabs((double)x[o] - (double)y[o]));
            den = fmax(den, fabs((double)y[o]));
        }
    return den > 0 ? num / den : num;
}

/* A case's plan in a layout: its m, W's rows, whether it is trained (dW
 * and db asked for) and dW's leading dimension in the layout. */
typedef struct {
    P(plan) *p;
    int layout, trained;
    int64_t m, rows, ldw, len;
} setup;

static setup setup_of(int i, uint64_t *s)
{
    setup u;
    const mcase *c = &maps[i / 2];
    u.layout = i % 2 ? LINATTN_COL_MAJOR : LINATTN_ROW_MAJOR;
    u.p = make_plan(c, s);
    u.rows = 0;
    P(plan_dims)(u.p, NULL, &u.m, NULL);
    P(plan_weights)(u.p, LINATTN_ROW_MAJOR, NULL, 0, &u.rows);
    u.trained = c->map == LINATTN_MAP_CUSTOM;
    u.ldw = u.layout == LINATTN_COL_MAJOR ? u.rows : D;
    u.len = u.m * (E + 1);
    return u;
}

START_TEST(causal_concatenation)
{
    uint64_t s = 42 + (uint64_t)_i;
    setup u = setup_of(_i, &s);
    P(plan) *p = u.p;
    int layout = u.layout, trained = u.trained;
    int64_t rows = u.rows, ldw = u.ldw, len = u.len, ldq, ldk, ldv, ldg, ldo, lda;
    real *q = rpos(layout, N, D, &ldq, &s), *k = rpos(layout, N, D, &ldk, &s);
    real *v = rmat(layout, N, E, &ldv, &s), *g = rmat(layout, N, E, &ldg, &s);
    real *out = rmat(layout, N, E, &ldo, &s), *o2 = rmat(layout, N, E, &ldo, &s);
    real *den = calloc(N, sizeof(real)), *den2 = calloc(N, sizeof(real));
    real *dq = rmat(layout, N, D, &lda, &s), *dk = rmat(layout, N, D, &lda, &s);
    real *dv = rmat(layout, N, E, &ldv, &s);
    real *dq2 = calloc((size_t)mlen(layout, N, D), sizeof(real));
    real *dk2 = calloc((size_t)mlen(layout, N, D), sizeof(real));
    real *dv2 = calloc((size_t)mlen(layout, N, E), sizeof(real));
    int64_t wl = rows * D > 0 ? rows * D : 1;
    real *dw = calloc((size_t)wl, sizeof(real)), *db = calloc(16, sizeof(real));
    real *dwa = calloc((size_t)wl, sizeof(real)), *dba = calloc(16, sizeof(real));
    real *dwb = calloc((size_t)wl, sizeof(real)), *dbb = calloc(16, sizeof(real));
    double *dst = calloc((size_t)len, sizeof(double));
    double *dst2 = calloc((size_t)len, sizeof(double));
    /* the whole */
    ck_assert_int_eq(P(causal_forward)(p, layout, N, q, ldq, k, ldk, v, ldv,
                                       out, ldo, den, NULL), 0);
    ck_assert_int_eq(P(causal_backward)(p, layout, N, q, ldq, k, ldk, v, ldv,
                                        out, ldo, den, g, ldg, dq, lda, dk,
                                        lda, dv, ldv, trained ? dw : NULL, ldw,
                                        trained ? db : NULL, NULL), 0);
    /* the pieces' forwards: the first absorbed into st, the second from it */
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.state = st, ex.absorb = 1, ex.den = den2;
    ck_assert_int_eq(P(causal_ex)(p, layout, N1, q, ldq, k, ldk, v, ldv, o2,
                                  ldo, &ex, NULL), 0);
    ex.absorb = 0, ex.den = den2 + N1;
    ck_assert_int_eq(P(causal_ex)(p, layout, N - N1, at(q, layout, ldq, N1),
                                  ldq, at(k, layout, ldk, N1), ldk,
                                  at(v, layout, ldv, N1), ldv,
                                  at(o2, layout, ldo, N1), ldo, &ex, NULL), 0);
    ck_assert(vec_rel_diff(den2, den, N) < 100 * TOL);
    /* the second piece: the state's gradient alone, then with the rest */
    P(extras_init)(&ex);
    ex.state = st, ex.dstates = dst;
    ck_assert_int_eq(P(causal_backward_dstates)(p, layout, N - N1,
                                                at(q, layout, ldq, N1), ldq,
                                                at(k, layout, ldk, N1), ldk,
                                                at(o2, layout, ldo, N1), ldo,
                                                den2 + N1,
                                                at(g, layout, ldg, N1), ldg,
                                                &ex, NULL), 0);
    ex.dstates = dst2;
    ck_assert_int_eq(
        P(causal_backward_ex)(p, layout, N - N1, at(q, layout, ldq, N1), ldq,
                              at(k, layout, ldk, N1), ldk,
                              at(v, layout, ldv, N1), ldv,
                              at(o2, layout, ldo, N1), ldo, den2 + N1,
                              at(g, layout, ldg, N1), ldg,
                              at(dq2, layout, lda, N1), lda,
                              at(dk2, layout, lda, N1), lda,
                              at(dv2, layout, ldv, N1), ldv,
                              trained ? dwb : NULL, ldw, trained ? dbb : NULL,
                              &ex, NULL), 0);
    double dn = 0, dd = 0;
    for (int64_t i = 0; i < len; i++) {
        dn = fmax(dn, fabs(dst[i] - dst2[i]));
        dd = fmax(dd, fabs(dst2[i]));
    }
    ck_assert_msg(dn <= 100 * TOL * dd, "dstates %g of %g", dn, dd);
    /* the first piece, with the second's gradient of its final state */
    P(extras_init)(&ex);
    ex.dstate_end = dst;
    ck_assert_int_eq(P(causal_backward_ex)(p, layout, N1, q, ldq, k, ldk, v,
                                           ldv, o2, ldo, den2, g, ldg, dq2,
                                           lda, dk2, lda, dv2, ldv,
                                           trained ? dwa : NULL, ldw,
                                           trained ? dba : NULL, &ex, NULL),
                     0);
    double tol = 10 * TOL;
    ck_assert_msg(mdiff(dq2, dq, layout, N, D, lda) < tol, "dq %g",
                  mdiff(dq2, dq, layout, N, D, lda));
    ck_assert_msg(mdiff(dk2, dk, layout, N, D, lda) < tol, "dk %g",
                  mdiff(dk2, dk, layout, N, D, lda));
    ck_assert_msg(mdiff(dv2, dv, layout, N, E, ldv) < tol, "dv %g",
                  mdiff(dv2, dv, layout, N, E, ldv));
    for (int64_t i = 0; trained && i < rows * D; i++)
        dwa[i] += dwb[i];
    for (int64_t i = 0; trained && i < rows; i++)
        dba[i] += dbb[i];
    if (trained) {
        ck_assert_msg(vec_rel_diff(dwa, dw, rows * D) < tol, "dW %g",
                      vec_rel_diff(dwa, dw, rows * D));
        ck_assert_msg(vec_rel_diff(dba, db, rows) < tol, "db %g",
                      vec_rel_diff(dba, db, rows));
    }
    P(state_destroy)(st);
    P(plan_destroy)(p);
    free(q), free(k), free(v), free(g), free(out), free(o2), free(den);
    free(den2), free(dq), free(dk), free(dv), free(dq2), free(dk2);
    free(dv2), free(dw), free(db), free(dwa), free(dba), free(dwb);
    free(dbb), free(dst), free(dst2);
}
END_TEST

#define NQ 23
#define NK 19
#define NQ1 9  /* query pieces [0, NQ1), [NQ1, NQ) */
#define NK1 12 /* key pieces [0, NK1), [NK1, NK)   */

START_TEST(noncausal_split)
{
    uint64_t s = 99 + (uint64_t)_i;
    setup u = setup_of(_i, &s);
    P(plan) *p = u.p;
    int layout = u.layout, trained = u.trained;
    int64_t rows = u.rows, ldw = u.ldw, len = u.len, ldq, ldk, ldv, ldg, ldo, ldb, lde;
    real *q = rpos(layout, NQ, D, &ldq, &s), *k = rpos(layout, NK, D, &ldk, &s);
    real *v = rmat(layout, NK, E, &ldv, &s), *g = rmat(layout, NQ, E, &ldg, &s);
    real *out = rmat(layout, NQ, E, &ldo, &s);
    real *o2 = rmat(layout, NQ, E, &ldo, &s);
    real *den = calloc(NQ, sizeof(real)), *den2 = calloc(NQ, sizeof(real));
    real *dq = rmat(layout, NQ, D, &ldb, &s), *dq2 = rmat(layout, NQ, D, &ldb, &s);
    real *dk = rmat(layout, NK, D, &lde, &s), *dk2 = rmat(layout, NK, D, &lde, &s);
    real *dv = rmat(layout, NK, E, &ldv, &s), *dv2 = rmat(layout, NK, E, &ldv, &s);
    int64_t wl = rows * D > 0 ? rows * D : 1;
    real *dw = calloc((size_t)wl, sizeof(real)), *db = calloc(16, sizeof(real));
    real *dwp = calloc((size_t)wl, sizeof(real)), *dbp = calloc(16, sizeof(real));
    real *sw = calloc((size_t)wl, sizeof(real)), *sb = calloc(16, sizeof(real));
    double *d1 = calloc((size_t)len, sizeof(double));
    double *dsum = calloc((size_t)len, sizeof(double));
    double *dpiece = calloc((size_t)len, sizeof(double));
    ck_assert_int_eq(P(attention_forward)(p, layout, NQ, NK, q, ldq, k, ldk, v,
                                          ldv, out, ldo, den, NULL), 0);
    ck_assert_int_eq(P(attention_backward)(p, layout, NQ, NK, q, ldq, k, ldk,
                                           v, ldv, out, ldo, den, g, ldg, dq,
                                           ldb, dk, lde, dv, ldv,
                                           trained ? dw : NULL, ldw,
                                           trained ? db : NULL, NULL, NULL),
                     0);
    /* the shared state: the key pieces' states merged */
    P(state) *ka = NULL, *kb = NULL, *all = NULL;
    ck_assert_int_eq(P(state_create)(&ka, p), 0);
    ck_assert_int_eq(P(state_create)(&kb, p), 0);
    ck_assert_int_eq(P(state_create)(&all, p), 0);
    ck_assert_int_eq(P(state_update)(ka, layout, NK1, k, ldk, v, ldv), 0);
    ck_assert_int_eq(P(state_update)(kb, layout, NK - NK1,
                                     at(k, layout, ldk, NK1), ldk,
                                     at(v, layout, ldv, NK1), ldv), 0);
    ck_assert_int_eq(P(state_merge)(all, ka), 0);
    ck_assert_int_eq(P(state_merge)(all, kb), 0);
    const int64_t qlo[3] = {0, NQ1, NQ};
    for (int piece = 0; piece < 2; piece++) {
        int64_t lo = qlo[piece], n = qlo[piece + 1] - lo;
        ck_assert_int_eq(P(state_query)(all, layout, n, at(q, layout, ldq, lo),
                                        ldq, at(o2, layout, ldo, lo), ldo,
                                        NULL, 0, den2 + lo, NULL), 0);
        ck_assert_int_eq(P(state_query_backward)(
                             all, layout, n, at(q, layout, ldq, lo), ldq,
                             at(o2, layout, ldo, lo), ldo, den2 + lo,
                             at(g, layout, ldg, lo), ldg,
                             at(dq2, layout, ldb, lo), ldb,
                             trained ? dwp : NULL, ldw, trained ? dbp : NULL,
                             d1, NULL), 0);
        for (int64_t i = 0; i < len; i++)
            dsum[i] += d1[i];
        for (int64_t i = 0; trained && i < rows * D; i++)
            sw[i] += dwp[i];
        for (int64_t i = 0; trained && i < rows; i++)
            sb[i] += dbp[i];
    }
    /* the key pieces, each from the sum at its own state's shift */
    double sall = 0;
    P(state_shift)(all, &sall);
    P(state) *ks[2] = {ka, kb};
    const int64_t klo[3] = {0, NK1, NK};
    for (int piece = 0; piece < 2; piece++) {
        int64_t lo = klo[piece], n = klo[piece + 1] - lo;
        double sp = 0;
        P(state_shift)(ks[piece], &sp);
        for (int64_t i = 0; i < len; i++)
            dpiece[i] = dsum[i] * exp(sp - sall);
        P(extras) ex;
        P(extras_init)(&ex);
        ex.dstate_end = dpiece;
        ck_assert_int_eq(P(attention_backward_ex)(
                             p, layout, 0, n, NULL, ldq,
                             at(k, layout, ldk, lo), ldk,
                             at(v, layout, ldv, lo), ldv, NULL, ldo, NULL,
                             NULL, ldg, NULL, ldb, at(dk2, layout, lde, lo),
                             lde, at(dv2, layout, ldv, lo), ldv,
                             trained ? dwp : NULL, ldw, trained ? dbp : NULL,
                             piece ? kb : NULL, &ex, NULL), 0);
        for (int64_t i = 0; trained && i < rows * D; i++)
            sw[i] += dwp[i];
        for (int64_t i = 0; trained && i < rows; i++)
            sb[i] += dbp[i];
    }
    double tol = 10 * TOL;
    ck_assert_msg(vec_rel_diff(den2, den, NQ) < tol, "den");
    ck_assert_msg(mdiff(dq2, dq, layout, NQ, D, ldb) < tol, "dq %g",
                  mdiff(dq2, dq, layout, NQ, D, ldb));
    ck_assert_msg(mdiff(dk2, dk, layout, NK, D, lde) < tol, "dk %g",
                  mdiff(dk2, dk, layout, NK, D, lde));
    ck_assert_msg(mdiff(dv2, dv, layout, NK, E, ldv) < tol, "dv %g",
                  mdiff(dv2, dv, layout, NK, E, ldv));
    if (trained) {
        ck_assert_msg(vec_rel_diff(sw, dw, rows * D) < tol, "dW %g",
                      vec_rel_diff(sw, dw, rows * D));
        ck_assert_msg(vec_rel_diff(sb, db, rows) < tol, "db %g", vec_rel_diff(sb, db, rows));
    }
    P(state_destroy)(ka), P(state_destroy)(kb), P(state_destroy)(all);
    P(plan_destroy)(p);
    free(q), free(k), free(v), free(g), free(out), free(o2), free(den);
    free(den2), free(dq), free(dq2), free(dk), free(dk2), free(dv), free(dv2);
    free(dw), free(db), free(dwp), free(dbp), free(sw), free(sb);
    free(d1), free(dsum), free(dpiece);
}
END_TEST

/* The refusals of the new parts: the status, and nothing written. */
START_TEST(refusals)
{
    uint64_t s = 5;
    P(plan) *p = make_plan(&maps[1], &s);
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    int64_t len = m * (E + 1), n = 6;
    real *q = test_rand_vec(n * D, -1, 1, &s), *k = test_rand_vec(n * D, -1, 1, &s);
    real *v = test_rand_vec(n * E, -1, 1, &s), *g = test_rand_vec(n * E, -1, 1, &s);
    real *out = calloc((size_t)(n * E), sizeof(real));
    real *den = calloc((size_t)n, sizeof(real));
    real *dq = calloc((size_t)(n * D + len), sizeof(real));
    real *dk = calloc((size_t)(n * D), sizeof(real));
    real *dv = calloc((size_t)(n * E), sizeof(real));
    double *dst = calloc((size_t)len, sizeof(double));
    double *dend = calloc((size_t)len, sizeof(double));
    for (int64_t i = 0; i < len; i++)
        dend[i] = 0.25;
    ck_assert_int_eq(P(causal_forward)(p, LINATTN_ROW_MAJOR, n, q, D, k, D, v, E, out,
                                       E, den, NULL), 0);
    P(state) *st = NULL, *st2 = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    ck_assert_int_eq(P(state_update)(st, LINATTN_ROW_MAJOR, n, k, D, v, E), 0);
    P(extras) ex;
    /* causal_backward_dstates: ex NULL, no state, no dstates, a part it
     * does not take, dstates on the handed gradient, q NULL */
    for (int t = 0; t < 6; t++) {
        P(extras_init)(&ex);
        ex.state = t == 1 ? NULL : st;
        ex.dstates = t == 2 ? NULL : dst;
        ex.dweights = t == 3 ? dk : NULL;
        ex.dstate_end = t == 4 ? dst : NULL;
        ck_assert_int_eq(P(causal_backward_dstates)(p, LINATTN_ROW_MAJOR, n,
                                                    t == 5 ? NULL : q, D, k,
                                                    D, out, E, den, g, E,
                                                    t ? &ex : NULL, NULL),
                         t == 5 ? -4 : -13);
    }
    for (int64_t i = 0; i < len; i++)
        ck_assert(dst[i] == 0);
    /* dstate_end: meeting dq, with offsets, in a batched call */
    P(extras_init)(&ex);
    ex.dstate_end = (const double *)(void *)(dq + n * D - 1);
    ck_assert_int_eq(P(causal_backward_ex)(p, LINATTN_ROW_MAJOR, n, q, D, k, D, v, E,
                                           out, E, den, g, E, dq, D, dk, D, dv,
                                           E, NULL, D, NULL, &ex, NULL),
                     -24);
    ck_assert_int_eq(P(attention_backward_ex)(p, LINATTN_ROW_MAJOR, n, n, q, D, k, D,
                                              v, E, out, E, den, g, E, dq, D,
                                              dk, D, dv, E, NULL, D, NULL,
                                              NULL, &ex, NULL),
                     -26);
    const int64_t off[3] = {0, 2, 6};
    ex.dstate_end = dend, ex.offsets = off, ex.nseq = 2;
    ck_assert_int_eq(P(causal_backward_ex)(p, LINATTN_ROW_MAJOR, n, q, D, k, D, v, E,
                                           out, E, den, g, E, dq, D, dk, D, dv,
                                           E, NULL, D, NULL, &ex, NULL),
                     -24);
    ex.offsets = NULL, ex.nseq = 0;
    linattn_strides sq = {D, n * D, 0}, se = {E, n * E, 0};
    linattn_where bad;
    ck_assert_int_eq(P(batched_causal_backward_ex)(
                         p, LINATTN_ROW_MAJOR, 1, 1, n, q, &sq, k, &sq, v, &se, out,
                         &se, den, g, &se, dq, &sq, dk, &sq, dv, &se, NULL, D,
                         NULL, &ex, &bad),
                     -26);
    for (int64_t i = 0; i < n * D; i++)
        ck_assert(dq[i] == 0 && dk[i] == 0);
    /* state_query_backward: state NULL, dstate meeting dq */
    ck_assert_int_eq(P(state_query_backward)(NULL, LINATTN_ROW_MAJOR, n, q, D, out, E,
                                             den, g, E, dq, D, NULL, D, NULL,
                                             dst, NULL),
                     -1);
    ck_assert_int_eq(P(state_query_backward)(st, LINATTN_ROW_MAJOR, n, q, D, out, E,
                                             den, g, E, dq, D, NULL, D, NULL,
                                             (double *)(void *)dq, NULL),
                     -16);
    ck_assert_int_eq(P(state_query_backward)(st, LINATTN_ROW_MAJOR, n, q, D, out, E,
                                             den, g, E, NULL, D, NULL, D, NULL,
                                             dst, NULL),
                     -11);
    for (int64_t i = 0; i < n * D; i++)
        ck_assert(dq[i] == 0);
    for (int64_t i = 0; i < len; i++)
        ck_assert(dst[i] == 0);
    /* a state of another plan */
    P(plan) *p2 = make_plan(&maps[0], &s);
    ck_assert_int_eq(P(state_create)(&st2, p2), 0);
    P(extras_init)(&ex);
    ex.state = st2, ex.dstates = dst;
    ck_assert_int_eq(P(causal_backward_dstates)(p, LINATTN_ROW_MAJOR, n, q, D, k, D,
                                                out, E, den, g, E, &ex, NULL),
                     -13);
    P(state_destroy)(st), P(state_destroy)(st2);
    P(plan_destroy)(p), P(plan_destroy)(p2);
    free(q), free(k), free(v), free(g), free(out), free(den), free(dq);
    free(dk), free(dv), free(dst), free(dend);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("split backward (" PREC ")");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, causal_concatenation, 0, 2 * NMAPS);
    tcase_add_loop_test(tc, noncausal_split, 0, 2 * NMAPS);
    tcase_add_test(tc, refusals);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
