/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mpi_finite.c -- the invariant across ranks (finite inputs give finite
 * outputs or a status naming the row), compiled once per precision and run at
 * np 1 to 8: sums of finite values that leave the range on one rank or only
 * once the ranks' states are added, a numerator that overflows on one rank
 * and a bad normalizer on another, NaN that still propagates, and the state
 * collectives and the collective checkpoint with such sums.  The reference is
 * the serial library on the whole sequence (or serial merges in rank order),
 * which every rank runs: the distributed call must return its status, global
 * row and rows on every rank.
 */
#include <float.h>
#include <unistd.h>
#include "testutil.h"
#include "linattn_mpi.h"
#include "mpitest.h"
#include "mpidata.h"

#ifdef TEST_SINGLE
#define REAL_MAX FLT_MAX
#else
#define REAL_MAX DBL_MAX
#endif
/* One such value fits the working precision, two added do not. */
#define HUGE_V ((real)(0.6 * REAL_MAX))

/* Nonzero when x is the same on every rank. */
static int same_everywhere(int64_t x)
{
    int64_t lo, hi;
    MPI_Allreduce(&x, &lo, 1, MPI_INT64_T, MPI_MIN, WORLD);
    MPI_Allreduce(&x, &hi, 1, MPI_INT64_T, MPI_MAX, WORLD);
    return lo == hi;
}

static int row_is(const tmat *m, int64_t i, real x)
{
    for (int64_t j = 0; j < m->cols; j++)
        if (*tmat_at(m, i, j) != x)
            return 0;
    return 1;
}

static int row_finite(const tmat *m, int64_t i)
{
    for (int64_t j = 0; j < m->cols; j++)
        if (!isfinite(*tmat_at(m, i, j)))
            return 0;
    return 1;
}

/* What a distributed call left in out (this rank's rows [off, off + cnt)
 * of the global matrix, filled with SENTINEL before) against the serial
 * call's ref, status sts and row srow, when it returned st and row:
 * the same status and row (hence the same on every rank); other ranks'
 * rows untouched; rows before the bad one the serial results, finite;
 * an EDENOM row untouched, an EOVERFLOW row untouched or not finite.
 * refused: the call must have written nothing at all. */
static void judge(const char *what, const tmat *out, const tmat *ref,
                  int64_t off, int64_t cnt, int st, int64_t row, int sts,
                  int64_t srow, int refused)
{
    int failed = st == LINATTN_EDENOM || st == LINATTN_EOVERFLOW;
    MT_CHECK(st == sts && (!failed || row == srow),
             "%s: status %d row %lld, serial %d row %lld", what, st,
             (long long)row, sts, (long long)srow);
    MT_CHECK(same_everywhere(st) && same_everywhere(failed ? row : -1),
             "%s: status or row differ across ranks", what);
    MT_CHECK(outside_untouched(out, off, cnt, SENTINEL),
             "%s: rows of other ranks written", what);
    if (refused) {
        MT_CHECK(all_equal(out, SENTINEL), "%s: a refusal wrote", what);
        return;
    }
    int64_t end = failed && srow < off + cnt ? srow : off + cnt;
    if (end > off) {
        tmat a = view(out, off, end - off), b = view(ref, off, end - off);
        MT_CHECK(rel_diff(&a, &b) < TOL, "%s: rows before the bad one differ",
                 what);
        for (int64_t i = off; i < end; i++)
            MT_CHECK(row_finite(out, i), "%s: row %lld not finite", what,
                     (long long)i);
    }
    if (failed && srow >= off && srow < off + cnt) {
        if (st == LINATTN_EDENOM)
            MT_CHECK(row_is(out, srow, SENTINEL), "%s: EDENOM row written",
                     what);
        else
            MT_CHECK(row_is(out, srow, SENTINEL) || !row_finite(out, srow),
                     "%s: EOVERFLOW row holds a finite result", what);
    }
}

/* The global sequence of the overflow cases: q = k = 0 (elu+1 features
 * exactly 1, so that every path adds the same numbers), values in
 * [-1, 1) but HUGE_V in the last column at the rows of huge[]; with
 * clean, those rows hold 0.5 instead. */
static void huge_data(int64_t n, int64_t e, const int64_t *huge, int nhuge,
                      int clean, tmat *q, tmat *k, tmat *v)
{
    plain_data(n, 1, e, 0, 0, 77, q, k, v);
    for (int i = 0; i < nhuge; i++)
        *tmat_at(v, huge[i], e - 1) = clean ? (real)0.5 : HUGE_V;
}

