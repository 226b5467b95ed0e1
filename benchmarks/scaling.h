/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scaling.h -- the measuring half of linattn-scaling: data, plans and
 * interleaved timings for one size, in either precision (scaling_run.c,
 * compiled twice).  The driver (linattn_scaling.c) chooses sizes and
 * paths, writes the CSV and fits.
 */
#ifndef LINATTN_SCALING_H
#define LINATTN_SCALING_H

#include <signal.h>
#include <stdint.h>

/* The paths a study times.  BARE is the factored path's GEMM calls alone
 * (its ceiling); NAIVE_CAUSAL is timed only on request. */
enum scaling_path {
    SP_NAIVE,
    SP_SOFTMAX,
    SP_FACTORED,
    SP_CAUSAL,
    SP_NAIVE_CAUSAL,
    SP_BARE,
    SP_COUNT
};

#define SCALING_MAX_REPS 101
#define SCALING_MAX_THREADS 16 /* thread counts in one study */

typedef struct {
    int map;
    int64_t d, m, e, block, chunk;
    int64_t batch, heads;
    int reps;
    int nthreads;                      /* thread counts to interleave */
    int threads[SCALING_MAX_THREADS];
    volatile sig_atomic_t *stop;       /* set: stop at the next call */
} scaling_cfg;

/* One path at one size and thread count: per-repetition seconds per call
 * (each repetition times the paths and thread counts back to back), and
 * the rise of peak memory during its warm-up call (-1: unknown). */
typedef struct {
    int ran;
    double t[SCALING_MAX_REPS];
    int64_t peak_rise;
} scaling_result;

/* Statuses besides a library status: memory for the data, interrupted. */
#define SCALING_ENOMEM (-1000)
#define SCALING_STOPPED (-1001)

/* A study's data and plan, in either precision (the same handle type for
 * both, so that the driver picks the precision through a table). */
typedef struct scaling scaling;

#define SCALING_DEFINE(X)                                                     \
/* Plans and random data for sizes up to nmax (batch x heads problems of    \
 * nmax rows, [B][H][n][c], reused by prefix for smaller n).  Returns 0, a  \
 * linattn status (the plan), or SCALING_ENOMEM. */                           \
int X(scaling_create)(scaling **s, const scaling_cfg *cfg, int64_t nmax);     \
                                                                              \
/* The plan's feature count m, rows per block, rows of its projection W  \
 * (0: none) and causal chunk (the default when cfg's is 0). */             \
void X(scaling_dims)(const scaling *s, int64_t *m, int64_t *block,            \
                     int64_t *wrows, int64_t *chunk);                         \
                                                                              \
/* Times the paths in the bit mask paths at n rows: one warm-up call each  \
 * (its peak memory noted), then cfg->reps repetitions, each running every \
 * path at every thread count once.  A call shorter than a millisecond is  \
 * repeated within a sample and averaged.  res[t][p] for thread count t.   \
 * Returns 0, a linattn status, SCALING_ENOMEM, or SCALING_STOPPED. */       \
int X(scaling_measure)(scaling *s, int64_t n, unsigned paths,                 \
                       scaling_result res[][SP_COUNT]);                       \
                                                                              \
void X(scaling_destroy)(scaling *s);

#define SCALING_MANGLE_D(name) bench_d_##name
#define SCALING_MANGLE_S(name) bench_s_##name
SCALING_DEFINE(SCALING_MANGLE_D)
SCALING_DEFINE(SCALING_MANGLE_S)

#endif
