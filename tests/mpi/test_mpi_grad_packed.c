/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mpi_grad_packed.c -- the distributed backward of a packed stream
 * under mpirun (np 1 to 8), compiled once per precision.  The stream of
 * mpipacked.h (10 sequences, 97 tokens: empty ones first, inside and last
 * but one, one of a single token, one of 30 across rank boundaries) over
 * every split pattern of mpidata.h (even, skewed with empty ranks, all on
 * the last, all on the first), so that sequences start, end and lie
 * wholly inside ranks and cross several: the distributed packed forward
 * with normalizers, then the distributed packed backward, every rank's
 * dq, dk, dv, dL/dw, the summed dW and db, and (causal) the gradients of
 * the sequences' starting states on the rank holding each sequence's
 * first row, against the serial packed backward on the whole stream
 * (1e-12 in double, 1e-5 in float), for the five maps of mpigrad.h,
 * causal and not, both layouts, without and with key weights (zeros
 * whose rows hold NaN) and per-sequence starting states; an empty
 * sequence's gradient 0 on every rank, every other rank's entries left
 * as they were.  Then the collective refusals: the same status on every
 * rank, nothing written anywhere.
 */
#include <float.h>
#include <math.h>
#include "testutil.h"
#include "linattn_mpi.h"
#include "mpitest.h"
#include "mpidata.h"

#define D 3
#define E 2
#include "mpigrad.h"
#include "mpipacked.h"

/* The sentinel of the gradients of the starting states. */
#define DSENT (-7.5)

/* The packed forward (out, den) and backward of the whole stream,
 * serially; the causal one from states (NULL: none) with their
 * gradients into dstates (NULL: not asked for). */
static int serial(const P(plan) *p, int causal, const tmat *q, const tmat *k,
                  const tmat *v, const tmat *g, const real *w, int trained,
                  const int64_t *off, P(state) *const *states, tmat *out,
                  real *den, grads *r, double *dstates, int64_t *bad)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w, ex.den = den, ex.offsets = off, ex.nseq = NSEQ;
    ex.states = causal ? states : NULL;
    int64_t ldw = q->layout == COL ? 4 : D;
    int st = causal ? P(causal_ex)(p, q->layout, NTOK, q->a, q->ld, k->a, k->ld,
                                   v->a, v->ld, out->a, out->ld, &ex, NULL)
                    : P(attention_ex)(p, q->layout, NTOK, NTOK, q->a, q->ld,
                                      k->a, k->ld, v->a, v->ld, out->a,
                                      out->ld, &ex, NULL);
    if (st)
        return st;
    ex.den = NULL;
    ex.dweights = w ? r->dkw : NULL;
    ex.dstates = causal && states ? dstates : NULL;
    if (causal)
        return P(causal_backward_ex)(
            p, q->layout, NTOK, q->a, q->ld, k->a, k->ld, v->a, v->ld, out->a,
            out->ld, den, g->a, g->ld, r->dq.a, r->dq.ld, r->dk.a, r->dk.ld,
            r->dv.a, r->dv.ld, trained ? r->dw : NULL, ldw,
            trained ? r->db : NULL, &ex, bad);
    return P(attention_backward_ex)(
        p, q->layout, NTOK, NTOK, q->a, q->ld, k->a, k->ld, v->a, v->ld,
        out->a, out->ld, den, g->a, g->ld, r->dq.a, r->dq.ld, r->dk.a,
        r->dk.ld, r->dv.a, r->dv.ld, trained ? r->dw : NULL, ldw,
        trained ? r->db : NULL, NULL, &ex, bad);
}

