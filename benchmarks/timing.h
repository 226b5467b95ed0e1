/* SPDX-License-Identifier: BSD-3-Clause */
/* timing.h -- what the benchmarks share: wall clock, medians,
 * reproducible random matrices, option parsing. */
#ifndef LINATTN_TIMING_H
#define LINATTN_TIMING_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static inline double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of n samples (sorts them). */
static inline double bench_median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, bench_cmp);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* The next value uniform in [-1, 1) from a seeded LCG. */
static inline double bench_uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-53 * 2 - 1;
}

/* An integer option value in [lo, hi] into *out; 0 when s is not one. */
static inline int bench_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

/* n values uniform in [-1, 1); exits on out of memory (a benchmark has
 * nothing to fall back to). */
static inline double *bench_random(int64_t n, uint64_t *s)
{
    double *a = malloc((size_t)n * sizeof *a);
    if (!a) {
        fprintf(stderr, "benchmark: out of memory for %lld values\n",
                (long long)n);
        exit(1);
    }
    for (int64_t i = 0; i < n; i++)
        a[i] = bench_uniform(s);
    return a;
}

#endif
