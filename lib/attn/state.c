/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state.c -- the additive state (S, z) of linear attention.
 *
 * S and z are kept side by side as one m x (e+1) row-major matrix [S | z],
 * so that a query block reads numerators and normalizers from one GEMM.
 * Updates add phi(K_b)^T V_b by GEMM straight into S (beta = 1) and the
 * column sums of phi(K_b) into z, block by block.  Float states accumulate
 * in double (acc) and publish a float copy (sz) after every change.
 *
 * Overflow: finite keys and values whose sums leave the floating-point
 * range (or, in float, the working copy's) must not leave a state that
 * answers Inf with status 0.  The public update and merge therefore look
 * at the new sums before they take them, in one pass over the small
 * m x (e + 1) state per call, and refuse them (LINATTN_EOVERFLOW, state
 * unchanged) when finite inputs overflowed; NaN and Inf from the inputs
 * themselves propagate as documented, and mark the state poisoned.  The
 * one-call paths keep an overflowed state and report the output rows it
 * reaches instead.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/decay.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/simd.h"
#include "common/threads.h"
#include "common/validate.h"

static int64_t state_len(const X(plan) *plan)
{
    return plan->m * (plan->e + 1);
}

size_t XI(state_bytes)(const X(plan) *plan)
{
    size_t n = (size_t)state_len(plan);
    return n * sizeof(acc_t) + (LINATTN_ACC_WIDER ? n * sizeof(real) : 0);
}

void XI(state_init)(X(state) *st, const X(plan) *plan, void *mem)
{
    st->plan = plan;
    st->tokens = 0;
    st->mass = 0;
    st->shift = 0;
    st->poisoned = 0;
    st->bound = 0;
    st->mark = 0;
    st->acc = mem;
    memset(mem, 0, XI(state_bytes)(plan));
#if LINATTN_ACC_WIDER
    st->sz = (real *)(st->acc + state_len(plan));
#else
    st->sz = st->acc;
#endif
}

/* sz = acc in the working precision (a no-op when they alias). */
static void publish(X(state) *st)
{
#if LINATTN_ACC_WIDER
    int64_t len = state_len(st->plan);
    for (int64_t i = 0; i < len; i++)
        st->sz[i] = (real)st->acc[i];
#else
    (void)st;
#endif
}

/* The largest |a x_i + b y_i| over len entries (y NULL: of x_i alone),
 * +Inf when one of them is NaN or Inf (*nonfinite set then). */
static double scan_sum(const acc_t *x, acc_t a, const acc_t *y, acc_t b,
                       int64_t len, int *nonfinite)
{
    double mx = 0;
    acc_t chk = 0; /* t * 0 is 0 for finite t, NaN for NaN and Inf */
    if (y)
        for (int64_t i = 0; i < len; i++) {
            acc_t t = a * x[i] + b * y[i], u = fabs(t);
            mx = u > mx ? u : mx;
            chk += t * 0;
        }
    else
        for (int64_t i = 0; i < len; i++) {
            acc_t u = fabs(x[i]);
            mx = u > mx ? u : mx;
            chk += x[i] * 0;
        }
    *nonfinite = chk != 0;
    return *nonfinite ? INFINITY : mx;
}

/* The keys an update absorbs: rows [0, n) of k and v, and their weights
 * (w NULL: every weight 1; a row of weight 0 has no effect on the sums,
 * whatever it holds). */
typedef struct {
    XI(view) k, v;
    const real *w;
    int64_t n;
} keys;

static keys keys_rows(keys a, int64_t lo, int64_t hi)
{
    keys r = {XI(view_rows)(a.k, lo), XI(view_rows)(a.v, lo),
              a.w ? a.w + lo : NULL, hi - lo};
    return r;
}

/* Nonzero when every entry of the keys' rows (of weight not 0) is
 * finite. */
static int keys_finite(const X(plan) *plan, keys a)
{
    if (!a.w)
        return XI(all_finite)(a.k, a.n, plan->d) &&
               XI(all_finite)(a.v, a.n, plan->e);
    return XI(first_bad_kept_key)(a.k, a.v, plan->d, plan->e, a.w, a.n) ==
           a.n;
}

/* The keys that count (weight not 0) and their total weight. */
static int64_t keys_count(keys a, double *mass)
{
    if (!a.w) {
        *mass = (double)a.n;
        return a.n;
    }
    int64_t c = 0;
    double s = 0;
    for (int64_t r = 0; r < a.n; r++) {
        c += a.w[r] != 0;
        s += a.w[r];
    }
    *mass = s;
    return c;
}

/* The verdict on st about to hold entries of largest magnitude mx
 * (nonfinite: some are NaN or Inf) after absorbing rows [0, n) of k and v:
 * LINATTN_EOVERFLOW when strict and finite inputs pushed a sum beyond the
 * working precision's range (then nothing is to change), else 0 with the
 * bookkeeping updated for the new entries. */
static int settle(X(state) *st, double mx, int nonfinite, keys a,
                  int strict)
{
    if (!(mx <= REAL_MAX) && !st->poisoned) {
        if (keys_finite(st->plan, a)) {
            if (strict)
                return LINATTN_EOVERFLOW;
        } else if (nonfinite) {
            st->poisoned = 1; /* the inputs' NaN or Inf, propagating */
        }
    }
    st->bound = mx;
    return 0;
}

void XI(state_publish)(X(state) *st)
{
    int nonfinite;
    st->bound = scan_sum(st->acc, 1, NULL, 0, state_len(st->plan), &nonfinite);
    st->poisoned = nonfinite;
    publish(st);
}

int XI(state_take)(X(state) *st, const acc_t *acc, int64_t ldacc,
                   const acc_t *zacc, double shift, const XI(problem) *pb,
                   int64_t n)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e;
    double mx = 0;
    int nonfinite = 0, nf;
    for (int64_t i = 0; i < m; i++) {
        double r = scan_sum(acc + i * ldacc, 1, NULL, 0, e, &nf);
        mx = r > mx ? r : mx;
        nonfinite |= nf;
    }
    double r = scan_sum(zacc, 1, NULL, 0, m, &nf);
    mx = r > mx ? r : mx;
    nonfinite |= nf;
    keys a = {XI(part_view)(pb, LINATTN_I_K), XI(part_view)(pb, LINATTN_I_V),
              pb->part[LINATTN_I_KW].p, n};
    int status = settle(st, mx, nonfinite, a, 1);
    if (status)
        return status;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < e; j++)
            st->acc[i * (e + 1) + j] = acc[i * ldacc + j];
        st->acc[i * (e + 1) + e] = zacc[i];
    }
    double mass;
    st->tokens += keys_count(a, &mass);
    st->shift = shift;
    /* decayed, the count forgets as the sums do (attn/decay.h) */
    st->mass = XI(decays)(pb) ? XI(decayed_count)(pb, 0, n, st->mass, NULL)
                              : st->mass + mass;
    XI(state_publish)(st);
    return 0;
}

