/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_maps.c -- the kernelized maps' attention against the time their
 * GEMM flops would take at the large-dgemm rate measured in the same run.
 *
 *   bench_maps            FAVOR+, m = 256, d = e = 64, n = 2^18, double:
 *                         the target (ratio <= 2)
 *   bench_maps --map all  every map
 *
 * Options: --n K (log2 n), --m M, --d D, --e E, --reps R, --block B,
 * --map favor|hyp|trig|taylor|custom-exp|all, --causal (the causal call
 * too).  Every repetition times a 2048^3 dgemm and then each path, back to
 * back, each after a 0.2 s pause (threads left spinning by the previous
 * call would otherwise take the cores); ratios are medians of
 * per-repetition ratios (the machine is shared and drifts).
 *
 * GEMM flops of one non-causal call: the projections X W^T of queries and
 * keys, 2 n r d each (r = rows of W: m, or m/2 for the two-sided maps; 0
 * for Taylor), the state phi(K)^T V, 2 n m e, and the queries phi(Q) S,
 * 2 n m e.  The exponentials, the stabilizing shifts, the column sums z,
 * the normalizers and the division are the rest: the ratio says what they
 * cost on top.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "linattn.h"
#include "blas_rate.h"
#include "timing.h"

#define MAX_REPS 51

typedef struct {
    int lg, reps, causal;
    int64_t m, d, e, block;
    const char *map;
} config;

static const struct {
    const char *name;
    int map, act;
} maps[] = {{"favor", LINATTN_MAP_FAVOR, 0},
            {"hyp", LINATTN_MAP_FAVOR_HYP, 0},
            {"trig", LINATTN_MAP_TRIG, 0},
            {"taylor", LINATTN_MAP_TAYLOR, 0},
            {"custom-exp", LINATTN_MAP_CUSTOM, LINATTN_ACT_EXP}};
#define NMAPS ((int)(sizeof maps / sizeof *maps))

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--n K] [--m M] [--d D] [--e E] [--reps R] [--block B]\n"
            "          [--map favor|hyp|trig|taylor|custom-exp|all] [--causal]\n"
            "  n = 2^K rows of queries, keys and values (default K = 18).\n",
            prog);
}

static int parse_args(int argc, char **argv, config *c)
{
    *c = (config){18, 5, 0, 256, 64, 64, 0, "favor"};
    for (int i = 1; i < argc; i++) {
        long v;
        const char *a = argv[i];
        if (!strcmp(a, "--causal")) {
            c->causal = 1;
            continue;
        }
        if (i + 1 >= argc)
            return 0;
        const char *val = argv[++i];
        if (!strcmp(a, "--n") && bench_parse_int(val, 0, 26, &v))
            c->lg = (int)v;
        else if (!strcmp(a, "--m") && bench_parse_int(val, 2, 1 << 16, &v))
            c->m = v;
        else if (!strcmp(a, "--d") && bench_parse_int(val, 1, 1024, &v))
            c->d = v;
        else if (!strcmp(a, "--e") && bench_parse_int(val, 1, 4096, &v))
            c->e = v;
        else if (!strcmp(a, "--reps") && bench_parse_int(val, 1, MAX_REPS, &v))
            c->reps = (int)v;
        else if (!strcmp(a, "--block") && bench_parse_int(val, 0, 1 << 24, &v))
            c->block = v;
        else if (!strcmp(a, "--map"))
            c->map = val;
        else
            return 0;
    }
    if (!strcmp(c->map, "all"))
        return 1;
    for (int i = 0; i < NMAPS; i++)
        if (!strcmp(c->map, maps[i].name))
            return 1;
    return 0;
}

/* A plan for map i; custom-exp gets a W of m rows scaled like FAVOR's. */
static linattn_d_plan *plan_for(int i, const config *c)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = c->block;
    o.seed = 1;
    o.m = maps[i].map == LINATTN_MAP_TAYLOR ? 0 : c->m;
    if (maps[i].map == LINATTN_MAP_TRIG)
        o.denom = LINATTN_DENOM_NONZERO;
    linattn_d_plan *p = NULL;
    int st;
    if (maps[i].map == LINATTN_MAP_CUSTOM) {
        uint64_t seed = 3;
        double *w = bench_random(c->m * c->d, &seed);
        o.m = 0;
        o.input_scale = 1 / sqrt(sqrt((double)c->d));
        st = linattn_d_plan_create_custom(&p, maps[i].act, c->d, c->m, c->e,
                                          LINATTN_ROW_MAJOR, w, c->d, NULL, &o);
        free(w);
    } else {
        st = linattn_d_plan_create(&p, maps[i].map, c->d, c->e, &o);
    }
    if (st) {
        fprintf(stderr, "bench_maps: %s: %s\n", maps[i].name, linattn_strerror(st));
        exit(1);
    }
    return p;
}

/* GEMM flops of one non-causal call (see the top of the file). */
static double gemm_flops(const linattn_d_plan *p, int64_t n)
{
    int64_t d, m, e, rows;
    linattn_d_plan_dims(p, &d, &m, &e);
    linattn_d_plan_weights(p, LINATTN_ROW_MAJOR, NULL, 0, &rows);
    return 2.0 * (double)n * (2.0 * rows * d + 2.0 * m * e);
}

