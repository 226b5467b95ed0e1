/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mpi_decay.c -- the distributed causal calls with decay under
 * mpirun (np 1 to 8), compiled once per precision: a decayed plan (gamma
 * only), per-token gates only, and both, with gates of -1e-12 and of -1e3
 * (a state that dies in one step) among them, over every split pattern of
 * mpidata.h (even, skewed with empty ranks, all on one rank).  Every rank
 * compares its rows and normalizers with the serial causal call on the
 * whole sequence (1e-12 in double, 1e-5 in float): plain and _ex, packed
 * sequences crossing ranks with key weights (zeros whose rows hold NaN)
 * and per-sequence states absorbed (each final state where its
 * sequence's last row is), four maps (elu+1, elu+1 under the count,
 * identity, FAVOR+ with its shifts); the batched calls with the plan's
 * gamma and with a gamma per head and gates, against the serial batched
 * calls; causal outputs up to a row unchanged bit for bit when every
 * later token and gate changes.  Then the collective refusals (a gate
 * above 0 on one rank, NaN under check_finite, plans of different decays,
 * head decays that differ, a decayed plan or gates where the call does
 * not decay): the same status on every rank, nothing written, no state
 * changed.
 */
#include <math.h>
#include "testutil.h"
#include "linattn_mpi.h"
#include "mpitest.h"
#include "mpidata.h"
#include "mpipacked.h"

/* The decays: the plan's gamma alone, gates alone, both. */
enum { GAMMA, GATES, BOTH, KINDS };

static double log_decay_of(int kind)
{
    return kind == GAMMA ? -0.05 : kind == BOTH ? -0.02 : 0;
}

static P(plan) *decay_plan(const map_case *mc, double log_decay,
                           int check_finite)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.seed = 7;
    o.block = 16; /* blocks and chunks that do not divide the rows */
    o.chunk = 5;
    o.input_scale = mc->scale;
    o.denom = mc->denom;
    o.check_finite = check_finite;
    o.log_decay = log_decay;
    P(plan) *p = NULL;
    int st = P(plan_create)(&p, mc->map, 3, 2, &o);
    MT_CHECK(st == 0, "plan_create %d", st);
    return p;
}

/* n log gates in [-0.3, 0]: -1e-12 at every fifth row, -1e3 at rows 24
 * and 61 (what came before dies there), 0 at row 2. */
static real *make_gates(int64_t n, uint64_t seed)
{
    real *g = malloc((size_t)n * sizeof *g);
    for (int64_t i = 0; i < n; i++) {
        g[i] = (real)(-0.3 * test_uniform(&seed));
        if (i % 5 == 1)
            g[i] = (real)-1e-12;
        if (i == 24 || i == 61)
            g[i] = (real)-1e3;
        if (i == 2)
            g[i] = 0;
    }
    return g;
}

/* Rows [o, o + c) of the distributed result against the serial one: the
 * same status and global bad row on every rank; the rows (and
 * normalizers, den not NULL) to TOL where the serial call wrote them
 * (all, or those before its bad row).  The shifted maps' normalizers
 * carry the row's running shift, which keys whose decayed weights
 * underflow (gates of -1e3) leave out of a rank's state (as they leave it
 * out of the serial streaming update's): theirs are compared only where
 * nothing underflows. */
static void compare_rows(const char *what, int sts, int64_t sbad, int st,
                         int64_t bad, const tmat *out, const tmat *ref,
                         const real *den, const real *rden, int64_t o,
                         int64_t c)
{
    MT_CHECK(st == sts && (sts == 0 || bad == sbad),
             "%s: status %d row %lld, serial %d row %lld", what, st,
             (long long)bad, sts, (long long)sbad);
    int64_t hi = sts ? (sbad < o + c ? sbad : o + c) : o + c;
    if (hi <= o)
        return;
    tmat a = view(out, o, hi - o), b = view(ref, o, hi - o);
    double err = rel_diff(&a, &b);
    double derr = den ? vec_rel_diff(den + o, rden + o, hi - o) : 0;
    MT_CHECK(err < TOL && derr < TOL, "%s: error %g, normalizers %g", what,
             err, derr);
}

/* causal and causal_ex (with normalizers and gates) of every map, split
 * and decay against the serial causal_ex on the whole sequence; rows of
 * other ranks untouched; one rank: the serial bits. */
