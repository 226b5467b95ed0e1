/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * linattn-scaling-mpi -- the scaling study across MPI ranks (doc/mpi.md).
 * Run it under mpirun; every rank holds an equal block of the rows.
 *
 *   strong scaling: the global n is fixed, each rank holds n / P rows;
 *   weak scaling:   each rank holds a fixed number of rows.
 *
 * For each mode and path (distributed non-causal attention, distributed
 * causal attention) it times the library's call (median over repetitions
 * of the slowest rank's time), then the same work split into its parts
 * with the public building blocks: local compute (state updates, queries
 * or the causal pass from the prefix) and communication (the state
 * collective, with its agreement), each the slowest rank's.  It also
 * times the reduction alone, back to back after a barrier (the alpha and
 * beta of doc/mpi.md's model), and the pass over the local rows that an
 * overlapped causal form would add (phi(Q) [S z] of the prefix: see
 * mpi/causal.c).  The paths attention_train and causal_train time a
 * training step instead: the distributed forward that hands back the
 * normalizers (linattn_mpi_d_attention_ex, _causal_ex with ex.den, head
 * by head) and the distributed backward of all heads
 * (linattn_mpi_d_batched_attention_backward, _causal_backward), against
 * the same step on one rank.  Prints a line per case and appends CSV rows; the
 * efficiency's one-rank time is timed in the same repetitions (rank 0
 * alone on MPI_COMM_SELF), or with --baseline csv taken from the rows of
 * a one-rank run in the same CSV (run np 1 first: make scaling-mpi
 * does).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include "linattn_mpi.h"
#include "machine.h"
#include "timing.h"
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
#include <cblas.h>
#endif

typedef struct {
    int map, reps, heads;
    int64_t d, e, m;
    int64_t strong_n, weak_n; /* global n (strong), rows per rank (weak) */
    int strong, weak, attention, causal, train;
    int interleave; /* time the one-rank baseline in the same repetitions */
    const char *csv;
} options;

static int rank, size;

/* The usage; --help prints it to stdout with the description (the
 * manual page linattn-scaling-mpi(1) is made from that), errors to
 * stderr. */
static void usage_to(FILE *out)
{
    if (rank != 0)
        return;
    fprintf(out,
            "usage: mpirun -np P linattn-scaling-mpi [--mode strong|weak|both]\n"
            "  [--paths attention,causal,train (train: also the training step,\n"
            "   forward + backward, of each)] [--n LOG2 (strong, default 20)]\n"
            "  [--n-per-rank LOG2 (weak, default 18)] [--d D] [--e E] [--m M]\n"
            "  [--map elu1|identity|relu|favor] [--heads H] [--reps R] [--csv FILE]\n"
            "  [--baseline interleaved|csv (the one-rank time of the efficiency:\n"
            "   rank 0 alone in the same repetitions, default; or the CSV's\n"
            "   one-rank rows)]\n");
}

static void usage(void)
{
    usage_to(stderr);
}

