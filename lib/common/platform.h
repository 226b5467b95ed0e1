/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * platform.h -- the parts of linattn_platform_query (platform.c) that
 * need no BLAS and no CPU to be tested: which vector level a BLAS kernel
 * family uses, and the verdict and advice drawn from a description.
 */
#ifndef LINATTN_PLATFORM_H
#define LINATTN_PLATFORM_H

#include "linattn.h"

/* The vector level of an OpenBLAS core name ("Haswell" -> "avx2") or a
 * BLIS architecture ("skx" -> "avx512"), case-insensitive; "unknown" for
 * names not in the tables (other architectures included). */
const char *linattn_i_openblas_core_isa(const char *core);
const char *linattn_i_blis_arch_isa(const char *arch);

/* Sets p->blas_underuses_cpu and p->advice from p's vendor, config,
 * kernel, kernel level, CPU level and features.  coretype: the value of
 * OPENBLAS_CORETYPE in the environment, or NULL. */
void linattn_i_platform_advise(linattn_platform *p, const char *coretype);

/* Sets p->summary from the other fields. */
void linattn_i_platform_summarize(linattn_platform *p);

#endif
