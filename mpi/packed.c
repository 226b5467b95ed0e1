/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * packed.c -- the distributed _ex calls: key weights, normalizers out, and
 * packed streams whose sequences cross rank boundaries.
 *
 * Rank r holds the tokens [g0, g1) of the packed stream (g0 the tokens of
 * the ranks before it) and every rank the same global offsets.  Only the
 * sequences open at g0 and at g1 reach other ranks; every other one lies
 * in this rank and runs as the serial packed call runs it.
 *
 * Causal: the sequence open at g0 continues from the keys of it that
 * earlier ranks hold.  That is a segmented exclusive scan of one element
 * per rank: the keys after the rank's last sequence boundary, marked as a
 * segment's start when the rank has a boundary (the combination (a, fa) +
 * (b, fb) = (fb ? b : a + b, fa | fb) is associative), in the ceil(log2
 * P) exchanges of the plain scan (mpi/reduce.c).  With decay (a decayed
 * plan, gates) the element also carries those rows' total log decay and
 * the composition ages what comes before it: (A_b, fb ? S_b : e^{A_b} S_a
 * + S_b).
 *
 * Non-causal: a boundary sequence's queries need all of its keys: those
 * of earlier ranks (the forward scan above), this rank's, and those of
 * later ranks (the same scan run from the last rank down, over the keys
 * before each rank's first boundary).  A sequence that covers this rank
 * takes both.  Two scans of one element each, instead of a reduction per
 * sequence.
 */
#include <stdlib.h>
#include "mprec.h"

/* The argument positions of ex in the two calls. */
enum { CAUSAL_EX_ARG = 13, ATTENTION_EX_ARG = 14 };

/* The first s in [0, nseq] with off[s] > x (strict) or >= x. */
static int64_t bound(const int64_t *off, int64_t nseq, int64_t x, int strict)
{
    int64_t a = 0, b = nseq + 1;
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (strict ? off[mid] > x : off[mid] >= x)
            b = mid;
        else
            a = mid + 1;
    }
    return a;
}

static MI(place) place_rows(const int64_t *off, int64_t nseq, int64_t g0,
                               int64_t n)
{
    MI(place) p = {g0, n, 0, 0, n, 0, 0, 0};
    if (n == 0)
        return p;
    p.lo = bound(off, nseq, g0, 1);
    int64_t hi = bound(off, nseq, g0 + n, 0);
    p.inner = hi - p.lo;
    p.at_start = p.lo > 0 && off[p.lo - 1] == g0;
    p.at_end = hi <= nseq && off[hi] == g0 + n;
    if (p.inner > 0) {
        p.first_end = off[p.lo] - g0;
        p.last_start = off[hi - 1] - g0;
    }
    return p;
}

/* g0 (the rows of the ranks before this one: an exclusive sum in
 * ceil(log2 P) exchanges, as the state scan) and the rows of all ranks,
 * in unsigned arithmetic (a total beyond int64 cannot match offsets). */
