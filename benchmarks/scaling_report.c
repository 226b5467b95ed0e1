/* SPDX-License-Identifier: BSD-3-Clause */
/* scaling_report.c -- CSV rows, progress, fits and summary (scaling_report.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scaling_report.h"

const char *const scaling_path_names[SP_COUNT] = {
    "naive", "softmax", "factored", "causal", "naive_causal", "bare_gemm"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double scaling_median(const double *t, int count)
{
    double s[SCALING_MAX_REPS];
    memcpy(s, t, (size_t)count * sizeof *s);
    qsort(s, (size_t)count, sizeof *s, cmp_double);
    return count % 2 ? s[count / 2] : 0.5 * (s[count / 2 - 1] + s[count / 2]);
}

/* The result of path p at size lg and thread index ti, or NULL. */
static const scaling_result *result(const scaling_log *log, int lg, int ti,
                                    int p)
{
    if (lg < log->n_min || lg > log->n_max || !log->res[lg])
        return NULL;
    const scaling_result *r = &log->res[lg][ti][p];
    return r->ran ? r : NULL;
}

static double median_time(const scaling_log *log, const scaling_result *r)
{
    return scaling_median(r->t, log->cfg.reps);
}

/* Median over repetitions of a's time over b's (both timed back to back
 * in each repetition: steadier than a ratio of medians on a busy
 * machine). */
static double median_ratio(const scaling_log *log, const scaling_result *a,
                           const scaling_result *b)
{
    double q[SCALING_MAX_REPS];
    for (int r = 0; r < log->cfg.reps; r++)
        q[r] = a->t[r] / b->t[r];
    return scaling_median(q, log->cfg.reps);
}

/* Work of one call (all problems), flops; see scaling_report.h. */
static double flops(const scaling_log *log, int p, double n)
{
    const scaling_cfg *c = &log->cfg;
    double m = (double)c->m, e = (double)c->e, d = (double)c->d;
    double per;
    switch (p) {
    case SP_NAIVE:
        per = 2 * n * n * (m + e);
        break;
    case SP_NAIVE_CAUSAL:
        per = n * (n + 1) * (m + e);
        break;
    case SP_SOFTMAX:
        per = 2 * n * n * (d + e);
        break;
    case SP_BARE:
        per = 4 * n * m * e;
        break;
    default:
        per = 4 * n * m * e + 3 * n * m;
    }
    return per * (double)(c->batch * c->heads);
}

/* The roofline floor of one call of path p (all problems), seconds, or 0
 * when the path has none or the ceilings were not measured.  The
 * problems run side by side over the threads, or one after another each
 * split over them: either way the whole call's work against the
 * machine's ceilings. */
static double path_floor(const scaling_log *log, int ti, int p, double n)
{
    const scaling_cfg *c = &log->cfg;
    const bench_roofline *r = &log->roof[ti];
    if ((p != SP_FACTORED && p != SP_CAUSAL) || r->gemm <= 0 ||
        bench_roofline_bandwidth(r) <= 0)
        return 0;
    int64_t nn = (int64_t)n, problems = c->batch * c->heads;
    int threads = problems >= r->threads ? 1
                  : bench_split_threads(nn, c->block > c->chunk ? c->block
                                                                : c->chunk,
                                        r->threads);
    bench_work w = p == SP_FACTORED
                       ? bench_work_attention(nn, nn, c->d, c->m, c->e,
                                              log->wrows, log->elem)
                       : bench_work_causal(nn, c->d, c->m, c->e, log->wrows,
                                           c->chunk, threads, log->elem);
    w.flops *= (double)problems;
    w.bytes *= (double)problems;
    return bench_roofline_floor(r, w);
}

/* Bytes of the inputs and outputs of one call. */
static double data_bytes(const scaling_log *log, double n)
{
    const scaling_cfg *c = &log->cfg;
    return n * (double)(2 * c->d + 2 * c->e) * (double)log->elem *
           (double)(c->batch * c->heads);
}

/* The traffic model of one call, bytes. */
static double bytes_moved(const scaling_log *log, int p, double n)
{
    double scores = p == SP_NAIVE || p == SP_SOFTMAX ? 3 * n * n
                    : p == SP_NAIVE_CAUSAL           ? 1.5 * n * (n + 1)
                                                     : 0;
    return data_bytes(log, n) + scores * (double)log->elem *
                                    (double)(log->cfg.batch * log->cfg.heads);
}

