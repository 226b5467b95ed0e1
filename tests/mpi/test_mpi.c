/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mpi.c -- liblinattn_mpi under mpirun (np 1 to 4), compiled once per
 * precision.  Every rank generates the same global sequence, takes its
 * block of rows (uneven splits, ranks without rows), runs the distributed
 * call, and compares its rows with the serial call on the whole sequence,
 * which every rank also runs.  The harness (mpitest.h) keeps the ranks in
 * step when a check fails.
 */
#include <pthread.h>
#include <unistd.h>
#include "testutil.h"
#include "linattn_mpi.h"
#include "mpitest.h"
#include "mpidata.h"
#include "pmpi.h"

/* The maps the equality tests run: exact (elu+1), signed exact (identity
 * with NONZERO normalizers on positive data), and FAVOR+ at input scale 1
 * with keys whose norms grow along the sequence (the shifts differ by
 * rank). */
typedef struct {
    int map, denom;
    double scale, lo, hi;
} map_case;

static const map_case map_cases[] = {
    {LINATTN_MAP_ELU1, LINATTN_DENOM_POSITIVE, 0, -2, 2},
    {LINATTN_MAP_IDENTITY, LINATTN_DENOM_NONZERO, 0, 0.05, 1},
    {LINATTN_MAP_FAVOR, LINATTN_DENOM_POSITIVE, 1, -1, 1},
    /* the count of keys a row sees: global nk, global i + 1 */
    {LINATTN_MAP_ELU1, LINATTN_DENOM_COUNT, 0, -2, 2},
};
#define MAP_CASES 4

/* Global Q, K, V of n rows; FAVOR's keys scaled by a factor that rises
 * and falls along the rows (norms up to about 4: exponents that differ by
 * several units across ranks, larger on some earlier ranks, smaller on
 * others; much larger norms underflow float normalizers, in the serial
 * call too). */
static void make_data(const map_case *mc, int layout, int64_t n, int64_t d,
                      int64_t e, uint64_t seed, tmat *q, tmat *k, tmat *v)
{
    *q = tmat_rand(layout, n, d, 1, mc->lo, mc->hi, &seed);
    *k = tmat_rand(layout, n, d, 2, mc->lo, mc->hi, &seed);
    *v = tmat_rand(layout, n, e, 0, -1, 1, &seed);
    if (mc->map == LINATTN_MAP_FAVOR)
        for (int64_t i = 0; i < n; i++)
            for (int64_t t = 0; t < d; t++)
                *tmat_at(k, i, t) = (real)(*tmat_at(k, i, t) * (0.2 + 2.0 * (double)((i * 37) % n) / (double)n));
}

/* ---- tests ---- */

/* The random maps draw W from the seed: every rank holds the same W, bit
 * for bit, and the same plan fingerprint. */
static void same_weights_on_every_rank(void)
{
    static const int maps[] = {LINATTN_MAP_FAVOR, LINATTN_MAP_FAVOR_HYP,
                               LINATTN_MAP_TRIG};
    for (int i = 0; i < 3; i++) {
        P(plan) *p = make_plan(maps[i], 6, 3, 2024, 0, 0, 0);
        int64_t rows = 0;
        P(plan_weights)(p, ROW, NULL, 0, &rows);
        real *w = malloc((size_t)(rows * 6) * sizeof *w);
        real *w0 = malloc((size_t)(rows * 6) * sizeof *w0);
        P(plan_weights)(p, ROW, w, 6, NULL);
        memcpy(w0, w, (size_t)(rows * 6) * sizeof *w);
        MPI_Bcast(w0, (int)(rows * 6 * (int64_t)sizeof *w0), MPI_BYTE, 0, WORLD);
        MT_CHECK(memcmp(w, w0, (size_t)(rows * 6) * sizeof *w) == 0, "map %d: W differs", maps[i]);
        uint64_t fp, lo, hi;
        P(plan_fingerprint)(p, &fp);
        MPI_Allreduce(&fp, &lo, 1, MPI_UINT64_T, MPI_MIN, WORLD);
        MPI_Allreduce(&fp, &hi, 1, MPI_UINT64_T, MPI_MAX, WORLD);
        MT_CHECK(lo == hi, "map %d: fingerprints differ", maps[i]);
        free(w), free(w0);
        P(plan_destroy)(p);
    }
}

/* Distributed non-causal and causal attention equal the serial call on
 * the concatenated sequence, for 4 map cases x 2 layouts x 4 splits (queries
 * and keys split differently for the non-causal call); rows of other
 * ranks are not written. */
static void distributed_equals_serial(void)
{
    int64_t n = 61, d = 3, e = 4;
    for (int mi = 0; mi < MAP_CASES; mi++)
        for (int layout = ROW; layout <= COL; layout++)
            for (int split = 0; split < SPLITS; split++) {
                const map_case *mc = &map_cases[mi];
                P(plan) *p = make_plan(mc->map, d, e, 7, mc->scale, mc->denom, 0);
                tmat q, k, v;
                make_data(mc, layout, n, d, e, 100 + (uint64_t)(mi * 8 + split), &q, &k, &v);
                tmat ref = tmat_like(&q, n, e, 1), out = tmat_like(&q, n, e, 1);
                int64_t qo, qn, ko, kn;
                block_of(n, split, &qo, &qn);
                block_of(n, (split + 1) % SPLITS, &ko, &kn);
                for (int causal = 0; causal < 2; causal++) {
                    if (causal)
                        ko = qo, kn = qn;
                    fill(&out, SENTINEL);
                    tmat lq = view(&q, qo, qn), lk = view(&k, ko, kn);
                    tmat lv = view(&v, ko, kn), lout = view(&out, qo, qn);
                    int st, sts;
                    if (causal) {
                        sts = P(causal)(p, layout, n, q.a, q.ld, k.a, k.ld, v.a, v.ld, ref.a, ref.ld, NULL);
                        st = MP(causal)(p, WORLD, layout, qn, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld, lout.a, lout.ld, NULL);
                    } else {
                        sts = P(attention)(p, layout, n, n, q.a, q.ld, k.a, k.ld, v.a, v.ld, ref.a, ref.ld, NULL);
                        st = MP(attention)(p, WORLD, layout, qn, kn, lq.a, lq.ld, lk.a, lk.ld, lv.a, lv.ld, lout.a, lout.ld, NULL);
                    }
                    tmat lref = view(&ref, qo, qn);
                    double err = rel_diff(&lout, &lref);
                    MT_CHECK(sts == 0 && st == 0 && err < TOL,
                             "map %d layout %d split %d causal %d: status %d/%d, error %g",
                             mc->map, layout, split, causal, sts, st, err);
                    MT_CHECK(outside_untouched(&out, qo, qn, SENTINEL),
                             "rows of other ranks, or padding, written");
                    /* one rank: the serial call, bit for bit */
                    if (mt_size == 1)
                        MT_CHECK(same_bits(&out, &ref), "np 1 not bit-identical (causal %d)", causal);
                }
                tmat_free(&ref), tmat_free(&out);
                free_data(&q, &k, &v);
                P(plan_destroy)(p);
            }
}

