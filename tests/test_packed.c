/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_packed.c -- packed variable-length sequences (linattn_d_extras
 * offsets, key_offsets, nseq, states), compiled once per precision.
 *
 * A packed call against one call per sequence on the unpacked pieces
 * (bit for bit with one thread: each sequence is its own problem), the
 * quadratic baselines packed the same way, and plain loops in long
 * double (cross-attention with the keys' own offsets); awkward lengths
 * (0, 1, lengths that are not multiples of the block or the chunk, one
 * long sequence among short ones, which run side by side on two
 * threads); the causal isolation (every other sequence's tokens made
 * huge or NaN leave a sequence's outputs identical, bit for bit, the
 * quadratic baseline's too);
 * per-sequence states in and out against one long call and the streaming
 * state; absorbing states all unchanged when one sequence fails; and
 * every bad offset, state and overlap refused with nothing written.
 */
#include <limits.h>
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

static P(plan) *plan_with(int map, int64_t d, int64_t e, int denom,
                          int64_t chunk)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.denom = denom;
    o.block = 7; /* several blocks on small problems */
    o.chunk = chunk;
    o.seed = 5;
    if (map == LINATTN_MAP_FAVOR)
        o.m = 8;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* Offsets (nseq + 1 entries) of these lengths. */
static int64_t *offsets_of(const int64_t *len, int64_t nseq)
{
    int64_t *off = malloc((size_t)(nseq + 1) * sizeof *off);
    off[0] = 0;
    for (int64_t s = 0; s < nseq; s++)
        off[s + 1] = off[s] + len[s];
    return off;
}

/* Row r of x (its first element) and x's leading dimension. */
static real *row_at(const tmat *x, int64_t r)
{
    return tmat_at(x, r, 0);
}

/* Nonzero when rows [lo, hi) of a and b hold the same bits. */
static int rows_identical(const tmat *a, const tmat *b, int64_t lo,
                          int64_t hi)
{
    for (int64_t i = lo; i < hi; i++)
        for (int64_t c = 0; c < a->cols; c++)
            if (memcmp(tmat_at(a, i, c), tmat_at(b, i, c), sizeof(real)))
                return 0;
    return 1;
}

static void free_qkvo(tmat *q, tmat *k, tmat *v, tmat *out)
{
    tmat_free(q);
    tmat_free(k);
    tmat_free(v);
    tmat_free(out);
}

/* The extras of a packed call (key offsets NULL: the queries'). */
static P(extras) packed_ex(const int64_t *off, const int64_t *koff,
                           int64_t nseq, const real *w)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.offsets = off;
    ex.key_offsets = koff;
    ex.nseq = nseq;
    ex.weights = w;
    return ex;
}

/* The call of path (0 attention_ex, 1 causal_ex, 2 naive_ex, 3
 * naive_causal_ex) on nq queries from row qlo and nk keys from row klo. */
static int call_path(int path, const P(plan) *p, const tmat *q,
                     const tmat *k, const tmat *v, tmat *out, int64_t qlo,
                     int64_t nq, int64_t klo, int64_t nk, const P(extras) *ex,
                     int64_t *bad)
{
    const real *qa = row_at(q, qlo), *ka = row_at(k, klo),
               *va = row_at(v, klo);
    real *oa = row_at(out, qlo);
    int lay = q->layout;
    switch (path) {
    case 0:
        return P(attention_ex)(p, lay, nq, nk, qa, q->ld, ka, k->ld, va,
                               v->ld, oa, out->ld, ex, bad);
    case 1:
        return P(causal_ex)(p, lay, nq, qa, q->ld, ka, k->ld, va, v->ld, oa,
                            out->ld, ex, bad);
    case 2:
        return P(naive_ex)(p, lay, nq, nk, qa, q->ld, ka, k->ld, va, v->ld,
                           oa, out->ld, ex, bad);
    default:
        return P(naive_causal_ex)(p, lay, nq, qa, q->ld, ka, k->ld, va,
                                  v->ld, oa, out->ld, ex, bad);
    }
}

/* Lengths with 0, 1, one longer sequence, none a multiple of the block
 * (7) or the chunk (16). */
static const int64_t awkward[] = {0, 1, 37, 0, 5, 130, 3, 16, 1, 0, 23};
#define NAWK ((int64_t)(sizeof awkward / sizeof *awkward))

/* ---- packed against the pieces ---- */

START_TEST(packed_is_calls_on_pieces)
{
    static const int maps[3] = {LINATTN_MAP_ELU1, LINATTN_MAP_FAVOR,
                                LINATTN_MAP_IDENTITY};
    int path = _i % 4, map = maps[_i / 4 % 3], layout = _i / 12 % 2 ? COL
                                                                    : ROW;
    int weighted = _i / 24;
    int count = map == LINATTN_MAP_IDENTITY; /* signed features: the count */
    int64_t d = 4, e = 3, nseq = NAWK;
    int64_t *off = offsets_of(awkward, nseq), n = off[nseq];
    uint64_t s = 7 + (uint64_t)_i;
    P(plan) *p = plan_with(map, d, e,
                           count ? LINATTN_DENOM_COUNT
                                 : LINATTN_DENOM_POSITIVE,
                           16);
    tmat q = tmat_rand(layout, n, d, 2, 0.05, 1, &s);
    tmat k = tmat_rand(layout, n, d, 1, 0.05, 1, &s);
    tmat v = tmat_rand(layout, n, e, 0, -1, 1, &s);
    real *w = NULL;
    if (weighted) {
        w = malloc((size_t)n * sizeof *w);
        for (int64_t j = 0; j < n; j++)
            w[j] = j % 4 == 2 ? 0 : (real)(0.2 + test_uniform(&s));
        for (int64_t t = 0; t < nseq; t++) /* a kept key in each sequence */
            if (awkward[t])
                w[off[t]] = 1;
    }
    tmat out = tmat_like(&q, n, e, 3), piece = tmat_like(&q, n, e, 3);
    real *den = malloc((size_t)(n + 1) * sizeof *den);
    real *pden = malloc((size_t)(n + 1) * sizeof *pden);
    int old = test_set_threads(1);
    P(extras) ex = packed_ex(off, NULL, nseq, w);
    if (path < 2)
        ex.den = den;
    int64_t bad = -7;
    ck_assert_int_eq(call_path(path, p, &q, &k, &v, &out, 0, n, 0, n, &ex,
                               &bad), 0);
    ck_assert_int_eq(bad, -7);
    for (int64_t t = 0; t < nseq; t++) {
        P(extras) one;
        P(extras_init)(&one);
        one.weights = w ? w + off[t] : NULL;
        one.den = path < 2 ? pden + off[t] : NULL;
        ck_assert_int_eq(call_path(path, p, &q, &k, &v, &piece, off[t],
                                   awkward[t], off[t], awkward[t], &one,
                                   NULL), 0);
    }
    /* each sequence is its own problem: bit for bit */
    ck_assert(rows_identical(&out, &piece, 0, n));
    if (path < 2)
        ck_assert(!memcmp(den, pden, (size_t)n * sizeof *den));
    ck_assert(tmat_padding_intact(&out));
    /* two threads: the short sequences side by side, each on one */
    test_set_threads(2);
    tmat out2 = tmat_like(&q, n, e, 3);
    ck_assert_int_eq(call_path(path, p, &q, &k, &v, &out2, 0, n, 0, n, &ex,
                               NULL), 0);
    ck_assert_double_le(rel_diff(&out2, &out), 100 * TOL);
    test_set_threads(old);
    /* the factored paths against their baselines, packed alike */
    if (path < 2 && map != LINATTN_MAP_FAVOR) {
        P(extras) nex = packed_ex(off, NULL, nseq, w);
        ck_assert_int_eq(call_path(path + 2, p, &q, &k, &v, &piece, 0, n, 0,
                                   n, &nex, NULL), 0);
        ck_assert_double_le(rel_diff(&out, &piece), 1000 * TOL);
    }
    tmat_free(&out2);
    free_qkvo(&q, &k, &v, &out);
    tmat_free(&piece);
    free(den);
    free(pden);
    free(w);
    free(off);
    P(plan_destroy)(p);
}
END_TEST

/* Cross-attention: the queries of sample s see the keys of sample s,
 * each with its own offsets (point counts 3 and 40, 0 and 0, 17 and 5,
 * 1 and 9), against plain loops per sample. */
START_TEST(cross_attention_key_offsets)
{
    static const int64_t qlen[] = {3, 0, 17, 1}, klen[] = {40, 0, 5, 9};
    int64_t nseq = 4, d = 3, e = 2;
    int layout = _i % 2 ? COL : ROW, naive = _i / 2;
    int64_t *qoff = offsets_of(qlen, nseq), *koff = offsets_of(klen, nseq);
    int64_t nq = qoff[nseq], nk = koff[nseq];
    uint64_t s = 91;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE,
                           0);
    tmat q = tmat_rand(layout, nq, d, 1, -1, 1, &s);
    tmat k = tmat_rand(layout, nk, d, 0, -1, 1, &s);
    tmat v = tmat_rand(layout, nk, e, 2, -1, 1, &s);
    tmat out = tmat_like(&q, nq, e, 1);
    P(extras) ex = packed_ex(qoff, koff, nseq, NULL);
    ck_assert_int_eq(call_path(naive ? 2 : 0, p, &q, &k, &v, &out, 0, nq, 0,
                               nk, &ex, NULL), 0);
    long double *ref = malloc((size_t)(nq * e + 1) * sizeof *ref);
    for (int64_t t = 0; t < nseq; t++) {
        if (!qlen[t])
            continue;
        tmat qs = tmat_like(&q, qlen[t], d, 0), ks = tmat_like(&k, klen[t], d, 0);
        tmat vs = tmat_like(&v, klen[t], e, 0);
        for (int64_t i = 0; i < qlen[t]; i++)
            for (int64_t c = 0; c < d; c++)
                *tmat_at(&qs, i, c) = *tmat_at(&q, qoff[t] + i, c);
        for (int64_t j = 0; j < klen[t]; j++) {
            for (int64_t c = 0; c < d; c++)
                *tmat_at(&ks, j, c) = *tmat_at(&k, koff[t] + j, c);
            for (int64_t c = 0; c < e; c++)
                *tmat_at(&vs, j, c) = *tmat_at(&v, koff[t] + j, c);
        }
        ref_linear(LINATTN_MAP_ELU1, &qs, &ks, &vs, ref + qoff[t] * e);
        tmat_free(&qs);
        tmat_free(&ks);
        tmat_free(&vs);
    }
    ck_assert_double_le(rel_err(&out, ref), 100 * TOL);
    ck_assert(tmat_padding_intact(&out));
    free(ref);
    free_qkvo(&q, &k, &v, &out);
    free(qoff);
    free(koff);
    P(plan_destroy)(p);
}
END_TEST

