/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * problem.c -- the validator of every call that computes (attn/problem.h).
 *
 * A call's status before any work is the first failure of these stages,
 * each in argument-position order (doc/internals.md, "The validator"):
 *
 *   1. the scalar arguments before the first matrix: plan (or state),
 *      layout, batch, heads, sizes, softmax's widths and scale; then,
 *      for a batched call with normalizers (described as one vector of
 *      nq * heads entries per batch), that count in int64 (LINATTN_ESIZE);
 *   2. the parts' own arguments: a pointer NULL although it has rows
 *      (-pos), a leading dimension, or a batched call's strides (-pos - 1:
 *      NULL, too small, negative, an output whose problems overlap);
 *   3. and 4. whether every part is addressable and its rows fit BLAS
 *      (LINATTN_ESIZE, kept for stage 6) and whether an output meets an
 *      input or an earlier output (-pos): single calls compare address
 *      ranges only once every part is addressable (stage 4 after 3), the
 *      batched calls compare them first, their ranges being empty where
 *      they are not addressable;
 *   5. the arguments after the parts: flags (absorb, causal), scale,
 *      stats, a part that is required although optional in form (the
 *      forward calls' den), dW and db against the map, a given state
 *      against the plan, an _ex call's extras;
 *   6. the size condition kept from stage 3;
 *   7. the other size conditions: keys in BLAS, pairs, token counts,
 *      problems countable;
 *   8. dW and db apart from every other matrix (-pos); key weights each
 *      finite and >= 0 (-pos of the extras: a weight is a measure, so a
 *      bad one is an argument, read only once it is addressable); packed
 *      sequences: an output meeting the offsets or the states (-pos of
 *      the output), offsets that do not run from 0 to the rows without
 *      decreasing, states NULL, of another plan or absorbing twice (-pos
 *      of the extras), a state's tokens + its keys beyond int64
 *      (LINATTN_ESIZE);
 *   9. with check_finite, the inputs (LINATTN_ENONFINITE), a key's rows
 *      only where its weight is not 0 (those rows are never read);
 *  10. given normalizers against the plan's policy (LINATTN_EDENOM).
 *
 * Negative statuses come before positive ones, except where an overlap
 * can only be judged once sizes are known good: single calls' parts
 * (stage 4 after 3) and dW and db (stage 8 after 6 and 7).  These are the
 * orders the calls had before the descriptor, kept: the traces of
 * tests/hard/compare_builds.sh are the same.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attn/problem.h"
#include "attn/state.h"
#include "attn/chunk_states.h"
#include "attn/output_rows.h"
#include "maps/features.h"
#include "common/validate.h"

XI(problem) XI(problem_init)(const X(plan) *plan, int layout, int64_t nq,
                             int64_t nk)
{
    /* built in the caller's object (a zeroed local and its copy out cost
     * a one-row call about what its checks cost) */
    return (XI(problem)){.plan = plan, .layout = layout, .batch = 1,
                         .heads = 1, .nq = nq, .nk = nk,
                         .d = plan ? plan->d : 0, .m = plan ? plan->m : 0,
                         .e = plan ? plan->e : 0};
}

/* Rows and columns of part i under the signature's shape. */
static int64_t shape_rows(const XI(problem) *pb, int code)
{
    return code == LINATTN_I_NQ   ? pb->nq
           : code == LINATTN_I_NK ? pb->nk
                                  : pb->plan->wrows;
}

static int64_t shape_cols(const XI(problem) *pb, int code)
{
    return code == LINATTN_I_D   ? pb->d
           : code == LINATTN_I_M ? pb->m
           : code == LINATTN_I_E ? pb->e
                                 : 1;
}

/* The keys a state of the call's keys holds: those of weight not 0
 * (the weights are addressable by now: stage 3). */
static int64_t kept_keys(const XI(problem) *pb)
{
    const real *w = pb->part[LINATTN_I_KW].p;
    int64_t n = 0;
    for (int64_t j = 0; w && j < pb->nk; j++)
        n += w[j] != 0;
    return w ? n : pb->nk;
}

/* The scalar checks, by kind. */
enum { C_PLAN, C_STATE, C_GIVEN, C_LAYOUT, C_BATCH, C_HEADS, C_NQ, C_NK, C_D, C_E,
       C_SCALE, C_CAUSAL, C_ABSORB, C_STATS, C_EXTRAS, C_SOME_OUTPUT,
       C_PART, C_COUNT };

/* Nonzero when the scalar check of kind c (part i for C_PART) fails. */
/* Nonzero unless plan decays and the call does not take decay: a path
 * that does not apply it would answer for another model. */
static int decay_taken(const X(plan) *plan, const linattn_i_signature *sig)
{
    return plan->log_decay == 0 || (sig->flags & LINATTN_I_DECAY);
}

/* Nonzero unless the plan has no normalizer (LINATTN_DENOM_NONE) and the
 * call needs one: approx_error (its pairs) compares normalized rows with
 * softmax's.  (The backward calls take such a plan: its den is 1, and
 * the numerators' adjoints are G itself.) */
static int denom_served(const X(plan) *plan, const linattn_i_signature *sig)
{
    return plan->denom != LINATTN_DENOM_NONE || !(sig->flags & LINATTN_I_PAIRS);
}

static int scalar_bad(const XI(problem) *pb, const linattn_i_signature *sig,
                      int c, int i)
{
    switch (c) {
    case C_PLAN:
        return !pb->plan || !decay_taken(pb->plan, sig) ||
               !denom_served(pb->plan, sig);
    case C_STATE: /* the call's own state (the plan is its) */
        return !pb->state || !decay_taken(pb->state->plan, sig);
    case C_GIVEN: /* a state given to a call of a plan: of its map */
        return pb->state && (!XI(state_fits_plan)(pb->state, pb->plan) ||
                             ((sig->flags & LINATTN_I_GIVEN_KEYS) &&
                              pb->state->tokens != kept_keys(pb)));
    case C_LAYOUT:
        return !linattn_i_layout_ok(pb->layout);
    case C_BATCH:
        return pb->batch < 0;
    case C_HEADS:
        return pb->heads < 0;
    case C_NQ:
        return pb->nq < sig->nq_min;
    case C_NK:
        return pb->nk < sig->nk_min ||
               ((sig->flags & LINATTN_I_NK_IS_NQ) && pb->causal == 1 &&
                pb->nk != pb->nq);
    case C_D:
        return pb->d < 1;
    case C_E:
        return pb->e < 1;
    case C_SCALE:
        return !isfinite(pb->scale) || !isfinite((real)pb->scale);
    case C_CAUSAL:
        return pb->causal != 0 && pb->causal != 1;
    case C_ABSORB: /* 0 or 1; an _ex call's absorbs only into a state */
        return (pb->absorb != 0 && pb->absorb != 1) ||
               (pb->absorb && !pb->state && !(pb->extras &&
                                              pb->extras->states));
    case C_EXTRAS: /* reserved words 0, fields the call takes only, packed
                    * fields that agree */
        return pb->extras && (!XI(extras_reserved_zero)(pb->extras) ||
                              !XI(extras_taken)(pb->extras, sig->ex_parts) ||
                              !XI(packed_fields_ok)(pb));
    case C_STATS:
        return !pb->stats;
    case C_SOME_OUTPUT:
        return !pb->part[LINATTN_I_OUT].p && !pb->part[LINATTN_I_NUM].p &&
               !pb->part[LINATTN_I_DEN].p;
    default: /* C_PART: an optional part that is required after all */
        return !pb->part[i].p &&
               shape_rows(pb, sig->part[i].rows) > 0;
    }
}

/* A scalar check at its position. */
typedef struct {
    int pos, kind, part;
} check;

/* The scalar checks of the signature with positions in [lo, hi), in
 * position order (stable: the order of kinds among equal positions). */
static int scalar_checks(const linattn_i_signature *sig, int lo, int hi,
                         check *out)
{
    const int pos[C_COUNT] = {sig->plan,  sig->state, sig->given, sig->layout,
                              sig->batch, sig->heads, sig->nq,
                              sig->nk,    sig->d,     sig->e,
                              sig->scale, sig->causal, sig->absorb,
                              sig->stats, sig->extras, sig->some_output, 0};
    int n = 0;
    for (int c = 0; c < C_PART; c++)
        if (pos[c] >= lo && pos[c] < hi && pos[c] > 0)
            out[n++] = (check){pos[c], c, 0};
    for (int i = 0; i < LINATTN_I_PARTS; i++) {
        const linattn_i_part_sig *ps = &sig->part[i];
        if (ps->pos >= lo && ps->pos < hi && (ps->role & LINATTN_I_REQUIRED))
            out[n++] = (check){ps->pos, C_PART, i};
    }
    for (int a = 1; a < n; a++) /* insertion sort: a dozen at most */
        for (int b = a; b > 0 && out[b - 1].pos > out[b].pos; b--) {
            check t = out[b];
            out[b] = out[b - 1];
            out[b - 1] = t;
        }
    return n;
}

/* The first failing check of list, as -pos, or 0. */
static int run_checks(const XI(problem) *pb, const linattn_i_signature *sig,
                      const check *list, int n)
{
    for (int i = 0; i < n; i++)
        if (scalar_bad(pb, sig, list[i].kind, list[i].part))
            return -list[i].pos;
    return 0;
}

/* The parts of the signature in position order, primary or secondary. */
static int parts_in_order(const linattn_i_signature *sig, int secondary,
                          int *idx)
{
    int n = 0;
    for (int i = 0; i < LINATTN_I_PARTS; i++) {
        const linattn_i_part_sig *ps = &sig->part[i];
        if (ps->pos > 0 && !(ps->role & LINATTN_I_SECONDARY) == !secondary)
            idx[n++] = i;
    }
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && sig->part[idx[b - 1]].pos >
                                     sig->part[idx[b]].pos; b--) {
            int t = idx[b];
            idx[b] = idx[b - 1];
            idx[b - 1] = t;
        }
    return n;
}

