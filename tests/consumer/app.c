/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * app.c -- a program outside the tree, built against an installed
 * linattn (tests/consumers.sh): the worked example of the README, whose
 * output is 4.5 exactly; exits 0 only when it is.
 */
#include <stdio.h>
#include <linattn.h>

int main(void)
{
    const double k[8] = {2, 1, -1, 2, 1, -1, 0, 3}, v[4] = {3, -2, 1, 4};
    const double q[2] = {1, 0};
    double out[1];
    linattn_d_plan *plan;
    linattn_opts opts;
    linattn_opts_init(&opts);
    opts.denom = LINATTN_DENOM_NONZERO; /* identity kernels are signed */
    int st = linattn_d_plan_create(&plan, LINATTN_MAP_IDENTITY, 2, 1, &opts);
    if (!st)
        st = linattn_d_attention(plan, LINATTN_ROW_MAJOR, 1, 4, q, 2, k, 2,
                                 v, 1, out, 1, NULL);
    linattn_d_plan_destroy(plan);
    if (st) {
        fprintf(stderr, "app: %s\n", linattn_strerror(st));
        return 1;
    }
    printf("linattn %s: output %g\n", linattn_version_string(), out[0]);
    return out[0] == 4.5 ? 0 : 1;
}