/* A distributed call (causal or not) on this rank's block of q, k, v
 * (keys split by ksplit for attention) beside the serial call on the
 * whole: outputs filled with SENTINEL first; free with pair_free. */
typedef struct {
    int64_t off, cnt, row, srow;
    int st, sts;
    tmat out, ref;
} pair;

static pair run_pair(const P(plan) *p, int causal, const tmat *q,
                     const tmat *k, const tmat *v, int qsplit, int ksplit)
{
    int64_t n = q->rows, e = v->cols, ko, kn;
    pair r = {0, 0, -3, -3, 0, 0, tmat_like(q, n, e, 0), tmat_like(q, n, e, 0)};
    block_of(n, qsplit, &r.off, &r.cnt);
    block_of(n, ksplit, &ko, &kn);
    if (causal)
        ko = r.off, kn = r.cnt;
    fill(&r.out, SENTINEL);
    fill(&r.ref, SENTINEL);
    tmat lq = view(q, r.off, r.cnt), lk = view(k, ko, kn), lv = view(v, ko, kn);
    tmat lo = view(&r.out, r.off, r.cnt);
    if (causal) {
        r.sts = P(causal)(p, ROW, n, q->a, q->ld, k->a, k->ld, v->a, v->ld,
                          r.ref.a, r.ref.ld, &r.srow);
        r.st = MP(causal)(p, WORLD, ROW, r.cnt, lq.a, lq.ld, lk.a, lk.ld, lv.a,
                          lv.ld, lo.a, lo.ld, &r.row);
    } else {
        r.sts = P(attention)(p, ROW, n, n, q->a, q->ld, k->a, k->ld, v->a,
                             v->ld, r.ref.a, r.ref.ld, &r.srow);
        r.st = MP(attention)(p, WORLD, ROW, r.cnt, kn, lq.a, lq.ld, lk.a,
                             lk.ld, lv.a, lv.ld, lo.a, lo.ld, &r.row);
    }
    return r;
}

static void pair_free(pair *r)
{
    tmat_free(&r->out), tmat_free(&r->ref);
}

/* run_pair, judged. */
static void single_call(const char *what, const P(plan) *p, int causal,
                        const tmat *q, const tmat *k, const tmat *v,
                        int qsplit, int ksplit, int refused_if_failed)
{
    pair r = run_pair(p, causal, q, k, v, qsplit, ksplit);
    judge(what, &r.out, &r.ref, r.off, r.cnt, r.st, r.row, r.sts, r.srow,
          refused_if_failed && r.sts != 0);
    pair_free(&r);
}

/* The batched call on two heads sharing k: head h with queries qh and
 * values vh; status and place (batch, head, global row) as the serial
 * batched call's, and when head 1 fails, head 0 written in full. */
static void batched_call(const char *what, const P(plan) *p, int causal,
                         const tmat *q0, const tmat *q1, const tmat *k,
                         const tmat *v0, const tmat *v1, int split)
{
    int64_t n = k->rows, d = k->cols, e = v1->cols, off, cnt;
    block_of(n, split, &off, &cnt);
    real *qb = malloc((size_t)(2 * n * d) * sizeof *qb);
    real *vb = malloc((size_t)(2 * n * e) * sizeof *vb);
    real *out = malloc((size_t)(2 * n * e) * sizeof *out);
    real *ref = malloc((size_t)(2 * n * e) * sizeof *ref);
    memcpy(qb, q0->a, (size_t)(n * d) * sizeof *qb);
    memcpy(qb + n * d, q1->a, (size_t)(n * d) * sizeof *qb);
    memcpy(vb, v0->a, (size_t)(n * e) * sizeof *vb);
    memcpy(vb + n * e, v1->a, (size_t)(n * e) * sizeof *vb);
    for (int64_t i = 0; i < 2 * n * e; i++)
        out[i] = ref[i] = SENTINEL;
    linattn_strides sq = {d, 0, n * d}, sk = {d, 0, 0}, sv = {e, 0, n * e};
    linattn_where w = {-3, -3, -3}, sw = {-3, -3, -3};
    int st, sts;
    if (causal) {
        sts = P(batched_causal)(p, ROW, 1, 2, n, qb, &sq, k->a, &sk, vb, &sv,
                                ref, &sv, &sw);
        st = MP(batched_causal)(p, WORLD, ROW, 1, 2, cnt, qb + off * d, &sq,
                                k->a + off * d, &sk, vb + off * e, &sv,
                                out + off * e, &sv, &w);
    } else {
        sts = P(batched_attention)(p, ROW, 1, 2, n, n, qb, &sq, k->a, &sk, vb,
                                   &sv, ref, &sv, &sw);
        st = MP(batched_attention)(p, WORLD, ROW, 1, 2, cnt, cnt, qb + off * d,
                                   &sq, k->a + off * d, &sk, vb + off * e, &sv,
                                   out + off * e, &sv, &w);
    }
    MT_CHECK(st == sts && (!sts || (w.batch == sw.batch &&
                                    w.head == sw.head && w.row == sw.row)),
             "%s batched: status %d at (%lld, %lld, %lld), serial %d at (%lld, "
             "%lld, %lld)", what, st, (long long)w.batch, (long long)w.head,
             (long long)w.row, sts, (long long)sw.batch, (long long)sw.head,
             (long long)sw.row);
    MT_CHECK(same_everywhere(st) && same_everywhere(w.head) &&
             same_everywhere(w.row), "%s batched: place differs across ranks",
             what);
    if (sts && sw.head == 1) {
        tmat a = {ROW, cnt, e, e, out + off * e}, b = {ROW, cnt, e, e, ref + off * e};
        MT_CHECK(rel_diff(&a, &b) < TOL, "%s batched: head 0 differs", what);
    }
    free(qb), free(vb), free(out), free(ref);
}

