/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testutil.h -- shared helpers of the test suites: the precision switch
 * (TEST_SINGLE selects float), a seeded generator, matrices in either
 * layout with padded leading dimensions, and reference attention written
 * as plain loops in long double -- independent of BLAS, blocking and the
 * library's layout handling.
 */
#ifndef LINATTN_TESTUTIL_H
#define LINATTN_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#ifdef TEST_SINGLE
typedef float real;
#define P(name) linattn_s_##name
#define TOL 1e-5 /* relative, float */
#define PREC "float"
#else
typedef double real;
#define P(name) linattn_d_##name
#define TOL 1e-12 /* relative, double */
#define PREC "double"
#endif

/* xorshift64*: reproducible data on every platform. */
static inline double test_uniform(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53;
}

/* n entries uniform in [lo, hi), malloc'd (one entry at least). */
static inline real *test_rand_vec(int64_t n, double lo, double hi,
                                  uint64_t *s)
{
    real *x = malloc((size_t)(n > 0 ? n : 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (real)(lo + (hi - lo) * test_uniform(s));
    return x;
}

/* A rows x cols matrix in layout with leading dimension (natural + pad);
 * padding is filled with a sentinel so that reads of it show up. */
typedef struct {
    int layout;
    int64_t rows, cols, ld;
    real *a;
} tmat;

static inline real *tmat_at(const tmat *m, int64_t i, int64_t j)
{
    return m->layout == LINATTN_COL_MAJOR ? m->a + i + j * m->ld
                                          : m->a + i * m->ld + j;
}

/* Entries uniform in [lo, hi). */
static inline tmat tmat_rand(int layout, int64_t rows, int64_t cols,
                             int64_t pad, double lo, double hi, uint64_t *s)
{
    tmat m = {layout, rows, cols, 0, NULL};
    m.ld = (layout == LINATTN_COL_MAJOR ? rows : cols) + pad;
    if (m.ld < 1)
        m.ld = 1;
    int64_t outer = layout == LINATTN_COL_MAJOR ? cols : rows;
    size_t len = (size_t)(outer > 0 ? outer : 1) * (size_t)m.ld;
    m.a = malloc(len * sizeof(real));
    for (size_t i = 0; i < len; i++)
        m.a[i] = (real)1e30; /* sentinel in the padding */
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            *tmat_at(&m, i, j) = (real)(lo + (hi - lo) * test_uniform(s));
    return m;
}

static inline tmat tmat_like(const tmat *x, int64_t rows, int64_t cols,
                             int64_t pad)
{
    uint64_t s = 1;
    return tmat_rand(x->layout, rows, cols, pad, 0, 0, &s);
}

static inline void tmat_free(tmat *m)
{
    free(m->a);
    m->a = NULL;
}

/* phi of one value for the elementwise maps, in long double. */
static inline long double ref_phi(int map, long double x)
{
    switch (map) {
    case LINATTN_MAP_ELU1:
        return x > 0 ? x + 1 : expl(x);
    case LINATTN_MAP_RELU:
        return x > 0 ? x : 0;
    default:
        return x;
    }
}

/* out = (fq fk^T V) / (fq fk^T 1) from feature rows fq (nq x m) and fk
 * (nk x m), row major, by plain loops; with causal set, row i sums over
 * keys j <= i only.  (The kernelized maps' tests evaluate phi elsewhere.) */
static inline void ref_linear_phi(const long double *fq, const long double *fk,
                                  int64_t m, int causal, const tmat *v,
                                  int64_t nq, long double *out)
{
    int64_t nk = v->rows, e = v->cols;
    for (int64_t i = 0; i < nq; i++) {
        long double den = 0;
        for (int64_t c = 0; c < e; c++)
            out[i * e + c] = 0;
        for (int64_t j = 0; j < (causal ? i + 1 : nk); j++) {
            long double a = 0;
            for (int64_t t = 0; t < m; t++)
                a += fq[i * m + t] * fk[j * m + t];
            den += a;
            for (int64_t c = 0; c < e; c++)
                out[i * e + c] += a * *tmat_at(v, j, c);
        }
        for (int64_t c = 0; c < e; c++)
            out[i * e + c] /= den;
    }
}

/* phi of every entry of x (elementwise maps), row major. */
static inline long double *ref_phi_rows(int map, const tmat *x)
{
    long double *f = malloc((size_t)(x->rows * x->cols + 1) * sizeof *f);
    for (int64_t i = 0; i < x->rows; i++)
        for (int64_t t = 0; t < x->cols; t++)
            f[i * x->cols + t] = ref_phi(map, *tmat_at(x, i, t));
    return f;
}

/* out = (phi(Q) phi(K)^T V) / (phi(Q) phi(K)^T 1) for an elementwise map,
 * by plain loops; with causal set, row i sums over keys j <= i only. */
static inline void ref_linear_mask(int map, int causal, const tmat *q,
                                   const tmat *k, const tmat *v,
                                   long double *out)
{
    long double *fq = ref_phi_rows(map, q), *fk = ref_phi_rows(map, k);
    ref_linear_phi(fq, fk, q->cols, causal, v, q->rows, out);
    free(fq);
    free(fk);
}

static inline void ref_linear(int map, const tmat *q, const tmat *k,
                              const tmat *v, long double *out)
{
    ref_linear_mask(map, 0, q, k, v, out);
}

/* out = softmax(scale Q K^T) V, by plain loops. */
static inline void ref_softmax(long double scale, const tmat *q, const tmat *k,
                               const tmat *v, long double *out)
{
    int64_t nq = q->rows, nk = k->rows, d = q->cols, e = v->cols;
    long double *s = malloc((size_t)nk * sizeof *s);
    for (int64_t i = 0; i < nq; i++) {
        long double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < nk; j++) {
            long double a = 0;
            for (int64_t t = 0; t < d; t++)
                a += (long double)*tmat_at(q, i, t) * *tmat_at(k, j, t);
            s[j] = scale * a;
            mx = s[j] > mx ? s[j] : mx;
        }
        for (int64_t c = 0; c < e; c++)
            out[i * e + c] = 0;
        for (int64_t j = 0; j < nk; j++) {
            long double w = expl(s[j] - mx);
            sum += w;
            for (int64_t c = 0; c < e; c++)
                out[i * e + c] += w * *tmat_at(v, j, c);
        }
        for (int64_t c = 0; c < e; c++)
            out[i * e + c] /= sum;
    }
    free(s);
}

/* max |x - ref| / max |ref| over an nq x e result. */
static inline double rel_err(const tmat *x, const long double *ref)
{
    long double num = 0, den = 0;
    for (int64_t i = 0; i < x->rows; i++)
        for (int64_t c = 0; c < x->cols; c++) {
            long double r = ref[i * x->cols + c];
            long double diff = fabsl(*tmat_at(x, i, c) - r);
            num = diff > num ? diff : num;
            den = fabsl(r) > den ? fabsl(r) : den;
        }
    return (double)(den > 0 ? num / den : num);
}

/* Same measure between two results of the same shape. */
static inline double rel_diff(const tmat *x, const tmat *y)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < x->rows; i++)
        for (int64_t c = 0; c < x->cols; c++) {
            double a = *tmat_at(x, i, c), b = *tmat_at(y, i, c);
            num = fabs(a - b) > num ? fabs(a - b) : num;
            den = fabs(b) > den ? fabs(b) : den;
        }
    return den > 0 ? num / den : num;
}

