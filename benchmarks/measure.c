/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * measure.c -- the ceilings the benchmarks judge linattn by (measure.h),
 * compiled once per precision (bench_prec.h).
 */
#include <cblas.h>
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "bench_prec.h"
#include "machine.h"
#include "measure.h"
#include "timing.h"

#define MAX_REPS 101

breal *BX(random)(int64_t n, uint64_t *seed)
{
    breal *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    for (int64_t i = 0; a && i < n; i++)
        a[i] = (breal)bench_uniform(seed);
    return a;
}

double BX(gemm_rate)(int size, int reps)
{
    uint64_t seed = 5;
    int64_t len = (int64_t)size * size;
    breal *a = BX(random)(len, &seed), *b = BX(random)(len, &seed);
    breal *c = calloc((size_t)len, sizeof *c);
    double t[MAX_REPS], rate = 0;
    reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
    if (a && b && c) {
        for (int r = -1; r < reps; r++) {
            double t0 = bench_now();
            BLAS(gemm)(CblasRowMajor, CblasNoTrans, CblasNoTrans, size, size,
                       size, 1, a, size, b, size, 0, c, size);
            if (r >= 0)
                t[r] = bench_now() - t0;
        }
        rate = 2.0 * (double)len * size / bench_median(t, reps) / 1e9;
    }
    free(a), free(b), free(c);
    return rate;
}

/* The factored path's GEMM calls on rows [lo, hi) of one problem, into
 * the state s (d x (e + 1), its last column unused: the library's shape). */
static void bare_rows(int64_t lo, int64_t hi, int64_t d, int64_t e,
                      int64_t block, const breal *q, const breal *k,
                      const breal *v, breal *out, breal *s)
{
    for (int64_t i = lo; i < hi; i += block) {
        int b = (int)(hi - i < block ? hi - i : block);
        BLAS(gemm)(CblasRowMajor, CblasTrans, CblasNoTrans, (int)d, (int)e, b,
                   1, k + i * d, (int)d, v + i * e, (int)e, 1, s, (int)(e + 1));
    }
    for (int64_t i = lo; i < hi; i += block) {
        int b = (int)(hi - i < block ? hi - i : block);
        BLAS(gemm)(CblasRowMajor, CblasNoTrans, CblasNoTrans, b, (int)e,
                   (int)d, 1, q + i * d, (int)d, s, (int)(e + 1), 0,
                   out + i * e, (int)e);
    }
}

/* Range t of nt: the first index of [0, n) split evenly. */
static int64_t split(int64_t n, int nt, int t)
{
    return n / nt * t + (t < n % nt ? t : n % nt);
}

double BX(bare_time)(int threads, int64_t problems, int64_t n, int64_t d,
                     int64_t e, int64_t block, const breal *q, const breal *k,
                     const breal *v, breal *out)
{
    int64_t len = d * (e + 1);
    /* The library's choice: problems over threads when there are enough,
     * else rows over threads, a block of rows each at least. */
    int by_problem = threads > 1 && problems >= threads;
    int64_t by_rows = n / block < threads ? n / block : threads;
    int nt = by_problem ? threads : by_rows > 1 ? (int)by_rows : 1;
#ifndef _OPENMP
    nt = 1;
#endif
    breal *s = calloc((size_t)(nt * len), sizeof *s);
    if (!s)
        return -1;
    double t0 = bench_now();
    if (nt == 1) {
        for (int64_t p = 0; p < problems; p++)
            bare_rows(0, n, d, e, block, q + p * n * d, k + p * n * d,
                      v + p * n * e, out + p * n * e, s);
    } else {
        int saved = bench_blas_serial_begin();
#ifdef _OPENMP
#pragma omp parallel num_threads(nt)
#endif
        {
#ifdef _OPENMP
            int t = omp_get_thread_num();
#else
            int t = 0;
#endif
            breal *st = s + t * len;
            if (by_problem) {
                for (int64_t p = split(problems, nt, t);
                     p < split(problems, nt, t + 1); p++)
                    bare_rows(0, n, d, e, block, q + p * n * d, k + p * n * d,
                              v + p * n * e, out + p * n * e, st);
            } else {
                for (int64_t p = 0; p < problems; p++) {
                    bare_rows(split(n, nt, t), split(n, nt, t + 1), d, e,
                              block, q + p * n * d, k + p * n * d,
                              v + p * n * e, out + p * n * e, st);
#ifdef _OPENMP
#pragma omp barrier
#endif
                }
            }
        }
        bench_blas_serial_end(saved);
    }
    double t = bench_now() - t0;
    free(s);
    return t;
}