/* Sums of finite values past the range: two huge values in one column
 * (on one rank, on two ranks, or first and last), every split, the
 * single and batched calls.  Non-causal: every row reads the sum: the
 * serial call's EOVERFLOW at row 0, here with nothing written (the
 * reduced state is refused).  Causal: the row where the second huge
 * value arrives, rows before it written; ranks after it see an
 * overflowed prefix.  One huge value: no failure. */
static void sums_overflow(void)
{
    int64_t n = 2 * mt_size + 3;
    int64_t cases[][2] = {{0, n - 1}, {1, 2}, {n / 2, n - 1}, {n - 2, n - 1},
                          {0, -1}};
    static const int64_t es[] = {1, 3};
    for (int ei = 0; ei < 2; ei++)
        for (int c = 0; c < 5; c++) {
            int64_t e = es[ei];
            int nh = cases[c][1] < 0 ? 1 : 2;
            P(plan) *p = make_plan(LINATTN_MAP_ELU1, 1, e, 1, 0,
                                   LINATTN_DENOM_POSITIVE, 0);
            tmat q, k, v, q0, k0, v0;
            huge_data(n, e, cases[c], nh, 0, &q, &k, &v);
            huge_data(n, e, cases[c], nh, 1, &q0, &k0, &v0);
            for (int split = 0; split < SPLITS; split++)
                for (int causal = 0; causal < 2; causal++) {
                    char what[96];
                    snprintf(what, sizeof what, "e %lld case %d split %d causal %d",
                             (long long)e, c, split, causal);
                    single_call(what, p, causal, &q, &k, &v, split,
                                (split + 1) % SPLITS, !causal);
                    batched_call(what, p, causal, &q, &q, &k, &v0, &v, split);
                }
            free_data(&q, &k, &v), free_data(&q0, &k0, &v0);
            P(plan_destroy)(p);
        }
}

/* A numerator that overflows at row a (q_a = 1e6: phi(q_a)^T S beyond
 * the range, its normalizer fine) and a normalizer that breaks the
 * policy at row b (q_b = -1), on the same or different ranks: the first
 * of them is reported, with its own status, as serially; rows before it
 * written everywhere; an EOVERFLOW row holds its non-finite values.
 * Batched: head 0 with b, head 1 with a: head 0's status, whichever row
 * comes first. */
