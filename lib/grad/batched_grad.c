/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * batched_grad.c -- the training calls over batch x heads problems: the
 * forward calls that hand back normalizers and the backward calls, with
 * the threading and statuses of batched.c (problems over threads when
 * there are at least as many as threads, else one after another, each
 * splitting its rows).  Every problem runs the single call's code.  dW
 * and db are sums over all problems: each thread adds its problems into
 * its own accumulators, which are added in thread order at the end.
 *
 * The normalizers are a dense array, problem (b, h)'s nq (or n) of them
 * at den + (b heads + h) nq; the checks see den as an nq x 1 matrix with
 * those strides, so it may not meet an output either.
 */
#include <string.h>
#include "grad/grad.h"
#include "common/threads.h"
#include "common/validate.h"

enum { FWD_ATT, FWD_CAUSAL, BWD_ATT, BWD_CAUSAL };

typedef struct {
    int kind;
    const X(plan) *plan;
    int layout;
    int64_t heads, nq, nk;
    const real *q, *k, *v, *g;
    real *out, *den, *dq, *dk, *dv;
    const linattn_strides *sq, *sk, *sv, *sout, *sg, *sdq, *sdk, *sdv;
    XI(pgrad) *pg; /* per range of problems */
    int status[LINATTN_MAX_THREADS];
    int64_t row[LINATTN_MAX_THREADS];
} gjob;

/* Problem (b, h)'s matrix, or the base pointer when it has no rows (its
 * strides were not checked for addressing then). */
static real *at(const real *p, const linattn_strides *s, int64_t rows,
                int64_t b, int64_t h)
{
    return (real *)(rows > 0 ? p + b * s->batch + h * s->head : p);
}

/* Problem p's matrices (the gradients' and out, g, den only for the
 * backward calls). */
static XI(bwd_io) problem(const gjob *j, int64_t p)
{
    int64_t b = p / j->heads, h = p % j->heads, nq = j->nq, nk = j->nk;
    int cm = j->layout == LINATTN_COL_MAJOR, bwd = j->kind >= BWD_ATT;
    XI(bwd_io) io = {.nq = nq,
                     .nk = nk,
                     .q = {at(j->q, j->sq, nq, b, h), j->sq->ld, cm},
                     .k = {at(j->k, j->sk, nk, b, h), j->sk->ld, cm},
                     .v = {at(j->v, j->sv, nk, b, h), j->sv->ld, cm}};
    if (!bwd)
        return io;
    io.out = (XI(view)){at(j->out, j->sout, nq, b, h), j->sout->ld, cm};
    io.g = (XI(view)){at(j->g, j->sg, nq, b, h), j->sg->ld, cm};
    io.dq = (XI(view)){at(j->dq, j->sdq, nq, b, h), j->sdq->ld, cm};
    io.dk = (XI(view)){at(j->dk, j->sdk, nk, b, h), j->sdk->ld, cm};
    io.dv = (XI(view)){at(j->dv, j->sdv, nk, b, h), j->sdv->ld, cm};
    io.den = j->den + p * nq;
    return io;
}

static int run_one(const gjob *j, int64_t p, const XI(pgrad) *pg,
                   int64_t *row)
{
    int64_t nq = j->nq, nk = j->nk;
    real *den = j->den + p * nq;
    XI(bwd_io) io = problem(j, p);
    if (j->kind == FWD_ATT || j->kind == FWD_CAUSAL) {
        real *out = at(j->out, j->sout, nq, p / j->heads, p % j->heads);
        if (j->kind == FWD_ATT)
            return XI(attention_run_den)(j->plan, j->layout, nq, nk, io.q.p,
                                         io.q.ld, io.k.p, io.k.ld, io.v.p,
                                         io.v.ld, out, j->sout->ld, den, row);
        return XI(causal_run_den)(j->plan, j->layout, nq, io.q.p, io.q.ld,
                                  io.k.p, io.k.ld, io.v.p, io.v.ld, out,
                                  j->sout->ld, den, row);
    }
    /* the gradients' views point into the caller's outputs */
    real *dq = (real *)io.dq.p, *dk = (real *)io.dk.p, *dv = (real *)io.dv.p;
    int st, nonfinite = 0;
    if (j->kind == BWD_ATT)
        st = XI(attention_backward_run)(j->plan, j->layout, nq, nk, io.q, io.k,
                                        io.v, io.out, den, io.g, dq, io.dq.ld,
                                        dk, io.dk.ld, dv, io.dv.ld, pg, NULL,
                                        &nonfinite);
    else
        st = XI(causal_backward_run)(j->plan, j->layout, nq, io.q, io.k, io.v,
                                     io.out, den, io.g, dq, io.dq.ld, dk,
                                     io.dk.ld, dv, io.dv.ld, pg, &nonfinite);
    if (st == LINATTN_EOVERFLOW)
        *row = -1; /* the keys' sums, before anything was written */
    if (!st && nonfinite)
        st = XI(grad_overflow)(j->plan, &io, row);
    return st;
}

