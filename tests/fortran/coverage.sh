#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Every C function of linattn.h is wrapped by the Fortran module (its
# generated interface c_<name>, or cx_<name> for either precision, is
# called from fortran/), or listed in
# fortran/unwrapped.txt as not wrapped yet.  A function added to the
# header without either fails here, naming it.  Likewise every function
# of linattn_mpi.h is called by module linattn_mpi (fortran/linattn_mpi*;
# no list of exceptions there).
src=${top_srcdir:-.}
perl=${PERL:-perl}
list=$("$perl" "$src/fortran/gen_fortran.pl" --list -I "${top_builddir:-.}/include" \
    "$src/include/linattn.h") || exit 1
fail=0
wrapped=0
pending=
echo "$list" | {
while read -r name cnames; do
    if grep -Eq "cx?_$name\(" "$src/fortran/linattn_prec.inc" \
            "$src/fortran/linattn.f90" "$src/fortran/linattn_base.f90" \
            "$src/fortran/linattn_grad.inc" \
            "$src/fortran/linattn_grad_batched.inc" \
            "$src/fortran/linattn_ex.inc"; then
        wrapped=$((wrapped + 1))
        if grep -qx "$name" "$src/fortran/unwrapped.txt"; then
            echo "$name is wrapped: remove it from fortran/unwrapped.txt"
            fail=1
        fi
    elif grep -qx "$name" "$src/fortran/unwrapped.txt"; then
        pending="$pending $cnames"
    else
        echo "not wrapped: $cnames (wrap it in fortran/, or list $name in fortran/unwrapped.txt)"
        fail=1
    fi
done
echo "$wrapped C functions wrapped by the Fortran module"
[ -z "$pending" ] || echo "listed in fortran/unwrapped.txt, not wrapped yet:$pending"
# Listed names not in the header (yet): noted, so that functions coming
# from other branches can be listed before they land.
for name in $(grep -v '^#' "$src/fortran/unwrapped.txt"); do
    if ! echo "$list" | grep -q "^$name "; then
        echo "note: fortran/unwrapped.txt lists $name, which linattn.h does not have"
    fi
done
# linattn_mpi.h and module linattn_mpi
mlist=$("$perl" "$src/fortran/gen_fortran.pl" --list --api LINATTN_MPI_API --own \
    --comm MPI_Comm "$src/include/linattn_mpi.h") || exit 1
mwrapped=0
for name in $(echo "$mlist" | cut -d' ' -f1); do
    if grep -Eq "cx?_$name\(" "$src"/fortran/linattn_mpi*.f90 "$src"/fortran/linattn_mpi*.inc; then
        mwrapped=$((mwrapped + 1))
    else
        echo "not wrapped by module linattn_mpi: $(echo "$mlist" | grep "^$name ")"
        fail=1
    fi
done
echo "$mwrapped C functions of linattn_mpi.h wrapped by module linattn_mpi"
exit $fail
}
