/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_limits.c -- integer limits and aliasing (sizes checked before any
 * work, outputs apart from inputs), compiled once per precision: every size
 * and count that the library adds or multiplies at its limit (token counts,
 * e + 1 and m (e + 1), n ld in bytes, batch strides), and outputs that share
 * memory with inputs or with each other in the single calls.  make check-hard
 * runs this under UBSan, which reports any signed overflow left on these
 * paths.
 */
#include <limits.h>
#include "crc32_ref.h"
#include "testutil.h"

#define ROW LINATTN_ROW_MAJOR
#define COL LINATTN_COL_MAJOR

#ifndef LINATTN_BLAS_INT_MAX /* lowered in one build of make check-hard */
#define LINATTN_BLAS_INT_MAX INT_MAX
#endif

static P(plan) *plan_of(int map, int64_t d, int64_t e)
{
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, NULL), 0);
    return p;
}

/* A state's checkpoint with its token count replaced (CRC resealed). */
static unsigned char *with_tokens(const P(state) *s, int64_t tokens,
                                  int64_t *len)
{
    P(state_save_size)(s, len);
    unsigned char *b = malloc((size_t)*len);
    P(state_save)(s, b, *len, NULL);
    for (int i = 0; i < 8; i++)
        b[56 + i] = (unsigned char)((uint64_t)tokens >> (8 * i));
    uint32_t crc = crc32_ref(b, (size_t)(*len - 4));
    for (int i = 0; i < 4; i++)
        b[*len - 4 + i] = (unsigned char)(crc >> (8 * i));
    return b;
}

/* Defect 3: token counts stop at int64.  Merging a state into itself
 * doubles its count: at 2^62 the next merge is refused (LINATTN_ESIZE, the
 * state unchanged), never INT64_MIN; and that state's checkpoint loads.
 * A checkpoint at INT64_MAX takes no more rows, and no merge. */
START_TEST(token_count_limit)
{
    P(plan) *p = plan_of(LINATTN_MAP_ELU1, 2, 1);
    P(state) *s, *t;
    P(state_create)(&s, p);
    P(state_create)(&t, p);
    real k[2] = {0, 0}, v[1] = {0}; /* zero values: S and z stay small */
    ck_assert_int_eq(P(state_update)(s, ROW, 1, k, 2, v, 1), 0);
    int64_t tokens = 0, before;
    int refused = 0;
    for (int i = 0; i < 70; i++) {
        P(state_get)(s, ROW, NULL, 0, NULL, &before);
        int st = P(state_merge)(s, s);
        P(state_get)(s, ROW, NULL, 0, NULL, &tokens);
        ck_assert(tokens > 0);
        if (st) {
            ck_assert_int_eq(st, LINATTN_ESIZE);
            ck_assert(tokens == before);
            refused++;
        }
    }
    ck_assert_int_eq(tokens, (int64_t)1 << 62);
    ck_assert_int_eq(refused, 70 - 62);
    int64_t len;
    unsigned char *b = with_tokens(s, tokens, &len);
    ck_assert_int_eq(P(state_load)(t, b, len), 0);
    free(b);
    /* at INT64_MAX: no update of a row, an update of none is fine, no merge */
    b = with_tokens(s, INT64_MAX, &len);
    ck_assert_int_eq(P(state_load)(t, b, len), 0);
    ck_assert_int_eq(P(state_update)(t, ROW, 1, k, 2, v, 1), LINATTN_ESIZE);
    ck_assert_int_eq(P(state_update)(t, ROW, 0, k, 2, v, 1), 0);
    P(state_get)(t, ROW, NULL, 0, NULL, &tokens);
    ck_assert_int_eq(tokens, INT64_MAX);
    P(state_reset)(s);
    ck_assert_int_eq(P(state_update)(s, ROW, 1, k, 2, v, 1), 0);
    ck_assert_int_eq(P(state_merge)(t, s), LINATTN_ESIZE);
    ck_assert_int_eq(P(state_merge)(s, t), LINATTN_ESIZE);
    P(state_get)(s, ROW, NULL, 0, NULL, &tokens);
    ck_assert_int_eq(tokens, 1);
    /* the refused state still checkpoints to itself */
    int64_t len2;
    unsigned char *b2 = with_tokens(t, INT64_MAX, &len2);
    ck_assert(len2 == len && !memcmp(b, b2, (size_t)len));
    free(b), free(b2);
    /* an update whose rows alone would pass INT64_MAX - tokens */
    b = with_tokens(s, INT64_MAX - 2, &len);
    ck_assert_int_eq(P(state_load)(t, b, len), 0);
    ck_assert_int_eq(P(state_update)(t, ROW, 3, k, 0 + 2, v, 1), LINATTN_ESIZE);
    free(b);
    P(state_destroy)(s);
    P(state_destroy)(t);
    P(plan_destroy)(p);
}
END_TEST

