/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * linattn_mpi.h -- sequence-parallel linear attention across MPI ranks
 * (liblinattn_mpi, on liblinattn).
 *
 * Each rank holds a contiguous block of a sequence's rows, in rank order:
 * rank 0 the first rows, rank P-1 the last; any rank may hold none.  The
 * state (S, z) is additive, so
 *
 *   - non-causal attention is: local state, one MPI_Allreduce of the
 *     states, local queries;
 *   - causal attention is: local state, one exclusive scan of the states
 *     (the prefix: rank r gets the state of every earlier rank's keys),
 *     then the local rows continue causally from that prefix
 *     (linattn_d_state_causal).  The scan is the library's own recursive
 *     doubling, ceil(log2 P) exchanges (MPI_Sendrecv) of one state set
 *     each, not MPI_Exscan, which Open MPI 4.1 runs as a chain of P - 1
 *     hops.
 *
 * A reduction moves 8 (m (e + 1) + 7) bytes per problem (head), however
 * long the sequence.  doc/mpi.md has the algorithms, the performance model
 * and measurements.
 *
 * Conventions (on top of linattn.h's)
 *
 *   - Arguments: the serial call's, with the communicator after the plan;
 *     the -i of an argument counts the communicator (argument 2).  Sizes
 *     nq, nk, n and the arrays are this rank's rows; every other argument
 *     (plan, batch, heads) must agree across the ranks.
 *   - Collective: every function here is collective over comm.  Every
 *     rank must call it, with the same communicator, in the same order as
 *     the other collective calls on that communicator (as for any MPI
 *     collective).  Every rank returns the same status.
 *   - Agreement before data moves: each rank checks its own arguments
 *     (the serial call's checks: linattn_d_attention_check and friends),
 *     then one small MPI_Allreduce agrees on them: if any rank's are
 *     invalid, every rank returns the status of the first such rank (in
 *     rank order) and nothing is computed or written anywhere.  The same
 *     reduction compares the kind of call: ranks in different calls of
 *     this library on one communicator (attention here, causal there; an
 *     allreduce here, an exscan there; a save here, a load there) all
 *     return LINATTN_EMISMATCH instead of waiting in different
 *     collectives (the attention calls and their batched forms are one
 *     kind, as are the causal ones).  Plans are
 *     compared by their fingerprints (linattn_d_plan_fingerprint: map, W,
 *     seed, sizes, options, precision), together with batch and heads:
 *     any difference is LINATTN_EMISMATCH on every rank, nothing written.
 *     The random maps draw W from the seed, so equal seeds give the same
 *     W on every rank (tested).
 *   - Run-time conditions after the agreement (LINATTN_EDENOM,
 *     LINATTN_EOVERFLOW, LINATTN_ENOMEM) are agreed on at the end: every
 *     rank returns the status of the first failing problem (in (b, h)
 *     order; ties: the first failing rank, whose failing row comes first
 *     in the concatenated sequence), and for EDENOM and EOVERFLOW
 *     bad_row is that global row index (counted over the concatenated
 *     sequence), the same on every rank.  So, as a serial call reports
 *     the first row that fails whatever its kind, a bad normalizer on
 *     one rank and an overflow on another give the status of the
 *     earlier row.  Outputs then hold what each rank's local call left:
 *     rows before the bad one hold results (on every rank); an EDENOM
 *     row is untouched, an EOVERFLOW row untouched or holding its
 *     non-finite values; later rows hold results or their previous
 *     contents; for ENOMEM see each function.
 *   - Finite inputs give finite outputs or a status (linattn.h), across
 *     ranks too.  Each reduction carries, in a header word it already
 *     had, whether a state holds NaN or Inf and whether a rank's own
 *     sums overflowed; after it, sums of states without NaN and Inf that
 *     left the working precision's range (float: the float copy's) are
 *     refused as linattn_d_state_merge refuses them: the state
 *     collectives return LINATTN_EOVERFLOW with every state unchanged;
 *     the non-causal calls return it at the first query row (global row
 *     0 of the problem: every row reads the sum), with nothing of that
 *     problem written; in the causal calls a rank whose prefix left the
 *     range returns it at its first row, writing none, and the rank
 *     where the sums first overflow reports the row where they do, as
 *     the serial call would.  Sums are judged as the ranks form them
 *     (each rank's keys, then states added in the reduction's order): a
 *     value that one order rounds past the range and another does not,
 *     or partial sums that cancel later, may be refused where the serial
 *     call, adding in its order, is not.  NaN and Inf from the inputs
 *     still propagate with status 0, as serially (the sum is taken),
 *     except beside a rank whose own sums overflowed: its sums cannot
 *     travel, and the call is LINATTN_EOVERFLOW.
 *   - Not agreed, returned on the rank where it happens, without
 *     communication: LINATTN_EMPIUSE when MPI is not initialized, already
 *     finalized, or called from a thread that may not (Threads below);
 *     LINATTN_EMPI when MPI fails to answer those queries; and the
 *     communicator's -i for MPI_COMM_NULL or an inter-communicator.  In
 *     LAPACKE's order, an invalid argument before the communicator (the
 *     plan; the states and count; the state and path) is returned instead
 *     of either.  A rank that cannot communicate cannot agree: such a
 *     program is erroneous on every rank that makes the call.
 *   - MPI errors: calls on comm follow comm's error handler.  With MPI's
 *     default (MPI_ERRORS_ARE_FATAL) a failing MPI call ends the job, as
 *     in any MPI program; with MPI_ERRORS_RETURN the library returns
 *     LINATTN_EMPI on the rank that saw it (other ranks may then block).
 *   - A private communicator: the causal calls and linattn_mpi_d_state_
 *     exscan send point-to-point messages, which must never match the
 *     caller's receives, so they run on a duplicate of comm, made by the
 *     first such call on comm (MPI_Comm_dup: collective, as the call is)
 *     and cached on comm as an attribute; freeing comm (or
 *     MPI_Finalize) frees it.
 *   - Threads: MPI started either way works: plain MPI_Init (Fortran's
 *     call MPI_Init(ierr), thread level MPI_THREAD_SINGLE with most MPIs)
 *     or MPI_Init_thread at any level.  The library calls MPI only from
 *     the calling thread, outside its own OpenMP teams, whose threads
 *     compute and never call MPI; under MPI_THREAD_SINGLE it runs them
 *     exactly as under MPI_THREAD_FUNNELED (what hybrid MPI + OpenMP
 *     codes rely on with every MPI in use).  A program that wants no
 *     threads besides its own beside MPI sets OMP_NUM_THREADS=1 (or
 *     omp_set_num_threads(1)), which every call then honours; the level
 *     the library was designed for is LINATTN_MPI_THREAD_LEVEL.  Below
 *     MPI_THREAD_SERIALIZED the calls must come from the thread that
 *     initialized MPI.  Checked on every call: LINATTN_EMPIUSE when MPI
 *     is not initialized, already finalized or called from another
 *     thread (linattn_mpi_strerror names the case, the level and the
 *     call to make), apart from LINATTN_EMPI, an MPI call that failed.
 *     Every function here is called by one thread of a rank at a time
 *     (as collectives on one communicator must be; MPI_THREAD_MULTIPLE
 *     does not lift that); each function's "Threads:" says what else it
 *     shares.
 *   - Results equal the serial call on the concatenated sequence to
 *     rounding (tested to 1e-12 relative in double, 1e-5 in float, at
 *     1 to 8 ranks, uneven splits and ranks without rows), and causal
 *     outputs never depend on later tokens, bit for bit, across ranks too.
 *     With one rank they are the serial call's, bit for bit.
 *   - Exponential maps: states carry a stabilizing shift (linattn.h,
 *     linattn_d_state_shift).  The reductions combine states pairwise,
 *     each pair brought to the larger of its two shifts before adding, so
 *     the prefix of rank r only ever takes the largest shift of ranks
 *     before r: nothing overflows or underflows for want of a common shift,
 *     and no prefix depends on later ranks' keys.
 *   - Decay (linattn_opts.log_decay, extras.gates, a batched call's
 *     extras.head_decays; doc/decay.md): the causal forward calls take
 *     it, as the serial causal calls do.  A rank's scan element is then
 *     the pair (A, S) of its rows' total log decay (a sum of logs, in
 *     double: the decay itself underflows any float) and their state
 *     decayed to its last row; the scan composes (A1, S1) then (A2, S2)
 *     as (A1 + A2, e^{A2} S1 + S2), the factor folded into the shift of
 *     the maps that carry one and otherwise into the factor that brings
 *     a pair to one shift: every exponent <= 0, nothing overflows.  With
 *     packed sequences a sequence's start resets both.  The prefix a
 *     rank receives is the state as of the row before its first, which
 *     the serial call from a state ages by e^{b_i} at row i.  The
 *     non-causal calls refuse a decayed plan (-1, agreed; the serial
 *     library has no non-causal decay) and gates (-i of ex), and so do
 *     the backward calls (not across ranks yet); the state collectives
 *     add states as they are (a sum, not a decayed composition) and
 *     checkpoints carry the decay.
 */
