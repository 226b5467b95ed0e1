/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * format.c -- encoding and verifying checkpoint bytes (io/format.h,
 * doc/checkpoint-format.md).  Every multi-byte field is written and read
 * byte by byte, least significant first, so the bytes are the same on
 * big- and little-endian hosts; doubles travel as their IEEE binary64 bit
 * patterns (copied, never converted, so NaN payloads and -0 survive).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "io/format.h"
#include "io/crc32.h"
#include "io/files.h"
#include "linattn.h"

/* The bit-pattern copies below assume binary64 doubles. */
_Static_assert(sizeof(double) == 8 && DBL_MANT_DIG == 53 &&
                   DBL_MAX_EXP == 1024,
               "the checkpoint format needs IEEE binary64 doubles");

/* \x89 (not ASCII: 7-bit transfers show), "LACKPT" (linattn checkpoint),
 * \n (newline translation shows). */
static const unsigned char magic[8] = {0x89, 'L', 'A', 'C', 'K', 'P', 'T',
                                       0x0A};

/* Field offsets of version 1. */
enum {
    OFF_VERSION = 8,
    OFF_PRECISION = 12,
    OFF_ACCUMULATOR = 13,
    OFF_RESERVED1 = 14, /* 2 bytes, zero */
    OFF_MAP = 16,
    OFF_RESERVED2 = 20, /* 4 bytes, zero */
    OFF_D = 24,
    OFF_M = 32,
    OFF_E = 40,
    OFF_FINGERPRINT = 48,
    OFF_TOKENS = 56,
    OFF_SHIFT = 64,
    OFF_PAYLOAD_BYTES = 72
};

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void put_f64(unsigned char *p, double x)
{
    uint64_t bits;
    memcpy(&bits, &x, 8);
    put_le(p, bits, 8);
}

static double get_f64(const unsigned char *p)
{
    uint64_t bits = get_le(p, 8);
    double x;
    memcpy(&x, &bits, 8);
    return x;
}

/* Bytes between the payload and the CRC in a version. */
static int64_t trailer(uint64_t version)
{
    return version == LINATTN_CKPT_VERSION_MASS ? LINATTN_CKPT_MASS : 0;
}

int64_t linattn_i_ckpt_bytes(int64_t m, int64_t e, uint32_t version)
{
    return LINATTN_CKPT_HEADER + 8 * m * (e + 1) + trailer(version) +
           LINATTN_CKPT_CRC;
}

void linattn_i_ckpt_write(unsigned char *out, const linattn_i_ckpt_header *h,
                          const double *acc)
{
    int64_t count = h->m * (h->e + 1);
    memset(out, 0, LINATTN_CKPT_HEADER);
    memcpy(out, magic, sizeof magic);
    put_le(out + OFF_VERSION, h->version, 4);
    out[OFF_PRECISION] = h->precision;
    out[OFF_ACCUMULATOR] = h->accumulator;
    put_le(out + OFF_MAP, h->map, 4);
    put_le(out + OFF_D, (uint64_t)h->d, 8);
    put_le(out + OFF_M, (uint64_t)h->m, 8);
    put_le(out + OFF_E, (uint64_t)h->e, 8);
    put_le(out + OFF_FINGERPRINT, h->fingerprint, 8);
    put_le(out + OFF_TOKENS, (uint64_t)h->tokens, 8);
    put_f64(out + OFF_SHIFT, h->shift);
    put_le(out + OFF_PAYLOAD_BYTES, (uint64_t)(8 * count), 8);
    unsigned char *payload = out + LINATTN_CKPT_HEADER;
    for (int64_t i = 0; i < count; i++)
        put_f64(payload + 8 * i, acc[i]);
    size_t body = (size_t)(LINATTN_CKPT_HEADER + 8 * count);
    if (h->version == LINATTN_CKPT_VERSION_MASS) {
        put_f64(out + body, h->mass);
        body += LINATTN_CKPT_MASS;
    }
    put_le(out + body, linattn_i_crc32(0, out, body), 4);
}

int linattn_i_ckpt_frame(const unsigned char *buf, int64_t len,
                         int64_t *total)
{
    if (len < (int64_t)sizeof magic || memcmp(buf, magic, sizeof magic))
        return LINATTN_EFORMAT;
    if (len < OFF_VERSION + 4)
        return LINATTN_EFORMAT;
    uint64_t version = get_le(buf + OFF_VERSION, 4);
    if (version != LINATTN_CKPT_VERSION &&
        version != LINATTN_CKPT_VERSION_MASS)
        return LINATTN_EVERSION;
    if (len < LINATTN_CKPT_HEADER)
        return LINATTN_EFORMAT;
    uint64_t payload = get_le(buf + OFF_PAYLOAD_BYTES, 8);
    int64_t rest = trailer(version) + LINATTN_CKPT_CRC;
    if (payload > (uint64_t)(INT64_MAX - LINATTN_CKPT_HEADER - rest))
        return LINATTN_EFORMAT;
    *total = LINATTN_CKPT_HEADER + (int64_t)payload + rest;
    return 0;
}

