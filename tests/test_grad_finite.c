/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_grad_finite.c -- finite inputs, finite gradients: the guarantee on the
 * training calls, compiled once per precision: finite inputs never give a
 * non-finite output with status 0.
 *
 * The forward calls that hand back den behave as the plain ones (status,
 * row, out bit for bit; den exact on tiny normalizers).  The backward
 * calls divide by a normalizer whose reciprocal is not a normal number
 * (a tiny one's overflows, a huge one's has lost bits) and report
 * gradients beyond the range as LINATTN_EOVERFLOW with the row the header
 * names (the first of dq holding a non-finite value, else of dk and dv,
 * else -1 when only dw or db left it), dw and db then untouched; NaN and
 * Inf of the inputs still propagate with status 0.  A sweep of every map,
 * policy, path and layout over inputs across the exponent range checks
 * the invariant on what the calls leave.
 */
#include <float.h>
#include "testutil.h"
#include "finite_draw.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR
#define SENTINEL ((real)-777)

#ifdef TEST_SINGLE
#define REAL_MAX_ FLT_MAX
#else
#define REAL_MAX_ DBL_MAX
#endif

/* the paths: the single calls, and the batched ones on two heads that
 * share their inputs (head 1's results must be head 0's, bit for bit) */
enum { ATT, CAUSAL, B_ATT, B_CAUSAL, NPATHS };
static const char *const path_name[NPATHS] = {"attention", "causal",
                                              "batched attention",
                                              "batched causal"};

/* One problem: n tokens, inputs and results in layout with natural
 * leading dimensions; h rows of W (0: none), b for custom maps. */
typedef struct {
    int layout;
    int64_t n, d, e, h;
    int with_b;
    real *q, *k, *v, *g, *out, *den, *dq, *dk, *dv, *dw, *db;
} prob;

static int64_t ld_of(const prob *x, int64_t cols)
{
    return x->layout == ROW ? cols : (x->n > 0 ? x->n : 1);
}

static real *alloc_fill(int64_t count, real value)
{
    real *a = malloc((size_t)(count > 0 ? count : 1) * sizeof(real));
    for (int64_t i = 0; i < count; i++)
        a[i] = value;
    return a;
}

static prob prob_new(const P(plan) *p, int layout, int64_t n)
{
    prob x = {layout, n, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL,
              NULL, NULL, NULL, NULL, NULL, NULL};
    int64_t m;
    P(plan_dims)(p, &x.d, &m, &x.e);
    P(plan_weights)(p, ROW, NULL, 0, &x.h);
    int64_t d = x.d, e = x.e;
    x.q = alloc_fill(n * d, 0), x.k = alloc_fill(n * d, 0);
    x.v = alloc_fill(n * e, 0), x.g = alloc_fill(n * e, 0);
    x.out = alloc_fill(n * e, SENTINEL), x.den = alloc_fill(n, SENTINEL);
    x.dq = alloc_fill(n * d, SENTINEL), x.dk = alloc_fill(n * d, SENTINEL);
    x.dv = alloc_fill(n * e, SENTINEL);
    x.dw = alloc_fill(x.h * d, SENTINEL), x.db = alloc_fill(x.h, SENTINEL);
    return x;
}

static void prob_free(prob *x)
{
    real *all[] = {x->q,  x->k,  x->v,  x->g,  x->out, x->den,
                   x->dq, x->dk, x->dv, x->dw, x->db};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        free(all[i]);
}

/* Element (i, c) of an n-row matrix of x with cols columns. */
static real *el(const prob *x, real *a, int64_t cols, int64_t i, int64_t c)
{
    return x->layout == ROW ? a + i * cols + c : a + i + c * x->n;
}

static int all_finite(const real *a, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        if (!isfinite(a[i]))
            return 0;
    return 1;
}

static int untouched(const real *a, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        if (a[i] != SENTINEL)
            return 0;
    return 1;
}

/* The first row of an n-row matrix of x (cols columns) holding a
 * non-finite value, or n. */
static int64_t first_bad_row(const prob *x, real *a, int64_t cols)
{
    for (int64_t i = 0; i < x->n; i++)
        for (int64_t c = 0; c < cols; c++)
            if (!isfinite(*el(x, a, cols, i, c)))
                return i;
    return x->n;
}

/* ---- running the calls ---- */

