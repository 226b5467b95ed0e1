/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roofline.c -- the machine's ceilings and the work of the paths
 * (roofline.h).
 */
#include <cblas.h>
#include <stdlib.h>
#include "roofline.h"
#include "timing.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* 2^24 doubles an array: 128 MiB, several times any last-level cache. */
#define STREAM_LEN ((int64_t)1 << 24)
#define GEMM_N 2048
#define MAX_REPS 101

static double *alloc_or_exit(int64_t n)
{
    double *p = malloc((size_t)n * sizeof *p);
    if (!p) {
        fprintf(stderr, "benchmark: out of memory for the roofline\n");
        exit(1);
    }
    return p;
}

/* Seconds of one pass of kernel k (0 read, 1 copy, 2 triad). */
static double stream_pass(int k, double *a, double *b, double *c,
                          double *sink)
{
    int64_t n = STREAM_LEN;
    double t0 = bench_now(), s = 0;
    if (k == 0) {
        /* one dependent add per eight elements (their own adds a tree),
         * so that the adds' latency does not bound the pass (without
         * reassociation a plain sum is one add at a time) */
#pragma omp parallel for reduction(+ : s) schedule(static)
        for (int64_t i = 0; i < n; i += 8) {
            double p[8];
            for (int j = 0; j < 8; j++)
                p[j] = a[i + j];
            s += ((p[0] + p[1]) + (p[2] + p[3])) +
                 ((p[4] + p[5]) + (p[6] + p[7]));
        }
    } else if (k == 1) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++)
            b[i] = a[i];
    } else {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++)
            c[i] = a[i] + 3.0 * b[i];
    }
    double t = bench_now() - t0;
    *sink += s + b[n / 2] + c[n / 3]; /* the passes' results are used */
    return t;
}

static double gemm_seconds(size_t elem, void *a, void *b, void *c)
{
    int n = GEMM_N;
    double t0 = bench_now();
    if (elem == sizeof(float))
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1,
                    a, n, b, n, 0, c, n);
    else
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1,
                    a, n, b, n, 0, c, n);
    return bench_now() - t0;
}

void bench_roofline_stream(bench_roofline *r, int reps)
{
    reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
    r->threads = 1;
#ifdef _OPENMP
    r->threads = omp_get_max_threads();
#endif
    int64_t n = STREAM_LEN;
    double *a = alloc_or_exit(n), *b = alloc_or_exit(n), *c = alloc_or_exit(n);
    /* first touch by the threads that stream them */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        a[i] = 1.0 + (double)(i % 7), b[i] = 0.5, c[i] = 0;
    double t[3][MAX_REPS], sink = 0;
    for (int rep = -1; rep < reps; rep++) /* rep -1 warms up */
        for (int k = 0; k < 3; k++) {
            double s = stream_pass(k, a, b, c, &sink);
            if (rep >= 0)
                t[k][rep] = s;
        }
    double words = (double)n * sizeof(double);
    r->read = words / bench_median(t[0], reps);
    r->copy = 2 * words / bench_median(t[1], reps);
    r->triad = 3 * words / bench_median(t[2], reps);
    free(a), free(b), free(c);
    if (sink == 0.125) /* never: keeps the passes from being dropped */
        fprintf(stderr, "%g\n", sink);
}

bench_roofline bench_roofline_measure(size_t elem, int reps)
{
    reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
    bench_roofline r = {1, elem, 0, 0, 0, 0};
    bench_roofline_stream(&r, reps);
    /* the square GEMM of the precision, on random data */
    int64_t len = (int64_t)GEMM_N * GEMM_N;
    uint64_t seed = 5;
    double *ga = bench_random(len, &seed), *gb = bench_random(len, &seed);
    double *gc = alloc_or_exit(len);
    float *fa = NULL, *fb = NULL, *fc = NULL;
    if (elem == sizeof(float)) {
        fa = malloc((size_t)len * sizeof *fa);
        fb = malloc((size_t)len * sizeof *fb);
        fc = malloc((size_t)len * sizeof *fc);
        if (!fa || !fb || !fc) {
            fprintf(stderr, "benchmark: out of memory for the roofline\n");
            exit(1);
        }
        for (int64_t i = 0; i < len; i++)
            fa[i] = (float)ga[i], fb[i] = (float)gb[i];
    }
    double tg[MAX_REPS];
    for (int rep = -1; rep < reps; rep++) {
        double s = fa ? gemm_seconds(elem, fa, fb, fc)
                      : gemm_seconds(elem, ga, gb, gc);
        if (rep >= 0)
            tg[rep] = s;
    }
    r.gemm = 2.0 * GEMM_N * GEMM_N * (double)GEMM_N / bench_median(tg, reps);
    free(ga), free(gb), free(gc), free(fa), free(fb), free(fc);
    return r;
}