/* Nonzero when the padding of m still holds the sentinel. */
/* max |a_i - b_i| / max |b_i| over n entries (the absolute difference
 * when b is 0). */
static inline double vec_rel_diff(const real *a, const real *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num = fmax(num, fabs((double)a[i] - (double)b[i]));
        den = fmax(den, fabs((double)b[i]));
    }
    return den > 0 ? num / den : num;
}

static inline int tmat_padding_intact(const tmat *m)
{
    int64_t inner = m->layout == LINATTN_COL_MAJOR ? m->rows : m->cols;
    int64_t outer = m->layout == LINATTN_COL_MAJOR ? m->cols : m->rows;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = inner; i < m->ld; i++)
            if (m->a[o * m->ld + i] != (real)1e30)
                return 0;
    return 1;
}

/* Nonzero when a test may cap the address space: no cap is in force
 * already and LINATTN_NO_RLIMIT is unset (sanitizer builds reserve
 * terabytes of address space and cannot run under a cap; check-hard sets
 * it).  Such tests ask first and return at once when not: skipped.  Check
 * runs each test in its own process, so a cap does not leak into others. */
static inline int address_cap_allowed(void)
{
    struct rlimit old;
    getrlimit(RLIMIT_AS, &old);
    return old.rlim_cur == RLIM_INFINITY && !getenv("LINATTN_NO_RLIMIT");
}

/* Caps the address space at what the process maps now plus extra bytes,
 * so that a larger allocation fails. */
static inline void cap_address_space(size_t extra)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    ck_assert(pages > 0);
    struct rlimit lim;
    lim.rlim_cur = lim.rlim_max = (rlim_t)pages * 4096u + extra;
    ck_assert_int_eq(setrlimit(RLIMIT_AS, &lim), 0);
}

/* Threads for the calls that follow (without OpenMP: always one); returns
 * the count before. */
static inline int test_set_threads(int t)
{
#ifdef _OPENMP
    int old = omp_get_max_threads();
    omp_set_num_threads(t);
    return old;
#else
    (void)t;
    return 1;
#endif
}

/* Runs a suite; the process exit status says whether every test passed. */
static inline int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
