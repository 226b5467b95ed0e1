/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_grad_batched_ex.c -- the batched backward _ex calls, compiled once
 * per precision: with key weights (zeros among them, NaN in those keys'
 * rows), dL/dw, packed sequences (an empty one; the keys' own offsets
 * when not causal) and, causal, a starting state per problem and
 * sequence with the gradients of their accumulators: every problem's dq,
 * dk, dv, dL/dw and state gradients bit for bit the single _ex calls run
 * problem by problem (whose gradients test_weighted_grad and
 * test_state_grad check against central differences), whole buffers with
 * their gaps; dW and db the sums of the single calls' to rounding; ex
 * absent or all absent the plain batched backward bit for bit; every
 * refusal of an extra with nothing written.
 */
#include <stdio.h>
#include "testutil.h"
#include "tbat.h"
#include "refmaps.h"
#include "gradref.h"

/* Packed sequences: the queries' (causal: the tokens') and the keys'. */
#define NSEQ 4
static const int64_t qoff[NSEQ + 1] = {0, 10, 10, 25, 37};
static const int64_t koff[NSEQ + 1] = {0, 20, 26, 31, 50};

/* One batched problem set with its extras. */
typedef struct {
    int layout, causal;
    int64_t batch, heads, nq, nk, rows, d, e, len;
    tbat q, k, v, out, g, dq, dk, dv;
    real *den, *w, *dwt, *dw, *db;
    double *dst;
    P(state) **sts;
} pset;

static P(state) *state_of(const P(plan) *p, int64_t nk, uint64_t *s)
{
    int64_t d, e;
    P(plan_dims)(p, &d, NULL, &e);
    real *k = test_rand_vec(nk * d + 1, -1.5, 1.5, s);
    real *v = test_rand_vec(nk * e + 1, -1, 1, s);
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    ck_assert_int_eq(P(state_update)(st, ROW, nk, k, d, v, e), 0);
    free(k), free(v);
    return st;
}

/* The weights: in (0, 1], every fifth key's 0 (never the first of a
 * sequence, whose row would have no key), those keys' rows NaN and Inf
 * where no other problem shares them.  Sequence 1 has keys and no
 * queries (its keys' gradients are 0), sequence 2 no query or key. */
static pset pset_new(const P(plan) *p, int causal, int geometry, int layout,
                     int64_t B, int64_t H, uint64_t seed)
{
    pset s;
    memset(&s, 0, sizeof s);
    P(plan_dims)(p, &s.d, NULL, &s.e);
    int64_t m, d = s.d, e = s.e;
    P(plan_dims)(p, NULL, &m, NULL);
    s.layout = layout, s.causal = causal, s.batch = B, s.heads = H;
    s.nq = qoff[NSEQ];
    s.nk = causal ? s.nq : koff[NSEQ];
    s.len = m * (e + 1);
    int64_t nq = s.nq, nk = s.nk, np = B * H;
    s.q = tbat_rand(geometry, layout, B, H, nq, d, -1, 1, &seed);
    s.k = tbat_rand(geometry, layout, B, H, nk, d, -1, 1, &seed);
    s.v = tbat_rand(geometry, layout, B, H, nk, e, -1, 1, &seed);
    int og = geometry == SHARED ? CONTIG : geometry;
    s.g = tbat_rand(og, layout, B, H, nq, e, -1, 1, &seed);
    s.out = tbat_new(og, layout, B, H, nq, e);
    s.dq = tbat_new(og, layout, B, H, nq, d);
    s.dk = tbat_new(og, layout, B, H, nk, d);
    s.dv = tbat_new(og, layout, B, H, nk, e);
    s.den = malloc((size_t)(np * nq + 1) * sizeof(real));
    s.w = malloc((size_t)(np * nk + 1) * sizeof(real));
    s.dwt = malloc((size_t)(np * nk + 1) * sizeof(real));
    for (int64_t i = 0; i < np * nk + 1; i++) {
        s.w[i] = i % nk % 5 == 2 ? 0
                                  : (real)(0.05 + 0.95 * test_uniform(&seed));
        s.dwt[i] = SENT;
    }
    for (int64_t pr = 0; geometry != SHARED && pr < np; pr++)
        for (int64_t j = 0; j < nk; j++)
            if (s.w[pr * nk + j] == 0) {
                int64_t b = pr / H, h = pr % H;
                s.k.a[tbat_pos(&s.k, b, h, j, 0)] = (real)NAN;
                s.v.a[tbat_pos(&s.v, b, h, j, e - 1)] = (real)INFINITY;
            }
    P(plan_weights)(p, ROW, NULL, 0, &s.rows);
    s.dw = malloc((size_t)(s.rows * d + 1) * sizeof(real));
    s.db = malloc((size_t)(s.rows + 1) * sizeof(real));
    for (int64_t i = 0; i < s.rows * d + 1; i++)
        s.dw[i] = SENT;
    for (int64_t i = 0; i < s.rows + 1; i++)
        s.db[i] = SENT;
    if (causal) {
        s.sts = malloc((size_t)(np * NSEQ + 1) * sizeof *s.sts);
        for (int64_t i = 0; i < np * NSEQ; i++)
            s.sts[i] = state_of(p, i % 3 == 1 ? 0 : 2 + i % 4, &seed);
        s.dst = malloc((size_t)(np * NSEQ * s.len + 1) * sizeof(double));
        for (int64_t i = 0; i < np * NSEQ * s.len + 1; i++)
            s.dst[i] = 1e300;
    }
    return s;
}

