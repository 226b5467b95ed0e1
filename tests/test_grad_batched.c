/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_grad_batched.c -- the batched training calls, compiled once per
 * precision: forward (out, den) and backward (dq, dk, dv) bit for bit the
 * single calls run problem by problem, whole buffers with their gaps; dW
 * and db the sums of the single calls' to rounding; one case against the
 * long double reference of gradref.h; EDENOM with its problem and row,
 * non-finite inputs, overlapping outputs and every argument error, with
 * nothing written.
 */
#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "testutil.h"
#include "tbat.h"
#include "refmaps.h"
#include "gradref.h"

/* One batched problem set: inputs, the forward's out and den, G, the
 * gradients, dW and db. */
typedef struct {
    int layout;
    int64_t batch, heads, nq, nk, rows;
    tbat q, k, v, out, g, dq, dk, dv;
    real *den, *dw, *db;
} bset;

static bset bset_new(const P(plan) *p, int geometry, int layout, int64_t B,
                     int64_t H, int64_t nq, int64_t nk, uint64_t seed)
{
    int64_t d, e;
    P(plan_dims)(p, &d, NULL, &e);
    bset s;
    memset(&s, 0, sizeof s);
    s.layout = layout, s.batch = B, s.heads = H, s.nq = nq, s.nk = nk;
    s.q = tbat_rand(geometry, layout, B, H, nq, d, -1, 1, &seed);
    s.k = tbat_rand(geometry, layout, B, H, nk, d, -1, 1, &seed);
    s.v = tbat_rand(geometry, layout, B, H, nk, e, -1, 1, &seed);
    int og = geometry == SHARED ? CONTIG : geometry; /* outputs not shared */
    s.g = tbat_rand(og, layout, B, H, nq, e, -1, 1, &seed);
    s.out = tbat_new(og, layout, B, H, nq, e);
    s.dq = tbat_new(og, layout, B, H, nq, d);
    s.dk = tbat_new(og, layout, B, H, nk, d);
    s.dv = tbat_new(og, layout, B, H, nk, e);
    P(plan_weights)(p, ROW, NULL, 0, &s.rows);
    s.den = malloc((size_t)(B * H * nq + 1) * sizeof(real));
    for (int64_t i = 0; i < B * H * nq + 1; i++)
        s.den[i] = SENT;
    s.dw = malloc((size_t)(s.rows * d + 1) * sizeof(real));
    s.db = malloc((size_t)(s.rows + 1) * sizeof(real));
    for (int64_t i = 0; i < s.rows * d + 1; i++)
        s.dw[i] = SENT;
    for (int64_t i = 0; i < s.rows + 1; i++)
        s.db[i] = SENT;
    return s;
}

static void bset_free(bset *s)
{
    tbat_free(&s->q), tbat_free(&s->k), tbat_free(&s->v), tbat_free(&s->g);
    tbat_free(&s->out), tbat_free(&s->dq), tbat_free(&s->dk);
    tbat_free(&s->dv);
    free(s->den), free(s->dw), free(s->db);
}

static int batched_forward(const P(plan) *p, int causal, bset *s,
                           linattn_where *bad)
{
    if (causal)
        return P(batched_causal_forward)(p, s->layout, s->batch, s->heads,
                                         s->nq, s->q.a, &s->q.s, s->k.a,
                                         &s->k.s, s->v.a, &s->v.s, s->out.a,
                                         &s->out.s, s->den, bad);
    return P(batched_attention_forward)(p, s->layout, s->batch, s->heads,
                                        s->nq, s->nk, s->q.a, &s->q.s, s->k.a,
                                        &s->k.s, s->v.a, &s->v.s, s->out.a,
                                        &s->out.s, s->den, bad);
}

