/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crc32_ref.h -- CRC-32 (ISO-HDLC, as zlib) bit by bit, straight from its
 * definition in doc/checkpoint-format.md: the tests' and the fuzz
 * harness's own, independent of the library's table-driven one.
 */
#ifndef LINATTN_CRC32_REF_H
#define LINATTN_CRC32_REF_H

#include <stddef.h>
#include <stdint.h>

static inline uint32_t crc32_ref(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

#endif
