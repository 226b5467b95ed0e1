/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_count.c -- the normalizer by token count (LINATTN_DENOM_COUNT),
 * compiled once per precision.
 *
 * Every path divides phi(Q) S by the number of keys a row sees: checked
 * against plain loops over the library's own features (the features are
 * tested elsewhere; here what is tested is which sums are formed and what
 * they are divided by), for every map the policy accepts, both layouts,
 * awkward sizes, chunk sizes and threads; then the policy's refusals and
 * its boundary cases.
 */
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

/* The maps the policy takes: every map without a stabilizing shift. */
enum { NKINDS = 7 };
static const char *const kind_names[NKINDS] = {
    "identity", "elu1", "relu", "taylor", "custom relu", "custom elu1",
    "custom hedgehog"};

static P(plan) *count_plan(int kind, int64_t d, int64_t e, int64_t chunk,
                           double eps)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = LINATTN_DENOM_COUNT;
    o.eps = eps;
    o.block = 16;
    o.chunk = chunk;
    P(plan) *p = NULL;
    static const int builtin[] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1,
                                  LINATTN_MAP_RELU, LINATTN_MAP_TAYLOR};
    if (kind < 4) {
        ck_assert_int_eq(P(plan_create)(&p, builtin[kind], d, e, &o), 0);
        return p;
    }
    static const int acts[] = {LINATTN_ACT_RELU, LINATTN_ACT_ELU1,
                               LINATTN_ACT_HEDGEHOG};
    int act = acts[kind - 4];
    int64_t m = act == LINATTN_ACT_HEDGEHOG ? 2 * (d + 1) : d + 2;
    int64_t rows = act == LINATTN_ACT_HEDGEHOG ? m / 2 : m;
    uint64_t seed = 5 + (uint64_t)kind;
    tmat w = tmat_rand(ROW, rows, d, 0, -0.7, 0.7, &seed);
    tmat b = tmat_rand(ROW, rows, 1, 0, -0.2, 0.3, &seed);
    ck_assert_int_eq(P(plan_create_custom)(&p, act, d, m, e, ROW, w.a, d, b.a,
                                           &o),
                     0);
    tmat_free(&w), tmat_free(&b);
    return p;
}

/* phi(x) of the rows of x by the library, as long double, row major. */
static long double *features_of(const P(plan) *p, const tmat *x, int64_t *m)
{
    int64_t d;
    P(plan_dims)(p, &d, m, NULL);
    real *xr = malloc((size_t)(x->rows * d + 1) * sizeof *xr);
    for (int64_t i = 0; i < x->rows; i++)
        for (int64_t t = 0; t < d; t++)
            xr[i * d + t] = *tmat_at(x, i, t);
    real *f = malloc((size_t)(x->rows * *m + 1) * sizeof *f);
    ck_assert_int_eq(P(features)(p, ROW, x->rows, xr, d, f, *m), 0);
    free(xr);
    long double *g = malloc((size_t)(x->rows * *m + 1) * sizeof *g);
    for (int64_t i = 0; i < x->rows * *m; i++)
        g[i] = f[i];
    free(f);
    return g;
}

/* out_i = sum_j (phi(q_i).phi(k_j)) v_j / (count_i + eps), count_i = nk,
 * or i + 1 + before with causal set (rows see keys j <= i), by plain
 * loops. */
static long double *ref_count(const P(plan) *p, int causal, int64_t before,
                              double eps, const tmat *q, const tmat *k,
                              const tmat *v)
{
    int64_t m, nq = q->rows, nk = k->rows, e = v->cols;
    long double *fq = features_of(p, q, &m), *fk = features_of(p, k, &m);
    long double *out = calloc((size_t)(nq * e + 1), sizeof *out);
    for (int64_t i = 0; i < nq; i++) {
        for (int64_t j = 0; j < (causal ? i + 1 : nk); j++) {
            long double a = 0;
            for (int64_t t = 0; t < m; t++)
                a += fq[i * m + t] * fk[j * m + t];
            for (int64_t c = 0; c < e; c++)
                out[i * e + c] += a * *tmat_at(v, j, c);
        }
        long double count = (causal ? i + 1 + before : nk) + (long double)eps;
        for (int64_t c = 0; c < e; c++)
            out[i * e + c] /= count;
    }
    free(fq), free(fk);
    return out;
}

/* Non-causal and causal, factored and naive, against the loops: every
 * accepted map, both layouts, n = 1, n not a multiple of the block (16)
 * or chunk, d != e, padded leading dimensions, chunks 1, 7 and the
 * default, and n = 130 > 2 blocks so that the calls split over threads. */
