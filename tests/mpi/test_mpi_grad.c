/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_mpi_grad.c -- the distributed backward under mpirun (np 1 to 8),
 * compiled once per precision.  A global sequence split over the ranks
 * in every pattern of mpidata.h (even, skewed with empty ranks, all on
 * the last, all on the first; the non-causal queries and keys split
 * apart): the distributed forward with normalizers, then the distributed
 * backward, every rank's dq, dk, dv, dL/dw and the summed dW, db against
 * the serial backward of the whole sequence (1e-12 in double, 1e-5 in
 * float), for five maps (identity, elu+1, FAVOR, and two trained maps
 * with W and b: custom exp and custom elu+1), causal and not, both
 * layouts, with and without key weights, the non-causal one with the
 * global state handed over too; batched over two heads against the
 * serial batched backward (dW and db summed over the heads).  At one rank the causal backward is the serial
 * one bit for bit.  Then the collective refusals: one rank's bad
 * argument, a bad normalizer on one rank, plans that differ, dW on some
 * ranks only, ranks in different calls, a handed state of other keys:
 * the same status everywhere and nothing written anywhere.
 */
#include <math.h>
#include "testutil.h"
#include "linattn_mpi.h"
#include "mpitest.h"
#include "mpidata.h"

#define D 3
#define E 2
#define NT 61 /* causal tokens; non-causal queries */
#define NK 53 /* non-causal keys */
#include "mpigrad.h"

/* The serial forward and backward on the whole sequence. */
static int serial(const P(plan) *p, int causal, const tmat *q, const tmat *k,
                  const tmat *v, const tmat *g, const real *w, int trained,
                  tmat *out, real *den, grads *r)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w;
    ex.den = den;
    int64_t nq = q->rows, nk = k->rows, st, ldw = q->layout == COL ? 4 : D;
    if (causal)
        st = P(causal_ex)(p, q->layout, nq, q->a, q->ld, k->a, k->ld, v->a,
                          v->ld, out->a, out->ld, &ex, NULL);
    else
        st = P(attention_ex)(p, q->layout, nq, nk, q->a, q->ld, k->a, k->ld,
                             v->a, v->ld, out->a, out->ld, &ex, NULL);
    if (st)
        return (int)st;
    ex.den = NULL;
    ex.dweights = w ? r->dkw : NULL;
    if (causal)
        return P(causal_backward_ex)(
            p, q->layout, nq, q->a, q->ld, k->a, k->ld, v->a, v->ld, out->a,
            out->ld, den, g->a, g->ld, r->dq.a, r->dq.ld, r->dk.a, r->dk.ld,
            r->dv.a, r->dv.ld, trained ? r->dw : NULL, ldw,
            trained ? r->db : NULL, &ex, NULL);
    return P(attention_backward_ex)(
        p, q->layout, nq, nk, q->a, q->ld, k->a, k->ld, v->a, v->ld, out->a,
        out->ld, den, g->a, g->ld, r->dq.a, r->dq.ld, r->dk.a, r->dk.ld,
        r->dv.a, r->dv.ld, trained ? r->dw : NULL, ldw,
        trained ? r->db : NULL, NULL, &ex, NULL);
}

/* The distributed forward and backward on this rank's rows (queries
 * [qo, qo + qc), keys [ko, ko + kc); causal: the same); handed: the
 * global state handed to the non-causal backward. */