static void causal_equals_serial(void)
{
    for (int mi = 0; mi < MAP_CASES; mi++)
        for (int split = 0; split < SPLITS; split++)
            for (int kind = 0; kind < KINDS; kind++) {
                const map_case *mc = &map_cases[mi];
                int layout = (mi + split + kind) % 2 ? COL : ROW;
                P(plan) *p = decay_plan(mc, log_decay_of(kind), 0);
                uint64_t seed = 100 + (uint64_t)(mi * 64 + split * 8 + kind);
                tmat q = tmat_rand(layout, NTOK, 3, 1, mc->lo, mc->hi, &seed);
                tmat k = tmat_rand(layout, NTOK, 3, 2, mc->lo, mc->hi, &seed);
                tmat v = tmat_rand(layout, NTOK, 2, 0, -1, 1, &seed);
                real *g = kind == GAMMA ? NULL : make_gates(NTOK, seed);
                tmat ref = tmat_like(&q, NTOK, 2, 1), out = tmat_like(&q, NTOK, 2, 1);
                real rden[NTOK], den[NTOK];
                int64_t o, c, sbad = -1, bad = -1;
                block_of(NTOK, split, &o, &c);
                P(extras) ex;
                P(extras_init)(&ex);
                ex.den = rden;
                ex.gates = g;
                int sts = P(causal_ex)(p, layout, NTOK, q.a, q.ld, k.a, k.ld, v.a, v.ld, ref.a,
                                       ref.ld, &ex, &sbad);
                tmat lq = view(&q, o, c), lk = view(&k, o, c), lv = view(&v, o, c);
                tmat lo = view(&out, o, c);
                char what[96];
                for (int form = 0; form < 2; form++) {
                    if (form == 0 && g)
                        continue; /* the plain call takes no gates */
                    fill(&out, SENTINEL);
                    for (int i = 0; i < NTOK; i++)
                        den[i] = SENTINEL;
                    ex.den = den + o;
                    ex.gates = g ? g + o : NULL;
                    bad = -1;
                    int st = form ? MP(causal_ex)(p, WORLD, layout, c, lq.a, lq.ld, lk.a, lk.ld,
                                                  lv.a, lv.ld, lo.a, lo.ld, &ex, &bad)
                                  : MP(causal)(p, WORLD, layout, c, lq.a, lq.ld, lk.a, lk.ld,
                                               lv.a, lv.ld, lo.a, lo.ld, &bad);
                    snprintf(what, sizeof what, "map %d denom %d split %d decay %d form %d",
                             mc->map, mc->denom, split, kind, form);
                    int dens = form && (mc->map != LINATTN_MAP_FAVOR || !g);
                    compare_rows(what, sts, sbad, st, bad, &out, &ref, dens ? den : NULL, rden,
                                 o, c);
                    MT_CHECK(outside_untouched(&out, o, c, SENTINEL), "%s: other rows written",
                             what);
                    if (mt_size == 1 && sts == 0)
                        MT_CHECK(same_bits(&out, &ref), "%s: np 1, not the serial bits", what);
                }
                free(g);
                tmat_free(&ref), tmat_free(&out);
                tmat_free(&q), tmat_free(&k), tmat_free(&v);
                P(plan_destroy)(p);
            }
}

/* A packed stream of 10 sequences with key weights (zeros whose rows are
 * NaN), gates and per-sequence states absorbed, every map, split and
 * decay: rows, normalizers and each final state (on the rank holding its
 * sequence's last row; every other entry unchanged bit for bit) as the
 * serial packed call's. */
static void packed_equals_serial(void)
{
    int64_t off[NSEQ + 1];
    offsets_of(off);
    for (int mi = 0; mi < MAP_CASES; mi++)
        for (int split = 0; split < SPLITS; split++)
            for (int kind = 0; kind < KINDS; kind++) {
                const map_case *mc = &map_cases[mi];
                int layout = (mi + split + kind) % 2 ? ROW : COL;
                P(plan) *p = decay_plan(mc, log_decay_of(kind), 0);
                int64_t m, e;
                P(plan_dims)(p, NULL, &m, &e);
                int64_t len = m * (e + 1);
                uint64_t seed = 900 + (uint64_t)(mi * 64 + split * 8 + kind);
                tmat q = tmat_rand(layout, NTOK, 3, 1, mc->lo, mc->hi, &seed);
                tmat k = tmat_rand(layout, NTOK, 3, 2, mc->lo, mc->hi, &seed);
                tmat v = tmat_rand(layout, NTOK, 2, 0, -1, 1, &seed);
                real *w = make_weights(&k, &v, seed);
                real *g = kind == GAMMA ? NULL : make_gates(NTOK, seed);
                P(state) *mine[NSEQ], *ref[NSEQ], *orig[NSEQ];
                make_states(p, mc, mine);
                copy_states(p, mine, ref);
                copy_states(p, mine, orig);
                tmat rout = tmat_like(&q, NTOK, 2, 1), out = tmat_like(&q, NTOK, 2, 1);
                real rden[NTOK], den[NTOK];
                int64_t o, c, sbad = -1, bad = -1;
                block_of(NTOK, split, &o, &c);
                fill(&out, SENTINEL);
                P(extras) ex;
                P(extras_init)(&ex);
                ex.weights = w, ex.gates = g, ex.den = rden;
                ex.offsets = off, ex.nseq = NSEQ, ex.states = ref, ex.absorb = 1;
                int sts = P(causal_ex)(p, layout, NTOK, q.a, q.ld, k.a, k.ld, v.a, v.ld, rout.a,
                                       rout.ld, &ex, &sbad);
                tmat lq = view(&q, o, c), lk = view(&k, o, c), lv = view(&v, o, c);
                tmat lo = view(&out, o, c);
                ex.weights = w + o, ex.gates = g ? g + o : NULL, ex.den = den + o;
                ex.states = mine;
                int st = MP(causal_ex)(p, WORLD, layout, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld,
                                       lo.a, lo.ld, &ex, &bad);
                char what[96];
                snprintf(what, sizeof what, "packed map %d denom %d split %d decay %d", mc->map,
                         mc->denom, split, kind);
                compare_rows(what, sts, sbad, st, bad, &out, &rout,
                             mc->map != LINATTN_MAP_FAVOR || !g ? den : NULL, rden, o, c);
                MT_CHECK(outside_untouched(&out, o, c, SENTINEL), "%s: other rows written", what);
                double *a = malloc((size_t)(len + 2) * sizeof *a);
                double *b = malloc((size_t)(len + 2) * sizeof *b);
                for (int s = 0; sts == 0 && s < NSEQ; s++) {
                    if (holds_last(off, s, o, c)) {
                        int tok;
                        double serr = state_diff(mine[s], ref[s], len, &tok);
                        MT_CHECK(serr < TOL && tok, "%s: sequence %d's final state %g, tokens %s",
                                 what, s, serr, tok ? "equal" : "differ");
                        continue;
                    }
                    state_bits(mine[s], len, a);
                    state_bits(orig[s], len, b);
                    MT_CHECK(!memcmp(a, b, (size_t)(len + 2) * sizeof *a),
                             "%s: sequence %d's state changed without its last row", what, s);
                }
                free(a), free(b);
                free_states(mine), free_states(ref), free_states(orig);
                free(w), free(g);
                tmat_free(&rout), tmat_free(&out);
                tmat_free(&q), tmat_free(&k), tmat_free(&v);
                P(plan_destroy)(p);
            }
}