static void mixed_statuses(void)
{
    int64_t n = 3 * mt_size + 4;
    int64_t cases[][2] = {{3, -1}, {-1, 3}, {2, n - 2}, {n - 2, 2},
                          {0, n - 1}, {n - 1, 0}, {1, 1 + mt_size}};
    P(plan) *p = make_plan(LINATTN_MAP_IDENTITY, 1, 1, 1, 0,
                           LINATTN_DENOM_POSITIVE, 0);
    for (int c = 0; c < 7; c++) {
        tmat q, k, v, qa, qb;
        plain_data(n, 1, 1, 1, 1, 5, &q, &k, &v);
        for (int64_t i = 0; i < n; i++)
            v.a[i] = (real)(REAL_MAX / 1e4);
        int64_t a = cases[c][0], b = cases[c][1];
        qa = tmat_like(&q, n, 1, 0), qb = tmat_like(&q, n, 1, 0);
        for (int64_t i = 0; i < n; i++) {
            q.a[i] = (real)(i == a ? 1e6 : i == b ? -1 : 1);
            qa.a[i] = (real)(i == a ? 1e6 : 1); /* the batched heads' */
            qb.a[i] = (real)(i == b ? -1 : 1);
        }
        for (int split = 0; split < SPLITS; split++)
            for (int causal = 0; causal < 2; causal++) {
                char what[96];
                snprintf(what, sizeof what, "case %d split %d causal %d", c,
                         split, causal);
                single_call(what, p, causal, &q, &k, &v, split, split, 0);
                batched_call(what, p, causal, &qb, &qa, &k, &v, &v, split);
            }
        free_data(&q, &k, &v), tmat_free(&qa), tmat_free(&qb);
    }
    P(plan_destroy)(p);
}

/* NaN in the values still propagates with status 0 when the huge values
 * overflow only in the sum of the ranks' states, as in the serial call
 * (whose state holds NaN: its queries propagate rather than report);
 * outputs non-finite exactly where the serial call's are.  A rank whose
 * own sums overflow (two huge values there) is EOVERFLOW even so, in the
 * non-causal call (its sums cannot travel; documented). */
static void nan_still_propagates(void)
{
    int64_t n = 2 * mt_size + 3, e = 3;
    int64_t huge[2] = {0, n - 1};
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 1, e, 1, 0,
                           LINATTN_DENOM_POSITIVE, 0);
    tmat q, k, v;
    huge_data(n, e, huge, 2, 0, &q, &k, &v);
    *tmat_at(&v, n / 2, 0) = (real)NAN;
    for (int split = 0; split < SPLITS; split++)
        for (int causal = 0; causal < 2; causal++) {
            pair r = run_pair(p, causal, &q, &k, &v, split,
                              causal ? split : (split + 1) % SPLITS);
            MT_CHECK(r.sts == 0 && r.st == 0, "split %d causal %d: status %d, "
                     "serial %d", split, causal, r.st, r.sts);
            for (int64_t i = r.off; i < r.off + r.cnt; i++)
                for (int64_t j = 0; j < e; j++) {
                    real x = *tmat_at(&r.out, i, j), y = *tmat_at(&r.ref, i, j);
                    MT_CHECK(isfinite(x) == isfinite(y) &&
                                 (!isfinite(y) ||
                                  fabs(x - y) <= TOL * (1 + fabs(y))),
                             "split %d causal %d: (%lld, %lld) %g, serial %g",
                             split, causal, (long long)i, (long long)j,
                             (double)x, (double)y);
                }
            pair_free(&r);
        }
    /* two huge values on one rank (the first with rows, EVEN split of at
     * least two rows each), the NaN on the last: EOVERFLOW at row 0 */
    if (mt_size > 1) {
        *tmat_at(&v, n - 1, e - 1) = (real)0.5;
        *tmat_at(&v, 1, e - 1) = HUGE_V;
        *tmat_at(&v, n / 2, 0) = (real)0.5;
        *tmat_at(&v, n - 1, 0) = (real)NAN;
        pair r = run_pair(p, 0, &q, &k, &v, EVEN, EVEN);
        MT_CHECK(r.st == LINATTN_EOVERFLOW && r.row == 0 &&
                     all_equal(&r.out, SENTINEL),
                 "a rank's own overflow beside NaN: status %d row %lld", r.st,
                 (long long)r.row);
        pair_free(&r);
    }
    free_data(&q, &k, &v);
    P(plan_destroy)(p);
}

/* ---- state collectives ---- */

/* Rank r's state in the collective cases: one key (features 1) with
 * values 0.25 (r + 1), but HUGE_V in column 1 on the ranks in mask
 * (bit r; bit 31 for ranks past 30) and NaN in column 0 on rank
 * nan_rank. */
static P(state) *rank_state(const P(plan) *p, int r, unsigned mask,
                            int nan_rank)
{
    P(state) *s;
    P(state_create)(&s, p);
    real k = 0, v[2] = {(real)(0.25 * (r + 1)), (real)(0.25 * (r + 1))};
    if (mask >> (r < 31 ? r : 31) & 1)
        v[1] = HUGE_V;
    if (r == nan_rank)
        v[0] = (real)NAN;
    int st = P(state_update)(s, ROW, 1, &k, 1, v, 2);
    MT_CHECK(st == 0, "rank %d's state: %d", r, st);
    return s;
}