static int batched_backward(const P(plan) *p, int causal, bset *s, int want_b,
                            linattn_where *bad)
{
    int64_t d;
    P(plan_dims)(p, &d, NULL, NULL);
    real *dw = s->rows ? s->dw : NULL, *db = want_b ? s->db : NULL;
    int64_t lddw = s->layout == COL ? s->rows : d;
    lddw = lddw > 0 ? lddw : 1;
    if (causal)
        return P(batched_causal_backward)(
            p, s->layout, s->batch, s->heads, s->nq, s->q.a, &s->q.s, s->k.a,
            &s->k.s, s->v.a, &s->v.s, s->out.a, &s->out.s, s->den, s->g.a,
            &s->g.s, s->dq.a, &s->dq.s, s->dk.a, &s->dk.s, s->dv.a, &s->dv.s,
            dw, lddw, db, bad);
    return P(batched_attention_backward)(
        p, s->layout, s->batch, s->heads, s->nq, s->nk, s->q.a, &s->q.s,
        s->k.a, &s->k.s, s->v.a, &s->v.s, s->out.a, &s->out.s, s->den, s->g.a,
        &s->g.s, s->dq.a, &s->dq.s, s->dk.a, &s->dk.s, s->dv.a, &s->dv.s, dw,
        lddw, db, bad);
}

/* The single calls of problem (b, h) of s into t's buffers (same
 * geometry), adding its dW and db to sums (row major). */
static void single_problem(const P(plan) *p, int causal, const bset *s,
                           bset *t, int64_t b, int64_t h, int want_b,
                           double *dwsum, double *dbsum)
{
    int64_t d, bad, pr = b * s->heads + h, nq = s->nq;
    P(plan_dims)(p, &d, NULL, NULL);
    int L = s->layout;
    const real *q = tbat_at(&s->q, b, h), *k = tbat_at(&s->k, b, h);
    const real *v = tbat_at(&s->v, b, h), *g = tbat_at(&s->g, b, h);
    real *out = tbat_at(&t->out, b, h), *den = t->den + pr * nq;
    int st = causal ? P(causal_forward)(p, L, nq, q, s->q.s.ld, k, s->k.s.ld, v,
                                        s->v.s.ld, out, t->out.s.ld, den, &bad)
                    : P(attention_forward)(p, L, nq, s->nk, q, s->q.s.ld, k,
                                           s->k.s.ld, v, s->v.s.ld, out,
                                           t->out.s.ld, den, &bad);
    ck_assert_int_eq(st, 0);
    real dw[64 * 8], db[64];
    real *pdw = s->rows ? dw : NULL, *pdb = want_b ? db : NULL;
    int64_t lw = L == COL ? (s->rows > 0 ? s->rows : 1) : d;
    real *dq = tbat_at(&t->dq, b, h), *dk = tbat_at(&t->dk, b, h);
    real *dv = tbat_at(&t->dv, b, h);
    st = causal ? P(causal_backward)(p, L, nq, q, s->q.s.ld, k, s->k.s.ld, v,
                                     s->v.s.ld, out, t->out.s.ld, den, g,
                                     s->g.s.ld, dq, t->dq.s.ld, dk, t->dk.s.ld,
                                     dv, t->dv.s.ld, pdw, lw, pdb, &bad)
                : P(attention_backward)(p, L, nq, s->nk, q, s->q.s.ld, k,
                                        s->k.s.ld, v, s->v.s.ld, out,
                                        t->out.s.ld, den, g, s->g.s.ld, dq,
                                        t->dq.s.ld, dk, t->dk.s.ld, dv,
                                        t->dv.s.ld, pdw, lw, pdb, NULL, &bad);
    ck_assert_int_eq(st, 0);
    tbat_add_params(L, s->rows, d, dw, pdb, dwsum, dbsum);
}

static P(plan) *test_plan(int which)
{
    return grad_batch_plan(which, 16, 7);
}

/* Shapes (batch, heads, nq, nk). */
static const int64_t shapes[][4] = {{2, 3, 37, 50}, {1, 1, 37, 50},
                                    {3, 1, 50, 37}, {1, 2, 1, 1},
                                    {2, 2, 0, 5},   {2, 1, 300, 300},
                                    {1, 1, 300, 300}};
#define NSHAPES ((int)(sizeof shapes / sizeof *shapes))

