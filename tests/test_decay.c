/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_decay.c -- decay and gates (linattn_opts.log_decay, extras.gates),
 * compiled once per precision.
 *
 * Against an independent recurrence written from the header's formulas,
 * token by token in long double: S_t = gamma exp(g_t) S_{t-1} + w_t
 * phi(k_t) v_t^T, z and the count likewise, out_t = phi(q_t)^T S_t /
 * (phi(q_t) . z_t + eps) (or the count + eps), phi from the reference
 * formulas for the exact maps and from linattn_d_features for FAVOR+.
 * The causal call (chunked, on one thread and two), its forward and _ex
 * forms, the quadratic reference, the batched calls and the streaming
 * state (token by token, in pieces, states_step) all match it; gates of 0
 * give the undecayed call's bits; no output reads a later token (bit for
 * bit, gates of -1e3 and NaN values after it); states that die in one
 * step (g = -1e3) and decays of 1e-12; checkpoints of a decayed stream;
 * a gamma per head in the batched call (each head its own plan's bits);
 * the policy without normalizer (out = phi(q)^T S) on every forward path;
 * and every refusal: gamma out of (0, 1], a gate above 0, NaN under
 * check_finite, a decayed plan on a path without decay, a decayed state
 * where an undecayed one is expected.
 */
#include <float.h>
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

typedef struct {
    int map, denom;
    double lo, hi; /* the inputs' range */
} map_case;

static const map_case maps[] = {
    {LINATTN_MAP_ELU1, LINATTN_DENOM_POSITIVE, -2, 2},
    {LINATTN_MAP_ELU1, LINATTN_DENOM_COUNT, -2, 2},
    {LINATTN_MAP_IDENTITY, LINATTN_DENOM_NONZERO, 0.05, 1},
    {LINATTN_MAP_FAVOR, LINATTN_DENOM_POSITIVE, -1, 1},
};
#define MAPS 4
#define D 3
#define E 2

/* Queries and keys in the map's range, values in [-1, 1), n rows. */
static void make_qkv(const map_case *mc, int layout, int64_t n, uint64_t *seed,
                     tmat *q, tmat *k, tmat *v)
{
    *q = tmat_rand(layout, n, D, layout == COL, mc->lo, mc->hi, seed);
    *k = tmat_rand(layout, n, D, 2 * (layout == COL), mc->lo, mc->hi, seed);
    *v = tmat_rand(layout, n, E, 0, -1, 1, seed);
}

/* Nonzero when two states hold the same accumulator, shift and tokens,
 * bit for bit. */
static int same_state(const P(state) *a, const P(state) *b)
{
    const P(plan) *p;
    int64_t m, ta, tb;
    P(state_plan)(a, &p);
    P(plan_dims)(p, NULL, &m, NULL);
    double *x = malloc((size_t)(m * (E + 1)) * sizeof *x);
    double *y = malloc((size_t)(m * (E + 1)) * sizeof *y);
    double sa, sb;
    P(state_export)(a, x, &sa, &ta);
    P(state_export)(b, y, &sb, &tb);
    int same = !memcmp(x, y, (size_t)(m * (E + 1)) * sizeof *x) &&
               !memcmp(&sa, &sb, sizeof sa) && ta == tb;
    free(x), free(y);
    return same;
}

/* batched_causal_ex of B x H problems of n rows stored [B][H][n][c]
 * contiguous (problem (b, h) at (b H + h) n rows). */
static int batched_into(const P(plan) *p, int64_t B, int64_t H, int64_t n,
                        const tmat *q, const tmat *k, const tmat *v, tmat *out,
                        const P(extras) *ex)
{
    linattn_strides sq = {D, H * n * D, n * D}, so = {E, H * n * E, n * E};
    return P(batched_causal_ex)(p, ROW, B, H, n, q->a, &sq, k->a, &sq, v->a, &so,
                                out->a, &so, ex, NULL);
}

/* causal_ex of rows [0, n) into out. */
static int causal_into(const P(plan) *p, const tmat *q, const tmat *k,
                       const tmat *v, tmat *out, const P(extras) *ex)
{
    return P(causal_ex)(p, q->layout, q->rows, q->a, q->ld, k->a, k->ld, v->a,
                        v->ld, out->a, out->ld, ex, NULL);
}

static P(plan) *decay_plan(const map_case *mc, double log_decay, int64_t chunk,
                           int check_finite)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = mc->denom;
    o.block = 16; /* ranges of threads on short sequences */
    o.chunk = chunk;
    o.seed = 3;
    o.log_decay = log_decay;
    o.check_finite = check_finite;
    /* eps joins the normalizer the path holds, which for the shifted maps
     * carries their shift: only the exact maps' is the reference's */
    o.eps = mc->denom == LINATTN_DENOM_POSITIVE && mc->map != LINATTN_MAP_FAVOR
                ? 1e-3
                : 0;
    if (mc->map == LINATTN_MAP_FAVOR)
        o.m = 8, o.input_scale = 1;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, mc->map, D, E, &o), 0);
    return p;
}

/* phi of the n rows of x (row major, m per row) in long double. */
static long double *features_of(const P(plan) *p, const map_case *mc,
                                const tmat *x)
{
    int64_t m;
    P(plan_dims)(p, NULL, &m, NULL);
    if (mc->map != LINATTN_MAP_FAVOR)
        return ref_phi_rows(mc->map, x);
    real *f = malloc((size_t)(x->rows * m + 1) * sizeof *f);
    ck_assert_int_eq(P(features)(p, x->layout, x->rows, x->a, x->ld, f,
                                 x->layout == ROW ? m : x->rows),
                     0);
    long double *out = malloc((size_t)(x->rows * m + 1) * sizeof *out);
    for (int64_t i = 0; i < x->rows; i++)
        for (int64_t t = 0; t < m; t++)
            out[i * m + t] = x->layout == ROW ? f[i * m + t] : f[t * x->rows + i];
    free(f);
    return out;
}

