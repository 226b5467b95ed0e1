/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_packed.c -- packed variable-length sequences against one sequence:
 * a packed call (linattn_d_extras offsets) over sequences whose lengths
 * are drawn from a skewed distribution, against one call on a single
 * sequence of the same n tokens in all, non-causal (attention_ex) and
 * causal (causal_ex), d = e = 64, double, elu+1.
 *
 *   bench_packed               n = 2^18, 5 repetitions
 *   bench_packed --lg L        n = 2^L (12 .. 22)
 *   bench_packed --reps R      R repetitions
 *
 * The lengths are log-uniform on [1, 65536] (floor(65536^u), u uniform
 * in [0, 1)), the last one cut so that they sum to n: most sequences are
 * short and most tokens are in long ones, the mix a serving or training
 * batch has.  Each repetition times the packed call and the single one
 * back to back; the ratio quoted is the median of the per-repetition
 * ratios, the times medians.  The threads (OMP_NUM_THREADS) must balance
 * the long sequences against the many short ones.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"
#include "machine.h"
#include "timing.h"

static void check(int st, const char *what)
{
    if (st) {
        fprintf(stderr, "bench_packed: %s: %s\n", what, linattn_strerror(st));
        exit(1);
    }
}

/* One call: packed by ex (NULL: the single sequence). */
static double timed(const linattn_d_plan *p, int causal, int64_t n,
                    const double *q, const double *k, const double *v,
                    double *out, const linattn_d_extras *ex, int64_t d,
                    int64_t e)
{
    int64_t bad;
    double t0 = bench_now();
    if (causal)
        check(linattn_d_causal_ex(p, LINATTN_ROW_MAJOR, n, q, d, k, d, v, e,
                                  out, e, ex, &bad), "causal_ex");
    else
        check(linattn_d_attention_ex(p, LINATTN_ROW_MAJOR, n, n, q, d, k, d, v,
                                     e, out, e, ex, &bad), "attention_ex");
    return bench_now() - t0;
}

/* One decoding step of the count states: in one call, or as separate
 * calls per state. */
static void step(linattn_d_state **st, int64_t count, int one_call,
                 const double *q, const double *k, const double *v,
                 double *out, int64_t d, int64_t e)
{
    if (one_call) {
        check(linattn_d_states_step(st, count, LINATTN_ROW_MAJOR, q, d, k, d,
                                    v, e, out, e, NULL), "states_step");
        return;
    }
    for (int64_t r = 0; r < count; r++) {
        check(linattn_d_state_update(st[r], LINATTN_ROW_MAJOR, 1, k + r * d,
                                     d, v + r * e, e), "state_update");
        check(linattn_d_state_query(st[r], LINATTN_ROW_MAJOR, 1, q + r * d, d,
                                    out + r * e, e, NULL, 1, NULL, NULL),
              "state_query");
    }
}

/* Tokens per second of the decoding step, one call against separate
 * ones. */
static void decode(const linattn_d_plan *p, int64_t d, int64_t e, int reps,
                   uint64_t *seed)
{
    enum { SEQS = 64, HEADS = 8, COUNT = SEQS * HEADS, STEPS = 200 };
    linattn_d_state *st[COUNT];
    double *q = bench_random(COUNT * d, seed), *k = bench_random(COUNT * d, seed);
    double *v = bench_random(COUNT * e, seed);
    double *out = malloc((size_t)(COUNT * e) * sizeof(double));
    for (int r = 0; r < COUNT; r++)
        check(linattn_d_state_create(&st[r], p), "state_create");
    printf("decoding: %d sequences x %d heads, one token each per step, %d "
           "steps, d = %lld, e = %lld, double, elu+1\n", SEQS, HEADS, STEPS,
           (long long)d, (long long)e);
    printf("%-16s %14s\n", "calls", "tokens_per_s");
    double rate[2][99], r2[99];
    for (int i = 0; i < reps; i++)
        for (int one = 1; one >= 0; one--) {
            double t0 = bench_now();
            for (int s = 0; s < STEPS; s++)
                step(st, COUNT, one, q, k, v, out, d, e);
            rate[one][i] = (double)COUNT * STEPS / (bench_now() - t0);
            if (!one)
                r2[i] = rate[1][i] / rate[0][i];
        }
    printf("%-16s %14.0f\n", "states_step", bench_median(rate[1], reps));
    printf("%-16s %14.0f\n", "update+query", bench_median(rate[0], reps));
    printf("one call / separate calls: %.3f (tokens per second, median of "
           "the repetitions' ratios)\n", bench_median(r2, reps));
    for (int r = 0; r < COUNT; r++)
        linattn_d_state_destroy(st[r]);
    free(q), free(k), free(v), free(out);
}

