/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * checkpoint.c -- collective checkpoint/restart of a state that every
 * rank holds: one file, written atomically by rank 0, read once by rank 0
 * and broadcast; every rank returns the same status.  The file format and
 * its verification are liblinattn's (doc/checkpoint-format.md).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "mprec.h"

/* The checks and buffers both calls share: state (-1), path (-2), the
 * plan's fingerprint, a buffer of one checkpoint (*len bytes) and, for a
 * load, a scratch state.  Returns the agreed status (comm ready). */
static int begin(const X(state) *state, const char *path, MPI_Comm comm,
                 unsigned char **buf, int64_t *len, X(state) **scratch)
{
    uint64_t keys[2] = {scratch ? LINATTN_MPI_CALL_LOAD : LINATTN_MPI_CALL_SAVE,
                        0};
    int st = !state ? -1 : !path || !*path ? -2 : 0;
    *buf = NULL;
    *len = 0;
    if (scratch)
        *scratch = NULL;
    if (!st) {
        const X(plan) *plan;
        X(state_plan)(state, &plan);
        X(plan_fingerprint)(plan, &keys[1]);
        X(state_save_size)(state, len);
        if (*len > INT_MAX) /* one MPI count of bytes */
            st = LINATTN_ESIZE;
        else if (!(*buf = malloc((size_t)*len)) ||
                 (scratch && X(state_create)(scratch, plan)))
            st = LINATTN_ENOMEM;
    }
    st = linattn_mpi_i_agree(comm, st, keys, 2);
    if (st) {
        free(*buf);
        if (scratch)
            X(state_destroy)(*scratch);
    }
    return st;
}

/* The status before any communication (LAPACKE's order: state and path,
 * arguments 1 and 2, before comm), or 0 when comm is ready. */
static int ready(const void *state, const char *path, MPI_Comm comm)
{
    int r = linattn_mpi_i_ready(comm);
    if (!r)
        return 0;
    return !state ? -1 : !path || !*path ? -2 : r == 1 ? -3 : r;
}

/* Broadcasts rank 0's status: 0, its status, or LINATTN_EMPI. */
static int bcast_status(int st, MPI_Comm comm)
{
    return MPI_Bcast(&st, 1, MPI_INT, 0, comm) == MPI_SUCCESS ? st
                                                             : LINATTN_EMPI;
}

int MX(state_save_file)(const X(state) *state, const char *path,
                        MPI_Comm comm)
{
    int rank, st = ready(state, path, comm);
    if (st)
        return st;
    unsigned char *buf, *mine = NULL;
    int64_t len;
    st = begin(state, path, comm, &buf, &len, NULL);
    if (st)
        return st;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS) {
        free(buf);
        return LINATTN_EMPI;
    }
    /* Every rank compares its state with rank 0's, byte for byte. */
    X(state_save)(state, buf, len, NULL);
    if (rank > 0 && !(mine = malloc((size_t)len)))
        st = LINATTN_ENOMEM;
    if (mine)
        X(state_save)(state, mine, len, NULL);
    if (MPI_Bcast(buf, (int)len, MPI_BYTE, 0, comm) != MPI_SUCCESS)
        st = LINATTN_EMPI;
    else if (mine && memcmp(mine, buf, (size_t)len) != 0)
        st = LINATTN_EMISMATCH;
    free(mine);
    if (st != LINATTN_EMPI)
        st = linattn_mpi_i_agree(comm, st, NULL, 0);
    if (!st)
        st = bcast_status(rank == 0 ? X(state_save_file)(state, path) : 0,
                          comm);
    free(buf);
    return st;
}

int MX(state_load_file)(X(state) *state, const char *path, MPI_Comm comm)
{
    int rank, st = ready(state, path, comm);
    if (st)
        return st;
    unsigned char *buf;
    int64_t len;
    X(state) *scratch;
    st = begin(state, path, comm, &buf, &len, &scratch);
    if (st)
        return st;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS) {
        st = LINATTN_EMPI;
        goto done;
    }
    /* Read and verified once, on rank 0; its bytes then go to everyone,
     * who verify them again before anyone's state changes. */
    if (rank == 0) {
        st = X(state_load_file)(scratch, path);
        if (!st)
            X(state_save)(scratch, buf, len, NULL);
    }
    st = bcast_status(st, comm);
    if (st)
        goto done;
    if (MPI_Bcast(buf, (int)len, MPI_BYTE, 0, comm) != MPI_SUCCESS) {
        st = LINATTN_EMPI;
        goto done;
    }
    st = linattn_mpi_i_agree(comm, X(state_load)(scratch, buf, len), NULL, 0);
    if (!st)
        X(state_copy)(state, scratch);
done:
    free(buf);
    X(state_destroy)(scratch);
    return st;
}