/* The same, distributed: this rank's rows [o, o + c) of the stream. */
static int distributed(const P(plan) *p, int causal, const tmat *q,
                       const tmat *k, const tmat *v, const tmat *g,
                       const real *w, int trained, const int64_t *off,
                       P(state) *const *states, int64_t o, int64_t c,
                       tmat *out, real *den, grads *r, double *dstates,
                       int64_t *bad)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w ? w + o : NULL, ex.den = den + o;
    ex.offsets = off, ex.nseq = NSEQ;
    ex.states = causal ? states : NULL;
    int layout = q->layout, st;
    int64_t ldw = layout == COL ? 4 : D;
    if (causal)
        st = MP(causal_ex)(p, WORLD, layout, c, row_of(q, o), q->ld,
                           row_of(k, o), k->ld, row_of(v, o), v->ld,
                           row_of(out, o), out->ld, &ex, bad);
    else
        st = MP(attention_ex)(p, WORLD, layout, c, c, row_of(q, o), q->ld,
                              row_of(k, o), k->ld, row_of(v, o), v->ld,
                              row_of(out, o), out->ld, &ex, bad);
    if (st)
        return st;
    ex.den = NULL;
    ex.dweights = w ? r->dkw + o : NULL;
    ex.dstates = causal && states ? dstates : NULL;
    if (causal)
        return MP(causal_backward_ex)(
            p, WORLD, layout, c, row_of(q, o), q->ld, row_of(k, o), k->ld,
            row_of(v, o), v->ld, row_of(out, o), out->ld, den + o,
            row_of(g, o), g->ld, row_of(&r->dq, o), r->dq.ld,
            row_of(&r->dk, o), r->dk.ld, row_of(&r->dv, o), r->dv.ld,
            trained ? r->dw : NULL, ldw, trained ? r->db : NULL, &ex, bad);
    return MP(attention_backward_ex)(
        p, WORLD, layout, c, c, row_of(q, o), q->ld, row_of(k, o), k->ld,
        row_of(v, o), v->ld, row_of(out, o), out->ld, den + o, row_of(g, o),
        g->ld, row_of(&r->dq, o), r->dq.ld, row_of(&r->dk, o), r->dk.ld,
        row_of(&r->dv, o), r->dv.ld, trained ? r->dw : NULL, ldw,
        trained ? r->db : NULL, NULL, &ex, bad);
}

/* max |a - b| / max |b| over n doubles (the absolute difference when b
 * is 0). */
static double dvec_diff(const double *a, const double *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num = fmax(num, fabs(a[i] - b[i]));
        den = fmax(den, fabs(b[i]));
    }
    return den > 0 ? num / den : num;
}

/* This rank's rows [o, o + c) of a against b's, relative to the largest
 * entry of all of b: a rank whose rows hold only a sequence's first
 * token has dq = 0 there (its output is its own value), and a relative
 * measure over those rows alone would compare rounding with rounding. */
static double rows_diff(const tmat *a, const tmat *b, int64_t o, int64_t c)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < b->rows; i++)
        for (int64_t t = 0; t < b->cols; t++) {
            double y = *tmat_at(b, i, t);
            den = fmax(den, fabs(y));
            if (i >= o && i < o + c)
                num = fmax(num, fabs(*tmat_at(a, i, t) - y));
        }
    return den > 0 ? num / den : num;
}

/* Every map, split, layout, causal and not, without and with weights
 * and (causal) starting states: this rank's gradients, the sums dW, db
 * and the starting states' gradients as the serial packed backward's of
 * the whole stream; other ranks' rows and entries untouched. */
