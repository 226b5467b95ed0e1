/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ckpt_c.c -- the C half of checkpoint_interop.sh: a checkpoint written
 * from Fortran loads in C, and C's continues in Fortran, bit for bit.
 *
 *   ckpt_c DIR
 *
 * For each case (a double FAVOR+ plan, a float elu+1 plan) C builds the
 * state of tokens 0..N1-1 itself and requires DIR/f_<case>.ck (written by
 * ckpt_f) to hold exactly its checkpoint's bytes, loads that file into a
 * fresh state, saves it back (the same bytes again), continues it with
 * tokens N1..N1+N2-1 and saves DIR/c_<case>.ck for ckpt_f to check.
 * The inputs are the formula both programs share (exact in binary).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"

#define N1 37
#define N2 20

/* Entry (i, j), feature i of token j (0-based), of array s. */
static double value(int s, int i, int j)
{
    return ((7 * i + 13 * j + 5 * s) % 17) / 8.0 - 1.0;
}

static unsigned char *read_file(const char *path, int64_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *buf = malloc(1 << 20);
    *len = buf ? (int64_t)fread(buf, 1, 1 << 20, f) : 0;
    fclose(f);
    return buf;
}

static int failures;

static void expect(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok" : "FAILED", what);
    failures += !ok;
}

/* One case in precision R (the library's s/d prefix X). */
#define DEFINE_CASE(X, R)                                                    \
static void X##run(const char *dir, const char *name, int map, int d,        \
                   int e, uint64_t seed)                                     \
{                                                                            \
    linattn_opts o;                                                          \
    linattn_opts_init(&o);                                                   \
    o.seed = seed;                                                           \
    linattn_##X##_plan *plan;                                                \
    linattn_##X##_state *own, *loaded;                                       \
    R k[(N1 + N2) * 8], v[(N1 + N2) * 8];                                    \
    for (int j = 0; j < N1 + N2; j++) {                                      \
        for (int i = 0; i < d; i++)                                          \
            k[j * d + i] = (R)value(2, i, j);                                \
        for (int i = 0; i < e; i++)                                          \
            v[j * e + i] = (R)value(3, i, j);                                \
    }                                                                        \
    if (linattn_##X##_plan_create(&plan, map, d, e, &o) ||                   \
        linattn_##X##_state_create(&own, plan) ||                            \
        linattn_##X##_state_create(&loaded, plan)) {                         \
        expect(0, "plan and states");                                        \
        return;                                                              \
    }                                                                        \
    linattn_##X##_state_update(own, LINATTN_ROW_MAJOR, N1, k, d, v, e);      \
    int64_t bytes, flen, written;                                            \
    linattn_##X##_state_save_size(own, &bytes);                              \
    unsigned char *mine = malloc(bytes), *again = malloc(bytes);             \
    linattn_##X##_state_save(own, mine, bytes, NULL);                        \
    char path[4096];                                                         \
    snprintf(path, sizeof path, "%s/f_%s.ck", dir, name);                    \
    unsigned char *file = read_file(path, &flen);                            \
    printf("%s: %s, %lld bytes\n", name, path, (long long)flen);             \
    expect(file && flen == bytes && !memcmp(file, mine, bytes),              \
           "Fortran's checkpoint = C's state of the same tokens, bytes");    \
    expect(linattn_##X##_state_load_file(loaded, path) == 0,                 \
           "Fortran's checkpoint loads in C");                               \
    linattn_##X##_state_save(loaded, again, bytes, &written);                \
    expect(written == bytes && !memcmp(again, mine, bytes),                  \
           "saved back, the same bytes");                                    \
    linattn_##X##_state_update(loaded, LINATTN_ROW_MAJOR, N2, k + N1 * d, d, \
                               v + N1 * e, e);                               \
    snprintf(path, sizeof path, "%s/c_%s.ck", dir, name);                    \
    expect(linattn_##X##_state_save_file(loaded, path) == 0,                 \
           "C's continued state saved for Fortran");                         \
    free(file);                                                              \
    free(mine);                                                              \
    free(again);                                                             \
    linattn_##X##_state_destroy(own);                                        \
    linattn_##X##_state_destroy(loaded);                                     \
    linattn_##X##_plan_destroy(plan);                                        \
}

DEFINE_CASE(d, double)
DEFINE_CASE(s, float)

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ckpt_c DIR\n");
        return 2;
    }
    drun(argv[1], "favor_d", LINATTN_MAP_FAVOR, 3, 2, 2024);
    srun(argv[1], "elu1_s", LINATTN_MAP_ELU1, 4, 3, 0);
    return failures != 0;
}
