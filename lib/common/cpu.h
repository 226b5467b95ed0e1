/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu.h -- what the CPU offers (cpuid, and the operating system's support
 * for the wide registers) and which code path linattn's own kernels take.
 *
 * The kernels come in three builds (lib/kern.h): generic, AVX2 + FMA
 * (x86-64-v3) and AVX-512 (x86-64-v4: F, DQ, BW, VL).  The best one the
 * CPU runs is chosen once, at the first call; the environment variable
 * LINATTN_ISA (generic, avx2, avx512) caps it, e.g. to compare paths or to
 * step around a problem, and never raises it above what the CPU has.
 */
#ifndef LINATTN_CPU_H
#define LINATTN_CPU_H

#include <stddef.h>

enum {
    LINATTN_ISA_GENERIC = 0,
    LINATTN_ISA_AVX2 = 1,
    LINATTN_ISA_AVX512 = 2,
    LINATTN_ISA_COUNT = 3
};

/* The widest kernel level this CPU and its operating system support. */
int linattn_i_cpu_isa(void);

/* The level the library's kernels use: linattn_i_cpu_isa() capped by
 * LINATTN_ISA (read once), or as set by linattn_i_isa_force. */
int linattn_i_isa(void);

/* For tests: makes the kernels take level (capped by the CPU's) and
 * returns the level now in force; a negative level restores the default.
 * Not thread-safe: call it while no other thread is inside the library. */
int linattn_i_isa_force(int level);

/* The value of LINATTN_ISA when it names no level (ignored then; cut to
 * 39 bytes), else NULL. */
const char *linattn_i_isa_ignored(void);

/* "generic", "avx2", "avx512". */
const char *linattn_i_isa_name(int level);

/* The level LINATTN_ISA names (value as in the environment), or -1 for
 * NULL or a value that names none. */
int linattn_i_isa_parse(const char *value);

/* The CPU's vector extensions as a space-separated list ("sse2 ... avx2
 * fma avx512f ..."), only those the operating system lets programs use;
 * its brand string (empty where cpuid has none); and the widest vector
 * level among "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2",
 * "avx512" ("unknown" on other architectures).  Each string is cut to its
 * buffer, always terminated. */
void linattn_i_cpu_describe(char *features, size_t flen, char *brand,
                            size_t blen, const char **widest);

/* The rank of a vector level named as above: 1 for the SSE family, 2 avx,
 * 3 avx2, 4 avx512, 0 for "generic" (scalar code), -1 for anything else
 * (unknown: not comparable). */
int linattn_i_isa_rank(const char *level);

#endif
