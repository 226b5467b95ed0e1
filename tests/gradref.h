/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gradref.h -- the reference of test_grad: the gradients of linear
 * attention written from the quadratic formula in long double, by plain
 * loops, independent of the library's backward code (which never forms a
 * Jacobian nor the n x n scores):
 *
 *     A_ij = phi(q_i) . phi(k_j)  (j <= i when causal)
 *     den_i = sum_j A_ij + eps,  out_i = sum_j A_ij v_j / den_i
 *     dA_ij = G_i . (v_j - out_i) / den_i
 *     (LINATTN_DENOM_COUNT: den_i = the count of keys + eps, dA_ij =
 *     G_i . v_j / den_i)
 *     dphi(q_i) = sum_j dA_ij phi(k_j),  dphi(k_j) = sum_i dA_ij phi(q_i)
 *     dv_j = sum_i A_ij G_i / den_i,  dx = J(x)^T dphi(x)
 *     dW = sum over query and key rows of (Ju^T dphi) (s x)^T,  db = Ju^T dphi
 *
 * with each map's Jacobian J = dphi/dx (m x d) and Ju = dphi/du (m x rows
 * of W) formed entry by entry from its formula.  Include after refmaps.h.
 */
#ifndef LINATTN_GRADREF_H
#define LINATTN_GRADREF_H

/* Every map the gradient tests cover: the elementwise ones, then
 * refmaps.h's cases. */
#define NMAPS (3 + NCASES)

static inline mapcase map_case(int i)
{
    static const mapcase exact[] = {{LINATTN_MAP_IDENTITY, 0, "identity"},
                                    {LINATTN_MAP_ELU1, 0, "elu1"},
                                    {LINATTN_MAP_RELU, 0, "relu"}};
    return i < 3 ? exact[i] : cases[i - 3];
}

static inline int map_exact(const mapcase *c)
{
    return c->map <= LINATTN_MAP_RELU;
}

/* A plan for case c with options o (the identity and TRIG take the
 * signed normalizer policy instead of the default). */
static inline P(plan) *grad_plan(const mapcase *c, int64_t d, int64_t e,
                                 const linattn_opts *o)
{
    if (!map_exact(c))
        return plan_for(c, d, e, o);
    linattn_opts opts = *o;
    if (c->map == LINATTN_MAP_IDENTITY && opts.denom == LINATTN_DENOM_POSITIVE)
        opts.denom = LINATTN_DENOM_NONZERO;
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, c->map, d, e, &opts), 0);
    return p;
}

/* The batched gradient tests' plans (d = 4, e = 3, blocks and chunks of
 * the given rows): which 0 elu+1, 1 FAVOR+ (shifted), 2 Hedgehog (dW
 * and db). */
static inline P(plan) *grad_batch_plan(int which, int64_t block, int64_t chunk)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = block;
    o.chunk = chunk;
    mapcase c = which == 0 ? map_case(1) : which == 1 ? map_case(3)
                                                     : map_case(3 + NCASES - 1);
    return grad_plan(&c, 4, 3, &o);
}

static inline refmap grad_ref_of(const mapcase *c, P(plan) *p, int64_t d)
{
    if (!map_exact(c))
        return ref_of(c, p, default_scale(c->map, d));
    refmap r = {c->map, 0, d, d, 0, 1, NULL, NULL};
    return r;
}

