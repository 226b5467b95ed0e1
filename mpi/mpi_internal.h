/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_internal.h -- what the distributed calls share, precision-free:
 * readiness checks, agreement on statuses, and the reduction of states
 * as MPI elements.  Not installed.
 *
 * A state travels as one element of doubles: a header (its length, the
 * shift, flags, the token count as two exact halves, the keys' weight,
 * the total log decay of the rows it covers), then the accumulator [S z]
 * as linattn_d_state_export writes it.  Float states travel as their
 * double accumulators too.
 *
 * Decay (linattn_opts.log_decay, extras.gates): an element is the pair
 * (A, S) of its rows' total log decay and their state, decayed to its
 * last row.  The scans compose (A1, S1) then (A2, S2) as (A1 + A2,
 * e^{A2} S1 + S2): A in log space and in double, since a rank's total
 * decay underflows any float long before its sum of logs loses a digit.
 * The reductions of whole sums (MPI_Allreduce) carry A = 0: non-causal
 * attention does not decay.
 *
 * The flags say what the sums alone cannot: a state that holds NaN or
 * Inf from its inputs (whose sums propagate them, as a merge takes
 * them) is not one whose finite sums overflowed while being added (a
 * merge refuses those); and a rank whose own sums overflowed sends
 * none.  They travel in the header word they share, or-ed, so the
 * reduction moves no more numbers for them.
 */
#ifndef LINATTN_MPI_INTERNAL_H
#define LINATTN_MPI_INTERNAL_H

#include <stdint.h>
#include <mpi.h>
#include "linattn_mpi.h"

enum {
    LINATTN_MPI_E_LEN,   /* m (e + 1), the accumulator's length         */
    LINATTN_MPI_E_SHIFT, /* the accumulator holds the sums times        */
                         /* exp(-shift)                                 */
    LINATTN_MPI_E_FLAGS, /* LINATTN_MPI_F_*, or-ed over the ranks added */
    LINATTN_MPI_E_TOKHI, /* tokens = hi 2^32 + lo, each half exact in a */
    LINATTN_MPI_E_TOKLO, /* double for sums over up to 2^21 ranks       */
    LINATTN_MPI_E_MASS,  /* the keys' total weight, sum w_j (= tokens   */
                         /* without key weights; not shifted; decayed,  */
                         /* the decayed count)                          */
    LINATTN_MPI_E_DECAY, /* A <= 0, the total log decay of the rows the */
                         /* element covers (0: none), in double         */
    LINATTN_MPI_HEAD     /* header length                               */
};

/* The flags of an element (held as a double, exact). */
enum {
    LINATTN_MPI_F_FAIL = 1,   /* a rank failed to build its state (the   */
                              /* call stops)                             */
    LINATTN_MPI_F_OVER = 2,   /* a rank's own sums of finite keys and    */
                              /* values overflowed (its state is absent) */
    LINATTN_MPI_F_POISON = 4, /* a state holds NaN or Inf                */
    LINATTN_MPI_F_START = 8   /* a segmented scan's element that starts  */
                              /* a segment: nothing before it adds in    */
};

/* The flags of element el. */
static inline unsigned linattn_mpi_i_flags(const double *el)
{
    return (unsigned)el[LINATTN_MPI_E_FLAGS];
}

/* The most key words linattn_mpi_i_agree compares. */
#define LINATTN_MPI_MAX_KEYS 7

/* The kind of a collective call: the first key word of its agreement,
 * so that ranks in different calls (attention here, causal there; an
 * allreduce here, an exscan there) are refused with LINATTN_EMISMATCH
 * instead of meeting in different collectives. */
enum {
    LINATTN_MPI_CALL_ATTENTION = 1, /* and the batched one */
    LINATTN_MPI_CALL_CAUSAL,        /* and the batched one */
    LINATTN_MPI_CALL_ALLREDUCE,
    LINATTN_MPI_CALL_EXSCAN,
    LINATTN_MPI_CALL_SAVE,
    LINATTN_MPI_CALL_LOAD,
    LINATTN_MPI_CALL_ATTENTION_BACKWARD, /* and the batched one */
    LINATTN_MPI_CALL_CAUSAL_BACKWARD     /* and the batched one */
};

/* A kind's low byte is the call; the bits above it options that every
 * rank must give alike (the backward's dW, db, a handed state), so that
 * a difference is LINATTN_EMISMATCH like a different call. */
#define LINATTN_MPI_KIND(kind) ((kind) & 0xff)

/* 0 when MPI is initialized, not finalized, called on a thread allowed
 * to call it (any at MPI_THREAD_SERIALIZED and above, else the one that
 * initialized it), and comm is an intra-communicator; LINATTN_EMPIUSE
 * when MPI cannot be used, LINATTN_EMPI when an MPI query failed, 1 for
 * a bad comm.  No communication. */
int linattn_mpi_i_ready(MPI_Comm comm);

