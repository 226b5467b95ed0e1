/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * batched.c -- batch x heads independent problems in one call.  Each
 * problem runs the single call's code on its own matrices; the calls
 * differ only in how the problems share the threads:
 *
 *   - at least as many problems as threads: problems are split over the
 *     threads, each problem on one thread with single-threaded BLAS (the
 *     single-head path sees it is inside a parallel region and stays on
 *     its thread).  Nothing is shared, so this scales like independent
 *     runs;
 *   - fewer problems than threads: problems run one after another and each
 *     call splits its rows over the threads as a single call does.
 *
 * Every argument check of every problem (and the finiteness scan a plan may
 * ask for) runs first, so a refused call writes nothing.
 */
#include "attn/paths.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/threads.h"
#include "common/validate.h"

/* One problem: the single call after its checks (nk unused by causal). */
typedef int (*problem_fn)(const X(plan) *plan, int layout, int64_t nq,
                          int64_t nk, const real *q, int64_t ldq,
                          const real *k, int64_t ldk, const real *v,
                          int64_t ldv, real *out, int64_t ldout,
                          int64_t *bad_row);

static int run_attention(const X(plan) *plan, int layout, int64_t nq,
                         int64_t nk, const real *q, int64_t ldq, const real *k,
                         int64_t ldk, const real *v, int64_t ldv, real *out,
                         int64_t ldout, int64_t *bad_row)
{
    return XI(attention_run)(plan, layout, nq, nk, q, ldq, k, ldk, v, ldv,
                             out, ldout, bad_row);
}

static int run_naive(const X(plan) *plan, int layout, int64_t nq, int64_t nk,
                     const real *q, int64_t ldq, const real *k, int64_t ldk,
                     const real *v, int64_t ldv, real *out, int64_t ldout,
                     int64_t *bad_row)
{
    return XI(naive_run)(plan, 0, layout, nq, nk, q, ldq, k, ldk, v, ldv, out,
                         ldout, bad_row);
}

static int run_causal(const X(plan) *plan, int layout, int64_t n, int64_t nk,
                      const real *q, int64_t ldq, const real *k, int64_t ldk,
                      const real *v, int64_t ldv, real *out, int64_t ldout,
                      int64_t *bad_row)
{
    (void)nk;
    return XI(causal_run)(plan, layout, n, q, ldq, k, ldk, v, ldv, out, ldout,
                          bad_row);
}

static int run_naive_causal(const X(plan) *plan, int layout, int64_t n,
                            int64_t nk, const real *q, int64_t ldq,
                            const real *k, int64_t ldk, const real *v,
                            int64_t ldv, real *out, int64_t ldout,
                            int64_t *bad_row)
{
    (void)nk;
    return XI(naive_run)(plan, 1, layout, n, n, q, ldq, k, ldk, v, ldv, out,
                         ldout, bad_row);
}

/* A batched call after its checks. */
typedef struct {
    problem_fn run;
    const X(plan) *plan;
    int layout;
    int64_t heads, nq, nk;
    const real *q, *k, *v;
    real *out;
    const linattn_strides *sq, *sk, *sv, *sout;
    /* per range t: the first failing problem's status and row */
    int status[LINATTN_MAX_THREADS];
    int64_t row[LINATTN_MAX_THREADS];
} batch_job;

static int64_t offset(const linattn_strides *s, int64_t b, int64_t h)
{
    return b * s->batch + h * s->head;
}

/* Problem (b, h)'s matrix of rows rows.  Without rows it is never read,
 * and its strides were not checked for addressing: the base pointer
 * (perhaps NULL) stands in. */
static const real *at(const real *p, const linattn_strides *s, int64_t rows,
                      int64_t b, int64_t h)
{
    return rows > 0 ? p + offset(s, b, h) : p;
}

/* Problems [lo, hi), all of them; returns the first that failed (its
 * status and row kept for range t), or INT64_MAX. */
static int64_t run_problems(void *ctx, int t, int64_t lo, int64_t hi)
{
    batch_job *j = ctx;
    int64_t first = INT64_MAX;
    for (int64_t p = lo; p < hi; p++) {
        int64_t b = p / j->heads, h = p % j->heads, row = -1;
        int st = j->run(j->plan, j->layout, j->nq, j->nk,
                        at(j->q, j->sq, j->nq, b, h), j->sq->ld,
                        at(j->k, j->sk, j->nk, b, h), j->sk->ld,
                        at(j->v, j->sv, j->nk, b, h), j->sv->ld,
                        j->out + offset(j->sout, b, h), j->sout->ld, &row);
        first = linattn_i_first_failure(first, p, st, row, &j->status[t],
                                        &j->row[t]);
    }
    return first;
}

/* Nonzero when every input entry of every problem is finite. */
static int inputs_finite(const batch_job *j, int64_t batch)
{
    int cm = j->layout == LINATTN_COL_MAJOR;
    int64_t d = j->plan->d, e = j->plan->e;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t h = 0; h < j->heads; h++)
            if (!XI(all_finite)((XI(view)){at(j->q, j->sq, j->nq, b, h),
                                           j->sq->ld, cm}, j->nq, d) ||
                !XI(all_finite)((XI(view)){at(j->k, j->sk, j->nk, b, h),
                                           j->sk->ld, cm}, j->nk, d) ||
                !XI(all_finite)((XI(view)){at(j->v, j->sv, j->nk, b, h),
                                           j->sv->ld, cm}, j->nk, e))
                return 0;
    return 1;
}