/* ---- causal isolation ---- */

/* No causal output reads a token of another sequence: each sequence in
 * turn keeps its tokens while every other one's become NaN or huge
 * (1e30: features beyond the range), and its rows stay identical, bit
 * for bit, on one thread and on two (a sequence of 9000 rows runs alone,
 * split over the threads; the short ones side by side). */
START_TEST(causal_isolation)
{
    static const int64_t longer[] = {5, 9000, 0, 700, 1, 33};
    static const int64_t shorter[] = {5, 300, 0, 70, 1, 33};
    int64_t nseq = 6, d = 4, e = 3;
    int map = _i % 2 ? LINATTN_MAP_FAVOR : LINATTN_MAP_ELU1;
    int path = _i / 2 % 2 ? 3 : 1; /* the baseline isolates as well */
    /* the quadratic baseline on shorter sequences */
    const int64_t *len = path == 3 ? shorter : longer;
    int64_t *off = offsets_of(len, nseq), n = off[nseq];
    uint64_t s = 3;
    P(plan) *p = plan_with(map, d, e, LINATTN_DENOM_POSITIVE, 0);
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &s);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &s);
    tmat out = tmat_like(&q, n, e, 0), alt = tmat_like(&q, n, e, 0);
    P(extras) ex = packed_ex(off, NULL, nseq, NULL);
    for (int threads = 1; threads <= 2; threads++) {
        int old = test_set_threads(threads);
        ck_assert_int_eq(call_path(path, p, &q, &k, &v, &out, 0, n, 0, n, &ex,
                                   NULL), 0);
        for (int64_t t = 0; t < nseq; t++) {
            tmat q2 = tmat_like(&q, n, d, 0), k2 = tmat_like(&k, n, d, 0);
            tmat v2 = tmat_like(&v, n, e, 0);
            for (int64_t i = 0; i < n; i++) {
                int mine = i >= off[t] && i < off[t + 1];
                real junk = i % 2 ? (real)NAN : (real)1e30;
                for (int64_t c = 0; c < d; c++) {
                    *tmat_at(&q2, i, c) = mine ? *tmat_at(&q, i, c) : junk;
                    *tmat_at(&k2, i, c) = mine ? *tmat_at(&k, i, c) : junk;
                }
                for (int64_t c = 0; c < e; c++)
                    *tmat_at(&v2, i, c) = mine ? *tmat_at(&v, i, c) : junk;
            }
            /* other sequences fail or turn NaN: whatever the status */
            (void)call_path(path, p, &q2, &k2, &v2, &alt, 0, n, 0, n, &ex,
                            NULL);
            ck_assert(rows_identical(&out, &alt, off[t], off[t + 1]));
            tmat_free(&q2);
            tmat_free(&k2);
            tmat_free(&v2);
        }
        test_set_threads(old);
    }
    free_qkvo(&q, &k, &v, &out);
    tmat_free(&alt);
    free(off);
    P(plan_destroy)(p);
}
END_TEST

