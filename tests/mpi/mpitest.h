/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpitest.h -- a small test harness for programs under mpirun.
 *
 * Check cannot run these: a failed assertion leaves one rank early while
 * the others wait in a collective.  Here a failed check is counted and
 * the test goes on, so every rank makes the same collective calls; after
 * each test the ranks agree (MPI_Allreduce) on whether any of them
 * failed.  Rank 0 prints one line per test and, at the end, the totals in
 * Check's format (tests/mpi/run.sh and .ci/run read them).  A hang is
 * caught by the timeout run.sh puts around mpirun.
 */
#ifndef LINATTN_MPITEST_H
#define LINATTN_MPITEST_H

#include <mpi.h>
#include <stdio.h>

static int mt_rank, mt_size, mt_local_failures, mt_tests, mt_failed;

#define MT_CHECK(cond, ...)                                                   \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "[rank %d of %d] %s:%d: %s: ", mt_rank, mt_size,  \
                    __FILE__, __LINE__, #cond);                               \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            mt_local_failures++;                                              \
        }                                                                     \
    } while (0)

/* MPI_Init_thread at level, and this rank's place. */
static inline void mt_init(int *argc, char ***argv, int level)
{
    int provided;
    MPI_Init_thread(argc, argv, level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
}

/* Runs one test on every rank and agrees on its outcome. */
static inline void mt_run(const char *name, void (*test)(void))
{
    mt_local_failures = 0;
    test();
    int failed = mt_local_failures > 0, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    mt_tests++;
    mt_failed += any;
    if (mt_rank == 0)
        printf("%s: %s (np %d)\n", any ? "FAIL" : "PASS", name, mt_size);
    fflush(stdout);
}

/* Prints the totals (rank 0) and returns the process's exit status. */
static inline int mt_finish(const char *suite)
{
    if (mt_rank == 0) {
        printf("%s, np %d: %d passed, %d failed\n", suite, mt_size,
               mt_tests - mt_failed, mt_failed);
        printf("%d%%: Checks: %d, Failures: %d, Errors: 0\n",
               mt_tests ? 100 * (mt_tests - mt_failed) / mt_tests : 100,
               mt_tests, mt_failed);
    }
    return mt_failed ? 1 : 0;
}

#define MT_RUN(test) mt_run(#test, test)

#endif