/* Defect 4 and the sizes a plan multiplies: e + 1 at e = INT64_MAX (UBSan
 * reported the addition), e at the BLAS limit (e + 1 is not a BLAS
 * integer), m (e + 1) entries beyond the address space, the default m of
 * FAVOR+ (4 d) and Taylor (1 + d + d (d + 1) / 2) past the BLAS integer,
 * block (m + e + 1) past int64: LINATTN_ESIZE and no plan. */
START_TEST(plan_size_limits)
{
    P(plan) *p = NULL;
    linattn_opts o;
    linattn_opts_init(&o);
    int64_t lim = LINATTN_BLAS_INT_MAX;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 2, INT64_MAX, &o),
                     LINATTN_ESIZE);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 2, lim, &o),
                     LINATTN_ESIZE);
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, INT64_MAX, 1, &o),
                     LINATTN_ESIZE);
    real w[4] = {1, 0, 0, 1};
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 2, 2, INT64_MAX,
                                           ROW, w, 2, NULL, &o), LINATTN_ESIZE);
    ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_EXP, 2, INT64_MAX, 1,
                                           COL, w, INT64_MAX, NULL, &o),
                     LINATTN_ESIZE);
    if (lim == INT_MAX) {
        /* m (e + 1) = 2^62 entries: no state could be addressed (W is
         * refused before it is read, so one row of it stands in) */
        ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_RELU, 1, lim - 1,
                                               lim - 1, COL, w, lim - 1, NULL,
                                               &o), LINATTN_ESIZE);
        ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_FAVOR, (int64_t)1 << 29,
                                        1, &o), LINATTN_ESIZE);
        ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_TAYLOR, 65536, 1, &o),
                         LINATTN_ESIZE);
    }
    if (lim == INT_MAX) { /* block (m + e + 1) past int64 */
        o.block = lim;
        o.chunk = lim;
        ck_assert_int_eq(P(plan_create_custom)(&p, LINATTN_ACT_RELU, 1, lim,
                                               lim - 1, COL, w, lim, NULL, &o),
                         LINATTN_ESIZE);
    }
    o.block = lim + 1;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 2, 1, &o), LINATTN_ESIZE);
    o.block = 0;
    o.chunk = INT64_MAX;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 2, 1, &o), LINATTN_ESIZE);
    ck_assert(p == NULL);
    /* the largest e that is allowed: e + 1 at the BLAS limit */
    o.chunk = 0;
    ck_assert_int_eq(P(plan_create)(&p, LINATTN_MAP_ELU1, 1, lim - 1, &o), 0);
    int64_t e = 0;
    P(plan_dims)(p, NULL, NULL, &e);
    ck_assert_int_eq(e, lim - 1);
    P(plan_destroy)(p);
}
END_TEST

/* Defect 5: addressable means bytes.  Two rows with ld = 2^61 put row 1 at
 * byte 2^64 (as 8-byte elements): that wraps, and row 1 was read at row
 * 0's address.  Refused with LINATTN_ESIZE by every call, nothing written;
 * one row with the same ld reads only row 0 and is fine.  Batch strides
 * the same: a problem offset past 2^60 elements is refused. */
