/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mm_avx512.h -- the GEMM micro-kernel of the AVX-512 build of kern.c
 * (after exp_avx512.h, whose vector macros it uses).
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
 *
 * The kernels that write normalized rows (s given) also note whether a
 * value they store is not finite, where the caller would otherwise read
 * the block again (the finite-output invariant, LINATTN_EOVERFLOW): each
 * stored vector y adds y * 0 into a checking vector per column of the
 * tile (+-0 for finite y, NaN for NaN and +-Inf, which then stays), one
 * masked FMA per store, and one unordered compare per tile tests them.
 * (An fpclass per store or-ed into a mask register cost the causal
 * triangle 3-11% in cache, these FMAs 1-2%: doc/performance.md.)
 */
#define MM_MR 6
#define MM_NV 4
#define MM_FULL ((kmask)-1)

#ifdef LINATTN_SINGLE
#define KV_ZERO _mm512_setzero_ps
#define KV_FMA _mm512_fmadd_ps
#define KV_MUL _mm512_mul_ps
/* c + v * 0 in the lanes of mask m (c elsewhere); nonzero mask when c
 * holds NaN, i.e. when a v added was not finite */
#define KV_CHK(c, m, v) _mm512_mask3_fmadd_ps(v, _mm512_setzero_ps(), c, m)
#define KV_CHK_BAD(c) _mm512_cmp_ps_mask(c, c, _CMP_UNORD_Q)
#else
#define KV_ZERO _mm512_setzero_pd
#define KV_FMA _mm512_fmadd_pd
#define KV_MUL _mm512_mul_pd
#define KV_CHK(c, m, v) _mm512_mask3_fmadd_pd(v, _mm512_setzero_pd(), c, m)
#define KV_CHK_BAD(c) _mm512_cmp_pd_mask(c, c, _CMP_UNORD_Q)
#endif

/* One tile of mr rows x nv vectors (constants once inlined: the
 * accumulators live in registers). */
static inline __attribute__((always_inline)) int
mm_tile(const int mr, const int nv, int64_t kc, const real *a, int64_t ars,
        int64_t aks, const real *b, int64_t ldb, real *c, int64_t ldc,
        kmask last, int load, const real *s, const char *pf, int64_t pfs,
        int64_t pfk)
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
        if (k < pfk) /* a line of the next chunk's row k of B or A */
            _mm_prefetch(pf + k * pfs, _MM_HINT_T0);
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
    kvec chk[MM_NV]; /* the stores' check, one chain per column */
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++)
        chk[v] = KV_ZERO();
    if (s)
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            kvec sr = KV_SET1(s[r]);
#pragma GCC unroll 8
            for (int v = 0; v < nv; v++) {
                acc[r][v] = KV_MUL(acc[r][v], sr);
                chk[v] = KV_CHK(chk[v], v == nv - 1 ? last : MM_FULL,
                                acc[r][v]);
            }
        }
    kmask bad = 0;
#pragma GCC unroll 8
    for (int v = 0; v < nv; v++)
        bad |= KV_CHK_BAD(chk[v]);
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 8
        for (int v = 0; v < nv; v++)
            KV_STORE(c + r * ldc + v * KV_LANES, v == nv - 1 ? last : MM_FULL,
                     acc[r][v]);
    return bad != 0;
}

typedef int (*mm_tile_fn)(int64_t kc, const real *a, int64_t ars,
                           int64_t aks, const real *b, int64_t ldb, real *c,
                           int64_t ldc, kmask last, int load, const real *s,
                           const char *pf, int64_t pfs, int64_t pfk);

#define MM_T(MR, NV)                                                          \
    static int mm_t##MR##NV(int64_t kc, const real *a, int64_t ars,           \
                            int64_t aks, const real *b, int64_t ldb,          \
                            real *c, int64_t ldc, kmask last, int load,       \
                            const real *s, const char *pf, int64_t pfs,       \
                            int64_t pfk)                                      \
    {                                                                         \
        return mm_tile(MR, NV, kc, a, ars, aks, b, ldb, c, ldc, last, load,   \
                       s, pf, pfs, pfk);                                      \
    }
