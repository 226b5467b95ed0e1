/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_decay_grad.c -- gradients of decayed and gated causal attention
 * (doc/decay.md, doc/gradients.md), and of the calls without normalizer,
 * compiled once per precision.  Independent computations throughout:
 *
 *   - every map against a long double reference written from the
 *     quadratic formula with the decay mask exp(B_i - B_j) (B the running
 *     sum of the log decays), key weights, a starting state, the gradient
 *     of the final state handed in, and dL/da_t summed from its pairs
 *     (dL/dB_i: + for each pair (i, j < i), - for each pair (k > i, i)),
 *     never from the library's own backward formulas;
 *   - central finite differences of the library's forward in the gates
 *     and the plan's decay (double);
 *   - gates of 0 against the undecayed backward, bit for bit; the causal
 *     invariant (dq_i does not move when later tokens change, gates and
 *     NaN values included); the normalizers written on two threads read
 *     back on one and the other way round; the batched call against the
 *     single calls problem by problem; states that die in one step
 *     (gates of -1e3) and gates of -1e-12;
 *   - every refusal, with nothing written.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "testutil.h"
#include "refmaps.h"
#include "gradref.h"

enum { D = 3, E = 2, N = 37, BLOCK = 8, CHUNK = 6, NP = 5 };

/* ---- the reference ---- */

/* What a call's reference is computed from: the map, the policy, the
 * inputs (weights may be NULL), the log decays a (n), a starting state's
 * true sums s0 = [S0 z0] (m x (e + 1), NULL: none) and count c0, the
 * final state's true gradient dend (m x (e + 1), NULL: none). */
typedef struct {
    const refmap *r;
    int policy, causal;
    long double eps;
    const tmat *q, *k, *v, *g;
    const real *w;
    const long double *a, *s0, *dend;
    long double c0;
} dref_in;

typedef struct {
    long double *dq, *dk, *dv, *dwt, *dg, *ds0, *out, *den, *dw, *db;
} dref;

static void dref_free(dref *o)
{
    free(o->dq), free(o->dk), free(o->dv), free(o->dwt), free(o->dg);
    free(o->ds0), free(o->out), free(o->den), free(o->dw), free(o->db);
}

static long double *zeros(int64_t n)
{
    return calloc((size_t)(n + 1), sizeof(long double));
}

static long double dotl(const long double *x, const long double *y, int64_t n)
{
    long double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += x[i] * y[i];
    return s;
}

/* The reference gradients (causal: keys j <= i, nq = nk; else every key,
 * no decay, no state). */
static dref dref_run(const dref_in *in)
{
    const refmap *r = in->r;
    int64_t nq = in->q->rows, nk = in->k->rows, d = r->d, m = r->m;
    int64_t e = in->v->cols, ld = e + 1, h = r->rows;
    dref o;
    o.dq = zeros(nq * d), o.dk = zeros(nk * d), o.dv = zeros(nk * e);
    o.dwt = zeros(nk), o.dg = zeros(nk), o.ds0 = zeros(m * ld);
    o.out = zeros(nq * e), o.den = zeros(nq);
    o.dw = zeros(h * d), o.db = zeros(h);
    long double *fq = ref_feature_rows(r, in->q);
    long double *fk = ref_feature_rows(r, in->k);
    long double *dfq = zeros(nq * m), *dfk = zeros(nk * m);
    /* db: dL/dB of each row (causal: nq = nk; non-causal: unused) */
    /* bsum: running log decay of each row, read at query rows too (0 beyond
     * nk when non-causal: nq may exceed nk) */
    long double *bsum = zeros(nq > nk ? nq : nk), *db = zeros(nq > nk ? nq : nk);
    long double *gh = zeros(nq * ld);
    long double *hc = zeros(nq), run = 0;
    for (int64_t i = 0; i < nk; i++)
        bsum[i] = run += in->causal ? in->a[i] : 0;
    long double bend = nk ? bsum[nk - 1] : 0;
#define W(j) (in->w ? (long double)in->w[j] : 1.0L)
#define DOTF(x, i, y, j) dotl(x + (i) * m, y + (j) * m, m)
    /* the forward, and each row's adjoints [g h] */
    for (int64_t i = 0; i < nq; i++) {
        long double num[8] = {0}, den = 0, cnt = 0;
        int64_t seen = in->causal ? i + 1 : nk;
        for (int64_t j = 0; j < seen; j++) {
            if (W(j) == 0)
                continue; /* never read */
            long double c = expl(bsum[i] - bsum[j]) * W(j);
            long double s = c * DOTF(fq, i, fk, j);
            for (int64_t col = 0; col < e; col++)
                num[col] += s * *tmat_at(in->v, j, col);
            den += s;
            cnt += c;
        }
        if (in->s0) {
            long double f = expl(bsum[i]);
            for (int64_t col = 0; col <= e; col++) {
                long double x = 0;
                for (int64_t t = 0; t < m; t++)
                    x += fq[i * m + t] * in->s0[t * ld + col];
                if (col < e)
                    num[col] += f * x;
                else
                    den += f * x;
            }
            cnt += f * in->c0;
        }
        long double dn = in->policy == LINATTN_DENOM_COUNT ? cnt + in->eps
                         : in->policy == LINATTN_DENOM_NONE ? 1
                                                             : den + in->eps;
        o.den[i] = dn;
        long double go = 0;
        for (int64_t col = 0; col < e; col++) {
            o.out[i * e + col] = num[col] / dn;
            gh[i * ld + col] = *tmat_at(in->g, i, col) / dn;
            go += *tmat_at(in->g, i, col) * o.out[i * e + col];
        }
        gh[i * ld + e] = in->policy == LINATTN_DENOM_POSITIVE ||
                                 in->policy == LINATTN_DENOM_NONZERO
                             ? -go / dn
                             : 0;
        hc[i] = in->policy == LINATTN_DENOM_COUNT ? -go / dn : 0;
    }
    /* the pairs */
    for (int64_t i = 0; i < nq; i++) {
        int64_t seen = in->causal ? i + 1 : nk;
        for (int64_t j = 0; j < seen; j++) {
            if (W(j) == 0)
                continue;
            long double c = expl(bsum[i] - bsum[j]) * W(j);
            long double a = DOTF(fq, i, fk, j), p = gh[i * ld + e];
            for (int64_t col = 0; col < e; col++)
                p += gh[i * ld + col] * *tmat_at(in->v, j, col);
            for (int64_t t = 0; t < m; t++) {
                dfq[i * m + t] += c * p * fk[j * m + t];
                dfk[j * m + t] += c * p * fq[i * m + t];
            }
            for (int64_t col = 0; col < e; col++)
                o.dv[j * e + col] += c * a * gh[i * ld + col];
            o.dwt[j] += expl(bsum[i] - bsum[j]) * a * p;
            long double share = c * a * p + hc[i] * c;
            db[i] += share;
            db[j] -= share;
        }
        if (in->s0) { /* row i reads the starting state times exp(B_i) */
            long double f = expl(bsum[i]), x = 0;
            for (int64_t t = 0; t < m; t++) {
                long double y = 0;
                for (int64_t col = 0; col <= e; col++)
                    y += in->s0[t * ld + col] * gh[i * ld + col];
                dfq[i * m + t] += f * y;
                x += fq[i * m + t] * y;
                for (int64_t col = 0; col <= e; col++)
                    o.ds0[t * ld + col] += f * fq[i * m + t] * gh[i * ld + col];
            }
            db[i] += f * x + hc[i] * f * in->c0;
        }
    }
    if (in->dend) { /* the final state, read from beyond the call */
        long double send = 0;
        for (int64_t j = 0; j < nk; j++) {
            if (W(j) == 0)
                continue;
            long double f = expl(bend - bsum[j]);
            for (int64_t t = 0; t < m; t++) {
                long double y = in->dend[t * ld + e];
                for (int64_t col = 0; col < e; col++)
                    y += in->dend[t * ld + col] * *tmat_at(in->v, j, col);
                dfk[j * m + t] += f * W(j) * y;
                o.dwt[j] += f * fk[j * m + t] * y;
                send += f * W(j) * fk[j * m + t] * y;
                db[j] -= f * W(j) * fk[j * m + t] * y;
                for (int64_t col = 0; col < e; col++)
                    o.dv[j * e + col] +=
                        f * W(j) * in->dend[t * ld + col] * fk[j * m + t];
            }
        }
        long double f = expl(bend);
        for (int64_t x = 0; x < m * ld; x++) {
            o.ds0[x] += f * in->dend[x];
            if (in->s0)
                send += f * in->s0[x] * in->dend[x];
        }
        if (nk)
            db[nk - 1] += send;
    }
    run = 0;
    for (int64_t t = nk - 1; t >= 0; t--)
        o.dg[t] = run += db[t];
    for (int64_t j = 0; j < nk; j++)
        if (W(j) == 0) /* a key of weight 0 is absent: dk, dv 0 */
            for (int64_t t = 0; t < m; t++)
                dfk[j * m + t] = 0;
    ref_back_rows(r, in->q, dfq, o.dq, o.dw, o.db);
    /* rows of weight 0 may hold NaN: their features are never read */
    tmat kc = *in->k;
    kc.a = malloc((size_t)(kc.ld * (kc.layout == ROW ? kc.rows : kc.cols) + 1) *
                  sizeof(real));
    memcpy(kc.a, in->k->a,
           (size_t)(kc.ld * (kc.layout == ROW ? kc.rows : kc.cols)) * sizeof(real));
    for (int64_t j = 0; in->w && j < nk; j++)
        for (int64_t c = 0; in->w[j] == 0 && c < d; c++)
            *tmat_at(&kc, j, c) = 0;
    ref_back_rows(r, &kc, dfk, o.dk, o.dw, o.db);
    free(kc.a);
#undef W
#undef DOTF
    free(fq), free(fk), free(dfq), free(dfk), free(bsum), free(db), free(gh);
    free(hc);
    return o;
}

