/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_checkpoint.c -- checkpoint/restart of states, compiled once per
 * precision.
 *
 * The format is checked against an independent writer written from
 * doc/checkpoint-format.md (craft() below, with its own byte order and a
 * bit-by-bit CRC-32), and against literal bytes of the worked example.
 * Restores are checked bit for bit (state_get, a second save, queries),
 * a restart in the middle of a stream against the uninterrupted stream,
 * and every refusal against a snapshot of the target taken before.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crc32_ref.h"
#include "fileutil.h"
#include "testutil.h"
#ifdef _OPENMP
#include <omp.h>
#endif

#define ROW LINATTN_ROW_MAJOR
#ifdef TEST_SINGLE
#define PREC_CODE 's'
#define OTHER(name) linattn_d_##name /* the other precision */
#else
#define PREC_CODE 'd'
#define OTHER(name) linattn_s_##name
#endif

/* ---- an independent reader and writer of the documented format ---- */

static void le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++, v >>= 8)
        p[i] = (unsigned char)(v & 0xff);
}

static uint64_t rd(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, 8);
    return b;
}

/* Every header field of the doc's table, free to be inconsistent. */
typedef struct {
    uint32_t version;
    unsigned char precision, accumulator;
    uint16_t reserved1;
    uint32_t map, reserved2;
    int64_t d, m, e;
    uint64_t fingerprint;
    int64_t tokens;
    double shift;
    uint64_t payload_bytes;
    double mass; /* version 2: after the payload */
} fields;

/* The header fields of a real checkpoint, read by the doc's offsets. */
static fields read_fields(const unsigned char *b)
{
    fields f;
    f.version = (uint32_t)rd(b + 8, 4);
    f.precision = b[12];
    f.accumulator = b[13];
    f.reserved1 = (uint16_t)rd(b + 14, 2);
    f.map = (uint32_t)rd(b + 16, 4);
    f.reserved2 = (uint32_t)rd(b + 20, 4);
    f.d = (int64_t)rd(b + 24, 8);
    f.m = (int64_t)rd(b + 32, 8);
    f.e = (int64_t)rd(b + 40, 8);
    f.fingerprint = rd(b + 48, 8);
    f.tokens = (int64_t)rd(b + 56, 8);
    uint64_t s = rd(b + 64, 8);
    memcpy(&f.shift, &s, 8);
    f.payload_bytes = rd(b + 72, 8);
    f.mass = (double)f.tokens;
    return f;
}

/* Writes header f, count payload doubles and the CRC to out (room for
 * 84 + 8 count bytes); returns the byte count. */
static int64_t craft(unsigned char *out, const fields *f, const double *payload,
                     int64_t count)
{
    static const unsigned char magic[8] = {0x89, 'L', 'A', 'C', 'K', 'P', 'T', '\n'};
    memcpy(out, magic, 8);
    le(out + 8, f->version, 4);
    out[12] = f->precision;
    out[13] = f->accumulator;
    le(out + 14, f->reserved1, 2);
    le(out + 16, f->map, 4);
    le(out + 20, f->reserved2, 4);
    le(out + 24, (uint64_t)f->d, 8);
    le(out + 32, (uint64_t)f->m, 8);
    le(out + 40, (uint64_t)f->e, 8);
    le(out + 48, f->fingerprint, 8);
    le(out + 56, (uint64_t)f->tokens, 8);
    le(out + 64, bits_of(f->shift), 8);
    le(out + 72, f->payload_bytes, 8);
    for (int64_t i = 0; i < count; i++)
        le(out + 80 + 8 * i, bits_of(payload[i]), 8);
    size_t body = (size_t)(80 + 8 * count);
    if (f->version == 2) { /* the keys' weight after the payload */
        le(out + body, bits_of(f->mass), 8);
        body += 8;
    }
    le(out + body, crc32_ref(out, body), 4);
    return (int64_t)body + 4;
}

/* ---- states and snapshots ---- */

static P(plan) *plan_of(int map, int64_t d, int64_t e)
{
    linattn_opts o;
    linattn_opts_init(&o);
    o.block = 8; /* several blocks per update */
    P(plan) *p = NULL;
    ck_assert_int_eq(P(plan_create)(&p, map, d, e, &o), 0);
    return p;
}

