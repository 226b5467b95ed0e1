/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mpi_packed.c -- the distributed _ex calls under mpirun (np 1 to 8),
 * compiled once per precision: a packed stream of sequences (empty ones,
 * one token long, longer than a rank's rows) with key weights (zeros
 * whose rows hold NaN), split over the ranks in every pattern of
 * mpidata.h (even, skewed with empty ranks, all on one rank), so that
 * sequences start, end and lie wholly inside ranks and cross several.
 * Every rank compares its rows, outputs and normalizers, with the serial
 * packed call on the whole stream; a sequence's outputs do not change,
 * bit for bit, when every other sequence's tokens do; bad offsets are
 * refused on every rank with nothing written.  Per-sequence states:
 * outputs as the serial call's from the same states, each final state
 * where the sequence's last row is as the serial call leaves it, every
 * other entry unchanged bit for bit, and every state unchanged when one
 * rank fails.
 */
#include <math.h>
#include "testutil.h"
#include "linattn_mpi.h"
#include "mpitest.h"
#include "mpidata.h"
#include "mpipacked.h"

/* The distributed call on this rank's rows [o, o + c) of the global
 * stream, outputs into the global out and den at those rows. */
static int distributed(const P(plan) *p, int causal, const tmat *q,
                       const tmat *k, const tmat *v, tmat *out, real *den,
                       const real *w, const int64_t *off, int64_t o, int64_t c,
                       int64_t *bad)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w ? w + o : NULL;
    ex.den = den + o;
    ex.offsets = off;
    ex.nseq = off ? NSEQ : 0;
    tmat lq = view(q, o, c), lk = view(k, o, c), lv = view(v, o, c);
    tmat lo = view(out, o, c);
    if (causal)
        return MP(causal_ex)(p, WORLD, q->layout, c, lq.a, lq.ld, lk.a, lk.ld,
                             lv.a, lv.ld, lo.a, lo.ld, &ex, bad);
    return MP(attention_ex)(p, WORLD, q->layout, c, c, lq.a, lq.ld, lk.a,
                            lk.ld, lv.a, lv.ld, lo.a, lo.ld, &ex, bad);
}

static int serial(const P(plan) *p, int causal, const tmat *q, const tmat *k,
                  const tmat *v, tmat *out, real *den, const real *w,
                  const int64_t *off)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ex.den = den;
    ex.offsets = off;
    ex.nseq = off ? NSEQ : 0;
    if (causal)
        return P(causal_ex)(p, q->layout, NTOK, q->a, q->ld, k->a, k->ld,
                            v->a, v->ld, out->a, out->ld, &ex, NULL);
    return P(attention_ex)(p, q->layout, NTOK, NTOK, q->a, q->ld, k->a, k->ld,
                           v->a, v->ld, out->a, out->ld, &ex, NULL);
}

static void make_stream(const map_case *mc, int layout, uint64_t seed,
                        tmat *q, tmat *k, tmat *v)
{
    *q = tmat_rand(layout, NTOK, 3, 1, mc->lo, mc->hi, &seed);
    *k = tmat_rand(layout, NTOK, 3, 2, mc->lo, mc->hi, &seed);
    *v = tmat_rand(layout, NTOK, 2, 0, -1, 1, &seed);
}

/* Packed (and one sequence: offsets NULL), weighted and not, causal and
 * not, 4 maps x 4 splits (each split in both layouts over the maps): every rank's rows and normalizers
 * as the serial packed call's; rows of other ranks untouched.  One rank:
 * the causal call is the serial one, bit for bit. */
