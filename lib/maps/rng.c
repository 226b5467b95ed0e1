/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rng.c -- reproducible normals: Philox4x32-10 (Salmon et al., SC'11) and
 * Box-Muller, with the logarithm, sine and cosine written out here in
 * plain IEEE double arithmetic (+, -, *, /, sqrt: all correctly rounded)
 * instead of taken from libm, whose last bits differ between platforms.
 * So the same (seed, stream, index) gives the same double everywhere.
 * The file is compiled with floating-point contraction off (no fused
 * multiply-adds chosen by the compiler): see Makefile.am.  doc/rng.md
 * states every step, every constant and the test vectors.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "linattn.h"
#include "maps/rng.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "rng.c needs double arithmetic evaluated in double (FLT_EVAL_METHOD 0)"
#endif

/* Philox4x32 multipliers and Weyl key increments (Random123). */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void linattn_i_philox(const uint32_t ctr[4], const uint32_t key[2],
                      uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* (lo, hi) as one 64-bit word, its top 52 bits j, and (j + 1/2) 2^-52:
 * exact, strictly inside (0, 1), a multiple of 2^-53. */
static double uniform52(uint32_t lo, uint32_t hi)
{
    uint64_t w = (uint64_t)hi << 32 | lo;
    return ((double)(w >> 12) + 0.5) * 0x1p-52;
}

/* p(x2) by Horner's scheme, c[0] the highest coefficient. */
static double horner(const double *c, int n, double x2)
{
    double p = c[0];
    for (int i = 1; i < n; i++)
        p = p * x2 + c[i];
    return p;
}

/* 1/23, 1/21, ..., 1/3: the series of atanh(s)/s - 1 in s^2, over s^2. */
static const double atanh_c[11] = {
    1.0 / 23, 1.0 / 21, 1.0 / 19, 1.0 / 17, 1.0 / 15, 1.0 / 13,
    1.0 / 11, 1.0 / 9,  1.0 / 7,  1.0 / 5,  1.0 / 3};

/* (sin x / x - 1) / x^2 and (cos x - 1) / x^2 in x^2: +-1/k!, every k!
 * exact in double. */
static const double sin_c[8] = {
    1.0 / 355687428096000.0, -1.0 / 1307674368000.0, 1.0 / 6227020800.0,
    -1.0 / 39916800.0,       1.0 / 362880.0,         -1.0 / 5040.0,
    1.0 / 120.0,             -1.0 / 6.0};
static const double cos_c[9] = {
    -1.0 / 6402373705728000.0, 1.0 / 20922789888000.0, -1.0 / 87178291200.0,
    1.0 / 479001600.0,         -1.0 / 3628800.0,       1.0 / 40320.0,
    -1.0 / 720.0,              1.0 / 24.0,             -0.5};

/* ln u for u in (0, 1): u = 2^k f with f in (sqrt(2)/2, sqrt(2)],
 * ln f = 2 atanh(s), s = (f - 1)/(f + 1), |s| <= 0.1716, by its series to
 * s^23 (next term below 1e-18 relative). */
static double fixed_log(double u)
{
    uint64_t bits;
    memcpy(&bits, &u, sizeof bits);
    int k = (int)((bits >> 52) & 0x7ff) - 1023; /* u >= 2^-53 is normal */
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double f;
    memcpy(&f, &bits, sizeof f);
    if (f > 0x1.6a09e667f3bcdp+0) { /* the double nearest sqrt(2) */
        f *= 0.5;
        k += 1;
    }
    double s = (f - 1) / (f + 1), s2 = s * s;
    double two_s = 2 * s;
    double lnf = two_s + two_s * (s2 * horner(atanh_c, 11, s2));
    /* ln 2 split as fdlibm does: k * hi is exact for |k| < 2^20. */
    const double ln2_hi = 0x1.62e42feep-1, ln2_lo = 0x1.a39ef35793c76p-33;
    return k * ln2_hi + (k * ln2_lo + lnf);
}

/* sin and cos of 2 pi u for u in (0, 1) a multiple of 2^-53.  The
 * reduction is exact in turns: 4u = q + r, q in 0..3, r in [0, 1), and
 * r > 1/2 is reflected to 1 - r with sine and cosine swapped, so the
 * polynomials only see x = r pi/2 in [0, pi/4] (Taylor to x^17 and x^18,
 * next terms below 1e-17). */
static void fixed_sincos_turns(double u, double *sn, double *cs)
{
    double t = 4 * u;
    int q = (int)t;
    double r = t - q;
    int swap = r > 0.5;
    if (swap)
        r = 1 - r;
    double x = r * 0x1.921fb54442d18p+0; /* the double nearest pi/2 */
    double x2 = x * x;
    double s = x + x * (x2 * horner(sin_c, 8, x2));
    double c = 1 + x2 * horner(cos_c, 9, x2);
    if (swap) {
        double tmp = s;
        s = c;
        c = tmp;
    }
    /* 2 pi u = (q + r) pi / 2 */
    switch (q) {
    case 0:
        *sn = s, *cs = c;
        break;
    case 1:
        *sn = c, *cs = -s;
        break;
    case 2:
        *sn = -s, *cs = -c;
        break;
    default:
        *sn = -c, *cs = s;
        break;
    }
}

/* The Box-Muller pair of counter c of (seed, stream). */
static void normal_pair(uint64_t seed, uint64_t stream, uint64_t c,
                        double z[2])
{
    const uint32_t ctr[4] = {(uint32_t)c, (uint32_t)(c >> 32),
                             (uint32_t)stream, (uint32_t)(stream >> 32)};
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    uint32_t x[4];
    linattn_i_philox(ctr, key, x);
    double u1 = uniform52(x[0], x[1]), u2 = uniform52(x[2], x[3]);
    double radius = sqrt(-2 * fixed_log(u1)), sn, cs;
    fixed_sincos_turns(u2, &sn, &cs);
    z[0] = radius * cs;
    z[1] = radius * sn;
}

void linattn_i_normals(uint64_t seed, uint64_t stream, uint64_t first,
                       int64_t count, double *out)
{
    /* Normal i is lane i % 2 of the pair of counter i / 2. */
    double z[2];
    int64_t k = 0;
    uint64_t i = first;
    if (count > 0 && (i & 1)) {
        normal_pair(seed, stream, i >> 1, z);
        out[k++] = z[1];
        i++;
    }
    for (; k + 2 <= count; k += 2, i += 2) {
        normal_pair(seed, stream, i >> 1, z);
        out[k] = z[0];
        out[k + 1] = z[1];
    }
    if (k < count) {
        normal_pair(seed, stream, i >> 1, z);
        out[k] = z[0];
    }
}

int linattn_rng_normal(uint64_t seed, uint64_t stream, uint64_t first,
                       int64_t count, double *out)
{
    /* The index range may not wrap around 2^64. */
    if (count < 0 || (count > 0 && (uint64_t)(count - 1) > UINT64_MAX - first))
        return -4;
    if (count > 0 && !out)
        return -5;
    linattn_i_normals(seed, stream, first, count, out);
    return 0;
}
