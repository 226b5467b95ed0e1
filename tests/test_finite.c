/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_finite.c -- finite inputs never produce a non-finite output with
 * status 0 (finite inputs, finite outputs), compiled once per precision.
 *
 * The defects that broke it (a normalizer whose reciprocal overflows, sums
 * of finite values beyond the range, a float working copy of a double
 * accumulator beyond float's), on every path; what LINATTN_EOVERFLOW
 * leaves (rows before it finite and exact, the state of a refused update
 * unchanged); NaN and Inf input still propagating as documented; and a
 * sweep of every map, path, policy and layout over inputs drawn across the
 * whole exponent range (subnormal to near overflow) against the invariant
 * (tests/finite_check.h, shared with the fuzzer of make check-hard).
 */
#include "testutil.h"

#define FC_REAL real
#define FC_API(name) P(name)
#define FC(name) fc_##name
#include "finite_check.h"
#include "finite_draw.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR


static P(plan) *plan_with(int map, int64_t d, int64_t e, int denom, double eps)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = denom;
    o.eps = eps;
    o.block = 4; /* several blocks and threads' ranges on small n */
    o.chunk = 3;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* A custom map phi = act(W x) with W the d x d identity (HEDGEHOG: m = 2d). */
static P(plan) *custom_plan(int act, int64_t d, int64_t e)
{
    real w[16] = {0};
    for (int64_t i = 0; i < d; i++)
        w[i * d + i] = 1;
    int64_t m = act == LINATTN_ACT_HEDGEHOG ? 2 * d : d;
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 4;
    o.chunk = 3;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create_custom)(&p, act, d, m, e, ROW, w, d, NULL, &o),
                     0);
    return p;
}

/* n rows of one row repeated: q, k of width d, v of width e, row major. */
static void fill(real *a, int64_t n, int64_t w, const real *row)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < w; j++)
            a[i * w + j] = row[j];
}

static void sentinel(real *a, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        a[i] = (real)FC_SENTINEL;
}

static const char *const path_name[FC_NPATHS] = {
    "attention", "naive", "causal", "naive_causal", "stream", "decode",
    "batched_attention", "batched_naive", "batched_causal",
    "batched_naive_causal"};

/* Defect 1: identity, d = e = 1, q = k = t with t^2 below 1 / REAL_MAX, so
 * that 1 / den overflows: every path, n = 1 (the few-row path) and 7, in
 * both layouts, must give exactly v = 2 (t a power of two: num and den
 * are exact although subnormal).  (Before: +Inf with status 0.) */
START_TEST(tiny_normalizer_divides)
{
    real t = sizeof(real) == 4 ? (real)0x1p-70 : (real)0x1p-520, two = 2;
    ck_assert(isinf(1 / (t * t)) && t * t > 0);
    P(plan) *p = plan_with(LINATTN_MAP_IDENTITY, 1, 1, 0, 0);
    for (int64_t n = 1; n <= 7; n += 6)
        for (int layout = ROW; layout <= COL; layout++)
            for (int path = 0; path < FC_NPATHS; path++) {
                real q[7], k[7], v[7], out[7];
                fill(q, n, 1, &t), fill(k, n, 1, &t), fill(v, n, 1, &two);
                sentinel(out, n);
                int64_t bad = -1;
                int st = fc_run(path, p, layout, n, 1, q, layout == ROW ? 1 : n,
                                k, layout == ROW ? 1 : n, v,
                                layout == ROW ? 1 : n, out,
                                layout == ROW ? 1 : n, &bad);
                ck_assert_msg(st == 0, "%s n %d: status %d", path_name[path],
                              (int)n, st);
                for (int64_t i = 0; i < n; i++)
                    ck_assert_msg(out[i] == 2, "%s: out %a", path_name[path],
                                  (double)out[i]);
            }
    /* numerators and normalizers asked for too: den = t^2, num = 2 t^2 */
    P(state) *s;
    P(state_create)(&s, p);
    real k1 = t, v1 = 2, out1 = 0, num1 = 0, den1 = 0;
    ck_assert_int_eq(P(state_update)(s, ROW, 1, &k1, 1, &v1, 1), 0);
    ck_assert_int_eq(P(state_query)(s, ROW, 1, &k1, 1, &out1, 1, &num1, 1, &den1,
                                    NULL), 0);
    ck_assert(out1 == 2 && den1 == t * t && num1 == 2 * (t * t));
    P(state_destroy)(s);
    P(plan_destroy)(p);
}
END_TEST

/* The other end: a normalizer above 1 / REAL_MIN has a subnormal reciprocal
 * that has lost bits; with v = 1/2 (num = den / 2 exactly) division gives
 * exactly 1/2. */