static void packed_equals_serial(void)
{
    int64_t off[NSEQ + 1];
    offsets_of(off);
    for (int mi = 0; mi < MAP_CASES; mi++)
        for (int split = 0; split < SPLITS; split++)
            for (int variant = 0; variant < 3; variant++) {
                    /* both layouts, alternating over the splits */
                    int layout = (split + mi) % 2 ? COL : ROW;
                    const map_case *mc = &map_cases[mi];
                    /* 0: packed; 1: packed and weighted; 2: one sequence,
                     * weighted */
                    const int64_t *o = variant < 2 ? off : NULL;
                    P(plan) *p = make_plan(mc->map, 3, 2, 7, mc->scale, mc->denom, 0);
                    tmat q, k, v;
                    make_stream(mc, layout, 300 + (uint64_t)(mi * 16 + split * 4 + variant), &q, &k, &v);
                    real *w = variant ? make_weights(&k, &v, 77 + (uint64_t)split) : NULL;
                    tmat ref = tmat_like(&q, NTOK, 2, 1), out = tmat_like(&q, NTOK, 2, 1);
                    real rden[NTOK], den[NTOK];
                    int64_t ro, rc;
                    block_of(NTOK, split, &ro, &rc);
                    for (int causal = 0; causal < 2; causal++) {
                        fill(&out, SENTINEL);
                        for (int i = 0; i < NTOK; i++)
                            den[i] = SENTINEL;
                        int sts = serial(p, causal, &q, &k, &v, &ref, rden, w, o);
                        int64_t bad = -5;
                        int st = distributed(p, causal, &q, &k, &v, &out, den, w, o, ro, rc, &bad);
                        tmat lo = view(&out, ro, rc), lr = view(&ref, ro, rc);
                        double err = rel_diff(&lo, &lr), derr = vec_rel_diff(den + ro, rden + ro, rc);
                        MT_CHECK(sts == 0 && st == 0 && err < TOL && derr < TOL,
                                 "map %d denom %d layout %d split %d variant %d causal %d: "
                                 "status %d/%d, error %g, normalizers %g",
                                 mc->map, mc->denom, layout, split, variant, causal, sts, st, err, derr);
                        MT_CHECK(bad == -5, "bad_row written on success");
                        MT_CHECK(outside_untouched(&out, ro, rc, SENTINEL),
                                 "rows of other ranks, or padding, written");
                        int others = 1;
                        for (int64_t i = 0; i < NTOK; i++)
                            others &= (i >= ro && i < ro + rc) || den[i] == SENTINEL;
                        MT_CHECK(others, "normalizers of other ranks written");
                        if (mt_size == 1 && causal)
                            MT_CHECK(same_bits(&out, &ref), "np 1, variant %d: not the serial bits", variant);
                    }
                    free(w);
                    tmat_free(&ref), tmat_free(&out);
                    tmat_free(&q), tmat_free(&k), tmat_free(&v);
                    P(plan_destroy)(p);
                }
}

/* Every other sequence's tokens changed (new queries and keys, values
 * NaN) leave the watched sequence's outputs and normalizers the same,
 * bit for bit, on every rank and split, causal or not. */
static void sequences_isolated(void)
{
    int64_t off[NSEQ + 1];
    offsets_of(off);
    const map_case *mc = &map_cases[3];
    for (int split = 0; split < SPLITS; split++)
        for (int causal = 0; causal < 2; causal++) {
            P(plan) *p = make_plan(mc->map, 3, 2, 9, mc->scale, mc->denom, 0);
            tmat q, k, v, q2, k2, v2;
            make_stream(mc, ROW, 900 + (uint64_t)split, &q, &k, &v);
            make_stream(mc, ROW, 990 + (uint64_t)split, &q2, &k2, &v2);
            for (int64_t i = 0; i < NTOK; i++) {
                int mine = i >= off[WATCHED] && i < off[WATCHED + 1];
                for (int64_t t = 0; t < 3; t++) {
                    if (mine) {
                        *tmat_at(&q2, i, t) = *tmat_at(&q, i, t);
                        *tmat_at(&k2, i, t) = *tmat_at(&k, i, t);
                    }
                }
                for (int64_t t = 0; t < 2; t++)
                    *tmat_at(&v2, i, t) = mine ? *tmat_at(&v, i, t) : (real)NAN;
            }
            real *w = make_weights(&k, &v, 5), *w2 = malloc(NTOK * sizeof *w2);
            for (int64_t i = 0; i < NTOK; i++) {
                int mine = i >= off[WATCHED] && i < off[WATCHED + 1];
                w2[i] = mine ? w[i] : (real)(3.0 + (double)(i % 5));
                if (mine && w[i] == 0)
                    for (int64_t t = 0; t < 3; t++)
                        *tmat_at(&k2, i, t) = (real)NAN;
            }
            tmat a = tmat_like(&q, NTOK, 2, 0), b = tmat_like(&q, NTOK, 2, 0);
            real da[NTOK], db[NTOK];
            int64_t ro, rc;
            block_of(NTOK, split, &ro, &rc);
            int s1 = distributed(p, causal, &q, &k, &v, &a, da, w, off, ro, rc, NULL);
            int s2 = distributed(p, causal, &q2, &k2, &v2, &b, db, w2, off, ro, rc, NULL);
            int64_t lo = off[WATCHED] > ro ? off[WATCHED] : ro;
            int64_t hi = off[WATCHED + 1] < ro + rc ? off[WATCHED + 1] : ro + rc;
            int same = 1;
            for (int64_t i = lo; i < hi; i++) {
                same &= !memcmp(da + i, db + i, sizeof *da);
                for (int64_t t = 0; t < 2; t++)
                    same &= !memcmp(tmat_at(&a, i, t), tmat_at(&b, i, t), sizeof(real));
            }
            MT_CHECK(s1 == 0 && s2 == 0 && same, "split %d causal %d: status %d/%d, bits %s", split,
                     causal, s1, s2, same ? "same" : "differ");
            free(w), free(w2);
            tmat_free(&a), tmat_free(&b);
            tmat_free(&q), tmat_free(&k), tmat_free(&v);
            tmat_free(&q2), tmat_free(&k2), tmat_free(&v2);
            P(plan_destroy)(p);
        }
}

