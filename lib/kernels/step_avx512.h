/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * step_avx512.h -- kern.h's step (token-by-token decoding) for the
 * AVX-512 build of kern.c, after k_step_c, which takes the states
 * narrower than a vector (e < 8).
 *
 * The columns of a row of the m x (e + 1) state go in groups of 8 (a
 * vector of doubles; in float, the 8 floats they round to), up to 8
 * groups a panel and the tail, the whole row in one panel up to e = 71.  A panel's
 * query sums stay in registers while the rows go by: summed through
 * memory, each term waited for the store of the one before.  The state's
 * rows are e + 1 entries long, so they start anywhere in a cache line:
 * a masked store across a line cost the update 2.5 times its plain
 * stores (measured, AMD Zen 5), so the last, partial group of a row is
 * the row's last 8 columns, overlapping the group before it, loaded
 * with the others before any is stored: its overlapping lanes are
 * computed from the same operands by the same operation, so they store
 * the same values twice, and the query adds only its new lanes.  Every
 * column is summed over the rows in order, one FMA a term, as k_step_c
 * compiled for this level does: the same bits.
 */

#ifdef LINATTN_SINGLE
typedef __m256 svec; /* 8 entries of the working precision */
#define SV_ZERO _mm256_setzero_ps
#define SV_SET1 _mm256_set1_ps
#define SV_LOAD _mm256_loadu_ps
#define SV_STORE _mm256_storeu_ps
#define SV_FMA _mm256_fmadd_ps
#define SV_MASK_FMA _mm256_mask3_fmadd_ps
#define SV_MASK_STORE _mm256_mask_storeu_ps
#define SV_OF(x) _mm512_cvtpd_ps(x)
/* 8 values of v in double (exact) */
#define V_LOAD(p) _mm512_cvtps_pd(_mm256_loadu_ps(p))
#else
typedef __m512d svec;
#define SV_ZERO _mm512_setzero_pd
#define SV_SET1 _mm512_set1_pd
#define SV_LOAD _mm512_loadu_pd
#define SV_STORE _mm512_storeu_pd
#define SV_FMA _mm512_fmadd_pd
#define SV_MASK_FMA _mm512_mask3_fmadd_pd
#define SV_MASK_STORE _mm512_mask_storeu_pd
#define SV_OF(x) (x)
#define V_LOAD(p) _mm512_loadu_pd(p)
#endif

#define STEP_NG 8 /* groups a panel */

/* One panel: ng groups at columns c0 + 8 g, then the tail group at
 * column ct, whose lanes in tk are new (none: a panel before the last,
 * whose tail is its own last group).  The groups' v is read from v, the
 * tail's [v 1] given in double (vt).  upd, qry: what the step does
 * (constants once inlined, as ng). */
static inline __attribute__((always_inline)) void
step_panel(const int ng, const int upd, const int qry, acc_t *acc, real *s,
           int64_t ld, int64_t m, int64_t c0, int64_t ct, __mmask8 tk,
           const real *v, const acc_t *vt, const real *p, acc_t f,
           const real *q, real *y)
{
    __m512d vv[STEP_NG + 1], fv = _mm512_set1_pd(f);
    svec yy[STEP_NG + 1];
    int f1 = f == 1;
#pragma GCC unroll 9
    for (int g = 0; g <= ng; g++) {
        vv[g] = !upd       ? _mm512_setzero_pd()
                : g < ng ? V_LOAD(v + c0 + 8 * g)
                           : _mm512_loadu_pd(vt);
        yy[g] = SV_ZERO();
    }
    for (int64_t i = 0; i < m; i++) {
        acc_t *ar = acc + i * ld;
        real *sr = s + i * ld;
        svec w[STEP_NG + 1];
        if (upd) {
            __m512d pi = _mm512_set1_pd((acc_t)p[i]), r[STEP_NG + 1];
#pragma GCC unroll 9
            for (int g = 0; g <= ng; g++)
                r[g] = _mm512_loadu_pd(ar + (g < ng ? c0 + 8 * g : ct));
            /* the forms k_step_c's loops compile to: p v + acc, and
             * f acc + (p v) */
            if (f1)
#pragma GCC unroll 9
                for (int g = 0; g <= ng; g++)
                    r[g] = _mm512_fmadd_pd(pi, vv[g], r[g]);
            else
#pragma GCC unroll 9
                for (int g = 0; g <= ng; g++)
                    r[g] = _mm512_fmadd_pd(fv, r[g], _mm512_mul_pd(pi, vv[g]));
#pragma GCC unroll 9
            for (int g = 0; g <= ng; g++) {
                _mm512_storeu_pd(ar + (g < ng ? c0 + 8 * g : ct), r[g]);
                w[g] = SV_OF(r[g]);
#if LINATTN_ACC_WIDER
                SV_STORE(sr + (g < ng ? c0 + 8 * g : ct), w[g]);
#endif
            }
        } else {
#pragma GCC unroll 9
            for (int g = 0; g <= ng; g++)
                w[g] = SV_LOAD(sr + (g < ng ? c0 + 8 * g : ct));
        }
        if (qry) {
            svec qi = SV_SET1(q[i]);
#pragma GCC unroll 8
            for (int g = 0; g < ng; g++)
                yy[g] = SV_FMA(qi, w[g], yy[g]);
            yy[ng] = SV_MASK_FMA(qi, w[ng], yy[ng], tk);
        }
    }
    if (qry) {
#pragma GCC unroll 8
        for (int g = 0; g < ng; g++)
            SV_STORE(y + c0 + 8 * g, yy[g]);
        SV_MASK_STORE(y + ct, tk, yy[ng]);
    }
}

