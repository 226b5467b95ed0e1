/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mpi_single.c -- a program that initializes MPI with plain MPI_Init
 * (MPI_THREAD_SINGLE with Open MPI): every call of liblinattn_mpi returns
 * LINATTN_EMPI on every rank, without communicating, because liblinattn
 * may run OpenMP threads inside a call (linattn_mpi.h, Threads).  Also
 * before MPI_Init and after MPI_Finalize.
 */
#include <stdlib.h>
#include "linattn_mpi.h"
#include "mpitest.h"

static linattn_d_plan *plan;
static linattn_d_state *state;

static int every_call(void)
{
    double x[2] = {1, 1}, o[2];
    linattn_strides s = {2, 0, 0};
    int bad = 0;
    bad += linattn_mpi_d_attention(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, 1, 1, x, 2, x, 2,
                                   x, 2, o, 2, NULL) != LINATTN_EMPI;
    bad += linattn_mpi_d_causal(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, 1, x, 2, x, 2, x, 2,
                                o, 2, NULL) != LINATTN_EMPI;
    bad += linattn_mpi_d_batched_attention(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, 1, 1, 1,
                                           1, x, &s, x, &s, x, &s, o, &s, NULL) != LINATTN_EMPI;
    bad += linattn_mpi_d_batched_causal(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, 1, 1, 1, x,
                                        &s, x, &s, x, &s, o, &s, NULL) != LINATTN_EMPI;
    bad += linattn_mpi_d_state_allreduce(&state, 1, MPI_COMM_WORLD) != LINATTN_EMPI;
    bad += linattn_mpi_d_state_exscan(&state, 1, MPI_COMM_WORLD) != LINATTN_EMPI;
    bad += linattn_mpi_d_state_save_file(state, "x.ck", MPI_COMM_WORLD) != LINATTN_EMPI;
    bad += linattn_mpi_d_state_load_file(state, "x.ck", MPI_COMM_WORLD) != LINATTN_EMPI;
    return bad;
}

static void refused_at_thread_single(void)
{
    MT_CHECK(every_call() == 0, "a call was not refused");
}

int main(int argc, char **argv)
{
    linattn_d_plan_create(&plan, LINATTN_MAP_ELU1, 2, 2, NULL);
    linattn_d_state_create(&state, plan);
    int before = every_call();
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    int provided;
    MPI_Query_thread(&provided);
    mt_local_failures = 0;
    MT_CHECK(before == 0, "a call before MPI_Init was not refused");
    int failed_before = mt_local_failures;
    /* Open MPI's MPI_Init provides MPI_THREAD_SINGLE; an MPI that gives
     * more has nothing to refuse here. */
    if (provided < MPI_THREAD_FUNNELED)
        MT_RUN(refused_at_thread_single);
    int status = mt_finish("mpi single");
    MPI_Finalize();
    int after = every_call();
    linattn_d_state_destroy(state);
    linattn_d_plan_destroy(plan);
    return status || failed_before || after;
}