START_TEST(batched_equals_single_calls)
{
    int saved = max_threads();
    set_threads(2);
    for (int which = 0; which < 3; which++) {
        P(plan) *p = test_plan(which);
        int want_b = which == 2;
        int64_t d;
        P(plan_dims)(p, &d, NULL, NULL);
        for (int causal = 0; causal < 2; causal++)
            for (int geo = CONTIG; geo <= SHARED; geo++)
                for (int layout = ROW; layout <= COL; layout++)
                    for (int sh = 0; sh < NSHAPES; sh++) {
                        int64_t B = shapes[sh][0], H = shapes[sh][1];
                        int64_t nq = shapes[sh][2];
                        int64_t nk = causal ? nq : shapes[sh][3];
                        bset s = bset_new(p, geo, layout, B, H, nq, nk, 5 + sh);
                        bset t = bset_new(p, geo, layout, B, H, nq, nk, 5 + sh);
                        ck_assert_int_eq(batched_forward(p, causal, &s, NULL), 0);
                        ck_assert_int_eq(batched_backward(p, causal, &s,
                                                          want_b, NULL), 0);
                        /* the single calls with the threads each problem
                         * gets in the batched call */
                        if (B * H >= 2)
                            set_threads(1);
                        double dws[64 * 8] = {0}, dbs[64] = {0};
                        for (int64_t b = 0; b < B; b++)
                            for (int64_t h = 0; h < H; h++)
                                single_problem(p, causal, &s, &t, b, h, want_b,
                                               dws, dbs);
                        set_threads(2);
                        ck_assert(tbat_same(&s.out, &t.out));
                        ck_assert(!memcmp(s.den, t.den,
                                          (size_t)(B * H * nq) * sizeof(real)));
                        ck_assert(tbat_same(&s.dq, &t.dq));
                        ck_assert(tbat_same(&s.dk, &t.dk));
                        ck_assert(tbat_same(&s.dv, &t.dv));
                        ck_assert(tbat_gaps_intact(&s.dq) &&
                                  tbat_gaps_intact(&s.dk) &&
                                  tbat_gaps_intact(&s.dv));
                        /* dw came in the layout; the sums row major */
                        if (s.rows && B * H > 0)
                            ck_assert(tbat_params_close(layout, s.rows, d,
                                                        s.dw,
                                                        want_b ? s.db : NULL,
                                                        dws, dbs, TOL));
                        bset_free(&s), bset_free(&t);
                    }
        P(plan_destroy)(p);
    }
    set_threads(saved);
}
END_TEST

/* Hedgehog, every problem against the reference; dW and db the sums of
 * the problems' references. */
START_TEST(batched_against_reference)
{
    int causal = _i;
    P(plan) *p = test_plan(2);
    mapcase c = map_case(3 + NCASES - 1);
    refmap r = grad_ref_of(&c, p, 4);
    int64_t B = 2, H = 2, nq = causal ? 37 : 13, nk = causal ? 37 : 11;
    bset s = bset_new(p, INTERLEAVED, ROW, B, H, nq, nk, 3);
    ck_assert_int_eq(batched_forward(p, causal, &s, NULL), 0);
    ck_assert_int_eq(batched_backward(p, causal, &s, 1, NULL), 0);
    long double dw[64 * 8] = {0}, db[64] = {0};
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            tmat q = tbat_problem(&s.q, b, h), k = tbat_problem(&s.k, b, h);
            tmat v = tbat_problem(&s.v, b, h), g = tbat_problem(&s.g, b, h);
            tmat dq = tbat_problem(&s.dq, b, h), dk = tbat_problem(&s.dk, b, h);
            tmat dv = tbat_problem(&s.dv, b, h);
            refgrad rg = ref_grad(&r, causal, 0, 0, &q, &k, &v, &g);
            ck_assert(rel_err(&dq, rg.dq) <= TOL);
            ck_assert(rel_err(&dk, rg.dk) <= TOL);
            ck_assert(rel_err(&dv, rg.dv) <= TOL);
            for (int64_t i = 0; i < r.rows * 4; i++)
                dw[i] += rg.dw[i];
            for (int64_t i = 0; i < r.rows; i++)
                db[i] += rg.db[i];
            refgrad_free(&rg);
            tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
            tmat_free(&dq), tmat_free(&dk), tmat_free(&dv);
        }
    ck_assert(rel_err_vec(s.dw, 4, r.rows, 4, ROW, dw) <= TOL);
    ck_assert(rel_err_vec(s.db, 1, 1, r.rows, ROW, db) <= TOL);
    ref_free(&r);
    bset_free(&s);
    P(plan_destroy)(p);
}
END_TEST