/* The forward of path with den; the batched ones into two heads, which
 * must agree (else -1000). */
static int forward(int path, const P(plan) *p, prob *x, int64_t *bad)
{
    int L = x->layout;
    int64_t n = x->n, d = x->d, e = x->e, ldq = ld_of(x, d), ldv = ld_of(x, e);
    if (path == ATT)
        return P(attention_forward)(p, L, n, n, x->q, ldq, x->k, ldq, x->v, ldv,
                                    x->out, ldv, x->den, bad);
    if (path == CAUSAL)
        return P(causal_forward)(p, L, n, x->q, ldq, x->k, ldq, x->v, ldv,
                                 x->out, ldv, x->den, bad);
    int64_t span = n * e;
    real *out2 = alloc_fill(2 * span, SENTINEL), *den2 = alloc_fill(2 * n, 0);
    linattn_strides sq = {ldq, 0, 0}, sv = {ldv, 0, 0};
    linattn_strides so = {ldv, 2 * span, span};
    linattn_where w = {-1, -1, -1};
    int st = path == B_ATT
                 ? P(batched_attention_forward)(p, L, 1, 2, n, n, x->q, &sq,
                                                x->k, &sq, x->v, &sv, out2, &so,
                                                den2, &w)
                 : P(batched_causal_forward)(p, L, 1, 2, n, x->q, &sq, x->k,
                                             &sq, x->v, &sv, out2, &so, den2,
                                             &w);
    if (st == LINATTN_EDENOM || st == LINATTN_EOVERFLOW)
        *bad = w.row;
    if ((st && (w.batch != 0 || w.head != 0)) ||
        (!st && (memcmp(out2, out2 + span, (size_t)span * sizeof(real)) ||
                 memcmp(den2, den2 + n, (size_t)n * sizeof(real)))))
        st = -1000;
    memcpy(x->out, out2, (size_t)span * sizeof(real));
    memcpy(x->den, den2, (size_t)n * sizeof(real));
    free(out2), free(den2);
    return st;
}

/* The backward of path into x's gradients (dw, db when the map has
 * them); the batched ones on two heads as above. */
static int backward(int path, const P(plan) *p, prob *x, int64_t *bad)
{
    int L = x->layout;
    int64_t n = x->n, d = x->d, e = x->e, ldq = ld_of(x, d), ldv = ld_of(x, e);
    int64_t lddw = L == ROW ? d : (x->h > 0 ? x->h : 1);
    real *dw = x->h ? x->dw : NULL, *db = x->with_b ? x->db : NULL;
    if (path == ATT)
        return P(attention_backward)(p, L, n, n, x->q, ldq, x->k, ldq, x->v,
                                     ldv, x->out, ldv, x->den, x->g, ldv, x->dq,
                                     ldq, x->dk, ldq, x->dv, ldv, dw, lddw, db,
                                     NULL, bad);
    if (path == CAUSAL)
        return P(causal_backward)(p, L, n, x->q, ldq, x->k, ldq, x->v, ldv,
                                  x->out, ldv, x->den, x->g, ldv, x->dq, ldq,
                                  x->dk, ldq, x->dv, ldv, dw, lddw, db, bad);
    int64_t sd = n * d, se = n * e;
    real *dq2 = alloc_fill(2 * sd, SENTINEL), *dk2 = alloc_fill(2 * sd, SENTINEL);
    real *dv2 = alloc_fill(2 * se, SENTINEL), *den2 = alloc_fill(2 * n, 0);
    memcpy(den2, x->den, (size_t)n * sizeof(real));
    memcpy(den2 + n, x->den, (size_t)n * sizeof(real));
    linattn_strides sq = {ldq, 0, 0}, sv = {ldv, 0, 0};
    linattn_strides sdq = {ldq, 2 * sd, sd}, sdv = {ldv, 2 * se, se};
    linattn_where w = {-1, -1, -1};
    int st = path == B_ATT
                 ? P(batched_attention_backward)(
                       p, L, 1, 2, n, n, x->q, &sq, x->k, &sq, x->v, &sv,
                       x->out, &sv, den2, x->g, &sv, dq2, &sdq, dk2, &sdq, dv2,
                       &sdv, dw, lddw, db, &w)
                 : P(batched_causal_backward)(
                       p, L, 1, 2, n, x->q, &sq, x->k, &sq, x->v, &sv, x->out,
                       &sv, den2, x->g, &sv, dq2, &sdq, dk2, &sdq, dv2, &sdv,
                       dw, lddw, db, &w);
    if (st == LINATTN_EDENOM || st == LINATTN_EOVERFLOW)
        *bad = w.row;
    /* the first failing problem is (0, 0), whose rows are head 1's too;
     * dw and db sum both heads: compared by the callers */
    if ((st && st != LINATTN_ENOMEM && w.row >= 0 &&
         (w.batch != 0 || w.head != 0)) ||
        (!st && (memcmp(dq2, dq2 + sd, (size_t)sd * sizeof(real)) ||
                 memcmp(dk2, dk2 + sd, (size_t)sd * sizeof(real)) ||
                 memcmp(dv2, dv2 + se, (size_t)se * sizeof(real)))))
        st = -1000;
    memcpy(x->dq, dq2, (size_t)sd * sizeof(real));
    memcpy(x->dk, dk2, (size_t)sd * sizeof(real));
    memcpy(x->dv, dv2, (size_t)se * sizeof(real));
    free(dq2), free(dk2), free(dv2), free(den2);
    return st;
}

