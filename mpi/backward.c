/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * backward.c -- the distributed backward: the gradients of the forward
 * calls' outputs over a sequence split across ranks, from each rank's
 * rows, with the same reductions the forward runs and one more the other
 * way (doc/mpi.md, "Training").
 *
 * With [g h]_i = [G_i / den_i, -(G_i . out_i) / den_i] and D = sum_i
 * phi(q_i) [g h]_i^T (the gradient of the state [S z] the rows read):
 *
 *   non-causal: every query reads the one global state, so its gradient
 *   is the sum of every rank's D.  Local state, one MPI_Allreduce of the
 *   states (none when the caller hands the global state over), the local
 *   query pass (linattn_d_state_query_backward: dq and this rank's D),
 *   one MPI_Allreduce of the D, then the local key pass from the sum
 *   (linattn_d_attention_backward_ex with nq = 0 and the sum as the keys'
 *   state's gradient, ex.dstate_end).  The work of the serial backward.
 *
 *   causal: key j's gradient needs D over the rows i >= j, on this rank
 *   and on every later one.  The prefix states as the forward scans them;
 *   each rank's D alone (linattn_d_causal_backward_dstates, a pass over
 *   the queries: no sweep); a reverse exclusive scan of the D in
 *   ceil(log2 P) steps gives rank r the gradient of its final state
 *   (the sum over the later ranks, which read it through their
 *   prefixes); then the serial backward from the prefix, its suffix sums
 *   seeded with that gradient (ex.dstate_end).  One query pass more than
 *   the serial backward.
 *
 * Shifts (the exponential maps): a gradient of an accumulator at shift c
 * is the true sums' gradient times exp(c), so it travels in an element
 * whose header shift is -c: the reduction's pairwise rule (the larger
 * header shift, the other scaled by a factor <= 1) then keeps the
 * smallest c, and every factor stays <= 1 (reduce.c).  The non-causal
 * D share the global state's shift and add exactly; each rank brings the
 * sum to its own keys' state's shift, which is at most the global one.
 * Causal: rank r's final state's shift is at most every later prefix's,
 * so the factor that brings the scanned sum to it is <= 1 too.
 *
 * dW and db: each rank's sum over its problems (in double), one
 * MPI_Allreduce after the final agreement says every rank succeeded,
 * then written on every rank (the same bits everywhere).
 *
 * A normalizer that breaks the plan's policy (EDENOM, found by the
 * serial checks before any work) is not agreed with the arguments: the
 * rank marks its first element failed, so every rank stops before it
 * writes anything (the non-causal calls after the state reduction; the
 * causal ones after both scans, which carry the mark both ways), and the
 * final agreement names the global row.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backward.h"
#include "attn/plan.h"

int MI(psum_open)(psum *p, const bcall *c)
{
    const XI(problem) *j = &c->j;
    memset(p, 0, sizeof *p);
    int64_t d;
    X(plan_dims)(j->plan, &d, NULL, NULL);
    X(plan_weights)(j->plan, j->layout, NULL, 0, &p->rows);
    p->d = d;
    p->layout = j->layout;
    p->ld = j->layout == LINATTN_COL_MAJOR ? p->rows : d;
    int want_dw = j->part[LINATTN_I_DW].p != NULL;
    int want_db = j->part[LINATTN_I_DB].p != NULL;
    if (!want_dw && !want_db)
        return 0;
    p->acc = calloc((size_t)(p->rows * (d + 1)) + 1, sizeof(double));
    p->dw = want_dw ? malloc((size_t)(p->rows * d + 1) * sizeof(real)) : NULL;
    p->db = want_db ? malloc((size_t)(p->rows + 1) * sizeof(real)) : NULL;
    if (!p->acc || (want_dw && !p->dw) || (want_db && !p->db))
        return LINATTN_ENOMEM;
    return 0;
}

void MI(psum_free)(psum *p)
{
    free(p->acc), free(p->dw), free(p->db);
}

/* One serial call's dW, db (in p->dw, p->db) into the sums. */
void MI(psum_add)(psum *p)
{
    for (int64_t i = 0; p->dw && i < p->rows; i++)
        for (int64_t t = 0; t < p->d; t++)
            p->acc[i * p->d + t] += (double)(p->layout == LINATTN_COL_MAJOR
                                                 ? p->dw[i + t * p->ld]
                                                 : p->dw[i * p->ld + t]);
    for (int64_t i = 0; p->db && i < p->rows; i++)
        p->acc[p->rows * p->d + i] += (double)p->db[i];
}

/* After every rank succeeded: the sums over the ranks into the caller's
 * dW and db.  0 or LINATTN_EMPI. */
int MI(psum_write)(psum *p, const bcall *c, MPI_Comm comm)
{
    const XI(problem) *j = &c->j;
    if (!p->acc)
        return 0;
    /* and a last word: the ranks whose own sums hold NaN or Inf (from
     * their inputs: their serial calls returned 0), so that a sum of
     * finite ones beyond the range is told apart and refused as a serial
     * call refuses its dW (EOVERFLOW, dW and db not written), while NaN
     * and Inf from the inputs propagate */
    int64_t len = p->rows * (p->d + 1);
    double *mark = p->acc + len;
    *mark = 0;
    for (int64_t i = 0; i < len; i++)
        *mark = isfinite(p->acc[i]) ? *mark : 1;
    if (MPI_Allreduce(MPI_IN_PLACE, p->acc, (int)len + 1, MPI_DOUBLE, MPI_SUM,
                      comm) != MPI_SUCCESS)
        return LINATTN_EMPI;
    int finite = 1;
    for (int64_t i = 0; i < len; i++)
        finite &= !LINATTN_NOT_FINITE((real)p->acc[i]);
    if (!finite && *mark == 0)
        return LINATTN_EOVERFLOW;
    real *dw = XI(part_out)(j, LINATTN_I_DW), *db = XI(part_out)(j, LINATTN_I_DB);
    for (int64_t i = 0; dw && i < p->rows; i++)
        for (int64_t t = 0; t < p->d; t++) {
            real x = (real)p->acc[i * p->d + t];
            if (j->layout == LINATTN_COL_MAJOR)
                dw[i + t * c->lddw] = x;
            else
                dw[i * c->lddw + t] = x;
        }
    for (int64_t i = 0; db && i < p->rows; i++)
        db[i] = (real)p->acc[p->rows * p->d + i];
    return 0;
}

