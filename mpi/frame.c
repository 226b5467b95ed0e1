/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame.c -- what every distributed call does around its work: workspace
 * up front (so that a shortage is agreed on like an argument error), the
 * agreement, and a state in and out of its element.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "mprec.h"

void MI(end)(MI(work) *w)
{
    X(state_destroy)(w->state);
    X(state_destroy)(w->first);
    X(state_destroy)(w->last);
    free(w->back);
    free(w->suffix);
    free(w->elems);
    free(w->prefix);
    free(w->recv);
    free(w->holder);
    memset(w, 0, sizeof *w);
}

static double *alloc_set(int64_t count, int64_t stride)
{
    /* at least one element, so that no rank passes NULL to MPI */
    size_t n = (size_t)(count > 0 ? count : 1) * (size_t)stride;
    return malloc(n * sizeof(double));
}

/* FNV-1a over a packed problem's offsets (0 without them); read only
 * when the local checks passed. */
static uint64_t offsets_hash(const XI(problem) *j)
{
    if (!j->qoff)
        return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t s = 0; s <= j->nseq; s++) {
        uint64_t x = (uint64_t)j->qoff[s];
        for (int b = 0; b < 8; b++, x >>= 8)
            h = (h ^ (x & 0xff)) * 0x100000001b3ull;
    }
    return h;
}

int MI(begin)(const XI(problem) *j, MPI_Comm comm, int status, int kind,
              MI(work) *w)
{
    memset(w, 0, sizeof *w);
    /* a packed stream's calls scan (its non-causal one both ways); its
     * offsets were checked when status is 0, and agree below */
    int packed = !status && j->qoff;
    int call = LINATTN_MPI_KIND(kind);
    /* the backward calls reduce or scan the gradients' elements too: a
     * set per problem (back), and its scan's result (suffix) */
    int bwd = call == LINATTN_MPI_CALL_ATTENTION_BACKWARD ||
              call == LINATTN_MPI_CALL_CAUSAL_BACKWARD;
    int prefix = call == LINATTN_MPI_CALL_CAUSAL ||
                 call == LINATTN_MPI_CALL_EXSCAN ||
                 call == LINATTN_MPI_CALL_CAUSAL_BACKWARD || packed;
    /* packed streams: every rank must hold the same global offsets (their
     * count and an FNV-1a hash of them; 0, 0 without), and give states or
     * not, absorbing or not, as every other does */
    uint64_t keys[7] = {(uint64_t)kind, 0, (uint64_t)j->batch,
                        (uint64_t)j->heads, (uint64_t)j->nseq,
                        offsets_hash(j),
                        !status && j->states ? 1u + (j->absorb != 0) : 0};
    if (!status) {
        int64_t m, e;
        X(plan_dims)(j->plan, NULL, &m, &e);
        X(plan_fingerprint)(j->plan, &keys[1]);
        w->len = m * (e + 1);
        /* MPI counts are int: one element, and the number of them */
        if (w->len > INT_MAX - LINATTN_MPI_HEAD || MI(problems)(j) > INT_MAX ||
            (uint64_t)MI(problems)(j) > SIZE_MAX / sizeof(double) /
                                        (uint64_t)(w->len + LINATTN_MPI_HEAD))
            status = LINATTN_ESIZE;
    }
    if (!status) {
        int64_t stride = LINATTN_MPI_HEAD + w->len;
        w->elems = alloc_set(MI(problems)(j), stride);
        if (prefix) {
            w->prefix = alloc_set(MI(problems)(j), stride);
            w->recv = alloc_set(MI(problems)(j), stride);
            status = linattn_mpi_i_private_prepare(comm, &w->holder);
        }
        if (packed || bwd) {
            w->back = alloc_set(bwd ? MI(problems)(j) : 1, stride);
            w->suffix = alloc_set(bwd ? MI(problems)(j) : 1, stride);
            if (!status && (!w->back || !w->suffix))
                status = LINATTN_ENOMEM;
        }
        if (packed && !status && (X(state_create)(&w->first, j->plan) ||
                                  X(state_create)(&w->last, j->plan)))
            status = LINATTN_ENOMEM;
        if (!status && (!w->elems || (prefix && (!w->prefix || !w->recv)) ||
                        X(state_create)(&w->state, j->plan)))
            status = LINATTN_ENOMEM;
    }
    status = linattn_mpi_i_agree(comm, status, keys, 7);
    if (!status && prefix) {
        status = linattn_mpi_i_private(comm, w->holder, &w->scan_comm);
        w->holder = NULL; /* taken over (or freed) */
    }
    if (status)
        MI(end)(w);
    return status;
}

/* Nonzero when an entry of x[0 .. len) is NaN, Inf or beyond max >= 0
 * in magnitude.  Non-negative doubles order as their bits, NaN and Inf
 * above every finite one: |x|'s bits plus INT64_MAX - max's bits reach
 * 2^63 exactly when |x| > max or x is NaN.  Integer adds and ors, with
 * no dependency longer than one cycle, so that the pass vectorizes at
 * full speed (a floating-point sum of x * 0 waits on each addition). */
static int beyond(const double *x, int64_t len, double max)
{
    uint64_t top, any = 0;
    memcpy(&top, &max, sizeof top);
    uint64_t lift = (uint64_t)INT64_MAX - top;
#ifdef LINATTN_HAVE_OPENMP_SIMD
#pragma omp simd reduction(| : any)
#endif
    for (int64_t i = 0; i < len; i++) {
        uint64_t u;
        memcpy(&u, x + i, sizeof u);
        any |= (u & (uint64_t)INT64_MAX) + lift;
    }
    return (int)(any >> 63);
}

