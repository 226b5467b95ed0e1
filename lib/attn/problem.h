/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn/problem.h -- one problem, one descriptor.  Not installed.
 *
 * Every public call that computes describes its problem once, in an
 * XI(problem): the layout, the sizes, its matrices (the parts: Q, K, V,
 * out, ...) with their leading dimensions or, in the batched calls, the
 * strides from one problem to the next, and its optional parts: outputs
 * that may be asked for (numerators, normalizers), a state to start from.
 * The entry point fills the descriptor from its arguments and hands it,
 * with the call's signature (linattn_i_signature: the argument position
 * of every field and the shape of every part, a static table beside the
 * entry point), to XI(problem_check), the one validator, which returns
 * the status the call must return before any work (-i of argument i, as
 * LAPACKE; LINATTN_ESIZE; LINATTN_ENONFINITE; LINATTN_EDENOM for given
 * normalizers).  The paths then take the descriptor: a batched call's
 * problem (b, h) is XI(problem_one) of it, a range of rows
 * XI(problem_rows).
 *
 * A feature that adds an optional input (per-key weights, sequence
 * offsets, gates, per-sequence states) adds a part or a field here, its
 * shape and position to the signatures of the calls that take it, and
 * its meaning to the paths: the validator checks every part alike
 * (doc/internals.md, "Adding an optional input").
 *
 * liblinattn_mpi describes its distributed problems with the same struct
 * (mpi/mprec.h): only the inline accessors below, no symbol of this
 * library's internals.
 */
#ifndef LINATTN_ATTN_PROBLEM_H
#define LINATTN_ATTN_PROBLEM_H

#include <stddef.h>
#include <stdint.h>
#include "common/prec.h"
#include "common/view.h"

/* The parts a problem may have, as indices of XI(problem).part.  What
 * each holds, and its shape, is the signature's: out is nq x e in the
 * attention calls and nq x m for linattn_d_features (phi). */
enum {
    LINATTN_I_Q,   /* queries (features: x)                             */
    LINATTN_I_K,   /* keys                                              */
    LINATTN_I_V,   /* values                                            */
    LINATTN_I_OUT, /* outputs (backward: the forward's, an input)       */
    LINATTN_I_NUM, /* numerators phi(q)^T S (state_query)               */
    LINATTN_I_DEN, /* normalizers, one per query row (backward: input)  */
    LINATTN_I_G,   /* dL/dout (features_backward: dL/dphi)              */
    LINATTN_I_DQ,  /* dL/dQ (features_backward: dL/dx)                  */
    LINATTN_I_DK,  /* dL/dK                                             */
    LINATTN_I_DV,  /* dL/dV                                             */
    LINATTN_I_DW,  /* dL/dW of the map's projection (rows of W x d)     */
    LINATTN_I_DB,  /* dL/db of a custom map's bias (rows of W)          */
    LINATTN_I_KW,  /* key weights, one per key row (an _ex call's)      */
    LINATTN_I_DKW, /* dL/d(key weights), one per key row (backward _ex) */
    LINATTN_I_GATE, /* log gates g_t <= 0, one per key row (an _ex call's) */
    LINATTN_I_DGATE, /* dL/d(log decay a_t), one per key row (backward _ex) */
    LINATTN_I_PARTS
};

/* Shapes of a part: its rows and its columns. */
enum {
    LINATTN_I_NQ = 1, /* rows: the queries'                  */
    LINATTN_I_NK,     /* rows: the keys'                     */
    LINATTN_I_WROWS,  /* rows: W's (linattn_d_plan_weights)  */
    LINATTN_I_D,      /* columns: d                          */
    LINATTN_I_M,      /* columns: m                          */
    LINATTN_I_E,      /* columns: e                          */
    LINATTN_I_ONE     /* columns: 1 (a vector)               */
};

