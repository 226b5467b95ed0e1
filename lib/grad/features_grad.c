/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * features_grad.c -- the feature maps' backward pass: dx = J_phi(x)^T a, and
 * for maps with a projection W also dL/dW and dL/db.
 *
 * Every map is reduced to the entrywise products p = a * f of adjoints and
 * features (grad.h: the stabilizing shifts cancel there), and for the maps
 * with a projection u = W x~ + b, x~ = s x, to
 *
 *     delta = dL/du (wrows per row),   rho: dL/dx~ = W^T delta + rho x~,
 *
 * so that a block needs one GEMM, dX = Delta (s W) + diag(rho) s^2 X, and
 * two more for the trained parameters, dW += s Delta^T X, db += Delta^T 1.
 *
 *   FAVOR      phi_t = exp(u_t - |x~|^2/2) / sqrt(m): delta = p,
 *              rho = -sum p
 *   FAVOR_HYP  phi = [exp(u), exp(-u)] exp(-|x~|^2/2) / sqrt(m):
 *              delta_t = p_t - p_{h+t}, rho = -sum p
 *   TRIG       phi = [sin u, cos u] exp(|x~|^2/2) / sqrt(m/2):
 *              delta_t = a_t f_{h+t} - a_{h+t} f_t, rho = +sum p
 *   custom     EXP delta = p; RELU delta = a [f > 0]; ELU1 delta = a
 *              min(f, 1) (elu's derivative is exp(u) = phi for u <= 0 and 1
 *              above, where phi > 1); HEDGEHOG (softmax over s = [u, -u])
 *              ds = p - f sum p, delta_t = ds_t - ds_{h+t}; rho = 0
 *   elementwise identity dx = a; elu+1 dx = a min(f, 1); ReLU dx = a
 *              [f > 0], so the derivative at 0 is 0 (doc/gradients.md)
 *   TAYLOR     phi = [1, x~, x~_a^2/sqrt 2, x~_a x~_b]: dL/dx~_c =
 *              a_{1+c} + sqrt 2 x~_c a_{cc} + sum_{b != c} a_{cb} x~_b
 *
 * NaN in f (a NaN input) gives NaN in dx, as the forward propagates it.
 */
#include <stdlib.h>
#include <string.h>
#include "grad/grad.h"
#include "attn/problem.h"
#include "kernels/kern_grad.h"
#include "common/simd.h"
#include "common/validate.h"

int XI(fgrad_alloc)(XI(fgrad_ws) *w, const X(plan) *plan, int64_t rows)
{
    int64_t d = plan->d;
    memset(w, 0, sizeof *w);
    w->y = linattn_i_alloc(rows * d, sizeof(real));
    w->xc = linattn_i_alloc(rows * d, sizeof(real));
    w->rho = linattn_i_alloc(rows, sizeof(real));
    w->ones = linattn_i_alloc(rows, sizeof(real));
    if (LINATTN_ACC_WIDER && plan->wrows)
        w->part = linattn_i_alloc(plan->wrows * d, sizeof(real));
    if (!w->y || !w->xc || !w->rho || !w->ones ||
        (LINATTN_ACC_WIDER && plan->wrows && !w->part)) {
        XI(fgrad_free)(w);
        return LINATTN_ENOMEM;
    }
    for (int64_t i = 0; i < rows; i++)
        w->ones[i] = 1;
    return 0;
}

void XI(fgrad_free)(XI(fgrad_ws) *w)
{
    free(w->y), free(w->xc), free(w->rho), free(w->part), free(w->ones);
    memset(w, 0, sizeof *w);
}

/* The derivative factor of elu + 1 and of ReLU, from the feature value. */
static inline real elu1_slope(real f)
{
    return f > 1 ? 1 : f; /* NaN stays NaN */
}

static inline real relu_pass(real a, real f)
{
    return f > 0 ? a : (f != f ? f : 0);
}

/* Elementwise maps: y = a times the derivative (y may be a); nonzero when
 * a value of y is not finite. */
static int elementwise_back(int map, real *y, const real *a, const real *f,
                            int64_t count)
{
    const XI(gkern) *gk = XI(gkern_now)();
    if (map == LINATTN_MAP_ELU1)
        return gk->elu1_slope(y, a, f, count);
    if (map == LINATTN_MAP_RELU)
        return gk->relu_slope(y, a, f, count);
    return gk->copy(y, a, count);
}

/* Taylor: dL/dx (s times dL/dx~) of row i into y (ld d). */
static void taylor_back(const X(plan) *p, const real *f, const real *a,
                        real *y)
{
    int64_t d = p->d;
    const real *xt = f + 1, *aq = a + 1 + d;
    const real r2 = (real)1.41421356237309504880, s = (real)p->input_scale;
    for (int64_t c = 0; c < d; c++)
        y[c] = a[1 + c];
    for (int64_t i = 0; i < d; i++) {
        real xi = xt[i], acc = r2 * xi * *aq++;
        for (int64_t b = i + 1; b < d; b++) {
            real ab = *aq++;
            acc += ab * xt[b];
            y[b] += ab * xi;
        }
        y[i] += acc;
    }
    for (int64_t c = 0; c < d; c++)
        y[c] *= s;
}