/* Problem i's state element in el (tmp: one element of scratch): its
 * keys' state with their weights and, causal, their decay (the rows'
 * total log decay in the header, as the forward's scan composes it;
 * skip: an empty one), marked failed when this rank's checks found a bad
 * normalizer (so that every rank stops) or when the state could not be
 * built (the first such failure into *status, *first). */
static void local_element(const bcall *c, MI(work) *w, int64_t i, int skip,
                          double *el, double *tmp, int *status,
                          int64_t *first)
{
    const XI(problem) *j = &c->j;
    XI(problem) one = XI(problem_one)(j, i);
    int st = skip ? 0 : MI(keys_element)(w, &one, NULL, 0, j->nk, el, tmp);
    unsigned flags = MI(status_flags)(st);
    if (flags == LINATTN_MPI_F_FAIL && !*status)
        *status = st, *first = i;
    if (c->denom && i == 0)
        flags |= LINATTN_MPI_F_FAIL;
    if (skip || st) { /* an empty element carries the marks */
        X(state_reset)(w->state);
        MI(pack)(w->state, w->len, flags & LINATTN_MPI_F_FAIL ? 0 : flags, el);
    }
    el[LINATTN_MPI_E_FLAGS] = (double)(linattn_mpi_i_flags(el) | flags);
}

/* Entry (r, col) of part i of problem one, in double. */
static double entry(const XI(problem) *one, int i, int64_t r, int64_t col)
{
    const XI(part) *a = &one->part[i];
    return (double)(one->layout == LINATTN_COL_MAJOR ? a->p[r + col * a->s.ld]
                                                     : a->p[r * a->s.ld + col]);
}

/* The log decay a_t of row t of problem one: the plan's, the head's and
 * the row's gate. */
static double row_decay(const XI(problem) *one, int64_t t)
{
    double a = 0;
    const real *g = one->part[LINATTN_I_GATE].p;
    X(plan_decay)(one->plan, &a);
    return a + one->head_decay + (g ? (double)g[t] : 0);
}

/* Under LINATTN_DENOM_COUNT the normalizer den_i is the decayed count,
 * which the later ranks' rows read through this rank's final count c_end:
 * dL/dc_end = R = sum over their rows k of exp(B_k - B_end) hc_k, hc_k =
 * dL/dden_k = -(G_k . out_k) / den_k.  R travels in the gradient
 * elements' count slot (E_MASS), composed by the reverse scan as the
 * counts are by the forward's (R = m_{r+1} + e^{A_{r+1}} m_{r+2} + ...),
 * each rank's m = sum_i exp(b_i) hc_i over its rows (b_i its running log
 * decay from its first row).  The serial backward sees no count beyond
 * its rows: MI(count_share) adds R's share of dL/da_t (below). */
double MI(count_mass)(const XI(problem) *one, int64_t n)
{
    double m = 0, b = 0;
    int64_t e = 0;
    X(plan_dims)(one->plan, NULL, NULL, &e);
    for (int64_t i = 0; i < n; i++) {
        double dot = 0;
        for (int64_t col = 0; col < e; col++)
            dot += entry(one, LINATTN_I_G, i, col) *
                   entry(one, LINATTN_I_OUT, i, col);
        b += row_decay(one, i);
        m += exp(b) * (-dot / (double)one->part[LINATTN_I_DEN].p[i]);
    }
    return m;
}

/* R's share of dL/da_t, t the rows of problem one (a sequence's rows
 * here, up to its final state): c_end = exp(A) c_0 + sum_j w_j exp(B_end
 * - B_j) moves with a_t through every term but the keys j >= t, so
 * dL/da_t gains R (c_end - kappa_t), kappa_t = sum_{j >= t} w_j exp(B_end
 * - B_j).  Nonzero when finite values and their share sum beyond the
 * range. */
int MI(count_share)(const XI(problem) *one, int64_t n, double cend,
                    double r)
{
    real *dg = XI(part_out)(one, LINATTN_I_DGATE);
    const real *w = one->part[LINATTN_I_KW].p;
    double kappa = 0, after = 0; /* after: B_end - B_t */
    int bad = 0;
    for (int64_t t = n - 1; t >= 0; t--) {
        double wt = w ? (double)w[t] : 1;
        kappa += wt != 0 ? wt * exp(after) : 0;
        after += row_decay(one, t);
        double add = r * (cend - kappa);
        real was = dg[t];
        dg[t] = (real)((double)was + add);
        /* finite values whose sum leaves the range (NaN and Inf from the
         * inputs propagate) */
        bad |= !LINATTN_NOT_FINITE(was) && isfinite(add) &&
               LINATTN_NOT_FINITE(dg[t]);
    }
    return bad;
}