/* ---- helpers ---- */

/* max |x - ref| / max |ref| over n entries of a vector. */
static double vec_err(const real *x, const long double *ref, int64_t n)
{
    long double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        long double diff = fabsl((long double)x[i] - ref[i]);
        if (isnan((double)x[i]))
            diff = INFINITY;
        num = diff > num ? diff : num;
        den = fabsl(ref[i]) > den ? fabsl(ref[i]) : den;
    }
    return (double)(den > 0 ? num / den : num);
}

static double dvec_err(const double *x, const long double *ref, int64_t n)
{
    long double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        long double diff = fabsl((long double)x[i] - ref[i]);
        num = diff > num ? diff : num;
        den = fabsl(ref[i]) > den ? fabsl(ref[i]) : den;
    }
    return (double)(den > 0 ? num / den : num);
}

static int is_shifted(const mapcase *c)
{
    return c->map == LINATTN_MAP_FAVOR || c->map == LINATTN_MAP_FAVOR_HYP ||
           c->map == LINATTN_MAP_TRIG ||
           (c->map == LINATTN_MAP_CUSTOM && c->act == LINATTN_ACT_EXP);
}

/* Inputs for a map, as test_grad draws them. */
static tmat inputs(const mapcase *c, int layout, int64_t rows, int64_t cols,
                   uint64_t *s)
{
    if (c->map == LINATTN_MAP_IDENTITY)
        return tmat_rand(layout, rows, cols, 1, 0.2, 1, s);
    if (c->map == LINATTN_MAP_TRIG)
        return tmat_rand(layout, rows, cols, 1, -0.4, 0.4, s);
    return tmat_rand(layout, rows, cols, 1, -1, 1, s);
}

static P(plan) *plan_of(const mapcase *c, int policy, double log_decay,
                        double eps)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = BLOCK;
    o.chunk = CHUNK;
    o.seed = 5;
    o.eps = eps;
    o.log_decay = log_decay;
    o.denom = policy;
    return grad_plan(c, D, E, &o);
}

/* The gates of case kind: none (NULL), or in [-0.4, 0], one -1e3 (a state
 * that dies in one step) and one -1e-12 among them. */
static real *gates_of(int64_t n, int kind, uint64_t *s)
{
    if (!kind)
        return NULL;
    real *g = malloc((size_t)(n + 1) * sizeof *g);
    for (int64_t i = 0; i < n; i++)
        g[i] = (real)(-0.4 * test_uniform(s));
    if (n > 20)
        g[17] = (real)-1e3, g[5] = (real)-1e-12;
    return g;
}

/* Key weights with every fifth 0 (its rows of K and V NaN: never read). */
static real *weights_of(int64_t n, tmat *k, tmat *v, uint64_t *s)
{
    real *w = malloc((size_t)(n + 1) * sizeof *w);
    for (int64_t j = 0; j < n; j++) {
        w[j] = (real)(0.25 + test_uniform(s));
        if (j % 5 == 3) {
            w[j] = 0;
            for (int64_t c = 0; c < k->cols; c++)
                *tmat_at(k, j, c) = (real)NAN;
            for (int64_t c = 0; c < v->cols; c++)
                *tmat_at(v, j, c) = (real)NAN;
        }
    }
    return w;
}

/* The causal forward of q, k, v into out with the extras ex. */
static int fwd(const P(plan) *p, const tmat *q, const tmat *k, const tmat *v,
               tmat *out, const P(extras) *ex)
{
    return P(causal_ex)(p, q->layout, q->rows, q->a, q->ld, k->a, k->ld, v->a,
                        v->ld, out->a, out->ld, ex, NULL);
}

/* Its backward from out, den and g into dq, dk, dv with the extras bx
 * (dW, db not asked for); row: bad_row (may be NULL). */
static int bwd(const P(plan) *p, const tmat *q, const tmat *k, const tmat *v,
               const tmat *out, const real *den, const tmat *g, tmat *dq,
               tmat *dk, tmat *dv, const P(extras) *bx, int64_t *row)
{
    return P(causal_backward_ex)(p, q->layout, q->rows, q->a, q->ld, k->a,
                                 k->ld, v->a, v->ld, out->a, out->ld, den,
                                 g->a, g->ld, dq->a, dq->ld, dk->a, dk->ld,
                                 dv->a, dv->ld, NULL, 0, NULL, bx, row);
}

/* ---- every map against the reference ---- */

