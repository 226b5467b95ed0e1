/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * states.c -- the state collectives: the sum of states over all ranks,
 * and their exclusive prefix, many states in one reduction.
 */
#include "mprec.h"

/* -1 unless states[0 .. count) are states of plans with one fingerprint
 * (*fp); -2 for count < 0. */
static int states_args(X(state) *const *states, int64_t count, uint64_t *fp)
{
    if (count > 0 && !states)
        return -1;
    for (int64_t i = 0; i < count; i++) {
        const X(plan) *p;
        uint64_t f;
        if (!states[i])
            return -1;
        X(state_plan)(states[i], &p);
        X(plan_fingerprint)(p, &f);
        if (i == 0)
            *fp = f;
        else if (f != *fp)
            return -1;
    }
    return count < 0 ? -2 : 0;
}

static int collective(X(state) *const *states, int64_t count, MPI_Comm comm,
                      int exscan)
{
    int kind = exscan ? LINATTN_MPI_CALL_EXSCAN : LINATTN_MPI_CALL_ALLREDUCE;
    uint64_t fp = 0;
    int st = states_args(states, count, &fp);
    /* LAPACKE's order: states and count (arguments 1, 2) before comm */
    int ready = linattn_mpi_i_ready(comm);
    if (ready)
        return st ? st : ready == 1 ? -3 : ready;
    if (st || count == 0) {
        /* the keys MI(begin) compares: kind, fingerprint, batch = count,
         * heads = 1 */
        uint64_t keys[4] = {(uint64_t)kind, fp, (uint64_t)count, 1};
        return linattn_mpi_i_agree(comm, st, keys, 4);
    }
    const X(plan) *plan;
    X(state_plan)(states[0], &plan);
    /* batch = count, heads = 1: the agreement compares count */
    XI(problem) j = MI(problem)(plan, LINATTN_ROW_MAJOR, count, 1, 0, 0);
    MI(work) w;
    st = MI(begin)(&j, comm, 0, kind, &w);
    if (st)
        return st;
    for (int64_t i = 0; i < count; i++)
        MI(pack)(states[i], w.len, 0, MI(elem)(&w, w.elems, i));
    double *sum = exscan ? w.prefix : w.elems;
    st = exscan ? linattn_mpi_i_exscan(w.scan_comm, w.elems, w.prefix, w.recv,
                                       count, w.len)
                : linattn_mpi_i_allreduce(comm, w.elems, count, w.len);
    if (st) {
        MI(end)(&w);
        return st;
    }
    /* What a merge refuses (on some ranks only, for a prefix), state by
     * state in its order: a token count beyond int64, then sums of
     * states without NaN or Inf beyond the range.  Agreed before any
     * state changes: the first failing rank's status. */
    for (int64_t i = 0; !st && i < count; i++)
        st = linattn_mpi_i_elem_tokens(MI(elem)(&w, sum, i)) < 0
                 ? LINATTN_ESIZE
             : MI(overflowed)(MI(elem)(&w, sum, i)) ? LINATTN_EOVERFLOW
                                                    : 0;
    st = linattn_mpi_i_agree(comm, st, NULL, 0);
    for (int64_t i = 0; !st && i < count; i++)
        MI(unpack)(states[i], MI(elem)(&w, sum, i), 0);
    MI(end)(&w);
    return st;
}

int MX(state_allreduce)(X(state) *const *states, int64_t count, MPI_Comm comm)
{
    return collective(states, count, comm, 0);
}

int MX(state_exscan)(X(state) *const *states, int64_t count, MPI_Comm comm)
{
    return collective(states, count, comm, 1);
}
