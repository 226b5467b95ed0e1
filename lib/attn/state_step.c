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
 *
 * The _ex form takes a gate and a key weight per row (row r's of the
 * extras' arrays, as linattn_d_state_update_ex takes them for that one
 * row): they are two more vector parts of the one-row problem, moved
 * from row to row with the others, so that the fused pass decays the
 * state in place as it does for the plan's gamma (attn/state.c,
 * decayed_update).
 */
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/state.h"
#include "maps/features.h"
#include "common/threads.h"

/* Rows per thread below which a step stays on one thread. */
#define STEP_MIN_ROWS 16

/* linattn_d_states_step_ex: the states, their count, the layout, then
 * Q, K, V and out, one row per state, and the extras (12), of which it
 * takes a gate and a key weight per row (the plain call: ex NULL). */
static const linattn_i_signature step_sig = {
    .layout = 3, .extras = 12,
    .ex_parts = LINATTN_I_X_WEIGHTS | LINATTN_I_X_GATES,
    .part = {LINATTN_I_QKVO(4), LINATTN_I_WEIGHTS_IN(12),
             LINATTN_I_GATES_IN(12)}};

/* The parts a row of the step moves along (the absent ones stay NULL). */
static const int step_parts[6] = {LINATTN_I_Q,   LINATTN_I_K,  LINATTN_I_V,
                                  LINATTN_I_OUT, LINATTN_I_KW, LINATTN_I_GATE};

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
 * row r is the one-row problem of its Q, K, V and out rows (and its gate
 * and key weight) and its state's plan, one descriptor moved from row to
 * row: the call's own on one thread, a copy per range on several (a copy
 * per row cost a step of one stream a tenth of its time). */
static int64_t step_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    step_job *j = ctx;
    XI(problem) own, *row = j->pb;
    if (j->nt > 1) {
        own = *j->pb;
        row = &own;
    }
    /* the parts present, where row 0 of each is and the step to row 1 */
    int cm = j->pb->layout == LINATTN_COL_MAJOR, np = 0, part[6];
    const real *base[6];
    int64_t inc[6];
    for (int i = 0; i < 6; i++) {
        const XI(part) *a = &j->pb->part[step_parts[i]];
        if (!a->p)
            continue;
        part[np] = step_parts[i];
        base[np] = a->p;
        inc[np++] = cm || linattn_i_part_is_vector(step_parts[i]) ? 1 : a->s.ld;
    }
    row->nq = row->nk = 1;
    j->first[t] = INT64_MAX;
    for (int64_t r = lo; r < hi; r++) {
        X(state) *state = j->states[r];
        for (int i = 0; i < np; i++)
            row->part[part[i]].p = base[i] + r * inc[i];
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
 * are finite: the query, the gate, and the key and value unless the
 * key's weight is 0 (never read), as the validator scans a call of one
 * row (attn/problem.c). */
static int rows_finite(X(state) *const *states, const XI(problem) *pb)
{
    const real *w = pb->part[LINATTN_I_KW].p, *g = pb->part[LINATTN_I_GATE].p;
    for (int64_t r = 0; r < pb->nq; r++) {
        if (!states[r]->plan->check_finite)
            continue;
        if (g && !XI(all_finite)((XI(view)){g + r, 1, 0}, 1, 1))
            return 0;
        static const int parts[3] = {LINATTN_I_Q, LINATTN_I_K, LINATTN_I_V};
        for (int i = 0; i < (w && w[r] == 0 ? 1 : 3); i++) {
            XI(view) v = XI(view_rows)(XI(part_view)(pb, parts[i]), r);
            if (!XI(all_finite)(v, 1, parts[i] == LINATTN_I_V ? pb->e : pb->d))
                return 0;
        }
    }
    return 1;
}

int X(states_step_ex)(X(state) *const *states, int64_t count, int layout,
                      const real *q, int64_t ldq, const real *k, int64_t ldk,
                      const real *v, int64_t ldv, real *out, int64_t ldout,
                      const X(extras) *ex, int64_t *bad_row)
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
    XI(problem_extras)(&pb, ex); /* the parts not taken: refused (-12) */
    int st = XI(problem_check)(&pb, &step_sig, NULL);
    if (st || !count)
        return st;
    /* a key of weight 0 adds no token (as state_update_ex counts them) */
    const real *w = pb.part[LINATTN_I_KW].p;
    for (int64_t r = 0; r < count; r++)
        if (states[r]->tokens == INT64_MAX && (!w || w[r] != 0))
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

int X(states_step)(X(state) *const *states, int64_t count, int layout,
                   const real *q, int64_t ldq, const real *k, int64_t ldk,
                   const real *v, int64_t ldv, real *out, int64_t ldout,
                   int64_t *bad_row)
{
    return X(states_step_ex)(states, count, layout, q, ldq, k, ldk, v, ldv,
                             out, ldout, NULL, bad_row);
}