/* Nonzero when s's gradients, dW and db hold what bset_new left. */
static int grads_untouched(const bset *s)
{
    bset t = *s;
    int ok = tbat_gaps_intact(&t.dq) && tbat_gaps_intact(&t.dk) &&
             tbat_gaps_intact(&t.dv);
    for (int64_t i = 0; i < t.dq.len; i++)
        ok &= t.dq.a[i] == SENT;
    for (int64_t i = 0; i < t.dk.len; i++)
        ok &= t.dk.a[i] == SENT;
    for (int64_t i = 0; i < t.dv.len; i++)
        ok &= t.dv.a[i] == SENT;
    for (int64_t i = 0; i < s->rows * 4 + 1; i++)
        ok &= s->dw[i] == SENT;
    for (int64_t i = 0; i < s->rows + 1; i++)
        ok &= s->db[i] == SENT;
    return ok;
}

/* A bad normalizer: the first in (b, h) order with its row, nothing
 * written; non-finite inputs under check_finite, nothing written. */
START_TEST(batched_refusals_write_nothing)
{
    int causal = _i;
    P(plan) *p = test_plan(2);
    bset s = bset_new(p, CONTIG, ROW, 2, 3, 20, 20, 8);
    ck_assert_int_eq(batched_forward(p, causal, &s, NULL), 0);
    s.den[(1 * 3 + 2) * 20 + 2] = -1;
    s.den[(1 * 3 + 0) * 20 + 4] = 0;
    linattn_where w = {-5, -5, -5};
    ck_assert_int_eq(batched_backward(p, causal, &s, 1, &w), LINATTN_EDENOM);
    ck_assert(w.batch == 1 && w.head == 0 && w.row == 4);
    ck_assert(grads_untouched(&s));
    ck_assert_int_eq(batched_backward(p, causal, &s, 1, NULL), LINATTN_EDENOM);
    P(plan_destroy)(p);
    bset_free(&s);
    /* check_finite: NaN in G of problem (1, 1) */
    linattn_opts o;
    linattn_opts_init(&o);
    o.check_finite = 1;
    mapcase c = map_case(3 + NCASES - 1);
    p = grad_plan(&c, 4, 3, &o);
    s = bset_new(p, CONTIG, ROW, 2, 2, 20, 20, 8);
    ck_assert_int_eq(batched_forward(p, causal, &s, NULL), 0);
    s.g.a[tbat_pos(&s.g, 1, 1, 3, 0)] = (real)NAN;
    w.batch = -5;
    ck_assert_int_eq(batched_backward(p, causal, &s, 1, &w), LINATTN_ENONFINITE);
    ck_assert(grads_untouched(&s) && w.batch == -5);
    P(plan_destroy)(p);
    bset_free(&s);
}
END_TEST

/* No problems (batch 0, or heads 0): dW and db are sums over none, so
 * zeros, as the single call writes for no rows; the entries after them
 * untouched. */
START_TEST(batched_no_problems_sum_to_zero)
{
    int causal = _i;
    P(plan) *p = test_plan(2);
    int64_t d, e;
    P(plan_dims)(p, &d, NULL, &e);
    for (int empty = 0; empty < 3; empty++) {
        bset s = bset_new(p, CONTIG, ROW, empty == 1 ? 0 : 2,
                          empty == 2 ? 0 : 3, empty ? 5 : 0, empty ? 5 : 0, 3);
        int st;
        if (empty) {
            st = batched_backward(p, causal, &s, 1, NULL);
        } else { /* the single call of no rows, the rule's source */
            int64_t bad;
            st = causal ? P(causal_backward)(p, ROW, 0, s.q.a, d, s.k.a, d,
                                            s.v.a, e, s.out.a, e, s.den,
                                            s.g.a, e, s.dq.a, d, s.dk.a, d,
                                            s.dv.a, e, s.dw, d, s.db, &bad)
                        : P(attention_backward)(
                              p, ROW, 0, 0, s.q.a, d, s.k.a, d, s.v.a, e,
                              s.out.a, e, s.den, s.g.a, e, s.dq.a, d, s.dk.a,
                              d, s.dv.a, e, s.dw, d, s.db, NULL, &bad);
        }
        ck_assert_int_eq(st, 0);
        for (int64_t i = 0; i < s.rows * d; i++)
            ck_assert(s.dw[i] == 0);
        for (int64_t i = 0; i < s.rows; i++)
            ck_assert(s.db[i] == 0);
        ck_assert(s.dw[s.rows * d] == SENT && s.db[s.rows] == SENT);
        bset_free(&s);
    }
    P(plan_destroy)(p);
}
END_TEST

