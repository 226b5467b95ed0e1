/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_core.c -- factored against naive linear attention across n, with
 * the machine's ceilings measured in the same run.
 *
 *   bench_core            the README's quick table (n = 2^9 .. 2^13)
 *   bench_core --full     the performance study: n up to 2^20, ratios to
 *                         the bare GEMM calls of the factored path and to
 *                         a large square dgemm
 *
 * Every size also prints the factored call against its roofline floor
 * (roofline.h: the dgemm rate and the streaming bandwidth measured in
 * the same run, the flops and bytes of the path as implemented).
 *
 * Options: --n-min K --n-max K (log2 n), --naive-max K, --reps R,
 * --block B, --d D, --e E.  d = e = 64, double, identity and elu+1 by
 * default.  Times are medians over R repetitions (after one warm-up).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"
#include "machine.h"
#include "measure.h"
#include "blas_rate.h"
#include "roofline.h"
#include "timing.h"

#define MAX_REPS 101

typedef struct {
    int n_min, n_max, naive_max, reps;
    int64_t block, d, e;
    int full;
    int only_map; /* 0: both maps */
} config;

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--full] [--n-min K] [--n-max K] [--naive-max K]\n"
            "          [--reps R] [--block B] [--d D] [--e E] [--map identity|elu1]\n"
            "          [--cpu-time]\n"
            "  n runs over powers of two 2^n-min .. 2^n-max; the naive path\n"
            "  stops at 2^naive-max.  --cpu-time times by the process's CPU\n"
            "  time (for one thread on a shared machine).\n", prog);
}

static int parse_args(int argc, char **argv, config *c)
{
    *c = (config){9, 13, 13, 3, 0, 64, 64, 0, 0};
    for (int i = 1; i < argc; i++) {
        long v;
        const char *a = argv[i];
        if (!strcmp(a, "--cpu-time")) {
            bench_use_cpu_time();
            continue;
        }
        if (!strcmp(a, "--full")) {
            c->full = 1, c->n_min = 10, c->n_max = 20, c->naive_max = 14;
            c->reps = 5;
            continue;
        }
        if (i + 1 >= argc)
            return 0;
        const char *val = argv[++i];
        if (!strcmp(a, "--n-min") && bench_parse_int(val, 0, 30, &v))
            c->n_min = (int)v;
        else if (!strcmp(a, "--n-max") && bench_parse_int(val, 0, 30, &v))
            c->n_max = (int)v;
        else if (!strcmp(a, "--naive-max") && bench_parse_int(val, 0, 30, &v))
            c->naive_max = (int)v;
        else if (!strcmp(a, "--reps") && bench_parse_int(val, 1, MAX_REPS, &v))
            c->reps = (int)v;
        else if (!strcmp(a, "--block") && bench_parse_int(val, 0, 1 << 24, &v))
            c->block = v;
        else if (!strcmp(a, "--map") && !strcmp(val, "identity"))
            c->only_map = LINATTN_MAP_IDENTITY;
        else if (!strcmp(a, "--map") && !strcmp(val, "elu1"))
            c->only_map = LINATTN_MAP_ELU1;
        else if (!strcmp(a, "--d") && bench_parse_int(val, 1, 4096, &v))
            c->d = v;
        else if (!strcmp(a, "--e") && bench_parse_int(val, 1, 4096, &v))
            c->e = v;
        else
            return 0;
    }
    return c->n_min <= c->n_max;
}

typedef int (*attn_fn)(const linattn_d_plan *, int, int64_t, int64_t,
                       const double *, int64_t, const double *, int64_t,
                       const double *, int64_t, double *, int64_t, int64_t *);

/* Seconds of one attention call. */
static double time_attention(attn_fn f, const linattn_d_plan *p, int64_t n,
                             int64_t d, int64_t e, const double *q,
                             const double *k, const double *v, double *out)
{
    double t0 = bench_now();
    int st = f(p, LINATTN_ROW_MAJOR, n, n, q, d, k, d, v, e, out, e, NULL);
    if (st) {
        fprintf(stderr, "bench_core: %s\n", linattn_strerror(st));
        exit(1);
    }
    return bench_now() - t0;
}

