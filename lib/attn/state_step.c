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
 * allocates nothing when the plans allow it, fused into one pass over
 * the state (the query summed from each row as the update leaves it:
 * the state read once a step instead of twice, the same bits).  Rows
 * are independent: the threads split them (each row on one thread, so a
 * row's result is the same whatever the count), and a row that fails
 * does not stop the others.
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
    XI(problem) *pb;
    int nt;
    /* range t's first failing row and its status (only those of the
     * ranges run are written and read: zeroing them all cost a step of
     * one stream a twentieth of its time) */
    int status[LINATTN_MAX_THREADS];
    int64_t first[LINATTN_MAX_THREADS];
} step_job;

/* Rows [lo, hi) of the step, each its state's update then its query:
 * row r is the one-row problem of its Q, K, V and out rows and its
 * state's plan, one descriptor moved from row to row: the call's own on
 * one thread, a copy per range on several (a copy per row cost a step
 * of one stream a tenth of its time). */
static int64_t step_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    static const int parts[4] = {LINATTN_I_Q, LINATTN_I_K, LINATTN_I_V,
                                 LINATTN_I_OUT};
    step_job *j = ctx;
    XI(problem) own, *row = j->pb;
    if (j->nt > 1) {
        own = *j->pb;
        row = &own;
    }
    real *base[4];
    for (int i = 0; i < 4; i++)
        base[i] = XI(part_out)(j->pb, parts[i]);
    int cm = j->pb->layout == LINATTN_COL_MAJOR;
    row->nq = row->nk = 1;
    j->first[t] = INT64_MAX;
    for (int64_t r = lo; r < hi; r++) {
        X(state) *state = j->states[r];
        for (int i = 0; i < 4; i++)
            row->part[parts[i]].p =
                base[i] + (cm ? r : r * row->part[parts[i]].s.ld);
        row->plan = state->plan;
        row->m = state->plan->m;
        int st = XI(state_step_run)(state, row, NULL);
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
    step_job job;
    job.states = states;
    job.pb = &pb;
    int nt = job.nt = linattn_i_threads(count, STEP_MIN_ROWS);
    linattn_i_parallel_ranges(nt, count, step_range, &job);
    for (int t = 0; t < nt; t++) /* ranges in row order: the first fails first */
        if (job.first[t] != INT64_MAX) {
            if (bad_row)
                *bad_row = job.first[t];
            return job.status[t];
        }
    return 0;
}