#ifndef LINATTN_MPI_H
#define LINATTN_MPI_H

#include <stdint.h>
#include <mpi.h>
#include "linattn.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(LINATTN_MPI_BUILDING) && defined(__GNUC__)
#define LINATTN_MPI_API __attribute__((visibility("default")))
#else
#define LINATTN_MPI_API
#endif

/* The MPI_Init_thread level the library is designed for (see Threads
 * above: MPI_THREAD_SINGLE is accepted and run alike). */
#define LINATTN_MPI_THREAD_LEVEL MPI_THREAD_FUNNELED

/* const char *linattn_mpi_strerror(int status)
 * linattn_strerror(status), except for LINATTN_EMPIUSE, which it explains
 * from MPI's state at the time of this call: MPI not initialized (and the
 * call to make), already finalized, or initialized at MPI_THREAD_SINGLE
 * or MPI_THREAD_FUNNELED with this call on another thread than the one
 * that initialized it (and the level to start MPI at instead).  Never
 * NULL; the strings are static.  Thread-safe (MPI's queries are callable
 * from any thread, before MPI_Init and after MPI_Finalize too). */
LINATTN_MPI_API const char *linattn_mpi_strerror(int status);

/* int linattn_mpi_refuse(MPI_Comm comm, int comm_arg, int status)
 * For interfaces over this library (the Fortran module linattn_mpi): a
 * call refused on this rank before reaching C (status, nonzero: the -i of
 * the C argument found invalid, or a LINATTN_E* code) takes part in the
 * agreement of whatever collective call of this library the other ranks
 * of comm make, so that they return the agreed status instead of waiting;
 * returns that status (the first failing rank's, in rank order).  When
 * comm cannot be used (see "Not agreed" above) nothing is communicated
 * and the result is status if it names an argument before the
 * communicator (-status < comm_arg), else -comm_arg, LINATTN_EMPIUSE or
 * LINATTN_EMPI, as the call would have returned.  Collective (as the call
 * it stands for).
 * Threads: as the call it stands for.  Errors: -3 status 0 (returned
 * without communicating: the other ranks then wait, an erroneous
 * program); otherwise the agreed status. */
LINATTN_MPI_API int linattn_mpi_refuse(MPI_Comm comm, int comm_arg,
                                       int status);

/*
 * The precision template: MX names this library's functions, X the
 * serial library's types, R the real type.
 */
#define LINATTN_MPI_DEFINE_API(MX, X, R)                                      \
                                                                              \
/* int linattn_mpi_d_attention(const linattn_d_plan *plan, MPI_Comm comm,    \
 *         int layout, int64_t nq, int64_t nk, const double *q, int64_t ldq, \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,       \
 *         double *out, int64_t ldout, int64_t *bad_row)                     \
 * Distributed non-causal attention: every rank's queries attend to the     \
 * keys of every rank, out_i = phi(q_i)^T S / (phi(q_i)^T z + eps) with S,  \
 * z summed over all ranks' keys (LINATTN_DENOM_COUNT: the count is every  \
 * rank's nk added).  This rank holds nq queries (Q nq x d,                 \
 * out nq x e) and nk keys (K nk x d, V nk x e), in layout.  Local state,   \
 * one MPI_Allreduce of 8 (m (e + 1) + 7) bytes, local queries; work          \
 * O((nq + nk) m e) per rank, memory as linattn_d_attention.                \
 * Collective.  ENOMEM while building the local state: every rank returns   \
 * it with nothing written anywhere; ENOMEM in a query: as EDENOM, rows of  \
 * other ranks written.  EOVERFLOW: a query's numerator or quotient beyond  \
 * the range (rows as at linattn_d_state_query), or the summed state        \
 * beyond it (refused: row 0, nothing written; see Finite inputs above).   \
 * bad_row (if not NULL, written on EDENOM and EOVERFLOW only) is global:   \
 * the query's row in the concatenation of every rank's queries.           \
 * Threads: the plan may be used by other threads at the same time (it is  \
 * immutable); this call is one thread's at a time per rank (see above).  \
 * Errors: -1 plan NULL; -2 comm; -3 layout; -4 nq < 0; -5 nk < 0; -6 q     \
 * NULL; -7 ldq; -8 k NULL; -9 ldk; -10 v NULL; -11 ldv; -12 out NULL;      \
 * -13 ldout; LINATTN_ESIZE; LINATTN_ENONFINITE; LINATTN_EMISMATCH;         \
 * LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW;                         \
 * LINATTN_EMPIUSE; LINATTN_EMPI. */                                          \
