/* SPDX-License-Identifier: BSD-3-Clause */
/* cpu.c -- the CPU's vector extensions and the kernels' level (cpu.h). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define LINATTN_X86 1
#endif

/* One extension: cpuid leaf, subleaf, register (0 eax .. 3 edx), bit, and
 * the register state it needs the operating system to save (XCR0 bits). */
typedef struct {
    const char *name;
    unsigned leaf, sub, reg, bit;
    uint64_t xcr0;
} feature;

#define YMM 0x6ull  /* SSE and AVX state */
#define ZMM 0xe6ull /* and opmask, upper ZMM halves, ZMM16-31 */
#define AMX 0x60000ull

static const feature features[] = {
    {"sse2", 1, 0, 3, 26, 0},
    {"sse3", 1, 0, 2, 0, 0},
    {"ssse3", 1, 0, 2, 9, 0},
    {"sse4.1", 1, 0, 2, 19, 0},
    {"sse4.2", 1, 0, 2, 20, 0},
    {"avx", 1, 0, 2, 28, YMM},
    {"f16c", 1, 0, 2, 29, YMM},
    {"fma", 1, 0, 2, 12, YMM},
    {"movbe", 1, 0, 2, 22, 0},
    {"bmi1", 7, 0, 1, 3, 0},
    {"bmi2", 7, 0, 1, 8, 0},
    {"lzcnt", 0x80000001u, 0, 2, 5, 0},
    {"avx2", 7, 0, 1, 5, YMM},
    {"avx_vnni", 7, 1, 0, 4, YMM},
    {"avx512f", 7, 0, 1, 16, ZMM},
    {"avx512dq", 7, 0, 1, 17, ZMM},
    {"avx512cd", 7, 0, 1, 28, ZMM},
    {"avx512bw", 7, 0, 1, 30, ZMM},
    {"avx512vl", 7, 0, 1, 31, ZMM},
    {"avx512ifma", 7, 0, 1, 21, ZMM},
    {"avx512vbmi", 7, 0, 2, 1, ZMM},
    {"avx512vbmi2", 7, 0, 2, 6, ZMM},
    {"avx512vnni", 7, 0, 2, 11, ZMM},
    {"avx512bitalg", 7, 0, 2, 12, ZMM},
    {"avx512vpopcntdq", 7, 0, 2, 14, ZMM},
    {"avx512fp16", 7, 0, 3, 23, ZMM},
    {"avx512bf16", 7, 1, 0, 5, ZMM},
    {"amx_tile", 7, 0, 3, 24, AMX},
    {"amx_bf16", 7, 0, 3, 22, AMX},
    {"amx_int8", 7, 0, 3, 25, AMX},
};
#define NFEATURES (sizeof features / sizeof features[0])

#ifdef LINATTN_X86
/* The register state the operating system saves (0 without XSAVE). */
static uint64_t xcr0(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
        return 0;
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

static int has(const feature *f, uint64_t os)
{
    unsigned r[4] = {0, 0, 0, 0};
    if (!__get_cpuid_count(f->leaf, f->sub, &r[0], &r[1], &r[2], &r[3]))
        return 0;
    if (f->leaf == 7 && f->sub == 1) {
        unsigned a, b, c, d; /* subleaf 1 exists when leaf 7 reports it */
        if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || a < 1)
            return 0;
    }
    return (r[f->reg] >> f->bit & 1) && (os & f->xcr0) == f->xcr0;
}
#endif

/* Bit i set when features[i] is usable. */
static uint64_t usable(void)
{
    uint64_t bits = 0;
#ifdef LINATTN_X86
    uint64_t os = xcr0();
    for (size_t i = 0; i < NFEATURES; i++)
        if (has(&features[i], os))
            bits |= (uint64_t)1 << i;
#endif
    return bits;
}

static int named(uint64_t bits, const char *name)
{
    for (size_t i = 0; i < NFEATURES; i++)
        if (!strcmp(features[i].name, name))
            return (int)(bits >> i & 1);
    return 0;
}

/* The kernels are built for the psABI levels x86-64-v3 and -v4
 * (Makefile.am), whose code may use any instruction of the level, not
 * only the vector ones: every extension of the level must be there. */
int linattn_i_cpu_isa(void)
{
    static const char *const v3[] = {"avx", "avx2", "bmi1", "bmi2", "f16c",
                                     "fma", "lzcnt", "movbe"};
    static const char *const v4[] = {"avx512f", "avx512bw", "avx512cd",
                                     "avx512dq", "avx512vl"};
    uint64_t b = usable();
    for (size_t i = 0; i < sizeof v3 / sizeof *v3; i++)
        if (!named(b, v3[i]))
            return LINATTN_ISA_GENERIC;
    for (size_t i = 0; i < sizeof v4 / sizeof *v4; i++)
        if (!named(b, v4[i]))
            return LINATTN_ISA_AVX2;
    return LINATTN_ISA_AVX512;
}