static int distributed(const P(plan) *p, int causal, const tmat *q,
                       const tmat *k, const tmat *v, const tmat *g,
                       const real *w, int trained, int handed, int64_t qo,
                       int64_t qc, int64_t ko, int64_t kc, tmat *out,
                       real *den, grads *r, int64_t *bad)
{
    P(extras) ex;
    P(extras_init)(&ex);
    ex.weights = w ? w + ko : NULL;
    ex.den = den + qo;
    int layout = q->layout, st;
    int64_t ldw = layout == COL ? 4 : D;
    if (causal)
        st = MP(causal_ex)(p, WORLD, layout, qc, row_of(q, qo), q->ld,
                           row_of(k, ko), k->ld, row_of(v, ko), v->ld,
                           row_of(out, qo), out->ld, &ex, bad);
    else
        st = MP(attention_ex)(p, WORLD, layout, qc, kc, row_of(q, qo), q->ld,
                              row_of(k, ko), k->ld, row_of(v, ko), v->ld,
                              row_of(out, qo), out->ld, &ex, bad);
    if (st)
        return st;
    ex.den = NULL;
    ex.dweights = w ? r->dkw + ko : NULL;
    if (causal)
        return MP(causal_backward_ex)(
            p, WORLD, layout, qc, row_of(q, qo), q->ld, row_of(k, ko), k->ld,
            row_of(v, ko), v->ld, row_of(out, qo), out->ld, den + qo,
            row_of(g, qo), g->ld, row_of(&r->dq, qo), r->dq.ld,
            row_of(&r->dk, ko), r->dk.ld, row_of(&r->dv, ko), r->dv.ld,
            trained ? r->dw : NULL, ldw, trained ? r->db : NULL, &ex, bad);
    P(state) *gs = NULL;
    if (handed) { /* the forward's state: local, then summed */
        P(extras) kx;
        P(extras_init)(&kx);
        kx.weights = ex.weights;
        P(state_create)(&gs, p);
        st = P(state_update_ex)(gs, layout, kc, row_of(k, ko), k->ld,
                                row_of(v, ko), v->ld, &kx);
        MT_CHECK(st == 0, "state_update_ex %d", st);
        st = MP(state_allreduce)(&gs, 1, WORLD);
        MT_CHECK(st == 0, "state_allreduce %d", st);
    }
    st = MP(attention_backward_ex)(
        p, WORLD, layout, qc, kc, row_of(q, qo), q->ld, row_of(k, ko), k->ld,
        row_of(v, ko), v->ld, row_of(out, qo), out->ld, den + qo,
        row_of(g, qo), g->ld, row_of(&r->dq, qo), r->dq.ld,
        row_of(&r->dk, ko), r->dk.ld, row_of(&r->dv, ko), r->dv.ld,
        trained ? r->dw : NULL, ldw, trained ? r->db : NULL, gs, &ex, bad);
    P(state_destroy)(gs);
    return st;
}

/* Every map, split, layout, causal and not, weighted and not (and the
 * handed state): this rank's gradient rows and the sums dW, db as the
 * serial backward's of the whole; other ranks' rows untouched. */
