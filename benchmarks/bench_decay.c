/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_decay.c -- decay and gates against the undecayed paths, compiled
 * once per precision (bench_prec.h: bench_decay in double, bench_decay_s
 * in float).
 *
 *   bench_decay [--lg L] [--reps R]     n = 2^L (default 20)
 *
 * Causal attention at n tokens, d = e = 64, elu+1: the undecayed call,
 * the plan's decay (gamma = exp(-0.01)) and per-token gates (log gates
 * uniform in [-0.1, 0], the plan undecayed), timed back to back in each
 * repetition; times are medians, ratios medians of the per-repetition
 * ratios.  Then the training step with gates: the forward that hands back
 * the normalizers (causal_ex with den) and the backward with dL/da
 * (causal_backward_ex with gates and dgates), backward / forward, beside
 * the undecayed pair, each also with the forward's saved chunk states
 * read by the backward (extras.chunk_states).  Then decoding (one head on one thread:
 * state_update of one token, state_query of one) with and without the
 * decay, the many-stream step (states_step of 512 streams on one thread)
 * with gates (states_step_ex) and without, and the quadratic decayed reference (naive_causal_ex with gates)
 * against the chunked call at n = 16384.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench_prec.h"
#include "linattn.h"
#include "machine.h"
#include "timing.h"

static void check(int st, const char *what)
{
    if (st) {
        fprintf(stderr, "bench_decay: %s: %s\n", what, linattn_strerror(st));
        exit(1);
    }
}

static breal *random_of(int64_t n, uint64_t *seed, double lo, double hi)
{
    double *x = bench_random(n, seed); /* uniform in [-1, 1) */
    breal *y = malloc((size_t)n * sizeof *y);
    for (int64_t i = 0; i < n; i++)
        y[i] = (breal)(lo + (hi - lo) * 0.5 * (x[i] + 1));
    free(x);
    return y;
}

static LX(plan) *plan_of(int64_t d, int64_t e, double log_decay)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.log_decay = log_decay;
    LX(plan) *p;
    check(LX(plan_create)(&p, LINATTN_MAP_ELU1, d, e, &o), "plan_create");
    return p;
}

static double causal_time(const LX(plan) *p, int64_t n, const breal *q,
                          const breal *k, const breal *v, breal *out,
                          int64_t d, int64_t e, const breal *gates)
{
    LX(extras) ex;
    LX(extras_init)(&ex);
    ex.gates = gates;
    double t0 = bench_now();
    check(LX(causal_ex)(p, LINATTN_ROW_MAJOR, n, q, d, k, d, v, e, out, e,
                        &ex, NULL),
          "causal_ex");
    return bench_now() - t0;
}

/* The forward with its normalizers (ftime) and the backward with dL/da
 * (gates: NULL none, dgates then not asked for) of one training step;
 * saved: the forward keeps its chunk states in cs and the backward reads
 * them. */
typedef struct {
    breal *g, *dq, *dk, *dv, *den, *dg, *cs;
} train_bufs;

static void train_step(const LX(plan) *p, int64_t n, const breal *q,
                       const breal *k, const breal *v, breal *out, int64_t d,
                       int64_t e, const breal *gates, int saved,
                       const train_bufs *b, double *ftime, double *btime)
{
    LX(extras) ex;
    LX(extras_init)(&ex);
    ex.gates = gates;
    ex.den = b->den;
    ex.chunk_states = saved ? b->cs : NULL;
    double t0 = bench_now();
    check(LX(causal_ex)(p, LINATTN_ROW_MAJOR, n, q, d, k, d, v, e, out, e,
                        &ex, NULL),
          "causal_ex with den");
    *ftime = bench_now() - t0;
    LX(extras_init)(&ex);
    ex.gates = gates;
    ex.dgates = gates ? b->dg : NULL;
    ex.chunk_states = saved ? b->cs : NULL;
    t0 = bench_now();
    check(LX(causal_backward_ex)(p, LINATTN_ROW_MAJOR, n, q, d, k, d, v, e,
                                 out, e, b->den, b->g, e, b->dq, d, b->dk, d,
                                 b->dv, e, NULL, 0, NULL, &ex, NULL),
          "causal_backward_ex");
    *btime = bench_now() - t0;
}

