/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * internal.h -- the objects behind the opaque handles, and the helpers the
 * precision-generic files share.  Not installed.
 */
#ifndef LINATTN_INTERNAL_H
#define LINATTN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include "blas.h"
#include "prec.h"

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
    /* The kernelized maps (featmap.c; doc/maps.md). */
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
};

struct X(state_s) {
    const X(plan) *plan;
    int64_t tokens;
    /* Stabilizing shift of the exponential feature maps: the stored S and
     * z are the true sums times exp(-shift).  Always 0 for the maps that
     * need none (identity, elu+1, ReLU). */
    double shift;
    acc_t *acc;  /* m x (e+1), row major: [S | z], accumulated            */
    real *sz;    /* the same in the working precision (aliases acc in     */
                 /* double); queries read only this                       */
    /* Overflow bookkeeping (state.c): poisoned when a NaN or Inf reached
     * acc from non-finite input (or a restored checkpoint), so that its
     * queries let them propagate instead of reporting an overflow; bound
     * >= max |acc| (+Inf when unknown), which lets a few-row update skip
     * its overflow check when the sum cannot leave the range. */
    int poisoned;
    double bound;
};

/* ---- feature maps (featmap.c) ---- */

/* Nonzero when phi(x) = x, so callers may hand x to BLAS directly. */
int XI(map_is_identity)(const X(plan) *plan);

/* Nonzero for the elementwise maps (identity, elu+1, ReLU): m = d. */
int XI(map_is_elementwise)(const X(plan) *plan);

/* What to gather about a block's feature rows while they are in cache:
 * den[i] = phi_i . z (z contiguous, m entries) when den is not NULL, and
 * colsum += sum_i phi_i when colsum is not NULL (partial: workspace of
 * XI(stats_partial_len)(plan, rows) entries). */
typedef struct {
    const real *z;
    real *den;
    acc_t *colsum;
    acc_t *partial;
} XI(stats);

int64_t XI(stats_partial_len)(const X(plan) *plan, int64_t rows);

/* f(ctx, lo, hi, part) over the fixed chunks [lo, hi) of LINATTN_CHUNK
 * rows of [0, rows), split over the OpenMP team when rows * width is
 * large; part is the chunk's column-sum partial (width entries) when st
 * asks for column sums, NULL otherwise, and the partials are added to
 * st->colsum in chunk order, so results do not depend on the team. */
typedef void (*XI(chunk_fn))(const void *ctx, int64_t lo, int64_t hi,
                             acc_t *part);
void XI(over_chunks)(int64_t rows, int64_t width, XI(chunk_fn) f,
                     const void *ctx, const XI(stats) *st);

/* phi of rows [0, rows) of x into out (rows x m, row major, ld m), and the
 * statistics st asks for (st may be NULL).  For the identity map out may
 * be NULL: then nothing is written and the statistics read x itself.
 * Splits the rows over the OpenMP team when the block is large.
 * The shifted maps (plan->shifted) write row i times exp(-c_i), c_i its
 * largest exponent: the query form, whose factor cancels in out_i. */
void XI(phi_rows)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                  const XI(stats) *st);

/* The shifted maps in two steps, for keys, whose shift must be chosen
 * across rows.  phi_pre leaves an intermediate form of rows [0, rows) in
 * out (rows x m) and each row's largest exponent in rexp[i] (rows
 * entries); it returns their maximum (-inf for no rows).  phi_post turns
 * out into the features times exp(-sh[i]) for row i (sh NULL: exp(-shift)
 * for every row; shift 0 gives phi itself), then takes st's statistics
 * (st may be NULL). */
double XI(phi_pre)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   double *rexp);
void XI(phi_post)(const X(plan) *plan, real *out, int64_t rows,
                  const double *rexp, const double *sh, double shift,
                  const XI(stats) *st);

/* phi itself, without shifts (what linattn_d_features returns), of rows
 * [0, rows) into out; rexp: workspace of rows entries (shifted maps). */
void XI(phi_plain)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   double *rexp);

/* The kernelized maps' part of phi_rows (kmaps.c). */
void XI(kmap_rows)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   const XI(stats) *st);

/* The statistics of rows [lo, hi) of the feature view f (m columns):
 * den[i] = f_i . z and part += sum_i f_i, as requested by st. */
void XI(stats_range)(XI(view) f, int64_t m, int64_t lo, int64_t hi,
                     const XI(stats) *st, acc_t *part);

/* y = exp(x), y = elu(x) + 1 over count values (y may equal x), by the
 * vectorized kernels. */
void XI(exp_array)(real *y, const real *x, int64_t count);
void XI(elu1_array)(real *y, const real *x, int64_t count);
/* y = exp(x - c) over count values (y may equal x). */
void XI(exp_shift_array)(real *y, const real *x, int64_t count, real c);