LINATTN_MPI_API int MX(attention)(const X(plan) *plan, MPI_Comm comm,         \
        int layout, int64_t nq, int64_t nk, const R *q, int64_t ldq,          \
        const R *k, int64_t ldk, const R *v, int64_t ldv, R *out,             \
        int64_t ldout, int64_t *bad_row);                                     \
                                                                              \
/* int linattn_mpi_d_causal(const linattn_d_plan *plan, MPI_Comm comm,       \
 *         int layout, int64_t n, const double *q, int64_t ldq,              \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,       \
 *         double *out, int64_t ldout, int64_t *bad_row)                     \
 * Distributed causal attention: global row i sees the global keys j <= i     \
 * (LINATTN_DENOM_COUNT: its count is i + 1, i global), and with a decayed    \
 * plan (linattn_opts.log_decay = ln gamma) key j with weight gamma^(i - j),  \
 * as linattn_d_causal.  This rank holds n rows of Q, K (n x d), V and out (n \
 * x e).  Each rank but the last builds the state of its keys (decayed to its \
 * last row); one exclusive scan of 8 (m (e + 1) + 7)-byte messages gives     \
 * rank r the state of every earlier rank's keys (the prefix, in ceil(log2 P) \
 * exchanges; decayed, the scan composes (A, S) pairs: see above), from which \
 * its rows continue causally (linattn_d_causal_ex from a state).  Work per   \
 * rank: linattn_d_causal on its rows plus one state pass over its keys (not  \
 * on the last rank, and not with one rank: then this is linattn_d_causal bit \
 * for bit).  Collective.                                                     \
 * ENOMEM: every rank returns it; the failing rank has written nothing and  \
 * any other rank (before or after it) may have written its rows, the rest \
 * keeping their contents.  EOVERFLOW: the first global row whose sums     \
 * over keys j <= i (or numerator, or quotient) leave the range, rows       \
 * before it written on every rank (see Finite inputs above).  bad_row     \
 * (EDENOM and EOVERFLOW only) is the global row.                           \
 * Threads: as linattn_mpi_d_attention.  Errors:                            \
 * -1 plan; -2 comm; -3 layout; -4 n < 0; -5 q; -6 ldq; -7 k; -8 ldk; -9 v; \
 * -10 ldv; -11 out; -12 ldout; LINATTN_ESIZE (also more than 2^63 - 1      \
 * tokens in all); LINATTN_ENONFINITE; LINATTN_EMISMATCH; LINATTN_ENOMEM;   \
 * LINATTN_EDENOM; LINATTN_EOVERFLOW; LINATTN_EMPIUSE; LINATTN_EMPI. */       \
LINATTN_MPI_API int MX(causal)(const X(plan) *plan, MPI_Comm comm,            \
        int layout, int64_t n, const R *q, int64_t ldq, const R *k,           \
        int64_t ldk, const R *v, int64_t ldv, R *out, int64_t ldout,          \
        int64_t *bad_row);                                                    \
                                                                              \
/* int linattn_mpi_d_batched_attention(const linattn_d_plan *plan,           \
 *         MPI_Comm comm, int layout, int64_t batch, int64_t heads,          \
 *         int64_t nq, int64_t nk, const double *q,                          \
 *         const linattn_strides *sq, const double *k,                       \
 *         const linattn_strides *sk, const double *v,                       \
 *         const linattn_strides *sv, double *out,                           \
 *         const linattn_strides *sout, linattn_where *bad)                  \
 * linattn_mpi_d_attention on batch x heads problems (strides and their     \
 * policy: linattn_d_batched_attention), with one MPI_Allreduce for all of  \
 * them: 8 batch heads (m (e + 1) + 7) bytes.  batch and heads must agree     \
 * across ranks; nq and nk are this rank's rows of every problem.  The      \
 * problems' local work runs one after another on this rank (each call     \
 * threads its rows as linattn_d_attention does).  Extra memory: one state \
 * element per problem, (m (e + 1) + 7) batch heads doubles, besides one      \
 * problem's workspace.  *bad (if not NULL,                                 \
 * written on a failure): the first failing problem (b, h) and, for         \
 * EDENOM and EOVERFLOW, its global row (else -1); a problem whose summed  \
 * state leaves the range fails at row 0, nothing of it written.           \
 * Collective.  Threads: as                                                 \
 * linattn_mpi_d_attention.  Errors: -1 plan; -2                            \
 * comm; -3 layout; -4 batch < 0; -5 heads < 0; -6 nq < 0; -7 nk < 0;       \
 * -8 q; -9 sq; -10 k; -11 sk; -12 v; -13 sv; -14 out; -15 sout;            \
 * LINATTN_ESIZE; LINATTN_ENONFINITE; LINATTN_EMISMATCH; LINATTN_ENOMEM;    \
 * LINATTN_EDENOM; LINATTN_EOVERFLOW; LINATTN_EMPIUSE; LINATTN_EMPI. */       \
LINATTN_MPI_API int MX(batched_attention)(const X(plan) *plan, MPI_Comm comm, \
        int layout, int64_t batch, int64_t heads, int64_t nq, int64_t nk,     \
        const R *q, const linattn_strides *sq, const R *k,                    \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        R *out, const linattn_strides *sout, linattn_where *bad);             \
                                                                              \
/* int linattn_mpi_d_batched_causal(const linattn_d_plan *plan,              \
 *         MPI_Comm comm, int layout, int64_t batch, int64_t heads,          \
 *         int64_t n, const double *q, const linattn_strides *sq,            \
 *         const double *k, const linattn_strides *sk, const double *v,      \
 *         const linattn_strides *sv, double *out,                           \
 *         const linattn_strides *sout, linattn_where *bad)                  \
 * linattn_mpi_d_causal on batch x heads problems with one exclusive scan   \
 * (ceil(log2 P) exchanges) for all of them, a decayed plan's gamma for      \
 * every head (a gamma per head: linattn_mpi_d_batched_causal_ex).          \
 * Extra memory: three sets of                                              \
 * (m (e + 1) + 7) batch heads doubles (the local states, the prefix, the     \
 * scan's receive buffer), besides one problem's workspace.  As             \
 * linattn_mpi_d_batched_attention otherwise (ENOMEM: the failing problem   \
 * has written nothing; other problems, here and on other ranks, may have \
 * written their rows).  Errors: -1                                         \
 * plan; -2 comm; -3 layout; -4 batch; -5 heads; -6 n < 0; -7 q; -8 sq;     \
 * -9 k; -10 sk; -11 v; -12 sv; -13 out; -14 sout; LINATTN_ESIZE;           \
 * LINATTN_ENONFINITE; LINATTN_EMISMATCH; LINATTN_ENOMEM; LINATTN_EDENOM;   \
 * LINATTN_EOVERFLOW (the failing problem's global row, as the single      \
 * call's); LINATTN_EMPIUSE; LINATTN_EMPI. */                                 \
