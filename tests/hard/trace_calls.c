/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace_calls.c -- every public call of the stable API with random, often
 * invalid, arguments (layouts, sizes, leading dimensions including some
 * beyond the BLAS integer, NULL pointers, outputs aliasing inputs, NaN and
 * huge values, every map, plan options, batched strides that overlap or
 * are negative), printing for each call its status, its bad row and a
 * hash of every byte of every output.  Built once and run against two
 * builds of liblinattn (tests/hard/compare_builds.sh), the two traces
 * must be identical: a change meant to change nothing (a restructuring)
 * changed no status, no row and no bit of output.
 *
 *   trace_calls [CASES [FIRST]]   (default 2000 cases from case 0)
 *
 * Each case draws its arguments from its own seed, so a difference names
 * the case that reproduces it.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"

static uint64_t rs;
static uint64_t rnd(void)
{
    rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
    return rs;
}
static int pick(int n) { return (int)(rnd() % (uint64_t)n); }
static uint64_t hash;
static void mix(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        hash = (hash ^ c[i]) * 1099511628211ull;
}
static void mixi(int64_t x) { mix(&x, sizeof x); }

static double value(void)
{
    switch (pick(40)) {
    case 0: return NAN;
    case 1: return INFINITY;
    case 2: return -1e300;
    case 3: return 1e30;
    default: return (double)(pick(2001) - 1000) / 400.0;
    }
}
static int64_t size_(int max)
{
    int r = pick(30);
    if (r == 0) return -1 - pick(3);
    if (r < 3) return 0;
    return 1 + pick(max);
}

#define MATS(P, R)                                                          \
    typedef struct { R *a; int64_t len, ld; } P##m;                        \
    /* a rows x cols matrix: ld natural, padded, short, 0, negative, or     \
     * beyond BLAS where that stays cheap; NULL sometimes */                 \
    static P##m P##mat(int layout, int64_t rows, int64_t cols, int out)     \
    {                                                                       \
        P##m m = {NULL, 1, 1};                                              \
        int64_t inner = layout == LINATTN_COL_MAJOR ? rows : cols;          \
        int64_t outer = layout == LINATTN_COL_MAJOR ? cols : rows;          \
        int r = pick(20);                                                   \
        m.ld = inner > 0 ? inner : 1;                                       \
        if (r == 0) m.ld = inner - 1;                                       \
        else if (r == 1) m.ld = 0;                                          \
        else if (r == 2) m.ld = -3;                                         \
        else if (r == 3 && outer <= 1) m.ld = ((int64_t)1 << 31) + 7;       \
        else if (r == 4 && outer <= 1) m.ld = (int64_t)1 << 61;             \
        else if (r < 9) m.ld += pick(3);                                    \
        int64_t need = 1;                                                   \
        if (rows > 0 && cols > 0 && m.ld >= inner && m.ld > 0 &&            \
            (outer <= 1 || m.ld < (1 << 20)))                               \
            need = (outer - 1) * m.ld + inner;                              \
        m.len = need > 0 ? need : 1;                                        \
        m.a = pick(25) == 0 ? NULL : malloc((size_t)m.len * sizeof(R));     \
        for (int64_t i = 0; m.a && i < m.len; i++)                          \
            m.a[i] = out ? (R)-12345 : (R)value();                          \
        return m;                                                           \
    }                                                                       \
    static void P##mix(const P##m *m)                                       \
    {                                                                       \
        if (m->a) mix(m->a, (size_t)m->len * sizeof(R));                    \
    }

MATS(d, double)
MATS(s, float)