/* The projection maps: delta into the first wrows entries of row a (of m),
 * and rho. */
static real delta_row(const X(plan) *p, const real *f, real *a)
{
    int64_t m = p->m, h = p->wrows;
    real rho = 0;
    switch (p->map) {
    case LINATTN_MAP_FAVOR:
        for (int64_t t = 0; t < m; t++)
            rho -= a[t] *= f[t];
        return rho;
    case LINATTN_MAP_FAVOR_HYP:
        for (int64_t t = 0; t < h; t++) {
            real p0 = a[t] * f[t], p1 = a[h + t] * f[h + t];
            rho -= p0 + p1;
            a[t] = p0 - p1;
        }
        return rho;
    case LINATTN_MAP_TRIG:
        for (int64_t t = 0; t < h; t++) {
            real as = a[t], ac = a[h + t];
            rho += as * f[t] + ac * f[h + t];
            a[t] = as * f[h + t] - ac * f[t];
        }
        return rho;
    default:
        break;
    }
    switch (p->act) {
    case LINATTN_ACT_EXP:
        for (int64_t t = 0; t < m; t++)
            a[t] *= f[t];
        break;
    case LINATTN_ACT_RELU:
        for (int64_t t = 0; t < m; t++)
            a[t] = relu_pass(a[t], f[t]);
        break;
    case LINATTN_ACT_ELU1:
        for (int64_t t = 0; t < m; t++)
            a[t] *= elu1_slope(f[t]);
        break;
    default: { /* Hedgehog: the softmax's Jacobian, then s = [u, -u] */
        acc_t sum = 0;
        for (int64_t t = 0; t < m; t++)
            sum += a[t] *= f[t];
        real sp = (real)sum;
        for (int64_t t = 0; t < h; t++)
            a[t] = (a[t] - f[t] * sp) - (a[h + t] - f[h + t] * sp);
        break;
    }
    }
    return 0;
}

/* dW += s Delta^T X and db += Delta^T 1 for a block. */
static void param_grads(const X(plan) *p, XI(view) x, int64_t rows,
                        const real *a, XI(fgrad_ws) *w, const XI(pgrad) *pg)
{
    int64_t m = p->m, d = p->d, h = p->wrows;
    if (pg->dw) {
        XI(view) xv = XI(fit_view)(x, rows, d, w->xc);
        XI(view) dv = {a, m, 0};
        real s = (real)p->input_scale;
#if LINATTN_ACC_WIDER
        XI(gemm)(1, 0, h, d, rows, s, dv, xv, 0, w->part, d);
        for (int64_t i = 0; i < h * d; i++)
            pg->dw[i] += w->part[i];
#else
        XI(gemm)(1, 0, h, d, rows, s, dv, xv, 1, pg->dw, d);
#endif
    }
    for (int64_t i = 0; pg->db && i < rows; i++)
        for (int64_t t = 0; t < h; t++)
            pg->db[t] += a[i * m + t];
}

/* The overflow check is made in the passes that write dx (the slopes'
 * kernels, put_rows, the norm terms' loop, the micro-kernel's stores):
 * a pass of its own over each block cost 5% of the non-causal backward
 * (the blocks of dq and dk are not all in cache any more by then). */
int XI(phi_backward)(const X(plan) *plan, XI(view) x, int64_t rows,
                     const real *f, real *a, int cm, real *dx, int64_t lddx,
                     XI(fgrad_ws) *w, const XI(pgrad) *pg)
{
    int64_t m = plan->m, d = plan->d, h = plan->wrows;
    int bad = 0;
    if (rows == 0)
        return 0;
    if (XI(map_is_elementwise)(plan)) {
        /* row major: straight into the caller's rows */
        if (!cm && lddx == d)
            bad = elementwise_back(plan->map, dx, a, f, rows * m);
        for (int64_t i = 0; !cm && lddx != d && i < rows; i++)
            bad |= elementwise_back(plan->map, dx + i * lddx, a + i * m,
                                    f + i * m, m);
        if (cm) {
            elementwise_back(plan->map, a, a, f, rows * m);
            bad = XI(put_rows)(dx, cm, lddx, a, 0, m, rows, d, NULL);
        }
        return bad;
    }
    if (plan->map == LINATTN_MAP_TAYLOR) {
        for (int64_t i = 0; i < rows; i++)
            taylor_back(plan, f + i * m, a + i * m, w->y + i * d);
        return XI(put_rows)(dx, cm, lddx, w->y, 0, d, rows, d, NULL);
    }
    for (int64_t i = 0; i < rows; i++)
        w->rho[i] = delta_row(plan, f + i * m, a + i * m);
    /* dX = Delta (s W), then the norm terms rho_i s^2 x_i */
    XI(view) av = {a, m, 0}, wv = {plan->ws, d, 0};
    if (plan->map == LINATTN_MAP_CUSTOM) {
        bad = XI(gemm_to_checked)(rows, d, h, av, wv, cm, dx, lddx, w->y,
                                  w->ones);
    } else {
        XI(gemm_to)(0, 0, rows, d, h, av, wv, cm, dx, lddx, w->y);
        real s2 = 2 * plan->half_s2;
        real_bits seen = 0;
        for (int64_t i = 0; i < rows; i++) {
            real c = w->rho[i] * s2;
            for (int64_t t = 0; t < d; t++) {
                int64_t at_x = x.colmajor ? i + t * x.ld : i * x.ld + t;
                int64_t at_d = cm ? i + t * lddx : i * lddx + t;
                real y = dx[at_d] + c * x.p[at_x];
                dx[at_d] = y;
                seen |= linattn_i_zero_bits(y);
            }
        }
        bad = (seen & REAL_EXP_BITS) != 0;
    }
    if (pg)
        param_grads(plan, x, rows, a, w, pg);
    return bad;
}

