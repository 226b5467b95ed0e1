/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * causal.c -- distributed causal attention: each rank but the last builds
 * its problems' local states, one exclusive scan (reduce.c: ceil(log2 P)
 * exchanges) gives rank r the states of ranks 0 .. r-1 (the prefix), and
 * rank r's rows continue causally from it (linattn_d_state_causal).
 *
 * Decay (a decayed plan, gates, a head's decay): each element is the pair
 * (A, S) of the rank's rows' total log decay and their state decayed to
 * its last row, and the scan composes (A1, S1) then (A2, S2) as (A1 + A2,
 * e^{A2} S1 + S2) (mpi/reduce.c), so the prefix is the state as of the
 * row before the rank's first, which the serial call from a state ages
 * by e^{b_i} at row i.
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
#include <stdint.h>
#include "mprec.h"

/* Problem one's rows continue causally from the state s (the prefix: the
 * state as of the row before this rank's first, decayed to there), with
 * its normalizers out, key weights and gates: the serial causal call
 * from a state, which ages s by e^{b_i} at row i.  A head's own decay
 * (a batched call's extras.head_decays) only the serial batched causal
 * call takes, and a starting state only in its packed form: one packed
 * sequence of one problem. */
static int continue_from(const XI(problem) *one, X(state) *s, int64_t *row)
{
    int64_t n = one->nq;
    X(extras) ex;
    X(extras_init)(&ex);
    ex.den = XI(part_out)(one, LINATTN_I_DEN);
    ex.weights = one->part[LINATTN_I_KW].p;
    ex.gates = one->part[LINATTN_I_GATE].p;
    if (one->head_decay == 0) {
        ex.state = s;
        return X(causal_ex)(one->plan, one->layout, n,
                            MI_IN(*one, LINATTN_I_Q), MI_IN(*one, LINATTN_I_K),
                            MI_IN(*one, LINATTN_I_V),
                            MI_OUT(*one, LINATTN_I_OUT), &ex, row);
    }
    const int64_t off[2] = {0, n};
    X(state) *const states[1] = {s};
    ex.offsets = off;
    ex.nseq = 1;
    ex.states = states;
    ex.head_decays = &one->head_decay;
    linattn_strides st[4];
    for (int i = 0; i < 4; i++)
        st[i] = (linattn_strides){one->part[LINATTN_I_Q + i].s.ld, 0, 0};
    linattn_where where = {0, 0, -1};
    int status = X(batched_causal_ex)(
        one->plan, one->layout, 1, 1, n, one->part[LINATTN_I_Q].p, &st[0],
        one->part[LINATTN_I_K].p, &st[1], one->part[LINATTN_I_V].p, &st[2],
        XI(part_out)(one, LINATTN_I_OUT), &st[3], &ex, &where);
    *row = where.row;
    return status;
}

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
            if (!st)
                st = continue_from(&one, w->state, &row);
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

/* The argument position of ex in linattn_mpi_d_batched_causal_ex. */
enum { BATCHED_EX_ARG = 15 };

/* The checks of a batched _ex call's extras beyond the batched call's,
 * in the serial batched call's positions (ex 14; MI(run) moves them past
 * the communicator): the parts it takes (den, weights, gates,
 * head_decays); each problem's slice of them as the serial single
 * causal_ex checks it beside that problem's matrices (values, reserved
 * words, check_finite, den against its q, k, v, out); across problems,
 * the dense inputs apart from every out (-out) and from den, den apart
 * from every matrix (-ex); a head's decay finite and <= 0.  (The serial
 * batched forward's check, which would compare den, refuses a decayed
 * plan.)  Serial single positions map to the batched ones: q .. ldout
 * (4 .. 11) are 6 .. 13, ex (12) is 14. */
static int batched_ex_check(const X(plan) *plan, int layout, int64_t batch,
                            int64_t heads, int64_t n, const real *q,
                            const linattn_strides *sq, const real *k,
                            const linattn_strides *sk, const real *v,
                            const linattn_strides *sv, const real *out,
                            const linattn_strides *sout, const X(extras) *ex)
{
    const int arg = BATCHED_EX_ARG - 1;
    if (ex->state || ex->absorb || ex->offsets || ex->key_offsets ||
        ex->nseq || ex->states || ex->dweights || ex->dstates ||
        ex->dstate_end || ex->chunk_states)
        return -arg;
    for (int64_t h = 0; ex->head_decays && h < heads; h++)
        if (!(ex->head_decays[h] <= 0 && ex->head_decays[h] >= -DBL_MAX))
            return -arg;
    int64_t d, e, count = batch * heads;
    X(plan_dims)(plan, &d, NULL, &e);
    /* the dense parts' entries, addressable in bytes */
    if (n > 0 && count > INT64_MAX / (int64_t)sizeof(real) / n)
        return LINATTN_ESIZE;
    XI(problem) j = MI(batched_problem)(0, plan, layout, batch, heads, n, n,
                                        q, sq, k, sk, v, sv, (real *)out,
                                        sout);
    size_t dense = (size_t)(count * n) * sizeof(real);
    size_t wb = ex->weights ? dense : 0, gb = ex->gates ? dense : 0;
    size_t db = ex->den ? dense : 0;
    if (MI(meet)(ex->den, db, ex->weights, wb) ||
        MI(meet)(ex->den, db, ex->gates, gb))
        return -arg;
    for (int64_t p = 0; p < count; p++) {
        XI(problem) one = XI(problem_one)(&j, p);
        const real *o = one.part[LINATTN_I_OUT].p;
        size_t ob = MI(mat_bytes)(layout, n, e, one.part[LINATTN_I_OUT].s.ld);
        if (MI(meet)(o, ob, ex->weights, wb) || MI(meet)(o, ob, ex->gates, gb))
            return -(arg - 2); /* out, meeting an input */
        for (int i = LINATTN_I_Q; i <= LINATTN_I_OUT; i++)
            if (MI(meet)(ex->den, db, one.part[i].p,
                         MI(mat_bytes)(layout, n, i == LINATTN_I_Q ||
                                                      i == LINATTN_I_K
                                                  ? d
                                                  : e,
                                       one.part[i].s.ld)))
                return -arg;
        X(extras) slice = *ex;
        slice.head_decays = NULL;
        slice.den = ex->den ? ex->den + p * n : NULL;
        slice.weights = ex->weights ? ex->weights + p * n : NULL;
        slice.gates = ex->gates ? ex->gates + p * n : NULL;
        int st = X(causal_ex_check)(plan, layout, n, MI_IN(one, LINATTN_I_Q),
                                    MI_IN(one, LINATTN_I_K),
                                    MI_IN(one, LINATTN_I_V),
                                    MI_IN(one, LINATTN_I_OUT), &slice);
        if (st)
            return st <= -4 ? st - 2 : st;
    }
    return 0;
}

int MX(batched_causal_ex)(const X(plan) *plan, MPI_Comm comm, int layout,
                          int64_t batch, int64_t heads, int64_t n,
                          const real *q, const linattn_strides *sq,
                          const real *k, const linattn_strides *sk,
                          const real *v, const linattn_strides *sv, real *out,
                          const linattn_strides *sout, const X(extras) *ex,
                          linattn_where *bad)
{
    real *den = ex ? ex->den : NULL;
    int st = X(batched_causal_check)(plan, layout, batch, heads, n, q, sq, k,
                                     sk, v, sv, out, sout);
    if (!st && ex)
        st = batched_ex_check(plan, layout, batch, heads, n, q, sq, k, sk, v,
                              sv, out, sout, ex);
    XI(problem) j = MI(batched_problem)(st, plan, layout, batch, heads, n, n,
                                        q, sq, k, sk, v, sv, out, sout);
    if (!st && ex) {
        j.part[LINATTN_I_DEN] = XI(part_single)(den, 1);
        j.part[LINATTN_I_KW] = XI(part_single)(ex->weights, 1);
        j.part[LINATTN_I_GATE] = XI(part_single)(ex->gates, 1);
        j.head_decays = ex->head_decays;
    }
    return MI(run)(&j, comm, st, LINATTN_MPI_CALL_CAUSAL, causal_work, NULL,
                   bad);
}
