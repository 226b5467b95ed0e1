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
 *   bench_ragged --lg L        n = 2^L only (12 .. 22)
 *
 * Three kinds of weights: quadrature weights uniform in (0, 1] ("quad":
 * every block read where the caller keeps it); a batch padded to its
 * longest sequence ("pad": sequences of 4096 slots, the last 0 to 2047
 * of each of weight 0, the others 1: the padding's blocks are skipped;
 * the plain call still sums the padding); and every eighth weight 0
 * ("sparse": every block and chunk holds keys of weight 0, read in place
 * with their features zeroed).
 * Each repetition times the weighted call and the plain one back to
 * back; the ratio quoted is the median of the per-repetition ratios, the
 * times medians.
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
    int lg_min = 16, lg_max = 18, reps = 5;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--full"))
            lg_max = 20;
        else if (!strcmp(argv[a], "--reps") && a + 1 < argc)
            reps = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--lg") && a + 1 < argc)
            lg_min = lg_max = atoi(argv[++a]);
        else {
            fprintf(stderr,
                    "usage: bench_ragged [--full] [--reps R] [--lg L]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 99)
        reps = 5;
    if (lg_min < 12 || lg_max > 22) {
        fprintf(stderr, "bench_ragged: --lg takes 12 .. 22\n");
        return 2;
    }
    bench_print_circumstances(stdout, argc, argv);
    bench_platform_print(stdout, NULL);
    int64_t d = 64, e = 64, nmax = (int64_t)1 << lg_max;
    uint64_t seed = 11;
    double *q = bench_random(nmax * d, &seed), *k = bench_random(nmax * d, &seed);
    double *v = bench_random(nmax * e, &seed);
    double *out = malloc((size_t)(nmax * e) * sizeof(double));
    double *wk[3];
    for (int t = 0; t < 3; t++)
        wk[t] = malloc((size_t)nmax * sizeof(double));
    for (int64_t j = 0; j < nmax; j++) {
        int64_t seq = j / 4096, pad = seq * 797 % 2048;
        wk[0][j] = 0.5 * (bench_uniform(&seed) + 1) + 1e-3;
        wk[1][j] = j % 4096 < 4096 - pad ? 1 : 0;
        wk[2][j] = j % 8 == 3 ? 0 : wk[0][j];
    }
    static const char *kinds[3] = {"quad", "pad", "sparse"};
    static const int maps[2] = {LINATTN_MAP_ELU1, LINATTN_MAP_IDENTITY};
    static const char *names[2] = {"elu1", "identity"};
    printf("key weights against none: d = %lld, e = %lld, double, %d "
           "repetitions\n", (long long)d, (long long)e, reps);
    printf("%8s %-8s %-6s %-6s %11s %11s %9s\n", "n", "map", "path",
           "w", "plain_s", "weighted_s", "x_plain");
    for (int lg = lg_min; lg <= lg_max; lg += 2) {
        int64_t n = (int64_t)1 << lg;
        for (int mi = 0; mi < 2; mi++) {
            linattn_opts o;
            linattn_opts_init(&o);
            /* the identity's normalizers may be <= 0 on signed data */
            o.denom = mi ? LINATTN_DENOM_NONZERO : LINATTN_DENOM_POSITIVE;
            linattn_d_plan *p;
            check(linattn_d_plan_create(&p, maps[mi], d, e, &o), "plan");
            for (int kind = 0; kind < 6; kind++) {
                int causal = kind / 3;
                const double *w = wk[kind % 3];
                double tp[99], tw[99], r[99];
                timed(p, causal, n, q, k, v, out, w, d, e); /* warm up */
                for (int i = 0; i < reps; i++) {
                    tp[i] = timed(p, causal, n, q, k, v, out, NULL, d, e);
                    tw[i] = timed(p, causal, n, q, k, v, out, w, d, e);
                    r[i] = tw[i] / tp[i];
                }
                double x = bench_median(r, reps);
                printf("%8lld %-8s %-6s %-6s %11.4f %11.4f %9.3f\n",
                       (long long)n, names[mi], causal ? "causal" : "nonc",
                       kinds[kind % 3], bench_median(tp, reps),
                       bench_median(tw, reps), x);
            }
            linattn_d_plan_destroy(p);
        }
    }
    printf("\ntarget: weighted / plain <= 1.05 (x_plain; pad skips the "
           "padding the plain call sums, sparse has zeros in every block)\n");
    printf("load average at the end: %.2f\n", bench_load_average());
    free(q), free(k), free(v), free(out);
    for (int t = 0; t < 3; t++)
        free(wk[t]);
    return 0;
}