/* ---- per-sequence states ---- */

/* Each sequence cut in two: a packed call over the first parts from zero
 * states that absorbs them (the final states), then a packed call over
 * the second parts from those states, equal to one packed call over the
 * whole sequences; the final states equal the streaming state of each
 * whole sequence (state_update).  Causal and not. */
START_TEST(states_continue_sequences)
{
    static const int64_t len[] = {12, 0, 40, 1, 29};
    int64_t nseq = 5, d = 3, e = 2, m;
    int causal = _i % 2;
    int map = _i / 2 ? LINATTN_MAP_FAVOR : LINATTN_MAP_ELU1;
    int64_t cut[5], first[5], second[5];
    for (int64_t t = 0; t < nseq; t++) {
        cut[t] = len[t] / 3;
        first[t] = cut[t];
        second[t] = len[t] - cut[t];
    }
    int64_t *off = offsets_of(len, nseq), n = off[nseq];
    int64_t *off1 = offsets_of(first, nseq), *off2 = offsets_of(second, nseq);
    uint64_t s = 17;
    P(plan) *p = plan_with(map, d, e, LINATTN_DENOM_POSITIVE, 8);
    ck_assert_int_eq(P(plan_dims)(p, NULL, &m, NULL), 0);
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &s);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &s);
    /* the same tokens, each sequence's first parts first */
    tmat q1 = tmat_like(&q, n, d, 0), k1 = tmat_like(&k, n, d, 0);
    tmat v1 = tmat_like(&v, n, e, 0);
    int64_t r = 0;
    for (int part = 0; part < 2; part++)
        for (int64_t t = 0; t < nseq; t++)
            for (int64_t i = part ? cut[t] : 0; i < (part ? len[t] : cut[t]);
                 i++, r++) {
                for (int64_t c = 0; c < d; c++) {
                    *tmat_at(&q1, r, c) = *tmat_at(&q, off[t] + i, c);
                    *tmat_at(&k1, r, c) = *tmat_at(&k, off[t] + i, c);
                }
                for (int64_t c = 0; c < e; c++)
                    *tmat_at(&v1, r, c) = *tmat_at(&v, off[t] + i, c);
            }
    int64_t n1 = off1[nseq];
    P(state) *st[5];
    for (int64_t t = 0; t < nseq; t++)
        ck_assert_int_eq(P(state_create)(&st[t], p), 0);
    tmat whole = tmat_like(&q, n, e, 0), parts = tmat_like(&q, n, e, 0);
    P(extras) ex = packed_ex(off, NULL, nseq, NULL);
    ck_assert_int_eq(call_path(causal, p, &q, &k, &v, &whole, 0, n, 0, n, &ex,
                               NULL), 0);
    P(extras) e1 = packed_ex(off1, NULL, nseq, NULL);
    e1.states = st;
    e1.absorb = 1;
    /* the first parts' outputs are not compared: non-causal, they see
     * only the first parts */
    ck_assert_int_eq(call_path(causal, p, &q1, &k1, &v1, &parts, 0, n1, 0, n1,
                               &e1, NULL), 0);
    for (int64_t t = 0; t < nseq; t++) {
        int64_t tokens = -1;
        ck_assert_int_eq(P(state_get)(st[t], ROW, NULL, 1, NULL, &tokens), 0);
        ck_assert_int_eq(tokens, cut[t]);
    }
    P(extras) e2 = packed_ex(off2, NULL, nseq, NULL);
    e2.states = st;
    e2.absorb = 1;
    ck_assert_int_eq(call_path(causal, p, &q1, &k1, &v1, &parts, n1, n - n1,
                               n1, n - n1, &e2, NULL), 0);
    /* the second parts' rows against the whole sequences' */
    for (int64_t t = 0; t < nseq; t++)
        for (int64_t i = cut[t]; i < len[t]; i++)
            for (int64_t c = 0; c < e; c++) {
                real a = *tmat_at(&parts, n1 + off2[t] + i - cut[t], c);
                real b = *tmat_at(&whole, off[t] + i, c);
                ck_assert_double_le(fabs((double)(a - b)),
                                    1000 * TOL * (1 + fabs((double)b)));
            }
    /* the final states: each whole sequence's streaming state */
    real *sa = malloc((size_t)(m * e + m) * sizeof *sa);
    real *sb = malloc((size_t)(m * e + m) * sizeof *sb);
    for (int64_t t = 0; t < nseq; t++) {
        P(state) *ref = NULL;
        ck_assert_int_eq(P(state_create)(&ref, p), 0);
        ck_assert_int_eq(P(state_update)(ref, ROW, len[t], row_at(&k, off[t]),
                                         k.ld, row_at(&v, off[t]), v.ld), 0);
        int64_t ta = -1, tb = -2;
        ck_assert_int_eq(P(state_get)(st[t], ROW, sa, e, sa + m * e, &ta), 0);
        ck_assert_int_eq(P(state_get)(ref, ROW, sb, e, sb + m * e, &tb), 0);
        ck_assert_int_eq(ta, tb);
        double sha, shb;
        P(state_shift)(st[t], &sha);
        P(state_shift)(ref, &shb);
        for (int64_t i = 0; i < m * e + m; i++) /* at a common shift */
            ck_assert_double_le(
                fabs((double)sa[i] * exp(sha - (sha > shb ? sha : shb)) -
                     (double)sb[i] * exp(shb - (sha > shb ? sha : shb))),
                1000 * TOL * (1 + fabs((double)sb[i])));
        P(state_destroy)(ref);
    }
    free(sa);
    free(sb);
    for (int64_t t = 0; t < nseq; t++)
        P(state_destroy)(st[t]);
    tmat_free(&q);
    tmat_free(&k);
    tmat_free(&v);
    tmat_free(&q1);
    tmat_free(&k1);
    tmat_free(&v1);
    tmat_free(&whole);
    tmat_free(&parts);
    free(off);
    free(off1);
    free(off2);
    P(plan_destroy)(p);
}
END_TEST

