/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * approx_theory.c -- benchmarks/approx --theory: the mean squared error of
 * the random-feature estimators of the softmax kernel SM(x, y) = exp(x.y)
 * against Choromanski et al. 2021 ("Rethinking Attention with Performers",
 * ICLR), Lemma 2, by Monte Carlo over independent draws of W.
 *
 * The paper counts m random vectors w_1 .. w_m.  Its positive estimator
 * has one feature per vector, so its m is the library's m (FAVOR).  Its
 * trigonometric estimator has two (sin and cos), so the library's TRIG
 * with m features uses m/2 vectors: the paper's 1/(2m) becomes 1/m here.
 * With u = |x + y|^2 and w = |x - y|^2, in the library's m:
 *
 *   pos   (1/m) exp(u) SM^2 (1 - exp(-u))          Lemma 2
 *   trig  (1/m) exp(u) SM^-2 (1 - exp(-w))^2       Lemma 2, m/2 vectors
 *   hyp   (1/m) exp(u) SM^2 (1 - exp(-u))^2        the paper's hyperbolic
 *         estimator (its Lemma 3: (1/2)(1 - exp(-u)) MSE_pos with m/2
 *         vectors); FAVOR_HYP uses m/2 vectors, each twice
 *
 * The lemma is for iid Gaussian w; the orthogonal draws are measured next
 * to them for comparison (the paper's Theorem 2 bounds them below iid for
 * the positive features).  The plans use input_scale = 1, so phi(x).phi(y)
 * estimates exp(x.y) itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "approx.h"
#include "timing.h"

enum { POS, HYP, TRIG, NEST };
enum { IID, ORTHO, NDRAW };
#define NDOT 3 /* x.y = -1, 0, 1 */

static const char *const est_name[NEST] = {"pos", "hyp", "trig"};
static const char *const draw_name[NDRAW] = {"iid", "ortho"};
/* The study's map names for each estimator and draw. */
static const char *const map_name[NEST][NDRAW] = {
    {"favor-iid", "favor"}, {"favor-hyp-iid", "favor-hyp"},
    {"trig-iid", "trig"}};

static double dot_of(int c)
{
    return (double)(c - 1);
}

/* Lemma 2 (and the hyperbolic variant) at |x| = |y| = 1, x.y = dot. */
static double theory_mse(int est, double dot, int64_t m)
{
    double sm = exp(dot), u = 2 + 2 * dot, w = 2 - 2 * dot;
    switch (est) {
    case POS:
        return exp(u) * sm * sm * (1 - exp(-u)) / (double)m;
    case HYP:
        return exp(u) * sm * sm * (1 - exp(-u)) * (1 - exp(-u)) / (double)m;
    default:
        return exp(u) / (sm * sm) * (1 - exp(-w)) * (1 - exp(-w)) / (double)m;
    }
}

/* The estimators average m_v independent terms T (one per random vector,
 * w ~ N(0, I)): pos T = exp(-1) exp(w.(x+y)), m_v = m; hyp T = exp(-1)
 * cosh(w.(x+y)), m_v = m/2; trig T = exp(1) cos(w.(x-y)), m_v = m/2.
 * Their raw moments E T^k, k = 1 .. 4, in closed form from
 * E exp(t w.v) = exp(t^2 |v|^2 / 2), E cos(t w.v) = exp(-t^2 |v|^2 / 2)
 * and cosh^k, cos^k as sums of cosh, cos of multiples. */
static void term_moments(int est, double dot, double mom[5])
{
    double u = 2 + 2 * dot, w = 2 - 2 * dot;
    static const double binom[5][5] = {{1}, {1, 1}, {1, 2, 1}, {1, 3, 3, 1},
                                       {1, 4, 6, 4, 1}};
    for (int k = 1; k <= 4; k++) {
        if (est == POS) {
            mom[k] = exp(-k + k * k * u / 2);
            continue;
        }
        double sum = 0;
        for (int j = 0; j <= k; j++) {
            double t2 = (double)((k - 2 * j) * (k - 2 * j));
            sum += binom[k][j] * (est == HYP ? exp(t2 * u / 2) : exp(-t2 * w / 2));
        }
        mom[k] = exp(est == HYP ? -k : k) * sum / (double)(1 << k);
    }
}

