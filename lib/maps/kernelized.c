/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernelized.c -- the kernelized feature maps (FAVOR+, two-sided FAVOR+,
 * random Fourier, Taylor, caller-supplied) on row blocks.
 *
 * The maps with a projection start with one GEMM, U = X (s W)^T, written
 * into the first columns of the block's feature buffer; everything after
 * it is a pass over rows in cache.  The exponential maps subtract a
 * stabilizing shift inside the exponent (doc/maps.md): the query form
 * takes each row's own largest exponent, which cancels in num / den; keys
 * take a shift chosen by the caller across rows (phi_pre, then phi_post).
 */
#include <math.h>
#include <string.h>
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/simd.h"
#include "common/threads.h"
#include "common/validate.h"

/* Features per half: the maps built on [f(U), g(U)] have m / 2 rows of
 * W, the others m. */
static int64_t half_of(const X(plan) *p)
{
    int two = p->map == LINATTN_MAP_FAVOR_HYP || p->map == LINATTN_MAP_TRIG ||
              (p->map == LINATTN_MAP_CUSTOM && p->act == LINATTN_ACT_HEDGEHOG);
    return two ? p->m / 2 : p->m;
}

/* x(i, t) of a view, either layout. */
static inline real at(XI(view) x, int64_t i, int64_t t)
{
    return x.colmajor ? x.p[i + t * x.ld] : x.p[i * x.ld + t];
}

/* Up to this many rows the projection is a plain loop (decoding). */
#define PROJECT_LOOP_ROWS 4

/* U = X (s W)^T (+ b later) into the first wrows columns of out (ld m).
 * A leading dimension BLAS cannot take goes through plain loops (rare),
 * and so do the few rows of a decoding step (state_small.c: no BLAS call
 * overhead per token). */
static void project(const X(plan) *p, XI(view) x, int64_t rows, real *out)
{
    int64_t d = p->d, r = p->wrows, m = p->m;
    if (rows == 0 || r == 0)
        return;
    if (linattn_i_ld_fits(x.ld) && rows > PROJECT_LOOP_ROWS) {
        XI(gemm)(0, 1, rows, r, d, 1, x, (XI(view)){p->ws, d, 0}, 0, out, m);
        return;
    }
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < r; j++) {
            const real *wj = p->ws + j * d;
            real acc = 0;
            if (x.colmajor) {
                for (int64_t t = 0; t < d; t++)
                    acc += x.p[i + t * x.ld] * wj[t];
            } else {
                const real *xi = x.p + i * x.ld;
                LINATTN_SIMD_SUM
                for (int64_t t = 0; t < d; t++)
                    acc += xi[t] * wj[t];
            }
            out[i * m + j] = acc;
        }
}

/* |x_i|^2 s^2 / 2 for rows [lo, hi) into c[0 .. hi - lo). */
static void half_sq_norms(const X(plan) *p, XI(view) x, int64_t lo,
                          int64_t hi, real *c)
{
    int64_t d = p->d;
    for (int64_t i = lo; i < hi; i++)
        c[i - lo] = 0;
    if (x.colmajor) {
        for (int64_t t = 0; t < d; t++) {
            const real *col = x.p + t * x.ld;
            LINATTN_SIMD
            for (int64_t i = lo; i < hi; i++)
                c[i - lo] += col[i] * col[i];
        }
    } else {
        for (int64_t i = lo; i < hi; i++) {
            const real *row = x.p + i * x.ld;
            real acc = 0;
            LINATTN_SIMD_SUM
            for (int64_t t = 0; t < d; t++)
                acc += row[t] * row[t];
            c[i - lo] = acc;
        }
    }
    for (int64_t i = lo; i < hi; i++)
        c[i - lo] *= p->half_s2;
}

/* Row maxima with four independent chains (a reduction the compiler
 * leaves serial; omp simd's reduction(max) was measured slower still).  A
 * NaN entry need not propagate: it makes its own feature NaN anyway. */
#define MAX4(a, f)                                                          \
    real m0 = -(real)INFINITY, m1 = m0, m2 = m0, m3 = m0;                   \
    int64_t j = 0;                                                          \
    for (; j + 4 <= n; j += 4) {                                            \
        real x0 = f(a[j]), x1 = f(a[j + 1]), x2 = f(a[j + 2]);              \
        real x3 = f(a[j + 3]);                                              \
        m0 = x0 > m0 ? x0 : m0, m1 = x1 > m1 ? x1 : m1;                     \
        m2 = x2 > m2 ? x2 : m2, m3 = x3 > m3 ? x3 : m3;                     \
    }                                                                       \
    for (; j < n; j++)                                                      \
        m0 = f(a[j]) > m0 ? f(a[j]) : m0;                                   \
    m0 = m1 > m0 ? m1 : m0, m2 = m3 > m2 ? m3 : m2;                         \
    return m2 > m0 ? m2 : m0

