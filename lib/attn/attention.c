/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attention.c -- non-causal linear attention in one call: build the state
 * over all keys in row blocks, then answer the queries in row blocks.
 * Extra memory: one state and one block of workspace, whatever nq and nk.
 */
#include <stdlib.h>
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/validate.h"

int XI(qkvo_args)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                  const real *q, int64_t ldq, const real *k, int64_t ldk,
                  const real *v, int64_t ldv, const real *out, int64_t ldout,
                  const real *den, int pos, int keys_in_blas)
{
    int64_t d = plan->d, e = plan->e;
    const linattn_i_mat mats[] = {{nq, d, q, ldq, pos, 0},
                                  {nk, d, k, ldk, pos + 2, 0},
                                  {nk, e, v, ldv, pos + 4, 0},
                                  {nq, e, out, ldout, pos + 6, 0},
                                  /* den (nq entries) only for its range */
                                  {nq, 1, den, linattn_i_vector_ld(layout, nq),
                                   pos + 8, 1}};
    int st = linattn_i_check_mats_io(layout, sizeof(real), mats, 5, 3);
    if (!st && keys_in_blas)
        st = linattn_i_blas_fits(nk);
    if (st || !plan->check_finite)
        return st;
    int cm = layout == LINATTN_COL_MAJOR;
    if (!XI(all_finite)((XI(view)){q, ldq, cm}, nq, d) ||
        !XI(all_finite)((XI(view)){k, ldk, cm}, nk, d) ||
        !XI(all_finite)((XI(view)){v, ldv, cm}, nk, e))
        return LINATTN_ENONFINITE;
    return 0;
}

int XI(attention_args)(const X(plan) *plan, int layout, int64_t nq,
                       int64_t nk, const real *q, int64_t ldq, const real *k,
                       int64_t ldk, const real *v, int64_t ldv,
                       const real *out, int64_t ldout, int keys_in_blas)
{
    return XI(attention_den_args)(plan, layout, nq, nk, q, ldq, k, ldk, v,
                                  ldv, out, ldout, NULL, keys_in_blas);
}

int XI(attention_den_args)(const X(plan) *plan, int layout, int64_t nq,
                           int64_t nk, const real *q, int64_t ldq,
                           const real *k, int64_t ldk, const real *v,
                           int64_t ldv, const real *out, int64_t ldout,
                           const real *den, int keys_in_blas)
{
    if (!plan)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    if (nq < 0)
        return -3;
    if (nk < 0)
        return -4;
    return XI(qkvo_args)(plan, layout, nq, nk, q, ldq, k, ldk, v, ldv, out,
                         ldout, den, 5, keys_in_blas);
}

int X(attention)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                 const real *q, int64_t ldq, const real *k, int64_t ldk,
                 const real *v, int64_t ldv, real *out, int64_t ldout,
                 int64_t *bad_row)
{
    int st = XI(attention_args)(plan, layout, nq, nk, q, ldq, k, ldk, v, ldv,
                                out, ldout, 0);
    if (st)
        return st;
    return XI(attention_run)(plan, layout, nq, nk, q, ldq, k, ldk, v, ldv, out,
                             ldout, bad_row);
}

int XI(attention_run)(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                      const real *q, int64_t ldq, const real *k, int64_t ldk,
                      const real *v, int64_t ldv, real *out, int64_t ldout,
                      int64_t *bad_row)
{
    return XI(attention_run_den)(plan, layout, nq, nk, q, ldq, k, ldk, v, ldv,
                                 out, ldout, NULL, bad_row);
}

int XI(attention_run_den)(const X(plan) *plan, int layout, int64_t nq,
                          int64_t nk, const real *q, int64_t ldq,
                          const real *k, int64_t ldk, const real *v,
                          int64_t ldv, real *out, int64_t ldout, real *den,
                          int64_t *bad_row)
{
    if (nq == 0)
        return 0;
    int st;
    void *mem = malloc(XI(state_bytes)(plan));
    if (!mem)
        return LINATTN_ENOMEM;
    X(state) state;
    XI(state_init)(&state, plan, mem);
    int cm = layout == LINATTN_COL_MAJOR;
    st = XI(state_update_checked)(&state, (XI(view)){k, ldk, cm},
                                  (XI(view)){v, ldv, cm}, nk);
    if (!st)
        st = XI(state_query_checked)(&state, layout, nq,
                                     (XI(view)){q, ldq, cm}, out, ldout, NULL,
                                     0, den, bad_row);
    free(mem);
    return st;
}