/* What problem_check derives from the signature alone: the checks and
 * parts in position order.  Sorting them anew cost a one-row call (a
 * decoding step's update or query) about as much as its arithmetic, so
 * each signature's order is derived once and kept (order_of). */
typedef struct {
    int first;       /* position of the first primary part (1 << 30: none) */
    int npre, npost; /* the checks of stage 1, of stage 5                  */
    int nprim, nsec;
    check pre[C_COUNT + LINATTN_I_PARTS];
    /* stage 5: the scalar checks after the parts and the secondary parts
     * (kind C_COUNT, part: the part's index), merged in position order,
     * a check before a part at the same position */
    check post[C_COUNT + 2 * LINATTN_I_PARTS];
    int prim[LINATTN_I_PARTS], sec[LINATTN_I_PARTS];
} sig_order;

static void derive_order(const linattn_i_signature *sig, sig_order *o)
{
    o->nprim = parts_in_order(sig, 0, o->prim);
    o->nsec = parts_in_order(sig, 1, o->sec);
    o->first = o->nprim ? sig->part[o->prim[0]].pos : 1 << 30;
    o->npre = scalar_checks(sig, 1, o->first, o->pre);
    check after[C_COUNT + LINATTN_I_PARTS];
    int n = scalar_checks(sig, o->first, 1 << 30, after);
    o->npost = 0;
    for (int a = 0, b = 0; a < n || b < o->nsec;) {
        int pos = b < o->nsec ? sig->part[o->sec[b]].pos : 0;
        if (b < o->nsec && (a == n || pos < after[a].pos))
            o->post[o->npost++] = (check){pos, C_COUNT, o->sec[b++]};
        else
            o->post[o->npost++] = after[a++];
    }
}