int main(int argc, char **argv)
{
    config c;
    if (!parse_args(argc, argv, &c)) {
        usage(argv[0]);
        return 2;
    }
    int64_t d = c.d, e = c.e, nmax = (int64_t)1 << c.n_max;
    uint64_t seed = 42;
    double *q = bench_random(nmax * d, &seed), *k = bench_random(nmax * d, &seed);
    double *v = bench_random(nmax * e, &seed), *out = malloc((size_t)(nmax * e) * sizeof(double));
    const int maps[2] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1};
    const char *names[2] = {"identity", "elu+1"};
    linattn_d_plan *plans[2];
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = c.block;
    /* Random data makes identity normalizers of either sign: accept them. */
    o.denom = LINATTN_DENOM_NONZERO;
    for (int i = 0; i < 2; i++)
        if (linattn_d_plan_create(&plans[i], maps[i], d, e, &o)) {
            fprintf(stderr, "bench_core: cannot plan d = %lld, e = %lld\n",
                    (long long)d, (long long)e);
            return 1;
        }
    int64_t block;
    linattn_d_plan_block(plans[0], &block);
    int max_threads = bench_max_threads();
    printf("linattn %s bench_core: d = %lld, e = %lld, double, block %lld, "
           "%d thread(s), median of %d\n", linattn_version_string(),
           (long long)d, (long long)e, (long long)block, max_threads, c.reps);
    bench_print_circumstances(stdout, argc, argv);
    bench_platform_print(stdout, NULL);
    bench_dgemm g = bench_dgemm_setup();
    double peak = bench_square_dgemm_rate(c.reps);
    printf("square dgemm (2048^3): %.1f GFLOP/s\n", peak);
    bench_roofline roof = bench_roofline_measure(sizeof(double), c.reps);
    bench_roofline_print(stdout, &roof);
    printf("\n%8s %-8s %11s %8s %11s %8s %9s %9s %7s %8s %9s %7s\n", "n",
           "map", "factored_s", "GFLOP/s", "naive_s", "GFLOP/s", "speedup",
           "bare_s", "x_bare", "x_ident", "floor_s", "x_floor");
    /* The figures of the performance targets (doc/performance.md), kept per
     * size: factored over
     * bare GEMMs for both maps, elu+1 over identity, and at the largest
     * size the useful rate over a 2048^3 dgemm timed in the same
     * repetition. */
    double xbare[31][2], xident[31], frac = 0, rate_id = 0, rate_dg = 0;
    double xfloor[2] = {0, 0}; /* at the largest size */
    int have[31] = {0};
    /* Every repetition times the bare GEMMs and each path back to back,
     * so that the ratios compare runs under the same machine load (this
     * machine is shared: medians of per-repetition ratios are stable where
     * ratios of separate medians are not). */
    for (int lg = c.n_min; lg <= c.n_max; lg++) {
        int64_t n = (int64_t)1 << lg;
        /* Factored: 2 n m (e + 1) for the state (S and z) and as much for
         * the queries (numerators and normalizers). */
        double ff = 4.0 * n * d * (e + 1);
        double fn = 2.0 * n * n * d + 2.0 * n * n * e;
        int naive = lg <= c.naive_max, both = !c.only_map;
        int last = lg == c.n_max;
        double tb[MAX_REPS], tb1[MAX_REPS], tf[2][MAX_REPS], tn[2][MAX_REPS];
        double rb[2][MAX_REPS], rn[2][MAX_REPS], ri[MAX_REPS], rg[MAX_REPS];
        double tg[MAX_REPS];
        /* The library's split: up to one thread per block of rows. */
        int threads = n / block < max_threads ? (int)(n / block) : max_threads;
        threads = threads > 1 ? threads : 1;
        for (int r = -1; r < c.reps; r++) { /* r = -1 warms up */
            double b1 = bench_d_bare_time(1, 1, n, d, e, block, q, k, v, out);
            double b = threads > 1 ? bench_d_bare_time(threads, 1, n, d, e,
                                                       block, q, k, v, out)
                                   : b1;
            double dg = last ? bench_dgemm_seconds(&g) : 0;
            for (int i = 0; i < 2; i++) {
                if (c.only_map && c.only_map != maps[i])
                    continue;
                double f = time_attention(linattn_d_attention, plans[i], n, d,
                                          e, q, k, v, out);
                double nv = naive ? time_attention(linattn_d_naive, plans[i], n,
                                                   d, e, q, k, v, out)
                                  : 0;
                if (r >= 0) {
                    tf[i][r] = f, tn[i][r] = nv;
                    rb[i][r] = f / b, rn[i][r] = nv / f;
                }
            }
            if (r >= 0) {
                tb[r] = b, tb1[r] = b1, tg[r] = dg;
                if (both)
                    ri[r] = tf[1][r] / tf[0][r];
                if (last && c.only_map != LINATTN_MAP_ELU1)
                    rg[r] = (ff / tf[0][r]) / (bench_dgemm_flops(&g) / dg);
            }
        }
        double tbm = bench_median(tb, c.reps), tb1m = bench_median(tb1, c.reps);
        for (int i = 0; i < 2; i++) {
            if (c.only_map && c.only_map != maps[i])
                continue;
            double tfm = bench_median(tf[i], c.reps);
            printf("%8lld %-8s %11.3e %8.1f ", (long long)n, names[i], tfm,
                   ff / tfm / 1e9);
            if (naive) {
                double tnm = bench_median(tn[i], c.reps);
                printf("%11.3e %8.1f %9.1f ", tnm, fn / tnm / 1e9,
                       bench_median(rn[i], c.reps));
            } else {
                printf("%11s %8s %9s ", "-", "-", "-");
            }
            xbare[lg][i] = bench_median(rb[i], c.reps);
            printf("%9.3e %7.2f", tbm, xbare[lg][i]);
            if (i == 1 && both) {
                xident[lg] = bench_median(ri, c.reps);
                printf(" %8.2f", xident[lg]);
            } else {
                printf(" %8s", "-");
            }
            /* elementwise maps: m = d, no projection */
            double fl = bench_roofline_floor(
                &roof, bench_work_attention(n, n, d, d, e, 0, sizeof(double)));
            printf(" %9.3e %7.2f\n", fl, tfm / fl);
            if (last)
                xfloor[i] = tfm / fl;
            fflush(stdout);
        }
        have[lg] = 1;
        if (last && c.only_map != LINATTN_MAP_ELU1) {
            frac = bench_median(rg, c.reps);
            rate_id = ff / bench_median(tf[0], c.reps) / 1e9;
            rate_dg = bench_dgemm_flops(&g) / bench_median(tg, c.reps) / 1e9;
        }
        if (last) {
            printf("\nat n = %lld, bare GEMM calls of the factored path:\n"
                   "  split over %d thread(s) as linattn does: %.1f GFLOP/s "
                   "= %.0f%% of square dgemm\n", (long long)n, threads,
                   ff / tbm / 1e9, 100 * ff / tbm / 1e9 / peak);
            printf("  one caller thread, BLAS threading:      %.1f GFLOP/s "
                   "= %.0f%% of square dgemm\n", ff / tb1m / 1e9,
                   100 * ff / tb1m / 1e9 / peak);
        }
    }
    printf("speedup: naive time / factored time; x_bare: factored time / time "
           "of its bare GEMM calls (same shapes, same thread split, no feature "
           "map, no normalization); x_ident: elu+1 time / identity time; all "
           "medians of per-repetition ratios; floor_s: max(flops / dgemm "
           "rate, bytes / bandwidth) of the roofline above (4 n d (e+1) + n e "
           "flops; Q, K, V read and out written once, 16 n (d + e) bytes: "
           "roofline.h), x_floor: the median time / floor\n");
    /* The performance targets, as measured in this run. */
    printf("\nperformance targets, d = %lld, e = %lld, double, %d thread(s), "
           "medians of %d interleaved repetitions:\n", (long long)d,
           (long long)e, max_threads, c.reps);
    if (rate_dg > 0)
        printf("  identity, n = 2^%d: %.1f GFLOP/s useful (4 n d (e+1)) / "
               "%.1f GFLOP/s 2048^3 dgemm in the same repetitions = %.2f "
               "(target >= 0.65)\n", c.n_max, rate_id, rate_dg, frac);
    if (!c.only_map)
        printf("  elu+1 time / identity time, n = 2^%d: %.2f (target <= "
               "1.10)\n", c.n_max, xident[c.n_max]);
    for (int i = 0; i < 2; i++)
        if (!c.only_map || c.only_map == maps[i])
            printf("  %s, n = 2^%d: time / roofline floor = %.2f (target <= "
                   "1.3)\n", names[i], c.n_max, xfloor[i]);
    printf("  factored call / its bare GEMM calls (target <= 1.3):");
    for (int lg = 10; lg <= 12; lg++)
        if (lg >= c.n_min && lg <= c.n_max && have[lg])
            for (int i = 0; i < 2; i++)
                if (!c.only_map || c.only_map == maps[i])
                    printf(" n = %lld %s %.2f;", 1LL << lg, names[i],
                           xbare[lg][i]);
    printf("\n  load average at the end: %.2f\n", bench_load_average());
    bench_dgemm_free(&g);
    for (int i = 0; i < 2; i++)
        linattn_d_plan_destroy(plans[i]);
    free(q), free(k), free(v), free(out);
    return 0;
}