/* phi(x), J = dphi/dx (m x d, row major) and Ju = dphi/du (m x rows). */
static inline void ref_jacobian(const refmap *r, const long double *x,
                                long double *phi, long double *jx,
                                long double *ju)
{
    int64_t d = r->d, m = r->m, h = r->rows;
    long double s = r->s, xs[64], u[512];
    for (int64_t i = 0; i < m * d; i++)
        jx[i] = 0;
    for (int64_t i = 0; i < m * h; i++)
        ju[i] = 0;
    if (r->map <= LINATTN_MAP_RELU) {
        for (int64_t t = 0; t < d; t++) {
            phi[t] = ref_phi(r->map, x[t]);
            long double slope = 1;
            if (r->map == LINATTN_MAP_ELU1)
                slope = x[t] > 0 ? 1 : expl(x[t]);
            else if (r->map == LINATTN_MAP_RELU)
                slope = x[t] > 0 ? 1 : 0;
            jx[t * d + t] = slope;
        }
        return;
    }
    ref_features(r, x, phi);
    for (int64_t c = 0; c < d; c++)
        xs[c] = s * x[c];
    for (int64_t j = 0; j < h; j++) {
        u[j] = r->b ? r->b[j] : 0;
        for (int64_t c = 0; c < d; c++)
            u[j] += r->w[j * d + c] * xs[c];
    }
    const long double *w = r->w;
    switch (r->map) {
    case LINATTN_MAP_FAVOR: /* phi_t = exp(u_t - |x~|^2/2) / sqrt m */
        for (int64_t t = 0; t < m; t++) {
            ju[t * h + t] = phi[t];
            for (int64_t c = 0; c < d; c++)
                jx[t * d + c] = s * phi[t] * (w[t * d + c] - xs[c]);
        }
        return;
    case LINATTN_MAP_FAVOR_HYP:
        for (int64_t t = 0; t < h; t++) {
            ju[t * h + t] = phi[t];
            ju[(h + t) * h + t] = -phi[h + t];
            for (int64_t c = 0; c < d; c++) {
                jx[t * d + c] = s * phi[t] * (w[t * d + c] - xs[c]);
                jx[(h + t) * d + c] = s * phi[h + t] * (-w[t * d + c] - xs[c]);
            }
        }
        return;
    case LINATTN_MAP_TRIG: /* sin, cos times exp(|x~|^2/2) / sqrt(m/2) */
        for (int64_t t = 0; t < h; t++) {
            ju[t * h + t] = phi[h + t];
            ju[(h + t) * h + t] = -phi[t];
            for (int64_t c = 0; c < d; c++) {
                jx[t * d + c] = s * (phi[h + t] * w[t * d + c] + phi[t] * xs[c]);
                jx[(h + t) * d + c] =
                    s * (-phi[t] * w[t * d + c] + phi[h + t] * xs[c]);
            }
        }
        return;
    case LINATTN_MAP_TAYLOR: {
        int64_t k = 1 + d;
        for (int64_t c = 0; c < d; c++)
            jx[(1 + c) * d + c] = s;
        for (int64_t a = 0; a < d; a++) {
            jx[k++ * d + a] = s * sqrtl(2) * xs[a];
            for (int64_t b = a + 1; b < d; b++, k++) {
                jx[k * d + a] = s * xs[b];
                jx[k * d + b] = s * xs[a];
            }
        }
        return;
    }
    default:
        break;
    }
    for (int64_t j = 0; j < m; j++)
        for (int64_t t = 0; t < h; t++) {
            long double v = 0;
            switch (r->act) {
            case LINATTN_ACT_EXP:
                v = j == t ? phi[j] : 0;
                break;
            case LINATTN_ACT_RELU:
                v = j == t && u[t] > 0 ? 1 : 0;
                break;
            case LINATTN_ACT_ELU1:
                v = j == t ? (u[t] > 0 ? 1 : expl(u[t])) : 0;
                break;
            default: /* softmax over s = [u, -u]: ds_t/du_t = 1, ds_{h+t} = -1 */
                v = phi[j] * ((j == t) - phi[t]) - phi[j] * ((j == h + t) - phi[h + t]);
            }
            ju[j * h + t] = v;
        }
    for (int64_t j = 0; j < m; j++)
        for (int64_t c = 0; c < d; c++) {
            long double v = 0;
            for (int64_t t = 0; t < h; t++)
                v += ju[j * h + t] * s * w[t * d + c];
            jx[j * d + c] = v;
        }
}

/* The reference's results: dq (nq x d), dk (nk x d), dv (nk x e), dw
 * (rows x d), db (rows), and the forward's out (nq x e), den (nq); row
 * major. */
typedef struct {
    long double *dq, *dk, *dv, *dw, *db, *out, *den;
} refgrad;

static inline void refgrad_free(refgrad *g)
{
    free(g->dq), free(g->dk), free(g->dv), free(g->dw), free(g->db);
    free(g->out), free(g->den);
}

/* Row by row of x: phi into f (n x m) when f is not NULL, and with dphi
 * (n x m) dx_i = J(x_i)^T dphi_i into dx (n x d) and the rows' dW, db
 * added to dw, db. */
static inline void ref_rows(const refmap *r, const tmat *x, long double *f,
                            const long double *dphi, long double *dx,
                            long double *dw, long double *db)
{
    int64_t d = r->d, m = r->m, h = r->rows;
    long double *phi = malloc((size_t)m * sizeof *phi);
    long double *jx = malloc((size_t)(m * d) * sizeof *jx);
    long double *ju = malloc((size_t)(m * (h ? h : 1)) * sizeof *ju);
    long double xr[64];
    for (int64_t i = 0; i < x->rows; i++) {
        for (int64_t c = 0; c < d; c++)
            xr[c] = *tmat_at(x, i, c);
        ref_jacobian(r, xr, f ? f + i * m : phi, jx, ju);
        if (!dphi)
            continue;
        const long double *a = dphi + i * m;
        for (int64_t c = 0; c < d; c++) {
            long double v = 0;
            for (int64_t t = 0; t < m; t++)
                v += jx[t * d + c] * a[t];
            dx[i * d + c] = v;
        }
        for (int64_t t = 0; t < h; t++) {
            long double du = 0;
            for (int64_t j = 0; j < m; j++)
                du += ju[j * h + t] * a[j];
            db[t] += du;
            for (int64_t c = 0; c < d; c++)
                dw[t * d + c] += du * r->s * xr[c];
        }
    }
    free(phi), free(jx), free(ju);
}