int MI(causal_rows)(const XI(problem) *one, const X(extras) *ex, psum *ps,
                    int64_t *r)
{
    int st = X(causal_backward_ex)(
        one->plan, one->layout, one->nq, MI_IN(*one, LINATTN_I_Q),
        MI_IN(*one, LINATTN_I_K), MI_IN(*one, LINATTN_I_V),
        MI_IN(*one, LINATTN_I_OUT), one->part[LINATTN_I_DEN].p,
        MI_IN(*one, LINATTN_I_G), MI_OUT(*one, LINATTN_I_DQ),
        MI_OUT(*one, LINATTN_I_DK), MI_OUT(*one, LINATTN_I_DV), ps->dw,
        ps->ld, ps->db, ex, r);
    if (!st && ps->acc)
        MI(psum_add)(ps);
    return st;
}

int MI(finish)(const bcall *c, MPI_Comm comm, psum *ps, int status,
               int64_t first, int64_t row, int64_t rows_here,
               int64_t *problem, int64_t *grow)
{
    int agreed = linattn_mpi_i_agree_final(comm, status, first, row,
                                           rows_here, problem, grow);
    if (!agreed)
        agreed = MI(psum_write)(ps, c, comm);
    MI(psum_free)(ps);
    return agreed;
}

static int attention_backward_work(const XI(problem) *jp, MPI_Comm comm,
                                   MI(work) *w, int64_t *problem,
                                   int64_t *grow)
{
    const bcall *c = (const bcall *)jp;
    const XI(problem) *j = &c->j;
    int64_t np = MI(problems)(j), first = -1, row = -1, len = w->len;
    int status = 0;
    psum ps;
    int pst = MI(psum_open)(&ps, c);
    /* 1. the keys' states: kept (suffix) for their shifts, summed (elems)
     * unless the global one is handed over (then only their count) */
    for (int64_t i = 0; i < np; i++) {
        double *el = MI(elem)(w, w->suffix, i);
        local_element(c, w, i, 0, el, w->recv ? MI(elem)(w, w->recv, 0) : NULL,
                      &status, &first);
        if (pst && i == 0)
            el[LINATTN_MPI_E_FLAGS] =
                (double)(linattn_mpi_i_flags(el) | LINATTN_MPI_F_FAIL);
        memcpy(MI(elem)(w, w->elems, i), el,
               (size_t)(LINATTN_MPI_HEAD + len) * sizeof(double));
    }
    if (pst && !status)
        status = pst, first = 0;
    int failed;
    if (c->given) {
        /* every rank's keys must be the handed state's: their count */
        int64_t mine[2] = {linattn_mpi_i_elem_tokens(w->elems),
                           MI(any_failed)(w, w->elems, np)}, all[2];
        if (MPI_Allreduce(mine, all, 2, MPI_INT64_T, MPI_SUM, comm) !=
            MPI_SUCCESS) {
            MI(psum_free)(&ps);
            return LINATTN_EMPI;
        }
        int64_t tokens = 0;
        X(state_get)(c->given, LINATTN_ROW_MAJOR, NULL, 0, NULL, &tokens);
        failed = all[1] != 0;
        if (!failed && all[0] != tokens)
            status = -26, first = 0, failed = 1; /* the same on every rank */
    } else {
        if (np > 0 && linattn_mpi_i_allreduce(comm, w->elems, np, len)) {
            MI(psum_free)(&ps);
            return LINATTN_EMPI;
        }
        failed = MI(any_failed)(w, w->elems, np);
    }
    if (c->denom && !status)
        status = c->denom, first = c->denom_problem, row = c->denom_row;
    /* 2. the queries: dq and this rank's D at the global state's shift */
    for (int64_t i = 0; !failed && i < np; i++) {
        XI(problem) one = XI(problem_one)(j, i);
        const double *el = MI(elem)(w, w->elems, i);
        double *d = MI(elem)(w, w->back, i);
        const X(state) *g = c->given ? c->given : w->state;
        int st = 0;
        int64_t r = -1, tokens = 0;
        if (!c->given && MI(overflowed)(el))
            st = LINATTN_EOVERFLOW, r = 0; /* as the forward: query row 0 */
        else if (!c->given)
            st = MI(unpack)(w->state, el, 0);
        double cg = st ? 0 : MI(shift_of)(g, &tokens);
        if (!st)
            st = X(state_query_backward)(g, j->layout, j->nq,
                                         MI_IN(one, LINATTN_I_Q),
                                         MI_IN(one, LINATTN_I_OUT),
                                         one.part[LINATTN_I_DEN].p,
                                         MI_IN(one, LINATTN_I_G),
                                         MI_OUT(one, LINATTN_I_DQ), ps.dw,
                                         ps.ld, ps.db, d + LINATTN_MPI_HEAD,
                                         &r);
        if (st)
            memset(d + LINATTN_MPI_HEAD, 0, (size_t)len * sizeof(double));
        else if (ps.acc)
            MI(psum_add)(&ps);
        MI(gradient_head)(d, len, cg, tokens > 0, st);
        MI(note)(st, i, r, &status, &first, &row);
    }
    /* 3. the sum of every rank's D (the same shift everywhere: exact) */
    if (!failed && np > 0 && linattn_mpi_i_allreduce(comm, w->back, np, len)) {
        MI(psum_free)(&ps);
        return LINATTN_EMPI;
    }
    failed = failed || MI(any_failed)(w, w->back, np);
    /* 4. the keys, from the sum at their own state's shift */
    for (int64_t i = 0; !failed && !status && i < np && j->nk > 0; i++) {
        XI(problem) one = XI(problem_one)(j, i);
        double *d = MI(elem)(w, w->back, i), *dg = d + LINATTN_MPI_HEAD;
        const double *lel = MI(elem)(w, w->suffix, i);
        /* this rank's own keys' sums overflowed (their element is empty):
         * the serial call refuses them as its state build does */
        int st = linattn_mpi_i_flags(lel) & LINATTN_MPI_F_OVER
                     ? LINATTN_EOVERFLOW
                     : MI(unpack)(w->state, lel, 0);
        int64_t tokens = 0;
        double cl = st ? 0 : MI(shift_of)(w->state, &tokens);
        if (linattn_mpi_i_flags(d) & LINATTN_MPI_F_OVER)
            st = LINATTN_EOVERFLOW;
        if (!st && tokens > 0 && linattn_mpi_i_elem_tokens(d) > 0) {
            double f = exp(cl + d[LINATTN_MPI_E_SHIFT]); /* <= 1 */
            for (int64_t t = 0; f != 1 && t < len; t++)
                dg[t] *= f;
        }
        X(extras) ex = MI(grad_extras)(&one);
        ex.dstate_end = dg;
        int64_t r = -1;
        if (!st)
            st = X(attention_backward_ex)(
                j->plan, j->layout, 0, j->nk, MI_IN(one, LINATTN_I_Q),
                MI_IN(one, LINATTN_I_K), MI_IN(one, LINATTN_I_V),
                MI_IN(one, LINATTN_I_OUT), one.part[LINATTN_I_DEN].p,
                MI_IN(one, LINATTN_I_G), MI_OUT(one, LINATTN_I_DQ),
                MI_OUT(one, LINATTN_I_DK), MI_OUT(one, LINATTN_I_DV), ps.dw,
                ps.ld, ps.db, w->state, &ex, &r);
        if (!st && ps.acc)
            MI(psum_add)(&ps);
        /* a row of dk or dv is not a query row: no global row to name */
        MI(note)(st, i, -1, &status, &first, &row);
    }
    return MI(finish)(c, comm, &ps, status, first, row, j->nq, problem,
                      grow);
}

