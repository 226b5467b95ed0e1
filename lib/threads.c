/* threads.c -- the threading policy (see threads.h). */
#ifdef _OPENMP
#include <omp.h>
#endif
#include "threads.h"

#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
/* 0 sequential, 1 pthreads, 2 OpenMP (OpenBLAS's own API). */
int openblas_get_parallel(void);
void openblas_set_num_threads(int);
int openblas_get_num_threads(void);
#endif

int linattn_i_blas_serial_begin(void)
{
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    if (openblas_get_parallel() == 1) {
        int t = openblas_get_num_threads();
        openblas_set_num_threads(1);
        return t;
    }
#endif
    return 0;
}

void linattn_i_blas_serial_end(int saved)
{
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    if (saved > 0)
        openblas_set_num_threads(saved);
#else
    (void)saved;
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

int64_t linattn_i_parallel_ranges(int nt, int64_t n, linattn_i_range_fn f,
                                  void *ctx)
{
    int64_t result = INT64_MAX;
    if (nt <= 1)
        return f(ctx, 0, 0, n);
    int saved = linattn_i_blas_serial_begin();
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) reduction(min : result)
#endif
    {
        int t = linattn_i_thread_num();
        int64_t r = f(ctx, t, n * t / nt, n * (t + 1) / nt);
        result = r < result ? r : result;
    }
    linattn_i_blas_serial_end(saved);
    return result;
}