START_TEST(paths_match_loops)
{
    static const int64_t ns[] = {1, 23, 130};
    int kind = _i % NKINDS, layout = (_i / NKINDS) % 2 ? COL : ROW;
    int64_t n = ns[(_i / (2 * NKINDS)) % 3], d = 3 + _i % 2, e = 2 + _i % 3;
    int64_t nk = n + 5;
    uint64_t seed = 900 + (uint64_t)_i;
    double eps = _i % 4 == 1 ? 0.5 : 0;
    tmat q = tmat_rand(layout, n, d, 1, -1, 1, &seed);
    tmat k = tmat_rand(layout, nk, d, 2, -1, 1, &seed);
    tmat v = tmat_rand(layout, nk, e, 0, -1, 1, &seed);
    tmat o = tmat_like(&q, n, e, 3);
    static const int64_t chunks[] = {1, 7, 0};
    for (int ci = 0; ci < 3; ci++) {
        P(plan) *p = count_plan(kind, d, e, chunks[ci], eps);
        long double *ref = ref_count(p, 0, 0, eps, &q, &k, &v);
        ck_assert_int_eq(P(attention)(p, layout, n, nk, q.a, q.ld, k.a, k.ld,
                                      v.a, v.ld, o.a, o.ld, NULL), 0);
        double e1 = rel_err(&o, ref);
        ck_assert_int_eq(P(naive)(p, layout, n, nk, q.a, q.ld, k.a, k.ld, v.a,
                                  v.ld, o.a, o.ld, NULL), 0);
        double e2 = rel_err(&o, ref);
        free(ref);
        ref = ref_count(p, 1, 0, eps, &q, &k, &v);
        ck_assert_int_eq(P(causal)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a,
                                   v.ld, o.a, o.ld, NULL), 0);
        double e3 = rel_err(&o, ref);
        ck_assert_int_eq(P(naive_causal)(p, layout, n, q.a, q.ld, k.a, k.ld,
                                         v.a, v.ld, o.a, o.ld, NULL), 0);
        double e4 = rel_err(&o, ref);
        ck_assert_msg(e1 < TOL && e2 < TOL && e3 < TOL && e4 < TOL,
                      "%s %s layout %d n %lld C %lld: attention %g naive %g "
                      "causal %g naive_causal %g", PREC, kind_names[kind],
                      layout, (long long)n, (long long)chunks[ci], e1, e2, e3,
                      e4);
        ck_assert(tmat_padding_intact(&o));
        free(ref);
        P(plan_destroy)(p);
    }
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&o);
}
END_TEST

/* The streaming state divides by the tokens it holds: keys in uneven
 * pieces then one query, and token by token, which is the causal call;
 * num is phi(q) S whatever the policy, den the count + eps. */
START_TEST(state_divides_by_tokens)
{
    int kind = _i;
    uint64_t seed = 31 + (uint64_t)_i;
    int64_t n = 41, d = 4, e = 3;
    double eps = 0.25;
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat o = tmat_like(&q, n, e, 0), num = tmat_like(&q, n, e, 0);
    real *den = malloc((size_t)n * sizeof *den);
    P(plan) *p = count_plan(kind, d, e, 0, eps);
    P(state) *st;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    int64_t cut[] = {0, 1, 6, 19, 41};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(P(state_update)(st, ROW, cut[i + 1] - cut[i],
                                         k.a + cut[i] * d, d, v.a + cut[i] * e,
                                         e),
                         0);
    long double *ref = ref_count(p, 0, 0, eps, &q, &k, &v);
    ck_assert_int_eq(P(state_query)(st, ROW, n, q.a, d, o.a, e, num.a, e, den,
                                    NULL), 0);
    ck_assert_msg(rel_err(&o, ref) < TOL, "%s %s: %g", PREC, kind_names[kind],
                  rel_err(&o, ref));
    for (int64_t i = 0; i < n; i++) {
        ck_assert(den[i] == (real)(n + eps));
        for (int64_t c = 0; c < e; c++) /* num = out * count */
            ck_assert(fabsl(num.a[i * e + c] - ref[i * e + c] * (n + eps)) <=
                      TOL * 10 * (1 + fabsl(ref[i * e + c] * n)));
    }
    free(ref);
    /* one token at a time, querying after each: the causal rows */
    ref = ref_count(p, 1, 0, eps, &q, &k, &v);
    P(state_reset)(st);
    for (int64_t i = 0; i < n; i++) {
        ck_assert_int_eq(P(state_update)(st, ROW, 1, k.a + i * d, d,
                                         v.a + i * e, e), 0);
        ck_assert_int_eq(P(state_query)(st, ROW, 1, q.a + i * d, d,
                                        o.a + i * e, e, NULL, 0, NULL, NULL),
                         0);
    }
    ck_assert_msg(rel_err(&o, ref) < TOL, "%s %s token by token: %g", PREC,
                  kind_names[kind], rel_err(&o, ref));
    free(ref);
    free(den);
    P(state_destroy)(st);
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&o), tmat_free(&num);
}
END_TEST