#define SAME(x) (x)
#define ABS(x) ((x) < 0 ? -(x) : (x))

static real max_of(const real *a, int64_t n)
{
    MAX4(a, SAME);
}

static real max_abs_of(const real *a, int64_t n)
{
    MAX4(a, ABS);
}

/* u += b over the first wrows entries of a row. */
static void add_bias(const X(plan) *p, real *u)
{
    if (!p->bias)
        return;
    LINATTN_SIMD
    for (int64_t j = 0; j < p->wrows; j++)
        u[j] += p->bias[j];
}

/* Row o (m entries, u in the first half) = exp([u, -u] - t). */
static void exp_two_sided(real *o, int64_t h, real t)
{
    LINATTN_SIMD
    for (int64_t j = 0; j < h; j++)
        o[h + j] = -o[j];
    XI(exp_shift_array)(o, o, 2 * h, t);
}

/* o = exp(o - t) over n entries. */
static void exp_shifted(real *o, int64_t n, real t)
{
    XI(exp_shift_array)(o, o, n, t);
}

static void scale(real *o, int64_t n, real f)
{
    LINATTN_SIMD
    for (int64_t j = 0; j < n; j++)
        o[j] *= f;
}

/* Row o = [sin u, cos u] (u in the first half). */
static void sin_cos(real *o, int64_t h)
{
    for (int64_t j = 0; j < h; j++) {
        real u = o[j];
        o[h + j] = (real)cos((double)u);
        o[j] = (real)sin((double)u);
    }
}

/* Taylor features of row i of x into o: [1, x~, then for a = 0..d-1:
 * x~_a^2 / sqrt(2), x~_a x~_b for b = a+1..d-1]. */
static void taylor_row(const X(plan) *p, XI(view) x, int64_t i, real *o)
{
    int64_t d = p->d;
    real s = (real)p->input_scale, *xt = o + 1, *q = o + 1 + d;
    const real r2 = (real)0.70710678118654752440;
    o[0] = 1;
    for (int64_t t = 0; t < d; t++)
        xt[t] = s * at(x, i, t);
    for (int64_t a = 0; a < d; a++) {
        real xa = xt[a];
        *q++ = xa * xa * r2;
        LINATTN_SIMD
        for (int64_t b = a + 1; b < d; b++)
            q[b - a - 1] = xa * xt[b];
        q += d - a - 1;
    }
}

/* Hedgehog: softmax over [u, -u]. */
static void hedgehog_row(real *o, int64_t h)
{
    exp_two_sided(o, h, max_abs_of(o, h));
    acc_t sum = 0;
    for (int64_t j = 0; j < 2 * h; j++)
        sum += o[j];
    scale(o, 2 * h, (real)(1 / sum));
}

/* The query form of rows [lo, hi): the projection is in out; each row
 * finished with its own shift. */
static void query_rows(const X(plan) *p, XI(view) x, int64_t lo, int64_t hi,
                       real *out)
{
    int64_t m = p->m, h = half_of(p);
    real ln = p->log_norm, fs = (real)exp(-(double)p->log_norm);
    for (int64_t i = lo; i < hi; i++) {
        real *o = out + i * m;
        switch (p->map) {
        case LINATTN_MAP_FAVOR:
            exp_shifted(o, m, max_of(o, m) + ln);
            break;
        case LINATTN_MAP_FAVOR_HYP:
            exp_two_sided(o, h, max_abs_of(o, h) + ln);
            break;
        case LINATTN_MAP_TRIG: /* exp(|x~|^2/2) is the row's whole shift */
            sin_cos(o, h);
            scale(o, m, fs);
            break;
        case LINATTN_MAP_TAYLOR:
            taylor_row(p, x, i, o);
            break;
        default: /* custom */
            add_bias(p, o);
            if (p->act == LINATTN_ACT_EXP)
                exp_shifted(o, m, max_of(o, m));
            else if (p->act == LINATTN_ACT_RELU)
                for (int64_t j = 0; j < m; j++)
                    o[j] = o[j] < 0 ? 0 : o[j]; /* NaN stays NaN */
            else if (p->act == LINATTN_ACT_ELU1)
                XI(elu1_array)(o, o, m);
            else
                hedgehog_row(o, h);
            break;
        }
    }
}

/* The chunks of a block of rows (XI(over_chunks)), each followed by its
 * statistics while it is in cache. */
