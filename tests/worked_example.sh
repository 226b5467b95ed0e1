#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The worked example program prints the textbook numbers, and a query given
# on the command line moves the rescan and the state lookup together.
ex=${top_builddir:-.}/examples/worked_example
out=$("$ex") || exit 1
echo "$out"
echo "$out" | grep -q 'scores 2, -1, 1, 0; weighted sum 9; normalizer 2; output 4.5$' || exit 1
echo "$out" | grep -q 's = (9,10), z = (2,5); q.s = 9; q.z = 2; output 4.5$' || exit 1
# q = (0,1): scores 1, 2, -1, 3; weighted sum 3 - 4 - 1 + 12 = 10;
# normalizer 5; output 2.
out=$("$ex" 0 1) || exit 1
echo "$out"
echo "$out" | grep -q 'weighted sum 10; normalizer 5; output 2$' || exit 1
echo "$out" | grep -q 'q.s = 10; q.z = 5; output 2$' || exit 1
# A malformed query is refused.
if "$ex" 1 x 2>/dev/null; then exit 1; fi
exit 0
