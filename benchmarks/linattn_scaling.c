/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * linattn_scaling.c -- linattn-scaling, the scaling study: how time and
 * memory grow with n for naive linear attention, softmax attention, and
 * factored non-causal and causal linear attention, with the machine's
 * ceilings measured in the same run.  Writes a CSV row per path and size
 * as each size finishes, and a summary (slopes, crossover, ratios) at the
 * end; benchmarks/scaling.gp draws the CSV.  Options: --help, and
 * benchmarks/README.md.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "linattn.h"
#include "machine.h"
#include "measure.h"
#include "scaling.h"
#include "scaling_report.h"
#include "timing.h"

/* Feature maps by name: a new map is one line. */
static const struct {
    const char *name;
    int map;
} map_table[] = {
    {"identity", LINATTN_MAP_IDENTITY},
    {"elu1", LINATTN_MAP_ELU1},
    {"relu", LINATTN_MAP_RELU},
    {"favor", LINATTN_MAP_FAVOR},
    {"favor-hyp", LINATTN_MAP_FAVOR_HYP},
    {"trig", LINATTN_MAP_TRIG},
    {"taylor", LINATTN_MAP_TAYLOR},
};

/* The precisions, behind one interface (scaling.h). */
typedef struct {
    const char *name, *gemm;
    size_t elem;
    int (*create)(scaling **, const scaling_cfg *, int64_t);
    void (*dims)(const scaling *, int64_t *, int64_t *, int64_t *, int64_t *);
    int (*measure)(scaling *, int64_t, unsigned, scaling_result[][SP_COUNT]);
    void (*destroy)(scaling *);
    double (*gemm_rate)(int, int);
} precision;

static const precision precisions[] = {
    {"double", "dgemm", sizeof(double), bench_d_scaling_create,
     bench_d_scaling_dims, bench_d_scaling_measure, bench_d_scaling_destroy,
     bench_d_gemm_rate},
    {"float", "sgemm", sizeof(float), bench_s_scaling_create,
     bench_s_scaling_dims, bench_s_scaling_measure, bench_s_scaling_destroy,
     bench_s_gemm_rate},
};

#define QUADRATIC (1u << SP_NAIVE | 1u << SP_SOFTMAX | 1u << SP_NAIVE_CAUSAL)
#define DEFAULT_PATHS \
    (1u << SP_NAIVE | 1u << SP_SOFTMAX | 1u << SP_FACTORED | 1u << SP_CAUSAL | \
     1u << SP_BARE)

typedef struct {
    const precision *prec;
    const char *map_name;
    scaling_cfg cfg;
    int n_min, n_max, naive_max;
    double budget, fit_time;
    unsigned paths;
    const char *csv, *summary;
} options;

/* The installed name (argv[0] may be libtool's wrapper path). */
#define PROG "linattn-scaling"

static void usage(FILE *out)
{
    fprintf(out,
        "usage: " PROG " [options]\n"
        "Times attention across n = 2^n-min .. 2^n-max and writes a CSV row\n"
        "per path and size as each size finishes, then a summary.\n"
        "  --map NAME        feature map: identity, elu1, relu, favor,\n"
        "                    favor-hyp, trig, taylor (default elu1)\n"
        "  --precision P     double or float (default double)\n"
        "  --d D --e E       query/key and value widths (default 64, 64)\n"
        "  --m M             features (default 0: the map's own count)\n"
        "  --batch B --heads H\n"
        "                    independent problems per call (default 1, 1)\n"
        "  --threads LIST    thread counts, interleaved per repetition\n"
        "                    (e.g. 1,2; default: OMP_NUM_THREADS or all cores)\n"
        "  --reps R          repetitions after a warm-up (default 3)\n"
        "  --n-min K --n-max K\n"
        "                    n = 2^K, K from 0 to %d (default 4, 20)\n"
        "  --naive-max K     quadratic paths stop at 2^K (default 16)\n"
        "  --budget SEC      and stop where a call is predicted to take more\n"
        "                    than SEC seconds, or more memory than is free\n"
        "                    (default 2.5)\n"
        "  --paths LIST      of naive, softmax, factored, causal, naive_causal,\n"
        "                    bare_gemm (default all but naive_causal)\n"
        "  --block B --chunk C\n"
        "                    the plan's block and causal chunk (0: default)\n"
        "  --fit-time SEC    slopes fit the sizes whose calls take SEC or more\n"
        "                    (default 0.01: shorter ones measure overheads)\n"
        "  --csv FILE        (default scaling.csv)\n"
        "  --summary FILE    (default: the CSV's name with -summary)\n"
        "  --help, --version\n"
        "Ctrl-C stops after the current call: the CSV keeps every finished\n"
        "size and the summary covers them; a second Ctrl-C quits at once.\n",
        SCALING_MAX_LG);
}

