/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_platform.c -- linattn_platform_query against independent sources:
 * OpenBLAS's own query functions called directly (when the build links
 * OpenBLAS), the compiler's __builtin_cpu_supports for the CPU, and child
 * processes started with OPENBLAS_CORETYPE and LINATTN_ISA set, which
 * must see the kernels those variables select; the advice drawn from
 * hand-made descriptions; the kernel-name tables.
 */
#define _GNU_SOURCE
#include <cblas.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "testutil.h"
#include "common/cpu.h"
#include "common/platform.h"

extern char **environ;

#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
char *openblas_get_config(void);
char *openblas_get_corename(void);
int openblas_get_num_threads(void);
int openblas_get_parallel(void);
#elif defined(LINATTN_HAVE_BLIS_INFO)
const char *bli_info_get_version_str(void);
#endif

/* Every string field of p is terminated inside its array. */
static void assert_terminated(const linattn_platform *p)
{
#define TERM(f) ck_assert(memchr(p->f, '\0', sizeof p->f) != NULL)
    TERM(blas_vendor), TERM(blas_version), TERM(blas_config);
    TERM(blas_library), TERM(blas_kernel), TERM(blas_kernel_isa);
    TERM(blas_threading), TERM(cpu_name), TERM(cpu_isa);
    TERM(cpu_features), TERM(lib_isa), TERM(lib_threading), TERM(advice);
    TERM(summary);
#undef TERM
}

/* " name " is a word of the space-separated list. */
static int has_word(const char *list, const char *name)
{
    char padded[512], want[64];
    snprintf(padded, sizeof padded, " %s ", list);
    snprintf(want, sizeof want, " %s ", name);
    return strstr(padded, want) != NULL;
}

/* The CPU's widest level by the compiler's own detection. */
static const char *builtin_widest(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return "avx512";
    if (__builtin_cpu_supports("avx2"))
        return "avx2";
    if (__builtin_cpu_supports("avx"))
        return "avx";
    if (__builtin_cpu_supports("sse4.2"))
        return "sse4.2";
    if (__builtin_cpu_supports("sse4.1"))
        return "sse4.1";
    if (__builtin_cpu_supports("ssse3"))
        return "ssse3";
    if (__builtin_cpu_supports("sse3"))
        return "sse3";
    return "sse2";
#else
    return "unknown";
#endif
}

/* The kernel level the library should pick without LINATTN_ISA: the
 * psABI level the CPU has in full (GCC names the levels; clang 14 has
 * not every extension's name, so it checks those it has). */
static const char *builtin_lib_isa(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
#if defined(__clang__)
    int v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
    int v4 = v3 && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512cd");
#else
    int v3 = __builtin_cpu_supports("x86-64-v3");
    int v4 = __builtin_cpu_supports("x86-64-v4");
#endif
    if (v4)
        return "avx512";
    if (v3)
        return "avx2";
#endif
    return "generic";
}

/* The level in force under this process's LINATTN_ISA: the one it names
 * when that is below the CPU's, else the CPU's. */
static const char *expected_lib_isa(void)
{
    const char *cpu = builtin_lib_isa();
    int cap = linattn_i_isa_parse(getenv("LINATTN_ISA"));
    return cap >= 0 && cap < linattn_i_isa_parse(cpu) ? linattn_i_isa_name(cap)
                                                      : cpu;
}

START_TEST(rejects_null_and_fills_everything)
{
    ck_assert_int_eq(linattn_platform_query(NULL), -1);
    linattn_platform p;
    memset(&p, 0x5a, sizeof p);
    ck_assert_int_eq(linattn_platform_query(&p), 0);
    assert_terminated(&p);
    for (int i = 0; i < 8; i++)
        ck_assert(p.reserved[i] == 0);
    ck_assert_str_ne(p.blas_vendor, "");
    ck_assert_str_ne(p.blas_kernel, "");
    ck_assert(strstr(p.summary, p.blas_vendor) != NULL);
    ck_assert(strstr(p.summary, p.blas_kernel) != NULL);
    ck_assert(strstr(p.summary, p.cpu_isa) != NULL);
    /* no advice without a verdict, and the verdict follows the ranks */
    int have = linattn_i_isa_rank(p.blas_kernel_isa);
    int could = linattn_i_isa_rank(p.cpu_isa);
    ck_assert_int_eq(p.blas_underuses_cpu, have >= 0 && could >= 0 && have < could);
    ck_assert_int_eq(p.advice[0] != '\0', p.blas_underuses_cpu);
    printf("platform: %s\n", p.summary);
    if (p.blas_underuses_cpu)
        printf("advice: %s\n", p.advice);
}
END_TEST

