/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_batched.c -- the batched calls (batch x heads problems, strided),
 * compiled once per precision.  Every path and layout against the single
 * calls run problem by problem on the same memory: the batched call runs
 * the single call's code, so the whole output buffer, gaps included, must
 * be bit for bit the same.  One case against the plain-loop long-double
 * reference; normalizer failures reported with their problem and row;
 * every argument error with outputs untouched.
 */
#include <stdio.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR
#define SENT ((real)1e30)

/* How the problems of a batched matrix sit in memory. */
enum geometry {
    CONTIG,      /* each problem's matrix in one piece: C [B][H][n][c],
                    Fortran a(n, c, H, B) */
    INTERLEAVED, /* heads interleaved along rows: C [B][n][H][c],
                    Fortran a(n, H, c, B) */
    SHARED       /* one matrix per batch entry, head stride 0 (inputs) */
};

/* A batched matrix with padding between rows, heads and batch entries;
 * every position that is not an element holds SENT. */
typedef struct {
    int layout;
    int64_t batch, heads, rows, cols, len;
    linattn_strides s;
    real *a;
} tbat;

static int64_t tbat_pos(const tbat *t, int64_t b, int64_t h, int64_t i,
                        int64_t j)
{
    int64_t in = t->layout == ROW ? i * t->s.ld + j : i + j * t->s.ld;
    return b * t->s.batch + h * t->s.head + in;
}

static tbat tbat_new(int geometry, int layout, int64_t batch, int64_t heads,
                     int64_t rows, int64_t cols)
{
    const int64_t pad = 2, gap = 3;
    int64_t inner = layout == ROW ? cols : rows;
    int64_t outer = layout == ROW ? rows : cols;
    tbat t = {layout, batch, heads, rows, cols, 0, {0, 0, 0}, NULL};
    switch (geometry) {
    case CONTIG:
        t.s.ld = inner + pad;
        t.s.head = outer * t.s.ld + gap;
        t.s.batch = heads * t.s.head + gap;
        break;
    case INTERLEAVED:
        t.s.head = inner + pad;
        t.s.ld = heads * t.s.head + gap;
        t.s.batch = outer * t.s.ld + gap;
        break;
    default:
        t.s.ld = inner + pad;
        t.s.head = 0;
        t.s.batch = outer * t.s.ld + gap;
    }
    t.len = batch * heads * rows * cols > 0
                ? tbat_pos(&t, batch - 1, heads - 1, rows - 1, cols - 1) + 1 + gap
                : 1;
    t.a = malloc((size_t)t.len * sizeof(real));
    for (int64_t i = 0; i < t.len; i++)
        t.a[i] = SENT;
    return t;
}

static tbat tbat_rand(int geometry, int layout, int64_t batch, int64_t heads,
                      int64_t rows, int64_t cols, double lo, double hi,
                      uint64_t *seed)
{
    tbat t = tbat_new(geometry, layout, batch, heads, rows, cols);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < rows; i++)
                for (int64_t j = 0; j < cols; j++)
                    t.a[tbat_pos(&t, b, h, i, j)] =
                        (real)(lo + (hi - lo) * test_uniform(seed));
    return t;
}

static tbat tbat_copy(const tbat *t)
{
    tbat c = *t;
    c.a = malloc((size_t)t->len * sizeof(real));
    memcpy(c.a, t->a, (size_t)t->len * sizeof(real));
    return c;
}

static real *tbat_at(const tbat *t, int64_t b, int64_t h)
{
    return t->a + b * t->s.batch + h * t->s.head;
}

static int tbat_same(const tbat *x, const tbat *y)
{
    return x->len == y->len &&
           !memcmp(x->a, y->a, (size_t)x->len * sizeof(real));
}

/* Nonzero when every position that no problem's element occupies still
 * holds SENT. */
static int tbat_gaps_intact(const tbat *t)
{
    char *used = calloc((size_t)t->len, 1);
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t i = 0; i < t->rows; i++)
                for (int64_t j = 0; j < t->cols; j++)
                    used[tbat_pos(t, b, h, i, j)] = 1;
    int ok = 1;
    for (int64_t i = 0; i < t->len; i++)
        ok &= used[i] || t->a[i] == SENT;
    free(used);
    return ok;
}