static int state_same_bytes(const P(state) *a, const P(state) *b)
{
    int64_t la, lb;
    P(state_save_size)(a, &la), P(state_save_size)(b, &lb);
    unsigned char *x = malloc((size_t)la), *y = malloc((size_t)lb);
    P(state_save)(a, x, la, NULL), P(state_save)(b, y, lb, NULL);
    int same = la == lb && memcmp(x, y, (size_t)la) == 0;
    free(x), free(y);
    return same;
}

/* a's sums equal b's: tokens exactly, each accumulator entry within TOL
 * or both not finite, the same kind (NaN, +Inf, -Inf). */
static int same_sums(const P(state) *a, const P(state) *b)
{
    const P(plan) *p;
    int64_t m, e, ta, tb;
    P(state_plan)(a, &p);
    P(plan_dims)(p, NULL, &m, &e);
    int64_t len = m * (e + 1);
    double *x = malloc((size_t)len * sizeof *x), *y = malloc((size_t)len * sizeof *y);
    P(state_export)(a, x, NULL, &ta), P(state_export)(b, y, NULL, &tb);
    int same = ta == tb;
    for (int64_t i = 0; i < len; i++)
        same &= isfinite(y[i]) ? fabs(x[i] - y[i]) <= TOL * fabs(y[i])
                : isnan(y[i]) ? isnan(x[i]) : x[i] == y[i];
    free(x), free(y);
    return same;
}

/* The serial reference: an empty state plus the states of ranks
 * [0, hi), merged in rank order; the first refusal's status, or 0. */
static int merged(P(state) *sum, P(state) *const *all, int hi)
{
    P(state_reset)(sum);
    for (int r = 0; r < hi; r++) {
        int st = P(state_merge)(sum, all[r]);
        if (st)
            return st;
    }
    return 0;
}

/* allreduce and exscan of two states per rank (the second with the huge
 * values of mask, the first plain) against serial merges in rank order:
 * a sum past the range is EOVERFLOW on every rank (the float copy's
 * range in float), both states unchanged; else the sums; NaN takes the
 * sum (as state_merge does), with status 0.  The exscan's status is the
 * first rank's whose prefix fails. */
static void collectives_overflow(void)
{
    static const unsigned masks[] = {0x1, 0x3, 0x5, 0xffffffffu, 0x6};
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 1, 2, 1, 0, 0, 0);
    P(state) **all = malloc((size_t)mt_size * sizeof *all);
    P(state) *sum, *keep[2];
    P(state_create)(&sum, p);
    P(state_create)(&keep[0], p), P(state_create)(&keep[1], p);
    for (int c = 0; c < 10; c++) {
        unsigned mask = masks[c % 5];
        int nan_rank = c < 5 ? -1 : 0;
        for (int r = 0; r < mt_size; r++)
            all[r] = rank_state(p, r, mask, nan_rank);
        for (int exscan = 0; exscan < 2; exscan++) {
            P(state) *mine[2] = {rank_state(p, mt_rank, 0, -1),
                                 rank_state(p, mt_rank, mask, nan_rank)};
            P(state_copy)(keep[0], mine[0]), P(state_copy)(keep[1], mine[1]);
            int want = 0;
            for (int r = 0; exscan && r < mt_size && !want; r++)
                want = merged(sum, all, r);
            if (!exscan)
                want = merged(sum, all, mt_size);
            merged(sum, all, exscan ? mt_rank : mt_size);
            int st = exscan ? MP(state_exscan)(mine, 2, WORLD)
                            : MP(state_allreduce)(mine, 2, WORLD);
            MT_CHECK(st == want, "case %d exscan %d: status %d, serial %d", c,
                     exscan, st, want);
            if (st) {
                MT_CHECK(state_same_bytes(mine[0], keep[0]) &&
                             state_same_bytes(mine[1], keep[1]),
                         "case %d exscan %d: a refusal changed a state", c,
                         exscan);
            } else {
                MT_CHECK(same_sums(mine[1], sum), "case %d exscan %d: sums",
                         c, exscan);
            }
            P(state_destroy)(mine[0]), P(state_destroy)(mine[1]);
        }
        for (int r = 0; r < mt_size; r++)
            P(state_destroy)(all[r]);
    }
    /* token counts past int64 on top: LINATTN_ESIZE first, as in merge */
    if (mt_size > 1) {
        double acc[3] = {0, HUGE_V, 1};
        P(state) *s;
        P(state_create)(&s, p);
        P(state_import)(s, acc, 0, INT64_MAX / 2 + 1);
        P(state_copy)(keep[0], s);
        int st = MP(state_allreduce)(&s, 1, WORLD);
        MT_CHECK(st == LINATTN_ESIZE && state_same_bytes(s, keep[0]),
                 "tokens and sums past their ranges: %d", st);
        P(state_destroy)(s);
    }
    free(all);
    P(state_destroy)(sum), P(state_destroy)(keep[0]), P(state_destroy)(keep[1]);
    P(plan_destroy)(p);
}

