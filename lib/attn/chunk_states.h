/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * attn/chunk_states.h -- the causal forward's saved chunk states
 * (linattn_d_extras.chunk_states), which the causal backward reads
 * instead of rebuilding the carried state.  Not installed.
 *
 * The buffer holds a header, then one record per chunk of each thread's
 * range (the state [S z] before the chunk's first row, m x (e + 1) row
 * major as the forward holds it, then its shift as a double and whether
 * it holds tokens as an int64), then one record of the final state.  The records
 * follow the forward's split (its thread count and chunk size, both in
 * the header), so that the backward runs the same chunks whatever its
 * own thread count: a record is the state at a chunk boundary exactly as
 * the backward's sweep would have rebuilt it, to rounding.
 *
 * Invariant: the header's magic word is written last, after every record
 * of a call that succeeded, and cleared first; a buffer the forward did
 * not finish is refused by the backward, never read.
 */
#ifndef LINATTN_ATTN_CHUNK_STATES_H
#define LINATTN_ATTN_CHUNK_STATES_H

#include <stdint.h>
#include "attn/problem.h"

/* Reals of one record (rounded up to a cache line). */
int64_t XI(chunk_record_len)(const X(plan) *plan);

/* Reals of the buffer for n rows on any thread count (0 for n < 0). */
int64_t XI(chunk_states_len)(const X(plan) *plan, int64_t n);

/* The chunk size of a causal call of n rows (also the backward's). */
int64_t XI(chunk_rows)(const X(plan) *plan, int64_t n);

/* Record index of range t's first chunk when n rows are split into nt
 * ranges of chunks of c rows; t = nt gives the final state's. */
int64_t XI(chunk_first)(int64_t n, int nt, int t, int64_t c);

/* The first record of range t (t = nt: the final state's). */
real *XI(chunk_record)(const X(plan) *plan, real *buf, int64_t n, int nt,
                       int t);

/* Record the state [S z] (S m x e at leading dimension lds, z m
 * entries), at its shift, with has (tokens) into rec, through stage
 * (XI(chunk_record_len) reals of the caller's). */
void XI(chunk_record_put)(const X(plan) *plan, real *rec, real *stage,
                          const real *s, int64_t lds, const real *z,
                          double shift, int has);

/* The shift and has of a record. */
void XI(chunk_record_get)(const X(plan) *plan, const real *rec,
                          double *shift, int *has);

/* Clear the magic word (before the forward writes records), and write
 * the header after the last record. */
void XI(chunk_states_clear)(real *buf);
void XI(chunk_states_seal)(const X(plan) *plan, real *buf, int64_t n,
                           int nt);

/* The forward's thread count for a sealed buffer of n rows of plan's,
 * or 0 when the buffer is not one (never written, another n, another
 * plan's map or sizes, another chunk size). */
int XI(chunk_states_threads)(const X(plan) *plan, const real *buf,
                             int64_t n);

#endif