START_TEST(huge_normalizer_divides)
{
    real t = sizeof(real) == 4 ? (real)(1.5 * 0x1p63) : (real)(1.5 * 0x1p511);
    real half = (real)0.5;
    ck_assert(isfinite(t * t) && !isnormal(1 / (t * t)));
    P(plan) *p = plan_with(LINATTN_MAP_IDENTITY, 1, 1, 0, 0);
    for (int path = 0; path < FC_NPATHS; path++) {
        real q[3], k[3], v[3], out[3];
        fill(q, 3, 1, &t), fill(k, 1, 1, &t), fill(v, 1, 1, &half);
        /* keys after the first are 0 (causal rows see only key 0 anyway) */
        k[1] = k[2] = 0, v[1] = v[2] = 0;
        sentinel(out, 3);
        int64_t bad = -1;
        int st = fc_run(path, p, ROW, 3, 1, q, 1, k, 1, v, 1, out, 1, &bad);
        ck_assert_msg(st == 0, "%s: status %d", path_name[path], st);
        for (int i = 0; i < 3; i++)
            ck_assert_msg(out[i] == half, "%s: row %d: %a", path_name[path], i,
                          (double)out[i]);
    }
    P(plan_destroy)(p);
}
END_TEST

/* FAVOR+ at input norms where normalizers become subnormal (the issue saw
 * 2.3e-316 pass the policy and give +-Inf, with the status naming the next
 * row): every path keeps the invariant over several draws. */
START_TEST(favor_large_norms)
{
    int64_t n = 9, d = 4, e = 2;
    double norm = sizeof(real) == 4 ? 60 : 1e3;
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 4;
    o.chunk = 3;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        o.seed = seed;
        P(plan) *p = NULL;
        ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, d, e, &o), 0);
        uint64_t s = seed;
        real q[36], k[36], v[18], out[18];
        for (int i = 0; i < 36; i++) {
            q[i] = (real)(norm * (2 * test_uniform(&s) - 1));
            k[i] = (real)(norm * (2 * test_uniform(&s) - 1));
        }
        for (int i = 0; i < 18; i++)
            v[i] = (real)(2 * test_uniform(&s) - 1);
        for (int path = 0; path < FC_NPATHS; path++) {
            sentinel(out, 18);
            int64_t bad = -1;
            int st = fc_run(path, p, ROW, n, e, q, d, k, d, v, e, out, e, &bad);
            const char *why = fc_violation(st, bad, ROW, n, e, out, e);
            ck_assert_msg(!why, "%s seed %d: %s (status %d, row %d)",
                          path_name[path], (int)seed, why, st, (int)bad);
        }
        P(plan_destroy)(p);
    }
}
END_TEST

/* Defect 2: keys and values whose products pass the range (double 1e307;
 * float 1e37, whose double accumulator is fine but whose float working copy
 * is not), queries 0 (phi = 1, so the normalizers stay finite): elu+1 and
 * custom ELU1 give EOVERFLOW at row 0 on every path, nothing else written;
 * the streaming update refuses the keys and leaves the state as it was.
 * Custom EXP (features at most 1 after the shift) overflows through the
 * sum of 40 huge values: EOVERFLOW at some row, earlier rows finite.
 * (Before: +Inf with status 0.) */
