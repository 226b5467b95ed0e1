/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_grad.c -- the backward calls against the forward calls, and the
 * backward's peak memory beyond its inputs and gradients.
 *
 *   bench_grad                 n = 2^20, d = e = 64, double, elu+1:
 *                              the point (target ratio <= 2.5)
 *   bench_grad --map identity  any map: identity, elu1, relu, favor, ...
 *
 * Options: --n K (log2 n, default 20), --reps R (default 5), --map M,
 * --d D, --e E, --mem-n K1,K2 (the sizes the memory is measured at,
 * default 16,20).  Each repetition times the forward call
 * (attention_forward; state_update + state_query where the backward is
 * given the state; causal_forward; causal_ex keeping its chunk states,
 * c+saved, whose backward reads them) and the backward call back to back
 * on each path; times are medians, ratios medians of the
 * per-repetition ratios (the machine is shared and drifts).  The memory
 * rise is measured with every input and gradient already resident: what
 * the call itself allocates and touches (bench_peak_*; c+saved's chunk
 * states are the caller's, allocated before).  Each path's
 * forward and backward also print their time over the roofline floor
 * (roofline.h, measured in the same run).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "linattn.h"
#include "machine.h"
#include "roofline.h"
#include "timing.h"

#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
char *openblas_get_corename(void);
#endif

#define MAX_REPS 51

static const struct {
    const char *name;
    int map;
} maps[] = {{"identity", LINATTN_MAP_IDENTITY}, {"elu1", LINATTN_MAP_ELU1},
            {"relu", LINATTN_MAP_RELU},         {"favor", LINATTN_MAP_FAVOR},
            {"hyp", LINATTN_MAP_FAVOR_HYP},     {"trig", LINATTN_MAP_TRIG},
            {"taylor", LINATTN_MAP_TAYLOR}};
#define NMAPS ((int)(sizeof maps / sizeof *maps))

typedef struct {
    int lg, reps, map, mem_lg[2];
    int64_t d, e;
    const char *name;
} config;

static void die(int st, const char *what)
{
    if (st) {
        fprintf(stderr, "bench_grad: %s: %s\n", what, linattn_strerror(st));
        exit(1);
    }
}

/* One problem's arrays, row major, touched (resident) before timing. */
typedef struct {
    int64_t n;
    double *q, *k, *v, *g, *out, *den, *dq, *dk, *dv;
} arrays;

static double *zeros(int64_t count)
{
    double *a = calloc((size_t)count, sizeof *a);
    if (!a) {
        fprintf(stderr, "bench_grad: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < count; i++)
        a[i] = 0; /* resident */
    return a;
}

static arrays arrays_new(int64_t n, int64_t d, int64_t e)
{
    uint64_t s = 1;
    arrays a = {n, bench_random(n * d, &s), bench_random(n * d, &s),
                bench_random(n * e, &s), bench_random(n * e, &s),
                zeros(n * e), zeros(n), zeros(n * d), zeros(n * d),
                zeros(n * e)};
    return a;
}

static void arrays_free(arrays *a)
{
    free(a->q), free(a->k), free(a->v), free(a->g), free(a->out);
    free(a->den), free(a->dq), free(a->dk), free(a->dv);
}

/* The paths timed: non-causal (the one-call forward; the backward
 * rebuilds the keys' state), non-causal with the state kept (the forward
 * as state_update + state_query, whose state the backward takes),
 * causal, and causal with the forward's chunk states kept for the
 * backward (extras.chunk_states: memory O(n m e / C)). */
enum { NONCAUSAL, WITH_STATE, CAUSAL, SAVED, PATHS };
static const char *path_name[PATHS] = {"noncausal", "nc+state", "causal",
                                       "c+saved"};

/* The saved path's chunk states (allocated on first use, per n). */
static double *saved_states;
static int64_t saved_n = -1;

static double *states_for(const linattn_d_plan *p, int64_t n)
{
    if (saved_n != n) {
        int64_t len = 0;
        die(linattn_d_causal_chunk_states_size(p, n, &len),
            "causal_chunk_states_size");
        free(saved_states);
        saved_states = zeros(len);
        saved_n = n;
    }
    return saved_states;
}

static int forward(const linattn_d_plan *p, int path, arrays *a, int64_t d,
                   int64_t e, linattn_d_state *s)
{
    int64_t n = a->n;
    int st;
    linattn_d_extras ex;
    switch (path) {
    case SAVED:
        linattn_d_extras_init(&ex);
        ex.den = a->den;
        ex.chunk_states = states_for(p, n);
        return linattn_d_causal_ex(p, LINATTN_ROW_MAJOR, n, a->q, d, a->k, d,
                                   a->v, e, a->out, e, &ex, NULL);
    case CAUSAL:
        return linattn_d_causal_forward(p, LINATTN_ROW_MAJOR, n, a->q, d, a->k,
                                        d, a->v, e, a->out, e, a->den, NULL);
    case WITH_STATE:
        st = linattn_d_state_reset(s);
        if (!st)
            st = linattn_d_state_update(s, LINATTN_ROW_MAJOR, n, a->k, d, a->v,
                                        e);
        if (!st)
            st = linattn_d_state_query(s, LINATTN_ROW_MAJOR, n, a->q, d, a->out,
                                       e, NULL, 0, a->den, NULL);
        return st;
    default:
        return linattn_d_attention_forward(p, LINATTN_ROW_MAJOR, n, n, a->q, d,
                                           a->k, d, a->v, e, a->out, e, a->den,
                                           NULL);
    }
}

static int backward(const linattn_d_plan *p, int path, arrays *a, int64_t d,
                    int64_t e, const linattn_d_state *s)
{
    int64_t n = a->n;
    if (path == SAVED) {
        linattn_d_extras ex;
        linattn_d_extras_init(&ex);
        ex.chunk_states = states_for(p, n);
        return linattn_d_causal_backward_ex(
            p, LINATTN_ROW_MAJOR, n, a->q, d, a->k, d, a->v, e, a->out, e,
            a->den, a->g, e, a->dq, d, a->dk, d, a->dv, e, NULL, 1, NULL, &ex,
            NULL);
    }
    if (path == CAUSAL)
        return linattn_d_causal_backward(p, LINATTN_ROW_MAJOR, n, a->q, d, a->k,
                                         d, a->v, e, a->out, e, a->den, a->g,
                                         e, a->dq, d, a->dk, d, a->dv, e, NULL,
                                         1, NULL, NULL);
    return linattn_d_attention_backward(p, LINATTN_ROW_MAJOR, n, n, a->q, d,
                                        a->k, d, a->v, e, a->out, e, a->den,
                                        a->g, e, a->dq, d, a->dk, d, a->dv, e,
                                        NULL, 1, NULL,
                                        path == WITH_STATE ? s : NULL, NULL);
}

/* The floors of a path's forward and backward calls at n rows. */
static void path_floors(const bench_roofline *roof, const linattn_d_plan *p,
                        int path, int64_t n, double *ff, double *fb)
{
    int64_t d, m, e, rows, block;
    linattn_d_plan_dims(p, &d, &m, &e);
    linattn_d_plan_weights(p, LINATTN_ROW_MAJOR, NULL, 0, &rows);
    linattn_d_plan_block(p, &block);
    int64_t c = bench_default_chunk(sizeof(double));
    int t = bench_split_threads(n, block > c ? block : c, roof->threads);
    if (path == SAVED) {
        *ff = bench_roofline_floor(
            roof, bench_work_causal_saved(n, d, m, e, rows, c, t, 8));
        *fb = bench_roofline_floor(
            roof, bench_work_causal_saved_backward(n, d, m, e, rows, c, t, 8));
        return;
    }
    if (path == CAUSAL) {
        *ff = bench_roofline_floor(roof, bench_work_causal(n, d, m, e, rows, c,
                                                           t, 8));
        *fb = bench_roofline_floor(
            roof, bench_work_causal_backward(n, d, m, e, rows, c, t, 8));
        return;
    }
    bench_work b = bench_work_attention_backward(n, n, d, m, e, rows, 8);
    if (path == WITH_STATE) { /* the backward takes the state: no rebuild */
        b.flops -= 2.0 * n * m * (e + 1) + 2.0 * n * d * rows;
        b.bytes -= 8.0 * n * (d + e);
    }
    *ff = bench_roofline_floor(roof, bench_work_attention(n, n, d, m, e, rows,
                                                          8));
    *fb = bench_roofline_floor(roof, b);
}

/* Interleaved timing of forward and backward on every path. */
static void timing(const config *c, const linattn_d_plan *p,
                   linattn_d_state *s, const bench_roofline *roof)
{
    int64_t n = (int64_t)1 << c->lg;
    arrays a = arrays_new(n, c->d, c->e);
    double tf[PATHS][MAX_REPS], tb[PATHS][MAX_REPS], ratio[PATHS][MAX_REPS];
    for (int r = -1; r < c->reps; r++)
        for (int path = 0; path < PATHS; path++) {
            double t0 = bench_now();
            die(forward(p, path, &a, c->d, c->e, s), "forward");
            double t1 = bench_now();
            die(backward(p, path, &a, c->d, c->e, s), "backward");
            double t2 = bench_now();
            if (r >= 0) { /* the first round warms up */
                tf[path][r] = t1 - t0, tb[path][r] = t2 - t1;
                ratio[path][r] = tb[path][r] / tf[path][r];
            }
        }
    printf("%-10s %8s %12s %12s %14s %10s %10s %8s %8s\n", "path", "n",
           "forward_s", "backward_s", "backward/fwd", "floor_f_s",
           "floor_b_s", "xf_floor", "xb_floor");
    for (int path = 0; path < PATHS; path++) {
        double ff, fb;
        path_floors(roof, p, path, n, &ff, &fb);
        double tfm = bench_median(tf[path], c->reps);
        double tbm = bench_median(tb[path], c->reps);
        printf("%-10s %8lld %12.4f %12.4f %14.2f %10.4f %10.4f %8.2f %8.2f\n",
               path_name[path], (long long)n, tfm, tbm,
               bench_median(ratio[path], c->reps), ff, fb, tfm / ff,
               tbm / fb);
    }
    arrays_free(&a);
}

/* The peak resident rise of one backward call at n = 2^lg. */
static int64_t backward_peak(const linattn_d_plan *p, int path, int lg,
                             int64_t d, int64_t e, linattn_d_state *s)
{
    arrays a = arrays_new((int64_t)1 << lg, d, e);
    die(forward(p, path, &a, d, e, s), "forward");
    die(backward(p, path, &a, d, e, s), "backward"); /* BLAS's buffers */
    bench_peak_begin();
    die(backward(p, path, &a, d, e, s), "backward");
    int64_t rise = bench_peak_end();
    arrays_free(&a);
    return rise;
}

static int parse(int argc, char **argv, config *c)
{
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(o, "--n") && v && bench_parse_int(v, 1, 30, &x))
            c->lg = (int)x, i++;
        else if (!strcmp(o, "--reps") && v &&
                 bench_parse_int(v, 1, MAX_REPS, &x))
            c->reps = (int)x, i++;
        else if (!strcmp(o, "--d") && v && bench_parse_int(v, 1, 1024, &x))
            c->d = x, i++;
        else if (!strcmp(o, "--e") && v && bench_parse_int(v, 1, 1024, &x))
            c->e = x, i++;
        else if (!strcmp(o, "--mem-n") && v &&
                 sscanf(v, "%d,%d", &c->mem_lg[0], &c->mem_lg[1]) == 2 &&
                 c->mem_lg[0] >= 1 && c->mem_lg[0] <= 30 && c->mem_lg[1] >= 1 &&
                 c->mem_lg[1] <= 30)
            i++;
        else if (!strcmp(o, "--map") && v) {
            int k = 0;
            while (k < NMAPS && strcmp(v, maps[k].name))
                k++;
            if (k == NMAPS)
                return 0;
            c->map = maps[k].map, c->name = maps[k].name, i++;
        } else
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    config c = {20, 5, LINATTN_MAP_ELU1, {16, 20}, 64, 64, "elu1"};
    if (!parse(argc, argv, &c)) {
        fprintf(stderr,
                "usage: %s [--n K] [--reps R] [--map identity|elu1|relu|favor|"
                "hyp|trig|taylor]\n          [--d D] [--e E] [--mem-n K1,K2]\n",
                argv[0]);
        return 2;
    }
    bench_malloc_returns_memory();
    linattn_opts o;
    linattn_opts_init(&o);
    if (c.map == LINATTN_MAP_IDENTITY || c.map == LINATTN_MAP_TRIG)
        o.denom = LINATTN_DENOM_NONZERO;
    linattn_d_plan *p;
    die(linattn_d_plan_create(&p, c.map, c.d, c.e, &o), "plan");
    int64_t m;
    linattn_d_plan_dims(p, NULL, &m, NULL);
    const char *core = "unknown";
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    core = openblas_get_corename();
#endif
    printf("bench_grad: map %s, d = %lld, e = %lld, m = %lld, double, %d "
           "threads, BLAS core %s\n", c.name, (long long)c.d, (long long)c.e,
           (long long)m, bench_max_threads(), core);
    bench_roofline roof = bench_roofline_measure(sizeof(double), c.reps);
    bench_roofline_print(stdout, &roof);
    linattn_d_state *s;
    die(linattn_d_state_create(&s, p), "state");
    timing(&c, p, s, &roof);
    printf("\npeak memory of one backward call beyond its inputs and "
           "gradients (bytes)\n%-10s %12s %12s\n", "path", "n = 2^a",
           "n = 2^b");
    for (int path = 0; path < PATHS; path++)
        printf("%-10s %12lld %12lld   (a = %d, b = %d)\n", path_name[path],
               (long long)backward_peak(p, path, c.mem_lg[0], c.d, c.e, s),
               (long long)backward_peak(p, path, c.mem_lg[1], c.d, c.e, s),
               c.mem_lg[0], c.mem_lg[1]);
    linattn_d_state_destroy(s);
    linattn_d_plan_destroy(p);
    free(saved_states);
    return 0;
}