/* From the moments: the MSE sigma^2 / m_v (a second derivation of the
 * lemma, checked against it) and the standard error of its Monte Carlo
 * estimate over `seeds` draws, sqrt(Var (S^ - S)^2 / seeds), with
 * E (S^ - S)^4 = (mu_4 + 3 (m_v - 1) sigma^4) / m_v^3.  The sample
 * standard error cannot be trusted where T is heavy-tailed: the draws
 * that carry the variance are too rare to be seen. */
static void moment_mse(int est, double dot, int64_t m, int64_t seeds,
                       double *mse, double *se)
{
    double mom[5], mv = (double)(est == POS ? m : m / 2);
    term_moments(est, dot, mom);
    double mu = mom[1];
    double var = fmax(mom[2] - mu * mu, 0);
    double mu4 = fmax(mom[4] - 4 * mu * mom[3] + 6 * mu * mu * mom[2] -
                      3 * mu * mu * mu * mu, 0);
    *mse = var / mv;
    double e4 = (mu4 + 3 * (mv - 1) * var * var) / (mv * mv * mv);
    *se = sqrt(fmax(e4 - *mse * *mse, 0) / (double)seeds);
}

/* x = e_1 and y = c e_1 + sqrt(1 - c^2) e_2 for c = -1, 0, 1: rows 0 .. 3
 * of a 4 x d matrix. */
static double *pair_rows(int64_t d)
{
    double *x = calloc((size_t)(4 * d), sizeof *x);
    if (!x) {
        fprintf(stderr, "approx: out of memory\n");
        exit(1);
    }
    x[0] = 1;
    for (int c = 0; c < NDOT; c++) {
        double dot = dot_of(c);
        x[(1 + c) * d] = dot;
        x[(1 + c) * d + 1] = sqrt(1 - dot * dot);
    }
    return x;
}

/* Squared errors of phi(x).phi(y_c) against exp(x.y_c) for `seeds` draws
 * of W at m features, into acc[est][draw][c].  Returns 0 or 1 after a
 * message. */
static int measure(int64_t d, int64_t m, int64_t seeds, const double *xy,
                   approx_acc acc[NEST][NDRAW][NDOT])
{
    memset(acc, 0, sizeof(approx_acc) * NEST * NDRAW * NDOT);
    double *phi = malloc((size_t)(4 * m) * sizeof *phi);
    if (!phi) {
        fprintf(stderr, "approx: out of memory\n");
        return 1;
    }
    for (int est = 0; est < NEST; est++)
        for (int dr = 0; dr < NDRAW; dr++) {
            const approx_map *mp = approx_map_find(map_name[est][dr]);
            for (int64_t s = 0; s < seeds; s++) {
                linattn_d_plan *p;
                /* distinct seeds for every m */
                uint64_t seed = ((uint64_t)m << 40) + (uint64_t)s + 1;
                int rc = approx_plan(&p, mp, d, 1, m, seed, 1.0);
                if (!rc) {
                    rc = linattn_d_features(p, LINATTN_ROW_MAJOR, 4, xy, d, phi, m);
                    linattn_d_plan_destroy(p);
                }
                if (rc) {
                    fprintf(stderr, "approx: %s, m = %lld: %s\n", mp->name,
                            (long long)m, linattn_strerror(rc));
                    free(phi);
                    return 1;
                }
                for (int c = 0; c < NDOT; c++) {
                    long double h = 0;
                    for (int64_t j = 0; j < m; j++)
                        h += (long double)phi[j] * phi[(1 + c) * m + j];
                    double err = (double)(h - expl(dot_of(c)));
                    approx_add(&acc[est][dr][c], err * err);
                }
            }
        }
    free(phi);
    return 0;
}

/* Where the Monte Carlo check has little power: the standard error of the
 * measured MSE (from the moments) above this fraction of the MSE. */
#define WEAK_RSE 0.3