/* The role of a part (flags). */
enum {
    LINATTN_I_INPUT = 1,     /* an input: scanned under check_finite      */
    LINATTN_I_OUTPUT = 2,    /* an output: may not meet an input or an    */
                             /* earlier output; a batched output's        */
                             /* problems may not overlap                  */
    LINATTN_I_OPTIONAL = 4,  /* NULL: absent, skipped by every check      */
    LINATTN_I_REQUIRED = 8,  /* with OPTIONAL: NULL with rows is refused  */
                             /* after the other parts' checks             */
    LINATTN_I_VECTOR = 16,   /* entries at stride 1: no leading dimension */
                             /* argument (batched: problem p's at p rows) */
    LINATTN_I_SECONDARY = 32 /* checked after the other parts (dw, db:    */
                             /* against the map, then apart from all)     */
};

/* One part's place in a call: its pointer is argument pos (0: not an
 * argument of the call), its leading dimension or strides pos + 1. */
typedef struct {
    int pos;
    unsigned char rows, cols, role;
} linattn_i_part_sig;

/* What a call's validator checks beyond the parts (flags). */
enum {
    LINATTN_I_SCAN = 1,         /* check_finite: scan the inputs          */
    LINATTN_I_KEYS_IN_BLAS = 2, /* nk is a GEMM dimension (naive)         */
    LINATTN_I_DIMS_IN_BLAS = 4, /* nk, d, e are (softmax)                 */
    LINATTN_I_PAIRS = 8,        /* nq nk pairs counted in int64, nk in    */
                                /* BLAS (approx_error)                    */
    LINATTN_I_TOKENS = 16,      /* the state's tokens + nk fit int64      */
    LINATTN_I_DEN_POLICY = 32,  /* given normalizers against the policy   */
    LINATTN_I_NK_IS_NQ = 64,    /* causal == 1 requires nk == nq (at nk's */
                                /* position: approx_error)                */
    LINATTN_I_GIVEN_KEYS = 128, /* the given state holds the call's nk    */
                                /* keys (the backward's state of K, V)    */
    LINATTN_I_DECAY = 256,      /* takes a decayed plan (or state): every */
                                /* other call refuses one as its plan     */
    LINATTN_I_CHUNKS_IN = 512   /* reads chunk_states (the backward): the */
                                /* forward's sealed buffer of this n      */
};

/* The fields of linattn_d_extras a call may take (flags). */
enum {
    LINATTN_I_X_DEN = 1,    /* den: normalizers out                      */
    LINATTN_I_X_STATE = 2,  /* state and absorb: a state to start from   */
    LINATTN_I_X_WEIGHTS = 4, /* weights: key weights                     */
    LINATTN_I_X_OFFSETS = 8, /* offsets and nseq: packed sequences        */
    LINATTN_I_X_KEY_OFFSETS = 16, /* key_offsets: the keys' own offsets  */
    LINATTN_I_X_STATES = 32,  /* states (and absorb): one per sequence    */
    LINATTN_I_X_DWEIGHTS = 64, /* dweights: dL/dw out (the backward)      */
    LINATTN_I_X_DSTATES = 128, /* dstates: the starting states' gradients */
    LINATTN_I_X_GATES = 256,   /* gates: per-token log decays             */
    LINATTN_I_X_HEAD_DECAYS = 512, /* head_decays: a log decay per head   */
    LINATTN_I_X_DSTATE_END = 1024, /* dstate_end: the final state's gradient */
                                   /* from beyond the call (the backward)   */
    LINATTN_I_X_DGATES = 2048, /* dgates: dL/d(log decays) out (the backward) */
    LINATTN_I_X_CHUNK_STATES = 4096 /* chunk_states: the causal forward's  */
                                    /* saved states, out (forward) or in   */
};

/* Forms of a call. */
enum {
    LINATTN_I_SINGLE = 0, /* one problem, a leading dimension a matrix   */
    LINATTN_I_BATCHED = 1 /* batch x heads problems, strides a matrix    */
};

/* A call's signature: the argument position of each field of the
 * problem (0: not an argument), the shapes of its parts, what else is
 * checked.  Scalar arguments before the first part are checked before
 * the parts, those after it after the parts' own checks, each in
 * position order (doc/internals.md, "The validator"). */