/* One whole line to fd and on to the disk (not for pipes and terminals,
 * which have nothing to flush). */
static int put_line(int fd, const char *line)
{
    size_t len = strlen(line);
    while (len > 0) {
        ssize_t w = write(fd, line, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        line += w;
        len -= (size_t)w;
    }
    if (fdatasync(fd) && errno != EINVAL && errno != EROFS)
        return -1;
    return 0;
}

static const char header[] =
    "n,path,precision,map,d,m,e,batch,heads,threads,reps,median_s,min_s,"
    "gflop,gflops,bytes_moved,data_bytes,peak_rise_bytes,peak_bytes,"
    "speedup_vs_naive,gemm_gflops,frac_gemm,x_bare,thread_speedup,"
    "blas,blas_kernel,blas_kernel_isa,cpu_isa,lib_isa,floor_s,x_floor\n";

int scaling_csv_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    if (put_line(fd, header)) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* ",value" or "," for a missing one. */
static size_t field(char *buf, size_t at, size_t size, int present,
                    const char *fmt, double v)
{
    if (at >= size)
        return at;
    if (!present)
        return at + (size_t)snprintf(buf + at, size - at, ",");
    char num[64];
    snprintf(num, sizeof num, fmt, v);
    return at + (size_t)snprintf(buf + at, size - at, ",%s", num);
}

/* ",text" with quotes (and, unless quoted, commas) replaced, so that the
 * field stays one. */
static size_t text_field(char *buf, size_t at, size_t size, const char *text,
                         int quoted)
{
    if (at + 1 >= size)
        return at;
    buf[at++] = ',';
    for (; *text && at + 1 < size; text++)
        buf[at++] = *text == '"' ? '\'' : *text == ',' && !quoted ? ';' : *text;
    buf[at] = '\0';
    return at;
}

/* The platform columns: BLAS vendor and version, its kernel and that
 * kernel's vector level, the CPU's, and linattn's kernels'. */
static size_t platform_fields(char *buf, size_t at, size_t size,
                              const linattn_platform *p)
{
    char blas[80];
    snprintf(blas, sizeof blas, "%s%s%.32s", p->blas_vendor,
             *p->blas_version ? " " : "", p->blas_version);
    at = text_field(buf, at, size, blas, 0);
    at = text_field(buf, at, size, p->blas_kernel, 0);
    at = text_field(buf, at, size, p->blas_kernel_isa, 0);
    at = text_field(buf, at, size, p->cpu_isa, 0);
    return text_field(buf, at, size, p->lib_isa, 0);
}

int scaling_csv_rows(int fd, const scaling_log *log, int lg)
{
    const scaling_cfg *c = &log->cfg;
    double n = ldexp(1, lg);
    for (int ti = 0; ti < c->nthreads; ti++)
        for (int p = 0; p < SP_COUNT; p++) {
            const scaling_result *r = result(log, lg, ti, p);
            if (!r)
                continue;
            const scaling_result *naive = result(log, lg, ti, SP_NAIVE);
            const scaling_result *bare = result(log, lg, ti, SP_BARE);
            const scaling_result *first = result(log, lg, 0, p);
            double med = median_time(log, r), mn = r->t[0];
            for (int i = 1; i < c->reps; i++)
                mn = r->t[i] < mn ? r->t[i] : mn;
            double gflop = flops(log, p, n) / 1e9, rate = gflop / med;
            double gemm = log->gemm_rate[ti];
            int compares_naive = naive && p != SP_NAIVE && p != SP_BARE;
            int compares_bare = bare && (p == SP_FACTORED || p == SP_CAUSAL);
            char line[1024];
            size_t at = (size_t)snprintf(
                line, sizeof line, "%.0f,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%d,%d",
                n, scaling_path_names[p], log->precision, log->map_name,
                (long long)c->d, (long long)c->m, (long long)c->e,
                (long long)c->batch, (long long)c->heads, c->threads[ti], c->reps);
            at = field(line, at, sizeof line, 1, "%.6g", med);
            at = field(line, at, sizeof line, 1, "%.6g", mn);
            at = field(line, at, sizeof line, 1, "%.6g", gflop);
            at = field(line, at, sizeof line, 1, "%.4g", rate);
            at = field(line, at, sizeof line, 1, "%.0f", bytes_moved(log, p, n));
            at = field(line, at, sizeof line, 1, "%.0f", data_bytes(log, n));
            at = field(line, at, sizeof line, r->peak_rise >= 0, "%.0f",
                       (double)r->peak_rise);
            at = field(line, at, sizeof line, r->peak_rise >= 0, "%.0f",
                       data_bytes(log, n) + (double)r->peak_rise);
            at = field(line, at, sizeof line, compares_naive, "%.4g",
                       compares_naive ? median_ratio(log, naive, r) : 0);
            at = field(line, at, sizeof line, gemm > 0, "%.4g", gemm);
            at = field(line, at, sizeof line, gemm > 0, "%.4g", rate / gemm);
            at = field(line, at, sizeof line, compares_bare, "%.4g",
                       compares_bare ? median_ratio(log, r, bare) : 0);
            at = field(line, at, sizeof line, c->nthreads > 1 && first, "%.4g",
                       c->nthreads > 1 && first ? median_ratio(log, first, r) : 0);
            at = platform_fields(line, at, sizeof line, &log->platform);
            double fl = path_floor(log, ti, p, n);
            at = field(line, at, sizeof line, fl > 0, "%.6g", fl);
            at = field(line, at, sizeof line, fl > 0, "%.4g", med / fl);
            if (at + 2 > sizeof line)
                return errno = EOVERFLOW, -1;
            line[at] = '\n', line[at + 1] = '\0';
            if (put_line(fd, line))
                return -1;
        }
    return 0;
}

static void print_time(FILE *out, double t)
{
    if (t >= 1)
        fprintf(out, "%.3g s", t);
    else if (t >= 1e-3)
        fprintf(out, "%.3g ms", t * 1e3);
    else
        fprintf(out, "%.3g us", t * 1e6);
}

void scaling_progress(FILE *out, const scaling_log *log, int lg, double elapsed)
{
    for (int ti = 0; ti < log->cfg.nthreads; ti++) {
        fprintf(out, "n = 2^%-2d %8.0f  %d thr:", lg, ldexp(1, lg),
                log->cfg.threads[ti]);
        for (int p = 0; p < SP_COUNT; p++) {
            const scaling_result *r = result(log, lg, ti, p);
            if (!r)
                continue;
            fprintf(out, "  %s ", scaling_path_names[p]);
            print_time(out, median_time(log, r));
        }
        const scaling_result *f = result(log, lg, ti, SP_FACTORED);
        const scaling_result *nv = result(log, lg, ti, SP_NAIVE);
        if (f && nv)
            fprintf(out, "  naive/factored %.3g", median_ratio(log, nv, f));
        fprintf(out, "  [%.0f s]\n", elapsed);
    }
    fflush(out);
}

/* Least-squares slope of log2 time on log2 n over the sizes at which the
 * path ran and took at least min_time per call (shorter calls measure
 * overheads: thread start, BLAS's small-size paths); the count of sizes
 * used in *count (< 2: no fit), the range in *lo, *hi. */
static double slope(const scaling_log *log, int ti, int p, double min_time,
                    int *count, int *lo, int *hi)
{
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int k = 0;
    for (int lg = log->n_min; lg <= log->n_max; lg++) {
        const scaling_result *r = result(log, lg, ti, p);
        if (!r || median_time(log, r) < min_time)
            continue;
        double y = log2(median_time(log, r));
        sx += lg, sy += y, sxx += (double)lg * lg, sxy += lg * y;
        if (!k++)
            *lo = lg;
        *hi = lg;
    }
    *count = k;
    double den = k * sxx - sx * sx;
    return k >= 2 && den != 0 ? (k * sxy - sx * sy) / den : NAN;
}

/* The smallest measured n at which path p beats path base, and n
 * interpolated where log2(t_base / t_p) crosses 0 between that size and
 * the one before it (when both were measured there).  0 when p never
 * wins; *first_lg = n_min when p already wins at the smallest size. */
static double crossover(const scaling_log *log, int ti, int p, int base,
                        int *first_lg)
{
    double prev = NAN;
    for (int lg = log->n_min; lg <= log->n_max; lg++) {
        const scaling_result *a = result(log, lg, ti, p);
        const scaling_result *b = result(log, lg, ti, base);
        if (!a || !b) {
            prev = NAN;
            continue;
        }
        double r = log2(median_time(log, b) / median_time(log, a));
        if (r > 0) {
            *first_lg = lg;
            if (isnan(prev))
                return ldexp(1, lg);
            return exp2(lg - 1 + (0 - prev) / (r - prev));
        }
        prev = r;
    }
    *first_lg = -1;
    return 0;
}

typedef struct {
    FILE *out;   /* the readable summary */
    FILE *csv;   /* the summary file */
    int threads;
} sink;

static void put(const sink *s, const char *quantity, int p, double n,
                double value, const char *note)
{
    fprintf(s->csv, "%s,%s,%d,", quantity, p >= 0 ? scaling_path_names[p] : "",
            s->threads);
    if (n > 0)
        fprintf(s->csv, "%.0f", n);
    fprintf(s->csv, ",%.6g,\"%s\"\n", value, note);
    fprintf(s->out, "  %-24s %-12s %10.4g", quantity,
            p >= 0 ? scaling_path_names[p] : "", value);
    if (n > 0)
        fprintf(s->out, "  at n = %.0f", n);
    fprintf(s->out, "%s%s\n", *note ? "  " : "", note);
}

/* The largest size at which both paths ran (b < 0: only a). */
static int largest_common(const scaling_log *log, int ti, int a, int b)
{
    for (int lg = log->n_max; lg >= log->n_min; lg--)
        if (result(log, lg, ti, a) && (b < 0 || result(log, lg, ti, b)))
            return lg;
    return -1;
}

static void summarize_threads(const scaling_log *log, int ti, const sink *s)
{
    char note[256];
    const int fitted[] = {SP_NAIVE, SP_SOFTMAX, SP_NAIVE_CAUSAL, SP_FACTORED,
                          SP_CAUSAL, SP_BARE};
    if (log->gemm_rate[ti] > 0) {
        snprintf(note, sizeof note, "2048^3 %s", log->gemm_name);
        put(s, "gemm_gflops", -1, 0, log->gemm_rate[ti], note);
    }
    for (size_t i = 0; i < sizeof fitted / sizeof fitted[0]; i++) {
        int p = fitted[i], count, lo = 0, hi = 0;
        double sl = slope(log, ti, p, log->fit_time, &count, &lo, &hi);
        char which[64];
        snprintf(which, sizeof which, "calls of %.3g s or more", log->fit_time);
        if (count < 2) {
            sl = slope(log, ti, p, 0, &count, &lo, &hi);
            snprintf(which, sizeof which, "all sizes (too few calls of %.3g s)",
                     log->fit_time);
        }
        if (count < 2)
            continue;
        snprintf(note, sizeof note,
                 "least squares of log2 time on log2 n over %d sizes, "
                 "2^%d..2^%d: %s", count, lo, hi, which);
        put(s, "slope", p, 0, sl, note);
    }
    const int pairs[][2] = {{SP_FACTORED, SP_NAIVE}, {SP_CAUSAL, SP_NAIVE_CAUSAL}};
    for (int i = 0; i < 2; i++) {
        int p = pairs[i][0], base = pairs[i][1], first;
        if (largest_common(log, ti, p, base) < 0)
            continue;
        double x = crossover(log, ti, p, base, &first);
        if (first < 0)
            snprintf(note, sizeof note, "%s never faster than %s here",
                     scaling_path_names[p], scaling_path_names[base]);
        else if (first == log->n_min)
            snprintf(note, sizeof note, "faster than %s already at the "
                     "smallest n measured", scaling_path_names[base]);
        else
            snprintf(note, sizeof note, "interpolated; first measured n where "
                     "%s beats %s: %.0f", scaling_path_names[p],
                     scaling_path_names[base], ldexp(1, first));
        put(s, "crossover_n", p, 0, x, note);
    }
    /* Speed ratios to naive at n = 16384 when measured, else at the
     * largest n where naive ran. */
    for (int p = SP_FACTORED; p <= SP_CAUSAL; p++) {
        int lg = result(log, 14, ti, p) && result(log, 14, ti, SP_NAIVE)
                     ? 14
                     : largest_common(log, ti, p, SP_NAIVE);
        if (lg < 0)
            continue;
        put(s, "speedup_vs_naive", p, ldexp(1, lg),
            median_ratio(log, result(log, lg, ti, SP_NAIVE),
                         result(log, lg, ti, p)),
            "naive time / this path's time, median of per-repetition ratios");
    }
    int lg = largest_common(log, ti, SP_FACTORED, -1);
    if (lg < 0)
        return;
    const scaling_result *f = result(log, lg, ti, SP_FACTORED);
    double n = ldexp(1, lg), rate = flops(log, SP_FACTORED, n) / 1e9 /
                                   median_time(log, f);
    put(s, "gflops", SP_FACTORED, n, rate, "4 n m e + 3 n m flops per problem");
    if (log->gemm_rate[ti] > 0) {
        snprintf(note, sizeof note, "of the 2048^3 %s rate", log->gemm_name);
        put(s, "frac_gemm", SP_FACTORED, n, rate / log->gemm_rate[ti], note);
    }
    const scaling_result *b = result(log, lg, ti, SP_BARE);
    if (b)
        put(s, "x_bare", SP_FACTORED, n, median_ratio(log, f, b),
            "factored time / its bare GEMM calls' time (1.10: within 10%)");
    const scaling_result *c = result(log, lg, ti, SP_CAUSAL);
    if (c)
        put(s, "causal_over_factored", SP_CAUSAL, n, median_ratio(log, c, f),
            "causal time / non-causal time");
    /* time over the roofline floor at the largest size of each path */
    for (int p = SP_FACTORED; p <= SP_CAUSAL; p++) {
        int at = largest_common(log, ti, p, -1);
        double fl = at >= 0 ? path_floor(log, ti, p, ldexp(1, at)) : 0;
        if (fl <= 0)
            continue;
        snprintf(note, sizeof note, "median time / max(flops / %.1f GFLOP/s, "
                 "bytes / %.1f GB/s) (roofline.h)", log->roof[ti].gemm / 1e9,
                 bench_roofline_bandwidth(&log->roof[ti]) / 1e9);
        put(s, "x_floor", p, ldexp(1, at),
            median_time(log, result(log, at, ti, p)) / fl, note);
    }
    for (int p = SP_FACTORED; ti > 0 && p <= SP_CAUSAL; p++)
        for (int at = log->n_max; at >= log->n_min; at--)
            if (result(log, at, 0, p) && result(log, at, ti, p)) {
                snprintf(note, sizeof note, "time on %d thread(s) / time on %d",
                         log->cfg.threads[0], log->cfg.threads[ti]);
                put(s, "thread_speedup", p, ldexp(1, at),
                    median_ratio(log, result(log, at, 0, p),
                                 result(log, at, ti, p)), note);
                break;
            }
}

int scaling_summary(const scaling_log *log, const char *path, FILE *out)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return errno = ENAMETOOLONG, -1;
    FILE *csv = fopen(tmp, "w");
    if (!csv)
        return -1;
    fprintf(csv, "quantity,path,threads,n,value,note\n");
    /* What the study ran on; value: BLAS threads, or 1 for the warning. */
    char note[512];
    text_field(note, 0, sizeof note, log->platform.summary, 1);
    fprintf(csv, "platform,,,,%d,\"%s\"\n", log->platform.blas_threads,
            note + 1);
    if (log->platform.blas_underuses_cpu) {
        text_field(note, 0, sizeof note, log->platform.advice, 1);
        fprintf(csv, "blas_warning,,,,1,\"%s\"\n", note + 1);
    }
    fprintf(out, "\nsummary (%s, %s, d = %lld, m = %lld, e = %lld, "
            "batch %lld x heads %lld):\n", log->precision, log->map_name,
            (long long)log->cfg.d, (long long)log->cfg.m, (long long)log->cfg.e,
            (long long)log->cfg.batch, (long long)log->cfg.heads);
    fprintf(out, " platform: %s\n", log->platform.summary);
    if (log->platform.blas_underuses_cpu)
        fprintf(out, " WARNING: %s\n", log->platform.advice);
    for (int ti = 0; ti < log->cfg.nthreads; ti++) {
        fprintf(out, " %d thread(s):\n", log->cfg.threads[ti]);
        sink s = {out, csv, log->cfg.threads[ti]};
        summarize_threads(log, ti, &s);
    }
    int bad = ferror(csv);
    bad |= fflush(csv) != 0 || fsync(fileno(csv)) != 0;
    bad |= fclose(csv) != 0;
    if (bad || rename(tmp, path)) {
        int err = errno;
        remove(tmp);
        errno = err;
        return -1;
    }
    return 0;
}
