/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.c -- the library's private communicator beside each caller's.
 *
 * The exclusive scan (reduce.c) sends point-to-point messages.  On the
 * caller's communicator they could match the caller's own receives
 * (MPI_ANY_SOURCE, MPI_ANY_TAG), so they travel on a duplicate of it,
 * made on first use and cached on the caller's communicator as an
 * attribute (as PETSc caches its inner communicators); the attribute's
 * delete callback frees the duplicate when the caller frees the
 * communicator (or MPI_Finalize deletes it).  MPI_Comm_dup is collective:
 * every rank reaches it in the same call, after the agreement, and the
 * attribute's presence is the same on every rank because every rank has
 * made the same calls on the communicator.
 */
#include <stdlib.h>
#include "mpi_internal.h"

/* Created once; MPI is called from one thread (linattn_mpi.h, Threads). */
static int dup_key = MPI_KEYVAL_INVALID;

static int drop_dup(MPI_Comm comm, int key, void *value, void *extra)
{
    (void)comm, (void)key, (void)extra;
    MPI_Comm *dup = value;
    int st = MPI_Comm_free(dup);
    free(dup);
    return st;
}

/* Whether comm already holds its duplicate (into *dup); -1 when MPI
 * fails. */
static int cached(MPI_Comm comm, MPI_Comm *dup)
{
    if (dup_key == MPI_KEYVAL_INVALID &&
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, drop_dup, &dup_key,
                               NULL) != MPI_SUCCESS)
        return -1;
    void *value;
    int flag = 0;
    if (MPI_Comm_get_attr(comm, dup_key, &value, &flag) != MPI_SUCCESS)
        return -1;
    if (flag)
        *dup = *(MPI_Comm *)value;
    return flag;
}

int linattn_mpi_i_private_prepare(MPI_Comm comm, void **holder)
{
    MPI_Comm dup;
    *holder = NULL;
    int has = cached(comm, &dup);
    if (has < 0)
        return LINATTN_EMPI;
    if (!has && !(*holder = malloc(sizeof(MPI_Comm))))
        return LINATTN_ENOMEM;
    return 0;
}

int linattn_mpi_i_private(MPI_Comm comm, void *holder, MPI_Comm *priv)
{
    if (!holder) /* prepare found the duplicate */
        return cached(comm, priv) == 1 ? 0 : LINATTN_EMPI;
    MPI_Comm *dup = holder;
    if (MPI_Comm_dup(comm, dup) != MPI_SUCCESS) {
        free(dup);
        return LINATTN_EMPI;
    }
    if (MPI_Comm_set_attr(comm, dup_key, dup) != MPI_SUCCESS) {
        MPI_Comm_free(dup);
        free(dup);
        return LINATTN_EMPI;
    }
    *priv = *dup;
    return 0;
}
