/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * crc32.h -- CRC-32 as in zlib, gzip and PNG (ISO-HDLC: reflected
 * polynomial 0xEDB88320, initial value and final xor 0xFFFFFFFF; the CRC of
 * the ASCII bytes "123456789" is 0xCBF43926).  The checkpoint format's
 * checksum: chosen because every language's standard library already has
 * it (zlib.crc32, java.util.zip.CRC32, Go's hash/crc32.ChecksumIEEE), and
 * because it detects every single-bit error and every burst of up to 32
 * bits at any length.
 */
#ifndef LINATTN_CRC32_H
#define LINATTN_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of len bytes at p continued from crc, the CRC of what came
 * before (0 to start): crc32(crc32(0, a), b) = crc32(0, a b). */
uint32_t linattn_i_crc32(uint32_t crc, const void *p, size_t len);

#endif