/* A sequence that fails after the checks (sample 2's queries have no
 * keys: their normalizers are 0, LINATTN_EDENOM at its first query's
 * packed row) leaves every absorbing state as it was, the ones of the
 * sequences that succeeded too; read-only states may repeat. */
START_TEST(states_unchanged_on_failure)
{
    static const int64_t qlen[] = {4, 6, 3}, klen[] = {5, 7, 0};
    int64_t nseq = 3, d = 3, e = 2, m;
    int64_t *qoff = offsets_of(qlen, nseq), *koff = offsets_of(klen, nseq);
    uint64_t s = 23;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE, 0);
    ck_assert_int_eq(P(plan_dims)(p, NULL, &m, NULL), 0);
    tmat q = tmat_rand(ROW, qoff[3], d, 0, -1, 1, &s);
    tmat k = tmat_rand(ROW, koff[3], d, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, koff[3], e, 0, -1, 1, &s);
    tmat out = tmat_like(&q, qoff[3], e, 0);
    P(state) *st[3];
    real before[3][64], after[64];
    for (int t = 0; t < 3; t++) {
        ck_assert_int_eq(P(state_create)(&st[t], p), 0);
        if (t < 2) /* the third starts from zero: its queries fail */
            ck_assert_int_eq(P(state_update)(st[t], ROW, 2, k.a, k.ld, v.a,
                                             v.ld), 0);
        ck_assert_int_eq(P(state_get)(st[t], ROW, before[t], e,
                                      before[t] + m * e, NULL), 0);
    }
    P(extras) ex = packed_ex(qoff, koff, nseq, NULL);
    ex.states = st;
    ex.absorb = 1;
    int64_t bad = -5;
    ck_assert_int_eq(P(attention_ex)(p, ROW, qoff[3], koff[3], q.a, q.ld, k.a,
                                     k.ld, v.a, v.ld, out.a, out.ld, &ex,
                                     &bad),
                     LINATTN_EDENOM);
    ck_assert_int_eq(bad, qoff[2]);
    for (int t = 0; t < 3; t++) {
        int64_t tokens = -1;
        ck_assert_int_eq(P(state_get)(st[t], ROW, after, e, after + m * e,
                                      &tokens), 0);
        ck_assert_int_eq(tokens, t < 2 ? 2 : 0);
        ck_assert(!memcmp(after, before[t], (size_t)(m * e + m) * sizeof(real)));
    }
    /* only read, one state may serve several sequences */
    P(state) *same[3] = {st[0], st[0], st[0]};
    ex.states = same;
    ex.absorb = 0;
    ck_assert_int_eq(P(attention_ex)(p, ROW, qoff[3], koff[3], q.a, q.ld, k.a,
                                     k.ld, v.a, v.ld, out.a, out.ld, &ex,
                                     NULL), 0);
    for (int t = 0; t < 3; t++)
        P(state_destroy)(st[t]);
    free_qkvo(&q, &k, &v, &out);
    free(qoff);
    free(koff);
    P(plan_destroy)(p);
}
END_TEST