LINATTN_MPI_API int MX(batched_causal)(const X(plan) *plan, MPI_Comm comm,    \
        int layout, int64_t batch, int64_t heads, int64_t n, const R *q,      \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, R *out,                        \
        const linattn_strides *sout, linattn_where *bad);                     \
                                                                              \
/* int linattn_mpi_d_batched_causal_ex(const linattn_d_plan *plan,            \
 *         MPI_Comm comm, int layout, int64_t batch, int64_t heads,           \
 *         int64_t n, q, sq, k, sk, v, sv, double *out,                       \
 *         const linattn_strides *sout, const linattn_d_extras *ex,           \
 *         linattn_where *bad)                                                \
 * linattn_mpi_d_batched_causal with the parts of ex it takes, each problem   \
 * (b, h) as linattn_d_batched_causal_ex takes them on the concatenated       \
 * sequence: den (normalizers out, dense: problem p = b heads + h's n at den  \
 * + p n, this rank's rows), weights and gates (this rank's key weights and   \
 * log gates, dense as den), and head_decays (heads log decays, each <= 0 and \
 * finite, added to the plan's: head h forgets by exp(ln gamma +              \
 * head_decays[h]) per token, RetNet's gamma per head; the same on every      \
 * rank).  Each problem's scan element carries its rows' log decay as         \
 * linattn_mpi_d_causal's; a head's decay reaches the serial state update as  \
 * a gate of every row added to the row's own (in float rounded to float      \
 * there), 256 rows at a time: no copy that grows with n.  ex NULL or all     \
 * absent: linattn_mpi_d_batched_causal.  Statuses, what is written on a      \
 * failure, bad and memory as linattn_mpi_d_batched_causal; a refusal writes  \
 * nothing on any rank.  Collective.  Threads: as linattn_mpi_d_attention.    \
 * Errors: -1 .. -14 as linattn_mpi_d_batched_causal (-13 also out meeting    \
 * the weights or gates); -15 ex: den meeting another array, a weight         \
 * negative, NaN or Inf, a gate above 0, a head's decay above 0 or not        \
 * finite, a reserved word not 0, or a part it does not take (state, absorb,  \
 * offsets, key_offsets, states, dweights, dstates, dstate_end: packed        \
 * batches across ranks are not taken); LINATTN_ESIZE; LINATTN_ENONFINITE     \
 * (also gates, under check_finite); LINATTN_EMISMATCH (also head_decays that \
 * differ across ranks, or given on some ranks only); LINATTN_ENOMEM;         \
 * LINATTN_EDENOM; LINATTN_EOVERFLOW; LINATTN_EMPIUSE; LINATTN_EMPI. */       \
LINATTN_MPI_API int MX(batched_causal_ex)(const X(plan) *plan,                \
        MPI_Comm comm, int layout, int64_t batch, int64_t heads, int64_t n,   \
        const R *q, const linattn_strides *sq, const R *k,                    \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        R *out, const linattn_strides *sout, const X(extras) *ex,             \
        linattn_where *bad);                                                  \
                                                                              \
/* int linattn_mpi_d_attention_ex(const linattn_d_plan *plan,                 \
 *         MPI_Comm comm, int layout, int64_t nq, int64_t nk,                 \
 *         const double *q, int64_t ldq, const double *k, int64_t ldk,        \
 *         const double *v, int64_t ldv, double *out, int64_t ldout,          \
 *         const linattn_d_extras *ex, int64_t *bad_row)                      \
 * linattn_mpi_d_attention with the parts of ex a distributed call takes:     \
 * den (this rank's normalizers out), weights (this rank's keys' weights; the \
 * count of LINATTN_DENOM_COUNT is every rank's weight added) and a packed    \
 * stream: ex->offsets are the global offsets of nseq sequences, the same on  \
 * every rank, over the concatenation of every rank's rows (0 to the sum of   \
 * every rank's nk), and this rank holds the rows [g0, g0 + nk) of it (g0     \
 * the rows of the ranks before it; nq == nk: a row is a query and a key).    \
 * Each sequence's queries attend to its keys wherever they lie: a sequence   \
 * within one rank is that rank's serial packed call; the two that cross its  \
 * ends take the keys other ranks hold of them from two segmented exclusive   \
 * scans (one forward, one from the last rank down: 2 ceil(log2 P) exchanges  \
 * of one state each), however many sequences there are.  Per-sequence       \
 * states (ex->states: nseq of them on every rank, with offsets): sequence    \
 * s's queries see its state's keys and its own (as linattn_d_attention_ex);  \
 * states[s] is read on the rank holding the sequence's first row (it joins   \
 * the forward scan's element there; the other ranks' entries are checked,    \
 * not read) and with ex->absorb = 1 the rank holding its last row writes     \
 * the final state into its states[s], the other ranks' entries unchanged     \
 * (an empty sequence's are neither read nor written); on any error, on any   \
 * rank, no rank's states change (finals are built in copies: memory O(m e)   \
 * per sequence ending here).  ex NULL or all absent:                         \
 * linattn_mpi_d_attention.  Statuses and bad_row as                          \
 * linattn_mpi_d_attention (a boundary sequence whose sums leave the range:   \
 * LINATTN_EOVERFLOW at its first row here, nothing of it written).  Errors:  \
 * -1 .. -13 as linattn_mpi_d_attention; -14 ex: as at linattn_d_attention_ex \
 * (checked on this rank's rows; gates too: non-causal attention does not     \
 * decay, nor does a decayed plan, -1), and a state, key_offsets or dweights  \
 * (not taken), offsets with nq != nk, not starting at 0, decreasing, meeting \
 * out or den, or not ending at every rank's rows in all (agreed: every rank  \
 * returns -14), states without offsets, an entry NULL or of another plan,    \
 * the array meeting out or den, absorb not 0 or 1, or 1 without states or    \
 * with a state twice; LINATTN_EMISMATCH also for offsets that differ across  \
 * ranks, or states given (absorbing) on some ranks and not on others;        \
 * LINATTN_ENOMEM; statuses as linattn_mpi_d_attention otherwise.            \
 * Collective.                                                                \
 * Threads: as linattn_mpi_d_attention; absorbing needs exclusive access to   \
 * the states, else they are only read. */                                    \
LINATTN_MPI_API int MX(attention_ex)(const X(plan) *plan, MPI_Comm comm,      \
        int layout, int64_t nq, int64_t nk, const R *q, int64_t ldq,          \
        const R *k, int64_t ldk, const R *v, int64_t ldv, R *out,             \
        int64_t ldout, const X(extras) *ex, int64_t *bad_row);                \
                                                                              \
