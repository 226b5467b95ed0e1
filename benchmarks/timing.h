/* SPDX-License-Identifier: BSD-3-Clause */
/* timing.h -- what the benchmarks share: wall clock, medians,
 * reproducible random matrices, option parsing. */
#ifndef LINATTN_TIMING_H
#define LINATTN_TIMING_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The clock of bench_now: wall-clock time, or, when the environment has
 * BENCH_CLOCK=cpu (the benchmarks' --cpu-time sets it first thing), the
 * CPU time of the process -- on one thread (OMP_NUM_THREADS=1
 * OPENBLAS_NUM_THREADS=1) the time the work itself took, whatever other
 * jobs share the machine, while the wall clock also counts the slices
 * they took.  (With more threads it sums them, spinning included.)  Read
 * from the environment so that every file of a benchmark agrees. */
static inline clockid_t bench_clock(void)
{
    static int cpu = -1;
    if (cpu < 0) {
        const char *c = getenv("BENCH_CLOCK");
        cpu = c && !strcmp(c, "cpu");
    }
    return cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC;
}

/* Makes bench_now use the process's CPU time (before any timing). */
static inline void bench_use_cpu_time(void)
{
    setenv("BENCH_CLOCK", "cpu", 1);
}

static inline double bench_now(void)
{
    struct timespec t;
    clock_gettime(bench_clock(), &t);
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
