/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * decay.c -- the running sums of the log decays (attn/decay.h).
 *
 * The sums are kept in double whatever the precision, and a path's
 * factors are exponentials of their differences: in float a long run of
 * small gates (-1e-7 each) keeps its digits, and a gate of -1e3 gives a
 * factor that underflows to 0 (a state that dies in one step) instead of
 * an Inf times 0.
 */
#include <math.h>
#include "attn/decay.h"

double XI(decay_sums)(const XI(problem) *pb, int64_t lo, int64_t rows,
                      double *b)
{
    const real *g = pb->part[LINATTN_I_GATE].p;
    double a = XI(log_decay)(pb), run = 0;
    for (int64_t i = 0; i < rows; i++) {
        run += g ? a + (double)g[lo + i] : a;
        b[i] = run;
    }
    return run;
}

double XI(decay_total)(const XI(problem) *pb, int64_t lo, int64_t rows)
{
    const real *g = pb->part[LINATTN_I_GATE].p;
    double a = XI(log_decay)(pb), run = 0;
    for (int64_t i = 0; i < rows; i++)
        run += g ? a + (double)g[lo + i] : a;
    return run;
}

double XI(decayed_count)(const XI(problem) *pb, int64_t lo, int64_t rows,
                         double before, double *counts)
{
    const real *g = pb->part[LINATTN_I_GATE].p;
    const real *w = pb->part[LINATTN_I_KW].p;
    double a = XI(log_decay)(pb), c = before;
    for (int64_t i = 0; i < rows; i++) {
        double f = exp(g ? a + (double)g[lo + i] : a);
        c = f * c + (w ? (double)w[lo + i] : 1.0);
        if (counts)
            counts[i] = c;
    }
    return c;
}
