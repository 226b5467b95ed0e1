/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * features.c -- the feature maps phi applied to row blocks.
 *
 * Every map writes phi of a block into a row-major buffer that GEMM then
 * reads from cache; the identity map skips the copy (callers ask
 * XI(map_is_identity) and hand the caller's matrix to BLAS).  The
 * elementwise loops are written branch-free so that they vectorize.
 */
#include <stdlib.h>
#include <string.h>
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/simd.h"
#include "common/threads.h"
#include "common/validate.h"
#include "kernels/kern.h"

int XI(map_is_identity)(const X(plan) *plan)
{
    return plan->map == LINATTN_MAP_IDENTITY;
}

int XI(map_is_elementwise)(const X(plan) *plan)
{
    return plan->map == LINATTN_MAP_IDENTITY || plan->map == LINATTN_MAP_ELU1 ||
           plan->map == LINATTN_MAP_RELU;
}

/* Elementwise maps, out of place (y may equal x); the exponentials run
 * in the kernels of the CPU's code path (kern.h). */
static void elu1_map(real *y, const real *x, int64_t count)
{
    XI(kern_now)()->elu1(y, x, count);
}

static void relu_map(real *y, const real *x, int64_t count)
{
    LINATTN_SIMD
    for (int64_t i = 0; i < count; i++)
        y[i] = x[i] < 0 ? 0 : x[i]; /* NaN stays NaN */
}

static void copy_map(real *y, const real *x, int64_t count)
{
    if (y != x)
        memcpy(y, x, (size_t)count * sizeof(real));
}

void XI(exp_array)(real *y, const real *x, int64_t count)
{
    XI(kern_now)()->exp(y, x, count);
}

void XI(exp_shift_array)(real *y, const real *x, int64_t count, real c)
{
    XI(kern_now)()->exp_shift(y, x, count, c);
}

void XI(elu1_array)(real *y, const real *x, int64_t count)
{
    elu1_map(y, x, count);
}

typedef void (*map_fn)(real *, const real *, int64_t);

static map_fn map_of(int map)
{
    switch (map) {
    case LINATTN_MAP_ELU1:
        return elu1_map;
    case LINATTN_MAP_RELU:
        return relu_map;
    default:
        return copy_map;
    }
}

void XI(copy_rows)(XI(view) x, int64_t lo, int64_t hi, int64_t cols,
                   real *out)
{
    if (!x.colmajor) {
        for (int64_t i = lo; i < hi; i++)
            memcpy(out + i * cols, x.p + i * x.ld, (size_t)cols * sizeof(real));
        return;
    }
    /* Column major: read down the columns, write rows of the block (in
     * cache). */
    for (int64_t j = 0; j < cols; j++) {
        const real *col = x.p + j * x.ld;
        for (int64_t i = lo; i < hi; i++)
            out[i * cols + j] = col[i];
    }
}

/* phi of rows [lo, hi) of x into the same rows of out (ld m = d). */
static void phi_range(map_fn f, XI(view) x, int64_t d, int64_t lo, int64_t hi,
                      real *out)
{
    if (!x.colmajor) {
        /* Read each input row once and write its features: no copy. */
        if (x.ld == d)
            f(out + lo * d, x.p + lo * d, (hi - lo) * d);
        else
            for (int64_t i = lo; i < hi; i++)
                f(out + i * d, x.p + i * x.ld, d);
        return;
    }
    /* Column major: gather the rows, then map in place; the block is in
     * cache for the second pass. */
    XI(copy_rows)(x, lo, hi, d, out);
    f(out + lo * d, out + lo * d, (hi - lo) * d);
}

void XI(stats_range)(XI(view) f, int64_t m, int64_t lo, int64_t hi,
                     const XI(stats) *st, acc_t *part)
{
    if (st->den && f.colmajor) {
        for (int64_t i = lo; i < hi; i++)
            st->den[i] = 0;
        for (int64_t j = 0; j < m; j++) {
            const real *col = f.p + j * f.ld;
            real zj = st->z[j];
            LINATTN_SIMD
            for (int64_t i = lo; i < hi; i++)
                st->den[i] += col[i] * zj;
        }
    } else if (st->den) {
        XI(kern_now)()->row_stats(f.p + lo * f.ld, f.ld, hi - lo, m, st->z,
                                  st->den + lo, NULL);
    }
    if (part && f.colmajor) {
        for (int64_t j = 0; j < m; j++) {
            const real *col = f.p + j * f.ld;
            acc_t acc = 0;
            LINATTN_SIMD_SUM
            for (int64_t i = lo; i < hi; i++)
                acc += col[i];
            part[j] = acc;
        }
    } else if (part) {
        XI(kern_now)()->row_stats(f.p + lo * f.ld, f.ld, hi - lo, m, NULL,
                                  NULL, part);
    }
}

/* One chunk of rows: map them (unless the map is the identity and out is
 * NULL), then take their statistics while they are in cache. */
static void chunk_rows(map_fn f, XI(view) x, int64_t d, int64_t lo,
                       int64_t hi, real *out, const XI(stats) *st,
                       acc_t *part)
{
    XI(view) fv = x;
    if (out) {
        phi_range(f, x, d, lo, hi, out);
        fv = (XI(view)){out, d, 0};
    }
    if (st)
        XI(stats_range)(fv, d, lo, hi, st, part);
}

/* Chunk c of rows [0, rows): rows [c C, min((c + 1) C, rows)). */
static void run_chunk(XI(chunk_fn) f, const void *ctx, int64_t rows,
                      int64_t c, int64_t width, acc_t *partial)
{
    int64_t lo = c * LINATTN_ROWS_PER_TASK;
    int64_t hi = lo + LINATTN_ROWS_PER_TASK < rows ? lo + LINATTN_ROWS_PER_TASK
                                                   : rows;
    f(ctx, lo, hi, partial ? partial + c * width : NULL);
}

void XI(over_chunks)(int64_t rows, int64_t width, XI(chunk_fn) f,
                    const void *ctx, const XI(stats) *st)
{
    int64_t nchunks =
        (rows + LINATTN_ROWS_PER_TASK - 1) / LINATTN_ROWS_PER_TASK;
    acc_t *partial = st && st->colsum ? st->partial : NULL;
    /* Fixed chunks, whatever the thread count, and their column sums added
     * in chunk order: the results do not depend on OMP_NUM_THREADS.  The
     * parallel region is entered only when it splits: libgomp sets up a
     * team even for an if(0) region, which one-token calls would pay on
     * every token. */
    if (nchunks > 1 && rows * width >= LINATTN_PAR_MIN && linattn_i_may_thread()) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int64_t c = 0; c < nchunks; c++)
            run_chunk(f, ctx, rows, c, width, partial);
    } else {
        for (int64_t c = 0; c < nchunks; c++)
            run_chunk(f, ctx, rows, c, width, partial);
    }
    for (int64_t c = 0; partial && c < nchunks; c++)
        for (int64_t j = 0; j < width; j++)
            st->colsum[j] += partial[c * width + j];
}