static void pset_free(pset *s)
{
    tbat_free(&s->q), tbat_free(&s->k), tbat_free(&s->v), tbat_free(&s->g);
    tbat_free(&s->out), tbat_free(&s->dq), tbat_free(&s->dk);
    tbat_free(&s->dv);
    free(s->den), free(s->w), free(s->dwt), free(s->dw), free(s->db);
    for (int64_t i = 0; s->sts && i < s->batch * s->heads * NSEQ; i++)
        P(state_destroy)(s->sts[i]);
    free(s->sts), free(s->dst);
}

/* The extras of the whole set: weights, offsets, states; dL/dw and the
 * states' gradients when asked for (backward). */
static P(extras) extras_of(pset *s, int backward)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = s->w;
    ex.offsets = qoff;
    ex.nseq = NSEQ;
    if (!s->causal)
        ex.key_offsets = koff;
    ex.states = s->sts;
    if (backward) {
        ex.dweights = s->dwt;
        ex.dstates = s->dst;
    } else {
        ex.den = s->den;
    }
    return ex;
}

static int forward(const P(plan) *p, pset *s)
{
    P(extras) ex = extras_of(s, 0);
    if (s->causal)
        return P(batched_causal_ex)(p, s->layout, s->batch, s->heads, s->nq,
                                    s->q.a, &s->q.s, s->k.a, &s->k.s, s->v.a,
                                    &s->v.s, s->out.a, &s->out.s, &ex, NULL);
    return P(batched_attention_ex)(p, s->layout, s->batch, s->heads, s->nq,
                                   s->nk, s->q.a, &s->q.s, s->k.a, &s->k.s,
                                   s->v.a, &s->v.s, s->out.a, &s->out.s, &ex,
                                   NULL);
}

static int64_t lddw_of(const pset *s)
{
    int64_t ld = s->layout == COL ? s->rows : s->d;
    return ld > 0 ? ld : 1;
}

