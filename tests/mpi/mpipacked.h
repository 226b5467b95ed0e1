/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mpipacked.h -- what the MPI tests of packed streams share: the stream
 * of sequences (empty ones, one token long, longer than a rank's rows),
 * its key weights, the maps, and per-sequence states (made, copied,
 * compared).  After mpidata.h.
 */
#ifndef LINATTN_MPIPACKED_H
#define LINATTN_MPIPACKED_H

typedef struct {
    int map, denom;
    double scale, lo, hi;
} map_case;

static const map_case map_cases[] = {
    {LINATTN_MAP_ELU1, LINATTN_DENOM_POSITIVE, 0, -2, 2},
    {LINATTN_MAP_ELU1, LINATTN_DENOM_COUNT, 0, -2, 2},
    {LINATTN_MAP_IDENTITY, LINATTN_DENOM_NONZERO, 0, 0.05, 1},
    {LINATTN_MAP_FAVOR, LINATTN_DENOM_POSITIVE, 1, -1, 1},
};
#define MAP_CASES 4

/* The stream: 10 sequences, 97 tokens (empty ones first, inside and
 * last but one; one of a single token). */
static const int64_t lengths[] = {0, 13, 1, 0, 30, 2, 5, 0, 21, 25};
#define NSEQ 10
#define NTOK 97
/* The sequence whose outputs the isolation test watches (30 tokens:
 * across a rank boundary from 3 ranks on). */
#define WATCHED 4

static inline void offsets_of(int64_t *off)
{
    off[0] = 0;
    for (int s = 0; s < NSEQ; s++)
        off[s + 1] = off[s] + lengths[s];
}

/* Weights in [0.25, 2], every seventh 0 with its key and value rows NaN
 * (a weight 0 is never read). */
static inline real *make_weights(tmat *k, tmat *v, uint64_t seed)
{
    real *w = malloc(NTOK * sizeof *w);
    for (int64_t j = 0; j < NTOK; j++) {
        w[j] = (real)(0.25 + 1.75 * test_uniform(&seed));
        if (j % 7 == 3) {
            w[j] = 0;
            for (int64_t t = 0; t < k->cols; t++)
                *tmat_at(k, j, t) = (real)NAN;
            for (int64_t t = 0; t < v->cols; t++)
                *tmat_at(v, j, t) = (real)NAN;
        }
    }
    return w;
}

/* A state's exported accumulator, shift and tokens (len doubles, then
 * the shift, then the tokens as a double): what "unchanged, bit for bit"
 * compares. */
static inline void state_bits(const P(state) *s, int64_t len, double *bits)
{
    int64_t tokens = 0;
    P(state_export)(s, bits, bits + len, &tokens);
    bits[len + 1] = (double)tokens;
}

/* The sums of a state (accumulator times exp(shift)) against another's,
 * relative to the larger; and whether their tokens agree. */
static inline double state_diff(const P(state) *a, const P(state) *b, int64_t len,
                         int *same_tokens)
{
    double *x = malloc((size_t)(len + 2) * sizeof *x);
    double *y = malloc((size_t)(len + 2) * sizeof *y);
    state_bits(a, len, x);
    state_bits(b, len, y);
    /* at the larger shift: a decayed state's may be far below 0 */
    double num = 0, den = 0, top = fmax(x[len], y[len]);
    for (int64_t i = 0; i < len; i++) {
        double u = x[i] * exp(x[len] - top), t = y[i] * exp(y[len] - top);
        num = fmax(num, fabs(u - t));
        den = fmax(den, fabs(t));
    }
    *same_tokens = x[len + 1] == y[len + 1];
    free(x), free(y);
    return den > 0 ? num / den : num;
}

/* NSEQ states of plan p, the same on every rank: sequence s's holds s % 3
 * keys of its own (0: an empty state). */
static inline void make_states(P(plan) *p, const map_case *mc, P(state) **st)
{
    for (int s = 0; s < NSEQ; s++) {
        uint64_t seed = 700 + (uint64_t)s;
        P(state_create)(&st[s], p);
        int64_t rows = s % 3;
        if (!rows)
            continue;
        tmat k = tmat_rand(ROW, rows, 3, 0, mc->lo, mc->hi, &seed);
        tmat v = tmat_rand(ROW, rows, 2, 0, -1, 1, &seed);
        P(state_update)(st[s], ROW, rows, k.a, k.ld, v.a, v.ld);
        tmat_free(&k), tmat_free(&v);
    }
}

static inline void copy_states(P(plan) *p, P(state) *const *from, P(state) **to)
{
    for (int s = 0; s < NSEQ; s++) {
        P(state_create)(&to[s], p);
        P(state_copy)(to[s], from[s]);
    }
}

static inline void free_states(P(state) **st)
{
    for (int s = 0; s < NSEQ; s++)
        P(state_destroy)(st[s]);
}

/* Nonzero when this rank holds the last row of sequence s (o, c: its
 * rows of the stream). */
static inline int holds_last(const int64_t *off, int s, int64_t o, int64_t c)
{
    int64_t last = off[s + 1] - 1;
    return off[s + 1] > off[s] && last >= o && last < o + c;
}

#endif
