/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mprec.h -- the precision switch of liblinattn_mpi, as lib/common/prec.h is
 * liblinattn's: every precision-generic file here is compiled twice,
 * plain (double) and with LINATTN_SINGLE (float).  X() names the serial
 * library's public API, MX() this library's, MI() its internals.
 */
#ifndef LINATTN_MPI_PREC_H
#define LINATTN_MPI_PREC_H

#include <string.h>
#include "mpi_internal.h"
#include "attn/problem.h"

/* The precision switch is the serial library's (common/prec.h: real, X()
 * for its public API); MX() names this library's API, MI() its
 * internals. */
#ifdef LINATTN_SINGLE
#define MX(name) linattn_mpi_s_##name
#define MI(name) linattn_mpi_si_##name
#else
#define MX(name) linattn_mpi_d_##name
#define MI(name) linattn_mpi_di_##name
#endif

/* A distributed call's problems are described as the serial library
 * describes its own (attn/problem.h: the same struct and accessors,
 * XI(part_at) for problem i's matrix): batch x heads of them (one for the
 * single calls), each of nq queries and nk keys on this rank (nk = n for
 * the causal ones).  Only Q, K, V and out are used here; the widths d, m,
 * e are not (0). */
static inline XI(problem) MI(problem)(const X(plan) *plan, int layout,
                                      int64_t batch, int64_t heads,
                                      int64_t nq, int64_t nk)
{
    XI(problem) pb;
    memset(&pb, 0, sizeof pb);
    pb.plan = plan;
    pb.layout = layout;
    pb.batch = batch;
    pb.heads = heads;
    pb.nq = nq;
    pb.nk = nk;
    return pb;
}

/* Part i of a single problem as the serial calls take it: pointer and
 * leading dimension (two arguments), an output's pointer not const. */
#define MI_IN(one, i) (one).part[i].p, (one).part[i].s.ld
#define MI_OUT(one, i) XI(part_out)(&(one), i), (one).part[i].s.ld

/* What a distributed call holds: a scratch state, an element per problem
 * (and for the exclusive prefix two more sets, the prefix and the scan's
 * receive buffer, and the private communicator it runs on; for a packed
 * stream two states and two sets more), each element of LINATTN_MPI_HEAD
 * + len doubles. */
typedef struct {
    X(state) *state;
    double *elems, *prefix, *recv;
    /* packed streams (mpi/packed.c): the keys of this rank's first and
     * last sequence, the reverse scan's elements and its result (the
     * suffix) */
    X(state) *first, *last;
    double *back, *suffix;
    int64_t len;
    void *holder;       /* for the private communicator's first use */
    MPI_Comm scan_comm; /* the private communicator (prefix calls) */
} MI(work);

/* After the local checks (status: the serial _check's, positions already
 * those of the distributed call): allocates the work (the prefix's sets
 * for the kinds LINATTN_MPI_CALL_CAUSAL and _EXSCAN), then agrees with
 * every rank on the status, the call's kind, and the plan's fingerprint,
 * batch and heads; a prefix call then gets its private communicator.
 * Returns the agreed status; on a nonzero one nothing is held. */
int MI(begin)(const XI(problem) *j, MPI_Comm comm, int status, int kind,
              MI(work) *w);
void MI(end)(MI(work) *w);

/* Element i of a set. */
static inline double *MI(elem)(const MI(work) *w, double *set, int64_t i)
{
    return set + i * (LINATTN_MPI_HEAD + w->len);
}

/* The state into element el, marked LINATTN_MPI_F_POISON when its sums
 * hold NaN or Inf; or with flags (LINATTN_MPI_F_FAIL, _OVER) an empty
 * element marked so. */
void MI(pack)(const X(state) *state, int64_t len, unsigned flags, double *el);

/* Nonzero when the sums of el cannot be taken: a rank's own sums
 * overflowed (LINATTN_MPI_F_OVER), or states without NaN and Inf added
 * up beyond the range of the working precision (in float, the float
 * copy's), which linattn_d_state_merge refuses.  Sums that hold NaN or
 * Inf from the inputs are taken, as the merge takes them. */
int MI(overflowed)(const double *el);

/* Element el into the state: 0, or LINATTN_ESIZE when its tokens (plus
 * more, those about to be added) exceed int64. */