double bench_roofline_bandwidth(const bench_roofline *r)
{
    double bw = r->read > r->copy ? r->read : r->copy;
    return bw > r->triad ? bw : r->triad;
}

void bench_roofline_print(FILE *out, const bench_roofline *r)
{
    fprintf(out, "roofline (%d thread(s), measured in this run): %s "
            "2048^3 %.1f GFLOP/s; stream read %.1f, copy %.1f, triad %.1f "
            "GB/s (floor = max(flops / GEMM rate, bytes / %.1f GB/s))\n",
            r->threads, r->elem == sizeof(float) ? "sgemm" : "dgemm",
            r->gemm / 1e9, r->read / 1e9, r->copy / 1e9, r->triad / 1e9,
            bench_roofline_bandwidth(r) / 1e9);
}

double bench_roofline_floor(const bench_roofline *r, bench_work w)
{
    double tf = w.flops / r->gemm, tb = w.bytes / bench_roofline_bandwidth(r);
    return tf > tb ? tf : tb;
}

const char *bench_roofline_bound(const bench_roofline *r, bench_work w)
{
    return w.flops / r->gemm >= w.bytes / bench_roofline_bandwidth(r)
               ? "flops"
               : "bytes";
}

/* The features of rows rows: 2 wrows d a row through a projection W
 * (wrows x d); the elementwise maps' few operations are not counted. */
static double feature_flops(double rows, int64_t d, int64_t wrows)
{
    return 2.0 * rows * (double)d * (double)wrows;
}

/* Products with the lower half of a chunk's r x r square (r (r + 1) / 2
 * entries) times a width w: 2 flops an entry and column. */
static double tri(double r, double w)
{
    return r * (r + 1) * w;
}

bench_work bench_work_attention(int64_t nq, int64_t nk, int64_t d, int64_t m,
                                int64_t e, int64_t wrows, size_t elem)
{
    double me1 = (double)m * (double)(e + 1);
    bench_work w;
    w.flops = feature_flops((double)(nq + nk), d, wrows) +
              2.0 * (double)nk * me1 + 2.0 * (double)nq * me1 +
              (double)nq * (double)e;
    w.bytes = (double)elem * (double)(nq + nk) * (double)(d + e);
    return w;
}

/* A function of the chunk's rows r, summed over the chunks of n rows. */
static double over_chunks(int64_t n, int64_t c, double (*f)(double, const double *),
                          const double *par)
{
    c = c < 1 ? 1 : c;
    double full = (double)(n / c), rest = (double)(n % c);
    return full * f((double)c, par) + (rest > 0 ? f(rest, par) : 0);
}

/* par: m, e */
static double causal_chunk(double r, const double *par)
{
    double m = par[0], e = par[1];
    return 2 * r * m * e + tri(r, m) + 2 * r * m + tri(r, e + 1) +
           2 * r * m * (e + 1) + r * e;
}

bench_work bench_work_causal(int64_t n, int64_t d, int64_t m, int64_t e,
                             int64_t wrows, int64_t c, int threads,
                             size_t elem)
{
    const double par[2] = {(double)m, (double)e};
    bench_work w;
    w.flops = feature_flops(2.0 * (double)n, d, wrows) +
              over_chunks(n, c, causal_chunk, par);
    w.bytes = (double)elem * (double)n * (double)(2 * d + 2 * e);
    if (threads > 1) { /* the prefix pass over all ranges but the last */
        double pre = (double)n * (double)(threads - 1) / threads;
        w.flops += feature_flops(pre, d, wrows) +
                   2.0 * pre * (double)m * (double)(e + 1);
        w.bytes += (double)elem * pre * (double)(d + e);
    }
    return w;
}