/* Per-sequence states, absorbed and not, causal and not, every map and
 * split: outputs and normalizers as the serial packed call's from the
 * same states; absorbing, sequence s's final state on the rank holding
 * its last row as the serial call leaves it (to rounding, the same
 * tokens) and on every other rank (an empty sequence: every rank) the
 * entry unchanged bit for bit; not absorbing, every state unchanged. */
static void states_equal_serial(void)
{
    int64_t off[NSEQ + 1];
    offsets_of(off);
    for (int mi = 0; mi < MAP_CASES; mi++)
        for (int split = 0; split < SPLITS; split++)
            for (int causal = 0; causal < 2; causal++)
                for (int absorb = 0; absorb < 2; absorb++) {
                    const map_case *mc = &map_cases[mi];
                    int layout = (split + mi + absorb) % 2 ? COL : ROW;
                    P(plan) *p = make_plan(mc->map, 3, 2, 7, mc->scale, mc->denom, 0);
                    int64_t d, m, e;
                    P(plan_dims)(p, &d, &m, &e);
                    int64_t len = m * (e + 1);
                    tmat q, k, v;
                    make_stream(mc, layout, 1300 + (uint64_t)(mi * 16 + split * 4 + causal), &q, &k,
                                &v);
                    real *w = make_weights(&k, &v, 31 + (uint64_t)split);
                    P(state) *mine[NSEQ], *ref[NSEQ], *orig[NSEQ];
                    make_states(p, mc, mine);
                    copy_states(p, mine, ref);
                    copy_states(p, mine, orig);
                    tmat rout = tmat_like(&q, NTOK, 2, 1), out = tmat_like(&q, NTOK, 2, 1);
                    real rden[NTOK], den[NTOK];
                    int64_t ro, rc;
                    block_of(NTOK, split, &ro, &rc);
                    fill(&out, SENTINEL);
                    P(extras) ex;
                    P(extras_init)(&ex);
                    ex.weights = w, ex.den = rden, ex.offsets = off, ex.nseq = NSEQ;
                    ex.states = ref, ex.absorb = absorb;
                    int sts = causal ? P(causal_ex)(p, layout, NTOK, q.a, q.ld, k.a, k.ld, v.a,
                                                    v.ld, rout.a, rout.ld, &ex, NULL)
                                     : P(attention_ex)(p, layout, NTOK, NTOK, q.a, q.ld, k.a, k.ld,
                                                       v.a, v.ld, rout.a, rout.ld, &ex, NULL);
                    tmat lq = view(&q, ro, rc), lk = view(&k, ro, rc), lv = view(&v, ro, rc);
                    tmat lo = view(&out, ro, rc), lr = view(&rout, ro, rc);
                    ex.weights = w + ro, ex.den = den + ro, ex.states = mine;
                    int64_t bad = -5;
                    int st = causal ? MP(causal_ex)(p, WORLD, layout, rc, lq.a, lq.ld, lk.a, lk.ld,
                                                    lv.a, lv.ld, lo.a, lo.ld, &ex, &bad)
                                    : MP(attention_ex)(p, WORLD, layout, rc, rc, lq.a, lq.ld, lk.a,
                                                       lk.ld, lv.a, lv.ld, lo.a, lo.ld, &ex, &bad);
                    double err = rel_diff(&lo, &lr), derr = vec_rel_diff(den + ro, rden + ro, rc);
                    MT_CHECK(sts == 0 && st == 0 && err < TOL && derr < TOL && bad == -5,
                             "map %d split %d causal %d absorb %d: status %d/%d, error %g, "
                             "normalizers %g",
                             mi, split, causal, absorb, sts, st, err, derr);
                    MT_CHECK(outside_untouched(&out, ro, rc, SENTINEL), "rows of other ranks written");
                    double *a = malloc((size_t)(len + 2) * sizeof *a);
                    double *b = malloc((size_t)(len + 2) * sizeof *b);
                    for (int s = 0; s < NSEQ; s++) {
                        if (absorb && holds_last(off, s, ro, rc)) {
                            int tok;
                            double serr = state_diff(mine[s], ref[s], len, &tok);
                            MT_CHECK(serr < TOL && tok,
                                     "map %d split %d causal %d: sequence %d's final state "
                                     "%g from the serial one, tokens %s",
                                     mi, split, causal, s, serr, tok ? "equal" : "differ");
                            continue;
                        }
                        state_bits(mine[s], len, a);
                        state_bits(orig[s], len, b);
                        MT_CHECK(!memcmp(a, b, (size_t)(len + 2) * sizeof *a),
                                 "map %d split %d causal %d absorb %d: sequence %d's state "
                                 "changed on a rank without its last row",
                                 mi, split, causal, absorb, s);
                    }
                    free(a), free(b);
                    free_states(mine), free_states(ref), free_states(orig);
                    free(w);
                    tmat_free(&rout), tmat_free(&out);
                    tmat_free(&q), tmat_free(&k), tmat_free(&v);
                    P(plan_destroy)(p);
                }
}