static void grad_equals_serial(void)
{
    for (int ci = 0; ci < CASES; ci++)
        for (int split = 0; split < SPLITS; split++)
            for (int variant = 0; variant < 3; variant++)
                for (int causal = 0; causal < 2; causal++) {
                    const gcase *c = &cases[ci];
                    if (causal && variant == 2)
                        continue; /* no state to hand over */
                    int layout = (split + ci + variant) % 2 ? COL : ROW;
                    int trained = c->map == LINATTN_MAP_CUSTOM;
                    uint64_t seed = 500 + (uint64_t)(ci * 64 + split * 8 +
                                                     variant * 2 + causal);
                    P(plan) *p = plan_of(c, 11 + (uint64_t)ci);
                    int64_t nq = NT, nk = causal ? NT : NK;
                    tmat q = tmat_rand(layout, nq, D, 1, c->lo, c->hi, &seed);
                    tmat k = tmat_rand(layout, nk, D, 2, c->lo, c->hi, &seed);
                    tmat v = tmat_rand(layout, nk, E, 0, -1, 1, &seed);
                    tmat g = tmat_rand(layout, nq, E, 1, -1, 1, &seed);
                    real *w = variant == 1 ? weights_of(nk, &k, &v, seed) : NULL;
                    tmat ro = tmat_like(&q, nq, E, 1), mo = tmat_like(&q, nq, E, 1);
                    real *rden = malloc((size_t)nq * sizeof(real));
                    real *mden = malloc((size_t)nq * sizeof(real));
                    grads ref = grads_new(&q, nq, nk), mine = grads_new(&q, nq, nk);
                    int64_t qo, qc, ko, kc, bad = -5;
                    block_of(nq, split, &qo, &qc);
                    if (causal)
                        ko = qo, kc = qc;
                    else
                        block_of(nk, (split + 1) % SPLITS, &ko, &kc);
                    int sts = serial(p, causal, &q, &k, &v, &g, w, trained, &ro, rden, &ref);
                    int st = distributed(p, causal, &q, &k, &v, &g, w, trained, variant == 2,
                                         qo, qc, ko, kc, &mo, mden, &mine, &bad);
                    tmat a, b;
                    a = view(&mine.dq, qo, qc), b = view(&ref.dq, qo, qc);
                    double eq = rel_diff(&a, &b);
                    a = view(&mine.dk, ko, kc), b = view(&ref.dk, ko, kc);
                    double ek = rel_diff(&a, &b);
                    a = view(&mine.dv, ko, kc), b = view(&ref.dv, ko, kc);
                    double ev = rel_diff(&a, &b);
                    double ew = trained ? vec_rel_diff(mine.dw, ref.dw, 4 * D) : 0;
                    double eb = trained ? vec_rel_diff(mine.db, ref.db, 4) : 0;
                    double ekw = w ? vec_rel_diff(mine.dkw + ko, ref.dkw + ko, kc) : 0;
                    MT_CHECK(sts == 0 && st == 0 && eq < TOL && ek < TOL &&
                                 ev < TOL && ew < TOL && eb < TOL && ekw < TOL,
                             "map %d act %d split %d variant %d causal %d layout %d: "
                             "status %d/%d, dq %g dk %g dv %g dW %g db %g dw %g",
                             c->map, c->act, split, variant, causal, layout, sts, st,
                             eq, ek, ev, ew, eb, ekw);
                    MT_CHECK(bad == -5, "bad_row written on success");
                    MT_CHECK(outside_untouched(&mine.dq, qo, qc, SENTINEL) &&
                                 outside_untouched(&mine.dk, ko, kc, SENTINEL) &&
                                 outside_untouched(&mine.dv, ko, kc, SENTINEL),
                             "rows of other ranks, or padding, written");
                    for (int i = 0; !trained && i < 4; i++)
                        MT_CHECK(mine.db[i] == SENTINEL, "db written");
                    if (mt_size == 1 && causal)
                        MT_CHECK(same_bits(&mine.dq, &ref.dq) &&
                                     same_bits(&mine.dk, &ref.dk) &&
                                     same_bits(&mine.dv, &ref.dv),
                                 "np 1: not the serial bits");
                    free(w), free(rden), free(mden);
                    grads_free(&ref), grads_free(&mine);
                    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
                    tmat_free(&ro), tmat_free(&mo);
                    P(plan_destroy)(p);
                }
}

/* The distributed batched forward with normalizers (one batch entry of
 * H heads). */
static int batched_forward(const P(plan) *p, int causal, int64_t H,
                           int64_t nq, int64_t nk, const real *q,
                           const linattn_strides *sq, const real *k,
                           const linattn_strides *sk, const real *v,
                           const linattn_strides *sv, real *out,
                           const linattn_strides *so, real *den)
{
    return causal ? MP(batched_causal_forward)(p, WORLD, ROW, 1, H, nq, q, sq, k, sk, v,
                                               sv, out, so, den, NULL)
                  : MP(batched_attention_forward)(p, WORLD, ROW, 1, H, nq, nk, q, sq, k,
                                                  sk, v, sv, out, so, den, NULL);
}

/* Batched: two heads, each head's tokens contiguous ([h][t][c], row
 * major), this rank's rows of each, non-causal, causal and causal with a
 * decayed plan; the distributed batched forward's
 * normalizers against the serial batched forward's, and the backward
 * against the serial batched backward of the whole, dW and db summed
 * over the heads. */