int X(state_create)(X(state) **state, const X(plan) *plan)
{
    if (!state)
        return -1;
    if (!plan)
        return -2;
    X(state) *st = malloc(sizeof *st);
    void *mem = malloc(XI(state_bytes)(plan));
    if (!st || !mem) {
        free(st);
        free(mem);
        return LINATTN_ENOMEM;
    }
    XI(state_init)(st, plan, mem);
    *state = st;
    return 0;
}

void X(state_destroy)(X(state) *state)
{
    if (!state)
        return;
    free(state->acc);
    free(state);
}

int X(state_reset)(X(state) *state)
{
    if (!state)
        return -1;
    memset(state->acc, 0, XI(state_bytes)(state->plan));
    state->tokens = 0;
    state->mass = 0;
    state->shift = 0;
    state->poisoned = 0;
    state->bound = 0;
    return 0;
}

double XI(next_shift)(double shift, int has, double bmax)
{
    /* The shift stays finite: a NaN or infinite key exponent poisons the
     * features it belongs to (and through them the state), not the shift,
     * so every state can be checkpointed (the format requires a finite
     * shift); a block whose features all underflow (-Inf) leaves it. */
    if (!isfinite(bmax))
        return shift;
    return !has || bmax > shift ? bmax : shift;
}

double XI(raise_shift)(acc_t *acc, int64_t len, double *shift, int has,
                       double bmax)
{
    double to = XI(next_shift)(*shift, has, bmax);
    if (!has || to == *shift) {
        *shift = to; /* acc is still zero, or keeps its shift */
        return 1;
    }
    double f = exp(*shift - to);
    for (int64_t i = 0; i < len; i++)
        acc[i] *= f;
    *shift = to;
    return f;
}

void XI(shift_factors)(const X(plan) *plan, double *dst_shift, int dst_has,
                       double src_shift, int src_has, acc_t *a, acc_t *b)
{
    *a = *b = 1;
    /* the exact maps never read a shift (a restored checkpoint may still
     * carry one); src without tokens holds zeros */
    if (!plan->shifted || !src_has)
        return;
    if (!dst_has) {
        *dst_shift = src_shift; /* dst holds zeros */
    } else if (src_shift > *dst_shift) {
        *a = exp(*dst_shift - src_shift);
        *dst_shift = src_shift;
    } else if (src_shift != *dst_shift) { /* smaller, or NaN */
        *b = exp(src_shift - *dst_shift);
    }
}

void XI(acc_add)(const X(plan) *plan, acc_t *dst, double *dst_shift,
                 int dst_has, const acc_t *src, double src_shift, int src_has,
                 int64_t len)
{
    acc_t a, b;
    XI(shift_factors)(plan, dst_shift, dst_has, src_shift, src_has, &a, &b);
    if (a == 1 && b == 1) {
        for (int64_t i = 0; i < len; i++)
            dst[i] += src[i];
        return;
    }
    for (int64_t i = 0; i < len; i++)
        dst[i] = a * dst[i] + b * src[i];
}

int XI(state_fits_plan)(const X(state) *st, const X(plan) *plan)
{
    const X(plan) *p = st->plan;
    return p->fingerprint == plan->fingerprint && p->map == plan->map &&
           p->d == plan->d && p->m == plan->m && p->e == plan->e;
}

static int compatible(const X(state) *a, const X(state) *b)
{
    return XI(state_fits_plan)(a, b->plan);
}

int X(state_merge)(X(state) *dst, const X(state) *src)
{
    if (!dst)
        return -1;
    if (!src || !compatible(dst, src))
        return -2;
    if (src->tokens > INT64_MAX - dst->tokens)
        return LINATTN_ESIZE; /* the token count would pass int64 */
    const X(plan) *plan = dst->plan;
    int64_t len = state_len(plan);
    acc_t a, b;
    double shift = dst->shift;
    XI(shift_factors)(plan, &shift, dst->tokens > 0, src->shift,
                      src->tokens > 0, &a, &b);
    /* The sum is looked at before it is taken: finite states whose sum
     * overflows are refused, dst unchanged. */
    int nonfinite;
    double mx = scan_sum(dst->acc, a, src->acc, b, len, &nonfinite);
    if (!(mx <= REAL_MAX) && !dst->poisoned && !src->poisoned)
        return LINATTN_EOVERFLOW;
    for (int64_t i = 0; i < len; i++)
        dst->acc[i] = a * dst->acc[i] + b * src->acc[i];
    dst->shift = shift;
    dst->tokens += src->tokens;
    dst->mass += src->mass;
    dst->poisoned |= src->poisoned;
    dst->bound = mx;
    publish(dst);
    return 0;
}

