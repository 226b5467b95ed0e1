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
 * ask for) runs first (attn/problem.c), so a refused call writes nothing.
 * The training calls (grad/batched_grad.c) run their problems here too.
 */
#include "attn/paths.h"
#include "attn/problem.h"
#include "common/threads.h"

typedef struct {
    const XI(problem) *pb;
    XI(one_fn) run;
    void *ctx;
    /* per range t: the first failing problem's status and row */
    int status[LINATTN_MAX_THREADS];
    int64_t row[LINATTN_MAX_THREADS];
} batch_job;

/* Problems [lo, hi), all of them; returns the first that failed (its
 * status and row kept for range t), or INT64_MAX. */
static int64_t run_problems(void *ctx, int t, int64_t lo, int64_t hi)
{
    batch_job *j = ctx;
    int64_t first = INT64_MAX;
    for (int64_t p = lo; p < hi; p++) {
        int64_t row = -1;
        XI(problem) one = XI(problem_one)(j->pb, p);
        int st = j->run(&one, j->ctx, t, &row);
        first = linattn_i_first_failure(first, p, st, row, &j->status[t],
                                        &j->row[t]);
    }
    return first;
}

int XI(batched_threads)(const XI(problem) *pb)
{
    return linattn_i_problem_threads(XI(problem_count)(pb));
}

int XI(batched_run)(const XI(problem) *pb, XI(one_fn) run, void *ctx,
                    linattn_where *bad)
{
    int64_t problems = XI(problem_count)(pb);
    /* problems without rows compute nothing, however many there are (up
     * to 2^63): only the causal backward's starting states' gradients, zeros,
     * are written one by one, and those were bounded by the validator */
    if (problems == 0 || (pb->nq == 0 && pb->nk == 0 && !pb->dstates))
        return 0;
    /* Problems over threads when there are enough of them, else one after
     * another with each call threading its rows. */
    int nt = XI(batched_threads)(pb);
    batch_job j = {pb, run, ctx, {0}, {0}};
    int64_t first = linattn_i_parallel_ranges(nt, problems, run_problems, &j);
    if (first == INT64_MAX)
        return 0;
    int t = linattn_i_range_of(problems, nt, first);
    if (bad)
        *bad = (linattn_where){first / pb->heads, first % pb->heads, j.row[t]};
    return j.status[t];
}

/* One problem of each call: the single call's path. */
static int one_attention(const XI(problem) *one, void *ctx, int t,
                         int64_t *row)
{
    (void)ctx, (void)t;
    return XI(attention_run)(one, row);
}

static int one_causal(const XI(problem) *one, void *ctx, int t, int64_t *row)
{
    (void)ctx, (void)t;
    return XI(causal_run)(one, row);
}

static int one_naive(const XI(problem) *one, void *ctx, int t, int64_t *row)
{
    (void)ctx, (void)t;
    return XI(naive_run)(one, row);
}

/* The signatures: plan, layout, batch, heads, then nq and nk (-5, -6) or,
 * for the causal calls, n (-5); the matrices with their strides follow. */
static const linattn_i_signature attention_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .nk = 6, .flags = LINATTN_I_SCAN,
    .part = {LINATTN_I_QKVO(7)}};
static const linattn_i_signature naive_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .nk = 6,
    .flags = LINATTN_I_SCAN | LINATTN_I_KEYS_IN_BLAS,
    .part = {LINATTN_I_QKVO(7)}};
static const linattn_i_signature causal_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .flags = LINATTN_I_SCAN | LINATTN_I_DECAY,
    .part = {LINATTN_I_QKVO(6)}};
static const linattn_i_signature naive_causal_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5,
    .flags = LINATTN_I_SCAN | LINATTN_I_KEYS_IN_BLAS | LINATTN_I_DECAY,
    .part = {LINATTN_I_QKVO(6)}};

XI(problem) XI(problem_batched)(const X(plan) *plan, int layout,
                                int64_t batch, int64_t heads, int64_t nq,
                                int64_t nk, int causal)
{
    XI(problem) pb = XI(problem_init)(plan, layout, nq, nk);
    pb.batch = batch;
    pb.heads = heads;
    pb.causal = causal;
    return pb;
}

void XI(problem_qkvo_batched)(XI(problem) *pb, const real *q,
                              const linattn_strides *sq, const real *k,
                              const linattn_strides *sk, const real *v,
                              const linattn_strides *sv, const real *out,
                              const linattn_strides *sout)
{
    pb->part[LINATTN_I_Q] = XI(part_batched)(q, sq);
    pb->part[LINATTN_I_K] = XI(part_batched)(k, sk);
    pb->part[LINATTN_I_V] = XI(part_batched)(v, sv);
    pb->part[LINATTN_I_OUT] = XI(part_batched)(out, sout);
}

/* The public entry points, differing only in the problem they run and
 * their sizes: nq queries and nk keys, or n of both (causal); the _check
 * forms run none. */