/* Problem (b, h) as a plain row-major tmat (for the reference). */
static tmat tbat_problem(const tbat *t, int64_t b, int64_t h)
{
    uint64_t s = 1;
    tmat m = tmat_rand(ROW, t->rows, t->cols, 0, 0, 0, &s);
    for (int64_t i = 0; i < t->rows; i++)
        for (int64_t j = 0; j < t->cols; j++)
            m.a[i * t->cols + j] = t->a[tbat_pos(t, b, h, i, j)];
    return m;
}

static void tbat_free(tbat *t)
{
    free(t->a);
    t->a = NULL;
}

static void tbat_free4(tbat *q, tbat *k, tbat *v, tbat *out)
{
    tbat_free(q), tbat_free(k), tbat_free(v), tbat_free(out);
}

/* Random q, k (rows x d) and v (rows x e) in one geometry. */
static void tbat_qkv(int geometry, int64_t batch, int64_t heads, int64_t rows,
                     int64_t d, int64_t e, double lo, uint64_t *seed, tbat qkv[3])
{
    qkv[0] = tbat_rand(geometry, ROW, batch, heads, rows, d, lo, 1, seed);
    qkv[1] = tbat_rand(geometry, ROW, batch, heads, rows, d, lo, 1, seed);
    qkv[2] = tbat_rand(geometry, ROW, batch, heads, rows, e, -1, 1, seed);
}

/* The four batched paths behind one signature (causal ones: nq = nk). */
enum path { ATTENTION, NAIVE, CAUSAL, NAIVE_CAUSAL, PATHS };
static const char *path_name[PATHS] = {"attention", "naive", "causal",
                                       "naive_causal"};

static int run_batched(int path, const P(plan) *p, int layout, int64_t batch,
                       int64_t heads, int64_t nq, int64_t nk, const tbat *q,
                       const tbat *k, const tbat *v, tbat *out,
                       linattn_where *bad)
{
    switch (path) {
    case ATTENTION:
        return P(batched_attention)(p, layout, batch, heads, nq, nk, q->a, &q->s,
                                    k->a, &k->s, v->a, &v->s, out->a, &out->s, bad);
    case NAIVE:
        return P(batched_naive)(p, layout, batch, heads, nq, nk, q->a, &q->s,
                                k->a, &k->s, v->a, &v->s, out->a, &out->s, bad);
    case CAUSAL:
        return P(batched_causal)(p, layout, batch, heads, nq, q->a, &q->s, k->a,
                                 &k->s, v->a, &v->s, out->a, &out->s, bad);
    default:
        return P(batched_naive_causal)(p, layout, batch, heads, nq, q->a, &q->s,
                                       k->a, &k->s, v->a, &v->s, out->a, &out->s,
                                       bad);
    }
}

/* The single call on problem (b, h); returns its status, row in *row. */
static int run_single(int path, const P(plan) *p, int layout, int64_t nq,
                      int64_t nk, const tbat *q, const tbat *k, const tbat *v,
                      tbat *out, int64_t b, int64_t h, int64_t *row)
{
    const real *qa = tbat_at(q, b, h), *ka = tbat_at(k, b, h);
    const real *va = tbat_at(v, b, h);
    real *oa = tbat_at(out, b, h);
    switch (path) {
    case ATTENTION:
        return P(attention)(p, layout, nq, nk, qa, q->s.ld, ka, k->s.ld, va,
                            v->s.ld, oa, out->s.ld, row);
    case NAIVE:
        return P(naive)(p, layout, nq, nk, qa, q->s.ld, ka, k->s.ld, va,
                        v->s.ld, oa, out->s.ld, row);
    case CAUSAL:
        return P(causal)(p, layout, nq, qa, q->s.ld, ka, k->s.ld, va, v->s.ld,
                         oa, out->s.ld, row);
    default:
        return P(naive_causal)(p, layout, nq, qa, q->s.ld, ka, k->s.ld, va,
                               v->s.ld, oa, out->s.ld, row);
    }
}

static int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static void set_threads(int t)
{
#ifdef _OPENMP
    omp_set_num_threads(t);
#else
    (void)t;
#endif
}

/* The single calls, problem by problem, with the threads the batched call
 * gives each problem: one when problems are split over threads (at least
 * as many problems as threads), all of them otherwise.  Returns the first
 * failing problem's status and fills *where. */