int X(state_copy)(X(state) *dst, const X(state) *src)
{
    if (!dst)
        return -1;
    if (!src || !compatible(dst, src))
        return -2;
    XI(state_assign)(dst, src);
    return 0;
}

void XI(state_assign)(X(state) *dst, const X(state) *src)
{
    if (dst != src)
        memcpy(dst->acc, src->acc, XI(state_bytes)(dst->plan));
    dst->tokens = src->tokens;
    dst->mass = src->mass;
    dst->shift = src->shift;
    dst->poisoned = src->poisoned;
    dst->bound = src->bound;
}

int X(state_get)(const X(state) *state, int layout, real *s, int64_t lds,
                 real *z, int64_t *tokens)
{
    if (!state)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    int64_t m = state->plan->m, e = state->plan->e;
    /* z (m entries) as an m x 1 matrix, only for its address range */
    const linattn_i_mat mats[] = {{m, e, s, lds, 3, 1},
                                  {m, 1, z, layout == LINATTN_ROW_MAJOR ? 1 : m,
                                   5, 1}};
    int st = linattn_i_check_mats_io(layout, sizeof(real), mats, 2, 0);
    if (st)
        return st;
    for (int64_t i = 0; s && i < m; i++)
        for (int64_t j = 0; j < e; j++) {
            real v = state->sz[i * (e + 1) + j];
            if (layout == LINATTN_COL_MAJOR)
                s[i + j * lds] = v;
            else
                s[i * lds + j] = v;
        }
    for (int64_t i = 0; z && i < m; i++)
        z[i] = state->sz[i * (e + 1) + e];
    if (tokens)
        *tokens = state->tokens;
    return 0;
}

int X(state_shift)(const X(state) *state, double *shift)
{
    if (!state)
        return -1;
    if (!shift)
        return -2;
    *shift = state->shift;
    return 0;
}

/* Workspace of an update: phi of one block (none for the identity unless
 * K's leading dimension is beyond BLAS), a copy of the block of V (only
 * when V's is), the column sums z_b of phi and their per-chunk partials,
 * and in float the block's partial S before it is added to the double
 * accumulator. */
typedef struct {
    real *phi, *vcopy, *part;
    acc_t *zsum, *partial;
    double *rexp; /* the rows' largest exponents (shifted maps) */
} update_ws;

static void free_update_ws(update_ws *w)
{
    free(w->rexp);
    free(w->phi);
    free(w->vcopy);
    free(w->part);
    free(w->zsum);
    free(w->partial);
}

static int alloc_update_ws(update_ws *w, const X(plan) *plan, int64_t rows,
                           XI(view) k, XI(view) v)
{
    int64_t m = plan->m, e = plan->e;
    int need_phi = !XI(map_is_identity)(plan) || !linattn_i_ld_fits(k.ld);
    int need_v = !linattn_i_ld_fits(v.ld);
    *w = (update_ws){NULL, NULL, NULL, NULL, NULL, NULL};
    if (need_phi)
        w->phi = linattn_i_alloc(rows * m, sizeof(real));
    if (plan->shifted)
        w->rexp = linattn_i_alloc(rows, sizeof(double));
    if (need_v)
        w->vcopy = linattn_i_alloc(rows * e, sizeof(real));
    if (LINATTN_ACC_WIDER)
        w->part = linattn_i_alloc(m * e, sizeof(real));
    w->zsum = linattn_i_alloc(m, sizeof(acc_t));
    w->partial = linattn_i_alloc(XI(stats_partial_len)(plan, rows), sizeof(acc_t));
    if ((need_phi && !w->phi) || (need_v && !w->vcopy) ||
        (LINATTN_ACC_WIDER && !w->part) || !w->zsum || !w->partial ||
        (plan->shifted && !w->rexp)) {
        free_update_ws(w);
        return LINATTN_ENOMEM;
    }
    memset(w->zsum, 0, (size_t)m * sizeof(acc_t));
    return 0;
}

/* phi(K_b) of the shifted maps into w->phi with its column sums: the
 * features carry exp(-*shift), the largest exponent seen so far; when
 * the block raises it, the state accumulated before (acc, and the column
 * sums of earlier blocks) is rescaled first, as online softmax does. */
static void shifted_keys(const X(plan) *plan, update_ws *w, acc_t *acc,
                         double *shift, int *has, XI(view) kb, int64_t rows,
                         const XI(stats) *zs)
{
    int64_t m = plan->m;
    double bmax = XI(phi_pre)(plan, kb, rows, w->phi, w->rexp);
    double f = XI(raise_shift)(acc, m * (plan->e + 1), shift, *has, bmax);
    for (int64_t i = 0; f != 1 && i < m; i++)
        w->zsum[i] *= f;
    *has = 1;
    XI(phi_post)(plan, w->phi, rows, w->rexp, NULL, *shift, zs);
}

/* acc (at *shift; has: it holds tokens) += the state of rows [0, n) of
 * (k, v), on this thread. */
static int update_serial(const X(plan) *plan, acc_t *acc, double *shift,
                         int has, XI(view) k, XI(view) v, int64_t n)
{
    int64_t m = plan->m, e = plan->e, ld = e + 1;
    int64_t block = XI(block_rows)(plan);
    update_ws w;
    if (alloc_update_ws(&w, plan, n < block ? n : block, k, v))
        return LINATTN_ENOMEM;
    XI(stats) zs = {NULL, NULL, w.zsum, w.partial};
    for (int64_t r = 0; r < n; r += block) {
        int64_t rows = n - r < block ? n - r : block;
        XI(view) kb = XI(view_rows)(k, r), vb = XI(view_rows)(v, r), pk = kb;
        if (w.phi) {
            /* phi and its column sums in one pass over the block. */
            if (plan->shifted)
                shifted_keys(plan, &w, acc, shift, &has, kb, rows, &zs);
            else
                XI(phi_rows)(plan, kb, rows, w.phi, &zs);
            pk = (XI(view)){w.phi, m, 0};
        }
        if (w.vcopy) {
            XI(copy_rows)(vb, 0, rows, e, w.vcopy);
            vb = (XI(view)){w.vcopy, e, 0};
        }
#if LINATTN_ACC_WIDER
        XI(gemm)(1, 0, m, e, rows, 1, pk, vb, 0, w.part, e);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < e; j++)
                acc[i * ld + j] += w.part[i * e + j];
#else
        XI(gemm)(1, 0, m, e, rows, 1, pk, vb, 1, acc, ld);
#endif
        /* Identity: the column sums of K_b after the GEMM, from cache. */
        if (!w.phi)
            XI(phi_rows)(plan, kb, rows, NULL, &zs);
    }
    for (int64_t i = 0; i < m; i++)
        acc[i * ld + e] += w.zsum[i];
    free_update_ws(&w);
    return 0;
}