/* Case i: the map, the policy (0 the map's own, 1 COUNT, 2 NONE: the
 * exact maps only), the decay (0 none, 1 gamma, 2 gates, 3 both), and
 * the parts: weights, a starting state, dstate_end; the layout and the
 * forward's and the backward's thread counts. */
typedef struct {
    mapcase mc;
    int policy, decay, weights, state, dend, layout, tf, tb;
} dcase;

#define DCASES (NMAPS * 4 * 4)

static dcase dcase_of(int i)
{
    dcase c;
    c.mc = map_case(i % NMAPS);
    int rest = i / NMAPS;
    c.decay = rest % 4;
    int v = rest / 4; /* 0..3 */
    c.policy = map_exact(&c.mc) && c.mc.map != LINATTN_MAP_IDENTITY ? v % 3 : 0;
    c.weights = v & 1;
    c.state = (v >> 1) & 1;
    c.dend = (i / 7) & 1;
    c.layout = (i / 3) % 2 ? COL : ROW;
    c.tf = 1 + (i / 5) % 2;
    c.tb = 1 + (i / 11) % 2;
    return c;
}

static int policy_of(const dcase *c, P(plan) *p)
{
    (void)p;
    if (c->policy == 1)
        return LINATTN_DENOM_COUNT;
    if (c->policy == 2)
        return LINATTN_DENOM_NONE;
    if (c->mc.map == LINATTN_MAP_IDENTITY || c->mc.map == LINATTN_MAP_TRIG)
        return LINATTN_DENOM_NONZERO;
    return LINATTN_DENOM_POSITIVE;
}

START_TEST(decayed_against_reference)
{
    dcase c = dcase_of(_i);
    int policy = policy_of(&c, NULL);
    double gamma_log = c.decay & 1 ? -0.07 : 0;
    /* eps joins the normalizer the path holds, which for the shifted maps
     * carries their shift: only the exact maps' is the reference's */
    double eps = is_shifted(&c.mc) || policy == LINATTN_DENOM_NONE ? 0 : 1e-3;
    P(plan) *p = plan_of(&c.mc, policy, gamma_log, eps);
    refmap rm = grad_ref_of(&c.mc, p, D);
    int64_t m = rm.m, ld = E + 1;
    uint64_t s = 100 + (uint64_t)_i;
    tmat q = inputs(&c.mc, c.layout, N, D, &s), k = inputs(&c.mc, c.layout, N, D, &s);
    tmat v = tmat_rand(c.layout, N, E, 2, -1, 1, &s);
    tmat g = tmat_rand(c.layout, N, E, 0, -1, 1, &s);
    real *gates = gates_of(N, c.decay & 2, &s);
    real *w = c.weights ? weights_of(N, &k, &v, &s) : NULL;
    long double *a = zeros(N);
    for (int64_t i = 0; i < N; i++)
        a[i] = gamma_log + (gates ? gates[i] : 0);
    /* a starting state: NP keys of their own through the streaming update
     * (decayed too); its true sums from its accumulator and shift */
    P(state) *st = NULL, *fin = NULL;
    long double *s0 = NULL, c0 = 0;
    double *acc0 = malloc((size_t)(m * ld) * sizeof *acc0), shift0 = 0;
    if (c.state) {
        ck_assert_int_eq(P(state_create)(&st, p), 0);
        tmat k0 = inputs(&c.mc, ROW, NP, D, &s);
        tmat v0 = tmat_rand(ROW, NP, E, 0, -1, 1, &s);
        ck_assert_int_eq(P(state_update)(st, ROW, NP, k0.a, k0.ld, v0.a, v0.ld),
                         0);
        ck_assert_int_eq(P(state_export)(st, acc0, &shift0, NULL), 0);
        double kw;
        ck_assert_int_eq(P(state_key_weight)(st, &kw), 0);
        c0 = kw;
        s0 = zeros(m * ld);
        for (int64_t x = 0; x < m * ld; x++)
            s0[x] = (long double)acc0[x] * expl(shift0);
        tmat_free(&k0), tmat_free(&v0);
    }
    /* the forward with its normalizers, and the final state's shift */
    tmat out = tmat_like(&q, N, E, 1);
    real *den = malloc(N * sizeof *den);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den;
    ex.weights = w;
    ex.gates = gates;
    /* the forward saves its chunk states, which the second backward reads */
    int64_t cslen = 0;
    ck_assert_int_eq(P(causal_chunk_states_size)(p, N, &cslen), 0);
    real *cs = malloc((size_t)cslen * sizeof *cs);
    ex.chunk_states = cs;
    double shift_end = 0;
    if (st) {
        ck_assert_int_eq(P(state_create)(&fin, p), 0);
        ck_assert_int_eq(P(state_copy)(fin, st), 0);
        ex.state = fin;
        ex.absorb = 1;
    }
    int old = test_set_threads(c.tf);
    ck_assert_int_eq(fwd(p, &q, &k, &v, &out, &ex), 0);
    if (fin)
        ck_assert_int_eq(P(state_shift)(fin, &shift_end), 0);
    else if (is_shifted(&c.mc)) {
        /* the final running shift: the largest key exponent, which the
         * state absorbing the call would hold */
        P(state) *tmp = NULL;
        ck_assert_int_eq(P(state_create)(&tmp, p), 0);
        P(extras) ex2;
        P(extras_init)(&ex2);
        ex2.weights = w;
        ex2.gates = gates;
        ex2.state = tmp;
        ex2.absorb = 1;
        tmat o2 = tmat_like(&q, N, E, 0);
        ck_assert_int_eq(fwd(p, &q, &k, &v, &o2, &ex2), 0);
        ck_assert_int_eq(P(state_shift)(tmp, &shift_end), 0);
        P(state_destroy)(tmp);
        tmat_free(&o2);
    }
    /* the final state's gradient from beyond: true values, handed in at
     * the final state's shift */
    long double *dend = NULL;
    double *dend_acc = NULL;
    if (c.dend) {
        dend = zeros(m * ld);
        dend_acc = malloc((size_t)(m * ld) * sizeof *dend_acc);
        for (int64_t x = 0; x < m * ld; x++) {
            dend[x] = test_uniform(&s) - 0.5;
            dend_acc[x] = (double)(dend[x] * expl(shift_end));
        }
    }
    dref_in in = {&rm, policy, 1, eps, &q, &k, &v, &g, w, a, s0, dend, c0};
    dref ref = dref_run(&in);
    /* the backward, rebuilding the carried state (pass 0) and reading the
     * forward's saved chunk states (pass 1, the forward's split on tf
     * threads read on tb), each against the reference */
    for (int pass = 0; pass < 2; pass++) {
        tmat dq = tmat_like(&q, N, D, 1), dk = tmat_like(&q, N, D, 0);
        tmat dv = tmat_like(&q, N, E, 3);
        real *dg = malloc(N * sizeof *dg), *dwt = malloc(N * sizeof *dwt);
        double *ds0 = malloc((size_t)(m * ld) * sizeof *ds0);
        /* dW and db: the custom maps' (the random maps' W is drawn, not
         * trained) */
        int64_t wr = c.mc.map == LINATTN_MAP_CUSTOM ? rm.rows : 0;
        int64_t lddw = c.layout == ROW ? D : wr;
        real *dw = wr ? malloc((size_t)(wr * D) * sizeof *dw) : NULL;
        real *db = wr ? malloc((size_t)wr * sizeof *db) : NULL;
        P(extras) bx;
        P(extras_init)(&bx);
        bx.weights = w;
        bx.dweights = dwt;
        bx.gates = gates;
        bx.dgates = dg;
        bx.state = st;
        bx.dstates = st ? ds0 : NULL;
        bx.dstate_end = dend_acc;
        bx.chunk_states = pass ? cs : NULL;
        test_set_threads(c.tb);
        int64_t row = -7;
        int status = P(causal_backward_ex)(
            p, c.layout, N, q.a, q.ld, k.a, k.ld, v.a, v.ld, out.a, out.ld,
            den, g.a, g.ld, dq.a, dq.ld, dk.a, dk.ld, dv.a, dv.ld, dw, lddw,
            db, &bx, &row);
        test_set_threads(old);
        ck_assert_msg(status == 0, "%s case %d pass %d: status %d row %lld",
                      c.mc.name, _i, pass, status, (long long)row);
        double tol = TOL * 10; /* sums of n products, decayed */
        ck_assert_msg(rel_err(&out, ref.out) < tol, "%s %d out %g",
                      c.mc.name, _i, rel_err(&out, ref.out));
        ck_assert_msg(rel_err(&dq, ref.dq) < tol, "%s %d pass %d dq %g",
                      c.mc.name, _i, pass, rel_err(&dq, ref.dq));
        ck_assert_msg(rel_err(&dk, ref.dk) < tol, "%s %d pass %d dk %g",
                      c.mc.name, _i, pass, rel_err(&dk, ref.dk));
        ck_assert_msg(rel_err(&dv, ref.dv) < tol, "%s %d pass %d dv %g",
                      c.mc.name, _i, pass, rel_err(&dv, ref.dv));
        ck_assert_msg(vec_err(dwt, ref.dwt, N) < tol, "%s %d dweights %g",
                      c.mc.name, _i, vec_err(dwt, ref.dwt, N));
        ck_assert_msg(vec_err(dg, ref.dg, N) < tol,
                      "%s %d pass %d dgates %g (decay %d)", c.mc.name, _i,
                      pass, vec_err(dg, ref.dg, N), c.decay);
        if (wr) {
            ck_assert(rel_err_vec(dw, lddw, wr, D, c.layout, ref.dw) < tol);
            ck_assert(rel_err_vec(db, 1, wr, 1, ROW, ref.db) < tol);
        }
        if (st) { /* the accumulator's gradient: the true one times
                   * exp(shift) */
            long double *want = zeros(m * ld);
            for (int64_t x = 0; x < m * ld; x++)
                want[x] = ref.ds0[x] * expl(shift0);
            ck_assert_msg(dvec_err(ds0, want, m * ld) < tol,
                          "%s %d dstates %g", c.mc.name, _i,
                          dvec_err(ds0, want, m * ld));
            free(want);
        }
        ck_assert(tmat_padding_intact(&dq) && tmat_padding_intact(&dv));
        tmat_free(&dq), tmat_free(&dk), tmat_free(&dv);
        free(dg), free(dwt), free(ds0), free(dw), free(db);
    }
    P(state_destroy)(st), P(state_destroy)(fin);
    dref_free(&ref), ref_free(&rm), P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
    tmat_free(&out);
    free(den), free(cs);
    free(gates), free(w), free(a), free(s0), free(acc0), free(dend);
    free(dend_acc);
}
END_TEST

