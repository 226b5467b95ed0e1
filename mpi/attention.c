/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attention.c -- distributed non-causal attention: each problem's local
 * state, one MPI_Allreduce of all of them, then the local queries.
 */
#include "mprec.h"

/* After the agreement: the work, then the final agreement (the failing
 * problem and global row into *problem, *grow). */
static int attention_work(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                          int64_t *problem, int64_t *grow)
{
    int status = 0;
    int64_t first = -1, row = -1;
    if (MI(reduce_local)(j, comm, w, 0, 0, &status, &first))
        return LINATTN_EMPI;
    /* A rank that could not build its state stops everyone before any
     * output is written; the sum is the same everywhere, so are these. */
    int64_t problems = MI(problems)(j);
    for (int64_t i = 0;
         !status && !MI(any_failed)(w, w->elems, problems) && i < problems; i++) {
        const double *el = MI(elem)(w, w->elems, i);
        int st = 0;
        if (MI(overflowed)(el)) {
            /* Every query reads the sum, which is refused as a merge
             * refuses it: the serial call's EOVERFLOW at its first query
             * row, here with nothing written (no rank holds the sum). */
            if (j->nq > 0)
                st = LINATTN_EOVERFLOW, row = 0;
        } else {
            XI(problem) one = XI(problem_one)(j, i);
            st = MI(unpack)(w->state, el, 0);
            /* no queries here: nothing to ask (out may be NULL, which
             * state_query refuses) */
            if (!st && j->nq > 0)
                st = X(state_query)(w->state, j->layout, j->nq,
                                    MI_IN(one, LINATTN_I_Q),
                                    MI_OUT(one, LINATTN_I_OUT), NULL, 0,
                                    XI(part_out)(&one, LINATTN_I_DEN), &row);
        }
        if (st)
            status = st, first = i;
    }
    return linattn_mpi_i_agree_final(comm, status, first, row, j->nq, problem,
                                     grow);
}

int MX(attention)(const X(plan) *plan, MPI_Comm comm, int layout, int64_t nq,
                  int64_t nk, const real *q, int64_t ldq, const real *k,
                  int64_t ldk, const real *v, int64_t ldv, real *out,
                  int64_t ldout, int64_t *bad_row)
{
    int st = X(attention_check)(plan, layout, nq, nk, q, ldq, k, ldk, v, ldv,
                                out, ldout);
    XI(problem) j = MI(problem)(plan, layout, 1, 1, nq, nk);
    XI(problem_qkvo)(&j, q, ldq, k, ldk, v, ldv, out, ldout);
    return MI(run)(&j, comm, st, LINATTN_MPI_CALL_ATTENTION, attention_work,
                   bad_row, NULL);
}

int MX(batched_attention_forward)(const X(plan) *plan, MPI_Comm comm,
        int layout, int64_t batch, int64_t heads, int64_t nq, int64_t nk,
        const real *q, const linattn_strides *sq, const real *k,
        const linattn_strides *sk, const real *v, const linattn_strides *sv,
        real *out, const linattn_strides *sout, real *den, linattn_where *bad)
{
    int st = X(batched_attention_forward_check)(plan, layout, batch, heads,
                                                nq, nk, q, sq, k, sk, v, sv,
                                                out, sout, den);
    XI(problem) j = MI(batched_problem)(st, plan, layout, batch, heads, nq,
                                        nk, q, sq, k, sk, v, sv, out, sout);
    if (!st)
        j.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    return MI(run)(&j, comm, st, LINATTN_MPI_CALL_ATTENTION, attention_work,
                   NULL, bad);
}

int MX(batched_attention)(const X(plan) *plan, MPI_Comm comm, int layout,
                          int64_t batch, int64_t heads, int64_t nq,
                          int64_t nk, const real *q, const linattn_strides *sq,
                          const real *k, const linattn_strides *sk,
                          const real *v, const linattn_strides *sv, real *out,
                          const linattn_strides *sout, linattn_where *bad)
{
    int st = X(batched_attention_check)(plan, layout, batch, heads, nq, nk, q,
                                        sq, k, sk, v, sv, out, sout);
    XI(problem) j = MI(batched_problem)(st, plan, layout, batch, heads, nq,
                                        nk, q, sq, k, sk, v, sv, out, sout);
    return MI(run)(&j, comm, st, LINATTN_MPI_CALL_ATTENTION, attention_work,
                   NULL, bad);
}