static int causal_backward_work(const XI(problem) *jp, MPI_Comm comm,
                                MI(work) *w, int64_t *problem, int64_t *grow)
{
    const bcall *c = (const bcall *)jp;
    const XI(problem) *j = &c->j;
    int rank, size;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return LINATTN_EMPI;
    int64_t np = MI(problems)(j), first = -1, row = -1, len = w->len;
    int64_t n = j->nq;
    int status = 0, count = j->plan->denom == LINATTN_DENOM_COUNT;
    psum ps;
    int pst = MI(psum_open)(&ps, c);
    /* 1. the prefix states, as the forward scans them; each local state's
     * shift and keys kept (suffix's headers) for the final state's */
    for (int64_t i = 0; i < np; i++) {
        double *el = MI(elem)(w, w->elems, i);
        local_element(c, w, i, rank == size - 1, el,
                      w->recv ? MI(elem)(w, w->recv, 0) : NULL, &status, &first);
        if (pst && i == 0)
            el[LINATTN_MPI_E_FLAGS] =
                (double)(linattn_mpi_i_flags(el) | LINATTN_MPI_F_FAIL);
        memcpy(MI(elem)(w, w->suffix, i), el,
               LINATTN_MPI_HEAD * sizeof(double));
    }
    if (pst && !status)
        status = pst, first = 0;
    if (np > 0 && linattn_mpi_i_exscan(w->scan_comm, w->elems, w->prefix,
                                       w->recv, np, len)) {
        MI(psum_free)(&ps);
        return LINATTN_EMPI;
    }
    if (c->denom && !status)
        status = c->denom, first = c->denom_problem, row = c->denom_row;
    /* a failure here or before (in the prefix): this rank writes nothing,
     * and its gradient elements carry the mark to the earlier ranks */
    int stop = status != 0 || MI(any_failed)(w, w->prefix, np);
    double *lhead = malloc((size_t)(np > 0 ? np : 1) * LINATTN_MPI_HEAD *
                           sizeof(double));
    if (!lhead && !stop)
        status = LINATTN_ENOMEM, first = 0, stop = 1;
    for (int64_t i = 0; lhead && i < np; i++)
        memcpy(lhead + i * LINATTN_MPI_HEAD, MI(elem)(w, w->suffix, i),
               LINATTN_MPI_HEAD * sizeof(double));
    /* 2. each problem's D over this rank's rows, the gradient of its
     * prefix's accumulator */
    for (int64_t i = 0; i < np; i++) {
        XI(problem) one = XI(problem_one)(j, i);
        const double *pre = MI(elem)(w, w->prefix, i);
        double *d = MI(elem)(w, w->back, i);
        int st = stop ? LINATTN_ENOMEM : 0; /* a mark, not a status here */
        int64_t r = -1, tokens = 0;
        /* rank 0's D would reach no one (as the last rank's state) */
        int none = !st && rank == 0;
        if (none) {
            memset(d, 0, (size_t)(LINATTN_MPI_HEAD + len) * sizeof(double));
            MI(gradient_head)(d, len, 0, 0, 0);
            continue;
        }
        if (!st && MI(overflowed)(pre))
            st = n > 0 ? LINATTN_EOVERFLOW : 0, r = 0;
        else if (!st)
            st = MI(unpack)(w->state, pre, n);
        double cp = st ? 0 : MI(shift_of)(w->state, &tokens);
        if (!st) {
            X(extras) ex;
            X(extras_init)(&ex);
            ex.weights = one.part[LINATTN_I_KW].p;
            ex.gates = one.part[LINATTN_I_GATE].p;
            ex.state = w->state;
            ex.dstates = d + LINATTN_MPI_HEAD;
            st = X(causal_backward_dstates)(j->plan, j->layout, n,
                                            MI_IN(one, LINATTN_I_Q),
                                            MI_IN(one, LINATTN_I_K),
                                            MI_IN(one, LINATTN_I_OUT),
                                            one.part[LINATTN_I_DEN].p,
                                            MI_IN(one, LINATTN_I_G), &ex, &r);
        }
        if (st)
            memset(d + LINATTN_MPI_HEAD, 0, (size_t)len * sizeof(double));
        MI(gradient_head)(d, len, cp, tokens > 0, st);
        /* the reverse scan decays the later ranks' D by this rank's rows'
         * total log decay, as the forward's scan decays the states */
        d[LINATTN_MPI_E_DECAY] = st ? 0 : MI(decay_total)(&one, 0, n);
        d[LINATTN_MPI_E_MASS] = !st && count ? MI(count_mass)(&one, n) : 0;
        if (!stop)
            MI(note)(st, i, r, &status, &first, &row);
    }
    /* 3. the later ranks' D: the gradient of this rank's final state */
    if (np > 0 && linattn_mpi_i_segmented_exscan(w->scan_comm, 1, w->back,
                                                 w->suffix, w->recv, np,
                                                 len)) {
        free(lhead);
        MI(psum_free)(&ps);
        return LINATTN_EMPI;
    }
    stop = stop || status != 0 || MI(any_failed)(w, w->suffix, np);
    /* 4. the serial backward from the prefix, the suffix sums seeded */
    for (int64_t i = 0; !stop && i < np; i++) {
        XI(problem) one = XI(problem_one)(j, i);
        double *e = MI(elem)(w, w->suffix, i), *de = e + LINATTN_MPI_HEAD;
        const double *lh = lhead + i * LINATTN_MPI_HEAD;
        int st = MI(unpack)(w->state, MI(elem)(w, w->prefix, i), n);
        int64_t tokens = 0, ltok = linattn_mpi_i_elem_tokens(lh);
        double cp = st ? 0 : MI(shift_of)(w->state, &tokens);
        int64_t r = -1;
        /* the later rows' sums left the range: every key here reads them,
         * its first token's dk first */
        if (linattn_mpi_i_flags(e) & LINATTN_MPI_F_OVER)
            st = LINATTN_EOVERFLOW, r = 0;
        /* the final state (prefix and local keys): its shift is the larger
         * of the two that hold keys; no keys, no gradient to take */
        int held = tokens > 0 || ltok > 0;
        double cl = lh[LINATTN_MPI_E_SHIFT];
        double cend = tokens > 0 && ltok > 0 ? (cp > cl ? cp : cl)
                      : tokens > 0           ? cp
                                             : cl;
        int seed = held && linattn_mpi_i_elem_tokens(e) > 0;
        if (seed) {
            double f = exp(cend + e[LINATTN_MPI_E_SHIFT]); /* <= 1 */
            for (int64_t t = 0; f != 1 && t < len; t++)
                de[t] *= f;
        }
        X(extras) ex = MI(grad_extras)(&one);
        ex.state = w->state;
        ex.dstate_end = seed ? de : NULL;
        if (!st)
            st = MI(causal_rows)(&one, &ex, &ps, &r);
        /* the later ranks' rows read this rank's count too */
        double rc = e[LINATTN_MPI_E_MASS];
        double count_end = exp(lh[LINATTN_MPI_E_DECAY]) *
                               MI(elem)(w, w->prefix, i)[LINATTN_MPI_E_MASS] +
                           lh[LINATTN_MPI_E_MASS];
        if (!st && count && ex.dgates && rc != 0 &&
            MI(count_share)(&one, n, count_end, rc))
            st = LINATTN_EOVERFLOW, r = -1;
        MI(note)(st, i, r, &status, &first, &row);
    }
    free(lhead);
    return MI(finish)(c, comm, &ps, status, first, row, n, problem, grow);
}

