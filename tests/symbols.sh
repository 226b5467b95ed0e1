#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The exported symbols of every shared library the build made are exactly
# those listed in tests/symbols/LIB.txt: a symbol that appears or
# vanishes is a change to the ABI, and must be one on purpose (then the
# list changes with it, in the same commit).  The Fortran libraries' names
# are gfortran's (__MODULE_MOD_name); with another compiler they are not
# compared.  A library the build did not make (no MPI, no Fortran, static
# only) is skipped.
src=${top_srcdir:-.}
build=${top_builddir:-.}
nm=${NM:-nm}
command -v "${nm%% *}" >/dev/null 2>&1 || { echo "no nm: skipped"; exit 77; }
out=${TMPDIR:-/tmp}/symbols.$$
trap 'rm -f "$out"' EXIT
fail=0 compared=0
for lib in lib/liblinattn mpi/liblinattn_mpi fortran/liblinattn_fortran \
           fortran/liblinattn_mpi_fortran; do
    name=${lib##*/}
    so=$build/${lib%/*}/.libs/$name.so
    [ -f "$so" ] || continue
    $nm -D --defined-only "$so" | awk 'NF >= 3 {print $3}' | sort > "$out"
    case $name in
    *fortran)
        if ! grep -q '^__linattn[a-z_]*_MOD_' "$out"; then
            echo "$name: not gfortran's names, not compared"
            continue
        fi ;;
    esac
    if grep -v '^#' "$src/tests/symbols/$name.txt" | diff -u - "$out"; then
        echo "$name: $(wc -l < "$out") symbols, as listed"
        compared=$((compared + 1))
    else
        echo "$name: exported symbols differ from tests/symbols/$name.txt" \
             "(- listed, + exported)" >&2
        fail=1
    fi
done
[ "$compared" -gt 0 ] || [ "$fail" = 1 ] || { echo "no shared library: skipped"; exit 77; }
exit $fail