/* A normalizer below the policy on one rank (a query row of -1s under
 * LINATTN_DENOM_POSITIVE), absorbing: LINATTN_EDENOM at that global row on
 * every rank, and no rank's states changed, bit for bit (the finals
 * other ranks built are not written). */
static void states_unchanged_on_failure(void)
{
    int64_t off[NSEQ + 1];
    offsets_of(off);
    const map_case mc = {LINATTN_MAP_IDENTITY, LINATTN_DENOM_POSITIVE, 0, 0.1, 1};
    static const int64_t bad_rows[] = {NTOK - 1, 20, 0 + 1};
    for (int split = 0; split < SPLITS; split++)
        for (int c = 0; c < 3; c++)
            for (int causal = 0; causal < 2; causal++) {
                P(plan) *p = make_plan(mc.map, 3, 2, 7, 0, mc.denom, 0);
                int64_t d, m, e;
                P(plan_dims)(p, &d, &m, &e);
                int64_t len = m * (e + 1);
                tmat q, k, v;
                make_stream(&mc, ROW, 2100 + (uint64_t)split, &q, &k, &v);
                for (int64_t t = 0; t < 3; t++)
                    *tmat_at(&q, bad_rows[c], t) = -1;
                P(state) *mine[NSEQ], *orig[NSEQ];
                make_states(p, &mc, mine);
                copy_states(p, mine, orig);
                int64_t ro, rc;
                block_of(NTOK, split, &ro, &rc);
                tmat out = tmat_like(&q, NTOK, 2, 0);
                tmat lq = view(&q, ro, rc), lk = view(&k, ro, rc), lv = view(&v, ro, rc);
                tmat lo = view(&out, ro, rc);
                P(extras) ex;
                P(extras_init)(&ex);
                ex.offsets = off, ex.nseq = NSEQ, ex.states = mine, ex.absorb = 1;
                int64_t bad = -5;
                int st = causal ? MP(causal_ex)(p, WORLD, ROW, rc, lq.a, lq.ld, lk.a, lk.ld, lv.a,
                                                lv.ld, lo.a, lo.ld, &ex, &bad)
                                : MP(attention_ex)(p, WORLD, ROW, rc, rc, lq.a, lq.ld, lk.a, lk.ld,
                                                   lv.a, lv.ld, lo.a, lo.ld, &ex, &bad);
                MT_CHECK(st == LINATTN_EDENOM && bad == bad_rows[c],
                         "split %d row %lld causal %d: status %d, row %lld", split,
                         (long long)bad_rows[c], causal, st, (long long)bad);
                double *a = malloc((size_t)(len + 2) * sizeof *a);
                double *b = malloc((size_t)(len + 2) * sizeof *b);
                int same = 1;
                for (int s = 0; s < NSEQ; s++) {
                    state_bits(mine[s], len, a);
                    state_bits(orig[s], len, b);
                    same &= !memcmp(a, b, (size_t)(len + 2) * sizeof *a);
                }
                MT_CHECK(same, "split %d row %lld causal %d: a state changed on a failed call",
                         split, (long long)bad_rows[c], causal);
                free(a), free(b);
                free_states(mine), free_states(orig);
                tmat_free(&out);
                tmat_free(&q), tmat_free(&k), tmat_free(&v);
                P(plan_destroy)(p);
            }
}

