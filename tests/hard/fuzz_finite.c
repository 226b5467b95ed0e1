/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_finite.c -- libFuzzer harness for the invariant "finite inputs, finite
 * outputs": finite inputs never produce a non-finite output with status 0
 * (tests/finite_check.h states it and judges each call).
 *
 * The input picks the precision, the feature map (every built-in one and
 * the four custom activations, W and b from the input), the normalizer
 * policy (positive, nonzero, eps, count), block and chunk sizes, the
 * layout and the sizes, then the data: every value finite, with its
 * exponent drawn from the whole range (subnormal to the largest), around
 * a centre and spread the input chooses per matrix.  Every path runs on
 * the same inputs (attention, naive, causal, naive causal, the streaming
 * state blocked and token by token, the four batched calls); a violation
 * aborts, with the input saved by libFuzzer.  The first byte picks the
 * code path of linattn's kernels (generic, AVX2, AVX-512, capped by the
 * CPU: lib/common/cpu.h), so that every path the library dispatches to, with
 * its own fused output writes, is held to the invariant in one run.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"
#include "../../lib/common/cpu.h"
#include "fuzz_reader.h"

#define FC_REAL double
#define FC_API(name) linattn_d_##name
#define FC(name) fcd_##name
#include "../finite_check.h"
#undef FC_REAL
#undef FC_API
#undef FC
#define FC_REAL float
#define FC_API(name) linattn_s_##name
#define FC(name) fcs_##name
#include "../finite_check.h"
#undef FC_REAL
#undef FC_API
#undef FC


/* A finite value whose binary exponent lies in [lo, hi] (the bottom of
 * the range reaching the subnormals), or 0; never beyond the precision's
 * largest value. */
static double value(reader *r, int lo, int hi, double max)
{
    unsigned a = take(r), b = take(r);
    if (a == 0)
        return 0;
    int ex = lo + (int)((unsigned)(a * 256 + b) % (unsigned)(hi - lo + 1));
    double x = ldexp(1 + (b & 0x7f) / 128.0, ex);
    if (!(x <= max))
        x = max;
    return a & 1 ? -x : x;
}

/* The exponent range of one matrix: a centre anywhere in [emin, emax] and
 * a spread from 0 to the whole range. */
static void range(reader *r, int emin, int emax, int *lo, int *hi)
{
    int centre = emin + (int)((take(r) * 256u + take(r)) % (unsigned)(emax - emin + 1));
    unsigned s = take(r);
    int spread = s < 32 ? emax - emin : (int)(s % 12);
    *lo = centre - spread < emin ? emin : centre - spread;
    *hi = centre + spread > emax ? emax : centre + spread;
}

#define HARNESS(P, R, EMIN, EMAX, MAXV)                                        \
    static void P##_one(reader *r)                                            \
    {                                                                         \
        int kind = (int)(take(r) % 11), policy = (int)(take(r) % 4);          \
        int64_t d = 1 + take(r) % 4, e = 1 + take(r) % 3;                     \
        int64_t n = 1 + take(r) % 24;                                         \
        int layout = take(r) % 2 ? LINATTN_COL_MAJOR : LINATTN_ROW_MAJOR;     \
        linattn_opts o;                                                       \
        linattn_opts_init(&o);                                                \
        o.block = 1 + take(r) % 8;                                            \
        o.chunk = 1 + take(r) % 5;                                            \
        o.seed = take(r);                                                     \
        o.denom = policy == 1   ? LINATTN_DENOM_NONZERO                       \
                  : policy == 3 ? LINATTN_DENOM_COUNT                         \
                                : LINATTN_DENOM_POSITIVE;                     \
        o.eps = policy == 2 ? 1e-3 : 0;                                       \
        linattn_##P##_plan *p = NULL;                                         \
        int lo, hi;                                                           \
        if (kind >= 7) {                                                      \
            int act = kind - 6;                                               \
            int64_t m = act == LINATTN_ACT_HEDGEHOG ? 2 * d : d;              \
            R w[16], b[8];                                                    \
            range(r, -8, 8, &lo, &hi); /* a map's W: moderate entries */      \
            for (int i = 0; i < 16; i++)                                      \
                w[i] = (R)value(r, lo, hi, MAXV);                             \
            for (int i = 0; i < 8; i++)                                       \
                b[i] = (R)value(r, lo, hi, MAXV);                             \
            int st = linattn_##P##_plan_create_custom(                        \
                &p, act, d, m, e, LINATTN_ROW_MAJOR, w, d,                    \
                take(r) % 2 ? b : NULL, &o);                                  \
            if (st) { /* count is refused for EXP: positive then */          \
                o.denom = LINATTN_DENOM_POSITIVE;                             \
                st = linattn_##P##_plan_create_custom(                        \
                    &p, act, d, m, e, LINATTN_ROW_MAJOR, w, d, NULL, &o);     \
            }                                                                 \
            if (st)                                                           \
                return; /* s W beyond the precision, say */                   \
        } else if (linattn_##P##_plan_create(&p, kind + 1, d, e, &o)) {       \
            o.denom = LINATTN_DENOM_NONZERO; /* count refused: shifted maps */\
            if (linattn_##P##_plan_create(&p, kind + 1, d, e, &o))            \
                abort();                                                      \
        }                                                                     \
        int64_t ld_in = layout == LINATTN_ROW_MAJOR ? d : n;                  \
        int64_t ld_v = layout == LINATTN_ROW_MAJOR ? e : n;                   \
        R *q = malloc((size_t)(n * d) * sizeof(R));                           \
        R *k = malloc((size_t)(n * d) * sizeof(R));                           \
        R *v = malloc((size_t)(n * e) * sizeof(R));                           \
        R *out = malloc((size_t)(n * e) * sizeof(R));                         \
        range(r, EMIN, EMAX, &lo, &hi);                                       \
        for (int64_t i = 0; i < n * d; i++)                                   \
            q[i] = (R)value(r, lo, hi, MAXV);                                 \
        range(r, EMIN, EMAX, &lo, &hi);                                       \
        for (int64_t i = 0; i < n * d; i++)                                   \
            k[i] = (R)value(r, lo, hi, MAXV);                                 \
        range(r, EMIN, EMAX, &lo, &hi);                                       \
        for (int64_t i = 0; i < n * e; i++)                                   \
            v[i] = (R)value(r, lo, hi, MAXV);                                 \
        for (int path = 0; path < FC_NPATHS; path++) {                        \
            for (int64_t i = 0; i < n * e; i++)                               \
                out[i] = (R)FC_SENTINEL;                                      \
            int64_t bad = -1;                                                 \
            int st = fc##P##_run(path, p, layout, n, e, q, ld_in, k, ld_in, v,\
                                 ld_v, out, ld_v, &bad);                      \
            if (fc##P##_violation(st, bad, layout, n, e, out, ld_v))          \
                abort();                                                      \
        }                                                                     \
        free(q), free(k), free(v), free(out);                                 \
        linattn_##P##_plan_destroy(p);                                        \
    }

HARNESS(d, double, -1074, 1023, DBL_MAX)
HARNESS(s, float, -149, 127, FLT_MAX)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    linattn_i_isa_force((int)(take(&r) % LINATTN_ISA_COUNT));
    if (take(&r) % 2)
        s_one(&r);
    else
        d_one(&r);
    return 0;
}
