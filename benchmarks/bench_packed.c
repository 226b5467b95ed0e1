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
 *   bench_packed --cpu-time    timed by the process's CPU time (one thread)
 *
 * The lengths are log-uniform on [1, 65536] (floor(65536^u), u uniform
 * in [0, 1)), the last one cut so that they sum to n: most sequences are
 * short and most tokens are in long ones, the mix a serving or training
 * batch has.  Each repetition times the packed call and the single one
 * back to back; the ratio quoted is the median of the per-repetition
 * ratios, the times medians.  The threads (OMP_NUM_THREADS) must balance
 * the long sequences against the many short ones.
 *
 * Then the decoding step of 64 sequences x 8 heads (linattn_d_states_step
 * against separate update and query calls), its rate per core against
 * the target and against the memory roofline (each state read and
 * written once a step), and its rate by the count of streams (states in
 * L2, in L3, in memory).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"
#include "machine.h"
#include "roofline.h"
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

/* Head-tokens per second of count streams stepped steps times (one
 * call a step, or separate calls), the median of reps runs; the states
 * start empty and are destroyed after. */
static double step_rate(const linattn_d_plan *p, int64_t count, int steps,
                        int one_call, int reps, const double *q,
                        const double *k, const double *v, double *out,
                        int64_t d, int64_t e)
{
    linattn_d_state **st = malloc((size_t)count * sizeof *st);
    double rate[99];
    for (int64_t r = 0; r < count; r++)
        check(linattn_d_state_create(&st[r], p), "state_create");
    step(st, count, one_call, q, k, v, out, d, e); /* first touch */
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now();
        for (int s = 0; s < steps; s++)
            step(st, count, one_call, q, k, v, out, d, e);
        rate[i] = (double)count * steps / (bench_now() - t0);
    }
    for (int64_t r = 0; r < count; r++)
        linattn_d_state_destroy(st[r]);
    free(st);
    return bench_median(rate, reps);
}

/* The decoding step of 64 sequences x 8 heads: one call against separate
 * ones, per core against the target, against the memory roofline (each
 * state read and written once a step: the step is bound by moving the
 * states when they do not stay in cache), and by the count of streams,
 * to show where the states leave the caches. */
static void decode(const linattn_d_plan *p, int64_t d, int64_t e, int reps,
                   uint64_t *seed)
{
    enum { SEQS = 64, HEADS = 8, COUNT = SEQS * HEADS, STEPS = 200,
           MOST = 4096 };
    double *q = bench_random(MOST * d, seed), *k = bench_random(MOST * d, seed);
    double *v = bench_random(MOST * e, seed);
    double *out = malloc((size_t)(MOST * e) * sizeof(double));
    int threads = bench_max_threads();
    int64_t m;
    check(linattn_d_plan_dims(p, NULL, &m, NULL), "plan_dims");
    /* a head-token moves its state in and out (m (e + 1) doubles each way)
     * and its rows of Q, K, V and out */
    double bytes = 2.0 * (double)(m * (e + 1)) * sizeof(double) +
                   (double)(2 * d + 2 * e) * sizeof(double);
    bench_roofline roof;
    bench_roofline_stream(&roof, 3);
    double bw = bench_roofline_bandwidth(&roof);
    printf("decoding: %d sequences x %d heads, one token each per step, %d "
           "steps, d = %lld, e = %lld, double, elu+1, %d thread(s)\n", SEQS,
           HEADS, STEPS, (long long)d, (long long)e, threads);
    printf("%-16s %14s\n", "calls", "tokens_per_s");
    double rate[2][99], r2[99];
    for (int i = 0; i < reps; i++)
        for (int one = 1; one >= 0; one--) {
            rate[one][i] = step_rate(p, COUNT, STEPS, one, 1, q, k, v, out, d,
                                     e);
            if (!one)
                r2[i] = rate[1][i] / rate[0][i];
        }
    double one_call = bench_median(rate[1], reps);
    printf("%-16s %14.0f\n", "states_step", one_call);
    printf("%-16s %14.0f\n", "update+query", bench_median(rate[0], reps));
    printf("one call / separate calls: %.3f (tokens per second, median of "
           "the repetitions' ratios)\n", bench_median(r2, reps));
    double ceiling = bw / bytes;
    printf("states_step per core: %.3f M head-tokens/s = %.2f x the target "
           "(>= 3 M per core); memory roofline %.0f bytes a head-token at "
           "%.1f GB/s (stream, %d thread(s)) = %.3f M/s, x %.2f of it\n",
           one_call / threads / 1e6, one_call / threads / 3e6, bytes, bw / 1e9,
           threads, ceiling / 1e6, one_call / ceiling);
    printf("states_step by streams (the states' bytes: in L2, L3, memory):\n");
    printf("%8s %12s %16s\n", "streams", "state_MB", "tokens_per_s");
    static const int64_t counts[] = {8, 64, 512, 4096};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int steps = (int)(STEPS * COUNT / counts[c]);
        double r = step_rate(p, counts[c], steps, 1, reps, q, k, v, out, d, e);
        printf("%8lld %12.2f %16.0f\n", (long long)counts[c],
               counts[c] * bytes / 2 / 1e6, r);
    }
    free(q), free(k), free(v), free(out);
}

int main(int argc, char **argv)
{
    int lg = 18, reps = 5;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--reps") && a + 1 < argc)
            reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--cpu-time"))
            bench_use_cpu_time();
        else if (!strcmp(argv[a], "--lg") && a + 1 < argc)
            lg = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: bench_packed [--reps R] [--lg L] "
                    "[--cpu-time]\n  --cpu-time: time by the process's "
                    "CPU time (for one thread on a shared machine)\n");
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
