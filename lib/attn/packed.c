/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * packed.c -- packed variable-length sequences: nseq sequences stored end
 * to end (offsets, the cu_seqlens convention), each its own problem.
 *
 * Sequence s is the single problem of its query rows [qoff[s], qoff[s+1])
 * and key rows [koff[s], koff[s+1]) with states[s] as its starting state,
 * run by the path's own single-sequence code.  So no output of sequence
 * s reads a row of another (the isolation the causal calls promise, bit
 * for bit), and with one thread a packed call is bit for bit the calls
 * on the pieces.
 *
 * Threads: a sequence with more than a thread's share of the work runs
 * alone and splits its rows as a single call does; the others run side
 * by side, each on one thread, the longest first to the least loaded
 * thread (a skewed batch, one long sequence and many short ones, keeps
 * both cores busy, and most sequences skip the split's costs: the
 * partial states and their sum, the causal prefix over the threads).  Every sequence runs whatever another returned; the call
 * reports the first failing sequence in order.  With absorbing states the
 * call is all or nothing: each state is backed up first and every one is
 * restored when any sequence fails.
 */
#include <stdlib.h>
#include "attn/paths.h"
#include "attn/problem.h"
#include "attn/state.h"
#include "common/threads.h"
#include "common/validate.h"

/* The work of a sequence for balancing, in rows: its queries and keys,
 * and a fixed cost (workspace, state) that even an empty one has. */
static int64_t sequence_work(const XI(problem) *pb, int64_t s)
{
    return (pb->qoff[s + 1] - pb->qoff[s]) + (pb->koff[s + 1] - pb->koff[s]) +
           64;
}

/* Nonzero when off holds nseq + 1 non-decreasing entries from 0 to n. */
static int offsets_ok(const int64_t *off, int64_t nseq, int64_t n)
{
    if (off[0] != 0 || off[nseq] != n)
        return 0;
    for (int64_t s = 0; s < nseq; s++)
        if (off[s + 1] < off[s])
            return 0;
    return 1;
}

int XI(packed_fields_ok)(const XI(problem) *pb)
{
    const X(extras) *ex = pb->extras;
    if (!ex)
        return 1;
    if (ex->nseq < 0 || ex->nseq > INT64_MAX / 16)
        return 0; /* no offsets of that many entries are addressable */
    if (!ex->offsets)
        return !ex->nseq && !ex->key_offsets && !ex->states;
    /* a packed call's states are per sequence (the backward's state of
     * the keys is refused with offsets too) */
    return !ex->state && !pb->state;
}

int XI(packed_values_check)(const XI(problem) *pb)
{
    if (!pb->qoff)
        return 0;
    int64_t nseq = pb->nseq;
    if (!offsets_ok(pb->qoff, nseq, pb->nq) ||
        !offsets_ok(pb->koff, nseq, pb->nk))
        return -1;
    /* every problem's states (a batched call's: problem p's at p nseq) */
    int64_t count = XI(problem_states)(pb);
    for (int64_t s = 0; s < count; s++)
        if (!pb->states[s] || !XI(state_fits_plan)(pb->states[s], pb->plan))
            return -1;
    if (pb->absorb) { /* no state absorbs two sequences */
        int64_t s = 0;
        while (s < count && !pb->states[s]->mark)
            pb->states[s++]->mark = 1;
        for (int64_t r = 0; r < s; r++)
            pb->states[r]->mark = 0;
        if (s < count)
            return -1;
    }
    return 0;
}

int XI(packed_tokens_fit)(const XI(problem) *pb)
{
    int64_t count = XI(problem_states)(pb);
    for (int64_t s = 0; s < count; s++) {
        int64_t q = s % pb->nseq;
        if (pb->koff[q + 1] - pb->koff[q] > INT64_MAX - pb->states[s]->tokens)
            return 0;
    }
    return 1;
}

/* Sequence s as a single problem. */
static XI(problem) sequence(const XI(problem) *pb, int64_t s)
{
    XI(problem) one = XI(problem_span)(pb, pb->qoff[s], pb->qoff[s + 1],
                                       pb->koff[s], pb->koff[s + 1]);
    one.nseq = 0;
    one.qoff = one.koff = NULL;
    one.states = NULL;
    one.state = pb->states ? pb->states[s] : NULL;
    return one;
}

/* A row not written by a sequence's path (bad_row untouched). */
#define NO_ROW INT64_MIN

typedef struct {
    const XI(problem) *pb;
    XI(run_fn) run;
    /* the sequences that run side by side, grouped by thread: thread t's
     * are side[seg[t]] .. side[seg[t + 1] - 1] */
    const int64_t *side;
    int64_t seg[LINATTN_MAX_THREADS + 1];
    /* thread t's first failing sequence (INT64_MAX: none), its status and
     * row */
    int64_t first[LINATTN_MAX_THREADS];
    int status[LINATTN_MAX_THREADS];
    int64_t row[LINATTN_MAX_THREADS];
} packed_job;

/* Runs sequence s: its status, with *row what its path stored in bad_row
 * as a packed row (NO_ROW: nothing; -1 stays -1). */
static int run_sequence(const packed_job *j, int64_t s, int64_t *row)
{
    XI(problem) one = sequence(j->pb, s);
    int64_t r = NO_ROW;
    int st = j->run(&one, &r);
    *row = st && r >= 0 ? r + j->pb->qoff[s] : st ? r : NO_ROW;
    return st;
}

/* The first failure of sequence s (status st, row) in (first, status,
 * row), which keep the earliest sequence's. */
