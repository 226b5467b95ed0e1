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

/* Nonzero when an element of the set (count of them) says a rank
 * failed. */
static inline int MI(any_failed)(const MI(work) *w, double *set,
                                 int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        if (linattn_mpi_i_flags(MI(elem)(w, set, i)) & LINATTN_MPI_F_FAIL)
            return 1;
    return 0;
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

/* ---- Packed streams across ranks (mpi/packed.c) ---- */

/* Where this rank's rows lie in the packed stream, and the boundaries
 * among them.  Rows [0, first_end) belong to the sequence open at g0 (lo
 * - 1), rows [last_start, n) to the one open at g1 - 1 (lo + inner - 1);
 * inner: the boundaries strictly inside (0, n), the offsets off[lo .. lo
 * + inner). */
typedef struct {
    int64_t g0, n;
    int64_t lo, inner;
    int64_t first_end, last_start;
    int at_start, at_end; /* a boundary at row 0, at row n (n > 0) */
} MI(place);

/* This rank's place in the packed stream of j (its offsets agreed):
 * g0, the rows of the ranks before it, by an exclusive sum in ceil(log2
 * P) exchanges on w->scan_comm, and every rank's rows in all, which must
 * be the offsets' end (else -ex_arg, on every rank alike).  0, -ex_arg
 * or LINATTN_EMPI. */
int MI(packed_place)(const XI(problem) *j, MPI_Comm comm, MI(work) *w,
                     int ex_arg, MI(place) *p);

/* Local offsets of the sequences between rows from and to of this rank
 * (boundaries off[p->lo + 1 .. p->lo + count] inside, relative to from):
 * count + 2 entries, count + 1 sequences, malloc'd (NULL: no memory). */
int64_t *MI(local_offsets)(const int64_t *off, const MI(place) *p,
                           int64_t count, int64_t from, int64_t to);

/* Sequence s's starting state (NULL: none given, a zero one). */
X(state) *MI(seed_of)(const XI(problem) *j, int64_t s);

/* The first failure among a rank's serial calls, in row order: st (with
 * row within a call that starts at row at) into *status, *frow unless
 * one is there. */
void MI(first_failure)(int st, int64_t row, int64_t at, int *status,
                       int64_t *frow);

/* A causal call's prefix of its first sequence (j packed, this rank at
 * p): the scan element of its keys after its last boundary (with their
 * sequence's starting state when it starts here; with last_rank, at a
 * boundary at its end, or with *status, an empty one), marked as a
 * segment's start at a boundary, then the forward segmented scan into
 * w->prefix (ceil(log2 P) exchanges).  local (if not NULL): the
 * element's header, before the scan.  A failure to build it goes into
 * *status (its element marked failed).  0 or LINATTN_EMPI. */
int MI(causal_prefix)(const XI(problem) *j, MI(work) *w, const MI(place) *p,
                      int last_rank, int *status, double *local);

/* A non-causal call's boundary sequences (j packed, this rank at p): the
 * states of all the keys of the sequence open at this rank's first row
 * (w->first) and of the one open at its last (w->last; the same sequence
 * when no boundary lies inside, then in w->first), from this rank's keys
 * (and their starting states where they start here), the keys earlier
 * ranks hold (a forward segmented scan) and later ones (a reverse one).
 * lfirst, llast (if not NULL): this rank's keys' states alone.  *go:
 * nonzero when no rank failed (*status, or a failure flag from the
 * scans: every rank stops alike); then *rf, *rl: the first's, the last's
 * sums refused (beyond the range).  0 or LINATTN_EMPI. */
int MI(boundary_states)(const XI(problem) *j, MI(work) *w, const MI(place) *p,
                        int *status, X(state) *lfirst, X(state) *llast,
                        int *go, int *rf, int *rl);

/* Nonzero when ex's offsets describe a packed stream a distributed call
 * takes (or there are none): nseq >= 0, offsets given with sequences,
 * nq == nk (a token is a query and a key), from 0 without decreasing
 * (their end, every rank's rows, is checked by MI(packed_place)). */
int MI(offsets_ok)(const X(extras) *ex, int64_t nq, int64_t nk);

/* The per-sequence states: every entry a state of plan (by fingerprint),
 * and when absorbing no state twice.  0, -arg or LINATTN_ENOMEM. */
int MI(states_ok)(const X(plan) *plan, const X(extras) *ex, int arg);

/* The number of problems of a call whose checks passed (0 when they
 * did not: batch and heads are not read then). */
static inline int64_t MI(problems)(const XI(problem) *j)
{
    return j->batch > 0 && j->heads > 0 ? j->batch * j->heads : 0;
}

#endif