/* ---- finite differences (double) ---- */

#ifndef TEST_SINGLE
/* L = sum G . out of the library's forward with gates gt and plan p. */
static long double loss_of(P(plan) *p, const tmat *q, const tmat *k,
                           const tmat *v, const tmat *g, const real *gt)
{
    tmat out = tmat_like(q, N, E, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.gates = gt;
    ck_assert_int_eq(fwd(p, q, k, v, &out, &ex), 0);
    long double l = 0;
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < E; c++)
            l += (long double)*tmat_at(g, i, c) * *tmat_at(&out, i, c);
    tmat_free(&out);
    return l;
}

START_TEST(dgates_against_finite_differences)
{
    /* elu+1 positive, FAVOR+ (shifted), identity without normalizer */
    static const int maps[] = {1, 3, 0};
    mapcase mc = map_case(maps[_i]);
    int policy = _i == 2 ? LINATTN_DENOM_NONE : LINATTN_DENOM_POSITIVE;
    P(plan) *p = plan_of(&mc, policy, -0.05, 0);
    uint64_t s = 71;
    tmat q = inputs(&mc, ROW, N, D, &s), k = inputs(&mc, ROW, N, D, &s);
    tmat v = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    tmat g = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    real *gt = malloc(N * sizeof *gt);
    for (int64_t i = 0; i < N; i++)
        gt[i] = -0.1 - 0.3 * test_uniform(&s);
    tmat out = tmat_like(&q, N, E, 0);
    real *den = malloc(N * sizeof *den), *dg = malloc(N * sizeof *dg);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den;
    ex.gates = gt;
    ck_assert_int_eq(fwd(p, &q, &k, &v, &out, &ex), 0);
    tmat dq = tmat_like(&q, N, D, 0), dk = tmat_like(&q, N, D, 0);
    tmat dv = tmat_like(&q, N, E, 0);
    P(extras) bx;
    P(extras_init)(&bx);
    bx.gates = gt;
    bx.dgates = dg;
    ck_assert_int_eq(bwd(p, &q, &k, &v, &out, den, &g, &dq, &dk, &dv, &bx, NULL), 0);
    const double hh = 1e-6;
    double sum = 0;
    for (int64_t t = 0; t < N; t++) {
        real keep = gt[t];
        gt[t] = keep + hh;
        long double lp = loss_of(p, &q, &k, &v, &g, gt);
        gt[t] = keep - hh;
        long double lm = loss_of(p, &q, &k, &v, &g, gt);
        gt[t] = keep;
        double fd = (double)((lp - lm) / (2 * hh));
        ck_assert_msg(fabs(fd - dg[t]) < 1e-6 * (1 + fabs(fd)),
                      "%s t %lld: fd %.10g dgates %.10g", mc.name,
                      (long long)t, fd, dg[t]);
        sum += dg[t];
    }
    /* dL/d ln gamma = the sum over the tokens */
    P(plan) *pp = plan_of(&mc, policy, -0.05 + hh, 0);
    P(plan) *pm = plan_of(&mc, policy, -0.05 - hh, 0);
    double fd = (double)((loss_of(pp, &q, &k, &v, &g, gt) -
                          loss_of(pm, &q, &k, &v, &g, gt)) /
                         (2 * hh));
    ck_assert_msg(fabs(fd - sum) < 1e-6 * (1 + fabs(fd)),
                  "%s: dL/dln gamma fd %.10g sum %.10g", mc.name, fd, sum);
    P(plan_destroy)(pp), P(plan_destroy)(pm), P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
    tmat_free(&out), tmat_free(&dq), tmat_free(&dk), tmat_free(&dv);
    free(gt), free(den), free(dg);
}
END_TEST
#endif