static void packed_grad_equals_serial(void)
{
    int64_t off[NSEQ + 1];
    offsets_of(off);
    for (int ci = 0; ci < CASES; ci++)
        for (int split = 0; split < SPLITS; split++)
            for (int causal = 0; causal < 2; causal++)
                for (int variant = 0; variant < 2; variant++) {
                    const gcase *gc = &cases[ci];
                    int layout = (ci + split + variant) % 2 ? COL : ROW;
                    int trained = gc->map == LINATTN_MAP_CUSTOM;
                    uint64_t seed = 300 + (uint64_t)(ci * 32 + split * 4 + causal * 2 +
                                                     variant);
                    P(plan) *p = plan_of(gc, 11 + (uint64_t)ci);
                    int64_t m, e;
                    P(plan_dims)(p, NULL, &m, &e);
                    int64_t len = m * (e + 1);
                    tmat q = tmat_rand(layout, NTOK, D, 1, gc->lo, gc->hi, &seed);
                    tmat k = tmat_rand(layout, NTOK, D, 2, gc->lo, gc->hi, &seed);
                    tmat v = tmat_rand(layout, NTOK, E, 0, -1, 1, &seed);
                    tmat g = tmat_rand(layout, NTOK, E, 1, -1, 1, &seed);
                    real *w = variant ? make_weights(&k, &v, seed) : NULL;
                    P(state) *st0[NSEQ], **states = NULL;
                    if (variant && causal) {
                        make_states(p, &map_cases[0], st0);
                        states = st0;
                    }
                    double *rds = malloc((size_t)(NSEQ * len) * sizeof *rds);
                    double *ds = malloc((size_t)(NSEQ * len) * sizeof *ds);
                    for (int64_t i = 0; i < NSEQ * len; i++)
                        rds[i] = ds[i] = DSENT;
                    tmat ro = tmat_like(&q, NTOK, E, 1), mo = tmat_like(&q, NTOK, E, 1);
                    real rden[NTOK], mden[NTOK];
                    grads ref = grads_new(&q, NTOK, NTOK), mine = grads_new(&q, NTOK, NTOK);
                    int64_t o, c, bad = -5;
                    block_of(NTOK, split, &o, &c);
                    int sts = serial(p, causal, &q, &k, &v, &g, w, trained, off, states, &ro,
                                     rden, &ref, rds, NULL);
                    int st = distributed(p, causal, &q, &k, &v, &g, w, trained, off, states,
                                         o, c, &mo, mden, &mine, ds, &bad);
                    double eq = rows_diff(&mine.dq, &ref.dq, o, c);
                    double ek = rows_diff(&mine.dk, &ref.dk, o, c);
                    double ev = rows_diff(&mine.dv, &ref.dv, o, c);
                    double ew = trained ? vec_rel_diff(mine.dw, ref.dw, 4 * D) : 0;
                    double eb = trained ? vec_rel_diff(mine.db, ref.db, 4) : 0;
                    double ekw = w ? vec_rel_diff(mine.dkw + o, ref.dkw + o, c) : 0;
                    MT_CHECK(sts == 0 && st == 0 && eq < TOL && ek < TOL && ev < TOL &&
                                 ew < TOL && eb < TOL && ekw < TOL,
                             "map %d act %d split %d causal %d variant %d layout %d: "
                             "status %d/%d, dq %g dk %g dv %g dW %g db %g dw %g",
                             gc->map, gc->act, split, causal, variant, layout, sts, st, eq,
                             ek, ev, ew, eb, ekw);
                    MT_CHECK(bad == -5, "bad_row written on success");
                    MT_CHECK(outside_untouched(&mine.dq, o, c, SENTINEL) &&
                                 outside_untouched(&mine.dk, o, c, SENTINEL) &&
                                 outside_untouched(&mine.dv, o, c, SENTINEL),
                             "rows of other ranks, or padding, written");
                    int others = 1;
                    for (int64_t i = 0; w && i <= NTOK; i++)
                        others &= (i >= o && i < o + c) || mine.dkw[i] == SENTINEL;
                    MT_CHECK(others, "dL/dw of other ranks written");
                    for (int s = 0; states && sts == 0 && s < NSEQ; s++) {
                        const double *x = ds + s * len, *y = rds + s * len;
                        int empty = off[s + 1] == off[s];
                        int here = !empty && off[s] >= o && off[s] < o + c;
                        if (here) {
                            double err = dvec_diff(x, y, len);
                            MT_CHECK(err < TOL, "map %d split %d: sequence %d's dstates %g",
                                     gc->map, split, s, err);
                            continue;
                        }
                        int zero = 1, kept = 1;
                        for (int64_t t = 0; t < len; t++)
                            zero &= x[t] == 0, kept &= x[t] == DSENT;
                        MT_CHECK(empty ? zero : kept,
                                 "map %d split %d: sequence %d's dstates %s", gc->map,
                                 split, s, empty ? "not 0" : "written off its first row");
                    }
                    if (mt_size == 1 && causal)
                        MT_CHECK(same_bits(&mine.dq, &ref.dq) &&
                                     same_bits(&mine.dk, &ref.dk) &&
                                     same_bits(&mine.dv, &ref.dv),
                                 "np 1, map %d variant %d: not the serial bits", gc->map,
                                 variant);
                    if (states)
                        free_states(st0);
                    free(w), free(rds), free(ds);
                    grads_free(&ref), grads_free(&mine);
                    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
                    tmat_free(&ro), tmat_free(&mo);
                    P(plan_destroy)(p);
                }
}

