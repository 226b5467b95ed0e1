/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * draw.c -- the random projection W (rows x d) of the random-feature maps,
 * always in double (float plans round it), from the generator of rng.c:
 *
 *   LINATTN_DRAW_ORTHO        block b of d rows = the columns of Q_b, where
 *                             G_b = Q_b R_b is the QR factorization of a
 *                             d x d Gaussian block and the columns of Q_b are
 *                             multiplied by sign(R_b(j, j)), which makes Q_b
 *                             Haar-distributed; row r then scaled by the
 *                             norm of an independent Gaussian d-vector
 *                             (chi(d)), so each row is marginally N(0, I)
 *                             and the estimator stays unbiased;
 *   LINATTN_DRAW_ORTHO_FIXED  the same blocks, rows scaled by sqrt(d);
 *   LINATTN_DRAW_IID          independent N(0, 1) entries.
 *
 * A last block of fewer than d rows takes the first columns of its Q.
 * The QR is a Householder QR of this file's (householder_q) on
 * column-major blocks, in fixed-order IEEE arithmetic so that W has the
 * same bits on every platform; the generator's numbers are laid out so
 * that a column-major Q is the row-major block of W.  Which normal lands
 * where, and the QR step by step: doc/rng.md.
 */
#include <math.h>
#include <stdlib.h>
#include "maps/draw.h"
#include "linattn.h"
#include "maps/rng.h"
#include "common/validate.h"

/* Q of the QR factorization G = Q R of the n x n column-major g (which is
 * overwritten), with the columns of Q multiplied by sign(R(j, j)), into the
 * column-major q.  Householder reflections H_k = I - 2 v_k v_k^T / v_k^T v_k
 * with v_k = x - alpha e_k, alpha = -sign(x_k) |x| for the column x below
 * row k; Q = H_0 H_1 ... H_{n-1} applied to the identity.  Every sum runs
 * over increasing row index, in plain IEEE double without contraction
 * (EXACT_FP_FLAGS): the same bits on every platform, which a BLAS-backed
 * LAPACK QR cannot promise (tests/test_maps compares with LAPACKE's QR).
 * v holds the reflectors (n x n), vv their squared norms, rd R's diagonal. */
static void householder_q(double *g, int64_t n, double *v, double *vv,
                          double *rd, double *q)
{
    for (int64_t k = 0; k < n; k++) {
        double *x = g + k * n, *vk = v + k * n, ss = 0, t = 0;
        for (int64_t i = k; i < n; i++)
            ss += x[i] * x[i];
        double alpha = x[k] < 0 ? sqrt(ss) : -sqrt(ss);
        for (int64_t i = 0; i < n; i++)
            vk[i] = i < k ? 0 : x[i];
        vk[k] -= alpha;
        for (int64_t i = k; i < n; i++)
            t += vk[i] * vk[i];
        vv[k] = t;
        rd[k] = alpha;
        for (int64_t j = k + 1; j < n && t > 0; j++) {
            double *gj = g + j * n, dot = 0;
            for (int64_t i = k; i < n; i++)
                dot += vk[i] * gj[i];
            double f = (dot + dot) / t;
            for (int64_t i = k; i < n; i++)
                gj[i] -= f * vk[i];
        }
    }
    for (int64_t i = 0; i < n * n; i++)
        q[i] = i % (n + 1) == 0;
    /* Columns j < k of H_{k+1} ... H_{n-1} I are still e_j: H_k leaves
     * them alone too. */
    for (int64_t k = n - 1; k >= 0; k--) {
        const double *vk = v + k * n;
        for (int64_t j = k; j < n && vv[k] > 0; j++) {
            double *qj = q + j * n, dot = 0;
            for (int64_t i = k; i < n; i++)
                dot += vk[i] * qj[i];
            double f = (dot + dot) / vv[k];
            for (int64_t i = k; i < n; i++)
                qj[i] -= f * vk[i];
        }
    }
    for (int64_t j = 0; j < n; j++)
        if (rd[j] < 0)
            for (int64_t i = 0; i < n; i++)
                q[i + j * n] = -q[i + j * n];
}

/* The orthogonal blocks of W into w (rows x d, row major, unscaled). */
static int ortho_blocks(uint64_t seed, int64_t rows, int64_t d, double *w)
{
    double *g = linattn_i_alloc(d * d, sizeof *g);
    double *v = linattn_i_alloc(d * d, sizeof *v);
    double *q = linattn_i_alloc(d * d, sizeof *q);
    double *vr = linattn_i_alloc(2 * d, sizeof *vr);
    int status = LINATTN_ENOMEM;
    if (g && v && q && vr) {
        for (int64_t b = 0; b * d < rows; b++) {
            int64_t take = rows - b * d < d ? rows - b * d : d;
            linattn_i_normals(seed, LINATTN_RNG_STREAM_GAUSS,
                              (uint64_t)b * (uint64_t)(d * d), d * d, g);
            householder_q(g, d, v, vr, vr + d, q);
            /* column j of the column-major Q is row b d + j of W */
            for (int64_t j = 0; j < take; j++)
                for (int64_t t = 0; t < d; t++)
                    w[(b * d + j) * d + t] = q[t + j * d];
        }
        status = 0;
    }
    free(g), free(v), free(q), free(vr);
    return status;
}

/* Row r times the norm of normals r d .. r d + d - 1 of the norm stream,
 * summed in that order (chi(d)), or times sqrt(d). */
static int scale_rows(int draw, uint64_t seed, int64_t rows, int64_t d,
                      double *w)
{
    double *v = linattn_i_alloc(d, sizeof *v);
    if (!v)
        return LINATTN_ENOMEM;
    for (int64_t r = 0; r < rows; r++) {
        double norm = sqrt((double)d);
        if (draw == LINATTN_DRAW_ORTHO) {
            double ss = 0;
            linattn_i_normals(seed, LINATTN_RNG_STREAM_NORMS,
                              (uint64_t)r * (uint64_t)d, d, v);
            for (int64_t t = 0; t < d; t++)
                ss += v[t] * v[t];
            norm = sqrt(ss);
        }
        for (int64_t t = 0; t < d; t++)
            w[r * d + t] *= norm;
    }
    free(v);
    return 0;
}

int linattn_i_draw(int draw, uint64_t seed, int64_t rows, int64_t d,
                   double *w)
{
    if (draw == LINATTN_DRAW_IID) {
        linattn_i_normals(seed, LINATTN_RNG_STREAM_GAUSS, 0, rows * d, w);
        return 0;
    }
    int status = ortho_blocks(seed, rows, d, w);
    return status ? status : scale_rows(draw, seed, rows, d, w);
}