/* Every token after a global row changed (queries, keys, gates to -1e3,
 * values NaN) leaves the rows up to it bit-identical on every rank and
 * split (FAVOR+, gates and gamma): no rank's prefix reads a later rank's
 * tokens. */
static void later_tokens_isolated(void)
{
    const map_case *mc = &map_cases[3];
    static const int64_t last_rows[] = {0, 30, 60, NTOK - 2};
    for (int split = 0; split < SPLITS; split++)
        for (int t = 0; t < 4; t++) {
            int64_t lastrow = last_rows[t];
            P(plan) *p = decay_plan(mc, -0.01, 0);
            uint64_t seed = 4000 + (uint64_t)split;
            tmat q = tmat_rand(ROW, NTOK, 3, 0, mc->lo, mc->hi, &seed);
            tmat k = tmat_rand(ROW, NTOK, 3, 0, mc->lo, mc->hi, &seed);
            tmat v = tmat_rand(ROW, NTOK, 2, 0, -1, 1, &seed);
            real *g = make_gates(NTOK, seed);
            tmat q2 = tmat_like(&q, NTOK, 3, 0), k2 = tmat_like(&q, NTOK, 3, 0);
            tmat v2 = tmat_like(&q, NTOK, 2, 0);
            real *g2 = malloc(NTOK * sizeof *g2);
            uint64_t s2 = 77;
            for (int64_t i = 0; i < NTOK; i++) {
                int later = i > lastrow;
                for (int64_t c = 0; c < 3; c++) {
                    *tmat_at(&q2, i, c) = later ? (real)test_uniform(&s2) : *tmat_at(&q, i, c);
                    *tmat_at(&k2, i, c) = later ? (real)test_uniform(&s2) : *tmat_at(&k, i, c);
                }
                for (int64_t c = 0; c < 2; c++)
                    *tmat_at(&v2, i, c) = later ? (real)NAN : *tmat_at(&v, i, c);
                g2[i] = later ? (real)-1e3 : g[i];
            }
            int64_t o, c;
            block_of(NTOK, split, &o, &c);
            tmat a = tmat_like(&q, NTOK, 2, 0), b = tmat_like(&q, NTOK, 2, 0);
            P(extras) ex;
            P(extras_init)(&ex);
            tmat l1[3] = {view(&q, o, c), view(&k, o, c), view(&v, o, c)};
            tmat l2[3] = {view(&q2, o, c), view(&k2, o, c), view(&v2, o, c)};
            tmat la = view(&a, o, c), lb = view(&b, o, c);
            ex.gates = g + o;
            int s1 = MP(causal_ex)(p, WORLD, ROW, c, l1[0].a, l1[0].ld, l1[1].a, l1[1].ld, l1[2].a,
                                   l1[2].ld, la.a, la.ld, &ex, NULL);
            ex.gates = g2 + o;
            int s2st = MP(causal_ex)(p, WORLD, ROW, c, l2[0].a, l2[0].ld, l2[1].a, l2[1].ld,
                                     l2[2].a, l2[2].ld, lb.a, lb.ld, &ex, NULL);
            int same = 1;
            for (int64_t i = o; i < o + c && i <= lastrow; i++)
                for (int64_t cc = 0; cc < 2; cc++)
                    same &= !memcmp(tmat_at(&a, i, cc), tmat_at(&b, i, cc), sizeof(real));
            MT_CHECK(s1 == 0 && s2st == 0 && same, "split %d row %lld: status %d/%d, bits %s",
                     split, (long long)lastrow, s1, s2st, same ? "same" : "differ");
            free(g), free(g2);
            tmat_free(&a), tmat_free(&b);
            tmat_free(&q), tmat_free(&k), tmat_free(&v);
            tmat_free(&q2), tmat_free(&k2), tmat_free(&v2);
            P(plan_destroy)(p);
        }
}

/* This rank's rows [o, o + c) of every head's dense vector (H x NTOK,
 * head h's at h NTOK) as a dense H x c one. */
static real *dense_rows(const real *all, int64_t H, int64_t o, int64_t c)
{
    real *x = malloc((size_t)(H * c + 1) * sizeof *x);
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = 0; i < c; i++)
            x[h * c + i] = all[h * NTOK + o + i];
    return x;
}

/* Three heads ([h][t][c], row major): the batched causal calls with the
 * plan's gamma for every head (batched_causal, batched_causal_forward's
 * normalizers) and batched_causal_ex with a gamma per head, gates, key
 * weights and normalizers, against the serial batched calls on the
 * whole sequence. */