void MI(pack)(const X(state) *state, int64_t len, unsigned flags, double *el)
{
    double shift = 0, mass = 0, *acc = el + LINATTN_MPI_HEAD;
    int64_t tokens = 0;
    if (flags) {
        memset(el, 0, (size_t)(LINATTN_MPI_HEAD + len) * sizeof *el);
    } else {
        X(state_export)(state, acc, &shift, &tokens);
        X(state_key_weight)(state, &mass);
        /* A state's sums hold NaN or Inf only from its inputs (an update
         * or merge refuses finite sums that overflow), and its queries
         * then propagate them: so must the sum's. */
        if (beyond(acc, len, DBL_MAX))
            flags = LINATTN_MPI_F_POISON;
    }
    linattn_mpi_i_elem_head(el, len, shift, tokens);
    if (!flags || flags == LINATTN_MPI_F_POISON)
        el[LINATTN_MPI_E_MASS] = mass;
    el[LINATTN_MPI_E_FLAGS] = flags;
}

int MI(overflowed)(const double *el)
{
    unsigned flags = linattn_mpi_i_flags(el);
    if (flags & LINATTN_MPI_F_OVER)
        return 1;
    if (flags & LINATTN_MPI_F_POISON)
        return 0;
    /* finite states whose double sum is Inf (or NaN: +Inf and -Inf) or,
     * in float, beyond the float copy's range */
    return beyond(el + LINATTN_MPI_HEAD, (int64_t)el[LINATTN_MPI_E_LEN],
                  REAL_MAX);
}

int MI(unpack)(X(state) *state, const double *el, int64_t more)
{
    int64_t tokens = linattn_mpi_i_elem_tokens(el);
    if (tokens < 0 || more > INT64_MAX - tokens)
        return LINATTN_ESIZE;
    /* the shift is one of the ranks' (finite, 0 for the maps without);
     * the weight a sum of finite weights >= 0, refused only beyond the
     * range */
    return X(state_import_weighted)(state, el + LINATTN_MPI_HEAD,
                                    el[LINATTN_MPI_E_SHIFT], tokens,
                                    el[LINATTN_MPI_E_MASS])
               ? LINATTN_EOVERFLOW
               : 0;
}

int MI(run)(const XI(problem) *j, MPI_Comm comm, int status, int kind,
            MI(work_fn) f, int64_t *bad_row, linattn_where *bad)
{
    /* LAPACKE's order: the plan (argument 1) before the communicator */
    int ready = linattn_mpi_i_ready(comm);
    if (ready)
        return status == -1 ? -1 : ready == 1 ? -2 : ready;
    /* the communicator is argument 2: the serial -i from 2 on moves up */
    MI(work) w;
    status = status < -1 ? status - 1 : status;
    /* the scans and sums across ranks do not decay a rank's state over
     * the rows after it: a decayed plan is refused as the plan (the
     * serial causal calls take it) */
    double log_decay = 0;
    if (!status && j->plan && !X(plan_decay)(j->plan, &log_decay) &&
        log_decay != 0)
        status = -1;
    int st = MI(begin)(j, comm, status, kind, &w);
    if (st)
        return st;
    int64_t problem = -1, row = -1;
    st = f(j, comm, &w, &problem, &row);
    MI(end)(&w);
    if ((st == LINATTN_EDENOM || st == LINATTN_EOVERFLOW) && bad_row)
        *bad_row = row;
    if (st && problem >= 0 && bad)
        *bad = (linattn_where){problem / j->heads, problem % j->heads, row};
    return st;
}

XI(problem) MI(batched_problem)(int status, const X(plan) *plan, int layout,
                                int64_t batch, int64_t heads, int64_t nq,
                                int64_t nk, const real *q,
                                const linattn_strides *sq, const real *k,
                                const linattn_strides *sk, const real *v,
                                const linattn_strides *sv, real *out,
                                const linattn_strides *sout)
{
    XI(problem) j = MI(problem)(plan, layout, batch, heads, nq, nk);
    if (!status) {
        j.part[LINATTN_I_Q] = XI(part_batched)(q, sq);
        j.part[LINATTN_I_K] = XI(part_batched)(k, sk);
        j.part[LINATTN_I_V] = XI(part_batched)(v, sv);
        j.part[LINATTN_I_OUT] = XI(part_batched)(out, sout);
    }
    return j;
}

int MI(reduce_local)(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                     int skip, int exscan, int *status, int64_t *first)
{
    int64_t n = j->nk;
    for (int64_t i = 0; i < MI(problems)(j); i++) {
        int st = 0;
        XI(problem) one = XI(problem_one)(j, i);
        X(state_reset)(w->state);
        if (!skip)
            st = X(state_update)(w->state, j->layout, n,
                                 MI_IN(one, LINATTN_I_K),
                                 MI_IN(one, LINATTN_I_V));
        unsigned flags = st == LINATTN_EOVERFLOW ? LINATTN_MPI_F_OVER
                         : st                    ? LINATTN_MPI_F_FAIL
                                                 : 0;
        if (flags == LINATTN_MPI_F_FAIL && !*status)
            *status = st, *first = i;
        MI(pack)(w->state, w->len, flags, MI(elem)(w, w->elems, i));
    }
    if (MI(problems)(j) == 0)
        return 0;
    if (exscan)
        return linattn_mpi_i_exscan(w->scan_comm, w->elems, w->prefix,
                                    w->recv, MI(problems)(j), w->len);
    return linattn_mpi_i_allreduce(comm, w->elems, MI(problems)(j), w->len);
}
