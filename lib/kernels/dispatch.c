/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dispatch.c -- the tables of the kernels' code path in force: the
 * forward's (kernels/kern.h) and the backward's (kernels/kern_grad.h),
 * both chosen here by one rule, so that a call never mixes the builds of
 * two paths.  Compiled in the generic build only.
 */
#include <stddef.h>
#include "common/cpu.h"
#include "kernels/kern.h"
#include "kernels/kern_grad.h"

extern const XI(kern) XI(kern_generic);
extern const XI(gkern) XI(gkern_generic);
#ifdef LINATTN_HAVE_X86_KERNELS
extern const XI(kern) XI(kern_avx2), XI(kern_avx512);
extern const XI(gkern) XI(gkern_avx2), XI(gkern_avx512);
#endif

const XI(kern) *XI(kern_of)(int level)
{
    switch (level) {
    case LINATTN_ISA_GENERIC:
        return &XI(kern_generic);
#ifdef LINATTN_HAVE_X86_KERNELS
    case LINATTN_ISA_AVX2:
        return &XI(kern_avx2);
    case LINATTN_ISA_AVX512:
        return &XI(kern_avx512);
#endif
    default:
        return NULL;
    }
}

static const XI(gkern) *gkern_of(int level)
{
    switch (level) {
#ifdef LINATTN_HAVE_X86_KERNELS
    case LINATTN_ISA_AVX2:
        return &XI(gkern_avx2);
    case LINATTN_ISA_AVX512:
        return &XI(gkern_avx512);
#endif
    default:
        return &XI(gkern_generic);
    }
}

/* The level in force (linattn_i_isa()) or, when it was not built, the
 * next one below that was. */
static int level_now(void)
{
    int level = linattn_i_isa();
    while (level > 0 && !XI(kern_of)(level))
        level--;
    return level;
}

const XI(kern) *XI(kern_now)(void)
{
    return XI(kern_of)(level_now());
}

const XI(gkern) *XI(gkern_now)(void)
{
    return gkern_of(level_now());
}
