/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scaling_run.c -- one size of a scaling study (scaling.h), compiled once
 * per precision (bench_prec.h).  Every path goes through the batched
 * calls on [B][H][n][c] arrays (softmax, which has no batched call, runs
 * problem by problem).
 */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"
#include "bench_prec.h"
#include "machine.h"
#include "measure.h"
#include "roofline.h"
#include "scaling.h"
#include "timing.h"

/* Behind the precision-neutral handle. */
typedef struct {
    scaling_cfg cfg;
    LX(plan) *plan;
    int64_t block, problems;
    breal *q, *k, *v, *out;
} study;

static study *of(scaling *s)
{
    return (study *)s;
}

int BX(scaling_create)(scaling **sp, const scaling_cfg *cfg, int64_t nmax)
{
    study *s = calloc(1, sizeof *s);
    if (!s)
        return SCALING_ENOMEM;
    s->cfg = *cfg;
    s->problems = cfg->batch * cfg->heads;
    linattn_opts o;
    linattn_opts_init(&o);
    o.m = cfg->m;
    o.block = cfg->block;
    o.chunk = cfg->chunk;
    /* Random data makes signed normalizers for signed maps: accepted. */
    o.denom = LINATTN_DENOM_NONZERO;
    int st = LX(plan_create)(&s->plan, cfg->map, cfg->d, cfg->e, &o);
    if (st) {
        free(s);
        return st;
    }
    LX(plan_dims)(s->plan, NULL, &s->cfg.m, NULL);
    LX(plan_block)(s->plan, &s->block);
    uint64_t seed = 42;
    int64_t qk = s->problems * nmax * cfg->d, ve = s->problems * nmax * cfg->e;
    s->q = BX(random)(qk, &seed);
    s->k = BX(random)(qk, &seed);
    s->v = BX(random)(ve, &seed);
    s->out = BX(random)(ve, &seed); /* touched now, not in a timed call */
    if (!s->q || !s->k || !s->v || !s->out) {
        BX(scaling_destroy)((scaling *)s);
        return SCALING_ENOMEM;
    }
    *sp = (scaling *)s;
    return 0;
}

void BX(scaling_dims)(const scaling *h, int64_t *m, int64_t *block,
                      int64_t *wrows, int64_t *chunk)
{
    const study *s = (const study *)h;
    *m = s->cfg.m;
    *block = s->block;
    LX(plan_weights)(s->plan, LINATTN_ROW_MAJOR, NULL, 0, wrows);
    *chunk = s->cfg.chunk ? s->cfg.chunk : bench_default_chunk(sizeof(breal));
}

void BX(scaling_destroy)(scaling *h)
{
    study *s = of(h);
    if (!s)
        return;
    LX(plan_destroy)(s->plan);
    free(s->q), free(s->k), free(s->v), free(s->out);
    free(s);
}

/* One call of path p at n rows with the given thread count. */
static int call_path(const study *s, int p, int64_t n, int threads)
{
    const scaling_cfg *c = &s->cfg;
    int64_t d = c->d, e = c->e, B = c->batch, H = c->heads;
    const linattn_strides sq = {d, H * n * d, n * d}, sv = {e, H * n * e, n * e};
    const int row = LINATTN_ROW_MAJOR;
    switch (p) {
    case SP_FACTORED:
        return LX(batched_attention)(s->plan, row, B, H, n, n, s->q, &sq, s->k,
                                     &sq, s->v, &sv, s->out, &sv, NULL);
    case SP_NAIVE:
        return LX(batched_naive)(s->plan, row, B, H, n, n, s->q, &sq, s->k, &sq,
                                 s->v, &sv, s->out, &sv, NULL);
    case SP_CAUSAL:
        return LX(batched_causal)(s->plan, row, B, H, n, s->q, &sq, s->k, &sq,
                                  s->v, &sv, s->out, &sv, NULL);
    case SP_NAIVE_CAUSAL:
        return LX(batched_naive_causal)(s->plan, row, B, H, n, s->q, &sq, s->k,
                                        &sq, s->v, &sv, s->out, &sv, NULL);
    case SP_SOFTMAX:
        for (int64_t i = 0; i < s->problems; i++) {
            int st = LX(softmax)(row, n, n, d, e, (breal)(1 / sqrt((double)d)),
                                 s->q + i * n * d, d, s->k + i * n * d, d,
                                 s->v + i * n * e, e, s->out + i * n * e, e);
            if (st)
                return st;
        }
        return 0;
    default:
        return BX(bare_time)(threads, s->problems, n, d, e, s->block, s->q,
                             s->k, s->v, s->out) < 0
                   ? LINATTN_ENOMEM
                   : 0;
    }
}

/* Seconds per call over inner calls; *st gets a failing status. */
static double timed(const study *s, int p, int64_t n, int threads,
                    int inner, int *st)
{
    double t0 = bench_now();
    for (int i = 0; i < inner && !*st; i++)
        *st = call_path(s, p, n, threads);
    return (bench_now() - t0) / inner;
}

int BX(scaling_measure)(scaling *h, int64_t n, unsigned paths,
                        scaling_result res[][SP_COUNT])
{
    study *s = of(h);
    const scaling_cfg *c = &s->cfg;
    volatile sig_atomic_t *stop = c->stop;
    int inner[SCALING_MAX_THREADS][SP_COUNT];
    int st = 0;
    for (int ti = 0; ti < c->nthreads; ti++)
        for (int p = 0; p < SP_COUNT; p++) {
            res[ti][p].ran = 0;
            res[ti][p].peak_rise = -1;
            if (!(paths & 1u << p))
                continue;
            if (*stop)
                return SCALING_STOPPED;
            bench_set_threads(c->threads[ti]);
            bench_peak_begin();
            double t = timed(s, p, n, c->threads[ti], 1, &st);
            res[ti][p].peak_rise = bench_peak_end();
            if (st)
                return st;
            /* Samples of at least a millisecond: short calls repeat. */
            double want = 1e-3 / (t > 1e-9 ? t : 1e-9);
            inner[ti][p] = want < 1 ? 1 : want > 1000 ? 1000 : (int)ceil(want);
        }
    for (int r = 0; r < c->reps; r++)
        for (int ti = 0; ti < c->nthreads; ti++) {
            bench_set_threads(c->threads[ti]);
            for (int p = 0; p < SP_COUNT; p++) {
                if (!(paths & 1u << p))
                    continue;
                if (*stop)
                    return SCALING_STOPPED;
                res[ti][p].t[r] = timed(s, p, n, c->threads[ti], inner[ti][p], &st);
                if (st)
                    return st;
            }
        }
    for (int ti = 0; ti < c->nthreads; ti++)
        for (int p = 0; p < SP_COUNT; p++)
            res[ti][p].ran = (paths & 1u << p) != 0;
    return 0;
}