typedef struct {
    map_fn f;
    XI(view) x;
    int64_t d;
    real *out;
    const XI(stats) *st;
} phi_ctx;

static void phi_chunk(const void *ctx, int64_t lo, int64_t hi, acc_t *part)
{
    const phi_ctx *c = ctx;
    chunk_rows(c->f, c->x, c->d, lo, hi, c->out, c->st, part);
}

int64_t XI(stats_partial_len)(const X(plan) *plan, int64_t rows)
{
    return (rows + LINATTN_ROWS_PER_TASK - 1) / LINATTN_ROWS_PER_TASK *
           plan->m;
}

void XI(phi_rows)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                  const XI(stats) *st)
{
    if (!XI(map_is_elementwise)(plan)) {
        XI(kmap_rows)(plan, x, rows, out, st);
        return;
    }
    phi_ctx ctx = {map_of(plan->map), x, plan->d, out, st};
    XI(over_chunks)(rows, plan->d, phi_chunk, &ctx, st);
}

int XI(query_is_raw)(const X(plan) *plan)
{
    return XI(map_is_identity)(plan) && plan->qscale == 1;
}

void XI(phi_query)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   const XI(stats) *st)
{
    XI(phi_rows)(plan, x, rows, out, st);
    real s = plan->qscale;
    if (s == 1)
        return;
    /* (phi . z is linear in phi: scaled after, as the features are) */
    for (int64_t i = 0; out && i < rows * plan->m; i++)
        out[i] *= s;
    for (int64_t i = 0; st && st->den && i < rows; i++)
        st->den[i] *= s;
}