/* NULL when what a backward call left keeps the invariant for finite
 * inputs (gradients filled with SENTINEL before), else what is wrong. */
static const char *violation(const prob *x, int st, int64_t bad)
{
    int64_t n = x->n, d = x->d, e = x->e;
    int params = (x->h ? 1 : 0) + x->with_b;
    if (st == -1000)
        return "the batched heads disagree, or the wrong problem named";
    if (st == LINATTN_ENOMEM)
        return NULL;
    if (st == 0) {
        int ok = all_finite(x->dq, n * d) && all_finite(x->dk, n * d) &&
                 all_finite(x->dv, n * e) &&
                 (!x->h || all_finite(x->dw, x->h * d)) &&
                 (!x->with_b || all_finite(x->db, x->h));
        return ok ? NULL : "a non-finite gradient with status 0";
    }
    if (st != LINATTN_EOVERFLOW)
        return "an unexpected status";
    if (params && (!untouched(x->dw, x->h * d) || !untouched(x->db, x->h)))
        return "EOVERFLOW wrote dw or db";
    int64_t q = first_bad_row(x, x->dq, d), kk = first_bad_row(x, x->dk, d);
    int64_t vv = first_bad_row(x, x->dv, e), kv = kk < vv ? kk : vv;
    int64_t want = q < n ? q : kv < n ? kv : -1;
    if (bad != want)
        return "EOVERFLOW names another row than the header says";
    if (want < 0 && !params)
        return "EOVERFLOW without a non-finite gradient";
    return NULL;
}

/* ---- plans ---- */

static P(plan) *identity_plan(int denom)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = denom;
    o.block = 4;
    o.chunk = 3;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_IDENTITY, 1, 1, &o), 0);
    return p;
}

/* custom act(w x + b), d = m = e = 1 */
static P(plan) *scalar_custom(int act, real w, const real *b)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 4;
    o.chunk = 3;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create_custom)(&p, act, 1, 1, 1, ROW, &w, 1, b, &o),
                     0);
    return p;
}

/* Values whose sum leaves the range, and a quotient beyond it: the
 * forward with den returns what the plain forward returns (status, row,
 * out bit for bit), on every path and both layouts; den is finite in the
 * rows out got. */