static void keep_first(int64_t *first, int *status, int64_t *row, int64_t s,
                       int st, int64_t r)
{
    if (st && s < *first) {
        *first = s;
        *status = st;
        *row = r;
    }
}

/* Thread t's side-by-side sequences (the range [t, t + 1) of nt). */
static int64_t side_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    packed_job *j = ctx;
    (void)lo;
    (void)hi;
    j->first[t] = INT64_MAX;
    for (int64_t i = j->seg[t]; i < j->seg[t + 1]; i++) {
        int64_t row;
        int st = run_sequence(j, j->side[i], &row);
        keep_first(&j->first[t], &j->status[t], &j->row[t], j->side[i], st,
                   row);
    }
    return 0;
}

/* The sequences side[0 .. n) (work[i] each) over nt threads, the longest
 * first, each to the thread with the least work so far (within 4/3 of
 * the best balance); side is regrouped by thread into segments seg. */
static void assign_threads(int64_t *side, int64_t *work, int64_t *tmp,
                           int64_t n, int nt, int64_t *seg)
{
    /* sort by work, decreasing (a heap sort: no allocation, n log n) */
    for (int64_t start = n / 2 - 1, end = n;; ) {
        int64_t root;
        if (start >= 0) {
            root = start--;
        } else if (--end > 0) {
            int64_t t = work[0]; work[0] = work[end]; work[end] = t;
            t = side[0]; side[0] = side[end]; side[end] = t;
            root = 0;
        } else {
            break;
        }
        for (int64_t child; (child = 2 * root + 1) < end; root = child) {
            if (child + 1 < end && work[child + 1] < work[child])
                child++;
            if (work[root] <= work[child])
                break;
            int64_t t = work[root]; work[root] = work[child]; work[child] = t;
            t = side[root]; side[root] = side[child]; side[child] = t;
        }
    }
    int64_t load[LINATTN_MAX_THREADS] = {0}, count[LINATTN_MAX_THREADS] = {0};
    for (int64_t i = 0; i < n; i++) { /* work[i] becomes its thread */
        int best = 0;
        for (int t = 1; t < nt; t++)
            best = load[t] < load[best] ? t : best;
        load[best] += work[i];
        work[i] = best;
        count[best]++;
    }
    seg[0] = 0;
    for (int t = 0; t < nt; t++)
        seg[t + 1] = seg[t] + count[t];
    int64_t at[LINATTN_MAX_THREADS];
    for (int t = 0; t < nt; t++)
        at[t] = seg[t];
    for (int64_t i = 0; i < n; i++)
        tmp[at[work[i]]++] = side[i];
    for (int64_t i = 0; i < n; i++)
        side[i] = tmp[i];
}

/* Backups of the states a packed call absorbs into (NULL when it does
 * not absorb, or on ENOMEM: *failed). */
static X(state) *backup_states(const XI(problem) *pb, int *failed)
{
    *failed = 0;
    if (!pb->states || !pb->absorb || !pb->nseq)
        return NULL;
    size_t bytes = XI(state_bytes)(pb->plan);
    X(state) *bk = linattn_i_alloc(pb->nseq, sizeof *bk + bytes);
    if (!bk) {
        *failed = 1;
        return NULL;
    }
    char *mem = (char *)(bk + pb->nseq);
    for (int64_t s = 0; s < pb->nseq; s++) {
        XI(state_init)(&bk[s], pb->plan, mem + (size_t)s * bytes);
        XI(state_assign)(&bk[s], pb->states[s]);
    }
    return bk;
}

int XI(packed_run)(const XI(problem) *pb, XI(run_fn) run, int64_t *bad_row)
{
    int failed;
    X(state) *bk = backup_states(pb, &failed);
    if (failed)
        return LINATTN_ENOMEM;
    int nt = linattn_i_threads(INT64_MAX, 1);
    int64_t nseq = pb->nseq, nside = 0, total = 0;
    int64_t *side = NULL;
    if (nt > 1) {
        side = linattn_i_alloc(3 * nseq + 1, sizeof *side);
        if (!side) {
            free(bk);
            return LINATTN_ENOMEM;
        }
        for (int64_t s = 0; s < nseq; s++)
            total += sequence_work(pb, s);
    }
    packed_job job;
    job.pb = pb;
    job.run = run;
    job.side = side;
    int status = 0;
    int64_t first = INT64_MAX, row = NO_ROW;
    for (int64_t s = 0; s < nseq; s++) {
        /* more than a thread's share of the work: alone, split */
        int64_t work = side ? sequence_work(pb, s) : 0;
        if (side && work <= total / nt) {
            side[nside] = s;
            side[nseq + nside++] = work;
            continue;
        }
        int64_t r;
        int st = run_sequence(&job, s, &r);
        keep_first(&first, &status, &row, s, st, r);
    }
    if (nside) {
        int ranges = nt < nside ? nt : (int)nside;
        assign_threads(side, side + nseq, side + 2 * nseq, nside, ranges,
                       job.seg);
        linattn_i_parallel_ranges(ranges, ranges, side_range, &job);
        for (int t = 0; t < ranges; t++)
            keep_first(&first, &status, &row, job.first[t], job.status[t],
                       job.row[t]);
    }
    if (status && bk)
        for (int64_t s = 0; s < nseq; s++)
            XI(state_assign)(pb->states[s], &bk[s]);
    if (status && bad_row && row != NO_ROW)
        *bad_row = row;
    free(side);
    free(bk);
    return status;
}