bench_work bench_work_attention_backward(int64_t nq, int64_t nk, int64_t d,
                                         int64_t m, int64_t e, int64_t wrows,
                                         size_t elem)
{
    double me1 = (double)m * (double)(e + 1), q = (double)nq, k = (double)nk;
    bench_work w;
    /* features: the keys twice, the queries once, and the projection's
     * backward (dx and dW) for each */
    w.flops = feature_flops(2 * k + q, d, wrows) +
              2 * feature_flops(q + k, d, wrows) + 2 * k * me1 +
              4 * q * me1 + 3 * q * (double)e + 2 * k * me1 +
              2 * k * (double)m * (double)e;
    w.bytes = (double)elem *
              (k * (double)(d + e) + q * (double)(2 * d + 2 * e + 1) +
               k * (double)(d + e) + k * (double)(d + e));
    return w;
}

/* par: m, e, the share of chunks that also build a range's D */
static double backward_chunk(double r, const double *par)
{
    double m = par[0], e = par[1], e1 = e + 1, part = par[2];
    double fwd = tri(r, e1) + 2 * r * e1 * m + tri(r, m) +
                 part * 2 * r * e1 * m + 2 * r * e1 * m + 3 * r * e;
    double rev = tri(r, m) + tri(r, e1) + 2 * r * e1 * m + 2 * r * m * e +
                 tri(r, m) + tri(r, e) + 2 * r * e1 * m + 3 * r * e;
    return fwd + rev;
}

bench_work bench_work_causal_backward(int64_t n, int64_t d, int64_t m,
                                      int64_t e, int64_t wrows, int64_t c,
                                      int threads, size_t elem)
{
    double nn = (double)n;
    double pre = threads > 1 ? nn * (double)(threads - 1) / threads : 0;
    const double par[3] = {(double)m, (double)e, pre / (nn > 0 ? nn : 1)};
    bench_work w;
    w.flops = 2 * feature_flops(2 * nn, d, wrows) +
              2 * feature_flops(2 * nn, d, wrows) +
              over_chunks(n, c, backward_chunk, par) +
              feature_flops(pre, d, wrows) +
              2.0 * pre * (double)m * (double)(e + 1);
    w.bytes = (double)elem * (nn * (double)(6 * d + 7 * e + 2) +
                              pre * (double)(d + e));
    return w;
}

/* par: m, e */
static double saved_backward_chunk(double r, const double *par)
{
    double m = par[0], e = par[1], e1 = e + 1;
    return tri(r, e1) + tri(r, m) +              /* P and A            */
           2 * r * e1 * m + tri(r, m) +          /* dQ                 */
           2 * r * e1 * m + tri(r, m) +          /* dK                 */
           2 * r * m * e + tri(r, e) +           /* dV                 */
           2 * r * e1 * m + 3 * r * e;           /* D, [g h]           */
}

/* The chunk states a causal call of n rows keeps (one per chunk and the
 * final one, m (e + 1) numbers each). */
static double saved_states(int64_t n, int64_t m, int64_t e, int64_t c)
{
    c = c < 1 ? 1 : c;
    return (double)((n + c - 1) / c + 1) * (double)m * (double)(e + 1);
}

bench_work bench_work_causal_saved(int64_t n, int64_t d, int64_t m, int64_t e,
                                   int64_t wrows, int64_t c, int threads,
                                   size_t elem)
{
    bench_work w = bench_work_causal(n, d, m, e, wrows, c, threads, elem);
    w.bytes += (double)elem * saved_states(n, m, e, c);
    return w;
}

bench_work bench_work_causal_saved_backward(int64_t n, int64_t d, int64_t m,
                                            int64_t e, int64_t wrows,
                                            int64_t c, int threads,
                                            size_t elem)
{
    double nn = (double)n;
    double pre = threads > 1 ? nn * (double)(threads - 1) / threads : 0;
    const double par[2] = {(double)m, (double)e};
    bench_work w;
    w.flops = feature_flops(2 * nn, d, wrows) +
              2 * feature_flops(2 * nn, d, wrows) +
              over_chunks(n, c, saved_backward_chunk, par) +
              feature_flops(pre, d, wrows) +
              pre * (2.0 * (double)m * (double)(e + 1) + 3.0 * (double)e);
    w.bytes = (double)elem * (nn * (double)(4 * d + 4 * e + 1) +
                              pre * (double)(d + 2 * e + 1) +
                              saved_states(n, m, e, c));
    return w;
}
