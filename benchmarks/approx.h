/* SPDX-License-Identifier: BSD-3-Clause */
/* approx.h -- what the two modes of benchmarks/approx share: the feature
 * maps by name, Gaussian numbers, and running means with their standard
 * errors. */
#ifndef LINATTN_BENCH_APPROX_H
#define LINATTN_BENCH_APPROX_H

#include <math.h>
#include <stdint.h>
#include "linattn.h"

/* A map as the study names it: the library map, how W is drawn, and
 * whether m is swept (random features) or the map's own (exact maps). */
typedef struct {
    const char *name;
    int map;
    int draw;
    int swept; /* 1: m from the sweep (even for the paired maps) */
} approx_map;

/* The maps known to the study (NULL-terminated by name). */
extern const approx_map approx_maps[];

/* The entry called name, or NULL. */
const approx_map *approx_map_find(const char *name);

/* A plan for map with d, e; m features when the map is swept (ignored
 * otherwise), W from seed, inputs scaled by input_scale (0 = the library's
 * d^(-1/4)).  Returns the library's status. */
int approx_plan(linattn_d_plan **plan, const approx_map *map, int64_t d,
                int64_t e, int64_t m, uint64_t seed, double input_scale);

/* splitmix64: the study's own reproducible stream, independent of the
 * library's generator. */
static inline uint64_t approx_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* A standard normal number (Box-Muller, one of the pair). */
static inline double approx_gauss(uint64_t *s)
{
    double u = ((double)(approx_next(s) >> 11) + 0.5) * 0x1.0p-53;
    double v = (double)(approx_next(s) >> 11) * 0x1.0p-53;
    return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* Running mean and variance (Welford). */
typedef struct {
    int64_t n;
    double mean, m2;
} approx_acc;

static inline void approx_add(approx_acc *a, double x)
{
    a->n++;
    double delta = x - a->mean;
    a->mean += delta / (double)a->n;
    a->m2 += delta * (x - a->mean);
}

/* Standard error of the mean (0 with fewer than two samples). */
static inline double approx_se(const approx_acc *a)
{
    return a->n > 1 ? sqrt(a->m2 / (double)(a->n - 1) / (double)a->n) : 0;
}

/* --theory: Lemma 2 of Choromanski et al. 2021 against Monte Carlo
 * (approx_theory.c).  Returns the exit status. */
int approx_theory(int64_t d, int64_t m, int64_t m_min, int64_t m_max,
                  int64_t seeds, int64_t slope_seeds);

#endif