/* Multiplies row i of the rows x cols matrix a (layout, lda) by s[i];
 * nonzero when a product is not finite. */
int XI(scale_rows)(real *a, int colmajor, int64_t lda, int64_t rows,
                   int64_t cols, const real *s);

/* In place elementwise exp over count contiguous values. */
void XI(exp_inplace)(real *x, int64_t count);

/* Rows [lo, hi) of the rows x cols view x into the same rows of out (row
 * major, ld cols). */
void XI(copy_rows)(XI(view) x, int64_t lo, int64_t hi, int64_t cols,
                   real *out);

/* Nonzero when every entry of the rows x cols view is finite. */
int XI(all_finite)(XI(view) x, int64_t rows, int64_t cols);

/* The first of rows [0, rows) of the view (cols columns) that holds a
 * non-finite value, or rows (normalize.c). */
int64_t XI(first_nonfinite_row)(XI(view) x, int64_t rows, int64_t cols);

/* ---- normalization (normalize.c) ---- */

/* Makes den[0, rows) the normalizers of a block: under LINATTN_DENOM_COUNT
 * den[i] = count0 + i * step (the keys row i sees: step 1 in the causal
 * paths, 0 otherwise), else den as given (phi . z); then adds the plan's
 * eps.  Returns the number of leading rows whose normalizer satisfies the
 * plan's policy (rows when !check). */
int64_t XI(good_rows)(const X(plan) *plan, real *den, int64_t rows,
                      int check, int64_t count0, int64_t step);

/* Where a non-finite output came from.  Finite inputs never give one with
 * status 0: a row whose inputs were all finite but whose output (or
 * requested numerator or normalizer) is not is LINATTN_EOVERFLOW, while
 * NaN and Inf in the inputs propagate as documented.  Row r's inputs are
 * its query (q, d columns; q.p NULL: none) and either a state (st: its
 * poisoned flag) or the keys and values it sees (k, v, nk rows of d and e
 * columns; causal: rows j <= r only).  first_bad caches the first key
 * row holding NaN or Inf (-1: not looked yet); one origin per thread. */
typedef struct {
    XI(view) q, k, v;
    int64_t d, e, nk;
    int causal;
    const X(state) *st;
    int64_t first_bad;
} XI(origin);

/* Nonzero when row r's inputs are all finite (see XI(origin)). */
int XI(inputs_finite)(XI(origin) *o, int64_t r);

/* The first of rows [0, rows) of a written block (out, num: rows x e in
 * layout, den: rows entries, each pointing at the block's first row and
 * each may be NULL) that holds a non-finite value although its inputs were
 * finite, or rows.  Block row i is row orow + i of the origin o. */
int64_t XI(first_overflow)(int layout, int64_t rows, int64_t e,
                           const real *out, int64_t ldout, const real *num,
                           int64_t ldnum, const real *den, XI(origin) *o,
                           int64_t orow);

/* inv[i] = 1 / den[i] over rows entries; nonzero when every one is a
 * normal number, so that multiplying by inv differs from dividing by den
 * by rounding only (the fused kernels, which multiply, may then be used;
 * else divide_rows). */
int XI(reciprocals)(const real *den, int64_t rows, real *inv);

/* a (rows x cols, layout colmajor, lda) = b (same shape, b_colmajor, ldb;
 * b may be a itself) with row i divided by den[i]: times the reciprocal
 * when that is a normal number, by division otherwise (tiny or huge
 * normalizers).  inv: workspace of rows entries.  Returns nonzero when a
 * value written is not finite. */
int XI(divide_rows)(real *a, int colmajor, int64_t lda, const real *b,
                    int b_colmajor, int64_t ldb, int64_t rows, int64_t cols,
                    const real *den, real *inv);

/* Writes rows [0, rows) of a block to the caller's outputs at row offset r0
 * (each of out, num, den may be NULL): num = A B (rows x inner times
 * inner x e: phi(Q_b) S, or scores times V) by GEMM straight into the
 * output, den from den_b (eps included), out = num / den (by the
 * micro-kernel's scaled GEMM when it takes the shape and the reciprocals
 * are normal, else divide_rows).
 * inv is workspace of rows entries; y, of rows x e entries, is needed only
 * when a leading dimension of out or num is beyond the BLAS integer (the
 * GEMM then goes through y).  Returns nonzero when a value written is not
 * finite (then XI(first_overflow) tells whether that is an overflow). */
