/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * machine.h -- what the benchmarks ask of the machine: thread counts
 * (OpenMP and OpenBLAS together), the memory available, and the peak
 * memory of a stretch of work.
 */
#ifndef LINATTN_MACHINE_H
#define LINATTN_MACHINE_H

#include <stdint.h>
#include <stdio.h>
#include "linattn.h"

/* The OpenMP thread count (1 without OpenMP). */
int bench_max_threads(void);

/* Sets OpenMP's thread count and, with OpenBLAS, its own to the same. */
void bench_set_threads(int threads);

/* OpenBLAS's pthreads build to one thread for the duration of a split of
 * our own, and back: what linattn does around its splits
 * (lib/common/threads.c).  Pass _end what _begin returned. */
int bench_blas_serial_begin(void);
void bench_blas_serial_end(int saved);

/* Bytes of memory available to a new allocation: MemAvailable from
 * /proc/meminfo, else the free physical pages; -1 when unknown. */
int64_t bench_mem_available(void);

/* The peak resident memory of what runs between _begin and _end:
 * _begin resets the kernel's high-water mark (Linux: /proc/self/clear_refs)
 * and notes the resident size; _end returns the rise of the high-water
 * mark over it, in bytes, or -1 where the kernel offers no reset. */
void bench_peak_begin(void);
int64_t bench_peak_end(void);

/* What the run measures on (linattn_platform_query), printed as
 * "platform: <summary>" and, when the BLAS kernel underuses the CPU, a
 * WARNING line with the remedy; filled into *p when p is not NULL. */
void bench_platform_print(FILE *out, linattn_platform *p);

/* The run's circumstances, for whoever re-measures: the command line,
 * the environment variables that choose threads and kernels
 * (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, OPENBLAS_CORETYPE, LINATTN_ISA),
 * and the load average (this project's machine is shared: a load above
 * the core count means other jobs ran meanwhile). */
void bench_print_circumstances(FILE *out, int argc, char **argv);

/* The 1-minute load average, or -1. */
double bench_load_average(void);

/* Makes freed memory return to the kernel at once (glibc: large blocks
 * always from mmap), so that one measurement's workspace does not hide
 * the next one's rise. */
void bench_malloc_returns_memory(void);

#endif