int main(int argc, char **argv)
{
    int lg = 18, reps = 5;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--reps") && a + 1 < argc)
            reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--lg") && a + 1 < argc)
            lg = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: bench_packed [--reps R] [--lg L]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 99)
        reps = 5;
    if (lg < 12 || lg > 22) {
        fprintf(stderr, "bench_packed: --lg takes 12 .. 22\n");
        return 2;
    }
    bench_print_circumstances(stdout, argc, argv);
    bench_platform_print(stdout, NULL);
    int64_t d = 64, e = 64, n = (int64_t)1 << lg;
    uint64_t seed = 19;
    double *q = bench_random(n * d, &seed), *k = bench_random(n * d, &seed);
    double *v = bench_random(n * e, &seed);
    double *out = malloc((size_t)(n * e) * sizeof(double));
    /* the lengths: at most n sequences */
    int64_t *off = malloc((size_t)(n + 1) * sizeof *off), nseq = 0;
    int64_t longest = 0, short64 = 0;
    off[0] = 0;
    while (off[nseq] < n) {
        double u = 0.5 * (bench_uniform(&seed) + 1); /* [0, 1) */
        int64_t len = (int64_t)floor(pow(65536.0, u));
        len = len < 1 ? 1 : len > n - off[nseq] ? n - off[nseq] : len;
        off[nseq + 1] = off[nseq] + len;
        nseq++;
        longest = len > longest ? len : longest;
        short64 += len <= 64;
    }
    linattn_d_extras ex;
    linattn_d_extras_init(&ex);
    ex.offsets = off;
    ex.nseq = nseq;
    printf("packed against one sequence: n = %lld tokens in %lld sequences "
           "(longest %lld, %lld of <= 64 tokens), d = %lld, e = %lld, "
           "double, elu+1, %d repetitions\n",
           (long long)n, (long long)nseq, (long long)longest,
           (long long)short64, (long long)d, (long long)e, reps);
    printf("%8s %-6s %11s %11s %9s\n", "n", "path", "single_s", "packed_s",
           "x_single");
    linattn_opts o;
    linattn_opts_init(&o);
    linattn_d_plan *p;
    check(linattn_d_plan_create(&p, LINATTN_MAP_ELU1, d, e, &o), "plan");
    for (int causal = 0; causal < 2; causal++) {
        double ts[99], tp[99], r[99];
        timed(p, causal, n, q, k, v, out, &ex, d, e); /* warm up */
        for (int i = 0; i < reps; i++) {
            ts[i] = timed(p, causal, n, q, k, v, out, NULL, d, e);
            tp[i] = timed(p, causal, n, q, k, v, out, &ex, d, e);
            r[i] = tp[i] / ts[i];
        }
        printf("%8lld %-6s %11.4f %11.4f %9.3f\n", (long long)n,
               causal ? "causal" : "nonc", bench_median(ts, reps),
               bench_median(tp, reps), bench_median(r, reps));
    }
    printf("\ntarget: packed / single <= 1.10 (x_single)\n\n");
    decode(p, d, e, reps, &seed);
    linattn_d_plan_destroy(p);
    printf("load average at the end: %.2f\n", bench_load_average());
    free(q), free(k), free(v), free(out), free(off);
    return 0;
}