/* Changing the tokens after global position p (queries and keys larger,
 * values Inf and NaN) leaves every rank's outputs up to p bit-identical,
 * for p on several ranks and in several splits. */
static void causality_across_ranks(void)
{
    int64_t n = 57, d = 3, e = 2;
    static const int64_t ps[] = {0, 20, 37, 55};
    for (int mi = 0; mi < MAP_CASES; mi++)
        for (int split = 0; split < 2; split++)
            for (int pi = 0; pi < 4; pi++) {
                const map_case *mc = &map_cases[mi];
                int64_t p0 = ps[pi], off, cnt;
                block_of(n, split, &off, &cnt);
                P(plan) *p = make_plan(mc->map, d, e, 3, mc->scale, mc->denom, 0);
                tmat q, k, v;
                make_data(mc, ROW, n, d, e, 300 + (uint64_t)pi, &q, &k, &v);
                tmat o1 = tmat_like(&q, n, e, 0), o2 = tmat_like(&q, n, e, 0);
                for (int round = 0; round < 2; round++) {
                    tmat *o = round ? &o2 : &o1;
                    int st = MP(causal)(p, WORLD, ROW, cnt, view(&q, off, cnt).a, q.ld,
                                        view(&k, off, cnt).a, k.ld, view(&v, off, cnt).a,
                                        v.ld, o->a + off * e, e, NULL);
                    MT_CHECK(st == 0, "map %d split %d p %lld round %d: status %d", mc->map,
                             split, (long long)p0, round, st);
                    for (int64_t i = p0 + 1; i < n; i++) {
                        for (int64_t t = 0; t < d; t++) {
                            real *qi = tmat_at(&q, i, t), *ki = tmat_at(&k, i, t);
                            *qi = (real)(*qi * 1.5 + 0.5), *ki = (real)(*ki * 1.5);
                        }
                        for (int64_t t = 0; t < e; t++)
                            *tmat_at(&v, i, t) = (i + t) % 2 ? (real)INFINITY : (real)NAN;
                    }
                }
                int64_t hi = p0 + 1 < off + cnt ? p0 + 1 : off + cnt;
                for (int64_t i = off; i < hi; i++)
                    MT_CHECK(memcmp(o1.a + i * e, o2.a + i * e, (size_t)e * sizeof(real)) == 0,
                             "map %d split %d p %lld: row %lld changed", mc->map, split,
                             (long long)p0, (long long)i);
                tmat_free(&o1), tmat_free(&o2);
                free_data(&q, &k, &v);
                P(plan_destroy)(p);
            }
}

/* The batched calls, interleaved arrays [B][n][H][c] (row major, the
 * global n in the batch stride), equal the serial batched calls, and cost
 * one reduction for all problems (not observable here; doc/mpi.md). */
static void batched_equals_serial(void)
{
    int64_t B = 2, H = 3, n = 29, d = 2, e = 3;
    for (int mi = 0; mi < MAP_CASES; mi++)
        for (int split = 0; split < SPLITS; split++) {
            const map_case *mc = &map_cases[mi];
            P(plan) *p = make_plan(mc->map, d, e, 11, mc->scale, mc->denom, 0);
            uint64_t seed = 500 + (uint64_t)(mi * 4 + split);
            size_t nqk = (size_t)(B * n * H * d), nv = (size_t)(B * n * H * e);
            real *q = malloc(nqk * sizeof *q), *k = malloc(nqk * sizeof *k);
            real *v = malloc(nv * sizeof *v), *ref = malloc(nv * sizeof *ref);
            real *out = malloc(nv * sizeof *out);
            for (size_t i = 0; i < nqk; i++)
                q[i] = (real)(mc->lo + (mc->hi - mc->lo) * test_uniform(&seed)),
                k[i] = (real)(mc->lo + (mc->hi - mc->lo) * test_uniform(&seed));
            for (size_t i = 0; i < nv; i++)
                v[i] = (real)(2 * test_uniform(&seed) - 1);
            linattn_strides sqk = {H * d, n * H * d, d}, sv = {H * e, n * H * e, e};
            int64_t off, cnt;
            block_of(n, split, &off, &cnt);
            for (int causal = 0; causal < 2; causal++) {
                for (size_t i = 0; i < nv; i++)
                    out[i] = SENTINEL;
                linattn_where bad = {-5, -5, -5};
                int sts, st;
                const real *lq = q + off * H * d, *lk = k + off * H * d, *lv = v + off * H * e;
                real *lo = out + off * H * e;
                if (causal) {
                    sts = P(batched_causal)(p, ROW, B, H, n, q, &sqk, k, &sqk, v, &sv, ref, &sv, NULL);
                    st = MP(batched_causal)(p, WORLD, ROW, B, H, cnt, lq, &sqk, lk, &sqk, lv, &sv, lo, &sv, &bad);
                } else {
                    sts = P(batched_attention)(p, ROW, B, H, n, n, q, &sqk, k, &sqk, v, &sv, ref, &sv, NULL);
                    st = MP(batched_attention)(p, WORLD, ROW, B, H, cnt, cnt, lq, &sqk, lk, &sqk, lv, &sv, lo, &sv, &bad);
                }
                MT_CHECK(sts == 0 && st == 0 && bad.row == -5, "status %d/%d", sts, st);
                double num = 0, den = 0;
                for (int64_t b = 0; b < B; b++)
                    for (int64_t i = 0; i < n; i++)
                        for (int64_t c = 0; c < H * e; c++) {
                            size_t at = (size_t)((b * n + i) * H * e + c);
                            if (i >= off && i < off + cnt) {
                                num = fmax(num, fabs((double)out[at] - (double)ref[at]));
                                den = fmax(den, fabs((double)ref[at]));
                            } else {
                                MT_CHECK(out[at] == SENTINEL, "row %lld of another rank written", (long long)i);
                            }
                        }
                MT_CHECK(num <= TOL * den, "map %d split %d causal %d: %g of %g", mc->map,
                         split, causal, num, den);
            }
            free(q), free(k), free(v), free(ref), free(out);
            P(plan_destroy)(p);
        }
}

/* An invalid argument on one rank only: every rank returns that rank's
 * status (two ranks: the first one's), nothing is written anywhere, and
 * nothing hangs (run.sh's timeout). */
