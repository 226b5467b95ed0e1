/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * backward.h -- what the distributed backward's files share (backward.c:
 * one sequence per rank's rows, and the entry points; packed_backward.c:
 * packed streams whose sequences cross ranks).  Not installed.
 */
#ifndef LINATTN_MPI_BACKWARD_H
#define LINATTN_MPI_BACKWARD_H

#include "mprec.h"

/* Options every rank must give alike: part of the call's kind. */
enum {
    OPT_DW = 1 << 8,
    OPT_DB = 1 << 9,
    OPT_STATE = 1 << 10,
    OPT_DSTATES = 1 << 11 /* the starting states' gradients (packed) */
};

/* A distributed backward call: the problem (first, so that the work
 * functions get the call from it), the extras' key weights and dL/dw
 * and a packed stream's offsets, states and their gradients (in j), and
 * what the entry point found. */
typedef struct {
    XI(problem) j;
    int denom;          /* LINATTN_EDENOM from this rank's checks, or 0 */
    int64_t denom_row;  /* its row (this rank's)                        */
    int64_t denom_problem; /* and problem                               */
    int64_t lddw;       /* the caller's dW leading dimension            */
    const X(state) *given; /* the handed global state (non-causal), a   */
                           /* copy of the caller's in a state of plan   */
} bcall;

/* dW and db of this rank's problems: sums in double (rows d entries of
 * dW, row major, then rows of db) and one serial call's in real. */
typedef struct {
    int64_t rows, d, ld;
    int layout;
    double *acc;
    real *dw, *db;
} psum;

/* The sums of call c (nothing when it asks for neither dW nor db): 0 or
 * LINATTN_ENOMEM. */
int MI(psum_open)(psum *p, const bcall *c);
void MI(psum_free)(psum *p);

/* One serial call's dW, db (in p->dw, p->db) into the sums. */
void MI(psum_add)(psum *p);

/* After every rank succeeded: the sums over the ranks into the caller's
 * dW and db (sums of finite ones beyond the range: LINATTN_EOVERFLOW,
 * nothing written).  0, LINATTN_EOVERFLOW or LINATTN_EMPI. */
int MI(psum_write)(psum *p, const bcall *c, MPI_Comm comm);

/* The extras of a serial backward call on problem one (one problem, or
 * a span of its rows: XI(problem_span)): its key weights and dL/dw, its
 * gates and dL/da. */
static inline X(extras) MI(grad_extras)(const XI(problem) *one)
{
    X(extras) ex;
    X(extras_init)(&ex);
    ex.weights = one->part[LINATTN_I_KW].p;
    ex.dweights = XI(part_out)(one, LINATTN_I_DKW);
    ex.gates = one->part[LINATTN_I_GATE].p;
    ex.dgates = XI(part_out)(one, LINATTN_I_DGATE);
    return ex;
}

/* The serial causal backward of problem one (a problem, or a span of
 * its rows) with ex, its dW and db added to the sums: its status, and
 * the row it names in *r. */
int MI(causal_rows)(const XI(problem) *one, const X(extras) *ex, psum *ps,
                    int64_t *r);

/* The end of a backward call: the final agreement (this rank's status,
 * its failing problem first and row of its rows_here), then on success
 * dW and db summed over the ranks into the caller's (MI(psum_write)),
 * the sums freed.  The agreed status. */
int MI(finish)(const bcall *c, MPI_Comm comm, psum *ps, int status,
               int64_t first, int64_t row, int64_t rows_here,
               int64_t *problem, int64_t *grow);

/* The element flags of a local status (an update's, a pass's). */
static inline unsigned MI(status_flags)(int st)
{
    return st == LINATTN_EOVERFLOW ? LINATTN_MPI_F_OVER
           : st                    ? LINATTN_MPI_F_FAIL
                                   : 0;
}

/* The header of a gradient element: the accumulator's gradient at shift
 * c (its header shift is -c: the true gradient is acc exp(-c), and the
 * reductions' pairwise rule then keeps the smallest c with factors <= 1),
 * held tokens (nonzero: the state it is the gradient of has keys, so its
 * shift counts), the status of the pass that made it.  A decayed
 * backward then sets its rows' total log decay (E_DECAY), which the
 * reverse scan composes as the forward's does, and the count's gradient
 * (E_MASS, LINATTN_DENOM_COUNT). */
static inline void MI(gradient_head)(double *el, int64_t len, double c,
                                     int held, int st)
{
    linattn_mpi_i_elem_head(el, len, -c, held ? 1 : 0);
    el[LINATTN_MPI_E_FLAGS] = (double)MI(status_flags)(st);
}

/* The shift of a state, 0 when it holds no keys (no shift counts); its
 * tokens in *tokens. */
static inline double MI(shift_of)(const X(state) *s, int64_t *tokens)
{
    double c = 0;
    X(state_get)(s, LINATTN_ROW_MAJOR, NULL, 0, NULL, tokens);
    X(state_shift)(s, &c);
    return *tokens > 0 ? c : 0;
}

/* A failure's row that names none (r < 0: only dW, db or the keys' sums
 * left the range): far enough below 0 that the final agreement's offset
 * keeps it negative, and the entry points turn it back into -1. */
#define NO_ROW (-((int64_t)1 << 62))

/* The first failure here into *status, *first, *row. */
static inline void MI(note)(int st, int64_t i, int64_t r, int *status,
                            int64_t *first, int64_t *row)
{
    if (st && !*status)
        *status = st, *first = i, *row = r < 0 ? NO_ROW : r;
}

/* Under LINATTN_DENOM_COUNT with dL/da: the count's gradient a rank
 * sends to the earlier ones in its D element's E_MASS, sum_i exp(b_i)
 * hc_i over the n rows of problem one (b_i their running log decay from
 * its first row, hc_i = dL/dden_i); and, with R = dL/dc_end from the
 * later ranks and c_end the count at one's last row, R's share of dL/da
 * of one's rows (nonzero: a sum of finite values beyond the range). */
double MI(count_mass)(const XI(problem) *one, int64_t n);
int MI(count_share)(const XI(problem) *one, int64_t n, double cend,
                    double r);

/* The work of the packed backward calls (packed_backward.c): a packed
 * stream of one problem whose sequences cross ranks. */
int MI(attention_backward_packed)(const XI(problem) *jp, MPI_Comm comm,
                                  MI(work) *w, int64_t *problem,
                                  int64_t *grow);
int MI(causal_backward_packed)(const XI(problem) *jp, MPI_Comm comm,
                               MI(work) *w, int64_t *problem, int64_t *grow);

#endif