/* The orders derived so far, one slot a signature (found by its address,
 * and used only while the signature there holds what it held: a table on
 * the stack would not be taken for another).  A slot is claimed by one
 * thread, written, then published (ready); the others meanwhile derive
 * their own copy. */
#define ORDER_SLOTS 128
#define ORDER_PROBES 8
static struct {
    const linattn_i_signature *key; /* atomic: the slot's claimant      */
    int ready;                      /* atomic: sig and order written    */
    linattn_i_signature sig;
    sig_order order;
} orders[ORDER_SLOTS];

/* sig's order: the kept one, else derived into *local. */
static const sig_order *order_of(const linattn_i_signature *sig,
                                 sig_order *local)
{
    size_t h = (size_t)((uintptr_t)sig / sizeof(void *)) % ORDER_SLOTS;
    for (int probe = 0; probe < ORDER_PROBES; probe++) {
        const linattn_i_signature *key =
            __atomic_load_n(&orders[h].key, __ATOMIC_ACQUIRE);
        if (!key && __atomic_compare_exchange_n(&orders[h].key, &key, sig, 0,
                                                __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE)) {
            memcpy(&orders[h].sig, sig, sizeof *sig);
            derive_order(sig, &orders[h].order);
            __atomic_store_n(&orders[h].ready, 1, __ATOMIC_RELEASE);
            return &orders[h].order;
        }
        if (key == sig) {
            if (__atomic_load_n(&orders[h].ready, __ATOMIC_ACQUIRE) &&
                !memcmp(&orders[h].sig, sig, sizeof *sig))
                return &orders[h].order;
            break;
        }
        h = (h + 1) % ORDER_SLOTS;
    }
    derive_order(sig, local);
    return local;
}