static void one_rank_bad_argument(void)
{
    int64_t n = 20, d = 2, e = 2, off, cnt;
    block_of(n, EVEN, &off, &cnt);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 1, 0, 0, 1);
    tmat q, k, v;
    plain_data(n, d, e, -1, 1, 9, &q, &k, &v);
    tmat out = tmat_like(&q, n, e, 0);
    int bad_rank = mt_size - 1;
    int me = mt_rank == bad_rank;
    const real *lq = q.a + off * d, *lk = k.a + off * d, *lv = v.a + off * e;
    real *lo = out.a + off * e;
    linattn_strides sqk = {d, 0, 0}, sv = {e, 0, 0}, shortld = {d - 1, 0, 0};
    for (int c = 0; c < 10; c++) {
        fill(&out, SENTINEL);
        int64_t bad_row = -3;
        linattn_where where = {-3, -3, -3};
        int st = 0, want = 0;
        switch (c) {
        case 0: /* q NULL with rows (every rank has rows: EVEN) */
            st = MP(attention)(p, WORLD, ROW, cnt, cnt, me ? NULL : lq, d, lk, d, lv, e, lo, e, &bad_row);
            want = -6;
            break;
        case 1: /* out's leading dimension one too short */
            st = MP(causal)(p, WORLD, ROW, cnt, lq, d, lk, d, lv, e, lo, me ? e - 1 : e, &bad_row);
            want = -12;
            break;
        case 2: /* layout */
            st = MP(causal)(p, WORLD, me ? 7 : ROW, cnt, lq, d, lk, d, lv, e, lo, e, &bad_row);
            want = -3;
            break;
        case 3: /* n < 0 on one rank, a short ld on rank 0: the first rank's */
            st = MP(causal)(p, WORLD, ROW, me ? -1 : cnt, lq, mt_rank == 0 ? d - 1 : d, lk, d,
                            lv, e, lo, e, &bad_row);
            want = mt_size > 1 ? -6 : -4;
            break;
        case 4: /* plan NULL */
            st = MP(attention)(me ? NULL : p, WORLD, ROW, cnt, cnt, lq, d, lk, d, lv, e, lo, e, NULL);
            want = -1;
            break;
        case 5: /* a NaN in one rank's values (the plan checks inputs) */
            if (me)
                v.a[(off + cnt - 1) * e] = (real)NAN;
            st = MP(attention)(p, WORLD, ROW, cnt, cnt, lq, d, lk, d, lv, e, lo, e, NULL);
            v.a[(off + cnt - 1) * e] = (real)0.25;
            want = LINATTN_ENONFINITE;
            break;
        case 6: /* batched: strides NULL */
            st = MP(batched_attention)(p, WORLD, ROW, 1, 1, cnt, cnt, lq, me ? NULL : &sqk, lk, &sqk,
                                       lv, &sv, lo, &sv, &where);
            want = -9;
            break;
        case 7: /* batched causal: a short leading dimension in k's strides */
            st = MP(batched_causal)(p, WORLD, ROW, 1, 1, cnt, lq, &sqk, lk, me ? &shortld : &sqk,
                                    lv, &sv, lo, &sv, &where);
            want = -10;
            break;
        case 8: /* batched: heads < 0 */
            st = MP(batched_causal)(p, WORLD, ROW, 1, me ? -1 : 1, cnt, lq, &sqk, lk, &sqk, lv,
                                    &sv, lo, &sv, &where);
            want = -5;
            break;
        case 9: /* MPI_COMM_NULL: refused where it is passed, no communication */
            st = MP(causal)(p, MPI_COMM_NULL, ROW, cnt, lq, d, lk, d, lv, e, lo, e, NULL);
            want = -2;
            break;
        }
        MT_CHECK(st == want, "case %d: status %d, want %d", c, st, want);
        MT_CHECK(all_equal(&out, SENTINEL), "case %d: output written", c);
        MT_CHECK(bad_row == -3 && where.row == -3, "case %d: bad_row written", c);
    }
    tmat_free(&out);
    free_data(&q, &k, &v);
    P(plan_destroy)(p);
}

/* Plans that differ on one rank (seed, eps, chunk, precision-level
 * options) or a batch shape that differs: LINATTN_EMISMATCH everywhere,
 * nothing written. */
static void mismatched_plans(void)
{
    int64_t n = 16, d = 2, e = 2, off, cnt;
    block_of(n, EVEN, &off, &cnt);
    int me = mt_rank == mt_size - 1;
    tmat q, k, v;
    plain_data(n, d, e, -1, 1, 19, &q, &k, &v);
    tmat out = tmat_like(&q, n, e, 0);
    for (int c = 0; c < 4; c++) {
        linattn_opts o;
        linattn_opts_init(&o);
        o.seed = 5;
        if (me && c == 0)
            o.seed = 6;
        if (me && c == 1)
            o.eps = 1e-3;
        if (me && c == 2)
            o.chunk = 9;
        P(plan) *p;
        P(plan_create)(&p, LINATTN_MAP_FAVOR, d, e, &o);
        fill(&out, SENTINEL);
        int st;
        if (c < 3) {
            st = c == 1 ? MP(attention)(p, WORLD, ROW, cnt, cnt, q.a + off * d, d, k.a + off * d,
                                        d, v.a + off * e, e, out.a + off * e, e, NULL)
                        : MP(causal)(p, WORLD, ROW, cnt, q.a + off * d, d, k.a + off * d, d,
                                     v.a + off * e, e, out.a + off * e, e, NULL);
        } else { /* heads 1 here, 2 there (same memory per problem) */
            linattn_strides sqk = {d, 0, 0}, sv = {e, 0, e * n};
            int64_t heads = me ? 1 : 2;
            real *o2 = malloc((size_t)(2 * n * e) * sizeof *o2);
            for (int64_t i = 0; i < 2 * n * e; i++)
                o2[i] = SENTINEL;
            st = MP(batched_causal)(p, WORLD, ROW, 1, heads, cnt, q.a + off * d, &sqk,
                                    k.a + off * d, &sqk, v.a + off * e, &sqk, o2 + off * e,
                                    &sv, NULL);
            for (int64_t i = 0; mt_size > 1 && i < 2 * n * e; i++)
                MT_CHECK(o2[i] == SENTINEL, "batched output written");
            free(o2);
        }
        int want = mt_size > 1 ? LINATTN_EMISMATCH : 0;
        MT_CHECK(st == want, "case %d: status %d, want %d", c, st, want);
        if (want)
            MT_CHECK(all_equal(&out, SENTINEL), "case %d: output written", c);
        P(plan_destroy)(p);
    }
    tmat_free(&out);
    free_data(&q, &k, &v);
}

/* A normalizer that breaks the policy on one rank: LINATTN_EDENOM on
 * every rank with the global row; with two bad rows, the first.  Rows
 * before the bad one are written on every rank. */
