/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rng.h -- the counter-based generator behind the random feature maps
 * (Philox4x32-10 and Box-Muller in fixed IEEE arithmetic; doc/rng.md gives
 * the algorithm completely).  Not installed; linattn_rng_normal in
 * linattn.h is the public door.
 */
#ifndef LINATTN_RNG_H
#define LINATTN_RNG_H

#include <stdint.h>

/* The streams of one seed that the plans use (doc/rng.md). */
#define LINATTN_RNG_STREAM_GAUSS 0 /* the Gaussian entries of W            */
#define LINATTN_RNG_STREAM_NORMS 1 /* the vectors whose norms scale rows  */

/* One Philox4x32-10 block: out = philox(ctr, key). */
void linattn_i_philox(const uint32_t ctr[4], const uint32_t key[2],
                      uint32_t out[4]);

/* Normals first .. first + count - 1 of (seed, stream) into out; the
 * caller checked that the range does not wrap around 2^64. */
void linattn_i_normals(uint64_t seed, uint64_t stream, uint64_t first,
                       int64_t count, double *out);

#endif