static int run_reference(int path, const P(plan) *p, int layout,
                         int64_t batch, int64_t heads, int64_t nq, int64_t nk,
                         const tbat *q, const tbat *k, const tbat *v,
                         tbat *out, linattn_where *where)
{
    int threads = max_threads(), first = 0;
    if (batch * heads >= threads)
        set_threads(1);
    for (int64_t b = 0; b < batch; b++)
        for (int64_t h = 0; h < heads; h++) {
            int64_t row = -1;
            int st = run_single(path, p, layout, nq, nk, q, k, v, out, b, h, &row);
            if (st && !first) {
                first = st;
                *where = (linattn_where){b, h, st == LINATTN_EDENOM ? row : -1};
            }
        }
    set_threads(threads);
    return first;
}

static P(plan) *make_plan(int map, int64_t d, int64_t e, int64_t block,
                          int64_t chunk, int denom)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = block;
    o.chunk = chunk;
    o.denom = denom;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* One batched call against the single calls: same status, same problem
 * and row, the same bytes in the whole output buffer, gaps intact. */
static void compare_one(int path, const P(plan) *p, int layout, int64_t batch,
                        int64_t heads, int64_t nq, int64_t nk, const tbat *q,
                        const tbat *k, const tbat *v, const tbat *out0)
{
    tbat ob = tbat_copy(out0), os = tbat_copy(out0);
    linattn_where wb = {-7, -7, -7}, ws = {-7, -7, -7};
    int sb = run_batched(path, p, layout, batch, heads, nq, nk, q, k, v, &ob, &wb);
    int ss = run_reference(path, p, layout, batch, heads, nq, nk, q, k, v, &os, &ws);
    ck_assert_msg(sb == ss, "%s: status %d, single calls %d", path_name[path],
                  sb, ss);
    if (ss)
        ck_assert(wb.batch == ws.batch && wb.head == ws.head && wb.row == ws.row);
    else
        ck_assert(wb.batch == -7 && wb.head == -7 && wb.row == -7);
    ck_assert_msg(tbat_same(&ob, &os), "%s: B %lld H %lld nq %lld nk %lld",
                  path_name[path], (long long)batch, (long long)heads,
                  (long long)nq, (long long)nk);
    ck_assert(tbat_gaps_intact(&ob));
    tbat_free(&ob), tbat_free(&os);
}

/* Shapes: (batch, heads, nq, nk).  n = 37 and 50 are not multiples of the
 * blocks (16) and chunks (7) used below; 300 rows make the single calls
 * split rows over threads. */
static const int64_t shapes[][4] = {
    {2, 3, 37, 50}, {1, 1, 37, 50}, {1, 4, 23, 23}, {3, 1, 50, 37},
    {1, 2, 1, 1},   {2, 1, 300, 300}, {1, 1, 300, 300}, {2, 2, 0, 5}};

/* Every path x layout x geometry x shape x map, on 2 threads. */
START_TEST(batched_equals_single_calls)
{
    const int64_t d = 5, e = 3;
    const int maps[2] = {LINATTN_MAP_ELU1, LINATTN_MAP_IDENTITY};
    int saved = max_threads();
    set_threads(2);
    uint64_t seed = 77;
    for (int mi = 0; mi < 2; mi++) {
        P(plan) *p = make_plan(maps[mi], d, e, 16, 7, LINATTN_DENOM_NONZERO);
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            int64_t B = shapes[si][0], H = shapes[si][1];
            for (int layout = ROW; layout <= COL; layout++)
                for (int g = CONTIG; g <= INTERLEAVED; g++)
                    for (int path = 0; path < PATHS; path++) {
                        int causal = path == CAUSAL || path == NAIVE_CAUSAL;
                        int64_t nq = shapes[si][2];
                        int64_t nk = causal ? nq : shapes[si][3];
                        /* Inputs in the other geometry, keys and values
                         * shared by the heads: every combination meets. */
                        int other = g == CONTIG ? INTERLEAVED : CONTIG;
                        tbat q = tbat_rand(g, layout, B, H, nq, d, -1, 1, &seed);
                        tbat k = tbat_rand(other, layout, B, H, nk, d, -1, 1, &seed);
                        tbat v = tbat_rand(SHARED, layout, B, H, nk, e, -1, 1, &seed);
                        tbat out = tbat_new(g, layout, B, H, nq, e);
                        compare_one(path, p, layout, B, H, nq, nk, &q, &k, &v, &out);
                        tbat_free4(&q, &k, &v, &out);
                    }
        }
        P(plan_destroy)(p);
    }
    set_threads(saved);
}
END_TEST

