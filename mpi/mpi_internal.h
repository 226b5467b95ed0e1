/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpi_internal.h -- what the distributed calls share, precision-free:
 * readiness checks, agreement on statuses, and the reduction of states
 * as MPI elements.  Not installed.
 *
 * A state travels as one element of doubles: a header (its length, the
 * shift, a failure flag, the token count as two exact halves), then the
 * accumulator [S z] as linattn_d_state_export writes it.  Float states
 * travel as their double accumulators too.
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
    LINATTN_MPI_E_FAIL,  /* nonzero: a rank failed to build its state   */
    LINATTN_MPI_E_TOKHI, /* tokens = hi 2^32 + lo, each half exact in a */
    LINATTN_MPI_E_TOKLO, /* double for sums over up to 2^21 ranks       */
    LINATTN_MPI_HEAD     /* header length                               */
};

/* The most key words linattn_mpi_i_agree compares. */
#define LINATTN_MPI_MAX_KEYS 4

/* 0 when MPI is initialized, not finalized, at the thread level the
 * library needs, on a thread allowed to call it, and comm is an
 * intra-communicator; LINATTN_EMPI for the former, 1 for a bad comm.
 * No communication. */
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
 * LINATTN_EDENOM, its global row in *grow (row within this rank's rows,
 * rows_here, of which every rank's add up in rank order), else -1.
 * One MPI_Allreduce when nothing failed; an Exscan and a Bcast more when
 * something did. */
int linattn_mpi_i_agree_final(MPI_Comm comm, int status, int64_t problem,
                              int64_t row, int64_t rows_here,
                              int64_t *gproblem, int64_t *grow);

/* Fills an element's header: an accumulator of len entries at shift
 * holding tokens keys (fail 0). */
void linattn_mpi_i_elem_head(double *elem, int64_t len, double shift,
                             int64_t tokens);

/* The token count of an element, or -1 when it exceeds INT64_MAX. */
int64_t linattn_mpi_i_elem_tokens(const double *elem);

/* count elements of LINATTN_MPI_HEAD + len doubles: with exscan 0,
 * result = their sum over every rank (MPI_Allreduce; result may be elems:
 * in place); with exscan 1, result on rank r = the sum over ranks
 * 0 .. r-1 (MPI_Exscan; rank 0 gets zero elements; result != elems).
 * Sums bring each pair of states to the larger shift before adding.
 * Returns 0 or LINATTN_EMPI. */
int linattn_mpi_i_reduce(MPI_Comm comm, double *elems, double *result,
                         int64_t count, int64_t len, int exscan);

#endif