/* The shared body: checks (argument positions from pos on: q, its
 * strides, k, ..., out, its strides), then the problems. */
static int batched(batch_job *j, int64_t batch, int pos, int keys_in_blas,
                   linattn_where *bad)
{
    const X(plan) *plan = j->plan;
    int64_t d = plan->d, e = plan->e;
    const linattn_i_bmat mats[] = {{j->nq, d, j->q, j->sq, pos, 0},
                                   {j->nk, d, j->k, j->sk, pos + 2, 0},
                                   {j->nk, e, j->v, j->sv, pos + 4, 0},
                                   {j->nq, e, j->out, j->sout, pos + 6, 1}};
    int st = linattn_i_check_batched(j->layout, batch, j->heads, sizeof(real),
                                     mats, 4);
    if (!st && batch > 0 && j->heads > INT64_MAX / batch)
        st = LINATTN_ESIZE; /* problems not countable in int64 */
    if (!st && keys_in_blas)
        st = linattn_i_blas_fits(j->nk);
    if (!st && plan->check_finite && !inputs_finite(j, batch))
        st = LINATTN_ENONFINITE;
    int64_t problems = batch * j->heads;
    if (st || problems == 0 || j->nq == 0 || !j->run) /* no run: checks only */
        return st;
    /* Problems over threads when there are enough of them, else one after
     * another with each call threading its rows. */
    int nt = linattn_i_problem_threads(problems);
    int64_t first = linattn_i_parallel_ranges(nt, problems, run_problems, j);
    if (first == INT64_MAX)
        return 0;
    int t = linattn_i_range_of(problems, nt, first);
    if (bad)
        *bad = (linattn_where){first / j->heads, first % j->heads, j->row[t]};
    return j->status[t];
}

/* Positions 1-4 of every batched call: plan, layout, batch, heads. */
int XI(batched_leading)(const X(plan) *plan, int layout, int64_t batch,
                        int64_t heads)
{
    if (!plan)
        return -1;
    if (!linattn_i_layout_ok(layout))
        return -2;
    if (batch < 0)
        return -3;
    if (heads < 0)
        return -4;
    return 0;
}

/* Every batched call: positions 1-4, then nq and nk (-5, -6) or, for
 * the causal ones (seq), n (-5); the matrices follow. */
static int batched_call(problem_fn run, int seq, int keys_in_blas,
                        const X(plan) *plan, int layout, int64_t batch,
                        int64_t heads, int64_t nq, int64_t nk, const real *q,
                        const linattn_strides *sq, const real *k,
                        const linattn_strides *sk, const real *v,
                        const linattn_strides *sv, real *out,
                        const linattn_strides *sout, linattn_where *bad)
{
    int st = XI(batched_leading)(plan, layout, batch, heads);
    if (st)
        return st;
    if (nq < 0)
        return -5;
    if (!seq && nk < 0)
        return -6;
    batch_job j = {run, plan, layout, heads, nq, nk, q, k, v, out,
                   sq, sk, sv, sout, {0}, {0}};
    return batched(&j, batch, seq ? 6 : 7, keys_in_blas, bad);
}

/* The public entry points, differing only in the problem they run and
 * their sizes: nq queries and nk keys, or n of both (causal). */
#define UNWRAP(...) __VA_ARGS__
#define ENTRY(name, run, seq, keys_in_blas, sizes, nq, nk)                   \
    int X(name)(const X(plan) *plan, int layout, int64_t batch,               \
                int64_t heads, UNWRAP sizes, const real *q,                   \
                const linattn_strides *sq, const real *k,                     \
                const linattn_strides *sk, const real *v,                     \
                const linattn_strides *sv, real *out,                         \
                const linattn_strides *sout, linattn_where *bad)              \
    {                                                                         \
        return batched_call(run, seq, keys_in_blas, plan, layout, batch,      \
                            heads, nq, nk, q, sq, k, sk, v, sv, out, sout,    \
                            bad);                                             \
    }

ENTRY(batched_attention, run_attention, 0, 0, (int64_t nq, int64_t nk), nq, nk)
ENTRY(batched_naive, run_naive, 0, 1, (int64_t nq, int64_t nk), nq, nk)
ENTRY(batched_causal, run_causal, 1, 0, (int64_t n), n, n)
ENTRY(batched_naive_causal, run_naive_causal, 1, 1, (int64_t n), n, n)

/* The checks alone (the _check entry points): no problem runs. */
#define CHECK_ENTRY(name, seq, sizes, nq, nk)                                 \
    int X(name)(const X(plan) *plan, int layout, int64_t batch,               \
                int64_t heads, UNWRAP sizes, const real *q,                   \
                const linattn_strides *sq, const real *k,                     \
                const linattn_strides *sk, const real *v,                     \
                const linattn_strides *sv, const real *out,                   \
                const linattn_strides *sout)                                  \
    {                                                                         \
        return batched_call(NULL, seq, 0, plan, layout, batch, heads, nq, nk, \
                            q, sq, k, sk, v, sv, (real *)out, sout, NULL);    \
    }

CHECK_ENTRY(batched_attention_check, 0, (int64_t nq, int64_t nk), nq, nk)
CHECK_ENTRY(batched_causal_check, 1, (int64_t n), n, n)