/* The batched backward _ex with ex (NULL allowed). */
static int backward(const P(plan) *p, pset *s, int want_b, const P(extras) *ex,
                    linattn_where *bad)
{
    real *dw = s->rows ? s->dw : NULL, *db = want_b ? s->db : NULL;
    if (s->causal)
        return P(batched_causal_backward_ex)(
            p, s->layout, s->batch, s->heads, s->nq, s->q.a, &s->q.s, s->k.a,
            &s->k.s, s->v.a, &s->v.s, s->out.a, &s->out.s, s->den, s->g.a,
            &s->g.s, s->dq.a, &s->dq.s, s->dk.a, &s->dk.s, s->dv.a, &s->dv.s,
            dw, lddw_of(s), db, ex, bad);
    return P(batched_attention_backward_ex)(
        p, s->layout, s->batch, s->heads, s->nq, s->nk, s->q.a, &s->q.s,
        s->k.a, &s->k.s, s->v.a, &s->v.s, s->out.a, &s->out.s, s->den, s->g.a,
        &s->g.s, s->dq.a, &s->dq.s, s->dk.a, &s->dk.s, s->dv.a, &s->dv.s, dw,
        lddw_of(s), db, ex, bad);
}

/* The plain batched backward (no extras) of s. */
static int plain_backward(const P(plan) *p, pset *s, int want_b)
{
    real *dw = s->rows ? s->dw : NULL, *db = want_b ? s->db : NULL;
    if (s->causal)
        return P(batched_causal_backward)(
            p, s->layout, s->batch, s->heads, s->nq, s->q.a, &s->q.s, s->k.a,
            &s->k.s, s->v.a, &s->v.s, s->out.a, &s->out.s, s->den, s->g.a,
            &s->g.s, s->dq.a, &s->dq.s, s->dk.a, &s->dk.s, s->dv.a, &s->dv.s,
            dw, lddw_of(s), db, NULL);
    return P(batched_attention_backward)(
        p, s->layout, s->batch, s->heads, s->nq, s->nk, s->q.a, &s->q.s,
        s->k.a, &s->k.s, s->v.a, &s->v.s, s->out.a, &s->out.s, s->den, s->g.a,
        &s->g.s, s->dq.a, &s->dq.s, s->dk.a, &s->dk.s, s->dv.a, &s->dv.s, dw,
        lddw_of(s), db, NULL);
}

/* Problem (b, h) of s by the single backward _ex call into t's buffers,
 * its dW and db added to sums (row major). */
static void single_problem(const P(plan) *p, const pset *s, pset *t,
                           int64_t b, int64_t h, int want_b, double *dwsum,
                           double *dbsum)
{
    int64_t pr = b * s->heads + h, nq = s->nq, nk = s->nk, d = s->d;
    int L = s->layout;
    const real *q = tbat_at(&s->q, b, h), *k = tbat_at(&s->k, b, h);
    const real *v = tbat_at(&s->v, b, h), *g = tbat_at(&s->g, b, h);
    const real *out = tbat_at(&s->out, b, h), *den = s->den + pr * nq;
    real dw[64 * 8], db[64];
    real *pdw = s->rows ? dw : NULL, *pdb = want_b ? db : NULL;
    int64_t lw = L == COL ? (s->rows > 0 ? s->rows : 1) : d;
    real *dq = tbat_at(&t->dq, b, h), *dk = tbat_at(&t->dk, b, h);
    real *dv = tbat_at(&t->dv, b, h);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = s->w + pr * nk;
    ex.dweights = t->dwt + pr * nk;
    ex.offsets = qoff;
    ex.nseq = NSEQ;
    int64_t bad = -7;
    int st;
    if (s->causal) {
        ex.states = s->sts + pr * NSEQ;
        ex.dstates = t->dst + pr * NSEQ * s->len;
        st = P(causal_backward_ex)(p, L, nq, q, s->q.s.ld, k, s->k.s.ld, v,
                                   s->v.s.ld, out, s->out.s.ld, den, g,
                                   s->g.s.ld, dq, t->dq.s.ld, dk, t->dk.s.ld,
                                   dv, t->dv.s.ld, pdw, lw, pdb, &ex, &bad);
    } else {
        ex.key_offsets = koff;
        st = P(attention_backward_ex)(p, L, nq, nk, q, s->q.s.ld, k, s->k.s.ld,
                                      v, s->v.s.ld, out, s->out.s.ld, den, g,
                                      s->g.s.ld, dq, t->dq.s.ld, dk,
                                      t->dk.s.ld, dv, t->dv.s.ld, pdw, lw,
                                      pdb, NULL, &ex, &bad);
    }
    ck_assert_int_eq(st, 0);
    tbat_add_params(L, s->rows, d, dw, pdb, dwsum, dbsum);
}

