/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state_transfer.c -- a state's accumulator in and out (export/import), and
 * the plan a state belongs to: what a reduction of states computed elsewhere
 * (liblinattn_mpi's) needs, through the public API.
 *
 * The double accumulator moves, never the working-precision copy: float
 * states accumulate in double, and a sum of exported accumulators is then
 * as exact as a merge of the states.
 */
#include <math.h>
#include <string.h>
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"

int X(state_plan)(const X(state) *state, const X(plan) **plan)
{
    if (!state)
        return -1;
    if (!plan)
        return -2;
    *plan = state->plan;
    return 0;
}

int X(state_export)(const X(state) *state, double *acc, double *shift,
                    int64_t *tokens)
{
    if (!state)
        return -1;
    const X(plan) *p = state->plan;
    if (acc)
        memcpy(acc, state->acc, (size_t)(p->m * (p->e + 1)) * sizeof(acc_t));
    /* A map without shifts never reads one (a restored checkpoint may
     * still carry one): its sums are the stored ones. */
    if (shift)
        *shift = p->shifted ? state->shift : 0;
    if (tokens)
        *tokens = state->tokens;
    return 0;
}

/* Its tokens weigh one each. */
int X(state_import)(X(state) *state, const double *acc, double shift,
                    int64_t tokens)
{
    return X(state_import_weighted)(state, acc, shift, tokens,
                                    (double)tokens);
}

int X(state_key_weight)(const X(state) *state, double *weight)
{
    if (!state)
        return -1;
    if (!weight)
        return -2;
    *weight = state->mass;
    return 0;
}

int X(state_import_weighted)(X(state) *state, const double *acc, double shift,
                             int64_t tokens, double weight)
{
    if (!state)
        return -1;
    if (!acc)
        return -2;
    const X(plan) *p = state->plan;
    if (!isfinite(shift) || (!p->shifted && shift != 0))
        return -3;
    if (tokens < 0)
        return -4;
    /* a key of weight 0 is not a token: some weight exactly when some
     * tokens (the invariant a checkpoint's version 2 keeps too) */
    if (!isfinite(weight) || weight < 0 || (weight > 0) != (tokens > 0))
        return -5;
    memcpy(state->acc, acc, (size_t)(p->m * (p->e + 1)) * sizeof(acc_t));
    state->shift = shift;
    state->tokens = tokens;
    state->mass = weight;
    XI(state_publish)(state);
    return 0;
}