/* Keys and queries in [0.05, 1) keep every map's normalizer positive. */
static void absorb(P(state) *st, int64_t d, int64_t e, int64_t n, uint64_t seed)
{
    tmat k = tmat_rand(ROW, n, d, 0, 0.05, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    ck_assert_int_eq(P(state_update)(st, ROW, n, k.a, d, v.a, e), 0);
    tmat_free(&k), tmat_free(&v);
}

static P(state) *state_of(const P(plan) *p, int64_t n, uint64_t seed)
{
    int64_t d, e;
    P(plan_dims)(p, &d, NULL, &e);
    P(state) *st = NULL;
    ck_assert_int_eq(P(state_create)(&st, p), 0);
    if (n > 0)
        absorb(st, d, e, n, seed);
    return st;
}

typedef struct {
    unsigned char *bytes;
    int64_t len, tokens;
    real *s, *z;
    int64_t count_s, count_z;
} snapshot;

/* Everything observable about a state: its checkpoint bytes (acc, tokens,
 * shift) and the working-precision S, z that queries read. */
static snapshot snap(const P(state) *st)
{
    snapshot a;
    int64_t m, e;
    ck_assert_int_eq(P(state_save_size)(st, &a.len), 0);
    a.bytes = malloc((size_t)a.len);
    ck_assert_int_eq(P(state_save)(st, a.bytes, a.len, NULL), 0);
    fields f = read_fields(a.bytes);
    m = f.m, e = f.e;
    a.count_s = m * e, a.count_z = m;
    a.s = malloc((size_t)(m * e) * sizeof(real));
    a.z = malloc((size_t)m * sizeof(real));
    ck_assert_int_eq(P(state_get)(st, ROW, a.s, e, a.z, &a.tokens), 0);
    return a;
}

static int same_snap(const snapshot *a, const snapshot *b)
{
    return a->len == b->len && !memcmp(a->bytes, b->bytes, (size_t)a->len) &&
           a->tokens == b->tokens && a->count_s == b->count_s &&
           !memcmp(a->s, b->s, (size_t)a->count_s * sizeof(real)) &&
           !memcmp(a->z, b->z, (size_t)a->count_z * sizeof(real));
}

static void snap_free(snapshot *a)
{
    free(a->bytes), free(a->s), free(a->z);
}

/* Loads len bytes of buf from an exactly sized heap copy (so that
 * AddressSanitizer sees any read past the end). */
static int load_exact(P(state) *st, const unsigned char *buf, int64_t len)
{
    unsigned char *copy = malloc(len > 0 ? (size_t)len : 1);
    if (len > 0)
        memcpy(copy, buf, (size_t)len);
    int status = P(state_load)(st, copy, len);
    free(copy);
    return status;
}

/* ---- files ---- */

/* Number of entries of dir other than . and ..; *only receives the name
 * of the last one seen. */
static int entries(const char *dir, char *only, size_t cap)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        n++;
        if (only)
            snprintf(only, cap, "%s", de->d_name);
    }
    closedir(d);
    return n;
}

static int64_t file_bytes(const char *path, unsigned char *buf, int64_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    int64_t n = (int64_t)fread(buf, 1, (size_t)cap, f);
    fclose(f);
    return n;
}

