/*
 * state.c -- the additive state (S, z) of linear attention.
 *
 * S and z are kept side by side as one m x (e+1) row-major matrix [S | z],
 * so that a query block reads numerators and normalizers from one GEMM.
 * Updates add phi(K_b)^T V_b by GEMM straight into S (beta = 1) and the
 * column sums of phi(K_b) into z, block by block.  Float states accumulate
 * in double (acc) and publish a float copy (sz) after every change.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "validate.h"

static int64_t state_len(const X(plan) *plan)
{
    return plan->m * (plan->e + 1);
}

size_t XI(state_bytes)(const X(plan) *plan)
{
    size_t n = (size_t)state_len(plan);
    return n * sizeof(acc_t) + (LINATTN_ACC_WIDER ? n * sizeof(real) : 0);
}

void XI(state_init)(X(state) *st, const X(plan) *plan, void *mem)
{
    st->plan = plan;
    st->tokens = 0;
    st->acc = mem;
    memset(mem, 0, XI(state_bytes)(plan));
#if LINATTN_ACC_WIDER
    st->sz = (real *)(st->acc + state_len(plan));
#else
    st->sz = st->acc;
#endif
}

/* sz = acc in the working precision (a no-op when they alias). */
static void publish(X(state) *st)
{
#if LINATTN_ACC_WIDER
    int64_t len = state_len(st->plan);
    for (int64_t i = 0; i < len; i++)
        st->sz[i] = (real)st->acc[i];
#else
    (void)st;
#endif
}

int X(state_create)(X(state) **state, const X(plan) *plan)
{
    if (!state)
        return -1;
    if (!plan)
        return -2;
    X(state) *st = malloc(sizeof *st);
    void *mem = malloc(XI(state_bytes)(plan));
    if (!st || !mem) {
        free(st);
        free(mem);
        return LINATTN_ENOMEM;
    }
    XI(state_init)(st, plan, mem);
    *state = st;
    return 0;
}

void X(state_destroy)(X(state) *state)
{
    if (!state)
        return;
    free(state->acc);
    free(state);
}

int X(state_reset)(X(state) *state)
{
    if (!state)
        return -1;
    memset(state->acc, 0, XI(state_bytes)(state->plan));
    state->tokens = 0;
    return 0;
}

static int compatible(const X(state) *a, const X(state) *b)
{
    return a->plan->fingerprint == b->plan->fingerprint &&
           a->plan->map == b->plan->map && a->plan->d == b->plan->d &&
           a->plan->m == b->plan->m && a->plan->e == b->plan->e;
}

int X(state_merge)(X(state) *dst, const X(state) *src)
{
    if (!dst)
        return -1;
    if (!src || !compatible(dst, src))
        return -2;
    int64_t len = state_len(dst->plan);
    for (int64_t i = 0; i < len; i++)
        dst->acc[i] += src->acc[i];
    dst->tokens += src->tokens;
    publish(dst);
    return 0;
}

int X(state_copy)(X(state) *dst, const X(state) *src)
{
    if (!dst)
        return -1;
    if (!src || !compatible(dst, src))
        return -2;
    if (dst != src)
        memcpy(dst->acc, src->acc, XI(state_bytes)(dst->plan));
    dst->tokens = src->tokens;
    return 0;
}

int X(state_get)(const X(state) *state, int layout, real *s, int64_t lds,
                 real *z, int64_t *tokens)
{
    if (!state)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    int64_t m = state->plan->m, e = state->plan->e;
    if (s && linattn_i_matrix_arg(layout, m, e, s, lds, 3))
        return -4;
    for (int64_t i = 0; s && i < m; i++)
        for (int64_t j = 0; j < e; j++) {
            real v = state->sz[i * (e + 1) + j];
            if (layout == LINATTN_COL_MAJOR)
                s[i + j * lds] = v;
            else
                s[i * lds + j] = v;
        }
    for (int64_t i = 0; z && i < m; i++)
        z[i] = state->sz[i * (e + 1) + e];
    if (tokens)
        *tokens = state->tokens;
    return 0;
}

/* Workspace of an update: phi of one block (none for the identity), the
 * column sums z_b of phi and their per-chunk partials, and in float the
 * block's partial S before it is added to the double accumulator. */
typedef struct {
    real *phi, *part;
    acc_t *zsum, *partial;
} update_ws;

static void free_update_ws(update_ws *w)
{
    free(w->phi);
    free(w->part);
    free(w->zsum);
    free(w->partial);
}

static int alloc_update_ws(update_ws *w, const X(plan) *plan, int64_t rows)
{
    int64_t m = plan->m, e = plan->e;
    int identity = XI(map_is_identity)(plan);
    *w = (update_ws){NULL, NULL, NULL, NULL};
    if (!identity)
        w->phi = linattn_i_alloc(rows * m, sizeof(real));
    if (LINATTN_ACC_WIDER)
        w->part = linattn_i_alloc(m * e, sizeof(real));
    w->zsum = linattn_i_alloc(m, sizeof(acc_t));
    w->partial = linattn_i_alloc(XI(stats_partial_len)(plan, rows), sizeof(acc_t));
    if ((!identity && !w->phi) || (LINATTN_ACC_WIDER && !w->part) ||
        !w->zsum || !w->partial) {
        free_update_ws(w);
        return LINATTN_ENOMEM;
    }
    memset(w->zsum, 0, (size_t)m * sizeof(acc_t));
    return 0;
}