/* ---- bit for bit ---- */

/* The backward with gates of 0 (dgates asked for or not) gives the
 * undecayed backward's dq, dk, dv bits. */
START_TEST(zero_gates_give_the_undecayed_bits)
{
    mapcase mc = map_case(_i % 4); /* identity, elu1, relu, favor */
    int layout = _i / 4 ? COL : ROW;
    int policy = mc.map == LINATTN_MAP_IDENTITY ? LINATTN_DENOM_NONZERO
                                                : LINATTN_DENOM_POSITIVE;
    P(plan) *p = plan_of(&mc, policy, 0, is_shifted(&mc) ? 0 : 1e-3);
    uint64_t s = 31 + (uint64_t)_i;
    tmat q = inputs(&mc, layout, N, D, &s), k = inputs(&mc, layout, N, D, &s);
    tmat v = tmat_rand(layout, N, E, 0, -1, 1, &s);
    tmat g = tmat_rand(layout, N, E, 0, -1, 1, &s);
    tmat out = tmat_like(&q, N, E, 0);
    real *den = malloc(N * sizeof *den), *gt = calloc(N, sizeof *gt);
    real *dg = malloc(N * sizeof *dg);
    ck_assert_int_eq(P(causal_forward)(p, layout, N, q.a, q.ld, k.a, k.ld,
                                       v.a, v.ld, out.a, out.ld, den, NULL),
                     0);
    tmat dq[2], dk[2], dv[2];
    for (int r = 0; r < 2; r++) {
        dq[r] = tmat_like(&q, N, D, 0), dk[r] = tmat_like(&q, N, D, 0);
        dv[r] = tmat_like(&q, N, E, 0);
        P(extras) bx;
        P(extras_init)(&bx);
        if (r)
            bx.gates = gt, bx.dgates = dg;
        ck_assert_int_eq(bwd(p, &q, &k, &v, &out, den, &g, &dq[r], &dk[r],
                             &dv[r], &bx, NULL),
                         0);
    }
    size_t bytes_d = (size_t)(N * D) * sizeof(real), bytes_e = (size_t)(N * E) * sizeof(real);
    ck_assert(memcmp(dq[0].a, dq[1].a, bytes_d) == 0);
    ck_assert(memcmp(dk[0].a, dk[1].a, bytes_d) == 0);
    ck_assert(memcmp(dv[0].a, dv[1].a, bytes_e) == 0);
    for (int r = 0; r < 2; r++)
        tmat_free(&dq[r]), tmat_free(&dk[r]), tmat_free(&dv[r]);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g), tmat_free(&out);
    free(den), free(gt), free(dg);
}
END_TEST

/* dq of rows i <= r does not move when every later token changes: its
 * key, value (NaN), G and its gate (to -1e3); dq rows read no later
 * gate, not even as 0 * Inf. */
START_TEST(decayed_dq_reads_no_later_token)
{
    mapcase mc = map_case(_i ? 3 : 1); /* elu1, favor */
    P(plan) *p = plan_of(&mc, LINATTN_DENOM_POSITIVE, -0.02, 0);
    uint64_t s = 57;
    const int64_t r = 19;
    tmat q = inputs(&mc, ROW, N, D, &s), k = inputs(&mc, ROW, N, D, &s);
    tmat v = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    tmat g = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    real *gt = gates_of(N, 1, &s), *dg = malloc(N * sizeof *dg);
    tmat dq[2];
    for (int pass = 0; pass < 2; pass++) {
        if (pass) /* change every later token */
            for (int64_t i = r + 1; i < N; i++) {
                for (int64_t c = 0; c < D; c++)
                    *tmat_at(&k, i, c) = (real)(0.1 * (i % 4)),
                    *tmat_at(&q, i, c) = (real)-0.5;
                for (int64_t c = 0; c < E; c++)
                    *tmat_at(&v, i, c) = (real)NAN, *tmat_at(&g, i, c) = 7;
                gt[i] = (real)-1e3;
            }
        tmat out = tmat_like(&q, N, E, 0);
        real *den = malloc(N * sizeof *den);
        P(extras) ex;
        P(extras_init)(&ex);
        ex.den = den;
        ex.gates = gt;
        ck_assert_int_eq(fwd(p, &q, &k, &v, &out, &ex), 0);
        dq[pass] = tmat_like(&q, N, D, 0);
        tmat dk = tmat_like(&q, N, D, 0), dv = tmat_like(&q, N, E, 0);
        P(extras) bx;
        P(extras_init)(&bx);
        bx.gates = gt;
        bx.dgates = dg;
        bwd(p, &q, &k, &v, &out, den, &g, &dq[pass], &dk, &dv, &bx, NULL);
        tmat_free(&out), tmat_free(&dk), tmat_free(&dv), free(den);
    }
    ck_assert(memcmp(dq[0].a, dq[1].a, (size_t)((r + 1) * D) * sizeof(real)) ==
              0);
    tmat_free(&dq[0]), tmat_free(&dq[1]);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
    free(gt), free(dg);
}
END_TEST

/* The batched call with gates, a log decay per head and dL/da: problem
 * (b, h) as the single call from a plan of head h's decay, bit for bit. */
START_TEST(batched_decayed_against_single)
{
    enum { B = 2, H = 3, NB = 21 };
    const double heads[H] = {-0.01, 0, -0.3};
    mapcase mc = map_case(_i ? 3 : 1);
    P(plan) *p = plan_of(&mc, LINATTN_DENOM_POSITIVE, 0, 0);
    int64_t P_ = B * H, rows = P_ * NB;
    uint64_t s = 91;
    /* dense rows (ld D, E): the strides below describe them */
    tmat q = tmat_rand(ROW, rows, D, 0, -1, 1, &s);
    tmat k = tmat_rand(ROW, rows, D, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, rows, E, 0, -1, 1, &s);
    tmat g = tmat_rand(ROW, rows, E, 0, -1, 1, &s);
    tmat out = tmat_like(&q, rows, E, 0);
    real *gt = gates_of(rows, 1, &s);
    real *den = malloc((size_t)rows * sizeof *den);
    real *dg = malloc((size_t)rows * sizeof *dg);
    /* problem (b, h) at rows (b H + h) NB */
    linattn_strides sd = {D, H * NB * D, NB * D}, se = {E, H * NB * E, NB * E};
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den;
    ex.gates = gt;
    ex.head_decays = heads;
    linattn_where wb = {0, 0, 0};
    int fst = P(batched_causal_ex)(p, ROW, B, H, NB, q.a, &sd, k.a, &sd, v.a,
                                   &se, out.a, &se, &ex, &wb);
    ck_assert_msg(fst == 0, "status %d at (%lld, %lld) row %lld", fst,
                  (long long)wb.batch, (long long)wb.head, (long long)wb.row);
    tmat dq = tmat_like(&q, rows, D, 0), dk = tmat_like(&q, rows, D, 0);
    tmat dv = tmat_like(&q, rows, E, 0);
    P(extras) bx;
    P(extras_init)(&bx);
    bx.gates = gt;
    bx.dgates = dg;
    bx.head_decays = heads;
    ck_assert_int_eq(P(batched_causal_backward_ex)(p, ROW, B, H, NB, q.a, &sd,
                                                   k.a, &sd, v.a, &se, out.a,
                                                   &se, den, g.a, &se, dq.a,
                                                   &sd, dk.a, &sd, dv.a, &se,
                                                   NULL, 0, NULL, &bx, NULL),
                     0);
    /* each problem of the batched call runs on one thread */
    int old = test_set_threads(1);
    for (int64_t pr = 0; pr < P_; pr++) {
        P(plan) *ph = plan_of(&mc, LINATTN_DENOM_POSITIVE, heads[pr % H], 0);
        int64_t o = pr * NB;
        tmat sq = tmat_like(&q, NB, D, 0), sk = tmat_like(&q, NB, D, 0);
        tmat sv = tmat_like(&q, NB, E, 0);
        real one_dg[NB];
        P(extras) b1;
        P(extras_init)(&b1);
        b1.gates = gt + o;
        b1.dgates = one_dg;
        ck_assert_int_eq(P(causal_backward_ex)(ph, ROW, NB, q.a + o * D, D,
                                               k.a + o * D, D, v.a + o * E, E,
                                               out.a + o * E, E, den + o,
                                               g.a + o * E, E, sq.a, D, sk.a,
                                               D, sv.a, E, NULL, 0, NULL, &b1,
                                               NULL),
                         0);
        ck_assert(memcmp(sq.a, dq.a + o * D, NB * D * sizeof(real)) == 0);
        ck_assert(memcmp(sk.a, dk.a + o * D, NB * D * sizeof(real)) == 0);
        ck_assert(memcmp(sv.a, dv.a + o * E, NB * E * sizeof(real)) == 0);
        ck_assert(memcmp(one_dg, dg + o, NB * sizeof(real)) == 0);
        tmat_free(&sq), tmat_free(&sk), tmat_free(&sv), P(plan_destroy)(ph);
    }
    test_set_threads(old);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
    tmat_free(&out), tmat_free(&dq), tmat_free(&dk), tmat_free(&dv);
    free(gt), free(den), free(dg);
}
END_TEST