static void batched_equals_serial(void)
{
    enum { H = 3 };
    static const double head_decays[H] = {0, -0.1, -1e-12};
    for (int mi = 0; mi < MAP_CASES; mi++)
        for (int split = 0; split < SPLITS; split++) {
            const map_case *mc = &map_cases[mi];
            P(plan) *p = decay_plan(mc, -0.02, 0);
            uint64_t seed = 7000 + (uint64_t)(mi * 8 + split);
            tmat q = tmat_rand(ROW, H * NTOK, 3, 0, mc->lo, mc->hi, &seed);
            tmat k = tmat_rand(ROW, H * NTOK, 3, 0, mc->lo, mc->hi, &seed);
            tmat v = tmat_rand(ROW, H * NTOK, 2, 0, -1, 1, &seed);
            real *g = make_gates(H * NTOK, seed);
            real *w = malloc(H * NTOK * sizeof *w);
            for (int64_t i = 0; i < H * NTOK; i++)
                w[i] = (real)(i % 11 == 4 ? 0 : 0.5 + test_uniform(&seed));
            tmat ref = tmat_like(&q, H * NTOK, 2, 0), out = tmat_like(&q, H * NTOK, 2, 0);
            real rden[H * NTOK];
            linattn_strides sq = {3, 0, NTOK * 3}, sv = {2, 0, NTOK * 2};
            int64_t o, c;
            block_of(NTOK, split, &o, &c);
            real *lden = malloc((size_t)(H * c + 1) * sizeof *lden);
            real *lg = dense_rows(g, H, o, c), *lw = dense_rows(w, H, o, c);
            for (int form = 0; form < 3; form++) {
                /* 0: batched_causal; 1: batched_causal_forward; 2: _ex */
                P(extras) ex;
                P(extras_init)(&ex);
                if (form == 2) {
                    ex.den = rden, ex.gates = g, ex.weights = w;
                    ex.head_decays = head_decays;
                }
                linattn_where sbad = {-1, -1, -1}, bad = {-1, -1, -1};
                int sts = form == 0 ? P(batched_causal)(p, ROW, 1, H, NTOK, q.a, &sq, k.a, &sq,
                                                       v.a, &sv, ref.a, &sv, &sbad)
                          : form == 1 ? P(batched_causal_forward)(p, ROW, 1, H, NTOK, q.a, &sq,
                                                                  k.a, &sq, v.a, &sv, ref.a, &sv,
                                                                  rden, &sbad)
                                      : P(batched_causal_ex)(p, ROW, 1, H, NTOK, q.a, &sq, k.a,
                                                             &sq, v.a, &sv, ref.a, &sv, &ex,
                                                             &sbad);
                fill(&out, SENTINEL);
                const real *lq = q.a + o * 3, *lk = k.a + o * 3, *lv = v.a + o * 2;
                real *lo = out.a + o * 2;
                ex.den = lden, ex.gates = lg, ex.weights = lw;
                int st = form == 0 ? MP(batched_causal)(p, WORLD, ROW, 1, H, c, lq, &sq, lk, &sq,
                                                        lv, &sv, lo, &sv, &bad)
                         : form == 1 ? MP(batched_causal_forward)(p, WORLD, ROW, 1, H, c, lq,
                                                                  &sq, lk, &sq, lv, &sv, lo, &sv,
                                                                  lden, &bad)
                                     : MP(batched_causal_ex)(p, WORLD, ROW, 1, H, c, lq, &sq, lk,
                                                             &sq, lv, &sv, lo, &sv, &ex, &bad);
                double err = 0, derr = 0;
                for (int64_t h = 0; !st && h < H; h++) {
                    tmat a = view(&out, h * NTOK + o, c), b = view(&ref, h * NTOK + o, c);
                    err = fmax(err, rel_diff(&a, &b));
                    /* (the shifted maps' normalizers: see compare_rows) */
                    if (form && (mc->map != LINATTN_MAP_FAVOR || h > 0))
                        derr = fmax(derr, vec_rel_diff(lden + h * c, rden + h * NTOK + o, c));
                }
                int want = 0;
                MT_CHECK(sts == want && st == want && (want || (err < TOL && derr < TOL)),
                         "batched map %d split %d form %d: status %d/%d, error %g, "
                         "normalizers %g", mc->map, split, form, sts, st, err, derr);
                MT_CHECK(bad.row == -1, "bad written");
                MT_CHECK(!want || all_equal(&out, SENTINEL), "written on a refusal");
            }
            free(lden), free(lg), free(lw), free(g), free(w);
            tmat_free(&ref), tmat_free(&out);
            tmat_free(&q), tmat_free(&k), tmat_free(&v);
            P(plan_destroy)(p);
        }
}

/* The refusals: the same status on every rank, nothing written, no state
 * changed. */