/* int linattn_mpi_d_causal_ex(const linattn_d_plan *plan, MPI_Comm comm,     \
 *         int layout, int64_t n, const double *q, int64_t ldq,               \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,        \
 *         double *out, int64_t ldout, const linattn_d_extras *ex,            \
 *         int64_t *bad_row)                                                  \
 * linattn_mpi_d_causal with den, weights and a packed stream as at           \
 * linattn_mpi_d_attention_ex, and gates (this rank's rows' log gates,        \
 * ex->gates, as linattn_d_causal_ex takes them: row i sees key j <= i of its \
 * sequence with weight exp(b_i - b_j), b the running sum of ln gamma + g     \
 * over the concatenated stream): each sequence restarts, wherever it starts, \
 * and no output reads a token of another sequence.  One segmented exclusive  \
 * scan (ceil(log2 P) exchanges of one state): each rank sends the state of   \
 * its keys after its last sequence boundary, decayed to its last row, with   \
 * their total log decay, marked as a segment's start when it has a boundary  \
 * ((a, fa) + (b, fb) = (fb ? b : a + b, fa | fb), with decay (A_b, fb ? S_b  \
 * : e^{A_b} S_a + S_b)), so that rank r receives the keys of its first       \
 * sequence that earlier ranks hold, decayed to its first row; its rows of    \
 * that sequence continue from them, the sequences that start on it run as    \
 * the serial packed call.  Per-sequence states as at                         \
 * linattn_mpi_d_attention_ex: each sequence restarts from its state (read    \
 * where its first row is, aged over the sequence's rows, carried by the scan \
 * to the ranks after), and with absorb its final state is written where its  \
 * last row is.  With one rank: linattn_d_causal_ex on the same rows, to      \
 * rounding.  Statuses and bad_row as linattn_mpi_d_causal.  Errors: -1 ..    \
 * -12 as linattn_mpi_d_causal; -13 ex (as at linattn_mpi_d_attention_ex; a   \
 * gate above 0, or NaN under check_finite: LINATTN_ENONFINITE); statuses as  \
 * linattn_mpi_d_causal otherwise.  Collective.  Threads: as                  \
 * linattn_mpi_d_attention_ex. */                                             \
LINATTN_MPI_API int MX(causal_ex)(const X(plan) *plan, MPI_Comm comm,         \
        int layout, int64_t n, const R *q, int64_t ldq, const R *k,           \
        int64_t ldk, const R *v, int64_t ldv, R *out, int64_t ldout,          \
        const X(extras) *ex, int64_t *bad_row);                               \
                                                                              \
/* ---- Training: the distributed backward (doc/mpi.md, Training).  The       \
 * forward that hands back the normalizers is linattn_mpi_d_attention_ex or   \
 * _causal_ex with ex.den.  Each rank passes its rows of the forward's        \
 * inputs, out and den, and G = dL/dout; it gets its rows of dq, dk, dv       \
 * (and dL/dw of its keys), and dW, db summed over every rank's rows (the     \
 * same on every rank).  Gradients as the serial backward's on the            \
 * concatenated sequence, to rounding (with one rank: the serial call's,      \
 * causal bit for bit). ---- */                                               \
                                                                              \
/* int linattn_mpi_d_attention_backward(const linattn_d_plan *plan,           \
 *         MPI_Comm comm, int layout, int64_t nq, int64_t nk,                 \
 *         const double *q, int64_t ldq, const double *k, int64_t ldk,        \
 *         const double *v, int64_t ldv, const double *out, int64_t ldout,    \
 *         const double *den, const double *g, int64_t ldg, double *dq,       \
 *         int64_t lddq, double *dk, int64_t lddk, double *dv, int64_t lddv,  \
 *         double *dw, int64_t lddw, double *db,                              \
 *         const linattn_d_state *state, int64_t *bad_row)                    \
 * Gradients through out = linattn_mpi_d_attention(Q, K, V) (out and den as   \
 * linattn_mpi_d_attention_ex wrote them): dS = sum_i phi(q_i) g_i^T, dz =    \
 * sum_i phi(q_i) h_i over every rank's queries, dphi(q_i) = S g_i + z h_i,   \
 * dphi(k_j) = dS v_j + dz, dv_j = dS^T phi(k_j) (linattn_d_attention_        \
 * backward's maths).  Each rank: the state of its keys, one MPI_Allreduce    \
 * of the states (none when state hands over the global one: a state of       \
 * every rank's keys, the same on every rank, e.g. the forward's from         \
 * linattn_mpi_d_state_allreduce), its queries' pass                          \
 * (linattn_d_state_query_backward), one MPI_Allreduce of their d[S z]        \
 * (8 (m (e + 1) + 7) bytes), its keys' pass, and for dw or db one            \
 * MPI_Allreduce of W's rows (d + 1) doubles: work as the serial backward     \
 * on its rows.  dw, db (NULL: not computed; given on every rank or on none)  \
 * are written only when every rank succeeded.  Collective.  EOVERFLOW as     \
 * the serial call's (the summed state beyond the range: global row 0,        \
 * nothing written); bad_row (EDENOM, EOVERFLOW) the global query row, or     \
 * -1 when only a key's gradient or dw, db left the range.  An EDENOM found   \
 * by a rank's checks is agreed after the state reduction: nothing written    \
 * anywhere.  Errors: -1 plan (NULL, or decayed: non-causal attention has   \
 * no order to decay along); -2 comm; -3 .. -25 as the serial call's -2      \
 * .. -24 (each rank's rows); -26 state of another map or sizes, or (on       \
 * every rank) not holding every rank's keys; LINATTN_ESIZE;                  \
 * LINATTN_ENONFINITE; LINATTN_EMISMATCH (also dw, db or state given on       \
 * some ranks only); LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW;       \
 * LINATTN_EMPIUSE; LINATTN_EMPI.  Threads: as linattn_mpi_d_attention. */    \
LINATTN_MPI_API int MX(attention_backward)(const X(plan) *plan,               \
        MPI_Comm comm, int layout, int64_t nq, int64_t nk, const R *q,        \
        int64_t ldq, const R *k, int64_t ldk, const R *v, int64_t ldv,        \
        const R *out, int64_t ldout, const R *den, const R *g, int64_t ldg,   \
        R *dq, int64_t lddq, R *dk, int64_t lddk, R *dv, int64_t lddv, R *dw, \
        int64_t lddw, R *db, const X(state) *state, int64_t *bad_row);        \
                                                                              \