#define MM_ROW(MR) MM_T(MR, 1) MM_T(MR, 2) MM_T(MR, 3) MM_T(MR, 4)
MM_ROW(1) MM_ROW(2) MM_ROW(3) MM_ROW(4) MM_ROW(5) MM_ROW(6)
#define MM_FNS(MR) {mm_t##MR##1, mm_t##MR##2, mm_t##MR##3, mm_t##MR##4}
static const mm_tile_fn mm_tiles[MM_MR][MM_NV] = {
    MM_FNS(1), MM_FNS(2), MM_FNS(3), MM_FNS(4), MM_FNS(5), MM_FNS(6)};

/* Rows of K per chunk: the chunk's panel of B (kc x MM_NV vectors) and
 * of A stay in L1 while the tiles pass over them. */
#define MM_KC 64

static int k_mm(int64_t M, int64_t N, int64_t K, const real *a, int64_t ars,
                int64_t aks, const real *b, int64_t ldb, real *c, int64_t ldc,
                int add, const real *s)
{
    int64_t nvec = (N + KV_LANES - 1) / KV_LANES;
    kmask lastmask = tail_mask(N - (nvec - 1) * KV_LANES);
    int bad = 0;
    if (K == 0) { /* C = 0 or C unchanged, then scaled */
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                real y = (add ? c[i * ldc + j] : 0) * (s ? s[i] : 1);
                c[i * ldc + j] = y;
                bad |= s && LINATTN_NOT_FINITE(y);
            }
        return bad;
    }
    /* the cache lines of a row of B, and of A when its rows run over k
     * (A read down its columns: the state update's keys) */
    const int64_t sz = (int64_t)sizeof(real);
    int64_t lines = (N * sz + 63) / 64;
    int64_t alines = ars == 1 ? (M * sz + 63) / 64 : 0;
    for (int64_t k0 = 0; k0 < K; k0 += MM_KC) {
        int64_t kc = K - k0 < MM_KC ? K - k0 : MM_KC;
        int load = add || k0 > 0;
        const real *sc = k0 + kc == K ? s : NULL;
        const real *ak = a + k0 * aks, *bk = b + k0 * ldb;
        /* B's rows usually come from memory (the caller's values), and
         * the arithmetic of a tile does not wait well for them: while
         * this chunk's tiles run from L1, the first ones each ask for
         * one column of cache lines of the next chunk's rows of B, then
         * of A when A is read down its columns, a line per step
         * (measured: the state update 15-25% faster). */
        int64_t next = k0 + kc, pfk = K - next < MM_KC ? K - next : MM_KC;
        int64_t tile = 0;
        for (int64_t i0 = 0; i0 < M; i0 += MM_MR) {
            int mr = (int)(M - i0 < MM_MR ? M - i0 : MM_MR);
            for (int64_t v0 = 0; v0 < nvec; v0 += MM_NV, tile++) {
                int nv = (int)(nvec - v0 < MM_NV ? nvec - v0 : MM_NV);
                kmask last = v0 + nv == nvec ? lastmask : MM_FULL;
                const char *pf = NULL;
                int64_t pfs = 0;
                /* (no pointer into a next chunk that does not exist) */
                if (pfk <= 0)
                    ;
                else if (tile < lines)
                    pf = (const char *)(b + next * ldb) + 64 * tile,
                    pfs = ldb * sz;
                else if (tile < lines + alines)
                    pf = (const char *)(a + next * aks) + 64 * (tile - lines),
                    pfs = aks * sz;
                bad |= mm_tiles[mr - 1][nv - 1](
                    kc, ak + i0 * ars, ars, aks, bk + v0 * KV_LANES, ldb,
                    c + i0 * ldc + v0 * KV_LANES, ldc, last, load,
                    sc ? sc + i0 : NULL, pf, pfs, pf ? pfk : 0);
            }
        }
    }
    return bad;
}

/* y (rows x cols, ldy) += tril(A) V (kern.h's trimm), in the tiles of
 * k_mm: a tile of rows [r0, r0 + mr) runs k over the keys before r0 as a
 * GEMM does, then the mr x mr triangle, key r0 + t reaching the rows from
 * r0 + t on, with the sums still in registers.  Only a[i][j] and rows v_j
 * with j <= i are read: no later token reaches a row, not even as 0 * Inf
 * (a GEMM over the whole square with zeros above the diagonal would let
 * NaN in). */
