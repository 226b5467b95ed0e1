/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_api.c -- the precision-independent API (version, status strings,
 * options) and the textbook example, checked exactly.
 */
#include <stdio.h>
#include "testutil.h"

START_TEST(version_matches_header)
{
    ck_assert_int_eq(linattn_version(), LINATTN_VERSION_NUMBER);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", LINATTN_VERSION_MAJOR,
             LINATTN_VERSION_MINOR, LINATTN_VERSION_PATCH);
    ck_assert_str_eq(linattn_version_string(), want);
    /* configure.ac's version (AC_INIT: the tarball, pkg-config) is the
     * header's and the library's: one place sets all of them */
    ck_assert_str_eq(linattn_version_string(), PACKAGE_VERSION);
}
END_TEST

START_TEST(strerror_covers_every_status)
{
    ck_assert_str_eq(linattn_strerror(0), "success");
    ck_assert_str_eq(linattn_strerror(-3), "argument 3 is invalid");
    ck_assert_str_eq(linattn_strerror(-16), "argument 16 is invalid");
    /* the longest prototypes (the batched backward calls) have 27 */
    ck_assert_str_eq(linattn_strerror(-27), "argument 27 is invalid");
    ck_assert_str_eq(linattn_strerror(-28), "an argument is invalid");
    ck_assert_str_eq(linattn_strerror(-2147483647 - 1), "an argument is invalid");
    ck_assert(strstr(linattn_strerror(LINATTN_ENOMEM), "memory") != NULL);
    ck_assert(strstr(linattn_strerror(LINATTN_EDENOM), "normalizer") != NULL);
    ck_assert(strstr(linattn_strerror(LINATTN_ESIZE), "BLAS integer") != NULL);
    ck_assert(strstr(linattn_strerror(LINATTN_ENONFINITE), "NaN") != NULL);
    ck_assert(strstr(linattn_strerror(LINATTN_EIO), "file") != NULL);
    ck_assert(strstr(linattn_strerror(LINATTN_EFORMAT), "not a linattn checkpoint") != NULL);
    ck_assert(strstr(linattn_strerror(LINATTN_EVERSION), "format version") != NULL);
    ck_assert(strstr(linattn_strerror(LINATTN_EMISMATCH), "another precision") != NULL);
    ck_assert_int_eq(LINATTN_EOVERFLOW, 9);
    ck_assert(strstr(linattn_strerror(LINATTN_EOVERFLOW), "floating-point range") != NULL);
    ck_assert_int_eq(LINATTN_EMPI, 10);
    ck_assert_int_eq(LINATTN_EMPIUSE, 11);
    ck_assert(strstr(linattn_strerror(LINATTN_EMPI), "MPI call failed") != NULL);
    ck_assert(strstr(linattn_strerror(LINATTN_EMPIUSE), "not initialized") != NULL);
    /* every status has a sentence of its own */
    for (int a = LINATTN_SUCCESS; a <= LINATTN_EMPIUSE; a++) {
        ck_assert_str_ne(linattn_strerror(a), "unknown status code");
        for (int b = a + 1; b <= LINATTN_EMPIUSE; b++)
            ck_assert_str_ne(linattn_strerror(a), linattn_strerror(b));
    }
    ck_assert_str_eq(linattn_strerror(12345), "unknown status code");
}
END_TEST

START_TEST(opts_defaults)
{
    linattn_opts o;
    memset(&o, 0xff, sizeof o);
    ck_assert_int_eq(linattn_opts_init(&o), 0);
    ck_assert(o.m == 0 && o.block == 0 && o.denom == LINATTN_DENOM_POSITIVE &&
              o.eps == 0 && o.seed == 0 && o.check_finite == 0);
    ck_assert_int_eq(linattn_opts_init(NULL), -1);
}
END_TEST

/* keys (2,1), (-1,2), (1,-1), (0,3); values 3, -2, 1, 4; query (1,0):
 * s = (9,10), z = (2,5), q.s = 9, q.z = 2, output 4.5 -- exactly, both
 * ways, in both precisions and both layouts. */