/* Independent of the single calls: each problem against the plain-loop
 * long-double reference (interleaved layout, d != e). */
START_TEST(batched_against_reference)
{
    const int64_t B = 2, H = 3, n = 41, d = 4, e = 6;
    uint64_t seed = 5;
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 16, 7, LINATTN_DENOM_POSITIVE);
    tbat qkv[3];
    tbat_qkv(INTERLEAVED, B, H, n, d, e, -1, &seed, qkv);
    tbat q = qkv[0], k = qkv[1], v = qkv[2];
    long double *ref = malloc((size_t)(n * e) * sizeof *ref);
    for (int path = 0; path < PATHS; path++) {
        int causal = path == CAUSAL || path == NAIVE_CAUSAL;
        tbat out = tbat_new(INTERLEAVED, ROW, B, H, n, e);
        ck_assert_int_eq(run_batched(path, p, ROW, B, H, n, n, &q, &k, &v, &out,
                                     NULL), 0);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < H; h++) {
                tmat qp = tbat_problem(&q, b, h), kp = tbat_problem(&k, b, h);
                tmat vp = tbat_problem(&v, b, h), op = tbat_problem(&out, b, h);
                ref_linear_mask(LINATTN_MAP_ELU1, causal, &qp, &kp, &vp, ref);
                ck_assert_msg(rel_err(&op, ref) < TOL, "%s (%lld, %lld)",
                              path_name[path], (long long)b, (long long)h);
                tmat_free(&qp), tmat_free(&kp), tmat_free(&vp), tmat_free(&op);
            }
        ck_assert(tbat_gaps_intact(&out));
        tbat_free(&out);
    }
    free(ref);
    tbat_free(&q), tbat_free(&k), tbat_free(&v);
    P(plan_destroy)(p);
}
END_TEST

/* Identity map, positive normalizers required: queries made negative in
 * some rows of some problems.  The call reports the first failing problem
 * in (b, h) order and its row; every problem's output holds what its
 * single call leaves.  Failing problems in the second thread's range only,
 * then in both ranges. */
START_TEST(edenom_reports_problem_and_row)
{
    const int64_t B = 2, H = 3, n = 40, d = 3, e = 2;
    const int64_t cases[3][3][3] = {
        {{1, 1, 5}, {1, 2, 2}, {-1, 0, 0}},   /* reported: (1, 1) row 5 */
        {{1, 2, 0}, {0, 1, 33}, {1, 0, 7}},   /* reported: (0, 1) row 33 */
        {{1, 0, 11}, {-1, 0, 0}, {-1, 0, 0}}}; /* the second range's first */
    const int64_t want[3][3] = {{1, 1, 5}, {0, 1, 33}, {1, 0, 11}};
    int saved = max_threads();
    set_threads(2);
    P(plan) *p = make_plan(LINATTN_MAP_IDENTITY, d, e, 16, 7,
                           LINATTN_DENOM_POSITIVE);
    for (int c = 0; c < 3; c++)
        for (int path = 0; path < PATHS; path++) {
            uint64_t seed = 9;
            tbat qkv[3];
            tbat_qkv(CONTIG, B, H, n, d, e, 0.1, &seed, qkv);
            tbat q = qkv[0], k = qkv[1], v = qkv[2];
            for (int f = 0; f < 3 && cases[c][f][0] >= 0; f++)
                for (int64_t j = 0; j < d; j++) {
                    real *x = &q.a[tbat_pos(&q, cases[c][f][0], cases[c][f][1],
                                            cases[c][f][2], j)];
                    *x = -*x;
                }
            tbat out = tbat_new(CONTIG, ROW, B, H, n, e);
            compare_one(path, p, ROW, B, H, n, n, &q, &k, &v, &out);
            linattn_where w;
            ck_assert_int_eq(run_batched(path, p, ROW, B, H, n, n, &q, &k, &v,
                                         &out, &w), LINATTN_EDENOM);
            ck_assert(w.batch == want[c][0] && w.head == want[c][1] &&
                      w.row == want[c][2]);
            /* bad may be NULL */
            ck_assert_int_eq(run_batched(path, p, ROW, B, H, n, n, &q, &k, &v,
                                         &out, NULL), LINATTN_EDENOM);
            tbat_free4(&q, &k, &v, &out);
        }
    P(plan_destroy)(p);
    set_threads(saved);
}
END_TEST