/* Parses a finite number of seconds > 0. */
static int parse_seconds(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0) || !isfinite(v))
        return 0;
    *out = v;
    return 1;
}

static int parse_threads(const char *s, scaling_cfg *c)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return 0;
    strcpy(buf, s);
    c->nthreads = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        long v;
        if (c->nthreads == SCALING_MAX_THREADS || !bench_parse_int(tok, 1, 1024, &v))
            return 0;
        c->threads[c->nthreads++] = (int)v;
    }
    return c->nthreads > 0;
}

static int parse_paths(const char *s, unsigned *paths)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return 0;
    strcpy(buf, s);
    *paths = 0;
    for (char *save, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int p = 0;
        while (p < SP_COUNT && strcmp(tok, scaling_path_names[p]))
            p++;
        if (p == SP_COUNT)
            return 0;
        *paths |= 1u << p;
    }
    return *paths != 0;
}

/* 0 on success, 1 for --help, 2 for --version, -1 with a message on
 * stderr. */
static int parse_args(int argc, char **argv, options *o)
{
    enum { O_MAP = 256, O_PREC, O_D, O_E, O_M, O_BATCH, O_HEADS, O_THREADS,
           O_REPS, O_NMIN, O_NMAX, O_NAIVEMAX, O_BUDGET, O_PATHS, O_BLOCK,
           O_CHUNK, O_FITTIME, O_CSV, O_SUMMARY };
    static const struct option longopts[] = {
        {"map", 1, 0, O_MAP},         {"precision", 1, 0, O_PREC},
        {"d", 1, 0, O_D},             {"e", 1, 0, O_E},
        {"m", 1, 0, O_M},             {"batch", 1, 0, O_BATCH},
        {"heads", 1, 0, O_HEADS},     {"threads", 1, 0, O_THREADS},
        {"reps", 1, 0, O_REPS},       {"n-min", 1, 0, O_NMIN},
        {"n-max", 1, 0, O_NMAX},      {"naive-max", 1, 0, O_NAIVEMAX},
        {"budget", 1, 0, O_BUDGET},   {"paths", 1, 0, O_PATHS},
        {"block", 1, 0, O_BLOCK},     {"chunk", 1, 0, O_CHUNK},
        {"fit-time", 1, 0, O_FITTIME},  {"csv", 1, 0, O_CSV},
        {"summary", 1, 0, O_SUMMARY}, {"help", 0, 0, 'h'},
        {"version", 0, 0, 'V'},       {0, 0, 0, 0}};
    scaling_cfg *c = &o->cfg;
    *o = (options){&precisions[0], "elu1", {0}, 4, 20, 16, 2.5, 0.01,
                   DEFAULT_PATHS, "scaling.csv", NULL};
    c->map = LINATTN_MAP_ELU1;
    c->d = c->e = 64;
    c->batch = c->heads = 1;
    c->reps = 3;
    c->nthreads = 1;
    c->threads[0] = bench_max_threads();
    int opt;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        long v = 0;
        const char *a = optarg;
        int ok = 1;
        switch (opt) {
        case 'h':
            return 1;
        case 'V':
            return 2;
        case O_MAP: {
            size_t i = 0, count = sizeof map_table / sizeof map_table[0];
            while (i < count && strcmp(a, map_table[i].name))
                i++;
            ok = i < count;
            if (ok)
                c->map = map_table[i].map, o->map_name = map_table[i].name;
            break;
        }
        case O_PREC:
            ok = !strcmp(a, "double") || !strcmp(a, "float");
            o->prec = &precisions[!strcmp(a, "float")];
            break;
        case O_D: ok = bench_parse_int(a, 1, 1 << 16, &v), c->d = v; break;
        case O_E: ok = bench_parse_int(a, 1, 1 << 16, &v), c->e = v; break;
        case O_M: ok = bench_parse_int(a, 0, 1 << 20, &v), c->m = v; break;
        case O_BATCH: ok = bench_parse_int(a, 1, 1 << 20, &v), c->batch = v; break;
        case O_HEADS: ok = bench_parse_int(a, 1, 1 << 20, &v), c->heads = v; break;
        case O_THREADS: ok = parse_threads(a, c); break;
        case O_REPS: ok = bench_parse_int(a, 1, SCALING_MAX_REPS, &v), c->reps = (int)v; break;
        case O_NMIN: ok = bench_parse_int(a, 0, SCALING_MAX_LG, &v), o->n_min = (int)v; break;
        case O_NMAX: ok = bench_parse_int(a, 0, SCALING_MAX_LG, &v), o->n_max = (int)v; break;
        case O_NAIVEMAX: ok = bench_parse_int(a, 0, SCALING_MAX_LG, &v), o->naive_max = (int)v; break;
        case O_BUDGET: ok = parse_seconds(a, &o->budget); break;
        case O_FITTIME: ok = parse_seconds(a, &o->fit_time); break;
        case O_PATHS: ok = parse_paths(a, &o->paths); break;
        case O_BLOCK: ok = bench_parse_int(a, 0, 1 << 24, &v), c->block = v; break;
        case O_CHUNK: ok = bench_parse_int(a, 0, 1 << 16, &v), c->chunk = v; break;
        case O_CSV: o->csv = a; break;
        case O_SUMMARY: o->summary = a; break;
        default:
            if (optopt >= O_MAP)
                fprintf(stderr, PROG ": %s needs a value\n", argv[optind - 1]);
            else if (optopt)
                fprintf(stderr, PROG ": unknown option -%c\n", optopt);
            else
                fprintf(stderr, PROG ": unknown option %s\n", argv[optind - 1]);
            return -1;
        }
        if (!ok) {
            const struct option *lo = longopts;
            while (lo->val != opt)
                lo++;
            fprintf(stderr, PROG ": invalid value '%s' for --%s\n", a, lo->name);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
        return -1;
    }
    if (o->n_min > o->n_max) {
        fprintf(stderr, PROG ": --n-min %d is above --n-max %d\n", o->n_min,
                o->n_max);
        return -1;
    }
    return 0;
}