START_TEST(sum_overflow_reported)
{
    real big = sizeof(real) == 4 ? (real)1e37 : (real)1e307;
    int64_t d = 2, e = 2, n = 40;
    real zero[2] = {0, 0}, bigrow[2] = {big, big};
    real q[80], k[80], v[80], out[80];
    fill(q, n, d, zero), fill(k, n, d, bigrow), fill(v, n, e, bigrow);
    P(plan) *plans[3] = {plan_with(LINATTN_MAP_ELU1, d, e, 0, 0),
                         custom_plan(LINATTN_ACT_ELU1, d, e),
                         custom_plan(LINATTN_ACT_EXP, d, e)};
    for (int pi = 0; pi < 3; pi++)
        for (int path = 0; path < FC_NPATHS; path++) {
            /* elu+1: few enough keys that z (n big) stays in range */
            n = pi < 2 ? 8 : 40;
            sentinel(out, n * e);
            int64_t bad = -1;
            int st = fc_run(path, plans[pi], ROW, n, e, q, d, k, d, v, e, out, e,
                            &bad);
            ck_assert_msg(st == LINATTN_EOVERFLOW, "map %d %s: status %d", pi,
                          path_name[path], st);
            const char *why = fc_violation(st, bad, ROW, n, e, out, e);
            ck_assert_msg(!why, "map %d %s: %s", pi, path_name[path], why);
            if (pi < 2) /* every row's own first key overflows */
                ck_assert_msg(bad == 0, "map %d %s: row %d", pi, path_name[path],
                              (int)bad);
        }
    /* the state of a refused update: unchanged, bit for bit (fc_run checks
     * the bytes); here also its S, z and tokens after a first good update */
    P(state) *s;
    P(state_create)(&s, plans[0]);
    real small[4] = {1, 2, 3, 4};
    ck_assert_int_eq(P(state_update)(s, ROW, 2, small, d, small, e), 0);
    real s0[4], z0[2], s1[4], z1[2];
    int64_t t0, t1;
    P(state_get)(s, ROW, s0, e, z0, &t0);
    ck_assert_int_eq(P(state_update)(s, ROW, 8, k, d, v, e), LINATTN_EOVERFLOW);
    ck_assert_int_eq(P(state_update)(s, COL, 1, k, 1, v, 1), LINATTN_EOVERFLOW);
    P(state_get)(s, ROW, s1, e, z1, &t1);
    ck_assert(t0 == 2 && t1 == 2 && !memcmp(s0, s1, sizeof s0) &&
              !memcmp(z0, z1, sizeof z0));
    P(state_destroy)(s);
    for (int pi = 0; pi < 3; pi++)
        P(plan_destroy)(plans[pi]);
}
END_TEST

/* Merging two finite states whose sum overflows: EOVERFLOW, dst unchanged
 * (merging into itself included); a sum that fits is taken. */
START_TEST(merge_overflow_refused)
{
    /* S = k v near the largest value (elu+1(k) = k + 1 ~ k) */
    real h = sizeof(real) == 4 ? (real)1.5e19 : (real)1e154;
    real k[1] = {h}, v[1] = {h};
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, 1, 1, 0, 0);
    P(state) *a, *b;
    P(state_create)(&a, p);
    P(state_create)(&b, p);
    ck_assert_int_eq(P(state_update)(a, ROW, 1, k, 1, v, 1), 0);
    ck_assert_int_eq(P(state_update)(b, ROW, 1, k, 1, v, 1), 0);
    real s0, z0, s1, z1;
    int64_t t0, t1;
    P(state_get)(a, ROW, &s0, 1, &z0, &t0);
    /* 2.25e38 twice passes FLT_MAX, 1e308 twice DBL_MAX */
    ck_assert_int_eq(P(state_merge)(a, b), LINATTN_EOVERFLOW);
    ck_assert_int_eq(P(state_merge)(a, a), LINATTN_EOVERFLOW);
    P(state_get)(a, ROW, &s1, 1, &z1, &t1);
    ck_assert(s0 == s1 && z0 == z1 && t0 == t1 && t1 == 1);
    real tiny[1] = {1};
    P(state_reset)(b);
    ck_assert_int_eq(P(state_update)(b, ROW, 1, tiny, 1, tiny, 1), 0);
    ck_assert_int_eq(P(state_merge)(a, b), 0);
    P(state_get)(a, ROW, &s1, 1, &z1, &t1);
    ck_assert(t1 == 2 && s1 == s0 + 2 && isfinite(s1));
    P(state_destroy)(a);
    P(state_destroy)(b);
    P(plan_destroy)(p);
}
END_TEST

/* What EOVERFLOW leaves: identity d = 2, e = 1, keys (1,0) -> 1 and
 * (0,1) -> big, so S = (1, big), z = (1, 1).  Query rows (1,0) give 1;
 * row 1, (0, g) with g big enough that g big overflows, has a numerator
 * beyond the range although its result (big) is not: EOVERFLOW at row 1,
 * row 0 exactly 1, later rows 1 or untouched.  The same for the raw
 * numerators and the normalizers when only they are asked for. */
