/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attention_grad.c -- gradients of non-causal linear attention, and the
 * forward call that hands back the normalizers they need.
 *
 * With [g h]_i = [G_i / den_i, -(G_i . out_i) / den_i] (the adjoints of
 * num_i and den_i) and [S z] the state of all keys:
 *
 *     dphi(Q) = [g h] [S z]^T         d[S z] = phi(Q)^T [g h]
 *     dphi(K) = [V 1] d[S z]^T        dV = phi(K) dS
 *
 * then the feature maps' Jacobians (grad/features_grad.c).  Three passes of
 * row blocks, each a GEMM or two per block, never a copy of phi for all rows:
 *
 *   1. the state [S z] over the keys (the forward's own update);
 *   2. over the queries: phi(Q_b), [g h]_b, d[S z] += phi(Q_b)^T [g h]_b,
 *      dphi(Q_b) = [g h]_b [S z]^T, then dQ_b;
 *   3. over the keys: phi(K_b), dphi(K_b) = V_b dS^T + 1 dz^T, dV_b =
 *      phi(K_b) dS, then dK_b.
 *
 * The keys' features are computed twice (passes 1 and 3): keeping them
 * would cost n m memory.  Saved from the forward: out and den (n
 * numbers), which give [g h] without recomputing num.  Shifted maps: the
 * queries' features carry exp(-c_i), the keys' exp(-C) with C the state's
 * shift, and den (as the forward wrote it) both factors: g and h then
 * carry exp(c_i + C), d[S z] exp(C), and the adjoints of the features are
 * those of the scaled features (grad.h), so nothing overflows and the
 * shifts cancel.  Rows split over threads as in the forward; partial
 * d[S z], dW and db add in thread order.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "grad/grad.h"
#include "attn/problem.h"
#include "kernels/kern.h"
#include "common/simd.h"
#include "common/threads.h"
#include "common/validate.h"

/* One thread's workspace for blocks of up to rows rows. */
typedef struct {
    real *f, *a, *gh, *vc, *y;
    real *kz; /* a block's keys with the rows of weight 0 zeroed */
    double *rexp;
    XI(fgrad_ws) fw;
    XI(accum) ds; /* this thread's part of d[S z] */
} bwd_ws;

static void free_bwd_ws(bwd_ws *w)
{
    free(w->f), free(w->a), free(w->gh), free(w->vc), free(w->y);
    free(w->kz), free(w->rexp);
    XI(fgrad_free)(&w->fw);
    XI(accum_free)(&w->ds);
}

static int alloc_bwd_ws(bwd_ws *w, const X(plan) *plan, int64_t rows,
                        int weighted)
{
    int64_t m = plan->m, e = plan->e;
    memset(w, 0, sizeof *w);
    w->f = linattn_i_alloc(rows * m, sizeof(real));
    w->a = linattn_i_alloc(rows * m, sizeof(real));
    w->gh = linattn_i_alloc(rows * (e + 1), sizeof(real));
    w->vc = linattn_i_alloc(rows * e, sizeof(real));
    w->y = linattn_i_alloc(rows * e, sizeof(real));
    w->rexp = linattn_i_alloc(rows, sizeof(double));
    w->kz = weighted ? linattn_i_alloc(rows * plan->d, sizeof(real)) : NULL;
    int bad = !w->f || !w->a || !w->gh || !w->vc || !w->y || !w->rexp ||
              (weighted && !w->kz);
    bad = bad || XI(fgrad_alloc)(&w->fw, plan, rows);
    bad = bad || XI(accum_alloc)(&w->ds, m * (e + 1));
    if (bad) {
        free_bwd_ws(w);
        return LINATTN_ENOMEM;
    }
    return 0;
}

typedef struct {
    const XI(problem) *pb;
    bwd_ws *ws;
    XI(pgrad) *pg; /* per thread (or one, the caller's) */
    const real *st;  /* [S z]^T, (e + 1) x m: the products below then   */
    const real *dsz; /* take their right operands untransposed (the    */
    const real *dst; /* kernels' micro-kernel); d[S z] and its transpose */
    double shift;    /* the keys' shift C */
} bwd_job;

/* Pass 2 on query rows [lo, hi); lo when a value written to dq is not
 * finite, else INT64_MAX. */
static int64_t query_pass(void *ctx, int t, int64_t lo, int64_t hi)
{
    bwd_job *j = ctx;
    const XI(problem) *pb = j->pb;
    const X(plan) *plan = pb->plan;
    bwd_ws *w = &j->ws[t];
    int64_t m = plan->m, e = plan->e, block = XI(block_rows)(plan);
    int64_t lddq = pb->part[LINATTN_I_DQ].s.ld;
    int cm = pb->layout == LINATTN_COL_MAJOR, bad = 0;
    for (int64_t r = lo; r < hi; r += block) {
        int64_t rows = hi - r < block ? hi - r : block;
        XI(view) qb = XI(view_rows)(XI(part_view)(pb, LINATTN_I_Q), r);
        XI(phi_rows)(plan, qb, rows, w->f, NULL);
        XI(gh_rows)(plan, XI(view_rows)(XI(part_view)(pb, LINATTN_I_G), r),
                    XI(view_rows)(XI(part_view)(pb, LINATTN_I_OUT), r),
                    pb->part[LINATTN_I_DEN].p + r, rows, w->gh);
        XI(view) fv = {w->f, m, 0}, ghv = {w->gh, e + 1, 0};
        XI(accum_gemm)(&w->ds, 1, 0, m, e + 1, rows, fv, ghv);
        XI(gemm)(0, 0, rows, m, e + 1, 1, ghv, (XI(view)){j->st, m, 0}, 0,
                 w->a, m);
        bad |= XI(phi_backward)(plan, qb, rows, w->f, w->a, cm,
                                XI(part_row)(pb, LINATTN_I_DQ, r), lddq,
                                &w->fw, &j->pg[t]);
    }
    return bad ? lo : INT64_MAX;
}

/* Pass 3 on key rows [lo, hi); lo when a value written to dk, dv or
 * dweights is not finite, else INT64_MAX.  Key weights w_j: the unweighted
 * adjoint of phi(k_j) is a_j = dS v_j + dz, so dweights_j = phi(k_j) . a_j,
 * dphi(k_j) = w_j a_j and dv_j = w_j dS^T phi(k_j); a block with weights 0
 * is read through copies whose rows of weight 0 are zeros (those keys'
 * gradients are 0). */
static int64_t key_pass(void *ctx, int t, int64_t lo, int64_t hi)
{
    bwd_job *j = ctx;
    const XI(problem) *pb = j->pb;
    const X(plan) *plan = pb->plan;
    bwd_ws *w = &j->ws[t];
    int64_t m = plan->m, d = plan->d, e = plan->e, block = XI(block_rows)(plan);
    int64_t lddk = pb->part[LINATTN_I_DK].s.ld;
    int64_t lddv = pb->part[LINATTN_I_DV].s.ld;
    const real *kw = pb->part[LINATTN_I_KW].p;
    real *dkw = XI(part_out)(pb, LINATTN_I_DKW);
    int cm = pb->layout == LINATTN_COL_MAJOR, bad = 0;
    XI(view) ds = {j->dsz, e + 1, 0}, fv = {w->f, m, 0};
    for (int64_t r = lo; r < hi; r += block) {
        int64_t rows = hi - r < block ? hi - r : block;
        const real *wr = kw ? kw + r : NULL;
        int dropped = 0;
        for (int64_t i = 0; wr && i < rows; i++)
            dropped |= wr[i] == 0;
        XI(view) kb = XI(view_rows)(XI(part_view)(pb, LINATTN_I_K), r);
        XI(view) vr = XI(view_rows)(XI(part_view)(pb, LINATTN_I_V), r);
        if (dropped)
            kb = XI(zero_dropped)(kb, rows, d, wr, w->kz);
        if (plan->shifted) { /* at the state's shift, as the forward */
            XI(phi_pre)(plan, kb, rows, w->f, w->rexp);
            XI(phi_post)(plan, w->f, rows, w->rexp, NULL, j->shift, NULL);
        } else {
            XI(phi_rows)(plan, kb, rows, w->f, NULL);
        }
        XI(view) vb = dropped ? XI(zero_dropped)(vr, rows, e, wr, w->vc)
                              : XI(fit_view)(vr, rows, e, w->vc);
        /* dphi(K_b) = V_b dS^T + 1 dz^T */
        XI(gemm)(0, 0, rows, m, e, 1, vb, (XI(view)){j->dst, m, 0}, 0, w->a,
                 m);
        const real *dz = j->dst + e * m;
        for (int64_t i = 0; i < rows; i++) {
            real *ai = w->a + i * m, *fi = w->f + i * m;
            LINATTN_SIMD
            for (int64_t c = 0; c < m; c++)
                ai[c] += dz[c];
            if (dkw) {
                real dot = 0;
                for (int64_t c = 0; c < m; c++)
                    dot += fi[c] * ai[c];
                dkw[r + i] = wr && wr[i] == 0 ? 0 : dot;
                bad |= LINATTN_NOT_FINITE(dkw[r + i]);
            }
            if (wr) {
                real wi = wr[i];
                LINATTN_SIMD
                for (int64_t c = 0; c < m; c++)
                    ai[c] *= wi;
            }
        }
        bad |= XI(phi_backward)(plan, kb, rows, w->f, w->a, cm,
                                XI(part_row)(pb, LINATTN_I_DK, r), lddk,
                                &w->fw, &j->pg[t]);
        for (int64_t i = 0; wr && i < rows; i++) { /* dV = diag(w) phi dS */
            real *fi = w->f + i * m, wi = wr[i];
            LINATTN_SIMD
            for (int64_t c = 0; c < m; c++)
                fi[c] *= wi;
        }
        bad |= XI(gemm_to_checked)(rows, e, m, fv, ds, cm,
                                   XI(part_row)(pb, LINATTN_I_DV, r), lddv,
                                   w->y, w->fw.ones);
    }
    return bad ? lo : INT64_MAX;
}

int XI(attention_backward_run)(const XI(problem) *pb, const XI(pgrad) *pg,
                               int *nonfinite)
{
    const X(plan) *plan = pb->plan;
    const X(state) *given = pb->state;
    int64_t nq = pb->nq, nk = pb->nk;
    int64_t m = plan->m, e = plan->e, block = XI(block_rows)(plan);
    int ntq = linattn_i_threads(nq, block), ntk = linattn_i_threads(nk, block);
    int nt = ntq > ntk ? ntq : ntk;
    int64_t most = nq > nk ? nq : nk;
    int64_t rows = most < block ? (most > 0 ? most : 1) : block;
    /* Everything before the first write: workspaces, partial gradients
     * per thread, the state (whose update allocates its own). */
    bwd_ws ws[LINATTN_MAX_THREADS];
    XI(pgrad) parts[LINATTN_MAX_THREADS];
    XI(pgrad) none = {NULL, NULL};
    const XI(pgrad) *pgv = pg ? pg : &none;
    int have = 0, st = 0;
    int split = nt > 1 && (pgv->dw || pgv->db);
    int weighted = pb->part[LINATTN_I_KW].p != NULL;
    while (have < nt && !alloc_bwd_ws(&ws[have], plan, rows, weighted))
        have++;
    void *mem = given ? NULL : malloc(XI(state_bytes)(plan));
    real *tr = linattn_i_alloc(2 * m * (e + 1), sizeof(real));
    if (have < nt || (!given && !mem) || !tr ||
        (split && XI(pgrad_alloc)(parts, nt, plan, pgv)))
        st = LINATTN_ENOMEM;
    X(state) state;
    if (!st && given) {
        state = *given; /* read only */
    } else if (!st) {
        XI(state_init)(&state, plan, mem);
        /* no queries read [S z]: the keys' pass needs only the shift,
         * which the maps without one do not have */
        if (nq > 0 || plan->shifted)
            st = XI(state_update_run)(&state, pb, 0);
    }
    if (!st) {
        const XI(kern) *kn = XI(kern_now)();
        for (int t = 0; !split && t < nt; t++)
            parts[t] = *pgv; /* one thread, or nothing to split */
        kn->transpose(m, e + 1, state.sz, e + 1, tr, m);
        bwd_job job = {pb, ws, parts, tr, NULL, tr + m * (e + 1),
                       state.shift};
        int64_t qbad = linattn_i_parallel_ranges(ntq, nq, query_pass, &job);
        /* d[S z] from the threads' parts, in thread order */
        for (int t = 1; t < ntq; t++)
            for (int64_t i = 0; i < m * (e + 1); i++)
                ws[0].ds.acc[i] += ws[t].ds.acc[i];
        /* the state's gradient from beyond the call (at its shift, as
         * d[S z] is: the queries' den carry exp(C)) joins the queries' */
        for (int64_t i = 0; pb->dstate_end && i < m * (e + 1); i++)
            ws[0].ds.acc[i] += (acc_t)pb->dstate_end[i];
        XI(accum_publish)(&ws[0].ds);
        int dbad = 0; /* d[S z] out, as state_export lays [S z] out */
        for (int64_t i = 0; pb->dstates && i < m * (e + 1); i++) {
            pb->dstates[i] = (double)ws[0].ds.acc[i];
            dbad |= !isfinite(pb->dstates[i]);
        }
        job.dsz = ws[0].ds.w;
        kn->transpose(m, e + 1, job.dsz, e + 1, tr + m * (e + 1), m);
        int64_t kbad = linattn_i_parallel_ranges(ntk, nk, key_pass, &job);
        *nonfinite = qbad != INT64_MAX || kbad != INT64_MAX || dbad;
        if (split)
            XI(pgrad_fold)(plan, pgv, parts, nt);
    }
    if (split && have == nt && (given || mem) && tr)
        XI(pgrad_free)(parts, nt);
    free(tr);
    for (int t = 0; t < have; t++)
        free_bwd_ws(&ws[t]);
    free(mem);
    return st;
}

/* ---- the public call ---- */

/* linattn_d_attention_backward: nq queries and nk keys; the state of K, V
 * (optional) after dW and db. */
static const linattn_i_signature backward_sig = {
    .plan = 1, .layout = 2, .nq = 3, .nk = 4, .given = 25,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY | LINATTN_I_GIVEN_KEYS,
    .part = {LINATTN_I_BACKWARD(5)}};

int X(attention_backward)(const X(plan) *plan, int layout, int64_t nq,
                          int64_t nk, const real *q, int64_t ldq,
                          const real *k, int64_t ldk, const real *v,
                          int64_t ldv, const real *out, int64_t ldout,
                          const real *den, const real *g, int64_t ldg,
                          real *dq, int64_t lddq, real *dk, int64_t lddk,
                          real *dv, int64_t lddv, real *dw, int64_t lddw,
                          real *db, const X(state) *state, int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_grads)(&pb, den, g, ldg, dq, lddq, dk, lddk, dv, lddv, dw,
                      lddw, db);
    pb.state = (X(state) *)state; /* only read */
    return XI(backward_single)(&pb, &backward_sig, bad_row);
}