static P(plan) *test_plan(int which)
{
    return grad_batch_plan(which, 8, 6);
}

static const int64_t shapes[][2] = {{2, 3}, {1, 1}, {3, 1}, {1, 2}, {2, 0}};
#define NSHAPES ((int)(sizeof shapes / sizeof *shapes))

/* _i: causal. */
START_TEST(batched_ex_equals_single_ex_calls)
{
    int causal = _i, saved = max_threads();
    set_threads(2);
    for (int which = 0; which < 3; which++) {
        P(plan) *p = test_plan(which);
        int want_b = which == 2;
        for (int geo = CONTIG; geo <= SHARED; geo++)
            for (int layout = ROW; layout <= COL; layout++)
                for (int sh = 0; sh < NSHAPES; sh++) {
                    int64_t B = shapes[sh][0], H = shapes[sh][1];
                    if (H == 0 && geo == INTERLEAVED)
                        continue; /* no rows to interleave */
                    uint64_t seed = 11 + (uint64_t)(sh + 7 * geo);
                    pset s = pset_new(p, causal, geo, layout, B, H, seed);
                    pset t = pset_new(p, causal, geo, layout, B, H, seed);
                    ck_assert_int_eq(forward(p, &s), 0);
                    P(extras) ex = extras_of(&s, 1);
                    ck_assert_int_eq(backward(p, &s, want_b, &ex, NULL), 0);
                    if (B * H >= 2) /* the threads a problem gets there */
                        set_threads(1);
                    double dws[64 * 8] = {0}, dbs[64] = {0};
                    for (int64_t b = 0; b < B; b++)
                        for (int64_t h = 0; h < H; h++)
                            single_problem(p, &s, &t, b, h, want_b, dws, dbs);
                    set_threads(2);
                    int64_t np = B * H;
                    ck_assert(tbat_same(&s.dq, &t.dq));
                    ck_assert(tbat_same(&s.dk, &t.dk));
                    ck_assert(tbat_same(&s.dv, &t.dv));
                    ck_assert(tbat_gaps_intact(&s.dq) &&
                              tbat_gaps_intact(&s.dk) &&
                              tbat_gaps_intact(&s.dv));
                    ck_assert(!memcmp(s.dwt, t.dwt,
                                      (size_t)(np * s.nk + 1) * sizeof(real)));
                    for (int64_t j = 0; j < np * s.nk; j++)
                        ck_assert(s.w[j] != 0 || s.dwt[j] == 0);
                    /* written: dL/dw of a kept key, a state's gradient */
                    ck_assert(np == 0 || (s.dwt[0] != SENT && s.dwt[0] != 0));
                    ck_assert(!causal || np == 0 || s.dst[0] != 1e300);
                    if (causal)
                        ck_assert(!memcmp(s.dst, t.dst,
                                          (size_t)(np * NSEQ * s.len + 1) *
                                              sizeof(double)));
                    /* finite gradients: the NaN of the keys of weight 0
                     * reached nothing */
                    for (int64_t j = 0; j < s.dq.len; j++)
                        ck_assert(s.dq.a[j] == s.dq.a[j]);
                    if (s.rows && np > 0)
                        ck_assert(tbat_params_close(layout, s.rows, s.d, s.dw,
                                                    want_b ? s.db : NULL, dws,
                                                    dbs, TOL));
                    pset_free(&s), pset_free(&t);
                }
        P(plan_destroy)(p);
    }
    set_threads(saved);
}
END_TEST

/* ex NULL and ex with every part absent: the plain batched backward,
 * bit for bit (no NaN in the keys: every key counts there). _i: causal. */