static void write_bytes(const char *path, const unsigned char *buf, int64_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq((int64_t)fwrite(buf, 1, (size_t)len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* ---- the format ---- */

/* The worked example's state (identity, d = 2, e = 1: S = (9, 10),
 * z = (2, 5), 4 tokens) saves to exactly the bytes the doc describes. */
START_TEST(format_matches_the_document)
{
    const real k[8] = {2, 1, -1, 2, 1, -1, 0, 3}, v[4] = {3, -2, 1, 4};
    P(plan) *p = plan_of(LINATTN_MAP_IDENTITY, 2, 1);
    P(state) *st = state_of(p, 0, 0);
    ck_assert_int_eq(P(state_update)(st, ROW, 4, k, 2, v, 1), 0);
    int64_t size = -1, written = -1;
    ck_assert_int_eq(P(state_save_size)(st, &size), 0);
    ck_assert_int_eq(size, 84 + 8 * 2 * 2);
    unsigned char got[116], want[116];
    ck_assert_int_eq(P(state_save)(st, got, size, &written), 0);
    ck_assert_int_eq(written, 116);
    /* literal bytes: magic, version 1, precision, accumulator, map 1 */
    static const unsigned char head[20] = {0x89, 'L', 'A', 'C', 'K', 'P', 'T', '\n',
                                           1, 0, 0, 0, PREC_CODE, 'd', 0, 0,
                                           1, 0, 0, 0};
    ck_assert(!memcmp(got, head, 20));
    /* S(0,0) = 9 = 0x4022000000000000 first, little-endian */
    static const unsigned char nine[8] = {0, 0, 0, 0, 0, 0, 0x22, 0x40};
    ck_assert(!memcmp(got + 80, nine, 8));
    /* the whole file from the doc's table (the fingerprint is opaque) */
    fields f = {1, PREC_CODE, 'd', 0, LINATTN_MAP_IDENTITY, 0, 2, 2, 1,
                rd(got + 48, 8), 4, 0.0, 32, 4};
    const double payload[4] = {9, 2, 10, 5}; /* [S | z] row by row */
    ck_assert_int_eq(craft(want, &f, payload, 4), 116);
    ck_assert(!memcmp(got, want, 116));
    /* the test's CRC is the standard one */
    ck_assert_uint_eq(crc32_ref((const unsigned char *)"123456789", 9), 0xCBF43926u);
    /* plans of one map and size share a fingerprint; other maps differ */
    P(plan) *same = plan_of(LINATTN_MAP_IDENTITY, 2, 1);
    P(plan) *elu = plan_of(LINATTN_MAP_ELU1, 2, 1);
    P(state) *a = state_of(same, 0, 0), *b = state_of(elu, 0, 0);
    snapshot sa = snap(a), sb = snap(b);
    ck_assert(rd(sa.bytes + 48, 8) == rd(got + 48, 8));
    ck_assert(rd(sb.bytes + 48, 8) != rd(got + 48, 8));
    snap_free(&sa), snap_free(&sb);
    P(state_destroy)(a), P(state_destroy)(b), P(state_destroy)(st);
    P(plan_destroy)(same), P(plan_destroy)(elu), P(plan_destroy)(p);
}
END_TEST

/* Larger states: the CRC over every byte value, the payload in [S | z]
 * row-major order against state_get. */
START_TEST(payload_order_and_crc)
{
    P(plan) *p = plan_of(LINATTN_MAP_ELU1, 5, 7);
    P(state) *st = state_of(p, 37, 5);
    snapshot a = snap(st);
    ck_assert_int_eq(a.len, 84 + 8 * 5 * 8);
    fields f = read_fields(a.bytes);
    ck_assert(f.d == 5 && f.m == 5 && f.e == 7 && f.tokens == 37 &&
              f.payload_bytes == 8 * 5 * 8 && f.shift == 0);
    ck_assert_uint_eq(rd(a.bytes + a.len - 4, 4), crc32_ref(a.bytes, (size_t)a.len - 4));
    for (int64_t i = 0; i < 5; i++) {
        for (int64_t j = 0; j <= 7; j++) {
            uint64_t b = rd(a.bytes + 80 + 8 * (i * 8 + j), 8);
            double x;
            memcpy(&x, &b, 8);
            real want = j < 7 ? a.s[i * 7 + j] : a.z[i];
            ck_assert((real)x == want); /* float: sz is acc rounded */
        }
    }
    snap_free(&a);
    P(state_destroy)(st);
    P(plan_destroy)(p);
}
END_TEST

/* ---- round trips ---- */

/* save, load into a fresh state of a fresh plan (a new process): every
 * observable is bit-identical, in memory and through a file. */
START_TEST(round_trip_is_bit_exact)
{
    static const struct {
        int map;
        int64_t d, e, n;
    } cases[] = {{LINATTN_MAP_IDENTITY, 2, 1, 4}, {LINATTN_MAP_ELU1, 5, 3, 37},
                 {LINATTN_MAP_RELU, 3, 6, 1},     {LINATTN_MAP_ELU1, 1, 1, 0},
                 {LINATTN_MAP_RELU, 8, 2, 100}};
    char *dir = temp_dir(), *path = in_dir(dir, "ck");
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int via_file = 0; via_file < 2; via_file++) {
            P(plan) *p = plan_of(cases[c].map, cases[c].d, cases[c].e);
            P(state) *st = state_of(p, cases[c].n, 100 + c);
            snapshot a = snap(st);
            /* a buffer larger than needed: only the checkpoint is written */
            unsigned char *buf = malloc((size_t)a.len + 16);
            memset(buf, 0xA5, (size_t)a.len + 16);
            int64_t written = -1;
            ck_assert_int_eq(P(state_save)(st, buf, a.len + 16, &written), 0);
            ck_assert_int_eq(written, a.len);
            for (int i = 0; i < 16; i++)
                ck_assert_uint_eq(buf[a.len + i], 0xA5);
            if (via_file) {
                ck_assert_int_eq(P(state_save_file)(st, path), 0);
                ck_assert_int_eq(file_bytes(path, buf, a.len + 16), a.len);
                ck_assert(!memcmp(buf, a.bytes, (size_t)a.len));
            }
            P(state_destroy)(st);
            P(plan_destroy)(p);
            /* restart: a new plan, a new state that held something else */
            p = plan_of(cases[c].map, cases[c].d, cases[c].e);
            st = state_of(p, 3, 999);
            int status = via_file ? P(state_load_file)(st, path)
                                  : P(state_load)(st, buf, a.len);
            ck_assert_int_eq(status, 0);
            snapshot b = snap(st);
            ck_assert(same_snap(&a, &b));
            snap_free(&a), snap_free(&b);
            free(buf);
            P(state_destroy)(st);
            P(plan_destroy)(p);
        }
    }
    remove_tree(dir);
    free(dir), free(path);
}
END_TEST

/* A stream cut at p: checkpoint, a fresh process (plan and state) loads
 * it and absorbs the rest.  Its queries equal the uninterrupted stream's
 * bit for bit (made of the same update calls), and the reference. */
START_TEST(restart_continues_the_stream)
{
    const int maps[3] = {LINATTN_MAP_IDENTITY, LINATTN_MAP_ELU1, LINATTN_MAP_RELU};
    const int64_t n = 41, d = 4, e = 3, nq = 5, cuts[4] = {0, 1, 17, 41};
    char *dir = temp_dir(), *path = in_dir(dir, "stream.ck");
    uint64_t seed = 77;
    tmat k = tmat_rand(ROW, n, d, 0, 0.05, 1, &seed);
    tmat v = tmat_rand(ROW, n, e, 0, -1, 1, &seed);
    tmat q = tmat_rand(ROW, nq, d, 0, 0.05, 1, &seed);
    tmat want = tmat_like(&q, nq, e, 0), got = tmat_like(&q, nq, e, 0);
    real den_want[5], den_got[5];
    long double *ref = malloc((size_t)(nq * e) * sizeof *ref);
    for (int mi = 0; mi < 3; mi++) {
        for (int ci = 0; ci < 4; ci++) {
            int64_t p = cuts[ci];
            int via_file = ci % 2;
            /* uninterrupted: the same two update calls */
            P(plan) *plan = plan_of(maps[mi], d, e);
            P(state) *a = state_of(plan, 0, 0);
            ck_assert_int_eq(P(state_update)(a, ROW, p, k.a, d, v.a, e), 0);
            ck_assert_int_eq(P(state_update)(a, ROW, n - p, k.a + p * d, d,
                                             v.a + p * e, e), 0);
            ck_assert_int_eq(P(state_query)(a, ROW, nq, q.a, d, want.a, e, NULL,
                                            0, den_want, NULL), 0);
            /* interrupted after p tokens */
            P(state) *b = state_of(plan, 0, 0);
            ck_assert_int_eq(P(state_update)(b, ROW, p, k.a, d, v.a, e), 0);
            int64_t len;
            P(state_save_size)(b, &len);
            unsigned char *buf = malloc((size_t)len);
            if (via_file)
                ck_assert_int_eq(P(state_save_file)(b, path), 0);
            else
                ck_assert_int_eq(P(state_save)(b, buf, len, NULL), 0);
            P(state_destroy)(b);
            P(plan) *plan2 = plan_of(maps[mi], d, e);
            P(state) *c = state_of(plan2, 0, 0);
            ck_assert_int_eq(via_file ? P(state_load_file)(c, path)
                                      : P(state_load)(c, buf, len), 0);
            ck_assert_int_eq(P(state_update)(c, ROW, n - p, k.a + p * d, d,
                                             v.a + p * e, e), 0);
            ck_assert_int_eq(P(state_query)(c, ROW, nq, q.a, d, got.a, e, NULL,
                                            0, den_got, NULL), 0);
            ck_assert(!memcmp(got.a, want.a, (size_t)(nq * e) * sizeof(real)));
            ck_assert(!memcmp(den_got, den_want, sizeof den_got));
            snapshot sa = snap(a), sc = snap(c);
            ck_assert(same_snap(&sa, &sc));
            ck_assert_int_eq(sc.tokens, n);
            snap_free(&sa), snap_free(&sc);
            ref_linear(maps[mi], &q, &k, &v, ref);
            ck_assert(rel_err(&got, ref) < 10 * TOL);
            free(buf);
            P(state_destroy)(a), P(state_destroy)(c);
            P(plan_destroy)(plan), P(plan_destroy)(plan2);
        }
    }
    free(ref);
    tmat_free(&k), tmat_free(&v), tmat_free(&q), tmat_free(&want), tmat_free(&got);
    remove_tree(dir);
    free(dir), free(path);
}
END_TEST

/* ---- refusals: the target is untouched ---- */

/* A target with content of its own, and the checkpoint of another state
 * of the same plan (identity, d = 2, e = 1: 116 bytes). */
typedef struct {
    P(plan) *plan;
    P(state) *target, *source;
    snapshot before, saved;
} fixture;

static fixture fixture_make(int map, int64_t d, int64_t e)
{
    fixture fx;
    fx.plan = plan_of(map, d, e);
    fx.target = state_of(fx.plan, 9, 1);
    fx.source = state_of(fx.plan, 6, 2);
    fx.before = snap(fx.target);
    fx.saved = snap(fx.source);
    return fx;
}

static int fixture_untouched(const fixture *fx)
{
    snapshot now = snap(fx->target);
    int same = same_snap(&now, &fx->before);
    snap_free(&now);
    return same;
}

static void fixture_free(fixture *fx)
{
    snap_free(&fx->before), snap_free(&fx->saved);
    P(state_destroy)(fx->target), P(state_destroy)(fx->source);
    P(plan_destroy)(fx->plan);
}

START_TEST(every_truncation_is_refused)
{
    fixture fx = fixture_make(LINATTN_MAP_ELU1, 3, 2);
    int64_t len = fx.saved.len;
    ck_assert_int_eq(len, 84 + 8 * 3 * 3);
    for (int64_t l = 0; l < len; l++) {
        ck_assert_int_eq(load_exact(fx.target, fx.saved.bytes, l), LINATTN_EFORMAT);
        ck_assert(fixture_untouched(&fx));
    }
    /* one byte too many */
    unsigned char *longer = calloc((size_t)len + 1, 1);
    memcpy(longer, fx.saved.bytes, (size_t)len);
    ck_assert_int_eq(load_exact(fx.target, longer, len + 1), LINATTN_EFORMAT);
    ck_assert(fixture_untouched(&fx));
    /* four more, that are the CRC of all before them: a loader that read
     * the CRC at the end of the buffer would take them */
    unsigned char *sealed = malloc((size_t)len + 4);
    memcpy(sealed, fx.saved.bytes, (size_t)len);
    le(sealed + len, crc32_ref(sealed, (size_t)len), 4);
    ck_assert_int_eq(load_exact(fx.target, sealed, len + 4), LINATTN_EFORMAT);
    ck_assert(fixture_untouched(&fx));
    free(sealed);
    /* the file loader gives the same answers */
    char *dir = temp_dir(), *path = in_dir(dir, "cut");
    const int64_t cuts[] = {0, 1, 7, 8, 11, 12, 79, 80, 81, len - 1, len + 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        write_bytes(path, longer, cuts[i]);
        ck_assert_int_eq(P(state_load_file)(fx.target, path), LINATTN_EFORMAT);
        ck_assert(fixture_untouched(&fx));
    }
    write_bytes(path, longer, len);
    ck_assert_int_eq(P(state_load_file)(fx.target, path), 0);
    free(longer);
    remove_tree(dir);
    free(dir), free(path);
    fixture_free(&fx);
}
END_TEST

/* Every value of every byte but the right one: the magic's bytes give
 * EFORMAT, the version's EVERSION (the file then claims a version this
 * library does not read; version 2, which it reads, claims 8 more bytes
 * than there are: EFORMAT), and any other byte EFORMAT through the CRC,
 * which detects every error confined to 32 consecutive bits. */
START_TEST(every_changed_byte_is_refused)
{
    fixture fx = fixture_make(LINATTN_MAP_IDENTITY, 2, 1);
    int64_t len = fx.saved.len;
    ck_assert_int_eq(len, 116);
    unsigned char *b = malloc((size_t)len);
    for (int64_t i = 0; i < len; i++) {
        for (int delta = 1; delta < 256; delta++) {
            memcpy(b, fx.saved.bytes, (size_t)len);
            b[i] ^= (unsigned char)delta;
            /* a version byte turned into version 2 claims 8 more bytes */
            int v2 = i == 8 && (fx.saved.bytes[8] ^ delta) == 2;
            int want = i >= 8 && i < 12 && !v2 ? LINATTN_EVERSION
                                               : LINATTN_EFORMAT;
            int got = P(state_load)(fx.target, b, len);
            if (got != want)
                ck_abort_msg("byte %d xor %d: status %d, want %d", (int)i,
                             delta, got, want);
        }
        ck_assert(fixture_untouched(&fx));
    }
    /* the unchanged bytes load */
    ck_assert_int_eq(P(state_load)(fx.target, fx.saved.bytes, len), 0);
    free(b);
    fixture_free(&fx);
}
END_TEST

/* The fields of fx's saved checkpoint, to be changed and re-crafted with
 * a correct CRC. */
static fields base_fields(const fixture *fx, double *payload, int64_t *count)
{
    fields f = read_fields(fx->saved.bytes);
    *count = (int64_t)(f.payload_bytes / 8);
    for (int64_t i = 0; i < *count; i++) {
        uint64_t b = rd(fx->saved.bytes + 80 + 8 * i, 8);
        memcpy(&payload[i], &b, 8);
    }
    return f;
}

/* Loads the crafted f (count payload entries) into fx's target and checks
 * the status, and that a refusal left the target alone. */
static void expect_crafted(fixture *fx, const fields *f, const double *payload,
                           int64_t count, int want, const char *what)
{
    unsigned char *b = malloc((size_t)(92 + 8 * count));
    int64_t len = craft(b, f, payload, count);
    int got = load_exact(fx->target, b, len);
    free(b);
    if (got != want)
        ck_abort_msg("%s: status %d, want %d", what, got, want);
    if (want) {
        ck_assert_msg(fixture_untouched(fx), "%s: target changed", what);
    } else { /* loaded: the reference for later refusals moves with it */
        snap_free(&fx->before);
        fx->before = snap(fx->target);
    }
}

START_TEST(wrong_version_is_refused)
{
    fixture fx = fixture_make(LINATTN_MAP_IDENTITY, 2, 1);
    double pay[4];
    int64_t count;
    fields f = base_fields(&fx, pay, &count);
    expect_crafted(&fx, &f, pay, count, 0, "the crafted original");
    const uint32_t versions[] = {0, 3, 256, 0xFFFFFFFFu};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        fields g = f;
        g.version = versions[i];
        expect_crafted(&fx, &g, pay, count, LINATTN_EVERSION, "version");
    }
    /* version 2 carries the keys' weight after the payload: a measure,
     * finite, >= 0, and 0 exactly when the state holds no key */
    ck_assert(f.tokens > 0);
    fields g = f;
    g.version = 2;
    const double bad_mass[4] = {NAN, -1, INFINITY, 0};
    for (int i = 0; i < 4; i++) {
        g.mass = bad_mass[i];
        expect_crafted(&fx, &g, pay, count, LINATTN_EFORMAT, "weight");
    }
    g.mass = 2.5;
    expect_crafted(&fx, &g, pay, count, 0, "version 2");
    fields none = g;
    none.tokens = 0;
    none.mass = 0;
    expect_crafted(&fx, &none, pay, count, 0, "version 2, no keys");
    none.mass = 1;
    expect_crafted(&fx, &none, pay, count, LINATTN_EFORMAT,
                   "a weight without keys");
    /* the version is read before the length: a future format may be laid
     * out otherwise, so even its first 12 bytes say so */
    unsigned char head[12];
    memcpy(head, fx.saved.bytes, 12);
    head[8] = 3;
    ck_assert_int_eq(load_exact(fx.target, head, 12), LINATTN_EVERSION);
    ck_assert(fixture_untouched(&fx));
    fixture_free(&fx);
}
END_TEST

