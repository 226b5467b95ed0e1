/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * strides.c -- the argument checks of the batched calls (validate.h):
 * strided batches of matrices, the policy on negative and overlapping
 * strides, and addressability in int64.
 */
#include <stdint.h>
#include "linattn.h"
#include "common/validate.h"

/* One axis of a batched matrix: extent elements, stride apart. */
typedef struct {
    int64_t extent, stride;
} axis;

/* The four axes of a batched matrix: rows, columns, heads, batch. */
static void axes_of(int layout, int64_t batch, int64_t heads,
                    const linattn_i_bmat *a, axis ax[4])
{
    int row = layout == LINATTN_ROW_MAJOR;
    ax[0] = (axis){a->rows, row ? a->s->ld : 1};
    ax[1] = (axis){a->cols, row ? 1 : a->s->ld};
    ax[2] = (axis){heads, a->s->head};
    ax[3] = (axis){batch, a->s->batch};
}

/* acc + stride * (extent - 1) into *out; 0 when that passes the largest
 * addressable offset (validate.h: LINATTN_ELEM_MAX bytes per element
 * within int64, so that byte offsets cannot wrap). */
static int span_add(int64_t acc, axis a, int64_t *out)
{
    const int64_t most = INT64_MAX / LINATTN_ELEM_MAX - 1;
    int64_t k = a.extent - 1;
    if (k > 0 && a.stride > (most - acc) / k)
        return 0;
    *out = acc + a.stride * k;
    return 1;
}

/* Offset of the last element, or -1 when the matrix is empty, or -2 when
 * it is not addressable (span_add). */
static int64_t last_offset(int layout, int64_t batch, int64_t heads,
                           const linattn_i_bmat *a)
{
    axis ax[4];
    axes_of(layout, batch, heads, a, ax);
    int64_t off = 0;
    for (int i = 0; i < 4; i++) {
        if (ax[i].extent == 0)
            return -1;
        if (!span_add(off, ax[i], &off))
            return -2;
    }
    return off;
}

/* Nonzero when two elements of the batched matrix share an address.
 * Sufficient test: sorted by stride, each axis's stride must exceed the
 * span of all smaller ones (axes of extent 1 play no part; an empty
 * matrix has nothing to overlap).  Every dense
 * array with its axes in any order, padded or not, passes.  A span beyond
 * int64 stops the test: that matrix is refused as LINATTN_ESIZE later. */
static int overlapping(int layout, int64_t batch, int64_t heads,
                       const linattn_i_bmat *a)
{
    axis ax[4];
    int count = 0;
    axis all[4];
    axes_of(layout, batch, heads, a, all);
    for (int i = 0; i < 4; i++)
        if (all[i].extent == 0)
            return 0; /* no elements */
    for (int i = 0; i < 4; i++)
        if (all[i].extent > 1) {
            int j = count++;
            while (j > 0 && ax[j - 1].stride > all[i].stride) {
                ax[j] = ax[j - 1];
                j--;
            }
            ax[j] = all[i];
        }
    int64_t reach = 0;
    for (int i = 0; i < count; i++) {
        if (ax[i].stride <= reach)
            return 1;
        if (!span_add(reach, ax[i], &reach))
            return 0;
    }
    return 0;
}

static int strides_arg(int layout, int64_t batch, int64_t heads,
                       const linattn_i_bmat *a)
{
    int bad = -(a->pos + 1);
    if (!a->s)
        return bad;
    /* The pointer was checked before: pass a stand-in so that only the
     * leading dimension is judged here. */
    if (linattn_i_matrix_arg(layout, a->rows, a->cols, a, a->s->ld, a->pos))
        return bad;
    if (a->s->batch < 0 || a->s->head < 0)
        return bad;
    if (a->output && overlapping(layout, batch, heads, a))
        return bad;
    return 0;
}

void linattn_i_bmat_range(int layout, int64_t batch, int64_t heads,
                          size_t elem, const linattn_i_bmat *a, uintptr_t *lo,
                          uintptr_t *hi)
{
    int64_t last = last_offset(layout, batch, heads, a);
    *lo = *hi = (uintptr_t)a->p;
    if (last >= 0 && (uint64_t)last < UINT64_MAX / elem)
        *hi += (uintptr_t)(last + 1) * elem;
}

int linattn_i_check_batched(int layout, int64_t batch, int64_t heads,
                            size_t elem, const linattn_i_bmat *mats,
                            int count)
{
    int some = batch > 0 && heads > 0;
    for (int i = 0; i < count; i++) {
        const linattn_i_bmat *a = &mats[i];
        if (!a->p && some && a->rows > 0)
            return -a->pos;
        int st = strides_arg(layout, batch, heads, a);
        if (st)
            return st;
    }
    /* An output's bytes against the inputs' and the earlier outputs' (as
     * linattn_i_check_mats_io: a pair of outputs is reported at the
     * later), as address ranges. */
    for (int i = 0; i < count; i++) {
        uintptr_t olo = 0, ohi = 0;
        if (mats[i].output)
            linattn_i_bmat_range(layout, batch, heads, elem, &mats[i], &olo,
                                 &ohi);
        for (int j = 0; olo < ohi && j < count; j++) {
            uintptr_t lo, hi;
            linattn_i_bmat_range(layout, batch, heads, elem, &mats[j], &lo,
                                 &hi);
            int earlier = !mats[j].output || j < i;
            if (earlier && j != i && lo < ohi && olo < hi)
                return -mats[i].pos;
        }
    }
    for (int i = 0; i < count; i++) {
        const linattn_i_bmat *a = &mats[i];
        if (linattn_i_matrix_fits(layout, a->rows, a->cols, a->s->ld) ||
            (some && last_offset(layout, batch, heads, a) == -2))
            return LINATTN_ESIZE;
    }
    return 0;
}