/* Every argument of the batched backward calls: -position, nothing
 * written; outputs meeting an input or one another refused. */
START_TEST(batched_argument_errors)
{
    int causal = _i, off = causal; /* positions one less from n on */
    P(plan) *p = test_plan(2), *plain = test_plan(0);
    bset s = bset_new(p, CONTIG, ROW, 2, 2, 6, 6, 9);
    ck_assert_int_eq(batched_forward(p, causal, &s, NULL), 0);
    linattn_strides bad_ld = {1, 0, 0}, neg = {4, -1, 0};
    for (int pos = 1; pos <= 26; pos++) {
        if (causal && pos == 6)
            continue; /* no nk */
        bset t = s;
        const P(plan) *pp = p;
        int layout = ROW, want_b = 1;
        int64_t B = 2, H = 2, nq = 6, nk = 6, lddw = 4;
        real *dw = s.dw, *db = s.db;
        switch (pos) {
        case 1: pp = NULL; break;
        case 2: layout = 0; break;
        case 3: B = -1; break;
        case 4: H = -2; break;
        case 5: nq = -1; break;
        case 6: nk = -1; break;
        case 7: t.q.a = NULL; break;
        case 8: t.q.s = neg; break;
        case 9: t.k.a = NULL; break;
        case 10: t.k.s = bad_ld; break;
        case 11: t.v.a = NULL; break;
        case 12: t.v.s = neg; break;
        case 13: t.out.a = NULL; break;
        case 14: t.out.s = bad_ld; break;
        case 15: t.den = NULL; break;
        case 16: t.g.a = NULL; break;
        case 17: t.g.s = neg; break;
        case 18: t.dq.a = NULL; break;
        case 19: t.dq.s.head = 0; break; /* problems overlap */
        case 20: t.dk.a = NULL; break;
        case 21: t.dk.s = bad_ld; break;
        case 22: t.dv.a = NULL; break;
        case 23: t.dv.s.batch = 1; break;
        case 24: pp = plain, want_b = 0; break; /* dw, no W */
        case 25: lddw = 3; break;
        default: pp = plain, dw = NULL; break; /* db, not custom */
        }
        linattn_where w = {-5, -5, -5};
        int st = causal
            ? P(batched_causal_backward)(pp, layout, B, H, nq, t.q.a, &t.q.s,
                                         t.k.a, &t.k.s, t.v.a, &t.v.s, t.out.a,
                                         &t.out.s, t.den, t.g.a, &t.g.s, t.dq.a,
                                         &t.dq.s, t.dk.a, &t.dk.s, t.dv.a,
                                         &t.dv.s, dw, lddw, want_b ? db : NULL,
                                         &w)
            : P(batched_attention_backward)(pp, layout, B, H, nq, nk, t.q.a,
                                            &t.q.s, t.k.a, &t.k.s, t.v.a,
                                            &t.v.s, t.out.a, &t.out.s, t.den,
                                            t.g.a, &t.g.s, t.dq.a, &t.dq.s,
                                            t.dk.a, &t.dk.s, t.dv.a, &t.dv.s,
                                            dw, lddw, want_b ? db : NULL, &w);
        int want = pos > 6 ? -(pos - off) : -pos;
        ck_assert_msg(st == want, "causal %d position %d: %d", causal, pos, st);
        ck_assert(grads_untouched(&s) && w.batch == -5);
    }
    /* dk meeting dq: refused at dk, the later output; dv meeting G: at
     * dv */
    bset t = s;
    t.dk.a = t.dq.a;
    int st = P(batched_attention_backward)(p, ROW, 2, 2, 6, 6, t.q.a, &t.q.s,
                                           t.k.a, &t.k.s, t.v.a, &t.v.s,
                                           t.out.a, &t.out.s, t.den, t.g.a,
                                           &t.g.s, t.dq.a, &t.dq.s, t.dk.a,
                                           &t.dk.s, t.dv.a, &t.dv.s, NULL, 1,
                                           NULL, NULL);
    ck_assert_int_eq(st, -20);
    t = s;
    t.dv.a = t.g.a + 2;
    st = P(batched_attention_backward)(p, ROW, 2, 2, 6, 6, t.q.a, &t.q.s,
                                       t.k.a, &t.k.s, t.v.a, &t.v.s, t.out.a,
                                       &t.out.s, t.den, t.g.a, &t.g.s, t.dq.a,
                                       &t.dq.s, t.dk.a, &t.dk.s, t.dv.a,
                                       &t.dv.s, NULL, 1, NULL, NULL);
    ck_assert_int_eq(st, -22);
    ck_assert(grads_untouched(&s));
    /* dw meeting dk (or dq, causal), db meeting den or dw: refused at dw
     * and db, the later outputs */
    for (int c = 0; c < 3; c++) {
        real *dw = c == 0 ? s.dk.a + 1 : s.dw, *db = s.db;
        if (c == 1)
            db = s.den + 3;
        else if (c == 2)
            db = s.dw + 1;
        if (causal && c == 0)
            dw = s.dq.a;
        linattn_where w = {-5, -5, -5};
        st = causal
            ? P(batched_causal_backward)(p, ROW, 2, 2, 6, s.q.a, &s.q.s, s.k.a,
                                         &s.k.s, s.v.a, &s.v.s, s.out.a,
                                         &s.out.s, s.den, s.g.a, &s.g.s,
                                         s.dq.a, &s.dq.s, s.dk.a, &s.dk.s,
                                         s.dv.a, &s.dv.s, dw, 4, db, &w)
            : P(batched_attention_backward)(p, ROW, 2, 2, 6, 6, s.q.a, &s.q.s,
                                            s.k.a, &s.k.s, s.v.a, &s.v.s,
                                            s.out.a, &s.out.s, s.den, s.g.a,
                                            &s.g.s, s.dq.a, &s.dq.s, s.dk.a,
                                            &s.dk.s, s.dv.a, &s.dv.s, dw, 4, db,
                                            &w);
        int want = c == 0 ? 24 : 26;
        ck_assert_msg(st == (causal ? -(want - 1) : -want),
                      "causal %d case %d: %d", causal, c, st);
        ck_assert(grads_untouched(&s) && w.batch == -5);
    }
    P(plan_destroy)(p);
    P(plan_destroy)(plain);
    bset_free(&s);
}
END_TEST