int XI(write_rows)(const X(plan) *plan, XI(view) a, XI(view) b,
                    int64_t inner, const real *den_b, int64_t rows,
                   int layout, int64_t r0, real *out, int64_t ldout,
                   real *num, int64_t ldnum, real *den, real *inv, real *y);

/* a (rows x cols, layout colmajor, lda) = b (same shape, layout b_colmajor,
 * ldb) with row i multiplied by s[i], or copied when s is NULL; nonzero
 * when a value written is not finite. */
int XI(put_rows)(real *a, int colmajor, int64_t lda, const real *b,
                  int b_colmajor, int64_t ldb, int64_t rows, int64_t cols,
                  const real *s);

/* Nonzero when write_rows needs its y workspace for these outputs. */
int XI(write_needs_y)(const real *out, int64_t ldout, const real *num,
                      int64_t ldnum);

/* ---- state internals (state.c) ---- */

/* A zero state for plan whose arrays live in caller-provided memory of
 * XI(state_bytes)(plan) bytes (used by the one-call paths). */
size_t XI(state_bytes)(const X(plan) *plan);
void XI(state_init)(X(state) *st, const X(plan) *plan, void *mem);

/* The shift of an accumulator (len entries at *shift; has: it holds
 * tokens) about to absorb keys whose largest exponent is bmax: raised to
 * bmax when that is larger, the accumulator rescaled by the returned
 * factor exp(old - bmax) (1 when nothing changed); set to bmax when it
 * holds nothing. */
double XI(raise_shift)(acc_t *acc, int64_t len, double *shift, int has,
                       double bmax);

/* The shift raise_shift would give: bmax when it is finite and larger (or
 * the accumulator holds nothing), else shift. */
double XI(next_shift)(double shift, int has, double bmax);

/* The factors a, b that bring an accumulator dst (at *dst_shift) and src
 * (at src_shift) to the larger shift, which *dst_shift becomes: dst =
 * a dst + b src is then their sum.  An accumulator without tokens (has
 * 0) holds zeros and its shift is meaningless; maps without shifts get
 * 1, 1 and leave *dst_shift alone. */
void XI(shift_factors)(const X(plan) *plan, double *dst_shift, int dst_has,
                       double src_shift, int src_has, acc_t *a, acc_t *b);

/* dst (at *dst_shift) += src (at src_shift), both brought to the larger
 * shift first (the accumulators hold their sums times exp(-shift));
 * dst_has, src_has: the accumulator holds tokens (an empty one's shift
 * is meaningless). */
void XI(acc_add)(const X(plan) *plan, acc_t *dst, double *dst_shift,
                 int dst_has, const acc_t *src, double src_shift, int src_has,
                 int64_t len);

/* Republishes the working-precision copy sz from acc, after acc was
 * written directly (a restored checkpoint). */
void XI(state_publish)(X(state) *st);

/* update and query after argument checks (same meaning as the public
 * functions); both return 0, LINATTN_ENOMEM or LINATTN_EDENOM. */
int XI(state_update_checked)(X(state) *st, XI(view) k, XI(view) v, int64_t n);
int XI(state_query_checked)(const X(state) *st, int layout, int64_t n,
                            XI(view) q, real *out, int64_t ldout, real *num,
                            int64_t ldnum, real *den, int64_t *bad_row);

/* ---- a few rows at a time (state_small.c) ---- */

/* Nonzero when an update or query of n rows takes the small path: plain
 * loops on stack workspace, no allocation, no BLAS. */
int XI(small_ok)(const X(plan) *plan, int64_t n);
/* As state_update_checked / state_query_checked, for small_ok sizes.  The
 * update does not count the tokens nor publish; it returns 1 when done, 0
 * (state unchanged) when its sums could leave the range or the inputs are
 * not finite: the blocked path then decides. */
int XI(state_update_small)(X(state) *st, XI(view) k, XI(view) v, int64_t n);
int XI(state_query_small)(const X(state) *st, int layout, int64_t n,
                          XI(view) q, real *out, int64_t ldout, real *num,
                          int64_t ldnum, real *den, int64_t *bad_row);

/* ---- attention.c ---- */

/* The matrix checks of the attention-shaped calls: Q (nq x d), K (nk x d),
 * V (nk x e), out (nq x e) as arguments pos, pos + 2, pos + 4, pos + 6
 * (their leading dimensions follow each) and, when not NULL, the nq
 * normalizers den at pos + 8 (an output, as out: apart from the inputs
 * and out), then the sizes (keys_in_blas: nk is a GEMM dimension), then
 * the plan's input check. */
int XI(qkvo_args)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                  const real *q, int64_t ldq, const real *k, int64_t ldk,
                  const real *v, int64_t ldv, const real *out, int64_t ldout,
                  const real *den, int pos, int keys_in_blas);