/* ---- the public call ---- */

/* linattn_d_features_backward: x (n x d) and dphi (n x m) in, dx out; dW
 * and db (optional) against the map, after the others. */
static const linattn_i_signature features_backward_sig = {
    .plan = 1, .layout = 2, .nq = 3,
    .part = {[LINATTN_I_Q] = {4, LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_G] = {6, LINATTN_I_NQ, LINATTN_I_M, LINATTN_I_INPUT},
             [LINATTN_I_DQ] = {8, LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_OUTPUT},
             LINATTN_I_PARAM_GRADS(10)}};

int X(features_backward)(const X(plan) *plan, int layout, int64_t n,
                         const real *x, int64_t ldx, const real *dphi,
                         int64_t lddphi, real *dx, int64_t lddx, real *dw,
                         int64_t lddw, real *db)
{
    XI(problem) pb = XI(problem_init)(plan, layout, n, 0);
    pb.part[LINATTN_I_Q] = XI(part_single)(x, ldx);
    pb.part[LINATTN_I_G] = XI(part_single)(dphi, lddphi);
    pb.part[LINATTN_I_DQ] = XI(part_single)(dx, lddx);
    pb.part[LINATTN_I_DW] = XI(part_single)(dw, lddw);
    pb.part[LINATTN_I_DB] = XI(part_single)(db, 1);
    int st = XI(problem_check)(&pb, &features_backward_sig, NULL);
    if (st)
        return st;
    int64_t block = XI(block_rows)(plan), m = plan->m;
    int64_t rows_max = n < block ? (n > 0 ? n : 1) : block;
    real *f = linattn_i_alloc(rows_max * m, sizeof(real));
    real *a = linattn_i_alloc(rows_max * m, sizeof(real));
    double *rexp = linattn_i_alloc(rows_max, sizeof(double));
    XI(fgrad_ws) w = {NULL, NULL, NULL, NULL, NULL};
    XI(pgrad) pg = {NULL, NULL};
    int bad = !f || !a || !rexp || XI(fgrad_alloc)(&w, plan, rows_max) ||
              XI(pgrad_open)(&pg, plan, dw != NULL, db != NULL);
    if (bad) {
        XI(fgrad_free)(&w);
        free(f), free(a), free(rexp);
        return LINATTN_ENOMEM;
    }
    int cm = layout == LINATTN_COL_MAJOR, nonfinite = 0;
    XI(view) xv = {x, ldx, cm}, av = {dphi, lddphi, cm};
    for (int64_t r = 0; r < n; r += block) {
        int64_t rows = n - r < block ? n - r : block;
        XI(view) xb = XI(view_rows)(xv, r);
        XI(phi_plain)(plan, xb, rows, f, rexp); /* as features() gives it */
        XI(copy_rows)(XI(view_rows)(av, r), 0, rows, m, a);
        nonfinite |= XI(phi_backward)(plan, xb, rows, f, a, cm,
                                      cm ? dx + r : dx + r * lddx, lddx, &w,
                                      &pg);
    }
    /* finite x and dphi, a gradient beyond the range: dw, db not written */
    st = 0;
    if ((nonfinite || !XI(pgrad_finite)(plan, &pg)) &&
        XI(all_finite)(xv, n, plan->d) && XI(all_finite)(av, n, m))
        st = LINATTN_EOVERFLOW;
    if (!st)
        XI(pgrad_write)(plan, &pg, layout, dw, lddw, db);
    XI(fgrad_free)(&w);
    XI(pgrad_free)(&pg, 1);
    free(f), free(a), free(rexp);
    return st;
}
