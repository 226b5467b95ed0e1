/*
 * plan.c -- plan creation: checks the options once, so that executing a
 * plan needs no further option checks, and fingerprints the map so that
 * states of incompatible plans are never mixed.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "internal.h"
#include "validate.h"

/* FNV-1a over the bytes of one 64-bit word. */
static uint64_t fnv1a(uint64_t h, uint64_t word)
{
    for (int i = 0; i < 8; i++) {
        h ^= (word >> (8 * i)) & 0xffu;
        h *= 0x100000001b3ull;
    }
    return h;
}

static int map_known(int map)
{
    return map == LINATTN_MAP_IDENTITY || map == LINATTN_MAP_ELU1 ||
           map == LINATTN_MAP_RELU;
}

int X(plan_create)(X(plan) **plan, int map, int64_t d, int64_t e,
                   const linattn_opts *opts)
{
    linattn_opts defaults;
    linattn_opts_init(&defaults);
    const linattn_opts *o = opts ? opts : &defaults;
    if (!plan)
        return -1;
    if (!map_known(map))
        return -2;
    if (d < 1)
        return -3;
    if (e < 1)
        return -4;
    /* The exact maps of this version are elementwise: m = d. */
    int64_t m = o->m == 0 ? d : o->m;
    /* eps must survive the conversion to the working precision: finite,
     * and not flushed to zero when it was asked for. */
    real eps = (real)o->eps;
    if (m != d || o->block < 0 || o->chunk < 0 || !isfinite(o->eps) || o->eps < 0 ||
        !isfinite(eps) || (o->eps > 0 && eps == 0) ||
        (o->denom != LINATTN_DENOM_POSITIVE && o->denom != LINATTN_DENOM_NONZERO))
        return -5;
    int64_t block = o->block ? o->block : LINATTN_DEFAULT_BLOCK;
    if (!o->block && block > LINATTN_BLAS_INT_MAX)
        block = LINATTN_BLAS_INT_MAX; /* only in test builds */
    int64_t chunk = o->chunk ? o->chunk : LINATTN_DEFAULT_CHUNK;
    /* Every GEMM dimension and workspace must be addressable. */
    /* ... and a state, m (e + 1) entries of acc_t (and of real in float),
     * must have a byte count that fits in ptrdiff_t. */
    const int64_t entry = (int64_t)(sizeof(acc_t) + (LINATTN_ACC_WIDER ? sizeof(real) : 0));
    if (linattn_i_blas_fits(d) || linattn_i_blas_fits(m) ||
        linattn_i_blas_fits(e + 1) || linattn_i_blas_fits(block) ||
        linattn_i_blas_fits(chunk) || chunk > INT64_MAX / chunk ||
        m > PTRDIFF_MAX / entry / (e + 1) || block > INT64_MAX / (m + e + 1))
        return LINATTN_ESIZE;
    X(plan) *p = malloc(sizeof *p);
    if (!p)
        return LINATTN_ENOMEM;
    p->map = map;
    p->d = d;
    p->m = m;
    p->e = e;
    p->block = block;
    p->chunk = chunk;
    p->denom = o->denom;
    p->eps = eps;
    p->seed = o->seed;
    p->check_finite = o->check_finite != 0;
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, (uint64_t)map);
    h = fnv1a(h, (uint64_t)d);
    h = fnv1a(h, (uint64_t)m);
    h = fnv1a(h, (uint64_t)e);
    p->fingerprint = h;
    *plan = p;
    return 0;
}

void X(plan_destroy)(X(plan) *plan)
{
    free(plan);
}

int X(plan_dims)(const X(plan) *plan, int64_t *d, int64_t *m, int64_t *e)
{
    if (!plan)
        return -1;
    if (d)
        *d = plan->d;
    if (m)
        *m = plan->m;
    if (e)
        *e = plan->e;
    return 0;
}

int X(plan_block)(const X(plan) *plan, int64_t *block)
{
    if (!plan)
        return -1;
    if (!block)
        return -2;
    *block = plan->block;
    return 0;
}
