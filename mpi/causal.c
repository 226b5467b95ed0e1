/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * causal.c -- distributed causal attention: each rank but the last builds
 * its problems' local states, one exclusive scan (reduce.c: ceil(log2 P)
 * exchanges) gives rank r the states of ranks 0 .. r-1 (the prefix), and
 * rank r's rows continue causally from it (linattn_d_state_causal).
 *
 * Overlap: the prefix's contribution could instead be added after a local
 * pass from a zero state, hiding the scan behind that pass; but the
 * local state must exist before the scan can start, so that form does
 * one more pass over the rows (phi(Q) [S z] of the prefix) to hide one
 * reduction of a few kilobytes.  doc/mpi.md measures both sides: the
 * reduction costs microseconds, the extra pass milliseconds at any n
 * worth distributing, so the prefix is computed first and nothing is
 * recomputed.
 */
#include "mprec.h"

static int causal_work(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                       int64_t *problem, int64_t *grow)
{
    int rank, size;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return LINATTN_EMPI;
    int status = 0;
    int64_t first = -1, row = -1, n = j->nk;
    /* The last rank's state would reach no one: it sends an empty one. */
    if (MI(reduce_local)(j, comm, w, rank == size - 1, 1, &status, &first))
        return LINATTN_EMPI;
    /* A failure before this rank (in its prefix) or here: no rows. */
    int skip = status != 0;
    for (int64_t i = 0; i < MI(problems)(j); i++)
        skip |= (linattn_mpi_i_flags(MI(elem)(w, w->prefix, i)) &
                 LINATTN_MPI_F_FAIL) != 0;
    for (int64_t i = 0; !skip && !status && i < MI(problems)(j); i++) {
        const double *pre = MI(elem)(w, w->prefix, i);
        int st = 0;
        if (MI(overflowed)(pre)) {
            /* Every row here reads the prefix, whose sums left the range:
             * EOVERFLOW at this rank's first row, nothing written.  The
             * last earlier rank with rows saw those sums in its last row
             * and reports an earlier row, as the serial call does, unless
             * its own sums stayed in range (added in another order). */
            if (n > 0)
                st = LINATTN_EOVERFLOW, row = 0;
        } else {
            /* This rank's own sums may overflow (F_OVER in what it sent):
             * its rows report where, as the serial call's do. */
            XI(problem) one = XI(problem_one)(j, i);
            st = MI(unpack)(w->state, pre, n);
            /* with normalizers out: causal_ex from the state, which is
             * state_causal bit for bit */
            X(extras) ex;
            X(extras_init)(&ex);
            ex.state = w->state;
            ex.den = XI(part_out)(&one, LINATTN_I_DEN);
            if (!st && ex.den)
                st = X(causal_ex)(j->plan, j->layout, n,
                                  MI_IN(one, LINATTN_I_Q),
                                  MI_IN(one, LINATTN_I_K),
                                  MI_IN(one, LINATTN_I_V),
                                  MI_OUT(one, LINATTN_I_OUT), &ex, &row);
            else if (!st)
                st = X(state_causal)(w->state, j->layout, n,
                                     MI_IN(one, LINATTN_I_Q),
                                     MI_IN(one, LINATTN_I_K),
                                     MI_IN(one, LINATTN_I_V),
                                     MI_OUT(one, LINATTN_I_OUT), 0, &row);
        }
        if (st)
            status = st, first = i;
    }
    return linattn_mpi_i_agree_final(comm, status, first, row, n, problem,
                                     grow);
}

int MX(causal)(const X(plan) *plan, MPI_Comm comm, int layout, int64_t n,
               const real *q, int64_t ldq, const real *k, int64_t ldk,
               const real *v, int64_t ldv, real *out, int64_t ldout,
               int64_t *bad_row)
{
    int st = X(causal_check)(plan, layout, n, q, ldq, k, ldk, v, ldv, out,
                             ldout);
    XI(problem) j = MI(problem)(plan, layout, 1, 1, n, n);
    XI(problem_qkvo)(&j, q, ldq, k, ldk, v, ldv, out, ldout);
    return MI(run)(&j, comm, st, LINATTN_MPI_CALL_CAUSAL, causal_work,
                   bad_row, NULL);
}

int MX(batched_causal_forward)(const X(plan) *plan, MPI_Comm comm,
        int layout, int64_t batch, int64_t heads, int64_t n, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, real *out,
        const linattn_strides *sout, real *den, linattn_where *bad)
{
    int st = X(batched_causal_forward_check)(plan, layout, batch, heads, n, q,
                                             sq, k, sk, v, sv, out, sout,
                                             den);
    XI(problem) j = MI(batched_problem)(st, plan, layout, batch, heads, n, n,
                                        q, sq, k, sk, v, sv, out, sout);
    if (!st)
        j.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    return MI(run)(&j, comm, st, LINATTN_MPI_CALL_CAUSAL, causal_work, NULL,
                   bad);
}

int MX(batched_causal)(const X(plan) *plan, MPI_Comm comm, int layout,
                       int64_t batch, int64_t heads, int64_t n, const real *q,
                       const linattn_strides *sq, const real *k,
                       const linattn_strides *sk, const real *v,
                       const linattn_strides *sv, real *out,
                       const linattn_strides *sout, linattn_where *bad)
{
    int st = X(batched_causal_check)(plan, layout, batch, heads, n, q, sq, k,
                                     sk, v, sv, out, sout);
    XI(problem) j = MI(batched_problem)(st, plan, layout, batch, heads, n, n,
                                        q, sq, k, sk, v, sv, out, sout);
    return MI(run)(&j, comm, st, LINATTN_MPI_CALL_CAUSAL, causal_work, NULL,
                   bad);
}