typedef struct {
    int form;
    int plan, state, layout, batch, heads, nq, nk, d, e;
    int scale, causal, absorb, stats;
    int given;       /* position of a state given to a call of a plan:   */
                     /* of its map and sizes (refused there otherwise)   */
    int some_output; /* position refused when no output is asked for   */
    int extras;      /* position of the _ex calls' extras argument      */
    unsigned ex_parts; /* the extras' fields the call takes (LINATTN_I_X_*): */
                       /* any other must be at its init value           */
    int nq_min, nk_min;
    unsigned flags;
    linattn_i_part_sig part[LINATTN_I_PARTS];
} linattn_i_signature;

/* Nonzero for the parts that are vectors, one entry per row at stride
 * 1 (a batched call's problem p's at p rows): the normalizers and the
 * key weights. */
static inline int linattn_i_part_is_vector(int i)
{
    return i == LINATTN_I_DEN || i == LINATTN_I_KW || i == LINATTN_I_DKW ||
           i == LINATTN_I_GATE || i == LINATTN_I_DGATE;
}

/* A part of a problem: the caller's pointer (NULL: absent, or no rows)
 * and its leading dimension; a batched call's strides, problem (b, h)'s
 * matrix at p + b s.batch + h s.head.  The normalizers are dense: problem
 * (b, h)'s at p + (b heads + h) nq, whatever the form. */
typedef struct {
    const real *p;
    linattn_strides s;
    int no_strides; /* a batched call's strides argument was NULL */
} XI(part);

/* A problem.  batch x heads problems in a batched call, 1 x 1 otherwise,
 * each of nq query rows and nk key rows (causal: nk = nq). */
typedef struct XI(problem_s) {
    const X(plan) *plan;
    int layout;
    int64_t batch, heads;
    int64_t nq, nk;
    int64_t d, m, e;
    int causal;            /* keys j <= i only                         */
    XI(part) part[LINATTN_I_PARTS];
    /* The call's state (state_update, _query, _causal: the plan is its)
     * or a state given to a call of a plan (the backward's state of the
     * keys; an _ex call's starting state, whose keys rows see first when
     * causal, with the call's otherwise); absorb: on success the state
     * then holds the call's keys too. */
    X(state) *state;
    int absorb;
    /* The scalar arguments some calls have. */
    double scale;                 /* softmax, approx_error             */
    linattn_approx_stats *stats;  /* approx_error's output             */
    const X(extras) *extras;      /* an _ex call's, for their checks   */
    /* Packed sequences (an _ex call's; qoff NULL: one sequence): nseq
     * sequences end to end, sequence s the query rows [qoff[s],
     * qoff[s + 1]) and the key rows [koff[s], koff[s + 1]) (koff = qoff
     * when the keys have no offsets of their own), each its own problem
     * (attn/packed.c); states: NULL, or sequence s's starting state
     * states[s] (a batched problem's: problem p's at states[p nseq + s];
     * absorb: on success each then holds its sequence's keys too). */
    int64_t nseq;
    const int64_t *qoff, *koff;
    X(state) *const *states;
    /* A batched call's constant log decay per head (extras.head_decays:
     * heads entries, NULL none), and a single problem's: its head's, added
     * to the plan's (attn/decay.h). */
    const double *head_decays;
    double head_decay;
    /* The causal backward's gradient of its starting state's accumulator
     * (of each sequence's, at s m (e + 1) doubles; a batched problem's:
     * problem p's sequence s at (p nseq + s) m (e + 1)), or NULL. */
    double *dstates;
    /* The backward's gradient of its final state's accumulator from
     * beyond the call (m (e + 1) doubles, one problem), or NULL: it seeds
     * the keys' d[S z] (grad/). */
    const double *dstate_end;
    /* The causal forward's saved chunk states (attn/chunk_states.h):
     * written by the forward, read by the backward; NULL: none. */
    real *chunk_states;
} XI(problem);

/* One problem (batch = heads = 1) of plan in layout with these sizes
 * and no parts; d, m, e from the plan (plan NULL: 0, as a refused call
 * or softmax leaves them). */
