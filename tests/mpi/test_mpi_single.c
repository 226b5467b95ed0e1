/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mpi_single.c -- a program that starts MPI with plain MPI_Init (as
 * most Fortran codes do: MPI_THREAD_SINGLE with Open MPI): the
 * distributed calls work, with the library's OpenMP threads, and equal
 * the serial calls on the whole sequence (1e-12 relative; uneven blocks,
 * rank 0 without rows), the distributed backward (dq, dk, dv) the serial
 * backward's; a call from a thread other than the one that
 * initialized MPI is refused with LINATTN_EMPIUSE on that rank, without
 * communicating, and linattn_mpi_strerror names the level MPI was
 * started at and the call to make; before MPI_Init and after
 * MPI_Finalize every call is LINATTN_EMPIUSE, explained as such.
 */
#include <pthread.h>
#include <string.h>
#include "linattn_mpi.h"
#include "testutil.h"
#include "mpitest.h"
#include "mpidata.h"

static linattn_d_plan *plan;
static linattn_d_state *state;

/* The number of calls that did not return want. */
static int every_call(int want)
{
    double x[2] = {1, 1}, o[2];
    linattn_strides s = {2, 0, 0};
    int bad = 0;
    bad += linattn_mpi_d_attention(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, 1,
                                   1, x, 2, x, 2, x, 2, o, 2, NULL) != want;
    bad += linattn_mpi_d_causal(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, 1, x,
                                2, x, 2, x, 2, o, 2, NULL) != want;
    bad += linattn_mpi_d_batched_attention(plan, MPI_COMM_WORLD,
                                           LINATTN_ROW_MAJOR, 1, 1, 1, 1, x,
                                           &s, x, &s, x, &s, o, &s,
                                           NULL) != want;
    bad += linattn_mpi_d_batched_causal(plan, MPI_COMM_WORLD,
                                        LINATTN_ROW_MAJOR, 1, 1, 1, x, &s, x,
                                        &s, x, &s, o, &s, NULL) != want;
    bad += linattn_mpi_d_state_allreduce(&state, 1, MPI_COMM_WORLD) != want;
    bad += linattn_mpi_d_state_exscan(&state, 1, MPI_COMM_WORLD) != want;
    bad += linattn_mpi_d_state_save_file(state, "x.ck", MPI_COMM_WORLD) !=
           want;
    bad += linattn_mpi_d_state_load_file(state, "x.ck", MPI_COMM_WORLD) !=
           want;
    return bad;
}

/* The relative distance of a's rows [off, off + cnt) (e columns, row
 * major) from the serial ref's. */
static double rel(const double *a, const double *ref, int64_t off,
                  int64_t cnt, int64_t e)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < cnt * e; i++) {
        num = fmax(num, fabs(a[i] - ref[off * e + i]));
        den = fmax(den, fabs(ref[off * e + i]));
    }
    return den > 0 ? num / den : num;
}