/* Checkpoints whose CRC is right but whose fields contradict each other
 * or the format are LINATTN_EFORMAT; non-finite entries are not. */
START_TEST(inconsistent_fields_are_refused)
{
    fixture fx = fixture_make(LINATTN_MAP_IDENTITY, 2, 1);
    double pay[4];
    int64_t count;
    const fields f = base_fields(&fx, pay, &count);
    fields g;
#define EXPECT(change, status)                                               \
    do {                                                                     \
        g = f;                                                               \
        change;                                                              \
        expect_crafted(&fx, &g, pay, count, status, #change);                \
    } while (0)
    EXPECT(g.precision = 'x', LINATTN_EFORMAT);
    EXPECT(g.precision = 0, LINATTN_EFORMAT);
    EXPECT(g.accumulator = 's', LINATTN_EFORMAT);
    EXPECT(g.reserved1 = 1, LINATTN_EFORMAT);
    EXPECT(g.reserved2 = 0x80000000u, LINATTN_EFORMAT);
    EXPECT(g.d = 0, LINATTN_EFORMAT);
    EXPECT(g.d = -2, LINATTN_EFORMAT);
    EXPECT(g.m = 0, LINATTN_EFORMAT);
    EXPECT(g.e = 0, LINATTN_EFORMAT);
    EXPECT(g.e = INT64_MAX, LINATTN_EFORMAT);
    EXPECT((g.m = 1, g.e = 1), LINATTN_EFORMAT);     /* 8 m (e+1) = 16 != 32 */
    EXPECT((g.m = (int64_t)1 << 61, g.e = 3), LINATTN_EFORMAT); /* overflows */
    EXPECT(g.payload_bytes = 24, LINATTN_EFORMAT);   /* claims a shorter file */
    EXPECT(g.payload_bytes = UINT64_MAX, LINATTN_EFORMAT);
    EXPECT(g.payload_bytes = INT64_MAX - 84, LINATTN_EFORMAT);
    EXPECT(g.tokens = -1, LINATTN_EFORMAT);
    EXPECT(g.tokens = INT64_MIN, LINATTN_EFORMAT);
    EXPECT(g.shift = NAN, LINATTN_EFORMAT);
    EXPECT(g.shift = INFINITY, LINATTN_EFORMAT);
    EXPECT(g.shift = -INFINITY, LINATTN_EFORMAT);
    /* a right checkpoint but a wrong CRC */
    unsigned char b[116];
    craft(b, &f, pay, count);
    b[115] ^= 0x10;
    ck_assert_int_eq(load_exact(fx.target, b, 116), LINATTN_EFORMAT);
    ck_assert(fixture_untouched(&fx));
    /* Accepted: tokens and shift are the saved state's own business, and
     * NaN, Inf and -0 entries are restored bit for bit (a NaN with a
     * payload of its own included). */
    uint64_t nan_bits = 0x7ff8000000000123ull;
    double odd_nan;
    memcpy(&odd_nan, &nan_bits, 8);
    double special[4] = {odd_nan, INFINITY, -0.0, -INFINITY};
    g = f;
    g.tokens = INT64_MAX;
    g.shift = -3.5;
    expect_crafted(&fx, &g, special, 4, 0, "non-finite entries");
    snapshot now = snap(fx.target);
    craft(b, &g, special, 4);
    ck_assert(!memcmp(now.bytes, b, 116)); /* saved back as loaded */
    ck_assert(isnan(now.s[0]) && now.z[0] == INFINITY && now.s[1] == 0 &&
              signbit(now.s[1]) && now.z[1] == -INFINITY);
    ck_assert(now.tokens == INT64_MAX);
    snap_free(&now);
#undef EXPECT
    fixture_free(&fx);
}
END_TEST

/* Checkpoints of other plans: LINATTN_EMISMATCH, target untouched. */
START_TEST(other_plans_are_refused)
{
    fixture fx = fixture_make(LINATTN_MAP_ELU1, 2, 1);
    /* the other precision, same map and sizes (acc is double in both) */
    OTHER(plan) *op;
    OTHER(state) *os;
    ck_assert_int_eq(OTHER(plan_create)(&op, LINATTN_MAP_ELU1, 2, 1, NULL), 0);
    ck_assert_int_eq(OTHER(state_create)(&os, op), 0);
    unsigned char ob[116];
    ck_assert_int_eq(OTHER(state_save)(os, ob, 116, NULL), 0);
    ck_assert_int_eq(ob[12], PREC_CODE == 'd' ? 's' : 'd');
    ck_assert_int_eq(load_exact(fx.target, ob, 116), LINATTN_EMISMATCH);
    ck_assert(fixture_untouched(&fx));
    /* and ours into the other precision's state */
    ck_assert_int_eq(OTHER(state_load)(os, fx.saved.bytes, 116), LINATTN_EMISMATCH);
    OTHER(state_destroy)(os);
    OTHER(plan_destroy)(op);
    /* real plans of another map, d (and so m) or e */
    static const struct {
        int map;
        int64_t d, e;
    } others[] = {{LINATTN_MAP_RELU, 2, 1}, {LINATTN_MAP_IDENTITY, 2, 1},
                  {LINATTN_MAP_ELU1, 3, 1}, {LINATTN_MAP_ELU1, 1, 1},
                  {LINATTN_MAP_ELU1, 2, 2}, {LINATTN_MAP_ELU1, 1, 3}};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        P(plan) *p = plan_of(others[i].map, others[i].d, others[i].e);
        P(state) *st = state_of(p, 5, 3);
        snapshot s = snap(st);
        ck_assert_int_eq(load_exact(fx.target, s.bytes, s.len), LINATTN_EMISMATCH);
        ck_assert(fixture_untouched(&fx));
        snap_free(&s);
        P(state_destroy)(st);
        P(plan_destroy)(p);
    }
    /* crafted: each field alone (d without m, m without d, the map
     * parameters' fingerprint) */
    double pay[4];
    int64_t count;
    const fields f = base_fields(&fx, pay, &count);
    fields g = f;
    g.precision = PREC_CODE == 'd' ? 's' : 'd';
    expect_crafted(&fx, &g, pay, count, LINATTN_EMISMATCH, "precision");
    g = f;
    g.map = 99;
    expect_crafted(&fx, &g, pay, count, LINATTN_EMISMATCH, "map");
    g = f;
    g.d = 3;
    expect_crafted(&fx, &g, pay, count, LINATTN_EMISMATCH, "d");
    g = f;
    g.m = 1, g.e = 3; /* 8 m (e + 1) = 32 as before */
    expect_crafted(&fx, &g, pay, count, LINATTN_EMISMATCH, "m and e");
    g = f;
    g.m = 1, g.payload_bytes = 16;
    expect_crafted(&fx, &g, pay, 2, LINATTN_EMISMATCH, "m");
    g = f;
    g.fingerprint ^= 1;
    expect_crafted(&fx, &g, pay, count, LINATTN_EMISMATCH, "fingerprint");
    fixture_free(&fx);
}
END_TEST