static void batched_equals_serial(void)
{
    enum { H = 2 };
    for (int ci = 1; ci < CASES; ci += 2)
        for (int split = 0; split < SPLITS; split++)
            for (int kind = 0; kind < 3; kind++) {
                /* 0 non-causal, 1 causal, 2 causal with a decayed plan */
                int causal = kind > 0;
                const gcase *c = &cases[ci];
                int trained = c->map == LINATTN_MAP_CUSTOM;
                uint64_t seed = 900 + (uint64_t)(ci * 16 + split * 2 + causal);
                P(plan) *p = plan_of_decay(c, 31 + (uint64_t)ci, kind == 2 ? -0.1 : 0);
                int64_t nq = NT, nk = causal ? NT : NK, qo, qc, ko, kc;
                block_of(nq, split, &qo, &qc);
                if (causal)
                    ko = qo, kc = qc;
                else
                    block_of(nk, (split + 2) % SPLITS, &ko, &kc);
                tmat q = tmat_rand(ROW, H * nq, D, 0, c->lo, c->hi, &seed);
                tmat k = tmat_rand(ROW, H * nk, D, 0, c->lo, c->hi, &seed);
                tmat v = tmat_rand(ROW, H * nk, E, 0, -1, 1, &seed);
                tmat g = tmat_rand(ROW, H * nq, E, 0, -1, 1, &seed);
                tmat out = tmat_like(&q, H * nq, E, 0), lout = tmat_like(&q, H * nq, E, 0);
                grads ref = grads_new(&q, H * nq, H * nk), mine = grads_new(&q, H * nq, H * nk);
                real den[H * NT], lden[H * NT];
                linattn_strides sq = {D, 0, nq * D}, sk = {D, 0, nk * D};
                linattn_strides sqe = {E, 0, nq * E}, ske = {E, 0, nk * E};
                /* the gradients' matrices are padded (grads_new) */
                linattn_strides gq = {ref.dq.ld, 0, nq * ref.dq.ld};
                linattn_strides gk = {ref.dk.ld, 0, nk * ref.dk.ld};
                linattn_strides gv = {ref.dv.ld, 0, nk * ref.dv.ld};
                linattn_where bad = {-5, -5, -5};
                int sts = causal
                    ? P(batched_causal_forward)(p, ROW, 1, H, nq, q.a, &sq, k.a, &sk, v.a, &ske,
                                                out.a, &sqe, den, NULL)
                    : P(batched_attention_forward)(p, ROW, 1, H, nq, nk, q.a, &sq, k.a, &sk, v.a,
                                                   &ske, out.a, &sqe, den, NULL);
                if (!sts)
                    sts = causal
                        ? P(batched_causal_backward)(p, ROW, 1, H, nq, q.a, &sq, k.a, &sk, v.a,
                                                     &ske, out.a, &sqe, den, g.a, &sqe, ref.dq.a,
                                                     &gq, ref.dk.a, &gk, ref.dv.a, &gv,
                                                     trained ? ref.dw : NULL, D,
                                                     trained ? ref.db : NULL, NULL)
                        : P(batched_attention_backward)(p, ROW, 1, H, nq, nk, q.a, &sq, k.a, &sk,
                                                        v.a, &ske, out.a, &sqe, den, g.a, &sqe,
                                                        ref.dq.a, &gq, ref.dk.a, &gk, ref.dv.a,
                                                        &gv, trained ? ref.dw : NULL, D,
                                                        trained ? ref.db : NULL, NULL);
                /* the distributed batched forward with normalizers */
                const real *lq = row_of(&q, qo), *lk = row_of(&k, ko), *lv = row_of(&v, ko);
                int st = batched_forward(p, causal, H, qc, kc, lq, &sq, lk, &sk, lv, &ske,
                                         row_of(&lout, qo), &sqe, lden);
                double derr = 0;
                for (int h = 0; h < H; h++)
                    derr = fmax(derr, vec_rel_diff(lden + h * qc, den + h * nq + qo, qc));
                MT_CHECK(st == 0 && derr < TOL, "batched forward: status %d, den %g", st, derr);
                /* den NULL (the ranks with rows refuse it): every rank */
                int sn = batched_forward(p, causal, H, qc, kc, lq, &sq, lk, &sk, lv, &ske,
                                         row_of(&lout, qo), &sqe, NULL);
                MT_CHECK(sn == (causal ? -15 : -16), "batched forward, den NULL: %d", sn);
                const real *lg = row_of(&g, qo), *lo = row_of(&lout, qo);
                if (!st)
                    st = causal
                        ? MP(batched_causal_backward)(
                              p, WORLD, ROW, 1, H, qc, lq, &sq, lk, &sk, lv, &ske, lo, &sqe,
                              lden, lg, &sqe, row_of(&mine.dq, qo), &gq, row_of(&mine.dk, ko),
                              &gk, row_of(&mine.dv, ko), &gv, trained ? mine.dw : NULL, D,
                              trained ? mine.db : NULL, &bad)
                        : MP(batched_attention_backward)(
                              p, WORLD, ROW, 1, H, qc, kc, lq, &sq, lk, &sk, lv, &ske, lo,
                              &sqe, lden, lg, &sqe, row_of(&mine.dq, qo), &gq,
                              row_of(&mine.dk, ko), &gk, row_of(&mine.dv, ko), &gv,
                              trained ? mine.dw : NULL, D, trained ? mine.db : NULL, &bad);
                double err = 0;
                for (int h = 0; h < H; h++) {
                    tmat a = view(&mine.dq, h * nq + qo, qc), b = view(&ref.dq, h * nq + qo, qc);
                    err = fmax(err, rel_diff(&a, &b));
                    a = view(&mine.dk, h * nk + ko, kc), b = view(&ref.dk, h * nk + ko, kc);
                    err = fmax(err, rel_diff(&a, &b));
                    a = view(&mine.dv, h * nk + ko, kc), b = view(&ref.dv, h * nk + ko, kc);
                    err = fmax(err, rel_diff(&a, &b));
                }
                double ew = trained ? fmax(vec_rel_diff(mine.dw, ref.dw, 4 * D),
                                           vec_rel_diff(mine.db, ref.db, 4))
                                    : 0;
                MT_CHECK(sts == 0 && st == 0 && err < TOL && ew < TOL,
                         "batched map %d split %d kind %d: status %d/%d, "
                         "gradients %g, dW db %g", c->map, split, kind, sts, st, err, ew);
                MT_CHECK(bad.row == -5, "bad written on success");
                grads_free(&ref), grads_free(&mine);
                tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
                tmat_free(&out), tmat_free(&lout);
                P(plan_destroy)(p);
            }
}