/* Threads 1 and 2 give the same bytes: problems split over threads run
 * the serial code on each problem. */
START_TEST(thread_counts_agree)
{
    const int64_t B = 2, H = 4, n = 300, d = 8, e = 8;
    uint64_t seed = 21;
    int saved = max_threads();
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, d, e, 32, 16, LINATTN_DENOM_POSITIVE);
    tbat qkv[3];
    tbat_qkv(CONTIG, B, H, n, d, e, -1, &seed, qkv);
    tbat q = qkv[0], k = qkv[1], v = qkv[2];
    for (int path = 0; path < PATHS; path++) {
        tbat o1 = tbat_new(CONTIG, ROW, B, H, n, e), o2 = tbat_copy(&o1);
        set_threads(1);
        ck_assert_int_eq(run_batched(path, p, ROW, B, H, n, n, &q, &k, &v, &o1,
                                     NULL), 0);
        set_threads(2);
        ck_assert_int_eq(run_batched(path, p, ROW, B, H, n, n, &q, &k, &v, &o2,
                                     NULL), 0);
        ck_assert_msg(tbat_same(&o1, &o2), "%s", path_name[path]);
        tbat_free(&o1), tbat_free(&o2);
    }
    set_threads(saved);
    tbat_free(&q), tbat_free(&k), tbat_free(&v);
    P(plan_destroy)(p);
}
END_TEST

/* ---- argument errors: the status, and nothing written ---- */

#define BIG ((int64_t)1 << 40)

static real qb[64], kb[64], vb[64], ob[64];

static void fill(void)
{
    for (int i = 0; i < 64; i++) {
        qb[i] = (real)(0.1 * (i % 7) + 0.2);
        kb[i] = (real)(0.1 * (i % 5) + 0.3);
        vb[i] = (real)(0.1 * (i % 3) - 0.1);
        ob[i] = SENT;
    }
}

static int untouched(void)
{
    for (int i = 0; i < 64; i++)
        if (ob[i] != SENT)
            return 0;
    return 1;
}

/* d = 3, e = 2, batch 2, heads 2, n = 3: [B][H][n][c] strides. */
static const linattn_strides s3 = {3, 18, 9}, s2 = {2, 12, 6};

/* The non-causal calls, attention (naive = 0) or naive. */
static int call_qkv(int naive, const P(plan) *p, int layout, int64_t batch,
                    int64_t heads, int64_t nq, int64_t nk, const real *q,
                    const linattn_strides *sq, const real *k,
                    const linattn_strides *sk, const real *v,
                    const linattn_strides *sv, real *out,
                    const linattn_strides *so)
{
    linattn_where w = {-5, -5, -5};
    int st = naive ? P(batched_naive)(p, layout, batch, heads, nq, nk, q, sq, k,
                                      sk, v, sv, out, so, &w)
                   : P(batched_attention)(p, layout, batch, heads, nq, nk, q, sq,
                                          k, sk, v, sv, out, so, &w);
    if (st != LINATTN_EDENOM && st != LINATTN_ENOMEM)
        ck_assert(w.batch == -5 && w.head == -5 && w.row == -5);
    return st;
}

static int call_seq(int naive, const P(plan) *p, int layout, int64_t batch,
                    int64_t heads, int64_t n, const real *q,
                    const linattn_strides *sq, const real *k,
                    const linattn_strides *sk, const real *v,
                    const linattn_strides *sv, real *out,
                    const linattn_strides *so)
{
    linattn_where w = {-5, -5, -5};
    int st = naive ? P(batched_naive_causal)(p, layout, batch, heads, n, q, sq,
                                             k, sk, v, sv, out, so, &w)
                   : P(batched_causal)(p, layout, batch, heads, n, q, sq, k, sk,
                                       v, sv, out, so, &w);
    if (st != LINATTN_EDENOM && st != LINATTN_ENOMEM)
        ck_assert(w.batch == -5 && w.head == -5 && w.row == -5);
    return st;
}

