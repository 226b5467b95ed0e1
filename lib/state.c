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

int XI(state_update_checked)(X(state) *st, XI(view) k, XI(view) v, int64_t n)
{
    const X(plan) *plan = st->plan;
    int64_t m = plan->m, e = plan->e, ld = e + 1;
    int64_t block = XI(block_rows)(plan);
    int64_t rows_max = n < block ? n : block;
    int identity = XI(map_is_identity)(plan);
    if (n == 0)
        return 0;
    /* All workspace first: a failed allocation leaves the state as it was. */
    real *phi = identity ? NULL : linattn_i_alloc(rows_max * m, sizeof(real));
    acc_t *zsum = linattn_i_alloc(m, sizeof(acc_t));
    real *tmp = LINATTN_ACC_WIDER ? linattn_i_alloc(m * e, sizeof(real)) : NULL;
    if ((!identity && !phi) || !zsum || (LINATTN_ACC_WIDER && !tmp)) {
        free(phi);
        free(zsum);
        free(tmp);
        return LINATTN_ENOMEM;
    }
    memset(zsum, 0, (size_t)m * sizeof(acc_t));
    for (int64_t r = 0; r < n; r += block) {
        int64_t rows = n - r < block ? n - r : block;
        XI(view) kb = XI(view_rows)(k, r), vb = XI(view_rows)(v, r), pk;
        if (identity) {
            pk = kb;
            XI(colsum_view)(kb, rows, m, zsum);
        } else {
            XI(phi_rows)(plan, kb, rows, phi, zsum);
            pk = (XI(view)){phi, m, 0};
        }
#if LINATTN_ACC_WIDER
        XI(gemm)(1, 0, m, e, rows, 1, pk, vb, 0, tmp, e);
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < e; j++)
                st->acc[i * ld + j] += tmp[i * e + j];
#else
        XI(gemm)(1, 0, m, e, rows, 1, pk, vb, 1, st->acc, ld);
#endif
    }
    for (int64_t i = 0; i < m; i++)
        st->acc[i * ld + e] += zsum[i];
    st->tokens += n;
    publish(st);
    free(phi);
    free(zsum);
    free(tmp);
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
    real *y = linattn_i_alloc(rows_max * (e + 1), sizeof(real));
    if ((!identity && !phi) || !y) {
        free(phi);
        free(y);
        return LINATTN_ENOMEM;
    }
    XI(view) sz = {st->sz, e + 1, 0};
    int status = 0;
    for (int64_t r = 0; r < n; r += block) {
        int64_t rows = n - r < block ? n - r : block;
        XI(view) qb = XI(view_rows)(q, r), pq = qb;
        if (!identity) {
            XI(phi_rows)(plan, qb, rows, phi, NULL);
            pq = (XI(view)){phi, m, 0};
        }
        XI(gemm)(0, 0, rows, e + 1, m, 1, pq, sz, 0, y, e + 1);
        int64_t bad = XI(finish_rows)(plan, y, rows, layout, r, out, ldout,
                                      num, ldnum, den);
        if (bad >= 0) {
            if (bad_row)
                *bad_row = r + bad;
            status = LINATTN_EDENOM;
            break;
        }
    }
    free(phi);
    free(y);
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