/* out (rows x cols, row major; may be x's memory) = rows [0, rows) of x,
 * row i times w[i], and sum[t] = the sum of out's column t.  A row of
 * weight 0 comes out as exact zeros, whatever x holds there: the product
 * is replaced, not kept (0 * NaN is NaN), so that it reaches nothing, and
 * the sums add +0 (no change).  That row is read all the same: skipping
 * one row in eight of K (the identity's features) cost 6% of the call,
 * the hardware prefetcher losing its stream (measured, AMD EPYC). */
static void weigh_rows(XI(view) x, int64_t rows, int64_t cols,
                       const real *w, real *out, acc_t *sum)
{
    for (int64_t t = 0; t < cols; t++)
        sum[t] = 0;
    if (x.colmajor) {
        XI(copy_rows)(x, 0, rows, cols, out);
        x = (XI(view)){out, cols, 0};
    }
    for (int64_t i = 0; i < rows; i++) {
        const real *xi = x.p + i * x.ld;
        real *oi = out + i * cols, wi = w[i];
        int kept = wi != 0;
        LINATTN_SIMD
        for (int64_t t = 0; t < cols; t++) {
            real y = wi * xi[t]; /* loaded unconditionally: vectorized */
            y = kept ? y : 0;
            oi[t] = y;
            sum[t] += y;
        }
    }
}

/* Nonzero when a row of weight 0 among rows [0, n) of v (e columns)
 * holds NaN or Inf.  The callers ask once V is in cache (the causal
 * chunk, after the triangle read it) or once a result shows NaN or Inf
 * (the non-causal block): looking at those rows before V's first use
 * cost a cache miss per row, a few % of the call (measured). */
static int masked_rows_bad(XI(view) v, int64_t e, const real *w, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (w[i] == 0 && !XI(all_finite)(XI(view_rows)(v, i), 1, e))
            return 1;
    return 0;
}

XI(view) XI(masked_values)(XI(view) v, int64_t e, const real *w, int64_t n,
                           int direct, real *buf)
{
    if (direct && !masked_rows_bad(v, e, w, n))
        return v;
    if (direct && v.colmajor) {
        /* copied only for its NaN or Inf: the copy keeps V's layout, so
         * that BLAS rounds as it does on V in place (zeros there give the
         * same bits as NaN there) */
        for (int64_t c = 0; c < e; c++)
            for (int64_t i = 0; i < n; i++)
                buf[c * n + i] = w[i] == 0 ? 0 : v.p[c * v.ld + i];
        return (XI(view)){buf, n, 1};
    }
    XI(copy_rows)(v, 0, n, e, buf);
    for (int64_t i = 0; i < n; i++)
        if (w[i] == 0)
            memset(buf + i * e, 0, (size_t)e * sizeof(real));
    return (XI(view)){buf, e, 0};
}

/* The largest of the rows' exponents rexp[i] of weight not 0 (-Inf for
 * none; NaN propagates, as in phi_pre): a key of weight 0 adds no term,
 * so it must not raise the shift (a huge or NaN row would underflow or
 * poison every other one). */
static double kept_max(const double *rexp, const real *w, int64_t n)
{
    double mx = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (w[i] != 0 && (rexp[i] > mx || rexp[i] != rexp[i]))
            mx = rexp[i];
    return mx;
}

/* acc (at *shift; *has: it holds keys) += the state of the weighted
 * keys a, on this thread, block by block: phi(K_b) with each row times
 * its weight, then S += phi_w^T V_b by GEMM and z += the column sums of
 * phi_w, as the unweighted update does.  K_b is mapped where the caller
 * keeps it, rows of weight 0 included: every map computes a row's
 * features from that row alone (elementwise maps, and the projection
 * GEMM, the bias and the activations of the kernelized ones, row by row),
 * so NaN or Inf there stays in the row's own features, which weigh_rows
 * then writes as exact zeros; the shifted maps take their block maximum
 * over the other rows (kept_max).  V_b is read in place too unless a row
 * of weight 0 holds NaN or Inf (then a copy with those rows zeroed, see
 * below).  A block of weight 0 only is skipped, and a block's leading
 * and trailing keys of weight 0 are left out.  So a block with zeros
 * costs what one without does, where gathering its kept rows cost a copy
 * of K_b and V_b.  *has is set once a key entered. */