/* The kind of a call with its options. */
static int kind_of(int call, const XI(problem) *j, int given)
{
    return call | (j->part[LINATTN_I_DW].p ? OPT_DW : 0) |
           (j->part[LINATTN_I_DB].p ? OPT_DB : 0) | (given ? OPT_STATE : 0) |
           (j->dstates ? OPT_DSTATES : 0);
}

/* A call after its local checks (st, serial positions; EDENOM with its
 * row: agreed after the first reduction, see above). */
static int run(bcall *c, MPI_Comm comm, int st, int call, MI(work_fn) f,
               int64_t *bad_row, linattn_where *bad)
{
    if (st == LINATTN_EDENOM)
        c->denom = st, st = 0;
    st = MI(run)(&c->j, comm, st, kind_of(call, &c->j, c->given != NULL), f,
                 bad_row, bad);
    if (st == LINATTN_EOVERFLOW && bad_row && *bad_row < 0)
        *bad_row = -1;
    if (st == LINATTN_EOVERFLOW && bad && bad->row < 0)
        bad->row = -1;
    return st;
}

/* The parts of a single backward call beyond Q, K, V, out. */
static void single_grads(XI(problem) *j, const real *den, const real *g,
                         int64_t ldg, real *dq, int64_t lddq, real *dk,
                         int64_t lddk, real *dv, int64_t lddv, real *dw,
                         int64_t lddw, real *db, const X(extras) *ex)
{
    j->part[LINATTN_I_DEN] = XI(part_single)(den, 1);
    j->part[LINATTN_I_G] = XI(part_single)(g, ldg);
    j->part[LINATTN_I_DQ] = XI(part_single)(dq, lddq);
    j->part[LINATTN_I_DK] = XI(part_single)(dk, lddk);
    j->part[LINATTN_I_DV] = XI(part_single)(dv, lddv);
    j->part[LINATTN_I_DW] = XI(part_single)(dw, lddw);
    j->part[LINATTN_I_DB] = XI(part_single)(db, 1);
    if (ex) {
        j->part[LINATTN_I_KW] = XI(part_single)(ex->weights, 1);
        j->part[LINATTN_I_DKW] = XI(part_single)(ex->dweights, 1);
        j->part[LINATTN_I_GATE] = XI(part_single)(ex->gates, 1);
        j->part[LINATTN_I_DGATE] = XI(part_single)(ex->dgates, 1);
    }
}