/* Agreement on arguments, before data moves (one MPI_Allreduce of a few
 * words): the status of the first rank (in rank order) whose status is
 * nonzero; else LINATTN_EMISMATCH when keys[0 .. nkeys) differ across
 * ranks; else 0.  LINATTN_EMPI when MPI fails. */
int linattn_mpi_i_agree(MPI_Comm comm, int status, const uint64_t *keys,
                        int nkeys);

/* Agreement on run-time statuses, after the work: the status of the
 * first failing problem (problem, numbered across a call, then rank) is
 * returned on every rank with its problem in *gproblem and, for
 * LINATTN_EDENOM and LINATTN_EOVERFLOW, its global row in *grow (row
 * within this rank's rows, rows_here, of which every rank's add up in
 * rank order), else -1.  As the serial calls report their first failing
 * row whatever its kind, so this reports the first failing row (of the
 * first failing problem) over the ranks: rows are in rank order.
 * One MPI_Allreduce when nothing failed; another and a Bcast more when
 * something did. */
int linattn_mpi_i_agree_final(MPI_Comm comm, int status, int64_t problem,
                              int64_t row, int64_t rows_here,
                              int64_t *gproblem, int64_t *grow);

/* Fills an element's header: an accumulator of len entries at shift
 * holding tokens keys (flags 0, no decay). */
void linattn_mpi_i_elem_head(double *elem, int64_t len, double shift,
                             int64_t tokens);

/* The token count of an element, or -1 when it exceeds INT64_MAX. */
int64_t linattn_mpi_i_elem_tokens(const double *elem);

/* b = a then b for one element each, as the scans compose them (a the
 * earlier). */
void linattn_mpi_i_compose(const double *a, double *b);

/* The sum of count elements of LINATTN_MPI_HEAD + len doubles over every
 * rank, in place (one MPI_Allreduce).  Sums bring each pair of states to
 * the larger shift before adding; a state without tokens is added as it
 * is, as linattn_d_state_merge does.  Returns 0 or LINATTN_EMPI. */
int linattn_mpi_i_allreduce(MPI_Comm comm, double *elems, int64_t count,
                            int64_t len);

/* The exclusive prefix: result on rank r = the sum of partial over ranks
 * 0 .. r-1 (rank 0: zero elements), added as linattn_mpi_i_allreduce
 * adds (and decayed as linattn_mpi_i_segmented_exscan composes), in
 * ceil(log2 P) MPI_Sendrecv steps on comm (a private
 * communicator: linattn_mpi_i_private).  partial is overwritten, recv is
 * scratch; all three hold count elements.  Returns 0 or LINATTN_EMPI. */
int linattn_mpi_i_exscan(MPI_Comm comm, double *partial, double *result,
                         double *recv, int64_t count, int64_t len);

/* linattn_mpi_i_exscan with segments and decay, in either direction.
 * The scans compose in rank order (the reverse one in reversed rank
 * order), each element's decay A (LINATTN_MPI_E_DECAY) decaying what
 * comes before it: (A1, S1) then (A2, S2) is (A1 + A2, e^{A2} S1 + S2),
 * the factor one exponential with the one that brings S1 to the common
 * shift (every exponent <= 0).  The same holds for gradients
 * scanned from the last rank down (their header shift is -c: the true
 * gradient is acc exp(shift) too).  Forward:
 * result on rank r = the sum of partial over ranks q < r after the last
 * such q whose element is marked LINATTN_MPI_F_START (that q's own
 * included: its element is the start of the segment r is in); reverse:
 * over ranks q > r, up to the first marked one.  The marked elements
 * are those after a sequence boundary of a packed stream (forward: the
 * keys after the rank's last boundary; reverse: those before its
 * first), so that result is the part of rank r's boundary sequence that
 * other ranks hold.  The combination (a, fa) + (b, fb) = (fb ? b : a +
 * b, fa | fb) is associative, not commutative: the steps keep rank
 * order.  A failure flag (LINATTN_MPI_F_FAIL) crosses every segment.
 * Same steps, messages and returns as linattn_mpi_i_exscan. */
int linattn_mpi_i_segmented_exscan(MPI_Comm comm, int reverse, double *partial,
                                   double *result, double *recv,
                                   int64_t count, int64_t len);

/* The library's private duplicate of comm, for its point-to-point
 * messages (cached on comm as an attribute, made once, freed with comm).
 * Before the agreement, linattn_mpi_i_private_prepare allocates what a
 * first use needs (*holder; NULL when comm already has its duplicate):
 * 0 or LINATTN_ENOMEM.  After it, linattn_mpi_i_private (collective the
 * first time: MPI_Comm_dup) sets *priv and takes holder over: 0 or
 * LINATTN_EMPI. */
int linattn_mpi_i_private_prepare(MPI_Comm comm, void **holder);
int linattn_mpi_i_private(MPI_Comm comm, void *holder, MPI_Comm *priv);

#endif