static void help(void)
{
    usage_to(stdout);
    if (rank == 0)
        printf("Times distributed linear attention across the ranks of\n"
               "MPI_COMM_WORLD, strong scaling (a fixed global n) and weak\n"
               "scaling (fixed rows per rank), for the non-causal and causal\n"
               "calls of liblinattn_mpi and their training steps (forward with\n"
               "normalizers, then the distributed backward).  Each case prints\n"
               "a line and appends\n"
               "CSV rows: the slowest rank's median time, split into local\n"
               "compute and communication, the bytes each rank sends per\n"
               "call, and the efficiency against one rank.  Run it under\n"
               "mpirun; make scaling-mpi runs np = 1 and 2 and draws\n"
               "scaling-mpi.png (doc/mpi.md).\n");
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){LINATTN_MAP_ELU1, 5, 1, 64, 64, 0, 1 << 20, 1 << 18,
                   1, 1, 1, 1, 1, 1, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            help();
            return 1;
        }
        if (!v) {
            usage();
            return 2;
        }
        i++;
        if (!strcmp(a, "--mode")) {
            o->strong = !strcmp(v, "strong") || !strcmp(v, "both");
            o->weak = !strcmp(v, "weak") || !strcmp(v, "both");
            if (!o->strong && !o->weak)
                return usage(), 2;
        } else if (!strcmp(a, "--paths")) {
            o->attention = strstr(v, "attention") != NULL;
            o->causal = strstr(v, "causal") != NULL;
            o->train = strstr(v, "train") != NULL;
            if (!o->attention && !o->causal)
                return usage(), 2;
        } else if (!strcmp(a, "--map")) {
            o->map = !strcmp(v, "elu1")       ? LINATTN_MAP_ELU1
                     : !strcmp(v, "identity") ? LINATTN_MAP_IDENTITY
                     : !strcmp(v, "relu")     ? LINATTN_MAP_RELU
                     : !strcmp(v, "favor")    ? LINATTN_MAP_FAVOR
                                              : 0;
            if (!o->map)
                return usage(), 2;
        } else if (!strcmp(a, "--baseline")) {
            o->interleave = !strcmp(v, "interleaved");
            if (!o->interleave && strcmp(v, "csv"))
                return usage(), 2;
        } else if (!strcmp(a, "--csv")) {
            o->csv = v;
        } else if (bench_parse_int(v, 0, 62, &x) && !strcmp(a, "--n")) {
            o->strong_n = (int64_t)1 << x;
        } else if (bench_parse_int(v, 0, 62, &x) && !strcmp(a, "--n-per-rank")) {
            o->weak_n = (int64_t)1 << x;
        } else if (bench_parse_int(v, 1, 100000, &x) && !strcmp(a, "--d")) {
            o->d = x;
        } else if (bench_parse_int(v, 1, 100000, &x) && !strcmp(a, "--e")) {
            o->e = x;
        } else if (bench_parse_int(v, 0, 100000, &x) && !strcmp(a, "--m")) {
            o->m = x;
        } else if (bench_parse_int(v, 1, 4096, &x) && !strcmp(a, "--heads")) {
            o->heads = (int)x;
        } else if (bench_parse_int(v, 1, 1000, &x) && !strcmp(a, "--reps")) {
            o->reps = (int)x;
        } else {
            usage();
            return 2;
        }
    }
    return 0;
}

static const char *map_name(int map)
{
    return map == LINATTN_MAP_ELU1 ? "elu1" : map == LINATTN_MAP_IDENTITY ? "identity"
           : map == LINATTN_MAP_RELU ? "relu" : "favor";
}

