/* SPDX-License-Identifier: BSD-3-Clause */
/* kern_dispatch.c -- the table of the kernels' level (kern.h). */
#include <stddef.h>
#include "common/cpu.h"
#include "kernels/kern.h"

extern const XI(kern) XI(kern_generic);
#ifdef LINATTN_HAVE_X86_KERNELS
extern const XI(kern) XI(kern_avx2), XI(kern_avx512);
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

const XI(kern) *XI(kern_now)(void)
{
    /* a level without a build falls to the next one below */
    for (int level = linattn_i_isa(); level > 0; level--)
        if (XI(kern_of)(level))
            return XI(kern_of)(level);
    return &XI(kern_generic);
}
