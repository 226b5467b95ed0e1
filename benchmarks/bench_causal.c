/*
 * bench_causal.c -- causal linear attention: chunked causal against the
 * non-causal call and the masked naive rescan across n and chunk size, and
 * token-by-token decoding with a state against softmax attention over a
 * growing key/value cache.
 *
 *   bench_causal                  n = 2^12 .. 2^16, C = 16 .. 128, decoding
 *                                 at contexts 1K .. 16K
 *   bench_causal --full           n up to 2^20, decoding up to 64K
 *
 * d = e = 64, double, elu+1.  Times are medians; ratios are medians of
 * per-repetition ratios (each repetition times the paths back to back).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"
#include "timing.h"

#define REPS 5

static void check(int st, const char *what)
{
    if (st) {
        fprintf(stderr, "bench_causal: %s: %s\n", what, linattn_strerror(st));
        exit(1);
    }
}

/* Causal against non-causal (and naive causal while it is affordable). */
static void chunks_table(int lg_max, int naive_max)
{
    int64_t d = 64, e = 64, nmax = (int64_t)1 << lg_max;
    uint64_t seed = 3;
    double *q = bench_random(nmax * d, &seed), *k = bench_random(nmax * d, &seed);
    double *v = bench_random(nmax * e, &seed), *out = malloc((size_t)(nmax * e) * sizeof(double));
    printf("%8s %5s %11s %11s %8s %11s %9s\n", "n", "C", "causal_s", "noncausal_s",
           "x_nonc", "naive_c_s", "speedup");
    for (int lg = 12; lg <= lg_max; lg += 2) {
        int64_t n = (int64_t)1 << lg;
        for (int64_t c = 16; c <= 128; c *= 2) {
            linattn_opts o;
            linattn_opts_init(&o);
            o.chunk = c;
            linattn_d_plan *p;
            check(linattn_d_plan_create(&p, LINATTN_MAP_ELU1, d, e, &o), "plan");
            double tc[REPS], tn[REPS], tv[REPS], r1[REPS], r2[REPS];
            int naive = lg <= naive_max && c == 32;
            for (int r = -1; r < REPS; r++) {
                double t0 = bench_now();
                check(linattn_d_causal(p, LINATTN_ROW_MAJOR, n, q, d, k, d, v, e,
                                       out, e, NULL), "causal");
                double t1 = bench_now();
                check(linattn_d_attention(p, LINATTN_ROW_MAJOR, n, n, q, d, k, d,
                                          v, e, out, e, NULL), "attention");
                double t2 = bench_now();
                if (naive)
                    check(linattn_d_naive_causal(p, LINATTN_ROW_MAJOR, n, q, d, k,
                                                 d, v, e, out, e, NULL), "naive");
                double t3 = bench_now();
                if (r >= 0) {
                    tc[r] = t1 - t0, tn[r] = t2 - t1, tv[r] = t3 - t2;
                    r1[r] = tc[r] / tn[r], r2[r] = tv[r] / tc[r];
                }
            }
            printf("%8lld %5lld %11.3e %11.3e %8.2f ", (long long)n, (long long)c,
                   bench_median(tc, REPS), bench_median(tn, REPS),
                   bench_median(r1, REPS));
            if (naive)
                printf("%11.3e %9.1f\n", bench_median(tv, REPS),
                       bench_median(r2, REPS));
            else
                printf("%11s %9s\n", "-", "-");
            fflush(stdout);
            linattn_d_plan_destroy(p);
        }
    }
    free(q), free(k), free(v), free(out);
}

/* Tokens per second of append-and-query at a given context length: the
 * linear state (constant memory) against softmax over a growing cache. */
static void decoding_table(int lg_max)
{
    int64_t d = 64, e = 64, cmax = (int64_t)1 << lg_max, steps = 64;
    uint64_t seed = 9;
    double *q = bench_random((cmax + steps) * d, &seed), *k = bench_random((cmax + steps) * d, &seed);
    double *v = bench_random((cmax + steps) * e, &seed), out[64];
    linattn_d_plan *p;
    check(linattn_d_plan_create(&p, LINATTN_MAP_ELU1, d, e, NULL), "plan");
    linattn_d_state *st;
    check(linattn_d_state_create(&st, p), "state");
    printf("\n%8s %14s %14s %9s %12s %12s\n", "context", "linear_tok/s",
           "softmax_tok/s", "ratio", "state_bytes", "cache_bytes");
    for (int lg = 10; lg <= lg_max; lg += 2) {
        int64_t ctx = (int64_t)1 << lg;
        /* the context so far, absorbed at once */
        linattn_d_state_reset(st);
        check(linattn_d_state_update(st, LINATTN_ROW_MAJOR, ctx, k, d, v, e), "update");
        double t0 = bench_now();
        for (int64_t s = 0; s < steps; s++) {
            int64_t i = ctx + s;
            check(linattn_d_state_update(st, LINATTN_ROW_MAJOR, 1, k + i * d, d,
                                         v + i * e, e), "update");
            check(linattn_d_state_query(st, LINATTN_ROW_MAJOR, 1, q + i * d, d,
                                        out, e, NULL, 0, NULL, NULL), "query");
        }
        double t1 = bench_now();
        for (int64_t s = 0; s < steps; s++) {
            int64_t i = ctx + s; /* the cache holds keys 0..i */
            check(linattn_d_softmax(LINATTN_ROW_MAJOR, 1, i + 1, d, e, 0.125,
                                    q + i * d, d, k, d, v, e, out, e), "softmax");
        }
        double t2 = bench_now();
        double lin = steps / (t1 - t0), soft = steps / (t2 - t1);
        printf("%8lld %14.0f %14.0f %9.0f %12lld %12lld\n", (long long)ctx, lin,
               soft, lin / soft, (long long)(d * (e + 1) * 8),
               (long long)(ctx * (d + e) * 8));
        fflush(stdout);
    }
    linattn_d_state_destroy(st);
    linattn_d_plan_destroy(p);
    free(q), free(k), free(v);
}

int main(int argc, char **argv)
{
    int full = argc > 1 && !strcmp(argv[1], "--full");
    if (argc > 2 || (argc == 2 && !full)) {
        fprintf(stderr, "usage: %s [--full]\n", argv[0]);
        return 2;
    }
    printf("linattn %s bench_causal: d = e = 64, double, elu+1, median of %d\n\n",
           linattn_version_string(), REPS);
    chunks_table(full ? 20 : 16, 14);
    decoding_table(full ? 16 : 14);
    return 0;
}