/* The extras a distributed backward takes: key weights and dL/dw, gates
 * and dL/da (the causal calls: the serial checks refuse them elsewhere),
 * and a packed stream (offsets; causal: per-sequence starting states and
 * their gradients), checked apart (packed_fields). */
static int ex_taken(const X(extras) *ex)
{
    return !ex || (!ex->key_offsets && !ex->state && !ex->dstate_end &&
                   !ex->den && !ex->absorb && !ex->head_decays &&
                   !ex->chunk_states);
}

/* ex as the serial checks see it: a packed stream's offsets, states and
 * their gradients are global (every rank's rows), checked apart. */
static const X(extras) *serial_view(const X(extras) *ex, X(extras) *copy)
{
    if (!ex || !ex->offsets)
        return ex;
    *copy = *ex;
    copy->offsets = NULL;
    copy->nseq = 0;
    copy->states = NULL;
    copy->dstates = NULL;
    return copy;
}

/* A byte range of an argument. */
typedef struct {
    const void *p;
    size_t n;
} span;

/* Part i of single problem j as a byte range (its rows rows, cols
 * columns; a vector's rows entries). */
static span part_span(const XI(problem) *j, int i, int64_t rows,
                      int64_t cols)
{
    const XI(part) *a = &j->part[i];
    if (!a->p || rows == 0)
        return (span){NULL, 0};
    if (linattn_i_part_is_vector(i) || i == LINATTN_I_DB)
        return (span){a->p, (size_t)rows * sizeof(real)};
    return (span){a->p, MI(mat_bytes)(j->layout, rows, cols, a->s.ld)};
}

/* Nonzero when x meets any of the count ranges of set. */
static int meets(span x, const span *set, int count)
{
    for (int i = 0; i < count; i++)
        if (MI(meet)(x.p, x.n, set[i].p, set[i].n))
            return 1;
    return 0;
}

/* The packed stream's parts of ex (the serial checks saw ex without
 * them; j holds the call's other parts): the offsets as the packed
 * forward takes them (nq == nk, from 0 without decreasing; their end is
 * checked once the ranks' rows are summed), and causal only the
 * sequences' starting states (every one of the plan; absorb is refused
 * already) and their gradients (dstates: nseq m (e + 1) doubles, with
 * states); the offsets and the states' array apart from every output,
 * dstates apart from every array; not with a handed state.  0, -arg or
 * LINATTN_ENOMEM. */
static int packed_fields(const XI(problem) *j, const X(extras) *ex,
                         int causal, int handed, int arg)
{
    if (!ex || !ex->offsets)
        return 0;
    if (!MI(offsets_ok)(ex, j->nq, j->nk) || handed ||
        (!causal && (ex->states || ex->dstates)) ||
        (ex->dstates && !ex->states))
        return -arg;
    int64_t d, m, e, rows = 0;
    X(plan_dims)(j->plan, &d, &m, &e);
    X(plan_weights)(j->plan, j->layout, NULL, 0, &rows);
    if (ex->dstates && (uint64_t)ex->nseq > SIZE_MAX / sizeof(double) /
                                                (uint64_t)(m * (e + 1)))
        return -arg;
    int64_t nq = j->nq, nk = j->nk;
    span out[6] = {part_span(j, LINATTN_I_DQ, nq, d),
                   part_span(j, LINATTN_I_DK, nk, d),
                   part_span(j, LINATTN_I_DV, nk, e),
                   part_span(j, LINATTN_I_DW, rows, d),
                   part_span(j, LINATTN_I_DB, rows, 1),
                   part_span(j, LINATTN_I_DKW, nk, 1)};
    span all[15] = {part_span(j, LINATTN_I_Q, nq, d),
                    part_span(j, LINATTN_I_K, nk, d),
                    part_span(j, LINATTN_I_V, nk, e),
                    part_span(j, LINATTN_I_OUT, nq, e),
                    part_span(j, LINATTN_I_DEN, nq, 1),
                    part_span(j, LINATTN_I_G, nq, e),
                    part_span(j, LINATTN_I_KW, nk, 1),
                    {ex->offsets, (size_t)(ex->nseq + 1) * sizeof(int64_t)},
                    {ex->states, ex->states ? (size_t)ex->nseq *
                                                  sizeof *ex->states
                                            : 0}};
    memcpy(all + 9, out, sizeof out);
    span ds = {ex->dstates, ex->dstates ? (size_t)(ex->nseq * m * (e + 1)) *
                                              sizeof(double)
                                        : 0};
    if (meets(all[7], out, 6) || meets(all[8], out, 6) ||
        meets(ds, all, 15))
        return -arg;
    return ex->states ? MI(states_ok)(j->plan, ex, arg) : 0;
}

