/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * threads.h -- how many threads a row-parallel path may use.
 *
 * The state is additive, so the library threads at the top: each thread
 * takes a contiguous range of rows, runs the serial path on it with its
 * own workspace and single-threaded BLAS, and the partial states are added
 * in thread order.  OpenBLAS runs the skinny GEMMs of linear attention no
 * faster on two threads than on one (measured: benchmarks/README.md), so
 * this is where the second core pays.
 *
 * OpenBLAS's OpenMP build runs single-threaded inside our parallel region
 * by itself; its pthreads build, called from two threads at once, was
 * measured as fast (46 against 29 GFLOP/s sequential).  OMP_NUM_THREADS
 * caps the count as usual; inside a caller's parallel region the library
 * uses one thread.
 *
 * Short parallel regions between BLAS calls are another matter: after each
 * one OpenMP's threads spin for a while, and OpenBLAS's pthreads workers,
 * which also spin, then fight them for the cores (measured: 2-4x slower).
 * So elementwise work is split over threads only when BLAS is not
 * OpenBLAS's pthreads build (linattn_i_may_thread).
 */
#ifndef LINATTN_THREADS_H
#define LINATTN_THREADS_H

#include <stdint.h>
#include "linattn.h"

/* Elementwise work below this many values stays on one thread: waking
 * the OpenMP team costs microseconds. */
#define LINATTN_PAR_MIN 32768

/* The most threads a row-parallel path uses (workspaces are per thread). */
#define LINATTN_MAX_THREADS 256

/* Threads for rows rows of work, each thread getting at least min_rows. */
int linattn_i_threads(int64_t rows, int64_t min_rows);

/* Nonzero when the library may open a short parallel region for
 * elementwise work between BLAS calls. */
int linattn_i_may_thread(void);

/* Around a row-parallel region: OpenBLAS's pthreads build is asked for one
 * thread per call.  The setting is process-wide: nested and concurrent
 * regions are counted and the last to end restores it.  Pass _end what
 * _begin returned. */
int linattn_i_blas_serial_begin(void);
void linattn_i_blas_serial_end(int began);

/* First row of range t when [0, n) is split into nt ranges. */
int64_t linattn_i_range_start(int64_t n, int nt, int t);

/* The range (of nt over [0, n)) that holds row r. */
int linattn_i_range_of(int64_t n, int nt, int64_t r);

/* Work on rows [lo, hi) by thread t; returns a value the caller reduces
 * by minimum (a first bad row, or 0 for a failure). */
typedef int64_t (*linattn_i_range_fn)(void *ctx, int t, int64_t lo,
                                      int64_t hi);

/* Splits [0, n) into nt contiguous ranges, runs f on each (range t with
 * workspace t, whichever thread of the team takes it; BLAS single-threaded
 * meanwhile) and returns the minimum of the results.  nt = 1 runs
 * f(ctx, 0, 0, n) on the calling thread. */
int64_t linattn_i_parallel_ranges(int nt, int64_t n, linattn_i_range_fn f,
                                  void *ctx);

/* The threads of a batched call over problems: as many as the library
 * uses when there are at least that many problems (each problem on one
 * thread), else 1 (problems one after another, each splitting its rows). */
int linattn_i_problem_threads(int64_t problems);

/* A batched range's bookkeeping: when problem p failed with status st
 * (row: its row for LINATTN_EDENOM and LINATTN_EOVERFLOW) and is the
 * range's first failure (first == INT64_MAX), keeps st and the row (-1
 * for other statuses) and returns p; else returns first. */
static inline int64_t linattn_i_first_failure(int64_t first, int64_t p,
                                              int st, int64_t row,
                                              int *status, int64_t *row_out)
{
    if (!st || first != INT64_MAX)
        return first;
    *status = st;
    *row_out = st == LINATTN_EDENOM || st == LINATTN_EOVERFLOW ? row : -1;
    return p;
}

/* This thread's number inside a region opened with the count above. */
int linattn_i_thread_num(void);

#endif
