/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn/decay.h -- decay and gates: the state forgets by gamma exp(g_t) at
 * token t (the plan's ln gamma, the problem's log gates g), so that row i
 * sees key j <= i with weight exp(b_i - b_j), b the running sum of the
 * log decays.  Not installed.
 *
 * Every factor the paths apply is exp of a difference b_i - b_j with j <=
 * i, or of b over the rows after a carried state: exponents <= 0, so
 * nothing overflows however long the sequence or large |g|, and a row's
 * factors read no later token's gate.
 */
#ifndef LINATTN_ATTN_DECAY_H
#define LINATTN_ATTN_DECAY_H

#include "attn/problem.h"
#include "attn/plan.h"

/* The problem's constant log decay per token: the plan's, and a batched
 * call's head's (extras.head_decays). */
static inline double XI(log_decay)(const XI(problem) *pb)
{
    return pb->plan->log_decay + pb->head_decay;
}

/* Nonzero when the problem's state forgets: a constant decay or gates. */
static inline int XI(decays)(const XI(problem) *pb)
{
    return XI(log_decay)(pb) != 0 || pb->part[LINATTN_I_GATE].p != NULL;
}

/* b[i] = the sum of the log decays of key rows lo .. lo + i of pb
 * (inclusive), i < rows, in double: what the state at row lo + i has
 * forgotten since the state before row lo.  Returns b[rows - 1] (0 when
 * rows is 0). */
double XI(decay_sums)(const XI(problem) *pb, int64_t lo, int64_t rows,
                      double *b);

/* The total log decay of key rows [lo, lo + rows) (decay_sums' last). */
double XI(decay_total)(const XI(problem) *pb, int64_t lo, int64_t rows);

/* The count of LINATTN_DENOM_COUNT decayed along rows [lo, lo + rows):
 * c = exp(a_t) c + w_t from c = before (w_t the key weights, 1 without);
 * with counts, each row's c into counts[i].  Returns the last c. */
double XI(decayed_count)(const XI(problem) *pb, int64_t lo, int64_t rows,
                         double before, double *counts);

#endif