START_TEST(worked_example_exact)
{
    const double kr[8] = {2, 1, -1, 2, 1, -1, 0, 3};
    const double kc[8] = {2, -1, 1, 0, 1, 2, -1, 3};
    const double v[4] = {3, -2, 1, 4}, q[2] = {1, 0};
    const float kf[8] = {2, 1, -1, 2, 1, -1, 0, 3};
    const float vf[4] = {3, -2, 1, 4}, qf[2] = {1, 0};
    linattn_d_plan *p;
    ck_assert_int_eq(linattn_d_plan_create(&p, LINATTN_MAP_IDENTITY, 2, 1, NULL), 0);
    linattn_d_state *st;
    ck_assert_int_eq(linattn_d_state_create(&st, p), 0);
    ck_assert_int_eq(linattn_d_state_update(st, LINATTN_COL_MAJOR, 4, kc, 4, v, 4), 0);
    double s[2], z[2], num, den, out, naive, direct;
    int64_t tokens;
    ck_assert_int_eq(linattn_d_state_get(st, LINATTN_ROW_MAJOR, s, 1, z, &tokens), 0);
    ck_assert(s[0] == 9 && s[1] == 10 && z[0] == 2 && z[1] == 5 && tokens == 4);
    ck_assert_int_eq(linattn_d_state_query(st, LINATTN_ROW_MAJOR, 1, q, 2, &out,
                                           1, &num, 1, &den, NULL), 0);
    ck_assert(num == 9 && den == 2 && out == 4.5);
    ck_assert_int_eq(linattn_d_naive(p, LINATTN_ROW_MAJOR, 1, 4, q, 2, kr, 2, v,
                                     1, &naive, 1, NULL), 0);
    ck_assert_int_eq(linattn_d_attention(p, LINATTN_ROW_MAJOR, 1, 4, q, 2, kr, 2,
                                         v, 1, &direct, 1, NULL), 0);
    ck_assert(naive == 4.5 && direct == 4.5);
    linattn_d_state_destroy(st);
    linattn_d_plan_destroy(p);

    linattn_s_plan *ps;
    float outf;
    ck_assert_int_eq(linattn_s_plan_create(&ps, LINATTN_MAP_IDENTITY, 2, 1, NULL), 0);
    ck_assert_int_eq(linattn_s_attention(ps, LINATTN_ROW_MAJOR, 1, 4, qf, 2, kf,
                                         2, vf, 1, &outf, 1, NULL), 0);
    ck_assert(outf == 4.5f);
    ck_assert_int_eq(linattn_s_naive(ps, LINATTN_ROW_MAJOR, 1, 4, qf, 2, kf, 2,
                                     vf, 1, &outf, 1, NULL), 0);
    ck_assert(outf == 4.5f);
    linattn_s_plan_destroy(ps);
}
END_TEST

/* Other queries: the rescan and the state agree (here q = (0,1): scores
 * 1, 2, -1, 3, weighted sum 10, normalizer 5, output 2). */
START_TEST(worked_example_other_query)
{
    const double k[8] = {2, 1, -1, 2, 1, -1, 0, 3}, v[4] = {3, -2, 1, 4};
    const double q[2] = {0, 1};
    linattn_d_plan *p;
    linattn_d_plan_create(&p, LINATTN_MAP_IDENTITY, 2, 1, NULL);
    double a, b;
    ck_assert_int_eq(linattn_d_attention(p, LINATTN_ROW_MAJOR, 1, 4, q, 2, k, 2,
                                         v, 1, &a, 1, NULL), 0);
    ck_assert_int_eq(linattn_d_naive(p, LINATTN_ROW_MAJOR, 1, 4, q, 2, k, 2, v,
                                     1, &b, 1, NULL), 0);
    ck_assert(a == 2 && b == 2);
    linattn_d_plan_destroy(p);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("api");
    TCase *tc = tcase_create("api");
    tcase_add_test(tc, version_matches_header);
    tcase_add_test(tc, strerror_covers_every_status);
    tcase_add_test(tc, opts_defaults);
    tcase_add_test(tc, worked_example_exact);
    tcase_add_test(tc, worked_example_other_query);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
