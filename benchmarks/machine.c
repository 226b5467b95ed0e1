/* SPDX-License-Identifier: BSD-3-Clause */
/* machine.c -- threads, available memory, peak memory (machine.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif
#include <cblas.h>
#include "machine.h"

int bench_max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

void bench_set_threads(int threads)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#endif
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    openblas_set_num_threads(threads);
#else
    (void)threads;
#endif
}

int bench_blas_serial_begin(void)
{
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    int saved = openblas_get_num_threads();
    if (openblas_get_parallel() == 1)
        openblas_set_num_threads(1);
    return saved;
#else
    return 0;
#endif
}

void bench_blas_serial_end(int saved)
{
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    openblas_set_num_threads(saved);
#else
    (void)saved;
#endif
}

/* The value in kB of the line "key: value kB" of a /proc file, or -1. */
static int64_t proc_kb(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    int64_t kb = -1;
    size_t len = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, len) && line[len] == ':') {
            long long v;
            if (sscanf(line + len + 1, "%lld", &v) == 1)
                kb = v;
            break;
        }
    fclose(f);
    return kb;
}

int64_t bench_mem_available(void)
{
    int64_t kb = proc_kb("/proc/meminfo", "MemAvailable");
    if (kb >= 0)
        return kb * 1024;
#ifdef _SC_AVPHYS_PAGES
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages > 0 && size > 0)
        return (int64_t)pages * size;
#endif
    return -1;
}

static int64_t peak_base_kb = -1;

void bench_peak_begin(void)
{
    peak_base_kb = -1;
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return;
    /* "5" resets the peak resident size to the current one (Linux 4.0). */
    int ok = fputs("5", f) >= 0;
    ok &= fclose(f) == 0;
    if (ok)
        peak_base_kb = proc_kb("/proc/self/status", "VmRSS");
}

int64_t bench_peak_end(void)
{
    if (peak_base_kb < 0)
        return -1;
    int64_t hwm = proc_kb("/proc/self/status", "VmHWM");
    if (hwm < 0)
        return -1;
    return (hwm > peak_base_kb ? hwm - peak_base_kb : 0) * 1024;
}

void bench_malloc_returns_memory(void)
{
#ifdef __GLIBC__
    /* A fixed threshold also stops glibc from raising it after frees. */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
#endif
}

void bench_platform_print(FILE *out, linattn_platform *p)
{
    linattn_platform mine;
    if (!p)
        p = &mine;
    if (linattn_platform_query(p)) {
        fprintf(out, "platform: unknown\n");
        return;
    }
    fprintf(out, "platform: %s\n", p->summary);
    if (*p->blas_config)
        fprintf(out, "BLAS build: %s (%s)\n", p->blas_config, p->blas_library);
    if (p->blas_underuses_cpu)
        fprintf(out, "WARNING: %s\n", p->advice);
}

double bench_load_average(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double load = -1;
    if (f) {
        if (fscanf(f, "%lf", &load) != 1)
            load = -1;
        fclose(f);
    }
    return load;
}

void bench_print_circumstances(FILE *out, int argc, char **argv)
{
    static const char *const vars[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                       "OPENBLAS_CORETYPE", "LINATTN_ISA"};
    fprintf(out, "command:");
    for (int i = 0; i < argc; i++)
        fprintf(out, " %s", argv[i]);
    fprintf(out, "\nenvironment:");
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        fprintf(out, " %s=%s", vars[i], v ? v : "(unset)");
    }
    const char *clk = getenv("BENCH_CLOCK");
    fprintf(out, "\nclock: %s", clk && !strcmp(clk, "cpu")
                                    ? "the process's CPU time (--cpu-time)"
                                    : "wall clock");
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    fprintf(out, "\nload average %.2f on %ld core(s)%s\n", bench_load_average(),
            cores, bench_load_average() > (double)cores
                       ? ": the machine is shared, timings are noisy"
                       : "");
}