static int heavy(int est, int c, int64_t m, int64_t seeds)
{
    double mse, se;
    moment_mse(est, dot_of(c), m, seeds, &mse, &se);
    return se > WEAK_RSE * mse;
}

/* Measured against theory at one m: the table of the lemma.  Returns the
 * number of iid rows outside 3 standard errors. */
static int lemma_table(int64_t m, int64_t seeds,
                       approx_acc acc[NEST][NDRAW][NDOT])
{
    int misses = 0;
    printf("%4s %5s %6s %11s %11s %9s %9s %7s %7s  %s\n", "x.y", "est",
           "draw", "theory", "measured", "se", "se_th", "ratio", "z",
           "verdict");
    for (int c = 0; c < NDOT; c++)
        for (int est = 0; est < NEST; est++)
            for (int dr = 0; dr < NDRAW; dr++) {
                const approx_acc *a = &acc[est][dr][c];
                double th = theory_mse(est, dot_of(c), m), se = approx_se(a);
                double mse_mom, se_th;
                moment_mse(est, dot_of(c), m, seeds, &mse_mom, &se_th);
                double sm2 = exp(2 * dot_of(c));
                if (fabs(mse_mom - th) > 1e-9 * (th > sm2 ? th : sm2))
                    printf("  (moments give %.6e: the two derivations disagree)\n",
                           mse_mom);
                printf("%4.0f %5s %6s %11.4e %11.4e %9.2e ", dot_of(c),
                       est_name[est], draw_name[dr], th, a->mean, se);
                if (th == 0) {
                    /* an exact estimator: rounding only (RMS error below
                     * 1e-12 of the kernel value) */
                    printf("%9s %7s %7s  %s\n", "-", "-", "-",
                           a->mean <= 1e-24 * sm2 ? "exact (rounding)"
                                                  : "NOT EXACT");
                    continue;
                }
                if (dr == ORTHO) {
                    /* the lemma is for iid draws: orthogonal ones should
                     * do no worse */
                    printf("%9s %7.3f %7s  %s\n", "-", a->mean / th, "-",
                           a->mean <= th + 3 * se ? "<= iid theory"
                                                  : "ABOVE iid theory");
                    continue;
                }
                double z = (a->mean - th) / se_th;
                misses += fabs(z) > 3;
                printf("%9.2e %7.3f %7.2f  %s%s\n", se_th, a->mean / th, z,
                       fabs(z) <= 3 ? "within 3 se_th" : "OUTSIDE 3 se_th",
                       heavy(est, c, m, seeds) ? " (heavy tail: weak test)" : "");
            }
    return misses;
}

/* Orthogonal against iid, and positive against trigonometric, at one m. */
static void comparisons(int64_t m, int64_t seeds,
                        approx_acc acc[NEST][NDRAW][NDOT])
{
    printf("\northogonal / iid MSE (se by the delta method):\n");
    for (int c = 0; c < NDOT; c++)
        for (int est = 0; est < NEST; est++) {
            const approx_acc *o = &acc[est][ORTHO][c], *i = &acc[est][IID][c];
            if (theory_mse(est, dot_of(c), 1) == 0)
                continue;
            double r = o->mean / i->mean;
            double se = r * sqrt(pow(approx_se(o) / o->mean, 2) +
                                 pow(approx_se(i) / i->mean, 2));
            printf("  x.y = %2.0f %5s: %.3f +- %.3f  %s%s\n", dot_of(c),
                   est_name[est], r, se,
                   r <= 1 + 3 * se ? "no worse" : "WORSE than iid",
                   heavy(est, c, m, seeds) ? " (heavy tail: inconclusive)" : "");
        }
    printf("\npositive / trigonometric MSE, iid draws:\n");
    for (int c = 0; c < NDOT; c++) {
        double pos = acc[POS][IID][c].mean, trig = acc[TRIG][IID][c].mean;
        double sm = exp(dot_of(c));
        printf("  x.y = %2.0f (SM = %.3f): pos %.3e, trig %.3e; relative RMS "
               "error pos %.3e, trig %.3e\n",
               dot_of(c), sm, pos, trig, sqrt(pos) / sm, sqrt(trig) / sm);
    }
}