static int weighted_serial(const X(plan) *plan, acc_t *acc, double *shift,
                           int *has, keys a)
{
    int64_t m = plan->m, e = plan->e, ld = e + 1;
    int64_t block = XI(block_rows)(plan), rows = a.n < block ? a.n : block;
    int identity = XI(map_is_identity)(plan);
    real *vb = linattn_i_alloc(rows * e, sizeof(real));
    real *phi = linattn_i_alloc(rows * m, sizeof(real));
    acc_t *zpart = linattn_i_alloc(m, sizeof(acc_t));
    double *rexp = plan->shifted ? linattn_i_alloc(rows, sizeof(double))
                                 : NULL;
    real *part = linattn_i_alloc(m * e, sizeof(real));
    int status = 0;
    if (!vb || !phi || !zpart || (plan->shifted && !rexp) || !part)
        status = LINATTN_ENOMEM;
    for (int64_t r = 0; !status && r < a.n; r += block) {
        int64_t hi = a.n - r < block ? a.n : r + block, c = 0;
        keys b = keys_rows(a, r, hi);
        for (int64_t i = 0; i < b.n; i++)
            c += b.w[i] != 0;
        if (c == 0)
            continue;
        /* from its first key of weight not 0 to its last: a block across
         * a padded sequence's end does not map and sum its padding */
        int64_t lo = 0, top = b.n;
        while (b.w[lo] == 0)
            lo++;
        while (b.w[top - 1] == 0)
            top--;
        b = keys_rows(b, lo, top);
        /* V_b in place when BLAS takes its leading dimension */
        XI(view) vv = b.v;
        if (!linattn_i_ld_fits(vv.ld))
            vv = XI(masked_values)(vv, e, b.w, b.n, 0, vb);
        if (plan->shifted) {
            XI(phi_pre)(plan, b.k, b.n, phi, rexp);
            XI(raise_shift)(acc, m * ld, shift, *has,
                            kept_max(rexp, b.w, b.n));
            XI(phi_post)(plan, phi, b.n, rexp, NULL, *shift, NULL);
        } else if (!identity) {
            XI(phi_rows)(plan, b.k, b.n, phi, NULL);
        }
        /* the rows weighted and their column sums taken in one pass (the
         * identity's features are the keys: copied in the same pass) */
        weigh_rows(identity ? b.k : (XI(view)){phi, m, 0}, b.n, m, b.w, phi,
                   zpart);
        *has = 1;
        XI(view) pk = {phi, m, 0};
        /* S += phi_w^T V_b as the unweighted update adds it (in double
         * straight into acc, in float through the block's part), so that
         * weights all 1 give its bits.  A sum that is not finite while
         * V_b is read in place may come from NaN or Inf in a row of
         * weight 0 (0 * NaN): only then are those rows looked at, and the
         * block taken back (double: acc's S was kept in part) and redone
         * from V_b with them zeroed.  A clean block pays a pass or two
         * over the small m x e sum, not a scan of V_b. */
#if LINATTN_ACC_WIDER
        real *sb = part, beta = 0;
        int64_t lds = e;
#else
        real *sb = acc, beta = 1;
        int64_t lds = ld;
        for (int64_t i = 0; i < m; i++)
            memcpy(part + i * e, acc + i * ld, (size_t)e * sizeof(real));
#endif
        XI(gemm)(1, 0, m, e, b.n, 1, pk, vv, beta, sb, lds);
        if (vv.p == b.v.p && !XI(all_finite)((XI(view)){sb, lds, 0}, m, e)) {
            vv = XI(masked_values)(vv, e, b.w, b.n, 1, vb);
            for (int64_t i = 0; vv.p != b.v.p && beta != 0 && i < m; i++)
                memcpy(sb + i * lds, part + i * e, (size_t)e * sizeof(real));
            if (vv.p != b.v.p)
                XI(gemm)(1, 0, m, e, b.n, 1, pk, vv, beta, sb, lds);
        }
#if LINATTN_ACC_WIDER
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < e; j++)
                acc[i * ld + j] += part[i * e + j];
#endif
        for (int64_t i = 0; i < m; i++)
            acc[i * ld + e] += zpart[i];
    }
    free(vb), free(phi), free(zpart), free(rexp), free(part);
    return status;
}

/* acc (at *shift; *has: it holds keys) += the state of the keys a. */
static int keys_serial(const X(plan) *plan, acc_t *acc, double *shift,
                       int *has, keys a)
{
    if (a.w)
        return weighted_serial(plan, acc, shift, has, a);
    int st = update_serial(plan, acc, shift, *has, a.k, a.v, a.n);
    *has = *has || a.n > 0;
    return st;
}

typedef struct {
    const X(plan) *plan;
    acc_t *parts;
    double *shifts;
    int has[LINATTN_MAX_THREADS]; /* range t's part holds keys */
    int64_t len;
    keys a;
} update_job;

static int64_t update_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    update_job *j = ctx;
    int st = keys_serial(j->plan, j->parts + t * j->len, &j->shifts[t],
                         &j->has[t], keys_rows(j->a, lo, hi));
    return st ? 0 : 1;
}

/* st = exp(decay) st + delta (at dshift: the sums of the keys a, built
 * from zero), after settle's verdict on the result.  The shifted maps
 * take the decay as a shift (their sums are acc exp(shift): no pass over
 * acc), the others as a factor. */
static int commit(X(state) *st, const acc_t *delta, double dshift,
                  keys keys_in, int strict, double decay)
{
    int64_t len = state_len(st->plan);
    acc_t a, b;
    double shift = st->shift + (st->plan->shifted ? decay : 0);
    XI(shift_factors)(st->plan, &shift, st->tokens > 0, dshift, 1, &a, &b);
    if (!st->plan->shifted && decay != 0)
        a *= (acc_t)exp(decay);
    int nonfinite;
    double mx = scan_sum(st->acc, a, delta, b, len, &nonfinite);
    int status = settle(st, mx, nonfinite, keys_in, strict);
    if (status)
        return status;
    for (int64_t i = 0; i < len; i++)
        st->acc[i] = a * st->acc[i] + b * delta[i];
    st->shift = shift;
    return 0;
}

/* A decayed update's bookkeeping (attn/decay.h): the keys' total log
 * decay, and the tokens and count the state holds after it (the keys'
 * weights then carry their decay to the end). */
typedef struct {
    double total;
    int64_t tokens;
    double mass;
} decayed;