/* The recurrence, out (n x e) and den (n), in long double; w and g may be
 * NULL (weights 1, gates 0). */
static void recurrence(const P(plan) *p, const map_case *mc, double log_decay,
                       const tmat *q, const tmat *k, const tmat *v,
                       const real *w, const real *g, long double *out,
                       long double *den)
{
    int64_t n = q->rows, m;
    P(plan_dims)(p, NULL, &m, NULL);
    long double *fq = features_of(p, mc, q), *fk = features_of(p, mc, k);
    long double *s = calloc((size_t)(m * E), sizeof *s);
    long double *z = calloc((size_t)m, sizeof *z), count = 0;
    long double eps = mc->denom == LINATTN_DENOM_POSITIVE && mc->map != LINATTN_MAP_FAVOR
                          ? (long double)(real)1e-3
                          : 0;
    for (int64_t t = 0; t < n; t++) {
        long double f = expl((long double)log_decay + (g ? (long double)g[t] : 0));
        long double wt = w ? w[t] : 1;
        for (int64_t a = 0; a < m; a++) {
            long double ka = wt == 0 ? 0 : wt * fk[t * m + a];
            for (int64_t c = 0; c < E; c++)
                s[a * E + c] = f * s[a * E + c] + (wt == 0 ? 0 : ka * *tmat_at(v, t, c));
            z[a] = f * z[a] + ka;
        }
        count = f * count + wt;
        long double dd = 0;
        for (int64_t a = 0; a < m; a++)
            dd += fq[t * m + a] * z[a];
        dd = mc->denom == LINATTN_DENOM_COUNT ? count : dd;
        den[t] = mc->denom == LINATTN_DENOM_NONE ? 1 : dd + eps;
        for (int64_t c = 0; c < E; c++) {
            long double num = 0;
            for (int64_t a = 0; a < m; a++)
                num += fq[t * m + a] * s[a * E + c];
            out[t * E + c] = num / den[t];
        }
    }
    free(fq), free(fk), free(s), free(z);
}

static double vec_err(const real *x, const long double *ref, int64_t n)
{
    long double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num = fmaxl(num, fabsl(x[i] - ref[i]));
        den = fmaxl(den, fabsl(ref[i]));
    }
    return (double)(den > 0 ? num / den : num);
}

/* Gates in [-0.6, 0] with two of -1e-12 and, with deaths, one of -1e3. */
static real *make_gates(int64_t n, uint64_t seed, int deaths)
{
    real *g = malloc((size_t)n * sizeof *g);
    for (int64_t i = 0; i < n; i++)
        g[i] = (real)(-0.6 * test_uniform(&seed));
    g[n / 5] = (real)-1e-12, g[n / 3] = (real)-1e-12;
    if (deaths)
        g[n / 2] = (real)-1e3;
    return g;
}

/* Weights in [0.25, 2], every sixth 0 with its key and value rows NaN. */
static real *make_weights(int64_t n, tmat *k, tmat *v, uint64_t seed)
{
    real *w = malloc((size_t)n * sizeof *w);
    for (int64_t j = 0; j < n; j++) {
        w[j] = (real)(0.25 + 1.75 * test_uniform(&seed));
        if (j % 6 == 4) {
            w[j] = 0;
            for (int64_t t = 0; t < D; t++)
                *tmat_at(k, j, t) = (real)NAN;
            for (int64_t t = 0; t < E; t++)
                *tmat_at(v, j, t) = (real)NAN;
        }
    }
    return w;
}

/* The tolerance of n steps of a recurrence: rounding grows with the
 * length (float: each factor exp(g) carries its own). */
static double tol_for(int64_t n)
{
    return TOL * (double)(10 + n);
}

/* The case of loop index i: map, decay kind (gamma, gates, both), key
 * weights or not, layout, threads. */
typedef struct {
    const map_case *mc;
    double log_decay;
    int gates, weights, layout, threads, deaths;
} dcase;

static dcase case_of(int i)
{
    dcase c;
    c.mc = &maps[i % MAPS];
    int kind = (i / MAPS) % 3;
    c.log_decay = kind == 1 ? 0 : -0.05;
    c.gates = kind > 0;
    c.weights = (i / (3 * MAPS)) % 2;
    c.layout = (i / (6 * MAPS)) % 2 ? COL : ROW;
    c.threads = 1 + (i / (12 * MAPS)) % 2;
    c.deaths = i % 5 == 0 && c.gates;
    return c;
}
#define CASES (24 * MAPS)

/* causal_ex (den out), naive_causal_ex and, without gates and weights,
 * causal and causal_forward against the recurrence; on one thread and
 * two, n = 101 with chunks of 7 (and blocks of 16: two ranges). */
