/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * approx.c -- how well kernelized attention approximates softmax attention:
 * errors against the number of features m, per feature map, over repeated
 * draws of the random features (linattn_d_approx_error); and, with
 * --theory, the mean squared errors of the softmax-kernel estimators
 * against Lemma 2 of Choromanski et al. 2021 (approx_theory.c).
 *
 * Sweep output: CSV on stdout, one line per (map, m): means over the seeds
 * and their standard errors; --raw FILE adds one line per (map, m, seed).
 * Every line is flushed as it is written.  benchmarks/approx.gp plots it;
 * doc/approximation.md has the study.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "approx.h"
#include "timing.h"

const approx_map approx_maps[] = {
    {"favor", LINATTN_MAP_FAVOR, LINATTN_DRAW_ORTHO, 1},
    {"favor-iid", LINATTN_MAP_FAVOR, LINATTN_DRAW_IID, 1},
    {"favor-fixed", LINATTN_MAP_FAVOR, LINATTN_DRAW_ORTHO_FIXED, 1},
    {"favor-hyp", LINATTN_MAP_FAVOR_HYP, LINATTN_DRAW_ORTHO, 1},
    {"favor-hyp-iid", LINATTN_MAP_FAVOR_HYP, LINATTN_DRAW_IID, 1},
    {"trig", LINATTN_MAP_TRIG, LINATTN_DRAW_ORTHO, 1},
    {"trig-iid", LINATTN_MAP_TRIG, LINATTN_DRAW_IID, 1},
    {"taylor", LINATTN_MAP_TAYLOR, LINATTN_DRAW_ORTHO, 0},
    {"elu1", LINATTN_MAP_ELU1, LINATTN_DRAW_ORTHO, 0},
    {"relu", LINATTN_MAP_RELU, LINATTN_DRAW_ORTHO, 0},
    {NULL, 0, 0, 0}};

#define DEFAULT_MAPS \
    "favor,favor-iid,favor-fixed,favor-hyp,favor-hyp-iid,trig,trig-iid,taylor,elu1,relu"
#define MAX_MAPS 16

const approx_map *approx_map_find(const char *name)
{
    for (const approx_map *a = approx_maps; a->name; a++)
        if (!strcmp(a->name, name))
            return a;
    return NULL;
}

int approx_plan(linattn_d_plan **plan, const approx_map *map, int64_t d,
                int64_t e, int64_t m, uint64_t seed, double input_scale)
{
    linattn_opts o;
    linattn_opts_init(&o);
    if (map->swept) {
        o.m = m;
        o.seed = seed;
        o.draw = map->draw;
        o.input_scale = input_scale;
    }
    /* Trigonometric features are signed: their normalizers may be <= 0. */
    if (map->map == LINATTN_MAP_TRIG)
        o.denom = LINATTN_DENOM_NONZERO;
    return linattn_d_plan_create(plan, map->map, d, e, &o);
}

typedef struct {
    int64_t n, d, e, seeds, m_min, m_max, m, slope_seeds;
    double norm;
    uint64_t data_seed;
    int causal, theory;
    const char *maps, *raw;
} config;

static void usage(FILE *f, const char *prog)
{
    fprintf(f,
            "usage: %s [--n N] [--d D] [--e E] [--norm R] [--seeds S]\n"
            "          [--m-min M] [--m-max M] [--maps LIST] [--causal]\n"
            "          [--data-seed X] [--raw FILE]\n"
            "       %s --theory [--d D] [--m M] [--m-min M] [--m-max M]\n"
            "          [--seeds S] [--slope-seeds S]\n"
            "  Sweep (default): n queries and keys, rows Gaussian in direction\n"
            "  with norm R (default d^(1/4)), values N(0,1); softmax scale\n"
            "  1/sqrt(d).  m = M-min, 2 M-min, .. M-max (powers of two,\n"
            "  default 16 .. 1024) for the random-feature maps, S seeds each\n"
            "  (default 10); the other maps once, at their own m.\n"
            "  Defaults: n 512, d = e = 64, LIST %s.\n"
            "  Known maps: favor favor-iid favor-fixed favor-hyp favor-hyp-iid\n"
            "  trig trig-iid taylor elu1 relu.  CSV on stdout.\n"
            "  --theory: Lemma 2 of Choromanski et al. 2021 (kernel exp(x.y),\n"
            "  |x| = |y| = 1, x.y = -1, 0, 1) against S draws (default 20000)\n"
            "  at m = M (default 64), and the slope of the MSE over m from\n"
            "  --slope-seeds draws (default 2000); d default 16.\n",
            prog, prog, DEFAULT_MAPS);
}

