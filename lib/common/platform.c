/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * platform.c -- linattn_platform_query: which BLAS, which kernels, which
 * CPU.  The BLAS is asked through the query functions its vendor exports,
 * found with dlsym in the library that provides cblas_dgemm to this
 * process, so that linattn links against no vendor in particular.
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "common/cpu.h"
#include "common/platform.h"

typedef struct {
    const char *name, *isa;
} kernel_isa;

/* OpenBLAS's core names (its driver/others/dynamic.c) and the widest
 * vector extension each kernel family uses. */
static const kernel_isa openblas_cores[] = {
    {"Katmai", "sse"},          {"Coppermine", "sse"},
    {"Northwood", "sse2"},      {"Prescott", "sse3"},
    {"Banias", "sse2"},         {"Atom", "ssse3"},
    {"Core2", "ssse3"},         {"Penryn", "sse4.1"},
    {"Dunnington", "sse4.1"},   {"Nehalem", "sse4.2"},
    {"Athlon", "sse"},          {"Opteron", "sse2"},
    {"Opteron_SSE3", "sse3"},   {"Barcelona", "sse3"},
    {"Nano", "sse3"},           {"Bobcat", "ssse3"},
    {"Sandybridge", "avx"},     {"Bulldozer", "avx"},
    {"Piledriver", "avx"},      {"Steamroller", "avx"},
    {"Excavator", "avx2"},      {"Haswell", "avx2"},
    {"Zen", "avx2"},            {"SkylakeX", "avx512"},
    {"Cooperlake", "avx512"},   {"SapphireRapids", "avx512"},
};

/* BLIS's x86 configurations (its frame/base/bli_arch.c). */
static const kernel_isa blis_archs[] = {
    {"skx", "avx512"},       {"knl", "avx512"},       {"zen5", "avx512"},
    {"zen4", "avx512"},      {"zen3", "avx2"},        {"zen2", "avx2"},
    {"zen", "avx2"},         {"haswell", "avx2"},     {"excavator", "avx2"},
    {"steamroller", "avx"},  {"piledriver", "avx"},   {"bulldozer", "avx"},
    {"sandybridge", "avx"},  {"penryn", "sse4.1"},    {"generic", "generic"},
};

static const char *lookup(const kernel_isa *t, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (!strcasecmp(t[i].name, name))
            return t[i].isa;
    return "unknown";
}

const char *linattn_i_openblas_core_isa(const char *core)
{
    return lookup(openblas_cores, sizeof openblas_cores / sizeof *openblas_cores,
                  core);
}

const char *linattn_i_blis_arch_isa(const char *arch)
{
    return lookup(blis_archs, sizeof blis_archs / sizeof *blis_archs, arch);
}

/* snprintf that cuts silently: every string here is cut to its array by
 * design (the compiler's truncation warnings do not see through this). */
