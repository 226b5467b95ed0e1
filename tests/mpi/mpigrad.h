/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpigrad.h -- what the MPI tests of the distributed backward share: the
 * maps (identity, elu+1, FAVOR+, and two trained custom maps with W and
 * b, the same on every rank), key weights with zeros, the gradients of
 * one call (global matrices each rank fills its rows of; dW, db, dL/dw).
 * After mpidata.h; D and E defined by the program.
 */
#ifndef LINATTN_MPIGRAD_H
#define LINATTN_MPIGRAD_H

typedef struct {
    int map, act; /* custom maps: act, m = 4 */
    double scale, lo, hi;
} gcase;

static const gcase cases[] = {
    {LINATTN_MAP_IDENTITY, 0, 0, 0.05, 1},
    {LINATTN_MAP_ELU1, 0, 0, -2, 2},
    {LINATTN_MAP_FAVOR, 0, 1, -1, 1},
    {LINATTN_MAP_CUSTOM, LINATTN_ACT_EXP, 0, -1, 1},
    {LINATTN_MAP_CUSTOM, LINATTN_ACT_ELU1, 0, -1, 1},
};
#define CASES 5

/* The case's plan, decaying by log_decay per token (0: none). */
static inline P(plan) *plan_of_decay(const gcase *c, uint64_t seed,
                                     double log_decay)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 16; /* blocks and chunks that do not divide the rows */
    o.chunk = 5;
    o.log_decay = log_decay;
    P(plan) *p = NULL;
    int st;
    if (c->map != LINATTN_MAP_CUSTOM) {
        o.seed = 7;
        o.input_scale = c->scale;
        o.denom = c->map == LINATTN_MAP_IDENTITY ? LINATTN_DENOM_NONZERO
                                                 : LINATTN_DENOM_POSITIVE;
        st = P(plan_create)(&p, c->map, D, E, &o);
    } else {
        /* the same W and b on every rank: the same generator and seed */
        real w[4 * D], b[4];
        for (int i = 0; i < 4 * D; i++)
            w[i] = (real)(-0.8 + 1.6 * test_uniform(&seed));
        for (int i = 0; i < 4; i++)
            b[i] = (real)(-0.5 + test_uniform(&seed));
        st = P(plan_create_custom)(&p, c->act, D, 4, E, ROW, w, D, b, &o);
    }
    MT_CHECK(st == 0, "plan_create %d", st);
    return p;
}

static inline P(plan) *plan_of(const gcase *c, uint64_t seed)
{
    return plan_of_decay(c, seed, 0);
}

/* Key weights in [0.25, 2], every seventh 0 (its rows then never read:
 * NaN there). */
static inline real *weights_of(int64_t n, tmat *k, tmat *v, uint64_t seed)
{
    real *w = malloc((size_t)n * sizeof *w);
    for (int64_t j = 0; j < n; j++) {
        w[j] = (real)(0.25 + 1.75 * test_uniform(&seed));
        if (j % 7 == 3) {
            w[j] = 0;
            for (int64_t c = 0; c < D; c++)
                *tmat_at(k, j, c) = (real)NAN;
            for (int64_t c = 0; c < E; c++)
                *tmat_at(v, j, c) = (real)NAN;
        }
    }
    return w;
}

/* The gradients of one call: global matrices (each rank fills its
 * rows), dW and db, dL/dw. */
typedef struct {
    tmat dq, dk, dv;
    real *dw, *db, *dkw;
} grads;

static inline grads grads_new(const tmat *q, int64_t nq, int64_t nk)
{
    grads g;
    g.dq = tmat_like(q, nq, D, 1);
    g.dk = tmat_like(q, nk, D, 2);
    g.dv = tmat_like(q, nk, E, 0);
    fill(&g.dq, SENTINEL), fill(&g.dk, SENTINEL), fill(&g.dv, SENTINEL);
    g.dw = malloc(4 * D * sizeof(real));
    g.db = malloc(4 * sizeof(real));
    g.dkw = malloc((size_t)(nk + 1) * sizeof(real));
    for (int i = 0; i < 4 * D; i++)
        g.dw[i] = SENTINEL;
    for (int i = 0; i < 4; i++)
        g.db[i] = SENTINEL;
    for (int64_t i = 0; i <= nk; i++)
        g.dkw[i] = SENTINEL;
    return g;
}

static inline void grads_free(grads *g)
{
    tmat_free(&g->dq), tmat_free(&g->dk), tmat_free(&g->dv);
    free(g->dw), free(g->db), free(g->dkw);
}

/* Row r of a matrix (its first element). */
static inline real *row_of(const tmat *m, int64_t r)
{
    return m->layout == COL ? m->a + r : m->a + r * m->ld;
}

#endif