/* bench_parse_int into an int64_t field. */
static int parse_i64(const char *s, long lo, long hi, int64_t *out)
{
    long v;
    if (!bench_parse_int(s, lo, hi, &v))
        return 0;
    *out = v;
    return 1;
}

static int pow2(int64_t x)
{
    return x > 0 && (x & (x - 1)) == 0;
}

/* Parses argv into c; 0 on any error. */
static int parse(int argc, char **argv, config *c)
{
    int d_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1, flag = 1;
        if (!strcmp(a, "--causal"))
            c->causal = 1;
        else if (!strcmp(a, "--theory"))
            c->theory = 1;
        else if (!v)
            return 0;
        else {
            flag = 0;
            int64_t x = 0;
            if (!strcmp(a, "--n"))
                ok = parse_i64(v, 1, 1 << 16, &c->n);
            else if (!strcmp(a, "--d"))
                ok = parse_i64(v, 1, 4096, &c->d), d_given = 1;
            else if (!strcmp(a, "--e"))
                ok = parse_i64(v, 1, 4096, &c->e);
            else if (!strcmp(a, "--seeds"))
                ok = parse_i64(v, 2, 100000000, &c->seeds);
            else if (!strcmp(a, "--slope-seeds"))
                ok = parse_i64(v, 2, 100000000, &c->slope_seeds);
            else if (!strcmp(a, "--m-min"))
                ok = parse_i64(v, 2, 1 << 20, &c->m_min) && pow2(c->m_min);
            else if (!strcmp(a, "--m-max"))
                ok = parse_i64(v, 2, 1 << 20, &c->m_max) && pow2(c->m_max);
            else if (!strcmp(a, "--m"))
                ok = parse_i64(v, 2, 1 << 20, &c->m) && c->m % 2 == 0;
            else if (!strcmp(a, "--data-seed"))
                ok = parse_i64(v, 0, LONG_MAX, &x), c->data_seed = (uint64_t)x;
            else if (!strcmp(a, "--norm")) {
                char *end;
                c->norm = strtod(v, &end);
                ok = end != v && !*end && c->norm > 0 && c->norm < 1e6;
            } else if (!strcmp(a, "--maps"))
                c->maps = v;
            else if (!strcmp(a, "--raw"))
                c->raw = v;
            else
                return 0;
        }
        if (!ok)
            return 0;
        i += !flag;
    }
    if (c->theory && !d_given)
        c->d = 16;
    return c->m_min <= c->m_max;
}

/* n rows of width d, Gaussian directions scaled to norm, row major. */
static double *rows_on_sphere(int64_t n, int64_t d, double norm, uint64_t *s)
{
    double *x = bench_random(n * d, s);
    for (int64_t i = 0; i < n; i++) {
        double ss = 0;
        for (int64_t j = 0; j < d; j++) {
            x[i * d + j] = approx_gauss(s);
            ss += x[i * d + j] * x[i * d + j];
        }
        for (int64_t j = 0; j < d; j++)
            x[i * d + j] *= norm / sqrt(ss);
    }
    return x;
}

/* The statistics the sweep reports, in CSV column order. */
enum { OUT_REL, OUT_MSE, ATTN_REL, KER_REL, KER_MSE, OUT_MAX, NSTAT };

static void stat_values(const linattn_approx_stats *st, double *x)
{
    x[OUT_REL] = st->out_rel_fro;
    x[OUT_MSE] = st->out_mse;
    x[ATTN_REL] = st->attn_rel_fro;
    x[KER_REL] = st->kernel_rel_fro;
    x[KER_MSE] = st->kernel_mse;
    x[OUT_MAX] = st->out_max_abs;
}

typedef struct {
    const config *c;
    const double *q, *k, *v;
    FILE *raw;
} sweep_data;

/* One map at one m over its seeds (one draw for the exact maps): the
 * aggregated line, and the raw lines.  Returns 0, or 1 after a message. */
