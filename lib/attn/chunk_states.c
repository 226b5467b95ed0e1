/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * chunk_states.c -- the layout of the causal forward's saved chunk states
 * (attn/chunk_states.h): a header of int64 words, then records.
 */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include "attn/chunk_states.h"
#include "attn/plan.h"
#include "common/threads.h"
#include "kernels/kern.h"

/* The header's words (int64, copied bytewise: the buffer is reals). */
enum { H_MAGIC, H_N, H_CHUNK, H_THREADS, H_M, H_E, H_PLAN, H_RECORDS, H_WORDS };

/* "linattnC" and the precision, so that a double buffer is not read as a
 * float one */
#define CHUNK_MAGIC (0x6c696e617474ull << 16 | 0x4300u | (unsigned)sizeof(real))

#define HEADER_REALS ((int64_t)(H_WORDS * sizeof(int64_t) / sizeof(real)))
#define LINE_REALS ((int64_t)(64 / sizeof(real)))

static void put_word(real *buf, int i, int64_t x)
{
    memcpy((char *)buf + (size_t)i * sizeof x, &x, sizeof x);
}

static int64_t get_word(const real *buf, int i)
{
    int64_t x;
    memcpy(&x, (const char *)buf + (size_t)i * sizeof x, sizeof x);
    return x;
}

int64_t XI(chunk_record_len)(const X(plan) *plan)
{
    int64_t body = plan->m * (plan->e + 1) +
                   (int64_t)(2 * sizeof(int64_t) / sizeof(real));
    return (body + LINE_REALS - 1) / LINE_REALS * LINE_REALS;
}

int64_t XI(chunk_rows)(const X(plan) *plan, int64_t n)
{
    return plan->chunk < n ? plan->chunk : n > 0 ? n : 1;
}

/* Ranges get at least a chunk each (linattn_i_threads with min_rows >=
 * C), so at most n / C of them, and range t's chunks number at most
 * len_t / C + 1. */
int64_t XI(chunk_states_len)(const X(plan) *plan, int64_t n)
{
    if (n < 0)
        return 0;
    int64_t c = XI(chunk_rows)(plan, n);
    int64_t chunks = n / c + (n % c != 0);
    int64_t nt = chunks < LINATTN_MAX_THREADS ? chunks : LINATTN_MAX_THREADS;
    return HEADER_REALS + (chunks + nt + 1) * XI(chunk_record_len)(plan);
}

int64_t XI(chunk_first)(int64_t n, int nt, int t, int64_t c)
{
    int64_t k = 0;
    for (int u = 0; u < t; u++) {
        int64_t len = linattn_i_range_start(n, nt, u + 1) -
                      linattn_i_range_start(n, nt, u);
        k += (len + c - 1) / c;
    }
    return k;
}

real *XI(chunk_record)(const X(plan) *plan, real *buf, int64_t n, int nt,
                       int t)
{
    int64_t k = XI(chunk_first)(n, nt, t, XI(chunk_rows)(plan, n));
    return buf + HEADER_REALS + k * XI(chunk_record_len)(plan);
}

/* count reals from src to dst, which nothing reads until the backward:
 * with SSE2, stores that bypass the caches when dst is 16-byte aligned
 * (no read of the lines before they are written, and the forward's
 * working set stays in cache), fenced so that any thread may read them
 * once the call returns. */
static void stream_out(real *dst, const real *src, int64_t count)
{
    size_t bytes = (size_t)count * sizeof(real), done = 0;
#if defined(__SSE2__)
    if ((uintptr_t)dst % 16 == 0) {
        for (; done + 16 <= bytes; done += 16)
            _mm_stream_si128((__m128i *)((char *)dst + done),
                             _mm_loadu_si128((const __m128i *)((const char *)
                                                                   src +
                                                               done)));
        _mm_sfence();
    }
#endif
    memcpy((char *)dst + done, (const char *)src + done, bytes - done);
}