/* ---- files ---- */

START_TEST(file_save_is_atomic_and_clean)
{
    char *dir = temp_dir(), *path = in_dir(dir, "ck");
    char name[256];
    P(plan) *p = plan_of(LINATTN_MAP_ELU1, 3, 4);
    P(state) *st = state_of(p, 20, 4), *other = state_of(p, 7, 5);
    snapshot a = snap(st), b = snap(other);
    unsigned char *buf = malloc((size_t)a.len + 1);
    /* success: the checkpoint and nothing else */
    ck_assert_int_eq(P(state_save_file)(st, path), 0);
    ck_assert_int_eq(entries(dir, name, sizeof name), 1);
    ck_assert_str_eq(name, "ck");
    ck_assert_int_eq(file_bytes(path, buf, a.len + 1), a.len);
    ck_assert(!memcmp(buf, a.bytes, (size_t)a.len));
    /* replacing it: still one file, the new contents */
    ck_assert_int_eq(P(state_save_file)(other, path), 0);
    ck_assert_int_eq(entries(dir, NULL, 0), 1);
    ck_assert_int_eq(file_bytes(path, buf, a.len + 1), b.len);
    ck_assert(!memcmp(buf, b.bytes, (size_t)b.len));
    /* a directory that does not exist: EIO, nothing created anywhere */
    char *missing = in_dir(dir, "no/such/ck");
    errno = 0;
    ck_assert_int_eq(P(state_save_file)(st, missing), LINATTN_EIO);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(entries(dir, NULL, 0), 1);
    /* path names a directory: the rename fails, the temporary file goes */
    char *sub = in_dir(dir, "sub");
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    ck_assert_int_eq(P(state_save_file)(st, sub), LINATTN_EIO);
    ck_assert_int_eq(entries(dir, NULL, 0), 2);
    ck_assert_int_eq(entries(sub, NULL, 0), 0);
    rmdir(sub);
    /* A write that fails half-way over an existing checkpoint (the file
     * size limit, which binds root too): the old file stays, whole, and
     * no temporary file is left.  No ck_assert while the limit is low:
     * Check itself writes to a file. */
    struct rlimit old, low;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    low = old;
    low.rlim_cur = 100; /* the checkpoint has 84 + 8 * 3 * 5 = 204 bytes */
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    int status = -99, err = 0;
    if (setrlimit(RLIMIT_FSIZE, &low) == 0) {
        status = P(state_save_file)(st, path);
        err = errno;
        setrlimit(RLIMIT_FSIZE, &old);
    }
    signal(SIGXFSZ, old_handler);
    ck_assert_int_eq(status, LINATTN_EIO);
    ck_assert_int_eq(err, EFBIG);
    ck_assert_int_eq(entries(dir, name, sizeof name), 1);
    ck_assert_str_eq(name, "ck");
    ck_assert_int_eq(file_bytes(path, buf, a.len + 1), b.len);
    ck_assert(!memcmp(buf, b.bytes, (size_t)b.len));
    /* A read-only directory.  Root writes there anyway (CI runs as root),
     * so this sub-case runs only for other users. */
    if (geteuid() != 0) {
        ck_assert_int_eq(chmod(dir, 0500), 0);
        status = P(state_save_file)(st, path);
        chmod(dir, 0700);
        ck_assert_int_eq(status, LINATTN_EIO);
        ck_assert_int_eq(entries(dir, NULL, 0), 1);
        ck_assert_int_eq(file_bytes(path, buf, a.len + 1), b.len);
        ck_assert(!memcmp(buf, b.bytes, (size_t)b.len));
    } else {
        fprintf(stderr, "file_save_is_atomic_and_clean: read-only directory "
                        "sub-case skipped (running as root)\n");
    }
    free(buf), free(missing), free(sub);
    snap_free(&a), snap_free(&b);
    P(state_destroy)(st), P(state_destroy)(other);
    P(plan_destroy)(p);
    remove_tree(dir);
    free(dir), free(path);
}
END_TEST

