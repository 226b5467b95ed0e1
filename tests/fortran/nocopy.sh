#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# test_f_nocopy, failing if gfortran reports an array temporary made at
# run time (-fcheck=array-temps writes a warning to stderr and goes on).
prog=${top_builddir:-.}/tests/fortran/test_f_nocopy
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
"$prog" 2> "$err"
status=$?
cat "$err" >&2
if grep -q 'array temporary' "$err"; then
    echo "nocopy.sh: an array was copied on the way to the library"
    exit 1
fi
exit $status