XI(problem) XI(problem_init)(const X(plan) *plan, int layout, int64_t nq,
                             int64_t nk);

/* An _ex call's extras into its problem (ex NULL: none): den, the
 * starting state and absorb, the key weights, and ex itself for the validator's check of
 * the reserved words (attn/extras.c). */
void XI(problem_extras)(XI(problem) *pb, const X(extras) *ex);

/* The validator's checks of packed sequences (attn/packed.c).  Fields:
 * nonzero when the extras' packed fields agree with each other (nseq >=
 * 0 and addressable, no key offsets, states or nseq without offsets, no
 * single state with them); nothing is read.  Values: 0, or -1 when the
 * offsets do not run from 0 to nq (nk) without decreasing or a state is
 * NULL, of another plan, or (absorbing) given to two sequences.  Tokens:
 * nonzero when every state's tokens + its sequence's keys fit int64. */
int XI(packed_fields_ok)(const XI(problem) *pb);
int XI(packed_values_check)(const XI(problem) *pb);
int XI(packed_tokens_fit)(const XI(problem) *pb);

/* Nonzero when every reserved word of ex is 0. */
int XI(extras_reserved_zero)(const X(extras) *ex);

/* Nonzero when every field of ex that is not among parts (LINATTN_I_X_*)
 * is at its init value. */
int XI(extras_taken)(const X(extras) *ex, unsigned parts);

/* The status a call with this problem and signature must return before
 * any work: 0, -i for argument i, LINATTN_ESIZE, LINATTN_ENONFINITE, or
 * LINATTN_EDENOM for given normalizers (*bad, if not NULL, names the
 * problem and row; in a single call its row).  The checks and their
 * order: doc/internals.md, "The validator".  Reads the inputs only when
 * the plan asks for check_finite or normalizers are given. */
int XI(problem_check)(const XI(problem) *pb, const linattn_i_signature *sig,
                      linattn_where *bad);

/* The parts Q, K, V, out of the attention-shaped calls at positions pos,
 * pos + 2, pos + 4, pos + 6 (their leading dimensions or strides after
 * each), as a signature's part initializers. */
#define LINATTN_I_QKVO(pos)                                                  \
    [LINATTN_I_Q] = {(pos), LINATTN_I_NQ, LINATTN_I_D, LINATTN_I_INPUT},     \
    [LINATTN_I_K] = {(pos) + 2, LINATTN_I_NK, LINATTN_I_D, LINATTN_I_INPUT}, \
    [LINATTN_I_V] = {(pos) + 4, LINATTN_I_NK, LINATTN_I_E, LINATTN_I_INPUT}, \
    [LINATTN_I_OUT] = {(pos) + 6, LINATTN_I_NQ, LINATTN_I_E, LINATTN_I_OUTPUT}

/* Key weights in, one per key row (an _ex call's: optional). */
#define LINATTN_I_WEIGHTS_IN(pos)                                            \
    [LINATTN_I_KW] = {(pos), LINATTN_I_NK, LINATTN_I_ONE,                    \
                      LINATTN_I_INPUT | LINATTN_I_OPTIONAL | LINATTN_I_VECTOR}

/* Log gates in, one per key row (an _ex call's: optional). */
#define LINATTN_I_GATES_IN(pos)                                              \
    [LINATTN_I_GATE] = {(pos), LINATTN_I_NK, LINATTN_I_ONE,                  \
                        LINATTN_I_INPUT | LINATTN_I_OPTIONAL |               \
                            LINATTN_I_VECTOR}

/* dL/d(key weights) out, one per key row (a backward _ex call's:
 * optional). */
#define LINATTN_I_DWEIGHTS_OUT(pos)                                          \
    [LINATTN_I_DKW] = {(pos), LINATTN_I_NK, LINATTN_I_ONE,                   \
                       LINATTN_I_OUTPUT | LINATTN_I_OPTIONAL |               \
                           LINATTN_I_VECTOR}

/* dL/d(log decays) out, one per key row (a causal backward _ex call's:
 * optional). */
