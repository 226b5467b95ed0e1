/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * approx_error.c -- how far a plan's kernelized attention is from exact
 * softmax attention on given inputs (linattn_d_approx_error): the measuring
 * tool of the approximation study (benchmarks/approx, doc/approximation.md).
 *
 * Both attentions are formed from score blocks of the same query rows, so
 * the output, attention-matrix and kernel errors come out of one pass.  The
 * work is quadratic by nature (the softmax reference is), and so is the
 * kernel side: A~ = phi(Q) phi(K)^T by blocks, as in linattn_d_naive.
 *
 * The inputs are copied into row-major workspace (K, V and phi(K) once, Q
 * per block), so that every GEMM here sees contiguous matrices whatever the
 * caller's layout and leading dimensions: the copies are O(n (d + m + e)),
 * small beside the O(nq nk (d + m + e)) work.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/validate.h"

/* Sums over the compared entries, in double whatever the precision. */
typedef struct {
    acc_t out_d2, out_ref2, out_max;
    acc_t attn_d2, attn_ref2;
    acc_t ker_d2, ker_ref2;
} sums;

enum { KC, VC, PHIK, QB, PHIQ, SC, KA, OE, OA, DEN, NBUF };

typedef struct {
    const X(plan) *plan;
    int64_t nk, rows_max;
    int causal;
    real scale;
    XI(view) q;
    real *buf[NBUF]; /* see alloc_ws for the shapes */
    int finite;      /* every input finite: 1, 0, or -1 not looked yet */
} job;

/* Nonzero when the inputs (Q, and the copies of K and V) are all finite. */
static int inputs_finite(job *jb, int64_t nq)
{
    const X(plan) *p = jb->plan;
    if (jb->finite < 0)
        jb->finite = XI(all_finite)(jb->q, nq, p->d) &&
                     XI(all_finite)((XI(view)){jb->buf[KC], p->d, 0}, jb->nk,
                                    p->d) &&
                     XI(all_finite)((XI(view)){jb->buf[VC], p->e, 0}, jb->nk,
                                    p->e);
    return jb->finite;
}

static void free_ws(real **buf)
{
    for (int i = 0; i < NBUF; i++)
        free(buf[i]);
}

/* K, V, phi(K): nk x d, e, m; per block: Q_b, phi(Q_b), the scaled scores
 * (then P), the kernel block (then Ah), both outputs, the normalizers.  All
 * row major with the natural leading dimension. */
static int alloc_ws(real **buf, const X(plan) *plan, int64_t nk, int64_t rows)
{
    const int64_t count[NBUF] = {nk * plan->d, nk * plan->e, nk * plan->m,
                                 rows * plan->d, rows * plan->m, rows * nk,
                                 rows * nk, rows * plan->e, rows * plan->e,
                                 rows};
    int ok = 1;
    for (int i = 0; i < NBUF; i++) {
        buf[i] = linattn_i_alloc(count[i], sizeof(real));
        ok = ok && buf[i];
    }
    if (!ok)
        free_ws(buf);
    return ok ? 0 : LINATTN_ENOMEM;
}

/* Kernel and softmax entries of row i over its keys [0, lim): the kernel
 * sums, then sc becomes the softmax row P and ka the normalized row Ah
 * (both zero beyond lim, so that the output GEMMs may run over all cols). */
static void compare_row(real *sc, real *ka, real den, int64_t lim,
                        int64_t cols, sums *t)
{
    acc_t mx = sc[0], wsum = 0;
    for (int64_t j = 0; j < lim; j++) {
        acc_t x = exp((acc_t)sc[j]);
        /* An overflowing kernel value counts as an infinite error rather
         * than as inf - inf. */
        acc_t dk = isinf(x) ? (acc_t)INFINITY : (acc_t)ka[j] - x;
        t->ker_d2 += dk * dk;
        t->ker_ref2 += x * x;
        mx = sc[j] > mx ? sc[j] : mx;
    }
    for (int64_t j = 0; j < lim; j++) {
        acc_t w = exp((acc_t)sc[j] - mx);
        wsum += w;
        sc[j] = (real)w;
    }
    for (int64_t j = 0; j < lim; j++) {
        real p = (real)(sc[j] / wsum);
        real ah = ka[j] / den;
        t->attn_d2 += ((acc_t)ah - p) * ((acc_t)ah - p);
        t->attn_ref2 += (acc_t)p * p;
        sc[j] = p;
        ka[j] = ah;
    }
    for (int64_t j = lim; j < cols; j++)
        sc[j] = ka[j] = 0;
}