/* The collective refusals: each returns the same status on every rank
 * and writes nothing anywhere. */
static void refusals_agreed(void)
{
    const gcase *c = &cases[3];
    P(plan) *p = plan_of(c, 14), *other = plan_of(c, 15);
    uint64_t seed = 9;
    int layout = ROW;
    tmat q = tmat_rand(layout, NT, D, 1, -1, 1, &seed);
    tmat k = tmat_rand(layout, NT, D, 2, -1, 1, &seed);
    tmat v = tmat_rand(layout, NT, E, 0, -1, 1, &seed);
    tmat g = tmat_rand(layout, NT, E, 1, -1, 1, &seed);
    tmat out = tmat_like(&q, NT, E, 1);
    real den[NT];
    int64_t o, n, bad = -5;
    block_of(NT, SKEWED, &o, &n);
    P(extras) ex;
    P(extras_init)(&ex);
    ex.den = den + o;
    int st = MP(causal_ex)(p, WORLD, layout, n, row_of(&q, o), q.ld,
                           row_of(&k, o), k.ld, row_of(&v, o), v.ld,
                           row_of(&out, o), out.ld, &ex, NULL);
    MT_CHECK(st == 0, "forward %d", st);
    grads r = grads_new(&q, NT, NT);
    int last = mt_size - 1;
    for (int t = 0; t < 8; t++) {
        const P(plan) *pl = p;
        int64_t ldq = q.ld, bad_rank_row = -1;
        real *dw = r.dw;
        real keep = 0;
        int expect = 0;
        switch (t) {
        case 0: /* the last rank's ldq */
            if (mt_rank == last)
                ldq = 0;
            expect = -6;
            break;
        case 1: /* plans that differ */
            if (mt_rank == 0)
                pl = other;
            expect = mt_size > 1 ? LINATTN_EMISMATCH : 0;
            break;
        case 2: /* dW on some ranks only */
            if (mt_rank == last)
                dw = NULL;
            expect = mt_size > 1 ? LINATTN_EMISMATCH : 0;
            break;
        case 3: /* ranks in different calls: the non-causal backward on rank 0 */
            expect = mt_size > 1 ? LINATTN_EMISMATCH : 0;
            break;
        case 4: /* the forward on rank 0 */
            expect = mt_size > 1 ? LINATTN_EMISMATCH : 0;
            break;
        case 5: /* a normalizer 0 in the last rank's first row */
            if (mt_rank == last && n > 0)
                keep = den[o], den[o] = 0;
            bad_rank_row = mt_rank == last ? o : 0; /* its first row */
            MPI_Bcast(&bad_rank_row, 1, MPI_INT64_T, last, WORLD);
            expect = LINATTN_EDENOM;
            break;
        case 6: /* the communicator NULL on every rank */
            expect = -2;
            break;
        default: /* offsets of no sequence, not ending at every rank's rows */
            expect = -25;
            break;
        }
        P(extras) bx;
        P(extras_init)(&bx);
        const int64_t off[2] = {0, 0};
        if (t == 7)
            bx.offsets = off, bx.nseq = 0;
        bad = -5;
        if ((t == 3 || t == 4) && mt_rank == 0 && mt_size > 1) {
            if (t == 3)
                st = MP(attention_backward)(
                    pl, WORLD, layout, n, n, row_of(&q, o), ldq, row_of(&k, o),
                    k.ld, row_of(&v, o), v.ld, row_of(&out, o), out.ld,
                    den + o, row_of(&g, o), g.ld, row_of(&r.dq, o), r.dq.ld,
                    row_of(&r.dk, o), r.dk.ld, row_of(&r.dv, o), r.dv.ld, dw, D,
                    r.db, NULL, &bad);
            else
                st = MP(causal)(pl, WORLD, layout, n, row_of(&q, o), ldq,
                                row_of(&k, o), k.ld, row_of(&v, o), v.ld,
                                row_of(&out, o), out.ld, &bad);
        } else {
            st = MP(causal_backward_ex)(
                pl, t == 6 ? MPI_COMM_NULL : WORLD, layout, n, row_of(&q, o),
                ldq, row_of(&k, o), k.ld, row_of(&v, o), v.ld, row_of(&out, o),
                out.ld, den + o, row_of(&g, o), g.ld, row_of(&r.dq, o),
                r.dq.ld, row_of(&r.dk, o), r.dk.ld, row_of(&r.dv, o), r.dv.ld,
                dw, D, r.db, t == 7 ? &bx : NULL, &bad);
        }
        if (t == 5 && mt_rank == last && n > 0)
            den[o] = keep;
        if (t == 5 && bad_rank_row == NT)
            bad_rank_row = -2; /* the last rank without rows: not checked */
        MT_CHECK(st == expect, "case %d: status %d, expected %d", t, st, expect);
        if (t == 5 && bad_rank_row >= 0)
            MT_CHECK(bad == bad_rank_row, "case 5: bad_row %lld, expected %lld",
                     (long long)bad, (long long)bad_rank_row);
        MT_CHECK(expect == 0 ||
                     (all_equal(&r.dq, SENTINEL) && all_equal(&r.dk, SENTINEL) &&
                      all_equal(&r.dv, SENTINEL) && r.dw[0] == SENTINEL &&
                      r.db[0] == SENTINEL),
                 "case %d: something written", t);
        fill(&r.dq, SENTINEL), fill(&r.dk, SENTINEL), fill(&r.dv, SENTINEL);
        r.dw[0] = r.db[0] = SENTINEL;
        MPI_Barrier(WORLD);
    }
    /* a handed state of other keys (its count): -26 on every rank */
    P(state) *gs = NULL;
    P(state_create)(&gs, p);
    P(state_update)(gs, layout, 3, k.a, k.ld, v.a, v.ld);
    st = MP(attention_backward)(
        p, WORLD, layout, n, n, row_of(&q, o), q.ld, row_of(&k, o), k.ld,
        row_of(&v, o), v.ld, row_of(&out, o), out.ld, den + o, row_of(&g, o),
        g.ld, row_of(&r.dq, o), r.dq.ld, row_of(&r.dk, o), r.dk.ld,
        row_of(&r.dv, o), r.dv.ld, r.dw, D, r.db, gs, &bad);
    MT_CHECK(st == -26, "a handed state of other keys: %d", st);
    MT_CHECK(all_equal(&r.dq, SENTINEL) && r.dw[0] == SENTINEL,
             "a handed state of other keys: something written");
    P(state_destroy)(gs);
    grads_free(&r);
    tmat_free(&q), tmat_free(&k), tmat_free(&v), tmat_free(&g);
    tmat_free(&out);
    P(plan_destroy)(p), P(plan_destroy)(other);
}

int main(int argc, char **argv)
{
    mt_init(&argc, &argv, LINATTN_MPI_THREAD_LEVEL);
    MT_RUN(grad_equals_serial);
    MT_RUN(batched_equals_serial);
    MT_RUN(refusals_agreed);
    int status = mt_finish("mpi grad " PREC);
    MPI_Finalize();
    return status;
}
