/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_reader.h -- the libFuzzer harnesses' view of their input: bytes
 * taken one at a time, zeros once it is used up.
 */
#ifndef LINATTN_FUZZ_READER_H
#define LINATTN_FUZZ_READER_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const uint8_t *p;
    size_t n;
} reader;

static unsigned take(reader *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

#endif