int MI(unpack)(X(state) *state, const double *el, int64_t more);

/* The log decays of rows [lo, hi) of problem one (a single problem, or
 * one of a batched call's: its head's decay added to the plan's), summed
 * in double as the serial library sums them: the total a scan element of
 * those rows carries. */
double MI(decay_total)(const XI(problem) *one, int64_t lo, int64_t hi);

/* A causal scan's element of problem one's keys [lo, hi) (one problem
 * of this rank's rows) into el: the state of seed (NULL: none) aged over
 * those rows and their keys, weighted by the problem's key weights and
 * decayed as the serial causal path decays them (the plan's decay, the
 * problem's head's and its gates) to row hi - 1, with their total log
 * decay.  Built as the scans compose: the seed's element, then the keys'
 * state from zero (one serial update; a head's decay, which the serial
 * update does not take, as a gate of every row a block of rows at a time,
 * each block's element composed in turn: no copy that grows with the
 * rows), so that its shift is the largest key exponent, as the serial
 * causal path's.  w->state is scratch, and tmp (an element) too when
 * there is a seed or a head's decay.  0, or the update's status (el then
 * not built). */
int MI(keys_element)(MI(work) *w, const XI(problem) *one, const X(state) *seed,
                     int64_t lo, int64_t hi, double *el, double *tmp);

/* Each problem's state of this rank's keys (with skip, an empty one)
 * into its element (with its weights and decay: MI(keys_element)), then
 * one reduction of them all: the sum into
 * w->elems, or with exscan the exclusive prefix into w->prefix (w->elems
 * then overwritten).  A problem whose sums overflow here
 * (LINATTN_EOVERFLOW from the update) goes as an empty element marked
 * LINATTN_MPI_F_OVER: not a failure of this rank, whose rows report it
 * (causal) or whose sum is refused (MI(overflowed)).  One whose state
 * could not be built otherwise goes marked failed; the first such is
 * *status, *first.  Returns LINATTN_EMPI when MPI failed, else 0. */
int MI(reduce_local)(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                     int skip, int exscan, int *status, int64_t *first);

/* The work of a call after the agreement, ending with the final one:
 * returns the agreed status, and the failing problem and global row. */
typedef int (*MI(work_fn))(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                           int64_t *problem, int64_t *row);

/* A whole distributed call of a kind (LINATTN_MPI_CALL_*): readiness
 * (without communication: -1 when the plan is NULL, else LINATTN_EMPIUSE,
 * LINATTN_EMPI or -2 for comm), then with status, the serial _check's (its positions
 * shifted past the communicator; a decayed plan -1 unless the kind is
 * the causal forward's, the only one whose scans decay), MI(begin), f,
 * MI(end); then
 * the failure's place: the global row into *bad_row on LINATTN_EDENOM
 * and LINATTN_EOVERFLOW (the single calls), the problem and row into
 * *bad (the batched ones); either may be NULL. */
int MI(run)(const XI(problem) *j, MPI_Comm comm, int status, int kind,
            MI(work_fn) f, int64_t *bad_row, linattn_where *bad);

/* The problem of a batched call whose checks gave status (strides read
 * only when they passed; no problems otherwise). */
XI(problem) MI(batched_problem)(int status, const X(plan) *plan, int layout,
                                int64_t batch, int64_t heads, int64_t nq,
                                int64_t nk, const real *q,
                                const linattn_strides *sq, const real *k,
                                const linattn_strides *sk, const real *v,
                                const linattn_strides *sv, real *out,
                                const linattn_strides *sout);

/* Nonzero when the byte ranges [a, a + na) and [b, b + nb) meet. */
int MI(meet)(const void *a, size_t na, const void *b, size_t nb);

/* The bytes of an n x e matrix in layout with leading dimension ld (one
 * that passed the serial checks: addressable). */
size_t MI(mat_bytes)(int layout, int64_t n, int64_t e, int64_t ld);

/* The number of problems of a call whose checks passed (0 when they
 * did not: batch and heads are not read then). */
static inline int64_t MI(problems)(const XI(problem) *j)
{
    return j->batch > 0 && j->heads > 0 ? j->batch * j->heads : 0;
}

#endif