/* Argument checks of linattn_d_attention, shared with the naive path;
 * the _den form also checks the normalizers of the training calls'
 * forward (NULL: none; backward.c). */
int XI(attention_args)(const X(plan) *plan, int layout, int64_t nq,
                       int64_t nk, const real *q, int64_t ldq, const real *k,
                       int64_t ldk, const real *v, int64_t ldv,
                       const real *out, int64_t ldout, int keys_in_blas);
int XI(attention_den_args)(const X(plan) *plan, int layout, int64_t nq,
                           int64_t nk, const real *q, int64_t ldq,
                           const real *k, int64_t ldk, const real *v,
                           int64_t ldv, const real *out, int64_t ldout,
                           const real *den, int keys_in_blas);

/* Argument checks of the causal calls (causal.c), shared with the naive
 * causal baseline; _den as above. */
int XI(causal_args)(const X(plan) *plan, int layout, int64_t n, const real *q,
                    int64_t ldq, const real *k, int64_t ldk, const real *v,
                    int64_t ldv, const real *out, int64_t ldout,
                    int keys_in_blas);
int XI(causal_den_args)(const X(plan) *plan, int layout, int64_t n,
                        const real *q, int64_t ldq, const real *k,
                        int64_t ldk, const real *v, int64_t ldv,
                        const real *out, int64_t ldout, const real *den,
                        int keys_in_blas);

/* The one-call paths after their argument checks (the public functions
 * check, then call these; the batched calls check every problem first,
 * then call these per problem).  Same meaning and statuses as
 * linattn_d_attention, _causal, _naive (causal = 0, nq, nk) and
 * _naive_causal (causal = 1, nq = nk = n). */
int XI(attention_run)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                      const real *q, int64_t ldq, const real *k, int64_t ldk,
                      const real *v, int64_t ldv, real *out, int64_t ldout,
                      int64_t *bad_row);
int XI(causal_run)(const X(plan) *plan, int layout, int64_t n, const real *q,
                   int64_t ldq, const real *k, int64_t ldk, const real *v,
                   int64_t ldv, real *out, int64_t ldout, int64_t *bad_row);
/* The same, handing back the normalizers as well (den, nq or n entries;
 * NULL: not asked), as state_query does (eps included, shifted maps'
 * factors in): what the backward calls take (grad.h). */
int XI(attention_run_den)(const X(plan) *plan, int layout, int64_t nq,
                          int64_t nk, const real *q, int64_t ldq,
                          const real *k, int64_t ldk, const real *v,
                          int64_t ldv, real *out, int64_t ldout, real *den,
                          int64_t *bad_row);
int XI(causal_run_den)(const X(plan) *plan, int layout, int64_t n,
                       const real *q, int64_t ldq, const real *k, int64_t ldk,
                       const real *v, int64_t ldv, real *out, int64_t ldout,
                       real *den, int64_t *bad_row);
/* y (rows x w, ldy) += tril(A) X for a rows x rows A (lda) and X (rows x
 * w, a row-major view), reading only A[i][j] and row j of X with j <= i
 * (causal.c). */
void XI(tril_times)(const real *a, int64_t lda, XI(view) x, int64_t rows,
                    int64_t w, real *y, int64_t ldy);
/* causal_run continuing from the state from (NULL: a zero state): rows
 * see its keys first; with absorb set and status 0, from then holds its
 * keys and these n.  On any error from is unchanged. */
int XI(causal_from)(const X(plan) *plan, X(state) *from, int absorb,
                    int layout, int64_t n, const real *q, int64_t ldq,
                    const real *k, int64_t ldk, const real *v, int64_t ldv,
                    real *out, int64_t ldout, int64_t *bad_row);
/* The same, handing back the normalizers (den may be NULL). */
int XI(causal_from_den)(const X(plan) *plan, X(state) *from, int absorb,
                        int layout, int64_t n, const real *q, int64_t ldq,
                        const real *k, int64_t ldk, const real *v,
                        int64_t ldv, real *out, int64_t ldout, real *den,
                        int64_t *bad_row);
/* The checks of positions 1-4 of every batched call: plan, layout,
 * batch, heads (batched.c). */
int XI(batched_leading)(const X(plan) *plan, int layout, int64_t batch,
                        int64_t heads);
int XI(naive_run)(const X(plan) *plan, int causal, int layout, int64_t nq,
                  int64_t nk, const real *q, int64_t ldq, const real *k,
                  int64_t ldk, const real *v, int64_t ldv, real *out,
                  int64_t ldout, int64_t *bad_row);

/* Rows per block for a plan. */
static inline int64_t XI(block_rows)(const X(plan) *plan)
{
    return plan->block;
}

#endif