START_TEST(absent_extras_are_the_plain_call)
{
    int causal = _i;
    P(plan) *p = test_plan(2);
    for (int form = 0; form < 2; form++) {
        pset s = pset_new(p, causal, INTERLEAVED, ROW, 2, 2, 40);
        pset t = pset_new(p, causal, INTERLEAVED, ROW, 2, 2, 40);
        tbat_free(&s.k), tbat_free(&s.v), tbat_free(&t.k), tbat_free(&t.v);
        uint64_t seed = 9;
        s.k = tbat_rand(INTERLEAVED, ROW, 2, 2, s.nk, s.d, -1, 1, &seed);
        s.v = tbat_rand(INTERLEAVED, ROW, 2, 2, s.nk, s.e, -1, 1, &seed);
        t.k = tbat_copy(&s.k), t.v = tbat_copy(&s.v);
        int64_t bad;
        for (int64_t pr = 0; pr < 4; pr++) { /* plain forwards */
            int64_t b = pr / 2, h = pr % 2;
            real *o = tbat_at(&s.out, b, h), *dn = s.den + pr * s.nq;
            int st = causal
                         ? P(causal_forward)(p, ROW, s.nq, tbat_at(&s.q, b, h),
                                             s.q.s.ld, tbat_at(&s.k, b, h),
                                             s.k.s.ld, tbat_at(&s.v, b, h),
                                             s.v.s.ld, o, s.out.s.ld, dn, &bad)
                         : P(attention_forward)(
                               p, ROW, s.nq, s.nk, tbat_at(&s.q, b, h),
                               s.q.s.ld, tbat_at(&s.k, b, h), s.k.s.ld,
                               tbat_at(&s.v, b, h), s.v.s.ld, o, s.out.s.ld,
                               dn, &bad);
            ck_assert_int_eq(st, 0);
        }
        memcpy(t.out.a, s.out.a, (size_t)s.out.len * sizeof(real));
        memcpy(t.den, s.den, (size_t)(4 * s.nq) * sizeof(real));
        P(extras) ex;
        P(extras_init)(&ex);
        ck_assert_int_eq(backward(p, &s, 1, form ? &ex : NULL, NULL), 0);
        ck_assert_int_eq(plain_backward(p, &t, 1), 0);
        ck_assert(tbat_same(&s.dq, &t.dq) && tbat_same(&s.dk, &t.dk) &&
                  tbat_same(&s.dv, &t.dv));
        ck_assert(!memcmp(s.dw, t.dw, (size_t)(s.rows * s.d) * sizeof(real)));
        ck_assert(!memcmp(s.db, t.db, (size_t)s.rows * sizeof(real)));
        pset_free(&s), pset_free(&t);
    }
    P(plan_destroy)(p);
}
END_TEST

/* Nothing of the call's outputs written: every gradient, dL/dw and the
 * states' gradients as before. */
static int nothing_written(const pset *s)
{
    int ok = 1;
    for (int64_t i = 0; i < s->dq.len; i++)
        ok &= s->dq.a[i] == SENT;
    for (int64_t i = 0; i < s->dk.len; i++)
        ok &= s->dk.a[i] == SENT;
    for (int64_t i = 0; i < s->dv.len; i++)
        ok &= s->dv.a[i] == SENT;
    for (int64_t i = 0; i < s->batch * s->heads * s->nk + 1; i++)
        ok &= s->dwt[i] == SENT;
    for (int64_t i = 0; i < s->rows * s->d + 1; i++)
        ok &= s->dw[i] == SENT;
    for (int64_t i = 0; s->dst && i < s->batch * s->heads * NSEQ * s->len;
         i++)
        ok &= s->dst[i] == 1e300;
    return ok;
}

/* Every extra refused at the extras' position (27, causal 26), nothing
 * written.  _i: causal. */