START_TEST(causal_matches_recurrence)
{
    dcase c = case_of(_i);
    int old = test_set_threads(c.threads);
    int64_t n = 101;
    uint64_t seed = 40 + (uint64_t)_i;
    P(plan) *p = decay_plan(c.mc, c.log_decay, 7, 0);
    tmat q = tmat_rand(c.layout, n, D, 1, c.mc->lo, c.mc->hi, &seed);
    tmat k = tmat_rand(c.layout, n, D, 2, c.mc->lo, c.mc->hi, &seed);
    tmat v = tmat_rand(c.layout, n, E, 0, -1, 1, &seed);
    real *g = c.gates ? make_gates(n, seed, c.deaths) : NULL;
    real *w = c.weights ? make_weights(n, &k, &v, seed + 1) : NULL;
    long double *ref = malloc((size_t)(n * E) * sizeof *ref);
    long double *rden = malloc((size_t)n * sizeof *rden);
    recurrence(p, c.mc, c.log_decay, &q, &k, &v, w, g, ref, rden);
    tmat out = tmat_like(&q, n, E, 1);
    real *den = malloc((size_t)n * sizeof *den);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.gates = g, ex.weights = w, ex.den = den;
    int64_t bad = -7;
    int st = P(causal_ex)(p, c.layout, n, q.a, q.ld, k.a, k.ld, v.a, v.ld, out.a,
                          out.ld, &ex, &bad);
    double tol = tol_for(n);
    ck_assert_msg(st == 0 && bad == -7, "case %d: status %d", _i, st);
    ck_assert_msg(rel_err(&out, ref) < tol, "case %d: causal_ex %g", _i, rel_err(&out, ref));
    /* (the shifted maps' normalizers carry their running shift) */
    if (c.mc->map != LINATTN_MAP_FAVOR)
        ck_assert_msg(vec_err(den, rden, n) < tol, "case %d: den %g", _i,
                      vec_err(den, rden, n));
    ck_assert(tmat_padding_intact(&out));
    /* the quadratic reference: the decay mask entry by entry */
    tmat nout = tmat_like(&q, n, E, 0);
    ex.den = NULL;
    st = P(naive_causal_ex)(p, c.layout, n, q.a, q.ld, k.a, k.ld, v.a, v.ld, nout.a,
                            nout.ld, &ex, NULL);
    ck_assert_msg(st == 0 && rel_err(&nout, ref) < tol, "case %d: naive %d %g", _i, st,
                  rel_err(&nout, ref));
    if (!g && !w) {
        tmat o2 = tmat_like(&q, n, E, 0);
        ck_assert_int_eq(P(causal)(p, c.layout, n, q.a, q.ld, k.a, k.ld, v.a, v.ld, o2.a,
                                   o2.ld, NULL),
                         0);
        ck_assert(rel_err(&o2, ref) < tol);
        ck_assert_int_eq(P(causal_forward)(p, c.layout, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                           o2.a, o2.ld, den, NULL),
                         0);
        ck_assert(rel_err(&o2, ref) < tol &&
                  (c.mc->map == LINATTN_MAP_FAVOR || vec_err(den, rden, n) < tol));
        tmat_free(&o2);
    }
    free(ref), free(rden), free(den), free(g), free(w);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out), tmat_free(&nout);
    P(plan_destroy)(p);
    test_set_threads(old);
}
END_TEST

/* Gates all 0 (given) and no gates: the same bits, on one thread, for
 * every map, with and without weights. */
