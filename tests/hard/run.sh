#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make check-hard: the whole test suite under AddressSanitizer and
# UndefinedBehaviorSanitizer in a build whose BLAS integer limit is
# lowered to 512, a representative subset under valgrind memcheck, the
# threaded tests under ThreadSanitizer, and the libFuzzer harnesses sharing
# FUZZ_SECONDS (default 60): half for the argument checks, a quarter for
# the invariant that finite inputs give finite outputs or a status, a
# quarter for the checkpoint loader.
# Needs gcc, clang with its fuzzer runtime (Debian: clang libclang-rt-14-dev),
# LLVM's OpenMP runtime for the ThreadSanitizer stage (libomp-14-dev, whose
# libarcher tells TSan about OpenMP's synchronization) and valgrind.  Run from the top build directory (make check-hard does).
# HARD_STAGES selects stages (default "asan valgrind tsan fuzz"; "limit"
# runs the limit build without sanitizers, and "asan" without the limit
# when HARD_ASAN_LIMIT=0).
set -euo pipefail
build=$(pwd)
hard=$build/_hard
seconds=${FUZZ_SECONDS:-60}
stages=" ${HARD_STAGES:-asan valgrind tsan fuzz} "
rm -rf "$hard"
mkdir -p "$hard"
# The sanitizer builds configure a clean copy of the distributed sources
# (a configured source tree cannot host other builds).
make -s distdir distdir="$hard/src" > /dev/null
src=$hard/src

if [[ $stages == *" asan "* ]]; then
echo "== 1/4 AddressSanitizer + UndefinedBehaviorSanitizer, BLAS integer limit 512: make check"
# One build for two checks, each of which used to cost a whole build and
# suite: the sanitizers, and the BLAS integer limit lowered to 512 (every
# GEMM call aborts when a size or leading dimension beyond it reaches
# BLAS: the tests pass leading dimensions of 600-700 through every path,
# test_math large_leading_dimensions, so a path that forgets to copy such
# a block through workspace fails; the copies then run under ASan too).
# The direct BLAS calls of those large leading dimensions run unlimited in
# the plain make check and under valgrind.
mkdir -p "$hard/asan"
(
    cd "$hard/asan"
    san="-fsanitize=address,undefined -fno-sanitize-recover=all"
    limit="-DLINATTN_BLAS_INT_MAX=512"
    [ "${HARD_ASAN_LIMIT:-1}" = 0 ] && limit=
    # The Fortran module and its tests are instrumented too, but for
    # signed overflow: at -O1 gfortran 12 does arithmetic on the
    # descriptor of an absent optional array passed on to another
    # procedure (the result unused), which UBSan reports as an overflow
    # of whatever the stack held (a module procedure passing an absent
    # rank-3 optional after a rank-2 one is enough; -O0 does not).  Our
    # C code keeps every check.
    "$src/configure" --enable-werror CPPFLAGS="$limit" \
        CFLAGS="-O1 -g -fno-omit-frame-pointer $san" \
        FCFLAGS="-O1 -g -fno-omit-frame-pointer $san -fno-sanitize=signed-integer-overflow" \
        LDFLAGS="$san" > configure.out
    # The out-of-memory test caps the address space, which ASan's shadow
    # memory cannot live with: LINATTN_NO_RLIMIT skips only that test.
    # The MPI tests at 1 to 3 ranks (one rank, a power of two, and the
    # scan's uneven steps): 4 to 8 ranks oversubscribe the two cores
    # under ASan for about 13 minutes of CI and add only more steps of
    # the same loops; the plain make check runs them all.
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LINATTN_NO_RLIMIT=1 MPI_TEST_MAX_NP=${MPI_TEST_MAX_NP:-3} make -j2 check
)
fi

if [[ $stages == *" limit "* ]]; then
echo "== a build whose BLAS integer limit is 512, without sanitizers: make check"
# Leading dimensions beyond the limit must be copied through workspace;
# this build aborts if one reaches BLAS (lib/common/blas.h), and the tests use
# leading dimensions of 600-700 (test_math: large_leading_dimensions).
mkdir -p "$hard/limit"
(
    cd "$hard/limit"
    "$src/configure" --enable-werror CPPFLAGS="-DLINATTN_BLAS_INT_MAX=512" \
        > configure.out
    LINATTN_NO_RLIMIT=1 make -j2 check
)
fi

if [[ $stages == *" valgrind "* ]]; then
echo "== 2/4 valgrind memcheck on a representative subset"
# (and, when configure built it, the Fortran module's API and error tests)
fortran_progs=
if make -n tests/fortran/test_f_api > /dev/null 2>&1; then
    fortran_progs="tests/fortran/test_f_api tests/fortran/test_f_errors_d"
fi
for prog in tests/test_api tests/test_errors_d tests/test_kernels_d tests/test_checkpoint_d \
            examples/worked_example $fortran_progs; do
    make -s "$prog" > /dev/null
    echo "valgrind $prog"
    # Check runs tests in-process (CK_FORK=no) so that valgrind sees them.
    # (libgomp keeps its pooled threads to the end: "possibly lost" is
    # not an error, and not shown.)
    CK_FORK=no LINATTN_NO_RLIMIT=1 ./libtool --mode=execute valgrind -q \
        --error-exitcode=99 --leak-check=full \
        --errors-for-leak-kinds=definite,indirect --show-possibly-lost=no \
        "./$prog" > /dev/null
done
fi

