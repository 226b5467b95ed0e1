/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * draw.h -- the random projection W of the random-feature maps (draw.c).
 * Not installed.
 */
#ifndef LINATTN_DRAW_H
#define LINATTN_DRAW_H

#include <stdint.h>

/* W (rows x d, row major, double) drawn as opts.draw says
 * (LINATTN_DRAW_*) from seed.  Returns 0 or LINATTN_ENOMEM. */
int linattn_i_draw(int draw, uint64_t seed, int64_t rows, int64_t d,
                   double *w);

#endif