/* st += the state of the keys a (decayed: st = exp(d->total) st + the
 * keys, d NULL when the state does not forget).  strict (the public
 * update): a sum that finite inputs push beyond the range is refused
 * with LINATTN_EOVERFLOW and st is unchanged; otherwise it is kept (the
 * one-call paths, whose queries then report the rows it reaches).  Keys
 * of weight 0 are as if absent: they are not counted in tokens. */
static int update_run(X(state) *st, keys a, int strict, const decayed *d,
                      XI(fused) *fq)
{
    const X(plan) *plan = st->plan;
    int64_t len = state_len(plan);
    int status;
    double mass;
    int64_t count = keys_count(a, &mass);
    double decay = d ? d->total : 0;
    if (d) {
        count = d->tokens;
        mass = d->mass;
    }
    if (count == 0 && decay == 0)
        return 0;
    if (count == 0) {
        /* no key enters: the state only forgets */
        if (plan->shifted)
            st->shift += st->tokens > 0 ? decay : 0;
        else
            for (int64_t i = 0; i < len; i++)
                st->acc[i] *= (acc_t)exp(decay);
        st->mass = mass;
        XI(state_publish)(st);
        return 0;
    }
    if (!d && !a.w && XI(small_ok)(plan, a.n) &&
        XI(state_update_small)(st, a.k, a.v, a.n, NULL, fq)) {
        /* taken in place (its sums could not leave the range), and
         * published in its pass */
        st->tokens += count;
        st->mass += mass;
        return 0;
    }
    int nt = linattn_i_threads(a.n, XI(block_rows)(plan));
    if (nt == 1 && st->bound == 0 && !st->poisoned) {
        /* acc holds zeros (a new state, the one-call paths): accumulate in
         * place, and a refusal puts the zeros back.  Workspace comes first
         * inside: ENOMEM leaves acc unchanged. */
        double shift = st->shift;
        int has = st->tokens > 0;
        status = keys_serial(plan, st->acc, &st->shift, &has, a);
        int nonfinite;
        double mx = scan_sum(st->acc, 1, NULL, 0, len, &nonfinite);
        if (!status)
            status = settle(st, mx, nonfinite, a, strict);
        if (status) {
            memset(st->acc, 0, (size_t)len * sizeof(acc_t));
            st->shift = shift;
            return status;
        }
    } else {
        /* The increment is built aside from zero (per thread, added in
         * thread order) and taken by commit once all has succeeded.  Its
         * shift starts at the state's, so that keys whose features all
         * underflow leave the state's shift alone; a range without keys
         * (all of weight 0) adds nothing and has no say in the shift. */
        acc_t *parts = linattn_i_alloc(nt * len, sizeof(acc_t));
        if (!parts)
            return LINATTN_ENOMEM;
        memset(parts, 0, (size_t)(nt * len) * sizeof(acc_t));
        double shifts[LINATTN_MAX_THREADS];
        update_job job = {plan, parts, shifts, {0}, len, a};
        for (int t = 0; t < nt; t++)
            shifts[t] = st->shift;
        int ok = linattn_i_parallel_ranges(nt, a.n, update_range, &job) != 0;
        int has = job.has[0];
        for (int64_t t = 1; ok && t < nt; t++) {
            XI(acc_add)(plan, parts, &shifts[0], has, parts + t * len,
                        shifts[t], job.has[t], len);
            has = has || job.has[t];
        }
        status = ok ? commit(st, parts, shifts[0], a, strict, decay)
                    : LINATTN_ENOMEM;
        free(parts);
        if (status)
            return status;
    }
    st->tokens += count;
    st->mass = d ? mass : st->mass + mass;
    publish(st);
    return 0;
}

/* Shifted maps: the largest exponent of the keys a whose own weight is
 * not 0 (-Inf for none; NaN propagates), block by block into *top;
 * LINATTN_ENOMEM when the blocks' workspace cannot be had. */
static int keys_top(const X(plan) *plan, keys a, double *top)
{
    int64_t block = XI(block_rows)(plan), rows = a.n < block ? a.n : block;
    real *phi = linattn_i_alloc(rows * plan->m, sizeof(real));
    double *rexp = linattn_i_alloc(rows, sizeof(double));
    *top = -INFINITY;
    for (int64_t r = 0; phi && rexp && r < a.n; r += block) {
        keys b = keys_rows(a, r, a.n - r < block ? a.n : r + block);
        double bmax = XI(phi_pre)(plan, b.k, b.n, phi, rexp);
        if (b.w)
            bmax = kept_max(rexp, b.w, b.n);
        *top = bmax > *top || bmax != bmax ? bmax : *top;
    }
    int bad = a.n > 0 && (!phi || !rexp);
    free(phi), free(rexp);
    return bad ? LINATTN_ENOMEM : 0;
}

/* The decayed update as the weighted one: key j's weight times exp(B -
 * b_j) <= 1 (B the keys' total log decay, b_j its running sum up to key
 * j), the state before times exp(B).  One array of n weights. */
