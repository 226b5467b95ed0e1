/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * packed_backward.c -- the distributed backward of a packed stream:
 * linattn_mpi_d_attention_backward_ex and _causal_backward_ex with
 * global offsets, each rank holding a contiguous block of the stream as
 * the packed forward does (mpi/packed.c), sequences starting, ending and
 * lying inside ranks or crossing several.
 *
 * A rank's rows fall into its first sequence (the one open at its first
 * row: rows [0, fe)), the sequences wholly inside it, and its last one
 * (open at its last row: rows [ls, n)), the first and the last being one
 * when no boundary lies inside.  Only the first and the last reach other
 * ranks; the ones inside are the serial packed backward on their rows.
 *
 * Non-causal: a sequence's queries read the state of all its keys, and
 * its keys' gradients need d[S z], the sum of its queries' D over every
 * rank that holds them.  The states as the packed forward builds them
 * (two segmented scans, MI(boundary_states)); each boundary sequence's
 * queries' pass (dq and its D, linattn_d_state_query_backward); the D
 * across ranks by the same two segmented scans (forward: the last
 * sequence's D unless it ends at this rank's end; reverse: the first
 * one's unless it starts at this rank's first row), so that each rank
 * adds the D of its sequences' queries on the ranks before and after it;
 * then its keys' pass from the sum (linattn_d_attention_backward_ex with
 * nq = 0 and the sum as ex.dstate_end).  Four scans of one element,
 * whatever nseq.
 *
 * Causal: the reverse scan of the one-sequence backward becomes a
 * segmented one, a sequence's suffix sums stopping at its start.  The
 * prefix of the first sequence as the packed forward scans it
 * (MI(causal_prefix)); that sequence's D over its rows here, for the
 * earlier ranks that hold it (none when it starts here: an empty element
 * that starts a segment; linattn_d_causal_backward_dstates, one pass
 * over the queries); the reverse segmented scan gives the gradient of
 * the final state of this rank's last sequence from the later ranks that
 * hold it.  Then three serial backward calls on the rank's own rows, no
 * copy of them: the first sequence from its prefix (or its starting
 * state when it starts here), its suffix sums seeded with that gradient
 * when it runs past this rank's end (ex.dstate_end is one sequence's);
 * the sequences inside, one serial packed call; the last from its
 * starting state, seeded likewise.  Two scans, each ceil(log2 P)
 * exchanges.
 *
 * Per-sequence starting states (causal, ex->states) are read where the
 * sequence's first row is (as the forward reads them), and their
 * gradients (ex->dstates) written there, with every later rank's part
 * of it (through dstate_end); an empty sequence's gradient (0: its state
 * reaches no row) is written on every rank; every other entry is left as
 * it was.
 *
 * Shifts as the one-sequence backward's (backward.c): a D element's
 * header shift is minus its state's, the sums of one sequence's D are at
 * one shift (non-causal: every rank's state of the sequence holds all
 * its keys, so the same largest exponent), and each rank brings a sum to
 * its own keys' (or final) state's shift, a factor <= 1.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backward.h"
#include "attn/plan.h"

/* The argument positions of ex in the two calls. */
enum { ATTENTION_BACKWARD_EX_ARG = 27, CAUSAL_BACKWARD_EX_ARG = 25 };

#define H LINATTN_MPI_HEAD

/* Nonzero when an element says a rank failed. */
static int failed_in(const double *el)
{
    return (linattn_mpi_i_flags(el) & LINATTN_MPI_F_FAIL) != 0;
}

/* el = d's element, or an empty one (no rows, not held), with flags or-ed
 * in. */
static void put_element(double *el, const double *d, int64_t len,
                        unsigned flags)
{
    if (d)
        memcpy(el, d, (size_t)(H + len) * sizeof *el);
    else
        MI(gradient_head)(memset(el, 0, (size_t)(H + len) * sizeof *el), len,
                          0, 0, 0);
    el[LINATTN_MPI_E_FLAGS] = (double)(linattn_mpi_i_flags(el) | flags);
}