START_TEST(batched_qkv_errors)
{
    int naive = _i; /* 0: attention, 1: naive */
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 3, 2, 0, 0, LINATTN_DENOM_POSITIVE);
    linattn_strides neg_b = {3, -18, 9}, neg_h = {3, 18, -9}, short_ld = {2, 18, 9};
    linattn_strides o_same = {2, 12, 0};   /* two heads on one output */
    linattn_strides o_inter = {4, 12, 1};  /* heads 1 apart, rows of 2 */
    linattn_strides huge = {3, INT64_MAX / 2, 9};
    fill();
#define QKV(...) call_qkv(naive, __VA_ARGS__)
    ck_assert_int_eq(QKV(NULL, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -1);
    ck_assert_int_eq(QKV(p, 0, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -2);
    ck_assert_int_eq(QKV(p, ROW, -1, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -3);
    ck_assert_int_eq(QKV(p, ROW, 2, -1, 3, 3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -4);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, -3, 3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -5);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, -3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -6);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, NULL, &s3, kb, &s3, vb, &s2, ob, &s2), -7);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, NULL, kb, &s3, vb, &s2, ob, &s2), -8);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &short_ld, kb, &s3, vb, &s2, ob, &s2), -8);
    ck_assert_int_eq(QKV(p, COL, 2, 2, 3, 3, qb, &s2, kb, &s3, vb, &s3, ob, &s3), -8);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &neg_b, kb, &s3, vb, &s2, ob, &s2), -8);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &neg_h, kb, &s3, vb, &s2, ob, &s2), -8);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, NULL, &s3, vb, &s2, ob, &s2), -9);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &short_ld, vb, &s2, ob, &s2), -10);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &neg_h, vb, &s2, ob, &s2), -10);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, NULL, &s2, ob, &s2), -11);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, NULL, ob, &s2), -12);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &neg_b, ob, &s2), -12);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, NULL, &s2), -13);
    /* out meeting an input's address range */
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, qb + 20, &s2), -13);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, vb, &s2), -13);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, ob, NULL), -14);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, ob, &neg_h), -14);
    /* problems overlapping in the output */
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, ob, &o_same), -14);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &s2, ob, &o_inter), -14);
    /* the same strides are fine for inputs (heads sharing keys) */
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 3, 3, qb, &s3, kb, &s3, vb, &o_same, ob, &s2), 0);
    ck_assert(!untouched());
    fill();
    /* sizes: a batch stride whose last problem is beyond int64 addressing;
     * batch x heads beyond int64 (no rows); keys beyond BLAS for naive */
    ck_assert_int_eq(QKV(p, ROW, 3, 2, 3, 3, qb, &huge, kb, &s3, vb, &s2, ob, &s2),
                     LINATTN_ESIZE);
    ck_assert_int_eq(QKV(p, ROW, BIG, BIG, 0, 0, NULL, &s3, NULL, &s3, NULL, &s2,
                         NULL, &s2), LINATTN_ESIZE);
    if (naive) {
        /* The keys' address range is claimed, not read: the output lives
         * on the stack, far from it, so that it meets no input. */
        linattn_strides sk = {3, 0, 0}, sv = {2, 0, 0};
        real far[6];
        for (int i = 0; i < 6; i++)
            far[i] = SENT;
        ck_assert_int_eq(QKV(p, ROW, 1, 1, 3, (int64_t)1 << 31, qb, &s3, kb, &sk,
                             vb, &sv, far, &s2), LINATTN_ESIZE);
        for (int i = 0; i < 6; i++)
            ck_assert(far[i] == SENT);
    }
    ck_assert(untouched());
    /* nothing to do: no problems, or no rows; NULL matrices then allowed */
    ck_assert_int_eq(QKV(p, ROW, 0, 2, 3, 3, NULL, &s3, NULL, &s3, NULL, &s2, NULL, &s2), 0);
    ck_assert_int_eq(QKV(p, ROW, 2, 0, 3, 3, NULL, &s3, NULL, &s3, NULL, &s2, NULL, &s2), 0);
    ck_assert_int_eq(QKV(p, ROW, 2, 2, 0, 0, NULL, &s3, NULL, &s3, NULL, &s2, NULL, &s2), 0);