/* ---- memory: refuse up front what the machine cannot hold ---- */

static double gib(double bytes)
{
    return bytes / (1024.0 * 1024 * 1024);
}

/* Bytes of the data arrays for sizes up to 2^lg: Q, K, V and out. */
static double data_need(const options *o, int lg)
{
    const scaling_cfg *c = &o->cfg;
    return ldexp(1, lg) * (double)(2 * c->d + 2 * c->e) * (double)o->prec->elem *
           (double)c->batch * (double)c->heads;
}

/* An upper estimate of a quadratic path's workspace at 2^lg: phi(K) and a
 * block of n scores per thread (the library caps the block lower). */
static double quadratic_need(const options *o, int lg, int threads)
{
    const scaling_cfg *c = &o->cfg;
    double n = ldexp(1, lg), m = (double)(c->m ? c->m : c->d);
    double rows = n < 1024 ? n : 1024;
    return threads * (n * m + rows * n + rows * m) * (double)o->prec->elem;
}

static int max_threads_of(const scaling_cfg *c)
{
    int t = 1;
    for (int i = 0; i < c->nthreads; i++)
        t = c->threads[i] > t ? c->threads[i] : t;
    return t;
}

/* ---- Ctrl-C: stop at the next call; a second one quits at once ---- */

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    static const char msg[] =
        "\nlinattn-scaling: stopping after the current call (again to quit "
        "now); the CSV keeps every finished size\n";
    if (stop_flag) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_flag = 1;
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
        /* nothing to be done about it inside a handler */
    }
}