START_TEST(bad_extras_refused)
{
    int causal = _i, pos = causal ? -26 : -27;
    P(plan) *p = test_plan(2);
    pset s = pset_new(p, causal, CONTIG, ROW, 2, 2, 77);
    ck_assert_int_eq(forward(p, &s), 0);
    P(state) *other = state_of(p, 2, &(uint64_t){5});
    int64_t ends_short[NSEQ + 1] = {0, 10, 10, 25, 36};
    int64_t falls[NSEQ + 1] = {0, 10, 9, 25, 37};
    int cases = causal ? 15 : 12;
    for (int c = 0; c < cases; c++) {
        P(extras) ex = extras_of(&s, 1);
        real keep = s.w[3];
        P(state) *kept = s.sts ? s.sts[5] : NULL;
        switch (c) {
        case 0: ex.reserved_int[1] = 1; break;
        case 1: ex.reserved[3] = 1; break;
        case 2: ex.den = s.den; break;
        case 3: ex.state = other; break;
        case 4: s.w[3] = -1; break;
        case 5: s.w[3] = (real)NAN; break;
        case 6: ex.dweights = s.dq.a + 4; break; /* meets dq */
        case 7: ex.dweights = s.w + 1; break;    /* meets the weights */
        case 8: ex.offsets = ends_short; break;
        case 9: ex.offsets = falls; break;
        case 10: ex.offsets = NULL; break; /* nseq without offsets */
        case 11: ex.nseq = -1; break;
        /* causal only */
        case 12: ex.absorb = 1; break;
        case 13: ex.key_offsets = koff; break;
        case 14: s.sts[5] = NULL; break;
        default: break;
        }
        if (!causal && c >= 12)
            continue;
        linattn_where w = {-5, -5, -5};
        ck_assert_msg(backward(p, &s, 1, &ex, &w) == pos, "case %d", c);
        ck_assert_msg(nothing_written(&s), "case %d", c);
        s.w[3] = keep;
        if (s.sts)
            s.sts[5] = kept;
    }
    /* what each form does not take, and the states' gradients */
    P(extras) ex = extras_of(&s, 1);
    if (causal) {
        ex.states = NULL; /* dstates without states */
        ex.offsets = NULL;
        ex.nseq = 0;
        ck_assert_int_eq(backward(p, &s, 1, &ex, NULL), pos);
        ex = extras_of(&s, 1);
        ex.dstates = (double *)(void *)s.dk.a; /* meets dk */
        ck_assert_int_eq(backward(p, &s, 1, &ex, NULL), pos);
        ex = extras_of(&s, 1);
        ex.dstates = (double *)(void *)s.sts; /* meets the states array */
        ck_assert_int_eq(backward(p, &s, 1, &ex, NULL), pos);
    } else {
        P(state) *one[1] = {other};
        ex.states = one;
        ck_assert_int_eq(backward(p, &s, 1, &ex, NULL), pos);
        ex = extras_of(&s, 1);
        ex.dstates = s.dst ? s.dst : (double[1]){0};
        ck_assert_int_eq(backward(p, &s, 1, &ex, NULL), pos);
    }
    ck_assert(nothing_written(&s));
    P(state_destroy)(other);
    pset_free(&s);
    P(plan_destroy)(p);
}
END_TEST

/* A state of another plan among the causal call's: -26, nothing
 * written. */
START_TEST(state_of_another_plan_refused)
{
    P(plan) *p = test_plan(2), *q = test_plan(0);
    pset s = pset_new(p, 1, CONTIG, ROW, 2, 2, 78);
    ck_assert_int_eq(forward(p, &s), 0);
    P(state) *alien = state_of(q, 2, &(uint64_t){6});
    P(state) *kept = s.sts[9];
    s.sts[9] = alien;
    P(extras) ex = extras_of(&s, 1);
    ck_assert_int_eq(backward(p, &s, 1, &ex, NULL), -26);
    ck_assert(nothing_written(&s));
    s.sts[9] = kept;
    P(state_destroy)(alien);
    pset_free(&s);
    P(plan_destroy)(p), P(plan_destroy)(q);
}
END_TEST