START_TEST(byte_addressing)
{
    int64_t d = 2, e = 1, wrap = (int64_t)1 << 61, edge = ((int64_t)1 << 60) - 1;
    P(plan) *p = plan_of(LINATTN_MAP_ELU1, d, e);
    real q[4] = {1, 2, 3, 4}, k[4] = {1, 0, 0, 1}, v[2] = {1, 2}, out[2] = {-7, -7};
    int64_t bad = -1;
    ck_assert_int_eq(P(attention)(p, ROW, 2, 2, q, wrap, k, d, v, e, out, e, &bad),
                     LINATTN_ESIZE);
    ck_assert_int_eq(P(attention)(p, ROW, 2, 2, q, d, k, d, v, e, out, wrap, &bad),
                     LINATTN_ESIZE);
    ck_assert_int_eq(P(attention)(p, COL, 2, 2, q, 2, k, edge, v, 2, out, 2, &bad),
                     LINATTN_ESIZE);
    ck_assert_int_eq(P(causal)(p, ROW, 2, q, d, k, wrap, v, e, out, e, &bad),
                     LINATTN_ESIZE);
    ck_assert_int_eq(P(naive)(p, ROW, 2, 2, q, d, k, d, v, wrap, out, e, &bad),
                     LINATTN_ESIZE);
    ck_assert_int_eq(P(softmax)(ROW, 2, 2, d, e, 1, q, wrap, k, d, v, e, out, e),
                     LINATTN_ESIZE);
    ck_assert_int_eq(P(features)(p, ROW, 2, q, wrap, out, 2), LINATTN_ESIZE);
    P(state) *s;
    P(state_create)(&s, p);
    ck_assert_int_eq(P(state_update)(s, ROW, 2, k, wrap, v, e), LINATTN_ESIZE);
    ck_assert_int_eq(P(state_query)(s, ROW, 2, q, wrap, out, e, NULL, 0, NULL, &bad),
                     LINATTN_ESIZE);
    real sbuf[4];
    ck_assert_int_eq(P(state_get)(s, COL, sbuf, wrap, NULL, NULL), 0); /* e = 1 */
    P(plan) *p2 = plan_of(LINATTN_MAP_ELU1, 2, 2);
    P(state) *s2;
    P(state_create)(&s2, p2);
    ck_assert_int_eq(P(state_get)(s2, ROW, sbuf, wrap, NULL, NULL), LINATTN_ESIZE);
    ck_assert(out[0] == -7 && out[1] == -7 && bad == -1);
    /* one row: only row 0 is read, whatever the leading dimension */
    ck_assert_int_eq(P(attention)(p, ROW, 1, 1, q, wrap, k, wrap, v, wrap, out,
                                  wrap, &bad), 0);
    ck_assert(isfinite(out[0]) && out[1] == -7);
    /* batched: batch stride 2^61 with two batches, or strides whose sum
     * passes the limit */
    linattn_strides sq = {d, wrap, 0}, sd = {d, 0, 0}, sv = {e, 0, 0};
    linattn_strides so = {e, 1, 1};
    linattn_where w;
    ck_assert_int_eq(P(batched_attention)(p, ROW, 2, 1, 1, 1, q, &sq, k, &sd, v,
                                          &sv, out, &so, &w), LINATTN_ESIZE);
    linattn_strides sk = {d, edge / 2 + 1, edge / 2 + 1};
    linattn_strides so4 = {e, 2, 1};
    real out4[4] = {-7, -7, -7, -7};
    ck_assert_int_eq(P(batched_causal)(p, ROW, 2, 2, 1, q, &sd, k, &sk, v, &sv,
                                       out4, &so4, &w), LINATTN_ESIZE);
    ck_assert(out4[0] == -7 && out4[3] == -7 && out[1] == -7);
    P(state_destroy)(s);
    P(state_destroy)(s2);
    P(plan_destroy)(p2);
    P(plan_destroy)(p);
}
END_TEST