/* Part i as a single call's matrix argument (a vector's leading dimension
 * is implied).  Inlined: its result read back from memory stalled the
 * validator of a one-row call (a store forwarded to a wider load). */
static inline __attribute__((always_inline)) linattn_i_mat single_mat(const XI(problem) *pb,
                                const linattn_i_signature *sig, int i)
{
    const linattn_i_part_sig *ps = &sig->part[i];
    int64_t rows = shape_rows(pb, ps->rows);
    int64_t ld = ps->role & LINATTN_I_VECTOR
                     ? linattn_i_vector_ld(pb->layout, rows)
                     : pb->part[i].s.ld;
    return (linattn_i_mat){rows, shape_cols(pb, ps->cols), pb->part[i].p, ld,
                           ps->pos, (ps->role & LINATTN_I_OPTIONAL) != 0};
}

/* The strides of a batched vector part of rows entries a problem: dense,
 * problem after problem (its rows * heads was checked to fit int64). */
static linattn_strides dense_strides(const XI(problem) *pb, int64_t rows)
{
    linattn_strides s = {linattn_i_vector_ld(pb->layout, rows),
                         pb->heads * rows, rows};
    return s;
}

/* Stages 2 to 4 of the primary parts, and in idx/n what stage 8 needs:
 * the first failure, negative, or LINATTN_ESIZE (stage 3), or 0. */
static int primary_parts(const XI(problem) *pb, const linattn_i_signature *sig,
                         const sig_order *o, const linattn_strides *vec)
{
    const int *idx = o->prim;
    int n = o->nprim;
    if (sig->form == LINATTN_I_SINGLE) {
        /* In position order, except the key weights (an _ex call's,
         * after the outputs in position): before the first output, so
         * that they are compared with the outputs as an input, and an
         * output meeting them is -pos of the output, as for every other
         * input.  They cannot fail stages 2 and 3 (optional, rows of K). */
        linattn_i_mat mats[LINATTN_I_PARTS];
        int first_output = 0, count = 0, kw = 0;
        for (int a = 0; a < n; a++) {
            if (idx[a] == LINATTN_I_KW) {
                kw = 1;
                continue;
            }
            mats[count++] = single_mat(pb, sig, idx[a]);
            if (first_output == count - 1 &&
                !(sig->part[idx[a]].role & LINATTN_I_OUTPUT))
                first_output = count;
        }
        if (kw) {
            for (int a = count; a > first_output; a--)
                mats[a] = mats[a - 1];
            mats[first_output++] = single_mat(pb, sig, LINATTN_I_KW);
            count++;
        }
        return linattn_i_check_mats_io(pb->layout, sizeof(real), mats, count,
                                       first_output);
    }
    linattn_i_bmat mats[LINATTN_I_PARTS];
    int count = 0;
    for (int a = 0; a < n; a++) {
        int i = idx[a];
        const linattn_i_part_sig *ps = &sig->part[i];
        /* an optional part left out (an _ex call's normalizers or key
         * weights): nothing to check (as single_mat's optional) */
        if ((ps->role & LINATTN_I_OPTIONAL) && !pb->part[i].p)
            continue;
        const linattn_strides *s = pb->part[i].no_strides ? NULL
                                                          : &pb->part[i].s;
        if (ps->role & LINATTN_I_VECTOR)
            s = &vec[i];
        mats[count++] = (linattn_i_bmat){
            shape_rows(pb, ps->rows), shape_cols(pb, ps->cols), pb->part[i].p,
            s, ps->pos, (ps->role & LINATTN_I_OUTPUT) != 0};
    }
    return linattn_i_check_batched(pb->layout, pb->batch, pb->heads,
                                   sizeof(real), mats, count);
}

/* Stage 5's checks of a secondary part (dW, db): present although the map
 * has no W (or, db, no bias); its own arguments; its size (ESIZE). */