/* Counts beyond int64: batch heads nseq states (2^64 of them) are
 * LINATTN_ESIZE before any state or gradient is looked at (non-causal,
 * without states: 2^62 problems without rows, status 0 at once); and with
 * no problems, dW meeting the offsets is still refused (the sums over
 * none would be written there).  _i: causal. */
START_TEST(sizes_and_no_problems)
{
    int causal = _i, dwpos = causal ? -23 : -24;
    P(plan) *p = test_plan(2);
    pset s = pset_new(p, causal, CONTIG, ROW, 2, 2, 79);
    ck_assert_int_eq(forward(p, &s), 0);
    int64_t zero[NSEQ + 1] = {0, 0, 0, 0, 0};
    P(extras) ex = extras_of(&s, 1);
    ex.offsets = zero;
    ex.key_offsets = causal ? NULL : zero;
    ex.dweights = NULL;
    int64_t huge = (int64_t)1 << 31;
    linattn_strides none = {s.d, 0, 0}, nonee = {s.e, 0, 0};
    real *dw = s.rows ? s.dw : NULL;
    int st = causal
        ? P(batched_causal_backward_ex)(p, ROW, huge, huge, 0, s.q.a, &none,
              s.k.a, &none, s.v.a, &nonee, s.out.a, &nonee, s.den, s.g.a,
              &nonee, s.dq.a, &none, s.dk.a, &none, s.dv.a, &nonee, dw,
              lddw_of(&s), s.db, &ex, NULL)
        : P(batched_attention_backward_ex)(p, ROW, huge, huge, 0, 0, s.q.a,
              &none, s.k.a, &none, s.v.a, &nonee, s.out.a, &nonee, s.den,
              s.g.a, &nonee, s.dq.a, &none, s.dk.a, &none, s.dv.a, &nonee, dw,
              lddw_of(&s), s.db, &ex, NULL);
    ck_assert_int_eq(st, causal ? LINATTN_ESIZE : 0);
    if (causal)
        ck_assert(nothing_written(&s));
    /* no problems, dW over the offsets */
    int64_t offs[(64 * 8 + 64) * sizeof(real) / sizeof(int64_t) + NSEQ + 1];
    memset(offs, 0, sizeof offs);
    ex = extras_of(&s, 1);
    ex.offsets = offs;
    ex.key_offsets = causal ? NULL : offs;
    ex.states = NULL;
    ex.dstates = NULL;
    ex.weights = NULL;
    ex.dweights = NULL;
    real *over = (real *)(void *)offs;
    st = causal
        ? P(batched_causal_backward_ex)(p, ROW, 0, 2, 0, s.q.a, &s.q.s, s.k.a,
              &s.k.s, s.v.a, &s.v.s, s.out.a, &s.out.s, s.den, s.g.a, &s.g.s,
              s.dq.a, &s.dq.s, s.dk.a, &s.dk.s, s.dv.a, &s.dv.s, over,
              lddw_of(&s), NULL, &ex, NULL)
        : P(batched_attention_backward_ex)(p, ROW, 0, 2, 0, 0, s.q.a, &s.q.s,
              s.k.a, &s.k.s, s.v.a, &s.v.s, s.out.a, &s.out.s, s.den, s.g.a,
              &s.g.s, s.dq.a, &s.dq.s, s.dk.a, &s.dk.s, s.dv.a, &s.dv.s, over,
              lddw_of(&s), NULL, &ex, NULL);
    ck_assert_int_eq(st, dwpos);
    for (size_t i = 0; i < sizeof offs / sizeof *offs; i++)
        ck_assert(offs[i] == 0);
    pset_free(&s);
    P(plan_destroy)(p);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("batched backward ex " PREC);
    TCase *tc = tcase_create("batched backward ex");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, batched_ex_equals_single_ex_calls, 0, 2);
    tcase_add_loop_test(tc, absent_extras_are_the_plain_call, 0, 2);
    tcase_add_loop_test(tc, bad_extras_refused, 0, 2);
    tcase_add_test(tc, state_of_another_plan_refused);
    tcase_add_loop_test(tc, sizes_and_no_problems, 0, 2);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
