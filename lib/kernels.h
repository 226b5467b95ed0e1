/*
 * kernels.h -- compiler hints for the elementwise loops.
 *
 * LINATTN_SIMD asks for vectorization (OpenMP simd, enabled by configure
 * with -fopenmp-simd, which needs no OpenMP runtime).  LINATTN_CLONES
 * compiles a kernel twice, for x86-64-v3 (AVX2 + FMA) and for the baseline,
 * and lets the loader pick: one binary that is fast on current clusters and
 * still runs on old nodes.
 */
#ifndef LINATTN_KERNELS_H
#define LINATTN_KERNELS_H

#ifdef LINATTN_HAVE_OPENMP_SIMD
#define LINATTN_SIMD _Pragma("omp simd")
#else
#define LINATTN_SIMD
#endif

#ifdef LINATTN_HAVE_TARGET_CLONES
#define LINATTN_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LINATTN_CLONES
#endif

#endif