static int decayed_update(X(state) *st, const XI(problem) *pb, keys a,
                          int strict, XI(fused) *fq)
{
    decayed d;
    double mass, sums[8];
    d.tokens = keys_count(a, &mass);
    d.mass = XI(decayed_count)(pb, 0, a.n, st->mass, NULL);
    d.total = XI(decay_total)(pb, 0, a.n);
    /* a few rows without weights (decoding): in place, the decay folded
     * into the few-row path's own rescaling */
    if (!a.w && a.n > 0 && a.n <= 8 && XI(small_ok)(st->plan, a.n)) {
        XI(decay_sums)(pb, 0, a.n, sums);
        if (XI(state_update_small)(st, a.k, a.v, a.n, sums, fq)) {
            st->tokens += d.tokens;
            st->mass = d.mass;
            return 0;
        }
    }
    real *w = linattn_i_alloc(a.n > 0 ? a.n : 1, sizeof *w);
    if (!w)
        return LINATTN_ENOMEM;
    const real *g = pb->part[LINATTN_I_GATE].p;
    double run = 0;
    int ones = !a.w, lost = 0;
    for (int64_t j = 0; j < a.n; j++) {
        run += XI(log_decay)(pb) + (g ? (double)g[j] : 0);
        real wj = a.w ? a.w[j] : 1;
        w[j] = wj == 0 ? 0 : wj * (real)exp(d.total - run);
        ones &= w[j] == 1;
        lost |= wj != 0 && w[j] == 0;
    }
    /* A key whose decay underflowed to 0 by the end adds nothing, but the
     * shifted maps' shift is still the largest exponent of every key of
     * weight not 0, as in the causal chunks (attn/causal.c): the shift a
     * state holds, and so the normalizers a causal call writes from it,
     * do not depend on where the keys were cut into updates (threads). */
    double top = -INFINITY;
    int status = lost && st->plan->shifted ? keys_top(st->plan, a, &top) : 0;
    /* keys that have not decayed by the end (gates of 0) take the
     * unweighted update, whose bits they then are in every layout */
    keys b = a;
    b.w = ones ? NULL : w;
    if (!status)
        status = update_run(st, b, strict, &d, NULL);
    if (!status && top > -INFINITY) {
        XI(raise_shift)(st->acc, state_len(st->plan), &st->shift,
                        st->tokens > 0, top);
        publish(st);
    }
    free(w);
    return status;
}

int XI(state_update_fused)(X(state) *st, const XI(problem) *pb, int strict,
                           XI(fused) *fq)
{
    keys a = {XI(part_view)(pb, LINATTN_I_K), XI(part_view)(pb, LINATTN_I_V),
              pb->part[LINATTN_I_KW].p, pb->nk};
    if (XI(decays)(pb))
        return decayed_update(st, pb, a, strict, fq);
    return update_run(st, a, strict, NULL, fq);
}

int XI(state_update_run)(X(state) *st, const XI(problem) *pb, int strict)
{
    return XI(state_update_fused)(st, pb, strict, NULL);
}

/* Workspace of a query on one thread: phi of one block (none for the
 * identity), the block's normalizers and their reciprocals, z contiguous. */
typedef struct {
    real *phi, *dd, *y;
    int64_t rows; /* capacity in rows: dd holds den[rows], inv[rows], z[m] */
} query_ws;

/* need_phi: phi must be materialized (any map but the identity, or Q's
 * leading dimension beyond BLAS); need_y: an output's is (write_rows). */
static int alloc_query_ws(query_ws *w, const X(state) *st, int64_t rows,
                          int need_phi, int need_y)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e;
    w->rows = rows;
    w->phi = need_phi ? linattn_i_alloc(rows * m, sizeof(real)) : NULL;
    w->y = need_y ? linattn_i_alloc(rows * e, sizeof(real)) : NULL;
    w->dd = linattn_i_alloc(2 * rows + m, sizeof(real));
    if ((need_phi && !w->phi) || (need_y && !w->y) || !w->dd) {
        free(w->phi);
        free(w->y);
        free(w->dd);
        w->phi = w->dd = w->y = NULL;
        return LINATTN_ENOMEM;
    }
    for (int64_t i = 0; i < m; i++)
        w->dd[2 * rows + i] = st->sz[i * (e + 1) + e];
    return 0;
}

/* Rows [r0, r0 + n) of pb's queries, on this thread with workspace w (for
 * up to min(n, block) rows).  Returns 0, or LINATTN_EDENOM or
 * LINATTN_EOVERFLOW with *bad the first offending row of the outputs. */
static int query_serial(const X(state) *st, query_ws *w,
                        const XI(problem) *pb, int64_t r0, int64_t n,
                        int64_t *bad)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e;
    int64_t block = w->rows; /* never more than the plan's block */
    real *inv = w->dd + w->rows, *z = w->dd + 2 * w->rows;
    XI(view) s = {st->sz, e + 1, 0};
    XI(view) q = XI(view_rows)(XI(part_view)(pb, LINATTN_I_Q), r0);
    XI(stats) ds = {z, w->dd, NULL, NULL};
    XI(origin) origin = {pb, st, -1};
    int want_out = pb->part[LINATTN_I_OUT].p != NULL;
    for (int64_t r = 0; r < n; r += block) {
        int64_t rows = n - r < block ? n - r : block;
        XI(view) pq = XI(view_rows)(q, r);
        /* phi and the normalizers phi . z in one pass, before anything is
         * written, so that a bad normalizer stops the block cleanly. */
        XI(phi_query)(plan, pq, rows, w->phi, &ds);
        if (w->phi)
            pq = (XI(view)){w->phi, m, 0};
        int64_t good = XI(good_rows)(plan, w->dd, rows, want_out, st->mass,
                                     0, NULL);
        int64_t r1 = r0 + r;
        if (XI(write_rows)(pb, pq, s, m, w->dd, good, r1, inv, w->y)) {
            int64_t over = XI(first_overflow)(pb, r1, good, &origin, r1);
            if (over < good) {
                *bad = r1 + over;
                return LINATTN_EOVERFLOW;
            }
        }
        if (good < rows) {
            *bad = r1 + good;
            return LINATTN_EDENOM;
        }
    }
    return 0;
}

typedef struct {
    const X(state) *st;
    query_ws *ws;
    const XI(problem) *pb;
    int status[LINATTN_MAX_THREADS]; /* range t's, with its first bad row */
} query_job;

static int64_t query_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    query_job *j = ctx;
    int64_t bad = INT64_MAX;
    j->status[t] = query_serial(j->st, &j->ws[t], j->pb, lo, hi - lo, &bad);
    return bad;
}