/* The refusals of a packed backward: the same status on every rank and
 * nothing written anywhere (gradients, dW, db, dL/dw, dstates); a bad
 * normalizer on one rank is every rank's LINATTN_EDENOM at its global
 * row. */
static void packed_grad_refusals(void)
{
    enum {
        DIFFER, SHORT_END, DECREASING_ON_ONE, STATES_NONCAUSAL, DSTATES_NO_STATES,
        HANDED_STATE, STATES_OTHER_PLAN, DSTATES_MEET_DQ, STATES_ON_ONE, DSTATES_ON_ONE,
        UNEVEN, KEY_OFFSETS, ABSORB, BAD_DEN, CASES_R
    };
    static const char *names[CASES_R] = {
        "offsets differ across ranks", "offsets end before the stream does",
        "offsets decreasing on one rank", "states, non-causal",
        "dstates without states", "a handed state with offsets",
        "a state of another plan", "dstates meeting dq", "states on one rank only",
        "dstates on one rank only", "nq != nk with offsets", "key offsets",
        "absorb", "a normalizer 0 on one rank"};
    const gcase *gc = &cases[3]; /* a trained map: dW and db too */
    P(plan) *p = plan_of(gc, 3), *other = plan_of(&cases[4], 3);
    int64_t m, e;
    P(plan_dims)(p, NULL, &m, &e);
    int64_t len = m * (e + 1);
    uint64_t seed = 44;
    tmat q = tmat_rand(ROW, NTOK, D, 0, gc->lo, gc->hi, &seed);
    tmat k = tmat_rand(ROW, NTOK, D, 0, gc->lo, gc->hi, &seed);
    tmat v = tmat_rand(ROW, NTOK, E, 0, -1, 1, &seed);
    tmat g = tmat_rand(ROW, NTOK, E, 0, -1, 1, &seed);
    tmat out = tmat_like(&q, NTOK, E, 0);
    real den[NTOK];
    int64_t off0[NSEQ + 1];
    offsets_of(off0);
    int64_t o, c;
    block_of(NTOK, EVEN, &o, &c);
    P(state) *sts[NSEQ], *foreign = NULL;
    make_states(p, &map_cases[0], sts);
    P(state_create)(&foreign, other);
    /* the forward, from the same states, gives every rank out and den */
    P(extras) fx;
    P(extras_init)(&fx);
    fx.den = den + o, fx.offsets = off0, fx.nseq = NSEQ, fx.states = sts;
    int st = MP(causal_ex)(p, WORLD, ROW, c, row_of(&q, o), q.ld, row_of(&k, o), k.ld,
                           row_of(&v, o), v.ld, row_of(&out, o), out.ld, &fx, NULL);
    MT_CHECK(st == 0, "forward %d", st);
    /* the owner of global row 40 (inside the sequence of 30 tokens) */
    int64_t badrow = 40;
    grads r = grads_new(&q, NTOK, NTOK);
    double *ds = malloc((size_t)(NSEQ * len) * sizeof *ds);
    for (int t = 0; t < CASES_R; t++)
        for (int causal = 0; causal < 2; causal++) {
            int64_t off[NSEQ + 1];
            memcpy(off, off0, sizeof off);
            P(state) *held[NSEQ];
            memcpy(held, sts, sizeof held);
            P(extras) ex;
            P(extras_init)(&ex);
            ex.offsets = off, ex.nseq = NSEQ;
            ex.dweights = r.dkw + o;
            if (causal)
                ex.states = held, ex.dstates = ds;
            int arg = causal ? -25 : -27, want = arg;
            int64_t nk = c;
            P(state) *handed = NULL;
            real keep = 0;
            switch (t) {
            case DIFFER:
                if (mt_rank == 0)
                    off[2] += 1;
                want = mt_size > 1 ? LINATTN_EMISMATCH : 0;
                break;
            case SHORT_END: off[NSEQ] -= 1; break;
            case DECREASING_ON_ONE:
                if (mt_rank == mt_size - 1)
                    off[3] = off[2] - 1;
                break;
            case STATES_NONCAUSAL:
                ex.states = held;
                want = causal ? 0 : arg;
                break;
            case DSTATES_NO_STATES: ex.states = NULL, ex.dstates = ds; break;
            case HANDED_STATE:
                if (causal) {
                    want = 0;
                    break;
                }
                P(state_create)(&handed, p);
                break;
            case STATES_OTHER_PLAN:
                held[3] = foreign;
                want = causal ? arg : 0;
                break;
            case DSTATES_MEET_DQ:
                ex.dstates = (double *)(void *)r.dq.a;
                want = causal ? arg : 0;
                break;
            case STATES_ON_ONE:
            case DSTATES_ON_ONE:
                if (mt_rank == 0 && t == STATES_ON_ONE)
                    ex.states = NULL, ex.dstates = NULL;
                if (mt_rank == 0 && t == DSTATES_ON_ONE)
                    ex.dstates = NULL;
                want = causal && mt_size > 1 ? LINATTN_EMISMATCH : 0;
                break;
            case UNEVEN:
                if (mt_rank == 0 && c > 0)
                    nk = c - 1;
                want = causal ? 0 : arg;
                {
                    int any = 0, mine = mt_rank == 0 && c > 0;
                    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, WORLD);
                    want = any ? want : 0;
                }
                break;
            case KEY_OFFSETS: ex.key_offsets = off; break;
            case ABSORB: ex.absorb = 1; break;
            default: /* BAD_DEN */
                if (badrow >= o && badrow < o + c)
                    keep = den[badrow], den[badrow] = 0;
                want = LINATTN_EDENOM;
                break;
            }
            if (!want)
                continue; /* a call that runs: not a refusal */
            fill(&r.dq, SENTINEL), fill(&r.dk, SENTINEL), fill(&r.dv, SENTINEL);
            for (int i = 0; i <= NTOK; i++)
                r.dkw[i] = SENTINEL;
            for (int i = 0; i < 4 * D; i++)
                r.dw[i] = SENTINEL;
            for (int64_t i = 0; i < NSEQ * len; i++)
                ds[i] = DSENT;
            int64_t bad = -5;
            if (causal)
                st = MP(causal_backward_ex)(
                    p, WORLD, ROW, c, row_of(&q, o), q.ld, row_of(&k, o), k.ld,
                    row_of(&v, o), v.ld, row_of(&out, o), out.ld, den + o, row_of(&g, o),
                    g.ld, row_of(&r.dq, o), r.dq.ld, row_of(&r.dk, o), r.dk.ld,
                    row_of(&r.dv, o), r.dv.ld, r.dw, D, r.db, &ex, &bad);
            else
                st = MP(attention_backward_ex)(
                    p, WORLD, ROW, c, nk, row_of(&q, o), q.ld, row_of(&k, o), k.ld,
                    row_of(&v, o), v.ld, row_of(&out, o), out.ld, den + o, row_of(&g, o),
                    g.ld, row_of(&r.dq, o), r.dq.ld, row_of(&r.dk, o), r.dk.ld,
                    row_of(&r.dv, o), r.dv.ld, r.dw, D, r.db, handed, &ex, &bad);
            if (t == BAD_DEN && badrow >= o && badrow < o + c)
                den[badrow] = keep;
            MT_CHECK(st == want, "%s (causal %d): status %d, want %d", names[t], causal, st,
                     want);
            if (t == BAD_DEN)
                MT_CHECK(bad == badrow, "%s (causal %d): row %lld", names[t], causal,
                         (long long)bad);
            int kept = all_equal(&r.dq, SENTINEL) && all_equal(&r.dk, SENTINEL) &&
                       all_equal(&r.dv, SENTINEL) && r.dw[0] == SENTINEL &&
                       r.db[0] == SENTINEL && (t == BAD_DEN || bad == -5);
            for (int i = 0; i <= NTOK; i++)
                kept &= r.dkw[i] == SENTINEL;
            for (int64_t i = 0; t != DSTATES_MEET_DQ && i < NSEQ * len; i++)
                kept &= ds[i] == DSENT;
            MT_CHECK(kept, "%s (causal %d): written on a refusal", names[t], causal);
            P(state_destroy)(handed);
            MPI_Barrier(WORLD);
        }
    free(ds);
    grads_free(&r);
    free_states(sts);
    P(state_destroy)(foreign);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g), tmat_free(&out);
    P(plan_destroy)(p), P(plan_destroy)(other);
}

