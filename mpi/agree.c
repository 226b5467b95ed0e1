/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * agree.c -- readiness and agreement: every rank returns the same status
 * (PETSc's collective semantics), decided by small reductions.
 */
#include <limits.h>
#include "mpi_internal.h"

int linattn_mpi_i_ready(MPI_Comm comm)
{
    int flag = 0, provided = MPI_THREAD_SINGLE;
    if (MPI_Initialized(&flag) != MPI_SUCCESS)
        return LINATTN_EMPI;
    if (!flag)
        return LINATTN_EMPIUSE;
    if (MPI_Finalized(&flag) != MPI_SUCCESS)
        return LINATTN_EMPI;
    if (flag)
        return LINATTN_EMPIUSE;
    /* Every level is accepted: the library calls MPI only from the
     * calling thread, outside its OpenMP teams (which never call MPI), so
     * MPI_THREAD_SINGLE is run as FUNNELED is (linattn_mpi.h, Threads).
     * Below SERIALIZED only the thread that initialized MPI may call it. */
    if (MPI_Query_thread(&provided) != MPI_SUCCESS)
        return LINATTN_EMPI;
    if (provided < MPI_THREAD_SERIALIZED) {
        if (MPI_Is_thread_main(&flag) != MPI_SUCCESS)
            return LINATTN_EMPI;
        if (!flag)
            return LINATTN_EMPIUSE;
    }
    if (comm == MPI_COMM_NULL)
        return 1;
    if (MPI_Comm_test_inter(comm, &flag) != MPI_SUCCESS)
        return LINATTN_EMPI;
    return flag ? 1 : 0;
}

const char *linattn_mpi_strerror(int status)
{
    if (status != LINATTN_EMPIUSE)
        return linattn_strerror(status);
    int flag = 0, provided = MPI_THREAD_SINGLE;
    if (MPI_Initialized(&flag) != MPI_SUCCESS || !flag)
        return "MPI is not initialized: call MPI_Init (or MPI_Init_thread("
               "..., MPI_THREAD_FUNNELED, ...)) before liblinattn_mpi";
    if (MPI_Finalized(&flag) != MPI_SUCCESS || flag)
        return "MPI is already finalized: liblinattn_mpi calls must come "
               "before MPI_Finalize";
    if (MPI_Query_thread(&provided) != MPI_SUCCESS ||
        provided >= MPI_THREAD_SERIALIZED) /* no thread case to name */
        return linattn_strerror(status);
    if (provided == MPI_THREAD_SINGLE)
        return "MPI was initialized at MPI_THREAD_SINGLE (plain MPI_Init), "
               "and this call came from a thread other than the one that "
               "initialized it: call from that thread, or start MPI with "
               "MPI_Init_thread(..., MPI_THREAD_SERIALIZED, ...) (or "
               "MPI_THREAD_MULTIPLE)";
    return "MPI was initialized at MPI_THREAD_FUNNELED, and this call came "
           "from a thread other than the one that initialized it: call from "
           "that thread, or start MPI with MPI_Init_thread(..., "
           "MPI_THREAD_SERIALIZED, ...) (or MPI_THREAD_MULTIPLE)";
}

int linattn_mpi_i_agree(MPI_Comm comm, int status, const uint64_t *keys,
                        int nkeys)
{
    int rank, size;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return LINATTN_EMPI;
    /* One maximum decides everything: word 0 ranks failures by rank (the
     * lowest failing rank has the largest size - rank) and carries that
     * rank's status in its low half; each key k goes as k and ~k, whose
     * maxima give the largest and the smallest k. */
    /* Every agreement has the same length, so that ranks on different
     * paths (an argument error here, the work there) still match. */
    uint64_t w[1 + 2 * LINATTN_MPI_MAX_KEYS] = {0};
    if (status)
        w[0] = (uint64_t)(size - rank) << 32 | (uint32_t)status;
    for (int i = 0; !status && i < nkeys; i++) {
        w[1 + 2 * i] = keys[i];
        w[2 + 2 * i] = ~keys[i];
    }
    if (MPI_Allreduce(MPI_IN_PLACE, w, 1 + 2 * LINATTN_MPI_MAX_KEYS,
                      MPI_UINT64_T, MPI_MAX, comm) != MPI_SUCCESS)
        return LINATTN_EMPI;
    if (w[0])
        return (int)(int32_t)(uint32_t)(w[0] & 0xffffffffu);
    for (int i = 0; i < nkeys; i++)
        if (w[1 + 2 * i] != ~w[2 + 2 * i])
            return LINATTN_EMISMATCH;
    return 0;
}

int linattn_mpi_refuse(MPI_Comm comm, int comm_arg, int status)
{
    if (!status)
        return -3;
    int ready = linattn_mpi_i_ready(comm);
    if (ready)
        return status < 0 && -status < comm_arg ? status
               : ready == 1                    ? -comm_arg
                                               : ready;
    /* a rank with a status sends no keys: it matches any call's agreement */
    return linattn_mpi_i_agree(comm, status, NULL, 0);
}

int linattn_mpi_i_agree_final(MPI_Comm comm, int status, int64_t problem,
                              int64_t row, int64_t rows_here,
                              int64_t *gproblem, int64_t *grow)
{
    int rank;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return LINATTN_EMPI;
    struct {
        long value;
        int rank;
    } mine = {status ? (long)problem : LONG_MAX, rank}, first;
    if (MPI_Allreduce(&mine, &first, 1, MPI_LONG_INT, MPI_MINLOC, comm) !=
        MPI_SUCCESS)
        return LINATTN_EMPI;
    if (first.value == LONG_MAX)
        return 0;
    /* The error path: where the failing rank's rows start (the rows of
     * the ranks before it: one more reduction, where MPI_Exscan may be a
     * chain of P - 1 hops), then that rank's word to everyone. */
    int64_t below = rank < first.rank ? rows_here : 0, offset = 0;
    if (MPI_Allreduce(&below, &offset, 1, MPI_INT64_T, MPI_SUM, comm) !=
        MPI_SUCCESS)
        return LINATTN_EMPI;
    int has_row = status == LINATTN_EDENOM || status == LINATTN_EOVERFLOW;
    int64_t msg[3] = {status, problem, has_row ? offset + row : -1};
    if (MPI_Bcast(msg, 3, MPI_INT64_T, first.rank, comm) != MPI_SUCCESS)
        return LINATTN_EMPI;
    *gproblem = msg[1];
    *grow = msg[2];
    return (int)msg[0];
}