/* The queries [lo, hi) of a boundary sequence against the state full of
 * all its keys (refused: its sums beyond the range, EOVERFLOW at its
 * first row here): dq, their share of dW and db, and their D into d at
 * full's shift. */
static void query_pass(const XI(problem) *j, const X(state) *full,
                       int refused, int64_t lo, int64_t hi, psum *ps,
                       double *d, int *status, int64_t *first, int64_t *row)
{
    int64_t len = (int64_t)d[LINATTN_MPI_E_LEN], r = -1, tokens = 0;
    memset(d + H, 0, (size_t)len * sizeof *d);
    if (hi <= lo) {
        MI(gradient_head)(d, len, 0, 0, 0);
        return;
    }
    int st = refused ? LINATTN_EOVERFLOW : 0;
    double c = st ? 0 : MI(shift_of)(full, &tokens);
    if (!st) {
        XI(problem) s = XI(problem_span)(j, lo, hi, lo, hi);
        st = X(state_query_backward)(
            full, j->layout, hi - lo, MI_IN(s, LINATTN_I_Q),
            MI_IN(s, LINATTN_I_OUT), s.part[LINATTN_I_DEN].p,
            MI_IN(s, LINATTN_I_G), MI_OUT(s, LINATTN_I_DQ), ps->dw, ps->ld,
            ps->db, d + H, &r);
        if (st)
            memset(d + H, 0, (size_t)len * sizeof *d);
        else if (ps->acc)
            MI(psum_add)(ps);
    } else {
        r = 0;
    }
    MI(gradient_head)(d, len, c, tokens > 0, st);
    MI(note)(st, 0, r >= 0 ? r + lo : -1, status, first, row);
}

/* The keys [lo, hi) of a boundary sequence from d, the D of all its
 * queries (at minus the shift of the state of all its keys), brought to
 * local's shift (the state of these keys alone, a factor <= 1): dk, dv,
 * dL/dw, their share of dW and db. */
static void key_pass(const XI(problem) *j, const X(state) *local, double *d,
                     int refused, int64_t lo, int64_t hi, psum *ps,
                     int *status, int64_t *first, int64_t *row)
{
    if (hi <= lo)
        return;
    int64_t len = (int64_t)d[LINATTN_MPI_E_LEN], tokens = 0;
    if (refused || (linattn_mpi_i_flags(d) & LINATTN_MPI_F_OVER)) {
        /* its sums, or its queries' D, left the range: no key reads them
         * (a row of dk is not a query row: none to name) */
        MI(note)(LINATTN_EOVERFLOW, 0, -1, status, first, row);
        return;
    }
    double cl = MI(shift_of)(local, &tokens);
    if (tokens > 0 && linattn_mpi_i_elem_tokens(d) > 0) {
        double f = exp(cl + d[LINATTN_MPI_E_SHIFT]); /* <= 1 */
        for (int64_t t = 0; f != 1 && t < len; t++)
            d[H + t] *= f;
    }
    XI(problem) s = XI(problem_span)(j, lo, hi, lo, hi);
    X(extras) ex = MI(grad_extras)(&s);
    ex.dstate_end = d + H;
    int64_t r = -1;
    int st = X(attention_backward_ex)(
        j->plan, j->layout, 0, hi - lo, MI_IN(s, LINATTN_I_Q),
        MI_IN(s, LINATTN_I_K), MI_IN(s, LINATTN_I_V), MI_IN(s, LINATTN_I_OUT),
        s.part[LINATTN_I_DEN].p, MI_IN(s, LINATTN_I_G),
        MI_OUT(s, LINATTN_I_DQ), MI_OUT(s, LINATTN_I_DK),
        MI_OUT(s, LINATTN_I_DV), ps->dw, ps->ld, ps->db, local, &ex, &r);
    if (!st && ps->acc)
        MI(psum_add)(ps);
    MI(note)(st, 0, -1, status, first, row);
}

/* The serial packed backward of the sequences wholly inside this rank,
 * rows [lo, hi) with local offsets loff of nseq sequences starting at
 * sequence s0 (their states and gradients from s0), causal or not. */