static const char *const isa_names[LINATTN_ISA_COUNT] = {"generic", "avx2",
                                                         "avx512"};

const char *linattn_i_isa_name(int level)
{
    return level >= 0 && level < LINATTN_ISA_COUNT ? isa_names[level]
                                                   : "unknown";
}

int linattn_i_isa_parse(const char *value)
{
    for (int i = 0; value && i < LINATTN_ISA_COUNT; i++)
        if (!strcmp(value, isa_names[i]))
            return i;
    return -1;
}

static pthread_once_t isa_once = PTHREAD_ONCE_INIT;
static int isa_default, isa_level = -1;
static char isa_ignored[40]; /* a LINATTN_ISA that names no level */

static void isa_init(void)
{
    int cpu = linattn_i_cpu_isa();
    const char *env = getenv("LINATTN_ISA");
    int cap = linattn_i_isa_parse(env);
    if (env && cap < 0)
        snprintf(isa_ignored, sizeof isa_ignored, "%s", env);
    isa_default = cap >= 0 && cap < cpu ? cap : cpu;
    __atomic_store_n(&isa_level, isa_default, __ATOMIC_RELEASE);
}

int linattn_i_isa(void)
{
    int level = __atomic_load_n(&isa_level, __ATOMIC_ACQUIRE);
    if (level >= 0)
        return level;
    pthread_once(&isa_once, isa_init);
    return __atomic_load_n(&isa_level, __ATOMIC_ACQUIRE);
}

int linattn_i_isa_force(int level)
{
    pthread_once(&isa_once, isa_init);
    int cpu = linattn_i_cpu_isa();
    int set = level < 0 ? isa_default : level < cpu ? level : cpu;
    __atomic_store_n(&isa_level, set, __ATOMIC_RELEASE);
    return set;
}

/* Appends s (and a space before it unless first) to buf, cutting. */
static void append(char *buf, size_t len, const char *s)
{
    size_t at = strlen(buf);
    if (at + 1 >= len)
        return;
    snprintf(buf + at, len - at, "%s%s", at ? " " : "", s);
}

void linattn_i_cpu_describe(char *features_out, size_t flen, char *brand,
                            size_t blen, const char **widest)
{
    static const char *const levels[] = {"avx512f", "avx512", "avx2", "avx2",
                                         "avx", "avx", "sse4.2", "sse4.2",
                                         "sse4.1", "sse4.1", "ssse3", "ssse3",
                                         "sse3", "sse3", "sse2", "sse2"};
    uint64_t bits = usable();
    if (flen)
        features_out[0] = '\0';
    for (size_t i = 0; i < NFEATURES; i++)
        if (bits >> i & 1)
            append(features_out, flen, features[i].name);
    if (blen)
        brand[0] = '\0';
    *widest = "unknown";
#ifdef LINATTN_X86
    *widest = "sse2"; /* x86-64's baseline, even where cpuid says less */
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i += 2)
        if (named(bits, levels[i])) {
            *widest = levels[i + 1];
            break;
        }
    unsigned r[12], top = __get_cpuid_max(0x80000000u, NULL);
    if (top >= 0x80000004u && blen) {
        for (unsigned l = 0; l < 3; l++)
            __get_cpuid(0x80000002u + l, &r[4 * l], &r[4 * l + 1],
                        &r[4 * l + 2], &r[4 * l + 3]);
        char s[49];
        memcpy(s, r, 48);
        s[48] = '\0';
        const char *p = s;
        while (*p == ' ')
            p++;
        snprintf(brand, blen, "%s", p);
        size_t n = strlen(brand);
        while (n > 0 && brand[n - 1] == ' ')
            brand[--n] = '\0';
    }
#else
    (void)levels;
#endif
}

int linattn_i_isa_rank(const char *level)
{
    if (!level)
        return -1;
    if (!strcmp(level, "generic"))
        return 0;
    if (!strncmp(level, "sse", 3))
        return 1;
    if (!strcmp(level, "avx"))
        return 2;
    if (!strcmp(level, "avx2"))
        return 3;
    if (!strcmp(level, "avx512"))
        return 4;
    return -1;
}

const char *linattn_i_isa_ignored(void)
{
    pthread_once(&isa_once, isa_init);
    return *isa_ignored ? isa_ignored : NULL;
}
