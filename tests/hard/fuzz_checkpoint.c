/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_checkpoint.c -- libFuzzer harness for the checkpoint loader
 * (linattn_*_state_load and, for one input in eight, _load_file).
 *
 * Targets are states of four plans: identity d = 2, e = 1 in double and
 * in float (equal but for the precision), elu+1 d = 3, e = 2 in float and
 * ReLU d = 1, e = 3 in double (the same payload length as the first).
 * The input's first byte picks the target, how the candidate bytes are
 * made and whether a file is used too:
 *
 *   - the input itself, raw, or with its last four bytes replaced by the
 *     CRC-32 of the rest (so that the checks after the CRC are reached);
 *   - a valid checkpoint of one of the four plans, cut or extended, with
 *     bytes changed at input-chosen offsets, then resealed with a correct
 *     CRC or not.
 *
 * It aborts when a load returns a status other than 0, LINATTN_EFORMAT,
 * LINATTN_EVERSION or LINATTN_EMISMATCH; when a refused load changed the
 * target (its checkpoint bytes, S, z or token count); when an accepted
 * candidate does not save back to itself byte for byte; and when the file
 * loader's status differs from the memory loader's on the same bytes.
 * After an accepted load the target answers a query, and is then restored
 * so that every input starts from the same targets.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../crc32_ref.h"
#include "linattn.h"

/* The last four bytes become the CRC-32 of the rest (little-endian). */
static void seal(uint8_t *b, size_t n)
{
    if (n < 4)
        return;
    uint32_t c = crc32_ref(b, n - 4);
    for (int i = 0; i < 4; i++)
        b[n - 4 + i] = (uint8_t)(c >> (8 * i));
}

/* A scratch file for the file loader, removed at exit. */
static char scratch_dir[4096], scratch_file[4200];

static void scratch_remove(void)
{
    unlink(scratch_file);
    rmdir(scratch_dir);
}