#define LINATTN_I_DGATES_OUT(pos)                                            \
    [LINATTN_I_DGATE] = {(pos), LINATTN_I_NK, LINATTN_I_ONE,                 \
                         LINATTN_I_OUTPUT | LINATTN_I_OPTIONAL |             \
                             LINATTN_I_VECTOR}

/* Normalizers out, one per query row (the forward calls': NULL refused
 * with rows, after the other parts' checks; an _ex call's: optional). */
#define LINATTN_I_DEN_OUT(pos, required)                                     \
    [LINATTN_I_DEN] = {(pos), LINATTN_I_NQ, LINATTN_I_ONE,                   \
                       LINATTN_I_OUTPUT | LINATTN_I_OPTIONAL |               \
                           LINATTN_I_VECTOR |                                \
                           ((required) ? LINATTN_I_REQUIRED : 0)}

/* A single call's part: p with leading dimension ld. */
static inline XI(part) XI(part_single)(const real *p, int64_t ld)
{
    XI(part) a = {p, {ld, 0, 0}, 0};
    return a;
}

/* A batched call's part: p with the caller's strides s (may be NULL). */
static inline XI(part) XI(part_batched)(const real *p,
                                        const linattn_strides *s)
{
    XI(part) a = {p, {0, 0, 0}, s == NULL};
    if (s)
        a.s = *s;
    return a;
}

/* A single call's Q, K, V and out. */
static inline void XI(problem_qkvo)(XI(problem) *pb, const real *q,
                                    int64_t ldq, const real *k, int64_t ldk,
                                    const real *v, int64_t ldv,
                                    const real *out, int64_t ldout)
{
    pb->part[LINATTN_I_Q] = XI(part_single)(q, ldq);
    pb->part[LINATTN_I_K] = XI(part_single)(k, ldk);
    pb->part[LINATTN_I_V] = XI(part_single)(v, ldv);
    pb->part[LINATTN_I_OUT] = XI(part_single)(out, ldout);
}

/* The number of problems. */
static inline int64_t XI(problem_count)(const XI(problem) *pb)
{
    return pb->batch * pb->heads;
}

/* Part i of problem number p (b = p / heads, h = p % heads), rows rows
 * of it: where its first element is.  Without rows it is never read, and
 * its strides were not checked for addressing: the base pointer stands
 * in. */
static inline const real *XI(part_at)(const XI(problem) *pb, int i,
                                       int64_t p, int64_t rows)
{
    const XI(part) *a = &pb->part[i];
    if (rows == 0 || !a->p)
        return a->p;
    if (linattn_i_part_is_vector(i)) /* each problem's after the last's */
        return a->p + p * rows;
    int64_t b = p / pb->heads, h = p % pb->heads;
    return a->p + b * a->s.batch + h * a->s.head;
}

/* The row-major or column-major view of part i (of a single problem). */
static inline XI(view) XI(part_view)(const XI(problem) *pb, int i)
{
    XI(view) v = {pb->part[i].p, pb->part[i].s.ld,
                  pb->layout == LINATTN_COL_MAJOR};
    return v;
}

/* Part i as an output (outputs are parts too, kept const in the
 * descriptor). */
static inline real *XI(part_out)(const XI(problem) *pb, int i)
{
    return (real *)pb->part[i].p;
}

/* Row r of part i of a single problem (its first element), as an
 * output (NULL when the part is absent). */
static inline real *XI(part_row)(const XI(problem) *pb, int i, int64_t r)
{
    real *a = XI(part_out)(pb, i);
    if (!a)
        return NULL;
    if (linattn_i_part_is_vector(i) || pb->layout == LINATTN_COL_MAJOR)
        return a + r;
    return a + r * pb->part[i].s.ld;
}

/* Whose rows part i has: the queries' (LINATTN_I_NQ), the keys'
 * (LINATTN_I_NK), or W's (the projection's gradients). */