/* Tokens per second of steps decoding steps of one head. */
static double decode_rate(const LX(plan) *p, int64_t steps, const breal *q,
                          const breal *k, const breal *v, breal *out,
                          int64_t d, int64_t e)
{
    LX(state) *s;
    check(LX(state_create)(&s, p), "state_create");
    double t0 = bench_now();
    for (int64_t t = 0; t < steps; t++) {
        check(LX(state_update)(s, LINATTN_ROW_MAJOR, 1, k + t * d, d,
                               v + t * e, e),
              "state_update");
        check(LX(state_query)(s, LINATTN_ROW_MAJOR, 1, q + t * d, d,
                              out + t * e, e, NULL, 1, NULL, NULL),
              "state_query");
    }
    double rate = (double)steps / (bench_now() - t0);
    LX(state_destroy)(s);
    return rate;
}

/* Head-tokens per second of steps decoding steps of count streams in one
 * states_step_ex each (gates NULL: no extras; else row r's gate of step t
 * at gates + t's first row), the streams' rows taken in turn from the
 * n rows of Q, K, V. */
static double step_rate(const LX(plan) *p, int64_t count, int64_t steps,
                        int64_t n, const breal *q, const breal *k,
                        const breal *v, breal *out, int64_t d, int64_t e,
                        const breal *gates)
{
    LX(state) **st = malloc((size_t)count * sizeof *st);
    for (int64_t r = 0; r < count; r++)
        check(LX(state_create)(&st[r], p), "state_create");
    LX(extras) ex;
    LX(extras_init)(&ex);
    double t0 = bench_now();
    for (int64_t t = 0; t < steps; t++) {
        int64_t row = t * count % (n - count + 1);
        ex.gates = gates ? gates + row : NULL;
        check(LX(states_step_ex)(st, count, LINATTN_ROW_MAJOR, q + row * d, d,
                                 k + row * d, d, v + row * e, e, out, e,
                                 gates ? &ex : NULL, NULL),
              "states_step_ex");
    }
    double rate = (double)(steps * count) / (bench_now() - t0);
    for (int64_t r = 0; r < count; r++)
        LX(state_destroy)(st[r]);
    free(st);
    return rate;
}