static void bad_normalizer_global_row(void)
{
    int64_t n = 30, d = 2, e = 2, off, cnt;
    block_of(n, EVEN, &off, &cnt);
    P(plan) *p = make_plan(LINATTN_MAP_IDENTITY, d, e, 1, 0, LINATTN_DENOM_POSITIVE, 0);
    tmat q, k, v;
    plain_data(n, d, e, 0.1, 1, 4, &q, &k, &v);
    tmat out = tmat_like(&q, n, e, 0);
    static const int64_t bads[][2] = {{25, -1}, {7, 22}, {0, 29}};
    for (int c = 0; c < 3; c++)
        for (int causal = 0; causal < 2; causal++) {
            for (int b = 0; b < 2; b++)
                if (bads[c][b] >= 0)
                    q.a[bads[c][b] * d] = q.a[bads[c][b] * d + 1] = -1;
            fill(&out, SENTINEL);
            int64_t row = -3;
            int st = causal
                ? MP(causal)(p, WORLD, ROW, cnt, q.a + off * d, d, k.a + off * d, d,
                             v.a + off * e, e, out.a + off * e, e, &row)
                : MP(attention)(p, WORLD, ROW, cnt, cnt, q.a + off * d, d, k.a + off * d, d,
                                v.a + off * e, e, out.a + off * e, e, &row);
            MT_CHECK(st == LINATTN_EDENOM && row == bads[c][0],
                     "case %d causal %d: status %d row %lld", c, causal, st, (long long)row);
            for (int64_t i = off; i < off + cnt && i < bads[c][0]; i++)
                MT_CHECK(out.a[i * e] != SENTINEL, "row %lld before the bad one not written", (long long)i);
            if (bads[c][0] >= off && bads[c][0] < off + cnt)
                MT_CHECK(out.a[bads[c][0] * e] == SENTINEL, "the bad row written");
            /* batched: two problems on the same data: the first one's */
            linattn_strides s = {d, 0, 0}, so = {e, n * e, 0};
            real *o2 = malloc((size_t)(2 * n * e) * sizeof *o2);
            linattn_where where = {-3, -3, -3};
            st = causal ? MP(batched_causal)(p, WORLD, ROW, 2, 1, cnt, q.a + off * d, &s,
                                             k.a + off * d, &s, v.a + off * e, &s, o2 + off * e,
                                             &so, &where)
                        : MP(batched_attention)(p, WORLD, ROW, 2, 1, cnt, cnt, q.a + off * d, &s,
                                                k.a + off * d, &s, v.a + off * e, &s,
                                                o2 + off * e, &so, &where);
            MT_CHECK(st == LINATTN_EDENOM && where.batch == 0 && where.head == 0 &&
                         where.row == bads[c][0],
                     "batched case %d causal %d: status %d at (%lld, %lld, %lld)", c, causal,
                     st, (long long)where.batch, (long long)where.head, (long long)where.row);
            free(o2);
            for (int b = 0; b < 2; b++)
                if (bads[c][b] >= 0)
                    q.a[bads[c][b] * d] = q.a[bads[c][b] * d + 1] = (real)0.5;
        }
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&out);
    P(plan_destroy)(p);
}

/* The state of rows [lo, hi) of the global keys. */
static P(state) *state_of(const P(plan) *p, const tmat *k, const tmat *v,
                          int64_t lo, int64_t hi)
{
    P(state) *s;
    P(state_create)(&s, p);
    tmat lk = view(k, lo, hi - lo), lv = view(v, lo, hi - lo);
    P(state_update)(s, k->layout, hi - lo, lk.a, lk.ld, lv.a, lv.ld);
    return s;
}

/* The sums a holds equal b's: tokens exactly, the accumulators brought
 * to b's shift within TOL (a shift is a key's largest exponent, which
 * GEMM's blocking may round differently by rank). */
static void check_same_sums(P(state) *a, P(state) *b, const char *what)
{
    const P(plan) *p;
    int64_t m, e, ta, tb;
    P(state_plan)(a, &p);
    P(plan_dims)(p, NULL, &m, &e);
    double *xa = malloc((size_t)(m * (e + 1)) * sizeof *xa);
    double *xb = malloc((size_t)(m * (e + 1)) * sizeof *xb);
    double sa, sb, num = 0, den = 0;
    P(state_export)(a, xa, &sa, &ta);
    P(state_export)(b, xb, &sb, &tb);
    for (int64_t i = 0; i < m * (e + 1); i++) {
        double ya = xa[i] * exp(sa - sb);
        num = fmax(num, fabs(ya - xb[i])), den = fmax(den, fabs(xb[i]));
    }
    MT_CHECK(ta == tb && fabs(sa - sb) <= TOL * (1 + fabs(sb)) && num <= TOL * den,
             "%s: tokens %lld/%lld shift %.17g/%.17g error %g of %g", what,
             (long long)ta, (long long)tb, sa, sb, num, den);
    free(xa), free(xb);
}

/* Bit-identical on every rank: rank 0's checkpoint bytes. */
static int same_everywhere(const P(state) *s)
{
    int64_t len;
    P(state_save_size)(s, &len);
    unsigned char *mine = malloc((size_t)len), *root = malloc((size_t)len);
    P(state_save)(s, mine, len, NULL);
    memcpy(root, mine, (size_t)len);
    MPI_Bcast(root, (int)len, MPI_BYTE, 0, WORLD);
    int same = memcmp(root, mine, (size_t)len) == 0, all;
    MPI_Allreduce(&same, &all, 1, MPI_INT, MPI_MIN, WORLD);
    free(mine), free(root);
    return all;
}

/* The state collectives against serial states of the concatenated keys:
 * three states in one call (elu+1 and FAVOR+ with growing keys, so the
 * shifts differ by rank), allreduce (the same bits everywhere) and
 * exscan (rank 0 empty); then their errors. */