if [[ $stages == *" tsan "* ]]; then
echo "== 3/4 ThreadSanitizer: the threaded tests"
# clang with LLVM's OpenMP runtime, which loads libarcher under TSan so
# that OpenMP's barriers count as synchronization (gcc's libgomp is not
# instrumented: TSan would report its every barrier).  The kernels' code
# path is picked by cpuid at the first call (lib/common/cpu.c), no ifunc
# resolvers, so the build runs as configured.  The suites that run threads: OpenMP splits of every path
# (test_math: thread counts, a smaller team, four threads querying one
# state; test_batched; test_maps: W for 1, 2, 4 threads; test_finite,
# test_count), threads saving one checkpoint (test_checkpoint), and saves
# killed mid-way (test_files).  A planted race (an unsynchronized counter
# in query_range) was reported here.
# LLVM's runtime registers itself in /dev/shm/__KMP_REGISTERED_LIB_<pid>_*
# and does not always remove the file: after many runs a new process can
# get a dead one's pid and refuse to start ("OMP: Error #15").  Remove the
# files of processes that no longer exist.
for f in /dev/shm/__KMP_REGISTERED_LIB_*; do
    [ -e "$f" ] || continue
    pid=${f#/dev/shm/__KMP_REGISTERED_LIB_}
    pid=${pid%%_*}
    [ -d "/proc/$pid" ] || rm -f "$f"
done
mkdir -p "$hard/tsan"
(
    cd "$hard/tsan"
    "$src/configure" CC=clang --enable-werror \
        CFLAGS="-O1 -g -fsanitize=thread" \
        LDFLAGS="-fsanitize=thread" > configure.out
    # allocator_may_return_null: the suites ask for impossible sizes on
    # purpose; ignore_noninstrumented_modules: the OpenMP runtime's own
    # accesses (archer annotates what matters).
    tsan_tests="tests/test_math_d tests/test_math_s tests/test_batched_d"
    tsan_tests="$tsan_tests tests/test_batched_s tests/test_maps_d"
    tsan_tests="$tsan_tests tests/test_checkpoint_d tests/test_finite_d"
    tsan_tests="$tsan_tests tests/test_finite_s tests/test_files_d"
    [ -f "$src/tests/test_count.c" ] && tsan_tests="$tsan_tests tests/test_count_d"
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 allocator_may_return_null=1 ignore_noninstrumented_modules=1" \
    OMP_NUM_THREADS=${OMP_NUM_THREADS:-2} LINATTN_NO_RLIMIT=1 \
        make -j2 check TESTS="$tsan_tests"
)
fi

[[ $stages == *" fuzz "* ]] || { echo "check-hard: all passed"; exit 0; }
# The budget is shared: half for the argument checks, a quarter each for
# the finite-output invariant and the checkpoint loader.
args_seconds=$(( seconds / 2 > 0 ? seconds / 2 : 1 ))
finite_seconds=$(( seconds / 4 > 0 ? seconds / 4 : 1 ))
ckpt_seconds=$(( seconds - args_seconds - finite_seconds > 0 ? seconds - args_seconds - finite_seconds : 1 ))
echo "== 4/4 libFuzzer: argument checks ${args_seconds} s, finite outputs ${finite_seconds} s, checkpoint loader ${ckpt_seconds} s"
mkdir -p "$hard/fuzz" "$hard/corpus" "$hard/corpus_finite" "$hard/corpus_checkpoint"
(
    cd "$hard/fuzz"
    san="-fsanitize=address,undefined -fno-sanitize-recover=all"
    # BLAS integer limit 64: leading dimensions just above it take the
    # copy paths, and one reaching BLAS aborts (lib/common/blas.h).
    "$src/configure" CC=clang --disable-openmp \
        CPPFLAGS="-DLINATTN_BLAS_INT_MAX=64" \
        CFLAGS="-O1 -g $san -fsanitize=fuzzer-no-link -Wno-pass-failed" \
        LDFLAGS="$san" \
        > configure.out
    make -j2 lib/liblinattn.la > /dev/null
    blas=$(sed -n 's/^BLAS_LIBS = //p' Makefile)
    lapacke=$(sed -n 's/^LAPACKE_LIBS = //p' Makefile)
    for harness in fuzz_args fuzz_finite fuzz_checkpoint; do
        # shellcheck disable=SC2086
        clang -g -O1 -Wall -Wextra -Werror $san -fsanitize=fuzzer \
            -Iinclude -I"$src/include" "$src/tests/hard/$harness.c" \
            lib/.libs/liblinattn.a $lapacke $blas -lm -o "$harness"
    done
    # libFuzzer exits nonzero and writes crash-* (the input) on a finding.
    run_fuzzer() { # harness seconds corpus
        local status=0
        "./$1" -max_total_time="$2" -print_final_stats=1 -seed=1 "$3" \
            > "$1.log" 2>&1 || status=$?
        echo "-- $1"
        grep -E 'stat::number_of_executed_units|^Done|ERROR|SUMMARY' "$1.log" || true
        # A BLAS that reports a bad argument by printing (OpenBLAS's
        # xerbla) would otherwise go unnoticed.
        if grep -q 'illegal value' "$1.log"; then
            grep -m3 'illegal value' "$1.log"
            status=1
        fi
        if [ "$status" != 0 ]; then
            tail -n 40 "$1.log"
            echo "$1: fuzzer finding (input saved as $hard/fuzz/crash-*): exit $status" >&2
            exit 1
        fi
    }
    run_fuzzer fuzz_args "$args_seconds" "$hard/corpus"
    run_fuzzer fuzz_finite "$finite_seconds" "$hard/corpus_finite"
    run_fuzzer fuzz_checkpoint "$ckpt_seconds" "$hard/corpus_checkpoint"
)
echo "check-hard: all passed"