static inline __attribute__((always_inline)) int
trimm_tile(const int mr, const int nv, int64_t r0, const real *a, int64_t lda,
           const real *v, int64_t ldv, const real *y, int64_t ldy, real *dst,
           int64_t lddst, const real *s, kmask last)
{
    kvec acc[MM_MR][MM_NV];
    const real *ar = a + r0 * lda, *yr = y + r0 * ldy;
    real *dr = dst + r0 * lddst;
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 8
        for (int c = 0; c < nv; c++)
            acc[r][c] = KV_LOAD(c == nv - 1 ? last : MM_FULL,
                                yr + r * ldy + c * KV_LANES);
    for (int64_t j = 0; j < r0; j++) {
        const real *vj = v + j * ldv;
        kvec bv[MM_NV];
#pragma GCC unroll 8
        for (int c = 0; c < nv; c++)
            bv[c] = KV_LOAD(c == nv - 1 ? last : MM_FULL, vj + c * KV_LANES);
#pragma GCC unroll 8
        for (int r = 0; r < mr; r++) {
            kvec x = KV_SET1(ar[r * lda + j]);
#pragma GCC unroll 8
            for (int c = 0; c < nv; c++)
                acc[r][c] = KV_FMA(x, bv[c], acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < mr; t++) {
        const real *vj = v + (r0 + t) * ldv;
        kvec bv[MM_NV];
#pragma GCC unroll 8
        for (int c = 0; c < nv; c++)
            bv[c] = KV_LOAD(c == nv - 1 ? last : MM_FULL, vj + c * KV_LANES);
#pragma GCC unroll 8
        for (int r = t; r < mr; r++) {
            kvec x = KV_SET1(ar[r * lda + r0 + t]);
#pragma GCC unroll 8
            for (int c = 0; c < nv; c++)
                acc[r][c] = KV_FMA(x, bv[c], acc[r][c]);
        }
    }
    kvec chk[MM_NV]; /* as in mm_tile */
#pragma GCC unroll 8
    for (int c = 0; c < nv; c++)
        chk[c] = KV_ZERO();
#pragma GCC unroll 8
    for (int r = 0; r < mr; r++) {
        kvec sr = KV_SET1(s ? s[r0 + r] : 1);
#pragma GCC unroll 8
        for (int c = 0; c < nv; c++) {
            kmask m = c == nv - 1 ? last : MM_FULL;
            kvec y = s ? KV_MUL(acc[r][c], sr) : acc[r][c];
            chk[c] = KV_CHK(chk[c], m, y);
            KV_STORE(dr + r * lddst + c * KV_LANES, m, y);
        }
    }
    kmask bad = 0;
#pragma GCC unroll 8
    for (int c = 0; c < nv; c++)
        bad |= KV_CHK_BAD(chk[c]);
    return bad != 0;
}

typedef int (*trimm_tile_fn)(int64_t r0, const real *a, int64_t lda,
                              const real *v, int64_t ldv, const real *y,
                              int64_t ldy, real *dst, int64_t lddst,
                              const real *s, kmask last);
#define TM_T(MR, NV)                                                          \
    static int tm_t##MR##NV(int64_t r0, const real *a, int64_t lda,           \
                            const real *v, int64_t ldv, const real *y,        \
                            int64_t ldy, real *dst, int64_t lddst,            \
                            const real *s, kmask last)                        \
    {                                                                         \
        return trimm_tile(MR, NV, r0, a, lda, v, ldv, y, ldy, dst, lddst, s,  \
                          last);                                              \
    }
#define TM_ROW(MR) TM_T(MR, 1) TM_T(MR, 2) TM_T(MR, 3) TM_T(MR, 4)
TM_ROW(1) TM_ROW(2) TM_ROW(3) TM_ROW(4) TM_ROW(5) TM_ROW(6)
#define TM_FNS(MR) {tm_t##MR##1, tm_t##MR##2, tm_t##MR##3, tm_t##MR##4}
static const trimm_tile_fn trimm_tiles[MM_MR][MM_NV] = {
    TM_FNS(1), TM_FNS(2), TM_FNS(3), TM_FNS(4), TM_FNS(5), TM_FNS(6)};

static int k_trimm(int64_t rows, int64_t cols, const real *a, int64_t lda,
                   const real *v, int64_t ldv, const real *y, int64_t ldy,
                   real *dst, int64_t lddst, const real *s)
{
    int64_t nvec = (cols + KV_LANES - 1) / KV_LANES;
    kmask lastmask = tail_mask(cols - (nvec - 1) * KV_LANES);
    int bad = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += MM_MR) {
        int mr = (int)(rows - r0 < MM_MR ? rows - r0 : MM_MR);
        for (int64_t v0 = 0; v0 < nvec; v0 += MM_NV) {
            int nv = (int)(nvec - v0 < MM_NV ? nvec - v0 : MM_NV);
            kmask last = v0 + nv == nvec ? lastmask : MM_FULL;
            bad |= trimm_tiles[mr - 1][nv - 1](
                r0, a, lda, v + v0 * KV_LANES, ldv, y + v0 * KV_LANES, ldy,
                dst + v0 * KV_LANES, lddst, s, last);
        }
    }
    return bad;
}