#define ONE(P, R)                                                           \
static void P##_single(int entry)                                           \
{                                                                           \
    static const int layouts[4] = {101, 102, 101, 7}; \
    int layout = layouts[pick(4)];                                          \
    int lay = layout == 7 ? 101 : layout;                                   \
    int map = 1 + pick(8);                                                  \
    int64_t d = 1 + pick(5), e = 1 + pick(5);                               \
    int64_t nq = size_(40), nk = size_(40);                                 \
    linattn_opts o;                                                         \
    linattn_opts_init(&o);                                                  \
    o.block = pick(3) ? 0 : 1 + pick(9);                                    \
    o.chunk = pick(3) ? 0 : 1 + pick(9);                                    \
    o.denom = pick(3);                                                      \
    o.eps = pick(3) ? 0 : 1e-3;                                             \
    o.check_finite = pick(2);                                               \
    if (o.denom == 2 && map >= 4) o.denom = 0;                              \
    linattn_##P##_plan *plan = NULL;                                        \
    int st;                                                                 \
    if (map == 8) {                                                         \
        int act = 1 + pick(4);                                              \
        int64_t mc = 2 * (1 + pick(3));                                     \
        int64_t rows = act == 4 ? mc / 2 : mc;                              \
        R *w = malloc((size_t)(rows * d) * sizeof(R)), b[8];                \
        for (int64_t i = 0; i < rows * d; i++)                              \
            w[i] = (R)(pick(200) - 100) / 100;                              \
        for (int i = 0; i < 8; i++) b[i] = (R)(pick(200) - 100) / 100;      \
        if (act == 1 && o.denom == 2) o.denom = 0;                          \
        st = linattn_##P##_plan_create_custom(&plan, act, d, mc, e, 101, w, d, \
                                              pick(2) ? b : NULL, &o);      \
        free(w);                                                            \
    } else {                                                                \
        st = linattn_##P##_plan_create(&plan, map, d, e, &o);               \
    }                                                                       \
    printf("plan %d st %d\n", map, st);                                     \
    if (st) return;                                                         \
    int64_t m = 0, wr = 0;                                                  \
    linattn_##P##_plan_dims(plan, NULL, &m, NULL);                          \
    linattn_##P##_plan_weights(plan, 101, NULL, 0, &wr);                    \
    int causal = entry == 2 || entry == 3 || entry == 6 || entry == 8 ||    \
                 entry == 10 || entry == 12;                                \
    int c15 = pick(3);                                                      \
    if (causal || (entry == 15 && c15 == 1)) nk = nq;                       \
    P##m q = P##mat(lay, nq, d, 0), k = P##mat(lay, nk, d, 0);              \
    P##m v = P##mat(lay, nk, e, 0);                                         \
    P##m out = P##mat(lay, nq, entry == 5 ? m : e, 1);                      \
    P##m num = P##mat(lay, nq, e, 1);                                       \
    R den[64], db[16];                                                      \
    for (int i = 0; i < 64; i++) den[i] = (R)-12345;                        \
    for (int i = 0; i < 16; i++) db[i] = (R)-12345;                         \
    int alias = pick(12);                                                   \
    R *outp = out.a, *qp = q.a;                                             \
    if (alias == 0 && q.a && out.a && q.len >= out.len)                     \
        outp = q.a; /* out meets q */                                       \
    if (alias == 1 && v.a && entry != 5 && entry != 4 && v.len >= out.len)  \
        outp = v.a; /* out meets v */                                       \
    R *denp = pick(6) == 0 ? NULL : den;                                    \
    if (alias == 2 && q.a && q.len >= 64) denp = q.a;                         \
    int64_t bad = -7;                                                       \
    hash = 1469598103934665603ull;                                          \
    linattn_##P##_state *s = NULL;                                          \
    linattn_##P##_state_create(&s, plan);                                   \
    if (pick(3) == 0) { /* a state with some keys */                        \
        P##m k2 = P##mat(101, 5, d, 0), v2 = P##mat(101, 5, e, 0);          \
        if (k2.a && v2.a && k2.ld == d && v2.ld == e)                       \
            printf(" pre %d\n", linattn_##P##_state_update(s, 101, 5, k2.a,   \
                   d, v2.a, e));                                              \
        free(k2.a), free(v2.a);                                             \
    }                                                                       \
    (void)qp;                                                               \
    switch (entry) {                                                        \
    case 0: st = linattn_##P##_attention(plan, layout, nq, nk, q.a, q.ld,     \
                                         k.a, k.ld, v.a, v.ld, outp, out.ld,  \
                                         &bad); break;                        \
    case 1: st = linattn_##P##_naive(plan, layout, nq, nk, q.a, q.ld, k.a,    \
                                     k.ld, v.a, v.ld, outp, out.ld,           \
                                     &bad); break;                            \
    case 2: st = linattn_##P##_causal(plan, layout, nq, q.a, q.ld, k.a, k.ld, \
                                      v.a, v.ld, outp, out.ld, &bad); break;  \
    case 3: st = linattn_##P##_naive_causal(plan, layout, nq, q.a, q.ld, k.a, \
                                            k.ld, v.a, v.ld, outp, out.ld,    \
                                            &bad); break;                     \
    case 4:                                                                 \
        st = linattn_##P##_state_update(s, layout, nk, k.a, k.ld, v.a, v.ld); \
        printf(" upd %d\n", st);                                            \
        st = linattn_##P##_state_query(s, layout, nq, q.a, q.ld,              \
                                       pick(3) ? outp : NULL, out.ld,         \
                                       pick(2) ? num.a : NULL, num.ld, denp,  \
                                       &bad);                                 \
        break;                                                              \
    case 5: st = linattn_##P##_features(plan, layout, nq, q.a, q.ld, outp,    \
                                        out.ld); break;                       \
    case 6: st = linattn_##P##_state_causal(s, layout, nq, q.a, q.ld, k.a,    \
                                            k.ld, v.a, v.ld, outp, out.ld,    \
                                            pick(3), &bad); break;            \
    case 7: st = linattn_##P##_attention_check(plan, layout, nq, nk, q.a,     \
                                               q.ld, k.a, k.ld, v.a, v.ld,    \
                                               outp, out.ld); break;          \
    case 8: st = linattn_##P##_causal_check(plan, layout, nq, q.a, q.ld, k.a, \
                                            k.ld, v.a, v.ld, outp,            \
                                            out.ld); break;                   \
    case 9: st = linattn_##P##_attention_forward(plan, layout, nq, nk, q.a,   \
                                                 q.ld, k.a, k.ld, v.a, v.ld,  \
                                                 outp, out.ld,                \
                                                 nq <= 64 ? denp : NULL,      \
                                                 &bad); break;                \
    case 10: st = linattn_##P##_causal_forward(plan, layout, nq, q.a, q.ld,   \
                                               k.a, k.ld, v.a, v.ld, outp,    \
                                               out.ld,                        \
                                               nq <= 64 ? denp : NULL,        \
                                               &bad); break;                  \
    case 11: case 12: {                                                     \
        P##m g = P##mat(lay, nq, e, 0), dq = P##mat(lay, nq, d, 1);         \
        P##m dk = P##mat(lay, nk, d, 1), dv = P##mat(lay, nk, e, 1);        \
        P##m dw = P##mat(lay, wr, d, 1);                                    \
        P##m fo = P##mat(lay, nq, e, 1);                                    \
        R fden[64];                                                         \
        for (int i = 0; i < 64; i++) fden[i] = (R)(0.5 + pick(4));          \
        /* the forward's out and den, when the arguments allow */           \
        if (nq >= 0 && nq <= 64) {                                          \
            int fs = entry == 11                                            \
              ? linattn_##P##_attention_forward(plan, layout, nq, nk, q.a,    \
                                                q.ld, k.a, k.ld, v.a, v.ld,   \
                                                fo.a, fo.ld, fden, NULL)      \
              : linattn_##P##_causal_forward(plan, layout, nq, q.a, q.ld,     \
                                             k.a, k.ld, v.a, v.ld, fo.a,      \
                                             fo.ld, fden, NULL);              \
            printf(" fwd %d\n", fs);                                        \
        }                                                                   \
        if (pick(8) == 0) fden[pick(64)] = (R)value();                      \
        R *pdw = pick(2) ? dw.a : NULL, *pdb = pick(3) ? NULL : db;         \
        R *pdq = dq.a;                                                      \
        if (alias == 3 && g.a && g.len >= dq.len) pdq = g.a;                  \
        if (alias == 4 && dk.a && dk.len >= dq.len) pdq = dk.a;               \
        const R *pden = pick(10) ? fden : NULL;                             \
        linattn_##P##_state *gs = NULL;                                     \
        if (entry == 11 && pick(3) == 0) {                                  \
            linattn_##P##_state_create(&gs, plan);                          \
            linattn_##P##_state_update(gs, layout, nk, k.a, k.ld, v.a, v.ld); \
        }                                                                   \
        st = entry == 11                                                    \
          ? linattn_##P##_attention_backward(plan, layout, nq, nk, q.a, q.ld, \
                                             k.a, k.ld, v.a, v.ld, fo.a,      \
                                             fo.ld, pden, g.a, g.ld, pdq,     \
                                             dq.ld, dk.a, dk.ld, dv.a, dv.ld, \
                                             pdw, dw.ld, pdb, gs, &bad)       \
          : linattn_##P##_causal_backward(plan, layout, nq, q.a, q.ld, k.a,   \
                                          k.ld, v.a, v.ld, fo.a, fo.ld, pden, \
                                          g.a, g.ld, pdq, dq.ld, dk.a, dk.ld, \
                                          dv.a, dv.ld, pdw, dw.ld, pdb,       \
                                          &bad);                              \
        P##mix(&dq), P##mix(&dk), P##mix(&dv), P##mix(&dw), P##mix(&fo),      \
               P##mix(&g);                                                    \
        linattn_##P##_state_destroy(gs);                                    \
        free(g.a), free(dq.a), free(dk.a), free(dv.a), free(dw.a), free(fo.a); \
        break;                                                              \
    }                                                                       \
    case 13: {                                                              \
        P##m dphi = P##mat(lay, nq, m, 0), dx = P##mat(lay, nq, d, 1);      \
        P##m dw = P##mat(lay, wr, d, 1);                                    \
        st = linattn_##P##_features_backward(plan, layout, nq, q.a, q.ld,     \
                                             dphi.a, dphi.ld, dx.a, dx.ld,    \
                                             pick(2) ? dw.a : NULL, dw.ld,    \
                                             pick(2) ? db : NULL);            \
        P##mix(&dx), P##mix(&dw);                                           \
        free(dphi.a), free(dx.a), free(dw.a);                               \
        break;                                                              \
    }                                                                       \
    case 14: st = linattn_##P##_softmax(layout, nq, nk, d, e,                 \
                                        (R)(pick(4) ? 0.5 : NAN), q.a, q.ld,  \
                                        k.a, k.ld, v.a, v.ld, outp,           \
                                        out.ld); break;                       \
    case 15: {                                                              \
        linattn_approx_stats as;                                            \
        memset(&as, 0x5a, sizeof as);                                       \
        int c = c15;                                                        \
        st = linattn_##P##_approx_error(plan, layout, nq, nk, q.a, q.ld, k.a, \
                                        k.ld, v.a, v.ld, 0.5, c,              \
                                        pick(20) ? &as : NULL);               \
        mix(&as, sizeof as);                                                \
        break;                                                              \
    }                                                                       \
    default: {                                                              \
        /* state transfer: get, export/import, merge, save/load */          \
        R sb[64] = {0}, zb[64] = {0};                                         \
        double acc[512] = {0}, sh = 0;                                        \
        int64_t tok = 0;                                                    \
        st = linattn_##P##_state_update(s, layout, nk, k.a, k.ld, v.a, v.ld); \
        printf(" u %d g %d", st, linattn_##P##_state_get(s, layout,           \
               m * e <= 64 ? sb : NULL, layout == 101 ? e : m,                \
               m <= 64 ? zb : NULL, &tok));                                   \
        mix(sb, sizeof sb), mix(zb, sizeof zb), mixi(tok);                  \
        if (m * (e + 1) <= 512) {                                           \
            linattn_##P##_state_export(s, acc, &sh, &tok);                  \
            mix(acc, sizeof acc), mix(&sh, sizeof sh);                      \
        }                                                                   \
        linattn_##P##_state *t = NULL;                                      \
        linattn_##P##_state_create(&t, plan);                               \
        printf(" mg %d %d", linattn_##P##_state_merge(t, s),                  \
               linattn_##P##_state_merge(t, t));                              \
        int64_t bytes = 0;                                                  \
        linattn_##P##_state_save_size(t, &bytes);                           \
        void *buf = malloc((size_t)bytes);                                  \
        printf(" sv %d", linattn_##P##_state_save(t, buf, bytes, NULL));    \
        mix(buf, (size_t)bytes);                                            \
        printf(" ld %d\n", linattn_##P##_state_load(s, buf, bytes));        \
        free(buf);                                                          \
        linattn_##P##_state_destroy(t);                                     \
        break;                                                              \
    }                                                                       \
    }                                                                       \
    P##mix(&out), P##mix(&num), P##mix(&q), P##mix(&v);                     \
    mix(den, sizeof den), mix(db, sizeof db), mixi(bad);                    \
    int64_t tk = -1;                                                        \
    linattn_##P##_state_get(s, 101, NULL, 1, NULL, &tk);                    \
    mixi(tk);                                                               \
    printf("%s %d st %d bad %lld h %016llx\n", #P, entry, st, (long long)bad, \
           (unsigned long long)hash);                                       \
    linattn_##P##_state_destroy(s);                                         \
    free(q.a), free(k.a), free(v.a), free(out.a), free(num.a);              \
    linattn_##P##_plan_destroy(plan);                                       \
}                                                                           \
static void P##_batched(int entry)                                          \
{                                                                           \
    int layout = pick(8) ? (pick(2) ? 101 : 102) : 7;                       \
    int lay = layout == 7 ? 101 : layout;                                   \
    int64_t d = 1 + pick(4), e = 1 + pick(4);                               \
    int64_t batch = size_(3), heads = size_(3);                             \
    int64_t nq = size_(12), nk = size_(12);                                 \
    int causal = entry % 2;                                                 \
    if (causal) nk = nq;                                                    \
    linattn_opts o;                                                         \
    linattn_opts_init(&o);                                                  \
    o.block = 1 + pick(8); o.chunk = 1 + pick(8);                           \
    o.denom = pick(2); o.check_finite = pick(2);                            \
    linattn_##P##_plan *plan = NULL;                                        \
    if (linattn_##P##_plan_create(&plan, 1 + pick(7), d, e, &o)) return;    \
    int64_t wr = 0;                                                         \
    linattn_##P##_plan_weights(plan, 101, NULL, 0, &wr);                    \
    int64_t B = batch > 0 ? batch : 1, H = heads > 0 ? heads : 1;           \
    int64_t Q = nq > 0 ? nq : 1, K = nk > 0 ? nk : 1;                       \
    int64_t rows[9] = {Q, K, K, Q, Q, Q, Q, K, K};                          \
    int64_t cols[9] = {d, d, e, e, e, e, d, d, e};                          \
    R *a[9]; linattn_strides s[9]; int64_t len[9];                          \
    for (int i = 0; i < 9; i++) {                                           \
        int64_t inner = lay == 102 ? rows[i] : cols[i];                     \
        int64_t slice = rows[i] * cols[i];                                  \
        s[i].ld = inner + (pick(4) == 0);                                   \
        slice = (lay == 102 ? cols[i] : rows[i]) * s[i].ld;                 \
        s[i].head = slice; s[i].batch = slice * H;                          \
        int r = pick(12);                                                   \
        if (r == 0) s[i].head = 0;                                          \
        if (r == 1) s[i].batch = -1;                                        \
        if (r == 2) s[i].ld = inner - 1;                                    \
        if (r == 3) s[i].head = 1;                                          \
        if (r == 4) { s[i].head = slice * B; s[i].batch = slice; }          \
        len[i] = slice * H * B + 4;                                         \
        a[i] = pick(30) ? malloc((size_t)len[i] * sizeof(R)) : NULL;        \
        for (int64_t j = 0; a[i] && j < len[i]; j++)                        \
            a[i][j] = i >= 6 || i == 3 ? (R)-12345 : (R)value();            \
    }                                                                       \
    R *den = malloc((size_t)(B * H * Q + 4) * sizeof(R));                   \
    for (int64_t j = 0; j < B * H * Q + 4; j++) den[j] = (R)(0.5 + pick(3)); \
    R *dw = malloc((size_t)(wr * d + 1) * sizeof(R)), db[16];               \
    for (int64_t j = 0; j < wr * d + 1; j++) dw[j] = -12345;                \
    for (int j = 0; j < 16; j++) db[j] = -12345;                            \
    const linattn_strides *sp[9];                                           \
    for (int i = 0; i < 9; i++) sp[i] = pick(40) ? &s[i] : NULL;            \
    int alias_q = pick(10) == 0 && a[0];                                    \
    if (alias_q) {                                                          \
        free(a[3]);                                                         \
        a[3] = a[0] + 1; /* out meets q */                                  \
    }                                                                       \
    linattn_where bad = {-7, -7, -7};                                       \
    int st;                                                                 \
    hash = 1469598103934665603ull;                                          \
    int64_t n = nq;                                                         \
    switch (entry) {                                                        \
    case 0: st = linattn_##P##_batched_attention(plan, layout, batch, heads,  \
                                                 nq, nk, a[0], sp[0], a[1],   \
                                                 sp[1], a[2], sp[2], a[3],    \
                                                 sp[3], &bad); break;         \
    case 1: st = linattn_##P##_batched_causal(plan, layout, batch, heads, n,  \
                                              a[0], sp[0], a[1], sp[1], a[2], \
                                              sp[2], a[3], sp[3],             \
                                              &bad); break;                   \
    case 2: st = linattn_##P##_batched_naive(plan, layout, batch, heads, nq,  \
                                             nk, a[0], sp[0], a[1], sp[1],    \
                                             a[2], sp[2], a[3], sp[3],        \
                                             &bad); break;                    \
    case 3: st = linattn_##P##_batched_naive_causal(plan, layout, batch,      \
        heads, n, a[0], sp[0], a[1], sp[1], a[2], sp[2], a[3], sp[3],         \
        &bad); break;                                                         \
    case 4: st = linattn_##P##_batched_attention_check(plan, layout, batch,   \
        heads, nq, nk, a[0], sp[0], a[1], sp[1], a[2], sp[2], a[3],           \
        sp[3]); break;                                                        \
    case 5: st = linattn_##P##_batched_causal_check(plan, layout, batch,      \
        heads, n, a[0], sp[0], a[1], sp[1], a[2], sp[2], a[3], sp[3]); break; \
    case 6: st = linattn_##P##_batched_attention_forward(plan, layout, batch, \
        heads, nq, nk, a[0], sp[0], a[1], sp[1], a[2], sp[2], a[3], sp[3],    \
        pick(10) ? den : NULL, &bad); break;                                  \
    case 7: st = linattn_##P##_batched_causal_forward(plan, layout, batch,    \
        heads, n, a[0], sp[0], a[1], sp[1], a[2], sp[2], a[3], sp[3],         \
        pick(10) ? den : NULL, &bad); break;                                  \
    case 8: st = linattn_##P##_batched_attention_backward(plan, layout,       \
        batch, heads, nq, nk, a[0], sp[0], a[1], sp[1], a[2], sp[2], a[4],    \
        sp[4], pick(10) ? den : NULL, a[5], sp[5], a[6], sp[6], a[7], sp[7],  \
        a[8], sp[8], pick(2) ? dw : NULL, d, pick(3) ? NULL : db,             \
        &bad); break;                                                         \
    default: st = linattn_##P##_batched_causal_backward(plan, layout, batch,  \
        heads, n, a[0], sp[0], a[1], sp[1], a[2], sp[2], a[4], sp[4],         \
        pick(10) ? den : NULL, a[5], sp[5], a[6], sp[6], a[7], sp[7], a[8],   \
        sp[8], pick(2) ? dw : NULL, d, pick(3) ? NULL : db, &bad); break;     \
    }                                                                       \
    for (int i = 0; i < 9; i++)                                             \
        if (a[i] && !(i == 3 && alias_q))                                   \
            mix(a[i], (size_t)len[i] * sizeof(R));                          \
    mix(den, (size_t)(B * H * Q + 4) * sizeof(R));                          \
    mix(dw, (size_t)(wr * d + 1) * sizeof(R)); mix(db, sizeof db);          \
    printf("%s b%d st %d bad %lld %lld %lld h %016llx\n", #P, entry, st,   \
           (long long)bad.batch, (long long)bad.head, (long long)bad.row,   \
           (unsigned long long)hash);                                       \
    for (int i = 0; i < 9; i++)                                             \
        if (!(i == 3 && alias_q))                                           \
            free(a[i]);                                                     \
    free(den), free(dw);                                                    \
    linattn_##P##_plan_destroy(plan);                                       \
}

ONE(d, double)
ONE(s, float)

int main(int argc, char **argv)
{
    long cases = argc > 1 ? atol(argv[1]) : 2000;
    long first = argc > 2 ? atol(argv[2]) : 0;
    for (long c = first; c < first + cases; c++) {
        rs = 0x9e3779b97f4a7c15ull ^ (uint64_t)(c * 2654435761u + 1);
        rnd();
        int which = pick(4), entry;
        printf("case %ld\n", c);
        switch (which) {
        case 0: entry = pick(17); d_single(entry); break;
        case 1: entry = pick(17); s_single(entry); break;
        case 2: entry = pick(10); d_batched(entry); break;
        default: entry = pick(10); s_batched(entry); break;
        }
        fflush(stdout);
    }
    return 0;
}