static inline int linattn_i_part_rows_kind(int i)
{
    switch (i) {
    case LINATTN_I_K:
    case LINATTN_I_V:
    case LINATTN_I_DK:
    case LINATTN_I_DV:
    case LINATTN_I_KW:
    case LINATTN_I_DKW:
    case LINATTN_I_GATE:
    case LINATTN_I_DGATE:
        return LINATTN_I_NK;
    case LINATTN_I_DW:
    case LINATTN_I_DB:
        return LINATTN_I_WROWS;
    default:
        return LINATTN_I_NQ;
    }
}

/* Rows part i has in a problem (W's: 0, they are not the problem's). */
static inline int64_t XI(part_rows)(const XI(problem) *pb, int i)
{
    int kind = linattn_i_part_rows_kind(i);
    return kind == LINATTN_I_NQ ? pb->nq : kind == LINATTN_I_NK ? pb->nk : 0;
}

/* The states of a packed problem's sequences, over every problem of a
 * batched one (problem p's at p nseq). */
static inline int64_t XI(problem_states)(const XI(problem) *pb)
{
    return pb->states ? pb->nseq * XI(problem_count)(pb) : 0;
}

/* Problem number p of a batched problem as a single one: every part at
 * problem p's first element with its leading dimension (the normalizers
 * at p nq), its states and their gradients, the projection's gradients
 * as they are (they sum over all problems). */
static inline XI(problem) XI(problem_one)(const XI(problem) *pb, int64_t p)
{
    XI(problem) one = *pb;
    one.batch = one.heads = 1;
    if (pb->head_decays) { /* problem p is head p mod heads */
        one.head_decay = pb->head_decays[p % pb->heads];
        one.head_decays = NULL;
    }
    if (pb->states) /* a packed batch's: problem p's nseq of them */
        one.states = pb->states + p * pb->nseq;
    if (pb->dstates) /* and their gradients, m (e + 1) doubles each */
        one.dstates = pb->dstates + p * (pb->states ? pb->nseq : 1) * pb->m *
                                        (pb->e + 1);
    for (int i = 0; i < LINATTN_I_PARTS; i++) {
        XI(part) *a = &one.part[i];
        if (linattn_i_part_rows_kind(i) != LINATTN_I_WROWS)
            a->p = XI(part_at)(pb, i, p, XI(part_rows)(pb, i));
        a->s.batch = a->s.head = 0;
    }
    return one;
}

/* Query rows [qlo, qhi) and key rows [klo, khi) of a single problem:
 * the parts with the queries' rows (out, num, den, g, dq) from row qlo,
 * those with the keys' (k, v, dk, dv, the key weights) from row klo; nq
 * becomes qhi - qlo and nk khi - klo. */
static inline XI(problem) XI(problem_span)(const XI(problem) *pb,
                                           int64_t qlo, int64_t qhi,
                                           int64_t klo, int64_t khi)
{
    XI(problem) r = *pb;
    int cm = pb->layout == LINATTN_COL_MAJOR;
    for (int i = 0; i < LINATTN_I_PARTS; i++) {
        XI(part) *a = &r.part[i];
        int kind = linattn_i_part_rows_kind(i);
        if (!a->p || kind == LINATTN_I_WROWS)
            continue;
        int64_t lo = kind == LINATTN_I_NK ? klo : qlo;
        /* an empty range reads no row, and its row lo may lie past the
         * matrix (an empty sequence at the end, lo = n): lo ld is then
         * beyond what the validator bounded, so the pointer stays put */
        if (lo == (kind == LINATTN_I_NK ? khi : qhi))
            continue;
        a->p += linattn_i_part_is_vector(i) || cm ? lo : lo * a->s.ld;
    }
    r.nq = qhi - qlo;
    r.nk = khi - klo;
    return r;
}

/* Rows [lo, hi) of a single problem: of the queries and what goes with
 * them, and of the keys and theirs too when causal (row i and key i are
 * one token); nq (and nk) become hi - lo. */
static inline XI(problem) XI(problem_rows)(const XI(problem) *pb, int64_t lo,
                                           int64_t hi)
{
    return pb->causal ? XI(problem_span)(pb, lo, hi, lo, hi)
                      : XI(problem_span)(pb, lo, hi, 0, pb->nk);
}

#endif