int XI(all_finite)(XI(view) x, int64_t rows, int64_t cols)
{
    if (rows == 0 || cols == 0)
        return 1;
    int64_t outer = x.colmajor ? cols : rows, inner = x.colmajor ? rows : cols;
    for (int64_t o = 0; o < outer; o++) {
        const real *line = x.p + o * x.ld;
        /* v - v is 0 for finite v and NaN for NaN and Inf. */
        real acc = 0;
        LINATTN_SIMD_SUM
        for (int64_t i = 0; i < inner; i++)
            acc += line[i] - line[i];
        if (acc != 0)
            return 0;
    }
    return 1;
}

void XI(exp_inplace)(real *x, int64_t count)
{
    int64_t step = LINATTN_ROWS_PER_TASK * 64;
    int64_t nchunks = (count + step - 1) / step;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) if (count >= LINATTN_PAR_MIN && linattn_i_may_thread())
#endif
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t lo = c * step, hi = lo + step < count ? lo + step : count;
        XI(exp_array)(x + lo, x + lo, hi - lo);
    }
}

void XI(phi_plain)(const X(plan) *plan, XI(view) x, int64_t rows, real *out,
                   double *rexp)
{
    if (plan->shifted) { /* shift 0 */
        XI(phi_pre)(plan, x, rows, out, rexp);
        XI(phi_post)(plan, out, rows, rexp, NULL, 0, NULL);
    } else {
        XI(phi_rows)(plan, x, rows, out, NULL);
    }
}

/* linattn_d_features: x (n x d) in, phi (n x m) out; no finiteness scan
 * (the features of NaN are NaN). */
static const linattn_i_signature features_sig = {
    .plan = 1, .layout = 2, .nq = 3, .flags = LINATTN_I_DECAY, /* the map's */
    .part = {[LINATTN_I_Q] = {4, LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_OUT] = {6, LINATTN_I_NQ, LINATTN_I_M,
                                LINATTN_I_OUTPUT}}};

int X(features)(const X(plan) *plan, int layout, int64_t n, const real *x,
                int64_t ldx, real *phi, int64_t ldphi)
{
    XI(problem) pb = XI(problem_init)(plan, layout, n, 0);
    pb.part[LINATTN_I_Q] = XI(part_single)(x, ldx);
    pb.part[LINATTN_I_OUT] = XI(part_single)(phi, ldphi);
    int st = XI(problem_check)(&pb, &features_sig, NULL);
    if (st || n == 0)
        return st;
    int64_t block = XI(block_rows)(plan), m = plan->m;
    real *buf = linattn_i_alloc(block * m, sizeof(real));
    double *rexp = plan->shifted ? linattn_i_alloc(block, sizeof(double)) : NULL;
    if (!buf || (plan->shifted && !rexp)) {
        free(buf);
        free(rexp);
        return LINATTN_ENOMEM;
    }
    XI(view) xv = {x, ldx, layout == LINATTN_COL_MAJOR};
    for (int64_t r = 0; r < n; r += block) {
        int64_t rows = n - r < block ? n - r : block;
        XI(phi_plain)(plan, XI(view_rows)(xv, r), rows, buf, rexp);
        int cm = layout == LINATTN_COL_MAJOR;
        XI(put_rows)(cm ? phi + r : phi + r * ldphi, cm, ldphi, buf, 0, m,
                     rows, m, NULL);
    }
    free(buf);
    free(rexp);
    return 0;
}