/* linattn_d_attention_backward_ex: and the extras (26): key weights in,
 * dL/dw out, packed sequences (the queries' and the keys' offsets). */
static const linattn_i_signature backward_ex_sig = {
    .plan = 1, .layout = 2, .nq = 3, .nk = 4, .given = 25, .extras = 26,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_DWEIGHTS |
                LINATTN_I_X_OFFSETS | LINATTN_I_X_KEY_OFFSETS |
                LINATTN_I_X_DSTATE_END,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY | LINATTN_I_GIVEN_KEYS,
    .part = {LINATTN_I_BACKWARD(5), LINATTN_I_WEIGHTS_IN(26),
             LINATTN_I_DWEIGHTS_OUT(26)}};

/* The problem of linattn_d_attention_backward_ex from its arguments. */
static XI(problem) backward_ex_problem(const X(plan) *plan, int layout,
        int64_t nq, int64_t nk, const real *q, int64_t ldq, const real *k,
        int64_t ldk, const real *v, int64_t ldv, const real *out,
        int64_t ldout, const real *den, const real *g, int64_t ldg, real *dq,
        int64_t lddq, real *dk, int64_t lddk, real *dv, int64_t lddv,
        real *dw, int64_t lddw, real *db, const X(state) *state,
        const X(extras) *ex)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    XI(problem_grads)(&pb, den, g, ldg, dq, lddq, dk, lddk, dv, lddv, dw,
                      lddw, db);
    XI(problem_backward_extras)(&pb, ex, state);
    return pb;
}