/* Least-squares slope of y over x and its standard error. */
static void fit_slope(const double *x, const double *y, int n, double *slope,
                      double *se)
{
    double mx = 0, my = 0, sxx = 0, sxy = 0, rss = 0;
    for (int i = 0; i < n; i++)
        mx += x[i] / n, my += y[i] / n;
    for (int i = 0; i < n; i++)
        sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
    *slope = sxy / sxx;
    for (int i = 0; i < n; i++) {
        double r = y[i] - my - *slope * (x[i] - mx);
        rss += r * r;
    }
    *se = n > 2 ? sqrt(rss / (n - 2) / sxx) : 0;
}

#define MAX_M 24

/* The MSE over m: measured / theory at each m, and the fitted slope. */
static int slope_table(int64_t d, int64_t m_min, int64_t m_max,
                       int64_t seeds, const double *xy)
{
    static approx_acc acc[MAX_M][NEST][NDRAW][NDOT];
    double lm[MAX_M];
    int nm = 0;
    for (int64_t m = m_min; m <= m_max && nm < MAX_M; m *= 2, nm++) {
        lm[nm] = log((double)m);
        if (measure(d, m, seeds, xy, acc[nm]))
            return 1;
    }
    printf("\nMSE over m, %lld draws each: measured / theory at m =",
           (long long)seeds);
    for (int i = 0; i < nm; i++)
        printf(" %lld", (long long)(m_min << i));
    printf("; slope of log MSE over log m (least squares, expect -1)\n");
    for (int c = 0; c < NDOT; c++)
        for (int est = 0; est < NEST; est++)
            for (int dr = 0; dr < NDRAW; dr++) {
                if (theory_mse(est, dot_of(c), 1) == 0)
                    continue;
                double y[MAX_M], slope, se;
                printf("  x.y = %2.0f %5s %6s:", dot_of(c), est_name[est],
                       draw_name[dr]);
                for (int i = 0; i < nm; i++) {
                    double mse = acc[i][est][dr][c].mean;
                    y[i] = log(mse);
                    printf(" %6.3f", mse / theory_mse(est, dot_of(c), m_min << i));
                }
                fit_slope(lm, y, nm, &slope, &se);
                printf("  slope %6.3f +- %.3f%s\n", slope, se,
                       heavy(est, c, m_min, seeds) ? "  (heavy tail)" : "");
            }
    return 0;
}

int approx_theory(int64_t d, int64_t m, int64_t m_min, int64_t m_max,
                  int64_t seeds, int64_t slope_seeds)
{
    if (d < 2) {
        fprintf(stderr, "approx: --theory needs d >= 2\n");
        return 2;
    }
    double *xy = pair_rows(d);
    static approx_acc acc[NEST][NDRAW][NDOT];
    double t0 = bench_now();
    printf("linattn %s approx --theory: Choromanski et al. 2021, Lemma 2\n"
           "SM(x, y) = exp(x.y), |x| = |y| = 1, x = e1, y = (x.y) e1 + "
           "sqrt(1 - (x.y)^2) e2, d = %lld\n"
           "m = %lld features (pos: m random vectors; trig, hyp: m/2), "
           "%lld draws of W each, input_scale 1\n\n",
           linattn_version_string(), (long long)d, (long long)m,
           (long long)seeds);
    int rc = measure(d, m, seeds, xy, acc);
    if (!rc) {
        int misses = lemma_table(m, seeds, acc);
        printf("\n%d iid row(s) outside 3 se_th (se: sample standard error of "
               "the measured MSE; se_th: the same from the closed-form "
               "moments)\n", misses);
        comparisons(m, seeds, acc);
        fflush(stdout);
        rc = slope_table(d, m_min, m_max, slope_seeds, xy);
    }
    fflush(stdout); /* the time last, also when both go to one file */
    fprintf(stderr, "approx --theory: %.1f s\n", bench_now() - t0);
    free(xy);
    return rc;
}