typedef void (*chunk_fn)(const X(plan) *p, const void *ctx, int64_t lo,
                         int64_t hi, real *out);

typedef struct {
    const X(plan) *p;
    chunk_fn f;
    const void *ctx;
    real *out;
    const XI(stats) *st;
} kchunk_ctx;

static void kmap_chunk(const void *ctx, int64_t lo, int64_t hi, acc_t *part)
{
    const kchunk_ctx *k = ctx;
    int64_t m = k->p->m;
    k->f(k->p, k->ctx, lo, hi, k->out);
    if (k->st)
        XI(stats_range)((XI(view)){k->out, m, 0}, m, lo, hi, k->st, part);
}

static void over_chunks(const X(plan) *p, int64_t rows, real *out,
                        chunk_fn f, const void *ctx, const XI(stats) *st)
{
    kchunk_ctx k = {p, f, ctx, out, st};
    XI(over_chunks)(rows, p->m, kmap_chunk, &k, st);
}

static void query_chunk(const X(plan) *p, const void *ctx, int64_t lo,
                        int64_t hi, real *out)
{
    query_rows(p, *(const XI(view) *)ctx, lo, hi, out);
}

void XI(kmap_rows)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   const XI(stats) *st)
{
    project(plan, x, rows, out);
    over_chunks(plan, rows, out, query_chunk, &x, st);
}

/* ---- keys: phi_pre, then phi_post with the caller's shift ---- */

typedef struct {
    XI(view) x;
    double *rexp;
} pre_ctx;

/* FAVOR, FAVOR_HYP: the exponents E = [u] or [u, -u] minus |x~|^2 / 2;
 * TRIG: [sin u, cos u] and the exponent |x~|^2 / 2; custom exp: u + b. */
static void pre_chunk(const X(plan) *p, const void *ctxp, int64_t lo,
                      int64_t hi, real *out)
{
    const pre_ctx *ctx = ctxp;
    int64_t m = p->m, h = half_of(p);
    real c[LINATTN_ROWS_PER_TASK];
    if (p->map != LINATTN_MAP_CUSTOM)
        half_sq_norms(p, ctx->x, lo, hi, c);
    for (int64_t i = lo; i < hi; i++) {
        real *o = out + i * m, ci = p->map != LINATTN_MAP_CUSTOM ? c[i - lo] : 0;
        switch (p->map) {
        case LINATTN_MAP_FAVOR:
            ctx->rexp[i] = (double)(max_of(o, m) - ci);
            LINATTN_SIMD
            for (int64_t j = 0; j < m; j++)
                o[j] -= ci;
            break;
        case LINATTN_MAP_FAVOR_HYP:
            ctx->rexp[i] = (double)(max_abs_of(o, h) - ci);
            LINATTN_SIMD
            for (int64_t j = 0; j < h; j++) {
                real u = o[j];
                o[h + j] = -u - ci;
                o[j] = u - ci;
            }
            break;
        case LINATTN_MAP_TRIG:
            ctx->rexp[i] = (double)ci;
            sin_cos(o, h);
            break;
        default: /* custom exp */
            add_bias(p, o);
            ctx->rexp[i] = (double)max_of(o, m);
            break;
        }
    }
}

double XI(phi_pre)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   double *rexp)
{
    pre_ctx ctx = {x, rexp};
    project(plan, x, rows, out);
    over_chunks(plan, rows, out, pre_chunk, &ctx, NULL);
    /* NaN propagates into the maximum: a NaN key poisons the state as it
     * would without shifts. */
    double mx = -INFINITY;
    for (int64_t i = 0; i < rows; i++)
        mx = rexp[i] > mx || rexp[i] != rexp[i] ? rexp[i] : mx;
    return mx;
}

typedef struct {
    const double *rexp, *sh;
    double shift;
} post_ctx;

static void post_chunk(const X(plan) *p, const void *ctxp, int64_t lo,
                       int64_t hi, real *out)
{
    const post_ctx *ctx = ctxp;
    int64_t m = p->m;
    for (int64_t i = lo; i < hi; i++) {
        real *o = out + i * m;
        double sh = ctx->sh ? ctx->sh[i] : ctx->shift;
        if (p->map == LINATTN_MAP_TRIG)
            scale(o, m, (real)exp(ctx->rexp[i] - sh - p->log_norm));
        else
            exp_shifted(o, m, (real)(sh + p->log_norm));
    }
}

void XI(phi_post)(const X(plan) *plan, real *out, int64_t rows,
                  const double *rexp, const double *sh, double shift,
                  const XI(stats) *st)
{
    post_ctx ctx = {rexp, sh, shift};
    over_chunks(plan, rows, out, post_chunk, &ctx, st);
}