/* dst (cols x rows, ldd) = src^T (src rows x cols, lds), 8 x 8 blocks in
 * registers (the causal chunk's keys beside the state), the edges by
 * plain loops. */
#ifdef LINATTN_SINGLE
static inline void tr8(const float *s, int64_t lds, float *d, int64_t ldd)
{
    __m256 r[8], t[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_ps(s + i * lds);
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int i = 0; i < 4; i++) {
        _mm256_storeu_ps(d + i * ldd, _mm256_permute2f128_ps(u[i], u[i + 4], 0x20));
        _mm256_storeu_ps(d + (i + 4) * ldd,
                         _mm256_permute2f128_ps(u[i], u[i + 4], 0x31));
    }
}
#else
static inline void tr8(const double *s, int64_t lds, double *d, int64_t ldd)
{
    __m512d r[8], t[8], u[8];
    const __m512i lo2 = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    const __m512i hi2 = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    const __m512i lo4 = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i hi4 = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    for (int i = 0; i < 8; i++)
        r[i] = _mm512_loadu_pd(s + i * lds);
    /* t[2p] holds columns 0 2 4 6, t[2p+1] columns 1 3 5 7 of rows 2p,
     * 2p + 1, interleaved */
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
    }
    /* u: columns {0, 4}, {2, 6}, {1, 5}, {3, 7} of rows 0-3, then 4-7 */
    for (int h = 0; h < 8; h += 4) {
        u[h] = _mm512_permutex2var_pd(t[h], lo2, t[h + 2]);
        u[h + 1] = _mm512_permutex2var_pd(t[h], hi2, t[h + 2]);
        u[h + 2] = _mm512_permutex2var_pd(t[h + 1], lo2, t[h + 3]);
        u[h + 3] = _mm512_permutex2var_pd(t[h + 1], hi2, t[h + 3]);
    }
    static const int col[4][2] = {{0, 4}, {2, 6}, {1, 5}, {3, 7}};
    for (int i = 0; i < 4; i++) {
        _mm512_storeu_pd(d + col[i][0] * ldd,
                         _mm512_permutex2var_pd(u[i], lo4, u[i + 4]));
        _mm512_storeu_pd(d + col[i][1] * ldd,
                         _mm512_permutex2var_pd(u[i], hi4, u[i + 4]));
    }
}
#endif

static void k_transpose512(int64_t rows, int64_t cols, const real *src,
                           int64_t lds, real *dst, int64_t ldd)
{
    int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    for (int64_t i = 0; i < r8; i += 8)
        for (int64_t j = 0; j < c8; j += 8)
            tr8(src + i * lds + j, lds, dst + j * ldd + i, ldd);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = i < r8 ? c8 : 0; j < cols; j++)
            dst[j * ldd + i] = src[i * lds + j];
}