START_TEST(forward_den_as_plain)
{
    real big = REAL_MAX_ / 2 * (real)1.5;
    real near = sizeof(real) == 4 ? (real)(-1 + 0x1p-20) : (real)(-1 + 0x1p-40);
    P(plan) *p = identity_plan(LINATTN_DENOM_NONZERO);
    /* rows of (q, k, v): sums of v overflow (row 2 causally); keys whose
     * sum is tiny under a huge value overflow the quotient (row 1
     * causally, row 0 otherwise) */
    const real cases[2][3][4] = {{{1, 1, 1, 1}, {1, 1, 1, 1}, {1, big, big, 1}},
                                 {{1, 1, 1, 1}, {1, near, 0, 0},
                                  {big, 0, 0, 0}}};
    for (int c = 0; c < 2; c++)
        for (int layout = ROW; layout <= COL; layout++)
            for (int path = 0; path < NPATHS; path++) {
                prob x = prob_new(p, layout, 4);
                memcpy(x.q, cases[c][0], sizeof cases[c][0]);
                memcpy(x.k, cases[c][1], sizeof cases[c][1]);
                memcpy(x.v, cases[c][2], sizeof cases[c][2]);
                real plain[4] = {SENTINEL, SENTINEL, SENTINEL, SENTINEL};
                int64_t bad = -1, pbad = -1, ld = layout == ROW ? 1 : 4;
                int causal = path == CAUSAL || path == B_CAUSAL;
                int pst = causal ? P(causal)(p, layout, 4, x.q, ld, x.k, ld,
                                             x.v, ld, plain, ld, &pbad)
                                 : P(attention)(p, layout, 4, 4, x.q, ld, x.k,
                                                ld, x.v, ld, plain, ld, &pbad);
                int st = forward(path, p, &x, &bad);
                ck_assert_msg(st == pst && bad == pbad,
                              "case %d %s: status %d row %d, plain %d row %d",
                              c, path_name[path], st, (int)bad, pst, (int)pbad);
                ck_assert(pst == LINATTN_EOVERFLOW);
                int64_t upto = pbad > 0 ? pbad : 0; /* -1: no row */
                ck_assert(!memcmp(plain, x.out, (size_t)upto * sizeof(real)));
                ck_assert(all_finite(x.den, upto));
                prob_free(&x);
            }
    P(plan_destroy)(p);
}
END_TEST

/* Identity, q = k = t with t^2 below 1 / REAL_MAX (1 / den overflows),
 * v = 2, every path, n = 1 and 7, both layouts.  The forward with den
 * (as linattn_d_attention now): status 0, out exactly 2, den exactly
 * (keys seen) t^2.  The backward with G = t: [g h] = [1 / t, -2 / t] are
 * finite when divided (multiplying by 1 / den gives Inf); out = v
 * whatever q and k, so dq = dk = 0, and dv_j = sum_{i sees j} t^3 /
 * den_i. */
START_TEST(tiny_normalizer)
{
    real t = sizeof(real) == 4 ? (real)0x1p-70 : (real)0x1p-520;
    ck_assert(isinf(1 / (t * t)) && t * t > 0);
    P(plan) *p = identity_plan(LINATTN_DENOM_NONZERO);
    for (int64_t n = 1; n <= 7; n += 6)
        for (int layout = ROW; layout <= COL; layout++)
            for (int path = 0; path < NPATHS; path++) {
                prob x = prob_new(p, layout, n);
                for (int64_t i = 0; i < n; i++)
                    x.q[i] = x.k[i] = x.g[i] = t, x.v[i] = 2;
                int64_t bad = -1;
                int st = forward(path, p, &x, &bad);
                ck_assert_msg(st == 0, "%s: status %d", path_name[path], st);
                int causal = path == CAUSAL || path == B_CAUSAL;
                for (int64_t i = 0; i < n; i++) {
                    real want = (real)(causal ? i + 1 : n) * (t * t);
                    ck_assert_msg(x.out[i] == 2 && x.den[i] == want,
                                  "%s row %d: out %a den %a", path_name[path],
                                  (int)i, (double)x.out[i], (double)x.den[i]);
                }
                st = backward(path, p, &x, &bad);
                ck_assert_msg(st == 0, "%s n %d: status %d row %d",
                              path_name[path], (int)n, st, (int)bad);
                for (int64_t j = 0; j < n; j++) {
                    long double want = 0;
                    for (int64_t i = causal ? j : 0; i < n; i++)
                        want += 1.0L / (causal ? i + 1 : n);
                    want *= t;
                    ck_assert_msg(fabsl(x.dv[j] - want) <= TOL * fabsl(want) &&
                                      fabs(x.dq[j]) <= TOL &&
                                      fabs(x.dk[j]) <= TOL,
                                  "%s n %d row %d: dq %a dk %a dv %a",
                                  path_name[path], (int)n, (int)j,
                                  (double)x.dq[j], (double)x.dk[j],
                                  (double)x.dv[j]);
                }
                prob_free(&x);
            }
    P(plan_destroy)(p);
}
END_TEST

/* dv of backward_huge_normalizer from g: phi(K) (phi(Q)^T g) without the
 * chunk triangle, A^T g = (t t) g with it (causal). */
static real huge_dv(int causal, real t, real g)
{
    volatile real ds = t * g, a = t * t;
    return causal ? a * g : t * ds;
}