static void catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* ---- the study ---- */

/* The quadratic paths to run at 2^lg: within --naive-max, predicted (from
 * the size before, times 4) within the budget, and within free memory.
 * Notes each path it drops, once. */
static unsigned quadratic_paths(const options *o, const scaling_log *log,
                                int lg, unsigned *dropped, int64_t avail)
{
    unsigned run = 0;
    for (int p = 0; p < SP_COUNT; p++) {
        unsigned bit = 1u << p;
        if (!(o->paths & bit & QUADRATIC) || (*dropped & bit))
            continue;
        const char *why = NULL;
        char buf[160];
        double prev = 0;
        for (int ti = 0; lg > log->n_min && log->res[lg - 1] &&
                         ti < log->cfg.nthreads; ti++)
            if (log->res[lg - 1][ti][p].ran) {
                double t = scaling_median(log->res[lg - 1][ti][p].t,
                                          log->cfg.reps);
                prev = t > prev ? t : prev;
            }
        if (lg > o->naive_max) {
            why = "beyond --naive-max";
        } else if (4 * prev > o->budget) {
            snprintf(buf, sizeof buf, "predicted %.3g s per call, over the "
                     "--budget of %.3g s", 4 * prev, o->budget);
            why = buf;
        } else if (avail >= 0 && data_need(o, o->n_max) +
                   quadratic_need(o, lg, max_threads_of(&o->cfg)) > 0.9 * avail) {
            snprintf(buf, sizeof buf, "its workspace, about %.2f GiB, beyond "
                     "the memory free", gib(quadratic_need(o, lg, max_threads_of(&o->cfg))));
            why = buf;
        }
        if (why) {
            *dropped |= bit;
            printf("note: %s skipped from n = 2^%d on: %s\n",
                   scaling_path_names[p], lg, why);
        } else {
            run |= bit;
        }
    }
    return run;
}

static const char *status_text(int st)
{
    if (st == SCALING_ENOMEM)
        return "out of memory";
    return linattn_strerror(st);
}

