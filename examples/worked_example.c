/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * worked_example.c -- the textbook example of linear attention, computed
 * both ways with linattn (identity feature map, d = 2, e = 1).
 *
 *   keys (2,1), (-1,2), (1,-1), (0,3); values 3, -2, 1, 4; query (1,0).
 *
 * Rescanning every key gives scores 2, -1, 1, 0, weighted sum 9,
 * normalizer 2, output 4.5.  The factored state gives s = (9,10),
 * z = (2,5), q.s = 9, q.z = 2, output 4.5.
 *
 * Usage: worked_example [q1 q2]    (another query; both ways move together)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "linattn.h"

static int parse(const char *text, double *x)
{
    char *end;
    errno = 0;
    *x = strtod(text, &end);
    return errno == 0 && end != text && *end == '\0';
}

static int fail(const char *what, int status)
{
    fprintf(stderr, "worked_example: %s: %s\n", what, linattn_strerror(status));
    return 1;
}

int main(int argc, char **argv)
{
    const double k[4][2] = {{2, 1}, {-1, 2}, {1, -1}, {0, 3}};
    const double v[4] = {3, -2, 1, 4};
    double q[2] = {1, 0};
    if (argc == 3) {
        if (!parse(argv[1], &q[0]) || !parse(argv[2], &q[1])) {
            fprintf(stderr, "worked_example: the query must be two numbers\n");
            return 2;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: %s [q1 q2]\n", argv[0]);
        return 2;
    }

    /* The identity kernel is signed: accept any non-zero normalizer. */
    linattn_opts opts;
    linattn_opts_init(&opts);
    opts.denom = LINATTN_DENOM_NONZERO;
    linattn_d_plan *plan;
    int st = linattn_d_plan_create(&plan, LINATTN_MAP_IDENTITY, 2, 1, &opts);
    if (st)
        return fail("plan", st);

    printf("keys (2,1), (-1,2), (1,-1), (0,3); values 3, -2, 1, 4; "
           "query (%g,%g)\n\n", q[0], q[1]);

    /* Rescan: score every key, as quadratic attention does. */
    double scores[4], wsum = 0, norm = 0;
    for (int j = 0; j < 4; j++) {
        scores[j] = q[0] * k[j][0] + q[1] * k[j][1];
        wsum += scores[j] * v[j];
        norm += scores[j];
    }
    double naive_out;
    int64_t bad;
    st = linattn_d_naive(plan, LINATTN_ROW_MAJOR, 1, 4, q, 2, &k[0][0], 2, v,
                         1, &naive_out, 1, &bad);
    printf("rescan:       scores %g, %g, %g, %g; weighted sum %g; "
           "normalizer %g; ", scores[0], scores[1], scores[2], scores[3],
           wsum, norm);
    if (st == LINATTN_EDENOM)
        printf("output undefined (normalizer is zero)\n");
    else if (st)
        return fail("naive", st);
    else
        printf("output %g\n", naive_out);

    /* Factored: one pass over the keys builds (S, z); the query reads it. */
    linattn_d_state *state;
    st = linattn_d_state_create(&state, plan);
    if (st)
        return fail("state", st);
    st = linattn_d_state_update(state, LINATTN_ROW_MAJOR, 4, &k[0][0], 2, v, 1);
    if (st)
        return fail("update", st);
    double s[2], z[2], num, den, out;
    linattn_d_state_get(state, LINATTN_ROW_MAJOR, s, 1, z, NULL);
    st = linattn_d_state_query(state, LINATTN_ROW_MAJOR, 1, q, 2, &out, 1,
                               &num, 1, &den, &bad);
    printf("state lookup: s = (%g,%g), z = (%g,%g); q.s = %g; q.z = %g; ",
           s[0], s[1], z[0], z[1], q[0] * s[0] + q[1] * s[1],
           q[0] * z[0] + q[1] * z[1]);
    if (st == LINATTN_EDENOM)
        printf("output undefined (normalizer is zero)\n");
    else if (st)
        return fail("query", st);
    else
        printf("output %g\n", out);

    linattn_d_state_destroy(state);
    linattn_d_plan_destroy(plan);
    return 0;
}