/* One bad case of the offsets or extras: the status every rank must
 * return, causal (ex argument 13) and not (14), nothing written. */
typedef struct {
    const char *what;
    int causal_status, attention_status;
} bad_case;

/* The sums of an elu+1 state with d = 3, e = 2: m (e + 1). */
#define STATE_LEN 9

static void bad_offsets_refused(void)
{
    enum {
        DIFFER, SHORT_END, DECREASING_ON_ONE, KEY_OFFSETS, STATE, NEG_NSEQ, STATES_NULL,
        STATES_OTHER_PLAN, STATES_TWICE, ABSORB_NO_STATES, ABSORB_TWO, STATES_NO_OFFSETS,
        STATES_ON_ONE, ABSORB_ON_ONE, UNEVEN, CASES
    };
    static const bad_case cases[CASES] = {
        {"offsets differ across ranks", LINATTN_EMISMATCH, LINATTN_EMISMATCH},
        {"offsets end before the stream does", -13, -14},
        {"offsets decreasing on one rank", -13, -14},
        {"key offsets", -13, -14},
        {"a state", -13, -14},
        {"nseq < 0", -13, -14},
        {"a states entry NULL", -13, -14},
        {"a states entry of another plan", -13, -14},
        {"a state twice, absorbing", -13, -14},
        {"absorb without states", -13, -14},
        {"absorb = 2", -13, -14},
        {"states without offsets", -13, -14},
        {"states on one rank only", LINATTN_EMISMATCH, LINATTN_EMISMATCH},
        {"absorbing on one rank only", LINATTN_EMISMATCH, LINATTN_EMISMATCH},
        {"nq != nk with offsets", 0, -14},
    };
    const map_case *mc = &map_cases[0];
    P(plan) *p = make_plan(mc->map, 3, 2, 7, 0, mc->denom, 0);
    P(state) *s = NULL;
    P(state_create)(&s, p);
    P(plan) *other = make_plan(mc->map, 4, 2, 7, 0, mc->denom, 0);
    P(state) *sts[NSEQ], *foreign = NULL;
    P(state_create)(&foreign, other);
    int64_t pm, pe;
    P(plan_dims)(p, NULL, &pm, &pe);
    MT_CHECK(pm * (pe + 1) == STATE_LEN, "elu+1 with d = 3, e = 2: %lld sums",
             (long long)(pm * (pe + 1)));
    tmat q, k, v;
    make_stream(mc, ROW, 4242, &q, &k, &v);
    int64_t ro, rc;
    block_of(NTOK, EVEN, &ro, &rc);
    tmat out = tmat_like(&q, NTOK, 2, 0);
    for (int c = 0; c < CASES; c++)
        for (int causal = 0; causal < 2; causal++) {
            int want = causal ? cases[c].causal_status : cases[c].attention_status;
            if (!want)
                continue;
            int64_t off[NSEQ + 1];
            offsets_of(off);
            P(extras) ex;
            P(extras_init)(&ex);
            ex.offsets = off;
            ex.nseq = NSEQ;
            make_states(p, mc, sts);
            double bits[NSEQ][STATE_LEN + 2], after[STATE_LEN + 2];
            for (int i = 0; i < NSEQ; i++)
                state_bits(sts[i], STATE_LEN, bits[i]);
            P(state) *held[NSEQ];
            memcpy(held, sts, sizeof held);
            int64_t nk = rc;
            switch (c) {
            case DIFFER:
                if (mt_rank == 0 && mt_size > 1)
                    off[2] += 1;
                if (mt_size == 1)
                    want = 0; /* nothing to differ from */
                break;
            case SHORT_END: off[NSEQ] -= 1; break;
            case DECREASING_ON_ONE:
                if (mt_rank == mt_size - 1)
                    off[3] = off[2] - 1;
                break;
            case KEY_OFFSETS: ex.key_offsets = off; break;
            case STATE: ex.state = s; break;
            case NEG_NSEQ: ex.nseq = -1; break;
            case STATES_NULL: ex.states = sts, sts[NSEQ - 1] = NULL; break;
            case STATES_OTHER_PLAN: ex.states = sts, sts[2] = foreign; break;
            case STATES_TWICE: ex.states = sts, ex.absorb = 1, sts[5] = sts[1]; break;
            case ABSORB_NO_STATES: ex.absorb = 1; break;
            case ABSORB_TWO: ex.states = sts, ex.absorb = 2; break;
            case STATES_NO_OFFSETS:
                ex.states = sts, ex.offsets = NULL, ex.nseq = 0;
                break;
            case STATES_ON_ONE:
            case ABSORB_ON_ONE:
                ex.states = c == ABSORB_ON_ONE || mt_rank == 0 ? sts : NULL;
                ex.absorb = c == ABSORB_ON_ONE && mt_rank == 0;
                if (mt_size == 1)
                    want = 0; /* nothing to differ from */
                break;
            default:
                if (mt_rank == 0)
                    nk = rc > 0 ? rc - 1 : 0;
                if (mt_rank == 0 && rc == 0)
                    want = 0;
                break;
            }
            /* UNEVEN refuses on rank 0 only when it has rows: then everyone */
            if (c == UNEVEN) {
                int any = 0, mine = mt_rank == 0 && rc > 0;
                MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, WORLD);
                want = any ? want : 0;
            }
            fill(&out, SENTINEL);
            tmat lq = view(&q, ro, rc), lk = view(&k, ro, rc), lv = view(&v, ro, rc);
            tmat lo = view(&out, ro, rc);
            int64_t bad = -5;
            int st = causal ? MP(causal_ex)(p, WORLD, ROW, rc, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld,
                                            lo.a, lo.ld, &ex, &bad)
                            : MP(attention_ex)(p, WORLD, ROW, rc, nk, lq.a, lq.ld, lk.a, lk.ld, lv.a,
                                               lv.ld, lo.a, lo.ld, &ex, &bad);
            MT_CHECK(st == want, "%s (causal %d): status %d, want %d", cases[c].what, causal, st, want);
            if (want)
                MT_CHECK(all_equal(&out, SENTINEL) && bad == -5, "%s: written on a refusal",
                         cases[c].what);
            int same = 1;
            for (int i = 0; i < NSEQ; i++) {
                state_bits(held[i], STATE_LEN, after);
                same &= !memcmp(after, bits[i], sizeof after);
            }
            MT_CHECK(same || !want, "%s: a state changed on a refusal", cases[c].what);
            free_states(held);
        }
    P(state_destroy)(foreign);
    P(plan_destroy)(other);
    tmat_free(&out);
    tmat_free(&q), tmat_free(&k), tmat_free(&v);
    P(state_destroy)(s);
    P(plan_destroy)(p);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, LINATTN_MPI_THREAD_LEVEL);
    MT_RUN(packed_equals_serial);
    MT_RUN(sequences_isolated);
    MT_RUN(states_equal_serial);
    MT_RUN(states_unchanged_on_failure);
    MT_RUN(bad_offsets_refused);
    int status = mt_finish("mpi packed " PREC);
    MPI_Finalize();
    return status;
}
