#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The Fortran textbook example prints the worked example's numbers both
# ways, moves both ways together for another query, refuses a bad one.
ex=${top_builddir:-.}/examples/fortran/textbook
out=$("$ex") || exit 1
echo "$out"
echo "$out" | grep -q 'scores 2, -1, 1, 0; weighted sum 9; normalizer 2; output 4.5$' || exit 1
echo "$out" | grep -q 's = (9,10), z = (2,5); q.s = 9; q.z = 2; output 4.5$' || exit 1
out=$("$ex" 0 1) || exit 1
echo "$out"
echo "$out" | grep -q 'weighted sum 10; normalizer 5; output 2$' || exit 1
echo "$out" | grep -q 'q.s = 10; q.z = 5; output 2$' || exit 1
if "$ex" 1 x 2>/dev/null; then exit 1; fi
exit 0