/* Gradients beyond the range from finite inputs (identity, queries of
 * 1e-6 with dL/dout a quarter of the largest value: g / den overflows):
 * LINATTN_EOVERFLOW, as the serial packed backward's, on every rank (the
 * agreement makes it one status) at the serial call's first row. */
static void packed_grad_overflow(void)
{
    int64_t off[NSEQ + 1];
    offsets_of(off);
    const gcase *gc = &cases[0];
    for (int split = 0; split < SPLITS; split++)
        for (int causal = 0; causal < 2; causal++) {
            P(plan) *p = plan_of(gc, 5);
            uint64_t seed = 77 + (uint64_t)split;
            tmat q = tmat_rand(ROW, NTOK, D, 0, gc->lo, gc->hi, &seed);
            tmat k = tmat_rand(ROW, NTOK, D, 0, gc->lo, gc->hi, &seed);
            tmat v = tmat_rand(ROW, NTOK, E, 0, -1, 1, &seed);
            tmat g = tmat_rand(ROW, NTOK, E, 0, 0.5, 1, &seed);
            for (int64_t i = 0; i < NTOK * D; i++)
                q.a[i] *= (real)1e-6;
            for (int64_t i = 0; i < NTOK * E; i++)
                g.a[i] *= (real)((sizeof(real) == 4 ? FLT_MAX : DBL_MAX) / 4);
            tmat ro = tmat_like(&q, NTOK, E, 0), mo = tmat_like(&q, NTOK, E, 0);
            real rden[NTOK], mden[NTOK];
            grads ref = grads_new(&q, NTOK, NTOK), mine = grads_new(&q, NTOK, NTOK);
            int64_t o, c, bad = -5, sbad = -5;
            block_of(NTOK, split, &o, &c);
            int sts = serial(p, causal, &q, &k, &v, &g, NULL, 0, off, NULL, &ro, rden, &ref,
                             NULL, &sbad);
            int st = distributed(p, causal, &q, &k, &v, &g, NULL, 0, off, NULL, o, c, &mo,
                                 mden, &mine, NULL, &bad);
            MT_CHECK(sts == LINATTN_EOVERFLOW && st == sts && bad == sbad,
                     "split %d causal %d: status %d row %lld, serial %d row %lld", split,
                     causal, st, (long long)bad, sts, (long long)sbad);
            grads_free(&ref), grads_free(&mine);
            tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
            tmat_free(&ro), tmat_free(&mo);
            P(plan_destroy)(p);
        }
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, LINATTN_MPI_THREAD_LEVEL);
    MT_RUN(packed_grad_equals_serial);
    MT_RUN(packed_grad_refusals);
    MT_RUN(packed_grad_overflow);
    int status = mt_finish("mpi grad packed " PREC);
    MPI_Finalize();
    return status;
}