/* Identity, n = 1, q = k = t with den = t^2 above 1 / REAL_MIN: 1 / den
 * is subnormal and has lost bits.  With v = 1 and G such that dividing by
 * den and multiplying by 1 / den give different dv: dv bit for bit as the
 * division gives it (one product each, no sums); dq = dk = 0. */
START_TEST(backward_huge_normalizer)
{
    real t = sizeof(real) == 4 ? (real)(1.5 * 0x1p63) : (real)(1.5 * 0x1p511);
    real den = t * t, inv = 1 / den, G = 0;
    ck_assert(isfinite(den) && !isnormal(inv));
    uint64_t s = 5;
    for (int i = 0; i < 10000 && !G; i++) {
        real c = (real)(1 + test_uniform(&s));
        volatile real gd = c / den, gm = c * inv;
        if (huge_dv(0, t, gd) != huge_dv(0, t, gm) &&
            huge_dv(1, t, gd) != huge_dv(1, t, gm))
            G = c;
    }
    ck_assert(G != 0);
    volatile real g = G / den;
    P(plan) *p = identity_plan(LINATTN_DENOM_NONZERO);
    for (int path = 0; path < NPATHS; path++) {
        real want = huge_dv(path == CAUSAL || path == B_CAUSAL, t, g);
        prob x = prob_new(p, ROW, 1);
        x.q[0] = x.k[0] = t, x.v[0] = 1, x.g[0] = G;
        int64_t bad = -1;
        ck_assert_int_eq(forward(path, p, &x, &bad), 0);
        ck_assert(x.den[0] == den && x.out[0] == 1);
        ck_assert_int_eq(backward(path, p, &x, &bad), 0);
        ck_assert_msg(x.dv[0] == want && x.dq[0] == 0 && x.dk[0] == 0,
                      "%s: dv %a, want %a (multiplied: %a)", path_name[path],
                      (double)x.dv[0], (double)want,
                      (double)huge_dv(path == CAUSAL || path == B_CAUSAL, t,
                                      G * inv));
        prob_free(&x);
    }
    P(plan_destroy)(p);
}
END_TEST

/* Gradients beyond the range from finite inputs whose forward is fine:
 * identity, q = (1, 1), k = (1, 0), v = (1, 1) (den = 1, out = 1) and
 * G = (big, big): dS = 2 big overflows, so dk_0, dv_0 are not finite
 * while dq is: LINATTN_EOVERFLOW naming row 0 (of dk, dv).  Tiny
 * normalizers with G = 1: g = 1 / t^2 itself overflows, dq_0 is not
 * finite: row 0 (of dq). */
START_TEST(backward_overflow_reported)
{
    real big = REAL_MAX_ / 4 * 3;
    real t = sizeof(real) == 4 ? (real)0x1p-70 : (real)0x1p-520;
    P(plan) *p = identity_plan(LINATTN_DENOM_NONZERO);
    for (int layout = ROW; layout <= COL; layout++)
        for (int path = 0; path < NPATHS; path++) {
            prob x = prob_new(p, layout, 2);
            x.q[0] = x.q[1] = 1, x.k[0] = 1, x.k[1] = 0;
            x.v[0] = x.v[1] = 1, x.g[0] = x.g[1] = big;
            int64_t bad = -5;
            ck_assert_int_eq(forward(path, p, &x, &bad), 0);
            ck_assert(x.den[0] == 1 && x.den[1] == 1);
            int st = backward(path, p, &x, &bad);
            ck_assert_msg(st == LINATTN_EOVERFLOW && bad == 0,
                          "%s: status %d row %d", path_name[path], st,
                          (int)bad);
            ck_assert(all_finite(x.dq, 2) && !isfinite(x.dv[0]));
            ck_assert_ptr_null(violation(&x, st, bad));
            prob_free(&x);

            x = prob_new(p, layout, 1);
            x.q[0] = x.k[0] = t, x.v[0] = 2, x.g[0] = 1;
            ck_assert_int_eq(forward(path, p, &x, &bad), 0);
            bad = -5;
            st = backward(path, p, &x, &bad);
            ck_assert_msg(st == LINATTN_EOVERFLOW && bad == 0,
                          "%s tiny: status %d row %d", path_name[path], st,
                          (int)bad);
            ck_assert(!isfinite(x.dq[0]));
            prob_free(&x);
        }
    P(plan_destroy)(p);
}
END_TEST