/* A single call's problem after its local checks st (the extras at
 * argument ex_arg, serial positions): the extras' parts it does not take
 * refused, then the problem's parts unless the checks failed, then a
 * packed stream's parts (an argument's refusal before a normalizer's,
 * as the validator orders them). */
static int describe(bcall *c, int st, const X(plan) *plan, int layout,
                    int64_t nq, int64_t nk, const real *q, int64_t ldq,
                    const real *k, int64_t ldk, const real *v, int64_t ldv,
                    const real *out, int64_t ldout, const real *den,
                    const real *g, int64_t ldg, real *dq, int64_t lddq,
                    real *dk, int64_t lddk, real *dv, int64_t lddv, real *dw,
                    int64_t lddw, real *db, const X(extras) *ex, int ex_arg,
                    int causal)
{
    int ok = !st || st == LINATTN_EDENOM;
    if (ok && !ex_taken(ex))
        st = -ex_arg, ok = 0;
    c->lddw = lddw;
    c->j = MI(problem)(plan, layout, 1, 1, nq, nk);
    XI(problem_qkvo)(&c->j, q, ldq, k, ldk, v, ldv, out, ldout);
    if (ok)
        single_grads(&c->j, den, g, ldg, dq, lddq, dk, lddk, dv, lddv, dw,
                     lddw, db, ex);
    int pf = ok ? packed_fields(&c->j, ex, causal, c->given != NULL, ex_arg)
                : 0;
    if (pf)
        return pf;
    if (ok && ex && ex->offsets) {
        c->j.nseq = ex->nseq;
        c->j.qoff = c->j.koff = ex->offsets;
        c->j.states = ex->states;
        c->j.dstates = ex->dstates;
    }
    return st;
}

int MX(attention_backward_ex)(const X(plan) *plan, MPI_Comm comm, int layout,
                              int64_t nq, int64_t nk, const real *q,
                              int64_t ldq, const real *k, int64_t ldk,
                              const real *v, int64_t ldv, const real *out,
                              int64_t ldout, const real *den, const real *g,
                              int64_t ldg, real *dq, int64_t lddq, real *dk,
                              int64_t lddk, real *dv, int64_t lddv, real *dw,
                              int64_t lddw, real *db, const X(state) *state,
                              const X(extras) *ex, int64_t *bad_row)
{
    bcall c;
    memset(&c, 0, sizeof c);
    X(extras) view;
    /* the handed state holds every rank's keys: checked against the plan
     * here, against their count once the ranks have agreed */
    int st = X(attention_backward_check)(plan, layout, nq, nk, q, ldq, k,
                                         ldk, v, ldv, out, ldout, den, g, ldg,
                                         dq, lddq, dk, lddk, dv, lddv, dw,
                                         lddw, db, NULL,
                                         serial_view(ex, &view),
                                         &c.denom_row);
    X(state) *copy = NULL;
    if ((!st || st == LINATTN_EDENOM) && state) {
        if (X(state_create)(&copy, plan))
            st = LINATTN_ENOMEM;
        else if (X(state_copy)(copy, state))
            st = -25;
    }
    c.given = copy;
    st = describe(&c, st, plan, layout, nq, nk, q, ldq, k, ldk, v, ldv, out,
                  ldout, den, g, ldg, dq, lddq, dk, lddk, dv, lddv, dw, lddw,
                  db, ex, 26, 0);
    st = run(&c, comm, st, LINATTN_MPI_CALL_ATTENTION_BACKWARD,
             c.j.qoff ? MI(attention_backward_packed) : attention_backward_work,
             bad_row, NULL);
    X(state_destroy)(copy);
    return st;
}

int MX(attention_backward)(const X(plan) *plan, MPI_Comm comm, int layout,
                           int64_t nq, int64_t nk, const real *q, int64_t ldq,
                           const real *k, int64_t ldk, const real *v,
                           int64_t ldv, const real *out, int64_t ldout,
                           const real *den, const real *g, int64_t ldg,
                           real *dq, int64_t lddq, real *dk, int64_t lddk,
                           real *dv, int64_t lddv, real *dw, int64_t lddw,
                           real *db, const X(state) *state, int64_t *bad_row)
{
    return MX(attention_backward_ex)(plan, comm, layout, nq, nk, q, ldq, k,
                                     ldk, v, ldv, out, ldout, den, g, ldg, dq,
                                     lddq, dk, lddk, dv, lddv, dw, lddw, db,
                                     state, NULL, bad_row);
}

int MX(causal_backward_ex)(const X(plan) *plan, MPI_Comm comm, int layout,
                           int64_t n, const real *q, int64_t ldq,
                           const real *k, int64_t ldk, const real *v,
                           int64_t ldv, const real *out, int64_t ldout,
                           const real *den, const real *g, int64_t ldg,
                           real *dq, int64_t lddq, real *dk, int64_t lddk,
                           real *dv, int64_t lddv, real *dw, int64_t lddw,
                           real *db, const X(extras) *ex, int64_t *bad_row)
{
    bcall c;
    memset(&c, 0, sizeof c);
    X(extras) view;
    int st = X(causal_backward_check)(plan, layout, n, q, ldq, k, ldk, v, ldv,
                                      out, ldout, den, g, ldg, dq, lddq, dk,
                                      lddk, dv, lddv, dw, lddw, db,
                                      serial_view(ex, &view), &c.denom_row);
    st = describe(&c, st, plan, layout, n, n, q, ldq, k, ldk, v, ldv, out,
                  ldout, den, g, ldg, dq, lddq, dk, lddk, dv, lddv, dw, lddw,
                  db, ex, 24, 1);
    return run(&c, comm, st, LINATTN_MPI_CALL_CAUSAL_BACKWARD,
               c.j.qoff ? MI(causal_backward_packed) : causal_backward_work,
               bad_row, NULL);
}