/* Problems [lo, hi) on range t: the first failure's index (its status and
 * row kept for range t), or INT64_MAX. */
static int64_t run_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    gjob *j = ctx;
    int64_t first = INT64_MAX;
    for (int64_t p = lo; p < hi; p++) {
        int64_t row = -1;
        int st = run_one(j, p, &j->pg[t], &row);
        first = linattn_i_first_failure(first, p, st, row, &j->status[t],
                                        &j->row[t]);
    }
    return first;
}

/* Every input of every problem finite (the forward ones only for the
 * forward calls). */
static int inputs_finite(const gjob *j, int64_t batch)
{
    for (int64_t p = 0; p < batch * j->heads; p++) {
        XI(bwd_io) io = problem(j, p);
        if (!XI(bwd_inputs_finite)(j->plan, &io))
            return 0;
    }
    return 1;
}

/* dw and db (positions pos, pos + 2; valid and addressable) apart from
 * the count batched matrices and from each other: 0, or -pos of the
 * first that meets one. */
static int params_apart(const gjob *j, int64_t batch,
                        const linattn_i_bmat *mats, int count, const real *dw,
                        int64_t lddw, const real *db, int pos)
{
    linattn_i_mat two[2];
    uintptr_t lo[2], hi[2];
    XI(pgrad_mats)(j->plan, j->layout, dw, lddw, db, pos, two);
    for (int t = 0; t < 2; t++) {
        linattn_i_mat_range(j->layout, sizeof(real), &two[t], &lo[t], &hi[t]);
        for (int i = 0; lo[t] < hi[t] && i < count; i++) {
            uintptr_t blo, bhi;
            linattn_i_bmat_range(j->layout, batch, j->heads, sizeof(real),
                                 &mats[i], &blo, &bhi);
            if (blo < hi[t] && lo[t] < bhi)
                return -two[t].pos;
        }
    }
    int both = lo[0] < hi[0] && lo[1] < hi[1];
    return both && lo[0] < hi[1] && lo[1] < hi[0] ? -two[1].pos : 0;
}

/* The checks of a batched training call, with the positions of its
 * prototype (pos: q's; den at pos + 8, then G, dq, dk, dv and dw, db for
 * the backward calls). */
static int check(gjob *j, int64_t batch, int pos, const real *dw,
                 int64_t lddw, const real *db, linattn_where *bad)
{
    const X(plan) *plan = j->plan;
    int64_t d = plan->d, e = plan->e, nq = j->nq, nk = j->nk;
    int bwd = j->kind >= BWD_ATT;
    if (j->heads > 0 && nq > INT64_MAX / j->heads)
        return LINATTN_ESIZE;
    linattn_strides sden = {j->layout == LINATTN_COL_MAJOR ? (nq > 1 ? nq : 1)
                                                           : 1,
                            j->heads * nq, nq};
    const linattn_i_bmat mats[] = {{nq, d, j->q, j->sq, pos, 0},
                                   {nk, d, j->k, j->sk, pos + 2, 0},
                                   {nk, e, j->v, j->sv, pos + 4, 0},
                                   {nq, e, j->out, j->sout, pos + 6, !bwd},
                                   {nq, 1, j->den, &sden, pos + 8, !bwd},
                                   {nq, e, j->g, j->sg, pos + 9, 0},
                                   {nq, d, j->dq, j->sdq, pos + 11, 1},
                                   {nk, d, j->dk, j->sdk, pos + 13, 1},
                                   {nk, e, j->dv, j->sdv, pos + 15, 1}};
    int st = linattn_i_check_batched(j->layout, batch, j->heads, sizeof(real),
                                     mats, bwd ? 9 : 5);
    int pst = st < 0 || !bwd ? 0
                             : XI(pgrad_args)(plan, j->layout, dw, lddw, db,
                                              pos + 17);
    if (st < 0 || pst < 0)
        return st < 0 ? st : pst;
    if (st || pst)
        return st ? st : pst;
    if (batch > 0 && j->heads > INT64_MAX / batch)
        return LINATTN_ESIZE;
    st = bwd ? params_apart(j, batch, mats, 9, dw, lddw, db, pos + 17) : 0;
    if (st)
        return st;
    if (plan->check_finite && !inputs_finite(j, batch))
        return LINATTN_ENONFINITE;
    for (int64_t p = 0; bwd && p < batch * j->heads; p++) {
        int64_t r = XI(den_first_bad)(plan, j->den + p * nq, nq);
        if (r < nq) {
            if (bad)
                *bad = (linattn_where){p / j->heads, p % j->heads, r};
            return LINATTN_EDENOM;
        }
    }
    return 0;
}

/* Checks, then the problems over threads or one after another; dw and db
 * written when every problem succeeded. */
