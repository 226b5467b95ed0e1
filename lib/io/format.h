/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * format.h -- the byte format of a state checkpoint, versions 1 and 2
 * (specified in doc/checkpoint-format.md, which is the reference: keep the
 * two in step).  Precision-independent: the accumulator is double in both
 * precisions, so float and double states share the format and differ only
 * in the precision byte.
 */
#ifndef LINATTN_CKFORMAT_H
#define LINATTN_CKFORMAT_H

#include <stdint.h>

#define LINATTN_CKPT_VERSION 1 /* the version of every state but these: */
/* version 2: version 1 and, after the payload, the keys' total weight
 * (f64), written only for states that need it (LINATTN_DENOM_COUNT
 * plans whose weighted keys weigh other than their count), so that every
 * other checkpoint stays readable by version 1 readers */
#define LINATTN_CKPT_VERSION_MASS 2
#define LINATTN_CKPT_HEADER 80 /* bytes before the payload */
#define LINATTN_CKPT_MASS 8    /* version 2: bytes of the weight after it */
#define LINATTN_CKPT_CRC 4     /* bytes of the CRC-32 after them */

/* The header's fields.  d, m, e are int64 in the file (and in plans). */
typedef struct {
    unsigned char precision;   /* 'd' or 's': the plan's precision        */
    unsigned char accumulator; /* 'd': entries are IEEE binary64           */
    uint32_t map;
    int64_t d, m, e;
    uint64_t fingerprint;
    int64_t tokens;
    double shift;
    uint32_t version; /* 1, or 2 with mass                              */
    double mass;      /* version 2: the keys' total weight, finite >= 0 */
} linattn_i_ckpt_header;

/* Bytes of the checkpoint of an m x (e + 1) accumulator in this format
 * version: header, 8 bytes per entry, (version 2) the weight, CRC.  The
 * caller guarantees that they fit int64 (a state that exists has its
 * m (e + 1) entries in memory). */
int64_t linattn_i_ckpt_bytes(int64_t m, int64_t e, uint32_t version);

/* Writes the checkpoint of h (in format version h->version) and of the
 * m (e + 1) accumulator entries acc (row major [S | z]) into out,
 * linattn_i_ckpt_bytes(h->m, h->e, h->version) bytes. */
void linattn_i_ckpt_write(unsigned char *out, const linattn_i_ckpt_header *h,
                          const double *acc);

/* The framing, from the first len bytes of a candidate: magic (else
 * LINATTN_EFORMAT), version 1 or 2 (else LINATTN_EVERSION), a whole header (else
 * LINATTN_EFORMAT), and a payload length that int64 can hold; then *total
 * is the byte count the header claims.  Returns 0 or the status. */
int linattn_i_ckpt_frame(const unsigned char *buf, int64_t len,
                         int64_t *total);

/* Every check of the format, in the documented order, on exactly len
 * bytes: the framing, len == the claimed total, the CRC, then the fields'
 * own consistency.  0 with *h filled, LINATTN_EFORMAT or LINATTN_EVERSION.
 * Says nothing about whether the checkpoint suits a given state. */
int linattn_i_ckpt_parse(const unsigned char *buf, int64_t len,
                         linattn_i_ckpt_header *h);

/* Nonzero when two headers describe states of one kind of plan
 * (precision, map, d, m, e and fingerprint agree). */
int linattn_i_ckpt_same_plan(const linattn_i_ckpt_header *a,
                             const linattn_i_ckpt_header *b);

/* The payload of a parsed checkpoint buf into acc, m (e + 1) entries. */
void linattn_i_ckpt_payload(double *acc, const unsigned char *buf,
                            int64_t count);

/* The bytes of the file at path, read only as far as the framing allows:
 * a file whose first bytes are not a checkpoint header is not read on.
 * 0 with *buf (malloc'd; the caller frees it) holding *len bytes,
 * LINATTN_EIO when the file cannot be opened or read, LINATTN_ENOMEM, or
 * the status of linattn_i_ckpt_frame / a length that differs from the
 * claimed total (LINATTN_EFORMAT). */
int linattn_i_ckpt_read_file(const char *path, unsigned char **buf,
                             int64_t *len);

#endif