/* Distributed equals serial, non-causal and causal, elu+1 and FAVOR+. */
static void works_at_thread_single(void)
{
    const int64_t n = 301, d = 5, e = 3;
    for (int pattern = EVEN; pattern <= SKEWED; pattern++)
        for (int map = 0; map < 2; map++) {
            linattn_opts o;
            linattn_opts_init(&o);
            o.block = 16;
            o.chunk = 8;
            linattn_d_plan *p = NULL;
            MT_CHECK(linattn_d_plan_create(&p, map ? LINATTN_MAP_FAVOR
                                                   : LINATTN_MAP_ELU1,
                                           d, e, &o) == 0, "plan");
            uint64_t seed = 17;
            double *q = test_rand_vec(n * d, -1, 1, &seed);
            double *k = test_rand_vec(n * d, -1, 1, &seed);
            double *v = test_rand_vec(n * e, -1, 1, &seed);
            double *ref = malloc((size_t)(n * e) * sizeof *ref);
            double *out = malloc((size_t)(n * e + 1) * sizeof *out);
            int64_t off, cnt;
            block_of(n, pattern, &off, &cnt);
            for (int causal = 0; causal < 2; causal++) {
                int st = causal
                             ? linattn_d_causal(p, LINATTN_ROW_MAJOR, n, q, d,
                                                k, d, v, e, ref, e, NULL)
                             : linattn_d_attention(p, LINATTN_ROW_MAJOR, n, n,
                                                   q, d, k, d, v, e, ref, e,
                                                   NULL);
                MT_CHECK(st == 0, "serial status %d", st);
                st = causal ? linattn_mpi_d_causal(
                                  p, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, cnt,
                                  q + off * d, d, k + off * d, d, v + off * e,
                                  e, out, e, NULL)
                            : linattn_mpi_d_attention(
                                  p, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, cnt,
                                  cnt, q + off * d, d, k + off * d, d,
                                  v + off * e, e, out, e, NULL);
                MT_CHECK(st == 0, "distributed status %d (%s)", st,
                         linattn_mpi_strerror(st));
                MT_CHECK(rel(out, ref, off, cnt, e) <= 1e-12,
                         "map %d causal %d pattern %d: %g", map, causal,
                         pattern, rel(out, ref, off, cnt, e));
                /* the backward: the serial one of the whole, and this
                 * rank's rows of it distributed */
                double *den = malloc((size_t)(n + 1) * sizeof *den);
                double *gq = malloc((size_t)(3 * n * d + 1) * sizeof *gq);
                double *gv = malloc((size_t)(2 * n * e + 1) * sizeof *gv);
                double *mq = malloc((size_t)(3 * n * d + 1) * sizeof *mq);
                double *mv = malloc((size_t)(2 * n * e + 1) * sizeof *mv);
                double *dq = gq, *dk = gq + n * d, *dv = gv;
                double *g = gq + 2 * n * d, *lq = mq, *lk = mq + n * d;
                double *lv = mv, *lden = mq + 2 * n * d, *lout = mv + n * e;
                for (int64_t i = 0; i < n * e; i++)
                    gv[n * e + i] = sin(0.3 * (double)i);
                for (int64_t i = 0; i < n * d; i++)
                    g[i] = i < n * e ? gv[n * e + i] : 0;
                st = causal
                         ? linattn_d_causal_forward(p, LINATTN_ROW_MAJOR, n, q,
                                                    d, k, d, v, e, ref, e,
                                                    den, NULL)
                         : linattn_d_attention_forward(p, LINATTN_ROW_MAJOR, n,
                                                       n, q, d, k, d, v, e,
                                                       ref, e, den, NULL);
                if (!st)
                    st = causal ? linattn_d_causal_backward(
                                      p, LINATTN_ROW_MAJOR, n, q, d, k, d, v,
                                      e, ref, e, den, g, e, dq, d, dk, d, dv,
                                      e, NULL, d, NULL, NULL)
                                : linattn_d_attention_backward(
                                      p, LINATTN_ROW_MAJOR, n, n, q, d, k, d,
                                      v, e, ref, e, den, g, e, dq, d, dk, d,
                                      dv, e, NULL, d, NULL, NULL, NULL);
                MT_CHECK(st == 0, "serial backward %d", st);
                /* out and den as the distributed forward wrote them */
                linattn_d_extras ex;
                linattn_d_extras_init(&ex);
                ex.den = lden;
                st = causal ? linattn_mpi_d_causal_ex(
                                  p, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, cnt,
                                  q + off * d, d, k + off * d, d, v + off * e,
                                  e, lout, e, &ex, NULL)
                            : linattn_mpi_d_attention_ex(
                                  p, MPI_COMM_WORLD, LINATTN_ROW_MAJOR, cnt,
                                  cnt, q + off * d, d, k + off * d, d,
                                  v + off * e, e, lout, e, &ex, NULL);
                if (!st)
                    st = causal ? linattn_mpi_d_causal_backward(
                                      p, MPI_COMM_WORLD, LINATTN_ROW_MAJOR,
                                      cnt, q + off * d, d, k + off * d, d,
                                      v + off * e, e, lout, e, lden,
                                      g + off * e, e, lq, d, lk, d, lv, e,
                                      NULL, d, NULL, NULL)
                                : linattn_mpi_d_attention_backward(
                                      p, MPI_COMM_WORLD, LINATTN_ROW_MAJOR,
                                      cnt, cnt, q + off * d, d, k + off * d,
                                      d, v + off * e, e, lout, e, lden,
                                      g + off * e, e, lq, d, lk, d, lv, e,
                                      NULL, d, NULL, NULL, NULL);
                MT_CHECK(st == 0, "distributed backward %d (%s)", st,
                         linattn_mpi_strerror(st));
                double err = fmax(fmax(rel(lq, dq, off, cnt, d),
                                       rel(lk, dk, off, cnt, d)),
                                  rel(lv, dv, off, cnt, e));
                MT_CHECK(err <= 1e-12, "backward, map %d causal %d "
                         "pattern %d: %g", map, causal, pattern, err);
                free(den), free(gq), free(gv), free(mq), free(mv);
            }
            free(q), free(k), free(v), free(ref), free(out);
            linattn_d_plan_destroy(p);
        }
}

