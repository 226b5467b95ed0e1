/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kern_mm512.h -- the GEMM micro-kernel of the AVX-512 build of kern.c
 * (after kern_exp512.h, whose vector macros it uses).
 *
 * C (M x N) = A B (+ C), A(i, k) = a[i ars + k aks], B row major: the
 * shapes of linear attention are skinny (M or N is m, e or a chunk of
 * 16-64 rows, K a block of rows or m), where a BLAS packs both operands
 * on every call and runs its square-matrix kernels at a fraction of their
 * rate.  Here nothing is packed: a tile of MR rows x NV vectors of C stays
 * in registers while k runs, each step loading NV vectors of a row of B
 * and broadcasting MR entries of A (MR = 6, NV = 4: 24 accumulators, 10
 * loads per 24 FMAs).  K is cut into chunks whose panel of B stays in L1
 * while every tile of rows passes over it.  Edges: tiles of fewer rows
 * and vectors, and the last vector of a row under a mask (no read or
 * write beyond N).
 */
#define MM_MR 6
#define MM_NV 4
#define MM_FULL ((kmask)-1)

#ifdef LINATTN_SINGLE
#define KV_ZERO _mm512_setzero_ps
#define KV_FMA _mm512_fmadd_ps
#define KV_MUL _mm512_mul_ps
#else
#define KV_ZERO _mm512_setzero_pd
#define KV_FMA _mm512_fmadd_pd
#define KV_MUL _mm512_mul_pd
#endif

/* One tile of mr rows x nv vectors (constants once inlined: the
 * accumulators live in registers). */
static inline __attribute__((always_inline)) void
mm_tile(const int mr, const int nv, int64_t kc, const real *a, int64_t ars,
        int64_t aks, const real *b, int64_t ldb, real *c, int64_t ldc,
        kmask last, int load, const real *s)
{
    kvec acc[MM_MR][MM_NV];
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            acc[r][v] = load ? KV_LOAD(v == nv - 1 ? last : MM_FULL,
                                       c + r * ldc + v * KV_LANES)
                             : KV_ZERO();
    for (int64_t k = 0; k < kc; k++) {
        const real *bk = b + k * ldb, *ak = a + k * aks;
        kvec bv[MM_NV];
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            bv[v] = KV_LOAD(v == nv - 1 ? last : MM_FULL, bk + v * KV_LANES);
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            kvec ar = KV_SET1(ak[r * ars]);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++)
                acc[r][v] = KV_FMA(ar, bv[v], acc[r][v]);
        }
    }
    if (s)
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            kvec sr = KV_SET1(s[r]);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++)
                acc[r][v] = KV_MUL(acc[r][v], sr);
        }
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            KV_STORE(c + r * ldc + v * KV_LANES, v == nv - 1 ? last : MM_FULL,
                     acc[r][v]);
}

typedef void (*mm_tile_fn)(int64_t kc, const real *a, int64_t ars,
                           int64_t aks, const real *b, int64_t ldb, real *c,
                           int64_t ldc, kmask last, int load, const real *s);

#define MM_T(MR, NV)                                                          \
    static void mm_t##MR##NV(int64_t kc, const real *a, int64_t ars,          \
                             int64_t aks, const real *b, int64_t ldb,         \
                             real *c, int64_t ldc, kmask last, int load,      \
                             const real *s)                                   \
    {                                                                         \
        mm_tile(MR, NV, kc, a, ars, aks, b, ldb, c, ldc, last, load, s);      \
    }
#define MM_ROW(MR) MM_T(MR, 1) MM_T(MR, 2) MM_T(MR, 3) MM_T(MR, 4)
MM_ROW(1) MM_ROW(2) MM_ROW(3) MM_ROW(4) MM_ROW(5) MM_ROW(6)
#define MM_FNS(MR) {mm_t##MR##1, mm_t##MR##2, mm_t##MR##3, mm_t##MR##4}
static const mm_tile_fn mm_tiles[MM_MR][MM_NV] = {
    MM_FNS(1), MM_FNS(2), MM_FNS(3), MM_FNS(4), MM_FNS(5), MM_FNS(6)};

/* Rows of K per chunk: the chunk's panel of B (kc x MM_NV vectors) and
 * of A stay in L1 while the tiles pass over them. */
#define MM_KC 64

static void k_mm(int64_t M, int64_t N, int64_t K, const real *a, int64_t ars,
                 int64_t aks, const real *b, int64_t ldb, real *c, int64_t ldc,
                 int add, const real *s)
{
    int64_t nvec = (N + KV_LANES - 1) / KV_LANES;
    kmask lastmask = tail_mask(N - (nvec - 1) * KV_LANES);
    if (K == 0) { /* C = 0 or C unchanged, then scaled */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                c[i * ldc + j] = (add ? c[i * ldc + j] : 0) * (s ? s[i] : 1);
        return;
    }
    for (int64_t k0 = 0; k0 < K; k0 += MM_KC) {
        int64_t kc = K - k0 < MM_KC ? K - k0 : MM_KC;
        int load = add || k0 > 0;
        const real *sc = k0 + kc == K ? s : NULL;
        const real *ak = a + k0 * aks, *bk = b + k0 * ldb;
        for (int64_t i0 = 0; i0 < M; i0 += MM_MR) {
            int mr = (int)(M - i0 < MM_MR ? M - i0 : MM_MR);
            for (int64_t v0 = 0; v0 < nvec; v0 += MM_NV) {
                int nv = (int)(nvec - v0 < MM_NV ? nvec - v0 : MM_NV);
                kmask last = v0 + nv == nvec ? lastmask : MM_FULL;
                mm_tiles[mr - 1][nv - 1](kc, ak + i0 * ars, ars, aks,
                                         bk + v0 * KV_LANES, ldb,
                                         c + i0 * ldc + v0 * KV_LANES, ldc,
                                         last, load, sc ? sc + i0 : NULL);
            }
        }
    }
}
