/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * measure.h -- what the benchmarks measure besides the library: the
 * machine's GEMM rate, and the GEMM calls of the factored path alone.
 * Declared for both precisions from one template (bench_d_*, bench_s_*).
 */
#ifndef LINATTN_MEASURE_H
#define LINATTN_MEASURE_H

#include <stdint.h>

#define BENCH_DEFINE_MEASURE(X, R)                                            \
/* n values uniform in [-1, 1) (timing.h's generator); NULL when memory is  \
 * short. */                                                                  \
R *X(random)(int64_t n, uint64_t *seed);                                      \
                                                                              \
/* GFLOP/s of a size^3 GEMM (2 size^3 flops), median of reps after one     \
 * warm-up, with BLAS's threads as they are set; 0 when memory is short. */  \
double X(gemm_rate)(int size, int reps);                                      \
                                                                              \
/* Seconds of the GEMM calls the factored path makes, alone, for problems   \
 * problems of n rows: state blocks S += K_b^T V_b, then query blocks       \
 * out_b = Q_b S, for d x e states (the library adds phi, the column sums,  \
 * the normalizers and the division).  q, k are problems x n x d and v,     \
 * out problems x n x e, contiguous.  threads > 1 splits the work as the    \
 * batched call does (problems over threads when there are at least as     \
 * many, else each problem's rows over threads, one block of rows per       \
 * thread at least), with single-threaded BLAS in each thread; threads = 1  \
 * makes every call from the calling thread with BLAS's threads as set.     \
 * A negative result: out of memory. */                                      \
double X(bare_time)(int threads, int64_t problems, int64_t n, int64_t d,      \
                    int64_t e, int64_t block, const R *q, const R *k,         \
                    const R *v, R *out);

#define BENCH_MANGLE_D(name) bench_d_##name
#define BENCH_MANGLE_S(name) bench_s_##name
BENCH_DEFINE_MEASURE(BENCH_MANGLE_D, double)
BENCH_DEFINE_MEASURE(BENCH_MANGLE_S, float)

#endif
