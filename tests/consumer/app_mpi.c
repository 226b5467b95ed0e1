/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * app_mpi.c -- an MPI program outside the tree, built against an
 * installed liblinattn_mpi (tests/consumers.sh): the README's worked
 * example with its four keys dealt round-robin over the ranks; every
 * rank's query (1, 0) must give 4.5.  Exits 0 only when it does.
 */
#include <stdio.h>
#include <linattn_mpi.h>

int main(int argc, char **argv)
{
    int level, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &level);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const double keys[8] = {2, 1, -1, 2, 1, -1, 0, 3}, vals[4] = {3, -2, 1, 4};
    double k[8], v[4], q[2] = {1, 0}, out[1] = {0};
    int64_t nk = 0;
    for (int j = rank; j < 4; j += size, nk++) {
        k[2 * nk] = keys[2 * j], k[2 * nk + 1] = keys[2 * j + 1];
        v[nk] = vals[j];
    }
    linattn_opts opts;
    linattn_opts_init(&opts);
    opts.denom = LINATTN_DENOM_NONZERO;
    linattn_d_plan *plan;
    int st = linattn_d_plan_create(&plan, LINATTN_MAP_IDENTITY, 2, 1, &opts);
    if (!st)
        st = linattn_mpi_d_attention(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, 1,
                                     nk, q, 2, k, 2, v, 1, out, 1, NULL);
    linattn_d_plan_destroy(plan);
    if (st)
        fprintf(stderr, "rank %d: %s\n", rank, linattn_strerror(st));
    else if (rank == 0)
        printf("linattn_mpi on %d ranks: output %g\n", size, out[0]);
    int ok = !st && out[0] == 4.5, all;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 0 : 1;
}
