/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * train_mpi.c -- training a causal linear-attention layer whose tokens are
 * split across MPI ranks: the map phi(x) = elu(W x + b) + 1 of the layer
 * (a trained map) is fitted by gradient descent with the distributed
 * backward (examples/train_map.c is the one-process version).
 *
 * A teacher layer with fixed W*, b* makes the targets; the student starts
 * from a small W and b = 0 and fits them on L = 1/2 sum |out - target|^2
 * over every rank's tokens.  Each rank holds its block of the sequence
 * (in rank order) and, per step:
 *
 *   forward:  linattn_mpi_d_causal_ex(plan, comm, ..., ex.den = den)
 *   loss:     G = out - target on its tokens; L = MPI_Allreduce of the sums
 *   backward: linattn_mpi_d_causal_backward(plan, comm, ..., G, ..., dw, db)
 *             (dW, db summed over every rank's tokens: the same everywhere)
 *   step:     W -= lr dW, b -= lr db   (a new plan: plans are immutable)
 *
 * so every rank keeps the same W and the loss falls as in one process, to
 * rounding, whatever the number of ranks (tests/mpi/train.sh compares 1, 2
 * and 4 ranks, and this program with its Fortran twin train_mpi.f90).
 * Prints the loss every 50 steps (rank 0); exits 0 when the last loss is
 * below 1% of the first.  Usage: mpirun -np P ./train_mpi [steps]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>
#include <linattn.h>
#include <linattn_mpi.h>

/* tokens, widths, features (= rows of W) */
enum { N = 48, D = 4, E = 3, M = 6 };

/* Entry (i, j) (from 1) of a fixed matrix: the same numbers on every rank
 * and in the Fortran twin (token j's feature i, or W's row i, column j). */
static double fixed(int i, int j, int seed)
{
    return sin(12.9898 * (i + 7 * j) + 78.233 * seed);
}

/* Tokens [lo, lo + n) of a sequence's (token, feature) matrix of width c. */
static void tokens(double *x, int lo, int n, int c, int seed, double scale)
{
    for (int t = 0; t < n; t++)
        for (int i = 0; i < c; i++)
            x[t * c + i] = scale * fixed(i + 1, lo + t + 1, seed);
}

static int fail(int st, const char *what)
{
    fprintf(stderr, "train_mpi: %s: %s\n", what, linattn_mpi_strerror(st));
    return 1;
}

/* The layer on this rank's n tokens for W, b: out and den. */
static int layer(const double *w, const double *b, int n, const double *q,
                 const double *k, const double *v, double *out, double *den,
                 linattn_d_plan **plan)
{
    int st = linattn_d_plan_create_custom(plan, LINATTN_ACT_ELU1, D, M, E,
                                          LINATTN_ROW_MAJOR, w, D, b, NULL);
    if (st)
        return fail(st, "plan");
    linattn_d_extras ex;
    linattn_d_extras_init(&ex);
    ex.den = den;
    st = linattn_mpi_d_causal_ex(*plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, n,
                                 q, D, k, D, v, E, out, E, &ex, NULL);
    if (st) {
        linattn_d_plan_destroy(*plan);
        return fail(st, "forward");
    }
    return 0;
}

int main(int argc, char **argv)
{
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, LINATTN_MPI_THREAD_LEVEL, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 400;
    const double lr = 4;
    /* this rank's block of the N tokens */
    int lo = N / size * rank + (rank < N % size ? rank : N % size);
    int n = N / size + (rank < N % size);
    double q[N * D], k[N * D], v[N * E], target[N * E], out[N * E], den[N];
    double g[N * E], dq[N * D], dk[N * D], dv[N * E];
    double wt[M * D], bt[M], w[M * D], b[M], dw[M * D], db[M];
    tokens(q, lo, n, D, 1, 1);
    tokens(k, lo, n, D, 2, 1);
    tokens(v, lo, n, E, 3, 1);
    for (int r = 0; r < M; r++) {
        for (int c = 0; c < D; c++) {
            wt[r * D + c] = 1.5 * fixed(r + 1, c + 1, 4);
            w[r * D + c] = 0.1 * fixed(r + 1, c + 1, 5);
        }
        bt[r] = 0.5 * sin(3.0 * (r + 1));
        b[r] = 0;
    }
    linattn_d_plan *plan;
    int bad = layer(wt, bt, n, q, k, v, target, den, &plan);
    if (!bad)
        linattn_d_plan_destroy(plan);
    double first = -1, loss = 0;
    for (int step = 0; !bad && step <= steps; step++) {
        if ((bad = layer(w, b, n, q, k, v, out, den, &plan)))
            break;
        double mine = 0;
        for (int i = 0; i < n * E; i++) {
            g[i] = out[i] - target[i];
            mine += 0.5 * g[i] * g[i];
        }
        MPI_Allreduce(&mine, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (first < 0)
            first = loss;
        if (rank == 0 && (step % 50 == 0 || step == steps))
            printf("step %4d  loss %.12e\n", step, loss);
        int st = linattn_mpi_d_causal_backward(
            plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, n, q, D, k, D, v, E, out,
            E, den, g, E, dq, D, dk, D, dv, E, dw, D, db, NULL);
        linattn_d_plan_destroy(plan);
        if (st) {
            bad = fail(st, "backward");
            break;
        }
        for (int i = 0; i < M * D; i++)
            w[i] -= lr * dw[i];
        for (int i = 0; i < M; i++)
            b[i] -= lr * db[i];
    }
    if (!bad && rank == 0)
        printf("loss %.3e -> %.3e (%.1f%% of the first) on %d ranks\n", first,
               loss, 100 * loss / first, size);
    MPI_Finalize();
    return bad || !(loss < 0.01 * first);
}