#define UNWRAP(...) __VA_ARGS__
#define ENTRY(name, run, sig, causal, sizes, nq, nk)                          \
    int X(name)(const X(plan) *plan, int layout, int64_t batch,               \
                int64_t heads, UNWRAP sizes, const real *q,                   \
                const linattn_strides *sq, const real *k,                     \
                const linattn_strides *sk, const real *v,                     \
                const linattn_strides *sv, real *out,                         \
                const linattn_strides *sout, linattn_where *bad)              \
    {                                                                         \
        XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, nq,  \
                                             nk, causal);                     \
        XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);        \
        int st = XI(problem_check)(&pb, &sig, NULL);                          \
        return st ? st : XI(batched_run)(&pb, run, NULL, bad);                \
    }
#define CHECK_ENTRY(name, sig, causal, sizes, nq, nk)                         \
    int X(name)(const X(plan) *plan, int layout, int64_t batch,               \
                int64_t heads, UNWRAP sizes, const real *q,                   \
                const linattn_strides *sq, const real *k,                     \
                const linattn_strides *sk, const real *v,                     \
                const linattn_strides *sv, const real *out,                   \
                const linattn_strides *sout)                                  \
    {                                                                         \
        XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, nq,  \
                                             nk, causal);                     \
        XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);        \
        return XI(problem_check)(&pb, &sig, NULL);                            \
    }

ENTRY(batched_attention, one_attention, attention_sig, 0,
      (int64_t nq, int64_t nk), nq, nk)
ENTRY(batched_naive, one_naive, naive_sig, 0, (int64_t nq, int64_t nk), nq,
      nk)
ENTRY(batched_causal, one_causal, causal_sig, 1, (int64_t n), n, n)
ENTRY(batched_naive_causal, one_naive, naive_causal_sig, 1, (int64_t n), n,
      n)
CHECK_ENTRY(batched_attention_check, attention_sig, 0,
            (int64_t nq, int64_t nk), nq, nk)
CHECK_ENTRY(batched_causal_check, causal_sig, 1, (int64_t n), n, n)

/* linattn_d_batched_attention_ex, linattn_d_batched_causal_ex: and the
 * extras (15 and 14): every problem's normalizers out and key weights
 * (dense, problem after problem), packed sequences (the same offsets in
 * every problem) and their states (problem after problem). */
static const linattn_i_signature attention_ex_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .nk = 6, .extras = 15, .absorb = 15,
    .flags = LINATTN_I_SCAN | LINATTN_I_TOKENS,
    .ex_parts = LINATTN_I_X_DEN | LINATTN_I_X_WEIGHTS | LINATTN_I_X_OFFSETS |
                LINATTN_I_X_KEY_OFFSETS | LINATTN_I_X_STATES,
    .part = {LINATTN_I_QKVO(7), LINATTN_I_DEN_OUT(15, 0),
             LINATTN_I_WEIGHTS_IN(15)}};
static const linattn_i_signature causal_ex_sig = {
    .form = LINATTN_I_BATCHED, .plan = 1, .layout = 2, .batch = 3,
    .heads = 4, .nq = 5, .extras = 14, .absorb = 14,
    .flags = LINATTN_I_SCAN | LINATTN_I_TOKENS | LINATTN_I_DECAY,
    .ex_parts = LINATTN_I_X_DEN | LINATTN_I_X_WEIGHTS | LINATTN_I_X_OFFSETS |
                LINATTN_I_X_STATES | LINATTN_I_X_GATES |
                LINATTN_I_X_HEAD_DECAYS,
    .part = {LINATTN_I_QKVO(6), LINATTN_I_DEN_OUT(14, 0),
             LINATTN_I_WEIGHTS_IN(14), LINATTN_I_GATES_IN(14)}};

#define EX_ENTRY(name, run, sig, causal, sizes, nq, nk)                       \
    int X(name)(const X(plan) *plan, int layout, int64_t batch,               \
                int64_t heads, UNWRAP sizes, const real *q,                   \
                const linattn_strides *sq, const real *k,                     \
                const linattn_strides *sk, const real *v,                     \
                const linattn_strides *sv, real *out,                         \
                const linattn_strides *sout, const X(extras) *ex,             \
                linattn_where *bad)                                           \
    {                                                                         \
        XI(problem) pb = XI(problem_batched)(plan, layout, batch, heads, nq,  \
                                             nk, causal);                     \
        XI(problem_qkvo_batched)(&pb, q, sq, k, sk, v, sv, out, sout);        \
        XI(problem_extras)(&pb, ex);                                          \
        int st = XI(problem_check)(&pb, &sig, NULL);                          \
        return st ? st : XI(batched_run)(&pb, run, NULL, bad);                \
    }

EX_ENTRY(batched_attention_ex, one_attention, attention_ex_sig, 0,
         (int64_t nq, int64_t nk), nq, nk)
EX_ENTRY(batched_causal_ex, one_causal, causal_ex_sig, 1, (int64_t n), n, n)
