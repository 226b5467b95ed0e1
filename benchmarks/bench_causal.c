/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_causal.c -- causal linear attention: chunked causal against the
 * non-causal call and the masked naive rescan across n and chunk size, and
 * token-by-token decoding with a state against softmax attention over a
 * growing key/value cache.
 *
 *   bench_causal                  n = 2^12 .. 2^16, C = default, 16 .. 128
 *   bench_causal --full           n up to 2^20
 *   bench_causal --decode-only    the decoding table alone
 *
 * then decoding at contexts 1K, 4K, 16K, 64K.
 *
 * d = e = 64, double, elu+1.  Times are medians; ratios are medians of
 * per-repetition ratios (each repetition times the paths back to back).
 * Each causal row also prints its roofline floor (roofline.h: the chunk's
 * square and triangle and the threads' prefix pass counted), and
 * decoding the tokens/s the one-thread dgemm rate allows.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "linattn.h"
#include "machine.h"
#include "roofline.h"
#include "timing.h"

#define REPS 5

static void check(int st, const char *what)
{
    if (st) {
        fprintf(stderr, "bench_causal: %s: %s\n", what, linattn_strerror(st));
        exit(1);
    }
}

/* The causal / non-causal ratio at the largest n and the default chunk,
 * and the causal and non-causal times over their floors there (for the
 * targets block). */
static double default_ratio, default_floor_ratio, nonc_floor_ratio;
/* tokens/s at the last context: update + query, and the one-call step
 * (linattn_d_states_step of one stream: one pass over the state) */
static double decode_rate, decode_step_rate, decode_ceiling;
static bench_roofline roof;

/* Causal against non-causal (and naive causal while it is affordable). */
static void chunks_table(int lg_max, int naive_max)
{
    int64_t d = 64, e = 64, nmax = (int64_t)1 << lg_max;
    uint64_t seed = 3;
    double *q = bench_random(nmax * d, &seed), *k = bench_random(nmax * d, &seed);
    double *v = bench_random(nmax * e, &seed), *out = malloc((size_t)(nmax * e) * sizeof(double));
    printf("%8s %5s %11s %11s %8s %11s %9s %9s %7s %7s\n", "n", "C",
           "causal_s", "noncausal_s", "x_nonc", "naive_c_s", "speedup",
           "floor_s", "x_floor", "xn_floor");
    for (int lg = 12; lg <= lg_max; lg += 2) {
        int64_t n = (int64_t)1 << lg;
        static const int64_t chunks[] = {0, 16, 32, 48, 64, 128};
        for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
            int64_t c = chunks[ci];
            linattn_opts o;
            linattn_opts_init(&o);
            o.chunk = c; /* 0: the library's default */
            linattn_d_plan *p;
            check(linattn_d_plan_create(&p, LINATTN_MAP_ELU1, d, e, &o), "plan");
            double tc[REPS], tn[REPS], tv[REPS], r1[REPS], r2[REPS];
            int naive = lg <= naive_max && c == 0;
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
            char cname[16];
            snprintf(cname, sizeof cname, c ? "%lld" : "dflt", (long long)c);
            double ratio = bench_median(r1, REPS);
            double tcm = bench_median(tc, REPS), tnm = bench_median(tn, REPS);
            /* elu+1: m = d, no projection; the split of causal.c (a range
             * of at least max(block, C) rows a thread) and attention.c */
            int64_t cc = c ? c : bench_default_chunk(sizeof(double)), block;
            linattn_d_plan_block(p, &block);
            int tcz = bench_split_threads(n, block > cc ? block : cc,
                                          roof.threads);
            double fc = bench_roofline_floor(
                &roof, bench_work_causal(n, d, d, e, 0, cc, tcz, 8));
            double fn = bench_roofline_floor(
                &roof, bench_work_attention(n, n, d, d, e, 0, 8));
            if (c == 0 && lg == lg_max) {
                default_ratio = ratio;
                default_floor_ratio = tcm / fc;
                nonc_floor_ratio = tnm / fn;
            }
            printf("%8lld %5s %11.3e %11.3e %8.2f ", (long long)n, cname, tcm,
                   tnm, ratio);
            if (naive)
                printf("%11.3e %9.1f", bench_median(tv, REPS),
                       bench_median(r2, REPS));
            else
                printf("%11s %9s", "-", "-");
            printf(" %9.3e %7.2f %7.2f\n", fc, tcm / fc, tnm / fn);
            fflush(stdout);
            linattn_d_plan_destroy(p);
        }
    }
    free(q), free(k), free(v), free(out);
}

