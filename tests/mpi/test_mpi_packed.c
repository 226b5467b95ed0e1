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
 * refused on every rank with nothing written.
 */
#include <math.h>
#include "testutil.h"
#include "linattn_mpi.h"
#include "mpitest.h"
#include "mpidata.h"

typedef struct {
    int map, denom;
    double scale, lo, hi;
} map_case;

static const map_case map_cases[] = {
    {LINATTN_MAP_ELU1, LINATTN_DENOM_POSITIVE, 0, -2, 2},
    {LINATTN_MAP_ELU1, LINATTN_DENOM_COUNT, 0, -2, 2},
    {LINATTN_MAP_IDENTITY, LINATTN_DENOM_NONZERO, 0, 0.05, 1},
    {LINATTN_MAP_FAVOR, LINATTN_DENOM_POSITIVE, 1, -1, 1},
};
#define MAP_CASES 4

/* The stream: 10 sequences, 97 tokens (empty ones first, inside and
 * last but one; one of a single token). */
static const int64_t lengths[] = {0, 13, 1, 0, 30, 2, 5, 0, 21, 25};
#define NSEQ 10
#define NTOK 97
/* The sequence whose outputs the isolation test watches (30 tokens:
 * across a rank boundary from 3 ranks on). */
#define WATCHED 4

static void offsets_of(int64_t *off)
{
    off[0] = 0;
    for (int s = 0; s < NSEQ; s++)
        off[s + 1] = off[s] + lengths[s];
}

/* Weights in [0.25, 2], every seventh 0 with its key and value rows NaN
 * (a weight 0 is never read). */
static real *make_weights(tmat *k, tmat *v, uint64_t seed)
{
    real *w = malloc(NTOK * sizeof *w);
    for (int64_t j = 0; j < NTOK; j++) {
        w[j] = (real)(0.25 + 1.75 * test_uniform(&seed));
        if (j % 7 == 3) {
            w[j] = 0;
            for (int64_t t = 0; t < k->cols; t++)
                *tmat_at(k, j, t) = (real)NAN;
            for (int64_t t = 0; t < v->cols; t++)
                *tmat_at(v, j, t) = (real)NAN;
        }
    }
    return w;
}

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

static double vec_diff(const real *a, const real *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - (double)b[i]));
        den = fmax(den, fabs((double)b[i]));
    }
    return den > 0 ? num / den : num;
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
                        double err = rel_diff(&lo, &lr), derr = vec_diff(den + ro, rden + ro, rc);
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

/* One bad case of the offsets or extras: the status every rank must
 * return, causal (ex argument 13) and not (14), nothing written. */
typedef struct {
    const char *what;
    int causal_status, attention_status;
} bad_case;

static void bad_offsets_refused(void)
{
    enum { DIFFER, SHORT_END, DECREASING_ON_ONE, KEY_OFFSETS, STATE, NEG_NSEQ, UNEVEN, CASES };
    static const bad_case cases[CASES] = {
        {"offsets differ across ranks", LINATTN_EMISMATCH, LINATTN_EMISMATCH},
        {"offsets end before the stream does", -13, -14},
        {"offsets decreasing on one rank", -13, -14},
        {"key offsets", -13, -14},
        {"a state", -13, -14},
        {"nseq < 0", -13, -14},
        {"nq != nk with offsets", 0, -14},
    };
    const map_case *mc = &map_cases[0];
    P(plan) *p = make_plan(mc->map, 3, 2, 7, 0, mc->denom, 0);
    P(state) *s = NULL;
    P(state_create)(&s, p);
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
        }
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
    MT_RUN(bad_offsets_refused);
    int status = mt_finish("mpi packed " PREC);
    MPI_Finalize();
    return status;
}