static int secondary_part(const XI(problem) *pb,
                          const linattn_i_signature *sig, int i)
{
    const linattn_i_part_sig *ps = &sig->part[i];
    const real *p = pb->part[i].p;
    if (!p)
        return 0;
    if (i == LINATTN_I_DB)
        return pb->plan->map == LINATTN_MAP_CUSTOM ? 0 : -ps->pos;
    int64_t rows = shape_rows(pb, ps->rows), cols = shape_cols(pb, ps->cols);
    if (!rows)
        return -ps->pos;
    int st = linattn_i_matrix_arg(pb->layout, rows, cols, p, pb->part[i].s.ld,
                                  ps->pos);
    if (st)
        return st;
    return linattn_i_matrix_fits(pb->layout, rows, cols, pb->part[i].s.ld);
}

/* Stage 8: the secondary parts apart from every other matrix and from
 * each other (the later one's -pos). */
static int secondary_apart(const XI(problem) *pb,
                           const linattn_i_signature *sig, const sig_order *o,
                           const linattn_strides *vec)
{
    const int *sec = o->sec, *prim = o->prim;
    int ns = o->nsec, np = o->nprim;
    uintptr_t lo[LINATTN_I_PARTS], hi[LINATTN_I_PARTS];
    for (int a = 0; a < ns; a++) {
        linattn_i_mat m = single_mat(pb, sig, sec[a]);
        m.optional = 1;
        linattn_i_mat_range(pb->layout, sizeof(real), &m, &lo[a], &hi[a]);
        for (int b = 0; lo[a] < hi[a] && b < np; b++) {
            int i = prim[b];
            uintptr_t plo, phi;
            if (sig->form == LINATTN_I_SINGLE) {
                linattn_i_mat pm = single_mat(pb, sig, i);
                linattn_i_mat_range(pb->layout, sizeof(real), &pm, &plo, &phi);
            } else {
                const linattn_i_part_sig *ps = &sig->part[i];
                linattn_i_bmat bm = {shape_rows(pb, ps->rows),
                                     shape_cols(pb, ps->cols), pb->part[i].p,
                                     ps->role & LINATTN_I_VECTOR
                                         ? &vec[i]
                                         : &pb->part[i].s,
                                     ps->pos, 0};
                linattn_i_bmat_range(pb->layout, pb->batch, pb->heads,
                                     sizeof(real), &bm, &plo, &phi);
            }
            if (plo < phi && plo < hi[a] && lo[a] < phi)
                return -sig->part[sec[a]].pos;
        }
        for (int b = 0; lo[a] < hi[a] && b < a; b++)
            if (lo[b] < hi[b] && lo[b] < hi[a] && lo[a] < hi[b])
                return -sig->part[sec[a]].pos;
    }
    return 0;
}

/* Stage 7. */
static int size_conditions(const XI(problem) *pb,
                           const linattn_i_signature *sig)
{
    unsigned f = sig->flags;
    if (sig->form == LINATTN_I_BATCHED && pb->batch > 0 &&
        pb->heads > INT64_MAX / pb->batch)
        return LINATTN_ESIZE; /* problems not countable in int64 */
    /* every problem's states, and their gradients (m (e + 1) doubles
     * each), countable and addressable: stage 8 walks them */
    int64_t count = XI(problem_count)(pb);
    if (pb->states && count > 0 && pb->nseq > INT64_MAX / count)
        return LINATTN_ESIZE;
    if (pb->dstates && pb->plan) {
        int64_t states = pb->states ? pb->nseq * count : 1;
        int64_t per = pb->plan->m * (pb->plan->e + 1);
        if (states > 0 &&
            states > PTRDIFF_MAX / (int64_t)sizeof(double) / per)
            return LINATTN_ESIZE;
    }
    if ((f & (LINATTN_I_KEYS_IN_BLAS | LINATTN_I_DIMS_IN_BLAS |
              LINATTN_I_PAIRS)) &&
        linattn_i_blas_fits(pb->nk))
        return LINATTN_ESIZE;
    if ((f & LINATTN_I_DIMS_IN_BLAS) &&
        (linattn_i_blas_fits(pb->d) || linattn_i_blas_fits(pb->e)))
        return LINATTN_ESIZE;
    if ((f & LINATTN_I_PAIRS) && pb->nq > INT64_MAX / pb->nk)
        return LINATTN_ESIZE;
    if ((f & LINATTN_I_TOKENS) && pb->state &&
        pb->nk > INT64_MAX - pb->state->tokens)
        return LINATTN_ESIZE; /* the token count would pass int64 */
    return 0;
}