int main(int argc, char **argv)
{
    options o;
    int pa = parse_args(argc, argv, &o);
    if (pa == 2) {
        printf(PROG " (linattn) %s\n", linattn_version_string());
        return 0;
    }
    if (pa > 0) {
        usage(stdout);
        return 0;
    }
    if (pa < 0) {
        fprintf(stderr, "usage: " PROG " [options]  (" PROG " --help lists "
                "them)\n");
        return 2;
    }
    char summary_path[4096];
    if (!o.summary) {
        size_t len = strlen(o.csv);
        int cut = len > 4 && !strcmp(o.csv + len - 4, ".csv") ? 4 : 0;
        snprintf(summary_path, sizeof summary_path, "%.*s-summary.csv",
                 (int)(len - (size_t)cut), o.csv);
        o.summary = summary_path;
    }
    int64_t avail = bench_mem_available();
    double need = data_need(&o, o.n_max);
    if (avail >= 0 && need > 0.9 * (double)avail) {
        fprintf(stderr, PROG ": n = 2^%d needs about %.2f GiB for its data "
                "(%lld x %lld problems, Q, K, V and out in %s), and %.2f GiB "
                "is available: lower --n-max\n", o.n_max, gib(need),
                (long long)o.cfg.batch, (long long)o.cfg.heads, o.prec->name,
                gib((double)avail));
        return 1;
    }
    bench_malloc_returns_memory();
    stop_flag = 0;
    o.cfg.stop = &stop_flag;
    scaling *study = NULL;
    int st = o.prec->create(&study, &o.cfg, (int64_t)1 << o.n_max);
    if (st) {
        fprintf(stderr, PROG ": cannot set up the study: %s\n",
                status_text(st));
        return 1;
    }
    scaling_log log;
    memset(&log, 0, sizeof log);
    log.precision = o.prec->name;
    log.gemm_name = o.prec->gemm;
    log.map_name = o.map_name;
    log.elem = o.prec->elem;
    log.cfg = o.cfg;
    o.prec->dims(study, &log.cfg.m, &log.cfg.block, &log.wrows,
                 &log.cfg.chunk);
    o.cfg.m = log.cfg.m; /* the map's own count, for the estimates */
    if ((o.paths & 1u << SP_BARE) && o.cfg.m != o.cfg.d) {
        /* measure.c times GEMMs on the inputs themselves: m = d only */
        printf("note: bare_gemm skipped: it models maps with m = d, this "
               "one has m = %lld\n", (long long)o.cfg.m);
        o.paths &= ~(1u << SP_BARE);
    }
    log.n_min = o.n_min, log.n_max = o.n_max, log.fit_time = o.fit_time;
    int fd = scaling_csv_open(o.csv);
    if (fd < 0) {
        fprintf(stderr, PROG ": %s: %s\n", o.csv, strerror(errno));
        o.prec->destroy(study);
        return 1;
    }
    catch_signals();
    printf("linattn %s scaling study: %s, %s, d = %lld, m = %lld, e = %lld, "
           "batch %lld x heads %lld, block %lld, median of %d\n",
           linattn_version_string(), o.prec->name, o.map_name,
           (long long)o.cfg.d, (long long)log.cfg.m, (long long)o.cfg.e,
           (long long)o.cfg.batch, (long long)o.cfg.heads,
           (long long)log.cfg.block, o.cfg.reps);
    bench_platform_print(stdout, &log.platform);
    for (int ti = 0; ti < o.cfg.nthreads && !stop_flag; ti++) {
        bench_set_threads(o.cfg.threads[ti]);
        log.gemm_rate[ti] = o.prec->gemm_rate(2048, o.cfg.reps);
        printf("2048^3 %s on %d thread(s): %.1f GFLOP/s\n", o.prec->gemm,
               o.cfg.threads[ti], log.gemm_rate[ti]);
        /* the roofline's ceilings: that rate and the streaming bandwidth */
        bench_roofline *r = &log.roof[ti];
        bench_roofline_stream(r, o.cfg.reps);
        r->elem = o.prec->elem;
        r->gemm = log.gemm_rate[ti] * 1e9;
        bench_roofline_print(stdout, r);
    }
    printf("CSV: %s (a row per path and size, as each size finishes)\n", o.csv);
    fflush(stdout);
    double t0 = bench_now();
    unsigned dropped = 0;
    int status = 0;
    for (int lg = o.n_min; lg <= o.n_max && !stop_flag && !status; lg++) {
        unsigned paths = (o.paths & ~QUADRATIC) |
                         quadratic_paths(&o, &log, lg, &dropped, avail);
        if (!paths)
            continue;
        scaling_result(*res)[SP_COUNT] = malloc(sizeof(*res) * (size_t)o.cfg.nthreads);
        if (!res) {
            status = SCALING_ENOMEM;
            break;
        }
        st = o.prec->measure(study, (int64_t)1 << lg, paths, res);
        if (st) {
            free(res);
            if (st != SCALING_STOPPED)
                status = st;
            break;
        }
        log.res[lg] = res;
        if (scaling_csv_rows(fd, &log, lg)) {
            fprintf(stderr, PROG ": %s: %s\n", o.csv, strerror(errno));
            status = -1;
            break;
        }
        scaling_progress(stdout, &log, lg, bench_now() - t0);
    }
    int csv_bad = close(fd) != 0;
    if (status > 0 || status == SCALING_ENOMEM)
        fprintf(stderr, PROG ": a call failed: %s\n", status_text(status));
    if (scaling_summary(&log, o.summary, stdout)) {
        fprintf(stderr, PROG ": %s: %s\n", o.summary, strerror(errno));
        csv_bad = 1;
    } else {
        printf("summary: %s\n", o.summary);
    }
    for (int lg = 0; lg <= SCALING_MAX_LG; lg++)
        free(log.res[lg]);
    o.prec->destroy(study);
    if (stop_flag) {
        printf("interrupted: %s holds every size that finished\n", o.csv);
        return 130;
    }
    return status || csv_bad ? 1 : 0;
}
