/* SPDX-License-Identifier: BSD-3-Clause */
/* blas_rate.h -- the BLAS ceiling the benchmarks compare with: a large
 * square cblas_dgemm (2048^3), timed call by call so that a benchmark can
 * interleave it with the paths it judges, or as a median rate. */
#ifndef LINATTN_BLAS_RATE_H
#define LINATTN_BLAS_RATE_H

#include <cblas.h>
#include <stdlib.h>
#include "timing.h"

#define BENCH_DGEMM_N 2048

typedef struct {
    int n;
    double *a, *b, *c;
} bench_dgemm;

static inline bench_dgemm bench_dgemm_setup(void)
{
    uint64_t seed = 5;
    bench_dgemm g = {BENCH_DGEMM_N, NULL, NULL, NULL};
    int64_t len = (int64_t)g.n * g.n;
    g.a = bench_random(len, &seed);
    g.b = bench_random(len, &seed);
    g.c = bench_random(len, &seed);
    return g;
}

/* Seconds of one n^3 dgemm. */
static inline double bench_dgemm_seconds(bench_dgemm *g)
{
    double t0 = bench_now();
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n,
                1, g->a, g->n, g->b, g->n, 0, g->c, g->n);
    return bench_now() - t0;
}

static inline double bench_dgemm_flops(const bench_dgemm *g)
{
    return 2.0 * g->n * g->n * (double)g->n;
}

static inline void bench_dgemm_free(bench_dgemm *g)
{
    free(g->a), free(g->b), free(g->c);
}

/* GFLOP/s of the square dgemm: the machine's practical peak for BLAS;
 * median of reps calls after a warm-up. */
static inline double bench_square_dgemm_rate(int reps)
{
    bench_dgemm g = bench_dgemm_setup();
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) {
        fprintf(stderr, "benchmark: out of memory\n");
        exit(1);
    }
    bench_dgemm_seconds(&g);
    for (int r = 0; r < reps; r++)
        t[r] = bench_dgemm_seconds(&g);
    double rate = bench_dgemm_flops(&g) / bench_median(t, reps) / 1e9;
    free(t);
    bench_dgemm_free(&g);
    return rate;
}

#endif