/* int linattn_mpi_d_attention_backward_ex(plan, comm, layout, nq, nk, q,     \
 *         ldq, k, ldk, v, ldv, out, ldout, den, g, ldg, dq, lddq, dk, lddk,  \
 *         dv, lddv, dw, lddw, db, state, const linattn_d_extras *ex,         \
 *         bad_row)                                                           \
 * linattn_mpi_d_attention_backward with the parts of ex it takes: this       \
 * rank's key weights (ex->weights, as linattn_mpi_d_attention_ex took them)  \
 * and dL/dw of its keys (ex->dweights), as linattn_d_attention_backward_ex;  \
 * and a packed stream (ex->offsets, ex->nseq) as linattn_mpi_d_attention_ex  \
 * takes it (the global offsets, the same on every rank; nq == nk, this       \
 * rank's rows its block of the stream): each sequence's gradients as the     \
 * serial packed backward's on the concatenated stream, sequences starting,   \
 * ending and lying inside ranks or crossing several.  A sequence within the  \
 * rank is that rank's serial packed backward; the two open at the rank's     \
 * ends take the keys other ranks hold of them from the forward's two         \
 * segmented scans of the states, run their queries' pass                     \
 * (linattn_d_state_query_backward), and their d[S z] summed over every rank  \
 * holding their queries reaches their keys through two more segmented scans  \
 * (forward and reverse, one element each: 4 ceil(log2 P) exchanges of 8 (m   \
 * (e + 1) + 7) bytes in all, however many sequences).  No handed state with  \
 * offsets.  On a failure after the agreement the rows of the sequences that  \
 * ran are written (as the serial packed call leaves them).  Errors as        \
 * linattn_mpi_d_attention_backward; -27 ex: as at                            \
 * linattn_d_attention_backward_ex (checked on this rank's rows), and any     \
 * other part (key_offsets, state, states, dstates, den, absorb, dstate_end,  \
 * gates, head_decays), offsets with nq != nk, not starting at 0, decreasing, \
 * meeting an output or not ending at every rank's rows in all (agreed: every \
 * rank returns -27), offsets with state; LINATTN_EMISMATCH also for offsets  \
 * that differ across ranks.  Collective. */                                  \
LINATTN_MPI_API int MX(attention_backward_ex)(const X(plan) *plan,            \
        MPI_Comm comm, int layout, int64_t nq, int64_t nk, const R *q,        \
        int64_t ldq, const R *k, int64_t ldk, const R *v, int64_t ldv,        \
        const R *out, int64_t ldout, const R *den, const R *g, int64_t ldg,   \
        R *dq, int64_t lddq, R *dk, int64_t lddk, R *dv, int64_t lddv, R *dw, \
        int64_t lddw, R *db, const X(state) *state, const X(extras) *ex,      \
        int64_t *bad_row);                                                    \
                                                                              \
/* int linattn_mpi_d_causal_backward(const linattn_d_plan *plan,              \
 *         MPI_Comm comm, int layout, int64_t n, const double *q,             \
 *         int64_t ldq, const double *k, int64_t ldk, const double *v,        \
 *         int64_t ldv, const double *out, int64_t ldout,                     \
 *         const double *den, const double *g, int64_t ldg, double *dq,       \
 *         int64_t lddq, double *dk, int64_t lddk, double *dv, int64_t lddv,  \
 *         double *dw, int64_t lddw, double *db, int64_t *bad_row)            \
 * Gradients through out = linattn_mpi_d_causal(Q, K, V) (out and den as      \
 * linattn_mpi_d_causal_ex wrote them): dq_i from the prefix states [S z]     \
 * of the keys j <= i, dk_j and dv_j from the suffix sums D = sum_{i >= j}    \
 * phi(q_i) [g_i h_i]^T over every rank's rows.  Each rank but the last       \
 * builds its keys' state; one exclusive scan (ceil(log2 P) exchanges, as     \
 * linattn_mpi_d_causal) gives the prefix; each rank but the first its rows'  \
 * D alone (linattn_d_causal_backward_dstates: one pass over the queries);    \
 * one reverse exclusive scan of them (ceil(log2 P) exchanges of              \
 * 8 (m (e + 1) + 7) bytes) gives rank r the gradient of its final state      \
 * (the later ranks' D), which seeds its serial backward from the prefix      \
 * (linattn_d_causal_backward_ex with ex.state and ex.dstate_end); dw, db as  \
 * at linattn_mpi_d_attention_backward.  A decayed plan (the plan's gamma):   \
 * each rank's D also carries its rows' total log decay A, the reverse scan   \
 * composing (A, D) pairs as the forward composes (A, S) (the later ranks' D  \
 * reach rank r decayed by the ranks between); under LINATTN_DENOM_COUNT with \
 * dL/da the gradient of each rank's final count travels with it. Collective. \
 * bad_row (EDENOM, EOVERFLOW) the global row (later ranks' sums beyond the   \
 * range: this rank's first row; only dw, db: -1).  Errors: -1 plan NULL; -2  \
 * comm; -3 .. -24 as the                                                     \
 * serial call's -2 .. -23; LINATTN_ESIZE; LINATTN_ENONFINITE;                \
 * LINATTN_EMISMATCH; LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW;      \
 * LINATTN_EMPIUSE; LINATTN_EMPI.  Threads: as linattn_mpi_d_attention. */    \
LINATTN_MPI_API int MX(causal_backward)(const X(plan) *plan, MPI_Comm comm,   \
        int layout, int64_t n, const R *q, int64_t ldq, const R *k,           \
        int64_t ldk, const R *v, int64_t ldv, const R *out, int64_t ldout,    \
        const R *den, const R *g, int64_t ldg, R *dq, int64_t lddq, R *dk,    \
        int64_t lddk, R *dv, int64_t lddv, R *dw, int64_t lddw, R *db,        \
        int64_t *bad_row);                                                    \
                                                                              \