/* Threads that spin after a parallel region (OpenBLAS's after the dgemm,
 * OpenMP's after a call) would take the cores from the next timed call:
 * each timed call starts after they have gone to sleep. */
static void settle(void)
{
    struct timespec t = {0, 200000000};
    nanosleep(&t, NULL);
}

static double time_call(const linattn_d_plan *p, int causal, int64_t n,
                        int64_t d, int64_t e, const double *q, const double *k,
                        const double *v, double *out)
{
    settle();
    double t0 = bench_now();
    int st = causal ? linattn_d_causal(p, LINATTN_ROW_MAJOR, n, q, d, k, d, v,
                                       e, out, e, NULL)
                    : linattn_d_attention(p, LINATTN_ROW_MAJOR, n, n, q, d, k,
                                          d, v, e, out, e, NULL);
    double t = bench_now() - t0;
    if (st) {
        fprintf(stderr, "bench_maps: %s\n", linattn_strerror(st));
        exit(1);
    }
    return t;
}

int main(int argc, char **argv)
{
    config c;
    if (!parse_args(argc, argv, &c)) {
        usage(argv[0]);
        return 2;
    }
    int64_t n = (int64_t)1 << c.lg, d = c.d, e = c.e;
    uint64_t seed = 42;
    double *q = bench_random(n * d, &seed), *k = bench_random(n * d, &seed);
    double *v = bench_random(n * e, &seed);
    double *out = malloc((size_t)(n * e) * sizeof(double));
    int chosen[NMAPS], nchosen = 0;
    for (int i = 0; i < NMAPS; i++)
        if (!strcmp(c.map, "all") || !strcmp(c.map, maps[i].name))
            chosen[nchosen++] = i;
    linattn_d_plan *plans[NMAPS];
    for (int i = 0; i < nchosen; i++)
        plans[i] = plan_for(chosen[i], &c);
    int64_t block;
    linattn_d_plan_block(plans[0], &block);
#ifdef _OPENMP
    int threads = omp_get_max_threads();
#else
    int threads = 1;
#endif
    printf("linattn %s bench_maps: n = 2^%d, d = %lld, e = %lld, m = %lld, "
           "double, block %lld, %d thread(s), median of %d\n",
           linattn_version_string(), c.lg, (long long)d, (long long)e,
           (long long)c.m, (long long)block, threads, c.reps);
    bench_dgemm g = bench_dgemm_setup();
    static double tg[MAX_REPS], ta[NMAPS][MAX_REPS], ra[NMAPS][MAX_REPS];
    static double tc[NMAPS][MAX_REPS], rc[NMAPS][MAX_REPS];
    for (int r = -1; r < c.reps; r++) { /* r = -1 warms up */
        settle();
        double tgr = bench_dgemm_seconds(&g);
        double rate = bench_dgemm_flops(&g) / tgr;
        for (int i = 0; i < nchosen; i++) {
            double ideal = gemm_flops(plans[i], n) / rate;
            double t = time_call(plans[i], 0, n, d, e, q, k, v, out);
            double tcz = c.causal ? time_call(plans[i], 1, n, d, e, q, k, v, out) : 0;
            if (r >= 0)
                ta[i][r] = t, ra[i][r] = t / ideal, tc[i][r] = tcz,
                rc[i][r] = tcz / ideal;
        }
        if (r >= 0)
            tg[r] = tgr;
    }
    double peak = bench_dgemm_flops(&g) / bench_median(tg, c.reps) / 1e9;
    printf("square dgemm (%d^3): %.1f GFLOP/s\n\n", g.n, peak);
    printf("%-11s %6s %10s %11s %9s %8s", "map", "m", "GEMM_GF", "attention_s",
           "GFLOP/s", "x_dgemm");
    if (c.causal)
        printf(" %9s %8s", "causal_s", "x_dgemm");
    printf("\n");
    for (int i = 0; i < nchosen; i++) {
        int64_t m;
        linattn_d_plan_dims(plans[i], NULL, &m, NULL);
        double f = gemm_flops(plans[i], n), t = bench_median(ta[i], c.reps);
        printf("%-11s %6lld %10.2f %11.4f %9.1f %8.2f", maps[chosen[i]].name,
               (long long)m, f / 1e9, t, f / t / 1e9, bench_median(ra[i], c.reps));
        if (c.causal)
            printf(" %9.4f %8.2f", bench_median(tc[i], c.reps),
                   bench_median(rc[i], c.reps));
        printf("\n");
    }
    printf("x_dgemm: time over the time of the call's GEMM flops at the square "
           "dgemm rate of the same repetition (median of per-repetition "
           "ratios); target for favor at m = 256, d = e = 64, n = 2^18: <= 2\n");
    bench_dgemm_free(&g);
    for (int i = 0; i < nchosen; i++)
        linattn_d_plan_destroy(plans[i]);
    free(q), free(k), free(v), free(out);
    return 0;
}