__attribute__((format(printf, 3, 4))) static void cut(char *buf, size_t len,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* The OpenBLAS core type that uses a CPU of this level fully. */
static const char *openblas_core_for(const linattn_platform *p)
{
    int rank = linattn_i_isa_rank(p->cpu_isa);
    if (rank == 4)
        return strstr(p->cpu_features, "avx512bf16")
                   ? "SkylakeX (or Cooperlake: this CPU has avx512bf16)"
                   : "SkylakeX";
    if (rank == 3)
        return "Haswell";
    if (rank == 2)
        return "Sandybridge";
    return NULL;
}

void linattn_i_platform_advise(linattn_platform *p, const char *coretype)
{
    int have = linattn_i_isa_rank(p->blas_kernel_isa);
    int could = linattn_i_isa_rank(p->cpu_isa);
    p->advice[0] = '\0';
    p->blas_underuses_cpu = have >= 0 && could >= 0 && have < could;
    if (!p->blas_underuses_cpu)
        return;
    char what[192];
    cut(what, sizeof what,
             "BLAS runs %s's %s kernels (%s) on a CPU with %s: its GEMMs may "
             "run several times slower than they could.", p->blas_vendor,
             p->blas_kernel, p->blas_kernel_isa, p->cpu_isa);
    const char *core = openblas_core_for(p);
    if (!strcmp(p->blas_vendor, "OpenBLAS") && core &&
        strstr(p->blas_config, "DYNAMIC_ARCH")) {
        if (coretype && *coretype)
            cut(p->advice, sizeof p->advice,
                     "%s OPENBLAS_CORETYPE=%s in the environment selects "
                     "them: set OPENBLAS_CORETYPE=%s instead, before the "
                     "program starts, and compare.", what, coretype, core);
        else
            cut(p->advice, sizeof p->advice,
                     "%s This OpenBLAS does not recognize the CPU: set "
                     "OPENBLAS_CORETYPE=%s in the environment before the "
                     "program starts (and compare), or install a newer "
                     "OpenBLAS.", what, core);
    } else if (!strcmp(p->blas_vendor, "OpenBLAS")) {
        cut(p->advice, sizeof p->advice,
                 "%s This OpenBLAS was built for %s only: use one built with "
                 "DYNAMIC_ARCH=1 (it chooses kernels at run time, "
                 "OPENBLAS_CORETYPE overrides) or for this CPU.", what,
                 p->blas_kernel);
    } else if (!strcmp(p->blas_vendor, "Netlib")) {
        cut(p->advice, sizeof p->advice,
                 "%s It is the reference BLAS, plain loops written for "
                 "clarity: link an optimized one (OpenBLAS or BLIS; on "
                 "Debian choose it with update-alternatives --config "
                 "libblas.so.3-<multiarch>, or configure linattn "
                 "--with-blas=openblas).", what);
    } else if (!strcmp(p->blas_vendor, "BLIS")) {
        cut(p->advice, sizeof p->advice,
                 "%s Use a BLIS that knows this CPU (configured for it, e.g. "
                 "skx or zen4 for AVX-512, or a newer x86_64 build); a BLIS "
                 "built for the x86_64 family can be told its kernels with "
                 "BLIS_ARCH_TYPE (a number in BLIS 0.9: 0 is skx).", what);
    } else {
        cut(p->advice, sizeof p->advice,
                 "%s Use a BLAS build for this CPU.", what);
    }
}

void linattn_i_platform_summarize(linattn_platform *p)
{
    char blas[192];
    if (p->blas_threads > 0)
        cut(blas, sizeof blas, "%s%s%s (%s, %d thread%s)", p->blas_vendor,
                 *p->blas_version ? " " : "", p->blas_version,
                 p->blas_threading, p->blas_threads,
                 p->blas_threads == 1 ? "" : "s");
    else
        cut(blas, sizeof blas, "%s%s%s (%s)", p->blas_vendor,
                 *p->blas_version ? " " : "", p->blas_version,
                 p->blas_threading);
    /* a mistyped LINATTN_ISA must not pass for the level it asked */
    char isa[96] = "";
    const char *ignored = linattn_i_isa_ignored();
    if (ignored)
        cut(isa, sizeof isa, " (LINATTN_ISA=\"%s\" ignored: not generic, "
                             "avx2 or avx512)", ignored);
    cut(p->summary, sizeof p->summary,
             "BLAS %s, kernel %s (%s); CPU %s (%s); linattn kernels %s%s, "
             "%s %d thread%s%s", blas, p->blas_kernel, p->blas_kernel_isa,
             *p->cpu_name ? p->cpu_name : "unnamed", p->cpu_isa, p->lib_isa,
             isa, p->lib_threading, p->lib_threads,
             p->lib_threads == 1 ? "" : "s",
             p->blas_underuses_cpu ? "; WARNING: the BLAS kernel underuses "
                                     "this CPU" : "");
}

/* Copies s (NULL: "") into a char array, cut and terminated. */
#define PUT(field, s) cut((field), sizeof(field), "%s", (s) ? (s) : "")

/* A function of the BLAS library or of the libraries it loads (dlsym on
 * a handle searches its dependencies: Debian's OpenBLAS libblas.so.3 keeps
 * the openblas_* functions in libopenblas.so.0), or NULL.  The whole
 * process is searched only when the BLAS has no handle (linked into the
 * program): another BLAS loaded beside it, such as the OpenBLAS that
 * LAPACK brings when the reference BLAS does the GEMMs, is not this one. */
static void *blas_sym(void *lib, const char *name)
{
    return dlsym(lib ? lib : RTLD_DEFAULT, name);
}

/* Calls of functions found by dlsym, which POSIX lets convert to
 * function pointers (by copying the bits: C itself has no such cast). */
static const char *call_str(void *sym)
{
    const char *(*f)(void);
    memcpy(&f, &sym, sizeof f);
    return f();
}

static const char *call_str_int(void *sym, int arg)
{
    const char *(*f)(int);
    memcpy(&f, &sym, sizeof f);
    return f(arg);
}

static int call_int(void *sym)
{
    int (*f)(void);
    memcpy(&f, &sym, sizeof f);
    return f();
}

static void describe_openblas(linattn_platform *p, void *lib)
{
    void *config = blas_sym(lib, "openblas_get_config");
    if (!config)
        return;
    void *core = blas_sym(lib, "openblas_get_corename");
    void *threads = blas_sym(lib, "openblas_get_num_threads");
    void *parallel = blas_sym(lib, "openblas_get_parallel");
    PUT(p->blas_vendor, "OpenBLAS");
    PUT(p->blas_config, call_str(config));
    /* "OpenBLAS 0.3.21 DYNAMIC_ARCH ...": the version is the second word */
    const char *v = strchr(p->blas_config, ' ');
    if (v) {
        size_t len = strcspn(v + 1, " ");
        cut(p->blas_version, sizeof p->blas_version, "%.*s", (int)len,
                 v + 1);
    }
    if (core) {
        PUT(p->blas_kernel, call_str(core));
        PUT(p->blas_kernel_isa, linattn_i_openblas_core_isa(p->blas_kernel));
    }
    if (threads)
        p->blas_threads = call_int(threads);
    if (parallel) {
        int model = call_int(parallel);
        PUT(p->blas_threading, model == 0   ? "sequential"
                               : model == 1 ? "pthreads"
                               : model == 2 ? "openmp"
                                            : "unknown");
    }
}

static void describe_blis(linattn_platform *p, void *lib)
{
    void *version = blas_sym(lib, "bli_info_get_version_str");
    if (!version)
        return;
    void *arch_id = blas_sym(lib, "bli_arch_query_id");
    void *arch_name = blas_sym(lib, "bli_arch_string");
    void *threads = blas_sym(lib, "bli_thread_get_num_threads");
    void *omp = blas_sym(lib, "bli_info_get_enable_openmp");
    void *pth = blas_sym(lib, "bli_info_get_enable_pthreads");
    PUT(p->blas_vendor, "BLIS");
    PUT(p->blas_version, call_str(version));
    cut(p->blas_config, sizeof p->blas_config, "BLIS %s",
             p->blas_version);
    /* arch_t is an enum; BLIS's integer types (gint_t, dim_t) are 32 or 64
     * bits by build: the values asked for fit the low 32 bits, which an
     * int return reads either way on the x86-64 and AArch64 ABIs. */
    if (arch_id && arch_name) {
        int id = call_int(arch_id);
        PUT(p->blas_kernel, call_str_int(arch_name, id));
        PUT(p->blas_kernel_isa, linattn_i_blis_arch_isa(p->blas_kernel));
    }
    if (threads) {
        int t = call_int(threads);
        p->blas_threads = t > 0 ? t : 1; /* unset: BLIS runs one thread */
    }
    int o = omp ? call_int(omp) : 0;
    int t = pth ? call_int(pth) : 0;
    if (omp || pth)
        PUT(p->blas_threading, o ? "openmp" : t ? "pthreads" : "sequential");
}

/* The reference BLAS, recognized by where distributions install it
 * (Debian and Ubuntu: <libdir>/blas/libblas.so.3.X.Y, chosen through the
 * libblas.so.3 alternative; the file name carries LAPACK's version): it
 * offers no query functions, and is the one BLAS that always underuses
 * the CPU. */
static void describe_reference(linattn_platform *p, const char *file)
{
    char *real = *file ? realpath(file, NULL) : NULL;
    char *base = real ? strrchr(real, '/') : NULL;
    if (!base || base == real) {
        free(real);
        return;
    }
    *base++ = '\0';
    const char *dir = strrchr(real, '/');
    dir = dir ? dir + 1 : real;
    if (strcmp(dir, "blas") || (strncmp(base, "libblas.so", 10) &&
                                strncmp(base, "libcblas.so", 11))) {
        free(real);
        return;
    }
    PUT(p->blas_vendor, "Netlib");
    const char *v = strstr(base, ".so.");
    PUT(p->blas_version, v ? v + 4 : "");
    free(real);
    cut(p->blas_config, sizeof p->blas_config, "reference BLAS %s",
        p->blas_version);
    PUT(p->blas_kernel, "reference");
    PUT(p->blas_kernel_isa, "generic");
    PUT(p->blas_threading, "sequential");
    p->blas_threads = 1;
}

int linattn_platform_query(linattn_platform *info)
{
    if (!info)
        return -1;
    linattn_platform p;
    memset(&p, 0, sizeof p);
    PUT(p.blas_vendor, "unknown");
    PUT(p.blas_kernel, "unknown");
    PUT(p.blas_kernel_isa, "unknown");
    PUT(p.blas_threading, "unknown");
    /* The library that cblas_dgemm comes from, already loaded: asking
     * for it again (RTLD_NOLOAD) only takes a reference. */
    void (*gemm)(void) = (void (*)(void))cblas_dgemm;
    void *addr;
    memcpy(&addr, &gemm, sizeof addr);
    Dl_info where;
    void *lib = NULL;
    if (dladdr(addr, &where) && where.dli_fname) {
        PUT(p.blas_library, where.dli_fname);
        lib = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
    describe_openblas(&p, lib);
    if (!strcmp(p.blas_vendor, "unknown"))
        describe_blis(&p, lib);
    if (!strcmp(p.blas_vendor, "unknown"))
        describe_reference(&p, p.blas_library);
    if (lib)
        dlclose(lib);
    const char *widest;
    linattn_i_cpu_describe(p.cpu_features, sizeof p.cpu_features, p.cpu_name,
                           sizeof p.cpu_name, &widest);
    PUT(p.cpu_isa, widest);
    PUT(p.lib_isa, linattn_i_isa_name(linattn_i_isa()));
#ifdef _OPENMP
    PUT(p.lib_threading, "openmp");
    p.lib_threads = omp_get_max_threads();
#else
    PUT(p.lib_threading, "none");
    p.lib_threads = 1;
#endif
    linattn_i_platform_advise(&p, getenv("OPENBLAS_CORETYPE"));
    linattn_i_platform_summarize(&p);
    *info = p;
    return 0;
}