/* What a thread other than MPI's main one got. */
static int other_status, other_calls;
static char other_text[400];

static void *from_another_thread(void *arg)
{
    (void)arg;
    other_calls = every_call(LINATTN_EMPIUSE);
    double x[2] = {1, 1}, o[2];
    other_status = linattn_mpi_d_attention(plan, MPI_COMM_WORLD,
                                           LINATTN_ROW_MAJOR, 1, 1, x, 2, x,
                                           2, x, 2, o, 2, NULL);
    snprintf(other_text, sizeof other_text, "%s",
             linattn_mpi_strerror(other_status));
    return NULL;
}

/* Below MPI_THREAD_SERIALIZED another thread may not call MPI: refused
 * there, on this rank alone, before any communication (the main threads
 * of the ranks then agree as usual). */
static void other_thread_refused(void)
{
    int provided;
    MPI_Query_thread(&provided);
    pthread_t t;
    MT_CHECK(pthread_create(&t, NULL, from_another_thread, NULL) == 0,
             "pthread_create");
    pthread_join(t, NULL);
    if (provided >= MPI_THREAD_SERIALIZED) /* nothing to refuse */
        return;
    MT_CHECK(other_calls == 0, "%d calls from another thread not refused",
             other_calls);
    MT_CHECK(other_status == LINATTN_EMPIUSE, "status %d", other_status);
    const char *level = provided == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE"
                                                      : "MPI_THREAD_FUNNELED";
    MT_CHECK(strstr(other_text, level) &&
                 strstr(other_text, "MPI_Init_thread(..., "
                                    "MPI_THREAD_SERIALIZED, ...)"),
             "the message: %s", other_text);
    /* the main thread's calls still work */
    double x[2] = {1, 1}, o[2] = {0, 0};
    int st = linattn_mpi_d_attention(plan, MPI_COMM_WORLD, LINATTN_ROW_MAJOR,
                                     1, 1, x, 2, x, 2, x, 2, o, 2, NULL);
    MT_CHECK(st == 0 && o[0] == 1 && o[1] == 1, "the main thread: %d", st);
}

int main(int argc, char **argv)
{
    linattn_d_plan_create(&plan, LINATTN_MAP_ELU1, 2, 2, NULL);
    linattn_d_state_create(&state, plan);
    int before = every_call(LINATTN_EMPIUSE);
    const char *before_text = linattn_mpi_strerror(LINATTN_EMPIUSE);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
    mt_local_failures = 0;
    MT_CHECK(before == 0, "%d calls before MPI_Init not refused", before);
    MT_CHECK(strstr(before_text, "not initialized") &&
                 strstr(before_text, "MPI_Init"),
             "before MPI_Init: %s", before_text);
    MT_CHECK(!strcmp(linattn_mpi_strerror(LINATTN_EMPI),
                     linattn_strerror(LINATTN_EMPI)),
             "other statuses: linattn_strerror's text");
    int failed_before = mt_local_failures;
    int provided;
    MPI_Query_thread(&provided);
    if (mt_rank == 0)
        printf("MPI_Init provided thread level %s\n",
               provided == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
               : provided == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
               : provided == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
                                                   : "MPI_THREAD_MULTIPLE");
    MT_RUN(works_at_thread_single);
    MT_RUN(other_thread_refused);
    int status = mt_finish("mpi single");
    MPI_Finalize();
    int after = every_call(LINATTN_EMPIUSE);
    const char *after_text = linattn_mpi_strerror(LINATTN_EMPIUSE);
    int after_ok = after == 0 && strstr(after_text, "finalized") != NULL;
    if (!after_ok)
        fprintf(stderr, "after MPI_Finalize: %d calls not refused; %s\n",
                after, after_text);
    linattn_d_state_destroy(state);
    linattn_d_plan_destroy(plan);
    return status || failed_before || !after_ok;
}