static int sweep_point(const sweep_data *sd, const approx_map *mp, int64_t m)
{
    const config *c = sd->c;
    int64_t seeds = mp->swept ? c->seeds : 1, m_eff = m;
    approx_acc acc[NSTAT];
    memset(acc, 0, sizeof acc);
    for (int64_t s = 1; s <= seeds; s++) {
        linattn_d_plan *p;
        linattn_approx_stats st;
        int rc = approx_plan(&p, mp, c->d, c->e, m, (uint64_t)s, 0);
        if (!rc) {
            linattn_d_plan_dims(p, NULL, &m_eff, NULL);
            rc = linattn_d_approx_error(p, LINATTN_ROW_MAJOR, c->n, c->n, sd->q,
                                        c->d, sd->k, c->d, sd->v, c->e,
                                        1 / sqrt((double)c->d), c->causal, &st);
            linattn_d_plan_destroy(p);
        }
        if (rc) {
            fprintf(stderr, "approx: %s at m = %lld, seed %lld: %s\n", mp->name,
                    (long long)m, (long long)s, linattn_strerror(rc));
            return 1;
        }
        double x[NSTAT];
        stat_values(&st, x);
        for (int i = 0; i < NSTAT; i++)
            approx_add(&acc[i], x[i]);
        if (sd->raw) {
            fprintf(sd->raw, "%s,%lld,%lld", mp->name, (long long)m_eff,
                    (long long)s);
            for (int i = 0; i < NSTAT; i++)
                fprintf(sd->raw, ",%.6e", x[i]);
            fprintf(sd->raw, "\n");
            fflush(sd->raw);
        }
    }
    printf("%s,%lld,%lld", mp->name, (long long)m_eff, (long long)seeds);
    for (int i = 0; i < NSTAT; i++)
        printf(",%.6e,%.3e", acc[i].mean, approx_se(&acc[i]));
    printf("\n");
    fflush(stdout);
    return 0;
}

/* Splits the comma-separated list into known maps; 0 on an unknown one. */
static int map_list(const char *list, const approx_map **maps, int *count)
{
    char buf[512];
    if (strlen(list) >= sizeof buf)
        return 0;
    strcpy(buf, list);
    *count = 0;
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        const approx_map *mp = approx_map_find(t);
        if (!mp || *count == MAX_MAPS) {
            fprintf(stderr, "approx: unknown map '%s'\n", t);
            return 0;
        }
        maps[(*count)++] = mp;
    }
    return *count > 0;
}

static int sweep(const config *c)
{
    const approx_map *maps[MAX_MAPS];
    int nmaps;
    if (!map_list(c->maps, maps, &nmaps))
        return 2;
    FILE *raw = NULL;
    if (c->raw && !(raw = fopen(c->raw, "w"))) {
        perror(c->raw);
        return 1;
    }
    uint64_t s = c->data_seed;
    double *q = rows_on_sphere(c->n, c->d, c->norm, &s);
    double *k = rows_on_sphere(c->n, c->d, c->norm, &s);
    double *v = bench_random(c->n * c->e, &s);
    for (int64_t i = 0; i < c->n * c->e; i++)
        v[i] = approx_gauss(&s);
    const char *names[NSTAT] = {"out_rel", "out_mse", "attn_rel", "kernel_rel",
                                "kernel_mse", "out_max"};
    printf("# linattn %s approx: n = %lld, d = %lld, e = %lld, |q| = |k| = %g, "
           "scale 1/sqrt(d), %s, data seed %llu\n",
           linattn_version_string(), (long long)c->n, (long long)c->d,
           (long long)c->e, c->norm, c->causal ? "causal" : "non-causal",
           (unsigned long long)c->data_seed);
    printf("map,m,seeds");
    for (int i = 0; i < NSTAT; i++)
        printf(",%s,%s_se", names[i], names[i]);
    printf("\n");
    if (raw) {
        fprintf(raw, "map,m,seed");
        for (int i = 0; i < NSTAT; i++)
            fprintf(raw, ",%s", names[i]);
        fprintf(raw, "\n");
    }
    sweep_data sd = {c, q, k, v, raw};
    int rc = 0;
    double t0 = bench_now();
    for (int i = 0; i < nmaps && !rc; i++)
        for (int64_t m = c->m_min; m <= c->m_max && !rc; m *= 2) {
            rc = sweep_point(&sd, maps[i], m);
            if (!maps[i]->swept)
                break;
        }
    fflush(stdout);
    fprintf(stderr, "approx: %.1f s\n", bench_now() - t0);
    if (raw && fclose(raw)) {
        perror(c->raw);
        rc = 1;
    }
    free(q), free(k), free(v);
    return rc;
}

int main(int argc, char **argv)
{
    /* seeds 0: the mode's default (10 for the sweep, 20000 for --theory) */
    config c = {512, 64, 64, 0, 16, 1024, 64, 2000, 0, 1, 0, 0,
                DEFAULT_MAPS, NULL};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout, argv[0]);
            return 0;
        }
    if (!parse(argc, argv, &c)) {
        usage(stderr, argv[0]);
        return 2;
    }
    if (c.theory)
        return approx_theory(c.d, c.m, c.m_min, c.m_max,
                             c.seeds ? c.seeds : 20000, c.slope_seeds);
    if (c.norm == 0)
        c.norm = pow((double)c.d, 0.25);
    if (!c.seeds)
        c.seeds = 10;
    return sweep(&c);
}
