/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.c -- sums of states over ranks, as one MPI reduction of elements
 * (mpi_internal.h) with a user-defined operation.
 *
 * Each pair of states is brought to the larger of its two shifts before
 * adding, as linattn's own merge does.  A common shift agreed first (the
 * largest over all ranks) would do for the Allreduce, but not for the
 * exclusive prefix: there rank r's prefix would be scaled by a later
 * rank's shift, which can underflow it to zero and makes it depend on
 * later keys (causal outputs would change, in their last bits or worse,
 * when later tokens change).  Pairwise, the prefix of rank r only ever
 * holds the largest shift among ranks before r.
 *
 * The operation is commutative bit for bit (a + b == b + a and each
 * factor is computed from the two shifts alone), so MPI may combine in
 * any order its algorithm needs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "mpi_internal.h"

#define H LINATTN_MPI_HEAD

void linattn_mpi_i_elem_head(double *elem, int64_t len, double shift,
                             int64_t tokens)
{
    elem[LINATTN_MPI_E_LEN] = (double)len;
    elem[LINATTN_MPI_E_SHIFT] = shift;
    elem[LINATTN_MPI_E_FAIL] = 0;
    elem[LINATTN_MPI_E_TOKHI] = (double)(tokens >> 32);
    elem[LINATTN_MPI_E_TOKLO] = (double)(tokens & 0xffffffff);
}

int64_t linattn_mpi_i_elem_tokens(const double *elem)
{
    double hi = elem[LINATTN_MPI_E_TOKHI], lo = elem[LINATTN_MPI_E_TOKLO];
    /* both halves are exact sums of integers below 2^53 */
    if (hi >= 0x1p31 || lo >= 0x1p53)
        return -1;
    uint64_t t = ((uint64_t)hi << 32) + (uint64_t)lo;
    return t > (uint64_t)INT64_MAX ? -1 : (int64_t)t;
}

static int holds_tokens(const double *elem)
{
    return elem[LINATTN_MPI_E_TOKHI] > 0 || elem[LINATTN_MPI_E_TOKLO] > 0;
}

/* inout = in + inout, element by element (MPI_User_function). */
static void add_states(void *invec, void *inoutvec, int *count,
                       MPI_Datatype *type)
{
    (void)type;
    const double *a = invec;
    double *b = inoutvec;
    for (int c = 0; c < *count; c++) {
        int64_t len = (int64_t)a[LINATTN_MPI_E_LEN];
        if (a[LINATTN_MPI_E_FAIL] > b[LINATTN_MPI_E_FAIL])
            b[LINATTN_MPI_E_FAIL] = a[LINATTN_MPI_E_FAIL];
        if (holds_tokens(a) && !holds_tokens(b)) {
            b[LINATTN_MPI_E_SHIFT] = a[LINATTN_MPI_E_SHIFT];
            memcpy(b + H, a + H, (size_t)len * sizeof *b);
        } else if (holds_tokens(a)) {
            double sa = a[LINATTN_MPI_E_SHIFT], sb = b[LINATTN_MPI_E_SHIFT];
            double s = sa > sb ? sa : sb;
            double fa = exp(sa - s), fb = exp(sb - s);
            for (int64_t i = H; i < H + len; i++)
                b[i] = fb * b[i] + fa * a[i];
            b[LINATTN_MPI_E_SHIFT] = s;
        }
        b[LINATTN_MPI_E_TOKHI] += a[LINATTN_MPI_E_TOKHI];
        b[LINATTN_MPI_E_TOKLO] += a[LINATTN_MPI_E_TOKLO];
        a += H + len;
        b += H + len;
    }
}

int linattn_mpi_i_reduce(MPI_Comm comm, double *elems, double *result,
                         int64_t count, int64_t len, int exscan)
{
    MPI_Datatype type;
    MPI_Op op;
    int rank, ok = 1;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return LINATTN_EMPI;
    /* Sizes were checked against INT_MAX with the arguments. */
    if (MPI_Type_contiguous((int)(H + len), MPI_DOUBLE, &type) != MPI_SUCCESS)
        return LINATTN_EMPI;
    if (MPI_Type_commit(&type) != MPI_SUCCESS ||
        MPI_Op_create(add_states, 1, &op) != MPI_SUCCESS) {
        MPI_Type_free(&type);
        return LINATTN_EMPI;
    }
    if (exscan) {
        ok = MPI_Exscan(elems, result, (int)count, type, op, comm) ==
             MPI_SUCCESS;
        for (int64_t c = 0; ok && rank == 0 && c < count; c++) {
            /* undefined on rank 0: the empty prefix */
            double *r = result + c * (H + len);
            memset(r, 0, (size_t)(H + len) * sizeof *r);
            linattn_mpi_i_elem_head(r, len, 0, 0);
        }
    } else {
        ok = MPI_Allreduce(result == elems ? MPI_IN_PLACE : elems, result,
                           (int)count, type, op, comm) == MPI_SUCCESS;
    }
    MPI_Op_free(&op);
    MPI_Type_free(&type);
    return ok ? 0 : LINATTN_EMPI;
}
