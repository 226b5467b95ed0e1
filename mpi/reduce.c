/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reduce.c -- sums of states over ranks: an MPI_Allreduce of elements
 * (mpi_internal.h) with a user-defined operation, and the library's own
 * exclusive scan in ceil(log2 P) steps.
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
 * any order its algorithm needs.  The scans' composition with decay,
 * (A1, S1) then (A2, S2) = (A1 + A2, e^{A2} S1 + S2), is not (nor is the
 * segmented one): their recursive doubling keeps rank order.
 *
 * Why not MPI_Exscan: Open MPI 4.1 runs it as a chain of P - 1 hops by
 * default (its basic component: rank r waits for rank r - 1), so the
 * prefix would cost P - 1 latencies.  The scan here is recursive
 * doubling: ceil(log2 P) exchanges (MPI_Sendrecv), every rank's message
 * the size of one set of elements.  Its messages travel on the library's
 * own duplicate of the caller's communicator (comm.c), never matching
 * the caller's receives.
 */
#include <float.h>
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
    elem[LINATTN_MPI_E_FLAGS] = 0;
    elem[LINATTN_MPI_E_TOKHI] = (double)(tokens >> 32);
    elem[LINATTN_MPI_E_TOKLO] = (double)(tokens & 0xffffffff);
    elem[LINATTN_MPI_E_MASS] = (double)tokens;
    elem[LINATTN_MPI_E_DECAY] = 0;
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

/* b = a then b, a the earlier element (one element of len sums).  b's
 * decay A <= 0 ages a by e^{A}, composed with the factor that brings the
 * pair to the larger of its shifts in one exponential of their summed
 * exponents, each <= 0: nothing overflows.  The shift stays the larger
 * of the two states' (the largest key exponent, undecayed), as the
 * serial causal path carries its state past a chunk (exp(b_C + (M -
 * M'))), so that a rank's rows take the running shifts, and write the
 * normalizers, the serial call would.  Then the sums add as
 * linattn_d_state_merge adds: a state without tokens as it is (its
 * accumulator too, which is zero unless it was imported or loaded so),
 * taking the shift of one with tokens; between two without tokens the
 * larger shift is kept.  Without decay (A = 0, every sum of whole
 * states) this is commutative bit for bit: a + b == b + a, and each
 * factor comes from the two shifts alone. */
static void add_one(const double *a, double *b, int64_t len)
{
    double A = b[LINATTN_MPI_E_DECAY];
    int ha = holds_tokens(a), hb = holds_tokens(b);
    double sa = a[LINATTN_MPI_E_SHIFT], sb = b[LINATTN_MPI_E_SHIFT];
    double s = ha && !hb ? sa : hb && !ha ? sb : sa > sb ? sa : sb;
    double ea = (ha && hb ? sa - s : 0) + A, eb = ha && hb ? sb - s : 0;
    double fa = ea != 0 ? exp(ea) : 1, fb = eb != 0 ? exp(eb) : 1;
    b[LINATTN_MPI_E_FLAGS] =
        (double)(linattn_mpi_i_flags(a) | linattn_mpi_i_flags(b));
    if (fa == 1 && fb == 1) {
        for (int64_t i = H; i < H + len; i++)
            b[i] += a[i];
    } else {
        for (int64_t i = H; i < H + len; i++)
            b[i] = fb * b[i] + fa * a[i];
    }
    b[LINATTN_MPI_E_SHIFT] = s;
    b[LINATTN_MPI_E_TOKHI] += a[LINATTN_MPI_E_TOKHI];
    b[LINATTN_MPI_E_TOKLO] += a[LINATTN_MPI_E_TOKLO];
    /* the count forgets as the sums do (c = e^{A} c_a + c_b) */
    b[LINATTN_MPI_E_MASS] += (A != 0 ? exp(A) : 1) * a[LINATTN_MPI_E_MASS];
    /* finite however long the stream (a sum of logs past -DBL_MAX: its
     * factor is 0 all the same) */
    double total = a[LINATTN_MPI_E_DECAY] + A;
    b[LINATTN_MPI_E_DECAY] = total < -DBL_MAX ? -DBL_MAX : total;
}

void linattn_mpi_i_compose(const double *a, double *b)
{
    add_one(a, b, (int64_t)a[LINATTN_MPI_E_LEN]);
}

/* b = a + b for count elements of whole sums (no decay: commutative). */
static void add_elems(const double *a, double *b, int64_t count)
{
    for (int64_t c = 0; c < count; c++) {
        int64_t len = (int64_t)a[LINATTN_MPI_E_LEN];
        add_one(a, b, len);
        a += H + len;
        b += H + len;
    }
}

/* out = a then b in a segmented scan, a the earlier element, out either
 * of them (b is scratch when out is a): b alone when it starts a segment
 * (what came before it belongs to another sequence, and so does its
 * decay: only a failure crosses), else the composition. */