/* int linattn_mpi_d_causal_backward_ex(plan, comm, layout, n, q, ldq, k,     \
 *         ldk, v, ldv, out, ldout, den, g, ldg, dq, lddq, dk, lddk, dv,      \
 *         lddv, dw, lddw, db, const linattn_d_extras *ex, bad_row)           \
 * linattn_mpi_d_causal_backward with this rank's key weights and dL/dw       \
 * (ex->weights, ex->dweights), and its tokens' log gates and dL/da_t         \
 * (ex->gates, ex->dgates: the gradient of each token's log decay, its share  \
 * through every later rank's rows included), as linattn_d_causal_backward_ex \
 * takes them;                                                                \
 * and a packed stream (ex->offsets, global, as linattn_mpi_d_causal_ex takes \
 * them) with the sequences' starting states (ex->states: nseq on every rank, \
 * the forward's, each read on the rank holding its sequence's first row;     \
 * absorb 0) and their gradients (ex->dstates: nseq m (e + 1) doubles,        \
 * sequence s's at s m (e + 1) as linattn_d_causal_backward_ex writes them;   \
 * with states): each sequence's gradients as the serial packed backward's on \
 * the concatenated stream.  The reverse scan is a segmented one, a           \
 * sequence's suffix sums stopping at its start: the prefix of the rank's     \
 * first sequence as the forward scans it, that sequence's D over its rows    \
 * here for the earlier ranks that hold it                                    \
 * (linattn_d_causal_backward_dstates; none when it starts here), one reverse \
 * segmented scan (ceil(log2 P) exchanges) giving the gradient of the final   \
 * state of the rank's last sequence from the later ranks; then the rank's    \
 * rows as three serial calls on them, no copy: its first sequence from its   \
 * prefix (or starting state), the sequences wholly inside (one serial packed \
 * call), its last from its starting state, the first or the last with        \
 * ex.dstate_end when it runs on past the rank.  dstates[s] is written on the \
 * rank holding sequence s's first row (with every later rank's part of it),  \
 * an empty sequence's (0: its state reaches no row) on every rank, every     \
 * other entry left as it was.  Errors as linattn_mpi_d_causal_backward; -25  \
 * ex: as at linattn_d_causal_backward_ex (checked on this rank's rows), and  \
 * any other part (key_offsets, state, den, absorb, dstate_end,             \
 * head_decays), offsets as at linattn_mpi_d_attention_backward_ex, states   \
 * without offsets, an entry NULL or of another plan, dstates without states, \
 * meeting another array or beyond addressing, the offsets or states array    \
 * meeting an output; LINATTN_EMISMATCH also for offsets that differ across   \
 * ranks, or states or dstates given on some ranks and not on others.         \
 * Collective. */                                                             \
LINATTN_MPI_API int MX(causal_backward_ex)(const X(plan) *plan,               \
        MPI_Comm comm, int layout, int64_t n, const R *q, int64_t ldq,        \
        const R *k, int64_t ldk, const R *v, int64_t ldv, const R *out,       \
        int64_t ldout, const R *den, const R *g, int64_t ldg, R *dq,          \
        int64_t lddq, R *dk, int64_t lddk, R *dv, int64_t lddv, R *dw,        \
        int64_t lddw, R *db, const X(extras) *ex, int64_t *bad_row);          \
                                                                              \
/* int linattn_mpi_d_batched_attention_forward(const linattn_d_plan *plan,    \
 *         MPI_Comm comm, int layout, int64_t batch, int64_t heads,           \
 *         int64_t nq, int64_t nk, q, sq, k, sk, v, sv, double *out,          \
 *         const linattn_strides *sout, double *den, linattn_where *bad)      \
 * linattn_mpi_d_batched_attention with the normalizers the backward          \
 * takes: den (this rank's, dense: problem (b, h)'s nq at den + (b heads +    \
 * h) nq) as linattn_d_batched_attention_forward writes them.  Errors:        \
 * -1 .. -15 as linattn_mpi_d_batched_attention; -16 den (NULL with rows,     \
 * or meeting another array); statuses as linattn_mpi_d_batched_attention     \
 * otherwise.  Collective. */                                                 \
LINATTN_MPI_API int MX(batched_attention_forward)(const X(plan) *plan,        \
        MPI_Comm comm, int layout, int64_t batch, int64_t heads, int64_t nq,  \
        int64_t nk, const R *q, const linattn_strides *sq, const R *k,        \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        R *out, const linattn_strides *sout, R *den, linattn_where *bad);     \
                                                                              \
/* int linattn_mpi_d_batched_causal_forward(plan, comm, layout, batch,        \
 *         heads, n, q, sq, k, sk, v, sv, out, sout, den, bad)                \
 * The causal forward across ranks with normalizers: as                       \
 * linattn_mpi_d_batched_causal, and den as at                                \
 * linattn_mpi_d_batched_attention_forward.  Errors: -1 .. -14 as             \
 * linattn_mpi_d_batched_causal (a decayed plan decays every head alike;     \
 * gates and a decay per head: linattn_mpi_d_batched_causal_ex); -15 den;     \
 * statuses as linattn_mpi_d_batched_causal otherwise.  Collective. */        \
LINATTN_MPI_API int MX(batched_causal_forward)(const X(plan) *plan,           \
        MPI_Comm comm, int layout, int64_t batch, int64_t heads, int64_t n,   \
        const R *q, const linattn_strides *sq, const R *k,                    \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        R *out, const linattn_strides *sout, R *den, linattn_where *bad);     \
                                                                              \
/* int linattn_mpi_d_batched_attention_backward(const linattn_d_plan *plan,   \
 *         MPI_Comm comm, int layout, int64_t batch, int64_t heads,           \
 *         int64_t nq, int64_t nk, q, sq, k, sk, v, sv, out, sout,            \
 *         const double *den, g, sg, dq, sdq, dk, sdk, dv, sdv, double *dw,   \
 *         int64_t lddw, double *db, linattn_where *bad)                      \
 * linattn_mpi_d_attention_backward on batch x heads problems (strides and    \
 * den as linattn_d_batched_attention_backward; nq, nk this rank's rows of    \
 * every problem), each reduction carrying all problems' elements at once     \
 * (8 batch heads (m (e + 1) + 7) bytes); dw, db summed over every problem    \
 * and rank.  *bad (if not NULL, on a failure): the first failing problem     \
 * and its global query row.  Errors: -1 plan (NULL, or decayed); -2 comm;  \
 * -3 .. -27 as the                                                          \
 * serial call's -2 .. -26 (-27 db); LINATTN_ESIZE; LINATTN_ENONFINITE;       \
 * LINATTN_EMISMATCH; LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW;      \
 * LINATTN_EMPIUSE; LINATTN_EMPI.  Collective. */                             \
LINATTN_MPI_API int MX(batched_attention_backward)(const X(plan) *plan,       \
        MPI_Comm comm, int layout, int64_t batch, int64_t heads, int64_t nq,  \
        int64_t nk, const R *q, const linattn_strides *sq, const R *k,        \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        const R *out, const linattn_strides *sout, const R *den, const R *g,  \
        const linattn_strides *sg, R *dq, const linattn_strides *sdq, R *dk,  \
        const linattn_strides *sdk, R *dv, const linattn_strides *sdv, R *dw, \
        int64_t lddw, R *db, linattn_where *bad);                             \
                                                                              \
/* int linattn_mpi_d_batched_causal_backward(plan, comm, layout, batch,       \
 *         heads, n, q, sq, k, sk, v, sv, out, sout, den, g, sg, dq, sdq, dk, \
 *         sdk, dv, sdv, dw, lddw, db, bad)                                   \
 * The causal backward across ranks on batch x heads problems: each one       \
 * as linattn_mpi_d_causal_backward, the rest as                              \
 * linattn_mpi_d_batched_attention_backward (each scan carries every          \
 * problem's element; a decayed plan decays every head alike, as at         \
 * linattn_mpi_d_causal_backward).  Errors: -1 plan NULL; -2 comm; -3 ..     \
 * -26 as the serial call's -2 .. -25; as                                     \
 * linattn_mpi_d_batched_attention_backward otherwise.                        \
 * Collective. */                                                             \