void XI(chunk_record_put)(const X(plan) *plan, real *rec, real *stage,
                          const real *s, int64_t lds, const real *z,
                          double shift, int has)
{
    int64_t m = plan->m, e = plan->e;
    /* staged in cache row by row, as the state is held, then streamed out
     * whole (a transposing write to memory cost the forward several
     * times as much) */
    for (int64_t i = 0; i < m; i++) {
        memcpy(stage + i * (e + 1), s + i * lds, (size_t)e * sizeof(real));
        stage[i * (e + 1) + e] = z[i];
    }
    int64_t h = has;
    char *tail = (char *)(stage + (e + 1) * m);
    memcpy(tail, &shift, sizeof shift);
    memcpy(tail + sizeof shift, &h, sizeof h);
    stream_out(rec, stage, XI(chunk_record_len)(plan));
}

void XI(chunk_record_get)(const X(plan) *plan, const real *rec,
                          double *shift, int *has)
{
    int64_t h;
    const char *tail = (const char *)(rec + (plan->e + 1) * plan->m);
    memcpy(shift, tail, sizeof *shift);
    memcpy(&h, tail + sizeof *shift, sizeof h);
    *has = h != 0;
}

void XI(chunk_states_clear)(real *buf)
{
    put_word(buf, H_MAGIC, 0);
}

void XI(chunk_states_seal)(const X(plan) *plan, real *buf, int64_t n, int nt)
{
    uint64_t fp = 0;
    X(plan_fingerprint)(plan, &fp);
    int64_t c = XI(chunk_rows)(plan, n);
    put_word(buf, H_N, n);
    put_word(buf, H_CHUNK, c);
    put_word(buf, H_THREADS, nt);
    put_word(buf, H_M, plan->m);
    put_word(buf, H_E, plan->e);
    put_word(buf, H_PLAN, (int64_t)fp);
    put_word(buf, H_RECORDS, XI(chunk_first)(n, nt, nt, c) + 1);
    put_word(buf, H_MAGIC, (int64_t)CHUNK_MAGIC);
}

int XI(chunk_states_threads)(const X(plan) *plan, const real *buf, int64_t n)
{
    uint64_t fp = 0;
    X(plan_fingerprint)(plan, &fp);
    int64_t c = XI(chunk_rows)(plan, n), nt = get_word(buf, H_THREADS);
    int64_t chunks = n / c + (n % c != 0);
    /* at most a range per chunk (as XI(chunk_states_len) counts them):
     * no header, however written, makes the backward read beyond the
     * buffer's length */
    if (get_word(buf, H_MAGIC) != (int64_t)CHUNK_MAGIC ||
        get_word(buf, H_N) != n || get_word(buf, H_CHUNK) != c ||
        get_word(buf, H_M) != plan->m || get_word(buf, H_E) != plan->e ||
        get_word(buf, H_PLAN) != (int64_t)fp || nt < 1 ||
        nt > LINATTN_MAX_THREADS || nt > (chunks > 1 ? chunks : 1))
        return 0;
    /* the record count the split implies, as the forward sealed it */
    if (get_word(buf, H_RECORDS) != XI(chunk_first)(n, (int)nt, (int)nt, c) + 1)
        return 0;
    return (int)nt;
}

int X(causal_chunk_states_size)(const X(plan) *plan, int64_t n,
                                int64_t *size)
{
    if (!plan)
        return -1;
    if (n < 0)
        return -2;
    if (!size)
        return -3;
    int64_t c = XI(chunk_rows)(plan, n), len = XI(chunk_record_len)(plan);
    int64_t chunks = n / c + (n % c != 0);
    if (chunks > (INT64_MAX - HEADER_REALS) / len - LINATTN_MAX_THREADS - 1)
        return LINATTN_ESIZE;
    *size = XI(chunk_states_len)(plan, n);
    return 0;
}
