/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * linattn.h -- linear attention and kernelized approximations of softmax
 * attention on BLAS.
 *
 * Linear attention replaces softmax(q.k) by a kernel phi(q).phi(k).  The sums
 * that do not depend on the query,
 *
 *     S = sum_j phi(k_j) v_j^T   (m x e)     z = sum_j phi(k_j)   (m)
 *
 * are built once, and every query costs one small product:
 *
 *     out_i = phi(q_i)^T S / phi(q_i)^T z.
 *
 * Conventions (shared by every function below)
 *
 *   - Precision: every function exists as linattn_d_* (double) and
 *     linattn_s_* (float).  Both are declared from one template
 *     (LINATTN_DEFINE_API at the end of this file), so they cannot drift.
 *     Only the double names are spelled out in the documentation.
 *   - Matrices: an n x c matrix A is passed as (layout, A, lda) as in CBLAS.
 *     Row major (LINATTN_ROW_MAJOR = 101): A(i,j) = A[i*lda + j], lda >= c.
 *     Column major (LINATTN_COL_MAJOR = 102): A(i,j) = A[i + j*lda],
 *     lda >= n.  A leading dimension is always at least 1, but that of an
 *     optional matrix passed as NULL, which is not read (state_query's out
 *     and num, the backward calls' dw).  Column major lets Fortran arrays
 *     pass without copies.
 *   - Dimensions: d = query/key width, m = number of features, e = value
 *     width.  Sizes are int64_t.  Row counts n are unlimited (the library
 *     streams blocks); a leading dimension beyond the BLAS integer is fine
 *     too (such blocks are copied through workspace).  d, m, e + 1, the
 *     block and chunk sizes, and the key count of the quadratic baselines
 *     must fit the BLAS integer, and every matrix must be addressable: its
 *     extent ((outer - 1) ld + inner elements, counted at 8 bytes each in
 *     both precisions) must fit int64, so that no pointer arithmetic on it
 *     can wrap (two rows with ld = 2^61 are refused); otherwise
 *     LINATTN_ESIZE, before any work.  Token counts stop at INT64_MAX: an
 *     update or merge that would pass it is LINATTN_ESIZE, state unchanged.
 *   - Status: 0 on success; -i when argument i (counted from 1) is invalid,
 *     as in LAPACKE; a positive LINATTN_E* code for a run-time condition.
 *     linattn_strerror() turns any status into a sentence.  No function
 *     exits, aborts or prints.  A call rejected with a negative status, or
 *     with LINATTN_ENOMEM, writes nothing to its outputs; LINATTN_EDENOM and
 *     LINATTN_EOVERFLOW are described at linattn_d_state_query.  Every
 *     argument check runs before the first BLAS call (a reference CBLAS
 *     kills the process on a bad argument).
 *   - Finite inputs give finite outputs or a status: with every input finite
 *     (and a state that holds no NaN or Inf), a call that returns 0 has
 *     written only finite values.  A result that the floating-point range
 *     cannot hold (sums of the state, numerators phi(q)^T S, or a quotient
 *     num / den) is LINATTN_EOVERFLOW with the row, as a bad normalizer is
 *     LINATTN_EDENOM; the public update and merge, and every call that absorbs
 *     keys into a state, refuse such sums and leave the state unchanged.  Tiny
 *     and huge normalizers are divided exactly (the fast path multiplies by
 *     1 / den only where that reciprocal is a normal number).  NaN and Inf in
 *     the inputs still propagate as documented at linattn_opts.check_finite.
 *     (linattn_d_features is the exception: it returns the unshifted features,
 *     which the exponential maps overflow at large norms.)
 *   - A NULL matrix is accepted only when it has no rows, or when it is an
 *     optional one (documented at its call).
 *   - Optional parts: a call that can take more than its arguments has an
 *     expert form, linattn_d_NAME_ex, with one more argument: a
 *     linattn_d_extras (NULL: none, and the call is the plain one), which
 *     holds the optional inputs and outputs, all composing in one call.
 *     Its fields are checked as the call's other arguments are, and a bad
 *     one is -i of the extras argument.
 *   - Aliasing: no output may share memory with an input or with another
 *     output of the same call (out = q, out = v, num = out, den inside q):
 *     the call returns -i of that output, writing nothing.  Address
 *     ranges are compared, once all sizes are known to be addressable, so
 *     an output interleaved with an input inside one buffer is refused too
 *     (as in the batched calls).
 *   - Sharing: a plan is immutable after creation; any number of threads
 *     may use one plan at once.  A state may be queried by several threads
 *     at once, but update/merge/reset/copy into it need exclusive access.
 *   - Threading inside: when built with OpenMP, a call on enough rows (one
 *     block per thread) splits its rows over omp_get_max_threads() threads
 *     (OMP_NUM_THREADS), each streaming its range with single-threaded
 *     BLAS; partial states are added in thread order.  Called from inside
 *     an OpenMP parallel region, the library stays on the calling thread.
 *     With OpenBLAS's pthreads build, openblas_set_num_threads(1) is in
 *     force while any such split runs (process-wide: BLAS calls that other
 *     threads of the program make meanwhile run single-threaded too) and
 *     the previous setting is restored when the last one ends.
 *     The batched calls split problems over the threads instead when there
 *     are at least as many problems as threads.  A call too small to split
 *     makes its BLAS calls from the calling thread, and BLAS then uses its
 *     own thread count: OPENBLAS_NUM_THREADS for OpenBLAS's pthreads
 *     build, OMP_NUM_THREADS for its OpenMP build.  So OMP_NUM_THREADS
 *     caps the library and OPENBLAS_NUM_THREADS only the calls it does not
 *     split.  A program that calls the library from several threads of
 *     its own (not OpenMP ones) multiplies these counts: it wants
 *     OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1.
 *     Results agree across thread counts to rounding, not bit for bit.
 *
 * Normalizers.  A kernel such as the identity can make phi(q).z zero or
 * negative.  The default policy (LINATTN_DENOM_POSITIVE) refuses a
 * normalizer that is not finite and > 0 with LINATTN_EDENOM and reports the
 * first offending row; LINATTN_DENOM_NONZERO accepts any finite non-zero
 * normalizer (signed kernels).  A plan may also add a fixed eps to every
 * normalizer before the check (linattn_opts.eps), the usual guard for
 * non-negative feature maps.  LINATTN_DENOM_COUNT divides instead by the
 * number of keys a row sees, as Galerkin-type attention in neural operators
 * does: nk in the non-causal calls, i + 1 for row i of the causal ones, the
 * state's token count in linattn_d_state_query.  Everywhere below, "the
 * normalizer" den_i means phi(q_i)^T z + eps, or that count + eps.
 */
#ifndef LINATTN_H
#define LINATTN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LINATTN_VERSION_MAJOR, _MINOR, _PATCH, and LINATTN_VERSION_NUMBER =
 * MAJOR*10000 + MINOR*100 + PATCH (comparable with linattn_version()). */
#include "linattn_version.h"

#if defined(LINATTN_BUILDING) && defined(__GNUC__)
#define LINATTN_API __attribute__((visibility("default")))
#else
#define LINATTN_API
#endif

/* Matrix layouts: the values of CBLAS_LAYOUT. */
#define LINATTN_ROW_MAJOR 101
#define LINATTN_COL_MAJOR 102

/* Feature maps phi: R^d -> R^m.  The exact maps (1-3) are elementwise.
 * The others approximate the softmax kernel exp(q.k / sqrt(d)): with
 * x~ = s x, s = opts.input_scale (default d^(-1/4)), phi(q).phi(k)
 * estimates (TAYLOR: approximates) exp(q~.k~).  W is the plan's random
 * projection (opts.draw, opts.seed; linattn_d_plan_weights reads it).
 * Formulas, defaults and stabilization in doc/maps.md. */
enum linattn_map {
    LINATTN_MAP_IDENTITY = 1, /* phi(x) = x, m = d; signed, exact        */
    LINATTN_MAP_ELU1 = 2,     /* phi(x) = elu(x) + 1 > 0, elementwise   */
    LINATTN_MAP_RELU = 3,     /* phi(x) = max(x, 0) >= 0, elementwise   */
    /* FAVOR+ positive random features, W m x d (default m = 4d):
     * phi(x) = exp(W x~ - |x~|^2/2) / sqrt(m) > 0, unbiased */
    LINATTN_MAP_FAVOR = 4,
    /* two-sided FAVOR+, W (m/2) x d, m even (default 4d):
     * phi(x) = [exp(W x~), exp(-W x~)] exp(-|x~|^2/2) / sqrt(m) > 0 */
    LINATTN_MAP_FAVOR_HYP = 5,
    /* random Fourier features, W (m/2) x d, m even (default 4d):
     * phi(x) = [sin W x~, cos W x~] exp(|x~|^2/2) / sqrt(m/2); signed
     * (normalizers may be <= 0: LINATTN_DENOM_NONZERO or eps) */
    LINATTN_MAP_TRIG = 6,
    /* second-order Taylor (Based), m = 1 + d + d(d+1)/2: phi(x) =
     * [1, x~, x~_i x~_j (i < j), x~_i^2 / sqrt(2)], kernel exactly
     * 1 + q~.k~ + (q~.k~)^2 / 2 > 0 */
    LINATTN_MAP_TAYLOR = 7,
    /* phi(x) = act(W x~ + b) with the caller's W and b: only through
     * linattn_d_plan_create_custom */
    LINATTN_MAP_CUSTOM = 8
};

/* How the random maps draw W (linattn_opts.draw); doc/rng.md. */
enum linattn_draw {
    LINATTN_DRAW_ORTHO = 0,       /* orthogonal d x d blocks (QR), rows  */
                                  /* scaled by chi(d) norms (default)    */
    LINATTN_DRAW_ORTHO_FIXED = 1, /* orthogonal blocks, rows of norm     */
                                  /* sqrt(d)                             */
    LINATTN_DRAW_IID = 2          /* independent N(0, 1) entries         */
};

/* Activations of caller-supplied maps (linattn_d_plan_create_custom),
 * u = W x~ + b with W rows x d. */
enum linattn_act {
    LINATTN_ACT_EXP = 1,     /* phi = exp(u), m = rows                    */
    LINATTN_ACT_RELU = 2,    /* phi = max(u, 0), m = rows                 */
    LINATTN_ACT_ELU1 = 3,    /* phi = elu(u) + 1, m = rows                */
    LINATTN_ACT_HEDGEHOG = 4 /* phi = softmax([u, -u]) over all 2 rows    */
                             /* features, m = 2 rows (Hedgehog)           */
};

/* Normalizer policies (linattn_opts.denom). */
enum linattn_denom {
    LINATTN_DENOM_POSITIVE = 0, /* accept finite den > 0 (default)  */
    LINATTN_DENOM_NONZERO = 1,  /* accept finite den != 0           */
    /* den = the number of keys the row sees (+ eps), not phi(q).z:    */
    /* Galerkin-type attention (Cao 2021), out = phi(Q) S / n.  A row  */
    /* that sees no key is LINATTN_EDENOM.  Not for the maps with      */
    /* stabilizing shifts (FAVOR, FAVOR_HYP, TRIG, custom EXP), whose  */
    /* numerators carry a factor that only phi(q).z cancels.           */
    LINATTN_DENOM_COUNT = 2,
    /* no normalizer: out = phi(q)^T S (what decayed models compute      */
    /* before their own output norm; den, where a call writes it, is 1,  */
    /* eps unused; the backward calls take den = 1 and differentiate     */
    /* out = num).  Not for the shifted maps (as COUNT); approx_error    */
    /* refuses such a plan (-1).                                          */
    LINATTN_DENOM_NONE = 3
};

/* Status codes: 0, -i for invalid argument i, or one of these. */
enum linattn_status {
    LINATTN_SUCCESS = 0,
    LINATTN_ENOMEM = 1, /* a workspace allocation failed; nothing written  */
    LINATTN_EDENOM = 2, /* a normalizer broke the plan's policy            */
    LINATTN_ESIZE = 3,  /* a size exceeds the BLAS integer or int64 range  */
    LINATTN_ENONFINITE = 4, /* an input holds NaN or Inf (opts.check_finite) */
    /* Checkpoints (linattn_d_state_save and friends): */
    LINATTN_EIO = 5,       /* a file could not be opened, written or read  */
    LINATTN_EFORMAT = 6,   /* not a linattn checkpoint, or a damaged one    */
    LINATTN_EVERSION = 7,  /* a checkpoint format version not supported     */
    LINATTN_EMISMATCH = 8, /* a checkpoint of another precision, map, sizes */
                           /* (liblinattn_mpi: plans that differ across   */
                           /* the ranks of a communicator)                 */
    /* A result of finite inputs left the floating-point range (a sum of
     * the state, a numerator or a quotient beyond the largest value; in
     * float, also the float copy of the double sums): see
     * linattn_d_state_query for the rows written. */
    LINATTN_EOVERFLOW = 9,
    LINATTN_EMPI = 10,     /* liblinattn_mpi: an MPI call failed (under    */
                           /* MPI_ERRORS_RETURN)                           */
    LINATTN_EMPIUSE = 11   /* liblinattn_mpi: MPI cannot be used from this */
                           /* call: not initialized, already finalized, or */
                           /* below MPI_THREAD_SERIALIZED a thread other   */
                           /* than the one that initialized it             */
                           /* (linattn_mpi_strerror names which)           */
};

/*
 * Plan options.  Always start from linattn_opts_init(), then change fields:
 * later versions append fields that init gives safe defaults.
 *
 *   m      features; 0 = the map's default: d for the exact maps (which
 *          require m = d or 0), 4d for FAVOR, FAVOR_HYP and TRIG (near
 *          d ln d at the usual head sizes 32..128; FAVOR_HYP and TRIG
 *          need m even), 1 + d + d(d+1)/2 for TAYLOR (the only value it
 *          takes).
 *   block  rows per block in the streaming loops; 0 = library default.
 *          Extra memory is O(block * (m + e)), independent of n.
 *   chunk  C, rows per chunk of the causal paths; 0 = library default.
 *          Extra memory O(C (m + e + C)).
 *   denom  LINATTN_DENOM_POSITIVE, LINATTN_DENOM_NONZERO,
 *          LINATTN_DENOM_COUNT or LINATTN_DENOM_NONE (the last two not
 *          with FAVOR, FAVOR_HYP, TRIG or a custom EXP map).
 *   eps    >= 0, finite; added to every normalizer before the check.
 *   seed   seed of the random feature maps' W (ignored by the others).
 *   check_finite
 *          0 (default): NaN and Inf in the inputs propagate: a row whose
 *          normalizer becomes non-finite is reported as LINATTN_EDENOM
 *          when outputs are requested (so bad queries and keys are caught
 *          there; raw numerators and normalizers carry them), NaN or Inf in
 *          values
 *          reach the outputs of the rows they touch.  Nonzero: state_update,
 *          state_query, attention, naive, causal, naive_causal,
 *          approx_error and the batched calls first scan their inputs and
 *          return LINATTN_ENONFINITE, writing nothing and leaving states
 *          unchanged, if any entry is NaN or Inf (one extra read of the
 *          inputs).
 *   draw   how the random maps draw W: LINATTN_DRAW_ORTHO (default),
 *          LINATTN_DRAW_ORTHO_FIXED or LINATTN_DRAW_IID (checked for every
 *          map, used by FAVOR, FAVOR_HYP and TRIG).  The same (d, rows of
 *          W, draw, seed) gives the same W in every run and for every
 *          thread count (doc/rng.md); another W needs another plan
 *          (redrawing is explicit).  ORTHO and IID keep the estimators
 *          unbiased; ORTHO_FIXED trades a small bias for lower variance.
 *   input_scale
 *          s in x~ = s x, applied to queries and keys before the map.
 *          0 (default) = d^(-1/4) for FAVOR, FAVOR_HYP, TRIG and TAYLOR,
 *          so that they approximate exp(q.k / sqrt(d)); 1 for custom
 *          maps.  Else finite and > 0 (1 estimates exp(q.k)).  The exact
 *          maps require 0.
 *   log_decay
 *          ln gamma <= 0, finite: the state forgets by gamma per token,
 *          S_t = gamma S_{t-1} + phi(k_t) v_t^T, z_t (and the count of
 *          LINATTN_DENOM_COUNT) likewise: row i sees key j <= i with weight
 *          gamma^(i - j) (RetNet's retention; Lightning Attention's
 *          exp(-s_h)).  0 (default): gamma = 1, no decay.  In log space so
 *          that gamma near 1 keeps its digits.  A decayed plan runs the
 *          causal calls and their backward, the streaming state, their
 *          references and the features; the other calls refuse it as their
 *          plan argument (-1, or the state's), liblinattn_mpi's too.  Part
 *          of the plan's fingerprint and of a checkpoint's map
 *          (doc/decay.md).
 *   query_scale
 *          s > 0, finite: every call reads the query features s phi(q)
 *          (flash-linear-attention's default scale 1/sqrt(d) on q), so
 *          out_i = s phi(q_i)^T S / (s phi(q_i)^T z + eps): the
 *          normalizer policies cancel it but for eps, LINATTN_DENOM_COUNT
 *          and LINATTN_DENOM_NONE scale out by s; the backward calls
 *          differentiate that.  0 (default) = 1.  Only the exact maps
 *          (IDENTITY, ELU1, RELU) take another value.  Not part of the
 *          fingerprint: a state holds keys only, whatever reads it.
 */
typedef struct linattn_opts {
    int64_t m;
    int64_t block;
    int64_t chunk;
    int denom;
    double eps;
    uint64_t seed;
    int check_finite;
    int draw;
    double input_scale;
    double log_decay;
    double query_scale;
    int64_t reserved[5];
} linattn_opts;

/* int linattn_opts_init(linattn_opts *opts)
 * Fills *opts with the defaults: m = 0, block = 0, chunk = 0, POSITIVE,
 * eps = 0, seed = 0, check_finite = 0, draw = LINATTN_DRAW_ORTHO,
 * input_scale = 0, log_decay = 0, query_scale = 0.  Errors: -1 opts NULL.
 * Thread-safe. */
LINATTN_API int linattn_opts_init(linattn_opts *opts);

/* int linattn_version(void) -- LINATTN_VERSION_NUMBER of the library that
 * is linked (compare with the header's macro).  Thread-safe. */
LINATTN_API int linattn_version(void);

/* const char *linattn_version_string(void) -- "MAJOR.MINOR.PATCH".
 * Thread-safe; the string is static. */
LINATTN_API const char *linattn_version_string(void);

/* const char *linattn_strerror(int status) -- a static sentence for any
 * status value (never NULL).  Thread-safe. */
LINATTN_API const char *linattn_strerror(int status);

/* int linattn_rng_normal(uint64_t seed, uint64_t stream, uint64_t first,
 *                        int64_t count, double *out)
 * out[i] = normal number first + i of the generator's (seed, stream), the
 * numbers the random maps build W from (stream 0: the Gaussian entries,
 * stream 1: the vectors whose norms scale the rows; doc/rng.md gives the
 * algorithm, Philox4x32-10 and Box-Muller, and which number lands where).
 * Bit-identical on every platform.  Errors: -4 count < 0, or the indices
 * would pass 2^64 - 1; -5 out NULL with count > 0.  Thread-safe. */
LINATTN_API int linattn_rng_normal(uint64_t seed, uint64_t stream,
                                   uint64_t first, int64_t count,
                                   double *out);

/*
 * Errors of kernelized attention against exact softmax attention
 * (linattn_d_approx_error), in double whatever the precision of the call.
 * O~ is the plan's attention output, O = softmax(scale Q K^T) V; A~ the
 * plan's kernel matrix phi(Q) phi(K)^T, Ah its rows divided by their
 * normalizers (row sum + eps, or the count + eps under LINATTN_DENOM_COUNT:
 * then Ah's rows need not sum to 1), P the softmax matrix, K = exp(scale Q K^T)
 * the kernel that Ah approximates.  Causal calls compare the pairs j <= i
 * only.  A relative error whose reference norm is 0 is 0 when the
 * difference is 0 too, else +Inf.
 *
 *   out_rel_fro     ||O~ - O||_F / ||O||_F
 *   out_mse         ||O~ - O||_F^2 / (nq e)
 *   out_max_abs     max |O~ - O| over the nq x e entries
 *   attn_rel_fro    ||Ah - P||_F / ||P||_F
 *   kernel_mse      sum over compared pairs of (A~_ij - K_ij)^2 / pairs;
 *                   +Inf when a kernel value or its estimate overflows.
 *                   Meaningful for the maps that estimate exp(q.k) (with
 *                   scale matching the map's input scaling); computed for
 *                   every map.
 *   kernel_rel_fro  ||A~ - K||_F / ||K||_F over the compared pairs
 *   pairs           number of (query, key) pairs compared: nq nk, or
 *                   n (n + 1) / 2 for causal calls
 */
typedef struct linattn_approx_stats {
    double out_rel_fro;
    double out_mse;
    double out_max_abs;
    double attn_rel_fro;
    double kernel_mse;
    double kernel_rel_fro;
    int64_t pairs;
    double reserved[5]; /* set to 0; later versions may fill them */
} linattn_approx_stats;

/*
 * Batches of independent problems (linattn_d_batched_*): batch x heads
 * problems in one call, problem (b, h) for 0 <= b < batch, 0 <= h < heads.
 * Each matrix argument A comes with a linattn_strides: problem (b, h)'s
 * matrix starts at A + b * batch + h * head (in elements) and is a
 * rows x cols matrix in the call's layout with leading dimension ld, as in
 * the single calls.  One description covers the usual arrays (n rows, c
 * columns, H heads, any padding added to the strides):
 *
 *   C array [B][H][n][c]    ROW_MAJOR  ld = c     head = n c  batch = H n c
 *   C array [B][n][H][c]    ROW_MAJOR  ld = H c   head = c    batch = n H c
 *   Fortran a(n, c, H, B)   COL_MAJOR  ld = n     head = n c  batch = n c H
 *   Fortran a(c, n, H, B)   ROW_MAJOR  ld = c     head = n c  batch = n c H
 *
 * Policy: strides are >= 0 (a negative one is refused as an invalid
 * argument).  Inputs may share memory between problems (head = 0 gives
 * every head the same keys and values, as in multi-query attention).
 * Outputs may not: out's strides must nest (sorted by size, each stride
 * exceeds the span of the smaller ones; every dense array with its axes
 * in any order and any padding does), else the out strides are refused;
 * and out's address range may not meet q's, k's or v's (checked by
 * ranges, so interleaving out with an input inside one buffer is refused
 * too).  A stride of a dimension of extent 1 is not used, but still must
 * be >= 0.
 */
typedef struct linattn_strides {
    int64_t ld;    /* leading dimension of each problem's matrix       */
    int64_t batch; /* elements from problem (b, h) to (b + 1, h)      */
    int64_t head;  /* elements from problem (b, h) to (b, h + 1)      */
} linattn_strides;

/* Where a batched call failed: the problem, and for LINATTN_EDENOM the
 * row within it (-1 for other statuses); LINATTN_EOVERFLOW names its row
 * too. */
typedef struct linattn_where {
    int64_t batch, head, row;
} linattn_where;

/*
 * What the library runs on (linattn_platform_query): the BLAS found in the
 * process, the CPU's vector extensions, and the code path of linattn's own
 * kernels.  An old BLAS build on a new CPU often runs kernels for an
 * older one (an SSE or AVX2 kernel on an AVX-512 CPU runs GEMM 2-7 times
 * slower); blas_underuses_cpu and advice say so and what to do.  Strings
 * are always terminated, cut to their arrays; "unknown" where the library
 * cannot tell (a BLAS that offers no query functions, a static link that
 * hides them, an architecture other than x86-64).
 *
 * The BLAS is looked up at run time in the library that provides
 * cblas_dgemm to this process (no link-time dependency on a vendor):
 * OpenBLAS (openblas_get_config, _get_corename, _get_num_threads,
 * _get_parallel) and BLIS (bli_info_get_version_str, bli_arch_query_id,
 * bli_arch_string, bli_thread_get_num_threads) are recognized, and the
 * reference BLAS by where Debian and Ubuntu install it (<libdir>/blas/).
 *
 *   blas_vendor      "OpenBLAS", "BLIS", "Netlib" (the reference BLAS)
 *                    or "unknown"
 *   blas_version     "0.3.21", or "" when unknown
 *   blas_config      the vendor's build description (OpenBLAS's config
 *                    string, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ...") or ""
 *   blas_library     the file that provides cblas_dgemm, or ""
 *   blas_kernel      the kernel family chosen for this CPU: OpenBLAS's
 *                    core name ("Haswell", "SkylakeX"), BLIS's
 *                    architecture ("skx", "zen3"), "reference" for the
 *                    reference BLAS, or "unknown"
 *   blas_kernel_isa  the vector level that kernel family uses, in the
 *                    vocabulary of cpu_isa, "generic" for scalar code,
 *                    or "unknown"
 *   blas_threads     BLAS's thread count (0 when unknown)
 *   blas_threading   "pthreads", "openmp", "sequential" or "unknown"
 *   cpu_name         the CPU's brand string, or ""
 *   cpu_isa          its widest vector level that the operating system
 *                    enables: "sse2", "sse3", "ssse3", "sse4.1",
 *                    "sse4.2", "avx", "avx2", "avx512" (any AVX-512
 *                    foundation), or "unknown"
 *   cpu_features     its vector extensions, space-separated ("sse2 ...
 *                    avx2 fma avx512f avx512dq ... amx_tile")
 *   lib_isa          the code path linattn's own kernels (exponentials,
 *                    feature maps, fused GEMM kernels) take: "avx512"
 *                    (built for x86-64-v4, taken when the CPU has all of
 *                    it), "avx2" (x86-64-v3: AVX2, FMA, BMI1, BMI2, F16C,
 *                    LZCNT, MOVBE) or "generic"; the environment variable
 *                    LINATTN_ISA (same names, read once) caps it; a value
 *                    that names none is ignored, and summary says so
 *   lib_threads      the threads a call may split over
 *                    (omp_get_max_threads(); 1 without OpenMP)
 *   lib_threading    "openmp" or "none"
 *   blas_underuses_cpu
 *                    1 when the BLAS kernel's vector level is below the
 *                    CPU's (both known), else 0
 *   advice           when blas_underuses_cpu: what to do, e.g. "set
 *                    OPENBLAS_CORETYPE=SkylakeX (before the program
 *                    starts) ..." for an OpenBLAS that selects kernels at
 *                    run time, a build for this CPU otherwise; else ""
 *   summary          one line with the above, for logs and benchmark
 *                    headers
 */
typedef struct linattn_platform {
    char blas_vendor[32];
    char blas_version[32];
    char blas_config[192];
    char blas_library[256];
    char blas_kernel[32];
    char blas_kernel_isa[16];
    int blas_threads;
    char blas_threading[16];
    char cpu_name[64];
    char cpu_isa[16];
    char cpu_features[384];
    char lib_isa[16];
    int lib_threads;
    char lib_threading[16];
    int blas_underuses_cpu;
    char advice[384];
    char summary[384];
    int64_t reserved[8]; /* set to 0; later versions may fill them */
} linattn_platform;

/* int linattn_platform_query(linattn_platform *info)
 * Fills *info with the description above, looked up now (BLAS thread
 * counts may change between calls).  Errors: -1 info NULL (nothing
 * written).  Thread-safe; costs microseconds (no measurement is made). */
LINATTN_API int linattn_platform_query(linattn_platform *info);

/*
 * The precision template.  X(name) mangles a name, R is the real type.
 */
#define LINATTN_DEFINE_API(X, R)                                              \
                                                                              \
/* Opaque handles.  A plan holds phi, d, m, e, block size and normalizer     \
 * policy; a state holds (S, z) for one plan and refers to that plan, which \
 * must outlive it. */                                                        \
typedef struct X(plan_s) X(plan);                                             \
typedef struct X(state_s) X(state);                                           \
                                                                              \
/* int linattn_d_plan_create(linattn_d_plan **plan, int map, int64_t d,       \
 *                           int64_t e, const linattn_opts *opts)             \
 * Plans phi = map: R^d -> R^m, values of width e.  opts NULL = defaults.     \
 * The random maps draw W here (in double; a float plan rounds it, so         \
 * float and double plans of one seed share W to rounding).                   \
 * Errors: -1 plan NULL; -2 unknown map (or LINATTN_MAP_CUSTOM); -3 d < 1;    \
 * -4 e < 1; -5 an option out of range (m, block or chunk < 0, denom, eps < 0,\
 * not finite, or not representable in the plan's precision, draw,           \
 * input_scale, LINATTN_DENOM_COUNT with FAVOR, FAVOR_HYP or TRIG);          \
 * LINATTN_ESIZE; LINATTN_ENOMEM (also for the workspace of   \
 * W's QR).  *plan is set only on success.  Thread-safe. */                                                  \
LINATTN_API int X(plan_create)(X(plan) **plan, int map, int64_t d,            \
                               int64_t e, const linattn_opts *opts);          \
                                                                              \
/* int linattn_d_plan_create_custom(linattn_d_plan **plan, int act,           \
 *         int64_t d, int64_t m, int64_t e, int layout, const double *w,      \
 *         int64_t ldw, const double *b, const linattn_opts *opts)            \
 * Plans phi(x) = act(W x~ + b) (LINATTN_MAP_CUSTOM) with the caller's W,     \
 * rows x d in (layout, ldw), and b (rows entries; NULL = 0), where rows =    \
 * m, or m / 2 for LINATTN_ACT_HEDGEHOG: phi_j = exp(s_j - M) / sum_i         \
 * exp(s_i - M) over the m entries of s = [u, -u], u = W x~ + b,              \
 * M = max_i |u_i|.  x~ = input_scale x (default 1).  The plan copies W and   \
 * b (rounded to the plan's precision).  opts.m must be 0 or m.               \
 * Errors: -1 plan NULL; -2 act unknown; -3 d < 1; -4 m < 1, or odd for       \
 * HEDGEHOG; -5 e < 1; -6 layout; -7 w NULL, or an entry not finite in        \
 * the plan's precision; -8 ldw; -9 an entry of b not finite; -10 an          \
 * option out of range (as linattn_d_plan_create, or opts.m, or               \
 * LINATTN_DENOM_COUNT with LINATTN_ACT_EXP);                                 \
 * LINATTN_ESIZE; LINATTN_ENOMEM.  *plan is set only on success.              \
 * Thread-safe. */                                                            \
LINATTN_API int X(plan_create_custom)(X(plan) **plan, int act, int64_t d,     \
                                      int64_t m, int64_t e, int layout,       \
                                      const R *w, int64_t ldw, const R *b,    \
                                      const linattn_opts *opts);              \
                                                                              \
/* int linattn_d_plan_weights(const linattn_d_plan *plan, int layout,         \
 *                            double *w, int64_t ldw, int64_t *rows)          \
 * The W the plan's map uses, rows x d into (layout, w, ldw), as drawn or     \
 * given (before input_scale), and its row count into *rows: m for FAVOR      \
 * and custom maps (m / 2 for HEDGEHOG), m / 2 for FAVOR_HYP and TRIG, 0      \
 * for maps without W (nothing written).  w NULL (ldw ignored) and rows       \
 * NULL skip them.  A float plan's W is the double draw rounded.              \
 * Errors: -1 plan NULL; -2 layout; -4 ldw (w not NULL); LINATTN_ESIZE.       \
 * Thread-safe. */                                                            \
LINATTN_API int X(plan_weights)(const X(plan) *plan, int layout, R *w,        \
                                int64_t ldw, int64_t *rows);                  \
                                                                              \
/* void linattn_d_plan_destroy(linattn_d_plan *plan) -- frees; NULL is a     \
 * no-op.  No state of the plan may be used afterwards. */                    \
LINATTN_API void X(plan_destroy)(X(plan) *plan);                              \
                                                                              \
/* int linattn_d_plan_dims(const linattn_d_plan *plan, int64_t *d,           \
 *                         int64_t *m, int64_t *e)                           \
 * Reads the plan's dimensions; any output pointer may be NULL.              \
 * Errors: -1 plan NULL.  Thread-safe. */                                     \
LINATTN_API int X(plan_dims)(const X(plan) *plan, int64_t *d, int64_t *m,     \
                             int64_t *e);                                     \
                                                                              \
/* int linattn_d_plan_block(const linattn_d_plan *plan, int64_t *block)      \
 * Rows per block the plan streams with (the option, or the default).       \
 * Errors: -1 plan NULL; -2 block NULL.  Thread-safe. */                      \
LINATTN_API int X(plan_block)(const X(plan) *plan, int64_t *block);           \
                                                                              \
/* int linattn_d_plan_decay(const linattn_d_plan *plan, double *log_decay)    \
 * *log_decay = ln gamma, the plan's decay per token (linattn_opts: 0 for     \
 * none).  Errors: -1 plan NULL; -2 log_decay NULL.  Thread-safe. */          \
LINATTN_API int X(plan_decay)(const X(plan) *plan, double *log_decay);        \
                                                                              \
/* int linattn_d_features(const linattn_d_plan *plan, int layout, int64_t n,  \
 *                        const double *x, int64_t ldx,                       \
 *                        double *phi, int64_t ldphi)                         \
 * phi = phi(x) row by row: x is n x d, phi is n x m, both in layout.         \
 * These are the features themselves, without stabilizing shifts: for the     \
 * exponential maps they over- or underflow at large norms, where the         \
 * attention paths (which shift) do not (the one exception to "finite         \
 * inputs, finite outputs": status 0 with Inf there).                         \
 * Errors: -1 plan NULL; -2 layout; -3 n < 0; -4 x NULL; -5 ldx;              \
 * -6 phi NULL or meeting x; -7 ldphi; LINATTN_ESIZE; LINATTN_ENOMEM.         \
 * Thread-safe. */                                                            \
LINATTN_API int X(features)(const X(plan) *plan, int layout, int64_t n,       \
                            const R *x, int64_t ldx, R *phi, int64_t ldphi);  \
                                                                              \
/* int linattn_d_state_create(linattn_d_state **state,                       \
 *                            const linattn_d_plan *plan)                    \
 * A zero state (S = 0, z = 0, no tokens) for plan.  Errors: -1 state NULL;  \
 * -2 plan NULL; LINATTN_ENOMEM.  *state is set only on success. */           \
LINATTN_API int X(state_create)(X(state) **state, const X(plan) *plan);       \
                                                                              \
/* void linattn_d_state_destroy(linattn_d_state *state) -- NULL is a no-op. */\
LINATTN_API void X(state_destroy)(X(state) *state);                           \
                                                                              \
/* int linattn_d_state_reset(linattn_d_state *state)                         \
 * S = 0, z = 0, tokens = 0.  Errors: -1 state NULL. */                       \
LINATTN_API int X(state_reset)(X(state) *state);                              \
                                                                              \
/* int linattn_d_state_update(linattn_d_state *state, int layout, int64_t n,  \
 *                            const double *k, int64_t ldk,                   \
 *                            const double *v, int64_t ldv)                   \
 * S += phi(K)^T V, z += phi(K)^T 1, tokens += n; K is n x d, V is n x e,     \
 * both in layout.  Streams over row blocks: O(n m e) work, no memory in n.   \
 * The new sums are looked at before they are taken (one pass over the        \
 * m x (e + 1) state per call; a few rows whose sums provably stay in         \
 * range skip it): finite keys and values whose sums leave the range (or,     \
 * in float, the float copy's) are LINATTN_EOVERFLOW, state unchanged.        \
 * NaN and Inf in K or V are taken (check_finite) and make the state's        \
 * queries propagate them.                                                    \
 * Errors: -1 state NULL; -2 layout; -3 n < 0; -4 k NULL; -5 ldk;             \
 * -6 v NULL; -7 ldv; LINATTN_ESIZE (also tokens + n beyond INT64_MAX);       \
 * LINATTN_ENOMEM, LINATTN_ENONFINITE, LINATTN_EOVERFLOW (state               \
 * unchanged). */                                                             \
LINATTN_API int X(state_update)(X(state) *state, int layout, int64_t n,       \
                                const R *k, int64_t ldk, const R *v,          \
                                int64_t ldv);                                 \
                                                                              \
/* int linattn_d_state_merge(linattn_d_state *dst,                            \
 *                           const linattn_d_state *src)                      \
 * dst += src (S, z and token counts add: the state of a concatenation).      \
 * Errors: -1 dst NULL; -2 src NULL, or planned for another map or other      \
 * dimensions; LINATTN_ESIZE (the token counts add beyond INT64_MAX);         \
 * LINATTN_EOVERFLOW (two states without NaN or Inf whose sum leaves the      \
 * range); dst unchanged on any of them.  dst == src doubles the state. */    \
LINATTN_API int X(state_merge)(X(state) *dst, const X(state) *src);           \
                                                                              \
/* int linattn_d_state_copy(linattn_d_state *dst, const linattn_d_state *src)\
 * dst = src.  Errors: -1 dst NULL; -2 src NULL or incompatible (as merge). */\
LINATTN_API int X(state_copy)(X(state) *dst, const X(state) *src);            \
                                                                              \
/* int linattn_d_state_get(const linattn_d_state *state, int layout,          \
 *                         double *s, int64_t lds, double *z,                 \
 *                         int64_t *tokens)                                   \
 * Reads S (m x e, in layout) into s, z (m) into z, and the number of         \
 * tokens absorbed (keys of weight 0 are not counted: linattn_d_extras);      \
 * s, z and tokens may each be NULL to skip them.                             \
 * Errors: -1 state NULL; -2 layout; -4 lds (when s is not NULL); -5 z        \
 * meeting s; LINATTN_ESIZE (s not addressable). */                           \
LINATTN_API int X(state_get)(const X(state) *state, int layout, R *s,         \
                             int64_t lds, R *z, int64_t *tokens);             \
                                                                              \
/* int linattn_d_state_shift(const linattn_d_state *state, double *shift)     \
 * The state's stabilizing shift c: for the maps with exponentials (FAVOR,    \
 * FAVOR_HYP, TRIG, custom EXP) the stored S and z, as state_get reads        \
 * them, are the true sums times exp(-c), c the largest key exponent          \
 * absorbed (doc/maps.md); 0 for the other maps and for a state without       \
 * tokens.  Errors: -1 state NULL; -2 shift NULL. */                          \
LINATTN_API int X(state_shift)(const X(state) *state, double *shift);         \
                                                                              \
/* int linattn_d_state_query(const linattn_d_state *state, int layout,        \
 *         int64_t n, const double *q, int64_t ldq, double *out,              \
 *         int64_t ldout, double *num, int64_t ldnum, double *den,            \
 *         int64_t *bad_row)                                                  \
 * num_i = phi(q_i)^T S (1 x e), den_i = phi(q_i)^T z + eps (COUNT: the       \
 * state's tokens + eps), out_i = num_i / den_i, for the n x d queries Q.     \
 * out and num are n x e in layout, den has n entries (stride 1).  Each of    \
 * out, num, den may be NULL (not all three; a NULL one's leading             \
 * dimension is ignored); the normalizer policy is applied only when out      \
 * is requested.  With the maps that carry exponentials (see                  \
 * linattn_d_state_shift), num_i and den_i are both scaled by                 \
 * exp(-c_i - c), c_i the largest exponent of phi(q_i) and c the state's      \
 * shift: a factor that cancels in out_i.                                     \
 * LINATTN_EDENOM: row r (0-based) is the first whose normalizer breaks the   \
 * policy; r is stored in *bad_row (if not NULL).  Rows before r hold their   \
 * results in every requested output; row r is untouched; every later row     \
 * holds either its result or its previous contents (threads work on other    \
 * rows meanwhile) -- never a value divided by a bad normalizer.              \
 * LINATTN_EOVERFLOW: row r is the first whose requested outputs (out_i,      \
 * or num_i or den_i when asked for) hold a value beyond the range            \
 * although q_i and the state hold no NaN or Inf (e.g. phi(q_i)^T S           \
 * overflows, or num_i / den_i does); r in *bad_row.  Rows before r hold      \
 * their results, row r holds its non-finite values, later rows their         \
 * results or their previous contents.  (A row whose query or state holds     \
 * NaN or Inf propagates them with status 0, as check_finite describes.)      \
 * Errors: -1 state NULL; -2 layout; -3 n < 0; -4 q NULL; -5 ldq; -6 out      \
 * meeting q; -7 ldout (out not NULL); -8 num meeting q or out; -9 ldnum      \
 * (num not NULL); -10 out, num and den all NULL, or den meeting q, out or    \
 * num; LINATTN_ESIZE; LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW;     \
 * LINATTN_ENONFINITE.  Several threads may query one state. */               \
LINATTN_API int X(state_query)(const X(state) *state, int layout, int64_t n,  \
                               const R *q, int64_t ldq, R *out,               \
                               int64_t ldout, R *num, int64_t ldnum, R *den,  \
                               int64_t *bad_row);                             \
                                                                              \
/* int linattn_d_states_step(linattn_d_state *const *states, int64_t count,   \
 *         int layout, const double *q, int64_t ldq, const double *k,         \
 *         int64_t ldk, const double *v, int64_t ldv, double *out,            \
 *         int64_t ldout, int64_t *bad_row)                                   \
 * One decoding step of count streams (sequences x heads, one state each):    \
 * for every r < count, states[r] absorbs key row r of K and value row r of   \
 * V, S_r += phi(k_r) v_r^T, z_r += phi(k_r), then answers query row r of Q:  \
 * out_r = phi(q_r)^T S_r / (phi(q_r)^T z_r + eps), each row as               \
 * linattn_d_state_update of that row then linattn_d_state_query of it, bit   \
 * for bit.  Q and K are count x d, V and out count x e (every state's plan   \
 * of those d and e; maps and m may differ, one plan per head).  No           \
 * allocation and no BLAS when every plan has m <= 512 and e < 512 and the    \
 * sums stay well inside the range.  Rows are independent: a row that fails   \
 * leaves its state unchanged when its update failed (LINATTN_EOVERFLOW), or  \
 * its state advanced and its out row unwritten when its query did            \
 * (LINATTN_EDENOM, LINATTN_EOVERFLOW), and the other rows are done; the      \
 * status is the first failing row's, that row in *bad_row.  Errors: -1       \
 * states NULL (count > 0), an entry NULL, of other d or e than states[0]'s,  \
 * or one state twice; -2 count < 0; -3 layout; -4 q NULL; -5 ldq; -6 k       \
 * NULL; -7 ldk; -8 v NULL; -9 ldv; -10 out NULL or meeting q, k or v; -11    \
 * ldout (count 0: no plan gives d and e, so a leading dimension need only    \
 * be >= 1); LINATTN_ESIZE (also a state's tokens at INT64_MAX);              \
 * LINATTN_ENONFINITE (the rows of a state whose plan asks for check_finite); \
 * LINATTN_ENOMEM (only beyond the sizes above); LINATTN_EDENOM;              \
 * LINATTN_EOVERFLOW.  Needs exclusive access to every state. */              \
LINATTN_API int X(states_step)(X(state) *const *states, int64_t count,        \
                               int layout, const R *q, int64_t ldq,           \
                               const R *k, int64_t ldk, const R *v,           \
                               int64_t ldv, R *out, int64_t ldout,            \
                               int64_t *bad_row);                             \
                                                                              \
/* int linattn_d_attention(const linattn_d_plan *plan, int layout,            \
 *         int64_t nq, int64_t nk, const double *q, int64_t ldq,              \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,        \
 *         double *out, int64_t ldout, int64_t *bad_row)                      \
 * Non-causal linear attention, factored: out_i = phi(q_i)^T S /              \
 * (phi(q_i)^T z + eps) with S, z over all nk keys (COUNT: / (nk + eps)).     \
 * Q is nq x d, K nk x d, V nk x e, out nq x e, all in layout.                \
 * O((nq + nk) m e) work; extra memory O(block (m + e) + m e),                \
 * independent of nq and nk.                                                  \
 * Errors: -1 plan NULL; -2 layout; -3 nq < 0; -4 nk < 0; -5 q NULL;          \
 * -6 ldq; -7 k NULL; -8 ldk; -9 v NULL; -10 ldv; -11 out NULL or meeting     \
 * q, k or v; -12 ldout; LINATTN_ESIZE; LINATTN_ENOMEM; LINATTN_EDENOM and    \
 * LINATTN_EOVERFLOW (as state_query; sums of the keys beyond the range       \
 * reach every row that reads them); LINATTN_ENONFINITE.                      \
 * Thread-safe. */                                                            \
LINATTN_API int X(attention)(const X(plan) *plan, int layout, int64_t nq,     \
                             int64_t nk, const R *q, int64_t ldq, const R *k, \
                             int64_t ldk, const R *v, int64_t ldv, R *out,    \
                             int64_t ldout, int64_t *bad_row);                \
                                                                              \
/* int linattn_d_causal(const linattn_d_plan *plan, int layout, int64_t n,    \
 *         const double *q, int64_t ldq, const double *k, int64_t ldk,        \
 *         const double *v, int64_t ldv, double *out, int64_t ldout,          \
 *         int64_t *bad_row)                                                  \
 * Causal linear attention: out_i = sum_{j<=i} phi(q_i).phi(k_j) v_j /        \
 * (sum_{j<=i} phi(q_i).phi(k_j) + eps) (COUNT: / (i + 1 + eps)), by          \
 * chunks of C rows: the triangle tril(phi(Q_c) phi(K_c)^T) and the           \
 * carried state, all GEMMs.  Q, K are n x d, V and out n x e, in layout.     \
 * O(n (C + m) e) work, extra memory O(C (m + e + C) + m e) per thread.       \
 * LINATTN_EDENOM and LINATTN_EOVERFLOW as in linattn_d_state_query (row i    \
 * overflows when its own sums over keys j <= i do, whatever later keys       \
 * hold).  Errors: -1 plan; -2 layout; -3 n < 0; -4 q; -5 ldq; -6 k;          \
 * -7 ldk; -8 v; -9 ldv; -10 out (NULL, or meeting q, k or v); -11 ldout;     \
 * LINATTN_ESIZE; LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW;          \
 * LINATTN_ENONFINITE.  Thread-safe. */                                       \
LINATTN_API int X(causal)(const X(plan) *plan, int layout, int64_t n,         \
                          const R *q, int64_t ldq, const R *k, int64_t ldk,   \
                          const R *v, int64_t ldv, R *out, int64_t ldout,     \
                          int64_t *bad_row);                                  \
                                                                              \
/* int linattn_d_naive_causal(same arguments as linattn_d_causal)            \
 * The quadratic causal baseline: phi(Q) phi(K)^T by row blocks, masked to   \
 * j <= i, times V, over row sums.  Errors as linattn_d_causal. */          \
LINATTN_API int X(naive_causal)(const X(plan) *plan, int layout, int64_t n,   \
                                const R *q, int64_t ldq, const R *k,          \
                                int64_t ldk, const R *v, int64_t ldv, R *out, \
                                int64_t ldout, int64_t *bad_row);             \
                                                                              \
/* int linattn_d_naive(same arguments as linattn_d_attention)                \
 * The quadratic baseline of the same maths: A = phi(Q) phi(K)^T by row      \
 * blocks of queries (GEMM), out = (A V) / (A 1 + eps) (COUNT: nk + eps).     \
 * O(nq nk (m + e)) work; memory O(nk m + rows nk), never nq x nk.  Errors    \
 * and thread-safety                                                          \
 * as linattn_d_attention. */                                                 \
LINATTN_API int X(naive)(const X(plan) *plan, int layout, int64_t nq,         \
                         int64_t nk, const R *q, int64_t ldq, const R *k,     \
                         int64_t ldk, const R *v, int64_t ldv, R *out,        \
                         int64_t ldout, int64_t *bad_row);                    \
                                                                              \
/* ---- The extension point: a call's optional parts.  A linattn_d_extras  \
 * holds what a call may take beyond its arguments; the call's _ex form    \
 * takes one (NULL: none, the plain call).  Start from                     \
 * linattn_d_extras_init, then set the fields wanted: a field at its init  \
 * value means its part is absent, and the parts present compose in one    \
 * call (normalizers out and a starting state together, say).  Later       \
 * versions add parts in the reserved words, whose init value stays       \
 * "absent"; a call refuses reserved words that are not zero (-i of the    \
 * extras), so that a program built for a later version is refused by an  \
 * older library instead of being served without the part it asked for.   \
 * The struct is read only; its pointers follow the aliasing rules of the  \
 * call's other arguments. ---- */                                          \
typedef struct X(extras_s) {                                                  \
    /* normalizers out: nq entries (stride 1), as linattn_d_attention_     \
     * forward writes them (eps included); NULL: not asked for */          \
    R *den;                                                                   \
    /* a state to start from, of a plan with the call's map and sizes (as  \
     * linattn_d_state_merge requires): causal rows see its keys before    \
     * the call's, non-causal rows its keys with the call's (S = its S +   \
     * phi(K)^T V; under LINATTN_DENOM_COUNT its tokens count too); NULL:  \
     * none, a zero state */                                                \
    X(state) *state;                                                          \
    /* with state: 1 = on success the state then holds its keys and the    \
     * call's (as linattn_d_state_update would leave it, to rounding),     \
     * 0 = it is only read; on any error it is unchanged.  0 without a     \
     * state. */                                                            \
    int absorb;                                                               \
    int reserved_int[3];                                                      \
    /* key weights w_j >= 0, finite, one per key row (stride 1; NULL: every   \
     * weight 1): S = sum w_j phi(k_j) v_j^T, z = sum w_j phi(k_j), and       \
     * under LINATTN_DENOM_COUNT the count is sum w_j.  A weight 0 is a       \
     * padding mask: that key's rows of K and V have no effect on any         \
     * result (NaN or Inf there reaches nothing, check_finite skips them) */  \
    const R *weights;                                                         \
    /* packed sequences: nseq sequences stored end to end, sequence s the     \
     * query rows [offsets[s], offsets[s+1]) (nseq + 1 non-decreasing         \
     * entries from 0 to nq: FlashAttention's cu_seqlens) and the key rows    \
     * [key_offsets[s], key_offsets[s+1]) (0 to nk; NULL: offsets, which      \
     * then end at nk too).  Each sequence's queries see its own keys only    \
     * (causal: its earlier ones), as a call of its own would; empty          \
     * sequences are allowed.  The weights, den and the rows named by         \
     * bad_row are the packed stream's.  NULL (nseq 0): one sequence */       \
    const int64_t *offsets;                                                   \
    const int64_t *key_offsets;                                               \
    /* with offsets: nseq states, sequence s's to start from (as state        \
     * above; every one of the call's plan and not NULL), and with absorb     \
     * = 1 each then holds its keys and the sequence's (the final states;     \
     * no state twice), all unchanged on any error.  state must be NULL.      \
     * NULL: every sequence from a zero state */                              \
    X(state) *const *states;                                                  \
    /* the backward _ex calls: dL/dw_j out, one per key row (stride 1):       \
     * phi(k_j) . (dS v_j + dz), 0 for a key of weight 0 (absent: never       \
     * read); NULL: not asked for (weights NULL: dL/dw at every w_j = 1) */   \
    R *dweights;                                                              \
    /* linattn_d_causal_backward_ex with state (states): dL/d of the          \
     * starting state's accumulator as linattn_d_state_export writes it,      \
     * m x (e + 1) doubles row major ([dS dz], the true sums' gradient times  \
     * exp(shift)); with states nseq of them, sequence s's at s m (e + 1)     \
     * (linattn_d_batched_causal_backward_ex: batch heads nseq, problem p's   \
     * sequence s at (p nseq + s) m (e + 1)).  NULL: not asked for */         \
    double *dstates;                                                          \
    /* per-token gates in log space, g_t <= 0, one per key row (stride 1;     \
     * NULL: every g_t 0): the state forgets by exp(g_t) at token t, after    \
     * the plan's decay, S_t = gamma exp(g_t) S_{t-1} + phi(k_t) v_t^T (z     \
     * and the count likewise): row i sees key j <= i with weight             \
     * gamma^(i - j) exp(G_i - G_j), G the running sum of g (Mamba-2, gated   \
     * linear attention's scalar gate).  A gate > 0 is -i of the extras;      \
     * NaN (or -Inf) propagates to the outputs it reaches unless              \
     * check_finite refuses it.  The causal calls, their references and the   \
     * streaming update take them. */                                         \
    const R *gates;                                                           \
    /* linattn_d_batched_causal_ex: a log decay per head, heads entries,      \
     * each <= 0 and finite, added to the plan's (RetNet's heads each have    \
     * their own gamma): head h forgets by exp(plan's + head_decays[h]) per   \
     * token.  NULL: the plan's for every head.  Out of range: -i of the      \
     * extras.  Only that call takes it. */                                   \
    const double *head_decays;                                                \
    /* the single backward _ex calls (one sequence): dL/d of the call's       \
     * final state's accumulator from beyond the call (later chunks of a      \
     * stream, later ranks' queries), m x (e + 1) doubles row major as        \
     * linattn_d_state_export writes it ([dS dz], the true sums' gradient     \
     * times exp(shift)), at the shift of the final state: causal, the state  \
     * linattn_d_causal_ex leaves with absorb = 1; non-causal, the keys'      \
     * state (the given one, or linattn_d_state_update's of K, V).  It adds   \
     * to the queries' d[S z] before the keys read it (flash-linear-          \
     * attention's dht).  NULL: none, 0 */                                    \
    const double *dstate_end;                                                 \
    /* the causal backward _ex calls: dL/da_t out, one per key row (stride    \
     * 1), the gradient with respect to token t's log decay a_t = ln gamma +  \
     * g_t, so dL/dg_t of the gates (and dL/d ln gamma = the sum over t):     \
     * sum_{i >= t} (phi(q_i) . dphi(q_i) - phi(k_i) . dphi(k_i)), plus the   \
     * final state's <dstate_end, S_end> at the last row.  Also without       \
     * gates and with gamma = 1 (the gradient at g = 0).  NULL: not asked     \
     * for */                                                                 \
    R *dgates;                                                                \
    /* the causal forward's carried states, saved for its backward            \
     * (flash-linear-attention's h): linattn_d_causal_ex writes the state     \
     * [S z] before every chunk and the final one here, and                   \
     * linattn_d_causal_backward_ex with the same plan, n and inputs reads    \
     * them instead of rebuilding the carried state (one carried product and  \
     * the threads' prefix pass fewer, the chunks of the forward's thread     \
     * split whatever the backward's).  linattn_d_causal_chunk_states_size    \
     * entries (O(n m e / C): the default backward's memory does not grow     \
     * with n, this one does).  The forward writes it only when it succeeds   \
     * (a call that fails after its checks leaves it refused by the           \
     * backward, one refused by its checks leaves it as it was); the          \
     * backward refuses (-i of the extras) a buffer not so written for        \
     * its n and plan.  One sequence only (no offsets); the MPI calls         \
     * do not take it.  NULL: not kept */                                     \
    R *chunk_states;                                                          \
    void *reserved_ptr[1];                                                    \
    int64_t nseq; /* the sequences of offsets (0 without them) */             \
    int64_t reserved[15];                                                     \
} X(extras);                                                                  \
                                                                              \
/* int linattn_d_extras_init(linattn_d_extras *ex)                           \
 * Every part absent: den and state NULL, absorb 0, the reserved words 0.   \
 * Errors: -1 ex NULL.  Thread-safe. */                                     \
LINATTN_API int X(extras_init)(X(extras) *ex);                                \
                                                                              \
/* int linattn_d_attention_ex(const linattn_d_plan *plan, int layout,       \
 *         int64_t nq, int64_t nk, const double *q, int64_t ldq,            \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,      \
 *         double *out, int64_t ldout, const linattn_d_extras *ex,          \
 *         int64_t *bad_row)                                                \
 * linattn_d_attention with the parts of ex: out_i = phi(q_i)^T S / den_i, S  \
 * and z over ex->state's keys and these nk (ex->state NULL: these), each of  \
 * these weighted by ex->weights (S = sum_j w_j phi(k_j) v_j^T, z likewise;  \
 * under LINATTN_DENOM_COUNT den = the state's count + sum_j w_j), den (if    \
 * asked for) as linattn_d_attention_forward writes it, and with ex->absorb   \
 * the state then holding its keys and these (sums that finite keys and       \
 * values push beyond the range are refused as linattn_d_state_update refuses \
 * them: LINATTN_EOVERFLOW with *bad_row -1, nothing written, the state       \
 * unchanged).  ex NULL, or as linattn_d_extras_init leaves it:               \
 * linattn_d_attention, bit for bit; with den only:                           \
 * linattn_d_attention_forward, bit for bit.  Statuses as                     \
 * linattn_d_attention; on LINATTN_EDENOM and LINATTN_EOVERFLOW den holds the \
 * rows that out does.  Packed (ex->offsets): each sequence's queries         \
 * against its keys (ex->key_offsets: cross-attention) and its state          \
 * (ex->states), every sequence run whatever another returned, the status     \
 * the first failing sequence's and *bad_row its packed row; absorbing        \
 * states are all unchanged on any error (memory O(nseq m e) for their        \
 * backups).  Errors: -1 .. -12 as linattn_d_attention (-11 also out          \
 * meeting the weights, offsets or states); -13 ex: a reserved word not 0,    \
 * den meeting another array, a state of a plan with another map or other     \
 * sizes, absorb not 0 or 1 (or 1 without a state), a weight negative, NaN    \
 * or Inf, nseq < 0, offsets not running from 0 to nq (key offsets: to nk)    \
 * without decreasing, key offsets or states without offsets, state with      \
 * them, a states entry NULL, of another plan or (absorbing) twice;           \
 * LINATTN_ESIZE (also a state's tokens + its keys beyond INT64_MAX);         \
 * LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW; LINATTN_ENONFINITE.     \
 * Thread-safe; with a state and absorb = 1 it needs exclusive access to the  \
 * state, with absorb = 0 the state is only read. */                          \
LINATTN_API int X(attention_ex)(const X(plan) *plan, int layout, int64_t nq,  \
                                int64_t nk, const R *q, int64_t ldq,          \
                                const R *k, int64_t ldk, const R *v,          \
                                int64_t ldv, R *out, int64_t ldout,           \
                                const X(extras) *ex, int64_t *bad_row);       \
                                                                              \
/* int linattn_d_causal_ex(const linattn_d_plan *plan, int layout,          \
 *         int64_t n, const double *q, int64_t ldq, const double *k,        \
 *         int64_t ldk, const double *v, int64_t ldv, double *out,          \
 *         int64_t ldout, const linattn_d_extras *ex, int64_t *bad_row)     \
 * linattn_d_causal with the parts of ex: rows see ex->state's keys first (as \
 * linattn_d_state_causal; under LINATTN_DENOM_COUNT row i's count is its     \
 * count + i + 1), den (if asked for) as linattn_d_causal_forward writes it, \
 * and with ex->absorb the state then holding its keys and these n (sums      \
 * beyond the range refused as linattn_d_state_causal refuses them).  ex NULL \
 * or all absent: linattn_d_causal, bit for bit; den only:                    \
 * linattn_d_causal_forward; a state (of the call's plan) only:               \
 * linattn_d_state_causal, bit for bit.  Statuses, work and memory as         \
 * linattn_d_causal.  Packed (ex->offsets; no key_offsets: a token is a       \
 * query and a key): each sequence restarts from its state (ex->states,       \
 * else zero) and no output reads a token of another sequence; as at          \
 * linattn_d_attention_ex otherwise.  Decay (the plan's log_decay and         \
 * ex->gates): row i sees the state's keys times exp(b_i) and key j <= i      \
 * times exp(b_i - b_j), b_i the sum of the log decays of rows 0 .. i, and    \
 * the absorbed state forgets likewise; every factor an exponential <= 1,     \
 * composed with the shifted maps' in one exponent (doc/decay.md).  Errors:   \
 * -1 .. -11 as linattn_d_causal (-10 also out meeting the weights, offsets   \
 * or states); -12 ex (as at linattn_d_attention_ex, key_offsets not NULL,    \
 * a gate above 0, chunk_states with offsets or meeting another array);       \
 * with ex->chunk_states, the chunk states saved on success (see              \
 * linattn_d_extras); LINATTN_ESIZE (also                                     \
 * a state's tokens + its n beyond INT64_MAX); LINATTN_ENOMEM;                \
 * LINATTN_EDENOM; LINATTN_EOVERFLOW;                                         \
 * LINATTN_ENONFINITE.  Thread-safe; a state as at linattn_d_attention_ex.    \
 */                                                                         \
LINATTN_API int X(causal_ex)(const X(plan) *plan, int layout, int64_t n,      \
                             const R *q, int64_t ldq, const R *k,             \
                             int64_t ldk, const R *v, int64_t ldv, R *out,    \
                             int64_t ldout, const X(extras) *ex,              \
                             int64_t *bad_row);                               \
                                                                              \
/* int linattn_d_state_update_ex(linattn_d_state *state, int layout,          \
 *         int64_t n, const double *k, int64_t ldk, const double *v,          \
 *         int64_t ldv, const linattn_d_extras *ex)                           \
 * linattn_d_state_update with the parts of ex it takes, the key weights:     \
 * S += sum_j w_j phi(k_j) v_j^T, z += sum_j w_j phi(k_j), the count          \
 * (LINATTN_DENOM_COUNT) += sum_j w_j, tokens += the keys of weight not 0     \
 * (a key of weight 0 has no effect: as if it were not there); and the gates  \
 * with the plan's decay: S = exp(B) S + sum_j w_j exp(B - b_j) phi(k_j)      \
 * v_j^T (z and the count likewise), b_j the running sum of the log decays    \
 * up to key j, B = b_n (a key of weight 0 still forgets; an array of n       \
 * weights is allocated).  ex NULL or all absent: linattn_d_state_update, bit \
 * for bit.  Errors: -1 .. -7 as linattn_d_state_update; -8 ex: a reserved    \
 * word not 0, a part it does not take (den, state, absorb), a weight         \
 * negative, NaN or Inf, a gate above 0;                                      \
 * LINATTN_ESIZE; LINATTN_ENOMEM, LINATTN_ENONFINITE (rows of weight not      \
 * 0), LINATTN_EOVERFLOW (state unchanged); offsets and states are not        \
 * taken (-8).  Needs exclusive access to the state.  (A checkpoint of a      \
 * weighted stream under LINATTN_DENOM_COUNT carries its count, the keys'     \
 * weight: format version 2.) */                                              \
LINATTN_API int X(state_update_ex)(X(state) *state, int layout, int64_t n,    \
                                   const R *k, int64_t ldk, const R *v,       \
                                   int64_t ldv, const X(extras) *ex);         \
                                                                              \
/* int linattn_d_states_step_ex(linattn_d_state *const *states,               \
 *         int64_t count, int layout, const double *q, int64_t ldq,           \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,        \
 *         double *out, int64_t ldout, const linattn_d_extras *ex,            \
 *         int64_t *bad_row)                                                  \
 * linattn_d_states_step with the parts of ex it takes, one entry per row r   \
 * (stride 1, count entries): the gates, S_r = exp(ln gamma_r + g_r) S_r +    \
 * w_r phi(k_r) v_r^T (z_r and the count likewise), and the key weights       \
 * w_r (a row of weight 0 adds no key and no token, its state still           \
 * forgets, its query is answered); each row as                               \
 * linattn_d_state_update_ex of that row with ex->gates + r and               \
 * ex->weights + r, then linattn_d_state_query of it, bit for bit.  Q and     \
 * K count x d, V and out count x e, as linattn_d_states_step.  No            \
 * allocation with gates (as linattn_d_states_step); a row with weights       \
 * takes the blocked update (an allocation).  ex NULL or all absent:          \
 * linattn_d_states_step, bit for bit.  Every check (every row's) comes       \
 * before any state changes.  Errors: -1 .. -11 as linattn_d_states_step      \
 * (-10 also out meeting the weights); -12 ex: a reserved word not 0, a       \
 * part it does not take (den, state, absorb, offsets, states, dweights,      \
 * dstates, head_decays, dstate_end, dgates), a weight negative, NaN or       \
 * Inf, a gate above 0 (+Inf among them), the gates meeting out;              \
 * LINATTN_ESIZE (also a state's tokens at INT64_MAX, rows of weight not      \
 * 0); LINATTN_ENONFINITE (a NaN or infinite gate, or its row's query, key    \
 * or value (weight not 0), of a state whose plan asks for check_finite;      \
 * without it NaN propagates as in linattn_d_state_update_ex);                \
 * LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW (as                      \
 * linattn_d_states_step: the other rows done, the first failing row in       \
 * *bad_row).  Needs exclusive access to every state. */                      \
LINATTN_API int X(states_step_ex)(X(state) *const *states, int64_t count,     \
                                  int layout, const R *q, int64_t ldq,        \
                                  const R *k, int64_t ldk, const R *v,        \
                                  int64_t ldv, R *out, int64_t ldout,         \
                                  const X(extras) *ex, int64_t *bad_row);     \
                                                                              \
/* int linattn_d_naive_ex(const linattn_d_plan *plan, int layout,             \
 *         int64_t nq, int64_t nk, const double *q, int64_t ldq,              \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,        \
 *         double *out, int64_t ldout, const linattn_d_extras *ex,            \
 *         int64_t *bad_row)                                                  \
 * linattn_d_naive with the parts of ex it takes, the key weights: out_i =    \
 * sum_j w_j a_ij v_j / sum_j w_j a_ij, a_ij = phi(q_i) . phi(k_j) (the       \
 * count normalizer: sum_j w_j), the reference of linattn_d_attention_ex      \
 * with weights.  A key of weight 0 is never read.  ex NULL or all absent:    \
 * linattn_d_naive, bit for bit.  Memory as linattn_d_naive, and with         \
 * weights O(nk (d + e)) for copies of K and V.  Packed (ex->offsets,         \
 * ex->key_offsets) as linattn_d_attention_ex, the reference of its packed    \
 * calls.  Errors as linattn_d_naive; -13 ex: a reserved word not 0, a part   \
 * it does not take (den, state, absorb, states), a weight negative, NaN or   \
 * Inf, offsets as at linattn_d_attention_ex.  Thread-safe. */                \
LINATTN_API int X(naive_ex)(const X(plan) *plan, int layout, int64_t nq,      \
                            int64_t nk, const R *q, int64_t ldq, const R *k,  \
                            int64_t ldk, const R *v, int64_t ldv, R *out,     \
                            int64_t ldout, const X(extras) *ex,               \
                            int64_t *bad_row);                                \
                                                                              \
                                                                              \
/* int linattn_d_naive_causal_ex(const linattn_d_plan *plan, int layout,      \
 *         int64_t n, const double *q, int64_t ldq, const double *k,          \
 *         int64_t ldk, const double *v, int64_t ldv, double *out,            \
 *         int64_t ldout, const linattn_d_extras *ex, int64_t *bad_row)       \
 * linattn_d_naive_causal with the key weights of ex, as linattn_d_naive_ex   \
 * over the keys j <= i (row i's count: the weight of keys j <= i), the       \
 * reference of linattn_d_causal_ex with weights (and packed: offsets); a     \
 * decayed plan or gates: each score times exp(b_i - b_j), b the running sum  \
 * of the log decays, entry by entry.  ex NULL or all absent:                 \
 * linattn_d_naive_causal, bit for bit.  Errors as linattn_d_naive_causal;    \
 * -12 ex (as at linattn_d_naive_ex).  Thread-safe. */                        \
LINATTN_API int X(naive_causal_ex)(const X(plan) *plan, int layout,           \
                                   int64_t n, const R *q, int64_t ldq,        \
                                   const R *k, int64_t ldk, const R *v,       \
                                   int64_t ldv, R *out, int64_t ldout,        \
                                   const X(extras) *ex, int64_t *bad_row);    \
                                                                              \
                                                                              \
/* int linattn_d_softmax(int layout, int64_t nq, int64_t nk, int64_t d,      \
 *         int64_t e, double scale, const double *q, int64_t ldq,            \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,       \
 *         double *out, int64_t ldout)                                       \
 * Exact softmax attention, out = softmax(scale Q K^T) V, row by row with    \
 * the row maximum subtracted (no overflow).  The reference that the         \
 * kernelized maps approximate; scale is usually 1/sqrt(d).  Memory          \
 * O(rows nk).  NaN input propagates to the rows it touches.  A row whose   \
 * largest score is infinite (scale q.k beyond the floating-point range, or \
 * infinite input) has no computable weights: LINATTN_EDENOM, with the rows  \
 * before it written, it untouched, and later rows holding their result or   \
 * their previous contents (as at linattn_d_state_query).  A weighted sum    \
 * beyond the range (values near the largest, summed before the division)   \
 * is LINATTN_EOVERFLOW, rows as at linattn_d_state_query.                   \
 * Errors: -1 layout; -2 nq < 0; -3 nk < 1; -4 d < 1; -5 e < 1; -6 scale not \
 * finite; -7 q; -8 ldq; -9 k; -10 ldk; -11 v; -12 ldv; -13 out (NULL, or   \
 * meeting q, k or v); -14 ldout; LINATTN_ESIZE; LINATTN_ENOMEM;            \
 * LINATTN_EDENOM; LINATTN_EOVERFLOW.  Thread-safe. */                      \
LINATTN_API int X(softmax)(int layout, int64_t nq, int64_t nk, int64_t d,     \
                           int64_t e, R scale, const R *q, int64_t ldq,       \
                           const R *k, int64_t ldk, const R *v, int64_t ldv,  \
                           R *out, int64_t ldout);                            \
                                                                              \
/* ---- Checkpoint/restart: a state to bytes or a file and back, in the       \
 * portable format of doc/checkpoint-format.md (little-endian, versioned,     \
 * CRC-32; S, z, tokens, and the plan's precision, map, d, m, e and map       \
 * fingerprint).  A restored state continues bit for bit. ---- */             \
                                                                              \
/* int linattn_d_state_save_size(const linattn_d_state *state,                \
 *                               int64_t *bytes)                              \
 * *bytes = the size of state's checkpoint, 84 + 8 m (e + 1) (format          \
 * version 1), or 92 + 8 m (e + 1) for a state of a LINATTN_DENOM_COUNT plan  \
 * whose keys' weight is not its token count (version 2, which carries the    \
 * weight).  Errors: -1 state NULL; -2 bytes NULL.                            \
 * Thread-safe. */                                                            \
LINATTN_API int X(state_save_size)(const X(state) *state, int64_t *bytes);    \
                                                                              \
/* int linattn_d_state_save(const linattn_d_state *state, void *buf,          \
 *                          int64_t len, int64_t *written)                    \
 * Writes state's checkpoint, bytes = linattn_d_state_save_size bytes, to     \
 * buf[0, bytes); *written = bytes (written may be NULL).  S and z go as      \
 * the double accumulator of either precision (float states accumulate in     \
 * double), so nothing is rounded.  Errors: -1 state NULL; -2 buf NULL;       \
 * -3 len < bytes (buffer too small; nothing written).  Several threads may   \
 * save and query one state at once. */                                       \
LINATTN_API int X(state_save)(const X(state) *state, void *buf, int64_t len,  \
                              int64_t *written);                              \
                                                                              \
/* int linattn_d_state_load(linattn_d_state *state, const void *buf,          \
 *                          int64_t len)                                      \
 * state = the state checkpointed in buf[0, len), which must hold exactly     \
 * one checkpoint.  All of it is verified first (the checks and their order   \
 * are in doc/checkpoint-format.md); on any error state is unchanged, bit     \
 * for bit.  NaN and Inf in S or z are restored as saved: a state holds       \
 * them only when its inputs or their sums did (check_finite above).          \
 * Errors: -1 state NULL; -2 buf NULL; -3 len < 0; LINATTN_EFORMAT (not a     \
 * checkpoint: wrong magic, truncated or too long, CRC mismatch, or an        \
 * inconsistent header field); LINATTN_EVERSION (a format version this        \
 * library does not read: it reads 1 and 2); LINATTN_EMISMATCH (saved from    \
 * a state of the                                                             \
 * other precision, or of a plan with another map, d, m, e or map             \
 * parameters).  Needs exclusive access to state. */                          \
LINATTN_API int X(state_load)(X(state) *state, const void *buf, int64_t len); \
                                                                              \
/* int linattn_d_state_save_file(const linattn_d_state *state,                \
 *                               const char *path)                            \
 * Saves state's checkpoint to the file path atomically.  Symbolic links in   \
 * path's last component are followed: their target is replaced (a            \
 * dangling link's target created) and the links stay, as most tools do.      \
 * An existing path that is not a regular file (directory, FIFO, socket,      \
 * device) is refused before anything is opened or created.  The bytes go     \
 * to an unnamed file in the target's directory (Linux's O_TMPFILE; mode      \
 * 0666 less the umask), flushed to the device (fsync), linked as             \
 * .NAME.lattmp beside NAME and renamed over it; the directory is then        \
 * synced (best effort).  A process killed meanwhile leaves the old file      \
 * or the new one at path, never a mixture, and no temporary file -- but      \
 * for the instant between link and rename, whose .NAME.lattmp the next       \
 * save to path replaces.  Where unnamed files are not available the bytes    \
 * go to .NAME.<16 hex digits>.lattmp instead, which a kill can leave         \
 * behind.  Temporary names are cut short with a hash of NAME where they      \
 * would pass the file system's name length, so any NAME it takes works.      \
 * On any error nothing is left behind and a file already at path is          \
 * untouched.  Not collective: under MPI each rank saves its own state to     \
 * its own path.  Errors: -1 state NULL; -2 path NULL or empty; LINATTN_EIO   \
 * (errno is that of the failing system call: missing or read-only            \
 * directory, disk full, ...; EISDIR for a directory, EINVAL for another      \
 * file that is not regular, ELOOP for a loop of links); LINATTN_ENOMEM.      \
 * Several threads may save one state at once, to one path too. */            \
LINATTN_API int X(state_save_file)(const X(state) *state, const char *path);  \
                                                                              \
/* int linattn_d_state_load_file(linattn_d_state *state, const char *path)    \
 * linattn_d_state_load from the bytes of the file path (read no further      \
 * than its header allows: a file that does not start as a checkpoint is      \
 * refused after 80 bytes).  Only a regular file is read (through symbolic    \
 * links): a directory, FIFO (even one without a writer: nothing blocks),     \
 * socket or device is LINATTN_EIO with errno EISDIR or EINVAL.  Errors:      \
 * -1 state NULL; -2 path NULL or empty; LINATTN_EIO (cannot open or read     \
 * path, or not a regular file); LINATTN_ENOMEM; then those of                \
 * linattn_d_state_load, with state unchanged on any of them.  Needs          \
 * exclusive access to state. */                                              \
LINATTN_API int X(state_load_file)(X(state) *state, const char *path);        \
                                                                              \
/* int linattn_d_approx_error(const linattn_d_plan *plan, int layout,         \
 *         int64_t nq, int64_t nk, const double *q, int64_t ldq,              \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,        \
 *         double scale, int causal, linattn_approx_stats *stats)             \
 * How well the plan's attention approximates softmax attention on these      \
 * inputs: the statistics of linattn_approx_stats, comparing                  \
 * (A~ V) / den, den = A~ 1 + eps or the plan's count, A~ = phi(Q) phi(K)^T, with softmax(scale QK^T) V    \
 * (causal = 1: both masked to j <= i, nq = nk).  Q is nq x d, K nk x d,      \
 * V nk x e, in layout.  Both are computed here by row blocks of queries      \
 * (quadratic work, O(nq nk (d + m + e))), phi by linattn_d_features (no      \
 * stabilizing shift: features that overflow or underflow make a              \
 * normalizer bad).  Memory O(nk (d + m + e) + rows nk), never nq x nk        \
 * (rows = the plan's block, capped so rows nk <= 2^22).  Runs on the         \
 * calling thread (BLAS may thread its GEMMs).  NaN in V reaches the          \
 * statistics.  stats is written only on success.                             \
 * Errors: -1 plan NULL; -2 layout; -3 nq < 1; -4 nk < 1, or nk != nq when    \
 * causal; -5 q NULL; -6 ldq; -7 k NULL; -8 ldk; -9 v NULL; -10 ldv;          \
 * -11 scale not finite (in the plan's precision); -12 causal not 0 or 1;     \
 * -13 stats NULL; LINATTN_ESIZE (also nk beyond the BLAS integer);           \
 * LINATTN_ENONFINITE (opts.check_finite); LINATTN_ENOMEM; LINATTN_EDENOM     \
 * (a normalizer breaks the plan's policy); LINATTN_EOVERFLOW (the           \
 * attention output O~ of finite inputs beyond the range, which would make   \
 * the errors +Inf; an overflowing softmax kernel value still gives the      \
 * documented +Inf kernel errors).  Thread-safe. */                           \
LINATTN_API int X(approx_error)(const X(plan) *plan, int layout, int64_t nq,  \
                                int64_t nk, const R *q, int64_t ldq,          \
                                const R *k, int64_t ldk, const R *v,          \
                                int64_t ldv, double scale, int causal,        \
                                linattn_approx_stats *stats);                 \
                                                                              \
/* int linattn_d_batched_attention(const linattn_d_plan *plan, int layout,   \
 *         int64_t batch, int64_t heads, int64_t nq, int64_t nk,             \
 *         const double *q, const linattn_strides *sq,                       \
 *         const double *k, const linattn_strides *sk,                       \
 *         const double *v, const linattn_strides *sv,                       \
 *         double *out, const linattn_strides *sout, linattn_where *bad)     \
 * linattn_d_attention on each of batch x heads independent problems        \
 * (strides and policy: linattn_strides): out(b,h) = attention(q(b,h),       \
 * k(b,h), v(b,h)), q nq x d, k nk x d, v nk x e, out nq x e per problem.    \
 * Every problem runs the single call's code, so its result is bit for bit  \
 * the single call's when both run on one thread.                           \
 * Threads: with at least as many problems as threads (OMP_NUM_THREADS),    \
 * problems are split over threads, each problem on one thread with         \
 * single-threaded BLAS (OpenBLAS's pthreads build is set to one thread for \
 * the call, as in the single calls); with fewer, problems run one after    \
 * another, each split over threads by rows as a single call is.            \
 * Statuses: all argument checks (every problem's, and with                 \
 * opts.check_finite every input's finiteness) run before anything is      \
 * written.  After them every problem runs, whatever another returned;      \
 * the status is that of the first failing problem in (b, h) order, and     \
 * *bad (if not NULL) says which, with the row for LINATTN_EDENOM and      \
 * LINATTN_EOVERFLOW.  Each                                                  \
 * problem's output then holds what its single call leaves: its result, or \
 * for EDENOM and EOVERFLOW the rows described at linattn_d_state_query,    \
 * or for ENOMEM its previous contents.                                     \
 * Errors: -1 plan NULL; -2 layout; -3 batch < 0; -4 heads < 0; -5 nq < 0;  \
 * -6 nk < 0; -7 q NULL; -8 sq NULL, ld, or a negative stride; -9 k; -10 sk;\
 * -11 v; -12 sv; -13 out NULL or meeting an input; -14 sout (as -8, or     \
 * strides that make two problems' outputs overlap); LINATTN_ESIZE (as the \
 * single call, or an array not addressable); LINATTN_ENONFINITE;           \
 * LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW.  Thread-safe. */       \
LINATTN_API int X(batched_attention)(const X(plan) *plan, int layout,         \
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const R *q,     \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, R *out,                        \
        const linattn_strides *sout, linattn_where *bad);                     \
                                                                              \
/* int linattn_d_batched_naive(same arguments as                             \
 *                             linattn_d_batched_attention)                  \
 * linattn_d_naive on each problem: the quadratic baseline, batched.        \
 * Errors, threads and statuses as linattn_d_batched_attention. */          \
LINATTN_API int X(batched_naive)(const X(plan) *plan, int layout,             \
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const R *q,     \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, R *out,                        \
        const linattn_strides *sout, linattn_where *bad);                     \
                                                                              \
/* int linattn_d_batched_causal(const linattn_d_plan *plan, int layout,      \
 *         int64_t batch, int64_t heads, int64_t n,                          \
 *         const double *q, const linattn_strides *sq,                       \
 *         const double *k, const linattn_strides *sk,                       \
 *         const double *v, const linattn_strides *sv,                       \
 *         double *out, const linattn_strides *sout, linattn_where *bad)     \
 * linattn_d_causal on each problem (q, k n x d, v, out n x e).  Threads    \
 * and statuses as linattn_d_batched_attention.  Errors: -1 plan; -2        \
 * layout; -3 batch; -4 heads; -5 n < 0; -6 q; -7 sq; -8 k; -9 sk; -10 v;   \
 * -11 sv; -12 out; -13 sout; LINATTN_ESIZE; LINATTN_ENONFINITE;            \
 * LINATTN_ENOMEM; LINATTN_EDENOM.  Thread-safe. */                          \
LINATTN_API int X(batched_causal)(const X(plan) *plan, int layout,            \
        int64_t batch, int64_t heads, int64_t n, const R *q,                  \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, R *out,                        \
        const linattn_strides *sout, linattn_where *bad);                     \
                                                                              \
/* int linattn_d_batched_naive_causal(same arguments as                      \
 *                                    linattn_d_batched_causal)              \
 * linattn_d_naive_causal on each problem.  Errors, threads and statuses as \
 * linattn_d_batched_causal. */                                              \
LINATTN_API int X(batched_naive_causal)(const X(plan) *plan, int layout,      \
        int64_t batch, int64_t heads, int64_t n, const R *q,                  \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, R *out,                        \
        const linattn_strides *sout, linattn_where *bad);                     \
                                                                              \
/* int linattn_d_batched_attention_ex(const linattn_d_plan *plan,             \
 *         int layout, int64_t batch, int64_t heads, int64_t nq, int64_t nk,  \
 *         const double *q, const linattn_strides *sq, const double *k,       \
 *         const linattn_strides *sk, const double *v,                        \
 *         const linattn_strides *sv, double *out,                            \
 *         const linattn_strides *sout, const linattn_d_extras *ex,           \
 *         linattn_where *bad)                                                \
 * linattn_d_batched_attention with the parts of ex it takes, each problem    \
 * (b, h) as linattn_d_attention_ex with them: den (nq per problem, problem   \
 * p = b heads + h's at p nq), key weights (nk per problem, problem p's at    \
 * p nk), packed sequences (ex->offsets, ex->key_offsets: the same in every   \
 * problem, each head of a packed batch) and their states (ex->states:        \
 * batch heads nseq of them, problem p's sequence s at p nseq + s; with       \
 * absorb the final states; each problem's unchanged when it fails, as its    \
 * outputs are not written, other problems' as their outputs).  ex NULL or    \
 * all absent: linattn_d_batched_attention, bit for bit.  Errors as           \
 * linattn_d_batched_attention (-13 also out meeting the weights, offsets or  \
 * states); -15 ex (a reserved word not 0, a part it does not take: state;    \
 * a weight negative, NaN or Inf; offsets and states as at                    \
 * linattn_d_attention_ex, over every problem's states; den meeting another   \
 * array or the offsets);                                                     \
 * LINATTN_ESIZE (also nq or nk times heads beyond int64).                    \
 * Thread-safe. */                                                            \
LINATTN_API int X(batched_attention_ex)(const X(plan) *plan, int layout,      \
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const R *q,     \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, R *out,                        \
        const linattn_strides *sout, const X(extras) *ex,                     \
        linattn_where *bad);                                                  \
                                                                              \
/* int linattn_d_batched_causal_ex(const linattn_d_plan *plan, int layout,    \
 *         int64_t batch, int64_t heads, int64_t n, const double *q,          \
 *         const linattn_strides *sq, const double *k,                        \
 *         const linattn_strides *sk, const double *v,                        \
 *         const linattn_strides *sv, double *out,                            \
 *         const linattn_strides *sout, const linattn_d_extras *ex,           \
 *         linattn_where *bad)                                                \
 * linattn_d_batched_causal with the parts of ex it takes (den, key           \
 * weights, offsets, states: as at linattn_d_batched_attention_ex; gates      \
 * dense as the weights, problem (b, h)'s n at (b heads + h) n; head h's      \
 * log decay head_decays[h] added to the plan's; each                         \
 * problem as linattn_d_causal_ex with them).  Errors as                      \
 * linattn_d_batched_causal; -14 ex (as above, and key_offsets not NULL);     \
 * LINATTN_ESIZE.  Thread-safe. */                                            \
LINATTN_API int X(batched_causal_ex)(const X(plan) *plan, int layout,         \
        int64_t batch, int64_t heads, int64_t n, const R *q,                  \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, R *out,                        \
        const linattn_strides *sout, const X(extras) *ex,                     \
        linattn_where *bad);                                                  \
                                                                              \
/* ---- Training: gradients (doc/gradients.md).  The forward calls below    \
 * are attention and causal that also hand back the normalizers den (n      \
 * numbers, as state_query writes them: eps included; with the maps that    \
 * carry exponentials scaled by the row's shift factors, which the backward \
 * calls reproduce).  A backward call takes the forward's inputs, its out   \
 * and den, and G = dL/dout, and writes dQ, dK, dV (and, on request, dW and \
 * db of the map's projection), recomputing features block by block: extra  \
 * memory O(block (m + e) + m e) per thread, or O(C (m + e + C) + m e) for  \
 * the causal ones, whatever n.  With g_i = G_i / den_i and h_i =           \
 * -(G_i . out_i) / den_i: dphi(q_i) = S^T g_i + z h_i, dS = sum_i phi(q_i) \
 * g_i^T, dz = sum_i phi(q_i) h_i, dphi(k_j) = dS v_j + dz, dv_j = dS^T     \
 * phi(k_j) (sums over j <= i, i >= j when causal), then the map's          \
 * Jacobian.  Results agree across thread counts to rounding.  Outputs (dq, \
 * dk, dv, dw, db; the forward calls' out and den) may not meet an input    \
 * or one another: the later output's -i, nothing written.  Every check     \
 * (including den against the plan's normalizer policy) runs before         \
 * anything is written: a call refused with a negative status,              \
 * LINATTN_ESIZE, _ENONFINITE, _ENOMEM or _EDENOM writes no gradient.       \
 * Finite inputs, finite gradients: g and h are divided by den where 1 /    \
 * den is not a normal number (tiny and huge normalizers, as the forward    \
 * calls divide), and with q, k, v, out, den and g finite (and a given      \
 * state without NaN or Inf) a call that returns 0 has written only finite  \
 * gradients.  Gradients beyond the range are LINATTN_EOVERFLOW: dq, dk     \
 * and dv hold what was computed (the non-finite values among them), dw     \
 * and db are not written, and *bad_row (if not NULL) is the first row of   \
 * dq holding a non-finite value, else the first of dk and dv, else -1      \
 * (only dw or db left the range; or the keys' sums [S z] did while they    \
 * were built, before anything was written).  NaN and Inf among the inputs  \
 * propagate with status 0, as in the forward calls. ---- */                \
                                                                              \
/* int linattn_d_attention_forward(const linattn_d_plan *plan, int layout,  \
 *         int64_t nq, int64_t nk, const double *q, int64_t ldq,            \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,      \
 *         double *out, int64_t ldout, double *den, int64_t *bad_row)       \
 * linattn_d_attention, and den[i] (nq entries, stride 1) = the normalizer  \
 * of row i that out_i was divided by.  Statuses and memory as              \
 * linattn_d_attention, LINATTN_EOVERFLOW included (on LINATTN_EDENOM and   \
 * LINATTN_EOVERFLOW den holds the rows that out does).  Errors: those of   \
 * linattn_d_attention (-1 .. -12); -13 den NULL (nq > 0), or meeting q,    \
 * k, v or out.  Thread-safe. */                                            \
LINATTN_API int X(attention_forward)(const X(plan) *plan, int layout,         \
                                     int64_t nq, int64_t nk, const R *q,      \
                                     int64_t ldq, const R *k, int64_t ldk,    \
                                     const R *v, int64_t ldv, R *out,         \
                                     int64_t ldout, R *den, int64_t *bad_row);\
                                                                              \
/* int linattn_d_causal_forward(const linattn_d_plan *plan, int layout,     \
 *         int64_t n, const double *q, int64_t ldq, const double *k,        \
 *         int64_t ldk, const double *v, int64_t ldv, double *out,          \
 *         int64_t ldout, double *den, int64_t *bad_row)                    \
 * linattn_d_causal, and den (n entries) as linattn_d_attention_forward.    \
 * Errors: those of linattn_d_causal (-1 .. -11); -12 den NULL (n > 0), or  \
 * meeting q, k, v or out.  Thread-safe. */                                 \
LINATTN_API int X(causal_forward)(const X(plan) *plan, int layout, int64_t n, \
                                  const R *q, int64_t ldq, const R *k,        \
                                  int64_t ldk, const R *v, int64_t ldv,       \
                                  R *out, int64_t ldout, R *den,              \
                                  int64_t *bad_row);                          \
                                                                              \
/* int linattn_d_attention_backward(const linattn_d_plan *plan, int layout, \
 *         int64_t nq, int64_t nk, const double *q, int64_t ldq,            \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,      \
 *         const double *out, int64_t ldout, const double *den,             \
 *         const double *g, int64_t ldg, double *dq, int64_t lddq,          \
 *         double *dk, int64_t lddk, double *dv, int64_t lddv,              \
 *         double *dw, int64_t lddw, double *db,                            \
 *         const linattn_d_state *state, int64_t *bad_row)                  \
 * Gradients of L through out = linattn_d_attention(Q, K, V): dq = dL/dQ    \
 * (nq x d), dk = dL/dK (nk x d), dv = dL/dV (nk x e), given G = dL/dout    \
 * (g, nq x e), and out and den as linattn_d_attention_forward wrote them   \
 * (all matrices in layout).  dw (rows x d, rows as linattn_d_plan_weights  \
 * says, in layout, lddw) = dL/dW for the maps with a W (W as given or      \
 * drawn, before input_scale; NULL: not computed, lddw not read), db       \
 * (rows) = dL/db for custom maps (NULL: not computed): sums over the       \
 * query and key rows.                                                      \
 * ReLU's derivative at 0 is taken as 0.  O((nq + nk) m e) work, about 2.5  \
 * times the forward's: the keys' state [S z] is rebuilt, unless state is   \
 * given: a state holding exactly these nk keys and values (the forward's,  \
 * e.g. made by state_update, whose state_query hands back out and den),   \
 * of a plan with the same map (as linattn_d_state_merge requires); then    \
 * about 2 times.                                                           \
 * With eps > 0 and a map with exponentials the result is the gradient      \
 * with the shift factors held fixed (doc/gradients.md).                    \
 * LINATTN_EDENOM: den[r] breaks the plan's policy (checked before any      \
 * work; r in *bad_row if not NULL); LINATTN_EOVERFLOW as above.  den is    \
 * taken as given, against the policy only (under LINATTN_DENOM_COUNT it    \
 * is not compared with the count of keys): with nk = 0, where the forward  \
 * returns LINATTN_EDENOM unless eps > 0, normalizers that pass give        \
 * status 0 and dq = 0 (no key reaches a row).  Errors:                     \
 * -1 plan NULL; -2 layout; -3 nq < 0; -4 nk < 0; -5 q; -6 ldq; -7 k;       \
 * -8 ldk; -9 v; -10 ldv; -11 out; -12 ldout; -13 den NULL; -14 g;          \
 * -15 ldg; -16 dq (NULL, or meeting an input); -17 lddq; -18 dk (or        \
 * meeting an input or dq); -19 lddk; -20 dv (or meeting an input, dq or    \
 * dk); -21 lddv; -22 dw not NULL for a map without W, or meeting another   \
 * array; -23 lddw; -24 db not NULL for a map that is not custom, or        \
 * meeting another array; -25 state of a plan with another map or           \
 * dimensions, or not holding nk tokens; LINATTN_ESIZE (also a matrix not   \
 * addressable in bytes); LINATTN_ENONFINITE (opts.check_finite: q, k, v,   \
 * out, den, g); LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW.         \
 * Thread-safe (state is only read). */                                     \
LINATTN_API int X(attention_backward)(const X(plan) *plan, int layout,        \
        int64_t nq, int64_t nk, const R *q, int64_t ldq, const R *k,          \
        int64_t ldk, const R *v, int64_t ldv, const R *out, int64_t ldout,    \
        const R *den, const R *g, int64_t ldg, R *dq, int64_t lddq, R *dk,    \
        int64_t lddk, R *dv, int64_t lddv, R *dw, int64_t lddw, R *db,        \
        const X(state) *state, int64_t *bad_row);                             \
                                                                              \
/* int linattn_d_causal_backward(const linattn_d_plan *plan, int layout,    \
 *         int64_t n, const double *q, int64_t ldq, const double *k,        \
 *         int64_t ldk, const double *v, int64_t ldv, const double *out,    \
 *         int64_t ldout, const double *den, const double *g, int64_t ldg,  \
 *         double *dq, int64_t lddq, double *dk, int64_t lddk, double *dv,  \
 *         int64_t lddv, double *dw, int64_t lddw, double *db,              \
 *         int64_t *bad_row)                                                \
 * Gradients through out = linattn_d_causal(Q, K, V), as                      \
 * linattn_d_attention_backward with nq = nk = n; out and den as              \
 * linattn_d_causal_forward wrote them.  By chunks of C rows: a forward sweep \
 * (dQ, with the prefix states) and a reverse one (dK, dV, with the suffix    \
 * sums of phi(q_i) [g_i h_i]), the triangles reading only entries j <= i:    \
 * dq_i depends on row i and the keys and values j <= i only.  For the maps   \
 * without stabilizing shifts dk_j and dv_j depend on key j and the rows i >= \
 * j only; for FAVOR, FAVOR_HYP, TRIG and custom EXP maps den_i carries row   \
 * i's running shift, the largest key exponent up to i, so they also read the \
 * keys before j: out and den must be the forward's of these very inputs      \
 * (after changing any key, run the forward again).  A decayed plan           \
 * (opts.log_decay, doc/decay.md): the gradients through the decayed          \
 * recurrence, row i seeing key j with weight gamma^(i - j), by the forward's \
 * factors (every exponent <= 0; the normalizers written on any thread count  \
 * read back on any other).  Without normalizer (LINATTN_DENOM_NONE: den all  \
 * 1): the adjoints of the numerators are G itself.  dv serves as scratch     \
 * between the sweeps.  Errors: -1 plan; -2 layout; -3 n < 0; -4 q; -5 ldq;   \
 * -6 k; -7 ldk; -8 v; -9 ldv; -10 out; -11 ldout; -12 den; -13 g; -14 ldg;   \
 * -15 dq; -16 lddq; -17 dk; -18 lddk; -19 dv; -20 lddv; -21 dw; -22 lddw;    \
 * -23 db (each output also when it meets an input or an earlier output);     \
 * LINATTN_ESIZE; LINATTN_ENONFINITE; LINATTN_ENOMEM; LINATTN_EDENOM;         \
 * LINATTN_EOVERFLOW (as above).  Thread-safe. */                             \
LINATTN_API int X(causal_backward)(const X(plan) *plan, int layout,           \
        int64_t n, const R *q, int64_t ldq, const R *k, int64_t ldk,          \
        const R *v, int64_t ldv, const R *out, int64_t ldout, const R *den,   \
        const R *g, int64_t ldg, R *dq, int64_t lddq, R *dk, int64_t lddk,    \
        R *dv, int64_t lddv, R *dw, int64_t lddw, R *db, int64_t *bad_row);   \
                                                                              \
/* int linattn_d_attention_backward_ex(const linattn_d_plan *plan,            \
 *         int layout, int64_t nq, int64_t nk, const double *q, int64_t ldq,  \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,        \
 *         const double *out, int64_t ldout, const double *den,               \
 *         const double *g, int64_t ldg, double *dq, int64_t lddq,            \
 *         double *dk, int64_t lddk, double *dv, int64_t lddv, double *dw,    \
 *         int64_t lddw, double *db, const linattn_d_state *state,            \
 *         const linattn_d_extras *ex, int64_t *bad_row)                      \
 * linattn_d_attention_backward through linattn_d_attention_ex with the       \
 * parts of ex it takes: key weights (S = sum_j w_j phi(k_j) v_j^T, z         \
 * likewise; out and den as that call wrote them): dphi(k_j) = w_j (dS v_j +  \
 * dz), dv_j = w_j dS^T phi(k_j), and ex->dweights (nk) = dL/dw_j =           \
 * phi(k_j) . (dS v_j + dz), with dS, dz the adjoints of S and z; a key of    \
 * weight 0 is absent (never read: its dk, dv rows and dL/dw_j are 0; a       \
 * weight learnt through 0 wants a positive parametrization).  Packed         \
 * (ex->offsets, ex->key_offsets): each sequence's gradients as a call of     \
 * its own, dw and db summed over them (a failure after the checks leaves     \
 * the earlier sequences' rows written).  state (if given) holds the keys     \
 * of weight not 0, weighted; not with offsets.  ex NULL or all absent:       \
 * linattn_d_attention_backward, bit for bit.  Errors as                      \
 * linattn_d_attention_backward (-25 also a state whose tokens are not the    \
 * keys of weight not 0); -26 ex: a reserved word not 0, a part it does not   \
 * take (den, state, absorb, states), a weight negative, NaN or Inf,          \
 * dweights meeting another array, offsets as at linattn_d_attention_ex,      \
 * offsets with a state.  ex->dstate_end (not with offsets): added to d[S z]  \
 * before the keys' pass (at the keys' state's shift), so that nq = 0 gives   \
 * the keys' gradients from a state's gradient alone                          \
 * (linattn_d_state_query_backward); -26 also for it meeting an output.       \
 * Thread-safe. */                                                            \
LINATTN_API int X(attention_backward_ex)(const X(plan) *plan, int layout,     \
        int64_t nq, int64_t nk, const R *q, int64_t ldq, const R *k,          \
        int64_t ldk, const R *v, int64_t ldv, const R *out, int64_t ldout,    \
        const R *den, const R *g, int64_t ldg, R *dq, int64_t lddq, R *dk,    \
        int64_t lddk, R *dv, int64_t lddv, R *dw, int64_t lddw, R *db,        \
        const X(state) *state, const X(extras) *ex, int64_t *bad_row);        \
                                                                              \
/* int linattn_d_causal_backward_ex(const linattn_d_plan *plan, int layout,   \
 *         int64_t n, const double *q, int64_t ldq, const double *k,          \
 *         int64_t ldk, const double *v, int64_t ldv, const double *out,      \
 *         int64_t ldout, const double *den, const double *g, int64_t ldg,    \
 *         double *dq, int64_t lddq, double *dk, int64_t lddk, double *dv,    \
 *         int64_t lddv, double *dw, int64_t lddw, double *db,                \
 *         const linattn_d_extras *ex, int64_t *bad_row)                      \
 * linattn_d_causal_backward through linattn_d_causal_ex with the parts of ex \
 * it takes: key weights (row i sees keys j <= i weighted; out and den as     \
 * linattn_d_causal_ex wrote them), with dL/dw_j in ex->dweights on request   \
 * and the keys of weight 0 absent, as at linattn_d_attention_backward_ex;    \
 * packed sequences (ex->offsets), each sequence's gradients as a call of its \
 * own, dw and db summed over them; a starting state (ex->state, or per       \
 * sequence ex->states with offsets; absorb 0), the forward's as              \
 * linattn_d_causal_ex took it (rows saw its keys first; out and den as that  \
 * call wrote them), with the gradient of its accumulator in ex->dstates on   \
 * request (d[S0 z0] = sum_i exp(B_i) phi(q_i) [g_i h_i]^T over the           \
 * sequence's rows, [g h] as at linattn_d_attention_backward, B_i the decay   \
 * up to row i, 0 without; the state is only read); the gates (ex->gates) as  \
 * the forward took them, and dL/da_t in ex->dgates on request (see           \
 * linattn_d_extras: the gradient of each token's log decay, whose sum is     \
 * dL/d ln gamma; under LINATTN_DENOM_COUNT the decayed count's share         \
 * included; the starting state's count is held fixed).  ex NULL or all       \
 * absent: linattn_d_causal_backward, bit for bit; gates all 0: its dq, dk,   \
 * dv bits.  Errors as linattn_d_causal_backward; -24 ex: a reserved word not \
 * 0, a part it does not take (den, key_offsets), absorb not 0, a state of    \
 * another map or other sizes, a weight negative, NaN or Inf, a gate above 0, \
 * dweights, dgates or dstates meeting another array, dstates without a       \
 * state, offsets and states as at linattn_d_causal_ex.  ex->dstate_end (not  \
 * with offsets): the suffix sums start from it instead of 0, so that dk, dv, \
 * dw, db, dstates and dgates are the gradients of L through this call and    \
 * through its final state (the concatenation of two calls, the gradient      \
 * handed from the later one); -24 also for it meeting an output.             \
 * ex->chunk_states (not with offsets): the forward's saved chunk states      \
 * (linattn_d_extras), read instead of rebuilding the carried state: one      \
 * sweep, the same gradients to rounding; -24 for a buffer linattn_d_         \
 * causal_ex did not seal for this n and plan (never written, or by a call    \
 * that failed), or one meeting another array.                                \
 * Thread-safe; the states are only read. */                                  \
LINATTN_API int X(causal_backward_ex)(const X(plan) *plan, int layout,        \
        int64_t n, const R *q, int64_t ldq, const R *k, int64_t ldk,          \
        const R *v, int64_t ldv, const R *out, int64_t ldout, const R *den,   \
        const R *g, int64_t ldg, R *dq, int64_t lddq, R *dk, int64_t lddk,    \
        R *dv, int64_t lddv, R *dw, int64_t lddw, R *db,                      \
        const X(extras) *ex, int64_t *bad_row);                               \
                                                                              \
/* int linattn_d_causal_backward_dstates(const linattn_d_plan *plan,          \
 *         int layout, int64_t n, const double *q, int64_t ldq,               \
 *         const double *k, int64_t ldk, const double *out, int64_t ldout,    \
 *         const double *den, const double *g, int64_t ldg,                   \
 *         const linattn_d_extras *ex, int64_t *bad_row)                      \
 * ex->dstates = d[S0 z0] = sum_i exp(B_i) phi(q_i) [g_i h_i]^T (+ exp(B_n)   \
 * ex->dstate_end, brought to the starting state's shift; B_i the decay up to \
 * row i, 0 without), what linattn_d_causal_backward_ex with the same         \
 * arguments writes there, without dq, dk, dv: one pass over the queries (the \
 * keys only for the maps with stabilizing shifts, whose running shift they   \
 * set; V is not read), the cheap half a distributed or chunked backward      \
 * needs before the suffix sums reach the keys.  ex must hold the starting    \
 * state (ex->state, of the plan's map and sizes; absorb 0) and ex->dstates   \
 * (m x (e + 1) doubles); it may hold key weights, the gates (a decayed plan  \
 * is taken) and ex->dstate_end.  A state without tokens gets 0.  Errors:     \
 * -1 plan; -2 layout; -3 n < 0; -4 q; -5 ldq; -6 k; -7 ldk; -8 out;          \
 * -9 ldout; -10 den; -11 g; -12 ldg; -13 ex: NULL, no state or no dstates, a \
 * part it does not take (den, offsets, states, dweights, dgates), a weight   \
 * negative, NaN or Inf, a gate above 0, dstates meeting another array;       \
 * LINATTN_ESIZE; LINATTN_ENONFINITE; LINATTN_ENOMEM; LINATTN_EDENOM (row in  \
 * *bad_row); LINATTN_EOVERFLOW (finite inputs, an entry of dstates beyond    \
 * the range: dstates as computed, *bad_row -1).  Nothing is written on a     \
 * refusal.  Thread-safe; the state is only read. */                          \
LINATTN_API int X(causal_backward_dstates)(const X(plan) *plan, int layout,   \
        int64_t n, const R *q, int64_t ldq, const R *k, int64_t ldk,          \
        const R *out, int64_t ldout, const R *den, const R *g, int64_t ldg,   \
        const X(extras) *ex, int64_t *bad_row);                               \
                                                                              \
/* int linattn_d_causal_chunk_states_size(const linattn_d_plan *plan,         \
 *         int64_t n, int64_t *size)                                          \
 * *size = the entries (doubles) of linattn_d_extras.chunk_states for causal  \
 * calls of n rows of plan's, on any thread count: about (n / C + min(n /     \
 * C, 256) + 1) m (e + 1), C the plan's chunk (linattn_d_plan_opts).          \
 * Errors: -1 plan; -2 n < 0; -3 size NULL; LINATTN_ESIZE (not countable      \
 * in int64), *size unchanged.  Thread-safe. */                               \
LINATTN_API int X(causal_chunk_states_size)(const X(plan) *plan, int64_t n,   \
                                            int64_t *size);                   \
                                                                              \
/* int linattn_d_state_query_backward(const linattn_d_state *state,           \
 *         int layout, int64_t n, const double *q, int64_t ldq,               \
 *         const double *out, int64_t ldout, const double *den,               \
 *         const double *g, int64_t ldg, double *dq, int64_t lddq,            \
 *         double *dw, int64_t lddw, double *db, double *dstate,              \
 *         int64_t *bad_row)                                                  \
 * The backward of out = linattn_d_state_query(state, Q) (out and den as      \
 * it wrote them): dq = dL/dQ (n x d) = J_phi^T ([S z] [g_i h_i]), dw, db     \
 * the queries' share of dL/dW, dL/db (as at linattn_d_attention_backward;    \
 * NULL: not computed), and dstate (m x (e + 1) doubles, NULL: not            \
 * computed) = d[S z] = sum_i phi(q_i) [g_i h_i]^T, the gradient of the       \
 * state's accumulator as linattn_d_state_export writes it (at its shift).    \
 * The query pass of linattn_d_attention_backward alone: with                 \
 * linattn_d_attention_backward_ex on the keys (nq = 0, dstate_end = this     \
 * dstate, or a sum of them over the callers that queried the state) it       \
 * splits a non-causal backward where the state was shared (ranks, chunks).   \
 * Errors: -1 state NULL; -2 layout; -3 n < 0; -4 q; -5 ldq; -6 out; -7       \
 * ldout; -8 den; -9 g; -10 ldg; -11 dq (NULL, or meeting an input); -12      \
 * lddq; -13 dw (not NULL for a map without W, or meeting another array);     \
 * -14 lddw; -15 db (as at linattn_d_attention_backward); -16 dstate          \
 * meeting another array; LINATTN_ESIZE; LINATTN_ENONFINITE; LINATTN_ENOMEM;  \
 * LINATTN_EDENOM (row in *bad_row); LINATTN_EOVERFLOW (as the backward       \
 * calls; a non-finite dstate from finite inputs with *bad_row -1).           \
 * Nothing is written on a refusal.  Thread-safe (the state is only read). */ \
LINATTN_API int X(state_query_backward)(const X(state) *state, int layout,    \
        int64_t n, const R *q, int64_t ldq, const R *out, int64_t ldout,      \
        const R *den, const R *g, int64_t ldg, R *dq, int64_t lddq, R *dw,    \
        int64_t lddw, R *db, double *dstate, int64_t *bad_row);               \
                                                                              \
/* int linattn_d_features_backward(const linattn_d_plan *plan, int layout,  \
 *         int64_t n, const double *x, int64_t ldx, const double *dphi,     \
 *         int64_t lddphi, double *dx, int64_t lddx, double *dw,            \
 *         int64_t lddw, double *db)                                        \
 * The map's vector-Jacobian product: dx_i = J_phi(x_i)^T dphi_i for the    \
 * n x d rows x and n x m adjoints dphi of linattn_d_features' phi, dw and  \
 * db as in linattn_d_attention_backward (summed over the rows).  No shift: \
 * where phi overflows so may the gradient; with x and dphi finite that is  \
 * LINATTN_EOVERFLOW (dx holds what was computed, dw and db are not         \
 * written); NaN and Inf in x or dphi propagate with status 0.  Errors:     \
 * -1 plan NULL; -2 layout; -3 n < 0; -4 x; -5 ldx; -6 dphi; -7 lddphi;     \
 * -8 dx (NULL, or meeting x or dphi); -9 lddx; -10 dw (NULL or a map with  \
 * W; not meeting x, dphi or dx); -11 lddw; -12 db (NULL or a custom map;   \
 * not meeting another array); LINATTN_ESIZE; LINATTN_ENOMEM;               \
 * LINATTN_EOVERFLOW.  Thread-safe. */                                      \
LINATTN_API int X(features_backward)(const X(plan) *plan, int layout,         \
        int64_t n, const R *x, int64_t ldx, const R *dphi, int64_t lddphi,    \
        R *dx, int64_t lddx, R *dw, int64_t lddw, R *db);                     \
                                                                              \
/* int linattn_d_batched_attention_forward(const linattn_d_plan *plan,      \
 *         int layout, int64_t batch, int64_t heads, int64_t nq,            \
 *         int64_t nk, const double *q, const linattn_strides *sq,          \
 *         const double *k, const linattn_strides *sk, const double *v,     \
 *         const linattn_strides *sv, double *out,                          \
 *         const linattn_strides *sout, double *den, linattn_where *bad)    \
 * linattn_d_attention_forward on each problem: linattn_d_batched_attention \
 * with den, a dense array (problem (b, h)'s nq normalizers at              \
 * den + (b heads + h) nq) that may not meet an input or out.  Threads and  \
 * statuses as linattn_d_batched_attention (LINATTN_EDENOM and              \
 * LINATTN_EOVERFLOW name problem and row in *bad; den as the single        \
 * call's).  Errors: -1 .. -14 as linattn_d_batched_attention; -15 den      \
 * (NULL, or meeting another array); LINATTN_ESIZE; LINATTN_ENONFINITE;     \
 * LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW.  Thread-safe. */      \
LINATTN_API int X(batched_attention_forward)(const X(plan) *plan, int layout, \
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const R *q,     \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, R *out,                        \
        const linattn_strides *sout, R *den, linattn_where *bad);             \
                                                                              \
/* int linattn_d_batched_causal_forward(plan, layout, batch, heads, n, q,   \
 *         sq, k, sk, v, sv, out, sout, den, bad)                           \
 * linattn_d_causal_forward on each problem (den as above, n per problem; a   \
 * decayed plan as linattn_d_batched_causal takes it).  Errors: -1 .. -13 as  \
 * linattn_d_batched_causal; -14 den; LINATTN_ESIZE; LINATTN_ENONFINITE;      \
 * LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW.  Thread-safe. */        \
LINATTN_API int X(batched_causal_forward)(const X(plan) *plan, int layout,    \
        int64_t batch, int64_t heads, int64_t n, const R *q,                  \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, R *out,                        \
        const linattn_strides *sout, R *den, linattn_where *bad);             \
                                                                              \
/* int linattn_d_batched_attention_backward(const linattn_d_plan *plan,     \
 *         int layout, int64_t batch, int64_t heads, int64_t nq,            \
 *         int64_t nk, const double *q, const linattn_strides *sq,          \
 *         const double *k, const linattn_strides *sk, const double *v,     \
 *         const linattn_strides *sv, const double *out,                    \
 *         const linattn_strides *sout, const double *den,                  \
 *         const double *g, const linattn_strides *sg, double *dq,          \
 *         const linattn_strides *sdq, double *dk,                          \
 *         const linattn_strides *sdk, double *dv,                          \
 *         const linattn_strides *sdv, double *dw, int64_t lddw,            \
 *         double *db, linattn_where *bad)                                  \
 * linattn_d_attention_backward on each problem (den dense as in            \
 * linattn_d_batched_attention_forward); dw and db are summed over all      \
 * problems (the plan is shared; zeros when there are none), written only   \
 * when every problem succeeded.  The outputs dq, dk, dv, dw, db may not    \
 * meet an input or one another (the later output's -i).  Threads as        \
 * linattn_d_batched_attention; every check (den of every problem           \
 * included: LINATTN_EDENOM names problem and row in *bad) runs before      \
 * anything is written.  LINATTN_EOVERFLOW: the first problem in (b, h)     \
 * order whose gradients left the range, with the row as the single call    \
 * names it (its and the other problems' dq, dk, dv as computed, dw and db  \
 * not written); *bad = {-1, -1, -1} when only the sums dw, db over all     \
 * problems did.  Errors: -1 plan; -2 layout; -3 batch; -4 heads; -5 nq;    \
 * -6 nk; -7 q; -8 sq; -9 k; -10 sk; -11 v; -12 sv; -13 out; -14 sout;      \
 * -15 den; -16 g; -17 sg; -18 dq; -19 sdq; -20 dk; -21 sdk; -22 dv;        \
 * -23 sdv; -24 dw; -25 lddw; -26 db; LINATTN_ESIZE; LINATTN_ENONFINITE;    \
 * LINATTN_ENOMEM; LINATTN_EDENOM; LINATTN_EOVERFLOW.  Thread-safe. */      \
LINATTN_API int X(batched_attention_backward)(const X(plan) *plan,            \
        int layout, int64_t batch, int64_t heads, int64_t nq, int64_t nk,     \
        const R *q, const linattn_strides *sq, const R *k,                    \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        const R *out, const linattn_strides *sout, const R *den, const R *g,  \
        const linattn_strides *sg, R *dq, const linattn_strides *sdq, R *dk,  \
        const linattn_strides *sdk, R *dv, const linattn_strides *sdv, R *dw, \
        int64_t lddw, R *db, linattn_where *bad);                             \
                                                                              \
/* int linattn_d_batched_causal_backward(plan, layout, batch, heads, n, q,  \
 *         sq, k, sk, v, sv, out, sout, den, g, sg, dq, sdq, dk, sdk, dv,   \
 *         sdv, dw, lddw, db, bad)                                          \
 * linattn_d_causal_backward on each problem, as                              \
 * linattn_d_batched_attention_backward with n for nq and nk (positions from  \
 * -5 on one less: -5 n, -6 q, ..., -25 db); a decayed plan as                \
 * linattn_d_causal_backward takes it.  Thread-safe. */                       \
LINATTN_API int X(batched_causal_backward)(const X(plan) *plan, int layout,   \
        int64_t batch, int64_t heads, int64_t n, const R *q,                  \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, const R *out,                  \
        const linattn_strides *sout, const R *den, const R *g,                \
        const linattn_strides *sg, R *dq, const linattn_strides *sdq, R *dk,  \
        const linattn_strides *sdk, R *dv, const linattn_strides *sdv, R *dw, \
        int64_t lddw, R *db, linattn_where *bad);                             \
                                                                              \
/* int linattn_d_batched_attention_backward_ex(const linattn_d_plan *plan,    \
 *         int layout, int64_t batch, int64_t heads, int64_t nq, int64_t nk,  \
 *         const double *q, const linattn_strides *sq, const double *k,       \
 *         const linattn_strides *sk, const double *v,                        \
 *         const linattn_strides *sv, const double *out,                      \
 *         const linattn_strides *sout, const double *den, const double *g,   \
 *         const linattn_strides *sg, double *dq, const linattn_strides *sdq, \
 *         double *dk, const linattn_strides *sdk, double *dv,                \
 *         const linattn_strides *sdv, double *dw, int64_t lddw, double *db,  \
 *         const linattn_d_extras *ex, linattn_where *bad)                    \
 * linattn_d_batched_attention_backward through                               \
 * linattn_d_batched_attention_ex with the parts of ex it takes, each         \
 * problem (b, h) as linattn_d_attention_backward_ex with them: key weights   \
 * (nk per problem, problem p = b heads + h's at p nk), dL/dw out             \
 * (ex->dweights, laid out as the weights), packed sequences (ex->offsets,    \
 * ex->key_offsets: the same in every problem).  dw and db summed over every  \
 * problem and sequence.  ex NULL or all absent:                              \
 * linattn_d_batched_attention_backward, bit for bit.  Errors as              \
 * linattn_d_batched_attention_backward (an output meeting the offsets also   \
 * its own -i); -27 ex: a reserved word not 0, a                              \
 * part it does not take (den, state, absorb, states, dstates), a weight      \
 * negative, NaN or Inf, dweights meeting another array, offsets as at        \
 * linattn_d_attention_ex; LINATTN_ESIZE (also nk times heads beyond int64).  \
 * Thread-safe. */                                                            \
LINATTN_API int X(batched_attention_backward_ex)(const X(plan) *plan,         \
        int layout, int64_t batch, int64_t heads, int64_t nq, int64_t nk,     \
        const R *q, const linattn_strides *sq, const R *k,                    \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        const R *out, const linattn_strides *sout, const R *den, const R *g,  \
        const linattn_strides *sg, R *dq, const linattn_strides *sdq, R *dk,  \
        const linattn_strides *sdk, R *dv, const linattn_strides *sdv, R *dw, \
        int64_t lddw, R *db, const X(extras) *ex, linattn_where *bad);        \
                                                                              \
/* int linattn_d_batched_causal_backward_ex(plan, layout, batch, heads, n,    \
 *         q, sq, k, sk, v, sv, out, sout, den, g, sg, dq, sdq, dk, sdk, dv,  \
 *         sdv, dw, lddw, db, ex, bad)                                        \
 * linattn_d_batched_causal_backward through linattn_d_batched_causal_ex with \
 * the parts of ex it takes, each problem as linattn_d_causal_backward_ex     \
 * with them: key weights and dL/dw as above, packed sequences (ex->offsets), \
 * their starting states as the forward took them (ex->states: batch heads    \
 * nseq of them, problem p's sequence s at p nseq + s; absorb 0; only read)   \
 * and the gradients of their accumulators (ex->dstates: m (e + 1) doubles    \
 * each, problem p's sequence s at (p nseq + s) m (e + 1), as                 \
 * linattn_d_causal_backward_ex writes one); the gates (ex->gates, dense as   \
 * the weights) and a log decay per head (ex->head_decays) as                 \
 * linattn_d_batched_causal_ex took them, and dL/da in ex->dgates (dense as   \
 * the gates; problem (b, h)'s n at (b heads + h) n).  Errors as              \
 * linattn_d_batched_causal_backward (an output meeting the offsets or the    \
 * states also its own -i); -26 ex (as above, key_offsets not NULL, absorb    \
 * not 0, dstates without states or meeting another array, states as at       \
 * linattn_d_causal_ex over every problem's, a gate above 0, a head's log     \
 * decay above 0 or not finite, dgates meeting another array); LINATTN_ESIZE  \
 * (also batch heads nseq states, or their gradients' bytes, beyond int64).   \
 * Thread-safe; the states are only read. */                                  \
LINATTN_API int X(batched_causal_backward_ex)(const X(plan) *plan,            \
        int layout, int64_t batch, int64_t heads, int64_t n, const R *q,      \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, const R *out,                  \
        const linattn_strides *sout, const R *den, const R *g,                \
        const linattn_strides *sg, R *dq, const linattn_strides *sdq, R *dk,  \
        const linattn_strides *sdk, R *dv, const linattn_strides *sdv, R *dw, \
        int64_t lddw, R *db, const X(extras) *ex, linattn_where *bad);        \
                                                                              \
/* ---- Building blocks of distributed and segmented runs (liblinattn_mpi   \
 * is written on them): a plan's fingerprint, a state's accumulator in and  \
 * out, causal attention that continues from a state, and argument checks  \
 * that do no work. ---- */                                                  \
                                                                              \
/* int linattn_d_plan_fingerprint(const linattn_d_plan *plan, uint64_t *fp) \
 * *fp = a 64-bit hash of everything that decides the plan's results and    \
 * statuses: precision, map, d, m, e, W and b (their bits), seed, draw,     \
 * input scale, block, chunk, normalizer policy, eps and check_finite.      \
 * Plans built alike (same arguments and options, in any process or on any \
 * platform) have equal fingerprints; plans that differ in any of these     \
 * have different ones except with probability about 2^-64.  (Checkpoints   \
 * carry a narrower fingerprint, of the map alone.)  Errors: -1 plan NULL;  \
 * -2 fp NULL.  Thread-safe. */                                              \
LINATTN_API int X(plan_fingerprint)(const X(plan) *plan, uint64_t *fp);       \
                                                                              \
/* int linattn_d_state_plan(const linattn_d_state *state,                    \
 *                          const linattn_d_plan **plan)                     \
 * *plan = the plan state was created for.  Errors: -1 state NULL; -2 plan  \
 * NULL.  Thread-safe. */                                                    \
LINATTN_API int X(state_plan)(const X(state) *state, const X(plan) **plan);   \
                                                                              \
/* int linattn_d_state_export(const linattn_d_state *state, double *acc,     \
 *                            double *shift, int64_t *tokens)                \
 * The state as it accumulates: acc = [S z], m x (e + 1) doubles, row major  \
 * with leading dimension e + 1 (S in columns 0..e-1, z in column e), in    \
 * double for either precision (float states accumulate in double, so      \
 * nothing is rounded); *shift = c such that the true sums are              \
 * acc exp(c) (the stabilizing shift of linattn_d_state_shift, 0 for the    \
 * maps without one); *tokens = the number of keys absorbed.  Each output    \
 * may be NULL to skip it.  export followed by import restores the state    \
 * bit for bit.  Errors: -1 state NULL.  Several threads may export and     \
 * query one state at once. */                                               \
LINATTN_API int X(state_export)(const X(state) *state, double *acc,           \
                                double *shift, int64_t *tokens);              \
                                                                              \
/* int linattn_d_state_import(linattn_d_state *state, const double *acc,     \
 *                            double shift, int64_t tokens)                  \
 * state = the accumulator acc (m x (e + 1), as linattn_d_state_export      \
 * writes it) at shift, holding tokens keys: the inverse of export, e.g.    \
 * for a sum of states computed elsewhere (an MPI reduction).  Entries are  \
 * taken as they are (NaN and Inf included, as a checkpoint load takes      \
 * them).  Errors (state unchanged): -1 state NULL; -2 acc NULL; -3 shift   \
 * not finite, or not 0 for a map without shifts; -4 tokens < 0.  Needs     \
 * exclusive access to state. */                                             \
LINATTN_API int X(state_import)(X(state) *state, const double *acc,           \
                                double shift, int64_t tokens);                \
                                                                              \
/* int linattn_d_state_key_weight(const linattn_d_state *state,               \
 *                                double *weight)                             \
 * *weight = sum_j w_j over the keys the state holds (its tokens when every   \
 * key weighed 1; the count of LINATTN_DENOM_COUNT).  With export, what a     \
 * reduction of weighted states computed elsewhere needs.  Errors: -1 state   \
 * NULL; -2 weight NULL.  Several threads may read one state at once. */      \
LINATTN_API int X(state_key_weight)(const X(state) *state, double *weight);   \
                                                                              \
/* int linattn_d_state_import_weighted(linattn_d_state *state,                \
 *         const double *acc, double shift, int64_t tokens, double weight)    \
 * linattn_d_state_import of a state whose tokens keys weigh weight in all    \
 * (linattn_d_state_key_weight: the inverse of export and key_weight).        \
 * Errors (state unchanged): -1 .. -4 as linattn_d_state_import; -5 weight    \
 * NaN, Inf or negative, or 0 with tokens > 0 or > 0 without tokens (a key    \
 * of weight 0 is not a token).  Needs exclusive access to state. */          \
LINATTN_API int X(state_import_weighted)(X(state) *state, const double *acc,  \
                                         double shift, int64_t tokens,        \
                                         double weight);                      \
                                                                              \
/* int linattn_d_state_causal(linattn_d_state *state, int layout, int64_t n, \
 *         const double *q, int64_t ldq, const double *k, int64_t ldk,       \
 *         const double *v, int64_t ldv, double *out, int64_t ldout,         \
 *         int absorb, int64_t *bad_row)                                     \
 * Causal attention continuing from a state: row i of this call sees the      \
 * state's keys and the call's keys j <= i,                                   \
 *   out_i = (phi(q_i)^T S + sum_{j<=i} phi(q_i).phi(k_j) v_j) /              \
 *           (phi(q_i)^T z + sum_{j<=i} phi(q_i).phi(k_j) + eps),             \
 * which is linattn_d_causal on the state's tokens followed by these rows,    \
 * for rows of this call.  A long sequence cut into segments, each passed     \
 * with absorb = 1, gives the causal result of the whole (to rounding); a     \
 * state holding the keys of other processes' earlier rows gives the          \
 * distributed causal result.  From a zero state it is linattn_d_causal, bit  \
 * for bit.  absorb = 1: on success the state then holds its keys and these n \
 * (tokens += n, as linattn_d_state_update would leave it, to rounding; sums  \
 * that finite keys and values push beyond the range are refused as           \
 * linattn_d_state_update refuses them: LINATTN_EOVERFLOW with *bad_row -1,   \
 * every row written and finite, the state unchanged); absorb = 0: the state  \
 * is only read.  Q, K n x d, V and out n x e, in layout; work, memory and    \
 * threads as linattn_d_causal; bad rows as linattn_d_state_query (row        \
 * numbers within this call).  Under LINATTN_DENOM_COUNT row i's count is the \
 * state's tokens + i + 1.  On any error the state is unchanged.  Errors: -1  \
 * state NULL; -2 layout; -3 n < 0; -4 q; -5 ldq; -6 k; -7 ldk; -8 v; -9 ldv; \
 * -10 out; -11 ldout; -12 absorb not 0 or 1; LINATTN_ESIZE (also the state's \
 * tokens + n beyond 2^63 - 1, before any work); LINATTN_ENOMEM;              \
 * LINATTN_EDENOM; LINATTN_EOVERFLOW; LINATTN_ENONFINITE.  absorb = 1 needs   \
 * exclusive access to state; absorb = 0 calls may share it (and query it)    \
 * from several threads. */                                                   \
LINATTN_API int X(state_causal)(X(state) *state, int layout, int64_t n,       \
                                const R *q, int64_t ldq, const R *k,          \
                                int64_t ldk, const R *v, int64_t ldv, R *out, \
                                int64_t ldout, int absorb, int64_t *bad_row); \
                                                                              \
/* int linattn_d_attention_check(const linattn_d_plan *plan, int layout,     \
 *         int64_t nq, int64_t nk, const double *q, int64_t ldq,             \
 *         const double *k, int64_t ldk, const double *v, int64_t ldv,       \
 *         const double *out, int64_t ldout)                                 \
 * The status linattn_d_attention would return for these arguments before  \
 * doing any work: 0, its -i, LINATTN_ESIZE, or with opts.check_finite      \
 * LINATTN_ENONFINITE (the inputs are scanned).  Nothing is computed or     \
 * written.  (For agreeing on arguments before a collective call.)          \
 * Thread-safe. */                                                           \
LINATTN_API int X(attention_check)(const X(plan) *plan, int layout,           \
                                   int64_t nq, int64_t nk, const R *q,        \
                                   int64_t ldq, const R *k, int64_t ldk,      \
                                   const R *v, int64_t ldv, const R *out,     \
                                   int64_t ldout);                            \
                                                                              \
/* int linattn_d_causal_check(same arguments as linattn_d_causal, without   \
 *                            bad_row)                                      \
 * As linattn_d_attention_check, for linattn_d_causal.  Thread-safe. */     \
LINATTN_API int X(causal_check)(const X(plan) *plan, int layout, int64_t n,   \
                                const R *q, int64_t ldq, const R *k,          \
                                int64_t ldk, const R *v, int64_t ldv,         \
                                const R *out, int64_t ldout);                 \
                                                                              \
/* int linattn_d_attention_ex_check(same arguments as                         \
 *                                  linattn_d_attention_ex, without bad_row)  \
 * As linattn_d_attention_check, for linattn_d_attention_ex (the extras'      \
 * checks included).  Thread-safe. */                                         \
LINATTN_API int X(attention_ex_check)(const X(plan) *plan, int layout,        \
        int64_t nq, int64_t nk, const R *q, int64_t ldq, const R *k,          \
        int64_t ldk, const R *v, int64_t ldv, const R *out, int64_t ldout,    \
        const X(extras) *ex);                                                 \
/* int linattn_d_causal_ex_check(same arguments as linattn_d_causal_ex,       \
 *                               without bad_row)                             \
 * As linattn_d_attention_check, for linattn_d_causal_ex (the extras'         \
 * checks included).  Thread-safe. */                                         \
LINATTN_API int X(causal_ex_check)(const X(plan) *plan, int layout,           \
        int64_t n, const R *q, int64_t ldq, const R *k, int64_t ldk,          \
        const R *v, int64_t ldv, const R *out, int64_t ldout,                 \
        const X(extras) *ex);                                                 \
                                                                              \
/* int linattn_d_attention_backward_check(same arguments as                   \
 *         linattn_d_attention_backward_ex, outputs const)                    \
 * The status linattn_d_attention_backward_ex would return for these          \
 * arguments before doing any work: 0, its -i, LINATTN_ESIZE,                 \
 * LINATTN_ENONFINITE (opts.check_finite), or LINATTN_EDENOM with the row in  \
 * *bad_row (if not NULL).  Nothing is computed or written.  (For agreeing    \
 * on arguments before a collective backward.)  Thread-safe. */               \
LINATTN_API int X(attention_backward_check)(const X(plan) *plan,              \
        int layout, int64_t nq, int64_t nk, const R *q, int64_t ldq,          \
        const R *k, int64_t ldk, const R *v, int64_t ldv, const R *out,       \
        int64_t ldout, const R *den, const R *g, int64_t ldg, const R *dq,    \
        int64_t lddq, const R *dk, int64_t lddk, const R *dv, int64_t lddv,   \
        const R *dw, int64_t lddw, const R *db, const X(state) *state,        \
        const X(extras) *ex, int64_t *bad_row);                               \
                                                                              \
/* int linattn_d_causal_backward_check(same arguments as                      \
 *         linattn_d_causal_backward_ex, outputs const)                       \
 * As linattn_d_attention_backward_check, for                                 \
 * linattn_d_causal_backward_ex.  Thread-safe. */                             \
LINATTN_API int X(causal_backward_check)(const X(plan) *plan, int layout,     \
        int64_t n, const R *q, int64_t ldq, const R *k, int64_t ldk,          \
        const R *v, int64_t ldv, const R *out, int64_t ldout, const R *den,   \
        const R *g, int64_t ldg, const R *dq, int64_t lddq, const R *dk,      \
        int64_t lddk, const R *dv, int64_t lddv, const R *dw, int64_t lddw,   \
        const R *db, const X(extras) *ex, int64_t *bad_row);                  \
                                                                              \
/* int linattn_d_batched_attention_forward_check(same arguments as            \
 *         linattn_d_batched_attention_forward, outputs const, without        \
 *         bad)                                                               \
 * As linattn_d_attention_check, for linattn_d_batched_attention_forward      \
 * (den included).  Thread-safe. */                                           \
LINATTN_API int X(batched_attention_forward_check)(const X(plan) *plan,       \
        int layout, int64_t batch, int64_t heads, int64_t nq, int64_t nk,     \
        const R *q, const linattn_strides *sq, const R *k,                    \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        const R *out, const linattn_strides *sout, const R *den);             \
                                                                              \
/* int linattn_d_batched_causal_forward_check(same arguments as               \
 *         linattn_d_batched_causal_forward, outputs const, without bad)      \
 * As linattn_d_attention_check, for linattn_d_batched_causal_forward.        \
 * Thread-safe. */                                                            \
LINATTN_API int X(batched_causal_forward_check)(const X(plan) *plan,          \
        int layout, int64_t batch, int64_t heads, int64_t n, const R *q,      \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, const R *out,                  \
        const linattn_strides *sout, const R *den);                           \
                                                                              \
/* int linattn_d_batched_attention_backward_check(same arguments as           \
 *         linattn_d_batched_attention_backward, outputs const)               \
 * As linattn_d_attention_backward_check, for                                 \
 * linattn_d_batched_attention_backward (every problem's checks; EDENOM       \
 * names problem and row in *bad, if not NULL).  Thread-safe. */              \
LINATTN_API int X(batched_attention_backward_check)(const X(plan) *plan,      \
        int layout, int64_t batch, int64_t heads, int64_t nq, int64_t nk,     \
        const R *q, const linattn_strides *sq, const R *k,                    \
        const linattn_strides *sk, const R *v, const linattn_strides *sv,     \
        const R *out, const linattn_strides *sout, const R *den, const R *g,  \
        const linattn_strides *sg, const R *dq, const linattn_strides *sdq,   \
        const R *dk, const linattn_strides *sdk, const R *dv,                 \
        const linattn_strides *sdv, const R *dw, int64_t lddw, const R *db,   \
        linattn_where *bad);                                                  \
                                                                              \
/* int linattn_d_batched_causal_backward_check(same arguments as              \
 *         linattn_d_batched_causal_backward, outputs const)                  \
 * As linattn_d_batched_attention_backward_check, for                         \
 * linattn_d_batched_causal_backward.  Thread-safe. */                        \
LINATTN_API int X(batched_causal_backward_check)(const X(plan) *plan,         \
        int layout, int64_t batch, int64_t heads, int64_t n, const R *q,      \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, const R *out,                  \
        const linattn_strides *sout, const R *den, const R *g,                \
        const linattn_strides *sg, const R *dq, const linattn_strides *sdq,   \
        const R *dk, const linattn_strides *sdk, const R *dv,                 \
        const linattn_strides *sdv, const R *dw, int64_t lddw, const R *db,   \
        linattn_where *bad);                                                  \
                                                                              \
/* int linattn_d_batched_attention_check(same arguments as                  \
 *                                       linattn_d_batched_attention,       \
 *                                       without bad)                       \
 * As linattn_d_attention_check, for linattn_d_batched_attention (every     \
 * problem's checks, strides and overlaps included).  Thread-safe. */       \
LINATTN_API int X(batched_attention_check)(const X(plan) *plan, int layout,   \
        int64_t batch, int64_t heads, int64_t nq, int64_t nk, const R *q,     \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, const R *out,                  \
        const linattn_strides *sout);                                         \
                                                                              \
/* int linattn_d_batched_causal_check(same arguments as                     \
 *                                    linattn_d_batched_causal, without     \
 *                                    bad)                                  \
 * As linattn_d_attention_check, for linattn_d_batched_causal.              \
 * Thread-safe. */                                                           \
LINATTN_API int X(batched_causal_check)(const X(plan) *plan, int layout,      \
        int64_t batch, int64_t heads, int64_t n, const R *q,                  \
        const linattn_strides *sq, const R *k, const linattn_strides *sk,     \
        const R *v, const linattn_strides *sv, const R *out,                  \
        const linattn_strides *sout);

#define LINATTN_MANGLE_DOUBLE(name) linattn_d_##name
#define LINATTN_MANGLE_FLOAT(name) linattn_s_##name

LINATTN_DEFINE_API(LINATTN_MANGLE_DOUBLE, double)
LINATTN_DEFINE_API(LINATTN_MANGLE_FLOAT, float)

#ifdef __cplusplus
}
#endif

#endif /* LINATTN_H */
