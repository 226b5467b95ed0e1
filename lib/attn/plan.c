/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plan.c -- plan creation: checks the options once, so that executing a
 * plan needs no further option checks, draws or copies the map's W, and
 * fingerprints the map so that states of incompatible plans are never
 * mixed.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "maps/draw.h"
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/validate.h"

/* FNV-1a over the bytes of one 64-bit word. */
static uint64_t fnv1a(uint64_t h, uint64_t word)
{
    for (int i = 0; i < 8; i++) {
        h ^= (word >> (8 * i)) & 0xffu;
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t bits_of_double(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* The bits of n values of the working precision, folded in order. */
static uint64_t fnv1a_reals(uint64_t h, const real *a, int64_t n)
{
    for (int64_t i = 0; a && i < n; i++) {
#ifdef LINATTN_SINGLE
        uint32_t b;
#else
        uint64_t b;
#endif
        memcpy(&b, &a[i], sizeof b);
        h = fnv1a(h, b);
    }
    return h;
}

static int map_random(int map)
{
    return map == LINATTN_MAP_FAVOR || map == LINATTN_MAP_FAVOR_HYP ||
           map == LINATTN_MAP_TRIG;
}

static int map_exact(int map)
{
    return map == LINATTN_MAP_IDENTITY || map == LINATTN_MAP_ELU1 ||
           map == LINATTN_MAP_RELU;
}

/* Everything that decides the map's values: states of plans with equal
 * fingerprints may be merged.  The exact maps fold only (map, d, m, e). */
static uint64_t fingerprint(const X(plan) *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(h, (uint64_t)p->map);
    h = fnv1a(h, (uint64_t)p->d);
    h = fnv1a(h, (uint64_t)p->m);
    h = fnv1a(h, (uint64_t)p->e);
    /* a decayed stream is another stream: its checkpoints and merges go
     * with plans of the same decay only (an undecayed plan's fingerprint
     * stays what it was) */
    if (p->log_decay != 0)
        h = fnv1a(h, bits_of_double(p->log_decay));
    if (map_exact(p->map))
        return h;
    h = fnv1a(h, (uint64_t)p->act);
    h = fnv1a(h, bits_of_double(p->input_scale));
    if (map_random(p->map)) {
        h = fnv1a(h, (uint64_t)p->draw);
        h = fnv1a(h, p->seed);
    }
    h = fnv1a(h, (uint64_t)p->wrows);
    h = fnv1a_reals(h, p->w, p->wrows * p->d);
    h = fnv1a(h, (uint64_t)(p->bias != NULL));
    return fnv1a_reals(h, p->bias, p->wrows);
}

/* The option checks both constructors share (block, chunk, denom, eps,
 * draw, input_scale, log_decay, query_scale): nonzero when one is out of
 * range. */
static int opts_bad(const linattn_opts *o)
{
    /* eps and the scales must survive the conversion to the working
     * precision: finite, and not flushed to zero when they were asked
     * for. */
    real eps = (real)o->eps, s = (real)o->input_scale;
    real qs = (real)o->query_scale;
    if (!isfinite(o->query_scale) || o->query_scale < 0 || !isfinite(qs) ||
        (o->query_scale > 0 && qs == 0))
        return 1;
    return o->block < 0 || o->chunk < 0 || !isfinite(o->eps) || o->eps < 0 ||
           !isfinite(eps) || (o->eps > 0 && eps == 0) ||
           (o->denom != LINATTN_DENOM_POSITIVE &&
            o->denom != LINATTN_DENOM_NONZERO &&
            o->denom != LINATTN_DENOM_COUNT &&
            o->denom != LINATTN_DENOM_NONE) ||
           o->draw < LINATTN_DRAW_ORTHO || o->draw > LINATTN_DRAW_IID ||
           !isfinite(o->input_scale) || o->input_scale < 0 || !isfinite(s) ||
           (o->input_scale > 0 && s == 0) || !isfinite(o->log_decay) ||
           o->log_decay > 0;
}

/* Every GEMM dimension and workspace must be addressable, and a state,
 * m (e + 1) entries of acc_t (and of real in float), must have a byte
 * count that fits in ptrdiff_t. */
static int sizes_bad(int64_t d, int64_t m, int64_t e, int64_t block,
                     int64_t chunk)
{
    const int64_t entry = (int64_t)(sizeof(acc_t) + (LINATTN_ACC_WIDER ? sizeof(real) : 0));
    /* e + 1 must fit: compared so that e = INT64_MAX cannot overflow */
    return linattn_i_blas_fits(d) || linattn_i_blas_fits(m) ||
           e > LINATTN_BLAS_INT_MAX - 1 || linattn_i_blas_fits(block) ||
           linattn_i_blas_fits(chunk) || chunk > INT64_MAX / chunk ||
           m > PTRDIFF_MAX / entry / (e + 1) || block > INT64_MAX / (m + e + 1);
}

/* The maps whose features carry a stabilizing shift (doc/maps.md). */
static int map_shifted(int map, int act)
{
    return map == LINATTN_MAP_FAVOR || map == LINATTN_MAP_FAVOR_HYP ||
           map == LINATTN_MAP_TRIG ||
           (map == LINATTN_MAP_CUSTOM && act == LINATTN_ACT_EXP);
}

/* A count normalizer, or none, cannot undo the shift that the numerators
 * of the shifted maps carry (only phi(q).z cancels it), so the pair is
 * refused. */
static int denom_bad_for(const linattn_opts *o, int map, int act)
{
    return (o->denom == LINATTN_DENOM_COUNT ||
            o->denom == LINATTN_DENOM_NONE) &&
           map_shifted(map, act);
}

static int64_t block_of(const linattn_opts *o)
{
    int64_t block = o->block ? o->block : LINATTN_DEFAULT_BLOCK;
    if (!o->block && block > LINATTN_BLAS_INT_MAX)
        block = LINATTN_BLAS_INT_MAX; /* only in test builds */
    return block;
}

static int64_t chunk_of(const linattn_opts *o)
{
    return o->chunk ? o->chunk : LINATTN_DEFAULT_CHUNK;
}

/* A plan with its W arrays allocated (wrows x d, uninitialized), or NULL
 * when memory is short. */
static X(plan) *plan_new(const linattn_opts *o, int map, int act, int64_t d,
                         int64_t m, int64_t e, int64_t wrows, double s)
{
    X(plan) *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->map = map;
    p->act = act;
    p->d = d;
    p->m = m;
    p->e = e;
    p->block = block_of(o);
    p->chunk = chunk_of(o);
    p->denom = o->denom;
    p->eps = (real)o->eps;
    p->seed = o->seed;
    p->check_finite = o->check_finite != 0;
    p->draw = o->draw;
    p->input_scale = s;
    p->log_decay = o->log_decay;
    p->qscale = o->query_scale ? (real)o->query_scale : 1;
    p->half_s2 = (real)(0.5 * s * s);
    p->wrows = wrows;
    p->shifted = map_shifted(map, act);
    if (map == LINATTN_MAP_FAVOR || map == LINATTN_MAP_FAVOR_HYP)
        p->log_norm = (real)(0.5 * log((double)m));
    else if (map == LINATTN_MAP_TRIG)
        p->log_norm = (real)(0.5 * log((double)(m / 2)));
    if (wrows) {
        p->w = linattn_i_alloc(wrows * d, sizeof(real));
        p->ws = linattn_i_alloc(wrows * d, sizeof(real));
        if (!p->w || !p->ws) {
            X(plan_destroy)(p);
            return NULL;
        }
    }
    return p;
}

int X(plan_create)(X(plan) **plan, int map, int64_t d, int64_t e,
                   const linattn_opts *opts)
{
    linattn_opts defaults;
    linattn_opts_init(&defaults);
    const linattn_opts *o = opts ? opts : &defaults;
    if (!plan)
        return -1;
    if (map < LINATTN_MAP_IDENTITY || map > LINATTN_MAP_TAYLOR)
        return -2;
    if (d < 1)
        return -3;
    if (e < 1)
        return -4;
    int64_t m = o->m, wrows = 0;
    double s = o->input_scale;
    if (map_exact(map)) {
        m = m ? m : d;
        if (m != d || s != 0)
            return -5; /* elementwise: m = d, no input scale */
        s = 1;
    } else {
        /* 1 / sqrt(sqrt(d)): correctly rounded steps, the same bits on
         * every platform (pow need not be). */
        s = s ? s : 1 / sqrt(sqrt((double)d));
        if (map == LINATTN_MAP_TAYLOR) {
            int64_t natural = d > LINATTN_BLAS_INT_MAX ? INT64_MAX
                                                       : 1 + d + d * (d + 1) / 2;
            m = m ? m : natural;
            if (m != natural)
                return -5;
        } else {
            m = m ? m : (d <= INT64_MAX / 4 ? 4 * d : INT64_MAX);
            if (m < 0 || (map != LINATTN_MAP_FAVOR && m % 2))
                return -5;
            wrows = map == LINATTN_MAP_FAVOR ? m : m / 2;
        }
    }
    /* the query scale: the exact maps' (the others' features carry their
     * own scaling, input_scale) */
    if (opts_bad(o) || denom_bad_for(o, map, 0) ||
        (!map_exact(map) && o->query_scale != 0 && o->query_scale != 1))
        return -5;
    if (sizes_bad(d, m, e, block_of(o), chunk_of(o)))
        return LINATTN_ESIZE;
    X(plan) *p = plan_new(o, map, 0, d, m, e, wrows, s);
    double *w = wrows ? linattn_i_alloc(wrows * d, sizeof *w) : NULL;
    if (!p || (wrows && !w) || (wrows && linattn_i_draw(o->draw, o->seed, wrows, d, w))) {
        X(plan_destroy)(p);
        free(w);
        return LINATTN_ENOMEM;
    }
    /* W drawn in double, rounded once; s W from the double draw. */
    for (int64_t i = 0; i < wrows * d; i++) {
        p->w[i] = (real)w[i];
        p->ws[i] = (real)(s * w[i]);
    }
    free(w);
    p->fingerprint = fingerprint(p);
    *plan = p;
    return 0;
}

static int act_known(int act)
{
    return act >= LINATTN_ACT_EXP && act <= LINATTN_ACT_HEDGEHOG;
}

int X(plan_create_custom)(X(plan) **plan, int act, int64_t d, int64_t m,
                          int64_t e, int layout, const real *w, int64_t ldw,
                          const real *b, const linattn_opts *opts)
{
    linattn_opts defaults;
    linattn_opts_init(&defaults);
    const linattn_opts *o = opts ? opts : &defaults;
    if (!plan)
        return -1;
    if (!act_known(act))
        return -2;
    if (d < 1)
        return -3;
    if (m < 1 || (act == LINATTN_ACT_HEDGEHOG && m % 2))
        return -4;
    if (e < 1)
        return -5;
    if (!linattn_i_layout_ok(layout))
        return -6;
    int64_t rows = act == LINATTN_ACT_HEDGEHOG ? m / 2 : m;
    int st = linattn_i_matrix_arg(layout, rows, d, w, ldw, 7);
    if (st)
        return st;
    if (opts_bad(o) || (o->m != 0 && o->m != m) ||
        denom_bad_for(o, LINATTN_MAP_CUSTOM, act) ||
        (o->query_scale != 0 && o->query_scale != 1))
        return -10;
    if (linattn_i_matrix_fits(layout, rows, d, ldw) ||
        sizes_bad(d, m, e, block_of(o), chunk_of(o)))
        return LINATTN_ESIZE;
    XI(view) wv = {w, ldw, layout == LINATTN_COL_MAJOR};
    if (!XI(all_finite)(wv, rows, d))
        return -7;
    if (b && !XI(all_finite)((XI(view)){b, rows, 0}, 1, rows))
        return -9;
    double s = o->input_scale ? o->input_scale : 1;
    X(plan) *p = plan_new(o, LINATTN_MAP_CUSTOM, act, d, m, e, rows, s);
    if (p && b) {
        p->bias = linattn_i_alloc(rows, sizeof(real));
        if (p->bias)
            memcpy(p->bias, b, (size_t)rows * sizeof(real));
    }
    if (!p || (b && !p->bias)) {
        X(plan_destroy)(p);
        return LINATTN_ENOMEM;
    }
    XI(copy_rows)(wv, 0, rows, d, p->w);
    int scaled_finite = 1;
    for (int64_t i = 0; i < rows * d; i++) {
        p->ws[i] = (real)(s * p->w[i]);
        scaled_finite &= isfinite(p->ws[i]) != 0;
    }
    if (!scaled_finite) { /* s W overflows the working precision */
        X(plan_destroy)(p);
        return -10;
    }
    p->fingerprint = fingerprint(p);
    *plan = p;
    return 0;
}

void X(plan_destroy)(X(plan) *plan)
{
    if (!plan)
        return;
    free(plan->w);
    free(plan->ws);
    free(plan->bias);
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

int X(plan_decay)(const X(plan) *plan, double *log_decay)
{
    if (!plan)
        return -1;
    if (!log_decay)
        return -2;
    *log_decay = plan->log_decay;
    return 0;
}

int X(plan_weights)(const X(plan) *plan, int layout, real *w, int64_t ldw,
                    int64_t *rows)
{
    if (!plan)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    int64_t r = plan->wrows, d = plan->d;
    if (w && r) {
        const linattn_i_mat mats[] = {{r, d, w, ldw, 3, 0}};
        int st = linattn_i_check_mats(layout, mats, 1);
        if (st)
            return st;
        int cm = layout == LINATTN_COL_MAJOR;
        XI(put_rows)(w, cm, ldw, plan->w, 0, d, r, d, NULL);
    }
    if (rows)
        *rows = r;
    return 0;
}