static void state_collectives(void)
{
    int64_t n = 53, d = 3, e = 2;
    for (int mi = 0; mi < 3; mi += 2)
        for (int split = 0; split < SPLITS; split++) {
            const map_case *mc = &map_cases[mi];
            P(plan) *p = make_plan(mc->map, d, e, 8, mc->scale, mc->denom, 0);
            tmat q[3], k[3], v[3];
            P(state) *s[3], *x[3];
            int64_t off, cnt;
            block_of(n, split, &off, &cnt);
            for (int i = 0; i < 3; i++) {
                make_data(mc, ROW, n, d, e, 40 + (uint64_t)(i + 3 * split), &q[i], &k[i], &v[i]);
                s[i] = state_of(p, &k[i], &v[i], off, off + cnt);
                x[i] = state_of(p, &k[i], &v[i], off, off + cnt);
            }
            MT_CHECK(MP(state_allreduce)(s, 3, WORLD) == 0, "allreduce");
            MT_CHECK(MP(state_exscan)(x, 3, WORLD) == 0, "exscan");
            for (int i = 0; i < 3; i++) {
                P(state) *all = state_of(p, &k[i], &v[i], 0, n);
                P(state) *before = state_of(p, &k[i], &v[i], 0, off);
                check_same_sums(s[i], all, "allreduce");
                check_same_sums(x[i], before, "exscan");
                MT_CHECK(same_everywhere(s[i]), "allreduce: bits differ across ranks");
                P(state_destroy)(all), P(state_destroy)(before);
                P(state_destroy)(s[i]), P(state_destroy)(x[i]);
                free_data(&q[i], &k[i], &v[i]);
            }
            P(plan_destroy)(p);
        }
    /* errors: every state unchanged */
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 2, 2, 1, 0, 0, 0);
    P(plan) *other = make_plan(LINATTN_MAP_RELU, 2, 2, 1, 0, 0, 0);
    P(state) *a, *b, *c, *keep;
    real kv[4] = {1, 2, 3, 4};
    P(state_create)(&a, p), P(state_create)(&b, p), P(state_create)(&c, other);
    P(state_create)(&keep, p);
    P(state_update)(a, ROW, 2, kv, 2, kv, 2);
    P(state_copy)(keep, a);
    P(state) *ab[2] = {a, b}, *ac[2] = {a, c}, *an[2] = {a, NULL};
    int me = mt_rank == mt_size - 1;
    MT_CHECK(MP(state_allreduce)(me ? NULL : ab, 2, WORLD) == -1, "states NULL");
    MT_CHECK(MP(state_exscan)(me ? an : ab, 2, WORLD) == -1, "an entry NULL");
    MT_CHECK(MP(state_allreduce)(me ? ac : ab, 2, WORLD) == -1, "plans differ within");
    MT_CHECK(MP(state_exscan)(ab, me ? -1 : 2, WORLD) == -2, "count < 0");
    MT_CHECK(MP(state_allreduce)(ab, me ? 1 : 2, WORLD) == (mt_size > 1 ? LINATTN_EMISMATCH : 0),
             "count differs");
    if (mt_size == 1)
        P(state_copy)(a, keep); /* the np 1 case above succeeded */
    MT_CHECK(MP(state_allreduce)(ab, 2, MPI_COMM_NULL) == -3, "comm");
    MT_CHECK(MP(state_exscan)(NULL, 0, WORLD) == 0, "nothing");
    int64_t la, lk;
    P(state_save_size)(a, &la), P(state_save_size)(keep, &lk);
    unsigned char *ba = malloc((size_t)la), *bk = malloc((size_t)lk);
    P(state_save)(a, ba, la, NULL), P(state_save)(keep, bk, lk, NULL);
    MT_CHECK(memcmp(ba, bk, (size_t)la) == 0, "a state changed by a refused call");
    free(ba), free(bk);
    P(state_destroy)(a), P(state_destroy)(b), P(state_destroy)(c), P(state_destroy)(keep);
    P(plan_destroy)(p), P(plan_destroy)(other);
}

/* Collective checkpoint: the state every rank holds (after allreduce) is
 * saved, loaded into fresh states, and continued; it then equals the
 * uninterrupted run bit for bit.  A damaged file and a missing one are
 * refused with the same status on every rank, states unchanged; states
 * that differ across ranks are not saved. */
static void collective_checkpoint(void)
{
    int64_t n = 40, d = 3, e = 2, off, cnt;
    const map_case *mc = &map_cases[2];
    P(plan) *p = make_plan(mc->map, d, e, 21, mc->scale, mc->denom, 0);
    tmat q, k, v;
    make_data(mc, ROW, n, d, e, 61, &q, &k, &v);
    char dir[256], path[300];
    shared_dir(dir, sizeof dir);
    MT_CHECK(dir[0] != 0, "mkdtemp");
    snprintf(path, sizeof path, "%s/state.ck", dir);
    /* first half of the stream, reduced; then the second half */
    block_of(n / 2, SKEWED, &off, &cnt);
    P(state) *run = state_of(p, &k, &v, off, off + cnt);
    MT_CHECK(MP(state_allreduce)(&run, 1, WORLD) == 0, "allreduce");
    MT_CHECK(MP(state_save_file)(run, path, WORLD) == 0, "save");
    P(state) *back;
    P(state_create)(&back, p);
    MT_CHECK(MP(state_load_file)(back, path, WORLD) == 0, "load");
    block_of(n - n / 2, EVEN, &off, &cnt);
    P(state) *more1 = state_of(p, &k, &v, n / 2 + off, n / 2 + off + cnt);
    P(state) *more2 = state_of(p, &k, &v, n / 2 + off, n / 2 + off + cnt);
    MT_CHECK(MP(state_allreduce)(&more1, 1, WORLD) == 0 &&
             MP(state_allreduce)(&more2, 1, WORLD) == 0, "allreduce");
    P(state_merge)(run, more1);
    P(state_merge)(back, more2);
    int64_t len;
    P(state_save_size)(run, &len);
    unsigned char *b1 = malloc((size_t)len), *b2 = malloc((size_t)len);
    P(state_save)(run, b1, len, NULL), P(state_save)(back, b2, len, NULL);
    MT_CHECK(memcmp(b1, b2, (size_t)len) == 0, "continued run differs");
    /* damaged: one byte of the payload changed */
    if (mt_rank == 0) {
        FILE *f = fopen(path, "r+b");
        MT_CHECK(f && fseek(f, 100, SEEK_SET) == 0, "open");
        if (f) {
            int ch = fgetc(f);
            fseek(f, 100, SEEK_SET);
            fputc(ch ^ 0x10, f);
            fclose(f);
        }
    }
    MPI_Barrier(WORLD);
    MT_CHECK(MP(state_load_file)(back, path, WORLD) == LINATTN_EFORMAT, "damaged file");
    snprintf(path, sizeof path, "%s/missing.ck", dir);
    MT_CHECK(MP(state_load_file)(back, path, WORLD) == LINATTN_EIO, "missing file");
    P(state_save)(back, b1, len, NULL);
    MT_CHECK(memcmp(b1, b2, (size_t)len) == 0, "a refused load changed the state");
    /* a state that differs on one rank is not saved */
    snprintf(path, sizeof path, "%s/differs.ck", dir);
    if (mt_rank == mt_size - 1)
        P(state_merge)(back, more2);
    int st = MP(state_save_file)(back, path, WORLD);
    MT_CHECK(st == (mt_size > 1 ? LINATTN_EMISMATCH : 0), "differing states: %d", st);
    if (mt_rank == 0 && mt_size > 1)
        MT_CHECK(access(path, F_OK) != 0, "a file was written");
    /* argument errors on one rank */
    int me = mt_rank == mt_size - 1;
    MT_CHECK(MP(state_save_file)(back, me ? "" : path, WORLD) == -2, "empty path");
    MT_CHECK(MP(state_load_file)(me ? NULL : back, path, WORLD) == -1, "state NULL");
    if (mt_rank == 0) {
        unlink(path);
        snprintf(path, sizeof path, "%s/state.ck", dir);
        unlink(path);
        rmdir(dir);
    }
    free(b1), free(b2);
    P(state_destroy)(run), P(state_destroy)(back);
    P(state_destroy)(more1), P(state_destroy)(more2);
    free_data(&q, &k, &v);
    P(plan_destroy)(p);
}

/* Steps of the exclusive scan on rank r of P: one per distance 2^j < P
 * whose partner r XOR 2^j exists (rank 0: ceil(log2 P), the most). */