/* ---- bad input ---- */

/* The call of path on the whole of (q, k, v) into out with ex; out must
 * stay as it was. */
static int refused(int path, const P(plan) *p, const tmat *q, const tmat *k,
                   const tmat *v, tmat *out, const P(extras) *ex)
{
    int64_t bad = -9;
    tmat keep = tmat_like(out, out->rows, out->cols, 0);
    for (int64_t i = 0; i < out->rows; i++)
        for (int64_t c = 0; c < out->cols; c++)
            *tmat_at(&keep, i, c) = *tmat_at(out, i, c);
    int st = call_path(path, p, q, k, v, out, 0, q->rows, 0, k->rows, ex,
                       &bad);
    ck_assert_int_eq(bad, -9);
    ck_assert(rows_identical(out, &keep, 0, out->rows));
    tmat_free(&keep);
    return st;
}

START_TEST(bad_packed_refused)
{
    int64_t d = 3, e = 2, n = 10;
    uint64_t s = 41;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE, 0);
    P(plan) *other = plan_with(LINATTN_MAP_ELU1, d, e + 1,
                               LINATTN_DENOM_POSITIVE, 0);
    tmat q = tmat_rand(ROW, n, d, 0, -1, 1, &s);
    tmat k = tmat_rand(ROW, n, d, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &s);
    tmat out = tmat_rand(ROW, n, e, 0, 5, 6, &s);
    int64_t good[3] = {0, 4, 10};
    int64_t not0[3] = {1, 4, 10}, down[3] = {0, 6, 5}, shortend[3] = {0, 4, 9};
    P(state) *st[2], *alien = NULL, *dup[2];
    for (int t = 0; t < 2; t++)
        ck_assert_int_eq(P(state_create)(&st[t], p), 0);
    ck_assert_int_eq(P(state_create)(&alien, other), 0);
    real sbefore[64], safter[64];
    ck_assert_int_eq(P(state_update)(st[0], ROW, 3, k.a, k.ld, v.a, v.ld), 0);
    ck_assert_int_eq(P(state_get)(st[0], ROW, sbefore, e, NULL, NULL), 0);
    for (int path = 0; path < 4; path++) {
        int causal = path % 2;
        int xpos = causal ? -12 : -13; /* the extras' position */
        P(extras) ex;
        /* offsets not from 0, decreasing, not ending at the rows */
        ex = packed_ex(not0, NULL, 2, NULL);
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        ex = packed_ex(down, NULL, 2, NULL);
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        ex = packed_ex(shortend, NULL, 2, NULL);
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        /* nseq < 0, nseq without offsets, key offsets without offsets */
        ex = packed_ex(good, NULL, -1, NULL);
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        ex = packed_ex(NULL, NULL, 2, NULL);
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        ex = packed_ex(NULL, good, 0, NULL);
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        /* key offsets where the keys are the queries (causal), or that
         * do not end at nk */
        ex = packed_ex(good, shortend, 2, NULL);
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        /* out meeting the offsets: -pos of out */
        ex = packed_ex((const int64_t *)(void *)out.a, NULL, 0, NULL);
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex),
                         causal ? -10 : -11);
        if (path >= 2) { /* the baselines take no states */
            ex = packed_ex(good, NULL, 2, NULL);
            ex.states = st;
            ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
            continue;
        }
        /* states: without offsets, with a single state, an entry NULL, of
         * another plan, one state absorbing twice; absorb without states */
        ex = packed_ex(NULL, NULL, 0, NULL);
        ex.states = st;
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        ex = packed_ex(good, NULL, 2, NULL);
        ex.states = st;
        ex.state = st[0];
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        P(state) *withnull[2] = {st[0], NULL};
        ex = packed_ex(good, NULL, 2, NULL);
        ex.states = withnull;
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        P(state) *withalien[2] = {alien, st[1]};
        ex.states = withalien;
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        dup[0] = dup[1] = st[1];
        ex.states = dup;
        ex.absorb = 1;
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        ex.states = NULL;
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
        /* den meeting the offsets */
        ex = packed_ex(good, NULL, 2, NULL);
        ex.den = (real *)(void *)good;
        ck_assert_int_eq(refused(path, p, &q, &k, &v, &out, &ex), xpos);
    }
    /* the states were not touched, nor marked: a good call absorbs */
    ck_assert_int_eq(P(state_get)(st[0], ROW, safter, e, NULL, NULL), 0);
    ck_assert(!memcmp(sbefore, safter, sizeof(real) * 3 * (size_t)e));
    P(extras) ex = packed_ex(good, NULL, 2, NULL);
    ex.states = st;
    ex.absorb = 1;
    ck_assert_int_eq(P(causal_ex)(p, ROW, n, q.a, q.ld, k.a, k.ld, v.a, v.ld,
                                  out.a, out.ld, &ex, NULL), 0);
    /* the streaming update does not take offsets */
    ex = packed_ex(good, NULL, 2, NULL);
    ck_assert_int_eq(P(state_update_ex)(st[1], ROW, n, k.a, k.ld, v.a, v.ld,
                                        &ex), -8);
    for (int t = 0; t < 2; t++)
        P(state_destroy)(st[t]);
    P(state_destroy)(alien);
    free_qkvo(&q, &k, &v, &out);
    P(plan_destroy)(p);
    P(plan_destroy)(other);
}
END_TEST

