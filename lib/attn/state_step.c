/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * state_step.c -- one decoding step of many streams (sequences x heads):
 * each state absorbs its new token and answers its query, in one call.
 *
 * A serving loop or a multi-head decoder holds one state per (sequence,
 * head) and, per step, one token for each.  Row r of Q, K, V and out
 * belongs to states[r]; the row's work is linattn_d_state_update of one
 * row then linattn_d_state_query of one row, the few-row paths
 * (attn/state_small.c: stack workspace, no BLAS), so that a step
 * allocates nothing when the plans allow it.  Rows are independent: the
 * threads split them (each row on one thread, so a row's result is the
 * same whatever the count), and a row that fails does not stop the
 * others.
 */
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/state.h"
#include "maps/features.h"
#include "common/threads.h"

/* Rows per thread below which a step stays on one thread. */
#define STEP_MIN_ROWS 16

/* linattn_d_states_step: the states, their count, the layout, then Q,
 * K, V and out, one row per state. */
static const linattn_i_signature step_sig = {
    .layout = 3,
    .part = {LINATTN_I_QKVO(4)}};

/* Nonzero when the states are not one per stream: NULL, sizes other
 * than the first one's, or one state twice (marked meanwhile). */
static int states_bad(X(state) *const *states, int64_t count)
{
    for (int64_t r = 0; r < count; r++)
        if (!states[r] || states[r]->plan->d != states[0]->plan->d ||
            states[r]->plan->e != states[0]->plan->e)
            return 1;
    int64_t r = 0;
    while (r < count && !states[r]->mark)
        states[r++]->mark = 1;
    for (int64_t t = 0; t < r; t++)
        states[t]->mark = 0;
    return r < count;
}

typedef struct {
    X(state) *const *states;
    const XI(problem) *pb;
    int status[LINATTN_MAX_THREADS];
    int64_t first[LINATTN_MAX_THREADS];
} step_job;

/* Row r of the step: its state's update, then its query. */
static int step_row(const XI(problem) *pb, X(state) *st, int64_t r)
{
    XI(problem) row = XI(problem_span)(pb, r, r + 1, r, r + 1);
    row.plan = st->plan;
    row.m = st->plan->m;
    int status = XI(state_update_run)(st, &row, 1);
    return status ? status : XI(state_query_run)(st, &row, NULL);
}

static int64_t step_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    step_job *j = ctx;
    j->first[t] = INT64_MAX;
    for (int64_t r = lo; r < hi; r++) {
        int st = step_row(j->pb, j->states[r], r);
        if (st && j->first[t] == INT64_MAX) {
            j->first[t] = r;
            j->status[t] = st;
        }
    }
    return 0;
}

/* Nonzero when the rows of the states whose plan asks for check_finite
 * are finite. */
static int rows_finite(X(state) *const *states, const XI(problem) *pb)
{
    for (int64_t r = 0; r < pb->nq; r++) {
        if (!states[r]->plan->check_finite)
            continue;
        static const int parts[3] = {LINATTN_I_Q, LINATTN_I_K, LINATTN_I_V};
        for (int i = 0; i < 3; i++) {
            XI(view) v = XI(view_rows)(XI(part_view)(pb, parts[i]), r);
            if (!XI(all_finite)(v, 1, parts[i] == LINATTN_I_V ? pb->e : pb->d))
                return 0;
        }
    }
    return 1;
}

int X(states_step)(X(state) *const *states, int64_t count, int layout,
                   const real *q, int64_t ldq, const real *k, int64_t ldk,
                   const real *v, int64_t ldv, real *out, int64_t ldout,
                   int64_t *bad_row)
{
    if (count < 0)
        return -2;
    if (count > 0 && (!states || states_bad(states, count)))
        return -1;
    XI(problem) pb = XI(problem_init)(count ? states[0]->plan : NULL, layout,
                                      count, count);
    if (!count) /* the sizes of no plan: the matrices are never read */
        pb.d = pb.e = 1;
    XI(problem_qkvo)(&pb, q, ldq, k, ldk, v, ldv, out, ldout);
    int st = XI(problem_check)(&pb, &step_sig, NULL);
    if (st || !count)
        return st;
    for (int64_t r = 0; r < count; r++)
        if (states[r]->tokens == INT64_MAX)
            return LINATTN_ESIZE;
    if (!rows_finite(states, &pb))
        return LINATTN_ENONFINITE;
    step_job job = {states, &pb, {0}, {0}};
    int nt = linattn_i_threads(count, STEP_MIN_ROWS);
    linattn_i_parallel_ranges(nt, count, step_range, &job);
    for (int t = 0; t < nt; t++) /* ranges in row order: the first fails first */
        if (job.first[t] != INT64_MAX) {
            if (bad_row)
                *bad_row = job.first[t];
            return job.status[t];
        }
    return 0;
}