/* Output sums of a block: oa against oe, rows x e. */
static void compare_outputs(const real *oa, const real *oe, int64_t count,
                            sums *t)
{
    for (int64_t i = 0; i < count; i++) {
        acc_t diff = fabs((acc_t)oa[i] - oe[i]);
        t->out_d2 += diff * diff;
        t->out_ref2 += (acc_t)oe[i] * oe[i];
        /* NaN sticks once it is in */
        if (!(diff <= t->out_max) && !isnan(t->out_max))
            t->out_max = diff;
    }
}

/* Query rows [r, r + rows) of nq: 0, LINATTN_ENOMEM, LINATTN_EDENOM, or
 * LINATTN_EOVERFLOW (an output of finite inputs beyond the range). */
static int run_block(job *jb, int64_t nq, int64_t r, int64_t rows, sums *t)
{
    const X(plan) *plan = jb->plan;
    real *const *b = jb->buf;
    int64_t d = plan->d, m = plan->m, e = plan->e;
    /* causal: the block's last row sees keys up to its own index */
    int64_t cols = jb->causal ? r + rows : jb->nk;
    XI(copy_rows)(XI(view_rows)(jb->q, r), 0, rows, d, b[QB]);
    int st = X(features)(plan, LINATTN_ROW_MAJOR, rows, b[QB], d, b[PHIQ], m);
    if (st)
        return st;
    for (int64_t i = 0; plan->qscale != 1 && i < rows * m; i++)
        b[PHIQ][i] *= plan->qscale; /* the queries' features, as read */
    XI(gemm)(0, 1, rows, cols, d, jb->scale, (XI(view)){b[QB], d, 0},
             (XI(view)){b[KC], d, 0}, 0, b[SC], cols);
    XI(gemm)(0, 1, rows, cols, m, 1, (XI(view)){b[PHIQ], m, 0},
             (XI(view)){b[PHIK], m, 0}, 0, b[KA], cols);
    for (int64_t i = 0; i < rows; i++) {
        int64_t lim = jb->causal ? r + i + 1 : cols;
        acc_t s = 0;
        for (int64_t j = 0; j < lim; j++)
            s += b[KA][i * cols + j];
        b[DEN][i] = (real)s;
    }
    if (XI(good_rows)(plan, b[DEN], rows, 1, jb->causal ? r + 1 : cols,
                      jb->causal, NULL) < rows)
        return LINATTN_EDENOM;
    for (int64_t i = 0; i < rows; i++)
        compare_row(b[SC] + i * cols, b[KA] + i * cols, b[DEN][i],
                    jb->causal ? r + i + 1 : cols, cols, t);
    XI(view) vv = {b[VC], e, 0};
    XI(gemm)(0, 0, rows, e, cols, 1, (XI(view)){b[SC], cols, 0}, vv, 0,
             b[OE], e);
    XI(gemm)(0, 0, rows, e, cols, 1, (XI(view)){b[KA], cols, 0}, vv, 0,
             b[OA], e);
    /* Both outputs are weighted means of V, but their sums may still pass
     * the range: reported like the attention calls report it. */
    if ((!XI(all_finite)((XI(view)){b[OA], e, 0}, rows, e) ||
         !XI(all_finite)((XI(view)){b[OE], e, 0}, rows, e)) &&
        inputs_finite(jb, nq))
        return LINATTN_EOVERFLOW;
    compare_outputs(b[OA], b[OE], rows * e, t);
    return 0;
}