/* Stage 8's second half: the first problem with a key weight that is
 * not a measure (negative, NaN or Inf): 0 when there is none. */
static int weights_bad(const XI(problem) *pb)
{
    /* (no keys: none to look at, however many problems) */
    if (!pb->part[LINATTN_I_KW].p || pb->nk == 0)
        return 0;
    for (int64_t p = 0; p < XI(problem_count)(pb); p++) {
        const real *w = XI(part_at)(pb, LINATTN_I_KW, p, pb->nk);
        for (int64_t j = 0; j < pb->nk; j++)
            if (!(w[j] >= 0 && w[j] <= REAL_MAX))
                return 1;
    }
    return 0;
}

/* Nonzero when a gate is above 0 (+Inf among them): a state that grows.
 * NaN is left to check_finite, as NaN in V is. */
static int gates_bad(const XI(problem) *pb)
{
    if (!pb->part[LINATTN_I_GATE].p || pb->nk == 0)
        return 0;
    for (int64_t p = 0; p < XI(problem_count)(pb); p++) {
        const real *g = XI(part_at)(pb, LINATTN_I_GATE, p, pb->nk);
        for (int64_t j = 0; j < pb->nk; j++)
            if (g[j] > 0)
                return 1;
    }
    return 0;
}

/* Nonzero when a head's log decay is above 0, NaN or Inf (a gamma out of
 * (0, 1], as the plan's). */
static int head_decays_bad(const XI(problem) *pb)
{
    for (int64_t h = 0; pb->head_decays && h < pb->heads; h++)
        if (!(pb->head_decays[h] <= 0 && pb->head_decays[h] >= -DBL_MAX))
            return 1;
    return 0;
}

/* Nonzero when [lo, hi) meets the n entries of size elem at p. */
static int meets(uintptr_t lo, uintptr_t hi, const void *p, int64_t n,
                 size_t elem)
{
    uintptr_t a = (uintptr_t)p, b = a + (uintptr_t)n * elem;
    return p && n > 0 && lo < hi && lo < b && a < hi;
}

/* The addresses [*lo, *hi) part i spans (a batched call's: every
 * problem's elements, empty when it has none; dW and db: their one
 * matrix). */
static void part_range(const XI(problem) *pb, const linattn_i_signature *sig,
                       const linattn_strides *vec, int i, uintptr_t *lo,
                       uintptr_t *hi)
{
    const linattn_i_part_sig *ps = &sig->part[i];
    /* dW and db are one matrix whatever the form (sums over problems) */
    if (sig->form == LINATTN_I_SINGLE || (ps->role & LINATTN_I_SECONDARY)) {
        linattn_i_mat m = single_mat(pb, sig, i);
        m.optional = 1;
        linattn_i_mat_range(pb->layout, sizeof(real), &m, lo, hi);
    } else {
        linattn_i_bmat bm = {shape_rows(pb, ps->rows),
                             shape_cols(pb, ps->cols), pb->part[i].p,
                             ps->role & LINATTN_I_VECTOR ? &vec[i]
                                                         : &pb->part[i].s,
                             ps->pos, 1};
        linattn_i_bmat_range(pb->layout, pb->batch, pb->heads, sizeof(real),
                             &bm, lo, hi);
    }
}

/* Stage 8's packed sequences: an output meeting the offsets or the
 * states (-pos of the output), offsets or states that are not what they
 * must be (-pos of the extras), a state's tokens beyond int64
 * (LINATTN_ESIZE). */