/* One decoding step of softmax attention over a cache of n keys and values,
 * as a KV-cache decoder does it: scores by GEMV, max-subtracted exp, the
 * weighted values by GEMV.  (linattn_d_softmax with one query takes about
 * twice as long: it scores by row blocks through GEMM; the baseline should
 * be the fast way.) */
static void softmax_step(int64_t n, int64_t d, int64_t e, const double *q,
                         const double *k, const double *v, double *scores,
                         double *out)
{
    cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)n, (int)d, 1 / sqrt((double)d),
                k, (int)d, q, 1, 0, scores, 1);
    double mx = scores[0], sum = 0;
    for (int64_t j = 1; j < n; j++)
        mx = scores[j] > mx ? scores[j] : mx;
    for (int64_t j = 0; j < n; j++)
        sum += scores[j] = exp(scores[j] - mx);
    cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, (int)e, 1 / sum, v, (int)e,
                scores, 1, 0, out, 1);
}

static long max_rss_kb(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_maxrss;
}

/* Tokens per second of append-and-query at context lengths 1K .. 64K: the
 * linear state (constant memory) against softmax over a growing cache.
 * Each repetition times a run of linear steps and a run of softmax steps
 * back to back; the table shows medians over repetitions. */
static void decoding_table(int lg_max)
{
    enum { LIN_STEPS = 4096, SOFT_STEPS = 8, DREPS = 7 };
    int64_t d = 64, e = 64, cmax = (int64_t)1 << lg_max;
    int64_t total = cmax + DREPS * LIN_STEPS;
    uint64_t seed = 9;
    double *q = bench_random(total * d, &seed), *k = bench_random(total * d, &seed);
    double *v = bench_random(total * e, &seed), out[64];
    double *scores = malloc((size_t)total * sizeof(double));
    linattn_d_plan *p;
    check(linattn_d_plan_create(&p, LINATTN_MAP_ELU1, d, e, NULL), "plan");
    linattn_d_state *st;
    check(linattn_d_state_create(&st, p), "state");
    /* a token: the update's 2 m (e + 1) and the query's 2 m (e + 1) + e
     * flops on a state that stays in cache, at the one-thread dgemm rate
     * (decoding runs on the caller's thread) */
    int threads = bench_max_threads();
    bench_set_threads(1);
    bench_roofline one = bench_roofline_measure(sizeof(double), 3);
    bench_set_threads(threads);
    double tok_flops = 4.0 * d * (e + 1) + e;
    double ceiling = one.gemm / tok_flops;
    printf("\ndecoding ceiling: %.0f flops a token at the one-thread dgemm "
           "rate %.1f GFLOP/s = %.2f M tokens/s\n", tok_flops, one.gemm / 1e9,
           ceiling / 1e6);
    decode_ceiling = ceiling;
    printf("linear: linattn_d_state_update of the token then "
           "linattn_d_state_query of it; step: linattn_d_states_step of the "
           "one stream (both in one pass over the state, the same bits)\n");
    printf("%8s %14s %14s %14s %9s %12s %12s %10s %9s\n", "context",
           "linear_tok/s", "step_tok/s", "softmax_tok/s", "ratio",
           "state_bytes", "cache_bytes", "rss_grow_kB", "x_ceiling");
    for (int lg = 10; lg <= lg_max; lg += 2) {
        int64_t ctx = (int64_t)1 << lg;
        double tl[DREPS], tp[DREPS], ts[DREPS], ratio[DREPS];
        /* the context so far, absorbed at once */
        check(linattn_d_state_reset(st), "reset");
        check(linattn_d_state_update(st, LINATTN_ROW_MAJOR, ctx, k, d, v, e), "update");
        long rss0 = max_rss_kb();
        for (int r = 0; r < DREPS; r++) {
            double t0 = bench_now();
            for (int64_t s = 0; s < LIN_STEPS; s++) {
                int64_t i = ctx + r * LIN_STEPS + s;
                check(linattn_d_state_update(st, LINATTN_ROW_MAJOR, 1, k + i * d,
                                             d, v + i * e, e), "update");
                check(linattn_d_state_query(st, LINATTN_ROW_MAJOR, 1, q + i * d, d,
                                            out, e, NULL, 0, NULL, NULL), "query");
            }
            double t1 = bench_now();
            for (int64_t s = 0; s < LIN_STEPS; s++) { /* the same tokens again */
                int64_t i = ctx + r * LIN_STEPS + s;
                check(linattn_d_states_step(&st, 1, LINATTN_ROW_MAJOR, q + i * d,
                                            d, k + i * d, d, v + i * e, e, out,
                                            e, NULL), "states_step");
            }
            double t2 = bench_now();
            for (int64_t s = 0; s < SOFT_STEPS; s++) /* the cache: keys 0..i */
                softmax_step(ctx + s + 1, d, e, q + (ctx + s) * d, k, v, scores, out);
            double t3 = bench_now();
            tl[r] = LIN_STEPS / (t1 - t0), tp[r] = LIN_STEPS / (t2 - t1);
            ts[r] = SOFT_STEPS / (t3 - t2);
            ratio[r] = tl[r] / ts[r];
        }
        long grown = max_rss_kb() - rss0;
        printf("%8lld %14.0f %14.0f %14.0f %9.0f %12lld %12lld %10ld %9.2f\n",
               (long long)ctx, bench_median(tl, DREPS), bench_median(tp, DREPS),
               bench_median(ts, DREPS),
               bench_median(ratio, DREPS), (long long)(d * (e + 1) * 8),
               (long long)(ctx * (d + e) * 8), grown,
               ceiling / bench_median(tl, DREPS));
        decode_rate = bench_median(tl, DREPS);
        decode_step_rate = bench_median(tp, DREPS);
        fflush(stdout);
    }
    linattn_d_state_destroy(st);
    linattn_d_plan_destroy(p);
    free(q), free(k), free(v), free(scores);
}