START_TEST(file_load_errors)
{
    fixture fx = fixture_make(LINATTN_MAP_RELU, 2, 3);
    char *dir = temp_dir(), *path = in_dir(dir, "ck");
    /* missing file, a directory */
    ck_assert_int_eq(P(state_load_file)(fx.target, path), LINATTN_EIO);
    ck_assert_int_eq(P(state_load_file)(fx.target, dir), LINATTN_EIO);
    ck_assert(fixture_untouched(&fx));
    /* a big file that is not a checkpoint */
    unsigned char *junk = calloc(1 << 20, 1);
    write_bytes(path, junk, 1 << 20);
    ck_assert_int_eq(P(state_load_file)(fx.target, path), LINATTN_EFORMAT);
    /* a checkpoint with one byte changed, of another plan, of a newer
     * version: the memory loader's answers */
    memcpy(junk, fx.saved.bytes, (size_t)fx.saved.len);
    junk[90] ^= 4;
    write_bytes(path, junk, fx.saved.len);
    ck_assert_int_eq(P(state_load_file)(fx.target, path), LINATTN_EFORMAT);
    junk[90] ^= 4;
    junk[8] = 9;
    write_bytes(path, junk, fx.saved.len);
    ck_assert_int_eq(P(state_load_file)(fx.target, path), LINATTN_EVERSION);
    P(plan) *p = plan_of(LINATTN_MAP_RELU, 2, 2);
    P(state) *st = state_of(p, 2, 2);
    ck_assert_int_eq(P(state_save_file)(st, path), 0);
    ck_assert_int_eq(P(state_load_file)(fx.target, path), LINATTN_EMISMATCH);
    ck_assert(fixture_untouched(&fx));
    free(junk);
    P(state_destroy)(st);
    P(plan_destroy)(p);
    remove_tree(dir);
    free(dir), free(path);
    fixture_free(&fx);
}
END_TEST

