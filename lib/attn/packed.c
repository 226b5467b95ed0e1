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
 * Threads: a sequence long enough to give every thread a fair range runs
 * alone and splits its rows as a single call does; the others run side
 * by side, each on one thread, the team's ranges balanced by their rows
 * (a skewed batch, one long sequence and many short ones, keeps both
 * cores busy).  Every sequence runs whatever another returned; the call
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

/* A sequence runs alone, its rows split over the threads, from this many
 * rows per thread; shorter ones run side by side on one thread each. */
#define PACKED_ALONE_ROWS 4096

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
    return !ex->state; /* a packed call's states are per sequence */
}

int XI(packed_values_check)(const XI(problem) *pb)
{
    if (!pb->qoff)
        return 0;
    int64_t nseq = pb->nseq;
    if (!offsets_ok(pb->qoff, nseq, pb->nq) ||
        !offsets_ok(pb->koff, nseq, pb->nk))
        return -1;
    if (!pb->states)
        return 0;
    for (int64_t s = 0; s < nseq; s++)
        if (!pb->states[s] || !XI(state_fits_plan)(pb->states[s], pb->plan))
            return -1;
    if (pb->absorb) { /* no state absorbs two sequences */
        int64_t s = 0;
        while (s < nseq && !pb->states[s]->mark)
            pb->states[s++]->mark = 1;
        for (int64_t r = 0; r < s; r++)
            pb->states[r]->mark = 0;
        if (s < nseq)
            return -1;
    }
    return 0;
}

int XI(packed_tokens_fit)(const XI(problem) *pb)
{
    for (int64_t s = 0; pb->states && s < pb->nseq; s++)
        if (pb->koff[s + 1] - pb->koff[s] >
            INT64_MAX - pb->states[s]->tokens)
            return 0;
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
    const int64_t *side;  /* the sequences that run side by side, in order */
    const int64_t *start; /* the work before side[i]                       */
    int64_t count;
    /* range t's first failing sequence (INT64_MAX: none), its status and
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

/* Range t of the side-by-side sequences: those whose work starts in
 * [lo, hi), in order. */
static int64_t side_range(void *ctx, int t, int64_t lo, int64_t hi)
{
    packed_job *j = ctx;
    int64_t a = 0, b = j->count; /* the first i with start[i] >= lo */
    while (a < b) {
        int64_t mid = a + (b - a) / 2;
        if (j->start[mid] < lo)
            a = mid + 1;
        else
            b = mid;
    }
    j->first[t] = INT64_MAX;
    for (int64_t i = a; i < j->count && j->start[i] < hi; i++) {
        int64_t row;
        int st = run_sequence(j, j->side[i], &row);
        keep_first(&j->first[t], &j->status[t], &j->row[t], j->side[i], st,
                   row);
    }
    return 0;
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
    int64_t nseq = pb->nseq, nside = 0;
    int64_t *side = NULL;
    if (nt > 1) {
        side = linattn_i_alloc(2 * nseq + 1, sizeof *side);
        if (!side) {
            free(bk);
            return LINATTN_ENOMEM;
        }
    }
    packed_job job = {pb, run, side, side ? side + nseq : NULL, 0,
                      {0}, {0}, {0}};
    int status = 0;
    int64_t first = INT64_MAX, row = NO_ROW, work = 0;
    for (int64_t s = 0; s < nseq; s++) {
        int64_t q = pb->qoff[s + 1] - pb->qoff[s];
        int64_t k = pb->koff[s + 1] - pb->koff[s];
        if (side && (q > k ? q : k) < (int64_t)nt * PACKED_ALONE_ROWS) {
            side[nside] = s;
            side[nseq + nside++] = work;
            work += sequence_work(pb, s);
            continue;
        }
        int64_t r;
        int st = run_sequence(&job, s, &r);
        keep_first(&first, &status, &row, s, st, r);
    }
    if (nside) {
        job.start = side + nseq;
        job.count = nside;
        int ranges = nt < nside ? nt : (int)nside;
        linattn_i_parallel_ranges(ranges, work, side_range, &job);
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