START_TEST(zero_gates_are_undecayed)
{
    int old = test_set_threads(1);
    const map_case *mc = &maps[_i % MAPS];
    int64_t n = 77;
    uint64_t seed = 90 + (uint64_t)_i;
    P(plan) *p = decay_plan(mc, 0, 5, 0);
    tmat q, k, v;
    make_qkv(mc, ROW, n, &seed, &q, &k, &v);
    real *w = _i >= MAPS ? make_weights(n, &k, &v, seed) : NULL;
    real *g = calloc((size_t)n, sizeof *g);
    tmat a = tmat_like(&q, n, E, 0), b = tmat_like(&q, n, E, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ck_assert_int_eq(causal_into(p, &q, &k, &v, &a, &ex), 0);
    ex.gates = g;
    ck_assert_int_eq(causal_into(p, &q, &k, &v, &b, &ex), 0);
    ck_assert_msg(!memcmp(a.a, b.a, (size_t)(n * E) * sizeof(real)), "map %d: bits differ",
                  mc->map);
    /* the streaming update too: its sums and tokens */
    P(state) *s1 = NULL, *s2 = NULL;
    P(state_create)(&s1, p), P(state_create)(&s2, p);
    ex.gates = NULL;
    ck_assert_int_eq(P(state_update_ex)(s1, ROW, n, k.a, k.ld, v.a, v.ld, &ex), 0);
    ex.gates = g;
    ck_assert_int_eq(P(state_update_ex)(s2, ROW, n, k.a, k.ld, v.a, v.ld, &ex), 0);
    ck_assert(same_state(s1, s2));
    P(state_destroy)(s1), P(state_destroy)(s2);
    free(w), free(g);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
    test_set_threads(old);
}
END_TEST

/* Rows up to p keep their bits when every later token changes: queries,
 * keys, values NaN, gates -1e3 (one thread and two). */
START_TEST(no_output_reads_a_later_token)
{
    int old = test_set_threads(1 + _i % 2);
    const map_case *mc = &maps[(_i / 2) % MAPS];
    int64_t n = 150, cut = 61 + 17 * (_i % 3);
    uint64_t seed = 300 + (uint64_t)_i;
    P(plan) *p = decay_plan(mc, -0.02, 6, 0);
    tmat q, k, v;
    make_qkv(mc, ROW, n, &seed, &q, &k, &v);
    real *g = make_gates(n, seed, 0);
    tmat a = tmat_like(&q, n, E, 0), b = tmat_like(&q, n, E, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.gates = g;
    ck_assert_int_eq(causal_into(p, &q, &k, &v, &a, &ex), 0);
    for (int64_t i = cut + 1; i < n; i++) {
        for (int64_t t = 0; t < D; t++)
            *tmat_at(&q, i, t) = (real)(mc->lo + 0.5), *tmat_at(&k, i, t) = (real)mc->hi;
        for (int64_t t = 0; t < E; t++)
            *tmat_at(&v, i, t) = (real)NAN;
        g[i] = (real)-1e3;
    }
    causal_into(p, &q, &k, &v, &b, &ex);
    ck_assert_msg(!memcmp(a.a, b.a, (size_t)((cut + 1) * E) * sizeof(real)),
                  "map %d cut %lld: an output before the cut changed", mc->map, (long long)cut);
    free(g);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&a), tmat_free(&b);
    P(plan_destroy)(p);
    test_set_threads(old);
}
END_TEST

/* The streaming state: token by token (update one row, query it), in
 * uneven pieces through state_causal from the state so far (absorbing),
 * and states_step of three streams with their own decays, all against
 * the one-shot causal call. */
START_TEST(streaming_equals_causal)
{
    const map_case *mc = &maps[_i % MAPS];
    int64_t n = 53;
    uint64_t seed = 500 + (uint64_t)_i;
    double ld = _i >= MAPS ? -0.3 : -1e-12;
    P(plan) *p = decay_plan(mc, ld, 4, 0);
    tmat q, k, v;
    make_qkv(mc, ROW, n, &seed, &q, &k, &v);
    real *g = make_gates(n, seed, _i % 2);
    real *w = malloc((size_t)n * sizeof *w);
    for (int64_t i = 0; i < n; i++)
        w[i] = (real)(0.5 + (double)(i % 3));
    tmat ref = tmat_like(&q, n, E, 0), out = tmat_like(&q, n, E, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.gates = g, ex.weights = w;
    ck_assert_int_eq(causal_into(p, &q, &k, &v, &ref, &ex), 0);
    double tol = tol_for(n);
    /* token by token */
    P(state) *s = NULL;
    P(state_create)(&s, p);
    for (int64_t i = 0; i < n; i++) {
        P(extras) one;
        P(extras_init)(&one);
        one.gates = g + i, one.weights = w + i;
        ck_assert_int_eq(P(state_update_ex)(s, ROW, 1, k.a + i * D, D, v.a + i * E, E, &one),
                         0);
        ck_assert_int_eq(P(state_query)(s, ROW, 1, q.a + i * D, D, out.a + i * E, E, NULL, 0,
                                        NULL, NULL),
                         0);
    }
    ck_assert_msg(rel_diff(&out, &ref) < tol, "map %d: token by token %g", mc->map,
                  rel_diff(&out, &ref));
    /* in pieces of 1, 9, 20, 23 through causal_ex from the state, absorbing */
    P(state_reset)(s);
    static const int64_t cuts[] = {0, 1, 10, 30, 53};
    for (int c = 0; c < 4; c++) {
        int64_t lo = cuts[c], len = cuts[c + 1] - cuts[c];
        P(extras) part;
        P(extras_init)(&part);
        part.gates = g + lo, part.weights = w + lo, part.state = s, part.absorb = 1;
        ck_assert_int_eq(P(causal_ex)(p, ROW, len, q.a + lo * D, D, k.a + lo * D, D,
                                      v.a + lo * E, E, out.a + lo * E, E, &part, NULL),
                         0);
    }
    ck_assert_msg(rel_diff(&out, &ref) < tol, "map %d: in pieces %g", mc->map,
                  rel_diff(&out, &ref));
    P(state_destroy)(s);
    /* states_step without gates or weights: three streams, each its own
     * plan's decay, against state_update + state_query on copies */
    if (mc->denom != LINATTN_DENOM_COUNT) {
        P(plan) *pl[3] = {decay_plan(mc, -0.1, 4, 0), decay_plan(mc, -1.5, 4, 0),
                          decay_plan(mc, 0, 4, 0)};
        P(state) *st[3], *cp[3];
        for (int r = 0; r < 3; r++) {
            P(state_create)(&st[r], pl[r]);
            P(state_create)(&cp[r], pl[r]);
        }
        real o1[3 * E], o2[3 * E];
        double worst = 0;
        for (int64_t step = 0; step < 6; step++) {
            const real *qs = q.a + step * 3 * D, *ks = k.a + step * 3 * D;
            const real *vs = v.a + step * 3 * E;
            ck_assert_int_eq(P(states_step)(st, 3, ROW, qs, D, ks, D, vs, E, o1, E, NULL), 0);
            for (int r = 0; r < 3; r++) {
                ck_assert_int_eq(P(state_update)(cp[r], ROW, 1, ks + r * D, D, vs + r * E, E), 0);
                ck_assert_int_eq(P(state_query)(cp[r], ROW, 1, qs + r * D, D, o2 + r * E, E,
                                                NULL, 0, NULL, NULL),
                                 0);
            }
            for (int t = 0; t < 3 * E; t++)
                worst = fmax(worst, fabs((double)o1[t] - (double)o2[t]) /
                                        fmax(1e-30, fabs((double)o2[t])));
        }
        ck_assert_msg(worst < tol, "map %d: states_step %g", mc->map, worst);
        for (int r = 0; r < 3; r++) {
            P(state_destroy)(st[r]), P(state_destroy)(cp[r]);
            P(plan_destroy)(pl[r]);
        }
    }
    free(g), free(w);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&ref), tmat_free(&out);
    P(plan_destroy)(p);
}
END_TEST

/* The batched causal call with gates (tokens x problems, dense) against
 * each problem's single call. */
START_TEST(batched_is_single_calls)
{
    const map_case *mc = &maps[_i % MAPS];
    int64_t n = 40, B = 2, H = 3;
    uint64_t seed = 700 + (uint64_t)_i;
    P(plan) *p = decay_plan(mc, -0.07, 6, 0);
    /* [B][H][n][c] contiguous: problem (b, h) at (b H + h) n c */
    tmat q, k, v;
    make_qkv(mc, ROW, B * H * n, &seed, &q, &k, &v);
    real *g = make_gates(B * H * n, seed, 1);
    tmat out = tmat_like(&q, B * H * n, E, 0), one = tmat_like(&q, n, E, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.gates = g;
    ck_assert_int_eq(batched_into(p, B, H, n, &q, &k, &v, &out, &ex), 0);
    for (int64_t pr = 0; pr < B * H; pr++) {
        P(extras) e1;
        P(extras_init)(&e1);
        e1.gates = g + pr * n;
        ck_assert_int_eq(P(causal_ex)(p, ROW, n, q.a + pr * n * D, D, k.a + pr * n * D, D,
                                      v.a + pr * n * E, E, one.a, E, &e1, NULL),
                         0);
        tmat got = {ROW, n, E, E, out.a + pr * n * E};
        ck_assert_msg(rel_diff(&got, &one) < TOL, "problem %lld: %g", (long long)pr,
                      rel_diff(&got, &one));
    }
    free(g);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out), tmat_free(&one);
    P(plan_destroy)(p);
}
END_TEST

/* A gamma per head (extras.head_decays, added to the plan's): the batched
 * causal call against each head's single call from a plan of that decay,
 * bit for bit on one thread; out of range (above 0, NaN) refused with
 * nothing written, and refused by the single calls (not taken). */
START_TEST(head_decays_are_plans_of_their_own)
{
    int old = test_set_threads(1);
    const map_case *mc = &maps[_i % MAPS];
    int64_t n = 33, B = 2, H = 3;
    uint64_t seed = 1500 + (uint64_t)_i;
    const double base = -0.02, heads[3] = {0, -0.1, -1.5};
    P(plan) *p = decay_plan(mc, base, 5, 0);
    tmat q, k, v;
    make_qkv(mc, ROW, B * H * n, &seed, &q, &k, &v);
    tmat out = tmat_like(&q, B * H * n, E, 0), one = tmat_like(&q, n, E, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.head_decays = heads;
    ck_assert_int_eq(batched_into(p, B, H, n, &q, &k, &v, &out, &ex), 0);
    for (int64_t pr = 0; pr < B * H; pr++) {
        P(plan) *ph = decay_plan(mc, base + heads[pr % H], 5, 0);
        ck_assert_int_eq(P(causal)(ph, ROW, n, q.a + pr * n * D, D, k.a + pr * n * D, D,
                                   v.a + pr * n * E, E, one.a, E, NULL),
                         0);
        ck_assert_msg(!memcmp(one.a, out.a + pr * n * E, (size_t)(n * E) * sizeof(real)),
                      "map %d problem %lld: not the single call's bits", mc->map, (long long)pr);
        P(plan_destroy)(ph);
    }
    static const double bad[] = {1e-3, NAN, -INFINITY};
    for (int c = 0; c < 3; c++) {
        double hb[3] = {0, bad[c], 0};
        ex.head_decays = hb;
        for (int64_t i = 0; i < B * H * n * E; i++)
            out.a[i] = (real)-777;
        ck_assert_int_eq(batched_into(p, B, H, n, &q, &k, &v, &out, &ex), -14);
        for (int64_t i = 0; i < B * H * n * E; i++)
            ck_assert(out.a[i] == (real)-777);
    }
    ex.head_decays = heads;
    ck_assert_int_eq(causal_into(p, &q, &k, &v, &out, &ex), -12);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out), tmat_free(&one);
    P(plan_destroy)(p);
    test_set_threads(old);
}
END_TEST

/* LINATTN_DENOM_NONE, out = phi(q)^T S: causal (decayed and not, with
 * gates) against the recurrence's numerators and den out all 1, the
 * quadratic references likewise, non-causal attention against plain
 * loops' numerators, the state's query; the shifted maps, the backward
 * calls and approx_error refuse it. */
START_TEST(no_normalizer)
{
    const map_case exact[2] = {{LINATTN_MAP_ELU1, LINATTN_DENOM_NONE, -2, 2},
                               {LINATTN_MAP_IDENTITY, LINATTN_DENOM_NONE, -1, 1}};
    const map_case *mc = &exact[_i % 2];
    double ld = _i >= 2 ? -0.1 : 0;
    int64_t n = 45;
    uint64_t seed = 1700 + (uint64_t)_i;
    P(plan) *p = decay_plan(mc, ld, 6, 0);
    tmat q, k, v;
    make_qkv(mc, ROW, n, &seed, &q, &k, &v);
    real *g = ld ? make_gates(n, seed, 0) : NULL;
    long double *ref = malloc((size_t)(n * E) * sizeof *ref);
    long double *rden = malloc((size_t)n * sizeof *rden);
    recurrence(p, mc, ld, &q, &k, &v, NULL, g, ref, rden);
    tmat out = tmat_like(&q, n, E, 0);
    real den[45];
    P(extras) ex;
    P(extras_init)(&ex);
    ex.gates = g, ex.den = den;
    ck_assert_int_eq(causal_into(p, &q, &k, &v, &out, &ex), 0);
    ck_assert_msg(rel_err(&out, ref) < tol_for(n), "map %d: causal %g", mc->map,
                  rel_err(&out, ref));
    for (int64_t i = 0; i < n; i++)
        ck_assert(den[i] == 1);
    ex.den = NULL;
    ck_assert_int_eq(P(naive_causal_ex)(p, ROW, n, q.a, q.ld, k.a, k.ld, v.a, v.ld, out.a,
                                        out.ld, &ex, NULL),
                     0);
    ck_assert(rel_err(&out, ref) < tol_for(n));
    if (!ld) { /* non-causal: the numerators of every key */
        long double *fq = ref_phi_rows(mc->map, &q), *fk = ref_phi_rows(mc->map, &k);
        for (int64_t i = 0; i < n; i++)
            for (int64_t c = 0; c < E; c++) {
                long double num = 0;
                for (int64_t j = 0; j < n; j++) {
                    long double a = 0;
                    for (int64_t t = 0; t < D; t++)
                        a += fq[i * D + t] * fk[j * D + t];
                    num += a * *tmat_at(&v, j, c);
                }
                ref[i * E + c] = num;
            }
        free(fq), free(fk);
        ck_assert_int_eq(P(attention)(p, ROW, n, n, q.a, q.ld, k.a, k.ld, v.a, v.ld, out.a,
                                      out.ld, NULL),
                         0);
        ck_assert_msg(rel_err(&out, ref) < tol_for(n), "map %d: attention %g", mc->map,
                      rel_err(&out, ref));
        ck_assert_int_eq(P(naive)(p, ROW, n, n, q.a, q.ld, k.a, k.ld, v.a, v.ld, out.a,
                                  out.ld, NULL),
                         0);
        ck_assert(rel_err(&out, ref) < tol_for(n));
        P(state) *st = NULL;
        P(state_create)(&st, p);
        ck_assert_int_eq(P(state_update)(st, ROW, n, k.a, k.ld, v.a, v.ld), 0);
        ck_assert_int_eq(P(state_query)(st, ROW, n, q.a, q.ld, out.a, out.ld, NULL, 0, NULL,
                                        NULL),
                         0);
        ck_assert(rel_err(&out, ref) < tol_for(n));
        P(state_destroy)(st);
        /* the backward takes den = 1 (its gradients: test_decay_grad),
         * and nothing else; approx_error refuses the plan */
        real dq[45 * D], dk[45 * D], dv[45 * E], dn[45];
        for (int64_t i = 0; i < n; i++)
            dn[i] = 1;
        ck_assert_int_eq(P(attention_backward)(p, ROW, n, n, q.a, D, k.a, D, v.a, E, out.a, E,
                                               dn, out.a, E, dq, D, dk, D, dv, E, NULL, 0,
                                               NULL, NULL, NULL),
                         0);
        int64_t row = -7;
        dn[3] = 2;
        ck_assert_int_eq(P(attention_backward)(p, ROW, n, n, q.a, D, k.a, D, v.a, E, out.a, E,
                                               dn, out.a, E, dq, D, dk, D, dv, E, NULL, 0,
                                               NULL, NULL, &row),
                         LINATTN_EDENOM);
        ck_assert_int_eq(row, 3);
        linattn_approx_stats stats;
        ck_assert_int_eq(P(approx_error)(p, ROW, n, n, q.a, D, k.a, D, v.a, E, 1, 0, &stats),
                         -1);
    }
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = LINATTN_DENOM_NONE;
    P(plan) *bad = NULL;
    ck_assert_int_eq(P(plan_create)(&bad, LINATTN_MAP_FAVOR, D, E, &o), -5);
    free(ref), free(rden), free(g);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    P(plan_destroy)(p);
}
END_TEST

/* A decayed stream saved and loaded: the same bits, and continuing it
 * gives the uninterrupted outputs; a plan without the decay (or another
 * decay) refuses the checkpoint, and its calls refuse the state. */
START_TEST(checkpoint_of_a_decayed_stream)
{
    const map_case *mc = &maps[0];
    int64_t n = 30;
    uint64_t seed = 900;
    P(plan) *p = decay_plan(mc, -0.2, 4, 0), *plain = decay_plan(mc, 0, 4, 0);
    P(plan) *other = decay_plan(mc, -0.3, 4, 0);
    tmat k = tmat_rand(ROW, n, D, 0, mc->lo, mc->hi, &seed);
    tmat v = tmat_rand(ROW, n, E, 0, -1, 1, &seed);
    P(state) *s = NULL, *r = NULL, *u = NULL, *o = NULL;
    P(state_create)(&s, p), P(state_create)(&r, p);
    P(state_create)(&u, plain), P(state_create)(&o, other);
    ck_assert_int_eq(P(state_update)(s, ROW, n, k.a, D, v.a, E), 0);
    int64_t bytes;
    P(state_save_size)(s, &bytes);
    char *buf = malloc((size_t)bytes);
    ck_assert_int_eq(P(state_save)(s, buf, bytes, NULL), 0);
    ck_assert_int_eq(P(state_load)(r, buf, bytes), 0);
    ck_assert_int_eq(P(state_load)(u, buf, bytes), LINATTN_EMISMATCH);
    ck_assert_int_eq(P(state_load)(o, buf, bytes), LINATTN_EMISMATCH);
    ck_assert_int_eq(P(state_merge)(u, s), -2);
    /* continued: bit for bit */
    ck_assert_int_eq(P(state_update)(s, ROW, 5, k.a, D, v.a, E), 0);
    ck_assert_int_eq(P(state_update)(r, ROW, 5, k.a, D, v.a, E), 0);
    ck_assert(same_state(s, r));
    /* the decayed state where the plain plan's is expected */
    tmat out = tmat_like(&k, n, E, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.state = s;
    ck_assert_int_eq(P(causal_ex)(plain, ROW, n, k.a, D, k.a, D, v.a, E, out.a, E, &ex, NULL),
                     -12);
    free(buf);
    P(state_destroy)(s), P(state_destroy)(r), P(state_destroy)(u), P(state_destroy)(o);
    tmat_free(&k), tmat_free(&v), tmat_free(&out);
    P(plan_destroy)(p), P(plan_destroy)(plain), P(plan_destroy)(other);
}
END_TEST

/* gamma out of (0, 1]; gates above 0 (+Inf) as -i of the extras; NaN
 * gates refused under check_finite and propagating (EDENOM at that row,
 * the rows before written) without; a decayed plan refused by every call
 * that does not apply decay; gates refused where they are not taken;
 * nothing written on a refusal. */
START_TEST(bad_decay_refused)
{
    linattn_opts o;
    P(plan) *p = NULL;
    static const double bad[] = {1e-9, INFINITY, -INFINITY, NAN};
    for (int i = 0; i < 4; i++) {
        linattn_opts_init(&o);
        o.log_decay = bad[i];
        ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, D, E, &o), -5);
        ck_assert_ptr_null(p);
    }
    const map_case *mc = &maps[0];
    int64_t n = 20;
    uint64_t seed = 1100;
    P(plan) *dp = decay_plan(mc, -0.1, 4, 0), *cf = decay_plan(mc, -0.1, 4, 1);
    double got;
    ck_assert_int_eq(P(plan_decay)(dp, &got), 0);
    ck_assert(got == -0.1);
    ck_assert_int_eq(P(plan_decay)(NULL, &got), -1);
    ck_assert_int_eq(P(plan_decay)(dp, NULL), -2);
    tmat q = tmat_rand(ROW, n, D, 0, 0.1, 1, &seed);
    tmat k = tmat_rand(ROW, n, D, 0, 0.1, 1, &seed);
    tmat v = tmat_rand(ROW, n, E, 0, -1, 1, &seed);
    tmat out = tmat_like(&q, n, E, 0);
    real *g = make_gates(n, seed, 0);
    real sentinel = (real)-777;
    for (int64_t i = 0; i < n * E; i++)
        out.a[i] = sentinel;
    P(extras) ex;
    P(extras_init)(&ex);
    ex.gates = g;
    /* a gate above 0 and +Inf */
    static const double up[] = {1e-6, INFINITY};
    for (int i = 0; i < 2; i++) {
        g[7] = (real)up[i];
        ck_assert_int_eq(P(causal_ex)(dp, ROW, n, q.a, D, k.a, D, v.a, E, out.a, E, &ex, NULL),
                         -12);
        ck_assert_int_eq(P(naive_causal_ex)(dp, ROW, n, q.a, D, k.a, D, v.a, E, out.a, E, &ex,
                                            NULL),
                         -12);
    }
    /* NaN: refused under check_finite, else EDENOM at its row */
    g[7] = (real)NAN;
    ck_assert_int_eq(P(causal_ex)(cf, ROW, n, q.a, D, k.a, D, v.a, E, out.a, E, &ex, NULL),
                     LINATTN_ENONFINITE);
    for (int64_t i = 0; i < n * E; i++)
        ck_assert(out.a[i] == sentinel);
    int64_t row = -1;
    ck_assert_int_eq(P(causal_ex)(dp, ROW, n, q.a, D, k.a, D, v.a, E, out.a, E, &ex, &row),
                     LINATTN_EDENOM);
    ck_assert_int_eq(row, 7);
    ck_assert(out.a[6 * E] != sentinel && out.a[7 * E] == sentinel);
    g[7] = 0;
    /* a decayed plan where decay is not applied */
    for (int64_t i = 0; i < n * E; i++)
        out.a[i] = sentinel;
    real den[20], dq[20 * D], dk[20 * D], dv[20 * E];
    ck_assert_int_eq(P(attention)(dp, ROW, n, n, q.a, D, k.a, D, v.a, E, out.a, E, NULL), -1);
    ck_assert_int_eq(P(attention_forward)(dp, ROW, n, n, q.a, D, k.a, D, v.a, E, out.a, E,
                                          den, NULL),
                     -1);
    ck_assert_int_eq(P(naive)(dp, ROW, n, n, q.a, D, k.a, D, v.a, E, out.a, E, NULL), -1);
    ck_assert_int_eq(P(attention_ex)(dp, ROW, n, n, q.a, D, k.a, D, v.a, E, out.a, E, NULL,
                                     NULL),
                     -1);
    linattn_strides s = {D, n * D, 0}, se = {E, n * E, 0};
    ck_assert_int_eq(P(batched_attention)(dp, ROW, 1, 1, n, n, q.a, &s, k.a, &s, v.a, &se,
                                          out.a, &se, NULL),
                     -1);
    ck_assert_int_eq(P(attention_backward)(dp, ROW, n, n, q.a, D, k.a, D, v.a, E, out.a, E,
                                           den, out.a, E, dq, D, dk, D, dv, E, NULL, 0, NULL,
                                           NULL, NULL),
                     -1);
    linattn_approx_stats stats;
    ck_assert_int_eq(P(approx_error)(dp, ROW, n, n, q.a, D, k.a, D, v.a, E, 1, 0, &stats),
                     -1);
    for (int64_t i = 0; i < n * E; i++)
        ck_assert(out.a[i] == sentinel);
    /* gates where they are not taken: the non-causal _ex calls */
    P(plan) *plain = decay_plan(mc, 0, 4, 0);
    ck_assert_int_eq(P(attention_ex)(plain, ROW, n, n, q.a, D, k.a, D, v.a, E, out.a, E, &ex,
                                     NULL),
                     -13);
    ck_assert_int_eq(P(naive_ex)(plain, ROW, n, n, q.a, D, k.a, D, v.a, E, out.a, E, &ex,
                                 NULL),
                     -13);
    for (int64_t i = 0; i < n * E; i++)
        ck_assert(out.a[i] == sentinel);
    /* a state update with a gate above 0 leaves the state as it was */
    P(state) *st = NULL;
    P(state_create)(&st, dp);
    ck_assert_int_eq(P(state_update)(st, ROW, n, k.a, D, v.a, E), 0);
    double acc0[D * (E + 1)], acc1[D * (E + 1)], sh0, sh1;
    int64_t t0, t1;
    P(state_export)(st, acc0, &sh0, &t0);
    g[3] = (real)0.5;
    ck_assert_int_eq(P(state_update_ex)(st, ROW, n, k.a, D, v.a, E, &ex), -8);
    P(state_export)(st, acc1, &sh1, &t1);
    ck_assert(!memcmp(acc0, acc1, sizeof acc0) && t0 == t1);
    P(state_destroy)(st);
    free(g);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    P(plan_destroy)(dp), P(plan_destroy)(cf), P(plan_destroy)(plain);
}
END_TEST