#ifdef _OPENMP
/* Threads saving one state at once, each to its own path and all to one
 * shared path: every save succeeds, the shared path ends with a whole
 * checkpoint, and no temporary file is left. */
START_TEST(concurrent_saves)
{
    char *dir = temp_dir(), *shared = in_dir(dir, "shared");
    P(plan) *p = plan_of(LINATTN_MAP_ELU1, 4, 4);
    P(state) *st = state_of(p, 30, 6);
    snapshot a = snap(st);
    int failures = 0;
#pragma omp parallel num_threads(4) reduction(+ : failures)
    {
        char own[64];
        snprintf(own, sizeof own, "own%d", omp_get_thread_num());
        char *path = in_dir(dir, own);
        for (int rep = 0; rep < 20; rep++) {
            failures += P(state_save_file)(st, path) != 0;
            failures += P(state_save_file)(st, shared) != 0;
        }
        free(path);
    }
    ck_assert_int_eq(failures, 0);
    ck_assert_int_eq(entries(dir, NULL, 0), 5);
    unsigned char *buf = malloc((size_t)a.len + 1);
    ck_assert_int_eq(file_bytes(shared, buf, a.len + 1), a.len);
    ck_assert(!memcmp(buf, a.bytes, (size_t)a.len));
    free(buf);
    snap_free(&a);
    P(state_destroy)(st);
    P(plan_destroy)(p);
    remove_tree(dir);
    free(dir), free(shared);
}
END_TEST
#endif

