/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * checkpoint.c -- saving a state to bytes or a file and restoring it
 * (format: io/format.h and doc/checkpoint-format.md).
 *
 * The checkpoint carries the double accumulator acc, which both
 * precisions keep, so a restored state continues bit for bit where the
 * saved one stood.  A load verifies everything before it writes, so a
 * refused load leaves its target as it was.
 */
#include <stdlib.h>
#include "io/format.h"
#include "io/files.h"
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/validate.h"

#ifdef LINATTN_SINGLE
#define PRECISION_CODE 's'
#else
#define PRECISION_CODE 'd'
#endif

_Static_assert(sizeof(acc_t) == sizeof(double),
               "checkpoints carry the accumulator as binary64");

/* The header a checkpoint of st carries. */
static void describe(const X(state) *st, linattn_i_ckpt_header *h)
{
    const X(plan) *p = st->plan;
    h->precision = PRECISION_CODE;
    h->accumulator = 'd';
    h->map = (uint32_t)p->map;
    h->d = p->d;
    h->m = p->m;
    h->e = p->e;
    h->fingerprint = p->fingerprint;
    h->tokens = st->tokens;
    h->shift = st->shift;
    /* Version 1 holds a state's token count, not its keys' weight, the
     * count of LINATTN_DENOM_COUNT when keys were weighted: a state whose
     * plan divides by that count and whose weight differs from its tokens
     * is written in version 2, which carries the weight; every other
     * state in version 1, which older readers read (the other plans never
     * read the weight, and it equals the tokens otherwise). */
    int weighed = p->denom == LINATTN_DENOM_COUNT &&
                  st->mass != (double)st->tokens;
    h->version = weighed ? LINATTN_CKPT_VERSION_MASS : LINATTN_CKPT_VERSION;
    h->mass = st->mass;
}

/* A state's m (e + 1) entries are in memory, so its checkpoint size,
 * 8 bytes each plus 92, fits int64. */
static int64_t save_bytes(const X(state) *st)
{
    linattn_i_ckpt_header h;
    describe(st, &h);
    return linattn_i_ckpt_bytes(st->plan->m, st->plan->e, h.version);
}

int X(state_save_size)(const X(state) *state, int64_t *bytes)
{
    if (!state)
        return -1;
    if (!bytes)
        return -2;
    *bytes = save_bytes(state);
    return 0;
}

int X(state_save)(const X(state) *state, void *buf, int64_t len,
                  int64_t *written)
{
    if (!state)
        return -1;
    if (!buf)
        return -2;
    int64_t need = save_bytes(state);
    if (len < need)
        return -3;
    linattn_i_ckpt_header h;
    describe(state, &h);
    linattn_i_ckpt_write(buf, &h, state->acc);
    if (written)
        *written = need;
    return 0;
}

int X(state_load)(X(state) *state, const void *buf, int64_t len)
{
    if (!state)
        return -1;
    if (!buf)
        return -2;
    if (len < 0)
        return -3;
    linattn_i_ckpt_header saved, want;
    int status = linattn_i_ckpt_parse(buf, len, &saved);
    if (status)
        return status;
    describe(state, &want);
    if (!linattn_i_ckpt_same_plan(&saved, &want))
        return LINATTN_EMISMATCH;
    /* Verified: only now is the target written. */
    linattn_i_ckpt_payload(state->acc, buf, state->plan->m * (state->plan->e + 1));
    state->tokens = saved.tokens;
    state->mass = saved.mass;
    state->shift = saved.shift;
    XI(state_publish)(state);
    return 0;
}

int X(state_save_file)(const X(state) *state, const char *path)
{
    if (!state)
        return -1;
    if (!path || !*path)
        return -2;
    int64_t len = save_bytes(state);
    unsigned char *buf = linattn_i_alloc(len, 1);
    if (!buf)
        return LINATTN_ENOMEM;
    X(state_save)(state, buf, len, NULL);
    int status = linattn_i_write_atomic(path, buf, len);
    free(buf);
    return status;
}

int X(state_load_file)(X(state) *state, const char *path)
{
    if (!state)
        return -1;
    if (!path || !*path)
        return -2;
    unsigned char *buf;
    int64_t len;
    int status = linattn_i_ckpt_read_file(path, &buf, &len);
    if (status)
        return status;
    status = X(state_load)(state, buf, len);
    free(buf);
    return status;
}