int XI(state_update_checked)(X(state) *st, XI(view) k, XI(view) v, int64_t n)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e, ld = e + 1;
    int64_t block = XI(block_rows)(plan);
    if (n == 0)
        return 0;
    /* All workspace first: a failed allocation leaves the state as it was. */
    update_ws w;
    if (alloc_update_ws(&w, plan, n < block ? n : block))
        return LINATTN_ENOMEM;
    XI(stats) zs = {NULL, NULL, w.zsum, w.partial};
    for (int64_t r = 0; r < n; r += block) {
        int64_t rows = n - r < block ? n - r : block;
        XI(view) kb = XI(view_rows)(k, r), vb = XI(view_rows)(v, r), pk = kb;
        if (w.phi) {
            /* phi and its column sums in one pass over the block. */
            XI(phi_rows)(plan, kb, rows, w.phi, &zs);
            pk = (XI(view)){w.phi, m, 0};
        }
#if LINATTN_ACC_WIDER
        XI(gemm)(1, 0, m, e, rows, 1, pk, vb, 0, w.part, e);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < e; j++)
                st->acc[i * ld + j] += w.part[i * e + j];
#else
        XI(gemm)(1, 0, m, e, rows, 1, pk, vb, 1, st->acc, ld);
#endif
        /* Identity: the column sums of K_b after the GEMM, from cache. */
        if (!w.phi)
            XI(phi_rows)(plan, kb, rows, NULL, &zs);
    }
    for (int64_t i = 0; i < m; i++)
        st->acc[i * ld + e] += w.zsum[i];
    st->tokens += n;
    publish(st);
    free_update_ws(&w);
    return 0;
}

int XI(state_query_checked)(const X(state) *st, int layout, int64_t n,
                            XI(view) q, real *out, int64_t ldout, real *num,
                            int64_t ldnum, real *den, int64_t *bad_row)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e;
    int64_t block = XI(block_rows)(plan);
    int64_t rows_max = n < block ? n : block;
    int identity = XI(map_is_identity)(plan);
    if (n == 0)
        return 0;
    real *phi = identity ? NULL : linattn_i_alloc(rows_max * m, sizeof(real));
    /* normalizers, their reciprocals, and z contiguous */
    real *dd = linattn_i_alloc(2 * rows_max + m, sizeof(real));
    if ((!identity && !phi) || !dd) {
        free(phi);
        free(dd);
        return LINATTN_ENOMEM;
    }
    real *inv = dd + rows_max, *z = dd + 2 * rows_max;
    for (int64_t i = 0; i < m; i++)
        z[i] = st->sz[i * (e + 1) + e];
    XI(view) s = {st->sz, e + 1, 0};
    XI(stats) ds = {z, dd, NULL, NULL};
    int status = 0;
    for (int64_t r = 0; r < n; r += block) {
        int64_t rows = n - r < block ? n - r : block;
        XI(view) pq = XI(view_rows)(q, r);
        /* phi and the normalizers phi . z in one pass, before anything is
         * written, so that a bad normalizer stops the block cleanly. */
        XI(phi_rows)(plan, pq, rows, phi, &ds);
        if (!identity)
            pq = (XI(view)){phi, m, 0};
        int64_t good = XI(good_rows)(plan, dd, rows, out != NULL);
        XI(write_rows)(plan, pq, s, m, dd, good, layout, r, out, ldout, num,
                       ldnum, den, inv);
        if (good < rows) {
            if (bad_row)
                *bad_row = r + good;
            status = LINATTN_EDENOM;
            break;
        }
    }
    free(phi);
    free(dd);
    return status;
}

int X(state_update)(X(state) *state, int layout, int64_t n, const real *k,
                    int64_t ldk, const real *v, int64_t ldv)
{
    if (!state)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    if (n < 0)
        return -3;
    const X(plan) *plan = state->plan;
    int st = linattn_i_matrix_arg(layout, n, plan->d, k, ldk, 4);
    if (!st)
        st = linattn_i_matrix_arg(layout, n, plan->e, v, ldv, 6);
    if (!st)
        st = linattn_i_matrix_fits(layout, n, plan->d, ldk);
    if (!st)
        st = linattn_i_matrix_fits(layout, n, plan->e, ldv);
    if (st)
        return st;
    int cm = layout == LINATTN_COL_MAJOR;
    return XI(state_update_checked)(state, (XI(view)){k, ldk, cm},
                                    (XI(view)){v, ldv, cm}, n);
}

int X(state_query)(const X(state) *state, int layout, int64_t n,
                   const real *q, int64_t ldq, real *out, int64_t ldout,
                   real *num, int64_t ldnum, real *den, int64_t *bad_row)
{
    if (!state)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    if (n < 0)
        return -3;
    const X(plan) *plan = state->plan;
    int64_t e = plan->e;
    int st = linattn_i_matrix_arg(layout, n, plan->d, q, ldq, 4);
    /* out and num are optional: a NULL one is skipped, ld and all. */
    if (!st && out)
        st = linattn_i_matrix_arg(layout, n, e, out, ldout, 6);
    if (!st && num)
        st = linattn_i_matrix_arg(layout, n, e, num, ldnum, 8);
    if (!st && !out && !num && !den)
        st = -10;
    if (!st)
        st = linattn_i_matrix_fits(layout, n, plan->d, ldq);
    if (!st && out)
        st = linattn_i_matrix_fits(layout, n, e, ldout);
    if (!st && num)
        st = linattn_i_matrix_fits(layout, n, e, ldnum);
    if (st)
        return st;
    XI(view) qv = {q, ldq, layout == LINATTN_COL_MAJOR};
    return XI(state_query_checked)(state, layout, n, qv, out, ldout, num,
                                   ldnum, den, bad_row);
}