static void refusals_agreed(void)
{
    const map_case *mc = &map_cases[0];
    P(plan) *p = decay_plan(mc, -0.05, 0), *fin = decay_plan(mc, -0.05, 1);
    P(plan) *other = decay_plan(mc, -0.06, 0), *plain = decay_plan(mc, 0, 0);
    uint64_t seed = 31;
    tmat q = tmat_rand(ROW, NTOK, 3, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, NTOK, 3, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, NTOK, 2, 0, -1, 1, &seed);
    tmat out = tmat_like(&q, NTOK, 2, 0);
    real *g = make_gates(NTOK, seed), den[NTOK];
    int64_t off[NSEQ + 1];
    offsets_of(off);
    int64_t o, c;
    block_of(NTOK, EVEN, &o, &c);
    int owner = 0; /* the last rank with rows: the one that goes wrong */
    for (int r = 0; r < mt_size; r++) {
        int64_t ro, rc;
        int keep = mt_rank;
        mt_rank = r;
        block_of(NTOK, EVEN, &ro, &rc);
        mt_rank = keep;
        if (rc > 0)
            owner = r;
    }
    P(state) *sts[NSEQ], *orig[NSEQ];
    make_states(p, mc, sts);
    copy_states(p, sts, orig);
    int64_t len = 9;
    tmat lq = view(&q, o, c), lk = view(&k, o, c), lv = view(&v, o, c), lo = view(&out, o, c);
    enum { GATE_UP, GATE_NAN, OTHER_DECAY, ATTN, ATTN_EX, ATTN_GATES, BATCHED_ATTN, CASES };
    static const char *names[CASES] = {
        "a gate > 0 on one rank", "a NaN gate under check_finite on one rank",
        "plans of different decays", "attention with a decayed plan",
        "attention_ex with a decayed plan", "attention_ex with gates",
        "batched attention with a decayed plan"};
    for (int t = 0; t < CASES; t++) {
        const P(plan) *pl = p;
        real *gl = malloc((size_t)(c + 1) * sizeof *gl);
        for (int64_t i = 0; i < c; i++)
            gl[i] = g[o + i];
        int want = 0, st;
        P(extras) ex;
        P(extras_init)(&ex);
        ex.den = den + o, ex.gates = gl;
        ex.offsets = off, ex.nseq = NSEQ;
        if (t == GATE_UP) /* and states absorbing: none may change */
            ex.states = sts, ex.absorb = 1;
        fill(&out, SENTINEL);
        for (int i = 0; i < NTOK; i++)
            den[i] = SENTINEL;
        int64_t bad = -5;
        linattn_where wbad = {-5, -5, -5};
        switch (t) {
        case GATE_UP:
            if (mt_rank == owner)
                gl[c - 1] = (real)0.5;
            want = -13;
            break;
        case GATE_NAN:
            pl = fin;
            if (mt_rank == owner)
                gl[0] = (real)NAN;
            want = LINATTN_ENONFINITE;
            break;
        case OTHER_DECAY:
            pl = mt_rank == 0 ? other : p;
            want = mt_size > 1 ? LINATTN_EMISMATCH : 0;
            break;
        case ATTN:
        case ATTN_EX:
        case BATCHED_ATTN:
            want = -1;
            break;
        default: /* gates on a non-causal call of an undecayed plan */
            pl = plain;
            want = -14;
            break;
        }
        if (t == ATTN)
            st = MP(attention)(pl, WORLD, ROW, c, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld, lo.a,
                               lo.ld, &bad);
        else if (t == ATTN_EX || t == ATTN_GATES) {
            if (t == ATTN_EX)
                ex.gates = NULL;
            st = MP(attention_ex)(pl, WORLD, ROW, c, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld,
                                  lo.a, lo.ld, &ex, &bad);
        } else if (t == BATCHED_ATTN) {
            linattn_strides s3 = {3, 0, 0}, s2 = {2, 0, 0};
            st = MP(batched_attention_forward)(pl, WORLD, ROW, 1, 1, c, c, lq.a, &s3, lk.a, &s3,
                                               lv.a, &s2, lo.a, &s2, den + o, &wbad);
        } else {
            st = MP(causal_ex)(pl, WORLD, ROW, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld, lo.a,
                               lo.ld, &ex, &bad);
        }
        MT_CHECK(st == want, "%s: status %d, want %d", names[t], st, want);
        int kept = all_equal(&out, SENTINEL) && bad == -5 && wbad.row == -5;
        for (int i = 0; i < NTOK; i++)
            kept &= den[i] == SENTINEL;
        double *a = malloc((size_t)(len + 2) * sizeof *a);
        double *b = malloc((size_t)(len + 2) * sizeof *b);
        for (int s = 0; s < NSEQ; s++) {
            state_bits(sts[s], len, a);
            state_bits(orig[s], len, b);
            kept &= !memcmp(a, b, (size_t)(len + 2) * sizeof *a);
        }
        free(a), free(b);
        MT_CHECK(!want || kept, "%s: written on a refusal", names[t]);
        if (want == 0) { /* np 1: the call ran; put the states back */
            for (int s = 0; s < NSEQ; s++)
                P(state_copy)(sts[s], orig[s]);
        }
        free(gl);
        MPI_Barrier(WORLD);
    }
    free_states(sts), free_states(orig);
    free(g);
    tmat_free(&out);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
    P(plan_destroy)(p), P(plan_destroy)(fin), P(plan_destroy)(other);
    P(plan_destroy)(plain);
}

/* Rows [o, o + c) of a against b, relative to b's largest entry over
 * every row: a rank's few rows may hold gradients that vanish but for
 * rounding (the first row's dq with FAVOR+, dL/da_0 with no state). */
static double rows_err(const tmat *a, const tmat *b, int64_t o, int64_t c)
{
    double big = 0, err = 0;
    for (int64_t i = 0; i < b->rows; i++)
        for (int64_t t = 0; t < b->cols; t++) {
            double x = fabs((double)*tmat_at(b, i, t));
            big = x > big ? x : big;
            if (i >= o && i < o + c) {
                double y = fabs((double)*tmat_at(a, i, t) - (double)*tmat_at(b, i, t));
                err = y > err ? y : err;
            }
        }
    return big > 0 ? err / big : err;
}

/* One decayed training step of this rank's rows [o, o + c): the
 * distributed forward (den) and causal_backward_ex with gates, key
 * weights, dL/dw and dL/da into the global arrays' rows. */
