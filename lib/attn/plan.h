/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn/plan.h -- the object behind a plan handle, and the library's default
 * block and chunk sizes.  Not installed.
 */
#ifndef LINATTN_ATTN_PLAN_H
#define LINATTN_ATTN_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "common/blas.h"
#include "common/prec.h"

/* Default rows per block.  Each thread streams its own rows with
 * single-threaded BLAS, and a block of phi (1024 x 64 doubles = 512 KiB)
 * then stays in that core's L2 between being written and being read by
 * GEMM.  256 to 8192 were measured (benchmarks/bench_core --block): 256 to
 * 1024 are equal within noise at d = e = 64, larger blocks lose 5-10%. */
#define LINATTN_DEFAULT_BLOCK 1024

/* Default causal chunk C.  The square of scores and the triangle cost
 * 2 C m + C e flops per row against 4 m e for the state, so C wants to be
 * small, but not so small that the GEMMs lose their rate.  With the BLAS
 * path (AVX2, OpenBLAS), n = 2^20, d = e = 64, elu+1, two threads, against
 * the non-causal call (benchmarks/bench_causal --full): C = 16 ran 1.71x,
 * 32 1.68x, 64 1.95x, 128 2.13x.  With the AVX-512 micro-kernels, one
 * thread, n = 2^16, double: 16 1.93-2.09x, 32 1.61-1.76x, 48 1.69-1.75x,
 * 64 2.2-2.4x; float, 8 heads x 32768 (ns per row): 32 253, 48 230-233,
 * 64 228 (doc/performance.md). */
#ifdef LINATTN_SINGLE
#define LINATTN_DEFAULT_CHUNK 48
#else
#define LINATTN_DEFAULT_CHUNK 32
#endif

/* The naive baselines hold rows x nk scores; this caps rows * nk. */
#define LINATTN_NAIVE_SCORES 4194304

struct X(plan_s) {
    int map;
    int64_t d, m, e;
    int64_t block;
    int64_t chunk; /* causal chunk size C */
    int denom;
    real eps;
    uint64_t seed;
    int check_finite;
    uint64_t fingerprint; /* equal for plans whose states may be merged */
    /* The kernelized maps (maps/features.c; doc/maps.md). */
    int act;            /* LINATTN_ACT_* of a custom map, else 0          */
    int draw;           /* LINATTN_DRAW_* of the random maps              */
    int shifted;        /* features carry exp(-shift): FAVOR, FAVOR_HYP,  */
                        /* TRIG, custom EXP                               */
    double input_scale; /* s in x~ = s x (resolved: never 0)              */
    int64_t wrows;      /* rows of W, 0 for maps without one              */
    real *w;            /* W, wrows x d row major, as drawn or given      */
    real *ws;           /* s W, what the GEMM uses (may alias w)          */
    real *bias;         /* b (custom maps; NULL = 0)                      */
    real half_s2;       /* s^2 / 2: |x~|^2 / 2 = half_s2 |x|^2            */
    real log_norm;      /* ln of the features' constant factor's inverse: */
                        /* ln sqrt(m) (FAVOR*), ln sqrt(m/2) (TRIG)       */
    double log_decay;   /* ln gamma <= 0 per token (0: no decay)          */
    real qscale;        /* s of the query features s phi(q) (1: none)     */
};

/* Rows per block for a plan. */
static inline int64_t XI(block_rows)(const X(plan) *plan)
{
    return plan->block;
}

#endif
