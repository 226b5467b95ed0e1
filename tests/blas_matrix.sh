#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# make check-blas: the library built and tested against each BLAS of
# BLAS_VARIANTS (default: openblas-pthread openblas-openmp blis
# reference), each in its own build of the distributed sources, with a
# subset of the test suite that reaches every GEMM shape the library uses
# (the numerical suites of both precisions, the maps, the batched calls,
# checkpoints); then ldd confirms that the test programs load the BLAS
# they were built for.  Run from the top build directory.
# Debian packages: libopenblas0-pthread libopenblas0-openmp libblis-dev
# libblas3 (the Netlib reference).
set -euo pipefail
build=$(pwd)
variants=${BLAS_VARIANTS:-openblas-pthread openblas-openmp blis reference}
top=$build/_blas
rm -rf "$top"
mkdir -p "$top"
make -s distdir distdir="$top/src" > /dev/null
subset="tests/test_api tests/test_math_d tests/test_math_s tests/test_maps_d \
tests/test_batched_d tests/test_batched_s tests/test_count_d tests/test_checkpoint_d \
tests/test_platform tests/worked_example.sh"
declare -A expect=([openblas-pthread]='openblas-pthread/libopenblas'
                   [openblas-openmp]='openblas-openmp/libopenblas'
                   [blis]='libblis' [reference]='/blas/libblas')
for v in $variants; do
    echo "== BLAS: $v"
    mkdir -p "$top/$v"
    (
        cd "$top/$v"
        "$top/src/configure" --enable-werror --with-blas="$v" > configure.out 2>&1 ||
            { tail -n 20 configure.out; exit 1; }
        grep -E '^BLAS_LIBS|^LAPACKE_LIBS' Makefile
        make -j2 > make.out 2>&1 || { tail -n 40 make.out; exit 1; }
        # shellcheck disable=SC2086
        make -j2 check TESTS="$subset" > check.out 2>&1 ||
            { cat tests/test-suite.log 2>/dev/null | tail -n 60; exit 1; }
        grep -E '^# (TOTAL|PASS|FAIL)' check.out
        loaded=$(./libtool --mode=execute ldd tests/test_math_d | grep -E 'blis|blas' || true)
        echo "$loaded"
        want=${expect[$v]:-}
        if [ -n "$want" ] && ! echo "$loaded" | grep -q -- "$want"; then
            echo "blas_matrix: $v build does not load $want" >&2
            exit 1
        fi
    )
done
echo "blas_matrix: all passed ($variants)"