/* The batched calls, [B][H][n][c] row major: every problem against its
 * own loops. */
START_TEST(batched_match_loops)
{
    int kind = _i;
    enum { B = 2, H = 3 };
    int64_t n = 37, d = 3, e = 4;
    uint64_t seed = 70 + (uint64_t)_i;
    tmat q = tmat_rand(ROW, B * H * n, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, B * H * n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, B * H * n, e, 0, -1, 1, &seed);
    tmat o = tmat_like(&q, B * H * n, e, 0);
    linattn_strides sx = {d, H * n * d, n * d}, sv = {e, H * n * e, n * e};
    P(plan) *p = count_plan(kind, d, e, 5, 0);
    for (int causal = 0; causal < 2; causal++) {
        if (causal)
            ck_assert_int_eq(P(batched_causal)(p, ROW, B, H, n, q.a, &sx, k.a,
                                               &sx, v.a, &sv, o.a, &sv, NULL),
                             0);
        else
            ck_assert_int_eq(P(batched_attention)(p, ROW, B, H, n, n, q.a, &sx,
                                                  k.a, &sx, v.a, &sv, o.a, &sv,
                                                  NULL),
                             0);
        for (int64_t h = 0; h < B * H; h++) {
            tmat qh = {ROW, n, d, d, q.a + h * n * d};
            tmat kh = {ROW, n, d, d, k.a + h * n * d};
            tmat vh = {ROW, n, e, e, v.a + h * n * e};
            tmat oh = {ROW, n, e, e, o.a + h * n * e};
            long double *ref = ref_count(p, causal, 0, 0, &qh, &kh, &vh);
            ck_assert_msg(rel_err(&oh, ref) < TOL, "%s %s causal %d problem %lld",
                          PREC, kind_names[kind], causal, (long long)h);
            free(ref);
        }
    }
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&o);
}
END_TEST

/* approx_error's kernelized output under COUNT is the attention call's:
 * its out_rel_fro equals the one computed here from the two outputs. */
START_TEST(approx_error_uses_count)
{
    uint64_t seed = 12;
    int64_t n = 29, d = 4, e = 3;
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat o = tmat_like(&q, n, e, 0), so = tmat_like(&q, n, e, 0);
    P(plan) *p = count_plan(1, d, e, 0, 0);
    real scale = (real)0.5;
    for (int causal = 0; causal < 2; causal++) {
        linattn_approx_stats s;
        ck_assert_int_eq(P(approx_error)(p, ROW, n, n, q.a, d, k.a, d, v.a, e,
                                         scale, causal, &s), 0);
        if (causal) {
            ck_assert_int_eq(P(causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, o.a,
                                       e, NULL), 0);
            /* causal softmax, row by row, from the unmasked call on
             * prefixes */
            for (int64_t i = 0; i < n; i++)
                ck_assert_int_eq(P(softmax)(ROW, 1, i + 1, d, e, scale,
                                            q.a + i * d, d, k.a, d, v.a, e,
                                            so.a + i * e, e), 0);
        } else {
            ck_assert_int_eq(P(attention)(p, ROW, n, n, q.a, d, k.a, d, v.a, e,
                                          o.a, e, NULL), 0);
            ck_assert_int_eq(P(softmax)(ROW, n, n, d, e, scale, q.a, d, k.a, d,
                                        v.a, e, so.a, e), 0);
        }
        long double dd = 0, rr = 0;
        for (int64_t i = 0; i < n * e; i++) {
            dd += ((long double)o.a[i] - so.a[i]) * ((long double)o.a[i] - so.a[i]);
            rr += (long double)so.a[i] * so.a[i];
        }
        double want = (double)sqrtl(dd / rr);
        ck_assert_msg(fabs(s.out_rel_fro - want) <= 100 * TOL * want,
                      "%s causal %d: approx_error %g, direct %g", PREC, causal,
                      s.out_rel_fro, want);
    }
    P(plan_destroy)(p);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&o), tmat_free(&so);
}
END_TEST

/* The count does not look at phi(q).z: a signed identity kernel whose
 * phi(q).z is 0 (refused by POSITIVE) passes, divided by the count.  No
 * key at all is a zero count: LINATTN_EDENOM at row 0, nothing written.
 * The shifted maps refuse the policy. */