int X(attention_backward_ex)(const X(plan) *plan, int layout, int64_t nq,
                             int64_t nk, const real *q, int64_t ldq,
                             const real *k, int64_t ldk, const real *v,
                             int64_t ldv, const real *out, int64_t ldout,
                             const real *den, const real *g, int64_t ldg,
                             real *dq, int64_t lddq, real *dk, int64_t lddk,
                             real *dv, int64_t lddv, real *dw, int64_t lddw,
                             real *db, const X(state) *state,
                             const X(extras) *ex, int64_t *bad_row)
{
    XI(problem) pb = backward_ex_problem(plan, layout, nq, nk, q, ldq, k, ldk,
                                         v, ldv, out, ldout, den, g, ldg, dq,
                                         lddq, dk, lddk, dv, lddv, dw, lddw,
                                         db, state, ex);
    return XI(backward_single)(&pb, &backward_ex_sig, bad_row);
}

int X(attention_backward_check)(const X(plan) *plan, int layout, int64_t nq,
                                int64_t nk, const real *q, int64_t ldq,
                                const real *k, int64_t ldk, const real *v,
                                int64_t ldv, const real *out, int64_t ldout,
                                const real *den, const real *g, int64_t ldg,
                                const real *dq, int64_t lddq, const real *dk,
                                int64_t lddk, const real *dv, int64_t lddv,
                                const real *dw, int64_t lddw, const real *db,
                                const X(state) *state, const X(extras) *ex,
                                int64_t *bad_row)
{
    XI(problem) pb = backward_ex_problem(plan, layout, nq, nk, q, ldq, k, ldk,
                                         v, ldv, out, ldout, den, g, ldg,
                                         (real *)dq, lddq, (real *)dk, lddk,
                                         (real *)dv, lddv, (real *)dw, lddw,
                                         (real *)db, state, ex);
    return XI(backward_check)(&pb, &backward_ex_sig, bad_row);
}