/* The batched forward calls: den NULL, den meeting an input or out. */
START_TEST(batched_forward_errors)
{
    P(plan) *p = test_plan(0);
    bset s = bset_new(p, CONTIG, ROW, 2, 2, 6, 6, 9);
    ck_assert_int_eq(P(batched_attention_forward)(p, ROW, 2, 2, 6, 6, s.q.a,
                                                  &s.q.s, s.k.a, &s.k.s, s.v.a,
                                                  &s.v.s, s.out.a, &s.out.s,
                                                  NULL, NULL), -15);
    ck_assert_int_eq(P(batched_causal_forward)(p, ROW, 2, 2, 6, s.q.a, &s.q.s,
                                               s.k.a, &s.k.s, s.v.a, &s.v.s,
                                               s.out.a, &s.out.s, NULL, NULL),
                     -14);
    ck_assert_int_eq(P(batched_attention_forward)(p, ROW, 2, 2, 6, 6, s.q.a,
                                                  &s.q.s, s.k.a, &s.k.s, s.v.a,
                                                  &s.v.s, s.out.a, &s.out.s,
                                                  s.q.a + 1, NULL), -15);
    /* out and den overlapping: reported at den, the later output (as the
     * single calls do) */
    ck_assert_int_eq(P(batched_causal_forward)(p, ROW, 2, 2, 6, s.q.a, &s.q.s,
                                               s.k.a, &s.k.s, s.v.a, &s.v.s,
                                               s.out.a, &s.out.s, s.out.a + 4,
                                               NULL), -14);
    ck_assert(tbat_gaps_intact(&s.out));
    for (int64_t i = 0; i < s.out.len; i++)
        ck_assert(s.out.a[i] == SENT);
    for (int64_t i = 0; i < 2 * 2 * 6; i++)
        ck_assert(s.den[i] == SENT);
    P(plan_destroy)(p);
    bset_free(&s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("batched gradients (" PREC ")");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, batched_equals_single_calls);
    tcase_add_loop_test(tc, batched_against_reference, 0, 2);
    tcase_add_loop_test(tc, batched_refusals_write_nothing, 0, 2);
    tcase_add_loop_test(tc, batched_argument_errors, 0, 2);
    tcase_add_loop_test(tc, batched_no_problems_sum_to_zero, 0, 2);
    tcase_add_test(tc, batched_forward_errors);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