static void inside_pass(const XI(problem) *j, int causal, int64_t *loff,
                        int64_t nseq, int64_t s0, int64_t lo, int64_t hi,
                        psum *ps, int64_t len, int *status, int64_t *first,
                        int64_t *row)
{
    if (nseq <= 0)
        return;
    XI(problem) s = XI(problem_span)(j, lo, hi, lo, hi);
    X(extras) ex = MI(grad_extras)(&s);
    ex.offsets = loff;
    ex.nseq = nseq;
    ex.states = j->states ? j->states + s0 : NULL;
    ex.dstates = j->dstates ? j->dstates + s0 * len : NULL;
    int64_t r = -1;
    int st = 0;
    if (causal) {
        st = MI(causal_rows)(&s, &ex, ps, &r);
    } else {
        st = X(attention_backward_ex)(
            j->plan, j->layout, hi - lo, hi - lo, MI_IN(s, LINATTN_I_Q),
            MI_IN(s, LINATTN_I_K), MI_IN(s, LINATTN_I_V),
            MI_IN(s, LINATTN_I_OUT), s.part[LINATTN_I_DEN].p,
            MI_IN(s, LINATTN_I_G), MI_OUT(s, LINATTN_I_DQ),
            MI_OUT(s, LINATTN_I_DK), MI_OUT(s, LINATTN_I_DV), ps->dw, ps->ld,
            ps->db, NULL, &ex, &r);
        if (!st && ps->acc)
            MI(psum_add)(ps);
    }
    MI(note)(st, 0, r >= 0 ? r + lo : -1, status, first, row);
}

int MI(attention_backward_packed)(const XI(problem) *jp, MPI_Comm comm,
                                  MI(work) *w, int64_t *problem,
                                  int64_t *grow)
{
    const bcall *c = (const bcall *)jp;
    const XI(problem) *j = &c->j;
    MI(place) p;
    int st = MI(packed_place)(j, comm, w, ATTENTION_BACKWARD_EX_ARG, &p);
    if (st)
        return st;
    int64_t n = j->nq, fe = p.first_end, ls = p.last_start, len = w->len;
    int64_t first = -1, row = -1, *loff = NULL;
    int status = 0, go = 0, rf = 1, rl = 1;
    psum ps;
    X(state) *lf = NULL, *ll = NULL; /* the boundary sequences' own keys */
    double *dfirst = malloc((size_t)(2 * (H + len)) * sizeof *dfirst);
    double *dlast = dfirst ? dfirst + H + len : NULL;
    int pst = MI(psum_open)(&ps, c);
    if (!pst && (!dfirst || X(state_create)(&lf, j->plan) ||
                 X(state_create)(&ll, j->plan)))
        pst = LINATTN_ENOMEM;
    if (!pst && p.inner > 1 &&
        !(loff = MI(local_offsets)(j->qoff, &p, p.inner - 2, fe, ls)))
        pst = LINATTN_ENOMEM;
    /* no memory here, or a normalizer the checks found below the policy:
     * the state scans carry the mark, and every rank stops before it
     * writes anything */
    if (pst)
        status = pst, first = 0;
    else if (c->denom)
        status = c->denom, first = 0, row = c->denom_row;
    /* 1. the states of all the keys of the boundary sequences */
    int mpi = MI(boundary_states)(j, w, &p, &status, lf, ll, &go, &rf, &rl);
    if (!mpi && go) {
        /* 2. their queries: dq and D, at their states' shifts */
        dfirst[LINATTN_MPI_E_LEN] = dlast[LINATTN_MPI_E_LEN] = (double)len;
        query_pass(j, w->first, rf, 0, fe, &ps, dfirst, &status, &first,
                   &row);
        if (p.inner > 0)
            query_pass(j, w->last, rl, ls, n, &ps, dlast, &status, &first,
                       &row);
        else
            memcpy(dlast, dfirst, (size_t)(H + len) * sizeof *dlast);
        /* 3. the D of every rank's queries of them: forward, the last
         * sequence's unless it ends at row n; reverse, the first one's
         * unless it starts at row 0 (each starts a segment when a
         * boundary lies in the rank); a failed pass here marks both */
        unsigned fail = status && status != LINATTN_EOVERFLOW
                            ? LINATTN_MPI_F_FAIL
                            : 0;
        unsigned start = p.inner > 0 ? LINATTN_MPI_F_START : 0;
        put_element(w->elems, p.at_end ? NULL : dlast, len,
                    fail | start |
                        (p.at_end || p.at_start ? LINATTN_MPI_F_START : 0));
        put_element(w->back, p.at_start ? NULL : dfirst, len,
                    fail | start | (p.at_start ? LINATTN_MPI_F_START : 0));
        mpi = linattn_mpi_i_segmented_exscan(w->scan_comm, 0, w->elems,
                                             w->prefix, w->recv, 1, len) ||
              linattn_mpi_i_segmented_exscan(w->scan_comm, 1, w->back,
                                             w->suffix, w->recv, 1, len);
    }
    if (!mpi && go && !failed_in(w->prefix) && !failed_in(w->suffix) &&
        (!status || status == LINATTN_EOVERFLOW)) {
        /* 4. the keys: the first sequence's from every rank's D of it
         * (earlier ranks', and later ones' when it covers this rank) */
        if (!p.at_start)
            linattn_mpi_i_compose(w->prefix, dfirst);
        if (p.inner == 0)
            linattn_mpi_i_compose(w->suffix, dfirst);
        key_pass(j, lf, dfirst, rf, 0, fe, &ps, &status, &first, &row);
        inside_pass(j, 0, loff, p.inner - 1, p.lo, fe, ls, &ps, len, &status,
                    &first, &row);
        if (p.inner > 0) {
            linattn_mpi_i_compose(w->suffix, dlast);
            key_pass(j, ll, dlast, rl, ls, n, &ps, &status, &first, &row);
        }
    }
    X(state_destroy)(lf), X(state_destroy)(ll);
    free(dfirst), free(loff);
    if (mpi) {
        MI(psum_free)(&ps);
        return LINATTN_EMPI;
    }
    return MI(finish)(c, comm, &ps, status, first, row, n, problem, grow);
}

