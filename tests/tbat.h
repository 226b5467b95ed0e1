/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tbat.h -- batched test matrices for the suites of the batched calls
 * (test_batched, test_grad_batched): problems laid out in memory as the
 * usual arrays are (contiguous, heads interleaved, shared), padding
 * between rows, heads and batch entries holding a sentinel.  Include
 * after testutil.h.
 */
#ifndef LINATTN_TBAT_H
#define LINATTN_TBAT_H

#ifdef _OPENMP
#include <omp.h>
#endif

/* The OpenMP thread count, and setting it (1 and nothing without). */
static inline int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static inline void set_threads(int t)
{
#ifdef _OPENMP
    omp_set_num_threads(t);
#else
    (void)t;
#endif
}

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

static inline int64_t tbat_pos(const tbat *t, int64_t b, int64_t h, int64_t i,
                               int64_t j)
{
    int64_t in = t->layout == ROW ? i * t->s.ld + j : i + j * t->s.ld;
    return b * t->s.batch + h * t->s.head + in;
}

static inline tbat tbat_new(int geometry, int layout, int64_t batch, int64_t heads,
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

static inline tbat tbat_rand(int geometry, int layout, int64_t batch, int64_t heads,
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

static inline tbat tbat_copy(const tbat *t)
{
    tbat c = *t;
    c.a = malloc((size_t)t->len * sizeof(real));
    memcpy(c.a, t->a, (size_t)t->len * sizeof(real));
    return c;
}

static inline real *tbat_at(const tbat *t, int64_t b, int64_t h)
{
    return t->a + b * t->s.batch + h * t->s.head;
}

static inline int tbat_same(const tbat *x, const tbat *y)
{
    return x->len == y->len &&
           !memcmp(x->a, y->a, (size_t)x->len * sizeof(real));
}

/* Nonzero when every position that no problem's element occupies still
 * holds SENT. */
static inline int tbat_gaps_intact(const tbat *t)
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
static inline tmat tbat_problem(const tbat *t, int64_t b, int64_t h)
{
    uint64_t s = 1;
    tmat m = tmat_rand(ROW, t->rows, t->cols, 0, 0, 0, &s);
    for (int64_t i = 0; i < t->rows; i++)
        for (int64_t j = 0; j < t->cols; j++)
            m.a[i * t->cols + j] = t->a[tbat_pos(t, b, h, i, j)];
    return m;
}

/* The batched backward tests' parameter gradients: dw (rows x d in the
 * layout: leading dimension rows in column major, d in row major) and db
 * (NULL: none) added to the row-major sums dwsum and dbsum. */
static inline void tbat_add_params(int layout, int64_t rows, int64_t d,
                                   const real *dw, const real *db,
                                   double *dwsum, double *dbsum)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t c = 0; c < d; c++)
            dwsum[i * d + c] += layout == COL ? dw[i + c * rows]
                                              : dw[i * d + c];
    for (int64_t i = 0; db && i < rows; i++)
        dbsum[i] += db[i];
}

/* max |x - ref| over max |ref| (ref all 0: max |x|). */
static inline double tbat_max_rel(const real *x, const double *ref, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)x[i] - ref[i]));
        den = fmax(den, fabs(ref[i]));
    }
    return den > 0 ? num / den : num;
}

/* A batched call's dw (in the layout, as above) and db (NULL: not asked
 * for) against the row-major sums of the single calls': within tol. */
static inline int tbat_params_close(int layout, int64_t rows, int64_t d,
                                    const real *dw, const real *db,
                                    const double *dwsum, const double *dbsum,
                                    double tol)
{
    double *z = calloc((size_t)(rows * d + rows + 1), sizeof *z);
    tbat_add_params(layout, rows, d, dw, db, z, z + rows * d);
    real *x = malloc((size_t)(rows * d + rows + 1) * sizeof *x);
    for (int64_t i = 0; i < rows * d + rows; i++)
        x[i] = (real)z[i];
    int ok = tbat_max_rel(x, dwsum, rows * d) <= tol &&
             (!db || tbat_max_rel(x + rows * d, dbsum, rows) <= tol);
    free(x), free(z);
    return ok;
}

static inline void tbat_free(tbat *t)
{
    free(t->a);
    t->a = NULL;
}

#endif