static int scan_steps(int rank, int size)
{
    int steps = 0;
    for (int dist = 1; dist < size; dist <<= 1)
        steps += (rank ^ dist) < size;
    return steps;
}

/* The exclusive prefix of states takes ceil(log2 P) exchanges (the most
 * on any rank; MPI_Exscan, a chain of P - 1 hops in Open MPI, is never
 * called), for state_exscan and the causal calls, and gives the state
 * of the ranks before (uneven splits, ranks without rows, np 1 to 8). */
static void exscan_in_log_steps(void)
{
    int64_t n = 47, d = 3, e = 2;
    int ceil_log2 = 0;
    while ((1 << ceil_log2) < mt_size)
        ceil_log2++;
    for (int mi = 0; mi < 3; mi += 2)
        for (int split = 0; split < SPLITS; split++) {
            const map_case *mc = &map_cases[mi];
            P(plan) *p = make_plan(mc->map, d, e, 8, mc->scale, mc->denom, 0);
            tmat q, k, v;
            make_data(mc, ROW, n, d, e, 70 + (uint64_t)split, &q, &k, &v);
            int64_t off, cnt;
            block_of(n, split, &off, &cnt);
            P(state) *x[2] = {state_of(p, &k, &v, off, off + cnt),
                              state_of(p, &q, &v, off, off + cnt)};
            pm_sendrecv_calls = pm_exscan_calls = 0;
            MT_CHECK(MP(state_exscan)(x, 2, WORLD) == 0, "exscan");
            int mine = pm_sendrecv_calls, most;
            MPI_Allreduce(&mine, &most, 1, MPI_INT, MPI_MAX, WORLD);
            MT_CHECK(mine == scan_steps(mt_rank, mt_size) && most == ceil_log2 &&
                         pm_exscan_calls == 0,
                     "state_exscan: %d exchanges here (%d most, want %d), %d MPI_Exscan",
                     mine, most, ceil_log2, pm_exscan_calls);
            P(state) *before = state_of(p, &k, &v, 0, off);
            P(state) *qbefore = state_of(p, &q, &v, 0, off);
            check_same_sums(x[0], before, "exscan");
            check_same_sums(x[1], qbefore, "exscan (second state)");
            /* the causal call: the same exchanges, and the serial result */
            tmat out = tmat_like(&q, n, e, 0), ref = tmat_like(&q, n, e, 0);
            pm_sendrecv_calls = pm_exscan_calls = 0;
            int st = MP(causal)(p, WORLD, ROW, cnt, q.a + off * d, d, k.a + off * d, d,
                                v.a + off * e, e, out.a + off * e, e, NULL);
            int sts = P(causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, ref.a, e, NULL);
            /* (float FAVOR+ may underflow a normalizer here: then both
             * report it) */
            MT_CHECK(st == sts && pm_sendrecv_calls == scan_steps(mt_rank, mt_size) &&
                         pm_exscan_calls == 0,
                     "causal: status %d (serial %d), %d exchanges, %d MPI_Exscan", st, sts,
                     pm_sendrecv_calls, pm_exscan_calls);
            tmat lo = view(&out, off, cnt), lr = view(&ref, off, cnt);
            if (!sts)
                MT_CHECK(rel_diff(&lo, &lr) < TOL, "causal: error %g", rel_diff(&lo, &lr));
            tmat_free(&out), tmat_free(&ref);
            P(state_destroy)(before), P(state_destroy)(qbefore);
            P(state_destroy)(x[0]), P(state_destroy)(x[1]);
            free_data(&q, &k, &v);
            P(plan_destroy)(p);
        }
}

/* Ranks in different collective calls (attention here, causal there; an
 * allreduce here, an exscan there; a save here, a load there): every rank
 * returns LINATTN_EMISMATCH, nothing written, states unchanged, nothing
 * hangs (run.sh's timeout). */
static void mismatched_calls(void)
{
    int64_t n = 12, d = 2, e = 2, off, cnt;
    block_of(n, EVEN, &off, &cnt);
    int me = mt_rank == mt_size - 1;
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 1, 0, 0, 0);
    tmat q, k, v;
    plain_data(n, d, e, -1, 1, 23, &q, &k, &v);
    tmat out = tmat_like(&q, n, e, 0);
    P(state) *s = state_of(p, &k, &v, off, off + cnt), *keep;
    P(state_create)(&keep, p);
    P(state_copy)(keep, s);
    char dir[256], path[300];
    shared_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/m.ck", dir);
    const real *lq = q.a + off * d, *lk = k.a + off * d, *lv = v.a + off * e;
    real *lo = out.a + off * e;
    linattn_strides sqk = {d, 0, 0}, sv = {e, 0, 0};
    for (int c = 0; c < 5; c++) {
        fill(&out, SENTINEL);
        int st;
        int other = me && mt_size > 1; /* the rank in the other call */
        switch (c) {
        case 0:
            st = other ? MP(causal)(p, WORLD, ROW, cnt, lq, d, lk, d, lv, e, lo, e, NULL)
                       : MP(attention)(p, WORLD, ROW, cnt, cnt, lq, d, lk, d, lv, e, lo, e, NULL);
            break;
        case 1:
            st = other ? MP(batched_causal)(p, WORLD, ROW, 1, 1, cnt, lq, &sqk, lk, &sqk, lv,
                                            &sv, lo, &sv, NULL)
                       : MP(batched_attention)(p, WORLD, ROW, 1, 1, cnt, cnt, lq, &sqk, lk,
                                               &sqk, lv, &sv, lo, &sv, NULL);
            break;
        case 2:
            st = other ? MP(state_exscan)(&s, 1, WORLD) : MP(state_allreduce)(&s, 1, WORLD);
            break;
        case 3:
            st = other ? MP(state_load_file)(s, path, WORLD)
                       : MP(state_save_file)(s, path, WORLD);
            break;
        default:
            st = other ? MP(state_allreduce)(&s, 1, WORLD)
                       : MP(attention)(p, WORLD, ROW, cnt, cnt, lq, d, lk, d, lv, e, lo, e, NULL);
            break;
        }
        if (mt_size == 1) { /* one call, nothing to mismatch */
            P(state_copy)(s, keep);
            if (c == 3)
                unlink(path);
            continue;
        }
        MT_CHECK(st == LINATTN_EMISMATCH, "case %d: status %d", c, st);
        MT_CHECK(all_equal(&out, SENTINEL), "case %d: output written", c);
        int64_t ls, lk2;
        P(state_save_size)(s, &ls), P(state_save_size)(keep, &lk2);
        unsigned char *b1 = malloc((size_t)ls), *b2 = malloc((size_t)lk2);
        P(state_save)(s, b1, ls, NULL), P(state_save)(keep, b2, lk2, NULL);
        MT_CHECK(memcmp(b1, b2, (size_t)ls) == 0, "case %d: state changed", c);
        free(b1), free(b2);
        if (mt_rank == 0)
            MT_CHECK(access(path, F_OK) != 0, "case %d: a file was written", c);
    }
    if (mt_rank == 0)
        rmdir(dir);
    tmat_free(&out);
    free_data(&q, &k, &v);
    P(state_destroy)(s), P(state_destroy)(keep);
    P(plan_destroy)(p);
}

