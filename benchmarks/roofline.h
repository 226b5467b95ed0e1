/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roofline.h -- how far a call is from what the machine can do at all.
 *
 * The ceilings are measured in the benchmark's own run, with its thread
 * count: the square GEMM rate of the precision (2048^3 dgemm or sgemm)
 * and the streaming bandwidth of read, copy and triad over arrays far
 * larger than the caches (STREAM's kernels; copy counts 2 and triad 3
 * words per element, as STREAM does).  A call's floor is
 *
 *     floor = max(flops / gemm_rate, bytes / bandwidth)
 *
 * with bandwidth the best of the three kernels (a floor must not exceed
 * what the machine can do), and flops and bytes counted from the
 * algorithm as linattn runs it, passes, re-reads and prefix work
 * included, except that the causal chunks' triangles count only their
 * lower half, all the algorithm needs (bench_work_*: what each counts is
 * said there).  time / floor is the figure the performance targets use.
 */
#ifndef LINATTN_ROOFLINE_H
#define LINATTN_ROOFLINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    int threads;      /* the thread count they were measured with       */
    size_t elem;      /* the precision: 8 double, 4 float               */
    double gemm;      /* square GEMM, flop/s                            */
    double read, copy, triad; /* streaming bandwidth, bytes/s          */
} bench_roofline;

/* The ceilings with the current thread count (bench_set_threads), elem
 * 8 or 4, medians of reps (>= 1) after a warm-up.  Exits on out of
 * memory (the arrays: 3 x 2^24 doubles, 384 MiB). */
bench_roofline bench_roofline_measure(size_t elem, int reps);

/* Only the streaming part of bench_roofline_measure: r->read, copy and
 * triad (and threads) with the current thread count. */
void bench_roofline_stream(bench_roofline *r, int reps);

/* The best streaming bandwidth of r, bytes/s. */
double bench_roofline_bandwidth(const bench_roofline *r);

/* "roofline (...): GEMM ... GFLOP/s, read ... copy ... triad ... GB/s". */
void bench_roofline_print(FILE *out, const bench_roofline *r);

/* A call's work: floating-point operations and bytes that must move
 * between memory and the cores. */
typedef struct {
    double flops, bytes;
} bench_work;

/* Seconds: max(w.flops / r->gemm, w.bytes / bandwidth). */
double bench_roofline_floor(const bench_roofline *r, bench_work w);

/* Which term sets the floor: "flops" or "bytes". */
const char *bench_roofline_bound(const bench_roofline *r, bench_work w);

/* Factored non-causal attention as attn/attention.c runs it, nq queries
 * and nk keys, m features, wrows rows of a projection W (0: an
 * elementwise map, whose few operations a feature are not counted): the
 * features (2 wrows d a row), the state S and z (2 nk m (e + 1): one
 * GEMM of width e and the column sums), the queries' numerators and
 * normalizers (2 nq m (e + 1)) and the division (nq e); bytes: Q, K, V
 * read once and out written once (features and the state stay in cache
 * block by block; the per-thread partial states, m (e + 1) each, are
 * negligible). */
bench_work bench_work_attention(int64_t nq, int64_t nk, int64_t d, int64_t m,
                                int64_t e, int64_t wrows, size_t elem);

/* Chunked causal attention as attn/causal.c runs it, chunks of c rows,
 * over threads ranges: per chunk of r rows the carried state's terms
 * phi(Q_c) S and phi(Q_c) z (2 r m (e + 1)), the triangles phi(Q_c)
 * phi(K_c)^T, tril(A) [V_c 1] counted at their lower half (r (r + 1) / 2
 * entries: what the algorithm needs; causal.c computes A's whole square
 * today), the state update S += phi(K_c)^T V_c and z (2 r m (e + 1)), the
 * division (r e); with threads > 1 the prefix pass: the states of every
 * range but the last built first (2 m (e + 1) a row, K and V read
 * again).  Bytes: Q, K, V read and out written once. */
bench_work bench_work_causal(int64_t n, int64_t d, int64_t m, int64_t e,
                             int64_t wrows, int64_t c, int threads,
                             size_t elem);

/* The non-causal backward as grad/attention_grad.c runs it: the keys'
 * state rebuilt (2 nk m (e + 1)); over the queries d[S z] and dphi(Q)
 * (4 nq m (e + 1)) and [g h] (3 nq e); over the keys dphi(K) and dV
 * (2 nk m (e + 1) + 2 nk m e); the keys' features twice, the queries'
 * once, the projection's backward (dx and dW: 4 wrows d a row).  Bytes:
 * K and V read twice, Q, G, out, den read once, dQ, dK, dV written. */
bench_work bench_work_attention_backward(int64_t nq, int64_t nk, int64_t d,
                                         int64_t m, int64_t e, int64_t wrows,
                                         size_t elem);

/* The causal backward as grad/causal_grad.c runs it, two sweeps over
 * chunks of c rows: the forward sweep (P's lower half, dphi(Q_c) from
 * the carried state and from tril(P) phi(K_c), the state update, and in
 * the ranges after the first their D) and the reverse sweep (A's and P's
 * lower halves again, dphi(K_c) and dV_c from D and from the chunk's
 * triangles, D's update), [g h] in each; features in both sweeps; the
 * prefix pass over threads - 1 ranges.  Bytes: Q, K, V, G, out, den read
 * in each sweep, dQ, dK, dV written, K and V again for the prefix. */
bench_work bench_work_causal_backward(int64_t n, int64_t d, int64_t m,
                                      int64_t e, int64_t wrows, int64_t c,
                                      int threads, size_t elem);

/* The causal forward that keeps its chunk states (extras.chunk_states):
 * bench_work_causal and the states written.  Its backward reading them,
 * one reverse sweep: per chunk P and A once, dphi(Q_c) from the saved
 * state and tril(P) phi(K_c), dphi(K_c) and dV_c from D and the
 * triangles, D's update, [g h]; features once; the ranges' own D over
 * threads - 1 ranges first (queries' features, [g h], one product).
 * Bytes: Q, K, V, G, out, den read once, dQ, dK, dV written, the states
 * read, and the queries, G, out, den of the later ranges again. */
bench_work bench_work_causal_saved(int64_t n, int64_t d, int64_t m, int64_t e,
                                   int64_t wrows, int64_t c, int threads,
                                   size_t elem);
bench_work bench_work_causal_saved_backward(int64_t n, int64_t d, int64_t m,
                                            int64_t e, int64_t wrows,
                                            int64_t c, int threads,
                                            size_t elem);

/* The causal chunk a plan built with chunk 0 uses (lib/attn/plan.h's
 * LINATTN_DEFAULT_CHUNK: 32 rows in double, 48 in float; keep them
 * equal). */
static inline int64_t bench_default_chunk(size_t elem)
{
    return elem == 4 ? 48 : 32;
}

/* The threads linattn splits n rows over (lib/common/threads.c): one per
 * min_rows rows, at most threads. */
static inline int bench_split_threads(int64_t n, int64_t min_rows,
                                      int threads)
{
    int64_t t = min_rows > 0 ? n / min_rows : threads;
    return t < 1 ? 1 : t < threads ? (int)t : threads;
}

#endif