static int batched(gjob *j, int64_t batch, int pos, real *dw, int64_t lddw,
                   real *db, linattn_where *bad)
{
    int st = check(j, batch, pos, dw, lddw, db, bad);
    int64_t problems = batch * j->heads;
    if (st || (problems == 0 && !dw && !db))
        return st; /* (no problems with dw or db: zeros, sums over none) */
    int nt = linattn_i_problem_threads(problems);
    XI(pgrad) parts[LINATTN_MAX_THREADS], total = {NULL, NULL};
    if (XI(pgrad_open)(&total, j->plan, dw != NULL, db != NULL))
        return LINATTN_ENOMEM;
    int split = nt > 1 && (dw || db);
    if (split && XI(pgrad_alloc)(parts, nt, j->plan, &total)) {
        XI(pgrad_free)(&total, 1);
        return LINATTN_ENOMEM;
    }
    for (int t = 0; !split && t < nt; t++)
        parts[t] = total;
    j->pg = parts;
    int64_t first = linattn_i_parallel_ranges(nt, problems, run_range, j);
    if (split) {
        XI(pgrad_fold)(j->plan, &total, parts, nt);
        XI(pgrad_free)(parts, nt);
    }
    /* sums of finite problems' gradients beyond the range: no row */
    if (first == INT64_MAX && !XI(pgrad_finite)(j->plan, &total) &&
        inputs_finite(j, batch)) {
        XI(pgrad_free)(&total, 1);
        if (bad)
            *bad = (linattn_where){-1, -1, -1};
        return LINATTN_EOVERFLOW;
    }
    if (first == INT64_MAX)
        XI(pgrad_write)(j->plan, &total, j->layout, dw, lddw, db);
    XI(pgrad_free)(&total, 1);
    if (first == INT64_MAX)
        return 0;
    int t = linattn_i_range_of(problems, nt, first);
    if (bad)
        *bad = (linattn_where){first / j->heads, first % j->heads, j->row[t]};
    return j->status[t];
}

/* Positions 1-6 (1-5 for the causal calls): plan, layout, batch, heads,
 * nq and nk, or n. */
static int leading(const X(plan) *plan, int layout, int64_t batch,
                   int64_t heads, int64_t nq, int64_t nk, int seq)
{
    int st = XI(batched_leading)(plan, layout, batch, heads);
    if (st)
        return st;
    if (nq < 0)
        return -5;
    return !seq && nk < 0 ? -6 : 0;
}

int X(batched_attention_forward)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, real *out,
        const linattn_strides *sout, real *den, linattn_where *bad)
{
    int st = leading(plan, layout, batch, heads, nq, nk, 0);
    if (st)
        return st;
    gjob j = {FWD_ATT, plan, layout, heads, nq, nk, q, k, v, NULL, out, den,
              NULL, NULL, NULL, sq, sk, sv, sout, NULL, NULL, NULL, NULL,
              NULL, {0}, {0}};
    return batched(&j, batch, 7, NULL, 0, NULL, bad);
}

int X(batched_causal_forward)(const X(plan) *plan, int layout, int64_t batch,
        int64_t heads, int64_t n, const real *q, const linattn_strides *sq,
        const real *k, const linattn_strides *sk, const real *v,
        const linattn_strides *sv, real *out, const linattn_strides *sout,
        real *den, linattn_where *bad)
{
    int st = leading(plan, layout, batch, heads, n, n, 1);
    if (st)
        return st;
    gjob j = {FWD_CAUSAL, plan, layout, heads, n, n, q, k, v, NULL, out, den,
              NULL, NULL, NULL, sq, sk, sv, sout, NULL, NULL, NULL, NULL,
              NULL, {0}, {0}};
    return batched(&j, batch, 6, NULL, 0, NULL, bad);
}

int X(batched_attention_backward)(const X(plan) *plan, int layout,
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den, const real *g,
        const linattn_strides *sg, real *dq, const linattn_strides *sdq,
        real *dk, const linattn_strides *sdk, real *dv,
        const linattn_strides *sdv, real *dw, int64_t lddw, real *db,
        linattn_where *bad)
{
    int st = leading(plan, layout, batch, heads, nq, nk, 0);
    if (st)
        return st;
    gjob j = {BWD_ATT, plan, layout, heads, nq, nk, q, k, v, g,
              (real *)out, (real *)den, dq, dk, dv, sq, sk, sv, sout, sg,
              sdq, sdk, sdv, NULL, {0}, {0}};
    return batched(&j, batch, 7, dw, lddw, db, bad);
}

int X(batched_causal_backward)(const X(plan) *plan, int layout, int64_t batch,
        int64_t heads, int64_t n, const real *q, const linattn_strides *sq,
        const real *k, const linattn_strides *sk, const real *v,
        const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den, const real *g,
        const linattn_strides *sg, real *dq, const linattn_strides *sdq,
        real *dk, const linattn_strides *sdk, real *dv,
        const linattn_strides *sdv, real *dw, int64_t lddw, real *db,
        linattn_where *bad)
{
    int st = leading(plan, layout, batch, heads, n, n, 1);
    if (st)
        return st;
    gjob j = {BWD_CAUSAL, plan, layout, heads, n, n, q, k, v, g,
              (real *)out, (real *)den, dq, dk, dv, sq, sk, sv, sout, sg,
              sdq, sdk, sdv, NULL, {0}, {0}};
    return batched(&j, batch, 6, dw, lddw, db, bad);
}