START_TEST(blas_matches_its_own_queries)
{
    linattn_platform p;
    ck_assert_int_eq(linattn_platform_query(&p), 0);
#ifdef LINATTN_HAVE_OPENBLAS_GET_PARALLEL
    /* this build links OpenBLAS: the library must have found it */
    ck_assert_str_eq(p.blas_vendor, "OpenBLAS");
    ck_assert_str_eq(p.blas_config, openblas_get_config());
    ck_assert_str_eq(p.blas_kernel, openblas_get_corename());
    ck_assert_int_eq(p.blas_threads, openblas_get_num_threads());
    const char *models[3] = {"sequential", "pthreads", "openmp"};
    ck_assert_str_eq(p.blas_threading, models[openblas_get_parallel()]);
    char version[64];
    ck_assert_int_eq(sscanf(openblas_get_config(), "OpenBLAS %63s", version), 1);
    ck_assert_str_eq(p.blas_version, version);
    ck_assert_str_eq(p.blas_kernel_isa, linattn_i_openblas_core_isa(p.blas_kernel));
    ck_assert(strstr(p.blas_library, "blas") != NULL);
#elif defined(LINATTN_HAVE_BLIS_INFO)
    /* this build links BLIS */
    ck_assert_str_eq(p.blas_vendor, "BLIS");
    ck_assert_str_eq(p.blas_version, bli_info_get_version_str());
    ck_assert_str_ne(p.blas_kernel, "unknown");
    ck_assert_str_eq(p.blas_kernel_isa, linattn_i_blis_arch_isa(p.blas_kernel));
    ck_assert_int_ge(p.blas_threads, 1);
    printf("BLIS %s, kernel %s (%s), %s\n", p.blas_version, p.blas_kernel,
           p.blas_kernel_isa, p.blas_threading);
#else
    printf("this build links neither OpenBLAS nor BLIS: vendor %s, kernel "
           "%s, library %s\n", p.blas_vendor, p.blas_kernel, p.blas_library);
    /* where cblas_dgemm comes from, by the test's own dladdr: Debian's
     * reference BLAS lives in <libdir>/blas/ (whatever other BLAS the
     * process loaded, as OpenBLAS through LAPACK: not named) */
    Dl_info where;
    void (*gemm)(void) = (void (*)(void))cblas_dgemm;
    void *addr;
    memcpy(&addr, &gemm, sizeof addr);
    ck_assert(dladdr(addr, &where) && where.dli_fname);
    char *real = realpath(where.dli_fname, NULL);
    if (real && strstr(real, "/blas/libblas.so.")) {
        ck_assert_str_eq(p.blas_vendor, "Netlib");
        ck_assert_str_eq(p.blas_kernel, "reference");
        ck_assert(strstr(real, p.blas_version) != NULL);
        ck_assert_int_eq(p.blas_underuses_cpu,
                         linattn_i_isa_rank(p.cpu_isa) > 0);
    } else {
        ck_assert_str_eq(p.blas_vendor, "unknown");
        ck_assert_str_eq(p.blas_kernel, "unknown");
        ck_assert_int_eq(p.blas_underuses_cpu, 0);
    }
    free(real);
#endif
}
END_TEST

START_TEST(cpu_matches_the_compilers_detection)
{
    linattn_platform p;
    ck_assert_int_eq(linattn_platform_query(&p), 0);
    ck_assert_str_eq(p.cpu_isa, builtin_widest());
    ck_assert_str_eq(p.lib_isa, expected_lib_isa());
#if defined(__x86_64__)
    /* (__builtin_cpu_supports takes only literals) */
#define SAME(name) \
    ck_assert_msg(has_word(p.cpu_features, name) == \
                      (__builtin_cpu_supports(name) != 0), "%s", name)
    SAME("sse2"), SAME("sse3"), SAME("ssse3"), SAME("sse4.1");
    SAME("sse4.2"), SAME("avx"), SAME("avx2"), SAME("fma");
    SAME("avx512f"), SAME("avx512dq"), SAME("avx512bw"), SAME("avx512vl");
    SAME("avx512cd"), SAME("bmi2");
    ck_assert(has_word(p.cpu_features, "bmi1") ==
              (__builtin_cpu_supports("bmi") != 0));
#if !defined(__clang__)
    SAME("lzcnt"), SAME("movbe"), SAME("f16c");
#endif
#undef SAME
    ck_assert(strlen(p.cpu_name) > 0);
#endif
#ifdef _OPENMP
    ck_assert_str_eq(p.lib_threading, "openmp");
    ck_assert_int_eq(p.lib_threads, omp_get_max_threads());
#else
    ck_assert_str_eq(p.lib_threading, "none");
    ck_assert_int_eq(p.lib_threads, 1);
#endif
}
END_TEST