/* The collective checkpoint of a state whose sums are near the end of
 * the range (float: beyond the float copy's, as an import or a load may
 * leave them): the collective load gives every rank the serial load's
 * state, byte for byte, whose queries then report what the serial
 * state's do (EOVERFLOW at the row past the range); its collective save
 * writes the serial bytes; its allreduce follows serial merges. */
static void checkpoint_huge_sums(void)
{
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 1, 1, 1, 0, 0, 0);
    char dir[256], path[300];
    shared_dir(dir, sizeof dir);
    MT_CHECK(dir[0] != 0, "mkdtemp");
    snprintf(path, sizeof path, "%s/huge.ck", dir);
#ifdef TEST_SINGLE
    double acc[2] = {1e39, 1}; /* S beyond FLT_MAX, finite in double */
#else
    double acc[2] = {1e308, 1};
#endif
    P(state) *src, *ser, *col, *keep;
    P(state_create)(&src, p), P(state_create)(&ser, p);
    P(state_create)(&col, p), P(state_create)(&keep, p);
    P(state_import)(src, acc, 0, 3);
    if (mt_rank == 0)
        MT_CHECK(P(state_save_file)(src, path) == 0, "serial save");
    MPI_Barrier(WORLD);
    MT_CHECK(P(state_load_file)(ser, path) == 0, "serial load");
    MT_CHECK(MP(state_load_file)(col, path, WORLD) == 0, "collective load");
    MT_CHECK(state_same_bytes(col, ser), "the loaded states differ");
    real q[2] = {0, 1}, out[2] = {SENTINEL, SENTINEL}, ref[2] = {SENTINEL, SENTINEL};
    int64_t row = -3, srow = -3;
    int sts = P(state_query)(ser, ROW, 2, q, 1, ref, 1, NULL, 0, NULL, &srow);
    int st = P(state_query)(col, ROW, 2, q, 1, out, 1, NULL, 0, NULL, &row);
    MT_CHECK(sts == LINATTN_EOVERFLOW && st == sts && row == srow &&
                 memcmp(out, ref, sizeof out) == 0,
             "queries: %d row %lld, serial %d row %lld", st, (long long)row,
             sts, (long long)srow);
    snprintf(path, sizeof path, "%s/again.ck", dir);
    MT_CHECK(MP(state_save_file)(col, path, WORLD) == 0, "collective save");
    P(state_reset)(ser);
    MT_CHECK(P(state_load_file)(ser, path) == 0 && state_same_bytes(ser, col),
             "collective save of the loaded state");
    /* the loaded state reduced: serial merges of P copies */
    P(state) **all = malloc((size_t)mt_size * sizeof *all), *sum;
    for (int r = 0; r < mt_size; r++)
        all[r] = col;
    P(state_create)(&sum, p);
    int want = merged(sum, all, mt_size);
    P(state_copy)(keep, col);
    st = MP(state_allreduce)(&col, 1, WORLD);
    MT_CHECK(st == want, "allreduce of loaded states: %d, serial %d", st, want);
    MT_CHECK(st ? state_same_bytes(col, keep) : same_sums(col, sum),
             "allreduce of loaded states: the state");
    MPI_Barrier(WORLD);
    if (mt_rank == 0) {
        unlink(path);
        snprintf(path, sizeof path, "%s/huge.ck", dir);
        unlink(path);
        rmdir(dir);
    }
    free(all);
    P(state_destroy)(src), P(state_destroy)(ser), P(state_destroy)(col);
    P(state_destroy)(keep), P(state_destroy)(sum);
    P(plan_destroy)(p);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, LINATTN_MPI_THREAD_LEVEL);
    MT_RUN(sums_overflow);
    MT_RUN(mixed_statuses);
    MT_RUN(nan_still_propagates);
    MT_RUN(collectives_overflow);
    MT_RUN(checkpoint_huge_sums);
    int status = mt_finish("mpi finite " PREC);
    MPI_Finalize();
    return status;
}