START_TEST(overflow_row_semantics)
{
    real big = sizeof(real) == 4 ? (real)1e30 : (real)1e300;
    real g = sizeof(real) == 4 ? (real)1e10 : (real)1e10;
    real k[4] = {1, 0, 0, 1}, v[2] = {1, big};
    P(plan) *p = plan_with(LINATTN_MAP_IDENTITY, 2, 1, 0, 0);
    for (int64_t n = 3; n <= 9; n += 6) {
        real q[18], out[9];
        for (int64_t i = 0; i < n; i++)
            q[2 * i] = 1, q[2 * i + 1] = 0;
        q[2] = 0, q[3] = g;
        for (int which = 0; which < 3; which++) { /* state, attention, naive */
            sentinel(out, n);
            int64_t bad = -1;
            int st;
            if (which == 0) {
                P(state) *s;
                P(state_create)(&s, p);
                ck_assert_int_eq(P(state_update)(s, ROW, 2, k, 2, v, 1), 0);
                st = P(state_query)(s, ROW, n, q, 2, out, 1, NULL, 0, NULL, &bad);
                P(state_destroy)(s);
            } else {
                st = (which == 1 ? P(attention) : P(naive))(
                    p, ROW, n, 2, q, 2, k, 2, v, 1, out, 1, &bad);
            }
            ck_assert_int_eq(st, LINATTN_EOVERFLOW);
            ck_assert_int_eq(bad, 1);
            ck_assert(out[0] == 1 && !isfinite(out[1]));
            for (int64_t i = 2; i < n; i++)
                ck_assert(out[i] == 1 || out[i] == (real)FC_SENTINEL);
        }
        /* numerators only: row 1's is beyond the range */
        P(state) *s;
        P(state_create)(&s, p);
        ck_assert_int_eq(P(state_update)(s, ROW, 2, k, 2, v, 1), 0);
        real num[9], den[9];
        int64_t bad = -1;
        ck_assert_int_eq(P(state_query)(s, ROW, n, q, 2, NULL, 0, num, 1, NULL,
                                        &bad), LINATTN_EOVERFLOW);
        ck_assert(bad == 1 && num[0] == 1);
        /* normalizers only (no policy then): (h, h) . (1, 1) overflows */
        real h = (real)(0.75 * (sizeof(real) == 4 ? FLT_MAX : DBL_MAX));
        q[2] = h, q[3] = h;
        bad = -1;
        ck_assert_int_eq(P(state_query)(s, ROW, n, q, 2, NULL, 0, NULL, 0, den,
                                        &bad), LINATTN_EOVERFLOW);
        ck_assert(bad == 1 && den[0] == 1);
        q[2] = 0, q[3] = g;
        P(state_destroy)(s);
    }
    P(plan_destroy)(p);
}
END_TEST

/* NaN and Inf in the inputs still propagate with status 0 as documented (a
 * poisoned state's queries too, even when finite inputs later overflow),
 * and a checkpoint holding Inf answers as it was saved; a NaN query row
 * does not hide an overflow in a later row. */
START_TEST(nonfinite_inputs_propagate)
{
    real big = sizeof(real) == 4 ? (real)1e37 : (real)1e307;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, 1, 1, 0, 0);
    P(state) *s;
    P(state_create)(&s, p);
    real k[2] = {1, 1}, v[2] = {(real)NAN, 1}, q[3] = {0, 0, 0}, out[3];
    ck_assert_int_eq(P(state_update)(s, ROW, 2, k, 1, v, 1), 0);
    ck_assert_int_eq(P(state_query)(s, ROW, 3, q, 1, out, 1, NULL, 0, NULL, NULL),
                     0);
    ck_assert(isnan(out[0]));
    real kb[1] = {big}, vb[1] = {big};
    ck_assert_int_eq(P(state_update)(s, ROW, 1, kb, 1, vb, 1), 0);
    int64_t tokens;
    P(state_get)(s, ROW, NULL, 0, NULL, &tokens);
    ck_assert_int_eq(tokens, 3);
    /* the checkpoint of a poisoned state restores one that propagates */
    int64_t len;
    P(state_save_size)(s, &len);
    unsigned char *buf = malloc((size_t)len);
    P(state_save)(s, buf, len, NULL);
    P(state) *r;
    P(state_create)(&r, p);
    ck_assert_int_eq(P(state_load)(r, buf, len), 0);
    ck_assert_int_eq(P(state_query)(r, ROW, 1, q, 1, out, 1, NULL, 0, NULL, NULL),
                     0);
    free(buf);
    P(state_destroy)(r);
    P(state_destroy)(s);
    /* a NaN query row propagates; a later finite row that overflows is
     * still reported (identity: S = big^2 would not fit, so use huge q) */
    P(plan) *pi = plan_with(LINATTN_MAP_IDENTITY, 1, 1, 0, 0);
    P(state_create)(&s, pi);
    real one = 1, vv = big;
    ck_assert_int_eq(P(state_update)(s, ROW, 1, &one, 1, &vv, 1), 0);
    real qq[3] = {(real)NAN, 1, big};
    int64_t bad = -1;
    sentinel(out, 3);
    ck_assert_int_eq(P(state_query)(s, ROW, 3, qq, 1, out, 1, NULL, 0, NULL, &bad),
                     LINATTN_EDENOM); /* NaN's normalizer: the policy first */
    ck_assert_int_eq(bad, 0);
    real num[3];
    bad = -1;
    ck_assert_int_eq(P(state_query)(s, ROW, 3, qq, 1, NULL, 0, num, 1, NULL, &bad),
                     LINATTN_EOVERFLOW); /* big * big, row 2; row 0 NaN is input */
    ck_assert(bad == 2 && isnan(num[0]) && num[1] == big);
    P(state_destroy)(s);
    P(plan_destroy)(pi);
    P(plan_destroy)(p);
}
END_TEST

