/* SPDX-License-Identifier: BSD-3-Clause */
/* errors.c -- status strings, version, option defaults. */
#include <stdint.h>
#include <string.h>
#include "linattn.h"

/* The options struct keeps its size as fields take reserved words: the
 * layout of the first release, for comparison. */
struct linattn_opts_v0_1 {
    int64_t m, block, chunk;
    int denom;
    double eps;
    uint64_t seed;
    int check_finite;
    int64_t reserved[8];
};
_Static_assert(sizeof(linattn_opts) == sizeof(struct linattn_opts_v0_1),
               "linattn_opts changed size: take fields from reserved");

#define STR2(x) #x
#define STR(x) STR2(x)

int linattn_opts_init(linattn_opts *opts)
{
    if (!opts)
        return -1;
    memset(opts, 0, sizeof *opts);
    opts->denom = LINATTN_DENOM_POSITIVE;
    return 0;
}

int linattn_version(void)
{
    return LINATTN_VERSION_NUMBER;
}

const char *linattn_version_string(void)
{
    return STR(LINATTN_VERSION_MAJOR) "." STR(LINATTN_VERSION_MINOR) "." STR(
        LINATTN_VERSION_PATCH);
}

const char *linattn_strerror(int status)
{
    /* Static sentences for the argument positions the API uses. */
    static const char *const bad_arg[] = {
        "argument 1 is invalid",  "argument 2 is invalid",
        "argument 3 is invalid",  "argument 4 is invalid",
        "argument 5 is invalid",  "argument 6 is invalid",
        "argument 7 is invalid",  "argument 8 is invalid",
        "argument 9 is invalid",  "argument 10 is invalid",
        "argument 11 is invalid", "argument 12 is invalid",
        "argument 13 is invalid", "argument 14 is invalid",
        "argument 15 is invalid", "argument 16 is invalid",
        "argument 17 is invalid", "argument 18 is invalid",
        "argument 19 is invalid", "argument 20 is invalid",
        "argument 21 is invalid", "argument 22 is invalid",
        "argument 23 is invalid", "argument 24 is invalid",
        "argument 25 is invalid", "argument 26 is invalid",
        "argument 27 is invalid"};
    if (status < 0) {
        int i = status >= -27 ? -status - 1 : -1;
        return i >= 0 ? bad_arg[i] : "an argument is invalid";
    }
    switch (status) {
    case LINATTN_SUCCESS:
        return "success";
    case LINATTN_ENOMEM:
        return "out of memory: a workspace could not be allocated";
    case LINATTN_EDENOM:
        return "a normalizer is zero, negative or not finite (see the plan's "
               "normalizer policy and eps)";
    case LINATTN_ENONFINITE:
        return "an input holds NaN or Inf (the plan checks inputs)";
    case LINATTN_ESIZE:
        return "a size or leading dimension exceeds the BLAS integer or "
               "int64 range";
    case LINATTN_EIO:
        return "a checkpoint file could not be opened, written or read (see "
               "errno)";
    case LINATTN_EFORMAT:
        return "not a linattn checkpoint, or a damaged one (wrong magic, "
               "truncated, checksum mismatch or an inconsistent field)";
    case LINATTN_EVERSION:
        return "the checkpoint has a format version this library cannot "
               "read";
    case LINATTN_EMISMATCH:
        return "the checkpoint is of another precision, feature map or "
               "dimensions than the state it is loaded into (or, across MPI "
               "ranks, the plans or shapes differ)";
    case LINATTN_EOVERFLOW:
        return "a result of finite inputs is beyond the floating-point range "
               "(a state sum, numerator or quotient overflowed; see the row "
               "reported)";
    case LINATTN_EMPI:
        return "an MPI call failed (the communicator's error handler "
               "returns errors)";
    case LINATTN_EMPIUSE:
        return "MPI cannot be used from this call: not initialized, already "
               "finalized, or initialized below MPI_THREAD_SERIALIZED and "
               "called from another thread than the one that initialized it "
               "(linattn_mpi_strerror says which)";
    default:
        return "unknown status code";
    }
}