typedef void (*step_panel_fn)(acc_t *acc, real *s, int64_t ld, int64_t m,
                              int64_t c0, int64_t ct, __mmask8 tk,
                              const real *v, const acc_t *vt, const real *p,
                              acc_t f, const real *q, real *y);

#define STEP_P(NG, U, Q)                                                      \
    static void step_p##NG##U##Q(acc_t *acc, real *s, int64_t ld, int64_t m, \
                                 int64_t c0, int64_t ct, __mmask8 tk,        \
                                 const real *v, const acc_t *vt,             \
                                 const real *p, acc_t f, const real *q,      \
                                 real *y)                                    \
    {                                                                         \
        step_panel(NG, U, Q, acc, s, ld, m, c0, ct, tk, v, vt, p, f, q, y);   \
    }
#define STEP_MODES(NG) STEP_P(NG, 1, 0) STEP_P(NG, 0, 1) STEP_P(NG, 1, 1)
STEP_MODES(1)
STEP_MODES(2)
STEP_MODES(3)
STEP_MODES(4)
STEP_MODES(5)
STEP_MODES(6)
STEP_MODES(7)
STEP_MODES(8)

/* [mode][ng - 1], mode 0 update, 1 query, 2 both */
#define STEP_ROW(U, Q)                                                        \
    {step_p1##U##Q, step_p2##U##Q, step_p3##U##Q, step_p4##U##Q,              \
     step_p5##U##Q, step_p6##U##Q, step_p7##U##Q, step_p8##U##Q}
static const step_panel_fn step_panels[3][STEP_NG] = {
    STEP_ROW(1, 0), STEP_ROW(0, 1), STEP_ROW(1, 1)};

static void k_step(acc_t *acc, real *s, int64_t m, int64_t e, const real *p,
                   const real *v, acc_t f, const real *q, real *y)
{
    /* the groups: the whole vectors of v's columns; the tail: the row's
     * last 8 columns, z's among them */
    int64_t ld = e + 1, groups = e / 8;
    if (groups == 0 || (!p && !q)) {
        k_step_c(acc, s, m, e, p, v, f, q, y);
        return;
    }
    int mode = !p ? 1 : !q ? 0 : 2;
    for (int64_t g0 = 0; g0 < groups; g0 += STEP_NG) {
        int ng = groups - g0 < STEP_NG ? (int)(groups - g0) : STEP_NG;
        int last = g0 + ng == groups;
        int64_t c0 = 8 * g0, ct = last ? ld - 8 : c0 + 8 * (ng - 1);
        /* the tail's new lanes: the columns after the last group */
        __mmask8 tk = last ? (__mmask8)(0xff << (7 - e % 8)) : 0;
        acc_t vt[8];
        for (int64_t t = 0; p && t < 8; t++)
            vt[t] = ct + t < e ? (acc_t)v[ct + t] : 1;
        step_panels[mode][ng - 1](acc, s, ld, m, c0, ct, tk, v, vt, p, f, q,
                                  y);
    }
}

/* k_amax (kern.c) in vectors: the vectorizer's reduction went through
 * memory lane by lane, most of the time of a 64-value call. */
static double k_amax512(const real *x, int64_t n)
{
#ifdef LINATTN_SINGLE
#define AB_SET1 _mm512_set1_epi32
#define AB_MAX _mm512_max_epi32
#define AB_LOAD(m, p) _mm512_maskz_loadu_epi32(m, p)
#define AB_REDUCE _mm512_reduce_max_epi32
#else
#define AB_SET1 _mm512_set1_epi64
#define AB_MAX _mm512_max_epi64
#define AB_LOAD(m, p) _mm512_maskz_loadu_epi64(m, p)
#define AB_REDUCE _mm512_reduce_max_epi64
#endif
    const __m512i magnitude = AB_SET1((amax_bits)~REAL_SIGN_BIT);
    __m512i top = _mm512_setzero_si512();
    int64_t i = 0;
    for (; i + KV_LANES <= n; i += KV_LANES)
        top = AB_MAX(top, _mm512_and_si512(_mm512_loadu_si512(x + i),
                                           magnitude));
    if (i < n)
        top = AB_MAX(top, _mm512_and_si512(AB_LOAD(tail_mask(n - i), x + i),
                                           magnitude));
    return amax_of((amax_bits)AB_REDUCE(top));
#undef AB_SET1
#undef AB_MAX
#undef AB_LOAD
#undef AB_REDUCE
}
