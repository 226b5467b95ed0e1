/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * frame.c -- what every distributed call does around its work: workspace
 * up front (so that a shortage is agreed on like an argument error), the
 * agreement, and a state in and out of its element.
 */
#include <float.h>
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

/* FNV-1a over a batched problem's log decays per head (0 without them),
 * which every rank must give alike, as its plan; read only when the
 * local checks passed. */
static uint64_t head_decays_hash(const XI(problem) *j)
{
    if (!j->head_decays)
        return 0;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t i = 0; i < j->heads; i++) {
        uint64_t x;
        memcpy(&x, &j->head_decays[i], sizeof x);
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
        /* a head's decay is part of its model, as the plan's */
        keys[1] ^= head_decays_hash(j) * 0x9e3779b97f4a7c15ull;
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

/* The sum of a + g[i] over rows i < rows (g NULL: 0), in double. */
static double sum_decays(double a, const real *g, int64_t rows)
{
    double run = 0;
    for (int64_t i = 0; i < rows; i++)
        run += g ? a + (double)g[i] : a;
    return run;
}

/* The plan's log decay per token (0: none). */
static double plan_log_decay(const X(plan) *plan)
{
    double a = 0;
    X(plan_decay)(plan, &a);
    return a;
}

double MI(decay_total)(const XI(problem) *one, int64_t lo, int64_t hi)
{
    const real *g = one->part[LINATTN_I_GATE].p;
    return sum_decays(plan_log_decay(one->plan) + one->head_decay,
                      g ? g + lo : NULL, hi - lo);
}

/* Rows a head's decay is folded into gates at a time. */
#define GATE_BLOCK 256

/* The state of problem one's keys [lo, hi) from zero into s, one serial
 * update: with a head's decay hd (not 0) as a gate of every row added to
 * its own, in buf (hi - lo <= GATE_BLOCK); *decay their total log decay,
 * as the update applied it.  0 or the update's status. */
static int block_state(const XI(problem) *one, X(state) *s, int64_t lo,
                       int64_t hi, real *buf, double *decay)
{
    const real *w = one->part[LINATTN_I_KW].p, *g = one->part[LINATTN_I_GATE].p;
    double hd = one->head_decay;
    X(extras) ex;
    X(extras_init)(&ex);
    ex.weights = w ? w + lo : NULL;
    ex.gates = g ? g + lo : NULL;
    if (hd != 0) {
        /* a decay beyond float's range: -REAL_MAX, whose factor is 0 as
         * the decay's */
        for (int64_t t = 0; t < hi - lo; t++) {
            double x = (g ? (double)g[lo + t] : 0) + hd;
            buf[t] = x < -REAL_MAX ? -REAL_MAX : (real)x;
        }
        ex.gates = buf;
    }
    /* the total as the serial update sums it: ln gamma + the row's gate */
    *decay = sum_decays(plan_log_decay(one->plan), ex.gates, hi - lo);
    X(state_reset)(s);
    if (hi <= lo)
        return 0;
    return X(state_update_ex)(s, one->layout, hi - lo,
                              XI(part_row)(one, LINATTN_I_K, lo),
                              one->part[LINATTN_I_K].s.ld,
                              XI(part_row)(one, LINATTN_I_V, lo),
                              one->part[LINATTN_I_V].s.ld, &ex);
}

int MI(keys_element)(MI(work) *w, const XI(problem) *one, const X(state) *seed,
                     int64_t lo, int64_t hi, double *el, double *tmp)
{
    real buf[GATE_BLOCK];
    int64_t block = one->head_decay != 0 ? GATE_BLOCK : hi - lo;
    int any = 0; /* el holds something to compose with */
    if (seed) {
        MI(pack)(seed, w->len, 0, el);
        any = 1;
    }
    for (int64_t at = lo; at < hi || !any; at += block) {
        int64_t to = hi - at < block ? hi : at + block;
        double decay = 0;
        int st = block_state(one, w->state, at, to, buf, &decay);
        if (st)
            return st;
        double *dst = any ? tmp : el;
        MI(pack)(w->state, w->len, 0, dst);
        dst[LINATTN_MPI_E_DECAY] = decay < -DBL_MAX ? -DBL_MAX : decay;
        if (any) {
            linattn_mpi_i_compose(el, tmp);
            memcpy(el, tmp, (size_t)(LINATTN_MPI_HEAD + w->len) * sizeof *el);
        }
        any = 1;
        if (block <= 0)
            break; /* no rows */
    }
    return 0;
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
    /* Only the causal scans decay (forward and backward: their elements
     * carry the rows' log decay).  A sum of whole states does not, and
     * the serial library refuses non-causal decay: a decayed plan is
     * refused as the plan by every other call. */
    double log_decay = 0;
    if (!status && j->plan && !X(plan_decay)(j->plan, &log_decay) &&
        log_decay != 0 && LINATTN_MPI_KIND(kind) != LINATTN_MPI_CALL_CAUSAL &&
        LINATTN_MPI_KIND(kind) != LINATTN_MPI_CALL_CAUSAL_BACKWARD)
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

int MI(meet)(const void *a, size_t na, const void *b, size_t nb)
{
    const char *x = a, *y = b;
    return na && nb && x < y + nb && y < x + na;
}

size_t MI(mat_bytes)(int layout, int64_t n, int64_t e, int64_t ld)
{
    if (n == 0 || e == 0)
        return 0;
    int64_t elems = layout == LINATTN_ROW_MAJOR ? (n - 1) * ld + e
                                                : (e - 1) * ld + n;
    return (size_t)elems * sizeof(real);
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
        double *el = MI(elem)(w, w->elems, i);
        X(state_reset)(w->state);
        if (!skip)
            st = MI(keys_element)(w, &one, NULL, 0, n, el,
                                  w->recv ? MI(elem)(w, w->recv, 0) : NULL);
        unsigned flags = st == LINATTN_EOVERFLOW ? LINATTN_MPI_F_OVER
                         : st                    ? LINATTN_MPI_F_FAIL
                                                 : 0;
        if (flags == LINATTN_MPI_F_FAIL && !*status)
            *status = st, *first = i;
        if (skip || flags)
            MI(pack)(w->state, w->len, flags, el);
    }
    if (MI(problems)(j) == 0)
        return 0;
    if (exscan)
        return linattn_mpi_i_exscan(w->scan_comm, w->elems, w->prefix,
                                    w->recv, MI(problems)(j), w->len);
    return linattn_mpi_i_allreduce(comm, w->elems, MI(problems)(j), w->len);
}
