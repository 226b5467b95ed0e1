/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_args.c -- libFuzzer harness for the argument checks of the plan and
 * execute calls, in both precisions.
 *
 * The input picks an entry point, a layout (valid or not), sizes, leading
 * dimensions (natural plus padding, one too short, negative, or beyond the
 * BLAS integer), NULL pointers, plan options and data (including NaN, Inf
 * and huge values), every feature map (custom ones with W and b from the
 * input).  Buffers are exactly as large as the arguments claim,
 * so a check that lets a bad leading dimension through shows up as an
 * AddressSanitizer report.  A call that accepts an invalid argument, or
 * that writes an output while refusing (negative status, ENOMEM, ESIZE,
 * ENONFINITE; and EDENOM or EOVERFLOW for approx_error's statistics), or
 * that names no row of the call with EDENOM or EOVERFLOW, aborts.
 * check-hard builds the library for it with the BLAS integer limit lowered
 * to 64, so that leading dimensions just above it drive the paths that
 * copy blocks through workspace (that build aborts if one reaches BLAS).
 * The backward calls too: their matrices, the normalizers (from the
 * input, so bad ones are refused as EDENOM before anything is written),
 * dW and db on maps with and without them; a refused backward call must
 * leave every gradient untouched (EOVERFLOW: dW and db), EOVERFLOW name
 * a row of dq, dk, dv or -1, and a call that returns 0 on finite inputs
 * must have written finite gradients.
 * The _ex forms of attention and causal attention too: their extras
 * (den, a starting state, absorb, key weights, reserved words that must
 * be 0), whose state must be absorbed only on success with absorb = 1,
 * by as many tokens as keys of weight not 0; a negative, NaN or Inf
 * weight must be refused before any work (after the size checks: a
 * LINATTN_ESIZE may come first).
 * linattn_d_states_step too: its streams' states (NULL, repeated), and
 * no state advanced on a refusal.
 * The batched calls are fuzzed too: batch and head strides that are
 * natural, padded, zero, small (interleaving or overlapping), negative or
 * beyond int64, against an oracle that enumerates every element (an output
 * whose problems share an element must be refused; nothing is written
 * between the elements), and their backward _ex forms with key weights
 * (negative or NaN among them), dL/dw and offsets (short or falling):
 * the bad extras refused, a refusal writing no gradient, dL/dw or dW.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "linattn.h"
#include "fuzz_reader.h"

/* The extras' reserved pointers (fewer as parts take them). */
#define RESERVED_PTRS(ex) (sizeof (ex).reserved_ptr / sizeof *(ex).reserved_ptr)


static int64_t take_size(reader *r, int64_t max)
{
    unsigned b = take(r);
    return b >= 250 ? -(int64_t)(b - 249) : (int64_t)(b % (unsigned)(max + 1));
}

/* A leading dimension for a rows x cols matrix. */
static int64_t take_ld(reader *r, int layout, int64_t rows, int64_t cols)
{
    int64_t natural = layout == LINATTN_COL_MAJOR ? rows : cols;
    switch (take(r) % 8) {
    case 0:
        return natural - 1;
    case 1:
        return -(int64_t)take(r);
    case 2:
        return ((int64_t)1 << 31) + take(r);
    case 3:
        return ((int64_t)1 << 62);
    case 4: /* just above the lowered BLAS limit of the fuzz build (64) */
        return 65 + take(r) % 8;
    default:
        return (natural > 0 ? natural : 1) + take(r) % 4;
    }
}

static double take_value(reader *r)
{
    unsigned b = take(r);
    switch (b % 16) {
    case 0:
        return NAN;
    case 1:
        return INFINITY;
    case 2:
        return -INFINITY;
    case 3:
        return 1e300 * (b & 16 ? 1 : -1);
    default:
        return ((int)b - 128) / 16.0;
    }
}

/* Elements a rows x cols matrix with leading dimension ld spans: 1 when ld
 * is not valid or the matrix cannot be addressed in int64 (the library must
 * refuse those), -1 when it is valid but too large to allocate here (the
 * caller then picks a smaller leading dimension). */
static int64_t span(int layout, int64_t rows, int64_t cols, int64_t ld)
{
    int64_t outer = layout == LINATTN_COL_MAJOR ? cols : rows;
    int64_t inner = layout == LINATTN_COL_MAJOR ? rows : cols;
    if (rows <= 0 || cols <= 0 || ld < 1 || ld < inner)
        return 1;
    if (outer - 1 > (INT64_MAX - inner) / ld)
        return 1;
    int64_t n = (outer - 1) * ld + inner;
    return n > (1 << 16) ? -1 : n;
}

/* Whether the library may accept a matrix argument: the oracle for its
 * checks (NULL only without rows, leading dimension at least the row or
 * column length and at least 1). */
static int arg_ok(int layout, int64_t rows, int64_t cols, const void *p,
                  int64_t ld)
{
    int64_t need = layout == LINATTN_COL_MAJOR ? rows : cols;
    return (p || rows <= 0) && ld >= 1 && ld >= need;
}

#define SENTINEL -12345.0

/* The backward calls (entries 9, 10 of HARNESS): Q, K, V, out, den, G
 * in, dq, dk, dv and (sometimes) dW, db out; den from the input, so that
 * bad normalizers are refused (EDENOM, before anything is written). */
#define GRAD_FN(P, R)                                                         \
    static void P##_grad(reader *r, const linattn_##P##_plan *plan,           \
                         int causal, int layout, int64_t d, int64_t e,        \
                         int64_t nq, int64_t nk, int custom, P##mat *q,       \
                         P##mat *k, P##mat *v, P##mat *out)                   \
    {                                                                         \
        int64_t rows = 0;                                                     \
        linattn_##P##_plan_weights(plan, LINATTN_ROW_MAJOR, NULL, 0, &rows);  \
        P##mat g = P##matrix(r, layout, nq, e, e, 0);                         \
        P##mat dq = P##matrix(r, layout, nq, d, d, 1);                        \
        P##mat dk = P##matrix(r, layout, nk, d, d, 1);                        \
        P##mat dv = P##matrix(r, layout, nk, e, e, 1);                        \
        P##mat dw = P##matrix(r, layout, rows, d, d, 1);                      \
        R den[64], db[16];                                                    \
        for (int i = 0; i < 64; i++)                                          \
            den[i] = (R)(take(r) % 8 ? 0.5 + take(r) : take_value(r));        \
        for (int i = 0; i < 16; i++)                                          \
            db[i] = (R)SENTINEL;                                              \
        int den_null = take(r) % 16 == 0, with_w = take(r) % 2;               \
        int with_b = take(r) % 2;                                             \
        R *pdw = with_w ? dw.a : NULL, *pdb = with_b ? db : NULL;             \
        int64_t bad = -7;                                                     \
        int st = causal                                                       \
            ? linattn_##P##_causal_backward(plan, layout, nq, q->a, q->ld,    \
                  k->a, k->ld, v->a, v->ld, out->a, out->ld,                  \
                  den_null ? NULL : den, g.a, g.ld, dq.a, dq.ld, dk.a, dk.ld, \
                  dv.a, dv.ld, pdw, dw.ld, pdb, &bad)                         \
            : linattn_##P##_attention_backward(plan, layout, nq, nk, q->a,    \
                  q->ld, k->a, k->ld, v->a, v->ld, out->a, out->ld,           \
                  den_null ? NULL : den, g.a, g.ld, dq.a, dq.ld, dk.a, dk.ld, \
                  dv.a, dv.ld, pdw, dw.ld, pdb, NULL, &bad);                  \
        int lay = layout == LINATTN_ROW_MAJOR || layout == LINATTN_COL_MAJOR; \
        int args_ok = lay && nq >= 0 && nk >= 0 &&                            \
                      arg_ok(layout, nq, d, q->a, q->ld) &&                   \
                      arg_ok(layout, nk, d, k->a, k->ld) &&                   \
                      arg_ok(layout, nk, e, v->a, v->ld) &&                   \
                      arg_ok(layout, nq, e, out->a, out->ld) &&               \
                      (!den_null || nq == 0) &&                               \
                      arg_ok(layout, nq, e, g.a, g.ld) &&                     \
                      arg_ok(layout, nq, d, dq.a, dq.ld) &&                   \
                      arg_ok(layout, nk, d, dk.a, dk.ld) &&                   \
                      arg_ok(layout, nk, e, dv.a, dv.ld) &&                   \
                      (!pdw || (rows > 0 && arg_ok(layout, rows, d, pdw,      \
                                                   dw.ld))) &&                \
                      (!pdb || custom);                                       \
        if (st >= 0 && !args_ok)                                              \
            abort(); /* a bad argument got through */                         \
        /* a backward call that returns non-zero writes no gradient but    \
         * dq, dk, dv on EOVERFLOW (what was computed), never dW, db;       \
         * EDENOM names a row of the call, EOVERFLOW one of dq, dk, dv or   \
         * -1; status 0 from finite inputs wrote finite gradients */        \
        int over = st == LINATTN_EOVERFLOW;                                   \
        if (st && !over && (!P##untouched(&dq) || !P##untouched(&dk) ||       \
                            !P##untouched(&dv)))                              \
            abort();                                                          \
        if (st && !P##untouched(&dw))                                         \
            abort();                                                          \
        for (int i = 0; st && i < 16; i++)                                    \
            if (db[i] != (R)SENTINEL)                                         \
                abort();                                                      \
        if (st != LINATTN_EDENOM && !over && bad != -7)                       \
            abort();                                                          \
        if (st == LINATTN_EDENOM && (bad < 0 || bad >= nq))                   \
            abort();                                                          \
        if (over && (bad < -1 || bad >= (nq > nk ? nq : nk)))                 \
            abort();                                                          \
        int finite_in = P##finite(q) && P##finite(k) && P##finite(v) &&       \
                        P##finite(out) && P##finite(&g);                      \
        for (int i = 0; i < 64; i++)                                          \
            finite_in &= isfinite(den[i]) != 0;                               \
        if (st == 0 && finite_in &&                                           \
            (!P##finite(&dq) || !P##finite(&dk) || !P##finite(&dv) ||         \
             (pdw && !P##finite(&dw))))                                       \
            abort(); /* a non-finite gradient with status 0 */               \
        for (int i = 0; st == 0 && finite_in && pdb && i < 16; i++)           \
            if (!isfinite(db[i]))                                             \
                abort();                                                      \
        free(g.a), free(dq.a), free(dk.a), free(dv.a), free(dw.a);            \
    }

/* linattn_d_states_step (entry 13 of HARNESS): up to 6 streams of the
 * call's plan (an entry now and then NULL or repeated, the array now and
 * then NULL), Q, K, V, out with count rows; a refusal writes nothing and
 * advances no state, and a call that succeeds advances each by one
 * token (by none where its key weight is 0).  Now and then the _ex form:
 * NULL extras, gates (now and then one above 0, +Inf or NaN), key
 * weights (now and then a negative, NaN or Inf one), a reserved word or
 * a part it does not take (den), each bad one refused as -12. */
#define STEP_FN(P, R)                                                         \
    static void P##_step(reader *r, const linattn_##P##_plan *plan,           \
                         int layout, int64_t d, int64_t e)                    \
    {                                                                         \
        int64_t count = take_size(r, 6);                                      \
        linattn_##P##_state *st[6] = {NULL};                                  \
        int made = 0;                                                         \
        for (int i = 0; i < 6; i++)                                           \
            made += !linattn_##P##_state_create(&st[i], plan);                \
        if (made < 6)                                                         \
            goto done;                                                        \
        linattn_##P##_state *use[6];                                          \
        memcpy(use, st, sizeof use);                                          \
        unsigned twist = take(r) % 8;                                         \
        if (twist == 1)                                                       \
            use[take(r) % 6] = NULL;                                          \
        if (twist == 2)                                                       \
            use[take(r) % 6] = use[take(r) % 6];                              \
        int states_ok = 1;                                                    \
        for (int64_t i = 0; i < count && i < 6; i++)                          \
            for (int64_t t = 0; t < i; t++)                                   \
                states_ok = states_ok && use[i] && use[i] != use[t];          \
        for (int64_t i = 0; i < count && i < 6; i++)                          \
            states_ok = states_ok && use[i];                                  \
        P##mat q = P##matrix(r, layout, count, d, d, 0);                      \
        P##mat k = P##matrix(r, layout, count, d, d, 0);                      \
        P##mat v = P##matrix(r, layout, count, e, e, 0);                      \
        P##mat out = P##matrix(r, layout, count, e, e, 1);                    \
        int null_array = twist == 3;                                          \
        unsigned form = take(r) % 6; /* 0: plain; 1: ex NULL; 2..5: parts */ \
        linattn_##P##_extras ex;                                              \
        linattn_##P##_extras_init(&ex);                                       \
        R gw[12], den[6];                                                     \
        int ex_ok = 1, values_ok = 1; /* values: read at stage 8 */          \
        for (int64_t i = 0; i < 6; i++) {                                     \
            static const double bad_g[4] = {0.5, INFINITY, NAN, -1e3};        \
            static const double bad_w[4] = {-1, NAN, INFINITY, 0};            \
            unsigned b = take(r) % 16;                                        \
            gw[i] = b == 0 ? (R)bad_g[take(r) % 4] : (R)(-0.25 * (b - 1));    \
            b = take(r) % 16;                                                 \
            gw[6 + i] = b == 0 ? (R)bad_w[take(r) % 4] : b < 3 ? 0 : (R)b;    \
        }                                                                     \
        if (form >= 2) {                                                      \
            ex.gates = form != 3 ? gw : NULL;                                 \
            ex.weights = form >= 3 ? gw + 6 : NULL;                           \
            if (form == 5 && take(r) % 2)                                     \
                ex.reserved[take(r) % 15] = 1;                                \
            else if (form == 5)                                               \
                ex.den = den;                                                 \
            ex_ok = form != 5;                                                \
            for (int64_t i = 0; i < count && i < 6; i++)                      \
                values_ok = values_ok && !(ex.gates && gw[i] > 0) &&          \
                            !(ex.weights && !(gw[6 + i] >= 0 &&               \
                                              gw[6 + i] <= 16));              \
        }                                                                     \
        int64_t bad = -7;                                                     \
        int status =                                                          \
            form == 0                                                         \
                ? linattn_##P##_states_step(null_array ? NULL : use, count,   \
                                            layout, q.a, q.ld, k.a, k.ld,     \
                                            v.a, v.ld, out.a, out.ld, &bad)   \
                : linattn_##P##_states_step_ex(                               \
                      null_array ? NULL : use, count, layout, q.a, q.ld, k.a, \
                      k.ld, v.a, v.ld, out.a, out.ld, form == 1 ? NULL : &ex, \
                      &bad);                                                  \
        int layout_ok = layout == LINATTN_ROW_MAJOR ||                        \
                        layout == LINATTN_COL_MAJOR;                          \
        /* no stream, no plan: the widths are unknown, ld >= 1 is all */      \
        int64_t dw = count ? d : 1, ew = count ? e : 1;                       \
        int args_ok = count >= 0 && (count == 0 || (states_ok && !null_array))\
                      && layout_ok && arg_ok(layout, count, dw, q.a, q.ld) && \
                      arg_ok(layout, count, dw, k.a, k.ld) &&                 \
                      arg_ok(layout, count, ew, v.a, v.ld) &&                 \
                      arg_ok(layout, count, ew, out.a, out.ld) && ex_ok;      \
        if ((status >= 0 && !args_ok) ||                                      \
            (status >= 0 && status != LINATTN_ESIZE && !values_ok))           \
            abort(); /* a bad argument got through */                         \
        int refused = status < 0 || status == LINATTN_ESIZE ||                \
                      status == LINATTN_ENONFINITE;                           \
        if (refused && (!P##untouched(&out) || bad != -7))                    \
            abort(); /* written on a refusal */                               \
        for (int i = 0; i < 6; i++) {                                         \
            int64_t tokens = -1;                                              \
            linattn_##P##_state_get(st[i], LINATTN_ROW_MAJOR, NULL, 1, NULL,  \
                                    &tokens);                                 \
            int64_t rows_of = 0; /* the rows whose stream is st[i] */         \
            for (int64_t t = 0; t < count && t < 6; t++)                      \
                rows_of += use[t] == st[i] && !(ex.weights && gw[6 + t] == 0);\
            if ((refused && tokens != 0) ||                                   \
                (status == 0 && tokens != rows_of))                           \
                abort(); /* a state advanced on a refusal, or not by one */   \
        }                                                                     \
        if ((status == LINATTN_EDENOM || status == LINATTN_EOVERFLOW) &&      \
            (bad < 0 || bad >= count))                                        \
            abort();                                                          \
        free(q.a), free(k.a), free(v.a), free(out.a);                         \
    done:                                                                     \
        for (int i = 0; i < 6; i++)                                           \
            linattn_##P##_state_destroy(st[i]);                               \
    }

#define HARNESS(P, R)                                                         \
    typedef struct {                                                          \
        R *a;                                                                 \
        size_t len;                                                           \
        int64_t ld;                                                           \
    } P##mat;                                                                 \
                                                                              \
    /* An output may be read as rows x d (features) or rows x e: the       \
     * buffer covers whichever of the two the leading dimension allows. */ \
    static P##mat P##matrix(reader *r, int layout, int64_t rows, int64_t cols,\
                            int64_t cols2, int output)                        \
    {                                                                         \
        P##mat m;                                                             \
        int64_t wide = cols > cols2 ? cols : cols2;                           \
        m.ld = take_ld(r, layout, rows, wide);                                \
        int64_t l1 = span(layout, rows, cols, m.ld);                          \
        int64_t l2 = span(layout, rows, cols2, m.ld);                         \
        if (l1 < 0 || l2 < 0) { /* valid beyond BLAS, too big to allocate */  \
            m.ld = layout == LINATTN_COL_MAJOR ? rows : wide;                 \
            l1 = span(layout, rows, cols, m.ld);                              \
            l2 = span(layout, rows, cols2, m.ld);                             \
        }                                                                     \
        m.len = (size_t)(l1 > l2 ? l1 : l2);                                  \
        m.a = take(r) % 16 == 0 ? NULL : malloc(m.len * sizeof(R));           \
        for (size_t i = 0; m.a && i < m.len; i++)                             \
            m.a[i] = output ? (R)SENTINEL : (R)take_value(r);                 \
        return m;                                                             \
    }                                                                         \
                                                                              \
    static int P##untouched(const P##mat *m)                                  \
    {                                                                         \
        for (size_t i = 0; m->a && i < m->len; i++)                           \
            if (m->a[i] != (R)SENTINEL)                                       \
                return 0;                                                     \
        return 1;                                                             \
    }                                                                         \
                                                                              \
    static int P##finite(const P##mat *m)                                     \
    {                                                                         \
        for (size_t i = 0; m->a && i < m->len; i++)                           \
            if (!isfinite(m->a[i]))                                           \
                return 0;                                                     \
        return 1;                                                             \
    }                                                                         \
                                                                              \
    GRAD_FN(P, R)                                                             \
    STEP_FN(P, R)                                                             \
                                                                              \
    static void P##_run(reader *r)                                             \
    {                                                                         \
        static const int layouts[4] = {LINATTN_ROW_MAJOR, LINATTN_COL_MAJOR,  \
                                       LINATTN_ROW_MAJOR, 7};                 \
        static const double epss[6] = {0, 1e-3, -1, NAN, INFINITY, 1e39};     \
        /* 9, 10: backward; 11, 12: the _ex forms of 1 and 6; 13: states_ \
         * step */                                                            \
        int entry = (int)(take(r) % 14);                                      \
        int layout = layouts[take(r) % 4];                                    \
        int map = (int)(take(r) % 10); /* 0, 9 unknown; 8 custom */           \
        int64_t d = take_size(r, 6), e = take_size(r, 6);                     \
        int64_t nq = take_size(r, 40), nk = take_size(r, 40);                 \
        /* causal */                                                          \
        if (entry == 6 || entry == 7 || entry == 10 || entry == 12)           \
            nk = nq;                                                          \
        linattn_opts o;                                                       \
        linattn_opts_init(&o);                                                \
        o.block = take_size(r, 9);                                            \
        o.chunk = take_size(r, 9);                                            \
        o.denom = (int)(take(r) % 3);                                         \
        o.eps = epss[take(r) % 6];                                            \
        o.m = take(r) % 4 == 0 ? take_size(r, 8) : 0;                         \
        o.check_finite = take(r) % 2;                                         \
        static const double scales[5] = {0, 0.5, -1, NAN, 1e39};              \
        o.draw = (int)(take(r) % 5) - 1;                                      \
        o.input_scale = scales[take(r) % 5];                                  \
        linattn_##P##_plan *plan = NULL;                                      \
        int st;                                                               \
        if (map == LINATTN_MAP_CUSTOM) { /* W and b from the input */         \
            int act = (int)(take(r) % 6);                                     \
            int64_t mc = take_size(r, 8);                                     \
            int64_t rows = act == LINATTN_ACT_HEDGEHOG ? mc / 2 : mc;         \
            P##mat w = P##matrix(r, layout, rows, d, d, 0);                   \
            R b[8];                                                           \
            for (int i = 0; i < 8; i++)                                       \
                b[i] = (R)take_value(r);                                      \
            st = linattn_##P##_plan_create_custom(&plan, act, d, mc, e,       \
                                                  layout, w.a, w.ld,          \
                                                  take(r) % 2 ? b : NULL, &o);\
            if (st >= 0 &&                                                    \
                !(act >= LINATTN_ACT_EXP && act <= LINATTN_ACT_HEDGEHOG &&    \
                  d >= 1 && mc >= 1 && e >= 1 &&                              \
                  (act != LINATTN_ACT_HEDGEHOG || mc % 2 == 0) &&             \
                  (layout == LINATTN_ROW_MAJOR ||                             \
                   layout == LINATTN_COL_MAJOR) &&                            \
                  arg_ok(layout, rows, d, w.a, w.ld)))                        \
                abort(); /* a bad argument got through */                     \
            free(w.a);                                                        \
        } else {                                                              \
            st = linattn_##P##_plan_create(&plan, map, d, e, &o);             \
        }                                                                     \
        if (entry == 0 && !st) { /* the chunk states' size, and its errors */ \
            int64_t sn = take_size(r, 40), sz = -7, mm = 0, ee = 0;           \
            int nul = take(r) % 8 == 0;                                       \
            linattn_##P##_plan_dims(plan, NULL, &mm, &ee);                    \
            int ss = linattn_##P##_causal_chunk_states_size(                  \
                plan, sn, nul ? NULL : &sz);                                  \
            /* a state per chunk and the final one, at least */               \
            if (sn < 0 ? ss != -2 || sz != -7                                 \
                : nul  ? ss != -3                                             \
                       : ss || sz < (sn > 0 ? 2 : 1) * mm * (ee + 1))         \
                abort();                                                      \
        }                                                                     \
        if (entry == 0 || st) {                                               \
            if (st && plan)                                                   \
                abort(); /* *plan written on a rejected call */               \
            linattn_##P##_plan_destroy(plan);                                 \
            return;                                                           \
        }                                                                     \
        if (entry == 13) {                                                    \
            P##_step(r, plan, layout, d, e);                                  \
            linattn_##P##_plan_destroy(plan);                                 \
            return;                                                           \
        }                                                                     \
        P##mat q = P##matrix(r, layout, nq, d, d, 0);                         \
        P##mat k = P##matrix(r, layout, nk, d, d, 0);                         \
        P##mat v = P##matrix(r, layout, nk, e, e, 0);                         \
        /* exactly as wide as the entry reads them: m for features, else e */ \
        int64_t m = 0;                                                        \
        linattn_##P##_plan_dims(plan, NULL, &m, NULL);                        \
        int64_t oc = entry == 5 ? m : e;                                      \
        P##mat out = P##matrix(r, layout, nq, oc, oc,                         \
                               entry < 9 || entry > 10);                      \
        if (entry == 9 || entry == 10) {                                      \
            P##_grad(r, plan, entry == 10, layout, d, e, nq, nk,              \
                     map == LINATTN_MAP_CUSTOM, &q, &k, &v, &out);            \
            free(q.a), free(k.a), free(v.a), free(out.a);                     \
            linattn_##P##_plan_destroy(plan);                                 \
            return;                                                           \
        }                                                                     \
        P##mat num = P##matrix(r, layout, nq, oc, oc, 1);                     \
        R den[64];                                                            \
        for (int i = 0; i < 64; i++)                                          \
            den[i] = (R)SENTINEL;                                             \
        int64_t bad = -7;                                                     \
        int queried = 0; /* entry 4: the query ran (the update succeeded) */ \
        linattn_##P##_state *s = NULL;                                        \
        /* what a call that does not refuse must have been given */          \
        int layout_ok = layout == LINATTN_ROW_MAJOR ||                        \
                        layout == LINATTN_COL_MAJOR;                          \
        int keys_ok = layout_ok && nk >= 0 &&                                 \
                      arg_ok(layout, nk, d, k.a, k.ld) &&                     \
                      arg_ok(layout, nk, e, v.a, v.ld);                       \
        int queries_ok = layout_ok && nq >= 0 &&                              \
                         arg_ok(layout, nq, d, q.a, q.ld);                    \
        int args_ok = entry == 4 ? keys_ok                                    \
                      : queries_ok &&                                         \
                        arg_ok(layout, nq, oc, out.a, out.ld)                 \
                        && (entry == 5 || keys_ok);                           \
        /* causal (6, 7): n = nq = nk rows of everything */                   \
        int64_t n = nq;                                                       \
        if (entry == 6 || entry == 7 || entry == 12)                          \
            args_ok = layout_ok && n >= 0 && arg_ok(layout, n, d, q.a, q.ld)  \
                      && arg_ok(layout, n, d, k.a, k.ld) &&                   \
                      arg_ok(layout, n, e, v.a, v.ld) &&                      \
                      arg_ok(layout, n, e, out.a, out.ld);                    \
        /* approx_error (8): causal 2 is invalid, and so are a scale that   \
         * is not finite in R and a NULL stats; stats is its output */        \
        static const double ascales[3] = {0.5, NAN, 1e39};                    \
        int causal = (int)(take(r) % 3);                                      \
        double ascale = ascales[take(r) % 3];                                 \
        int stats_null = take(r) % 16 == 0;                                   \
        linattn_approx_stats stats, poison;                                   \
        memset(&poison, 0x5a, sizeof poison);                                 \
        stats = poison;                                                       \
        if (entry == 8)                                                       \
            args_ok = layout_ok && nq >= 1 && nk >= 1 && causal <= 1 &&       \
                      (!causal || nk == nq) &&                                \
                      arg_ok(layout, nq, d, q.a, q.ld) && keys_ok &&          \
                      isfinite((R)ascale) && !stats_null;                     \
        /* causal (6): the one-call path, or continuing from a (fresh)   \
         * state with absorb 0, 1 or the invalid 2 */                         \
        int variant = (int)(take(r) % 2), absorb = (int)(take(r) % 3);        \
        if (entry == 6 && variant)                                            \
            args_ok = args_ok && absorb <= 1;                                 \
        /* the _ex forms (11, 12): NULL extras, or den, a state of some       \
         * keys, absorb 0, 1 or the invalid 2, key weights (now and then      \
         * 0, and now and then a negative, NaN or Inf one, which must be      \
         * refused), and now and then a reserved word set, which must be      \
         * refused too */                                                     \
        linattn_##P##_extras ex;                                              \
        linattn_##P##_extras_init(&ex);                                       \
        linattn_##P##_state *es = NULL;                                       \
        int ex_null = take(r) % 4 == 0;                                       \
        int64_t es_tokens = -1;                                               \
        R wts[64];                                                            \
        int64_t offs[4];                                                      \
        int64_t kept = nk; /* keys of weight not 0: what a state absorbs */   \
        int weights_ok = 1; /* read at stage 8: after the size checks */      \
        if (entry >= 11 && !ex_null) {                                        \
            ex.den = take(r) % 2 ? den : NULL;                                \
            if (take(r) % 2 && nk >= 0 && nk <= 64) {                         \
                static const double badw[4] = {-1, NAN, INFINITY, -0.0};      \
                kept = 0;                                                     \
                for (int64_t i = 0; i < nk; i++) {                            \
                    unsigned b = take(r) % 16;                                \
                    wts[i] = b == 0 ? (R)badw[take(r) % 4]                    \
                                    : b < 4 ? 0 : (R)(0.25 * b);              \
                    weights_ok = weights_ok && wts[i] >= 0 && wts[i] <= 4;    \
                    kept += wts[i] != 0;                                      \
                }                                                             \
                ex.weights = wts;                                             \
            }                                                                 \
            /* packed sequences: up to 3, offsets now and then not from 0,  \
             * decreasing or not ending at the rows (read at stage 8) */     \
            if (take(r) % 4 == 0) {                                           \
                int64_t rows = entry == 12 ? n : nq;                          \
                ex.nseq = (int64_t)(take(r) % 4);                             \
                offs[0] = take(r) % 8 == 0;                                   \
                for (int64_t i = 1; i <= ex.nseq; i++)                        \
                    offs[i] = offs[i - 1] + (int64_t)(take(r) % 5) - 1;       \
                if (take(r) % 4)                                              \
                    offs[ex.nseq] = rows;                                     \
                ex.offsets = offs;                                            \
                int good = offs[0] == 0 && offs[ex.nseq] == rows &&           \
                           (entry == 12 || nk == nq);                         \
                for (int64_t i = 0; i < ex.nseq; i++)                         \
                    good = good && offs[i + 1] >= offs[i];                    \
                weights_ok = weights_ok && good;                              \
            }                                                                 \
            if (take(r) % 2 && !linattn_##P##_state_create(&es, plan)) {      \
                R k2[16], v2[16];                                             \
                for (int i = 0; i < 16; i++)                                  \
                    k2[i] = (R)take_value(r), v2[i] = (R)take_value(r);       \
                if (d <= 8 && e <= 8)                                         \
                    linattn_##P##_state_update(es, LINATTN_ROW_MAJOR, 2, k2,  \
                                               d, v2, e);                     \
                linattn_##P##_state_get(es, LINATTN_ROW_MAJOR, NULL, 1, NULL, \
                                        &es_tokens);                          \
            }                                                                 \
            ex.state = es;                                                    \
            ex.absorb = (int)(take(r) % 3);                                   \
            if (take(r) % 8 == 0)                                             \
                ex.reserved[take(r) % 15] = 1;                                \
            if (take(r) % 16 == 0)                                            \
                ex.reserved_ptr[take(r) % RESERVED_PTRS(ex)] = &ex;           \
            args_ok = args_ok && ex.absorb <= 1 && (!ex.absorb || es) &&      \
                      !(es && ex.offsets); /* states replace it */          \
            for (size_t i = 0; i < RESERVED_PTRS(ex); i++)                    \
                args_ok = args_ok && !ex.reserved_ptr[i];                     \
            for (int i = 0; i < 15; i++)                                      \
                args_ok = args_ok && !ex.reserved[i];                         \
        }                                                                     \
        /* the checks without the call (1, 6) return what the call does   \
         * before any work, and write nothing */                              \
        int chk = entry == 1                                                  \
            ? linattn_##P##_attention_check(plan, layout, nq, nk, q.a, q.ld,  \
                                            k.a, k.ld, v.a, v.ld, out.a,      \
                                            out.ld)                           \
            : entry == 6                                                      \
            ? linattn_##P##_causal_check(plan, layout, n, q.a, q.ld, k.a,     \
                                         k.ld, v.a, v.ld, out.a, out.ld)      \
            : 0;                                                              \
        if (!P##untouched(&out))                                              \
            abort(); /* a check wrote */                                      \
        int64_t tokens = -1;                                                  \
        /* an _ex call that absorbs its keys into a state */                  \
        int absorbing = entry >= 11 && !ex_null && es && ex.absorb == 1;      \
        switch (entry) {                                                      \
        case 1:                                                               \
            st = linattn_##P##_attention(plan, layout, nq, nk, q.a, q.ld, k.a,\
                                         k.ld, v.a, v.ld, out.a, out.ld,      \
                                         &bad);                               \
            break;                                                            \
        case 2:                                                               \
            st = linattn_##P##_naive(plan, layout, nq, nk, q.a, q.ld, k.a,    \
                                     k.ld, v.a, v.ld, out.a, out.ld, &bad);   \
            break;                                                            \
        case 3:                                                               \
            st = linattn_##P##_softmax(layout, nq, nk, d, e, (R)0.5, q.a,     \
                                       q.ld, k.a, k.ld, v.a, v.ld, out.a,     \
                                       out.ld);                               \
            break;                                                            \
        case 4:                                                               \
            if (linattn_##P##_state_create(&s, plan))                         \
                break;                                                        \
            st = linattn_##P##_state_update(s, layout, nk, k.a, k.ld, v.a,   \
                                            v.ld);                            \
            if (st == 0 && (queried = 1))                                     \
                st = linattn_##P##_state_query(s, layout, nq,                 \
                                               q.a, q.ld, out.a, out.ld,      \
                                               num.a, num.ld,                 \
                                               take(r) % 2 ? den : NULL,      \
                                               &bad);                         \
            linattn_##P##_state_destroy(s);                                   \
            break;                                                            \
        case 6:                                                               \
            if (!variant) {                                                   \
                st = linattn_##P##_causal(plan, layout, n, q.a, q.ld, k.a,    \
                                          k.ld, v.a, v.ld, out.a, out.ld,     \
                                          &bad);                              \
                break;                                                        \
            }                                                                 \
            if (linattn_##P##_state_create(&s, plan))                         \
                break;                                                        \
            st = linattn_##P##_state_causal(s, layout, n, q.a, q.ld, k.a,     \
                                            k.ld, v.a, v.ld, out.a, out.ld,   \
                                            absorb, &bad);                    \
            linattn_##P##_state_get(s, LINATTN_ROW_MAJOR, NULL, 1, NULL,      \
                                    &tokens);                                 \
            linattn_##P##_state_destroy(s);                                   \
            /* absorbed on success with absorb 1, else unchanged */           \
            if (tokens != (st == 0 && absorb == 1 ? n : 0))                   \
                abort();                                                      \
            break;                                                            \
        case 7:                                                               \
            st = linattn_##P##_naive_causal(plan, layout, n, q.a, q.ld, k.a,  \
                                            k.ld, v.a, v.ld, out.a, out.ld,   \
                                            &bad);                            \
            break;                                                            \
        case 8:                                                               \
            st = linattn_##P##_approx_error(plan, layout, nq, nk, q.a, q.ld,  \
                                            k.a, k.ld, v.a, v.ld, ascale,     \
                                            causal,                           \
                                            stats_null ? NULL : &stats);      \
            break;                                                            \
        case 11:                                                              \
            st = linattn_##P##_attention_ex(plan, layout, nq, nk, q.a, q.ld,  \
                                            k.a, k.ld, v.a, v.ld, out.a,      \
                                            out.ld, ex_null ? NULL : &ex,     \
                                            &bad);                            \
            break;                                                            \
        case 12:                                                              \
            st = linattn_##P##_causal_ex(plan, layout, n, q.a, q.ld, k.a,     \
                                         k.ld, v.a, v.ld, out.a, out.ld,      \
                                         ex_null ? NULL : &ex, &bad);         \
            break;                                                            \
        default:                                                              \
            st = linattn_##P##_features(plan, layout, nq, q.a, q.ld, out.a,   \
                                        out.ld);                              \
            break;                                                            \
        }                                                                     \
        /* an _ex call's state: absorbed on success with absorb 1, else     \
         * unchanged; its den written only when the call was not refused */ \
        if (es) {                                                             \
            int64_t now = -1;                                                 \
            linattn_##P##_state_get(es, LINATTN_ROW_MAJOR, NULL, 1, NULL,     \
                                    &now);                                    \
            if (now != (st == 0 && ex.absorb == 1 ? es_tokens + kept          \
                                                  : es_tokens))               \
                abort();                                                      \
            linattn_##P##_state_destroy(es);                                  \
        }                                                                     \
        if ((st >= 0 && !args_ok) ||                                          \
            (!weights_ok && st >= 0 && st != LINATTN_ESIZE))                  \
            abort(); /* a bad argument got through (update, for entry 4) */   \
        if ((entry == 1 || (entry == 6 && (!variant || absorb <= 1))) &&     \
            (chk ? st != chk                                                  \
                 : st < 0 || st == LINATTN_ESIZE || st == LINATTN_ENONFINITE))\
            abort(); /* the check and its call disagree */                    \
        if (queried && st >= 0 &&                                             \
            !(queries_ok && (!out.a || arg_ok(layout, nq, e, out.a, out.ld))  \
              && (!num.a || arg_ok(layout, nq, e, num.a, num.ld))))           \
            abort(); /* the query took a bad argument */                      \
        /* Nothing written on a rejected call, nor on ENOMEM, ESIZE or       \
         * ENONFINITE; EDENOM names a row of the call (softmax and         \
         * approx_error have no row to name). */                             \
        int refused = st < 0 || st == LINATTN_ENOMEM || st == LINATTN_ESIZE ||\
                      st == LINATTN_ENONFINITE;                               \
        if (refused && (!P##untouched(&out) || !P##untouched(&num)))          \
            abort(); /* an output written on a refused call */                \
        for (int i = 0; refused && entry >= 11 && i < 64; i++)                \
            if (den[i] != (R)SENTINEL)                                        \
                abort(); /* an _ex call's den written on a refusal */         \
        if (refused && bad != -7)                                             \
            abort();                                                          \
        /* EOVERFLOW of the update (entry 4, no query ran) writes nothing; \
         * nor does an _ex call's whose absorbing state refuses the keys'   \
         * sums (bad_row -1, before any row) */                              \
        int row_named = st == LINATTN_EDENOM ||                               \
                        (st == LINATTN_EOVERFLOW && (entry != 4 || queried) &&\
                         !(absorbing && bad == -1));                          \
        if (entry == 4 && !queried && st == LINATTN_EOVERFLOW &&              \
            (!P##untouched(&out) || !P##untouched(&num) || bad != -7))        \
            abort();                                                          \
        /* ... but causal_ex has written every row by then (the refusal       \
         * is of the state's update, after the last row) */                   \
        if (absorbing && st == LINATTN_EOVERFLOW && bad == -1 &&              \
            (entry == 11 ? !P##untouched(&out)                                \
                         : nq > 0 && e > 0 && P##untouched(&out)))            \
            abort();                                                          \
        if (entry != 8 && entry != 3 && row_named &&                          \
            (bad < 0 || bad >= nq))                                           \
            abort();                                                          \
        /* approx_error writes its statistics only on success, all of them */ \
        if ((refused || st == LINATTN_EDENOM || st == LINATTN_EOVERFLOW) &&   \
            memcmp(&stats, &poison, sizeof stats))                            \
            abort();                                                          \
        if (entry == 8 && st == 0 &&                                          \
            stats.pairs != (causal ? nq * (nq + 1) / 2 : nq * nk))            \
            abort();                                                          \
        free(q.a), free(k.a), free(v.a), free(out.a), free(num.a);            \
        linattn_##P##_plan_destroy(plan);                                     \
    }

HARNESS(d, double)
HARNESS(s, float)

/* ---- the batched calls: strides ---- */

/* A batched matrix argument: its strides (NULL sometimes), its element
 * count and largest offset; count -1 when the description is invalid (the
 * library must return -i), -2 when it is valid but not addressable in
 * int64 (it must refuse, LINATTN_ESIZE). */
typedef struct {
    linattn_strides s;
    int null_strides;
    int64_t count, last; /* elements, and the largest offset */
} bshape;

/* Offset of element (b, h, i, j), or -1 beyond int64. */
static int64_t boffset(const linattn_strides *s, int layout, int64_t b,
                       int64_t h, int64_t i, int64_t j)
{
    __int128 o = (__int128)b * s->batch + (__int128)h * s->head +
                 (layout == LINATTN_COL_MAJOR ? i + (__int128)j * s->ld
                                              : (__int128)i * s->ld + j);
    return o > INT64_MAX ? -1 : (int64_t)o;
}

static bshape take_bshape(reader *r, int layout, int64_t batch, int64_t heads,
                          int64_t rows, int64_t cols)
{
    bshape m = {{0, 0, 0}, take(r) % 16 == 0, 0, 0};
    m.s.ld = take_ld(r, layout, rows, cols);
    int64_t inner = layout == LINATTN_COL_MAJOR ? rows : cols;
    int64_t slice = span(layout, rows, cols, m.s.ld);
    if (slice < 0) { /* valid but too big here: natural */
        m.s.ld = inner > 0 ? inner : 1;
        slice = span(layout, rows, cols, m.s.ld);
    }
    int64_t strides[2];
    for (int a = 0; a < 2; a++)
        switch (take(r) % 8) {
        case 0:
            strides[a] = 0;
            break;
        case 1:
            strides[a] = -1 - take(r) % 4;
            break;
        case 2:
            strides[a] = take(r) % 8; /* interleaving, maybe overlapping */
            break;
        case 3:
            strides[a] = (int64_t)1 << 62;
            break;
        default:
            strides[a] = slice * (a ? heads > 0 ? heads : 1 : 1) + take(r) % 4;
        }
    m.s.head = strides[0], m.s.batch = strides[1];
    if (!arg_ok(layout, rows, cols, &m, m.s.ld) || m.s.head < 0 ||
        m.s.batch < 0 || batch < 0 || heads < 0) {
        m.count = -1;
        return m;
    }
    if (batch == 0 || heads == 0 || rows == 0)
        return m;
    int64_t last = boffset(&m.s, layout, batch - 1, heads - 1, rows - 1,
                           cols - 1);
    if (last < 0) {
        m.count = -2;
        return m;
    }
    if (last >= (1 << 16)) { /* valid, too big to allocate here: natural */
        m.s.head = slice;
        m.s.batch = slice * heads;
        last = boffset(&m.s, layout, batch - 1, heads - 1, rows - 1, cols - 1);
    }
    m.count = batch * heads * rows * cols;
    m.last = last;
    return m;
}

/* Nonzero when two elements of the batched matrix share an offset. */
static int boverlaps(const bshape *m, int layout, int64_t batch, int64_t heads,
                     int64_t rows, int64_t cols)
{
    if (m->count <= 0)
        return 0;
    uint8_t *seen = calloc((size_t)m->last + 1, 1);
    int dup = 0;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t h = 0; h < heads; h++)
            for (int64_t i = 0; i < rows; i++)
                for (int64_t j = 0; j < cols; j++)
                    dup |= seen[boffset(&m->s, layout, b, h, i, j)]++ != 0;
    free(seen);
    return dup;
}

#define BATCHED_HARNESS(P, R)                                                 \
    /* A buffer for a batched matrix: as long as its last element, 1 when   \
     * the description is invalid; NULL sometimes. */                        \
    static R *P##bbuffer(reader *r, const bshape *m, int output)              \
    {                                                                         \
        size_t len = m->count > 0 ? (size_t)m->last + 1 : 1;                  \
        R *a = take(r) % 16 == 0 ? NULL : malloc(len * sizeof(R));            \
        for (size_t i = 0; a && i < len; i++)                                 \
            a[i] = output ? (R)SENTINEL : (R)take_value(r);                   \
        return a;                                                             \
    }                                                                         \
                                                                              \
    /* The batched backward _ex calls (entries 4, 5): out given, G, dq, dk, \
     * dv with strides of their own, den dense, and extras: key weights     \
     * (sometimes negative or NaN), dL/dw, offsets (sometimes short or      \
     * falling), causal: gates (sometimes above 0 or NaN) and dL/da; the  \
     * shapes in layout, the call in call_layout (maybe invalid).  Oracle:  \
     * what the extras get wrong is refused (-27 / -26), and a refusal     \
     * writes nothing (dq, dk, dv, dL/dw, dL/da, dW). */                    \
    static void P##_batched_grad(reader *r, const linattn_##P##_plan *plan,   \
                                 int causal, int layout, int call_layout,     \
                                 int64_t batch,                               \
                                 int64_t heads, int64_t nq, int64_t nk,       \
                                 int64_t d, int64_t e, R *const *a,           \
                                 const linattn_strides *const *s, int ok)     \
    {                                                                         \
        int64_t rows[4] = {nq, nq, nk, nk}, cols[4] = {e, d, d, e};           \
        bshape m[4];                                                          \
        R *g[4];                                                              \
        const linattn_strides *gs[4];                                         \
        for (int i = 0; i < 4; i++) {                                         \
            m[i] = take_bshape(r, layout, batch, heads, rows[i], cols[i]);    \
            g[i] = P##bbuffer(r, &m[i], i > 0);                               \
            gs[i] = m[i].null_strides ? NULL : &m[i].s;                       \
        }                                                                     \
        int64_t np = batch > 0 && heads > 0 && batch * heads <= 64            \
                         ? batch * heads : 0;                                 \
        int64_t vq = np * (nq > 0 ? nq : 0) + 1;                              \
        int64_t vk = np * (nk > 0 ? nk : 0) + 1;                              \
        R *den = malloc((size_t)vq * sizeof(R));                              \
        R *w = malloc((size_t)vk * sizeof(R));                                \
        R *dwt = malloc((size_t)vk * sizeof(R));                              \
        R *gt = malloc((size_t)vk * sizeof(R));                               \
        R *dgt = malloc((size_t)vk * sizeof(R));                              \
        R dw[64 * 8], db[64];                                                 \
        for (int64_t i = 0; i < vq; i++)                                      \
            den[i] = (R)(take(r) % 8 ? 0.5 + take(r) : take_value(r));        \
        int weights_ok = 1;                                                   \
        for (int64_t i = 0; i < vk; i++) {                                    \
            int c = (int)(take(r) % 16);                                      \
            w[i] = c == 0 ? (R)0 : c == 1 ? (R)-1 : c == 2 ? (R)NAN           \
                                            : (R)(0.25 + take(r) % 4);       \
            weights_ok &= i == vk - 1 || (c != 1 && c != 2);                  \
            dwt[i] = (R)SENTINEL;                                             \
        }                                                                     \
        /* the causal call's gates: above 0 refused, NaN propagates */        \
        int gates_ok = 1;                                                     \
        for (int64_t i = 0; i < vk; i++) {                                    \
            int c = (int)(take(r) % 16);                                      \
            gt[i] = c == 0 ? (R)0.5 : c == 1 ? (R)NAN                         \
                                  : (R)(-0.25 * (double)(take(r) % 4));       \
            gates_ok &= i == vk - 1 || c != 0;                                \
            dgt[i] = (R)SENTINEL;                                             \
        }                                                                     \
        for (int i = 0; i < 64 * 8; i++)                                      \
            dw[i] = (R)SENTINEL;                                              \
        for (int i = 0; i < 64; i++)                                          \
            db[i] = (R)SENTINEL;                                              \
        /* offsets over nq (and, not causal, the keys' over nk) */           \
        int64_t off[4] = {0, nq / 3, nq / 2, nq}, koff[4] = {0, nk / 2, nk,  \
                                                            nk};              \
        int offs = (int)(take(r) % 4), offsets_ok = 1;                        \
        if (offs == 2)                                                        \
            off[3] = nq + 1, offsets_ok = 0; /* past the end */               \
        if (offs == 3 && nq > 2)                                              \
            off[1] = nq, off[2] = 1, offsets_ok = 0; /* falling */            \
        linattn_##P##_extras ex;                                              \
        linattn_##P##_extras_init(&ex);                                       \
        int use_w = np > 0 && take(r) % 2;                                    \
        ex.weights = use_w ? w : NULL;                                        \
        ex.dweights = use_w && take(r) % 2 ? dwt : NULL;                      \
        int use_g = causal && np > 0 && take(r) % 2;                          \
        ex.gates = use_g ? gt : NULL;                                         \
        ex.dgates = causal && np > 0 && take(r) % 2 ? dgt : NULL;             \
        if (offs) {                                                           \
            ex.offsets = off;                                                 \
            ex.nseq = 3;                                                      \
            ex.key_offsets = causal ? NULL : koff;                            \
        }                                                                     \
        int64_t wrows = 0;                                                    \
        linattn_##P##_plan_weights(plan, LINATTN_ROW_MAJOR, NULL, 0, &wrows); \
        R *pdw = wrows > 0 && wrows <= 64 && take(r) % 2 ? dw : NULL;         \
        linattn_where bad = {-7, -7, -7};                                     \
        int st = causal                                                       \
            ? linattn_##P##_batched_causal_backward_ex(plan, call_layout,     \
                  batch,                                                      \
                  heads, nq, a[0], s[0], a[1], s[1], a[2], s[2], a[3], s[3],  \
                  den, g[0], gs[0], g[1], gs[1], g[2], gs[2], g[3], gs[3],    \
                  pdw, layout == LINATTN_COL_MAJOR ? wrows : d, NULL, &ex,    \
                  &bad)                                                       \
            : linattn_##P##_batched_attention_backward_ex(plan, call_layout,  \
                  batch, heads, nq, nk, a[0], s[0], a[1], s[1], a[2], s[2],   \
                  a[3], s[3], den, g[0], gs[0], g[1], gs[1], g[2], gs[2],     \
                  g[3], gs[3], pdw, layout == LINATTN_COL_MAJOR ? wrows : d,  \
                  NULL, &ex, &bad);                                           \
        int some = batch > 0 && heads > 0;                                    \
        if (st >= 0 && !ok)                                                   \
            abort(); /* a bad argument got through */                         \
        if (ok && st >= 0 && st != LINATTN_ESIZE && some &&                   \
            ((use_w && !weights_ok && nk > 0) || (offs && !offsets_ok) ||     \
             (use_g && !gates_ok && nk > 0)))                                 \
            abort(); /* a bad extra got through */                            \
        int refused = st < 0 || st == LINATTN_ESIZE ||                        \
                      st == LINATTN_ENONFINITE || st == LINATTN_EDENOM;       \
        for (int i = 1; refused && i < 4; i++) {                              \
            int64_t len = m[i].count > 0 ? m[i].last + 1 : 1;                 \
            for (int64_t j = 0; g[i] && j < len; j++)                         \
                if (g[i][j] != (R)SENTINEL)                                   \
                    abort(); /* a gradient written on a refusal */            \
        }                                                                     \
        for (int64_t i = 0; refused && i < vk; i++)                           \
            if (dwt[i] != (R)SENTINEL || dgt[i] != (R)SENTINEL)               \
                abort(); /* dL/dw or dL/da written on a refusal */            \
        for (int i = 0; st && i < 64 * 8; i++)                                \
            if (dw[i] != (R)SENTINEL)                                         \
                abort(); /* dW written on a failure */                        \
        for (int i = 0; i < 4; i++)                                           \
            free(g[i]);                                                       \
        free(den), free(w), free(dwt), free(gt), free(dgt);                   \
    }                                                                         \
                                                                              \
    static void P##_batched_run(reader *r)                                    \
    {                                                                         \
        static const int layouts[4] = {LINATTN_ROW_MAJOR, LINATTN_COL_MAJOR,  \
                                       LINATTN_ROW_MAJOR, 7};                 \
        /* 0 .. 3: attention, naive, causal, naive causal; 4, 5: the     \
         * backward _ex of attention and causal (out an input there) */     \
        int entry = (int)(take(r) % 6), seq = entry == 2 || entry == 3 ||     \
                                            entry == 5;                       \
        int layout = layouts[take(r) % 4];                                    \
        int64_t d = 1 + take(r) % 4, e = 1 + take(r) % 4;                     \
        int64_t batch = take_size(r, 3), heads = take_size(r, 3);             \
        int64_t nq = take_size(r, 12), nk = seq ? nq : take_size(r, 12);      \
        linattn_opts o;                                                       \
        linattn_opts_init(&o);                                                \
        o.block = 1 + take(r) % 8;                                            \
        o.chunk = 1 + take(r) % 8;                                            \
        o.denom = (int)(take(r) % 2);                                         \
        o.check_finite = take(r) % 2;                                         \
        o.log_decay = entry == 5 && take(r) % 2 ? -0.1 : 0; /* causal's */    \
        linattn_##P##_plan *plan = NULL;                                      \
        if (linattn_##P##_plan_create(&plan, 1 + (int)(take(r) % 3), d, e,    \
                                      &o))                                    \
            return;                                                           \
        int lok = layout == LINATTN_ROW_MAJOR || layout == LINATTN_COL_MAJOR; \
        int64_t rows[4] = {nq, nk, nk, nq}, cols[4] = {d, d, e, e};           \
        bshape m[4];                                                          \
        R *a[4];                                                              \
        for (int i = 0; i < 4; i++) {                                         \
            m[i] = take_bshape(r, lok ? layout : LINATTN_ROW_MAJOR, batch,    \
                               heads, rows[i], cols[i]);                      \
            a[i] = P##bbuffer(r, &m[i], i == 3 && entry < 4);                 \
        }                                                                     \
        const linattn_strides *s[4];                                          \
        int some = batch > 0 && heads > 0;                                    \
        int args_ok = lok && batch >= 0 && heads >= 0 && nq >= 0 && nk >= 0;  \
        int addressable = 1;                                                  \
        for (int i = 0; i < 4; i++) {                                         \
            s[i] = m[i].null_strides ? NULL : &m[i].s;                        \
            args_ok &= s[i] && m[i].count != -1 &&                            \
                       (a[i] || !some || rows[i] == 0);                       \
            addressable &= m[i].count != -2;                                  \
        }                                                                     \
        args_ok &= addressable ? !boverlaps(&m[3], layout, batch, heads, nq, e)\
                               : 1;                                           \
        if (entry >= 4) { /* out is an input: its overlaps do not matter */ \
            int ok = lok && batch >= 0 && heads >= 0 && nq >= 0 && nk >= 0;   \
            for (int i = 0; i < 4; i++)                                       \
                ok &= s[i] && m[i].count != -1 &&                             \
                      (a[i] || !some || rows[i] == 0);                        \
            P##_batched_grad(r, plan, entry == 5,                             \
                             lok ? layout : LINATTN_ROW_MAJOR, layout, batch, \
                             heads,                                           \
                             nq, nk, d, e, a, s, ok && lok);                  \
            for (int i = 0; i < 4; i++)                                       \
                free(a[i]);                                                   \
            linattn_##P##_plan_destroy(plan);                                 \
            return;                                                           \
        }                                                                     \
        linattn_where bad = {-7, -7, -7};                                     \
        int st;                                                               \
        switch (entry) {                                                      \
        case 0:                                                               \
            st = linattn_##P##_batched_attention(plan, layout, batch, heads,  \
                nq, nk, a[0], s[0], a[1], s[1], a[2], s[2], a[3], s[3], &bad);\
            break;                                                            \
        case 1:                                                               \
            st = linattn_##P##_batched_naive(plan, layout, batch, heads, nq,  \
                nk, a[0], s[0], a[1], s[1], a[2], s[2], a[3], s[3], &bad);    \
            break;                                                            \
        case 2:                                                               \
            st = linattn_##P##_batched_causal(plan, layout, batch, heads, nq, \
                a[0], s[0], a[1], s[1], a[2], s[2], a[3], s[3], &bad);        \
            break;                                                            \
        default:                                                              \
            st = linattn_##P##_batched_naive_causal(plan, layout, batch,      \
                heads, nq, a[0], s[0], a[1], s[1], a[2], s[2], a[3], s[3],    \
                &bad);                                                        \
        }                                                                     \
        if (st >= 0 && !args_ok)                                              \
            abort(); /* a bad argument got through */                         \
        int refused = st < 0 || st == LINATTN_ESIZE ||                        \
                      st == LINATTN_ENONFINITE;                               \
        if (!refused && !addressable)                                         \
            abort(); /* an array beyond int64 addressing got through */       \
        int64_t len = m[3].count > 0 ? m[3].last + 1 : 1;                     \
        for (int64_t i = 0; refused && a[3] && i < len; i++)                  \
            if (a[3][i] != (R)SENTINEL)                                       \
                abort(); /* an output written on a refused call */            \
        if (refused && (bad.batch != -7 || bad.row != -7))                    \
            abort();                                                          \
        if ((st == LINATTN_EDENOM || st == LINATTN_EOVERFLOW) &&              \
            (bad.batch < 0 || bad.batch >= batch || bad.head < 0 ||           \
             bad.head >= heads || bad.row < 0 || bad.row >= nq))              \
            abort(); /* EDENOM names no problem or row of the call */         \
        /* Never a write between the elements (padding, gaps). */             \
        if (st >= 0 && a[3] && m[3].count > 0) {                              \
            uint8_t *el = calloc((size_t)len, 1);                             \
            for (int64_t b = 0; b < batch; b++)                               \
                for (int64_t h = 0; h < heads; h++)                           \
                    for (int64_t i = 0; i < nq; i++)                          \
                        for (int64_t j = 0; j < e; j++)                       \
                            el[boffset(&m[3].s, layout, b, h, i, j)] = 1;     \
            for (int64_t i = 0; i < len; i++)                                 \
                if (!el[i] && a[3][i] != (R)SENTINEL)                         \
                    abort();                                                  \
            free(el);                                                         \
        }                                                                     \
        for (int i = 0; i < 4; i++)                                           \
            free(a[i]);                                                       \
        linattn_##P##_plan_destroy(plan);                                     \
    }

BATCHED_HARNESS(d, double)
BATCHED_HARNESS(s, float)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    switch (take(&r) % 4) {
    case 0:
        d_run(&r);
        break;
    case 1:
        s_run(&r);
        break;
    case 2:
        d_batched_run(&r);
        break;
    default:
        s_batched_run(&r);
    }
    return 0;
}