/* dx_i = J(x_i)^T dphi_i for the rows of x, and their dW, db. */
static inline void ref_back_rows(const refmap *r, const tmat *x,
                                 const long double *dphi, long double *dx,
                                 long double *dw, long double *db)
{
    ref_rows(r, x, NULL, dphi, dx, dw, db);
}

/* phi of every row of x (n x m), by the formula. */
static inline long double *ref_feature_rows(const refmap *r, const tmat *x)
{
    long double *f = malloc((size_t)(x->rows * r->m + 1) * sizeof *f);
    ref_rows(r, x, f, NULL, NULL, NULL, NULL);
    return f;
}

/* The whole reference for attention (causal: j <= i, nq = nk; count:
 * LINATTN_DENOM_COUNT, den_i = the keys row i sees + eps, which no input
 * moves: dA_ij = G_i . v_j / den_i). */
static inline refgrad ref_grad(const refmap *r, int causal, int count,
                               long double eps, const tmat *q, const tmat *k,
                               const tmat *v, const tmat *g)
{
    int64_t nq = q->rows, nk = k->rows, d = r->d, m = r->m, e = v->cols;
    int64_t h = r->rows;
    refgrad o;
    o.dq = calloc((size_t)(nq * d + 1), sizeof(long double));
    o.dk = calloc((size_t)(nk * d + 1), sizeof(long double));
    o.dv = calloc((size_t)(nk * e + 1), sizeof(long double));
    o.dw = calloc((size_t)(h * d + 1), sizeof(long double));
    o.db = calloc((size_t)(h + 1), sizeof(long double));
    o.out = calloc((size_t)(nq * e + 1), sizeof(long double));
    o.den = calloc((size_t)(nq + 1), sizeof(long double));
    long double *fq = ref_feature_rows(r, q), *fk = ref_feature_rows(r, k);
    long double *a = calloc((size_t)(nq * nk + 1), sizeof *a);
    long double *dfq = calloc((size_t)(nq * m + 1), sizeof *dfq);
    long double *dfk = calloc((size_t)(nk * m + 1), sizeof *dfk);
    for (int64_t i = 0; i < nq; i++) {
        int64_t seen = causal ? i + 1 : nk;
        long double den = eps;
        for (int64_t j = 0; j < seen; j++) {
            long double s = 0;
            for (int64_t t = 0; t < m; t++)
                s += fq[i * m + t] * fk[j * m + t];
            a[i * nk + j] = s;
            den += s;
            for (int64_t c = 0; c < e; c++)
                o.out[i * e + c] += s * *tmat_at(v, j, c);
        }
        if (count)
            den = seen + eps;
        o.den[i] = den;
        for (int64_t c = 0; c < e; c++)
            o.out[i * e + c] /= den;
        for (int64_t j = 0; j < seen; j++) {
            long double da = 0;
            for (int64_t c = 0; c < e; c++)
                da += *tmat_at(g, i, c) *
                      (*tmat_at(v, j, c) - (count ? 0 : o.out[i * e + c]));
            da /= den;
            for (int64_t t = 0; t < m; t++) {
                dfq[i * m + t] += da * fk[j * m + t];
                dfk[j * m + t] += da * fq[i * m + t];
            }
            for (int64_t c = 0; c < e; c++)
                o.dv[j * e + c] += a[i * nk + j] * *tmat_at(g, i, c) / den;
        }
    }
    ref_back_rows(r, q, dfq, o.dq, o.dw, o.db);
    ref_back_rows(r, k, dfk, o.dk, o.dw, o.db);
    free(fq), free(fk), free(a), free(dfq), free(dfk);
    return o;
}

/* max |x - ref| / max |ref| for n values (dw, db, den). */
static inline double rel_err_vec(const real *x, int64_t ldx_row, int64_t rows,
                                 int64_t cols, int layout,
                                 const long double *ref)
{
    long double num = 0, den = 0;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t c = 0; c < cols; c++) {
            real v = layout == COL ? x[i + c * ldx_row] : x[i * ldx_row + c];
            long double rr = ref[i * cols + c], diff = fabsl(v - rr);
            num = diff > num ? diff : num;
            den = fabsl(rr) > den ? fabsl(rr) : den;
        }
    return (double)(den > 0 ? num / den : num);
}

#endif