/* approx_error where the invariant applies to it: its kernelized output
 * (the attention it measures) of finite inputs beyond the range is
 * LINATTN_EOVERFLOW with the statistics untouched, not +Inf errors; a tiny
 * normalizer is divided (exact statistics 0 for one key). */
START_TEST(approx_error_overflow)
{
    /* identity, signed weights A = (2, -1) over den 1: O~ = 2 v0 - v1 =
     * 2.25 REAL_MAX for v = +-0.75 REAL_MAX (softmax's O stays inside) */
    real h = (real)(0.75 * (sizeof(real) == 4 ? FLT_MAX : DBL_MAX));
    real q[1] = {1}, k[2] = {2, -1}, v[2] = {h, -h};
    P(plan) *p = plan_with(LINATTN_MAP_IDENTITY, 1, 1, LINATTN_DENOM_NONZERO, 0);
    linattn_approx_stats stats, poison;
    memset(&poison, 0x5a, sizeof poison);
    stats = poison;
    ck_assert_int_eq(P(approx_error)(p, ROW, 1, 2, q, 1, k, 1, v, 1, 1, 0, &stats),
                     LINATTN_EOVERFLOW);
    ck_assert(!memcmp(&stats, &poison, sizeof stats));
    P(plan_destroy)(p);
    real t = sizeof(real) == 4 ? (real)0x1p-70 : (real)0x1p-520, two = 2;
    p = plan_with(LINATTN_MAP_IDENTITY, 1, 1, 0, 0);
    ck_assert_int_eq(P(approx_error)(p, ROW, 1, 1, &t, 1, &t, 1, &two, 1, 1, 0,
                                     &stats), 0);
    ck_assert(stats.out_rel_fro == 0 && stats.out_max_abs == 0 &&
              stats.attn_rel_fro == 0);
    P(plan_destroy)(p);
}
END_TEST

/* The invariant over every map, policy (LINATTN_DENOM_COUNT included),
 * path and layout, on inputs whose exponents span the whole range. */
START_TEST(invariant_sweep)
{
    uint64_t s = 12345 + (uint64_t)_i;
    int64_t d = 1 + _i % 3, e = 1 + (_i / 3) % 2;
    P(plan) *p = sweep_plan(_i, d, e, NULL);
    for (int trial = 0; trial < 6; trial++) {
        int64_t n = 1 + (int64_t)(11 * test_uniform(&s));
        int layout = test_uniform(&s) < 0.5 ? ROW : COL;
        int64_t ldq = layout == ROW ? d : n, ldv = layout == ROW ? e : n;
        real *q = malloc((size_t)(n * d) * sizeof(real));
        real *k = malloc((size_t)(n * d) * sizeof(real));
        real *v = malloc((size_t)(n * e) * sizeof(real));
        real *out = malloc((size_t)(n * e) * sizeof(real));
        draw_all(&s, q, n * d);
        draw_all(&s, k, n * d);
        draw_all(&s, v, n * e);
        for (int path = 0; path < FC_NPATHS; path++) {
            sentinel(out, n * e);
            int64_t bad = -1;
            int st = fc_run(path, p, layout, n, e, q, ldq, k, ldq, v, ldv, out,
                            ldv, &bad);
            const char *why = fc_violation(st, bad, layout, n, e, out, ldv);
            ck_assert_msg(!why, "case %d trial %d %s: %s (status %d, row %d)",
                          _i, trial, path_name[path], why, st, (int)bad);
        }
        free(q), free(k), free(v), free(out);
    }
    P(plan_destroy)(p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("finite " PREC);
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, tiny_normalizer_divides);
    tcase_add_test(tc, huge_normalizer_divides);
    tcase_add_test(tc, favor_large_norms);
    tcase_add_test(tc, sum_overflow_reported);
    tcase_add_test(tc, merge_overflow_refused);
    tcase_add_test(tc, overflow_row_semantics);
    tcase_add_test(tc, nonfinite_inputs_propagate);
    tcase_add_test(tc, approx_error_overflow);
    tcase_add_loop_test(tc, invariant_sweep, 0, 11 * 4 * 3);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