/* sqrt(num / ref) with 0/0 = 0 and x/0 = +Inf; NaN propagates. */
static double rel_fro(acc_t num, acc_t ref)
{
    if (isnan(num) || num == 0)
        return (double)num;
    if (isinf(num) || ref == 0)
        return INFINITY;
    return sqrt((double)(num / ref));
}

/* linattn_d_approx_error: the keys and the query rows at least one, nk = nq
 * when causal (at nk's position); scale, causal and stats after the
 * matrices; the pairs counted in int64 and nk in BLAS. */
static const linattn_i_signature approx_sig = {
    .plan = 1, .layout = 2, .nq = 3, .nk = 4, .scale = 11, .causal = 12,
    .stats = 13, .nq_min = 1, .nk_min = 1,
    .flags = LINATTN_I_SCAN | LINATTN_I_PAIRS | LINATTN_I_NK_IS_NQ,
    .part = {[LINATTN_I_Q] = {5, LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_K] = {7, LINATTN_I_NK, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_V] = {9, LINATTN_I_NK, LINATTN_I_E, LINATTN_I_INPUT}}};

int X(approx_error)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                    const real *q, int64_t ldq, const real *k, int64_t ldk,
                    const real *v, int64_t ldv, double scale, int causal,
                    linattn_approx_stats *stats)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    pb.part[LINATTN_I_Q] = XI(part_single)(q, ldq);
    pb.part[LINATTN_I_K] = XI(part_single)(k, ldk);
    pb.part[LINATTN_I_V] = XI(part_single)(v, ldv);
    pb.scale = scale;
    pb.causal = causal;
    pb.stats = stats;
    int st = XI(problem_check)(&pb, &approx_sig, NULL);
    if (st)
        return st;
    int64_t rows_max = LINATTN_NAIVE_SCORES / nk;
    rows_max = rows_max < plan->block ? rows_max : plan->block;
    rows_max = rows_max < nq ? rows_max : nq;
    rows_max = rows_max < 1 ? 1 : rows_max;
    int cm = layout == LINATTN_COL_MAJOR;
    job jb = {plan, nk, rows_max, causal, (real)scale, {q, ldq, cm}, {NULL}, -1};
    if (alloc_ws(jb.buf, plan, nk, rows_max))
        return LINATTN_ENOMEM;
    XI(copy_rows)((XI(view)){k, ldk, cm}, 0, nk, plan->d, jb.buf[KC]);
    XI(copy_rows)((XI(view)){v, ldv, cm}, 0, nk, plan->e, jb.buf[VC]);
    st = X(features)(plan, LINATTN_ROW_MAJOR, nk, jb.buf[KC], plan->d,
                     jb.buf[PHIK], plan->m);
    sums t = {0, 0, 0, 0, 0, 0, 0};
    for (int64_t r = 0; !st && r < nq; r += rows_max)
        st = run_block(&jb, nq, r, nq - r < rows_max ? nq - r : rows_max, &t);
    free_ws(jb.buf);
    if (st)
        return st;
    /* n (n + 1) / 2 without overflowing n (n + 1) */
    int64_t pairs = !causal ? nq * nk
                    : nq % 2 ? nq * ((nq + 1) / 2) : (nq / 2) * (nq + 1);
    memset(stats, 0, sizeof *stats);
    stats->out_rel_fro = rel_fro(t.out_d2, t.out_ref2);
    stats->out_mse = (double)(t.out_d2 / ((acc_t)nq * plan->e));
    stats->out_max_abs = (double)t.out_max;
    stats->attn_rel_fro = rel_fro(t.attn_d2, t.attn_ref2);
    stats->kernel_mse = (double)(t.ker_d2 / (acc_t)pairs);
    stats->kernel_rel_fro = rel_fro(t.ker_d2, t.ker_ref2);
    stats->pairs = pairs;
    return 0;
}