/* The starting state's gradient alone (backward_dstates) with decay: as
 * backward_ex's, to rounding, dstate_end included. */
START_TEST(decayed_dstates_alone)
{
    mapcase mc = map_case(_i ? 3 : 1);
    P(plan) *p = plan_of(&mc, LINATTN_DENOM_POSITIVE, -0.03, 0);
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    int64_t ld = E + 1;
    uint64_t s = 13;
    tmat q = inputs(&mc, ROW, N, D, &s), k = inputs(&mc, ROW, N, D, &s);
    tmat v = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    tmat g = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    tmat k0 = inputs(&mc, ROW, NP, D, &s);
    tmat v0 = tmat_rand(ROW, NP, E, 0, -1, 1, &s);
    real *gt = gates_of(N, 1, &s);
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    ck_assert_int_eq(P(state_update)(st, ROW, NP, k0.a, k0.ld, v0.a, v0.ld), 0);
    tmat out = tmat_like(&q, N, E, 0);
    real *den = malloc(N * sizeof *den);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den;
    ex.gates = gt;
    ex.state = st;
    ck_assert_int_eq(fwd(p, &q, &k, &v, &out, &ex), 0);
    double *dend = malloc((size_t)(m * ld) * sizeof *dend);
    double *d1 = malloc((size_t)(m * ld) * sizeof *d1);
    double *d2 = malloc((size_t)(m * ld) * sizeof *d2);
    for (int64_t x = 0; x < m * ld; x++)
        dend[x] = test_uniform(&s) - 0.5;
    tmat dq = tmat_like(&q, N, D, 0), dk = tmat_like(&q, N, D, 0);
    tmat dv = tmat_like(&q, N, E, 0);
    P(extras) bx;
    P(extras_init)(&bx);
    bx.gates = gt;
    bx.state = st;
    bx.dstates = d1;
    bx.dstate_end = dend;
    ck_assert_int_eq(bwd(p, &q, &k, &v, &out, den, &g, &dq, &dk, &dv, &bx, NULL), 0);
    bx.dstates = d2;
    ck_assert_int_eq(P(causal_backward_dstates)(p, ROW, N, q.a, q.ld, k.a,
                                                k.ld, out.a, out.ld, den, g.a,
                                                g.ld, &bx, NULL),
                     0);
    long double *want = zeros(m * ld);
    for (int64_t x = 0; x < m * ld; x++)
        want[x] = d1[x];
    ck_assert_msg(dvec_err(d2, want, m * ld) < TOL * 100, "%g",
                  dvec_err(d2, want, m * ld));
    free(want), free(dend), free(d1), free(d2), free(den), free(gt);
    P(state_destroy)(st), P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
    tmat_free(&k0), tmat_free(&v0), tmat_free(&out);
    tmat_free(&dq), tmat_free(&dk), tmat_free(&dv);
}
END_TEST

/* Non-causal attention without normalizer: out = phi(q)^T S, its
 * gradients against the reference (no decay). */
START_TEST(no_normalizer_noncausal)
{
    mapcase mc = map_case(_i); /* identity, elu1, relu */
    P(plan) *p = plan_of(&mc, LINATTN_DENOM_NONE, 0, 0);
    refmap rm = grad_ref_of(&mc, p, D);
    uint64_t s = 3 + (uint64_t)_i;
    const int64_t nq = 13, nk = 11;
    tmat q = inputs(&mc, ROW, nq, D, &s), k = inputs(&mc, ROW, nk, D, &s);
    tmat v = tmat_rand(ROW, nk, E, 0, -1, 1, &s);
    tmat g = tmat_rand(ROW, nq, E, 0, -1, 1, &s);
    tmat out = tmat_like(&q, nq, E, 0);
    real *den = malloc(nq * sizeof *den);
    ck_assert_int_eq(P(attention_forward)(p, ROW, nq, nk, q.a, q.ld, k.a, k.ld,
                                          v.a, v.ld, out.a, out.ld, den, NULL),
                     0);
    for (int64_t i = 0; i < nq; i++)
        ck_assert(den[i] == 1);
    long double a0[16] = {0};
    dref_in in = {&rm, LINATTN_DENOM_NONE, 0, 0, &q, &k, &v, &g, NULL, a0,
                  NULL, NULL, 0};
    dref ref = dref_run(&in);
    tmat dq = tmat_like(&q, nq, D, 0), dk = tmat_like(&q, nk, D, 0);
    tmat dv = tmat_like(&q, nk, E, 0);
    ck_assert_int_eq(P(attention_backward)(p, ROW, nq, nk, q.a, q.ld, k.a,
                                           k.ld, v.a, v.ld, out.a, out.ld, den,
                                           g.a, g.ld, dq.a, dq.ld, dk.a, dk.ld,
                                           dv.a, dv.ld, NULL, 0, NULL, NULL,
                                           NULL),
                     0);
    ck_assert(rel_err(&out, ref.out) < TOL * 100);
    ck_assert(rel_err(&dq, ref.dq) < TOL * 100);
    ck_assert(rel_err(&dk, ref.dk) < TOL * 100);
    ck_assert(rel_err(&dv, ref.dv) < TOL * 100);
    dref_free(&ref), ref_free(&rm), P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
    tmat_free(&out), tmat_free(&dq), tmat_free(&dk), tmat_free(&dv);
    free(den);
}
END_TEST