static double heads_time, heads_rate, heads_ratio;

/* Float, 8 heads x 32768 tokens x d = e = 64, causal elu+1, as one batched
 * call ([heads][n][d] arrays): the heads are split over the threads. */
static void heads_table(void)
{
    enum { H = 8 };
    int64_t n = 32768, d = 64, e = 64;
    uint64_t seed = 5;
    double *qd = bench_random(H * n * d, &seed), *kd = bench_random(H * n * d, &seed);
    double *vd = bench_random(H * n * e, &seed);
    float *q = malloc((size_t)(H * n * d) * sizeof(float));
    float *k = malloc((size_t)(H * n * d) * sizeof(float));
    float *v = malloc((size_t)(H * n * e) * sizeof(float));
    float *out = malloc((size_t)(H * n * e) * sizeof(float));
    if (!q || !k || !v || !out) {
        fprintf(stderr, "bench_causal: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < H * n * d; i++)
        q[i] = (float)qd[i], k[i] = (float)kd[i];
    for (int64_t i = 0; i < H * n * e; i++)
        v[i] = (float)vd[i];
    linattn_s_plan *p;
    check(linattn_s_plan_create(&p, LINATTN_MAP_ELU1, d, e, NULL), "plan");
    linattn_strides sqk = {d, H * n * d, n * d}, sv = {e, H * n * e, n * e};
    /* a 2048^3 sgemm in every repetition: the rate the call is judged by */
    int g = 2048;
    float *ga = malloc((size_t)g * g * sizeof(float));
    float *gb = malloc((size_t)g * g * sizeof(float));
    float *gc = malloc((size_t)g * g * sizeof(float));
    if (!ga || !gb || !gc) {
        fprintf(stderr, "bench_causal: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < (int64_t)g * g; i++)
        ga[i] = (float)qd[i % (H * n * d)], gb[i] = (float)kd[i % (H * n * d)];
    double t[REPS], tg[REPS], ratio[REPS];
    double flops = 4.0 * H * n * d * (e + 1), gflops = 2.0 * g * g * (double)g;
    for (int r = -1; r < REPS; r++) {
        double t0 = bench_now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g, g, g, 1, ga, g,
                    gb, g, 0, gc, g);
        double t1 = bench_now();
        check(linattn_s_batched_causal(p, LINATTN_ROW_MAJOR, 1, H, n, q, &sqk, k,
                                       &sqk, v, &sv, out, &sv, NULL), "batched causal");
        double t2 = bench_now();
        if (r >= 0) {
            t[r] = t2 - t1, tg[r] = t1 - t0;
            ratio[r] = t[r] / (flops / (gflops / tg[r]));
        }
    }
    double tm = bench_median(t, REPS);
    heads_time = tm;
    heads_rate = gflops / bench_median(tg, REPS) / 1e9;
    heads_ratio = bench_median(ratio, REPS);
    printf("\nfloat, %d heads x %lld tokens, d = e = 64, causal elu+1 (batched): "
           "%.4f s median, %.1f Mtokens/s; 2048^3 sgemm %.1f GFLOP/s in the "
           "same repetitions\n", H, (long long)n, tm, H * n / tm / 1e6,
           heads_rate);
    free(ga), free(gb), free(gc);
    linattn_s_plan_destroy(p);
    free(qd), free(kd), free(vd), free(q), free(k), free(v), free(out);
}

/* The decoding line of the targets block. */
static void print_decoding_target(void)
{
    printf("  decoding, one head, double, one thread: update + query %.2f M "
           "tokens/s = %.2f x the target (>= 2); one-call step %.2f M = %.2f "
           "x the target; the roofline ceiling %.2f M (x %.2f, x %.2f of it)\n",
           decode_rate / 1e6, decode_rate / 2e6, decode_step_rate / 1e6,
           decode_step_rate / 2e6, decode_ceiling / 1e6,
           decode_rate / decode_ceiling, decode_step_rate / decode_ceiling);
}

int main(int argc, char **argv)
{
    int full = 0, decode_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--full")) {
            full = 1;
        } else if (!strcmp(argv[i], "--decode-only")) {
            decode_only = 1;
        } else if (!strcmp(argv[i], "--cpu-time")) {
            bench_use_cpu_time();
        } else {
            fprintf(stderr, "usage: %s [--full] [--cpu-time] [--decode-only]\n"
                    "  --cpu-time: time by the process's CPU time (for one "
                    "thread on a shared machine)\n"
                    "  --decode-only: the decoding table alone (and its "
                    "target)\n", argv[0]);
            return 2;
        }
    }
    printf("linattn %s bench_causal: d = e = 64, double, elu+1, median of %d\n",
           linattn_version_string(), REPS);
    bench_print_circumstances(stdout, argc, argv);
    bench_platform_print(stdout, NULL);
    if (decode_only) {
        decoding_table(16);
        printf("\nperformance target:\n");
        print_decoding_target();
        printf("  load average at the end: %.2f\n", bench_load_average());
        return 0;
    }
    roof = bench_roofline_measure(sizeof(double), REPS);
    bench_roofline_print(stdout, &roof);
    printf("\n");
    int lg_max = full ? 20 : 16;
    chunks_table(lg_max, 14);
    decoding_table(16);
    heads_table();
    printf("\nperformance targets, d = e = 64, elu+1, %d thread(s), medians of "
           "%d interleaved repetitions:\n", bench_max_threads(), REPS);
    printf("  causal / non-causal time, n = 2^%d, double, default chunk: %.2f "
           "(target <= 1.25)\n", lg_max, default_ratio);
    printf("  float, 8 heads x 32768, causal (batched_causal): %.4f s = %.2f x "
           "the time of 4 H n d (e+1) flops at the sgemm rate of the same "
           "repetitions (%.1f GFLOP/s) (target <= 2.5)\n", heads_time,
           heads_ratio, heads_rate);
    printf("  causal time / roofline floor, n = 2^%d, double, default chunk: "
           "%.2f (target <= 1.4); non-causal: %.2f (target <= 1.3)\n", lg_max,
           default_floor_ratio, nonc_floor_ratio);
    print_decoding_target();
    printf("  load average at the end: %.2f\n", bench_load_average());
    return 0;
}