static void seg_add(const double *a, double *b, double *out, int64_t len)
{
    unsigned fa = linattn_mpi_i_flags(a), fb = linattn_mpi_i_flags(b);
    if (fb & LINATTN_MPI_F_START) {
        if (out != b)
            memcpy(out, b, (size_t)(H + len) * sizeof *out);
        out[LINATTN_MPI_E_FLAGS] = (double)(fb | (fa & LINATTN_MPI_F_FAIL));
        return;
    }
    add_one(a, b, len);
    if (out != b)
        memcpy(out, b, (size_t)(H + len) * sizeof *out);
}

/* inout = in + inout (MPI_User_function). */
static void add_states(void *invec, void *inoutvec, int *count,
                       MPI_Datatype *type)
{
    (void)type;
    add_elems(invec, inoutvec, *count);
}

int linattn_mpi_i_allreduce(MPI_Comm comm, double *elems, int64_t count,
                            int64_t len)
{
    MPI_Datatype type;
    MPI_Op op;
    /* Sizes were checked against INT_MAX with the arguments. */
    if (MPI_Type_contiguous((int)(H + len), MPI_DOUBLE, &type) != MPI_SUCCESS)
        return LINATTN_EMPI;
    if (MPI_Type_commit(&type) != MPI_SUCCESS ||
        MPI_Op_create(add_states, 1, &op) != MPI_SUCCESS) {
        MPI_Type_free(&type);
        return LINATTN_EMPI;
    }
    int ok = MPI_Allreduce(MPI_IN_PLACE, elems, (int)count, type, op, comm) ==
             MPI_SUCCESS;
    MPI_Op_free(&op);
    MPI_Type_free(&type);
    return ok ? 0 : LINATTN_EMPI;
}

/*
 * Recursive doubling.  Before the step of distance 2^j, partial on rank
 * r holds the sum over the ranks of its aligned block of 2^j ranks (those
 * that exist), result the sum over the ranks below r seen so far.  Rank r
 * and its partner r XOR 2^j swap partials; both add the partner's into
 * partial, and the one above adds it into result too (the partner's block
 * lies wholly below it, and is complete: every rank of a block below an
 * existing rank exists).  A partner beyond the last rank is skipped: its
 * block would only ever reach ranks that do not exist either.  Each sum
 * keeps rank order (the block below first), which the segmented
 * combination needs; the reverse scan runs the same steps on the ranks
 * numbered from the last.
 */
static int scan(MPI_Comm comm, int reverse, double *partial, double *result,
                double *recv, int64_t count, int64_t len)
{
    int rank, size;
    MPI_Datatype type;
    if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS ||
        MPI_Comm_size(comm, &size) != MPI_SUCCESS)
        return LINATTN_EMPI;
    for (int64_t c = 0; c < count; c++) {
        double *r = result + c * (H + len);
        memset(r, 0, (size_t)(H + len) * sizeof *r);
        linattn_mpi_i_elem_head(r, len, 0, 0);
    }
    if (MPI_Type_contiguous((int)(H + len), MPI_DOUBLE, &type) != MPI_SUCCESS)
        return LINATTN_EMPI;
    if (MPI_Type_commit(&type) != MPI_SUCCESS) {
        MPI_Type_free(&type);
        return LINATTN_EMPI;
    }
    int me = reverse ? size - 1 - rank : rank, ok = 1;
    for (int dist = 1; ok && dist < size; dist <<= 1) {
        int partner = me ^ dist;
        if (partner >= size)
            continue;
        int peer = reverse ? size - 1 - partner : partner;
        ok = MPI_Sendrecv(partial, (int)count, type, peer, 0, recv,
                          (int)count, type, peer, 0, comm,
                          MPI_STATUS_IGNORE) == MPI_SUCCESS;
        if (!ok)
            break;
        for (int64_t c = 0; c < count; c++) {
            double *in = recv + c * (H + len);
            double *p = partial + c * (H + len), *r = result + c * (H + len);
            if (partner < me) {
                seg_add(in, r, r, len);
                seg_add(in, p, p, len);
            } else { /* in, scratch, takes the sum first */
                seg_add(p, in, p, len);
            }
        }
    }
    MPI_Type_free(&type);
    return ok ? 0 : LINATTN_EMPI;
}

/* Without elements marked F_START the segmented sums are the plain ones,
 * bit for bit (a + b == b + a). */
int linattn_mpi_i_exscan(MPI_Comm comm, double *partial, double *result,
                         double *recv, int64_t count, int64_t len)
{
    return scan(comm, 0, partial, result, recv, count, len);
}

int linattn_mpi_i_segmented_exscan(MPI_Comm comm, int reverse, double *partial,
                                   double *result, double *recv,
                                   int64_t count, int64_t len)
{
    return scan(comm, reverse, partial, result, recv, count, len);
}