static int rows_before(MPI_Comm scan_comm, MPI_Comm comm, int64_t n,
                       int64_t *g0, uint64_t *total)
{
    int rank, size;
    if (MPI_Comm_rank(scan_comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(scan_comm, &size) != MPI_SUCCESS)
        return LINATTN_EMPI;
    uint64_t partial = (uint64_t)n, below = 0, in;
    for (int dist = 1; dist < size; dist <<= 1) {
        int partner = rank ^ dist;
        if (partner >= size)
            continue;
        if (MPI_Sendrecv(&partial, 1, MPI_UINT64_T, partner, 1, &in, 1,
                         MPI_UINT64_T, partner, 1, scan_comm,
                         MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return LINATTN_EMPI;
        if (partner < rank)
            below += in;
        partial += in;
    }
    uint64_t mine = (uint64_t)n;
    if (MPI_Allreduce(&mine, total, 1, MPI_UINT64_T, MPI_SUM, comm) !=
        MPI_SUCCESS)
        return LINATTN_EMPI;
    *g0 = below > (uint64_t)INT64_MAX ? -1 : (int64_t)below;
    return 0;
}

/* The extras of one serial call on rows [lo, lo + rows) of this rank: the
 * weights, gates and normalizers from row lo. */
static X(extras) part_extras(const XI(problem) *j, int64_t lo)
{
    X(extras) ex;
    X(extras_init)(&ex);
    const real *w = j->part[LINATTN_I_KW].p, *g = j->part[LINATTN_I_GATE].p;
    real *den = XI(part_out)(j, LINATTN_I_DEN);
    ex.weights = w ? w + lo : NULL;
    ex.gates = g ? g + lo : NULL;
    ex.den = den ? den + lo : NULL;
    return ex;
}

/* Sequence s's starting state (NULL: none given, a zero one). */
X(state) *MI(seed_of)(const XI(problem) *j, int64_t s)
{
    return j->states ? j->states[s] : NULL;
}

/* The state of seed (NULL: none) and the keys [lo, hi) into s; 0 or the
 * update's status.  (Non-causal: nothing decays.) */
static int keys_state(const XI(problem) *j, X(state) *s, const X(state) *seed,
                      int64_t lo, int64_t hi)
{
    if (seed)
        X(state_copy)(s, seed);
    else
        X(state_reset)(s);
    if (hi <= lo)
        return 0;
    XI(problem) r = XI(problem_span)(j, lo, hi, lo, hi);
    X(extras) ex = part_extras(j, lo);
    ex.den = NULL; /* the keys' part only */
    return X(state_update_ex)(s, j->layout, hi - lo, MI_IN(r, LINATTN_I_K),
                              MI_IN(r, LINATTN_I_V), &ex);
}

/* A scan's element: the state s (NULL: an empty one) whose build
 * returned st, marked as a segment's start with start.  A build that
 * overflowed goes as an empty element marked F_OVER (its sums cannot
 * travel), one that failed otherwise, or any earlier failure here
 * (*status), as F_FAIL, the first such into *status. */
static void pack_element(MI(work) *w, const X(state) *s, int st, int start,
                         double *el, int *status)
{
    if (st && st != LINATTN_EOVERFLOW && !*status)
        *status = st;
    unsigned flags = *status                 ? LINATTN_MPI_F_FAIL
                     : st == LINATTN_EOVERFLOW ? LINATTN_MPI_F_OVER
                                               : 0;
    if (!s) {
        X(state_reset)(w->state);
        s = w->state;
    }
    MI(pack)(s, w->len, flags, el);
    if (start)
        el[LINATTN_MPI_E_FLAGS] =
            (double)(linattn_mpi_i_flags(el) | LINATTN_MPI_F_START);
}

/* A causal scan's element built by MI(keys_element) into el (st: its
 * status), or with empty an empty one, marked as pack_element marks
 * it. */
static void mark_element(MI(work) *w, int empty, int st, int start,
                         double *el, int *status)
{
    if (empty || st || *status)
        pack_element(w, NULL, st, start, el, status);
    else if (start)
        el[LINATTN_MPI_E_FLAGS] =
            (double)(linattn_mpi_i_flags(el) | LINATTN_MPI_F_START);
}

/* Local offsets of the sequences between rows from and to (boundaries
 * off[lo .. lo + count) inside, relative to from): count + 1 entries,
 * malloc'd (NULL: no memory). */
int64_t *MI(local_offsets)(const int64_t *off, const MI(place) *p,
                              int64_t count, int64_t from, int64_t to)
{
    int64_t *lo = malloc((size_t)(count + 2) * sizeof *lo);
    if (!lo)
        return NULL;
    lo[0] = 0;
    for (int64_t i = 1; i <= count; i++)
        lo[i] = off[p->lo + i] - p->g0 - from;
    lo[count + 1] = to - from;
    return lo;
}

/* The first failure among the parts, in row order. */
void MI(first_failure)(int st, int64_t row, int64_t at, int *status,
                          int64_t *frow)
{
    if (st && !*status) {
        *status = st;
        *frow = row >= 0 ? row + at : row;
    }
}

/* The rows [from, to) of a boundary sequence, answered from the state s
 * (its keys, all of them): EOVERFLOW at the sequence's first row when a
 * part of its sums was refused. */
static void answer_from(const XI(problem) *j, X(state) *s, int refused,
                        int64_t from, int64_t to, int *status, int64_t *row)
{
    if (to <= from)
        return;
    if (refused) {
        MI(first_failure)(LINATTN_EOVERFLOW, 0, from, status, row);
        return;
    }
    XI(problem) r = XI(problem_span)(j, from, to, 0, j->nk);
    int64_t bad = -1;
    real *den = XI(part_out)(&r, LINATTN_I_DEN);
    int st = X(state_query)(s, j->layout, to - from, MI_IN(r, LINATTN_I_Q),
                            MI_OUT(r, LINATTN_I_OUT), NULL, 0, den, &bad);
    MI(first_failure)(st, bad, from, status, row);
}

/* s += the state held in el (w->state as scratch); nonzero when the sum
 * is refused (el's sums overflowed, or the merge refuses). */
static int add_element(MI(work) *w, X(state) *s, const double *el)
{
    if (MI(overflowed)(el))
        return 1;
    if (linattn_mpi_i_elem_tokens(el) == 0)
        return 0;
    return MI(unpack)(w->state, el, 0) || X(state_merge)(s, w->state);
}

/* Any failure flag in an element: a rank could not build its state. */
static int failed_somewhere(const double *el)
{
    return (linattn_mpi_i_flags(el) & LINATTN_MPI_F_FAIL) != 0;
}

int MI(packed_place)(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                     int ex_arg, MI(place) *p)
{
    int64_t g0;
    uint64_t total;
    int st = rows_before(w->scan_comm, comm, j->nk, &g0, &total);
    if (st)
        return st;
    /* the same on every rank: the offsets agreed, so did the total */
    if (total != (uint64_t)j->qoff[j->nseq] || g0 < 0)
        return -ex_arg;
    *p = place_rows(j->qoff, j->nseq, g0, j->nk);
    return 0;
}

/* The final states of the sequences a rank absorbs into, built in copies
 * and written to the call's states only after every rank succeeded. */
typedef struct {
    X(state) **copy; /* copies of states [s0, s0 + count), NULL if none */
    int64_t s0, count;
    /* the sequence of the rank's first and last rows when it ends here
     * (-1: not), their finals in w->first (causal: w->state) and
     * w->last */
    int64_t first, last;
} finals;

static void finals_free(finals *f)
{
    for (int64_t i = 0; f->copy && i < f->count; i++)
        X(state_destroy)(f->copy[i]);
    free(f->copy);
    f->copy = NULL;
}

/* Copies of the states [s0, s0 + count) (nothing when the call does not
 * absorb): 0 or LINATTN_ENOMEM. */
static int finals_copy(const XI(problem) *j, finals *f, int64_t s0,
                       int64_t count)
{
    f->s0 = s0, f->count = 0, f->first = f->last = -1;
    f->copy = NULL;
    if (!j->absorb || count <= 0)
        return 0;
    f->copy = calloc((size_t)count, sizeof *f->copy);
    if (!f->copy)
        return LINATTN_ENOMEM;
    for (; f->count < count; f->count++) {
        X(state) **c = &f->copy[f->count];
        if (X(state_create)(c, j->plan)) {
            finals_free(f);
            return LINATTN_ENOMEM;
        }
        X(state_copy)(*c, j->states[s0 + f->count]);
    }
    return 0;
}

/* The states a serial packed call on the sequences [s0, s0 + count)
 * starts from: the copies when absorbing (f), else the call's own. */
static X(state) *const *finals_states(const XI(problem) *j, const finals *f,
                                      int64_t s0)
{
    if (!j->states)
        return NULL;
    return f->copy ? f->copy : j->states + s0;
}

/* After the agreement (status, every rank's): the finals into the call's
 * states, the copies [0, kept) of f and the first and last sequence's;
 * then the copies freed.  Returns status. */
static int finals_commit(const XI(problem) *j, finals *f, int64_t kept,
                         const X(state) *first, const X(state) *last,
                         int status)
{
    if (!status && j->absorb) {
        for (int64_t i = 0; i < kept && i < f->count; i++)
            X(state_copy)(j->states[f->s0 + i], f->copy[i]);
        if (f->first >= 0)
            X(state_copy)(j->states[f->first], first);
        if (f->last >= 0)
            X(state_copy)(j->states[f->last], last);
    }
    finals_free(f);
    return status;
}

int MI(causal_prefix)(const XI(problem) *j, MI(work) *w, const MI(place) *p,
                      int last_rank, int *status, double *local)
{
    /* The element: the keys after the last boundary (none after one at
     * the end), with the starting state of their sequence when it starts
     * here, a segment's start when there is a boundary; the last rank's
     * reaches no one. */
    int empty = p->at_end || last_rank || *status, st = 0;
    int starts = p->inner > 0 || p->at_start;
    if (!empty)
        st = MI(keys_element)(w, j, starts ? MI(seed_of)(j, p->lo + p->inner - 1)
                                           : NULL,
                              p->inner > 0 ? p->last_start : 0, j->nk,
                              w->elems, w->recv);
    mark_element(w, empty, st, p->at_end || starts, w->elems, status);
    if (local)
        memcpy(local, w->elems, LINATTN_MPI_HEAD * sizeof *local);
    return linattn_mpi_i_segmented_exscan(w->scan_comm, 0, w->elems,
                                          w->prefix, w->recv, 1, w->len);
}

static int causal_ex_work(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                          int64_t *problem, int64_t *grow)
{
    int rank, size;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return LINATTN_EMPI;
    MI(place) p = {0, j->nk, 0, 0, j->nk, 0, 0, 0};
    if (j->qoff) {
        int st = MI(packed_place)(j, comm, w, CAUSAL_EX_ARG, &p);
        if (st)
            return st;
    }
    int64_t n = j->nk, fe = p.first_end, *loff = NULL, row = -1;
    int status = 0, st = 0;
    finals f;
    /* the sequences that start here: lo .. lo + inner - 1, the last one
     * ending here only with a boundary at the end */
    status = finals_copy(j, &f, p.lo, p.inner);
    if (!status && p.inner > 0 &&
        !(loff = MI(local_offsets)(j->qoff, &p, p.inner - 1, fe, n)))
        status = LINATTN_ENOMEM;
    if (MI(causal_prefix)(j, w, &p, rank == size - 1, &status, NULL)) {
        finals_free(&f);
        free(loff);
        return LINATTN_EMPI;
    }
    const double *pre = w->prefix;
    if (!status && !failed_somewhere(pre)) {
        /* the sequence open at g0: from its starting state when it starts
         * here, else from its keys on earlier ranks (which carry it) */
        if (fe > 0) {
            X(extras) ex = part_extras(j, 0);
            const X(state) *seed = p.at_start ? MI(seed_of)(j, p.lo - 1) : NULL;
            int64_t bad = -1;
            st = 0;
            X(state_reset)(w->state);
            if (seed) {
                X(state_copy)(w->state, seed);
                ex.state = w->state;
            } else if (p.at_start) {
                /* a zero state: nothing before it */
            } else if (MI(overflowed)(pre)) {
                st = LINATTN_EOVERFLOW, bad = 0;
            } else if (linattn_mpi_i_elem_tokens(pre) != 0) {
                st = MI(unpack)(w->state, pre, fe);
                ex.state = w->state;
            }
            if (j->absorb && (p.inner > 0 || p.at_end)) {
                ex.state = w->state; /* its final state */
                ex.absorb = 1;
                f.first = p.lo - 1;
            }
            XI(problem) r = XI(problem_span)(j, 0, fe, 0, fe);
            if (!st)
                st = X(causal_ex)(j->plan, j->layout, fe,
                                  MI_IN(r, LINATTN_I_Q), MI_IN(r, LINATTN_I_K),
                                  MI_IN(r, LINATTN_I_V),
                                  MI_OUT(r, LINATTN_I_OUT), &ex, &bad);
            MI(first_failure)(st, bad, 0, &status, &row);
        }
        /* the sequences that start here: the serial packed call */
        if (fe < n) {
            X(extras) ex = part_extras(j, fe);
            ex.offsets = loff;
            ex.nseq = p.inner;
            ex.states = finals_states(j, &f, p.lo);
            ex.absorb = f.copy != NULL;
            XI(problem) r = XI(problem_span)(j, fe, n, fe, n);
            int64_t bad = -1;
            st = X(causal_ex)(j->plan, j->layout, n - fe,
                              MI_IN(r, LINATTN_I_Q), MI_IN(r, LINATTN_I_K),
                              MI_IN(r, LINATTN_I_V), MI_OUT(r, LINATTN_I_OUT),
                              &ex, &bad);
            MI(first_failure)(st, bad, fe, &status, &row);
        }
    }
    free(loff);
    st = linattn_mpi_i_agree_final(comm, status, status ? 0 : -1, row, n,
                                   problem, grow);
    /* the last sequence that starts here ends here only at a boundary */
    return finals_commit(j, &f, p.at_end ? f.count : f.count - 1, w->state,
                         NULL, st);
}

/* Non-causal, one sequence: the local state, one reduction, the
 * queries. */
static int attention_one(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                         int64_t *problem, int64_t *grow)
{
    int status = 0;
    int64_t row = -1;
    int st = keys_state(j, w->state, NULL, 0, j->nk);
    pack_element(w, w->state, st, 0, w->elems, &status);
    if (linattn_mpi_i_allreduce(comm, w->elems, 1, w->len))
        return LINATTN_EMPI;
    if (!status && !failed_somewhere(w->elems)) {
        int refused = MI(overflowed)(w->elems) ||
                      MI(unpack)(w->state, w->elems, 0) != 0;
        answer_from(j, w->state, refused, 0, j->nq, &status, &row);
    }
    return linattn_mpi_i_agree_final(comm, status, status ? 0 : -1, row,
                                     j->nq, problem, grow);
}

int MI(boundary_states)(const XI(problem) *j, MI(work) *w, const MI(place) *p,
                        int *status, X(state) *lfirst, X(state) *llast,
                        int *go, int *rf, int *rl)
{
    int64_t n = j->nk, fe = p->first_end, ls = p->last_start;
    /* The keys here of the first sequence and of the last (one sequence
     * when no boundary lies inside), each with its starting state when it
     * starts here. */
    int stf = *status ? 0
                      : keys_state(j, w->first,
                                   p->at_start ? MI(seed_of)(j, p->lo - 1)
                                               : NULL,
                                   0, fe);
    X(state) *last = p->inner > 0 ? w->last : w->first;
    int stl = p->inner > 0 && !*status
                  ? keys_state(j, w->last,
                               MI(seed_of)(j, p->lo + p->inner - 1), ls, n)
                  : stf;
    if (lfirst && !*status)
        X(state_copy)(lfirst, w->first);
    if (llast && !*status)
        X(state_copy)(llast, last);
    /* Reverse element: the first sequence's keys unless it starts at row
     * 0 (so never a starting state); forward: the last one's unless it
     * ends at row n.  Either starts a segment when a boundary lies in the
     * rank. */
    int start = p->inner > 0;
    pack_element(w, p->at_start ? NULL : w->first, p->at_start ? 0 : stf,
                 start || p->at_start, w->back, status);
    pack_element(w, p->at_end ? NULL : last, p->at_end ? 0 : stl,
                 start || p->at_end || p->at_start, w->elems, status);
    if (linattn_mpi_i_segmented_exscan(w->scan_comm, 0, w->elems, w->prefix,
                                       w->recv, 1, w->len) ||
        linattn_mpi_i_segmented_exscan(w->scan_comm, 1, w->back, w->suffix,
                                       w->recv, 1, w->len))
        return LINATTN_EMPI;
    *go = !*status && !failed_somewhere(w->prefix) &&
          !failed_somewhere(w->suffix);
    *rf = *rl = 1;
    if (*go) {
        *rf = stf != 0 || add_element(w, w->first, w->prefix);
        if (p->inner == 0)
            *rf = *rf || add_element(w, w->first, w->suffix);
        *rl = p->inner > 0 ? stl != 0 || add_element(w, w->last, w->suffix)
                           : *rf;
    }
    return 0;
}

static int attention_ex_work(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                             int64_t *problem, int64_t *grow)
{
    if (!j->qoff)
        return attention_one(j, comm, w, problem, grow);
    MI(place) p;
    int st = MI(packed_place)(j, comm, w, ATTENTION_EX_ARG, &p);
    if (st)
        return st;
    int status = 0;
    int64_t n = j->nq, fe = p.first_end, ls = p.last_start, row = -1;
    int64_t *loff = NULL, sl = p.lo + p.inner - 1;
    finals f;
    /* the sequences strictly inside: lo .. lo + inner - 2 */
    status = finals_copy(j, &f, p.lo, p.inner - 1);
    if (!status && p.inner > 1 &&
        !(loff = MI(local_offsets)(j->qoff, &p, p.inner - 2, fe, ls)))
        status = LINATTN_ENOMEM;
    int go, rf, rl;
    if (MI(boundary_states)(j, w, &p, &status, NULL, NULL, &go, &rf, &rl)) {
        finals_free(&f);
        free(loff);
        return LINATTN_EMPI;
    }
    if (go) {
        /* the first sequence: earlier ranks' keys, these, and (when it
         * covers the rank) later ranks' */
        answer_from(j, w->first, rf, 0, fe, &status, &row);
        if (p.inner > 0 || p.at_end)
            f.first = p.lo - 1;
        /* the sequences inside: the serial packed call */
        if (p.inner > 1) {
            X(extras) ex = part_extras(j, fe);
            ex.offsets = loff;
            ex.nseq = p.inner - 1;
            ex.states = finals_states(j, &f, p.lo);
            ex.absorb = f.copy != NULL;
            XI(problem) r = XI(problem_span)(j, fe, ls, fe, ls);
            int64_t bad = -1;
            st = X(attention_ex)(j->plan, j->layout, ls - fe, ls - fe,
                                 MI_IN(r, LINATTN_I_Q), MI_IN(r, LINATTN_I_K),
                                 MI_IN(r, LINATTN_I_V),
                                 MI_OUT(r, LINATTN_I_OUT), &ex, &bad);
            MI(first_failure)(st, bad, fe, &status, &row);
        }
        /* the last sequence: these keys and later ranks' */
        if (p.inner > 0) {
            answer_from(j, w->last, rl, ls, n, &status, &row);
            if (p.at_end)
                f.last = sl;
        }
    }
    free(loff);
    st = linattn_mpi_i_agree_final(comm, status, status ? 0 : -1, row, n,
                                   problem, grow);
    return finals_commit(j, &f, f.count, w->first, w->last, st);
}

static int by_address(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

/* The per-sequence states: every entry a state of the call's plan (by
 * fingerprint: its map, sizes and draws), and when absorbing no state
 * twice (a sort of their addresses).  0, -arg or LINATTN_ENOMEM. */
int MI(states_ok)(const X(plan) *plan, const X(extras) *ex, int arg)
{
    uint64_t want, fp;
    X(plan_fingerprint)(plan, &want);
    for (int64_t s = 0; s < ex->nseq; s++) {
        const X(plan) *sp;
        if (!ex->states[s] || X(state_plan)(ex->states[s], &sp) ||
            X(plan_fingerprint)(sp, &fp) || fp != want)
            return -arg;
    }
    if (!ex->absorb || ex->nseq < 2)
        return 0;
    uintptr_t *at = malloc((size_t)ex->nseq * sizeof *at);
    if (!at)
        return LINATTN_ENOMEM;
    for (int64_t s = 0; s < ex->nseq; s++)
        at[s] = (uintptr_t)ex->states[s];
    qsort(at, (size_t)ex->nseq, sizeof *at, by_address);
    int twice = 0;
    for (int64_t s = 1; s < ex->nseq; s++)
        twice |= at[s] == at[s - 1];
    free(at);
    return twice ? -arg : 0;
}

int MI(offsets_ok)(const X(extras) *ex, int64_t nq, int64_t nk)
{
    if (ex->nseq < 0 || (ex->nseq > 0 && !ex->offsets))
        return 0;
    if (!ex->offsets)
        return 1;
    if (nq != nk || ex->offsets[0] != 0 ||
        ex->nseq > INT64_MAX / (int64_t)sizeof(int64_t) - 1)
        return 0;
    for (int64_t s = 0; s < ex->nseq; s++)
        if (ex->offsets[s + 1] < ex->offsets[s])
            return 0;
    return 1;
}

/* The checks of ex beyond the serial call's (which saw it without the
 * offsets and states): the parts a distributed call takes (normalizers
 * out, key weights, offsets, their states), the offsets from 0 without
 * decreasing (their end, every rank's rows, is checked once the ranks'
 * rows are summed) and away from the outputs; with offsets nq == nk (a
 * token is a query and a key).  -arg, LINATTN_ENOMEM or 0. */
static int ex_fields(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                     const real *out, int64_t ldout, const X(extras) *ex,
                     int arg)
{
    if (!ex)
        return 0;
    /* chunk_states: the serial calls' (a rank's rows are not a call's) */
    if (ex->state || ex->key_offsets || ex->dweights || ex->chunk_states ||
        !MI(offsets_ok)(ex, nq, nk) || (ex->absorb && !ex->states) ||
        (ex->states && !ex->offsets) || (ex->absorb != 0 && ex->absorb != 1))
        return -arg;
    if (!ex->offsets)
        return 0;
    int64_t e;
    X(plan_dims)(plan, NULL, NULL, &e);
    size_t ob = (size_t)(ex->nseq + 1) * sizeof(int64_t);
    size_t sb = ex->states ? (size_t)ex->nseq * sizeof *ex->states : 0;
    size_t outb = MI(mat_bytes)(layout, nq, e, ldout);
    size_t denb = ex->den ? (size_t)nq * sizeof(real) : 0;
    if (MI(meet)(out, outb, ex->offsets, ob) ||
        MI(meet)(ex->den, denb, ex->offsets, ob) ||
        MI(meet)(out, outb, ex->states, sb) || MI(meet)(ex->den, denb, ex->states, sb))
        return -arg;
    return ex->states ? MI(states_ok)(plan, ex, arg) : 0;
}

/* The problem of a distributed _ex call whose checks gave st. */
static XI(problem) ex_problem(int st, const X(plan) *plan, int layout,
                              int64_t nq, int64_t nk, const real *q,
                              int64_t ldq, const real *k, int64_t ldk,
                              const real *v, int64_t ldv, real *out,
                              int64_t ldout, const X(extras) *ex)
{
    XI(problem) j = MI(problem)(plan, layout, 1, 1, nq, nk);
    XI(problem_qkvo)(&j, q, ldq, k, ldk, v, ldv, out, ldout);
    if (!st && ex) {
        j.part[LINATTN_I_KW] = XI(part_single)(ex->weights, 1);
        j.part[LINATTN_I_GATE] = XI(part_single)(ex->gates, 1);
        j.part[LINATTN_I_DEN] = XI(part_single)(ex->den, 1);
        j.nseq = ex->offsets ? ex->nseq : 0;
        j.qoff = j.koff = ex->offsets;
        j.states = ex->states;
        j.absorb = ex->absorb;
    }
    return j;
}

/* ex without its offsets and states: what the serial checks see of it. */
static const X(extras) *without_offsets(const X(extras) *ex, X(extras) *copy)
{
    if (!ex)
        return NULL;
    *copy = *ex;
    copy->offsets = NULL;
    copy->nseq = 0;
    copy->states = NULL;
    copy->absorb = 0;
    return copy;
}

int MX(causal_ex)(const X(plan) *plan, MPI_Comm comm, int layout, int64_t n,
                  const real *q, int64_t ldq, const real *k, int64_t ldk,
                  const real *v, int64_t ldv, real *out, int64_t ldout,
                  const X(extras) *ex, int64_t *bad_row)
{
    X(extras) copy;
    int st = X(causal_ex_check)(plan, layout, n, q, ldq, k, ldk, v, ldv, out,
                                ldout, without_offsets(ex, &copy));
    if (!st)
        st = ex_fields(plan, layout, n, n, out, ldout, ex, CAUSAL_EX_ARG - 1);
    XI(problem) j = ex_problem(st, plan, layout, n, n, q, ldq, k, ldk, v, ldv,
                               out, ldout, ex);
    return MI(run)(&j, comm, st, LINATTN_MPI_CALL_CAUSAL, causal_ex_work,
                   bad_row, NULL);
}

int MX(attention_ex)(const X(plan) *plan, MPI_Comm comm, int layout,
                     int64_t nq, int64_t nk, const real *q, int64_t ldq,
                     const real *k, int64_t ldk, const real *v, int64_t ldv,
                     real *out, int64_t ldout, const X(extras) *ex,
                     int64_t *bad_row)
{
    X(extras) copy;
    int st = X(attention_ex_check)(plan, layout, nq, nk, q, ldq, k, ldk, v,
                                   ldv, out, ldout,
                                   without_offsets(ex, &copy));
    if (!st)
        st = ex_fields(plan, layout, nq, nk, out, ldout, ex,
                       ATTENTION_EX_ARG - 1);
    XI(problem) j = ex_problem(st, plan, layout, nq, nk, q, ldq, k, ldk, v,
                               ldv, out, ldout, ex);
    return MI(run)(&j, comm, st, LINATTN_MPI_CALL_ATTENTION,
                   attention_ex_work, bad_row, NULL);
}
