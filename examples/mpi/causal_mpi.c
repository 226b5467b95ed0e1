/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * causal_mpi.c -- causal linear attention over a long sequence split
 * across MPI ranks, with a collective checkpoint to continue from.
 *
 *   mpirun -np 4 ./causal_mpi [N [CHECKPOINT]]
 *
 * The sequence is a long multichannel time series (here generated from
 * its global time index, so that every rank makes its own block and the
 * result does not depend on the number of ranks; a real code would read
 * its block).  Each run processes one segment of N tokens (default 2^20)
 * split evenly over the ranks:
 *
 *   - fresh start (no checkpoint file): tokens [0, N);
 *   - restart: the checkpoint holds the state of every token before this
 *     segment; each rank continues from it plus the earlier ranks' keys.
 *   - any other failure to read the checkpoint (it exists but cannot be
 *     read, or is damaged): stop, leaving it as it is, rather than start
 *     again from token 0 and then overwrite it.
 *
 * The distributed causal pass is done from its parts, as
 * linattn_mpi_d_causal does it inside (the state of this rank's keys,
 * linattn_mpi_d_state_exscan, linattn_d_state_causal), because the
 * checkpoint needs what that call does not return: the state of every
 * token seen.  linattn_d_state_causal absorbs this rank's keys into the
 * prefix in the same pass that computes the rows, so the last rank ends
 * with the whole state, which one allreduce gives everyone: one pass
 * over the keys to build the local state and one for the rows, as in
 * linattn_mpi_d_causal.
 *
 * The state of everything seen so far is then saved (one file, written
 * atomically by rank 0), so the next run -- a requeued job, or the next
 * segment -- continues where this one stopped.  Run it twice and the
 * second run computes tokens [N, 2N).  The checksum it prints is the sum
 * of all outputs, the same (to rounding) for any number of ranks.
 *
 * Memory per rank: (N / ranks) rows of q, k, v and out, 4 x 32 doubles =
 * 1 KiB per row, plus the library's workspace (a few MiB).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <mpi.h>
#include <linattn_mpi.h>

enum { D = 32, E = 32 };

/* Token t of the series: queries, keys and values are smooth functions
 * of the time index with a few frequencies (any data would do). */
static void token(int64_t t, double *q, double *k, double *v)
{
    for (int j = 0; j < D; j++) {
        double w = 1e-3 * (j + 1);
        q[j] = 0.5 * sin(w * (double)t + j);
        k[j] = 0.5 * cos(w * (double)t - j);
    }
    for (int j = 0; j < E; j++)
        v[j] = sin(2e-4 * (double)t * (j + 1));
}

static void check(int st, const char *what)
{
    if (st) {
        fprintf(stderr, "causal_mpi: %s: %s\n", what, linattn_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    /* liblinattn may run OpenMP threads inside a call: FUNNELED */
    MPI_Init_thread(&argc, &argv, LINATTN_MPI_THREAD_LEVEL, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int64_t n = argc > 1 ? atoll(argv[1]) : (int64_t)1 << 20;
    const char *path = argc > 2 ? argv[2] : "causal_mpi.ck";
    if (n < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: causal_mpi [N [CHECKPOINT]]\n");
        MPI_Finalize();
        return 2;
    }

    /* FAVOR+ random features approximating softmax attention: every rank
     * draws the same W from the seed (the library checks that the plans
     * agree). */
    linattn_opts o;
    linattn_opts_init(&o);
    o.seed = 42;
    linattn_d_plan *plan;
    check(linattn_d_plan_create(&plan, LINATTN_MAP_FAVOR, D, E, &o), "plan");

    /* Everything seen so far: from the checkpoint, if there is one.  Rank
     * 0 tells "no file" (a fresh start) from a file it cannot reach (stop:
     * a transient error must not restart the run and then overwrite the
     * good checkpoint); any failure to load an existing one stops too. */
    linattn_d_state *seen;
    check(linattn_d_state_create(&seen, plan), "state");
    int exists = 1;
    if (rank == 0) {
        struct stat sb;
        exists = lstat(path, &sb) == 0 ? 1 : errno == ENOENT ? 0 : -errno;
    }
    MPI_Bcast(&exists, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (exists < 0) {
        if (rank == 0)
            fprintf(stderr, "causal_mpi: %s: %s\n", path, strerror(-exists));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (exists)
        check(linattn_mpi_d_state_load_file(seen, path, MPI_COMM_WORLD), path);
    int64_t start;
    linattn_d_state_get(seen, LINATTN_ROW_MAJOR, NULL, 1, NULL, &start);

    /* This rank's block of the segment [start, start + n). */
    int64_t rows = n / size + (rank < n % size), first = start;
    for (int r = 0; r < rank; r++)
        first += n / size + (r < n % size);
    double *q = malloc((size_t)(rows * D + 1) * sizeof *q);
    double *k = malloc((size_t)(rows * D + 1) * sizeof *k);
    double *v = malloc((size_t)(rows * E + 1) * sizeof *v);
    double *out = malloc((size_t)(rows * E + 1) * sizeof *out);
    if (!q || !k || !v || !out) {
        fprintf(stderr, "causal_mpi: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int64_t i = 0; i < rows; i++)
        token(first + i, q + i * D, k + i * D, v + i * E);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    /* The prefix: this rank's keys, exclusive scan (the earlier ranks'
     * keys), plus everything before this segment. */
    linattn_d_state *prefix;
    check(linattn_d_state_create(&prefix, plan), "state");
    check(linattn_d_state_update(prefix, LINATTN_ROW_MAJOR, rows, k, D, v, E), "update");
    check(linattn_mpi_d_state_exscan(&prefix, 1, MPI_COMM_WORLD), "exscan");
    check(linattn_d_state_merge(prefix, seen), "merge");
    /* The rows, absorbing this rank's keys (absorb = 1). */
    check(linattn_d_state_causal(prefix, LINATTN_ROW_MAJOR, rows, q, D, k, D, v, E, out, E,
                                 1, NULL), "causal from the prefix");
    /* Everything seen now is the last rank's prefix: to every rank. */
    if (rank != size - 1)
        linattn_d_state_reset(prefix);
    check(linattn_mpi_d_state_allreduce(&prefix, 1, MPI_COMM_WORLD), "allreduce");
    check(linattn_d_state_copy(seen, prefix), "copy");
    linattn_d_state_destroy(prefix);
    double t1 = MPI_Wtime();
    check(linattn_mpi_d_state_save_file(seen, path, MPI_COMM_WORLD), "checkpoint");
    double t2 = MPI_Wtime();

    double sum = 0, total = 0;
    for (int64_t i = 0; i < rows * E; i++)
        sum += out[i];
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int64_t tokens;
    linattn_d_state_get(seen, LINATTN_ROW_MAJOR, NULL, 1, NULL, &tokens);
    if (rank == 0)
        printf("tokens [%lld, %lld) on %d rank(s): attention %.3f s, checkpoint %.3f s; "
               "checksum %.12e; %s now holds %lld tokens\n",
               (long long)start, (long long)(start + n), size, t1 - t0, t2 - t1, total, path,
               (long long)tokens);

    free(q), free(k), free(v), free(out);
    linattn_d_state_destroy(seen);
    linattn_d_plan_destroy(plan);
    MPI_Finalize();
    return 0;
}
