/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pmpi.h -- the MPI profiling interface in a test program: its own
 * MPI_Sendrecv, MPI_Exscan and MPI_Allreduce count the calls that
 * liblinattn_mpi makes (a symbol of the executable takes precedence over
 * libmpi's, and each calls libmpi's PMPI_ entry point), and fail on
 * request as a failing MPI call does under MPI_ERRORS_RETURN, to provoke
 * the library's LINATTN_EMPI paths.  Include it in one file per program.
 */
#ifndef LINATTN_PMPI_H
#define LINATTN_PMPI_H

#include <mpi.h>

static int pm_sendrecv_calls, pm_exscan_calls;
/* nonzero: the next calls of that kind fail without communicating */
static int pm_fail_sendrecv, pm_fail_allreduce;

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 int dest, int sendtag, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status)
{
    pm_sendrecv_calls++;
    if (pm_fail_sendrecv)
        return MPI_ERR_OTHER;
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                         recvcount, recvtype, source, recvtag, comm, status);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    pm_exscan_calls++;
    return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    if (pm_fail_allreduce)
        return MPI_ERR_OTHER;
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

#endif
