/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_ragged.c -- ragged data: key weights against none, non-causal
 * (linattn_d_attention_ex) and causal (linattn_d_causal_ex), on one
 * sequence of n tokens, d = e = 64, double, elu+1 (and the identity,
 * whose unweighted path hands K to BLAS without computing features).
 *
 *   bench_ragged               n = 2^16 and 2^18, 5 repetitions
 *   bench_ragged --full        n up to 2^20
 *   bench_ragged --reps R      R repetitions
 *
 * Each repetition times the weighted call and the plain one back to
 * back (weights uniform in (0, 1], every eighth one 0); the ratio quoted
 * is the median of the per-repetition ratios, the times medians.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"
#include "machine.h"
#include "timing.h"

static void check(int st, const char *what)
{
    if (st) {
        fprintf(stderr, "bench_ragged: %s: %s\n", what, linattn_strerror(st));
        exit(1);
    }
}

/* One call of the path: weights w (NULL: none). */
static double timed(const linattn_d_plan *p, int causal, int64_t n,
                    const double *q, const double *k, const double *v,
                    double *out, const double *w, int64_t d, int64_t e)
{
    linattn_d_extras ex;
    linattn_d_extras_init(&ex);
    ex.weights = w;
    int64_t bad;
    double t0 = bench_now();
    if (causal)
        check(linattn_d_causal_ex(p, LINATTN_ROW_MAJOR, n, q, d, k, d, v, e,
                                  out, e, w ? &ex : NULL, &bad), "causal_ex");
    else
        check(linattn_d_attention_ex(p, LINATTN_ROW_MAJOR, n, n, q, d, k, d, v,
                                     e, out, e, w ? &ex : NULL, &bad),
              "attention_ex");
    return bench_now() - t0;
}

int main(int argc, char **argv)
{
    int lg_max = 18, reps = 5;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--full"))
            lg_max = 20;
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc)
            reps = atoi(argv[++a]);
        else {
            fprintf(stderr, "usage: bench_ragged [--full] [--reps R]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 99)
        reps = 5;
    bench_print_circumstances(stdout, argc, argv);
    int64_t d = 64, e = 64, nmax = (int64_t)1 << lg_max;
    uint64_t seed = 11;
    double *q = bench_random(nmax * d, &seed), *k = bench_random(nmax * d, &seed);
    double *v = bench_random(nmax * e, &seed);
    double *out = malloc((size_t)(nmax * e) * sizeof(double));
    double *w = malloc((size_t)nmax * sizeof(double));
    for (int64_t j = 0; j < nmax; j++)
        w[j] = j % 8 == 3 ? 0 : 0.5 * (bench_uniform(&seed) + 1) + 1e-3;
    static const int maps[2] = {LINATTN_MAP_ELU1, LINATTN_MAP_IDENTITY};
    static const char *names[2] = {"elu1", "identity"};
    printf("key weights against none: d = %lld, e = %lld, double, %d "
           "repetitions\n", (long long)d, (long long)e, reps);
    printf("%8s %-8s %-6s %11s %11s %9s\n", "n", "map", "path", "plain_s",
           "weighted_s", "x_plain");
    for (int lg = 16; lg <= lg_max; lg += 2) {
        int64_t n = (int64_t)1 << lg;
        for (int mi = 0; mi < 2; mi++) {
            linattn_opts o;
            linattn_opts_init(&o);
            /* the identity's normalizers may be <= 0 on signed data */
            o.denom = mi ? LINATTN_DENOM_NONZERO : LINATTN_DENOM_POSITIVE;
            linattn_d_plan *p;
            check(linattn_d_plan_create(&p, maps[mi], d, e, &o), "plan");
            for (int causal = 0; causal < 2; causal++) {
                double tp[99], tw[99], r[99];
                timed(p, causal, n, q, k, v, out, w, d, e); /* warm up */
                for (int i = 0; i < reps; i++) {
                    tp[i] = timed(p, causal, n, q, k, v, out, NULL, d, e);
                    tw[i] = timed(p, causal, n, q, k, v, out, w, d, e);
                    r[i] = tw[i] / tp[i];
                }
                double x = bench_median(r, reps);
                printf("%8lld %-8s %-6s %11.4f %11.4f %9.3f\n", (long long)n,
                       names[mi], causal ? "causal" : "nonc",
                       bench_median(tp, reps), bench_median(tw, reps), x);
            }
            linattn_d_plan_destroy(p);
        }
    }
    printf("\ntarget: weighted / plain <= 1.05 (x_plain)\n");
    printf("load average at the end: %.2f\n", bench_load_average());
    free(q), free(k), free(v), free(out), free(w);
    return 0;
}