static int step_distributed(const P(plan) *p, int layout, int64_t o, int64_t c,
                            const tmat *q, const tmat *k, const tmat *v,
                            const tmat *gr, const real *g, const real *w,
                            const int64_t *off, tmat *out, real *den, tmat *dq,
                            tmat *dk, tmat *dv, real *dw, real *dg, int64_t *bad)
{
    tmat lq = view(q, o, c), lk = view(k, o, c), lv = view(v, o, c);
    tmat lo = view(out, o, c), lg = view(gr, o, c);
    tmat ldq = view(dq, o, c), ldk = view(dk, o, c), ldv = view(dv, o, c);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den + o;
    ex.gates = g ? g + o : NULL;
    ex.weights = w ? w + o : NULL;
    ex.offsets = off; /* global */
    ex.nseq = off ? NSEQ : 0;
    int st = MP(causal_ex)(p, WORLD, layout, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld, lo.a,
                           lo.ld, &ex, bad);
    if (st)
        return st;
    ex.den = NULL;
    ex.dweights = w ? dw + o : NULL;
    ex.dgates = dg + o;
    return MP(causal_backward_ex)(p, WORLD, layout, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld,
                                  lo.a, lo.ld, den + o, lg.a, lg.ld, ldq.a, ldq.ld, ldk.a,
                                  ldk.ld, ldv.a, ldv.ld, NULL, 3, NULL, &ex, bad);
}

/* The decayed backward across ranks: every map (the count's share of
 * dL/da crossing ranks among them), split and decay, with and without
 * key weights, one sequence and the packed stream of mpipacked.h (empty
 * sequences, sequences crossing ranks): this rank's dq, dk, dv, dL/dw and
 * dL/da (whose later ranks' share arrives by the reverse scan) as the
 * serial causal_backward_ex's of the whole stream; other rows
 * untouched. */
static void backward_equals_serial(void)
{
    for (int mi = 0; mi < MAP_CASES; mi++)
        for (int split = 0; split < SPLITS; split++)
            for (int kind = 0; kind < KINDS; kind++)
                for (int variant = 0; variant < 4; variant++) {
                    int weighted = variant & 1, packed = variant >> 1;
                    int64_t offs[NSEQ + 1];
                    offsets_of(offs);
                    const int64_t *off = packed ? offs : NULL;
                    const map_case *mc = &map_cases[mi];
                    int layout = (mi + split + kind + weighted) % 2 ? COL : ROW;
                    P(plan) *p = decay_plan(mc, log_decay_of(kind), 0);
                    uint64_t seed = 900 + (uint64_t)(mi * 64 + split * 8 + kind * 2 + weighted);
                    tmat q = tmat_rand(layout, NTOK, 3, 1, mc->lo, mc->hi, &seed);
                    tmat k = tmat_rand(layout, NTOK, 3, 2, mc->lo, mc->hi, &seed);
                    tmat v = tmat_rand(layout, NTOK, 2, 0, -1, 1, &seed);
                    tmat gr = tmat_rand(layout, NTOK, 2, 0, -1, 1, &seed);
                    real *g = kind == GAMMA ? NULL : make_gates(NTOK, seed);
                    real *w = weighted ? make_weights(&k, &v, seed) : NULL;
                    tmat ro = tmat_like(&q, NTOK, 2, 1), mo = tmat_like(&q, NTOK, 2, 1);
                    tmat rq = tmat_like(&q, NTOK, 3, 1), mq = tmat_like(&q, NTOK, 3, 1);
                    tmat rk = tmat_like(&q, NTOK, 3, 0), mk = tmat_like(&q, NTOK, 3, 0);
                    tmat rv = tmat_like(&q, NTOK, 2, 2), mv = tmat_like(&q, NTOK, 2, 2);
                    fill(&mq, SENTINEL), fill(&mk, SENTINEL), fill(&mv, SENTINEL);
                    real rden[NTOK], mden[NTOK], rdw[NTOK], mdw[NTOK], rdg[NTOK], mdg[NTOK];
                    for (int i = 0; i < NTOK; i++)
                        mdw[i] = mdg[i] = SENTINEL;
                    int64_t o, c, bad = -5;
                    block_of(NTOK, split, &o, &c);
                    /* the serial reference: the same calls without MPI */
                    P(extras) ex;
                    P(extras_init)(&ex);
                    ex.den = rden, ex.gates = g, ex.weights = w;
                    ex.offsets = off, ex.nseq = off ? NSEQ : 0;
                    int sts = P(causal_ex)(p, layout, NTOK, q.a, q.ld, k.a, k.ld, v.a, v.ld, ro.a,
                                       ro.ld, &ex, NULL);
                    ex.den = NULL, ex.dweights = w ? rdw : NULL, ex.dgates = rdg;
                    if (!sts)
                        sts = P(causal_backward_ex)(p, layout, NTOK, q.a, q.ld, k.a, k.ld, v.a,
                                                    v.ld, ro.a, ro.ld, rden, gr.a, gr.ld, rq.a,
                                                    rq.ld, rk.a, rk.ld, rv.a, rv.ld, NULL, 3,
                                                    NULL, &ex, NULL);
                    int st = step_distributed(p, layout, o, c, &q, &k, &v, &gr, g, w, off,
                                              &mo, mden, &mq, &mk, &mv, mdw, mdg, &bad);
                    double eq = rows_err(&mq, &rq, o, c), ek = rows_err(&mk, &rk, o, c);
                    double ev = rows_err(&mv, &rv, o, c);
                    double ew = w ? vec_rel_diff(mdw + o, rdw + o, c) : 0;
                    /* dL/da against the whole vector's size: the first row's
                     * is 0 but for rounding (no state before it) */
                    double gmax = 0, eg = 0;
                    for (int64_t i = 0; i < NTOK; i++)
                        gmax = fmax(gmax, fabs((double)rdg[i]));
                    for (int64_t i = o; i < o + c; i++)
                        eg = fmax(eg, fabs((double)mdg[i] - (double)rdg[i]) / gmax);
                    /* (the identity's normalizers may vanish: EDENOM on both) */
                    MT_CHECK(st == sts && (sts || (eq < TOL && ek < TOL && ev < TOL &&
                                                   ew < TOL && eg < TOL)),
                             "backward map %d denom %d split %d decay %d weighted %d packed %d: "
                             "status %d/%d, dq %g dk %g dv %g dw %g da %g",
                             mc->map, mc->denom, split, kind, weighted, packed, sts, st, eq, ek,
                             ev, ew, eg);
                    MT_CHECK(sts || bad == -5, "bad_row written on success");
                    int untouched = outside_untouched(&mq, o, c, SENTINEL) &&
                                    outside_untouched(&mk, o, c, SENTINEL) &&
                                    outside_untouched(&mv, o, c, SENTINEL);
                    for (int64_t i = 0; i < NTOK; i++)
                        if (i < o || i >= o + c)
                            untouched &= mdg[i] == SENTINEL && mdw[i] == SENTINEL;
                    MT_CHECK(untouched, "rows of other ranks written");
                    free(g), free(w);
                    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&gr);
                    tmat_free(&ro), tmat_free(&mo), tmat_free(&rq), tmat_free(&mq);
                    tmat_free(&rk), tmat_free(&mk), tmat_free(&rv), tmat_free(&mv);
                    P(plan_destroy)(p);
                }
}