int XI(state_query_run)(const X(state) *st, const XI(problem) *pb,
                        int64_t *bad_row)
{
    int64_t n = pb->nq;
    if (n == 0)
        return 0;
    if (XI(small_ok)(st->plan, n))
        return XI(state_query_small)(st, pb, bad_row);
    int64_t block = XI(block_rows)(st->plan);
    int nt = linattn_i_threads(n, block);
    /* Every thread's workspace before any output is written, so that
     * LINATTN_ENOMEM writes nothing. */
    query_ws ws[LINATTN_MAX_THREADS];
    int64_t per = (n + nt - 1) / nt;
    int have = 0;
    int need_phi = !XI(query_is_raw)(st->plan) ||
                   !linattn_i_ld_fits(pb->part[LINATTN_I_Q].s.ld);
    int need_y = XI(write_needs_y)(pb);
    while (have < nt && !alloc_query_ws(&ws[have], st, per < block ? per : block,
                                        need_phi, need_y))
        have++;
    int status = LINATTN_ENOMEM;
    if (have == nt) {
        /* Each thread answers a contiguous range of rows; the first bad
         * row over all ranges is the one reported. */
        query_job job = {st, ws, pb, {0}};
        int64_t bad = linattn_i_parallel_ranges(nt, n, query_range, &job);
        status = bad < n ? job.status[linattn_i_range_of(n, nt, bad)] : 0;
        if (bad < n && bad_row)
            *bad_row = bad;
    }
    for (int t = 0; t < have; t++) {
        free(ws[t].phi);
        free(ws[t].dd);
        free(ws[t].y);
    }
    return status;
}

/* linattn_d_state_update: the state, its keys and values. */
static const linattn_i_signature update_sig = {
    .state = 1, .layout = 2, .nk = 3,
    .flags = LINATTN_I_SCAN | LINATTN_I_TOKENS | LINATTN_I_DECAY,
    .part = {[LINATTN_I_K] = {4, LINATTN_I_NK, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_V] = {6, LINATTN_I_NK, LINATTN_I_E, LINATTN_I_INPUT}}};

int X(state_update)(X(state) *state, int layout, int64_t n, const real *k,
                    int64_t ldk, const real *v, int64_t ldv)
{
    const X(plan) *plan = state ? state->plan : NULL;
    XI(problem) pb = XI(problem_init)(plan, layout, 0, n);
    pb.state = state;
    pb.part[LINATTN_I_K] = XI(part_single)(k, ldk);
    pb.part[LINATTN_I_V] = XI(part_single)(v, ldv);
    int st = XI(problem_check)(&pb, &update_sig, NULL);
    return st ? st : XI(state_update_run)(state, &pb, 1);
}

/* linattn_d_state_update_ex: and the extras (8), of which it takes the
 * key weights. */
static const linattn_i_signature update_ex_sig = {
    .state = 1, .layout = 2, .nk = 3, .extras = 8,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_GATES,
    .flags = LINATTN_I_SCAN | LINATTN_I_TOKENS | LINATTN_I_DECAY,
    .part = {[LINATTN_I_K] = {4, LINATTN_I_NK, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_V] = {6, LINATTN_I_NK, LINATTN_I_E, LINATTN_I_INPUT},
             LINATTN_I_WEIGHTS_IN(8), LINATTN_I_GATES_IN(8)}};

int X(state_update_ex)(X(state) *state, int layout, int64_t n, const real *k,
                       int64_t ldk, const real *v, int64_t ldv,
                       const X(extras) *ex)
{
    const X(plan) *plan = state ? state->plan : NULL;
    XI(problem) pb = XI(problem_init)(plan, layout, 0, n);
    pb.state = state;
    pb.part[LINATTN_I_K] = XI(part_single)(k, ldk);
    pb.part[LINATTN_I_V] = XI(part_single)(v, ldv);
    pb.extras = ex;
    if (ex) {
        pb.part[LINATTN_I_KW] = XI(part_single)(ex->weights, 1);
        pb.part[LINATTN_I_GATE] = XI(part_single)(ex->gates, 1);
    }
    int st = XI(problem_check)(&pb, &update_ex_sig, NULL);
    return st ? st : XI(state_update_run)(state, &pb, 1);
}

/* linattn_d_state_query: out and num are optional (a NULL one is skipped,
 * leading dimension and all), but one of out, num, den must be asked
 * for. */
static const linattn_i_signature query_sig = {
    .state = 1, .layout = 2, .nq = 3, .some_output = 10,
    .flags = LINATTN_I_SCAN | LINATTN_I_DECAY,
    .part = {[LINATTN_I_Q] = {4, LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_OUT] = {6, LINATTN_I_NQ, LINATTN_I_E,
                                LINATTN_I_OUTPUT | LINATTN_I_OPTIONAL},
             [LINATTN_I_NUM] = {8, LINATTN_I_NQ, LINATTN_I_E,
                                LINATTN_I_OUTPUT | LINATTN_I_OPTIONAL},
             [LINATTN_I_DEN] = {10, LINATTN_I_NQ, LINATTN_I_ONE,
                                LINATTN_I_OUTPUT | LINATTN_I_OPTIONAL |
                                    LINATTN_I_VECTOR}}};

int X(state_query)(const X(state) *state, int layout, int64_t n,
                   const real *q, int64_t ldq, real *out, int64_t ldout,
                   real *num, int64_t ldnum, real *den, int64_t *bad_row)
{
    const X(plan) *plan = state ? state->plan : NULL;
    XI(problem) pb = XI(problem_init)(plan, layout, n, 0);
    pb.state = (X(state) *)state; /* only read */
    pb.part[LINATTN_I_Q] = XI(part_single)(q, ldq);
    pb.part[LINATTN_I_OUT] = XI(part_single)(out, ldout);
    pb.part[LINATTN_I_NUM] = XI(part_single)(num, ldnum);
    pb.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    int st = XI(problem_check)(&pb, &query_sig, NULL);
    if (st)
        return st;
    return XI(state_query_run)(state, &pb, bad_row);
}