LINATTN_MPI_API int MX(batched_causal_backward)(const X(plan) *plan,          \
        MPI_Comm comm, int layout, int64_t batch, int64_t heads, int64_t n,   \
        const R *q, const linattn_strides *sq, const R *k,                    \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        const R *out, const linattn_strides *sout, const R *den, const R *g,  \
        const linattn_strides *sg, R *dq, const linattn_strides *sdq, R *dk,  \
        const linattn_strides *sdk, R *dv, const linattn_strides *sdv, R *dw, \
        int64_t lddw, R *db, linattn_where *bad);                             \
                                                                              \
/* ---- State collectives.  states is an array of count states whose plans  \
 * have equal fingerprints (on this rank and across ranks); count must      \
 * agree across ranks.  One reduction carries all count states. ---- */     \
                                                                              \
/* int linattn_mpi_d_state_allreduce(linattn_d_state *const *states,         \
 *                                   int64_t count, MPI_Comm comm)           \
 * states[i] = the sum over all ranks of states[i] (S, z and tokens add;    \
 * shifts as described above; a state without tokens is added as          \
 * linattn_d_state_merge adds it), the same bits on every rank            \
 * (MPI_Allreduce with a reduction that gives equal results on every rank  \
 * for Open MPI; tested).  Extra memory: (m (e + 1) + 7) count doubles.       \
 * Collective.  Threads: the states are this call's alone while it runs;  \
 * one call per rank at a time.  On any error every state is unchanged.    \
 * A sum refused as linattn_d_state_merge refuses it is refused on every   \
 * rank (the first refusing rank's status, in rank order; on one rank,    \
 * ESIZE before EOVERFLOW, as in merge); states holding NaN or Inf are     \
 * added (they propagate, status 0).  Errors:                               \
 * -1 states NULL (count > 0), an entry NULL, or entries of plans with      \
 * different fingerprints; -2 count < 0; -3 comm; LINATTN_EMISMATCH (plans \
 * or count differ across ranks); LINATTN_ESIZE (more than 2^63 - 1 tokens \
 * in all); LINATTN_EOVERFLOW (states without NaN and Inf whose sum leaves \
 * the working precision's range, in float the float copy's; also a       \
 * single float state whose sums already do, as a merge into an empty      \
 * state refuses it); LINATTN_ENOMEM; LINATTN_EMPIUSE; LINATTN_EMPI. */       \
LINATTN_MPI_API int MX(state_allreduce)(X(state) *const *states,              \
                                        int64_t count, MPI_Comm comm);        \
                                                                              \
/* int linattn_mpi_d_state_exscan(linattn_d_state *const *states,            \
 *                                int64_t count, MPI_Comm comm)              \
 * states[i] on rank r = the sum of states[i] over ranks 0 .. r-1 (rank 0:  \
 * a zero state, no tokens): the state of every earlier rank's keys        \
 * (recursive doubling: ceil(log2 P) MPI_Sendrecv exchanges on the private \
 * communicator, not MPI_Exscan).  Extra memory: three times that of       \
 * linattn_mpi_d_state_allreduce.  Collective; threads, errors and         \
 * on-error policy as linattn_mpi_d_state_allreduce (LINATTN_EOVERFLOW     \
 * when any rank's prefix leaves the range, every state unchanged). */      \
LINATTN_MPI_API int MX(state_exscan)(X(state) *const *states, int64_t count,  \
                                     MPI_Comm comm);                          \
                                                                              \
/* int linattn_mpi_d_state_save_file(const linattn_d_state *state,           \
 *                                   const char *path, MPI_Comm comm)        \
 * Collective checkpoint of a state that every rank holds: rank 0 writes    \
 * one file, atomically (linattn_d_state_save_file), and every rank returns \
 * rank 0's status.  The state must be the same on every rank, bit for bit \
 * (compared first: rank 0's checkpoint bytes are broadcast; a rank whose   \
 * state differs makes it LINATTN_EMISMATCH everywhere, no file written).   \
 * path is read on rank 0 only (must not be NULL or empty on any rank).     \
 * Collective.  Threads: other threads may read the state meanwhile (save \
 * only reads it); one call per rank at a time.                            \
 * Errors: -1 state NULL; -2 path NULL or empty; -3 comm; LINATTN_EMISMATCH \
 * (plans or states differ across ranks); LINATTN_EIO (errno is set on      \
 * rank 0 only); LINATTN_ENOMEM; LINATTN_EMPIUSE; LINATTN_EMPI. */            \
LINATTN_MPI_API int MX(state_save_file)(const X(state) *state,                \
                                        const char *path, MPI_Comm comm);     \
                                                                              \
/* int linattn_mpi_d_state_load_file(linattn_d_state *state,                 \
 *                                   const char *path, MPI_Comm comm)        \
 * Collective restore: rank 0 reads and verifies the file once             \
 * (linattn_d_state_load_file), its bytes are broadcast, every rank         \
 * verifies them again and only then, when every rank has, replaces its    \
 * state.  A refused file is refused with the same status on every rank,   \
 * every state unchanged.  Sums are taken as the serial load takes them    \
 * (sums near or, in float, beyond the working precision's range          \
 * included: the loaded state's queries then report LINATTN_EOVERFLOW,    \
 * and its merges and reductions refuse them, as the serial state's do).  \
 * path is read on rank 0 only.  Collective.                                \
 * Threads: the state is this call's alone while it runs; one call per    \
 * rank at a time.  Errors: -1 state                                        \
 * NULL; -2 path NULL or empty; -3 comm; LINATTN_EIO; LINATTN_EFORMAT;      \
 * LINATTN_EVERSION; LINATTN_EMISMATCH (the file is of another plan, or     \
 * plans differ across ranks); LINATTN_ENOMEM;                                \
 * LINATTN_EMPIUSE; LINATTN_EMPI. */                                          \
LINATTN_MPI_API int MX(state_load_file)(X(state) *state, const char *path,    \
                                        MPI_Comm comm);

#define LINATTN_MPI_MANGLE_DOUBLE(name) linattn_mpi_d_##name
#define LINATTN_MPI_MANGLE_FLOAT(name) linattn_mpi_s_##name

LINATTN_MPI_DEFINE_API(LINATTN_MPI_MANGLE_DOUBLE, LINATTN_MANGLE_DOUBLE,
                       double)
LINATTN_MPI_DEFINE_API(LINATTN_MPI_MANGLE_FLOAT, LINATTN_MANGLE_FLOAT, float)

#ifdef __cplusplus
}
#endif

#endif /* LINATTN_MPI_H */
