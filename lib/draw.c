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
 * The QR is LAPACK's (dgeqrf, dorgqr) on column-major blocks: the
 * generator's numbers are laid out so that a column-major Q is the
 * row-major block of W, no transposed copy.  Which normal lands where:
 * doc/rng.md.
 */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include "draw.h"
#include "linattn.h"
#include "rng.h"
#include "validate.h"

/* The orthogonal blocks of W into w (rows x d, row major, unscaled). */
static int ortho_blocks(uint64_t seed, int64_t rows, int64_t d, double *w)
{
    double *g = linattn_i_alloc(d * d, sizeof *g);
    double *tau = linattn_i_alloc(d, sizeof *tau);
    double *sign = linattn_i_alloc(d, sizeof *sign);
    double *work = NULL, query = 0;
    lapack_int n = (lapack_int)d, lwork = -1;
    int status = LINATTN_ENOMEM;
    /* workspace sizes of both routines, asked for once */
    if (!g || !tau || !sign ||
        LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, n, n, g, n, tau, &query, -1))
        goto done;
    double need = query;
    if (LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, n, n, n, g, n, tau, &query, -1))
        goto done;
    need = query > need ? query : need;
    lwork = need > (double)d ? (lapack_int)need : n;
    work = linattn_i_alloc(lwork, sizeof *work);
    if (!work)
        goto done;
    for (int64_t b = 0; b * d < rows; b++) {
        int64_t take = rows - b * d < d ? rows - b * d : d;
        linattn_i_normals(seed, LINATTN_RNG_STREAM_GAUSS,
                          (uint64_t)b * (uint64_t)(d * d), d * d, g);
        /* Only a workspace allocation inside LAPACKE could fail here. */
        if (LAPACKE_dgeqrf_work(LAPACK_COL_MAJOR, n, n, g, n, tau, work, lwork))
            goto done;
        for (int64_t j = 0; j < d; j++)
            sign[j] = g[j + j * d] < 0 ? -1.0 : 1.0;
        if (LAPACKE_dorgqr_work(LAPACK_COL_MAJOR, n, n, n, g, n, tau, work,
                                lwork))
            goto done;
        for (int64_t j = 0; j < take; j++) {
            double *row = w + (b * d + j) * d;
            for (int64_t t = 0; t < d; t++)
                row[t] = sign[j] * g[t + j * d];
        }
    }
    status = 0;
done:
    free(g), free(tau), free(sign), free(work);
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