/* The shift and tokens of the final state of the sequence open at this
 * rank's end, to bring the later ranks' gradient to: its keys here (and
 * its starting state when it starts here; the header local), after the
 * prefix when it started before this rank (prefix: shift cp, tokens tp):
 * the larger shift of the two that hold keys, as a merge keeps it. */
static double final_shift(const double *local, int starts, double cp,
                          int64_t tp, int64_t *tokens)
{
    int64_t tl = linattn_mpi_i_elem_tokens(local);
    double cl = local[LINATTN_MPI_E_SHIFT];
    if (starts || tp == 0) {
        *tokens = tl;
        return cl;
    }
    *tokens = tp + tl;
    return tl > 0 && cl > cp ? cl : cp;
}

/* The later ranks' share of dL/da through the count (R, the gradient of
 * the count c_end at this rank's end of the sequence of s's rows) after
 * the serial call on them (ex its extras): 0, or LINATTN_EOVERFLOW with
 * no row to name. */
static int count_later(const XI(problem) *s, int64_t rows, const X(extras) *ex,
                       int count, double cend, double r, int64_t *row)
{
    if (!count || !ex->dgates || r == 0 || !MI(count_share)(s, rows, cend, r))
        return 0;
    *row = -1;
    return LINATTN_EOVERFLOW;
}