START_TEST(kernel_tables)
{
    ck_assert_str_eq(linattn_i_openblas_core_isa("Prescott"), "sse3");
    ck_assert_str_eq(linattn_i_openblas_core_isa("haswell"), "avx2");
    ck_assert_str_eq(linattn_i_openblas_core_isa("SKYLAKEX"), "avx512");
    ck_assert_str_eq(linattn_i_openblas_core_isa("Cooperlake"), "avx512");
    ck_assert_str_eq(linattn_i_openblas_core_isa("Zen"), "avx2");
    ck_assert_str_eq(linattn_i_openblas_core_isa("Sandybridge"), "avx");
    ck_assert_str_eq(linattn_i_openblas_core_isa("NEOVERSEN1"), "unknown");
    ck_assert_str_eq(linattn_i_openblas_core_isa(NULL), "unknown");
    ck_assert_str_eq(linattn_i_blis_arch_isa("skx"), "avx512");
    ck_assert_str_eq(linattn_i_blis_arch_isa("zen3"), "avx2");
    ck_assert_str_eq(linattn_i_blis_arch_isa("generic"), "generic");
    ck_assert_str_eq(linattn_i_blis_arch_isa("armsve"), "unknown");
    ck_assert_int_eq(linattn_i_isa_rank("sse3"), 1);
    ck_assert_int_eq(linattn_i_isa_rank("sse4.2"), 1);
    ck_assert_int_eq(linattn_i_isa_rank("avx"), 2);
    ck_assert_int_eq(linattn_i_isa_rank("avx2"), 3);
    ck_assert_int_eq(linattn_i_isa_rank("avx512"), 4);
    ck_assert_int_eq(linattn_i_isa_rank("generic"), 0);
    ck_assert_int_eq(linattn_i_isa_rank("unknown"), -1);
    ck_assert_int_eq(linattn_i_isa_parse("avx2"), LINATTN_ISA_AVX2);
    ck_assert_int_eq(linattn_i_isa_parse("avx512"), LINATTN_ISA_AVX512);
    ck_assert_int_eq(linattn_i_isa_parse("generic"), LINATTN_ISA_GENERIC);
    ck_assert_int_eq(linattn_i_isa_parse("AVX2x"), -1);
    ck_assert_int_eq(linattn_i_isa_parse(NULL), -1);
}
END_TEST

/* A description as the query would make it, for the advice tests. */
static linattn_platform made(const char *vendor, const char *config,
                             const char *kernel, const char *kisa,
                             const char *cpu, const char *features)
{
    linattn_platform p;
    memset(&p, 0, sizeof p);
    snprintf(p.blas_vendor, sizeof p.blas_vendor, "%s", vendor);
    snprintf(p.blas_config, sizeof p.blas_config, "%s", config);
    snprintf(p.blas_kernel, sizeof p.blas_kernel, "%s", kernel);
    snprintf(p.blas_kernel_isa, sizeof p.blas_kernel_isa, "%s", kisa);
    snprintf(p.cpu_isa, sizeof p.cpu_isa, "%s", cpu);
    snprintf(p.cpu_features, sizeof p.cpu_features, "%s", features);
    return p;
}