/* Only dW leaves the range: custom ReLU phi = relu(w x + 1), w = 2^-20,
 * q = (0, 0), k = (0, 2^20), v = (0, 1) (phi(k) = (1, 2), den = 3, out =
 * 2/3), G = (X, X): dphi(q) = 0, dphi(k) = (-4X/9, 2X/9), dk = w dphi(k)
 * and dv = (2X/3, 4X/3) are finite, db = -2X/9, but dW = 2^20 2X/9 is
 * beyond the range: LINATTN_EOVERFLOW with row -1, dW and db untouched.
 * The batched calls sum dW over both heads: a G that keeps one head's dW
 * at 3/4 of the range gives status 0 alone and EOVERFLOW ({-1, -1, -1})
 * for two (causally row 0 sees key 0 alone, out_0 = 0, and dW is half as
 * large: G twice as large). */
START_TEST(backward_param_overflow)
{
    real b = 1, two20 = (real)0x1p20;
    P(plan) *p = scalar_custom(LINATTN_ACT_RELU, (real)0x1p-20, &b);
    for (int path = 0; path < NPATHS; path++)
        for (int pass = 0; pass < 2; pass++) {
            /* pass 0: X = REAL_MAX / 4; pass 1: dW = 3/4 REAL_MAX per head */
            int causal = path == CAUSAL || path == B_CAUSAL;
            real X = pass ? REAL_MAX_ / two20 * (real)(27.0 / 8) * (causal + 1)
                          : REAL_MAX_ / 4;
            prob x = prob_new(p, ROW, 2);
            x.with_b = 1;
            x.k[1] = two20, x.v[1] = 1, x.g[0] = x.g[1] = X;
            int64_t bad = -5;
            ck_assert_int_eq(forward(path, p, &x, &bad), 0);
            int st = backward(path, p, &x, &bad);
            int batched = path == B_ATT || path == B_CAUSAL;
            int want = pass == 0 || batched ? LINATTN_EOVERFLOW : 0;
            ck_assert_msg(st == want, "%s pass %d: status %d", path_name[path],
                          pass, st);
            ck_assert(all_finite(x.dq, 2) && all_finite(x.dk, 2) &&
                      all_finite(x.dv, 2));
            if (want) {
                ck_assert_msg(bad == -1, "%s: row %d", path_name[path],
                              (int)bad);
                ck_assert(x.dw[0] == SENTINEL && x.db[0] == SENTINEL);
            } else {
                ck_assert(isfinite(x.dw[0]) && isfinite(x.db[0]));
            }
            prob_free(&x);
        }
    P(plan_destroy)(p);
}
END_TEST

/* features_backward: dx = w dphi beyond the range (w = 2), or dW = sum
 * dphi x beyond it with dx finite (w = 1, two rows): EOVERFLOW, dW and db
 * untouched; NaN in dphi propagates with status 0. */
START_TEST(features_backward_overflow)
{
    real big = REAL_MAX_ / 4 * 3;
    for (int c = 0; c < 3; c++) {
        real b = 0;
        P(plan) *p = scalar_custom(LINATTN_ACT_RELU, c == 0 ? 2 : 1, &b);
        real x[2] = {1, 1}, dphi[2] = {big, c == 2 ? (real)NAN : big};
        real dx[2] = {SENTINEL, SENTINEL}, dw = SENTINEL, db = SENTINEL;
        int st = P(features_backward)(p, ROW, 2, x, 1, dphi, 1, dx, 1, &dw, 1,
                                      &db);
        if (c < 2) {
            ck_assert_msg(st == LINATTN_EOVERFLOW, "case %d: status %d", c, st);
            ck_assert(dw == SENTINEL && db == SENTINEL);
            ck_assert(c == 0 ? !isfinite(dx[0]) : dx[0] == big);
        } else {
            ck_assert_int_eq(st, 0);
            ck_assert(isnan(dx[1]) && isnan(dw));
        }
        P(plan_destroy)(p);
    }
}
END_TEST

/* NaN or Inf among the inputs propagate with status 0, even where the
 * gradients would overflow from the finite ones: G with a NaN, or an
 * infinite q, beside the overflowing case above. */
