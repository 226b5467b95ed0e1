/* SPDX-License-Identifier: BSD-3-Clause */
/* crc32.c -- CRC-32 (see crc32.h), four bits per table step: a table of
 * 16 words is short enough to check by eye against the bitwise definition
 * (tests/test_checkpoint.c recomputes it bit by bit), and a checkpoint is
 * written once per restart interval, so speed matters little. */
#include "io/crc32.h"

/* crc32_nibble[i]: i shifted out through the reflected polynomial four
 * times, i.e. the CRC update of the low four bits i. */
static const uint32_t crc32_nibble[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu,
    0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu};

uint32_t linattn_i_crc32(uint32_t crc, const void *p, size_t len)
{
    const unsigned char *b = p;
    crc = ~crc;
    for (size_t i = 0; i < len; i++) {
        crc ^= b[i];
        crc = (crc >> 4) ^ crc32_nibble[crc & 15u];
        crc = (crc >> 4) ^ crc32_nibble[crc & 15u];
    }
    return ~crc;
}