static const char *scratch_path(void)
{
    if (!scratch_file[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(scratch_dir, sizeof scratch_dir, "%s/fuzz-ckpt-XXXXXX",
                 base && *base ? base : "/tmp");
        if (!mkdtemp(scratch_dir))
            abort();
        snprintf(scratch_file, sizeof scratch_file, "%s/candidate", scratch_dir);
        atexit(scratch_remove);
    }
    return scratch_file;
}

static int write_file(const char *path, const uint8_t *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int bad = fwrite(b, 1, n, f) != n;
    return fclose(f) || bad ? -1 : 0;
}

static int status_ok(int st)
{
    return st == 0 || st == LINATTN_EFORMAT || st == LINATTN_EVERSION ||
           st == LINATTN_EMISMATCH;
}

/* A target of one precision: its plan, state, and the observables that
 * a refused load must leave alone. */
#define TARGET(P, R)                                                          \
    typedef struct {                                                          \
        linattn_##P##_plan *plan;                                             \
        linattn_##P##_state *state;                                           \
        int64_t m, e, len;                                                    \
        uint8_t *saved; /* the target's checkpoint, to compare and restore */ \
        R *s, *z;                                                             \
        int64_t tokens;                                                       \
    } P##_target;                                                             \
                                                                              \
    static void P##_make(P##_target *t, int map, int64_t d, int64_t e,        \
                         double scale)                                        \
    {                                                                         \
        R k[12], v[12];                                                       \
        for (int i = 0; i < 12; i++)                                          \
            k[i] = (R)(scale * (0.1 + 0.07 * i)),                             \
            v[i] = (R)(scale * (0.5 - 0.09 * i));                             \
        if (linattn_##P##_plan_create(&t->plan, map, d, e, NULL) ||           \
            linattn_##P##_state_create(&t->state, t->plan) ||                 \
            linattn_##P##_state_update(t->state, LINATTN_ROW_MAJOR,           \
                                       12 / (d > e ? d : e), k, d, v, e))     \
            abort();                                                          \
        linattn_##P##_plan_dims(t->plan, NULL, &t->m, &t->e);                 \
        linattn_##P##_state_save_size(t->state, &t->len);                     \
        t->saved = malloc((size_t)t->len);                                    \
        t->s = malloc((size_t)(t->m * t->e) * sizeof(R));                     \
        t->z = malloc((size_t)t->m * sizeof(R));                              \
        if (linattn_##P##_state_save(t->state, t->saved, t->len, NULL) ||     \
            linattn_##P##_state_get(t->state, LINATTN_ROW_MAJOR, t->s, t->e,  \
                                    t->z, &t->tokens))                        \
            abort();                                                          \
    }                                                                         \
                                                                              \
    /* Nonzero when the target is as it was made. */                          \
    static int P##_unchanged(const P##_target *t)                             \
    {                                                                         \
        uint8_t *b = malloc((size_t)t->len);                                  \
        R *s = malloc((size_t)(t->m * t->e) * sizeof(R));                     \
        R *z = malloc((size_t)t->m * sizeof(R));                              \
        int64_t tokens;                                                       \
        int same =                                                            \
            !linattn_##P##_state_save(t->state, b, t->len, NULL) &&           \
            !linattn_##P##_state_get(t->state, LINATTN_ROW_MAJOR, s, t->e, z, \
                                     &tokens) &&                              \
            !memcmp(b, t->saved, (size_t)t->len) &&                           \
            !memcmp(s, t->s, (size_t)(t->m * t->e) * sizeof(R)) &&            \
            !memcmp(z, t->z, (size_t)t->m * sizeof(R)) && tokens == t->tokens;\
        free(b), free(s), free(z);                                            \
        return same;                                                          \
    }                                                                         \
                                                                              \
    static void P##_try(P##_target *t, const uint8_t *cand, size_t n,         \
                        int via_file)                                         \
    {                                                                         \
        /* an exactly sized copy: reads past the end are ASan reports */      \
        uint8_t *copy = malloc(n ? n : 1);                                    \
        memcpy(copy, cand, n);                                                \
        int st = linattn_##P##_state_load(t->state, copy, (int64_t)n);        \
        free(copy);                                                           \
        if (!status_ok(st))                                                   \
            abort();                                                          \
        if (st && !P##_unchanged(t))                                          \
            abort(); /* a refused load changed the target */                  \
        if (st == 0) {                                                        \
            int64_t len;                                                      \
            linattn_##P##_state_save_size(t->state, &len);                    \
            uint8_t *again = malloc((size_t)len);                             \
            if ((size_t)len != n ||                                           \
                linattn_##P##_state_save(t->state, again, len, NULL) ||       \
                memcmp(again, cand, n))                                       \
                abort(); /* accepted, but does not save back to itself */     \
            free(again);                                                      \
            R q[3] = {1, (R)0.5, (R)-0.25}, out[3];                           \
            int qs = linattn_##P##_state_query(t->state, LINATTN_ROW_MAJOR, 1,\
                                               q, 3, out, 3, NULL, 0, NULL,   \
                                               NULL);                         \
            if (qs != 0 && qs != LINATTN_EDENOM &&                            \
                qs != LINATTN_EOVERFLOW) /* a loaded S may be huge */   \
                abort();                                                      \
            if (linattn_##P##_state_load(t->state, t->saved, t->len) ||       \
                !P##_unchanged(t))                                            \
                abort();                                                      \
        }                                                                     \
        if (via_file) {                                                       \
            const char *path = scratch_path();                                \
            if (write_file(path, cand, n))                                    \
                return; /* the harness's own file trouble, not a finding */  \
            int fs = linattn_##P##_state_load_file(t->state, path);           \
            if (fs != st)                                                     \
                abort(); /* the file loader disagrees with the memory one */  \
            if (fs == 0 && linattn_##P##_state_load(t->state, t->saved,       \
                                                    t->len))                  \
                abort();                                                      \
            if (!P##_unchanged(t))                                            \
                abort();                                                      \
        }                                                                     \
    }

TARGET(d, double)
TARGET(s, float)

static d_target d_identity, d_relu;
static s_target s_identity, s_elu;

static void setup(void)
{
    static int done;
    if (done)
        return;
    done = 1;
    d_make(&d_identity, LINATTN_MAP_IDENTITY, 2, 1, 1.0);
    s_make(&s_identity, LINATTN_MAP_IDENTITY, 2, 1, 1.0);
    s_make(&s_elu, LINATTN_MAP_ELU1, 3, 2, -2.0);
    d_make(&d_relu, LINATTN_MAP_RELU, 1, 3, 3.0);
}

/* A valid checkpoint of plan i (another state than the target's). */
static const uint8_t *template_of(int i, size_t *n)
{
    static uint8_t *t[4];
    static size_t len[4];
    if (!t[i]) {
        /* the target's own checkpoint with its token count changed: still
         * valid (resealed), and not the target's bytes */
        const uint8_t *src = i == 0   ? d_identity.saved
                             : i == 1 ? s_identity.saved
                             : i == 2 ? s_elu.saved
                                      : d_relu.saved;
        len[i] = (size_t)(i == 0   ? d_identity.len
                          : i == 1 ? s_identity.len
                          : i == 2 ? s_elu.len
                                   : d_relu.len);
        t[i] = malloc(len[i]);
        memcpy(t[i], src, len[i]);
        t[i][56] ^= 0x10; /* tokens += or -= 16 */
        seal(t[i], len[i]);
    }
    *n = len[i];
    return t[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size < 1)
        return 0;
    unsigned ctl = data[0];
    int target = (int)(ctl & 3), kind = (int)(ctl >> 2 & 3);
    int via_file = (ctl >> 4 & 7) == 0;
    const uint8_t *in = data + 1;
    size_t n = size - 1;
    uint8_t *cand;
    size_t len;
    if (kind < 2) {
        len = n;
        cand = malloc(len ? len : 1);
        memcpy(cand, in, len);
        if (kind == 1)
            seal(cand, len);
    } else {
        /* in: template, length change (-128..127), then (offset, xor)
         * pairs over the result */
        size_t tlen;
        const uint8_t *tpl = template_of(n > 0 ? in[0] & 3 : 0, &tlen);
        int delta = n > 1 ? (int)in[1] - 128 : 0;
        len = (int64_t)tlen + delta < 0 ? 0 : (size_t)((int64_t)tlen + delta);
        cand = calloc(len ? len : 1, 1);
        memcpy(cand, tpl, len < tlen ? len : tlen);
        for (size_t i = 2; len && i + 1 < n; i += 2)
            cand[in[i] % len] ^= in[i + 1];
        if (kind == 3)
            seal(cand, len);
    }
    switch (target) {
    case 0:
        d_try(&d_identity, cand, len, via_file);
        break;
    case 1:
        s_try(&s_identity, cand, len, via_file);
        break;
    case 2:
        s_try(&s_elu, cand, len, via_file);
        break;
    default:
        d_try(&d_relu, cand, len, via_file);
        break;
    }
    free(cand);
    return 0;
}