int MX(causal_backward)(const X(plan) *plan, MPI_Comm comm, int layout,
                        int64_t n, const real *q, int64_t ldq, const real *k,
                        int64_t ldk, const real *v, int64_t ldv,
                        const real *out, int64_t ldout, const real *den,
                        const real *g, int64_t ldg, real *dq, int64_t lddq,
                        real *dk, int64_t lddk, real *dv, int64_t lddv,
                        real *dw, int64_t lddw, real *db, int64_t *bad_row)
{
    return MX(causal_backward_ex)(plan, comm, layout, n, q, ldq, k, ldk, v,
                                  ldv, out, ldout, den, g, ldg, dq, lddq, dk,
                                  lddk, dv, lddv, dw, lddw, db, NULL,
                                  bad_row);
}

/* A batched call's problem after its local checks st, and its EDENOM's
 * place (where). */
static int describe_batched(bcall *c, int st, const linattn_where *where,
                            const X(plan) *plan, int layout, int64_t batch,
                            int64_t heads, int64_t nq, int64_t nk,
                            const real *q, const linattn_strides *sq,
                            const real *k, const linattn_strides *sk,
                            const real *v, const linattn_strides *sv,
                            const real *out, const linattn_strides *sout,
                            const real *den, const real *g,
                            const linattn_strides *sg, real *dq,
                            const linattn_strides *sdq, real *dk,
                            const linattn_strides *sdk, real *dv,
                            const linattn_strides *sdv, real *dw,
                            int64_t lddw, real *db)
{
    int ok = !st || st == LINATTN_EDENOM;
    c->lddw = lddw;
    if (st == LINATTN_EDENOM) {
        c->denom_problem = where->batch * heads + where->head;
        c->denom_row = where->row;
    }
    c->j = MI(batched_problem)(ok ? 0 : st, plan, layout, batch, heads, nq,
                               nk, q, sq, k, sk, v, sv, (real *)out, sout);
    if (ok) {
        XI(problem) *j = &c->j;
        j->part[LINATTN_I_DEN] = XI(part_single)(den, 1);
        j->part[LINATTN_I_G] = XI(part_batched)(g, sg);
        j->part[LINATTN_I_DQ] = XI(part_batched)(dq, sdq);
        j->part[LINATTN_I_DK] = XI(part_batched)(dk, sdk);
        j->part[LINATTN_I_DV] = XI(part_batched)(dv, sdv);
        j->part[LINATTN_I_DW] = XI(part_single)(dw, lddw);
        j->part[LINATTN_I_DB] = XI(part_single)(db, 1);
    }
    return st;
}

int MX(batched_attention_backward)(const X(plan) *plan, MPI_Comm comm,
        int layout, int64_t batch, int64_t heads, int64_t nq, int64_t nk,
        const real *q, const linattn_strides *sq, const real *k,
        const linattn_strides *sk, const real *v, const linattn_strides *sv,
        const real *out, const linattn_strides *sout, const real *den,
        const real *g, const linattn_strides *sg, real *dq,
        const linattn_strides *sdq, real *dk, const linattn_strides *sdk,
        real *dv, const linattn_strides *sdv, real *dw, int64_t lddw,
        real *db, linattn_where *bad)
{
    bcall c;
    memset(&c, 0, sizeof c);
    linattn_where where = {0, 0, -1};
    int st = X(batched_attention_backward_check)(
        plan, layout, batch, heads, nq, nk, q, sq, k, sk, v, sv, out, sout,
        den, g, sg, dq, sdq, dk, sdk, dv, sdv, dw, lddw, db, &where);
    st = describe_batched(&c, st, &where, plan, layout, batch, heads, nq, nk,
                          q, sq, k, sk, v, sv, out, sout, den, g, sg, dq, sdq,
                          dk, sdk, dv, sdv, dw, lddw, db);
    return run(&c, comm, st, LINATTN_MPI_CALL_ATTENTION_BACKWARD,
               attention_backward_work, NULL, bad);
}

int MX(batched_causal_backward)(const X(plan) *plan, MPI_Comm comm,
        int layout, int64_t batch, int64_t heads, int64_t n, const real *q,
        const linattn_strides *sq, const real *k, const linattn_strides *sk,
        const real *v, const linattn_strides *sv, const real *out,
        const linattn_strides *sout, const real *den, const real *g,
        const linattn_strides *sg, real *dq, const linattn_strides *sdq,
        real *dk, const linattn_strides *sdk, real *dv,
        const linattn_strides *sdv, real *dw, int64_t lddw, real *db,
        linattn_where *bad)
{
    bcall c;
    memset(&c, 0, sizeof c);
    linattn_where where = {0, 0, -1};
    int st = X(batched_causal_backward_check)(
        plan, layout, batch, heads, n, q, sq, k, sk, v, sv, out, sout, den, g,
        sg, dq, sdq, dk, sdk, dv, sdv, dw, lddw, db, &where);
    st = describe_batched(&c, st, &where, plan, layout, batch, heads, n, n, q,
                          sq, k, sk, v, sv, out, sout, den, g, sg, dq, sdq,
                          dk, sdk, dv, sdv, dw, lddw, db);
    return run(&c, comm, st, LINATTN_MPI_CALL_CAUSAL_BACKWARD,
               causal_backward_work, NULL, bad);
}