/* Empty sequences at the end of a one-row matrix whose leading
 * dimensions are huge (allowed: one row reads none of them): their first
 * row, n, lies past the matrix, and forming its address (n ld elements
 * on) overflowed the pointer arithmetic, which UBSan reports (the
 * fuzzer's finding).  The outputs are the plain call's, bit for bit. */
START_TEST(empty_sequences_past_the_end)
{
    int causal = _i;
    int64_t d = 2, e = 2, big = (int64_t)1 << 61;
    int64_t off[4] = {0, 1, 1, 1};
    real q[2] = {0.25, -0.5}, k[2] = {0.5, 0.125}, v[2] = {1, -2};
    real a[2] = {7, 7}, b[2] = {9, 9};
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE,
                           8);
    P(extras) ex = packed_ex(off, NULL, 3, NULL);
    int64_t bad;
    if (causal) {
        ck_assert_int_eq(P(causal_ex)(p, LINATTN_ROW_MAJOR, 1, q, big, k, big,
                                      v, big, a, big, &ex, &bad), 0);
        ck_assert_int_eq(P(causal)(p, LINATTN_ROW_MAJOR, 1, q, d, k, d, v, e,
                                   b, e, &bad), 0);
    } else {
        ex.key_offsets = off;
        ck_assert_int_eq(P(attention_ex)(p, LINATTN_ROW_MAJOR, 1, 1, q, big, k,
                                         big, v, big, a, big, &ex, &bad), 0);
        ck_assert_int_eq(P(attention)(p, LINATTN_ROW_MAJOR, 1, 1, q, d, k, d,
                                      v, e, b, e, &bad), 0);
    }
    ck_assert_mem_eq(a, b, sizeof a);
    P(plan_destroy)(p);
}
END_TEST