/* ---- argument errors: -i, nothing written ---- */

START_TEST(argument_errors)
{
    fixture fx = fixture_make(LINATTN_MAP_ELU1, 2, 2);
    int64_t len = fx.saved.len, bytes = -7, written = -7;
    unsigned char *buf = malloc((size_t)len);
    memset(buf, 0xA5, (size_t)len);
    ck_assert_int_eq(P(state_save_size)(NULL, &bytes), -1);
    ck_assert_int_eq(P(state_save_size)(fx.source, NULL), -2);
    ck_assert_int_eq(bytes, -7);
    ck_assert_int_eq(P(state_save)(NULL, buf, len, &written), -1);
    ck_assert_int_eq(P(state_save)(fx.source, NULL, len, &written), -2);
    ck_assert_int_eq(P(state_save)(fx.source, buf, -1, &written), -3);
    ck_assert_int_eq(P(state_save)(fx.source, buf, len - 1, &written), -3);
    ck_assert_int_eq(P(state_save)(fx.source, buf, 0, &written), -3);
    ck_assert_int_eq(written, -7);
    for (int64_t i = 0; i < len; i++)
        ck_assert_uint_eq(buf[i], 0xA5);
    ck_assert_int_eq(P(state_load)(NULL, fx.saved.bytes, len), -1);
    ck_assert_int_eq(P(state_load)(fx.target, NULL, len), -2);
    ck_assert_int_eq(P(state_load)(fx.target, fx.saved.bytes, -1), -3);
    ck_assert(fixture_untouched(&fx));
    char *dir = temp_dir(), *path = in_dir(dir, "ck");
    ck_assert_int_eq(P(state_save_file)(NULL, path), -1);
    ck_assert_int_eq(P(state_save_file)(fx.source, NULL), -2);
    ck_assert_int_eq(P(state_save_file)(fx.source, ""), -2);
    ck_assert_int_eq(entries(dir, NULL, 0), 0);
    ck_assert_int_eq(P(state_save_file)(fx.source, path), 0);
    ck_assert_int_eq(P(state_load_file)(NULL, path), -1);
    ck_assert_int_eq(P(state_load_file)(fx.target, NULL), -2);
    ck_assert_int_eq(P(state_load_file)(fx.target, ""), -2);
    ck_assert(fixture_untouched(&fx));
    /* the legal corner: written may be NULL */
    ck_assert_int_eq(P(state_save)(fx.source, buf, len, NULL), 0);
    ck_assert(!memcmp(buf, fx.saved.bytes, (size_t)len));
    free(buf);
    remove_tree(dir);
    free(dir), free(path);
    fixture_free(&fx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("checkpoint_" PREC);
    TCase *tc = tcase_create("checkpoint");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, format_matches_the_document);
    tcase_add_test(tc, payload_order_and_crc);
    tcase_add_test(tc, round_trip_is_bit_exact);
    tcase_add_test(tc, restart_continues_the_stream);
    tcase_add_test(tc, every_truncation_is_refused);
    tcase_add_test(tc, every_changed_byte_is_refused);
    tcase_add_test(tc, wrong_version_is_refused);
    tcase_add_test(tc, inconsistent_fields_are_refused);
    tcase_add_test(tc, other_plans_are_refused);
    tcase_add_test(tc, file_save_is_atomic_and_clean);
    tcase_add_test(tc, file_load_errors);
#ifdef _OPENMP
    tcase_add_test(tc, concurrent_saves);
#endif
    tcase_add_test(tc, argument_errors);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
