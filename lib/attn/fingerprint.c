/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fingerprint.c -- a 64-bit hash of a whole plan, so that processes can
 * compare plans cheaply (liblinattn_mpi refuses plans that differ across
 * ranks).  It extends the map's fingerprint (plan.c, which checkpoints
 * carry) with everything else that changes a result or a status.
 */
#include <string.h>
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"

/* The splitmix64 finalizer: every input bit moves every output bit. */
static uint64_t mix(uint64_t h, uint64_t word)
{
    uint64_t x = h ^ word;
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

int X(plan_fingerprint)(const X(plan) *plan, uint64_t *fp)
{
    if (!plan)
        return -1;
    if (!fp)
        return -2;
    double eps = plan->eps; /* exact in double from either precision */
    uint64_t eps_bits;
    memcpy(&eps_bits, &eps, sizeof eps_bits);
    uint64_t h = mix(0, plan->fingerprint);
    h = mix(h, (uint64_t)sizeof(real));
    h = mix(h, (uint64_t)plan->block);
    h = mix(h, (uint64_t)plan->chunk);
    h = mix(h, (uint64_t)plan->denom);
    h = mix(h, eps_bits);
    h = mix(h, (uint64_t)plan->check_finite);
    *fp = h;
    return 0;
}