int MI(causal_backward_packed)(const XI(problem) *jp, MPI_Comm comm,
                               MI(work) *w, int64_t *problem, int64_t *grow)
{
    const bcall *c = (const bcall *)jp;
    const XI(problem) *j = &c->j;
    int rank, size;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return LINATTN_EMPI;
    MI(place) p;
    int st = MI(packed_place)(j, comm, w, CAUSAL_BACKWARD_EX_ARG, &p);
    if (st)
        return st;
    int64_t n = j->nq, fe = p.first_end, ls = p.last_start, len = w->len;
    int64_t first = -1, row = -1, *loff = NULL, tp = 0;
    /* the sequences wholly here: those that start inside, less the last
     * unless it ends at this rank's end; their rows [fe, me) */
    int64_t inside = p.inner > 0 ? p.inner - 1 + p.at_end : 0;
    int64_t me = p.at_end ? n : ls;
    int starts = p.inner > 0 || p.at_start;
    int status = 0, count = j->plan->denom == LINATTN_DENOM_COUNT;
    double local[H], cp = 0;
    psum ps;
    double *dend = malloc((size_t)len * sizeof *dend);
    int pst = MI(psum_open)(&ps, c);
    if (!pst && !dend)
        pst = LINATTN_ENOMEM;
    if (!pst && inside > 0 &&
        !(loff = MI(local_offsets)(j->qoff, &p, inside - 1, fe, me)))
        pst = LINATTN_ENOMEM;
    /* as the non-causal call: the marks reach every rank through the
     * prefix scan (later ranks) and the reverse scan (earlier ones) */
    if (pst)
        status = pst, first = 0;
    else if (c->denom)
        status = c->denom, first = 0, row = c->denom_row;
    /* 1. the prefix of the first sequence, as the forward scans it */
    int mpi = MI(causal_prefix)(j, w, &p, rank == size - 1, &status, local);
    int stop = mpi || status || failed_in(w->prefix);
    /* 2. the first sequence's D over its rows here, the gradient of its
     * starting state, for the earlier ranks that hold it: none when it
     * starts here (an empty element that starts a segment).  Decayed, the
     * element carries the log decay of rows [0, fe), over which the later
     * ranks' D of the sequence reach the earlier ones (and under the
     * count the count's gradient, as the unpacked backward's). */
    int pre_st = 0;
    double *d = w->back;
    memset(d, 0, (size_t)(H + len) * sizeof *d);
    if (!stop && fe > 0 && !p.at_start) {
        const double *pre = w->prefix;
        int64_t r = -1;
        if (MI(overflowed)(pre))
            pre_st = LINATTN_EOVERFLOW, r = 0;
        else
            pre_st = MI(unpack)(w->state, pre, fe);
        cp = pre_st ? 0 : MI(shift_of)(w->state, &tp);
        int sd = pre_st;
        if (!sd) {
            XI(problem) s = XI(problem_span)(j, 0, fe, 0, fe);
            X(extras) ex = MI(grad_extras)(&s);
            ex.dweights = NULL;
            ex.dgates = NULL;
            ex.state = w->state;
            ex.dstates = d + H;
            sd = X(causal_backward_dstates)(
                j->plan, j->layout, fe, MI_IN(s, LINATTN_I_Q),
                MI_IN(s, LINATTN_I_K), MI_IN(s, LINATTN_I_OUT),
                s.part[LINATTN_I_DEN].p, MI_IN(s, LINATTN_I_G), &ex, &r);
        }
        if (sd)
            memset(d + H, 0, (size_t)len * sizeof *d);
        MI(gradient_head)(d, len, cp, tp > 0, sd);
        XI(problem) s = XI(problem_span)(j, 0, fe, 0, fe);
        d[LINATTN_MPI_E_DECAY] = sd ? 0 : MI(decay_total)(&s, 0, fe);
        d[LINATTN_MPI_E_MASS] = !sd && count ? MI(count_mass)(&s, fe) : 0;
        MI(note)(sd, 0, r, &status, &first, &row);
    } else {
        /* a failure here or before: the mark, not a status here */
        MI(gradient_head)(d, len, 0, 0, stop ? LINATTN_ENOMEM : 0);
    }
    if (starts)
        d[LINATTN_MPI_E_FLAGS] =
            (double)(linattn_mpi_i_flags(d) | LINATTN_MPI_F_START);
    /* 3. the later ranks' D of the sequence open at this rank's end: the
     * gradient of its final state here */
    if (!mpi)
        mpi = linattn_mpi_i_segmented_exscan(w->scan_comm, 1, w->back,
                                             w->suffix, w->recv, 1, len);
    stop = stop || mpi || (status && status != LINATTN_EOVERFLOW) ||
           failed_in(w->suffix);
    /* the seed of that sequence's suffix sums, when it runs past this
     * rank's end, at its final state's shift (a factor <= 1): NULL when
     * nothing later reads it or it holds no keys */
    const double *seed = NULL;
    int over = 0;
    /* under the count with dL/da: the later ranks' dL/dc_end of that
     * sequence, and its count at this rank's end */
    double rc = 0, cend = local[LINATTN_MPI_E_MASS];
    if (!starts)
        cend += exp(local[LINATTN_MPI_E_DECAY]) * w->prefix[LINATTN_MPI_E_MASS];
    if (!stop && !p.at_end && !(p.inner == 0 && pre_st)) {
        const double *e = w->suffix;
        int64_t tf = 0;
        double cend = final_shift(local, starts, cp, tp, &tf);
        over = (linattn_mpi_i_flags(e) & LINATTN_MPI_F_OVER) != 0;
        if (tf > 0 && linattn_mpi_i_elem_tokens(e) > 0 && !over) {
            double f = exp(cend + e[LINATTN_MPI_E_SHIFT]); /* <= 1 */
            for (int64_t t = 0; t < len; t++)
                dend[t] = f * e[H + t];
            seed = dend;
        }
        rc = over ? 0 : e[LINATTN_MPI_E_MASS];
    }
    if (!stop) {
        /* an empty sequence's starting state reaches no row: 0, here as
         * on every rank */
        for (int64_t s = 0; j->dstates && s < j->nseq; s++)
            if (j->qoff[s + 1] == j->qoff[s])
                memset(j->dstates + s * len, 0, (size_t)len * sizeof(double));
        /* 4. the first sequence: from its prefix, or from its starting
         * state when it starts here (and then its gradient) */
        if (fe > 0 && (p.at_start || !pre_st)) {
            int64_t r = -1;
            int sf = 0;
            XI(problem) s = XI(problem_span)(j, 0, fe, 0, fe);
            X(extras) ex = MI(grad_extras)(&s);
            ex.state = p.at_start ? MI(seed_of)(j, p.lo - 1) : w->state;
            if (p.at_start && j->dstates && j->states)
                ex.dstates = j->dstates + (p.lo - 1) * len;
            if (p.inner == 0) {
                ex.dstate_end = seed;
                if (over) /* the later rows' sums left the range */
                    sf = LINATTN_EOVERFLOW, r = 0;
            }
            if (!sf)
                sf = MI(causal_rows)(&s, &ex, &ps, &r);
            if (!sf && p.inner == 0)
                sf = count_later(&s, fe, &ex, count, cend, rc, &r);
            MI(note)(sf, 0, r, &status, &first, &row);
        }
        /* the sequences wholly here: the serial packed backward */
        inside_pass(j, 1, loff, inside, p.lo, fe, me, &ps, len, &status,
                    &first, &row);
        /* the last sequence, from its starting state, when it runs on */
        if (p.inner > 0 && !p.at_end) {
            int64_t r = -1, sl = p.lo + p.inner - 1;
            XI(problem) s = XI(problem_span)(j, ls, n, ls, n);
            X(extras) ex = MI(grad_extras)(&s);
            ex.state = MI(seed_of)(j, sl);
            ex.dstate_end = seed;
            if (j->dstates && j->states)
                ex.dstates = j->dstates + sl * len;
            int sl_st = over ? LINATTN_EOVERFLOW : 0;
            if (!sl_st)
                sl_st = MI(causal_rows)(&s, &ex, &ps, &r);
            else
                r = 0;
            if (!sl_st)
                sl_st = count_later(&s, n - ls, &ex, count, cend, rc, &r);
            MI(note)(sl_st, 0, r >= 0 ? r + ls : -1, &status, &first, &row);
        }
    }
    free(dend), free(loff);
    if (mpi) {
        MI(psum_free)(&ps);
        return LINATTN_EMPI;
    }
    return MI(finish)(c, comm, &ps, status, first, row, n, problem, grow);
}