START_TEST(policy_boundaries)
{
    real q[2] = {1, -1}, k[2] = {1, 1}, v[1] = {3}, out[1] = {-7};
    linattn_opts o;
    linattn_opts_init(&o);
    P(plan) *pos, *cnt;
    ck_assert_int_eq(P(plan_create)(&pos, LINATTN_MAP_IDENTITY, 2, 1, &o), 0);
    o.denom = LINATTN_DENOM_COUNT;
    ck_assert_int_eq(P(plan_create)(&cnt, LINATTN_MAP_IDENTITY, 2, 1, &o), 0);
    int64_t bad = -1;
    ck_assert_int_eq(P(attention)(pos, ROW, 1, 1, q, 2, k, 2, v, 1, out, 1,
                                  &bad), LINATTN_EDENOM);
    ck_assert(out[0] == -7 && bad == 0);
    ck_assert_int_eq(P(attention)(cnt, ROW, 1, 1, q, 2, k, 2, v, 1, out, 1,
                                  NULL), 0);
    ck_assert(out[0] == 0); /* (q.k) v / 1 = 0 */
    /* a second key: q.k2 = 2 - 0.5 = 1.5, value 2: (0 * 3 + 1.5 * 2) / 2 */
    real k2[4] = {1, 1, 2, 0.5}, v2[2] = {3, 2};
    ck_assert_int_eq(P(attention)(cnt, ROW, 1, 2, q, 2, k2, 2, v2, 1, out, 1,
                                  NULL), 0);
    ck_assert(out[0] == (real)1.5);
    out[0] = -7;
    bad = -1;
    ck_assert_int_eq(P(attention)(cnt, ROW, 1, 0, q, 2, NULL, 2, NULL, 1, out,
                                  1, &bad), LINATTN_EDENOM);
    ck_assert(out[0] == -7 && bad == 0);
    P(state) *st;
    ck_assert_int_eq(P(state_create)(&st, cnt), 0);
    ck_assert_int_eq(P(state_query)(st, ROW, 1, q, 2, out, 1, NULL, 0, NULL,
                                    &bad), LINATTN_EDENOM);
    ck_assert(out[0] == -7);
    P(state_destroy)(st);
    P(plan_destroy)(pos), P(plan_destroy)(cnt);

    static const int shifted[] = {LINATTN_MAP_FAVOR, LINATTN_MAP_FAVOR_HYP,
                                  LINATTN_MAP_TRIG};
    for (int i = 0; i < 3; i++) {
        P(plan) *p = (P(plan) *)&o; /* must stay as it is */
        ck_assert_int_eq(P(plan_create)(&p, shifted[i], 4, 2, &o), -5);
        ck_assert(p == (P(plan) *)&o);
    }
    real w[4] = {1, 0, 0, 1};
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 2, 2, 1, ROW, w,
                                           2, NULL, &o), -10);
    ck_assert(p == NULL);
    o.denom = LINATTN_DENOM_NONE + 1; /* beyond the last policy */
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 2, 1, &o), -5);
    ck_assert(p == NULL);
}
END_TEST

/* Causal rows divide by their global position: with the calls split over
 * threads (n = 300, block 16), rows of later ranges divide by i + 1, not
 * by their index in the range.  Constant values make every output the
 * sum of equal weights over i + 1: q.k = 0.5 and v = 4 for every token
 * give num_i = 2 (i + 1), so out_i = 2 on every row, and a row divided by
 * its index within its thread's range would not be. */
START_TEST(causal_count_is_global)
{
    int64_t n = 300, d = 2, e = 1;
    real *x = malloc((size_t)(n * d) * sizeof *x);
    real *v = malloc((size_t)n * sizeof *v), *out = malloc((size_t)n * sizeof *out);
    for (int64_t i = 0; i < n * d; i++)
        x[i] = (real)0.5; /* q.k = 0.5 */
    for (int64_t i = 0; i < n; i++)
        v[i] = 4;
    P(plan) *p = count_plan(0, d, e, 8, 0);
    ck_assert_int_eq(P(causal)(p, ROW, n, x, d, x, d, v, e, out, e, NULL), 0);
    for (int64_t i = 0; i < n; i++) /* sum_{j<=i} 0.5 * 4 / (i + 1) */
        ck_assert_msg(fabs(out[i] - 2) <= 4 * TOL, "%s row %lld: %g", PREC,
                      (long long)i, (double)out[i]);
    P(plan_destroy)(p);
    free(x), free(v), free(out);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("count_" PREC);
    TCase *tc = tcase_create("count");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, paths_match_loops, 0, NKINDS * 2 * 3);
    tcase_add_loop_test(tc, state_divides_by_tokens, 0, NKINDS);
    tcase_add_loop_test(tc, batched_match_loops, 0, NKINDS);
    tcase_add_test(tc, approx_error_uses_count);
    tcase_add_test(tc, policy_boundaries);
    tcase_add_test(tc, causal_count_is_global);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
