/* SPDX-License-Identifier: BSD-3-Clause */
/* vexp_avx2.h -- exp and elu + 1 over double arrays with AVX2 + FMA
 * (see vexp_avx2.c); available when LINATTN_HAVE_AVX2_EXP is defined. */
#ifndef LINATTN_VEXP_AVX2_H
#define LINATTN_VEXP_AVX2_H

#include <stdint.h>

#if defined(__x86_64__) && defined(LINATTN_HAVE_TARGET_CLONES)
#define LINATTN_HAVE_AVX2_EXP 1
/* Nonzero when this CPU has AVX2 and FMA. */
int linattn_i_avx2_ok(void);
/* y = exp(x), y = elu(x) + 1; y may equal x. */
void linattn_i_exp_avx2(double *y, const double *x, int64_t n);
void linattn_i_elu1_avx2(double *y, const double *x, int64_t n);
/* y = exp(x - c). */
void linattn_i_exp_shift_avx2(double *y, const double *x, int64_t n,
                              double c);
#endif

#endif