/* ---- refusals: nothing written ---- */

START_TEST(decayed_backward_refusals)
{
    mapcase mc = map_case(1);
    P(plan) *p = plan_of(&mc, LINATTN_DENOM_POSITIVE, -0.1, 0);
    P(plan) *pn = plan_of(&mc, LINATTN_DENOM_POSITIVE, 0, 0);
    uint64_t s = 8;
    tmat q = inputs(&mc, ROW, N, D, &s), k = inputs(&mc, ROW, N, D, &s);
    tmat v = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    tmat g = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    tmat out = tmat_like(&q, N, E, 0);
    real *den = malloc(N * sizeof *den), *gt = gates_of(N, 1, &s);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den;
    ex.gates = gt;
    ck_assert_int_eq(fwd(p, &q, &k, &v, &out, &ex), 0);
    tmat dq = tmat_like(&q, N, D, 0), dk = tmat_like(&q, N, D, 0);
    tmat dv = tmat_like(&q, N, E, 0);
    real *dg = malloc((N + 4) * sizeof *dg);
    for (int64_t i = 0; i < N * D; i++)
        dq.a[i] = dk.a[i] = 42;
    for (int64_t i = 0; i < N * E; i++)
        dv.a[i] = 42;
    for (int64_t i = 0; i < N + 4; i++)
        dg[i] = 42;
#define UNTOUCHED()                                                        \
    do {                                                                   \
        for (int64_t i_ = 0; i_ < N * D; i_++)                             \
            ck_assert(dq.a[i_] == 42 && dk.a[i_] == 42);                   \
        for (int64_t i_ = 0; i_ < N * E; i_++)                             \
            ck_assert(dv.a[i_] == 42);                                     \
        for (int64_t i_ = 0; i_ < N + 4; i_++)                             \
            ck_assert(dg[i_] == 42);                                       \
    } while (0)
#define BWD(plan, bx) bwd(plan, &q, &k, &v, &out, den, &g, &dq, &dk, &dv, bx, NULL)
    P(extras) bx;
    /* a gate above 0: -24 */
    P(extras_init)(&bx);
    bx.gates = gt;
    bx.dgates = dg;
    real keep = gt[9];
    gt[9] = (real)1e-3;
    ck_assert_int_eq(BWD(p, &bx), -24);
    gt[9] = (real)INFINITY;
    ck_assert_int_eq(BWD(p, &bx), -24);
    gt[9] = keep;
    UNTOUCHED();
    /* dgates meeting dq: -24 (the extras') */
    bx.dgates = dq.a + 2;
    ck_assert_int_eq(BWD(p, &bx), -24);
    bx.dgates = dg;
    UNTOUCHED();
    /* the non-causal backward takes neither a decayed plan nor dgates */
    P(extras) nx;
    P(extras_init)(&nx);
    ck_assert_int_eq(P(attention_backward_ex)(p, ROW, N, N, q.a, q.ld, k.a,
                                              k.ld, v.a, v.ld, out.a, out.ld,
                                              den, g.a, g.ld, dq.a, dq.ld,
                                              dk.a, dk.ld, dv.a, dv.ld, NULL,
                                              0, NULL, NULL, &nx, NULL),
                     -1);
    nx.dgates = dg;
    ck_assert_int_eq(P(attention_backward_ex)(pn, ROW, N, N, q.a, q.ld, k.a,
                                              k.ld, v.a, v.ld, out.a, out.ld,
                                              den, g.a, g.ld, dq.a, dq.ld,
                                              dk.a, dk.ld, dv.a, dv.ld, NULL,
                                              0, NULL, NULL, &nx, NULL),
                     -26);
    UNTOUCHED();
    /* a NaN gate under check_finite: LINATTN_ENONFINITE */
    linattn_opts o;
    linattn_opts_init(&o);
    o.log_decay = -0.1;
    o.check_finite = 1;
    P(plan) *pc = NULL;
    ck_assert_int_eq(P(plan_create)(&pc, LINATTN_MAP_ELU1, D, E, &o), 0);
    gt[3] = (real)NAN;
    ck_assert_int_eq(BWD(pc, &bx), LINATTN_ENONFINITE);
    UNTOUCHED();
#undef BWD
#undef UNTOUCHED
    P(plan_destroy)(p), P(plan_destroy)(pn), P(plan_destroy)(pc);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
    tmat_free(&out), tmat_free(&dq), tmat_free(&dk), tmat_free(&dv);
    free(den), free(gt), free(dg);
}
END_TEST

/* ---- the forward's saved chunk states ---- */

/* The forward keeps its bits when it saves its chunk states; the size
 * query's errors; the backward refuses (-24, nothing written) a buffer
 * the forward did not seal for its n and plan, and both calls one that
 * meets another array or comes with packed sequences; calls that do not
 * take the part refuse it. */