int main(int argc, char **argv)
{
    int lg = 20, reps = 5;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--lg") && a + 1 < argc) {
            lg = atoi(argv[++a]);
        } else if (!strcmp(argv[a], "--reps") && a + 1 < argc) {
            reps = atoi(argv[++a]);
        } else {
            fprintf(stderr, "usage: %s [--lg L] [--reps R]\n", argv[0]);
            return 2;
        }
    }
    if (lg < 14 || lg > 22 || reps < 1 || reps > 99) {
        fprintf(stderr, "bench_decay: --lg takes 14 .. 22, --reps 1 .. 99\n");
        return 2;
    }
    bench_print_circumstances(stdout, argc, argv);
    bench_platform_print(stdout, NULL);
    const char *prec = sizeof(breal) == 4 ? "float" : "double";
    int64_t d = 64, e = 64, n = (int64_t)1 << lg;
    uint64_t seed = 23;
    breal *q = random_of(n * d, &seed, -1, 1), *k = random_of(n * d, &seed, -1, 1);
    breal *v = random_of(n * e, &seed, -1, 1);
    breal *g = random_of(n, &seed, -0.1, 0);
    breal *out = malloc((size_t)(n * e) * sizeof *out);
    LX(plan) *plain = plan_of(d, e, 0), *decayed = plan_of(d, e, -0.01);
    printf("causal, n = %lld, d = e = %lld, %s, elu+1, %d repetitions\n",
           (long long)n, (long long)d, prec, reps);
    double t0[99], t1[99], t2[99], r1[99], r2[99];
    causal_time(plain, n, q, k, v, out, d, e, NULL); /* warm up */
    for (int i = 0; i < reps; i++) {
        t0[i] = causal_time(plain, n, q, k, v, out, d, e, NULL);
        t1[i] = causal_time(decayed, n, q, k, v, out, d, e, NULL);
        t2[i] = causal_time(plain, n, q, k, v, out, d, e, g);
        r1[i] = t1[i] / t0[i];
        r2[i] = t2[i] / t0[i];
    }
    printf("%-12s %10s %9s\n", "path", "time_s", "x_plain");
    printf("%-12s %10.4f %9s\n", "undecayed", bench_median(t0, reps), "1");
    printf("%-12s %10.4f %9.3f\n", "gamma", bench_median(t1, reps),
           bench_median(r1, reps));
    printf("%-12s %10.4f %9.3f\n", "gates", bench_median(t2, reps),
           bench_median(r2, reps));
    printf("targets: gamma / undecayed <= 1.15, gates / undecayed <= 1.25\n\n");

    /* the training step, with gates and without, rebuilding the carried
     * state in the backward or reading the forward's saved chunk states */
    int64_t cslen = 0;
    check(LX(causal_chunk_states_size)(plain, n, &cslen),
          "causal_chunk_states_size");
    train_bufs tb = {random_of(n * e, &seed, -1, 1),
                     malloc((size_t)(n * d) * sizeof(breal)),
                     malloc((size_t)(n * d) * sizeof(breal)),
                     malloc((size_t)(n * e) * sizeof(breal)),
                     malloc((size_t)n * sizeof(breal)),
                     malloc((size_t)n * sizeof(breal)),
                     malloc((size_t)cslen * sizeof(breal))};
    static const char *const step_name[4] = {"undecayed", "gates",
                                             "saved", "saved-gates"};
    double fw[4][99], bw[4][99], rt[4][99];
    for (int i = 0; i < reps; i++)
        for (int c = 0; c < 4; c++) {
            train_step(plain, n, q, k, v, out, d, e, c & 1 ? g : NULL, c >> 1,
                       &tb, &fw[c][i], &bw[c][i]);
            rt[c][i] = bw[c][i] / fw[c][i];
        }
    printf("training step: forward with den, backward (gates: with dL/da; "
           "saved: the forward's chunk states, %.0f MB, read by the "
           "backward)\n",
           (double)cslen * sizeof(breal) / 1e6);
    printf("%-12s %10s %10s %9s\n", "path", "fwd_s", "bwd_s", "bwd/fwd");
    for (int c = 0; c < 4; c++)
        printf("%-12s %10.4f %10.4f %9.3f\n", step_name[c],
               bench_median(fw[c], reps), bench_median(bw[c], reps),
               bench_median(rt[c], reps));
    printf("target: backward / forward with gates <= 2.5\n\n");
    free(tb.g), free(tb.dq), free(tb.dk), free(tb.dv), free(tb.den);
    free(tb.dg), free(tb.cs);

    /* decoding, one head, one thread */
    int threads = bench_max_threads();
    bench_set_threads(1);
    int64_t steps = n < 20000 ? n : 20000; /* rows of q, k, v */
    double d0[99], d1[99], rd[99];
    for (int i = 0; i < reps; i++) {
        d0[i] = decode_rate(plain, steps, q, k, v, out, d, e);
        d1[i] = decode_rate(decayed, steps, q, k, v, out, d, e);
        rd[i] = d0[i] / d1[i];
    }
    printf("decoding one head, one thread, %lld steps: undecayed %.0f "
           "tokens/s, decayed %.0f tokens/s, time ratio %.3f "
           "(target <= 1.05)\n\n",
           (long long)steps, bench_median(d0, reps), bench_median(d1, reps),
           bench_median(rd, reps));
    /* the many-stream step (64 sequences x 8 heads), gates against none */
    int64_t count = 512, ssteps = 200;
    double s0[99], s1[99], rs1[99];
    for (int i = 0; i < reps; i++) {
        s0[i] = step_rate(plain, count, ssteps, n, q, k, v, out, d, e, NULL);
        s1[i] = step_rate(plain, count, ssteps, n, q, k, v, out, d, e, g);
        rs1[i] = s0[i] / s1[i];
    }
    printf("states_step of %lld streams, one thread, %lld steps: without "
           "gates %.0f head-tokens/s, with gates (states_step_ex) %.0f, time "
           "ratio %.3f (target <= 1.05)\n\n",
           (long long)count, (long long)ssteps, bench_median(s0, reps),
           bench_median(s1, reps), bench_median(rs1, reps));
    bench_set_threads(threads);

    /* the quadratic reference at n = 16384 */
    int64_t nn = 16384;
    LX(extras) ex;
    LX(extras_init)(&ex);
    ex.gates = g;
    double tn[99], tc[99], rs[99];
    for (int i = 0; i < reps && i < 3; i++) {
        double a = bench_now();
        check(LX(naive_causal_ex)(decayed, LINATTN_ROW_MAJOR, nn, q, d, k, d, v,
                                  e, out, e, &ex, NULL),
              "naive_causal_ex");
        tn[i] = bench_now() - a;
        tc[i] = causal_time(decayed, nn, q, k, v, out, d, e, g);
        rs[i] = tn[i] / tc[i];
    }
    int nr = reps < 3 ? reps : 3;
    printf("n = %lld, gamma and gates: naive_causal_ex %.4f s, causal_ex "
           "%.4f s, speedup %.1f\n",
           (long long)nn, bench_median(tn, nr), bench_median(tc, nr),
           bench_median(rs, nr));
    LX(plan_destroy)(plain), LX(plan_destroy)(decayed);
    free(q), free(k), free(v), free(g), free(out);
    return 0;
}
