/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scaling_report.h -- what linattn-scaling makes of its measurements: the
 * CSV rows (each written whole, so that the file is valid whenever the
 * run stops), the progress lines, and the summary: log-log slopes, the
 * crossover n, speed ratios and fractions of the machine's ceilings.
 *
 * Counts per problem (x batch x heads), documented in benchmarks/README.md:
 *   flops   factored, causal   4 n m e + 3 n m   (state 2 n m e, z n m,
 *                                                 queries 2 n m (e + 1));
 *                                                 causal is credited with
 *                                                 the same useful work, its
 *                                                 chunk triangles are not
 *           bare_gemm          4 n m e           (its GEMM calls only)
 *           naive              2 n^2 (m + e)
 *           naive_causal       n (n + 1) (m + e) (the useful triangle)
 *           softmax            2 n^2 (d + e)     (exponentials not counted)
 *           phi itself (W x for the random-feature maps, 2 n m d more) is
 *           not counted for any path
 *   bytes   every path reads Q, K, V and writes out once: n (2d + 2e)
 *           values; the quadratic ones also write their n x n scores once
 *           and read them twice: + 3 n^2 (causal: + 3 n (n + 1) / 2).
 *   floor_s factored, causal: max(flops / GEMM rate, bytes / bandwidth)
 *           with the work of roofline.h's bench_work_attention and
 *           bench_work_causal (the algorithm as linattn runs it:
 *           causal's triangles at their lower half, its prefix pass,
 *           the projection of the maps with W), x_floor the median time
 *           over it; the last CSV columns.
 */
#ifndef LINATTN_SCALING_REPORT_H
#define LINATTN_SCALING_REPORT_H

#include <stdio.h>
#include "linattn.h"
#include "roofline.h"
#include "scaling.h"

#define SCALING_MAX_LG 40 /* n up to 2^40 */

extern const char *const scaling_path_names[SP_COUNT];

/* A study so far: its settings, the ceilings measured at the start, and
 * the results of every size that finished (NULL for the others). */
typedef struct {
    const char *precision, *gemm_name, *map_name;
    linattn_platform platform; /* what the study ran on */
    size_t elem;
    scaling_cfg cfg; /* m, block and chunk as the plan has them */
    int64_t wrows;   /* rows of the plan's projection W (0: none) */
    int n_min, n_max;
    double fit_time; /* slopes fit sizes whose median time is at least this */
    double gemm_rate[SCALING_MAX_THREADS]; /* GFLOP/s per thread count */
    /* the ceilings per thread count: the GEMM rate above (flop/s) and the
     * streaming bandwidth, for the paths' floors (roofline.h) */
    bench_roofline roof[SCALING_MAX_THREADS];
    scaling_result (*res[SCALING_MAX_LG + 1])[SP_COUNT];
} scaling_log;

/* Creates path (truncating) and writes the header line; returns the file
 * descriptor or -1 (errno set). */
int scaling_csv_open(const char *path);

/* Appends the rows of size 2^lg, one write() and a flush to disk per
 * line; returns 0 or -1 (errno set). */
int scaling_csv_rows(int fd, const scaling_log *log, int lg);

/* One line per thread count on out: the size's median times, and the
 * factored path's speed ratio to naive. */
void scaling_progress(FILE *out, const scaling_log *log, int lg,
                      double elapsed);

/* The summary (slopes, crossover, ratios at chosen sizes) on out and, as
 * quantity,path,threads,n,value,note lines, into path (written to a
 * temporary name and renamed, so never half written).  Returns 0 or -1. */
int scaling_summary(const scaling_log *log, const char *path, FILE *out);

/* Median of count values (sorts a copy). */
double scaling_median(const double *t, int count);

#endif