/* linattn_d_state_query_backward: the state (1) gives the plan; Q, out,
 * den, G in, dQ out, dW and db (optional) against the map; no keys (the
 * query pass alone), the state's gradient (16) checked here. */
static const linattn_i_signature query_backward_sig = {
    .state = 1, .layout = 2, .nq = 3,
    .flags = LINATTN_I_SCAN | LINATTN_I_DEN_POLICY,
    .part = {[LINATTN_I_Q] = {4, LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_INPUT},
             [LINATTN_I_OUT] = {6, LINATTN_I_NQ, LINATTN_I_E,
                                LINATTN_I_INPUT},
             [LINATTN_I_DEN] = {8, LINATTN_I_NQ, LINATTN_I_ONE,
                                LINATTN_I_INPUT | LINATTN_I_VECTOR},
             [LINATTN_I_G] = {9, LINATTN_I_NQ, LINATTN_I_E, LINATTN_I_INPUT},
             [LINATTN_I_DQ] = {11, LINATTN_I_NQ, LINATTN_I_D,
                               LINATTN_I_OUTPUT},
             LINATTN_I_PARAM_GRADS(13)}};

int X(state_query_backward)(const X(state) *state, int layout, int64_t n,
                            const real *q, int64_t ldq, const real *out,
                            int64_t ldout, const real *den, const real *g,
                            int64_t ldg, real *dq, int64_t lddq, real *dw,
                            int64_t lddw, real *db, double *dstate,
                            int64_t *bad_row)
{
    XI(problem) pb = XI(problem_init)(state ? state->plan : NULL, layout, n,
                                      0);
    XI(problem_qkvo)(&pb, q, ldq, NULL, 0, NULL, 0, out, ldout);
    XI(problem_grads)(&pb, den, g, ldg, dq, lddq, NULL, 0, NULL, 0, dw, lddw,
                      db);
    pb.state = (X(state) *)state; /* only read */
    linattn_where where = {0, 0, -1};
    int st = XI(problem_check)(&pb, &query_backward_sig, &where);
    if (st == LINATTN_EDENOM && bad_row)
        *bad_row = where.row;
    if (!st && XI(meets_parts)(&pb, &query_backward_sig, dstate,
                               pb.m * (pb.e + 1),
                               LINATTN_I_INPUT | LINATTN_I_OUTPUT))
        st = -16;
    if (st)
        return st;
    pb.dstates = dstate; /* the path writes d[S z] there */
    return XI(backward_checked)(&pb, bad_row);
}