/* The last rank holding rows of the SKEWED split. */
static int last_with_rows(void)
{
    int last = 0;
    for (int r = 0; r < mt_size; r++) {
        int64_t o, c;
        int keep = mt_rank;
        mt_rank = r;
        block_of(NTOK, SKEWED, &o, &c);
        mt_rank = keep;
        if (c > 0)
            last = r;
    }
    return last;
}

/* What the backward calls refuse with decay, on every rank with nothing
 * written: the non-causal ones a decayed plan (-1) and gates (-i of ex:
 * non-causal attention has no order to decay along); the causal one a
 * gate above 0 on one rank (-i of ex, agreed), packed or not. */
static void backward_refuses_decay(void)
{
    const map_case *mc = &map_cases[0];
    P(plan) *p = decay_plan(mc, -0.05, 0), *plain = decay_plan(mc, 0, 0);
    uint64_t seed = 57;
    tmat q = tmat_rand(ROW, NTOK, 3, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, NTOK, 3, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, NTOK, 2, 0, -1, 1, &seed);
    tmat gr = tmat_rand(ROW, NTOK, 2, 0, -1, 1, &seed);
    tmat out = tmat_like(&q, NTOK, 2, 0);
    tmat dq = tmat_like(&q, NTOK, 3, 0), dk = tmat_like(&q, NTOK, 3, 0);
    tmat dv = tmat_like(&q, NTOK, 2, 0);
    real den[NTOK], *g = make_gates(NTOK, seed);
    int64_t o, c;
    block_of(NTOK, SKEWED, &o, &c);
    P(extras) fx;
    P(extras_init)(&fx);
    fx.den = den + o;
    tmat lq = view(&q, o, c), lk = view(&k, o, c), lv = view(&v, o, c), lo = view(&out, o, c);
    int st = MP(causal_ex)(plain, WORLD, ROW, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld, lo.a,
                           lo.ld, &fx, NULL);
    MT_CHECK(st == 0, "forward %d", st);
    tmat lg = view(&gr, o, c), ldq = view(&dq, o, c), ldk = view(&dk, o, c);
    tmat ldv = view(&dv, o, c);
    int64_t off[NSEQ + 1];
    offsets_of(off);
    for (int t = 0; t < 4; t++) {
        fill(&dq, SENTINEL), fill(&dk, SENTINEL), fill(&dv, SENTINEL);
        P(extras) ex;
        P(extras_init)(&ex);
        ex.gates = g + o;
        if (t == 3)
            ex.offsets = off, ex.nseq = NSEQ;
        /* a gate above 0 on the last rank with rows */
        int64_t mine = mt_rank == last_with_rows() ? o + c - 1 : -1;
        real keep = mine >= 0 ? g[mine] : 0;
        if (t >= 2 && mine >= 0)
            g[mine] = (real)0.5;
        const P(plan) *pl = t == 0 || t == 3 ? p : plain;
        int64_t bad = -5;
        int want = t == 0 ? -1 : t == 1 ? -27 : -25;
        if (t >= 2)
            st = MP(causal_backward_ex)(pl, WORLD, ROW, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld,
                                        lo.a, lo.ld, den + o, lg.a, lg.ld, ldq.a, ldq.ld, ldk.a,
                                        ldk.ld, ldv.a, ldv.ld, NULL, 3, NULL, &ex, &bad);
        else
            st = MP(attention_backward_ex)(pl, WORLD, ROW, c, c, lq.a, lq.ld, lk.a, lk.ld, lv.a,
                                           lv.ld, lo.a, lo.ld, den + o, lg.a, lg.ld, ldq.a,
                                           ldq.ld, ldk.a, ldk.ld, ldv.a, ldv.ld, NULL, 3, NULL,
                                           NULL, t == 1 ? &ex : NULL, &bad);
        if (mine >= 0)
            g[mine] = keep;
        MT_CHECK(st == want, "backward case %d: status %d, want %d", t, st, want);
        MT_CHECK(all_equal(&dq, SENTINEL) && all_equal(&dk, SENTINEL) &&
                     all_equal(&dv, SENTINEL) && bad == -5,
                 "backward case %d: written on a refusal", t);
    }
    /* the saved chunk states are the serial calls': a rank's rows are not
     * a call's, and the distributed calls refuse the field (-i of ex) */
    real *cs = calloc(8192, sizeof *cs);
    P(extras) cx;
    P(extras_init)(&cx);
    cx.chunk_states = cs;
    fill(&out, SENTINEL), fill(&dq, SENTINEL);
    st = MP(causal_ex)(plain, WORLD, ROW, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld, lo.a,
                       lo.ld, &cx, NULL);
    MT_CHECK(st == -13 && all_equal(&out, SENTINEL), "causal_ex with chunk_states: %d", st);
    st = MP(causal_backward_ex)(plain, WORLD, ROW, c, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld,
                                lo.a, lo.ld, den + o, lg.a, lg.ld, ldq.a, ldq.ld, ldk.a, ldk.ld,
                                ldv.a, ldv.ld, NULL, 3, NULL, &cx, NULL);
    MT_CHECK(st == -25 && all_equal(&dq, SENTINEL), "causal_backward_ex with chunk_states: %d",
             st);
    free(cs);
    free(g);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&gr), tmat_free(&out);
    tmat_free(&dq), tmat_free(&dk), tmat_free(&dv);
    P(plan_destroy)(p), P(plan_destroy)(plain);
}