static int packed_check(const XI(problem) *pb, const linattn_i_signature *sig,
                        const sig_order *o, const linattn_strides *vec)
{
    /* every output, dW and db among them (written even when there are no
     * problems: the sums over none), in position order */
    for (int a = 0; a < o->nprim + o->nsec; a++) {
        int i = a < o->nprim ? o->prim[a] : o->sec[a - o->nprim];
        const linattn_i_part_sig *ps = &sig->part[i];
        if (!(ps->role & LINATTN_I_OUTPUT) || !pb->part[i].p)
            continue;
        uintptr_t lo, hi;
        part_range(pb, sig, vec, i, &lo, &hi);
        if (meets(lo, hi, pb->qoff, pb->nseq + 1, sizeof *pb->qoff) ||
            meets(lo, hi, pb->koff, pb->nseq + 1, sizeof *pb->koff) ||
            meets(lo, hi, pb->states, XI(problem_states)(pb),
                  sizeof *pb->states))
            return -ps->pos;
    }
    if (XI(packed_values_check)(pb))
        return -sig->extras;
    if ((sig->flags & LINATTN_I_TOKENS) && !XI(packed_tokens_fit)(pb))
        return LINATTN_ESIZE;
    return 0;
}

/* Nonzero when [lo, hi) meets a part, the offsets or the states array. */
static int meets_any(const XI(problem) *pb, const linattn_i_signature *sig,
                     const linattn_strides *vec, uintptr_t lo, uintptr_t hi)
{
    for (int i = 0; i < LINATTN_I_PARTS; i++) {
        if (!sig->part[i].pos || !pb->part[i].p)
            continue;
        uintptr_t a, b;
        part_range(pb, sig, vec, i, &a, &b);
        if (lo < hi && a < b && lo < b && a < hi)
            return 1;
    }
    return meets(lo, hi, pb->qoff, pb->nseq + 1, sizeof *pb->qoff) ||
           meets(lo, hi, pb->koff, pb->nseq + 1, sizeof *pb->koff) ||
           meets(lo, hi, pb->states, XI(problem_states)(pb),
                 sizeof *pb->states);
}

/* Stage 8's starting states' gradients: a state to be the gradient of,
 * and an address range apart from every part, the offsets and the
 * states array (-pos of the extras). */
static int dstates_check(const XI(problem) *pb, const linattn_i_signature *sig,
                         const linattn_strides *vec)
{
    if (!pb->state && !pb->states)
        return -sig->extras;
    int64_t len = pb->plan->m * (pb->plan->e + 1) *
                  (pb->states ? XI(problem_states)(pb) : 1);
    uintptr_t lo = (uintptr_t)pb->dstates;
    uintptr_t hi = lo + (uintptr_t)len * sizeof(double);
    return meets_any(pb, sig, vec, lo, hi) ? -sig->extras : 0;
}

/* Stage 8's saved chunk states: one sequence, apart from every part and
 * from dstates, and for the backward the forward's sealed buffer of this
 * n and plan (-pos of the extras). */
static int chunk_states_check(const XI(problem) *pb,
                              const linattn_i_signature *sig,
                              const linattn_strides *vec)
{
    int64_t len;
    if (pb->qoff || X(causal_chunk_states_size)(pb->plan, pb->nq, &len))
        return -sig->extras;
    uintptr_t lo = (uintptr_t)pb->chunk_states;
    uintptr_t hi = lo + (uintptr_t)len * sizeof(real);
    if (meets_any(pb, sig, vec, lo, hi) ||
        meets(lo, hi, pb->dstates, pb->dstates ? pb->m * (pb->e + 1) : 0,
              sizeof(double)))
        return -sig->extras;
    if ((sig->flags & LINATTN_I_CHUNKS_IN) &&
        !XI(chunk_states_threads)(pb->plan, pb->chunk_states, pb->nq))
        return -sig->extras;
    return 0;
}

/* Nonzero when every entry of rows [0, rows) of the view (cols columns)
 * is finite, skipping the rows whose weight is 0 (w NULL: none). */
static int rows_finite(XI(view) v, int64_t rows, int64_t cols, const real *w)
{
    if (!w)
        return XI(all_finite)(v, rows, cols);
    for (int64_t r = 0; r < rows; r++)
        if (w[r] != 0 && !XI(all_finite)(XI(view_rows)(v, r), 1, cols))
            return 0;
    return 1;
}

/* Stage 9: every input part of every problem finite (a key's rows only
 * where its weight is not 0). */
