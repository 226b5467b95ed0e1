/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * train_map.c -- training a linear-attention layer's feature map by
 * gradient descent with the library's backward call.
 *
 * The layer is causal linear attention with a trained map
 * phi(x) = elu(W x + b) + 1 (linattn_d_plan_create_custom).  A "teacher"
 * layer with fixed W*, b* produces the targets on a toy sequence; a
 * "student" starts from a small random W and b = 0 and fits them by plain
 * gradient descent on L = 1/2 sum |out - target|^2:
 *
 *     forward:   out, den = linattn_d_causal_forward(plan(W, b), Q, K, V)
 *     loss:      G = out - target  (= dL/dout)
 *     backward:  dW, db = linattn_d_causal_backward(..., G, ...)
 *     step:      W -= lr dW,  b -= lr db   (a new plan: plans are immutable)
 *
 * It prints the loss as it falls and exits 0 when the final loss is below
 * a hundredth of the first (1 otherwise), so `make check` runs it as a
 * test.  Usage: train_map [steps]  (default 600).
 */
#include <stdio.h>
#include <stdlib.h>
#include <linattn.h>

/* tokens, widths, features (= rows of W) */
enum { N = 48, D = 4, E = 3, M = 6 };

static int check(int st, const char *what)
{
    if (st)
        fprintf(stderr, "train_map: %s: %s\n", what, linattn_strerror(st));
    return st;
}

/* Uniform in [-1, 1) from a fixed seed, the same numbers everywhere. */
static double uniform(unsigned long long *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*s >> 11) * 0x1.0p-53 * 2 - 1;
}

/* The layer's output (and normalizers) for W, b; 0 or a status. */
static int layer(const double *w, const double *b, const double *q,
                 const double *k, const double *v, double *out, double *den,
                 linattn_d_plan **plan)
{
    int st = linattn_d_plan_create_custom(plan, LINATTN_ACT_ELU1, D, M, E,
                                          LINATTN_ROW_MAJOR, w, D, b, NULL);
    if (check(st, "plan"))
        return st;
    st = linattn_d_causal_forward(*plan, LINATTN_ROW_MAJOR, N, q, D, k, D, v,
                                  E, out, E, den, NULL);
    if (check(st, "forward"))
        linattn_d_plan_destroy(*plan);
    return st;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 600;
    const double lr = 4;
    unsigned long long s = 12345;
    double q[N * D], k[N * D], v[N * E], target[N * E], out[N * E], den[N];
    double g[N * E], dq[N * D], dk[N * D], dv[N * E];
    double wt[M * D], bt[M], w[M * D], b[M], dw[M * D], db[M];
    for (int i = 0; i < N * D; i++)
        q[i] = uniform(&s), k[i] = uniform(&s);
    for (int i = 0; i < N * E; i++)
        v[i] = uniform(&s);
    for (int i = 0; i < M * D; i++) /* the teacher's map, and a start */
        wt[i] = 1.5 * uniform(&s), w[i] = 0.1 * uniform(&s);
    for (int i = 0; i < M; i++)
        bt[i] = 0.5 * uniform(&s), b[i] = 0;
    linattn_d_plan *plan;
    if (layer(wt, bt, q, k, v, target, den, &plan))
        return 1;
    linattn_d_plan_destroy(plan);
    double first = -1, loss = 0;
    for (int step = 0; step <= steps; step++) {
        if (layer(w, b, q, k, v, out, den, &plan))
            return 1;
        loss = 0;
        for (int i = 0; i < N * E; i++) {
            g[i] = out[i] - target[i];
            loss += 0.5 * g[i] * g[i];
        }
        if (first < 0)
            first = loss;
        if (step % 50 == 0 || step == steps)
            printf("step %4d  loss %.6e\n", step, loss);
        int st = linattn_d_causal_backward(plan, LINATTN_ROW_MAJOR, N, q, D, k,
                                           D, v, E, out, E, den, g, E, dq, D,
                                           dk, D, dv, E, dw, D, db, NULL);
        linattn_d_plan_destroy(plan);
        if (check(st, "backward"))
            return 1;
        for (int i = 0; i < M * D; i++)
            w[i] -= lr * dw[i];
        for (int i = 0; i < M; i++)
            b[i] -= lr * db[i];
    }
    printf("loss %.3e -> %.3e (%.1f%% of the first)\n", first, loss,
           100 * loss / first);
    return loss < 0.01 * first ? 0 : 1;
}