/* States without tokens whose accumulators are not zero (imported, or
 * loaded from a checkpoint) are added as linattn_d_state_merge adds them:
 * allreduce and exscan equal the merges of every rank's state (of the
 * ranks before) in rank order, for an exact map (the shifted maps'
 * merges of such states depend on the order, in the merge too). */
static void empty_states_keep_accumulators(void)
{
    int64_t d = 2, e = 3, m, len;
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 1, 0, 0, 0);
    P(plan_dims)(p, NULL, &m, NULL);
    len = m * (e + 1);
    /* rank r's state: odd ranks without tokens but an accumulator */
    P(state) **all = malloc((size_t)mt_size * sizeof *all);
    double *acc = malloc((size_t)len * sizeof *acc);
    for (int r = 0; r < mt_size; r++) {
        uint64_t seed = 900 + (uint64_t)r;
        P(state_create)(&all[r], p);
        if (r % 2) {
            for (int64_t i = 0; i < len; i++)
                acc[i] = 2 * test_uniform(&seed) - 1;
            P(state_import)(all[r], acc, 0, 0);
        } else {
            tmat q, k, v;
            plain_data(3 + r, d, e, -1, 1, seed, &q, &k, &v);
            P(state_update)(all[r], ROW, 3 + r, k.a, d, v.a, e);
            free_data(&q, &k, &v);
        }
    }
    P(state) *sum, *before, *mine, *pre;
    P(state_create)(&sum, p), P(state_create)(&before, p);
    P(state_create)(&mine, p), P(state_create)(&pre, p);
    for (int r = 0; r < mt_size; r++) {
        if (r == mt_rank)
            P(state_copy)(before, sum);
        P(state_merge)(sum, all[r]);
    }
    P(state_copy)(mine, all[mt_rank]);
    P(state_copy)(pre, all[mt_rank]);
    MT_CHECK(MP(state_allreduce)(&mine, 1, WORLD) == 0, "allreduce");
    MT_CHECK(MP(state_exscan)(&pre, 1, WORLD) == 0, "exscan");
    check_same_sums(mine, sum, "allreduce");
    check_same_sums(pre, before, "exscan");
    for (int r = 0; r < mt_size; r++)
        P(state_destroy)(all[r]);
    free(all), free(acc);
    P(state_destroy)(sum), P(state_destroy)(before);
    P(state_destroy)(mine), P(state_destroy)(pre);
    P(plan_destroy)(p);
}

/* A rank without rows may pass NULL arrays (as the serial calls allow):
 * every call succeeds and the other ranks get the serial results. */
static void null_arrays_without_rows(void)
{
    int64_t n = 9, d = 2, e = 3, off, cnt;
    block_of(n, SKEWED, &off, &cnt); /* rank 0 has none */
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 1, 0, 0, 0);
    tmat q, k, v;
    plain_data(n, d, e, -1, 1, 41, &q, &k, &v);
    tmat out = tmat_like(&q, n, e, 0), ref = tmat_like(&q, n, e, 0);
    linattn_strides sqk = {d, 0, 0}, sv = {e, 0, 0};
    for (int c = 0; c < 4; c++) {
        int none = cnt == 0;
        const real *lq = none ? NULL : q.a + off * d, *lk = none ? NULL : k.a + off * d;
        const real *lv = none ? NULL : v.a + off * e;
        real *lo = none ? NULL : out.a + off * e;
        int st, sts;
        if (c % 2) {
            sts = P(causal)(p, ROW, n, q.a, d, k.a, d, v.a, e, ref.a, e, NULL);
            st = c < 2 ? MP(causal)(p, WORLD, ROW, cnt, lq, d, lk, d, lv, e, lo, e, NULL)
                       : MP(batched_causal)(p, WORLD, ROW, 1, 1, cnt, lq, &sqk, lk, &sqk, lv,
                                            &sv, lo, &sv, NULL);
        } else {
            sts = P(attention)(p, ROW, n, n, q.a, d, k.a, d, v.a, e, ref.a, e, NULL);
            st = c < 2 ? MP(attention)(p, WORLD, ROW, cnt, cnt, lq, d, lk, d, lv, e, lo, e, NULL)
                       : MP(batched_attention)(p, WORLD, ROW, 1, 1, cnt, cnt, lq, &sqk, lk,
                                               &sqk, lv, &sv, lo, &sv, NULL);
        }
        tmat a = view(&out, off, cnt), b = view(&ref, off, cnt);
        MT_CHECK(st == 0 && sts == 0 && rel_diff(&a, &b) < TOL, "case %d: status %d", c, st);
    }
    tmat_free(&out), tmat_free(&ref);
    free_data(&q, &k, &v);
    P(plan_destroy)(p);
}

/* LAPACKE's order: an invalid argument before the communicator is
 * returned before the communicator's own error (no communication). */
static void argument_order(void)
{
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 2, 2, 1, 0, 0, 0);
    P(state) *s;
    P(state_create)(&s, p);
    real x[2] = {1, 1}, o[2] = {SENTINEL, SENTINEL};
    linattn_strides st = {2, 0, 0};
    MPI_Comm null = MPI_COMM_NULL;
    MT_CHECK(MP(attention)(NULL, null, ROW, 1, 1, x, 2, x, 2, x, 2, o, 2, NULL) == -1, "attention");
    MT_CHECK(MP(causal)(NULL, null, ROW, 1, x, 2, x, 2, x, 2, o, 2, NULL) == -1, "causal");
    MT_CHECK(MP(batched_attention)(NULL, null, ROW, 1, 1, 1, 1, x, &st, x, &st, x, &st, o, &st,
                                   NULL) == -1, "batched attention");
    MT_CHECK(MP(batched_causal)(NULL, null, ROW, 1, 1, 1, x, &st, x, &st, x, &st, o, &st,
                                NULL) == -1, "batched causal");
    MT_CHECK(MP(causal)(p, null, 0, 1, x, 2, x, 2, x, 2, o, 2, NULL) == -2, "comm before layout");
    MT_CHECK(MP(state_allreduce)(NULL, 1, null) == -1, "allreduce states");
    MT_CHECK(MP(state_exscan)(&s, -1, null) == -2, "exscan count");
    MT_CHECK(MP(state_exscan)(&s, 1, null) == -3, "exscan comm");
    MT_CHECK(MP(state_save_file)(NULL, "x.ck", null) == -1, "save state");
    MT_CHECK(MP(state_save_file)(s, "", null) == -2, "save path");
    MT_CHECK(MP(state_load_file)(NULL, "x.ck", null) == -1, "load state");
    MT_CHECK(MP(state_load_file)(s, NULL, null) == -2, "load path");
    MT_CHECK(MP(state_load_file)(s, "x.ck", null) == -3, "load comm");
    MT_CHECK(o[0] == SENTINEL && o[1] == SENTINEL, "output written");
    P(state_destroy)(s);
    P(plan_destroy)(p);
}