static int inputs_finite(const XI(problem) *pb, const linattn_i_signature *sig)
{
    int cm = pb->layout == LINATTN_COL_MAJOR;
    if (pb->nq == 0 && pb->nk == 0) /* no rows: nothing, however many */
        return 1;
    for (int64_t p = 0; p < XI(problem_count)(pb); p++)
        for (int i = 0; i < LINATTN_I_PARTS; i++) {
            const linattn_i_part_sig *ps = &sig->part[i];
            if (!ps->pos || !(ps->role & LINATTN_I_INPUT) || !pb->part[i].p)
                continue;
            int64_t rows = shape_rows(pb, ps->rows);
            const real *a = XI(part_at)(pb, i, p, rows);
            XI(view) v = ps->role & LINATTN_I_VECTOR
                             ? (XI(view)){a, rows, 0}
                             : (XI(view)){a, pb->part[i].s.ld, cm};
            const real *w = ps->rows == LINATTN_I_NK
                                ? XI(part_at)(pb, LINATTN_I_KW, p, rows)
                                : NULL;
            if (ps->role & LINATTN_I_VECTOR ? !XI(all_finite)(v, 1, rows)
                                            : !rows_finite(v, rows,
                                                  shape_cols(pb, ps->cols), w))
                return 0;
        }
    return 1;
}

/* Stage 10: the first problem with a normalizer that breaks the policy. */
static int den_policy(const XI(problem) *pb, linattn_where *bad)
{
    if (pb->nq == 0) /* no normalizers, however many problems */
        return 0;
    for (int64_t p = 0; p < XI(problem_count)(pb); p++) {
        const real *den = XI(part_at)(pb, LINATTN_I_DEN, p, pb->nq);
        for (int64_t r = 0; r < pb->nq; r++)
            if (!XI(den_ok)(pb->plan, den[r])) {
                if (bad)
                    *bad = (linattn_where){p / pb->heads, p % pb->heads, r};
                return LINATTN_EDENOM;
            }
    }
    return 0;
}

int XI(problem_check)(const XI(problem) *pb, const linattn_i_signature *sig,
                      linattn_where *bad)
{
    sig_order local;
    const sig_order *o = order_of(sig, &local);
    /* 1. the scalar arguments before the parts */
    int st = run_checks(pb, sig, o->pre, o->npre);
    if (st)
        return st;
    /* a batched call's vectors (normalizers, key weights) are described
     * by their rows * heads */
    linattn_strides vec[LINATTN_I_PARTS];
    for (int i = 0; i < LINATTN_I_PARTS; i++) {
        vec[i] = (linattn_strides){1, 0, 0};
        const linattn_i_part_sig *ps = &sig->part[i];
        if (sig->form != LINATTN_I_BATCHED || !ps->pos ||
            !(ps->role & LINATTN_I_VECTOR) ||
            (ps->role & LINATTN_I_SECONDARY))
            continue;
        int64_t rows = shape_rows(pb, ps->rows);
        if (pb->heads > 0 && rows > INT64_MAX / pb->heads)
            return LINATTN_ESIZE;
        vec[i] = dense_strides(pb, rows);
    }
    /* 2. to 4. */
    int size = primary_parts(pb, sig, o, vec);
    if (size < 0)
        return size;
    /* 5. the arguments after the parts, dW and db among them */
    for (int a = 0; a < o->npost; a++) {
        const check *c = &o->post[a];
        if (c->kind == C_COUNT) {
            int s = secondary_part(pb, sig, c->part);
            if (s < 0)
                return s;
            size = size ? size : s;
        } else if (scalar_bad(pb, sig, c->kind, c->part)) {
            return -c->pos;
        }
    }
    /* 6. and 7. */
    if (size)
        return size;
    st = size_conditions(pb, sig);
    /* 8. */
    if (!st && o->nsec)
        st = secondary_apart(pb, sig, o, vec);
    if (!st && weights_bad(pb))
        st = -sig->part[LINATTN_I_KW].pos;
    if (!st && gates_bad(pb))
        st = -sig->part[LINATTN_I_GATE].pos;
    if (!st && head_decays_bad(pb))
        st = -sig->extras;
    if (!st && pb->qoff)
        st = packed_check(pb, sig, o, vec);
    if (!st && pb->dstates)
        st = dstates_check(pb, sig, vec);
    if (!st && pb->chunk_states)
        st = chunk_states_check(pb, sig, vec);
    if (st)
        return st;
    /* 9. and 10. */
    if ((sig->flags & LINATTN_I_SCAN) && pb->plan && pb->plan->check_finite &&
        !inputs_finite(pb, sig))
        return LINATTN_ENONFINITE;
    if (sig->flags & LINATTN_I_DEN_POLICY)
        return den_policy(pb, bad);
    return 0;
}