/* Batched (linattn_d_batched_attention_ex, _causal_ex): 2 x 3 problems,
 * each a packed stream of the same offsets with its own key weights and
 * normalizers, against each problem's single _ex call on its slices (bit
 * for bit on one thread); a bad weight in the last problem refused with
 * nothing written. */
START_TEST(batched_packed_is_single_calls)
{
    int causal = _i;
    int64_t batch = 2, heads = 3, problems = 6, d = 3, e = 2, nseq = 4;
    static const int64_t len[] = {5, 0, 11, 2};
    int64_t *off = offsets_of(len, nseq), n = off[nseq];
    uint64_t s = 13;
    P(plan) *p = plan_with(LINATTN_MAP_ELU1, d, e, LINATTN_DENOM_POSITIVE, 4);
    /* problem (b, h): rows at (b heads + h) n, row major, ld d or e */
    tmat q = tmat_rand(ROW, problems * n, d, 0, -1, 1, &s);
    tmat k = tmat_rand(ROW, problems * n, d, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, problems * n, e, 0, -1, 1, &s);
    tmat out = tmat_like(&q, problems * n, e, 0);
    tmat want = tmat_like(&q, problems * n, e, 0);
    real *w = malloc((size_t)(problems * n) * sizeof *w);
    real *den = malloc((size_t)(problems * n) * sizeof *den);
    real *wden = malloc((size_t)(problems * n) * sizeof *wden);
    for (int64_t j = 0; j < problems * n; j++)
        w[j] = j % 7 == 3 ? 0 : (real)(0.5 + test_uniform(&s));
    for (int64_t t = 0; t < problems * nseq; t++) /* a kept key each */
        if (len[t % nseq])
            w[t / nseq * n + off[t % nseq]] = 1;
    linattn_strides sq = {d, heads * n * d, n * d};
    linattn_strides sv = {e, heads * n * e, n * e};
    int old = test_set_threads(1);
    P(extras) ex = packed_ex(off, NULL, nseq, w);
    ex.den = den;
    int st = causal
        ? P(batched_causal_ex)(p, ROW, batch, heads, n, q.a, &sq, k.a, &sq,
                               v.a, &sv, out.a, &sv, &ex, NULL)
        : P(batched_attention_ex)(p, ROW, batch, heads, n, n, q.a, &sq, k.a,
                                  &sq, v.a, &sv, out.a, &sv, &ex, NULL);
    ck_assert_int_eq(st, 0);
    for (int64_t pr = 0; pr < problems; pr++) {
        P(extras) one = packed_ex(off, NULL, nseq, w + pr * n);
        one.den = wden + pr * n;
        ck_assert_int_eq(call_path(causal, p, &q, &k, &v, &want, pr * n, n,
                                   pr * n, n, &one, NULL), 0);
    }
    test_set_threads(old);
    ck_assert(rows_identical(&out, &want, 0, problems * n));
    ck_assert(!memcmp(den, wden, (size_t)(problems * n) * sizeof *den));
    /* the last problem's bad weight: nothing written */
    for (int64_t j = 0; j < problems * n * e; j++)
        out.a[j] = 7;
    w[problems * n - 1] = -1;
    st = causal
        ? P(batched_causal_ex)(p, ROW, batch, heads, n, q.a, &sq, k.a, &sq,
                               v.a, &sv, out.a, &sv, &ex, NULL)
        : P(batched_attention_ex)(p, ROW, batch, heads, n, n, q.a, &sq, k.a,
                                  &sq, v.a, &sv, out.a, &sv, &ex, NULL);
    ck_assert_int_eq(st, causal ? -14 : -15);
    for (int64_t j = 0; j < problems * n * e; j++)
        ck_assert(out.a[j] == 7);
    free_qkvo(&q, &k, &v, &out);
    tmat_free(&want);
    free(w), free(den), free(wden), free(off);
    P(plan_destroy)(p);
}
END_TEST

/* The bytes of a state's checkpoint, malloc'd. */
static unsigned char *state_image(const P(state) *st, int64_t *len)
{
    P(state_save_size)(st, len);
    unsigned char *b = malloc((size_t)*len);
    ck_assert_int_eq(P(state_save)(st, b, *len, NULL), 0);
    return b;
}

/* Batched packed calls with states (problem p's sequence s at p nseq +
 * s), absorbing: outputs and final states as each problem's single call
 * from copies of its states, bit for bit on one thread; a state given
 * twice across problems, or NULL, refused with every state unchanged;
 * _i: causal, attention. */