/* A failing MPI call (as under MPI_ERRORS_RETURN; pmpi.h makes it fail)
 * gives LINATTN_EMPI, nothing written, states unchanged; an allocation
 * that fails on one rank (its address space capped) gives
 * LINATTN_ENOMEM on every rank, nothing written anywhere. */
static void mpi_and_memory_failures(void)
{
    int64_t n = 10, d = 2, e = 2, off, cnt;
    block_of(n, EVEN, &off, &cnt);
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 1, 0, 0, 0);
    tmat q, k, v;
    plain_data(n, d, e, -1, 1, 31, &q, &k, &v);
    tmat out = tmat_like(&q, n, e, 0);
    fill(&out, SENTINEL);
    const real *lq = q.a + off * d, *lk = k.a + off * d, *lv = v.a + off * e;
    real *lo = out.a + off * e;
    pm_fail_allreduce = 1; /* the agreement fails on every rank */
    int st1 = MP(attention)(p, WORLD, ROW, cnt, cnt, lq, d, lk, d, lv, e, lo, e, NULL);
    int st2 = MP(causal)(p, WORLD, ROW, cnt, lq, d, lk, d, lv, e, lo, e, NULL);
    pm_fail_allreduce = 0;
    MT_CHECK(st1 == LINATTN_EMPI && st2 == LINATTN_EMPI, "statuses %d %d", st1, st2);
    MT_CHECK(all_equal(&out, SENTINEL), "output written");
    /* the scan's exchanges fail (none at np 1) */
    P(state) *s = state_of(p, &k, &v, off, off + cnt), *keep;
    P(state_create)(&keep, p);
    P(state_copy)(keep, s);
    pm_fail_sendrecv = 1;
    int st3 = MP(state_exscan)(&s, 1, WORLD);
    int st4 = MP(causal)(p, WORLD, ROW, cnt, lq, d, lk, d, lv, e, lo, e, NULL);
    pm_fail_sendrecv = 0;
    int want = mt_size > 1 ? LINATTN_EMPI : 0;
    MT_CHECK(st3 == want && st4 == want, "statuses %d %d, want %d", st3, st4, want);
    if (want) {
        MT_CHECK(all_equal(&out, SENTINEL), "output written");
        check_same_sums(s, keep, "a failed exscan changed the state");
    }
    /* ENOMEM: the last rank's workspace for 2^30 problems (shared inputs,
     * no rows) cannot be had under a cap of 256 MiB more than it maps */
    fill(&out, SENTINEL);
    int capped = 0, me = mt_rank == mt_size - 1;
    struct rlimit old;
    getrlimit(RLIMIT_AS, &old);
    int allowed = address_cap_allowed(), all_allowed;
    MPI_Allreduce(&allowed, &all_allowed, 1, MPI_INT, MPI_MIN, WORLD);
    if (all_allowed) {
        linattn_strides s0 = {d, 0, 0}, so = {e, 0, 0};
        int64_t batch = me ? (int64_t)1 << 30 : 1;
        for (int causal = 0; causal < 2; causal++) {
            if (me) {
                FILE *f = fopen("/proc/self/statm", "r");
                unsigned long pages = 0;
                if (f && fscanf(f, "%lu", &pages) != 1)
                    pages = 0;
                if (f)
                    fclose(f);
                struct rlimit lim = old;
                lim.rlim_cur = (rlim_t)pages * 4096u + (256u << 20);
                capped = pages > 0 && setrlimit(RLIMIT_AS, &lim) == 0;
                MT_CHECK(capped, "setrlimit");
            }
            linattn_where where = {-3, -3, -3};
            /* no rows there: no strides to check */
            int64_t rows = me ? 0 : cnt;
            int st = causal ? MP(batched_causal)(p, WORLD, ROW, batch, 1, rows, lq, &s0, lk,
                                                 &s0, lv, &s0, lo, &so, &where)
                            : MP(batched_attention)(p, WORLD, ROW, batch, 1, rows, rows, lq,
                                                    &s0, lk, &s0, lv, &s0, lo, &so, &where);
            if (capped)
                setrlimit(RLIMIT_AS, &old);
            MT_CHECK(st == LINATTN_ENOMEM, "causal %d: status %d", causal, st);
            MT_CHECK(all_equal(&out, SENTINEL), "causal %d: output written", causal);
            MT_CHECK(where.row == -3, "bad written");
        }
    }
    tmat_free(&out);
    free_data(&q, &k, &v);
    P(state_destroy)(s), P(state_destroy)(keep);
    P(plan_destroy)(p);
}

static void *call_from_thread(void *arg)
{
    P(plan) *p = arg;
    real x[2] = {1, 1}, o[2];
    /* below MPI_THREAD_SERIALIZED only the main thread may call MPI */
    return (void *)(intptr_t)MP(causal)(p, WORLD, ROW, 1, x, 2, x, 2, x, 2, o, 2, NULL);
}

/* A call from a thread other than the main one: LINATTN_EMPIUSE on that
 * rank, without communication (the program was initialized FUNNELED). */
static void thread_level_checked(void)
{
    int provided;
    MPI_Query_thread(&provided);
    MT_CHECK(provided >= LINATTN_MPI_THREAD_LEVEL, "provided %d", provided);
    if (provided >= MPI_THREAD_SERIALIZED)
        return;
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 2, 2, 1, 0, 0, 0);
    pthread_t t;
    void *ret = NULL;
    MT_CHECK(pthread_create(&t, NULL, call_from_thread, p) == 0, "pthread_create");
    pthread_join(t, &ret);
    MT_CHECK((intptr_t)ret == LINATTN_EMPIUSE, "status %d", (int)(intptr_t)ret);
    P(plan_destroy)(p);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, LINATTN_MPI_THREAD_LEVEL);
    MT_RUN(same_weights_on_every_rank);
    MT_RUN(distributed_equals_serial);
    MT_RUN(causality_across_ranks);
    MT_RUN(batched_equals_serial);
    MT_RUN(one_rank_bad_argument);
    MT_RUN(mismatched_plans);
    MT_RUN(bad_normalizer_global_row);
    MT_RUN(state_collectives);
    MT_RUN(collective_checkpoint);
    MT_RUN(thread_level_checked);
    MT_RUN(exscan_in_log_steps);
    MT_RUN(mismatched_calls);
    MT_RUN(empty_states_keep_accumulators);
    MT_RUN(argument_order);
    MT_RUN(null_arrays_without_rows);
    MT_RUN(mpi_and_memory_failures);
    int status = mt_finish("mpi " PREC);
    MPI_Finalize();
    return status;
}