/* Defect 10: the single calls refuse an output that shares memory with an
 * input (out = q, out = v, out interleaved with q in one buffer) or with
 * another output, as -i of that output, and write nothing; disjoint
 * neighbours in one buffer are fine. */
START_TEST(outputs_apart_from_inputs)
{
    int64_t n = 3, d = 2, e = 2;
    P(plan) *p = plan_of(LINATTN_MAP_ELU1, d, e);
    real buf[64], copy[64];
    for (int i = 0; i < 64; i++)
        buf[i] = (real)(0.01 * i);
    memcpy(copy, buf, sizeof buf);
    real *q = buf, *k = buf + 6, *v = buf + 12, *o = buf + 18;
    int64_t bad = -1;
#define SAME() ck_assert(!memcmp(buf, copy, sizeof buf) && bad == -1)
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q, d, k, d, v, e, q, e, &bad), -11);
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q, d, k, d, v, e, v, e, &bad), -11);
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q, d, k, d, v, e, k + 1, e, &bad),
                     -11);
    /* interleaved: q in columns 0-1 and out in columns 2-3 of one n x 4 */
    ck_assert_int_eq(P(attention)(p, ROW, n, n, buf, 4, k, d, v, e, buf + 2, 4, &bad),
                     -11);
    ck_assert_int_eq(P(naive)(p, ROW, n, n, q, d, k, d, v, e, q, e, &bad), -11);
    ck_assert_int_eq(P(causal)(p, ROW, n, q, d, k, d, v, e, v, e, &bad), -10);
    ck_assert_int_eq(P(naive_causal)(p, COL, n, q, n, k, n, v, n, k, n, &bad), -10);
    ck_assert_int_eq(P(softmax)(ROW, n, n, d, e, 1, q, d, k, d, v, e, q, e), -13);
    ck_assert_int_eq(P(features)(p, ROW, n, q, d, q, d), -6);
    P(state) *s;
    P(state_create)(&s, p);
    ck_assert_int_eq(P(state_update)(s, ROW, n, k, d, v, e), 0);
    ck_assert_int_eq(P(state_query)(s, ROW, n, q, d, q, e, NULL, 0, NULL, &bad), -6);
    ck_assert_int_eq(P(state_query)(s, ROW, n, q, d, NULL, 0, q + 2, e, NULL, &bad),
                     -8);
    ck_assert_int_eq(P(state_query)(s, ROW, n, q, d, o, e, o, e, NULL, &bad), -8);
    ck_assert_int_eq(P(state_query)(s, ROW, n, q, d, o, e, NULL, 0, q + 5, &bad),
                     -10);
    ck_assert_int_eq(P(state_query)(s, ROW, n, q, d, o, e, NULL, 0, o + 1, &bad),
                     -10);
    real sz[8];
    ck_assert_int_eq(P(state_get)(s, ROW, sz, e, sz + 1, NULL), -5);
    SAME();
    /* neighbours: out right after v, den right after out */
    ck_assert_int_eq(P(attention)(p, ROW, n, n, q, d, k, d, v, e, o, e, &bad), 0);
    ck_assert_int_eq(P(state_query)(s, ROW, n, q, d, o, e, o + 6, e, o + 12, &bad),
                     0);
    ck_assert_int_eq(P(state_get)(s, ROW, sz, e, sz + 4, NULL), 0);
    /* no rows: nothing to meet */
    ck_assert_int_eq(P(attention)(p, ROW, 0, n, q, d, k, d, v, e, q, e, &bad), 0);
#undef SAME
    P(state_destroy)(s);
    P(plan_destroy)(p);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("limits " PREC);
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, token_count_limit);
    tcase_add_test(tc, plan_size_limits);
    tcase_add_test(tc, byte_addressing);
    tcase_add_test(tc, outputs_apart_from_inputs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(suite());
}