/* The fields' own consistency (the CRC already matched). */
static int fields_ok(const unsigned char *buf, const linattn_i_ckpt_header *h)
{
    uint64_t payload = get_le(buf + OFF_PAYLOAD_BYTES, 8);
    if ((h->precision != 'd' && h->precision != 's') || h->accumulator != 'd')
        return 0;
    if (get_le(buf + OFF_RESERVED1, 2) || get_le(buf + OFF_RESERVED2, 4))
        return 0;
    if (h->d < 1 || h->m < 1 || h->e < 1 || h->e == INT64_MAX)
        return 0;
    /* payload = 8 m (e + 1), without overflow: payload fits int64. */
    if ((uint64_t)h->m > payload / 8 / (uint64_t)(h->e + 1) ||
        payload != 8 * (uint64_t)h->m * (uint64_t)(h->e + 1))
        return 0;
    /* version 2's weight: a measure, 0 exactly when no key is held */
    if (h->version == LINATTN_CKPT_VERSION_MASS &&
        !(h->mass >= 0 && isfinite(h->mass) && (h->mass == 0) == (h->tokens == 0)))
        return 0;
    return h->tokens >= 0 && isfinite(h->shift);
}

int linattn_i_ckpt_parse(const unsigned char *buf, int64_t len,
                         linattn_i_ckpt_header *h)
{
    int64_t total;
    int status = linattn_i_ckpt_frame(buf, len, &total);
    if (status)
        return status;
    if (len != total)
        return LINATTN_EFORMAT; /* truncated, or bytes after the end */
    size_t body = (size_t)(len - LINATTN_CKPT_CRC);
    if (linattn_i_crc32(0, buf, body) != (uint32_t)get_le(buf + body, 4))
        return LINATTN_EFORMAT;
    h->precision = buf[OFF_PRECISION];
    h->accumulator = buf[OFF_ACCUMULATOR];
    h->map = (uint32_t)get_le(buf + OFF_MAP, 4);
    h->d = (int64_t)get_le(buf + OFF_D, 8);
    h->m = (int64_t)get_le(buf + OFF_M, 8);
    h->e = (int64_t)get_le(buf + OFF_E, 8);
    h->fingerprint = get_le(buf + OFF_FINGERPRINT, 8);
    h->tokens = (int64_t)get_le(buf + OFF_TOKENS, 8);
    h->shift = get_f64(buf + OFF_SHIFT);
    h->version = (uint32_t)get_le(buf + OFF_VERSION, 4);
    h->mass = h->version == LINATTN_CKPT_VERSION_MASS
                  ? get_f64(buf + body - LINATTN_CKPT_MASS)
                  : (double)h->tokens;
    return fields_ok(buf, h) ? 0 : LINATTN_EFORMAT;
}

int linattn_i_ckpt_same_plan(const linattn_i_ckpt_header *a,
                             const linattn_i_ckpt_header *b)
{
    return a->precision == b->precision && a->map == b->map &&
           a->d == b->d && a->m == b->m && a->e == b->e &&
           a->fingerprint == b->fingerprint;
}

void linattn_i_ckpt_payload(double *acc, const unsigned char *buf,
                            int64_t count)
{
    const unsigned char *payload = buf + LINATTN_CKPT_HEADER;
    for (int64_t i = 0; i < count; i++)
        acc[i] = get_f64(payload + 8 * i);
}

/* Reads the rest of f into a buffer that grows with what actually
 * arrives (a header may claim any length), up to total bytes; *buf holds
 * the have bytes read so far.  0, LINATTN_EIO, LINATTN_ENOMEM, or
 * LINATTN_EFORMAT when the file is shorter or longer than total. */
static int read_rest(FILE *f, unsigned char **buf, int64_t have,
                     int64_t total)
{
    int64_t cap = have;
    for (;;) {
        if (have == cap) {
            if (cap == total)
                break;
            /* Doubling from 64 KiB, never past total. */
            int64_t grown = cap > total / 2 ? total : 2 * cap;
            if (grown < ((int64_t)1 << 16))
                grown = total < ((int64_t)1 << 16) ? total : (int64_t)1 << 16;
            unsigned char *b = realloc(*buf, (size_t)grown);
            if (!b)
                return LINATTN_ENOMEM;
            *buf = b;
            cap = grown;
        }
        size_t got = fread(*buf + have, 1, (size_t)(cap - have), f);
        have += (int64_t)got;
        if (have < cap)
            break; /* end of file or error */
    }
    if (ferror(f))
        return LINATTN_EIO;
    if (have < total)
        return LINATTN_EFORMAT; /* truncated */
    int extra = fgetc(f);
    if (ferror(f))
        return LINATTN_EIO;
    return extra == EOF ? 0 : LINATTN_EFORMAT; /* bytes after the end */
}

int linattn_i_ckpt_read_file(const char *path, unsigned char **buf,
                             int64_t *len)
{
    FILE *f = linattn_i_open_regular(path);
    if (!f)
        return LINATTN_EIO;
    unsigned char head[LINATTN_CKPT_HEADER];
    size_t got = fread(head, 1, sizeof head, f);
    int64_t total = 0;
    int status = ferror(f) ? LINATTN_EIO
                           : linattn_i_ckpt_frame(head, (int64_t)got, &total);
    unsigned char *b = NULL;
    if (!status) {
        b = malloc(sizeof head);
        status = b ? 0 : LINATTN_ENOMEM;
    }
    if (!status) {
        memcpy(b, head, sizeof head);
        status = read_rest(f, &b, (int64_t)sizeof head, total);
    }
    fclose(f);
    if (status) {
        free(b);
        return status;
    }
    *buf = b;
    *len = total;
    return 0;
}
