/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * extras.c -- the extension point: a call's optional parts
 * (linattn_d_extras), their defaults, and how an _ex call takes them into
 * its problem (attn/problem.h).  A part added later goes in the reserved
 * words; until then they must stay 0, so that an older library refuses a
 * part it does not know instead of ignoring it.
 */
#include <string.h>
#include "attn/problem.h"

int X(extras_init)(X(extras) *ex)
{
    if (!ex)
        return -1;
    memset(ex, 0, sizeof *ex);
    ex->den = NULL;
    ex->state = NULL;
    ex->weights = NULL;
    ex->offsets = ex->key_offsets = NULL;
    ex->states = NULL;
    ex->dweights = NULL;
    ex->dstates = NULL;
    ex->gates = NULL;
    ex->head_decays = NULL;
    ex->dstate_end = NULL;
    ex->dgates = NULL;
    ex->chunk_states = NULL;
    for (size_t i = 0; i < sizeof ex->reserved_ptr / sizeof *ex->reserved_ptr;
         i++)
        ex->reserved_ptr[i] = NULL;
    return 0;
}

int XI(extras_reserved_zero)(const X(extras) *ex)
{
    for (size_t i = 0; i < sizeof ex->reserved_int / sizeof *ex->reserved_int;
         i++)
        if (ex->reserved_int[i])
            return 0;
    for (size_t i = 0; i < sizeof ex->reserved_ptr / sizeof *ex->reserved_ptr;
         i++)
        if (ex->reserved_ptr[i])
            return 0;
    for (size_t i = 0; i < sizeof ex->reserved / sizeof *ex->reserved; i++)
        if (ex->reserved[i])
            return 0;
    return 1;
}

int XI(extras_taken)(const X(extras) *ex, unsigned parts)
{
    if (!(parts & LINATTN_I_X_DEN) && ex->den)
        return 0;
    if (!(parts & LINATTN_I_X_STATE) && ex->state)
        return 0;
    /* absorb goes with either kind of state */
    if (!(parts & (LINATTN_I_X_STATE | LINATTN_I_X_STATES)) && ex->absorb)
        return 0;
    if (!(parts & LINATTN_I_X_WEIGHTS) && ex->weights)
        return 0;
    if (!(parts & LINATTN_I_X_OFFSETS) && (ex->offsets || ex->nseq))
        return 0;
    if (!(parts & LINATTN_I_X_KEY_OFFSETS) && ex->key_offsets)
        return 0;
    if (!(parts & LINATTN_I_X_STATES) && ex->states)
        return 0;
    if (!(parts & LINATTN_I_X_DWEIGHTS) && ex->dweights)
        return 0;
    if (!(parts & LINATTN_I_X_DSTATES) && ex->dstates)
        return 0;
    if (!(parts & LINATTN_I_X_GATES) && ex->gates)
        return 0;
    if (!(parts & LINATTN_I_X_HEAD_DECAYS) && ex->head_decays)
        return 0;
    if (!(parts & LINATTN_I_X_DSTATE_END) && ex->dstate_end)
        return 0;
    if (!(parts & LINATTN_I_X_DGATES) && ex->dgates)
        return 0;
    if (!(parts & LINATTN_I_X_CHUNK_STATES) && ex->chunk_states)
        return 0;
    return 1;
}

void XI(problem_extras)(XI(problem) *pb, const X(extras) *ex)
{
    pb->extras = ex;
    if (!ex)
        return;
    pb->part[LINATTN_I_DEN] = XI(part_single)(ex->den, 1);
    pb->state = ex->state;
    pb->absorb = ex->absorb;
    pb->part[LINATTN_I_KW] = XI(part_single)(ex->weights, 1);
    pb->part[LINATTN_I_DKW] = XI(part_single)(ex->dweights, 1);
    pb->part[LINATTN_I_GATE] = XI(part_single)(ex->gates, 1);
    pb->part[LINATTN_I_DGATE] = XI(part_single)(ex->dgates, 1);
    pb->head_decays = ex->head_decays;
    pb->dstates = ex->dstates;
    pb->dstate_end = ex->dstate_end;
    pb->chunk_states = ex->chunk_states;
    if (ex->offsets) {
        pb->nseq = ex->nseq;
        pb->qoff = ex->offsets;
        pb->koff = ex->key_offsets ? ex->key_offsets : ex->offsets;
        pb->states = ex->states;
    }
}
