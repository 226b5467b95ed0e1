/* SPDX-License-Identifier: BSD-3-Clause */
/* threads.c -- the threading policy (see threads.h). */
#include <pthread.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "common/threads.h"

#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
/* 0 sequential, 1 pthreads, 2 OpenMP (OpenBLAS's own API). */
int openblas_get_parallel(void);
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
#endif

#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
/* OpenBLAS's thread count is process-wide: concurrent calls into the
 * library count their splits, the first saves the setting and the last
 * restores it. */
static pthread_mutex_t serial_lock = PTHREAD_MUTEX_INITIALIZER;
static int serial_depth, serial_saved;
#endif

int linattn_i_blas_serial_begin(void)
{
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    if (openblas_get_parallel() != 1)
        return 0;
    pthread_mutex_lock(&serial_lock);
    if (serial_depth++ == 0) {
        serial_saved = openblas_get_num_threads();
        openblas_set_num_threads(1);
    }
    pthread_mutex_unlock(&serial_lock);
    return 1;
#else
    return 0;
#endif
}

void linattn_i_blas_serial_end(int began)
{
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    if (!began)
        return;
    pthread_mutex_lock(&serial_lock);
    if (--serial_depth == 0)
        openblas_set_num_threads(serial_saved);
    pthread_mutex_unlock(&serial_lock);
#else
    (void)began;
#endif
}

int linattn_i_may_thread(void)
{
#ifdef _OPENMP
    if (omp_in_parallel() || omp_get_max_threads() < 2)
        return 0;
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    if (openblas_get_parallel() == 1)
        return 0;
#endif
    return 1;
#else
    return 0;
#endif
}

int linattn_i_threads(int64_t rows, int64_t min_rows)
{
#ifdef _OPENMP
    if (omp_in_parallel())
        return 1;
    int64_t by_work = min_rows > 0 ? rows / min_rows : rows;
    int64_t t = omp_get_max_threads();
    t = t < by_work ? t : by_work;
    t = t < LINATTN_MAX_THREADS ? t : LINATTN_MAX_THREADS;
    return t > 1 ? (int)t : 1;
#else
    (void)rows;
    (void)min_rows;
    return 1;
#endif
}

int linattn_i_thread_num(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

int linattn_i_problem_threads(int64_t problems)
{
    int nt = linattn_i_threads(problems, 1);
    return nt < linattn_i_threads(INT64_MAX, 1) ? 1 : nt;
}

int64_t linattn_i_range_start(int64_t n, int nt, int t)
{
    /* (n / nt) t + min(t, n % nt): no n * t product to overflow. */
    int64_t r = n % nt;
    return (n / nt) * t + (t < r ? t : r);
}

int linattn_i_range_of(int64_t n, int nt, int64_t r)
{
    int t = 0;
    while (t + 1 < nt && linattn_i_range_start(n, nt, t + 1) <= r)
        t++;
    return t;
}

int64_t linattn_i_parallel_ranges(int nt, int64_t n, linattn_i_range_fn f,
                                  void *ctx)
{
    int64_t result = INT64_MAX;
    if (nt <= 1)
        return f(ctx, 0, 0, n);
    int began = linattn_i_blas_serial_begin();
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(min : result)
    {
        /* The team may be smaller than asked (OMP_DYNAMIC, thread limits):
         * every member takes ranges in turn until all nt are done. */
        for (int t = omp_get_thread_num(); t < nt; t += omp_get_num_threads()) {
            int64_t r = f(ctx, t, linattn_i_range_start(n, nt, t),
                          linattn_i_range_start(n, nt, t + 1));
            result = r < result ? r : result;
        }
    }
#else
    for (int t = 0; t < nt; t++) {
        int64_t r = f(ctx, t, linattn_i_range_start(n, nt, t),
                      linattn_i_range_start(n, nt, t + 1));
        result = r < result ? r : result;
    }
#endif
    linattn_i_blas_serial_end(began);
    return result;
}