#undef QKV
    P(plan_destroy)(p);
    /* No keys: their strides are never used, even ones whose offsets would
     * leave int64 (found by the fuzzer); with eps every output is 0. */
    linattn_opts o;
    linattn_opts_init(&o);
    o.eps = 1;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), 0);
    const linattn_strides wild = {3, INT64_MAX / 2, INT64_MAX / 2};
    fill();
    ck_assert_int_eq(call_qkv(naive, p, ROW, 2, 2, 3, 0, qb, &s3, NULL, &wild, NULL,
                              &wild, ob, &s2), 0);
    for (int i = 0; i < 24; i++)
        ck_assert(ob[i] == 0);
    P(plan_destroy)(p);
}
END_TEST

START_TEST(batched_seq_errors)
{
    int naive = _i; /* 0: causal, 1: naive causal */
    P(plan) *p = make_plan(LINATTN_MAP_ELU1, 3, 2, 0, 0, LINATTN_DENOM_POSITIVE);
    linattn_strides neg = {3, 18, -9}, o_same = {2, 0, 6};
    fill();
#define SEQ(...) call_seq(naive, __VA_ARGS__)
    ck_assert_int_eq(SEQ(NULL, ROW, 2, 2, 3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -1);
    ck_assert_int_eq(SEQ(p, 7, 2, 2, 3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -2);
    ck_assert_int_eq(SEQ(p, ROW, -2, 2, 3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -3);
    ck_assert_int_eq(SEQ(p, ROW, 2, -2, 3, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -4);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, -1, qb, &s3, kb, &s3, vb, &s2, ob, &s2), -5);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, NULL, &s3, kb, &s3, vb, &s2, ob, &s2), -6);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &neg, kb, &s3, vb, &s2, ob, &s2), -7);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &s3, NULL, &s3, vb, &s2, ob, &s2), -8);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &s3, kb, NULL, vb, &s2, ob, &s2), -9);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &s3, kb, &s3, NULL, &s2, ob, &s2), -10);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &s3, kb, &s3, vb, &s3, ob, &s2), 0);
    fill();
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &s3, kb, &s3, vb, &neg, ob, &s2), -11);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &s3, kb, &s3, vb, &s2, NULL, &s2), -12);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &s3, kb, &s3, vb, &s2, kb + 30, &s2), -12);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &s3, kb, &s3, vb, &s2, ob, &o_same), -13);
    ck_assert_int_eq(SEQ(p, ROW, 2, 2, 3, qb, &s3, kb, &s3, vb, &s2, ob, NULL), -13);
    ck_assert(untouched());
#undef SEQ
    P(plan_destroy)(p);
}
END_TEST

/* check_finite: a NaN in the last problem's values stops the whole call
 * before anything is written, in every path. */
START_TEST(nonfinite_refused_before_any_write)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.check_finite = 1;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 3, 2, &o), 0);
    for (int path = 0; path < PATHS; path++) {
        fill();
        vb[23] = (real)NAN; /* problem (1, 1), last row */
        tbat q = {ROW, 2, 2, 3, 3, 36, s3, qb}, k = {ROW, 2, 2, 3, 3, 36, s3, kb};
        tbat v = {ROW, 2, 2, 3, 2, 24, s2, vb}, out = {ROW, 2, 2, 3, 2, 24, s2, ob};
        linattn_where w = {-5, -5, -5};
        ck_assert_int_eq(run_batched(path, p, ROW, 2, 2, 3, 3, &q, &k, &v, &out, &w),
                         LINATTN_ENONFINITE);
        ck_assert(untouched());
        ck_assert(w.batch == -5);
    }
    P(plan_destroy)(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("batched (" PREC ")");
    TCase *tc = tcase_create("batched");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, batched_equals_single_calls);
    tcase_add_test(tc, batched_against_reference);
    tcase_add_test(tc, edenom_reports_problem_and_row);
    tcase_add_test(tc, thread_counts_agree);
    tcase_add_loop_test(tc, batched_qkv_errors, 0, 2);
    tcase_add_loop_test(tc, batched_seq_errors, 0, 2);
    tcase_add_test(tc, nonfinite_refused_before_any_write);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
