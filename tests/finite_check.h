/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * finite_check.h -- the invariant "finite inputs, finite outputs", shared by
 * tests/test_finite.c (make check) and tests/hard/fuzz_finite.c (libFuzzer,
 * make check-hard):
 *
 *     finite inputs never produce a non-finite output with status 0.
 *
 * Either every output is finite, or the call says what happened and which
 * row: LINATTN_EDENOM (row r untouched) or LINATTN_EOVERFLOW (row r not a
 * finite result), rows before r finite, later rows their result or their
 * previous contents.  fc_run runs one path of the library on n queries,
 * keys and values; fc_violation judges what it left.
 *
 * A template: define FC_REAL (the real type) and FC_API(name) (the
 * library's mangling, linattn_d_##name) and FC(name) (this file's), then
 * include it; it may be included once per precision.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"

#ifndef FC_PATHS
#define FC_PATHS
/* The paths: the one-call ones, the streaming state (blocked: all keys,
 * then all queries; decoding: one token's update and query at a time, the
 * few-row path), and the batched calls (two heads sharing the inputs). */
enum {
    FC_ATTENTION,
    FC_NAIVE,
    FC_CAUSAL,
    FC_NAIVE_CAUSAL,
    FC_STREAM,
    FC_DECODE,
    FC_BATCHED_ATTENTION,
    FC_BATCHED_NAIVE,
    FC_BATCHED_CAUSAL,
    FC_BATCHED_NAIVE_CAUSAL,
    FC_NPATHS
};
#define FC_SENTINEL (-777)
/* A status the library must never give here: a state changed by a refused
 * update, or a batched call's problems that disagree. */
#define FC_BROKEN (-1000)
#endif

/* Nonzero when the n x c matrix a (layout, ld) holds only finite values. */
static int FC(all_finite)(int layout, int64_t n, int64_t c, const FC_REAL *a,
                          int64_t ld)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < c; j++)
            if (!isfinite(layout == LINATTN_COL_MAJOR ? a[i + j * ld]
                                                      : a[i * ld + j]))
                return 0;
    return 1;
}

/* The bytes of a state, to tell a refused update changed nothing. */
static int FC(state_equal)(const FC_API(state) *a, const unsigned char *saved,
                           int64_t len)
{
    unsigned char *now = malloc((size_t)len);
    int same = now && FC_API(state_save)(a, now, len, NULL) == 0 &&
               memcmp(now, saved, (size_t)len) == 0;
    free(now);
    return same;
}

/* The state path: all n keys, then all n queries; or one token at a time
 * (decode), row i from keys 0..i.  An update refused with EOVERFLOW must
 * leave the state as it was (else FC_BROKEN); it is reported as that
 * status at the row whose query did not run. */
static int FC(run_state)(const FC_API(plan) *p, int decode, int layout,
                         int64_t n, const FC_REAL *q, int64_t ldq,
                         const FC_REAL *k, int64_t ldk, const FC_REAL *v,
                         int64_t ldv, FC_REAL *out, int64_t ldout,
                         int64_t *bad)
{
    FC_API(state) *s;
    int st = FC_API(state_create)(&s, p);
    if (st)
        return st;
    int64_t len = 0;
    FC_API(state_save_size)(s, &len);
    unsigned char *before = malloc((size_t)len);
    int cm = layout == LINATTN_COL_MAJOR;
    int64_t steps = decode ? n : 1;
    for (int64_t i = 0; !st && i < steps; i++) {
        int64_t rows = decode ? 1 : n;
        int64_t rq = cm ? i : i * ldq, rk = cm ? i : i * ldk;
        int64_t rv = cm ? i : i * ldv, ro = cm ? i : i * ldout;
        FC_API(state_save)(s, before, len, NULL);
        st = FC_API(state_update)(s, layout, rows, k + rk, ldk, v + rv, ldv);
        if (st == LINATTN_EOVERFLOW) {
            *bad = i;
            if (!FC(state_equal)(s, before, len))
                st = FC_BROKEN;
            break;
        }
        if (st)
            break;
        int64_t row = -1;
        st = FC_API(state_query)(s, layout, rows, q + rq, ldq, out + ro, ldout,
                                 NULL, 0, NULL, &row);
        if (st == LINATTN_EDENOM || st == LINATTN_EOVERFLOW)
            *bad = i + row;
    }
    free(before);
    FC_API(state_destroy)(s);
    return st;
}

/* Two heads sharing q, k, v (head strides 0), outputs side by side: head
 * 1's output must be head 0's (same problem), byte for byte. */