/* The slowest rank's value. */
static double slowest(double t)
{
    double m;
    MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

static void die(const char *what, int st)
{
    fprintf(stderr, "linattn-scaling-mpi (rank %d): %s: %s\n", rank, what,
            linattn_strerror(st));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The time of the one-rank row of the CSV that matches, or 0. */
static double baseline(const options *o, const char *mode, const char *path,
                       int64_t n_global, int64_t n_local, int threads)
{
    FILE *f = o->csv ? fopen(o->csv, "r") : NULL;
    char line[1024];
    double t = 0;
    while (f && fgets(line, sizeof line, f)) {
        char md[16], pt[16], mp[16];
        long long d, e, m, h, ranks, thr, ng, nl;
        double time;
        if (sscanf(line, "%15[^,],%15[^,],%15[^,],%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lf",
                   md, pt, mp, &d, &e, &m, &h, &ranks, &thr, &ng, &nl, &time) == 12 &&
            !strcmp(md, mode) && !strcmp(pt, path) && !strcmp(mp, map_name(o->map)) &&
            d == o->d && e == o->e && h == o->heads && ranks == 1 && thr == threads &&
            (strcmp(mode, "strong") ? nl == n_local : ng == n_global))
            t = time;
    }
    if (f)
        fclose(f);
    return t;
}

typedef struct {
    double time, time_min, compute, comm, reduce, overlap_extra;
    double efficiency; /* median of per-repetition ratios, or NaN */
    double one_rank;   /* median of the interleaved one-rank times, or NaN */
} figures;

/* The one-rank call on rank 0 alone (MPI_COMM_SELF) over nb rows: the
 * baseline of the efficiency, timed in the same repetitions as the
 * distributed call so that the machine's drift cancels in their ratio.
 * The other ranks wait at the barriers. */
static double one_rank_time(const linattn_d_plan *plan, int causal, int64_t H,
                            int64_t nb, int64_t d, int64_t e, double *q,
                            double *k, double *v, double *out)
{
    double t = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        linattn_strides sqk = {d, 0, nb * d}, sv = {e, 0, nb * e};
        double t0 = MPI_Wtime();
        int s = causal
            ? linattn_mpi_d_batched_causal(plan, MPI_COMM_SELF, LINATTN_ROW_MAJOR, 1, H, nb,
                                           q, &sqk, k, &sqk, v, &sv, out, &sv, NULL)
            : linattn_mpi_d_batched_attention(plan, MPI_COMM_SELF, LINATTN_ROW_MAJOR, 1, H,
                                              nb, nb, q, &sqk, k, &sqk, v, &sv, out, &sv,
                                              NULL);
        if (s)
            die("one-rank call", s);
        t = MPI_Wtime() - t0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return t;
}

/* One case: mode, path, rows on this rank (all ranks hold the same), and
 * the rows of the one-rank baseline (nb; 0: none). */
static figures run_case(const options *o, linattn_d_plan *plan, int causal,
                        int64_t n, int64_t nb)
{
    int64_t d = o->d, e = o->e, H = o->heads;
    uint64_t seed = 1000 + (uint64_t)rank;
    /* [H][n][c]: each head's rows contiguous */
    double *q = bench_random(H * n * d + 1, &seed), *k = bench_random(H * n * d + 1, &seed);
    double *v = bench_random(H * n * e + 1, &seed), *out = bench_random(H * n * e + 1, &seed);
    linattn_strides sqk = {d, 0, n * d}, sv = {e, 0, n * e};
    linattn_d_state **st = malloc((size_t)H * sizeof *st);
    for (int64_t h = 0; h < H; h++)
        linattn_d_state_create(&st[h], plan);
    int reps = o->reps;
    double *t = malloc((size_t)(5 * reps + 8) * sizeof *t);
    double *tc = t + reps, *tm = t + 2 * reps, *tr = t + 3 * reps, *te = t + 4 * reps;
    figures f = {0, INFINITY, 0, 0, 0, 0, NAN, NAN};
    double *t1s = malloc((size_t)(reps + 1) * sizeof *t1s);
    /* rank 0's arrays for the baseline (the same values would do: only
     * the time is kept) */
    double *bq = NULL, *bk = NULL, *bv = NULL, *bo = NULL;
    if (nb > 0 && rank == 0) {
        uint64_t bs = 7;
        bq = bench_random(H * nb * d + 1, &bs), bk = bench_random(H * nb * d + 1, &bs);
        bv = bench_random(H * nb * e + 1, &bs), bo = bench_random(H * nb * e + 1, &bs);
    }
    for (int r = 0; r < reps; r++) {
        /* the library's call */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        int s = causal
            ? linattn_mpi_d_batched_causal(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, 1, H, n,
                                           q, &sqk, k, &sqk, v, &sv, out, &sv, NULL)
            : linattn_mpi_d_batched_attention(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, 1, H,
                                              n, n, q, &sqk, k, &sqk, v, &sv, out, &sv, NULL);
        if (s)
            die("distributed call", s);
        t[r] = slowest(MPI_Wtime() - t0);
        f.time_min = fmin(f.time_min, t[r]);
        if (nb > 0) {
            double t1 = one_rank_time(plan, causal, H, nb, d, e, bq, bk, bv, bo);
            /* strong: T1 / (P TP); weak: T1 / TP, T1 on one rank's rows */
            te[r] = t1 / (t[r] * (nb > n ? size : 1));
            t1s[r] = t1;
            MPI_Bcast(&te[r], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        }
        /* the same work in its parts */
        MPI_Barrier(MPI_COMM_WORLD);
        double a0 = MPI_Wtime();
        for (int64_t h = 0; h < H; h++) {
            linattn_d_state_reset(st[h]);
            if (!causal || rank < size - 1)
                linattn_d_state_update(st[h], LINATTN_ROW_MAJOR, n, k + h * n * d, d,
                                       v + h * n * e, e);
        }
        double a1 = MPI_Wtime();
        s = causal ? linattn_mpi_d_state_exscan(st, H, MPI_COMM_WORLD)
                   : linattn_mpi_d_state_allreduce(st, H, MPI_COMM_WORLD);
        if (s)
            die("state collective", s);
        double a2 = MPI_Wtime();
        for (int64_t h = 0; h < H && !s; h++)
            s = causal ? linattn_d_state_causal(st[h], LINATTN_ROW_MAJOR, n, q + h * n * d, d,
                                                k + h * n * d, d, v + h * n * e, e,
                                                out + h * n * e, e, 0, NULL)
                       : linattn_d_state_query(st[h], LINATTN_ROW_MAJOR, n, q + h * n * d, d,
                                               out + h * n * e, e, NULL, 0, NULL, NULL);
        double a3 = MPI_Wtime();
        tc[r] = slowest((a1 - a0) + (a3 - a2));
        tm[r] = slowest(a2 - a1);
        /* the reduction alone, and the extra pass of an overlapped form */
        MPI_Barrier(MPI_COMM_WORLD);
        a0 = MPI_Wtime();
        s = causal ? linattn_mpi_d_state_exscan(st, H, MPI_COMM_WORLD)
                   : linattn_mpi_d_state_allreduce(st, H, MPI_COMM_WORLD);
        tr[r] = slowest(MPI_Wtime() - a0);
        a0 = MPI_Wtime();
        for (int64_t h = 0; h < H; h++)
            linattn_d_state_query(st[h], LINATTN_ROW_MAJOR, n, q + h * n * d, d, NULL, 0,
                                  out + h * n * e, e, NULL, NULL);
        f.overlap_extra += slowest(MPI_Wtime() - a0) / reps;
    }
    if (nb > 0) {
        f.efficiency = bench_median(te, reps);
        f.one_rank = bench_median(t1s, reps);
    }
    free(t1s);
    free(bq), free(bk), free(bv), free(bo);
    f.time = bench_median(t, reps);
    f.compute = bench_median(tc, reps);
    f.comm = bench_median(tm, reps);
    f.reduce = bench_median(tr, reps);
    for (int64_t h = 0; h < H; h++)
        linattn_d_state_destroy(st[h]);
    free(st), free(t), free(q), free(k), free(v), free(out);
    return f;
}

/* A training step on comm over n rows per head: the forward with
 * normalizers head by head, then the backward of all heads at once.
 * The arrays are [H][n][c]; den [H][n]. */
static void train_step(const linattn_d_plan *plan, MPI_Comm comm, int causal,
                       int64_t H, int64_t n, int64_t d, int64_t e,
                       const double *q, const double *k, const double *v,
                       double *out, double *den, const double *g, double *dq,
                       double *dk, double *dv)
{
    for (int64_t h = 0; h < H; h++) {
        linattn_d_extras ex;
        linattn_d_extras_init(&ex);
        ex.den = den + h * n;
        int s = causal
            ? linattn_mpi_d_causal_ex(plan, comm, LINATTN_ROW_MAJOR, n, q + h * n * d, d,
                                      k + h * n * d, d, v + h * n * e, e, out + h * n * e,
                                      e, &ex, NULL)
            : linattn_mpi_d_attention_ex(plan, comm, LINATTN_ROW_MAJOR, n, n, q + h * n * d,
                                         d, k + h * n * d, d, v + h * n * e, e,
                                         out + h * n * e, e, &ex, NULL);
        if (s)
            die("training step's forward", s);
    }
    linattn_strides sqk = {d, 0, n * d}, sv = {e, 0, n * e};
    int s = causal
        ? linattn_mpi_d_batched_causal_backward(plan, comm, LINATTN_ROW_MAJOR, 1, H, n, q,
                                                &sqk, k, &sqk, v, &sv, out, &sv, den, g,
                                                &sv, dq, &sqk, dk, &sqk, dv, &sv, NULL, 0,
                                                NULL, NULL)
        : linattn_mpi_d_batched_attention_backward(plan, comm, LINATTN_ROW_MAJOR, 1, H, n, n,
                                                   q, &sqk, k, &sqk, v, &sv, out, &sv, den,
                                                   g, &sv, dq, &sqk, dk, &sqk, dv, &sv, NULL,
                                                   0, NULL, NULL);
    if (s)
        die("training step's backward", s);
}

/* One training step's arrays of H heads of n rows. */
typedef struct {
    double *q, *k, *v, *out, *den, *g, *dq, *dk, *dv;
} step_arrays;

static step_arrays step_new(int64_t H, int64_t n, int64_t d, int64_t e,
                            uint64_t seed)
{
    step_arrays a;
    a.q = bench_random(H * n * d + 1, &seed), a.k = bench_random(H * n * d + 1, &seed);
    a.v = bench_random(H * n * e + 1, &seed), a.g = bench_random(H * n * e + 1, &seed);
    a.out = bench_random(H * n * e + 1, &seed), a.den = bench_random(H * n + 1, &seed);
    a.dq = bench_random(H * n * d + 1, &seed), a.dk = bench_random(H * n * d + 1, &seed);
    a.dv = bench_random(H * n * e + 1, &seed);
    return a;
}

static void step_free(step_arrays *a)
{
    free(a->q), free(a->k), free(a->v), free(a->out), free(a->den);
    free(a->g), free(a->dq), free(a->dk), free(a->dv);
}

/* A training-step case: the distributed step on n rows per rank, and in
 * the same repetitions (nb > 0) the step on rank 0 alone over nb rows.
 * Only the times and the efficiency: the parts are the forward's
 * (above) and the backward's reductions, which doc/mpi.md models. */
static figures run_train_case(const options *o, linattn_d_plan *plan,
                              int causal, int64_t n, int64_t nb)
{
    int64_t d = o->d, e = o->e, H = o->heads;
    int reps = o->reps;
    step_arrays a = step_new(H, n, d, e, 2000 + (uint64_t)rank), b = {0};
    if (nb > 0 && rank == 0)
        b = step_new(H, nb, d, e, 7);
    double *t = malloc((size_t)(3 * reps + 3) * sizeof *t);
    double *te = t + reps, *t1s = t + 2 * reps;
    figures f = {0, INFINITY, NAN, NAN, NAN, NAN, NAN, NAN};
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        train_step(plan, MPI_COMM_WORLD, causal, H, n, d, e, a.q, a.k, a.v, a.out, a.den,
                   a.g, a.dq, a.dk, a.dv);
        t[r] = slowest(MPI_Wtime() - t0);
        f.time_min = fmin(f.time_min, t[r]);
        if (nb > 0) {
            double t1 = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                t0 = MPI_Wtime();
                train_step(plan, MPI_COMM_SELF, causal, H, nb, d, e, b.q, b.k, b.v, b.out,
                           b.den, b.g, b.dq, b.dk, b.dv);
                t1 = MPI_Wtime() - t0;
            }
            MPI_Barrier(MPI_COMM_WORLD);
            te[r] = t1 / (t[r] * (nb > n ? size : 1));
            t1s[r] = t1;
            MPI_Bcast(&te[r], 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        }
    }
    if (nb > 0) {
        f.efficiency = bench_median(te, reps);
        f.one_rank = bench_median(t1s, reps);
    }
    f.time = bench_median(t, reps);
    free(t);
    step_free(&a);
    if (nb > 0 && rank == 0)
        step_free(&b);
    return f;
}

/* The machine's alpha and beta as MPI_Allreduce sees them: the median
 * time of an 8-byte and of a bytes-long sum, back to back after a
 * barrier (slowest rank). */
static void allreduce_times(int64_t bytes, double *small, double *large)
{
    enum { REPS = 101 };
    int64_t count = (bytes + 7) / 8;
    double *buf = calloc((size_t)count, sizeof *buf), *res = calloc((size_t)count, sizeof *res);
    double t8[REPS], tb[REPS];
    for (int r = 0; r < REPS; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(buf, res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t8[r] = slowest(MPI_Wtime() - t0);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        MPI_Allreduce(buf, res, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        tb[r] = slowest(MPI_Wtime() - t0);
    }
    *small = bench_median(t8, REPS);
    *large = bench_median(tb, REPS);
    free(buf), free(res);
}

static const char *header =
    "mode,path,map,d,e,m,heads,ranks,threads_per_rank,n_global,n_per_rank,"
    "time_s,time_min_s,compute_s,comm_s,reduce_s,bytes_reduce,bytes_call,"
    "efficiency,overlap_extra_s,allreduce_8B_s,allreduce_payload_s,cpu,blas_core,"
    "one_rank_time_s\n";

int main(int argc, char **argv)
{
    /* --help before MPI starts: it must work without a launcher, and
     * whatever MPI leaves behind at exit (a sanitizer build reports Open
     * MPI's own allocations) must not cost the text the manual page is
     * made from */
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            help();
            return 0;
        }
    int provided;
    MPI_Init_thread(&argc, &argv, LINATTN_MPI_THREAD_LEVEL, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    options o;
    int st = parse(argc, argv, &o);
    if (st) {
        MPI_Finalize();
        return st == 1 ? 0 : 2;
    }
    linattn_opts lo;
    linattn_opts_init(&lo);
    lo.m = o.m;
    linattn_d_plan *plan;
    if ((st = linattn_d_plan_create(&plan, o.map, o.d, o.e, &lo)))
        die("plan", st);
    int64_t m;
    linattn_d_plan_dims(plan, NULL, &m, NULL);
    int threads = bench_max_threads();
    char cpu[128] = "unknown", core[64] = "unknown";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (ci && fgets(line, sizeof line, ci))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
            cpu[strcspn(cpu, "\n")] = 0;
            for (char *c = cpu; *c; c++)
                *c = *c == ',' ? ' ' : *c;
            break;
        }
    if (ci)
        fclose(ci);
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    snprintf(core, sizeof core, "%s", openblas_get_corename());
#endif
    /* bytes into each collective per call: the states (a header of 7
     * doubles each: length, shift, flags, the tokens' two halves, the
     * keys' weight, the rows' log decay), then the two agreements (15 words each: the status
     * word and 7 keys as k and ~k) and the final MINLOC (long, int) */
    int64_t bytes_reduce = 8 * (m * (o.e + 1) + 7) * o.heads;
    int64_t bytes_call = bytes_reduce + 2 * 15 * 8 + 16;
    FILE *csv = NULL;
    if (rank == 0 && o.csv) {
        FILE *old = fopen(o.csv, "r");
        int fresh = !old || fgetc(old) == EOF;
        if (old)
            fclose(old);
        csv = fopen(o.csv, "a");
        if (!csv) {
            fprintf(stderr, "linattn-scaling-mpi: cannot write %s\n", o.csv);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (fresh)
            fputs(header, csv);
    }
    double a8, ab;
    allreduce_times(bytes_reduce, &a8, &ab);
    if (rank == 0)
        printf("linattn-scaling-mpi: %d rank(s) x %d thread(s), %s, d = %lld, e = %lld, "
               "m = %lld, %d head(s), %s, BLAS core %s; MPI_Allreduce of 8 bytes "
               "%.3g s, of %lld bytes %.3g s\n",
               size, threads, map_name(o.map), (long long)o.d, (long long)o.e,
               (long long)m, o.heads, cpu, core, a8, (long long)bytes_reduce, ab);
    for (int mode = 0; mode < 2; mode++) {
        if (!(mode ? o.weak : o.strong))
            continue;
        const char *mname = mode ? "weak" : "strong";
        int64_t n = mode ? o.weak_n : o.strong_n / size;
        int64_t ng = n * size;
        for (int path = 0; path < 4; path++) {
            int causal = path % 2, train = path / 2;
            if (!(causal ? o.causal : o.attention) || (train && !o.train))
                continue;
            const char *pname = (const char *[]){"attention", "causal", "attention_train",
                                                 "causal_train"}[path];
            /* the baseline: interleaved one-rank calls (--baseline), else
             * the one-rank rows of the CSV */
            int64_t nb = o.interleave && size > 1 ? (mode ? n : ng) : 0;
            double t1 = rank == 0 && !nb ? baseline(&o, mname, pname, ng, n, threads) : 0;
            figures f = train ? run_train_case(&o, plan, causal, n, nb)
                              : run_case(&o, plan, causal, n, nb);
            double eff = nb ? f.efficiency
                         : t1 > 0 ? (mode ? t1 / f.time : t1 / (size * f.time))
                         : size == 1 ? 1 : NAN;
            if (rank == 0) {
                printf("%-6s %-9s P = %d  n = %lld (%lld per rank): %.4g s (compute %.4g s, "
                       "comm %.3g s, reduction alone %.3g s, %lld bytes), efficiency %.3f\n",
                       mname, pname, size, (long long)ng, (long long)n, f.time, f.compute,
                       f.comm, f.reduce, (long long)bytes_reduce, eff);
                if (csv)
                    fprintf(csv, "%s,%s,%s,%lld,%lld,%lld,%d,%d,%d,%lld,%lld,%.6g,%.6g,%.6g,"
                            "%.6g,%.6g,%lld,%lld,%.4f,%.6g,%.6g,%.6g,%s,%s,%.6g\n",
                            mname, pname, map_name(o.map), (long long)o.d, (long long)o.e,
                            (long long)m, o.heads, size, threads, (long long)ng,
                            (long long)n, f.time, f.time_min, f.compute, f.comm, f.reduce,
                            (long long)bytes_reduce, (long long)bytes_call, eff,
                            f.overlap_extra, a8, ab, cpu, core,
                            size == 1 ? f.time : f.one_rank);
                fflush(stdout);
            }
        }
    }
    if (csv)
        fclose(csv);
    linattn_d_plan_destroy(plan);
    MPI_Finalize();
    return 0;
}
