/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpidata.h -- what the C MPI test programs share: this rank's block of
 * a global sequence (uneven splits, ranks without rows), views of it,
 * sentinels, plans, a shared directory.  After testutil.h and
 * mpitest.h.
 */
#ifndef LINATTN_MPIDATA_H
#define LINATTN_MPIDATA_H

#ifdef TEST_SINGLE
#define MP(name) linattn_mpi_s_##name
#else
#define MP(name) linattn_mpi_d_##name
#endif

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR
#define WORLD MPI_COMM_WORLD

/* ---- the global sequence and this rank's block ---- */

/* Split patterns of n rows over the ranks, in rank order. */
enum { EVEN, SKEWED, ALL_LAST, ALL_FIRST, SPLITS };

static inline void block_of(int64_t n, int pattern, int64_t *off,
                            int64_t *cnt)
{
    int64_t c[64] = {0}, total = 0;
    for (int r = 0; r < mt_size; r++) {
        switch (pattern) {
        case EVEN: c[r] = n / mt_size + (r < n % mt_size); break;
        /* rank 0 and every third rank empty, rank 1 one row, the rest
         * growing; the remainder to the last rank */
        case SKEWED: c[r] = r % 3 == 0 ? 0 : r == 1 ? 1 : n / (3 * mt_size) * r; break;
        case ALL_LAST: c[r] = r == mt_size - 1 ? n : 0; break;
        default: c[r] = r == 0 ? n : 0; break;
        }
        if (total + c[r] > n)
            c[r] = n - total;
        total += c[r];
    }
    c[mt_size - 1] += n - total;
    *off = 0;
    for (int r = 0; r < mt_rank; r++)
        *off += c[r];
    *cnt = c[mt_rank];
}

/* Rows [off, off + cnt) of a global matrix, as a matrix of its own (same
 * leading dimension: larger than its rows in column major). */
static inline tmat view(const tmat *g, int64_t off, int64_t cnt)
{
    tmat v = *g;
    v.rows = cnt;
    v.a = g->layout == COL ? g->a + off : g->a + off * g->ld;
    return v;
}

#define SENTINEL ((real)-7.5)

static inline void fill(tmat *m, real x)
{
    int64_t outer = m->layout == COL ? m->cols : m->rows;
    for (int64_t i = 0; i < outer * m->ld; i++)
        m->a[i] = x;
}

/* Nonzero when every entry of m's buffer (padding included) outside rows
 * [off, off + cnt) still holds x. */
static inline int outside_untouched(const tmat *m, int64_t off, int64_t cnt,
                                    real x)
{
    int cm = m->layout == COL;
    int64_t outer = cm ? m->cols : m->rows;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < m->ld; in++) {
            int64_t i = cm ? in : o, j = cm ? o : in;
            int mine = i >= off && i < off + cnt && i < m->rows && j < m->cols;
            if (!mine && m->a[o * m->ld + in] != x)
                return 0;
        }
    return 1;
}

/* Nonzero when the entries of a and b (same shape) have the same bits. */
static inline int same_bits(const tmat *a, const tmat *b)
{
    for (int64_t i = 0; i < a->rows; i++)
        for (int64_t j = 0; j < a->cols; j++)
            if (memcmp(tmat_at(a, i, j), tmat_at(b, i, j), sizeof(real)))
                return 0;
    return 1;
}

static inline int all_equal(const tmat *m, real x)
{
    return outside_untouched(m, 0, 0, x);
}

static inline P(plan) *make_plan(int map, int64_t d, int64_t e,
                                 uint64_t seed, double input_scale, int denom,
                                 int check_finite)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.seed = seed;
    o.block = 16; /* blocks and chunks that do not divide the rows */
    o.chunk = 5;
    o.input_scale = input_scale;
    o.denom = denom;
    o.check_finite = check_finite;
    P(plan) *p = NULL;
    int st = P(plan_create)(&p, map, d, e, &o);
    MT_CHECK(st == 0, "plan_create %d", st);
    return p;
}

/* Row-major Q, K, V without padding, entries in [lo, hi). */
static inline void plain_data(int64_t n, int64_t d, int64_t e, double lo,
                              double hi, uint64_t seed, tmat *q, tmat *k,
                              tmat *v)
{
    *q = tmat_rand(ROW, n, d, 0, lo, hi, &seed);
    *k = tmat_rand(ROW, n, d, 0, lo, hi, &seed);
    *v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
}

static inline void free_data(tmat *q, tmat *k, tmat *v)
{
    tmat_free(q), tmat_free(k), tmat_free(v);
}

/* A directory for this run's files, made by rank 0, known to all. */
static inline void shared_dir(char *dir, size_t len)
{
    if (mt_rank == 0) {
        const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
        snprintf(dir, len, "%s/linattn-mpi-XXXXXX", tmp);
        if (!mkdtemp(dir))
            dir[0] = 0;
    }
    MPI_Bcast(dir, (int)len, MPI_CHAR, 0, WORLD);
}

#endif