START_TEST(advice_names_the_remedy)
{
    const char *dyn = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY";
    const char *avx512 = "sse2 avx avx2 fma avx512f avx512dq avx512bw avx512vl";
    /* the case of the issue: Prescott kernels on an AVX-512 Xeon */
    linattn_platform p = made("OpenBLAS", dyn, "Prescott", "sse3", "avx512",
                              "sse2 avx2 fma avx512f avx512bf16 amx_tile");
    linattn_i_platform_advise(&p, NULL);
    ck_assert_int_eq(p.blas_underuses_cpu, 1);
    ck_assert(strstr(p.advice, "Prescott kernels (sse3)") != NULL);
    ck_assert(strstr(p.advice, "set OPENBLAS_CORETYPE=SkylakeX (or Cooperlake") != NULL);
    ck_assert(strstr(p.advice, "does not recognize the CPU") != NULL);
    /* the environment forcing an AVX2 kernel on AVX-512 */
    p = made("OpenBLAS", dyn, "Haswell", "avx2", "avx512", avx512);
    linattn_i_platform_advise(&p, "Haswell");
    ck_assert_int_eq(p.blas_underuses_cpu, 1);
    ck_assert(strstr(p.advice, "OPENBLAS_CORETYPE=Haswell in the environment") != NULL);
    ck_assert(strstr(p.advice, "set OPENBLAS_CORETYPE=SkylakeX instead") != NULL);
    ck_assert(strstr(p.advice, "Cooperlake") == NULL); /* no avx512bf16 */
    /* SSE kernels on an AVX2 machine */
    p = made("OpenBLAS", dyn, "Nehalem", "sse4.2", "avx2", "sse2 avx avx2 fma");
    linattn_i_platform_advise(&p, NULL);
    ck_assert_int_eq(p.blas_underuses_cpu, 1);
    ck_assert(strstr(p.advice, "OPENBLAS_CORETYPE=Haswell") != NULL);
    /* a build for one target only cannot switch */
    p = made("OpenBLAS", "OpenBLAS 0.3.20 NO_AFFINITY HASWELL", "Haswell", "avx2",
             "avx512", avx512);
    linattn_i_platform_advise(&p, NULL);
    ck_assert_int_eq(p.blas_underuses_cpu, 1);
    ck_assert(strstr(p.advice, "built for Haswell only") != NULL);
    ck_assert(strstr(p.advice, "DYNAMIC_ARCH=1") != NULL);
    /* the reference BLAS: always an optimized one instead */
    p = made("Netlib", "reference BLAS 3.11.0", "reference", "generic", "avx2",
             "sse2 avx avx2 fma");
    linattn_i_platform_advise(&p, NULL);
    ck_assert_int_eq(p.blas_underuses_cpu, 1);
    ck_assert(strstr(p.advice, "reference BLAS") != NULL);
    ck_assert(strstr(p.advice, "update-alternatives") != NULL);
    /* BLIS and others: another build */
    p = made("BLIS", "BLIS 0.9.0", "haswell", "avx2", "avx512", avx512);
    linattn_i_platform_advise(&p, NULL);
    ck_assert_int_eq(p.blas_underuses_cpu, 1);
    ck_assert(strstr(p.advice, "BLIS that knows this CPU") != NULL);
    ck_assert(strstr(p.advice, "BLIS_ARCH_TYPE") != NULL);
    p = made("BLIS", "BLIS 0.9.0", "generic", "generic", "avx2", "avx2 fma");
    linattn_i_platform_advise(&p, NULL);
    ck_assert_int_eq(p.blas_underuses_cpu, 1);
    /* the right kernels, or nothing known: no warning, no advice */
    const char *fine[][3] = {{"SkylakeX", "avx512", "avx512"},
                             {"Cooperlake", "avx512", "avx512"},
                             {"Haswell", "avx2", "avx2"},
                             {"Zen", "avx2", "avx2"},
                             {"Sandybridge", "avx", "avx"},
                             {"unknown", "unknown", "avx512"},
                             {"Haswell", "avx2", "unknown"}};
    for (size_t i = 0; i < sizeof fine / sizeof fine[0]; i++) {
        p = made("OpenBLAS", dyn, fine[i][0], fine[i][1], fine[i][2], avx512);
        snprintf(p.advice, sizeof p.advice, "stale");
        linattn_i_platform_advise(&p, "Haswell");
        ck_assert_int_eq(p.blas_underuses_cpu, 0);
        ck_assert_str_eq(p.advice, "");
    }
    p = made("unknown", "", "unknown", "unknown", "avx512", avx512);
    linattn_i_platform_advise(&p, NULL);
    ck_assert_int_eq(p.blas_underuses_cpu, 0);
    /* the summary carries the warning */
    p = made("OpenBLAS", dyn, "Prescott", "sse3", "avx512", avx512);
    linattn_i_platform_advise(&p, NULL);
    linattn_i_platform_summarize(&p);
    ck_assert(strstr(p.summary, "WARNING") != NULL);
    ck_assert(strstr(p.summary, "Prescott (sse3)") != NULL);
}
END_TEST

/* Runs this program again with "--describe" and one more environment
 * variable; returns what it printed (static buffer). */