/* The bidirectional decayed attention doc/decay.md composes from two
 * causal calls (non-causal attention refuses decay): w_ij = exp(-|B_i -
 * B_j|) as the causal call on the sequence plus the causal call on the
 * reversed one with each gate moved to the token before it, minus the
 * diagonal, numerators and normalizers through LINATTN_DENOM_NONE with a
 * column of ones among the values; against the quadratic formula. */
START_TEST(bidirectional_from_two_causal_calls)
{
    int map = _i ? LINATTN_MAP_ELU1 : LINATTN_MAP_IDENTITY;
    int64_t n = 41;
    uint64_t seed = 5;
    double lo = map == LINATTN_MAP_IDENTITY ? 0.2 : -1;
    tmat q = tmat_rand(ROW, n, D, 0, lo, 1, &seed);
    tmat k = tmat_rand(ROW, n, D, 0, lo, 1, &seed);
    tmat v = tmat_rand(ROW, n, E, 0, -1, 1, &seed);
    real *g = make_gates(n, seed, 0);
    /* [V 1], and the reversed sequence with the gates moved by one */
    tmat v1 = tmat_rand(ROW, n, E + 1, 0, 1, 1, &seed);
    tmat qr = tmat_like(&q, n, D, 0), kr = tmat_like(&q, n, D, 0);
    tmat vr = tmat_like(&q, n, E + 1, 0);
    real *gr = calloc((size_t)n, sizeof *gr);
    for (int64_t i = 0; i < n; i++) {
        int64_t j = n - 1 - i;
        for (int64_t c = 0; c < D; c++) {
            *tmat_at(&qr, j, c) = *tmat_at(&q, i, c);
            *tmat_at(&kr, j, c) = *tmat_at(&k, i, c);
        }
        for (int64_t c = 0; c < E; c++)
            *tmat_at(&v1, i, c) = *tmat_at(&v, i, c);
        for (int64_t c = 0; c <= E; c++)
            *tmat_at(&vr, j, c) = *tmat_at(&v1, i, c);
        gr[j] = i + 1 < n ? g[i + 1] : 0;
    }
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = LINATTN_DENOM_NONE;
    o.chunk = 7;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, D, E + 1, &o), 0);
    tmat fw = tmat_like(&q, n, E + 1, 0), bw = tmat_like(&q, n, E + 1, 0);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.gates = g;
    ck_assert_int_eq(causal_into(p, &q, &k, &v1, &fw, &ex), 0);
    ex.gates = gr;
    ck_assert_int_eq(causal_into(p, &qr, &kr, &vr, &bw, &ex), 0);
    long double *fq = ref_phi_rows(map, &q), *fk = ref_phi_rows(map, &k);
    long double *bsum = malloc((size_t)n * sizeof *bsum), run = 0;
    for (int64_t i = 0; i < n; i++)
        bsum[i] = run += g[i];
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        long double num[E] = {0}, den = 0, diag = 0;
        for (int64_t j = 0; j < n; j++) {
            long double a = 0;
            for (int64_t t = 0; t < D; t++)
                a += fq[i * D + t] * fk[j * D + t];
            a *= expl(-fabsl(bsum[i] - bsum[j]));
            den += a;
            for (int64_t c = 0; c < E; c++)
                num[c] += a * *tmat_at(&v, j, c);
        }
        for (int64_t t = 0; t < D; t++)
            diag += fq[i * D + t] * fk[i * D + t];
        int64_t j = n - 1 - i;
        long double dn = (long double)*tmat_at(&fw, i, E) + *tmat_at(&bw, j, E) -
                         diag;
        for (int64_t c = 0; c < E; c++) {
            long double nm = (long double)*tmat_at(&fw, i, c) +
                             *tmat_at(&bw, j, c) - diag * *tmat_at(&v, i, c);
            double err = (double)fabsl(nm / dn - num[c] / den);
            worst = err > worst ? err : worst;
        }
    }
    ck_assert_msg(worst < tol_for(n), "bidirectional: %g", worst);
    free(fq), free(fk), free(bsum), free(g), free(gr);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&v1);
    tmat_free(&qr), tmat_free(&kr), tmat_free(&vr);
    tmat_free(&fw), tmat_free(&bw);
    P(plan_destroy)(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("decay " PREC);
    TCase *tc = tcase_create("decay");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, causal_matches_recurrence, 0, CASES);
    tcase_add_loop_test(tc, zero_gates_are_undecayed, 0, 2 * MAPS);
    tcase_add_loop_test(tc, no_output_reads_a_later_token, 0, 2 * MAPS);
    tcase_add_loop_test(tc, streaming_equals_causal, 0, 2 * MAPS);
    tcase_add_loop_test(tc, batched_is_single_calls, 0, MAPS);
    tcase_add_loop_test(tc, head_decays_are_plans_of_their_own, 0, MAPS);
    tcase_add_loop_test(tc, no_normalizer, 0, 4);
    tcase_add_test(tc, checkpoint_of_a_decayed_stream);
    tcase_add_test(tc, bad_decay_refused);
    tcase_add_loop_test(tc, bidirectional_from_two_causal_calls, 0, 2);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