START_TEST(nonfinite_inputs_propagate)
{
    real big = REAL_MAX_ / 4 * 3;
    P(plan) *p = identity_plan(LINATTN_DENOM_NONZERO);
    for (int which = 0; which < 2; which++)
        for (int path = 0; path < NPATHS; path++) {
            prob x = prob_new(p, ROW, 3);
            real q[3] = {1, 1, 1}, k[3] = {1, 0, 1}, v[3] = {1, 1, 1};
            memcpy(x.q, q, sizeof q), memcpy(x.k, k, sizeof k);
            memcpy(x.v, v, sizeof v);
            int64_t bad = -5;
            ck_assert_int_eq(forward(path, p, &x, &bad), 0);
            x.g[0] = x.g[1] = big;
            if (which == 0)
                x.g[2] = (real)NAN;
            else
                x.q[2] = (real)INFINITY;
            int st = backward(path, p, &x, &bad);
            ck_assert_msg(st == 0, "%s input %d: status %d", path_name[path],
                          which, st);
            ck_assert(!all_finite(x.dv, 3) || !all_finite(x.dq, 3));
            prob_free(&x);
        }
    P(plan_destroy)(p);
}
END_TEST

/* ---- the sweep ---- */

/* Every map, policy, path and layout on inputs (and G) across the exponent
 * range: where the forward succeeds, what the backward leaves keeps the
 * invariant (violation()); features_backward likewise. */
START_TEST(invariant_sweep)
{
    uint64_t s = 777 + (uint64_t)_i;
    int64_t d = 1 + _i % 3, e = 1 + (_i / 3) % 2;
    const real b[3] = {0, (real)0.5, -1};
    int custom = sweep_custom(_i);
    P(plan) *p = sweep_plan(_i, d, e, b);
    for (int trial = 0; trial < 5; trial++) {
        int64_t n = 1 + (int64_t)(9 * test_uniform(&s));
        int layout = test_uniform(&s) < 0.5 ? ROW : COL;
        for (int path = 0; path < NPATHS; path++) {
            prob x = prob_new(p, layout, n);
            x.with_b = custom;
            uint64_t s2 = s + 31 * (uint64_t)trial;
            draw_all(&s2, x.q, n * d), draw_all(&s2, x.k, n * d);
            draw_all(&s2, x.v, n * e), draw_all(&s2, x.g, n * e);
            int64_t bad = -5;
            int fst = forward(path, p, &x, &bad);
            ck_assert_msg(fst != -1000, "case %d %s: heads disagree", _i,
                          path_name[path]);
            if (fst == 0) {
                bad = -5;
                int st = backward(path, p, &x, &bad);
                const char *why = violation(&x, st, bad);
                ck_assert_msg(!why, "case %d trial %d %s: %s (status %d row %d)",
                              _i, trial, path_name[path], why, st, (int)bad);
            }
            prob_free(&x);
        }
        /* features_backward on the same kind of inputs */
        int64_t m;
        P(plan_dims)(p, &d, &m, &e);
        prob x = prob_new(p, ROW, n);
        real *dphi = alloc_fill(n * m, 0);
        draw_all(&s, x.q, n * d), draw_all(&s, dphi, n * m);
        int st = P(features_backward)(p, ROW, n, x.q, d, dphi, m, x.dq, d,
                                      x.h ? x.dw : NULL, d,
                                      custom ? x.db : NULL);
        int ok = st == LINATTN_EOVERFLOW
                     ? untouched(x.dw, x.h * d) && untouched(x.db, x.h)
                     : st == 0 && all_finite(x.dq, n * d) &&
                           all_finite(x.dw, x.h * d) &&
                           (!custom || all_finite(x.db, x.h));
        ck_assert_msg(ok, "case %d trial %d features_backward: status %d", _i,
                      trial, st);
        free(dphi);
        prob_free(&x);
    }
    P(plan_destroy)(p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("finite gradients " PREC);
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, tiny_normalizer);
    tcase_add_test(tc, forward_den_as_plain);
    tcase_add_test(tc, backward_huge_normalizer);
    tcase_add_test(tc, backward_overflow_reported);
    tcase_add_test(tc, backward_param_overflow);
    tcase_add_test(tc, features_backward_overflow);
    tcase_add_test(tc, nonfinite_inputs_propagate);
    tcase_add_loop_test(tc, invariant_sweep, 0, 11 * 4 * 3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