START_TEST(chunk_states_refusals_and_bits)
{
    mapcase mc = map_case(1);
    P(plan) *p = plan_of(&mc, LINATTN_DENOM_POSITIVE, -0.1, 0);
    P(plan) *pn = plan_of(&mc, LINATTN_DENOM_POSITIVE, -0.2, 0);
    uint64_t s = 9;
    tmat q = inputs(&mc, ROW, N, D, &s), k = inputs(&mc, ROW, N, D, &s);
    tmat v = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    tmat g = tmat_rand(ROW, N, E, 0, -1, 1, &s);
    tmat out = tmat_like(&q, N, E, 0), out2 = tmat_like(&q, N, E, 0);
    real *den = malloc(N * sizeof *den), *den2 = malloc(N * sizeof *den2);
    real *gt = gates_of(N, 1, &s);
    int64_t len = -1, len0 = -1;
    ck_assert_int_eq(P(causal_chunk_states_size)(NULL, N, &len), -1);
    ck_assert_int_eq(P(causal_chunk_states_size)(p, -1, &len), -2);
    ck_assert_int_eq(P(causal_chunk_states_size)(p, N, NULL), -3);
    ck_assert_int_eq(len, -1);
    ck_assert_int_eq(P(causal_chunk_states_size)(p, N, &len), 0);
    ck_assert_int_eq(P(causal_chunk_states_size)(p, 0, &len0), 0);
    /* at least a state (m (e + 1)) per chunk and the final one */
    ck_assert(len >= (N / CHUNK + 2) * D * (E + 1) && len0 >= D * (E + 1));
    real *cs = calloc((size_t)len, sizeof *cs);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den;
    ex.gates = gt;
    for (int threads = 1; threads <= 2; threads++) {
        int old = test_set_threads(threads);
        ex.chunk_states = NULL;
        ex.den = den2;
        ck_assert_int_eq(fwd(p, &q, &k, &v, &out2, &ex), 0);
        ex.chunk_states = cs;
        ex.den = den;
        ck_assert_int_eq(fwd(p, &q, &k, &v, &out, &ex), 0);
        test_set_threads(old);
        ck_assert(memcmp(out.a, out2.a, (size_t)(N * out.ld) * sizeof(real)) ==
                  0);
        ck_assert(memcmp(den, den2, N * sizeof *den) == 0);
    }
    tmat dq = tmat_like(&q, N, D, 0), dk = tmat_like(&q, N, D, 0);
    tmat dv = tmat_like(&q, N, E, 0);
    for (int64_t i = 0; i < N * D; i++)
        dq.a[i] = dk.a[i] = 42;
    for (int64_t i = 0; i < N * E; i++)
        dv.a[i] = 42;
#define UNTOUCHED()                                                        \
    do {                                                                   \
        for (int64_t i_ = 0; i_ < N * D; i_++)                             \
            ck_assert(dq.a[i_] == 42 && dk.a[i_] == 42);                   \
        for (int64_t i_ = 0; i_ < N * E; i_++)                             \
            ck_assert(dv.a[i_] == 42);                                     \
    } while (0)
#define BWD(plan, rows, bx)                                                \
    P(causal_backward_ex)(plan, ROW, rows, q.a, q.ld, k.a, k.ld, v.a,       \
                          v.ld, out.a, out.ld, den, g.a, g.ld, dq.a, dq.ld, \
                          dk.a, dk.ld, dv.a, dv.ld, NULL, 0, NULL, bx, NULL)
    P(extras) bx;
    P(extras_init)(&bx);
    bx.gates = gt;
    /* never written */
    real *blank = calloc((size_t)len, sizeof *blank);
    bx.chunk_states = blank;
    ck_assert_int_eq(BWD(p, N, &bx), -24);
    /* sealed for N - 1 rows, or by a plan with another decay */
    P(extras) e2;
    P(extras_init)(&e2);
    e2.gates = gt;
    e2.chunk_states = blank;
    ck_assert_int_eq(P(causal_ex)(p, ROW, N - 1, q.a, q.ld, k.a, k.ld, v.a,
                                  v.ld, out2.a, out2.ld, &e2, NULL),
                     0);
    ck_assert_int_eq(BWD(p, N, &bx), -24);
    ck_assert_int_eq(P(causal_ex)(pn, ROW, N, q.a, q.ld, k.a, k.ld, v.a,
                                  v.ld, out2.a, out2.ld, &e2, NULL),
                     0);
    ck_assert_int_eq(BWD(p, N, &bx), -24);
    UNTOUCHED();
    /* meeting dq, or with packed sequences */
    bx.chunk_states = dq.a;
    ck_assert_int_eq(BWD(p, N, &bx), -24);
    UNTOUCHED();
    int64_t off[3] = {0, 20, N};
    bx.chunk_states = cs;
    bx.offsets = off;
    bx.nseq = 2;
    ck_assert_int_eq(BWD(p, N, &bx), -24);
    UNTOUCHED();
    bx.offsets = NULL;
    bx.nseq = 0;
    /* the forward: meeting q, or packed: -12, out and the buffer kept */
    memcpy(blank, cs, (size_t)len * sizeof *cs);
    memcpy(out2.a, out.a, (size_t)(N * out.ld) * sizeof(real));
    e2.chunk_states = q.a + 1;
    ck_assert_int_eq(P(causal_ex)(p, ROW, N, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                  out.a, out.ld, &e2, NULL),
                     -12);
    e2.chunk_states = cs;
    e2.offsets = off;
    e2.nseq = 2;
    ck_assert_int_eq(P(causal_ex)(p, ROW, N, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                  out.a, out.ld, &e2, NULL),
                     -12);
    ck_assert(memcmp(blank, cs, (size_t)len * sizeof *cs) == 0);
    ck_assert(memcmp(out.a, out2.a, (size_t)(N * out.ld) * sizeof(real)) == 0);
    /* the non-causal call does not take the part */
    P(extras) nx;
    P(extras_init)(&nx);
    nx.chunk_states = cs;
    ck_assert_int_eq(P(attention_ex)(pn, ROW, N, N, q.a, q.ld, k.a, k.ld, v.a,
                                     v.ld, out.a, out.ld, &nx, NULL),
                     -1); /* a decayed plan: refused first */
    P(plan) *pu = plan_of(&mc, LINATTN_DENOM_POSITIVE, 0, 0);
    ck_assert_int_eq(P(attention_ex)(pu, ROW, N, N, q.a, q.ld, k.a, k.ld, v.a,
                                     v.ld, out.a, out.ld, &nx, NULL),
                     -13);
    ck_assert(memcmp(out.a, out2.a, (size_t)(N * out.ld) * sizeof(real)) == 0);
    /* the sealed buffer still serves its backward ... */
    bx.chunk_states = cs;
    ck_assert_int_eq(BWD(p, N, &bx), 0);
    /* ... until a forward into it fails after its checks (identity map,
     * den_0 = q_0 . k_0 < 0 under the positive policy: LINATTN_EDENOM) */
    linattn_opts io;
    linattn_opts_init(&io);
    io.denom = LINATTN_DENOM_POSITIVE;
    P(plan) *pi = NULL;
    ck_assert_int_eq(P(plan_create)(&pi, LINATTN_MAP_IDENTITY, D, E, &io), 0);
    tmat qn = tmat_like(&q, N, D, 0), kp = tmat_like(&q, N, D, 0);
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < D; c++)
            *tmat_at(&qn, i, c) = -1, *tmat_at(&kp, i, c) = 1;
    P(extras) e3;
    P(extras_init)(&e3);
    e3.chunk_states = cs;
    ck_assert_int_eq(P(causal_ex)(pi, ROW, N, qn.a, qn.ld, kp.a, kp.ld, v.a,
                                  v.ld, out2.a, out2.ld, &e3, NULL),
                     LINATTN_EDENOM);
    ck_assert_int_eq(BWD(p, N, &bx), -24);
    P(plan_destroy)(pi);
    tmat_free(&qn), tmat_free(&kp);
    /* no rows: sealed too */
    e2.offsets = NULL;
    e2.nseq = 0;
    ck_assert_int_eq(P(causal_ex)(p, ROW, 0, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                  out.a, out.ld, &e2, NULL),
                     0);
    ck_assert_int_eq(BWD(p, 0, &bx), 0);
#undef BWD
#undef UNTOUCHED
    P(plan_destroy)(p), P(plan_destroy)(pn), P(plan_destroy)(pu);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
    tmat_free(&out), tmat_free(&out2), tmat_free(&dq), tmat_free(&dk);
    tmat_free(&dv);
    free(den), free(den2), free(gt), free(cs), free(blank);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("decay_grad_" PREC);
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, decayed_against_reference, 0, DCASES);
#ifndef TEST_SINGLE
    tcase_add_loop_test(tc, dgates_against_finite_differences, 0, 3);
#endif
    tcase_add_loop_test(tc, zero_gates_give_the_undecayed_bits, 0, 8);
    tcase_add_loop_test(tc, decayed_dq_reads_no_later_token, 0, 2);
    tcase_add_loop_test(tc, batched_decayed_against_single, 0, 2);
    tcase_add_loop_test(tc, decayed_dstates_alone, 0, 2);
    tcase_add_loop_test(tc, no_normalizer_noncausal, 0, 3);
    tcase_add_test(tc, decayed_backward_refusals);
    tcase_add_test(tc, chunk_states_refusals_and_bits);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