static const char *child_description(const char *var)
{
    static char out[4096];
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof *env);
    ck_assert(env != NULL);
    size_t k = 0, len = strcspn(var, "=") + 1;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], var, len))
            env[k++] = environ[i];
    env[k++] = (char *)var;
    char *argv[] = {(char *)"test_platform", (char *)"--describe", NULL};
    pid_t pid;
    ck_assert_int_eq(posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env), 0);
    close(fds[1]);
    ssize_t got, at = 0;
    while ((got = read(fds[0], out + at, sizeof out - 1 - (size_t)at)) > 0)
        at += got;
    out[at] = '\0';
    close(fds[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    return out;
}

/* The child's side: the fields the parent checks, one per line. */
static int describe(void)
{
    linattn_platform p;
    if (linattn_platform_query(&p))
        return 1;
    printf("kernel=%s\nkernel_isa=%s\nunderuses=%d\nlib_isa=%s\nadvice=%s\n"
           "summary=%s\n", p.blas_kernel, p.blas_kernel_isa,
           p.blas_underuses_cpu, p.lib_isa, p.advice, p.summary);
    return 0;
}

START_TEST(environment_selects_kernels)
{
    /* LINATTN_ISA caps the library's kernels and never raises them */
    const char *best = builtin_lib_isa();
    const char *d = child_description("LINATTN_ISA=generic");
    ck_assert(strstr(d, "lib_isa=generic\n") != NULL);
    d = child_description("LINATTN_ISA=avx2");
    ck_assert(strstr(d, strcmp(best, "generic") ? "lib_isa=avx2\n"
                                                : "lib_isa=generic\n") != NULL);
    d = child_description("LINATTN_ISA=nonsense");
    char want[64];
    snprintf(want, sizeof want, "lib_isa=%s\n", best);
    ck_assert(strstr(d, want) != NULL);
    /* ignored, and the summary says so (a typo must not pass unseen) */
    ck_assert(strstr(d, "LINATTN_ISA=\"nonsense\" ignored") != NULL);
    ck_assert(strstr(child_description("LINATTN_ISA=avx2"), "ignored") == NULL);
    d = child_description("LINATTN_ISA=avx512");
    ck_assert(strstr(d, want) != NULL);

    linattn_platform p;
    ck_assert_int_eq(linattn_platform_query(&p), 0);
    if (strcmp(p.blas_vendor, "OpenBLAS") || !strstr(p.blas_config, "DYNAMIC_ARCH") ||
        linattn_i_isa_rank(p.cpu_isa) < 2) {
        printf("OPENBLAS_CORETYPE not tested: BLAS %s (%s), CPU %s\n",
               p.blas_vendor, p.blas_config, p.cpu_isa);
        return;
    }
    /* OpenBLAS reads OPENBLAS_CORETYPE when it loads: a child with SSE3
     * kernels on this AVX (or better) CPU must be warned, with the remedy */
    d = child_description("OPENBLAS_CORETYPE=Prescott");
    printf("OPENBLAS_CORETYPE=Prescott:\n%s", d);
    ck_assert(strstr(d, "kernel=Prescott\n") != NULL);
    ck_assert(strstr(d, "kernel_isa=sse3\n") != NULL);
    ck_assert(strstr(d, "underuses=1\n") != NULL);
    ck_assert(strstr(d, "OPENBLAS_CORETYPE=Prescott in the environment") != NULL);
    const char *right = !strcmp(p.cpu_isa, "avx512") ? "SkylakeX"
                        : !strcmp(p.cpu_isa, "avx2") ? "Haswell"
                                                     : "Sandybridge";
    snprintf(want, sizeof want, "set OPENBLAS_CORETYPE=%s", right);
    ck_assert(strstr(d, want) != NULL);
    /* and the kernel it names takes the warning away */
    snprintf(want, sizeof want, "OPENBLAS_CORETYPE=%s", right);
    d = child_description(want);
    printf("%s:\n%s", want, d);
    ck_assert(strstr(d, "underuses=0\n") != NULL);
    ck_assert(strstr(d, "advice=\n") != NULL);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--describe"))
        return describe();
    Suite *s = suite_create("platform");
    TCase *tc = tcase_create("platform");
    tcase_add_test(tc, rejects_null_and_fills_everything);
    tcase_add_test(tc, blas_matches_its_own_queries);
    tcase_add_test(tc, cpu_matches_the_compilers_detection);
    tcase_add_test(tc, kernel_tables);
    tcase_add_test(tc, advice_names_the_remedy);
    tcase_add_test(tc, environment_selects_kernels);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