START_TEST(batched_states_are_single_calls)
{
    int causal = _i == 0;
    int64_t batch = 2, heads = 2, problems = 4, d = 2, e = 3, nseq = 3;
    static const int64_t len[] = {6, 0, 9};
    int64_t *off = offsets_of(len, nseq), n = off[nseq];
    uint64_t s = 29;
    P(plan) *p = plan_with(LINATTN_MAP_FAVOR, d, e, LINATTN_DENOM_POSITIVE, 4);
    tmat q = tmat_rand(ROW, problems * n, d, 0, -1, 1, &s);
    tmat k = tmat_rand(ROW, problems * n, d, 0, -1, 1, &s);
    tmat v = tmat_rand(ROW, problems * n, e, 0, -1, 1, &s);
    tmat out = tmat_like(&q, problems * n, e, 0);
    tmat want = tmat_like(&q, problems * n, e, 0);
    int64_t count = problems * nseq;
    P(state) **st = malloc((size_t)count * sizeof *st);
    P(state) **ref = malloc((size_t)count * sizeof *ref);
    for (int64_t i = 0; i < count; i++) {
        P(state_create)(&st[i], p);
        P(state_create)(&ref[i], p);
        tmat kk = tmat_rand(ROW, 1 + i % 3, d, 0, -2, 2, &s);
        tmat vv = tmat_rand(ROW, 1 + i % 3, e, 0, -1, 1, &s);
        P(state_update)(st[i], ROW, kk.rows, kk.a, kk.ld, vv.a, vv.ld);
        P(state_copy)(ref[i], st[i]);
        tmat_free(&kk), tmat_free(&vv);
    }
    linattn_strides sq = {d, heads * n * d, n * d};
    linattn_strides sv = {e, heads * n * e, n * e};
    int old = test_set_threads(1);
    P(extras) ex = packed_ex(off, NULL, nseq, NULL);
    ex.states = st;
    ex.absorb = 1;
    int r = causal
        ? P(batched_causal_ex)(p, ROW, batch, heads, n, q.a, &sq, k.a, &sq,
                               v.a, &sv, out.a, &sv, &ex, NULL)
        : P(batched_attention_ex)(p, ROW, batch, heads, n, n, q.a, &sq, k.a,
                                  &sq, v.a, &sv, out.a, &sv, &ex, NULL);
    ck_assert_int_eq(r, 0);
    for (int64_t pr = 0; pr < problems; pr++) {
        P(extras) one = packed_ex(off, NULL, nseq, NULL);
        one.states = ref + pr * nseq;
        one.absorb = 1;
        ck_assert_int_eq(call_path(causal, p, &q, &k, &v, &want, pr * n, n,
                                   pr * n, n, &one, NULL), 0);
    }
    test_set_threads(old);
    ck_assert(rows_identical(&out, &want, 0, problems * n));
    for (int64_t i = 0; i < count; i++) {
        int64_t la, lb;
        unsigned char *a = state_image(st[i], &la), *b = state_image(ref[i], &lb);
        ck_assert(la == lb && !memcmp(a, b, (size_t)la));
        free(a), free(b);
    }
    /* a state twice (problem 0's first, problem 3's last) or NULL */
    unsigned char *before = NULL;
    int64_t blen;
    before = state_image(st[0], &blen);
    for (int c = 0; c < 2; c++) {
        P(state) *keep = st[count - 1];
        st[count - 1] = c ? NULL : st[0];
        r = causal
            ? P(batched_causal_ex)(p, ROW, batch, heads, n, q.a, &sq, k.a, &sq,
                                   v.a, &sv, out.a, &sv, &ex, NULL)
            : P(batched_attention_ex)(p, ROW, batch, heads, n, n, q.a, &sq,
                                      k.a, &sq, v.a, &sv, out.a, &sv, &ex,
                                      NULL);
        ck_assert_int_eq(r, causal ? -14 : -15);
        st[count - 1] = keep;
        int64_t l;
        unsigned char *now = state_image(st[0], &l);
        ck_assert(l == blen && !memcmp(now, before, (size_t)l));
        free(now);
    }
    free(before);
    for (int64_t i = 0; i < count; i++)
        P(state_destroy)(st[i]), P(state_destroy)(ref[i]);
    free(st), free(ref);
    free_qkvo(&q, &k, &v, &out);
    tmat_free(&want);
    free(off);
    P(plan_destroy)(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("packed " PREC);
    TCase *tc = tcase_create("packed");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, packed_is_calls_on_pieces, 0, 48);
    tcase_add_loop_test(tc, cross_attention_key_offsets, 0, 4);
    tcase_add_loop_test(tc, causal_isolation, 0, 4);
    tcase_add_loop_test(tc, states_continue_sequences, 0, 4);
    tcase_add_test(tc, states_unchanged_on_failure);
    tcase_add_test(tc, bad_packed_refused);
    tcase_add_loop_test(tc, empty_sequences_past_the_end, 0, 2);
    tcase_add_loop_test(tc, batched_packed_is_single_calls, 0, 2);
    tcase_add_loop_test(tc, batched_states_are_single_calls, 0, 2);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