static int FC(run_batched)(int path, const FC_API(plan) *p, int layout,
                           int64_t n, int64_t e, const FC_REAL *q, int64_t ldq,
                           const FC_REAL *k, int64_t ldk, const FC_REAL *v,
                           int64_t ldv, FC_REAL *out, int64_t ldout,
                           int64_t *bad)
{
    int cm = layout == LINATTN_COL_MAJOR;
    int64_t span = cm ? ldout * e : ldout * n;
    FC_REAL *two = malloc((size_t)(2 * span) * sizeof(FC_REAL));
    if (!two)
        return LINATTN_ENOMEM;
    memcpy(two, out, (size_t)span * sizeof(FC_REAL));
    memcpy(two + span, out, (size_t)span * sizeof(FC_REAL));
    linattn_strides sq = {ldq, 0, 0}, sk = {ldk, 0, 0}, sv = {ldv, 0, 0};
    linattn_strides so = {ldout, 2 * span, span};
    linattn_where w = {-1, -1, -1};
    int st;
    switch (path) {
    case FC_BATCHED_ATTENTION:
        st = FC_API(batched_attention)(p, layout, 1, 2, n, n, q, &sq, k, &sk,
                                       v, &sv, two, &so, &w);
        break;
    case FC_BATCHED_NAIVE:
        st = FC_API(batched_naive)(p, layout, 1, 2, n, n, q, &sq, k, &sk, v,
                                   &sv, two, &so, &w);
        break;
    case FC_BATCHED_CAUSAL:
        st = FC_API(batched_causal)(p, layout, 1, 2, n, q, &sq, k, &sk, v, &sv,
                                    two, &so, &w);
        break;
    default:
        st = FC_API(batched_naive_causal)(p, layout, 1, 2, n, q, &sq, k, &sk,
                                          v, &sv, two, &so, &w);
        break;
    }
    if (st == LINATTN_EDENOM || st == LINATTN_EOVERFLOW) {
        *bad = w.row;
        if (w.batch != 0 || w.head != 0)
            st = FC_BROKEN; /* the first failing problem is (0, 0) */
    }
    /* Rows a failing problem did not reach hold their previous contents,
     * which are the same in both heads; threads may reach different rows
     * of the two problems, so only a successful call is compared whole. */
    if (st == 0 && memcmp(two, two + span, (size_t)span * sizeof(FC_REAL)))
        st = FC_BROKEN;
    memcpy(out, two, (size_t)span * sizeof(FC_REAL));
    free(two);
    return st;
}

/* Runs path on n queries, keys and values (q, k: n x d; v, out: n x e, all
 * in layout); returns its status, and the row it names in *bad. */
static int FC(run)(int path, const FC_API(plan) *p, int layout, int64_t n,
                   int64_t e, const FC_REAL *q, int64_t ldq, const FC_REAL *k,
                   int64_t ldk, const FC_REAL *v, int64_t ldv, FC_REAL *out,
                   int64_t ldout, int64_t *bad)
{
    switch (path) {
    case FC_ATTENTION:
        return FC_API(attention)(p, layout, n, n, q, ldq, k, ldk, v, ldv, out,
                                 ldout, bad);
    case FC_NAIVE:
        return FC_API(naive)(p, layout, n, n, q, ldq, k, ldk, v, ldv, out,
                             ldout, bad);
    case FC_CAUSAL:
        return FC_API(causal)(p, layout, n, q, ldq, k, ldk, v, ldv, out, ldout,
                              bad);
    case FC_NAIVE_CAUSAL:
        return FC_API(naive_causal)(p, layout, n, q, ldq, k, ldk, v, ldv, out,
                                    ldout, bad);
    case FC_STREAM:
    case FC_DECODE:
        return FC(run_state)(p, path == FC_DECODE, layout, n, q, ldq, k, ldk,
                             v, ldv, out, ldout, bad);
    default:
        return FC(run_batched)(path, p, layout, n, e, q, ldq, k, ldk, v, ldv,
                               out, ldout, bad);
    }
}

/* NULL when what a call left in out (n x e, layout, ldout; filled with
 * FC_SENTINEL before the call) keeps the invariant for finite inputs, else
 * what is wrong. */
static const char *FC(violation)(int status, int64_t bad, int layout,
                                 int64_t n, int64_t e, const FC_REAL *out,
                                 int64_t ldout)
{
    int cm = layout == LINATTN_COL_MAJOR;
    if (status == FC_BROKEN)
        return "a refused update changed the state, or batched problems "
               "disagree";
    if (status == LINATTN_ENOMEM)
        return NULL;
    if (status == 0)
        return FC(all_finite)(layout, n, e, out, ldout)
                   ? NULL
                   : "a non-finite output with status 0";
    if (status != LINATTN_EDENOM && status != LINATTN_EOVERFLOW)
        return "an unexpected status";
    if (bad < 0 || bad >= n)
        return "the row named is not a row of the call";
    if (!FC(all_finite)(layout, bad, e, out, ldout))
        return "a row before the one named is not finite";
    const FC_REAL *row = cm ? out + bad : out + bad * ldout;
    int64_t step = cm ? ldout : 1;
    int untouched = 1, finite = 1;
    for (int64_t c = 0; c < e; c++) {
        untouched &= row[c * step] == (FC_REAL)FC_SENTINEL;
        finite &= isfinite(row[c * step]) != 0;
    }
    if (status == LINATTN_EDENOM && !untouched)
        return "EDENOM's row was written";
    if (status == LINATTN_EOVERFLOW && !untouched && finite)
        return "EOVERFLOW's row holds a finite result";
    return NULL;
}