/* batched_causal_ex's own refusals: a head's decay above 0 or NaN, head
 * decays that differ across ranks or are given on some only, offsets
 * (not taken), gates meeting out, a gate above 0 on one rank. */
static void batched_ex_refusals(void)
{
    enum { H = 2 };
    const map_case *mc = &map_cases[0];
    P(plan) *p = decay_plan(mc, -0.02, 0);
    uint64_t seed = 91;
    tmat q = tmat_rand(ROW, H * NTOK, 3, 0, -1, 1, &seed);
    tmat k = tmat_rand(ROW, H * NTOK, 3, 0, -1, 1, &seed);
    tmat v = tmat_rand(ROW, H * NTOK, 2, 0, -1, 1, &seed);
    tmat out = tmat_like(&q, H * NTOK, 2, 0);
    linattn_strides sq = {3, 0, NTOK * 3}, sv = {2, 0, NTOK * 2};
    int64_t o, c;
    block_of(NTOK, EVEN, &o, &c);
    real *lg = malloc((size_t)(H * c + 1) * sizeof *lg);
    int64_t off[2] = {0, NTOK};
    enum { UP, NOTNUM, DIFFER, ON_ONE, OFFSETS, MEET, GATE_UP, CASES };
    for (int t = 0; t < CASES; t++) {
        double hd[H] = {-0.1, -0.2};
        for (int64_t i = 0; i < H * c; i++)
            lg[i] = (real)-0.01;
        P(extras) ex;
        P(extras_init)(&ex);
        ex.head_decays = hd;
        int want = -15;
        switch (t) {
        case UP: hd[1] = 0.5; break;
        case NOTNUM: hd[0] = NAN; break;
        case DIFFER:
            if (mt_rank == 0)
                hd[1] = -0.3;
            want = mt_size > 1 ? LINATTN_EMISMATCH : 0;
            break;
        case ON_ONE:
            if (mt_rank == mt_size - 1)
                ex.head_decays = NULL;
            want = mt_size > 1 ? LINATTN_EMISMATCH : 0;
            break;
        case OFFSETS: ex.offsets = off, ex.nseq = 1; break;
        case MEET: /* gates inside out (an input meeting an output) */
            ex.gates = out.a + o * 2;
            want = c > 0 ? -13 : 0;
            if (mt_size > 1 || c == 0) {
                int any = 0, mine = c > 0;
                MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, WORLD);
                want = any ? -13 : 0;
            }
            break;
        default:
            ex.gates = lg;
            if (mt_rank == mt_size - 1 && c > 0)
                lg[H * c - 1] = (real)0.25;
            {
                int any = 0, mine = mt_rank == mt_size - 1 && c > 0;
                MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, WORLD);
                want = any ? -15 : 0;
            }
            break;
        }
        fill(&out, SENTINEL);
        if (t == MEET) /* gates read from out: a finite pattern <= 0 */
            for (int64_t i = 0; i < H * NTOK * 2; i++)
                out.a[i] = (real)-0.5;
        linattn_where bad = {-5, -5, -5};
        int st = MP(batched_causal_ex)(p, WORLD, ROW, 1, H, c, q.a + o * 3, &sq, k.a + o * 3,
                                       &sq, v.a + o * 2, &sv, out.a + o * 2, &sv, &ex, &bad);
        MT_CHECK(st == want, "batched_causal_ex case %d: status %d, want %d", t, st, want);
        if (want && t != MEET)
            MT_CHECK(all_equal(&out, SENTINEL) && bad.row == -5,
                     "batched_causal_ex case %d: written on a refusal", t);
        if (want && t == MEET)
            MT_CHECK(all_equal(&out, (real)-0.5), "batched_causal_ex: out written on a refusal");
    }
    free(lg);
    tmat_free(&out);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
    P(plan_destroy)(p);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, LINATTN_MPI_THREAD_LEVEL);
    MT_RUN(causal_equals_serial);
    MT_RUN(packed_equals_serial);
    MT_RUN(later_tokens_isolated);
    MT_RUN(batched_equals_serial);
    MT_RUN(refusals_agreed);
    MT_RUN(backward_equals_serial);
    MT_RUN(backward_refuses_decay);
    MT_RUN(batched_ex_refusals);
    int status = mt_finish("mpi decay " PREC);
    MPI_Finalize();
    return status;
}
